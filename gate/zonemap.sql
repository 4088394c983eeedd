-- native_zonemap: every stored zone map equals the minimum and maximum of its vector's rows,
-- computed here from the rows themselves (a row's vector comes from its TID: row number
-- block * 291 + offset - 1, minus its stripe's first row, divided by 1024). Integers and
-- floats compare as numbers (PostgreSQL's float order: NaN greatest), text bytewise (COLLATE
-- "C") on the stored prefix of at most 32 bytes. Prints one line per column with a vector
-- whose zone map is wrong or missing (or with no vectors at all: a check of nothing fails).
CREATE FUNCTION pg_temp.zone_problems(t regclass) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE a record; bad bigint; n bigint;
BEGIN
    FOR a IN SELECT attnum, attname, format_type(atttypid, NULL) AS ty FROM pg_attribute
             WHERE attrelid = t AND attnum > 0 AND NOT attisdropped
               AND format_type(atttypid, NULL) IN ('smallint', 'integer', 'bigint', 'real', 'double precision', 'text')
    LOOP
        EXECUTE format($q$
            WITH r AS (
                SELECT ((ctid::text::point)[0]::bigint * 291 + (ctid::text::point)[1]::bigint - 1) AS rn, %1$I AS x FROM %2$s),
            s AS (SELECT first_row, row_count FROM pgcol.stripes(%2$L)),
            agg AS (
                SELECT s.first_row, ((r.rn - s.first_row) / 1024)::int AS vector,
                       %3$s AS lo, %4$s AS hi
                FROM r JOIN s ON r.rn >= s.first_row AND r.rn < s.first_row + s.row_count
                GROUP BY 1, 2)
            SELECT count(*) FILTER (WHERE v.first_row IS NULL OR agg.first_row IS NULL OR %6$s), count(*)
            FROM (SELECT * FROM pgcol.vectors(%2$L) WHERE attnum = %5$s) v FULL JOIN agg USING (first_row, vector)$q$,
            a.attname, t, 
            CASE WHEN a.ty = 'text' THEN 'substr(convert_to(min(x COLLATE "C"), ''UTF8''), 1, 32)' ELSE 'min(x)' END,
            CASE WHEN a.ty = 'text' THEN 'convert_to(max(x COLLATE "C"), ''UTF8'')' ELSE 'max(x)' END,
            a.attnum,
            CASE WHEN a.ty = 'text' THEN
                '(v.zone_min IS DISTINCT FROM encode(agg.lo, ''hex'')
                  OR v.zone_max IS DISTINCT FROM encode(substr(agg.hi, 1, 32), ''hex'')
                  OR v.max_truncated IS DISTINCT FROM (length(agg.hi) > 32))'
            ELSE
                '(v.zone_min::float8 IS DISTINCT FROM agg.lo::float8 OR v.zone_max::float8 IS DISTINCT FROM agg.hi::float8)'
            END) INTO bad, n;
        IF bad > 0 OR n = 0 THEN
            RETURN NEXT format('%s.%s: %s of %s vectors with a wrong or missing zone map', t, a.attname, bad, n);
        END IF;
    END LOOP;
END $$;
SELECT p FROM (SELECT pg_temp.zone_problems('fx_ints') UNION ALL SELECT pg_temp.zone_problems('fx_floats')
               UNION ALL SELECT pg_temp.zone_problems('fx_strings') UNION ALL SELECT pg_temp.zone_problems('fx_tsbs')) x(p);

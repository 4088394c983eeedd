-- count(DISTINCT col) in PgcolAgg, grouped and ungrouped: every supported type with its
-- equality's edges (-0 and 0 equal, every NaN one value, NULLs not counted, the empty
-- string), text from dictionary and plain vectors, with WHERE and FILTER, against a heap
-- twin and with the node off; the memory bound; what stays with PostgreSQL.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 4096;
CREATE TABLE cd (id int, i2 int2, i4 int, i8 int8, f4 float4, f8 float8, d date, ts timestamp,
                 tz timestamptz, t text, v varchar(12), u text, g int) USING pg_columnar;
INSERT INTO cd SELECT i, (i % 300)::int2, i % 1000, (i % 5000) * 1000000007::int8,
    CASE i % 97 WHEN 0 THEN '-0'::float4 WHEN 1 THEN '0' WHEN 2 THEN 'NaN' ELSE ((i % 50) / 4.0)::float4 END,
    -- NaNs with and without the sign bit
    CASE i % 89 WHEN 0 THEN '-0'::float8 WHEN 1 THEN '0' WHEN 2 THEN 'NaN' WHEN 3 THEN -'NaN'::float8
      ELSE ((i % 700) / 8.0)::float8 END,
    date '2026-01-01' + i % 400, timestamp '2026-01-01' + (i % 900) * interval '1 hour',
    timestamptz '2026-01-01 00:00+00' + (i % 1200) * interval '1 minute',
    CASE WHEN i % 53 = 0 THEN NULL WHEN i % 53 = 1 THEN '' ELSE 'host_' || (i % 40) END,
    'v' || (i % 77), md5((i % 3000)::text), i % 7
  FROM generate_series(1, 20000) i;
UPDATE cd SET i4 = NULL, f8 = NULL WHERE id % 101 = 0;
CREATE TABLE cd_heap AS SELECT * FROM cd;

-- the same rows from PgcolAgg, PostgreSQL's Agg over the scan, and heap?
CREATE FUNCTION same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; o text; h text;
BEGIN
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r', q) INTO a;
  SET LOCAL pg_columnar.enable_vectorized_agg = off;
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r', q) INTO o;
  SET LOCAL pg_columnar.enable_vectorized_agg = on;
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r',
                 regexp_replace(q, '\mcd\M', 'cd_heap', 'g')) INTO h;
  IF a IS DISTINCT FROM h OR o IS DISTINCT FROM h THEN
    RETURN format('MISMATCH PgcolAgg %s, Agg %s, heap %s', a, o, h);
  END IF;
  RETURN a;
END $$;
-- the node that computes q's aggregates
CREATE FUNCTION node(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF line ~ 'Vectorized Aggregates:' THEN RETURN 'PgcolAgg: ' || trim(line); END IF;
  END LOOP;
  RETURN 'PostgreSQL''s Agg';
END $$;

SELECT node('SELECT count(DISTINCT i4), count(DISTINCT f8), count(DISTINCT t) FROM cd');
SELECT count(DISTINCT i2), count(DISTINCT i4), count(DISTINCT i8), count(DISTINCT f4), count(DISTINCT f8),
       count(DISTINCT d), count(DISTINCT ts), count(DISTINCT tz), count(DISTINCT t), count(DISTINCT v), count(DISTINCT u)
  FROM cd;
SELECT same('SELECT count(DISTINCT i2), count(DISTINCT i4), count(DISTINCT i8), count(DISTINCT f4), count(DISTINCT f8),
       count(DISTINCT d), count(DISTINCT ts), count(DISTINCT tz), count(DISTINCT t), count(DISTINCT v), count(DISTINCT u) FROM cd');
-- with quals, FILTER, beside other aggregates, and over no row
SELECT same('SELECT count(DISTINCT t), count(*), sum(i4), count(DISTINCT f4) FILTER (WHERE i4 > 500) FROM cd WHERE id BETWEEN 3000 AND 15000');
SELECT same('SELECT count(DISTINCT t), count(DISTINCT f8) FROM cd WHERE id < 0');
-- grouped: by an integer, by text, by a time bucket
SELECT node('SELECT g, count(DISTINCT t) FROM cd GROUP BY g');
SELECT same('SELECT g, count(DISTINCT t), count(DISTINCT f8), count(DISTINCT u) FROM cd GROUP BY g');
SELECT same('SELECT t, count(DISTINCT i4), count(DISTINCT f4), min(v) FROM cd GROUP BY t');
SELECT same($$SELECT date_trunc('day', tz) AS day, count(DISTINCT t), count(DISTINCT i8) FROM cd WHERE id > 100 GROUP BY day$$);
SELECT same('SELECT g, count(DISTINCT v) FILTER (WHERE f8 > 10), count(DISTINCT d) FROM cd GROUP BY g HAVING count(DISTINCT t) > 3');

-- rows added since, deleted rows, and a column added later (its default on old rows)
INSERT INTO cd (id, i4, t, g) SELECT i, i, 'late_' || (i % 3), 9 FROM generate_series(20001, 20100) i;
DELETE FROM cd WHERE id % 10 = 0;
DELETE FROM cd_heap WHERE id % 10 = 0;
INSERT INTO cd_heap (id, i4, t, g) SELECT i, i, 'late_' || (i % 3), 9 FROM generate_series(20001, 20100) i;
DELETE FROM cd_heap WHERE id % 10 = 0;
ALTER TABLE cd ADD COLUMN w int DEFAULT 5;
ALTER TABLE cd_heap ADD COLUMN w int DEFAULT 5;
SELECT same('SELECT count(DISTINCT i4), count(DISTINCT t), count(DISTINCT w) FROM cd');
SELECT same('SELECT g, count(DISTINCT i4), count(DISTINCT w) FROM cd GROUP BY g');

-- left to PostgreSQL: DISTINCT of other aggregates, of expressions, of a non-deterministic
-- collation, and DISTINCT with ORDER BY
SELECT node('SELECT sum(DISTINCT i4) FROM cd');
SELECT node('SELECT count(DISTINCT i4 + 1) FROM cd');
SELECT node('SELECT count(DISTINCT (t, i4)) FROM cd');
SELECT same('SELECT sum(DISTINCT i4), count(DISTINCT i4 + 1) FROM cd');

-- the values kept count against 16 × the hash memory: past it, an ERROR that says what to do
SET work_mem = '64kB';
SET hash_mem_multiplier = 1;
SELECT count(DISTINCT u) FROM cd;
CREATE TABLE wide (s text) USING pg_columnar;
INSERT INTO wide SELECT repeat(md5(i::text), 4) FROM generate_series(1, 12000) i;
SELECT count(DISTINCT s) FROM wide;
SET pg_columnar.enable_vectorized_agg = off;
SELECT count(DISTINCT s) FROM wide;
RESET pg_columnar.enable_vectorized_agg;
RESET work_mem;
RESET hash_mem_multiplier;
SELECT count(DISTINCT s) FROM wide;

-- Every type, NULLs and TOAST-sized values, at sizes 0, 1, 1023, 1024, 1025 and several
-- stripes: a pg_columnar table must return exactly what a heap table returns.
CREATE EXTENSION pg_columnar;
SET extra_float_digits = 3;
SET pg_columnar.stripe_row_limit = 2048;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE pair AS (x int, y text);
CREATE DOMAIN pos8 AS float8 CHECK (VALUE >= 0);
CREATE TABLE src (
    id int, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, num numeric, b bool,
    t text, vc varchar(10), ch char(5), by bytea, d date, tm time, ts timestamp,
    tstz timestamptz, iv interval, u uuid, js json, jb jsonb, ia int[], ta text[],
    comp pair, en mood, nm name, ch1 "char", ip inet, pt point, mac macaddr, money money,
    dom pos8, o oid
);
INSERT INTO src
SELECT g,
       CASE WHEN g % 11 = 0 THEN NULL ELSE (g % 30000 - 15000)::int2 END,
       CASE WHEN g % 13 = 0 THEN NULL ELSE g * 7919 - 5000000 END,
       CASE WHEN g % 17 = 0 THEN NULL ELSE g::int8 * 1000000007 END,
       CASE g % 9 WHEN 0 THEN NULL WHEN 1 THEN 'NaN'::float4 WHEN 2 THEN '-0'::float4
            WHEN 3 THEN 'Infinity'::float4 ELSE g / 7.0 END,
       CASE g % 10 WHEN 0 THEN NULL WHEN 1 THEN '-Infinity'::float8 WHEN 2 THEN 'NaN'::float8
            WHEN 3 THEN '-0'::float8 WHEN 4 THEN 2.2250738585072014e-308 ELSE (g % 100)::float8 END,
       CASE WHEN g % 7 = 0 THEN NULL ELSE (g * 3.14159)::numeric(20, 5) END,
       CASE WHEN g % 5 = 0 THEN NULL ELSE g % 2 = 0 END,
       CASE WHEN g % 19 = 0 THEN NULL WHEN g % 19 = 1 THEN '' WHEN g % 19 = 2 THEN 'héllo wörld ✓ ' || g
            WHEN g = 777 THEN repeat('toast me ', 20000)
            WHEN g = 1500 THEN (SELECT string_agg(md5((g * 1000 + k)::text), '') FROM generate_series(1, 200) k)
            ELSE 'host_' || (g % 100) END,
       CASE WHEN g % 3 = 0 THEN NULL ELSE left('vc' || g, 10) END,
       CASE WHEN g % 4 = 0 THEN NULL ELSE 'c' || (g % 10) END,
       CASE WHEN g % 6 = 0 THEN NULL ELSE decode(md5(g::text), 'hex') END,
       CASE WHEN g % 8 = 0 THEN NULL ELSE '2016-01-01'::date + g END,
       CASE WHEN g % 8 = 1 THEN NULL ELSE '00:00'::time + g * interval '7 seconds' END,
       CASE WHEN g % 8 = 2 THEN NULL ELSE '2016-01-01'::timestamp + g * interval '10 seconds' END,
       CASE WHEN g % 8 = 3 THEN NULL ELSE '2016-01-01 00:00+00'::timestamptz + g * interval '10 seconds' END,
       CASE WHEN g % 8 = 4 THEN NULL ELSE make_interval(months => g % 13, days => g % 31, secs => g) END,
       CASE WHEN g % 8 = 5 THEN NULL ELSE md5(g::text)::uuid END,
       CASE WHEN g % 8 = 6 THEN NULL ELSE json_build_object('g', g, 'tag', 'x' || (g % 3)) END,
       CASE WHEN g % 8 = 7 THEN NULL ELSE jsonb_build_object('g', g, 'arr', jsonb_build_array(g, g + 1)) END,
       CASE WHEN g % 9 = 0 THEN NULL WHEN g % 9 = 1 THEN '{}'::int[] ELSE ARRAY[g, NULL, g * 2] END,
       CASE WHEN g % 9 = 2 THEN NULL ELSE ARRAY['a' || g, NULL, 'b'] END,
       CASE WHEN g % 10 = 0 THEN NULL ELSE ROW(g, 'p' || g)::pair END,
       CASE WHEN g % 10 = 1 THEN NULL ELSE (ARRAY['sad', 'ok', 'happy'])[g % 3 + 1]::mood END,
       CASE WHEN g % 10 = 2 THEN NULL ELSE ('name' || g)::name END,
       CASE WHEN g % 10 = 3 THEN NULL ELSE chr(65 + g % 26)::"char" END,
       CASE WHEN g % 10 = 4 THEN NULL ELSE ('10.0.' || (g % 256) || '.' || (g % 200) || '/24')::inet END,
       CASE WHEN g % 10 = 5 THEN NULL ELSE point(g, -g / 3.0) END,
       CASE WHEN g % 10 = 6 THEN NULL ELSE ('08:00:2b:01:02:' || lpad(to_hex(g % 256), 2, '0'))::macaddr END,
       CASE WHEN g % 10 = 7 THEN NULL ELSE (g * 1.25)::money END,
       CASE WHEN g % 10 = 8 THEN NULL ELSE (g % 50)::pos8 END,
       CASE WHEN g % 10 = 9 THEN NULL ELSE (4000000000 - g)::oid END
FROM generate_series(1, 5000) g;
-- one row that is NULL everywhere but id
INSERT INTO src (id) VALUES (5001);

-- n rows of src through INSERT ... SELECT (tuple_insert) and through COPY (multi_insert)
CREATE FUNCTION same_as_heap(n int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE heap_md5 text; col_md5 text; c bigint;
BEGIN
    DROP TABLE IF EXISTS c_insert;
    CREATE TABLE c_insert (LIKE src) USING pg_columnar;
    EXECUTE format('INSERT INTO c_insert SELECT * FROM src WHERE id <= %s OR (%s > 5000 AND id = 5001)', n, n);
    SELECT md5(coalesce(string_agg(s::text, '|' ORDER BY id), '')), count(*) INTO heap_md5, c
      FROM src s WHERE id <= n OR (n > 5000 AND id = 5001);
    SELECT md5(coalesce(string_agg(s::text, '|' ORDER BY id), '')) INTO col_md5 FROM c_insert s;
    RETURN format('%s rows: %s', c, CASE WHEN heap_md5 = col_md5 THEN 'same' ELSE 'DIFFERENT' END);
END $$;
SELECT same_as_heap(0);
SELECT same_as_heap(1);
SELECT same_as_heap(1023);
SELECT same_as_heap(1024);
SELECT same_as_heap(1025);
SELECT same_as_heap(5001);
SELECT count(*) AS stripes FROM pgcol.stripes('c_insert');

-- COPY goes through multi_insert
CREATE TABLE c_copy (LIKE src) USING pg_columnar;
\copy src TO '/tmp/pg_columnar_regress_types.bin' (FORMAT binary)
\copy c_copy FROM '/tmp/pg_columnar_regress_types.bin' (FORMAT binary)
SELECT (SELECT md5(string_agg(s::text, '|' ORDER BY id)) FROM src s) =
       (SELECT md5(string_agg(s::text, '|' ORDER BY id)) FROM c_copy s) AS copy_same;
-- row by row, both ways: nothing in one that is not in the other
SELECT count(*) AS only_in_heap FROM (SELECT s::text FROM src s EXCEPT ALL SELECT c::text FROM c_copy c) x;
SELECT count(*) AS only_in_columnar FROM (SELECT c::text FROM c_copy c EXCEPT ALL SELECT s::text FROM src s) x;
-- values larger than a page come back whole
SELECT length(t), md5(t) = (SELECT md5(t) FROM src WHERE id = 777) FROM c_copy WHERE id = 777;
-- aggregates over every numeric column agree
SELECT (SELECT (sum(i2), sum(i4), sum(i8), sum(num), count(f4), count(f8), sum(money), sum(dom))::text FROM src) =
       (SELECT (sum(i2), sum(i4), sum(i8), sum(num), count(f4), count(f8), sum(money), sum(dom))::text FROM c_copy) AS sums_same;
-- the same rows loaded the same way give the same image
CREATE TABLE c_copy2 (LIKE src) USING pg_columnar;
\copy c_copy2 FROM '/tmp/pg_columnar_regress_types.bin' (FORMAT binary)
SELECT pgcol.image_hash('c_copy') = pgcol.image_hash('c_copy2') AS same_image;
SELECT stripes, vectors, rows FROM pgcol.verify('c_copy');
\! rm -f /tmp/pg_columnar_regress_types.bin

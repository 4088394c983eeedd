-- The inspection functions: what they show, and who may call them.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 2048;
CREATE TABLE c (ts timestamptz, host text, usage float8, note text, temp float8) USING pg_columnar;
INSERT INTO c SELECT '2016-01-01 00:00+00'::timestamptz + (g / 10) * interval '10 s', 'host_' || (g % 10),
    (g * 7 % 101)::float8 + 0.5, CASE WHEN g % 3 = 0 THEN NULL ELSE 'note ' || md5(g::text) END,
    (2000 + g % 1000)::float8 / 100
FROM generate_series(0, 4999) g;
SELECT first_row, row_count, first_block, pages, byte_length > directory_length AS has_data FROM pgcol.stripes('c');
SELECT attnum, vectors, rows, nulls, raw_bytes > stored_bytes AS compressed,
       plain, dictionary, bitpack, fsst, gorilla, float_int, all_null FROM pgcol.columns('c');
SELECT * FROM pgcol.verify('c');
SELECT length(pgcol.image_hash('c')) AS hash_hex_digits;
-- an empty table has no stripes and a fixed hash
CREATE TABLE e (a int) USING pg_columnar;
SELECT count(*) FROM pgcol.stripes('e');
SELECT pgcol.image_hash('e');
-- only for pg_columnar tables
CREATE TABLE h (a int);
SELECT pgcol.image_hash('h');
-- only for roles that may read the table
CREATE ROLE regress_pgcol_nobody;
SET ROLE regress_pgcol_nobody;
SELECT pgcol.image_hash('c');
SELECT * FROM pgcol.stripes('c');
SELECT * FROM pgcol.verify('c');
SELECT count(*) FROM pgcol.stripe;
RESET ROLE;
GRANT SELECT ON c TO regress_pgcol_nobody;
SET ROLE regress_pgcol_nobody;
SELECT count(*) FROM pgcol.stripes('c');
RESET ROLE;
-- the stripe size setting is range-checked
SET pg_columnar.stripe_row_limit = 10;
DROP TABLE c, e, h;
DROP ROLE regress_pgcol_nobody;
DROP EXTENSION pg_columnar;
SELECT count(*) FROM pg_namespace WHERE nspname = 'pgcol';

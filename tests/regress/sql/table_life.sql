-- DDL and maintenance on pg_columnar tables, each result compared with heap where it can be.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 4096;
CREATE TABLE h AS SELECT g AS id, (g % 100)::float8 AS m, 'host_' || (g % 50) AS host,
    '2016-01-01 00:00+00'::timestamptz + g * interval '10 s' AS ts FROM generate_series(1, 20000) g;
-- CREATE TABLE AS and SELECT INTO
CREATE TABLE c USING pg_columnar AS SELECT * FROM h;
SET default_table_access_method = pg_columnar;
SELECT * INTO c2 FROM h WHERE id <= 100;
RESET default_table_access_method;
SELECT c.relname, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname IN ('c', 'c2') ORDER BY 1;
SELECT (SELECT md5(string_agg(x::text, ',' ORDER BY id)) FROM h x) = (SELECT md5(string_agg(x::text, ',' ORDER BY id)) FROM c x) AS ctas_same;
SELECT count(*) FROM c2;
-- sizes are real
SELECT pg_relation_size('c') > 0 AS has_size, pg_relation_size('c') < pg_relation_size('h') AS smaller_than_heap,
       pg_total_relation_size('c') = pg_relation_size('c') AS no_toast_no_index;
-- ALTER TABLE: add (with and without default), drop, rename
ALTER TABLE c ADD COLUMN extra int;
ALTER TABLE c ADD COLUMN flag text DEFAULT 'dflt';
INSERT INTO c VALUES (20001, 1.5, 'new', now(), 7, 'set');
SELECT count(*), count(extra), count(*) FILTER (WHERE flag = 'dflt') AS dflt FROM c;
ALTER TABLE c DROP COLUMN m;
ALTER TABLE c RENAME COLUMN host TO hostname;
SELECT id, hostname, extra, flag FROM c WHERE id IN (1, 20001) ORDER BY id;
INSERT INTO c (id, hostname) VALUES (20002, 'after drop');
SELECT count(*), count(DISTINCT hostname) FROM c;
ALTER TABLE c RENAME TO c_renamed;
SELECT count(*) FROM c_renamed;
ALTER TABLE c_renamed RENAME TO c;
-- ALTER TABLE ... SET ACCESS METHOD, both ways
CREATE TABLE h2 AS SELECT * FROM h;
ALTER TABLE h2 SET ACCESS METHOD pg_columnar;
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'h2';
SELECT (SELECT md5(string_agg(x::text, ',' ORDER BY id)) FROM h x) = (SELECT md5(string_agg(x::text, ',' ORDER BY id)) FROM h2 x) AS to_columnar_same;
ALTER TABLE h2 SET ACCESS METHOD heap;
SELECT (SELECT md5(string_agg(x::text, ',' ORDER BY id)) FROM h x) = (SELECT md5(string_agg(x::text, ',' ORDER BY id)) FROM h2 x) AS back_to_heap_same;
-- ALTER COLUMN TYPE rewrites
ALTER TABLE c ALTER COLUMN id TYPE bigint;
SELECT pg_typeof(id), sum(id) FROM c GROUP BY 1;
-- TRUNCATE, also in the creating transaction and rolled back
TRUNCATE c2;
SELECT count(*) FROM c2;
BEGIN;
CREATE TABLE c3 (a int) USING pg_columnar;
INSERT INTO c3 SELECT generate_series(1, 10);
TRUNCATE c3;
INSERT INTO c3 VALUES (42);
SELECT * FROM c3;
COMMIT;
SELECT * FROM c3;
BEGIN;
TRUNCATE c3;
ROLLBACK;
SELECT * FROM c3;
-- TRUNCATE in the creating transaction empties the file in place: the rows written after it
-- are of a new storage (its own storage id), which every change and lookup then uses; with
-- an index (whose rebuild invalidates the table's relcache entry) and without one
BEGIN;
CREATE TABLE c4 (id int PRIMARY KEY, v text) USING pg_columnar;
CREATE TABLE c5 (id int, v text) USING pg_columnar;
INSERT INTO c4 SELECT g, 'first' FROM generate_series(1, 6) g;
INSERT INTO c5 SELECT g, 'first' FROM generate_series(1, 6) g;
DELETE FROM c4 WHERE id = 3;
DELETE FROM c5 WHERE id = 3;
TRUNCATE c4, c5;
INSERT INTO c4 SELECT g, 'second' FROM generate_series(1, 6) g;
INSERT INTO c5 SELECT g, 'second' FROM generate_series(1, 6) g;
DELETE FROM c4 WHERE id = 4;
DELETE FROM c5 WHERE id = 4;
UPDATE c4 SET v = 'updated' WHERE id = 5;
UPDATE c5 SET v = 'updated' WHERE id = 5;
INSERT INTO c4 VALUES (6, 'dup') ON CONFLICT (id) DO UPDATE SET v = 'upserted';
SELECT * FROM c4 ORDER BY id;
SELECT * FROM c5 ORDER BY id;
COMMIT;
SET enable_seqscan = off;
SELECT * FROM c4 WHERE id BETWEEN 1 AND 6 ORDER BY id;
RESET enable_seqscan;
SELECT * FROM c4 ORDER BY id;
SELECT * FROM c5 ORDER BY id;
INSERT INTO c4 VALUES (1, 'dup');
-- VACUUM returns the pages of an aborted load; VACUUM FULL rewrites
BEGIN;
INSERT INTO c3 SELECT generate_series(1, 50000);
ROLLBACK;
SELECT pg_relation_size('c3') > 8192 * 3 AS aborted_pages_present;
VACUUM c3;
SELECT pg_relation_size('c3') AS after_vacuum, (SELECT count(*) FROM c3) AS rows;
VACUUM FULL c;
SELECT count(*), sum(id) FROM c;
SELECT * FROM pgcol.verify('c');
-- ANALYZE gives the planner statistics, as for heap
ANALYZE c;
SELECT reltuples FROM pg_class WHERE relname = 'c';
SELECT attname, n_distinct FROM pg_stats WHERE tablename = 'c' AND attname = 'hostname';
EXPLAIN (COSTS OFF) SELECT * FROM c WHERE id = 5;
-- unlogged and temporary tables
CREATE UNLOGGED TABLE u (a int, b text) USING pg_columnar;
INSERT INTO u SELECT g, 'u' || g FROM generate_series(1, 3000) g;
SELECT count(*), max(b) FROM u;
CREATE TEMP TABLE tt (a int) USING pg_columnar;
INSERT INTO tt SELECT generate_series(1, 3000);
SELECT count(*), sum(a) FROM tt;
-- moving to another tablespace copies the files
ALTER TABLE u SET TABLESPACE pg_default;
-- DROP removes the catalog rows; DROP EXTENSION removes everything
SELECT count(*) > 0 AS catalog_rows FROM pgcol.stripe;
DROP TABLE c, c2, c3, h2, u, tt;
SELECT count(*) AS catalog_rows_left FROM pgcol.stripe;

-- System columns, the stripe catalog kept out of publications and logical decoding, and a
-- parallel CREATE TABLE AS.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 1024;
CREATE TABLE sc_col (a int) USING pg_columnar;
CREATE TABLE sc_heap (a int);
-- xmin is the inserting transaction's, cmin the inserting command (as the heap twin, whose
-- rows go in by the same commands), xmax 0
BEGIN;
INSERT INTO sc_col SELECT generate_series(1, 3);
INSERT INTO sc_col VALUES (4);
SELECT a, xmin = txid_current()::text::xid AS own_xmin, cmin, xmax, cmax, tableoid::regclass FROM sc_col ORDER BY a;
COMMIT;
BEGIN;
INSERT INTO sc_heap SELECT generate_series(1, 3);
INSERT INTO sc_heap VALUES (4);
SELECT a, xmin = txid_current()::text::xid AS own_xmin, cmin, xmax, cmax, tableoid::regclass FROM sc_heap ORDER BY a;
COMMIT;
SELECT count(DISTINCT xmin::text) AS xmins, bool_and(xmax = '0') AS no_xmax FROM sc_col;
SELECT count(DISTINCT xmin::text) AS xmins, bool_and(xmax = '0') AS no_xmax FROM sc_heap;
-- through an index scan and a bitmap scan too
CREATE INDEX ON sc_col (a);
SET enable_seqscan = off;
SELECT a, xmin = (SELECT xmin FROM sc_col WHERE a = 1) AS same_xmin FROM sc_col WHERE a IN (1, 4) ORDER BY a;
RESET enable_seqscan;
-- the stripe catalog is never published nor decoded
SET client_min_messages = error;
CREATE PUBLICATION regress_pgcol_all FOR ALL TABLES;
RESET client_min_messages;
SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = 'regress_pgcol_all' ORDER BY 1, 2;
DROP PUBLICATION regress_pgcol_all;
SELECT pg_relation_is_publishable('pgcol.stripe');
-- the catalog's inserts are not decoded (nor, on a server without pg_columnar in
-- shared_preload_libraries, the table's own rows, which is why a
-- publication refuses pg_columnar tables: tests/regress/sql/publication.sql)
SELECT 'slot' FROM pg_create_logical_replication_slot('regress_pgcol_slot', 'test_decoding');
INSERT INTO sc_col VALUES (5);
INSERT INTO sc_heap VALUES (5);
SELECT count(*) FILTER (WHERE data LIKE 'table pgcol.%') AS catalog_changes,
       count(*) FILTER (WHERE data LIKE 'table public.sc_col:%') AS columnar_changes,
       count(*) FILTER (WHERE data LIKE 'table public.sc_heap:%') AS heap_changes
  FROM pg_logical_slot_get_changes('regress_pgcol_slot', NULL, NULL);
SELECT 'dropped' FROM pg_drop_replication_slot('regress_pgcol_slot');
SELECT count(*) > 0 AS has_rows FROM pgcol.stripe;
-- it cannot be changed by SQL
INSERT INTO pgcol.stripe VALUES (1, 1, 1, 1, 1, 1, 1);
DELETE FROM pgcol.stripe;
TRUNCATE pgcol.stripe;
REFRESH MATERIALIZED VIEW pgcol.stripe;
SELECT count(*) > 0 AS has_rows FROM pgcol.stripe;
-- a parallel CREATE TABLE AS
CREATE TABLE src AS SELECT g AS id, 'host_' || (g % 100) AS host FROM generate_series(1, 50000) g;
ANALYZE src;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) CREATE TABLE ctas_col USING pg_columnar AS SELECT * FROM src ORDER BY host;
CREATE TABLE ctas_col USING pg_columnar AS SELECT * FROM src ORDER BY host;
CREATE TABLE ctas_heap USING heap AS SELECT * FROM src ORDER BY host;
CREATE MATERIALIZED VIEW mv_col USING pg_columnar AS SELECT * FROM src WHERE id % 2 = 0;
REFRESH MATERIALIZED VIEW mv_col;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
SELECT count(*), sum(id), count(DISTINCT host) FROM ctas_col;
SELECT count(*), sum(id), count(DISTINCT host) FROM ctas_heap;
SELECT count(*), sum(id) FROM mv_col;

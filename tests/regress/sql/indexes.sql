-- Indexes, TID access and parallel scans on pg_columnar tables.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 4096;
CREATE TABLE c (id int, host text, m float8) USING pg_columnar;
INSERT INTO c SELECT g, 'host_' || (g % 100), g % 1000 FROM generate_series(1, 30000) g;
CREATE INDEX c_id ON c (id);
CREATE INDEX c_host_partial ON c (host) WHERE m < 10;
CREATE INDEX c_expr ON c ((id % 7));
SET enable_seqscan = off;
-- the same queries through an index scan and through a bitmap heap scan
CREATE FUNCTION probe() RETURNS TABLE (q text, result text) LANGUAGE sql AS $$
    SELECT 'range', (SELECT count(*) || '/' || sum(id) FROM c WHERE id BETWEEN 100 AND 110)
    UNION ALL SELECT 'point', (SELECT id || '/' || host || '/' || m FROM c WHERE id = 29999)
    UNION ALL SELECT 'partial', (SELECT count(*)::text FROM c WHERE host = 'host_5' AND m < 10)
    UNION ALL SELECT 'expression', (SELECT count(*)::text FROM c WHERE id % 7 = 3)
$$;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM c WHERE id BETWEEN 100 AND 110;
SELECT * FROM probe();
SET enable_bitmapscan = on;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM c WHERE id BETWEEN 100 AND 110;
SELECT * FROM probe();
SET enable_indexscan = on;
-- rows inserted after the index are found through it, in and after their transaction
BEGIN;
INSERT INTO c VALUES (40000, 'late', 1);
SELECT id, host FROM c WHERE id = 40000;
COMMIT;
SELECT id, host FROM c WHERE id = 40000;
-- an index-only scan must still visit the rows (no visibility map)
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM c WHERE id < 50;
SELECT count(*) FROM c WHERE id < 50;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- ctid and TID scans
SELECT ctid, id FROM c WHERE id IN (1, 2, 30000) ORDER BY id;
SELECT id FROM c WHERE ctid = '(0,2)';
SELECT count(*) FROM c WHERE ctid >= '(10,1)' AND ctid < '(12,1)';
SELECT id FROM c WHERE ctid = '(999999,1)';
-- a parallel scan returns every row once (PostgreSQL's Agg, so that the scan is parallel)
SET pg_columnar.enable_vectorized_agg = off;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT count(*), sum(id) FROM c;
SELECT count(*), sum(id) FROM c;
RESET ALL;
-- what a pg_columnar table refuses, it refuses clearly
SELECT count(*) FROM c TABLESAMPLE SYSTEM (10);
CREATE INDEX CONCURRENTLY c_conc ON c (m);
CLUSTER c USING c_id;
-- and nothing changed
SELECT count(*), sum(id) FROM c;
SELECT * FROM pgcol.verify('c');

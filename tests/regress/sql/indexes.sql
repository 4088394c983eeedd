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
SELECT count(*), sum(id) FROM c;
SELECT * FROM pgcol.verify('c');
-- TABLESAMPLE: SYSTEM picks TID blocks (consecutive row numbers), BERNOULLI rows; a sample
-- holds only rows the snapshot sees, with their values, and REPEATABLE repeats it
CREATE TABLE ch AS SELECT * FROM c;
DELETE FROM c WHERE id % 5 = 0;
DELETE FROM ch WHERE id % 5 = 0;
SELECT (SELECT count(*) FROM c TABLESAMPLE SYSTEM (100)) AS system_all,
       (SELECT count(*) FROM c TABLESAMPLE BERNOULLI (100)) AS bernoulli_all,
       (SELECT count(*) FROM c TABLESAMPLE SYSTEM (0)) AS system_none,
       (SELECT count(*) FROM c TABLESAMPLE BERNOULLI (0)) AS bernoulli_none,
       (SELECT count(*) FROM c) AS live_rows;
CREATE FUNCTION sample_check(tab text, method text, pct float8)
RETURNS TABLE (near_fraction bool, repeatable bool, values_as_stored bool, none_deleted bool) LANGUAGE plpgsql AS $$
DECLARE n bigint; total bigint; a text; b text; bad bigint; deleted bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s', tab) INTO total;
    EXECUTE format('SELECT count(*), md5(string_agg(id::text, '','' ORDER BY id)) FROM %s TABLESAMPLE %s (%s) REPEATABLE (42)', tab, method, pct) INTO n, a;
    EXECUTE format('SELECT md5(string_agg(id::text, '','' ORDER BY id)) FROM %s TABLESAMPLE %s (%s) REPEATABLE (42)', tab, method, pct) INTO b;
    EXECUTE format('SELECT count(*) FROM %s s TABLESAMPLE %s (%s) REPEATABLE (7) LEFT JOIN ch h USING (id)
                    WHERE h.id IS NULL OR (s.host, s.m) IS DISTINCT FROM (h.host, h.m)', tab, method, pct) INTO bad;
    EXECUTE format('SELECT count(*) FROM %s TABLESAMPLE %s (%s) WHERE id %% 5 = 0', tab, method, pct) INTO deleted;
    RETURN QUERY SELECT n BETWEEN 0.6 * pct / 100 * total AND 1.4 * pct / 100 * total, a = b, bad = 0, deleted = 0;
END $$;
SELECT * FROM sample_check('c', 'SYSTEM', 10);
SELECT * FROM sample_check('c', 'BERNOULLI', 10);
SELECT * FROM sample_check('c', 'BERNOULLI', 50);
-- a sorted table stores a stripe's rows in key order, not TID order: the same answers
CREATE TABLE cs (id int, host text, m float8) USING pg_columnar WITH (pg_columnar.sort_key = 'host, m');
INSERT INTO cs SELECT * FROM c ORDER BY id;
SELECT * FROM sample_check('cs', 'SYSTEM', 20);
SELECT * FROM sample_check('cs', 'BERNOULLI', 20);
SELECT (SELECT count(*) FROM cs TABLESAMPLE SYSTEM (100)) = (SELECT count(*) FROM ch) AS all_rows;
-- an extension's sampling methods go through the same blocks: system_rows returns exactly
-- the rows asked for (live ones), or every live row (where contrib is installed: not in the
-- 18-cassert build, which answers 'ok' unchecked)
CREATE FUNCTION system_rows_check() RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; d bigint; none_deleted bool; every_row bool;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'tsm_system_rows') THEN
        RETURN 'ok';
    END IF;
    CREATE EXTENSION IF NOT EXISTS tsm_system_rows;
    EXECUTE 'SELECT count(*), count(DISTINCT id), bool_and(id % 5 <> 0) FROM c TABLESAMPLE system_rows (500)' INTO n, d, none_deleted;
    EXECUTE 'SELECT count(*) = (SELECT count(*) FROM c) FROM c TABLESAMPLE system_rows (1000000)' INTO every_row;
    RETURN CASE WHEN n = 500 AND d = 500 AND none_deleted AND every_row THEN 'ok'
                ELSE format('%s rows, %s distinct, none deleted %s, every row %s', n, d, none_deleted, every_row) END;
END $$;
SELECT system_rows_check();
-- the transaction's own rows, not written out yet, are in its samples
BEGIN;
INSERT INTO c VALUES (50000, 'in-transaction', 1);
SELECT host FROM c TABLESAMPLE BERNOULLI (100) WHERE id = 50000;
ROLLBACK;
-- CLUSTER rewrites the table in an index's order (am::rewrite), by a sort or by an index
-- scan, against a heap twin: rows in the same order, deleted rows gone, indexes rebuilt
CREATE TABLE k (id int, host text, m float8, r int4range) USING pg_columnar;
CREATE TABLE kh (id int, host text, m float8, r int4range);
INSERT INTO k SELECT g, CASE WHEN g % 13 = 0 THEN NULL ELSE 'host_' || (g * 7919 % 101) END, (g * 31) % 997, int4range(g % 500, g % 500 + 3) FROM generate_series(1, 20000) g;
INSERT INTO kh SELECT * FROM k;
DELETE FROM k WHERE id % 9 = 0;
DELETE FROM kh WHERE id % 9 = 0;
UPDATE k SET m = -m WHERE id % 11 = 0;
UPDATE kh SET m = -m WHERE id % 11 = 0;
-- (keys without ties: rows of equal keys come out of a sort in no set order)
CREATE INDEX k_host_m ON k (host DESC NULLS LAST, m, id);
CREATE INDEX kh_host_m ON kh (host DESC NULLS LAST, m, id);
CREATE INDEX k_id ON k (id);
CREATE INDEX kh_id ON kh (id);
CREATE INDEX k_r ON k USING gist (r);
CREATE INDEX kh_r ON kh USING gist (r);
-- the rows in the table's own order, as text, against the twin's
CREATE FUNCTION same_order(a regclass, b regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE x text; y text;
BEGIN
    EXECUTE format('SELECT string_agg(t::text, '';'') FROM (SELECT id, host, m FROM %s) t', a) INTO x;
    EXECUTE format('SELECT string_agg(t::text, '';'') FROM (SELECT id, host, m FROM %s) t', b) INTO y;
    RETURN CASE WHEN x = y THEN 'same order' ELSE 'DIFFERENT' END || ', ' || (SELECT count(*) FROM regexp_split_to_table(x, ';'));
END $$;
SET enable_indexscan = off;
CLUSTER k USING k_host_m;
CLUSTER kh USING kh_host_m;
RESET enable_indexscan;
SELECT same_order('k', 'kh');
SELECT host, m FROM k LIMIT 3;
SET enable_sort = off;
CLUSTER k USING k_id;
CLUSTER kh USING kh_id;
RESET enable_sort;
SELECT same_order('k', 'kh');
-- a GiST index is read in its order (no sort for it): both give the index's order
CLUSTER k USING k_r;
SELECT count(*), sum(id), count(DISTINCT r) FROM k;
-- CLUSTER without an index name takes the one marked, as for heap
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'k'::regclass AND indisclustered;
ALTER TABLE k CLUSTER ON k_host_m;
ALTER TABLE kh CLUSTER ON kh_host_m;
CLUSTER k;
CLUSTER kh;
SELECT same_order('k', 'kh');
-- every index finds every row after the rewrites
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT (SELECT count(*) FROM k WHERE id BETWEEN 100 AND 5000) = (SELECT count(*) FROM kh WHERE id BETWEEN 100 AND 5000) AS by_id,
       (SELECT sum(id) FROM k WHERE host = 'host_7') = (SELECT sum(id) FROM kh WHERE host = 'host_7') AS by_host,
       (SELECT count(*) FROM k WHERE r && int4range(10, 20)) = (SELECT count(*) FROM kh WHERE r && int4range(10, 20)) AS by_range;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT * FROM pgcol.verify('k');
-- with a sort key each stripe keeps the key's order inside it: CLUSTER decides which rows
-- go to which stripe (docs/OPERATIONS.md, "VACUUM FULL and CLUSTER")
ALTER TABLE k SET (pg_columnar.sort_key = 'm');
SET pg_columnar.stripe_row_limit = 5000;
CLUSTER k USING k_id;
RESET pg_columnar.stripe_row_limit;
SELECT count(*) AS stripes, count(sort_key) AS sorted FROM pgcol.sort_order('k');
-- in the table's order: runs of ascending m (one per stripe), holding ascending id ranges
WITH s AS (SELECT id, m, row_number() OVER () AS pos FROM k),
d AS (SELECT id, pos, coalesce((m < lag(m) OVER (ORDER BY pos))::int, 0) AS descent FROM s),
r AS (SELECT id, sum(descent) OVER (ORDER BY pos) AS run FROM d),
g AS (SELECT run, min(id) AS lo, max(id) AS hi FROM r GROUP BY run)
SELECT count(*) AS runs, bool_and(hi < next_lo) AS id_ranges_in_order
FROM (SELECT hi, lead(lo, 1, 2147483647) OVER (ORDER BY run) AS next_lo FROM g) x;
SELECT count(*), sum(id), sum(m) FROM k;
SELECT count(*), sum(id), sum(m) FROM kh;

-- Every index access method against a heap twin, index builds over aborted loads (serial and
-- parallel), bitmap scans past the first 1 GB of virtual blocks, CREATE INDEX CONCURRENTLY and
-- REINDEX CONCURRENTLY, BRIN refused.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 1024;
CREATE TABLE a_col (id int, tags int[], r int4range, p point, t text, ts tsvector) USING pg_columnar;
CREATE TABLE a_heap (id int, tags int[], r int4range, p point, t text, ts tsvector);
INSERT INTO a_col SELECT g, ARRAY[g % 7, g % 11], int4range(g, g + g % 5), point(g % 100, g / 100), 'k' || (g % 300), to_tsvector('simple', 'w' || (g % 13) || ' x' || (g % 17))
  FROM generate_series(1, 6000) g;
INSERT INTO a_heap SELECT * FROM a_col;
CREATE INDEX ON a_col USING btree (id);
CREATE INDEX ON a_heap USING btree (id);
CREATE INDEX ON a_col USING hash (t);
CREATE INDEX ON a_heap USING hash (t);
CREATE INDEX ON a_col USING gin (tags);
CREATE INDEX ON a_heap USING gin (tags);
CREATE INDEX ON a_col USING gin (ts);
CREATE INDEX ON a_heap USING gin (ts);
CREATE INDEX ON a_col USING gist (r);
CREATE INDEX ON a_heap USING gist (r);
CREATE INDEX ON a_col USING spgist (p);
CREATE INDEX ON a_heap USING spgist (p);
CREATE INDEX ON a_col USING spgist (t);
CREATE INDEX ON a_heap USING spgist (t);
-- rows inserted after the indexes are found too
INSERT INTO a_col SELECT g, ARRAY[g % 7], int4range(g, g + 1), point(g % 50, 1), 'k' || (g % 300), to_tsvector('simple', 'w1') FROM generate_series(6001, 7000) g;
INSERT INTO a_heap SELECT g, ARRAY[g % 7], int4range(g, g + 1), point(g % 50, 1), 'k' || (g % 300), to_tsvector('simple', 'w1') FROM generate_series(6001, 7000) g;
SET enable_seqscan = off;
CREATE FUNCTION both_ways(q text) RETURNS TABLE (scan text, col bigint, heap bigint, same bool) LANGUAGE plpgsql AS $$
DECLARE c bigint; h bigint;
BEGIN
  FOR scan IN SELECT unnest(ARRAY['index', 'bitmap']) LOOP
    EXECUTE format('SET LOCAL enable_indexscan = %s', scan = 'index');
    EXECUTE format('SET LOCAL enable_bitmapscan = %s', scan = 'bitmap');
    EXECUTE format('SELECT count(*) FROM a_col WHERE %s', q) INTO c;
    EXECUTE format('SELECT count(*) FROM a_heap WHERE %s', q) INTO h;
    EXECUTE format('SELECT NOT EXISTS (SELECT id, t FROM a_col WHERE %1$s EXCEPT ALL SELECT id, t FROM a_heap WHERE %1$s)', q) INTO same;
    col := c; heap := h;
    RETURN NEXT;
  END LOOP;
END $$;
SELECT * FROM both_ways('id BETWEEN 100 AND 2500');
SELECT * FROM both_ways($$t = 'k42'$$);
SELECT * FROM both_ways('tags @> ARRAY[3]');
SELECT * FROM both_ways($$ts @@ to_tsquery('simple', 'w3 & x5')$$);
SELECT * FROM both_ways('r && int4range(500, 520)');
SELECT * FROM both_ways($$p <@ box '((10,10),(20,40))'$$);
SELECT * FROM both_ways($$t ^@ 'k29'$$);
-- the plans really use the indexes
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM a_col WHERE id = 5;
EXPLAIN (COSTS OFF) SELECT count(*) FROM a_col WHERE t = 'k1';
SET enable_indexscan = off;
SET enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM a_col WHERE tags @> ARRAY[3];
EXPLAIN (COSTS OFF) SELECT count(*) FROM a_col WHERE r && int4range(500, 520);
EXPLAIN (COSTS OFF) SELECT count(*) FROM a_col WHERE p <@ box '((10,10),(20,40))';
RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_bitmapscan;
-- BRIN bounds itself by the table's size in blocks, which a pg_columnar table's virtual
-- blocks exceed: refused, and nothing is created
CREATE INDEX a_col_brin ON a_col USING brin (id);
SELECT count(*) FROM pg_class WHERE relname = 'a_col_brin';
ALTER TABLE a_heap SET ACCESS METHOD heap;
CREATE INDEX a_heap_brin ON a_heap USING brin (id);
ALTER TABLE a_heap SET ACCESS METHOD pg_columnar;
DROP INDEX a_heap_brin;
-- index builds see committed rows only, not those of an aborted load
CREATE TABLE pb_col (id int, v int) USING pg_columnar WITH (parallel_workers = 2);
INSERT INTO pb_col SELECT g, g FROM generate_series(1, 20000) g;
BEGIN;
INSERT INTO pb_col SELECT -g, g FROM generate_series(1, 6000) g;
ROLLBACK;
CREATE INDEX pb_serial ON pb_col (v);
SET max_parallel_maintenance_workers = 2;
SET maintenance_work_mem = '256MB';
CREATE INDEX pb_parallel ON pb_col (id);
RESET max_parallel_maintenance_workers;
RESET maintenance_work_mem;
SELECT relname, reltuples FROM pg_class WHERE relname LIKE 'pb_%' AND relkind = 'i' ORDER BY relname;
-- the table's rows as VACUUM records them (CREATE INDEX records them too before 18)
VACUUM pb_col;
SELECT reltuples FROM pg_class WHERE relname = 'pb_col';
-- without the parallel_workers setting, an index build is parallel when the table has
-- stripes enough (the planner's own estimate of its size in pages would give no worker),
-- within the maintenance_work_mem cap: 64 MB allow one worker, 256 MB two
CREATE TABLE pw_col (id int) USING pg_columnar;
INSERT INTO pw_col SELECT g FROM generate_series(1, 20000) g;
SET max_parallel_maintenance_workers = 2;
SET client_min_messages = debug1;
CREATE INDEX pw_64 ON pw_col (id);
SET maintenance_work_mem = '256MB';
CREATE INDEX pw_256 ON pw_col (id);
RESET client_min_messages;
RESET maintenance_work_mem;
RESET max_parallel_maintenance_workers;
SET enable_seqscan = off;
SELECT count(*) FROM pw_col WHERE id > 0;
RESET enable_seqscan;
DROP TABLE pw_col;
SET enable_seqscan = off;
SELECT count(*), min(id) FROM pb_col WHERE id > -100000;
SELECT count(*) FROM pb_col WHERE v > 0;
RESET enable_seqscan;
-- bitmap scans of row numbers past the first 1 GB of virtual blocks (38 million rows): the
-- executor must not prefetch them as pages of the file
SET pg_columnar.test_row_number_gap = 40000000;
CREATE TABLE far_col (id int, v text) USING pg_columnar;
CREATE INDEX ON far_col (id);
INSERT INTO far_col SELECT g, 'v' || g FROM generate_series(1, 5) g;
INSERT INTO far_col SELECT g, 'w' || g FROM generate_series(6, 9) g;
RESET pg_columnar.test_row_number_gap;
CREATE TABLE far_heap AS SELECT * FROM far_col;
SELECT id, ctid FROM far_col WHERE id IN (1, 9) ORDER BY id;
SET effective_io_concurrency = 16;
SET enable_seqscan = off;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM far_col WHERE id BETWEEN 2 AND 8;
SELECT * FROM far_col WHERE id BETWEEN 2 AND 8 ORDER BY id;
SELECT * FROM far_heap WHERE id BETWEEN 2 AND 8 ORDER BY id;
RESET enable_seqscan;
RESET enable_indexscan;
RESET effective_io_concurrency;
-- CREATE INDEX CONCURRENTLY and REINDEX CONCURRENTLY (with concurrent writers: the isolation
-- test concurrent-index), against the heap twin
DELETE FROM a_col WHERE id % 10 = 3;
DELETE FROM a_heap WHERE id % 10 = 3;
CREATE INDEX CONCURRENTLY a_col_conc ON a_col (id);
CREATE INDEX CONCURRENTLY a_heap_conc ON a_heap (id);
CREATE INDEX CONCURRENTLY a_col_conc_gin ON a_col USING gin (tags);
CREATE INDEX CONCURRENTLY a_heap_conc_gin ON a_heap USING gin (tags);
CREATE UNIQUE INDEX CONCURRENTLY a_col_conc_u ON a_col (id) WHERE id > 5000;
CREATE UNIQUE INDEX CONCURRENTLY a_heap_conc_u ON a_heap (id) WHERE id > 5000;
REINDEX INDEX CONCURRENTLY a_col_id_idx;
REINDEX TABLE CONCURRENTLY a_col;
REINDEX SCHEMA CONCURRENTLY public;
CREATE TABLE parted (id int, v int) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100) USING pg_columnar;
INSERT INTO parted SELECT g, g FROM generate_series(0, 99) g;
CREATE INDEX CONCURRENTLY parted_1_conc ON parted_1 (id);
SELECT count(*) AS invalid FROM pg_index WHERE NOT indisvalid;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT (SELECT count(*) || '/' || sum(id) FROM a_col WHERE id BETWEEN 100 AND 900) AS col,
       (SELECT count(*) || '/' || sum(id) FROM a_heap WHERE id BETWEEN 100 AND 900) AS heap,
       (SELECT count(*) || '/' || sum(id) FROM a_col WHERE id > 5990) AS col_unique,
       (SELECT count(*) || '/' || sum(id) FROM a_heap WHERE id > 5990) AS heap_unique,
       (SELECT count(*) FROM parted WHERE id < 50) AS parted;
RESET enable_bitmapscan;
SELECT (SELECT count(*) FROM a_col WHERE tags @> ARRAY[3, 5]) AS col_gin, (SELECT count(*) FROM a_heap WHERE tags @> ARRAY[3, 5]) AS heap_gin;
RESET enable_seqscan;
INSERT INTO a_col VALUES (5999);
INSERT INTO a_col SELECT g FROM generate_series(1, 1000) g;
SELECT pg_relation_size('a_col_id_idx') > 0 AS has_size, count(*) FROM a_col;
-- without CONCURRENTLY both work
REINDEX INDEX a_col_id_idx;
REINDEX TABLE a_col;
SET enable_seqscan = off;
SELECT count(*) FROM a_col WHERE id BETWEEN 1 AND 100;

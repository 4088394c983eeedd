-- Reads of the stripe catalog that cost the same however many stripes a table has: the
-- planner estimates from a read kept across transactions while it is under a second old and
-- few rows were numbered since (storage::catalog::planning_list), and counts those rows; a
-- fetch by TID and a bitmap scan look up the stripes of the rows they are given through the
-- catalog's index (am::scan::ScanState::stripe_of_row). Both branches of each are shown,
-- with pgcol.kept_catalog_reads' count of whole reads, and every answer is the heap twin's.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 1024;
CREATE TABLE p (id int, v float8) USING pg_columnar;
CREATE TABLE ph (id int, v float8);
INSERT INTO p SELECT g, g FROM generate_series(1, 20000) g;
INSERT INTO ph SELECT g, g FROM generate_series(1, 20000) g;
CREATE INDEX ON p (id);
CREATE INDEX ON ph (id);
CREATE FUNCTION planned_rows(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO plan;
  RETURN (plan->0->'Plan'->>'Plan Rows')::bigint;
END $$;
CREATE TABLE seen (step int GENERATED ALWAYS AS IDENTITY, label text, planned bigint, scans bigint);
CREATE PROCEDURE watch(label text) LANGUAGE plpgsql AS $$
DECLARE n bigint := planned_rows('SELECT * FROM p');
BEGIN
  INSERT INTO seen (label, planned, scans) SELECT label, n, catalog_scans FROM pgcol.kept_catalog_reads();
END $$;
-- One CALL is one statement (one start time) over several transactions: a later
-- transaction that wrote plans from the read an earlier one kept, plus the rows numbered
-- since; past an eighth of the rows listed (and 1,024), or after a rollback, it reads again.
CREATE PROCEDURE lifecycle() LANGUAGE plpgsql AS $$
BEGIN
  CALL watch('first plan');
  COMMIT;
  INSERT INTO p VALUES (20001, 1);
  COMMIT;
  CALL watch('after one row, in a later transaction');
  COMMIT;
  INSERT INTO p SELECT g, g FROM generate_series(20002, 24000) g;
  COMMIT;
  CALL watch('after 3,999 rows');
  COMMIT;
  INSERT INTO p SELECT g, g FROM generate_series(24001, 24100) g;
  ROLLBACK;
  CALL watch('after a rollback');
  COMMIT;
END $$;
CALL lifecycle();
SELECT label, planned, scans - lag(scans) OVER (ORDER BY step) AS whole_reads FROM seen ORDER BY step;
SELECT count(*) FROM p;
INSERT INTO ph VALUES (20001, 1);
INSERT INTO ph SELECT g, g FROM generate_series(20002, 24000) g;
-- A fetch by TID: a generic plan's index scan, run in a transaction whose snapshot no read
-- was kept for, looks up its row's stripe (no whole read); one of rows in more than 16
-- stripes lists them all once; so does a serializable transaction's, whose whole read is
-- its check of conflicts.
SET plan_cache_mode = force_generic_plan;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET pg_columnar.enable_custom_scan = off;
PREPARE one(int) AS SELECT id, v FROM p WHERE id = $1;
PREPARE many(int[]) AS SELECT count(*), sum(v) FROM p WHERE id = ANY ($1);
EXPLAIN (COSTS OFF) EXECUTE one(5);
EXECUTE one(5);
EXECUTE many(ARRAY[1]);
SELECT array_agg(g * 1000 + 7) AS ids FROM generate_series(0, 23) g \gset
INSERT INTO p VALUES (30000, 1);
INSERT INTO ph VALUES (30000, 1);
SELECT catalog_scans AS s0 FROM pgcol.kept_catalog_reads() \gset
EXECUTE one(7);
SELECT catalog_scans - :s0 AS whole_reads FROM pgcol.kept_catalog_reads();
INSERT INTO p VALUES (30001, 1);
INSERT INTO ph VALUES (30001, 1);
SELECT catalog_scans AS s0 FROM pgcol.kept_catalog_reads() \gset

EXECUTE many(:'ids');
SELECT catalog_scans - :s0 AS whole_reads FROM pgcol.kept_catalog_reads();
SELECT count(*), sum(v) FROM ph WHERE id = ANY (:'ids');
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT catalog_scans AS s0 FROM pgcol.kept_catalog_reads() \gset
EXECUTE one(9);
SELECT catalog_scans - :s0 AS whole_reads FROM pgcol.kept_catalog_reads();
COMMIT;
-- A bitmap scan: the stripes of its rows, looked up; its delete mask read for those alone.
SET enable_indexscan = off;
SET enable_bitmapscan = on;
DELETE FROM p WHERE id = 8;
DELETE FROM ph WHERE id = 8;
PREPARE bmany(int[]) AS SELECT count(*), sum(v) FROM p WHERE id = ANY ($1);
EXPLAIN (COSTS OFF) EXECUTE bmany(ARRAY[7]);
SELECT catalog_scans AS s0 FROM pgcol.kept_catalog_reads() \gset
EXECUTE bmany(ARRAY[7, 8, 9, 12007]);
SELECT catalog_scans - :s0 AS whole_reads FROM pgcol.kept_catalog_reads();
SELECT count(*), sum(v) FROM ph WHERE id = ANY (ARRAY[7, 8, 9, 12007]);
INSERT INTO p VALUES (30002, 1);
INSERT INTO ph VALUES (30002, 1);
SELECT catalog_scans AS s0 FROM pgcol.kept_catalog_reads() \gset
EXECUTE bmany(:'ids');
SELECT catalog_scans - :s0 AS whole_reads FROM pgcol.kept_catalog_reads();
SELECT count(*), sum(v) FROM ph WHERE id = ANY (:'ids');
RESET ALL;
DEALLOCATE ALL;
-- Past 1,024 stripes the planner checks each large stripe and a sample of the small ones
-- (exec::plan::stripes_read): a key in the one large stripe plans the index scan, as for
-- heap, though most stripes (one-row ones, an UPDATE each) rule it out.
CREATE TABLE s (id int PRIMARY KEY, v int) USING pg_columnar;
INSERT INTO s VALUES (0, 0);
INSERT INTO s SELECT g, 0 FROM generate_series(1, 60000) g;
DO $$ BEGIN FOR i IN 1..1100 LOOP UPDATE s SET v = v + 1 WHERE id = i; END LOOP; END $$;
SELECT count(*) > 1024 AS many_stripes FROM pgcol.stripes('s');
ANALYZE s;
EXPLAIN (COSTS OFF) SELECT v FROM s WHERE id = 50000;
SELECT v FROM s WHERE id = 50000;
SELECT count(*), sum(v) FROM s;

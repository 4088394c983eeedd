-- PgcolIndexSkip: under DISTINCT ON (g) ... ORDER BY g, o over a partitioned table with a
-- pg_columnar partition, each other (heap) partition gives its first row per group through
-- a btree index on (g, o ...), one descent per group, instead of all its rows for the Sort.
-- Every result is compared with a heap twin and with the plan without the node; each plan
-- that uses the index is shown beside a control that must not.
CREATE EXTENSION pg_columnar;
SET TimeZone = 'UTC';
-- an SSD's setting: each row the node reads past a group's first costs a table page
SET random_page_cost = 1.1;
-- day 1 in pg_columnar (40 hosts and host_cold, seen only there), day 2 heap (hosts 0..29),
-- the default partition heap (hosts 0..19 on day 3, rows of a NULL host, NULL times of
-- host_5 and host_6, which come first under t DESC); v cycles so that quals on it fail for
-- some hosts' newest rows
CREATE TABLE ts (n int8, t timestamptz, h text, v float8) PARTITION BY RANGE (t);
CREATE TABLE ts1 PARTITION OF ts FOR VALUES FROM ('2016-01-01') TO ('2016-01-02') USING pg_columnar;
CREATE TABLE ts2 PARTITION OF ts FOR VALUES FROM ('2016-01-02') TO ('2016-01-03');
CREATE TABLE ts3 PARTITION OF ts DEFAULT;
INSERT INTO ts SELECT g, timestamptz '2016-01-01' + (g / 40) * interval '5 min', 'host_' || (g % 40), (g * 37) % 101
  FROM generate_series(0, 288 * 40 - 1) g;
INSERT INTO ts VALUES (-1, '2016-01-01 03:00', 'host_cold', 1);
INSERT INTO ts SELECT 20000 + g, timestamptz '2016-01-02' + (g / 30) * interval '5 min', 'host_' || (g % 30), (g * 37) % 101
  FROM generate_series(0, 288 * 30 - 1) g;
INSERT INTO ts SELECT 40000 + g, timestamptz '2016-01-03' + (g / 20) * interval '5 min', 'host_' || (g % 20), (g * 37) % 101
  FROM generate_series(0, 288 * 20 - 1) g;
INSERT INTO ts SELECT 50000 + g, timestamptz '2016-01-03' + g * interval '1 min', NULL, g FROM generate_series(0, 9) g;
INSERT INTO ts VALUES (-5, NULL, 'host_5', 5), (-6, NULL, 'host_6', 6), (-7, NULL, NULL, 7);
CREATE INDEX ts_h_t ON ts (h, t DESC);
CREATE TABLE ts_heap AS SELECT * FROM ts;
ANALYZE ts, ts_heap;
SELECT tableoid::regclass, count(*), count(DISTINCT h) AS hosts FROM ts GROUP BY 1 ORDER BY 1;

-- the partitions query q's plan (%s: the table, ts unless tbl says) reads through
-- PgcolIndexSkip (the other scans are PostgreSQL's choice, which differs between majors),
-- and whether its rows equal the heap twin's (on tbl_heap) and the plan's without
-- PgcolTopN's partition plan
CREATE FUNCTION skip_same(q text, tbl text DEFAULT 'ts') RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text; a text; b text; c text; n bigint;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || format(q, tbl) LOOP
    IF line ~ 'PgcolIndexSkip' THEN
      RETURN NEXT regexp_replace(line, '^\s*(->\s*)?', '');
    END IF;
  END LOOP;
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl)) INTO a;
  PERFORM set_config('pg_columnar.enable_topn', 'off', true);
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl)) INTO b;
  PERFORM set_config('pg_columnar.enable_topn', 'on', true);
  EXECUTE format('SELECT count(*), string_agg(r::text, '' '') FROM (%s) r', format(q, tbl || '_heap')) INTO n, c;
  IF a IS DISTINCT FROM c OR b IS DISTINCT FROM c THEN
    RETURN NEXT format('MISMATCH %s / %s / heap %s', a, b, c);
  ELSE
    RETURN NEXT format('same as heap: %s rows, %s', n, md5(c));
  END IF;
END $$;

-- what EXPLAIN ANALYZE says each PgcolIndexSkip did (with the quals it evaluates: Filter,
-- and Bound for those that end a group)
CREATE FUNCTION skip_read(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text; in_skip boolean := false;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF line ~ '->' THEN in_skip := line ~ 'PgcolIndexSkip'; END IF;
    IF line ~ '(PgcolIndexSkip|Index: |First Row Per Group|Index Descents|Rows Read|Groups: |Groups Ended|Subplans Removed)'
       OR (in_skip AND line ~ '^\s*(Filter|Bound): ') THEN
      RETURN NEXT regexp_replace(regexp_replace(line, '^\s*(->\s*)?', ''), ' \(actual rows=[0-9.]+ loops=[0-9]+\)', '');
    END IF;
  END LOOP;
END $$;

-- lastpoint: each heap partition through the index, forward (its order is the query's)
SELECT * FROM skip_same('SELECT DISTINCT ON (h) * FROM %s ORDER BY h, t DESC');
-- one descent for the NULL group, one for the first host, one after each host: each heap
-- partition reads one row per group (no quals)
SELECT * FROM skip_read('SELECT DISTINCT ON (h) * FROM ts ORDER BY h, t DESC');
-- t ascending: the index read backward (h descending, t ascending NULLS LAST)
SELECT * FROM skip_same('SELECT DISTINCT ON (h) h, t, n FROM %s ORDER BY h, t');
-- a qual failing the newest rows of some hosts: each group's first row that satisfies it,
-- found by reading on in the index's order
SELECT * FROM skip_same('SELECT DISTINCT ON (h) h, t, v FROM %s WHERE v > 60 ORDER BY h, t DESC');
SELECT * FROM skip_read('SELECT DISTINCT ON (h) h, t, v FROM ts WHERE v > 60 ORDER BY h, t DESC');
-- a bound on t that a group's rows, in the scan's order, pass and then fail for good (t >= x
-- read descending, t <= x ascending): the first row failing it with a t ends the group. A
-- table partitioned by site, so the bound prunes nothing (site 2 reports 10 s after
-- site 1): in the heap site, hosts 15..19 stopped at noon, and their groups end at their
-- newest row
CREATE TABLE tb (site int, h text, t timestamptz) PARTITION BY LIST (site);
CREATE TABLE tb1 PARTITION OF tb FOR VALUES IN (1) USING pg_columnar;
CREATE TABLE tb2 PARTITION OF tb FOR VALUES IN (2);
INSERT INTO tb SELECT 1 + g % 2, 'host_' || (g / 2 % 20), timestamptz '2016-01-01' + (g / 40) * interval '1 min' + (g % 2) * interval '10 s'
  FROM generate_series(0, 1440 * 40 - 1) g;
DELETE FROM tb WHERE site = 2 AND h IN ('host_15', 'host_16', 'host_17', 'host_18', 'host_19') AND t >= '2016-01-01 12:00';
INSERT INTO tb VALUES (2, 'host_15', NULL);
CREATE INDEX ON tb (h, t DESC);
CREATE TABLE tb_heap AS SELECT * FROM tb;
ANALYZE tb, tb_heap;
SELECT * FROM skip_same('SELECT DISTINCT ON (h) site, h, t FROM %s WHERE t >= ''2016-01-01 18:00'' ORDER BY h, t DESC', 'tb');
SELECT * FROM skip_read('SELECT DISTINCT ON (h) site, h, t FROM tb WHERE t >= ''2016-01-01 18:00'' ORDER BY h, t DESC');
-- a narrow window: the rows before a group's first in it are not read (its cost is a row a
-- group, not 1 / the window's selectivity)
SELECT * FROM skip_same('SELECT DISTINCT ON (h) site, h, t FROM %s WHERE t >= ''2016-01-01 23:50'' ORDER BY h, t DESC', 'tb');
-- under a row security policy a bound may not run ahead of the policy's qual, so it counts
-- as a qual on the index's columns and the partition's rows are read (no PgcolIndexSkip);
-- the rows honour the policy
CREATE ROLE skip_reader;
GRANT SELECT ON tb, tb1, tb2 TO skip_reader;
ALTER TABLE tb ENABLE ROW LEVEL SECURITY;
CREATE POLICY no_host_3 ON tb USING (h <> 'host_3');
SET ROLE skip_reader;
SELECT count(*) AS index_skips FROM skip_read('SELECT DISTINCT ON (h) site, h, t FROM tb WHERE t >= ''2016-01-01 18:00'' ORDER BY h, t DESC') r
 WHERE r ~ 'PgcolIndexSkip';
SELECT count(*), count(*) FILTER (WHERE h = 'host_3') AS host_3 FROM (SELECT DISTINCT ON (h) site, h, t FROM tb WHERE t >= '2016-01-01 18:00' ORDER BY h, t DESC) s;
RESET ROLE;
DROP POLICY no_host_3 ON tb;
ALTER TABLE tb DISABLE ROW LEVEL SECURITY;
DROP OWNED BY skip_reader;
DROP ROLE skip_reader;
-- the controls, each group's rows read one by one until one passes, so costed as whole
-- groups: t <= x read descending, and a qual on the group's column
SELECT * FROM skip_same('SELECT DISTINCT ON (h) site, h, t FROM %s WHERE h >= ''host_5'' ORDER BY h, t DESC', 'tb');
SELECT * FROM skip_same('SELECT DISTINCT ON (h) site, h, t FROM %s WHERE t <= ''2016-01-01 06:00'' ORDER BY h, t DESC', 'tb');
-- a qual no row of a group satisfies: the group is absent
SELECT * FROM skip_same('SELECT DISTINCT ON (h) h, t, v FROM %s WHERE v > 99 ORDER BY h, t DESC');

-- controls, each partition's rows read as before: an order the index does not give (NULLS
-- LAST, whichever way it is read), groups nearly as many as rows (n is unique), a DISTINCT
-- ON column the index does not lead with
SELECT * FROM skip_same('SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h, t DESC NULLS LAST');
CREATE INDEX ts_n_t ON ts (n, t DESC);
ANALYZE ts;
SELECT * FROM skip_same('SELECT DISTINCT ON (n) n, t FROM %s ORDER BY n, t DESC');
SELECT * FROM skip_same('SELECT DISTINCT ON (v) v, t, n FROM %s ORDER BY v, t DESC');
DROP INDEX ts_n_t;

-- the index's first column descending: read forward the keys come descending, so each next
-- group is below the last (both directions of t)
DROP INDEX ts_h_t;
CREATE INDEX ts_hd_t ON ts (h DESC, t DESC);
ANALYZE ts;
SELECT * FROM skip_same('SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h, t DESC');
SELECT * FROM skip_read('SELECT DISTINCT ON (h) h, t FROM ts ORDER BY h, t DESC');
SELECT * FROM skip_same('SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h, t');
DROP INDEX ts_hd_t;
CREATE INDEX ts_h_t ON ts (h, t DESC);
-- system columns: tableoid and ctid are the rows' own (a DELETE keeping each host's newest
-- row by them leaves the same rows as on heap); xmin is not in the node's copy of a row, so
-- a query reading it gets the partitions' rows (the control)
SELECT count(*) FROM (SELECT DISTINCT ON (h) tableoid, ctid, h, t FROM ts ORDER BY h, t DESC) s
  JOIN ts ON ts.tableoid = s.tableoid AND ts.ctid = s.ctid AND ts.h IS NOT DISTINCT FROM s.h AND ts.t IS NOT DISTINCT FROM s.t;
SELECT * FROM skip_same('SELECT DISTINCT ON (h) xmin = xmin AS x, h, t FROM %s ORDER BY h, t DESC');
BEGIN;
DELETE FROM ts WHERE t >= '2016-01-02' AND (tableoid, ctid) NOT IN
  (SELECT tableoid, ctid FROM (SELECT DISTINCT ON (h) tableoid, ctid, h FROM ts ORDER BY h, t DESC) s);
SELECT tableoid::regclass, count(*) FROM ts GROUP BY 1 ORDER BY 1;
ROLLBACK;
-- an index whose first column the quals hold constant, (k, h, t DESC) under WHERE k = 1:
-- the pathkeys leave k out, but the node would skip by k, so the index is not used (the
-- control), nor where k is not constant; (h, k, t DESC) is not the order either
ALTER TABLE ts ADD COLUMN k int DEFAULT 1;
ALTER TABLE ts_heap ADD COLUMN k int DEFAULT 1;
DROP INDEX ts_h_t;
CREATE INDEX ts_k_h_t ON ts (k, h, t DESC);
ANALYZE ts;
SELECT * FROM skip_same('SELECT DISTINCT ON (h) h, t FROM %s WHERE k = 1 ORDER BY h, t DESC');
DROP INDEX ts_k_h_t;
CREATE INDEX ts_h_t ON ts (h, t DESC);
ANALYZE ts;
-- the switch off: the partitions' rows
SET pg_columnar.enable_index_skip = off;
SELECT * FROM skip_same('SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h, t DESC');
RESET pg_columnar.enable_index_skip;

-- rows deleted and updated since: only the rows the snapshot sees; a transaction that
-- deletes a host's newest rows sees the older ones, the others still the newest
DELETE FROM ts WHERE h = 'host_3' AND t >= '2016-01-03 08:00';
DELETE FROM ts_heap WHERE h = 'host_3' AND t >= '2016-01-03 08:00';
UPDATE ts SET v = -1 WHERE h = 'host_4' AND t >= '2016-01-03 08:00';
UPDATE ts_heap SET v = -1 WHERE h = 'host_4' AND t >= '2016-01-03 08:00';
SELECT * FROM skip_same('SELECT DISTINCT ON (h) h, t, v FROM %s ORDER BY h, t DESC');
BEGIN;
DELETE FROM ts WHERE h IN ('host_7', 'host_8') AND t >= '2016-01-02 12:00';
SELECT h, t FROM (SELECT DISTINCT ON (h) h, t FROM ts ORDER BY h, t DESC) s WHERE h IN ('host_7', 'host_8', 'host_9');
ROLLBACK;
SELECT h, t FROM (SELECT DISTINCT ON (h) h, t FROM ts ORDER BY h, t DESC) s WHERE h IN ('host_7', 'host_8', 'host_9');

-- rescanned for each outer row (a parameter in the partitions' quals), and through a cursor
SELECT x, (SELECT count(*) FROM (SELECT DISTINCT ON (h) h FROM ts WHERE v > x ORDER BY h, t DESC) s) AS hosts,
       (SELECT count(*) FROM (SELECT DISTINCT ON (h) h FROM ts_heap WHERE v > x ORDER BY h, t DESC) s) AS heap
  FROM (VALUES (0), (60), (99), (100)) v(x);
-- the counts add up over the four runs: each run descends once per group and once more
SELECT * FROM skip_read('SELECT x, (SELECT count(*) FROM (SELECT DISTINCT ON (h) h FROM ts WHERE v > x ORDER BY h, t DESC) s) FROM (VALUES (0), (60), (99), (100)) v(x)');
BEGIN;
DECLARE c CURSOR FOR SELECT DISTINCT ON (h) h, t FROM ts ORDER BY h, t DESC;
FETCH 3 FROM c;
FETCH 2 FROM c;
COMMIT;

-- a generic plan: the partitions the parameter rules out are pruned at run time (ts1)
PREPARE newest(timestamptz) AS SELECT DISTINCT ON (h) h, t FROM ts WHERE t >= $1 ORDER BY h, t DESC;
SET plan_cache_mode = force_generic_plan;
SELECT * FROM skip_read('EXECUTE newest(''2016-01-02 12:00'')');
CREATE TEMP TABLE newest_rows AS EXECUTE newest('2016-01-02 12:00');
SELECT (SELECT md5(string_agg(r::text, ' ')) FROM (SELECT * FROM newest_rows ORDER BY h, t DESC) r)
     = (SELECT md5(string_agg(r::text, ' ')) FROM (SELECT DISTINCT ON (h) h, t FROM ts_heap WHERE t >= '2016-01-02 12:00' ORDER BY h, t DESC) r) AS same_as_heap;
RESET plan_cache_mode;

-- the index dropped: the cached plan is made again, without it
PREPARE lastpoint AS SELECT DISTINCT ON (h) h, t FROM ts ORDER BY h, t DESC;
EXECUTE lastpoint \g /dev/null
DROP INDEX ts_h_t;
SELECT * FROM skip_same('SELECT DISTINCT ON (h) * FROM %s ORDER BY h, t DESC');
CREATE TEMP TABLE lastpoint_rows AS EXECUTE lastpoint;
SELECT count(*) FROM lastpoint_rows;
-- an index with t ascending, on one heap partition only: read backward for t DESC there
CREATE INDEX ts2_h_t ON ts2 (h, t);
ANALYZE ts2;
SELECT * FROM skip_same('SELECT DISTINCT ON (h) * FROM %s ORDER BY h, t DESC');
SELECT * FROM skip_read('SELECT DISTINCT ON (h) * FROM ts ORDER BY h, t DESC');

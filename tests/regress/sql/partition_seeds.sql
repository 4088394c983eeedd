-- Partition seeds: under DISTINCT ON (g) ... ORDER BY g, o over a partitioned table, the
-- partitions run in the order's direction and each PgcolTopN starts from the first rows per
-- group the partitions before it returned (pg_columnar.enable_partition_seeds), leaving out
-- the stripes whose summaries cannot beat them. Every result is compared with a heap twin
-- and with the switch off; the stripes left out are shown beside the control.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 2048;
SET TimeZone = 'UTC';
SET random_page_cost = 1.1;
-- days 1-3 in pg_columnar (three stripes each), day 4 heap with TSBS's index (h, t DESC)
-- and one on (k, t DESC), the default partition heap without an index (NULL times of
-- host_3, which come first under t DESC). host_0..19 report every 5 minutes every day (on
-- day 4 until 06:00); host_cold only on day 1, rows of a NULL host only on day 2. k is the
-- host's number (99 for host_cold, NULL for the NULL host); v cycles.
CREATE TABLE ps (n int8, t timestamptz, h text, k int, v float8) PARTITION BY RANGE (t);
CREATE TABLE ps1 PARTITION OF ps FOR VALUES FROM ('2016-01-01') TO ('2016-01-02') USING pg_columnar;
CREATE TABLE ps2 PARTITION OF ps FOR VALUES FROM ('2016-01-02') TO ('2016-01-03') USING pg_columnar;
CREATE TABLE ps3 PARTITION OF ps FOR VALUES FROM ('2016-01-03') TO ('2016-01-04') USING pg_columnar;
CREATE TABLE ps4 PARTITION OF ps FOR VALUES FROM ('2016-01-04') TO ('2016-01-05');
CREATE TABLE ps5 PARTITION OF ps DEFAULT;
CREATE INDEX ps4_h_t ON ps4 (h, t DESC);
CREATE INDEX ps4_k_t ON ps4 (k, t DESC);
INSERT INTO ps SELECT d * 100000 + g, timestamptz '2016-01-01' + (d - 1) * interval '1 day' + (g / 20) * interval '5 min',
    'host_' || (g % 20), g % 20, (g * 37) % 101
  FROM generate_series(1, 3) d, generate_series(0, 288 * 20 - 1) g;
INSERT INTO ps VALUES (-1, '2016-01-01 03:00', 'host_cold', 99, 1);
INSERT INTO ps SELECT -100 - g, timestamptz '2016-01-02 12:00' + g * interval '1 min', NULL, NULL, g FROM generate_series(0, 4) g;
INSERT INTO ps SELECT 400000 + g, timestamptz '2016-01-04' + (g / 20) * interval '5 min', 'host_' || (g % 20), g % 20, (g * 37) % 101
  FROM generate_series(0, 72 * 20 - 1) g;
INSERT INTO ps VALUES (-3, NULL, 'host_3', 3, 3);
CREATE TABLE ps_heap AS SELECT * FROM ps;
ANALYZE ps, ps_heap;
SELECT tableoid::regclass, count(*), count(DISTINCT h) AS hosts FROM ps GROUP BY 1 ORDER BY 1;

-- the rows of query q (%s: the table) with seeds, without them and on the heap twin: whether
-- all three agree, and the rows' digest
CREATE FUNCTION seeds_same(q text, tbl text DEFAULT 'ps') RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; b text; c text; n bigint;
BEGIN
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl)) INTO a;
  PERFORM set_config('pg_columnar.enable_partition_seeds', 'off', true);
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl)) INTO b;
  PERFORM set_config('pg_columnar.enable_partition_seeds', 'on', true);
  EXECUTE format('SELECT count(*), string_agg(r::text, '' '') FROM (%s) r', format(q, tbl || '_heap')) INTO n, c;
  IF a IS DISTINCT FROM c OR b IS DISTINCT FROM c THEN
    RETURN format('MISMATCH %s / %s / heap %s', a, b, c);
  END IF;
  RETURN format('same as heap: %s rows, %s', n, md5(c));
END $$;

-- what EXPLAIN ANALYZE says each partition's node did, in the order they ran
CREATE FUNCTION seeds_read(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF line ~ '(PgcolTopN|PgcolIndexSkip|Seq Scan|Stripes: |Groups: |Groups From Earlier)' THEN
      RETURN NEXT regexp_replace(regexp_replace(line, '^\s*(->\s*)?', ''), ' \(actual rows=[0-9.]+ loops=[0-9]+\)', '');
    END IF;
  END LOOP;
END $$;

-- lastpoint: the default partition and day 4 run first (day 4 through the index, its rows
-- recorded), then days 3, 2, 1. Day 3's stripes are all left out (every host it holds has
-- a newer row); day 2 reads only what can hold the NULL host, day 1 only host_cold's
EXPLAIN (COSTS OFF) SELECT DISTINCT ON (h) * FROM ps ORDER BY h, t DESC;
SELECT seeds_same('SELECT DISTINCT ON (h) * FROM %s ORDER BY h, t DESC');
SELECT * FROM seeds_read('SELECT DISTINCT ON (h) * FROM ps ORDER BY h, t DESC');
-- the control: without seeds each pg_columnar partition reads its newest stripe
SET pg_columnar.enable_partition_seeds = off;
SELECT * FROM seeds_read('SELECT DISTINCT ON (h) * FROM ps ORDER BY h, t DESC');
RESET pg_columnar.enable_partition_seeds;
-- an integer key, through the index on (k, t DESC): without a shared dictionary, the groups
-- a stripe holds are the integers of its summary's range of k; day 1's stripe holding
-- host_cold (k 99: a range of 100 integers and 21 groups) is read
SELECT seeds_same('SELECT DISTINCT ON (k) k, t, n FROM %s ORDER BY k, t DESC');
SELECT * FROM seeds_read('SELECT DISTINCT ON (k) k, t, n FROM ps ORDER BY k, t DESC');
-- ascending: the partitions run in bound order, day 1 first; days 2 and 3 then read only
-- what can hold the NULL host (day 2) and nothing of day 3
SELECT seeds_same('SELECT DISTINCT ON (h) h, t, n FROM %s ORDER BY h, t');
SELECT * FROM seeds_read('SELECT DISTINCT ON (h) h, t, n FROM ps ORDER BY h, t');
SELECT seeds_same('SELECT DISTINCT ON (k) k, t, n FROM %s ORDER BY k DESC, t NULLS FIRST');
-- NULL times last: host_3's first row is on day 4
SELECT seeds_same('SELECT DISTINCT ON (h) h, t, n FROM %s ORDER BY h, t DESC NULLS LAST');
-- quals that fail some hosts' newest rows: a partition's recorded rows are the rows it
-- returns, which satisfy them
SELECT seeds_same('SELECT DISTINCT ON (h) h, t, v FROM %s WHERE v > 60 ORDER BY h, t DESC');
SELECT seeds_same('SELECT DISTINCT ON (k) k, t, v FROM %s WHERE v < 5 AND k < 15 ORDER BY k, t DESC');
SELECT seeds_same('SELECT DISTINCT ON (h) h, t FROM %s WHERE h IN (''host_1'', ''host_cold'') OR h IS NULL ORDER BY h, t DESC');
-- a window that leaves day 4 out: day 3 runs first, unseeded
SELECT seeds_same('SELECT DISTINCT ON (h) h, t FROM %s WHERE t < ''2016-01-03 18:00'' ORDER BY h, t DESC');
-- rescanned with a new parameter each time: each pass forgets the last pass's rows (a row
-- of v > 10 recorded in the first pass does not hold for v > 60)
SELECT seeds_same('SELECT x, (SELECT md5(string_agg(h || t || v, '','')) FROM (SELECT DISTINCT ON (h) h, t, v FROM %s WHERE v > x ORDER BY h, t DESC) s) FROM (VALUES (10), (60), (95), (60)) x(x)');
-- rescanned with no new parameter (under a nested loop, no Material): the same rows each time
SET enable_material = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT seeds_same('SELECT a.x, s.h, s.t FROM (VALUES (1), (2), (3)) a(x) JOIN LATERAL (SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h, t DESC) s ON s.h < ''host_2'' ORDER BY 1, 2');
RESET enable_material;
RESET enable_hashjoin;
RESET enable_mergejoin;
-- a generic plan with the partitions its parameter rules out pruned at run time
PREPARE newest(timestamptz) AS SELECT DISTINCT ON (h) h, t FROM ps WHERE t >= $1 ORDER BY h, t DESC;
SET plan_cache_mode = force_generic_plan;
CREATE TEMP TABLE newest_rows AS EXECUTE newest('2016-01-02 06:00');
SELECT md5(string_agg(r::text, ' ')) FROM (SELECT * FROM newest_rows ORDER BY h, t DESC) r;
SELECT md5(string_agg(r::text, ' ')) FROM (SELECT DISTINCT ON (h) h, t FROM ps_heap WHERE t >= '2016-01-02 06:00' ORDER BY h, t DESC) r;
DROP TABLE newest_rows;
CREATE TEMP TABLE newest_rows AS EXECUTE newest('2016-01-01 00:00');
SELECT md5(string_agg(r::text, ' ')) FROM (SELECT * FROM newest_rows ORDER BY h, t DESC) r;
SELECT md5(string_agg(r::text, ' ')) FROM (SELECT DISTINCT ON (h) h, t FROM ps_heap WHERE t >= '2016-01-01 00:00' ORDER BY h, t DESC) r;
RESET plan_cache_mode;
DEALLOCATE newest;
-- a cursor: fetched in part, then to the end
BEGIN;
DECLARE c CURSOR FOR SELECT DISTINCT ON (h) h, t FROM ps ORDER BY h, t DESC;
FETCH 3 FROM c;
FETCH ALL FROM c;
COMMIT;
-- a row deleted from day 4 (uncommitted, then committed): host_7's first row comes from day 3
BEGIN;
DELETE FROM ps WHERE h = 'host_7' AND t >= '2016-01-04';
DELETE FROM ps_heap WHERE h = 'host_7' AND t >= '2016-01-04';
SELECT seeds_same('SELECT DISTINCT ON (h) h, t, n FROM %s ORDER BY h, t DESC');
SELECT * FROM seeds_read('SELECT DISTINCT ON (h) h, t, n FROM ps ORDER BY h, t DESC');
ROLLBACK;

-- partitions by another column (sites): one host in several partitions with the same
-- times, so rows tie across partitions (either is a first row: only h and t are compared)
CREATE TABLE pl (site int, h text, t timestamptz, v float8) PARTITION BY LIST (site);
CREATE TABLE pl1 PARTITION OF pl FOR VALUES IN (1) USING pg_columnar;
CREATE TABLE pl2 PARTITION OF pl FOR VALUES IN (2) USING pg_columnar;
CREATE TABLE pl3 PARTITION OF pl FOR VALUES IN (3) USING pg_columnar;
INSERT INTO pl SELECT 1 + g % 3, 'host_' || (g % 10), timestamptz '2016-01-01' + (g / 30) * interval '1 min', g
  FROM generate_series(0, 30 * 300 - 1) g;
INSERT INTO pl SELECT 1 + g % 2, 'host_' || (g % 10), timestamptz '2016-01-01 06:00', g FROM generate_series(0, 19) g;
CREATE TABLE pl_heap AS SELECT * FROM pl;
ANALYZE pl, pl_heap;
SELECT seeds_same('SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h, t DESC', 'pl');
SELECT seeds_same('SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h, t', 'pl');
SELECT * FROM seeds_read('SELECT DISTINCT ON (h) h, t FROM pl ORDER BY h, t DESC');
-- rescanned with a new parameter, no index in the way: each partition forgets the rows of
-- the last pass (its own among them) when it is rescanned
SELECT seeds_same('SELECT x, (SELECT md5(string_agg(h || t, '','')) FROM (SELECT DISTINCT ON (h) h, t FROM %s WHERE v > x ORDER BY h, t DESC) s) FROM (VALUES (10), (8990), (10), (5000)) x(x)', 'pl');

-- an index (g, g, o) gives the order of (g, o) (PostgreSQL leaves out the repeated g): the
-- heap partition (run first) is read through it, but its rows are not recorded (the index's
-- second column is not o), so the pg_columnar partition's better rows are returned
CREATE TABLE pm (src int, g int, o int) PARTITION BY LIST (src);
CREATE TABLE pm1 PARTITION OF pm FOR VALUES IN (1) USING pg_columnar;
CREATE TABLE pm2 PARTITION OF pm FOR VALUES IN (2);
CREATE INDEX ON pm2 (g, g, o);
INSERT INTO pm SELECT 2, i % 10, -100000 + i FROM generate_series(1, 20000) i;
INSERT INTO pm SELECT 1, i % 10, -5 - i FROM generate_series(0, 9999) i;
CREATE TABLE pm_heap AS SELECT * FROM pm;
ANALYZE pm, pm_heap;
SELECT seeds_same('SELECT DISTINCT ON (g) g, o, src FROM %s ORDER BY g, o DESC', 'pm');
SELECT * FROM seeds_read('SELECT DISTINCT ON (g) g, o, src FROM pm ORDER BY g, o DESC');

-- heap partitions take the rows of the ones before them too, when the order column is NOT
-- NULL: each descends to the hosts between two seeds' and to a seed's rows that beat it,
-- instead of to every host's first row. By site, times overlapping: some hosts of pn2 have
-- newer rows than pn3's (20..29: returned), some only older (10..19: not), hosts 30..49 only
-- pn2's
CREATE TABLE pn (site int, h text, t timestamptz NOT NULL, v int) PARTITION BY LIST (site);
CREATE TABLE pn1 PARTITION OF pn FOR VALUES IN (1) USING pg_columnar;
CREATE TABLE pn2 PARTITION OF pn FOR VALUES IN (2);
CREATE TABLE pn3 PARTITION OF pn FOR VALUES IN (3);
CREATE INDEX ON pn2 (h, t DESC);
CREATE INDEX ON pn3 (h, t DESC);
INSERT INTO pn SELECT 3, 'host_' || (g % 30), timestamptz '2016-01-01' + (g * 7919 % 1000) * interval '1 min', g % 100
  FROM generate_series(0, 2999) g;
INSERT INTO pn SELECT 2, 'host_' || (10 + g % 40),
    timestamptz '2016-01-01' + (g * 7907 % CASE WHEN g % 40 < 10 THEN 500 ELSE 1100 END) * interval '1 min', g % 97
  FROM generate_series(0, 3999) g;
INSERT INTO pn SELECT 1, 'host_' || (g % 60), timestamptz '2016-01-01' + (g * 7901 % 1200) * interval '1 min', g % 89
  FROM generate_series(0, 5999) g;
CREATE TABLE pn_heap AS SELECT * FROM pn;
ANALYZE pn, pn_heap;
SELECT seeds_same('SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h, t DESC', 'pn');
SELECT * FROM seeds_read('SELECT DISTINCT ON (h) h, t FROM pn ORDER BY h, t DESC');
SELECT seeds_same('SELECT DISTINCT ON (h) h, t FROM %s WHERE v > 50 ORDER BY h, t DESC', 'pn');
SELECT seeds_same('SELECT DISTINCT ON (h) h, t FROM %s WHERE v > 50 AND t >= ''2016-01-01 10:00'' ORDER BY h, t DESC', 'pn');
SELECT seeds_same('SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h, t', 'pn');
SELECT seeds_same('SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h DESC, t DESC', 'pn');
SELECT seeds_same('SELECT x, (SELECT md5(string_agg(h || t, '','')) FROM (SELECT DISTINCT ON (h) h, t FROM %s WHERE v > x ORDER BY h, t DESC) s) FROM (VALUES (10), (80), (10)) x(x)', 'pn');

DROP TABLE ps, ps_heap, pl, pl_heap, pm, pm_heap, pn, pn_heap;
DROP FUNCTION seeds_same(text, text), seeds_read(text);

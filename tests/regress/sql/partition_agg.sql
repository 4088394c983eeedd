-- Grouping over a partitioned table, partition by partition: PgcolAgg's partial aggregation
-- over each pg_columnar partition's scan, PostgreSQL's partial HashAggregate over a heap
-- partition, an Append of them and PostgreSQL's Finalize Aggregate above; the results equal
-- a heap twin's. A partition made apart (another column order, a dropped column) is read by
-- its own column numbers.
CREATE EXTENSION pg_columnar;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE pa (ts timestamptz NOT NULL, host int, v float8, n int) PARTITION BY RANGE (ts);
CREATE TABLE pa_1 PARTITION OF pa FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00') USING pg_columnar;
CREATE TABLE pa_2 (junk int, n int, v float8, host int, ts timestamptz NOT NULL) USING pg_columnar;
ALTER TABLE pa_2 DROP COLUMN junk;
ALTER TABLE pa ATTACH PARTITION pa_2 FOR VALUES FROM ('2020-01-02 00:00+00') TO ('2020-01-03 00:00+00');
CREATE TABLE pa_3 PARTITION OF pa FOR VALUES FROM ('2020-01-03 00:00+00') TO ('2020-01-04 00:00+00');
INSERT INTO pa SELECT '2020-01-01 00:00+00'::timestamptz + g * interval '1 minute', g % 5,
    (g * 37 % 101) / 4.0, g % 11
FROM generate_series(0, 3 * 1440 - 1) g;
INSERT INTO pa VALUES ('2020-01-02 05:00:30+00', NULL, NULL, NULL);
CREATE TABLE pa_heap AS SELECT * FROM pa;
ANALYZE pa;
ANALYZE pa_heap;
CREATE FUNCTION same(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE a text; b text;
BEGIN
  EXECUTE format('SELECT string_agg(x::text, ''|'' ORDER BY x::text) FROM (%s) x', q) INTO a;
  EXECUTE format('SELECT string_agg(x::text, ''|'' ORDER BY x::text) FROM (%s) x', replace(q, 'FROM pa ', 'FROM pa_heap ')) INTO b;
  RETURN a = b;
END $$;
-- every partition, grouped by a column
EXPLAIN (COSTS OFF) SELECT host, count(*), sum(n), max(v), avg(v) FROM pa GROUP BY host;
SELECT host, count(*), sum(n), max(v), avg(v) FROM pa GROUP BY host ORDER BY host;
SELECT same('SELECT host, count(*), sum(n), max(v), avg(v) FROM pa GROUP BY host');
-- time buckets across two partitions, with HAVING
EXPLAIN (COSTS OFF) SELECT date_trunc('hour', ts) AS h, max(v), count(n) FROM pa
WHERE ts >= '2020-01-01 20:00+00' AND ts < '2020-01-02 04:00+00' GROUP BY h HAVING count(*) > 59;
SELECT same($$SELECT date_trunc('hour', ts) AS h, max(v), count(n) FROM pa WHERE ts >= '2020-01-01 20:00+00' AND ts < '2020-01-02 06:00+00' GROUP BY h HAVING count(*) > 59$$);
-- pruned to one partition
EXPLAIN (COSTS OFF) SELECT host, min(v) FROM pa WHERE ts < '2020-01-01 12:00+00' GROUP BY host;
SELECT same($$SELECT host, min(v) FROM pa WHERE ts < '2020-01-01 12:00+00' GROUP BY host$$);
-- no GROUP BY
EXPLAIN (COSTS OFF) SELECT count(*), sum(v), max(n) FROM pa WHERE ts >= '2020-01-01 12:00+00';
SELECT same($$SELECT count(*), sum(v), max(n) FROM pa WHERE ts >= '2020-01-01 12:00+00'$$);
-- with PostgreSQL's partitionwise aggregation: grouped by the partition key (each partition
-- aggregated whole, HAVING in the partitions' columns), and not
SET enable_partitionwise_aggregate = on;
SELECT same($$SELECT date_trunc('day', ts) AS d, ts, count(*), max(v) FROM pa GROUP BY ts HAVING max(v) > 24$$);
SELECT same($$SELECT host, count(*), sum(n), max(v), avg(v) FROM pa GROUP BY host HAVING sum(n) > 0$$);
RESET enable_partitionwise_aggregate;
-- the control: without PgcolAgg, PostgreSQL's own plan
SET pg_columnar.enable_vectorized_agg = off;
EXPLAIN (COSTS OFF) SELECT host, count(*), sum(n), max(v), avg(v) FROM pa GROUP BY host;
RESET pg_columnar.enable_vectorized_agg;
-- a partial avg of floats the zone maps bound within ±1e100 hands PostgreSQL's Finalize
-- {N, Sx, 0} (avg's final function reads N and Sx alone): each pg_columnar partition's
-- PgcolAgg says so under EXPLAIN ANALYZE, and the averages equal heap's; a partition that
-- holds 1e150 keeps Sxx (the control), the average still heap's
CREATE FUNCTION sxx_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF line ~ '(PgcolAgg|Averages Without Sxx)' THEN
      RETURN NEXT regexp_replace(regexp_replace(line, '^\s*(->\s*)?', ''), ' \(actual rows=[0-9.]+ loops=[0-9]+\)', '');
    END IF;
  END LOOP;
END $$;
SELECT * FROM sxx_lines('SELECT host, avg(v), avg(n) FROM pa GROUP BY host');
SELECT same('SELECT host, avg(v), avg(n) FROM pa GROUP BY host');
INSERT INTO pa VALUES ('2020-01-02 06:00:30+00', 1, 1e150, 1);
INSERT INTO pa_heap VALUES ('2020-01-02 06:00:30+00', 1, 1e150, 1);
SELECT * FROM sxx_lines('SELECT host, avg(v) FROM pa GROUP BY host');
SELECT same('SELECT host, avg(v) FROM pa GROUP BY host');
DELETE FROM pa WHERE v = 1e150;
DELETE FROM pa_heap WHERE v = 1e150;
-- count(DISTINCT col) without GROUP BY: each partition's distinct values (PgcolAgg grouping
-- a pg_columnar partition by the column, PostgreSQL's HashAggregate the heap one), an
-- Append, PostgreSQL's Aggregate counting the distinct values among them (NULLs in the
-- values, a value in several partitions, HAVING, an expression over the count); float
-- values (-0, 0, NaN) go through HashAggregate in every partition: PostgreSQL's plan
INSERT INTO pa VALUES ('2020-01-01 03:00:30+00', 7, '-0', NULL), ('2020-01-02 03:00:30+00', 7, '0', NULL),
                      ('2020-01-03 03:00:30+00', 8, 'NaN', NULL), ('2020-01-01 04:00:30+00', 8, 'NaN', NULL);
INSERT INTO pa_heap VALUES ('2020-01-01 03:00:30+00', 7, '-0', NULL), ('2020-01-02 03:00:30+00', 7, '0', NULL),
                      ('2020-01-03 03:00:30+00', 8, 'NaN', NULL), ('2020-01-01 04:00:30+00', 8, 'NaN', NULL);
-- (the plan's nodes counted: from 16 a Sort orders the values for the Aggregate, which 15's
-- Aggregate sorts itself)
CREATE FUNCTION plan_nodes(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; r text := '';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF line ~ '(Aggregate|PgcolAgg|PgcolScan|Seq Scan|Subplans Removed)' AND line !~ 'Sort' THEN
      r := r || regexp_replace(trim(line), '^->  ', '') || '; ';
    END IF;
  END LOOP;
  RETURN r;
END $$;
SELECT plan_nodes($$SELECT count(DISTINCT host) FROM pa WHERE ts >= '2020-01-01 12:00+00'$$);
SELECT count(DISTINCT host), count(DISTINCT n) FROM pa;
SELECT same($$SELECT count(DISTINCT host) FROM pa WHERE ts >= '2020-01-01 12:00+00'$$);
SELECT same($$SELECT count(DISTINCT n), count(DISTINCT n) + 1 AS plus FROM pa WHERE ts < '2020-01-02 12:00+00' HAVING count(DISTINCT n) > 3$$);
SELECT count(DISTINCT n) FROM pa WHERE ts < '2020-01-02 12:00+00' HAVING count(DISTINCT n) > 10;
SELECT same($$SELECT count(DISTINCT v) FROM pa$$);
SELECT same($$SELECT count(DISTINCT host) FROM pa WHERE v > 20$$);
-- left to PostgreSQL: two columns, a FILTER, a GROUP BY, another aggregate beside it
CREATE FUNCTION plan_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; r text := 'PostgreSQL';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF line ~ 'PgcolAgg' THEN r := 'PgcolAgg'; END IF;
  END LOOP;
  RETURN r;
END $$;
SELECT plan_of($$SELECT count(DISTINCT host), count(DISTINCT n) FROM pa$$) AS two_columns,
       plan_of($$SELECT count(DISTINCT host) FILTER (WHERE n > 2) FROM pa$$) AS filter,
       plan_of($$SELECT n, count(DISTINCT host) FROM pa GROUP BY n$$) AS grouped,
       plan_of($$SELECT count(DISTINCT host), count(*) FROM pa$$) AS with_count_star,
       plan_of($$SELECT count(DISTINCT host) FROM pa$$) AS alone;
SELECT same($$SELECT count(DISTINCT host), count(DISTINCT n) FROM pa$$);
SELECT same($$SELECT n, count(DISTINCT host) FROM pa GROUP BY n$$);
-- a generic plan prunes partitions at run time
PREPARE hosts_since(timestamptz) AS SELECT count(DISTINCT host) FROM pa WHERE ts >= $1;
SET plan_cache_mode = force_generic_plan;
SELECT plan_nodes($$EXECUTE hosts_since('2020-01-02 12:00+00')$$);
EXECUTE hosts_since('2020-01-02 12:00+00');
SELECT count(DISTINCT host) FROM pa_heap WHERE ts >= '2020-01-02 12:00+00';
PREPARE by_host_since(timestamptz) AS SELECT host, count(*), max(v) FROM pa WHERE ts >= $1 GROUP BY host;
EXPLAIN (COSTS OFF) EXECUTE by_host_since('2020-01-02 12:00+00');
CREATE TEMP TABLE by_host AS EXECUTE by_host_since('2020-01-02 12:00+00');
SELECT (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM by_host x)
     = (SELECT string_agg(x::text, '|' ORDER BY x::text)
          FROM (SELECT host, count(*), max(v) FROM pa_heap WHERE ts >= '2020-01-02 12:00+00' GROUP BY host) x) AS same_rows;
RESET plan_cache_mode;
-- the first groups by a key that grows with time (ORDER BY key DESC LIMIT n): each
-- pg_columnar partition aggregates only its own first n groups, among which are all of the
-- query's that it holds (a bucket across partitions, OFFSET, a NULL key, which sorts first)
CREATE FUNCTION top_groups(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE line text; n bigint := 0;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF line ~ '^\s*Top Groups:' THEN n := n + 1; END IF;
  END LOOP;
  RETURN n;
END $$;
SELECT top_groups($$SELECT date_trunc('hour', ts) AS h, max(v), count(*) FROM pa GROUP BY h ORDER BY h DESC LIMIT 5$$) AS partitions_with_top_groups;
SELECT same($$SELECT date_trunc('hour', ts) AS h, max(v), count(*) FROM pa GROUP BY h ORDER BY h DESC LIMIT 5$$);
SELECT same($$SELECT date_trunc('day', ts) AS d, max(v), count(*), sum(n) FROM pa WHERE ts < '2020-01-02 12:00+00' GROUP BY d ORDER BY d DESC LIMIT 2$$);
SELECT same($$SELECT date_trunc('hour', ts) AS h, min(v) FROM pa WHERE ts < '2020-01-03 00:30+00' GROUP BY h ORDER BY h DESC LIMIT 3 OFFSET 2$$);
SELECT same($$SELECT host, count(*) FROM pa GROUP BY host ORDER BY host DESC LIMIT 2$$);
SELECT host, count(*) FROM pa GROUP BY host ORDER BY host DESC LIMIT 2;
-- the control: ascending order is not the shortcut's
SELECT top_groups($$SELECT date_trunc('hour', ts) AS h, max(v) FROM pa GROUP BY h ORDER BY h LIMIT 5$$) AS ascending;
DROP TABLE pa, pa_heap;
DROP FUNCTION same(text);

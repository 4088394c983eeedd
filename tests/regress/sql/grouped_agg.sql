-- PgcolAgg with GROUP BY: keys of every kind (integer columns, text through dictionary
-- codes, time buckets in arithmetic or evaluated, other expressions), HAVING, and a randomized
-- differential run. Every result is compared with the node off and with a heap twin.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 4096;
SET TimeZone = 'UTC';
-- t: timestamps every 37 s from 2015-12-31, with some far in the past and future and the
-- infinities; h: 9 hosts (a dictionary); u: 3,000 distinct strings (not a dictionary)
CREATE TABLE ga (id int, i2 int2, i8 int8, b bool, d date, ts timestamp, t timestamptz, h text, v varchar, u text, f8 float8, f4 float4)
  USING pg_columnar;
INSERT INTO ga SELECT g, (g % 7 - 3)::int2, CASE WHEN g % 13 = 0 THEN NULL ELSE g % 5 END, g % 3 = 0,
    date '2016-01-01' + g / 500,
    CASE WHEN g % 997 = 0 THEN timestamp '1900-01-01' + g * interval '1 day' ELSE timestamp '2016-03-26' + g * interval '37 s' END,
    CASE g % 1499 WHEN 0 THEN 'infinity' WHEN 1 THEN '-infinity' WHEN 2 THEN NULL WHEN 3 THEN '3000-01-01 BC'
      WHEN 4 THEN '120000-06-15 12:34:56+00' ELSE timestamptz '2016-03-26 00:00+00' + g * interval '37 s' END,
    CASE WHEN g % 17 = 0 THEN NULL ELSE 'host_' || (g % 9) END,
    'v' || (g % 4),
    'u' || (g * 7919 % 3000),
    CASE WHEN g % 101 = 0 THEN NULL ELSE (g % 1000) / 8.0 END,
    (g % 77) / 4.0
  FROM generate_series(1, 20000) g;
CREATE TABLE ga_heap AS SELECT * FROM ga;

-- the rows of query q (%s: the table) on the pg_columnar table with the node, without it, and
-- on the heap twin: which node answered, and the rows when all three agree
CREATE FUNCTION agg_same(q text, tbl text DEFAULT 'ga') RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; b text; c text; line text; node text := 'Aggregate';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || format(q, tbl) LOOP
    IF line ~ 'PgcolAgg' AND node = 'Aggregate' THEN node := 'PgcolAgg'; END IF;
    IF line ~ 'Mode: partial' THEN node := 'PgcolAgg (parallel)'; END IF;
  END LOOP;
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl)) INTO a;
  PERFORM set_config('pg_columnar.enable_vectorized_agg', 'off', true);
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl)) INTO b;
  PERFORM set_config('pg_columnar.enable_vectorized_agg', 'on', true);
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl || '_heap')) INTO c;
  IF a IS DISTINCT FROM c OR b IS DISTINCT FROM c THEN
    RETURN format('MISMATCH %s / %s / heap %s', a, b, c);
  END IF;
  RETURN node || ': ' || md5(c) || ' ' || left(c, 60);
END $$;

-- integer keys of each type, NULL keys included
SELECT agg_same('SELECT i2, count(*), sum(id), avg(f8) FROM %s GROUP BY i2 ORDER BY 1');
SELECT agg_same('SELECT i8, count(*), count(f8), min(f4), max(id) FROM %s GROUP BY i8 ORDER BY 1');
SELECT agg_same('SELECT b, count(*), sum(f8) FROM %s GROUP BY b ORDER BY 1');
SELECT agg_same('SELECT d, count(*), sum(i2), avg(i8) FROM %s GROUP BY d ORDER BY 1');
SELECT agg_same('SELECT id / 7 AS k, count(*) FROM %s GROUP BY id / 7 ORDER BY 1');
SELECT agg_same('SELECT ts, count(*) FROM %s WHERE id < 3000 GROUP BY ts ORDER BY 1');
-- text keys: a dictionary (h), a varchar (v), strings that are no dictionary (u), NULL keys
SELECT agg_same('SELECT h, count(*), sum(f8), avg(f4), min(i2), max(i8) FROM %s GROUP BY h ORDER BY 1');
SELECT agg_same('SELECT v, count(*), sum(id) FROM %s GROUP BY v ORDER BY 1');
SELECT agg_same('SELECT u, count(*), sum(id), max(f8) FROM %s GROUP BY u ORDER BY 1');
-- several keys, keys not in the target list, expressions over the keys
SELECT agg_same('SELECT h, i8, b, count(*), sum(f8) FROM %s GROUP BY h, i8, b ORDER BY 1, 2, 3');
SELECT agg_same('SELECT h, v, i2, d, count(*) FROM %s GROUP BY h, v, i2, d ORDER BY 1, 2, 3, 4');
SELECT agg_same('SELECT count(*), sum(id) FROM %s GROUP BY h, i2 ORDER BY 1, 2');
SELECT agg_same('SELECT upper(h), i2 * 10, count(*) * 2 FROM %s GROUP BY h, i2 ORDER BY 1, 2');
-- time buckets: date_trunc of timestamptz in UTC, in a fixed offset and in zones whose offset
-- changes; of timestamp; date_bin; the three-argument date_trunc; an abbreviated unit
SELECT agg_same('SELECT date_trunc(''minute'', t), count(*), max(f8) FROM %s WHERE id < 4000 GROUP BY 1 ORDER BY 1');
SELECT agg_same('SELECT date_trunc(''hour'', t) AS hour, h, avg(f8), count(*) FROM %s GROUP BY hour, h ORDER BY 1, 2');
SELECT agg_same(format('SELECT date_trunc(%L, t), count(*), sum(id) FROM %%s GROUP BY 1 ORDER BY 1', u)) FROM
  unnest(ARRAY['microseconds', 'milliseconds', 'second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year', 'decade', 'century', 'millennium']) u;
SET TimeZone = '+05:30';
SELECT agg_same(format('SELECT date_trunc(%L, t), count(*), sum(id) FROM %%s GROUP BY 1 ORDER BY 1', u)) FROM
  unnest(ARRAY['second', 'minute', 'hour', 'day', 'week', 'month', 'year']) u;
SET TimeZone = 'Europe/Berlin';
SELECT agg_same(format('SELECT date_trunc(%L, t), count(*), sum(id) FROM %%s GROUP BY 1 ORDER BY 1', u)) FROM
  unnest(ARRAY['minute', 'hour', 'day', 'week', 'month']) u;
SET TimeZone = 'America/St_Johns';
SELECT agg_same('SELECT date_trunc(''hour'', t), count(*) FROM %s GROUP BY 1 ORDER BY 1');
SELECT agg_same('SELECT date_trunc(''day'', t), count(*) FROM %s GROUP BY 1 ORDER BY 1');
SET TimeZone = 'UTC';
SELECT agg_same(format('SELECT date_trunc(%L, ts), count(*), avg(f4) FROM %%s GROUP BY 1 ORDER BY 1', u)) FROM
  unnest(ARRAY['microseconds', 'second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year']) u;
SELECT agg_same('SELECT date_trunc(''day'', t, ''Asia/Kathmandu''), count(*) FROM %s GROUP BY 1 ORDER BY 1');
SELECT agg_same('SELECT date_trunc(''min'', t), count(*) FROM %s WHERE id < 2000 GROUP BY 1 ORDER BY 1');
SELECT agg_same('SELECT date_bin(''15 minutes'', t, ''2001-01-01 00:07+00''), count(*), sum(f8) FROM %s GROUP BY 1 ORDER BY 1');
SELECT agg_same('SELECT date_bin(''1 day 3 hours'', ts, ''1999-12-31 23:00''), count(*) FROM %s GROUP BY 1 ORDER BY 1');
SELECT agg_same('SELECT date_bin(''90 seconds'', t, ''2020-06-01 00:00+00''), h, count(*) FROM %s WHERE id < 3000 GROUP BY 1, 2 ORDER BY 1, 2');
SELECT agg_same('SELECT date_bin(''1 hour -10 minutes'', ts, ''2000-01-01''), count(*) FROM %s GROUP BY 1 ORDER BY 1');
-- a bucket of a bucket, and a bucket with other keys
SELECT agg_same('SELECT date_trunc(''day'', date_trunc(''hour'', t)), i2, count(*) FROM %s GROUP BY 1, 2 ORDER BY 1, 2');
-- a table sorted by host and time: its vectors hold each host's times in order, bucketed one
-- bucket at a time (the span of the last bucket computed), NULL times and infinities among them
CREATE TABLE gs (LIKE ga) USING pg_columnar WITH (pg_columnar.sort_key = 'h, t');
INSERT INTO gs SELECT * FROM ga;
CREATE TABLE gs_heap AS SELECT * FROM ga;
SELECT agg_same('SELECT date_trunc(''minute'', t), count(*), max(f8) FROM %s GROUP BY 1 ORDER BY 1', 'gs');
SELECT agg_same('SELECT date_trunc(''hour'', t) AS hour, h, avg(f8), count(*) FROM %s GROUP BY hour, h ORDER BY 1, 2', 'gs');
SELECT agg_same('SELECT date_bin(''15 minutes'', t, ''2001-01-01 00:07+00''), h, count(*), sum(f8) FROM %s GROUP BY 1, 2 ORDER BY 1, 2', 'gs');
SELECT agg_same('SELECT date_trunc(''week'', ts), count(*) FROM %s GROUP BY 1 ORDER BY 1', 'gs');
SET TimeZone = 'Asia/Kolkata';
SELECT agg_same('SELECT date_trunc(''hour'', t), h, count(*) FROM %s GROUP BY 1, 2 ORDER BY 1, 2', 'gs');
SET TimeZone = 'UTC';
-- integer-valued floats in a sorted table: a run of one host's rows is summed in integers
-- where that is what adding them one by one gives (m), one by one where sums pass 2^53 (big)
CREATE TABLE gsi (h text, t timestamptz, m float8, big float8) USING pg_columnar WITH (pg_columnar.sort_key = 'h, t');
INSERT INTO gsi SELECT h, t, round(f8 * 3), (CASE WHEN id % 3 = 0 THEN -1 ELSE 1 END) * (2251799813685248 + id * 7919 % 1000003) FROM ga;
CREATE TABLE gsi_heap AS SELECT * FROM gsi;
SELECT agg_same('SELECT date_trunc(''hour'', t) AS hour, h, avg(m), min(m), max(m), sum(m), avg(big), sum(big), count(*) FROM %s GROUP BY hour, h ORDER BY 1, 2', 'gsi');
SELECT agg_same('SELECT h, avg(m), avg(big), min(big), count(*) FROM %s GROUP BY h ORDER BY 1', 'gsi');
SELECT agg_same('SELECT h, avg(m), max(m) FROM %s WHERE t < ''2016-03-27'' GROUP BY h ORDER BY 1', 'gsi');
-- a sorted table without NULLs whose hosts' runs are longer than a vector, and time windows
-- that cut them: a boundary vector's selected rows are one range, added as a range of its
-- values; an aggregate's FILTER selects another range (or rows apart), with its own runs
SET pg_columnar.stripe_row_limit = 20000;
CREATE TABLE gsr (h text, t timestamptz, m float8, k float8) USING pg_columnar WITH (pg_columnar.sort_key = 'h, t');
INSERT INTO gsr SELECT 'host_' || (g % 9), timestamptz '2016-03-26 00:00+00' + g * interval '37 s', (g * 7919 % 1000) / 8.0, g % 50
  FROM generate_series(1, 40000) g;
SET pg_columnar.stripe_row_limit = 4096;
CREATE TABLE gsr_heap AS SELECT * FROM gsr;
SELECT agg_same('SELECT date_trunc(''hour'', t) AS hour, h, avg(m), avg(k), count(*), max(m), sum(k) FROM %s WHERE t >= ''2016-03-26 02:10+00'' AND t < ''2016-03-26 05:50+00'' GROUP BY hour, h ORDER BY 1, 2', 'gsr');
SELECT agg_same('SELECT h, avg(m) FILTER (WHERE t < ''2016-03-26 04:00+00''), count(*) FILTER (WHERE t >= ''2016-03-26 03:00+00''), sum(k) FILTER (WHERE k > 20), avg(k), count(*) FROM %s WHERE t >= ''2016-03-26 02:10+00'' AND t < ''2016-03-26 07:00+00'' GROUP BY h ORDER BY 1', 'gsr');
-- HAVING (aggregates the target list does not have included), ORDER BY and LIMIT above
SELECT agg_same('SELECT h, count(*) FROM %s GROUP BY h HAVING sum(f8) > 30000 ORDER BY 1');
SELECT agg_same('SELECT h, i2 FROM %s GROUP BY h, i2 HAVING min(id) < 20 AND h IS NOT NULL ORDER BY 1, 2');
SELECT agg_same('SELECT date_trunc(''minute'', t) AS minute, max(f8) FROM %s WHERE t < ''2016-03-26 03:00+00'' GROUP BY minute ORDER BY minute DESC LIMIT 5');
-- quals the scan evaluates, no row selected (no group), GROUP BY without aggregates
SELECT agg_same('SELECT h, count(*), avg(f8) FROM %s WHERE f8 > 100 AND i2 IN (1, 2) GROUP BY h ORDER BY 1');
SELECT agg_same('SELECT h, count(*) FROM %s WHERE id < 0 GROUP BY h');
SELECT agg_same('SELECT h, i2 FROM %s GROUP BY h, i2 ORDER BY 1, 2');
-- FILTER (WHERE ...) that the scan's kernels evaluate selects each aggregate's rows; one
-- they do not (an expression) leaves the query to PostgreSQL
SELECT agg_same('SELECT h, count(*) FILTER (WHERE i2 > 0), sum(f8) FILTER (WHERE v IN (''v1'', ''v2'')), avg(f4) FILTER (WHERE t < ''2016-03-30''), count(*) FROM %s GROUP BY h ORDER BY 1');
SELECT agg_same('SELECT count(*) FILTER (WHERE f8 IS NULL), max(t) FILTER (WHERE i8 = 3), min(f4) FILTER (WHERE id < 0) FROM %s WHERE id > 100');
SELECT agg_same('SELECT h, count(*) FILTER (WHERE id %% 2 = 0) FROM %s GROUP BY h ORDER BY 1');
-- left to PostgreSQL: a float key, five keys, grouping sets, an aggregate it does not compute,
-- a key it cannot compute (a text expression, a volatile one)
SELECT agg_same('SELECT f4, count(*) FROM %s GROUP BY f4 ORDER BY 1');
SELECT agg_same('SELECT h, v, i2, i8, b, count(*) FROM %s GROUP BY h, v, i2, i8, b ORDER BY 1, 2, 3, 4, 5');
SELECT agg_same('SELECT h, i2, count(*) FROM %s GROUP BY ROLLUP (h, i2) ORDER BY 1, 2, 3');
SELECT agg_same('SELECT h, string_agg(v, '','' ORDER BY id) FROM %s WHERE id < 100 GROUP BY h ORDER BY 1');
SELECT agg_same('SELECT lower(h), count(*) FROM %s GROUP BY 1 ORDER BY 1');
-- errors come from PostgreSQL's own functions, for the rows it would evaluate them on
SELECT date_bin('1 month', t, '2000-01-01') FROM ga GROUP BY 1;
SELECT count(*) FROM ga WHERE id < 0 GROUP BY date_bin('1 month', t, '2000-01-01');
SELECT date_bin('-1 hour', t, '2000-01-01') FROM ga GROUP BY 1;

-- how the keys were computed, from EXPLAIN ANALYZE: bucket arithmetic evaluates only the
-- values it does not cover (here the infinities and the far past and future) in UTC, every
-- distinct value in a zone whose offset changes; a dictionary's entries are interned once
-- per dictionary (a stripe's shared one, or a vector's own when that encodes smaller),
-- strings that are no dictionary row by row
CREATE FUNCTION explain_analyze(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
    IF line ~ 'Group Keys|Groups|Evaluated|Interned|Aggregated|Top Groups' THEN
      RETURN NEXT regexp_replace(line, ' \(actual rows=[0-9.]+ loops=[0-9]+\)', '');
    END IF;
  END LOOP;
END $$;
SELECT explain_analyze('SELECT date_trunc(''hour'', t), h, count(*) FROM ga GROUP BY 1, 2');
-- vectors whose dictionaries of h hold the same strings in the same order (each of 1024
-- rows begins with host_0) take the ids of the one before (reused), without a lookup per
-- entry; the last stripe's vectors begin with host_3, so the first of them is interned entry
-- by entry (the control)
CREATE TABLE dict_again (h text, g int) USING pg_columnar;
INSERT INTO dict_again SELECT 'host_' || (g % 8), g FROM generate_series(0, 4095) g;
INSERT INTO dict_again SELECT 'host_' || (g % 8), g FROM generate_series(4096, 8191) g;
INSERT INTO dict_again SELECT 'host_' || (g % 8), g FROM generate_series(8195, 10242) g;
SELECT explain_analyze('SELECT h, count(*), max(g) FROM dict_again GROUP BY h');
SELECT h, count(*), max(g) FROM dict_again GROUP BY h ORDER BY h;
SET TimeZone = 'Europe/Berlin';
SELECT explain_analyze('SELECT date_trunc(''hour'', t), count(*) FROM ga GROUP BY 1');
SET TimeZone = 'UTC';
SELECT explain_analyze('SELECT u, count(*) FROM ga GROUP BY 1');
SELECT explain_analyze('SELECT id % 10, count(*) FROM ga WHERE id < 100 GROUP BY 1');

-- timestamps that repeat (ten series per timestamp, as time series arrive) are stored as
-- dictionaries: each entry is bucketed once per stripe, and an entry only PostgreSQL can
-- bucket (infinity here) is evaluated once, in the vectors whose selected rows hold it
CREATE TABLE gd (t timestamptz, ts timestamp, s int, x float8) USING pg_columnar;
INSERT INTO gd SELECT CASE WHEN g / 10 % 700 = 3 THEN 'infinity' ELSE timestamptz '2016-01-01 00:00+00' + (g / 10) * interval '10 s' END,
    timestamp '2016-01-01' + (g / 10) * interval '7 s', g % 10, g % 101 FROM generate_series(1, 40000) g;
CREATE TABLE gd_heap AS SELECT * FROM gd;
SELECT agg_same('SELECT date_trunc(''minute'', t), count(*), avg(x), max(s) FROM %s GROUP BY 1 ORDER BY 1', 'gd');
SELECT agg_same('SELECT date_trunc(''hour'', t), s, sum(x) FROM %s WHERE s < 3 GROUP BY 1, 2 ORDER BY 1, 2', 'gd');
SELECT agg_same('SELECT date_bin(''5 min'', ts, ''2000-01-01''), count(*) FROM %s WHERE x > 50 GROUP BY 1 ORDER BY 1', 'gd');
SELECT agg_same('SELECT date_trunc(''day'', t), count(*) FROM %s WHERE t < ''infinity'' GROUP BY 1 ORDER BY 1', 'gd');
SELECT agg_same('SELECT s %% 4, count(*) FROM %s GROUP BY 1 ORDER BY 1', 'gd');
SELECT explain_analyze('SELECT date_trunc(''minute'', t), count(*) FROM gd GROUP BY 1');
SELECT explain_analyze('SELECT date_trunc(''minute'', t), count(*) FROM gd WHERE t < ''infinity'' GROUP BY 1');
SET TimeZone = 'Europe/Berlin';
SELECT agg_same('SELECT date_trunc(''hour'', t), count(*) FROM %s GROUP BY 1 ORDER BY 1', 'gd');
SELECT explain_analyze('SELECT date_trunc(''hour'', t), count(*) FROM gd GROUP BY 1');
SET TimeZone = 'UTC';

-- ORDER BY the one key DESC LIMIT n: stripes are read newest first, only until no other
-- stripe can hold a row of the first n groups; those are then aggregated in row order (float
-- sums give heap's bits). A NULL key anywhere (NULLs sort first), a zone whose offset
-- changes, or ascending order read every stripe.
SELECT agg_same('SELECT date_trunc(''minute'', t), count(*), sum(x), max(s) FROM %s WHERE t < ''2016-01-01 06:00+00'' GROUP BY 1 ORDER BY 1 DESC LIMIT 5', 'gd');
SELECT explain_analyze('SELECT date_trunc(''minute'', t), sum(x) FROM gd WHERE t < ''2016-01-01 06:00+00'' GROUP BY 1 ORDER BY 1 DESC LIMIT 5');
SELECT agg_same('SELECT date_bin(''90 s'', ts, ''2000-01-01''), avg(x) FROM %s GROUP BY 1 ORDER BY 1 DESC LIMIT 3 OFFSET 2', 'gd');
SELECT explain_analyze('SELECT date_bin(''90 s'', ts, ''2000-01-01''), avg(x) FROM gd GROUP BY 1 ORDER BY 1 DESC LIMIT 3 OFFSET 2');
SELECT agg_same('SELECT s, count(*) FROM %s GROUP BY s ORDER BY s DESC LIMIT 2', 'gd');
SELECT agg_same('SELECT date_trunc(''hour'', t), count(*) FROM %s GROUP BY 1 ORDER BY 1 DESC LIMIT 4', 'gd');
SELECT explain_analyze('SELECT date_trunc(''hour'', t), count(*) FROM gd GROUP BY 1 ORDER BY 1 DESC LIMIT 4');
SELECT agg_same('SELECT date_trunc(''minute'', t), count(*) FROM %s WHERE id > 100 GROUP BY 1 ORDER BY 1 DESC LIMIT 5');
SELECT explain_analyze('SELECT date_trunc(''minute'', t), count(*) FROM ga WHERE id > 100 GROUP BY 1 ORDER BY 1 DESC LIMIT 5');
SELECT agg_same('SELECT date_trunc(''minute'', t), sum(x) FROM %s WHERE t < ''2016-01-01 06:00+00'' GROUP BY 1 ORDER BY 1 LIMIT 5', 'gd');
SET TimeZone = 'Europe/Berlin';
SELECT agg_same('SELECT date_trunc(''minute'', t), sum(x) FROM %s WHERE t < ''2016-01-01 06:00+00'' GROUP BY 1 ORDER BY 1 DESC LIMIT 5', 'gd');
SELECT explain_analyze('SELECT date_trunc(''minute'', t), sum(x) FROM gd WHERE t < ''2016-01-01 06:00+00'' GROUP BY 1 ORDER BY 1 DESC LIMIT 5');
SET TimeZone = 'UTC';
-- in the stripes read, the vectors whose every key is below the n-th greatest are skipped
-- (Top Groups counts them), but not one holding a NULL key (the NULL group comes first)
CREATE TABLE gf (t timestamptz, x int) USING pg_columnar;
INSERT INTO gf SELECT CASE WHEN g = 100 THEN NULL ELSE timestamptz '2016-01-01 00:00+00' + g * interval '1 s' END, g
  FROM generate_series(1, 20000) g;
CREATE TABLE gf_heap AS SELECT * FROM gf;
SELECT agg_same('SELECT date_trunc(''minute'', t), count(*), sum(x) FROM %s GROUP BY 1 ORDER BY 1 DESC LIMIT 3', 'gf');
SELECT explain_analyze('SELECT date_trunc(''minute'', t), count(*), sum(x) FROM gf GROUP BY 1 ORDER BY 1 DESC LIMIT 3');
SELECT agg_same('SELECT date_trunc(''minute'', t), count(*), sum(x) FROM %s WHERE t IS NOT NULL GROUP BY 1 ORDER BY 1 DESC LIMIT 3', 'gf');
SELECT explain_analyze('SELECT date_trunc(''minute'', t), count(*), sum(x) FROM gf WHERE t IS NOT NULL GROUP BY 1 ORDER BY 1 DESC LIMIT 3');
SELECT agg_same('SELECT t, count(*) FROM %s WHERE t < ''2016-01-01 03:00+00'' GROUP BY 1 ORDER BY 1 DESC LIMIT 2000', 'gf');
SELECT explain_analyze('SELECT t, count(*) FROM gf WHERE t < ''2016-01-01 03:00+00'' GROUP BY 1 ORDER BY 1 DESC LIMIT 2000');
-- a cursor over it, and a parameter as the limit (not a constant: every stripe is read)
BEGIN;
DECLARE top CURSOR FOR SELECT date_trunc('minute', t), count(*) FROM gd GROUP BY 1 ORDER BY 1 DESC LIMIT 3;
FETCH 2 FROM top;
FETCH 2 FROM top;
COMMIT;
PREPARE top_n(int) AS SELECT date_trunc('minute', t), count(*) FROM gd WHERE t < '2016-01-01 01:00+00' GROUP BY 1 ORDER BY 1 DESC LIMIT $1;
EXECUTE top_n(2);

-- a prepared statement keeps its plan across a change of TimeZone: the zone is read at
-- each execution
PREPARE by_day AS SELECT md5(string_agg(day || ' ' || n, ',')) FROM
  (SELECT date_trunc('day', t) AS day, count(*) AS n FROM ga WHERE id BETWEEN 100 AND 9000 GROUP BY 1 ORDER BY 1) s;
PREPARE by_day_heap AS SELECT md5(string_agg(day || ' ' || n, ',')) FROM
  (SELECT date_trunc('day', t) AS day, count(*) AS n FROM ga_heap WHERE id BETWEEN 100 AND 9000 GROUP BY 1 ORDER BY 1) s;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE by_day;
EXECUTE by_day;
EXECUTE by_day_heap;
SET TimeZone = 'Asia/Tokyo';
EXECUTE by_day;
EXECUTE by_day_heap;
SET TimeZone = 'UTC';
RESET plan_cache_mode;

-- a function with an exception block, a cursor, and a grouped aggregate in a lateral join
CREATE FUNCTION hosts_over(limit_count int) RETURNS TABLE (h text, n bigint) LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    RETURN QUERY SELECT ga.h, count(*) FROM ga GROUP BY ga.h HAVING count(*) > limit_count ORDER BY 1;
    PERFORM 1 / 0;
  EXCEPTION WHEN division_by_zero THEN
    RAISE NOTICE 'caught';
  END;
END $$;
SELECT * FROM hosts_over(2000);
BEGIN;
DECLARE c CURSOR FOR SELECT i2, count(*) FROM ga GROUP BY i2 ORDER BY 1;
FETCH 2 FROM c;
FETCH 2 FROM c;
COMMIT;
SELECT k, s.* FROM (VALUES (1), (2)) v(k), LATERAL (SELECT h, count(*) FROM ga WHERE i8 = k GROUP BY h ORDER BY 1 LIMIT 2) s ORDER BY 1, 2;

-- parallel plans: each process aggregates the stripes it takes and returns transition
-- states, which PostgreSQL's Finalize combines (floats here are exact binary fractions,
-- whose sums do not depend on the order, as heap's parallel plans would show otherwise);
-- int8 sum and avg have PostgreSQL-internal states and stay serial
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT h, count(*), sum(f8), avg(f4), min(i2), max(ts) FROM ga GROUP BY h HAVING count(*) > 10;
SELECT agg_same('SELECT h, count(*), sum(f8), avg(f4), min(i2), max(ts), count(u) FROM %s GROUP BY h HAVING count(*) > 10 ORDER BY 1');
SELECT agg_same('SELECT date_trunc(''hour'', t), i2, sum(id), avg(i2), max(f8) FROM %s WHERE id > 3000 GROUP BY 1, 2 ORDER BY 1, 2');
SELECT agg_same('SELECT count(*), sum(id), avg(f8), min(t), max(f4), sum(i2) FROM %s WHERE f8 < 100');
SELECT agg_same('SELECT h, sum(i8), avg(i8) FROM %s GROUP BY h ORDER BY 1');
EXPLAIN (COSTS OFF) SELECT h, sum(i8) FROM ga GROUP BY h;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- randomized: aggregate lists, keys and windows drawn with a fixed seed, every one compared
CREATE FUNCTION random_queries(n int) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  keys text[] := ARRAY['h', 'i2', 'i8', 'b', 'd', 'v', 'u', 'date_trunc(''hour'', t)', 'date_trunc(''day'', ts)',
                       'date_bin(''10 minutes'', t, ''2000-01-01 00:03+00'')', 'date_trunc(''month'', t)', 'id % 13'];
  aggs text[] := ARRAY['count(*)', 'count(f8)', 'sum(id)', 'sum(i8)', 'sum(f8)', 'sum(f4)', 'avg(i2)', 'avg(f8)', 'avg(f4)',
                       'min(i8)', 'max(f8)', 'min(f4)', 'max(id)', 'count(h)',
                       'count(*) FILTER (WHERE i2 > 0)', 'sum(f8) FILTER (WHERE h = ''host_2'' OR i8 IS NULL)',
                       'max(id) FILTER (WHERE f8 IS NULL)', 'avg(f4) FILTER (WHERE d >= ''2016-01-10'')', 'min(u)', 'max(h)'];
  wheres text[] := ARRAY['true', 'id < 5000', 'f8 > 50', 'h IN (''host_1'', ''host_4'')', 'i2 <> 0 AND id > 12000',
                         't >= ''2016-03-26 12:00+00'' AND t < ''2016-03-27 00:00+00''', 'i8 IS NULL'];
  k text; a text; w text; q text; bad int := 0; vectorized int := 0; parallel int := 0; r text;
BEGIN
  PERFORM setseed(0.42);
  FOR i IN 1..n LOOP
    SELECT string_agg(x, ', ') INTO k FROM (SELECT keys[1 + floor(random() * array_length(keys, 1))::int] x FROM generate_series(1, 1 + floor(random() * 3)::int)) s;
    SELECT string_agg(x, ', ') INTO a FROM (SELECT aggs[1 + floor(random() * array_length(aggs, 1))::int] x FROM generate_series(1, 1 + floor(random() * 4)::int)) s;
    w := wheres[1 + floor(random() * array_length(wheres, 1))::int];
    -- a key holds % (id % 13), which agg_same's format() must see as %%
    q := replace('SELECT ' || k || ', ' || a || ' FROM @ WHERE ' || w || ' GROUP BY ' || k || ' ORDER BY ' || k, '%', '%%');
    q := replace(q, '@', '%s');
    r := agg_same(q);
    IF r LIKE 'MISMATCH%%' THEN bad := bad + 1; RETURN NEXT q || ' => ' || r; END IF;
    IF r LIKE 'PgcolAgg%%' THEN vectorized := vectorized + 1; END IF;
    IF r LIKE 'PgcolAgg (parallel)%%' THEN parallel := parallel + 1; END IF;
  END LOOP;
  RETURN NEXT format('%s queries, %s mismatches, %s answered by PgcolAgg (%s in parallel plans)', n, bad, vectorized, parallel);
END $$;
SELECT * FROM random_queries(120);
-- and in parallel plans (every float of ga is an exact binary fraction: sums in any order
-- are the same)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT * FROM random_queries(60);
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- text min/max compare bytewise, under a collation that orders so (this database's is C):
-- dictionary keys and plain strings, varchar relabelled, grouped and not, in parallel plans;
-- a collation PostgreSQL does not know to order bytewise (C.utf8 is libc's) is its own
SELECT agg_same('SELECT min(h), max(h), min(u), max(u), min(v), max(v) FROM %s');
SELECT agg_same('SELECT i2, min(u), max(h), count(*) FROM %s WHERE id > 5000 GROUP BY i2 ORDER BY 1');
SELECT agg_same('SELECT h, min(u), max(u) FILTER (WHERE i2 > 0) FROM %s GROUP BY h ORDER BY 1');
SELECT agg_same('SELECT min(h COLLATE "C"), max(u COLLATE "POSIX") FROM %s');
SELECT agg_same('SELECT max(h COLLATE "C.utf8"), min(u COLLATE "C.utf8") FROM %s');
SELECT agg_same('SELECT min(u) FROM %s WHERE h IS NULL');
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT agg_same('SELECT h, min(u), max(v) FROM %s GROUP BY h ORDER BY 1');
SELECT agg_same('SELECT max(u), min(h) FROM %s');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

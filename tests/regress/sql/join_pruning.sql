-- Joins prune like constants: a PgcolScan on the inner side of a nested loop takes each outer
-- row's join key as a value and skips stripes and vectors by it (a parameterized path,
-- pg_columnar.enable_parameterized_scan), and `col IN (SELECT ...)` over a small table
-- becomes `col = ANY` of an initplan's array (pg_columnar.enable_subquery_values), which the
-- scan skips by and PgcolAgg aggregates over. Every shape users write (TSBS's tags subquery, a
-- join with a predicate on the dimension, EXISTS, = ANY of an initplan, LATERAL, a prepared
-- statement with a generic plan, NULL and duplicate keys on either side, many rescans) is
-- compared with a heap twin; the skipping is shown engaged (EXPLAIN ANALYZE's counters)
-- beside a control with the setting off that reads every vector of the time window.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 8192;
CREATE TABLE tags (id int PRIMARY KEY, hostname text, region text);
INSERT INTO tags SELECT g, 'host_' || g, 'r' || (g % 5) FROM generate_series(1, 40) g;
CREATE TABLE cpu (time timestamptz, tags_id int, usage_user float8, usage_system float8)
  USING pg_columnar WITH (pg_columnar.sort_key = 'tags_id, time');
-- a day of minutes per host, written in time order (the sort key puts each host's rows
-- together in every stripe), and some rows of no host
INSERT INTO cpu SELECT timestamptz '2026-01-01 00:00+00' + m * interval '1 minute', h,
    (h * 7 + m * 13) % 100, (h + m) % 10
  FROM generate_series(0, 1439) m, generate_series(1, 40) h ORDER BY m, h;
INSERT INTO cpu SELECT timestamptz '2026-01-01 00:00+00' + m * interval '1 minute', NULL, m % 100, 1
  FROM generate_series(0, 99) m;
CREATE TABLE cpu_heap AS SELECT * FROM cpu;
ANALYZE tags, cpu, cpu_heap;
SELECT count(*) AS stripes FROM pgcol.stripes('cpu');

-- the same rows from the pg_columnar table (as planned, with the IN subquery left a semi-join,
-- also without parameterized scans, and as a plain sequential scan) as from its heap twin?
-- (`cpu` in the query is replaced by `cpu_heap`)
CREATE FUNCTION same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; p text; o text; s text; h text;
BEGIN
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r', q) INTO a;
  SET LOCAL pg_columnar.enable_subquery_values = off;
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r', q) INTO p;
  SET LOCAL pg_columnar.enable_parameterized_scan = off;
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r', q) INTO o;
  SET LOCAL pg_columnar.enable_parameterized_scan = on;
  SET LOCAL pg_columnar.enable_subquery_values = on;
  SET LOCAL pg_columnar.enable_custom_scan = off;
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r', q) INTO s;
  SET LOCAL pg_columnar.enable_custom_scan = on;
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r',
                 regexp_replace(q, '\mcpu\M', 'cpu_heap', 'g')) INTO h;
  IF a IS DISTINCT FROM h OR p IS DISTINCT FROM h OR o IS DISTINCT FROM h OR s IS DISTINCT FROM h THEN
    RETURN format('MISMATCH all on %s, a semi-join %s, neither %s, seqscan %s, heap %s', a, p, o, s, h);
  END IF;
  RETURN a;
END $$;
-- what the PgcolScan of q's plan skips by: a join key (a parameterized scan under a nested
-- loop), an initplan's values (an IN subquery), or constants alone; the nodes above it that
-- count, and its counters: stripes and vectors, total and skipped, summed over its rescans
CREATE FUNCTION pruning(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; r text := ''; how text := 'by constants alone: ';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
    IF line ~ 'Custom Scan \((PgcolScan|PgcolAgg)\)' THEN r := r || substring(line from 'Pgcol\w+') || '; '; END IF;
    IF line ~ '^\s*(Stripes|Vectors):' THEN r := r || trim(line) || '; '; END IF;
    IF line ~ '^\s*Skip Filter:.*\m(tags|d|t)\.id\M' THEN how := 'by the join key: '; END IF;
    -- (an initplan's value: $0 up to 16, (InitPlan 1).col1 from 17)
    IF line ~ '^\s*Skip Filter:.*tags_id = ANY \((\$|\(InitPlan)' THEN how := 'by the subquery''s values: '; END IF;
  END LOOP;
  RETURN how || r;
END $$;

-- TSBS's own query form: hosts through the tags table
SELECT same($$SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_7'))
    AND time >= '2026-01-01 03:00+00' AND time < '2026-01-01 04:00+00' GROUP BY minute$$);
SELECT pruning($$SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_7'))
    AND time >= '2026-01-01 03:00+00' AND time < '2026-01-01 04:00+00' GROUP BY minute$$);
SET pg_columnar.enable_subquery_values = off;
SELECT pruning($$SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_7'))
    AND time >= '2026-01-01 03:00+00' AND time < '2026-01-01 04:00+00' GROUP BY minute$$);
SET pg_columnar.enable_parameterized_scan = off;
SELECT pruning($$SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_7'))
    AND time >= '2026-01-01 03:00+00' AND time < '2026-01-01 04:00+00' GROUP BY minute$$);
RESET pg_columnar.enable_parameterized_scan;
RESET pg_columnar.enable_subquery_values;
-- not rewritten: a correlated subquery, one over a large table, NOT IN, and an IN under OR
CREATE TABLE big (id int);
INSERT INTO big SELECT g FROM generate_series(1, 20000) g;
ANALYZE big;
SELECT pruning($$SELECT count(*) FROM cpu WHERE tags_id IN (SELECT id FROM big WHERE id < 3)$$);
SELECT same($$SELECT count(*) FROM cpu WHERE tags_id IN (SELECT id FROM big WHERE id < 3)$$);
SELECT same($$SELECT count(*) FROM cpu c WHERE tags_id IN (SELECT id FROM tags t WHERE t.id = c.tags_id % 7)$$);
SELECT same($$SELECT count(*) FROM cpu WHERE tags_id NOT IN (SELECT id FROM tags WHERE region = 'r1')$$);
SELECT same($$SELECT count(*) FROM cpu WHERE tags_id IN (SELECT id FROM tags WHERE region = 'r1') OR usage_user > 98$$);
-- rewritten inside a FROM subquery and a WITH query, and with NULLs among the values
SELECT same($$SELECT * FROM (SELECT tags_id, count(*) FROM cpu WHERE tags_id IN (SELECT id FROM tags WHERE region = 'r2') GROUP BY tags_id) s$$);
SELECT same($$WITH w AS (SELECT max(usage_user) m FROM cpu WHERE tags_id IN (SELECT id FROM tags WHERE region = 'r3')) SELECT * FROM w$$);
CREATE TABLE keys (k int);
INSERT INTO keys VALUES (5), (NULL), (9), (5);
ANALYZE keys;
SELECT same($$SELECT count(*), sum(usage_user) FROM cpu WHERE tags_id IN (SELECT k FROM keys)$$);
SELECT same($$SELECT count(*) FROM cpu WHERE tags_id IN (SELECT k FROM keys WHERE k > 100)$$);
SELECT pruning($$SELECT count(*), sum(usage_user) FROM cpu WHERE tags_id IN (SELECT k FROM keys)$$);
-- eight hosts, and a max over every metric of one host
SELECT same($$SELECT date_trunc('hour', time) AS hour, max(usage_user), max(usage_system) FROM cpu
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_1', 'host_5', 'host_9', 'host_13', 'host_17', 'host_21', 'host_25', 'host_29'))
    AND time >= '2026-01-01 00:00+00' AND time < '2026-01-01 12:00+00' GROUP BY hour$$);
SELECT pruning($$SELECT date_trunc('hour', time) AS hour, max(usage_user), max(usage_system) FROM cpu
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_1', 'host_5', 'host_9', 'host_13', 'host_17', 'host_21', 'host_25', 'host_29'))
    AND time >= '2026-01-01 00:00+00' AND time < '2026-01-01 12:00+00' GROUP BY hour$$);

-- a join with a predicate on the dimension, and the same as EXISTS
SELECT same($$SELECT tags.hostname, count(*), sum(usage_user) FROM cpu JOIN tags ON cpu.tags_id = tags.id
  WHERE tags.region = 'r3' AND time >= '2026-01-01 06:00+00' AND time < '2026-01-01 18:00+00' GROUP BY tags.hostname$$);
SELECT pruning($$SELECT tags.hostname, count(*), sum(usage_user) FROM cpu JOIN tags ON cpu.tags_id = tags.id
  WHERE tags.hostname = 'host_3' AND time >= '2026-01-01 06:00+00' AND time < '2026-01-01 18:00+00' GROUP BY tags.hostname$$);
SELECT same($$SELECT count(*), sum(usage_user) FROM cpu
  WHERE EXISTS (SELECT 1 FROM tags WHERE tags.id = cpu.tags_id AND tags.region = 'r2')
    AND time >= '2026-01-01 06:00+00' AND time < '2026-01-01 18:00+00'$$);
-- = ANY of an initplan (a value fixed for the whole scan)
SELECT same($$SELECT count(*), max(usage_user) FROM cpu
  WHERE tags_id = ANY (ARRAY(SELECT id FROM tags WHERE region = 'r1')) AND time < '2026-01-01 02:00+00'$$);
-- LATERAL: one host's figures per outer row
SELECT same($$SELECT t.hostname, x.m, x.n FROM tags t,
  LATERAL (SELECT max(usage_user) AS m, count(*) AS n FROM cpu WHERE cpu.tags_id = t.id AND time < '2026-01-01 01:00+00') x
  WHERE t.region = 'r4'$$);

-- NULL join keys and duplicate keys on the dimension side
CREATE TABLE dup (id int, label text);
INSERT INTO dup VALUES (7, 'a'), (7, 'b'), (NULL, 'c'), (12, 'd'), (41, 'none');
ANALYZE dup;
SELECT same($$SELECT d.label, count(*), sum(usage_user) FROM cpu JOIN dup d ON cpu.tags_id = d.id GROUP BY d.label$$);
SELECT same($$SELECT d.label, count(cpu.tags_id) FROM dup d LEFT JOIN cpu ON cpu.tags_id = d.id AND cpu.time < '2026-01-01 00:10+00' GROUP BY d.label$$);
SELECT same($$SELECT count(*) FROM cpu WHERE tags_id IN (SELECT id FROM dup)$$);
SELECT same($$SELECT count(*) FROM cpu WHERE tags_id NOT IN (SELECT id FROM dup WHERE id IS NOT NULL)$$);
SELECT pruning($$SELECT d.label, count(*), sum(usage_user) FROM cpu JOIN dup d ON cpu.tags_id = d.id GROUP BY d.label$$);

-- every host, rescanned per outer row (a nested loop forced)
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT same($$SELECT tags.region, count(*), sum(usage_system) FROM cpu JOIN tags ON cpu.tags_id = tags.id
  WHERE time >= '2026-01-01 23:00+00' GROUP BY tags.region$$);
SELECT same($$SELECT tags.region, count(*) FROM tags JOIN cpu ON cpu.tags_id > tags.id + 35 AND cpu.time < '2026-01-01 00:05+00' GROUP BY tags.region$$);
RESET enable_hashjoin;
RESET enable_mergejoin;

-- a prepared statement with a generic plan: the host is a parameter of the outer side
PREPARE one_host(text) AS SELECT count(*), max(usage_user) FROM cpu
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname = $1) AND time < '2026-01-01 08:00+00';
SET plan_cache_mode = force_generic_plan;
EXECUTE one_host('host_7');
EXECUTE one_host('host_31');
EXECUTE one_host('nobody');
SELECT count(*), max(usage_user) FROM cpu_heap WHERE tags_id IN (7, 31) AND time < '2026-01-01 08:00+00' GROUP BY tags_id ORDER BY tags_id;
RESET plan_cache_mode;

-- a partitioned table, a pg_columnar partition and a heap one: the IN subquery becomes the
-- initplan's array there too, which the pg_columnar partition's scan skips by (and
-- PgcolAgg aggregates over) and the heap partition filters by
CREATE TABLE cpu_p (time timestamptz, tags_id int, usage_user float8, usage_system float8) PARTITION BY RANGE (time);
CREATE TABLE cpu_p1 PARTITION OF cpu_p FOR VALUES FROM (MINVALUE) TO ('2026-01-01 12:00+00')
  USING pg_columnar WITH (pg_columnar.sort_key = 'tags_id, time');
CREATE TABLE cpu_p2 PARTITION OF cpu_p FOR VALUES FROM ('2026-01-01 12:00+00') TO (MAXVALUE);
INSERT INTO cpu_p SELECT * FROM cpu_heap;
ANALYZE cpu_p;
-- q's rows from the partitioned table (also with the IN subquery left a semi-join) as from
-- the heap twin (%s: the table)
CREATE FUNCTION same_partitioned(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; p text; h text;
  agg text := 'SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r';
BEGIN
  EXECUTE format(agg, format(q, 'cpu_p')) INTO a;
  SET LOCAL pg_columnar.enable_subquery_values = off;
  EXECUTE format(agg, format(q, 'cpu_p')) INTO p;
  SET LOCAL pg_columnar.enable_subquery_values = on;
  EXECUTE format(agg, format(q, 'cpu_heap')) INTO h;
  IF a IS DISTINCT FROM h OR p IS DISTINCT FROM h THEN
    RETURN format('MISMATCH %s, a semi-join %s, heap %s', a, p, h);
  END IF;
  RETURN a;
END $$;
SELECT same_partitioned($$SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM %s
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_7'))
    AND time >= '2026-01-01 03:00+00' AND time < '2026-01-01 04:00+00' GROUP BY minute$$);
SELECT pruning($$SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu_p
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_7'))
    AND time >= '2026-01-01 03:00+00' AND time < '2026-01-01 04:00+00' GROUP BY minute$$);
SET pg_columnar.enable_subquery_values = off;
SELECT pruning($$SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu_p
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_7'))
    AND time >= '2026-01-01 03:00+00' AND time < '2026-01-01 04:00+00' GROUP BY minute$$);
RESET pg_columnar.enable_subquery_values;
-- over both partitions: eight hosts, NULL and duplicate values, none
SELECT same_partitioned($$SELECT date_trunc('hour', time) AS hour, max(usage_user), max(usage_system) FROM %s
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_1', 'host_5', 'host_9', 'host_13', 'host_17', 'host_21', 'host_25', 'host_29'))
    AND time >= '2026-01-01 06:00+00' AND time < '2026-01-01 18:00+00' GROUP BY hour$$);
SELECT same_partitioned($$SELECT count(*), sum(usage_user) FROM %s WHERE tags_id IN (SELECT k FROM keys)$$);
SELECT same_partitioned($$SELECT count(*) FROM %s WHERE tags_id IN (SELECT id FROM tags WHERE region = 'none')$$);
SELECT same_partitioned($$SELECT * FROM %s WHERE tags_id IN (SELECT id FROM dup) AND time >= '2026-01-01 11:58+00' AND time < '2026-01-01 12:02+00'$$);
-- not rewritten: a subquery that may return more values than a heap partition should
-- compare each row with (a table of 200 rows), and a partitioned table of heap partitions only
CREATE TABLE many (id int);
INSERT INTO many SELECT g FROM generate_series(1, 200) g;
ANALYZE many;
SELECT same_partitioned($$SELECT count(*), sum(usage_user) FROM %s WHERE tags_id IN (SELECT id FROM many WHERE id %% 3 = 0)$$);
CREATE TABLE heap_p (time timestamptz, tags_id int) PARTITION BY RANGE (time);
CREATE TABLE heap_p1 PARTITION OF heap_p DEFAULT;
CREATE FUNCTION rewritten(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF line ~ 'tags_id = ANY' THEN RETURN true; END IF;
  END LOOP;
  RETURN false;
END $$;
SELECT rewritten($$SELECT count(*) FROM heap_p WHERE tags_id IN (SELECT id FROM tags WHERE region = 'r1')$$) AS heap_only,
       rewritten($$SELECT count(*) FROM cpu_p WHERE tags_id IN (SELECT id FROM tags WHERE region = 'r1')$$) AS with_columnar,
       rewritten($$SELECT count(*) FROM cpu_p WHERE tags_id IN (SELECT id FROM many)$$) AS many_values,
       rewritten($$SELECT count(*) FROM cpu WHERE tags_id IN (SELECT id FROM many)$$) AS many_values_one_table;

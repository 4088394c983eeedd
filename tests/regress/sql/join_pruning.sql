-- Joins prune like constants: a PgcolScan on the inner side of a nested loop takes each outer
-- row's join key as a value and skips stripes and vectors by it (a parameterized path,
-- pg_columnar.enable_parameterized_scan). Every shape users write (TSBS's tags subquery, a
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

-- the same rows from the pg_columnar table (with parameterized scans, without them, and as a
-- plain sequential scan) as from its heap twin? (`cpu` in the query is replaced by `cpu_heap`)
CREATE FUNCTION same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; o text; s text; h text;
BEGIN
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r', q) INTO a;
  SET LOCAL pg_columnar.enable_parameterized_scan = off;
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r', q) INTO o;
  SET LOCAL pg_columnar.enable_parameterized_scan = on;
  SET LOCAL pg_columnar.enable_custom_scan = off;
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r', q) INTO s;
  SET LOCAL pg_columnar.enable_custom_scan = on;
  EXECUTE format('SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r',
                 regexp_replace(q, '\mcpu\M', 'cpu_heap', 'g')) INTO h;
  IF a IS DISTINCT FROM h OR o IS DISTINCT FROM h OR s IS DISTINCT FROM h THEN
    RETURN format('MISMATCH parameterized %s, without %s, seqscan %s, heap %s', a, o, s, h);
  END IF;
  RETURN a;
END $$;
-- whether the plan of q has a parameterized PgcolScan (one under a nested loop whose
-- join key it takes), and its counters: stripes and vectors, total and skipped, summed over
-- its rescans
CREATE FUNCTION pruning(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; r text := ''; param bool := false;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
    IF line ~ 'Custom Scan \(PgcolScan\)' THEN r := r || 'PgcolScan; '; END IF;
    IF line ~ '^\s*(Stripes|Vectors):' THEN r := r || trim(line) || '; '; END IF;
    IF line ~ '^\s*Skip Filter:.*\m(tags|d|t)\.id\M' THEN param := true; END IF;
  END LOOP;
  RETURN CASE WHEN param THEN 'by the join key: ' ELSE 'by constants alone: ' END || r;
END $$;

-- TSBS's own query form: hosts through the tags table
SELECT same($$SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_7'))
    AND time >= '2026-01-01 03:00+00' AND time < '2026-01-01 04:00+00' GROUP BY minute$$);
SELECT pruning($$SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_7'))
    AND time >= '2026-01-01 03:00+00' AND time < '2026-01-01 04:00+00' GROUP BY minute$$);
SET pg_columnar.enable_parameterized_scan = off;
SELECT pruning($$SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu
  WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_7'))
    AND time >= '2026-01-01 03:00+00' AND time < '2026-01-01 04:00+00' GROUP BY minute$$);
RESET pg_columnar.enable_parameterized_scan;
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

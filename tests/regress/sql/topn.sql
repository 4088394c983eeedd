-- PgcolTopN: ORDER BY col LIMIT n and DISTINCT ON (g) ... ORDER BY g, col (TSBS
-- lastpoint) reading only the stripes and vectors that can hold the first rows. Every result
-- is compared with the node off and with a heap twin; each decision to leave data out is
-- shown beside a control where it must not be made.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 4096;
SET TimeZone = 'UTC';
-- time-major, like TSBS: 40 hosts every 10 s, and host_old, which stopped reporting in the
-- second stripe; n unique; NULL times in the first stripe, NULL hosts in the first two, NULL
-- k throughout; u has 9,000 distinct strings (no stripe has a shared dictionary of it)
CREATE TABLE tn (n int8, t timestamptz, h text, k int, u text, v float8) USING pg_columnar;
INSERT INTO tn SELECT g,
    CASE WHEN g IN (7, 8, 9) THEN NULL ELSE timestamptz '2016-01-01 00:00+00' + (g / 40) * interval '10 s' END,
    CASE WHEN g % 1013 = 0 AND g < 8000 THEN NULL WHEN g % 40 = 0 AND g < 6000 THEN 'host_old' ELSE 'host_' || (g % 40) END,
    CASE WHEN g % 89 = 0 THEN NULL ELSE g % 7 END,
    'u' || (g * 7919 % 9000),
    g / 4.0
  FROM generate_series(1, 30000) g;
CREATE TABLE tn_heap AS SELECT * FROM tn;
ANALYZE tn, tn_heap;

-- the rows of query q (%s: the table) on the pg_columnar table with the node, without it and
-- on the heap twin: which node answered, and the rows when all three agree
CREATE FUNCTION topn_same(q text, tbl text DEFAULT 'tn') RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; b text; c text; line text; node text := 'PostgreSQL';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || format(q, tbl) LOOP
    IF line ~ 'PgcolTopN' THEN node := 'PgcolTopN'; END IF;
  END LOOP;
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl)) INTO a;
  PERFORM set_config('pg_columnar.enable_topn', 'off', true);
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl)) INTO b;
  PERFORM set_config('pg_columnar.enable_topn', 'on', true);
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl || '_heap')) INTO c;
  IF a IS DISTINCT FROM c OR b IS DISTINCT FROM c THEN
    RETURN format('MISMATCH %s / %s / heap %s', a, b, c);
  END IF;
  RETURN node || ': ' || md5(c) || ' ' || left(c, 70);
END $$;

-- what EXPLAIN ANALYZE says the node read
CREATE FUNCTION topn_read(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF line ~ '(Stripes: .* left out|Vectors: .* left out|Rows Offered|Groups:|PgcolTopN|First Row|Rows Kept|Order:)' THEN
      RETURN NEXT regexp_replace(regexp_replace(line, '^\s*(->\s*)?', ''), ' \(actual rows=[0-9.]+ loops=[0-9]+\)', '');
    END IF;
  END LOOP;
END $$;

-- lastpoint: the newest row of each host
EXPLAIN (COSTS OFF) SELECT DISTINCT ON (h) * FROM tn ORDER BY h, t DESC;
SELECT topn_same('SELECT DISTINCT ON (h) * FROM %s ORDER BY h, t DESC');
-- the newest stripe's last vector holds the newest row of every host that still reports; of
-- the other stripes only those holding host_old, the NULL host or the NULL times (which come
-- first) are read: the rest are left out by their summaries and shared dictionaries, and
-- the other vectors of the stripes read by their zone maps
SELECT * FROM topn_read('SELECT DISTINCT ON (h) * FROM tn ORDER BY h, t DESC');
-- which groups a stripe holds is read from its dictionary once and kept (keyed by the
-- stripe's catalog row, as kept stripes are): the first run on a new table asks every stripe
-- it may leave out (misses), the second finds them all kept (hits, no miss)
CREATE TABLE tn2 (LIKE tn) USING pg_columnar;
INSERT INTO tn2 SELECT * FROM tn;
CREATE TABLE tn2_heap AS SELECT * FROM tn;
CREATE TEMP TABLE d0 AS SELECT * FROM pgcol.kept_stripes();
SELECT count(*), max(t) FROM (SELECT DISTINCT ON (h) * FROM tn2 ORDER BY h, t DESC) s;
SELECT k.dictionary_hits - d.dictionary_hits AS hits, k.dictionary_misses - d.dictionary_misses AS misses FROM pgcol.kept_stripes() k, d0 d;
CREATE TEMP TABLE d1 AS SELECT * FROM pgcol.kept_stripes();
SELECT count(*), max(t) FROM (SELECT DISTINCT ON (h) * FROM tn2 ORDER BY h, t DESC) s;
SELECT k.dictionary_hits - d.dictionary_hits AS hits, k.dictionary_misses - d.dictionary_misses AS misses FROM pgcol.kept_stripes() k, d1 d;
-- a new load into the table: its new stripe is asked, the others found kept
INSERT INTO tn2 SELECT n + 30000, t + interval '1 day', h, k, u, v FROM tn WHERE n <= 4000 AND t IS NOT NULL;
INSERT INTO tn2_heap SELECT n + 30000, t + interval '1 day', h, k, u, v FROM tn WHERE n <= 4000 AND t IS NOT NULL;
CREATE TEMP TABLE d2 AS SELECT * FROM pgcol.kept_stripes();
SELECT topn_same('SELECT DISTINCT ON (h) * FROM %s ORDER BY h, t DESC', 'tn2');
SELECT k.dictionary_hits - d.dictionary_hits > 0 AS hits, k.dictionary_misses - d.dictionary_misses > 0 AS missed FROM pgcol.kept_stripes() k, d2 d;
-- control: u has no shared dictionary, so no stripe's groups are known and all are read
SELECT * FROM topn_read('SELECT DISTINCT ON (u) * FROM tn ORDER BY u, t DESC');
SELECT topn_same('SELECT u, t FROM (SELECT DISTINCT ON (u) * FROM %s ORDER BY u, t DESC) s');
-- ascending, NULLS FIRST / LAST, integer groups with a NULL group, NULL times
SELECT topn_same('SELECT DISTINCT ON (h) * FROM %s ORDER BY h, n');
SELECT topn_same('SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h DESC, t');
SELECT topn_same('SELECT DISTINCT ON (h) h, t FROM %s ORDER BY h, t DESC NULLS LAST');
SELECT topn_same('SELECT DISTINCT ON (k) k, t FROM %s ORDER BY k, t NULLS FIRST');
SELECT topn_same('SELECT DISTINCT ON (k) * FROM %s ORDER BY k NULLS FIRST, n DESC');
SELECT topn_same('SELECT DISTINCT ON (t) t, n FROM %s WHERE n > 29000 ORDER BY t, n DESC');
-- NULLS LAST: the stripe of the NULL times need not be read for them; ascending, the oldest
-- stripes hold every first row
SELECT * FROM topn_read('SELECT DISTINCT ON (h) h, t FROM tn ORDER BY h, t DESC NULLS LAST');
SELECT * FROM topn_read('SELECT DISTINCT ON (h) h, t FROM tn ORDER BY h, t');
-- an integer key has no shared dictionary: the groups a stripe holds are the integers of its
-- summary's range of k (0..6, and NULL), all seen once the newest stripe is read
SELECT * FROM topn_read('SELECT DISTINCT ON (k) k, t FROM tn ORDER BY k, t DESC');
-- with quals the scan evaluates
SELECT topn_same('SELECT DISTINCT ON (h) * FROM %s WHERE k = 3 ORDER BY h, t DESC');
SELECT topn_same('SELECT DISTINCT ON (h) * FROM %s WHERE t < ''2016-01-01 12:00+00'' AND v > 100 ORDER BY h, n DESC');
SELECT topn_same('SELECT DISTINCT ON (h) * FROM %s WHERE h IN (''host_1'', ''host_7'') ORDER BY h, t DESC');
-- a qual the scan cannot evaluate: PostgreSQL's plan
SELECT topn_same('SELECT DISTINCT ON (h) * FROM %s WHERE v::text LIKE ''1%%'' ORDER BY h, t DESC');
-- DISTINCT ON an expression, more sort keys, a volatile target: PostgreSQL's plan
SELECT topn_same('SELECT DISTINCT ON (lower(h)) h, t FROM %s ORDER BY lower(h), t DESC');
SELECT topn_same('SELECT DISTINCT ON (h) h, t, n FROM %s ORDER BY h, t DESC, n');
EXPLAIN (COSTS OFF) SELECT DISTINCT ON (h) h, random() > 2 FROM tn ORDER BY h, t DESC;

-- ORDER BY ... LIMIT
EXPLAIN (COSTS OFF) SELECT * FROM tn ORDER BY n DESC LIMIT 5;
SELECT topn_same('SELECT * FROM %s ORDER BY n DESC LIMIT 5');
SELECT topn_same('SELECT * FROM %s ORDER BY n LIMIT 3 OFFSET 2');
SELECT topn_same('SELECT * FROM %s WHERE h = ''host_3'' ORDER BY n DESC LIMIT 4');
SELECT topn_same('SELECT n, v FROM %s WHERE k IS NULL ORDER BY n DESC LIMIT 2000');
SELECT * FROM topn_read('SELECT * FROM tn ORDER BY n DESC LIMIT 5');
-- times tie (40 rows each): the times are the same; NULLs first in descending order
SELECT topn_same('SELECT t FROM (SELECT * FROM %s ORDER BY t DESC LIMIT 50) s');
SELECT topn_same('SELECT t FROM (SELECT * FROM %s ORDER BY t DESC NULLS LAST LIMIT 50) s');
SELECT topn_same('SELECT t FROM (SELECT * FROM %s ORDER BY t LIMIT 50) s');
-- a limit above 100,000 rows or an unknown one: PostgreSQL's plan
SELECT topn_same('SELECT n FROM (SELECT * FROM %s ORDER BY n DESC LIMIT 200000) s ORDER BY n LIMIT 3');
PREPARE lim(int) AS SELECT n FROM tn ORDER BY n DESC LIMIT $1;
EXPLAIN (COSTS OFF) EXECUTE lim(3);
EXECUTE lim(3);

-- ties within a group come later row first (PostgreSQL leaves their order unspecified)
CREATE TABLE ties (h text, t int, n int) USING pg_columnar;
INSERT INTO ties SELECT 'a', g % 3, g FROM generate_series(1, 10) g;
SELECT DISTINCT ON (h) * FROM ties ORDER BY h, t DESC;
SELECT * FROM ties ORDER BY t DESC LIMIT 3;

-- prepared statements, generic plans, and the per-host LATERAL form of lastpoint, whose
-- scan is rescanned with a parameter for each host
PREPARE newest(text) AS SELECT n, t FROM tn WHERE h = $1 ORDER BY t DESC LIMIT 1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE newest('host_5');
EXECUTE newest('host_5');
EXECUTE newest('host_39');
EXECUTE newest('nobody');
RESET plan_cache_mode;
CREATE TABLE hosts AS SELECT DISTINCT h FROM tn_heap WHERE h IS NOT NULL;
EXPLAIN (COSTS OFF) SELECT hosts.h, l.n FROM hosts, LATERAL (SELECT n FROM tn WHERE tn.h = hosts.h ORDER BY n DESC LIMIT 1) l;
SELECT topn_same('SELECT hosts.h, l.n FROM hosts, LATERAL (SELECT n FROM %s tn WHERE tn.h = hosts.h ORDER BY n DESC LIMIT 1) l ORDER BY 1');
SELECT topn_same('SELECT hosts.h, l.t FROM hosts, LATERAL (SELECT t FROM %s tn WHERE tn.h = hosts.h ORDER BY t DESC LIMIT 2) l ORDER BY 1, 2');

-- rows of the current transaction, a rolled-back savepoint and a failed exception block
BEGIN;
INSERT INTO tn VALUES (40001, '2017-01-01 00:00+00', 'host_2', 1, 'x', 0), (40002, '2017-01-01 00:00+00', 'newhost', 1, 'x', 0);
SAVEPOINT s;
INSERT INTO tn VALUES (40003, '2018-01-01 00:00+00', 'host_2', 1, 'x', 0);
ROLLBACK TO s;
SELECT h, n, t FROM (SELECT DISTINCT ON (h) * FROM tn ORDER BY h, t DESC) s WHERE h IN ('host_2', 'newhost', 'host_3');
SELECT n, t FROM tn ORDER BY t DESC NULLS LAST LIMIT 2;
ROLLBACK;
CREATE FUNCTION insert_and_fail() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    INSERT INTO tn VALUES (50000, '2019-01-01 00:00+00', 'host_9', 1, 'y', 0);
    RAISE EXCEPTION 'undo';
  EXCEPTION WHEN raise_exception THEN NULL;
  END;
END $$;
SELECT insert_and_fail();
SELECT topn_same('SELECT DISTINCT ON (h) * FROM %s ORDER BY h, t DESC');
SELECT n, t FROM tn ORDER BY n DESC LIMIT 1;

-- a scrollable cursor
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT DISTINCT ON (h) h, n FROM tn ORDER BY h, n DESC;
FETCH 2 FROM c;
FETCH BACKWARD 1 FROM c;
FETCH LAST FROM c;
COMMIT;

-- randomized: shapes, groups, directions, limits and quals drawn with a fixed seed; where
-- the ordering column has ties (t), only what the order fixes is compared
CREATE FUNCTION random_queries(n int) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  groups text[] := ARRAY['h', 'k', 'u', 't'];
  wheres text[] := ARRAY['true', 'n < 9000', 'v > 2000', 'h IN (''host_1'', ''host_4'')', 'k <> 0 AND n > 12000',
                         't >= ''2016-01-01 12:00+00'' AND t < ''2016-01-01 18:00+00''', 'k IS NULL', 'h IS NULL'];
  g text; o text; d text; w text; q text; bad int := 0; used int := 0; r text;
BEGIN
  PERFORM setseed(0.17);
  FOR i IN 1..n LOOP
    o := (ARRAY['n', 't'])[1 + floor(random() * 2)::int];
    d := (ARRAY['', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST'])[1 + floor(random() * 4)::int];
    w := wheres[1 + floor(random() * array_length(wheres, 1))::int];
    IF random() < 0.5 THEN
      g := groups[1 + floor(random() * array_length(groups, 1))::int];
      IF g = o THEN g := 'h'; END IF;
      q := format('SELECT %s FROM (SELECT DISTINCT ON (%s) * FROM @ WHERE %s ORDER BY %s, %s%s) s',
                  CASE WHEN o = 'n' THEN '*' ELSE g || ', t' END, g, w, g, o, d);
    ELSE
      q := format('SELECT %s FROM (SELECT * FROM @ WHERE %s ORDER BY %s%s LIMIT %s%s) s',
                  CASE WHEN o = 'n' THEN '*' ELSE 't' END, w, o, d,
                  (ARRAY[1, 3, 40, 700, 5000])[1 + floor(random() * 5)::int],
                  CASE WHEN random() < 0.3 THEN ' OFFSET 2' ELSE '' END);
    END IF;
    r := topn_same(replace(q, '@', '%s'));
    IF r LIKE 'MISMATCH%' THEN bad := bad + 1; RETURN NEXT q || ' => ' || r; END IF;
    IF r LIKE 'PgcolTopN%' THEN used := used + 1; END IF;
  END LOOP;
  RETURN NEXT format('%s queries, %s mismatches, %s answered by PgcolTopN', n, bad, used);
END $$;
SELECT * FROM random_queries(150);
-- a sorted stripe whose stored position of a kept row is the insert offset of an absent row:
-- k descends as rows come, so sorting stores the last row inserted (k = 1) first; VACUUM
-- makes the first row inserted (deleted) absent, at offset 0
CREATE TABLE tn_abs (k int, v int) USING pg_columnar WITH (pg_columnar.sort_key = 'k');
INSERT INTO tn_abs SELECT 1000 - g, g FROM generate_series(0, 999) g;
DELETE FROM tn_abs WHERE v = 0;
VACUUM tn_abs;
SELECT row_count, deleted_rows, absent_rows FROM pgcol.stripes('tn_abs');
EXPLAIN (COSTS OFF) SELECT k, v FROM tn_abs ORDER BY k LIMIT 3;
SELECT k, v FROM tn_abs ORDER BY k LIMIT 3;
SELECT k, v FROM tn_abs ORDER BY k DESC LIMIT 2;
SELECT DISTINCT ON (k % 3) k % 3 AS g, k, v FROM tn_abs ORDER BY k % 3, k;
-- DISTINCT ON over a partitioned table: PgcolTopN takes each pg_columnar partition's first
-- row per group, the heap partition gives all its rows, PostgreSQL's Sort and Unique pick
-- each group's first of those (a partition with other column numbers and a dropped column;
-- NULL times and a host seen only in the heap default partition, host_old only in the first)
CREATE TABLE tp (n int8, t timestamptz, h text, k int, u text, v float8) PARTITION BY RANGE (t);
CREATE TABLE tp1 PARTITION OF tp FOR VALUES FROM ('2016-01-01 00:00+00') TO ('2016-01-01 00:40+00') USING pg_columnar;
CREATE TABLE tp2 (v float8, junk int, u text, k int, h text, t timestamptz, n int8) USING pg_columnar;
ALTER TABLE tp2 DROP COLUMN junk;
ALTER TABLE tp ATTACH PARTITION tp2 FOR VALUES FROM ('2016-01-01 00:40+00') TO ('2016-01-01 01:20+00');
CREATE TABLE tp3 PARTITION OF tp DEFAULT;
INSERT INTO tp SELECT * FROM tn;
INSERT INTO tp VALUES (30001, '2016-01-01 02:00+00', 'host_new', 1, 'u', 1);
CREATE TABLE tp_heap AS SELECT * FROM tp;
ANALYZE tp, tp_heap;
SELECT tableoid::regclass, count(*), count(DISTINCT h) AS hosts FROM tp GROUP BY 1 ORDER BY 1;
EXPLAIN (COSTS OFF) SELECT DISTINCT ON (h) * FROM tp ORDER BY h, t DESC;
SELECT topn_same('SELECT DISTINCT ON (h) * FROM %s ORDER BY h, t DESC', 'tp');
SELECT topn_same('SELECT DISTINCT ON (h) h, t, n FROM %s ORDER BY h, t', 'tp');
SELECT topn_same('SELECT DISTINCT ON (k) k, n, v FROM %s WHERE v > 100 ORDER BY k, n DESC', 'tp');
SELECT topn_same('SELECT DISTINCT ON (h) h, t FROM %s WHERE t < ''2016-01-01 00:50+00'' ORDER BY h, t DESC NULLS LAST', 'tp');
-- only heap partitions left by pruning: PostgreSQL's plan
SELECT topn_same('SELECT DISTINCT ON (h) h, t FROM %s WHERE t >= ''2016-01-01 01:30+00'' ORDER BY h, t DESC', 'tp');
-- a generic plan: the partitions the parameter rules out are pruned at run time
PREPARE newest_per_host(timestamptz) AS SELECT DISTINCT ON (h) h, t FROM tp WHERE t >= $1 ORDER BY h, t DESC;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE newest_per_host('2016-01-01 00:50+00');
SELECT md5(string_agg(r::text, ' ')) FROM (SELECT DISTINCT ON (h) h, t FROM tp_heap WHERE t >= '2016-01-01 00:50+00' ORDER BY h, t DESC) r;
CREATE TEMP TABLE newest_rows AS EXECUTE newest_per_host('2016-01-01 00:50+00');
SELECT md5(string_agg(r::text, ' ')) FROM (SELECT * FROM newest_rows ORDER BY h, t DESC) r;
RESET plan_cache_mode;

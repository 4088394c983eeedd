-- PgcolAgg: aggregates computed from the scan's vectors (GROUP BY: grouped_agg). Every result is
-- compared with a heap twin and with the node off (PostgreSQL's Agg over the same scan); each
-- query also says which node answered it, so the cases the node must take and those it must
-- leave to PostgreSQL are both shown.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 2048;
CREATE TABLE va (id int, i2 int2, i8 int8, f4 float4, f8 float8, t text, n int) USING pg_columnar;
INSERT INTO va SELECT g, (g % 300 - 150)::int2, CASE WHEN g % 11 = 0 THEN NULL ELSE g::int8 * 1000000007 END,
    (g / 3.0)::float4,
    CASE g % 500 WHEN 0 THEN 'NaN' WHEN 1 THEN '-0' WHEN 2 THEN '0' ELSE g / 7.0 END,
    'x' || (g % 37), CASE WHEN g BETWEEN 4000 AND 6100 THEN NULL ELSE g % 1000 END
  FROM generate_series(1, 10000) g;
CREATE TABLE va_heap AS SELECT * FROM va;

-- the row of query q (%s: the table) on pg_columnar table tbl with the node, without it, and
-- on its heap twin tbl_heap: 'PgcolAgg' or 'Aggregate' (which node answered) when all
-- three agree
CREATE FUNCTION agg_same(q text, tbl text DEFAULT 'va') RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; b text; c text; line text; node text := 'Aggregate';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || format(q, tbl) LOOP
    IF line ~ 'PgcolAgg' THEN node := 'PgcolAgg'; END IF;
  END LOOP;
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl)) INTO a;
  PERFORM set_config('pg_columnar.enable_vectorized_agg', 'off', true);
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl)) INTO b;
  PERFORM set_config('pg_columnar.enable_vectorized_agg', 'on', true);
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', format(q, tbl || '_heap')) INTO c;
  IF a IS DISTINCT FROM c OR b IS DISTINCT FROM c THEN
    RETURN format('MISMATCH %s / %s / heap %s', a, b, c);
  END IF;
  RETURN node || ': ' || c;
END $$;

-- every function on every type, NULLs (i8, n), NaN and -0.0 (f8) included
SELECT agg_same('SELECT count(*), count(i8), count(t), count(n) FROM %s');
SELECT agg_same('SELECT sum(id), sum(i2), sum(i8), sum(f4), sum(f8), sum(n) FROM %s');
SELECT agg_same('SELECT avg(id), avg(i2), avg(i8), avg(f4), avg(f8), avg(n) FROM %s');
SELECT agg_same('SELECT min(id), min(i2), min(i8), min(f4), min(f8), min(n) FROM %s');
SELECT agg_same('SELECT max(id), max(i2), max(i8), max(f4), max(f8), max(n) FROM %s');
-- with quals the scan evaluates: skipped vectors, partly selected ones, none selected
SELECT agg_same('SELECT count(*), sum(f8), avg(i8), min(f4), max(n) FROM %s WHERE id > 5000');
SELECT agg_same('SELECT count(*), sum(id), max(f8) FROM %s WHERE f8 < 100 OR t = ''x5''');
SELECT agg_same('SELECT count(*), count(n), sum(n), avg(n) FROM %s WHERE n IS NULL');
SELECT agg_same('SELECT count(*), sum(id), avg(f8), min(i2), max(i8) FROM %s WHERE id < 0');
SELECT agg_same('SELECT count(*), sum(id) FROM %s WHERE t IN (''x1'', ''x2'', ''x36'') AND i2 BETWEEN -20 AND 20');
SELECT agg_same('SELECT min(f8), max(f8), count(*) FROM %s WHERE f8 IN (''NaN'', 0)');
-- float sums in row order give heap's bits (NaN rows left out, so the sums are numbers)
SELECT agg_same('SELECT sum(f8), avg(f8), count(f8), sum(f4), avg(f4) FROM %s WHERE f8 < ''NaN''');
SELECT agg_same('SELECT sum(f8), avg(f8) FROM %s WHERE f8 < ''NaN'' AND id > 2500');
-- expressions over aggregates are projected above them
SELECT agg_same('SELECT sum(id) * 2 + count(*), coalesce(max(n), -1), avg(f8)::numeric(20, 6) FROM %s WHERE id %% 1 = 0 OR id > 0');
SELECT agg_same('SELECT sum(id) * 2 + count(*), coalesce(max(n), -1), round(avg(f8)::numeric, 6) FROM %s WHERE id > 9000');
-- a grouped one and HAVING (grouped_agg has the rest)
SELECT agg_same('SELECT i2 %% 2 AS k, count(*), sum(id) FROM %s GROUP BY 1 ORDER BY 1');
SELECT agg_same('SELECT count(*) FROM %s HAVING count(*) > 5');
SELECT agg_same('SELECT count(*) FROM %s HAVING count(*) > 50000');
-- count(DISTINCT col) is the node's (count_distinct); left to PostgreSQL: a qual the scan
-- does not evaluate (above), DISTINCT of another aggregate, ORDER BY in the aggregate, an
-- expression argument, text min under a collation not known to order bytewise, the node
-- turned off (FILTER: grouped_agg)
SELECT agg_same('SELECT count(*), sum(id) FROM %s WHERE t LIKE ''x1%%''');
SELECT agg_same('SELECT count(DISTINCT i2), sum(id) FROM %s');
SELECT agg_same('SELECT sum(DISTINCT i2), sum(id) FROM %s');
SELECT agg_same('SELECT count(*) FILTER (WHERE id > 10), sum(id) FROM %s');
SELECT agg_same('SELECT sum(id ORDER BY id), count(*) FROM %s');
SELECT agg_same('SELECT sum(id + 1), count(*) FROM %s');
SELECT agg_same('SELECT min(t COLLATE "C.utf8"), count(*) FROM %s');
SET pg_columnar.enable_vectorized_agg = off;
SELECT agg_same('SELECT count(*), sum(id) FROM %s');
RESET pg_columnar.enable_vectorized_agg;
EXPLAIN (COSTS OFF) SELECT count(*), sum(f8), avg(i8) FROM va WHERE id > 5000;
-- what the node did, from EXPLAIN ANALYZE: the vectors it aggregated, the scan's skips
CREATE FUNCTION explain_analyze(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
    RETURN NEXT regexp_replace(line, ' \(actual rows=[0-9.]+ loops=[0-9]+\)', '');
  END LOOP;
END $$;
SELECT explain_analyze('SELECT count(*), sum(f8) FROM va WHERE id > 9000');

-- floats as PostgreSQL adds them: overflow of finite values is an error, in both engines;
-- avg can overflow in its sum of squares alone; infinities give NaN; ties keep the newer
CREATE TABLE vf (x float8, y float4) USING pg_columnar;
CREATE TABLE vf_heap (x float8, y float4);
INSERT INTO vf VALUES (1e308, 3e38), (1e308, 3e38);
INSERT INTO vf_heap SELECT * FROM vf;
SELECT sum(x) FROM vf;
SELECT sum(x) FROM vf_heap;
SELECT sum(y) FROM vf;
SELECT sum(y) FROM vf_heap;
TRUNCATE vf, vf_heap;
INSERT INTO vf VALUES (1e200, 1), (-1e200, 2);
INSERT INTO vf_heap SELECT * FROM vf;
SELECT avg(x) FROM vf;
SELECT avg(x) FROM vf_heap;
-- avg of floats that every stripe's summary bounds within ±1e100 goes without the sum of
-- squares (N and Sx alone give avg's result, and the bound proves float8_accum raises no
-- error): the same bits, grouped or not; a stripe reaching past the bound (±1e200, in a
-- stripe of its own) makes every avg of the column keep it
CREATE TABLE vb (k int, x float8, y float4) USING pg_columnar;
-- (binary fractions: every order of adding them gives the same sums, so plans that order a
-- group's rows differently agree; the codec's tests show the bits in row order)
INSERT INTO vb SELECT g % 3, CASE WHEN g % 97 = 0 THEN 2^30 WHEN g % 89 = 0 THEN -2^30 ELSE g / 8.0 END, g FROM generate_series(1, 3000) g;
CREATE TABLE vb_heap AS SELECT * FROM vb;
SELECT line FROM explain_analyze('SELECT avg(x), avg(y), sum(x) FROM vb') line WHERE line ~ 'Averages';
SELECT line FROM explain_analyze('SELECT k, avg(x) FROM vb GROUP BY 1') line WHERE line ~ 'Averages';
SELECT agg_same('SELECT avg(x), avg(y), sum(x) FROM %s', 'vb');
SELECT agg_same('SELECT k, avg(x), avg(y) FROM %s GROUP BY 1 ORDER BY 1', 'vb');
INSERT INTO vb VALUES (1, 1e200, 1), (2, -1e200, 2);
INSERT INTO vb_heap VALUES (1, 1e200, 1), (2, -1e200, 2);
SELECT line FROM explain_analyze('SELECT k, avg(x), avg(y) FROM vb WHERE x BETWEEN -1e150 AND 1e150 GROUP BY 1') line WHERE line ~ 'Averages';
SELECT agg_same('SELECT k, avg(x), avg(y) FROM %s WHERE x BETWEEN -1e150 AND 1e150 GROUP BY 1 ORDER BY 1', 'vb');
SELECT avg(x) FROM vb;
SELECT avg(x) FROM vb_heap;
TRUNCATE vf, vf_heap;
INSERT INTO vf VALUES ('Infinity', '-0'), ('-Infinity', '0'), (1, '-0');
INSERT INTO vf_heap SELECT * FROM vf;
SELECT sum(x), avg(x), min(y), max(y), sum(y) FROM vf;
SELECT sum(x), avg(x), min(y), max(y), sum(y) FROM vf_heap;
-- a sum starts from its first value: the sum of one -0 is -0
TRUNCATE vf, vf_heap;
INSERT INTO vf VALUES ('-0', '-0');
INSERT INTO vf_heap SELECT * FROM vf;
SELECT sum(x), sum(y), avg(x) FROM vf;
SELECT sum(x), sum(y), avg(x) FROM vf_heap;
-- int8 sums beyond int8 are exact (numeric), int4 sums are int8
CREATE TABLE vi (a int8, b int4) USING pg_columnar;
INSERT INTO vi SELECT 9223372036854775807 - g, 2147483647 FROM generate_series(0, 3000) g;
CREATE TABLE vi_heap AS SELECT * FROM vi;
SELECT agg_same('SELECT sum(a), avg(a), sum(b), avg(b), max(a), min(b) FROM %s', 'vi');
-- an empty table
CREATE TABLE ve (a int, f float8) USING pg_columnar;
SELECT count(*), count(a), sum(a), avg(f), min(f), max(a) FROM ve;

-- rows of the current transaction (buffered, flushed before the scan), rolled-back rows
BEGIN;
INSERT INTO va SELECT g, 1, 1, 1, 1, 'new', 1 FROM generate_series(20001, 20500) g;
INSERT INTO va_heap SELECT g, 1, 1, 1, 1, 'new', 1 FROM generate_series(20001, 20500) g;
SELECT agg_same('SELECT count(*), sum(id), sum(f8) FROM %s');
SAVEPOINT s;
INSERT INTO va SELECT g, 1, 1, 1, 1, 'gone', 1 FROM generate_series(30001, 30500) g;
ROLLBACK TO s;
SELECT agg_same('SELECT count(*), sum(id), sum(f8) FROM %s');
COMMIT;
SELECT agg_same('SELECT count(*), sum(id), max(id) FROM %s');

-- parameters: a generic plan re-evaluates them at each execution
SET plan_cache_mode = force_generic_plan;
PREPARE pa(int) AS SELECT count(*), sum(f8), max(i8) FROM va WHERE id > $1;
PREPARE ph(int) AS SELECT count(*), sum(f8), max(i8) FROM va_heap WHERE id > $1;
EXECUTE pa(100);
EXECUTE ph(100);
EXECUTE pa(9990);
EXECUTE ph(9990);
EXECUTE pa(50000);
EXECUTE ph(50000);
RESET plan_cache_mode;
-- a correlated subquery rescans the node with new parameters
SELECT x, (SELECT count(*) FROM va WHERE id < x) AS c, (SELECT sum(f4) FROM va WHERE id < x) AS s FROM (VALUES (10), (5000), (100000)) v(x);
SELECT x, (SELECT count(*) FROM va_heap WHERE id < x) AS c, (SELECT sum(f4) FROM va_heap WHERE id < x) AS s FROM (VALUES (10), (5000), (100000)) v(x);
-- a cursor
BEGIN;
DECLARE cur CURSOR FOR SELECT count(*), sum(id) FROM va WHERE i2 > 0;
FETCH cur;
FETCH cur;
COMMIT;
SELECT count(*), sum(id) FROM va_heap WHERE i2 > 0;

-- added and dropped columns: an added column's default counts for the rows stored before it
ALTER TABLE va ADD COLUMN z int DEFAULT 7;
ALTER TABLE va_heap ADD COLUMN z int DEFAULT 7;
ALTER TABLE va DROP COLUMN i2;
ALTER TABLE va_heap DROP COLUMN i2;
SELECT agg_same('SELECT count(z), sum(z), avg(z), max(z), sum(id) FROM %s');
SELECT agg_same('SELECT count(z), sum(z), sum(id) FROM %s WHERE z = 7 AND id > 100');

-- below a security barrier only leakproof quals are the scan's: others keep the executor,
-- and with them the aggregate
CREATE VIEW va_even WITH (security_barrier) AS SELECT * FROM va WHERE id % 2 = 0;
CREATE VIEW va_even_heap WITH (security_barrier) AS SELECT * FROM va_heap WHERE id % 2 = 0;
SELECT agg_same('SELECT count(*), sum(id) FROM %s WHERE id < 1000', 'va_even');

-- answers from metadata: count(*), count(col), min and max of stripes and vectors whose every
-- row the quals select are taken from the catalog summaries and the zone maps, without reading
-- the vectors; what is only partly selected, or sum and avg, is read
CREATE TABLE vm (id int, n int8, f float8, r float4, t timestamptz, d date, z float8) USING pg_columnar;
INSERT INTO vm SELECT g, CASE WHEN g % 7 = 0 THEN NULL ELSE g * 3 END, g / 4.0, g % 500, timestamptz '2020-01-01 00:00+00' + g * interval '1 min',
    date '2020-01-01' + g / 1000, CASE WHEN g % 3000 = 5 THEN '-0' WHEN g % 3000 = 6 THEN '0' ELSE g END
  FROM generate_series(1, 6000) g;
INSERT INTO vm VALUES (6001, NULL, 'NaN', 'NaN', 'infinity', 'infinity', NULL);
CREATE TABLE vm_heap AS SELECT * FROM vm;
CREATE FUNCTION answered(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
    IF line ~ 'Aggregated|Answered|Vectors Decoded' THEN RETURN NEXT line; END IF;
  END LOOP;
END $$;
SELECT agg_same('SELECT count(*), count(n), min(id), max(n), min(f), max(f), min(r), max(r), min(t), max(t), min(d), max(d) FROM %s', 'vm');
SELECT answered('SELECT count(*), count(n), min(id), max(n), min(f), max(f), min(r), max(r), min(t), max(t), min(d), max(d) FROM vm');
-- quals that select whole vectors and stripes, one vector partly
SELECT agg_same('SELECT count(*), max(t), min(n) FROM %s WHERE id > 1000', 'vm');
SELECT answered('SELECT count(*), max(t), min(n) FROM vm WHERE id > 1000');
SELECT agg_same('SELECT count(*), count(n) FROM %s WHERE t >= ''2020-01-02 00:00+00'' AND t < ''2020-01-03 12:00+00''', 'vm');
SELECT answered('SELECT count(*), count(n) FROM vm WHERE t >= ''2020-01-02 00:00+00'' AND t < ''2020-01-03 12:00+00''');
-- controls: sum is read, however covered; a min or max of ±0.0 is read (the zone keeps the
-- first of the equal zeros, PostgreSQL the last); IS NULL covers only all-NULL rows
SELECT agg_same('SELECT count(*), sum(id) FROM %s WHERE id > 1000', 'vm');
SELECT answered('SELECT count(*), sum(id) FROM vm WHERE id > 1000');
SELECT agg_same('SELECT min(z), max(z), count(z) FROM %s', 'vm');
SELECT agg_same('SELECT min(z)::text, max(z)::text FROM %s WHERE id BETWEEN 3000 AND 3010', 'vm');
SELECT answered('SELECT min(z) FROM vm');
SELECT agg_same('SELECT count(*), count(n) FROM %s WHERE n IS NULL', 'vm');
-- rows of the current transaction and rolled-back ones are counted as a scan counts them
BEGIN;
INSERT INTO vm SELECT g, g, g, g, NULL, NULL, g FROM generate_series(7001, 7100) g;
INSERT INTO vm_heap SELECT g, g, g, g, NULL, NULL, g FROM generate_series(7001, 7100) g;
SAVEPOINT s;
INSERT INTO vm SELECT g, g, g, g, NULL, NULL, g FROM generate_series(8001, 9000) g;
ROLLBACK TO s;
SELECT agg_same('SELECT count(*), count(t), max(n), min(id), max(id) FROM %s', 'vm');
SELECT answered('SELECT count(*), count(t), max(n), min(id), max(id) FROM vm');
COMMIT;
SELECT agg_same('SELECT count(*), count(t), max(n), min(id), max(id) FROM %s', 'vm');
-- the switch off: every vector read
SET pg_columnar.enable_vectorized_agg = off;
SELECT count(*), max(id) FROM vm;
RESET pg_columnar.enable_vectorized_agg;

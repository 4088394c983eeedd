-- pg_columnar.sort_key: the option, stripes sorted by it, and rows found by the numbers
-- they were given at insert time through every access path.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 4096;
CREATE FUNCTION key_of(t regclass) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(array_to_string(reloptions, '; '), '(none)') FROM pg_class WHERE oid = t $$;

-- the option: set, shown, validated, reset
CREATE TABLE s (host text, t timestamptz, v float8, id int, n numeric) USING pg_columnar
    WITH (pg_columnar.sort_key = 'host, t');
SELECT key_of('s');
ALTER TABLE s SET (pg_columnar.sort_key = 'ID');
ALTER TABLE s SET (pg_columnar.sort_key = 'nope');
ALTER TABLE s SET (pg_columnar.sort_key = 'n');
ALTER TABLE s SET (pg_columnar.sort_key = 'id, id');
ALTER TABLE s SET (pg_columnar.sort_key = 'id,');
ALTER TABLE s SET (pg_columnar.sort_key = 'ctid');
ALTER TABLE s SET (pg_columnar.nope = 'id');
ALTER TABLE s SET ("pg_columnar.sort_key" = 'id');
SELECT key_of('s');
-- with storage parameters of PostgreSQL's own, in one statement and in later ones
ALTER TABLE s SET (pg_columnar.sort_key = 'host, t'), SET (parallel_workers = 2);
SELECT key_of('s');
ALTER TABLE s SET (parallel_workers = 1);
ALTER TABLE s RESET (parallel_workers);
SELECT key_of('s');
ALTER TABLE s RESET (pg_columnar.sort_key);
SELECT key_of('s');
ALTER TABLE s SET (pg_columnar.sort_key = 'host, t');
-- a table of another access method keeps it unused, with a NOTICE (tools that copy a
-- table's definition write it into their CREATE TABLE: Citus's alter_table_set_access_method
-- to heap sends the statement below); still validated; a partitioned table refuses it
SET client_min_messages = notice;
CREATE TABLE h (LIKE s);
ALTER TABLE h SET (pg_columnar.sort_key = 'id');
ALTER TABLE h SET (pg_columnar.sort_key = 'nope');
CREATE TABLE h2 (a int) USING heap WITH ("pg_columnar.sort_key" = 'a');
SELECT key_of('h'), key_of('h2');
ALTER TABLE h SET (fillfactor = 50);  -- PostgreSQL validates heap's options: ours is kept aside
SELECT key_of('h'), reloptions FROM pg_class WHERE relname = 'h';
CREATE TABLE hp (a int) PARTITION BY RANGE (a);
ALTER TABLE hp SET (pg_columnar.sort_key = 'a');
DROP TABLE hp;
RESET client_min_messages;
CREATE TABLE s_ctas USING pg_columnar WITH (pg_columnar.sort_key = 'id') AS SELECT 1 AS id;
-- IF NOT EXISTS of a table that exists leaves its key
CREATE TABLE IF NOT EXISTS s (a int) USING pg_columnar WITH (pg_columnar.sort_key = 'a');
SELECT key_of('s');
-- a function that creates sorted tables, run twice (its cached statements stay intact)
CREATE FUNCTION make_sorted() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    DROP TABLE IF EXISTS made;
    CREATE TABLE made (a int, b int) USING pg_columnar WITH (pg_columnar.sort_key = 'b');
    ALTER TABLE made SET (pg_columnar.sort_key = 'b, a');
    RETURN key_of('made');
END $$;
SELECT make_sorted();
SELECT make_sorted();

-- rows in a time-major order (7 hosts per time), indexes made before the load; the heap
-- twin holds the same rows in the same insert order
CREATE INDEX s_id ON s (id);
CREATE INDEX s_t ON s USING hash (t);
INSERT INTO s SELECT 'h' || (g % 7), '2020-01-01 00:00+00'::timestamptz + (g / 7) * interval '1 min', g * 0.5, g, g
FROM generate_series(1, 10000) g;
INSERT INTO h SELECT * FROM s ORDER BY id;
CREATE INDEX h_id ON h (id);
-- stored in key order: the first rows are host h0's, in time order
SELECT host, t, id FROM s LIMIT 3;
SELECT first_row, sort_key, rows_moved FROM pgcol.sort_order('s');
SELECT stripes, rows FROM pgcol.verify('s');
-- rows that come in key order are stored as they came, without row positions
CREATE TABLE in_order (a int, b text) USING pg_columnar WITH (pg_columnar.sort_key = 'a');
INSERT INTO in_order SELECT g, 'x' FROM generate_series(1, 5000) g;
SELECT first_row, sort_key, rows_moved FROM pgcol.sort_order('in_order');
-- every row keeps the TID of its insert order: row id k is row number k - 1
SELECT count(*) AS tids_not_insert_order FROM s
WHERE ctid <> format('(%s,%s)', (id - 1) / 291, (id - 1) % 291 + 1)::tid;
-- the same rows as the heap twin
SELECT (SELECT md5(string_agg(x::text, '|' ORDER BY id)) FROM s x) = (SELECT md5(string_agg(x::text, '|' ORDER BY id)) FROM h x) AS same_rows;
-- index scans, bitmap scans and TID scans find each row at the TID the sequential scan gives
CREATE TABLE seen AS SELECT ctid AS tid, id FROM s;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT ctid FROM s WHERE id = 1;
SELECT count(*) AS index_scan_mismatches FROM seen WHERE (SELECT x.ctid FROM s x WHERE x.id = seen.id) IS DISTINCT FROM seen.tid;
SELECT count(*) AS hash_index_rows, count(DISTINCT ctid) FROM s WHERE t = '2020-01-01 01:00+00';
SET enable_bitmapscan = on;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT ctid FROM s WHERE id BETWEEN 1 AND 10;
SELECT count(*) AS bitmap_scan_mismatches FROM seen WHERE (SELECT x.ctid FROM s x WHERE x.id = seen.id) IS DISTINCT FROM seen.tid;
SELECT id, host FROM s WHERE id BETWEEN 4000 AND 4003 ORDER BY id;
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT count(*) AS tid_scan_mismatches FROM seen WHERE (SELECT x.id FROM s x WHERE x.ctid = seen.tid) IS DISTINCT FROM seen.id;
RESET enable_seqscan;
-- a TID range holds the rows inserted in it, wherever they are stored
EXPLAIN (COSTS OFF) SELECT count(*) FROM s WHERE ctid >= '(3,1)' AND ctid < '(5,1)';
SELECT count(*), min(id), max(id) FROM s WHERE ctid >= '(3,1)' AND ctid < '(5,1)';
-- a query that needs a sorted stripe's row numbers decodes them; differential probes
-- against the heap twin by index
SET enable_seqscan = off;
SELECT count(*) AS probe_mismatches FROM generate_series(1, 10000, 97) g
WHERE (SELECT x::text FROM s x WHERE x.id = g) IS DISTINCT FROM (SELECT y::text FROM h y WHERE y.id = g);
RESET enable_seqscan;

-- skipping: a one-host query reads the vectors of that host only; the control, the same
-- rows without a key, reads every vector
CREATE TABLE u (LIKE s) USING pg_columnar;
INSERT INTO u SELECT * FROM h ORDER BY id;
SELECT count(*) AS stripes, count(sort_key) AS sorted FROM pgcol.sort_order('u');
CREATE FUNCTION vectors_read(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; out text := '';
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
        IF line ~ 'Vectors:' THEN out := out || trim(line); END IF;
    END LOOP;
    RETURN out;
END $$;
SELECT vectors_read($$SELECT count(*), avg(v) FROM s WHERE host = 'h3'$$);
SELECT vectors_read($$SELECT count(*), avg(v) FROM u WHERE host = 'h3'$$);
SELECT (SELECT (count(*), sum(v)) FROM s WHERE host = 'h3') = (SELECT (count(*), sum(v)) FROM h WHERE host = 'h3') AS same_answer;

-- rows of the current transaction, a rolled-back savepoint, an exception block
BEGIN;
INSERT INTO s SELECT 'h' || (g % 3), '2021-01-01 00:00+00'::timestamptz - g * interval '1 s', g, g FROM generate_series(10001, 10100) g;
SAVEPOINT a;
INSERT INTO s SELECT 'zz', now(), 0, g FROM generate_series(20001, 20010) g;
ROLLBACK TO a;
DO $$ BEGIN
    INSERT INTO s SELECT 'yy', now(), 0, g FROM generate_series(30001, 30010) g;
    RAISE EXCEPTION 'undo';
EXCEPTION WHEN OTHERS THEN NULL;
END $$;
SELECT count(*), min(id), max(id) FROM s WHERE id > 10000;
SET enable_seqscan = off;
SELECT id, host FROM s WHERE id IN (10001, 10100) ORDER BY id;
RESET enable_seqscan;
COMMIT;
-- the stripe they were written to is sorted (hosts h0, h1, h2, times descending), and each
-- row is found again by the TID the scan gives it
SELECT id, host FROM s WHERE id > 10000 LIMIT 2;
CREATE TABLE seen_late AS SELECT ctid AS tid, id FROM s WHERE id > 10000;
SET enable_seqscan = off;
SELECT count(*) AS tid_scan_mismatches FROM seen_late WHERE (SELECT x.id FROM s x WHERE x.ctid = seen_late.tid) IS DISTINCT FROM seen_late.id;
SELECT count(*) AS index_scan_mismatches FROM seen_late WHERE (SELECT x.ctid FROM s x WHERE x.id = seen_late.id) IS DISTINCT FROM seen_late.tid;
RESET enable_seqscan;

-- a key column renamed follows in the key; dropped, it leaves the key
ALTER TABLE s RENAME COLUMN host TO hostname;
SELECT key_of('s');
ALTER TABLE s ADD COLUMN extra int, DROP COLUMN t;
SELECT key_of('s');
ALTER TABLE s DROP COLUMN hostname;
SELECT key_of('s');

-- VACUUM FULL applies a changed key to the rows stored; indexes are rebuilt
ALTER TABLE u SET (pg_columnar.sort_key = 'host, t');
SELECT host, id FROM u LIMIT 2;
VACUUM FULL u;
SELECT count(*) AS stripes, count(sort_key) AS sorted FROM pgcol.sort_order('u');
SELECT host, id FROM u LIMIT 2;
SET enable_seqscan = off;
SELECT count(*) AS after_rewrite_mismatches FROM generate_series(1, 10000, 89) g
WHERE (SELECT x::text FROM u x WHERE x.host = 'h' || (g % 7) AND x.t = '2020-01-01 00:00+00'::timestamptz + (g / 7) * interval '1 min')
      IS DISTINCT FROM (SELECT y::text FROM h y WHERE y.id = g);
RESET enable_seqscan;
SELECT vectors_read($$SELECT count(*) FROM u WHERE host = 'h3'$$);

-- SET ACCESS METHOD with a key sorts the rewrite; leaving pg_columnar keeps the key unused
-- (a NOTICE), and coming back applies it
CREATE TABLE m (a int, b text);
INSERT INTO m SELECT g, 'b' || (g % 5) FROM generate_series(1, 3000) g;
ALTER TABLE m SET ACCESS METHOD pg_columnar, SET (pg_columnar.sort_key = 'b, a');
SELECT key_of('m');
SELECT a, b FROM m LIMIT 2;
SET client_min_messages = notice;
ALTER TABLE m SET ACCESS METHOD heap;
RESET client_min_messages;
SELECT key_of('m');
SELECT count(*) FROM m;
INSERT INTO m VALUES (0, 'b9');
ALTER TABLE m SET ACCESS METHOD pg_columnar;
SELECT a, b FROM m LIMIT 2;
-- a heap table made with the key (as Citus's rewrite makes one) becomes pg_columnar sorted
INSERT INTO h2 SELECT 4000 - g FROM generate_series(1, 3000) g;
ALTER TABLE h2 SET ACCESS METHOD pg_columnar;
SELECT count(*) AS not_in_key_order FROM (SELECT a, lag(a) OVER () AS prev FROM h2) x WHERE a < prev;

-- key columns of every sortable kind, NULLs last
CREATE TABLE k (i2 int2, f4 float4, d date, b bool, u uuid, c char(3), bin bytea, id int) USING pg_columnar
    WITH (pg_columnar.sort_key = 'f4, i2, d, b, u, c, bin');
INSERT INTO k SELECT CASE WHEN g % 5 = 0 THEN NULL ELSE g % 3 END,
    (ARRAY['NaN', '-0', '0', '1.5', '-Infinity', NULL]::float4[])[g % 6 + 1],
    '2020-01-01'::date + g % 4, g % 2 = 0,
    ('00000000-0000-0000-0000-00000000000' || (g % 9))::uuid, (ARRAY['a', 'b c', NULL])[g % 3 + 1], decode(lpad(to_hex(g % 4 + 10), 2, '0'), 'hex'), g
FROM generate_series(1, 2000) g;
SELECT f4, count(*) FROM (SELECT f4, row_number() OVER () AS r FROM k) x GROUP BY f4 ORDER BY min(r);
SELECT count(*) AS not_in_key_order FROM (
    SELECT f4, lag(f4) OVER () AS prev, i2, lag(i2) OVER () AS prev_i2 FROM k) x
WHERE prev IS NOT NULL AND f4 IS NOT NULL AND f4 < prev;
SELECT count(*) AS tids_not_insert_order FROM k WHERE ctid <> format('(%s,%s)', (id - 1) / 291, (id - 1) % 291 + 1)::tid;

-- the first statement of a session, before the library is loaded: the event trigger does the
-- utility hook's work, and the command list it rebuilds must outlive the trigger's call
-- (a build that clobbers freed memory, as 18-cassert's does, read freed memory here)
CREATE TABLE first_stmt (a int, b text);
INSERT INTO first_stmt SELECT g, 'b' || (g % 5) FROM generate_series(1, 3000) g;
\c
ALTER TABLE first_stmt SET ACCESS METHOD pg_columnar, SET (pg_columnar.sort_key = 'b, a');
SELECT key_of('first_stmt');
SELECT a, b FROM first_stmt LIMIT 2;

-- a row fetched by TID from a sorted stripe decodes its own vectors (a TID is the insert
-- order, the stripe is in key order): many rows of the primary key, hosts found through a
-- dimension table as TSBS's queries find them, are read by the custom scan, which skips by
-- the key (costed by page counts alone, an index scan won, and in TSBS's form took about 250
-- times as long); one row is read through the index.
SET pg_columnar.stripe_row_limit = 4096;
CREATE TABLE fetch_hosts (id int PRIMARY KEY, name text);
INSERT INTO fetch_hosts SELECT g, 'h' || g FROM generate_series(0, 49) g;
CREATE TABLE fetch_sorted (host int, id int, v float8) USING pg_columnar
    WITH (pg_columnar.sort_key = 'host, id');
INSERT INTO fetch_sorted SELECT g % 50, g, g FROM generate_series(1, 60000) g;
ALTER TABLE fetch_sorted ADD PRIMARY KEY (host, id);
ANALYZE fetch_sorted;
ANALYZE fetch_hosts;
-- (the scan's node only: how an initplan's value prints differs across the majors)
CREATE FUNCTION fetch_scan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF line ~ ' on fetch_sorted' THEN
      RETURN substring(line from '(Custom Scan \(Pgcol\w+\)|Index Only Scan|Index Scan|Bitmap Heap Scan|Seq Scan)');
    END IF;
  END LOOP;
  RETURN NULL;
END $$;
SELECT fetch_scan($$SELECT sum(v) FROM fetch_sorted
WHERE host IN (SELECT id FROM fetch_hosts WHERE name IN ('h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'h7', 'h8'))
  AND id BETWEEN 10000 AND 40000$$);
SELECT sum(v) FROM fetch_sorted
WHERE host IN (SELECT id FROM fetch_hosts WHERE name IN ('h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'h7', 'h8'))
  AND id BETWEEN 10000 AND 40000;
SELECT fetch_scan($$SELECT v FROM fetch_sorted WHERE host = 7 AND id = 10007$$);
SELECT v FROM fetch_sorted WHERE host = 7 AND id = 10007;

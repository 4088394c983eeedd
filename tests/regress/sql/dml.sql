-- DELETE, UPDATE, MERGE and row locks on pg_columnar tables: marks in pgcol.row_mark whose
-- visibility PostgreSQL's MVCC decides (an UPDATE deletes the row and inserts the new
-- version). Every result is compared with a heap twin's; concurrent sessions are in
-- tests/isolation.
CREATE EXTENSION pg_columnar;
SET pg_columnar.enable_custom_scan = on;
-- three stripes of 10,000 rows (10 vectors each), an index made before any delete
CREATE TABLE d (id int, host text, v float8, t timestamptz) USING pg_columnar;
CREATE TABLE d_heap (id int, host text, v float8, t timestamptz);
INSERT INTO d SELECT g, 'host_' || (g % 10), g * 0.5, '2016-01-01 00:00+00'::timestamptz + g * interval '10 s'
  FROM generate_series(1, 10000) g;
INSERT INTO d SELECT g, 'host_' || (g % 10), g * 0.5, '2016-01-01 00:00+00'::timestamptz + g * interval '10 s'
  FROM generate_series(10001, 20000) g;
INSERT INTO d SELECT g, 'host_' || (g % 10), g * 0.5, '2016-01-01 00:00+00'::timestamptz + g * interval '10 s'
  FROM generate_series(20001, 30000) g;
INSERT INTO d_heap SELECT * FROM d;
CREATE INDEX d_id ON d (id);
CREATE INDEX d_heap_id ON d_heap (id);
-- the rows of a query on both tables ('%s' is the table), as one text each, must be equal
CREATE FUNCTION same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; b text;
BEGIN
  EXECUTE format('SELECT string_agg(x::text, '';'' ORDER BY x::text) FROM (%s) x', format(q, 'd')) INTO a;
  EXECUTE format('SELECT string_agg(x::text, '';'' ORDER BY x::text) FROM (%s) x', format(q, 'd_heap')) INTO b;
  IF a IS DISTINCT FROM b THEN RETURN 'MISMATCH: ' || coalesce(left(a, 200), 'NULL') || ' vs ' || coalesce(left(b, 200), 'NULL'); END IF;
  RETURN 'same: ' || md5(coalesce(a, ''));
END $$;

-- DELETE, with RETURNING
DELETE FROM d WHERE id = 5 RETURNING id, host, v;
DELETE FROM d_heap WHERE id = 5;
SELECT count(*) FROM d;
SELECT * FROM d WHERE id BETWEEN 4 AND 6 ORDER BY id;
-- deleting it again deletes nothing (psql -q shows no command tag: the counts are selected)
WITH x AS (DELETE FROM d WHERE id = 5 RETURNING 1) SELECT count(*) AS deleted FROM x;
-- a rolled-back DELETE deletes nothing, and the transaction saw its own delete
BEGIN;
DELETE FROM d WHERE id <= 1000;
SELECT count(*) FROM d;
ROLLBACK;
SELECT count(*) FROM d;
-- a rolled-back savepoint takes exactly its deletes
BEGIN;
DELETE FROM d WHERE id BETWEEN 10 AND 19;
SAVEPOINT s;
DELETE FROM d WHERE id BETWEEN 20 AND 29;
SELECT count(*) FROM d WHERE id < 40;
ROLLBACK TO s;
SELECT count(*) FROM d WHERE id < 40;
COMMIT;
DELETE FROM d_heap WHERE id BETWEEN 10 AND 19;
-- an exception block: the failed block's delete is undone
DO $$
BEGIN
  BEGIN
    DELETE FROM d WHERE id BETWEEN 100 AND 199;
    PERFORM 1 / 0;
  EXCEPTION WHEN division_by_zero THEN NULL;
  END;
  DELETE FROM d WHERE id = 200;
END $$;
DELETE FROM d_heap WHERE id = 200;
SELECT same('SELECT id FROM %s WHERE id < 300');
-- one statement meeting a row twice deletes it once
WITH x AS (DELETE FROM d USING (VALUES (300), (300), (301)) AS v(x) WHERE d.id = v.x RETURNING 1)
  SELECT count(*) AS deleted FROM x;
DELETE FROM d_heap WHERE id IN (300, 301);
-- a cursor keeps its snapshot while rows go
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM d WHERE id BETWEEN 400 AND 402 ORDER BY id;
DELETE FROM d WHERE id = 401;
FETCH ALL FROM c;
SELECT id FROM d WHERE id BETWEEN 400 AND 402 ORDER BY id;
COMMIT;
DELETE FROM d_heap WHERE id = 401;
-- deletes spread over the stripes, by a predicate the custom scan evaluates
DELETE FROM d WHERE id % 97 = 0 OR (id > 25000 AND v < 12600);
DELETE FROM d_heap WHERE id % 97 = 0 OR (id > 25000 AND v < 12600);
SELECT sum(deleted_rows), count(*) FILTER (WHERE deleted_rows > 0) AS stripes_with_deletes FROM pgcol.stripes('d');

-- every read path returns the heap twin's rows
SELECT same('SELECT * FROM %s');
SELECT same('SELECT count(*), sum(id), min(v), max(t) FROM %s');
SELECT same('SELECT host, count(*), avg(v) FROM %s GROUP BY host');
SELECT same('SELECT * FROM %s WHERE id BETWEEN 24990 AND 25300');
SELECT same('SELECT id FROM %s ORDER BY t DESC LIMIT 5');
SELECT same('SELECT DISTINCT ON (host) host, id FROM %s ORDER BY host, t DESC');
SET pg_columnar.enable_custom_scan = off;
SELECT same('SELECT * FROM %s');
SELECT same('SELECT count(*), sum(id) FROM %s WHERE id > 25000');
RESET pg_columnar.enable_custom_scan;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM d WHERE id BETWEEN 90 AND 110;
SELECT same('SELECT * FROM %s WHERE id BETWEEN 90 AND 110');
SELECT same('SELECT * FROM %s WHERE id BETWEEN 24990 AND 25300');
SET enable_indexscan = off;
SET enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT * FROM d WHERE id BETWEEN 90 AND 110;
SELECT same('SELECT * FROM %s WHERE id BETWEEN 90 AND 110');
SELECT same('SELECT * FROM %s WHERE id BETWEEN 24990 AND 25300');
RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_bitmapscan;
-- TID and TID range scans find no deleted row
SELECT count(*) FROM d WHERE ctid = (SELECT ctid FROM d WHERE id = 6);
SELECT id FROM d WHERE ctid = '(0,5)';
SELECT count(*) FROM d WHERE ctid >= '(0,1)' AND ctid < '(0,20)';
SELECT count(*) FROM d_heap WHERE id < 20;
-- parallel plans
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT same('SELECT count(*), sum(id), max(v) FROM %s');
SELECT same('SELECT host, count(*) FROM %s WHERE id > 100 GROUP BY host');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
-- ANALYZE counts the live rows only
ANALYZE d;
SELECT reltuples = (SELECT count(*) FROM d_heap) AS live_rows_counted FROM pg_class WHERE relname = 'd';

-- answers from metadata: a table with deleted rows is not scanned whole. Only the vector
-- holding the deleted row is read (control: the same table before the delete reads none).
CREATE TABLE m (id int, v float8) USING pg_columnar;
INSERT INTO m SELECT g, g FROM generate_series(1, 10000) g;
CREATE FUNCTION answered(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
    IF line ~ 'Aggregated|Answered|Vectors Decoded' THEN RETURN NEXT line; END IF;
  END LOOP;
END $$;
SELECT answered('SELECT count(*), max(v) FROM m');
DELETE FROM m WHERE id = 5000;
SELECT count(*), max(v), min(v) FROM m;
SELECT answered('SELECT count(*), max(v) FROM m');
-- the transaction that deleted it sees it deleted; others see it until commit
BEGIN;
DELETE FROM m WHERE id = 10000;
SELECT count(*), max(v) FROM m;
ROLLBACK;
SELECT count(*), max(v) FROM m;

-- triggers: BEFORE DELETE (which locks the row), AFTER DELETE with OLD and a transition table
CREATE TABLE log (what text, id int);
CREATE FUNCTION before_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.id = 1001 THEN RETURN NULL; END IF;  -- keeps that row
  INSERT INTO log VALUES ('before', OLD.id);
  RETURN OLD;
END $$;
CREATE FUNCTION after_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO log VALUES ('after ' || (SELECT count(*) FROM d WHERE id BETWEEN 1000 AND 1003), OLD.id);
  RETURN NULL;
END $$;
CREATE FUNCTION after_del_stmt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO log SELECT 'gone', id FROM gone;
  RETURN NULL;
END $$;
CREATE TRIGGER d_before BEFORE DELETE ON d FOR EACH ROW EXECUTE FUNCTION before_del();
CREATE TRIGGER d_after AFTER DELETE ON d FOR EACH ROW EXECUTE FUNCTION after_del();
CREATE TRIGGER d_after_stmt AFTER DELETE ON d REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION after_del_stmt();
DELETE FROM d WHERE id BETWEEN 1000 AND 1002;
SELECT * FROM log ORDER BY what, id;
DELETE FROM d_heap WHERE id IN (1000, 1002);
DROP TRIGGER d_before ON d;
DROP TRIGGER d_after ON d;
DROP TRIGGER d_after_stmt ON d;
SELECT same('SELECT id FROM %s WHERE id BETWEEN 990 AND 1010');

-- row locks, every mode; a row locked by this transaction can be deleted by it
SELECT id FROM d WHERE id = 2000 FOR KEY SHARE;
SELECT id FROM d WHERE id = 2000 FOR SHARE;
SELECT id FROM d WHERE id = 2000 FOR NO KEY UPDATE;
SELECT id FROM d WHERE id = 2000 FOR UPDATE NOWAIT;
SELECT id FROM d WHERE id = 2001 FOR UPDATE SKIP LOCKED;
BEGIN;
SELECT id FROM d WHERE id BETWEEN 2000 AND 2002 ORDER BY id FOR UPDATE;
DELETE FROM d WHERE id = 2001;
SELECT id FROM d WHERE id BETWEEN 2000 AND 2002 ORDER BY id FOR UPDATE;
COMMIT;
DELETE FROM d_heap WHERE id = 2001;

-- foreign keys: ON DELETE CASCADE from a heap table into a pg_columnar one, and a
-- pg_columnar row deleted while it references a row
CREATE TABLE parent (id int PRIMARY KEY);
INSERT INTO parent SELECT g FROM generate_series(1, 10) g;
CREATE TABLE child (pid int REFERENCES parent ON DELETE CASCADE, n int) USING pg_columnar;
INSERT INTO child SELECT 1 + g % 10, g FROM generate_series(1, 1000) g;
DELETE FROM parent WHERE id = 3;
SELECT count(*), count(*) FILTER (WHERE pid = 3) FROM child;
DELETE FROM child WHERE pid = 4;
DELETE FROM parent WHERE id = 4;
SELECT count(*) FROM child;

-- a sorted table: the rows keep their TIDs, deletes find them through the index
CREATE TABLE s (host text, t int, v int) USING pg_columnar WITH (pg_columnar.sort_key = 'host, t');
CREATE TABLE s_heap (host text, t int, v int);
CREATE INDEX s_v ON s (v);
INSERT INTO s SELECT 'h' || (g % 7), g / 7, g FROM generate_series(1, 5000) g;
INSERT INTO s_heap SELECT 'h' || (g % 7), g / 7, g FROM generate_series(1, 5000) g;
DELETE FROM s WHERE v % 11 = 0;
DELETE FROM s_heap WHERE v % 11 = 0;
SET enable_seqscan = off;
SELECT (SELECT string_agg(v::text, ',' ORDER BY v) FROM s WHERE v BETWEEN 100 AND 200)
     = (SELECT string_agg(v::text, ',' ORDER BY v) FROM s_heap WHERE v BETWEEN 100 AND 200) AS index_same;
RESET enable_seqscan;
SELECT (SELECT string_agg(host || t || '/' || v, ',' ORDER BY v) FROM s)
     = (SELECT string_agg(host || t || '/' || v, ',' ORDER BY v) FROM s_heap) AS scan_same;

-- VACUUM FULL and a change of access method keep the deletes; TRUNCATE forgets the marks
VACUUM FULL d;
SELECT same('SELECT * FROM %s');
SELECT sum(deleted_rows) FROM pgcol.stripes('d');
ALTER TABLE m SET ACCESS METHOD heap;
SELECT count(*), max(v) FROM m;
ALTER TABLE m SET ACCESS METHOD pg_columnar;
SELECT count(*), max(v) FROM m;
CREATE TEMP TABLE marks_before AS SELECT count(*) AS n FROM pgcol.row_mark;
TRUNCATE s;
SELECT (SELECT n FROM marks_before) - count(*) AS marks_forgotten, (SELECT count(*) FROM generate_series(1, 5000) g WHERE g % 11 = 0) AS deleted_in_s
  FROM pgcol.row_mark;
INSERT INTO s VALUES ('a', 1, 1);
SELECT * FROM s;
DROP TABLE s;

-- the catalog cannot be changed by SQL
INSERT INTO pgcol.row_mark VALUES (1, 1, 4);
DELETE FROM pgcol.row_mark;
REFRESH MATERIALIZED VIEW pgcol.row_mark;

-- UPDATE, with RETURNING; the new version is a new row (a new TID) that every index finds
UPDATE d SET v = v + 0.25, host = 'moved' WHERE id BETWEEN 3000 AND 3004 RETURNING id, host, v;
UPDATE d_heap SET v = v + 0.25, host = 'moved' WHERE id BETWEEN 3000 AND 3004;
SELECT (SELECT ctid FROM d WHERE id = 3000) <> '(10,90)' AS moved_tid;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT same('SELECT * FROM %s WHERE id BETWEEN 2990 AND 3010');
SET enable_indexscan = off;
SET enable_bitmapscan = on;
SELECT same('SELECT * FROM %s WHERE id BETWEEN 2990 AND 3010');
RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_bitmapscan;
-- by an index scan, twice in one transaction, a rolled-back savepoint, an exception block
SET enable_seqscan = off;
BEGIN;
UPDATE d SET v = 1 WHERE id = 3100;
UPDATE d SET v = v + 1 WHERE id = 3100;
SAVEPOINT s;
UPDATE d SET v = 100 WHERE id = 3100;
ROLLBACK TO s;
SELECT id, v FROM d WHERE id = 3100;
COMMIT;
RESET enable_seqscan;
UPDATE d_heap SET v = 2 WHERE id = 3100;
DO $$
BEGIN
  BEGIN
    UPDATE d SET v = -1 WHERE id BETWEEN 3200 AND 3299;
    PERFORM 1 / 0;
  EXCEPTION WHEN division_by_zero THEN NULL;
  END;
  UPDATE d SET v = -2 WHERE id = 3300;
END $$;
UPDATE d_heap SET v = -2 WHERE id = 3300;
SELECT same('SELECT * FROM %s WHERE id BETWEEN 3090 AND 3310');
-- one statement meeting a row twice updates it once; UPDATE ... FROM
WITH x AS (UPDATE d SET v = v + 1 FROM (VALUES (3400), (3400), (3401)) AS w(x) WHERE d.id = w.x RETURNING 1)
  SELECT count(*) AS updated FROM x;
UPDATE d_heap SET v = v + 1 WHERE id IN (3400, 3401);
-- triggers: BEFORE UPDATE changes the new row, AFTER UPDATE sees OLD, NEW and the
-- transition tables; the new versions still go into one stripe, not one per row
CREATE FUNCTION before_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.host := NEW.host || '+'; RETURN NEW; END $$;
CREATE FUNCTION after_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO log SELECT 'upd ' || o.v || '->' || n.v, n.id FROM old_rows o JOIN new_rows n USING (id);
  RETURN NULL;
END $$;
CREATE TRIGGER d_before_upd BEFORE UPDATE ON d FOR EACH ROW EXECUTE FUNCTION before_upd();
CREATE TRIGGER d_after_upd AFTER UPDATE ON d REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION after_upd();
TRUNCATE log;
SELECT count(*) AS stripes_before FROM pgcol.stripes('d') \gset
UPDATE d SET v = v * 2 WHERE id BETWEEN 3500 AND 3599;
SELECT count(*) - :stripes_before AS new_stripes FROM pgcol.stripes('d');
SELECT count(*), min(what), max(what) FROM log;
SELECT DISTINCT host FROM d WHERE id BETWEEN 3500 AND 3599 ORDER BY host;
DROP TRIGGER d_before_upd ON d;
DROP TRIGGER d_after_upd ON d;
UPDATE d_heap SET v = v * 2, host = host || '+' WHERE id BETWEEN 3500 AND 3599;
SELECT same('SELECT * FROM %s WHERE id BETWEEN 3400 AND 3700');
-- MERGE: update, delete and insert
MERGE INTO d USING (SELECT g AS id FROM generate_series(3800, 3830) g UNION ALL SELECT 40000) AS src ON d.id = src.id
  WHEN MATCHED AND d.id % 2 = 0 THEN UPDATE SET v = 0
  WHEN MATCHED THEN DELETE
  WHEN NOT MATCHED THEN INSERT VALUES (src.id, 'merged', 1, '2017-01-01 00:00+00');
MERGE INTO d_heap AS d USING (SELECT g AS id FROM generate_series(3800, 3830) g UNION ALL SELECT 40000) AS src ON d.id = src.id
  WHEN MATCHED AND d.id % 2 = 0 THEN UPDATE SET v = 0
  WHEN MATCHED THEN DELETE
  WHEN NOT MATCHED THEN INSERT VALUES (src.id, 'merged', 1, '2017-01-01 00:00+00');
SELECT same('SELECT * FROM %s WHERE id BETWEEN 3790 AND 3840 OR id = 40000');
-- ON UPDATE CASCADE from a heap table into a pg_columnar one
CREATE TABLE uparent (id int PRIMARY KEY);
INSERT INTO uparent SELECT g FROM generate_series(1, 5) g;
CREATE TABLE uchild (pid int REFERENCES uparent ON UPDATE CASCADE, n int) USING pg_columnar;
INSERT INTO uchild SELECT 1 + g % 5, g FROM generate_series(1, 100) g;
UPDATE uparent SET id = 50 WHERE id = 5;
SELECT pid, count(*) FROM uchild GROUP BY pid ORDER BY pid;
-- an UPDATE that moves rows between pg_columnar partitions
CREATE TABLE p (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (100) USING pg_columnar;
CREATE TABLE p2 PARTITION OF p FOR VALUES FROM (100) TO (200) USING pg_columnar;
INSERT INTO p SELECT g, g FROM generate_series(0, 199) g;
UPDATE p SET k = k + 100 WHERE k BETWEEN 10 AND 19;
SELECT tableoid::regclass, count(*), sum(v) FROM p GROUP BY 1 ORDER BY 1;
-- a sorted table
CREATE TABLE su (host text, t int, v int) USING pg_columnar WITH (pg_columnar.sort_key = 'host, t');
INSERT INTO su SELECT 'h' || (g % 5), g, g FROM generate_series(1, 3000) g;
CREATE INDEX su_v ON su (v);
UPDATE su SET t = -t WHERE v % 7 = 0;
SET enable_seqscan = off;
SELECT count(*), sum(t) FROM su WHERE v BETWEEN 1 AND 3000;
RESET enable_seqscan;
SELECT count(*), sum(t) FROM su;
SELECT count(*) FILTER (WHERE t < 0) AS negated, (SELECT count(*) FROM generate_series(1, 3000) g WHERE g % 7 = 0) AS expected FROM su;

-- randomized: deletes, updates and inserts by random predicates, some rolled back, compared
-- after every step
CREATE FUNCTION random_changes(n int) RETURNS TABLE (steps int, mismatches int) LANGUAGE plpgsql AS $$
DECLARE pred text; stmt text; r text; bad int := 0; lo int; roll boolean;
BEGIN
  PERFORM setseed(0.4242);
  FOR i IN 1 .. n LOOP
    lo := floor(random() * 30000)::int;
    pred := (ARRAY[
      format('id BETWEEN %s AND %s', lo, lo + floor(random() * 50)::int),
      format('id %% %s = %s', 50 + floor(random() * 200)::int, floor(random() * 50)::int),
      format('host = ''host_%s'' AND id BETWEEN %s AND %s', floor(random() * 10)::int, lo, lo + 2000),
      format('v < %s AND id > %s', lo / 2, lo)])[1 + floor(random() * 4)::int];
    roll := random() < 0.3;
    stmt := (ARRAY['DELETE FROM %s WHERE ', 'UPDATE %s SET v = v + 1, host = host || ''u'' WHERE ',
                   'UPDATE %s SET id = id + 30000 WHERE ',
                   'INSERT INTO %s SELECT id + 60000, host, v, t FROM %1$s WHERE '])[1 + floor(random() * 4)::int];
    BEGIN
      EXECUTE format(stmt, 'd') || pred;
      EXECUTE format(stmt, 'd_heap') || pred;
      IF roll THEN RAISE SQLSTATE 'P0002'; END IF;
    EXCEPTION WHEN no_data_found THEN NULL;
    END;
    r := same('SELECT count(*), sum(id), sum(v), count(DISTINCT host) FROM %s');
    IF r LIKE 'MISMATCH%' THEN bad := bad + 1; RAISE WARNING 'step % (%): %', i, pred, r; END IF;
    IF i % 10 = 0 THEN
      r := same('SELECT id FROM %s WHERE ' || replace(pred, '%', '%%'));
      IF r LIKE 'MISMATCH%' THEN bad := bad + 1; RAISE WARNING 'step % (%): %', i, pred, r; END IF;
    END IF;
  END LOOP;
  RETURN QUERY SELECT n, bad;
END $$;
SELECT * FROM random_changes(80);
SELECT count(*) AS rows_left FROM d;
SELECT same('SELECT * FROM %s');
SET enable_seqscan = off;
SELECT same('SELECT * FROM %s WHERE id BETWEEN 5000 AND 15000');
RESET enable_seqscan;
-- a transaction that changes rows holds its locks on the catalogs it read and wrote until it
-- ends (storage::open_catalog), as PostgreSQL's own catalog writers do; the next one starts
-- with none
BEGIN;
DELETE FROM d WHERE id = 5001;
SELECT c.relname, l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
 WHERE l.pid = pg_backend_pid() AND c.relnamespace = 'pgcol'::regnamespace AND c.relname LIKE 'row_mark%'
 ORDER BY 1, 2;
ROLLBACK;
SELECT count(*) AS catalog_locks FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
 WHERE l.pid = pg_backend_pid() AND c.relnamespace = 'pgcol'::regnamespace;

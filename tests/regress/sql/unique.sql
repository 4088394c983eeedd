-- Unique indexes, primary keys, INSERT ... ON CONFLICT, foreign keys to and from pg_columnar
-- tables, and replica identity. Every result is compared with a heap twin's; concurrent
-- sessions (a second session's insert of a key the first holds in memory, upserts of one
-- key) are in tests/isolation.
CREATE EXTENSION pg_columnar;
CREATE TABLE u (id int PRIMARY KEY, k text UNIQUE, v int) USING pg_columnar;
CREATE TABLE u_heap (id int PRIMARY KEY, k text UNIQUE, v int);
CREATE FUNCTION same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; b text;
BEGIN
  EXECUTE format('SELECT string_agg(x::text, '';'' ORDER BY x::text) FROM (%s) x', format(q, 'u')) INTO a;
  EXECUTE format('SELECT string_agg(x::text, '';'' ORDER BY x::text) FROM (%s) x', format(q, 'u_heap')) INTO b;
  IF a IS DISTINCT FROM b THEN RETURN 'MISMATCH: ' || coalesce(left(a, 300), 'NULL') || ' vs ' || coalesce(left(b, 300), 'NULL'); END IF;
  RETURN 'same: ' || md5(coalesce(a, ''));
END $$;
-- runs statement q on both tables ('%s' is the table); an error is caught, and must be the
-- same on both
CREATE FUNCTION on_both(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text := 'ok'; b text := 'ok';
BEGIN
  BEGIN EXECUTE format(q, 'u'); EXCEPTION WHEN OTHERS THEN a := SQLSTATE || ' ' || SQLERRM; END;
  BEGIN EXECUTE format(q, 'u_heap'); EXCEPTION WHEN OTHERS THEN b := SQLSTATE || ' ' || replace(SQLERRM, 'u_heap', 'u'); END;
  IF a IS DISTINCT FROM b THEN RETURN 'MISMATCH: ' || a || ' vs ' || b; END IF;
  RETURN a;
END $$;
SELECT on_both($$INSERT INTO %s SELECT g, 'k' || g, g FROM generate_series(1, 20000) g$$);
-- duplicates: of a committed row, within one statement, within one COPY batch, of a row
-- this transaction inserted earlier (still in memory), and through an exception block
SELECT on_both($$INSERT INTO %s VALUES (5, 'new', 0)$$);
SELECT on_both($$INSERT INTO %s VALUES (20001, 'a', 0), (20001, 'b', 0)$$);
SELECT on_both($$INSERT INTO %s SELECT g %% 3 + 30000, 'c' || g, g FROM generate_series(1, 5000) g$$);
SELECT on_both($$INSERT INTO %s VALUES (20002, 'k7', 0)$$);
BEGIN;
SELECT on_both($$INSERT INTO %s VALUES (20003, 'x', 0)$$);
SELECT on_both($$INSERT INTO %s VALUES (20003, 'y', 0)$$);
ROLLBACK;
DO $$
BEGIN
  INSERT INTO u VALUES (20004, 'kept', 0);
  BEGIN
    INSERT INTO u VALUES (20005, 'lost', 0), (20004, 'dup', 0);
  EXCEPTION WHEN unique_violation THEN RAISE NOTICE 'caught: %', SQLERRM;
  END;
END $$;
INSERT INTO u_heap VALUES (20004, 'kept', 0);
SELECT same('SELECT * FROM %s');
-- a row deleted (or updated away) frees its key, in the same transaction too
BEGIN;
SELECT on_both($$DELETE FROM %s WHERE id = 10$$);
SELECT on_both($$INSERT INTO %s VALUES (10, 'k10', -10)$$);
SELECT on_both($$UPDATE %s SET k = 'k11-moved' WHERE id = 11$$);
SELECT on_both($$INSERT INTO %s VALUES (20011, 'k11', 11)$$);
COMMIT;
-- a delete that a savepoint, an exception block or the transaction takes back frees no key:
-- a unique check answers "deleted by this transaction" from what the transaction deleted
-- (am::fetch) only while the delete stands
BEGIN;
SELECT on_both($$UPDATE %s SET v = v + 1 WHERE id = 30$$);
SAVEPOINT s;
SELECT on_both($$DELETE FROM %s WHERE id = 31$$);
ROLLBACK TO SAVEPOINT s;
SELECT on_both($$INSERT INTO %s VALUES (31, 'again31', 0)$$);
SELECT on_both($$INSERT INTO %s VALUES (30, 'again30', 0)$$);
SAVEPOINT t;
SELECT on_both($$DELETE FROM %s WHERE id = 32$$);
RELEASE SAVEPOINT t;
SELECT on_both($$INSERT INTO %s VALUES (32, 'k32', 32)$$);
COMMIT;
DO $$
BEGIN
  BEGIN
    DELETE FROM u WHERE id = 33;
    DELETE FROM u_heap WHERE id = 33;
    RAISE EXCEPTION 'take it back';
  EXCEPTION WHEN raise_exception THEN NULL;
  END;
END $$;
SELECT on_both($$INSERT INTO %s VALUES (33, 'again33', 0)$$);
BEGIN;
SELECT on_both($$DELETE FROM %s WHERE id = 34$$);
ROLLBACK;
SELECT on_both($$INSERT INTO %s VALUES (34, 'again34', 0)$$);
SELECT same('SELECT * FROM %s WHERE id BETWEEN 29 AND 35');
-- an UPDATE that collides, one that shifts every key (checked row by row, as heap does),
-- and one that leaves keys alone
SELECT on_both($$UPDATE %s SET id = 12 WHERE id = 13$$);
SELECT on_both($$UPDATE %s SET id = id + 1 WHERE id BETWEEN 100 AND 200$$);
SELECT on_both($$UPDATE %s SET id = -id WHERE id BETWEEN 100 AND 200$$);
SELECT on_both($$UPDATE %s SET v = v + 1 WHERE id < 1000$$);
SELECT same('SELECT * FROM %s');
-- ON CONFLICT DO NOTHING, with and without a target, and RETURNING
SELECT on_both($$INSERT INTO %s VALUES (1, 'zzz', 0) ON CONFLICT DO NOTHING$$);
SELECT on_both($$INSERT INTO %s VALUES (1, 'zzz', 0), (40000, 'k40000', 0) ON CONFLICT (id) DO NOTHING$$);
SELECT on_both($$INSERT INTO %s VALUES (40001, 'k2', 0) ON CONFLICT (id) DO NOTHING$$);
WITH x AS (INSERT INTO u VALUES (2, 'q', 0), (40002, 'q', 0) ON CONFLICT DO NOTHING RETURNING id) SELECT * FROM x;
INSERT INTO u_heap VALUES (2, 'q', 0), (40002, 'q', 0) ON CONFLICT DO NOTHING;
-- DO UPDATE: excluded, a WHERE, ON CONSTRAINT, RETURNING, and a batch of 10,000 rows half
-- of which conflict
SELECT on_both($$INSERT INTO %1$s VALUES (3, 'k3', 100) ON CONFLICT (id) DO UPDATE SET v = %1$s.v + excluded.v$$);
SELECT on_both($$INSERT INTO %1$s VALUES (4, 'k4', 100) ON CONFLICT (id) DO UPDATE SET v = excluded.v WHERE %1$s.v > 1000$$);
SELECT on_both($$INSERT INTO %1$s VALUES (6, 'k6', 7) ON CONFLICT ON CONSTRAINT %1$s_k_key DO UPDATE SET v = -excluded.v$$);
WITH x AS (INSERT INTO u VALUES (7, 'k7', 0), (40003, 'k40003', 0) ON CONFLICT (id) DO UPDATE SET v = 777 RETURNING id, v) SELECT * FROM x ORDER BY id;
INSERT INTO u_heap VALUES (7, 'k7', 0), (40003, 'k40003', 0) ON CONFLICT (id) DO UPDATE SET v = 777;
SELECT on_both($$INSERT INTO %1$s SELECT g * 2, 'b' || g, g FROM generate_series(5001, 15000) g
  ON CONFLICT (id) DO UPDATE SET v = %1$s.v * 2, k = excluded.k$$);
-- a key proposed twice in one command, and a conflict on the other unique index
SELECT on_both($$INSERT INTO %s VALUES (8, 'a8', 0), (8, 'b8', 0) ON CONFLICT (id) DO UPDATE SET v = 1$$);
SELECT on_both($$INSERT INTO %s VALUES (50000, 'k9', 0) ON CONFLICT (id) DO UPDATE SET v = 1$$);
SELECT same('SELECT * FROM %s');
-- upserts inside a rolled-back savepoint, then in an exception block that fails
BEGIN;
INSERT INTO u VALUES (60000, 'sp', 1) ON CONFLICT (id) DO UPDATE SET v = 2;
SAVEPOINT s;
INSERT INTO u VALUES (60000, 'sp', 1), (60001, 'sp1', 1) ON CONFLICT (id) DO UPDATE SET v = 3;
ROLLBACK TO s;
INSERT INTO u VALUES (60000, 'sp', 1) ON CONFLICT (id) DO UPDATE SET v = u.v + 10;
COMMIT;
INSERT INTO u_heap VALUES (60000, 'sp', 11);
SELECT same('SELECT * FROM %s WHERE id >= 60000');
-- MERGE on the key
SELECT on_both($$MERGE INTO %1$s t USING (SELECT g AS id FROM generate_series(19990, 20010) g) s ON t.id = s.id
  WHEN MATCHED THEN UPDATE SET v = -1 WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'm' || s.id, 0)$$);
SELECT same('SELECT * FROM %s');
-- every read path agrees after all this
SET enable_seqscan = off;
SELECT same('SELECT * FROM %s WHERE id BETWEEN 9000 AND 11000');
SELECT same($$SELECT * FROM %s WHERE k IN ('k5', 'b6000', 'k40003', 'zzz')$$);
-- an UPDATE through a nested loop over the primary key (the index scan rescanned per outer
-- row) keeps its new versions buffered until it ends: one new stripe, not one per row
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) UPDATE u SET v = v + 1 WHERE id IN (SELECT g * 7 FROM generate_series(1, 300) g);
SELECT count(*) AS stripes_before FROM pgcol.stripes('u') \gset
SELECT on_both($$UPDATE %s SET v = v + 1 WHERE id IN (SELECT g * 7 FROM generate_series(1, 300) g)$$);
SELECT count(*) - :stripes_before AS new_stripes FROM pgcol.stripes('u');
SELECT same('SELECT * FROM %s');
RESET ALL;
-- a unique index built over a table with deleted duplicates: a deleted row does not count
CREATE TABLE dups (a int) USING pg_columnar;
INSERT INTO dups SELECT g % 1000 FROM generate_series(1, 2000) g;
-- (which duplicate the sort meets first differs between majors: no DETAIL)
\set VERBOSITY terse
CREATE UNIQUE INDEX dups_a ON dups (a);
\set VERBOSITY default
DELETE FROM dups WHERE ctid IN (SELECT min(ctid) FROM dups GROUP BY a);
CREATE UNIQUE INDEX dups_a ON dups (a);
SET enable_seqscan = off;
SELECT count(*), count(DISTINCT a) FROM dups WHERE a >= 0;
RESET enable_seqscan;
INSERT INTO dups VALUES (5);
-- deferred uniqueness: a duplicate resolved before commit is fine, one left is not
CREATE TABLE d (a int UNIQUE DEFERRABLE INITIALLY DEFERRED) USING pg_columnar;
INSERT INTO d SELECT generate_series(1, 10);
BEGIN;
UPDATE d SET a = a + 1;
COMMIT;
SELECT min(a), max(a), count(*) FROM d;
BEGIN;
INSERT INTO d VALUES (5);
COMMIT;
-- a deferrable key of a by-reference type: its check at the statement's end or at commit
-- reads the new row's values after it has ended the fetch that found them (they were once
-- read from freed memory: a wrong "failed to re-find tuple", or a crash)
CREATE TABLE dt (id int, k text UNIQUE DEFERRABLE INITIALLY IMMEDIATE, n numeric UNIQUE DEFERRABLE INITIALLY DEFERRED) USING pg_columnar;
INSERT INTO dt SELECT g, 'key number ' || g, g * 1.5 FROM generate_series(1, 1000) g;
INSERT INTO dt VALUES (1001, 'key number 7', 0);
BEGIN;
INSERT INTO dt VALUES (1002, 'key number 1002', 15);
UPDATE dt SET n = n + 1.5 WHERE id BETWEEN 10 AND 1000;
COMMIT;
SELECT count(*), count(DISTINCT k), count(DISTINCT n), min(n), max(n) FROM dt;
BEGIN;
INSERT INTO dt VALUES (1003, 'key number 1003', 16.5);
COMMIT;
-- partial and expression unique indexes, and ON CONFLICT inferring them
CREATE TABLE p (id int, host text, active bool) USING pg_columnar;
CREATE UNIQUE INDEX p_active_host ON p (lower(host)) WHERE active;
INSERT INTO p VALUES (1, 'A', true), (2, 'a', false), (3, 'B', true);
INSERT INTO p VALUES (4, 'a', true);
INSERT INTO p VALUES (4, 'b', true) ON CONFLICT (lower(host)) WHERE active DO UPDATE SET id = excluded.id * 10;
SELECT * FROM p ORDER BY id;
-- foreign keys to a pg_columnar table, from heap and from pg_columnar tables
CREATE TABLE parent (id int PRIMARY KEY, name text) USING pg_columnar;
INSERT INTO parent SELECT g, 'p' || g FROM generate_series(1, 100) g;
CREATE TABLE child_heap (id int, pid int REFERENCES parent ON DELETE CASCADE ON UPDATE CASCADE);
CREATE TABLE child_col (id int, pid int REFERENCES parent) USING pg_columnar;
INSERT INTO child_heap SELECT g, g % 10 + 1 FROM generate_series(1, 50) g;
INSERT INTO child_col SELECT g, g % 10 + 11 FROM generate_series(1, 50) g;
INSERT INTO child_heap VALUES (99, 1000);
INSERT INTO child_col VALUES (99, 1000);
DELETE FROM parent WHERE id = 11;
UPDATE parent SET id = 1001 WHERE id = 1;
DELETE FROM parent WHERE id = 2;
UPDATE parent SET name = 'renamed' WHERE id = 12;
SELECT pid, count(*) FROM child_heap GROUP BY pid ORDER BY pid;
SELECT count(*) FROM child_col;
-- a key added to a loaded table, and replica identity through it
ALTER TABLE dups ADD PRIMARY KEY USING INDEX dups_a;
ALTER TABLE dups REPLICA IDENTITY USING INDEX dups_a;
SELECT relreplident FROM pg_class WHERE oid = 'dups'::regclass;
-- no reservation of row numbers outlives its transaction
SELECT count(*) AS reservations FROM pgcol.row_reservation;
-- a row a unique check or ON CONFLICT finds is stored without its values, which are read
-- when asked: a unique check reads none, ON CONFLICT the columns up to the index's last (a
-- key on the first and third columns reads three), a deferred unique constraint's check at
-- commit none; the results equal a heap twin's
CREATE TABLE lazy (t text, f float8, id int, j jsonb, n numeric, PRIMARY KEY (t, id)) USING pg_columnar;
CREATE TABLE lazy_heap (LIKE lazy INCLUDING ALL);
INSERT INTO lazy SELECT 'v' || g, g / 4.0, g, jsonb_build_object('g', g), g * 1.5 FROM generate_series(1, 3000) g;
INSERT INTO lazy_heap SELECT * FROM lazy;
CREATE TEMP TABLE d0 AS SELECT * FROM pgcol.kept_stripes();
INSERT INTO lazy VALUES ('v7', 0, 7, NULL, 0);
SELECT s.rows_deferred - d.rows_deferred AS deferred, s.deferred_columns_read - d.deferred_columns_read AS columns_read FROM pgcol.kept_stripes() s, d0 d;
INSERT INTO lazy SELECT 'v' || g, 0, g, NULL, 0 FROM generate_series(10, 19) g ON CONFLICT DO NOTHING;
SELECT s.rows_deferred - d.rows_deferred AS deferred, s.deferred_columns_read - d.deferred_columns_read AS columns_read FROM pgcol.kept_stripes() s, d0 d;
INSERT INTO lazy_heap SELECT 'v' || g, 0, g, NULL, 0 FROM generate_series(10, 19) g ON CONFLICT DO NOTHING;
INSERT INTO lazy SELECT 'v' || g, -g, g, jsonb_build_object('new', g), g FROM generate_series(2995, 3004) g
  ON CONFLICT (t, id) DO UPDATE SET j = lazy.j || excluded.j, n = lazy.n + excluded.n RETURNING *;
INSERT INTO lazy_heap SELECT 'v' || g, -g, g, jsonb_build_object('new', g), g FROM generate_series(2995, 3004) g
  ON CONFLICT (t, id) DO UPDATE SET j = lazy_heap.j || excluded.j, n = lazy_heap.n + excluded.n;
SELECT count(*) AS differing FROM ((SELECT * FROM lazy EXCEPT ALL SELECT * FROM lazy_heap) UNION ALL (SELECT * FROM lazy_heap EXCEPT ALL SELECT * FROM lazy)) x;
CREATE TABLE lazy_deferred (id int UNIQUE DEFERRABLE INITIALLY DEFERRED, v text) USING pg_columnar;
INSERT INTO lazy_deferred SELECT g, 'v' || g FROM generate_series(1, 100) g;
CREATE TEMP TABLE d1 AS SELECT * FROM pgcol.kept_stripes();
BEGIN;
INSERT INTO lazy_deferred VALUES (5, 'again');
UPDATE lazy_deferred SET id = 1000 WHERE id = 5 AND v = 'v5';
COMMIT;
SELECT s.rows_deferred - d.rows_deferred > 0 AS deferred, s.deferred_columns_read - d.deferred_columns_read AS columns_read FROM pgcol.kept_stripes() s, d1 d;
SELECT * FROM lazy_deferred WHERE id IN (5, 1000) ORDER BY id;
BEGIN;
INSERT INTO lazy_deferred VALUES (6, 'again');
COMMIT;

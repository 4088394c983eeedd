-- AFTER triggers and foreign keys on a pg_columnar table: the trigger machinery fetches the
-- rows just inserted (with SnapshotAny) and checks foreign keys with SnapshotSelf. Every
-- case runs on a heap twin.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 1024;
CREATE TABLE log (tbl text, a int, b text);
CREATE FUNCTION log_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO log VALUES (TG_TABLE_NAME, NEW.a, NEW.b);
  RETURN NULL;
END $$;
CREATE TABLE t_col (a int, b text) USING pg_columnar;
CREATE TABLE t_heap (a int, b text);
CREATE TRIGGER t_col_after AFTER INSERT ON t_col FOR EACH ROW EXECUTE FUNCTION log_row();
CREATE TRIGGER t_heap_after AFTER INSERT ON t_heap FOR EACH ROW EXECUTE FUNCTION log_row();
INSERT INTO t_col SELECT g, 'v' || g FROM generate_series(1, 3000) g;
INSERT INTO t_heap SELECT g, 'v' || g FROM generate_series(1, 3000) g;
COPY t_col FROM PROGRAM 'seq 3001 4000 | sed "s/$/\tc/"';
COPY t_heap FROM PROGRAM 'seq 3001 4000 | sed "s/$/\tc/"';
SELECT tbl, count(*), sum(a), count(DISTINCT b) FROM log GROUP BY tbl ORDER BY tbl;
-- the logged rows are the rows stored
SELECT count(*) FROM (SELECT a, b FROM log WHERE tbl = 't_col' EXCEPT SELECT a, b FROM t_col) x;
-- in an explicit transaction, with a rollback to a savepoint in between
BEGIN;
INSERT INTO t_col VALUES (-1, 'kept');
SAVEPOINT s;
INSERT INTO t_col VALUES (-2, 'gone');
ROLLBACK TO s;
INSERT INTO t_col VALUES (-3, 'kept');
COMMIT;
SELECT a, b FROM log WHERE a < 0 ORDER BY a;
-- AFTER STATEMENT with a transition table, and AFTER ROW with WHEN
CREATE FUNCTION log_stmt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO log SELECT TG_TABLE_NAME || ' stmt', count(*), max(b) FROM new_rows;
  RETURN NULL;
END $$;
CREATE TRIGGER t_col_stmt AFTER INSERT ON t_col REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION log_stmt();
CREATE TRIGGER t_heap_stmt AFTER INSERT ON t_heap REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION log_stmt();
CREATE TRIGGER t_col_when AFTER INSERT ON t_col FOR EACH ROW WHEN (NEW.a % 100 = 0) EXECUTE FUNCTION log_row();
CREATE TRIGGER t_heap_when AFTER INSERT ON t_heap FOR EACH ROW WHEN (NEW.a % 100 = 0) EXECUTE FUNCTION log_row();
INSERT INTO t_col SELECT g, 'w' || g FROM generate_series(5001, 6500) g;
INSERT INTO t_heap SELECT g, 'w' || g FROM generate_series(5001, 6500) g;
SELECT tbl, count(*), sum(a), max(b) FROM log WHERE a > 5000 OR tbl LIKE '% stmt' GROUP BY tbl ORDER BY tbl;
-- a deferred constraint trigger fires at commit
CREATE FUNCTION check_positive() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.a < 0 THEN RAISE EXCEPTION 'negative % in %', NEW.a, TG_TABLE_NAME; END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER t_col_pos AFTER INSERT ON t_col DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION check_positive();
BEGIN;
INSERT INTO t_col VALUES (7000, 'ok');
COMMIT;
BEGIN;
INSERT INTO t_col VALUES (-7000, 'bad');
COMMIT;
SELECT count(*) FROM t_col WHERE abs(a) = 7000;
-- foreign keys from a pg_columnar table to a heap table
CREATE TABLE host (id int PRIMARY KEY, name text);
INSERT INTO host SELECT g, 'host_' || g FROM generate_series(1, 50) g;
CREATE TABLE m_col (host_id int REFERENCES host (id), v float8) USING pg_columnar;
CREATE TABLE m_heap (host_id int REFERENCES host (id), v float8);
INSERT INTO m_col SELECT 1 + g % 50, g FROM generate_series(1, 5000) g;
INSERT INTO m_heap SELECT 1 + g % 50, g FROM generate_series(1, 5000) g;
COPY m_col FROM PROGRAM 'seq 1 50 | sed "s/$/\t0.5/"';
COPY m_heap FROM PROGRAM 'seq 1 50 | sed "s/$/\t0.5/"';
INSERT INTO m_col VALUES (51, 1);
INSERT INTO m_heap VALUES (51, 1);
INSERT INTO m_col VALUES (NULL, 2);
INSERT INTO m_heap VALUES (NULL, 2);
SELECT count(*), sum(v), count(host_id) FROM m_col;
SELECT count(*), sum(v), count(host_id) FROM m_heap;
-- an invalid row inside a COPY fails the whole COPY
COPY m_col FROM PROGRAM 'printf "1\t1\n99\t2\n"';
SELECT count(*) FROM m_col;
-- the referenced row cannot go while a pg_columnar row points at it; an unreferenced one can
-- (the checks lock the referencing rows FOR KEY SHARE)
INSERT INTO host VALUES (1000, 'spare');
DELETE FROM host WHERE id = 1000;
DELETE FROM host WHERE id = 7;
UPDATE host SET id = 2000 WHERE id = 8;
UPDATE host SET name = 'renamed' WHERE id = 9;
SELECT count(*) FROM m_col m JOIN host h ON h.id = m.host_id WHERE h.name = 'renamed';
-- row locks of every mode (tests/regress/sql/delete.sql and tests/isolation have more)
SELECT count(*) FROM (SELECT * FROM m_col WHERE host_id = 3 FOR KEY SHARE) x;
SELECT count(*) FROM (SELECT * FROM m_col WHERE host_id = 3 FOR SHARE) x;
SELECT count(*) FROM (SELECT * FROM m_col WHERE host_id = 3 FOR UPDATE) x;
-- ALTER TABLE ADD FOREIGN KEY validates the existing rows
CREATE TABLE late_col (host_id int, v int) USING pg_columnar;
INSERT INTO late_col VALUES (1, 1), (2, 2);
ALTER TABLE late_col ADD FOREIGN KEY (host_id) REFERENCES host (id);
INSERT INTO late_col VALUES (77, 3);
ALTER TABLE late_col DROP CONSTRAINT late_col_host_id_fkey;
INSERT INTO late_col VALUES (77, 3);
ALTER TABLE late_col ADD FOREIGN KEY (host_id) REFERENCES host (id);

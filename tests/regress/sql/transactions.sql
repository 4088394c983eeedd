-- Visibility: own writes, rollbacks, savepoints, cursors, multi-stripe transactions.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 1024;
CREATE TABLE t (id int, v text) USING pg_columnar;
-- rolled back: never visible
BEGIN;
INSERT INTO t SELECT g, 'r' || g FROM generate_series(1, 3000) g;
SELECT count(*) FROM t;
ROLLBACK;
SELECT count(*) FROM t;
-- own writes are visible inside the transaction, and stay after commit
BEGIN;
INSERT INTO t VALUES (1, 'one');
SELECT * FROM t;
INSERT INTO t SELECT g, 'm' || g FROM generate_series(2, 5000) g;
SELECT count(*), sum(id) FROM t;
COMMIT;
SELECT count(*), sum(id) FROM t;
-- savepoints: ROLLBACK TO takes exactly the rows of the savepoint
BEGIN;
INSERT INTO t VALUES (-1, 'kept');
SAVEPOINT a;
INSERT INTO t SELECT -g, 'gone' FROM generate_series(2, 2500) g;
SAVEPOINT b;
INSERT INTO t VALUES (-9999, 'also gone');
ROLLBACK TO a;
INSERT INTO t VALUES (-2, 'kept too');
SAVEPOINT c;
INSERT INTO t VALUES (-3, 'released');
RELEASE c;
SELECT id, v FROM t WHERE id < 0 ORDER BY id DESC;
COMMIT;
SELECT id, v FROM t WHERE id < 0 ORDER BY id DESC;
-- a subtransaction that fails inside a function loses only its own rows
CREATE FUNCTION try_insert(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        INSERT INTO t SELECT 100000 + g, 'exc' FROM generate_series(1, n) g;
        RAISE EXCEPTION 'undo';
    EXCEPTION WHEN raise_exception THEN
        NULL;
    END;
    INSERT INTO t VALUES (200000, 'after exception');
END $$;
SELECT try_insert(1500);
SELECT count(*) FILTER (WHERE v = 'exc') AS exc, count(*) FILTER (WHERE v = 'after exception') AS after FROM t;
-- a cursor sees the rows of its snapshot, not those inserted after it opened
BEGIN;
DECLARE cur CURSOR FOR SELECT count(*) FROM t;
INSERT INTO t VALUES (300000, 'late');
FETCH cur;
SELECT count(*) FROM t;
COMMIT;
-- scrollable cursors go backwards too
BEGIN;
DECLARE sc SCROLL CURSOR FOR SELECT id FROM t WHERE id BETWEEN 1 AND 3;
FETCH 3 FROM sc;
FETCH BACKWARD 2 FROM sc;
COMMIT;
-- INSERT ... SELECT from the table itself reads only the rows before the statement
INSERT INTO t SELECT id + 1000000, v FROM t WHERE id BETWEEN 1 AND 2000;
SELECT count(*) FROM t WHERE id > 1000000;
SELECT count(*), sum(id) FROM t;

-- Rows of a statement and of the subtransactions its functions and triggers start: nothing
-- rolled back becomes visible, nothing committed is lost. Every case runs on a heap twin.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 1024;
CREATE TABLE s_col (a int, b int) USING pg_columnar;
CREATE TABLE s_heap (a int, b int) USING heap;
-- an exception block inside a function the statement calls inserts into the same table and
-- rolls back: its rows must go
CREATE FUNCTION fc(x int, tbl text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  BEGIN EXECUTE format('INSERT INTO %I SELECT -g, 1/(g-3) FROM generate_series(1,5) g', tbl);
  EXCEPTION WHEN division_by_zero THEN RETURN x; END;
  RETURN x;
END $$;
INSERT INTO s_col SELECT g, fc(g, 's_col') FROM generate_series(1, 3) g;
INSERT INTO s_heap SELECT g, fc(g, 's_heap') FROM generate_series(1, 3) g;
SELECT (SELECT count(*) FROM s_col) AS col, (SELECT count(*) FROM s_heap) AS heap;
TRUNCATE s_col, s_heap;
INSERT INTO s_col SELECT g, fc(g, 's_col') FROM generate_series(1, 1000) g;
INSERT INTO s_heap SELECT g, fc(g, 's_heap') FROM generate_series(1, 1000) g;
SELECT (SELECT count(*) FROM s_col) AS col, (SELECT count(*) FROM s_heap) AS heap;
CREATE INDEX ON s_col (a);
SET enable_seqscan = off;
SELECT count(*) FROM s_col WHERE a < 0;
RESET enable_seqscan;
SELECT rows FROM pgcol.verify('s_col');
-- the same block committing: its rows stay, beside the statement's
CREATE FUNCTION fc_ok(x int, tbl text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  BEGIN EXECUTE format('INSERT INTO %I VALUES (-%s, 0)', tbl, x);
  EXCEPTION WHEN others THEN RETURN -x; END;
  RETURN x;
END $$;
TRUNCATE s_col, s_heap;
INSERT INTO s_col SELECT g, fc_ok(g, 's_col') FROM generate_series(1, 2500) g;
INSERT INTO s_heap SELECT g, fc_ok(g, 's_heap') FROM generate_series(1, 2500) g;
SELECT count(*), sum(a), sum(b) FROM s_col;
SELECT count(*), sum(a), sum(b) FROM s_heap;
-- a query in an exception block of a function the statement calls (on another table)
-- must neither write nor lose the statement's buffered rows
CREATE TABLE dim (k int, v int);
INSERT INTO dim VALUES (7, 70);
CREATE FUNCTION lk(x int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r int; BEGIN
  BEGIN SELECT v INTO STRICT r FROM dim WHERE k = x; RETURN r;
  EXCEPTION WHEN others THEN RETURN -1; END;
END $$;
CREATE TABLE s1_col (a int, b int) USING pg_columnar;
CREATE TABLE s1_heap (a int, b int);
INSERT INTO s1_col SELECT g, lk(g) FROM generate_series(1, 1000) g;
INSERT INTO s1_heap SELECT g, lk(g) FROM generate_series(1, 1000) g;
SELECT count(*), sum(b) FROM s1_col;
SELECT count(*), sum(b) FROM s1_heap;
-- the narrower handler: no misleading error about a table the function never reads
CREATE FUNCTION lk2(x int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r int; BEGIN
  BEGIN SELECT v INTO STRICT r FROM dim WHERE k = x; RETURN r;
  EXCEPTION WHEN no_data_found THEN RETURN -1; END;
END $$;
INSERT INTO s1_col SELECT g, lk2(g) FROM generate_series(1, 1000) g;
INSERT INTO s1_heap SELECT g, lk2(g) FROM generate_series(1, 1000) g;
SELECT count(*), sum(b) FROM s1_col;
SELECT count(*), sum(b) FROM s1_heap;
-- an audit-style BEFORE ROW trigger whose body runs a query in an exception block, through
-- INSERT and COPY
CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r int; BEGIN
  BEGIN SELECT v INTO STRICT r FROM dim WHERE k = NEW.a;
  EXCEPTION WHEN others THEN r := -1; END;
  NEW.b := r;
  RETURN NEW;
END $$;
CREATE TABLE s2_col (a int, b int) USING pg_columnar;
CREATE TABLE s2_heap (a int, b int);
CREATE TRIGGER s2_col_audit BEFORE INSERT ON s2_col FOR EACH ROW EXECUTE FUNCTION audit();
CREATE TRIGGER s2_heap_audit BEFORE INSERT ON s2_heap FOR EACH ROW EXECUTE FUNCTION audit();
INSERT INTO s2_col SELECT g, 0 FROM generate_series(1, 1000) g;
INSERT INTO s2_heap SELECT g, 0 FROM generate_series(1, 1000) g;
COPY s2_col (a) FROM PROGRAM 'seq 1 1000';
COPY s2_heap (a) FROM PROGRAM 'seq 1 1000';
SELECT count(*), sum(a), sum(b) FROM s2_col;
SELECT count(*), sum(a), sum(b) FROM s2_heap;
-- a function that reads the table being inserted into, inside an exception block: it sees
-- the rows inserted so far, and they survive the block's rollback
CREATE FUNCTION seen(tbl text, fail bool) RETURNS int LANGUAGE plpgsql AS $$
DECLARE n int; BEGIN
  BEGIN
    EXECUTE format('SELECT count(*) FROM %I', tbl) INTO n;
    IF fail THEN RAISE EXCEPTION 'undo'; END IF;
  EXCEPTION WHEN raise_exception THEN NULL; END;
  RETURN n;
END $$;
CREATE TABLE s3_col (a int, n int) USING pg_columnar;
CREATE TABLE s3_heap (a int, n int);
INSERT INTO s3_col SELECT g, seen('s3_col', g % 2 = 0) FROM generate_series(1, 1500) g;
INSERT INTO s3_heap SELECT g, seen('s3_heap', g % 2 = 0) FROM generate_series(1, 1500) g;
SELECT count(*), sum(a), sum(n), max(n) FROM s3_col;
SELECT count(*), sum(a), sum(n), max(n) FROM s3_heap;
-- nested blocks: the inner one reads and rolls back, the outer one rolls back too
CREATE FUNCTION nested(tbl text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE n int; BEGIN
  BEGIN
    EXECUTE format('INSERT INTO %I VALUES (-1, 0)', tbl);
    BEGIN
      EXECUTE format('SELECT count(*) FROM %I', tbl) INTO n;
      RAISE EXCEPTION 'inner';
    EXCEPTION WHEN raise_exception THEN NULL; END;
    EXECUTE format('SELECT count(*) FROM %I', tbl) INTO n;
    RAISE division_by_zero;
  EXCEPTION WHEN division_by_zero THEN NULL; END;
  RETURN n;
END $$;
TRUNCATE s3_col, s3_heap;
INSERT INTO s3_col SELECT g, nested('s3_col') FROM generate_series(1, 300) g;
INSERT INTO s3_heap SELECT g, nested('s3_heap') FROM generate_series(1, 300) g;
SELECT count(*), sum(a), sum(n), min(a) FROM s3_col;
SELECT count(*), sum(a), sum(n), min(a) FROM s3_heap;
-- savepoints between statements of an explicit transaction, with reads in between
BEGIN;
INSERT INTO s3_col SELECT g, 1 FROM generate_series(1, 2000) g;
SAVEPOINT a;
INSERT INTO s3_col SELECT g, 2 FROM generate_series(1, 2000) g;
SELECT count(*) FROM s3_col;
ROLLBACK TO a;
SELECT count(*) FROM s3_col;
SAVEPOINT b;
INSERT INTO s3_col SELECT g, 3 FROM generate_series(1, 100) g;
RELEASE b;
COMMIT;
SELECT n, count(*) FROM s3_col GROUP BY n ORDER BY n;
SELECT rows FROM pgcol.verify('s3_col');

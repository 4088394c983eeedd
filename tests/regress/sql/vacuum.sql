-- VACUUM writes stripes again (am::vacuum): runs of small stripes become one, a stripe's
-- rows deleted for every snapshot become absent (their marks and index entries go), free
-- pages are filled and the end of the file is given back. Every row, index lookup and ctid
-- against the heap twin; pgcol.last_vacuum() shows what each VACUUM did (the isolation test
-- vacuum-reader shows what it must not do while an older snapshot runs).
CREATE EXTENSION pg_columnar;
CREATE TABLE t (id int PRIMARY KEY, v text, f float8) USING pg_columnar;
CREATE TABLE h (id int PRIMARY KEY, v text, f float8);
-- the two tables hold the same rows (and t's index finds each of them)
CREATE FUNCTION same() RETURNS TABLE (rows bigint, same_rows boolean, index_finds_all boolean) LANGUAGE plpgsql AS $$
BEGIN
  SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;
  RETURN QUERY SELECT (SELECT count(*) FROM t),
    NOT EXISTS (SELECT * FROM t EXCEPT SELECT * FROM h) AND NOT EXISTS (SELECT * FROM h EXCEPT SELECT * FROM t),
    (SELECT count(*) FROM h WHERE EXISTS (SELECT 1 FROM t WHERE t.id = h.id AND t.v IS NOT DISTINCT FROM h.v)) = (SELECT count(*) FROM h);
END $$;
-- trickle inserts: one stripe per statement, some rolled back inside exception blocks
DO $$
BEGIN
  FOR i IN 1..300 LOOP
    BEGIN
      INSERT INTO t VALUES (i, 'v' || (i % 7), i * 0.5);
      IF i % 10 = 0 THEN RAISE EXCEPTION 'roll back %', i; END IF;
      INSERT INTO h VALUES (i, 'v' || (i % 7), i * 0.5);
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
  END LOOP;
END $$;
SELECT count(*) AS stripes, sum(row_count) AS row_numbers FROM pgcol.stripes('t');
SELECT pg_relation_size('t') > 250 * 8192 AS a_page_per_stripe;
CREATE TEMP TABLE before AS SELECT ctid AS tid, id FROM t;
SELECT * FROM same();
-- one VACUUM: the 270 stripes become one; the numbers of the 29 rolled-back rows between
-- them are absent (the 30th came after the last stripe), and the new stripe fills the
-- pages of a rolled-back one
VACUUM t;
SELECT quiet, stripes_written, stripes_replaced, rows_removed, gap_rows FROM pgcol.last_vacuum();
SELECT first_row, row_count, deleted_rows, absent_rows FROM pgcol.stripes('t');
SELECT * FROM same();
SELECT count(*) AS same_ctid FROM t JOIN before ON before.id = t.id AND before.tid = t.ctid;
-- a rolled-back row's number holds nothing, through every path
SELECT count(*) FROM t WHERE ctid = '(0,10)';
SELECT count(*) FROM t WHERE ctid >= '(0,9)' AND ctid <= '(0,11)';
SELECT DISTINCT xmin FROM t;
SELECT * FROM pgcol.verify('t');
-- the old pages are free once no snapshot reads them: the next VACUUM moves the stripe
-- down into them and gives back the end of the file
VACUUM t;
SELECT stripes_moved, pages_truncated > 250 AS end_given_back FROM pgcol.last_vacuum();
-- and the one after gives back the pages the stripe left (no snapshot reads them now)
VACUUM t;
SELECT stripes_written, stripes_moved, pages_truncated FROM pgcol.last_vacuum();
SELECT pg_relation_size('t') <= 2 * pg_relation_size('h') AS at_most_twice_heap;
SELECT * FROM same();
-- deleting a third: the stripe gets a catalog row listing those rows as absent (the same
-- image and pages), their marks and index entries go
DELETE FROM t WHERE id % 3 = 0;
DELETE FROM h WHERE id % 3 = 0;
SELECT count(*) AS marks FROM pgcol.row_mark;
CREATE TEMP TABLE place AS SELECT first_block, byte_length FROM pgcol.stripes('t');
VACUUM t;
SELECT stripes_written, stripes_replaced, images_encoded, rows_removed, gap_rows, index_entries_removed FROM pgcol.last_vacuum();
SELECT (SELECT (first_block, byte_length) FROM pgcol.stripes('t')) = (SELECT (first_block, byte_length) FROM place) AS same_image;
SELECT first_row, row_count, deleted_rows, absent_rows FROM pgcol.stripes('t');
SELECT count(*) AS marks FROM pgcol.row_mark;
SELECT * FROM same();
-- a removed key can be inserted again; a live one cannot
INSERT INTO t VALUES (3, 'again', 1.5);
INSERT INTO h VALUES (3, 'again', 1.5);
INSERT INTO t VALUES (4, 'duplicate', 0);
INSERT INTO t VALUES (6, 'upserted', 2) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
INSERT INTO h VALUES (6, 'upserted', 2) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
INSERT INTO t VALUES (7, 'upserted', 2) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
INSERT INTO h VALUES (7, 'upserted', 2) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
SELECT * FROM same();
-- the new single-row stripes join the big one; the marks of the removed rows go, the lock
-- mark the upsert took on the old version too
DELETE FROM t WHERE id % 10 = 1;
DELETE FROM h WHERE id % 10 = 1;
VACUUM t;
SELECT stripes_written, stripes_replaced, images_encoded, rows_removed FROM pgcol.last_vacuum();
SELECT count(*) AS stripes, sum(absent_rows) AS absent FROM pgcol.stripes('t');
SELECT count(*) AS marks FROM pgcol.row_mark;
SELECT * FROM same();
-- updates: the old versions go once enough of them are deleted for every snapshot
UPDATE t SET f = f + 1 WHERE id < 200;
UPDATE h SET f = f + 1 WHERE id < 200;
UPDATE t SET v = 'twice' WHERE id < 100;
UPDATE h SET v = 'twice' WHERE id < 100;
VACUUM t;
SELECT stripes_replaced > 0 AS rewritten, rows_removed > 0 AS removed FROM pgcol.last_vacuum();
SELECT * FROM same();
SELECT * FROM pgcol.verify('t');
-- everything deleted: no stripe is left
DELETE FROM t;
DELETE FROM h;
VACUUM t;
SELECT count(*) AS stripes FROM pgcol.stripes('t');
SELECT count(*) AS marks FROM pgcol.row_mark;
SELECT * FROM same();
INSERT INTO t VALUES (1, 'new', 1);
INSERT INTO h VALUES (1, 'new', 1);
SELECT * FROM same();

-- a sorted table: rows keep their numbers (ctid) through the rewrite
CREATE TABLE s (host text, ts int, x float8) USING pg_columnar WITH (pg_columnar.sort_key = 'host, ts');
CREATE TABLE sh (host text, ts int, x float8);
CREATE INDEX ON s (ts);
DO $$
BEGIN
  FOR b IN 0..19 LOOP
    INSERT INTO s SELECT 'host' || (g % 5), b * 100 + g, g * 0.25 FROM generate_series(0, 99) g;
    INSERT INTO sh SELECT 'host' || (g % 5), b * 100 + g, g * 0.25 FROM generate_series(0, 99) g;
  END LOOP;
END $$;
DELETE FROM s WHERE host = 'host3';
DELETE FROM sh WHERE host = 'host3';
CREATE TEMP TABLE sbefore AS SELECT ctid AS tid, ts FROM s;
VACUUM s;
SELECT stripes_written, stripes_replaced, rows_removed FROM pgcol.last_vacuum();
SELECT count(*), count(DISTINCT sort_key) FROM pgcol.sort_order('s');
SELECT count(*) AS same_ctid FROM s JOIN sbefore ON sbefore.ts = s.ts AND sbefore.tid = s.ctid;
SELECT NOT EXISTS (SELECT * FROM s EXCEPT SELECT * FROM sh) AND NOT EXISTS (SELECT * FROM sh EXCEPT SELECT * FROM s) AS same_rows;
SET enable_seqscan = off;
SELECT count(*), sum(x) FROM s WHERE ts BETWEEN 500 AND 1500;
SELECT count(*), sum(x) FROM sh WHERE ts BETWEEN 500 AND 1500;
RESET enable_seqscan;

-- large stripes are not merged; their removed rows become absent without encoding anything
CREATE TABLE big (id int) USING pg_columnar;
INSERT INTO big SELECT generate_series(1, 100000);
INSERT INTO big SELECT generate_series(100001, 200000);
VACUUM big;
SELECT stripes_written, stripes_replaced FROM pgcol.last_vacuum();
DELETE FROM big WHERE id <= 100000 AND id % 10 = 0;
-- INDEX_CLEANUP off: nothing whose index entries would have to go is removed
VACUUM (INDEX_CLEANUP off) big;
SELECT stripes_written, rows_removed FROM pgcol.last_vacuum();
SELECT count(*) AS marks FROM pgcol.row_mark;
VACUUM big;
SELECT stripes_written, stripes_replaced, images_encoded, rows_removed FROM pgcol.last_vacuum();
SELECT first_row, row_count, deleted_rows, absent_rows, first_block FROM pgcol.stripes('big');
SELECT count(*) AS marks FROM pgcol.row_mark;
SELECT count(*), sum(id) FROM big;
SELECT count(*), sum(id) FROM generate_series(1, 200000) id WHERE id > 100000 OR id % 10 <> 0;
-- the pages of a load that rolled back, in the middle of the file: the stripes after it
-- move down into them, and the end of the file goes back
CREATE TABLE a (id int, v text) USING pg_columnar;
INSERT INTO a SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
BEGIN;
INSERT INTO a SELECT g, md5(g::text) FROM generate_series(20001, 120000) g;
ROLLBACK;
INSERT INTO a SELECT g, md5(g::text) FROM generate_series(120001, 140000) g;
SELECT pg_relation_size('a') / 8192 AS pages;
VACUUM a;
SELECT stripes_moved, pages_truncated FROM pgcol.last_vacuum();
-- TRUNCATE off: the end stays
VACUUM (TRUNCATE off) a;
SELECT stripes_moved, pages_truncated FROM pgcol.last_vacuum();
SELECT pg_relation_size('a') / 8192 AS pages;
VACUUM a;
SELECT stripes_moved, pages_truncated > 0 AS end_given_back FROM pgcol.last_vacuum();
SELECT pg_relation_size('a') / 8192 AS pages;
SELECT count(*), sum(id), count(DISTINCT v) FROM a;
SELECT * FROM pgcol.verify('a');
DROP TABLE t, h, s, sh, big, a;
DROP EXTENSION pg_columnar;

-- Row fetches keep the stripes they load (parsed directory and dictionaries) for the next
-- fetches of the backend, across statements: a lookup per statement finds its stripe kept.
-- The kept loads are keyed by what the catalog row says of the stripe, so new contents
-- (TRUNCATE, a load after an aborted one, VACUUM FULL) are never read from an old load;
-- every lookup is compared with the heap twin.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 2048;
CREATE TABLE k (id int, host text, v float8) USING pg_columnar;
CREATE TABLE kh (id int, host text, v float8);
INSERT INTO k SELECT g, 'host_' || (g % 10), g * 0.5 FROM generate_series(1, 10000) g;
INSERT INTO kh SELECT g, 'host_' || (g % 10), g * 0.5 FROM generate_series(1, 10000) g;
CREATE INDEX ON k (id);
CREATE INDEX ON kh (id);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET pg_columnar.enable_custom_scan = off;
PREPARE l(int) AS SELECT * FROM k WHERE id = $1;
PREPARE lh(int) AS SELECT * FROM kh WHERE id = $1;
CREATE TEMP TABLE base AS SELECT * FROM pgcol.kept_stripes();
-- one statement per lookup: the first in each stripe loads it, the others find it kept
EXECUTE l(1);
EXECUTE l(2);
EXECUTE l(2047);
EXECUTE l(3000);
EXECUTE l(3001);
SELECT s.hits - b.hits AS hits, s.misses - b.misses AS misses, s.stripes > 0 AS kept FROM pgcol.kept_stripes() s, base b;
-- an UPDATE found by an index scan reads each old version from that scan (reused), one
-- found by a sequential scan fetches it by TID (the control)
CREATE TEMP TABLE base2 AS SELECT * FROM pgcol.kept_stripes();
UPDATE k SET v = v + 1 WHERE id IN (10, 20, 3010);
UPDATE kh SET v = v + 1 WHERE id IN (10, 20, 3010);
SELECT s.old_versions_reused - b.old_versions_reused AS reused FROM pgcol.kept_stripes() s, base2 b;
RESET enable_seqscan;
SET enable_indexscan = off;
UPDATE k SET v = v + 1 WHERE id IN (11, 21);
UPDATE kh SET v = v + 1 WHERE id IN (11, 21);
SELECT s.old_versions_reused - b.old_versions_reused AS reused FROM pgcol.kept_stripes() s, base2 b;
RESET enable_indexscan;
SET enable_seqscan = off;
SELECT (SELECT string_agg(k::text, ' ' ORDER BY id) FROM k WHERE id IN (10, 11, 20, 21, 3010))
     = (SELECT string_agg(kh::text, ' ' ORDER BY id) FROM kh WHERE id IN (10, 11, 20, 21, 3010)) AS same_as_heap;
-- deleted and updated rows: the marks, not the kept stripe, decide
DELETE FROM k WHERE id = 2;
DELETE FROM kh WHERE id = 2;
UPDATE k SET v = -1 WHERE id = 3;
UPDATE kh SET v = -1 WHERE id = 3;
EXECUTE l(2);
EXECUTE l(3);
EXECUTE lh(3);
-- TRUNCATE: new storage, new contents at the same row numbers and blocks
TRUNCATE k;
TRUNCATE kh;
INSERT INTO k SELECT g, 'other_' || g, -g FROM generate_series(1, 10000) g;
INSERT INTO kh SELECT g, 'other_' || g, -g FROM generate_series(1, 10000) g;
EXECUTE l(1);
EXECUTE lh(1);
EXECUTE l(3001);
-- an aborted load read by a lookup (so kept), its blocks returned by VACUUM and written
-- again by a committed load
BEGIN;
INSERT INTO k SELECT g, 'aborted', 0 FROM generate_series(10001, 12000) g;
EXECUTE l(10001);
ROLLBACK;
VACUUM k;
INSERT INTO k SELECT g, 'committed', 1 FROM generate_series(10001, 12000) g;
INSERT INTO kh SELECT g, 'committed', 1 FROM generate_series(10001, 12000) g;
EXECUTE l(10001);
EXECUTE lh(10001);
-- a rewrite, and a sorted table (rows found through their row positions)
VACUUM FULL k;
EXECUTE l(10002);
CREATE TABLE ks (id int, host text) USING pg_columnar WITH (pg_columnar.sort_key = 'host');
INSERT INTO ks SELECT g, 'host_' || (g % 7) FROM generate_series(1, 5000) g;
CREATE INDEX ON ks (id);
SELECT * FROM ks WHERE id = 10;
SELECT * FROM ks WHERE id = 11;
SELECT * FROM ks WHERE id = 4999;
-- every lookup against the heap twin, each its own statement
CREATE FUNCTION differing() RETURNS int LANGUAGE plpgsql AS $$
DECLARE i int; a text; b text; bad int := 0;
BEGIN
  FOR i IN SELECT (g * 7919) % 12000 + 1 FROM generate_series(1, 300) g LOOP
    EXECUTE 'SELECT k::text FROM k WHERE id = $1' INTO a USING i;
    EXECUTE 'SELECT kh::text FROM kh WHERE id = $1' INTO b USING i;
    IF a IS DISTINCT FROM b THEN bad := bad + 1; END IF;
  END LOOP;
  RETURN bad;
END $$;
SELECT differing() AS lookups_differing_from_heap;
SELECT s.hits - b.hits > 300 AS many_hits FROM pgcol.kept_stripes() s, base b;
-- the query engine's scan keeps the first stripes it loads (four), so the same query run
-- again reads no directory: its first run misses, its second finds the stripe kept. A scan of
-- all six stripes keeps only its first four: run again, it finds those four and misses two.
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET pg_columnar.enable_custom_scan;
CREATE TABLE q (id int, v float8) USING pg_columnar;
INSERT INTO q SELECT g, g FROM generate_series(1, 12000) g;
EXPLAIN (COSTS OFF) SELECT sum(v) FROM q WHERE id BETWEEN 5000 AND 5100;
CREATE TEMP TABLE base3 AS SELECT * FROM pgcol.kept_stripes();
SELECT sum(v) FROM q WHERE id BETWEEN 5000 AND 5100;
SELECT s.hits - b.hits AS hits, s.misses - b.misses AS misses FROM pgcol.kept_stripes() s, base3 b;
SELECT sum(v) FROM q WHERE id BETWEEN 5000 AND 5100;
SELECT s.hits - b.hits AS hits, s.misses - b.misses AS misses FROM pgcol.kept_stripes() s, base3 b;
CREATE TEMP TABLE base4 AS SELECT * FROM pgcol.kept_stripes();
SELECT sum(v) FROM q;
SELECT s.hits - b.hits AS hits, s.misses - b.misses AS misses FROM pgcol.kept_stripes() s, base4 b;
CREATE TEMP TABLE base5 AS SELECT * FROM pgcol.kept_stripes();
SELECT sum(v) FROM q;
SELECT s.hits - b.hits AS hits, s.misses - b.misses AS misses FROM pgcol.kept_stripes() s, base5 b;
-- the control: a table AM scan (the custom scan off) looks, but keeps nothing it loads
SET pg_columnar.enable_custom_scan = off;
CREATE TABLE q3 (id int, v float8) USING pg_columnar;
INSERT INTO q3 SELECT g, g FROM generate_series(1, 3000) g;
CREATE TEMP TABLE base6 AS SELECT * FROM pgcol.kept_stripes();
SELECT sum(v) FROM q3 WHERE id < 100;
SELECT sum(v) FROM q3 WHERE id < 100;
SELECT s.hits - b.hits AS hits, s.misses - b.misses AS misses FROM pgcol.kept_stripes() s, base6 b;
-- Index fetches read delete marks a window of 1,024 row numbers at a time once more than
-- eight fetches in a row are of one window: an index scan over 3,000 keys stored in order
-- probes the first eight rows it fetches of each window and reads the window's marks at
-- the ninth. Lookups of rows
-- far apart probe one row each and read no window (the control). Rows deleted inside windows
-- and across a window's edge stay hidden, as in the heap twin; a cursor keeps seeing rows
-- its transaction deleted after it opened.
RESET pg_columnar.enable_custom_scan;
CREATE TABLE m (id int, v float8) USING pg_columnar;
CREATE TABLE mh (id int, v float8);
INSERT INTO m SELECT g, g FROM generate_series(1, 5000) g;
INSERT INTO mh SELECT g, g FROM generate_series(1, 5000) g;
CREATE INDEX ON m (id);
CREATE INDEX ON mh (id);
DELETE FROM m WHERE id % 7 = 0 OR id BETWEEN 1015 AND 1035;
DELETE FROM mh WHERE id % 7 = 0 OR id BETWEEN 1015 AND 1035;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET pg_columnar.enable_custom_scan = off;
EXPLAIN (COSTS OFF) SELECT count(*), sum(v) FROM m WHERE id BETWEEN 1 AND 3000;
CREATE TEMP TABLE base7 AS SELECT * FROM pgcol.kept_stripes();
SELECT count(*), sum(v) FROM m WHERE id BETWEEN 1 AND 3000;
SELECT count(*), sum(v) FROM mh WHERE id BETWEEN 1 AND 3000;
SELECT s.mark_probes - b.mark_probes AS probes, s.mark_windows_read - b.mark_windows_read AS windows FROM pgcol.kept_stripes() s, base7 b;
CREATE TEMP TABLE base8 AS SELECT * FROM pgcol.kept_stripes();
SELECT id, v FROM m WHERE id IN (5, 1500, 2600, 4999) ORDER BY id;
SELECT id, v FROM mh WHERE id IN (5, 1500, 2600, 4999) ORDER BY id;
SELECT s.mark_probes - b.mark_probes AS probes, s.mark_windows_read - b.mark_windows_read AS windows FROM pgcol.kept_stripes() s, base8 b;
-- a few neighbouring rows (an UPDATE's index scan meets the versions of one key so): a
-- probe each, no window
CREATE TEMP TABLE base8b AS SELECT * FROM pgcol.kept_stripes();
SELECT count(*), sum(v) FROM m WHERE id BETWEEN 2001 AND 2006;
SELECT count(*), sum(v) FROM mh WHERE id BETWEEN 2001 AND 2006;
SELECT s.mark_probes - b.mark_probes AS probes, s.mark_windows_read - b.mark_windows_read AS windows FROM pgcol.kept_stripes() s, base8b b;
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM m WHERE id BETWEEN 1010 AND 1040 ORDER BY id;
FETCH 2 FROM c;
DELETE FROM m WHERE id BETWEEN 1000 AND 1100;
FETCH ALL FROM c;
SELECT count(*) FROM m WHERE id BETWEEN 1000 AND 1100;
ROLLBACK;
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET pg_columnar.enable_custom_scan;
-- A scan reads the delete mask (delete marks and absent rows) of the stripes it reaches, a
-- run at a time: one stripe the zone maps skip to costs one read of one stripe; a bitmap
-- scan of rows in two stripes far apart, two reads of one stripe each (it lists only the
-- stripes of the rows it is given); a scan of all eight stripes, four reads (1, 2, 4 and the last stripe), as does a
-- count(*), which asks each stripe whether it holds deletions before answering it from its
-- summary. Every answer is the heap twin's.
SET pg_columnar.stripe_row_limit = 1024;
CREATE TABLE dm (id int, v float8) USING pg_columnar;
CREATE TABLE dmh (id int, v float8);
INSERT INTO dm SELECT g, g FROM generate_series(1, 8192) g;
INSERT INTO dmh SELECT g, g FROM generate_series(1, 8192) g;
CREATE INDEX ON dm (id);
CREATE INDEX ON dmh (id);
DELETE FROM dm WHERE id % 100 = 0;
DELETE FROM dmh WHERE id % 100 = 0;
SELECT count(*) AS stripes FROM pgcol.stripes('dm');
CREATE TEMP TABLE base9 AS SELECT * FROM pgcol.kept_stripes();
SELECT count(*), sum(v) FROM dm WHERE id BETWEEN 3000 AND 3050;
SELECT count(*), sum(v) FROM dmh WHERE id BETWEEN 3000 AND 3050;
SELECT s.mask_reads - b.mask_reads AS reads, s.mask_stripes - b.mask_stripes AS stripes FROM pgcol.kept_stripes() s, base9 b;
SET enable_indexscan = off;
SET pg_columnar.enable_custom_scan = off;
EXPLAIN (COSTS OFF) SELECT id, v FROM dm WHERE id IN (99, 6001) ORDER BY id;
CREATE TEMP TABLE base10 AS SELECT * FROM pgcol.kept_stripes();
SELECT id, v FROM dm WHERE id IN (99, 6001) ORDER BY id;
SELECT id, v FROM dmh WHERE id IN (99, 6001) ORDER BY id;
SELECT s.mask_reads - b.mask_reads AS reads, s.mask_stripes - b.mask_stripes AS stripes FROM pgcol.kept_stripes() s, base10 b;
RESET enable_indexscan;
RESET pg_columnar.enable_custom_scan;
CREATE TEMP TABLE base11 AS SELECT * FROM pgcol.kept_stripes();
SELECT sum(v) FROM dm;
SELECT sum(v) FROM dmh;
SELECT s.mask_reads - b.mask_reads AS reads, s.mask_stripes - b.mask_stripes AS stripes FROM pgcol.kept_stripes() s, base11 b;
CREATE TEMP TABLE base12 AS SELECT * FROM pgcol.kept_stripes();
SELECT count(*) FROM dm;
SELECT count(*) FROM dmh;
SELECT s.mask_reads - b.mask_reads AS reads, s.mask_stripes - b.mask_stripes AS stripes FROM pgcol.kept_stripes() s, base12 b;
RESET pg_columnar.stripe_row_limit;

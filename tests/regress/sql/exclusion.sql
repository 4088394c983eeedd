-- Exclusion constraints (EXCLUDE) on every index AM that has them (btree, hash, GiST,
-- SP-GiST), with exact and lossy index checks (a hash index's and a circle's GiST entries are
-- rechecked against the stored values), NULLs and empty ranges (which conflict with
-- nothing), an operator no row meets with itself (-|-), one statement's rows against each
-- other, COPY, ON CONFLICT DO NOTHING, UPDATE, DELETE, exception blocks, DEFERRABLE, a
-- constraint added to loaded rows, VACUUM and a sort key. Every statement runs on a heap twin
-- too: the same result, or the same error. Concurrent sessions: tests/isolation/specs/exclusion.spec.
CREATE EXTENSION pg_columnar;
CREATE TABLE x (id int, k int, r int4range, c circle, p point,
  EXCLUDE USING btree (id WITH =),
  EXCLUDE USING hash (k WITH =),
  EXCLUDE USING gist (r WITH &&),
  EXCLUDE USING gist (c WITH &&),
  EXCLUDE USING spgist (p WITH ~=)) USING pg_columnar;
CREATE TABLE x_heap (LIKE x INCLUDING ALL);
SELECT count(*) AS exclusion_indexes FROM pg_index WHERE indrelid = 'x'::regclass AND indisexclusion;
CREATE FUNCTION same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; b text;
BEGIN
  EXECUTE format('SELECT string_agg(x::text, '';'' ORDER BY x::text) FROM (%s) x', format(q, 'x')) INTO a;
  EXECUTE format('SELECT string_agg(x::text, '';'' ORDER BY x::text) FROM (%s) x', format(q, 'x_heap')) INTO b;
  IF a IS DISTINCT FROM b THEN RETURN 'MISMATCH: ' || coalesce(left(a, 300), 'NULL') || ' vs ' || coalesce(left(b, 300), 'NULL'); END IF;
  RETURN 'same: ' || md5(coalesce(a, ''));
END $$;
-- runs statement q on both tables ('%s' is the table); an error is caught, and must be the
-- same on both
CREATE FUNCTION on_both(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text := 'ok'; b text := 'ok';
BEGIN
  BEGIN EXECUTE format(q, 'x'); EXCEPTION WHEN OTHERS THEN a := SQLSTATE || ' ' || SQLERRM; END;
  BEGIN EXECUTE format(q, 'x_heap'); EXCEPTION WHEN OTHERS THEN b := SQLSTATE || ' ' || replace(SQLERRM, 'x_heap', 'x'); END;
  IF a IS DISTINCT FROM b THEN RETURN 'MISMATCH: ' || a || ' vs ' || b; END IF;
  RETURN a;
END $$;
SELECT on_both($$INSERT INTO %s SELECT g, g, int4range(g * 10, g * 10 + 5), circle(point(g * 10, 0), 1), point(g, g)
  FROM generate_series(1, 2000) g$$);
-- a conflict on each constraint: with a committed row, within one statement, with a row
-- this transaction inserted earlier
SELECT on_both($$INSERT INTO %s VALUES (7, -1, NULL, NULL, NULL)$$);
SELECT on_both($$INSERT INTO %s VALUES (-1, 7, NULL, NULL, NULL)$$);
SELECT on_both($$INSERT INTO %s VALUES (-1, NULL, '[74,76)', NULL, NULL)$$);
SELECT on_both($$INSERT INTO %s VALUES (-1, NULL, NULL, '<(71,1),1>', NULL)$$);
SELECT on_both($$INSERT INTO %s VALUES (-1, NULL, NULL, NULL, '(7,7)')$$);
SELECT on_both($$INSERT INTO %s VALUES (-1, 5001, NULL, NULL, NULL), (-2, 5001, NULL, NULL, NULL)$$);
SELECT on_both($$INSERT INTO %s VALUES (-1, NULL, NULL, '<(-50,0),2>', NULL), (-2, NULL, NULL, '<(-47,0),2>', NULL)$$);
SELECT on_both($$INSERT INTO %s VALUES (-1, NULL, '[-30,-20)', NULL, NULL), (-2, NULL, '[-25,-24]', NULL, NULL)$$);
SELECT on_both($$INSERT INTO %s SELECT -g, 5000 + g %% 3, NULL, NULL, NULL FROM generate_series(1, 500) g$$);
BEGIN;
SELECT on_both($$INSERT INTO %s VALUES (-3, NULL, '[-30,-20)', NULL, NULL)$$);
SELECT on_both($$INSERT INTO %s VALUES (-4, NULL, '[-25,-24]', NULL, NULL)$$);
ROLLBACK;
-- NULLs and empty ranges conflict with nothing
SELECT on_both($$INSERT INTO %s VALUES (NULL, NULL, 'empty', NULL, NULL), (NULL, NULL, 'empty', NULL, NULL), (NULL, NULL, NULL, NULL, NULL)$$);
-- COPY: a batch with a conflict fails whole, one without goes in
SELECT on_both($$COPY %s FROM PROGRAM 'printf "3001\t3001\t[30010,30015)\t<(30010,0),1>\t(3001,3001)\n3002\t3002\t[30012,30020)\t<(30020,0),1>\t(3002,3002)\n"'$$);
SELECT on_both($$COPY %s FROM PROGRAM 'printf "3001\t3001\t[30010,30015)\t<(30010,0),1>\t(3001,3001)\n3002\t3002\t[30020,30025)\t<(30020,0),1>\t(3002,3002)\n"'$$);
-- ON CONFLICT DO NOTHING (any constraint), with a batch half conflicting; DO UPDATE is
-- PostgreSQL's own refusal
SELECT on_both($$INSERT INTO %s VALUES (4001, 9, '[40010,40015)', '<(40010,0),1>', '(4001,4001)') ON CONFLICT DO NOTHING$$);
SELECT on_both($$INSERT INTO %s SELECT 4000 + g, 4000 + g, int4range(40000 + g * 20, 40000 + g * 20 + 5),
  circle(point(40000 + g * 20, 0), 1), point(4000 + g, 4000 + g) FROM generate_series(1, 1000) g
  UNION ALL SELECT g, g, NULL, NULL, NULL FROM generate_series(1, 1000) g ON CONFLICT DO NOTHING$$);
SELECT on_both($$INSERT INTO %s VALUES (1, 1, NULL, NULL, NULL) ON CONFLICT ON CONSTRAINT %1$s_k_excl DO UPDATE SET k = 0$$);
-- UPDATE: to a conflicting value, to a free one, and a row's new version against its old
SELECT on_both($$UPDATE %s SET k = 8 WHERE id = 9$$);
SELECT on_both($$UPDATE %s SET k = 100000 WHERE id = 9$$);
SELECT on_both($$UPDATE %s SET r = int4range(lower(r), upper(r) + 1) WHERE id BETWEEN 100 AND 200$$);
SELECT on_both($$UPDATE %s SET r = int4range(lower(r), upper(r) + 10) WHERE id = 300$$);
-- a deleted row frees its values, in the same transaction too; a rolled-back delete does not
BEGIN;
SELECT on_both($$DELETE FROM %s WHERE id = 11$$);
SELECT on_both($$INSERT INTO %s VALUES (11, 11, '[110,115)', '<(110,0),1>', '(11,11)')$$);
COMMIT;
BEGIN;
SELECT on_both($$DELETE FROM %s WHERE id = 12$$);
ROLLBACK;
SELECT on_both($$INSERT INTO %s VALUES (12, 12, NULL, NULL, NULL)$$);
-- an exception block takes back exactly its rows, and their values are free again
DO $$
BEGIN
  INSERT INTO x VALUES (5001, 5001, NULL, NULL, NULL);
  BEGIN
    INSERT INTO x VALUES (5002, 5002, NULL, NULL, NULL), (5003, 13, NULL, NULL, NULL);
  EXCEPTION WHEN exclusion_violation THEN RAISE NOTICE 'caught: %', SQLERRM;
  END;
  INSERT INTO x VALUES (5003, 5002, NULL, NULL, NULL);
END $$;
INSERT INTO x_heap VALUES (5001, 5001, NULL, NULL, NULL), (5003, 5002, NULL, NULL, NULL);
-- what an index scan returns through each constraint's index
SET enable_seqscan = off;
SELECT same($$SELECT id FROM %s WHERE r && '[100,2000)'$$);
SELECT same($$SELECT id FROM %s WHERE c && '<(500,0),15>'$$);
SELECT same($$SELECT id FROM %s WHERE p ~= '(42,42)'$$);
SELECT same($$SELECT id FROM %s WHERE k = 5002$$);
RESET enable_seqscan;
SELECT same('SELECT * FROM %s');
-- after VACUUM, which takes deleted rows out with their index entries, the constraints hold
SELECT on_both($$DELETE FROM %s WHERE id BETWEEN 1500 AND 1600$$);
VACUUM x;
VACUUM x_heap;
SELECT on_both($$INSERT INTO %s VALUES (1550, 1550, '[15500,15505)', NULL, NULL)$$);
SELECT on_both($$INSERT INTO %s VALUES (-1700, 1700, NULL, NULL, NULL)$$);
SELECT same('SELECT * FROM %s');
-- added to loaded rows: refused while rows conflict, then enforced
SELECT on_both($$INSERT INTO %s VALUES (-6, NULL, '[25,30)', NULL, NULL)$$);
SELECT on_both($$ALTER TABLE %s ADD CONSTRAINT %1$s_adjacent EXCLUDE USING gist (r WITH -|-)$$);
SELECT on_both($$DELETE FROM %s WHERE id = -6$$);
SELECT on_both($$ALTER TABLE %s ADD CONSTRAINT %1$s_adjacent EXCLUDE USING gist (r WITH -|-)$$);
SELECT on_both($$INSERT INTO %s VALUES (-5, NULL, '[15,20)', NULL, NULL)$$);
SELECT on_both($$INSERT INTO %s VALUES (-5, NULL, '[16,20)', NULL, NULL)$$);
SELECT same('SELECT * FROM %s');
-- DEFERRABLE: checked at COMMIT
CREATE TABLE d (id int, r int4range, EXCLUDE USING gist (r WITH &&) DEFERRABLE INITIALLY DEFERRED) USING pg_columnar;
CREATE TABLE d_heap (LIKE d INCLUDING ALL);
BEGIN;
INSERT INTO d VALUES (1, '[1,10)'), (2, '[5,15)');
UPDATE d SET r = '[10,15)' WHERE id = 2;
COMMIT;
BEGIN;
INSERT INTO d VALUES (3, '[12,20)');
COMMIT;
BEGIN;
INSERT INTO d_heap VALUES (1, '[1,10)'), (2, '[5,15)');
UPDATE d_heap SET r = '[10,15)' WHERE id = 2;
COMMIT;
BEGIN;
INSERT INTO d_heap VALUES (3, '[12,20)');
COMMIT;
SELECT (SELECT string_agg(d::text, ';' ORDER BY id) FROM d) IS NOT DISTINCT FROM (SELECT string_agg(d_heap::text, ';' ORDER BY id) FROM d_heap) AS deferred_same;
-- a sorted table's rows keep their constraints (index entries made before the sort)
CREATE TABLE s (h text, t int, r int4range, EXCLUDE USING gist (r WITH &&)) USING pg_columnar WITH (pg_columnar.sort_key = 'h, t');
INSERT INTO s SELECT 'h' || (g % 7), -g, int4range(g * 3, g * 3 + 2) FROM generate_series(1, 3000) g;
INSERT INTO s VALUES ('h1', 0, '[31,32)');
INSERT INTO s VALUES ('h1', 0, '[32,33)');
SET enable_seqscan = off;
SELECT count(*), min(t), max(t) FROM s WHERE r && '[30,40)';
RESET enable_seqscan;
-- a statement's rows stay in memory until it ends, as in any table: each row's check meets
-- the row itself, and reads it from there (were it written out for that, 10 stripes)
CREATE TABLE w (id int, EXCLUDE USING hash (id WITH =)) USING pg_columnar;
INSERT INTO w SELECT g FROM generate_series(1, 10) g;
SELECT count(*) AS stripes, sum(row_count) AS rows FROM pgcol.stripes('w');

-- Index entries of rows whose insert rolled back are dead to every transaction: a unique
-- check that meets one says so (all_dead), and the btree marks it dead instead of asking the
-- table again at every insert of the key. Checked with pageinspect where it is installed
-- (PostgreSQL 18 with assertions is built without it: there the count is not checked, the
-- rows are); every result against the heap twin.
CREATE EXTENSION pg_columnar;
CREATE TABLE u (id int PRIMARY KEY, v text) USING pg_columnar;
CREATE TABLE uh (id int PRIMARY KEY, v text);
INSERT INTO u SELECT g, 'v' || g FROM generate_series(1, 1000) g;
INSERT INTO uh SELECT g, 'v' || g FROM generate_series(1, 1000) g;
-- entries marked dead in the index (NULL: pageinspect is not installed here)
CREATE FUNCTION dead_entries(idx regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pageinspect') THEN
    RETURN NULL;
  END IF;
  CREATE EXTENSION IF NOT EXISTS pageinspect;
  EXECUTE 'SELECT coalesce(sum((SELECT count(*) FROM bt_page_items($1::text, b::int) WHERE dead)), 0)
           FROM generate_series(1, pg_relation_size($1) / 8192 - 1) b' INTO n USING idx;
  RETURN n;
END $$;
-- a load that rolls back leaves its keys' entries behind
BEGIN;
INSERT INTO u SELECT g, 'rolled back' FROM generate_series(1001, 2000) g;
ROLLBACK;
BEGIN;
INSERT INTO uh SELECT g, 'rolled back' FROM generate_series(1001, 2000) g;
ROLLBACK;
SELECT coalesce(dead_entries('u_pkey') = 0, true) AS none_dead_yet;
-- inserting the keys again: each unique check meets the rolled-back entry, finds its row
-- dead to all, and the btree marks the entry dead. The first rows are probed in the
-- catalogs one at a time; then the statement reads the row numbers that rolled-back
-- transactions had reserved once and knows the other rows dead from them (a build without
-- that probes all 1000)
CREATE TEMP TABLE k0 AS SELECT * FROM pgcol.kept_stripes();
INSERT INTO u SELECT g, 'again' FROM generate_series(1001, 2000) g;
SELECT k.dead_row_probes - d.dead_row_probes AS probed, k.dead_rows_rolled_back - d.dead_rows_rolled_back AS known_dead
FROM pgcol.kept_stripes() k, k0 d;
INSERT INTO uh SELECT g, 'again' FROM generate_series(1001, 2000) g;
SELECT coalesce(dead_entries('u_pkey') > 0, true) AS rolled_back_entries_dead;
-- the live rows' entries are not: duplicates are refused, lookups find every row
INSERT INTO u VALUES (1500, 'duplicate');
INSERT INTO u VALUES (500, 'duplicate');
INSERT INTO u VALUES (1500, 'upserted') ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
INSERT INTO uh VALUES (1500, 'upserted') ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET pg_columnar.enable_custom_scan = off;
SELECT count(*), sum(id), count(*) FILTER (WHERE v = 'again') AS again FROM u WHERE id BETWEEN 1 AND 3000;
SELECT count(*), sum(id), count(*) FILTER (WHERE v = 'again') AS again FROM uh WHERE id BETWEEN 1 AND 3000;
SELECT * FROM u WHERE id IN (999, 1000, 1001, 1500, 2000) ORDER BY id;
SELECT * FROM uh WHERE id IN (999, 1000, 1001, 1500, 2000) ORDER BY id;
-- a savepoint's load rolled back, then its keys again in the same transaction, with ON
-- CONFLICT: the subtransaction's reservation is a rolled-back one too; the keys of
-- committed rows still conflict
BEGIN;
SAVEPOINT s;
INSERT INTO u SELECT g, 'savepoint' FROM generate_series(3001, 3500) g;
ROLLBACK TO SAVEPOINT s;
CREATE TEMP TABLE k1 AS SELECT * FROM pgcol.kept_stripes();
INSERT INTO u SELECT g, 'after savepoint' FROM generate_series(2991, 3500) g ON CONFLICT (id) DO NOTHING;
SELECT k.dead_row_probes - d.dead_row_probes AS probed, k.dead_rows_rolled_back - d.dead_rows_rolled_back AS known_dead
FROM pgcol.kept_stripes() k, k1 d;
INSERT INTO u SELECT g, 'conflict' FROM generate_series(1995, 2005) g ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
COMMIT;
BEGIN;
SAVEPOINT s;
INSERT INTO uh SELECT g, 'savepoint' FROM generate_series(3001, 3500) g;
ROLLBACK TO SAVEPOINT s;
INSERT INTO uh SELECT g, 'after savepoint' FROM generate_series(2991, 3500) g ON CONFLICT (id) DO NOTHING;
INSERT INTO uh SELECT g, 'conflict' FROM generate_series(1995, 2005) g ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
COMMIT;
SELECT count(*) AS differing FROM ((SELECT * FROM u EXCEPT ALL SELECT * FROM uh) UNION ALL (SELECT * FROM uh EXCEPT ALL SELECT * FROM u)) x;
SELECT CASE WHEN v ~ '^v[0-9]+$' THEN 'v<id>' ELSE v END AS v, count(*), min(id), max(id) FROM u GROUP BY 1 ORDER BY 1;
-- a key another session is still inserting is not dead: tests/isolation
-- (insert-insert-unique) holds one between two rows of its INSERT

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
-- dead to all, and the btree marks the entry dead
INSERT INTO u SELECT g, 'again' FROM generate_series(1001, 2000) g;
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
-- a key another session is still inserting is not dead: tests/isolation
-- (insert-insert-unique) holds one between two rows of its INSERT

-- Logical replication on a server that does not load pg_columnar through
-- shared_preload_libraries: logical decoding does not see a pg_columnar table's changes, so a
-- pg_columnar table is refused as a member of a publication, and a write that a publication
-- would publish is refused (never silently missed by a subscriber); each refusal's hint says
-- what to set. A pg_columnar table as a subscription's target is in tests/replication; a
-- server that decodes pg_columnar tables, in tests/logical.
CREATE EXTENSION pg_columnar;
CREATE TABLE c (id int, v text) USING pg_columnar;
CREATE TABLE h (id int PRIMARY KEY, v text);
-- (with a replica identity, so that PostgreSQL's own check lets an UPDATE or DELETE reach it)
CREATE TABLE ck (id int PRIMARY KEY, v text) USING pg_columnar;
INSERT INTO c SELECT g, 'v' || g FROM generate_series(1, 100) g;
INSERT INTO ck SELECT g, 'v' || g FROM generate_series(1, 100) g;
INSERT INTO h SELECT g, 'v' || g FROM generate_series(1, 100) g;
-- by name: refused, in every form, and nothing is left behind
CREATE PUBLICATION pub_c FOR TABLE c;
CREATE PUBLICATION pub_ch FOR TABLE h, c;
CREATE PUBLICATION pub_h FOR TABLE h;
ALTER PUBLICATION pub_h ADD TABLE c;
ALTER PUBLICATION pub_h SET TABLE h, c;
ALTER PUBLICATION pub_h ADD TABLE ONLY c;
-- the publications Citus makes to move and split shards: the hint names its other mode
CREATE PUBLICATION citus_shard_move_publication_10_20_30 FOR TABLE c;
CREATE PUBLICATION citus_shard_split_publication_10_20_30 FOR TABLE c;
SELECT pubname, tablename FROM pg_publication_tables ORDER BY 1, 2;
-- a heap table that becomes a pg_columnar one while it is published
CREATE TABLE h2 (id int);
ALTER PUBLICATION pub_h ADD TABLE h2;
ALTER TABLE h2 SET ACCESS METHOD pg_columnar;
SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname = 'h2';
-- through a partitioned table: publishing it, attaching or creating a pg_columnar partition
CREATE TABLE parted (id int, v text) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (100) TO (200) USING pg_columnar;
CREATE PUBLICATION pub_parted FOR TABLE parted;
DROP TABLE parted_2;
CREATE PUBLICATION pub_parted FOR TABLE parted;
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (100) TO (200) USING pg_columnar;
CREATE TABLE parted_3 (id int, v text) USING pg_columnar;
ALTER TABLE parted ATTACH PARTITION parted_3 FOR VALUES FROM (200) TO (300);
SELECT relname FROM pg_class WHERE relname LIKE 'parted%' ORDER BY 1;
-- FOR ALL TABLES: created with a warning; then every write it publishes is refused, and
-- the table keeps exactly its rows
CREATE PUBLICATION pub_all FOR ALL TABLES;
INSERT INTO c VALUES (101, 'new');
COPY c FROM STDIN;
102	copied
\.
UPDATE ck SET v = 'changed' WHERE id = 1;
DELETE FROM ck WHERE id = 2;
MERGE INTO ck USING (VALUES (1)) s(id) ON ck.id = s.id WHEN MATCHED THEN DELETE;
INSERT INTO ck VALUES (101, 'new') ON CONFLICT (id) DO NOTHING;
-- (without a replica identity PostgreSQL refuses an UPDATE or DELETE first)
UPDATE c SET v = 'changed' WHERE id = 1;
INSERT INTO h VALUES (101, 'heap rows are published');
SELECT count(*), sum(id), count(*) FILTER (WHERE v = 'v' || id) AS unchanged FROM c;
SELECT count(*), sum(id), count(*) FILTER (WHERE v = 'v' || id) AS unchanged FROM ck;
-- in an exception block: caught, and nothing of the statement remains
CREATE FUNCTION try_insert() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO c SELECT g, 'caught' FROM generate_series(200, 300) g;
  RETURN 'inserted';
EXCEPTION WHEN feature_not_supported THEN
  RETURN 'refused: ' || SQLERRM;
END $$;
SELECT try_insert();
SELECT count(*) FROM c WHERE v = 'caught';
-- what the table still does: read, TRUNCATE (decoded for every access method), rewrite
SELECT count(*) FROM c WHERE id <= 10;
CREATE TABLE c_copy USING pg_columnar AS SELECT * FROM c WITH NO DATA;
CREATE TABLE c_copy2 USING pg_columnar AS SELECT * FROM c;
VACUUM FULL c;
ALTER TABLE c ALTER COLUMN id TYPE bigint;
SELECT count(*), sum(id) FROM c;
-- a publication of only some kinds of change refuses only those
DROP PUBLICATION pub_all;
CREATE PUBLICATION pub_all_ins FOR ALL TABLES WITH (publish = 'insert');
DELETE FROM ck WHERE id = 100;
UPDATE ck SET v = 'changed' WHERE id = 99;
INSERT INTO ck VALUES (100, 'again');
DROP PUBLICATION pub_all_ins;
CREATE PUBLICATION pub_all_trunc FOR ALL TABLES WITH (publish = 'truncate');
INSERT INTO ck VALUES (100, 'again');
DROP PUBLICATION pub_all_trunc;
SELECT count(*), count(*) FILTER (WHERE v = 'changed') AS changed, count(*) FILTER (WHERE v = 'again') AS again FROM ck;
-- TABLES IN SCHEMA: the schema's pg_columnar tables, and a partition under a table of the
-- schema, refuse writes; other schemas' do not; dropping the schema from the publication
-- lets them write again
CREATE SCHEMA pubs;
CREATE TABLE pubs.c (id int) USING pg_columnar;
CREATE TABLE pubs.parted (id int) PARTITION BY RANGE (id);
CREATE TABLE public.pubs_part PARTITION OF pubs.parted FOR VALUES FROM (0) TO (10) USING pg_columnar;
CREATE PUBLICATION pub_schema FOR TABLES IN SCHEMA pubs;
INSERT INTO pubs.c VALUES (1);
INSERT INTO pubs.parted VALUES (1);
INSERT INTO c VALUES (103, 'other schema');
ALTER PUBLICATION pub_schema DROP TABLES IN SCHEMA pubs;
INSERT INTO pubs.c VALUES (1);
INSERT INTO pubs.parted VALUES (1);
SELECT (SELECT count(*) FROM pubs.c) AS c, (SELECT count(*) FROM pubs.parted) AS parted;
-- a publication by name of a heap table beside pg_columnar ones is fine, and so are writes
INSERT INTO c VALUES (104, 'unpublished');
SELECT pubname, tablename FROM pg_publication_tables ORDER BY 1, 2;

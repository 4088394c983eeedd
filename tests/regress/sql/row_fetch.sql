-- A row fetched by its number (an index or TID lookup, an UPDATE's old version,
-- PgcolTopN's chosen rows) is decoded alone: one value of each column, read from its
-- vector's encoding without decoding the vector's other rows (codec::unpack_row). A second
-- row of the same vector fetched right after the first decodes that vector whole (a scan
-- through nearby rows). pgcol.kept_stripes() counts both branches; every fetched row is
-- compared with the heap twin, over columns of every storage shape (by-value integers and
-- floats, fixed-width by reference, varlena, NULLs, a dropped and an added column) and
-- encoding the data leads the writer to (bitpack, dictionary, FSST, Gorilla, plain), in a
-- table stored in insert order and one sorted by a key.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 10000;
CREATE TEMP VIEW src AS
SELECT g AS id,
       (g % 300)::int2 AS small,
       CASE WHEN g % 5 = 0 THEN NULL ELSE g::int8 * 1000003 END AS big,
       '2026-01-01'::timestamptz + (g / 10) * interval '10 s' AS t,
       (g % 97)::float8 AS whole,
       CASE WHEN g % 11 = 0 THEN NULL ELSE round(sin(g / 50.0)::numeric, 6)::float8 * 1000 END AS walk,
       (g % 13)::float4 / 4 AS quarter,
       'host_' || (g % 10) AS host,
       'https://example.com/product/' || (g * 7919 % 10007) || '/view?ref=home' AS url,
       md5(g::text) AS noise,
       CASE WHEN g % 7 = 0 THEN NULL ELSE jsonb_build_object('k', g % 7, 'v', md5(g::text)) END AS doc,
       (g * 1.25)::numeric AS amount,
       md5((g % 50)::text)::uuid AS u,
       ('08:00:2b:' || lpad(to_hex(g % 256), 2, '0') || ':01:02')::macaddr AS mac,
       g % 3 = 0 AS flag,
       0 AS gone,
       CASE WHEN g % 300 = 0 THEN g END AS sparse
FROM generate_series(1, 30000) g;
CREATE TABLE f (LIKE src) USING pg_columnar;
CREATE TABLE fs (LIKE src) USING pg_columnar WITH (pg_columnar.sort_key = 'host, t');
CREATE TABLE fh (LIKE src);
-- indexes before the load: the sorted table's entries are made before its stripes are sorted
CREATE INDEX ON f (id);
CREATE INDEX ON fs (id);
CREATE INDEX ON fh (id);
INSERT INTO f SELECT * FROM src;
INSERT INTO fs SELECT * FROM src;
INSERT INTO fh SELECT * FROM src;
ALTER TABLE f DROP COLUMN gone;
ALTER TABLE fs DROP COLUMN gone;
ALTER TABLE fh DROP COLUMN gone;
ALTER TABLE f ADD COLUMN later int DEFAULT 7;
ALTER TABLE fs ADD COLUMN later int DEFAULT 7;
ALTER TABLE fh ADD COLUMN later int DEFAULT 7;
-- what the writer chose for the columns of f (so the lookups below read each of these)
SELECT DISTINCT encoding FROM pgcol.vectors('f') ORDER BY 1;
SELECT DISTINCT encoding FROM pgcol.vectors('fs') ORDER BY 1;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET pg_columnar.enable_custom_scan = off;
CREATE FUNCTION decodes() RETURNS TABLE (alone bigint, whole bigint) LANGUAGE sql
    AS $$ SELECT rows_decoded_alone, vectors_decoded_whole FROM pgcol.kept_stripes() $$;
CREATE TEMP TABLE ids AS SELECT g * 1499 + 1 AS id FROM generate_series(0, 19) g;
CREATE TEMP TABLE d AS SELECT * FROM decodes();
-- 20 lookups 1,499 rows apart, each its own index scan (a subquery per id: a join may be
-- planned as one scan of the whole index in id order): every row decoded alone
SELECT (SELECT string_agg((SELECT f::text FROM f WHERE f.id = i.id), ' | ' ORDER BY i.id) FROM ids i)
     = (SELECT string_agg((SELECT fh::text FROM fh WHERE fh.id = i.id), ' | ' ORDER BY i.id) FROM ids i) AS same_as_heap;
SELECT n.alone - d.alone AS alone, n.whole - d.whole AS whole FROM decodes() n, d;
-- the same in the sorted table, whose rows are stored away from their insert positions
DELETE FROM d; INSERT INTO d SELECT * FROM decodes();
SELECT (SELECT string_agg((SELECT fs::text FROM fs WHERE fs.id = i.id), ' | ' ORDER BY i.id) FROM ids i)
     = (SELECT string_agg((SELECT fh::text FROM fh WHERE fh.id = i.id), ' | ' ORDER BY i.id) FROM ids i) AS same_as_heap;
SELECT n.alone - d.alone AS alone, n.whole - d.whole AS whole FROM decodes() n, d;
-- a range of 101 neighbouring rows of one vector: the first alone, the second decodes the
-- vector whole, the rest are read from it (the control: a whole vector where rows are near)
DELETE FROM d; INSERT INTO d SELECT * FROM decodes();
SELECT (SELECT string_agg(f::text, ' | ' ORDER BY id) FROM f WHERE id BETWEEN 1100 AND 1200)
     = (SELECT string_agg(fh::text, ' | ' ORDER BY id) FROM fh WHERE id BETWEEN 1100 AND 1200) AS same_as_heap;
SELECT n.alone - d.alone AS alone, n.whole - d.whole AS whole FROM decodes() n, d;
-- every row of a few vectors of each table, by index, against the heap
SELECT count(*) AS rows, count(*) FILTER (WHERE f::text = fh::text) AS same FROM f JOIN fh USING (id) WHERE f.id % 97 = 1;
SELECT count(*) AS rows, count(*) FILTER (WHERE fs::text = fh::text) AS same FROM fs JOIN fh USING (id) WHERE fs.id % 89 = 1;
-- a TID lookup
SELECT (SELECT f::text FROM f WHERE ctid = (SELECT ctid FROM f WHERE id = 7777))
     = (SELECT fh::text FROM fh WHERE id = 7777) AS same_as_heap;
SELECT (SELECT fs::text FROM fs WHERE ctid = (SELECT ctid FROM fs WHERE id = 7777))
     = (SELECT fh::text FROM fh WHERE id = 7777) AS same_as_heap;
-- an UPDATE's old versions, with RETURNING, and the rows after it
DELETE FROM d; INSERT INTO d SELECT * FROM decodes();
CREATE TEMP TABLE ret AS WITH u AS (UPDATE f SET walk = walk + 1, doc = doc || '{"u": 1}' WHERE id IN (SELECT id FROM ids) RETURNING *) SELECT string_agg(u::text, ' | ' ORDER BY id) AS r FROM u;
CREATE TEMP TABLE reth AS WITH u AS (UPDATE fh SET walk = walk + 1, doc = doc || '{"u": 1}' WHERE id IN (SELECT id FROM ids) RETURNING *) SELECT string_agg(u::text, ' | ' ORDER BY id) AS r FROM u;
SELECT (SELECT r FROM ret) = (SELECT r FROM reth) AS same_as_heap;
SELECT n.alone - d.alone > 0 AS some_alone FROM decodes() n, d;
SELECT (SELECT string_agg(f::text, ' | ' ORDER BY f.id) FROM ids JOIN f USING (id))
     = (SELECT string_agg(fh::text, ' | ' ORDER BY fh.id) FROM ids JOIN fh USING (id)) AS same_as_heap;
-- PgcolTopN's rows: the last row of each host
RESET enable_seqscan;
RESET pg_columnar.enable_custom_scan;
DELETE FROM d; INSERT INTO d SELECT * FROM decodes();
EXPLAIN (COSTS OFF) SELECT DISTINCT ON (host) * FROM fs ORDER BY host, t DESC;
SELECT (SELECT string_agg(x::text, ' | ' ORDER BY host) FROM (SELECT DISTINCT ON (host) * FROM fs ORDER BY host, t DESC) x)
     = (SELECT string_agg(x::text, ' | ' ORDER BY host) FROM (SELECT DISTINCT ON (host) * FROM fh ORDER BY host, t DESC) x) AS same_as_heap;
SELECT n.alone - d.alone AS alone, n.whole - d.whole AS whole FROM decodes() n, d;

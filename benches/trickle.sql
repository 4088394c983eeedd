-- benches/trickle.sql: 5,000 single-row INSERTs (a collector's trickle, one statement and one
-- stripe each) into a pg_columnar table and a heap twin, then VACUUM three times: sizes,
-- stripes, a full scan's time and what each VACUUM did (pgcol.last_vacuum()). Run with psql
-- against a server with the extension installed and autovacuum off (so that only these
-- VACUUMs run): psql -X -f benches/trickle.sql. docs/BENCHMARKS.md, "VACUUM".
CREATE EXTENSION IF NOT EXISTS pg_columnar;
DROP TABLE IF EXISTS trickle_columnar, trickle_heap;
CREATE TABLE trickle_columnar (ts timestamptz, host text, v float8) USING pg_columnar;
CREATE TABLE trickle_heap (ts timestamptz, host text, v float8);
\timing on
DO $$ BEGIN FOR i IN 1..5000 LOOP
  INSERT INTO trickle_columnar VALUES ('2026-01-01'::timestamptz + i * interval '10 s', 'host_' || (i % 10), i * 0.25);
END LOOP; END $$;
DO $$ BEGIN FOR i IN 1..5000 LOOP
  INSERT INTO trickle_heap VALUES ('2026-01-01'::timestamptz + i * interval '10 s', 'host_' || (i % 10), i * 0.25);
END LOOP; END $$;
\timing off
SELECT pg_relation_size('trickle_columnar') AS columnar_bytes, pg_relation_size('trickle_heap') AS heap_bytes,
       (SELECT count(*) FROM pgcol.stripes('trickle_columnar')) AS stripes;
\timing on
SELECT count(*), sum(v) FROM trickle_columnar;
VACUUM trickle_columnar;
SELECT count(*), sum(v) FROM trickle_columnar;
\timing off
SELECT 1 AS vacuum, * FROM pgcol.last_vacuum();
SELECT pg_relation_size('trickle_columnar') AS columnar_bytes, (SELECT count(*) FROM pgcol.stripes('trickle_columnar')) AS stripes;
VACUUM trickle_columnar;
SELECT 2 AS vacuum, * FROM pgcol.last_vacuum();
SELECT pg_relation_size('trickle_columnar') AS columnar_bytes;
VACUUM trickle_columnar;
SELECT 3 AS vacuum, * FROM pgcol.last_vacuum();
SELECT pg_relation_size('trickle_columnar') AS columnar_bytes, pg_relation_size('trickle_heap') AS heap_bytes;
DROP TABLE trickle_columnar, trickle_heap;

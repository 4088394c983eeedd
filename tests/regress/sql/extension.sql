-- The extension puts its objects into a schema of its own, pgcol, which belongs to it.
CREATE EXTENSION pg_columnar;
SELECT extname, extrelocatable FROM pg_extension WHERE extname = 'pg_columnar';
SELECT n.nspname AS member_schema
  FROM pg_depend d JOIN pg_namespace n ON n.oid = d.objid
 WHERE d.classid = 'pg_namespace'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_columnar');
-- version() names this extension, the PostgreSQL major it was built for (which must be
-- the server's own) and the codec's format version.
SELECT pgcol.version() ~ '^pg_columnar [0-9]+\.[0-9]+\.[0-9]+ \(PostgreSQL [0-9]+, codec format [0-9]+, (debug|release) build\)$' AS well_formed,
       substring(pgcol.version() from 'PostgreSQL ([0-9]+)')::int
         = current_setting('server_version_num')::int / 10000 AS built_for_this_server;
-- Dropping removes the schema with everything in it; re-creating works.
DROP EXTENSION pg_columnar;
SELECT count(*) AS leftover_schemas FROM pg_namespace WHERE nspname = 'pgcol';
CREATE EXTENSION pg_columnar;
SELECT pgcol.version() IS NOT NULL AS answers;

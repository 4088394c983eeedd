-- The inspection functions show stored data of every row: they refuse a caller whom
-- row-level security applies to, and a caller with column privileges only.
CREATE EXTENSION pg_columnar;
CREATE TABLE secret (id int, note text) USING pg_columnar;
INSERT INTO secret SELECT g, CASE WHEN g = 777 THEN 'TOPSECRET-777' ELSE 'n' || g END FROM generate_series(1, 999999, 1000) g;
INSERT INTO secret VALUES (999999, 'TOPSECRET-max');
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE ROLE regress_pgcol_rls;
GRANT SELECT ON secret TO regress_pgcol_rls;
CREATE POLICY few ON secret FOR SELECT TO regress_pgcol_rls USING (id < 9000);
SET ROLE regress_pgcol_rls;
SELECT count(*), max(id) FROM secret;
SELECT * FROM pgcol.vectors('secret');
SELECT * FROM pgcol.verify('secret');
SELECT * FROM pgcol.stripes('secret');
SELECT * FROM pgcol.columns('secret');
SELECT pgcol.image_hash('secret');
SELECT count(*) FROM pgcol.encoder_report('secret');
RESET ROLE;
-- the owner is not subject to the policy (no FORCE): allowed
SELECT rows FROM pgcol.verify('secret');
ALTER TABLE secret FORCE ROW LEVEL SECURITY;
SELECT rows FROM pgcol.verify('secret');
ALTER TABLE secret NO FORCE ROW LEVEL SECURITY;
-- RLS off for the table: allowed
ALTER TABLE secret DISABLE ROW LEVEL SECURITY;
SET ROLE regress_pgcol_rls;
SELECT rows FROM pgcol.verify('secret');
RESET ROLE;
-- column privileges only: refused, since zone maps show every column
CREATE ROLE regress_pgcol_cols;
GRANT SELECT (id) ON secret TO regress_pgcol_cols;
SET ROLE regress_pgcol_cols;
SELECT max(id) FROM secret;
SELECT count(*) FROM pgcol.vectors('secret');
RESET ROLE;
DROP TABLE secret;
DROP ROLE regress_pgcol_rls;
DROP ROLE regress_pgcol_cols;

-- Values of deleted rows, and the old values of updated rows, removed by VACUUM, cannot be
-- read back through the zone maps pgcol.vectors shows, by a role granted SELECT afterwards
-- (correctness review 2026-12-06, S2-e). zone_leak says whether a vector's zone_min or
-- zone_max of column 2 holds the text; a refusal (insufficient_privilege) also reads as
-- 'not readable', so that it holds whether the zones are computed from live rows only or the
-- function is refused to the role.
CREATE TABLE cvictim (id int, secret text) USING pg_columnar;
INSERT INTO cvictim SELECT g, 'public-' || g FROM generate_series(1, 1000) g;
INSERT INTO cvictim VALUES (5000, 'zz-TOPSECRET-PASSWORD-hunter2');
INSERT INTO cvictim VALUES (5001, 'zz-OLDSECRET-of-an-update');
DELETE FROM cvictim WHERE id = 5000;
UPDATE cvictim SET secret = 'public-5001' WHERE id = 5001;
VACUUM cvictim;
CREATE FUNCTION zone_leak(t regclass, needle text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  SELECT count(*) INTO n FROM pgcol.vectors(t)
  WHERE attnum = 2 AND (position(convert_to(needle, 'UTF8') IN decode(zone_min, 'hex')) > 0
                        OR position(convert_to(needle, 'UTF8') IN decode(zone_max, 'hex')) > 0);
  RETURN CASE WHEN n > 0 THEN 'READABLE' ELSE 'not readable' END;
EXCEPTION WHEN insufficient_privilege THEN
  RETURN 'not readable';
END $$;
CREATE ROLE regress_pgcol_reader;
GRANT SELECT ON cvictim TO regress_pgcol_reader;
SET ROLE regress_pgcol_reader;
SELECT count(*), max(secret) FROM cvictim;
SELECT zone_leak('cvictim', 'TOPSECRET') AS deleted_row, zone_leak('cvictim', 'OLDSECRET') AS updated_row;
RESET ROLE;
-- control: the zones of vectors whose rows are all live are shown; the others are NULL, also
-- to the owner (every snapshot after the DELETE misses those rows)
SELECT count(*) FILTER (WHERE zone_max IS NOT NULL) AS shown, count(*) FILTER (WHERE zone_max IS NULL) AS hidden
FROM pgcol.vectors('cvictim') WHERE attnum = 2;
INSERT INTO cvictim SELECT g, 'public-' || g FROM generate_series(2001, 2100) g;
SELECT count(*) FILTER (WHERE zone_max IS NOT NULL) AS shown, count(*) FILTER (WHERE zone_max IS NULL) AS hidden
FROM pgcol.vectors('cvictim') WHERE attnum = 2;
DROP TABLE cvictim;
DROP FUNCTION zone_leak(regclass, text);
DROP ROLE regress_pgcol_reader;

-- ALTER TABLE by a role that does not own the table fails with "must be owner", whether or not
-- it names pg_columnar's option, and changes nothing (correctness review 2026-12-06, S2-d;
-- that it fails before it locks the table: tests/isolation/specs/alter-owner-lock.spec)
CREATE TABLE victim (id int, secret text);
CREATE TABLE sorted (id int, v int) USING pg_columnar WITH (pg_columnar.sort_key = 'id');
CREATE ROLE regress_pgcol_mallory;
GRANT SELECT ON victim, sorted TO regress_pgcol_mallory;
SET ROLE regress_pgcol_mallory;
ALTER TABLE victim SET ACCESS METHOD pg_columnar, SET (pg_columnar.sort_key = 'id');
ALTER TABLE victim SET ACCESS METHOD pg_columnar;
ALTER TABLE victim SET (pg_columnar.sort_key = 'id');
ALTER TABLE sorted SET (fillfactor = 50);
ALTER TABLE sorted SET (pg_columnar.sort_key = 'v'), SET (fillfactor = 50);
ALTER TABLE sorted SET (pg_columnar.sort_key = 'v');
ALTER TABLE sorted RESET (pg_columnar.sort_key);
ALTER TABLE sorted SET ACCESS METHOD heap;
RESET ROLE;
SELECT c.relname, a.amname, c.reloptions FROM pg_class c JOIN pg_am a ON a.oid = c.relam
WHERE c.relname IN ('victim', 'sorted') ORDER BY c.relname;
DROP TABLE victim, sorted;
DROP ROLE regress_pgcol_mallory;

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

-- A backend keeps its reads of the stripe catalog under MVCC snapshots and gives one again
-- for a snapshot of the same content in the same transaction (storage::catalog::stripe_list):
-- planning and executing a query read the catalog once. What a kept read holds must never
-- outlive what it saw: every count is compared with a heap twin after this backend's own
-- writes, a rolled-back savepoint, an exception block and a cursor.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 1024;
CREATE TABLE c (id int, v float8) USING pg_columnar;
CREATE TABLE ch (id int, v float8);
INSERT INTO c SELECT g, g * 0.5 FROM generate_series(1, 3000) g;
INSERT INTO ch SELECT g, g * 0.5 FROM generate_series(1, 3000) g;
CREATE FUNCTION same(label text) RETURNS text LANGUAGE sql AS $$
  SELECT label || ': ' || CASE WHEN (SELECT count(*) FROM c WHERE id > 1500) = (SELECT count(*) FROM ch WHERE id > 1500)
      AND (SELECT sum(v) FROM c) IS NOT DISTINCT FROM (SELECT sum(v) FROM ch)
    THEN 'same' ELSE 'DIFFERENT' END $$;
-- one snapshot for the whole transaction: the first read scans the catalog, the planner's
-- and the scan's later questions, and the next query's, are given the kept read
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT catalog_scans AS scans0, reuses AS reuses0 FROM pgcol.kept_catalog_reads() \gset
SELECT count(*) FROM c WHERE id > 1500;
SELECT count(*) FROM c WHERE id > 1500;
SELECT catalog_scans - :scans0 AS catalog_scans, reuses - :reuses0 >= 3 AS reused, kept > 0 AS kept FROM pgcol.kept_catalog_reads();
COMMIT;
-- the control: snapshots of other content (a later command of a transaction that has
-- written) are not given each other's reads
BEGIN;
SELECT catalog_scans AS scans0 FROM pgcol.kept_catalog_reads() \gset
INSERT INTO c VALUES (3001, 1);
INSERT INTO ch VALUES (3001, 1);
SELECT count(*) FROM c;
INSERT INTO c VALUES (3002, 1);
INSERT INTO ch VALUES (3002, 1);
SELECT count(*) FROM c;
SELECT catalog_scans - :scans0 >= 2 AS scanned_again FROM pgcol.kept_catalog_reads();
COMMIT;
SELECT same('after a transaction of writes');
-- a savepoint's stripe is seen, then rolled back: the read that saw it is forgotten
BEGIN;
SELECT count(*) FROM c;
SAVEPOINT s;
INSERT INTO c SELECT g, 1 FROM generate_series(5001, 5100) g;
SELECT count(*) FROM c;
SELECT count(*) FROM c;
ROLLBACK TO s;
SELECT count(*) FROM c;
SELECT count(*) FROM c WHERE id > 1500;
COMMIT;
SELECT same('after a rolled-back savepoint');
-- an exception block: rows read inside the block, gone after it
DO $$
DECLARE n bigint;
BEGIN
  SELECT count(*) INTO n FROM c;
  BEGIN
    INSERT INTO c SELECT g, 1 FROM generate_series(6001, 6500) g;
    SELECT count(*) INTO n FROM c;
    RAISE WARNING 'inside the block: %', n;
    RAISE EXCEPTION 'undo';
  EXCEPTION WHEN raise_exception THEN
    NULL;
  END;
  SELECT count(*) INTO n FROM c;
  RAISE WARNING 'after the block: %', n;
END $$;
SELECT same('after an exception block');
-- a cursor opened before this transaction's insert keeps its snapshot; a new query sees it
BEGIN;
DECLARE cur CURSOR FOR SELECT count(*) FROM c;
INSERT INTO c VALUES (3003, 1);
INSERT INTO ch VALUES (3003, 1);
FETCH cur;
SELECT count(*) FROM c;
COMMIT;
SELECT same('after a cursor');
-- DELETE and VACUUM replace stripes under new catalog rows
DELETE FROM c WHERE id % 7 = 0;
DELETE FROM ch WHERE id % 7 = 0;
SELECT same('after a delete');
VACUUM c;
SELECT same('after VACUUM');
TRUNCATE c;
SELECT count(*) FROM c;

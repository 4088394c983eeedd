-- The changes of tests/logical/run, run on the pg_columnar tables and on their heap twins.
INSERT INTO t VALUES (1, 'host_1', 1.5, NULL), (2, NULL, 2.5, 'two'), (3, 'host_3', 'NaN', '');
INSERT INTO t SELECT g, 'host_' || (g % 7), g * 0.25, NULL FROM generate_series(10, 1200) g;
COPY t FROM STDIN;
5000	copied	-0	a line\twith a tab
5001	\N	1e300	\N
\.
-- a value larger than a page (heap keeps it out of line; both decode it whole)
INSERT INTO t VALUES (6000, 'big', 0, repeat('0123456789', 2000));
UPDATE t SET v = v + 1 WHERE id % 10 = 0;                      -- not the key
UPDATE t SET id = id + 100000 WHERE id BETWEEN 20 AND 25;       -- the key
DELETE FROM t WHERE id % 3 = 0 AND id < 200;
DELETE FROM t WHERE id = 6000;
INSERT INTO t VALUES (1, 'conflict', 0, NULL), (7000, 'new', 0, NULL)
  ON CONFLICT (id) DO UPDATE SET host = excluded.host || ' (upserted)';
INSERT INTO t VALUES (2, 'ignored', 0, NULL), (7001, 'new', 0, NULL) ON CONFLICT DO NOTHING;
MERGE INTO t USING (SELECT g AS id FROM generate_series(1195, 1205) g) s ON t.id = s.id
  WHEN MATCHED AND t.id % 2 = 0 THEN DELETE
  WHEN MATCHED THEN UPDATE SET note = 'merged'
  WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'merge', 0, NULL);
-- rolled back: a statement, a transaction, a subtransaction, a failed statement, an
-- exception block
BEGIN; INSERT INTO t VALUES (8000, 'rolled back', 0, NULL); ROLLBACK;
BEGIN;
INSERT INTO t VALUES (8001, 'kept', 0, NULL);
SAVEPOINT s1;
UPDATE t SET note = 'rolled back' WHERE id < 100;
DELETE FROM t WHERE id = 1;
ROLLBACK TO s1;
UPDATE t SET note = 'after the savepoint' WHERE id = 2;
COMMIT;
\set ON_ERROR_STOP 0
INSERT INTO t SELECT g, 'failing', 0, NULL FROM generate_series(9000, 9100) g UNION ALL SELECT 1, 'dup', 0, NULL;
\set ON_ERROR_STOP 1
DO $$
BEGIN
  INSERT INTO t VALUES (8100, 'before the block', 0, NULL);
  BEGIN
    INSERT INTO t VALUES (8101, 'in the block', 0, NULL);
    UPDATE t SET note = 'in the block' WHERE id = 3;
    PERFORM 1 / 0;
  EXCEPTION WHEN division_by_zero THEN
    INSERT INTO t VALUES (8102, 'in the handler', 0, NULL);
  END;
END $$;
-- prepared transactions, committed and rolled back
BEGIN; INSERT INTO t VALUES (8200, 'prepared', 0, NULL); DELETE FROM t WHERE id = 11; PREPARE TRANSACTION 'lt1';
COMMIT PREPARED 'lt1';
BEGIN; INSERT INTO t VALUES (8201, 'prepared, rolled back', 0, NULL); PREPARE TRANSACTION 'lt2';
ROLLBACK PREPARED 'lt2';
-- one transaction, heap and the other table together, interleaved
BEGIN;
INSERT INTO h VALUES (1, 1);
INSERT INTO t VALUES (8300, 'with heap', 0, NULL);
UPDATE h SET v = 2 WHERE id = 1;
UPDATE t SET note = 'with heap' WHERE id = 8300;
DELETE FROM h WHERE id = 1;
COMMIT;
-- REPLICA IDENTITY FULL and DEFAULT without a key
INSERT INTO f VALUES (1, 'one'), (2, NULL), (3, 'three');
UPDATE f SET b = 'uno' WHERE a = 1;
DELETE FROM f WHERE a = 2;
INSERT INTO n VALUES (1, 'one'), (2, 'two');
-- partitions, and a row moving between them
INSERT INTO p SELECT g, date '2024-01-01' + g, g FROM generate_series(990, 1010) g;
UPDATE p SET v = -v WHERE id % 4 = 0;
UPDATE p SET id = id + 500 WHERE id = 995;
DELETE FROM p WHERE id = 1005;
-- maintenance decodes to nothing
VACUUM t;
VACUUM FULL t;
CLUSTER t USING t_pkey;
VACUUM (FULL, ANALYZE) f;
TRUNCATE n;

-- pg_columnar.write_buffer_memory bounds the rows a session holds in memory for all
-- pg_columnar tables together: past it the largest buffer is written as a stripe early. A
-- load into many partitions at once then writes more, smaller stripes (the control: with
-- the default, one stripe per partition), and every row arrives, also when a subtransaction
-- writes an enclosing level's buffer and rolls back. Against a heap twin. And COPY into
-- more than 32 partitions writes a stripe per partition, not per batch.
CREATE EXTENSION pg_columnar;
CREATE TABLE p (part int, id int, v text, f float8) PARTITION BY LIST (part);
DO $$ BEGIN
  FOR i IN 0..7 LOOP
    EXECUTE format('CREATE TABLE p_%s PARTITION OF p FOR VALUES IN (%s) USING pg_columnar', i, i);
  END LOOP;
END $$;
CREATE TABLE ph (part int, id int, v text, f float8);
CREATE FUNCTION stripes() RETURNS bigint LANGUAGE sql AS
  $$ SELECT count(*) FROM pg_class c, pgcol.stripes(c.oid) WHERE c.relname LIKE 'p\_%' $$;
CREATE FUNCTION same() RETURNS boolean LANGUAGE sql AS
  $$ SELECT NOT EXISTS (SELECT * FROM p EXCEPT ALL SELECT * FROM ph) AND NOT EXISTS (SELECT * FROM ph EXCEPT ALL SELECT * FROM p) $$;
INSERT INTO ph SELECT g % 8, g, 'value ' || g, g * 0.5 FROM generate_series(1, 80000) g;
SHOW pg_columnar.write_buffer_memory;
-- the default: every partition's rows stay buffered until the statement ends
INSERT INTO p SELECT g % 8, g, 'value ' || g, g * 0.5 FROM generate_series(1, 80000) g;
SELECT stripes(), same();
-- 1 MB: buffers are written early, whichever partition's is largest
TRUNCATE p;
SET pg_columnar.write_buffer_memory = '1MB';
INSERT INTO p SELECT g % 8, g, 'value ' || g, g * 0.5 FROM generate_series(1, 80000) g;
SELECT stripes() > 16 AS written_early, same();
-- COPY (batches of rows per partition) likewise
TRUNCATE p;
COPY (SELECT g % 8, g, 'value ' || g, g * 0.5 FROM generate_series(1, 80000) g) TO '/tmp/pg_columnar_write_memory.copy';
COPY p FROM '/tmp/pg_columnar_write_memory.copy';
SELECT stripes() > 16 AS written_early, same();
-- a subtransaction writes the enclosing statement's buffer (the largest) and rolls back:
-- that stripe's catalog row is inserted again once the rollback is over, the rest of the
-- statement's rows are written at its end (two stripes), and every row is there
TRUNCATE p, ph;
SET pg_columnar.write_buffer_memory = '1200kB';
CREATE FUNCTION side(i int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF i = 30000 THEN
    BEGIN
      INSERT INTO p SELECT 1, g, 'value ' || g, g * 0.5 FROM generate_series(1, 15000) g;
      -- the catalog itself (pgcol.stripes() would write the buffers first)
      RAISE WARNING 'stripes in the subtransaction: %', (SELECT count(*) FROM pgcol.stripe);
      RAISE EXCEPTION 'undone';
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
  END IF;
  RETURN i;
END $$;
INSERT INTO p SELECT 0, side(g), 'value ' || g, g * 0.5 FROM generate_series(1, 40000) g;
INSERT INTO ph SELECT 0, g, 'value ' || g, g * 0.5 FROM generate_series(1, 40000) g;
SELECT part, count(*) FROM p GROUP BY part ORDER BY part;
SELECT count(*) AS stripes FROM pgcol.stripes('p_0');
SELECT same();
RESET pg_columnar.write_buffer_memory;
-- COPY into more than 32 partitions at once sets partitions' batches aside in turn; each
-- partition's rows still become one stripe (they were a stripe per batch set aside)
CREATE TABLE q (part int, id int) PARTITION BY LIST (part);
DO $$ BEGIN
  FOR i IN 0..39 LOOP
    EXECUTE format('CREATE TABLE q_%s PARTITION OF q FOR VALUES IN (%s) USING pg_columnar', i, i);
  END LOOP;
END $$;
COPY (SELECT g % 40, g FROM generate_series(1, 40000) g) TO '/tmp/pg_columnar_write_memory.copy';
COPY q FROM '/tmp/pg_columnar_write_memory.copy';
SELECT count(*) AS stripes, sum(row_count) AS row_numbers FROM pg_class c, pgcol.stripes(c.oid) WHERE c.relname LIKE 'q\_%';
SELECT count(*), count(DISTINCT id), sum(id) FROM q;
DROP TABLE q;
DROP TABLE p, ph;
DROP FUNCTION stripes(), same(), side(int);
DROP EXTENSION pg_columnar;

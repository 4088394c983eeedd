-- Single-session defects of the correctness review of 2026-12-06: rows a nested statement
-- inserts before it reads the table (S1-c), cursors that turn back after the end of a plain
-- table scan (S1-d), system columns of rows just inserted, updated, deleted or locked (S2-c,
-- S4-b), a row lock after a TRUNCATE rolled back in a transaction full of combo command ids
-- (S2-f), ON CONFLICT DO NOTHING with duplicates inside the batch (S3-b) and sort keys with
-- names that need quotes (S4-c). Each check runs on a pg_columnar table and on its heap twin
-- (name_heap) and prints both, or prints what heap prints: the expected values are heap's.
CREATE EXTENSION pg_columnar;

-- S1-c. A nested statement inserts into the table and reads it in the same command (a
-- data-modifying CTE in a function the enclosing INSERT calls per row): it sees the rows the
-- enclosing statement inserted before the call, not its own (same command). n = 1000 * (rows
-- the CTE inserted) + (rows the call sees): 2 (k - 1) for outer row k.
CREATE TABLE u (k int, n bigint) USING pg_columnar;
CREATE TABLE u_heap (k int, n bigint);
CREATE FUNCTION f(x int) RETURNS bigint LANGUAGE sql AS $$
  WITH ins AS (INSERT INTO u VALUES (1000 + x, 0) RETURNING 1)
  SELECT (SELECT count(*) FROM ins) * 1000 + (SELECT count(*) FROM u) $$;
CREATE FUNCTION f_heap(x int) RETURNS bigint LANGUAGE sql AS $$
  WITH ins AS (INSERT INTO u_heap VALUES (1000 + x, 0) RETURNING 1)
  SELECT (SELECT count(*) FROM ins) * 1000 + (SELECT count(*) FROM u_heap) $$;
INSERT INTO u SELECT g, f(g) FROM generate_series(1, 5) g;
INSERT INTO u_heap SELECT g, f_heap(g) FROM generate_series(1, 5) g;
SELECT k, c.n AS pg_columnar, h.n AS heap FROM u c FULL JOIN u_heap h USING (k) ORDER BY k;
-- INSERT ... RETURNING (SELECT count(*) FROM the same table) in the called function
CREATE TABLE u2 (k int, n bigint) USING pg_columnar;
CREATE TABLE u2_heap (k int, n bigint);
CREATE FUNCTION r(x int) RETURNS bigint LANGUAGE sql AS $$
  INSERT INTO u2 VALUES (1000 + x, 0) RETURNING (SELECT count(*) FROM u2) $$;
CREATE FUNCTION r_heap(x int) RETURNS bigint LANGUAGE sql AS $$
  INSERT INTO u2_heap VALUES (1000 + x, 0) RETURNING (SELECT count(*) FROM u2_heap) $$;
INSERT INTO u2 SELECT g, r(g) FROM generate_series(1, 5) g;
INSERT INTO u2_heap SELECT g, r_heap(g) FROM generate_series(1, 5) g;
SELECT k, c.n AS pg_columnar, h.n AS heap FROM u2 c FULL JOIN u2_heap h USING (k) WHERE k <= 5 ORDER BY k;
-- the same CTE in a BEFORE ROW trigger (the outer row is not inserted yet: 2 (k - 1)) and in
-- an AFTER ROW trigger, logged (every outer row is inserted: 5 + (k - 1))
CREATE TABLE u3 (k int, n bigint) USING pg_columnar;
CREATE TABLE u3_heap (k int, n bigint);
CREATE TABLE u3_log (tab text, k int, n bigint);
CREATE FUNCTION nested_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE c bigint;
BEGIN
  IF pg_trigger_depth() = 1 AND NEW.k < 1000 THEN
    EXECUTE format('WITH ins AS (INSERT INTO %I VALUES ($1, 0) RETURNING 1) '
                   'SELECT (SELECT count(*) FROM ins) * 1000 + (SELECT count(*) FROM %I)', TG_TABLE_NAME, TG_TABLE_NAME)
      INTO c USING NEW.k + CASE TG_WHEN WHEN 'BEFORE' THEN 1000 ELSE 2000 END;
    IF TG_WHEN = 'BEFORE' THEN
      NEW.n := c;
    ELSE
      INSERT INTO u3_log VALUES (TG_TABLE_NAME, NEW.k, c);
    END IF;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER before_row BEFORE INSERT ON u3 FOR EACH ROW EXECUTE FUNCTION nested_count();
CREATE TRIGGER before_row BEFORE INSERT ON u3_heap FOR EACH ROW EXECUTE FUNCTION nested_count();
INSERT INTO u3 SELECT g, 0 FROM generate_series(1, 5) g;
INSERT INTO u3_heap SELECT g, 0 FROM generate_series(1, 5) g;
SELECT k, c.n AS pg_columnar, h.n AS heap FROM u3 c FULL JOIN u3_heap h USING (k) WHERE k <= 5 ORDER BY k;
DROP TRIGGER before_row ON u3;
DROP TRIGGER before_row ON u3_heap;
TRUNCATE u3, u3_heap;
CREATE TRIGGER after_row AFTER INSERT ON u3 FOR EACH ROW EXECUTE FUNCTION nested_count();
CREATE TRIGGER after_row AFTER INSERT ON u3_heap FOR EACH ROW EXECUTE FUNCTION nested_count();
INSERT INTO u3 SELECT g, 0 FROM generate_series(1, 5) g;
INSERT INTO u3_heap SELECT g, 0 FROM generate_series(1, 5) g;
SELECT k, c.n AS pg_columnar, h.n AS heap
FROM (SELECT k, n FROM u3_log WHERE tab = 'u3') c FULL JOIN (SELECT k, n FROM u3_log WHERE tab = 'u3_heap') h USING (k) ORDER BY k;
SELECT (SELECT count(*) FROM u3) AS pg_columnar, (SELECT count(*) FROM u3_heap) AS heap;

-- S1-d. Cursors over the table access method's own scan (the custom scan off): a scan that
-- ran off the end turns back at the last row. FETCH LAST, FETCH ABSOLUTE -n, MOVE FORWARD ALL
-- then FETCH BACKWARD, of a SCROLL cursor and of one declared without SCROLL (a plain scan can
-- go backward, so it may), on 2,000 rows in one stripe and 6,000 in three.
SET pg_columnar.enable_custom_scan = off;
SET pg_columnar.stripe_row_limit = 2048;
CREATE TABLE c2k (id int, v text) USING pg_columnar;
CREATE TABLE c2k_heap (id int, v text);
INSERT INTO c2k SELECT g, 'v' || g FROM generate_series(1, 2000) g;
INSERT INTO c2k_heap SELECT g, 'v' || g FROM generate_series(1, 2000) g;
CREATE TABLE c6k (id int, v text) USING pg_columnar;
CREATE TABLE c6k_heap (id int, v text);
INSERT INTO c6k SELECT g, 'v' || g FROM generate_series(1, 6000) g;
INSERT INTO c6k_heap SELECT g, 'v' || g FROM generate_series(1, 6000) g;
SELECT count(*) > 1 AS several_stripes FROM pgcol.stripes('c6k');
RESET pg_columnar.stripe_row_limit;
EXPLAIN (COSTS OFF) SELECT id FROM c2k;
-- as the review ran it
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT id FROM c2k;
FETCH LAST FROM c;
FETCH ABSOLUTE -3 FROM c;
MOVE FORWARD ALL IN c;
FETCH BACKWARD 2 FROM c;
DECLARE c2 CURSOR FOR SELECT id FROM c2k;
MOVE FORWARD ALL IN c2;
FETCH BACKWARD 1 FROM c2;
COMMIT;
-- every step on both tables: (step, pg_columnar, heap)
CREATE FUNCTION walk(tab text) RETURNS TABLE (step text, result text) LANGUAGE plpgsql AS $$
DECLARE c refcursor; x int; n int; total int;
BEGIN
  EXECUTE format('SELECT count(*) FROM %I', tab) INTO total;
  OPEN c SCROLL FOR EXECUTE format('SELECT id FROM %I', tab);
  FETCH LAST FROM c INTO x; step := 'scroll: FETCH LAST'; result := x; RETURN NEXT;
  FETCH ABSOLUTE -3 FROM c INTO x; step := 'FETCH ABSOLUTE -3'; result := x; RETURN NEXT;
  FETCH ABSOLUTE -(total / 2) FROM c INTO x; step := 'FETCH ABSOLUTE -(rows / 2)'; result := x; RETURN NEXT;
  MOVE FORWARD ALL IN c; GET DIAGNOSTICS n = ROW_COUNT; step := 'MOVE FORWARD ALL'; result := n; RETURN NEXT;
  FETCH BACKWARD FROM c INTO x; step := 'FETCH BACKWARD'; result := x; RETURN NEXT;
  FETCH BACKWARD FROM c INTO x; step := 'FETCH BACKWARD'; result := x; RETURN NEXT;
  FETCH FIRST FROM c INTO x; step := 'FETCH FIRST'; result := x; RETURN NEXT;
  FETCH LAST FROM c INTO x; step := 'FETCH LAST'; result := x; RETURN NEXT;
  FETCH NEXT FROM c INTO x; step := 'FETCH NEXT (after the end)'; result := coalesce(x::text, 'none'); RETURN NEXT;
  FETCH PRIOR FROM c INTO x; step := 'FETCH PRIOR'; result := x; RETURN NEXT;
  MOVE BACKWARD ALL IN c; GET DIAGNOSTICS n = ROW_COUNT; step := 'MOVE BACKWARD ALL'; result := n; RETURN NEXT;
  FETCH NEXT FROM c INTO x; step := 'FETCH NEXT'; result := x; RETURN NEXT;
  CLOSE c;
  OPEN c FOR EXECUTE format('SELECT id FROM %I', tab);
  MOVE FORWARD ALL IN c; GET DIAGNOSTICS n = ROW_COUNT; step := 'no scroll: MOVE FORWARD ALL'; result := n; RETURN NEXT;
  FETCH BACKWARD FROM c INTO x; step := 'FETCH BACKWARD'; result := x; RETURN NEXT;
  CLOSE c;
END $$;
SELECT c.step, c.result AS pg_columnar, h.result AS heap
FROM walk('c2k') WITH ORDINALITY c(step, result, i) JOIN walk('c2k_heap') WITH ORDINALITY h(step, result, i) USING (i) ORDER BY i;
SELECT c.step, c.result AS pg_columnar, h.result AS heap
FROM walk('c6k') WITH ORDINALITY c(step, result, i) JOIN walk('c6k_heap') WITH ORDINALITY h(step, result, i) USING (i) ORDER BY i;
-- the last row deleted (the scan's last step passes over it)
DELETE FROM c6k WHERE id = 6000;
DELETE FROM c6k_heap WHERE id = 6000;
SELECT c.step, c.result AS pg_columnar, h.result AS heap
FROM walk('c6k') WITH ORDINALITY c(step, result, i) JOIN walk('c6k_heap') WITH ORDINALITY h(step, result, i) USING (i) ORDER BY i;
RESET pg_columnar.enable_custom_scan;

-- S2-c, S4-b. System columns of the row an INSERT, UPDATE or upsert returns (xmin is the
-- current transaction, xmax 0; an upsert's updated row has xmax set: the idiom
-- "RETURNING (xmax = 0) AS inserted"), of a DELETE's row (xmax is the deleter) and of a row
-- locked FOR UPDATE (xmax is the locker); cmin and cmax are the command's id.
CREATE TABLE sc (id int PRIMARY KEY, v int) USING pg_columnar;
CREATE TABLE sc_heap (id int PRIMARY KEY, v int);
INSERT INTO sc SELECT g, g FROM generate_series(1, 10) g;
INSERT INTO sc_heap SELECT g, g FROM generate_series(1, 10) g;
INSERT INTO sc VALUES (11, 11) RETURNING id, xmin = txid_current()::text::xid AS own, xmax, cmin, cmax;
INSERT INTO sc_heap VALUES (11, 11) RETURNING id, xmin = txid_current()::text::xid AS own, xmax, cmin, cmax;
UPDATE sc SET v = v + 1 WHERE id = 1 RETURNING id, v, xmin = txid_current()::text::xid AS own, xmax, cmin, cmax;
UPDATE sc_heap SET v = v + 1 WHERE id = 1 RETURNING id, v, xmin = txid_current()::text::xid AS own, xmax, cmin, cmax;
INSERT INTO sc VALUES (3, 0), (12, 12) ON CONFLICT (id) DO UPDATE SET v = sc.v + 100 RETURNING id, v, (xmax = 0) AS inserted;
INSERT INTO sc_heap VALUES (3, 0), (12, 12) ON CONFLICT (id) DO UPDATE SET v = sc_heap.v + 100 RETURNING id, v, (xmax = 0) AS inserted;
INSERT INTO sc VALUES (4, 0) ON CONFLICT (id) DO UPDATE SET v = sc.v + 100 RETURNING id, v, cmin, cmax;
INSERT INTO sc_heap VALUES (4, 0) ON CONFLICT (id) DO UPDATE SET v = sc_heap.v + 100 RETURNING id, v, cmin, cmax;
DELETE FROM sc WHERE id = 5 RETURNING id, xmax = txid_current()::text::xid AS deleted_by_me;
DELETE FROM sc_heap WHERE id = 5 RETURNING id, xmax = txid_current()::text::xid AS deleted_by_me;
-- in a transaction: the second changing command's rows have command id 1
BEGIN;
INSERT INTO sc VALUES (13, 13) RETURNING id, xmin = txid_current()::text::xid AS own, xmax, cmin, cmax;
UPDATE sc SET v = v + 1 WHERE id = 13 RETURNING id, v, xmin = txid_current()::text::xid AS own, xmax, cmin, cmax;
SELECT id FROM sc WHERE id = 7 FOR UPDATE;
SELECT id, xmax = txid_current()::text::xid AS locked_by_me FROM sc WHERE id = 7;
COMMIT;
BEGIN;
INSERT INTO sc_heap VALUES (13, 13) RETURNING id, xmin = txid_current()::text::xid AS own, xmax, cmin, cmax;
UPDATE sc_heap SET v = v + 1 WHERE id = 13 RETURNING id, v, xmin = txid_current()::text::xid AS own, xmax, cmin, cmax;
SELECT id FROM sc_heap WHERE id = 7 FOR UPDATE;
SELECT id, xmax = txid_current()::text::xid AS locked_by_me FROM sc_heap WHERE id = 7;
COMMIT;
SELECT (SELECT string_agg(id || ':' || v, ' ' ORDER BY id) FROM sc) AS pg_columnar,
       (SELECT string_agg(id || ':' || v, ' ' ORDER BY id) FROM sc_heap) AS heap;

-- S2-f. A row lock (and an UPDATE, a DELETE) after a TRUNCATE of the table rolled back to a
-- savepoint, in a transaction that has made more combo command ids than commands: the
-- stripe catalog rows the transaction inserted and the TRUNCATE deleted carry a combo id,
-- not their command id.
CREATE TABLE cc (a int) USING pg_columnar;
CREATE TABLE cc_heap (a int);
CREATE TABLE hx (g int, i int) USING heap;
CREATE FUNCTION ins(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN FOR g IN 1..n LOOP INSERT INTO hx SELECT g, i FROM generate_series(1, n) i; END LOOP; END $$;
CREATE FUNCTION del(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN FOR k IN 1..n LOOP DELETE FROM hx WHERE i = k; END LOOP; END $$;
BEGIN;
SELECT ins(80);
SELECT del(80);
INSERT INTO cc SELECT g FROM generate_series(1, 10) g;
SAVEPOINT a;
TRUNCATE cc;
ROLLBACK TO a;
UPDATE cc SET a = a + 100 WHERE a <= 5;
DELETE FROM cc WHERE a = 6;
SELECT a FROM cc WHERE a = 7 FOR UPDATE;
INSERT INTO cc VALUES (11);
SELECT count(*), sum(a) FROM cc;
COMMIT;
BEGIN;
SELECT ins(80);
SELECT del(80);
INSERT INTO cc_heap SELECT g FROM generate_series(1, 10) g;
SAVEPOINT a;
TRUNCATE cc_heap;
ROLLBACK TO a;
UPDATE cc_heap SET a = a + 100 WHERE a <= 5;
DELETE FROM cc_heap WHERE a = 6;
SELECT a FROM cc_heap WHERE a = 7 FOR UPDATE;
INSERT INTO cc_heap VALUES (11);
SELECT count(*), sum(a) FROM cc_heap;
COMMIT;
SELECT (SELECT string_agg(a::text, ' ' ORDER BY a) FROM cc) AS pg_columnar,
       (SELECT string_agg(a::text, ' ' ORDER BY a) FROM cc_heap) AS heap;

-- S3-b. INSERT ... ON CONFLICT DO NOTHING whose batch holds duplicates (5,000 rows, 2,501
-- keys): the rows of heap, written as few stripes (not one per duplicate); then a batch that
-- conflicts with stored rows, and DO UPDATE meeting a key twice (an error, as on heap).
CREATE TABLE ud (k int PRIMARY KEY, v int) USING pg_columnar;
CREATE TABLE ud_heap (k int PRIMARY KEY, v int);
INSERT INTO ud SELECT g / 2, g FROM generate_series(1, 5000) g ON CONFLICT DO NOTHING;
INSERT INTO ud_heap SELECT g / 2, g FROM generate_series(1, 5000) g ON CONFLICT DO NOTHING;
SELECT count(*) < 10 AS few_stripes FROM pgcol.stripes('ud');
SELECT (SELECT format('%s rows, keys %s..%s, sum(v) %s, %s', count(*), min(k), max(k), sum(v), md5(string_agg(k || ':' || v, ',' ORDER BY k))) FROM ud) AS pg_columnar,
       (SELECT format('%s rows, keys %s..%s, sum(v) %s, %s', count(*), min(k), max(k), sum(v), md5(string_agg(k || ':' || v, ',' ORDER BY k))) FROM ud_heap) AS heap;
INSERT INTO ud SELECT g / 2, -g FROM generate_series(4001, 7000) g ON CONFLICT DO NOTHING;
INSERT INTO ud_heap SELECT g / 2, -g FROM generate_series(4001, 7000) g ON CONFLICT DO NOTHING;
SELECT count(*) < 20 AS few_stripes FROM pgcol.stripes('ud');
SELECT (SELECT format('%s rows, keys %s..%s, sum(v) %s, %s', count(*), min(k), max(k), sum(v), md5(string_agg(k || ':' || v, ',' ORDER BY k))) FROM ud) AS pg_columnar,
       (SELECT format('%s rows, keys %s..%s, sum(v) %s, %s', count(*), min(k), max(k), sum(v), md5(string_agg(k || ':' || v, ',' ORDER BY k))) FROM ud_heap) AS heap;
INSERT INTO ud SELECT 9000 + g / 2, g FROM generate_series(1, 4) g ON CONFLICT (k) DO UPDATE SET v = 0;
INSERT INTO ud_heap SELECT 9000 + g / 2, g FROM generate_series(1, 4) g ON CONFLICT (k) DO UPDATE SET v = 0;
SELECT (SELECT count(*) FROM ud WHERE k >= 9000) AS pg_columnar, (SELECT count(*) FROM ud_heap WHERE k >= 9000) AS heap;

-- S4-c. pgcol.sort_order names the key's columns as the key is stored, quoted where needed:
-- a key of "Key=1" and "a,b" reads as two columns.
SET pg_columnar.stripe_row_limit = 1024;
CREATE TABLE sk ("Key=1" int, "a,b" text, c int) USING pg_columnar WITH (pg_columnar.sort_key = '"Key=1", "a,b"');
SELECT array_to_string(reloptions, '; ') AS stored FROM pg_class WHERE oid = 'sk'::regclass;
INSERT INTO sk SELECT 100 - g, 'x' || g, 200 - g FROM generate_series(1, 100) g;
ALTER TABLE sk SET (pg_columnar.sort_key = 'c, "a,b"');
INSERT INTO sk SELECT 100 - g, 'y' || g, 200 - g FROM generate_series(1, 100) g;
SELECT sort_key, rows_moved FROM pgcol.sort_order('sk') ORDER BY first_row;
RESET pg_columnar.stripe_row_limit;

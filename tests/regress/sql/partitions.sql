-- The time-series lifecycle: pgcol.convert_partitions converts each partition of a table
-- partitioned by time whose upper bound is older than a cutoff (one per transaction, with a
-- sort key if given; sub-partitions leaf by leaf; the default partition and recent ones
-- left alone), and pgcol.partitions reports them. Rows equal a heap twin's before and after;
-- the primary key, an index and a CHECK constraint are kept; a second call changes nothing.
CREATE EXTENSION pg_columnar;
CREATE FUNCTION parts(t regclass) RETURNS TABLE (p regclass, am name, bounds text)
    LANGUAGE sql AS $$ SELECT partition, access_method, bounds FROM pgcol.partitions(t) $$;
CREATE TABLE m (t timestamptz NOT NULL, host int NOT NULL, v float8 CHECK (v >= 0),
                PRIMARY KEY (host, t)) PARTITION BY RANGE (t);
CREATE INDEX ON m (v);
CREATE TABLE m_2020_01_01 PARTITION OF m FOR VALUES FROM ('2020-01-01 00:00+00') TO ('2020-01-02 00:00+00');
CREATE TABLE m_2020_01_02 PARTITION OF m FOR VALUES FROM ('2020-01-02 00:00+00') TO ('2020-01-03 00:00+00');
CREATE TABLE m_recent PARTITION OF m FOR VALUES FROM ('2020-01-03 00:00+00') TO ('2999-01-01 00:00+00');
CREATE TABLE m_2019 PARTITION OF m FOR VALUES FROM ('2019-01-01 00:00+00') TO ('2020-01-01 00:00+00')
    PARTITION BY LIST (host);
CREATE TABLE m_2019_low PARTITION OF m_2019 FOR VALUES IN (1, 2, 3);
CREATE TABLE m_2019_rest PARTITION OF m_2019 DEFAULT;
CREATE TABLE m_default PARTITION OF m DEFAULT;
CREATE TABLE m_heap (LIKE m INCLUDING ALL);
INSERT INTO m SELECT '2019-12-31 00:00+00'::timestamptz + g * interval '1 minute', g % 7, (g * 37) % 101
  FROM generate_series(1, 5000) g;
INSERT INTO m VALUES ('1990-01-01 00:00+00', 1, 1), ('3000-01-01 00:00+00', 1, 2);
INSERT INTO m_heap SELECT * FROM m;
SELECT * FROM parts('m');
-- before: the same rows
SELECT (SELECT md5(string_agg(x::text, '|' ORDER BY x::text)) FROM m x)
     = (SELECT md5(string_agg(x::text, '|' ORDER BY x::text)) FROM m_heap x) AS same_rows;
CALL pgcol.convert_partitions('m', '1 day', 'host, t');
SELECT * FROM parts('m');
SELECT relname, reloptions FROM pg_class WHERE relname IN ('m_2020_01_01', 'm_2019_low', 'm_recent') ORDER BY 1;
-- after: the same rows, by every path; the key's order within the converted partition
SELECT (SELECT md5(string_agg(x::text, '|' ORDER BY x::text)) FROM m x)
     = (SELECT md5(string_agg(x::text, '|' ORDER BY x::text)) FROM m_heap x) AS same_rows;
SELECT count(*) FROM m WHERE host = 3 AND t < '2020-01-01 12:00+00';
SELECT count(*) FROM m_heap WHERE host = 3 AND t < '2020-01-01 12:00+00';
SELECT count(*) AS out_of_key_order FROM (
    SELECT host, t, lag(host) OVER () AS ph, lag(t) OVER () AS pt FROM m_2020_01_01) x
WHERE (host, t) < (ph, pt);
-- keys, indexes and constraints kept
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'm_2020_01_01'::regclass ORDER BY 1;
INSERT INTO m VALUES ('2020-01-01 06:00+00', 1, -1);
INSERT INTO m SELECT t, host, v FROM m WHERE t = '2020-01-01 06:00+00' LIMIT 1;
-- a second call converts nothing more
CALL pgcol.convert_partitions('m', '1 day');
SELECT am, count(*) FROM parts('m') GROUP BY am ORDER BY am;
-- rows and sizes once counted
ANALYZE m;
SELECT partition, rows, bytes > 0 AS has_bytes, bytes_per_row > 0 AS has_ratio
  FROM pgcol.partitions('m') WHERE access_method = 'pg_columnar' ORDER BY partition::text;
-- refused: a table not partitioned by range on one time column, and a call inside a
-- transaction block (it commits after each partition)
CALL pgcol.convert_partitions('m_heap', '1 day');
CREATE TABLE by_list (t date, host int) PARTITION BY LIST (host);
CALL pgcol.convert_partitions('by_list', '1 day');
CREATE TABLE by_int (t int) PARTITION BY RANGE (t);
CALL pgcol.convert_partitions('by_int', '1 day');
CREATE TABLE by_date (d date) PARTITION BY RANGE (d);
CREATE TABLE by_date_old PARTITION OF by_date FOR VALUES FROM ('2000-01-01') TO ('2000-02-01');
BEGIN;
CALL pgcol.convert_partitions('by_date', '1 day');
ROLLBACK;
CALL pgcol.convert_partitions('by_date', '1 day');
SELECT * FROM parts('by_date');

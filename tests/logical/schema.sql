-- The tables of tests/logical/run, made with the database's default access method
-- (pg_columnar in one database, heap in its twin); h is heap in both.
CREATE TABLE t (id int PRIMARY KEY, host text, v float8, note text);
CREATE TABLE f (a int, b text);                  -- no key: REPLICA IDENTITY FULL
ALTER TABLE f REPLICA IDENTITY FULL;
CREATE TABLE n (a int, b text);                  -- no key: REPLICA IDENTITY DEFAULT logs none
CREATE TABLE h (id int PRIMARY KEY, v int) USING heap;
CREATE TABLE p (id int PRIMARY KEY, at date, v int) PARTITION BY RANGE (id);
CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (1000);
CREATE TABLE p2 PARTITION OF p FOR VALUES FROM (1000) TO (2000);

-- The gate's fixtures: deterministic tables that engage every mechanism of the writer.
-- Every value comes from integer arithmetic and hashint8 (stable across majors, since hash
-- partitioning depends on it) on generate_series, never random(), so each major loads exactly
-- the same rows in the same order.
-- 10,000 rows per fixture in stripes of 4096: three stripes, the last one partial, and a
-- partial last vector in every stripe boundary case. gate/run loads this file, then hashes
-- and inspects every table whose name starts with "fx_".
SET pg_columnar.stripe_row_limit = 4096;

-- integers: constant (width 0), ramp (delta), narrow range with more distinct values than
-- a dictionary takes (bitpack), few values
-- (dictionary), full-width noise (plain), periodic by host (stride), with NULLs, all NULL
CREATE TABLE fx_ints (
    constant int4, ramp int8, narrow int2, few int4, noise int8, host_id int4, with_nulls int8, all_null int4
) USING pg_columnar;
INSERT INTO fx_ints
SELECT 7, 1000000 + g * 3, (g * 7919 % 2000)::int2, (ARRAY[10, 2000, 300000, -5])[g % 4 + 1],
       (hashint8(g)::int8 << 32) | (hashint8(g + 1000000)::int8 & 4294967295),
       g % 50, CASE WHEN g % 9 = 0 THEN NULL ELSE g * 11 END, NULL
FROM generate_series(1, 10000) g;

-- floats: integer-valued (bitpack), few values (dictionary), slowly varying decimals
-- (float-as-integer), full-width noise (plain), specials, float4; slowly varying in steps of
-- 2^-40, which no decimal scale holds (Gorilla); float4 decimals (float-as-integer)
CREATE TABLE fx_floats (
    whole float8, few float8, smooth float8, noise float8, specials float8, small float4,
    drift float8, tenths float4
) USING pg_columnar;
INSERT INTO fx_floats
SELECT (g * 37 % 101)::float8, (ARRAY[0.5, 1.25, 99.75])[g % 3 + 1],
       1000.0 + g * 0.0625,
       hashint8(g)::float8 / 2147483647.0 * pi() * 1000.0 + hashint8(-g)::float8 * 1.0e-9,
       (ARRAY['NaN', 'Infinity', '-Infinity', '-0', '0', '1e-310']::float8[])[g % 6 + 1],
       (g % 1000)::float4,
       1000.0::float8 + (g * 7)::float8 * 0.0000000000009094947017729282379150390625::float8,
       ((g % 500) * 0.1)::float4
FROM generate_series(1, 10000) g;

-- strings: few values (dictionary; FSST skipped, 25% already saved), URLs (FSST tried and
-- wins), digests (hex in each stripe's first vector, from which the FSST table is built, so
-- FSST wins there; other letters after it, which the table does not know: FSST tried and
-- loses), distinct per vector above the dictionary cap of 512 and below it, one-letter codes
-- (no FSST table: too few bytes)
CREATE TABLE fx_strings (
    few text, url text, digest text, many text, several text, short varchar(4)
) USING pg_columnar;
INSERT INTO fx_strings
SELECT (ARRAY['alpha', 'beta', 'gamma', 'delta'])[g % 4 + 1],
       'https://example.com/catalog/item/' || (g * 7919 % 100003) || '/details?lang=en&ref=' || (g % 13),
       CASE WHEN (g - 1) % 4096 < 1024 THEN md5(g::text)
            ELSE translate(md5(g::text), '0123456789abcdef', 'GHIJKLMNOPQRSTUV') END,
       'item-' || g,
       'item-' || (g % 300),
       chr(65 + g % 26)
FROM generate_series(1, 10000) g;

-- TSBS-like time-major metrics: 100 hosts, one row each per 10 s (stride blocks, shared
-- dictionaries), jsonb always NULL
CREATE TABLE fx_tsbs (
    time timestamptz, tags_id int, hostname text, usage_user float8, usage_system float8, additional_tags jsonb
) USING pg_columnar;
INSERT INTO fx_tsbs
SELECT '2016-01-01 00:00:00+00'::timestamptz + (g / 100) * interval '10 seconds', g % 100 + 1, 'host_' || (g % 100),
       (((g % 100) * 13 + ((g / 100) * (g % 7)) % 5) % 100)::float8,
       (((g % 100) * 7 + (g / 100) % 3) % 100)::float8, NULL
FROM generate_series(0, 9999) g;

-- the same TSBS layout sorted by (hostname, time) (pg_columnar.sort_key): each stripe stored
-- in key order with its row positions; NULL host names (sorted last) and a few times out of
-- order within a host, so the key's second column moves rows too
CREATE TABLE fx_sorted (
    time timestamptz, tags_id int, hostname text, usage_user float8, usage_system float8
) USING pg_columnar;
ALTER TABLE fx_sorted SET (pg_columnar.sort_key = 'hostname, time');
INSERT INTO fx_sorted
SELECT '2016-01-01 00:00:00+00'::timestamptz + (g / 100) * interval '10 seconds' - (g % 13 = 0)::int * interval '25 seconds',
       g % 100 + 1, CASE WHEN g % 100 = 42 THEN NULL ELSE 'host_' || (g % 100) END,
       (((g % 100) * 13 + ((g / 100) * (g % 7)) % 5) % 100)::float8,
       (((g % 100) * 7 + (g / 100) % 3) % 100)::float8
FROM generate_series(0, 9999) g;

-- every other type, by-value and by-reference, with NULLs; no column repeats with a short
-- period, so this table is encoded without a row period
CREATE TYPE fx_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE fx_types (
    b bool, d date, t time, ts timestamp, iv interval, u uuid, n numeric, j jsonb, a int[],
    c "char", nm name, bytes bytea
) USING pg_columnar;
INSERT INTO fx_types
SELECT hashint8(g) % 3 = 0, '2020-01-01'::date + g / 10, '00:00'::time + g * interval '1 second',
       '2020-01-01'::timestamp + g * interval '1 minute', make_interval(days => g / 100, secs => g),
       md5('u' || g)::uuid, CASE WHEN g % 10 = 0 THEN NULL ELSE (g * 1.5)::numeric END,
       jsonb_build_object('g', g / 7), ARRAY[g, g / 3],
       chr(97 + abs(hashint8(-g)) % 3)::"char", ('n' || (g / 50))::name, decode(lpad(to_hex(g % 4096), 4, '0'), 'hex')
FROM generate_series(1, 10000) g;

-- enum values are stored as their OIDs (as heap stores them), which each cluster assigns: this
-- table's image is not comparable across clusters, so it is loaded and checked but not hashed
CREATE TABLE fxo_enum (m fx_mood, k int) USING pg_columnar;
INSERT INTO fxo_enum SELECT (ARRAY['sad', 'ok', 'happy'])[abs(hashint8(g)) % 3 + 1]::fx_mood, g FROM generate_series(1, 10000) g;

RESET pg_columnar.stripe_row_limit;

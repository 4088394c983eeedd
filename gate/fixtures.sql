-- The gate's fixtures: deterministic tables that engage every mechanism of the writer.
-- Every value comes from integer arithmetic on generate_series (no random(), whose sequence
-- may differ between majors), so each major loads exactly the same rows in the same order.
-- 10,000 rows per fixture in stripes of 4096: three stripes, the last one partial, and a
-- partial last vector in every stripe boundary case. gate/run loads this file, then hashes
-- and inspects every table whose name starts with "fx_".
SET pg_columnar.stripe_row_limit = 4096;

-- integers: constant (width 0), ramp (delta), narrow range (bitpack), few values
-- (dictionary), full-width noise (plain), periodic by host (stride), with NULLs, all NULL
CREATE TABLE fx_ints (
    constant int4, ramp int8, narrow int2, few int4, noise int8, host_id int4, with_nulls int8, all_null int4
) USING pg_columnar;
INSERT INTO fx_ints
SELECT 7, 1000000 + g * 3, (g * 7919 % 200)::int2, (ARRAY[10, 2000, 300000, -5])[g % 4 + 1],
       (g::int8 * 6364136223846793005 + 1442695040888963407),
       g % 50, CASE WHEN g % 9 = 0 THEN NULL ELSE g * 11 END, NULL
FROM generate_series(1, 10000) g;

-- floats: integer-valued (bitpack), few values (dictionary), slowly varying decimals
-- (Gorilla), full-width noise (plain), specials, float4
CREATE TABLE fx_floats (
    whole float8, few float8, smooth float8, noise float8, specials float8, small float4
) USING pg_columnar;
INSERT INTO fx_floats
SELECT (g * 37 % 101)::float8, (ARRAY[0.5, 1.25, 99.75])[g % 3 + 1],
       1000.0 + (g / 10) * 0.125,
       (g::int8 * 6364136223846793005 + 1442695040888963407)::float8 / 3.0e18 * pi(),
       (ARRAY['NaN', 'Infinity', '-Infinity', '-0', '0', '1e-310']::float8[])[g % 6 + 1],
       (g % 1000)::float4 / 8
FROM generate_series(1, 10000) g;

-- strings: few values (dictionary; FSST skipped, 25% already saved), URLs (FSST tried and
-- wins), hex digests (FSST table built, tried, loses: plain), distinct per vector above the
-- dictionary cap of 512 and below it, short codes (no FSST table: too few bytes)
CREATE TABLE fx_strings (
    few text, url text, digest text, many text, some text, short varchar(4)
) USING pg_columnar;
INSERT INTO fx_strings
SELECT (ARRAY['alpha', 'beta', 'gamma', 'delta'])[g % 4 + 1],
       'https://example.com/catalog/item/' || (g * 7919 % 100003) || '/details?lang=en&ref=' || (g % 13),
       md5(g::text),
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
       ((g % 100) * 13 + (g / 100) * (g % 7) % 5)::float8 % 100,
       ((g % 100) * 7 + (g / 100) % 3)::float8 % 100, NULL
FROM generate_series(0, 9999) g;

-- every other type, by-value and by-reference, with NULLs
CREATE TYPE fx_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE fx_types (
    b bool, d date, t time, ts timestamp, iv interval, u uuid, n numeric, j jsonb, a int[], m fx_mood,
    c "char", nm name, bytes bytea
) USING pg_columnar;
INSERT INTO fx_types
SELECT g % 3 = 0, '2020-01-01'::date + g % 400, '00:00'::time + g * interval '1 second',
       '2020-01-01'::timestamp + g * interval '1 minute', make_interval(days => g % 40, secs => g),
       md5('u' || g)::uuid, CASE WHEN g % 10 = 0 THEN NULL ELSE (g * 1.5)::numeric END,
       jsonb_build_object('g', g % 20), ARRAY[g % 5, g % 7], (ARRAY['sad', 'ok', 'happy'])[g % 3 + 1]::fx_mood,
       chr(97 + g % 3)::"char", ('n' || (g % 40))::name, decode(lpad(to_hex(g % 4096), 4, '0'), 'hex')
FROM generate_series(1, 10000) g;

RESET pg_columnar.stripe_row_limit;

-- Decimal floats (the float-as-integer encoding's decimal mappings): filters compare the
-- stored integers against a bound found for the constant, the exceptions (NaN, ±Infinity,
-- -0, a value with more decimals) as floats; sums add each value as it is converted. Every
-- query against a heap twin and with the vectorized filter and aggregates off, over float8
-- with two decimals, float4 with one, NULLs, and constants at, between and beyond the values.
CREATE EXTENSION pg_columnar;
SET pg_columnar.stripe_row_limit = 4096;
CREATE TABLE df (id int, f8 float8, f4 float4, big float8) USING pg_columnar;
INSERT INTO df
SELECT i,
       CASE WHEN i % 211 = 0 THEN NULL
            WHEN i % 173 = 0 THEN 'NaN'
            WHEN i % 179 = 0 THEN '-0'
            WHEN i % 181 = 0 THEN 'Infinity'
            WHEN i % 191 = 0 THEN '-Infinity'
            WHEN i % 193 = 0 THEN 12.345678
            ELSE ((w + 1500)::numeric / 100)::float8 END,
       CASE WHEN i % 199 = 0 THEN NULL
            WHEN i % 197 = 0 THEN 'NaN'
            WHEN i % 181 = 0 THEN '-0'
            ELSE (w::numeric / 10)::float4 END,
       -- halves near 2^52, stored as tenths: digits past 2^53, several giving one float
       ((w + 7205759403792794)::numeric / 2)::float8
  -- a random walk in steps of -30..30 (md5 for steps that are the same on every platform)
  FROM (SELECT i, sum(('x' || substr(md5(i::text), 1, 2))::bit(8)::int % 61 - 30) OVER (ORDER BY i) AS w
          FROM generate_series(1, 20000) i) s;
CREATE TABLE df_heap AS SELECT * FROM df;

-- every vector of the three columns stored as integers over a power of ten
SELECT a.attname, c.vectors, c.float_int
  FROM pgcol.columns('df') c JOIN pg_attribute a ON a.attrelid = 'df'::regclass AND a.attnum = c.attnum
 WHERE a.attname IN ('f8', 'f4', 'big') ORDER BY c.attnum;

-- q's rows: pg_columnar with the vectorized filter and aggregates, without them, and heap
CREATE FUNCTION same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; o text; h text;
  wrap text := 'SELECT count(*) || '' rows, '' || coalesce(md5(string_agg(r::text, '','' ORDER BY r::text)), '''') FROM (%s) r';
BEGIN
  EXECUTE format(wrap, q) INTO a;
  SET LOCAL pg_columnar.enable_vectorized_filter = off;
  SET LOCAL pg_columnar.enable_vectorized_agg = off;
  EXECUTE format(wrap, q) INTO o;
  SET LOCAL pg_columnar.enable_vectorized_filter = on;
  SET LOCAL pg_columnar.enable_vectorized_agg = on;
  EXECUTE format(wrap, regexp_replace(q, '\mdf\M', 'df_heap', 'g')) INTO h;
  IF a IS DISTINCT FROM h OR o IS DISTINCT FROM h THEN
    RETURN format('MISMATCH vectorized %s, off %s, heap %s', a, o, h);
  END IF;
  RETURN a;
END $$;

-- the filter is evaluated on the vectors (not by PostgreSQL over rows)
EXPLAIN (COSTS OFF) SELECT count(*) FROM df WHERE f8 > 25;

-- count(*) for each operator and constant: every row's test equal to heap's
CREATE FUNCTION counts(col text, consts text[]) RETURNS TABLE (c text, op text, pgcol bigint, heap bigint)
LANGUAGE plpgsql AS $$
DECLARE k text; o text;
BEGIN
  FOREACH k IN ARRAY consts LOOP
    FOREACH o IN ARRAY ARRAY['<', '<=', '=', '<>', '>=', '>'] LOOP
      c := k; op := o;
      EXECUTE format('SELECT count(*) FROM df WHERE %s %s %s', col, o, k) INTO pgcol;
      EXECUTE format('SELECT count(*) FROM df_heap WHERE %s %s %s', col, o, k) INTO heap;
      RETURN NEXT;
    END LOOP;
  END LOOP;
END $$;
-- a value stored, its neighbouring floats, between two decimals, beyond every value, the
-- specials, zero of both signs, a value with more decimals (an exception), a float4 constant
SELECT count(*) AS cases, count(*) FILTER (WHERE pgcol IS DISTINCT FROM heap) AS mismatches,
       count(*) FILTER (WHERE pgcol > 0 AND pgcol < (SELECT count(*) FROM df)) AS split_rows
  FROM counts('f8', ARRAY['-100.37', '''-100.37''::float8 + 1e-13', '''-100.37''::float8 - 1e-13',
                          '-100.375', '1e300', '-1e300', '''NaN''', '''Infinity''', '''-Infinity''',
                          '0', '''-0''', '12.345678', '''-99.5''::float4', '-3.07',
                          '(SELECT f8 FROM df_heap WHERE id = 5000)']);
SELECT count(*) AS cases, count(*) FILTER (WHERE pgcol IS DISTINCT FROM heap) AS mismatches,
       count(*) FILTER (WHERE pgcol > 0 AND pgcol < (SELECT count(*) FROM df)) AS split_rows
  FROM counts('f4', ARRAY['-1000.5', '''-1000.5''::float4', '-1000.55', '0', '''-0''', '''NaN''',
                          '''Infinity''', '-12.3', '''-12.3''::float4', '3e38', '-1e39',
                          '(SELECT f4 FROM df_heap WHERE id = 5000)']);
SELECT count(*) AS cases, count(*) FILTER (WHERE pgcol IS DISTINCT FROM heap) AS mismatches,
       count(*) FILTER (WHERE pgcol > 0 AND pgcol < (SELECT count(*) FROM df)) AS split_rows
  FROM counts('big', ARRAY['3602879701890000', '3602879701890000.5', '3602879701890000.25',
                           '3602879701890000.7', '(SELECT big FROM df_heap WHERE id = 777)',
                           '(SELECT big FROM df_heap WHERE id = 777) + 0.5']);
SELECT * FROM counts('f8', ARRAY['-100.37', '''NaN''', '''-0''']) WHERE pgcol IS DISTINCT FROM heap;

-- rows and aggregates, with other predicates, NULL tests, ANY, BETWEEN, a parameter
SELECT same('SELECT id, f8, f4 FROM df WHERE f8 > -50 AND f4 <= -400');
SELECT same('SELECT id FROM df WHERE f8 BETWEEN -100.2 AND -99.8 OR f8 IS NULL');
SELECT same('SELECT id FROM df WHERE f8 = ANY (ARRAY[-100, -100.01, -100.02, 12.345678, ''NaN'', ''-0'']::float8[])');
SELECT same('SELECT id FROM df WHERE f8 = ANY (ARRAY(SELECT g::float8 / 100 FROM generate_series(-10200, -9800) g))');
SELECT same('SELECT id FROM df WHERE f8 < ALL (ARRAY[-100.5, -99]::float8[]) AND f8 <> ''-Infinity''');
SELECT same('SELECT count(*), sum(f8), avg(f8), min(f8), max(f8), sum(f4), avg(f4), min(f4), max(f4) FROM df');
SELECT same('SELECT count(*), sum(f8), avg(f8), sum(f4), sum(big) FROM df WHERE id % 3 = 0');
SELECT same('SELECT sum(f8), avg(f8), sum(f4) FROM df WHERE f8 > -100 AND f8 < ''Infinity''');
SELECT same('SELECT sum(big), avg(big), min(big), max(big) FROM df WHERE big > 3602879701890000.2');
SELECT same('SELECT id % 5 AS g, count(*), sum(f8), avg(f4), max(f8) FROM df WHERE f8 >= -100 GROUP BY g');
PREPARE p(float8) AS SELECT count(*), sum(f8) FROM df WHERE f8 > $1 AND f8 < 1e300;
EXECUTE p(-100.05);
SET plan_cache_mode = force_generic_plan;
EXECUTE p(-100.05);
EXECUTE p('NaN');
RESET plan_cache_mode;
SELECT count(*), sum(f8) FROM df_heap WHERE f8 > -100.05 AND f8 < 1e300;

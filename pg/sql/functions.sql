-- Every function of the extension on good input; errors.sql has the bad.
SET timezone = 'UTC';

-- What each function is: volatility, strictness, parallel safety.
SELECT p.oid::regprocedure AS function, provolatile, proisstrict, proparallel,
       pg_get_function_result(p.oid) AS returns
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid
  JOIN pg_extension e ON d.refobjid = e.oid AND e.extname = 'idgen'
 ORDER BY p.oid::regprocedure::text;

-- idgen_min_id_at(): the smallest ID of the millisecond (README's example
-- is 2026-03-15T00:00:00Z -> 26454314188800000), the epoch's first and
-- last millisecond, a time zone, and a moment within a millisecond.
SELECT idgen_min_id_at('2026-03-15 00:00:00+00');
SELECT idgen_min_id_at('2026-03-15 00:00:00+02');
SELECT idgen_min_id_at('2026-01-01 00:00:00+00') AS first,
       idgen_min_id_at('2026-01-01 00:00:00.001+00') AS second_ms,
       idgen_min_id_at('2095-09-07 15:47:35.551+00') AS last,
       idgen_min_id_at('2095-09-07 15:47:35.551999+00') AS last_us;
SELECT idgen_min_id_at('2026-03-15 12:34:56.789999+00') = idgen_min_id_at('2026-03-15 12:34:56.789+00')
       AS floors_to_the_ms;

-- idgen_time(): the millisecond of an ID (the contract's example).
SELECT idgen_time(108421920055775237);
SELECT idgen_time(0) AS first, idgen_time(9223372036854775807) AS last;
-- Its inverse: every ID of a millisecond lies in [min_id_at(t), min_id_at(t + 1 ms)).
SELECT bool_and(idgen_min_id_at(idgen_time(id)) <= id
		AND id < idgen_min_id_at(idgen_time(id) + interval '1 millisecond')) AS brackets,
       bool_and(idgen_time(idgen_min_id_at(t)) = date_trunc('milliseconds', t)) AS round_trips
  FROM (VALUES (108421920055775237, timestamptz '2026-10-27 04:30:00.123456+00'),
	       (4194303, timestamptz '2026-01-01 00:00:00+00'),
	       (9223372036850581503, timestamptz '2095-09-07 15:47:35.550999+00')) v(id, t);

-- idgen_decode(): the contract's example, and the extremes.
SELECT * FROM idgen_decode(108421920055775237);
SELECT * FROM idgen_decode(0);
SELECT * FROM idgen_decode(9223372036854775807);
SELECT (idgen_decode(108421920055775237)).worker;

-- A layouts file (idgenctl's --layouts): version 2, 3/10/9, from 2027 on.
-- An ID of 2027-01-01T00:00:00.001Z, region 1, worker 1000, sequence 7:
\getenv abs_srcdir PG_ABS_SRCDIR
\set layouts :abs_srcdir '/data/layouts'
SELECT (31536000001::bigint << 22) | (1 << 19) | (1000 << 9) | 7 AS v2_id \gset
SELECT * FROM idgen_decode(:v2_id);
SET idgen.layouts_file = :'layouts';
SELECT * FROM idgen_decode(:v2_id);
-- Before the cut-over, still version 1; the time is every layout's.
SELECT * FROM idgen_decode(108421920055775237);
SELECT idgen_time(:v2_id);
RESET idgen.layouts_file;
SELECT layout_version FROM idgen_decode(:v2_id);

-- STRICT: NULL in, NULL out.
SELECT idgen_min_id_at(NULL) IS NULL AS a, idgen_time(NULL) IS NULL AS b,
       idgen_decode(NULL) IS NULL AS c, (SELECT count(*) FROM idgen_next_n(NULL)) AS d;

-- idgen_next_n(0) is empty and touches no device.
SELECT count(*) FROM idgen_next_n(0);

-- The settings and their defaults.
SELECT name, setting, unit, context FROM pg_settings WHERE name LIKE 'idgen.%' ORDER BY name;

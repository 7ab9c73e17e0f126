-- Every error: the message an operator reads (with DETAIL and HINT), and
-- the SQLSTATE an application catches (README.md, "Errors").
SET timezone = 'UTC';
\set SHOW_CONTEXT never
CREATE FUNCTION pg_temp.sqlstate_of(statement text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE statement;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END $$;
CREATE FUNCTION pg_temp.error_of(statement text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE statement;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- No device: the host runs no idgen.ko (tests/pg/run.sh makes sure).
SELECT idgen_next();
SELECT pg_temp.sqlstate_of('SELECT idgen_next()') AS no_device;
SELECT * FROM idgen_next_n(3);
SELECT pg_temp.sqlstate_of('SELECT idgen_next_n(3)') AS no_device;
-- The same from the column default, and nothing is written.
CREATE TABLE t (id bigint PRIMARY KEY DEFAULT idgen_next(), v text);
INSERT INTO t (v) VALUES ('a'), ('b');
SELECT pg_temp.sqlstate_of($$INSERT INTO t (v) VALUES ('a')$$) AS no_device;
SELECT count(*) FROM t;
-- Another path, named in the message.
SET idgen.device = '/nonexistent/idgen';
SELECT idgen_next();
-- Not idgen's device: the setting is wrong, 22023, before any read
-- (device.sql: every kind of file that is not).
SET idgen.device = '/dev/null';
SELECT idgen_next();
SELECT pg_temp.sqlstate_of('SELECT idgen_next()') AS not_idgen;
SELECT pg_temp.sqlstate_of('SELECT idgen_next_n(2)') AS not_idgen;
RESET idgen.device;

-- Negative IDs: never idgen IDs.
SELECT idgen_time(-1);
SELECT * FROM idgen_decode(-9223372036854775808);
SELECT pg_temp.sqlstate_of('SELECT idgen_time(-1)') AS negative,
       pg_temp.sqlstate_of('SELECT idgen_decode(-1)') AS negative;

-- Times outside 2026-01-01 00:00:00+00 .. 2095-09-07 15:47:35.551+00.
SELECT idgen_min_id_at('2025-12-31 23:59:59.999999+00');
SELECT idgen_min_id_at('2095-09-07 15:47:35.552+00');
SELECT idgen_min_id_at('infinity');
SELECT pg_temp.sqlstate_of($$SELECT idgen_min_id_at('-infinity')$$) AS out_of_range,
       pg_temp.sqlstate_of($$SELECT idgen_min_id_at('1970-01-01 00:00:00+00')$$) AS out_of_range,
       pg_temp.sqlstate_of($$SELECT idgen_min_id_at('2100-01-01 00:00:00+00')$$) AS out_of_range;
-- The end of the range plus a day, in a bound: an error, never a wrong ID.
SELECT pg_temp.sqlstate_of($$SELECT idgen_min_id_at(idgen_time(9223372036854775807) + interval '1 day')$$)
       AS out_of_range;

-- A negative count.
SELECT * FROM idgen_next_n(-1);
SELECT pg_temp.sqlstate_of('SELECT idgen_next_n(-1)') AS bad_count;

-- Layouts files: absent, and not a table of layouts.
\getenv abs_srcdir PG_ABS_SRCDIR
SET idgen.layouts_file = '/nonexistent/layouts';
SELECT * FROM idgen_decode(1);
SELECT pg_temp.sqlstate_of('SELECT idgen_decode(1)') AS bad_layouts;
\set bad :abs_srcdir '/data/layouts-bad'
SET idgen.layouts_file = :'bad';
SELECT replace(pg_temp.error_of('SELECT idgen_decode(1)'), :'abs_srcdir', '$srcdir') AS bad_layouts;
RESET idgen.layouts_file;
-- A version beyond what the integer column holds: an error, not a
-- negative number.
\set big :abs_srcdir '/data/layouts-big'
SET idgen.layouts_file = :'big';
SELECT pg_temp.sqlstate_of('SELECT layout_version FROM idgen_decode(1000::bigint << 22)') AS version_too_big;
RESET idgen.layouts_file;
SELECT layout_version FROM idgen_decode(1);

-- Settings: out of range, and the device and layouts file superuser's only.
SET idgen.buffer_size = 0;
SET idgen.buffer_size = 65537;
-- (Its message names the unit from PostgreSQL 17 on: the SQLSTATE only.)
SELECT pg_temp.sqlstate_of('SET idgen.buffer_max_age_ms = -1') AS out_of_range;
CREATE ROLE regress_idgen_user;
SET ROLE regress_idgen_user;
SET idgen.device = '/tmp/x';
SET idgen.layouts_file = '/tmp/x';
SET idgen.buffer_size = 8;
SELECT idgen_min_id_at('2026-03-15 00:00:00+00');
RESET ROLE;
DROP ROLE regress_idgen_user;
-- An unknown setting under idgen. is refused, not taken as a placeholder.
SET idgen.no_such_setting = 1;

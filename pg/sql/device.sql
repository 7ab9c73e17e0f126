-- What idgen.device may name: idgen's character device, told by what it
-- is and not by its path (libidgen's LIBIDGEN_VERIFY: a character device,
-- of the number /sys/class/misc/idgen/dev gives, that answers idgen's
-- state request with a state the module can have), or sim:WORKER.
-- Anything else is refused naming the setting, 22023, before any ID: a
-- regular file (every session would read it from its start, the same
-- IDs), a FIFO (its open must not block the backend), /dev/zero (every ID
-- 0), /dev/null, a directory, and symbolic links to them.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
-- Each error as psql prints one: a line each for it, DETAIL and HINT.
\pset format unaligned
\pset tuples_only on
\getenv builddir PG_ABS_BUILDDIR
-- The error a statement raises, with its DETAIL and HINT, the test's
-- directory written $builddir.
CREATE FUNCTION pg_temp.error_of(statement text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	detail text;
	hint text;
BEGIN
	EXECUTE statement;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
	RETURN replace('ERROR:  ' || SQLSTATE || ': ' || SQLERRM || E'\nDETAIL:  ' || detail ||
		       E'\nHINT:  ' || hint, current_setting('idgen_test.builddir'), '$builddir');
END $$;
SELECT set_config('idgen_test.builddir', :'builddir', false) IS NOT NULL;
\set ids :builddir '/device-ids'
\set fifo :builddir '/device-fifo'
\set dir :builddir '/device-dir'
\set link_ids :builddir '/device-link-ids'
\set link_zero :builddir '/device-link-zero'
\setenv IDGEN_IDS :ids
\setenv IDGEN_FIFO :fifo
\setenv IDGEN_DIR :dir
\setenv IDGEN_LINK_IDS :link_ids
\setenv IDGEN_LINK_ZERO :link_zero
-- A file of 64 IDs such as the device returns: an hour from now, region
-- 1, worker 5, sequence 0..63, native-endian.
\! perl -e 'my $ms = (time() + 3600) * 1000 - 1767225600000; print pack("Q*", map { ($ms << 22) | (1 << 19) | (5 << 12) | $_ } 0 .. 63)' > "$IDGEN_IDS"
\! rm -rf "$IDGEN_FIFO" "$IDGEN_DIR" "$IDGEN_LINK_IDS" "$IDGEN_LINK_ZERO" && mkfifo "$IDGEN_FIFO" && mkdir "$IDGEN_DIR" && ln -s "$IDGEN_IDS" "$IDGEN_LINK_IDS" && ln -s /dev/zero "$IDGEN_LINK_ZERO"
CREATE TABLE minted (id bigint PRIMARY KEY DEFAULT idgen_next(), n integer);

-- A regular file of IDs: refused, though every read of it would give
-- whole IDs; through idgen_next(), idgen_next_n() and the column default.
SET idgen.device = :'ids';
SELECT pg_temp.error_of('SELECT idgen_next()') AS regular_file;
SELECT pg_temp.error_of('SELECT count(*) FROM idgen_next_n(3)') AS regular_file;
SELECT pg_temp.error_of('INSERT INTO minted (n) VALUES (1)') AS regular_file;
-- The same through a symbolic link: what it names is checked.
SET idgen.device = :'link_ids';
SELECT pg_temp.error_of('SELECT idgen_next()') AS link_to_regular_file;
-- A FIFO without a writer: refused, and at once (opening it to read
-- would wait for a writer).
SET idgen.device = :'fifo';
SELECT pg_temp.error_of('SELECT idgen_next()') AS fifo;
SELECT pg_temp.error_of('SELECT count(*) FROM idgen_next_n(3)') AS fifo;
-- A directory.
SET idgen.device = :'dir';
SELECT pg_temp.error_of('SELECT idgen_next()') AS directory;
-- Character devices that are not idgen's: /dev/zero (whose reads would
-- give ID 0, again and again), /dev/null, and a link to /dev/zero.
SET idgen.device = '/dev/zero';
SELECT idgen_next();
SELECT * FROM idgen_next_n(3);
SELECT pg_temp.error_of('INSERT INTO minted (n) VALUES (2)') AS dev_zero;
SET idgen.device = :'link_zero';
SELECT pg_temp.error_of('SELECT idgen_next()') AS link_to_dev_zero;
SET idgen.device = '/dev/null';
SELECT pg_temp.error_of('SELECT idgen_next()') AS dev_null;
-- No ID was handed out, so none was written.
SELECT count(*) AS rows_written FROM minted;
-- The default again: the host has no device (IG001), as ever.
RESET idgen.device;
SELECT pg_temp.error_of('SELECT idgen_next()') AS no_device;
\! rm -rf "$IDGEN_IDS" "$IDGEN_FIFO" "$IDGEN_DIR" "$IDGEN_LINK_IDS" "$IDGEN_LINK_ZERO"

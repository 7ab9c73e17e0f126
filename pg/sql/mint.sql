-- Minting, on a host with no device: idgen.device names a file of IDs
-- written here, so idgen_next(), idgen_next_n() and the column default
-- read what a device would return, and each ID says where it came from
-- (sequence i is the file's i-th ID).  The IDs are an hour ahead of the
-- clock, so the buffer's age bound keeps them all.  A file is no device:
-- each open reads it from the start, so this stays in one session.
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
\getenv builddir PG_ABS_BUILDDIR
\set ids1 :builddir '/mint-ids-1'
\set ids2 :builddir '/mint-ids-2'
-- Two files of 64 IDs each, of one millisecond an hour from now, region
-- 1, worker 5 and then 6, sequence 0..63, native-endian as read(2) on
-- /dev/idgen gives them.
\setenv IDGEN_IDS1 :ids1
\setenv IDGEN_IDS2 :ids2
\! for w in 1 2; do perl -e 'my $ms = (time() + 3600) * 1000 - 1767225600000; print pack("Q*", map { ($ms << 22) | (1 << 19) | ((4 + $ARGV[0]) << 12) | $_ } 0 .. 63)' $w > "$(eval echo \$IDGEN_IDS$w)"; done
SET idgen.device = :'ids1';
SET idgen.buffer_size = 8;

-- One at a time: the buffer reads 8, hands them out in order, and tops
-- itself up when half empty.
WITH ids AS MATERIALIZED (SELECT g, idgen_next() AS id FROM generate_series(1, 6) g)
SELECT g, d.region, d.worker, d.sequence, d.layout_version,
       idgen_time(id) > now() AS an_hour_ahead
  FROM ids, idgen_decode(id) d ORDER BY g;

-- Through the column default: each row its ID, increasing in row order.
CREATE TABLE minted (id bigint PRIMARY KEY DEFAULT idgen_next(), n integer);
INSERT INTO minted (n) SELECT g FROM generate_series(1, 5) g;
SELECT n, (idgen_decode(id)).sequence, id > lag(id) OVER (ORDER BY n) AS increasing
  FROM minted ORDER BY n;

-- In bulk: the buffered IDs are dropped (gaps, never handed out), and
-- the set comes straight from the file after them, increasing.
SELECT (idgen_decode(id)).sequence FROM idgen_next_n(5) id;
-- And idgen_next() goes on above the set.
SELECT (idgen_decode(idgen_next())).sequence;
-- A set larger than what is left: the file's end is a read of nothing,
-- IG000, and the statement fails as a whole.
SELECT count(*) FROM idgen_next_n(20);
SELECT pg_temp.sqlstate_of('SELECT count(*) FROM idgen_next_n(100)') AS end_of_file;
SELECT pg_temp.sqlstate_of('INSERT INTO minted (n) VALUES (6)') AS end_of_file;
SELECT count(*) FROM minted;

-- Another idgen.device: opened afresh, with a buffer of its own.
SET idgen.device = :'ids2';
SELECT d.worker, d.sequence FROM idgen_decode(idgen_next()) d;
SET idgen.buffer_size = 1;
SELECT d.worker, d.sequence FROM idgen_decode(idgen_next()) d;
RESET idgen.buffer_size;
-- Neither the device nor a file (a FIFO): refused before open() could
-- block beyond any cancel.
\set fifo :builddir '/mint-fifo'
\setenv IDGEN_FIFO :fifo
\! rm -f "$IDGEN_FIFO" && mkfifo "$IDGEN_FIFO"
SET idgen.device = :'fifo';
SELECT pg_temp.sqlstate_of('SELECT idgen_next()') AS a_fifo;
\! rm -f "$IDGEN_FIFO"
RESET idgen.device;
SELECT pg_temp.sqlstate_of('SELECT idgen_next()') AS no_device;
\! rm -f "$IDGEN_IDS1" "$IDGEN_IDS2"

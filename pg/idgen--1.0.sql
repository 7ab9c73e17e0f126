/* SPDX-License-Identifier: GPL-2.0 */
/* idgen 1.0: README.md beside this file says what each function does. */

\echo Use "CREATE EXTENSION idgen" to load this file. \quit

-- One ID from the host's generator, /dev/idgen (the GUC idgen.device),
-- through a small buffer of this backend's own.  For a column default:
--   id bigint PRIMARY KEY DEFAULT idgen_next()
CREATE FUNCTION idgen_next() RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_idgen_next'
LANGUAGE C VOLATILE;

-- n IDs, strictly increasing, minted in large batches: for bulk loads.
CREATE FUNCTION idgen_next_n(n integer) RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'pg_idgen_next_n'
LANGUAGE C VOLATILE STRICT ROWS 1000;

-- The smallest ID of the millisecond of t: the IDs minted during
-- [start, end) are exactly id >= idgen_min_id_at(start) AND id <
-- idgen_min_id_at(end).  The time field never moves between layouts, so
-- this needs no layout: IMMUTABLE, and constants fold at plan time.
CREATE FUNCTION idgen_min_id_at(t timestamptz) RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_idgen_min_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The millisecond an ID was minted in.
CREATE FUNCTION idgen_time(id bigint) RETURNS timestamptz
AS 'MODULE_PATHNAME', 'pg_idgen_time'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- An ID taken apart, with the layout in force at its millisecond (the
-- built-in version 1, or the table in the file idgen.layouts_file names:
-- STABLE, as that file and setting may change between statements).
CREATE FUNCTION idgen_decode(id bigint,
	OUT created_at timestamptz, OUT region integer, OUT worker integer,
	OUT sequence integer, OUT layout_version integer)
AS 'MODULE_PATHNAME', 'pg_idgen_decode'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

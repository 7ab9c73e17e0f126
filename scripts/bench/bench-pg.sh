#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-pg.sh: what IDs do to a PostgreSQL primary key, on this machine (no
# guest).  One throw-away server (the newest PostgreSQL installed, Debian 12's
# 15; initdb in a temporary directory, a unix socket only, stopped and removed
# at the end) with the extension (pg/) and pgstattuple, and four tables that
# differ only in their key:
#
#   bigserial                 a sequence
#   idgen_next()              the extension, idgen.device = 'sim:WORKER'
#                             (libidgen's simulated generator: the host has
#                             no /dev/idgen)
#   gen_random_uuid()         UUIDv4, a uuid key
#   insta_next_id()           an Instagram-style Snowflake in PL/pgSQL (41 bits
#                             of ms, 13 of shard, 10 of a sequence mod 1024)
#
# Each table gets ROWS single-row inserts, one INSERT per transaction, from
# pgbench (one client, prepared statements), in ROUNDS rounds that take the
# four tables in turn, so that the shared machine's load falls on each
# alike.  One client: a simulated worker mints in one process at a time, so
# each idgen round is one backend, and the others are run the same way.
# Reports rows/s, the primary key's size (pg_relation_size), its leaf
# density (pgstatindex) and WAL bytes per row (pg_current_wal_lsn()), with
# the goals met or missed, and the key's size against rows inserted as a
# plot.  Writes the section "## PostgreSQL: what IDs do to the index" of
# Documentation/bench/results.md (in place of the one there),
# Documentation/bench/pg.dat and Documentation/bench/pg.png.  Run as root
# (the server runs as postgres).  make bench runs it last; alone: make
# bench-pg.
#
#   IDGEN_BENCH_PG_ROWS=N     rows per table (default 1000000)
#   IDGEN_BENCH_PG_ROUNDS=N   rounds (default 10)
#   IDGEN_BENCH_PG_WORKER=W   the simulated worker (default 100; the
#                             simulation's lock refuses one that is in use)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

[ "${IDGEN_SKIP_DEPS:-0}" = 1 ] || scripts/deps.sh
command -v gnuplot >/dev/null || {
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q gnuplot-nox >/dev/null
}
rows=${IDGEN_BENCH_PG_ROWS:-1000000}
rounds=${IDGEN_BENCH_PG_ROUNDS:-10}
worker=${IDGEN_BENCH_PG_WORKER:-100}
per=$((rows / rounds))
rows=$((per * rounds))
pg_config=${PG_CONFIG:-$(ls -d /usr/lib/postgresql/*/bin/pg_config 2>/dev/null | sort -V | tail -1)}
[ -x "$pg_config" ] || { echo "bench-pg.sh: no pg_config (postgresql-server-dev-NN)" >&2; exit 1; }
bindir=$("$pg_config" --bindir)
pkglibdir=$("$pg_config" --pkglibdir)
sharedir=$("$pg_config" --sharedir)
version=$("$pg_config" --version)
[ -f "$sharedir/extension/pgstattuple.control" ] ||
	{ echo "bench-pg.sh: no pgstattuple (postgresql-contrib)" >&2; exit 1; }

out=Documentation/bench
work=$top/build/bench-pg
tmp=$(mktemp -d /tmp/idgen-bench-pg.XXXXXX)
root=$tmp/root
as_pg=()
[ "$(id -u)" -ne 0 ] || as_pg=(runuser -u postgres --)
cleanup() {
	[ -f "$tmp/server.log" ] && cp "$tmp/server.log" "$work/server.log"
	if [ -f "$tmp/data/postmaster.pid" ]; then
		"${as_pg[@]}" "$root$bindir/pg_ctl" -D "$tmp/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
rm -rf "$work"
mkdir -p "$work" "$out"

# The extension built for this server, installed into a private copy of
# its tree (as tests/pg/run.sh does): nothing is installed on the host.
cp -r pg "$tmp/pg" && ln -s "$top/lib" "$tmp/lib" && ln -s "$top/include" "$tmp/include"
make -s -C "$tmp/pg" PG_CONFIG="$pg_config" clean >/dev/null
make -s -C "$tmp/pg" PG_CONFIG="$pg_config" >/dev/null
make -s -C "$tmp/pg" PG_CONFIG="$pg_config" DESTDIR="$root" install >/dev/null
for d in "$bindir" "$pkglibdir" "$sharedir"; do
	mkdir -p "$root$d" && cp -rsn "$d/." "$root$d/"
done
for b in postgres initdb pg_ctl; do
	rm -f "$root$bindir/$b" && cp "$bindir/$b" "$root$bindir/$b"
done
chmod 755 "$tmp"
[ ${#as_pg[@]} -eq 0 ] || chown -R postgres: "$tmp"

# Commits are not waited for (synchronous_commit = off) and not flushed
# (fsync = off): the machine is shared and its disk is not what is
# measured; every insert still writes its WAL, which is what is counted.
# Autovacuum is off, so that no vacuum's WAL or work lands in a round.
"${as_pg[@]}" "$root$bindir/initdb" -D "$tmp/data" -U postgres --auth=trust \
	--no-sync -E UTF8 --locale=C >"$work/initdb.log" 2>&1
"${as_pg[@]}" "$root$bindir/pg_ctl" -D "$tmp/data" -w -t 60 -l "$tmp/server.log" \
	-o "-c listen_addresses= -c unix_socket_directories=$tmp -c fsync=off \
	    -c synchronous_commit=off -c autovacuum=off -c idgen.device=sim:$worker" \
	start >/dev/null
export PGHOST=$tmp PGUSER=postgres PGDATABASE=postgres
psql() { command "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

psql <<'SQL'
CREATE EXTENSION idgen;
CREATE EXTENSION pgstattuple;
-- Instagram's Snowflake in PL/pgSQL (their 2012 "Sharding & IDs" post):
-- 41 bits of ms since their epoch, 13 of shard, 10 of a sequence mod 1024.
CREATE SEQUENCE insta_seq;
CREATE FUNCTION insta_next_id(OUT result bigint) LANGUAGE plpgsql AS $$
DECLARE
    our_epoch  bigint := 1314220021721;
    seq_id     bigint;
    now_millis bigint;
    shard_id   int := 5;
BEGIN
    SELECT nextval('insta_seq') % 1024 INTO seq_id;
    SELECT floor(extract(epoch FROM clock_timestamp()) * 1000) INTO now_millis;
    result := (now_millis - our_epoch) << 23;
    result := result | (shard_id << 10);
    result := result | seq_id;
END;
$$;
CREATE TABLE k_bigserial (id bigserial PRIMARY KEY, payload integer NOT NULL)
    WITH (autovacuum_enabled = off);
CREATE TABLE k_idgen (id bigint PRIMARY KEY DEFAULT idgen_next(), payload integer NOT NULL)
    WITH (autovacuum_enabled = off);
CREATE TABLE k_uuidv4 (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), payload integer NOT NULL)
    WITH (autovacuum_enabled = off);
CREATE TABLE k_insta (id bigint PRIMARY KEY DEFAULT insta_next_id(), payload integer NOT NULL)
    WITH (autovacuum_enabled = off);
SQL

keys=(bigserial idgen uuidv4 insta)
declare -A label=(
	[bigserial]="bigserial"
	[idgen]="idgen_next() (sim)"
	[uuidv4]="gen_random_uuid() (UUIDv4)"
	[insta]="Instagram-style PL/pgSQL"
)
declare -A secs wal
for k in "${keys[@]}"; do
	printf '\\set p random(1, 1000000)\nINSERT INTO k_%s (payload) VALUES (:p);\n' "$k" >"$work/$k.sql"
	secs[$k]=0 wal[$k]=0
done
load_start=$(cut -d' ' -f1 /proc/loadavg)
echo "== $rows single-row inserts into each of ${keys[*]}, $rounds rounds"
echo "# rows bigserial_pk_bytes idgen_pk_bytes uuidv4_pk_bytes insta_pk_bytes" >"$work/pg.dat"
echo "0 0 0 0 0" >>"$work/pg.dat"
for ((r = 1; r <= rounds; r++)); do
	line=$((r * per))
	for k in "${keys[@]}"; do
		before=$(psql -tAc "SELECT pg_current_wal_lsn()")
		"$bindir/pgbench" -n -c 1 -j 1 -M prepared -t "$per" -f "$work/$k.sql" \
			>"$work/$k.$r.log" 2>&1 || { cat "$work/$k.$r.log" >&2; exit 1; }
		used=$(psql -tAc "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$before')")
		wal[$k]=$((${wal[$k]} + ${used%.*}))
		# pgbench's rate without its connection: seconds of this round.
		tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$work/$k.$r.log")
		secs[$k]=$(awk -v s="${secs[$k]}" -v n="$per" -v t="$tps" 'BEGIN { printf "%.6f", s + n / t }')
	done
	sizes=$(psql -tAc "SELECT string_agg(pg_relation_size(c)::text, ' ' ORDER BY o)
		FROM unnest('{k_bigserial_pkey,k_idgen_pkey,k_uuidv4_pkey,k_insta_pkey}'::regclass[])
		WITH ORDINALITY AS u(c, o)")
	echo "$line $sizes" >>"$work/pg.dat"
	echo "   round $r/$rounds: $line rows each"
done
load_end=$(cut -d' ' -f1 /proc/loadavg)

# Every row is there, and every key distinct (the primary key says so).
for k in "${keys[@]}"; do
	n=$(psql -tAc "SELECT count(*) FROM k_$k")
	[ "$n" = "$rows" ] || { echo "bench-pg.sh: k_$k has $n rows, not $rows" >&2; exit 1; }
done
declare -A rate size density leaves wal_row
for k in "${keys[@]}"; do
	rate[$k]=$(awk -v n="$rows" -v s="${secs[$k]}" 'BEGIN { printf "%.0f", n / s }')
	read -r size[$k] density[$k] leaves[$k] < <(psql -tA -F' ' -c \
		"SELECT pg_relation_size('k_${k}_pkey'), avg_leaf_density, leaf_pages
		   FROM pgstatindex('k_${k}_pkey')")
	wal_row[$k]=$(awk -v w="${wal[$k]}" -v n="$rows" 'BEGIN { printf "%.1f", w / n }')
done
ids=$(psql -tAc "SELECT CASE count(DISTINCT w) WHEN 1 THEN 'all of worker ' || min(w)
	ELSE count(DISTINCT w) || ' workers' END FROM (SELECT (idgen_decode(id)).worker AS w FROM k_idgen) x")
"${as_pg[@]}" "$root$bindir/pg_ctl" -D "$tmp/data" -m fast -w stop >/dev/null

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
goal() {	# goal MEASURED OP TARGET
	if awk -v m="$1" -v t="$3" -v op="$2" 'BEGIN { exit !(op == ">=" ? m >= t : m <= t) }'; then
		echo met
	else
		echo "**missed**"
	fi
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
rate_ratio=$(ratio "${rate[idgen]}" "${rate[bigserial]}")
size_ratio=$(ratio "${size[idgen]}" "${size[bigserial]}")
uuid_ratio=$(ratio "${size[idgen]}" "${size[uuidv4]}")
section=$work/section.md
{
	echo "## PostgreSQL: what IDs do to the index"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ), on the host (no guest): Linux $(uname -r), $(nproc) cores"
	echo "- $version, one throw-away server (scripts/bench/bench-pg.sh): shared_buffers"
	echo "  128 MB (the default), synchronous_commit = off and fsync = off (the"
	echo "  shared machine's disk is not what is measured; every insert still"
	echo "  writes its WAL), autovacuum off; full_page_writes on"
	echo "- $rows single-row inserts per table (pgbench, one client, prepared,"
	echo "  one INSERT per transaction), in $rounds rounds of $per that take the"
	echo "  tables in turn; one client because a simulated worker mints in one"
	echo "  process at a time"
	echo "- idgen_next() from libidgen's simulated generator (idgen.device ="
	echo "  'sim:$worker'; its IDs decode to $ids),"
	echo "  buffer 32, age bound 10 ms, as the defaults"
	echo "- tables alike but for the key: (id KEY, payload integer); the UUID key"
	echo "  is 16 bytes, the others 8"
	echo "- **the machine was shared**: load average (1 min) $load_start at the start,"
	echo "  $load_end at the end"
	echo
	echo "| key | rows/s | vs bigserial | primary key (MiB) | vs bigserial | leaf pages | leaf density | WAL bytes per row |"
	echo "|---|---|---|---|---|---|---|---|"
	for k in "${keys[@]}"; do
		echo "| ${label[$k]} | ${rate[$k]} | $(ratio "${rate[$k]}" "${rate[bigserial]}") |" \
			"$(mib "${size[$k]}") | $(ratio "${size[$k]}" "${size[bigserial]}") |" \
			"${leaves[$k]} | ${density[$k]}% | ${wal_row[$k]} |"
	done
	echo
	echo "Keys that grow (a sequence, idgen's, Instagram's) fill each leaf page"
	echo "and go on to a new one at the right edge: B-tree's rightmost split"
	echo "leaves the old page about 90% full (the fillfactor). Random UUIDv4"
	echo "keys land all over the index: a split in the middle leaves two"
	echo "half-full pages, which later inserts fill again, so the leaves settle"
	echo "near 70% full (ln 2), not at 50%; with keys twice as wide the index"
	echo "is bigger still, and each insert dirties a page few others share, so"
	echo "more full-page images go to the WAL after each checkpoint."
	echo
	echo "Rows/s is each table's rows over its rounds' time; on this shared"
	echo "machine one round's rate varies by a factor of 2 to 3 from the next"
	echo "(the rounds' logs: build/bench-pg/), so the rate's goal is judged on"
	echo "a noisy figure."
	echo
	echo "### Goals"
	echo
	echo "| goal | measured | target | |"
	echo "|---|---|---|---|"
	echo "| idgen_next() rows/s / bigserial's | $rate_ratio | >= 0.9 | $(goal "$rate_ratio" '>=' 0.9) |"
	echo "| idgen_next() primary key / bigserial's | $size_ratio | <= 1.05 | $(goal "$size_ratio" '<=' 1.05) |"
	echo "| idgen_next() primary key / UUIDv4's | $uuid_ratio | <= 0.55 | $(goal "$uuid_ratio" '<=' 0.55) |"
	echo "| idgen_next() leaf density (UUIDv4's: ${density[uuidv4]}%) | ${density[idgen]}% | >= 85% | $(goal "${density[idgen]}" '>=' 85) |"
	echo
	echo "![primary key size against rows inserted](pg.png)"
} >"$section"

cp "$work/pg.dat" "$out/pg.dat"
gnuplot <<GNUPLOT
set terminal pngcairo size 900,560 noenhanced
set output "$out/pg.png"
set title "Primary key size against rows inserted ($version, single-row inserts)"
set xlabel "rows inserted (millions)"
set ylabel "pg_relation_size of the primary key (MiB)"
set key top left
set grid
plot "$out/pg.dat" using (\$1/1e6):(\$2/1048576) with linespoints title "bigserial", \
     "$out/pg.dat" using (\$1/1e6):(\$3/1048576) with linespoints title "idgen_next() (sim)", \
     "$out/pg.dat" using (\$1/1e6):(\$4/1048576) with linespoints title "gen_random_uuid() (UUIDv4)", \
     "$out/pg.dat" using (\$1/1e6):(\$5/1048576) with linespoints title "Instagram-style PL/pgSQL"
GNUPLOT

results=$out/results.md
scripts/bench/results-section.sh "$results" "## PostgreSQL: what IDs do to the index" "$section"
echo "wrote the PostgreSQL section of $results, $out/pg.dat, $out/pg.png"
cat "$section"

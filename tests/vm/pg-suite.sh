#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pg-suite.sh MODULE PGROOT: the PostgreSQL extension over idgen.ko, as
# root in a disposable guest (tests/vm/run-guest.sh).  PGROOT is the
# extension installed into a staging root for the server it runs on
# (make -C pg install DESTDIR=PGROOT PG_CONFIG=...; scripts/check.sh
# makes it): the guest's root is the host's, read-only, and a server looks
# for extensions only under its own directories, so the suite lays a copy
# of those (symlinks to the real files, and the extension's files) over
# them on tmpfs, in the guest alone.  One throw-away server, initdb'd in
# /tmp, unix socket only, with shared_preload_libraries = 'idgen'.  Loads
# the module and sets a lease: never run it outside a guest.
#
#  - the postmaster loads the library and mints from it before forking
#    any backend (tests/vm/pg_premint.c, preloaded after it): no backend
#    hands out an ID of the postmaster's read (its buffer, inherited)
#  - 8 concurrent sessions insert 10^5 rows each into a table whose key is
#    DEFAULT idgen_next(), one INSERT ... SELECT FROM generate_series per
#    session (what runs in reasonable time under TCG): every ID unique,
#    each session's strictly increasing in the order it inserted them
#    (a per-session sequence column), every ID of the lease's region and
#    worker
#  - 40 short sessions, each its own backend forked from the postmaster,
#    8 at a time: no ID handed out twice
#  - the lease revoked (idgenctl lease revoke) while 4 sessions insert
#    batches of 500 rows, one statement each: the inserts then fail with
#    IG002, and no ID is past the last millisecond the revoke reported.
#    (Whether a failed batch is half-written is not checked: a statement
#    is atomic, so such a check could not fail.)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
module=${1:?usage: pg-suite.sh MODULE PGROOT}
pgroot=${2:?usage: pg-suite.sh MODULE PGROOT}
idgenctl=$top/helper/idgenctl/idgenctl
region=3 worker=77
sessions=${IDGEN_PG_SESSIONS:-8}
rows=${IDGEN_PG_ROWS:-100000}

if [ "${IDGEN_GUEST:-}" != 1 ]; then
	echo "pg-suite.sh: refusing to run outside a test guest" >&2
	exit 2
fi

lib=$(find "$pgroot" -name idgen.so -path '*/postgresql/*' | head -n 1)
control=$(find "$pgroot" -name idgen.control | head -n 1)
if [ -z "$lib" ] || [ -z "$control" ]; then
	echo "not ok 1 the extension staged under $pgroot (make -C pg install DESTDIR=...)"
	exit 1
fi
pkglibdir=${lib#"$pgroot"}
pkglibdir=${pkglibdir%/idgen.so}
extdir=${control#"$pgroot"}
extdir=${extdir%/idgen.control}
bindir=$(dirname "$pkglibdir")/bin
work=$(mktemp -d /tmp/pg-suite.XXXXXX)
chmod 755 "$work"
chown postgres: "$work"	# initdb makes the data directory in it
data=$work/data
cleanup() {
	[ -f "$data/postmaster.pid" ] &&
		runuser -u postgres -- "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1
}
trap cleanup EXIT
export PGHOST=$work PGUSER=postgres PGDATABASE=postgres
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
q() { psql -tAc "$1"; }

# The server's directories, with the extension's files among the real ones:
# symlinks to the real files, seen through a second mount of the directory
# (a link to DIR itself would lead back into the copy once it covers DIR).
overlay() {	# overlay DIR FILE...
	local dir=$1 name
	shift
	name=$(echo "$dir" | tr / _)
	mkdir -p "$work/real$name" "$work/copy$name" &&
		mount --bind "$dir" "$work/real$name" &&
		cp -rs "$work/real$name/." "$work/copy$name/" && cp "$@" "$work/copy$name/" &&
		mount --bind "$work/copy$name" "$dir"
}
# The postmaster's minting library, built here against the server's headers.
check "tests/vm/pg_premint.c built" \
	cc -O2 -Wall -Werror -shared -fPIC -I"$("$bindir/pg_config" --includedir-server)" \
		-o "$work/pg_premint.so" "$top/tests/vm/pg_premint.c"
check "the extension laid over $pkglibdir and $extdir (tmpfs, the guest's alone)" \
	eval 'overlay "$pkglibdir" "$lib" "$work/pg_premint.so" &&
	      overlay "$extdir" "$(dirname "$control")"/idgen*'

check "insmod $(basename "$module")" insmod "$module"
check "a lease: region $region, worker $worker" \
	"$idgenctl" lease set --region "$region" --worker "$worker" --valid-for 600000

if runuser -u postgres -- "$bindir/initdb" -D "$data" -U postgres --auth=trust \
	--no-sync -E UTF8 --locale=C >"$work/initdb.log" 2>&1 &&
   runuser -u postgres -- "$bindir/pg_ctl" -D "$data" -w -t 120 -l "$work/server.log" \
	-o "-c listen_addresses= -c unix_socket_directories=$work -c fsync=off \
	    -c synchronous_commit=off -c shared_preload_libraries=idgen,pg_premint -c max_connections=40" \
	start >/dev/null 2>&1; then
	ok "a server with shared_preload_libraries = 'idgen, pg_premint' ($("$bindir/postgres" --version))"
else
	not_ok "a server with shared_preload_libraries = 'idgen, pg_premint'"
	sed 's/^/# /' "$work"/*.log
	exit 1
fi
check "CREATE EXTENSION idgen" psql -c "CREATE EXTENSION idgen"

postmaster=$(head -n 1 "$data/postmaster.pid")
premint=$(grep -Eo 'pg_premint: the postmaster minted [0-9]+' "$work/server.log" | grep -Eo '[0-9]+$')
check "the postmaster ($postmaster) minted before forking (${premint:-nothing}), its device still open" \
	eval '[ -n "$premint" ] && ls -l /proc/$postmaster/fd | grep -q /dev/idgen'
# What a backend would hand out from the postmaster's buffer, inherited:
# the rest of that read (idgen.buffer_size, 32 by default, consecutive
# within its millisecond).
inherited="id BETWEEN ${premint:-0} AND ${premint:-0} + 32"

# ---- 8 sessions at once -----------------------------------------------
psql -c "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT idgen_next(),
		       session integer NOT NULL, seq integer NOT NULL)"
start=$(date +%s)
for ((s = 1; s <= sessions; s++)); do
	psql -c "INSERT INTO t (session, seq) SELECT $s, g FROM generate_series(1, $rows) g
		 ORDER BY g" >"$work/load.$s.log" 2>&1 &
done
failed=0
for ((s = 1; s <= sessions; s++)); do
	wait -n || failed=$((failed + 1))
done
took=$(($(date +%s) - start))
check "$sessions sessions inserted $rows rows each at once, one INSERT ... SELECT each (${took} s)" \
	test "$failed" = 0 -a "$(q "SELECT count(*) FROM t")" = $((sessions * rows))
[ "$failed" = 0 ] || cat "$work"/load.*.log | sed 's/^/# /'
check "every ID unique (count(DISTINCT id) = count(*))" \
	test "$(q "SELECT count(DISTINCT id) = count(*) FROM t")" = t
check "each session's IDs strictly increase in the order it inserted them" \
	test "$(q "SELECT count(*) FROM (SELECT id, lag(id) OVER (PARTITION BY session ORDER BY seq) AS prev
					FROM t) x WHERE id <= prev")" = 0
check "every ID decodes to the lease's region $region and worker $worker" \
	test "$(q "SELECT count(*) FROM t, idgen_decode(t.id) d
		   WHERE d.region <> $region OR d.worker <> $worker OR d.layout_version <> 1")" = 0

# ---- many backends, each forked from the postmaster -------------------
psql -c "CREATE TABLE f (id bigint NOT NULL, backend integer NOT NULL)"
for ((b = 1; b <= 40; b++)); do
	psql -c "INSERT INTO f SELECT idgen_next(), pg_backend_pid() FROM generate_series(1, 500)" \
		>"$work/fork.$b.log" 2>&1 &
	((b % 8)) || wait
done
wait
check "40 backends forked from the preloading postmaster, 500 IDs each: none twice" \
	test "$(q "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || count(DISTINCT backend) FROM f")" \
	= "20000 20000 40"
check "no backend handed out an ID of the postmaster's read" \
	test "$(q "SELECT (SELECT count(*) FROM f WHERE $inherited) + (SELECT count(*) FROM t WHERE $inherited)")" = 0

# ---- the lease revoked mid-load ---------------------------------------
psql -c "CREATE TABLE r (id bigint PRIMARY KEY DEFAULT idgen_next(),
		       session integer NOT NULL, batch integer NOT NULL)"
for ((s = 1; s <= 4; s++)); do
	{
		echo '\set VERBOSITY verbose'
		for ((b = 1; b <= 400; b++)); do
			echo "INSERT INTO r (session, batch) SELECT $s, $b FROM generate_series(1, 500);"
		done
	} >"$work/revoke.$s.sql"
	"$bindir/psql" -X -q -f "$work/revoke.$s.sql" >"$work/revoke.$s.log" 2>&1 &
done
# Until some batches are in, then revoke while the sessions go on.
for ((t = 0; t < 600; t++)); do
	[ "$(q "SELECT count(DISTINCT (session, batch)) >= 40 FROM r")" = t ] && break
	sleep 0.1
done
revoked=$("$idgenctl" lease revoke 2>&1)
wait
last_ms=$(grep -Eo '^[0-9]+$' <<<"$revoked" | head -n 1)
echo "# idgenctl lease revoke: $revoked"
in=$(q "SELECT count(DISTINCT (session, batch)) FROM r")
refused=$(cat "$work"/revoke.*.log | grep -c 'ERROR:  IG002:')
check "batches went in before the revoke ($in of 1600)" test "$in" -ge 40 -a "$in" -lt 1600
check "after it, the inserts failed with IG002 ($refused statements)" \
	test "$refused" -gt 0 -a "$((in + refused))" = 1600
other=$(cat "$work"/revoke.*.log | grep 'ERROR:' | grep -vc 'ERROR:  IG002:')
check "... and with nothing else ($other other errors)" test "$other" = 0
[ "$other" = 0 ] || grep -h 'ERROR:' "$work"/revoke.*.log | grep -v IG002 | sort | uniq -c | sed 's/^/# /'
grep -h -m1 -A2 'ERROR:  IG002:' "$work"/revoke.*.log | head -n 3 | sed 's/^/# /'
if [ -n "$last_ms" ]; then
	check "no ID past the last millisecond the revoke reported ($last_ms)" \
		test "$(q "SELECT count(*) FROM r WHERE (id >> 22) > $last_ms")" = 0
else
	not_ok "idgenctl lease revoke reported the last millisecond"
fi
nolease=$("$bindir/psql" -X -c '\set VERBOSITY verbose' -c "SELECT idgen_next()" 2>&1)
check "a new session's idgen_next() fails with IG002 while no lease is in force" \
	grep -q "ERROR:  IG002:" <<<"$nolease"

if grep -E "terminated by signal|TRAP:|PANIC" "$work/server.log" >"$work/bad.log"; then
	not_ok "the server log shows no backend crash"
	sed 's/^/# /' "$work/bad.log"
else
	ok "the server log shows no backend crash"
fi
runuser -u postgres -- "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1
check "rmmod idgen" rmmod idgen

echo "1..$n"
exit "$status"

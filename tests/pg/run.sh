#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh: the PostgreSQL extension (pg/) against a real server.  Builds it
# with PGXS for the newest PostgreSQL installed (postgresql-server-dev-NN;
# PG_CONFIG overrides), installs it into a private copy of that server's
# directory tree in a temporary directory, starts a throw-away server from
# there (initdb + pg_ctl, unix socket only, as the postgres user when run
# as root, with the extension in shared_preload_libraries, as a site that
# preloads it runs it), runs pg_regress (make installcheck) against it, and
# stops it.  Installs nothing outside the temporary directory, which goes
# on any exit.  Also checks that every ```sql block of pg/README.md is in
# pg/sql/recipes.sql word for word, so the documented recipes are the
# tested ones.  Prints TAP.
#
#   IDGEN_PG_RESULTS=DIR   keep pg_regress's results/*.out there
#
# The host has no /dev/idgen (the module is loaded in guests only), and
# the tests expect idgen_next() to fail with IG001, "no device".
set -uo pipefail
# Its simulated workers are its own: a /dev/shm of its own.
# shellcheck source=../lib/own-namespaces.sh
. "$(dirname "$0")/../lib/own-namespaces.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh disable=SC2154 # n and status are tap.sh's
. "$top/tests/lib/tap.sh"
pg=$top/pg

if [ -e /dev/idgen ]; then
	echo "not ok 1 no /dev/idgen on this host (the tests expect none; run them on the host)"
	exit 1
fi
pg_config=${PG_CONFIG:-$(ls -d /usr/lib/postgresql/*/bin/pg_config 2>/dev/null | sort -V | tail -1)}
if [ -z "$pg_config" ] || [ ! -x "$pg_config" ]; then
	echo "not ok 1 PostgreSQL's pg_config found (install postgresql-server-dev-NN: scripts/deps.sh)"
	exit 1
fi
bindir=$("$pg_config" --bindir)
pkglibdir=$("$pg_config" --pkglibdir)
sharedir=$("$pg_config" --sharedir)
version=$("$pg_config" --version)

tmp=$(mktemp -d /tmp/idgen-pgext.XXXXXX) || exit 1
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
	as_pg=(runuser -u postgres --)
fi
root=$tmp/root
cleanup() {
	if [ -f "$tmp/data/postmaster.pid" ]; then
		"${as_pg[@]}" "$root$bindir/pg_ctl" -D "$tmp/data" -m immediate -w stop >/dev/null 2>&1
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# A build of our own: the tree's pg/ may hold another server version's.
build=$tmp/build
mkdir -p "$build"
cp -r "$pg" "$build/pg" && ln -s "$top/lib" "$build/lib" && ln -s "$top/include" "$build/include" &&
	make -s -C "$build/pg" PG_CONFIG="$pg_config" clean
tap_step "the extension builds against $version with -Werror" \
	make -C "$build/pg" PG_CONFIG="$pg_config" COPT=-Werror || exit 1

# The server finds extensions and libraries relative to its own binary:
# a copy of its directories, symlinks to the real files, with ours
# installed into the copy and the binaries themselves copied (a symlinked
# binary would resolve to the real tree).
private_root() {
	make -C "$build/pg" PG_CONFIG="$pg_config" DESTDIR="$root" install &&
	for d in "$bindir" "$pkglibdir" "$sharedir"; do
		mkdir -p "$root$d" && cp -rsn "$d/." "$root$d/" || return 1
	done &&
	for b in postgres initdb pg_ctl; do
		rm -f "$root$bindir/$b" && cp "$bindir/$b" "$root$bindir/$b" || return 1
	done
}
tap_step "installed into a private copy of the server's tree" private_root || exit 1
chmod 755 "$tmp"
[ ${#as_pg[@]} -eq 0 ] || chown -R postgres: "$tmp"

if "${as_pg[@]}" "$root$bindir/initdb" -D "$tmp/data" -U postgres --auth=trust \
	--no-sync -E UTF8 --locale=C >"$tmp/initdb.log" 2>&1 &&
   "${as_pg[@]}" "$root$bindir/pg_ctl" -D "$tmp/data" -w -t 60 -l "$tmp/server.log" \
	-o "-c listen_addresses= -c unix_socket_directories=$tmp -c fsync=off -c shared_preload_libraries=idgen" \
	start >/dev/null 2>&1; then
	ok "throw-away server ($version) with shared_preload_libraries=idgen, on a unix socket"
else
	not_ok "throw-away server ($version)"
	sed 's/^/# /' "$tmp"/*.log
	exit 1
fi

# pg_regress is a client: as this user, its output under $tmp.
if make -C "$build/pg" PG_CONFIG="$pg_config" PGHOST="$tmp" PGUSER=postgres \
	EXTRA_REGRESS_OPTS="--outputdir=$tmp/regress" installcheck >"$tmp/installcheck.log" 2>&1; then
	ok "pg_regress: $(grep -cE '(\.\.\. |^ok )' "$tmp/installcheck.log") tests ($(cd "$pg/sql" && ls | sed 's/\.sql$//' | paste -sd' '))"
else
	not_ok "pg_regress"
	sed 's/^/# /' "$tmp/installcheck.log"
	[ -f "$tmp/regress/regression.diffs" ] && sed 's/^/# /' "$tmp/regress/regression.diffs"
fi
# IDGEN_PG_RESULTS=DIR keeps what the tests printed, to review and make
# the new pg/expected/ from.
if [ -n "${IDGEN_PG_RESULTS:-}" ]; then
	mkdir -p "$IDGEN_PG_RESULTS" && cp "$tmp"/regress/results/*.out "$IDGEN_PG_RESULTS"/
fi

# sql ARGS...: psql's unaligned answer (and its errors) from the server.
sql() { "$bindir/psql" -X -q -h "$tmp" -U postgres -d postgres -tA "$@" 2>&1; }
# held OUT: OUT says a simulated worker was held by another process of
# this host (the check is skipped, not failed).
held() { grep -q "another simulated generator" <<<"$1"; }

# idgen.device = 'sim:WORKER': libidgen's simulated generator, as the
# index benchmark (scripts/bench/bench-pg.sh) mints from it.  Its worker is held
# host-wide: a run beside another that holds it is skipped, not failed.
sim_worker=122
sim_sql="CREATE EXTENSION IF NOT EXISTS idgen;
SET idgen.device = 'sim:$sim_worker';
SELECT count(*), count(DISTINCT id), bool_and(w = $sim_worker AND r = 0),
       bool_and(id > prev OR prev IS NULL)
  FROM (SELECT id, (idgen_decode(id)).worker AS w, (idgen_decode(id)).region AS r,
               lag(id) OVER (ORDER BY n) AS prev
          FROM (SELECT idgen_next() AS id, g AS n FROM generate_series(1, 5000) g
                UNION ALL
                SELECT id, 5000 + row_number() OVER () FROM idgen_next_n(5000) id) a) b;"
sim_out=$(sql -F' ' -c "$sim_sql")
if held "$sim_out"; then
	tap_skip "idgen.device = 'sim:$sim_worker': idgen_next() and idgen_next_n() from the simulation" \
		"worker $sim_worker is held by another process of this host"
else
	check "idgen.device = 'sim:$sim_worker': idgen_next() and idgen_next_n() from the simulation, 10000 IDs of its worker, increasing ($sim_out)" \
		test "$sim_out" = "10000 10000 t t"
fi

# A session's buffer follows its settings: the column default mints
# through it; a new idgen.buffer_size makes a new one, above the IDs
# before; another idgen.device lets go of the first generator, and the
# next ID is the new one's (pg/sql/device.sql has what may not be one).
buf_sql="SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS idgen;
SET idgen.device = 'sim:120';
SET idgen.buffer_size = 8;
CREATE TEMP TABLE minted (id bigint PRIMARY KEY DEFAULT idgen_next(), n integer);
INSERT INTO minted (n) SELECT g FROM generate_series(1, 20) g;
SET idgen.buffer_size = 1;
INSERT INTO minted (n) SELECT g FROM generate_series(21, 25) g;
SET idgen.device = 'sim:121';
INSERT INTO minted (n) SELECT g FROM generate_series(26, 30) g;
SELECT count(*), bool_and(w = CASE WHEN n <= 25 THEN 120 ELSE 121 END),
       bool_and(id > prev OR prev IS NULL)
  FROM (SELECT n, id, (idgen_decode(id)).worker AS w,
               lag(id) OVER (PARTITION BY (idgen_decode(id)).worker ORDER BY n) AS prev
          FROM minted) m;"
buf_out=$(sql -F' ' -c "$buf_sql")
if held "$buf_out"; then
	tap_skip "a session's buffer follows idgen.buffer_size and idgen.device" \
		"worker 120 or 121 is held by another process of this host"
else
	check "a session's buffer follows idgen.buffer_size and idgen.device: the column default's IDs increasing, each of its generator ($buf_out)" \
		test "$buf_out" = "30 t t"
fi

# Only sim:WORKER: the file form has no lock (two sessions on one file
# repeated IDs), and a value that is neither is named, not taken for a
# file and refused later as a missing lease (IG002).
for bad in 'sim:/tmp/idgen-pg-sim-state' 'sim:101 ' 'sim:+5' 'sim:128' 'sim:012' 'sim'; do
	bad_out=$(sql -v VERBOSITY=verbose -c "SET idgen.device = '$bad'" -c "SELECT idgen_next()")
	if grep -qF "ERROR:  22023: idgen.device \"$bad\" is not a simulated worker" <<<"$bad_out" &&
	   ! grep -q IG002 <<<"$bad_out"; then
		ok "idgen.device = '$bad' is refused, naming it (22023), no IG002"
	else
		not_ok "idgen.device = '$bad' is refused, naming it (22023), no IG002"
		sed 's/^/# /' <<<"$bad_out"
	fi
done

# A wall clock stepped back between two sessions of one simulated worker:
# the next session does not mint under the last one's IDs.  The step is
# played by the worker's mark (/dev/shm/idgen-sim-r0-wWORKER) 60 s ahead
# of the clock: refused with IG004 and the simulation's own hint.
step_worker=123
step_mark=/dev/shm/idgen-sim-r0-w$step_worker
# The mark is the server's user's own, mode 0600: the simulation uses no
# other (lib/sim.c).
"${as_pg[@]}" /usr/bin/python3 -c '
import struct, sys, time, os
ms = int(time.time() * 1000) - 1767225600000 + int(sys.argv[2])
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
os.fchmod(fd, 0o600)
os.pwrite(fd, b"idgensim" + struct.pack("=Q", ms << 22 | (1 << 22) - 1), 0)
os.close(fd)' "$step_mark" 60000
step_out=$(sql -v VERBOSITY=verbose -c "SET idgen.device = 'sim:$step_worker'" -c "SELECT idgen_next()")
if held "$step_out"; then
	tap_skip "a simulated worker's next session after a step back of the clock" \
		"worker $step_worker is held by another process of this host"
else
	if grep -q "ERROR:  IG004" <<<"$step_out" && grep -q "HINT:.*simulated worker's last ID" <<<"$step_out"; then
		ok "a simulated worker's next session after a step back of the clock: IG004, the simulation's hint"
	else
		not_ok "a simulated worker's next session after a step back of the clock: IG004, the simulation's hint"
		sed 's/^/# /' <<<"$step_out"
	fi
fi
# Back to the clock, for the worker's next user (no ID was minted above it).
"${as_pg[@]}" /usr/bin/python3 -c '
import struct, sys, time, os
ms = int(time.time() * 1000) - 1767225600000 + int(sys.argv[2])
fd = os.open(sys.argv[1], os.O_RDWR)
os.pwrite(fd, b"idgensim" + struct.pack("=Q", ms << 22 | (1 << 22) - 1), 0)
os.close(fd)' "$step_mark" 20

# The server's log holds no crash and no failed assertion.
if grep -E "terminated by signal|TRAP:|PANIC" "$tmp/server.log" >"$tmp/bad.log"; then
	not_ok "the server log shows no backend crash"
	sed 's/^/# /' "$tmp/bad.log"
else
	ok "the server log shows no backend crash"
fi

# The README's SQL is the tested SQL.
recipes_documented() {
	local block='' in='' missing=0 count=0 sql
	sql=$(cat "$pg/sql/recipes.sql")
	while IFS= read -r line; do
		if [ -z "$in" ] && [ "$line" = '```sql' ]; then
			in=1 block=''
		elif [ -n "$in" ] && [ "$line" = '```' ]; then
			in='' count=$((count + 1))
			if [[ $sql != *"$block"* ]]; then
				echo "not in pg/sql/recipes.sql:"
				printf '%s' "$block"
				missing=1
			fi
		elif [ -n "$in" ]; then
			block+="$line"$'\n'
		fi
	done <"$pg/README.md"
	echo "$count blocks"
	[ "$count" -ge 4 ] && [ "$missing" -eq 0 ]
}
tap_step "every sql block of pg/README.md is in pg/sql/recipes.sql" recipes_documented

echo "1..$n"
exit "$status"

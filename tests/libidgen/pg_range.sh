#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pg_range.sh: the README's range query against a real PostgreSQL bigint
# primary key.  Starts a throw-away server (initdb + pg_ctl, unix socket
# only, in a temporary directory, as the postgres user when run as root),
# inserts IDs built for known times and nodes (mkids, i.e. libidgen's
# idgen_compose()), and checks that
#
#   id >= min-id-at(day start) AND id < min-id-at(next day start)
#
# returns exactly that day's rows, for a UTC day and a +02:00 day.  Then booking
# codes (Documentation/design.md section 10) against a unique constraint: 10^5
# codes from idgenctl code new, 1000 of them taken before, so the conflicts are
# retried with fresh codes until every booking has one.  Stops the server and
# removes everything on any exit.  Installs nothing: needs Debian's postgresql
# package.  Prints TAP.  Build first (run.sh does).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
idgenctl=$top/helper/idgenctl/idgenctl
mkids=$top/tests/libidgen/mkids

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bindir" ] && command -v initdb >/dev/null; then
	bindir=$(dirname "$(command -v initdb)")
fi
if [ -z "$bindir" ] || [ ! -x "$bindir/pg_ctl" ]; then
	echo "not ok 1 PostgreSQL found (install the postgresql package: scripts/deps.sh)"
	exit 1
fi

tmp=$(mktemp -d /tmp/idgen-pg.XXXXXX) || exit 1
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
	chown postgres: "$tmp" || exit 1
	as_pg=(runuser -u postgres --)
fi
cleanup() {
	if [ -f "$tmp/data/postmaster.pid" ]; then
		"${as_pg[@]}" "$bindir/pg_ctl" -D "$tmp/data" -m immediate -w stop >/dev/null 2>&1
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if "${as_pg[@]}" "$bindir/initdb" -D "$tmp/data" -U postgres --auth=trust \
	--no-sync -E UTF8 --locale=C >"$tmp/initdb.log" 2>&1 &&
   "${as_pg[@]}" "$bindir/pg_ctl" -D "$tmp/data" -w -t 60 -l "$tmp/server.log" \
	-o "-c listen_addresses= -c unix_socket_directories=$tmp -c fsync=off" \
	start >/dev/null 2>&1; then
	ok "throw-away PostgreSQL server ($("$bindir/postgres" --version)) on a unix socket"
else
	not_ok "throw-away PostgreSQL server"
	sed 's/^/# /' "$tmp"/*.log
	exit 1
fi

psql() {
	"$bindir/psql" -h "$tmp" -U postgres -d postgres -X -q -At -v ON_ERROR_STOP=1 "$@"
}

# label, time, region, worker, seq: the edges of 2026-03-15, UTC and +02:00.
rows=(
	"zero         2026-01-01T00:00:00.000Z 0 0 0"
	"plus2_before 2026-03-14T21:59:59.999Z 7 127 4095"
	"plus2_first  2026-03-14T22:00:00.000Z 0 0 0"
	"utc_before   2026-03-14T23:59:59.999Z 7 127 4095"
	"utc_first    2026-03-15T00:00:00.000Z 0 0 0"
	"utc_first_hi 2026-03-15T00:00:00.000Z 7 127 4095"
	"midday       2026-03-15T12:34:56.789Z 3 42 17"
	"plus2_last   2026-03-15T21:59:59.999Z 7 127 4095"
	"plus2_after  2026-03-15T22:00:00.000Z 0 0 0"
	"utc_last     2026-03-15T23:59:59.999Z 7 127 4095"
	"utc_after    2026-03-16T00:00:00.000Z 0 0 0"
	"utc_after_2  2026-03-16T00:00:00.000Z 1 2 3"
	"max          2095-09-07T15:47:35.551Z 7 127 4095"
)
labels=() ids=()
for r in "${rows[@]}"; do
	read -r label fields <<<"$r"
	labels+=("$label")
done
mapfile -t ids < <(for r in "${rows[@]}"; do read -r _ fields <<<"$r"; echo "$fields"; done | "$mkids")
if [ "${#ids[@]}" -ne "${#rows[@]}" ]; then
	not_ok "IDs built for known times"
	exit 1
fi
sql="CREATE TABLE orders (id bigint PRIMARY KEY, label text NOT NULL);"
for i in "${!ids[@]}"; do
	sql+="INSERT INTO orders VALUES (${ids[$i]}, '${labels[$i]}');"
done
if psql -c "$sql"; then
	ok "${#ids[@]} rows in a table with a bigint primary key, the largest ID $(printf '%s\n' "${ids[@]}" | sort -n | tail -1)"
else
	not_ok "rows inserted into a bigint primary key"
	exit 1
fi

# ORDER BY id is time order: the rows above are listed in time order.
got=$(psql -c "SELECT string_agg(label, ' ' ORDER BY id) FROM orders")
want=$(printf '%s\n' "${labels[@]}" | paste -sd' ')
if [ "$got" = "$want" ]; then ok "ORDER BY id is creation-time order"; else
	not_ok "ORDER BY id is creation-time order"; echo "# got:  $got"; echo "# want: $want"; fi

# A day's rows: id >= min-id-at(start) AND id < min-id-at(end).
day_query() {
	local desc=$1 start=$2 end=$3 want=$4 lo hi got
	lo=$("$idgenctl" min-id-at "$start") && hi=$("$idgenctl" min-id-at "$end") || {
		not_ok "$desc: min-id-at"; return; }
	got=$(psql -c "SELECT coalesce(string_agg(label, ' ' ORDER BY id), '')
		       FROM orders WHERE id >= $lo AND id < $hi")
	if [ "$got" = "$want" ]; then
		ok "$desc: id >= $lo AND id < $hi returns exactly that day's rows"
	else
		not_ok "$desc: id >= $lo AND id < $hi"
		echo "# got:  $got"
		echo "# want: $want"
	fi
}
day_query "2026-03-15 UTC" 2026-03-15T00:00:00Z 2026-03-16T00:00:00Z \
	"utc_first utc_first_hi midday plus2_last plus2_after utc_last"
day_query "2026-03-15 at +02:00" 2026-03-15T00:00:00+02:00 2026-03-16T00:00:00+02:00 \
	"plus2_first utc_before utc_first utc_first_hi midday plus2_last"
day_query "2026-03-15 UTC by Unix ms" 1773532800000 1773619200000 \
	"utc_first utc_first_hi midday plus2_last plus2_after utc_last"
day_query "a day before the epoch" 2025-12-31T00:00:00Z 2026-01-01T00:00:00Z ""

# The planner uses the primary key for it.
plan=$(psql -c "SET enable_seqscan = off; EXPLAIN SELECT * FROM orders
		WHERE id >= $("$idgenctl" min-id-at 2026-03-15T00:00:00Z)
		  AND id < $("$idgenctl" min-id-at 2026-03-16T00:00:00Z)")
if grep -q "orders_pkey" <<<"$plan"; then ok "the range query is an index scan on the primary key"; else
	not_ok "the range query is an index scan on the primary key"; sed 's/^/# /' <<<"$plan"; fi

# Booking codes: the unique constraint and a new code on conflict.
codes=$tmp/codes
if "$idgenctl" code new -n 100000 >"$codes" && [ "$(wc -l <"$codes")" -eq 100000 ] &&
   psql -c "CREATE TABLE bookings (code text UNIQUE NOT NULL);
	    CREATE TABLE wanted (code text NOT NULL);" &&
   psql -c "\\copy wanted FROM '$codes'" &&
   psql -c "INSERT INTO bookings SELECT code FROM wanted LIMIT 1000"; then
	ok "100000 new codes, 1000 of them taken by earlier bookings"
else
	not_ok "100000 new codes into a table with a unique constraint"
fi
conflicts=$(psql -c "WITH ins AS (INSERT INTO bookings SELECT code FROM wanted
			ON CONFLICT (code) DO NOTHING RETURNING 1)
		     SELECT 100000 - count(*) FROM ins")
retries=0 left=$conflicts
while [ "${left:-0}" -gt 0 ] && [ $retries -lt 5 ]; do
	retries=$((retries + 1))
	"$idgenctl" code new -n "$left" >"$codes.retry" &&
	psql -c "TRUNCATE wanted" -c "\\copy wanted FROM '$codes.retry'" || break
	left=$(psql -c "WITH ins AS (INSERT INTO bookings SELECT code FROM wanted
			ON CONFLICT (code) DO NOTHING RETURNING 1)
		     SELECT $left - count(*) FROM ins")
done
total=$(psql -c "SELECT count(*) FROM bookings")
if [ "${conflicts:-0}" -ge 1000 ] && [ "$left" = 0 ] && [ "$total" = 101000 ]; then
	ok "$conflicts conflicts retried with new codes ($retries round(s)): 101000 bookings, each its own code"
else
	not_ok "conflicts retried: conflicts=$conflicts left=$left total=$total after $retries round(s)"
fi
psql -c "SELECT code FROM bookings ORDER BY code" >"$codes.stored"
if [ -s "$codes.stored" ] && xargs "$idgenctl" code check <"$codes.stored" >"$codes.checked" &&
   cmp -s "$codes.checked" "$codes.stored"; then
	ok "every stored code passes idgenctl code check, canonical as stored"
else
	not_ok "every stored code passes idgenctl code check"
fi
dup=$(head -n 1 "$codes.stored")
if ! psql -c "INSERT INTO bookings VALUES ('$dup')" 2>"$tmp/dup.err" &&
   grep -q "duplicate key value violates unique constraint" "$tmp/dup.err"; then
	ok "the unique constraint refuses a code taken already"
else
	not_ok "the unique constraint refuses a code taken already"
	sed 's/^/# /' "$tmp/dup.err"
fi

echo "1..$n"
exit $status

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# idgend-suite.sh MODULE: etcd, idgend and idgen.ko together, as root in a
# disposable guest (tests/vm/run-guest.sh), etcd on the guest's loopback.
# It marks the guest's clock synchronised and unsynchronised, steps it,
# and reloads the module: never run it outside a guest.
#
#  - idgend waits for a synchronised clock, claims, pushes; /dev/idgen mints
#  - the module's events: fence near renews at once, a clock step is logged
#  - idgend frozen (SIGSTOP): the module stops at the fence by itself
#  - another owner takes the number over with floor = the frozen fence,
#    above every ID the first owner minted
#  - SIGTERM frees the number at once
#  - etcd down past the fence: minting stops, an alert, and resumes after
#  - standalone mode across module reloads never reissues a millisecond
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=../idgend/etcd-lib.sh
. "$top/tests/idgend/etcd-lib.sh"
# shellcheck source=../idgend/daemon-lib.sh
. "$top/tests/idgend/daemon-lib.sh"
module=${1:?usage: idgend-suite.sh MODULE}
idgend=$top/helper/idgend/idgend
idgenctl=$top/helper/idgenctl/idgenctl
clock_sync=$top/build/idgend-test/clock_sync

if [ "${IDGEN_GUEST:-}" != 1 ]; then
	echo "idgend-suite.sh: refusing to run outside a test guest" >&2
	exit 2
fi

work=$(mktemp -d /tmp/idgend-suite.XXXXXX)
cleanup() {
	daemon_kill_all
	etcd_cleanup
}
trap cleanup EXIT

# TCG is slow: leases of seconds, not minutes.
timing=(--lease-ms 10000 --renew-ms 4000 --timeout-ms 1500 --claim-retry-ms 1000)

# A field of the module's state, through netlink.
state() {
	"$idgenctl" status --json | /usr/bin/python3 -c "
import json, sys
s = json.load(sys.stdin)
v = s
for k in '$1'.split('.'):
    v = v[k] if v is not None else None
print('none' if v is None else v)"
}

# mint N FILE: append N IDs; fails (with idgenctl's message) if it cannot.
mint() { "$idgenctl" mint -n "$1" --raw >>"$2" 2>"$work/mint.err"; }

ms_of() { echo $(($1 >> 22)); }
max_ms() { local m=0 id; while read -r id; do [ $((id >> 22)) -gt $m ] && m=$((id >> 22)); done <"$1"; echo $m; }
min_ms() { local m= id; while read -r id; do { [ -z "$m" ] || [ $((id >> 22)) -lt "$m" ]; } && m=$((id >> 22)); done <"$1"; echo "$m"; }

# The value "field" of a record, read through etcd's gateway.
record() {
	etcdctl_ get --print-value-only "/g/r0/w/$1" |
		/usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"
}

# Hold every number of region 0 but one, for "other", far ahead: the
# takeover must then be of that one number.  The region's layout (3/7/12,
# from ms 0) and the prefix's region width are recorded first, as the
# other hosts would have before their leases (a first layout record
# would otherwise start above those leases: idgend(8), LAYOUT).
fill_but() {
	/usr/bin/python3 - "$(etcd_endpoints | cut -d, -f1)" "$1" "$2" <<'EOF'
import base64, json, sys, urllib.request
url, keep, until = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = lambda s: base64.b64encode(s.encode()).decode()
ops = [{"request_put": {"key": b("/g/r0/w/%d" % w), "value": b(json.dumps(
    {"owner": "other", "valid_until_ms": until}))}} for w in range(128) if w != keep]
recorded = [{"request_put": {"key": b(k), "value": b(json.dumps(v))}} for k, v in (
    ("/g/region_bits", {"region_bits": 3}),
    ("/g/r0/layout", {"region_bits": 3, "worker_bits": 7, "seq_bits": 12,
                      "from_ms": 0}))]
for txn in (recorded, ops):	# etcd takes at most 128 operations a txn
    req = urllib.request.Request(url + "/v3/kv/txn", json.dumps({"success": txn}).encode())
    json.load(urllib.request.urlopen(req, timeout=30))
EOF
}

echo "TAP version 13"
check "insmod $(basename "$module")" insmod "$module"
check "build/idgend-test/clock_sync is there (tests/idgend/run.sh builds it)" test -x "$clock_sync"
if ! etcd_cluster guest 1; then
	not_ok "etcd on the guest's loopback"
	exit 1
fi
ok "etcd $(/usr/bin/etcd --version | sed -n 's/^etcd Version: //p') on ${ETCD_URLS[0]}"
fill_but 9 $(($(gnow) + 3600000))
check "all numbers but w9 held by another owner" test "$(record 0 owner)" = other

# --- claim, gated on a synchronised clock --------------------------------------

"$clock_sync" unsync >/dev/null
daemon_start host-a --mode etcd --endpoints "$(etcd_endpoints)" --prefix /g "${timing[@]}"
check "unsynchronised clock: idgend waits, and says why" \
	wait_log host-a 'waiting for the wall clock to be synchronised' 20
check "unsynchronised clock: nothing pushed" test "$(state lease)" = none
"$clock_sync" sync >/dev/null
check "synchronised: idgend claims w9" wait_log host-a 'lease claimed: r0/w9,' 30
# idgend writes a fence to etcd before it pushes it, and renews on its own
# schedule, so on a slow guest a renewal can fall between any two reads.
# Freeze idgend (SIGSTOP) around one read of the module and one of etcd:
# nothing can change between them, and the module must hold etcd's fence,
# unless idgend was frozen between a renewal's write and its push (a
# window of microseconds): then thaw it and look again.  The freeze lasts
# two reads, well inside the 10 s lease.
module_holds_etcd_fence() {
	local t wm w m e
	for ((t = 0; t < 5; t++)); do
		kill -STOP "${PID[host-a]}"
		# No process substitution: the guest's /dev has no /dev/fd.
		wm=$("$idgenctl" status --json | /usr/bin/python3 -c '
import json, sys
l = json.load(sys.stdin)["lease"] or {}
print(l.get("worker"), l.get("valid_until_ms"))')
		w=${wm% *}
		m=${wm#* }
		e=$(record 9 valid_until_ms)
		kill -CONT "${PID[host-a]}"
		[ "$w" = 9 ] && [ "$m" = "$e" ] && return 0
		echo "# read $t (idgend frozen): module w$w until $m, etcd $e"
		sleep 1
	done
	return 1
}
check "the module holds r0/w9 with the fence etcd holds" module_holds_etcd_fence
: >"$work/a.ids"
check "/dev/idgen mints under the lease" mint 1000 "$work/a.ids"
check "every ID carries r0/w9" test "$(while read -r id; do echo $(((id >> 12) & 1023)); done <"$work/a.ids" | sort -u)" = 9

# --- netlink events --------------------------------------------------------------

# idgend sets the module's fence-near threshold to lease - 2 renewals, but
# at least one renewal period: here max(10000 - 2 * 4000, 4000).
check "idgend set the module's fence-near threshold (4000 ms)" \
	test "$(state fence_near_ms)" = 4000
# A window over the whole lease: every mint is near.  (idgend ignores an
# event within a second of a renewal, hence more than one mint.)
"$idgenctl" config fence-near 60000 >/dev/null
near_renews() {
	local t
	for ((t = 0; t < 30; t++)); do
		mint 1 "$work/a.ids"
		sleep 0.5
		grep -A2 'nears its fence.*renewing now' "$work/host-a.log" |
			grep -q 'lease renewed' && return 0
	done
	tail -n 10 "$work/host-a.log" | sed 's/^/#   /'
	return 1
}
check "fence-near event: idgend renews at once" near_renews
"$idgenctl" config fence-near 1000 >/dev/null
/usr/bin/python3 -c 'import time; time.clock_settime(time.CLOCK_REALTIME, time.time() - 2)'
mint 1 "$work/a.ids" 2>/dev/null
check "clock-step event: logged with its size" \
	wait_log host-a 'the wall clock stepped back by (19[0-9][0-9]|20[0-9][0-9]) ms' 15
"$clock_sync" sync >/dev/null
sleep 2.5	# let the wall clock catch up with the IDs already minted

# --- frozen: the module stops at the fence by itself ------------------------------

mint 100 "$work/a.ids"
kill -STOP "${PID[host-a]}"
fence=$(state lease.valid_until_ms)
stopped=
for ((t = 0; t < 300; t++)); do
	if ! mint 50 "$work/a.ids"; then
		stopped=$(gnow)
		break
	fi
	sleep 0.1
done
check "idgend frozen: minting stops by itself" test -n "$stopped"
check "... with EKEYEXPIRED (the fence)" grep -q 'EKEYEXPIRED' "$work/mint.err"
check "... no ID at or past the fence ($fence)" test "$(max_ms "$work/a.ids")" -lt "$fence"

# --- takeover by another owner ----------------------------------------------------

daemon_start host-b --mode etcd --endpoints "$(etcd_endpoints)" --prefix /g "${timing[@]}"
if wait_log host-b 'lease claimed: r0/w9,' 40; then
	floor=$(grep -Eo 'lease claimed: r0/w9, floor ms [0-9]+' "$work/host-b.log" | grep -Eo '[0-9]+$')
	check "takeover: floor ($floor) = at least the frozen owner's fence ($fence)" \
		test "$floor" -ge "$fence"
	check "takeover: every ID the first owner minted is below it" \
		test "$(max_ms "$work/a.ids")" -lt "$floor"
	: >"$work/b.ids"
	mint 1000 "$work/b.ids"
	check "takeover: the new owner's IDs are above it" test "$(min_ms "$work/b.ids")" -gt "$floor"
	check "takeover: no ID minted twice" \
		test "$(sort "$work/a.ids" "$work/b.ids" | uniq -d | wc -l)" -eq 0
else
	not_ok "takeover: another owner claims w9"
fi
# The frozen host never comes back (the host test covers a thaw).
kill -KILL "${PID[host-a]}"
wait "${PID[host-a]}" 2>/dev/null
unset "PID[host-a]"

# --- etcd down past the fence ----------------------------------------------------

etcd_stop 0
fence=$(state lease.valid_until_ms)
for ((t = 0; t < 300; t++)); do
	mint 10 "$work/b.ids" || break
	sleep 0.1
done
check "etcd down past the fence: the module stops" grep -q 'EKEYEXPIRED' "$work/mint.err"
check "... idgend logs the fence reached as an alert" \
	wait_log host-b 'alert: the generator reached its fence' 10
from=$(log_lines host-b)
etcd_start 0
etcd_wait 0
check "etcd back: the unchanged record renews" wait_log host-b 'lease renewed' 30 "$from"
check "... and minting resumes" mint 100 "$work/b.ids"

# --- SIGTERM frees the number at once ---------------------------------------------

stop host-b
check "SIGTERM: clean exit" test $? -eq 0
last=$(grep -Eo 'lease released: r0/w9, last ms [0-9]+' "$work/host-b.log" | grep -Eo '[0-9]+$')
check "SIGTERM: the module's lease is revoked" test "$(state lease)" = none
check "SIGTERM: the record's valid_until is the last ms ($last)" \
	test -n "$last" -a "$(record 9 valid_until_ms)" = "$last"
check "SIGTERM: no ID above the last ms" test "$(max_ms "$work/b.ids")" -le "$last"
daemon_start host-c --mode etcd --endpoints "$(etcd_endpoints)" --prefix /g "${timing[@]}"
check "released: the next owner claims w9 at once, floor = the last ms" \
	wait_log host-c "lease claimed: r0/w9, floor ms $last," 20
stop host-c
etcd_cleanup

# --- standalone mode across module reloads ------------------------------------------

sa=(--mode standalone --worker 3 --state-file "$work/sa.state" --lease-ms 5000 --renew-ms 1000)
: >"$work/sa.ids"
reload() { rmmod idgen && insmod "$module"; }
rounds_ok=0
for round in clean crash; do
	# $work exists: the first start says the state is fresh.
	fresh=()
	[ "$round" = clean ] && fresh=(--fresh-state)
	daemon_start "sa-$round" "${sa[@]}" "${fresh[@]}"
	wait_log "sa-$round" 'lease (set|adopted)' 30 >/dev/null
	before=$(max_ms "$work/sa.ids")
	: >"$work/round.ids"
	mint 500 "$work/round.ids"
	if [ "$round" = clean ]; then
		stop "sa-$round"
	else
		kill -KILL "${PID[sa-$round]}"
		wait "${PID[sa-$round]}" 2>/dev/null
		unset "PID[sa-$round]"
	fi
	stored=$(sed -n 's/^valid_until_ms //p' "$work/sa.state")
	first=$(min_ms "$work/round.ids")
	[ -n "$first" ] && [ "$first" -gt "$before" ] && [ "$(max_ms "$work/round.ids")" -le "$stored" ] &&
		rounds_ok=$((rounds_ok + 1))
	echo "# standalone $round: IDs ms $first..$(max_ms "$work/round.ids"), before $before, stored $stored"
	cat "$work/round.ids" >>"$work/sa.ids"
	reload
done
check "standalone: each run's IDs lie above the last run's, below the stored fence" \
	test "$rounds_ok" -eq 2
daemon_start sa "${sa[@]}"
wait_log sa 'lease set' 30 >/dev/null
: >"$work/round.ids"
mint 500 "$work/round.ids"
check "standalone: after a crash and a reload, the floor is the stored fence" \
	grep -q "lease set: r0/w3, floor ms $stored," "$work/sa.log"
check "standalone: ... and no millisecond is reissued" \
	test "$(min_ms "$work/round.ids")" -gt "$(max_ms "$work/sa.ids")"
stop sa
check "standalone: clean stop" test $? -eq 0

check "rmmod at the end" rmmod idgen
echo "1..$n"
exit "$status"

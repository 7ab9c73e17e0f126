#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fleet-test.sh [KVER]: two guests as two ID hosts, one of them frozen
# whole while a client on this machine mints from both (issue #14).
#
# One etcd runs on this machine's loopback.  Two QEMU guests (TCG, one CPU
# each) boot KVER (default: the newest installed 6.12) with idgen.ko from
# build/KVER/kmod; each runs tests/vm/fleet-guest.sh: idgend in etcd mode
# against that etcd (10.0.2.2 from inside, QEMU's user network), under its
# own owner name, and idgen-httpd on /dev/idgen, forwarded to a free port of
# this machine's 127.0.0.1.  Then mint_soak (tests/client) mints through the
# client library from both for FLEET_SOAK_S seconds; FLEET_FREEZE_AT_S into
# it guest A is frozen whole (QEMU monitor "stop": its CPU, its clock, its
# idgend) for FLEET_FREEZE_S seconds, longer than its 10 s lease, and then
# thawed ("cont").  Checked, from mint_soak's output (fleet-soak-check.py):
#
#  - both hosts ready, under distinct worker numbers leased through etcd
#  - no call failed; every ID unique across both hosts; each host's IDs
#    strictly increasing in call order
#  - during the freeze minting went on, from B only; its worst call stayed
#    retry-sized (under 1 s on this loaded TCG machine; the latency
#    distributions before, during and after are printed)
#  - after the thaw A answers calls again, and refuses no connection as
#    past its limits (the client's tries and probes did not pile up in its
#    backlog while it was frozen)
#  - both guests stop cleanly (idgend releases its number, no kernel
#    problem on either console)
#
# What the freeze did to A's clock and lease is printed, not asserted: a
# frozen guest's clock stands still, so after the thaw it runs behind by
# the freeze, and its etcd record may have passed its valid_until in this
# machine's time (nobody else claimed the number here; the module's fence
# is what keeps IDs unique if someone had).
#
# MINT_SOAK names the soak program (default build/client-test/mint_soak,
# built by make -C tests/client).  Without tests/client in the tree and no
# MINT_SOAK, the test is skipped (a TAP SKIP, counted as skipped).
# FLEET_PER_TRY_MS is passed to mint_soak (default 100: a TCG guest answers
# in milliseconds, not the 2 ms of the library's default), and so is
# FLEET_DEADLINE_MS, a call's whole time (default 2000: room for retries
# past a frozen host; the freeze's worst call is held to 1 s).  Logs and
# mint_soak's output stay in FLEET_KEEP (a directory) if set.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=../idgend/etcd-lib.sh
. "$top/tests/idgend/etcd-lib.sh"

kver=${1:-$(tests/vm/kernels.sh --series 6.12 2>/dev/null)}
module=$top/build/$kver/kmod/idgen.ko
mint_soak=${MINT_SOAK:-$top/build/client-test/mint_soak}
soak_s=${FLEET_SOAK_S:-45}
freeze_at_s=${FLEET_FREEZE_AT_S:-10}
freeze_s=${FLEET_FREEZE_S:-14}
if ((soak_s - freeze_at_s - freeze_s < 10)); then
	echo "fleet-test.sh: FLEET_SOAK_S must leave 10 s after the freeze" >&2
	exit 2
fi
per_try_ms=${FLEET_PER_TRY_MS:-100}
deadline_ms=${FLEET_DEADLINE_MS:-2000}
boot_s=${FLEET_BOOT_S:-600}
# A must answer again before the soak ends (all the time left after the
# thaw, but for a second or two of the harness's own).
rejoin_s=$((soak_s - freeze_at_s - freeze_s - 2))
prefix=/fleet
guest_port=8080

start=$SECONDS
stamp() { printf '# %4ds %s\n' $((SECONDS - start)) "$*"; }
now_ms() { date +%s%3N; }
bail() {
	echo "1..$n"
	exit 1
}
# must NAME CMD...: a result, as check; returns CMD's status (to bail on).
must() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name" && return 1; fi
}

echo "TAP version 13"

if [ -z "${MINT_SOAK:-}" ] && [ ! -f tests/client/Makefile ]; then
	echo "ok 1 - two guests as two hosts # SKIP no tests/client in the tree, no MINT_SOAK: nothing to mint with"
	echo "1..1"
	exit 0
fi
if [ -z "${MINT_SOAK:-}" ]; then
	tap_step "build mint_soak (make -C tests/client)" make -s -C tests/client || bail
fi
must "mint_soak is there: $mint_soak" test -x "$mint_soak" || bail
[ -n "$kver" ] || { not_ok "a 6.12 kernel to boot (tests/vm/kernels.sh)" && bail; }
must "idgen.ko built for $kver (scripts/build/build-module.sh $kver)" test -f "$module" || bail
# shellcheck disable=SC2016 # $PWD is bash -c's
tap_step "build idgend, idgen-httpd and clock_sync" bash -c \
	'make -s -C helper/idgend && make -s -C helper/httpd &&
	 make -s -C tests/idgend "$PWD/build/idgend-test/clock_sync"' || bail

work=$(mktemp -d /tmp/fleet-test.XXXXXX)
declare -A GUEST_PID PORT
soak_pid=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	local p
	[ -n "$soak_pid" ] && kill -KILL "$soak_pid" 2>/dev/null
	# run-guest.sh stops its QEMU on TERM (a frozen guest too: QEMU's own
	# process is not stopped, only the guest's CPU).
	for p in "${GUEST_PID[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${GUEST_PID[@]}"; do wait "$p" 2>/dev/null; done
	etcd_cleanup
	if [ -n "${FLEET_KEEP:-}" ]; then
		mkdir -p "$FLEET_KEEP" && cp -a "$work"/. "$FLEET_KEEP"/
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# --- etcd on this machine's loopback -------------------------------------------

if ! etcd_cluster fleet 1; then
	not_ok "etcd on 127.0.0.1"
	bail
fi
etcd_port=${ETCD_URLS[0]##*:}
ok "etcd on ${ETCD_URLS[0]}, the guests' http://10.0.2.2:$etcd_port"

# --- two guests ------------------------------------------------------------------

# monitor NAME COMMAND: one command to guest NAME's QEMU monitor; prints
# what it answered.
monitor() {
	python3 - "$work/$1.mon" "$2" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
def answer():
    buf = b""
    while not buf.endswith(b"(qemu) "):
        data = s.recv(4096)
        if not data:
            break
        buf += data
    return buf.decode(errors="replace")
answer()
s.sendall(sys.argv[2].encode() + b"\n")
print(answer())
EOF
}
vm_status() { monitor "$1" "info status" | grep -o 'VM status: [a-z-]*'; }

for g in a b; do
	PORT[$g]=$(etcd_free_port)
	tests/vm/run-guest.sh --timeout 1200 --smp 1 --mem 512 \
		--hostfwd "tcp:127.0.0.1:${PORT[$g]}-:$guest_port" --monitor "$work/$g.mon" \
		"$kver" tests/vm/fleet-guest.sh "$module" "fleet-$g" \
		"http://10.0.2.2:$etcd_port" "$prefix" "$guest_port" >"$work/guest-$g.log" 2>&1 &
	GUEST_PID[$g]=$!
done
stamp "guests A and B booting ($kver), on 127.0.0.1:${PORT[a]} and :${PORT[b]}"

# http_code URL [CURL-ARGS...]: the status code, 000 when none came.
http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }
# wait_ready NAME SECS: until its /readyz is 200, or it exited.
# shellcheck disable=SC2317 # run through must
wait_ready() {
	local deadline=$((SECONDS + $2))
	while ((SECONDS < deadline)); do
		[ "$(http_code "http://127.0.0.1:${PORT[$1]}/readyz")" = 200 ] && return 0
		kill -0 "${GUEST_PID[$1]}" 2>/dev/null || {
			echo "# guest $1 exited; its console:"
			grep -av '^\[ *[0-9]' "$work/guest-$1.log" | tail -n 20 | sed 's/^/#   /'
			return 1
		}
		sleep 1
	done
	echo "# guest $1: /readyz not 200 in $2 s; its console:"
	grep -av '^\[ *[0-9]' "$work/guest-$1.log" | tail -n 20 | sed 's/^/#   /'
	return 1
}
for g in a b; do
	must "guest ${g^^}: /readyz 200 through 127.0.0.1:${PORT[$g]} (idgend leased, clock marked synchronised)" \
		wait_ready "$g" "$boot_s" || bail
done
stamp "both guests ready"

# worker_of NAME: the worker of an ID minted through it.
worker_of() {
	local id
	id=$(curl -s --max-time 5 -X POST "http://127.0.0.1:${PORT[$1]}/v1/ids:next" |
		grep -o '[0-9][0-9]*' | head -n 1)
	[ -n "$id" ] && echo $(((id >> 12) & 127))
}
# etcd_worker OWNER: the worker number whose record names OWNER.
etcd_worker() {
	etcdctl_ get --prefix "$prefix/r0/w/" | python3 -c '
import json, sys
lines = sys.stdin.read().splitlines()
for key, value in zip(lines[0::2], lines[1::2]):
    if json.loads(value).get("owner") == sys.argv[1]:
        print(key.rsplit("/", 1)[1])' "$1"
}
# valid_until WORKER: its record's valid_until_ms (epoch ms).
valid_until() {
	etcdctl_ get --print-value-only "$prefix/r0/w/$1" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["valid_until_ms"])'
}
EPOCH_MS=1767225600000
wa=$(worker_of a) wb=$(worker_of b)
ea=$(etcd_worker fleet-a) eb=$(etcd_worker fleet-b)
must "A mints as w$wa, B as w$wb: the numbers etcd records for fleet-a (w$ea) and fleet-b (w$eb), distinct" \
	test -n "$wa" -a -n "$wb" -a "$wa" = "$ea" -a "$wb" = "$eb" -a "$wa" != "$wb" || bail

# --- the soak, A frozen in the middle ---------------------------------------------

"$mint_soak" --remote "http://127.0.0.1:${PORT[a]},http://127.0.0.1:${PORT[b]}" \
	--seconds "$soak_s" --per-try-ms "$per_try_ms" --deadline-ms "$deadline_ms" --buffer 0 \
	>"$work/soak.out" 2>"$work/soak.err" &
soak_pid=$!
t0=$(now_ms)
stamp "mint_soak for ${soak_s}s (per try ${per_try_ms} ms, deadline ${deadline_ms} ms, no buffer)"
sleep "$freeze_at_s"
monitor a stop >/dev/null
t_stop=$(now_ms)
check "guest A frozen (QEMU monitor: stop)" test "$(vm_status a)" = "VM status: paused"
stamp "A frozen for ${freeze_s}s"
sleep "$freeze_s"
lapsed=$(($(now_ms) - EPOCH_MS - $(valid_until "$wa")))
t_cont=$(now_ms)
monitor a cont >/dev/null
check "guest A thawed (QEMU monitor: cont)" test "$(vm_status a)" = "VM status: running"
stamp "A thawed; its etcd record's valid_until was $lapsed ms $( ((lapsed > 0)) && echo "in the past" || echo "ahead") by this machine's clock"
ready=
while kill -0 "$soak_pid" 2>/dev/null; do
	if [ -z "$ready" ] && [ "$(http_code "http://127.0.0.1:${PORT[a]}/readyz")" = 200 ]; then
		ready=$(($(now_ms) - t_cont))
		stamp "A's /readyz 200 again, $ready ms after the thaw"
	fi
	sleep 0.2
done
wait "$soak_pid"
soak_rc=$?
soak_pid=
stamp "mint_soak exited $soak_rc"
sed 's/^/# mint_soak: /' "$work/soak.err"
check "mint_soak exited 0 (no call failed)" test "$soak_rc" = 0
check "guest A's /readyz 200 again after the thaw" test -n "$ready"
# A renewed since the thaw, with its clock behind by about the freeze.
ahead=$(($(valid_until "$wa") + EPOCH_MS - $(now_ms)))
echo "# A's etcd record, renewed since the thaw: valid_until $ahead ms from now by this machine's clock" \
	"(B's: $(($(valid_until "$wb") + EPOCH_MS - $(now_ms))) ms; leases of 10000 ms)"

tap_run "soak" python3 tests/vm/fleet-soak-check.py "$work/soak.out" \
	--worker-a "$wa" --worker-b "$wb" \
	--freeze-from-ms $((t_stop - t0)) --freeze-to-ms $((t_cont - t0)) \
	--max-freeze-latency-ms 1000 --rejoin-within-s "$rejoin_s"

# --- shutdown -----------------------------------------------------------------------

etcdctl_ put "$prefix/fleet-stop" 1 >/dev/null
for g in a b; do
	# Seconds, normally; stopped (and failed) if it takes minutes.
	for ((t = 0; t < 180; t++)); do
		kill -0 "${GUEST_PID[$g]}" 2>/dev/null || break
		sleep 1
	done
	kill -TERM "${GUEST_PID[$g]}" 2>/dev/null
	wait "${GUEST_PID[$g]}"
	rc=$?
	unset "GUEST_PID[$g]"
	if [ $rc -eq 0 ]; then
		ok "guest ${g^^}: idgen-httpd and idgend stopped cleanly, module unloaded, no kernel problem"
	else
		not_ok "guest ${g^^}: clean stop (run-guest.sh exited $rc)"
		grep -av '^\[ *[0-9]' "$work/guest-$g.log" | tail -n 25 | sed 's/^/#   /'
	fi
done
# What the hosts had to say beyond routine renewals (the freeze's traces:
# connections held while frozen, a fence reached, a lease lost).
for g in a b; do
	grep -aE '^(idgend|idgen-httpd): (warning|alert|notice|error|crit)' "$work/guest-$g.log" |
		grep -v 'lease released' | sed "s/^/# guest ${g^^}: /"
done
# The client's tries and probes while A was frozen waited in A's backlog
# for its thaw: a bounded few, not one per probe period (which A, thawed,
# refused past its max_connections_per_ip).
check "guest A refused no connection as past its limits after the thaw" \
	test -z "$(grep -a 'connections refused' "$work/guest-a.log")"
gnow=$(($(now_ms) - EPOCH_MS))
check "both numbers released in etcd (valid_until no later than now)" \
	test "$(valid_until "$wa")" -le "$gnow" -a "$(valid_until "$wb")" -le "$gnow"
stamp "done"
echo "1..$n"
exit "$status"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# httpd-suite.sh MODULE: idgen.ko, idgend (standalone) and idgen-httpd
# together, as root in a disposable guest (tests/vm/run-guest.sh), HTTP on
# the guest's loopback.  It marks the guest's clock synchronised and
# unsynchronised and loads the module: never run it outside a guest.
#
#  - /readyz 503 for both real reasons at once: no lease, and adjtimex
#    saying unsynchronised (a fresh guest has no NTP; the clock is marked
#    unsynchronised first all the same, whatever ran before)
#  - POST /v1/ids:next refused with 503 no_lease, minting nothing
#  - idgend pushes a lease, the clock is marked synchronised (adjtimex, as
#    an NTP daemon does): /readyz 200
#  - IDs over HTTP: of idgend's node, strictly increasing, decoded by
#    GET /v1/ids/{id}; the module's own ID counter (/metrics, and idgenctl)
#    moves by exactly the IDs answered
#  - /metrics: promtool check metrics accepts it, and it has every series
#    the example alerting rules ask for
#  - idgenctl lease revoke (idgend frozen, so it cannot push again):
#    /readyz 503 no_lease, minting refused; thawed, idgend pushes a new
#    lease and /readyz is 200 again
#  - gRPC (tests/httpd/grpc_cli.py, grpcio): health NOT_SERVING without a
#    lease, SERVING with it, NOT_SERVING on revoke, and a Watch open
#    through all of it sends each change; NextIds through /dev/idgen of
#    idgend's node, counted by the module; UNAVAILABLE when revoked
#  - the wall clock stepped back past the module's lead, adjtimex saying
#    synchronised: /readyz 503 clock_behind until the clock catches up;
#    stepped forward past max_step_ms: 503 clock_step_held until idgend
#    adopts the step
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=../lib/httpd.sh
. "$top/tests/lib/httpd.sh"
# shellcheck source=../idgend/daemon-lib.sh
. "$top/tests/idgend/daemon-lib.sh"
module=${1:?usage: httpd-suite.sh MODULE}
idgend=$top/helper/idgend/idgend
idgenctl=$top/helper/idgenctl/idgenctl
httpd=$top/helper/httpd/idgen-httpd
clock_sync=$top/build/idgend-test/clock_sync
alerts=$top/helper/httpd/idgen-alerts.yml

if [ "${IDGEN_GUEST:-}" != 1 ]; then
	echo "httpd-suite.sh: refusing to run outside a test guest" >&2
	exit 2
fi

work=$(mktemp -d /tmp/httpd-suite.XXXXXX)
hpid=
wpid=
cleanup() {
	[ -n "$wpid" ] && kill -KILL "$wpid" 2>/dev/null
	[ -n "$hpid" ] && kill -KILL "$hpid" 2>/dev/null
	daemon_kill_all
}
trap cleanup EXIT

# TCG is slow: tests/lib/httpd.sh's req waits 30 s.
req_timeout=30
body_of() { cat "$work/$1.body"; }
# The reasons' codes of a /readyz answer, comma-separated.
reasons() { grep -o '"code":"[a-z_]*"' "$work/$1.body" | cut -d'"' -f4 | paste -sd,; }
# A sample's value in a /metrics answer.
sample() { sed -n "s/^$2 //p" "$work/$1.body"; }
# wait_ready WANT SECS: until /readyz answers WANT.
wait_ready() {
	local t
	for ((t = 0; t < $2 * 5; t++)); do
		req ready "$url/readyz"
		[ "$(status_of ready)" = "$1" ] && return 0
		sleep 0.2
	done
	echo "# /readyz: $(status_of ready) $(body_of ready)"
	return 1
}
# The module's own count of IDs minted, through netlink.
module_ids() {
	"$idgenctl" status --json | /usr/bin/python3 -c \
		'import json, sys; print(json.load(sys.stdin)["counters"]["ids"])'
}

echo "TAP version 13"
check "insmod $(basename "$module")" insmod "$module"
check "build/idgend-test/clock_sync is there (tests/idgend/run.sh builds it)" test -x "$clock_sync"
"$clock_sync" unsync >/dev/null

# TCG is slow: a lease of seconds, and a margin below it.
"$httpd" --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --device /dev/idgen \
	--callers guest-test --ready-margin-ms 2000 >"$work/httpd.log" 2>&1 &
hpid=$!
if ! port=$(httpd_port "$work/httpd.log" "$hpid" 20); then
	not_ok "idgen-httpd --device /dev/idgen starts"
	sed 's/^/# /' "$work/httpd.log"
	echo "1..$n"
	exit 1
fi
url=http://127.0.0.1:$port
ok "idgen-httpd --device /dev/idgen starts, port $port"
for ((t = 0; t < 100; t++)); do
	gport=$(sed -n 's/.*serving gRPC .*(port \([0-9]*\)).*/\1/p' "$work/httpd.log")
	[ -n "$gport" ] && break
	sleep 0.2
done
check "... and gRPC, port ${gport:-none}" test -n "$gport"
# grpc ARGS...: tests/httpd/grpc_cli.py against it.
grpc() { /usr/bin/python3 "$top/tests/httpd/grpc_cli.py" "$work" "$gport" "$@"; }
check "... minting through /dev/idgen, not a simulation" grep -q 'minting through /dev/idgen' "$work/httpd.log"

# --- no lease, clock unsynchronised ---------------------------------------------

req ready0 "$url/readyz"
check "no lease, clock unsynchronised (adjtimex): /readyz 503 no_lease,clock_unsynchronised" \
	test "$(status_of ready0) $(reasons ready0)" = "503 no_lease,clock_unsynchronised"
req refused -X POST "$url/v1/ids:next"
check "POST /v1/ids:next without a lease: 503 no_lease with Retry-After" eval \
	'test "$(status_of refused)" = 503 && grep -q "\"code\":\"no_lease\"" "$work/refused.body" &&
	 grep -qi "^Retry-After: 1" "$work/refused.hdr"'
check "gRPC health Check without a lease: NOT_SERVING" test "$(grpc check)" = NOT_SERVING
check "gRPC NextIds without a lease: UNAVAILABLE" test "$(grpc next 1 2>&1)" = UNAVAILABLE
# A Watch from here to the revoke, its statuses a line each.
/usr/bin/python3 "$top/tests/httpd/grpc_cli.py" "$work" "$gport" watch \
	>"$work/watch" 2>"$work/watch.err" &
wpid=$!
# Python starts slowly under TCG: the lease waits for its first status.
for ((t = 0; t < 150; t++)); do
	[ -s "$work/watch" ] && break
	sleep 0.2
done
check "gRPC health Watch without a lease: NOT_SERVING first" \
	test "$(head -n 1 "$work/watch")" = NOT_SERVING

# --- idgend's lease, the clock synchronised ---------------------------------------

daemon_start sa --mode standalone --region 1 --worker 42 --state-file "$work/sa.state" \
	--fresh-state --lease-ms 10000 --renew-ms 2000
check "idgend (standalone, r1/w42) pushes a lease" wait_log sa 'lease (set|adopted)' 30
req ready1 "$url/readyz"
check "leased, clock still unsynchronised: /readyz 503 clock_unsynchronised alone" \
	test "$(status_of ready1) $(reasons ready1)" = "503 clock_unsynchronised"
"$clock_sync" sync >/dev/null
check "clock marked synchronised (adjtimex, as NTP would): /readyz 200" wait_ready 200 20
check "... {\"ready\":true,\"reasons\":[]}" test "$(body_of ready)" = '{"ready":true,"reasons":[]}'
check "gRPC health Check: SERVING" test "$(grpc check)" = SERVING

# --- minting over HTTP, counted by the module -------------------------------------

req m0 "$url/metrics"
before=$(sample m0 idgen_generator_ids_total)
ctl_before=$(module_ids)
check "/metrics's idgen_generator_ids_total is the module's counter ($before)" \
	test -n "$before" -a "$before" = "$ctl_before"
req mint -X POST -H 'Content-Type: application/json' \
	-d '{"count":500,"caller":"guest-test"}' "$url/v1/ids:next"
grep -o '"[0-9]*"' "$work/mint.body" | tr -d '"' >"$work/ids"
check "POST /v1/ids:next count 500: 200, 500 IDs" \
	test "$(status_of mint)" = 200 -a "$(wc -l <"$work/ids")" = 500
check "... strictly increasing" eval \
	'sort -n -c "$work/ids" 2>/dev/null && test -z "$(uniq -d "$work/ids")"'
check "... each of idgend's node, r1/w42" test \
	"$(while read -r id; do echo "$(((id >> 19) & 7))/$(((id >> 12) & 127))"; done <"$work/ids" | sort -u)" = 1/42
first=$(head -n 1 "$work/ids")
req decode "$url/v1/ids/$first"
check "GET /v1/ids/$first: region 1, worker 42" \
	grep -q '"region":1,"worker":42,' "$work/decode.body"
for i in 1 2 3 4 5; do
	req one$i -X POST "$url/v1/ids:next"
done
req m1 "$url/metrics"
after=$(sample m1 idgen_generator_ids_total)
check "the module's ID counter moved by exactly the 505 IDs answered ($before -> $after)" \
	test -n "$after" -a "$((after - before))" = 505
check "... idgenctl status agrees" test "$(($(module_ids) - ctl_before))" = 505
ctl_before=$(module_ids)
grpc next 300 >"$work/grpc-ids"
check "gRPC NextIds count 300 through /dev/idgen: 300 IDs, strictly increasing, above HTTP's" eval \
	'test "$(wc -l <"$work/grpc-ids")" = 300 && sort -n -c "$work/grpc-ids" 2>/dev/null &&
	 test -z "$(uniq -d "$work/grpc-ids")" &&
	 test "$(head -n 1 "$work/grpc-ids")" -gt "$(tail -n 1 "$work/ids")"'
check "... each of idgend's node, r1/w42" test \
	"$(while read -r id; do echo "$(((id >> 19) & 7))/$(((id >> 12) & 127))"; done <"$work/grpc-ids" | sort -u)" = 1/42
check "... the module's counter moved by exactly 300" test "$(($(module_ids) - ctl_before))" = 300
after=$((after + 300))
check "idgen_ids_issued_total: 500 for guest-test, 5 for other" eval \
	'grep -qx "idgen_ids_issued_total{caller=\"guest-test\"} 500" "$work/m1.body" &&
	 grep -qx "idgen_ids_issued_total{caller=\"other\"} 5" "$work/m1.body"'
check "idgen_lease_in_force 1, idgen_clock_synced 1, idgen_ready 1" eval \
	'test "$(sample m1 idgen_lease_in_force) $(sample m1 idgen_clock_synced) $(sample m1 idgen_ready)" = "1 1 1"'
check "promtool check metrics accepts the module-backed /metrics" \
	sh -c "promtool check metrics <'$work/m1.body'"
# The idgen_tls_* series exist only with TLS on, which this guest's service
# is not: tests/httpd/tls_live.sh asks for those.
missing=
for name in $(grep -o 'idgen_[a-z_]*' "$alerts" | grep -v '^idgen_tls_' | sort -u); do
	grep -q "^${name}[{ ]" "$work/m1.body" || missing="$missing $name"
done
check "every series the alerting rules ask for is there but TLS's${missing:+ (missing:$missing)}" test -z "$missing"

# --- the lease revoked -------------------------------------------------------------

# Frozen, idgend cannot push the lease again before /readyz is asked.
kill -STOP "${PID[sa]}"
check "idgenctl lease revoke" sh -c "'$idgenctl' lease revoke >/dev/null"
req ready2 "$url/readyz"
check "revoked: /readyz 503 no_lease" test "$(status_of ready2) $(reasons ready2)" = "503 no_lease"
req revoked -X POST "$url/v1/ids:next"
check "revoked: POST /v1/ids:next 503 no_lease" eval \
	'test "$(status_of revoked)" = 503 && grep -q "\"code\":\"no_lease\"" "$work/revoked.body"'
check "revoked: gRPC health Check NOT_SERVING" test "$(grpc check)" = NOT_SERVING
check "revoked: gRPC NextIds UNAVAILABLE" test "$(grpc next 1 2>&1)" = UNAVAILABLE
# Watch looks every 250 ms: its NOT_SERVING is there within seconds.
for ((t = 0; t < 50; t++)); do
	[ "$(tail -n 1 "$work/watch")" = NOT_SERVING ] && [ "$(wc -l <"$work/watch")" -ge 3 ] && break
	sleep 0.2
done
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
wpid=
watched=$(uniq "$work/watch" | paste -sd,)
if [ "$watched" = NOT_SERVING,SERVING,NOT_SERVING ]; then
	ok "gRPC health Watch, open throughout: NOT_SERVING, SERVING, NOT_SERVING"
else
	not_ok "gRPC health Watch, open throughout: NOT_SERVING, SERVING, NOT_SERVING ($watched)"
	sed 's/^/# /' "$work/watch.err"
fi
req m2 "$url/metrics"
check "revoked: idgen_lease_in_force 0, idgen_ready 0, the module's counter unmoved" \
	test "$(sample m2 idgen_lease_in_force) $(sample m2 idgen_ready) $(sample m2 idgen_generator_ids_total)" = "0 0 $after"
kill -CONT "${PID[sa]}"
check "idgend thawed pushes a lease again: /readyz 200" wait_ready 200 30
req again -X POST "$url/v1/ids:next"
check "... and minting resumes, above every ID before" \
	test "$(status_of again)" = 200 -a "$(grep -o '[0-9][0-9]*' "$work/again.body" | head -n 1)" -gt "$(tail -n 1 "$work/ids")"

# --- the generator's clock: out of rotation while it refuses -----------------------

# wait_reason CODE SECS: until /readyz answers 503 with CODE among its reasons.
wait_reason() {
	local t
	for ((t = 0; t < $2 * 5; t++)); do
		req ready "$url/readyz"
		[ "$(status_of ready)" = 503 ] && case ",$(reasons ready)," in *",$1,"*) return 0 ;; esac
		sleep 0.2
	done
	echo "# /readyz: $(status_of ready) $(body_of ready)"
	return 1
}
# step_clock SECONDS: step the wall clock (clock_settime), then say it is
# synchronised again, as an NTP daemon that stepped it would: adjtimex
# alone then sees nothing wrong.
step_clock() {
	date -s "@$(($(date +%s) + $1)).$(date +%N)" >/dev/null && "$clock_sync" sync >/dev/null
}
# Back 5 s, past the module's lead of 1 s: the next ID is 5 s ahead.  An
# ID minted just before, so that however slowly the guest runs, the lead
# left is the step's, not what remains of it after the last ID aged.
req before_step -X POST "$url/v1/ids:next"
step_clock -5
check "wall clock stepped back 5 s (synchronised again): /readyz 503 clock_behind" \
	wait_reason clock_behind 2
req behind -X POST "$url/v1/ids:next"
check "... and the generator does refuse: POST /v1/ids:next 503 clock_behind" eval \
	'test "$(status_of behind)" = 503 && grep -q "\"code\":\"clock_behind\"" "$work/behind.body"'
check "the wall clock caught up: /readyz 200" wait_ready 200 30
# Forward 5 s, past max_step_ms: held until idgend adopts it, which it
# does only while adjtimex says synchronised.
date -s "@$(($(date +%s) + 5)).$(date +%N)" >/dev/null
check "wall clock stepped forward 5 s: /readyz 503 clock_step_held" wait_reason clock_step_held 10
"$clock_sync" sync >/dev/null
check "synchronised again, idgend adopts the step: /readyz 200" wait_ready 200 30
req adopted -X POST "$url/v1/ids:next"
check "... and minting goes on, above every ID before" \
	test "$(status_of adopted)" = 200 -a "$(grep -o '[0-9][0-9]*' "$work/adopted.body" | head -n 1)" -gt "$(grep -o '[0-9][0-9]*' "$work/again.body" | head -n 1)"

kill -TERM "$hpid"
wait "$hpid"
check "idgen-httpd: SIGTERM, exit 0" test $? = 0
hpid=
stop sa
check "idgend: clean stop" test $? -eq 0
check "rmmod at the end" rmmod idgen
echo "1..$n"
exit "$status"

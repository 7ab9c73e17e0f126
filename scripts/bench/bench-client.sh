#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-client.sh: libidgen-client's benchmark, on this machine (no guest),
# against idgen-httpd --device sim hosts pinned to one core, the client
# (bench/client_bench, one calling thread) to the other:
#   (a) calls/s and p50/p99/p999 of idgen_client_next() as fast as it goes,
#       without the buffer and with it (32), against one host and two
#   (b) at 1,000 calls/s on a fixed schedule, with the buffer: the share
#       answered from memory and the latency (goal: >= 90% and p99 <= 5 us)
#   (c) at 1,000 calls/s, two hosts, one SIGSTOPped a second into the run
#       and frozen to its end: the tail (goal: p99 <= 3 ms, one 2 ms
#       timeout plus one fast try), without the buffer and with it
# Writes the section "## Client: libidgen-client on the host" of
# Documentation/bench/results.md (in place of the one there).  make bench runs
# it after bench-http.sh; alone: make bench-client.  Figures are printed, never
# judged by CI.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

[ "${IDGEN_SKIP_DEPS:-0}" = 1 ] || scripts/deps.sh
make -s -C helper/httpd
make -s -C bench client_bench

seconds=${IDGEN_BENCH_CLIENT_SECONDS:-10}
out=Documentation/bench
work=$top/build/bench-client
rm -rf "$work"
mkdir -p "$work" "$out"

if [ "$(nproc)" -ge 2 ]; then
	client_cpu=0 server_cpu=1
else
	client_cpu=0 server_cpu=0
fi

declare -a pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -CONT "$p" 2>/dev/null || true
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}
trap cleanup EXIT

# host W: an idgen-httpd --device sim:W on the server core; sets url.
declare -A hpid
url=
host() {
	local w=$1 log=$work/host$1.log t port
	taskset -c "$server_cpu" helper/httpd/idgen-httpd --listen 127.0.0.1:0 --device "sim:$w" \
		--clock-check no --threads 1 >"$log" 2>&1 &
	hpid[$w]=$!
	pids+=($!)
	for ((t = 0; t < 100; t++)); do
		port=$(sed -n 's/.*listening on .* (port \([0-9]*\)).*/\1/p' "$log")
		[ -n "$port" ] && { url=http://127.0.0.1:$port; return 0; }
		sleep 0.1
	done
	cat "$log" >&2
	return 1
}
host 1
u1=$url
host 2
u2=$url

uptime_start=$(uptime)
# run NAME ARGS...: one client_bench run; its line into $work/NAME.
run() {
	local name=$1
	shift
	taskset -c "$client_cpu" bench/client_bench --seconds "$seconds" "$@" >"$work/$name"
	echo "   $name: $(cat "$work/$name")"
}
field() { sed -n "s/.*\\b$2=\\([0-9.]*\\).*/\\1/p" "$work/$1"; }

echo "== (a) as fast as it goes, one calling thread, $seconds s each"
run off-1 --remote "$u1" --buffer 0
run off-2 --remote "$u1,$u2" --buffer 0
run on-1 --remote "$u1" --buffer 32
run on-2 --remote "$u1,$u2" --buffer 32
echo "== (b) 1000 calls/s with the buffer"
run paced-on-1 --remote "$u1" --buffer 32 --rate 1000
run paced-on-2 --remote "$u1,$u2" --buffer 32 --rate 1000
run paced-off-2 --remote "$u1,$u2" --buffer 0 --rate 1000
echo "== (c) 1000 calls/s, two hosts, host 2 frozen 1 s into the run"
# frozen NAME ARGS...: run with host 2 SIGSTOPped after the warm-up and
# a second of calls, and thawed after.
frozen() {
	local name=$1
	shift
	( sleep 1.5; kill -STOP "${hpid[2]}" ) &
	run "$name" "$@"
	wait $! 2>/dev/null || true
	kill -CONT "${hpid[2]}"
	sleep 1
}
frozen frozen-off --remote "$u1,$u2" --buffer 0 --rate 1000
frozen frozen-on --remote "$u1,$u2" --buffer 32 --rate 1000
uptime_end=$(uptime)

goal() {	# goal MEASURED OP TARGET
	if awk -v m="$1" -v t="$3" -v op="$2" 'BEGIN { exit !(op == ">=" ? m >= t : m <= t) }'; then
		echo met
	else
		echo "**missed**"
	fi
}
load1() { sed 's/.*load average: \([0-9.]*\),.*/\1/' <<<"$1"; }
row() {	# row NAME DESCRIPTION
	echo "| $2 | $(field "$1" calls_per_s) | $(field "$1" p50_us) | $(field "$1" p99_us) | $(field "$1" p999_us) | $(field "$1" max_us) | $(field "$1" hit_pct)% | $(field "$1" timeouts) | $(field "$1" errors) |"
}

section=$work/section.md
{
	echo "## Client: libidgen-client on the host"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ), on the host (no guest): Linux $(uname -r), $(nproc) cores"
	echo "- idgen-httpd --device sim:1 and sim:2 (the simulated generator), --threads 1,"
	echo "  both pinned to core $server_cpu; bench/client_bench (one thread calling"
	echo "  idgen_client_next(), the client's event-loop thread beside it) pinned to core"
	echo "  $client_cpu; loopback, keep-alive; 2 ms per try, 100 ms deadline; $seconds s per run"
	echo "  after 0.5 s of warm-up (a closed-loop run stops early at 2^20 calls); latency"
	echo "  is each call's own"
	echo "- **the machine was shared**: load average (1 min) $(load1 "$uptime_start") at the start,"
	echo "  $(load1 "$uptime_end") at the end"
	echo
	echo "| run | calls/s | p50 (us) | p99 (us) | p999 (us) | max (us) | from the buffer | per-try timeouts | failed calls |"
	echo "|---|---|---|---|---|---|---|---|---|"
	row off-1 "(a) no buffer, one host, closed loop"
	row off-2 "(a) no buffer, two hosts, closed loop"
	row on-1 "(a) buffer 32, one host, closed loop"
	row on-2 "(a) buffer 32, two hosts, closed loop"
	row paced-on-1 "(b) buffer 32, one host, 1000 calls/s"
	row paced-on-2 "(b) buffer 32, two hosts, 1000 calls/s"
	row paced-off-2 "(b) no buffer, two hosts, 1000 calls/s"
	row frozen-off "(c) no buffer, two hosts, one frozen, 1000 calls/s"
	row frozen-on "(c) buffer 32, two hosts, one frozen, 1000 calls/s"
	echo
	echo "Without the buffer each call is one POST /v1/ids:next over loopback,"
	echo "through the client's event loop; a try past 2 ms (the shared machine's"
	echo "stalls) is tried again on the other host. With the buffer a call takes"
	echo "an ID from memory, and the loop refills it in the background. In (c)"
	echo "host 2 is frozen (SIGSTOP) a second into the run: the calls then on it"
	echo "are answered by host 1 after the 2 ms timeout, and host 2 is skipped"
	echo "until its /readyz answers again."
	echo
	echo "### Goals"
	echo
	echo "| goal | measured | target | |"
	echo "|---|---|---|---|"
	echo "| (b) one host: calls answered from memory at 1000 calls/s | $(field paced-on-1 hit_pct)% | >= 90% | $(goal "$(field paced-on-1 hit_pct)" '>=' 90) |"
	echo "| (b) one host: p99 with the buffer at 1000 calls/s | $(field paced-on-1 p99_us) us | <= 5 us | $(goal "$(field paced-on-1 p99_us)" '<=' 5) |"
	echo "| (b) two hosts: calls answered from memory | $(field paced-on-2 hit_pct)% | >= 90% | $(goal "$(field paced-on-2 hit_pct)" '>=' 90) |"
	echo "| (b) two hosts: p99 with the buffer | $(field paced-on-2 p99_us) us | <= 5 us | $(goal "$(field paced-on-2 p99_us)" '<=' 5) |"
	echo "| (c) p99 with a frozen host, no buffer | $(field frozen-off p99_us) us | <= 3000 us | $(goal "$(field frozen-off p99_us)" '<=' 3000) |"
	echo "| (c) p99 with a frozen host, buffer 32 | $(field frozen-on p99_us) us | <= 3000 us | $(goal "$(field frozen-on p99_us)" '<=' 3000) |"
} >"$section"

results=$out/results.md
scripts/bench/results-section.sh "$results" "## Client: libidgen-client on the host" "$section"
echo "wrote the client section of $results"
cat "$section"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-grpc.sh: idgen-httpd's gRPC benchmark, on this machine (not in a
# guest), against --device sim, with h2load (nghttp2-client): the load on
# one core, the servers on the other (taskset), in one run:
#   (a) peak calls/s of NextIds count=1 over h2c, one connection with 32
#       streams and 32 connections with one each, against nginx answering
#       a fixed body of the same size from memory over h2c (listen ...
#       http2, one worker, return 200, the trailer grpc-status: 0), and
#       beside it idgen-httpd's
#       HTTP/1.1 JSON (wrk, 32 connections) on the same core: the median
#       of 5 alternating rounds
#   (b) latency at half (a)'s 32-connection peak of idgen-httpd, paced
#       by h2load's --rps, from h2load's per-call log (measured from each
#       call's start, which pacing keeps near its due time while the
#       server keeps up), idgen-httpd and nginx at the same rate
#   (c) IDs/s through NextIds count=10000 over 4 connections against the
#       node's ceiling, 4096 IDs per ms (the simulation's too)
# Writes the section "## gRPC: idgen-httpd on the host" of
# Documentation/bench/results.md (in place of the one there).  make bench runs it
# after bench-http; alone: make bench-grpc.  Run as root (it installs
# what it needs through scripts/deps.sh).
# shellcheck disable=SC2154 # NAME_port and NAME_pid: bench-lib.sh's start_httpd and start_nginx
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

[ "${IDGEN_SKIP_DEPS:-0}" = 1 ] || scripts/deps.sh
make -s -C helper/httpd

seconds=${IDGEN_BENCH_GRPC_SECONDS:-5}
rounds=5
out=Documentation/bench
work=$top/build/bench-grpc
rm -rf "$work"
mkdir -p "$work" "$out"

conns=32
# shellcheck source-path=SCRIPTDIR source=bench-lib.sh
. "$top/scripts/bench/bench-lib.sh"

httpd_pid="" nginx_pid=""
cleanup() {
	[ -z "$httpd_pid" ] || kill "$httpd_pid" 2>/dev/null || true
	[ -z "$nginx_pid" ] || kill "$nginx_pid" 2>/dev/null || true
	wait 2>/dev/null || true
}
trap cleanup EXIT
uptime_start=$(uptime)

# ---- the servers ------------------------------------------------------------
start_httpd httpd --grpc-listen 127.0.0.1:0 --device sim:47 --clock-check no
grpc_port=$httpd_grpc_port http_port=$httpd_port
grpc_url=http://127.0.0.1:$grpc_port/idgen.v1.IdGen/NextIds
http_url=http://127.0.0.1:$http_port/v1/ids:next

# NextIdsRequest{count: 1}, and {count: 10000}, each after gRPC's prefix.
printf '\x00\x00\x00\x00\x02\x08\x01' >"$work/count1.bin"
printf '\x00\x00\x00\x00\x03\x08\x90\x4e' >"$work/count10000.bin"
# nginx's answer: a fixed body from memory (return), the size of
# idgen-httpd's (a prefixed NextIdsResponse of one ID, 17 bytes): no file
# read, no redirect, the least nginx can do for an HTTP/2 call.
nginx_body=0123456789abcdefg

start_nginx nginx http2 "" "		location / {
			default_type application/grpc;
			add_trailer grpc-status 0;
			return 200 '$nginx_body';
		}" --http2-prior-knowledge
nginx_url=http://127.0.0.1:$nginx_port/idgen.v1.IdGen/NextIds

# wrk_run's req/s alone.
json_run() { wrk_run "$1" "$httpd_pid" "$http_url" "$work/count1.lua" "$seconds" | cut -d' ' -f1; }
post_lua "$work/count1.lua" '{"count":1}'

# The answers are gRPC's: h2load's checks see 200s only, so one look.
curl -s --http2-prior-knowledge -H 'content-type: application/grpc' \
	--data-binary @"$work/count1.bin" -o "$work/one.bin" "$grpc_url"
[ "$(stat -c %s "$work/one.bin")" = "${#nginx_body}" ] ||
	{ echo "bench-grpc.sh: idgen-httpd's answer and nginx's differ in size" >&2; exit 1; }

# ---- (a) peak ---------------------------------------------------------------------
h2load_run warm "$grpc_url" "$work/count1.bin" -c1 -m32 -D 2 >/dev/null
h2load_run warm "$nginx_url" "$work/count1.bin" -c1 -m32 -D 2 >/dev/null
mux_h=() mux_n=() conn_h=() conn_n=() json_h=()
for ((r = 0; r < rounds; r++)); do
	mux_h+=("$(h2load_run "mux-h-$r" "$grpc_url" "$work/count1.bin" -c1 -m32 -D "$seconds")")
	mux_n+=("$(h2load_run "mux-n-$r" "$nginx_url" "$work/count1.bin" -c1 -m32 -D "$seconds")")
	conn_h+=("$(h2load_run "conn-h-$r" "$grpc_url" "$work/count1.bin" -c32 -m1 -D "$seconds")")
	conn_n+=("$(h2load_run "conn-n-$r" "$nginx_url" "$work/count1.bin" -c32 -m1 -D "$seconds")")
	json_h+=("$(json_run "json-$r")")
done
mux_hm=$(median "${mux_h[@]}") mux_nm=$(median "${mux_n[@]}")
conn_hm=$(median "${conn_h[@]}") conn_nm=$(median "${conn_n[@]}")
json_m=$(median "${json_h[@]}")

# ---- (b) latency at half the peak ---------------------------------------------------
# Half the 32-connection peak, over 32 connections, each paced at rate/32
# calls/s with streams enough that the pacing never waits for an answer.
rate=$((conn_hm / 2))
per_conn=$(((rate + 31) / 32))
rate=$((per_conn * 32))
p_of() {	# p_of LOG PERCENT: the latency (us) of that percentile
	awk '$2 == 200 { print $3 }' "$1" | sort -n |
		awk -v p="$2" '{ v[NR] = $1 } END { i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i] }'
}
for who in h n; do
	url=$grpc_url
	[ $who = n ] && url=$nginx_url
	h2load_run "paced-$who" "$url" "$work/count1.bin" -c32 -m16 --rps="$per_conn" \
		-D "$((seconds * 2))" --log-file="$work/paced-$who.log" >/dev/null
done
h_p50=$(p_of "$work/paced-h.log" 50) h_p99=$(p_of "$work/paced-h.log" 99)
h_p999=$(p_of "$work/paced-h.log" 99.9)
n_p50=$(p_of "$work/paced-n.log" 50) n_p99=$(p_of "$work/paced-n.log" 99)
n_p999=$(p_of "$work/paced-n.log" 99.9)

# ---- (c) IDs/s at count=10000 --------------------------------------------------------
ids_total() { curl -s "http://127.0.0.1:$http_port/metrics" | sed -n 's/^idgen_generator_ids_total //p'; }
ceiling=4096000
before=$(ids_total)
start=$(date +%s%N)
h2load_run bulk "$grpc_url" "$work/count10000.bin" -c4 -m1 -D "$((seconds * 2))" >/dev/null
end=$(date +%s%N)
c_ids=$(awk -v a="$before" -v b="$(ids_total)" -v ns=$((end - start)) \
	'BEGIN { printf "%.0f", (b - a) / (ns / 1e9) }')
c_ratio=$(ratio "$c_ids" "$ceiling")

# ---- the section --------------------------------------------------------------------
mux_ratio=$(ratio "$mux_hm" "$mux_nm")
conn_ratio=$(ratio "$conn_hm" "$conn_nm")
section=$work/section.md
{
	echo "## gRPC: idgen-httpd on the host"
	echo
	echo "$(date -u +%Y-%m-%d), $(uname -r), $(nproc) cores ($(sed -n 's/^model name\t: //p' /proc/cpuinfo | head -n 1)),"
	echo "h2load $(h2load --version | sed -n 's/^h2load nghttp2\/\([0-9.]*\).*/\1/p'), nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), load before: ${uptime_start##*load average: }."
	echo "scripts/bench/bench-grpc.sh: idgen-httpd --device sim:47 and nginx (one worker, h2c)"
	echo "on core $server_cpu, h2load and wrk on core $load_cpu; NextIds count=1; medians of $rounds"
	echo "alternating rounds of $seconds s."
	echo
	echo "### (a) peak calls/s"
	echo
	echo "| | idgen-httpd gRPC | nginx h2c, same body | ratio | idgen-httpd HTTP/1.1 JSON (wrk, 32 conns) |"
	echo "|---|---|---|---|---|"
	echo "| 1 connection, 32 streams | $mux_hm | $mux_nm | $mux_ratio | |"
	echo "| 32 connections, 1 stream each | $conn_hm | $conn_nm | $conn_ratio | $json_m |"
	echo
	echo "Rounds, idgen-httpd / nginx: 1x32 ${mux_h[*]} / ${mux_n[*]}; 32x1 ${conn_h[*]} / ${conn_n[*]};"
	echo "HTTP/1.1 JSON ${json_h[*]}."
	echo
	echo "### (b) latency at half the peak, $rate calls/s (32 connections, paced)"
	echo
	echo "| | p50 (us) | p99 (us) | p99.9 (us) |"
	echo "|---|---|---|---|"
	echo "| idgen-httpd | $h_p50 | $h_p99 | $h_p999 |"
	echo "| nginx | $n_p50 | $n_p99 | $n_p999 |"
	echo
	echo "### (c) IDs/s through NextIds count=10000 (4 connections)"
	echo
	echo "$c_ids IDs/s, $c_ratio of the node's ceiling of $ceiling (the simulation's, on the host)."
	echo
	echo "### Goals"
	echo
	echo "| goal | measured | target | |"
	echo "|---|---|---|---|"
	echo "| (a) 1x32 calls/s, idgen-httpd / nginx | $mux_ratio | >= 0.80 | $(goal "$mux_ratio" '>=' 0.80) |"
	echo "| (a) 32x1 calls/s, idgen-httpd / nginx | $conn_ratio | >= 0.80 | $(goal "$conn_ratio" '>=' 0.80) |"
	echo "| (b) p99 at half the peak | $h_p99 us | <= 1000 us | $(goal "$h_p99" '<=' 1000) |"
	echo "| (c) IDs/s at count=10000 / the ceiling (host, simulation) | $c_ratio | >= 0.95 | $(goal "$c_ratio" '>=' 0.95) |"
	echo
	echo "(b) is timed by h2load from each call's start; paced by --rps with 16 streams a"
	echo "connection, a call starts on time unless 16 before it on its connection are"
	echo "still unanswered. (c)'s goal is the guest's, through /dev/idgen; measured here"
	echo "against the simulation, whose ceiling is the module's."
} >"$section"

results=$out/results.md
scripts/bench/results-section.sh "$results" "## gRPC: idgen-httpd on the host" "$section"
echo "wrote the gRPC section of $results"
cat "$section"

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

if [ "$(nproc)" -ge 2 ]; then
	load_cpu=0 server_cpu=1
else
	load_cpu=0 server_cpu=0
fi
load() { taskset -c "$load_cpu" "$@"; }

httpd_pid="" nginx_pid=""
cleanup() {
	[ -z "$httpd_pid" ] || kill "$httpd_pid" 2>/dev/null || true
	[ -z "$nginx_pid" ] || kill "$nginx_pid" 2>/dev/null || true
	wait 2>/dev/null || true
}
trap cleanup EXIT
uptime_start=$(uptime)

# ---- the servers ------------------------------------------------------------
: >"$work/httpd.log"
taskset -c "$server_cpu" helper/httpd/idgen-httpd --listen 127.0.0.1:0 \
	--grpc-listen 127.0.0.1:0 --device sim:47 --clock-check no >"$work/httpd.log" 2>&1 &
httpd_pid=$!
for ((t = 0; t < 100; t++)); do
	grpc_port=$(sed -n 's/.*serving gRPC .*(port \([0-9]*\)).*/\1/p' "$work/httpd.log")
	http_port=$(sed -n 's/.*listening on .* (port \([0-9]*\)).*/\1/p' "$work/httpd.log")
	[ -n "$grpc_port" ] && [ -n "$http_port" ] && break
	sleep 0.1
done
[ -n "$grpc_port" ] || { cat "$work/httpd.log" >&2; exit 1; }
grpc_url=http://127.0.0.1:$grpc_port/idgen.v1.IdGen/NextIds
http_url=http://127.0.0.1:$http_port/v1/ids:next

# NextIdsRequest{count: 1}, and {count: 10000}, each after gRPC's prefix.
printf '\x00\x00\x00\x00\x02\x08\x01' >"$work/count1.bin"
printf '\x00\x00\x00\x00\x03\x08\x90\x4e' >"$work/count10000.bin"
# nginx's answer: a fixed body from memory (return), the size of
# idgen-httpd's (a prefixed NextIdsResponse of one ID, 17 bytes): no file
# read, no redirect, the least nginx can do for an HTTP/2 call.
nginx_body=0123456789abcdefg

for ((try = 0; try < 10; try++)); do
	nginx_port=$((20000 + RANDOM % 40000))
	cat >"$work/nginx.conf" <<NGINX
user $(id -un) $(id -gn);
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $work/body;
	proxy_temp_path $work/proxy;
	fastcgi_temp_path $work/fastcgi;
	uwsgi_temp_path $work/uwsgi;
	scgi_temp_path $work/scgi;
	keepalive_requests 100000000;
	server {
		listen 127.0.0.1:$nginx_port http2;
		location / {
			default_type application/grpc;
			add_trailer grpc-status 0;
			return 200 '$nginx_body';
		}
	}
}
NGINX
	taskset -c "$server_cpu" nginx -c "$work/nginx.conf" -p "$work" -g 'daemon off;' \
		2>>"$work/nginx.err" &
	nginx_pid=$!
	for ((t = 0; t < 50; t++)); do
		curl -s --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$nginx_port/" && break 2
		kill -0 "$nginx_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$nginx_pid" 2>/dev/null || true
	wait "$nginx_pid" 2>/dev/null || true
	nginx_pid=
done
[ -n "$nginx_pid" ] || { cat "$work/nginx.err" >&2; exit 1; }
nginx_url=http://127.0.0.1:$nginx_port/idgen.v1.IdGen/NextIds

# h2load_run NAME URL BODY ARGS...: one run; prints its calls/s, and fails
# unless every call was answered 200.
h2load_run() {
	local name=$1 url=$2 body=$3 rps
	shift 3
	load h2load -d "$body" -H 'content-type: application/grpc' -H 'te: trailers' \
		"$@" "$url" >"$work/$name.h2load" 2>&1 || true
	rps=$(sed -n 's/^finished in [0-9.]*m\?s, \([0-9.]*\) req\/s.*/\1/p' "$work/$name.h2load")
	grep -q '^requests: .* 0 failed, 0 errored' "$work/$name.h2load" &&
		grep -q '^status codes: [0-9]* 2xx, 0 3xx, 0 4xx, 0 5xx' "$work/$name.h2load" &&
		[ -n "$rps" ] || { echo "bench-grpc.sh: $name:" >&2; cat "$work/$name.h2load" >&2; exit 1; }
	printf '%.0f\n' "$rps"
}
wrk_run() {
	local secs
	load wrk -t1 -c32 -d"${seconds}s" -s "$work/count1.lua" "$http_url" >"$work/$1.wrk"
	secs=$(sed -n 's/^Requests\/sec: *\([0-9.]*\)/\1/p' "$work/$1.wrk")
	[ -n "$secs" ] || { cat "$work/$1.wrk" >&2; exit 1; }
	printf '%.0f\n' "$secs"
}
printf 'wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n' \
	"'{\"count\":1}'" >"$work/count1.lua"
median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
goal() {	# goal MEASURED OP TARGET
	if awk -v m="$1" -v t="$3" "BEGIN { exit !(m $2 t) }"; then echo met; else echo missed; fi
}

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
	json_h+=("$(wrk_run "json-$r")")
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

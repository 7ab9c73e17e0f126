#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-tls.sh: idgen-httpd over TLS, on this machine (not in a guest),
# against --device sim, beside nginx over TLS: the same certificate (P-256
# ECDSA, tests/httpd/tls-certs.sh's), the TLS version, suite and group
# each negotiates checked to be the same, neither resuming a session; the
# servers pinned to one core, the load (wrk, h2load, bench/client_bench) to
# the other (bench-lib.sh), in one run:
#   (a) HTTPS keep-alive requests/s, count=1 (wrk, 32 connections), against
#       nginx answering a fixed JSON body of the same size over HTTPS
#   (b) gRPC NextIds count=1 calls/s over TLS (h2load, ALPN h2, 32
#       connections of one stream each), against nginx answering a fixed
#       body of the same size over HTTP/2 and TLS
#   (c) new TLS connections/s, each a full handshake and one count=1
#       request (wrk with Connection: close: the server closes, wrk
#       connects again), against nginx the same
#   (d) libidgen-client's buffered take (bench/client_bench --buffer 32,
#       one host, closed loop) from an https:// host against the same from
#       an http:// one, and beside it each unbuffered call's
# (a)-(c): the median of 5 alternating rounds.  Writes the section "## TLS:
# idgen-httpd on the host" of Documentation/bench/results.md (in place of
# the one there).  make bench runs it after bench-grpc; alone: make
# bench-tls.  Run as root (it installs what it needs through
# scripts/deps.sh).
# shellcheck disable=SC2154 # NAME_port and NAME_pid: bench-lib.sh's start_httpd and start_nginx
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

[ "${IDGEN_SKIP_DEPS:-0}" = 1 ] || scripts/deps.sh
make -s -C helper/httpd
make -s -C bench client_bench

seconds=${IDGEN_BENCH_TLS_SECONDS:-3}
rounds=5
conns=32
out=Documentation/bench
work=$top/build/bench-tls
rm -rf "$work"
mkdir -p "$work" "$out"
# shellcheck source-path=SCRIPTDIR source=bench-lib.sh
. "$top/scripts/bench/bench-lib.sh"

tls_pid="" plain_pid="" nginx_pid=""
cleanup() {
	[ -z "$tls_pid" ] || kill "$tls_pid" 2>/dev/null || true
	[ -z "$plain_pid" ] || kill "$plain_pid" 2>/dev/null || true
	[ -z "$nginx_pid" ] || kill "$nginx_pid" 2>/dev/null || true
	wait 2>/dev/null || true
}
trap cleanup EXIT
uptime_start=$(uptime)

# ---- the servers --------------------------------------------------------------
certs=$work/certs
tests/httpd/tls-certs.sh "$certs"
ca=$certs/ca.pem
start_httpd tls --device sim:71 --clock-check no --threads 1 --max-connections-per-ip 1024 \
	--grpc-listen 127.0.0.1:0 --tls-cert "$certs/server.pem" --tls-key "$certs/server.key"
# The client's http:// figure: the same server without TLS.
start_httpd plain --device sim:72 --clock-check no --threads 1
https_url=https://127.0.0.1:$tls_port/v1/ids:next
grpc_url=https://127.0.0.1:$tls_grpc_port/idgen.v1.IdGen/NextIds

# nginx's fixed answers, the sizes of idgen-httpd's: its JSON for count=1,
# and a prefixed NextIdsResponse of one ID (17 bytes).  Its TLS is held to
# what idgen-httpd's is (helper/httpd/tls.h's TLS_PRIORITY): TLS 1.2 and
# 1.3, ECDHE and AEAD only, the server's order of suites and groups, no
# tickets and no session cache, so that every new connection is a full
# handshake for both.
body=$(curl -s --cacert "$ca" -X POST -H 'Content-Type: application/json' -d '{"count":1}' "$https_url")
[[ $body =~ ^\{\"ids\":\[\"[0-9]+\"\],\"layout_version\":1\}$ ]] ||
	{ echo "bench-tls.sh: idgen-httpd answered '$body'" >&2; exit 1; }
grpc_body=0123456789abcdefg
start_nginx nginx "ssl http2" "		ssl_certificate $certs/server.pem;
		ssl_certificate_key $certs/server.key;
		ssl_protocols TLSv1.2 TLSv1.3;
		ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305;
		ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256;
		ssl_prefer_server_ciphers on;
		ssl_ecdh_curve X25519:prime256v1:secp384r1;
		ssl_session_cache off;
		ssl_session_tickets off;" "		location = /v1/ids:next {
			default_type application/json;
			add_header Cache-Control no-store;
			return 200 '$body';
		}
		location = /idgen.v1.IdGen/NextIds {
			default_type application/grpc;
			add_trailer grpc-status 0;
			return 200 '$grpc_body';
		}" --cacert "$ca"
nginx_url=https://127.0.0.1:$nginx_port/v1/ids:next
nginx_grpc_url=https://127.0.0.1:$nginx_port/idgen.v1.IdGen/NextIds

nginx_body=$(curl -s --cacert "$ca" -X POST -H 'Content-Type: application/json' -d '{"count":1}' "$nginx_url")
[ "${#nginx_body}" = "${#body}" ] || { echo "bench-tls.sh: nginx's JSON differs in size" >&2; exit 1; }
printf '\x00\x00\x00\x00\x02\x08\x01' >"$work/count1.bin"
curl -s --http2 --cacert "$ca" -H 'content-type: application/grpc' \
	--data-binary @"$work/count1.bin" -o "$work/one.bin" "$grpc_url"
[ "$(stat -c %s "$work/one.bin")" = "${#grpc_body}" ] ||
	{ echo "bench-tls.sh: idgen-httpd's gRPC answer and nginx's differ in size" >&2; exit 1; }

# tls_of PORT [ALPN]: what a handshake negotiates, as "version suite
# group" (openssl s_client, the certificate verified against the CA).
tls_of() {
	openssl s_client -connect "127.0.0.1:$1" -CAfile "$ca" -verify_return_error -brief \
		${2:+-alpn "$2"} </dev/null 2>&1 |
		awk -F': ' '/^Protocol version/ { v = $2 } /^Ciphersuite/ { c = $2 }
			/^(Server|Peer) Temp Key/ { split($2, g, ","); k = g[1] }
			END { print v, c, k }'
}
tls_h=$(tls_of "$tls_port") tls_g=$(tls_of "$tls_grpc_port" h2)
tls_n=$(tls_of "$nginx_port") tls_n2=$(tls_of "$nginx_port" h2)
if [ "$tls_h" != "$tls_n" ] || [ "$tls_g" != "$tls_n2" ] || [ "$tls_h" != "$tls_g" ] ||
	[ "$(wc -w <<<"$tls_h")" != 3 ]; then
	echo "bench-tls.sh: the servers negotiate differently: idgen-httpd '$tls_h' (h2 '$tls_g'), nginx '$tls_n' (h2 '$tls_n2')" >&2
	exit 1
fi
# resumed PORT: how many of openssl's five reconnections resumed the first
# session, at TLS 1.3 and at 1.2: (c) counts full handshakes only if none.
resumed() {
	local v n=0
	for v in -tls1_3 -tls1_2; do
		n=$((n + $(openssl s_client -connect "127.0.0.1:$1" -CAfile "$ca" "$v" -reconnect \
			</dev/null 2>/dev/null | grep -c '^Reused' || true)))
	done
	echo "$n"
}
for p in "$tls_port" "$tls_grpc_port" "$nginx_port"; do
	[ "$(resumed "$p")" = 0 ] || { echo "bench-tls.sh: port $p resumes TLS sessions" >&2; exit 1; }
done

post_lua "$work/count1.lua" '{"count":1}'

# ---- (a)-(c): alternating rounds ---------------------------------------------------
echo "== (a)-(c) HTTPS, gRPC over TLS and new connections: $rounds rounds of 6 runs of $seconds s"
load wrk -t1 -c"$conns" -d2s -s "$work/count1.lua" "$https_url" >/dev/null	# warm-up
load wrk -t1 -c"$conns" -d2s -s "$work/count1.lua" "$nginx_url" >/dev/null
h2load_run warm "$grpc_url" "$work/count1.bin" -c"$conns" -m1 -D 2 >/dev/null
h2load_run warm "$nginx_grpc_url" "$work/count1.bin" -c"$conns" -m1 -D 2 >/dev/null
a_h=() a_n=() a_hc=() a_nc=() b_h=() b_n=() c_h=() c_n=() c_hc=() c_nc=() c_lh=() c_ln=()
close=(-H 'Connection: close')
for ((r = 1; r <= rounds; r++)); do
	read -r rps okps cpu _ < <(wrk_run "a-h-$r" "$tls_pid" "$https_url" "$work/count1.lua" "$seconds")
	[ "$rps" = "$okps" ] || { echo "bench-tls.sh: idgen-httpd refused requests at count=1" >&2; exit 1; }
	a_h+=("$rps") a_hc+=("$cpu")
	read -r rps _ cpu _ < <(wrk_run "a-n-$r" "$nginx_pid" "$nginx_url" "$work/count1.lua" "$seconds")
	a_n+=("$rps") a_nc+=("$cpu")
	b_h+=("$(h2load_run "b-h-$r" "$grpc_url" "$work/count1.bin" -c"$conns" -m1 -D "$seconds")")
	b_n+=("$(h2load_run "b-n-$r" "$nginx_grpc_url" "$work/count1.bin" -c"$conns" -m1 -D "$seconds")")
	l0=$(core_ticks "$load_cpu")
	read -r rps okps cpu _ < <(wrk_run "c-h-$r" "$tls_pid" "$https_url" "$work/count1.lua" "$seconds" "${close[@]}")
	[ "$rps" = "$okps" ] || { echo "bench-tls.sh: idgen-httpd refused requests on new connections" >&2; exit 1; }
	c_h+=("$rps") c_hc+=("$cpu")
	l1=$(core_ticks "$load_cpu")
	read -r rps _ cpu _ < <(wrk_run "c-n-$r" "$nginx_pid" "$nginx_url" "$work/count1.lua" "$seconds" "${close[@]}")
	c_n+=("$rps") c_nc+=("$cpu")
	# The load's core: whether wrk's own handshakes bound (c).
	c_lh+=("$(awk -v t=$((l1 - l0)) -v hz="$hz" -v s="$seconds" 'BEGIN { b = 100 * t / hz / s; printf "%.0f", (b > 100 ? 100 : b) }')")
	c_ln+=("$(awk -v t=$(($(core_ticks "$load_cpu") - l1)) -v hz="$hz" -v s="$seconds" 'BEGIN { b = 100 * t / hz / s; printf "%.0f", (b > 100 ? 100 : b) }')")
	echo "   round $r: https ${a_h[-1]} / ${a_n[-1]} req/s, gRPC ${b_h[-1]} / ${b_n[-1]} calls/s, new connections ${c_h[-1]} / ${c_n[-1]} /s (idgen-httpd / nginx)"
done

# ---- (d) the client's buffered take, http:// and https:// --------------------------------
# client RUN ARGS...: one client_bench run of $seconds s; its line in $work/RUN.
client() {
	local name=$1
	shift
	load bench/client_bench --seconds "$seconds" "$@" >"$work/$name"
	echo "   $name: $(cat "$work/$name")"
}
field() { sed -n "s/.*\\b$2=\\([0-9.]*\\).*/\\1/p" "$work/$1"; }
echo "== (d) the client's buffered take, http:// and https://, $seconds s each"
d_p=() d_t=()
for ((r = 1; r <= 3; r++)); do
	client "d-plain-$r" --remote "http://127.0.0.1:$plain_port" --buffer 32
	client "d-tls-$r" --remote "https://127.0.0.1:$tls_port" --buffer 32 --ca-file "$ca"
	d_p+=("$(field "d-plain-$r" calls_per_s)") d_t+=("$(field "d-tls-$r" calls_per_s)")
done
# At 1,000 calls/s, the buffer's purpose: calls answered from memory.
client d-plain-paced --remote "http://127.0.0.1:$plain_port" --buffer 32 --rate 1000
client d-tls-paced --remote "https://127.0.0.1:$tls_port" --buffer 32 --rate 1000 --ca-file "$ca"
client d-plain-unbuffered --remote "http://127.0.0.1:$plain_port" --buffer 0
client d-tls-unbuffered --remote "https://127.0.0.1:$tls_port" --buffer 0 --ca-file "$ca"
uptime_end=$(uptime)

# ---- the section -------------------------------------------------------------------------------
a_hm=$(median "${a_h[@]}") a_nm=$(median "${a_n[@]}")
b_hm=$(median "${b_h[@]}") b_nm=$(median "${b_n[@]}")
c_hm=$(median "${c_h[@]}") c_nm=$(median "${c_n[@]}")
d_pm=$(median "${d_p[@]}") d_tm=$(median "${d_t[@]}")
a_he=() a_ne=() c_he=() c_ne=()
for ((i = 0; i < rounds; i++)); do
	a_he+=("$(per_cpu "${a_h[i]}" "${a_hc[i]}")") a_ne+=("$(per_cpu "${a_n[i]}" "${a_nc[i]}")")
	c_he+=("$(per_cpu "${c_h[i]}" "${c_hc[i]}")") c_ne+=("$(per_cpu "${c_n[i]}" "${c_nc[i]}")")
done
a_hem=$(median "${a_he[@]}") a_nem=$(median "${a_ne[@]}")
c_hem=$(median "${c_he[@]}") c_nem=$(median "${c_ne[@]}")
a_r=$(ratio "$a_hm" "$a_nm") b_r=$(ratio "$b_hm" "$b_nm") c_r=$(ratio "$c_hm" "$c_nm")
a_er=$(ratio "$a_hem" "$a_nem") c_er=$(ratio "$c_hem" "$c_nem") d_r=$(ratio "$d_tm" "$d_pm")
socket_errors() { sed -n 's/^ *Socket errors: *//p' "$work/$1.wrk"; }
c_err_h=$(socket_errors "c-h-$rounds") c_err_n=$(socket_errors "c-n-$rounds")
rev=$(git rev-parse --short HEAD)
dirty=$(git status --porcelain -- helper lib bench scripts/bench | wc -l)
c_lhm=$(median "${c_lh[@]}") c_lnm=$(median "${c_ln[@]}")
c_nbusy=$(median "${c_nc[@]}")

section=$work/section.md
{
	echo "## TLS: idgen-httpd on the host"
	echo
	echo "- command: \`IDGEN_BENCH_TLS_SECONDS=$seconds scripts/bench/bench-tls.sh\` (\`make bench-tls\`), at"
	echo "  $rev$([ "$dirty" = 0 ] || echo " with $dirty files changed under helper/, lib/, bench/ and scripts/bench/")"
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ), on the host (no guest): Linux $(uname -r), $(nproc) cores,"
	echo "  $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "- idgen-httpd --device sim:71 --threads 1 with --tls-cert/--tls-key (GnuTLS"
	echo "  $(dpkg-query -W -f '${Version}' libgnutls30 2>/dev/null || echo '?')), and nginx $(nginx -v 2>&1 | sed 's/.*nginx\///') (one worker, OpenSSL"
	echo "  $(openssl version | cut -d' ' -f2)), both pinned to core $server_cpu; wrk $(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/\1/p'),"
	echo "  h2load $(h2load --version | sed -n 's/^h2load nghttp2\/\([0-9.]*\).*/\1/p') and bench/client_bench pinned to core $load_cpu; loopback"
	echo "- both servers: the same P-256 ECDSA certificate (tests/httpd/tls-certs.sh),"
	echo "  negotiated as checked by openssl s_client before the rounds: $tls_h, over"
	echo "  HTTP/1.1 and h2 alike; neither resumed any of openssl's reconnections at TLS 1.3"
	echo "  or 1.2 (no tickets, no session cache), so each new connection of (c) is a full"
	echo "  handshake on both"
	echo "- **the machine was shared**: load average (1 min) $(load1 "$uptime_start") at the start,"
	echo "  $(load1 "$uptime_end") at the end; rounds alternate, so both servers meet the same"
	echo "  changes in the other load; per CPU-second is of the server's own CPU time"
	echo
	echo "| figure, median of $rounds rounds of $seconds s | idgen-httpd | nginx | ratio | per CPU-s, idgen-httpd / nginx | ratio |"
	echo "|---|---|---|---|---|---|"
	echo "| (a) HTTPS keep-alive req/s, count=1, $conns connections (wrk) | $a_hm | $a_nm | $a_r | $a_hem / $a_nem | $a_er |"
	echo "| (b) gRPC NextIds count=1 calls/s over TLS, $conns connections x 1 stream (h2load) | $b_hm | $b_nm | $b_r | | |"
	echo "| (c) new TLS connections/s, a full handshake and one count=1 request each (wrk, Connection: close) | $c_hm | $c_nm | $c_r | $c_hem / $c_nem | $c_er |"
	echo
	echo "Rounds, idgen-httpd / nginx: (a) ${a_h[*]} / ${a_n[*]}; (b) ${b_h[*]} / ${b_n[*]};"
	echo "(c) ${c_h[*]} / ${c_n[*]}. wrk's socket errors in (c)'s last round:"
	echo "idgen-httpd ${c_err_h:-none}; nginx ${c_err_n:-none}."
	echo
	echo "In (c) the load's core was $c_lhm% busy (median) against idgen-httpd, $c_lnm% against"
	echo "nginx, and nginx used $c_nbusy% of its core: a new connection costs the client"
	echo "(OpenSSL's handshake, as wrk does it) about what it costs a server, so with one"
	echo "core for the load (c)'s rate is bounded by the client, and the servers'"
	echo "connections per CPU-second are what compares them."
	echo
	echo "Its first run (before e2f3460) measured (c) at 0.70x nginx per CPU-second:"
	echo "idgen-httpd used its whole core for about 1,400 connections/s where nginx"
	echo "used 57% for about 1,100. perf showed a quarter of its time in recv();"
	echo "perf stat counted 1.6 million recvfrom() for 5,450 connections, and one"
	echo "client that connected and sent nothing held the core until the handshake"
	echo "timeout. libmicrohttpd's epoll loop learns that a socket is drained only"
	echo "from its own recv(), while GnuTLS reads the handshake itself, so a"
	echo "connection in its handshake stayed \"ready\" and was tried again and"
	echo "again. Since e2f3460 the HTTP listener polls when it serves TLS"
	echo "(helper/httpd/server.c; tests/httpd/tls_live.sh checks that a silent"
	echo "client costs no CPU), and (c) compares as above."
	echo
	echo "### (d) libidgen-client over https"
	echo
	echo "| bench/client_bench, one host, one calling thread, $seconds s | http:// | https:// | ratio |"
	echo "|---|---|---|---|"
	echo "| buffer 32, calls/s (median of 3 alternating runs) | $d_pm | $d_tm | $d_r |"
	echo "| buffer 32, p99 (us), last run | $(field d-plain-3 p99_us) | $(field d-tls-3 p99_us) | |"
	echo "| buffer 32 at 1000 calls/s: answered from memory | $(field d-plain-paced hit_pct)% | $(field d-tls-paced hit_pct)% | |"
	echo "| buffer 32 at 1000 calls/s: p50 / p99 (us) | $(field d-plain-paced p50_us) / $(field d-plain-paced p99_us) | $(field d-tls-paced p50_us) / $(field d-tls-paced p99_us) | |"
	echo "| no buffer, calls/s (one run: each call a request) | $(field d-plain-unbuffered calls_per_s) | $(field d-tls-unbuffered calls_per_s) | $(ratio "$(field d-tls-unbuffered calls_per_s)" "$(field d-plain-unbuffered calls_per_s)") |"
	echo
	echo "Runs, buffer 32, http:// / https://: ${d_p[*]} / ${d_t[*]}. Closed loop, the"
	echo "buffer is emptied faster than any host refills it, so the figure is the"
	echo "refills' (requests over keep-alive, TLS's records on https); at 1000"
	echo "calls/s a take is from memory, over either."
	echo
	echo "### Goals"
	echo
	echo "| goal | measured | target | |"
	echo "|---|---|---|---|"
	echo "| (a) HTTPS req/s, idgen-httpd / nginx | $a_r | >= 0.80 | $(goal "$a_r" '>=' 0.80) |"
	echo "| (a) the same per CPU-second of the server | $a_er | >= 0.80 | $(goal "$a_er" '>=' 0.80) |"
	echo "| (b) gRPC over TLS calls/s, idgen-httpd / nginx | $b_r | >= 0.80 | $(goal "$b_r" '>=' 0.80) |"
	echo "| (c) new TLS connections/s, idgen-httpd / nginx | $c_r | >= 0.80 | $(goal "$c_r" '>=' 0.80) |"
	echo "| (c) the same per CPU-second of the server | $c_er | >= 0.80 | $(goal "$c_er" '>=' 0.80) |"
	echo "| (d) the client's buffered take, https:// / http:// | $d_r | >= 0.80 | $(goal "$d_r" '>=' 0.80) |"
} >"$section"

results=$out/results.md
scripts/bench/results-section.sh "$results" "## TLS: idgen-httpd on the host" "$section"
echo "wrote the TLS section of $results"
cat "$section"

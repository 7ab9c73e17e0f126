#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-http.sh: idgen-httpd's HTTP benchmark, on this machine (not in a
# guest), against --device sim: the load generator pinned to one core, the
# server to the other (taskset), in one run:
#   (a) peak requests/s for count=1 over keep-alive (wrk), idgen-httpd
#       against nginx answering a fixed JSON body of the same size: the
#       median of 5 alternating rounds
#   (b) latency at a fixed offered load of half idgen-httpd's peak, open
#       loop, measured from each request's due time (bench/http_load.c),
#       idgen-httpd and nginx at the same rate
#   (c) IDs/s with count=1000 against the node's ceiling, 4096 IDs per ms
#       (the simulation's too: 12 sequence bits, borrowing at most 10 ms)
#   (d) a count=1 caller's latency, open loop, while ten connections ask
#       for 10,000 IDs each as fast as they are answered (the node
#       saturated), beside the same caller's on the idle node
# (a) runs idgen-httpd twice: tuned (--threads 1, one thread on its one core)
# and with the shipped defaults (helper/httpd/idgen-httpd.conf as the package
# installs it, nothing else but the address and the device).  Writes the section
# "## HTTP" of Documentation/bench/results.md (in place of the one there),
# Documentation/bench/http.dat and Documentation/bench/http.png.  make bench
# runs it after the guest's benchmarks; alone: make bench-http.  Run as root (it
# installs what it needs through scripts/deps.sh).
# shellcheck disable=SC2154 # NAME_port and NAME_pid: bench-lib.sh's start_httpd and start_nginx
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

[ "${IDGEN_SKIP_DEPS:-0}" = 1 ] || scripts/deps.sh
make -s -C helper/httpd
make -s -C bench http_load

seconds=${IDGEN_BENCH_HTTP_SECONDS:-10}	# (b) and (c); (a)'s rounds are half
rounds=5
conns=32
out=Documentation/bench
work=$top/build/bench-http
rm -rf "$work"
mkdir -p "$work" "$out"

# shellcheck source-path=SCRIPTDIR source=bench-lib.sh
. "$top/scripts/bench/bench-lib.sh"

httpd_pid="" nginx_pid="" defaults_pid="" sat_pid=""
cleanup() {
	[ -z "$sat_pid" ] || kill "$sat_pid" 2>/dev/null || true
	[ -z "$httpd_pid" ] || kill "$httpd_pid" 2>/dev/null || true
	[ -z "$defaults_pid" ] || kill "$defaults_pid" 2>/dev/null || true
	[ -z "$nginx_pid" ] || kill "$nginx_pid" 2>/dev/null || true
	wait 2>/dev/null || true
}
trap cleanup EXIT

uptime_start=$(uptime)

# ---- the servers ----------------------------------------------------------
start_httpd httpd --device sim:1 --clock-check no --threads 1 --max-connections-per-ip 1024
httpd_url=http://127.0.0.1:$httpd_port/v1/ids:next
# The same with the shipped defaults: the package's configuration file.
start_httpd defaults --config helper/httpd/idgen-httpd.conf --device sim:2
defaults_url=http://127.0.0.1:$defaults_port/v1/ids:next

# nginx's fixed answer: an answer of idgen-httpd's, so the same size.
body=$(curl -s -X POST -H 'Content-Type: application/json' -d '{"count":1}' "$httpd_url")
[[ $body =~ ^\{\"ids\":\[\"[0-9]+\"\],\"layout_version\":1\}$ ]] ||
	{ echo "bench-http.sh: idgen-httpd answered '$body'" >&2; exit 1; }
start_nginx nginx "" "" "		location / {
			default_type application/json;
			add_header Cache-Control no-store;
			return 200 '$body';
		}"
nginx_url=http://127.0.0.1:$nginx_port/v1/ids:next
nginx_body=$(curl -s -X POST -H 'Content-Type: application/json' -d '{"count":1}' "$nginx_url")
[ "${#nginx_body}" = "${#body}" ] || { echo "bench-http.sh: nginx's body differs in size" >&2; exit 1; }

post_lua "$work/count1.lua" '{"count":1}'
post_lua "$work/count1000.lua" '{"count":1000}'
loadavg() { cut -d' ' -f1 /proc/loadavg; }
# metric NAME: a sample of idgen-httpd's /metrics.
metric() { curl -s "http://127.0.0.1:$httpd_port/metrics" | sed -n "s/^$1 //p"; }
# The server's own request durations (from its headers to its answer,
# /metrics), cumulative per bucket: "le count" lines.
durations() {
	curl -s "http://127.0.0.1:$httpd_port/metrics" |
		sed -n 's/^idgen_request_duration_seconds_bucket{le="\([^"]*\)"} \([0-9]*\)$/\1 \2/p'
}

peak_secs=$(((seconds + 1) / 2))
echo "== (a) peak requests/s, count=1, keep-alive: $rounds rounds of $peak_secs s each"
load_a=$(loadavg)
load wrk -t1 -c"$conns" -d2s -s "$work/count1.lua" "$httpd_url" >/dev/null	# warm-up
load wrk -t1 -c"$conns" -d2s -s "$work/count1.lua" "$defaults_url" >/dev/null
load wrk -t1 -c"$conns" -d2s -s "$work/count1.lua" "$nginx_url" >/dev/null
declare -a h_rps n_rps d_rps h_cpu n_cpu d_cpu h_core n_core d_core
for ((r = 1; r <= rounds; r++)); do
	res=$(wrk_run "httpd-peak$r" "$httpd_pid" "$httpd_url" "$work/count1.lua" "$peak_secs")
	read -r rps okps cpu core <<<"$res"
	[ "$rps" = "$okps" ] || { echo "bench-http.sh: idgen-httpd refused requests at count=1" >&2; exit 1; }
	h_rps+=("$rps") h_cpu+=("$cpu") h_core+=("$core")
	res=$(wrk_run "defaults-peak$r" "$defaults_pid" "$defaults_url" "$work/count1.lua" "$peak_secs")
	read -r rps okps cpu core <<<"$res"
	[ "$rps" = "$okps" ] || { echo "bench-http.sh: idgen-httpd with its defaults refused requests at count=1" >&2; exit 1; }
	d_rps+=("$rps") d_cpu+=("$cpu") d_core+=("$core")
	res=$(wrk_run "nginx-peak$r" "$nginx_pid" "$nginx_url" "$work/count1.lua" "$peak_secs")
	read -r rps okps cpu core <<<"$res"
	n_rps+=("$rps") n_cpu+=("$cpu") n_core+=("$core")
	echo "   round $r: idgen-httpd ${h_rps[-1]}/s (its core ${h_core[-1]}% busy), with its defaults ${d_rps[-1]}/s (${d_core[-1]}%), nginx ${n_rps[-1]}/s (${n_core[-1]}%)"
done
kill -TERM "$defaults_pid"
wait "$defaults_pid" || true
defaults_pid=
h_peak=$(median "${h_rps[@]}")
d_peak=$(median "${d_rps[@]}")
n_peak=$(median "${n_rps[@]}")
declare -a h_eff n_eff d_eff
for ((i = 0; i < rounds; i++)); do
	h_eff+=("$(per_cpu "${h_rps[i]}" "${h_cpu[i]}")")
	d_eff+=("$(per_cpu "${d_rps[i]}" "${d_cpu[i]}")")
	n_eff+=("$(per_cpu "${n_rps[i]}" "${n_cpu[i]}")")
done
h_eff_med=$(median "${h_eff[@]}")
d_eff_med=$(median "${d_eff[@]}")
n_eff_med=$(median "${n_eff[@]}")

rate=$((h_peak / 2))
echo "== (b) open loop at $rate requests/s (half the peak), $seconds s after 2 s of warm-up"
load_b=$(loadavg)
durations >"$work/durations.before"
load bench/http_load 127.0.0.1 "$httpd_port" /v1/ids:next '{"count":1}' "$rate" \
	"$seconds" 2 "$conns" "$work/httpd.spectrum" >"$work/httpd.open" || true
durations >"$work/durations.after"
load bench/http_load 127.0.0.1 "$nginx_port" /v1/ids:next '{"count":1}' "$rate" \
	"$seconds" 2 "$conns" "$work/nginx.spectrum" >"$work/nginx.open" || true
for f in httpd nginx; do
	grep -q '^rate=' "$work/$f.open" || { echo "bench-http.sh: http_load against $f failed" >&2; exit 1; }
done
cat "$work/httpd.open" "$work/nginx.open"
field() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" "$work/$1.open"; }

echo "== (c) IDs/s with count=1000, ${seconds} s"
load_c=$(loadavg)
minted0=$(metric idgen_generator_ids_total)
res=$(wrk_run "httpd-1000" "$httpd_pid" "$httpd_url" "$work/count1000.lua" "$seconds")
read -r c_rps c_okps c_cpu c_core <<<"$res"
c_ids=$((c_okps * 1000))
c_minted=$(($(metric idgen_generator_ids_total) - minted0))
c_delivered=$(awk '/ requests in / { r = $1 } /Non-2xx/ { e = $NF } END { print (r - e) * 1000 }' \
	"$work/httpd-1000.wrk")
# (d): a count=1 caller at a modest fixed rate, idle, then beside ten
# connections asking for 10,000 IDs each (wrk, closed loop: each asks
# again as soon as it is answered, more than the node mints), against
# idgen-httpd with the program's defaults (a thread per core, no quota:
# the large callers may take the whole node) on the server's core.
sat_rate=1000
sat_conns=4
start_httpd sat --device sim:3 --clock-check no
post_lua "$work/count10000.lua" '{"count":10000}'
echo "== (d) count=1 at $sat_rate requests/s, idle, then beside 10 connections of count=10000, ${seconds} s each"
load_d=$(loadavg)
load bench/http_load 127.0.0.1 "$sat_port" /v1/ids:next '{"count":1}' "$sat_rate" \
	"$seconds" 2 "$sat_conns" >"$work/idle.open" || true
# At the lowest priority on the load core: the large callers' load is the
# server's, and must not make the count=1 caller send late.
load nice -n 19 wrk -t1 -c10 -d"$((seconds + 4))s" -s "$work/count10000.lua" \
	"http://127.0.0.1:$sat_port/v1/ids:next" >"$work/sat.wrk" &
sat_wrk=$!
sleep 1
load bench/http_load 127.0.0.1 "$sat_port" /v1/ids:next '{"count":1}' "$sat_rate" \
	"$seconds" 2 "$sat_conns" >"$work/sat.open" || true
wait "$sat_wrk"
kill -TERM "$sat_pid"
wait "$sat_pid" || true
sat_pid=
for f in idle sat; do
	grep -q '^rate=' "$work/$f.open" || { echo "bench-http.sh: http_load ($f) failed" >&2; exit 1; }
done
cat "$work/idle.open" "$work/sat.open"
sat_ids=$(awk '/ requests in / { r = $1; s = $4 + 0 } /Non-2xx/ { e = $NF }
	END { printf "%.0f", (r - e) * 10000 / s }' "$work/sat.wrk")

kill -TERM "$httpd_pid"
wait "$httpd_pid" || true
httpd_pid=
uptime_end=$(uptime)

# ---- the report -------------------------------------------------------------
ceiling=4096000
h_p50=$(field httpd p50_us) h_p99=$(field httpd p99_us) h_p999=$(field httpd p999_us)
h_max=$(field httpd max_us) h_lag=$(field httpd send_lag_p99_us)
n_p50=$(field nginx p50_us) n_p99=$(field nginx p99_us) n_p999=$(field nginx p999_us)
n_max=$(field nginx max_us)
peak_ratio=$(ratio "$h_peak" "$n_peak")
eff_ratio=$(ratio "$h_eff_med" "$n_eff_med")
d_peak_ratio=$(ratio "$d_peak" "$n_peak")
d_eff_ratio=$(ratio "$d_eff_med" "$n_eff_med")
idle_p50=$(field idle p50_us) idle_p99=$(field idle p99_us) idle_lag=$(field idle send_lag_p99_us)
sat_p50=$(field sat p50_us) sat_p99=$(field sat p99_us) sat_lag=$(field sat send_lag_p99_us)
ceil_ratio=$(ratio "$c_ids" "$ceiling")

n_lag=$(field nginx send_lag_p99_us)
# The server's own durations during (b): the share within each bucket.
server_within() {	# server_within LE: the share of (b)'s requests
	join "$work/durations.before" "$work/durations.after" |
		awk -v le="$1" '{ d[$1] = $3 - $2 } $1 == "+Inf" { all = $3 - $2 }
		END { printf "%.2f%%", all ? 100 * d[le] / all : 0 }'
}

section=$work/section.md
{
	echo "## HTTP: idgen-httpd on the host"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ), on the host (no guest): Linux $(uname -r), $(nproc) cores,"
	echo "  $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "- idgen-httpd --device sim (the simulated generator), --threads 1, pinned to"
	echo "  core $server_cpu; nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), one worker, pinned to the same core; the"
	echo "  load generators (wrk $(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/\1/p'), bench/http_load) pinned to core $load_cpu;"
	echo "  $conns keep-alive connections over loopback"
	echo "- **the machine was shared**: other work (QEMU guests, builds, test suites)"
	echo "  ran on both cores throughout. Load average (1 min): $(load1 "$uptime_start") at the"
	echo "  start, $load_a before (a), $load_b before (b), $load_c before (c), $load_d before (d), $(load1 "$uptime_end") at the"
	echo "  end. \"Core busy\" is all that ran on the server's core, its own"
	echo "  share beside it; absolute figures are those of a contended core"
	echo
	echo "### (a) Peak requests/s, count=1, keep-alive (wrk, $rounds rounds of $peak_secs s)"
	echo
	echo "| round | idgen-httpd req/s | its CPU / core busy | req per CPU-s | nginx req/s | its CPU / core busy | req per CPU-s |"
	echo "|---|---|---|---|---|---|---|"
	for ((i = 0; i < rounds; i++)); do
		echo "| $((i + 1)) | ${h_rps[i]} | ${h_cpu[i]}% / ${h_core[i]}% | ${h_eff[i]} | ${n_rps[i]} | ${n_cpu[i]}% / ${n_core[i]}% | ${n_eff[i]} |"
	done
	echo "| median | **$h_peak** | | **$h_eff_med** | **$n_peak** | | **$n_eff_med** |"
	echo
	echo "The same rounds, each between the two above, against idgen-httpd with"
	echo "the shipped defaults: \`--config helper/httpd/idgen-httpd.conf\` (the file the"
	echo "package installs as /etc/idgen/idgen-httpd.conf: a thread per core,"
	echo "no per-address limit, unnamed callers' quota of 1,000,000 IDs/s) and"
	echo "nothing else but its address and the device, on the same core:"
	echo
	echo "| round | idgen-httpd, shipped defaults, req/s | its CPU / core busy | req per CPU-s |"
	echo "|---|---|---|---|"
	for ((i = 0; i < rounds; i++)); do
		echo "| $((i + 1)) | ${d_rps[i]} | ${d_cpu[i]}% / ${d_core[i]}% | ${d_eff[i]} |"
	done
	echo "| median | **$d_peak** | | **$d_eff_med** |"
	echo
	echo "The rounds alternate, so both servers meet the same changes in the"
	echo "machine's other load; requests per CPU-second (of the server's own"
	echo "CPU time, user and system) is the figure that load changes least."
	echo "nginx answers \`return 200\` with a fixed body of the same ${#body} bytes;"
	echo "idgen-httpd mints, formats and counts each ID."
	echo
	echo "### (b) Latency at a fixed offered load, open loop ($rate req/s, $seconds s)"
	echo
	echo "Half of idgen-httpd's median peak, offered on a fixed schedule by"
	echo "bench/http_load over $conns keep-alive connections after 2 s of"
	echo "warm-up; each latency is from the request's due time, so a stall"
	echo "counts for every request it delays (no coordinated omission)."
	echo
	echo "| server | p50 (us) | p99 (us) | p999 (us) | max (us) | answered 200 | other | unanswered | generator's send lag p99 (us) |"
	echo "|---|---|---|---|---|---|---|---|---|"
	echo "| idgen-httpd | $h_p50 | $h_p99 | $h_p999 | $h_max | $(field httpd ok) | $(field httpd errors) | $(field httpd lost) | $h_lag |"
	echo "| nginx, same rate | $n_p50 | $n_p99 | $n_p999 | $n_max | $(field nginx ok) | $(field nginx errors) | $(field nginx lost) | $n_lag |"
	echo
	echo "The send lag is how late the load generator itself sent (descheduled"
	echo "on its shared core, or every connection busy): it counts in the latency."
	if awk -v l="$h_lag" -v p="$h_p99" 'BEGIN { exit !(l >= p / 2) }'; then
		echo "Here it is at least half of idgen-httpd's p99: the tail is mostly the"
		echo "machine's (a load generator that sends late), not the server's."
	fi
	echo "idgen-httpd's own clock (/metrics, from a request's headers to its"
	echo "answer) had $(server_within 0.00025) of (b)'s requests within 250 us,"
	echo "$(server_within 0.001) within 1 ms and $(server_within 0.0025) within 2.5 ms."
	echo
	echo "### (c) IDs/s with count=1000 (wrk, $seconds s)"
	echo
	echo "| requests/s | answered 200 per s | IDs/s delivered | share of the ceiling (4096000 IDs/s) | its CPU / core busy |"
	echo "|---|---|---|---|---|"
	echo "| $c_rps | $c_okps | $c_ids | $(awk -v r="$c_ids" -v c=$ceiling 'BEGIN { printf "%.1f%%", 100 * r / c }') | $c_cpu% / $c_core% |"
	echo
	echo "wrk asks faster than the ceiling: the simulation, like the module,"
	echo "stamps at most 10 ms ahead of the clock and makes the requests past it"
	echo "wait for the clock. The generator minted $c_minted IDs meanwhile,"
	echo "$c_delivered of them delivered: the other $((c_minted - c_delivered)) were minted for requests"
	echo "refused part-way, holes never reissued. Through /dev/idgen the"
	echo "service's one open file may take the whole node too, as long as no"
	echo "other reader waits (the guest's section above)."
	echo
	echo "### (d) A count=1 caller while large requests saturate the node"
	echo
	echo "bench/http_load offers $sat_rate count=1 requests/s over $sat_conns connections for"
	echo "$seconds s (after 2 s of warm-up), first alone, then while wrk (at nice 19 on"
	echo "the load core) holds ten more connections asking for 10,000 IDs each as"
	echo "fast as they are answered, against idgen-httpd with the program's defaults"
	echo "(a thread per core, no quota) on the server's core. Large requests are"
	echo "minted on the bulk lane (idgen-httpd(8), LARGE REQUESTS), which leaves the"
	echo "generator's borrow bound to small ones and runs below the connections'"
	echo "threads."
	echo
	echo "| node | p50 (us) | p99 (us) | generator's send lag p99 (us) | answered 200 | large callers' IDs/s |"
	echo "|---|---|---|---|---|---|"
	echo "| idle | $idle_p50 | $idle_p99 | $idle_lag | $(field idle ok) | 0 |"
	echo "| saturated | $sat_p50 | $sat_p99 | $sat_lag | $(field sat ok) | $sat_ids ($(awk -v r="$sat_ids" -v c=$ceiling 'BEGIN { printf "%.1f%%", 100 * r / c }') of the ceiling) |"
	echo
	echo "### Goals and anchors"
	echo
	echo "| goal | measured | target | | anchor |"
	echo "|---|---|---|---|---|"
	echo "| (a) peak req/s, idgen-httpd / nginx | $peak_ratio ($h_peak / $n_peak) | >= 0.80 | $(goal "$peak_ratio" '>=' 0.80) | Meituan Leaf: about 50k QPS on 4 cores |"
	echo "| (a) the same per CPU-second of the server | $eff_ratio ($h_eff_med / $n_eff_med) | >= 0.80 | $(goal "$eff_ratio" '>=' 0.80) | |"
	echo "| (a) peak req/s with the shipped defaults / nginx | $d_peak_ratio ($d_peak / $n_peak) | >= 0.80 | $(goal "$d_peak_ratio" '>=' 0.80) | |"
	echo "| (a) the same per CPU-second of the server | $d_eff_ratio ($d_eff_med / $n_eff_med) | >= 0.80 | $(goal "$d_eff_ratio" '>=' 0.80) | |"
	echo "| (b) p99 at half the peak | $h_p99 us | <= 1000 us | $(goal "$h_p99" '<=' 1000) | Leaf: TP999 about 1 ms |"
	echo "| (b) p999 at half the peak | $h_p999 us | <= 2000 us | $(goal "$h_p999" '<=' 2000) | Twitter Snowflake: >= 10k IDs/s per process within 2 ms |"
	echo "| (d) count=1 p99, node saturated by count=10000 (idle: $idle_p99 us) | $sat_p99 us | <= 2000 us | $(goal "$sat_p99" '<=' 2000) | |"
	echo "| (c) IDs/s at count=1000 / the ceiling | $ceil_ratio | >= 0.95 | $(goal "$ceil_ratio" '>=' 0.95) | Snowflake's 10k IDs/s per process: $(awk -v i="$c_ids" 'BEGIN { printf "%.0f", i / 10000 }')x |"
	echo
	echo "(c)'s target is that of the guest's sustained throughput. idgen-httpd's peak is on"
	echo "one contended core, Leaf's on 4; at (b) it serves $rate IDs/s one by"
	echo "one, $(awk -v r="$rate" 'BEGIN { printf "%.1f", r / 10000 }')x Snowflake's anchor."
	echo
	echo "![latency against percentile at $rate req/s](http.png)"
} >"$section"

{
	echo "# percentile idgen_httpd_us nginx_us 1/(1-p)   ($rate req/s, open loop)"
	paste "$work/httpd.spectrum" "$work/nginx.spectrum" | grep -v '^#' |
		awk '{ print $1, $2, $5, $3 }'
} >"$out/http.dat"
gnuplot <<GNUPLOT
set terminal pngcairo size 900,560 noenhanced
set output "$out/http.png"
set title "Latency at $rate requests/s, open loop, count=1 (host, idgen-httpd --device sim)"
set xlabel "percentile"
set ylabel "latency from the due time (us)"
set logscale xy
set xtics ("0" 1, "90" 10, "99" 100, "99.9" 1000, "99.99" 10000, "max" 100000)
set key bottom right
set grid
plot "$out/http.dat" using 4:2 with linespoints title "idgen-httpd", \
     "$out/http.dat" using 4:3 with linespoints title "nginx, return 200, same body size", \
     1000 with lines dashtype 2 title "p99 goal 1 ms", \
     2000 with lines dashtype 3 title "p999 goal 2 ms"
GNUPLOT

results=$out/results.md
scripts/bench/results-section.sh "$results" "## HTTP: idgen-httpd on the host" "$section"
echo "wrote the HTTP section of $results, $out/http.dat, $out/http.png"
cat "$section"

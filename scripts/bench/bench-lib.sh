# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2154 # $top, $work and $conns are the caller's
#
# bench-lib.sh: sourced by the host benchmarks (bench-http.sh, bench-grpc.sh,
# bench-tls.sh), so that how a server is started, pinned, loaded and
# measured is written once and every figure beside nginx's is taken alike.
# The caller sets $work (a directory of its own) before sourcing.
#
#   load_cpu, server_cpu        the load generators' core and the servers'
#   load CMD...                 CMD pinned to the load's core
#   start_httpd NAME ARGS...    idgen-httpd ARGS... on the servers' core, on
#                               a free loopback port: NAME_pid, NAME_port and,
#                               with --grpc-listen, NAME_grpc_port
#   start_nginx NAME LISTEN SERVER LOCATIONS CURL_ARGS...
#                               nginx, one worker, on the servers' core, on a
#                               free loopback port: "listen ADDR LISTEN;",
#                               then SERVER (directives) and LOCATIONS in its
#                               one server block; up once curl CURL_ARGS
#                               answers (https with "ssl" in LISTEN); sets
#                               NAME_pid, NAME_port
#   post_lua FILE BODY          a wrk script that POSTs the JSON BODY
#   wrk_run NAME PID URL SCRIPT SECONDS [WRK_ARGS...]
#                               one wrk run of $conns connections; prints
#                               "req/s ok/s server_cpu_% core_busy_%"
#   h2load_run NAME URL BODY H2LOAD_ARGS...
#                               one h2load run of gRPC calls; prints calls/s,
#                               and fails unless every call was answered 200
#   median N..., ratio A B, goal MEASURED OP TARGET, per_cpu REQ CPU_%
#   proc_ticks PID, core_ticks CPU, hz
#   load1 UPTIME                uptime(1)'s line's 1-minute load average

# Two cores: the load on the first, the servers on the second.
if [ "$(nproc)" -ge 2 ]; then
	load_cpu=0 server_cpu=1
else
	load_cpu=0 server_cpu=0
fi
load() { taskset -c "$load_cpu" "$@"; }

# The log exists before the server starts: the loop may read it before
# the shell forked for the server has opened it (sed failing on a missing
# file would end the script under set -e).
start_httpd() {
	local name=$1 port="" gport="" want_grpc="" a t
	shift
	for a; do [ "$a" != --grpc-listen ] || want_grpc=1; done
	: >"$work/$name.log"
	taskset -c "$server_cpu" "$top/helper/httpd/idgen-httpd" --listen 127.0.0.1:0 "$@" \
		>"$work/$name.log" 2>&1 &
	printf -v "${name}_pid" %s $!
	for ((t = 0; t < 100; t++)); do
		port=$(sed -n 's/.*listening on .* (port \([0-9]*\)).*/\1/p' "$work/$name.log")
		gport=$(sed -n 's/.*serving gRPC .*(port \([0-9]*\)).*/\1/p' "$work/$name.log")
		[ -n "$port" ] && { [ -z "$want_grpc" ] || [ -n "$gport" ]; } && break
		sleep 0.1
	done
	if [ -z "$port" ] || { [ -n "$want_grpc" ] && [ -z "$gport" ]; }; then
		cat "$work/$name.log" >&2
		exit 1
	fi
	printf -v "${name}_port" %s "$port"
	printf -v "${name}_grpc_port" %s "$gport"
}

# nginx picks no free port by itself: a random one, tried again if taken.
start_nginx() {
	local name=$1 listen=$2 server=$3 locations=$4 scheme=http port pid="" t try
	shift 4
	[[ " $listen " != *" ssl "* ]] || scheme=https
	for ((try = 0; try < 10; try++)); do
		port=$((20000 + RANDOM % 40000))
		cat >"$work/$name.conf" <<NGINX
user $(id -un) $(id -gn);
worker_processes 1;
pid $work/$name.pid;
error_log $work/$name.err;
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
		listen 127.0.0.1:$port $listen;
$server
$locations
	}
}
NGINX
		taskset -c "$server_cpu" nginx -c "$work/$name.conf" -p "$work" -g 'daemon off;' \
			2>>"$work/$name.err" &
		pid=$!
		for ((t = 0; t < 50; t++)); do
			curl -s -o /dev/null "$@" "$scheme://127.0.0.1:$port/" && break 2
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		pid=
	done
	[ -n "$pid" ] || { cat "$work/$name.err" >&2; exit 1; }
	printf -v "${name}_pid" %s "$pid"
	printf -v "${name}_port" %s "$port"
}

# CPU time (ticks) of a process and its children (nginx's worker), and
# the server core's busy ticks from /proc/stat: what the server used of
# its core, and what else ran there (the machine is shared).
proc_ticks() {
	local p sum=0
	for p in "$1" $(ps -o pid= --ppid "$1"); do
		sum=$((sum + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	echo $sum
}
core_ticks() { awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
hz=$(getconf CLK_TCK)

post_lua() {
	printf 'wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n' \
		"'$2'" >"$1"
}

wrk_run() {
	local name=$1 pid=$2 url=$3 script=$4 secs=$5 p0 c0 p1 c1 reqs non2xx
	shift 5
	p0=$(proc_ticks "$pid") c0=$(core_ticks "$server_cpu")
	load wrk -t1 -c"$conns" -d"${secs}s" -s "$script" "$@" "$url" >"$work/$name.wrk"
	p1=$(proc_ticks "$pid") c1=$(core_ticks "$server_cpu")
	reqs=$(sed -n 's/^ *\([0-9]*\) requests in \([0-9.]*\)\([a-z]*\),.*/\1/p' "$work/$name.wrk")
	secs=$(sed -n 's/^ *[0-9]* requests in \([0-9.]*\)s,.*/\1/p' "$work/$name.wrk")
	non2xx=$(sed -n 's/^ *Non-2xx or 3xx responses: *\([0-9]*\)/\1/p' "$work/$name.wrk")
	if [ -z "$reqs" ] || [ -z "$secs" ]; then
		cat "$work/$name.wrk" >&2
		exit 1
	fi
	awk -v r="$reqs" -v s="$secs" -v e="${non2xx:-0}" -v p=$((p1 - p0)) -v c=$((c1 - c0)) \
		-v hz="$hz" 'BEGIN { printf "%.0f %.0f %.0f %.0f\n", r / s, (r - e) / s,
		100 * p / hz / s, 100 * c / hz / s }'
}

h2load_run() {
	local name=$1 url=$2 body=$3 rps
	shift 3
	load h2load -d "$body" -H 'content-type: application/grpc' -H 'te: trailers' \
		"$@" "$url" >"$work/$name.h2load" 2>&1 || true
	rps=$(sed -n 's/^finished in [0-9.]*m\?s, \([0-9.]*\) req\/s.*/\1/p' "$work/$name.h2load")
	if ! grep -q '^requests: .* 0 failed, 0 errored' "$work/$name.h2load" ||
		! grep -q '^status codes: [0-9]* 2xx, 0 3xx, 0 4xx, 0 5xx' "$work/$name.h2load" ||
		[ -z "$rps" ]; then
		echo "$name:" >&2
		cat "$work/$name.h2load" >&2
		exit 1
	fi
	printf '%.0f\n' "$rps"
}

median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# Requests per second of the server's own CPU time: what the other work
# on its core changes least.
per_cpu() { awk -v r="$1" -v c="$2" 'BEGIN { printf "%.0f", (c > 0 ? 100 * r / c : 0) }'; }
goal() {
	if awk -v m="$1" -v t="$3" -v op="$2" 'BEGIN { exit !(op == ">=" ? m >= t : m <= t) }'; then
		echo met
	else
		echo "**missed**"
	fi
}
load1() {
	local l=${1##*load average: }
	echo "${l%%,*}"
}

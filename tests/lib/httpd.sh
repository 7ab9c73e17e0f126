# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# idgen-httpd started by the shell suites (tests/httpd, tests/client,
# tests/vm/httpd-suite.sh): sourced after tap.sh, with $httpd set.

# httpd_port LOG PID [SECS]: the port idgen-httpd's LOG says it listens on
# (its HTTP listener), once it says so; within SECS (10), and not once PID
# has exited.  Fails, printing nothing, otherwise.
httpd_port() {
	local log=$1 pid=$2 t p
	for ((t = 0; t < ${3:-10} * 10; t++)); do
		p=$(sed -n 's/.*listening on .* (port \([0-9]*\)).*/\1/p' "$log" | head -n 1)
		[ -n "$p" ] && { echo "$p"; return 0; }
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# httpd_start LOG ARGS...: $httpd on a free loopback port with ARGS, its
# output in LOG; sets pid, port and url.  Fails, the log shown as TAP
# comments, when it does not say where it listens.
httpd_start() {
	local log=$1
	shift
	# Emptied here, not by the background job's redirection: httpd_port
	# must never read the port of a run before.
	: >"$log"
	# shellcheck disable=SC2154 # $httpd: the suite's
	"$httpd" --listen 127.0.0.1:0 "$@" >>"$log" 2>&1 &
	pid=$!
	if port=$(httpd_port "$log" "$pid"); then
		# shellcheck disable=SC2034 # url: the suite's
		url=http://127.0.0.1:$port
		return 0
	fi
	sed 's/^/# /' "$log"
	return 1
}

# httpd_stop: SIGTERM to the one httpd_start started, and the exit status
# it gave.
httpd_stop() {
	local rc
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	pid=
	return $rc
}

# req NAME CURL-ARGS...: one request, within $req_timeout s (20); its
# answer in $work: NAME.status, NAME.hdr, NAME.body.
req() {
	local name=$1
	shift
	# shellcheck disable=SC2154 # $work: the suite's
	curl -s -o "$work/$name.body" -D "$work/$name.hdr" -w '%{http_code}' \
		--max-time "${req_timeout:-20}" "$@" >"$work/$name.status"
}
status_of() { cat "$work/$1.status"; }

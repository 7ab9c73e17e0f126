# SPDX-License-Identifier: GPL-2.0
#
# daemon-lib.sh: sourced by the idgend tests that run the daemon.  Each
# daemon has a NAME, its log in $work/NAME.log and its pid in PID[NAME].
#
#   daemon_start NAME ARGS...   run "$idgend" --owner NAME --runtime-dir
#                               $work/NAME.run ARGS... in the background,
#                               under "${IDGEND_WRAP[@]}" if set: each NAME
#                               is a host of its own (its own lock and owner
#                               token, kept across its restarts)
#   wait_log NAME REGEX SECS [FROM]
#                               until its log matches, from line FROM on
#                               (the log's tail on failure, as comments)
#   log_lines NAME              how many lines its log has: a FROM
#   stop NAME                   SIGTERM; returns its exit status
#   wait_exit NAME SECS         its exit status once it exits by itself;
#                               SIGKILLed (status 137) if still up by SECS
#   daemon_kill_all             SIGKILL whatever still runs (thawed first)
#   gnow                        the wall clock in ms since the idgen epoch
#
# What every suite that runs daemons starts with, and starts them with:
#
#   daemon_workdir SUITE [FN]   $work, a new build/idgend-SUITE.XXXXXX; at
#                               exit FN (if given) runs, then every daemon
#                               and etcd member (etcd-lib.sh) is killed,
#                               and $work is removed if every test passed,
#                               else kept for inspection
#   sim_daemon NAME MODE ARGS...  daemon_start NAME --mode MODE on a
#                               simulated generator of its own,
#                               sim:$work/NAME.gen, which logs every push
#                               and revoke to $work/NAME.gen.log
#   etcd_daemon NAME ARGS...    sim_daemon NAME etcd, not waiting for a
#                               synchronised clock (the host's may not be)
#   pushes NAME, revokes NAME   how many pushes and revokes its simulated
#                               generator logged

# It sources what every such suite uses: tests/lib/tap.sh (from $top, the
# tree's top, which the suite sets first) and etcd-lib.sh.
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=etcd-lib.sh
. "${BASH_SOURCE[0]%/*}/etcd-lib.sh"

declare -A PID
IDGEND_WRAP=()

daemon_start() {
	local name=$1
	shift
	"${IDGEND_WRAP[@]}" "$idgend" --owner "$name" --runtime-dir "$work/$name.run" \
		"$@" >>"$work/$name.log" 2>&1 &
	PID[$name]=$!
}

wait_log() {
	local t from=${4:-1}
	for ((t = 0; t < $3 * 10; t++)); do
		tail -n "+$from" "$work/$1.log" 2>/dev/null | grep -Eq "$2" && return 0
		sleep 0.1
	done
	echo "# $1: no '$2' in ${3}s; its log:"
	tail -n 15 "$work/$1.log" | sed 's/^/#   /'
	return 1
}

log_lines() {
	echo $(($(wc -l <"$work/$1.log") + 1))
}

stop() {
	local rc
	kill -TERM "${PID[$1]}"
	wait "${PID[$1]}"
	rc=$?
	unset "PID[$1]"
	return $rc
}

wait_exit() {
	local t rc
	for ((t = 0; t < $2 * 10; t++)); do
		kill -0 "${PID[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "${PID[$1]}" 2>/dev/null; then
		echo "# $1 still runs after ${2}s: killed"
		kill -KILL "${PID[$1]}"
	fi
	wait "${PID[$1]}"
	rc=$?
	unset "PID[$1]"
	return $rc
}

daemon_kill_all() {
	local p
	for p in "${PID[@]}"; do
		kill -CONT "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	PID=()
}

EPOCH_MS=1767225600000
gnow() { echo $(($(date +%s%3N) - EPOCH_MS)); }

daemon_workdir() {
	mkdir -p "$top/build" &&
		work=$(mktemp -d "$top/build/idgend-$1.XXXXXX") || exit 1
	DAEMON_ON_EXIT=${2:-}
	trap daemon_cleanup EXIT
}

daemon_cleanup() {
	[ -n "$DAEMON_ON_EXIT" ] && "$DAEMON_ON_EXIT"
	daemon_kill_all
	etcd_cleanup
	wait 2>/dev/null
	if [ "$status" -eq 0 ]; then
		rm -rf "$work"
	else
		echo "# kept for inspection: ${work#"$top"/}"
	fi
}

sim_daemon() {
	local name=$1 mode=$2
	shift 2
	daemon_start "$name" --mode "$mode" --device "sim:$work/$name.gen" "$@"
}

etcd_daemon() {
	local name=$1
	shift
	sim_daemon "$name" etcd --require-clock-sync no "$@"
}

# gen_count NAME WORD: the lines of its generator's log that WORD names.
gen_count() {
	local c
	c=$(grep -c " $2 " "$work/$1.gen.log" 2>/dev/null)
	echo "${c:-0}"
}
pushes() { gen_count "$1" push; }
revokes() { gen_count "$1" revoke; }

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# standalone.sh IDGEND: idgend in standalone mode on a simulated generator
# (--device sim:FILE, 3 region bits and 7 worker bits, logging every push
# to FILE.log): what it does with a state file that is not what it
# writes, with one that is missing, with numbers the layout has no room
# for, and with a wall clock before the idgen epoch (faked with
# libfaketime).  Prints TAP.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
idgend=${1:-$top/helper/idgend/idgend}
# shellcheck source=daemon-lib.sh
. "$here/daemon-lib.sh"

daemon_workdir standalone

# sa NAME ARGS...: a standalone idgend on a simulated generator of its own,
# its state in $work/NAME/state unless ARGS say otherwise.
sa() {
	local name=$1
	shift
	sim_daemon "$name" standalone --state-file "$work/$name/state" --lease-ms 4000 --renew-ms 1000 "$@"
}

# exits NAME SECS: its exit status, once it exits within SECS (else 124,
# and it is killed).
exits() {
	local t
	for ((t = 0; t < $2 * 10; t++)); do
		kill -0 "${PID[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "${PID[$1]}" 2>/dev/null && kill -KILL "${PID[$1]}"
	wait "${PID[$1]}"
	local rc=$?
	unset "PID[$1]"
	[ $t -lt $(($2 * 10)) ] || rc=124
	return $rc
}

echo "TAP version 13"

# --- the state file ------------------------------------------------------------

# Each is refused: exit 2 (systemd does not restart it), a line saying
# what is wrong, nothing pushed.
i=0
while IFS='|' read -r desc text why; do
	i=$((i + 1))
	mkdir -p "$work/bad$i"
	printf '%b' "$text" >"$work/bad$i/state"
	sa "bad$i"
	exits "bad$i" 10
	rc=$?
	check "state file $desc: exit 2 ($rc)" test $rc -eq 2
	check "... saying so, nothing pushed" \
		test -n "$(grep -F "state file $work/bad$i/state is not what idgend writes" "$work/bad$i.log" |
			grep -F "$why")" -a "$(pushes "bad$i")" -eq 0
done <<'CASES'
truncated (no newline)|valid_until_ms 28|the file is truncated
with trailing garbage|valid_until_ms 28\ngarbage\n|there is more after its one line
with a NUL inside the number|valid_until_ms 2\08\n|not a decimal number
of 2^64 - 1 ms|valid_until_ms 18446744073709551615\n|beyond the 41 bits
of 2^41 ms|valid_until_ms 2199023255552\n|beyond the 41 bits
with a leading zero|valid_until_ms 028\n|not a decimal number
empty|| it is empty
CASES

# A good one: the floor is what it says.
mkdir -p "$work/good"
printf 'valid_until_ms 28\n' >"$work/good/state"
sa good
check "state file of 28 ms: the lease is set with floor 28" \
	wait_log good 'lease set: r0/w0, floor ms 28,' 10
stop good
check "... clean stop" test $? -eq 0
check "... and the file holds what idgend wrote last, in its one format" \
	grep -Eqx 'valid_until_ms [1-9][0-9]*' "$work/good/state"

# Missing from a directory that exists: deleted, not a first start.
mkdir -p "$work/gone"
sa gone
exits gone 10
rc=$?
check "state file missing from its directory: exit 2 ($rc)" test $rc -eq 2
check "... a loud line that says what to do, nothing pushed" \
	test -n "$(grep -F "alert: state file $work/gone/state is missing, but its directory exists" "$work/gone.log" |
		grep -F -- '--fresh-state')" -a "$(pushes gone)" -eq 0
from=$(log_lines gone)
sa gone --fresh-state
check "... --fresh-state starts it" wait_log gone 'lease set: r0/w0, floor ms 0,' 10 "$from"
stop gone
check "... and a clean stop leaves the file" test -s "$work/gone/state"

# A directory idgend makes: a first start, and the file written at once.
sa first
check "no directory yet: a first start" wait_log first 'lease set: r0/w0, floor ms 0,' 10
stop first
check "... and the file is there before the first lease is used" \
	grep -Eqx 'valid_until_ms [0-9]+' "$work/first/state"

# Its parent missing too (a new host without systemd's StateDirectory=):
# one level more is made, still a first start; two levels is a typo.
daemon_start deep --mode standalone --device "sim:$work/deep.gen" \
	--state-file "$work/deep/idgen/state" --lease-ms 4000 --renew-ms 1000
check "state file's directory and its parent missing: a first start" \
	wait_log deep 'lease set: r0/w0, floor ms 0,' 10
stop deep
daemon_start deeper --mode standalone --device "sim:$work/deeper.gen" \
	--state-file "$work/deeper/x/idgen/state" --lease-ms 4000 --renew-ms 1000
exits deeper 10
rc=$?
check "three levels missing: refused, exit 2 ($rc), nothing pushed" \
	test $rc -eq 2 -a "$(pushes deeper)" -eq 0

# --- numbers the layout has no room for ----------------------------------------

for arg in "--region 9" "--worker 500" "--region 8 --worker 128"; do
	name=layout-$(echo "$arg" | tr -cd 'a-z0-9')
	# shellcheck disable=SC2086
	sa "$name" $arg
	exits "$name" 10
	rc=$?
	check "standalone $arg with layout 3/7/12: exit 2 ($rc)" test $rc -eq 2
	check "... naming the layout, nothing pushed" \
		test -n "$(grep -E "(region|worker) [0-9]+ does not fit layout 3/7/12 \((3 region|7 worker) bits\)" "$work/$name.log")" \
		-a "$(pushes "$name")" -eq 0
done

# --- a wall clock before the epoch ------------------------------------------------

faketime_lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1)
if [ -z "$faketime_lib" ]; then
	not_ok "libfaketime not found (install faketime: scripts/deps.sh)"
else
	# Only the wall clock is faked: poll() and the monotonic clock are real.
	IDGEND_WRAP=(env LD_PRELOAD="$faketime_lib" DONT_FAKE_MONOTONIC=1
		     FAKETIME="@2025-06-01 00:00:00")
	sa early
	IDGEND_WRAP=()
	check "clock in 2025: a line saying why nothing is minted" \
		wait_log early 'alert: the wall clock reads before the idgen epoch, 2026-01-01' 10
	sleep 2
	check "... the daemon waits (still running), nothing pushed" \
		test -e "/proc/${PID[early]}" -a "$(pushes early)" -eq 0
	stop early
	check "... SIGTERM ends the wait: exit 0" test $? -eq 0

	IDGEND_WRAP=(env LD_PRELOAD="$faketime_lib" DONT_FAKE_MONOTONIC=1
		     FAKETIME="@2025-12-31 23:59:58")
	sa late
	IDGEND_WRAP=()
	check "clock 2 s before the epoch: the line, then" \
		wait_log late 'before the idgen epoch' 10
	check "... once it passes the epoch, the lease is set" \
		wait_log late 'lease set: r0/w0, floor ms 0,' 15
	stop late
fi

echo "1..$n"
exit "$status"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-suite.sh [--smoke] MODULE: the device tests, run as root inside a
# disposable guest (tests/vm/run-guest.sh).  Loads MODULE, runs the
# kselftests, the module lifecycle checks and the clock-step tests, which
# step this machine's wall clock: never run it outside a guest.
#
# --smoke runs what shows that a kernel runs the module at all: load, mint,
# lease, fence, revoke, one clock step, unload.  scripts/check.sh gives it
# to the kernels whose whole suite only --matrix runs.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
smoke=0
if [ "${1:-}" = --smoke ]; then
	smoke=1
	shift
fi
module=${1:?usage: guest-suite.sh [--smoke] MODULE}
idgenctl=$top/helper/idgenctl/idgenctl

# run-guest.sh sets IDGEN_GUEST=1 in the guest.
if [ "${IDGEN_GUEST:-}" != 1 ]; then
	echo "guest-suite.sh: refusing to run outside a test guest" >&2
	exit 2
fi

echo "TAP version 13"

if [ "$smoke" = 1 ]; then
	check "insmod $(basename "$module")" insmod "$module"
	# Without the device every test below would skip, not fail.
	check "/dev/idgen is a character device" test -c /dev/idgen
	"$top/tests/selftests/idgen_test" -t device_node -t read_enokey \
		-t renewal -t fence_stops_minting -t read_after_revoke_enokey \
		-t revoke_then_new_node -t read_increasing_decodes || status=1
	"$top/tests/selftests/clock_steps" -t back_500ms || status=1
	check "rmmod at the end" rmmod idgen
	exit "$status"
fi

# Module parameters that make no valid layout: the load fails, says which
# values and why, and leaves no device.  A width near 2^32 once wrapped
# the unsigned sum and loaded a layout with undefined shifts, whose IDs
# repeated across milliseconds.
insmod_bad_layout() {
	local params p msg
	for params in "worker_bits=4294967295" "region_bits=3 worker_bits=4294967294" \
		"worker_bits=263" "region_bits=9 worker_bits=0" \
		"region_bits=3 worker_bits=14" "region_bits=4294967295"; do
		dmesg -C
		# shellcheck disable=SC2086 # one word per parameter
		if insmod "$module" $params 2>/dev/null; then
			echo "# insmod with $params loaded"
			rmmod idgen
			return 1
		fi
		msg=$(dmesg | grep "idgen: bad layout")
		for p in $params; do
			case $msg in
			*" $p"[:\ ]*) ;;
			*)
				echo "# insmod with $params: no message naming $p"
				dmesg | tail -n 5 | sed 's/^/# /'
				return 1
				;;
			esac
		done
		[ ! -e /dev/idgen ] || { echo "# /dev/idgen exists after a failed load"; return 1; }
	done
}
check "insmod refuses parameters that make no valid layout" insmod_bad_layout

check "insmod $(basename "$module")" insmod "$module"

# The kselftests print their own TAP; run-guest.sh's caller counts it.
"$top/tests/selftests/idgen_test" || status=1
# Greedy unprivileged readers against a blocking one.
"$top/tests/selftests/fairness" || status=1

# rmmod while a reader holds the device open: refused, reader unharmed.
rmmod_while_open() {
	local rc
	"$idgenctl" lease set --region 1 --worker 2 --valid-for 60000 >/dev/null || return 1
	exec 3</dev/idgen
	rmmod idgen 2>/dev/null && { echo "# rmmod succeeded with the device open"; return 1; }
	# still serves the open file
	rc=0
	dd bs=8 count=1 <&3 >/dev/null 2>&1 || rc=1
	exec 3<&-
	[ "$rc" -eq 0 ] || { echo "# read after refused rmmod failed"; return 1; }
	rmmod idgen || { echo "# rmmod after close failed"; return 1; }
	[ ! -e /dev/idgen ] || { echo "# /dev/idgen left behind"; return 1; }
}
check "rmmod refused while the device is open, allowed after close" rmmod_while_open

# Reload: the revoke's L, given as the next lease's floor, keeps IDs above.
reload_above_floor() {
	local last first_ms id
	insmod "$module" || return 1
	"$idgenctl" lease set --region 2 --worker 3 --valid-for 60000 >/dev/null || return 1
	id=$("$idgenctl" mint -n 1000 --raw | tail -n 1) || return 1
	last=$("$idgenctl" lease revoke) || return 1
	[ $((id >> 22)) -le "$last" ] || { echo "# revoke L=$last below ms of $id"; return 1; }
	rmmod idgen && insmod "$module" || return 1
	# Push the floor well past the clock, within the lead bound.
	last=$((last + 300))
	"$idgenctl" lease set --region 2 --worker 3 --floor "$last" --valid-for 60000 >/dev/null || return 1
	id=$("$idgenctl" mint -n 1 --raw) || return 1
	first_ms=$((id >> 22))
	echo "# floor $last, first ms after reload $first_ms"
	[ "$first_ms" -gt "$last" ]
}
check "after a reload, the first ID is above the new lease's floor" reload_above_floor
"$idgenctl" lease revoke >/dev/null 2>&1

# The netlink spec drives the live module through the kernel's ynl tool
# (tests/netlink-spec.sh extracts it into build/ynl).
ynl_spec() {
	local ynl="/usr/bin/python3 $top/build/ynl/tools/net/ynl/cli.py --no-schema --spec $top/Documentation/netlink/specs/idgen.yaml"
	local out
	[ -f "$top/build/ynl/tools/net/ynl/cli.py" ] || { echo "# no build/ynl"; return 1; }
	"$idgenctl" lease set --region 3 --worker 33 --valid-for 60000 >/dev/null || return 1
	out=$($ynl --do get-state) || return 1
	echo "$out" | grep -q "'region': 3," && echo "$out" | grep -q "'worker': 33," &&
		echo "$out" | grep -q "'flags': {'leased'}" || { echo "$out" | sed 's/^/# /'; return 1; }
	# Out of range: refused with the policy in the extended ack.
	out=$($ynl --do set-config --json '{"fence-near-ms": 0}' 2>&1)
	echo "$out" | grep -q "integer out of range" || { echo "$out" | sed 's/^/# /'; return 1; }
	$ynl --do set-config --json '{"fence-near-ms": 5000}' >/dev/null || return 1
	$ynl --do get-state | grep -q "'fence-near-ms': 5000," || return 1
	$ynl --do set-config --json '{"fence-near-ms": 60000}' >/dev/null &&
		"$idgenctl" lease revoke >/dev/null
}
check "the netlink spec drives the module through ynl" ynl_spec

# libidgen and idgenctl against the real device.
"$top/tests/libidgen/guest-mint.sh" "$module" || status=1

# Destructive: steps this guest's wall clock.
"$top/tests/selftests/clock_steps" || status=1

# Netlink: state, events (clock steps among them), permissions, bad
# messages, and an unload under a listener (it reloads the module).
IDGEN_MODULE="$module" "$top/tests/selftests/netlink_test" || status=1

# Destructive: sets the clock to 2095 and leaves the generator at the end
# of the time field, so it runs last, before the module goes.
"$top/tests/selftests/time_end" || status=1

check "rmmod at the end" rmmod idgen
exit "$status"

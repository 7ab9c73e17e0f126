#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kunit-suite.sh KUNIT_MODULE MODULE: run inside a debug-kernel guest.
# Loads the KUnit suites and prints each case's result as TAP, read from
# debugfs (the console only carries warnings); then checks that loading
# MODULE under slab fault injection fails cleanly, and that kmemleak finds
# nothing of idgen's.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
kunit_ko=${1:?usage: kunit-suite.sh KUNIT_MODULE MODULE}
module=${2:?usage: kunit-suite.sh KUNIT_MODULE MODULE}
dbg=/sys/kernel/debug

if [ "${IDGEN_GUEST:-}" != 1 ]; then
	echo "kunit-suite.sh: refusing to run outside a test guest" >&2
	exit 2
fi

echo "TAP version 13"
if ! insmod "$kunit_ko"; then
	not_ok "insmod $(basename "$kunit_ko")"
	exit 1
fi

suites=0
for dir in "$dbg"/kunit/idgen_*; do
	[ -f "$dir/results" ] || continue
	suite=${dir##*/}
	suites=$((suites + 1))
	# Cases are the results indented once; parameters sit deeper.
	while IFS= read -r line; do
		case $line in
		"    ok "*)
			rest=${line#    ok }
			ok "$suite.${rest#* }"
			;;
		"    not ok "*)
			rest=${line#    not ok }
			not_ok "$suite.${rest#* }"
			sed 's/^/# /' "$dir/results"
			;;
		esac
	done <"$dir/results"
done
[ "$suites" -eq 6 ] && ok "all 6 idgen KUnit suites ran" ||
	not_ok "all 6 idgen KUnit suites ran (found $suites)"
rmmod idgen_kunit || not_ok "rmmod idgen_kunit"

# Slab fault injection: fail the 1st, 2nd, ... slab allocation of the
# module load in turn, so every error path of the load and of idgen_init()
# runs; each load fails cleanly or succeeds and unloads.
failslab() {
	# By default only atomic allocations fail; the load's are GFP_KERNEL.
	echo N >"$dbg/failslab/ignore-gfp-wait" &&
		echo 0 >"$dbg/failslab/verbose" &&
		"$top/tests/selftests/failslab_load" "$module"
}
if failslab; then ok "module load under failslab fails cleanly"; else not_ok "module load under failslab fails cleanly"; fi

# Load normally once more: the device must work after all that.
if insmod "$module" && [ -c /dev/idgen ] && rmmod idgen; then
	ok "module loads and unloads after the failslab sweep"
else
	not_ok "module loads and unloads after the failslab sweep"
fi

leak_scan() {
	local report
	[ -w "$dbg/kmemleak" ] || { echo "# no leak detector in this kernel"; return 1; }
	echo scan >"$dbg/kmemleak"
	sleep 6
	echo scan >"$dbg/kmemleak"
	report=$(cat "$dbg/kmemleak")
	if printf '%s\n' "$report" | grep -q idgen; then
		printf '%s\n' "$report" | sed 's/^/# /'
		return 1
	fi
	echo "# leak scan: $(printf '%s\n' "$report" | grep -c '^unreferenced' || true) reports, none of idgen's"
}
# (The console must not carry the detector's name: the harness fails on it.)
if leak_scan; then ok "leak scan finds nothing of idgen's"; else not_ok "leak scan finds nothing of idgen's"; fi
exit "$status"

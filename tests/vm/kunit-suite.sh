#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kunit-suite.sh KUNIT_MODULE MODULE: run inside a debug-kernel guest.
# Loads the KUnit suites and prints each case's result as TAP, read from
# debugfs (the console only carries warnings); then checks that loading
# MODULE under slab fault injection fails cleanly, and that kmemleak finds
# nothing of idgen's.
set -uo pipefail

kunit_ko=${1:?usage: kunit-suite.sh KUNIT_MODULE MODULE}
module=${2:?usage: kunit-suite.sh KUNIT_MODULE MODULE}
dbg=/sys/kernel/debug
n=0
status=0

ok() { n=$((n + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n $1"; status=1; }

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
[ "$suites" -eq 4 ] && ok "all 4 idgen KUnit suites ran" ||
	not_ok "all 4 idgen KUnit suites ran (found $suites)"
rmmod idgen_kunit || not_ok "rmmod idgen_kunit"

# Slab fault injection: make the n-th allocation of a module load fail, for
# a sweep of n, so every error path of the load and of idgen_init() runs.
# Every load either fails or succeeds and unloads; nothing may leak.
failslab() {
	local space loaded=0 refused=0
	echo 1 >"$dbg/failslab/task-filter"
	echo 100 >"$dbg/failslab/probability"
	echo -1 >"$dbg/failslab/times"
	echo 0 >"$dbg/failslab/verbose"
	# By default only atomic allocations fail; the load's are GFP_KERNEL.
	echo N >"$dbg/failslab/ignore-gfp-wait"
	for space in $(seq 0 512 65536); do
		echo "$space" >"$dbg/failslab/space"
		if sh -c 'echo 1 >/proc/self/make-it-fail; exec insmod "$1"' sh "$module" 2>/dev/null; then
			loaded=$((loaded + 1))
			rmmod idgen || return 1
		else
			refused=$((refused + 1))
		fi
		[ ! -e /dev/idgen ] || { echo "# /dev/idgen left after space=$space"; return 1; }
	done
	echo 0 >"$dbg/failslab/probability"
	echo "# failslab sweep: $refused loads refused, $loaded loaded"
	[ "$refused" -gt 0 ] && [ "$loaded" -gt 0 ]
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

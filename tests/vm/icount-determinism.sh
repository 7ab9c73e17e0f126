#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# icount-determinism.sh KVER: the instruction counts of the benchmark are
# exact, or they are worth nothing as a measure.  Counts the benchmark's
# calls twice (scripts/bench/icount.sh, 200 calls per measure, two boots of
# KVER) and fails if a per-call mode differs between the runs, for the
# total, the kernel's or the user's instructions.  Equal modes prove
# nothing if they are not counts of what ran (a plugin that counts
# nothing is perfectly repeatable): the first run's counts must also look
# like what bench/idgen_bench.c runs.  Prints TAP.
#
# The kernel's UUID (pread of /proc/sys/kernel/random/uuid) is shown but
# not compared: its count varies from call to call by a few instructions
# (no value holds even half of the calls), so its mode may move.  A
# measure with two paths of about equal weight is compared by its
# minimum (modes(), below).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
kver=${1:?usage: icount-determinism.sh KVER}
calls=${IDGEN_ICOUNT_CALLS:-200}
work=build/icount-determinism
# Tags that are not compared (bench/idgen_bench.c): the kernel's UUID.
not_compared=" 5 "

mkdir -p build
echo "TAP version 13"
echo "1..4"
n=0
runs_ok=1
for run in 1 2; do
	n=$((n + 1))
	if scripts/bench/icount.sh --calls "$calls" "$kver" "$work/$run" >"$work-$run.log" 2>&1; then
		echo "ok $n - count run $run of the benchmark's calls on $kver"
	else
		sed 's/^/# /' "$work-$run.log" | tail -n 30
		echo "not ok $n - count run $run of the benchmark's calls on $kver"
		runs_ok=
	fi
done

n=$((n + 1))
if [[ -z $runs_ok ]]; then
	echo "not ok $n - per-call modes identical in both runs (a run failed)"
	echo "not ok $((n + 1)) - the counts are of what ran (a run failed)"
	exit 1
fi
# tag, calls, mode, kernel mode, user mode; and the measure's name.  A
# measure whose mode holds less than 60% of its calls has two paths of
# about equal weight (a 64-ID read crossing a millisecond's sequence, or
# not, in about half of its calls): which one wins the mode is chance, so
# its minimum (the cheaper path, exact in every run) stands for it, as
# "min", in both runs alike when it is so in either.
two_paths=" $(awk -F'\t' '$1 == "C" && $11 * 10 < $3 * 6 { print $2 }' \
	"$work/1/counts.txt" "$work/2/counts.txt" 2>/dev/null | sort -u | tr '\n' ' ')"
modes() {
	awk -F'\t' -v two="$two_paths" '$1 == "C" {
		if (index(two, " " $2 " ") == 0) print $2, $4, $6, $8
		else print $2, "min" $5, "min" $7, "min" $9
	}' "$work/$1/counts.txt"
}
names=$(grep -a '^ICOUNT-TAG ' "$work/1/console.log" | cut -d' ' -f2,5-)
differ=0 compared=0
while read -r tag m1 k1 u1; do
	name=$(awk -v t="$tag" '$1 == t { $1 = ""; print substr($0, 2) }' <<<"$names")
	read -r _ m2 k2 u2 < <(modes 2 | awk -v t="$tag" '$1 == t')
	line="$name: run 1 $m1 ($k1 kernel, $u1 user), run 2 ${m2:-none} (${k2:-?} kernel, ${u2:-?} user)"
	if [[ $not_compared == *" $tag "* ]]; then
		echo "# not compared: $line"
	elif [[ $m1 == "${m2:-}" && $k1 == "${k2:-}" && $u1 == "${u2:-}" ]]; then
		echo "# same: $line"
		compared=$((compared + 1))
	else
		echo "# DIFFERS: $line"
		differ=$((differ + 1))
	fi
done < <(modes 1)
# Every measure of the second run was in the first.
if [[ $(modes 1 | wc -l) != "$(modes 2 | wc -l)" ]]; then
	echo "# the runs counted different sets of measures"
	differ=$((differ + 1))
fi
rc=0
if ((differ == 0 && compared >= 10)); then
	echo "ok $n - per-call modes (or, of two equal paths, minimums) identical in both runs ($compared measures)"
else
	echo "not ok $n - per-call modes identical in both runs ($differ differ, $compared compared)"
	rc=1
fi

# Counts of what ran (tags of bench/idgen_bench.c): the markers alone are
# the begin marker, one user instruction; each system call (2-5, 10-15)
# runs kernel and user instructions; the in-process generators (20, 21)
# never enter the kernel; a compared mode is what a third of the calls or
# more counted (one of two paths of equal weight holds about half), not a
# value a few of them happened to share.
n=$((n + 1))
wrong=$(awk -F'\t' -v not_compared="$not_compared" '
	$1 != "C" { next }
	{ tag = $2; calls = $3; mode = $4; kmode = $6; umode = $8; at_mode = $11; seen[tag] = 1 }
	tag == 1 && (mode != 1 || kmode != 0 || umode != 1) {
		printf "# the markers alone: %d instructions (%d kernel, %d user), not 1 user one\n", mode, kmode, umode
	}
	((tag >= 2 && tag <= 5) || (tag >= 10 && tag <= 15)) && (kmode == 0 || umode == 0) {
		printf "# tag %d, a system call: %d kernel and %d user instructions\n", tag, kmode, umode
	}
	(tag == 20 || tag == 21) && kmode != 0 {
		printf "# tag %d, in-process: %d kernel instructions\n", tag, kmode
	}
	index(not_compared, " " tag " ") == 0 && 3 * at_mode < calls {
		printf "# tag %d: its mode %d counted by %d of %d calls only\n", tag, mode, at_mode, calls
	}
	END {
		split("1 2 3 4 10 11 12 13 14 15 20 21", want, " ")
		for (i in want)
			if (!(want[i] in seen))
				printf "# tag %d: no count\n", want[i]
	}
' "$work/1/counts.txt")
if [[ -z $wrong ]]; then
	echo "ok $n - the counts are of what ran: 1 for the markers, kernel and user for each system call"
else
	echo "$wrong"
	echo "not ok $n - the counts are of what ran: 1 for the markers, kernel and user for each system call"
	rc=1
fi
exit "$rc"

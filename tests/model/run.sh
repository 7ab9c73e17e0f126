#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh [--matrix]: spin over the lease protocol's model (lease.pml), as
# TAP.
#   - the protocol, each configuration searched exhaustively: no
#     assertion may fail; the state count is printed
#   - every mutant (a fix or rule reverted): spin must find a duplicate ID;
#     its trail is kept in build/model/<mutant>/ and the end of its
#     replay printed
#   - with --matrix, a bitstate search of the default configuration
# README.md in this directory says what the model holds and why.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=$top/build/model
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"

model=$here/lease.pml
matrix=0
case ${1:-} in
--matrix) matrix=1 ;;
"") ;;
*) echo "usage: $0 [--matrix]" >&2; exit 2 ;;
esac
# COLLAPSE: exact, compressed state storage.  SAFETY: assertions only.
cflags=(-O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM=8192)

echo "TAP version 13"
if ! command -v spin >/dev/null; then
	not_ok "spin is installed (Debian package spin; scripts/deps.sh)"
	echo "1..$n"
	exit 1
fi

# verifier DIR DEFINES...: build pan for the model in DIR.
verifier() {
	local dir=$1
	shift
	rm -rf "$dir" && mkdir -p "$dir" && cp "$model" "$dir/lease.pml" &&
		(cd "$dir" && spin -a "$@" lease.pml >spin.log 2>&1 &&
			gcc "${cflags[@]}" -o pan pan.c >gcc.log 2>&1)
}

# summary LOG: the verifier's figures, one line.
summary() {
	local states depth mem secs
	states=$(awk '/states, stored/ { print $1; exit }' "$1")
	depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$1" | head -n 1)
	mem=$(awk '/total actual memory usage/ { print $1; exit }' "$1")
	secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\).*/\1/p' "$1" | head -n 1)
	echo "$states states, depth $depth, $mem MB, $secs s"
}

# protocol DIR NAME DEFINES...: the model must hold, every state searched.
protocol() {
	local dir=$out/$1 name=$2 log
	shift 2
	log=$dir/pan.log
	if ! verifier "$dir" "$@"; then
		not_ok "model, $name: builds"
		cat "$dir"/*.log 2>/dev/null | sed 's/^/# /'
		return
	fi
	(cd "$dir" && ./pan -m3000000 >"$log" 2>&1)
	if grep -q 'errors: 0' "$log" && ! grep -qE 'max search depth too small|out of memory|hash table is full' "$log" &&
		! [ -e "$dir/lease.pml.trail" ]; then
		ok "model, $name: no duplicate ID in any run ($(summary "$log"))"
	else
		not_ok "model, $name: no duplicate ID in any run"
		sed 's/^/# /' "$log" | head -n 40
		[ -e "$dir/lease.pml.trail" ] &&
			(cd "$dir" && spin -t -p "$@" lease.pml 2>&1 | tail -n 60 | sed 's/^/# /')
	fi
}

# bitstate DIR NAME DEFINES...: a bitstate (supertrace) search, 2^33 bits
# (1 GiB) and 3 hashes, for at most IDGEN_MODEL_SECONDS (default 1200): no
# assertion may fail in what it reached.  It proves nothing of what it did
# not reach: the line gives the states it stored and spin's hash factor
# (above 100, few states were lost to collisions; near 1, coverage is
# poor) and says whether the search ran out of time.
bitstate() {
	local dir=$out/$1 name=$2 log hf rc
	shift 2
	log=$dir/pan.log
	if ! (verifier "$dir" "$@" && cd "$dir" &&
		gcc -O2 -w -DSAFETY -DBITSTATE -DMEMLIM=8192 -o pan pan.c >gcc.log 2>&1); then
		not_ok "model, $name, bitstate: builds"
		cat "$dir"/*.log 2>/dev/null | sed 's/^/# /'
		return
	fi
	(cd "$dir" && timeout -s INT "${IDGEN_MODEL_SECONDS:-1200}" ./pan -w33 -k3 -m10000000 >"$log" 2>&1)
	rc=$?
	hf=$(sed -n 's/.*hash factor: *\([0-9.e+]*\).*/\1/p' "$log" | head -n 1)
	if ! grep -qE 'assertion violated|max search depth too small|out of memory' "$log" &&
		! [ -e "$dir/lease.pml.trail" ] &&
		{ [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; }; then
		ok "model, $name, bitstate: no duplicate ID in what it reached ($(summary "$log"), hash factor ${hf:-not reported}$([ "$rc" -eq 124 ] && echo ", stopped at the time limit: partial"))"
	else
		not_ok "model, $name, bitstate: no duplicate ID in what it reached"
		sed 's/^/# /' "$log" | head -n 40
	fi
}

# mutant NAME DEPTH DEFINES...: spin must find a duplicate ID and a
# trail; DEPTH bounds the search, so that the short counterexamples come
# first.
mutant() {
	local name=$1 depth=$2 dir=$out/$1 log
	shift 2
	log=$dir/pan.log
	if ! verifier "$dir" "-DMUTANT_$name" "$@"; then
		not_ok "mutant $name: builds"
		cat "$dir"/*.log 2>/dev/null | sed 's/^/# /'
		return
	fi
	(cd "$dir" && ./pan "-m$depth" >"$log" 2>&1)
	if grep -q 'assertion violated' "$log" && [ -e "$dir/lease.pml.trail" ]; then
		ok "mutant $name: spin finds a duplicate ID (trail: ${dir#"$top"/}/lease.pml.trail)"
		(cd "$dir" && spin -t -p "-DMUTANT_$name" "$@" lease.pml >replay.txt 2>&1)
		grep -E '^spin: |assertion violated' "$log" | head -n 2 | sed 's/^/#   /'
		echo "#   the end of its replay (spin -t -p): steps of daemons, etcd and generators"
		grep -E '^ *[0-9]+:.*\[(pc = |mvu\[h\] = |last\[(h|hh|[0-9])\] = |ww = |wg = |wm = |rvu\[|now = |off\[|restarts = |assert)' \
			"$dir/replay.txt" | tail -n 25 | sed 's/^/#     /'
	else
		not_ok "mutant $name: spin finds a duplicate ID"
		sed 's/^/# /' "$log" | head -n 40
	fi
}

mkdir -p "$out"

# The protocol.  Each line is one exhaustive search of 3 hosts (two
# sharing an owner name) and 2 worker numbers; README.md gives the state
# counts and says why the bounds are what they are.
protocol zombies "zombies, expiry, lost answers (T=2)" -DT=2 -DRESTARTS=0 -DNO_LATE -DNO_STEPS
protocol late "late and duplicate deliveries (T=1)" -DT=1 -DRESTARTS=0 -DNO_STEPS
protocol restarts "2 restarts: idgend restarts and reboots (T=1)" -DT=1 -DRESTARTS=2 -DNO_LATE -DNO_STEPS
# Clock steps, the commonest real hazard (a time daemon stepping at boot or
# after a suspend), with expiry and zombies: the two hosts that share an
# owner name, which is where ownership is hardest to tell apart.
protocol steps "clock steps, 2 hosts of one owner name (T=2)" -DNH=2 -DT=2 -DRESTARTS=0 -DNO_LATE

# The default configuration (3 hosts, T=5, restarts, late deliveries and
# clock steps all on) is far past an exhaustive search: with --matrix, a
# bitstate search of it, its coverage said as spin reports it.
if [ "$matrix" = 1 ]; then
	bitstate default "everything on (T=5, 2 restarts, late writes, clock steps)"
fi

# The mutants, each in the smallest configuration that shows it.
mutant NAME_ONLY 3000000 -DT=1 -DRESTARTS=0 -DNO_LATE -DNO_STEPS
mutant FLOOR_ZERO 3000000 -DT=1 -DRESTARTS=0 -DNO_LATE -DNO_STEPS
mutant PUSH_UNCONFIRMED 200 -DT=2 -DRESTARTS=0 -DNO_LATE
mutant BLIND_RENEW 200 -DT=2 -DRESTARTS=0 -DNO_LATE
mutant NO_FLOOR_WAIT 3000000 -DT=2 -DRESTARTS=0 -DNO_LATE -DNO_STEPS
mutant NO_FENCE 3000000 -DT=1 -DRESTARTS=0 -DNO_LATE -DNO_STEPS

echo "1..$n"
exit "$status"

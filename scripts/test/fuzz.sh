#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fuzz.sh [--seed S] [--calls N] [--seconds T] [--trinity N] [--kernel KVER]:
# the full fuzz run of idgen.ko (`make fuzz`): builds the module for the
# installed 6.12 kernel (or KVER) and tests/fuzz/kfuzz, then boots a guest
# and runs tests/vm/fuzz-suite.sh there: N calls of kfuzz (default 10^6)
# and N syscalls of trinity (default 10^5), seed S (default 1).  Any kernel
# splat on the guest's console fails the run (tests/vm/run-guest.sh).
# Prints TAP; the console log is kept in build/logs/fuzz-KVER.log.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
seed=1 calls=1000000 seconds=0 trinity=100000 kver=
while [ $# -gt 0 ]; do
	case ${1:-} in
	--seed) seed=$2 ;;
	--calls) calls=$2 ;;
	--seconds) seconds=$2 ;;
	--trinity) trinity=$2 ;;
	--kernel) kver=$2 ;;
	*) echo "usage: $0 [--seed S] [--calls N] [--seconds T] [--trinity N] [--kernel KVER]" >&2; exit 2 ;;
	esac
	shift 2
done
if [ -z "$kver" ]; then
	kver=$(tests/vm/kernels.sh | grep '^6\.12\.' | tail -n 1) || true
	[ -n "$kver" ] || { echo "fuzz.sh: no installed 6.12 kernel (scripts/deps.sh installs it)" >&2; exit 1; }
fi
command -v trinity >/dev/null || { echo "fuzz.sh: trinity is not installed (scripts/deps.sh)" >&2; exit 1; }

scripts/build/build-module.sh "$kver" >/dev/null
make -s -C tests/fuzz
mkdir -p build/logs
# 10^6 calls take minutes under TCG; trinity's share is bounded by -N.
exec tests/vm/run-guest.sh --timeout 7200 --log "build/logs/fuzz-$kver.log" "$kver" \
	tests/vm/fuzz-suite.sh --seed "$seed" --calls "$calls" --seconds "$seconds" \
	--trinity "$trinity" "build/$kver/kmod/idgen.ko"

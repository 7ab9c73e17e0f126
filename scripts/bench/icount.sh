#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# icount.sh: count the instructions of the benchmark's calls in a guest.
#
#   scripts/bench/icount.sh [--calls N] [--profile] KVER OUTDIR
#
# Boots KVER with one vCPU, a fixed CPU model (qemu64) and nokaslr, and
# the plugin bench/icount/icount.so; inside, loads build/KVER/kmod/idgen.ko,
# sets a lease and runs `bench/idgen_bench --icount N` (N calls per
# measure, default 1000).  Leaves in OUTDIR:
#   counts.txt   the plugin's counts (bench/icount/icount.c says the format)
#   console.log  the guest's console: the ICOUNT-TAG and ICOUNT-ENV lines
#   kallsyms     with --profile, the guest's text symbols (the same every
#                boot with nokaslr), to name the blocks the 1- and 512-ID
#                reads and the 8-byte /dev/zero read ran
# bench/icount/report.sh OUTDIR turns them into the report.  Counts do not
# depend on the host's speed or load: the same kernel, module and
# benchmark give the same per-call modes.  Run as root; builds what it runs.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

# Change these and the counts change: they are printed with the results.
ICOUNT_CPU=qemu64
ICOUNT_APPEND=nokaslr

calls=1000
profile=
while (($#)); do
	case $1 in
	--calls) calls=$2 && shift 2 ;;
	--profile) profile=1 && shift ;;
	-*) echo "usage: $0 [--calls N] [--profile] KVER OUTDIR" >&2 && exit 2 ;;
	*) break ;;
	esac
done
(($# == 2)) || { echo "usage: $0 [--calls N] [--profile] KVER OUTDIR" >&2; exit 2; }
kver=$1 out=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)

scripts/build/build-module.sh "$kver" >/dev/null
make -s -C helper/idgenctl
make -s -C bench idgen_bench icount

plugin="$top/bench/icount/icount.so,out=$out/counts.txt"
dump=:
if [[ -n $profile ]]; then
	# The tags of the 8-byte /dev/zero read and the 1- and 512-ID reads.
	plugin+=",profile=2,profile=10,profile=14"
	# Hex only, so that no symbol name looks like a kernel problem to
	# run-guest.sh's scan of the console.
	dump="echo ICOUNT-KALLSYMS-BEGIN
grep -E ' [tTwW] ' /proc/kallsyms | gzip -1 | basenc --base16 -w 120
echo ICOUNT-KALLSYMS-END"
fi
rm -f "$out/counts.txt" "$out/kallsyms"
tests/vm/run-guest.sh --timeout "${IDGEN_ICOUNT_TIMEOUT:-1800}" --smp 1 \
	--cpu "$ICOUNT_CPU" --append "$ICOUNT_APPEND" --plugin "$plugin" \
	--log "$out/console.log" "$kver" sh -c "
set -e
insmod build/$kver/kmod/idgen.ko
helper/idgenctl/idgenctl lease set --region 0 --worker 1 --valid-for 3600000 >/dev/null
bench/idgen_bench --icount $calls
$dump
" >/dev/null
[[ -s $out/counts.txt ]] || { echo "icount.sh: the plugin wrote no $out/counts.txt" >&2; exit 1; }
echo "ICOUNT-ENV qemu $(qemu-system-x86_64 --version | head -n 1), -cpu $ICOUNT_CPU, -smp 1" >>"$out/console.log"
if [[ -n $profile ]]; then
	sed -n '/^ICOUNT-KALLSYMS-BEGIN/,/^ICOUNT-KALLSYMS-END/p' "$out/console.log" |
		grep -aE '^[0-9A-F]+$' | basenc -d --base16 | gzip -dc >"$out/kallsyms"
fi

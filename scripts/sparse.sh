#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# sparse.sh KERNEL: run sparse (C=2) over the module built for KERNEL (an
# installed release or a matrix name, as for build-module.sh); any sparse
# report fails.  A kernel with a build root uses that suite's sparse.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kver=${1:?usage: sparse.sh KVER}
out=$top/build/sparse-$kver

rm -rf "$out"
mkdir -p "$out"
cp -r "$top/Kbuild" "$top/kmod" "$top/include" "$out/"
log=$out/sparse.log
"$top/scripts/kmake.sh" "$kver" "$out" C=2 W=1 modules >"$log" 2>&1 ||
	{ cat "$log" >&2; exit 1; }
grep -c '^  CHECK' "$log" >/dev/null || { echo "sparse.sh: sparse did not run" >&2; exit 1; }

# PREEMPT_RT kernels before 6.2 declare rt_spin_lock() and rt_spin_unlock()
# without __acquires/__releases while spin_trylock() still counts the lock
# taken, so sparse sees a context imbalance in every correct
# "trylock or lock, then unlock" path.  With such headers, and only then,
# context imbalance reports are not counted (the same code is checked for
# them against every other kernel); everything else still fails.
eval "$("$top/scripts/kernel-env.sh" "$kver")"
common=$(sed -n 's|^include \(.*\)/Makefile$|\1|p' "$BUILDROOT$KDIR/Makefile" | head -n 1)
rt_header=$BUILDROOT${common:-$KDIR}/include/linux/spinlock_rt.h
ignore='^$'
if [ -f "$rt_header" ] &&
	grep -q '^extern void rt_spin_lock(spinlock_t \*lock);' "$rt_header"; then
	echo "sparse.sh: $kver's rt_spin_lock() has no sparse annotation: context imbalance reports not counted"
	ignore='context imbalance'
fi
if grep -E 'warning:|error:' "$log" | grep -vE "$ignore" >&2; then
	exit 1
fi
echo "sparse clean for $kver"

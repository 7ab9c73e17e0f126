#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# sparse.sh KERNEL: run sparse (C=2) over the module built for KERNEL (an
# installed release or a matrix name, as for build-module.sh); any sparse
# report fails.  A kernel with a build root uses that suite's sparse.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
kver=${1:?usage: sparse.sh KVER}
out=$top/build/sparse-$kver

rm -rf "$out"
mkdir -p "$out"
cp -r "$top/Kbuild" "$top/kmod" "$top/include" "$out/"
log=$out/sparse.log
eval "$("$top/scripts/build/kernel-env.sh" "$kver")"
# Debian's headers keep the kernel's source tree (scripts/ among it) in a
# common directory the Makefile includes.
common=$(sed -n 's|^include \(.*\)/Makefile$|\1|p' "$BUILDROOT$KDIR/Makefile" | head -n 1)
common=$BUILDROOT${common:-$KDIR}

# Since 6.15 kbuild asks scripts/checker-valid.sh whether sparse is new
# enough and quietly drops C=2 if not, but Debian's headers do not ship
# that script.  Then sparse is run regardless (KBUILD_CHECKSRC=2 on the
# command line outranks kbuild's fallback): a sparse too old for the
# kernel's headers reports errors, which fail below.
checksrc=C=2
if grep -q 'checker-valid.sh' "$common/Makefile" &&
	[ ! -e "$common/scripts/checker-valid.sh" ]; then
	echo "sparse.sh: $kver's headers lack scripts/checker-valid.sh: running sparse regardless"
	checksrc=KBUILD_CHECKSRC=2
fi
"$top/scripts/build/kmake.sh" "$kver" "$out" "$checksrc" W=1 modules >"$log" 2>&1 ||
	{ cat "$log" >&2; exit 1; }
grep -c '^  CHECK' "$log" >/dev/null || { echo "sparse.sh: sparse did not run" >&2; exit 1; }

# PREEMPT_RT 6.1 kernels declare rt_spin_lock() and rt_spin_unlock()
# without __acquires/__releases (6.12 has them) while spin_trylock() counts
# the lock taken, so sparse sees a context imbalance in every correct
# "trylock or lock, then unlock" path.  With such headers, and only then,
# context imbalance reports are not counted (the same code is checked for
# them against every other kernel); everything else still fails.
rt_header=$common/include/linux/spinlock_rt.h
ignore='^$'
if grep -q '^CONFIG_PREEMPT_RT=y' "$BUILDROOT$KDIR/.config" && [ -f "$rt_header" ] &&
	grep -q '^extern void rt_spin_lock(spinlock_t \*lock);' "$rt_header"; then
	echo "sparse.sh: $kver's rt_spin_lock() has no sparse annotation: context imbalance reports not counted"
	ignore='context imbalance'
fi
if grep -E 'warning:|error:' "$log" | grep -vE "$ignore" >&2; then
	exit 1
fi
echo "sparse clean for $kver"

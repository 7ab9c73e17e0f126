#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build-module.sh KERNEL...: build idgen.ko for each KERNEL at W=1 into
# build/KERNEL/kmod/idgen.ko; any compiler warning fails the build.  KERNEL
# is an installed kernel's release or the name of a kernel of the matrix
# (tests/vm/kernels.sh --matrix; scripts/build/kmake.sh says how each is built).
# Each kernel gets its own copy of the sources, since kbuild writes its
# objects next to them.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -gt 0 ] || { echo "usage: $0 KERNEL..." >&2; exit 1; }

for kver in "$@"; do
	out=$top/build/$kver
	"$top/scripts/build/kernel-env.sh" "$kver" >/dev/null || exit 1
	mkdir -p "$out"
	rm -rf "$out/kmod" "$out/include" "$out/VERSION"
	cp -r "$top/Kbuild" "$top/kmod" "$top/include" "$out/"
	log=$out/build.log
	if ! "$top/scripts/build/kmake.sh" "$kver" "$out" W=1 modules >"$log" 2>&1; then
		cat "$log" >&2
		echo "build-module.sh: build against $kver failed" >&2
		exit 1
	fi
	if grep -E 'warning:|error:' "$log" >&2; then
		echo "build-module.sh: build against $kver has warnings" >&2
		exit 1
	fi
	echo "built $out/kmod/idgen.ko"
done

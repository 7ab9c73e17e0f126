#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build-module.sh KVER...: build idgen.ko for each installed kernel KVER at
# W=1 into build/KVER/kmod/idgen.ko; any compiler warning fails the build.
# Each kernel gets its own copy of the sources, since kbuild writes its
# objects next to them.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || { echo "usage: $0 KVER..." >&2; exit 1; }

for kver in "$@"; do
	kdir=/lib/modules/$kver/build
	out=$top/build/$kver
	if [ ! -d "$kdir" ]; then
		echo "build-module.sh: no headers for $kver at $kdir (apt-get install linux-headers-$kver)" >&2
		exit 1
	fi
	mkdir -p "$out"
	rm -rf "$out/kmod" "$out/include"
	cp -r "$top/Kbuild" "$top/kmod" "$top/include" "$out/"
	log=$out/build.log
	if ! make -C "$kdir" M="$out" W=1 modules >"$log" 2>&1; then
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

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# sparse.sh KVER: run sparse (C=2) over the module built for KVER; any
# sparse report fails.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kver=${1:?usage: sparse.sh KVER}
out=$top/build/sparse-$kver

rm -rf "$out"
mkdir -p "$out"
cp -r "$top/Kbuild" "$top/kmod" "$top/include" "$out/"
log=$out/sparse.log
make -C "/lib/modules/$kver/build" M="$out" C=2 W=1 modules >"$log" 2>&1 ||
	{ cat "$log" >&2; exit 1; }
grep -c '^  CHECK' "$log" >/dev/null || { echo "sparse.sh: sparse did not run" >&2; exit 1; }
if grep -E 'warning:|error:' "$log" >&2; then
	exit 1
fi
echo "sparse clean for $kver"

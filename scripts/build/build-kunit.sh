#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build-kunit.sh [SUITE]: build the debug kernel if needed
# (build-debug-kernel.sh, from Debian 12's 6.12 source, or SUITE's newest
# source), then, against it, idgen.ko (build/debug/idgen.ko, or
# build/debug-SUITE/idgen.ko) and the KUnit suites linked with the
# module's objects (idgen_kunit.ko beside it).  Prints the path of the
# kernel image.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
tree=$("$top/scripts/build/build-debug-kernel.sh" ${1:+"$1"})
out=$top/build/debug${1:+-$1}

rm -rf "$out"
mkdir -p "$out/module" "$out/kunit"
# The module, as a host would build it.
cp -r "$top/Kbuild" "$top/kmod" "$top/include" "$out/module/"
# The tests: the suites and the module's objects side by side.
cp "$top/tests/kunit/Kbuild" "$out/kunit/"
cp -r "$top/kmod" "$top/include" "$out/kunit/"
mkdir -p "$out/kunit/kunit"
cp "$top"/tests/kunit/*.c "$out/kunit/kunit/"

for d in module kunit; do
	log=$out/$d.log
	if ! make -C "$tree" M="$out/$d" W=1 modules >"$log" 2>&1 ||
	   grep -E 'warning:|error:' "$log" >&2; then
		cat "$log" >&2
		echo "build-kunit.sh: building $d against the debug kernel failed" >&2
		exit 1
	fi
done
ln -sf module/kmod/idgen.ko "$out/idgen.ko"
ln -sf kunit/idgen_kunit.ko "$out/idgen_kunit.ko"
echo "$tree/arch/x86/boot/bzImage"

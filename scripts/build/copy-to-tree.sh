#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# copy-to-tree.sh TREE: put idgen into the kernel source tree TREE where a
# kernel maintainer would find it: kmod/ as drivers/misc/idgen/ (with its
# Kconfig, Kbuild and .kunitconfig), the KUnit suites tests/kunit/*_test.c
# as drivers/misc/idgen/tests/, the uapi header as
# include/uapi/linux/idgen.h, and drivers/misc/Kconfig and Makefile naming
# the directory.  What an earlier copy put in drivers/misc/idgen/ and
# idgen no longer has goes; a file whose bytes are the same keeps its
# time; the two lines in drivers/misc/ are added once.  Then, in TREE:
#
#   make menuconfig                  Device Drivers > Misc devices > idgen
#   tools/testing/kunit/kunit.py run --kunitconfig=drivers/misc/idgen
#
# scripts/build/intree.sh does both on Debian's kernel source.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
tree=${1:?usage: copy-to-tree.sh KERNEL-SOURCE-TREE}
die() { echo "copy-to-tree.sh: $*" >&2; exit 1; }
for f in Makefile drivers/misc/Kconfig drivers/misc/Makefile include/uapi/linux; do
	[ -e "$tree/$f" ] || die "$tree is not a kernel source tree (no $f)"
done

# Every suite must be linked in a kernel tree too: one that kmod/Kbuild
# does not name would be copied and never run.
for t in "$top"/tests/kunit/*_test.c; do
	o=tests/$(basename "$t" .c).o
	grep -qF "$o" "$top/kmod/Kbuild" ||
		die "kmod/Kbuild does not link $o (tests/kunit/$(basename "$t"))"
done

# put FILE DEST: FILE as DEST, leaving DEST alone when it has the same
# bytes: a Kconfig or header with a new time makes kbuild reconfigure, and
# UML then rebuild the whole kernel.
put() { cmp -s "$1" "$2" || cp "$1" "$2"; }

dst=$tree/drivers/misc/idgen
mkdir -p "$dst/tests"
# The module's sources only, not what an out-of-tree build left beside
# them; and nothing an earlier copy had that kmod/ no longer has.
want=()
for f in "$top"/kmod/*.[ch] "$top"/kmod/*.mk "$top"/kmod/Kbuild \
	 "$top"/kmod/Kconfig "$top"/kmod/.kunitconfig; do
	case $f in
	*.mod.c) continue ;;
	esac
	put "$f" "$dst/${f##*/}"
	want+=("$dst/${f##*/}")
done
for f in "$top"/tests/kunit/*_test.c; do
	put "$f" "$dst/tests/${f##*/}"
	want+=("$dst/tests/${f##*/}")
done
find "$dst" -type f | while IFS= read -r f; do
	case " ${want[*]} " in
	*" $f "*) ;;
	*) rm -f "$f" ;;
	esac
done
put "$top/include/uapi/linux/idgen.h" "$tree/include/uapi/linux/idgen.h"

if ! grep -qx 'source "drivers/misc/idgen/Kconfig"' "$tree/drivers/misc/Kconfig"; then
	# Before the menu's end, the last line that closes one.
	last=$(grep -n '^endmenu' "$tree/drivers/misc/Kconfig" | tail -n 1 | cut -d: -f1)
	[ -n "$last" ] || die "no endmenu in $tree/drivers/misc/Kconfig"
	sed -i "${last}i source \"drivers/misc/idgen/Kconfig\"" "$tree/drivers/misc/Kconfig"
fi
# shellcheck disable=SC2016 # make's $(...), not the shell's
if ! grep -qF 'obj-$(CONFIG_IDGEN)' "$tree/drivers/misc/Makefile"; then
	# shellcheck disable=SC2016 # make's $(...), not the shell's
	printf 'obj-$(CONFIG_IDGEN)\t\t+= idgen/\n' >>"$tree/drivers/misc/Makefile"
fi
echo "copied idgen into $dst"

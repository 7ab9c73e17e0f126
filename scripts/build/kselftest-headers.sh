#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest-headers.sh DIR: put the kernel's kselftest harness,
# tools/testing/selftests/kselftest.h and kselftest_harness.h, into DIR,
# from the kernel source the build already depends on (Debian's
# linux-source-6.12, scripts/deps.sh).  The selftests include them from
# there, so the tree holds only code written for idgen.
#
# LINUX_SOURCE names another tarball or an unpacked kernel tree.
set -euo pipefail

die() {
	echo "kselftest-headers.sh: $*" >&2
	exit 1
}

[ $# -eq 1 ] || die "usage: kselftest-headers.sh DIR"
out=$1
headers=(kselftest.h kselftest_harness.h)

src=${LINUX_SOURCE:-}
if [ -z "$src" ]; then
	src=/usr/src/linux-source-6.12.tar.xz
	[ -e "$src" ] || die "no $src: apt-get install linux-source-6.12 (or set LINUX_SOURCE)"
fi

mkdir -p "$out"
tmp=$(mktemp -d "$out/.extract.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if [ -d "$src" ]; then
	for h in "${headers[@]}"; do
		cp "$src/tools/testing/selftests/$h" "$tmp/" ||
			die "$src has no tools/testing/selftests/$h"
	done
else
	top=$(basename "$src" .tar.xz)
	members=()
	for h in "${headers[@]}"; do
		members+=("$top/tools/testing/selftests/$h")
	done
	tar -xJf "$src" -C "$tmp" --strip-components=4 "${members[@]}" ||
		die "cannot extract ${headers[*]} from $src"
fi

# Renamed into place only when both arrived, so a failed run leaves no
# half set that make would take as up to date.
for h in "${headers[@]}"; do
	[ -s "$tmp/$h" ] || die "$h is empty or missing in $src"
done
for h in "${headers[@]}"; do
	mv -f "$tmp/$h" "$out/$h"
done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# linux-scripts.sh: the kernel's own checkers (scripts/checkpatch.pl and
# the files it reads, scripts/kernel-doc) from Debian's linux-source
# tarball, extracted once into a cache.  Prints the folder that holds
# scripts/.
set -euo pipefail

cache=${IDGEN_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/idgen}/linux-scripts
files=(scripts/checkpatch.pl scripts/spelling.txt scripts/const_structs.checkpatch
       scripts/kernel-doc)
missing=0
for f in "${files[@]}"; do
	[ -e "$cache/$f" ] || missing=1
done
if [ $missing = 1 ]; then
	tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$tarball" ]; then
		echo "linux-scripts.sh: no /usr/src/linux-source-*.tar.xz: apt-get install linux-source" >&2
		exit 1
	fi
	top=$(basename "$tarball" .tar.xz)
	mkdir -p "$cache"
	tar -xJf "$tarball" -C "$cache" --strip-components=1 "${files[@]/#/$top/}"
fi
echo "$cache"

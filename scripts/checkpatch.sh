#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# checkpatch.pl --strict over the given files.  checkpatch.pl ships in
# Debian's linux-source tarball; it is extracted once into a cache.
set -euo pipefail

cache=${IDGEN_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/idgen}/checkpatch
if [ ! -x "$cache/scripts/checkpatch.pl" ]; then
	tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$tarball" ]; then
		echo "checkpatch.sh: no /usr/src/linux-source-*.tar.xz: apt-get install linux-source" >&2
		exit 1
	fi
	top=$(basename "$tarball" .tar.xz)
	mkdir -p "$cache"
	tar -xJf "$tarball" -C "$cache" --strip-components=1 \
		"$top/scripts/checkpatch.pl" "$top/scripts/spelling.txt" \
		"$top/scripts/const_structs.checkpatch"
fi

exec "$cache/scripts/checkpatch.pl" --strict --no-tree --terse --show-types \
	--ignore FILE_PATH_CHANGES -f "$@"

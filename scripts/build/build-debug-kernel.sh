#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build-debug-kernel.sh [SUITE]: build the KUnit/debug kernel from
# Debian's kernel source: tinyconfig plus tests/kunit/debug.config.  By
# default the source is Debian 12's linux-source-6.12 (installed by
# scripts/deps.sh); with SUITE (trixie, sid) it is that suite's newest
# linux-source-X.Y, downloaded by scripts/build/fetch-kernels.sh --source
# (scripts/build/kernel-source.sh says which).  The tree is cached outside
# the repository, keyed by the source version and a hash of the fragment,
# so a machine builds it once.  Prints the tree's path.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
frag=$top/tests/kunit/debug.config
src=$("$top/scripts/build/kernel-source.sh" ${1:+"$1"})
tarball=$(sed -n 1p <<<"$src")
srcver=$(sed -n 2p <<<"$src")
key=$(printf '%s\n' "$srcver" | cat - "$frag" | sha256sum | cut -c1-16)
cache=${IDGEN_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/idgen}/debug-kernel
tree=$cache/$key

if [ -f "$tree/.idgen-built" ]; then
	echo "$tree"
	exit 0
fi

rm -rf "$tree"
mkdir -p "$tree"
echo "build-debug-kernel.sh: building $srcver with $(basename "$frag") in $tree (about 10 min)" >&2
tar -xJf "$tarball" -C "$tree" --strip-components=1
(
	cd "$tree"
	make -s tinyconfig
	scripts/kconfig/merge_config.sh -m -O . .config "$frag" >/dev/null
	make -s olddefconfig
	# A symbol whose dependencies are missing is dropped silently: check.
	missing=0
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*)
			grep -qx "$line" .config || { echo "build-debug-kernel.sh: $line did not stick" >&2; missing=1; }
			;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }; sym=${sym%% *}
			! grep -q "^$sym=" .config || { echo "build-debug-kernel.sh: $sym is set" >&2; missing=1; }
			;;
		esac
	done <"$frag"
	[ "$missing" -eq 0 ]
	make -s -j"$(nproc)" bzImage modules
) >&2
touch "$tree/.idgen-built"
echo "$tree"

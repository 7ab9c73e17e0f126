#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kernel-source.sh [SUITE]: the Debian kernel source the tree builds kernels
# from, as two lines: the tarball's path, then the source package's
# version.  By default Debian 12's linux-source-6.12 (installed by
# scripts/deps.sh); with SUITE (trixie, sid) that suite's newest
# linux-source-X.Y, downloaded by scripts/build/fetch-kernels.sh --source.
# The debug kernel (build-debug-kernel.sh) and the in-tree build
# (intree.sh) both take theirs from here.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
if [ -n "${1:-}" ]; then
	tarball=$("$top/scripts/build/fetch-kernels.sh" --source "$1")
	# .../linux-source-X.Y_VERSION/usr/src/linux-source-X.Y.tar.xz
	srcver=${tarball%/usr/src/*}
	srcver=${srcver##*/}
else
	tarball=$(ls /usr/src/linux-source-6.12.tar.xz 2>/dev/null || true)
	[ -n "$tarball" ] || { echo "kernel-source.sh: apt-get install linux-source-6.12" >&2; exit 1; }
	srcver=$(dpkg-query -W -f '${Version}' linux-source-6.12)
fi
printf '%s\n%s\n' "$tarball" "$srcver"

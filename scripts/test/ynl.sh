#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ynl.sh: extract the kernel's netlink spec tooling (tools/net/ynl and the
# Documentation/netlink schemas) from Debian's linux-source tarball into
# build/ynl, once, and print that directory.  The guests see build/, so
# tests run ynl's cli.py there against the live module.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/build/ynl
if [ ! -f "$out/.extracted" ]; then
	tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
	[ -n "$tarball" ] || { echo "ynl.sh: apt-get install linux-source-6.12" >&2; exit 1; }
	src=$(basename "$tarball" .tar.xz)
	rm -rf "$out"
	mkdir -p "$out"
	tar -xJf "$tarball" -C "$out" --strip-components=1 \
		"$src/tools/net/ynl" "$src/Documentation/netlink/genetlink-c.yaml"
	touch "$out/.extracted"
fi
echo "$out"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dkms-install.sh [KVER...]: register the module's sources with DKMS as
# /usr/src/idgen-<version>, then build and install it for each KVER (by
# default every kernel with headers, as DKMS does on its own from then on).
# dkms-install.sh --remove: take every version of idgen out of DKMS.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/dkms.conf")
src=/usr/src/idgen-$version

command -v dkms >/dev/null || { echo "dkms-install.sh: dkms is not installed (apt-get install dkms)" >&2; exit 1; }

if [ "${1:-}" = --remove ]; then
	if dkms status idgen 2>/dev/null | grep -q .; then
		dkms remove "idgen/$version" --all
	fi
	rm -rf "$src"
	exit 0
fi

# A stale registration of this version would keep its old sources.
if dkms status "idgen/$version" 2>/dev/null | grep -q .; then
	dkms remove "idgen/$version" --all
fi
rm -rf "$src"
mkdir -p "$src"
cp -r "$top/dkms.conf" "$top/Makefile" "$top/Kbuild" "$top/kmod" "$top/include" "$src/"
find "$src" \( -name '*.o' -o -name '*.ko' -o -name '*.cmd' -o -name '*.mod*' \) -delete
dkms add "idgen/$version"

if [ $# -eq 0 ]; then
	dkms autoinstall
else
	for kver in "$@"; do
		dkms build "idgen/$version" -k "$kver"
		dkms install "idgen/$version" -k "$kver"
	done
fi

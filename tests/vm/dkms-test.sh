#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dkms-test.sh KVER: install the module through DKMS for the installed
# Debian kernel KVER on this host, boot that kernel in a guest and load the
# module with modprobe from the DKMS install (its version VERSION's), then
# take it out of DKMS.
# Prints TAP.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
kver=${1:?usage: dkms-test.sh KVER}

echo "TAP version 13"
echo "1..2"
trap '"$top/scripts/build/dkms-install.sh" --remove >/dev/null 2>&1 || true' EXIT

if "$top/scripts/build/dkms-install.sh" "$kver" >"$top/build/dkms-$kver.log" 2>&1 &&
   [ -f "/lib/modules/$kver/updates/dkms/idgen.ko" ]; then
	echo "ok 1 dkms add/build/install for $kver"
else
	sed 's/^/# /' "$top/build/dkms-$kver.log"
	echo "not ok 1 dkms add/build/install for $kver"
	echo "not ok 2 modprobe idgen from the DKMS install # not run"
	exit 1
fi

# Inside the guest: modprobe must pick the DKMS copy, built with the
# tree's version (kmod/version.h: DKMS's sources have no VERSION), and the
# device must answer (ENOKEY: no lease yet).
version=$(cat "$top/VERSION")
guest_cmd='set -e
modprobe idgen
path=$(modinfo -n idgen)
echo "# modprobe loaded $path"
case $path in */updates/dkms/idgen.ko) ;; *) exit 10 ;; esac
test "$(cat /sys/module/idgen/version)" = "'"$version"'" || exit 12
test -c /dev/idgen
if dd if=/dev/idgen of=/dev/null bs=8 count=1 2>/tmp/err; then exit 11; fi
grep -q "Required key not available" /tmp/err
modprobe -r idgen
test ! -e /dev/idgen'
if "$top/tests/vm/run-guest.sh" --log "$top/build/dkms-guest-$kver.log" "$kver" \
	sh -c "$guest_cmd" >/dev/null 2>&1; then
	echo "ok 2 modprobe idgen from the DKMS install in a $kver guest"
else
	grep -v '^\[' "$top/build/dkms-guest-$kver.log" | tail -n 20 | sed 's/^/# /'
	echo "not ok 2 modprobe idgen from the DKMS install in a $kver guest"
	exit 1
fi

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# version.sh: the tree has one version, VERSION, and every place that
# states one agrees with it: dkms.conf's PACKAGE_VERSION, kmod/version.h,
# debian/changelog, `idgenctl --version`, `idgend --version`,
# `idgen-httpd --version` and its /metrics' idgen_build_info, libidgen's
# idgen.pc and libidgen-client's idgen-client.pc, and the MODULE_VERSION
# of every idgen.ko built under build/ (scripts/build/build-module.sh).
# Prints TAP.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/tap.sh disable=SC2154 # n and status are tap.sh's
. "$top/tests/lib/tap.sh"
cd "$top" || exit 1

echo "TAP version 13"
version=$(cat VERSION)
check "VERSION holds one version ($version)" \
	grep -Eqx '[0-9]+\.[0-9]+\.[0-9]+' VERSION

# same WHAT GOT: one result, saying what was found.
same() {
	if [ "$2" = "$version" ]; then
		ok "$1: $2"
	else
		not_ok "$1: '$2', VERSION has $version"
	fi
}

same "dkms.conf PACKAGE_VERSION" "$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)"
# The module's own copy, which every copy of kmod/ carries (DKMS, a kernel
# tree's drivers/misc/idgen/).
same "kmod/version.h IDGEN_VERSION" \
	"$(sed -n 's/^#define IDGEN_VERSION "\(.*\)"$/\1/p' kmod/version.h)"
same "debian/changelog" "$(dpkg-parsechangelog -S Version 2>/dev/null)"
make -s -C helper/idgenctl >/dev/null 2>&1
same "idgenctl --version" "$(helper/idgenctl/idgenctl --version 2>/dev/null | sed -n 's/^idgenctl //p')"
make -s -C helper/idgend >/dev/null 2>&1
same "idgend --version" "$(helper/idgend/idgend --version 2>/dev/null | sed -n 's/^idgend //p')"
make -s -C helper/httpd >/dev/null 2>&1
same "idgen-httpd --version" \
	"$(helper/httpd/idgen-httpd --version 2>/dev/null | sed -n 's/^idgen-httpd //p')"
# /metrics' build info, from a simulated generator (worker 121: a test's own).
log=$(mktemp)
helper/httpd/idgen-httpd --device sim:121 --clock-check no --listen 127.0.0.1:0 >"$log" 2>&1 &
pid=$!
port=
for ((t = 0; t < 100; t++)); do
	port=$(sed -n 's/.*listening on .* (port \([0-9]*\)).*/\1/p' "$log")
	[ -n "$port" ] && break
	sleep 0.1
done
same "idgen-httpd's /metrics idgen_build_info" \
	"$(curl -s --max-time 10 "http://127.0.0.1:${port:-1}/metrics" |
	   sed -n 's/^idgen_build_info{version="\([^"]*\)".*/\1/p')"
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
rm -f "$log"
make -s -C lib idgen.pc idgen-client.pc >/dev/null 2>&1
same "lib/idgen.pc" "$(sed -n 's/^Version: //p' lib/idgen.pc)"
same "lib/idgen-client.pc" "$(sed -n 's/^Version: //p' lib/idgen-client.pc)"
found=0
for ko in build/*/kmod/idgen.ko; do
	[ -f "$ko" ] || continue
	found=1
	same "MODULE_VERSION of $ko" "$(/sbin/modinfo -F version "$ko")"
done
check "an idgen.ko built under build/ to read MODULE_VERSION from" test $found = 1
echo "1..$n"
exit "$status"

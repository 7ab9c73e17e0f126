#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# compat32-suite.sh MODULE: a 32-bit (i386) process uses /dev/idgen on a
# 64-bit kernel, every ioctl through the module's compat_ioctl.  Run as
# root inside a test guest (tests/vm/run-guest.sh); build first with
# make -C tests/vm.  Prints TAP.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
module=${1:?usage: compat32-suite.sh MODULE}

if [ "${IDGEN_GUEST:-}" != 1 ]; then
	echo "compat32-suite.sh: refusing to run outside a test guest" >&2
	exit 2
fi

echo "TAP version 13"
check "insmod $(basename "$module")" insmod "$module"
# A kernel without IA32 emulation cannot run the program at all: that is
# a failure here, not a skip, since every supported kernel has it.
tap_run "i386" "$top/tests/vm/compat32"
check "rmmod at the end" rmmod idgen
exit "$status"

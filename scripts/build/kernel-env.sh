#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kernel-env.sh KERNEL: say where KERNEL's headers, image and modules are,
# as shell assignments for eval.  KERNEL is either the release of a kernel
# installed on this machine (6.1.0-57-amd64: /boot, /lib/modules) or the
# name of a matrix kernel unpacked by scripts/build/fetch-kernels.sh (sid,
# trixie-rt, bookworm-arm64, ...; tests/vm/kernels.sh --matrix lists them).
#
#   KVER       the kernel release
#   ARCH       x86_64 or arm64 (kbuild's ARCH=)
#   KDIR       the headers to build against (inside BUILDROOT, if set)
#   BUILDROOT  a root of the kernel's own Debian suite to build in (its
#              compiler is the one the kernel was built with), or empty:
#              build on this machine
#   IMAGE      the kernel image to boot, empty for a headers-only kernel
#   MODDIR     the kernel's modules (with modules.dep), empty likewise
#   MODROOT    the root MODDIR lies in (modprobe -d), / for installed ones
set -euo pipefail

cache=${IDGEN_CACHE:-$HOME/.cache/idgen}
kernel=${1:?usage: kernel-env.sh KERNEL}

if [ -f "$cache/kernels/$kernel/kernel.env" ]; then
	# shellcheck source=/dev/null
	. "$cache/kernels/$kernel/kernel.env"
	# (KVER, ARCH, KDIR, BUILDROOT, IMAGE, MODDIR, ROOT come from it.)
	printf 'KVER=%q\nARCH=%q\nKDIR=%q\nBUILDROOT=%q\nIMAGE=%q\nMODDIR=%q\nMODROOT=%q\n' \
		"$KVER" "$ARCH" "$KDIR" "${BUILDROOT:-}" "$IMAGE" "$MODDIR" "$ROOT"
elif [ -d "/lib/modules/$kernel" ]; then
	image=/boot/vmlinuz-$kernel
	[ -f "$image" ] || image=
	printf 'KVER=%q\nARCH=x86_64\nKDIR=%q\nBUILDROOT=\nIMAGE=%q\nMODDIR=%q\nMODROOT=/\n' \
		"$kernel" "/lib/modules/$kernel/build" "$image" "/lib/modules/$kernel"
else
	echo "kernel-env.sh: no kernel '$kernel': neither installed (/lib/modules/$kernel)" \
		"nor fetched ($cache/kernels/$kernel; scripts/build/fetch-kernels.sh $kernel)" >&2
	exit 1
fi

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kmake.sh KERNEL DIR [MAKE-ARG...]: build the external module tree DIR
# against KERNEL (an installed release or a matrix name, see
# scripts/build/kernel-env.sh): make -C <headers> M=DIR MAKE-ARG...
#
# An arm64 kernel is cross-built (ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-).
# A kernel with a build root (a newer Debian suite, see
# scripts/build/build-root.sh) is built inside that root with its own compiler:
# DIR is copied in, built there with /proc mounted in a private mount
# namespace (objtool reads it), and what the build wrote is copied back.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
kernel=${1:?usage: kmake.sh KERNEL DIR [MAKE-ARG...]}
dir=${2:?usage: kmake.sh KERNEL DIR [MAKE-ARG...]}
shift 2
dir=$(cd "$dir" && pwd)

env_out=$("$top/scripts/build/kernel-env.sh" "$kernel")
eval "$env_out"

args=()
if [ "$ARCH" = arm64 ]; then
	args+=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
fi

if [ -z "$BUILDROOT" ]; then
	[ -f "$KDIR/Makefile" ] || {
		echo "kmake.sh: no headers for $kernel at $KDIR" >&2
		exit 1
	}
	exec make -C "$KDIR" M="$dir" "${args[@]}" "$@"
fi

[ -f "$BUILDROOT$KDIR/Makefile" ] || {
	echo "kmake.sh: no headers for $kernel at $BUILDROOT$KDIR (scripts/build/fetch-kernels.sh $kernel)" >&2
	exit 1
}
# One staging directory per kernel and tree, so parallel builds for other
# kernels do not meet.
stage=/idgen-build/$kernel/$(printf '%s' "$dir" | sha256sum | cut -c1-12)
rm -rf "$BUILDROOT$stage"
mkdir -p "$BUILDROOT$stage"
cp -a "$dir/." "$BUILDROOT$stage/"
# Only what the build writes comes back: the caller may be writing to DIR
# meanwhile (its log).
marker=$BUILDROOT$stage.started
touch "$marker"
rc=0
# shellcheck disable=SC2016 # expanded by the inner sh
unshare --mount --propagation private sh -c '
	root=$1
	shift
	mount -t proc proc "$root/proc" && exec chroot "$root" "$@"
' kmake "$BUILDROOT" make -C "$KDIR" M="$stage" "${args[@]}" "$@" || rc=$?
(cd "$BUILDROOT$stage" && find . -newer "$marker" ! -type d -exec cp -a --parents -t "$dir/" {} +)
rm -rf "$BUILDROOT$stage" "$marker"
exit "$rc"

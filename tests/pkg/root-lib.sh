# SPDX-License-Identifier: GPL-2.0
#
# root-lib.sh: sourced by tests/pkg's scripts, which run as root and work
# in a Debian root of their own.  Sources tests/lib/tap.sh, makes $work
# (under build/, NAME.XXXXXX) with $root inside it, removes both on exit
# after undoing every mount root_mount made, and starts the TAP stream.
#
#   pkg_begin NAME    the above; bails out unless run as root
#   root_mount        bind /proc, /sys and /dev into $root
#   bail              end the stream at the tests run so far, exit 1
# shellcheck shell=bash disable=SC2034 # work and root are the callers'

here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"

mounted=()
pkg_cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[i]}" 2>/dev/null
	done
	[ -n "${work:-}" ] && rm -rf "$work"
}
# shellcheck disable=SC2154 # n is tap.sh's
bail() { echo "1..$n"; exit 1; }

pkg_begin() {
	mkdir -p "$top/build"
	work=$(mktemp -d "$top/build/$1.XXXXXX") || exit 1
	root=$work/root
	trap pkg_cleanup EXIT
	echo "TAP version 13"
	[ "$(id -u)" -eq 0 ] || { not_ok "run as root (chroot, mounts)"; bail; }
}

root_mount() {
	local m
	for m in proc sys dev; do
		mount --rbind "/$m" "$root/$m" || return 1
		mounted+=("$root/$m")
	done
}

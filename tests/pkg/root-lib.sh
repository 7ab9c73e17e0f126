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
#   tree_debs DIR     the tree's packages, built on this machine, in DIR
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

# tree_debs DIR: a clean copy of the tree (the files git tracks and the
# untracked ones it does not ignore) in DIR/src, and its packages, as
# dpkg-buildpackage -us -uc -b leaves them, in DIR.  Built once for every
# suite of a run: another suite's build of the same files (tests/pkg's and
# the host test's) is copied from build/debs/, keyed by the files' hash.
tree_debs() {
	local dir=$1 key cache
	mkdir -p "$dir/src" &&
		(cd "$top" && git ls-files -co --exclude-standard | tar -cf - -T -) |
		tar -xf - -C "$dir/src" || return 1
	key=$(cd "$dir/src" && find . -type f -print0 | LC_ALL=C sort -z |
		xargs -0 sha256sum | sha256sum | cut -c1-16) || return 1
	cache=$top/build/debs/$key
	if [ -f "$cache/built" ]; then
		echo "# the packages of this tree, as another suite built them: $cache"
		cp "$cache"/*.deb "$cache"/*.changes "$cache"/*.buildinfo "$dir/"
		return
	fi
	(cd "$dir/src" && dpkg-buildpackage -us -uc -b -j2) || return 1
	rm -rf "$top/build/debs" && mkdir -p "$cache" &&
		cp "$dir"/*.deb "$dir"/*.changes "$dir"/*.buildinfo "$cache/" &&
		touch "$cache/built"
}

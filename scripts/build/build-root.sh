#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build-root.sh SUITE PKG...: make sure $IDGEN_CACHE/roots/SUITE (IDGEN_CACHE
# defaults to ~/.cache/idgen) is a minimal Debian SUITE root with make,
# sparse and PKG... installed, and print its path.  Run as root.
# SUITE+security (e.g. bookworm+security) adds SUITE-updates and
# SUITE-security, as on an installed host (tests/pkg/run.sh).
#
# A kernel of a newer Debian suite is built with that suite's compiler
# (trixie's 6.12 with gcc-14, sid's 7.2 with gcc-16), and its kbuild
# programs need that suite's glibc.  Debian 12's gcc-12 lacks flags their
# configurations ask for (-fmin-function-alignment, counted_by, pahole's
# BTF features), so modules for them are built where their users build
# them: in a root of their own suite, whose linux-headers package brings
# the matching compiler.  The root is made once with mmdebstrap from
# Debian's archive (the machine's own apt sources are not involved) and
# then only brought up to date.
set -euo pipefail

cache=${IDGEN_CACHE:-$HOME/.cache/idgen}
mirror=${IDGEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${1:?usage: build-root.sh SUITE PKG...}
shift
root=$cache/roots/$suite

die() {
	echo "build-root.sh: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "run as root (it makes a chroot)"
command -v mmdebstrap >/dev/null || die "mmdebstrap not found (apt-get install mmdebstrap)"

# Archive snapshots can carry a Valid-Until in the past; the packages are
# still what the suite serves.
aptopt='Acquire::Check-Valid-Until "false"'
if [ ! -f "$root/.idgen-root" ]; then
	rm -rf "$root" "$root.tmp"
	mkdir -p "$cache/roots"
	# SUITE+security: also SUITE-updates and SUITE-security, as an
	# installed host has them (its kernel, for one, comes from there).
	sources=("$mirror")
	if [[ $suite == *+security ]]; then
		suite=${suite%+security}
		sources=("deb $mirror $suite main" "deb $mirror $suite-updates main"
			 "deb ${IDGEN_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} $suite-security main")
	fi
	mmdebstrap --variant=apt --aptopt="$aptopt" --include=make,sparse,"$(IFS=,; echo "$*")" \
		"$suite" "$root.tmp" "${sources[@]}" >&2 || die "mmdebstrap $suite failed"
	touch "$root.tmp/.idgen-root"
	mv "$root.tmp" "$root"
else
	missing=()
	for p in "$@"; do
		# shellcheck disable=SC2016 # dpkg-query's own format
		chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		chroot "$root" apt-get -q update >&2 || die "apt-get update in $root failed"
		DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get -q install -y "${missing[@]}" >&2 ||
			die "cannot install ${missing[*]} in $root"
	fi
fi
echo "$root"

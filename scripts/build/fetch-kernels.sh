#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fetch-kernels.sh [NAME...] | --list | --source SUITE | --etcd SUITE: download and unpack
# the Debian kernels of the test matrix that this Debian 12 machine's own
# apt sources do not carry, without touching those sources or installing
# anything.
#
# --source SUITE downloads instead the kernel source of SUITE (bookworm,
# trixie or sid): the package linux-source of that suite names the current
# linux-source-X.Y, whose tarball is unpacked from it into
# $IDGEN_CACHE/sources/SUITE and its path printed (scripts/build/build-debug-kernel.sh
# builds the debug kernel from it).
#
# --etcd SUITE downloads SUITE's etcd-server (trixie or sid), unpacks it
# into $IDGEN_CACHE/etcd/SUITE and prints the path of its etcd binary (a
# static Go program, it runs here): idgend's tests run against it besides
# the machine's own etcd (tests/idgend/run.sh, ETCD_BIN).
#
# NAMEs (default: all of them; --list prints them):
#   bookworm-rt     Debian 12's PREEMPT_RT 6.1         guest, built here
#   trixie          Debian 13's 6.12                   guest, built in trixie
#   trixie-rt       Debian 13's PREEMPT_RT 6.12        guest, built in trixie
#   sid             Debian unstable's newest kernel    guest, built in sid
#   sid-rt          its PREEMPT_RT flavour             guest, built in sid
#   bookworm-arm64  Debian 12's arm64 6.1 headers      cross-built here
#   trixie-arm64    Debian 13's arm64 6.12 headers     cross-built in trixie
#   sid-arm64       Debian unstable's arm64 headers    cross-built in sid
#
# A private apt state under $IDGEN_CACHE/apt (IDGEN_CACHE defaults to
# ~/.cache/idgen) lists bookworm, trixie and sid for amd64 and arm64.  For
# each NAME the suite's linux-headers-<flavour> metapackage names the
# current ABI, so no version is pinned here: the newest one in the suite
# is taken.  The image (with its modules) of a guest kernel is unpacked
# with dpkg -x into $IDGEN_CACHE/kernels/NAME/root, and so are the headers
# (with the common headers and linux-kbuild) of a kernel built here.
#
# A kernel of a newer suite is built in a root of that suite
# (scripts/build/build-root.sh; the reasons are there): its amd64 headers are
# installed there by that root's apt, and for arm64 the suite's
# cross-compiler is installed there and the arm64 headers are unpacked
# into it (not installed: they would want an arm64 compiler), next to the
# amd64 linux-kbuild of the same ABI, whose programs run on the build host.
#
# $IDGEN_CACHE/kernels/NAME/kernel.env records where everything is, for
# scripts/build/kernel-env.sh:
#   KVER      the kernel release (uname -r in a guest booting it)
#   ARCH      the kernel's architecture (x86_64 or arm64)
#   KDIR      the headers to build external modules against (a path inside
#             BUILDROOT when that is set)
#   BUILDROOT the suite's root to build in, or empty to build here
#   ROOT      the unpacked tree
#   IMAGE     the kernel image to boot, empty for a headers-only entry
#   MODDIR    its modules (ROOT/lib/modules/KVER, with modules.dep)
# A NAME whose ABI is already unpacked is not downloaded again.  The
# last line printed for each NAME is the path of its kernel.env.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${IDGEN_CACHE:-$HOME/.cache/idgen}
apt_dir=$cache/apt
mirror=${IDGEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# NAME -> "suite flavour arch boot build", build: host (here) or root (in
# the suite's root).
declare -A matrix=(
	[bookworm-rt]="bookworm rt-amd64 amd64 yes host"
	[trixie]="trixie amd64 amd64 yes root"
	[trixie-rt]="trixie rt-amd64 amd64 yes root"
	[sid]="sid amd64 amd64 yes root"
	[sid-rt]="sid rt-amd64 amd64 yes root"
	[bookworm-arm64]="bookworm arm64 arm64 no host"
	[trixie-arm64]="trixie arm64 arm64 no root"
	[sid-arm64]="sid arm64 arm64 no root"
)
order=(bookworm-rt trixie trixie-rt sid sid-rt bookworm-arm64 trixie-arm64 sid-arm64)

die() {
	echo "fetch-kernels.sh: $*" >&2
	exit 1
}

source_suite= etcd_suite=
case ${1:-} in
--list)
	printf '%s\n' "${order[@]}"
	exit 0
	;;
--source)
	source_suite=${2:-}
	case $source_suite in
	bookworm | trixie | sid) ;;
	*) die "--source takes bookworm, trixie or sid, not '$source_suite'" ;;
	esac
	;;
--etcd)
	etcd_suite=${2:-}
	case $etcd_suite in
	trixie | sid) ;;
	*) die "--etcd takes trixie or sid, not '$etcd_suite'" ;;
	esac
	;;
*)
	[ $# -gt 0 ] || set -- "${order[@]}"
	for name in "$@"; do
		[ -n "${matrix[$name]:-}" ] || die "unknown kernel '$name' (known: ${order[*]})"
	done
	;;
esac
for tool in apt-get dpkg-deb depmod; do
	command -v "$tool" >/dev/null || die "$tool not found"
done

# The private apt state: its own sources, lists, cache and (empty) dpkg
# status, so neither the machine's sources nor its packages are involved.
apt_opts=(
	-q
	-o "Dir::State::Lists=$apt_dir/lists"
	-o "Dir::State::status=$apt_dir/status"
	-o "Dir::Etc::SourceList=$apt_dir/sources.list"
	-o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
	-o "Dir::Etc::Preferences=$apt_dir/preferences"
	-o "Dir::Etc::PreferencesParts=$apt_dir/preferences.d"
	-o "Dir::Cache=$apt_dir/cache"
	-o APT::Architectures::=amd64
	-o APT::Architectures::=arm64
	# An archive snapshot's Release may carry a Valid-Until in the past.
	-o Acquire::Check-Valid-Until=false
	# Downloads land in a directory owned by whoever runs this.
	-o APT::Sandbox::User="$(id -un)"
)
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs" \
	"$apt_dir/preferences.d" "$apt_dir/sources.list.d"
[ -e "$apt_dir/status" ] || : >"$apt_dir/status"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "no $keyring (apt-get install debian-archive-keyring)"
sources=
for suite in bookworm trixie sid; do
	sources+="deb [signed-by=$keyring] $mirror $suite main"$'\n'
done
printf '%s' "$sources" >"$apt_dir/sources.list"
# The lists are refreshed once a day: a newer ABI appears at most a day late.
stamp=$apt_dir/lists/.idgen-updated
if [ -z "$(find "$stamp" -mmin -1440 2>/dev/null)" ]; then
	apt-get "${apt_opts[@]}" update >&2 || die "apt-get update of the private state failed"
	touch "$stamp"
fi

# download PKG...: fetch into a fresh directory below the private state's
# (a metapackage of the same name exists in every suite); prints the files
# in the order asked.
download() {
	local d p
	d=$(mktemp -d "$apt_dir/debs/dl.XXXXXX")
	(cd "$d" && apt-get "${apt_opts[@]}" download "$@" >&2) || die "cannot download $*"
	for p in "$@"; do
		p=${p%%/*}
		p=${p%%:*}
		ls "$d/${p}"_*.deb
	done
}

# depends DEB REGEX: the names of DEB's dependencies that match REGEX.
depends() {
	dpkg-deb -f "$1" Depends | tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep -E "$2" || true
}

# unpack DIR DEB...: dpkg -x each DEB into DIR.
unpack() {
	local dir=$1 deb
	shift
	for deb in "$@"; do
		[ -z "$deb" ] || dpkg-deb -x "$deb" "$dir"
	done
}

# follow PKG...: download PKG... and, one level at a time, the packages of
# the same ABI they depend on (common headers, kbuild, and where the image
# is split, linux-binary-, linux-modules-, linux-base-); prints the files.
# An arch-qualified PKG's dependencies get the same qualifier, but for the
# common headers (arch all) and kbuild (amd64's: its programs run here).
follow() {
	local want=("$@") seen=" " next p d deb q
	while [ ${#want[@]} -gt 0 ]; do
		next=$(download "${want[@]}")
		printf '%s\n' "$next"
		for p in "${want[@]}"; do seen+="${p%%:*} "; done
		q=
		case ${want[0]} in *:*) q=":${want[0]#*:}" ;; esac
		want=()
		while read -r deb; do
			for d in $(depends "$deb" "^linux-(headers|kbuild|image|binary|modules|base)-[0-9]"); do
				case $seen in *" $d "*) continue ;; esac
				case $d in
				linux-kbuild-* | *-common | *-common-*) want+=("$d") ;;
				*) want+=("$d$q") ;;
				esac
				seen+="$d "
			done
		done <<<"$next"
	done
}

fetch() {
	local name=$1 suite flavour arch boot build meta hdr kver dir root t0=$SECONDS
	read -r suite flavour arch boot build <<<"${matrix[$name]}"
	local q=""
	[ "$arch" = amd64 ] || q=":$arch"
	# The metapackage names the suite's current ABI.
	meta=$(download "linux-headers-$flavour$q/$suite")
	hdr=$(depends "$meta" "^linux-headers-[0-9]")
	[ -n "$hdr" ] || die "$meta names no linux-headers-<abi> package"
	kver=${hdr#linux-headers-}
	dir=$cache/kernels/$name
	root=$dir/root
	rm -rf "$apt_dir"/debs/dl.*
	if [ -f "$dir/kernel.env" ] && grep -qx "KVER=$kver" "$dir/kernel.env"; then
		echo "$name: $kver already unpacked" >&2
		echo "$dir/kernel.env"
		return
	fi
	echo "$name: $kver from $suite" >&2
	rm -rf "$dir"
	mkdir -p "$root"

	local kdir=$root/usr/src/linux-headers-$kver buildroot='' hdrdebs
	if [ "$build" = host ]; then
		mapfile -t hdrdebs < <(follow "$hdr$q")
		unpack "$root" "${hdrdebs[@]}"
		# The headers' Makefile names itself and the common headers by
		# their installed, absolute paths.
		sed -i "s|/usr/src/|$root/usr/src/|g" "$kdir/Makefile"
	elif [ "$arch" = amd64 ]; then
		buildroot=$("$top/scripts/build/build-root.sh" "$suite" "$hdr")
		kdir=/usr/src/linux-headers-$kver
	else
		mapfile -t hdrdebs < <(download "$hdr$q")
		local kbuild gcc
		kbuild=$(depends "${hdrdebs[0]}" "^linux-kbuild-")
		gcc=$(depends "${hdrdebs[0]}" "^gcc-[0-9]+(-for-host)?$" | head -n 1)
		gcc=${gcc%-for-host}
		if [ -z "$kbuild" ] || [ -z "$gcc" ]; then die "$hdr names no kbuild or gcc"; fi
		buildroot=$("$top/scripts/build/build-root.sh" "$suite" "$kbuild" "$gcc-aarch64-linux-gnu")
		hdrdebs+=("$(download "$(depends "${hdrdebs[0]}" "^linux-headers-.*-common")")")
		unpack "$buildroot" "${hdrdebs[@]}"
		kdir=/usr/src/linux-headers-$kver
		[ -f "$buildroot$kdir/Makefile" ] || die "no $kdir in $buildroot after unpacking $hdr"
	fi

	local image='' imgdebs
	if [ "$boot" = yes ]; then
		mapfile -t imgdebs < <(follow "linux-image-$kver")
		unpack "$root" "${imgdebs[@]}"
		# Newer packages use the merged /usr layout (/usr/lib/modules/KVER,
		# the image there as vmlinuz); Debian 12's depmod looks in /lib.
		if [ ! -e "$root/lib" ] && [ -d "$root/usr/lib/modules" ]; then
			ln -s usr/lib "$root/lib"
		fi
		for image in "$root/boot/vmlinuz-$kver" "$root/lib/modules/$kver/vmlinuz" ""; do
			[ ! -f "$image" ] || break
		done
		[ -n "$image" ] || die "linux-image-$kver has no kernel image"
		# The package's postinst writes modules.dep; write it here.
		depmod -b "$root" "$kver"
	fi
	# Only the unpacked trees are kept.
	rm -rf "$apt_dir"/debs/dl.*

	local karch=x86_64
	[ "$arch" = amd64 ] || karch=$arch
	cat >"$dir/kernel.env.tmp" <<-EOF
		NAME=$name
		KVER=$kver
		ARCH=$karch
		SUITE=$suite
		KDIR=$kdir
		BUILDROOT=$buildroot
		ROOT=$root
		IMAGE=$image
		MODDIR=${image:+$root/lib/modules/$kver}
	EOF
	mv "$dir/kernel.env.tmp" "$dir/kernel.env"
	echo "$name: ready in $((SECONDS - t0)) s" >&2
	echo "$dir/kernel.env"
}

# fetch_source SUITE: the suite's newest kernel source tarball, unpacked
# once per version; prints its path.
fetch_source() {
	local suite=$1 meta src deb dir tarball
	meta=$(download "linux-source/$suite")
	src=$(depends "$meta" "^linux-source-[0-9]")
	[ -n "$src" ] || die "$meta names no linux-source-X.Y package"
	dir=$cache/sources/$suite
	deb=$(download "$src/$suite")
	tarball=$dir/$(dpkg-deb -f "$deb" Package)_$(dpkg-deb -f "$deb" Version)/usr/src/$src.tar.xz
	if [ ! -f "$tarball" ]; then
		echo "$suite: $src $(dpkg-deb -f "$deb" Version)" >&2
		rm -rf "$dir"
		mkdir -p "$dir"
		dpkg-deb -x "$deb" "${tarball%/usr/src/*}"
		[ -f "$tarball" ] || die "$deb holds no usr/src/$src.tar.xz"
	fi
	rm -rf "$apt_dir"/debs/dl.*
	echo "$tarball"
}

# fetch_etcd SUITE: the suite's etcd-server, unpacked once per version;
# prints the path of its etcd.
fetch_etcd() {
	local suite=$1 deb dir bin
	deb=$(download "etcd-server/$suite")
	dir=$cache/etcd/$suite/$(dpkg-deb -f "$deb" Version)
	bin=$dir/usr/bin/etcd
	if [ ! -x "$bin" ]; then
		rm -rf "$cache/etcd/$suite"
		mkdir -p "$dir"
		dpkg-deb -x "$deb" "$dir"
		[ -x "$bin" ] || die "$deb holds no usr/bin/etcd"
	fi
	rm -rf "$apt_dir"/debs/dl.*
	echo "$bin"
}

if [ -n "$etcd_suite" ]; then
	fetch_etcd "$etcd_suite"
	exit 0
fi
if [ -n "$source_suite" ]; then
	fetch_source "$source_suite"
	exit 0
fi
for name in "$@"; do
	fetch "$name"
done

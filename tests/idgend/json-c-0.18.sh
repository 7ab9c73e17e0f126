#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# json-c-0.18.sh: builds Debian 13's json-c (0.18, from trixie's source
# package, checked against its .dsc's SHA-256) into
# $IDGEN_CACHE/json-c-0.18 once, and prints its pkg-config directory.
#
# Why: json-c 0.18 in strict mode rejects raw UTF-8 inside strings, 0.16
# (Debian 12, what this host links against) accepts it; run.sh builds the
# etcd client's tests against both so each CI run covers both.  Its
# binary package needs trixie's glibc, so it is built here from source
# (cmake, a few seconds).
set -euo pipefail

cache=${IDGEN_CACHE:-$HOME/.cache/idgen}
mirror=${IDGEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
tarball=json-c_0.18+ds.orig.tar.xz
sha256=f6439962c9622c1f9f4746d5b3daf5e0800c335281b048fab00159f2a29d7daa
prefix=$cache/json-c-0.18

die() { echo "json-c-0.18.sh: $*" >&2; exit 1; }

if [ ! -e "$prefix/.idgen-built" ]; then
	for tool in curl cmake sha256sum; do
		command -v "$tool" >/dev/null || die "$tool not found"
	done
	mkdir -p "$cache/sources"
	src=$cache/sources/$tarball
	if [ ! -e "$src" ]; then
		curl -sSfL -o "$src.part" "$mirror/pool/main/j/json-c/$tarball" ||
			die "cannot download $mirror/pool/main/j/json-c/$tarball"
		mv "$src.part" "$src"
	fi
	echo "$sha256  $src" | sha256sum -c --quiet - ||
		{ rm -f "$src"; die "$src: SHA-256 mismatch (removed)"; }
	build=$(mktemp -d "$cache/json-c-build.XXXXXX")
	trap 'rm -rf "$build"' EXIT
	tar -xf "$src" -C "$build" --strip-components=1
	rm -rf "$prefix"
	cmake -S "$build" -B "$build/out" -DCMAKE_INSTALL_PREFIX="$prefix" \
		-DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DBUILD_STATIC_LIBS=OFF -DBUILD_TESTING=OFF -DBUILD_APPS=OFF \
		>"$build/cmake.log" 2>&1 || { cat "$build/cmake.log" >&2; die "cmake failed"; }
	make -s -j2 -C "$build/out" install >"$build/make.log" 2>&1 ||
		{ cat "$build/make.log" >&2; die "build failed"; }
	touch "$prefix/.idgen-built"
fi
echo "$prefix/lib/pkgconfig"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deps-names.sh: for each Debian release scripts/deps.sh supports, every
# package name it would install (deps.sh --print) exists in that release's
# archive (main, -updates, -security), and the kernels it installs are the
# series tests/vm/kernels.sh expects there.  Prints TAP.
#
# No host of another release is needed: each release gets a private apt
# state (its own sources, lists and empty dpkg status) under
# $IDGEN_CACHE/apt-deps/RELEASE, refreshed once a day.  What this does not
# show is that the packages install together on that release.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=lib/tap.sh disable=SC2154 # n and status are tap.sh's
. "$top/tests/lib/tap.sh"

cache=${IDGEN_CACHE:-$HOME/.cache/idgen}
mirror=${IDGEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${IDGEN_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# apt_state RELEASE: the options of RELEASE's private apt state, one a line.
apt_state() {
	local d=$cache/apt-deps/$1
	printf '%s\n' -q -o "Dir::State::Lists=$d/lists" -o "Dir::State::status=$d/status" \
		-o "Dir::Etc::SourceList=$d/sources.list" \
		-o "Dir::Etc::SourceParts=$d/sources.list.d" \
		-o "Dir::Etc::Preferences=$d/preferences" \
		-o "Dir::Etc::PreferencesParts=$d/preferences.d" \
		-o "Dir::Cache=$d/cache" -o APT::Architectures::=amd64 \
		-o APT::Sandbox::User="$(id -un)"
}

# shellcheck disable=SC2317 # run through tap_step
update() {
	local r=$1 d=$cache/apt-deps/$1 opts
	mapfile -t opts < <(apt_state "$r")
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial" "$d/preferences.d" \
		"$d/sources.list.d" || return 1
	[ -e "$d/status" ] || : >"$d/status"
	printf 'deb [signed-by=%s] %s %s main\n' \
		"$keyring" "$mirror" "$r" "$keyring" "$mirror" "$r-updates" \
		"$keyring" "$security" "$r-security" >"$d/sources.list"
	[ -n "$(find "$d/lists/.idgen-updated" -mmin -1440 2>/dev/null)" ] && return 0
	apt-get "${opts[@]}" update && touch "$d/lists/.idgen-updated"
}

# missing RELEASE: the names deps.sh picks for RELEASE that its archive
# lacks (as real packages: a purely virtual name does not install).
missing() {
	local r=$1 opts names
	mapfile -t opts < <(apt_state "$r")
	mapfile -t names < <(IDGEN_DEBIAN_RELEASE=$r "$top/scripts/deps.sh" --print)
	# One apt-cache for all (each run reads the lists): what it shows.
	comm -23 <(printf '%s\n' "${names[@]}" | sort -u) \
		<(apt-cache "${opts[@]}" show --no-all-versions "${names[@]}" 2>/dev/null |
			sed -n 's/^Package: //p' | sort -u)
}

# kernel_series RELEASE: the series of the kernels deps.sh installs there:
# the stock one (what linux-image-amd64 depends on) and any named X.Y.
kernel_series() {
	local r=$1 opts
	mapfile -t opts < <(apt_state "$r")
	{
		apt-cache "${opts[@]}" depends linux-image-amd64 |
			sed -n 's/^ *Depends: linux-image-\([0-9]*\.[0-9]*\)[.-].*/\1/p'
		IDGEN_DEBIAN_RELEASE=$r "$top/scripts/deps.sh" --print |
			sed -n 's/^linux-image-\([0-9]*\.[0-9]*\)-amd64$/\1/p'
	} | sort -uV
}

echo "TAP version 13"
for r in bookworm trixie; do
	if ! tap_step "$r: a private apt state of $r, $r-updates, $r-security" update "$r"; then
		continue
	fi
	lacking=$(missing "$r")
	if [ -z "$lacking" ]; then
		ok "$r: every package deps.sh picks exists"
	else
		not_ok "$r: every package deps.sh picks exists"
		echo "# missing: $(echo "$lacking" | tr '\n' ' ')"
	fi
	have=$(kernel_series "$r" | tr '\n' ' ')
	want=$(IDGEN_DEBIAN_RELEASE=$r "$top/tests/vm/kernels.sh" --expected | sort -uV | tr '\n' ' ')
	check "$r: deps.sh installs the kernels kernels.sh expects (${have:-none}; want ${want:-none})" \
		test -n "$have" -a "$have" = "$want"
done
echo "1..$n"
exit "$status"

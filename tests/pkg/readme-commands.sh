#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# readme-commands.sh [bookworm|trixie]: the README's first command on a
# fresh Debian machine of that release, in a root made now from Debian's
# archive (nothing cached): a copy of the tree, then, chrooted into it,
#   bash scripts/demo.sh
# which installs every dependency (scripts/deps.sh), builds idgen.ko
# against the root's own stock kernel, boots that kernel in a QEMU guest
# and mints and decodes IDs there; then the host-side suites that need no
# guest (libidgen and idgenctl, idgend with a real etcd, idgen-httpd with
# Chromium), since a full scripts/check.sh in a second root would double
# CI's time.  Prints TAP.  Run as root (mmdebstrap, chroot, mounts).
#
# Slow (downloads every dependency: about 2 GB), so scripts/check.sh runs
# it with --matrix only.
# shellcheck disable=SC2317 # the functions run through tap_step, check, trap
set -uo pipefail

suite=${1:-trixie}
case $suite in
bookworm | trixie) ;;
*)
	echo "usage: $0 [bookworm|trixie]" >&2
	exit 2
	;;
esac
mirror=${IDGEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${IDGEN_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

# shellcheck source-path=SCRIPTDIR source=root-lib.sh
. "$(dirname "$0")/root-lib.sh"
pkg_begin "readme-$suite"

# As a fresh machine has it: the release, its updates and security
# archives, git and ca-certificates; and the tree, as a clean clone has it.
make_root() {
	mmdebstrap --variant=apt --include=git,ca-certificates "$suite" "$root" \
		"deb $mirror $suite main" "deb $mirror $suite-updates main" \
		"deb $security $suite-security main" >"$work/mmdebstrap.log" 2>&1 || {
		tail -n 20 "$work/mmdebstrap.log"
		return 1
	}
	root_mount || return 1
	mkdir -p "$root/work/idgen" &&
		(cd "$top" && git ls-files -co --exclude-standard | tar -cf - -T -) |
		tar -xf - -C "$root/work/idgen"
}
tap_step "a fresh $suite root from Debian's archive, with the tree at /work/idgen" make_root || bail

in_root() {
	chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LC_ALL=C.UTF-8 TERM=dumb sh -c "cd /work/idgen && $1"
}

demo() {
	in_root "bash scripts/demo.sh" >"$work/demo.log" 2>&1
	local rc=$?
	sed 's/^/# /' "$work/demo.log" | tail -n 40
	[ "$rc" -eq 0 ] || return 1
	# What the demo exists to show: IDs minted from /dev/idgen in the
	# guest, decoded, and IDs over HTTP.
	grep -q '^\$ idgenctl mint -n 8' "$work/demo.log" &&
		grep -Eq '^[0-9]{15,19} +20[0-9-]{8}T[0-9:.]+Z region 1 worker 42 seq [0-9]+' "$work/demo.log" &&
		grep -q '^  lease: in force' "$work/demo.log" &&
		grep -Eq '"ids": *\["[0-9]+"' "$work/demo.log"
}
tap_step "bash scripts/demo.sh: deps, idgen.ko for the root's kernel, IDs minted and decoded in its guest" demo || bail
echo "# the root's kernel: $(ls "$root/lib/modules" | sort -V | tail -n 1)"

# The suites print TAP of their own; their counts are reported as one
# line each here.
suite_ok() {
	local name=$1 log="$work/$2.log"
	in_root "$3" >"$log" 2>&1
	local rc=$?
	grep '^not ok' "$log" | sed 's/^/# /'
	echo "# $name: $(grep -c '^ok' "$log") ok, $(grep -c '^not ok' "$log") not ok"
	[ "$rc" -eq 0 ] && ! grep -q '^not ok' "$log" && grep -q '^ok' "$log"
}
check "libidgen and idgenctl (tests/libidgen/run.sh)" suite_ok "tests/libidgen" user "bash tests/libidgen/run.sh"
check "idgend (tests/idgend/run.sh)" suite_ok "tests/idgend" idgend "bash tests/idgend/run.sh"
check "idgen-httpd (tests/httpd/run.sh)" suite_ok "tests/httpd" httpd "bash tests/httpd/run.sh"

echo "1..$n"
exit "$status"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh [bookworm|trixie]: the Debian packages, from source to a purged
# host, on Debian 12 (the default) or 13.  Prints TAP.
#   - dpkg-buildpackage -us -uc -b on a clean copy of the tree (idgen-dkms,
#     idgen-tools, libidgen0, libidgen-dev, libidgen-client0,
#     libidgen-client-dev, and postgresql-NN-idgen for the release's
#     PostgreSQL); lintian finds no errors
#   - installed with apt into a fresh Debian root (a copy of a cached
#     one made by scripts/build/build-root.sh with dkms, the stock kernel and its
#     headers, and the release's PostgreSQL server): DKMS builds idgen.ko
#     for that kernel; libidgen-dev holds the gRPC contract; systemd-analyze
#     verify passes on the units; CREATE EXTENSION idgen works in a cluster
#     made for it
#   - that idgen.ko loads in a guest booting the same kernel (on bookworm
#     the host's /boot image, which must be the root's byte for byte; on
#     trixie the root's own image and modules), and the packaged idgenctl
#     mints and decodes IDs there
#   - purge takes the module out of DKMS and leaves no file behind
# Run as root (chroot, mounts).
# shellcheck disable=SC2317 # the functions run through tap_step, check, trap
set -uo pipefail

suite=${1:-bookworm}
# The root's packages besides dkms and the kernel: idgen-tools' libraries
# (trixie's carry the 64-bit time_t names), and a C compiler and libc's
# headers with what libidgen-dev and libidgen-client-dev depend on, so
# that the install needs no download and the purge leaves nothing it
# pulled in; and the kernel the guest boots, as run-guest.sh names it.
case $suite in
bookworm)
	libs=(libcurl4 libjson-c5 libmicrohttpd12 libnl-genl-3-200 libssl3 libnghttp2-14
	      libprotobuf-c1 gcc libc6-dev libssl-dev libcurl4-openssl-dev libjson-c-dev pkgconf
	      postgresql-15)
	pgv=15
	;;
trixie)
	libs=(libcurl4t64 libjson-c5 libmicrohttpd12t64 libnl-genl-3-200 libssl3t64 libnghttp2-14
	      libprotobuf-c1 gcc libc6-dev libssl-dev libcurl4-openssl-dev libjson-c-dev pkgconf
	      postgresql-17)
	pgv=17
	;;
*)
	echo "usage: $0 [bookworm|trixie]" >&2
	exit 2
	;;
esac

# shellcheck source-path=SCRIPTDIR source=root-lib.sh
. "$(dirname "$0")/root-lib.sh"
pkg_begin pkg-test

# --- build and lint --------------------------------------------------------

tap_step "dpkg-buildpackage -us -uc -b on a clean copy of the tree" tree_debs "$work" || bail
# Installed into the root: every package but the debug symbols (the
# release's PostgreSQL server is in the root already, libs above, so that
# the install downloads nothing and the purge leaves nothing it pulled in;
# in a chroot invoke-rc.d starts no cluster).
debs=()
for deb in "$work"/*.deb; do
	[[ $deb == *-dbgsym_* ]] || debs+=("$deb")
done

lint() {
	lintian --pedantic "$work"/*.changes >"$work/lintian.log" 2>&1
	sed 's/^/# /' "$work/lintian.log"
	! grep -q '^E: ' "$work/lintian.log"
}
check "lintian: no errors (warnings listed above)" lint

# --- a fresh Debian 12 root --------------------------------------------------

in_root() { chroot "$root" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"; }
make_root() {
	local base
	base=$("$top/scripts/build/build-root.sh" "$suite+security" dkms linux-headers-amd64 \
		linux-image-amd64 systemd "${libs[@]}") || return 1
	cp -a "$base" "$root" && root_mount || return 1
	# Its own file list, to compare after the purge.
	(cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev \
		-o -path ./tmp -o -path ./run \) -prune -o -print | sort) >"$work/files.before"
}
tap_step "a fresh $suite root with dkms, the stock kernel and its headers" make_root || bail
kver=$(cd "$root/lib/modules" && for d in *; do [ -d "$d/build" ] && echo "$d"; done | sort -V | tail -n 1)
echo "# the root's kernel: ${kver:-none}"

install_debs() {
	local d in_debs=()
	for d in "${debs[@]}"; do
		in_debs+=("/tmp/debs/${d##*/}")
	done
	mkdir -p "$root/tmp/debs" && cp "${debs[@]}" "$root/tmp/debs/" &&
		in_root apt-get -q install -y "${in_debs[@]}"
}
tap_step "apt install of the ${#debs[@]} packages into the root" install_debs || bail

# Compressed as the kernel's own modules are (trixie's dkms: .ko.xz).
ko=
for f in "$root/lib/modules/$kver/updates/dkms/idgen.ko"{,.xz,.zst}; do
	[ -f "$f" ] && ko=$f
done
check "DKMS built and installed idgen.ko for the root's kernel $kver (${ko##*/})" test -n "$ko"
check "libidgen-dev installs the gRPC contract as the tree's (/usr/share/idgen/proto/idgen/v1/idgen.proto)" \
	cmp "$root/usr/share/idgen/proto/idgen/v1/idgen.proto" "$top/proto/idgen/v1/idgen.proto"
check "dkms status: idgen $(cat "$top/VERSION") installed for $kver" \
	sh -c "chroot '$root' dkms status idgen | grep -q '$kver.*installed'"
for page in man8/idgend.8 man8/idgenctl.8 man8/idgen-httpd.8 man3/libidgen.3 \
	man3/idgen_client.3; do
	check "the man page $page is installed" test -f "$root/usr/share/man/$page.gz"
done
# A program of the user's, built against the installed libidgen-client
# with pkg-config and run: a fleet whose one host refuses connections
# gives -ETIMEDOUT and names the host.
client_program() {
	cat >"$root/tmp/client.c" <<-'EOF'
	#include <errno.h>
	#include <stdio.h>
	#include <string.h>
	#include <idgen_client.h>

	int main(void)
	{
		struct idgen_client_options o;
		struct idgen_client *c;
		uint64_t id;
		int err;

		idgen_client_options_init(&o);
		o.buffer_size = 0;
		o.deadline_ms = 200;
		if (idgen_client_new("http://127.0.0.1:9", &o, &c))
			return 2;
		err = idgen_client_next(c, &id);
		printf("%d %s\n", err, idgen_client_last_error());
		idgen_client_free(c);
		return err == -ETIMEDOUT && strstr(idgen_client_last_error(), "127.0.0.1:9") ? 0 : 1;
	}
	EOF
	# (Merged /usr: the loader may name /lib for /usr/lib.)
	in_root sh -c 'cc -Wall -Werror -o /tmp/client /tmp/client.c $(pkg-config --cflags --libs idgen-client) &&
		ldd /tmp/client | tee /dev/stderr | grep -Eq "libidgen-client\.so\.0 => (/usr)?/lib/" &&
		/tmp/client'
}
tap_step "a program built with pkg-config idgen-client runs on the installed library" client_program

for unit in idgend.service idgen-httpd.service; do
	# --man=no: a minimal root has no man(1); the pages are checked below.
	tap_step "systemd-analyze verify $unit" \
		in_root systemd-analyze verify --man=no "/usr/lib/systemd/system/$unit"
done

# postgresql-NN-idgen: CREATE EXTENSION in a cluster of the root's own
# server, made for this and dropped after.
pg_extension() {
	local rc
	in_root pg_createcluster -p 5499 "$pgv" idgen_pkg_test >/dev/null &&
		in_root pg_ctlcluster "$pgv" idgen_pkg_test start || return 1
	in_root runuser -u postgres -- psql -p 5499 -XAtc "CREATE EXTENSION idgen;
		SELECT idgen_min_id_at('2026-03-15T00:00:00Z');" >"$work/pg.out" 2>&1
	rc=$?
	sed 's/^/# /' "$work/pg.out"
	in_root pg_ctlcluster "$pgv" idgen_pkg_test stop
	in_root pg_dropcluster "$pgv" idgen_pkg_test
	[ $rc -eq 0 ] && grep -qx 26454314188800000 "$work/pg.out"
}
tap_step "postgresql-$pgv-idgen: CREATE EXTENSION idgen in PostgreSQL $pgv, idgen_min_id_at() answers" \
	pg_extension

# --- the module in a guest booting that kernel -------------------------------

# bookworm: the host's own kernel, which must be the root's; trixie: the
# root's own image and modules, named to run-guest.sh as a kernel of the
# matrix is (a kernel.env in a cache of this run's own).
guest=$kver run_guest=("$top/tests/vm/run-guest.sh")
same_kernel() {
	cmp "$root/boot/vmlinuz-$kver" "/boot/vmlinuz-$kver" || {
		echo "the host's /boot/vmlinuz-$kver is not the root's (upgrade the host's kernel)"
		return 1
	}
}
if [ "$suite" = trixie ]; then
	guest=pkg-trixie
	mkdir -p "$work/cache/kernels/$guest"
	printf 'KVER=%q\nARCH=x86_64\nKDIR=%q\nIMAGE=%q\nMODDIR=%q\nROOT=%q\n' "$kver" \
		"$root/lib/modules/$kver/build" "$root/boot/vmlinuz-$kver" \
		"$root/lib/modules/$kver" "$root" >"$work/cache/kernels/$guest/kernel.env"
	run_guest=(env IDGEN_CACHE="$work/cache" "${run_guest[@]}")
	boots=true
else
	boots=false
	tap_step "the host boots the root's kernel image ($kver)" same_kernel && boots=true
fi
if $boots && [ -n "$ko" ]; then
	case $ko in
	*.xz) xz -dc "$ko" >"$work/idgen.ko" ;;
	*.zst) zstd -qdc "$ko" >"$work/idgen.ko" ;;
	*) cp "$ko" "$work/idgen.ko" ;;
	esac
	cp "$root/usr/sbin/idgenctl" "$work/"
	# shellcheck disable=SC2016 # the guest's shell expands these
	guest_cmd='set -e
insmod "$1/idgen.ko"
test -c /dev/idgen
echo "# version $(cat /sys/module/idgen/version)"
"$1/idgenctl" lease set --region 1 --worker 2 --valid-for 60000 >/dev/null
ids=$("$1/idgenctl" mint -n 3 --raw)
echo "$ids" | sed "s/^/# minted /"
"$1/idgenctl" decode $ids | sed "s/^/# /"
"$1/idgenctl" decode $ids | grep -c "region 1.*worker 2\|worker 2.*region 1" | grep -qx 3
rmmod idgen'
	tap_step "the packaged idgen.ko loads in a $kver guest; idgenctl mints and decodes" \
		"${run_guest[@]}" --timeout "${IDGEN_GUEST_TIMEOUT:-600}" \
		--log "$work/guest.log" "$guest" sh -c "$guest_cmd" - "$work"
fi

# --- purge -------------------------------------------------------------------

purge() {
	in_root apt-get -q purge -y idgen-dkms idgen-tools libidgen-client-dev \
		libidgen-client0 libidgen-dev libidgen0 "postgresql-$pgv-idgen" &&
		rm -rf "$root/tmp/debs" "$root"/tmp/client*
}
tap_step "apt purge of the seven packages" purge
check "purge took idgen out of DKMS" \
	sh -c "! chroot '$root' dkms status idgen | grep -q ."
# What dpkg, apt and dkms keep of their own (logs, status, caches, and
# the machine's module signing key DKMS makes at its first build where
# openssl is installed, as PostgreSQL's ssl-cert brings it) aside, the
# root holds the files it held before the install (/run, a tmpfs on a
# host, aside too).
leftovers() {
	(cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev \
		-o -path ./tmp -o -path ./run \) -prune -o -print | sort) >"$work/files.after"
	comm -13 "$work/files.before" "$work/files.after" |
		grep -Ev '^\./var/(lib/(dpkg|apt|systemd/deb-systemd-helper-[a-z]*)|cache|log)(/|$)' |
		grep -Ev '^\./var/lib/dkms/mok\.(key|pub)$' \
			>"$work/leftovers"
	[ ! -s "$work/leftovers" ] || { cat "$work/leftovers"; return 1; }
}
tap_step "purge leaves no file behind" leftovers

echo "1..$n"
exit "$status"

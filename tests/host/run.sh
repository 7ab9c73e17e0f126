#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh [bookworm|trixie]: idgen on a host as an operator runs it.  Prints
# TAP.  Run as root (chroot, loop mounts), from anywhere.
#
# The host is a Debian root made from the archive (scripts/build/build-root.sh,
# with systemd-sysv, systemd-timesyncd, the stock kernel and its headers,
# DKMS and the release's PostgreSQL), the previous version's packages
# installed into it with apt, made into a disk image and booted in a QEMU
# guest with systemd as PID 1.  The build machine plays the rest of the
# site: a three-member etcd cluster and an NTP server (chronyd, serving
# its clock without setting it) on its loopback, reached from the guest at
# 10.0.2.2, and a Prometheus scraping the guest's /metrics through a
# forwarded port with the shipped alerting rules loaded.  All of it
# secured: etcd serves clients over TLS only, wants client certificates
# and has authentication on (a root user, and idgend's user with a role
# on /idgen/ alone); idgen-httpd serves TLS only and wants a client
# certificate (mTLS) from every client, the build machine's minting and
# Prometheus' scrapes included.  The certificates are made here with
# openssl (tests/lib/certs.sh).
#
# Then, in order, each step as the README's "Using it on a host" says it
# (the test runs that section's marked blocks, with the site's addresses
# put in for example.net's):
#   - configure and start: NTP, idgend.conf in etcd mode, idgen-httpd.conf
#     with a public-ID key handed over as a credential; secured: etcd's
#     CA, idgend's certificate, key and password, idgen-httpd's
#     certificate, key and clients' CA, the keys and the password handed
#     over as credentials; systemctl enable --now; etcd and idgen-httpd
#     refusing plaintext, a client without a certificate or with another
#     CA's, and idgend's user anything outside its prefix; both units
#     active, the module loaded by idgend's unit, ready,
#     IDs over HTTP, gRPC and from PostgreSQL, one journal line per lease
#     event and none at error level, idgen-httpd as its dynamic user under
#     its system-call filter, idgenctl status over netlink, Prometheus
#     scraping it over TLS with its own certificate (a plaintext scrape
#     and one without a certificate down)
#   - etcd's leader killed during renewals: the lease and readiness hold
#   - idgend killed -9: systemd restarts it, it adopts the module's lease,
#     minting never stops
#   - etcd stopped: /readyz 503 before the fence, the device refusing at
#     the fence, Prometheus' lease alert pending then firing; etcd back:
#     ready again, the alert resolved
#   - the packages upgraded from the previous version: the units
#     restarted, the module in memory the old one until the next boot
#   - systemctl reboot: the units back by themselves, the number leased
#     again above its last valid_until
#   - a kernel upgrade (Debian 12: 6.12 beside 6.1): DKMS builds idgen.ko
#     for it and the host boots it and mints
#   - purge: the units stop and hand the number back, DKMS forgets the
#     module, no file of idgen's is left
# Through all of it the build machine mints over HTTP one call at a time
# (mint_loop.py); every ID minted anywhere goes into one check: none twice,
# and the host's IDs strictly increasing in the order minted, across every
# fault and boot.
#
# What the test does that an operator would not, and why:
#   - it talks to the guest over a second serial port (agent.sh,
#     idgen-test-agent.service: its own, not idgen's), and copies the
#     site's certificates, keys and password over it, where a site's PKI
#     would hand them over;
#   - idgend runs with --lease-ms 45000 --renew-ms 5000 (a drop-in of its
#     own), so that a lease runs out in seconds rather than ten minutes;
#   - idgen-httpd's system-call filter kills instead of answering EPERM
#     (SystemCallErrorNumber= emptied in a drop-in), so that a call the
#     filter denies cannot pass unnoticed;
#   - the kernel upgrade's apt install runs from the build machine into
#     the powered-off guest's disk (loop-mounted, chrooted): under QEMU's
#     software emulation the same install takes over ten minutes;
#   - Prometheus' rules are the shipped file with every "for:" shortened.
#
# HOST_KEEP=DIR keeps the logs (consoles, journals, mint log) in DIR.
# shellcheck disable=SC2317 # the functions run through tap_step, check, trap
# shellcheck disable=SC2016 # single-quoted: commands for the guest's shell
set -uo pipefail

suite=${1:-bookworm}
case $suite in
bookworm)
	libs=(libcurl4 libjson-c5 libmicrohttpd12 libnl-genl-3-200 libssl3 libnghttp2-14
	      libprotobuf-c1 postgresql-15)
	new_kernel=(linux-image-6.12-amd64 linux-headers-6.12-amd64)
	pgv=15
	;;
trixie)
	libs=(libcurl4t64 libjson-c5 libmicrohttpd12t64 libnl-genl-3-200 libssl3t64 libnghttp2-14
	      libprotobuf-c1 postgresql-17)
	new_kernel=(linux-image-rt-amd64 linux-headers-rt-amd64)
	pgv=17
	;;
*)
	echo "usage: $0 [bookworm|trixie]" >&2
	exit 2
	;;
esac

# shellcheck source-path=SCRIPTDIR source=../pkg/root-lib.sh
. "$(dirname "$0")/../pkg/root-lib.sh"
# shellcheck source-path=SCRIPTDIR source=../idgend/etcd-lib.sh
. "$top/tests/idgend/etcd-lib.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/certs.sh
. "$top/tests/lib/certs.sh"
here=$top/tests/host

pkg_begin "host-$suite"
img=$work/disk.img
# The command channel's socket goes in a short directory of its own, never
# under the checkout: an AF_UNIX path holds at most 107 bytes.
sockdir=$(mktemp -d /tmp/idgen-host.XXXXXX) || exit 1
sock=$sockdir/agent.sock
mnt=$work/mnt
mintlog=$work/minted
extra_ids=$work/ids-other
: >"$mintlog"
: >"$extra_ids"
boots=0
qemu_pid=
prom_pid=
mint_pid=

host_cleanup() {
	touch "$work/stop-minting"
	[ -n "$mint_pid" ] && wait "$mint_pid" 2>/dev/null
	[ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null && wait "$qemu_pid" 2>/dev/null
	[ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
	[ -f "$work/chronyd.pid" ] && kill "$(cat "$work/chronyd.pid")" 2>/dev/null
	mountpoint -q "$mnt" 2>/dev/null && umount -R "$mnt"
	etcd_cleanup
	rm -rf "$sockdir"
	if [ -n "${HOST_KEEP:-}" ]; then
		mkdir -p "$HOST_KEEP" && cp "$work"/*.log "$mintlog" "$extra_ids" "$HOST_KEEP/" 2>/dev/null
	fi
	pkg_cleanup
}
trap host_cleanup EXIT

# g [--timeout S] COMMAND: COMMAND in the guest, as root; its output and status.
g() {
	local t=120
	if [ "$1" = --timeout ]; then
		t=$2
		shift 2
	fi
	/usr/bin/python3 "$here/guest.py" "$sock" --timeout "$t" run "$1"
}
phase() { echo "$1" >"$work/phase"; echo "# --- $1"; }
version=$(cat "$top/VERSION")
prev=${version%.*}.$((${version##*.} - 1))

# --- the packages: this version and the one before ---------------------------

# build_debs DIR VERSION: the packages of a clean copy of the tree, as
# VERSION, into DIR.  The previous version is this tree with VERSION,
# dkms.conf and debian/changelog set back to it (the changelog's entries
# from VERSION's down).
build_debs() {
	local dir=$1 v=$2
	if [ "$v" = "$version" ] && [ -z "$build_root" ]; then
		tree_debs "$dir" >"$dir.log" 2>&1 || { tail -n 30 "$dir.log"; return 1; }
		rm -f "$dir"/*-dbgsym_*.deb
		return
	fi
	mkdir -p "$dir/src" &&
		(cd "$top" && git ls-files -co --exclude-standard | tar -cf - -T -) |
		tar -xf - -C "$dir/src" || return 1
	if [ "$v" != "$version" ]; then
		grep -q "^idgen ($v)" "$dir/src/debian/changelog" ||
			{ echo "debian/changelog has no entry for $v"; return 1; }
		echo "$v" >"$dir/src/VERSION"
		sed -i "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$v\"/" "$dir/src/dkms.conf"
		sed -i "s/^#define IDGEN_VERSION .*/#define IDGEN_VERSION \"$v\"/" "$dir/src/kmod/version.h"
		sed -i -n "/^idgen ($v)/,\$p" "$dir/src/debian/changelog"
	fi
	if [ -n "$build_root" ]; then
		# In the release's own root, as its buildd would build them.
		local in=$build_root/tmp/idgen-host-build
		rm -rf "$in" && mkdir -p "$in" && cp -a "$dir/src" "$in/src" || return 1
		chroot "$build_root" sh -c 'cd /tmp/idgen-host-build/src && dpkg-buildpackage -us -uc -b -j2' \
			>"$dir/build.log" 2>&1 || { tail -n 30 "$dir/build.log"; return 1; }
		cp "$in"/*.deb "$dir/" && rm -rf "$in" || return 1
	else
		(cd "$dir/src" && dpkg-buildpackage -us -uc -b -j2) >"$dir/build.log" 2>&1 ||
			{ tail -n 30 "$dir/build.log"; return 1; }
	fi
	rm -f "$dir"/*-dbgsym_*.deb
}
# Debian 12's packages are built on this machine, a Debian 12 one; Debian
# 13's in a Debian 13 root with the build dependencies (its compiler, its
# 64-bit time_t library names, its PostgreSQL 17).
build_root=
if [ "$suite" != bookworm ]; then
	build_root=$("$top/scripts/build/build-root.sh" "$suite" dpkg-dev debhelper dh-dkms \
		pkgconf systemd-dev libnl-genl-3-dev libcurl4-openssl-dev libjson-c-dev libssl-dev \
		libmicrohttpd-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler \
		libprotobuf-dev postgresql-server-dev-all 2>"$work/build-root.log") ||
		{ tail -n 20 "$work/build-root.log"; not_ok "a $suite root to build the packages in"; bail; }
fi
tap_step "the packages of $version built" build_debs "$work/new" "$version" || bail
tap_step "the packages of the version before, $prev, built" build_debs "$work/old" "$prev" || bail

# --- the README's blocks -----------------------------------------------------

# readme NAME: the shell block after "<!-- host-test: NAME -->" in the
# README, with the site's addresses for example.net's (each etcd member's
# host and port: the scheme is the README's).
site_names=()
readme() {
	awk -v tag="<!-- host-test: $1 -->" '
		$0 == tag { if ((getline) <= 0 || $0 !~ /^```/) exit; inside = 1; next }
		inside && /^```/ { exit }
		inside { print }' "$top/README.md" |
		sed "${site_names[@]}" -e "s|ntp.example.net|10.0.2.2|g" \
		    -e "s|postgresql-15-idgen|postgresql-$pgv-idgen|g"
}
readme_blocks() {
	local b
	for b in install configure secure start upgrade purge; do
		[ -n "$(readme "$b")" ] || { echo "no host-test block $b"; return 1; }
		! readme "$b" | grep example.net || { echo "in $b: an example.net name left"; return 1; }
	done
}

# --- the host's disk ---------------------------------------------------------

in_root() { chroot "$root" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"; }
# What every idgen file is checked against after the purge: the root's
# files before the packages.
file_list() {
	(cd "$1" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev \
		-o -path ./tmp -o -path ./run -o -path ./var/tmp \) -prune -o -print | sort)
}
make_disk() {
	local base m
	base=$("$top/scripts/build/build-root.sh" "$suite+security" dkms linux-headers-amd64 \
		linux-image-amd64 systemd systemd-sysv systemd-timesyncd curl "${libs[@]}") ||
		return 1
	# The new kernel's packages, downloaded into the cached root once: the
	# guest has no archive to reach.
	{ chroot "$base" apt-get -q update &&
		chroot "$base" env DEBIAN_FRONTEND=noninteractive apt-get -q install --download-only -y \
			"${new_kernel[@]}"; } >"$work/download.log" 2>&1 || { tail "$work/download.log"; return 1; }
	cp -a "$base" "$root" && root_mount || return 1
	file_list "$root" >"$work/files.before"
	# Each build as dpkg-buildpackage leaves it: the packages in the
	# folder above the tree, where the README's blocks run.
	mkdir -p "$root/root/idgen-$prev/src" "$root/root/idgen-$version/src" &&
		cp "$work/old"/*.deb "$root/root/idgen-$prev/" &&
		cp "$work/new"/*.deb "$root/root/idgen-$version/" || return 1
	in_root bash -c "cd /root/idgen-$prev/src || exit 1; set -e; $(readme install)" \
		>"$work/install.log" 2>&1 || { tail -n 30 "$work/install.log"; return 1; }
	# The test's own: its command channel, and a network (DHCP from QEMU).
	install -D -m 755 "$here/agent.sh" "$root/usr/local/libexec/idgen-test-agent" &&
		install -m 644 "$here/idgen-test-agent.service" "$root/etc/systemd/system/" &&
		in_root systemctl enable idgen-test-agent.service systemd-networkd.service &&
		mkdir -p "$root/etc/systemd/network" &&
		printf '[Match]\nName=en*\n\n[Network]\nDHCP=yes\n' \
			>"$root/etc/systemd/network/80-dhcp.network" &&
		echo "idgen-host" >"$root/etc/hostname" || return 1
	for m in "${mounted[@]}"; do
		umount -l "$m"
	done
	mounted=()
	mkfs.ext4 -q -F -L root -d "$root" "$img" 4G && rm -rf "$root"
}
tap_step "a $suite root with systemd, DKMS and idgen $prev installed with apt, as a disk image" \
	make_disk || bail

# --- the site: etcd, NTP, the guest's ports ----------------------------------

# The site's certificates: etcd's (its members' for the build machine's
# 127.0.0.1 and the guest's 10.0.2.2, etcdctl's admin as CN root, idgend's
# without a CN, as idgend(8) wants it), idgen-httpd's (its own for
# 127.0.0.1, where the build machine reaches it through the forwarded
# port; the minting's and Prometheus' client certificates), and a client
# certificate of another CA for each.  30 days: the shipped
# IdgenCertificateExpiring fires below 7.
pki=$work/pki
certificates() {
	mkdir -p "$pki/etcd" "$pki/httpd" && (
		cd "$pki/etcd" &&
			cert_ca ca && cert_ca foreign-ca &&
			cert_leaf server ca /CN=etcd "IP:127.0.0.1,IP:10.0.2.2" serverAuth,clientAuth "" 30 &&
			cert_leaf admin ca /CN=root "" clientAuth "" 30 &&
			cert_leaf idgend ca /O=idgen DNS:idgend clientAuth "" 30 &&
			cert_leaf foreign foreign-ca /O=idgen DNS:idgend clientAuth "" 30 &&
			(umask 077 && od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >password && echo >>password)
	) && (
		cd "$pki/httpd" &&
			cert_ca ca && cert_ca foreign-ca &&
			cert_leaf server ca /CN=idgen-host "IP:127.0.0.1" serverAuth "" 30 &&
			cert_leaf minter ca /CN=mint-loop "" clientAuth "" 30 &&
			cert_leaf prometheus ca /CN=prometheus "" clientAuth "" 30 &&
			cert_leaf foreign foreign-ca /CN=mint-loop "" clientAuth "" 30
	)
}
# etcd's users as idgend(8) gives the commands: root (auth needs it), and
# idgend with readwrite on its prefix alone.
etcd_users() {
	etcdctl_ user add root --new-user-password="$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')" &&
		etcdctl_ role add idgend &&
		etcdctl_ role grant-permission idgend --prefix=true readwrite /idgen/ &&
		etcdctl_ user add idgend --new-user-password="$(head -n 1 "$pki/etcd/password")" &&
		etcdctl_ user grant-role idgend idgend &&
		etcdctl_ auth enable
}
site() {
	certificates || return 1
	export ETCD_TLS=$pki/etcd
	etcd_cluster host 3 || return 1
	etcd_users >"$work/etcd-users.log" 2>&1 || { cat "$work/etcd-users.log"; return 1; }
	cat >"$work/chrony.conf" <<-EOF
		local stratum 8
		allow 127.0.0.1
		bindaddress 127.0.0.1
		port 123
		cmdport 0
		pidfile $work/chronyd.pid
	EOF
	chronyd -x -f "$work/chrony.conf" -l "$work/chronyd.log" || return 1
}
tap_step "the site: three etcd members (TLS only, client certificates, auth: root and idgend's user), an NTP server" site || bail
http_port=$(etcd_free_port_but "${ETCD_URLS[@]##*:}")
grpc_port=$(etcd_free_port_but "${ETCD_URLS[@]##*:}" "$http_port")
prom_port=$(etcd_free_port_but "${ETCD_URLS[@]##*:}" "$http_port" "$grpc_port")
for i in "${!ETCD_URLS[@]}"; do
	site_names+=(-e "s|etcd-$((i + 1)).example.net:2379|10.0.2.2:${ETCD_URLS[i]##*:}|g")
done
url=https://127.0.0.1:$http_port
# hcurl ARGS...: curl to idgen-httpd, trusting its CA, as the minting's
# client certificate.
hcurl() {
	curl --cacert "$pki/httpd/ca.pem" --cert "$pki/httpd/minter.pem" --key "$pki/httpd/minter.key" "$@"
}

# --- booting it --------------------------------------------------------------

# boot: the disk's newest kernel (what a boot loader's default entry
# would be), systemd as PID 1; until the command channel answers.
boot() {
	local kernel
	boots=$((boots + 1))
	kernel=$(debugfs -R 'ls /boot' "$img" 2>/dev/null | tr -s ' \t' '\n' |
		sed -n 's/^vmlinuz-//p' | sort -V | tail -n 1)
	[ -n "$kernel" ] || { echo "no kernel in the disk's /boot"; return 1; }
	debugfs -R "dump /boot/vmlinuz-$kernel $work/vmlinuz" "$img" 2>/dev/null &&
		debugfs -R "dump /boot/initrd.img-$kernel $work/initrd" "$img" 2>/dev/null || return 1
	echo "# boot $boots: $kernel"
	rm -f "$sock"
	timeout 1800 qemu-system-x86_64 -accel tcg -m 2048 -smp 2 -display none -monitor none \
		-no-reboot -kernel "$work/vmlinuz" -initrd "$work/initrd" \
		-append "root=/dev/vda rw console=ttyS0 panic=-1" \
		-drive "file=$img,format=raw,if=virtio" \
		-serial "file:$work/console-$boots.log" -serial "unix:$sock,server=on,wait=off" \
		-netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$http_port-:8080,hostfwd=tcp:127.0.0.1:$grpc_port-:9090" \
		-device virtio-net-pci,netdev=n0 >"$work/qemu-$boots.log" 2>&1 &
	qemu_pid=$!
	/usr/bin/python3 "$here/guest.py" "$sock" --timeout 300 wait || return 1
	local state
	state=$(g --timeout 300 'systemctl is-system-running --wait')
	echo "# systemd: $state"
	[ "$state" = running ] || { g 'systemctl --failed --no-legend'; return 1; }
}
# down: QEMU gone after the guest's poweroff or reboot (-no-reboot).
down() {
	local t
	for ((t = 0; t < 600; t++)); do
		kill -0 "$qemu_pid" 2>/dev/null || { wait "$qemu_pid"; qemu_pid=; return 0; }
		sleep 0.5
	done
	echo "the guest did not go down"
	return 1
}
# A kernel problem on any console so far.
consoles_clean() {
	! grep -HE 'BUG:|WARNING:|Oops|Call Trace|Kernel panic' "$work"/console-*.log
}
ready() { [ "$(hcurl -s -o /dev/null -w '%{http_code}' -m 3 "$url/readyz")" = 200 ]; }
wait_ready() {
	local t
	for ((t = 0; t < ${1:-180}; t++)); do
		ready && return 0
		sleep 1
	done
	echo "# /readyz: $(hcurl -s -m 3 "$url/readyz")"
	return 1
}

check "the README has each host-test block, with no example.net name left after the site's are put in" readme_blocks
tap_step "boot 1: systemd is running, $(debugfs -R 'ls /boot' "$img" 2>/dev/null | grep -o 'vmlinuz-[^ ]*' | sort -V | tail -n 1)" boot || bail
check "systemd is PID 1" g 'test "$(cat /proc/1/comm)" = systemd'
check "idgen $prev installed: dpkg and the module DKMS built" \
	g "dpkg-query -W -f='\${Version}' idgen-tools | grep -qx '$prev' && test -n \"\$(find /lib/modules/\$(uname -r)/updates/dkms -name 'idgen.ko*')\""
check "the module is not loaded before idgend's unit starts" g '! grep -q "^idgen " /proc/modules'

phase configure
tap_step "the README's configuration (NTP, idgend.conf in etcd mode, idgen-httpd.conf, a public-ID key as a credential)" \
	g "set -e; $(readme configure)"
# to_guest FILE PATH: FILE as the guest's PATH, 0644 (a .key or a
# password 0600), root's.
to_guest() {
	local mode=644
	case $2 in *.key | *password) mode=600 ;; esac
	g "base64 -d >'$2.new' <<'EOF'
$(base64 -w 76 "$1")
EOF
chmod $mode '$2.new' && mv '$2.new' '$2'"
}
site_files() {
	to_guest "$pki/etcd/ca.pem" /etc/idgen/etcd-ca.pem &&
		to_guest "$pki/etcd/idgend.pem" /etc/idgen/etcd-client.pem &&
		to_guest "$pki/etcd/idgend.key" /etc/idgen/etcd-client.key &&
		to_guest "$pki/etcd/password" /etc/idgen/etcd-password &&
		to_guest "$pki/httpd/server.pem" /etc/idgen/idgen-httpd.pem &&
		to_guest "$pki/httpd/server.key" /etc/idgen/idgen-httpd.key &&
		to_guest "$pki/httpd/ca.pem" /etc/idgen/clients-ca.pem
}
tap_step "the site's certificates, keys and etcd password in the guest's /etc/idgen" site_files
tap_step "the README's securing (etcd over TLS as user idgend, idgen-httpd with mTLS, keys and password as credentials)" \
	g "set -e; $(readme secure)"
# The test's own drop-ins (see the top of this file).
tap_step "the test's drop-ins: a 45 s lease renewed every 5 s; a denied system call kills idgen-httpd" g '
	mkdir -p /etc/systemd/system/idgend.service.d /etc/systemd/system/idgen-httpd.service.d &&
	printf "[Service]\nExecStart=\nExecStart=/usr/sbin/idgend --lease-ms 45000 --renew-ms 5000\n" \
		>/etc/systemd/system/idgend.service.d/zz-host-test.conf &&
	printf "[Service]\nSystemCallErrorNumber=\n" \
		>/etc/systemd/system/idgen-httpd.service.d/zz-host-test.conf'
tap_step "the README's start: systemctl enable --now idgend idgen-httpd" g "set -e; $(readme start)"
check "idgen-httpd ready from the build machine (/readyz 200 through the forwarded port)" wait_ready
check "both units active" g 'systemctl is-active idgend idgen-httpd'

# What the securing must refuse.  Each refusal is checked beside the same
# call made right, so that a wrong port or a member down cannot pass for
# a refusal.
code() { curl -s -o /dev/null -w '%{http_code}' -m 5 "$@"; }
etcd_refuses() {
	local u=${ETCD_URLS[0]} c=$pki/etcd r='{"key":"L2lkZ2VuLw==","range_end":"L2lkZ2VuMA=="}'
	echo "# etcd: plaintext $(code -X POST "http://${u#https://}/v3/kv/range" -d "$r")," \
		"no certificate $(code --cacert "$c/ca.pem" -X POST "$u/v3/kv/range" -d "$r")," \
		"another CA's $(code --cacert "$c/ca.pem" --cert "$c/foreign.pem" --key "$c/foreign.key" \
			-X POST "$u/v3/kv/range" -d "$r")"
	[ "$(code -X POST "http://${u#https://}/v3/kv/range" -d "$r")" = 000 ] &&
		[ "$(code --cacert "$c/ca.pem" -X POST "$u/v3/kv/range" -d "$r")" = 000 ] &&
		[ "$(code --cacert "$c/ca.pem" --cert "$c/foreign.pem" --key "$c/foreign.key" \
			-X POST "$u/v3/kv/range" -d "$r")" = 000 ] &&
		etcdctl_ get --prefix /idgen/r2/w/ --keys-only | grep -q '^/idgen/r2/w/'
}
check "etcd refuses plaintext, no client certificate and another CA's; admin's certificate reads idgend's records" etcd_refuses
# etcdctl as idgend: its certificate (no CN) and its user.
as_idgend() {
	ETCDCTL_API=3 /usr/bin/etcdctl --endpoints "$(etcd_endpoints)" --cacert "$pki/etcd/ca.pem" \
		--cert "$pki/etcd/idgend.pem" --key "$pki/etcd/idgend.key" \
		--user "idgend:$(head -n 1 "$pki/etcd/password")" --dial-timeout 2s --command-timeout 5s "$@"
}
role_bounded() {
	local out
	as_idgend get --prefix /idgen/r2/w/ --keys-only | grep -q '^/idgen/r2/w/' || return 1
	out=$(as_idgend put /other/probe x 2>&1) && { echo "# put /other/probe: $out"; return 1; }
	grep -q 'permission denied' <<<"$out" || { echo "# put /other/probe: $out"; return 1; }
	out=$(ETCDCTL_API=3 /usr/bin/etcdctl --endpoints "$(etcd_endpoints)" --cacert "$pki/etcd/ca.pem" \
		--cert "$pki/etcd/idgend.pem" --key "$pki/etcd/idgend.key" --dial-timeout 2s \
		--command-timeout 5s get --prefix /idgen/ 2>&1) && { echo "# no user: $out"; return 1; }
	echo "# etcd: idgend's user reads /idgen/, is refused /other/; no user: ${out##*Error: }"
}
check "etcd: idgend's user reads its prefix and may write nothing else; without a user, nothing" role_bounded
check "idgend speaks to etcd over https, as user idgend, the key and password from its credentials" \
	g 'c=$(idgend --check-config) && grep -q "^endpoints = https://10.0.2.2:" <<<"$c" &&
	   grep -qx "user = idgend" <<<"$c" && grep -qx "key_file = etcd-client.key" <<<"$c" &&
	   grep -qx "password_file = etcd-password" <<<"$c" &&
	   cmp /run/credentials/idgend.service/etcd-client.key /etc/idgen/etcd-client.key &&
	   cmp /run/credentials/idgend.service/etcd-password /etc/idgen/etcd-password'
check "idgen-httpd's TLS key from its credential" \
	g 'cmp /run/credentials/idgen-httpd.service/idgen-httpd.key /etc/idgen/idgen-httpd.key'
httpd_refuses() {
	local h=$pki/httpd p
	p=$(code "http://127.0.0.1:$http_port/readyz")
	echo "# idgen-httpd /readyz: plaintext $p," \
		"no certificate $(code --cacert "$h/ca.pem" "$url/readyz")," \
		"another CA's $(code --cacert "$h/ca.pem" --cert "$h/foreign.pem" --key "$h/foreign.key" "$url/readyz")," \
		"the minting's $(hcurl -s -o /dev/null -w '%{http_code}' -m 5 "$url/readyz")"
	[ "$p" != 200 ] && [ "$(code --cacert "$h/ca.pem" "$url/readyz")" = 000 ] &&
		[ "$(code --cacert "$h/ca.pem" --cert "$h/foreign.pem" --key "$h/foreign.key" "$url/readyz")" = 000 ] &&
		[ "$(hcurl -s -o /dev/null -w '%{http_code}' -m 5 "$url/readyz")" = 200 ]
}
check "idgen-httpd refuses plaintext, no client certificate and another CA's; the minting's certificate gets 200" httpd_refuses
grpc_refuses() {
	local out
	out=$(/usr/bin/python3 "$top/tests/httpd/grpc_cli.py" "$work" "$grpc_port" next 1 2>&1) &&
		{ echo "# plaintext gRPC answered: $out"; return 1; }
	echo "# plaintext gRPC: $out"
	out=$(/usr/bin/python3 "$top/tests/httpd/grpc_cli.py" --tls "$pki/httpd/ca.pem" "" "" \
		"$work" "$grpc_port" next 1 2>&1) && { echo "# gRPC without a certificate answered: $out"; return 1; }
	echo "# gRPC without a certificate: $out"
}
check "idgen-httpd's gRPC refuses plaintext and a TLS client without a certificate" grpc_refuses
check "the module loaded by idgend's unit (ExecStartPre modprobe)" \
	g 'grep -q "^idgen " /proc/modules && systemctl show idgend -p ExecStartPre | grep -q "modprobe.*status=0"'
g 'journalctl -u idgend -o cat' | sed 's/^/#   idgend: /'
check "idgend's journal: one line for the claim, none at error level" \
	g 'test "$(journalctl -u idgend -o cat | grep -c "^lease claimed")" = 1 && test -z "$(journalctl -u idgend -p err -o cat)"'
# systemd's dynamic users are UIDs 61184-65519.
check "idgen-httpd runs as its dynamic user" \
	g 'u=$(awk "/^Uid:/ { print \$2 }" /proc/"$(systemctl show -p MainPID --value idgen-httpd)"/status) &&
	   test "$u" -ge 61184 -a "$u" -le 65519'
# A denied call kills it (the drop-in above): the kernel logs each as
# an audit record of type 1326, and systemd counts the restarts.
filter_held() {
	! grep -h 'type=1326' "$work"/console-*.log &&
		g 'test "$(systemctl show -p NRestarts --value idgen-httpd)" = 0'
}
check "idgen-httpd's system-call filter denied no call it makes (no SIGSYS, no restart)" filter_held
check "idgenctl status reads the module over netlink: a lease in force" \
	g 'idgenctl status | grep -q "^ *lease: in force"'

mint_once() {
	local out
	out=$(hcurl -sf -m 5 -X POST -H 'Content-Type: application/json' -d "{\"count\": $1}" \
		"$url/v1/ids:next") || return 1
	/usr/bin/python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)["ids"]))' \
		<<<"$out" >>"$extra_ids"
}
check "IDs over HTTP from the build machine" mint_once 100
grpc_ids() {
	/usr/bin/python3 "$top/tests/httpd/grpc_cli.py" --tls "$pki/httpd/ca.pem" "$pki/httpd/minter.pem" \
		"$pki/httpd/minter.key" "$work" "$grpc_port" next 100 >"$work/grpc-ids" &&
		[ "$(wc -l <"$work/grpc-ids")" = 100 ] && cat "$work/grpc-ids" >>"$extra_ids"
}
check "IDs over gRPC (TLS, with a client certificate) from the build machine" grpc_ids
public_ids() {
	local out id pub
	out=$(hcurl -sf -m 5 -X POST -H 'Content-Type: application/json' \
		-d '{"count": 1, "public": true}' "$url/v1/ids:next") || return 1
	read -r id pub < <(/usr/bin/python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["ids"][0], a["public"][0])' <<<"$out")
	echo "$id" >>"$extra_ids"
	[ "$(hcurl -sf -m 5 "$url/v1/public/$pub")" = "$(hcurl -sf -m 5 "$url/v1/ids/$id")" ]
}
check "public IDs with the key handed over as a credential" public_ids
pg_ids() {
	g "runuser -u postgres -- psql -qAtX -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION idgen' \
		-c 'CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT idgen_next(), n int)' \
		-c 'INSERT INTO orders (n) SELECT generate_series(1, 1000)' \
		-c 'SELECT id FROM orders ORDER BY n'" >"$work/pg-ids" || return 1
	[ "$(wc -l <"$work/pg-ids")" = 1000 ] && sort -c -n -u "$work/pg-ids" &&
		cat "$work/pg-ids" >>"$extra_ids"
}
check "PostgreSQL: a column DEFAULT idgen_next(), 1000 rows, increasing" pg_ids

# --- Prometheus --------------------------------------------------------------

prom() {
	mkdir -p "$work/prom" &&
		sed 's/^\( *for:\).*/\1 10s/' "$top/helper/httpd/idgen-alerts.yml" >"$work/prom/rules.yml" &&
		cat >"$work/prom/prometheus.yml" <<-EOF
			global:
			  scrape_interval: 2s
			  evaluation_interval: 2s
			rule_files: [rules.yml]
			scrape_configs:
			  - job_name: idgen-httpd
			    scheme: https
			    tls_config:
			      ca_file: $pki/httpd/ca.pem
			      cert_file: $pki/httpd/prometheus.pem
			      key_file: $pki/httpd/prometheus.key
			    static_configs:
			      - targets: ['127.0.0.1:$http_port']
			  # What mTLS must refuse: a plaintext scrape, one without a
			  # client certificate.
			  - job_name: plaintext
			    static_configs:
			      - targets: ['127.0.0.1:$http_port']
			  - job_name: no-certificate
			    scheme: https
			    tls_config:
			      ca_file: $pki/httpd/ca.pem
			    static_configs:
			      - targets: ['127.0.0.1:$http_port']
		EOF
	prometheus --config.file="$work/prom/prometheus.yml" --storage.tsdb.path="$work/prom/data" \
		--web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
	prom_pid=$!
}
# prom_query EXPR: the first sample's value, or nothing.
prom_query() {
	curl -sf -m 3 "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" |
		/usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null
}
# alert_state NAME: pending, firing, or inactive.
alert_state() {
	curl -sf -m 3 "http://127.0.0.1:$prom_port/api/v1/alerts" |
		/usr/bin/python3 -c 'import json,sys
a=[x["state"] for x in json.load(sys.stdin)["data"]["alerts"] if x["labels"]["alertname"]==sys.argv[1]]
print(a[0] if a else "inactive")' "$1" 2>/dev/null
}
# until_ SECONDS CMD...: CMD succeeds within SECONDS.
until_() {
	local t=$1
	shift
	for ((; t > 0; t--)); do
		"$@" && return 0
		sleep 1
	done
	return 1
}
prom_up() { [ "$(prom_query 'up{job="idgen-httpd"}')" = 1 ]; }
prom_ready() { [ "$(prom_query idgen_ready)" = 1 ]; }
# up is 0 for a target that was scraped and failed, none before a scrape.
prom_refused() {
	[ "$(prom_query 'up{job="plaintext"}')" = 0 ] && [ "$(prom_query 'up{job="no-certificate"}')" = 0 ]
}
# The certificate's expiry, as the shipped IdgenCertificateExpiring reads
# it: the metric there, the alert quiet.
prom_cert() {
	[ -n "$(prom_query 'idgen_tls_certificate_expiry_seconds{job="idgen-httpd"} > 7 * 86400')" ] &&
		[ "$(alert_state IdgenCertificateExpiring)" = inactive ]
}
tap_step "Prometheus started with the shipped alerting rules" prom
check "Prometheus: the host's target is up (https, its own client certificate)" until_ 60 prom_up
check "Prometheus: idgen_ready is 1" until_ 30 prom_ready
check "Prometheus: a plaintext scrape and one without a client certificate are down" until_ 30 prom_refused
check "Prometheus: the server certificate's expiry scraped, IdgenCertificateExpiring quiet" prom_cert

/usr/bin/python3 "$here/mint_loop.py" "$url" "$mintlog" "$work/phase" "$work/stop-minting" \
	"$pki/httpd/ca.pem" "$pki/httpd/minter.pem" "$pki/httpd/minter.key" &
mint_pid=$!
phase running
sleep 5
check "minting from the build machine, one call at a time" /usr/bin/python3 "$here/ids_check.py" minted "$mintlog" running

# --- etcd's leader killed during renewals -------------------------------------

lease_until() { g 'idgenctl lease show' | sed -n 's/^ *valid until: \([0-9]*\).*/\1/p'; }
phase leader-killed
leader=$(etcd_leader) || { not_ok "etcd's cluster has a leader"; bail; }
echo "# etcd's leader: member $leader"
until_before=$(lease_until)
etcd_stop "$leader"
held=yes
for ((t = 0; t < 20; t++)); do
	ready || held=no
	sleep 1
done
check "etcd's leader killed: /readyz stayed 200 for the 20 s after" test "$held" = yes
until_after=$(lease_until)
echo "# lease valid until ms $until_before before, $until_after 20 s after"
check "etcd's leader killed: idgend renewed through the other members" \
	test -n "$until_before" -a "${until_after:-0}" -gt "${until_before:-0}"
check "etcd's leader killed: minting went on, no call failed" eval \
	'/usr/bin/python3 "$here/ids_check.py" minted "$mintlog" leader-killed &&
	 /usr/bin/python3 "$here/ids_check.py" no-fail "$mintlog" leader-killed'
etcd_start "$leader"
etcd_wait "$leader"

# --- idgend killed -9 -----------------------------------------------------------

phase idgend-killed
g 'systemctl kill -s KILL idgend'
restarted() { g 'test "$(systemctl show -p NRestarts --value idgend)" = 1 && systemctl is-active -q idgend'; }
check "idgend killed -9: systemd started it again" until_ 60 restarted
check "idgend killed -9: the new idgend adopted the module's lease" \
	until_ 20 g 'journalctl -u idgend -o cat | grep -q "^lease adopted"'
sleep 3
check "idgend killed -9: minting went on, no call failed" eval \
	'/usr/bin/python3 "$here/ids_check.py" minted "$mintlog" idgend-killed &&
	 /usr/bin/python3 "$here/ids_check.py" no-fail "$mintlog" idgend-killed'

# --- etcd stopped ---------------------------------------------------------------

phase etcd-stopped
for i in 0 1 2; do
	etcd_stop "$i"
done
not_ready() { [ "$(hcurl -s -o /dev/null -w '%{http_code}' -m 3 "$url/readyz")" = 503 ]; }
early=no
if until_ 60 not_ready; then
	# Out of rotation, and still minting: before the fence.
	mint_once 1 && early=yes
fi
check "etcd stopped: /readyz 503 while the device still mints (before the fence)" test "$early" = yes
lease_alert() { [ "$(alert_state IdgenLeaseExpiring)" = "$1" ]; }
check "etcd stopped: Prometheus' IdgenLeaseExpiring pending" until_ 30 lease_alert pending
check "etcd stopped: Prometheus' IdgenLeaseExpiring firing" until_ 30 lease_alert firing
refused() {
	[ "$(hcurl -s -o /dev/null -w '%{http_code}' -m 5 -X POST -H 'Content-Type: application/json' \
		-d '{"count": 1}' "$url/v1/ids:next")" = 503 ]
}
check "etcd stopped: the device refuses at the fence (503)" until_ 60 refused
hcurl -s -m 3 -X POST -H 'Content-Type: application/json' -d '{"count":1}' "$url/v1/ids:next" |
	sed 's/^/# refused: /'
echo
phase etcd-back
for i in 0 1 2; do
	etcd_start "$i"
done
for i in 0 1 2; do
	etcd_wait "$i"
done
check "etcd back: ready again" wait_ready 90
check "etcd back: IdgenLeaseExpiring resolved" until_ 30 lease_alert inactive
check "etcd back: minting again" mint_once 10

# --- the package upgrade --------------------------------------------------------

phase upgrade
pid_before=$(g 'systemctl show -p MainPID --value idgend')
tap_step "the README's upgrade: apt install of $version's packages" \
	g --timeout 900 "cd /root/idgen-$version/src || exit 1; set -e; $(readme upgrade)"
check "upgrade: idgend restarted (a new process) and active" \
	g "test '${pid_before:-0}' -gt 0 && test \"\$(systemctl show -p MainPID --value idgend)\" != '$pid_before' && systemctl is-active idgend idgen-httpd"
check "upgrade: idgend is $version" g "idgend --version | grep -qx 'idgend $version'"
check "upgrade: the module in memory is still $prev's until the next boot" \
	g "test \"\$(cat /sys/module/idgen/version)\" = '$prev'"
check "upgrade: ready again" wait_ready 120
g 'journalctl -u idgend -o cat | tail -n 6' | sed 's/^/#   idgend: /'

# valid_until RECORD: the valid_until_ms of etcd's one worker record.
valid_until() {
	/usr/bin/python3 -c 'import json,sys
r = [json.loads(l) for l in sys.stdin if l.startswith("{")]
print(r[0]["valid_until_ms"] if len(r) == 1 else "")' <<<"$1"
}

# --- reboot -----------------------------------------------------------------------

phase reboot
worker_before=$(g 'idgenctl lease show' | sed -n 's/^ *node: region [0-9]* worker \([0-9]*\)$/\1/p')
g --timeout 10 'systemctl reboot'
tap_step "systemctl reboot: the guest went down" down || bail
record=$(etcdctl_ get "/idgen/r2/w/$worker_before" --print-value-only 2>/dev/null)
echo "# etcd after the reboot's shutdown: $record"
last_ms=$(valid_until "$record")
tap_step "boot 2 (a reboot)" boot || bail
check "after the reboot: ready by itself" wait_ready 180
check "after the reboot: the module is $version" g "test \"\$(cat /sys/module/idgen/version)\" = '$version'"
claim=$(g 'journalctl -u idgend -o cat' | grep '^lease claimed: ' | tail -n 1)
echo "# before the boot: r2/w$worker_before, valid_until ${last_ms:-?} in etcd; after it: $claim"
check "after the reboot: its number taken back, with its last valid_until as the floor" \
	test -n "$last_ms" -a -n "$worker_before" -a \
	"${claim#"lease claimed: r2/w$worker_before, floor ms $last_ms,"}" != "$claim"

# --- the kernel upgrade ------------------------------------------------------------

phase kernel-upgrade
g --timeout 10 'systemctl poweroff'
tap_step "poweroff for the kernel upgrade" down || bail
offline_kernel() {
	mkdir -p "$mnt" && mount -o loop "$img" "$mnt" || return 1
	local m
	for m in proc sys dev; do
		mount --rbind "/$m" "$mnt/$m" || return 1
	done
	chroot "$mnt" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 \
		apt-get -q install -y --no-download "${new_kernel[@]}" >"$work/kernel.log" 2>&1
	local rc=$?
	umount -R "$mnt"
	[ "$rc" -eq 0 ] || tail -n 30 "$work/kernel.log"
	return "$rc"
}
tap_step "apt install ${new_kernel[*]} into the host's disk" offline_kernel || bail
tap_step "boot 3: the new kernel" boot || bail
kver=$(g 'uname -r')
check "the host runs the new kernel ($kver)" test -n "$kver" -a "$kver" = "$(sed -n 's/^Setting up linux-image-\([0-9][^ ]*\) .*/\1/p' "$work/kernel.log" | sort -V | tail -n 1)"
check "DKMS built idgen.ko for $kver, and it is loaded" \
	g 'ls /lib/modules/$(uname -r)/updates/dkms/idgen.ko* && grep -q "^idgen " /proc/modules'
check "on the new kernel: ready" wait_ready 180
check "on the new kernel: minting" mint_once 10

check "through every step: idgen-httpd's system-call filter denied no call it makes" filter_held

# --- purge -------------------------------------------------------------------------

phase purge
tap_step "the README's purge" g --timeout 600 "set -e; $(readme purge)"
check "purge: both units gone" g '! systemctl is-active -q idgend idgen-httpd'
released=$(g 'journalctl -u idgend -o cat' | sed -n 's/^lease released: .*last ms \([0-9]*\);.*/\1/p' | tail -n 1)
record=$(etcdctl_ get --prefix /idgen/r2/w/ --print-value-only 2>/dev/null)
echo "# etcd after the purge: $record; idgend released at last ms ${released:-?}"
check "purge: etcd holds the number free, its valid_until the last ms minted" \
	test -n "$released" -a "$(valid_until "$record")" = "$released"
check "purge: DKMS knows no idgen" g 'test -z "$(dkms status idgen)"'
# The test's own files: its drop-in, the new build's folder.
g 'rm -rf /etc/systemd/system/idgend.service.d /root/idgen-*'
g --timeout 10 'systemctl poweroff'
tap_step "poweroff after the purge" down || bail
# New files naming idgen, but the test's own command channel.
left() {
	local new
	mkdir -p "$mnt" && mount -o loop,ro "$img" "$mnt" || return 1
	file_list "$mnt" >"$work/files.after"
	umount "$mnt"
	new=$(comm -13 "$work/files.before" "$work/files.after" | grep -i idgen | grep -v idgen-test-agent)
	[ -z "$new" ] || { echo "$new"; return 1; }
}
check "purge: no file of idgen's left on the disk" left

# --- across everything ---------------------------------------------------------------

touch "$work/stop-minting"
wait "$mint_pid"
mint_rc=$?
mint_pid=
check "the build machine's minting ran to the end (mint_loop.py exited 0)" test "$mint_rc" = 0
check "no ID twice, across every fault, boot and interface" \
	/usr/bin/python3 "$here/ids_check.py" unique "$mintlog" "$extra_ids"
check "the host's IDs strictly increasing in the order minted, across every fault and boot" \
	/usr/bin/python3 "$here/ids_check.py" rising "$mintlog"
check "no kernel problem on any console" consoles_clean
echo "1..$n"
exit "$status"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deps.sh: install, from Debian's archive, everything building and testing
# idgen needs on a Debian 12 (bookworm) or 13 (trixie) amd64 host.  Run as
# root.
#
#   scripts/deps.sh            install them
#   scripts/deps.sh --print    print the package names, one a line, and
#                              install nothing (tests/deps-names.sh
#                              checks them against each release's archive)
#
# The release is the host's (VERSION_CODENAME in /etc/os-release);
# IDGEN_DEBIAN_RELEASE=bookworm|trixie overrides it.
set -euo pipefail

die() { echo "deps.sh: $*" >&2; exit 1; }

print=
case ${1:-} in
--print) print=1 ;;
'') ;;
*) die "usage: $0 [--print]" ;;
esac

# shellcheck source=/dev/null
release=${IDGEN_DEBIAN_RELEASE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-}")}
# What differs between the releases: the kernels (bookworm's stock kernel
# is 6.1 and its 6.12 comes as linux-image-6.12-amd64 from
# bookworm-security; trixie's stock kernel is 6.12), gcc's i386 runtime,
# the compiler runtime of clang (14 on bookworm, 19 on trixie), and
# grpc-proto (gRPC's own health.proto), which trixie does not package.
case $release in
bookworm)
	release_packages=(linux-headers-6.12-amd64 linux-image-6.12-amd64
		lib32gcc-12-dev libclang-rt-14-dev grpc-proto)
	;;
trixie)
	release_packages=(lib32gcc-14-dev libclang-rt-19-dev)
	;;
*)
	die "Debian release '${release:-unknown}' not supported (bookworm or trixie;" \
		"IDGEN_DEBIAN_RELEASE overrides the host's)"
	;;
esac

packages=(
	# build
	build-essential kmod dkms sparse pkg-config libnl-genl-3-dev
	# the kernels the module is built and tested against: the release's
	# stock kernel, and on bookworm also 6.12 (release_packages)
	linux-headers-amd64 linux-image-amd64
	# the other kernels of the matrix (scripts/build/fetch-kernels.sh): Debian's
	# archive keys for a private apt state, mmdebstrap for the build roots
	# of newer suites, the arm64 cross-compiler for Debian 12's arm64
	# headers, and xz/zstd for the guests' compressed modules
	debian-archive-keyring mmdebstrap gcc-aarch64-linux-gnu xz-utils zstd
	# the 32-bit caller test (tests/vm/Makefile): i386 libc and libgcc;
	# not gcc-multilib, which conflicts with the cross-compiler (and
	# lib32gcc-N-dev, release_packages)
	libc6-dev-i386
	# checkpatch.pl and kernel-doc come from the kernel source tarball
	linux-source-6.12
	# the guests
	qemu-system-x86 busybox-static cpio
	# the netlink spec's checks, and the kernel's ynl tool that reads it
	python3-yaml python3-jsonschema
	# libidgen's tests: the JavaScript client and the PostgreSQL range query
	nodejs postgresql
	# the PostgreSQL extension (pg/): PGXS and the server's headers for the
	# release's default PostgreSQL (15 on Debian 12, 17 on Debian 13), and
	# pg_buildext for its Debian package; one name for both releases
	postgresql-server-dev-all
	# idgend: etcd's JSON gateway through libcurl and json-c, base64 from
	# libcrypto; a real etcd to test against, valgrind over the etcd
	# client, and libfaketime for a wall clock before the epoch (and for
	# certificates whose time is past); openssl makes the certificates of
	# the TLS test (tests/idgend/secure.sh);
	# libidgen-client (lib/client/) takes the same libcurl and json-c,
	# and valgrind runs its tests too
	libcurl4-openssl-dev libjson-c-dev libssl-dev
	etcd-server etcd-client curl valgrind faketime openssl
	# the etcd client's tests against Debian 13's json-c 0.18, built from
	# its source (tests/idgend/json-c-0.18.sh)
	cmake
	# idgen-httpd: HTTP on libmicrohttpd, request bodies through json-c;
	# promtool (in prometheus) checks its /metrics and alerting rules,
	# systemd-analyze (in systemd) its unit
	libmicrohttpd-dev prometheus systemd
	# its TLS, on both listeners: GnuTLS, libmicrohttpd's own TLS library
	# (Documentation/design.md section 9.3); the tests make their
	# certificates with openssl (above)
	libgnutls28-dev
	# its gRPC face: HTTP/2 on libnghttp2, messages by protobuf-c from
	# the .proto at build time (with libprotobuf-dev's timestamp.proto);
	# tested with Python's grpcio (stubs by protoc and grpc_python_plugin,
	# the health client's from gRPC's own health.proto in grpc-proto,
	# packaged in Debian 12 only), raw HTTP/2 through python3-h2, and
	# benchmarked with h2load (nghttp2-client)
	libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev
	protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-protobuf
	python3-h2 nghttp2-client
	# idgen-httpd in a real browser (tests/httpd/browser/): headless
	# Chromium, nginx serving the page beside the service; the HTTP
	# benchmark (scripts/bench/bench-http.sh): wrk, nginx as the anchor, gnuplot
	chromium nginx wrk gnuplot-nox
	# idgend's fuzz targets: libFuzzer and the sanitizers (with clang's
	# runtime, libclang-rt-N-dev, release_packages)
	clang
	# the Debian packages (debian/, dpkg-buildpackage) and their check
	debhelper dh-dkms lintian
	# a host booted under systemd (tests/host/): the site's NTP server
	# on this machine's loopback (chronyd, never setting this clock), and
	# its disk made and read with e2fsprogs' mkfs.ext4 -d and debugfs
	chrony e2fsprogs
	# the lease protocol's model checker (tests/model/)
	spin
	# the system-call fuzzer aimed at /dev/idgen (tests/vm/fuzz-suite.sh)
	trinity
	"${release_packages[@]}"
)

if [ -n "$print" ]; then
	printf '%s\n' "${packages[@]}"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: run as root (it installs Debian packages)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q "${packages[@]}"
# npm, for the pinned Node gRPC client of tests/httpd/grpc-node: inside
# some builds of Node (NodeSource's), a package of its own beside
# Debian's nodejs.
command -v npm >/dev/null || apt-get install -y -q npm
# ... and that client, exactly the versions its lock file pins (npm ci),
# now rather than in its suite: the suites that run simulated workers
# have no network but their own loopback (tests/lib/own-namespaces.sh).
grpc_node=$(cd "$(dirname "$0")/.." && pwd)/tests/httpd/grpc-node
if [ ! -e "$grpc_node/node_modules/.package-lock.json" ] ||
	[ "$grpc_node/package-lock.json" -nt "$grpc_node/node_modules/.package-lock.json" ]; then
	npm ci --prefix "$grpc_node" --ignore-scripts --no-audit --no-fund
fi

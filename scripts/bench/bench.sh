#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh: the benchmarks, in one guest boot so that every figure shares the
# same conditions; then the same calls counted in instructions, in a second boot
# under the counting plugin (scripts/bench/icount.sh).  Writes
# Documentation/bench/results.md (the report, with the date, kernel and
# machine), Documentation/bench/batch.dat and Documentation/bench/batch.png (ns
# per ID against batch size for every contender); then, on the host,
# idgen-httpd's HTTP figures (scripts/bench/bench-http.sh), its gRPC face's
# (scripts/bench/bench-grpc.sh), both over TLS (scripts/bench/bench-tls.sh) and
# libidgen-client's (scripts/bench/bench-client.sh).
# Run as root.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

[ "${IDGEN_SKIP_DEPS:-0}" = 1 ] || scripts/deps.sh
command -v gnuplot >/dev/null || {
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q gnuplot-nox >/dev/null
}
kver=${IDGEN_KERNEL:-$(tests/vm/kernels.sh | tail -n 1)}
scripts/build/build-module.sh "$kver" >/dev/null
make -s -C helper/idgenctl
make -s -C helper/httpd
make -s -C bench

out=Documentation/bench
mkdir -p "$out" build
log=build/bench.log
echo "== benchmarking in a $kver guest (about 2 minutes)"
load_start=$(cut -d' ' -f1 /proc/loadavg)
tests/vm/run-guest.sh --timeout 1800 --log "$log" "$kver" sh -c "
set -e
insmod build/$kver/kmod/idgen.ko
helper/idgenctl/idgenctl lease set --region 0 --worker 1 --valid-for 3600000 >/dev/null
bench/idgen_bench
bench/http_guest.sh
" >/dev/null

report=$(sed -n '/^## Single-ID/,/^IDGEN-VM-EXIT/p' "$log" | grep -av -e '^IDGEN-VM-' -e '^\[ *[0-9]')

# The same calls in instructions: exact, and the same on any host.
echo "== counting instructions in a $kver guest (under a minute)"
scripts/bench/icount.sh --profile "$kver" build/icount
icount_report=$(bench/icount/report.sh build/icount)
{
	echo "# idgen benchmarks"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "- guest kernel: Debian $kver, QEMU TCG (software emulation), 2 vCPUs, 1 GiB"
	echo "- host: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1);"
	echo "  load average (1 min) $load_start when the guest started (other work shares the host)"
	echo "- layout v1: ceiling 4096 IDs per ms per node"
	echo
	echo "Under emulation the headline is the instruction count (\"Instructions"
	echo "per call\", below the times): exact, the same on every run and every"
	echo "host, and a far better proxy of a real CPU's cost than TCG's time,"
	echo "which prices instructions unlike any CPU and moves with the host's"
	echo "load.  The times come first, with their goals, for what only time"
	echo "shows: latency tails, throughput against the node's ceiling, scaling."
	echo
	echo "Absolute times under TCG mean little; the ratios to the /dev/zero"
	echo "floor and to the in-process anchors, measured in the same run, do."
	echo "The in-process anchors wait for the next millisecond when one is"
	echo "full, as a textbook Snowflake does; /dev/idgen borrows ahead"
	echo "instead, up to its lead bound."
	echo
	printf '%s\n' "$report" | grep -v '^DAT '
	echo
	echo "![ns per ID against batch size](batch.png)"
	echo
	echo "## Instructions per call (QEMU TCG plugin bench/icount, one vCPU)"
	echo
	printf '%s\n' "$icount_report"
} >"$out/results.md"
{
	echo "# ids idgen_ns_per_id zero_ns_per_8B lockfree_ns_per_id mutex_ns_per_id buffered_ns_per_id"
	printf '%s\n' "$report" | sed -n 's/^DAT //p'
} >"$out/batch.dat"

# Public IDs and booking codes: pure computation, measured on the host.
{ echo; bench/public_bench; } >>"$out/results.md"

gnuplot <<GNUPLOT
set terminal pngcairo size 900,560 noenhanced
set output "$out/batch.png"
set title "ns per ID against IDs per call (Debian $kver guest, TCG)"
set xlabel "IDs per call"
set ylabel "ns per ID (8 bytes)"
set logscale xy 2
set key top right
set grid
plot "$out/batch.dat" using 1:2 with linespoints title "/dev/idgen read", \
     "$out/batch.dat" using 1:3 with linespoints title "/dev/zero read, same bytes", \
     "$out/batch.dat" using 1:4 with linespoints title "in-process lock-free (one atomic per ID)", \
     "$out/batch.dat" using 1:5 with linespoints title "in-process mutex", \
     "$out/batch.dat" using 1:6 with lines dashtype 2 title "libidgen buffer, 1 ID per call"
GNUPLOT
# The HTTP service, on the host: its section follows the guest's.
echo "== benchmarking idgen-httpd on the host (about 2 minutes)"
IDGEN_SKIP_DEPS=1 scripts/bench/bench-http.sh | grep '^=='
# Its gRPC face, on the host: its section follows.
echo "== benchmarking idgen-httpd's gRPC on the host (about 3 minutes)"
IDGEN_SKIP_DEPS=1 scripts/bench/bench-grpc.sh | grep '^=='
# Both over TLS, beside nginx over TLS, on the host: its section follows.
echo "== benchmarking idgen-httpd over TLS on the host (about 2 minutes)"
IDGEN_SKIP_DEPS=1 scripts/bench/bench-tls.sh | grep '^=='
# The smart client, on the host: its section follows.
echo "== benchmarking libidgen-client on the host (about 2 minutes)"
IDGEN_SKIP_DEPS=1 scripts/bench/bench-client.sh | grep '^=='
# What IDs do to a PostgreSQL primary key, on the host: its section follows.
echo "== benchmarking primary keys in PostgreSQL on the host (about 8 minutes)"
IDGEN_SKIP_DEPS=1 scripts/bench/bench-pg.sh | grep '^=='
echo "wrote $out/results.md, $out/batch.dat, $out/batch.png, $out/http.dat, $out/http.png, $out/pg.dat, $out/pg.png"
cat "$out/results.md"

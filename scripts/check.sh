#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh [--matrix]: every test of idgen, from a fresh Debian 12 machine,
# as root.
#
# Installs what it needs (scripts/deps.sh; IDGEN_SKIP_DEPS=1 skips it),
# builds the module for every supported Debian kernel, runs the style and
# static checks, then boots each kernel in a QEMU guest and runs the device
# tests there, and finally installs the module through DKMS and loads it in
# a guest.  The module is never loaded into this machine's own kernel.
#
# The kernels: Debian 12's 6.1 and 6.12 (installed by deps.sh), and the
# other kernels users run, downloaded into a cache by
# scripts/build/fetch-kernels.sh (tests/vm/kernels.sh lists both).  By default
# (and in CI) all of those others run but the ones tests/vm/kernels.sh
# --matrix-ci leaves out, and says why; --matrix runs them all.  Each is
# built at W=1 and checked with sparse.  The installed kernels run the
# whole device suite in a guest, and idgend and idgen-httpd; each other
# one that boots runs a smoke of the device (tests/vm/guest-suite.sh
# --smoke), and with --matrix the whole suite.  The README's "What runs
# where" gives the rule.  The run ends with a table of each step's time.
#
# Every check prints a TAP line through tests/lib/tap.sh, the counter
# every suite uses; the run ends with the summary line
# "N passed, N failed, N skipped" and exits non-zero on any failure.
# Logs are kept under build/logs/.
set -uo pipefail

matrix=--matrix-ci
case ${1:-} in
--matrix) matrix=--matrix ;;
"") ;;
*) echo "usage: $0 [--matrix]" >&2; exit 2 ;;
esac

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
logs=$top/build/logs
mkdir -p "$logs"

# shellcheck source=../tests/lib/tap.sh
. "$top/tests/lib/tap.sh"
failures=()
details=$logs/failed-tests.txt
: >"$details"

# Every step's wall time, for the table the run ends with.  A step that
# reads a cache names it in $cache (e.g. cache=DIR step ...): "warm" when
# it existed before the step, "fresh" when the step had to make it.
cache_root=${IDGEN_CACHE:-$HOME/.cache/idgen}
run_start=$SECONDS
timings=()
# timed NAME CMD...: run CMD, then note NAME, its seconds and its cache.
timed() {
	local name=$1 start=$SECONDS state=- rc=0
	shift
	if [ -n "${cache:-}" ]; then
		if [ -e "$cache" ]; then state=warm; else state=fresh; fi
	fi
	"$@" || rc=$?
	timings+=("$((SECONDS - start))	$state	$name")
	return "$rc"
}

pass() { ok "$1"; }
fail() { failures+=("$1"); not_ok "$1"; }

# step NAME LOG CMD...: one check, passed when CMD succeeds.
step() { timed "$1" step_run "$@"; }
step_run() {
	local name=$1 log=$logs/$2
	shift 2
	if "$@" >"$log" 2>&1; then
		pass "$name"
	else
		tail -n 40 "$log" | sed 's/^/#   /'
		fail "$name (log: ${log#"$top"/})"
		return 1
	fi
}

# tap NAME LOG CMD...: run CMD, count every TAP result line it printed,
# and fail once more if CMD itself failed (a crash, a kernel warning, a
# timeout) even when every test it reported passed.
tap() { timed "$1" tap_count "$@"; }
tap_count() {
	local name=$1 log=$logs/$2 rc line why
	shift 2
	"$@" >"$log" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		*"not ok "[0-9]*)
			fail "$name: ${line#*not ok }"
			;;
		*"ok "[0-9]*"# SKIP"*)
			line=${line#*ok }
			why=${line#*# SKIP}
			tap_skip "$name: ${line%%# SKIP*}" "${why# }"
			;;
		*"ok "[0-9]*)
			pass "$name: ${line#*ok }"
			;;
		esac
	done < <(tr -d '\r' <"$log" | grep -E '^(\[[ 0-9.]+\] )?(# )?(not )?ok [0-9]+ ' | grep -v '^# ')
	# What each failed test said before failing, for the run's last lines.
	tr -d '\r' <"$log" | awk -v name="$name" '
		/^(\[[ 0-9.]+\] )?(not )?ok [0-9]+ / {
			if ($0 ~ /not ok/) {
				print "  " name ": " $0
				for (i = 0; i < n; i++) print "    " said[i]
			}
			n = 0
			next
		}
		/^#/ { if (n == 12) { for (i = 1; i < n; i++) said[i - 1] = said[i]; n-- } said[n++] = $0 }
	' >>"$details"
	if [ "$rc" -ne 0 ]; then
		grep -v '^\[' "$log" | tail -n 40 | sed 's/^/#   /'
		fail "$name: exited $rc (log: ${log#"$top"/})"
	fi
}

if [ "${IDGEN_SKIP_DEPS:-0}" != 1 ]; then
	step "install dependencies" deps.log scripts/deps.sh || true
fi

# The debug kernel's build (build-kunit.sh: about 10 minutes on a fresh
# machine, seconds warm) needs nothing but the packages above and the
# CPU: it runs beside the downloads, builds and host suites below, at a
# lower priority, and the run waits for it before the first guest boots,
# so that no guest shares the machine with it.
debug_build_log=$logs/debug-build.log
debug_build_state=fresh
[ -e "$cache_root/debug-kernel" ] && debug_build_state=warm
debug_build_start=$SECONDS
nice -n 10 scripts/build/build-kunit.sh >"$debug_build_log" 2>&1 &
debug_build_pid=$!
# debug_build_wait: 0 once the build beside the run has succeeded; its
# time in the table is the whole build's, from its start.
debug_build_wait() {
	local rc=0
	[ -n "$debug_build_pid" ] || return "$debug_build_rc"
	wait "$debug_build_pid" || rc=$?
	timings+=("$((SECONDS - debug_build_start))	$debug_build_state	build the debug kernel (beside the run)")
	debug_build_pid=
	debug_build_rc=$rc
	return "$rc"
}
debug_build_rc=0

# The kernels of the host's Debian: 6.1 and 6.12 on 12, 6.12 on 13.
mapfile -t kernels < <(tests/vm/kernels.sh)
mapfile -t series < <(tests/vm/kernels.sh --expected)
if [ ${#kernels[@]} -lt 1 ] || [ ${#kernels[@]} -lt ${#series[@]} ]; then
	fail "find Debian ${series[*]:-} kernels with headers (found: ${kernels[*]:-none})"
fi

# The other kernels users run: downloaded (once; the cache is kept), then
# built and tested like the installed ones.
mapfile -t others < <(tests/vm/kernels.sh "$matrix")
cache=$cache_root/kernels step "fetch the kernels of the matrix: ${others[*]}" fetch-kernels.log \
	scripts/build/fetch-kernels.sh "${others[@]}"

for k in "${kernels[@]}" "${others[@]}"; do
	cache=build/$k/kmod step "build idgen.ko at W=1 without warnings for $k" "build-$k.log" \
		scripts/build/build-module.sh "$k"
done
step "checkpatch --strict, kernel-doc -Wall" checkpatch.log make -s style
# VERSION, and every place that states the version, agree.
tap "one version" version.log tests/version.sh
for k in "${kernels[@]}" "${others[@]}"; do
	step "sparse (C=2) clean for $k" "sparse-$k.log" \
		scripts/lint/sparse.sh "$k"
done
step "build the selftests" selftests-build.log make -s -C tests/selftests
step "build the benchmark" bench-build.log make -s -C bench
# make bench runs these in guests and on the host, not CI: a quoting slip
# would only show at the next benchmark run.
# shellcheck disable=SC2016 # expanded by the inner shell
step "the benchmark's scripts parse" bench-parse.log sh -c '
	sh -n bench/http_guest.sh &&
	for f in scripts/bench/*.sh bench/icount/report.sh; do
		bash -n "$f" || exit 1
	done'
step "build the 32-bit caller test" compat32-build.log make -s -C tests/vm
step "build the fuzzer" fuzz-build.log make -s -C tests/fuzz
tap "netlink spec" netlink-spec.log tests/netlink-spec.sh
# deps.sh's package names, against bookworm's and trixie's archives.
tap "dependencies per Debian release" deps-names.log tests/deps-names.sh
# libidgen and idgenctl: builds, unit tests, JavaScript and PostgreSQL.
tap "libidgen" libidgen.log tests/libidgen/run.sh
# The PostgreSQL extension: pg_regress against a throw-away server.
tap "PostgreSQL extension" pg.log tests/pg/run.sh
# idgend: the lease logic, the etcd client, the daemon against real etcd:
# the machine's (3.4 on Debian 12), and Debian 13's 3.5 for the client
# (with --matrix, for the daemon too).
etcd_also=
if cache=$cache_root/etcd/trixie step "fetch Debian 13's etcd" fetch-etcd.log scripts/build/fetch-kernels.sh --etcd trixie; then
	etcd_also=$(tail -n 1 "$logs/fetch-etcd.log")
fi
IDGEN_ETCD_ALSO=$etcd_also IDGEN_ETCD_ALSO_DAEMON=$([ "$matrix" = --matrix ] && echo 1 || echo 0) \
	tap "idgend" idgend.log tests/idgend/run.sh
# idgen-httpd: every route and bad input against the simulated generator,
# its JSON through Node, readiness, limits, configuration.
tap "idgen-httpd" httpd.log tests/httpd/run.sh
# libidgen-client: balancing, retries on another host, the buffer, against
# idgen-httpd --device sim hosts frozen, killed and faked; valgrind, ASan.
tap "libidgen-client" client.log tests/client/run.sh
# The lease protocol's model, searched by spin, and its mutants: a proof
# about lease.pml, not about the code, which the idgend suites test
# against it; five minutes a run, so with --matrix (and whenever
# lease.pml changes: tests/model/run.sh).
if [ "$matrix" = --matrix ]; then
	tap "lease model" lease-model.log tests/model/run.sh --matrix
else
	tap_skip "the lease model's searches: scripts/check.sh --matrix runs them (tests/model/run.sh)"
fi

# Nothing shares the machine with the guests from here on.
debug_build_wait

# Debian 12's two kernels: on the oldest (what most hosts run) the whole
# device suite, idgend and idgen-httpd in the guest; on the newer one the
# smoke, since the debug kernel runs the whole device suite on the same
# 6.12 source and the host test (tests/host) runs idgend and idgen-httpd on
# it.  --matrix runs everything on both.
for k in "${kernels[@]}"; do
	if [ "$k" != "${kernels[0]}" ] && [ "$matrix" != --matrix ]; then
		if [ -f "build/$k/kmod/idgen.ko" ]; then
			tap "guest $k, smoke" "guest-$k.log" \
				tests/vm/run-guest.sh --timeout "${IDGEN_GUEST_TIMEOUT:-900}" "$k" \
				tests/vm/guest-suite.sh --smoke "build/$k/kmod/idgen.ko"
		else
			fail "guest $k: no module was built"
		fi
		continue
	fi
	if [ -f "build/$k/kmod/idgen.ko" ]; then
		tap "guest $k" "guest-$k.log" \
			tests/vm/run-guest.sh --timeout "${IDGEN_GUEST_TIMEOUT:-900}" "$k" \
			tests/vm/guest-suite.sh "build/$k/kmod/idgen.ko"
		# etcd, idgend and the module together, etcd on the guest's loopback;
		# then idgen-httpd over idgend and the module, in the same guest (a
		# boot saved).
		# shellcheck disable=SC2016 # $1 is bash -c's
		tap "guest $k, idgend and idgen-httpd" "guest-idgend-$k.log" \
			tests/vm/run-guest.sh --timeout "${IDGEN_GUEST_TIMEOUT:-900}" "$k" \
			bash -c 'tests/vm/idgend-suite.sh "$1"; rc=$?
				 tests/vm/httpd-suite.sh "$1" && exit $rc' - "build/$k/kmod/idgen.ko"
	else
		fail "guest $k: no module was built"
	fi
done
# The PostgreSQL extension over the module, on one kernel (Debian 12's
# first): 8 sessions at once, backends forked from a preloading postmaster,
# a lease revoked mid-load (tests/vm/pg-suite.sh).  The extension is built
# for Debian 12's server and staged for the guest to lay over the server's
# directories.
if [ ${#kernels[@]} -gt 0 ] && [ -f "build/${kernels[0]}/kmod/idgen.ko" ]; then
	k=${kernels[0]}
	pg_guest() {
		local pgc=/usr/lib/postgresql/15/bin/pg_config stage=$top/build/pg-guest
		rm -rf "$stage" "$top/build/pg-guest-src" && mkdir -p "$top/build/pg-guest-src" &&
		cp -r "$top/pg" "$top/build/pg-guest-src/pg" &&
		ln -s "$top/lib" "$top/build/pg-guest-src/lib" &&
		ln -s "$top/include" "$top/build/pg-guest-src/include" &&
		make -s -C "$top/build/pg-guest-src/pg" PG_CONFIG=$pgc clean >/dev/null &&
		make -s -C "$top/build/pg-guest-src/pg" PG_CONFIG=$pgc >/dev/null &&
		make -s -C "$top/build/pg-guest-src/pg" PG_CONFIG=$pgc DESTDIR="$stage" install >/dev/null &&
		tests/vm/run-guest.sh --timeout "${IDGEN_GUEST_TIMEOUT:-900}" "$k" \
			tests/vm/pg-suite.sh "build/$k/kmod/idgen.ko" "$stage"
	}
	tap "guest $k, PostgreSQL" "guest-pg-$k.log" pg_guest
fi
# A 32-bit process, every ioctl through compat_ioctl, on the newest
# installed kernel.
if [ ${#kernels[@]} -gt 0 ]; then
	k=${kernels[${#kernels[@]} - 1]}
	tap "guest $k, i386 caller" "guest-compat32-$k.log" \
		tests/vm/run-guest.sh --timeout "${IDGEN_GUEST_TIMEOUT:-900}" "$k" \
		tests/vm/compat32-suite.sh "build/$k/kmod/idgen.ko"
	# Two guests as two ID hosts under one etcd, one frozen whole while the
	# client library mints from both through port forwards:
	# once, on the newest installed kernel (two TCG guests at once).
	tap "two guests as two hosts, $k" "fleet-$k.log" tests/vm/fleet-test.sh "$k"
fi
# The instruction counts of `make bench` are exact or worth nothing: the
# benchmark's calls counted twice (two short boots of the newest installed
# kernel under bench/icount's plugin), every per-call mode must agree.
if [ ${#kernels[@]} -gt 0 ]; then
	k=${kernels[${#kernels[@]} - 1]}
	tap "instruction counts, $k" "icount-$k.log" tests/vm/icount-determinism.sh "$k"
fi
# The device on each other kernel that boots (the arm64 ones are only
# cross-built): a smoke (load, mint, lease, fence, revoke, a clock step,
# unload), and with --matrix the whole suite.
smoke=--smoke
[ "$matrix" = --matrix ] && smoke=
for k in "${others[@]}"; do
	image=$(eval "$(scripts/build/kernel-env.sh "$k" 2>/dev/null)" && echo "${IMAGE:-}")
	[ -n "$image" ] || continue
	if [ -f "build/$k/kmod/idgen.ko" ]; then
		tap "guest $k${smoke:+, smoke}" "guest-$k.log" \
			tests/vm/run-guest.sh --timeout "${IDGEN_GUEST_TIMEOUT:-900}" "$k" \
			tests/vm/guest-suite.sh ${smoke:+"$smoke"} "build/$k/kmod/idgen.ko"
	else
		fail "guest $k: no module was built"
	fi
done

# The debug kernel (KASAN, lockdep, UBSAN, kmemleak, panic_on_warn): the
# KUnit suites, failslab over the module load, then the device tests again.
# KASAN's shadow and kmemleak's pool eat into the guest's memory: node,
# which the libidgen checks run, needs more than the default 1 GiB.
# debug_kernel LABEL [SUITE]: built from Debian 12's 6.12 source, or from
# SUITE's newest kernel source.
debug_kernel() {
	local label=$1 suite=${2:-} image= out=build/debug${2:+-$2} built
	if [ -z "$suite" ]; then
		# Built beside the run (above), into $logs/debug-build.log.
		debug_build_wait && built=1
	elif cache=$cache_root/debug-kernel timed "build the $label kernel" \
		scripts/build/build-kunit.sh "$suite" >"$logs/$label-build.log" 2>&1; then
		built=1
	fi
	if [ -n "${built:-}" ]; then
		image=$(tail -n 1 "$logs/$label-build.log")
		pass "build the $label kernel, idgen.ko and idgen_kunit.ko against it"
	else
		tail -n 40 "$logs/$label-build.log" | sed 's/^/#   /'
		fail "build the $label kernel, idgen.ko and idgen_kunit.ko against it"
		return
	fi
	# Failslab makes allocations fail on purpose: their reports are expected.
	tap "$label kernel, KUnit" "guest-$label-kunit.log" \
		tests/vm/run-guest.sh --timeout 1800 --mem 3072 --image "$image" \
		--expect-alloc-failures "$label" \
		tests/vm/kunit-suite.sh "$out/idgen_kunit.ko" "$out/idgen.ko"
	tap "$label kernel" "guest-$label.log" \
		tests/vm/run-guest.sh --timeout 1800 --mem 3072 --image "$image" "$label" \
		tests/vm/guest-suite.sh "$out/idgen.ko"
	# A fixed-seed slice of `make fuzz` (scripts/test/fuzz.sh), where KASAN and
	# lockdep see it: kfuzz for at most 30 s, 3000 trinity syscalls.
	tap "$label kernel, fuzz" "guest-$label-fuzz.log" \
		tests/vm/run-guest.sh --timeout 600 --mem 3072 --image "$image" "$label" \
		tests/vm/fuzz-suite.sh --seed 1 --calls 100000 --seconds 30 \
		--trinity 3000 "$out/idgen.ko"
}
debug_kernel debug
# A second debug kernel, from the newest source (7.2 today), costs a
# fresh machine another 12 minutes of build: only with --matrix.
if [ "$matrix" = --matrix ]; then
	debug_kernel debug-sid sid
else
	tap_skip "the debug kernel from sid's source: scripts/check.sh --matrix runs it"
fi

# kmod/ as drivers/misc/idgen in Debian's 6.12 source, the way a kernel
# maintainer checks it: CONFIG_IDGEN=m in an x86_64 kernel, and kunit.py
# run --kunitconfig=drivers/misc/idgen on UML with CONFIG_IDGEN=y
# (scripts/build/intree.sh).  It repeats on UML the suites the debug
# kernel runs above and costs a fresh machine two more kernel builds:
# only with --matrix.
if [ "$matrix" = --matrix ]; then
	cache=$cache_root/intree tap "in a kernel tree" intree.log scripts/build/intree.sh
else
	tap_skip "kmod/ in a kernel tree, and kunit.py on UML: scripts/check.sh --matrix runs them (scripts/build/intree.sh)"
fi

# DKMS against the oldest supported kernel: the one most hosts still run.
if [ ${#kernels[@]} -gt 0 ]; then
	tap "dkms ${kernels[0]}" "dkms-${kernels[0]}.log" tests/vm/dkms-test.sh "${kernels[0]}"
fi
# The Debian packages: built, linted, installed into a fresh Debian 12
# root (DKMS builds the module there), booted in a guest, purged; with
# --matrix, into a Debian 13 root too.
cache=$cache_root/roots/bookworm+security tap "Debian packages, Debian 12" packages.log tests/pkg/run.sh bookworm
# A whole host as an operator runs it: the packages booted under systemd,
# leasing from a three-member etcd, scraped by Prometheus, through etcd's
# faults, idgend killed, a package upgrade, a reboot, a kernel upgrade and
# a purge; Debian 13's host with --matrix.
cache=$cache_root/roots/bookworm+security tap "a host under systemd, Debian 12" host.log tests/host/run.sh bookworm
if [ "$matrix" = --matrix ]; then
	cache=$cache_root/roots/trixie+security tap "a host under systemd, Debian 13" host-trixie.log \
		tests/host/run.sh trixie
else
	tap_skip "a host under systemd on Debian 13: scripts/check.sh --matrix runs it"
fi
# Debian 13's root proves the packages on the next release: with --matrix.
if [ "$matrix" = --matrix ]; then
	cache=$cache_root/roots/trixie+security tap "Debian packages, Debian 13" packages-trixie.log \
		tests/pkg/run.sh trixie
else
	tap_skip "the Debian packages on a Debian 13 root: scripts/check.sh --matrix runs them"
fi
# The README's first command on a fresh Debian 13 machine (a root made now,
# every dependency downloaded: about 2 GB and 20 minutes): only with --matrix.
if [ "$matrix" = --matrix ]; then
	tap "README on fresh Debian 13" readme-trixie.log tests/pkg/readme-commands.sh trixie
else
	tap_skip "the README's commands on a fresh Debian 13 root: scripts/check.sh --matrix runs it"
fi

# The time table: every step, slowest first, then the total.  The last
# lines of a CI log say how long the run took and where the time went.
{
	echo "time table (seconds, cache, step):"
	printf '%s\n' "${timings[@]}" | sort -t '	' -k1,1nr |
		awk -F '\t' '{ printf "  %6d  %-5s  %s\n", $1, $2, $3 }'
	total=$((SECONDS - run_start))
	printf '  %6d  total: %d min %02d s\n' "$total" $((total / 60)) $((total % 60))
} | tee "$logs/time-table.txt"

echo
if [ -s "$details" ]; then
	echo "what the failed tests said:"
	cat "$details"
fi
if [ "$tap_failed" -gt 0 ]; then
	echo "failed:"
	printf '  %s\n' "${failures[@]}"
fi
echo "$tap_passed passed, $tap_failed failed, $tap_skipped skipped"
[ "$tap_failed" -eq 0 ]

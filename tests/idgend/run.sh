#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh: every host-side test of idgend, as one TAP stream.
#   - the lease logic against an in-memory store and fake generators
#   - the simulated generator, the runtime directory (lock, owner token)
#   - JSON written and read as ASCII (json_ascii_test), and the etcd
#     client's tests built once more against json-c 0.18 (Debian 13)
#   - the etcd client against a real etcd 3.4 member on loopback, and
#     against each etcd IDGEN_ETCD_ALSO names (also
#     behind fake_etcd.py's proxy, and with a region of 25,000 records),
#     against fake_etcd.py's broken answers (under valgrind when installed
#     for both), and under libFuzzer, as are the configuration file, the
#     state file and the decimal parser
#   - the daemon's configuration (config.sh) and standalone mode's start:
#     state file, layout, a clock before the epoch (standalone.sh)
#   - the daemon itself against real etcd members (daemon.sh), and
#     against one that requires TLS client certificates and an etcd user
#     (secure.sh)
# The guest test (tests/vm/idgend-suite.sh) drives the real module.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=$top/build/idgend-test
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=etcd-lib.sh
. "$here/etcd-lib.sh"

mkdir -p "$top/build"
work=$(mktemp -d "$top/build/idgend-run.XXXXXX") || exit 1
fake_pid=
cleanup() {
	[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
	etcd_cleanup
	rm -rf "$work"
}
trap cleanup EXIT
bail() { echo "1..$n"; exit 1; }

echo "TAP version 13"
tap_step "build helper/idgend" make -s -C "$top/helper/idgend" || bail
tap_step "build the idgend tests" make -s -C "$here" OUT="$out" || bail

tap_run lease "$out/lease_test"
tap_run "simulated generator" "$out/device_sim_test"
tap_run "runtime directory" "$out/runtime_test"
tap_run "JSON as ASCII, json-c $(pkg-config --modversion json-c)" "$out/json_ascii_test"

# The etcd client once more, built against Debian 13's json-c 0.18, which
# in strict mode rejects raw UTF-8 in strings (json-c-0.18.sh).
out18=$out/json-c-0.18
build_with_json_c_018() {
	local pc
	pc=$("$here/json-c-0.18.sh") &&
		PKG_CONFIG_PATH=$pc CFLAGS="-O1 -g -Wl,-rpath,${pc%/pkgconfig}" \
			make -s -C "$here" OUT="$out18" "$out18/etcd_test" "$out18/json_ascii_test"
}
if tap_step "build the etcd client's tests against json-c 0.18" build_with_json_c_018; then
	tap_run "JSON as ASCII, json-c 0.18" "$out18/json_ascii_test"
else
	out18=
fi

# Under valgrind, when there is one, for leaks on the error paths too.
vg=()
if command -v valgrind >/dev/null; then
	vg=(valgrind -q --leak-check=full --error-exitcode=99)
else
	echo "# valgrind not found: etcd_test runs without it"
fi
# fake_etcd.py: broken answers of its own, and a proxy in front of the
# real member for the real test.
port=$(etcd_free_port)
/usr/bin/python3 "$here/fake_etcd.py" "$port" >"$work/fake.log" 2>&1 &
fake_pid=$!
fake_up() {
	local t
	for ((t = 0; t < 50; t++)); do
		grep -q ready "$work/fake.log" && return 0
		sleep 0.1
	done
	cat "$work/fake.log"
	return 1
}
if tap_step "start fake_etcd.py on 127.0.0.1:$port" fake_up; then
	if tap_step "start an etcd member on loopback" etcd_cluster client 1; then
		tap_run "etcd client, real" "${vg[@]}" "$out/etcd_test" real \
			"${ETCD_URLS[0]}" "http://127.0.0.1:$port" "$here/etcd_fill.py"
		[ -n "$out18" ] && tap_run "etcd client, real, json-c 0.18" "$out18/etcd_test" real \
			"${ETCD_URLS[0]}" "http://127.0.0.1:$port" "$here/etcd_fill.py"
	fi
	etcd_cleanup
	# Other etcd versions (IDGEN_ETCD_ALSO: paths of etcd binaries, e.g.
	# Debian 13's 3.5 from scripts/build/fetch-kernels.sh --etcd trixie): the
	# client against each, and with IDGEN_ETCD_ALSO_DAEMON=1 the daemon too.
	for bin in ${IDGEN_ETCD_ALSO:-}; do
		ver=$("$bin" --version 2>/dev/null | sed -n 's/^etcd Version: //p')
		ETCD_BIN=$bin
		if tap_step "start an etcd ${ver:-at $bin} member on loopback" etcd_cluster also 1; then
			tap_run "etcd client, real, etcd $ver" "$out/etcd_test" real \
				"${ETCD_URLS[0]}" "http://127.0.0.1:$port" "$here/etcd_fill.py"
		fi
		etcd_cleanup
		[ "${IDGEN_ETCD_ALSO_DAEMON:-0}" = 1 ] &&
			ETCD_BIN=$bin tap_run "daemon, etcd $ver" "$here/daemon.sh" "$top/helper/idgend/idgend"
		ETCD_BIN=/usr/bin/etcd
	done
	tap_run "etcd client, fake" "${vg[@]}" "$out/etcd_test" fake "http://127.0.0.1:$port"
fi

# libFuzzer, from the seeds in the tree: a fixed seed and number of runs,
# so a run is repeatable and takes seconds.  New inputs it finds go to the
# work directory, never into the tree; an input that crashes a target is
# kept in build/fuzz-crashes/ to replay.  The parsers' own messages go to a
# closed stderr (-close_fd_mask=2); libFuzzer's and the sanitizers' reports
# still show.
fuzz() {
	local target=$1 seeds=$2 runs=$3
	shift 3
	mkdir -p "$work/$target" "$top/build/fuzz-crashes" &&
		"$out/$target" -seed=1 -runs="$runs" -max_len=4096 \
			-artifact_prefix="$top/build/fuzz-crashes/$target-" "$@" \
			"$work/$target" "$here/$seeds"
}
if tap_step "build the fuzz targets (clang, libFuzzer, ASan, UBSan)" \
	make -s -C "$here" OUT="$out" fuzz; then
	tap_step "etcd client: 200000 fuzzed answers, no crash, leak or false success" \
		fuzz fuzz_etcd corpus 200000
	tap_step "idgend.conf: 300000 fuzzed files, no crash or leak; what is accepted prints and reads back the same" \
		fuzz fuzz_config corpus-config 300000 -close_fd_mask=2
	tap_step "state file: 1000000 fuzzed files; only what the writer writes is accepted" \
		fuzz fuzz_state_file corpus-state 1000000
	tap_step "decimal parser: 1000000 fuzzed numbers and bounds agree with a reference" \
		fuzz fuzz_decimal corpus-decimal 1000000
fi

tap_run config "$here/config.sh" "$top/helper/idgend/idgend"
tap_run standalone "$here/standalone.sh" "$top/helper/idgend/idgend"
tap_run daemon "$here/daemon.sh" "$top/helper/idgend/idgend"
tap_run secure "$here/secure.sh" "$top/helper/idgend/idgend"

echo "1..$n"
exit "$status"

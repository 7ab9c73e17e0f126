#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh: every host-side test of idgend, as one TAP stream.
#   - the lease logic against an in-memory store and fake generators
#   - the etcd client against a real etcd 3.4 member on loopback (also
#     behind fake_etcd.py's proxy, and with a region of 25,000 records),
#     against fake_etcd.py's broken answers (under valgrind when installed
#     for both), and under libFuzzer
#   - the daemon itself against real etcd members (daemon.sh)
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
	fi
	etcd_cleanup
	tap_run "etcd client, fake" "${vg[@]}" "$out/etcd_test" fake "http://127.0.0.1:$port"
fi

# libFuzzer over the client's answers, from the seeds in corpus/: a fixed
# seed and number of runs, so a run is repeatable.  New inputs it finds go
# to the work directory, never into the tree.
fuzz() {
	mkdir -p "$work/fuzz" &&
		"$out/fuzz_etcd" -seed=1 -runs=200000 -max_len=4096 \
			"$work/fuzz" "$here/corpus"
}
if tap_step "build the etcd client's fuzz target (clang, libFuzzer, ASan, UBSan)" \
	make -s -C "$here" OUT="$out" fuzz; then
	tap_step "etcd client: 200000 fuzzed answers, no crash, leak or false success" fuzz
fi

tap_run daemon "$here/daemon.sh" "$top/helper/idgend/idgend"

echo "1..$n"
exit "$status"

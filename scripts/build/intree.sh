#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# intree.sh [SUITE]: idgen checked inside a kernel tree, as
# drivers/misc/idgen, the way a kernel maintainer would check it.  The tree
# is the Debian kernel source the debug kernel is built from
# (scripts/build/kernel-source.sh: Debian 12's linux-source-6.12, or
# SUITE's newest), unpacked once into $IDGEN_CACHE/intree/VERSION/linux
# and never built in: each build has an O= directory beside it.  Each run
# copies idgen in afresh (scripts/build/copy-to-tree.sh), then:
#
#   CONFIG_IDGEN=m  an x86_64 kernel, tinyconfig with modules, NET, KUnit
#                   and idgen's suites linked into idgen.ko, built at W=1:
#                   the module links against the kernel's own exports;
#   CONFIG_IDGEN=y  tools/testing/kunit/kunit.py run
#                   --kunitconfig=drivers/misc/idgen, on UML (its default
#                   architecture), at W=1: idgen and its suites built into
#                   the kernel, booted, every case's result read back.
#
# Either build fails on any warning in drivers/misc/idgen/ or
# include/uapi/linux/idgen.h.  UML has one CPU: the cases that need two
# skip there (the debug kernel's guest runs them, scripts/check.sh).
# Prints TAP, one result per build and per KUnit case; the logs stay in
# $IDGEN_CACHE/intree/VERSION/.
# shellcheck disable=SC2154 # n and status are tap.sh's
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../tests/lib/tap.sh
. "$top/tests/lib/tap.sh"
jobs=${IDGEN_JOBS:-2}

echo "TAP version 13"
src=$("$top/scripts/build/kernel-source.sh" ${1:+"$1"}) ||
	{ not_ok "a kernel source to build in"; exit 1; }
tarball=$(sed -n 1p <<<"$src")
srcver=$(sed -n 2p <<<"$src")
base=${IDGEN_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/idgen}/intree/$srcver
tree=$base/linux
mdir=$base/build-m
ydir=$base/build-y

unpack() {
	[ -f "$tree/.idgen-unpacked" ] && return 0
	rm -rf "$tree" && mkdir -p "$tree" &&
		tar -xJf "$tarball" -C "$tree" --strip-components=1 &&
		touch "$tree/.idgen-unpacked"
}
tap_step "linux-source $srcver unpacked in $tree" unpack || exit 1
tap_step "idgen copied in as drivers/misc/idgen" \
	"$top/scripts/build/copy-to-tree.sh" "$tree" || exit 1
# idgen's objects are built anew each run, so that their warnings are in
# this run's logs; the rest of each kernel only as kbuild finds it changed.
rm -rf "$mdir/drivers/misc/idgen" "$ydir/drivers/misc/idgen"

# idgen_warnings LOG: the compiler's and modpost's words about idgen's files.
idgen_warnings() {
	grep -E '(drivers/misc/idgen/|include/uapi/linux/idgen\.h).*(warning|error):|WARNING: modpost: .*idgen' "$1"
}

# CONFIG_IDGEN=m on x86_64.  The configuration is made anew each run (a
# second's work); kbuild then rebuilds only what it changed.
build_m() {
	local log=$base/build-m.log frag=$base/build-m.config sym
	mkdir -p "$mdir"
	cat >"$frag" <<-'EOF'
		CONFIG_64BIT=y
		CONFIG_SMP=y
		CONFIG_PRINTK=y
		CONFIG_MODULES=y
		CONFIG_MODULE_UNLOAD=y
		CONFIG_NET=y
		CONFIG_KUNIT=y
		CONFIG_IDGEN=m
		CONFIG_IDGEN_KUNIT_TEST=y
	EOF
	{
		make -C "$tree" O="$mdir" tinyconfig &&
			(cd "$tree" && scripts/kconfig/merge_config.sh -m -O "$mdir" "$mdir/.config" "$frag") &&
			make -C "$tree" O="$mdir" olddefconfig
	} >"$log" 2>&1 || { tail -n 30 "$log"; return 1; }
	for sym in CONFIG_IDGEN=m CONFIG_IDGEN_KUNIT_TEST=y; do
		grep -qx "$sym" "$mdir/.config" || { echo "$sym did not stick"; return 1; }
	done
	make -C "$tree" O="$mdir" -j"$jobs" W=1 >>"$log" 2>&1 ||
		{ grep -E 'error|Error' "$log" | tail -n 30; return 1; }
	[ -f "$mdir/drivers/misc/idgen/idgen.ko" ] || { echo "no idgen.ko"; return 1; }
	! idgen_warnings "$log"
}
tap_step "CONFIG_IDGEN=m: x86_64 kernel and idgen.ko with its suites, W=1, no warning" build_m

# CONFIG_IDGEN=y: kunit.py as a maintainer runs it, from the top of the
# tree; the results also as JSON, for the TAP below.  kunit.py prints the
# build's warnings (W=1), which are idgen's to check.
klog=$base/kunit.log
json=$base/kunit.json
rm -f "$json"
touch "$base/kunit.started"
(
	cd "$tree" &&
		/usr/bin/python3 tools/testing/kunit/kunit.py run \
			--kunitconfig=drivers/misc/idgen --build_dir="$ydir" \
			--make_options W=1 --jobs "$jobs" --timeout 900 \
			--json="$json"
) >"$klog" 2>&1
krc=$?
if [ -f "$ydir/linux" ] && [ "$ydir/linux" -nt "$base/kunit.started" ] &&
	! idgen_warnings "$klog" >/dev/null; then
	ok "CONFIG_IDGEN=y: UML kernel with idgen and its suites built in, W=1, no warning"
else
	not_ok "CONFIG_IDGEN=y: UML kernel with idgen and its suites built in, W=1, no warning"
	{ idgen_warnings "$klog" || tail -n 40 "$klog"; } | sed 's/^/# /'
fi

# Every case of every idgen suite, from kunit.py's JSON: a parameterised
# case passes when each of its parameters does, and is skipped when all
# were.
if [ -s "$json" ]; then
	tap_run "kunit.py" /usr/bin/python3 - "$json" "$(find "$top/tests/kunit" -name '*_test.c' | wc -l)" <<-'EOF'
		import json, sys
		root = json.load(open(sys.argv[1]))
		def leaves(g):
		    out = [c["status"] for c in g.get("test_cases", [])]
		    for s in g.get("sub_groups", []):
		        out += leaves(s)
		    return out
		def verdict(statuses):
		    if any(s not in ("PASS", "SKIP") for s in statuses):
		        return "not ok"
		    return "skip" if statuses and all(s == "SKIP" for s in statuses) else "ok"
		n = 0
		suites = [g for g in root.get("sub_groups", []) if g["name"].startswith("idgen_")]
		for suite in suites:
		    cases = [(c["name"], [c["status"]]) for c in suite.get("test_cases", [])]
		    cases += [(g["name"], leaves(g)) for g in suite.get("sub_groups", [])]
		    for name, statuses in cases:
		        n += 1
		        v = verdict(statuses)
		        if v == "skip":
		            print(f"ok {n} {suite['name']}.{name} # SKIP")
		        else:
		            print(f"{v} {n} {suite['name']}.{name}")
		n += 1
		want = int(sys.argv[2])
		print(f"{'ok' if len(suites) == want else 'not ok'} {n} all {want} idgen suites ran (found {len(suites)})")
	EOF
else
	not_ok "kunit.py: results (no JSON; log: $klog)"
	tail -n 40 "$klog" | sed 's/^/# /'
fi
if [ "$krc" -eq 0 ]; then
	ok "kunit.py run --kunitconfig=drivers/misc/idgen exits 0"
else
	not_ok "kunit.py run --kunitconfig=drivers/misc/idgen exits 0 (it exited $krc; log: $klog)"
	grep -E '\[(FAILED|CRASHED)\]|# .*: EXPECTATION FAILED|ASSERTION FAILED|Expected ' "$klog" |
		head -n 30 | sed 's/^/# /'
fi
echo "1..$n"
exit "$status"

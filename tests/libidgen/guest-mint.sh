#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-mint.sh MODULE: libidgen and idgenctl against a real /dev/idgen,
# as root inside a test guest (tests/vm/run-guest.sh).  Loads MODULE, sets
# a lease, and checks that `idgenctl mint -n 1000 --json` decodes to the
# lease's region and worker and to milliseconds inside (floor,
# valid_until), that mint's human and --raw output and decode agree, that
# the buffered API never hands out an ID older than its bound, and that a
# revoked lease is reported.  Build first (tests/libidgen/run.sh or make in
# lib/, helper/ and tests/libidgen/).  Prints TAP.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
module=${1:?usage: guest-mint.sh MODULE}
idgenctl=$top/helper/idgenctl/idgenctl
region=5
worker=99

if [ "${IDGEN_GUEST:-}" != 1 ]; then
	echo "guest-mint.sh: refusing to run outside a test guest" >&2
	exit 2
fi
tmp=$(mktemp -d /tmp/guest-mint.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

echo "TAP version 13"
if ! grep -q '^idgen ' /proc/modules; then
	check "insmod $(basename "$module")" insmod "$module"
fi
check "lease set --region $region --worker $worker --valid-for 600000" \
	"$idgenctl" lease set --region $region --worker $worker --valid-for 600000

# A field of `lease show`, e.g. "valid until: 123 (...)" -> 123.
lease_ms() { "$idgenctl" lease show | sed -n "s/^  $1: \([0-9]*\).*/\1/p"; }
floor=$(lease_ms floor)
until=$(lease_ms "valid until")
now_before=$(lease_ms now)
echo "# lease: floor $floor valid_until $until now $now_before"

if "$idgenctl" mint -n 1000 --json >"$tmp/mint.json" 2>"$tmp/err"; then
	ok "idgenctl mint -n 1000 --json"
else
	not_ok "idgenctl mint -n 1000 --json"; sed 's/^/# /' "$tmp/err"
fi
now_after=$(lease_ms now)

# Checked with Debian's python3, whose json module keeps the IDs strings
# (the Node round trip runs on the host: V8 needs syscalls the debug
# kernel's tinyconfig leaves out).
/usr/bin/python3 - "$tmp/mint.json" $region $worker "$floor" "$until" "$now_before" "$now_after" \
	>"$tmp/check.out" 2>&1 <<'EOF_PY'
import json, sys
path, region, worker, floor, until, before, after = sys.argv[1:]
objs = json.load(open(path))
bad = []
if len(objs) != 1000:
    bad.append(f"{len(objs)} IDs, not 1000")
prev = -1
for o in objs:
    if not isinstance(o["id"], str):
        bad.append(f"id {o['id']!r} not a string")
    i = int(o["id"])
    ms = i >> 22
    if i <= prev:
        bad.append(f"{i} not above {prev}")
    prev = i
    if o["ms"] != ms:
        bad.append(f"{i}: ms {o['ms']} != {ms}")
    if o["region"] != int(region) or o["worker"] != int(worker):
        bad.append(f"{i}: node {o['region']}/{o['worker']}")
    if not int(floor) < ms < int(until):
        bad.append(f"{i}: ms {ms} outside the fence")
    # Stamped from the generator's clock: between the readings around mint.
    if not int(before) <= ms <= int(after) + 1000:
        bad.append(f"{i}: ms {ms} not within [{before}, {after}]")
for b in bad[:10]:
    print("# " + b)
sys.exit(1 if bad else 0)
EOF_PY
rc=$?
cat "$tmp/check.out"
check "the 1000 IDs are increasing strings, decode to region $region worker $worker, ms inside (floor, valid_until) and the clock" \
	test $rc -eq 0

# mint's human output and `decode` of its raw output agree.
"$idgenctl" mint -n 50 >"$tmp/human" 2>"$tmp/err"
awk '{ print $1 }' "$tmp/human" >"$tmp/raw"
# shellcheck disable=SC2046
"$idgenctl" decode $(cat "$tmp/raw") >"$tmp/decoded" 2>>"$tmp/err"
check "idgenctl mint and idgenctl decode print the same decoding" \
	cmp -s "$tmp/human" "$tmp/decoded"
check "idgenctl mint --raw prints bare decimal IDs above the earlier ones" bash -c "
	ids=\$('$idgenctl' mint -n 3 --raw) && [ \$(echo \"\$ids\" | grep -cE '^[1-9][0-9]*$') = 3 ] &&
	[ \$(echo \"\$ids\" | head -1) -gt \$(tail -1 '$tmp/raw') ]"
check "every minted ID is at or above min-id-at of the moment before" bash -c "
	lo=\$('$idgenctl' min-id-at now) && id=\$('$idgenctl' mint --raw) && [ \$id -ge \$lo ]"

# The buffered API never hands out an ID older than its bound (50 ms).
if "$top/tests/libidgen/buffer_age" /dev/idgen 50 >"$tmp/buf" 2>&1; then
	ok "idgen_buffer_take(): no ID older than 50 ms, increasing per thread, unique across 4 threads"
else
	not_ok "idgen_buffer_take(): no ID older than 50 ms"
fi
sed 's/^/# /' "$tmp/buf" | sed 's/^# # /# /'

# A renewal whose floor leaves no millisecond below its fence could never
# mint: refused with EKEYEXPIRED and a line saying why, the lease as it was.
until=$(lease_ms "valid until")
"$idgenctl" lease set --region $region --worker $worker \
	--floor $((until + 9)) --valid-until $((until + 10)) >/dev/null 2>"$tmp/err"
rc=$?
sed 's/^/# /' "$tmp/err"
check "lease set of a lease that could never mint exits 1, saying EKEYEXPIRED and why" \
	bash -c "[ $rc -eq 1 ] && grep -q EKEYEXPIRED '$tmp/err' && grep -q 'could never mint' '$tmp/err'"
check "... and the lease in force is unchanged" test "$(lease_ms "valid until")" = "$until"

# Revoked: mint fails, naming ENOKEY.
"$idgenctl" lease revoke >/dev/null
"$idgenctl" mint >/dev/null 2>"$tmp/err"
rc=$?
check "after lease revoke, mint exits 1 and says ENOKEY" \
	bash -c "[ $rc -eq 1 ] && grep -q ENOKEY '$tmp/err'"

echo "1..$n"
exit $status

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# daemon.sh IDGEND: idgend against real etcd 3.4 members on this host's
# loopback, a single member and a 3-member cluster, and against a fake
# endpoint that answers garbage.  The host's kernel must not load idgen.ko,
# so each daemon drives a simulated generator (--device sim:FILE, which
# logs every push and revoke to FILE.log); the guest test drives the real
# one.  Prints TAP.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
idgend=${1:-$top/helper/idgend/idgend}
# shellcheck source=daemon-lib.sh
. "$here/daemon-lib.sh"

# fake_etcd.py, when it runs, stops with the rest.
stop_fake() {
	[ -n "${fake_pid:-}" ] && kill "$fake_pid" 2>/dev/null
}
daemon_workdir daemon stop_fake

# The worker number a daemon claimed or adopted, from its log.
worker_of() {
	grep -Eo 'lease (claimed|adopted): r[0-9]+/w[0-9]+' "$work/$1.log" |
		tail -n 1 | sed 's/.*w//'
}

# Fields of a daemon's simulated generator log (pushes: daemon-lib.sh).
last_push_field() {
	grep ' push ' "$work/$1.gen.log" | tail -n 1 | grep -Eo "$2=[0-9]+" | cut -d= -f2
}
first_push_field() {
	grep ' push ' "$work/$1.gen.log" | head -n 1 | grep -Eo "$2=[0-9]+" | cut -d= -f2
}

# record PREFIX WORKER FIELD: a field of the record's JSON value.
record() {
	etcdctl_ get --print-value-only "$1/r0/w/$2" |
		/usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$3'])"
}

# recorded PREFIX: region 0's layout (3/7/12, from ms 0) and the region
# width, as the region's other hosts recorded them before their leases.
recorded() {
	[ -n "$(etcdctl_ get --print-value-only "$1/r0/layout")" ] && return
	etcdctl_ put "$1/region_bits" '{"region_bits":3}' >/dev/null
	etcdctl_ put "$1/r0/layout" \
		'{"region_bits":3,"worker_bits":7,"seq_bits":12,"from_ms":0}' >/dev/null
}

# fill PREFIX UNTIL [EXCEPT]: every number held by "other" until UNTIL.
fill() {
	local w
	recorded "$1"
	for ((w = 0; w < 128; w++)); do
		[ "$w" = "${3:-}" ] && continue
		echo "put $1/r0/w/$w {\"owner\":\"other\",\"valid_until_ms\":$2}"
	done | etcdctl_ txn >/dev/null 2>&1 ||
		for ((w = 0; w < 128; w++)); do
			[ "$w" = "${3:-}" ] && continue
			etcdctl_ put "$1/r0/w/$w" "{\"owner\":\"other\",\"valid_until_ms\":$2}" >/dev/null
		done
}

fast=(--lease-ms 4000 --renew-ms 1000 --timeout-ms 400 --claim-retry-ms 500)

echo "TAP version 13"

# --- configuration and start-up errors -------------------------------------

out=$("$idgend" --mode etcd --lease-ms 1000 --renew-ms 800 2>&1)
check "bad configuration: exit 2 naming the rule broken" \
	test $? -eq 2 -a -n "$(grep -F 'renew_ms (800) must be at most half of lease_ms' <<<"$out")"
printf '[idgend]\nmode = etcd\nlease_ms = soon\n' >"$work/bad.conf"
out=$("$idgend" --config "$work/bad.conf" 2>&1)
check "bad configuration file: exit 2 naming file, line and key" \
	test $? -eq 2 -a -n "$(grep -F "bad.conf:3: [idgend] lease_ms: 'soon' is not a whole number" <<<"$out")"
printf '[etcd]\nendpoint = http://x\n' >"$work/typo.conf"
out=$("$idgend" --config "$work/typo.conf" 2>&1)
check "unknown key: exit 2" \
	test $? -eq 2 -a -n "$(grep -F "unknown key 'endpoint' in section [etcd]" <<<"$out")"

out=$("$idgend" --mode etcd --layout 3/7/11 --check-config 2>&1)
check "a layout that is not 22 bits: exit 2 naming the rule" \
	test $? -eq 2 -a -n "$(grep -F 'layout 3/7/11: the three must add up to 22' <<<"$out")"
out=$("$idgend" --mode etcd --layout 3/10/9 --region 8 --check-config 2>&1)
check "a region beyond the layout's region bits: exit 2" \
	test $? -eq 2 -a -n "$(grep -F 'region 8 does not fit layout 3/10/9' <<<"$out")"

out=$("$idgend" --config "$top/helper/idgend/idgend.conf" --check-config 2>&1)
check "the example idgend.conf is valid (--check-config)" \
	test $? -eq 0 -a -n "$(grep -F 'configuration is valid' <<<"$out")"
installs() {
	local root=$work/root
	make -s -C "$top/helper/idgend" install DESTDIR="$root" PREFIX=/usr \
		UNITDIR=/lib/systemd/system &&
		test -x "$root/usr/sbin/idgend" &&
		test -f "$root/usr/share/man/man8/idgend.8" &&
		grep -qx 'ExecStart=/usr/sbin/idgend' "$root/lib/systemd/system/idgend.service" &&
		test -f "$root/etc/idgen/idgend.conf.example"
}
check "make install: binary, man page, unit (ExecStart at the prefix), example configuration" installs

port=$(etcd_free_port)
etcd_daemon unreachable "${fast[@]}" --endpoints "http://127.0.0.1:$port" --start-timeout-ms 1500
wait "${PID[unreachable]}"
rc=$?
unset "PID[unreachable]"
check "etcd unreachable at start: exit 1 after start_timeout_ms" test "$rc" -eq 1
check "... with a line naming the endpoint, and nothing pushed" \
	grep -q "etcd is unreachable (.*127.0.0.1:$port.*); giving up" "$work/unreachable.log"
check "... nothing pushed" test "$(pushes unreachable)" -eq 0

# fake_etcd.py: broken answers, and a proxy in front of a real member.
port=$(etcd_free_port)
/usr/bin/python3 "$here/fake_etcd.py" "$port" >"$work/fake.out" 2>"$work/fake.log" &
fake_pid=$!
for ((t = 0; t < 50; t++)); do grep -q ready "$work/fake.out" && break; sleep 0.1; done
check "start fake_etcd.py" grep -q ready "$work/fake.out"

# --- a single member ---------------------------------------------------------

if ! etcd_cluster one 1; then
	not_ok "start a single etcd member"
	exit 1
fi
ep=$(etcd_endpoints)

# The field $2 of the layout record of region 0 under prefix $1.
layout_field() {
	etcdctl_ get --print-value-only "$1/r0/layout" |
		/usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"
}

# A region of 25,000 records (keys are never deleted; layouts of 2^15
# numbers exist): more than one answer of etcd's holds.  Only w99 of the
# generator's 128 numbers is free, and it sorts near the end of the range.
floor=$(($(gnow) - 5000))
if check "a region of 25,000 records (etcd_fill.py)" \
	/usr/bin/python3 "$here/etcd_fill.py" "$ep" /big 0 25000 99 "$floor"; then
	# A region in use has its layout record: a first claim would refuse
	# to record one above fences held for years.
	recorded /big
	# Roomier timeouts: a listing is 49 requests on a loaded machine.
	etcd_daemon big --lease-ms 10000 --renew-ms 4000 --timeout-ms 2000 --claim-retry-ms 500 \
		--endpoints "$ep" --prefix /big
	check "large region: claims the one free number, w99" \
		wait_log big 'lease claimed: r0/w99,' 20
	check "large region: its floor is w99's valid_until, read from the last page" \
		test "$(first_push_field big floor)" = "$floor"
	stop big
	check "large region: clean stop" test $? -eq 0
	# The cut-over lists the whole region at one revision: its from_ms is
	# the highest valid_until of the 25,000 (w24999's, 10^12 + 24999),
	# decades ahead, so it is refused unless forced.
	out=$("$idgend" --cut-over-layout 3/10/9 --endpoints "$ep" --prefix /big \
		--timeout-ms 2000 2>&1)
	rc=$?
	check "large region: a cut-over decades ahead is refused, exit 2, naming a record ($rc)" \
		test "$rc" -eq 2 -a "$(layout_field /big worker_bits)" = 7 \
		-a -n "$(grep -F 'r0/w0: owner' <<<"$out")"
	out=$("$idgend" --cut-over-layout 3/10/9 --force --endpoints "$ep" --prefix /big \
		--timeout-ms 2000 2>&1)
	rc=$?
	check "large region: a forced cut-over exits 0, the record says 3/10/9 ($out)" \
		test "$rc" -eq 0 -a "$(layout_field /big worker_bits)" = 10
	check "large region: ... from the highest valid_until of all 25,000 records" \
		test "$(layout_field /big from_ms)" = 1000000024999
fi

# The first endpoint answers 200 with garbage: reads go on to the member,
# and the claim's write goes where the read was answered.
etcd_daemon garbled "${fast[@]}" --prefix /garbled \
	--endpoints "http://127.0.0.1:$port/via/${ep##*:}/garble,$ep"
check "first endpoint answers garbage: the lease is claimed through the second" \
	wait_log garbled 'lease claimed' 10
w=$(worker_of garbled)
check "... the record names the owner" test "$(record /garbled "${w:-x}" owner)" = garbled
from=$(log_lines garbled)
check "... and renewed" wait_log garbled 'lease renewed' 5 "$from"
stop garbled
check "... clean stop" test $? -eq 0

# Only garbage at start: retried like an unreachable etcd, not fatal.
etcd_daemon garbage "${fast[@]}" --prefix /garbage --start-timeout-ms 60000 \
	--endpoints "http://127.0.0.1:$port/via/${ep##*:}/garble"
check "only garbage at start: retried, with a line saying so" \
	wait_log garbage 'etcd is answering garbage .*retrying every 2000 ms' 10
check "... and the daemon waits for etcd rather than exit" kill -0 "${PID[garbage]}"
stop garbage
check "... clean stop while it waits" test $? -eq 0

# The first daemon under valgrind: its exit status is 99 on a leak or error.
command -v valgrind >/dev/null &&
	IDGEND_WRAP=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99)
etcd_daemon a "${fast[@]}" --endpoints "$ep" --prefix /t1
IDGEND_WRAP=()
if wait_log a 'lease claimed' 20; then
	ok "claim: lease claimed"
	w=$(worker_of a)
	check "claim: the record names the owner" test "$(record /t1 "$w" owner)" = a
	check "claim: pushed the fence the record holds, floor 0" \
		test "$(record /t1 "$w" valid_until_ms)" = "$(last_push_field a until)" \
		-a "$(first_push_field a floor)" = 0
	sleep 2.5
	check "renew: the fence moved forward at least twice" test "$(pushes a)" -ge 3
	check "renew: the record holds the fence pushed last" \
		test "$(record /t1 "$w" valid_until_ms)" = "$(last_push_field a until)"
	stop a
	check "release: SIGTERM exits 0 (and valgrind found nothing)" test $? -eq 0
	last=$(grep -Eo 'revoke last=[0-9]+' "$work/a.gen.log" | tail -n 1 | cut -d= -f2)
	check "release: revoked, and the returned last ms written as valid_until" \
		test -n "$last" -a "$(record /t1 "$w" valid_until_ms)" = "$last"
	check "release: the number is free at once" test "$last" -le "$(gnow)"

	# The same host again, every other number held: the floor is the
	# last ms released.
	fill /t1 $(($(gnow) + 600000)) "$w"
	etcd_daemon a2 "${fast[@]}" --endpoints "$ep" --prefix /t1 --owner a
	wait_log a2 'lease claimed' 10
	check "claim after release: floor is the last ms released" \
		test "$(first_push_field a2 floor)" = "$last"
	# Restart without a clean stop: the generator still holds the lease.
	w=$(worker_of a2)
	kill -KILL "${PID[a2]}"
	wait "${PID[a2]}" 2>/dev/null
	unset "PID[a2]"
	etcd_daemon a2 "${fast[@]}" --endpoints "$ep" --prefix /t1 --owner a
	check "restart: the lease the generator holds is adopted" \
		wait_log a2 "lease adopted: r0/w$w," 10
	check "restart: ... and not claimed anew" \
		test "$(grep -c 'lease claimed' "$work/a2.log")" -eq 1
	stop a2
else
	not_ok "claim: lease claimed"
fi

# 50 daemons race for the 128 numbers of one region.
for ((i = 0; i < 50; i++)); do
	etcd_daemon "r$i" --lease-ms 60000 --renew-ms 10000 --endpoints "$ep" --prefix /race
done
claimed=0
for ((i = 0; i < 50; i++)); do
	if wait_log "r$i" 'lease claimed' 60 >/dev/null; then
		claimed=$((claimed + 1))
	else
		kill -0 "${PID[r$i]}" 2>/dev/null || echo "# r$i exited"
		tail -n 8 "$work/r$i.log" | sed "s/^/# r$i: /"
	fi
done
check "race: all 50 daemons claimed a number ($claimed)" test "$claimed" -eq 50
dups=$(for ((i = 0; i < 50; i++)); do worker_of "r$i"; done | sort | uniq -d | wc -l)
check "race: no number was claimed twice" test "$dups" -eq 0
owners=$(etcdctl_ get --prefix /race/r0/w/ --print-value-only |
	/usr/bin/python3 -c 'import json,sys; print(len({json.loads(l)["owner"] for l in sys.stdin if l.strip()}))')
check "race: the store holds 50 records, 50 owners" test "$owners" -eq 50
pushed=$(for ((i = 0; i < 50; i++)); do last_push_field "r$i" w; done | sort -u | wc -l)
check "race: 50 generators hold 50 different numbers" test "$pushed" -eq 50
for ((i = 0; i < 50; i++)); do kill -TERM "${PID[r$i]}"; done
rcs=0
for ((i = 0; i < 50; i++)); do
	wait "${PID[r$i]}" || rcs=$((rcs + 1))
	unset "PID[r$i]"
done
check "race: all 50 released cleanly" test "$rcs" -eq 0

# Pool exhaustion: a clear error, then a retry that succeeds.
fill /full $(($(gnow) + 600000)) 77
etcdctl_ put /full/r0/w/77 "{\"owner\":\"other\",\"valid_until_ms\":$(($(gnow) + 3000))}" >/dev/null
etcd_daemon x "${fast[@]}" --endpoints "$ep" --prefix /full
check "exhaustion: a clear error" \
	wait_log x 'no free worker number: all 128 are held; the first frees at ms' 10
check "exhaustion: the daemon stays up, nothing pushed" \
	test -e "/proc/${PID[x]}" -a "$(pushes x)" -eq 0
check "exhaustion: retried, it claims the number that freed" \
	wait_log x 'lease claimed: r0/w77,' 15
stop x

# Takeover after the holder froze: the new floor is the old fence.
fill /take $(($(gnow) + 600000)) 5
etcd_daemon h "${fast[@]}" --endpoints "$ep" --prefix /take --owner frozen
wait_log h 'lease claimed: r0/w5,' 10
sleep 1.5
kill -STOP "${PID[h]}"
fence=$(last_push_field h until)
etcd_daemon n "${fast[@]}" --endpoints "$ep" --prefix /take --owner newhost
if wait_log n 'lease claimed: r0/w5,' 20; then
	floor=$(first_push_field n floor)
	check "takeover: the new owner's floor ($floor) is at least the frozen holder's last fence ($fence)" \
		test "$floor" -ge "$fence"
	check "takeover: no push before the frozen fence passed" \
		test "$(grep ' push ' "$work/n.gen.log" | head -n 1 | cut -d' ' -f1)" -ge "$fence"
else
	not_ok "takeover: the new owner claimed the frozen holder's number"
fi
kill -CONT "${PID[h]}"
check "takeover: the old holder, thawed, finds the record lost and revokes" \
	wait_log h 'lease lost: r0/w5 is held by .newhost.' 10
check "... its generator was revoked" grep -q ' revoke ' "$work/h.gen.log"
check "... and it did not push after the takeover" \
	test "$(last_push_field h until)" = "$fence"
stop h
stop n

# Two hosts with one owner name (cloned from one image): each has its own
# runtime directory, so its own owner token.  No two generators may ever
# hold overlapping windows on one number (windows.py, from the generators'
# logs once every daemon has stopped).
windows() { /usr/bin/python3 "$here/windows.py" "${@/#/$work/}"; }

# (a) X frozen past its lease, Y claims, X thaws.
fill /twa $(($(gnow) + 600000)) 5
etcd_daemon xa "${fast[@]}" --endpoints "$ep" --prefix /twa --owner same
wait_log xa 'lease claimed: r0/w5,' 10
sleep 1.5
kill -STOP "${PID[xa]}"
etcd_daemon ya "${fast[@]}" --endpoints "$ep" --prefix /twa --owner same
check "twins (a): Y, with X's owner name, claims w5 once X's lease ran out" \
	wait_log ya 'lease claimed: r0/w5,' 20
from=$(log_lines xa)
kill -CONT "${PID[xa]}"
check "twins (a): X, thawed, finds another token on w5: lease lost" \
	wait_log xa 'lease lost: r0/w5' 10 "$from"
check "twins (a): ... and says loudly that two hosts share the owner name" \
	wait_log xa "two hosts share the owner name 'same'" 1 "$from"
sleep 2		# renewals of both, had they both gone on
stop xa
stop ya
check "twins (a): no two generators held overlapping windows on r0/w5" \
	windows xa.gen.log ya.gen.log

# (b) X killed, Y claims, X restarts with its generator's lease.
fill /twb $(($(gnow) + 600000)) 5
etcd_daemon xb "${fast[@]}" --endpoints "$ep" --prefix /twb --owner same
wait_log xb 'lease claimed: r0/w5,' 10
kill -KILL "${PID[xb]}"
wait "${PID[xb]}" 2>/dev/null
etcd_daemon yb "${fast[@]}" --endpoints "$ep" --prefix /twb --owner same
check "twins (b): Y claims w5 once the killed X's lease ran out" \
	wait_log yb 'lease claimed: r0/w5,' 20
from=$(log_lines xb)
etcd_daemon xb "${fast[@]}" --endpoints "$ep" --prefix /twb --owner same
check "twins (b): X, restarted, does not adopt Y's record: revoked" \
	wait_log xb 'the generator held r0/w5 .*another token: revoked' 10 "$from"
check "twins (b): ... with the loud line" \
	grep -q "two hosts share the owner name 'same'" "$work/xb.log"
check "twins (b): ... and X never adopted" \
	test "$(grep -c 'lease adopted' "$work/xb.log")" -eq 0
sleep 2
out=$(timeout 20 "$idgend" --mode etcd --runtime-dir "$work/yb.run" --device "sim:$work/yb2.gen" \
	--require-clock-sync no "${fast[@]}" --endpoints "$ep" --prefix /twb 2>&1)
rc=$?
check "one host, two idgend: the second exits 1 naming the first one's pid" \
	test "$rc" -eq 1 -a -n "$(grep -F "another idgend (pid ${PID[yb]})" <<<"$out")"
stop xb
stop yb
check "twins (b): no two generators held overlapping windows on r0/w5" \
	windows xb.gen.log yb.gen.log

# (c) One owner name AND one owner token: X's owner-token file copied into
# Y's runtime directory (a runtime directory on persistent storage, a
# container image with its /run, a cloned VM).  X frozen past its lease, Y
# claims, X thaws: only the write nonce tells Y's record from X's own.
fill /twc $(($(gnow) + 600000)) 5
etcd_daemon xc "${fast[@]}" --endpoints "$ep" --prefix /twc --owner same
wait_log xc 'lease claimed: r0/w5,' 10
sleep 1.5
kill -STOP "${PID[xc]}"
mkdir -p "$work/yc.run"
cp "$work/xc.run/owner-token" "$work/yc.run/owner-token"
etcd_daemon yc "${fast[@]}" --endpoints "$ep" --prefix /twc --owner same
check "one token (c): Y, with X's owner and token, claims w5 once X's lease ran out" \
	wait_log yc 'lease claimed: r0/w5,' 20
check "one token (c): ... with X's token (same boot: the file was kept)" \
	test "$(record /twc 5 token)" = "$(head -n 1 "$work/xc.run/owner-token")"
from=$(log_lines xc)
kill -CONT "${PID[xc]}"
check "one token (c): X, thawed, finds a write not its own on w5: lease lost" \
	wait_log xc 'lease lost: r0/w5' 10 "$from"
check "one token (c): ... and says loudly that another idgend shares its token" \
	wait_log xc "another idgend shares this host's owner token" 1 "$from"
sleep 2		# renewals of both, had they both gone on
stop xc
stop yc
check "one token (c): no two generators held overlapping windows on r0/w5" \
	windows xc.gen.log yc.gen.log

# --- the layout record -------------------------------------------------------

etcd_daemon la "${fast[@]}" --endpoints "$ep" --prefix /lay
wait_log la 'lease claimed' 10
check "layout: the first claim records the region's layout (3/7/12, from ms 0)" \
	test "$(layout_field /lay worker_bits)/$(layout_field /lay seq_bits)/$(layout_field /lay from_ms)" = 7/12/0
check "layout: pushed with every lease" grep -q ' push .*layout=3/7/12$' "$work/la.gen.log"
etcd_daemon lb "${fast[@]}" --endpoints "$ep" --prefix /lay --layout 3/10/9
wait "${PID[lb]}"
rc=$?
unset "PID[lb]"
check "layout: a host of another layout exits 2 (a configuration error)" test "$rc" -eq 2
check "layout: ... naming both layouts, and pushes nothing" \
	test -n "$(grep -F "the region's layout is 3/7/12 (since ms 0), this host's is 3/10/9" "$work/lb.log")" \
	-a "$(pushes lb)" -eq 0
out=$("$idgend" --cut-over-layout 3/10/9 --endpoints "$ep" --prefix /lay 2>&1)
rc=$?
from_ms=$(layout_field /lay from_ms)
lw=$(worker_of la)
check "cut-over: exits 0, the record says 3/10/9" \
	test "$rc" -eq 0 -a "$(layout_field /lay worker_bits)" = 10
check "cut-over: from_ms ($from_ms) is the old layout's last valid_until" \
	test "$from_ms" = "$(record /lay "$lw" valid_until_ms)"
wait "${PID[la]}"
rc=$?
unset "PID[la]"
check "cut-over: the old layout's next renewal fails; it revokes and exits 2" \
	test "$rc" -eq 2 -a -n "$(grep -F 'layout record changed (a cut-over, or the record written again)' "$work/la.log")"
last=$(grep -Eo 'revoke last=[0-9]+' "$work/la.gen.log" | tail -n 1 | cut -d= -f2)
check "cut-over: ... its generator minted nothing at or above from_ms" \
	test -n "$last" -a "$last" -lt "$from_ms" -a "$(last_push_field la until)" -le "$from_ms"
etcd_daemon lc "${fast[@]}" --endpoints "$ep" --prefix /lay --layout 3/10/9
check "cut-over: a host of the new layout claims" wait_log lc 'lease claimed' 15
check "cut-over: ... pushing 3/10/9 with a floor at or above from_ms" \
	test "$(first_push_field lc floor)" -ge "$from_ms" -a \
	-n "$(grep ' push .*layout=3/10/9$' "$work/lc.gen.log")"
stop lc
out=$("$idgend" --cut-over-layout 2/8/12 --layout 2/7/13 --endpoints "$ep" --prefix /lay 2>&1)
rc=$?
check "cut-over: a change of region bits is refused (exit 2)" \
	test "$rc" -eq 2 -a -n "$(grep -F 'a cut-over keeps region_bits (3)' <<<"$out")"

# One region width for the whole prefix: r0 of 2/8/12 worker 133 and r1
# of 3/7/12 worker 5 share their node bits (0x85000).
etcd_daemon wa "${fast[@]}" --endpoints "$ep" --prefix /width --region 0 --layout 2/8/12
wait_log wa 'lease claimed' 10
check "region width: the first layout records the prefix's region width (2)" \
	test "$(etcdctl_ get --print-value-only /width/region_bits)" = '{"region_bits":2}'
etcd_daemon wb "${fast[@]}" --endpoints "$ep" --prefix /width --region 1 --layout 3/7/12
wait_exit wb 15
rc=$?
check "region width: a region of another width exits 2" test "$rc" -eq 2
check "region width: ... naming both widths, pushing nothing, recording no layout" \
	test -n "$(grep -F 'every region under this prefix has 2 region bits (the prefix' "$work/wb.log" |
		grep -F "this host's layout 3/7/12 has 3")" \
	-a "$(pushes wb)" -eq 0 -a -z "$(etcdctl_ get --print-value-only /width/r1/layout)"
out=$("$idgend" --cut-over-layout 3/7/12 --layout 3/10/9 --region 1 --endpoints "$ep" --prefix /width 2>&1)
rc=$?
check "region width: a cut-over to another width is refused too (exit 2)" \
	test "$rc" -eq 2 -a -n "$(grep -F 'every region under this prefix has 2 region bits' <<<"$out")"
stop wa

# A worker record far in the future (a host whose clock jumped): a cut-over
# refuses to start the layout decades ahead, unless forced; once the record
# is put right, the same cut-over brings from_ms down again.
etcdctl_ put /far/r0/w/3 '{"owner":"jumped","valid_until_ms":2000000000000}' >/dev/null
out=$("$idgend" --cut-over-layout 3/10/9 --endpoints "$ep" --prefix /far 2>&1)
rc=$?
check "far ahead: a cut-over decades ahead exits 2, writing nothing" \
	test "$rc" -eq 2 -a -z "$(etcdctl_ get --print-value-only /far/r0/layout)"
check "far ahead: ... naming the record responsible and --force" \
	test -n "$(grep -F "r0/w3: owner 'jumped', valid_until ms 2000000000000" <<<"$out")" \
	-a -n "$(grep -F -- '--cut-over-layout 3/10/9 --force' <<<"$out")"
out=$("$idgend" --cut-over-layout 3/10/9 --force --endpoints "$ep" --prefix /far 2>&1)
check "far ahead: --force writes it" \
	test $? -eq 0 -a "$(layout_field /far from_ms)" = 2000000000000
etcdctl_ put /far/r0/w/3 "{\"owner\":\"jumped\",\"valid_until_ms\":$(gnow)}" >/dev/null
out=$("$idgend" --cut-over-layout 3/10/9 --endpoints "$ep" --prefix /far 2>&1)
check "far ahead: the record put right, the same cut-over brings from_ms down" \
	test $? -eq 0 -a "$(layout_field /far from_ms)" -lt 2000000000000
out=$("$idgend" --force --mode etcd 2>&1)
check "--force without --cut-over-layout: exit 2" \
	test $? -eq 2 -a -n "$(grep -F -- '--force is for --cut-over-layout only' <<<"$out")"

# A layout record deleted by hand and written again by a host of another
# layout: it starts above every lease the region holds, as a cut-over.
etcd_daemon p "${fast[@]}" --endpoints "$ep" --prefix /again
wait_log p 'lease claimed' 10
sleep 1.5
kill -STOP "${PID[p]}"
pw=$(worker_of p)
fence=$(record /again "$pw" valid_until_ms)
etcdctl_ del /again/r0/layout >/dev/null
etcd_daemon q "${fast[@]}" --endpoints "$ep" --prefix /again --layout 3/10/9
wait_log q 'lease claimed' 15
from_ms=$(layout_field /again from_ms)
check "layout re-created: from_ms ($from_ms) is the other layout's last fence ($fence)" \
	test "$from_ms" -ge "$fence" -a "$(layout_field /again worker_bits)" = 10
check "layout re-created: ... and the new layout's claim mints only above it" \
	test "$(first_push_field q floor)" -ge "$from_ms"
from=$(log_lines p)
kill -CONT "${PID[p]}"
wait_exit p 15
rc=$?
check "layout re-created: the old layout's host revokes and exits 2" \
	test "$rc" -eq 2 -a -n "$(tail -n "+$from" "$work/p.log" | grep -F "the region's layout is 3/10/9")"
stop q
check "layout re-created: no two generators could mint one ID's bits in one ms" \
	windows p.gen.log q.gen.log
etcd_cleanup

# --- three members -----------------------------------------------------------

if ! etcd_cluster three 3; then
	not_ok "start a 3-member etcd cluster"
	exit 1
fi
ep=$(etcd_endpoints)
etcd_daemon c --lease-ms 6000 --renew-ms 1000 --timeout-ms 400 --endpoints "$ep" --prefix /c
wait_log c 'lease claimed' 15
leader=$(etcd_leader)
if [ -n "$leader" ]; then
	etcd_stop "$leader"
	killed=$(gnow)
	sleep 6
	after=$(awk -v t="$killed" '$2 == "push" && $1 > t + 2000' "$work/c.gen.log" | wc -l)
	check "leader killed: renewals go on through the other members ($after)" \
		test "$after" -ge 2
	check "leader killed: the lease never lapsed" \
		test "$(last_push_field c until)" -gt "$(gnow)"
	etcd_start "$leader"
	etcd_wait "$leader"
else
	not_ok "leader killed: find the leader"
fi

# Every member down for less than a lease: minting goes on, no push.
n0=$(pushes c)
for i in 0 1 2; do etcd_stop "$i"; done
sleep 3
check "short outage: nothing pushed while etcd is down" test "$(pushes c)" -eq "$n0"
check "short outage: the generator's fence is still ahead (minting goes on)" \
	test "$(last_push_field c until)" -gt "$(gnow)"
check "short outage: nothing revoked" test "$(grep -c ' revoke ' "$work/c.gen.log")" -eq 0
for i in 0 1 2; do etcd_start "$i"; done
for i in 0 1 2; do etcd_wait "$i"; done
sleep 4
check "short outage: renewals resume" test "$(pushes c)" -gt "$n0"

# Longer than a lease: the fence runs out, nothing new is pushed.
from=$(log_lines c)
for i in 0 1 2; do etcd_stop "$i"; done
n0=$(pushes c)
fence=$(last_push_field c until)
sleep 8
check "long outage: nothing pushed" test "$(pushes c)" -eq "$n0"
check "long outage: the fence ($fence) ran out; the generator stops by itself" \
	test "$fence" -le "$(gnow)"
check "long outage: logged that the fence has passed" \
	wait_log c 'has passed: not minting' 1 "$from"
from=$(log_lines c)
for i in 0 1 2; do etcd_start "$i"; done
for i in 0 1 2; do etcd_wait "$i"; done
check "long outage: the record unchanged, the lease renews when etcd is back" \
	wait_log c "lease renewed: .* valid until ms" 15 "$from"
stop c
check "long outage: clean stop after" test $? -eq 0
etcd_cleanup

# --- a fake endpoint ------------------------------------------------------------

for scenario in garbage truncated; do
	etcd_daemon "f-$scenario" "${fast[@]}" --endpoints "http://127.0.0.1:$port/$scenario" \
		--prefix /f --start-timeout-ms 0
	wait "${PID[f-$scenario]}"
	rc=$?
	unset "PID[f-$scenario]"
	check "fake endpoint, $scenario JSON: exit 1" test "$rc" -eq 1
	check "fake endpoint, $scenario JSON: a clear error, nothing pushed" \
		test -n "$(grep -E "cannot read the (region's layout|prefix's region width) record: .*(JSON|truncated)" "$work/f-$scenario.log")" \
		-a "$(pushes "f-$scenario")" -eq 0
done

# Default-omitted answers (no kvs, no count, no succeeded) are valid: the
# layout record reads as absent, and its create-if-absent as lost.
etcd_daemon f-minimal "${fast[@]}" --endpoints "http://127.0.0.1:$port/minimal" \
	--prefix /f --start-timeout-ms 0
check "fake endpoint, default-omitted JSON: read as an absent record and a lost create" \
	wait_log f-minimal "(layout|region width) record is still missing after writing it" 10
check "fake endpoint, default-omitted JSON: nothing pushed, the daemon stays up" \
	test "$(pushes f-minimal)" -eq 0 -a -e "/proc/${PID[f-minimal]}"
stop f-minimal
check "fake endpoint, default-omitted JSON: clean stop" test $? -eq 0

echo "1..$n"
exit "$status"

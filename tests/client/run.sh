#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh: libidgen-client's host tests, as one TAP stream, against
# idgen-httpd --device sim:W processes on 127.0.0.1, each with its own
# worker W (an ID names the host that minted it):
#   - bad endpoints and options refused, naming the fault
#   - balancing: every host answers a share of the calls
#   - one host SIGSTOPped, before and during a run: every call answered
#     within a generous bound (the distribution printed), none by it
#   - a host frozen while calls go on: at most a few connections wait for
#     it, however often it is probed
#   - a host killed, then restarted on its port: no call fails, and it
#     answers again
#   - every host down (refusing, then frozen): -ETIMEDOUT after the
#     deadline, the message naming every host and why
#   - 10^6 IDs over 8 threads with the buffer, and 8 threads without, and
#     by calls of 20 with the buffer: none twice, each thread's IDs of one
#     host strictly increasing
#   - the buffer's age bound, with sleeps past it
#   - a client made before fork(), _Fork(), clone() or clone3(), from PID 1
#     into a new PID namespace too, serves no call in the child (its buffer
#     holds IDs the parent hands out)
#   - bad answers from fake_server.py (not JSON, numbers, duplicates, out
#     of order, a wrong count, a wrong layout version, too long, 503,
#     IDs older than the buffer's bound...): refused, and the call answered
#     by the good host
#   - idgenctl mint --remote
#   - https against idgen-httpd with TLS and mTLS (tests/httpd/tls-certs.sh's
#     certificates): mint, one handshake per host however many calls,
#     failover from a TLS host that is down; a wrong CA, a certificate for
#     another name, a client certificate the server refuses, none, and a
#     key file others can read, each refused with its reason; idgenctl mint
#     --remote --ca-file --cert-file --key-file
#   - the scenarios under valgrind, built with ASan and UBSan, and with
#     ThreadSanitizer
set -uo pipefail
# Its simulated workers are its own: a /dev/shm of its own.
# shellcheck source=../lib/own-namespaces.sh
. "$(dirname "$0")/../lib/own-namespaces.sh"

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
httpd=$top/helper/httpd/idgen-httpd
out=$top/build/client-test
ct=$out/client_test
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=../lib/httpd.sh
. "$top/tests/lib/httpd.sh"

mkdir -p "$top/build"
work=$(mktemp -d "$top/build/client-run.XXXXXX") || exit 1
declare -A hpid hport
fake_pid=
cleanup() {
	local p
	for p in "${hpid[@]}" $fake_pid; do
		kill -CONT "$p" 2>/dev/null
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
bail() { echo "1..$n"; exit 1; }

echo "TAP version 13"
tap_step "build lib (libidgen-client)" make -s -C "$top/lib" || bail
tap_step "build helper/httpd" make -s -C "$top/helper/httpd" || bail
tap_step "build helper/idgenctl" make -s -C "$top/helper/idgenctl" || bail
tap_step "build the client tests" make -s -C "$here" OUT="$out" || bail

# ---- the library as installed ------------------------------------------------
check "libidgen-client.so exports idgen_client_* only" bash -c "
	nm -D --defined-only '$top/lib/libidgen-client.so.0' | awk '\$2 != \"A\" { print \$3 }' > '$work/syms' &&
	test -s '$work/syms' && ! grep -v '^idgen_client_' '$work/syms'"
check "libidgen.so, the device library, links no network library (no libcurl, no json-c)" bash -c "
	readelf -d '$top/lib/libidgen.so.0' > '$work/needed' && grep -q NEEDED '$work/needed' &&
	! grep -E 'NEEDED.*(curl|json)' '$work/needed'"
check "libidgen-client.so links libidgen.so.0, libcurl and json-c" bash -c "
	readelf -d '$top/lib/libidgen-client.so.0' > '$work/cneeded' &&
	grep -q 'NEEDED.*libidgen.so.0' '$work/cneeded' && grep -q 'NEEDED.*libcurl' '$work/cneeded' &&
	grep -q 'NEEDED.*libjson-c' '$work/cneeded'"
root=$work/root
tap_step "make install DESTDIR=... PREFIX=/usr: idgen_client.h, libidgen-client, idgen-client.pc, idgen_client.3" bash -c "
	make -s -C '$top/lib' install DESTDIR='$root' PREFIX=/usr &&
	test -f '$root/usr/include/idgen_client.h' && test -L '$root/usr/lib/libidgen-client.so' &&
	test -f '$root/usr/lib/libidgen-client.so.0' && test -f '$root/usr/lib/libidgen-client.a' &&
	test -f '$root/usr/share/man/man3/idgen_client.3' &&
	grep -qx 'Libs: -L\\\${libdir} -lidgen-client' '$root/usr/lib/pkgconfig/idgen-client.pc' &&
	grep -qx 'Requires: idgen' '$root/usr/lib/pkgconfig/idgen-client.pc' &&
	grep -qx 'prefix=/usr' '$root/usr/lib/pkgconfig/idgen-client.pc'"
printf '%s\n' '#include <errno.h>' '#include <idgen_client.h>' 'int main(void) {' \
	'struct idgen_client_options o; struct idgen_client *c; uint64_t id;' \
	'idgen_client_options_init(&o); o.deadline_ms = 50; o.buffer_size = 0;' \
	'if (idgen_client_new("http://127.0.0.1:1", &o, &c)) return 1;' \
	'int r = idgen_client_next(c, &id); idgen_client_free(c); return r != -ETIMEDOUT; }' >"$work/p.c"
tap_step "a program builds with pkg-config idgen-client against the installed library and runs" bash -c "
	flags=\$(PKG_CONFIG_PATH='$root/usr/lib/pkgconfig' PKG_CONFIG_SYSROOT_DIR='$root' pkg-config --cflags --libs idgen-client) &&
	cc -Wall -Werror -o '$work/p' '$work/p.c' \$flags &&
	LD_LIBRARY_PATH='$root/usr/lib' '$work/p'"

# host W [PORT [ARGS...]]: idgen-httpd --device sim:W on 127.0.0.1:PORT
# (default: a free one) with ARGS; sets hpid[W] and hport[W].  A restarted
# host may find its port held a moment (TIME_WAIT): it is tried for 5 s.
host() {
	local w=$1 port=${2:-0} log=$work/host$1.log try
	shift $(($# < 2 ? $# : 2))
	for ((try = 0; try < 25; try++)); do
		: >"$log"
		"$httpd" --device "sim:$w" --clock-check no --listen "127.0.0.1:$port" "$@" >>"$log" 2>&1 &
		hpid[$w]=$!
		hport[$w]=$(httpd_port "$log" "${hpid[$w]}") && return 0
		wait "${hpid[$w]}" 2>/dev/null
		sleep 0.2
	done
	sed 's/^/# /' "$log"
	return 1
}
url() { echo "http://127.0.0.1:${hport[$1]}"; }
# freeze W...: SIGSTOP, and wait until the kernel shows them stopped.
freeze() {
	local w t
	for w in "$@"; do
		kill -STOP "${hpid[$w]}"
		for ((t = 0; t < 50; t++)); do
			grep -q '^State:.*T (stopped)' "/proc/${hpid[$w]}/status" && break
			sleep 0.02
		done
		grep '^State:' "/proc/${hpid[$w]}/status" | sed "s/^/# host $w (pid ${hpid[$w]}): /"
	done
}
thaw() { local w; for w in "$@"; do kill -CONT "${hpid[$w]}"; done; }
# state W: the host's process state, as a comment (a frozen host that ran
# on would show here).
state() { grep '^State:' "/proc/${hpid[$1]}/status" | sed "s/^/# host $1 (pid ${hpid[$1]}) now: /"; }
stop_host() { kill "${hpid[$1]}" 2>/dev/null; wait "${hpid[$1]}" 2>/dev/null; unset "hpid[$1]"; }

# soak_check NAME FILE BOUND_MS FROM_NS: mint_soak's output: every call
# answered, within BOUND_MS, no ID twice, each host's IDs strictly
# increasing; sets late_W, the calls host W answered from FROM_NS on.
soak_check() {
	local name=$1 f=$2 bound=$3 calls errors dups disorder p50_ns p99_ns p999_ns max_ns
	eval "$(python3 "$here/soak_summary.py" "$f" "$4")"
	grep '^# error' "$f" | head -n 3
	check "$name: no call failed ($errors of $((calls + errors)))" test "$errors" = 0
	check "$name: a stats line" grep -q '^# stats calls=[0-9]* retries=[0-9]* timeouts=[0-9]* skipped=[0-9]* buffer_hits=[0-9]*' "$f"
	grep '^# stats' "$f"
	awk -v a="$p50_ns" -v b="$p99_ns" -v c="$p999_ns" -v d="$max_ns" -v n="$calls" 'BEGIN {
		printf "# %d calls: latency p50 %.3f ms, p99 %.3f ms, p999 %.3f ms, max %.3f ms\n",
			n, a / 1e6, b / 1e6, c / 1e6, d / 1e6 }'
	check "$name: every call within $bound ms" test "$calls" -gt 0 -a "$max_ns" -le $((bound * 1000000))
	check "$name: no ID twice ($dups)" test "$dups" = 0
	check "$name: each host's IDs strictly increasing ($disorder out of order)" test "$disorder" = 0
}

tap_run "options" "$ct" options

for w in 11 12 13; do
	host $w || { not_ok "idgen-httpd --device sim:$w starts"; bail; }
done
ok "three idgen-httpd --device sim hosts (workers 11, 12, 13)"
urls=$(url 11),$(url 12),$(url 13)

tap_run "spread" "$ct" spread "$urls" 3000
tap_run "10^6 IDs, 8 threads, buffer 32" "$ct" unique "$urls" 1000000 8 32
tap_run "8 threads, no buffer" "$ct" unique "$urls" 40000 8 0
# Calls of 20 with a buffer of 32: some from the buffer, the rest waited for.
tap_run "8 threads, buffer 32, next_n(20)" "$ct" unique "$urls" 400000 8 32 20
tap_run "one host, buffer 32, next_n(20)" "$ct" unique "$(url 11)" 40000 1 32 20
tap_run "age bound 50 ms" "$ct" stale "$urls" 50
tap_run "fork" "$ct" fork "$urls"
# Children that run no atfork handler, and children that are PID 1 as
# their parent is (those skipped without CAP_SYS_ADMIN).
for how in _Fork clone clone3 pidns-fork pidns-_Fork pidns-clone pidns-clone3; do
	tap_run "fork $how" "$ct" fork "$urls" "$how"
done
# Where madvise(MADV_WIPEONFORK) fails (a seccomp filter): no buffer.
for how in no-wipe-_Fork no-wipe-clone; do
	tap_run "fork $how" "$ct" fork "$urls" "$how"
done

# ---- a frozen host ---------------------------------------------------------
freeze 11
tap_run "host 11 frozen" "$ct" frozen "$urls" 3000 250 11
state 11
thaw 11
# Frozen in the middle of a run, then thawed: it answers again.
# A deadline of 1 s: a call that takes longer than the bound fails the
# bound's check, not the deadline's, and shows how long it took.
"$out/mint_soak" --remote "$urls" --seconds 4 --deadline-ms 1000 >"$work/freeze.out" 2>&1 &
soak=$!
sleep 1
freeze 12
sleep 1.5
state 12
thaw 12
wait $soak
check "mint_soak through a freeze of host 12 exits 0" test $? = 0
soak_check "freeze mid-run" "$work/freeze.out" 250 3000000000
check "host 12 answered again after its thaw ($late_12 calls in the last second)" \
	test "$late_12" -gt 0

# ---- a frozen host gets one connection at a time ---------------------------
# Its kernel still accepts connections into the listening socket's backlog
# (ss shows how many wait there as Recv-Q): each one the client gave up
# would greet the host on its thaw, past its max_connections_per_ip.
freeze 11
tap_run "host 11 frozen, probes every 20 ms" "$ct" hold "$urls" 3 20
queued=$(ss -Hltn "sport = :${hport[11]}" | awk '{ print $2; exit }')
check "... connections waiting for the frozen host: ${queued:-none listed}, at most 4" \
	test "${queued:-99}" -le 4
state 11
thaw 11

# ---- a host killed and restarted -----------------------------------------
"$out/mint_soak" --remote "$urls" --seconds 6 --deadline-ms 1000 >"$work/restart.out" 2>&1 &
soak=$!
sleep 1
port13=${hport[13]}
kill -KILL "${hpid[13]}"
wait "${hpid[13]}" 2>/dev/null
sleep 1
host 13 "$port13" || not_ok "host 13 restarts on port $port13"
wait $soak
check "mint_soak through host 13 killed and restarted exits 0" test $? = 0
soak_check "kill and restart" "$work/restart.out" 250 4500000000
check "host 13 answered again after its restart ($late_13 calls in the last 1.5 s)" \
	test "$late_13" -gt 0

# ---- idgenctl mint --remote --------------------------------------------------
ctl=$top/helper/idgenctl/idgenctl
"$ctl" mint --remote "$urls" -n 5 >"$work/ctl.out" 2>"$work/ctl.err"
rc=$?
check "idgenctl mint --remote -n 5: exit 0, five decoded IDs from the hosts" \
	test $rc = 0 -a "$(grep -cE "^[0-9]+  20[0-9-]+T[0-9:.]+Z region 0 worker 1[123] seq [0-9]+ layout 1$" "$work/ctl.out")" = 5
sed 's/^/# /' "$work/ctl.out" "$work/ctl.err"
"$ctl" mint --remote "$urls" -n 3 --json >"$work/ctl.json"
rc=$?
check "idgenctl mint --remote -n 3 --json: exit 0, an array of 3 decoded objects" \
	test $rc = 0 -a "$(grep -o '"worker":1[123],' "$work/ctl.json" | wc -l)" = 3
"$ctl" mint --remote "$urls" -n 25000 --raw >"$work/ctl.raw"
rc=$?
check "idgenctl mint --remote -n 25000 --raw: exit 0, 25000 bare IDs, none twice (batches of 10000)" \
	test $rc = 0 -a "$(grep -cxE '[1-9][0-9]*' "$work/ctl.raw")" = 25000 -a "$(sort -u "$work/ctl.raw" | wc -l)" = 25000
"$ctl" mint --remote "http://127.0.0.1:1" >"$work/ctl-down.out" 2>&1
rc=$?
check "idgenctl mint --remote with the host down: exit 1, naming it and why" \
	test $rc = 1 -a -n "$(grep 'http://127.0.0.1:1: .*Connection refused' "$work/ctl-down.out")"
sed 's/^/# /' "$work/ctl-down.out"
"$ctl" mint --remote "ftp://x" >"$work/ctl-bad.out" 2>&1
rc=$?
check "idgenctl mint --remote ftp://x: exit 1, the endpoint refused" \
	test $rc = 1 -a -n "$(grep 'is not an http:// or https:// URL' "$work/ctl-bad.out")"

# ---- https: idgen-httpd with TLS and mTLS -----------------------------------
# Two hosts requiring client certificates of ca.pem (tests/httpd's
# certificates), a third started and stopped (its port refuses), and a
# fourth whose certificate names only other.example.
certs=$work/certs
# other_name: certs/other.pem, of ca.pem, for DNS:other.example alone.
other_name() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$certs/other.key" \
		-out "$certs/other.csr" -subj /CN=other.example 2>/dev/null &&
	printf '%s\n' subjectAltName=DNS:other.example basicConstraints=CA:FALSE \
		keyUsage=critical,digitalSignature extendedKeyUsage=serverAuth >"$certs/other.ext" &&
	openssl x509 -req -in "$certs/other.csr" -CA "$certs/ca.pem" -CAkey "$certs/ca.key" \
		-CAcreateserial -days 2 -extfile "$certs/other.ext" -out "$certs/other.pem" 2>/dev/null &&
	chmod 600 "$certs/other.key"
}
if tap_step "tests/httpd/tls-certs.sh makes the certificates" "$top/tests/httpd/tls-certs.sh" "$certs" &&
   tap_step "a server certificate for other.example alone" other_name &&
   host 40 0 --tls-cert "$certs/server.pem" --tls-key "$certs/server.key" --tls-client-ca "$certs/ca.pem" &&
   host 41 0 --tls-cert "$certs/server.pem" --tls-key "$certs/server.key" --tls-client-ca "$certs/ca.pem" &&
   host 42 0 --tls-cert "$certs/server.pem" --tls-key "$certs/server.key" --tls-client-ca "$certs/ca.pem" &&
   host 43 0 --tls-cert "$certs/other.pem" --tls-key "$certs/other.key" --tls-client-ca "$certs/ca.pem"; then
	ok "four idgen-httpd hosts with TLS and mTLS (--tls-client-ca)"
	stop_host 42
	s1="https://127.0.0.1:${hport[40]}" s2="https://127.0.0.1:${hport[41]}"
	sdown="https://127.0.0.1:${hport[42]}"
	mine=("$certs/ca.pem" "$certs/spiffe.pem" "$certs/spiffe.key")
	tap_run "https, mTLS: 300 calls on two hosts, at most 2 handshakes (one per host) and two per retry" \
		"$ct" tls "$s1,$s2" "${mine[@]}" 300 2 ok
	tap_run "https by name (localhost): the certificate's DNS name verified" \
		"$ct" tls "https://localhost:${hport[40]}" "${mine[@]}" 50 1 ok
	tap_run "failover: a TLS host down, the other answers every call, 1 handshake" \
		"$ct" tls "$sdown,$s1" "${mine[@]}" 200 1 ok
	tap_run "a wrong CA (foreign-ca.pem): refused, the certificate problem said" \
		"$ct" tls "$s1" "$certs/foreign-ca.pem" "$certs/spiffe.pem" "$certs/spiffe.key" 3 1 \
		"SSL certificate problem: unable to get local issuer certificate"
	tap_run "a client certificate of another CA: the server refuses it, the error says so" \
		"$ct" tls "$s1" "$certs/ca.pem" "$certs/foreign.pem" "$certs/foreign.key" 3 1 \
		"most likely refused this client's certificate"
	check "... and the server's log names the refused certificate" \
		grep -q 'a client certificate from 127.0.0.1 refused at the handshake' "$work/host40.log"
	tap_run "no client certificate: the error says the server most likely requires one" \
		"$ct" tls "$s1" "$certs/ca.pem" - - 3 1 "most likely requires a client certificate"
	# The name (IP) check is always on.
	tap_run "a certificate for other.example from 127.0.0.1: refused, the name said" \
		"$ct" tls "https://127.0.0.1:${hport[43]}" "${mine[@]}" 3 1 \
		"no alternative certificate subject name matches target host name '127.0.0.1'"
	cp "$certs/spiffe.key" "$work/open.key" && chmod 644 "$work/open.key"
	tap_run "a key file others can read (0644): refused, with the chmod that mends it" \
		"$ct" tls "$s1" "$certs/ca.pem" "$certs/spiffe.pem" "$work/open.key" 3 1 \
		"readable by group or others (mode 0644): it must be mode 0600 (chmod 600"
	tap_run "cert_file without key_file: refused" \
		"$ct" tls "$s1" "$certs/ca.pem" "$certs/spiffe.pem" - 3 1 "cert_file and key_file go together"
	# Control: the "ok" scenario's checks fail on a bad input (a wrong CA).
	"$ct" tls "$s1" "$certs/foreign-ca.pem" "$certs/spiffe.pem" "$certs/spiffe.key" 3 1 ok \
		>"$work/tls-control.out" 2>&1
	check "control: the https scenario fails with a wrong CA (exit $?)" \
		grep -q '^not ok .*calls over https answered' "$work/tls-control.out"
	"$ctl" mint --remote "$s1,$s2" --ca-file "$certs/ca.pem" --cert-file "$certs/spiffe.pem" \
		--key-file "$certs/spiffe.key" -n 5 >"$work/ctl-tls.out" 2>&1
	rc=$?
	check "idgenctl mint --remote https://... --ca-file --cert-file --key-file: exit 0, five IDs" \
		test $rc = 0 -a "$(grep -cE ' worker 4[01] seq [0-9]+ layout 1$' "$work/ctl-tls.out")" = 5
	sed 's/^/# /' "$work/ctl-tls.out"
	"$ctl" mint --remote "$s1" --ca-file "$certs/ca.pem" --cert-file "$certs/spiffe.pem" \
		--key-file "$work/open.key" >"$work/ctl-tls-key.out" 2>&1
	rc=$?
	check "idgenctl mint --remote --key-file of mode 0644: exit 1, refused" \
		test $rc = 1 -a -n "$(grep 'readable by group or others' "$work/ctl-tls-key.out")"
	"$ctl" mint --remote "$s1" --cert-file "$certs/spiffe.pem" >"$work/ctl-tls-usage.out" 2>&1
	rc=$?
	check "idgenctl mint --cert-file without --key-file: a usage error" \
		test $rc != 0 -a -n "$(grep -- '--cert-file and --key-file go together' "$work/ctl-tls-usage.out")"
	# The TLS paths under ASan and UBSan: the copied files freed, the
	# connection cache's handshakes leak nothing.
	tap_run "asan: https, mTLS, 100 calls on two hosts" \
		"$out/client_test_asan" tls "$s1,$s2" "${mine[@]}" 100 2 ok
	tap_run "asan: a key file others can read refused" \
		"$out/client_test_asan" tls "$s1" "$certs/ca.pem" "$certs/spiffe.pem" "$work/open.key" 1 1 \
		"readable by group or others"
	stop_host 40
	stop_host 41
	stop_host 43
else
	not_ok "four idgen-httpd hosts with TLS and mTLS (--tls-client-ca)"
fi

# ---- bad answers ------------------------------------------------------------
python3 "$here/fake_server.py" >"$work/fake.log" 2>&1 &
fake_pid=$!
for ((t = 0; t < 100; t++)); do
	fport=$(sed -n 's/^listening on port //p' "$work/fake.log")
	[ -n "$fport" ] && break
	sleep 0.1
done
if [ -n "$fport" ]; then
	fake=http://127.0.0.1:$fport
	mode() { curl -s -o /dev/null -X POST "$fake/mode/$1"; }
	for m in "notjson:bad answer: not JSON" "trailing:bad answer: not JSON" \
		 "numbers:an ID that is not a string" "duplicate:IDs not strictly increasing" \
		 "decreasing:IDs not strictly increasing" "short:a wrong number of IDs" \
		 "long:a wrong number of IDs" "leadingzero:not canonical decimal" \
		 "toobig:not canonical decimal" "version2:a layout_version other than" \
		 "versionstring:no integer \"layout_version\"" "noversion:no integer \"layout_version\"" \
		 "array:not a JSON object" "empty:bad answer: not JSON" \
		 "huge:bad answer: longer than" "status503:HTTP 503 from /v1/ids:next"; do
		mode "${m%%:*}"
		tap_run "fake answers ${m%%:*}" "$ct" bad "$fake" "$(url 12)" 12 20 "${m#*:}"
	done
	# Old IDs (a lagging clock, an answer held up): with a buffer, a refill
	# hands its IDs to waiting calls at once, and must not hand those.
	mode old
	tap_run "fake answers old IDs, buffer 8" "$ct" badbuf "$fake" "$(url 12)" 12 200 \
		"minted more than max_age_ms"
	# The check above can fail: a fake that answers well gets its IDs through.
	mode good
	"$ct" bad "$fake" "$(url 12)" 12 20 "bad answer" >"$work/control.out" 2>&1
	check "control: a fake answering well is caught by the same check" \
		grep -q '^not ok .* none with the fake' "$work/control.out"
else
	not_ok "fake_server.py starts"
fi

# ---- under valgrind, and built with ASan and UBSan ------------------------
if command -v valgrind >/dev/null; then
	vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
	tap_run "valgrind: options" "${vg[@]}" "$ct" options
	tap_run "valgrind: spread" "${vg[@]}" "$ct" spread "$urls" 300
	tap_run "valgrind: 4 threads, buffer 32" "${vg[@]}" "$ct" unique "$urls" 20000 4 32
	tap_run "valgrind: age bound" "${vg[@]}" "$ct" stale "$urls" 50
	[ -n "$fport" ] && { mode notjson; tap_run "valgrind: bad answers" "${vg[@]}" "$ct" bad "$fake" "$(url 12)" 12 20 "bad answer: not JSON"; }
else
	not_ok "valgrind is installed (scripts/deps.sh)"
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
asan=$out/client_test_asan
tap_run "asan: options" "$asan" options
tap_run "asan: spread" "$asan" spread "$urls" 2000
tap_run "asan: 8 threads, buffer 32" "$asan" unique "$urls" 100000 8 32
tap_run "asan: 8 threads, no buffer" "$asan" unique "$urls" 20000 8 0
tap_run "asan: age bound" "$asan" stale "$urls" 50
freeze 11
tap_run "asan: host 11 frozen" "$asan" frozen "$urls" 1000 250 11
state 11
thaw 11
# The event-loop thread and 8 callers under ThreadSanitizer: any data race
# fails the run (exit code 66).
if tap_step "build client_test under ThreadSanitizer (clang)" make -s -C "$here" OUT="$out" tsan; then
	tsan=(env TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$out/client_test_tsan")
	tap_run "tsan: 8 threads, buffer 32" "${tsan[@]}" unique "$urls" 100000 8 32
	tap_run "tsan: 8 threads, no buffer" "${tsan[@]}" unique "$urls" 20000 8 0
	tap_run "tsan: 8 threads, buffer 32, next_n(20)" "${tsan[@]}" unique "$urls" 100000 8 32 20
	freeze 11
	tap_run "tsan: host 11 frozen" "${tsan[@]}" frozen "$urls" 1000 250 11
	thaw 11
fi
[ -n "$fport" ] && { mode duplicate; tap_run "asan: bad answers" "$asan" bad "$fake" "$(url 12)" 12 20 "IDs not strictly increasing"; }

# ---- every host down --------------------------------------------------------
freeze 11 12 13
tap_run "all frozen" "$ct" alldown "$urls" 100 400 0 "timed out"
tap_run "asan: all frozen, buffer 32" "$asan" alldown "$urls" 100 400 32 "timed out"
tap_run "all frozen, fork in a handler, buffer 32" "$ct" forkwait "$urls" 32
tap_run "all frozen, fork in a handler, no buffer" "$ct" forkwait "$urls" 0
state 11; state 12; state 13
thaw 11 12 13
for w in 11 12 13; do
	stop_host $w
done
tap_run "all refusing" "$ct" alldown "$urls" 100 400 0 "Connection refused"
tap_run "all refusing, buffer 32" "$ct" alldown "$urls" 100 400 32 "Connection refused"
if command -v valgrind >/dev/null; then
	# A deadline of 1 s, not 100 ms: under valgrind, on a loaded machine,
	# the first try's connect alone has taken 99 ms, leaving no refusal
	# for the message to name.
	tap_run "valgrind: all refusing" "${vg[@]}" "$ct" alldown "$urls" 1000 2000 0 "Connection refused"
fi

echo "1..$n"
exit $status

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh: idgen-httpd's host tests, against --device sim (no /dev/idgen
# needed), as one TAP stream:
#   - every route, with curl: status, content type, headers
#   - every bad input the contract lists: its status and JSON error, and
#     no ID consumed (the simulated generator logs how many it minted)
#   - the generator's refusals as 503 with Retry-After, and /readyz's
#     reasons (adjtimex through tests/httpd/fake_adjtimex.c)
#   - the bulk lane large requests are minted on (lane_test.c), and large
#     requests beside small ones, and through a stop
#   - per-caller quotas: the burst, then 429 with Retry-After, passing
#     after the wait it gave, no ID consumed by a refusal
#   - limits: bodies over 4 KiB, connections per address, a stalled
#     request cut off; a connection over a limit answered 503, IPv6
#     clients counted by their /64 (in a network namespace), ambiguous
#     framing refused (conn_test.py)
#   - /metrics: counts after known requests, and the text format
#   - the JSON it answers, parsed by Node (json_check.mjs): IDs as strings,
#     exact in BigInt
#   - the example Prometheus alerting rules (promtool check and test)
#   - the systemd unit (systemd-analyze, offline)
#   - the same in headless Chromium, through fetch (browser/)
#   - the configuration file and flags
#   - the gRPC face (grpc_test.py): every method and status through
#     Python's grpcio, health Check and Watch, quotas, refusals, 10^6 IDs
#     from 8 threads, a stop with calls in flight, and raw HTTP/2 floods;
#     through Node's @grpc/grpc-js (grpc-node/); under ASan, connections
#     closing while the lane mints for them and peers that hold what they
#     are owed (grpc_race.py); gRPC's wire rules (grpc_wire_test.c)
#   - TLS (tls_test.c): contexts loaded whole or refused, the caller map,
#     client certificates at the handshake, reloads; live (tls_live.sh):
#     HTTPS through curl and openssl, its policy, SIGHUP's reloads, mTLS's
#     callers, the configuration; hostile input on the TLS port
#     (tls_hostile.py)
#   - the request handling (helper/httpd/api.c), the gRPC face over
#     HTTP/2 (grpc_*.c) and TLS (tls.c: caller maps, client certificates,
#     handshakes) under libFuzzer
set -uo pipefail
# Its simulated workers are its own: a /dev/shm of its own.
# shellcheck source=../lib/own-namespaces.sh
. "$(dirname "$0")/../lib/own-namespaces.sh"

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
httpd=$top/helper/httpd/idgen-httpd
out=$top/build/httpd-test
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=../lib/httpd.sh
. "$top/tests/lib/httpd.sh"

mkdir -p "$top/build"
work=$(mktemp -d "$top/build/httpd-run.XXXXXX") || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
bail() { echo "1..$n"; exit 1; }

echo "TAP version 13"
tap_step "build helper/httpd" make -s -C "$top/helper/httpd" || bail
tap_step "build the idgen-httpd tests" make -s -C "$here" OUT="$out" || bail

header_of() { tr -d '\r' <"$work/$1.hdr" | sed -n "s/^$2: //Ip"; }

# bad DESC STATUS CODE CURL-ARGS...: an error answer; its JSON is checked
# by json_check.mjs at the end.
errors=$work/errors.txt
: >"$errors"
nbad=0
bad_prefix=	# before each description: which run of body_cases
bad() {
	local desc=$bad_prefix$1 want=$2 code=$3 name got type
	shift 3
	nbad=$((nbad + 1))
	name=bad$nbad
	req "$name" "$@"
	got=$(status_of "$name")
	type=$(header_of "$name" Content-Type)
	if [ "$got" = "$want" ] && [ "$type" = application/json ] &&
	   grep -q "\"code\":\"$code\"" "$work/$name.body"; then
		ok "$desc: $want $code"
		echo "$want $code $work/$name.body" >>"$errors"
	else
		not_ok "$desc: $want $code (got $got, $type)"
		sed 's/^/# /' "$work/$name.body"; echo
	fi
}

J=(-H 'Content-Type: application/json')
# bad_next DESC STATUS CODE BODY: bad, for BODY posted to /v1/ids:next.
bad_next() { bad "$1" "$2" "$3" -X POST "${J[@]}" -d "$4" "$url/v1/ids:next"; }

tap_run "quotas" "$out/quota_test"
tap_run "bulk lane" "$out/lane_test"
tap_run "one path for a request for IDs" "$out/next_test"
tap_run "gRPC wire rules" "$out/grpc_wire_test"
tap_run "TLS: contexts, the caller map, handshakes, reloads" env TOP="$top" "$out/tls_test"

# ---- a live simulated generator, worker 37 ----------------------------
httpd_start "$work/sim.log" --device sim:37 --clock-check no || { not_ok "idgen-httpd --device sim:37 starts"; bail; }
ok "idgen-httpd --device sim:37 starts and says where it listens"
check "it says in its log that the generator is simulated" \
	grep -q 'SIMULATED generator (sim:37: region 0, worker 37' "$work/sim.log"
# A second simulation of worker 37 would mint the same IDs.
timeout 20 "$httpd" --device sim:37 --clock-check no --listen 127.0.0.1:0 >"$work/sim2.out" 2>&1
rc=$?
check "a second --device sim:37 while the first runs: exit 1, naming region, worker and lock file" \
	test $rc = 1 -a -n "$(grep -F "another simulated generator of region 0, worker 37 runs on this host (it holds the lock on /dev/shm/idgen-sim-r0-w37)" "$work/sim2.out")"
# Whoever runs it and wherever $RUNTIME_DIRECTORY points, the lock is one.
mkdir -p "$work/elsewhere"
RUNTIME_DIRECTORY=$work/elsewhere timeout 20 "$httpd" --device sim:37 --clock-check no \
	--listen 127.0.0.1:0 >"$work/sim3.out" 2>&1
check "... and with another RUNTIME_DIRECTORY too: exit 1" test $? = 1
sed 's/^/# /' "$work/sim2.out"

minted=0	# IDs the good requests below ask for
req next1 -X POST "$url/v1/ids:next"
minted=$((minted + 1))
check "POST /v1/ids:next without a body: 200, one ID as a string" \
	grep -Eqx '\{"ids":\["[1-9][0-9]*"\],"layout_version":1\}' "$work/next1.body"
req next3 -X POST "${J[@]}" -d '{"count": 3, "caller": "order-service"}' "$url/v1/ids:next"
minted=$((minted + 3))
check "POST count 3 with a caller: 200, application/json, no-store" \
	test "$(status_of next3)" = 200 -a "$(header_of next3 Content-Type)" = application/json \
	     -a "$(header_of next3 Cache-Control)" = no-store
check "... three IDs" \
	test "$(grep -o '"[0-9]*"' "$work/next3.body" | wc -l)" = 3
req next10k -X POST "${J[@]}" -d '{"count":10000}' "$url/v1/ids:next"
minted=$((minted + 10000))
check "POST count 10000 (the maximum): 10000 IDs" \
	test "$(status_of next10k)" = 200 -a "$(grep -o '"[0-9]*"' "$work/next10k.body" | wc -l)" = 10000
req next4096 -X POST "${J[@]}" --data-binary @<(printf '{"count":2}'; head -c 4085 /dev/zero | tr '\0' ' ') "$url/v1/ids:next"
minted=$((minted + 2))
check "a body of exactly 4096 bytes is taken" test "$(status_of next4096)" = 200
req charset -X POST -H 'Content-Type: Application/JSON; charset=utf-8' -d '{}' "$url/v1/ids:next"
minted=$((minted + 1))
check "Content-Type application/json with a charset, in any case, is JSON" test "$(status_of charset)" = 200

req example "$url/v1/ids/108421920055775237"
check "GET /v1/ids/108421920055775237: the contract's example" \
	test "$(cat "$work/example.body")" = '{"id":"108421920055775237","created_at":"2026-10-27T04:30:00.123Z","region":1,"worker":37,"sequence":5,"layout_version":1,"ms":25849800123,"unix_ms":1793075400123}'
req min "$url/v1/ids:min?at=2026-03-15T00:00:00Z"
check "GET /v1/ids:min?at=2026-03-15T00:00:00Z: {\"id\":\"26454314188800000\"}" \
	test "$(cat "$work/min.body")" = '{"id":"26454314188800000"}'
req live "$url/livez"
check "GET /livez: 200 {\"status\":\"ok\"}" test "$(status_of live):$(cat "$work/live.body")" = '200:{"status":"ok"}'
req ready "$url/readyz"
check "GET /readyz with the clock check off: 200, ready, and the generator simulated" \
	test "$(status_of ready):$(cat "$work/ready.body")" = '200:{"ready":true,"reasons":[],"generator":"simulated"}'
req head -I "$url/livez"
# (curl -I writes the headers where the body would go.)
check "HEAD /livez: 200, no body" \
	test "$(status_of head)" = 200 -a -z "$(grep -v '^[A-Za-z-]*: \|^HTTP/\|^.$' "$work/head.body")"

# Bad bodies: each its status and JSON error, the same whichever json-c
# parses them (run once more below under Debian 13's).
body_cases() {
	bad_next "count 0" 400 invalid_count '{"count":0}'
	bad_next "count -1" 400 invalid_count '{"count":-1}'
	bad_next "count 10001" 400 invalid_count '{"count":10001}'
	bad_next "count 2^64" 400 invalid_count '{"count":18446744073709551616}'
	bad_next "count 2^64 - 1" 400 invalid_count '{"count":18446744073709551615}'
	bad "count of 30 digits after a caller named count" 400 invalid_count -X POST "${J[@]}" \
		-d '{"caller":"count", "count" : 123456789012345678901234567890}' "$url/v1/ids:next"
	bad_next 'count "3" (a string)' 400 invalid_count '{"count":"3"}'
	bad_next "count 1e3 (an exponent)" 400 invalid_count '{"count":1e3}'
	bad_next "count 3.0 (a fraction)" 400 invalid_count '{"count":3.0}'
	bad_next "count null" 400 invalid_count '{"count":null}'
	bad_next "caller a number" 400 invalid_caller '{"caller":5}'
	bad_next "caller with a blank" 400 invalid_caller '{"caller":"a b"}'
	bad_next "caller of 65 bytes" 400 invalid_caller "{\"caller\":\"$(printf 'a%.0s' {1..65})\"}"
	bad_next "an unknown field" 400 invalid_request '{"cuont":3}'
	# json-c ends a key at an escaped NUL: these would read count and caller.
	bad_next 'a key "count\u0000"' 400 invalid_request '{"count\u0000":5}'
	bad 'a key "caller\u0000"' 400 invalid_request -X POST "${J[@]}" \
		-d '{"caller\u0000":"order-service","count":200}' "$url/v1/ids:next"
	bad_next 'a key "co\u0075nt", escaped' 400 invalid_request '{"co\u0075nt":2}'
	bad_next 'a key "public\/"' 400 invalid_request '{"public\/":true}'
	bad_next "an array, not an object" 400 invalid_request '[3]'
	bad_next "a bare number" 400 invalid_request '3'
	bad_next "invalid JSON" 400 invalid_json '{"count":'
	bad_next "JSON then garbage" 400 invalid_json '{"count":1}x'
	bad_next "single-quoted keys" 400 invalid_json "{'count':2}"
	bad_next "a single-quoted value" 400 invalid_json "{\"caller\":'a'}"
	bad_next "a key given twice" 400 invalid_json '{"count":2,"count":3}'
	bad_next "a key given twice, apart" 400 invalid_json '{"caller":"a", "count":1 ,"caller":"b"}'
	bad_next "count NaN" 400 invalid_json '{"count":NaN}'
	bad_next "count Infinity" 400 invalid_json '{"count":Infinity}'
	bad_next "two JSON values" 400 invalid_json '{} {}'
	bad "a NUL in the body" 400 invalid_json -X POST "${J[@]}" --data-binary @<(printf '{}\0') "$url/v1/ids:next"
	bad "count with a leading zero" 400 invalid_json -X POST "${J[@]}" \
		-d '{"count":000000000000000000000001}' "$url/v1/ids:next"
}

# Bad input: each its status and JSON error.
body_cases
req quoted -X POST "${J[@]}" -d '{"caller":"a", "count" : 2}' "$url/v1/ids:next"
minted=$((minted + 2))
check "both keys once, blanks around: 200" test "$(status_of quoted)" = 200
bad "a body over 4 KiB (Content-Length)" 413 body_too_large -X POST "${J[@]}" \
	--data-binary @<(printf '{"count":1}'; head -c 5000 /dev/zero | tr '\0' ' ') "$url/v1/ids:next"
bad "a chunked body over 4 KiB" 413 body_too_large -X POST "${J[@]}" -H 'Transfer-Encoding: chunked' \
	--data-binary @<(printf '{"count":1}'; head -c 5000 /dev/zero | tr '\0' ' ') "$url/v1/ids:next"
bad "a body of text/plain" 415 unsupported_media_type -X POST -H 'Content-Type: text/plain' -d '{"count":1}' "$url/v1/ids:next"
bad "a JSON body without a content type" 415 unsupported_media_type -X POST -H 'Content-Type:' -d '{"count":1}' "$url/v1/ids:next"
bad "application/jsonx" 415 unsupported_media_type -X POST -H 'Content-Type: application/jsonx' -d '{}' "$url/v1/ids:next"
bad "an unknown route" 404 not_found "$url/v1/nothing"
bad "the root" 404 not_found "$url/"
bad "GET /v1/ids:next" 405 method_not_allowed "$url/v1/ids:next"
check "... with Allow: POST" test "$(header_of "bad$nbad" Allow)" = POST
bad "DELETE /v1/ids/1" 405 method_not_allowed -X DELETE "$url/v1/ids/1"
check "... with Allow: GET, HEAD" test "$(header_of "bad$nbad" Allow)" = "GET, HEAD"
bad "POST /readyz" 405 method_not_allowed -X POST "$url/readyz"
bad "POST /v1/ids:min" 405 method_not_allowed -X POST "$url/v1/ids:min?at=2026-01-01T00:00:00Z"
for id in 0108421920055775237 +108421920055775237 %2B1 -1 1a 1.0 %201 "1%20" 1/2; do
	bad "GET /v1/ids/$id" 400 invalid_id "$url/v1/ids/$id"
done
bad "GET /v1/ids/ (empty)" 400 invalid_id "$url/v1/ids/"
# A percent-encoded NUL or control byte is not decoded: it cannot end the
# path early.
bad "GET /v1/ids/120886756022177792%00abc" 400 invalid_id "$url/v1/ids/120886756022177792%00abc"
bad "GET /v1/ids/120886756022177792%0a" 400 invalid_id "$url/v1/ids/120886756022177792%0a"
bad "POST /v1/ids:next%00junk" 404 not_found -X POST "$url/v1/ids:next%00junk"
bad "GET /livez%00" 404 not_found "$url/livez%00"
bad "ids:min?at=2026-01-01T00:00:00Z%00x" 400 invalid_time "$url/v1/ids:min?at=2026-01-01T00:00:00Z%00x"
req escaped "$url/v1/%69ds/108421920055775237"
check "other %XX are decoded: /v1/%69ds/... is /v1/ids/..." test "$(status_of escaped)" = 200
bad "GET /v1/ids/9223372036854775808 (2^63)" 400 invalid_id "$url/v1/ids/9223372036854775808"
bad "GET /v1/ids/18446744073709551616" 400 invalid_id "$url/v1/ids/18446744073709551616"
# No public_keys: public IDs are off, and the answers say so.
bad "GET /v1/public/123 with no keys configured" 404 not_found "$url/v1/public/123"
check "... saying no public-ID keys are configured" grep -q "no public-ID keys configured" "$work/bad$nbad.body"
bad_next '"public": true with no keys configured' 400 no_public_keys '{"count":2,"public":true}'
check "... saying no public-ID keys are configured" grep -q "no public-ID keys are configured" "$work/bad$nbad.body"
bad_next '"public": "yes" (a string)' 400 invalid_public '{"public":"yes"}'
bad_next '"public": 1' 400 invalid_public '{"public":1}'
bad_next '"public": null' 400 invalid_public '{"public":null}'
req pubfalse -X POST "${J[@]}" -d '{"count":2,"public":false}' "$url/v1/ids:next"
minted=$((minted + 2))
check '"public": false: the answer without public IDs' \
	grep -Eqx '\{"ids":\["[1-9][0-9]*","[1-9][0-9]*"\],"layout_version":1\}' "$work/pubfalse.body"
bad "ids:min without at" 400 invalid_time "$url/v1/ids:min"
bad "ids:min?at= (empty)" 400 invalid_time "$url/v1/ids:min?at="
for at in 2026-02-30T00:00:00Z 2026-01-01 1767225600001 2026-01-01T00:00:60Z \
	  "2026-01-01T02:00:00+02:00" 2095-09-07T15:47:35.552Z now; do
	bad "ids:min?at=$at" 400 invalid_time "$url/v1/ids:min?at=$at"
done
req chunked_big -X POST "${J[@]}" -H 'Transfer-Encoding: chunked' \
	--data-binary @<(head -c 200000 /dev/zero | tr '\0' ' ') "$url/v1/ids:next"
check "a chunked body past 64 KiB: the connection is closed, no answer" \
	test "$(status_of chunked_big)" = 000
check "... logged as the client's error" \
	grep -q "info: 127.0.0.1:0: a client sent a chunked body past 64 KiB: connection closed (the client's error)" "$work/sim.log"
req after -X POST "$url/v1/ids:next"
minted=$((minted + 1))
check "... and the service goes on" test "$(status_of after)" = 200

# Many clients at once, on the thread pool: no ID twice, each batch
# strictly increasing.
seq 1 40 | xargs -P 4 -I{} curl -s --max-time 20 -X POST "${J[@]}" -d '{"count":250}' \
	-o "$work/par{}.body" "$url/v1/ids:next"
minted=$((minted + 40 * 250))
for f in "$work"/par*.body; do
	grep -o '"[0-9]*"' "$f" | tr -d '"' >"$f.ids"
	sort -n -c "$f.ids" 2>/dev/null && [ -z "$(uniq -d "$f.ids")" ] || echo "$f" >>"$work/par.unsorted"
done
cat "$work"/par*.ids >"$work/par.all"
check "4 clients, 40 batches of 250 at once: 10000 IDs, none twice, each batch increasing" \
	test "$(wc -l <"$work/par.all")" = 10000 -a "$(sort -u "$work/par.all" | wc -l)" = 10000 \
	     -a ! -e "$work/par.unsorted"
# More than the simulation's lead (10 ms of 4096) at once: it waits for
# the clock, as the module's read does, rather than refusing.
seq 1 8 | xargs -P 8 -I{} curl -s --max-time 20 -X POST "${J[@]}" -d '{"count":10000}' \
	-o "$work/big{}.body" -w '%{http_code}\n' "$url/v1/ids:next" >"$work/big.status"
minted=$((minted + 8 * 10000))
cat "$work"/big*.body | grep -o '"[0-9]*"' >"$work/big.all"
check "8 requests of 10000 at once: all 200, 80000 IDs, none twice" \
	test "$(sort -u "$work/big.status")" = 200 -a "$(wc -l <"$work/big.all")" = 80000 \
	     -a "$(sort -u "$work/big.all" | wc -l)" = 80000
# Large requests go to the bulk lane (helper/httpd/lane.h), small ones
# stay on the connections' threads: both at once, no ID twice.
seq 1 6 | xargs -P 6 -I{} curl -s --max-time 20 -X POST "${J[@]}" \
	-d '{"count":10000}' -o "$work/mixbig{}.body" "$url/v1/ids:next" &
mixbig=$!
seq 1 60 | xargs -P 3 -I{} sh -c 'curl -s --max-time 20 -X POST \
	-H "Content-Type: application/json" -d "{\"count\":$(({} * 5))}" \
	-o "$0/mixsmall{}.body" "$1/v1/ids:next"' "$work" "$url"
wait "$mixbig"
minted=$((minted + 6 * 10000 + 5 * 60 * 61 / 2))
: >"$work/mix.bad"
for f in "$work"/mixbig*.body "$work"/mixsmall*.body; do
	grep -o '"[0-9]*"' "$f" | tr -d '"' >"$f.ids"
	sort -n -c "$f.ids" 2>/dev/null && [ -z "$(uniq -d "$f.ids")" ] || echo "$f" >>"$work/mix.bad"
done
cat "$work"/mixbig*.ids "$work"/mixsmall*.ids >"$work/mix.all"
check "6 requests of 10000 (the lane) beside 60 of 5 to 300 at once: every count exact, none twice, each increasing" \
	test "$(wc -l <"$work/mix.all")" = $((6 * 10000 + 5 * 60 * 61 / 2)) \
	     -a "$(sort -u "$work/mix.all" | wc -l)" = $((6 * 10000 + 5 * 60 * 61 / 2)) \
	     -a ! -s "$work/mix.bad"
if command -v node >/dev/null; then
	tap_run json node "$here/json_check.mjs" "$url" 37 "$errors"
else
	not_ok "json: node not found (install nodejs: scripts/deps.sh)"
fi
minted=$((minted + 1000 + 1))
httpd_stop
check "SIGTERM: exit 0" test $? = 0
check "no refused request consumed an ID: the simulation minted exactly the $minted asked for" \
	grep -q "simulated generator: $minted IDs minted" "$work/sim.log"
grep 'IDs minted' "$work/sim.log" | sed 's/^/# /'

# ---- the bad bodies again, parsed by Debian 13's json-c 0.18 -----------
# Its strict mode differs from 0.16's (numbers past 2^64, raw UTF-8); the
# soname is the same, so the service runs on it through LD_LIBRARY_PATH.
if jc=$("$top/tests/idgend/json-c-0.18.sh" 2>"$work/json-c.log"); then
	if LD_LIBRARY_PATH=${jc%/pkgconfig} httpd_start "$work/jc18.log" --device sim:5 --clock-check no; then
		check "idgen-httpd runs on json-c 0.18 (${jc%/lib/pkgconfig})" \
			grep -q "${jc%/pkgconfig}/libjson-c" "/proc/$pid/maps"
		bad_prefix="json-c 0.18: "
		body_cases
		bad_prefix=
		httpd_stop
		check "json-c 0.18: no refused request consumed an ID" \
			grep -q "simulated generator: 0 IDs minted" "$work/jc18.log"
	else
		not_ok "idgen-httpd starts on json-c 0.18"
	fi
else
	not_ok "build Debian 13's json-c 0.18 (tests/idgend/json-c-0.18.sh)"
	sed 's/^/# /' "$work/json-c.log"
fi

# ---- public IDs (Documentation/design.md section 10): a key file, version 7
keys=$work/keys
mkdir -p "$keys"
key7=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
echo "7 $key7" >"$keys/k7"
chmod 600 "$keys/k7"
idgenctl=$top/helper/idgenctl/idgenctl
tap_step "build helper/idgenctl (public decode)" make -s -C "$top/helper/idgenctl" || bail
if httpd_start "$work/pub.log" --device sim:37 --clock-check no --public-keys "$keys/k7"; then
	ok "idgen-httpd --public-keys KEYFILE starts"
	pminted=0
	req pubnext -X POST "${J[@]}" -d '{"count":5,"public":true}' "$url/v1/ids:next"
	pminted=$((pminted + 5))
	check 'POST {"count":5,"public":true}: 200, "ids" then "public", 5 strings each' \
		grep -Eqx '\{"ids":\[("[1-9][0-9]*",){4}"[1-9][0-9]*"\],"public":\[("(0|[1-9][0-9]*)",){4}"(0|[1-9][0-9]*)"\],"layout_version":1\}' \
		"$work/pubnext.body"
	sed 's/.*"ids":\[\([^]]*\)\].*/\1/' "$work/pubnext.body" | tr -d '"' | tr , '\n' >"$work/pub.ids"
	echo >>"$work/pub.ids"	# the body ends without a newline
	sed 's/.*"public":\[\([^]]*\)\].*/\1/' "$work/pubnext.body" | tr -d '"' | tr , '\n' >"$work/pub.pubs"
	echo >>"$work/pub.pubs"	# the body ends without a newline
	: >"$work/pub.mismatch"
	: >"$work/pub.ctl"
	i=0
	while read -r id <&3 && read -r p <&4; do
		i=$((i + 1))
		req "pubget$i" "$url/v1/public/$p"
		req "idget$i" "$url/v1/ids/$id"
		if [ "$(status_of "pubget$i")" != 200 ] || ! cmp -s "$work/pubget$i.body" "$work/idget$i.body"; then
			echo "# $p: $(cat "$work/pubget$i.body") vs $(cat "$work/idget$i.body")" >>"$work/pub.mismatch"
		fi
		[ "$("$idgenctl" public decode --key "$keys/k7" "$p")" = "$id" ] || echo "# $p: idgenctl disagrees" >>"$work/pub.ctl"
	done 3<"$work/pub.ids" 4<"$work/pub.pubs"
	check "each GET /v1/public/{pub} answers the same JSON as GET /v1/ids/{id} ($i pairs)" \
		test "$i" = 5 -a ! -s "$work/pub.mismatch"
	cat "$work/pub.mismatch"
	check "idgenctl public decode --key KEYFILE gives the same IDs" test "$i" = 5 -a ! -s "$work/pub.ctl"
	cat "$work/pub.ctl"
	req pubplain -X POST "${J[@]}" -d '{"count":2}' "$url/v1/ids:next"
	pminted=$((pminted + 2))
	check "without \"public\": the answer as before, no public IDs" \
		grep -Eqx '\{"ids":\["[1-9][0-9]*","[1-9][0-9]*"\],"layout_version":1\}' "$work/pubplain.body"
	p1=$(head -n 1 "$work/pub.pubs")
	req pubhead -I "$url/v1/public/$p1"
	check "HEAD /v1/public/{pub}: 200" test "$(status_of pubhead)" = 200
	bad "DELETE /v1/public/{pub}" 405 method_not_allowed -X DELETE "$url/v1/public/$p1"
	check "... with Allow: GET, HEAD" test "$(header_of "bad$nbad" Allow)" = "GET, HEAD"
	bad "POST /v1/public/{pub}" 405 method_not_allowed -X POST "$url/v1/public/$p1"
	for p in abc 0123 -1 %2B1 1.0 "" v7. v.1 v7.01 x7.1; do
		bad "GET /v1/public/$p (malformed)" 400 invalid_public_id "$url/v1/public/$p"
	done
	bad "GET /v1/public/9223372036854775808 (2^63)" 400 invalid_public_id "$url/v1/public/9223372036854775808"
	bad "GET /v1/public/v9.123 (a key version not loaded)" 404 unknown_key_version "$url/v1/public/v9.123"
	req pubv7 "$url/v1/public/v7.$p1"
	check "GET /v1/public/v7.{pub}: the loaded version named, the same ID" \
		cmp -s "$work/pubv7.body" "$work/pubget1.body"
	bad_next '"public": "yes" with keys' 400 invalid_public '{"count":1,"public":"yes"}'
	bad_next '"public": true with a bad count' 400 invalid_count '{"count":0,"public":true}'
	req pubmetrics "$url/metrics"
	check "/metrics counts GET /v1/public/{pub} under its own route" eval \
		'grep -qxF "idgen_requests_total{route=\"/v1/public/{pub}\",code=\"200\"} 7" "$work/pubmetrics.body" &&
		 grep -qxF "idgen_requests_total{route=\"/v1/public/{pub}\",code=\"400\"} 11" "$work/pubmetrics.body" &&
		 grep -qxF "idgen_requests_total{route=\"/v1/public/{pub}\",code=\"404\"} 1" "$work/pubmetrics.body" &&
		 grep -qxF "idgen_requests_total{route=\"/v1/public/{pub}\",code=\"405\"} 2" "$work/pubmetrics.body"'
	if command -v node >/dev/null; then
		tap_run json-public node "$here/json_check.mjs" --public "$url" 37
	else
		not_ok "json-public: node not found (install nodejs: scripts/deps.sh)"
	fi
	pminted=$((pminted + 100))
	httpd_stop
	check "SIGTERM: exit 0" test $? = 0
	check "no refused request consumed an ID: the simulation minted exactly the $pminted asked for" \
		grep -q "simulated generator: $pminted IDs minted" "$work/pub.log"
else
	not_ok "idgen-httpd --public-keys KEYFILE starts"
fi
cp "$keys/k7" "$keys/k7-0644"
chmod 644 "$keys/k7-0644"
timeout 20 "$httpd" --device sim --listen 127.0.0.1:0 --public-keys "$keys/k7-0644" >"$work/pub644.out" 2>&1
rc=$?
check "a key file of mode 0644: refused, exit 1, the key file and its mode named" eval \
	'[ $rc = 1 ] && grep -q "public_keys: $keys/k7-0644: readable by group or others (mode 0644)" "$work/pub644.out"'
sed 's/^/# /' "$work/pub644.out"
# Under the unit: a bare name is a credential systemd laid out, a 0440
# file of the service's user and group in a 0500 $CREDENTIALS_DIRECTORY.
mkdir -p "$work/creds"
cp "$keys/k7" "$work/creds/public-7.key"
chmod 440 "$work/creds/public-7.key"
chmod 500 "$work/creds"
CREDENTIALS_DIRECTORY=$work/creds timeout 20 "$httpd" --device sim --public-keys public-7.key \
	--check-config >"$work/cred.out" 2>&1
rc=$?
check "public_keys = NAME from \$CREDENTIALS_DIRECTORY, systemd's 0440 in 0500: loads" test $rc = 0
sed 's/^/# /' "$work/cred.out"
chmod 700 "$work/creds"

# ---- a real browser: fetch, BigInt, and a decode (browser/run.sh) ------
if httpd_start "$work/browser.log" --device sim:37 --clock-check no; then
	tap_run browser "$here/browser/run.sh" "$url" 37
	httpd_stop
else
	not_ok "idgen-httpd for the browser starts"
fi

# ---- the generator refuses: a simulated lease that ended at once -------
httpd_start "$work/fence.log" --device sim:3 --sim-lease-ms 1 --clock-check no ||
	{ not_ok "idgen-httpd --sim-lease-ms 1 starts"; bail; }
bad "POST /v1/ids:next past the fence" 503 fence_reached -X POST "$url/v1/ids:next"
req fence_again -X POST "$url/v1/ids:next"
check "... with Retry-After: 1" test "$(header_of "bad$nbad" Retry-After)" = 1
# Bad input is refused for what it is, before the generator is asked.
bad_next "count 0 past the fence" 400 invalid_count '{"count":0}'
check "... without Retry-After" test -z "$(header_of "bad$nbad" Retry-After)"
req nolease "$url/readyz"
check "GET /readyz past the fence: 503, reason no_lease" \
	test "$(status_of nolease)" = 503 -a "$(cat "$work/nolease.body")" = \
	'{"ready":false,"reasons":[{"code":"no_lease","message":"the generator holds no lease: it refuses to mint"}],"generator":"simulated"}'
req decode_anyway "$url/v1/ids/108421920055775237"
check "decoding needs no lease: GET /v1/ids/{id} still 200" test "$(status_of decode_anyway)" = 200
httpd_stop
check "the refused requests minted nothing" grep -q "simulated generator: 0 IDs minted" "$work/fence.log"
check "the refusal is logged once, not per request" \
	test "$(grep -c 'refuses to mint: the lease.s fence is reached' "$work/fence.log")" = 1

# ---- /readyz: lease margin and the clock (adjtimex stood in for) -------
httpd_start "$work/margin.log" --device sim --sim-lease-ms 60000 --ready-margin-ms 120000 \
	--clock-check no || { not_ok "idgen-httpd --ready-margin-ms 120000 starts"; bail; }
req margin "$url/readyz"
check "GET /readyz with less lease left than the margin: 503, lease_expiring" \
	test "$(status_of margin)" = 503 -a -n "$(grep '"reasons":\[{"code":"lease_expiring"' "$work/margin.body")"
req margin_mint -X POST "$url/v1/ids:next"
check "... while minting still works (the lease is in force)" test "$(status_of margin_mint)" = 200
httpd_stop

nclock=0
readyz_clock() {
	local desc=$1 fake=$2 want=$3 codes=$4 got
	nclock=$((nclock + 1))
	if ! IDGEN_FAKE_ADJTIMEX=$fake LD_PRELOAD=$out/fake_adjtimex.so \
		httpd_start "$work/clock$nclock.log" --device sim "${@:5}"; then
		not_ok "$desc: idgen-httpd starts"
		return
	fi
	req clock$nclock "$url/readyz"
	got=$(grep -o '"code":"[a-z_]*"' "$work/clock$nclock.body" | cut -d'"' -f4 | paste -sd,)
	if [ "$(status_of clock$nclock)" = "$want" ] && [ "$got" = "$codes" ]; then
		ok "$desc: $want${codes:+ ($codes)}"
	else
		not_ok "$desc: want $want ($codes), got $(status_of clock$nclock) ($got)"
		sed 's/^/# /' "$work/clock$nclock.body"; echo
	fi
	httpd_stop
}
readyz_clock "GET /readyz, clock synchronised, offset 100 us" synced:100 200 ""
readyz_clock "GET /readyz, clock synchronised, offset -4999 us" synced:-4999 200 ""
readyz_clock "GET /readyz, clock unsynchronised" unsynced 503 clock_unsynchronised
readyz_clock "GET /readyz, offset 5000 us (not under 5 ms)" synced:5000 503 clock_offset
readyz_clock "GET /readyz, offset -7000 us" synced:-7000 503 clock_offset
readyz_clock "GET /readyz, offset 7000 us with --clock-max-offset-us 10000" synced:7000 200 "" \
	--clock-max-offset-us 10000
# Nanosecond mode (STA_NANO), and an older kernel's microsecond mode,
# where a negative offset comes out as ~+4294967 us (2^32 ns wrapped).
readyz_clock "GET /readyz, nanosecond mode, offset 100000 ns" synced-nano:100000 200 ""
readyz_clock "GET /readyz, nanosecond mode, offset -7000000 ns" synced-nano:-7000000 503 clock_offset
readyz_clock "GET /readyz, microsecond mode, -100 us as the kernel wraps it (4294867)" synced:4294867 200 ""
readyz_clock "GET /readyz, microsecond mode, -7000 us as the kernel wraps it (4287967)" synced:4287967 503 clock_offset
check "... and said as -7000 us" grep -q 'the clock is -7000 us off' "$work/clock$nclock.body"
readyz_clock "GET /readyz, unsynchronised and lease expiring: both reasons" unsynced 503 \
	lease_expiring,clock_unsynchronised --sim-lease-ms 1000 --ready-margin-ms 5000

# ---- limits: connections per address, a stalled request ---------------
httpd_start "$work/limits.log" --device sim --clock-check no --max-connections-per-ip 2 \
	--timeout-s 1 || { not_ok "idgen-httpd with limits starts"; bail; }
exec 5<>"/dev/tcp/127.0.0.1/$port" 6<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /livez HTTP/1.1\r\nHost: t\r\n\r\n' >&5
printf 'GET /livez HTTP/1.1\r\nHost: t\r\n\r\n' >&6
read -r -t 10 line5 <&5; read -r -t 10 line6 <&6
check "two keep-alive connections from one address are served" \
	test "${line5%$'\r'}" = "HTTP/1.1 200 OK" -a "${line6%$'\r'}" = "HTTP/1.1 200 OK"
req third "$url/livez"
check "a third connection from that address, past --max-connections-per-ip 2, is answered 503" \
	test "$(status_of third)" = 503 -a "$(header_of third Retry-After)" = 1
exec 5>&- 6>&-
# Freed slots serve again (MHD frees them when it notices the close).
for ((t = 0; t < 50; t++)); do
	req fourth "$url/livez"
	[ "$(status_of fourth)" = 200 ] && break
	sleep 0.1
done
check "... and once they close, the address is served again" test "$(status_of fourth)" = 200
# A request that stalls half-way through its headers holds its connection
# only until --timeout-s: the server closes it without an answer.
exec 5<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /v1/ids:next HTTP/1.1\r\nHost: t\r\nContent-Le' >&5
answer=$(timeout 20 cat <&5; echo "rc=$?")
exec 5>&-
check "a request stalled in its headers is cut off (--timeout-s 1), unanswered" \
	test "$answer" = "rc=0"
# A length past 4096 with leading zeros is refused unread too.
exec 5<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /v1/ids:next HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 04097\r\nConnection: close\r\n\r\n' >&5
read -r -t 5 line5 <&5
exec 5>&-
check "Content-Length: 04097: 413 at once, the body unread" \
	test "$(echo "$line5" | cut -d' ' -f1-2)" = "HTTP/1.1 413"
# And one stalled in its body, likewise.
exec 5<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /v1/ids:next HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"cou' >&5
answer=$(timeout 20 cat <&5; echo "rc=$?")
exec 5>&-
check "a request stalled in its body is cut off, unanswered" test "$answer" = "rc=0"
httpd_stop
check "the stalled requests minted nothing" grep -q "simulated generator: 0 IDs minted" "$work/limits.log"

# ---- slow clients: a request has a deadline, whatever it trickles ------
# libmicrohttpd's idle timeout restarts with every byte; the request's
# deadline (2 x --timeout-s from the connection's opening) does not.
trickle="python3 $here/trickle.py"
httpd_start "$work/slow.log" --device sim --clock-check no --timeout-s 1 --threads 1 \
	--max-connections 6 --max-connections-per-ip 3 ||
	{ not_ok "idgen-httpd with limits starts"; bail; }
lasted=$($trickle "$port" 127.0.0.1 1 headers 20 | tail -n 1)
check "headers sent a byte every 0.5 s are cut off by the deadline (lasted ${lasted}s of 20)" \
	awk -v t="$lasted" 'BEGIN { exit !(t < 10) }'
lasted=$($trickle "$port" 127.0.0.1 1 body 20 | tail -n 1)
check "a body sent a byte every 0.5 s is cut off by the deadline (lasted ${lasted}s of 20)" \
	awk -v t="$lasted" 'BEGIN { exit !(t < 10) }'
# Every connection slot held by trickling clients from two addresses
# (loopback has all of 127/8): a normal request is refused at first,
# then served once the deadline frees the slots.
$trickle "$port" 127.0.0.2 3 headers 20 >"$work/slow2.out" &
t2=$!
$trickle "$port" 127.0.0.3 3 body 20 >"$work/slow3.out" &
t3=$!
for ((t = 0; t < 100; t++)); do
	grep -q connected "$work/slow2.out" && grep -q connected "$work/slow3.out" && break
	sleep 0.1
done
sleep 0.5	# (connected is queued; accepted, the service's own business)
req slowfull "$url/livez"
check "with every slot held, a normal request is answered 503" test "$(status_of slowfull)" = 503
for ((t = 0; t < 150; t++)); do
	req slowfree "$url/livez"
	[ "$(status_of slowfree)" = 200 ] && break
	sleep 0.1
done
check "... and served once the trickling clients' deadline passes" test "$(status_of slowfree)" = 200
wait $t2 $t3
check "... the trickling clients were all cut off (lasted $(tail -n 1 "$work/slow2.out")s, $(tail -n 1 "$work/slow3.out")s of 20)" \
	awk -v a="$(tail -n 1 "$work/slow2.out")" -v b="$(tail -n 1 "$work/slow3.out")" 'BEGIN { exit !(a < 10 && b < 10) }'
req slowm "$url/metrics"
check "/metrics counts the refused and the cut connections, and the open ones" eval \
	'grep -Eq "^idgen_connections_refused_total\{reason=\"max_connections\"\} [1-9][0-9]*$" "$work/slowm.body" &&
	 grep -Eq "^idgen_connections_cut_total ([89]|[1-9][0-9]+)$" "$work/slowm.body" &&
	 grep -Eq "^idgen_connections_open 1$" "$work/slowm.body"'
check "the connection limit reached is logged, once" \
	test "$(grep -c 'refused (503): max_connections (6) reached' "$work/slow.log")" = 1
httpd_stop
check "the slow requests minted nothing" grep -q "simulated generator: 0 IDs minted" "$work/slow.log"

# ---- connection limits answered, framing (conn_test.py) ------------------
tap_run conns python3 "$here/conn_test.py" "$httpd" "$work"
# IPv6 clients of one /64 as one: addresses of a /64 on a loopback of
# its own, in a network namespace.
if unshare -n true 2>/dev/null; then
	tap_run conns-ipv6 unshare -n python3 "$here/conn_test.py" "$httpd" "$work" ipv6
else
	n=$((n + 1)); echo "ok $n IPv6 per-address limits # SKIP no network namespace (unshare -n)"
fi

# ---- TLS: HTTPS, reloads, its configuration (tls_live.sh) ---------------
tap_run tls bash "$here/tls_live.sh" "$httpd" "$work"
# ... and hostile input on the TLS port: plaintext, garbage, handshakes
# held or trickled, renegotiation, a flood (tls_hostile.py).
tap_run tls-hostile /usr/bin/python3 "$here/tls_hostile.py" "$httpd" "$work" "$work/tls/certs"
tap_run tls-hostile-grpc /usr/bin/python3 "$here/tls_hostile.py" "$httpd" "$work" "$work/tls/certs" grpc
# ... gRPC over TLS with client certificates, through grpcio's
# ssl_channel_credentials (grpc_tls_test.py); grpc-js below.
tap_run grpc-tls /usr/bin/python3 "$here/grpc_tls_test.py" "$httpd" "$work" "$work/tls/certs"

# ---- the gRPC face, through grpcio and raw HTTP/2 (grpc_test.py) --------
# Debian's grpcio is for Debian's python3, whatever else is first in PATH.
tap_run grpc /usr/bin/python3 "$here/grpc_test.py" "$httpd" "$work"
# ... its listener against its lane, and peers that hold what they are
# owed, under ASan and UBSan.
if tap_step "build idgen-httpd under ASan and UBSan" make -s -C "$here" OUT="$out" asan; then
	tap_run grpc-race /usr/bin/python3 "$here/grpc_race.py" "$out/idgen-httpd-asan" "$work"
fi
# ... and through Node's @grpc/grpc-js, its versions pinned in
# grpc-node/package-lock.json, installed by scripts/deps.sh (npm ci:
# exactly those; this suite has no network) and checked here.
if tap_step "@grpc/grpc-js and @grpc/proto-loader as grpc-node/package-lock.json pins them (scripts/deps.sh installs them)" \
	npm ls --prefix "$here/grpc-node" --offline --all; then
	# The gRPC listener's line comes after the HTTP one httpd_start waits for.
	grpc_port() {
		local t p
		for ((t = 0; t < 100; t++)); do
			p=$(sed -n 's/.*serving gRPC .*(port \([0-9]*\)).*/\1/p' "$1" | head -n 1)
			[ -n "$p" ] && { echo "$p"; return; }
			sleep 0.1
		done
	}
	if httpd_start "$work/grpc-node.log" --device sim:44 --clock-check no --grpc-listen 127.0.0.1:0; then
		tap_run grpc-node node "$here/grpc-node/run.mjs" "$(grpc_port "$work/grpc-node.log")" 44
		httpd_stop
	else
		not_ok "idgen-httpd --grpc-listen starts for the Node client"
	fi
	# ... and over TLS, a client certificate the caller (grpc-node/tls.mjs).
	c=$work/tls/certs
	if httpd_start "$work/grpc-node-tls.log" --device sim:45 --clock-check no --grpc-listen 127.0.0.1:0 \
		--tls-cert "$c/server.pem" --tls-key "$c/server.key" --tls-client-ca "$c/ca.pem" \
		--caller-map "$c/callers.map" --callers 'order-service billing'; then
		tap_run grpc-node-tls node "$here/grpc-node/tls.mjs" "$(grpc_port "$work/grpc-node-tls.log")" "$c"
		httpd_stop
	else
		not_ok "idgen-httpd --grpc-listen with TLS starts for the Node client"
	fi
fi

# ---- libmicrohttpd's messages do not flood the log ----------------------
# (Past 2 per address, refused too: one more kind of line.)
httpd_start "$work/flood.log" --device sim --clock-check no --max-connections-per-ip 2 ||
	{ not_ok "idgen-httpd starts"; bail; }
before=$(wc -l <"$work/flood.log")
$trickle "$port" 127.0.0.1 2000 half 60
req flood --interface 127.0.0.9 "$url/livez"
httpd_stop
check "2000 half-sent requests: the service goes on, and logs at most 5 lines for them ($(($(wc -l <"$work/flood.log") - before - 2)))" \
	test "$(status_of flood)" = 200 -a "$(($(wc -l <"$work/flood.log") - before - 2))" -le 5

# ---- SIGTERM lets a request in flight finish -----------------------------
# term_draining LOG: SIGTERM to the service, and back once LOG says it
# stops after the requests in flight (or 5 s on).
term_draining() {
	local t

	kill -TERM "$pid"
	for ((t = 0; t < 50; t++)); do
		grep -q 'stopping once the requests in flight are answered' "$1" && return
		sleep 0.1
	done
}
httpd_start "$work/drain.log" --device sim --clock-check no || { not_ok "idgen-httpd starts"; bail; }
exec 5<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /v1/ids:next HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{"count"' >&5
# Signalled only once the service has read what was sent (its end's
# receive queue empty): a connection it has read nothing from is idle at
# the stop, and closed, however long the client has been connected.
for ((t = 0; t < 200; t++)); do
	[ "$(ss -Htn state established "( sport = :$port )" | awk '{ print $1 }')" = 0 ] && break
	sleep 0.05
done
# The stop waits for the request; the rest of its body comes after it.
term_draining "$work/drain.log"
printf ':2}' >&5
answer=$(timeout 20 cat <&5)
exec 5>&-
check "a request in flight at SIGTERM is answered: 200 with its 2 IDs" \
	eval '[ "$(printf "%s" "$answer" | head -n 1 | tr -d "\r")" = "HTTP/1.1 200 OK" ] &&
	      printf "%s" "$answer" | grep -Eq "^\{\"ids\":\[\"[0-9]+\",\"[0-9]+\"\],"'
wait "$pid"
check "... then the service exits 0" test $? = 0
pid=
check "... having minted those 2" grep -q "simulated generator: 2 IDs minted" "$work/drain.log"

# ---- SIGTERM: requests in flight on every listener finish --------------
httpd_start "$work/drain2.log" --device sim --clock-check no --listen 127.0.0.2:0 ||
	{ not_ok "idgen-httpd on two listeners starts"; bail; }
port2=$(sed -n 's/.*listening on 127.0.0.2:0 (port \([0-9]*\)).*/\1/p' "$work/drain2.log")
head='POST /v1/ids:next HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"count"'
exec 5<>"/dev/tcp/127.0.0.1/$port" 6<>"/dev/tcp/127.0.0.2/$port2" 7<>"/dev/tcp/127.0.0.1/$port"
# 7: an idle keep-alive connection, its one request answered.
printf 'GET /livez HTTP/1.1\r\nHost: t\r\n\r\n' >&7
read -r -t 10 line7 <&7
printf "$head" >&5
printf "$head" >&6
sleep 0.5	# (their headers read: in flight)
term_draining "$work/drain2.log"
printf ':2}' >&5
printf ':2}' >&6
answer5=$(timeout 20 cat <&5 | tr -d '\r')
answer6=$(timeout 20 cat <&6 | tr -d '\r')
exec 5>&- 6>&-
# closing_200 ANSWER: a 200 that closes its connection.
closing_200() {
	[ "$(printf '%s' "$1" | head -n 1)" = "HTTP/1.1 200 OK" ] &&
		printf '%s' "$1" | grep -qix "Connection: close"
}
check "requests in flight on two listeners at SIGTERM: both 200, with Connection: close" \
	eval '[ "${line7%$'"'"'\r'"'"'}" = "HTTP/1.1 200 OK" ] && closing_200 "$answer5" && closing_200 "$answer6"'
wait "$pid"
check "... then the service exits 0, having minted their 4 IDs" \
	eval 'test $? = 0 && grep -q "simulated generator: 4 IDs minted" "$work/drain2.log"'
pid=
exec 7>&-
# Large requests whose bodies end after SIGTERM: minted on the lane while
# the service drains, answered before it stops.
httpd_start "$work/drain3.log" --device sim --clock-check no --threads 1 ||
	{ not_ok "idgen-httpd --threads 1 starts"; bail; }
head='POST /v1/ids:next HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{"count"'
exec 5<>"/dev/tcp/127.0.0.1/$port" 6<>"/dev/tcp/127.0.0.1/$port"
printf "$head" >&5
printf "$head" >&6
sleep 0.5	# (their headers read: in flight)
term_draining "$work/drain3.log"
printf ':10000}' >&5
printf ':10000}' >&6
timeout 20 cat <&5 | tr -d '\r' >"$work/drain3.a5"
timeout 20 cat <&6 | tr -d '\r' >"$work/drain3.a6"
exec 5>&- 6>&-
wait "$pid"
rc=$?
pid=
for f in a5 a6; do
	grep -o '"[0-9]*"' "$work/drain3.$f" | tr -d '"' >"$work/drain3.$f.ids"
done
# closing_200_file FILE: closing_200 of an answer too large for a variable.
closing_200_file() {
	[ "$(head -n 1 "$1")" = "HTTP/1.1 200 OK" ] && grep -qix "Connection: close" "$1"
}
check "two requests of 10000 completed after SIGTERM: both 200 with 10000 IDs, none twice" \
	eval 'closing_200_file "$work/drain3.a5" && closing_200_file "$work/drain3.a6" &&
	      test "$(cat "$work"/drain3.a?.ids | sort -u | wc -l)" = 20000'
check "... then the service exits 0, having minted those 20000" \
	eval 'test $rc = 0 && grep -q "simulated generator: 20000 IDs minted" "$work/drain3.log"'
# An idle keep-alive connection has nothing to finish: the stop does not
# wait for it (the drain would wait 5 s).
httpd_start "$work/idle.log" --device sim --clock-check no || { not_ok "idgen-httpd starts"; bail; }
exec 7<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /livez HTTP/1.1\r\nHost: t\r\n\r\n' >&7
read -r -t 10 line7 <&7
t0=$(date +%s%N)
httpd_stop
rc=$?
t1=$(date +%s%N)
exec 7>&-
check "SIGTERM with an idle keep-alive client: exit 0 in under 3 s ($(((t1 - t0) / 1000000)) ms)" \
	test "$rc" = 0 -a $(((t1 - t0) / 1000000)) -lt 3000

# ---- /metrics -----------------------------------------------------------
httpd_start "$work/metrics.log" --device sim --clock-check no --callers "order-service chat" ||
	{ not_ok "idgen-httpd --callers starts"; bail; }
req m1 -X POST "${J[@]}" -d '{"count":3,"caller":"order-service"}' "$url/v1/ids:next"
req m2 -X POST "${J[@]}" -d '{"count":2000,"caller":"someone-else"}' "$url/v1/ids:next"
req m3 -X POST "$url/v1/ids:next"
req m4 -X POST "${J[@]}" -d '{"count":0,"caller":"chat"}' "$url/v1/ids:next"
req m5 "$url/v1/ids/01"
req m6 "$url/nowhere"
req m7 "$url/v1/ids/108421920055775237"
req metrics "$url/metrics"
check "GET /metrics: 200, text/plain; version=0.0.4" \
	test "$(status_of metrics)" = 200 -a "$(header_of metrics Content-Type)" = "text/plain; version=0.0.4; charset=utf-8"
m=$work/metrics.body
has() { grep -qxF -- "$1" "$m" || { echo "# missing: $1"; return 1; }; }
check "requests by route and status" eval 'has "idgen_requests_total{route=\"/v1/ids:next\",code=\"200\"} 3" &&
	has "idgen_requests_total{route=\"/v1/ids:next\",code=\"400\"} 1" &&
	has "idgen_requests_total{route=\"/v1/ids/{id}\",code=\"400\"} 1" &&
	has "idgen_requests_total{route=\"/v1/ids/{id}\",code=\"200\"} 1" &&
	has "idgen_requests_total{route=\"other\",code=\"404\"} 1"'
check "IDs by configured caller, the rest (and no caller) as other" eval 'has "idgen_ids_issued_total{caller=\"order-service\"} 3" &&
	has "idgen_ids_issued_total{caller=\"chat\"} 0" && has "idgen_ids_issued_total{caller=\"other\"} 2001" &&
	! grep -q someone-else "$m"'
check "the batch size histogram: cumulative buckets, sum and count" eval 'has "idgen_batch_size_bucket{le=\"1\"} 1" &&
	has "idgen_batch_size_bucket{le=\"10\"} 2" && has "idgen_batch_size_bucket{le=\"1000\"} 2" &&
	has "idgen_batch_size_bucket{le=\"10000\"} 3" && has "idgen_batch_size_bucket{le=\"+Inf\"} 3" &&
	has "idgen_batch_size_sum 2004" && has "idgen_batch_size_count 3"'
check "the duration histogram counts every answer (7 before the scrape)" eval \
	'has "idgen_request_duration_seconds_bucket{le=\"+Inf\"} 7" && has "idgen_request_duration_seconds_count 7" &&
	 grep -q "^idgen_request_duration_seconds_bucket{le=\"2.5e-05\"} " "$m"'
check "the generator's IDs, the lease, readiness and the build" eval 'has "idgen_generator_ids_total 2004" &&
	has "idgen_lease_in_force 1" && has "idgen_ready 1" && has "idgen_generator_simulated 1" &&
	has "idgen_build_info{version=\"'"$(cat "$top/VERSION")"'\",layout_version=\"1\"} 1" &&
	grep -q "^idgen_clock_synced [01]$" "$m" && grep -q "^idgen_clock_offset_seconds -\?[0-9.]*$" "$m"'
# The exposition's shape: every family's HELP and TYPE before its samples,
# every sample "name{labels} number", buckets never decreasing.
check "the text format: HELP/TYPE per family, samples well-formed, buckets cumulative" \
	awk '
	/^# HELP / { help[$3] = 1; next }
	/^# TYPE / { if (!help[$3]) bad = bad " type-before-help:" $3; type[$3] = $4; next }
	/^#/ { bad = bad " comment:" $0; next }
	{
		if ($0 !~ /^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+-]+$/) { bad = bad " sample:" $0; next }
		name = $1; sub(/\{.*/, "", name); fam = name; sub(/_(bucket|sum|count)$/, "", fam)
		if (!type[name] && !type[fam]) bad = bad " no-type:" name
		if (name ~ /_bucket$/) { if (fam == last && $2 + 0 < prev) bad = bad " decreasing:" $0; last = fam; prev = $2 + 0 }
	}
	END { if (bad != "") { print bad; exit 1 } }' "$m"
if command -v promtool >/dev/null; then
	check "promtool check metrics accepts it" sh -c "promtool check metrics <'$m'"
else
	n=$((n + 1)); echo "ok $n promtool check metrics # SKIP promtool not installed"
fi
bad "POST /metrics" 405 method_not_allowed -X POST "$url/metrics"
httpd_stop

# ---- per-caller quotas ---------------------------------------------------
# slow: one ID per 100 s, bursts of 5 (no refill during the test however
# slow the machine); fast: 2 IDs/s, bursts of 4; other callers unlimited.
httpd_start "$work/quota.log" --device sim --clock-check no --callers "slow fast" \
	--quotas "slow=0.01/5 fast=2/4" || { not_ok "idgen-httpd --quotas starts"; bail; }
qminted=0
qnext() { req "$1" -X POST "${J[@]}" -d "{\"count\":$2,\"caller\":\"$3\"}" "$url/v1/ids:next"; }
qnext q1 2 slow; qnext q2 2 slow; qnext q3 1 slow
check "quota slow=0.01/5: the first 5 IDs (2 + 2 + 1) pass" \
	test "$(status_of q1)$(status_of q2)$(status_of q3)" = 200200200
qminted=$((qminted + 5))
bad_next "quota slow: the 6th ID" 429 quota_exceeded '{"caller":"slow"}'
ra=$(header_of "bad$nbad" Retry-After)
check "... with Retry-After in whole seconds, up to the 100 s one ID takes ($ra)" \
	test -n "$ra" -a "$ra" -ge 1 -a "$ra" -le 100
bad "quota slow: count 6, above its burst of 5" 400 count_over_burst -X POST "${J[@]}" \
	-d '{"count":6,"caller":"slow"}' "$url/v1/ids:next"
check "... saying the burst" grep -q 'burst of 5 IDs' "$work/bad$nbad.body"
check "... without Retry-After (waiting would not help)" test -z "$(header_of "bad$nbad" Retry-After)"
qnext qother 3 someone-else
req qnone -X POST "$url/v1/ids:next"
check "callers without a quota (other, none) are not limited" \
	test "$(status_of qother)$(status_of qnone)" = 200200
qminted=$((qminted + 4))
qnext qf1 4 fast
check "quota fast=2/4: a burst of 4 passes" test "$(status_of qf1)" = 200
qminted=$((qminted + 4))
# 4 more need 2 s of refill: refused unless the machine stalled that long,
# so ask until refused (a few times at most), then wait as told.
n429=1	# the slow caller's
for ((t = 0; t < 5; t++)); do
	qnext qf2 4 fast
	[ "$(status_of qf2)" = 429 ] && break
	qminted=$((qminted + 4))
done
ra=$(header_of qf2 Retry-After)
check "quota fast: the next 4 refused, 429 with Retry-After 1 or 2 ($ra)" \
	test "$(status_of qf2)" = 429 -a \( "$ra" = 1 -o "$ra" = 2 \)
n429=$((n429 + 1))
sleep "${ra:-1}"
qnext qf3 4 fast
check "... and after the Retry-After wait, they pass" test "$(status_of qf3)" = 200
qminted=$((qminted + 4))
req qmetrics "$url/metrics"
m=$work/qmetrics.body
check "429s counted in idgen_requests_total{code=\"429\"} ($n429)" \
	has "idgen_requests_total{route=\"/v1/ids:next\",code=\"429\"} $n429"
check "... and IDs issued only for what was answered" eval 'has "idgen_ids_issued_total{caller=\"slow\"} 5" &&
	has "idgen_ids_issued_total{caller=\"fast\"} $((qminted - 9))"'
httpd_stop
check "no refused request consumed an ID: the simulation minted exactly the $qminted answered" \
	grep -q "simulated generator: $qminted IDs minted" "$work/quota.log"

# ---- the example alerting rules ------------------------------------------
# promtool (scripts/deps.sh) from the test file's folder: the rules load,
# and each alert fires on its series and not on the others'.
if command -v promtool >/dev/null; then
	tap_step "promtool check rules helper/httpd/idgen-alerts.yml" \
		promtool check rules "$top/helper/httpd/idgen-alerts.yml"
	tap_step "promtool test rules: each alert fires, and does not where it should not" \
		bash -c "cd '$here' && promtool test rules idgen-alerts.test.yml"
else
	not_ok "alerting rules: promtool not found (install prometheus: scripts/deps.sh)"
fi

# ---- configuration: file and flags -------------------------------------
cfg() {
	local desc=$1 want_rc=$2 want=$3 rc
	shift 3
	timeout 20 "$httpd" "$@" >"$work/cfg.out" 2>"$work/cfg.err"
	rc=$?
	if [ $rc -eq "$want_rc" ] && grep -qF -- "$want" "$work/cfg.out" "$work/cfg.err"; then
		ok "config: $desc"
	else
		not_ok "config: $desc (exit $rc)"
		sed 's/^/# /' "$work/cfg.out" "$work/cfg.err"
	fi
}
printf '[httpd]\nlisten = 127.0.0.1:1 [::1]:2\n  127.0.0.2:3\ndevice = sim:5\ntimeout_s = 7\n' >"$work/good.conf"
cfg "the example file checks" 0 "ready_margin_ms = 30000" \
	--config "$top/helper/httpd/idgen-httpd.conf" --check-config
cfg "the example file gives every caller it does not name a quota" 0 \
	"quotas = other=1000000/20000" --config "$top/helper/httpd/idgen-httpd.conf" --check-config
cfg "listen over indented lines" 0 "listen = 127.0.0.1:1 [::1]:2 127.0.0.2:3" \
	--config "$work/good.conf" --check-config
cfg "a flag wins over the file" 0 "timeout_s = 9" --config "$work/good.conf" --timeout-s 9 --check-config
cfg "--listen replaces the file's list" 0 "listen = 127.0.0.1:9 127.0.0.1:10" \
	--config "$work/good.conf" --listen 127.0.0.1:9 --listen=127.0.0.1:10 --check-config
check "config: gRPC off by default (grpc_listen empty)" \
	sh -c "'$httpd' --config '$top/helper/httpd/idgen-httpd.conf' --check-config | grep -qx 'grpc_listen ='"
printf '[httpd]\ngrpc_listen = 127.0.0.1:7 [::1]:8\ngrpc_max_streams = 16\n' >"$work/grpc.conf"
cfg "grpc_listen from the file" 0 "grpc_listen = 127.0.0.1:7 [::1]:8" \
	--config "$work/grpc.conf" --check-config
cfg "grpc_max_streams from the file" 0 "grpc_max_streams = 16" --config "$work/grpc.conf" --check-config
cfg "--grpc-listen replaces the file's list, repeatable" 0 "grpc_listen = 127.0.0.1:9 127.0.0.1:10" \
	--config "$work/grpc.conf" --grpc-listen 127.0.0.1:9 --grpc-listen=127.0.0.1:10 --check-config
cfg "grpc_max_streams 0" 1 "--grpc-max-streams: '0' is not a whole number from 1 to 1000" \
	--grpc-max-streams 0
cfg "a gRPC listen address without a port" 1 "listen address '127.0.0.1': want HOST:PORT" \
	--device sim --grpc-listen 127.0.0.1
printf '[httpd]\ntimeout_s = 7\nbogus = 1\n' >"$work/bad1.conf"
cfg "an unknown key names the line" 1 "bad1.conf:3: unknown key 'bogus'" --config "$work/bad1.conf"
printf '[httpd]\ntimeout_s = 07\n' >"$work/bad2.conf"
cfg "a value with a leading zero" 1 "bad2.conf:2: [httpd] timeout_s: '07' is not a whole number from 1 to 3600" \
	--config "$work/bad2.conf"
printf '[other]\n' >"$work/bad3.conf"
cfg "an unknown section" 1 "bad3.conf:1: unknown section [other]" --config "$work/bad3.conf"
printf '[httpd]\ntimeout_s = 7\ntimeout_s = 8\n' >"$work/bad4.conf"
cfg "a key given twice" 1 "timeout_s is given twice (line 2 first)" --config "$work/bad4.conf"
cfg "a missing file" 1 "cannot read $work/none.conf" --config "$work/none.conf"
cfg "an unknown flag" 1 "unknown option '--bogus'" --bogus 1
cfg "a flag out of range" 1 "--timeout-s: '0' is not a whole number from 1 to 3600" --timeout-s 0
cfg "clock-check not yes or no" 1 "--clock-check: 'maybe' is not yes or no" --clock-check maybe
cfg "no such device file" 1 "device '$work/none': no such file" --device "$work/none"
cfg "not an idgen device" 1 "device '/dev/null': not an idgen device" --device /dev/null
cfg "a simulated worker past 127" 1 "the simulation's worker must be a decimal number from 0 to 127" \
	--device sim:128
cfg "a listen address without a port" 1 "listen address '127.0.0.1': want HOST:PORT" \
	--device sim --listen 127.0.0.1
cfg "an IPv6 address not this host's, named whole" 1 "listen address '[zz::1]:80': " \
	--device sim --listen '[zz::1]:80'
cfg "an empty IPv6 address, named whole" 1 "listen address '[]:80': no host" \
	--device sim --listen '[]:80'
cfg "a port past 65535" 1 "the port must be a number from 0 to 65535" \
	--device sim --listen 127.0.0.1:65536
cfg "callers listed" 0 "callers = a b.c x:y" --callers "a b.c x:y" --check-config
cfg "quotas listed, a fractional rate" 0 "quotas = a=0.500/3 other=1000/10" \
	--callers "a b" --quotas "a=0.5/3 other=1000/10" --check-config
printf '[httpd]\ncallers = a\nquotas = a=1/2\n  other=3/4\n' >"$work/quota.conf"
cfg "quotas over indented lines" 0 "quotas = a=1/2 other=3/4" --config "$work/quota.conf" --check-config
{ echo '[httpd]'; sed -n 's/^# e\.g\. //p' "$top/helper/httpd/idgen-httpd.conf"; } >"$work/eg.conf"
cfg "the example file's examples" 0 "quotas = order-service=1000/2000 other=100/100" \
	--config "$work/eg.conf" --check-config
cfg "a quota for a caller not listed" 1 "quotas: 'x' is not one of callers" --quotas "x=1/1"
cfg "a quota without a burst" 1 "'a=1' is not CALLER=RATE/BURST" --callers a --quotas "a=1"
cfg "a quota of rate 0" 1 "the rate '0' is not IDs per second from 0.001" --callers a --quotas "a=0/1"
cfg "a quota of burst 0" 1 "the burst '0' is not a number of IDs from 1" --callers a --quotas "a=1/0"
cfg "two quotas for one caller" 1 "'a' has two quotas" --callers a --quotas "a=1/1 a=2/2"
cfg "a caller listed twice (a flag)" 1 "--callers: caller 'a' is listed twice" --callers "a b a"
printf '[httpd]\ncallers = x\n  y x\n' >"$work/bad5.conf"
cfg "a caller listed twice (the file)" 1 "bad5.conf:2: [httpd] callers: caller 'x' is listed twice" --config "$work/bad5.conf"
cfg "a caller named other" 1 "'other' is not a caller's name" --callers "a other"
cfg "public_keys and public_current" 0 "public_current = 7" \
	--public-keys "$keys/k7" --public-current 7 --check-config
printf '[httpd]\npublic_keys = %s\n  %s\n' "$keys/k7" "$keys/k7" >"$work/keys.conf"
cfg "a key file given twice" 1 "public_keys: " --config "$work/keys.conf" --check-config
cfg "public_current not loaded" 1 "public_current: no file of public_keys holds key version 8" \
	--public-keys "$keys/k7" --public-current 8 --check-config
cfg "public_current without public_keys" 1 "public_current: 7 is given, but no public_keys" \
	--public-current 7 --check-config
cfg "public_current not a number" 1 "public_current: 'v7' is not a key version" \
	--public-keys "$keys/k7" --public-current v7 --check-config
cfg "a missing key file" 1 "public_keys: $work/none.key" --public-keys "$work/none.key" --check-config
cfg "a bad layouts file" 1 "layouts: $work/none.layouts" --layouts "$work/none.layouts"
# The generator's layout must be the decode table's in force now.
printf '2 1000 3 10 9\n' >"$work/v2-now.layouts"
cfg "a layouts file whose layout in force now is not the generator's" 1 \
	"sim:0 mints with layout 3/7/12 (region/worker/sequence bits), but the decode table has layout version 2 (3/10/9) in force now" \
	--device sim --listen 127.0.0.1:0 --layouts "$work/v2-now.layouts"
printf '2 2199023255551 3 10 9\n' >"$work/v2-later.layouts"
if httpd_start "$work/v2later.log" --device sim --clock-check no --layouts "$work/v2-later.layouts"; then
	httpd_stop
	check "a layouts file whose next layout is yet to come: it starts, exits 0" test $? = 0
else
	not_ok "a layouts file whose next layout is yet to come: it starts"
fi
cfg "--help" 0 "Usage: idgen-httpd" --help

tap_step "make install DESTDIR=... PREFIX=/usr: the program, its man page, the example file and alerts, the unit" bash -c "
	make -s -C '$top/helper/httpd' install DESTDIR='$work/root' PREFIX=/usr &&
	test -x '$work/root/usr/sbin/idgen-httpd' &&
	test -f '$work/root/usr/share/man/man8/idgen-httpd.8' &&
	test -f '$work/root/etc/idgen/idgen-httpd.conf.example' &&
	test -f '$work/root/usr/share/doc/idgen-httpd/examples/idgen-alerts.yml' &&
	grep -qx 'ExecStart=/usr/sbin/idgen-httpd' '$work/root/lib/systemd/system/idgen-httpd.service'"

# ---- the systemd unit ------------------------------------------------------
# Checked offline (systemd need not be PID 1 here): installed at a prefix
# that exists, so that verify finds its ExecStart; it must say nothing at
# all (an unknown key is only a warning to it).  The hardening is held to
# what systemd-analyze security rates "OK" (exposure 2.0 now; the
# threshold 25 is 2.5 on its scale).
unit=$work/unit/lib/systemd/system/idgen-httpd.service
if command -v systemd-analyze >/dev/null &&
   make -s -C "$top/helper/httpd" install PREFIX="$work/unit/usr" UNITDIR="${unit%/*}" >/dev/null; then
	(cd "$work" && systemd-analyze verify --man=no "$unit") >"$work/verify.out" 2>&1
	vrc=$?
	check "systemd-analyze verify idgen-httpd.service: no error, no warning" \
		eval 'test $vrc = 0 -a ! -s "$work/verify.out" || { sed "s/^/# /" "$work/verify.out"; false; }'
	check "... After= and Wants= idgend.service, Restart=on-failure" eval \
		'grep -qx "After=network-online.target idgend.service" "$unit" &&
		 grep -qx "Wants=network-online.target idgend.service" "$unit" &&
		 grep -qx "Restart=on-failure" "$unit"'
	tap_step "systemd-analyze security: exposure at most 2.5 (hardened)" \
		systemd-analyze security --offline=yes --threshold=25 "$unit"
	# What the hardening must still let through: /dev/idgen (misc, read),
	# TCP, adjtimex and the clock_adjtime(2) glibc makes of it (@clock,
	# outside @system-service), the lane's setpriority (@resources).  That
	# the service runs under it, denied nothing: tests/host/run.sh.
	check "... yet /dev/idgen, TCP, adjtimex and setpriority are let through" eval \
		'grep -qx "DeviceAllow=char-misc r" "$unit" &&
		 grep -qx "RestrictAddressFamilies=AF_INET AF_INET6" "$unit" &&
		 grep -qx "SystemCallFilter=adjtimex clock_adjtime setpriority" "$unit" &&
		 test "$(grep "^SystemCallFilter=" "$unit" | tail -n 1)" = "SystemCallFilter=adjtimex clock_adjtime setpriority" &&
		 ! grep -q "^PrivateDevices=yes\|^ProtectClock=yes" "$unit"'
else
	not_ok "systemd-analyze not found, or the unit not installed (systemd: scripts/deps.sh)"
fi

# ---- the request handling under libFuzzer --------------------------------
# A fixed seed and number of runs, so CI repeats the same slice in seconds;
# what it finds goes to the work directory, a crashing input to
# build/fuzz-crashes/ to replay.
if tap_step "build the fuzz target (clang, libFuzzer, ASan, UBSan)" \
	make -s -C "$here" OUT="$out" fuzz; then
	mkdir -p "$work/fuzz" "$top/build/fuzz-crashes"
	tap_step "request handling: 300000 fuzzed requests, no crash or leak, no ID taken by a refused one" \
		"$out/fuzz_api" -seed=1 -runs=300000 -max_len=4200 \
		-artifact_prefix="$top/build/fuzz-crashes/fuzz_api-" "$work/fuzz" "$here/corpus"
	mkdir -p "$work/fuzz-grpc"
	tap_step "gRPC over HTTP/2: 200000 fuzzed connections, no crash or leak, no IDs past what was asked" \
		"$out/fuzz_grpc" -seed=1 -runs=200000 -max_len=4096 \
		-artifact_prefix="$top/build/fuzz-crashes/fuzz_grpc-" "$work/fuzz-grpc" \
		"$here/corpus-grpc"
	mkdir -p "$work/fuzz-tls"
	tap_step "TLS: 200000 fuzzed caller maps, client certificates and handshakes, no crash or leak, no handshake passed" \
		"$out/fuzz_tls" -seed=1 -runs=200000 -max_len=4096 \
		-artifact_prefix="$top/build/fuzz-crashes/fuzz_tls-" "$work/fuzz-tls" \
		"$here/corpus-tls"
fi

echo "1..$n"
exit $status

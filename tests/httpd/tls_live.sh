#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tls_live.sh HTTPD WORK: idgen-httpd over TLS (issue #37 items 7-10), on
# --device sim and certificates tls-certs.sh makes in WORK, as TAP; run
# by run.sh inside its namespaces (loopback only).
#
#   - HTTPS on --listen: curl's requests answered, ALPN http/1.1; TLS 1.2
#     and 1.3 taken, 1.1, CBC and non-ECDHE suites refused; /metrics'
#     seconds until the certificate expires
#   - reloads on SIGHUP: a new certificate and key for new connections
#     while a connection opened before goes on with its own; a half
#     rotation (a key not the certificate's) refused, logged, counted,
#     and the set in force kept
#   - mTLS: the caller is the client certificate's (a SPIFFE ID through
#     the caller map, a CN, an unmapped one as other), a request naming
#     another refused 403 caller_mismatch and minting nothing, quotas and
#     /metrics by the certificate's caller; certificates refused at the
#     handshake (none, another CA's, expired, two URI SANs, not for client
#     authentication) and counted; the client CA reloaded on SIGHUP;
#     tls_unmapped = refuse
#   - configuration: tls_cert without tls_key, a key others can read, an
#     expired certificate: exit 1 naming the cause
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
httpd=$1
work=$2/tls
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=../lib/httpd.sh
. "$top/tests/lib/httpd.sh"

mkdir -p "$work"
certs=$work/certs
"$here/tls-certs.sh" "$certs" || { echo "Bail out! tls-certs.sh failed"; exit 1; }
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; }
trap cleanup EXIT

# https NAME CURL-ARGS...: one request over TLS; NAME.status, .body, .err.
https() {
	local name=$1
	shift
	curl -s -o "$work/$name.body" -w '%{http_code}' --max-time 10 \
		--cacert "$certs/ca.pem" "$@" >"$work/$name.status" 2>"$work/$name.err"
}
# served_cert: the SHA-256 fingerprint of the certificate a new connection gets.
served_cert() {
	openssl s_client -connect "127.0.0.1:$port" -CAfile "$certs/ca.pem" </dev/null 2>/dev/null |
		openssl x509 -noout -fingerprint -sha256 2>/dev/null
}
fingerprint() { openssl x509 -in "$1" -noout -fingerprint -sha256; }
# handshake ARGS...: whether openssl s_client completes a handshake so.
handshake() {
	openssl s_client -connect "127.0.0.1:$port" -CAfile "$certs/ca.pem" "$@" \
		</dev/null >"$work/s_client.out" 2>&1 &&
		grep -q "^ *Verify return code: 0 (ok)" "$work/s_client.out"
}

echo "TAP version 13"

# ---- HTTPS -------------------------------------------------------------
cp "$certs/server.pem" "$work/live.pem"
cp -p "$certs/server.key" "$work/live.key"
httpd_start "$work/https.log" --clock-check no --device sim:60 --tls-cert "$work/live.pem" \
	--tls-key "$work/live.key" || { not_ok "idgen-httpd --tls-cert starts"; echo "1..$n"; exit 1; }
ok "idgen-httpd --tls-cert --tls-key starts"
check "its log says TLS is on, the certificate and its expiry" \
	grep -q "TLS on every listener: certificate CN=localhost (a chain of 1), expires 20" "$work/https.log"
https next -X POST -H 'Content-Type: application/json' -d '{"count":3}' -v \
	"https://127.0.0.1:$port/v1/ids:next"
check "POST /v1/ids:next over HTTPS (curl, the CA's certificate checked): 200, 3 IDs" \
	test "$(cat "$work/next.status")" = 200 -a \
	"$(grep -o '"[0-9]*"' "$work/next.body" | wc -l)" = 3
check "... ALPN selected http/1.1" grep -q "ALPN: server accepted http/1.1" "$work/next.err"
https byname "https://localhost:$port/livez"
check "... the certificate names localhost too" test "$(cat "$work/byname.status")" = 200
check "plain HTTP to the TLS port gets no answer" \
	eval '! curl -s --max-time 5 "http://127.0.0.1:$port/livez" >/dev/null'
https after "https://127.0.0.1:$port/livez"
check "... and the service still serves over TLS" test "$(cat "$work/after.status")" = 200
# A client that connects and says nothing: libmicrohttpd's epoll loop
# spun on a connection in its handshake (server.c takes poll() for TLS),
# so the server's CPU time while one waits is the check.
exec 3<>"/dev/tcp/127.0.0.1/$port"
t0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
sleep 1
ticks=$(($(awk '{ print $14 + $15 }' "/proc/$pid/stat") - t0))
exec 3>&-
check "a client silent in its handshake costs the server no CPU ($ticks of $(getconf CLK_TCK) ticks in 1 s)" \
	test "$ticks" -le 10

check "TLS 1.3 is taken" handshake -tls1_3
check "TLS 1.2 with ECDHE and AES-GCM is taken" handshake -tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256
check "TLS 1.2 with ECDHE and ChaCha20-Poly1305 is taken" handshake -tls1_2 -cipher ECDHE-ECDSA-CHACHA20-POLY1305
check "TLS 1.1 is refused" eval '! handshake -tls1_1 -cipher "DEFAULT:@SECLEVEL=0"'
check "TLS 1.2 with a CBC suite is refused" eval '! handshake -tls1_2 -cipher ECDHE-ECDSA-AES128-SHA256'
check "TLS 1.2 without ECDHE (static RSA, DHE) is refused" \
	eval '! handshake -tls1_2 -cipher AES128-GCM-SHA256:DHE-RSA-AES128-GCM-SHA256'
check "TLS 1.2: no compression, and secure renegotiation indicated" eval \
	'handshake -tls1_2 && grep -q "^Compression: NONE" "$work/s_client.out" &&
	 grep -q "Secure Renegotiation IS supported" "$work/s_client.out"'

https metrics "https://127.0.0.1:$port/metrics"
expiry=$(sed -n 's/^idgen_tls_certificate_expiry_seconds \(-\?[0-9]*\)$/\1/p' "$work/metrics.body")
want=$(($(date -d "$(openssl x509 -in "$certs/server.pem" -noout -enddate | cut -d= -f2)" +%s) - $(date +%s)))
check "/metrics: idgen_tls_certificate_expiry_seconds is the certificate's time left (${expiry:-none}, ~$want)" \
	test -n "$expiry" -a "$((want - ${expiry:-0}))" -ge -5 -a "$((want - ${expiry:-0}))" -le 5
check "/metrics: no reload yet, no certificate refused, no handshake timed out" eval \
	'grep -qx "idgen_tls_reloads_total{result=\"ok\"} 0" "$work/metrics.body" &&
	 grep -qx "idgen_tls_reloads_total{result=\"failed\"} 0" "$work/metrics.body" &&
	 grep -qx "idgen_tls_client_certificates_refused_total 0" "$work/metrics.body" &&
	 grep -qx "idgen_tls_handshakes_timed_out_total 0" "$work/metrics.body"'
tls_missing=
for name in $(grep -o 'idgen_tls_[a-z_]*' "$top/helper/httpd/idgen-alerts.yml" | sort -u); do
	grep -q "^${name}[{ ]" "$work/metrics.body" || tls_missing="$tls_missing $name"
done
check "every idgen_tls_* series the alerting rules ask for is there${tls_missing:+ (missing:$tls_missing)}" \
	test -z "$tls_missing" -a -n "$(grep -o 'idgen_tls_[a-z_]*' "$top/helper/httpd/idgen-alerts.yml")"
if command -v promtool >/dev/null; then
	check "promtool check metrics accepts it" sh -c "promtool check metrics <'$work/metrics.body'"
fi

# ---- reloads --------------------------------------------------------------
# A keep-alive connection opened now, used again after each reload.
/usr/bin/python3 - "$port" "$certs/ca.pem" "$work/keepalive" <<'EOF' &
import os, socket, ssl, sys, time
port, ca, base = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
def get(name):
    s.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"}"):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    open(base + "." + name, "wb").write(data)
get("before")
open(base + ".ready", "w").close()
while not os.path.exists(base + ".go"):
    time.sleep(0.05)
get("after")
EOF
keepalive=$!
for ((t = 0; t < 100; t++)); do [ -e "$work/keepalive.ready" ] && break; sleep 0.1; done
old=$(fingerprint "$certs/server.pem")
check "a new connection gets the certificate in force" test "$(served_cert)" = "$old"

# Half a rotation: the new certificate over the old key.
cp "$certs/server2.pem" "$work/live.pem"
kill -HUP "$pid"
for ((t = 0; t < 50; t++)); do grep -q "TLS files were not reloaded" "$work/https.log" && break; sleep 0.1; done
check "SIGHUP with a certificate not of the key: a warning naming both files and why" \
	grep -q "warning: SIGHUP: the TLS files were not reloaded, the ones in force are kept: tls_key $work/live.key with tls_cert $work/live.pem: the key is not the certificate's" "$work/https.log"
check "... and new connections still get the certificate in force" test "$(served_cert)" = "$old"
https m2 "https://127.0.0.1:$port/metrics"
check "... counted: idgen_tls_reloads_total{result=\"failed\"} 1" \
	grep -qx 'idgen_tls_reloads_total{result="failed"} 1' "$work/m2.body"

cp -p "$certs/server2.key" "$work/live.key"
kill -HUP "$pid"
for ((t = 0; t < 50; t++)); do grep -q "SIGHUP: TLS reloaded" "$work/https.log" && break; sleep 0.1; done
check "SIGHUP with the whole new pair: reloaded, said at info" \
	grep -q "info: SIGHUP: TLS reloaded, for connections from now on: certificate CN=localhost" "$work/https.log"
check "... new connections get the new certificate" test "$(served_cert)" = "$(fingerprint "$certs/server2.pem")"
touch "$work/keepalive.go"
wait "$keepalive"
check "... while a connection opened before the reloads goes on, on its own context" eval \
	'grep -q "^HTTP/1.1 200" "$work/keepalive.before" && grep -q "^HTTP/1.1 200" "$work/keepalive.after" &&
	 grep -q "\"status\":\"ok\"" "$work/keepalive.after"'
https m3 "https://127.0.0.1:$port/metrics"
check "... counted: idgen_tls_reloads_total{result=\"ok\"} 1" \
	grep -qx 'idgen_tls_reloads_total{result="ok"} 1' "$work/m3.body"
check "SIGTERM still stops it, exit 0" httpd_stop

# ---- mTLS: the caller is the certificate's --------------------------------
cp "$certs/ca.pem" "$work/live-ca.pem"
httpd_start "$work/mtls.log" --clock-check no --device sim:62 --tls-cert "$certs/server.pem" \
	--tls-key "$certs/server.key" --tls-client-ca "$work/live-ca.pem" \
	--caller-map "$certs/callers.map" --callers 'order-service billing' \
	--quotas 'order-service=0.001/8 other=1000/1000' ||
	{ not_ok "idgen-httpd --tls-client-ca starts"; echo "1..$n"; exit 1; }
ok "idgen-httpd --tls-client-ca --caller-map starts"
check "its log says client certificates are required, and the map's size" \
	grep -q "client certificates required, of 1 CA(s); 1 SPIFFE ID(s) mapped to callers, unmapped ones served as the caller other" "$work/mtls.log"
minted=0
# as CERT NAME BODY: POST /v1/ids:next with client certificate CERT.
as() {
	https "$2" --cert "$certs/$1.pem" --key "$certs/$1.key" -X POST \
		-H 'Content-Type: application/json' -d "$3" "https://127.0.0.1:$port/v1/ids:next"
}
status_is() { test "$(cat "$work/$1.status")" = "$2"; }
as spiffe m1 '{"count":2}'
minted=$((minted + 2))
check "a SPIFFE certificate, no caller named: 200" status_is m1 200
as spiffe m2 '{"count":1,"caller":"order-service"}'
minted=$((minted + 1))
check "... naming its own caller: 200" status_is m2 200
as spiffe m3 '{"count":1,"caller":"billing"}'
check "... naming another caller: 403 caller_mismatch" eval \
	'status_is m3 403 && grep -q "\"code\":\"caller_mismatch\"" "$work/m3.body"'
check "... logged in the authenticated name" \
	grep -q "a client certificate of caller order-service asked for IDs as 'billing': refused, 403 caller_mismatch" "$work/mtls.log"
as cn m4 '{"count":4}'
minted=$((minted + 4))
check "a certificate with only a CN (billing): 200, as billing" status_is m4 200
as unmapped m5 '{"count":3}'
minted=$((minted + 3))
check "an unmapped SPIFFE ID naming no caller: 200, as other" status_is m5 200
as unmapped m6 '{"count":1,"caller":"order-service"}'
check "... naming a listed caller: 403 caller_mismatch" status_is m6 403
https m7 --cert "$certs/spiffe.pem" --key "$certs/spiffe.key" "https://127.0.0.1:$port/metrics"
check "/metrics counts the IDs by the certificates' callers" eval \
	'grep -qx "idgen_ids_issued_total{caller=\"order-service\"} 3" "$work/m7.body" &&
	 grep -qx "idgen_ids_issued_total{caller=\"billing\"} 4" "$work/m7.body" &&
	 grep -qx "idgen_ids_issued_total{caller=\"other\"} 3" "$work/m7.body"'
check "... and the two refusals as 403s" \
	grep -qx 'idgen_requests_total{route="/v1/ids:next",code="403"} 2' "$work/m7.body"
# The quota is the certificate's: order-service has 8, 3 spent.
as spiffe q1 '{"count":5}'
minted=$((minted + 5))
as spiffe q2 '{"count":1}'
as cn q3 '{"count":1,"caller":"billing"}'
minted=$((minted + 1))
check "order-service's quota spent through its certificate: the next request 429, billing's still 200" \
	eval 'status_is q1 200 && status_is q2 429 && status_is q3 200'

# refused_cert NAME DESC: a handshake with that certificate fails, nothing served.
refused_cert() {
	local args=()
	[ -n "$1" ] && args=(--cert "$certs/$1.pem" --key "$certs/$1.key")
	https "r-$1" "${args[@]}" "https://127.0.0.1:$port/livez"
	check "$2: refused at the handshake" eval \
		"! grep -q ok '$work/r-$1.body' 2>/dev/null && test \"\$(cat '$work/r-$1.status')\" = 000"
}
refused_cert "" "no client certificate"
refused_cert foreign "a certificate of another CA"
refused_cert expired "an expired certificate"
refused_cert two-uris "a certificate with two URI SANs"
refused_cert serveronly "a certificate not for client authentication"
https m8 --cert "$certs/spiffe.pem" --key "$certs/spiffe.key" "https://127.0.0.1:$port/metrics"
refusals=$(sed -n 's/^idgen_tls_client_certificates_refused_total \([0-9]*\)$/\1/p' "$work/m8.body")
check "... those that reached the check counted in idgen_tls_client_certificates_refused_total (${refusals:-none})" \
	test "${refusals:-0}" -ge 3
check "... and logged with the reason" eval \
	'grep -q "TLS: a client certificate from 127.0.0.1 refused at the handshake: " "$work/mtls.log"'
check "/metrics too takes a client certificate: without one, nothing" eval \
	'! curl -s --max-time 5 --cacert "$certs/ca.pem" "https://127.0.0.1:$port/metrics" | grep -q idgen_'

# The client CA reloads too: another CA's clients in, the old one's out.
cp "$certs/foreign-ca.pem" "$work/live-ca.pem"
kill -HUP "$pid"
for ((t = 0; t < 50; t++)); do grep -q "SIGHUP: TLS reloaded" "$work/mtls.log" && break; sleep 0.1; done
https c0 --cert "$certs/foreign.pem" --key "$certs/foreign.key" "https://127.0.0.1:$port/livez"
check "SIGHUP with a new client CA: its clients are taken" status_is c0 200
as foreign c1 '{"count":1}'
check "... as the caller the map gives: order-service, its quota spent, 429" status_is c1 429
refused_cert spiffe "... and the old CA's clients are refused on new connections"
check "SIGTERM stops it" httpd_stop
check "the refused requests minted nothing ($minted IDs answered)" \
	grep -q "simulated generator: $minted IDs minted" "$work/mtls.log"

# tls_unmapped = refuse: a certificate that maps to no caller is refused.
httpd_start "$work/refuse.log" --clock-check no --device sim:63 --tls-cert "$certs/server.pem" \
	--tls-key "$certs/server.key" --tls-client-ca "$certs/ca.pem" \
	--caller-map "$certs/callers.map" --tls-unmapped refuse \
	--callers 'order-service billing' ||
	{ not_ok "idgen-httpd --tls-unmapped refuse starts"; echo "1..$n"; exit 1; }
refused_cert unmapped "tls_unmapped = refuse: an unmapped SPIFFE ID"
refused_cert cn-host "... a CN that names no configured caller"
refused_cert cn-mapped "... a CN that spells a caller the map gives to a SPIFFE ID"
as spiffe u1 '{"count":1}'
check "... a mapped one is served" status_is u1 200
as cn u2 '{"count":1}'
check "... and a CN that is a caller's name is one" status_is u2 200
check "... the refusal logged, naming the identity" \
	grep -q "the SPIFFE ID 'spiffe://example.org/ns/x/sa/stranger' maps to no caller (tls_unmapped = refuse" "$work/refuse.log"
httpd_stop

# ---- SIGHUP without TLS: logged, nothing stopped -----------------------------
httpd_start "$work/plain.log" --clock-check no --device sim:66 || { not_ok "a plaintext idgen-httpd starts"; echo "1..$n"; exit 1; }
kill -HUP "$pid"
for ((t = 0; t < 50; t++)); do grep -q "SIGHUP: no TLS files to reload" "$work/plain.log" && break; sleep 0.1; done
check "SIGHUP without TLS: said, and the service goes on (systemctl reload stops nothing)" eval \
	'grep -q "info: SIGHUP: no TLS files to reload" "$work/plain.log" &&
	 curl -s --max-time 5 "http://127.0.0.1:$port/livez" | grep -q "\"status\":\"ok\""'
httpd_stop

# ---- configuration -------------------------------------------------------------
# refused DESC WANT ARGS...: the service exits 1 at once saying WANT.
refused() {
	local desc=$1 want=$2 rc
	shift 2
	timeout 20 "$httpd" --listen 127.0.0.1:0 --device sim:61 --clock-check no "$@" \
		>"$work/refused.out" 2>&1
	rc=$?
	if [ $rc = 1 ] && grep -qF -- "$want" "$work/refused.out"; then
		ok "$desc: exit 1, saying so"
	else
		not_ok "$desc: exit 1 saying '$want' (got $rc)"
		sed 's/^/# /' "$work/refused.out"
	fi
}
refused "tls_cert without tls_key" "tls_cert is given without tls_key" \
	--tls-cert "$certs/server.pem"
refused "tls_client_ca without a certificate" "tls_client_ca is given without tls_cert and tls_key" \
	--tls-client-ca "$certs/ca.pem"
cp "$certs/server.key" "$work/open.key"
chmod 644 "$work/open.key"
refused "a key file others can read" "$work/open.key: readable by group or others (mode 0644)" \
	--tls-cert "$certs/server.pem" --tls-key "$work/open.key"
refused "an expired certificate" "expired at" \
	--tls-cert "$certs/expired.pem" --tls-key "$certs/expired.key"
refused "a bad tls_unmapped" "want other or refuse" --tls-unmapped maybe
touch "$work/empty.conf"
check "--check-config prints the TLS keys when TLS is on, and none when it is off" eval \
	'"$httpd" --check-config --config "$work/empty.conf" --tls-cert c.pem --tls-key k.pem |
	 grep -qx "tls_cert = c.pem" &&
	 ! "$httpd" --check-config --config "$work/empty.conf" | grep -q "^tls_"'

echo "1..$n"
exit $status

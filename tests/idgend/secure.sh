#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# secure.sh IDGEND: idgend against a real etcd 3.4 member that serves
# clients over TLS only, requires client certificates (--client-cert-auth)
# and has authentication enabled, with a role that covers idgend's prefix
# only.  The certificates are made here with openssl (and faketime, for
# ones whose time is past): a CA, the member's certificate (IP SAN
# 127.0.0.1), idgend's client certificate (no CN: etcd's gateway refuses
# one with a CN), a foreign CA and a client certificate it signed.
#
#   - a lease claimed and renewed over TLS as an etcd user
#   - the member restarted (its simple tokens die): renewals go on
#   - the user's password changed in etcd: renewals fail and the fence
#     stays (no revoke); the new password file read on SIGHUP, and
#     renewals go on; a new password file readable by others is refused
#     and the one in force kept
#   - refused, each with its own log line, nothing claimed or pushed:
#     a CA that did not sign the member's certificate, a client
#     certificate of another CA, one with a CN, a wrong password, a role
#     on another prefix, the member's certificate expired, an expired
#     client certificate, a key that is not the certificate's, a password
#     file others can read
# Prints TAP.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
idgend=${1:-$top/helper/idgend/idgend}
# shellcheck source=daemon-lib.sh
. "$here/daemon-lib.sh"
# shellcheck source=../lib/certs.sh
. "$top/tests/lib/certs.sh"

daemon_workdir secure
tls=$work/tls

# --- certificates ----------------------------------------------------------

# serverAuth and clientAuth on each: the member's certificate is a
# client's too (its JSON gateway connects to its own gRPC with it).
certificates() {
	mkdir -p "$tls" && (
		cd "$tls" &&
			cert_ca ca && cert_ca foreign &&
			cert_leaf server ca "/CN=etcd" IP:127.0.0.1 serverAuth,clientAuth "" 30 &&
			cert_leaf server-expired ca "/CN=etcd" IP:127.0.0.1 serverAuth,clientAuth "3 days ago" 1 &&
			cert_leaf admin ca "/CN=root" DNS:admin serverAuth,clientAuth "" 30 &&
			cert_leaf idgend ca "/O=idgen" DNS:idgend serverAuth,clientAuth "" 30 &&
			cert_leaf idgend-cn ca "/CN=idgend" DNS:idgend serverAuth,clientAuth "" 30 &&
			cert_leaf idgend-expired ca "/O=idgen" DNS:idgend serverAuth,clientAuth "3 days ago" 1 &&
			cert_leaf intruder foreign "/O=idgen" DNS:idgend serverAuth,clientAuth "" 30
	) &&
		cp "$tls/server.pem" "$tls/server-good.pem" &&
		printf 'right horse battery\n' >"$work/password" &&
		printf 'wrong\n' >"$work/wrong-password" &&
		printf 'other-pw\n' >"$work/other-password" &&
		chmod 600 "$work/password" "$work/wrong-password" "$work/other-password"
}

# etcd's users: root (needed to enable auth), idgend with readwrite on
# /idgen/ only, other with readwrite on /other/ only.
users() {
	etcdctl_ user add root --new-user-password=root-pw >/dev/null &&
		etcdctl_ role add idgend >/dev/null &&
		etcdctl_ role grant-permission idgend --prefix=true readwrite /idgen/ >/dev/null &&
		etcdctl_ user add idgend --new-user-password="right horse battery" >/dev/null &&
		etcdctl_ user grant-role idgend idgend >/dev/null &&
		etcdctl_ role add other >/dev/null &&
		etcdctl_ role grant-permission other --prefix=true readwrite /other/ >/dev/null &&
		etcdctl_ user add other --new-user-password=other-pw >/dev/null &&
		etcdctl_ user grant-role other other >/dev/null &&
		etcdctl_ auth enable >/dev/null
}

# secure NAME ARGS...: an idgend on a simulated generator of its own,
# over TLS as user idgend, unless ARGS say otherwise (a later flag wins).
secure() {
	local name=$1
	shift
	etcd_daemon "$name" --endpoints "$(etcd_endpoints)" \
		--ca-file "$tls/ca.pem" --cert-file "$tls/idgend.pem" \
		--key-file "$tls/idgend.key" --user idgend \
		--password-file "$work/password" "${fast[@]}" "$@"
}

# Worker records that name owner NAME ("unknown" when etcd cannot be
# read: the member's certificate may be expired on purpose, hence no
# verification of it here).
records_of() {
	local out
	out=$(etcdctl_ --insecure-skip-tls-verify get --prefix /idgen/r0/w/ \
		--print-value-only 2>&1) || { echo unknown; return; }
	grep -c "\"owner\":\"$1\"" <<<"$out"
}

fast=(--lease-ms 6000 --renew-ms 1000 --timeout-ms 500 --claim-retry-ms 500)

# refused NAME WHY REGEX ARGS...: idgend started with ARGS gives up
# (exit 1) with a line matching REGEX, having claimed and pushed nothing.
refused() {
	local name=$1 why=$2 regex=$3 rc
	shift 3
	secure "$name" --start-timeout-ms 1500 "$@"
	wait_exit "$name" 20
	rc=$?
	check "$why: exit 1" test "$rc" -eq 1
	check "... the log names the cause" wait_log "$name" "$regex" 1
	check "... nothing claimed or pushed" \
		test "$(pushes "$name")" -eq 0 -a "$(records_of "$name")" = 0 \
		-a -z "$(grep -F 'lease claimed' "$work/$name.log")"
}

echo "TAP version 13"

tap_step "certificates made with openssl" certificates || { echo "1..$n"; exit 1; }
export ETCD_TLS=$tls
# A snapshot after every entry: a restarted member replays none of the
# authentications it applied, so the simple tokens it gave are gone.
ETCD_EXTRA="--snapshot-count 1"
tap_step "an etcd member over TLS with client certificates" etcd_cluster tls 1 ||
	{ echo "1..$n"; exit 1; }
tap_step "users and roles, authentication enabled" users || { echo "1..$n"; exit 1; }

# --- the lease over TLS, as an etcd user -----------------------------------

secure a
check "claimed over TLS as user idgend" wait_log a 'lease claimed: r0/w' 15
check "... renewed" wait_log a 'lease renewed' 5
check "... its record in etcd" test "$(records_of a)" = 1

# The member restarted: the simple tokens it gave are gone.
from=$(log_lines a)
etcd_stop 0
etcd_start 0
etcd_wait 0
check "member restarted: idgend authenticates again" \
	wait_log a 'invalid auth token; authenticating again' 15 "$from"
check "... and renewals go on" wait_log a 'lease renewed' 5 "$from"
check "... without a revoke" test "$(revokes a)" -eq 0

# The password changed in etcd: the token dies with it, renewals fail.
from=$(log_lines a)
etcdctl_ user passwd idgend --interactive=false <<<"another-one" >/dev/null
check "password changed in etcd: the renewal fails, naming the cause" \
	wait_log a 'renewal failed .*authentication failed, invalid user ID or password' 10 "$from"
check "... a failed renewal, not a revoke: the fence stays" test "$(revokes a)" -eq 0
from=$(log_lines a)
cp "$work/password" "$work/password.old"
printf 'another-one\n' >"$work/password.644"
chmod 644 "$work/password.644"
cp -p "$work/password.644" "$work/password"
kill -HUP "${PID[a]}"
check "a new password file readable by others: refused, the old one kept" \
	wait_log a "warning: password_file .*readable by group or others.*stays in force" 5 "$from"
from=$(log_lines a)
chmod 600 "$work/password"
kill -HUP "${PID[a]}"
check "the mended password file read again (SIGHUP, or the next request)" \
	wait_log a 'password_file read again' 5 "$from"
check "... and renewals go on" wait_log a 'lease renewed' 10 "$from"
check "... still without a revoke" test "$(revokes a)" -eq 0
stop a
check "a clean stop" test $? -eq 0
etcdctl_ user passwd idgend --interactive=false <<<"right horse battery" >/dev/null
cp "$work/password.old" "$work/password"

# --- refusals ----------------------------------------------------------------

refused wrong-ca "a CA that did not sign the member's certificate" \
	'TLS: SSL certificate problem: unable to get local issuer certificate' \
	--ca-file "$tls/foreign.pem"
refused intruder "a client certificate of another CA" \
	'TLS: .*(alert (bad certificate|unknown ca)|reset just after the TLS handshake).*refused this host.s client certificate' \
	--cert-file "$tls/intruder.pem" --key-file "$tls/intruder.key"
refused with-cn "a client certificate with a CN" \
	'refuses gateway requests from a client certificate with a common name' \
	--cert-file "$tls/idgend-cn.pem" --key-file "$tls/idgend-cn.key"
refused wrong-password "a wrong password" \
	"etcd refused user 'idgend': etcdserver: authentication failed" \
	--password-file "$work/wrong-password"
refused other-prefix "a role on another prefix" \
	"permission denied: user 'other' has no read and write permission on the keys under /idgen/" \
	--user other --password-file "$work/other-password"
refused expired-client "an expired client certificate" \
	"idgend-expired.pem: the certificate expired at" \
	--cert-file "$tls/idgend-expired.pem" --key-file "$tls/idgend-expired.key"
refused mismatched-key "a key that is not the certificate's" \
	"admin.key: the key does not match the certificate in .*idgend.pem" \
	--key-file "$tls/admin.key"
chmod 640 "$work/wrong-password"
refused readable-password "a password file others can read" \
	"wrong-password: readable by group or others \(mode 0640\)" \
	--password-file "$work/wrong-password"

# The member's certificate expired (etcd reads it at each handshake).
etcd_stop 0
cp "$tls/server-expired.pem" "$tls/server.pem"
cp "$tls/server-expired.key" "$tls/server.key"
etcd_start 0
etcd_wait 0
refused expired-server "the member's certificate expired" \
	'TLS: SSL certificate problem: certificate has expired'

echo "1..$n"
exit "$status"

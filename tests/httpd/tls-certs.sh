#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tls-certs.sh DIR: the certificates idgen-httpd's TLS tests use, made
# with openssl (and faketime, for one whose time is past) in DIR, every
# key P-256 ECDSA (cheap handshakes: the suite shares its cores), keys
# mode 0600:
#
#   ca.pem ca.key            the clients' and the server's CA
#   server.pem server.key    for 127.0.0.1 and localhost (serverAuth only)
#   server2.pem server2.key  the same names, another key: a reload's new pair
#   spiffe.pem spiffe.key    a client of one URI SAN,
#                            spiffe://example.org/ns/orders/sa/order-service
#   unmapped.pem ...         one URI SAN no caller map names,
#                            spiffe://example.org/ns/x/sa/stranger
#   two-uris.pem ...         two URI SANs
#   cn.pem cn.key            no URI SAN, CN billing
#   expired.pem ...          the SPIFFE ID above, expired a day ago
#   foreign.pem ...          the SPIFFE ID above, from another CA (foreign-ca)
#   serveronly.pem ...       a client certificate without clientAuth
#   chain.pem                server.pem, then ca.pem (a whole chain)
#   callers.map              the SPIFFE ID above to order-service
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/certs.sh
. "$(dirname "$0")/../lib/certs.sh"
d=$1
mkdir -p "$d"
cd "$d"

spiffe=spiffe://example.org/ns/orders/sa/order-service
cert_ca ca
cert_ca foreign-ca
cert_leaf server ca /CN=localhost "IP:127.0.0.1,DNS:localhost" serverAuth
cert_leaf server2 ca /CN=localhost "IP:127.0.0.1,DNS:localhost" serverAuth
cert_leaf spiffe ca /O=orders "URI:$spiffe" clientAuth
cert_leaf unmapped ca /O=x "URI:spiffe://example.org/ns/x/sa/stranger" clientAuth
cert_leaf two-uris ca /CN=order-service "URI:$spiffe,URI:spiffe://example.org/ns/x/sa/other" clientAuth
cert_leaf cn ca /CN=billing "" clientAuth
cert_leaf cn-host ca /CN=www.example.com "" clientAuth
cert_leaf cn-mapped ca /CN=order-service "" clientAuth
cert_leaf expired ca /O=orders "URI:$spiffe" clientAuth "3 days ago" 2
cert_leaf foreign foreign-ca /O=orders "URI:$spiffe" clientAuth
cert_leaf serveronly ca /O=orders "URI:$spiffe" serverAuth
cat server.pem ca.pem >chain.pem
printf '# SPIFFE ID -> caller\n%s order-service\n' "$spiffe" >callers.map

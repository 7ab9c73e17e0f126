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
d=$1
mkdir -p "$d"
cd "$d"

# ca NAME: a self-signed CA, NAME.pem and NAME.key.
ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$1.key" -out "$1.pem" -days 30 -subj "/CN=$1" \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
	chmod 600 "$1.key"
}

# leaf NAME CA SUBJECT SAN EKU [AS_OF DAYS]: a certificate CA signed, at
# AS_OF (as date -d takes it; default now) for DAYS days (default 2).
leaf() {
	local name=$1 ca=$2 subject=$3 san=$4 eku=$5 as_of=${6:-} days=${7:-2} fake=()
	[ -n "$as_of" ] && fake=(faketime "$(date -u -d "$as_of" '+%F %T')")
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$name.key" -out "$name.csr" -subj "$subject" 2>/dev/null
	{
		[ -n "$san" ] && echo "subjectAltName=$san"
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=critical,digitalSignature"
		echo "extendedKeyUsage=$eku"
	} >"$name.ext"
	"${fake[@]}" openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" \
		-CAcreateserial -days "$days" -extfile "$name.ext" -out "$name.pem" 2>/dev/null
	rm -f "$name.csr" "$name.ext"
	chmod 600 "$name.key"
}

spiffe=spiffe://example.org/ns/orders/sa/order-service
ca ca
ca foreign-ca
leaf server ca /CN=localhost "IP:127.0.0.1,DNS:localhost" serverAuth
leaf server2 ca /CN=localhost "IP:127.0.0.1,DNS:localhost" serverAuth
leaf spiffe ca /O=orders "URI:$spiffe" clientAuth
leaf unmapped ca /O=x "URI:spiffe://example.org/ns/x/sa/stranger" clientAuth
leaf two-uris ca /CN=order-service "URI:$spiffe,URI:spiffe://example.org/ns/x/sa/other" clientAuth
leaf cn ca /CN=billing "" clientAuth
leaf cn-host ca /CN=www.example.com "" clientAuth
leaf cn-mapped ca /CN=order-service "" clientAuth
leaf expired ca /O=orders "URI:$spiffe" clientAuth "3 days ago" 2
leaf foreign foreign-ca /O=orders "URI:$spiffe" clientAuth
leaf serveronly ca /O=orders "URI:$spiffe" serverAuth
cat server.pem ca.pem >chain.pem
printf '# SPIFFE ID -> caller\n%s order-service\n' "$spiffe" >callers.map

# SPDX-License-Identifier: GPL-2.0
#
# certs.sh: sourced by the suites that make their own certificates, with
# openssl (and faketime, for one whose time is past), in the current
# directory; every key P-256 ECDSA (cheap handshakes: the suites share
# their cores), keys mode 0600.
#
#   cert_ca NAME       a self-signed CA, NAME.pem and NAME.key
#   cert_leaf NAME CA SUBJECT SAN EKU [AS_OF [DAYS]]
#                      NAME.pem and NAME.key, signed by CA (CA.pem and
#                      CA.key here) for SUBJECT ("/O=idgen"), SAN (as
#                      openssl's subjectAltName takes it, or empty) and
#                      EKU (extendedKeyUsage: serverAuth, clientAuth or
#                      both), issued at AS_OF (as date -d takes it;
#                      empty or none: now) for DAYS days (default 2)

cert_ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$1.key" -out "$1.pem" -days 30 -subj "/CN=$1" \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null &&
		chmod 600 "$1.key"
}

cert_leaf() {
	local name=$1 ca=$2 subject=$3 san=$4 eku=$5 as_of=${6:-} days=${7:-2} fake=()
	[ -n "$as_of" ] && fake=(faketime "$(date -u -d "$as_of" '+%F %T')")
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$name.key" -out "$name.csr" -subj "$subject" 2>/dev/null || return 1
	{
		[ -n "$san" ] && echo "subjectAltName=$san"
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=critical,digitalSignature"
		echo "extendedKeyUsage=$eku"
	} >"$name.ext"
	"${fake[@]}" openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" \
		-CAcreateserial -days "$days" -extfile "$name.ext" -out "$name.pem" 2>/dev/null || return 1
	rm -f "$name.csr" "$name.ext"
	chmod 600 "$name.key"
}

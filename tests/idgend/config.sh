#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# config.sh IDGEND: idgend's configuration file and flags, through
# --check-config (which prints the configuration in force) and the exit
# status: 2 and one line naming file, line and key for anything wrong.
# Prints TAP.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
idgend=${1:-$top/helper/idgend/idgend}
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"

mkdir -p "$top/build"
work=$(mktemp -d "$top/build/idgend-config.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# valid NAME TEXT KEY-LINE: the file is valid and --check-config prints
# KEY-LINE ("key = value") exactly.
valid() {
	local out rc
	printf '%b' "$2" >"$work/$1.conf"
	out=$("$idgend" --config "$work/$1.conf" --check-config 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && grep -qxF -- "$3" <<<"$out"; then
		return 0
	fi
	echo "exit $rc, want 0 and the line: $3"
	echo "$out"
	return 1
}

# refused NAME TEXT MESSAGE: exit 2 with MESSAGE on stderr.
refused() {
	local out rc
	printf '%b' "$2" >"$work/$1.conf"
	out=$("$idgend" --config "$work/$1.conf" --check-config 2>&1)
	rc=$?
	if [ $rc -eq 2 ] && grep -qF -- "$3" <<<"$out"; then
		return 0
	fi
	echo "exit $rc, want 2 and: $3"
	echo "$out"
	return 1
}

# flag_refused MESSAGE FLAGS...: the same from the command line.
flag_refused() {
	local out rc want=$1
	shift
	out=$("$idgend" "$@" --check-config 2>&1)
	rc=$?
	if [ $rc -eq 2 ] && grep -qF -- "$want" <<<"$out"; then
		return 0
	fi
	echo "exit $rc, want 2 and: $want"
	echo "$out"
	return 1
}

echo "TAP version 13"

# Eight endpoints make a 350-byte line: inih (200 bytes a line) read its
# tail as a key of its own.  Every URL must be kept, and a bad one at the
# very end seen.
long=$(for i in 1 2 3 4 5 6 7 8; do printf 'http://etcd-%d.cluster.example.internal:2379,' "$i"; done)
long=${long%,}
tap_step "a ${#long}-byte endpoints line is read whole" \
	valid long "[etcd]\nendpoints = $long\n" "endpoints = $long"
tap_step "... a bad URL past its 200th byte is refused" \
	refused long-bad "[etcd]\nendpoints = $long,http://\n" \
	"long-bad.conf:2: [etcd] endpoints: endpoint 'http://' names no host"
pad=$(printf '%*s' 5000 '')
tap_step "a 5000-byte line of blanks around a value" \
	valid blanks "[idgend]\nowner =$pad host-a$pad\n" "owner = host-a"

# An indented line continues a value: for endpoints, more of the list.
tap_step "indented lines continue the endpoints list, none dropped" \
	valid cont "[etcd]\nendpoints = http://10.0.0.1:2379,\n    http://10.0.0.2:2379\n\thttp://10.0.0.3:2379 ; the third\n" \
	"endpoints = http://10.0.0.1:2379,http://10.0.0.2:2379,http://10.0.0.3:2379"
tap_step "... a comment line inside the list is skipped" \
	valid cont-comment "[etcd]\nendpoints = http://10.0.0.1:2379\n# the second:\n    http://10.0.0.2:2379\n" \
	"endpoints = http://10.0.0.1:2379,http://10.0.0.2:2379"
tap_step "an indented line under a key that takes one value is refused" \
	refused cont-scalar "[idgend]\nlease_ms = 60000\n  120000\n" \
	"cont-scalar.conf:2: [idgend] lease_ms: an indented line continues its value"
tap_step "a key given twice is refused, naming both lines" \
	refused twice "[etcd]\nendpoints = http://10.0.0.1:2379\n\nendpoints = http://10.0.0.2:2379\n" \
	"twice.conf:4: [etcd] endpoints is given twice (line 2 first)"

# What the file may look like otherwise.
tap_step "CRLF line ends and a byte-order mark" \
	valid crlf "\xef\xbb\xbf[idgend]\r\nregion = 3\r\n" "region = 3"
tap_step "comments: ';' and '#' lines, ';' after a value" \
	valid comments "; a\n# b\n[idgend] ; c\nregion = 4 ; d\n" "region = 4"
tap_step "a ';' right after the '=' starts a comment too: the value is empty" \
	refused comment-at-value "[idgend]\nowner =;;;;x\n" "comment-at-value.conf:2: [idgend] owner: empty value"
tap_step "... while a ';' inside a value is part of it" \
	valid semicolon-inside "[idgend]\nowner = a;b\n" "owner = a;b"
tap_step "an unknown section is refused" \
	refused section "[idgen]\nregion = 1\n" "section.conf:1: unknown section [idgen]"
tap_step "a key before any section is refused" \
	refused nosection "region = 1\n" "nosection.conf:1: key 'region' before any [section]"
tap_step "a NUL byte is refused" \
	refused nul "[idgend]\nowner = a\0b\n" "nul.conf:2: a NUL byte"
tap_step "a control character is refused" \
	refused ctl "[idgend]\nowner = a\033b\n" "ctl.conf:2: a control character (byte 0x1b)"
tap_step "a line without '=' is refused" \
	refused noeq "[idgend]\nregion 1\n" "noeq.conf:2: not a 'key = value' line"
tap_step "text after a section header is refused" \
	refused header "[idgend] region = 1\n" "header.conf:1: text after the section header"

# Numbers: the shared decimal rule.
for bad in 060000 +60000 " 6e4" 60000x 18446744073709551616; do
	tap_step "lease_ms = '$bad' is refused" \
		refused num "[idgend]\nlease_ms = $bad\n" \
		"num.conf:2: [idgend] lease_ms: '${bad# }' is not a whole number from 1000 to 86400000"
done
tap_step "--region 07: a leading zero is refused" \
	flag_refused "--region: '07' is not a whole number from 0 to 255" --region 07

# Endpoints must be URLs that name a host.
for url in http:// https:// http://:2379 http://h:0 http://h:65536 http://h:2379x \
	http://h: "http://[::1" "http://[]:2379" http://u@h:2379 http://h%41 ftp://h; do
	tap_step "endpoints = '$url' is refused" \
		flag_refused "endpoint '${url%% *}'" --endpoints "$url"
done
tap_step "endpoints: a name, IPv4, [IPv6], a port, a path" \
	valid urls "[etcd]\nendpoints = http://etcd.example:2379,http://10.1.2.3,http://[::1]:2379/x\n" \
	"endpoints = http://etcd.example:2379,http://10.1.2.3,http://[::1]:2379/x"
tap_step "endpoints: https:// ones" \
	valid urls-tls "[etcd]\nendpoints = https://etcd.example:2379,HTTPS://10.1.2.3\n" \
	"endpoints = https://etcd.example:2379,HTTPS://10.1.2.3"

# TLS and etcd users: pairs, and https:// endpoints only.
tls=(--mode etcd --endpoints https://10.0.0.1:2379)
tap_step "endpoints mixing https:// and http:// are refused" \
	flag_refused "endpoints: 1 of 2 are https:// and the others http://" \
	--endpoints https://10.0.0.1:2379,http://10.0.0.2:2379
tap_step "cert_file without key_file is refused" \
	flag_refused "cert_file and key_file go together: cert_file is given without key_file" \
	"${tls[@]}" --cert-file /etc/idgen/etcd.pem
tap_step "key_file without cert_file is refused" \
	flag_refused "cert_file and key_file go together: key_file is given without cert_file" \
	"${tls[@]}" --key-file /etc/idgen/etcd.key
tap_step "user without password_file is refused" \
	flag_refused "user and password_file go together: user is given without password_file" \
	"${tls[@]}" --user idgend
tap_step "there is no password key or flag: only password_file" \
	flag_refused "unknown option '--password'" "${tls[@]}" --password secret
for key in ca-file cert-file user; do
	extra=()
	[ "$key" = cert-file ] && extra=(--key-file k)
	[ "$key" = user ] && extra=(--password-file p)
	tap_step "--$key with http:// endpoints is refused" \
		flag_refused "${key//-/_} is given, but the endpoints are http://" \
		--mode etcd --"$key" x "${extra[@]}"
done
tap_step "the TLS and user keys print and read back" \
	valid tls-keys "[etcd]\nendpoints = https://10.0.0.1:2379\nca_file = /etc/idgen/ca.pem\ncert_file = etcd.pem\nkey_file = etcd.key\nuser = idgend\npassword_file = etcd-password\n" \
	"password_file = etcd-password"

# The owner: the message says what is wrong with it.
tap_step "an owner with '\"' is refused as such" \
	flag_refused "owner 'a\"b' must not contain '\"'" --owner 'a"b'
tap_step "an owner of 128 bytes is refused as too long" \
	flag_refused "must be shorter than 128 bytes" --owner "$(printf 'h%.0s' {1..128})"
tap_step "an owner that is not UTF-8 (Latin-1) is refused" \
	flag_refused "must be UTF-8" --owner "$(printf 'h\366st')"
tap_step "an owner with a newline is refused" \
	flag_refused "must not contain control characters" --owner $'a\nb'

# Only a regular file is a configuration.
out=$("$idgend" --config "$work" --check-config 2>&1)
rc=$?
check "--config DIRECTORY: exit 2, 'is a directory'" \
	test $rc -eq 2 -a -n "$(grep -F "$work: is a directory" <<<"$out")"
out=$("$idgend" --config /dev/null --check-config 2>&1)
rc=$?
check "--config /dev/null: exit 2, 'is not a regular file'" \
	test $rc -eq 2 -a -n "$(grep -F "/dev/null: is not a regular file" <<<"$out")"
out=$("$idgend" --config "$work/none.conf" --check-config 2>&1)
rc=$?
check "--config of a missing file: exit 2" \
	test $rc -eq 2 -a -n "$(grep -F "cannot read $work/none.conf: No such file" <<<"$out")"

# What --check-config prints is a configuration that gives the same.
"$idgend" --config "$top/helper/idgend/idgend.conf" --mode etcd --endpoints "$long" \
	--check-config >"$work/printed.conf" 2>&1
"$idgend" --config "$work/printed.conf" --check-config >"$work/printed2.conf" 2>&1
check "--check-config prints a configuration that reads back the same" \
	diff <(tail -n +2 "$work/printed.conf") <(tail -n +2 "$work/printed2.conf")

echo "1..$n"
exit "$status"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh: build libidgen, idgenctl and the user-space tests, then run every
# host-side test (no /dev/idgen needed): the C unit tests, the examples
# the documentation shows, the JavaScript round trip (node), the
# PostgreSQL range query and booking codes, and libFuzzer slices over the
# code and public-ID parsers.  Prints one TAP stream, numbered across all of
# them; exits non-zero if anything failed.
set -uo pipefail
# Its simulated workers are its own: a /dev/shm of its own.
# shellcheck source=../lib/own-namespaces.sh
. "$(dirname "$0")/../lib/own-namespaces.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
user=$top/tests/libidgen
idgenctl=$top/helper/idgenctl/idgenctl
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

echo "TAP version 13"
tap_step "build lib/ (libidgen.a, libidgen.so.0, idgen.pc)" make -j1 -C "$top/lib" || { echo "1..$n"; exit 1; }
tap_step "build helper/idgenctl" make -j1 -C "$top/helper/idgenctl" || { echo "1..$n"; exit 1; }
tap_step "build tests/libidgen" make -j1 -C "$user" || { echo "1..$n"; exit 1; }
tap_step "libidgen.so exports idgen_* only" bash -c "
	nm -D --defined-only '$top/lib/libidgen.so.0' | awk '\$2 != \"A\" {print \$3}' |
	grep -v '^idgen_' && exit 1 || exit 0"
# After a plain make, whose .pc files say /usr/local: installed, they say /usr.
tap_step "make install DESTDIR=... PREFIX=/usr: header, libs, pkg-config, man page" bash -c "
	make -s -C '$top/lib' install DESTDIR='$tmp/root' PREFIX=/usr &&
	test -f '$tmp/root/usr/include/idgen.h' && test -L '$tmp/root/usr/lib/libidgen.so' &&
	test -f '$tmp/root/usr/share/man/man3/libidgen.3' &&
	grep -qx 'Libs: -L\${libdir} -lidgen' '$tmp/root/usr/lib/pkgconfig/idgen.pc' &&
	grep -qx 'prefix=/usr' '$tmp/root/usr/lib/pkgconfig/idgen.pc'"
tap_step "a program builds and runs against the installed shared library" bash -c "
	printf '#include <idgen.h>\nint main(void){uint64_t id; return idgen_min_id_at(LIBIDGEN_EPOCH_UNIX_MS + 1, &id) || id != 4194304;}\n' > '$tmp/p.c' &&
	cc -Wall -Werror -I'$tmp/root/usr/include' -o '$tmp/p' '$tmp/p.c' -L'$tmp/root/usr/lib' -lidgen &&
	LD_LIBRARY_PATH='$tmp/root/usr/lib' '$tmp/p'"
tap_step "public IDs and codes from the installed library: shared, and static as pkg-config --static says" bash -c "
	printf '%s\\n' '#include <idgen.h>' '#include <string.h>' 'int main(void){' \\
		'struct idgen_keyring *kr; uint8_t k[32] = {0}; char p[LIBIDGEN_PUBLIC_STRLEN], c[LIBIDGEN_CODE_STRLEN]; uint64_t id, v;' \\
		'if (idgen_keyring_new(&kr) || idgen_keyring_add(kr, 1, k) || idgen_public_encode(kr, 42, p) <= 0) return 1;' \\
		'if (idgen_public_decode(kr, p, &id) || id != 42 || idgen_code_new(&v, 1)) return 1;' \\
		'idgen_code_format(v, c); idgen_keyring_free(kr); return idgen_code_parse(c, &id) || id != v; }' > '$tmp/pub.c' &&
	cc -Wall -Werror -I'$tmp/root/usr/include' -o '$tmp/pub' '$tmp/pub.c' -L'$tmp/root/usr/lib' -lidgen &&
	LD_LIBRARY_PATH='$tmp/root/usr/lib' '$tmp/pub' &&
	libs=\$(PKG_CONFIG_PATH='$tmp/root/usr/lib/pkgconfig' pkg-config --static --libs idgen) &&
	echo \"\$libs\" | grep -qw -- -lcrypto &&
	cc -Wall -Werror -I'$tmp/root/usr/include' -o '$tmp/pub-static' '$tmp/pub.c' \\
		'$tmp/root/usr/lib/libidgen.a' \$(echo \"\$libs\" | sed 's/-L[^ ]*//; s/-lidgen//') &&
	'$tmp/pub-static' && ! ldd '$tmp/pub-static' | grep -q libidgen"

# C unit tests (kselftest harness).
tap_run unit "$user/unit"
# What is not idgen's device where sysfs cannot tell (a container without
# /sys): the state request decides.  A tmpfs over /sys in a mount
# namespace of its own, as root only.
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	# shellcheck disable=SC2016 # $1 is sh -c's
	tap_run "unit, no sysfs" unshare -m sh -c 'mount -t tmpfs none /sys && exec "$1" -r not_idgen.verify_fd -r not_idgen.open_verify' sh "$user/unit"
else
	tap_skip "unit, no sysfs: not idgen's device, told by the state request" "needs root and unshare -m"
fi
# The buffer across fork(), _Fork(), clone(), clone3() and PID namespaces
# (those skipped without CAP_SYS_ADMIN).
tap_run buffer_fork "$user/buffer_fork"
# ... and a copy of the library that did not make it (dlclose, dlopen).
tap_run buffer_reload "$user/buffer_reload" "$top/lib/libidgen.so.0"
# ... and its age bound across a forward step of the wall clock.
tap_run buffer_step "$user/buffer_step"
tap_run public "$user/public_test"
tap_run code "$user/code_test"
tap_run ff1_busy "$user/ff1_busy_test"
tap_run sim "$user/sim_test"
tap_run generator "$user/generator_test"

# idgenctl: bad use exits 1 with the usage on stderr; bad IDs are named.
cli() {
	local desc=$1 want_rc=$2 want_err=$3 rc
	shift 3
	"$idgenctl" "$@" >"$tmp/cli.out" 2>"$tmp/cli.err"
	rc=$?
	if [ $rc -eq "$want_rc" ] && grep -qF -- "$want_err" "$tmp/cli.err"; then
		ok "idgenctl $desc"
	else
		not_ok "idgenctl $desc (exit $rc)"
		sed 's/^/# /' "$tmp/cli.err"
	fi
}
cli "without a command: usage on stderr, exit 1" 1 "Usage: idgenctl"
cli "unknown command" 1 "invalid subcommand 'frob'" frob
cli "decode without IDs" 1 "Usage: idgenctl decode" decode
for bad in 12a " 1" "+1" "" "-1" "01" "1 "; do
	cli "decode '$bad' is refused" 1 "decode: '$bad' is not a decimal ID" decode "$bad"
done
cli "decode 9223372036854775808 is out of range" 1 \
	"'9223372036854775808' is out of range" decode 9223372036854775808
cli "min-id-at a bad time" 1 "min-id-at: '2026-02-30T00:00:00Z' is not a time" \
	min-id-at 2026-02-30T00:00:00Z
cli "min-id-at past the range" 1 "lies after the last millisecond" min-id-at 2095-09-07T15:47:35.552Z
cli "mint --raw --json" 1 "exclude each other" mint --raw --json
cli "a bad layouts file names the line" 1 "line 1: bad widths 3/10/8" \
	--layouts <(echo "2 1000 3 10 8") decode 0
for bad in 007 +8 " 8" 8x; do
	cli "mint -n '$bad' is refused (the shared decimal rule)" 1 \
		"invalid -n '$bad': not a decimal number" mint -n "$bad"
done
cli "mint -n 0 is out of range" 1 "invalid -n '0': out of range (1 to" mint -n 0
cli "lease set --layout 03/7/12 is refused" 1 "invalid --layout '03/7/12'" \
	lease set --layout 03/7/12 --region 0 --worker 0 --valid-for 1000
cli "mint without a device" 1 "no idgen device" --device /nonexistent mint
tap_step "idgenctl decode: the edges" bash -c "
	out=\$('$idgenctl' decode 0 9223372036854775807) &&
	[ \"\$out\" = '0  2026-01-01T00:00:00.000Z region 0 worker 0 seq 0 layout 1
9223372036854775807  2095-09-07T15:47:35.551Z region 7 worker 127 seq 4095 layout 1' ]"
# The contract's example (Documentation/design.md section 9), in the one
# JSON shape.
tap_step "idgenctl decode --json 108421920055775237: the contract's example, field for field" bash -c "
	out=\$('$idgenctl' decode --json 108421920055775237) &&
	[ \"\$out\" = '[{\"id\":\"108421920055775237\",\"created_at\":\"2026-10-27T04:30:00.123Z\",\"region\":1,\"worker\":37,\"sequence\":5,\"layout_version\":1,\"ms\":25849800123,\"unix_ms\":1793075400123}]' ]"
tap_step "idgenctl min-id-at: epoch, before it, RFC 3339 with an offset, Unix ms, now" bash -c "
	[ \$('$idgenctl' min-id-at 2026-01-01T00:00:00Z) = 0 ] &&
	[ \$('$idgenctl' min-id-at 2025-06-01T00:00:00Z) = 0 ] &&
	[ \$('$idgenctl' min-id-at 2026-01-01T02:00:00.001+02:00) = 4194304 ] &&
	[ \$('$idgenctl' min-id-at 1767225600001) = 4194304 ] &&
	[ \$('$idgenctl' min-id-at 2095-09-07T15:47:35.551Z) = \$(( (1 << 41) - 1 << 22 )) ] &&
	now=\$('$idgenctl' min-id-at now) && [ \$now -gt 0 ]"
tap_step "idgenctl --layouts: decoding picks the layout by the ID's time" bash -c "
	printf '# test\n2 1000 3 10 9\n' > '$tmp/layouts' &&
	id=\$(( (1000 << 22) | (5 << 19) | (1000 << 9) | 511 )) &&
	'$idgenctl' --layouts '$tmp/layouts' decode \$id | grep -q 'region 5 worker 1000 seq 511 layout 2' &&
	id=\$(( (999 << 22) | (5 << 19) | (100 << 12) | 7 )) &&
	'$idgenctl' --layouts '$tmp/layouts' decode \$id | grep -q 'region 5 worker 100 seq 7 layout 1'"

# idgenctl public and code (Documentation/design.md section 10).
(umask 077
 printf '1 %s\n' 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f >"$tmp/k1"
 printf '2 %s\n' 1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100 >"$tmp/k2")
printf '3 %s\n' 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f >"$tmp/k3"
chmod 644 "$tmp/k3"
printf '4 0001\n' >"$tmp/k4"
chmod 600 "$tmp/k4"
cli "public encode without a key" 1 "a key file is needed (--key FILE)" public encode 1
cli "public encode: a key file readable by others is refused, named" 1 \
	"key file $tmp/k3: readable by group or others (mode 0644)" public encode --key "$tmp/k3" 1
printf '5 %s\r\n' 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f >"$tmp/k5"
chmod 620 "$tmp/k5"
cli "public encode: a key file writable by group is refused, named" 1 \
	"key file $tmp/k5: writable by group or others (mode 0620)" public encode --key "$tmp/k5" 1
chmod 600 "$tmp/k5"
cli "public encode: a CR LF line end is named" 1 \
	"key file $tmp/k5: not a key file: the line ends in CR LF" public encode --key "$tmp/k5" 1
mkfifo "$tmp/fifo"
cli "public encode: a FIFO is not a key file (and does not hang)" 1 \
	"key file $tmp/fifo: not a regular file" public encode --key "$tmp/fifo" 1
cli "public encode: a malformed key file is named" 1 \
	"key file $tmp/k4: not a key file: the key is 4 hex digits, want 64" public encode --key "$tmp/k4" 1
cli "public encode: a missing key file" 1 "key file $tmp/none: No such file" public encode --key "$tmp/none" 1
cli "public encode: a bad ID" 1 "public encode: '01' is not a decimal ID" public encode --key "$tmp/k1" 01
cli "public decode: an unknown key version" 1 "'v9.5' names a key version no --key file holds" \
	public decode --key "$tmp/k1" v9.5
cli "public decode: not a public ID" 1 "'x5' is not a public ID" public decode --key "$tmp/k1" x5
cli "public decode: out of range" 1 "'9223372036854775808' is out of range" \
	public decode --key "$tmp/k1" 9223372036854775808
cli "code new -n 0 is out of range" 1 "invalid -n '0': out of range" code new -n 0
cli "code check: a wrong check symbol is a mistyped code" 1 \
	"'0000-0000-1': the check symbol does not match" code check 0000-0000-1
cli "code check: not a code" 1 "'0000-000' is not a booking code" code check 0000-000
cli "code check without a code" 1 "Usage: idgenctl code check" code check
tap_step "idgenctl public: encode and decode round trip at the edges, across a rotation" bash -c "
	ids='0 1 9223372036854775807 108421920055775237' &&
	pubs=\$('$idgenctl' public encode --key '$tmp/k1' \$ids) &&
	[ \"\$(echo \$('$idgenctl' public decode --key '$tmp/k1' \$pubs))\" = \"\$ids\" ] &&
	for p in \$pubs; do case \$p in *[!0-9]*) exit 1;; esac; done &&
	v1=\$(for p in \$pubs; do echo v1.\$p; done) &&
	[ \"\$(echo \$('$idgenctl' public decode --key '$tmp/k2' --key '$tmp/k1' \$v1))\" = \"\$ids\" ] &&
	new=\$('$idgenctl' public encode --key '$tmp/k1' --key '$tmp/k2' \$ids) &&
	[ \"\$new\" != \"\$pubs\" ] &&
	[ \"\$(echo \$('$idgenctl' public decode --key '$tmp/k2' --key '$tmp/k1' \$new))\" = \"\$ids\" ]"
cli "public encode --current: a version no key file holds" 1 \
	"--current 3: no --key file holds key version 3" public encode --key "$tmp/k1" --current 3 1
cli "public encode --current: not a version" 1 "invalid --current 'x'" \
	public encode --key "$tmp/k1" --current x 1
cli "public encode --all-versions is decode's" 1 "unexpected option '--all-versions'" \
	public encode --key "$tmp/k1" --all-versions 1
tap_step "idgenctl public: a rolling rotation, the new key loaded first, then made current" bash -c "
	ids='0 108421920055775237' &&
	old=\$('$idgenctl' public encode --key '$tmp/k1' \$ids) &&
	[ \"\$('$idgenctl' public encode --key '$tmp/k1' --key '$tmp/k2' --current 1 \$ids)\" = \"\$old\" ] &&
	[ \"\$(echo \$('$idgenctl' public decode --key '$tmp/k2' --key '$tmp/k1' --current 1 \$old))\" = \"\$ids\" ] &&
	new=\$('$idgenctl' public encode --key '$tmp/k1' --key '$tmp/k2' --current=2 \$ids) &&
	[ \"\$new\" = \"\$('$idgenctl' public encode --key '$tmp/k1' --key '$tmp/k2' \$ids)\" ] &&
	[ \"\$new\" != \"\$old\" ]"
tap_step "idgenctl public decode --all-versions: every candidate, the current version first" bash -c "
	p=\$('$idgenctl' public encode --key '$tmp/k1' 42) &&
	out=\$('$idgenctl' public decode --all-versions --key '$tmp/k1' --key '$tmp/k2' \$p v1.\$p) &&
	other=\$('$idgenctl' public decode --key '$tmp/k1' --key '$tmp/k2' v2.\$p) &&
	[ \"\$out\" = \"\$other version 2
42 version 1
42 version 1\" ] &&
	out=\$('$idgenctl' public decode --key '$tmp/k1' --key '$tmp/k2' --current 1 --all-versions \$p) &&
	[ \"\$out\" = \"42 version 1
\$other version 2\" ]"
tap_step "idgenctl code check: the example README and libidgen(3) show" bash -c "
	[ \"\$('$idgenctl' code check '7kq3 m0xd 8')\" = 7KQ3-M0XD-8 ] &&
	grep -qF \"idgenctl code check '7kq3 m0xd 8'                             # 7KQ3-M0XD-8\" '$top/README.md' &&
	grep -qF 'idgen_code_parse(\"7kq3 m0xd 8\", &c)' '$top/lib/libidgen.3'"
tap_step "idgenctl code: new codes check, forgiving input comes back canonical" bash -c "
	'$idgenctl' code new -n 1000 >'$tmp/codes' && [ \$(sort -u '$tmp/codes' | wc -l) -eq 1000 ] &&
	grep -Evq '^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z*~\$=U]\$' '$tmp/codes' && exit 1
	xargs '$idgenctl' code check <'$tmp/codes' | cmp - '$tmp/codes' &&
	[ \"\$('$idgenctl' code check 'ioil olio j' 1O1L-OLIO-J)\" = '1011-0110-J
1011-0110-J' ]"

# Every example output the README and the man pages show, run.
tap_run docs /usr/bin/python3 "$user/doc_examples.py" "$idgenctl" "$top"

# JavaScript: JSON from idgenctl parsed by JSON.parse, decoded with BigInt.
printf '%s\n' \
	"2026-01-01T00:00:00.000Z 0 0 0" "2026-01-01T00:00:00.000Z 7 127 4095" \
	"2026-01-01T00:00:00.001Z 0 0 0" "2026-01-25T22:11:53.216Z 1 1 1" \
	"2026-03-15T12:34:56.789Z 3 42 17" "2026-11-29T21:40:01.123Z 5 77 4094" \
	"2026-10-27T04:30:00.123Z 1 37 5" \
	"2095-09-07T15:47:35.551Z 7 127 4095" > "$tmp/fields"
if command -v node >/dev/null; then
	"$user/mkids" <"$tmp/fields" >"$tmp/ids" &&
	"$idgenctl" decode --json $(cat "$tmp/ids") >"$tmp/decoded.json" &&
	for t in 2025-12-31T23:59:59.999Z 2026-01-01T00:00:00Z 2026-03-15T00:00:00Z \
		 2026-03-15T00:00:00.001Z 2095-09-07T15:47:35.551Z; do
		echo "$t $("$idgenctl" min-id-at "$t")"
	done >"$tmp/min"
	if [ -s "$tmp/min" ] && [ -s "$tmp/decoded.json" ]; then
		tap_run js node "$user/js_roundtrip.mjs" "$tmp/decoded.json" "$tmp/min"
	else
		not_ok "js: the fixture from mkids and idgenctl"
	fi
else
	not_ok "js: node not found (install nodejs: scripts/deps.sh)"
fi

# The code and public-ID parsers under libFuzzer: a fixed seed and run
# count, so a run is repeatable; new inputs go to $tmp, a crashing one to
# build/fuzz-crashes/ to replay.
if tap_step "build the libidgen fuzz targets (clang, libFuzzer, ASan, UBSan)" \
	make -s -C "$user" fuzz; then
	for t in code public; do
		mkdir -p "$tmp/fuzz_$t" "$top/build/fuzz-crashes"
		tap_step "fuzz_$t: 1000000 fuzzed inputs, no crash, leak or disagreement" \
			"$top/build/libidgen-fuzz/fuzz_$t" -seed=1 -runs=1000000 -max_len=256 \
			-artifact_prefix="$top/build/fuzz-crashes/fuzz_$t-" \
			"$tmp/fuzz_$t" "$user/corpus-$t"
	done
fi

# The keyring shared by threads while key versions are added, under
# ThreadSanitizer: any data race fails the run (exit code 66).
if tap_step "build public_race under ThreadSanitizer (clang)" make -s -C "$user" tsan; then
	tap_step "public_race: encode and decode in threads while versions are added, no data race" \
		env TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$top/build/libidgen-fuzz/public_race"
fi

# PostgreSQL.
tap_run pg "$user/pg_range.sh"

echo "1..$n"
exit $status

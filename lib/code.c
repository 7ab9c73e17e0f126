// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Booking codes (Documentation/design.md section 10): 40 random bits as 8
 * Crockford base32 symbols and a check symbol, the value mod 37, written
 * "XXXX-XXXX-C".
 *
 * Why mod 37 catches every single substitution and every transposition of
 * neighbours: a substitution in symbol k changes the value by e * 32^k
 * with 0 < |e| < 32, a transposition of symbols k+1 and k by
 * (a - b) * 31 * 32^k; 37 is prime and divides none of these factors.  A
 * check symbol swapped with the last data symbol x gives check x only if
 * 2c = 2x mod 37, i.e. c = x, no change at all.
 */
#include <errno.h>
#include <sys/random.h>

#include "internal.h"

#define CODE_SYMBOLS	8
#define CODE_CHECK_MOD	37

/* Values 0..31 are data symbols, 32..36 only check symbols. */
static const char symbols[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U";

IDGEN_EXPORT int idgen_code_format(uint64_t code, char buf[LIBIDGEN_CODE_STRLEN])
{
	int i, pos = 0;

	if (code > LIBIDGEN_CODE_MAX)
		return -ERANGE;
	for (i = CODE_SYMBOLS - 1; i >= 0; i--) {
		buf[pos++] = symbols[code >> (5 * i) & 31];
		if (i == 4)
			buf[pos++] = '-';
	}
	buf[pos++] = '-';
	buf[pos++] = symbols[code % CODE_CHECK_MOD];
	buf[pos] = '\0';
	return pos;
}

/* Letters A to Z read the forgiving way: I and L are 1, O is 0, U is 36. */
static const signed char letters[26] = {
	10, 11, 12, 13, 14, 15, 16, 17, 1, 18, 19, 1, 20,
	21, 0, 22, 23, 24, 25, 26, 36, 27, 28, 29, 30, 31,
};

/* A symbol's value, or -1. */
static int symbol_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return letters[c - 'a'];
	if (c >= 'A' && c <= 'Z')
		return letters[c - 'A'];
	switch (c) {
	case '*':
		return 32;
	case '~':
		return 33;
	case '$':
		return 34;
	case '=':
		return 35;
	}
	return -1;
}

IDGEN_EXPORT int idgen_code_parse(const char *s, uint64_t *code)
{
	uint64_t v = 0;
	int n = 0, val, check = -1;

	if (!s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s == '-' || *s == ' ')
			continue;
		val = symbol_value(*s);
		if (val < 0 || n > CODE_SYMBOLS)
			return -EINVAL;
		if (n < CODE_SYMBOLS) {
			/* The check-only symbols are not data. */
			if (val >= 32)
				return -EINVAL;
			v = v << 5 | val;
		} else {
			check = val;
		}
		n++;
	}
	if (n != CODE_SYMBOLS + 1)
		return -EINVAL;
	if ((uint64_t)check != v % CODE_CHECK_MOD)
		return -EBADMSG;
	*code = v;
	return 0;
}

IDGEN_EXPORT int idgen_code_new(uint64_t *codes, size_t n)
{
	uint8_t buf[5 * 64];
	size_t i, j, chunk, got;
	ssize_t r;

	while (n) {
		chunk = n < 64 ? n : 64;
		for (got = 0; got < 5 * chunk; got += r) {
			/* The kernel's CSPRNG; blocks only before it is seeded at boot. */
			r = getrandom(buf + got, 5 * chunk - got, 0);
			if (r < 0) {
				if (errno == EINTR) {
					r = 0;
					continue;
				}
				return -errno;
			}
		}
		for (i = 0; i < chunk; i++) {
			uint64_t v = 0;

			for (j = 0; j < 5; j++)
				v = v << 8 | buf[5 * i + j];
			*codes++ = v;
		}
		n -= chunk;
	}
	return 0;
}

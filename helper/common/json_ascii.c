// SPDX-License-Identifier: GPL-2.0
/*
 * JSON text made ASCII only (json_ascii.h says why).
 *
 * A small lexer, not a parser: it only tracks whether a byte is inside a
 * string and whether it follows a backslash there, which is all it takes
 * to know that a \uXXXX escape means the same as the raw character.  The
 * JSON itself is checked by json-c afterwards.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "json_ascii.h"

enum lex { OUTSIDE, IN_STRING, AFTER_BACKSLASH };

/*
 * Decodes the UTF-8 sequence at s (n bytes left) into *cp; returns its
 * length, or 0 when it is malformed (RFC 3629: shortest form only, no
 * surrogates, nothing past U+10FFFF).
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t len, i;
	uint32_t c;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		c = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min[len] || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	*cp = c;
	return len;
}

bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i, n;
	uint32_t cp;

	for (i = 0; i < len; i += n) {
		n = u[i] < 0x80 ? 1 : utf8_decode(u + i, len - i, &cp);
		if (!n)
			return false;
	}
	return true;
}

int json_ascii(const char *in, size_t len, char **out, size_t *out_len,
	       size_t *at, const char **why)
{
	const unsigned char *s = (const unsigned char *)in;
	enum lex lex = OUTSIDE;
	size_t i, n, o = 0;
	uint32_t cp;
	char *buf;

	*out = NULL;
	*out_len = 0;
	for (i = 0; i < len && s[i] < 0x80; i++)
		;
	if (i == len)
		return 0;
	/* At most 3 output bytes per input byte: 2 bytes -> \uXXXX. */
	if (len > (SIZE_MAX - 1) / 3)
		return -ENOMEM;
	buf = malloc(len * 3 + 1);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < len; i += n) {
		if (s[i] < 0x80) {
			n = 1;
			if (lex == AFTER_BACKSLASH)
				lex = IN_STRING;
			else if (lex == IN_STRING && s[i] == '\\')
				lex = AFTER_BACKSLASH;
			else if (s[i] == '"')
				lex = lex == OUTSIDE ? IN_STRING : OUTSIDE;
			buf[o++] = (char)s[i];
			continue;
		}
		if (lex != IN_STRING) {
			*why = lex == OUTSIDE ? "a non-ASCII byte outside a string" :
						"a non-ASCII byte after a backslash";
			goto bad;
		}
		n = utf8_decode(s + i, len - i, &cp);
		if (!n) {
			*why = "malformed UTF-8";
			goto bad;
		}
		if (cp >= 0x10000) {
			cp -= 0x10000;
			o += sprintf(buf + o, "\\u%04x\\u%04x",
				     0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
		} else {
			o += sprintf(buf + o, "\\u%04x", cp);
		}
	}
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	return 0;
bad:
	*at = i;
	free(buf);
	return -EILSEQ;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * JSON text made ASCII only: every non-ASCII character inside a string
 * written as a \uXXXX escape (a surrogate pair past U+FFFF).
 *
 * Why: json-c 0.18 (Debian 13) in JSON_TOKENER_STRICT mode rejects every
 * raw byte >= 0x80 inside a string (its control-character check compares
 * a signed char), while 0.16 (Debian 12) accepts them; the escaped form
 * means the same to every JSON reader and both versions parse it
 * strictly.  So what we write is ASCII, and what we read is made ASCII
 * before json-c sees it.
 */
#ifndef IDGEN_JSON_ASCII_H
#define IDGEN_JSON_ASCII_H

#include <stdbool.h>
#include <stddef.h>

/* Whether len bytes at s are well-formed UTF-8 (RFC 3629). */
bool utf8_valid(const char *s, size_t len);

/*
 * Rewrites len bytes of JSON text.  Returns 0 with *out NULL when the text
 * is ASCII already (nothing to rewrite), 0 with *out a NUL-terminated
 * malloc'd copy of *out_len bytes when it rewrote, -ENOMEM, or -EILSEQ
 * with *at the offset of the offending byte and *why what is wrong there:
 * malformed UTF-8 (overlong, a surrogate, past U+10FFFF, truncated), or a
 * non-ASCII byte outside a string or right after a backslash (JSON allows
 * neither, and escaping it there would turn wrong text into right text).
 */
int json_ascii(const char *in, size_t len, char **out, size_t *out_len,
	       size_t *at, const char **why);

#endif

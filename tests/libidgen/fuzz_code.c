// SPDX-License-Identifier: GPL-2.0
/*
 * A libFuzzer target for the booking-code parser (lib/code.c), against a
 * reference written the slow, obvious way from the contract's words
 * (Documentation/design.md section 10).  Both must agree on every input; what
 * is accepted must format to a canonical code that reads back the same.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "idgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char data_symbols[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
static const char check_symbols[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U";

/* 0, -EINVAL or -EBADMSG. */
static int reference(const char *s, uint64_t *out)
{
	char sym[64];
	size_t n = 0, i;
	uint64_t v = 0;
	const char *p;

	for (; *s; s++) {
		char c = toupper((unsigned char)*s);

		if (*s == '-' || *s == ' ')
			continue;
		if (!isascii((unsigned char)*s))
			return -EINVAL;
		if (c == 'I' || c == 'L')
			c = '1';
		if (c == 'O')
			c = '0';
		if (n == sizeof(sym))
			return -EINVAL;
		sym[n++] = c;
	}
	if (n != 9)
		return -EINVAL;
	for (i = 0; i < 8; i++) {
		p = strchr(data_symbols, sym[i]);
		if (!sym[i] || !p)
			return -EINVAL;
		v = v * 32 + (uint64_t)(p - data_symbols);
	}
	p = strchr(check_symbols, sym[8]);
	if (!sym[8] || !p)
		return -EINVAL;
	if ((uint64_t)(p - check_symbols) != v % 37)
		return -EBADMSG;
	*out = v;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), buf[LIBIDGEN_CODE_STRLEN];
	uint64_t got = 0, want = 0, again;
	int r, w;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	r = idgen_code_parse(s, &got);
	w = reference(s, &want);
	if (r != w || (!r && got != want))
		abort();
	if (!r) {
		if (got > LIBIDGEN_CODE_MAX || idgen_code_format(got, buf) != 11 ||
		    idgen_code_parse(buf, &again) || again != got)
			abort();
	}
	free(s);
	return 0;
}

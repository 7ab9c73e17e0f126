// SPDX-License-Identifier: GPL-2.0
/*
 * A libFuzzer target for the one decimal parser (lib/decimal.h), against
 * a reference written the slow, obvious way: the first 16 bytes choose
 * the bounds, the rest is the text.  Both must agree on every input, and
 * what is accepted must be the canonical spelling of its value.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decimal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 0, -EINVAL or -ERANGE, by the rule in words. */
static int reference(const char *s, size_t len, uint64_t min, uint64_t max,
		     uint64_t *out)
{
	unsigned __int128 v = 0;
	size_t i;

	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
	if (s[0] == '0' && len > 1)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		v = v * 10 + (unsigned)(s[i] - '0');
		if (v > UINT64_MAX)
			return -ERANGE;
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

static uint64_t take_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t min = 0, max = UINT64_MAX, got = 7, want = 7;
	const char *s;
	char canon[24];
	int ret, ref;

	if (size >= 16) {
		min = take_u64(data);
		max = take_u64(data + 8);
		/* Small bounds too, where ranges are usually drawn. */
		if (min & 1)
			min >>= 40;
		if (max & 1)
			max >>= 40;
		data += 16;
		size -= 16;
	}
	s = (const char *)data;
	ret = idgen_decimal(s, size, min, max, &got);
	ref = reference(s, size, min, max, &want);
	if (ret != ref || got != want) {
		fprintf(stderr, "'%.*s' in [%" PRIu64 ", %" PRIu64 "]: %d %" PRIu64
			", want %d %" PRIu64 "\n", (int)size, s, min, max, ret, got,
			ref, want);
		abort();
	}
	if (!ret) {
		snprintf(canon, sizeof(canon), "%" PRIu64, got);
		if (strlen(canon) != size || memcmp(canon, s, size))
			abort();
	}
	return 0;
}

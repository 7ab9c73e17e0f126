// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Strict unsigned decimal numbers (decimal.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "decimal.h"

#define IDGEN_HIDDEN	__attribute__((visibility("hidden")))

IDGEN_HIDDEN int idgen_decimal(const char *s, size_t len, uint64_t min,
			       uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	bool over = false;
	size_t i;

	if (!len || (s[0] == '0' && len > 1))
		return -EINVAL;
	for (i = 0; i < len; i++) {
		unsigned int d = (unsigned char)s[i] - '0';

		if (d > 9)
			return -EINVAL;
		/* Keep reading after an overflow: garbage is -EINVAL. */
		if (v > (UINT64_MAX - d) / 10)
			over = true;
		else
			v = v * 10 + d;
	}
	if (over || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

IDGEN_HIDDEN int idgen_decimal_str(const char *s, uint64_t min, uint64_t max,
				   uint64_t *out)
{
	return idgen_decimal(s, strlen(s), min, max, out);
}

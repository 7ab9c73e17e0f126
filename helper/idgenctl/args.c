// SPDX-License-Identifier: GPL-2.0
/*
 * Strict parsing of command-line values.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "decimal.h"
#include "idgenctl.h"

static bool invalid(const char *name, const char *arg, const char *why)
{
	fprintf(stderr, "%s: invalid %s '%s': %s\n", PROG_NAME, name, arg, why);
	return false;
}

bool parse_u64(const char *name, const char *arg, uint64_t min, uint64_t max,
	       uint64_t *out)
{
	char why[96];

	switch (idgen_decimal_str(arg, min, max, out)) {
	case 0:
		return true;
	case -ERANGE:
		snprintf(why, sizeof(why), "out of range (%llu to %llu)",
			 (unsigned long long)min, (unsigned long long)max);
		return invalid(name, arg, why);
	default:
		return invalid(name, arg, "not a decimal number (digits only, "
			       "no sign, spaces or leading zeros)");
	}
}

bool parse_u32(const char *name, const char *arg, uint32_t *out)
{
	uint64_t v;

	if (!parse_u64(name, arg, 0, UINT32_MAX, &v))
		return false;
	*out = v;
	return true;
}

bool parse_layout(const char *name, const char *arg, uint8_t *region_bits,
		  uint8_t *worker_bits, uint8_t *seq_bits)
{
	const char *p = arg;
	uint64_t w[3];
	size_t len;
	int i;

	for (i = 0; i < 3; i++) {
		len = strcspn(p, "/");
		if (idgen_decimal(p, len, 0, 255, &w[i]) ||
		    p[len] != (i < 2 ? '/' : '\0'))
			return invalid(name, arg, "want REGION/WORKER/SEQ bit widths, e.g. 3/7/12");
		p += len + (i < 2);
	}
	if (w[0] || w[1] || w[2]) {
		if (w[0] + w[1] + w[2] != IDGEN_NODE_SEQ_BITS)
			return invalid(name, arg, "the widths must add up to 22");
		if (w[0] > IDGEN_REGION_BITS_MAX)
			return invalid(name, arg, "at most 8 region bits");
		if (w[2] < IDGEN_SEQ_BITS_MIN)
			return invalid(name, arg, "at least 6 sequence bits");
	}
	*region_bits = w[0];
	*worker_bits = w[1];
	*seq_bits = w[2];
	return true;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Strict parsing of command-line values.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "idgenctl.h"

static bool invalid(const char *name, const char *arg, const char *why)
{
	fprintf(stderr, "%s: invalid %s '%s': %s\n", PROG_NAME, name, arg, why);
	return false;
}

/*
 * Parse digits at *s up to the first non-digit; *s is left there.  Returns
 * false on no digits or a value above max.
 */
static bool scan_decimal(const char **s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = *s;

	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned int d = *p - '0';

		if (v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*s = p;
	*out = v;
	return true;
}

bool parse_u64(const char *name, const char *arg, uint64_t min, uint64_t max,
	       uint64_t *out)
{
	bool overflow = false;
	const char *p = arg;
	uint64_t v = 0;
	char why[96];

	if (*p < '0' || *p > '9')
		return invalid(name, arg, "not a non-negative decimal number");
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned int d = *p - '0';

		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
	}
	if (*p)
		return invalid(name, arg, "trailing characters after the number");
	if (overflow || v < min || v > max) {
		snprintf(why, sizeof(why), "out of range (%llu to %llu)",
			 (unsigned long long)min, (unsigned long long)max);
		return invalid(name, arg, why);
	}
	*out = v;
	return true;
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
	int i;

	for (i = 0; i < 3; i++) {
		if (!scan_decimal(&p, 255, &w[i]))
			return invalid(name, arg, "want REGION/WORKER/SEQ bit widths, e.g. 3/7/12");
		if (*p != (i < 2 ? '/' : '\0'))
			return invalid(name, arg, "want REGION/WORKER/SEQ bit widths, e.g. 3/7/12");
		if (i < 2)
			p++;
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

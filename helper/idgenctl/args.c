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

bool parse_layout(const char *name, const char *arg, struct idgen_layout *out)
{
	char why[200];

	/* The module's load-time layout. */
	if (!strcmp(arg, "0/0/0")) {
		memset(out, 0, sizeof(*out));
		return true;
	}
	if (idgen_widths_parse(arg, out, why, sizeof(why)))
		return invalid(name, arg, why);
	return true;
}

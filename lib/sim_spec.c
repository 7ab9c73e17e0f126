// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A simulated generator's spec (sim_spec.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "decimal.h"
#include "sim_spec.h"

int idgen_sim_spec_parse(const char *spec, struct idgen_sim_spec *out,
			 char *err, size_t errlen)
{
	const char *rest;
	uint64_t worker;

	memset(out, 0, sizeof(*out));
	if (!spec || strncmp(spec, "sim", 3) || (spec[3] && spec[3] != ':'))
		return 0;
	out->kind = IDGEN_SIM_WORKER;
	if (!spec[3])
		return 0;
	rest = spec + 4;
	if (!*rest) {
		memset(out, 0, sizeof(*out));
		if (err && errlen)
			snprintf(err, errlen, "sim: names no worker and no file");
		return -EINVAL;
	}
	if (strspn(rest, "0123456789") != strlen(rest)) {
		out->kind = IDGEN_SIM_FILE;
		out->file = rest;
		return 0;
	}
	if (idgen_decimal_str(rest, 0, (1U << IDGEN_SIM_WORKER_BITS) - 1, &worker)) {
		memset(out, 0, sizeof(*out));
		if (err && errlen)
			snprintf(err, errlen, "the simulation's worker must be a decimal "
				 "number from 0 to %u", (1U << IDGEN_SIM_WORKER_BITS) - 1);
		return -EINVAL;
	}
	out->worker_named = true;
	out->worker = worker;
	return 0;
}

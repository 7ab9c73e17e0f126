// SPDX-License-Identifier: GPL-2.0
/*
 * Layouts as idgend's configuration names them (layout.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include <linux/idgen.h>

#include "layout.h"

/* Up to 2 digits, no sign, no leading zero; *s moves past them. */
static bool bits(const char **s, unsigned int *v)
{
	const char *p = *s;

	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
		return false;
	*v = 0;
	while (*p >= '0' && *p <= '9' && p - *s < 2)
		*v = *v * 10 + (unsigned int)(*p++ - '0');
	if (*p >= '0' && *p <= '9')
		return false;
	*s = p;
	return true;
}

int layout_parse(const char *s, struct lease_layout *out, char *why,
		 size_t why_size)
{
	const char *p = s;
	unsigned int r, w, q;

	if (!bits(&p, &r) || *p++ != '/' || !bits(&p, &w) || *p++ != '/' ||
	    !bits(&p, &q) || *p) {
		snprintf(why, why_size, "'%s' is not region/worker/sequence bits "
			 "such as 3/7/12", s);
		return -EINVAL;
	}
	if (r + w + q != IDGEN_NODE_SEQ_BITS || r > IDGEN_REGION_BITS_MAX ||
	    q < IDGEN_SEQ_BITS_MIN || w > 16) {
		snprintf(why, why_size, "layout %u/%u/%u: the three must add up "
			 "to %u, with at most %u region bits, at most 16 worker "
			 "bits and at least %u sequence bits", r, w, q,
			 IDGEN_NODE_SEQ_BITS, IDGEN_REGION_BITS_MAX,
			 IDGEN_SEQ_BITS_MIN);
		return -EINVAL;
	}
	out->region_bits = r;
	out->worker_bits = w;
	out->seq_bits = q;
	return 0;
}

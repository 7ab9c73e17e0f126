/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A layout of the 22 node and sequence bits of an ID, as idgend's
 * configuration names it ("3/7/12": region, worker and sequence bits) and
 * as it pushes it with every lease.
 */
#ifndef IDGEND_LAYOUT_H
#define IDGEND_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "idgen.h"

struct lease_layout {
	uint8_t region_bits, worker_bits, seq_bits;
};

/*
 * "R/W/S" by libidgen's one rule (idgen_widths_parse(): what the module
 * accepts as a layout).  0, or -EINVAL with why filled.
 */
static inline int layout_parse(const char *s, struct lease_layout *out,
			       char *why, size_t why_size)
{
	struct idgen_layout l;
	int ret;

	ret = idgen_widths_parse(s, &l, why, why_size);
	if (ret)
		return ret;
	out->region_bits = l.region_bits;
	out->worker_bits = l.worker_bits;
	out->seq_bits = l.seq_bits;
	return 0;
}

#endif /* IDGEND_LAYOUT_H */

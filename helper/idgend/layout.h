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

struct lease_layout {
	uint8_t region_bits, worker_bits, seq_bits;
};

/*
 * "R/W/S", three decimal numbers that the module accepts as a layout:
 * R + W + S = 22, R <= 8, S >= 6, W <= 16.  0, or -EINVAL with why filled.
 */
int layout_parse(const char *s, struct lease_layout *out, char *why,
		 size_t why_size);

#endif /* IDGEND_LAYOUT_H */

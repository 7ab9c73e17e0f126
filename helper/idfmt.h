/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Decoding IDs and formatting idgen milliseconds.
 */
#ifndef IDGENCTL_IDFMT_H
#define IDGENCTL_IDFMT_H

#include <stdint.h>

struct idgen_layout {
	unsigned int region_bits, worker_bits, seq_bits;
};

struct idgen_fields {
	uint64_t ms;		/* since IDGEN_EPOCH_UNIX_MS */
	uint32_t region, worker, seq;
};

void idgen_decode(uint64_t id, const struct idgen_layout *layout,
		  struct idgen_fields *f);

/* "2026-11-29T21:40:01.123Z": UTC, ISO-8601, milliseconds. */
#define IDGEN_ISO_LEN	32
const char *idgen_format_ms(uint64_t ms, char buf[IDGEN_ISO_LEN]);

#endif /* IDGENCTL_IDFMT_H */

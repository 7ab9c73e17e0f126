// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Taking IDs apart and putting them together: shifts and masks, no device.
 */
#include <errno.h>

#include "internal.h"

IDGEN_EXPORT const struct idgen_layout idgen_layout_v1 = {
	.version = 1,
	.cutover_ms = 0,
	.region_bits = 3,
	.worker_bits = 7,
	.seq_bits = 12,
};

static uint32_t field(uint64_t v, unsigned int shift, unsigned int bits)
{
	return (v >> shift) & ((1ULL << bits) - 1);
}

IDGEN_EXPORT int idgen_decode(uint64_t id, const struct idgen_layouts *layouts,
			      struct idgen_decoded *out)
{
	const struct idgen_layout *l;

	if (id > LIBIDGEN_ID_MAX)
		return -EINVAL;
	out->id = id;
	out->ms = id >> LIBIDGEN_NODE_SEQ_BITS;
	out->unix_ms = out->ms + LIBIDGEN_EPOCH_UNIX_MS;
	l = idgen_layout_at(layouts, out->ms);
	out->version = l->version;
	out->seq = field(id, 0, l->seq_bits);
	out->worker = field(id, l->seq_bits, l->worker_bits);
	out->region = field(id, l->seq_bits + l->worker_bits, l->region_bits);
	return 0;
}

IDGEN_EXPORT int idgen_compose(const struct idgen_layout *l, uint64_t ms,
			       uint32_t region, uint32_t worker, uint32_t seq,
			       uint64_t *id)
{
	if (ms > LIBIDGEN_MS_MAX || region >> l->region_bits ||
	    worker >> l->worker_bits || seq >> l->seq_bits)
		return -ERANGE;
	*id = ms << LIBIDGEN_NODE_SEQ_BITS |
	      (uint64_t)region << (l->worker_bits + l->seq_bits) |
	      (uint64_t)worker << l->seq_bits | seq;
	return 0;
}

IDGEN_EXPORT int idgen_min_id_at(int64_t unix_ms, uint64_t *id)
{
	uint64_t ms;

	if (unix_ms < (int64_t)LIBIDGEN_EPOCH_UNIX_MS) {
		*id = 0;
		return 0;
	}
	ms = (uint64_t)unix_ms - LIBIDGEN_EPOCH_UNIX_MS;
	if (ms > LIBIDGEN_MS_MAX)
		return -ERANGE;
	*id = ms << LIBIDGEN_NODE_SEQ_BITS;
	return 0;
}

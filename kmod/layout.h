/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ID layout: 0 | ms since the epoch (41) | region | worker | sequence.
 *
 * Pure helpers of the generator, shared with its tests.
 */
#ifndef _IDGEN_LAYOUT_H
#define _IDGEN_LAYOUT_H

#include <linux/types.h>
#include <uapi/linux/idgen.h>

/*
 * The widths of an ID's region, worker and sequence fields: what the module
 * needs of a layout.  (libidgen's struct idgen_layout is a whole layout,
 * with its version and cutover; the names differ so that grep finds one.)
 */
struct idgen_bits {
	u8 region_bits;
	u8 worker_bits;
	u8 seq_bits;
};

static inline bool idgen_bits_valid(const struct idgen_bits *l)
{
	return l->region_bits <= IDGEN_REGION_BITS_MAX &&
	       l->seq_bits >= IDGEN_SEQ_BITS_MIN &&
	       l->region_bits + l->worker_bits + l->seq_bits == IDGEN_NODE_SEQ_BITS;
}

static inline bool idgen_bits_equal(const struct idgen_bits *a,
				    const struct idgen_bits *b)
{
	return a->region_bits == b->region_bits &&
	       a->worker_bits == b->worker_bits &&
	       a->seq_bits == b->seq_bits;
}

/* The node field, already shifted to its place in an ID. */
static inline u64 idgen_node_bits(const struct idgen_bits *l, u32 region,
				  u32 worker)
{
	return (((u64)region << l->worker_bits) | worker) << l->seq_bits;
}

/*
 * The generator counts in "ticks": ms << seq_bits | seq, the time and
 * sequence fields of an ID without the node between them.  Running a
 * sequence over carries into the millisecond by itself.
 */
static inline u64 idgen_tick_ms(u64 tick, u8 seq_bits)
{
	return tick >> seq_bits;
}

/* The ID of a tick, with the node's field (idgen_node_bits()) put in. */
static inline u64 idgen_tick_id(u64 tick, u8 seq_bits, u64 node_bits)
{
	u64 seq = tick & ((1ULL << seq_bits) - 1);

	return (idgen_tick_ms(tick, seq_bits) << IDGEN_NODE_SEQ_BITS) |
	       node_bits | seq;
}

#endif /* _IDGEN_LAYOUT_H */

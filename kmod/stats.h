/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU counters: the minting path only ever touches its own CPU's line.
 */
#ifndef _IDGEN_STATS_H
#define _IDGEN_STATS_H

#include <linux/percpu.h>

#include "generator.h"

enum idgen_stat {
	IDGEN_STAT_IDS,
	IDGEN_STAT_READS,
	IDGEN_STAT_BORROWED_MS,
	IDGEN_STAT_STEPS_BACK,
	IDGEN_STAT_STEPS_FWD,
	IDGEN_STAT_STEPS_ADOPTED,
	IDGEN_STAT_FENCE_REFUSALS,
	IDGEN_STAT_LEAD_REFUSALS,
	IDGEN_STAT_NOLEASE_REFUSALS,
	IDGEN_STAT_RANGE_REFUSALS,
	IDGEN_STAT_EVENTS_DROPPED,
	IDGEN_STAT_COUNT
};

struct idgen_stats {
	u64 v[IDGEN_STAT_COUNT];
};

static inline void idgen_stat_add(struct idgen_gen *gen, enum idgen_stat s,
				  u64 n)
{
	this_cpu_add(gen->stats->v[s], n);
}

static inline void idgen_stat_inc(struct idgen_gen *gen, enum idgen_stat s)
{
	idgen_stat_add(gen, s, 1);
}

/* A sum over CPUs; each CPU's part is exact, the total only as of "now". */
static inline u64 idgen_stat_sum(struct idgen_gen *gen, enum idgen_stat s)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(gen->stats, cpu)->v[s]);
	return sum;
}

#endif /* _IDGEN_STATS_H */

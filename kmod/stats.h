/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU counters: the minting path only ever touches its own CPU's line.
 */
#ifndef _IDGEN_STATS_H
#define _IDGEN_STATS_H

#include <linux/percpu.h>
#include <linux/u64_stats_sync.h>

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

/*
 * u64_stats_t: a 32-bit host cannot read a u64 in one load, so readers
 * retry around a sequence count there; on 64-bit it costs nothing.
 */
struct idgen_stats {
	u64_stats_t v[IDGEN_STAT_COUNT];
	struct u64_stats_sync syncp;
};

/* Context: process context (the sequence count has no irq protection). */
static inline void idgen_stat_add(struct idgen_stats __percpu *stats,
				  enum idgen_stat s, u64 n)
{
	struct idgen_stats *st = get_cpu_ptr(stats);

	u64_stats_update_begin(&st->syncp);
	u64_stats_add(&st->v[s], n);
	u64_stats_update_end(&st->syncp);
	put_cpu_ptr(stats);
}

static inline void idgen_stat_inc(struct idgen_stats __percpu *stats,
				  enum idgen_stat s)
{
	idgen_stat_add(stats, s, 1);
}

/* A read that returned @ids IDs: both of its counts, in one go. */
static inline void idgen_stat_read(struct idgen_stats __percpu *stats, u64 ids)
{
	struct idgen_stats *st = get_cpu_ptr(stats);

	u64_stats_update_begin(&st->syncp);
	u64_stats_inc(&st->v[IDGEN_STAT_READS]);
	u64_stats_add(&st->v[IDGEN_STAT_IDS], ids);
	u64_stats_update_end(&st->syncp);
	put_cpu_ptr(stats);
}

/* A sum over CPUs; each CPU's part is exact, the total only as of "now". */
static inline u64 idgen_stat_sum(struct idgen_stats __percpu *stats,
				 enum idgen_stat s)
{
	unsigned int start;
	u64 sum = 0, v;
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct idgen_stats *st = per_cpu_ptr(stats, cpu);

		do {
			start = u64_stats_fetch_begin(&st->syncp);
			v = u64_stats_read(&st->v[s]);
		} while (u64_stats_fetch_retry(&st->syncp, start));
		sum += v;
	}
	return sum;
}

#endif /* _IDGEN_STATS_H */

/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _IDGEN_LEASE_H
#define _IDGEN_LEASE_H

#include <linux/atomic.h>
#include <linux/minmax.h>
#include <linux/rcupdate.h>
#include <linux/types.h>

#include "layout.h"

/* Value of idgen_lease.next once the lease is retired. */
#define IDGEN_TICK_CLOSED	U64_MAX

/**
 * struct idgen_lease - one lease and the state word of its node
 * @next:        the tick (ms << seq_bits | seq) of the next ID; every ID is
 *               reserved by moving it up with one compare-and-exchange.
 *               IDGEN_TICK_CLOSED once the lease is revoked or replaced.
 * @valid_until: the fence, in ms; only moves forward while the lease lives.
 * @floor:       no ID under the lease carries a ms at or below it.
 * @start_ms:    the first ms the lease may stamp without borrowing: one
 *               above the floor, or above every ms the host used before;
 *               the borrow bound counts from it when it lies ahead of the
 *               clock.  Written by the admin path only.
 * @layout:      widths of the node and sequence fields.
 * @region:      the node's region.
 * @worker:      the node's worker.
 * @node_bits:   region and worker, placed as in an ID.
 * @fence_logged: the fence the fence-reached event was last sent for.
 * @near_sent:   the fence the fence-near event was last sent for.
 * @rcu:         frees the lease after readers are done with it.
 *
 * Readers find the lease under RCU and only ever compare-and-exchange
 * @next and read @valid_until and @start_ms.  Everything else is fixed
 * while the lease is published, except @floor, which only the admin path
 * reads and writes.
 */
struct idgen_lease {
	atomic64_t next;
	atomic64_t valid_until;
	u64 floor;
	u64 start_ms;
	struct idgen_bits layout;
	u32 region;
	u32 worker;
	u64 node_bits;
	atomic64_t fence_logged;
	atomic64_t near_sent;
	struct rcu_head rcu;
};

/**
 * idgen_fence_event_claim() - may the event about @fence be sent?
 * @sent:  the fence the event was last sent for (@fence_logged, @near_sent).
 * @fence: the fence the reader judged, read before its reservation.
 *
 * True once per fence: a renewal racing the reader neither lets it send an
 * event about the new fence nor uses up the one the new fence is owed.
 *
 * Context: any.
 * Return: true if this caller is the one to send the event about @fence.
 */
static inline bool idgen_fence_event_claim(atomic64_t *sent, u64 fence)
{
	s64 old = atomic64_read(sent);

	do {
		if ((u64)old >= fence)
			return false;
	} while (!atomic64_try_cmpxchg(sent, &old, fence));
	return true;
}

/* A reserved run of ticks: @count IDs starting at @first. */
struct idgen_range {
	u64 first;
	u32 count;
	u8 seq_bits;
	u64 node_bits;
};

/*
 * max_borrow_ms for no borrow bound: the clock is absorbing a step back.
 * It needs no case of its own: borrowing U32_MAX ms ends 2^32 ms past
 * the clock, beyond any lead bound (a u32 too), so only the lead is left.
 */
#define IDGEN_BORROW_ANY	U32_MAX

/* Reserve IDs, or tell why none can be had now (kernel-doc in lease.c). */
int idgen_lease_reserve(struct idgen_lease *lease, u64 now_ms, u32 max_lead_ms,
			u32 max_borrow_ms, u32 want, struct idgen_range *r,
			u64 *wait_ms, u64 *borrowed_ms);
int idgen_lease_probe(struct idgen_lease *lease, u64 now_ms, u32 max_lead_ms,
		      u32 max_borrow_ms, u64 *wait_ms);

/* Ticks at or after @now_ms, clamped to the end of the time field. */
static inline u64 idgen_tick_floor(u64 now_ms, u8 seq_bits)
{
	return min(now_ms, IDGEN_MS_MAX + 1) << seq_bits;
}

/* One past the last ms the lead bound lets an ID be stamped with. */
static __always_inline u64 idgen_lead_end_ms(u64 now_ms, u32 max_lead_ms)
{
	return now_ms + max_lead_ms + 1;
}

/*
 * One past the last ms a run may start by borrowing: max_borrow_ms beyond
 * the clock, or beyond the lease's first ms when a floor put that ahead.
 */
static __always_inline u64 idgen_borrow_end_ms(const struct idgen_lease *lease,
					       u64 now_ms, u32 max_borrow_ms)
{
	return max(now_ms, READ_ONCE(lease->start_ms)) + max_borrow_ms + 1;
}

/**
 * idgen_lease_end_ms() - one past the last ms a reservation may reach
 * @lease:       the lease.
 * @now_ms:      the trusted time, below @fence (or far past it: the
 *               result then lies at or below the fence, and the caller
 *               finds its start there already).
 * @fence:       the lease's fence, which never lies past the end of the
 *               time field (idgen_lease_args_check()).
 * @max_lead_ms: the lead bound.
 * @max_borrow_ms: the borrow bound, or IDGEN_BORROW_ANY.
 * @under_way_ms: one past the ms the state word lies in when that ms is
 *               under way already, else anything not above it (0): the
 *               borrow bound never cuts into it, its rest was paid for
 *               when it began.
 *
 * The one statement of where a run must stop, for both ways of reserving
 * (idgen_lease_reserve() and idgen_lease_reserve_fast()): the fence, the
 * lead bound and the borrow bound.  The sums cannot wrap: the clock is a
 * s64 of ns in ms, far below 2^64 - 2^33.
 *
 * Context: any.
 * Return: the end, in ms: no ID of the run may carry it or a later one.
 */
static __always_inline u64 idgen_lease_end_ms(const struct idgen_lease *lease,
					      u64 now_ms, u64 fence,
					      u32 max_lead_ms,
					      u32 max_borrow_ms,
					      u64 under_way_ms)
{
	return min3(fence, idgen_lead_end_ms(now_ms, max_lead_ms),
		    max(idgen_borrow_end_ms(lease, now_ms, max_borrow_ms),
			under_way_ms));
}

/* Compare-and-exchange tries of idgen_lease_reserve_fast(). */
#define IDGEN_FAST_TRIES	32

/**
 * idgen_range_borrowed_ms() - milliseconds a run began ahead of the clock
 * @r:      the run.
 * @now_ms: the trusted time it was reserved at.
 *
 * Those after @now_ms whose first tick (sequence 0) falls in @r: each is
 * counted once, by the run that crossed into it.
 *
 * Return: the number of such milliseconds.
 */
static inline u64 idgen_range_borrowed_ms(const struct idgen_range *r,
					  u64 now_ms)
{
	u64 mask = (1ULL << r->seq_bits) - 1;
	u64 lo = max(r->first, idgen_tick_floor(now_ms + 1, r->seq_bits));
	u64 hi = r->first + r->count;

	return hi > lo ? ((hi + mask) >> r->seq_bits) -
			 ((lo + mask) >> r->seq_bits) : 0;
}

/**
 * idgen_lease_reserve_fast() - reserve all @want IDs, or none, in one go
 * @lease:       the lease, found under RCU.
 * @now_ms:      the trusted time, in ms since the epoch.
 * @max_lead_ms: the lead bound.
 * @max_borrow_ms: the borrow bound, or IDGEN_BORROW_ANY.
 * @want:        how many IDs, at least 1.
 * @r:           set to the reserved run on success.
 *
 * The common case of idgen_lease_reserve(), for the read path's fast way:
 * the whole run, from the same one compare-and-exchange on the state word,
 * below the same end (idgen_lease_end_ms()).  It leaves out only what
 * widens that end, the rest of a millisecond under way, so every run it
 * reserves idgen_lease_reserve() would have reserved too.
 *
 * Its caller may hold preemption off: the compare-and-exchange is tried
 * IDGEN_FAST_TRIES times at most, as lockref bounds its own, and a reader
 * that loses every race leaves the run to the full path, which is
 * preemptible.
 *
 * Context: any; under RCU with @lease published or just closed.
 * Return: true with @r set; false with nothing reserved when the lease is
 * closed, the clock is at or past the fence, the run does not fit whole,
 * or other CPUs won every try: idgen_lease_reserve() then decides.
 */
static inline bool idgen_lease_reserve_fast(struct idgen_lease *lease,
					    u64 now_ms, u32 max_lead_ms,
					    u32 max_borrow_ms, u32 want,
					    struct idgen_range *r)
{
	u8 s = lease->layout.seq_bits;
	u64 fence = atomic64_read(&lease->valid_until);
	u64 old, base, limit;
	unsigned int tries;

	/*
	 * No fence lies past the end of the time field, so below it
	 * @now_ms << s cannot overflow, whatever the clock was set to.
	 */
	if (now_ms >= fence)
		return false;
	limit = idgen_lease_end_ms(lease, now_ms, fence, max_lead_ms,
				   max_borrow_ms, 0) << s;
	old = atomic64_read(&lease->next);
	for (tries = IDGEN_FAST_TRIES;; tries--) {
		if (old == IDGEN_TICK_CLOSED || !tries)
			return false;
		base = max(old, now_ms << s);
		if (base + want > limit)
			return false;
		if (atomic64_try_cmpxchg(&lease->next, &old, base + want))
			break;
	}

	r->first = base;
	r->count = want;
	r->seq_bits = s;
	r->node_bits = lease->node_bits;
	return true;
}

u64 idgen_lease_close(struct idgen_lease *lease);
void idgen_lease_reopen(struct idgen_lease *lease, u64 next);

/* The last ms stamped, or fenced off by the floor, before tick @next. */
static inline u64 idgen_lease_last_ms(u64 next, u8 seq_bits)
{
	return idgen_tick_ms(next - 1, seq_bits);
}

#endif /* _IDGEN_LEASE_H */

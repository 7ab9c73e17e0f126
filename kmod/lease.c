// SPDX-License-Identifier: GPL-2.0
/*
 * The fence: reserving IDs under a lease.
 *
 * A lease's state word holds the millisecond and the sequence together as
 * one tick count, so a reservation is a single compare-and-exchange that
 * moves it up by a whole batch, and a sequence running over borrows the
 * next millisecond by itself.  Every limit (the fence, the lead bound, the
 * borrow bound, the end of the time field) is applied to the ticks actually reserved, so it
 * holds for the millisecond stamped into each ID, whatever happened between
 * the start of the call and the reservation.
 */
#include <linux/minmax.h>

#include "lease.h"

/*
 * Where a reservation would start and where it must stop, or the errno
 * that says why nothing can be reserved from @tick on.
 */
static int idgen_lease_bounds(struct idgen_lease *lease, u64 tick, u64 now_ms,
			      u32 max_lead_ms, u32 max_borrow_ms, u64 *base,
			      u64 *limit, u64 *wait_ms)
{
	u8 s = lease->layout.seq_bits;
	u64 fence = atomic64_read(&lease->valid_until);
	u64 mask = (1ULL << s) - 1;
	u64 base_ms, lead_end;

	*base = max(tick, idgen_tick_floor(now_ms, s));
	/*
	 * No fence lies past the end of the time field; should one be set
	 * there by hand (KUnit does), the field still ends the run.
	 */
	*limit = min(idgen_lease_end_ms(lease, now_ms, fence, max_lead_ms,
					max_borrow_ms, (tick + mask) >> s),
		     IDGEN_MS_MAX + 1) << s;
	if (*base < *limit)
		return 0;

	/*
	 * The end of the time field first: a fence may lie right at it
	 * (IDGEN_MS_MAX + 1), and renewing cannot help there.
	 */
	base_ms = idgen_tick_ms(*base, s);
	if (base_ms > IDGEN_MS_MAX)
		return -EOVERFLOW;
	if (base_ms >= fence)
		return -EKEYEXPIRED;
	lead_end = idgen_lead_end_ms(now_ms, max_lead_ms);
	if (base_ms >= lead_end) {
		*wait_ms = base_ms - (lead_end - 1);
		return -ETIME;
	}
	/* Within the lead but beyond the borrow bound: the clock must move. */
	*wait_ms = base_ms - (idgen_borrow_end_ms(lease, now_ms,
						  max_borrow_ms) - 1);
	return -EAGAIN;
}

/**
 * idgen_lease_reserve() - reserve up to @want consecutive IDs
 * @lease:       the lease, found under RCU.
 * @now_ms:      the trusted time, in ms since the epoch.
 * @max_lead_ms: how far ahead of @now_ms an ID may be stamped.
 * @max_borrow_ms: how far ahead of @now_ms (or of the lease's first ms)
 *               a run may start a millisecond because a sequence ran
 *               out; IDGEN_BORROW_ANY for no bound but the lead.
 * @want:        how many IDs the caller wants, at least 1.
 * @r:           set to the reserved run.
 * @wait_ms:     on -ETIME or -EAGAIN, how long until the bound allows
 *               one ID.
 * @borrowed_ms: set to how many milliseconds the run started ahead of
 *               @now_ms because a sequence ran out.
 *
 * Lock-free: one successful compare-and-exchange reserves the whole run,
 * retried only when another CPU reserved in between.  The run is cut short
 * at the fence, the lead bound and the borrow bound rather than refused.
 *
 * Context: any; under rcu_read_lock() with @lease published or just closed.
 * Return: 0; -ESTALE if the lease was closed (look it up again);
 * -EKEYEXPIRED at the fence; -ETIME beyond the lead bound; -EAGAIN beyond
 * the borrow bound but within the lead; -EOVERFLOW past the end of the
 * time field.
 */
int idgen_lease_reserve(struct idgen_lease *lease, u64 now_ms, u32 max_lead_ms,
			u32 max_borrow_ms, u32 want, struct idgen_range *r,
			u64 *wait_ms, u64 *borrowed_ms)
{
	u8 s = lease->layout.seq_bits;
	u64 old = atomic64_read(&lease->next);
	u64 base, limit;
	int err;

	do {
		if (old == IDGEN_TICK_CLOSED)
			return -ESTALE;
		err = idgen_lease_bounds(lease, old, now_ms, max_lead_ms,
					 max_borrow_ms, &base, &limit, wait_ms);
		if (err)
			return err;
		r->count = min_t(u64, want, limit - base);
	} while (!atomic64_try_cmpxchg(&lease->next, &old, base + r->count));

	r->first = base;
	r->seq_bits = s;
	r->node_bits = lease->node_bits;
	*borrowed_ms = idgen_range_borrowed_ms(r, now_ms);
	return 0;
}

/**
 * idgen_lease_probe() - would a reservation of one ID succeed now?
 * @lease:       the lease, found under RCU.
 * @now_ms:      the trusted time.
 * @max_lead_ms: the lead bound.
 * @max_borrow_ms: the borrow bound, or IDGEN_BORROW_ANY.
 * @wait_ms:     on -ETIME or -EAGAIN, how long until it would.
 *
 * Context: any; under rcu_read_lock().
 * Return: 0 or the errno idgen_lease_reserve() would give.
 */
int idgen_lease_probe(struct idgen_lease *lease, u64 now_ms, u32 max_lead_ms,
		      u32 max_borrow_ms, u64 *wait_ms)
{
	u64 tick = atomic64_read(&lease->next);
	u64 base, limit;

	if (tick == IDGEN_TICK_CLOSED)
		return -ESTALE;
	return idgen_lease_bounds(lease, tick, now_ms, max_lead_ms,
				  max_borrow_ms, &base, &limit, wait_ms);
}

/**
 * idgen_lease_close() - retire a lease's state word
 * @lease: the lease.
 *
 * One exchange: every reservation either happened before it, and is
 * covered by the result, or fails afterwards with -ESTALE, however far the
 * reader had got when the close began.
 *
 * Context: any; under the generator's switch_lock.
 * Return: the state word as closed; idgen_lease_last_ms() of it is the last
 * ms stamped under the lease (its floor if none was).
 */
u64 idgen_lease_close(struct idgen_lease *lease)
{
	return atomic64_xchg(&lease->next, IDGEN_TICK_CLOSED);
}

/**
 * idgen_lease_reopen() - undo idgen_lease_close()
 * @lease: the lease, closed.
 * @next:  what idgen_lease_close() returned.
 *
 * Nothing was reserved while the word was closed, so putting its value back
 * leaves the lease exactly as it was.  Readers that met the closed word
 * wait on the switch_lock held across close and reopen, then look again.
 *
 * Context: under the generator's switch_lock, the one held across the close.
 */
void idgen_lease_reopen(struct idgen_lease *lease, u64 next)
{
	atomic64_set(&lease->next, next);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Minting: reserving IDs for readers of the device.
 *
 * Minting is lock-free: the lease is found under RCU and IDs are reserved
 * with one compare-and-exchange on its state word (lease.c).  A node
 * switch or revoke (admin.c) closes the old state word with an exchange,
 * so every reservation either happened before it (and is covered by the
 * last tick the exchange returns) or fails and looks the lease up again;
 * the successor starts above that last tick.
 */
#include <linux/hrtimer.h>
#include <linux/sched/signal.h>
#include <uapi/linux/idgen.h>

#include "generator.h"
#include "stats.h"

/*
 * A blocking reader sleeps for the clock only when it is at most this far
 * from reach (the next millisecond, when the node runs at its ceiling) ...
 */
#define IDGEN_WAIT_MAX_MS	5
/* ... and for at most this long in all, within one call. */
#define IDGEN_WAIT_BUDGET_MS	1000
/* The poll timer is armed at most this far ahead (it fits msecs_to_jiffies()). */
#define IDGEN_POLL_WAIT_MAX_MS	(3600U * MSEC_PER_SEC)

/*
 * The borrow bound that holds at the reading @now_ms, given @high, the
 * highest ms a reader saw: the module's max_borrow_ms while the clock is
 * healthy, none (only the lead bound) while it absorbs a step back, i.e.
 * reads below the mark.  1 ms of slack covers readings that straddle a
 * millisecond on two CPUs.  The full path reads the mark before the
 * clock, so every value in it came from a reading that ended before ours
 * began; the fast path reads it after, which can only find it higher and
 * leave the read to the full path.
 */
static __always_inline u32 idgen_gen_borrow_at(struct idgen_gen *gen,
					       s64 high, u64 now_ms)
{
	if (unlikely(now_ms != (u64)high)) {
		if (now_ms + 1 < (u64)high)
			return IDGEN_BORROW_ANY;
		/* Once per ms per CPU at most: a failed exchange saw a higher mark. */
		if (now_ms > (u64)high)
			atomic64_try_cmpxchg(&gen->clock_high_ms, &high, now_ms);
	}
	return READ_ONCE(gen->max_borrow_ms);
}

/*
 * What the full path and the probe hold a reader to, at one reading of
 * the clock.  The fast path asks idgen_fair_alone() instead and serves
 * only readers none of it holds back.
 */
struct idgen_bounds {
	u64 now_ms;
	/* As the lease is asked: one ms less while another file's wait holds. */
	u32 max_borrow_ms;
	/* No borrow bound: a step back is absorbed, only the lead bound is left. */
	bool any;
	/* Held to its file's share of the ms: no borrow bound, or a wait holds. */
	bool held;
};

/*
 * Read the clock, and judge the reader holding @share (NULL for none) at
 * it: the borrow bound that holds, and the fairness policy (fair.h).
 */
static __always_inline void idgen_gen_bounds(struct idgen_gen *gen,
					     struct idgen_share *share,
					     struct idgen_bounds *b)
{
	s64 high = atomic64_read(&gen->clock_high_ms);
	bool yields;

	b->now_ms = idgen_gen_now_ms(gen, false);
	b->max_borrow_ms = idgen_gen_borrow_at(gen, high, b->now_ms);
	b->any = b->max_borrow_ms == IDGEN_BORROW_ANY;
	yields = idgen_wait_yields(&gen->oldest_wait, share, b->now_ms);
	b->held = share && (b->any || yields);
	if (yields && !b->any)
		b->max_borrow_ms--;
}

/* A reader the borrow bound refused will wait: its wait begins or goes on. */
static void idgen_gen_refused(struct idgen_gen *gen, struct idgen_share *share,
			      const struct idgen_bounds *b, u64 wait_ms)
{
	idgen_wait_refused(&gen->oldest_wait, share, b->now_ms,
			   min_t(u64, wait_ms, IDGEN_WAIT_MAX_MS));
}

/*
 * The fence-near event: sent by whichever path reserved the run that
 * claimed it (idgen_gen_reserved()), outside the RCU section.
 */
static noinline void idgen_gen_fence_near(struct idgen_gen *gen, u32 region,
					  u32 worker, u64 fence)
{
	struct idgen_event_info ev = {
		.type = IDGEN_EVENT_FENCE_NEAR,
		.has_node = true,
		.region = region,
		.worker = worker,
		.valid_until_ms = fence,
	};

	idgen_gen_event(gen, &ev);
}

/*
 * What every run reserved is owed, on either path: the milliseconds it
 * began ahead of the clock counted, and, within fence_near_ms of @fence
 * (the fence read before the reservation), the fence-near event claimed
 * once per fence.  Under RCU with @lease found.  Returns true when the
 * caller is to send that event (idgen_gen_fence_near()).
 */
static __always_inline bool idgen_gen_reserved(struct idgen_gen *gen,
					       struct idgen_lease *lease,
					       const struct idgen_range *r,
					       u64 now_ms, u64 fence)
{
	u64 last_ms = idgen_tick_ms(r->first + r->count - 1, r->seq_bits);

	if (unlikely(last_ms > now_ms))
		idgen_stat_add(gen->stats, IDGEN_STAT_BORROWED_MS,
			       idgen_range_borrowed_ms(r, now_ms));
	return unlikely(last_ms + READ_ONCE(gen->fence_near_ms) >= fence) &&
	       idgen_fence_event_claim(&lease->near_sent, fence);
}

/*
 * Reserve up to @want IDs of @lease for a reader holding @share (NULL for
 * none), within @b (idgen_gen_bounds()).  A reader held to its share
 * takes it first, and what was not reserved goes back to it: -EAGAIN
 * with *wait_ms = 1 when the share of this ms is used up.  When the
 * borrow bound refuses a reader that will wait (@waits), its file's wait
 * begins or goes on; IDs end it.
 */
static int idgen_gen_reserve(struct idgen_gen *gen, struct idgen_lease *lease,
			     struct idgen_share *share,
			     const struct idgen_bounds *b, u32 want,
			     bool waits, struct idgen_range *r, u64 *wait_ms,
			     u64 *borrowed)
{
	u32 n = want;
	int err;

	if (b->held) {
		n = idgen_share_take(share, b->now_ms,
				     idgen_share_quota(lease->layout.seq_bits),
				     want);
		if (!n) {
			*wait_ms = 1;
			return -EAGAIN;
		}
	}
	err = idgen_lease_reserve(lease, b->now_ms, gen->max_lead_ms,
				  b->max_borrow_ms, n, r, wait_ms, borrowed);
	if (b->held)
		idgen_share_give_back(share, b->now_ms, err ? n : n - r->count);
	if (!share)
		return err;
	if (!err)
		idgen_wait_over(&gen->oldest_wait, share);
	else if (err == -EAGAIN && waits && !b->any)
		idgen_gen_refused(gen, share, b, *wait_ms);
	return err;
}

/*
 * Wake pollers once the clock will have caught up, @wait_ms from now.
 * Every path that answers "not yet, the clock" arms it, not only ->poll():
 * an edge-triggered poller that read the device dry is told EAGAIN by
 * read() and calls ->poll() again only after a wake-up.  A longer wait is
 * re-armed by the ->poll() its wake-up leads to.
 */
static void idgen_gen_arm_poll(struct idgen_gen *gen, u64 wait_ms)
{
	wait_ms = min_t(u64, wait_ms, IDGEN_POLL_WAIT_MAX_MS);
	timer_reduce(&gen->poll_timer, jiffies + msecs_to_jiffies(wait_ms) + 1);
}

static struct idgen_lease *idgen_gen_lease(struct idgen_gen *gen)
{
	return rcu_dereference(gen->lease);
}

/*
 * A lease found closed is being replaced or revoked, and the change is
 * published before switch_lock is dropped: wait for it, then look again.
 */
static void idgen_gen_wait_switch(struct idgen_gen *gen)
{
	spin_lock(&gen->switch_lock);
	spin_unlock(&gen->switch_lock);
}

/*
 * Readers outrunning the node's ceiling, or their share of it, are
 * throttled here, a millisecond at a time, rather than refused.  One
 * sleep, which a signal ends: usleep_range_state() would spin until its
 * deadline with a signal pending.  Returns false on a signal.
 */
static bool idgen_gen_throttle(u64 wait_ms)
{
	ktime_t until = ms_to_ktime(wait_ms);

	set_current_state(TASK_INTERRUPTIBLE);
	schedule_hrtimeout_range(&until, NSEC_PER_MSEC, HRTIMER_MODE_REL);
	return !signal_pending(current);
}

/**
 * idgen_gen_mint() - reserve up to @want IDs
 * @gen:    the generator.
 * @share:  the reader's file's share of each ms, or NULL for none.
 * @want:   how many, at least 1.
 * @flags:  IDGEN_MINT_* flags.
 * @r:      set to the reserved run.
 *
 * Two kinds of "not yet".  The lead bound (the clock is behind: a step
 * back, a floor ahead) is waited for only when it is a few ms away, and
 * for at most IDGEN_WAIT_BUDGET_MS in all, then -ETIME.  The borrow bound
 * and the file's share throttle readers that outrun the node's ceiling or
 * their part of it: both move on with the clock, so a blocking reader
 * sleeps for them, a few ms at a time, until it gets IDs or a signal,
 * even with IDGEN_MINT_MORE.
 *
 * Context: process context; without IDGEN_MINT_NOWAIT, may sleep for the
 * clock in steps of a few ms.
 * Return: 0, or -ENOKEY, -EKEYEXPIRED, -ETIME, -EAGAIN, -EOVERFLOW as
 * documented in the uapi header, or -ERESTARTSYS on a signal.
 */
int idgen_gen_mint(struct idgen_gen *gen, struct idgen_share *share, u32 want,
		   unsigned int flags, struct idgen_range *r)
{
	bool nowait = flags & (IDGEN_MINT_NOWAIT | IDGEN_MINT_MORE);
	unsigned long deadline = jiffies + msecs_to_jiffies(IDGEN_WAIT_BUDGET_MS);
	struct idgen_event_info ev = {};
	struct idgen_lease *lease;
	u64 wait_ms, borrowed, fence = 0;
	bool resampled = false;
	struct idgen_bounds b;
	int err;

again:
	idgen_gen_bounds(gen, share, &b);
	rcu_read_lock();
	for (;;) {
		lease = idgen_gen_lease(gen);
		if (!lease) {
			err = -ENOKEY;
			break;
		}
		/*
		 * The fence the events below speak of: a renewal may move it
		 * up meanwhile, but never down, so this one is reached
		 * whenever the reservation finds a fence reached.
		 */
		fence = atomic64_read(&lease->valid_until);
		err = idgen_gen_reserve(gen, lease, share, &b, want,
					idgen_mint_waits(flags), r, &wait_ms,
					&borrowed);
		if (err != -ESTALE)
			break;
		idgen_gen_wait_switch(gen);
	}
	if (err == -EKEYEXPIRED &&
	    idgen_fence_event_claim(&lease->fence_logged, fence)) {
		idgen_event_node(&ev, IDGEN_EVENT_FENCE_REACHED, lease);
		ev.valid_until_ms = fence;
	}
	if (!err && idgen_gen_reserved(gen, lease, r, b.now_ms, fence))
		/* Within fence_near_ms of the fence: tell the lease holder once. */
		idgen_event_node(&ev, IDGEN_EVENT_FENCE_NEAR, lease);
	rcu_read_unlock();

	if (ev.type == IDGEN_EVENT_FENCE_REACHED) {
		pr_warn("lease r%u/w%u reached its fence at ms %llu: minting stopped until renewed\n",
			ev.region, ev.worker, ev.valid_until_ms);
		idgen_gen_event(gen, &ev);
	}
	if (!err) {
		if (ev.type == IDGEN_EVENT_FENCE_NEAR)
			idgen_gen_fence_near(gen, ev.region, ev.worker, fence);
		return 0;
	}
	/*
	 * now_ms was read before the reservation: a reader preempted, or
	 * waiting for a switch, for longer than the lead would be refused on
	 * a clock that has moved on.  Read it once more before deciding.
	 */
	if (err == -ETIME && !resampled) {
		resampled = true;
		if (idgen_gen_now_ms(gen, false) > b.now_ms)
			goto again;
	}
	/*
	 * The borrow bound or the share: the clock moving on lifts both, so
	 * a blocking reader sleeps for them even with IDs in hand, and a big
	 * read is served a share at a time.
	 */
	if (err == -EAGAIN) {
		if (flags & IDGEN_MINT_NOWAIT) {
			idgen_gen_arm_poll(gen, wait_ms);
			return -EAGAIN;
		}
		wait_ms = min_t(u64, wait_ms, IDGEN_WAIT_MAX_MS);
		goto sleep;
	}
	if (err == -ETIME && wait_ms <= IDGEN_WAIT_MAX_MS) {
		if (nowait) {
			idgen_gen_arm_poll(gen, wait_ms);
			return -EAGAIN;
		}
		if (time_before(jiffies, deadline))
			goto sleep;
	}
	if (err == -ETIME) {
		idgen_gen_arm_poll(gen, wait_ms);
		/* The event tells of a read refused, not of one cut short. */
		if (!(flags & IDGEN_MINT_MORE)) {
			ev = (struct idgen_event_info){
				.type = IDGEN_EVENT_LEAD_EXCEEDED,
			};
			idgen_gen_event(gen, &ev);
		}
	}
	return err;

sleep:
	if (!idgen_gen_throttle(wait_ms))
		return -ERESTARTSYS;
	goto again;
}

/*
 * __idgen_gen_mint_fast() - reserve @want IDs in the common case, or none
 * @gen:   the generator.
 * @share: the reader's file's share, or NULL for none.
 * @want:  how many, at least 1.
 * @r:     set to the reserved run on success.
 *
 * Most reads find a lease in force, a clock with no step to judge, no
 * wait holding (fair.h), and room for every ID they ask for below the
 * fence, the lead bound and the borrow bound.  This path serves exactly
 * those, whole (idgen_lease_reserve_fast()), in one pass: no share, no
 * wait, no partial run, no sleep.  Everything else it leaves to
 * idgen_gen_mint(), with nothing reserved.
 *
 * Where it serves, the full path would have served the same run and done
 * the same beside, by construction: the two share every rule, each
 * written once.  The borrow bound at the reading is idgen_gen_borrow_at();
 * whether the reader is alone, with nothing for the fairness policy to
 * do, is idgen_fair_alone(); where a run must stop is
 * idgen_lease_end_ms(), which idgen_lease_reserve() widens only by the
 * rest of a millisecond under way; and what a reserved run is owed,
 * its borrowed milliseconds counted and the fence-near event, is
 * idgen_gen_reserved().  KUnit still compares the two at random.
 *
 * The lease is read in an RCU-sched section (preemption off), which costs
 * a read about twenty instructions less than rcu_read_lock() and its
 * unlock, out of about a hundred and fifty the module spends on it.  It
 * is as safe: since RCU's flavours were merged (4.20), kfree_rcu() of a
 * retired lease waits for such sections too; nothing in the section
 * sleeps or takes a lock, and the compare-and-exchange is tried a
 * bounded number of times (idgen_lease_reserve_fast()).
 *
 * Inlined into its two callers below, so that the run is kept in
 * registers, not on the stack, when one ID is composed from it.
 *
 * Context: process context.
 * Return: true with @r set, or false to go the full way.
 */
static __always_inline bool __idgen_gen_mint_fast(struct idgen_gen *gen,
						  struct idgen_share *share,
						  u32 want,
						  struct idgen_range *r)
{
	struct idgen_lease *lease;
	u32 region = 0, worker = 0, max_borrow_ms;
	u64 now_ms, fence;
	bool near = false;
	s64 wall;

	if (!idgen_clock_read_fast(&gen->clock, &wall))
		return false;
	now_ms = idgen_ns_to_ms(wall);
	max_borrow_ms = idgen_gen_borrow_at(gen,
					    atomic64_read(&gen->clock_high_ms),
					    now_ms);
	if (!idgen_fair_alone(&gen->oldest_wait, share, now_ms,
			      max_borrow_ms == IDGEN_BORROW_ANY))
		return false;

	rcu_read_lock_sched();
	lease = rcu_dereference_sched(gen->lease);
	if (!lease)
		goto full;
	/* As idgen_gen_mint(): the fence the events speak of, read first. */
	fence = atomic64_read(&lease->valid_until);
	if (!idgen_lease_reserve_fast(lease, now_ms, gen->max_lead_ms,
				      max_borrow_ms, want, r))
		goto full;
	if (unlikely(idgen_gen_reserved(gen, lease, r, now_ms, fence))) {
		near = true;
		region = lease->region;
		worker = lease->worker;
	}
	rcu_read_unlock_sched();

	if (unlikely(near))
		idgen_gen_fence_near(gen, region, worker, fence);
	return true;

full:
	rcu_read_unlock_sched();
	return false;
}

/**
 * idgen_gen_mint_fast() - reserve @want IDs in the common case, or none
 * @gen:   the generator.
 * @share: the reader's file's share, or NULL for none.
 * @want:  how many, at least 1.
 * @r:     set to the reserved run on success.
 *
 * See __idgen_gen_mint_fast().
 *
 * Context: process context.
 * Return: true with @r set, or false with nothing reserved: then
 * idgen_gen_mint() serves the request.
 */
bool idgen_gen_mint_fast(struct idgen_gen *gen, struct idgen_share *share,
			 u32 want, struct idgen_range *r)
{
	return __idgen_gen_mint_fast(gen, share, want, r);
}

/**
 * idgen_gen_mint_one() - mint one ID in the common case, or none
 * @gen:   the generator.
 * @share: the reader's file's share, or NULL for none.
 *
 * idgen_gen_mint_fast() for one ID, composed.
 *
 * Context: process context.
 * Return: the ID, or 0 with nothing reserved: then idgen_gen_mint() serves
 * the request.  0 is never an ID: every lease starts above ms 0.
 */
u64 idgen_gen_mint_one(struct idgen_gen *gen, struct idgen_share *share)
{
	struct idgen_range r;

	if (!__idgen_gen_mint_fast(gen, share, 1, &r))
		return 0;
	return idgen_tick_id(r.first, r.seq_bits, r.node_bits);
}

/**
 * idgen_gen_count_refusal() - count a read refused with @err
 * @gen: the generator.
 * @err: the errno the read returns.
 */
void idgen_gen_count_refusal(struct idgen_gen *gen, int err)
{
	switch (err) {
	case -ENOKEY:
		idgen_stat_inc(gen->stats, IDGEN_STAT_NOLEASE_REFUSALS);
		break;
	case -EKEYEXPIRED:
		idgen_stat_inc(gen->stats, IDGEN_STAT_FENCE_REFUSALS);
		break;
	case -ETIME:
	case -EAGAIN:
		idgen_stat_inc(gen->stats, IDGEN_STAT_LEAD_REFUSALS);
		break;
	case -EOVERFLOW:
		idgen_stat_inc(gen->stats, IDGEN_STAT_RANGE_REFUSALS);
		break;
	}
}

/**
 * idgen_gen_probe() - would a read of one ID succeed now?
 * @gen:   the generator.
 * @share: the reader's file's share, or NULL.
 *
 * When the answer is "not yet, the clock must catch up", arms the poll
 * timer so pollers are woken when it has.
 *
 * Context: process context.
 * Return: 0 or the errno a read would fail with.
 */
int idgen_gen_probe(struct idgen_gen *gen, struct idgen_share *share)
{
	struct idgen_lease *lease;
	struct idgen_bounds b;
	u64 wait_ms;
	int err;

	idgen_gen_bounds(gen, share, &b);
	rcu_read_lock();
	for (;;) {
		lease = idgen_gen_lease(gen);
		if (!lease) {
			err = -ENOKEY;
			break;
		}
		/* As idgen_gen_reserve() would judge it. */
		if (b.held &&
		    idgen_share_used(atomic64_read(&share->word), b.now_ms) >=
		    idgen_share_quota(lease->layout.seq_bits)) {
			wait_ms = 1;
			err = -EAGAIN;
			break;
		}
		err = idgen_lease_probe(lease, b.now_ms, gen->max_lead_ms,
					b.max_borrow_ms, &wait_ms);
		/*
		 * A poller that waits reads only once told it may: the
		 * borrow bound refusing it here goes on with its file's
		 * wait as a read would, or it could never become the
		 * oldest and be told.
		 */
		if (err == -EAGAIN && share && !b.any &&
		    atomic64_read(&share->wait))
			idgen_gen_refused(gen, share, &b, wait_ms);
		/*
		 * A closed lease: a switch is under way, and one refused
		 * reopens the old lease without a lease change to wake
		 * pollers.  Wait for it and look again, as a read does.
		 */
		if (err != -ESTALE)
			break;
		idgen_gen_wait_switch(gen);
	}
	rcu_read_unlock();

	if (err == -ETIME || err == -EAGAIN)
		idgen_gen_arm_poll(gen, wait_ms);
	return err;
}

/**
 * idgen_gen_share_closed() - the file holding @share is closed
 * @gen:   the generator.
 * @share: the file's share.
 *
 * A wait of a closed file is over: the priority passes on at once rather
 * than when it lapses.
 *
 * Context: any.
 */
void idgen_gen_share_closed(struct idgen_gen *gen, struct idgen_share *share)
{
	idgen_wait_over(&gen->oldest_wait, share);
}

/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _IDGEN_GENERATOR_H
#define _IDGEN_GENERATOR_H

#include <linux/bits.h>
#include <linux/math64.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/wait.h>

#include "clock.h"
#include "layout.h"
#include "lease.h"
#include "fair.h"

#include <linux/ratelimit.h>
#include <uapi/linux/idgen.h>

struct idgen_stats;

/**
 * struct idgen_event_info - one event, for whoever listens
 * @type:           enum idgen_event.
 * @now_ms:         the wall clock when it happened, ms since the epoch.
 * @has_node:       @region, @worker and @valid_until_ms are set.
 * @has_floor:      @floor_ms is set.
 * @has_last:       @last_ms is set.
 * @has_step:       @step_ms and @held are set (clock events).
 * @held:           a forward step was not followed.
 * @region:         the lease's region.
 * @worker:         the lease's worker.
 * @floor_ms:       the lease's floor.
 * @valid_until_ms: the lease's fence.
 * @last_ms:        the last ms of a revoked lease.
 * @step_ms:        the size of a clock step, negative for back.
 */
struct idgen_event_info {
	enum idgen_event type;
	u64 now_ms;
	bool has_node;
	bool has_floor;
	bool has_last;
	bool has_step;
	bool held;
	u32 region;
	u32 worker;
	u64 floor_ms;
	u64 valid_until_ms;
	u64 last_ms;
	s64 step_ms;
};

/**
 * struct idgen_gen - the host's one generator
 * @lease:       the lease in force, or NULL; readers use RCU.
 * @admin_lock:  serialises lease changes (set, renew, revoke).
 * @switch_lock: held while a lease is closed and its successor published,
 *               so a reader that meets a closed lease can wait for the
 *               successor instead of failing.
 * @last_ms:     the highest ms stamped or fenced off under leases that are
 *               gone; protected by @admin_lock.
 * @clock:       the generator clock; its changed hook counts steps and
 *               sends their events.
 * @layout:      the default layout, for leases that name none.
 * @max_lead_ms: how far IDs may run ahead of the trusted clock.
 * @max_borrow_ms: how far ahead of a healthy clock readers may push the
 *               stamped ms by borrowing (sequences running out).
 * @clock_high_ms: the highest trusted ms a reader has seen: the clock is
 *               absorbing a step back while it reads below it.
 * @oldest_wait: the oldest wait the borrow bound refused, which the other
 *               readers leave the next millisecond to (fair.h).
 * @stats:       per-CPU counters.
 * @wait:        pollers, woken when a lease changes or a wait runs out.
 * @poll_timer:  wakes @wait when the clock will have caught up.
 * @fence_near_ms: how long before the fence the fence-near event fires.
 * @notify:      sends an event (netlink.c); NULL sends none.  Called in
 *               process context; lease events under admin_lock, so they
 *               are sent in the order the changes were made.
 * @event_rs:    per kind of event, the limit on how often it is sent.
 */
struct idgen_gen {
	struct idgen_lease __rcu *lease;
	struct mutex admin_lock;	/* serialises lease changes */
	spinlock_t switch_lock;	/* held across close and publish */
	u64 last_ms;
	struct idgen_clock clock;
	struct idgen_bits layout;
	u32 max_lead_ms;
	u32 max_borrow_ms;
	atomic64_t clock_high_ms;
	struct idgen_oldest_wait oldest_wait;
	struct idgen_stats __percpu *stats;
	wait_queue_head_t wait;
	struct timer_list poll_timer;
	u32 fence_near_ms;
	void (*notify)(struct idgen_gen *gen, const struct idgen_event_info *ev);
	struct ratelimit_state event_rs[IDGEN_EVENT_MAX + 1];
};

/* Readers may borrow this far ahead of a healthy clock, by default. */
#define IDGEN_MAX_BORROW_MS_DEFAULT	10

/* The fence-near event fires this long before the fence, by default. */
#define IDGEN_FENCE_NEAR_MS_DEFAULT	60000

/* generator.c: its life, events and state. */
int idgen_gen_init(struct idgen_gen *gen, const struct idgen_bits *layout,
		   u32 max_lead_ms, u32 max_step_ms);
void idgen_gen_uninit(struct idgen_gen *gen);
void idgen_gen_event(struct idgen_gen *gen, struct idgen_event_info *ev);
void idgen_gen_adopt_clock(struct idgen_gen *gen);
void idgen_gen_get_state(struct idgen_gen *gen, struct idgen_state *st);

/* Flags of idgen_gen_mint(). */
#define IDGEN_MINT_NOWAIT	BIT(0)	/* -EAGAIN rather than sleep for the clock */
/* The call holds IDs already: no sleep for the lead bound, no event. */
#define IDGEN_MINT_MORE		BIT(1)

/*
 * Whether a reader the borrow bound refuses waits for it (fair.h): all do
 * but a non-blocking read's follow-on batches, which return the IDs they
 * have.  A blocking read's follow-on batches sleep until they are served.
 */
static inline bool idgen_mint_waits(unsigned int flags)
{
	return !(flags & IDGEN_MINT_MORE) || !(flags & IDGEN_MINT_NOWAIT);
}

/* mint.c: reading IDs. */
int idgen_gen_mint(struct idgen_gen *gen, struct idgen_share *share, u32 want,
		   unsigned int flags, struct idgen_range *r);
bool idgen_gen_mint_fast(struct idgen_gen *gen, struct idgen_share *share,
			 u32 want, struct idgen_range *r);
u64 idgen_gen_mint_one(struct idgen_gen *gen, struct idgen_share *share);
int idgen_gen_probe(struct idgen_gen *gen, struct idgen_share *share);
void idgen_gen_share_closed(struct idgen_gen *gen, struct idgen_share *share);
void idgen_gen_count_refusal(struct idgen_gen *gen, int err);

/* admin.c: lease changes. */
int idgen_gen_set_lease(struct idgen_gen *gen,
			const struct idgen_lease_args *args);
u64 idgen_gen_revoke(struct idgen_gen *gen);

/* ns since the Unix epoch to ms since the ID epoch, 0 before it. */
static inline u64 idgen_ns_to_ms(s64 ns)
{
	const s64 epoch_ns = (s64)IDGEN_EPOCH_UNIX_MS * NSEC_PER_MSEC;

	if (ns < epoch_ns)
		return 0;
	return div_u64(ns - epoch_ns, NSEC_PER_MSEC);
}

/* The trusted clock, in ms since the ID epoch. */
static inline u64 idgen_gen_now_ms(struct idgen_gen *gen, bool adopt)
{
	return idgen_ns_to_ms(idgen_clock_read(&gen->clock, adopt, NULL));
}

/* Fill in @ev as an event of @type about @lease. */
static inline void idgen_event_node(struct idgen_event_info *ev,
				    enum idgen_event type,
				    struct idgen_lease *lease)
{
	ev->type = type;
	ev->has_node = true;
	ev->region = lease->region;
	ev->worker = lease->worker;
	ev->valid_until_ms = atomic64_read(&lease->valid_until);
}

#endif /* _IDGEN_GENERATOR_H */

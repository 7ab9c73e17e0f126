// SPDX-License-Identifier: GPL-2.0
/*
 * The generator: one per host, combining the clock and the lease in force.
 *
 * This file holds its life (init, uninit), the events it sends, the
 * clock's changed hook and the state it reports.  Minting is in mint.c,
 * lease changes in admin.c, the fairness policy in fair.c.
 */
#include <linux/math64.h>
#include <linux/slab.h>
#include <uapi/linux/idgen.h>

#include "compat.h"
#include "generator.h"
#include "stats.h"

/**
 * idgen_gen_event() - send an event to whoever listens
 * @gen: the generator.
 * @ev:  the event; now_ms is filled in here.
 *
 * Fence, clock and lead events are rate-limited per kind, since readers
 * and the clock, not administrators, cause them.
 *
 * Context: process context; may sleep.
 */
void idgen_gen_event(struct idgen_gen *gen, struct idgen_event_info *ev)
{
	void (*notify)(struct idgen_gen *gen, const struct idgen_event_info *ev);

	notify = READ_ONCE(gen->notify);
	if (!notify)
		return;
	switch (ev->type) {
	case IDGEN_EVENT_LEASE_SET:
	case IDGEN_EVENT_LEASE_RENEWED:
	case IDGEN_EVENT_LEASE_REVOKED:
		break;
	default:
		if (!__ratelimit(&gen->event_rs[ev->type])) {
			idgen_stat_inc(gen->stats, IDGEN_STAT_EVENTS_DROPPED);
			return;
		}
	}
	ev->now_ms = idgen_ns_to_ms(ktime_get_real_ns());
	notify(gen, ev);
}

void idgen_gen_adopt_clock(struct idgen_gen *gen)
{
	idgen_clock_read(&gen->clock, true, NULL);
}

void idgen_gen_get_state(struct idgen_gen *gen, struct idgen_state *st)
{
	const struct idgen_bits *layout = &gen->layout;
	struct idgen_lease *lease;
	s64 trusted, wall;
	u64 last, next;

	memset(st, 0, sizeof(*st));
	st->max_lead_ms = gen->max_lead_ms;
	st->max_step_ms = div_u64(gen->clock.params.max_step_ns, NSEC_PER_MSEC);

	mutex_lock(&gen->admin_lock);
	last = gen->last_ms;
	next = last + 1;
	lease = rcu_dereference_protected(gen->lease,
					  lockdep_is_held(&gen->admin_lock));
	if (lease) {
		u64 tick = atomic64_read(&lease->next);

		layout = &lease->layout;
		last = max(last, idgen_lease_last_ms(tick, layout->seq_bits));
		next = idgen_tick_ms(tick, layout->seq_bits);
		st->flags |= IDGEN_STATE_LEASED;
		st->floor_ms = lease->floor;
		st->valid_until_ms = atomic64_read(&lease->valid_until);
		st->region = lease->region;
		st->worker = lease->worker;
	}
	st->last_ms = last;
	st->region_bits = layout->region_bits;
	st->worker_bits = layout->worker_bits;
	st->seq_bits = layout->seq_bits;
	mutex_unlock(&gen->admin_lock);

	/*
	 * The clock after the state word: a caller preempted in between,
	 * while others mint, sees the generator's lead over the clock as
	 * less than it was, never more.
	 */
	trusted = idgen_clock_read(&gen->clock, false, &wall);
	st->now_ms = idgen_ns_to_ms(trusted);
	st->wall_ms = idgen_ns_to_ms(wall);
	st->next_ms = max(next, st->now_ms);
	st->held_step_ms = idgen_clock_held_ms(&gen->clock);
	if (st->held_step_ms)
		st->flags |= IDGEN_STATE_CLOCK_HELD;

	st->ids = idgen_stat_sum(gen->stats, IDGEN_STAT_IDS);
	st->reads = idgen_stat_sum(gen->stats, IDGEN_STAT_READS);
	st->borrowed_ms = idgen_stat_sum(gen->stats, IDGEN_STAT_BORROWED_MS);
	st->steps_back = idgen_stat_sum(gen->stats, IDGEN_STAT_STEPS_BACK);
	st->steps_forward = idgen_stat_sum(gen->stats, IDGEN_STAT_STEPS_FWD);
	st->steps_adopted = idgen_stat_sum(gen->stats, IDGEN_STAT_STEPS_ADOPTED);
	st->fence_refusals = idgen_stat_sum(gen->stats, IDGEN_STAT_FENCE_REFUSALS);
	st->lead_refusals = idgen_stat_sum(gen->stats, IDGEN_STAT_LEAD_REFUSALS);
	st->nolease_refusals = idgen_stat_sum(gen->stats, IDGEN_STAT_NOLEASE_REFUSALS);
	st->range_refusals = idgen_stat_sum(gen->stats, IDGEN_STAT_RANGE_REFUSALS);
}

static void idgen_gen_clock_event(struct idgen_gen *gen,
				  enum idgen_event type, s64 step_ms, bool held)
{
	struct idgen_event_info ev = {
		.type = type,
		.has_step = true,
		.step_ms = step_ms,
		.held = held,
	};

	idgen_gen_event(gen, &ev);
}

/*
 * The clock's changed hook: count each step and send its event.  Under
 * the clock's store_lock, so the events leave in the order it changed.
 */
static void idgen_gen_clock_changed(struct idgen_clock *clk, unsigned int ev,
				    s64 step_ms)
{
	struct idgen_gen *gen = container_of(clk, struct idgen_gen, clock);

	if (ev & IDGEN_CLOCK_STEP_BACK) {
		idgen_stat_inc(gen->stats, IDGEN_STAT_STEPS_BACK);
		idgen_gen_clock_event(gen, IDGEN_EVENT_CLOCK_STEP_BACK,
				      step_ms, false);
	}
	if (ev & IDGEN_CLOCK_STEP_FWD) {
		idgen_stat_inc(gen->stats, IDGEN_STAT_STEPS_FWD);
		idgen_gen_clock_event(gen, IDGEN_EVENT_CLOCK_STEP_FWD, step_ms,
				      ev & IDGEN_CLOCK_HELD);
	}
	if (ev & IDGEN_CLOCK_ADOPTED) {
		idgen_stat_inc(gen->stats, IDGEN_STAT_STEPS_ADOPTED);
		idgen_gen_clock_event(gen, IDGEN_EVENT_CLOCK_ADOPTED, step_ms,
				      false);
	}
}

static void idgen_poll_timer_fn(struct timer_list *t)
{
	struct idgen_gen *gen = timer_container_of(gen, t, poll_timer);

	wake_up_interruptible(&gen->wait);
}

int idgen_gen_init(struct idgen_gen *gen, const struct idgen_bits *layout,
		   u32 max_lead_ms, u32 max_step_ms)
{
	int cpu, i;

	gen->stats = alloc_percpu(struct idgen_stats);
	if (!gen->stats)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		u64_stats_init(&per_cpu_ptr(gen->stats, cpu)->syncp);
	RCU_INIT_POINTER(gen->lease, NULL);
	mutex_init(&gen->admin_lock);
	spin_lock_init(&gen->switch_lock);
	gen->last_ms = 0;
	idgen_clock_init(&gen->clock, max_step_ms, idgen_gen_clock_changed);
	gen->layout = *layout;
	gen->max_lead_ms = max_lead_ms;
	gen->max_borrow_ms = min_t(u32, IDGEN_MAX_BORROW_MS_DEFAULT, max_lead_ms);
	atomic64_set(&gen->clock_high_ms, 0);
	atomic64_set(&gen->oldest_wait.since, 0);
	atomic64_set(&gen->oldest_wait.until, 0);
	atomic64_set(&gen->oldest_wait.tickets, 0);
	init_waitqueue_head(&gen->wait);
	timer_setup(&gen->poll_timer, idgen_poll_timer_fn, 0);
	gen->fence_near_ms = IDGEN_FENCE_NEAR_MS_DEFAULT;
	gen->notify = NULL;
	for (i = 0; i <= IDGEN_EVENT_MAX; i++) {
		ratelimit_state_init(&gen->event_rs[i],
				     msecs_to_jiffies(IDGEN_EVENT_INTERVAL_MS),
				     IDGEN_EVENT_BURST);
		/* Held-back events are counted, not logged. */
		ratelimit_set_flags(&gen->event_rs[i], RATELIMIT_MSG_ON_RELEASE);
	}
	return 0;
}

/*
 * Context: no reader, admin call or clock reading can be running (the
 * device is gone, the clock stopped).
 */
void idgen_gen_uninit(struct idgen_gen *gen)
{
	timer_delete_sync(&gen->poll_timer);
	kfree(rcu_dereference_protected(gen->lease, true));
	RCU_INIT_POINTER(gen->lease, NULL);
	free_percpu(gen->stats);
	mutex_destroy(&gen->admin_lock);
}

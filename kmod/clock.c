// SPDX-License-Identifier: GPL-2.0
/*
 * The generator clock: the wall clock, checked against the raw clock.
 *
 * IDs carry CLOCK_REALTIME milliseconds so that hosts agree, but the wall
 * clock can be stepped.  CLOCK_MONOTONIC_RAW (plus time spent suspended) is
 * immune to steps and to NTP slew, so the difference between the two only
 * drifts slowly, by the slew NTP applies (at most 500 ppm).  A change of the
 * difference beyond that drift is a step:
 *
 *  - back: the wall clock is followed, and the generator, whose millisecond
 *    never decreases (the state word in lease.c only moves up), holds its
 *    last millisecond until the wall clock catches up or the lead bound is
 *    reached;
 *  - forward by up to max_step: followed;
 *  - forward by more: held back; the trusted time goes on at the raw rate
 *    from the last trusted offset until the step is adopted (the lease
 *    holder vouches for a synchronised clock, or an admin says so) or
 *    reverted, so a wrong step leaves no IDs stamped in the future.
 *
 * idgen_clock_advance() is the whole rule as a pure function of the state
 * and one reading, so tests can drive it with any sequence of readings.
 */
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>

#include "clock.h"
#include "compat.h"

/**
 * idgen_clock_advance() - apply one clock reading to the clock state
 * @st:         the state, updated in place.
 * @p:          the clock's parameters.
 * @s:          a simultaneous reading of the wall and raw clocks.
 * @adopt:      adopt a held forward step (the clock is known to be good).
 * @trusted_ns: set to the trusted wall time of this reading.
 * @step_ns:    set to the size of the step seen, if any.
 *
 * Context: any; pure.
 * Return: IDGEN_CLOCK_* bits; IDGEN_CLOCK_CHANGED when @st was modified and
 * must be stored for the next reading; IDGEN_CLOCK_STALE, with @st
 * untouched, for a reading older than the state, which must not judge it.
 */
unsigned int idgen_clock_advance(struct idgen_clock_state *st,
				 const struct idgen_clock_params *p,
				 const struct idgen_clock_sample *s, bool adopt,
				 s64 *trusted_ns, s64 *step_ns)
{
	s64 observed = s->wall_ns - (s64)s->raw_ns;
	u64 elapsed, allowance;
	s64 delta;

	*step_ns = 0;
	if (!st->valid) {
		st->offset_ns = observed;
		st->ref_raw_ns = s->raw_ns;
		st->confirmed_raw_ns = s->raw_ns;
		st->held_ns = 0;
		st->valid = true;
		*trusted_ns = s->wall_ns;
		return IDGEN_CLOCK_CHANGED;
	}

	/*
	 * A reader racing an update may hold a reading older than the state.
	 * Judged against it, a reading from before an adopted step would look
	 * like a step back and restore the offset the adoption replaced: it
	 * only yields an estimate from the state's own offset.
	 */
	if (s->raw_ns < st->ref_raw_ns) {
		*trusted_ns = (s64)s->raw_ns + st->offset_ns;
		return IDGEN_CLOCK_STALE;
	}
	elapsed = min_t(u64, s->raw_ns - st->ref_raw_ns,
			IDGEN_CLOCK_DRIFT_WINDOW_NS);
	allowance = mul_u64_u32_div(elapsed, p->drift_ppm, 1000000) +
		    IDGEN_CLOCK_SLACK_NS;
	delta = observed - st->offset_ns;

	if (delta > (s64)(p->max_step_ns + allowance)) {
		unsigned int ret = 0;

		*trusted_ns = (s64)s->raw_ns + st->offset_ns;
		*step_ns = delta;
		if (adopt) {
			st->offset_ns = observed;
			st->ref_raw_ns = s->raw_ns;
			st->confirmed_raw_ns = s->raw_ns;
			st->held_ns = 0;
			*trusted_ns = s->wall_ns;
			return IDGEN_CLOCK_CHANGED | IDGEN_CLOCK_ADOPTED;
		}
		/*
		 * A new step, or the wall clock stepped again while held.
		 * While held, the raw clock is the reference: restart the
		 * drift allowance now and then, so a held step is never
		 * mistaken for slew however long it is held.
		 */
		if (st->held_ns == 0 || abs(delta - st->held_ns) > (s64)allowance)
			ret = IDGEN_CLOCK_CHANGED | IDGEN_CLOCK_STEP_FWD |
			      IDGEN_CLOCK_HELD;
		else if (elapsed >= p->refresh_ns)
			ret = IDGEN_CLOCK_CHANGED;
		if (ret) {
			st->held_ns = delta;
			st->ref_raw_ns = s->raw_ns;
		}
		return ret;
	}

	*trusted_ns = s->wall_ns;
	/*
	 * Back from a held step: the wall clock may have slewed since the
	 * offset was last confirmed, not only since the last reading, and a
	 * step undone exactly is a revert however long it was held.  Never
	 * more than a step followed at once is credited so.
	 */
	if (st->held_ns)
		allowance = max(allowance,
				min(mul_u64_u32_div(s->raw_ns - st->confirmed_raw_ns,
						    p->drift_ppm, 1000000),
				    p->max_step_ns) + IDGEN_CLOCK_SLACK_NS);
	if (delta < -(s64)allowance) {
		unsigned int ret = IDGEN_CLOCK_CHANGED | IDGEN_CLOCK_STEP_BACK;

		if (st->held_ns)
			ret |= IDGEN_CLOCK_REVERTED;
		*step_ns = delta;
		st->offset_ns = observed;
		st->ref_raw_ns = s->raw_ns;
		st->confirmed_raw_ns = s->raw_ns;
		st->held_ns = 0;
		return ret;
	}

	if (delta > (s64)allowance) {
		/*
		 * A forward step small enough to follow at once, or what is
		 * left of a held one that was partly undone: followed as a
		 * step of its own, not taken for a revert.
		 */
		*step_ns = delta;
		st->offset_ns = observed;
		st->ref_raw_ns = s->raw_ns;
		st->confirmed_raw_ns = s->raw_ns;
		st->held_ns = 0;
		return IDGEN_CLOCK_CHANGED | IDGEN_CLOCK_STEP_FWD;
	}

	if (st->held_ns) {
		/* The wall clock came back within the allowance: undone. */
		st->offset_ns = observed;
		st->ref_raw_ns = s->raw_ns;
		st->confirmed_raw_ns = s->raw_ns;
		st->held_ns = 0;
		return IDGEN_CLOCK_CHANGED | IDGEN_CLOCK_REVERTED;
	}

	/* Normal time: re-confirm the offset now and then to track slew. */
	if (elapsed >= p->refresh_ns) {
		st->offset_ns = observed;
		st->ref_raw_ns = s->raw_ns;
		st->confirmed_raw_ns = s->raw_ns;
		return IDGEN_CLOCK_CHANGED;
	}
	return 0;
}

/**
 * idgen_clock_fast_view() - the state as the fast path sees it
 * @st:      the state.
 * @p:       the clock's parameters.
 * @boot_ns: the time suspended at the state's last reading.
 * @f:       set to the view.
 *
 * Context: any; pure.
 */
void idgen_clock_fast_view(const struct idgen_clock_state *st,
			   const struct idgen_clock_params *p, s64 boot_ns,
			   struct idgen_clock_fast *f)
{
	f->offset_ns = st->offset_ns + boot_ns;
	f->ref_raw_ns = st->ref_raw_ns - boot_ns;
	/* The rule credits slew up to the drift window, beyond the refresh. */
	f->window_ns = st->valid && !st->held_ns ?
		       min_t(u64, p->refresh_ns, IDGEN_CLOCK_DRIFT_WINDOW_NS) : 0;
	/* 2^-drift_shift is at most drift_ppm: never more than the rule's. */
	f->drift_shift = p->drift_ppm ?
			 order_base_2(DIV_ROUND_UP(1000000, p->drift_ppm)) : 63;
}

/*
 * Not deferrable: an idle host would put it off for as long as it idles,
 * and a reading after a gap longer than the slew cap takes drift for a
 * step.  Re-armed by itself until idgen_clock_stop().
 */
static void idgen_clock_refresh_fn(struct work_struct *work)
{
	struct idgen_clock *clk = container_of(to_delayed_work(work),
					       struct idgen_clock, refresh);

	idgen_clock_read(clk, false, NULL);
	schedule_delayed_work(&clk->refresh,
			      msecs_to_jiffies(IDGEN_CLOCK_REFRESH_MS));
}

/**
 * idgen_clock_init() - set up the generator clock
 * @clk:         the clock.
 * @max_step_ms: the largest forward step followed at once.
 * @changed:     told of each change of the state, or NULL.
 *
 * The clock is not read until idgen_clock_start().
 *
 * Context: process context.
 */
void idgen_clock_init(struct idgen_clock *clk, u32 max_step_ms,
		      idgen_clock_changed_fn changed)
{
	mutex_init(&clk->store_lock);
	spin_lock_init(&clk->lock);
	seqcount_spinlock_init(&clk->seq, &clk->lock);
	clk->state = (struct idgen_clock_state){};
	clk->fast = (struct idgen_clock_fast){};
	clk->params.max_step_ns = (u64)max_step_ms * NSEC_PER_MSEC;
	clk->params.drift_ppm = 500;
	clk->params.refresh_ns = NSEC_PER_SEC;
	clk->changed = changed;
	INIT_DELAYED_WORK(&clk->refresh, idgen_clock_refresh_fn);
}

/**
 * idgen_clock_start() - take the clock's offset, and keep it confirmed
 * @clk: the clock.
 *
 * The offset is taken now, not at the first read: a step made between
 * load and the first lease is then seen as one, not trusted.  From now
 * until idgen_clock_stop() the clock is read every IDGEN_CLOCK_REFRESH_MS.
 * The reading may tell @clk's changed hook of a step: whoever receives
 * what it sends must be ready.
 *
 * Context: process context; may sleep.
 */
void idgen_clock_start(struct idgen_clock *clk)
{
	idgen_clock_read(clk, false, NULL);
	schedule_delayed_work(&clk->refresh,
			      msecs_to_jiffies(IDGEN_CLOCK_REFRESH_MS));
}

/**
 * idgen_clock_stop() - stop the periodic reading
 * @clk: the clock.
 *
 * The work re-arms only itself, so once cancelled it stays so.  Stopped
 * before whoever receives what the changed hook sends goes away.
 *
 * Context: process context; may sleep.
 */
void idgen_clock_stop(struct idgen_clock *clk)
{
	cancel_delayed_work_sync(&clk->refresh);
}

static void idgen_clock_sample(struct idgen_clock_sample *s)
{
	struct idgen_time_snapshot snap;
	ktime_t boot;

	/*
	 * The raw clock stops while the host is suspended; the boot offset
	 * adds that time back, so a resume is not mistaken for a step.  It
	 * is not read in the snapshot: a resume between the two would pair
	 * a wall clock from after it with a raw one from before, a jump of
	 * the whole suspend.  Read it on both sides until it held still.
	 */
	do {
		boot = ktime_mono_to_any(0, TK_OFFS_BOOT);
		idgen_get_snapshot(&snap);
	} while (ktime_mono_to_any(0, TK_OFFS_BOOT) != boot);
	s->wall_ns = ktime_to_ns(snap.real);
	s->raw_ns = ktime_to_ns(ktime_add(snap.raw, boot));
	s->boot_ns = ktime_to_ns(boot);
}

/*
 * Log a change, and tell the hook of it: under store_lock, so changes are
 * told in the order they were made.
 */
static void idgen_clock_tell(struct idgen_clock *clk, unsigned int ev,
			     s64 step_ns)
{
	s64 step_ms = div_s64(step_ns, NSEC_PER_MSEC);

	lockdep_assert_held(&clk->store_lock);
	if (ev & IDGEN_CLOCK_STEP_BACK)
		pr_warn_ratelimited("wall clock stepped back by %lld ms; IDs hold the last millisecond until it catches up\n",
				    -step_ms);
	if ((ev & IDGEN_CLOCK_STEP_FWD) && (ev & IDGEN_CLOCK_HELD))
		pr_warn_ratelimited("wall clock jumped forward by %lld ms beyond the raw clock; not followed until adopted or reverted\n",
				    step_ms);
	if (ev & IDGEN_CLOCK_ADOPTED)
		pr_notice_ratelimited("forward wall-clock step of %lld ms adopted\n",
				      step_ms);
	if (ev & IDGEN_CLOCK_REVERTED)
		pr_notice_ratelimited("held wall-clock step reverted\n");
	if (clk->changed)
		clk->changed(clk, ev, step_ms);
}

/**
 * idgen_clock_read() - read the trusted wall time
 * @clk:     the generator clock.
 * @adopt:   adopt a held forward step.
 * @wall_ns: if not NULL, set to the wall clock reading.
 *
 * Most readings show no step since the state was stored, and a fast path
 * tells so from two cheap reads of the clocks (idgen_clock_fast_ok()).
 * Otherwise readers work on a copy of the state and store it back only
 * when the rule says it changed, which in normal running is once per
 * refresh period: the minting path takes no lock.  A reader that finds
 * the lock busy uses its own result unstored; the state word's
 * monotonicity, not this clock, is what keeps IDs unique, so a stale
 * result can only cost precision.
 *
 * Context: process context; takes a mutex and a spinlock only to store a
 * change, and may sleep then (the changed hook is called with the mutex
 * held).
 * Return: trusted wall time in ns since the Unix epoch.
 */
s64 idgen_clock_read(struct idgen_clock *clk, bool adopt, s64 *wall_ns)
{
	struct idgen_clock_state st;
	struct idgen_clock_sample s;
	struct idgen_clock_fast f;
	s64 trusted, step, wall;
	unsigned int seq, ev;

	if (!adopt && idgen_clock_read_fast(clk, &wall)) {
		if (wall_ns)
			*wall_ns = wall;
		return wall;
	}

	idgen_clock_sample(&s);
	if (wall_ns)
		*wall_ns = s.wall_ns;

	do {
		seq = read_seqcount_begin(&clk->seq);
		st = clk->state;
	} while (read_seqcount_retry(&clk->seq, seq));

	ev = idgen_clock_advance(&st, &clk->params, &s, adopt, &trusted, &step);
	if (!(ev & (IDGEN_CLOCK_CHANGED | IDGEN_CLOCK_STALE)))
		return trusted;

	if (adopt)
		mutex_lock(&clk->store_lock);
	else if (!mutex_trylock(&clk->store_lock))
		return trusted;
	spin_lock(&clk->lock);

	/*
	 * Re-apply to the current state: another reader may have moved it,
	 * with a later reading than ours.  Then ours is judged by nothing:
	 * a fresh one is taken, which no state can predate under the lock.
	 */
	st = clk->state;
	ev = idgen_clock_advance(&st, &clk->params, &s, adopt, &trusted, &step);
	if (ev & IDGEN_CLOCK_STALE) {
		idgen_clock_sample(&s);
		if (wall_ns)
			*wall_ns = s.wall_ns;
		ev = idgen_clock_advance(&st, &clk->params, &s, adopt,
					 &trusted, &step);
		/*
		 * No state stored can be newer than a reading taken under
		 * the lock, unless the raw clock went back: move the state's
		 * references to this reading, keeping its offset and any
		 * held step, rather than answer with an estimate.
		 */
		if (WARN_ON_ONCE(ev & IDGEN_CLOCK_STALE)) {
			st.ref_raw_ns = s.raw_ns;
			st.confirmed_raw_ns = s.raw_ns;
			ev = idgen_clock_advance(&st, &clk->params, &s, adopt,
						 &trusted, &step) |
			     IDGEN_CLOCK_CHANGED;
		}
	}
	if (ev & IDGEN_CLOCK_CHANGED) {
		idgen_clock_fast_view(&st, &clk->params, s.boot_ns, &f);
		write_seqcount_begin(&clk->seq);
		clk->state = st;
		clk->fast = f;
		write_seqcount_end(&clk->seq);
	}
	spin_unlock(&clk->lock);

	/* Under store_lock: told in the order the state changed. */
	idgen_clock_tell(clk, ev, step);
	mutex_unlock(&clk->store_lock);
	return trusted;
}

s64 idgen_clock_held_ms(struct idgen_clock *clk)
{
	unsigned int seq;
	s64 held;

	do {
		seq = read_seqcount_begin(&clk->seq);
		held = clk->state.held_ns;
	} while (read_seqcount_retry(&clk->seq, seq));
	return div_s64(held, NSEC_PER_MSEC);
}

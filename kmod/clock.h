/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _IDGEN_CLOCK_H
#define _IDGEN_CLOCK_H

#include <linux/mutex.h>
#include <linux/seqlock.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>
#include <linux/types.h>
#include <linux/workqueue.h>

/**
 * struct idgen_clock_state - what the generator clock remembers
 * @offset_ns:  the trusted offset of the wall clock from the raw clock
 *              (CLOCK_REALTIME - suspend-corrected CLOCK_MONOTONIC_RAW).
 * @ref_raw_ns: raw reading the drift allowance counts from: where
 *              @offset_ns was last confirmed or, while a step is held,
 *              where the held step was last judged; NTP slew may have
 *              moved the wall clock by up to drift_ppm since.
 * @held_ns:    size of a forward wall-clock step not followed, 0 if none.
 * @confirmed_raw_ns: raw reading at which @offset_ns was last confirmed;
 *              unlike @ref_raw_ns it stays put while a step is held, so
 *              the slew since is credited when the step is undone.
 * @valid:      false until the first reading.
 */
struct idgen_clock_state {
	s64 offset_ns;
	u64 ref_raw_ns;
	s64 held_ns;
	u64 confirmed_raw_ns;
	bool valid;
};

/*
 * Slew is credited for at most this long since the offset was last
 * confirmed.  The clock is read at least twice as often, from load to
 * unload (idgen_clock_start()), so only a reading after a suspend meets
 * the cap: a change beyond max_step is then held until adopted or
 * reverted, not taken for an hour's worth of slew.
 */
#define IDGEN_CLOCK_DRIFT_WINDOW_NS	(60 * NSEC_PER_SEC)

/*
 * From load to unload the clock is read this often, readers, lease or
 * not, and on time (not deferrable): no gap between readings
 * reaches the slew cap, so ordinary NTP frequency drift is never taken
 * for a step, and a held step stays recognisable.
 */
#define IDGEN_CLOCK_REFRESH_MS	10000
static_assert(2 * IDGEN_CLOCK_REFRESH_MS * NSEC_PER_MSEC <=
	      IDGEN_CLOCK_DRIFT_WINDOW_NS);

struct idgen_clock_params {
	u64 max_step_ns;	/* largest forward step followed at once */
	u32 drift_ppm;		/* wall-clock slew tolerated against raw */
	u64 refresh_ns;		/* how often the offset is re-confirmed */
};

/* One simultaneous reading of both clocks. */
struct idgen_clock_sample {
	s64 wall_ns;		/* CLOCK_REALTIME */
	u64 raw_ns;		/* CLOCK_MONOTONIC_RAW + time suspended */
	s64 boot_ns;		/* the time suspended, as added to @raw_ns */
};

/*
 * The state as the fast path sees it (idgen_clock_fast_ok()): its offset
 * and reference taken back to the raw clock without the time suspended,
 * as of the state's last reading.  A reader needs only the two clocks'
 * cheap reads then, not the boot offset: a suspend since moves the
 * offset it observes by the time suspended (a suspend takes far longer
 * than the slack), out of the fast path's reach, and the rule judges it.
 */
struct idgen_clock_fast {
	s64 offset_ns;		/* CLOCK_REALTIME - CLOCK_MONOTONIC_RAW */
	u64 ref_raw_ns;		/* CLOCK_MONOTONIC_RAW at the reference */
	u64 window_ns;		/* how long after it, 0 while the rule must judge */
	u8 drift_shift;		/* slew credited: elapsed >> drift_shift */
};

/* Results of idgen_clock_advance(), as bits. */
#define IDGEN_CLOCK_CHANGED	BIT(0)	/* the state must be stored */
#define IDGEN_CLOCK_STEP_BACK	BIT(1)	/* wall clock went back */
#define IDGEN_CLOCK_STEP_FWD	BIT(2)	/* wall clock jumped forward */
#define IDGEN_CLOCK_HELD	BIT(3)	/* ... too far: not followed */
#define IDGEN_CLOCK_ADOPTED	BIT(4)	/* a held step was adopted */
#define IDGEN_CLOCK_REVERTED	BIT(5)	/* a held step was undone */
#define IDGEN_CLOCK_STALE	BIT(6)	/* the reading predates the state */

unsigned int idgen_clock_advance(struct idgen_clock_state *st,
				 const struct idgen_clock_params *p,
				 const struct idgen_clock_sample *s, bool adopt,
				 s64 *trusted_ns, s64 *step_ns);
void idgen_clock_fast_view(const struct idgen_clock_state *st,
			   const struct idgen_clock_params *p, s64 boot_ns,
			   struct idgen_clock_fast *f);

/*
 * Both clocks are read in one snapshot, so their difference has no read
 * jitter; this margin only absorbs rounding in the drift allowance.  It is
 * also the fast path's whole tolerance (idgen_clock_fast_ok()).
 */
#define IDGEN_CLOCK_SLACK_NS	(100 * NSEC_PER_USEC)

/**
 * idgen_clock_fast_ok() - can a reading be judged without the rule?
 * @f:      the fast view of the state, idgen_clock_fast_view().
 * @raw_ns: CLOCK_MONOTONIC_RAW, without the time suspended.
 * @wall_ns: CLOCK_REALTIME, read after @raw_ns.
 *
 * True when the reading lies within the refresh period of the state's
 * reference, and its offset within the slack of the state's plus the
 * slew credited since: then idgen_clock_advance() would leave the state
 * untouched and trust @wall_ns (its allowance, drift_ppm of the time
 * elapsed plus the slack, is never below this tolerance), so the caller
 * may take @wall_ns as it is.  Anything else (a step, a held step, a
 * suspend, a reading older than the state, a state due for refresh) goes
 * to the rule.
 *
 * The two reads are not one snapshot: whatever separates them makes the
 * wall clock read later than the raw one, so a forward step can only
 * look larger than it is, and one the rule would hold is never taken.
 * That holds however long the gap (interrupts, a paused virtual CPU);
 * preemption is off between the reads only to keep it short.  A step
 * back of the same size as the gap could look like none; the stamped
 * time is the same either way (the rule trusts the wall clock after a
 * step back too), and only its count waits for the next reading the
 * rule judges.
 *
 * Context: any; pure.
 * Return: true when @wall_ns may be taken as it is, false when the
 * reading must go to idgen_clock_advance().
 */
static inline bool idgen_clock_fast_ok(const struct idgen_clock_fast *f,
				       u64 raw_ns, s64 wall_ns)
{
	s64 delta = wall_ns - (s64)raw_ns - f->offset_ns;
	u64 elapsed = raw_ns - f->ref_raw_ns, tolerance;

	if (elapsed >= f->window_ns)
		return false;
	tolerance = IDGEN_CLOCK_SLACK_NS + (elapsed >> f->drift_shift);
	return (u64)delta + tolerance <= 2 * tolerance;
}

struct idgen_clock;

/*
 * Told of every change of the state that a reader should hear of: @ev the
 * IDGEN_CLOCK_* bits of idgen_clock_advance(), @step_ms the step's size.
 * Called under the clock's store_lock, so changes are told in the order
 * they were made; process context, may sleep.
 */
typedef void (*idgen_clock_changed_fn)(struct idgen_clock *clk,
				       unsigned int ev, s64 step_ms);

/**
 * struct idgen_clock - the host's generator clock
 * @store_lock: held by a writer of @state until @changed has been told of
 *          its change, so changes are told in the order they were made.
 * @lock:   serialises writers of @state.
 * @seq:    lets readers take a consistent copy of @state without the lock.
 * @state:  see struct idgen_clock_state.
 * @fast:   @state as the fast path sees it, stored with it.
 * @params: fixed after init.
 * @changed: told of each change (steps, adoptions, reverts); fixed after
 *          init.
 * @refresh: reads the clock every IDGEN_CLOCK_REFRESH_MS from
 *          idgen_clock_start() to idgen_clock_stop(), so its offset is
 *          confirmed however rarely anyone mints.
 */
struct idgen_clock {
	struct mutex store_lock;	/* orders changes and their telling */
	spinlock_t lock;		/* serialises writers of @state */
	seqcount_spinlock_t seq;
	struct idgen_clock_state state;
	struct idgen_clock_fast fast;
	struct idgen_clock_params params;
	idgen_clock_changed_fn changed;
	struct delayed_work refresh;
};

/**
 * idgen_clock_read_fast() - the wall clock, when no step can be in it
 * @clk:     the generator clock.
 * @wall_ns: set to CLOCK_REALTIME when the answer is true.
 *
 * The fast path of idgen_clock_read(): two cheap reads of the clocks,
 * judged by idgen_clock_fast_ok() against the state as last stored.
 *
 * Context: process context (on PREEMPT_RT, a reader of the state's
 * sequence count may take the lock of a writer it meets).
 * Return: true when @wall_ns is the trusted time; false when the rule
 * must judge the reading (idgen_clock_read()).
 */
static inline bool idgen_clock_read_fast(struct idgen_clock *clk, s64 *wall_ns)
{
	unsigned int seq;
	u64 raw;
	bool ok;

	/* The raw clock first, and close by: see idgen_clock_fast_ok(). */
	preempt_disable();
	raw = ktime_get_raw_fast_ns();
	*wall_ns = ktime_get_real_fast_ns();
	preempt_enable();
	/* Judged in place, not copied out: it is pure, and judged again on a retry. */
	do {
		seq = read_seqcount_begin(&clk->seq);
		ok = idgen_clock_fast_ok(&clk->fast, raw, *wall_ns);
	} while (read_seqcount_retry(&clk->seq, seq));
	return ok;
}

void idgen_clock_init(struct idgen_clock *clk, u32 max_step_ms,
		      idgen_clock_changed_fn changed);
void idgen_clock_start(struct idgen_clock *clk);
void idgen_clock_stop(struct idgen_clock *clk);
s64 idgen_clock_read(struct idgen_clock *clk, bool adopt, s64 *wall_ns);
s64 idgen_clock_held_ms(struct idgen_clock *clk);

#endif /* _IDGEN_CLOCK_H */

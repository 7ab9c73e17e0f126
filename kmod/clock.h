/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _IDGEN_CLOCK_H
#define _IDGEN_CLOCK_H

#include <linux/mutex.h>
#include <linux/seqlock.h>
#include <linux/spinlock.h>
#include <linux/types.h>

/**
 * struct idgen_clock_state - what the generator clock remembers
 * @offset_ns:  the trusted offset of the wall clock from the raw clock
 *              (CLOCK_REALTIME - suspend-corrected CLOCK_MONOTONIC_RAW).
 * @ref_raw_ns: raw reading at which @offset_ns was last confirmed; NTP slew
 *              may have moved the wall clock by up to drift_ppm since.
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
 * confirmed.  The generator reads the clock at least twice as often, from
 * load to unload (generator.c), so only a reading after a suspend meets
 * the cap: a change beyond max_step is then held until adopted or
 * reverted, not taken for an hour's worth of slew.
 */
#define IDGEN_CLOCK_DRIFT_WINDOW_NS	(60 * NSEC_PER_SEC)

/*
 * From load to unload the generator reads the clock this often, readers,
 * lease or not, and on time (not deferrable): no gap between readings
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

/**
 * struct idgen_clock - the host's generator clock
 * @store_lock: held by a writer of @state until the events of its change
 *          are sent, so they leave in the order the state changed.
 * @lock:   serialises writers of @state.
 * @seq:    lets readers take a consistent copy of @state without the lock.
 * @state:  see struct idgen_clock_state.
 * @params: fixed after init.
 */
struct idgen_clock {
	struct mutex store_lock;	/* orders changes and their events */
	spinlock_t lock;		/* serialises writers of @state */
	seqcount_spinlock_t seq;
	struct idgen_clock_state state;
	struct idgen_clock_params params;
};

struct idgen_gen;

void idgen_clock_init(struct idgen_clock *clk, u32 max_step_ms);
s64 idgen_clock_read(struct idgen_gen *gen, bool adopt, s64 *wall_ns);
s64 idgen_clock_held_ms(struct idgen_clock *clk);

#endif /* _IDGEN_CLOCK_H */

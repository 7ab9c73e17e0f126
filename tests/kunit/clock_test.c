// SPDX-License-Identifier: GPL-2.0
/*
 * idgen_clock: the clock rule driven with injected wall and raw readings.
 *
 * Every scenario also mints through a lease at each reading, the way the
 * device does, so the clock rules of Documentation/design.md section 5 are checked
 * on the IDs:
 *   C1  stamped milliseconds never decrease (and IDs never repeat);
 *   C2  normally the trusted time is the wall clock;
 *   C3  after a step back, IDs run at most max_lead ahead of the wall clock,
 *       then minting is refused;
 *   C4  a forward jump beyond max_step is not followed until adopted or
 *       reverted: no ID is stamped in the wall clock's false future.
 */
#include <kunit/test.h>
#include <linux/prandom.h>

#include "clock.h"
#include "lease.h"

#define MS	NSEC_PER_MSEC
#define US	NSEC_PER_USEC
#define MAX_LEAD_MS	1000
#define MAX_STEP_MS	1000
/* 2026-06-01T00:00:00Z, a wall clock well inside the ID range. */
#define WALL0	(1780272000000LL * MS)

enum follow { FOLLOW_WALL, FOLLOW_RAW };

/* Apply @repeat readings, each moving wall and raw by these amounts. */
struct clock_step {
	s64 wall_us;
	s64 raw_us;
	int repeat;
	bool adopt;
	unsigned int events;	/* events expected at the first reading */
	enum follow follow;	/* what the trusted time equals after each */
	int mint;		/* 0 or the errno of minting at the last one */
};

#define EVENTS (IDGEN_CLOCK_STEP_BACK | IDGEN_CLOCK_STEP_FWD | \
		IDGEN_CLOCK_HELD | IDGEN_CLOCK_ADOPTED | IDGEN_CLOCK_REVERTED)
#define REFRESH_US	(IDGEN_CLOCK_REFRESH_MS * 1000LL)
#define TICK(n)	{ 1000, 1000, n, false, 0, FOLLOW_WALL, 0 }
#define STEPS_MAX 8

struct clock_case {
	const char *name;
	struct clock_step steps[STEPS_MAX];
};

static const struct clock_case clock_cases[] = {
	{ "steady", { TICK(5000) } },
	{ "back 1 ms", { TICK(10),
	  { -1000, 0, 1, false, IDGEN_CLOCK_STEP_BACK, FOLLOW_WALL, 0 },
	  TICK(10) } },
	{ "back 25 ms", { TICK(10),
	  { -25000, 0, 1, false, IDGEN_CLOCK_STEP_BACK, FOLLOW_WALL, 0 },
	  TICK(30) } },
	{ "back 999 ms", { TICK(10),
	  { -999000, 0, 1, false, IDGEN_CLOCK_STEP_BACK, FOLLOW_WALL, 0 },
	  TICK(1000) } },
	{ "back 1001 ms: beyond the lead, refused until caught up", { TICK(10),
	  { -1001000, 0, 1, false, IDGEN_CLOCK_STEP_BACK, FOLLOW_WALL, -ETIME },
	  TICK(2) } },
	{ "back 1 h: refused, then recovers", { TICK(10),
	  { -3600000000LL, 0, 1, false, IDGEN_CLOCK_STEP_BACK, FOLLOW_WALL, -ETIME },
	  { 1000000, 1000000, 3598, false, 0, FOLLOW_WALL, -ETIME },
	  { 1000000, 1000000, 2, false, 0, FOLLOW_WALL, 0 },
	  TICK(10) } },
	{ "leap second repeated", { TICK(10),
	  { -1000000, 0, 1, false, IDGEN_CLOCK_STEP_BACK, FOLLOW_WALL, 0 },
	  TICK(1000) } },
	{ "forward 999 ms: followed", { TICK(10),
	  { 999000, 0, 1, false, IDGEN_CLOCK_STEP_FWD, FOLLOW_WALL, 0 },
	  TICK(10) } },
	{ "forward 1001 ms: held", { TICK(10),
	  { 1001000, 0, 1, false, IDGEN_CLOCK_STEP_FWD | IDGEN_CLOCK_HELD,
	    FOLLOW_RAW, 0 },
	  { 1000, 1000, 100, false, 0, FOLLOW_RAW, 0 } } },
	{ "forward 1 h spike, reverted after 5 s", { TICK(10),
	  { 3600000000LL, 0, 1, false, IDGEN_CLOCK_STEP_FWD | IDGEN_CLOCK_HELD,
	    FOLLOW_RAW, 0 },
	  { 1000000, 1000000, 5, false, 0, FOLLOW_RAW, 0 },
	  { -3600000000LL, 0, 1, false, IDGEN_CLOCK_REVERTED, FOLLOW_WALL, 0 },
	  TICK(100) } },
	{ "forward 1 h adopted by the confirm flag", { TICK(10),
	  { 3600000000LL, 0, 1, false, IDGEN_CLOCK_STEP_FWD | IDGEN_CLOCK_HELD,
	    FOLLOW_RAW, 0 },
	  { 1000, 1000, 1, true, IDGEN_CLOCK_ADOPTED, FOLLOW_WALL, 0 },
	  TICK(10) } },
	{ "adopt with nothing held changes nothing", { TICK(10),
	  { 1000, 1000, 10, true, 0, FOLLOW_WALL, 0 } } },
	{ "suspend 1 h and resume", { TICK(10),
	  { 3600000000LL, 3600000000LL, 1, false, 0, FOLLOW_WALL, 0 },
	  TICK(10) } },
	{ "raw drift +500 ppm", {
	  { 1000500, 1000000, 3000, false, 0, FOLLOW_WALL, 0 } } },
	{ "raw drift -500 ppm", {
	  { 999500, 1000000, 3000, false, 0, FOLLOW_WALL, 0 } } },
	/*
	 * Ordinary NTP frequency drift, read at the generator's refresh
	 * period for hours: never a step, the trusted time is the wall's.
	 */
	{ "wall drift +20 ppm for 1 h at the refresh period", {
	  { REFRESH_US + REFRESH_US / 50000, REFRESH_US, 3600 * 1000 / IDGEN_CLOCK_REFRESH_MS,
	    false, 0, FOLLOW_WALL, 0 } } },
	{ "wall drift +50 ppm for 6 h at the refresh period", {
	  { REFRESH_US + REFRESH_US / 20000, REFRESH_US, 6 * 3600 * 1000 / IDGEN_CLOCK_REFRESH_MS,
	    false, 0, FOLLOW_WALL, 0 } } },
	{ "wall drift -50 ppm for 6 h at the refresh period", {
	  { REFRESH_US - REFRESH_US / 20000, REFRESH_US, 6 * 3600 * 1000 / IDGEN_CLOCK_REFRESH_MS,
	    false, 0, FOLLOW_WALL, 0 } } },
	{ "forward 1.5 s after an hour of steady time: held", {
	  { 1000000, 1000000, 3600, false, 0, FOLLOW_WALL, 0 },
	  { 1500000, 0, 1, false, IDGEN_CLOCK_STEP_FWD | IDGEN_CLOCK_HELD,
	    FOLLOW_RAW, 0 } } },
	{ "forward 2.7 s in one reading after 1 h idle: held", { TICK(10),
	  { 3600000000LL + 2700000, 3600000000LL, 1, false,
	    IDGEN_CLOCK_STEP_FWD | IDGEN_CLOCK_HELD, FOLLOW_RAW, 0 },
	  { 1000, 1000, 10, false, 0, FOLLOW_RAW, 0 } } },
	{ "held +10 s, one reading after 5 h idle: still held", { TICK(10),
	  { 10000000, 0, 1, false, IDGEN_CLOCK_STEP_FWD | IDGEN_CLOCK_HELD,
	    FOLLOW_RAW, 0 },
	  { 18000000000LL, 18000000000LL, 1, false, 0, FOLLOW_RAW, 0 },
	  { 1000, 1000, 10, false, 0, FOLLOW_RAW, 0 } } },
	{ "held +10 s undone to +0.5 s: the rest followed, no revert", { TICK(10),
	  { 10000000, 0, 1, false, IDGEN_CLOCK_STEP_FWD | IDGEN_CLOCK_HELD,
	    FOLLOW_RAW, 0 },
	  { -9500000, 0, 1, false, IDGEN_CLOCK_STEP_FWD, FOLLOW_WALL, 0 },
	  TICK(10) } },
	{ "held +10 s for 1 h at +50 ppm, then undone exactly: reverted", { TICK(10),
	  { 10000000, 0, 1, false, IDGEN_CLOCK_STEP_FWD | IDGEN_CLOCK_HELD,
	    FOLLOW_RAW, 0 },
	  { 1000050, 1000000, 3600, false, 0, FOLLOW_RAW, 0 },
	  { -10000000, 0, 1, false, IDGEN_CLOCK_REVERTED, FOLLOW_WALL, 0 },
	  TICK(10) } },
	{ "held step stays held however long", { TICK(1),
	  { 1500000, 0, 1, false, IDGEN_CLOCK_STEP_FWD | IDGEN_CLOCK_HELD,
	    FOLLOW_RAW, 0 },
	  { 1000000, 1000000, 3000, false, 0, FOLLOW_RAW, 0 } } },
};

static void clock_case_desc(const struct clock_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(clock, clock_cases, clock_case_desc);

/* A clock and a lease, advanced together one reading at a time. */
struct clock_rig {
	struct idgen_clock_params p;
	struct idgen_clock_state st;
	struct idgen_clock_sample s;
	struct idgen_lease lease;
	s64 trusted;
	u64 last_tick;		/* last tick minted, 0 before any */
	s64 held_base;		/* wall - raw when the last held step began */
};

static u64 ns_to_id_ms(s64 ns)
{
	return div_u64(ns, MS) - IDGEN_EPOCH_UNIX_MS;
}

static void clock_rig_init(struct clock_rig *r)
{
	s64 step;

	memset(r, 0, sizeof(*r));
	r->p.max_step_ns = MAX_STEP_MS * MS;
	r->p.drift_ppm = 500;
	r->p.refresh_ns = NSEC_PER_SEC;
	r->s.wall_ns = WALL0;
	r->s.raw_ns = 1000ULL * NSEC_PER_SEC;
	idgen_clock_advance(&r->st, &r->p, &r->s, false, &r->trusted, &step);
	r->lease.layout = (struct idgen_bits){ 3, 7, 12 };
	atomic64_set(&r->lease.next, 1ULL << 12);
	atomic64_set(&r->lease.valid_until, IDGEN_MS_MAX + 1);
}

/* One reading: returns the events; mints a few IDs and checks C1 and C3. */
static unsigned int clock_rig_read(struct kunit *test, struct clock_rig *r,
				   s64 wall_us, s64 raw_us, bool adopt,
				   int *mint_err)
{
	struct idgen_range range;
	u64 wait, borrowed, now_ms, last_ms;
	unsigned int ev;
	s64 step;
	int err;

	r->s.wall_ns += wall_us * US;
	r->s.raw_ns += raw_us * US;
	ev = idgen_clock_advance(&r->st, &r->p, &r->s, adopt, &r->trusted, &step);

	now_ms = ns_to_id_ms(r->trusted);
	err = idgen_lease_reserve(&r->lease, now_ms, MAX_LEAD_MS, IDGEN_BORROW_ANY, 7, &range,
				  &wait, &borrowed);
	*mint_err = err;
	if (err)
		return ev;

	last_ms = idgen_tick_ms(range.first + range.count - 1, 12);
	/* C1: strictly above everything minted before. */
	KUNIT_EXPECT_GT(test, range.first + 1, r->last_tick);
	if (r->last_tick)
		KUNIT_EXPECT_GT(test, range.first, r->last_tick);
	r->last_tick = range.first + range.count - 1;
	/* Never behind the trusted clock, never beyond the lead bound. */
	KUNIT_EXPECT_GE(test, idgen_tick_ms(range.first, 12), now_ms);
	KUNIT_EXPECT_LE(test, last_ms, now_ms + MAX_LEAD_MS);
	return ev;
}

static void idgen_clock_test_scenario(struct kunit *test)
{
	const struct clock_case *c = test->param_value;
	struct clock_rig *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	int i, k, err;

	KUNIT_ASSERT_NOT_NULL(test, r);
	clock_rig_init(r);
	for (i = 0; i < STEPS_MAX && c->steps[i].repeat; i++) {
		const struct clock_step *st = &c->steps[i];

		for (k = 0; k < st->repeat; k++) {
			unsigned int ev = clock_rig_read(test, r, st->wall_us,
							 st->raw_us, st->adopt,
							 &err);

			if (k == 0) {
				KUNIT_EXPECT_EQ_MSG(test, ev & EVENTS, st->events,
						    "step %d", i);
				if (ev & IDGEN_CLOCK_HELD)
					r->held_base = r->st.offset_ns;
			}
			if (st->follow == FOLLOW_WALL) {
				/* C2 */
				KUNIT_EXPECT_EQ_MSG(test, r->trusted, r->s.wall_ns,
						    "step %d reading %d", i, k);
				KUNIT_EXPECT_EQ(test, r->st.held_ns, 0LL);
			} else {
				/* C4: the raw clock from the last trusted offset. */
				KUNIT_EXPECT_EQ_MSG(test, r->trusted,
						    (s64)r->s.raw_ns + r->held_base,
						    "step %d reading %d", i, k);
				KUNIT_EXPECT_LT(test, r->trusted,
						r->s.wall_ns - (s64)(MAX_STEP_MS * MS));
				KUNIT_EXPECT_NE(test, r->st.held_ns, 0LL);
			}
			if (k == st->repeat - 1)
				KUNIT_EXPECT_EQ_MSG(test, err, st->mint,
						    "minting after step %d", i);
		}
	}
}

/*
 * A long random walk: small ticks with slew, and now and then steps back,
 * jumps forward, reverts and adoptions.  At every reading the rules hold:
 * the trusted time is the wall clock unless a step is held, and then it is
 * the raw clock from the offset trusted before the step; minted IDs only
 * go up and stay within the lead bound (checked in clock_rig_read()).
 *
 * A reference model decides independently whether a step must be held: it
 * adds up the steps the walk injected since the clock last trusted the
 * wall, and holds when they exceed max_step.  Slew is left out of the
 * model, so readings within MODEL_FUZZ_US of the threshold are not judged.
 */
#define MODEL_FUZZ_US	5000
static void idgen_clock_test_random_walk(struct kunit *test)
{
	struct clock_rig *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	struct rnd_state rnd;
	s64 pending = 0;	/* size of the forward jump not reverted yet */
	s64 excess = 0;		/* model: steps injected since the last trust */
	int i, err, minted = 0, refused = 0, held = 0, judged = 0;

	KUNIT_ASSERT_NOT_NULL(test, r);
	clock_rig_init(r);
	prandom_seed_state(&rnd, 0x1d6e4);

	for (i = 0; i < 20000; i++) {
		u32 dice = prandom_u32_state(&rnd) % 1000;
		s64 raw_us = prandom_u32_state(&rnd) % 20000;
		/* Slew within +/-400 ppm, inside the 500 ppm allowance. */
		s64 ppm = (s64)(prandom_u32_state(&rnd) % 801) - 400;
		s64 wall_us = raw_us + div_s64(raw_us * ppm, 1000000);
		bool adopt = false;
		s64 before = r->st.offset_ns;
		unsigned int ev;

		if (dice < 5) {
			/* step back up to 3 s */
			s64 back = prandom_u32_state(&rnd) % 3000000;

			wall_us -= back;
			excess -= back;
		} else if (dice < 8 && !pending) {
			/* jump forward 1.1 s to 2 h */
			pending = 1100000 + prandom_u32_state(&rnd) % 7200000000U;
			wall_us += pending;
			excess += pending;
		} else if (dice < 12 && pending) {
			wall_us -= pending;
			excess -= pending;
			pending = 0;
		} else if (dice < 14) {
			adopt = true;
			pending = 0;
			excess = 0;
		}

		ev = clock_rig_read(test, r, wall_us, raw_us, adopt, &err);
		if (err) {
			KUNIT_EXPECT_EQ(test, err, -ETIME);
			refused++;
		} else {
			minted++;
		}
		if (r->st.held_ns) {
			held++;
			KUNIT_EXPECT_EQ(test, r->trusted, (s64)r->s.raw_ns + r->st.offset_ns);
			KUNIT_EXPECT_LT(test, r->trusted, r->s.wall_ns);
			KUNIT_EXPECT_EQ(test, r->st.offset_ns, before);
		} else {
			KUNIT_EXPECT_EQ(test, r->trusted, r->s.wall_ns);
		}
		if (ev & IDGEN_CLOCK_ADOPTED)
			KUNIT_EXPECT_TRUE(test, adopt);
		if (ev & IDGEN_CLOCK_HELD)
			KUNIT_EXPECT_NE(test, pending, 0LL);

		/* The reference model. */
		if (excess > MAX_STEP_MS * 1000 + MODEL_FUZZ_US) {
			KUNIT_EXPECT_NE_MSG(test, r->st.held_ns, 0LL,
					    "reading %d: %lld us of steps not held", i, excess);
			judged++;
		} else if (excess < MAX_STEP_MS * 1000 - MODEL_FUZZ_US) {
			KUNIT_EXPECT_EQ_MSG(test, r->st.held_ns, 0LL,
					    "reading %d: held with %lld us of steps", i, excess);
			judged++;
		}
		/* Following the wall clock makes it the new point of trust. */
		if (!r->st.held_ns)
			excess = 0;
	}
	KUNIT_EXPECT_GT(test, judged, 19000);
	/* The walk must have visited every regime, or it proved little. */
	KUNIT_EXPECT_GT(test, minted, 1000);
	KUNIT_EXPECT_GT(test, refused, 0);
	KUNIT_EXPECT_GT(test, held, 0);
}

/*
 * A reading taken before a forward step, and applied after another reader
 * judged a later one, must change nothing: against an adopted step it
 * would look like a step back and restore the old offset; against a held
 * one, like a revert.  It yields an estimate from the state's offset.
 */
static void idgen_clock_test_stale_reading(struct kunit *test)
{
	struct clock_rig *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	struct idgen_clock_sample stale;
	struct idgen_clock_state before;
	unsigned int ev;
	s64 trusted, step;
	int adopt, err, i;

	KUNIT_ASSERT_NOT_NULL(test, r);
	for (adopt = 0; adopt <= 1; adopt++) {
		clock_rig_init(r);
		for (i = 0; i < 10; i++)
			clock_rig_read(test, r, 1000, 1000, false, &err);
		/* A reader takes its reading, then is preempted ... */
		stale = r->s;
		/* ... across a +10 s step that another reader adopts or holds. */
		ev = clock_rig_read(test, r, 10000000 + 1000, 1000, adopt, &err);
		KUNIT_EXPECT_EQ(test, ev & EVENTS, adopt ? IDGEN_CLOCK_ADOPTED :
				IDGEN_CLOCK_STEP_FWD | IDGEN_CLOCK_HELD);
		before = r->st;

		ev = idgen_clock_advance(&r->st, &r->p, &stale, false, &trusted,
					 &step);
		KUNIT_EXPECT_EQ_MSG(test, ev, IDGEN_CLOCK_STALE, "adopt %d", adopt);
		KUNIT_EXPECT_EQ(test, r->st.offset_ns, before.offset_ns);
		KUNIT_EXPECT_EQ(test, r->st.ref_raw_ns, before.ref_raw_ns);
		KUNIT_EXPECT_EQ(test, r->st.held_ns, before.held_ns);
		KUNIT_EXPECT_EQ(test, trusted, (s64)stale.raw_ns + before.offset_ns);
		KUNIT_EXPECT_EQ(test, step, 0LL);
	}
}

/*
 * The fast path (idgen_clock_fast_ok()) must never judge a reading other
 * than the rule would: whenever it takes a reading, the rule applied to
 * the same state and reading changes nothing and trusts the wall clock.
 * A random walk of small ticks with slew, steps, jumps, reverts,
 * adoptions, suspends and readings that predate the state; the view is
 * stored whenever the state is, as idgen_clock_read() stores it.
 */
static void idgen_clock_test_fast_path_agrees(struct kunit *test)
{
	struct clock_rig *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	struct idgen_clock_state copy;
	struct idgen_clock_fast view;
	struct idgen_clock_sample s;
	struct rnd_state rnd;
	int i, fast = 0, ruled = 0, suspends = 0, stale = 0, refreshed = 0;
	s64 trusted, step;
	unsigned int ev;

	KUNIT_ASSERT_NOT_NULL(test, r);
	clock_rig_init(r);
	idgen_clock_fast_view(&r->st, &r->p, r->s.boot_ns, &view);
	prandom_seed_state(&rnd, 0xfa57);

	for (i = 0; i < 50000; i++) {
		u32 dice = prandom_u32_state(&rnd) % 1000;
		s64 raw_us = prandom_u32_state(&rnd) % 3000;
		s64 ppm = (s64)(prandom_u32_state(&rnd) % 801) - 400;
		s64 wall_us = raw_us + div_s64(raw_us * ppm, 1000000);
		bool adopt = false;

		s = r->s;
		if (dice < 3) {
			/* Steps of either sign, from tiny to hours. */
			wall_us += (s64)(prandom_u32_state(&rnd) % 4000000) - 2000000;
		} else if (dice < 5) {
			wall_us += 3600000000LL;
		} else if (dice < 7) {
			adopt = true;
		} else if (dice < 10) {
			/*
			 * A suspend, of a millisecond at least (the fast
			 * path counts on it being beyond the slack): the raw
			 * clock stood still, the rest moved on.
			 */
			s64 slept = 1000 + prandom_u32_state(&rnd) % 5000000;

			s.boot_ns += slept * US;
			s.raw_ns += slept * US;
			wall_us += slept;
			suspends++;
		} else if (dice < 40) {
			/* A reading taken before the state's: from the past. */
			raw_us = -(s64)(prandom_u32_state(&rnd) % 2000);
			wall_us = raw_us;
		} else if (dice < 60) {
			/* Drift right at the fast path's edge. */
			wall_us += (s64)(prandom_u32_state(&rnd) % 241) - 120;
		} else if (dice < 80) {
			/*
			 * A quiet spell, 0.2 to 1.2 s, slewing at up to the
			 * rule's 500 ppm: across the refresh period at times.
			 */
			raw_us = 200000 + prandom_u32_state(&rnd) % 1000000;
			wall_us = raw_us + div_s64(raw_us * ppm * 5, 4000000);
		}
		s.wall_ns += wall_us * US;
		s.raw_ns += raw_us * US;

		if (!adopt && idgen_clock_fast_ok(&view, s.raw_ns - s.boot_ns,
						  s.wall_ns)) {
			copy = r->st;
			ev = idgen_clock_advance(&copy, &r->p, &s, false,
						 &trusted, &step);
			KUNIT_EXPECT_EQ_MSG(test, ev, 0U, "reading %d", i);
			KUNIT_EXPECT_EQ_MSG(test, trusted, s.wall_ns, "reading %d", i);
			KUNIT_EXPECT_EQ(test, memcmp(&copy, &r->st, sizeof(copy)), 0);
			fast++;
		} else {
			ruled++;
		}
		/* Readings the fast path must have left to the rule. */
		copy = r->st;
		ev = idgen_clock_advance(&copy, &r->p, &s, adopt, &trusted, &step);
		if (ev & IDGEN_CLOCK_STALE)
			stale++;
		else if (ev == IDGEN_CLOCK_CHANGED && !r->st.held_ns)
			refreshed++;
		/* Readings from the past are not kept: the clocks go on. */
		if (raw_us < 0)
			continue;
		r->s = s;
		ev = idgen_clock_advance(&r->st, &r->p, &r->s, adopt,
					 &r->trusted, &step);
		if (ev & IDGEN_CLOCK_CHANGED)
			idgen_clock_fast_view(&r->st, &r->p, r->s.boot_ns, &view);
	}
	/* Both ways were taken, often, or this proved little. */
	KUNIT_EXPECT_GT(test, fast, 10000);
	KUNIT_EXPECT_GT(test, ruled, 2000);
	KUNIT_EXPECT_GT(test, suspends, 50);
	KUNIT_EXPECT_GT(test, stale, 20);
	KUNIT_EXPECT_GT(test, refreshed, 100);
}

/* The fast path's edges, one at a time, from a state just stored. */
static void idgen_clock_test_fast_path_edges(struct kunit *test)
{
	struct clock_rig *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	struct idgen_clock_fast view;
	s64 wall, tol, slack = IDGEN_CLOCK_SLACK_NS;
	u64 raw;
	int err;

	KUNIT_ASSERT_NOT_NULL(test, r);
	clock_rig_init(r);
	r->s.boot_ns = 7 * NSEC_PER_SEC;
	r->s.raw_ns += r->s.boot_ns;
	r->s.wall_ns += r->s.boot_ns;
	clock_rig_read(test, r, 0, 0, false, &err);
	idgen_clock_fast_view(&r->st, &r->p, r->s.boot_ns, &view);
	raw = r->s.raw_ns - r->s.boot_ns + 500 * US;
	wall = r->s.wall_ns + 500 * US;
	/* The slack, and the slew credited for the 500 us since. */
	tol = slack + (500 * US >> view.drift_shift);
	KUNIT_EXPECT_GT(test, tol, slack);
	KUNIT_EXPECT_LE(test, tol, slack + 500 * US * r->p.drift_ppm / 1000000);

	KUNIT_EXPECT_TRUE(test, idgen_clock_fast_ok(&view, raw, wall));
	KUNIT_EXPECT_TRUE(test, idgen_clock_fast_ok(&view, raw, wall + tol));
	KUNIT_EXPECT_TRUE(test, idgen_clock_fast_ok(&view, raw, wall - tol));
	KUNIT_EXPECT_FALSE(test, idgen_clock_fast_ok(&view, raw, wall + tol + 1));
	KUNIT_EXPECT_FALSE(test, idgen_clock_fast_ok(&view, raw, wall - tol - 1));
	/* Slewing at 480 ppm for 0.9 s: still the fast path's. */
	KUNIT_EXPECT_TRUE(test, idgen_clock_fast_ok(&view, raw - 500 * US + 900 * MS,
						    wall - 500 * US + 900 * MS + 432 * US));
	/* Due for refresh: the rule re-confirms the offset. */
	KUNIT_EXPECT_TRUE(test, idgen_clock_fast_ok(&view, raw - 500 * US + r->p.refresh_ns - 1,
						    wall - 500 * US + r->p.refresh_ns - 1));
	KUNIT_EXPECT_FALSE(test, idgen_clock_fast_ok(&view, raw - 500 * US + r->p.refresh_ns,
						     wall - 500 * US + r->p.refresh_ns));
	/* A reading older than the state. */
	KUNIT_EXPECT_FALSE(test, idgen_clock_fast_ok(&view, raw - 501 * US, wall - 501 * US));
	/* A suspend of a second since: the raw clock stood still. */
	KUNIT_EXPECT_FALSE(test, idgen_clock_fast_ok(&view, raw, wall + NSEC_PER_SEC));

	/* A held step: only the rule judges, whatever the reading. */
	clock_rig_read(test, r, 5000000, 0, false, &err);
	KUNIT_ASSERT_NE(test, r->st.held_ns, 0LL);
	idgen_clock_fast_view(&r->st, &r->p, r->s.boot_ns, &view);
	KUNIT_EXPECT_FALSE(test, idgen_clock_fast_ok(&view, r->s.raw_ns - r->s.boot_ns,
						     r->s.wall_ns));
	KUNIT_EXPECT_FALSE(test, idgen_clock_fast_ok(&view, r->s.raw_ns - r->s.boot_ns,
						     r->s.raw_ns + r->st.offset_ns));
	/* Nor before the first reading. */
	memset(&r->st, 0, sizeof(r->st));
	idgen_clock_fast_view(&r->st, &r->p, 0, &view);
	KUNIT_EXPECT_FALSE(test, idgen_clock_fast_ok(&view, 0, 0));
}

static struct kunit_case idgen_clock_test_cases[] = {
	KUNIT_CASE_PARAM(idgen_clock_test_scenario, clock_gen_params),
	KUNIT_CASE(idgen_clock_test_random_walk),
	KUNIT_CASE(idgen_clock_test_stale_reading),
	KUNIT_CASE(idgen_clock_test_fast_path_agrees),
	KUNIT_CASE(idgen_clock_test_fast_path_edges),
	{}
};

static struct kunit_suite idgen_clock_suite = {
	.name = "idgen_clock",
	.test_cases = idgen_clock_test_cases,
};

kunit_test_suite(idgen_clock_suite);

// SPDX-License-Identifier: GPL-2.0
/*
 * idgen_fair: the rules that keep one greedy reader from taking the whole
 * node, with the clock held still: the borrow bound (how far ahead of a
 * healthy clock a sequence running out may push the stamped millisecond)
 * and each open file's share of a millisecond's sequence space.
 */
#include <kunit/test.h>

#include "lease.h"
#include "fair.h"

#define SEQ_BITS	12
#define PER_MS		((u64)BIT(SEQ_BITS))
#define LEAD		1000
#define BORROW		10
#define NOW		1000000ULL

struct borrow_case {
	const char *name;
	u64 start_ms;		/* the lease's first ms */
	u64 next_ms;		/* the state word: ms ... */
	u64 next_seq;		/* ... and sequence */
	u32 max_borrow_ms;
	u32 want;
	int err;
	u64 first;		/* tick, on success */
	u64 count;		/* on success */
	u64 wait_ms;		/* on -EAGAIN or -ETIME */
};

#define TICK(ms, seq)	(((ms) << SEQ_BITS) + (seq))

static const struct borrow_case borrow_cases[] = {
	{ "at the clock: up to max_borrow_ms ahead, not beyond",
	  0, NOW, 0, BORROW, U32_MAX, 0,
	  TICK(NOW, 0), (BORROW + 1) * PER_MS },
	{ "behind the clock: starts at the clock's ms",
	  0, NOW - 5, 100, BORROW, U32_MAX, 0,
	  TICK(NOW, 0), (BORROW + 1) * PER_MS },
	{ "a small read at the clock",
	  0, NOW, 7, BORROW, 1, 0, TICK(NOW, 7), 1 },
	{ "the last ms allowed, under way: its rest",
	  0, NOW + BORROW, 5, BORROW, U32_MAX, 0,
	  TICK(NOW + BORROW, 5), PER_MS - 5 },
	{ "the first ms beyond the bound: wait for the clock",
	  0, NOW + BORROW + 1, 0, BORROW, 1, -EAGAIN, 0, 0, 1 },
	{ "far beyond (lead left by a step back): wait that long",
	  0, NOW + 40, 0, BORROW, 1, -EAGAIN, 0, 0, 40 - BORROW },
	{ "a ms beyond the bound but under way: its rest, no more",
	  0, NOW + 40, 7, BORROW, U32_MAX, 0,
	  TICK(NOW + 40, 7), PER_MS - 7 },
	{ "absorbing a step back: only the lead bound",
	  0, NOW + 40, 0, IDGEN_BORROW_ANY, U32_MAX, 0,
	  TICK(NOW + 40, 0), (LEAD + 1 - 40) * PER_MS },
	{ "the lead bound comes first: ETIME",
	  0, NOW + LEAD + 1, 0, BORROW, 1, -ETIME, 0, 0, 1 },
	{ "a floor ahead is no borrowing: the bound counts from it",
	  NOW + 300, NOW + 300, 0, BORROW, U32_MAX, 0,
	  TICK(NOW + 300, 0), (BORROW + 1) * PER_MS },
	{ "a lease's first ms long past: the bound counts from the clock",
	  NOW - 5000, NOW, 0, BORROW, U32_MAX, 0,
	  TICK(NOW, 0), (BORROW + 1) * PER_MS },
	{ "a bound of 1 ms: this ms and the next",
	  0, NOW, 0, 1, U32_MAX, 0, TICK(NOW, 0), 2 * PER_MS },
};

static void borrow_case_desc(const struct borrow_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(borrow, borrow_cases, borrow_case_desc);

static void idgen_fair_test_borrow_bound(struct kunit *test)
{
	const struct borrow_case *c = test->param_value;
	struct idgen_lease *l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);
	u64 wait = 0, borrowed, next;
	struct idgen_range r;
	int err;

	KUNIT_ASSERT_NOT_NULL(test, l);
	l->layout = (struct idgen_bits){ 3, 7, SEQ_BITS };
	l->start_ms = c->start_ms;
	next = TICK(c->next_ms, c->next_seq);
	atomic64_set(&l->next, next);
	atomic64_set(&l->valid_until, IDGEN_MS_MAX + 1);

	err = idgen_lease_reserve(l, NOW, LEAD, c->max_borrow_ms, c->want, &r,
				  &wait, &borrowed);
	KUNIT_ASSERT_EQ(test, err, c->err);
	if (err) {
		KUNIT_EXPECT_EQ(test, wait, c->wait_ms);
		/* Nothing was taken. */
		KUNIT_EXPECT_EQ(test, (u64)atomic64_read(&l->next), next);
		KUNIT_EXPECT_EQ(test, idgen_lease_probe(l, NOW, LEAD,
							c->max_borrow_ms,
							&wait), c->err);
		return;
	}
	KUNIT_EXPECT_EQ(test, r.first, c->first);
	KUNIT_EXPECT_EQ(test, (u64)r.count, c->count);
	/* The run ends at the bound: the next reader of a full run waits. */
	if (c->want == U32_MAX && c->max_borrow_ms != IDGEN_BORROW_ANY)
		KUNIT_EXPECT_EQ(test, idgen_lease_reserve(l, NOW, LEAD,
							  c->max_borrow_ms, 1,
							  &r, &wait, &borrowed),
				-EAGAIN);
}

/* The bound moves with the clock: one more ms per ms, no more. */
static void idgen_fair_test_borrow_follows_clock(struct kunit *test)
{
	struct idgen_lease *l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);
	u64 wait, borrowed, now;
	struct idgen_range r;

	KUNIT_ASSERT_NOT_NULL(test, l);
	l->layout = (struct idgen_bits){ 3, 7, SEQ_BITS };
	atomic64_set(&l->next, TICK(NOW, 0));
	atomic64_set(&l->valid_until, IDGEN_MS_MAX + 1);
	for (now = NOW; now < NOW + 50; now++) {
		KUNIT_ASSERT_EQ(test, idgen_lease_reserve(l, now, LEAD, BORROW,
							  U32_MAX, &r, &wait,
							  &borrowed), 0);
		KUNIT_EXPECT_EQ(test, r.first + r.count,
				TICK(now + BORROW + 1, 0));
		KUNIT_EXPECT_EQ(test, idgen_lease_reserve(l, now, LEAD, BORROW,
							  1, &r, &wait,
							  &borrowed), -EAGAIN);
		KUNIT_EXPECT_EQ(test, wait, 1ULL);
	}
}

static void share_init(struct idgen_share *share)
{
	atomic64_set(&share->word, 0);
	atomic64_set(&share->wait, 0);
	atomic64_set(&share->back_by, 0);
}

/* A step of the share table: take (or give back) at @now_ms. */
struct share_step {
	bool give;
	u64 now_ms;
	u32 n;		/* wanted, or given back */
	u32 expect;	/* taken */
};

struct share_case {
	const char *name;
	u8 seq_bits;
	u32 quota;
	struct share_step steps[8];
	int nsteps;
};

static const struct share_case share_cases[] = {
	{ "a quarter of 12 bits per ms, renewed each ms", 12, 1024, {
		{ false, 100, 1000, 1000 },
		{ false, 100, 100, 24 },
		{ false, 100, 1, 0 },
		{ false, 101, 5000, 1024 },
		{ false, 101, 1, 0 },
		{ false, 102, 1, 1 },
	}, 6 },
	{ "what was not reserved goes back, in its own ms only", 12, 1024, {
		{ false, 100, 1024, 1024 },
		{ true, 100, 24, 0 },
		{ false, 100, 30, 24 },
		{ true, 99, 500, 0 },
		{ false, 100, 1, 0 },
		{ true, 101, 1, 0 },
		{ false, 101, 2000, 1024 },
	}, 7 },
	{ "6 sequence bits: 16 per ms", 6, 16, {
		{ false, 5, 512, 16 },
		{ false, 5, 1, 0 },
		{ false, 6, 512, 16 },
	}, 3 },
	{ "22 sequence bits: 2^20 per ms", 22, 1U << 20, {
		{ false, 7, U32_MAX, 1U << 20 },
		{ false, 7, 1, 0 },
	}, 2 },
	{ "a ms 2^32 ms later matches by its low bits: only less", 12, 1024, {
		{ false, 3, 1024, 1024 },
		{ false, 3 + (1ULL << 32), 1, 0 },
		{ false, 4 + (1ULL << 32), 1, 1 },
	}, 3 },
};

static void share_case_desc(const struct share_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(share, share_cases, share_case_desc);

static void idgen_fair_test_share(struct kunit *test)
{
	const struct share_case *c = test->param_value;
	struct idgen_share share;
	int i;

	share_init(&share);
	KUNIT_ASSERT_EQ(test, idgen_share_quota(c->seq_bits), c->quota);
	for (i = 0; i < c->nsteps; i++) {
		const struct share_step *s = &c->steps[i];

		if (s->give) {
			idgen_share_give_back(&share, s->now_ms, s->n);
			continue;
		}
		KUNIT_EXPECT_EQ_MSG(test, idgen_share_take(&share, s->now_ms,
							   c->quota, s->n),
				    s->expect, "step %d", i);
	}
}

static void oldest_init(struct idgen_oldest_wait *o)
{
	atomic64_set(&o->since, 0);
	atomic64_set(&o->until, 0);
	atomic64_set(&o->tickets, 0);
}

#define HOLD	IDGEN_WAIT_HOLD_MS

/* Who holds the priority, and how it passes on. */
static void idgen_fair_test_oldest_wait(struct kunit *test)
{
	struct idgen_oldest_wait o;
	struct idgen_share a, b, c;

	oldest_init(&o);
	share_init(&a);
	share_init(&b);
	share_init(&c);

	/* No wait: nobody yields. */
	KUNIT_EXPECT_FALSE(test, idgen_wait_yields(&o, &b, 100));
	KUNIT_EXPECT_FALSE(test, idgen_wait_yields(&o, NULL, 100));

	/* A refused at 100: its wait is the oldest, the others yield to it. */
	idgen_wait_refused(&o, &a, 100, 1);
	KUNIT_EXPECT_FALSE(test, idgen_wait_yields(&o, &a, 100));
	KUNIT_EXPECT_TRUE(test, idgen_wait_yields(&o, &b, 100));
	KUNIT_EXPECT_TRUE(test, idgen_wait_yields(&o, NULL, 100));

	/* B's later wait does not take it; A, back in time, keeps it. */
	idgen_wait_refused(&o, &b, 101, 1);
	KUNIT_EXPECT_TRUE(test, idgen_wait_yields(&o, &b, 101));
	idgen_wait_refused(&o, &a, 102, 1);
	KUNIT_EXPECT_TRUE(test, idgen_wait_yields(&o, &b, 102 + HOLD));

	/*
	 * A not back by 103 + HOLD: its wait lapses for good.  B, itself
	 * late, starts a new wait and takes the priority; A, back later
	 * still, starts a newer one and stays behind B.
	 */
	KUNIT_EXPECT_FALSE(test, idgen_wait_yields(&o, &b, 103 + HOLD));
	idgen_wait_refused(&o, &b, 103 + HOLD, 1);
	KUNIT_EXPECT_FALSE(test, idgen_wait_yields(&o, &b, 103 + HOLD));
	idgen_wait_refused(&o, &a, 104 + HOLD, 1);
	KUNIT_EXPECT_TRUE(test, idgen_wait_yields(&o, &a, 104 + HOLD));
	KUNIT_EXPECT_FALSE(test, idgen_wait_yields(&o, &b, 104 + HOLD));

	/* B served: the priority is free; A's wait, the older now, takes it. */
	idgen_wait_over(&o, &b);
	KUNIT_EXPECT_EQ(test, atomic64_read(&b.wait), 0LL);
	KUNIT_EXPECT_FALSE(test, idgen_wait_yields(&o, &c, 105 + HOLD));
	idgen_wait_refused(&o, &c, 105 + HOLD, 1);
	idgen_wait_refused(&o, &a, 105 + HOLD, 1);
	KUNIT_EXPECT_FALSE(test, idgen_wait_yields(&o, &a, 105 + HOLD));
	KUNIT_EXPECT_TRUE(test, idgen_wait_yields(&o, &c, 105 + HOLD));

	/* A file that is not the oldest ends its wait: nothing changes. */
	idgen_wait_over(&o, &c);
	KUNIT_EXPECT_TRUE(test, idgen_wait_yields(&o, &c, 106 + HOLD));
	/* A closed: the priority is free at once, not when it lapses. */
	idgen_wait_over(&o, &a);
	KUNIT_EXPECT_FALSE(test, idgen_wait_yields(&o, &c, 106 + HOLD));
}

/*
 * A file that asks only now and then (say, only when it knows it will be
 * refused) cannot keep the priority from a reader that waits and keeps
 * asking, though its first refusal came first.
 */
static void idgen_fair_test_oldest_wait_must_keep_asking(struct kunit *test)
{
	struct idgen_share patient, rare;
	struct idgen_oldest_wait o;
	u64 now;

	oldest_init(&o);
	share_init(&patient);
	share_init(&rare);

	idgen_wait_refused(&o, &rare, NOW - 1, 1);
	for (now = NOW; now < NOW + 500; now++) {
		if (now % 2 == 0)
			idgen_wait_refused(&o, &patient, now, 1);
		if (now % 50 == 0)
			idgen_wait_refused(&o, &rare, now, 1);
		if (now < NOW + HOLD + 2)
			continue;
		KUNIT_EXPECT_FALSE_MSG(test, idgen_wait_yields(&o, &patient, now),
				       "at %llu", now - NOW);
		KUNIT_EXPECT_TRUE_MSG(test, idgen_wait_yields(&o, &rare, now),
				      "at %llu", now - NOW);
	}
}

/*
 * A reservation by a reader holding @share, under the oldest wait @o,
 * with the wait kept as the generator keeps it.
 */
static int take(struct idgen_lease *l, struct idgen_oldest_wait *o,
		struct idgen_share *share, u64 now, u32 want,
		struct idgen_range *r)
{
	u64 wait, borrowed;
	int err;

	err = idgen_lease_reserve(l, now, LEAD,
				  idgen_wait_yields(o, share, now) ? BORROW - 1 :
								     BORROW,
				  want, r, &wait, &borrowed);
	if (!err)
		idgen_wait_over(o, share);
	else if (err == -EAGAIN)
		idgen_wait_refused(o, share, now, wait);
	return err;
}

/*
 * A greedy reader fills the borrow window first thing every millisecond,
 * before a refused one gets to ask again: the refused one still gets the
 * millisecond the clock opens next, and the greedy one the rest of it.
 */
static void idgen_fair_test_oldest_wait_is_served(struct kunit *test)
{
	struct idgen_lease *l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);
	struct idgen_share greedy, waiter;
	struct idgen_oldest_wait o;
	struct idgen_range r;
	u64 now;

	KUNIT_ASSERT_NOT_NULL(test, l);
	l->layout = (struct idgen_bits){ 3, 7, SEQ_BITS };
	atomic64_set(&l->next, TICK(NOW, 0));
	atomic64_set(&l->valid_until, IDGEN_MS_MAX + 1);
	oldest_init(&o);
	share_init(&greedy);
	share_init(&waiter);

	/* The greedy reader takes the whole window; the waiter is refused. */
	KUNIT_ASSERT_EQ(test, take(l, &o, &greedy, NOW, U32_MAX, &r), 0);
	KUNIT_ASSERT_EQ(test, take(l, &o, &waiter, NOW, 1, &r), -EAGAIN);

	for (now = NOW + 1; now < NOW + 20; now++) {
		/* First thing in the ms, the greedy reader finds nothing... */
		KUNIT_EXPECT_EQ(test, take(l, &o, &greedy, now, U32_MAX, &r),
				-EAGAIN);
		/* ... and the waiter gets the ms the clock opened. */
		KUNIT_ASSERT_EQ(test, take(l, &o, &waiter, now, 1, &r), 0);
		KUNIT_EXPECT_EQ(test, r.first, TICK(now + BORROW, 0));
		/* The rest of that ms is the greedy reader's... */
		KUNIT_ASSERT_EQ(test, take(l, &o, &greedy, now, U32_MAX, &r), 0);
		KUNIT_EXPECT_EQ(test, r.first + r.count,
				TICK(now + BORROW + 1, 0));
		/* ... and the waiter, back for more, waits once again. */
		KUNIT_ASSERT_EQ(test, take(l, &o, &waiter, now, 1, &r), -EAGAIN);
	}
}

static struct kunit_case idgen_fair_test_cases[] = {
	KUNIT_CASE_PARAM(idgen_fair_test_borrow_bound, borrow_gen_params),
	KUNIT_CASE(idgen_fair_test_borrow_follows_clock),
	KUNIT_CASE_PARAM(idgen_fair_test_share, share_gen_params),
	KUNIT_CASE(idgen_fair_test_oldest_wait),
	KUNIT_CASE(idgen_fair_test_oldest_wait_must_keep_asking),
	KUNIT_CASE(idgen_fair_test_oldest_wait_is_served),
	{}
};

static struct kunit_suite idgen_fair_suite = {
	.name = "idgen_fair",
	.test_cases = idgen_fair_test_cases,
};

kunit_test_suite(idgen_fair_suite);

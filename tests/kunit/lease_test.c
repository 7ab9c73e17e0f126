// SPDX-License-Identifier: GPL-2.0
/*
 * idgen_lease: reserving IDs on a lease's state word (lease.c), with the
 * clock held still, so every bound is hit exactly: sequence overflow, the
 * lead bound, the fence on the stamped millisecond, the floor, and the end
 * of the time field.
 */
#include <kunit/test.h>
#include <linux/prandom.h>

#include "lease.h"

#define SEQ_BITS	12
#define PER_MS		((u32)BIT(SEQ_BITS))
#define LEAD		1000

static struct idgen_lease *mint_lease(struct kunit *test, u64 floor_ms,
				      u64 valid_until)
{
	struct idgen_lease *l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, l);
	l->layout = (struct idgen_bits){ 3, 7, SEQ_BITS };
	l->region = 5;
	l->worker = 77;
	l->node_bits = idgen_node_bits(&l->layout, 5, 77);
	l->floor = floor_ms;
	atomic64_set(&l->next, (floor_ms + 1) << SEQ_BITS);
	atomic64_set(&l->valid_until, valid_until);
	return l;
}

static int reserve(struct idgen_lease *l, u64 now, u32 want,
		   struct idgen_range *r, u64 *wait, u64 *borrowed)
{
	return idgen_lease_reserve(l, now, LEAD, IDGEN_BORROW_ANY, want, r, wait, borrowed);
}

static void idgen_lease_test_overflow_borrows(struct kunit *test)
{
	struct idgen_lease *l = mint_lease(test, 99, 1000000);
	struct idgen_range r;
	u64 wait, borrowed;

	/* A whole millisecond, then more: the sequence carries into the next. */
	KUNIT_ASSERT_EQ(test, reserve(l, 100, PER_MS, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, r.first, 100ULL << SEQ_BITS);
	KUNIT_EXPECT_EQ(test, r.count, PER_MS);
	KUNIT_EXPECT_EQ(test, borrowed, 0ULL);

	KUNIT_ASSERT_EQ(test, reserve(l, 100, 10, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, r.first, 101ULL << SEQ_BITS);
	KUNIT_EXPECT_EQ(test, borrowed, 1ULL);

	/* The clock moving on leaves the borrowed ms behind, no reuse. */
	KUNIT_ASSERT_EQ(test, reserve(l, 101, 1, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, r.first, (101ULL << SEQ_BITS) + 10);
	KUNIT_ASSERT_EQ(test, reserve(l, 200, 1, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, r.first, 200ULL << SEQ_BITS);
	KUNIT_EXPECT_EQ(test, borrowed, 0ULL);
}

static void idgen_lease_test_batch_crosses_ms(struct kunit *test)
{
	struct idgen_lease *l = mint_lease(test, 99, 1000000);
	struct idgen_range r;
	u64 wait, borrowed, i, prev = 0;

	KUNIT_ASSERT_EQ(test, reserve(l, 100, PER_MS - 3, &r, &wait, &borrowed), 0);
	KUNIT_ASSERT_EQ(test, reserve(l, 100, 3 * PER_MS, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, r.count, 3 * PER_MS);
	KUNIT_EXPECT_EQ(test, borrowed, 3ULL);
	for (i = 0; i < r.count; i++) {
		u64 id = idgen_tick_id(r.first + i, SEQ_BITS, r.node_bits);

		if (i)
			KUNIT_ASSERT_GT(test, id, prev);
		prev = id;
	}
	KUNIT_EXPECT_EQ(test, prev >> IDGEN_NODE_SEQ_BITS, 103ULL);
}

static void idgen_lease_test_max_lead(struct kunit *test)
{
	struct idgen_lease *l = mint_lease(test, 99, 1000000);
	struct idgen_range r;
	u64 wait = 0, borrowed, total = 0;
	int err, calls = 0;

	/* With the clock stopped at 100, ms 100..1100 may be stamped. */
	while (!(err = reserve(l, 100, 100000, &r, &wait, &borrowed))) {
		total += r.count;
		KUNIT_ASSERT_LE(test, idgen_tick_ms(r.first + r.count - 1, SEQ_BITS),
				100ULL + LEAD);
		KUNIT_ASSERT_LT(test, ++calls, 1000);
	}
	KUNIT_EXPECT_EQ(test, err, -ETIME);
	KUNIT_EXPECT_EQ(test, wait, 1ULL);
	KUNIT_EXPECT_EQ(test, total, (u64)(LEAD + 1) * PER_MS);
	/* One ms later, exactly one more ms may be stamped. */
	KUNIT_EXPECT_EQ(test, reserve(l, 101, 100000, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, r.count, PER_MS);
	/* A wall clock far behind: the wait it reports is the gap. */
	KUNIT_EXPECT_EQ(test, reserve(l, 50, 1, &r, &wait, &borrowed), -ETIME);
	KUNIT_EXPECT_EQ(test, wait, 1102ULL - (50 + LEAD));
}

static void idgen_lease_test_fence_on_stamped_ms(struct kunit *test)
{
	struct idgen_lease *l = mint_lease(test, 99, 103);
	struct idgen_range r;
	u64 wait, borrowed;

	/* Asked for more than fits: cut short before ms 103, not refused. */
	KUNIT_ASSERT_EQ(test, reserve(l, 100, 10 * PER_MS, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, r.count, 3 * PER_MS);
	KUNIT_EXPECT_EQ(test, idgen_tick_ms(r.first + r.count - 1, SEQ_BITS), 102ULL);
	KUNIT_EXPECT_EQ(test, reserve(l, 100, 1, &r, &wait, &borrowed), -EKEYEXPIRED);
	/* The clock reaching the fence refuses too, nothing borrowed past it. */
	KUNIT_EXPECT_EQ(test, reserve(l, 103, 1, &r, &wait, &borrowed), -EKEYEXPIRED);
	KUNIT_EXPECT_EQ(test, reserve(l, 5000, 1, &r, &wait, &borrowed), -EKEYEXPIRED);
	/* A renewal moves the fence; minting resumes above the old one. */
	atomic64_set(&l->valid_until, 200);
	KUNIT_ASSERT_EQ(test, reserve(l, 150, 1, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, idgen_tick_ms(r.first, SEQ_BITS), 150ULL);
}

static void idgen_lease_test_short_batch_at_fence(struct kunit *test)
{
	struct idgen_lease *l = mint_lease(test, 99, 101);
	struct idgen_range r;
	u64 wait, borrowed;

	KUNIT_ASSERT_EQ(test, reserve(l, 100, PER_MS - 5, &r, &wait, &borrowed), 0);
	KUNIT_ASSERT_EQ(test, reserve(l, 100, 512, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, r.count, 5U);
	KUNIT_EXPECT_EQ(test, reserve(l, 100, 512, &r, &wait, &borrowed), -EKEYEXPIRED);
}

static void idgen_lease_test_floor(struct kunit *test)
{
	/* A floor ahead of the clock, within the lead: minted above it. */
	struct idgen_lease *l = mint_lease(test, 600, 100000);
	struct idgen_range r;
	u64 wait, borrowed;

	KUNIT_ASSERT_EQ(test, reserve(l, 100, 1, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, idgen_tick_ms(r.first, SEQ_BITS), 601ULL);

	/* Beyond the lead: refused until the clock gets within reach. */
	l = mint_lease(test, 5000, 100000);
	KUNIT_EXPECT_EQ(test, reserve(l, 100, 1, &r, &wait, &borrowed), -ETIME);
	KUNIT_EXPECT_EQ(test, wait, 5001ULL - (100 + LEAD));
	KUNIT_ASSERT_EQ(test, reserve(l, 4001, 1, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, idgen_tick_ms(r.first, SEQ_BITS), 5001ULL);
}

static void idgen_lease_test_time_exhausted(struct kunit *test)
{
	struct idgen_lease *l = mint_lease(test, IDGEN_MS_MAX - 2, IDGEN_MS_MAX + 1);
	struct idgen_range r;
	u64 wait, borrowed, last;

	KUNIT_ASSERT_EQ(test, reserve(l, IDGEN_MS_MAX - 1, 100 * PER_MS, &r, &wait,
				      &borrowed), 0);
	KUNIT_EXPECT_EQ(test, r.count, 2 * PER_MS);
	last = idgen_tick_id(r.first + r.count - 1, SEQ_BITS, r.node_bits);
	KUNIT_EXPECT_EQ(test, last >> IDGEN_NODE_SEQ_BITS, IDGEN_MS_MAX);
	KUNIT_EXPECT_EQ(test, last >> 63, 0ULL);
	/*
	 * The last ms is used up: EOVERFLOW, although the fence lies there
	 * too (IDGEN_MS_MAX + 1), since renewing the lease cannot help.
	 */
	KUNIT_EXPECT_EQ(test, reserve(l, IDGEN_MS_MAX, 1, &r, &wait, &borrowed),
			-EOVERFLOW);
	KUNIT_EXPECT_EQ(test, idgen_lease_probe(l, IDGEN_MS_MAX, LEAD, IDGEN_BORROW_ANY, &wait),
			-EOVERFLOW);

	/* Nor does a fence beyond the field change it. */
	atomic64_set(&l->valid_until, U64_MAX);
	KUNIT_EXPECT_EQ(test, reserve(l, IDGEN_MS_MAX, 1, &r, &wait, &borrowed),
			-EOVERFLOW);
	KUNIT_EXPECT_EQ(test, reserve(l, IDGEN_MS_MAX + 5000, 1, &r, &wait,
				      &borrowed), -EOVERFLOW);
}

static void idgen_lease_test_closed(struct kunit *test)
{
	struct idgen_lease *l = mint_lease(test, 99, 1000);
	struct idgen_range r;
	u64 wait, borrowed;

	/* Closing returns the last ms stamped; nothing is reserved after. */
	KUNIT_ASSERT_EQ(test, reserve(l, 100, PER_MS + 1, &r, &wait, &borrowed), 0);
	KUNIT_EXPECT_EQ(test, idgen_lease_last_ms(idgen_lease_close(l), SEQ_BITS),
			101ULL);
	KUNIT_EXPECT_EQ(test, reserve(l, 100, 1, &r, &wait, &borrowed), -ESTALE);
	KUNIT_EXPECT_EQ(test, reserve(l, 500, 1, &r, &wait, &borrowed), -ESTALE);
	KUNIT_EXPECT_EQ(test, idgen_lease_probe(l, 100, LEAD, IDGEN_BORROW_ANY, &wait), -ESTALE);

	/* Closed with nothing minted: the last ms "used" is the floor. */
	l = mint_lease(test, 99, 1000);
	KUNIT_EXPECT_EQ(test, idgen_lease_last_ms(idgen_lease_close(l), SEQ_BITS),
			99ULL);
}

/*
 * The read path's fast reservation against the full one: from the same
 * lease state, whatever the layout, the clock (up to far past the end of
 * the time field), the bounds and the size, every run the fast one takes
 * the full one takes too, the same run, leaving the same state word.
 */
static void idgen_lease_test_fast_is_full(struct kunit *test)
{
	struct idgen_lease *a = mint_lease(test, 0, 1), *b = mint_lease(test, 0, 1);
	static const u32 borrows[] = { 0, 1, 10, IDGEN_BORROW_ANY };
	struct idgen_range ra, rb;
	struct rnd_state rnd;
	int i, fast = 0, left = 0, borrows_seen = 0;
	u64 wait, borrowed;

	prandom_seed_state(&rnd, 0x5eed);
	for (i = 0; i < 200000; i++) {
		u8 seq = IDGEN_SEQ_BITS_MIN +
			 prandom_u32_state(&rnd) % (IDGEN_NODE_SEQ_BITS - IDGEN_SEQ_BITS_MIN + 1);
		u64 base_ms = prandom_u32_state(&rnd) % 4 ? 1 + prandom_u32_state(&rnd) % 100000 :
			      IDGEN_MS_MAX - prandom_u32_state(&rnd) % 100000;
		u64 fence = min(base_ms + 1 + prandom_u32_state(&rnd) % 2000, IDGEN_MS_MAX + 1);
		u64 next = (base_ms << seq) + prandom_u32_state(&rnd) % (3U << seq);
		u64 now = base_ms + (s64)(prandom_u32_state(&rnd) % 3000) - 1500;
		u32 lead = prandom_u32_state(&rnd) % 2 ? 1000 : prandom_u32_state(&rnd) % 20;
		u32 borrow = borrows[prandom_u32_state(&rnd) % ARRAY_SIZE(borrows)];
		u32 want = 1 + prandom_u32_state(&rnd) % (prandom_u32_state(&rnd) % 2 ? 8 : 512);
		u64 start = base_ms - prandom_u32_state(&rnd) % 3 + 1;
		bool ok;
		int err;

		/* Now and then a clock set decades ahead, or left at 0. */
		if (prandom_u32_state(&rnd) % 50 == 0)
			now = prandom_u32_state(&rnd) % 2 ? 0 :
			      (1ULL << 42) + prandom_u32_state(&rnd);
		if (prandom_u32_state(&rnd) % 100 == 0)
			next = IDGEN_TICK_CLOSED;
		a->layout.seq_bits = seq;
		b->layout.seq_bits = seq;
		atomic64_set(&a->next, next);
		atomic64_set(&b->next, next);
		atomic64_set(&a->valid_until, fence);
		atomic64_set(&b->valid_until, fence);
		a->start_ms = start;
		b->start_ms = start;

		ok = idgen_lease_reserve_fast(a, now, lead, borrow, want, &ra);
		err = idgen_lease_reserve(b, now, lead, borrow, want, &rb, &wait, &borrowed);
		if (!ok) {
			KUNIT_EXPECT_EQ(test, atomic64_read(&a->next), (s64)next);
			left++;
			continue;
		}
		fast++;
		KUNIT_ASSERT_EQ_MSG(test, err, 0, "seq %u next %llu now %llu fence %llu want %u",
				    seq, next, now, fence, want);
		KUNIT_EXPECT_EQ(test, ra.first, rb.first);
		KUNIT_EXPECT_EQ(test, ra.count, want);
		KUNIT_EXPECT_EQ(test, rb.count, want);
		KUNIT_EXPECT_EQ(test, ra.seq_bits, rb.seq_bits);
		KUNIT_EXPECT_EQ(test, ra.node_bits, rb.node_bits);
		KUNIT_EXPECT_EQ(test, atomic64_read(&a->next), atomic64_read(&b->next));
		/* Both paths count the milliseconds begun ahead of the clock alike. */
		KUNIT_EXPECT_EQ(test, idgen_range_borrowed_ms(&ra, now), borrowed);
		if (borrowed)
			borrows_seen++;
	}
	/* Both answers came often, or this proved little. */
	KUNIT_EXPECT_GT(test, fast, 20000);
	KUNIT_EXPECT_GT(test, left, 20000);
	KUNIT_EXPECT_GT(test, borrows_seen, 1000);
}

static struct kunit_case idgen_lease_test_cases[] = {
	KUNIT_CASE(idgen_lease_test_overflow_borrows),
	KUNIT_CASE(idgen_lease_test_batch_crosses_ms),
	KUNIT_CASE(idgen_lease_test_max_lead),
	KUNIT_CASE(idgen_lease_test_fence_on_stamped_ms),
	KUNIT_CASE(idgen_lease_test_short_batch_at_fence),
	KUNIT_CASE(idgen_lease_test_floor),
	KUNIT_CASE(idgen_lease_test_time_exhausted),
	KUNIT_CASE(idgen_lease_test_closed),
	KUNIT_CASE(idgen_lease_test_fast_is_full),
	{}
};

static struct kunit_suite idgen_lease_suite = {
	.name = "idgen_lease",
	.test_cases = idgen_lease_test_cases,
};

kunit_test_suite(idgen_lease_suite);

// SPDX-License-Identifier: GPL-2.0
/*
 * idgen-httpd's per-caller token buckets (helper/httpd/quota.c), on a
 * clock the test sets: a full bucket's burst passes and no more, the
 * wait given is exactly the time after which the refused request passes,
 * a request above the burst is refused outright, a give-back restores
 * what was taken and is still owed, never more, callers apart, and threads taking at once never take
 * more than the bucket holds.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quota.h"
#include "kselftest_harness.h"

#define S	1000000000ULL	/* ns */
#define T0	(1000 * S)	/* an arbitrary CLOCK_MONOTONIC */

static char *names[] = { "a", "b" };

FIXTURE(q) {
	struct quota q;
};

FIXTURE_SETUP(q)
{
	ASSERT_EQ(0, quota_init(&self->q, names, 2));
}

FIXTURE_TEARDOWN(q)
{
	quota_free(&self->q);
}

TEST_F(q, callers_by_name_the_rest_other)
{
	EXPECT_EQ(0, quota_caller_index(&self->q, "a"));
	EXPECT_EQ(1, quota_caller_index(&self->q, "b"));
	EXPECT_EQ(2, quota_caller_index(&self->q, "c"));
	EXPECT_EQ(2, quota_caller_index(&self->q, "other"));
	EXPECT_EQ(2, quota_caller_index(&self->q, NULL));
}

TEST_F(q, no_quota_takes_anything)
{
	uint64_t wait, burst;
	int i;

	for (i = 0; i < 1000; i++)
		ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 1, 10000, T0, &wait, &burst, NULL));
}

TEST_F(q, burst_then_wait_exactly)
{
	uint64_t wait = 0, burst;
	int i;

	quota_set(&self->q, 0, 2000, 5);	/* 2 IDs/s, bursts of 5 */
	for (i = 0; i < 5; i++)
		ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 1, T0, &wait, &burst, NULL));
	ASSERT_EQ(QUOTA_WAIT, quota_take(&self->q, 0, 1, T0, &wait, &burst, NULL));
	EXPECT_EQ(S / 2, wait);
	ASSERT_EQ(QUOTA_WAIT, quota_take(&self->q, 0, 3, T0, &wait, &burst, NULL));
	EXPECT_EQ(3 * S / 2, wait);
	/* A nanosecond early is still refused, the wait given is enough. */
	ASSERT_EQ(QUOTA_WAIT, quota_take(&self->q, 0, 3, T0 + 3 * S / 2 - 1, &wait, &burst, NULL));
	EXPECT_EQ(1, wait);
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 3, T0 + 3 * S / 2, &wait, &burst, NULL));
	/* Refused requests took nothing: the bucket is empty, not in debt. */
	ASSERT_EQ(QUOTA_WAIT, quota_take(&self->q, 0, 1, T0 + 3 * S / 2, &wait, &burst, NULL));
	EXPECT_EQ(S / 2, wait);
	/* Idle long enough, it is full again, and no fuller. */
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 5, T0 + 3600 * S, &wait, &burst, NULL));
	ASSERT_EQ(QUOTA_WAIT, quota_take(&self->q, 0, 1, T0 + 3600 * S, &wait, &burst, NULL));
}

TEST_F(q, over_the_burst_never)
{
	uint64_t wait, burst = 0;

	quota_set(&self->q, 0, 1000, 5);
	ASSERT_EQ(QUOTA_OVER_BURST, quota_take(&self->q, 0, 6, T0, &wait, &burst, NULL));
	EXPECT_EQ(5, burst);
	/* ... and took nothing. */
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 5, T0, &wait, &burst, NULL));
}

TEST_F(q, fractional_rate)
{
	uint64_t wait, burst;

	quota_set(&self->q, 2, 250, 1);		/* one ID every 4 s */
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 2, 1, T0, &wait, &burst, NULL));
	ASSERT_EQ(QUOTA_WAIT, quota_take(&self->q, 2, 1, T0 + S, &wait, &burst, NULL));
	EXPECT_EQ(3 * S, wait);
}

TEST_F(q, give_back_restores)
{
	uint64_t wait, burst, tat;

	quota_set(&self->q, 0, 1000, 4);
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 4, T0, &wait, &burst, &tat));
	EXPECT_EQ(T0 + 4 * S, tat);
	quota_refund(&self->q, 0, 4, tat, T0);
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 4, T0, &wait, &burst, NULL));
	ASSERT_EQ(QUOTA_WAIT, quota_take(&self->q, 0, 1, T0, &wait, &burst, NULL));
}

/*
 * A request takes the whole burst, its minting fails only after the
 * bucket has refilled and another request has taken the burst again: the
 * late give-back owes nothing, so no more than the burst passes.
 */
TEST_F(q, late_give_back_never_passes_the_burst)
{
	uint64_t wait, burst, tat;

	quota_set(&self->q, 0, 1000, 4);
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 4, T0, &wait, &burst, &tat));
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 4, T0 + 10 * S, &wait, &burst, NULL));
	quota_refund(&self->q, 0, 4, tat, T0 + 10 * S);
	ASSERT_EQ(QUOTA_WAIT, quota_take(&self->q, 0, 1, T0 + 10 * S, &wait, &burst, NULL));
	EXPECT_EQ(S, wait);
}

/* Half refilled when handed back: only the half still owed comes back. */
TEST_F(q, give_back_of_what_is_still_owed)
{
	uint64_t wait, burst, tat;

	quota_set(&self->q, 0, 1000, 4);
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 4, T0, &wait, &burst, &tat));
	/* At T0 + 2 s, 2 IDs have refilled; another request takes them. */
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 2, T0 + 2 * S, &wait, &burst, NULL));
	quota_refund(&self->q, 0, 4, tat, T0 + 2 * S);
	/* 2 of the 4 were still owed: 2 pass, a third waits a second. */
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 2, T0 + 2 * S, &wait, &burst, NULL));
	ASSERT_EQ(QUOTA_WAIT, quota_take(&self->q, 0, 1, T0 + 2 * S, &wait, &burst, NULL));
	EXPECT_EQ(S, wait);
	/* Handing back to a full bucket leaves it full, no fuller. */
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 1, T0 + 100 * S, &wait, &burst,
					      &tat));
	quota_refund(&self->q, 0, 1, tat, T0 + 200 * S);
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 4, T0 + 200 * S, &wait, &burst, NULL));
	ASSERT_EQ(QUOTA_WAIT, quota_take(&self->q, 0, 1, T0 + 200 * S, &wait, &burst, NULL));
}

TEST_F(q, callers_apart)
{
	uint64_t wait, burst;

	quota_set(&self->q, 0, 1000, 2);
	quota_set(&self->q, 2, 1000, 3);
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 0, 2, T0, &wait, &burst, NULL));
	ASSERT_EQ(QUOTA_WAIT, quota_take(&self->q, 0, 1, T0, &wait, &burst, NULL));
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 2, 3, T0, &wait, &burst, NULL));
	ASSERT_EQ(QUOTA_TAKEN, quota_take(&self->q, 1, 100, T0, &wait, &burst, NULL));
}

/* Threads taking one ID at a time at one instant: exactly the burst. */
#define THREADS	4
#define BURST	100000

static struct quota shared;
static _Atomic unsigned long taken;

static void *taker(void *arg)
{
	uint64_t wait, burst;
	int i;

	(void)arg;
	for (i = 0; i < BURST; i++)
		if (quota_take(&shared, 0, 1, T0, &wait, &burst, NULL) == QUOTA_TAKEN)
			atomic_fetch_add(&taken, 1);
	return NULL;
}

TEST(threads_take_the_burst_exactly)
{
	pthread_t t[THREADS];
	int i;

	ASSERT_EQ(0, quota_init(&shared, names, 2));
	quota_set(&shared, 0, 1000, BURST);
	for (i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, taker, NULL));
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	EXPECT_EQ(BURST, atomic_load(&taken));
	quota_free(&shared);
}

TEST_HARNESS_MAIN

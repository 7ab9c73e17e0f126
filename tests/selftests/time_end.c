// SPDX-License-Identifier: GPL-2.0
/*
 * time_end - idgen at the end of the 41-bit time field, in September 2095.
 *
 * DESTRUCTIVE: sets CLOCK_REALTIME to 2095 (and back afterwards), and
 * leaves the generator's last_ms at IDGEN_MS_MAX, so no later lease can
 * mint until the module is reloaded.  Runs only as root with IDGEN_GUEST=1
 * (tests/vm/run-guest.sh sets it); guest-suite.sh runs it last, right
 * before it unloads the module.
 *
 * A lease whose fence is the end of the field (valid_until_ms =
 * IDGEN_MS_MAX + 1) mints up to the last millisecond an ID can carry; then
 * reads fail with EOVERFLOW, the errno that says renewing cannot help,
 * rather than EKEYEXPIRED, which says it can.
 */
#define _GNU_SOURCE
#include "idgen_util.h"
#include "kselftest_harness.h"

#define TEST_REGION	5
#define TEST_WORKER	78
/* The clock is set this far before the last millisecond. */
#define BEFORE_END_MS	1000
#define BATCH		4096

/* Set CLOCK_REALTIME to idgen millisecond @ms. */
static int set_wall_idgen_ms(__u64 ms)
{
	__u64 unix_ms = ms + IDGEN_EPOCH_UNIX_MS;
	struct timespec ts = {
		.tv_sec = unix_ms / 1000,
		.tv_nsec = (unix_ms % 1000) * NSEC_PER_MSEC,
	};

	return clock_settime(CLOCK_REALTIME, &ts);
}

FIXTURE(end) {
	int fd;
	__u64 real0, mono0;	/* CLOCK_REALTIME, CLOCK_MONOTONIC at setup */
	__u64 *ids;
};

FIXTURE_SETUP(end)
{
	REQUIRE_GUEST_ROOT("sets the wall clock to 2095");
	OPEN_OR_SKIP(self->fd, 0);
	self->ids = malloc(BATCH * sizeof(*self->ids));
	ASSERT_NE(NULL, self->ids);
	self->real0 = clock_ns(CLOCK_REALTIME);
	self->mono0 = clock_ns(CLOCK_MONOTONIC);
}

FIXTURE_TEARDOWN(end)
{
	__u64 ns = self->real0 + (clock_ns(CLOCK_MONOTONIC) - self->mono0);
	struct timespec ts = {
		.tv_sec = ns / NSEC_PER_SEC,
		.tv_nsec = ns % NSEC_PER_SEC,
	};
	__u64 l;

	EXPECT_EQ(0, clock_settime(CLOCK_REALTIME, &ts));
	EXPECT_EQ(0, idgen_revoke(self->fd, &l));
	close(self->fd);
	free(self->ids);
}

TEST_F_TIMEOUT(end, last_ms_then_eoverflow, 120)
{
	struct idgen_state st, a, b;
	__u64 prev = 0, got = 0, l;
	__u32 region, worker;
	ssize_t r, i;

	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EQ(0, set_wall_idgen_ms(IDGEN_MS_MAX - BEFORE_END_MS))
		TH_LOG("clock_settime to 2095: %s", strerror(errno));
	/* A 69-year forward step is held until adopted. */
	ASSERT_EQ(0, ioctl(self->fd, IDGEN_IOC_ADOPT_CLOCK));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	ASSERT_FALSE(st.flags & IDGEN_STATE_CLOCK_HELD);
	ASSERT_LE(IDGEN_MS_MAX - BEFORE_END_MS, st.now_ms);
	region = TEST_REGION & ((1U << st.region_bits) - 1);
	worker = TEST_WORKER & ((1U << st.worker_bits) - 1);
	/*
	 * The floor puts the first ms at the last one, within the lead: a
	 * floor ahead is no borrowing, so the fairness rules let a reader
	 * have all of it at once.  (From the clock's ms a lone reader would
	 * go at the clock's pace, a file's share per ms, and a guest that
	 * sleeps through the last ms would never stamp it.)
	 */
	ASSERT_EQ(0, idgen_set_lease(self->fd, region, worker, IDGEN_MS_MAX - 1,
				     IDGEN_MS_MAX + 1))
		TH_LOG("lease to the end of the field: %s", strerror(errno));

	/* Mint all that is left: the last ms's IDs, no more, no fewer. */
	for (;;) {
		r = idgen_read(self->fd, self->ids, BATCH);
		if (r < 0)
			break;
		ASSERT_LT(0, r);
		for (i = 0; i < r; i++) {
			ASSERT_LT(prev, self->ids[i]);
			ASSERT_GE(IDGEN_MS_MAX, id_ms(self->ids[i]));
			prev = self->ids[i];
		}
		got += r;
		ASSERT_GE((BEFORE_END_MS + 2) << st.seq_bits, got)
			TH_LOG("more IDs than the milliseconds left hold");
	}
	EXPECT_EQ(EOVERFLOW, errno) TH_LOG("read at the end of the field: %s",
					   strerror(errno));
	ASSERT_LT(0, got);
	EXPECT_EQ(IDGEN_MS_MAX, id_ms(prev));
	EXPECT_EQ(1ULL << st.seq_bits, got);
	EXPECT_EQ(0, prev >> 63);

	/* It stays so, poll() does not call it ready, and it is counted. */
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	errno = 0;
	EXPECT_EQ(-1, idgen_read(self->fd, self->ids, 1));
	EXPECT_EQ(EOVERFLOW, errno);
	EXPECT_FALSE(poll_revents(self->fd, 0) & POLLIN);
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_LT(a.range_refusals, b.range_refusals);
	EXPECT_EQ(a.fence_refusals, b.fence_refusals);

	/*
	 * Nor can any lease push help: refused with EOVERFLOW, not
	 * EKEYEXPIRED, whether a renewal or another node.
	 */
	errno = 0;
	EXPECT_EQ(-1, idgen_set_lease(self->fd, region, worker, st.last_ms,
				      IDGEN_MS_MAX + 1));
	EXPECT_EQ(EOVERFLOW, errno) TH_LOG("renewal: %s", strerror(errno));
	errno = 0;
	EXPECT_EQ(-1, idgen_set_lease(self->fd, region, worker ^ 1, 0,
				      IDGEN_MS_MAX + 1));
	EXPECT_EQ(EOVERFLOW, errno) TH_LOG("another node: %s", strerror(errno));

	/* A clock past the end of the field changes nothing. */
	ASSERT_EQ(0, set_wall_idgen_ms(IDGEN_MS_MAX + 5000));
	ASSERT_EQ(0, ioctl(self->fd, IDGEN_IOC_ADOPT_CLOCK));
	errno = 0;
	EXPECT_EQ(-1, idgen_read(self->fd, self->ids, 1));
	EXPECT_EQ(EOVERFLOW, errno);
	errno = 0;
	EXPECT_EQ(-1, idgen_set_lease(self->fd, region, worker ^ 1, 0,
				      IDGEN_MS_MAX + 1));
	EXPECT_EQ(EOVERFLOW, errno) TH_LOG("past the end: %s", strerror(errno));
}

TEST_HARNESS_MAIN

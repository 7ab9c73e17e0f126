// SPDX-License-Identifier: GPL-2.0
/*
 * clock_steps - idgen under CLOCK_REALTIME steps (Documentation/design.md, C1-C4).
 *
 * DESTRUCTIVE: steps the wall clock with clock_settime().  Run only as root
 * in a disposable guest with idgen.ko loaded.  It refuses to run unless
 * IDGEN_GUEST=1 is set (tests/vm/run-guest.sh sets it), so it cannot
 * wreck a host's clock by mistake.
 *
 * Each case leases a node, runs a reader thread that mints small batches
 * while the main thread steps the clock, then checks every read: IDs
 * strictly increasing, no duplicates, milliseconds never back, never more
 * than max_lead_ms ahead of the wall clock, and the errnos of the contract.
 * Teardown puts the clock back where CLOCK_MONOTONIC says it should be (on
 * the adopted timeline after fwd_1h_adopted, see there) and adopts whatever
 * step that leaves held.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <sys/timex.h>

#include "idgen_util.h"
#include "kselftest_harness.h"

#define TEST_REGION	5
#define TEST_WORKER	77
#define LEASE_MS	(3 * 3600 * 1000ULL)	/* outlives a 1 h adopted step */
#define HOUR_MS		(3600 * 1000LL)
#define SLACK_MS	2000
#define LEAD_SLACK_MS	5
#define MAX_IDS		(1UL << 22)
#define MAX_RECS	(1UL << 19)
#define BATCH		64

struct rec {
	__u64 raw0, raw1;	/* CLOCK_MONOTONIC_RAW around read() */
	int64_t wall1;		/* CLOCK_REALTIME after read(), idgen ms */
	size_t first;		/* index in ids */
	int n;			/* IDs read, or -errno */
};

struct reader {
	pthread_t thread;
	int fd;
	atomic_bool stop;
	__u64 *ids;
	size_t nids;
	struct rec *recs;
	size_t nrecs;
	bool full;
};

FIXTURE(clock) {
	int fd;
	__u32 region, worker;
	struct idgen_state st;	/* with the lease in force */
	__u64 real0, mono0;	/* CLOCK_REALTIME, CLOCK_MONOTONIC at setup */
	__u64 raw0;		/* CLOCK_MONOTONIC_RAW at setup */
	int64_t shift_ms;	/* where teardown leaves the clock: real + shift */
	struct reader rd;
	bool reader_running;
};

/* The undisturbed wall clock, in idgen ms, at a CLOCK_MONOTONIC_RAW time. */
static int64_t expected_ms(FIXTURE_DATA(clock) *self, __u64 raw)
{
	return (int64_t)((self->real0 + (raw - self->raw0)) / NSEC_PER_MSEC) -
	       (int64_t)IDGEN_EPOCH_UNIX_MS;
}

/* Put CLOCK_REALTIME at real0 + elapsed CLOCK_MONOTONIC + shift_ms. */
static int restore_clock(FIXTURE_DATA(clock) *self)
{
	__u64 ns = self->real0 + (clock_ns(CLOCK_MONOTONIC) - self->mono0) +
		   self->shift_ms * (int64_t)NSEC_PER_MSEC;
	struct timespec ts = {
		.tv_sec = ns / NSEC_PER_SEC,
		.tv_nsec = ns % NSEC_PER_SEC,
	};

	return clock_settime(CLOCK_REALTIME, &ts);
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	const struct timespec pause = { .tv_nsec = 200 * 1000 };

	while (!atomic_load(&rd->stop)) {
		struct rec *r;
		ssize_t got;

		if (rd->nrecs == MAX_RECS || rd->nids + BATCH > MAX_IDS) {
			rd->full = true;
			break;
		}
		r = &rd->recs[rd->nrecs++];
		r->first = rd->nids;
		r->raw0 = clock_ns(CLOCK_MONOTONIC_RAW);
		got = idgen_read(rd->fd, rd->ids + rd->nids, BATCH);
		r->n = got < 0 ? -errno : (int)got;
		r->raw1 = clock_ns(CLOCK_MONOTONIC_RAW);
		r->wall1 = wall_idgen_ms();
		if (got > 0)
			rd->nids += got;
		nanosleep(&pause, NULL);
		if (got < 0)
			sleep_ms(1);
	}
	return NULL;
}

static void start_reader(struct __test_metadata *_metadata,
			 FIXTURE_DATA(clock) *self)
{
	struct reader *rd = &self->rd;

	rd->fd = self->fd;
	atomic_store(&rd->stop, false);
	ASSERT_EQ(0, pthread_create(&rd->thread, NULL, reader_main, rd));
	self->reader_running = true;
}

static void stop_reader(struct __test_metadata *_metadata,
			FIXTURE_DATA(clock) *self)
{
	if (!self->reader_running)
		return;
	atomic_store(&self->rd.stop, true);
	ASSERT_EQ(0, pthread_join(self->rd.thread, NULL));
	self->reader_running = false;
	EXPECT_FALSE(self->rd.full) TH_LOG("reader storage full");
}

/* A step of the wall clock, with CLOCK_MONOTONIC_RAW around it. */
struct step {
	__u64 raw0, raw1;
};

static void step_clock(struct __test_metadata *_metadata, struct step *s,
		       int64_t delta_ms)
{
	s->raw0 = clock_ns(CLOCK_MONOTONIC_RAW);
	ASSERT_EQ(0, step_wall_clock(delta_ms))
		TH_LOG("clock_settime: %s", strerror(errno));
	s->raw1 = clock_ns(CLOCK_MONOTONIC_RAW);
}

static bool overlaps(const struct rec *r, const struct step *s)
{
	return r->raw0 <= s->raw1 && r->raw1 >= s->raw0;
}

/* Reads that failed, and with which errno. */
static size_t count_errors(const struct reader *rd, int *first_errno)
{
	size_t i, n = 0;

	*first_errno = 0;
	for (i = 0; i < rd->nrecs; i++) {
		if (rd->recs[i].n < 0) {
			if (!n++)
				*first_errno = -rd->recs[i].n;
		}
	}
	return n;
}

/*
 * What every case checks: strictly increasing, no duplicates, and each ID
 * at most max_lead_ms ahead of the wall clock after its read (C3), except
 * for reads that overlap a step (the wall reading is from the other side).
 */
static void check_common(struct __test_metadata *_metadata,
			 FIXTURE_DATA(clock) *self, const struct step *steps,
			 int nsteps)
{
	const struct reader *rd = &self->rd;
	size_t i, bad, dups;
	int j;

	ASSERT_LT(0, rd->nids) TH_LOG("no IDs read at all");
	bad = first_not_increasing(rd->ids, rd->nids);
	EXPECT_EQ(rd->nids, bad) TH_LOG("ID %zu (%llu) not above %llu", bad,
					rd->ids[bad], rd->ids[bad - 1]);
	dups = count_dups(rd->ids, rd->nids);
	EXPECT_EQ(0, dups) TH_LOG("%zd duplicates among %zu IDs", dups, rd->nids);

	for (i = 0; i < rd->nrecs; i++) {
		const struct rec *r = &rd->recs[i];
		bool skip = false;
		__u64 last;

		if (r->n <= 0)
			continue;
		for (j = 0; j < nsteps; j++)
			skip |= overlaps(r, &steps[j]);
		if (skip)
			continue;
		last = rd->ids[r->first + r->n - 1];
		EXPECT_GE(r->wall1 + self->st.max_lead_ms + LEAD_SLACK_MS,
			  (int64_t)id_ms(last))
			TH_LOG("read %zu: ID ms %llu more than max_lead ahead of wall %lld",
			       i, id_ms(last), (long long)r->wall1);
		if (r->wall1 + self->st.max_lead_ms + LEAD_SLACK_MS < (int64_t)id_ms(last))
			break;
	}
}

/* Every ID of reads in [from, to) of raw time within SLACK_MS of expected + shift. */
static void check_tracks(struct __test_metadata *_metadata,
			 FIXTURE_DATA(clock) *self, __u64 from, __u64 to,
			 int64_t shift_ms, const char *phase)
{
	const struct reader *rd = &self->rd;
	size_t i, checked = 0;
	int k;

	for (i = 0; i < rd->nrecs; i++) {
		const struct rec *r = &rd->recs[i];
		int64_t lo, hi;

		if (r->n <= 0 || r->raw0 < from || r->raw1 > to)
			continue;
		lo = expected_ms(self, r->raw0) + shift_ms - SLACK_MS;
		hi = expected_ms(self, r->raw1) + shift_ms + SLACK_MS;
		for (k = 0; k < r->n; k++) {
			int64_t ms = id_ms(rd->ids[r->first + k]);

			ASSERT_TRUE(ms >= lo && ms <= hi)
				TH_LOG("%s: ID ms %lld not within %d ms of %lld",
				       phase, (long long)ms, SLACK_MS,
				       (long long)(expected_ms(self, r->raw0) + shift_ms));
		}
		checked++;
	}
	EXPECT_LT(0, checked) TH_LOG("%s: no reads to check", phase);
}

FIXTURE_SETUP(clock)
{
	struct idgen_state st;
	__u64 l;

	REQUIRE_GUEST_ROOT("steps the wall clock");
	OPEN_OR_SKIP(self->fd, 0);

	self->rd.ids = malloc(MAX_IDS * sizeof(*self->rd.ids));
	self->rd.recs = malloc(MAX_RECS * sizeof(*self->rd.recs));
	ASSERT_NE(NULL, self->rd.ids);
	ASSERT_NE(NULL, self->rd.recs);

	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EQ(0, idgen_wait_caught_up(self->fd, 10000));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	ASSERT_FALSE(st.flags & IDGEN_STATE_CLOCK_HELD)
		TH_LOG("a forward step is held from before");
	self->region = TEST_REGION & ((1U << st.region_bits) - 1);
	self->worker = TEST_WORKER & ((1U << st.worker_bits) - 1);
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker,
				     st.last_ms, st.now_ms + LEASE_MS));
	ASSERT_EQ(0, idgen_get_state(self->fd, &self->st));

	self->real0 = clock_ns(CLOCK_REALTIME);
	self->mono0 = clock_ns(CLOCK_MONOTONIC);
	self->raw0 = clock_ns(CLOCK_MONOTONIC_RAW);
}

FIXTURE_TEARDOWN(clock)
{
	struct idgen_state st;
	__u64 l;

	stop_reader(_metadata, self);
	EXPECT_EQ(0, restore_clock(self));
	/* Restoring may itself be a forward step the module holds. */
	EXPECT_EQ(0, ioctl(self->fd, IDGEN_IOC_ADOPT_CLOCK));
	EXPECT_EQ(0, idgen_revoke(self->fd, &l));
	EXPECT_EQ(0, idgen_get_state(self->fd, &st));
	EXPECT_FALSE(st.flags & IDGEN_STATE_CLOCK_HELD);
	close(self->fd);
	free(self->rd.ids);
	free(self->rd.recs);
}

/* Small steps back: stamping goes on, never back, no ETIME. */
static void step_back_case(struct __test_metadata *_metadata,
			   FIXTURE_DATA(clock) *self, int64_t back_ms)
{
	struct idgen_state a, b;
	int64_t wall_at_stop;
	struct step s;
	size_t nerr;
	int err;

	if (self->st.max_lead_ms < back_ms + 100)
		SKIP(return, "max_lead_ms %u too small", self->st.max_lead_ms);
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	start_reader(_metadata, self);
	sleep_ms(300);
	step_clock(_metadata, &s, -back_ms);
	sleep_ms(back_ms + 1000);
	/* Before the join: on a slow debug kernel joining takes a while. */
	wall_at_stop = wall_idgen_ms();
	stop_reader(_metadata, self);
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));

	nerr = count_errors(&self->rd, &err);
	EXPECT_EQ(0, nerr) TH_LOG("%zu reads failed, first with %s", nerr, strerror(err));
	check_common(_metadata, self, &s, 1);
	/* Caught up: the last IDs carry the wall clock's ms again. */
	EXPECT_LE(wall_at_stop - 200, (int64_t)id_ms(self->rd.ids[self->rd.nids - 1]));
	TH_LOG("steps_back %llu -> %llu, borrowed_ms %llu -> %llu",
	       a.steps_back, b.steps_back, a.borrowed_ms, b.borrowed_ms);
	if (back_ms >= 100)
		EXPECT_LT(a.steps_back, b.steps_back);
}

TEST_F_TIMEOUT(clock, back_5ms, 60)
{
	step_back_case(_metadata, self, 5);
}

TEST_F_TIMEOUT(clock, back_500ms, 60)
{
	step_back_case(_metadata, self, 500);
}

/*
 * Back 5 s, beyond max_lead: ETIME (soon), until the wall clock is within
 * max_lead of the last stamped ms again (~4 s), then minting resumes.
 */
TEST_F_TIMEOUT(clock, back_5s, 60)
{
	const int64_t back = 5000;
	__u64 first_fail = 0, recovered = 0, late;
	struct idgen_state a, b;
	struct step s;
	size_t i;

	if (self->st.max_lead_ms + 1000 > back)
		SKIP(return, "max_lead_ms %u too large", self->st.max_lead_ms);
	late = back - self->st.max_lead_ms;	/* when minting may resume */
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	start_reader(_metadata, self);
	sleep_ms(300);
	step_clock(_metadata, &s, -back);
	sleep_ms(late + 1500);
	stop_reader(_metadata, self);
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));

	for (i = 0; i < self->rd.nrecs; i++) {
		const struct rec *r = &self->rd.recs[i];

		if (r->raw0 < s.raw1)
			continue;
		if (r->n < 0) {
			EXPECT_EQ(ETIME, -r->n) TH_LOG("read failed with %s", strerror(-r->n));
			if (!first_fail)
				first_fail = r->raw0;
		} else if (first_fail && !recovered) {
			recovered = r->raw0;
		}
	}
	ASSERT_NE(0, first_fail) TH_LOG("no ETIME after a 5 s step back");
	EXPECT_GT(1200 * NSEC_PER_MSEC, first_fail - s.raw1)
		TH_LOG("first ETIME %llu ms after the step", (first_fail - s.raw1) / NSEC_PER_MSEC);
	ASSERT_NE(0, recovered) TH_LOG("no ID minted after the wall clock caught up");
	EXPECT_LE((late - 300) * NSEC_PER_MSEC, recovered - s.raw1)
		TH_LOG("minting resumed %llu ms after the step",
		       (recovered - s.raw1) / NSEC_PER_MSEC);
	EXPECT_GE((late + 1000) * NSEC_PER_MSEC, recovered - s.raw1)
		TH_LOG("minting resumed %llu ms after the step",
		       (recovered - s.raw1) / NSEC_PER_MSEC);
	check_common(_metadata, self, &s, 1);
	EXPECT_LT(a.steps_back, b.steps_back);
	EXPECT_LT(a.lead_refusals, b.lead_refusals);
}

/*
 * Adoptions are logged, but rate-limited: a clock stepped and adopted
 * over and over cannot flood the kernel log.  Each round steps the wall
 * clock beyond max_step and adopts it; teardown stays on the new timeline.
 */
#define ADOPT_ROUNDS	30
#define NOTICE_BURST	10	/* printk's default burst per 5 s */
TEST_F_TIMEOUT(clock, adopt_notices_rate_limited, 60)
{
	int64_t fwd = self->st.max_step_ms + 500;
	int kmsg, i, notices = 0;
	char rec[1024];
	ssize_t n;

	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, kmsg) TH_LOG("open /dev/kmsg: %s", strerror(errno));
	ASSERT_LE(0, lseek(kmsg, 0, SEEK_END));
	for (i = 0; i < ADOPT_ROUNDS; i++) {
		ASSERT_EQ(0, step_wall_clock(fwd));
		self->shift_ms += fwd;
		ASSERT_EQ(0, ioctl(self->fd, IDGEN_IOC_ADOPT_CLOCK));
	}
	for (;;) {
		n = read(kmsg, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* records overwritten: go on */
		if (n <= 0)
			break;
		rec[n] = 0;
		if (strstr(rec, "idgen: forward wall-clock step of") &&
		    strstr(rec, "adopted"))
			notices++;
	}
	close(kmsg);
	TH_LOG("%d adoptions, %d logged", ADOPT_ROUNDS, notices);
	EXPECT_LT(0, notices);
	EXPECT_GE(NOTICE_BURST, notices);
}

/*
 * Forward 1 h, reverted after 2 s: held (C4), IDs stay on the
 * monotonic-raw timeline, and the revert leaves no trace.
 */
TEST_F_TIMEOUT(clock, fwd_1h_reverted, 60)
{
	struct idgen_state a, held, after;
	struct step s[2];
	__u64 raw_held;
	size_t nerr;
	int err;

	if (self->st.max_step_ms >= HOUR_MS / 2)
		SKIP(return, "max_step_ms %u too large", self->st.max_step_ms);
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	start_reader(_metadata, self);
	sleep_ms(300);
	step_clock(_metadata, &s[0], HOUR_MS);
	sleep_ms(1000);
	ASSERT_EQ(0, idgen_get_state(self->fd, &held));
	raw_held = clock_ns(CLOCK_MONOTONIC_RAW);
	sleep_ms(1000);
	s[1].raw0 = clock_ns(CLOCK_MONOTONIC_RAW);
	ASSERT_EQ(0, restore_clock(self));
	s[1].raw1 = clock_ns(CLOCK_MONOTONIC_RAW);
	sleep_ms(100);
	ASSERT_EQ(0, idgen_get_state(self->fd, &after));
	sleep_ms(600);
	stop_reader(_metadata, self);

	EXPECT_TRUE(held.flags & IDGEN_STATE_CLOCK_HELD);
	EXPECT_GT(1500, llabs(held.held_step_ms - HOUR_MS))
		TH_LOG("held_step_ms %lld", (long long)held.held_step_ms);
	EXPECT_LT(a.steps_forward, held.steps_forward);
	EXPECT_GT(SLACK_MS, llabs((int64_t)held.now_ms - expected_ms(self, raw_held)))
		TH_LOG("trusted now %llu followed the step", held.now_ms);
	EXPECT_GT(SLACK_MS, llabs((int64_t)held.wall_ms - expected_ms(self, raw_held) - HOUR_MS))
		TH_LOG("wall_ms %llu is not the stepped wall clock", held.wall_ms);

	EXPECT_FALSE(after.flags & IDGEN_STATE_CLOCK_HELD) TH_LOG("the revert left a held step");
	EXPECT_GT(1000, llabs(after.held_step_ms));
	EXPECT_EQ(a.steps_adopted, after.steps_adopted);
	/* No burnt lease. */
	EXPECT_TRUE(after.flags & IDGEN_STATE_LEASED);
	EXPECT_EQ(a.valid_until_ms, after.valid_until_ms);

	nerr = count_errors(&self->rd, &err);
	EXPECT_EQ(0, nerr) TH_LOG("%zu reads failed, first with %s", nerr, strerror(err));
	check_tracks(_metadata, self, 0, ~0ULL, 0, "1 h step held then reverted");
	check_common(_metadata, self, NULL, 0);
}

/*
 * A forward step of `fwd` ms adopted with IDGEN_IOC_ADOPT_CLOCK: held until
 * the ioctl, then IDs jump to the new time.  Stepping back to the old time
 * then makes the generator max_lead-bound: ETIME.  Returns the raw time
 * the adoption finished, with the reader stopped.
 */
static __u64 adopt_case(struct __test_metadata *_metadata,
			FIXTURE_DATA(clock) *self, int64_t fwd)
{
	struct idgen_state a, held, adopted;
	struct step s;
	size_t nerr;
	__u64 t0, t1;
	int err;

	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	start_reader(_metadata, self);
	sleep_ms(300);
	step_clock(_metadata, &s, fwd);
	sleep_ms(700);
	ASSERT_EQ(0, idgen_get_state(self->fd, &held));
	t0 = clock_ns(CLOCK_MONOTONIC_RAW);
	ASSERT_EQ(0, ioctl(self->fd, IDGEN_IOC_ADOPT_CLOCK));
	t1 = clock_ns(CLOCK_MONOTONIC_RAW);
	/* Teardown must not undo what the generator now stands on. */
	self->shift_ms = fwd;
	ASSERT_EQ(0, idgen_get_state(self->fd, &adopted));
	sleep_ms(700);
	stop_reader(_metadata, self);

	EXPECT_TRUE(held.flags & IDGEN_STATE_CLOCK_HELD);
	EXPECT_GT(1500, llabs(held.held_step_ms - fwd))
		TH_LOG("held_step_ms %lld", (long long)held.held_step_ms);
	EXPECT_FALSE(adopted.flags & IDGEN_STATE_CLOCK_HELD);
	EXPECT_EQ(0, adopted.held_step_ms);
	EXPECT_EQ(a.steps_adopted + 1, adopted.steps_adopted);

	nerr = count_errors(&self->rd, &err);
	EXPECT_EQ(0, nerr) TH_LOG("%zu reads failed, first with %s", nerr, strerror(err));
	check_tracks(_metadata, self, 0, t0, 0, "held before adoption");
	check_tracks(_metadata, self, t1, ~0ULL, fwd, "after adoption");
	check_common(_metadata, self, &s, 1);
	return t1;
}

/* Read one batch in the main thread into the reader's storage. */
static ssize_t read_more(FIXTURE_DATA(clock) *self)
{
	ssize_t r;

	if (self->rd.nids + BATCH > MAX_IDS)
		return errno = ENOSPC, -1;
	r = idgen_read(self->fd, self->rd.ids + self->rd.nids, BATCH);
	if (r > 0)
		self->rd.nids += r;
	return r;
}

/* Step back after adopting: ETIME, nothing readable. */
static void expect_etime(struct __test_metadata *_metadata,
			 FIXTURE_DATA(clock) *self)
{
	int i;

	for (i = 0; i < 5; i++) {
		errno = 0;
		EXPECT_EQ(-1, read_more(self));
		EXPECT_EQ(ETIME, errno) TH_LOG("read after stepping back: %s", strerror(errno));
		sleep_ms(10);
	}
	EXPECT_FALSE(poll_revents(self->fd, 0) & POLLIN);
}

/*
 * Adopt a step a few seconds forward, then put the real time back: ETIME
 * until the wall clock is within max_lead of the generator again, then
 * minting resumes, and the clock ends where it should be.
 */
TEST_F_TIMEOUT(clock, fwd_small_adopted_then_restored, 60)
{
	int64_t fwd = (self->st.max_step_ms > self->st.max_lead_ms ?
		       self->st.max_step_ms : self->st.max_lead_ms) + 2000;
	__u64 t, deadline, last_ms, id;
	int64_t wall;
	ssize_t r;
	size_t dups;

	adopt_case(_metadata, self, fwd);
	last_ms = id_ms(self->rd.ids[self->rd.nids - 1]);

	self->shift_ms = 0;
	ASSERT_EQ(0, restore_clock(self));
	expect_etime(_metadata, self);

	t = clock_ns(CLOCK_MONOTONIC);
	deadline = t + (fwd + 2000) * NSEC_PER_MSEC;
	while ((r = read_more(self)) < 0 && errno == ETIME &&
	       clock_ns(CLOCK_MONOTONIC) < deadline)
		sleep_ms(10);
	wall = wall_idgen_ms();
	ASSERT_LT(0, r) TH_LOG("no ID after the wall clock caught up: %s", strerror(errno));
	TH_LOG("minting resumed after %llu ms",
	       (clock_ns(CLOCK_MONOTONIC) - t) / NSEC_PER_MSEC);
	/*
	 * Not too soon: the first ID after the step carries at least the last
	 * ms stamped before it (the generator never goes back) and lies within
	 * max_lead of the wall clock, so the wall clock had come within
	 * max_lead of that ms.  (How long that took depends on when the reader
	 * last minted, which a loaded host delays.)
	 */
	id = self->rd.ids[self->rd.nids - 1];
	EXPECT_LE(last_ms, id_ms(id));
	EXPECT_GE(wall + self->st.max_lead_ms + LEAD_SLACK_MS, (int64_t)id_ms(id))
		TH_LOG("minting resumed at ms %llu, wall %lld", id_ms(id), (long long)wall);
	EXPECT_EQ(self->rd.nids, first_not_increasing(self->rd.ids, self->rd.nids));
	dups = count_dups(self->rd.ids, self->rd.nids);
	EXPECT_EQ(0, dups);
}

/*
 * Forward 1 h, adopted.  The generator now stands an hour ahead of the old
 * time and never goes back (C1), so putting the old time back would stop
 * minting for an hour: step back to see ETIME, then return to the adopted
 * timeline.  The guest's clock stays an hour ahead; teardown keeps it there.
 * Runs last.
 */
TEST_F_TIMEOUT(clock, fwd_1h_adopted, 60)
{
	struct idgen_state st;
	__u64 deadline;
	ssize_t r;
	size_t dups;

	if (self->st.max_step_ms >= HOUR_MS / 2)
		SKIP(return, "max_step_ms %u too large", self->st.max_step_ms);
	adopt_case(_metadata, self, HOUR_MS);

	ASSERT_EQ(0, step_wall_clock(-HOUR_MS));
	expect_etime(_metadata, self);

	/* Back to the adopted timeline; adopt again if it counts as a step. */
	ASSERT_EQ(0, restore_clock(self));
	ASSERT_EQ(0, ioctl(self->fd, IDGEN_IOC_ADOPT_CLOCK));
	deadline = clock_ns(CLOCK_MONOTONIC) + 2 * NSEC_PER_SEC;
	while ((r = read_more(self)) < 0 && errno == ETIME &&
	       clock_ns(CLOCK_MONOTONIC) < deadline)
		sleep_ms(10);
	ASSERT_LT(0, r) TH_LOG("no ID back on the adopted timeline: %s", strerror(errno));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	EXPECT_FALSE(st.flags & IDGEN_STATE_CLOCK_HELD);
	EXPECT_GT(SLACK_MS, llabs((int64_t)id_ms(self->rd.ids[self->rd.nids - 1]) -
				  wall_idgen_ms()));
	EXPECT_EQ(self->rd.nids, first_not_increasing(self->rd.ids, self->rd.nids));
	dups = count_dups(self->rd.ids, self->rd.nids);
	EXPECT_EQ(0, dups);
	TH_LOG("the guest's clock is left 1 h ahead, where the generator is");
}

/*
 * Ordinary NTP frequency drift while nobody mints and no lease is in
 * force is not a step: the module reads the clock every ten seconds from
 * load to unload, so slew is credited over short gaps.  Unread for 70 s,
 * 480 ppm of drift (34 ms) is more than the slew cap credits (500 ppm for
 * at most a minute), and was counted as a forward step.
 */
#define DRIFT_PPM	480
#define DRIFT_IDLE_MS	70000
TEST_F_TIMEOUT(clock, ntp_drift_idle_not_a_step, 180)
{
	struct timex tx = { .modes = 0 };
	struct idgen_state a, b;
	long freq0;
	__u64 l;

	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_LE(0, adjtimex(&tx));
	freq0 = tx.freq;
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	tx = (struct timex){ .modes = ADJ_FREQUENCY, .freq = DRIFT_PPM << 16 };
	ASSERT_LE(0, adjtimex(&tx)) TH_LOG("adjtimex: %s", strerror(errno));
	sleep_ms(DRIFT_IDLE_MS);
	EXPECT_EQ(0, idgen_get_state(self->fd, &b));
	tx = (struct timex){ .modes = ADJ_FREQUENCY, .freq = freq0 };
	ASSERT_LE(0, adjtimex(&tx)) TH_LOG("adjtimex: %s", strerror(errno));
	EXPECT_EQ(a.steps_forward, b.steps_forward)
		TH_LOG("%lld ppm of drift over %d s taken for a step", (long long)DRIFT_PPM,
		       DRIFT_IDLE_MS / 1000);
	EXPECT_FALSE(b.flags & IDGEN_STATE_CLOCK_HELD);
}

TEST_HARNESS_MAIN

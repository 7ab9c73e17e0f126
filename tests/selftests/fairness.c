// SPDX-License-Identifier: GPL-2.0
/*
 * fairness - one greedy local user cannot take /dev/idgen for itself.
 *
 * The device is 0444.  An unprivileged spinner on every CPU reads 32 KiB
 * at a time, O_NONBLOCK, as fast as it can, through several open files
 * (more shares together than the node holds); another unprivileged
 * process reads one ID at a time, blocking.  A 6-bit sequence (64 IDs per
 * ms) lets even a slow guest's spinners outrun the node, so without the
 * fairness rules they would push the generator to the lead bound.  The blocking reader must never be
 * refused (ETIME), and the generator must not run more than max_borrow_ms
 * ahead of the (healthy) wall clock through borrowing alone: the 1 s lead
 * is for clock steps back, not for a greedy reader.
 *
 * Run as root in a disposable guest with idgen.ko loaded and IDGEN_GUEST=1
 * (tests/vm/run-guest.sh sets it): it sets and revokes the lease.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "idgen_util.h"
#include "kselftest_harness.h"

#define TEST_WORKER	55
#define SEQ_BITS	6
#define SPIN_FILES	4	/* per spinner: 4 shares of 1/4 each, per CPU */
#define LEASE_MS	120000
#define NOBODY		65534
#define RUN_MS		4000	/* how long the spinners spin */
#define WARMUP_MS	500	/* before the first sample of the lead */
#define SAMPLES		30	/* of next_ms - now_ms, over the run */
#define SPIN_IDS	4096	/* 32 KiB per read */
#define MAX_WAITS	8192
/* The k-sort target (Documentation/design.md, G3), unless the module says its own. */
#define BORROW_DEFAULT_MS	10
/* Sampling races the reader: a ms or two either way. */
#define LEAD_SLACK_MS	3
/*
 * A bound, not a goal: that the blocking reader's wait is bounded at all.
 * Under emulation on a loaded host its p99 ranged from 20 ms to 1 s in
 * runs of one module, with the spinners hogging both vCPUs; the printed
 * figure is for reading, never being refused and the lead are the test.
 */
#define P99_BOUND_MS	5000

#define BORROW_PARAM	"/sys/module/idgen/parameters/max_borrow_ms"

/* What the blocking reader saw, in memory shared with the parent. */
struct reader_log {
	__u64 waits_ns[MAX_WAITS];
	__u64 nwaits;
	__u64 etime;
	__u64 other_errors;
	int first_errno;
	__s64 max_ahead_ms;	/* of an ID's ms over the wall clock */
	int ready;
};

static unsigned int max_borrow_ms(void)
{
	unsigned int v = BORROW_DEFAULT_MS;
	FILE *f = fopen(BORROW_PARAM, "r");

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = BORROW_DEFAULT_MS;
		fclose(f);
	}
	return v;
}

static int drop_to_nobody(void)
{
	return setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY);
}

/* Greedy: 32 KiB O_NONBLOCK reads, whatever they answer, until killed. */
static void spinner_main(int cpu)
{
	static __u64 ids[SPIN_IDS];
	int fds[SPIN_FILES], i;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	if (drop_to_nobody())
		_exit(1);
	for (i = 0; i < SPIN_FILES; i++) {
		fds[i] = open(IDGEN_DEV, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fds[i] < 0)
			_exit(2);
	}
	for (i = 0;; i = (i + 1) % SPIN_FILES)
		if (read(fds[i], ids, sizeof(ids)) < 0 && errno != EAGAIN &&
		    errno != ETIME)
			_exit(3);
}

/* One ID at a time, blocking, with a short pause between reads. */
static void reader_main(struct reader_log *log, __u64 until_ns)
{
	__u64 id, t0, t1;
	int64_t ahead;
	ssize_t r;
	int fd;

	if (drop_to_nobody())
		_exit(1);
	fd = open(IDGEN_DEV, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		_exit(2);
	log->ready = 1;
	while ((t0 = clock_ns(CLOCK_MONOTONIC)) < until_ns) {
		r = idgen_read(fd, &id, 1);
		t1 = clock_ns(CLOCK_MONOTONIC);
		if (r != 1) {
			if (errno == ETIME) {
				log->etime++;
			} else {
				if (!log->other_errors++)
					log->first_errno = errno;
			}
			sleep_ms(1);
			continue;
		}
		ahead = (int64_t)id_ms(id) - wall_idgen_ms();
		if (ahead > log->max_ahead_ms)
			log->max_ahead_ms = ahead;
		if (log->nwaits < MAX_WAITS)
			log->waits_ns[log->nwaits++] = t1 - t0;
		sleep_ms(2);
	}
	_exit(0);
}

static int cmp_u64_asc(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

FIXTURE(fair) {
	int fd;
	struct idgen_state st;
};

FIXTURE_SETUP(fair)
{
	struct idgen_lease_args args;
	struct idgen_state before;
	__u64 l;

	REQUIRE_GUEST_ROOT("changes the host's lease");
	OPEN_OR_SKIP(self->fd, 0);
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EQ(0, idgen_wait_caught_up(self->fd, 10000));
	ASSERT_EQ(0, idgen_get_state(self->fd, &before));
	idgen_lease_init(&args, 0, TEST_WORKER, before.last_ms,
			 before.now_ms + LEASE_MS);
	args.region_bits = 0;
	args.worker_bits = IDGEN_NODE_SEQ_BITS - SEQ_BITS;
	args.seq_bits = SEQ_BITS;
	ASSERT_EQ(0, ioctl(self->fd, IDGEN_IOC_SET_LEASE, &args))
		TH_LOG("set lease with layout 0/%d/%d: %s",
		       IDGEN_NODE_SEQ_BITS - SEQ_BITS, SEQ_BITS, strerror(errno));
	ASSERT_EQ(0, idgen_get_state(self->fd, &self->st));
	ASSERT_EQ(SEQ_BITS, self->st.seq_bits);
}

FIXTURE_TEARDOWN(fair)
{
	__u64 l;

	EXPECT_EQ(0, idgen_revoke(self->fd, &l));
	close(self->fd);
}

/*
 * Spinners on every CPU and a blocking 1-ID reader: the reader is never
 * refused, and the stamped ms stays within max_borrow_ms of the clock.
 */
TEST_F_TIMEOUT(fair, greedy_spinners_leave_room, 120)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int borrow = max_borrow_ms();
	__s64 lead, max_lead = 0;
	struct reader_log *log;
	struct idgen_state st;
	pid_t *spinners, reader;
	__u64 until, p99, ids0;
	int i, status, samples = 0;

	ASSERT_LT(0, ncpu);
	spinners = calloc(ncpu, sizeof(*spinners));
	ASSERT_NE(NULL, spinners);
	log = mmap(NULL, sizeof(*log), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, log);
	ids0 = self->st.ids;

	for (i = 0; i < ncpu; i++) {
		spinners[i] = fork();
		ASSERT_LE(0, spinners[i]);
		if (!spinners[i])
			spinner_main(i);
	}
	until = clock_ns(CLOCK_MONOTONIC) + RUN_MS * NSEC_PER_MSEC;
	reader = fork();
	ASSERT_LE(0, reader);
	if (!reader)
		reader_main(log, until);

	/* The lead, sampled while the spinners spin. */
	sleep_ms(WARMUP_MS);
	for (i = 0; i < SAMPLES; i++) {
		ASSERT_EQ(0, idgen_get_state(self->fd, &st));
		ASSERT_FALSE(st.flags & IDGEN_STATE_CLOCK_HELD);
		lead = (__s64)st.next_ms - (__s64)st.now_ms;
		if (lead > max_lead)
			max_lead = lead;
		samples++;
		if (clock_ns(CLOCK_MONOTONIC) + 150 * NSEC_PER_MSEC > until)
			break;
		sleep_ms((RUN_MS - WARMUP_MS) / SAMPLES);
	}

	ASSERT_EQ(reader, waitpid(reader, &status, 0));
	for (i = 0; i < ncpu; i++) {
		int s;

		kill(spinners[i], SIGKILL);
		ASSERT_EQ(spinners[i], waitpid(spinners[i], &s, 0));
		/* Killed, not exited: an exit says what went wrong first. */
		EXPECT_TRUE(WIFSIGNALED(s))
			TH_LOG("spinner %d exited %d", i, WEXITSTATUS(s));
	}
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("the reader could not start as nobody");
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));

	qsort(log->waits_ns, log->nwaits, sizeof(__u64), cmp_u64_asc);
	p99 = log->nwaits ? log->waits_ns[log->nwaits * 99 / 100] : 0;
	TH_LOG("%ld spinners, %llu IDs in all; reader: %llu IDs, %llu ETIME, p99 wait %llu us, max %llu us; max lead %lld ms in %d samples (max_borrow_ms %u), ID ms at most %lld ahead",
	       ncpu, st.ids - ids0, log->nwaits, log->etime, p99 / 1000,
	       log->nwaits ? log->waits_ns[log->nwaits - 1] / 1000 : 0,
	       (long long)max_lead, samples, borrow,
	       (long long)log->max_ahead_ms);

	/* The spinners did spin: more than the reader took. */
	EXPECT_LT(log->nwaits * 100, st.ids - ids0);
	EXPECT_EQ(0, log->etime) TH_LOG("the blocking reader was refused with ETIME");
	EXPECT_EQ(0, log->other_errors)
		TH_LOG("the blocking reader failed: %s", strerror(log->first_errno));
	ASSERT_LT(0, log->nwaits);
	EXPECT_GE(borrow + LEAD_SLACK_MS, max_lead)
		TH_LOG("the generator ran %lld ms ahead of a healthy clock", (long long)max_lead);
	EXPECT_GE(borrow + LEAD_SLACK_MS, log->max_ahead_ms)
		TH_LOG("an ID carried a ms %lld ahead of the wall clock",
		       (long long)log->max_ahead_ms);
	EXPECT_GT(P99_BOUND_MS * NSEC_PER_MSEC, p99)
		TH_LOG("p99 wait of the blocking reader: %llu ms", p99 / NSEC_PER_MSEC);
	munmap(log, sizeof(*log));
	free(spinners);
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * The simulated generator of idgen-httpd (helper/httpd/mint_sim.c) keeps
 * the module's guarantees within its process: strictly increasing
 * batches of its own node, borrowing the next millisecond, never more
 * than its lead ahead of the wall clock, refusing at its fence, no ID
 * twice across threads, a restart above every ID of the run before,
 * and only one process per worker on the host.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"
#include "mint_sim.h"
#include "kselftest_harness.h"

#define SEQ_PER_MS	4096

static char err[512];	/* what mint_sim_open() says when it fails */

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - LIBIDGEN_EPOCH_UNIX_MS;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

TEST(batch_of_its_node_borrowing_ms)
{
	static uint64_t ids[10000];
	struct idgen_decoded d, first;
	struct minter m;
	uint64_t ms_seen = 0;
	size_t i;

	ASSERT_EQ(0, mint_sim_open(&m, 37, 0, err, sizeof(err)));
	EXPECT_TRUE(m.simulated);
	ASSERT_EQ(10000, m.ops->mint(m.ctx, ids, 10000));
	ASSERT_EQ(0, idgen_decode(ids[0], NULL, &first));
	for (i = 0; i < 10000; i++) {
		ASSERT_EQ(0, idgen_decode(ids[i], NULL, &d));
		EXPECT_EQ(0, d.region);
		EXPECT_EQ(37, d.worker);
		if (i)
			ASSERT_LT(ids[i - 1], ids[i]);
		if (d.ms != ms_seen)
			ms_seen = d.ms;
	}
	/* 10000 IDs do not fit 4096 a ms: at least three ms were used. */
	EXPECT_LE(first.ms + 2, ms_seen);
	m.ops->close(m.ctx);
}

TEST(never_past_the_lead)
{
	static uint64_t ids[65536];
	struct idgen_decoded d;
	struct minter m;
	uint64_t last = 0, after;
	int i;
	ssize_t r;

	ASSERT_EQ(0, mint_sim_open(&m, 1, 0, err, sizeof(err)));
	/*
	 * Asking for more than the lead holds: short batches, waiting for
	 * the clock at the lead rather than refusing, never past it.
	 */
	for (i = 0; i < 50; i++) {
		r = m.ops->mint(m.ctx, ids, 65536);
		after = wall_ms();
		ASSERT_LT(0, r);
		ASSERT_LE(r, (MINT_SIM_MAX_LEAD_MS + 1) * SEQ_PER_MS);
		ASSERT_LT(last, ids[0]);
		last = ids[r - 1];
		ASSERT_EQ(0, idgen_decode(last, NULL, &d));
		ASSERT_LE(d.ms, after + MINT_SIM_MAX_LEAD_MS);
	}
	pause_ms(2 * MINT_SIM_MAX_LEAD_MS + 5);
	ASSERT_EQ(1, m.ops->mint(m.ctx, ids, 1));
	EXPECT_LT(last, ids[0]);
	m.ops->close(m.ctx);
}

TEST(restart_starts_above_the_run_before)
{
	static uint64_t ids[65536];
	struct minter a, b;
	uint64_t last = 0;
	ssize_t r;
	int i;

	/* The first run borrows as far ahead as it may (each call), and ends. */
	ASSERT_EQ(0, mint_sim_open(&a, 9, 0, err, sizeof(err)));
	for (i = 0; i < 20; i++) {
		r = a.ops->mint(a.ctx, ids, 65536);
		ASSERT_LT(0, r);
		last = ids[r - 1];
	}
	a.ops->close(a.ctx);
	/* The next run, at once, on the same node. */
	ASSERT_EQ(0, mint_sim_open(&b, 9, 0, err, sizeof(err)));
	ASSERT_EQ(1, b.ops->mint(b.ctx, ids, 1));
	EXPECT_LT(last, ids[0]);
	b.ops->close(b.ctx);
}

TEST(stops_at_its_fence)
{
	static uint64_t ids[4096];
	struct minter_state st;
	struct idgen_decoded d;
	struct minter m;
	ssize_t r = 0;
	int i;

	ASSERT_EQ(0, mint_sim_open(&m, 2, 50, err, sizeof(err)));
	ASSERT_EQ(0, m.ops->state(m.ctx, &st));
	EXPECT_EQ(st.floor_ms + 50, st.valid_until_ms);
	for (i = 0; i < 2000; i++) {
		r = m.ops->mint(m.ctx, ids, 4096);
		if (r == -EKEYEXPIRED)
			break;
		if (r == -ETIME) {
			pause_ms(1);
			continue;
		}
		ASSERT_LT(0, r);
		ASSERT_EQ(0, idgen_decode(ids[r - 1], NULL, &d));
		ASSERT_LT(d.ms, st.valid_until_ms);
		ASSERT_EQ(0, idgen_decode(ids[0], NULL, &d));
		ASSERT_LT(st.floor_ms, d.ms);
	}
	ASSERT_EQ(-EKEYEXPIRED, r);
	ASSERT_EQ(0, m.ops->state(m.ctx, &st));
	EXPECT_FALSE(st.leased);
	m.ops->close(m.ctx);
}

TEST(worker_out_of_range)
{
	struct minter m;

	EXPECT_EQ(-EINVAL, mint_sim_open(&m, 128, 0, err, sizeof(err)));
}

#define THREADS	4
#define PER	20000

struct worker_arg {
	struct minter *m;
	uint64_t ids[PER];
	int bad;
};

static void *take(void *p)
{
	struct worker_arg *w = p;
	size_t got = 0;
	ssize_t r;

	while (got < PER) {
		r = w->m->ops->mint(w->m->ctx, w->ids + got, PER - got < 100 ? PER - got : 100);
		if (r == -ETIME) {
			pause_ms(1);
			continue;
		}
		if (r <= 0) {
			w->bad = 1;
			break;
		}
		got += r;
	}
	for (got = 1; got < PER; got++)
		if (w->ids[got - 1] >= w->ids[got])
			w->bad = 1;
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

TEST(threads_never_share_an_id)
{
	static struct worker_arg w[THREADS];
	static uint64_t all[THREADS * PER];
	pthread_t t[THREADS];
	struct minter m;
	int i;

	ASSERT_EQ(0, mint_sim_open(&m, 5, 0, err, sizeof(err)));
	for (i = 0; i < THREADS; i++) {
		w[i].m = &m;
		ASSERT_EQ(0, pthread_create(&t[i], NULL, take, &w[i]));
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		EXPECT_FALSE(w[i].bad);
		memcpy(all + i * PER, w[i].ids, sizeof(w[i].ids));
	}
	qsort(all, THREADS * PER, sizeof(all[0]), cmp);
	for (i = 1; i < THREADS * PER; i++)
		ASSERT_NE(all[i - 1], all[i]);
	m.ops->close(m.ctx);
}

/*
 * Two processes on one worker would mint the same IDs: the second is
 * refused, naming region, worker and the lock file, while another
 * worker opens; once the first has ended the worker is free again.
 */
TEST(one_process_per_worker)
{
	const char *lock = "@" MINT_SIM_LOCK_NAME "21";
	char dir[] = "/tmp/mint_sim_test.XXXXXX";
	int held[2], done[2], status;
	struct minter m, other;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(held));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* The first process: holds worker 21 until told to end. */
		close(held[0]);
		close(done[1]);
		if (mint_sim_open(&m, 21, 0, err, sizeof(err)))
			_exit(1);
		if (write(held[1], "h", 1) != 1 || read(done[0], &c, 1) < 0)
			_exit(2);
		_exit(0);
	}
	close(held[1]);
	close(done[0]);
	ASSERT_EQ(1, read(held[0], &c, 1));

	ASSERT_EQ(-EBUSY, mint_sim_open(&m, 21, 0, err, sizeof(err)));
	TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(err, "region 0, worker 21"));
	EXPECT_NE(NULL, strstr(err, lock));
	/* The lock is one whatever the environment says: no directory of its own. */
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, setenv("RUNTIME_DIRECTORY", dir, 1));
	ASSERT_EQ(-EBUSY, mint_sim_open(&m, 21, 0, err, sizeof(err)));
	ASSERT_EQ(0, unsetenv("RUNTIME_DIRECTORY"));
	rmdir(dir);
	ASSERT_EQ(0, mint_sim_open(&other, 22, 0, err, sizeof(err)));
	other.ops->close(other.ctx);

	close(done[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, mint_sim_open(&m, 21, 0, err, sizeof(err)));
	m.ops->close(m.ctx);
}

TEST_HARNESS_MAIN

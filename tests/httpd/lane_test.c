// SPDX-License-Identifier: GPL-2.0
/*
 * idgen-httpd's bulk lane (helper/httpd/lane.c), over a generator the
 * test plays: requests take turns a chunk at a time, each gets exactly
 * its count, a refusal ends its request alone, short reads are read on,
 * a stop answers every request queued before it returns, a request after
 * it is minted by its submitter, the lane never mints again while its
 * last ID runs more than LANE_AHEAD_MS ahead of the generator's clock
 * and never waits for the clock before answering a finished request, and
 * a client that hung up (closed, or reset over TCP), a stream cancelled or
 * a deadline passed gets no more IDs, while one that only shut its sending
 * side (it still reads) gets them all.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"
#include "lane.h"
#include "minter.h"
#include "kselftest_harness.h"

#define MAX_CALLS	64

/* The generator the test plays: IDs of time field ms_ahead past the wall. */
struct fake {
	pthread_mutex_t lock;
	pthread_cond_t open_cond;
	bool open;			/* the first mint waits for it */
	unsigned int entered;		/* reads begun, waiting or not */
	unsigned int calls;
	struct { uint64_t *ids; size_t n; uint64_t wall_ms; } call[MAX_CALLS];
	unsigned int refuse_at;		/* this call (1-based) fails, 0: none */
	size_t short_by;		/* every read gives this many fewer */
	uint64_t ms_ahead;
	uint64_t next_seq;
	atomic_uint states;		/* the generator's clock read */
};

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 -
	       LIBIDGEN_EPOCH_UNIX_MS;
}

static ssize_t fake_mint(void *ctx, uint64_t *ids, size_t n)
{
	struct fake *f = ctx;
	unsigned int call;
	size_t i;

	pthread_mutex_lock(&f->lock);
	f->entered++;
	while (!f->open)
		pthread_cond_wait(&f->open_cond, &f->lock);
	call = f->calls++;
	if (call < MAX_CALLS) {
		f->call[call].ids = ids;
		f->call[call].n = n;
		f->call[call].wall_ms = wall_ms();
	}
	if (f->refuse_at == call + 1) {
		pthread_mutex_unlock(&f->lock);
		return -EKEYEXPIRED;
	}
	if (f->short_by && n > f->short_by)
		n -= f->short_by;
	for (i = 0; i < n; i++)
		ids[i] = (wall_ms() + f->ms_ahead) << LIBIDGEN_NODE_SEQ_BITS |
			 (f->next_seq++ & 0xfff);
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* The generator's clock: the wall clock, as the simulation's. */
static int fake_state(void *ctx, struct minter_state *st)
{
	struct fake *f = ctx;

	atomic_fetch_add(&f->states, 1);
	st->now_ms = wall_ms();
	return 0;
}

static const struct minter_ops fake_ops = { .mint = fake_mint, .state = fake_state };

static void fake_open(struct fake *f)
{
	pthread_mutex_lock(&f->lock);
	f->open = true;
	pthread_cond_broadcast(&f->open_cond);
	pthread_mutex_unlock(&f->lock);
}

struct job {
	struct lane_job job;
	atomic_int done;
	pthread_t done_by;
	struct fake *f;
	unsigned int states_at_done;	/* the clock reads before done */
};

static void job_done(struct lane_job *j)
{
	struct job *job = (struct job *)j;

	job->done_by = pthread_self();
	if (job->f)
		job->states_at_done = atomic_load(&job->f->states);
	atomic_fetch_add(&job->done, 1);
}

static void job_init(struct job *job, size_t count)
{
	memset(job, 0, sizeof(*job));
	job->job.ids = calloc(count, sizeof(uint64_t));
	job->job.count = count;
	job->job.fd = -1;
	job->job.done = job_done;
}

static void wait_done(struct job *job)
{
	struct timespec ms = { 0, 1000000 };

	while (!atomic_load(&job->done))
		nanosleep(&ms, NULL);
}

/* Which job a call minted for, by where it wrote. */
static int owner(struct job *jobs, int n, uint64_t *ids)
{
	int i;

	for (i = 0; i < n; i++)
		if (ids >= jobs[i].job.ids && ids < jobs[i].job.ids + jobs[i].job.count)
			return i;
	return -1;
}

FIXTURE(lane) {
	struct fake f;
	struct minter m;
	struct lane *l;
	struct job jobs[3];
};

FIXTURE_SETUP(lane)
{
	memset(&self->f, 0, sizeof(self->f));
	pthread_mutex_init(&self->f.lock, NULL);
	pthread_cond_init(&self->f.open_cond, NULL);
	memset(&self->m, 0, sizeof(self->m));
	self->m.ops = &fake_ops;
	self->m.ctx = &self->f;
	self->l = lane_start(&self->m);
	ASSERT_NE(NULL, self->l);
	memset(self->jobs, 0, sizeof(self->jobs));
}

FIXTURE_TEARDOWN(lane)
{
	int i;

	fake_open(&self->f);
	lane_free(self->l);
	for (i = 0; i < 3; i++)
		free(self->jobs[i].job.ids);
}

/* The first job's first chunk holds the lane until all three are queued. */
static void submit_three(struct __test_metadata *_metadata, FIXTURE_DATA(lane) *self,
			 size_t a, size_t b, size_t c)
{
	struct timespec ms = { 0, 1000000 };
	unsigned int calls;

	job_init(&self->jobs[0], a);
	job_init(&self->jobs[1], b);
	job_init(&self->jobs[2], c);
	lane_submit(self->l, &self->jobs[0].job);
	/* Until the lane is in the first job's first read. */
	do {
		nanosleep(&ms, NULL);
		pthread_mutex_lock(&self->f.lock);
		calls = self->f.entered;
		pthread_mutex_unlock(&self->f.lock);
	} while (!calls);
	lane_submit(self->l, &self->jobs[1].job);
	lane_submit(self->l, &self->jobs[2].job);
	ASSERT_EQ(0, atomic_load(&self->jobs[0].done));
	fake_open(&self->f);
	wait_done(&self->jobs[0]);
	wait_done(&self->jobs[1]);
	wait_done(&self->jobs[2]);
}

/*
 * Job 0, 2000 IDs for a client on fd (-1: none), submitted; back once the
 * lane is in its first chunk's read, where it stays until fake_open().
 */
static void submit_held(FIXTURE_DATA(lane) *self, int fd)
{
	struct timespec ms = { 0, 1000000 };

	job_init(&self->jobs[0], 2000);
	self->jobs[0].job.fd = fd;
	lane_submit(self->l, &self->jobs[0].job);
	while (!self->f.entered)
		nanosleep(&ms, NULL);
}

TEST_F(lane, requests_take_turns_a_chunk_each)
{
	/* Expected reads: A 512, B 512, C 300, A 512, B 488, A 476. */
	static const struct { int job; size_t n; } want[] = {
		{ 0, 512 }, { 1, 512 }, { 2, 300 }, { 0, 512 }, { 1, 488 }, { 0, 476 },
	};
	unsigned int i;

	submit_three(_metadata, self, 1500, 1000, 300);
	ASSERT_EQ(ARRAY_SIZE(want), self->f.calls);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		EXPECT_EQ(want[i].job, owner(self->jobs, 3, self->f.call[i].ids));
		EXPECT_EQ(want[i].n, self->f.call[i].n);
	}
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(1, atomic_load(&self->jobs[i].done));
		EXPECT_EQ(0, self->jobs[i].job.err);
		EXPECT_EQ(self->jobs[i].job.count, self->jobs[i].job.got);
	}
}

TEST_F(lane, every_id_written_once_in_order)
{
	size_t i;
	int j;

	submit_three(_metadata, self, 1500, 1000, 300);
	for (j = 0; j < 3; j++)
		for (i = 1; i < self->jobs[j].job.count; i++)
			ASSERT_LT(self->jobs[j].job.ids[i - 1] & 0xfffffffffff,
				  self->jobs[j].job.ids[i] & 0xfffffffffff)
				TH_LOG("job %d, ID %zu", j, i);
}

TEST_F(lane, a_refusal_ends_its_request_alone)
{
	/* The fourth read, A's second chunk, is refused. */
	self->f.refuse_at = 4;
	submit_three(_metadata, self, 1500, 1000, 300);
	EXPECT_EQ(-EKEYEXPIRED, self->jobs[0].job.err);
	EXPECT_EQ(512, self->jobs[0].job.got);
	EXPECT_EQ(0, self->jobs[1].job.err);
	EXPECT_EQ(1000, self->jobs[1].job.got);
	EXPECT_EQ(0, self->jobs[2].job.err);
	EXPECT_EQ(300, self->jobs[2].job.got);
	EXPECT_EQ(1, atomic_load(&self->jobs[0].done));
}

TEST_F(lane, short_reads_are_read_on)
{
	self->f.short_by = 100;
	submit_three(_metadata, self, 1500, 1000, 300);
	EXPECT_EQ(1500, self->jobs[0].job.got);
	EXPECT_EQ(1000, self->jobs[1].job.got);
	EXPECT_EQ(300, self->jobs[2].job.got);
	/* Every read asks for a chunk at most, and gets 100 fewer. */
	EXPECT_EQ(LANE_CHUNK, self->f.call[0].n);
	EXPECT_LT(6, self->f.calls);
}

static void *stop_lane(void *l)
{
	lane_stop(l);
	return NULL;
}

TEST_F(lane, a_stop_answers_every_request_queued)
{
	struct timespec ms = { 0, 1000000 };
	pthread_t stopper;
	int i;

	job_init(&self->jobs[0], 2000);
	job_init(&self->jobs[1], 700);
	job_init(&self->jobs[2], 256);
	for (i = 0; i < 3; i++)
		lane_submit(self->l, &self->jobs[i].job);
	ASSERT_EQ(0, pthread_create(&stopper, NULL, stop_lane, self->l));
	nanosleep(&ms, NULL);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, atomic_load(&self->jobs[i].done));
	fake_open(&self->f);
	ASSERT_EQ(0, pthread_join(stopper, NULL));
	/* lane_stop() returned: every request it held is answered. */
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(1, atomic_load(&self->jobs[i].done));
		EXPECT_EQ(self->jobs[i].job.count, self->jobs[i].job.got);
	}
}

TEST_F(lane, after_a_stop_the_submitter_mints)
{
	fake_open(&self->f);
	lane_stop(self->l);
	job_init(&self->jobs[0], 3000);
	lane_submit(self->l, &self->jobs[0].job);
	/* Done before lane_submit() returned, on this thread, in one go. */
	ASSERT_EQ(1, atomic_load(&self->jobs[0].done));
	EXPECT_TRUE(pthread_equal(pthread_self(), self->jobs[0].done_by));
	EXPECT_EQ(3000, self->jobs[0].job.got);
	EXPECT_EQ(0, self->jobs[0].job.err);
	EXPECT_EQ(1, self->f.calls);
}

TEST_F(lane, no_read_while_its_last_id_runs_ahead)
{
	unsigned int i;

	/* Every ID 20 ms ahead of the wall clock: past LANE_AHEAD_MS. */
	self->f.ms_ahead = 20;
	fake_open(&self->f);
	job_init(&self->jobs[0], 4 * LANE_CHUNK);
	lane_submit(self->l, &self->jobs[0].job);
	wait_done(&self->jobs[0]);
	ASSERT_EQ(4, self->f.calls);
	/*
	 * Each read after the first waited for the clock to come within
	 * LANE_AHEAD_MS of the last ID before it.  A slow machine only
	 * makes the waits longer.
	 */
	for (i = 1; i < 4; i++) {
		uint64_t last = self->jobs[0].job.ids[i * LANE_CHUNK - 1] >>
				LIBIDGEN_NODE_SEQ_BITS;

		EXPECT_GE(self->f.call[i].wall_ms + LANE_AHEAD_MS, last)
			TH_LOG("read %u at %llu, the last ID at %llu", i,
			       (unsigned long long)self->f.call[i].wall_ms,
			       (unsigned long long)last);
	}
}

TEST_F(lane, a_client_gone_gets_no_more_ids)
{
	int sv[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	/* The lane is in the first chunk's read when the client goes. */
	submit_held(self, sv[0]);
	close(sv[1]);
	fake_open(&self->f);
	wait_done(&self->jobs[0]);
	EXPECT_EQ(-ECONNRESET, self->jobs[0].job.err);
	EXPECT_EQ(LANE_CHUNK, self->jobs[0].job.got);
	EXPECT_EQ(1, self->f.calls);
	close(sv[0]);
}

/* A client that shut its sending side (nc -N) still reads: minted for. */
TEST_F(lane, a_half_closed_client_gets_every_id)
{
	char c;
	int sv[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	submit_held(self, sv[0]);
	ASSERT_EQ(0, shutdown(sv[1], SHUT_WR));
	fake_open(&self->f);
	wait_done(&self->jobs[0]);
	EXPECT_EQ(0, self->jobs[0].job.err);
	EXPECT_EQ(2000, self->jobs[0].job.got);
	/* ... and the answer would reach it. */
	EXPECT_EQ(1, write(sv[0], "x", 1));
	EXPECT_EQ(1, read(sv[1], &c, 1));
	close(sv[0]);
	close(sv[1]);
}

/* A loopback TCP connection: *client and *server, or -1s. */
static void tcp_pair(int *client, int *server)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	*client = *server = -1;
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		goto out;
	*client = socket(AF_INET, SOCK_STREAM, 0);
	if (*client < 0 || connect(*client, (struct sockaddr *)&a, sizeof(a)))
		goto out;
	*server = accept(l, NULL, NULL);
out:
	if (l >= 0)
		close(l);
}

/* Over TCP the same: its FIN is no hang-up. */
TEST_F(lane, a_half_closed_tcp_client_gets_every_id)
{
	struct timespec ms = { 0, 1000000 };
	int cl, sv;

	tcp_pair(&cl, &sv);
	ASSERT_LE(0, sv);
	submit_held(self, sv);
	ASSERT_EQ(0, shutdown(cl, SHUT_WR));
	nanosleep(&ms, NULL);		/* the FIN is in before the lane looks */
	fake_open(&self->f);
	wait_done(&self->jobs[0]);
	EXPECT_EQ(0, self->jobs[0].job.err);
	EXPECT_EQ(2000, self->jobs[0].job.got);
	close(cl);
	close(sv);
}

/* A TCP client that reset its connection (closed with SO_LINGER 0) is gone. */
TEST_F(lane, a_reset_tcp_client_gets_no_more_ids)
{
	struct timespec ms = { 0, 1000000 };
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int cl, sv;

	tcp_pair(&cl, &sv);
	ASSERT_LE(0, sv);
	submit_held(self, sv);
	ASSERT_EQ(0, setsockopt(cl, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	close(cl);
	nanosleep(&ms, NULL);		/* the reset is in before the lane looks */
	fake_open(&self->f);
	wait_done(&self->jobs[0]);
	EXPECT_EQ(-ECONNRESET, self->jobs[0].job.err);
	EXPECT_EQ(LANE_CHUNK, self->jobs[0].job.got);
	EXPECT_EQ(1, self->f.calls);
	close(sv);
}

TEST_F(lane, a_cancelled_stream_gets_no_more_ids)
{
	/* Cancelled (a gRPC stream reset) during the first chunk's read. */
	submit_held(self, -1);
	atomic_store(&self->jobs[0].job.cancelled, true);
	fake_open(&self->f);
	wait_done(&self->jobs[0]);
	EXPECT_EQ(-ECONNRESET, self->jobs[0].job.err);
	EXPECT_EQ(LANE_CHUNK, self->jobs[0].job.got);
	EXPECT_EQ(1, self->f.calls);
}

TEST_F(lane, a_deadline_passed_gets_no_more_ids)
{
	struct timespec ms = { 0, 1000000 };
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	job_init(&self->jobs[0], 2000);
	/* A deadline 20 ms away, passed while the first read waits. */
	self->jobs[0].job.deadline_ns = (uint64_t)now.tv_sec * 1000000000 +
					 now.tv_nsec + 20000000;
	lane_submit(self->l, &self->jobs[0].job);
	while (!self->f.entered)
		nanosleep(&ms, NULL);
	nanosleep(&(struct timespec){ 0, 40000000 }, NULL);
	fake_open(&self->f);
	wait_done(&self->jobs[0]);
	EXPECT_EQ(-ETIMEDOUT, self->jobs[0].job.err);
	EXPECT_EQ(LANE_CHUNK, self->jobs[0].job.got);
	EXPECT_EQ(1, self->f.calls);
}

TEST_F(lane, a_deadline_far_away_changes_nothing)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	fake_open(&self->f);
	job_init(&self->jobs[0], 2000);
	self->jobs[0].job.deadline_ns = (uint64_t)(now.tv_sec + 3600) * 1000000000;
	lane_submit(self->l, &self->jobs[0].job);
	wait_done(&self->jobs[0]);
	EXPECT_EQ(0, self->jobs[0].job.err);
	EXPECT_EQ(2000, self->jobs[0].job.got);
}

TEST_F(lane, a_live_client_is_minted_for)
{
	int sv[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	fake_open(&self->f);
	job_init(&self->jobs[0], 2000);
	self->jobs[0].job.fd = sv[0];
	lane_submit(self->l, &self->jobs[0].job);
	wait_done(&self->jobs[0]);
	EXPECT_EQ(0, self->jobs[0].job.err);
	EXPECT_EQ(2000, self->jobs[0].job.got);
	close(sv[0]);
	close(sv[1]);
}

TEST_F(lane, a_finished_request_waits_for_no_clock)
{
	/* Its IDs run ahead, but it is done: answered before any pacing. */
	self->f.ms_ahead = 20;
	fake_open(&self->f);
	job_init(&self->jobs[0], LANE_CHUNK);
	self->jobs[0].f = &self->f;
	lane_submit(self->l, &self->jobs[0].job);
	wait_done(&self->jobs[0]);
	EXPECT_EQ(0, self->jobs[0].states_at_done);
	EXPECT_EQ(LANE_CHUNK, self->jobs[0].job.got);
}

TEST_HARNESS_MAIN

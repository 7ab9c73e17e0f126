// SPDX-License-Identifier: GPL-2.0
/*
 * idgen-httpd's one path for a request for IDs (helper/httpd/next.c),
 * over a generator the test plays, with the bulk lane running: bad input
 * takes nothing; a small request is minted inline, a large one on the
 * lane; the certificate's caller binds the request's; a refusal gives the
 * quota back only what was never minted; a client gone before the lane
 * gets back what it took; an answer never delivered counts what was
 * minted as lost and keeps it charged; and every status has its HTTP and
 * its gRPC form.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "lane.h"
#include "minter.h"
#include "monotonic.h"
#include "next.h"
#include "kselftest_harness.h"

/* The generator the test plays: every ID asked for, or a refusal. */
struct fake {
	pthread_mutex_t lock;
	size_t refuse_after;		/* IDs given before -EKEYEXPIRED; 0: never */
	size_t given;
	uint64_t next;
	unsigned int calls;		/* of mint */
	pthread_t called_on;		/* the thread of the last of them */
};

static ssize_t give(struct fake *f, uint64_t *ids, size_t n)
{
	size_t i;

	if (f->refuse_after && f->given >= f->refuse_after)
		return -EKEYEXPIRED;
	if (f->refuse_after && n > f->refuse_after - f->given)
		n = f->refuse_after - f->given;
	for (i = 0; i < n; i++)
		ids[i] = f->next++;
	f->given += n;
	return n;
}

static ssize_t fake_mint(void *ctx, uint64_t *ids, size_t n)
{
	struct fake *f = ctx;
	ssize_t r;

	pthread_mutex_lock(&f->lock);
	f->calls++;
	f->called_on = pthread_self();
	r = give(f, ids, n);
	pthread_mutex_unlock(&f->lock);
	return r;
}

/* The lane keeps pace with the clock this gives: never ahead. */
static int fake_state(void *ctx, struct minter_state *st)
{
	(void)ctx;
	memset(st, 0, sizeof(*st));
	st->now_ms = UINT32_MAX;
	return 0;
}

static const struct minter_ops fake_ops = {
	.mint = fake_mint, .state = fake_state,
};

static char *callers[] = { "orders" };

FIXTURE(next) {
	struct fake f;
	struct minter m;
	struct metrics metrics;
	struct quota quota;
	struct api api;
	_Atomic int done;
};

FIXTURE_SETUP(next)
{
	memset(&self->f, 0, sizeof(self->f));
	pthread_mutex_init(&self->f.lock, NULL);
	self->f.next = 1000;
	memset(&self->m, 0, sizeof(self->m));
	self->m.ops = &fake_ops;
	self->m.ctx = &self->f;
	ASSERT_EQ(0, metrics_init(&self->metrics, callers, 1));
	ASSERT_EQ(0, quota_init(&self->quota, callers, 1));
	/* orders: a burst of 1000 that all but never refills. */
	quota_set(&self->quota, 0, 1, 1000);
	memset(&self->api, 0, sizeof(self->api));
	self->api.minter = &self->m;
	self->api.metrics = &self->metrics;
	self->api.quota = &self->quota;
	self->api.lane = lane_start(&self->m);
	ASSERT_NE(NULL, self->api.lane);
	atomic_store(&self->done, 0);
}

FIXTURE_TEARDOWN(next)
{
	lane_stop(self->api.lane);
	lane_free(self->api.lane);
	quota_free(&self->quota);
	metrics_free(&self->metrics);
}

static _Atomic int *done_flag;

static void on_done(struct next *n)
{
	(void)n;
	atomic_store(done_flag, 1);
}

static void wait_done(_Atomic int *done)
{
	struct timespec ms = { 0, 1000000 };

	while (!atomic_load(done))
		nanosleep(&ms, NULL);
}

/* How many of the caller's burst are left: taken, then handed back. */
static size_t left(struct quota *q)
{
	uint64_t wait_ns, burst, tat;
	size_t lo = 0, hi = 1000;

	while (lo < hi) {
		size_t mid = (lo + hi + 1) / 2;

		if (quota_take(q, 0, mid, monotonic_ns(), &wait_ns, &burst, &tat) ==
		    QUOTA_TAKEN) {
			quota_refund(q, 0, mid, tat, monotonic_ns());
			lo = mid;
		} else {
			hi = mid - 1;
		}
	}
	return lo;
}

static struct next_ask ask(uint64_t count, const char *caller)
{
	return (struct next_ask){
		.count = count, .caller = caller, .caller_len = caller ? strlen(caller) : 0,
		.fd = -1,
	};
}

static void assert_increasing(struct __test_metadata *_metadata, const struct next *n)
{
	size_t i;

	for (i = 1; i < n->job.count; i++)
		ASSERT_LT(n->job.ids[i - 1], n->job.ids[i]);
}

TEST_F(next, bad_input_takes_nothing)
{
	struct next_ask a;
	struct next n;
	char long_name[API_MAX_CALLER + 2];

	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	a = ask(0, "orders");
	EXPECT_EQ(NEXT_INVALID_COUNT, next_start(&self->api, &a, &n));
	next_end(&n, false);
	a = ask(API_MAX_COUNT + 1, "orders");
	EXPECT_EQ(NEXT_INVALID_COUNT, next_start(&self->api, &a, &n));
	next_end(&n, false);
	a = ask(1, "a b");
	EXPECT_EQ(NEXT_INVALID_CALLER, next_start(&self->api, &a, &n));
	next_end(&n, false);
	a = ask(1, "");
	EXPECT_EQ(NEXT_INVALID_CALLER, next_start(&self->api, &a, &n));
	next_end(&n, false);
	a = ask(1, long_name);
	EXPECT_EQ(NEXT_INVALID_CALLER, next_start(&self->api, &a, &n));
	next_end(&n, false);
	a = ask(1, "orders");
	a.public = true;		/* and no keyring */
	EXPECT_EQ(NEXT_NO_PUBLIC_KEYS, next_start(&self->api, &a, &n));
	next_end(&n, false);
	a = ask(1001, "orders");
	EXPECT_EQ(NEXT_COUNT_OVER_BURST, next_start(&self->api, &a, &n));
	EXPECT_EQ(1000, n.burst);
	next_end(&n, false);
	EXPECT_EQ(0, self->f.given);
	EXPECT_EQ(1000, left(&self->quota));
}

/*
 * mTLS: the certificate's caller is the request's; naming another is
 * refused before anything is taken, naming none or the same is its, and
 * an unmapped certificate ("") is the caller other whatever it says.
 */
TEST_F(next, the_certificates_caller_is_the_requests)
{
	struct next_ask a;
	struct next n;

	a = ask(5, "billing");
	a.authenticated = "orders";
	EXPECT_EQ(NEXT_CALLER_MISMATCH, next_start(&self->api, &a, &n));
	next_end(&n, false);
	EXPECT_EQ(403, next_text(NEXT_CALLER_MISMATCH)->http);
	EXPECT_STREQ("caller_mismatch", next_text(NEXT_CALLER_MISMATCH)->code);
	EXPECT_EQ(GRPC_PERMISSION_DENIED, next_text(NEXT_CALLER_MISMATCH)->grpc);
	a = ask(5, "ord");		/* a prefix is another name */
	a.authenticated = "orders";
	EXPECT_EQ(NEXT_CALLER_MISMATCH, next_start(&self->api, &a, &n));
	next_end(&n, false);
	a = ask(5, "orders");		/* an unmapped certificate names one */
	a.authenticated = "";
	EXPECT_EQ(NEXT_CALLER_MISMATCH, next_start(&self->api, &a, &n));
	next_end(&n, false);
	a = ask(5, "a b");		/* bad input is bad input first */
	a.authenticated = "orders";
	EXPECT_EQ(NEXT_INVALID_CALLER, next_start(&self->api, &a, &n));
	next_end(&n, false);
	EXPECT_EQ(0, self->f.given);
	EXPECT_EQ(1000, left(&self->quota));

	/* None named: the certificate's caller, its quota and its series. */
	a = ask(5, NULL);
	a.authenticated = "orders";
	ASSERT_EQ(NEXT_OK, next_start(&self->api, &a, &n));
	EXPECT_STREQ("orders", n.caller);
	next_end(&n, true);
	EXPECT_EQ(995, left(&self->quota));
	EXPECT_EQ(5, atomic_load(&self->metrics.issued[0]));
	a = ask(5, "orders");
	a.authenticated = "orders";
	ASSERT_EQ(NEXT_OK, next_start(&self->api, &a, &n));
	next_end(&n, true);
	EXPECT_EQ(990, left(&self->quota));
	/* Unmapped, naming none: other's. */
	a = ask(3, NULL);
	a.authenticated = "";
	ASSERT_EQ(NEXT_OK, next_start(&self->api, &a, &n));
	EXPECT_STREQ("", n.caller);
	next_end(&n, true);
	EXPECT_EQ(990, left(&self->quota));
	EXPECT_EQ(3, atomic_load(&self->metrics.issued[1]));
}

TEST_F(next, a_small_request_is_minted_inline)
{
	struct next_ask a = ask(LANE_MIN_COUNT - 1, "orders");
	struct next n;

	ASSERT_EQ(NEXT_OK, next_start(&self->api, &a, &n));
	EXPECT_EQ(LANE_MIN_COUNT - 1, n.job.got);
	EXPECT_TRUE(pthread_equal(self->f.called_on, pthread_self()));
	assert_increasing(_metadata, &n);
	next_end(&n, true);
	EXPECT_EQ(LANE_MIN_COUNT - 1, atomic_load(&self->metrics.issued[0]));
	EXPECT_EQ(1000 - (LANE_MIN_COUNT - 1), left(&self->quota));
}

TEST_F(next, a_large_request_is_minted_on_the_lane)
{
	struct next_ask a = ask(LANE_MIN_COUNT, "orders");
	struct next *n = malloc(sizeof(*n));

	ASSERT_NE(NULL, n);
	ASSERT_EQ(NEXT_PENDING, next_start(&self->api, &a, n));
	EXPECT_EQ(0, n->job.got);
	EXPECT_EQ(0, self->f.calls);
	done_flag = &self->done;
	next_submit(n, on_done);
	wait_done(&self->done);
	ASSERT_EQ(NEXT_OK, n->status);
	EXPECT_EQ(LANE_MIN_COUNT, n->job.got);
	EXPECT_FALSE(pthread_equal(self->f.called_on, pthread_self()));
	assert_increasing(_metadata, n);
	next_end(n, true);
	free(n);
	EXPECT_EQ(LANE_MIN_COUNT, atomic_load(&self->metrics.issued[0]));
}

TEST_F(next, a_refusal_gives_back_only_what_was_never_minted)
{
	struct next_ask a = ask(10, "orders");
	struct next n;

	self->f.refuse_after = 4;
	ASSERT_EQ(NEXT_FENCE_REACHED, next_start(&self->api, &a, &n));
	EXPECT_EQ(4, n.job.got);
	EXPECT_EQ(1000, n.retry_after_ms);
	next_end(&n, false);
	/* The 4 minted took the node's time: charged, not lost to a client. */
	EXPECT_EQ(996, left(&self->quota));
	EXPECT_EQ(0, atomic_load(&self->metrics.ids_lost));
	EXPECT_EQ(0, atomic_load(&self->metrics.issued[0]));
}

TEST_F(next, a_client_gone_before_the_lane_gets_its_quota_back)
{
	struct next_ask a = ask(LANE_MIN_COUNT, "orders");
	struct next *n = malloc(sizeof(*n));

	ASSERT_NE(NULL, n);
	ASSERT_EQ(NEXT_PENDING, next_start(&self->api, &a, n));
	EXPECT_EQ(1000 - LANE_MIN_COUNT, left(&self->quota));
	next_cancel(n);
	done_flag = &self->done;
	next_submit(n, on_done);
	wait_done(&self->done);
	EXPECT_EQ(NEXT_CLIENT_GONE, n->status);
	EXPECT_EQ(0, n->job.got);
	next_end(n, false);
	free(n);
	EXPECT_EQ(0, self->f.given);
	EXPECT_EQ(0, atomic_load(&self->metrics.ids_lost));
	EXPECT_EQ(1000, left(&self->quota));
}

TEST_F(next, an_answer_never_delivered_is_lost_and_charged)
{
	struct next_ask a = ask(7, "orders");
	struct next n;

	ASSERT_EQ(NEXT_OK, next_start(&self->api, &a, &n));
	next_end(&n, false);
	EXPECT_EQ(7, atomic_load(&self->metrics.ids_lost));
	EXPECT_EQ(0, atomic_load(&self->metrics.issued[0]));
	EXPECT_EQ(993, left(&self->quota));
}

/*
 * An answer handed to a transport is counted once, when the transport
 * knows: issued if all of it went out, lost if not, never both.
 */
TEST_F(next, a_queued_answer_is_issued_or_lost_once)
{
	struct next_ask a = ask(6, "orders");
	struct metrics_answer q;
	struct next n;

	ASSERT_EQ(NEXT_OK, next_start(&self->api, &a, &n));
	next_end_queued(&n, &q);
	EXPECT_EQ(NULL, n.job.ids);
	EXPECT_EQ(0, atomic_load(&self->metrics.issued[0]));
	EXPECT_EQ(0, atomic_load(&self->metrics.ids_lost));
	metrics_answer_end(&self->metrics, &q, false);
	EXPECT_EQ(0, atomic_load(&self->metrics.issued[0]));
	EXPECT_EQ(6, atomic_load(&self->metrics.ids_lost));
	EXPECT_EQ(994, left(&self->quota));

	a = ask(4, "orders");
	ASSERT_EQ(NEXT_OK, next_start(&self->api, &a, &n));
	next_end_queued(&n, &q);
	metrics_answer_end(&self->metrics, &q, true);
	EXPECT_EQ(4, atomic_load(&self->metrics.issued[0]));
	EXPECT_EQ(6, atomic_load(&self->metrics.ids_lost));

	/* A refusal queued is no answer of IDs: nothing to count later. */
	self->f.refuse_after = self->f.given;	/* refused from now on */
	a = ask(3, "orders");
	ASSERT_NE(NEXT_OK, next_start(&self->api, &a, &n));
	next_end_queued(&n, &q);
	EXPECT_EQ(0, q.ids);
	metrics_answer_end(&self->metrics, &q, true);
	EXPECT_EQ(4, atomic_load(&self->metrics.issued[0]));
	EXPECT_EQ(6, atomic_load(&self->metrics.ids_lost));
}

TEST(every_status_has_both_faces)
{
	enum next_status s;

	EXPECT_EQ(200, next_text(NEXT_OK)->http);
	EXPECT_EQ(GRPC_OK, next_text(NEXT_OK)->grpc);
	for (s = NEXT_PENDING; s < NR_NEXT_STATUSES; s++) {
		const struct next_status_text *t = next_text(s);

		EXPECT_LE(400, t->http) TH_LOG("status %d", s);
		EXPECT_NE(NULL, t->code) TH_LOG("status %d", s);
		EXPECT_NE(NULL, t->message) TH_LOG("status %d", s);
		EXPECT_NE(GRPC_OK, t->grpc) TH_LOG("status %d", s);
	}
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * The bulk lane (lane.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "idgen.h"
#include "lane.h"

struct lane {
	struct minter *minter;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a job queued, or stopping */
	/* Under lock: */
	struct lane_job *head, *tail;	/* in turn: a job not done goes last */
	bool stopping;			/* finish the queue, take no more */
};

/* The wall clock in idgen ms (0 before the epoch), and the ns into it. */
static uint64_t wall_ms(long *ns_in)
{
	struct timespec ts;
	uint64_t ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	*ns_in = ts.tv_nsec % 1000000;
	ms = (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	return ms > LIBIDGEN_EPOCH_UNIX_MS ? ms - LIBIDGEN_EPOCH_UNIX_MS : 0;
}

/*
 * Sleep while last_ms, the millisecond of the last ID the lane got, runs
 * more than LANE_AHEAD_MS ahead of the wall clock: until the millisecond
 * the clock reaches then begins.  A millisecond at a time, so a clock
 * that moves meanwhile is followed; the generator refuses past its lead
 * (1 s by default), and a clock stepped back again while the lane waits
 * holds it LANE_MAX_WAIT_MS at most.
 */
#define LANE_MAX_WAIT_MS	1000

static void keep_pace(uint64_t last_ms)
{
	unsigned int waited;
	uint64_t now;
	long ns_in;

	for (waited = 0; waited < LANE_MAX_WAIT_MS; waited++) {
		now = wall_ms(&ns_in);
		if (last_ms <= now + LANE_AHEAD_MS)
			return;
		nanosleep(&(struct timespec){ 0, 1000000 - ns_in }, NULL);
	}
}

/* One turn of a job: a chunk of its IDs.  True when the job is done. */
static bool mint_chunk(struct minter *m, struct lane_job *job)
{
	size_t n = job->count - job->got;
	ssize_t r;

	if (n > LANE_CHUNK)
		n = LANE_CHUNK;
	r = m->ops->mint(m->ctx, job->ids + job->got, n);
	if (r < 0) {
		job->err = r;
		return true;
	}
	job->got += r;
	return job->got == job->count;
}

static void *lane_thread(void *arg)
{
	struct lane *l = arg;
	struct lane_job *job;
	bool done;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		while (!l->head && !l->stopping)
			pthread_cond_wait(&l->work, &l->lock);
		job = l->head;
		if (!job)
			break;			/* stopping, and nothing left */
		l->head = job->next;
		if (!l->head)
			l->tail = NULL;
		pthread_mutex_unlock(&l->lock);

		done = mint_chunk(l->minter, job);
		/* The time field never moves between layouts. */
		if (job->got)
			keep_pace(job->ids[job->got - 1] >> LIBIDGEN_NODE_SEQ_BITS);
		if (done)
			job->done(job);

		pthread_mutex_lock(&l->lock);
		if (!done) {
			job->next = NULL;
			if (l->tail)
				l->tail->next = job;
			else
				l->head = job;
			l->tail = job;
		}
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

struct lane *lane_start(struct minter *m)
{
	struct lane *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->minter = m;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->work, NULL);
	if (pthread_create(&l->thread, NULL, lane_thread, l)) {
		pthread_cond_destroy(&l->work);
		pthread_mutex_destroy(&l->lock);
		free(l);
		return NULL;
	}
	return l;
}

void lane_submit(struct lane *l, struct lane_job *job)
{
	job->got = 0;
	job->err = 0;
	job->next = NULL;
	pthread_mutex_lock(&l->lock);
	if (!l->stopping) {
		if (l->tail)
			l->tail->next = job;
		else
			l->head = job;
		l->tail = job;
		pthread_cond_signal(&l->work);
		pthread_mutex_unlock(&l->lock);
		return;
	}
	pthread_mutex_unlock(&l->lock);
	job->err = minter_mint_all(l->minter, job->ids, job->count);
	job->got = job->err ? 0 : job->count;
	job->done(job);
}

void lane_stop(struct lane *l)
{
	pthread_mutex_lock(&l->lock);
	if (l->stopping) {
		pthread_mutex_unlock(&l->lock);
		return;
	}
	l->stopping = true;
	pthread_cond_signal(&l->work);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
}

void lane_free(struct lane *l)
{
	if (!l)
		return;
	lane_stop(l);
	pthread_cond_destroy(&l->work);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The bulk lane (lane.h).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"
#include "lane.h"
#include "log.h"
#include "monotonic.h"

struct lane {
	struct minter *minter;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a job queued, or stopping */
	/* Under lock: */
	struct lane_job *head, *tail;	/* in turn: a job not done goes last */
	bool stopping;			/* finish the queue, take no more */
};

/*
 * Sleep while last_ms, the millisecond of the last ID the lane got, runs
 * more than LANE_AHEAD_MS ahead of the generator's clock: a millisecond
 * at a time, so a clock that moves meanwhile is followed, and
 * LANE_MAX_WAIT_MS at most (the generator refuses past its lead, 1 s by
 * default, and a clock stepped back again could hold the lane longer).
 */
static void keep_pace(struct minter *m, uint64_t last_ms)
{
	struct minter_state st;
	unsigned int waited;

	if (!m->ops->state)
		return;
	for (waited = 0; waited < LANE_MAX_WAIT_MS; waited++) {
		memset(&st, 0, sizeof(st));
		if (m->ops->state(m->ctx, &st) || last_ms <= st.now_ms + LANE_AHEAD_MS)
			return;
		minter_sleep_to_next_ms();
	}
}

/*
 * Whether a request's client can no longer read: no answer can reach it.
 * Not whether it stopped writing (POLLRDHUP, its FIN): a client may shut
 * its sending side once its request is out (nc -N, shutdown(SHUT_WR)) and
 * still read the answer.  Only POLLHUP (both directions shut: a unix
 * peer closed) or POLLERR (a TCP peer's reset) says it is gone.  A TCP
 * peer that closed without a reset looks half-closed until something is
 * written to it; its answer is then written, and lost (api.h).
 */
static bool client_gone(int fd)
{
	struct pollfd p = { .fd = fd };

	return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/* One turn of a job: a chunk of its IDs.  True when the job is done. */
static bool mint_chunk(struct minter *m, struct lane_job *job)
{
	size_t n = job->count - job->got;
	ssize_t r;

	if (n > LANE_CHUNK)
		n = LANE_CHUNK;
	if (atomic_load(&job->cancelled) || client_gone(job->fd)) {
		job->err = -ECONNRESET;
		return true;
	}
	if (job->deadline_ns && monotonic_ns() >= job->deadline_ns) {
		job->err = -ETIMEDOUT;
		return true;
	}
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
	int nice_now;
	bool done;

	/*
	 * Below the connections' threads: a request for one ID that arrives
	 * while the lane formats 10,000 runs at once on a shared core.  Not
	 * allowed (a system-call filter), the lane runs as they do.
	 */
	errno = 0;
	nice_now = getpriority(PRIO_PROCESS, gettid());
	if (errno || setpriority(PRIO_PROCESS, gettid(), nice_now + LANE_NICE))
		log_info("the bulk lane runs at the service's priority: setpriority: %s",
			  strerror(errno));

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
		if (done) {
			job->done(job);
		} else if (job->got) {
			/* The time field never moves between layouts. */
			keep_pace(l->minter, job->ids[job->got - 1] >> LIBIDGEN_NODE_SEQ_BITS);
		}

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

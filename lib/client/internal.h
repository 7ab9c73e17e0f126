/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libidgen-client's insides, shared by its parts: the client (client.c:
 * the calls, their errors, setup), its hosts (hosts.c: their health,
 * which one a try goes to), the event loop (loop.c: transfers,
 * tries, probes, timers) and the buffer (buffer.c).  Nothing here is
 * exported: -fvisibility=hidden, and every name that is not static has
 * the idgen_client__ prefix (two underscores), so that the static library
 * collides neither with a program's own names nor with its public API.
 */
#ifndef IDGEN_CLIENT_INTERNAL_H
#define IDGEN_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <curl/curl.h>

#include "forkguard.h"
#include "http_body.h"
#include "idgen_client.h"

#define EXPORT	__attribute__((visibility("default")))

#define REASON_LEN	256
#define LOOK_NS		1000000ULL	/* the loop's look at a busy buffer */
#define BUSY_NS		1000000000ULL	/* busy: a buffer call within this long */
#define ERR_LEN		(IDGEN_CLIENT_MAX_HOSTS * 48 + 256)
/*
 * How long a /readyz probe that connected may wait for its answer.  A
 * frozen host (SIGSTOP, a stopped VM) still accepts connections in its
 * kernel: a probe given up and sent again every period would leave one
 * more connection in its backlog each time, and the host, thawed, would
 * find them all at once (past its max_connections_per_ip).  So the probe
 * waits, the host stays skipped meanwhile, and the answer it gives on its
 * thaw brings it back at once.  TCP keepalive ends it sooner on a host
 * that is gone.
 */
#define PROBE_PATIENCE_NS	30000000000ULL

/* Counters: bumped by the loop and by callers, without the lock. */
#define BUMP(c, field)	__atomic_add_fetch(&(c)->st.field, 1, __ATOMIC_RELAXED)
#define ADD(c, field, v) __atomic_add_fetch(&(c)->st.field, (v), __ATOMIC_RELAXED)

/* Why a request's try on a host failed (or why the host was skipped). */
struct reason {
	char text[REASON_LEN];	/* "" while the host was not tried */
	bool definite;		/* an answer or an error, not a timeout */
};

struct host {
	char *base, *next_url, *ready_url;
	/* Loop thread only, but healthy is read by idgen_client_stats(). */
	int healthy;
	char why[REASON_LEN];	/* why it is skipped, while !healthy */
	unsigned int in_flight;	/* tries running on it */
	struct xfer *probe;	/* the /readyz probe running, or NULL */
	uint64_t next_probe_ns;
};

struct request;

/* One HTTP transfer: a try of a request, or a probe of a host. */
struct xfer {
	struct idgen_client *c;
	unsigned int hi;		/* the host */
	struct request *req;		/* NULL for a probe */
	struct xfer *next;		/* the request's other tries */
	CURL *easy;
	char curl_err[CURL_ERROR_SIZE];	/* libcurl's detail (TLS: why) */
	struct idgen_http_body body;	/* the answer so far, and its limit */
	uint64_t start_ns;
	bool timed_out;			/* past the per-try timeout, counted */
};

struct request {
	unsigned int want;
	uint64_t *ids;			/* want of them, filled on success */
	bool refill;			/* for the buffer, not for a caller */
	uint64_t start_ns, deadline_ns;
	uint64_t hedge_ns;		/* when the newest try times out */
	uint64_t round_ns;		/* every host failed: try again then */
	uint64_t tried;			/* hosts tried this round, a bit each */
	unsigned int rounds;		/* rounds over every host, past the first */
	unsigned int ntries;
	struct xfer *tries;		/* running */
	struct request *next;		/* queue, then the loop's active list */
	struct reason reasons[IDGEN_CLIENT_MAX_HOSTS];
	/* Set by the loop under the lock; the caller waits for done. */
	bool done;
	int result;
	char err[ERR_LEN];
	pthread_cond_t cond;
};

/* A caller waiting for IDs the buffer did not have. */
struct waiter {
	uint64_t *ids;
	size_t want, got;	/* done when got == want */
	struct waiter *next;
};

struct idgen_client {
	struct idgen_client_options o;
	struct idgen_forkguard_stamp stamp;	/* whose it is (forkguard.h) */
	unsigned int nhosts;
	struct host hosts[IDGEN_CLIENT_MAX_HOSTS];
	uint64_t per_try_ns, deadline_ns, health_ns;
	char caller_json[96];		/* ",\"caller\":\"...\"" or "" */
	char *ca_file, *cert_file, *key_file;	/* copies of the options' */

	pthread_t thread;
	CURLM *multi;
	struct curl_slist *headers;
	int timer_fd;

	pthread_mutex_t lock;
	/* Under lock: */
	struct request *queue, **queue_tail;
	bool stop;
	pthread_cond_t buf_cond;	/* the buffer got IDs, or a refill failed */
	uint64_t *buf;
	size_t head, count;
	struct request *refill_req;	/* the one refill, reused */
	bool looking;			/* the loop looks every LOOK_NS */
	bool in_loop;			/* idgen_client__maybe_refill() called by the loop */
	uint64_t last_take_ns;		/* the last call on the buffer */
	size_t refill_cap;		/* the most IDs it takes */
	struct waiter *waiters, **waiters_tail;	/* first come, first served */
	size_t waiting;			/* the IDs they still want */
	bool refilling;
	uint64_t refill_start_ns;
	unsigned long refill_gen;	/* refills finished */
	int refill_result;
	char refill_err[ERR_LEN];

	/* Loop thread only: */
	struct request *active;
	CURL *pool[16];
	unsigned int npool;
	uint64_t rng;

	struct idgen_client_stats st;
};

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline uint64_t wall_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec < 0 ? 0 : (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Whether id was minted more than max_age_ms before now_ms (Unix ms).  An
 * ID's time field (bits 62..22) is the same in every layout.
 */
static inline bool id_stale(const struct idgen_client *c, uint64_t id, uint64_t now_ms)
{
	if (now_ms < LIBIDGEN_EPOCH_UNIX_MS + c->o.max_age_ms)
		return false;
	return (id >> LIBIDGEN_NODE_SEQ_BITS) <
	       now_ms - LIBIDGEN_EPOCH_UNIX_MS - c->o.max_age_ms;
}

static inline bool host_usable(const struct host *h)
{
	return __atomic_load_n(&h->healthy, __ATOMIC_RELAXED);
}

/* hosts.c */
void idgen_client__host_down(struct idgen_client *c, struct host *h, uint64_t now,
			     const char *why, bool soon);
void idgen_client__host_up(struct host *h);
int idgen_client__pick_host(struct idgen_client *c, struct request *r);

/* loop.c: the event loop's thread. */
void *idgen_client__loop(void *arg);

/* buffer.c, under c->lock */
void idgen_client__drop_stale(struct idgen_client *c);
void idgen_client__unwait(struct idgen_client *c, struct waiter *w);
void idgen_client__deliver(struct idgen_client *c, struct request *r);
void idgen_client__submit(struct idgen_client *c, struct request *r);
bool idgen_client__maybe_refill(struct idgen_client *c);
size_t idgen_client__take_buffered(struct idgen_client *c, uint64_t *ids, size_t n, bool *wake);

#endif /* IDGEN_CLIENT_INTERNAL_H */

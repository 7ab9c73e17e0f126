// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libidgen-client: IDs from a fleet of idgen-httpd hosts (idgen_client.h).
 *
 * One event-loop thread owns the libcurl multi handle, every transfer and
 * every host's health; application threads hand it requests through a
 * queue under the client's lock and wait on a condition variable.  Only
 * the loop thread touches curl, so no transfer needs a thread of its own.
 *
 * A request (a call without a buffer, or a refill of the buffer) is one or
 * more tries, each a POST /v1/ids:next to one host.  The first valid
 * answer completes the request and cancels its other tries, so an answer
 * that comes later is never read: no ID is delivered twice.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* asprintf() */
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "answer.h"
#include "credential.h"
#include "forkguard.h"
#include "http_body.h"
#include "http_url.h"
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
	bool in_loop;			/* maybe_refill() called by the loop */
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

static __thread char last_error[ERR_LEN];

EXPORT const char *idgen_client_last_error(void)
{
	return last_error;
}

static void set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

/*
 * -ECHILD with the error set if c was made in another process: this is a
 * child (of fork(), _Fork(), clone() or clone3()) with a copy of the
 * buffer, whose IDs its parent hands out too, and no event loop.
 */
static int check_process(const struct idgen_client *c)
{
	if (idgen_forkguard_mine(&c->stamp))
		return 0;
	set_error("this client was made before fork() (or clone()), in the parent: "
		  "its IDs are the parent's; make a new one in this process");
	return -ECHILD;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

EXPORT void idgen_client_options_init(struct idgen_client_options *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->per_try_ms = 2;
	o->deadline_ms = 100;
	o->buffer_size = 32;
	o->refill_mark = IDGEN_CLIENT_REFILL_HALF;
	o->max_age_ms = 1000;
	o->health_check_ms = 500;
}

static uint64_t wall_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec < 0 ? 0 : (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Whether id was minted more than max_age_ms before now_ms (Unix ms).  An
 * ID's time field (bits 62..22) is the same in every layout.
 */
static bool id_stale(const struct idgen_client *c, uint64_t id, uint64_t now_ms)
{
	if (now_ms < LIBIDGEN_EPOCH_UNIX_MS + c->o.max_age_ms)
		return false;
	return (id >> LIBIDGEN_NODE_SEQ_BITS) <
	       now_ms - LIBIDGEN_EPOCH_UNIX_MS - c->o.max_age_ms;
}

/* ---- hosts ------------------------------------------------------------ */

static bool host_usable(const struct host *h)
{
	return __atomic_load_n(&h->healthy, __ATOMIC_RELAXED);
}

/*
 * Skip h from now on.  After a failed try (soon), look again in 50 ms: a
 * try that timed out on a loaded machine should not keep a good host out
 * for a whole period.  After a failed probe, at the next period.
 */
static void host_down(struct idgen_client *c, struct host *h, uint64_t now,
		      const char *why, bool soon)
{
	snprintf(h->why, sizeof(h->why), "%s", why);
	__atomic_store_n(&h->healthy, 0, __ATOMIC_RELAXED);
	if (soon && h->next_probe_ns > now + 50000000ULL && c->health_ns > 50000000ULL)
		h->next_probe_ns = now + 50000000ULL;
}

static void host_up(struct host *h)
{
	h->why[0] = '\0';
	__atomic_store_n(&h->healthy, 1, __ATOMIC_RELAXED);
}

static uint64_t next_rand(struct idgen_client *c)
{
	/* xorshift64: the balancing only needs it to spread. */
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return c->rng;
}

/*
 * The host for a request's next try: of the hosts not tried this round,
 * the healthy ones by the power of two choices on in-flight tries; an
 * unhealthy one only when no healthy one is left, and only while nothing
 * runs on it (no try, no probe): a frozen host gets one connection at a
 * time, not one per call.  -1 when there is no such host.
 */
static int pick_host(struct idgen_client *c, struct request *r)
{
	unsigned int cand[IDGEN_CLIENT_MAX_HOSTS], ncand = 0, nsick = 0, nbusy = 0;
	unsigned int sick[IDGEN_CLIENT_MAX_HOSTS], busy[IDGEN_CLIENT_MAX_HOSTS], i, a, b;

	for (i = 0; i < c->nhosts; i++) {
		if (r->tried & (1ULL << i))
			continue;
		if (host_usable(&c->hosts[i]))
			cand[ncand++] = i;
		else if (c->hosts[i].probe || c->hosts[i].in_flight)
			busy[nbusy++] = i;
		else
			sick[nsick++] = i;
	}
	for (i = 0; !ncand && !nsick && i < nbusy; i++) {
		struct reason *re = &r->reasons[busy[i]];
		struct host *h = &c->hosts[busy[i]];

		BUMP(c, hosts_skipped);
		if (!re->text[0])
			snprintf(re->text, sizeof(re->text), "skipped: %s (%s)", h->why,
				 h->probe ? "its probe has not answered" : "a try runs on it");
	}
	if (ncand) {
		/* Each unhealthy host passed over, and why, for the error. */
		for (i = 0; i < nsick + nbusy; i++) {
			unsigned int hi = i < nsick ? sick[i] : busy[i - nsick];
			struct reason *re = &r->reasons[hi];

			BUMP(c, hosts_skipped);
			if (!re->text[0])
				snprintf(re->text, sizeof(re->text), "skipped: %s",
					 c->hosts[hi].why);
		}
		a = cand[next_rand(c) % ncand];
		if (ncand == 1)
			return a;
		do
			b = cand[next_rand(c) % ncand];
		while (b == a);
		return c->hosts[b].in_flight < c->hosts[a].in_flight ? b : a;
	}
	if (nsick)
		return sick[next_rand(c) % nsick];
	return -1;
}

/* ---- transfers ---------------------------------------------------------- */

/*
 * A transfer on host hi: a try of r with its POST body, or a probe.  It
 * must connect within timeout_ns, and end within it too for a try; a
 * probe may wait PROBE_PATIENCE_NS for its answer.
 */
static struct xfer *xfer_start(struct idgen_client *c, unsigned int hi,
			       struct request *r, uint64_t now, uint64_t timeout_ns)
{
	struct host *h = &c->hosts[hi];
	struct xfer *x = calloc(1, sizeof(*x));
	char post[160];
	long ms = (long)((timeout_ns + 999999) / 1000000);
	long total_ms = r ? ms : (long)(PROBE_PATIENCE_NS / 1000000);

	if (!x)
		return NULL;
	x->easy = c->npool ? c->pool[--c->npool] : curl_easy_init();
	if (!x->easy) {
		free(x);
		return NULL;
	}
	x->c = c;
	x->hi = hi;
	x->req = r;
	x->start_ns = now;
	/* No good answer is longer. */
	idgen_http_body_reset(&x->body, r ? 256 + (size_t)r->want * (LIBIDGEN_ID_STRLEN + 3) :
				    4096);
	curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
	curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->easy, CURLOPT_PROXY, "");
	curl_easy_setopt(x->easy, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, idgen_http_body_write);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, &x->body);
	curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, total_ms > 0 ? total_ms : 1L);
	curl_easy_setopt(x->easy, CURLOPT_CONNECTTIMEOUT_MS, ms > 0 ? ms : 1L);
	curl_easy_setopt(x->easy, CURLOPT_ERRORBUFFER, x->curl_err);
	/*
	 * https: the server's certificate and its name (or IP) always
	 * checked.  Every transfer has the same TLS settings, so the multi
	 * handle's cache reuses a host's connection: one handshake per host.
	 */
	curl_easy_setopt(x->easy, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(x->easy, CURLOPT_SSL_VERIFYHOST, 2L);
	if (c->ca_file)
		curl_easy_setopt(x->easy, CURLOPT_CAINFO, c->ca_file);
	if (c->cert_file) {
		curl_easy_setopt(x->easy, CURLOPT_SSLCERT, c->cert_file);
		curl_easy_setopt(x->easy, CURLOPT_SSLKEY, c->key_file);
	}
	if (r) {
		snprintf(post, sizeof(post), "{\"count\":%u%s}", r->want, c->caller_json);
		curl_easy_setopt(x->easy, CURLOPT_URL, h->next_url);
		curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, c->headers);
		curl_easy_setopt(x->easy, CURLOPT_COPYPOSTFIELDS, post);
	} else {
		curl_easy_setopt(x->easy, CURLOPT_URL, h->ready_url);
		curl_easy_setopt(x->easy, CURLOPT_HTTPGET, 1L);
		/* A host gone (not frozen) ends the patient probe in seconds. */
		curl_easy_setopt(x->easy, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(x->easy, CURLOPT_TCP_KEEPIDLE, 1L);
		curl_easy_setopt(x->easy, CURLOPT_TCP_KEEPINTVL, 1L);
	}
	if (curl_multi_add_handle(c->multi, x->easy) != CURLM_OK) {
		curl_easy_cleanup(x->easy);
		free(x);
		return NULL;
	}
	if (r)
		h->in_flight++;
	return x;
}

/* Take a transfer out of the multi handle and free it (cancels it). */
static void xfer_end(struct xfer *x)
{
	struct idgen_client *c = x->c;
	long connects = 0;

	if (curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK &&
	    connects > 0)
		ADD(c, connects, (uint64_t)connects);
	curl_multi_remove_handle(c->multi, x->easy);
	if (x->req)
		c->hosts[x->hi].in_flight--;
	if (c->npool < sizeof(c->pool) / sizeof(c->pool[0])) {
		curl_easy_reset(x->easy);
		c->pool[c->npool++] = x->easy;
	} else {
		curl_easy_cleanup(x->easy);
	}
	idgen_http_body_free(&x->body);
	free(x);
}

/* ---- requests ----------------------------------------------------------- */

/*
 * What r reports for host hi: what the host said or did (refused, failed,
 * answered badly) outranks a timeout, which may be the machine's.
 */
static void set_reason(struct request *r, unsigned int hi, bool definite,
		       const char *why)
{
	struct reason *re = &r->reasons[hi];

	if (definite || !re->definite) {
		snprintf(re->text, sizeof(re->text), "%s", why);
		re->definite = definite;
	}
}

static void deliver_to_buffer(struct idgen_client *c, struct request *r);
static bool maybe_refill(struct idgen_client *c);

/* Cancel r's running tries and counts them as abandoned when it succeeded. */
static void cancel_tries(struct idgen_client *c, struct request *r, bool won)
{
	struct xfer *x;

	while ((x = r->tries)) {
		r->tries = x->next;
		if (won)
			BUMP(c, abandoned);
		xfer_end(x);
	}
}

/* "no ID within the 100 ms deadline: HOST: WHY; HOST: WHY" */
static void format_error(struct idgen_client *c, struct request *r, char *buf, size_t size)
{
	size_t len;
	unsigned int i;
	bool any = false;

	len = snprintf(buf, size, "no ID within the %u ms deadline (%u %s):",
		       c->o.deadline_ms, r->ntries, r->ntries == 1 ? "try" : "tries");
	for (i = 0; i < c->nhosts && len < size; i++) {
		const char *why = r->reasons[i].text;

		if (!why[0])
			why = c->hosts[i].healthy ? "not tried" : c->hosts[i].why;
		len += snprintf(buf + len, size - len, "%s %s: %s", any ? ";" : "",
				c->hosts[i].base, why);
		any = true;
	}
}

/* The request is over: hand its IDs or its error to whoever waits. */
static void finish(struct idgen_client *c, struct request *r, int result)
{
	struct request **pp;

	cancel_tries(c, r, !result);
	for (pp = &c->active; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	if (r->refill) {
		pthread_mutex_lock(&c->lock);
		if (!result)
			deliver_to_buffer(c, r);
		else
			format_error(c, r, c->refill_err, sizeof(c->refill_err));
		/* Ready for the next refill (set up by maybe_refill()). */
		memset(r->reasons, 0, sizeof(r->reasons));
		r->tried = r->round_ns = r->hedge_ns = 0;
		r->rounds = r->ntries = 0;
		c->refill_result = result;
		c->refilling = false;
		c->refill_gen++;
		/* (The loop looks at its queue before it sleeps again.) */
		if (c->waiters || !result) {
			c->in_loop = true;
			maybe_refill(c);
			c->in_loop = false;
		}
		pthread_cond_broadcast(&c->buf_cond);
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (result)
		format_error(c, r, r->err, sizeof(r->err));
	pthread_mutex_lock(&c->lock);
	r->result = result;
	r->done = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&c->lock);
	/* r belongs to its caller again. */
}

/*
 * Start r's next try on a host it has not tried this round.  When every
 * host was tried and none is running any more, a new round starts after
 * a pause, a per-try timeout doubling each round up to 64 of them: hosts
 * that refuse at once are not hammered.
 */
static void start_try(struct idgen_client *c, struct request *r, uint64_t now)
{
	struct xfer *x;
	int hi;

	hi = pick_host(c, r);
	if (hi < 0) {
		if (!r->tries && !r->round_ns)
			r->round_ns = now + (c->per_try_ns << (r->rounds < 6 ? r->rounds : 6));
		return;
	}
	r->tried |= 1ULL << hi;
	x = xfer_start(c, hi, r, now, r->deadline_ns > now ? r->deadline_ns - now : 1);
	if (!x) {
		set_reason(r, hi, true, "could not start a transfer");
		return;
	}
	x->next = r->tries;
	r->tries = x;
	if (r->ntries++)
		BUMP(c, retries);
	BUMP(c, tries);
	r->hedge_ns = now + c->per_try_ns;
}

/*
 * Over TLS 1.3 a server judges the client's certificate after the
 * client's side of the handshake is done, and refuses it by closing the
 * connection: libcurl then says only "Recv failure" or "Send failure".
 * Say what that most likely means, or "".
 */
static const char *tls_hint(const struct idgen_client *c, struct xfer *x, CURLcode cc)
{
	curl_off_t app_us = 0;
	long connects = 0;

	if (cc != CURLE_RECV_ERROR && cc != CURLE_SEND_ERROR && cc != CURLE_GOT_NOTHING &&
	    cc != CURLE_SSL_CONNECT_ERROR)
		return "";
	if (strncmp(c->hosts[x->hi].base, "https:", 6) ||
	    curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &connects) != CURLE_OK ||
	    !connects ||
	    curl_easy_getinfo(x->easy, CURLINFO_APPCONNECT_TIME_T, &app_us) != CURLE_OK ||
	    !app_us)
		return "";
	return c->cert_file ? " (the server closed the new TLS connection: it most likely "
			      "refused this client's certificate, cert_file; its log says why)" :
			      " (the server closed the new TLS connection: it most likely "
			      "requires a client certificate, cert_file and key_file)";
}

/* A try's outcome.  The try is already off r->tries. */
static void try_done(struct idgen_client *c, struct xfer *x, CURLcode cc, uint64_t now)
{
	struct request *r = x->req;
	struct host *h = &c->hosts[x->hi];
	char why[REASON_LEN];
	const char *bad;
	bool definite = false;
	long status = 0;

	if (cc != CURLE_OK) {
		long oserr = 0;

		curl_easy_getinfo(x->easy, CURLINFO_OS_ERRNO, &oserr);
		if (x->body.too_long) {
			snprintf(why, sizeof(why), "bad answer: longer than %zu bytes",
				 x->body.max);
			BUMP(c, bad_answers);
			definite = true;
		} else if (cc == CURLE_OPERATION_TIMEDOUT) {
			snprintf(why, sizeof(why), "timed out after %llu ms",
				 (unsigned long long)((now - x->start_ns) / 1000000));
		} else {
			snprintf(why, sizeof(why), "%.100s%s%.30s%s", x->curl_err[0] ?
				 x->curl_err : curl_easy_strerror(cc), oserr ? ": " : "",
				 oserr ? strerror((int)oserr) : "", tls_hint(c, x, cc));
			BUMP(c, connect_errors);
			definite = true;
		}
		goto failed;
	}
	definite = true;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		snprintf(why, sizeof(why), "HTTP %ld from /v1/ids:next", status);
		BUMP(c, http_errors);
		goto failed;
	}
	bad = idgen_answer_check(c->o.layouts, x->body.text ? x->body.text : "",
				 x->body.len, r->want, r->ids);
	if (bad) {
		snprintf(why, sizeof(why), "bad answer: %s", bad);
		BUMP(c, bad_answers);
		goto failed;
	}
	/*
	 * A refill hands its IDs to waiting calls at once, past drop_stale():
	 * the first, the oldest, must be within the bound (a host whose clock
	 * lags, or an answer held up after its IDs were minted).
	 */
	if (r->refill && id_stale(c, r->ids[0], wall_unix_ms())) {
		snprintf(why, sizeof(why), "bad answer: IDs minted more than max_age_ms "
			 "(%u ms) ago, %llu ms by this machine's clock", c->o.max_age_ms,
			 (unsigned long long)(wall_unix_ms() - LIBIDGEN_EPOCH_UNIX_MS -
					      (r->ids[0] >> LIBIDGEN_NODE_SEQ_BITS)));
		BUMP(c, bad_answers);
		goto failed;
	}
	ADD(c, ids_received, r->want);
	host_up(h);
	xfer_end(x);
	finish(c, r, 0);
	return;

failed:
	set_reason(r, x->hi, definite, why);
	host_down(c, h, now, why, true);
	xfer_end(x);
	/* At once on another host; a slow try of r may still answer. */
	start_try(c, r, now);
}

static void probe_done(struct idgen_client *c, struct xfer *x, CURLcode cc, uint64_t now)
{
	struct host *h = &c->hosts[x->hi];
	char why[REASON_LEN];
	long status = 0;

	h->probe = NULL;
	if (cc == CURLE_OK)
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status == 200) {
		host_up(h);
	} else {
		BUMP(c, probes_failed);
		if (cc == CURLE_OK)
			snprintf(why, sizeof(why), "/readyz answered %ld", status);
		else
			snprintf(why, sizeof(why), "/readyz: %.100s%s",
				 x->curl_err[0] ? x->curl_err : curl_easy_strerror(cc),
				 tls_hint(c, x, cc));
		host_down(c, h, now, why, false);
	}
	xfer_end(x);
}

/* How long a probe may take before its host is skipped: a period, 0.1 to 1 s. */
static uint64_t probe_timeout_ns(const struct idgen_client *c)
{
	uint64_t t = c->health_ns < 1000000000ULL ? c->health_ns : 1000000000ULL;

	return t < 100000000ULL ? 100000000ULL : t;
}

/*
 * Probe each host whose time has come; a host is probed once at a time.
 * A probe not answered within probe_timeout_ns() skips its host, but runs
 * on (PROBE_PATIENCE_NS): a new one would be one more connection.
 */
static void run_probes(struct idgen_client *c, uint64_t now)
{
	unsigned int i;

	for (i = 0; i < c->nhosts; i++) {
		struct host *h = &c->hosts[i];

		if (h->probe) {
			if (host_usable(h) && now - h->probe->start_ns >= probe_timeout_ns(c)) {
				char why[REASON_LEN];

				snprintf(why, sizeof(why), "/readyz: no answer after %llu ms",
					 (unsigned long long)(probe_timeout_ns(c) / 1000000));
				host_down(c, h, now, why, false);
			}
			continue;
		}
		if (now < h->next_probe_ns)
			continue;
		h->next_probe_ns = now + c->health_ns;
		h->probe = xfer_start(c, i, NULL, now, probe_timeout_ns(c));
		if (h->probe)
			BUMP(c, probes);
	}
}

/* Per-try timeouts, rounds and deadlines of the active requests. */
static void run_timers(struct idgen_client *c, uint64_t now)
{
	struct request *r, *next;

	for (r = c->active; r; r = next) {
		next = r->next;
		if (now >= r->deadline_ns) {
			struct xfer *x;

			for (x = r->tries; x; x = x->next) {
				char why[REASON_LEN];

				snprintf(why, sizeof(why), "timed out after %llu ms",
					 (unsigned long long)((now - x->start_ns) / 1000000));
				set_reason(r, x->hi, false, why);
			}
			finish(c, r, -ETIMEDOUT);
			continue;
		}
		if (r->round_ns && now >= r->round_ns) {
			r->round_ns = 0;
			r->tried = 0;
			r->rounds++;
			start_try(c, r, now);
		}
		if (r->tries && now >= r->hedge_ns) {
			/* The newest try is slow: its host is skipped from now on. */
			struct xfer *x = r->tries;
			char why[REASON_LEN];

			if (!x->timed_out) {
				x->timed_out = true;
				BUMP(c, timeouts);
				snprintf(why, sizeof(why), "timed out after %u ms", c->o.per_try_ms);
				set_reason(r, x->hi, false, why);
				host_down(c, &c->hosts[x->hi], now, why, true);
			}
			r->hedge_ns = UINT64_MAX;
			start_try(c, r, now);
		}
	}
}

/* The earliest of the loop's own timers. */
static uint64_t next_timer(struct idgen_client *c)
{
	uint64_t t = UINT64_MAX;
	struct request *r;
	unsigned int i;

	for (r = c->active; r; r = r->next) {
		if (r->deadline_ns < t)
			t = r->deadline_ns;
		if (r->tries && r->hedge_ns < t)
			t = r->hedge_ns;
		if (r->round_ns && r->round_ns < t)
			t = r->round_ns;
	}
	for (i = 0; i < c->nhosts; i++) {
		const struct host *h = &c->hosts[i];
		uint64_t when = h->probe ? h->probe->start_ns + probe_timeout_ns(c) :
			h->next_probe_ns;

		/* (A healthy host's probe: when it is late.) */
		if ((!h->probe || host_usable(h)) && when < t)
			t = when;
	}
	return t;
}

static void *loop(void *arg)
{
	struct idgen_client *c = arg;
	struct request *fresh, *r;
	CURLMsg *msg;
	bool looking;
	int running, left;

	for (;;) {
		uint64_t now, t;
		struct curl_waitfd wfd = { .fd = c->timer_fd, .events = CURL_WAIT_POLLIN };
		struct itimerspec its = { 0 };
		uint64_t expirations;

		pthread_mutex_lock(&c->lock);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		if (c->o.buffer_size) {
			/* A refill left for this look by a caller. */
			c->in_loop = true;
			maybe_refill(c);
			c->in_loop = false;
			c->looking = mono_ns() - c->last_take_ns < BUSY_NS;
		}
		fresh = c->queue;
		c->queue = NULL;
		c->queue_tail = &c->queue;
		looking = c->looking;
		pthread_mutex_unlock(&c->lock);

		now = mono_ns();
		while ((r = fresh)) {
			fresh = r->next;
			r->next = c->active;
			c->active = r;
			start_try(c, r, now);
		}
		curl_multi_perform(c->multi, &running);
		while ((msg = curl_multi_info_read(c->multi, &left))) {
			struct xfer *x, **pp;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			now = mono_ns();
			if (!x->req) {
				probe_done(c, x, msg->data.result, now);
				continue;
			}
			for (pp = &x->req->tries; *pp; pp = &(*pp)->next)
				if (*pp == x) {
					*pp = x->next;
					break;
				}
			try_done(c, x, msg->data.result, now);
		}
		now = mono_ns();
		run_timers(c, now);
		run_probes(c, now);

		/* A refill queued by the loop itself (finish()): no sleep. */
		pthread_mutex_lock(&c->lock);
		fresh = c->queue;
		pthread_mutex_unlock(&c->lock);
		if (fresh)
			continue;

		/* Sleep until curl, a timer of ours or a caller needs us. */
		t = next_timer(c);
		if (looking && t > now + LOOK_NS)
			t = now + LOOK_NS;
		if (t != UINT64_MAX) {
			if (t <= now)
				t = now + 1000;
			its.it_value.tv_sec = t / 1000000000;
			its.it_value.tv_nsec = t % 1000000000;
		}
		timerfd_settime(c->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
		curl_multi_poll(c->multi, &wfd, 1, 1000, NULL);
		now = mono_ns();
		if (t != UINT64_MAX && now > t + 1000 &&
		    (now - t) / 1000 > c->st.loop_late_max_us)
			__atomic_store_n(&c->st.loop_late_max_us, (now - t) / 1000,
					 __ATOMIC_RELAXED);
		if (read(c->timer_fd, &expirations, sizeof(expirations)) < 0) {
			/* EAGAIN: it had not fired. */
		}
	}

	/* Stopping: no caller waits any more (idgen_client_free()'s rule). */
	while ((r = c->active))
		finish(c, r, -ECANCELED);
	for (unsigned int i = 0; i < c->nhosts; i++)
		if (c->hosts[i].probe) {
			xfer_end(c->hosts[i].probe);
			c->hosts[i].probe = NULL;
		}
	return NULL;
}

/* ---- the buffer (under c->lock) ------------------------------------------ */

/* Drop the buffered IDs minted more than max_age_ms ago. */
static void drop_stale(struct idgen_client *c)
{
	uint64_t now = wall_unix_ms();
	size_t i, kept = 0;

	if (!c->count)
		return;
	/* Answers of several hosts: not in order, so look at each. */
	for (i = 0; i < c->count; i++) {
		uint64_t id = c->buf[c->head + i];

		if (!id_stale(c, id, now))
			c->buf[c->head + kept++] = id;
	}
	if (kept != c->count) {
		ADD(c, stale_dropped, c->count - kept);
		c->count = kept;
	}
	if (!c->count)
		c->head = 0;
}

/* Unlink w from the waiters (it gave up). */
static void unwait(struct idgen_client *c, struct waiter *w)
{
	struct waiter **pp;

	for (pp = &c->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			if (c->waiters_tail == &w->next)
				c->waiters_tail = pp;
			c->waiting -= w->want - w->got;
			return;
		}
}

/*
 * A refill's IDs: first to the callers waiting, in the order they came
 * (so none starves behind faster threads), the rest into the buffer.
 * Should callers still wait, or the buffer be at its mark, refill again.
 *
 * Every ID of the buffered client passes through here, refill after
 * refill, in order (callers wait only while the buffer is empty): so the
 * IDs one thread gets from one host are strictly increasing, even when a
 * call takes some from the buffer and waits for the rest.
 */
static void deliver_to_buffer(struct idgen_client *c, struct request *r)
{
	size_t i = 0, room, n;
	struct waiter *w;

	while (i < r->want && (w = c->waiters)) {
		n = w->want - w->got < r->want - i ? w->want - w->got : r->want - i;
		memcpy(w->ids + w->got, r->ids + i, n * sizeof(r->ids[0]));
		w->got += n;
		i += n;
		c->waiting -= n;
		if (w->got < w->want)
			break;
		c->waiters = w->next;
		if (!c->waiters)
			c->waiters_tail = &c->waiters;
	}
	if (c->head) {
		memmove(c->buf, c->buf + c->head, c->count * sizeof(c->buf[0]));
		c->head = 0;
	}
	/* Waiters that gave up leave more than room: those are gaps. */
	room = c->o.buffer_size - c->count;
	n = r->want - i < room ? r->want - i : room;
	memcpy(c->buf + c->count, r->ids + i, n * sizeof(c->buf[0]));
	c->count += n;
}

static void submit(struct idgen_client *c, struct request *r)
{
	r->next = NULL;
	*c->queue_tail = r;
	c->queue_tail = &r->next;
}

/*
 * Start a refill if the buffer is at its mark or below, or callers wait,
 * and none runs: for the room in the buffer and the IDs callers wait for
 * (up to refill_cap).  The one refill request is allocated once: a buffer
 * hit that starts a refill costs no allocation.  Returns whether the loop
 * must be woken, which the caller does after unlocking (the loop takes
 * the lock at once).
 *
 * Waking the loop costs the caller a system call and, on a busy machine,
 * often more (the loop thread is scheduled in its place): with a buffer
 * of 32 refilled at 16, that would be one call in 16.  So while callers
 * keep coming the loop looks at the buffer every millisecond by itself
 * (LOOK_NS), and a caller wakes it only when the buffer is down to half
 * its mark or callers wait.
 */
static bool maybe_refill(struct idgen_client *c)
{
	struct request *r = c->refill_req;
	size_t room = c->o.buffer_size - c->count + c->waiting;

	if (room > c->refill_cap)
		room = c->refill_cap;
	if (c->refilling || (c->count > c->o.refill_mark && !c->waiting) || !room)
		return false;
	if (!c->in_loop && !c->waiting && c->count > c->o.refill_mark / 2 &&
	    c->looking)
		return false;	/* the loop's next look starts it */
	r->want = room;
	r->refill = true;
	r->start_ns = mono_ns();
	r->deadline_ns = r->start_ns + c->deadline_ns;
	c->refilling = true;
	c->refill_start_ns = r->start_ns;
	BUMP(c, refills);
	BUMP(c, requests);
	submit(c, r);
	return true;
}

/* Up to n fresh IDs from the buffer; *wake as for maybe_refill(). */
static size_t take_buffered(struct idgen_client *c, uint64_t *ids, size_t n, bool *wake)
{
	size_t k = 0;

	c->last_take_ns = mono_ns();
	drop_stale(c);
	while (k < n && c->count) {
		ids[k++] = c->buf[c->head++];
		if (!--c->count)
			c->head = 0;
	}
	*wake = maybe_refill(c);
	return k;
}

/* ---- calls -------------------------------------------------------------- */

/* One request for n IDs straight into ids, waited for; 0 or -errno. */
/*
 * Wait on cond (its clock CLOCK_MONOTONIC) for 100 ms at most: the waits
 * for the event loop look this often whether they are a child's, made by
 * a fork() in a signal handler, with no loop to wake them.
 */
static int wait_a_while(pthread_cond_t *cond, pthread_mutex_t *lock)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += 100000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return pthread_cond_timedwait(cond, lock, &ts);
}

static int fetch(struct idgen_client *c, uint64_t *ids, size_t n)
{
	struct request *r = calloc(1, sizeof(*r));
	pthread_condattr_t ca;
	int ret;

	if (!r) {
		set_error("out of memory");
		return -ENOMEM;
	}
	r->want = n;
	r->ids = ids;
	r->start_ns = mono_ns();
	r->deadline_ns = r->start_ns + c->deadline_ns;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cond, &ca);
	pthread_condattr_destroy(&ca);
	BUMP(c, requests);
	pthread_mutex_lock(&c->lock);
	submit(c, r);
	pthread_mutex_unlock(&c->lock);
	curl_multi_wakeup(c->multi);

	/*
	 * The loop always finishes a request, by its deadline at the latest.
	 * A child made meanwhile (a fork() in a signal handler) has no loop:
	 * looked for every 100 ms, it gives up, leaving r to nobody.
	 */
	pthread_mutex_lock(&c->lock);
	while (!r->done) {
		if (wait_a_while(&r->cond, &c->lock) == ETIMEDOUT && !r->done &&
		    check_process(c)) {
			pthread_mutex_unlock(&c->lock);
			return -ECHILD;
		}
	}
	pthread_mutex_unlock(&c->lock);
	ret = r->result;
	if (ret)
		set_error("%s", r->err);
	pthread_cond_destroy(&r->cond);
	free(r);
	return ret;
}

/*
 * n IDs from the buffer, or else those it lacks handed over by refills,
 * waiting until the deadline.  A refill started about when this call began
 * ends by its own deadline, which is this call's give or take the loop's
 * lateness: it is waited for, so that its error (naming the hosts) is the
 * one reported.  Returns how many were written (fewer than n only when the
 * deadline passed), or -ETIMEDOUT with none.
 */
static ssize_t take(struct idgen_client *c, uint64_t *ids, size_t n, bool *hit)
{
	uint64_t start = mono_ns(), deadline = start + c->deadline_ns;
	struct timespec ts = { deadline / 1000000000, deadline % 1000000000 };
	struct waiter w = { 0 };
	unsigned long gen;
	bool wake = false;
	size_t k = 0;
	int rc = 0;

	*hit = true;
	pthread_mutex_lock(&c->lock);
	/* (Callers wait only while the buffer is empty: they come first.) */
	if (!c->waiters) {
		k = take_buffered(c, ids, n, &wake);
		if (k == n) {
			pthread_mutex_unlock(&c->lock);
			if (wake)
				curl_multi_wakeup(c->multi);
			return n;
		}
	}
	*hit = false;
	w.ids = ids + k;
	w.want = n - k;
	*c->waiters_tail = &w;
	c->waiters_tail = &w.next;
	c->waiting += w.want;
	if (maybe_refill(c) || wake) {
		pthread_mutex_unlock(&c->lock);
		curl_multi_wakeup(c->multi);
		pthread_mutex_lock(&c->lock);
	}
	while (w.got < w.want && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&c->buf_cond, &c->lock, &ts);
	/*
	 * A refill begun in time may still answer: wait for it, but not in
	 * a child made meanwhile (a fork() in a signal handler), which has no
	 * event loop to answer it.
	 */
	if (w.got < w.want && c->refilling && c->refill_start_ns <= start + 10000000ULL) {
		gen = c->refill_gen;
		while (w.got < w.want && gen == c->refill_gen)
			if (wait_a_while(&c->buf_cond, &c->lock) == ETIMEDOUT &&
			    check_process(c))
				break;
	}
	if (w.got < w.want) {
		unwait(c, &w);
		if (c->refill_gen && c->refill_result)
			set_error("%s", c->refill_err);
		else
			set_error("no ID within the %u ms deadline: the buffer's refill had not "
				  "answered", c->o.deadline_ms);
	}
	pthread_mutex_unlock(&c->lock);
	k += w.got;
	return k ? (ssize_t)k : -ETIMEDOUT;
}

EXPORT ssize_t idgen_client_next_n(struct idgen_client *c, uint64_t *ids, size_t n)
{
	int ret;

	ret = check_process(c);
	if (ret)
		return ret;
	BUMP(c, calls);
	if (!n || n > IDGEN_CLIENT_MAX_COUNT) {
		BUMP(c, calls_failed);
		set_error("count %zu out of range (1 to %u)", n, IDGEN_CLIENT_MAX_COUNT);
		return -EINVAL;
	}
	if (c->o.buffer_size) {
		bool hit;
		ssize_t got = take(c, ids, n, &hit);

		/*
		 * A fork() in a signal handler while take() waited: the child
		 * holds IDs its parent hands out too.  Nothing is returned,
		 * and nothing of them is left where the caller may look.
		 */
		if (check_process(c)) {
			memset(ids, 0, n * sizeof(*ids));
			return -ECHILD;
		}
		if (got < 0)
			BUMP(c, calls_failed);
		else if (hit)
			BUMP(c, buffer_hits);
		return got;
	}
	ret = fetch(c, ids, n);
	/*
	 * A fork() in a signal handler while fetch() waited: the answer is in
	 * the child's copy of ids too, and the parent hands it out.
	 */
	if (check_process(c)) {
		memset(ids, 0, n * sizeof(*ids));
		return -ECHILD;
	}
	if (ret) {
		BUMP(c, calls_failed);
		return ret;
	}
	return n;
}

EXPORT int idgen_client_next(struct idgen_client *c, uint64_t *id)
{
	bool hit;
	int ret;

	ret = check_process(c);
	if (ret)
		return ret;
	if (!c->o.buffer_size) {
		ssize_t r = idgen_client_next_n(c, id, 1);

		return r < 0 ? (int)r : 0;
	}
	BUMP(c, calls);
	ret = take(c, id, 1, &hit) < 0 ? -ETIMEDOUT : 0;
	if (check_process(c)) {
		*id = 0;	/* forked in a signal handler meanwhile */
		return -ECHILD;
	}
	if (ret)
		BUMP(c, calls_failed);
	else if (hit)
		BUMP(c, buffer_hits);
	return ret;
}

EXPORT int idgen_client_stats(struct idgen_client *c, struct idgen_client_stats *s, size_t size)
{
	struct idgen_client_stats t;
	uint64_t *dst = (uint64_t *)&t;
	const uint64_t *src = (const uint64_t *)&c->st;
	size_t i;

	memset(&t, 0, sizeof(t));
	for (i = 0; i < offsetof(struct idgen_client_stats, hosts) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	t.hosts = c->nhosts;
	t.connects = __atomic_load_n(&c->st.connects, __ATOMIC_RELAXED);
	for (i = 0; i < c->nhosts; i++)
		t.hosts_healthy += host_usable(&c->hosts[i]);
	if (size > sizeof(t))
		size = sizeof(t);
	memcpy(s, &t, size);
	return 0;
}

/* ---- setup -------------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Split the endpoints into c->hosts; -EINVAL with the error set. */
static int parse_endpoints(struct idgen_client *c, const char *endpoints)
{
	const char *p = endpoints;

	if (!endpoints || !*endpoints) {
		set_error("no endpoints: give base URLs, e.g. http://10.0.0.1:8080");
		return -EINVAL;
	}
	for (;;) {
		size_t len = strcspn(p, ","), keep = 0;
		const char *why, *sep = strstr(p, "://");
		struct host *h;

		/* Trailing slashes go, not those of "://". */
		if (sep && (size_t)(sep - p) < len)
			keep = sep - p + 3;
		while (len > keep && p[len - 1] == '/')
			len--;
		if (c->nhosts == IDGEN_CLIENT_MAX_HOSTS) {
			set_error("more than %d endpoints", IDGEN_CLIENT_MAX_HOSTS);
			return -EINVAL;
		}
		h = &c->hosts[c->nhosts++];
		if (asprintf(&h->base, "%.*s", (int)len, p) < 0) {
			set_error("out of memory");
			return -ENOMEM;
		}
		why = idgen_http_url_fault(h->base, true);
		if (why) {
			set_error("endpoint '%.*s' %s", (int)strcspn(p, ","), p, why);
			return -EINVAL;
		}
		if (
		    asprintf(&h->next_url, "%s/v1/ids:next", h->base) < 0 ||
		    asprintf(&h->ready_url, "%s/readyz", h->base) < 0) {
			set_error("out of memory");
			return -ENOMEM;
		}
		h->healthy = 1;
		p += strcspn(p, ",");
		if (!*p)
			return 0;
		p++;
	}
}

/*
 * A TLS file of the options: a regular file this process can read; the
 * key, besides, private (lib/credential.h's rule, as idgend's keys): mode
 * 0600 of this user or root, or a systemd credential.  Copied to *copy.
 */
static int tls_file(const char *what, const char *path, bool secret, char **copy)
{
	struct stat st;
	int fd;

	if (!path)
		return 0;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st)) {
		set_error("options: %s %s: %s", what, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	close(fd);
	if (!S_ISREG(st.st_mode)) {
		set_error("options: %s %s: not a regular file", what, path);
		return -EINVAL;
	}
	if (secret) {
		if (st.st_uid != geteuid() && st.st_uid != 0) {
			set_error("options: %s %s: owned by uid %u, neither this user "
				  "(uid %u) nor root", what, path, (unsigned int)st.st_uid,
				  (unsigned int)geteuid());
			return -EINVAL;
		}
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) ||
		    ((st.st_mode & (S_IRGRP | S_IROTH)) && !idgen_systemd_credential(path, &st))) {
			set_error("options: %s %s: %s by group or others (mode %04o): it "
				  "must be mode 0600 (chmod 600 %s)", what, path,
				  st.st_mode & (S_IWGRP | S_IWOTH) ? "writable" : "readable",
				  (unsigned int)(st.st_mode & 07777), path);
			return -EINVAL;
		}
	}
	*copy = strdup(path);
	if (!*copy) {
		set_error("out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int check_tls_files(struct idgen_client *c, const struct idgen_client_options *m)
{
	int ret;

	if (!m->cert_file != !m->key_file) {
		set_error("options: cert_file and key_file go together (%s without %s)",
			  m->cert_file ? "cert_file" : "key_file",
			  m->cert_file ? "key_file" : "cert_file");
		return -EINVAL;
	}
	ret = tls_file("ca_file", m->ca_file, false, &c->ca_file);
	if (!ret)
		ret = tls_file("cert_file", m->cert_file, false, &c->cert_file);
	if (!ret)
		ret = tls_file("key_file", m->key_file, true, &c->key_file);
	return ret;
}

static int check_options(struct idgen_client *c, const struct idgen_client_options *o)
{
	struct idgen_client_options *m = &c->o;
	size_t i;
	int ret;

	idgen_client_options_init(m);
	if (o) {
		if (o->size < offsetof(struct idgen_client_options, caller)) {
			set_error("options: size %zu: call idgen_client_options_init() first",
				  o->size);
			return -EINVAL;
		}
		memcpy(m, o, o->size < sizeof(*m) ? o->size : sizeof(*m));
		m->size = sizeof(*m);
	}
	if (m->refill_mark == IDGEN_CLIENT_REFILL_HALF)
		m->refill_mark = m->buffer_size / 2;
	if (!m->per_try_ms || m->per_try_ms > 600000) {
		set_error("options: per_try_ms %u out of range (1 to 600000)", m->per_try_ms);
		return -EINVAL;
	}
	if (!m->deadline_ms || m->deadline_ms > 3600000) {
		set_error("options: deadline_ms %u out of range (1 to 3600000)", m->deadline_ms);
		return -EINVAL;
	}
	if (m->buffer_size > IDGEN_CLIENT_MAX_COUNT) {
		set_error("options: buffer_size %u out of range (0 to %u)", m->buffer_size,
			  IDGEN_CLIENT_MAX_COUNT);
		return -EINVAL;
	}
	if (m->buffer_size && m->refill_mark >= m->buffer_size) {
		set_error("options: refill_mark %u must be below buffer_size %u",
			  m->refill_mark, m->buffer_size);
		return -EINVAL;
	}
	if (!m->max_age_ms) {
		set_error("options: max_age_ms must be at least 1");
		return -EINVAL;
	}
	if (m->health_check_ms < 10 || m->health_check_ms > 3600000) {
		set_error("options: health_check_ms %u out of range (10 to 3600000)",
			  m->health_check_ms);
		return -EINVAL;
	}
	if (m->caller) {
		/*
		 * The service's rule: 1 to IDGEN_CLIENT_MAX_CALLER of these,
		 * no escaping needed.
		 */
		size_t len = strlen(m->caller);

		for (i = 0; i < len; i++)
			if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789._:-", m->caller[i]))
				break;
		if (!len || len > IDGEN_CLIENT_MAX_CALLER || i < len) {
			set_error("options: caller '%s': 1 to %d letters, digits and ._:-",
				  m->caller, IDGEN_CLIENT_MAX_CALLER);
			return -EINVAL;
		}
		snprintf(c->caller_json, sizeof(c->caller_json), ",\"caller\":\"%s\"",
			 m->caller);
		m->caller = NULL;	/* not kept: the caller's string may go */
	}
	m->layouts = o && o->size > offsetof(struct idgen_client_options, layouts) ?
		     o->layouts : NULL;
	ret = check_tls_files(c, m);
	m->ca_file = m->cert_file = m->key_file = NULL;	/* c's copies instead */
	if (ret)
		return ret;
	c->per_try_ns = (uint64_t)m->per_try_ms * 1000000;
	c->deadline_ns = (uint64_t)m->deadline_ms * 1000000;
	c->health_ns = (uint64_t)m->health_check_ms * 1000000;
	return 0;
}

static void client_free(struct idgen_client *c)
{
	unsigned int i;

	for (i = 0; i < c->nhosts; i++) {
		free(c->hosts[i].base);
		free(c->hosts[i].next_url);
		free(c->hosts[i].ready_url);
	}
	free(c->ca_file);
	free(c->cert_file);
	free(c->key_file);
	while (c->npool)
		curl_easy_cleanup(c->pool[--c->npool]);
	if (c->multi)
		curl_multi_cleanup(c->multi);
	curl_slist_free_all(c->headers);
	if (c->timer_fd >= 0)
		close(c->timer_fd);
	pthread_cond_destroy(&c->buf_cond);
	pthread_mutex_destroy(&c->lock);
	if (c->refill_req)
		free(c->refill_req->ids);
	free(c->refill_req);
	free(c->buf);
	free(c);
}

EXPORT int idgen_client_new(const char *endpoints, const struct idgen_client_options *options,
			    struct idgen_client **out)
{
	struct idgen_client *c;
	pthread_condattr_t ca;
	int ret;

	last_error[0] = '\0';
	pthread_once(&curl_once, curl_init);
	if (curl_init_result != CURLE_OK) {
		set_error("curl_global_init: %s", curl_easy_strerror(curl_init_result));
		return -ENOMEM;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		set_error("out of memory");
		return -ENOMEM;
	}
	c->timer_fd = -1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->buf_cond, &ca);
	pthread_condattr_destroy(&ca);
	c->queue_tail = &c->queue;
	c->waiters_tail = &c->waiters;
	c->rng = mono_ns() | 1;
	ret = check_options(c, options);
	if (!ret)
		ret = parse_endpoints(c, endpoints);
	if (ret) {
		client_free(c);
		return ret;
	}
	/*
	 * Without a wipe-on-fork page (a kernel before 4.14) a child that
	 * keeps its parent's PID and ran no atfork handler passes the check:
	 * then the client keeps no ID across calls, as with buffer_size 0.
	 * Such a child's calls then wait for an event loop it does not have,
	 * but never hand out its parent's IDs.  Refusing to make the client
	 * would leave old kernels without one, for a child that misuses it.
	 */
	if (!idgen_forkguard_init())
		c->o.buffer_size = 0;
	c->stamp = idgen_forkguard_stamp();
	c->buf = calloc(c->o.buffer_size ? c->o.buffer_size : 1, sizeof(c->buf[0]));
	if (c->o.buffer_size) {
		/* Room for a buffer's worth and an idgen_client_next_n() of the most. */
		c->refill_cap = IDGEN_CLIENT_MAX_COUNT;
		c->refill_req = calloc(1, sizeof(*c->refill_req));
		if (c->refill_req)
			c->refill_req->ids = calloc(c->refill_cap, sizeof(uint64_t));
		if (!c->refill_req || !c->refill_req->ids) {
			set_error("out of memory");
			client_free(c);
			return -ENOMEM;
		}
	}
	c->multi = curl_multi_init();
	c->headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (c->headers)
		c->headers = curl_slist_append(c->headers, "Expect:");
	c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (!c->buf || !c->multi || !c->headers || c->timer_fd < 0) {
		set_error("out of memory (or no timerfd)");
		client_free(c);
		return -ENOMEM;
	}
	ret = pthread_create(&c->thread, NULL, loop, c);
	if (ret) {
		set_error("no event-loop thread: %s", strerror(ret));
		client_free(c);
		return -EAGAIN;
	}
	*out = c;
	return 0;
}

EXPORT void idgen_client_free(struct idgen_client *c)
{
	if (!c)
		return;
	/*
	 * In a child of a fork(): no loop to stop, and its lock may have been
	 * held by a thread that is not here.  Left as it is.
	 */
	if (check_process(c))
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_mutex_unlock(&c->lock);
	curl_multi_wakeup(c->multi);
	pthread_join(c->thread, NULL);
	/* Only the refill can be left in the queue: it is c->refill_req. */
	client_free(c);
}

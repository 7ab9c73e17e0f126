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
#include "http_url.h"
#include "internal.h"

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

/* ---- calls -------------------------------------------------------------- */

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

/* One request for n IDs straight into ids, waited for; 0 or -errno. */
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
	idgen_client__submit(c, r);
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
		k = idgen_client__take_buffered(c, ids, n, &wake);
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
	if (idgen_client__maybe_refill(c) || wake) {
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
		idgen_client__unwait(c, &w);
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
	ret = pthread_create(&c->thread, NULL, idgen_client__loop, c);
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

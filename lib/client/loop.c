// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libidgen-client's event loop: the one thread that owns the libcurl
 * multi handle, every transfer and every host's health.  A request is one
 * or more tries, each a POST /v1/ids:next to one host; the first valid
 * answer completes it and cancels its other tries, so an answer that
 * comes later is never read: no ID is delivered twice.  Probes of
 * /readyz bring skipped hosts back; timers hedge a slow try on another
 * host and end requests at their deadline.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "answer.h"
#include "internal.h"

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
			idgen_client__deliver(c, r);
		else
			format_error(c, r, c->refill_err, sizeof(c->refill_err));
		/* Ready for the next refill (set up by idgen_client__maybe_refill()). */
		memset(r->reasons, 0, sizeof(r->reasons));
		r->tried = r->round_ns = r->hedge_ns = 0;
		r->rounds = r->ntries = 0;
		c->refill_result = result;
		c->refilling = false;
		c->refill_gen++;
		/* (The loop looks at its queue before it sleeps again.) */
		if (c->waiters || !result) {
			c->in_loop = true;
			idgen_client__maybe_refill(c);
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

	hi = idgen_client__pick_host(c, r);
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
	 * A refill hands its IDs to waiting calls at once, past idgen_client__drop_stale():
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
	idgen_client__host_up(h);
	xfer_end(x);
	finish(c, r, 0);
	return;

failed:
	set_reason(r, x->hi, definite, why);
	idgen_client__host_down(c, h, now, why, true);
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
		idgen_client__host_up(h);
	} else {
		BUMP(c, probes_failed);
		if (cc == CURLE_OK)
			snprintf(why, sizeof(why), "/readyz answered %ld", status);
		else
			snprintf(why, sizeof(why), "/readyz: %.100s%s",
				 x->curl_err[0] ? x->curl_err : curl_easy_strerror(cc),
				 tls_hint(c, x, cc));
		idgen_client__host_down(c, h, now, why, false);
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
				idgen_client__host_down(c, h, now, why, false);
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
				snprintf(why, sizeof(why), "timed out after %u ms",
					 c->o.per_try_ms);
				set_reason(r, x->hi, false, why);
				idgen_client__host_down(c, &c->hosts[x->hi], now, why,
							true);
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

void *idgen_client__loop(void *arg)
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
			idgen_client__maybe_refill(c);
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

// SPDX-License-Identifier: GPL-2.0
/*
 * client_test MODE ARGS...: one scenario of libidgen-client, as TAP.
 * tests/client/run.sh starts the hosts (idgen-httpd --device sim:W, each
 * its own worker W, so an ID names the host that minted it) and freezes,
 * kills or fakes them around these.
 *
 *   options
 *       bad endpoints and options: -EINVAL and a message naming the fault
 *   spread URLS CALLS
 *       without a buffer: every call answered, every host a share
 *   frozen URLS CALLS BOUND_MS FROZEN_WORKER
 *       one host SIGSTOPped: every call answered within BOUND_MS, none by it
 *   alldown URLS DEADLINE_MS SLACK_MS BUFFER WHY
 *       every host down: -ETIMEDOUT after the deadline, within SLACK_MS of
 *       it, the message naming every host and WHY
 *   unique URLS TOTAL THREADS BUFFER [BATCH]
 *       TOTAL IDs over THREADS threads (by idgen_client_next_n() of BATCH
 *       when given): none twice, and each thread's IDs of one host
 *       strictly increasing
 *   stale URLS MAX_AGE_MS
 *       with a buffer: no ID minted more than MAX_AGE_MS before its call
 *   hold URLS SECONDS HEALTH_MS
 *       calls for SECONDS with /readyz probed every HEALTH_MS, buffer 32:
 *       all answered (run.sh counts what reached a host frozen meanwhile)
 *   fork URLS [HOW]
 *       a client with its buffer full, then a child made by HOW: fork
 *       (the default), _Fork, clone or clone3 (the system calls), or
 *       pidns-fork, pidns-_Fork, pidns-clone, pidns-clone3: the same from
 *       PID 1 of a PID namespace into a new one, the child PID 1 too
 *       (skipped without CAP_SYS_ADMIN).  The child's calls fail with
 *       -ECHILD, no ID of the child's is one of the parent's, and the
 *       parent's calls go on.  HOW no-wipe-...: the same where
 *       madvise(MADV_WIPEONFORK) fails (a seccomp filter): no buffer, and
 *       the child's calls -ECHILD all the same (no-wipe-_Fork,
 *       no-wipe-clone: getpid() tells those)
 *   bad FAKE GOOD GOOD_WORKER CALLS WHY
 *       FAKE answers badly: every call (of 4 IDs, so that order and
 *       duplicates show) answered by GOOD alone; against FAKE alone, the
 *       error names WHY
 *   badbuf FAKE GOOD GOOD_WORKER CALLS WHY
 *       the same with a buffer of 8 and idgen_client_next(): none of the
 *       fake's IDs reaches a call, none older than max_age_ms (1000)
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stddef.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "idgen.h"
#include "idgen_client.h"
#include "child.h"
#include "tap.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static unsigned int worker_of(uint64_t id)
{
	struct idgen_decoded d;

	idgen_decode(id, NULL, &d);
	return d.worker;
}

static unsigned long num(const char *s)
{
	return strtoul(s, NULL, 10);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* How many IDs occur more than once. */
static size_t duplicates(uint64_t *ids, size_t n)
{
	size_t i, dup = 0;

	qsort(ids, n, sizeof(ids[0]), cmp_u64);
	for (i = 1; i < n; i++)
		dup += ids[i] == ids[i - 1];
	return dup;
}

static void print_latencies(const char *what, uint64_t *ns, size_t n)
{
	if (!n)
		return;
	qsort(ns, n, sizeof(ns[0]), cmp_u64);
	printf("# %s: %zu calls, latency p50 %.3f ms, p99 %.3f ms, p999 %.3f ms, max %.3f ms\n",
	       what, n, ns[n / 2] / 1e6, ns[n * 99 / 100] / 1e6, ns[n * 999 / 1000] / 1e6,
	       ns[n - 1] / 1e6);
}

static void print_stats(struct idgen_client *c)
{
	struct idgen_client_stats s;

	idgen_client_stats(c, &s, sizeof(s));
	printf("# stats: calls %" PRIu64 " failed %" PRIu64 " buffer_hits %" PRIu64
	       " requests %" PRIu64 " tries %" PRIu64 " retries %" PRIu64 " timeouts %" PRIu64
	       " skipped %" PRIu64 " connect_errors %" PRIu64 " http_errors %" PRIu64
	       " bad_answers %" PRIu64 " abandoned %" PRIu64 " stale_dropped %" PRIu64
	       " refills %" PRIu64 " probes %" PRIu64 "/%" PRIu64 " failed, healthy %u of %u,"
	       " loop late by %" PRIu64 " us at worst\n",
	       s.calls, s.calls_failed, s.buffer_hits, s.requests, s.tries, s.retries,
	       s.timeouts, s.hosts_skipped, s.connect_errors, s.http_errors, s.bad_answers,
	       s.abandoned, s.stale_dropped, s.refills, s.probes, s.probes_failed,
	       s.hosts_healthy, s.hosts, s.loop_late_max_us);
}

static struct idgen_client *client(const char *urls, unsigned int buffer,
				   unsigned int deadline_ms, unsigned int per_try_ms)
{
	struct idgen_client_options o;
	struct idgen_client *c;

	idgen_client_options_init(&o);
	o.buffer_size = buffer;
	if (deadline_ms)
		o.deadline_ms = deadline_ms;
	if (per_try_ms)
		o.per_try_ms = per_try_ms;
	if (idgen_client_new(urls, &o, &c)) {
		printf("# idgen_client_new: %s\n", idgen_client_last_error());
		exit(2);
	}
	return c;
}

/* ---- a fork in a signal handler while a call waits ---------------------- */

static volatile sig_atomic_t forked_in_handler;

static void fork_in_handler(int sig)
{
	(void)sig;
	if (!_Fork())
		forked_in_handler = 1;
}

/*
 * Every host frozen: a call waits.  A signal handler forks 20 ms into it,
 * with and without the buffer (the call waiting for its refill, or for
 * its answer).  The child's call must come back, -ECHILD, with no ID,
 * rather than wait for an event loop it does not have.
 */
static int t_forkwait(const char *urls, unsigned int buffer)
{
	struct itimerval it = { { 0, 0 }, { 0, 20000 } };
	struct idgen_client *c = client(urls, buffer, 300, 0);
	struct sigaction sa;
	int fds[2], ret, got, status;
	pid_t pid;
	uint64_t id;

	if (pipe(fds))
		return 2;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fork_in_handler;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	ret = idgen_client_next(c, &id);
	if (forked_in_handler) {
		/* The child: its answer, then gone (a hang ends at the alarm). */
		if (write(fds[1], &ret, sizeof(ret)) != sizeof(ret))
			_exit(1);
		_exit(0);
	}
	check(ret == -ETIMEDOUT, "buffer %u, every host frozen: the parent's call "
	      "times out (got %d)", buffer, ret);
	signal(SIGALRM, SIG_DFL);
	pid = waitpid(-1, &status, 0);
	close(fds[1]);
	got = read(fds[0], &ret, sizeof(ret)) == sizeof(ret);
	check(pid > 0 && got && ret == -ECHILD,
	      "... the child forked in a signal handler during it: -ECHILD (got %d)",
	      got ? ret : 0);
	idgen_client_free(c);
	return tap_done();
}

/* ---- options ------------------------------------------------------------ */

static void refused(const char *what, const char *urls, struct idgen_client_options *o,
		    const char *says)
{
	struct idgen_client *c = NULL;
	int ret = idgen_client_new(urls, o, &c);

	check(ret == -EINVAL && strstr(idgen_client_last_error(), says),
	      "%s: -EINVAL, \"%s\" (got %d, \"%s\")", what, says, ret,
	      idgen_client_last_error());
	idgen_client_free(c);
}

static int t_options(void)
{
	struct idgen_client_options o;
	struct idgen_client *c;
	uint64_t ids[2];

	refused("no endpoints", "", NULL, "no endpoints");
	refused("an ftp:// endpoint", "http://127.0.0.1:1,ftp://h", NULL,
		"endpoint 'ftp://h' is not an http:// or https:// URL");
	refused("an endpoint with a query", "http://h/?a", NULL,
		"endpoint 'http://h/?a' is not a base URL: it has a query or a fragment");
	refused("a bare scheme", "http://", NULL, "endpoint 'http://' names no host");
	refused("user information", "http://u@h:1", NULL,
		"endpoint 'http://u@h:1' has user information, which is never sent");
	refused("port 0", "http://h:0", NULL,
		"endpoint 'http://h:0' has a bad port (want 1 to 65535)");
	idgen_client_options_init(&o);
	o.per_try_ms = 0;
	refused("per_try_ms 0", "http://h", &o, "per_try_ms 0 out of range");
	idgen_client_options_init(&o);
	o.buffer_size = 8;
	o.refill_mark = 8;
	refused("refill_mark at the buffer size", "http://h", &o,
		"refill_mark 8 must be below buffer_size 8");
	idgen_client_options_init(&o);
	o.caller = "a b";
	refused("a caller with a blank", "http://h", &o, "caller 'a b'");
	idgen_client_options_init(&o);
	o.size = 4;
	refused("options not initialised", "http://h", &o, "idgen_client_options_init()");

	idgen_client_options_init(&o);
	o.buffer_size = 7;	/* the mark: half, 3 */
	check(!idgen_client_new("http://127.0.0.1:1/", &o, &c),
	      "a buffer of 7 with the default mark, a trailing slash: accepted");
	check(idgen_client_next_n(c, ids, 0) == -EINVAL &&
	      strstr(idgen_client_last_error(), "count 0 out of range"),
	      "next_n(0): -EINVAL (\"%s\")", idgen_client_last_error());
	check(idgen_client_next_n(c, ids, 10001) == -EINVAL, "next_n(10001): -EINVAL");
	idgen_client_free(c);
	return tap_done();
}

/* ---- spread, frozen ----------------------------------------------------- */

static int t_spread(const char *urls, size_t calls, long bound_ms, long frozen)
{
	/* A deadline past the bound: a slow call shows in the bound's check. */
	struct idgen_client *c = client(urls, 0, 1000, 0);
	uint64_t *ids = calloc(calls, sizeof(*ids)), *lat = calloc(calls, sizeof(*lat));
	size_t per_worker[128] = { 0 }, ok = 0, i, n = 0, nhosts = 1, w;
	struct idgen_client_stats s;
	const char *p;
	int ret;

	for (p = urls; *p; p++)
		nhosts += *p == ',';
	for (i = 0; i < calls; i++) {
		uint64_t t0 = mono_ns();

		ret = idgen_client_next(c, &ids[n]);
		lat[i] = mono_ns() - t0;
		if (ret) {
			printf("# call %zu: %s\n", i, idgen_client_last_error());
			continue;
		}
		per_worker[worker_of(ids[n])]++;
		n++;
		ok++;
	}
	print_stats(c);
	idgen_client_stats(c, &s, sizeof(s));
	printf("# per worker:");
	for (w = 0; w < 128; w++)
		if (per_worker[w])
			printf(" %zu: %zu", w, per_worker[w]);
	printf("\n");
	print_latencies(frozen >= 0 ? "one host frozen" : "all hosts up", lat, calls);
	check(ok == calls, "%zu calls of %zu answered", ok, calls);
	check(s.calls == calls && s.tries >= calls, "stats: %" PRIu64 " calls, %" PRIu64
	      " tries", s.calls, s.tries);
	if (frozen < 0) {
		size_t hosts_used = 0;

		for (w = 0; w < 128; w++)
			hosts_used += per_worker[w] >= calls / nhosts / 4;
		check(hosts_used == nhosts, "each of the %zu hosts answered at least a quarter "
		      "of its even share", nhosts);
	} else {
		qsort(lat, calls, sizeof(lat[0]), cmp_u64);
		check(!per_worker[frozen], "no ID from the frozen host (worker %ld)", frozen);
		check(lat[calls - 1] <= (uint64_t)bound_ms * 1000000,
		      "every call within %ld ms (the slowest: %.3f ms)", bound_ms,
		      lat[calls - 1] / 1e6);
		/*
		 * Skipped once it timed out, not tried again and again: a third
		 * of the calls would each wait out a timeout on it.
		 */
		check(s.hosts_skipped > 0 && s.timeouts < calls / 10,
		      "the frozen host was skipped (%" PRIu64 " times), not tried again and "
		      "again (%" PRIu64 " per-try timeouts in %zu calls)", s.hosts_skipped,
		      s.timeouts, calls);
	}
	check(!duplicates(ids, n), "no ID twice among %zu", n);
	idgen_client_free(c);
	free(ids);
	free(lat);
	return tap_done();
}

/* ---- every host down ---------------------------------------------------- */

static int t_alldown(const char *urls, unsigned int deadline_ms, unsigned int slack_ms,
		     unsigned int buffer, const char *why)
{
	struct idgen_client *c = client(urls, buffer, deadline_ms, 0);
	struct idgen_client_stats s;
	const char *err, *p;
	char url[256];
	uint64_t t0, t1, id;
	int ret, named = 1;

	t0 = mono_ns();
	ret = idgen_client_next(c, &id);
	t1 = mono_ns();
	err = idgen_client_last_error();
	printf("# %s\n", err);
	check(ret == -ETIMEDOUT, "buffer %u: -ETIMEDOUT (got %d)", buffer, ret);
	check(t1 - t0 >= (uint64_t)deadline_ms * 1000000 &&
	      t1 - t0 <= (uint64_t)(deadline_ms + slack_ms) * 1000000,
	      "... after the %u ms deadline, within %u ms of it (%.1f ms)", deadline_ms,
	      slack_ms, (t1 - t0) / 1e6);
	for (p = urls; *p; p += strcspn(p, ",") + !!p[strcspn(p, ",")]) {
		snprintf(url, sizeof(url), "%.*s: ", (int)strcspn(p, ","), p);
		if (!strstr(err, url))
			named = 0;
	}
	check(named && strstr(err, "no ID within the") && strstr(err, why),
	      "... the message names every host and \"%s\"", why);
	idgen_client_stats(c, &s, sizeof(s));
	check(s.calls == 1 && s.calls_failed == 1, "stats: 1 call, 1 failed");
	print_stats(c);
	idgen_client_free(c);
	return tap_done();
}

/* ---- calls for a while, probes coming fast ---------------------------- */

static int t_hold(const char *urls, unsigned int seconds, unsigned int health_ms)
{
	struct idgen_client_options o;
	struct idgen_client_stats s;
	struct idgen_client *c;
	uint64_t end = mono_ns() + (uint64_t)seconds * 1000000000, id;
	size_t calls = 0, errors = 0;

	idgen_client_options_init(&o);
	o.health_check_ms = health_ms;
	o.deadline_ms = 1000;
	if (idgen_client_new(urls, &o, &c)) {
		printf("# idgen_client_new: %s\n", idgen_client_last_error());
		return 2;
	}
	while (mono_ns() < end) {
		calls++;
		if (idgen_client_next(c, &id) && errors++ < 3)
			printf("# %s\n", idgen_client_last_error());
		usleep(500);
	}
	print_stats(c);
	idgen_client_stats(c, &s, sizeof(s));
	check(!errors, "%zu calls over %u s, probes every %u ms: all answered (%zu failed)",
	      calls, seconds, health_ms, errors);
	check(s.probes > 0, "... hosts were probed (%" PRIu64 ")", s.probes);
	idgen_client_free(c);
	return tap_done();
}

/* ---- uniqueness and threads ------------------------------------------- */

struct worker_arg {
	struct idgen_client *c;
	uint64_t *ids;
	size_t n, batch, got, errors, out_of_order;
};

static void *taker(void *arg)
{
	struct worker_arg *a = arg;
	uint64_t last[128] = { 0 };
	size_t i;

	for (i = 0; i < a->n; i += a->batch) {
		size_t want = a->n - i < a->batch ? a->n - i : a->batch, k;
		uint64_t *ids = a->ids + a->got;
		ssize_t got;

		if (a->batch == 1)
			got = idgen_client_next(a->c, ids) ? -1 : 1;
		else
			got = idgen_client_next_n(a->c, ids, want);
		if (got != (ssize_t)want) {
			if (a->errors++ < 3)
				printf("# %s\n", idgen_client_last_error());
			if (got < 0)
				continue;
		}
		for (k = 0; k < (size_t)got; k++) {
			unsigned int w = worker_of(ids[k]);

			if (ids[k] <= last[w])
				a->out_of_order++;
			last[w] = ids[k];
		}
		a->got += got;
	}
	return NULL;
}

static int t_unique(const char *urls, size_t total, unsigned int threads, unsigned int buffer,
		    size_t batch)
{
	struct idgen_client *c = client(urls, buffer, 1000, 0);
	struct worker_arg a[64];
	struct idgen_client_stats s;
	uint64_t *all = calloc(total, sizeof(*all)), t0;
	size_t n = 0, errors = 0, ooo = 0, dup;
	unsigned int t;

	if (threads > 64)
		threads = 64;
	t0 = mono_ns();
	for (t = 0; t < threads; t++) {
		a[t] = (struct worker_arg){ .c = c, .ids = all + n, .n = total / threads,
					    .batch = batch ? batch : 1 };
		n += a[t].n;
	}
	pthread_t th[64];

	for (t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, taker, &a[t]);
	n = 0;
	for (t = 0; t < threads; t++) {
		pthread_join(th[t], NULL);
		errors += a[t].errors;
		ooo += a[t].out_of_order;
	}
	/* The IDs each thread got, end to end. */
	for (t = 0; t < threads; t++) {
		memmove(all + n, a[t].ids, a[t].got * sizeof(*all));
		n += a[t].got;
	}
	printf("# %zu IDs in %.2f s over %u threads, buffer %u, %zu a call\n", n,
	       (mono_ns() - t0) / 1e9, threads, buffer, batch ? batch : 1);
	print_stats(c);
	idgen_client_stats(c, &s, sizeof(s));
	check(!errors && n == total / threads * threads, "%u threads, buffer %u: all %zu IDs had "
	      "(%zu calls failed or came short)", threads, buffer, total / threads * threads,
	      errors);
	dup = duplicates(all, n);
	check(!dup, "... no ID twice among %zu (%zu duplicates)", n, dup);
	check(!ooo, "... each thread's IDs of one host strictly increasing (%zu out of order)", ooo);
	/*
	 * One at a time, calls find IDs left in the buffer after each refill.
	 * next_n(20) from a buffer of 32 leaves 12, under the mark: the next
	 * call waits for the refill it started, so whether any call finds
	 * enough in the buffer alone is a matter of timing.  Its IDs still all
	 * came through the buffer's refills.
	 */
	if (buffer && (!batch || batch == 1))
		check(s.buffer_hits > 0 && s.refills > 0,
		      "... the buffer answered (%" PRIu64 " hits, %" PRIu64 " refills)",
		      s.buffer_hits, s.refills);
	else if (buffer)
		check(s.refills > 0 && s.requests == s.refills,
		      "... every ID came through the buffer's refills (%" PRIu64 " refills, %"
		      PRIu64 " requests, %" PRIu64 " hits)", s.refills, s.requests, s.buffer_hits);
	idgen_client_free(c);
	free(all);
	return tap_done();
}

/* ---- the age bound ------------------------------------------------------ */

static int t_stale(const char *urls, unsigned int max_age_ms)
{
	struct idgen_client_options o;
	struct idgen_client_stats s;
	struct idgen_client *c;
	unsigned int i, too_old = 0, errors = 0, worst = 0;

	idgen_client_options_init(&o);
	o.buffer_size = 64;
	o.max_age_ms = max_age_ms;
	o.deadline_ms = 1000;
	if (idgen_client_new(urls, &o, &c))
		return 2;
	srand(1);
	for (i = 0; i < 40; i++) {
		uint64_t start = wall_ms(), id, minted;
		struct idgen_decoded d;

		if (idgen_client_next(c, &id)) {
			printf("# %s\n", idgen_client_last_error());
			errors++;
			continue;
		}
		idgen_decode(id, NULL, &d);
		minted = d.unix_ms;
		if (minted + max_age_ms < start)
			too_old++;
		if (start > minted && start - minted > worst)
			worst = start - minted;
		/* Now and then past the bound, now and then within it. */
		usleep((rand() % (3 * max_age_ms)) * 1000);
	}
	print_stats(c);
	idgen_client_stats(c, &s, sizeof(s));
	check(!errors, "40 calls with sleeps of up to %u ms: all answered", 3 * max_age_ms);
	check(!too_old, "... none minted more than %u ms before its call (the oldest: %u ms; "
	      "%u too old)", max_age_ms, worst, too_old);
	check(s.stale_dropped > 0, "... stale IDs were dropped and counted (%" PRIu64 ")",
	      s.stale_dropped);
	idgen_client_free(c);
	return tap_done();
}

/* ---- bad answers -------------------------------------------------------- */

static int t_bad(const char *fake, const char *good, unsigned int good_worker, size_t calls,
		 const char *why)
{
	char urls[512];
	struct idgen_client *c;
	struct idgen_client_stats s;
	size_t i, k, ok = 0, foreign = 0;
	uint64_t ids[4];
	int ret;

	snprintf(urls, sizeof(urls), "%s,%s", fake, good);
	/* Python answers in milliseconds: a per-try timeout it can meet. */
	c = client(urls, 0, 2000, 200);
	for (i = 0; i < calls; i++) {
		if (idgen_client_next_n(c, ids, 4) != 4) {
			printf("# %s\n", idgen_client_last_error());
			continue;
		}
		ok++;
		for (k = 0; k < 4; k++)
			foreign += worker_of(ids[k]) != good_worker;
	}
	print_stats(c);
	idgen_client_stats(c, &s, sizeof(s));
	check(ok == calls, "%s: %zu calls of %zu answered", why, ok, calls);
	check(!foreign, "... none with the fake's IDs (%zu)", foreign);
	check(s.bad_answers + s.http_errors + s.connect_errors + s.timeouts > 0,
	      "... the fake was tried and refused (%" PRIu64 " bad answers, %" PRIu64
	      " HTTP errors, %" PRIu64 " timeouts)", s.bad_answers, s.http_errors, s.timeouts);
	idgen_client_free(c);

	c = client(fake, 0, 1000, 200);
	ret = idgen_client_next_n(c, ids, 4);
	printf("# %s\n", idgen_client_last_error());
	check(ret == -ETIMEDOUT && strstr(idgen_client_last_error(), why),
	      "... the fake alone: -ETIMEDOUT, \"%s\" (got %d)", why, ret);
	idgen_client_free(c);
	return tap_done();
}

static int t_badbuf(const char *fake, const char *good, unsigned int good_worker,
		    size_t calls, const char *why)
{
	struct idgen_client_options o;
	struct idgen_client_stats s;
	struct idgen_client *c;
	size_t i, ok = 0, foreign = 0, too_old = 0;
	char urls[512];
	uint64_t id;
	int ret;

	snprintf(urls, sizeof(urls), "%s,%s", fake, good);
	idgen_client_options_init(&o);
	o.buffer_size = 8;
	o.per_try_ms = 200;	/* Python answers in milliseconds */
	o.deadline_ms = 2000;
	o.health_check_ms = 10;	/* the fake back soon, and tried again */
	if (idgen_client_new(urls, &o, &c))
		return 2;
	for (i = 0; i < calls; i++) {
		uint64_t start = wall_ms();
		struct idgen_decoded d;

		if (idgen_client_next(c, &id)) {
			printf("# %s\n", idgen_client_last_error());
			continue;
		}
		ok++;
		idgen_decode(id, NULL, &d);
		foreign += d.worker != good_worker;
		too_old += d.unix_ms + o.max_age_ms < start;
		usleep(1000);
	}
	print_stats(c);
	idgen_client_stats(c, &s, sizeof(s));
	check(ok == calls, "%s, buffer 8: %zu calls of %zu answered", why, ok, calls);
	check(!foreign, "... none with the fake's IDs (%zu)", foreign);
	check(!too_old, "... none minted more than %u ms before its call (%zu)", o.max_age_ms,
	      too_old);
	check(s.bad_answers + s.http_errors + s.timeouts > 0,
	      "... the fake was tried and refused (%" PRIu64 " bad answers)", s.bad_answers);
	idgen_client_free(c);

	o.health_check_ms = 500;
	if (idgen_client_new(fake, &o, &c))
		return 2;
	ret = idgen_client_next(c, &id);
	printf("# %s\n", idgen_client_last_error());
	check(ret == -ETIMEDOUT && strstr(idgen_client_last_error(), why),
	      "... the fake alone: -ETIMEDOUT, \"%s\" (got %d)", why, ret);
	idgen_client_free(c);
	return tap_done();
}

/* ---- fork --------------------------------------------------------------- */

#define CHILD_CALLS	8

/* What the child saw, through a pipe. */
struct fork_report {
	int ret[CHILD_CALLS];
	uint64_t ids[CHILD_CALLS];
	pid_t pid;
	char msg[256];
};

/*
 * A child made as HOW says: fork, _Fork, clone or clone3 (child.h), each
 * with a pidns- form that makes it in a new PID namespace.
 */
static pid_t make_child(const char *how)
{
	bool newpid = !strncmp(how, "pidns-", 6);
	enum child_how h;

	if (child_how_named(how + (newpid ? 6 : 0), &h)) {
		errno = EINVAL;
		return -1;
	}
	return child_make(h, newpid);
}

/*
 * With no_wipe (HOW no-wipe-...), where the kernel has no
 * MADV_WIPEONFORK: the client keeps no buffer, and the fallback's
 * getpid() tells a child of _Fork() or clone().  (One it cannot tell, PID
 * 1 from PID 1, waits forever in its first call: not tested here.)
 */
static int t_fork(const char *urls, const char *how, bool no_wipe)
{
	struct idgen_client *c = client(urls, 32, 1000, 0);
	uint64_t mine[40], theirs[CHILD_CALLS] = { 0 }, id;
	int fds[2], status, i, k, ret, shared = 0;
	bool newpid = !strncmp(how, "pidns-", 6);
	struct idgen_client_stats st;
	struct fork_report out;
	struct sigaction sa;
	char msg[256] = "";
	ssize_t got;
	pid_t pid;

	/* The first call's refill fills the buffer too. */
	check(!idgen_client_next(c, &id), "a call before the child: answered");
	usleep(50000);
	if (pipe(fds))
		return 2;
	pid = make_child(how);
	if (pid < 0) {
		printf("# making the child (%s): %s\n", how, strerror(errno));
		return 2;
	}
	if (!pid) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = child_on_alarm;
		sigaction(SIGALRM, &sa, NULL);
		alarm(10);
		memset(&out, 0, sizeof(out));
		for (i = 0; i < CHILD_CALLS; i++)
			out.ret[i] = idgen_client_next(c, &out.ids[i]);
		out.pid = getpid();
		snprintf(out.msg, sizeof(out.msg), "%s", idgen_client_last_error());
		if (write(fds[1], &out, sizeof(out)) != sizeof(out))
			_exit(1);
		/* Leaves it alone: no loop thread to join here. */
		idgen_client_free(c);
		_exit(0);
	}
	close(fds[1]);
	for (i = 0; i < 40; i++)
		if (idgen_client_next(c, &mine[i]))
			mine[i] = 0;
	got = read(fds[0], &out, sizeof(out));
	waitpid(pid, &status, 0);
	check(got == sizeof(out) && WIFEXITED(status) && !WEXITSTATUS(status),
	      "the child (%s) reported and exited (status 0x%x)", how, status);
	ret = got == sizeof(out) ? 0 : -1;
	for (i = 0; got == sizeof(out) && i < CHILD_CALLS; i++) {
		if (out.ret[i] != -ECHILD)
			ret = out.ret[i] ? out.ret[i] : 1;
		if (!out.ret[i])
			theirs[i] = out.ids[i];
	}
	if (got == sizeof(out))
		snprintf(msg, sizeof(msg), "%s", out.msg);
	close(fds[0]);
	for (i = 0; i < CHILD_CALLS; i++)
		for (k = 0; k < 40; k++)
			shared += theirs[i] && theirs[i] == mine[k];
	check(!ret && strstr(msg, "fork()"), "the child's %d calls: -ECHILD, \"%s\" (got %d)",
	      CHILD_CALLS, msg, ret);
	check(!shared, "no ID the child got is one the parent got (%d)", shared);
	for (i = 0, k = 0; i < 40; i++)
		k += !mine[i];
	check(!k, "the parent's 40 calls after the child was made: answered (%d failed)", k);
	if (no_wipe) {
		idgen_client_stats(c, &st, sizeof(st));
		check(!st.buffer_hits && !st.refills,
		      "without MADV_WIPEONFORK no buffer (%" PRIu64 " hits, %" PRIu64 " refills)",
		      st.buffer_hits, st.refills);
	}
	if (newpid)
		check(getpid() == 1 && got == sizeof(out) && out.pid == 1,
		      "the case under test: parent and child both PID 1 (%d, %d)", getpid(),
		      got == sizeof(out) ? out.pid : 0);
	idgen_client_free(c);
	return tap_done();
}

/*
 * fork URLS HOW with HOW pidns-...: from PID 1 of a new PID namespace, as
 * `unshare --pid --fork` makes one, so that the child, in a namespace of
 * its own, is PID 1 too.  Skipped without CAP_SYS_ADMIN.
 */
static int t_fork_pid1(const char *urls, const char *how, bool no_wipe)
{
	int status;
	pid_t pid;

	if (unshare(CLONE_NEWPID)) {
		if (errno != EPERM)
			return 2;
		printf("ok 1 # SKIP a new PID namespace needs CAP_SYS_ADMIN\n1..1\n");
		return 0;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 2;
	if (!pid)
		_exit(t_fork(urls, how, no_wipe));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 2;
	return WEXITSTATUS(status);
}

/* ---- https: idgen-httpd with TLS and mTLS ------------------------------ */

static const char *opt_file(const char *s)
{
	return strcmp(s, "-") ? s : NULL;
}

/*
 * calls idgen_client_next() over https with ca, cert and key ("-": none).
 * expect "ok": every call answered, no ID twice, and at most max_conn
 * connections made (TLS handshakes) for them all: reused, not one per
 * request (and two more for each retry: the cancelled try's, a probe's).
 * Otherwise expect is what the error must say (from
 * idgen_client_new(), or from the first call, which must fail).
 */
static int t_tls(const char *urls, const char *ca, const char *cert, const char *key,
		 size_t calls, unsigned long max_conn, const char *expect)
{
	struct idgen_client_options o;
	struct idgen_client_stats s;
	struct idgen_client *c;
	uint64_t *ids = calloc(calls ? calls : 1, sizeof(*ids));
	size_t i, got = 0, dups = 0;
	bool ok = !strcmp(expect, "ok");
	int ret;

	idgen_client_options_init(&o);
	o.buffer_size = 0;
	o.deadline_ms = 2000;	/* handshakes on shared, loaded cores */
	o.health_check_ms = 3600000;	/* one probe per host, at the start */
	o.ca_file = opt_file(ca);
	o.cert_file = opt_file(cert);
	o.key_file = opt_file(key);
	ret = idgen_client_new(urls, &o, &c);
	if (ret) {
		printf("# idgen_client_new: %s\n", idgen_client_last_error());
		check(!ok && strstr(idgen_client_last_error(), expect),
		      "idgen_client_new refused: \"%s\"", expect);
		free(ids);
		return tap_done();
	}
	/* The start's probes done: their connections are the tries' too. */
	usleep(300000);
	for (i = 0; i < calls; i++) {
		ret = idgen_client_next(c, &ids[got]);
		if (ret) {
			printf("# call %zu: %s\n", i, idgen_client_last_error());
			break;
		}
		got++;
	}
	if (ok) {
		check(got == calls, "%zu of %zu calls over https answered", got, calls);
		qsort(ids, got, sizeof(*ids), cmp_u64);
		for (i = 1; i < got; i++)
			dups += ids[i] == ids[i - 1];
		check(!dups, "... no ID twice (%zu)", dups);
		idgen_client_stats(c, &s, sizeof(s));
		printf("# requests %" PRIu64 " tries %" PRIu64 " retries %" PRIu64
		       " connects %" PRIu64 "\n", s.requests, s.tries, s.retries, s.connects);
		/*
		 * A retry (a try on the other host while the first is still
		 * out, after 2 ms) costs up to two connections, honestly
		 * made: the losing try's, which libcurl closes when it is
		 * cancelled in flight, and the probe of the timed-out host
		 * 50 ms later, when it overlaps a try there.  A client that
		 * connected per request would still make some 300.
		 */
		check(s.connects >= 1 && s.connects <= max_conn + 2 * s.retries,
		      "... %" PRIu64 " connection(s) made (TLS handshakes) for %zu requests, "
		      "at most %lu and two per retry (%" PRIu64 "): reused", s.connects,
		      calls, max_conn, s.retries);
	} else {
		check(got == 0 && strstr(idgen_client_last_error(), expect),
		      "refused, the error says \"%s\"", expect);
	}
	idgen_client_free(c);
	free(ids);
	return tap_done();
}

int main(int argc, char *argv[])
{
	const char *m = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(m, "options"))
		return t_options();
	if (!strcmp(m, "spread") && argc == 4)
		return t_spread(argv[2], num(argv[3]), 0, -1);
	if (!strcmp(m, "frozen") && argc == 6)
		return t_spread(argv[2], num(argv[3]), num(argv[4]), num(argv[5]));
	if (!strcmp(m, "alldown") && argc == 7)
		return t_alldown(argv[2], num(argv[3]), num(argv[4]), num(argv[5]), argv[6]);
	if (!strcmp(m, "unique") && (argc == 6 || argc == 7))
		return t_unique(argv[2], num(argv[3]), num(argv[4]), num(argv[5]),
				argc == 7 ? num(argv[6]) : 1);
	if (!strcmp(m, "stale") && argc == 4)
		return t_stale(argv[2], num(argv[3]));
	if (!strcmp(m, "hold") && argc == 5)
		return t_hold(argv[2], num(argv[3]), num(argv[4]));
	if (!strcmp(m, "badbuf") && argc == 7)
		return t_badbuf(argv[2], argv[3], num(argv[4]), num(argv[5]), argv[6]);
	if (!strcmp(m, "fork") && argc == 3)
		return t_fork(argv[2], "fork", false);
	if (!strcmp(m, "fork") && argc == 4) {
		const char *how = argv[3];
		bool no_wipe = !strncmp(how, "no-wipe-", 8);

		/* Before the first client: the fork guard is set up then. */
		if (no_wipe && child_no_wipe_on_fork(false)) {
			printf("# seccomp: %s\n", strerror(errno));
			return 2;
		}
		how += no_wipe ? 8 : 0;
		if (!strncmp(how, "pidns-", 6))
			return t_fork_pid1(argv[2], how, no_wipe);
		return t_fork(argv[2], how, no_wipe);
	}
	if (!strcmp(m, "forkwait") && argc == 4)
		return t_forkwait(argv[2], num(argv[3]));
	if (!strcmp(m, "tls") && argc == 9)
		return t_tls(argv[2], argv[3], argv[4], argv[5], num(argv[6]), num(argv[7]),
			     argv[8]);
	if (!strcmp(m, "bad") && argc == 7)
		return t_bad(argv[2], argv[3], num(argv[4]), num(argv[5]), argv[6]);
	fprintf(stderr, "client_test: unknown mode or wrong arguments (see the source)\n");
	return 2;
}

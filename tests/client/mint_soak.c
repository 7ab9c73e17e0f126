// SPDX-License-Identifier: GPL-2.0
/*
 * mint_soak --remote URL[,URL...] --seconds S [--per-try-ms MS] [--buffer N]
 *           [--deadline-ms MS]
 *
 * Calls idgen_client_next() in a loop from one thread for S seconds and
 * prints a line per call on stdout:
 *
 *   <ns since start> <call latency ns> <id in decimal>
 *   # error <errno> <message>                 (a call that failed)
 *   # stats calls=.. retries=.. timeouts=.. skipped=.. buffer_hits=..
 *
 * the last at the end.  Exits 0 when no call failed, 1 otherwise (2 for
 * bad usage).  Defaults: no buffer, 2 ms per try.  The fleet test
 * (tests/vm/) freezes a host under it and reads the lines.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idgen_client.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int usage(const char *why)
{
	fprintf(stderr, "mint_soak: %s\nUsage: mint_soak --remote URL[,URL...] --seconds S "
		"[--per-try-ms MS] [--buffer N] [--deadline-ms MS]\n", why);
	return 2;
}

/* A decimal option value from 0 to max; -1 when it is not one. */
static long long number(const char *s, long long max)
{
	char *end;
	long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	return v;
}

int main(int argc, char *argv[])
{
	struct idgen_client_options o;
	struct idgen_client_stats st;
	struct idgen_client *c;
	const char *remote = NULL;
	long long seconds = -1, v;
	uint64_t start, end, t0, t1, id;
	int i, ret, failed = 0;

	idgen_client_options_init(&o);
	o.buffer_size = 0;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--remote") && val) {
			remote = val;
		} else if (!strcmp(a, "--seconds") && (seconds = number(val, 1000000)) >= 0) {
		} else if (!strcmp(a, "--per-try-ms") && (v = number(val, 600000)) > 0) {
			o.per_try_ms = v;
		} else if (!strcmp(a, "--buffer") && (v = number(val, 10000)) >= 0) {
			o.buffer_size = v;
		} else if (!strcmp(a, "--deadline-ms") && (v = number(val, 3600000)) > 0) {
			o.deadline_ms = v;
		} else {
			return usage(val ? "bad option or value" : "bad or incomplete option");
		}
		i++;
	}
	if (!remote || seconds < 0)
		return usage("--remote and --seconds are needed");
	ret = idgen_client_new(remote, &o, &c);
	if (ret) {
		fprintf(stderr, "mint_soak: %s\n", idgen_client_last_error());
		return 2;
	}
	start = mono_ns();
	end = start + (uint64_t)seconds * 1000000000;
	for (t0 = start; t0 < end; t0 = mono_ns()) {
		ret = idgen_client_next(c, &id);
		t1 = mono_ns();
		if (ret) {
			printf("# error %d %s\n", -ret, idgen_client_last_error());
			failed = 1;
		} else {
			printf("%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", t0 - start, t1 - t0, id);
		}
	}
	idgen_client_stats(c, &st, sizeof(st));
	printf("# stats calls=%" PRIu64 " retries=%" PRIu64 " timeouts=%" PRIu64
	       " skipped=%" PRIu64 " buffer_hits=%" PRIu64 " failed=%" PRIu64
	       " stale_dropped=%" PRIu64 " connect_errors=%" PRIu64 " http_errors=%" PRIu64
	       " bad_answers=%" PRIu64 " abandoned=%" PRIu64 " loop_late_max_us=%" PRIu64 "\n",
	       st.calls, st.retries, st.timeouts, st.hosts_skipped, st.buffer_hits,
	       st.calls_failed, st.stale_dropped, st.connect_errors, st.http_errors,
	       st.bad_answers, st.abandoned, st.loop_late_max_us);
	idgen_client_free(c);
	if (fflush(stdout) || ferror(stdout))
		return 1;
	return failed;
}

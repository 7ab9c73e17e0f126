// SPDX-License-Identifier: GPL-2.0
/*
 * client_bench --remote URL[,URL...] --seconds S [--buffer N] [--rate R]
 *              [--per-try-ms MS] [--ca-file PEM]
 *
 * idgen_client_next() from one thread for S seconds after half a second
 * of warm-up (connections made, the buffer filled): as fast as it goes, or
 * with --rate at R calls per second on a fixed schedule.  Each call's own
 * latency is measured.  Prints one line for scripts/bench/bench-client.sh:
 *
 *   calls=N calls_per_s=N p50_us= p99_us= p999_us= max_us= hit_pct= errors=N
 *   timeouts=N retries=N skipped=N stale=N
 *
 * hit_pct: the share of calls answered from the buffer without waiting.
 * --ca-file: the CA that https:// hosts' certificates are checked against
 * (scripts/bench/bench-tls.sh's, made for the run).
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

static void sleep_until(uint64_t t)
{
	struct timespec ts = { t / 1000000000, t % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char *argv[])
{
	struct idgen_client_options o;
	struct idgen_client_stats s0, s1;
	struct idgen_client *c;
	const char *remote = NULL;
	double seconds = 0, rate = 0;
	uint64_t *lat, n = 0, cap, errors = 0, start, end, t0, id, due;
	int i;

	idgen_client_options_init(&o);
	o.buffer_size = 0;
	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--remote"))
			remote = argv[i + 1];
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--buffer"))
			o.buffer_size = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--rate"))
			rate = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--per-try-ms"))
			o.per_try_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--ca-file"))
			o.ca_file = argv[i + 1];
		else
			break;
	}
	if (!remote || seconds <= 0 || i != argc) {
		fprintf(stderr, "usage: client_bench --remote URL[,URL...] --seconds S "
			"[--buffer N] [--rate R] [--per-try-ms MS] [--ca-file PEM]\n");
		return 2;
	}
	if (idgen_client_new(remote, &o, &c)) {
		fprintf(stderr, "client_bench: %s\n", idgen_client_last_error());
		return 2;
	}
	/* Warm-up: connections, and the buffer full. */
	for (start = mono_ns(); mono_ns() - start < 500000000;)
		if (idgen_client_next(c, &id))
			errors++;
	errors = 0;
	cap = rate > 0 ? (uint64_t)(rate * seconds) + 16 : 1 << 20;
	lat = malloc(cap * sizeof(*lat));
	if (!lat)
		return 2;
	idgen_client_stats(c, &s0, sizeof(s0));
	start = mono_ns();
	end = start + (uint64_t)(seconds * 1e9);
	for (due = start; n < cap; ) {
		if (rate > 0) {
			sleep_until(due);
			due += (uint64_t)(1e9 / rate);
		}
		t0 = mono_ns();
		if (t0 >= end)
			break;
		if (idgen_client_next(c, &id))
			errors++;
		lat[n++] = mono_ns() - t0;
	}
	end = mono_ns();
	idgen_client_stats(c, &s1, sizeof(s1));
	idgen_client_free(c);
	if (!n)
		return 1;
	qsort(lat, n, sizeof(*lat), cmp);
	printf("calls=%" PRIu64 " calls_per_s=%.0f p50_us=%.1f p99_us=%.1f p999_us=%.1f "
	       "max_us=%.1f hit_pct=%.1f errors=%" PRIu64 " timeouts=%" PRIu64
	       " retries=%" PRIu64 " skipped=%" PRIu64 " stale=%" PRIu64 "\n",
	       n, n / ((end - start) / 1e9), lat[n / 2] / 1e3, lat[n * 99 / 100] / 1e3,
	       lat[n * 999 / 1000] / 1e3, lat[n - 1] / 1e3,
	       100.0 * (s1.buffer_hits - s0.buffer_hits) / (s1.calls - s0.calls), errors,
	       s1.timeouts - s0.timeouts, s1.retries - s0.retries,
	       s1.hosts_skipped - s0.hosts_skipped, s1.stale_dropped - s0.stale_dropped);
	free(lat);
	return 0;
}

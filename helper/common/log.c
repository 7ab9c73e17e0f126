// SPDX-License-Identifier: GPL-2.0
/*
 * Log lines for an operator: one per event, on stderr; at most one per
 * kind and LOG_RATELIMIT_S for the kinds that come in floods (log.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* program_invocation_short_name */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

/* Until log_init(): the name the program was run by. */
static const char *log_prog;
static int log_journal;

static const char *const prio_name[] = {
	[LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
	[LOG_ERR] = "error", [LOG_WARNING] = "warning",
	[LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_init(const char *prog)
{
	log_prog = prog;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
	setvbuf(stderr, NULL, _IOLBF, 0);
}

void log_msg(int prio, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_journal)
		fprintf(stderr, "<%d>%s\n", prio, line);
	else
		fprintf(stderr, "%s: %s: %s\n", log_prog ? log_prog : program_invocation_short_name,
			prio_name[prio & 7], line);
}

static long long mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void vratelimited(struct log_ratelimit *rl, int prio, const char *fmt,
			 va_list ap)
{
	long long now = mono_ms(), then = atomic_load(&rl->last_ms);
	unsigned long skipped;
	char line[768];

	if (!now)
		now = 1;	/* 0 is "no line yet" */
	/* One thread takes the slot; the others count themselves out. */
	if ((then && now - then < LOG_RATELIMIT_S * 1000LL) ||
	    !atomic_compare_exchange_strong(&rl->last_ms, &then, now)) {
		atomic_fetch_add(&rl->skipped, 1);
		return;
	}
	skipped = atomic_exchange(&rl->skipped, 0);
	vsnprintf(line, sizeof(line), fmt, ap);
	if (skipped)
		log_msg(prio, "%s (and %lu more like it since that line)", line,
			skipped);
	else
		log_msg(prio, "%s (lines like it: at most one every %d s)", line,
			LOG_RATELIMIT_S);
}

void log_ratelimited(struct log_ratelimit *rl, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vratelimited(rl, prio, fmt, ap);
	va_end(ap);
}

void log_ratelimited_by(int prio, const char *key, const char *fmt, ...)
{
	static struct {
		char key[LOG_RATELIMIT_KEY + 1];
		struct log_ratelimit rl;
	} kinds[LOG_RATELIMIT_KINDS];
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	va_list ap;
	size_t i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < LOG_RATELIMIT_KINDS - 1; i++)
		if (!kinds[i].key[0] || !strncmp(kinds[i].key, key, LOG_RATELIMIT_KEY))
			break;		/* the last slot: every kind past the rest */
	if (!kinds[i].key[0])
		snprintf(kinds[i].key, sizeof(kinds[i].key), "%s", key);
	pthread_mutex_unlock(&lock);

	va_start(ap, fmt);
	vratelimited(&kinds[i].rl, prio, fmt, ap);
	va_end(ap);
}

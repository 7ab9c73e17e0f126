// SPDX-License-Identifier: GPL-2.0
/*
 * Log lines for an operator: one per event, on stderr.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* program_invocation_short_name */
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One line per event on stderr.  Under systemd (JOURNAL_STREAM set) each
 * line starts with its syslog priority, "<3>", which journald reads;
 * elsewhere with the program name and the priority's name.  The one
 * rate-limited logger of the programs is here too.
 */
#ifndef COMMON_LOG_H
#define COMMON_LOG_H

#include <syslog.h>

void log_init(const char *prog);
void log_msg(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_alert(...)	log_msg(LOG_ALERT, __VA_ARGS__)
#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)	log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)

/*
 * Lines that come in floods (refused connections, refusals to mint):
 * at most one line of a kind every LOG_RATELIMIT_S seconds, the first
 * saying so and each later one how many of its kind were left out since
 * the line before.  Thread-safe, and without a lock for a kind of its own.
 *
 * A kind known in advance has its state, static or one of an array:
 *
 *	static struct log_ratelimit refused[NR_REASONS];
 *	log_ratelimited(&refused[r], LOG_WARNING, "refused: %s", why);
 *
 * A kind known only when it comes (a library's message) is named by a
 * key instead, whose first LOG_RATELIMIT_KEY bytes count; past
 * LOG_RATELIMIT_KINDS keys, the later ones share one state:
 *
 *	log_ratelimited_by(LOG_INFO, "framing", "%s: a request with %s",
 *			   addr, what);
 */
#define LOG_RATELIMIT_S		10
#define LOG_RATELIMIT_KEY	40
#define LOG_RATELIMIT_KINDS	32

struct log_ratelimit {
	_Atomic long long last_ms;	/* CLOCK_MONOTONIC; 0: no line yet */
	_Atomic unsigned long skipped;	/* left out since that line */
};

void log_ratelimited(struct log_ratelimit *rl, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_ratelimited_by(int prio, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* COMMON_LOG_H */

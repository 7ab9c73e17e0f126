/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One line per event on stderr.  Under systemd (JOURNAL_STREAM set) each
 * line starts with its syslog priority, "<3>", which journald reads;
 * elsewhere with the program name and the priority's name.
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

#endif /* COMMON_LOG_H */

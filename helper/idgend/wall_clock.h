/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host's wall clock as the lease logic needs it: now, in ms since the
 * idgen epoch, and whether NTP (or the like) says it is synchronised.
 */
#ifndef IDGEND_WALL_CLOCK_H
#define IDGEND_WALL_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

struct clock_ops {
	uint64_t (*now_ms)(void *ctx);
	/* adjtimex(): neither TIME_ERROR nor STA_UNSYNC. */
	bool (*synced)(void *ctx);
	/*
	 * Sleep; returns non-zero at once when the daemon is asked to stop
	 * (the request stays pending for the main loop).
	 */
	int (*sleep_ms)(void *ctx, uint64_t ms);
};

/* The real clock; ctx is a struct system_clock. */
struct system_clock {
	int stop_fd;	/* readable when asked to stop (a signalfd), or -1 */
};

extern const struct clock_ops system_clock_ops;

#endif /* IDGEND_WALL_CLOCK_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * The host's wall clock, and whether NTP says it can be trusted.
 */
#include <errno.h>
#include <poll.h>
#include <sys/timex.h>
#include <time.h>

#include <linux/idgen.h>

#include "wall_clock.h"

static uint64_t system_now_ms(void *ctx)
{
	struct timespec ts;
	uint64_t ms;

	(void)ctx;
	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	return ms > IDGEN_EPOCH_UNIX_MS ? ms - IDGEN_EPOCH_UNIX_MS : 0;
}

/* As ntp_gettime(3) and timedatectl read it. */
static bool system_synced(void *ctx)
{
	struct timex tx = { .modes = 0 };
	int state;

	(void)ctx;
	state = adjtimex(&tx);
	return state >= 0 && state != TIME_ERROR && !(tx.status & STA_UNSYNC);
}

static int system_sleep_ms(void *ctx, uint64_t ms)
{
	struct system_clock *c = ctx;
	struct timespec end, now;
	struct pollfd pfd;
	int64_t left;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (ms % 1000) * 1000000;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = (end.tv_sec - now.tv_sec) * 1000 +
		       (end.tv_nsec - now.tv_nsec) / 1000000;
		if (left <= 0)
			return 0;
		pfd.fd = c ? c->stop_fd : -1;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, left) > 0)
			return 1;	/* a stop request; left for the main loop */
	}
}

const struct clock_ops system_clock_ops = {
	.now_ms = system_now_ms,
	.synced = system_synced,
	.sleep_ms = system_sleep_ms,
};

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CLOCK_MONOTONIC in nanoseconds: the clock of the service's quotas,
 * deadlines and timeouts, which no step of the wall clock moves.
 */
#ifndef COMMON_MONOTONIC_H
#define COMMON_MONOTONIC_H

#include <stdint.h>
#include <time.h>

static inline uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

#endif /* COMMON_MONOTONIC_H */

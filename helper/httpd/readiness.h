/* SPDX-License-Identifier: GPL-2.0 */
/*
 * GET /readyz: whether this host should get traffic, and if not, why.
 * Ready only while all of these hold (Documentation/design.md section 9):
 *
 *   no_lease              the generator holds a lease
 *   lease_expiring        ... with more than margin_ms left before its fence
 *                         (one renewal period of idgend: a host that missed
 *                         a renewal leaves the rotation before its fence)
 *   clock_unsynchronised  adjtimex(2): neither TIME_ERROR nor STA_UNSYNC
 *   clock_offset          ... and |offset| below max_offset_us
 *   clock_before_floor    the wall clock is past the lease's floor
 *
 * With check_clock false the two clock conditions are not asked (a host
 * without NTP, or a test); the others always are.
 */
#ifndef HTTPD_READINESS_H
#define HTTPD_READINESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "minter.h"

struct clock_reading {
	bool synced;
	int64_t offset_us;
	uint64_t maxerror_us;
};

/* adjtimex(2) with no change; -errno if it fails. */
int clock_read(struct clock_reading *c);

struct readiness_config {
	uint64_t margin_ms;
	uint64_t max_ahead_ms;		/* 0: the module's max_borrow_ms */
	bool check_clock;
	uint64_t max_offset_us;
};

/*
 * The JSON answer into buf: {"ready":true,"reasons":[]} or
 * {"ready":false,"reasons":[{"code":"...","message":"..."},...]}, with
 * ,"generator":"simulated" before the last brace when the generator is
 * libidgen's simulation, never to be mistaken for a device.
 * Returns whether ready; *len is the answer's length (truncated to
 * size - 1 at worst, with size >= 1024 always enough).
 */
bool readiness_check(const struct readiness_config *cfg, struct minter *m,
		     char *buf, size_t size, size_t *len);

#endif /* HTTPD_READINESS_H */

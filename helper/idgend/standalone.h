/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Standalone mode: one host, no etcd, a fixed region and worker from the
 * configuration.  What etcd's record does for the cluster, the state file
 * does for the host: it holds the highest fence ever pushed, written and
 * fsynced before each push, so after a crash, a reboot or a module reload
 * the generator's floor is above every millisecond it ever used.
 */
#ifndef IDGEND_STANDALONE_H
#define IDGEND_STANDALONE_H

#include <stdbool.h>
#include <stdint.h>

#include "wall_clock.h"
#include "device.h"

struct standalone {
	uint32_t region;
	uint32_t worker;
	uint64_t lease_ms;
	const char *state_file;
	bool fresh_state;		/* --fresh-state: a missing file is fine */
	const struct device *dev;
	const struct clock_ops *clock;
	void *clock_ctx;

	bool held;
	uint64_t floor_ms;
	uint64_t pushed_ms;
};

/*
 * Adopt the generator's lease if it holds ours; else wait until the clock
 * is past the stored fence (and past the epoch) and push a new lease above
 * it.  0, -EINTR when asked to stop while waiting, or an error (logged).
 * Errors a restart cannot mend: -ERANGE when region or worker do not fit
 * the generator's layout, -EBADMSG for a state file that is not one,
 * -ENOENT for one missing where it should be (see read_state()).
 */
int standalone_start(struct standalone *s);

/* Store the new fence durably, then push it.  0 or an error (logged). */
int standalone_renew(struct standalone *s);

/* Revoke; store the last ms the generator returns.  0 or an error. */
int standalone_stop(struct standalone *s);

#endif /* IDGEND_STANDALONE_H */

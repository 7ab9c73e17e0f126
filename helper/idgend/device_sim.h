/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A simulated generator for tests on a host whose kernel must not load
 * idgen.ko: the lease it holds lives in <file>, so it outlives a daemon
 * as the module does, and every push and revoke is appended to
 * <file>.log as one line:
 *
 *   <ms> push r=<region> w=<worker> floor=<ms> until=<ms> layout=<R/W/S>
 *   <ms> revoke last=<ms>
 *   <ms> revoke-idle last=<ms>     (no lease held: succeeds, as the module)
 *
 * A push is logged before it takes effect and a revoke after, so the log
 * bounds what the generator could ever have minted, even for a daemon
 * killed in the middle of either.
 *
 * It checks a push as the module does (F4) and takes every millisecond up
 * to now (below the fence) as minted, the worst case for the next holder.
 * A lease is a renewal only for the same region, worker and layout.
 */
#ifndef IDGEND_DEVICE_SIM_H
#define IDGEND_DEVICE_SIM_H

#include "device.h"

int device_sim_open(struct device *dev, const char *file,
		    const struct lease_layout *layout);
void device_sim_close(struct device *dev);

#endif /* IDGEND_DEVICE_SIM_H */

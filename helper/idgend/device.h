/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The generator as the daemon drives it: push a lease (set or renew),
 * revoke it, and ask what lease it holds.  device.c does this with the
 * ioctls of /dev/idgen, or libidgen's simulated generator with its lease in
 * a file (idgen_sim_open(), "sim:FILE"), for tests on a host whose kernel
 * must not load the module.
 */
#ifndef IDGEND_DEVICE_H
#define IDGEND_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "idgen.h"
#include "layout.h"

/*
 * All return 0 or a negative errno (those of include/uapi/linux/idgen.h:
 * -EINVAL for a lease the generator refuses, -ENODEV when the module is
 * gone, -EPERM without CAP_SYS_ADMIN).  Revoke without a lease succeeds
 * and returns the host's last ms, as the module does.
 */
struct device_ops {
	/* Set, or renew when region and worker are those held; synced sets
	 * IDGEN_LEASE_CLOCK_SYNCED. */
	int (*push)(void *ctx, uint32_t region, uint32_t worker,
		    uint64_t floor_ms, uint64_t valid_until_ms, bool synced);
	/* Stop minting under the lease; *last_ms bounds every ID minted. */
	int (*revoke)(void *ctx, uint64_t *last_ms);
	/* What the generator holds now, as libidgen reads the module's. */
	int (*held)(void *ctx, struct idgen_device_state *out);
};

struct device {
	const struct device_ops *ops;
	void *ctx;
};

static inline bool device_leased(const struct idgen_device_state *st)
{
	return st->flags & LIBIDGEN_STATE_LEASED;
}

/*
 * "/dev/idgen" (or another path of the device), or "sim:<file>" for the
 * simulation.  Every lease is pushed with *layout (copied), never with the
 * module's load-time default.  Returns 0 or a negative errno, with a log
 * line naming the path.
 */
int device_open(struct device *dev, const char *spec,
		const struct lease_layout *layout);
void device_close(struct device *dev);

#endif /* IDGEND_DEVICE_H */

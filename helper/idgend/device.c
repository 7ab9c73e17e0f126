// SPDX-License-Identifier: GPL-2.0
/*
 * The generator behind /dev/idgen, through libidgen's calls for its ioctls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "device_sim.h"
#include "log.h"

struct module_dev {
	int fd;
	struct idgen_layout layout;	/* widths only */
};

static int module_push(void *ctx, uint32_t region, uint32_t worker,
		       uint64_t floor_ms, uint64_t valid_until_ms, bool synced)
{
	struct module_dev *d = ctx;

	return idgen_device_set_lease(d->fd, region, worker, floor_ms,
				      valid_until_ms, &d->layout,
				      synced ? LIBIDGEN_LEASE_CLOCK_SYNCED : 0);
}

static int module_revoke(void *ctx, uint64_t *last_ms)
{
	struct module_dev *d = ctx;

	return idgen_device_revoke(d->fd, last_ms);
}

static int module_held(void *ctx, struct idgen_device_state *out)
{
	struct module_dev *d = ctx;

	return idgen_device_get_state(d->fd, out);
}

static const struct device_ops module_device_ops = {
	.push = module_push,
	.revoke = module_revoke,
	.held = module_held,
};

int device_open(struct device *dev, const char *spec,
		const struct lease_layout *layout)
{
	struct module_dev *d;
	int err;

	if (!strncmp(spec, "sim:", 4))
		return device_sim_open(dev, spec + 4, layout);

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->fd = idgen_open(spec, 0);
	if (d->fd < 0) {
		err = d->fd;
		log_err("cannot open the generator %s: %s%s", spec,
			strerror(-err), err == -ENOENT ?
			" (is idgen.ko loaded? 'modprobe idgen')" : "");
		free(d);
		return err;
	}
	d->layout.region_bits = layout->region_bits;
	d->layout.worker_bits = layout->worker_bits;
	d->layout.seq_bits = layout->seq_bits;
	dev->ops = &module_device_ops;
	dev->ctx = d;
	return 0;
}

void device_close(struct device *dev)
{
	struct module_dev *d = dev->ctx;

	if (!d)
		return;
	if (dev->ops == &module_device_ops) {
		idgen_close(d->fd);
		free(d);
	} else {
		device_sim_close(dev);
	}
	dev->ctx = NULL;
}

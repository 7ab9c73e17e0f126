// SPDX-License-Identifier: GPL-2.0
/*
 * The generator as idgend drives it: libidgen's one handle, /dev/idgen's
 * ioctls or the simulation's lease side kept in a file ("sim:FILE").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "log.h"

/* A generator and the layout every lease is pushed with. */
struct gen_dev {
	struct idgen_generator *gen;
	struct idgen_layout layout;	/* widths only */
};

static int gen_push(void *ctx, uint32_t region, uint32_t worker,
		    uint64_t floor_ms, uint64_t valid_until_ms, bool synced)
{
	struct gen_dev *d = ctx;

	return idgen_generator_set_lease(d->gen, region, worker, floor_ms,
					 valid_until_ms, &d->layout,
					 synced ? LIBIDGEN_LEASE_CLOCK_SYNCED : 0);
}

static int gen_revoke(void *ctx, uint64_t *last_ms)
{
	struct gen_dev *d = ctx;

	return idgen_generator_revoke(d->gen, last_ms);
}

static int gen_held(void *ctx, struct idgen_device_state *out)
{
	struct gen_dev *d = ctx;

	return idgen_generator_get_state(d->gen, out);
}

static const struct device_ops generator_device_ops = {
	.push = gen_push,
	.revoke = gen_revoke,
	.held = gen_held,
};

int device_open(struct device *dev, const char *spec,
		const struct lease_layout *layout)
{
	struct gen_dev *d;
	char why[512];
	int err;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	/*
	 * idgend holds the lease side of a host, "sim:FILE" for the
	 * simulation, never a node of its own ("sim", "sim:N"); and leases
	 * go only to idgen's device, by what it is, not its path.
	 */
	err = idgen_generator_open(spec, LIBIDGEN_GENERATOR_SIM_FILE, 0, &d->gen,
				   why, sizeof(why));
	if (err) {
		/* The device's open failed, as open(2) says: not a refusal of it. */
		if (!idgen_sim_is_spec(spec) && err != -ENOTTY && err != -EIO)
			log_err("cannot open the generator %s: %s%s", spec,
				strerror(-err), err == -ENOENT ?
				" (is idgen.ko loaded? 'modprobe idgen')" : "");
		else
			log_err("cannot use the generator %s: %s", spec, why);
		free(d);
		return err;
	}
	d->layout.region_bits = layout->region_bits;
	d->layout.worker_bits = layout->worker_bits;
	d->layout.seq_bits = layout->seq_bits;
	dev->ops = &generator_device_ops;
	dev->ctx = d;
	return 0;
}

void device_close(struct device *dev)
{
	struct gen_dev *d = dev->ctx;

	if (!d)
		return;
	idgen_generator_close(d->gen);
	free(d);
	dev->ctx = NULL;
}

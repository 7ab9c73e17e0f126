// SPDX-License-Identifier: GPL-2.0
/*
 * The generator behind /dev/idgen, through libidgen's calls for its ioctls,
 * or libidgen's simulated one, its lease kept in a file (idgen_sim_open()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "log.h"
#include "sim_spec.h"

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

struct sim_dev {
	struct idgen_sim *sim;
	struct idgen_layout layout;	/* widths only */
};

static int sim_push(void *ctx, uint32_t region, uint32_t worker,
		    uint64_t floor_ms, uint64_t valid_until_ms, bool synced)
{
	struct sim_dev *d = ctx;

	return idgen_sim_set_lease(d->sim, region, worker, floor_ms, valid_until_ms,
				   &d->layout, synced ? LIBIDGEN_LEASE_CLOCK_SYNCED : 0);
}

static int sim_revoke(void *ctx, uint64_t *last_ms)
{
	struct sim_dev *d = ctx;

	return idgen_sim_revoke(d->sim, last_ms);
}

static int sim_held(void *ctx, struct idgen_device_state *out)
{
	struct sim_dev *d = ctx;

	return idgen_sim_get_state(d->sim, out);
}

static const struct device_ops sim_device_ops = {
	.push = sim_push,
	.revoke = sim_revoke,
	.held = sim_held,
};

/* "sim:FILE": the lease side of a host, in a file. */
static int sim_open(struct device *dev, const char *spec,
		    const struct lease_layout *layout)
{
	struct sim_dev *d;
	char why[512];
	int err;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = idgen_sim_open(spec, 0, &d->sim, why, sizeof(why));
	if (err) {
		log_err("%s", why);
		free(d);
		return err;
	}
	d->layout.region_bits = layout->region_bits;
	d->layout.worker_bits = layout->worker_bits;
	d->layout.seq_bits = layout->seq_bits;
	dev->ops = &sim_device_ops;
	dev->ctx = d;
	return 0;
}

int device_open(struct device *dev, const char *spec,
		const struct lease_layout *layout)
{
	struct idgen_sim_spec sim;
	struct module_dev *d;
	char why[256];
	int err;

	/*
	 * libidgen's one reading of a simulation's spec.  idgend holds the
	 * lease side of a host, never a node of its own ("sim", "sim:N").
	 */
	err = idgen_sim_spec_parse(spec, &sim, why, sizeof(why));
	if (!err && sim.kind == IDGEN_SIM_WORKER) {
		snprintf(why, sizeof(why), "idgend takes a simulation's lease side, "
			 "sim:FILE, not a node of its own (sim or sim:WORKER; a "
			 "file named by digits is sim:./FILE)");
		err = -EINVAL;
	}
	if (err) {
		log_err("cannot use the generator %s: %s", spec, why);
		return err;
	}
	if (sim.kind == IDGEN_SIM_FILE)
		return sim_open(dev, spec, layout);

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	/* Leases go only to idgen's device, by what it is, not its path. */
	d->fd = idgen_open(spec, LIBIDGEN_VERIFY);
	if (d->fd < 0) {
		err = d->fd;
		if (err == -ENOTTY || err == -EIO)
			log_err("cannot use the generator %s: not an idgen device (%s)", spec,
				err == -EIO ? "its state is one no idgen module reports" :
				"not idgen's character device, or no answer to its state request");
		else
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
		struct sim_dev *sd = dev->ctx;

		idgen_sim_close(sd->sim);
		free(sd);
	}
	dev->ctx = NULL;
}

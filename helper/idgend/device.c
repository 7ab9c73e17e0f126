// SPDX-License-Identifier: GPL-2.0
/*
 * The generator behind /dev/idgen, driven through its ioctls.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/idgen.h>

#include "device.h"
#include "device_sim.h"
#include "log.h"

struct idgen_dev {
	int fd;
	struct lease_layout layout;
};

static int ioctl_errno(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static int idgen_push(void *ctx, uint32_t region, uint32_t worker,
		      uint64_t floor_ms, uint64_t valid_until_ms, bool synced)
{
	struct idgen_dev *d = ctx;
	struct idgen_lease_args args;

	memset(&args, 0, sizeof(args));
	args.floor_ms = floor_ms;
	args.valid_until_ms = valid_until_ms;
	args.region = region;
	args.worker = worker;
	args.flags = synced ? IDGEN_LEASE_CLOCK_SYNCED : 0;
	args.region_bits = d->layout.region_bits;
	args.worker_bits = d->layout.worker_bits;
	args.seq_bits = d->layout.seq_bits;
	return ioctl_errno(d->fd, IDGEN_IOC_SET_LEASE, &args);
}

static int idgen_revoke(void *ctx, uint64_t *last_ms)
{
	struct idgen_dev *d = ctx;
	__u64 last = 0;
	int err;

	err = ioctl_errno(d->fd, IDGEN_IOC_REVOKE, &last);
	*last_ms = last;
	return err;
}

static int idgen_held(void *ctx, struct device_held *out)
{
	struct idgen_dev *d = ctx;
	struct idgen_state st;
	int err;

	memset(&st, 0, sizeof(st));
	err = ioctl_errno(d->fd, IDGEN_IOC_GET_STATE, &st);
	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	out->leased = st.flags & IDGEN_STATE_LEASED;
	out->region = st.region;
	out->worker = st.worker;
	out->floor_ms = st.floor_ms;
	out->valid_until_ms = st.valid_until_ms;
	out->last_ms = st.last_ms;
	out->now_ms = st.now_ms;
	out->region_bits = st.region_bits;
	out->worker_bits = st.worker_bits;
	return 0;
}

static const struct device_ops idgen_device_ops = {
	.push = idgen_push,
	.revoke = idgen_revoke,
	.held = idgen_held,
};

int device_open(struct device *dev, const char *spec,
		const struct lease_layout *layout)
{
	struct idgen_dev *d;
	int err;

	if (!strncmp(spec, "sim:", 4))
		return device_sim_open(dev, spec + 4, layout);

	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->fd = open(spec, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0) {
		err = -errno;
		log_err("cannot open the generator %s: %s%s", spec,
			strerror(-err), err == -ENOENT ?
			" (is idgen.ko loaded? 'modprobe idgen')" : "");
		free(d);
		return err;
	}
	d->layout = *layout;
	dev->ops = &idgen_device_ops;
	dev->ctx = d;
	return 0;
}

void device_close(struct device *dev)
{
	struct idgen_dev *d = dev->ctx;

	if (!d)
		return;
	if (dev->ops == &idgen_device_ops) {
		close(d->fd);
		free(d);
	} else {
		device_sim_close(dev);
	}
	dev->ctx = NULL;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The generator behind the service (minter.h): /dev/idgen through
 * libidgen, or libidgen's simulated one (idgen_sim_open(), "sim:WORKER").
 */
#include <errno.h>
#include <inttypes.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idgen.h"
#include "log.h"
#include "minter.h"
#include "sim_spec.h"

struct device {
	int fd;
};

static ssize_t sim_mint(void *ctx, uint64_t *ids, size_t n)
{
	return idgen_sim_mint(ctx, ids, n);
}

static int sim_state(void *ctx, struct minter_state *out)
{
	struct idgen_device_state st;
	int ret;

	ret = idgen_sim_get_state(ctx, &st);
	if (ret)
		return ret;
	out->region = st.region;
	out->worker = st.worker;
	out->floor_ms = st.floor_ms;
	out->valid_until_ms = st.valid_until_ms;
	/* Its clock: the wall clock, which it trusts (the module's now_ms). */
	out->now_ms = st.now_ms;
	out->wall_ms = st.wall_ms;
	/* In force while it can still mint: its next ms lies below the fence. */
	out->leased = (st.flags & LIBIDGEN_STATE_LEASED) &&
		      st.next_ms < st.valid_until_ms;
	return 0;
}

static int sim_counters(void *ctx, struct idgen_device_state *c)
{
	return idgen_sim_get_state(ctx, c);
}

static int sim_layout(void *ctx, struct idgen_layout *out)
{
	(void)ctx;
	*out = idgen_layout_v1;
	out->version = 0;	/* as the device's: widths only */
	return 0;
}

/* The count tells a test that refused requests consumed no ID. */
static void sim_close(void *ctx)
{
	struct idgen_device_state st;

	if (!idgen_sim_get_state(ctx, &st))
		log_info("simulated generator: %" PRIu64 " IDs minted", st.ids);
	idgen_sim_close(ctx);
}

static const struct minter_ops sim_ops = {
	.mint = sim_mint,
	.state = sim_state,
	.counters = sim_counters,
	.layout = sim_layout,
	.close = sim_close,
};

static int sim_open(struct minter *m, uint32_t worker, uint64_t lease_ms,
		    char *err, size_t errlen)
{
	struct idgen_sim *s;
	char spec[16];
	int ret;

	snprintf(spec, sizeof(spec), "sim:%" PRIu32, worker);
	ret = idgen_sim_open(spec, lease_ms, &s, err, errlen);
	if (ret)
		return ret;
	m->ops = &sim_ops;
	m->ctx = s;
	snprintf(m->name, sizeof(m->name), "sim:%" PRIu32, worker);
	m->simulated = true;
	m->sim_worker = worker;
	return 0;
}

static ssize_t device_mint(void *ctx, uint64_t *ids, size_t n)
{
	struct device *d = ctx;

	return idgen_mint(d->fd, ids, n);
}

/* IDGEN_IOC_GET_STATE needs no privilege: any reader of the device. */
static int device_state(void *ctx, struct minter_state *out)
{
	struct device *d = ctx;
	struct idgen_device_state st;
	int ret;

	ret = idgen_device_get_state(d->fd, &st);
	if (ret)
		return ret;
	out->leased = st.flags & LIBIDGEN_STATE_LEASED;
	out->region = st.region;
	out->worker = st.worker;
	out->floor_ms = st.floor_ms;
	out->valid_until_ms = st.valid_until_ms;
	out->now_ms = st.now_ms;
	out->wall_ms = st.wall_ms;
	out->next_ms = st.next_ms;
	out->max_lead_ms = st.max_lead_ms;
	out->step_held = st.flags & LIBIDGEN_STATE_CLOCK_HELD;
	out->held_step_ms = st.held_step_ms;
	return 0;
}

/* The same IDGEN_IOC_GET_STATE: the counters come with the state. */
static int device_counters(void *ctx, struct idgen_device_state *c)
{
	struct device *d = ctx;

	return idgen_device_get_state(d->fd, c);
}

static int device_layout(void *ctx, struct idgen_layout *out)
{
	struct device *d = ctx;

	return idgen_device_layout(d->fd, out);
}

static void device_close(void *ctx)
{
	struct device *d = ctx;

	idgen_close(d->fd);
	free(d);
}

static const struct minter_ops device_ops = {
	.mint = device_mint,
	.state = device_state,
	.counters = device_counters,
	.layout = device_layout,
	.close = device_close,
};

int minter_open(struct minter *m, const char *spec, uint64_t sim_lease_ms,
		char *err, size_t errlen)
{
	struct idgen_sim_spec sim;
	struct device *d;
	char why[512];
	int fd, ret;

	memset(m, 0, sizeof(*m));
	ret = idgen_sim_spec_parse(spec, &sim, why, sizeof(why));
	if (ret || sim.kind != IDGEN_SIM_NONE) {
		/* A node of its own, "sim" or "sim:WORKER": not the file form. */
		if (!ret && sim.kind == IDGEN_SIM_FILE) {
			snprintf(why, sizeof(why), "the simulation's worker must be a "
				 "decimal number from 0 to %u",
				 (1U << IDGEN_SIM_WORKER_BITS) - 1);
			ret = -EINVAL;
		}
		if (!ret)
			ret = sim_open(m, sim.worker, sim_lease_ms, why, sizeof(why));
		if (ret)
			snprintf(err, errlen, "device '%s': %s", spec, why);
		return ret;
	}
	/*
	 * Only idgen's device, told by what it is and not by its path
	 * (libidgen's one rule), and found now, not at the first request.
	 * Blocking once open: the generator sleeps only for short, bounded
	 * waits.
	 */
	fd = idgen_open(spec, LIBIDGEN_VERIFY);
	if (fd == -ENOTTY || fd == -EIO) {
		snprintf(err, errlen, "device '%s': not an idgen device (%s)",
			 spec ? spec : LIBIDGEN_DEVICE, fd == -EIO ?
			 "its state is one no idgen module reports" :
			 "not idgen's character device, or no answer to its state request");
		return fd;
	}
	if (fd < 0) {
		/* Only /dev/idgen missing says the module is not loaded. */
		if (fd == -ENOENT && spec && strcmp(spec, LIBIDGEN_DEVICE))
			snprintf(err, errlen, "device '%s': no such file", spec);
		else
			snprintf(err, errlen, "device '%s': %s",
				 spec ? spec : LIBIDGEN_DEVICE,
				 idgen_strerror(fd) ? idgen_strerror(fd) : strerror(-fd));
		return fd;
	}
	d = malloc(sizeof(*d));
	if (!d) {
		idgen_close(fd);
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	d->fd = fd;
	m->ops = &device_ops;
	m->ctx = d;
	snprintf(m->name, sizeof(m->name), "%s", spec ? spec : LIBIDGEN_DEVICE);
	return 0;
}

void minter_close(struct minter *m)
{
	if (m->ops)
		m->ops->close(m->ctx);
	m->ops = NULL;
}

int minter_mint_all(struct minter *m, uint64_t *ids, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		r = m->ops->mint(m->ctx, ids + got, n - got);
		if (r < 0)
			return r;
		got += r;
	}
	return 0;
}

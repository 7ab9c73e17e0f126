// SPDX-License-Identifier: GPL-2.0
/*
 * The generator behind the service (minter.h): libidgen's one handle,
 * /dev/idgen or its simulated node ("sim:WORKER").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idgen.h"
#include "log.h"
#include "minter.h"

/*
 * The one implementation of minter_ops (the tests' fakes are the others):
 * libidgen's generator, which is the device or the simulation.
 */
static ssize_t gen_mint(void *ctx, uint64_t *ids, size_t n)
{
	return idgen_generator_mint(ctx, ids, n);
}

/* IDGEN_IOC_GET_STATE needs no privilege: any reader of the device. */
static int gen_state(void *ctx, struct minter_state *out)
{
	struct idgen_device_state st;
	int ret;

	ret = idgen_generator_get_state(ctx, &st);
	if (ret)
		return ret;
	out->region = st.region;
	out->worker = st.worker;
	out->floor_ms = st.floor_ms;
	out->valid_until_ms = st.valid_until_ms;
	out->now_ms = st.now_ms;
	out->wall_ms = st.wall_ms;
	if (idgen_generator_simulated(ctx)) {
		/*
		 * In force while it can still mint: its next ms lies below
		 * the fence.  Its lead is not the module's, and readiness's
		 * clock rule is the module's alone (next_ms, max_lead_ms and
		 * the held step stay 0).
		 */
		out->leased = (st.flags & LIBIDGEN_STATE_LEASED) &&
			      st.next_ms < st.valid_until_ms;
		return 0;
	}
	out->leased = st.flags & LIBIDGEN_STATE_LEASED;
	out->next_ms = st.next_ms;
	out->max_lead_ms = st.max_lead_ms;
	out->step_held = st.flags & LIBIDGEN_STATE_CLOCK_HELD;
	out->held_step_ms = st.held_step_ms;
	return 0;
}

/* The same state: the counters come with it (the simulation's ids alone). */
static int gen_counters(void *ctx, struct idgen_device_state *c)
{
	return idgen_generator_get_state(ctx, c);
}

static int gen_layout(void *ctx, struct idgen_layout *out)
{
	return idgen_generator_layout(ctx, out);
}

static void gen_close(void *ctx)
{
	struct idgen_device_state st;

	/* The count tells a test that refused requests consumed no ID. */
	if (idgen_generator_simulated(ctx) && !idgen_generator_get_state(ctx, &st))
		log_info("simulated generator: %" PRIu64 " IDs minted", st.ids);
	idgen_generator_close(ctx);
}

static const struct minter_ops generator_ops = {
	.mint = gen_mint,
	.state = gen_state,
	.counters = gen_counters,
	.layout = gen_layout,
	.close = gen_close,
};

int minter_open(struct minter *m, const char *spec, uint64_t sim_lease_ms,
		char *err, size_t errlen)
{
	struct idgen_device_state st;
	struct idgen_generator *g;
	char why[512];
	int ret;

	memset(m, 0, sizeof(*m));
	/*
	 * A node of its own, "sim" or "sim:WORKER", never the file form; the
	 * device only when it is idgen's, found now, not at the first
	 * request.  Blocking once open: the generator sleeps only for short,
	 * bounded waits.
	 */
	ret = idgen_generator_open(spec, LIBIDGEN_GENERATOR_SIM | LIBIDGEN_GENERATOR_SIM_WORKER,
				   sim_lease_ms, &g, why, sizeof(why));
	if (ret) {
		/* Only /dev/idgen missing says the module is not loaded. */
		if (ret == -ENOENT && spec && strcmp(spec, LIBIDGEN_DEVICE))
			snprintf(why, sizeof(why), "no such file");
		snprintf(err, errlen, "device '%s': %s", spec ? spec : LIBIDGEN_DEVICE, why);
		return ret;
	}
	m->ops = &generator_ops;
	m->ctx = g;
	snprintf(m->name, sizeof(m->name), "%s", idgen_generator_name(g));
	if (idgen_generator_simulated(g)) {
		m->simulated = true;
		/* Its own node's lease, held from open. */
		if (!idgen_generator_get_state(g, &st))
			m->sim_worker = st.worker;
	}
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

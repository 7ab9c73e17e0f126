// SPDX-License-Identifier: GPL-2.0
/*
 * idgen: a host-wide generator of unique, time-ordered 64-bit IDs.
 *
 * Copyright (C) 2026 The idgen authors.
 */
#include <linux/module.h>

#include "chardev.h"
#include "generator.h"
#include "netlink.h"
#include "version.h"

static unsigned int region_bits = IDGEN_V1_REGION_BITS;
module_param(region_bits, uint, 0444);
MODULE_PARM_DESC(region_bits, "default layout: region bits (3)");

static unsigned int worker_bits = IDGEN_V1_WORKER_BITS;
module_param(worker_bits, uint, 0444);
MODULE_PARM_DESC(worker_bits, "default layout: worker bits (7); the sequence gets the rest of 22");

static unsigned int max_lead_ms = 1000;
module_param(max_lead_ms, uint, 0444);
MODULE_PARM_DESC(max_lead_ms, "how far IDs may run ahead of the wall clock, in ms (1000)");

static unsigned int max_borrow_ms = IDGEN_MAX_BORROW_MS_DEFAULT;
module_param(max_borrow_ms, uint, 0444);
MODULE_PARM_DESC(max_borrow_ms, "how far readers may push IDs ahead of a healthy wall clock by borrowing, in ms (10); at most max_lead_ms");

static unsigned int max_step_ms = 1000;
module_param(max_step_ms, uint, 0444);
MODULE_PARM_DESC(max_step_ms, "largest forward wall-clock step followed without adoption, in ms (1000)");

static unsigned int fence_near_ms = IDGEN_FENCE_NEAR_MS_DEFAULT;
module_param(fence_near_ms, uint, 0444);
MODULE_PARM_DESC(fence_near_ms, "the fence-near event fires this long before the fence, in ms (60000); netlink can change it");

/* Bounds on the parameters: a lead or step beyond a minute is a mistake. */
#define IDGEN_PARAM_MS_MAX	60000

static struct idgen_gen idgen_gen;

/*
 * The default layout the parameters describe, checked by the same rule as
 * a lease's own layout.  Each width is bounded alone first, in the
 * parameters' type, so the u8 fields hold it and the sum cannot wrap.
 */
static bool __init idgen_param_layout(struct idgen_bits *l)
{
	if (region_bits > IDGEN_NODE_SEQ_BITS ||
	    worker_bits > IDGEN_NODE_SEQ_BITS - region_bits)
		return false;
	l->region_bits = region_bits;
	l->worker_bits = worker_bits;
	l->seq_bits = IDGEN_NODE_SEQ_BITS - region_bits - worker_bits;
	return idgen_bits_valid(l);
}

static int __init idgen_init(void)
{
	struct idgen_bits layout;
	int ret;

	if (!idgen_param_layout(&layout)) {
		pr_err("bad layout region_bits=%u worker_bits=%u: region at most %u bits, and at least %u of the %u node and sequence bits must remain for the sequence\n",
		       region_bits, worker_bits, IDGEN_REGION_BITS_MAX,
		       IDGEN_SEQ_BITS_MIN, IDGEN_NODE_SEQ_BITS);
		return -EINVAL;
	}
	if (!max_lead_ms || max_lead_ms > IDGEN_PARAM_MS_MAX ||
	    !max_step_ms || max_step_ms > IDGEN_PARAM_MS_MAX) {
		pr_err("max_lead_ms=%u and max_step_ms=%u must be within 1..%u\n",
		       max_lead_ms, max_step_ms, IDGEN_PARAM_MS_MAX);
		return -EINVAL;
	}

	if (!max_borrow_ms || max_borrow_ms > max_lead_ms) {
		pr_err("max_borrow_ms=%u must be within 1..max_lead_ms (%u)\n",
		       max_borrow_ms, max_lead_ms);
		return -EINVAL;
	}

	if (!fence_near_ms || fence_near_ms > IDGEN_FENCE_NEAR_MS_MAX) {
		pr_err("fence_near_ms=%u must be within 1..%u\n",
		       fence_near_ms, IDGEN_FENCE_NEAR_MS_MAX);
		return -EINVAL;
	}

	ret = idgen_gen_init(&idgen_gen, &layout, max_lead_ms, max_step_ms);
	if (ret)
		goto err_gen;
	idgen_gen.fence_near_ms = fence_near_ms;
	idgen_gen.max_borrow_ms = max_borrow_ms;
	ret = idgen_netlink_init(&idgen_gen);
	if (ret)
		goto err_netlink;
	/* The clock's readings send events: started once netlink is there. */
	idgen_clock_start(&idgen_gen.clock);
	ret = idgen_chardev_init(&idgen_gen);
	if (ret)
		goto err_chardev;

	pr_info("ready: /dev/%s, layout %u/%u/%u, waiting for a lease\n",
		IDGEN_DEVICE_NAME, layout.region_bits, layout.worker_bits,
		layout.seq_bits);
	return 0;

err_chardev:
	idgen_clock_stop(&idgen_gen.clock);
	idgen_netlink_uninit();
err_netlink:
	idgen_gen_uninit(&idgen_gen);
err_gen:
	return ret;
}

/* The exact reverse of idgen_init(). */
static void __exit idgen_exit(void)
{
	idgen_chardev_uninit();
	idgen_clock_stop(&idgen_gen.clock);
	idgen_netlink_uninit();
	idgen_gen_uninit(&idgen_gen);
}

module_init(idgen_init);
module_exit(idgen_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Host-wide unique, time-ordered 64-bit ID generator");
MODULE_AUTHOR("The idgen authors");
MODULE_VERSION(IDGEN_VERSION);

// SPDX-License-Identifier: GPL-2.0
/*
 * The "idgen" generic netlink family: the generator's state and counters
 * for any user, one setting for administrators, and a multicast group of
 * events (lease, fence and clock).  What the commands and attributes mean
 * is in include/uapi/linux/idgen.h; the family is also described for tools
 * in Documentation/netlink/specs/idgen.yaml.
 *
 * Plain genl_ops with per-op policies: they build the same on 6.1, which
 * has no split ops, and on later kernels.
 */
#include <linux/module.h>
#include <net/genetlink.h>
#include <uapi/linux/idgen.h>

#include "generator.h"
#include "netlink.h"
#include "stats.h"

static struct genl_family idgen_genl_family;
static struct idgen_gen *idgen_nl_gen;

/* GET_STATE takes no attributes: strict validation refuses any. */
static const struct nla_policy idgen_get_state_policy[IDGEN_A_MAX + 1] = {};

/* Not const: on 6.1, struct nla_policy points at it without const. */
static struct netlink_range_validation idgen_fence_near_range = {
	.min = 1,
	.max = IDGEN_FENCE_NEAR_MS_MAX,
};

static const struct nla_policy idgen_set_config_policy[IDGEN_A_FENCE_NEAR_MS + 1] = {
	[IDGEN_A_FENCE_NEAR_MS] = NLA_POLICY_FULL_RANGE(NLA_U32,
							&idgen_fence_near_range),
};

static int idgen_nl_put_u64(struct sk_buff *msg, int attr, u64 v)
{
	return nla_put_u64_64bit(msg, attr, v, IDGEN_A_PAD);
}

static int idgen_nl_put_state(struct sk_buff *msg, struct idgen_gen *gen,
			      const struct idgen_state *st)
{
	static const struct {
		int attr;
		size_t offset;
	} counters[] = {
		{ IDGEN_A_CNT_IDS, offsetof(struct idgen_state, ids) },
		{ IDGEN_A_CNT_READS, offsetof(struct idgen_state, reads) },
		{ IDGEN_A_CNT_BORROWED_MS, offsetof(struct idgen_state, borrowed_ms) },
		{ IDGEN_A_CNT_STEPS_BACK, offsetof(struct idgen_state, steps_back) },
		{ IDGEN_A_CNT_STEPS_FORWARD, offsetof(struct idgen_state, steps_forward) },
		{ IDGEN_A_CNT_STEPS_ADOPTED, offsetof(struct idgen_state, steps_adopted) },
		{ IDGEN_A_CNT_FENCE_REFUSALS, offsetof(struct idgen_state, fence_refusals) },
		{ IDGEN_A_CNT_LEAD_REFUSALS, offsetof(struct idgen_state, lead_refusals) },
		{ IDGEN_A_CNT_NOLEASE_REFUSALS, offsetof(struct idgen_state, nolease_refusals) },
		{ IDGEN_A_CNT_RANGE_REFUSALS, offsetof(struct idgen_state, range_refusals) },
	};
	int i;

	if (idgen_nl_put_u64(msg, IDGEN_A_NOW_MS, st->now_ms) ||
	    idgen_nl_put_u64(msg, IDGEN_A_WALL_MS, st->wall_ms) ||
	    idgen_nl_put_u64(msg, IDGEN_A_LAST_MS, st->last_ms) ||
	    idgen_nl_put_u64(msg, IDGEN_A_NEXT_MS, st->next_ms) ||
	    nla_put_s64(msg, IDGEN_A_HELD_STEP_MS, st->held_step_ms, IDGEN_A_PAD) ||
	    nla_put_u32(msg, IDGEN_A_FLAGS, st->flags) ||
	    nla_put_u32(msg, IDGEN_A_MAX_LEAD_MS, st->max_lead_ms) ||
	    nla_put_u32(msg, IDGEN_A_MAX_STEP_MS, st->max_step_ms) ||
	    nla_put_u32(msg, IDGEN_A_FENCE_NEAR_MS, READ_ONCE(gen->fence_near_ms)) ||
	    nla_put_u8(msg, IDGEN_A_REGION_BITS, st->region_bits) ||
	    nla_put_u8(msg, IDGEN_A_WORKER_BITS, st->worker_bits) ||
	    nla_put_u8(msg, IDGEN_A_SEQ_BITS, st->seq_bits))
		return -EMSGSIZE;

	if (st->flags & IDGEN_STATE_LEASED &&
	    (nla_put_u32(msg, IDGEN_A_REGION, st->region) ||
	     nla_put_u32(msg, IDGEN_A_WORKER, st->worker) ||
	     idgen_nl_put_u64(msg, IDGEN_A_FLOOR_MS, st->floor_ms) ||
	     idgen_nl_put_u64(msg, IDGEN_A_VALID_UNTIL_MS, st->valid_until_ms)))
		return -EMSGSIZE;

	for (i = 0; i < ARRAY_SIZE(counters); i++)
		if (idgen_nl_put_u64(msg, counters[i].attr,
				     *(const u64 *)((const u8 *)st + counters[i].offset)))
			return -EMSGSIZE;
	if (idgen_nl_put_u64(msg, IDGEN_A_CNT_EVENTS_DROPPED,
			     idgen_stat_sum(gen->stats, IDGEN_STAT_EVENTS_DROPPED)))
		return -EMSGSIZE;
	return 0;
}

static int idgen_nl_get_state(struct sk_buff *skb, struct genl_info *info)
{
	struct idgen_gen *gen = idgen_nl_gen;
	struct idgen_state st;
	struct sk_buff *msg;
	void *hdr;

	idgen_gen_get_state(gen, &st);
	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &idgen_genl_family, 0,
				IDGEN_CMD_GET_STATE);
	if (!hdr || idgen_nl_put_state(msg, gen, &st)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

static int idgen_nl_set_config(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *near = info->attrs[IDGEN_A_FENCE_NEAR_MS];

	if (!near) {
		NL_SET_ERR_MSG_MOD(info->extack,
				   "no setting given: IDGEN_A_FENCE_NEAR_MS is the one there is");
		return -EINVAL;
	}
	WRITE_ONCE(idgen_nl_gen->fence_near_ms, nla_get_u32(near));
	return 0;
}

static const struct genl_ops idgen_nl_ops[] = {
	{
		.cmd = IDGEN_CMD_GET_STATE,
		.doit = idgen_nl_get_state,
		.policy = idgen_get_state_policy,
		.maxattr = IDGEN_A_MAX,
	},
	{
		.cmd = IDGEN_CMD_SET_CONFIG,
		.doit = idgen_nl_set_config,
		.policy = idgen_set_config_policy,
		.maxattr = IDGEN_A_FENCE_NEAR_MS,
		.flags = GENL_ADMIN_PERM,
	},
};

static const struct genl_multicast_group idgen_nl_mcgrps[] = {
	{ .name = IDGEN_GENL_MCGRP_EVENTS },
};

static struct genl_family idgen_genl_family __ro_after_init = {
	.name = IDGEN_GENL_NAME,
	.version = IDGEN_GENL_VERSION,
	.maxattr = IDGEN_A_MAX,
	.module = THIS_MODULE,
	.parallel_ops = true,
	.ops = idgen_nl_ops,
	.n_ops = ARRAY_SIZE(idgen_nl_ops),
	.mcgrps = idgen_nl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(idgen_nl_mcgrps),
};

static int idgen_nl_put_event(struct sk_buff *msg,
			      const struct idgen_event_info *ev)
{
	if (nla_put_u32(msg, IDGEN_A_EVENT, ev->type) ||
	    idgen_nl_put_u64(msg, IDGEN_A_NOW_MS, ev->now_ms))
		return -EMSGSIZE;
	if (ev->has_node &&
	    (nla_put_u32(msg, IDGEN_A_REGION, ev->region) ||
	     nla_put_u32(msg, IDGEN_A_WORKER, ev->worker) ||
	     idgen_nl_put_u64(msg, IDGEN_A_VALID_UNTIL_MS, ev->valid_until_ms)))
		return -EMSGSIZE;
	if (ev->has_floor && idgen_nl_put_u64(msg, IDGEN_A_FLOOR_MS, ev->floor_ms))
		return -EMSGSIZE;
	if (ev->has_last && idgen_nl_put_u64(msg, IDGEN_A_LAST_MS, ev->last_ms))
		return -EMSGSIZE;
	if (ev->has_step &&
	    (nla_put_s64(msg, IDGEN_A_STEP_MS, ev->step_ms, IDGEN_A_PAD) ||
	     nla_put_u32(msg, IDGEN_A_FLAGS,
			 ev->held ? IDGEN_STATE_CLOCK_HELD : 0)))
		return -EMSGSIZE;
	return 0;
}

/*
 * Multicast one event.  Context: process context, may sleep; called with
 * no generator lock held but possibly admin_lock, which nothing here takes.
 */
static void idgen_nl_notify(struct idgen_gen *gen,
			    const struct idgen_event_info *ev)
{
	struct sk_buff *msg;
	void *hdr;

	if (!genl_has_listeners(&idgen_genl_family, &init_net, 0))
		return;
	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return;
	hdr = genlmsg_put(msg, 0, 0, &idgen_genl_family, 0, IDGEN_CMD_EVENT);
	if (!hdr || idgen_nl_put_event(msg, ev)) {
		nlmsg_free(msg);
		return;
	}
	genlmsg_end(msg, hdr);
	genlmsg_multicast(&idgen_genl_family, msg, 0, 0, GFP_KERNEL);
}

int idgen_netlink_init(struct idgen_gen *gen)
{
	int ret;

	idgen_nl_gen = gen;
	ret = genl_register_family(&idgen_genl_family);
	if (ret)
		return ret;
	WRITE_ONCE(gen->notify, idgen_nl_notify);
	return 0;
}

/* Context: the device is gone; waits for requests in flight. */
void idgen_netlink_uninit(void)
{
	WRITE_ONCE(idgen_nl_gen->notify, NULL);
	genl_unregister_family(&idgen_genl_family);
	idgen_nl_gen = NULL;
}

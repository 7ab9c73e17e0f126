// SPDX-License-Identifier: GPL-2.0
/*
 * The "idgen" generic netlink family through libnl-genl, in the
 * manner of tools/testing/selftests/net/ovpn/ovpn-cli.c: resolve the family
 * with genl_ctrl_resolve(), send a request asking for an ACK, and collect
 * the reply, the ACK and any error (with its extended ack message) through
 * libnl callbacks.  Events arrive on a socket joined to the "events"
 * multicast group, and to nlctrl's "notify" group so that the family going
 * away (rmmod) ends the loop instead of leaving it waiting forever.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include <linux/idgen.h>

#include "idgen_nl.h"

/* "idgenctl" in idgenctl; whatever links this in names itself. */
#define PROG	program_invocation_short_name

struct idgen_nl {
	struct nl_sock *sk;
	int family;
	/* For dispatch(): */
	idgen_nl_event_cb cb;
	void *ctx;
	int stop;		/* what ends the loop, 0 to go on */
};

static const char *const event_names[] = {
	[IDGEN_EVENT_LEASE_SET]		= "lease-set",
	[IDGEN_EVENT_LEASE_RENEWED]	= "lease-renewed",
	[IDGEN_EVENT_LEASE_REVOKED]	= "lease-revoked",
	[IDGEN_EVENT_FENCE_NEAR]	= "fence-near",
	[IDGEN_EVENT_FENCE_REACHED]	= "fence-reached",
	[IDGEN_EVENT_CLOCK_STEP_BACK]	= "clock-step-back",
	[IDGEN_EVENT_CLOCK_STEP_FWD]	= "clock-step-forward",
	[IDGEN_EVENT_CLOCK_ADOPTED]	= "clock-adopted",
	[IDGEN_EVENT_LEAD_EXCEEDED]	= "lead-exceeded",
};

_Static_assert(sizeof(event_names) / sizeof(event_names[0]) == IDGEN_EVENT_MAX + 1,
	       "a name for every enum idgen_event");

const char *idgen_nl_event_name(uint32_t event)
{
	if (event >= sizeof(event_names) / sizeof(event_names[0]))
		return NULL;
	return event_names[event];
}

/* Exact sizes: libnl checks minlen, and maxlen when it is set. */
#define U8	{ .type = NLA_U8, .maxlen = 1 }
#define U32	{ .type = NLA_U32, .maxlen = 4 }
#define U64	{ .type = NLA_U64, .maxlen = 8 }

static struct nla_policy policy[IDGEN_A_MAX + 1] = {
	[IDGEN_A_EVENT]			= U32,
	[IDGEN_A_NOW_MS]		= U64,
	[IDGEN_A_WALL_MS]		= U64,
	[IDGEN_A_LAST_MS]		= U64,
	[IDGEN_A_NEXT_MS]		= U64,
	[IDGEN_A_FLOOR_MS]		= U64,
	[IDGEN_A_VALID_UNTIL_MS]	= U64,
	[IDGEN_A_HELD_STEP_MS]		= U64,
	[IDGEN_A_STEP_MS]		= U64,
	[IDGEN_A_FLAGS]			= U32,
	[IDGEN_A_REGION]		= U32,
	[IDGEN_A_WORKER]		= U32,
	[IDGEN_A_REGION_BITS]		= U8,
	[IDGEN_A_WORKER_BITS]		= U8,
	[IDGEN_A_SEQ_BITS]		= U8,
	[IDGEN_A_MAX_LEAD_MS]		= U32,
	[IDGEN_A_MAX_STEP_MS]		= U32,
	[IDGEN_A_FENCE_NEAR_MS]		= U32,
	[IDGEN_A_CNT_IDS]		= U64,
	[IDGEN_A_CNT_READS]		= U64,
	[IDGEN_A_CNT_BORROWED_MS]	= U64,
	[IDGEN_A_CNT_STEPS_BACK]	= U64,
	[IDGEN_A_CNT_STEPS_FORWARD]	= U64,
	[IDGEN_A_CNT_STEPS_ADOPTED]	= U64,
	[IDGEN_A_CNT_FENCE_REFUSALS]	= U64,
	[IDGEN_A_CNT_LEAD_REFUSALS]	= U64,
	[IDGEN_A_CNT_NOLEASE_REFUSALS]	= U64,
	[IDGEN_A_CNT_RANGE_REFUSALS]	= U64,
	[IDGEN_A_CNT_EVENTS_DROPPED]	= U64,
};

#undef U8
#undef U32
#undef U64

/* Where each GET_STATE attribute goes; all are required but the lease's. */
static const struct {
	int attr;
	int lease;
	size_t off;
	const char *name;
} state_attrs[] = {
#define F(a, field, lease) \
	{ IDGEN_A_##a, lease, offsetof(struct idgen_nl_state, field), "IDGEN_A_" #a }
	F(NOW_MS, state.now_ms, 0),
	F(WALL_MS, state.wall_ms, 0),
	F(LAST_MS, state.last_ms, 0),
	F(NEXT_MS, state.next_ms, 0),
	F(FLAGS, state.flags, 0),
	F(HELD_STEP_MS, state.held_step_ms, 0),
	F(MAX_LEAD_MS, state.max_lead_ms, 0),
	F(MAX_STEP_MS, state.max_step_ms, 0),
	F(FENCE_NEAR_MS, fence_near_ms, 0),
	F(REGION_BITS, state.region_bits, 0),
	F(WORKER_BITS, state.worker_bits, 0),
	F(SEQ_BITS, state.seq_bits, 0),
	F(CNT_IDS, state.ids, 0),
	F(CNT_READS, state.reads, 0),
	F(CNT_BORROWED_MS, state.borrowed_ms, 0),
	F(CNT_STEPS_BACK, state.steps_back, 0),
	F(CNT_STEPS_FORWARD, state.steps_forward, 0),
	F(CNT_STEPS_ADOPTED, state.steps_adopted, 0),
	F(CNT_FENCE_REFUSALS, state.fence_refusals, 0),
	F(CNT_LEAD_REFUSALS, state.lead_refusals, 0),
	F(CNT_NOLEASE_REFUSALS, state.nolease_refusals, 0),
	F(CNT_RANGE_REFUSALS, state.range_refusals, 0),
	F(CNT_EVENTS_DROPPED, events_dropped, 0),
	F(REGION, state.region, 1),
	F(WORKER, state.worker, 1),
	F(FLOOR_MS, state.floor_ms, 1),
	F(VALID_UNTIL_MS, state.valid_until_ms, 1),
#undef F
};

#define NR_LEASE_ATTRS	4

/* Store an attribute by the size the policy gave it. */
static void store(void *base, size_t off, const struct nlattr *a)
{
	char *p = (char *)base + off;

	switch (nla_len(a)) {
	case 1:
		*(uint8_t *)p = nla_get_u8(a);
		break;
	case 4:
		*(uint32_t *)p = nla_get_u32(a);
		break;
	default:
		*(uint64_t *)p = nla_get_u64(a);
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Requests                                                            */

struct request {
	int err;		/* 1 until the ACK, 0 after it, or -errno */
	char ext_msg[256];	/* the extended ack message, if any */
	int ext_miss_type;	/* NLMSGERR_ATTR_MISS_TYPE, or -1 */
	int (*parse)(struct nl_msg *msg, void *out);
	void *out;
	int parse_err;
};

/*
 * An NLMSG_ERROR with a non-zero error.  With NETLINK_EXT_ACK the kernel
 * appends TLVs after the echoed request (only its header when capped).
 */
static int cb_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)e - 1;
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	struct request *req = arg;
	int len = nlh->nlmsg_len, ack_len;

	(void)nla;
	req->err = e->error < 0 ? e->error : -EPROTO;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	ack_len = sizeof(*nlh) + sizeof(*e);
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		ack_len += e->msg.nlmsg_len - sizeof(e->msg);
	if (len <= ack_len)
		return NL_STOP;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)nlh + ack_len),
		      len - ack_len, NULL))
		return NL_STOP;
	if (tb[NLMSGERR_ATTR_MSG])
		snprintf(req->ext_msg, sizeof(req->ext_msg), "%.*s",
			 (int)strnlen(nla_data(tb[NLMSGERR_ATTR_MSG]),
				      nla_len(tb[NLMSGERR_ATTR_MSG])),
			 (const char *)nla_data(tb[NLMSGERR_ATTR_MSG]));
	if (tb[NLMSGERR_ATTR_MISS_TYPE] && nla_len(tb[NLMSGERR_ATTR_MISS_TYPE]) >= 4)
		req->ext_miss_type = nla_get_u32(tb[NLMSGERR_ATTR_MISS_TYPE]);
	return NL_STOP;
}

static int cb_ack(struct nl_msg *msg, void *arg)
{
	struct request *req = arg;

	(void)msg;
	req->err = 0;
	return NL_STOP;
}

static int cb_valid(struct nl_msg *msg, void *arg)
{
	struct request *req = arg;

	if (req->parse && !req->parse_err)
		req->parse_err = req->parse(msg, req->out);
	return NL_OK;
}

/* Print why a request failed, and what the kernel said about it. */
static void report(const char *what, const struct request *req)
{
	int err = -req->err;

	fprintf(stderr, "%s: %s: %s\n", PROG, what, strerror(err));
	if (req->ext_msg[0])
		fprintf(stderr, "%s: kernel says: %s\n", PROG, req->ext_msg);
	if (req->ext_miss_type >= 0)
		fprintf(stderr, "%s: kernel says: attribute %d is missing\n", PROG,
			req->ext_miss_type);
	if (err == EPERM)
		fprintf(stderr, "%s: changing idgen's settings needs CAP_NET_ADMIN (EPERM)\n",
			PROG);
}

/* Connect and resolve the family; reports failures. */
static int open_family(struct idgen_nl *nl)
{
	int one = 1, ret;

	memset(nl, 0, sizeof(*nl));
	nl->sk = nl_socket_alloc();
	if (!nl->sk) {
		fprintf(stderr, "%s: netlink socket: %s\n", PROG, strerror(ENOMEM));
		return -ENOMEM;
	}
	ret = genl_connect(nl->sk);
	if (ret) {
		fprintf(stderr, "%s: generic netlink socket: %s\n", PROG, nl_geterror(ret));
		ret = -EIO;
		goto err;
	}
	/* Error messages and the missing attribute from the kernel (4.12+). */
	setsockopt(nl_socket_get_fd(nl->sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	nl->family = genl_ctrl_resolve(nl->sk, IDGEN_GENL_NAME);
	if (nl->family < 0) {
		if (nl->family == -NLE_OBJ_NOTFOUND) {
			fprintf(stderr, "%s: the idgen module is not loaded "
				"(no generic netlink family \"%s\")\n", PROG, IDGEN_GENL_NAME);
			ret = -ENOENT;
		} else {
			fprintf(stderr, "%s: resolving generic netlink family \"%s\": %s\n",
				PROG, IDGEN_GENL_NAME, nl_geterror(nl->family));
			ret = -EIO;
		}
		goto err;
	}
	return 0;
err:
	nl_socket_free(nl->sk);
	nl->sk = NULL;
	return ret;
}

/*
 * Send cmd with what put() adds, wait for the ACK or the error, hand each
 * reply to parse().  Reports failures under the name what.
 */
static int request(uint8_t cmd, int (*put)(struct nl_msg *msg, const void *arg),
		   const void *arg, int (*parse)(struct nl_msg *msg, void *out),
		   void *out, const char *what)
{
	struct request req = { .err = 1, .ext_miss_type = -1, .parse = parse, .out = out };
	struct nl_msg *msg = NULL;
	struct nl_cb *cb = NULL;
	struct idgen_nl nl;
	int ret;

	ret = open_family(&nl);
	if (ret)
		return ret;
	ret = -ENOMEM;
	msg = nlmsg_alloc();
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!msg || !cb ||
	    !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl.family, 0, 0, cmd,
			 IDGEN_GENL_VERSION) ||
	    (put && put(msg, arg))) {
		fprintf(stderr, "%s: %s: %s\n", PROG, what, strerror(ENOMEM));
		goto out;
	}
	nl_cb_err(cb, NL_CB_CUSTOM, cb_error, &req);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, cb_ack, &req);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, cb_ack, &req);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, cb_valid, &req);

	ret = nl_send_auto(nl.sk, msg);
	if (ret < 0) {
		fprintf(stderr, "%s: %s: sending: %s\n", PROG, what, nl_geterror(ret));
		ret = -EIO;
		goto out;
	}
	while (req.err > 0) {
		ret = nl_recvmsgs(nl.sk, cb);
		if (ret < 0 && req.err > 0) {
			fprintf(stderr, "%s: %s: receiving: %s\n", PROG, what,
				nl_geterror(ret));
			ret = -EIO;
			goto out;
		}
	}
	ret = req.err;
	if (ret) {
		report(what, &req);
	} else if (req.parse_err) {
		ret = req.parse_err;
	}
out:
	nl_cb_put(cb);
	nlmsg_free(msg);
	nl_socket_free(nl.sk);
	return ret;
}

struct state_reply {
	struct idgen_nl_state *st;
	int got;
};

static int parse_state(struct nl_msg *msg, void *out)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *tb[IDGEN_A_MAX + 1];
	struct state_reply *reply = out;
	struct idgen_nl_state *st = reply->st;
	int lease_attrs = 0, ret;
	size_t i;

	if (!genlmsg_valid_hdr(nlh, 0) || genlmsg_hdr(nlh)->cmd != IDGEN_CMD_GET_STATE)
		return 0;
	reply->got = 1;
	memset(st, 0, sizeof(*st));
	ret = genlmsg_parse(nlh, 0, tb, IDGEN_A_MAX, policy);
	if (ret) {
		fprintf(stderr, "%s: malformed GET_STATE reply: %s\n", PROG,
			nl_geterror(ret));
		return -EPROTO;
	}
	for (i = 0; i < sizeof(state_attrs) / sizeof(state_attrs[0]); i++) {
		const struct nlattr *a = tb[state_attrs[i].attr];

		if (a) {
			store(st, state_attrs[i].off, a);
			lease_attrs += state_attrs[i].lease;
		} else if (!state_attrs[i].lease) {
			fprintf(stderr, "%s: GET_STATE reply without %s\n", PROG,
				state_attrs[i].name);
			return -EPROTO;
		}
	}
	if (lease_attrs && lease_attrs != NR_LEASE_ATTRS) {
		fprintf(stderr, "%s: GET_STATE reply with part of the lease\n", PROG);
		return -EPROTO;
	}
	st->lease = lease_attrs == NR_LEASE_ATTRS;
	return 0;
}

int idgen_nl_get_state(struct idgen_nl_state *out)
{
	struct state_reply reply = { .st = out };
	int ret;

	ret = request(IDGEN_CMD_GET_STATE, NULL, NULL, parse_state, &reply,
		      "IDGEN_CMD_GET_STATE");
	/* An ACK without a reply would leave *out unset. */
	if (!ret && !reply.got) {
		fprintf(stderr, "%s: IDGEN_CMD_GET_STATE: no reply\n", PROG);
		ret = -EPROTO;
	}
	return ret;
}

static int put_fence_near(struct nl_msg *msg, const void *arg)
{
	return nla_put_u32(msg, IDGEN_A_FENCE_NEAR_MS, *(const uint32_t *)arg);
}

int idgen_nl_set_fence_near(uint32_t ms)
{
	return request(IDGEN_CMD_SET_CONFIG, put_fence_near, &ms, NULL, NULL,
		       "IDGEN_CMD_SET_CONFIG fence-near");
}

/* ------------------------------------------------------------------ */
/* Events                                                              */

static const struct {
	int attr;
	uint32_t bit;
	size_t off;
} event_attrs[] = {
#define F(a, bit, field) { IDGEN_A_##a, IDGEN_NL_EV_##bit, offsetof(struct idgen_nl_event, field) }
	F(NOW_MS, NOW, now_ms),
	F(REGION, REGION, region),
	F(WORKER, WORKER, worker),
	F(FLOOR_MS, FLOOR, floor_ms),
	F(VALID_UNTIL_MS, VALID_UNTIL, valid_until_ms),
	F(LAST_MS, LAST, last_ms),
	F(STEP_MS, STEP, step_ms),
	F(FLAGS, FLAGS, flags),
#undef F
};

/* nlctrl's announcement that our family is gone (the module unloaded). */
static int family_removed(struct idgen_nl *nl, struct nlmsghdr *nlh)
{
	struct nlattr *tb[CTRL_ATTR_MAX + 1];

	if (genlmsg_hdr(nlh)->cmd != CTRL_CMD_DELFAMILY ||
	    genlmsg_parse(nlh, 0, tb, CTRL_ATTR_MAX, NULL) ||
	    !tb[CTRL_ATTR_FAMILY_ID] || nla_len(tb[CTRL_ATTR_FAMILY_ID]) < 2)
		return 0;
	return nla_get_u16(tb[CTRL_ATTR_FAMILY_ID]) == nl->family;
}

static int cb_event(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *tb[IDGEN_A_MAX + 1];
	struct idgen_nl *nl = arg;
	struct idgen_nl_event ev;
	size_t i;
	int ret;

	if (!genlmsg_valid_hdr(nlh, 0))
		return NL_SKIP;
	if (nlh->nlmsg_type == GENL_ID_CTRL) {
		if (family_removed(nl, nlh)) {
			fprintf(stderr, "%s: the idgen module was unloaded\n", PROG);
			nl->stop = -ENODEV;
			return NL_STOP;
		}
		return NL_SKIP;
	}
	if (nlh->nlmsg_type != nl->family || genlmsg_hdr(nlh)->cmd != IDGEN_CMD_EVENT)
		return NL_SKIP;
	ret = genlmsg_parse(nlh, 0, tb, IDGEN_A_MAX, policy);
	if (ret || !tb[IDGEN_A_EVENT]) {
		fprintf(stderr, "%s: malformed event: %s\n", PROG,
			ret ? nl_geterror(ret) : "no IDGEN_A_EVENT");
		return NL_SKIP;
	}
	memset(&ev, 0, sizeof(ev));
	ev.event = nla_get_u32(tb[IDGEN_A_EVENT]);
	for (i = 0; i < sizeof(event_attrs) / sizeof(event_attrs[0]); i++) {
		if (tb[event_attrs[i].attr]) {
			store(&ev, event_attrs[i].off, tb[event_attrs[i].attr]);
			ev.present |= event_attrs[i].bit;
		}
	}
	nl->stop = nl->cb(&ev, nl->ctx);
	return nl->stop ? NL_STOP : NL_OK;
}

static int join(struct idgen_nl *nl, const char *family, const char *group)
{
	int grp = genl_ctrl_resolve_grp(nl->sk, family, group);

	if (grp >= 0)
		grp = nl_socket_add_membership(nl->sk, grp);
	if (grp < 0) {
		fprintf(stderr, "%s: joining multicast group \"%s\" of \"%s\": %s\n",
			PROG, group, family, nl_geterror(grp));
		return -EIO;
	}
	return 0;
}

struct idgen_nl *idgen_nl_subscribe(void)
{
	struct idgen_nl *nl = malloc(sizeof(*nl));
	int ret;

	if (!nl) {
		fprintf(stderr, "%s: %s\n", PROG, strerror(ENOMEM));
		errno = ENOMEM;
		return NULL;
	}
	ret = open_family(nl);
	if (ret)
		goto err;
	/* Both resolved before joining, so no event lands among the replies. */
	ret = join(nl, IDGEN_GENL_NAME, IDGEN_GENL_MCGRP_EVENTS);
	if (!ret)
		ret = join(nl, "nlctrl", "notify");
	if (ret)
		goto err_sk;
	nl_socket_disable_seq_check(nl->sk);
	nl_socket_modify_cb(nl->sk, NL_CB_VALID, NL_CB_CUSTOM, cb_event, nl);
	ret = nl_socket_set_nonblocking(nl->sk);
	if (ret) {
		fprintf(stderr, "%s: netlink socket: %s\n", PROG, nl_geterror(ret));
		ret = -EIO;
		goto err_sk;
	}
	return nl;
err_sk:
	nl_socket_free(nl->sk);
err:
	free(nl);
	errno = -ret;
	return NULL;
}

int idgen_nl_fd(const struct idgen_nl *nl)
{
	return nl_socket_get_fd(nl->sk);
}

int idgen_nl_dispatch(struct idgen_nl *nl, idgen_nl_event_cb cb, void *ctx)
{
	int ret;

	nl->cb = cb;
	nl->ctx = ctx;
	nl->stop = 0;
	do {
		ret = nl_recvmsgs_report(nl->sk, nl_socket_get_cb(nl->sk));
		if (nl->stop)
			return nl->stop;
		/* The socket is non-blocking: the queue is drained. */
		if (ret == -NLE_AGAIN)
			break;
		/*
		 * libnl turns the ENOBUFS of an overrun receive buffer into
		 * NLE_NOMEM: events were lost, the socket is fine.
		 */
		if (ret == -NLE_NOMEM) {
			fprintf(stderr, "%s: events lost: the receive buffer overflowed\n",
				PROG);
			ret = 1;
		} else if (ret < 0) {
			fprintf(stderr, "%s: receiving events: %s\n", PROG,
				nl_geterror(ret));
			return -EIO;
		}
	} while (ret > 0);
	return 0;
}

void idgen_nl_close(struct idgen_nl *nl)
{
	if (!nl)
		return;
	nl_socket_free(nl->sk);
	free(nl);
}

int idgen_nl_events(idgen_nl_event_cb cb, void *ctx)
{
	struct idgen_nl *nl = idgen_nl_subscribe();
	struct pollfd p;
	int ret;

	if (!nl)
		return -errno;
	p.fd = idgen_nl_fd(nl);
	p.events = POLLIN;
	for (;;) {
		if (poll(&p, 1, -1) < 0) {
			ret = -errno;
			if (ret != -EINTR)
				fprintf(stderr, "%s: poll: %s\n", PROG, strerror(-ret));
			break;
		}
		ret = idgen_nl_dispatch(nl, cb, ctx);
		if (ret)
			break;
	}
	idgen_nl_close(nl);
	return ret;
}

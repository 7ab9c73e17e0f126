// SPDX-License-Identifier: GPL-2.0
/*
 * netlink_test - selftests of the "idgen" generic netlink family against
 * the GENERIC NETLINK section of include/uapi/linux/idgen.h.
 *
 * Tests that only read (GET_STATE against IDGEN_IOC_GET_STATE) run
 * anywhere the module is loaded.  The others set leases, change the
 * fence-near setting, step the wall clock or reload the module: they run
 * only as root with IDGEN_GUEST=1, in a disposable guest
 * (tests/vm/run-guest.sh).  Every event test subscribes to the "events"
 * group before it triggers the event, then waits for it for up to
 * EVENT_WAIT_MS, skipping events of other kinds.
 *
 * Environment: IDGEN_MODULE, the path of idgen.ko, enables the test that
 * unloads the module under a subscribed listener and loads it again.
 *
 * The netlink side is plain libnl-genl, independent of helper/common/idgen_nl.c, so
 * the two check each other.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "idgen_util.h"
#include "kselftest_harness.h"

#define TEST_REGION	6
#define TEST_WORKER	99
#define LEASE_MS	60000
#define EVENT_WAIT_MS	3000
#define NOBODY		65534
#define HOUR_MS		(3600 * 1000LL)
#define STEP_SLACK_MS	50

/* ------------------------------------------------------------------ */
/* Attributes, as received                                             */

/* The size each attribute has on the wire (0: not an idgen value). */
static const unsigned char attr_len[IDGEN_A_MAX + 1] = {
	[IDGEN_A_EVENT] = 4,
	[IDGEN_A_NOW_MS] = 8,
	[IDGEN_A_WALL_MS] = 8,
	[IDGEN_A_LAST_MS] = 8,
	[IDGEN_A_NEXT_MS] = 8,
	[IDGEN_A_FLOOR_MS] = 8,
	[IDGEN_A_VALID_UNTIL_MS] = 8,
	[IDGEN_A_HELD_STEP_MS] = 8,
	[IDGEN_A_STEP_MS] = 8,
	[IDGEN_A_FLAGS] = 4,
	[IDGEN_A_REGION] = 4,
	[IDGEN_A_WORKER] = 4,
	[IDGEN_A_REGION_BITS] = 1,
	[IDGEN_A_WORKER_BITS] = 1,
	[IDGEN_A_SEQ_BITS] = 1,
	[IDGEN_A_MAX_LEAD_MS] = 4,
	[IDGEN_A_MAX_STEP_MS] = 4,
	[IDGEN_A_FENCE_NEAR_MS] = 4,
	[IDGEN_A_CNT_IDS ... IDGEN_A_CNT_EVENTS_DROPPED] = 8,
};

struct attrs {
	__u8 cmd;
	bool has[IDGEN_A_MAX + 1];
	__u64 v[IDGEN_A_MAX + 1];
	int bad_len;		/* an attribute of the wrong size, or 0 */
	int dups;		/* attributes sent twice */
	int unknown;		/* attributes beyond IDGEN_A_MAX */
};

static void attrs_parse(struct attrs *a, struct nlmsghdr *nlh)
{
	struct genlmsghdr *gh = genlmsg_hdr(nlh);
	struct nlattr *attr;
	int rem, t;

	memset(a, 0, sizeof(*a));
	a->cmd = gh->cmd;
	nla_for_each_attr(attr, genlmsg_attrdata(gh, 0), genlmsg_attrlen(gh, 0), rem) {
		t = nla_type(attr);
		if (t == IDGEN_A_PAD)
			continue;
		if (t <= 0 || t > IDGEN_A_MAX) {
			a->unknown++;
			continue;
		}
		if (nla_len(attr) != attr_len[t]) {
			if (!a->bad_len)
				a->bad_len = t;
			continue;
		}
		a->dups += a->has[t];
		a->has[t] = true;
		switch (attr_len[t]) {
		case 1:
			a->v[t] = nla_get_u8(attr);
			break;
		case 4:
			a->v[t] = nla_get_u32(attr);
			break;
		default:
			a->v[t] = nla_get_u64(attr);
			break;
		}
	}
}

/* Well-formed: every attribute its size, none twice. */
#define EXPECT_WELL_FORMED(a) do {						\
	EXPECT_EQ(0, (a)->bad_len) TH_LOG("attribute %d has the wrong size", (a)->bad_len); \
	EXPECT_EQ(0, (a)->dups) TH_LOG("attributes sent twice");		\
	EXPECT_EQ(0, (a)->unknown) TH_LOG("attributes beyond IDGEN_A_MAX");	\
} while (0)

/* ------------------------------------------------------------------ */
/* Requests                                                            */

struct genl {
	struct nl_sock *sk;
	int family;
};

/* 0, -ENOENT when the family is absent, -EIO on other failures. */
static int genl_open(struct genl *g)
{
	int one = 1;

	g->sk = nl_socket_alloc();
	if (!g->sk)
		return -EIO;
	if (genl_connect(g->sk))
		goto err;
	setsockopt(nl_socket_get_fd(g->sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	g->family = genl_ctrl_resolve(g->sk, IDGEN_GENL_NAME);
	if (g->family == -NLE_OBJ_NOTFOUND) {
		nl_socket_free(g->sk);
		g->sk = NULL;
		return -ENOENT;
	}
	if (g->family < 0)
		goto err;
	return 0;
err:
	nl_socket_free(g->sk);
	g->sk = NULL;
	return -EIO;
}

static void genl_close(struct genl *g)
{
	if (g->sk)
		nl_socket_free(g->sk);
	g->sk = NULL;
}

/* An attribute to send as is: any type, any size. */
struct raw_attr {
	__u16 type;
	__u16 len;		/* 1, 4 or 8 */
	__u64 v;
};

struct reply {
	int err;		/* 1 while waiting, then 0 or -errno */
	char msg[256];		/* the extended ack message, "" if none */
	int miss_type;		/* NLMSGERR_ATTR_MISS_TYPE, or -1 */
	int nreplies;
	struct attrs a;		/* the (last) reply */
};

static int cb_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)e - 1;
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	struct reply *r = arg;
	int len = nlh->nlmsg_len, ack_len = sizeof(*nlh) + sizeof(*e);

	r->err = e->error;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		ack_len += e->msg.nlmsg_len - sizeof(e->msg);
	if (len <= ack_len ||
	    nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)nlh + ack_len),
		      len - ack_len, NULL))
		return NL_STOP;
	if (tb[NLMSGERR_ATTR_MSG])
		snprintf(r->msg, sizeof(r->msg), "%.*s",
			 (int)strnlen(nla_data(tb[NLMSGERR_ATTR_MSG]),
				      nla_len(tb[NLMSGERR_ATTR_MSG])),
			 (char *)nla_data(tb[NLMSGERR_ATTR_MSG]));
	if (tb[NLMSGERR_ATTR_MISS_TYPE])
		r->miss_type = nla_get_u32(tb[NLMSGERR_ATTR_MISS_TYPE]);
	return NL_STOP;
}

static int cb_ack(struct nl_msg *msg, void *arg)
{
	((struct reply *)arg)->err = 0;
	return NL_STOP;
}

static int cb_reply(struct nl_msg *msg, void *arg)
{
	struct reply *r = arg;

	r->nreplies++;
	attrs_parse(&r->a, nlmsg_hdr(msg));
	return NL_OK;
}

/* Send cmd with attrs, asking for an ACK; returns r->err. */
static int genl_do(struct genl *g, __u8 cmd, const struct raw_attr *attrs,
		   int nattrs, struct reply *r)
{
	struct nl_msg *msg = nlmsg_alloc();
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	int i;

	memset(r, 0, sizeof(*r));
	r->err = -EIO;
	r->miss_type = -1;
	if (!msg || !cb ||
	    !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, g->family, 0, 0, cmd,
			 IDGEN_GENL_VERSION))
		goto out;
	for (i = 0; i < nattrs; i++) {
		__u8 u8 = attrs[i].v;
		__u32 u32 = attrs[i].v;
		__u64 u64 = attrs[i].v;
		const void *p = attrs[i].len == 1 ? (void *)&u8 :
				attrs[i].len == 4 ? (void *)&u32 : (void *)&u64;

		if (nla_put(msg, attrs[i].type, attrs[i].len, p))
			goto out;
	}
	nl_cb_err(cb, NL_CB_CUSTOM, cb_error, r);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, cb_ack, r);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, cb_ack, r);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, cb_reply, r);
	if (nl_send_auto(g->sk, msg) < 0)
		goto out;
	r->err = 1;
	while (r->err > 0) {
		if (nl_recvmsgs(g->sk, cb) < 0 && r->err > 0) {
			r->err = -EIO;
			break;
		}
	}
out:
	nl_cb_put(cb);
	nlmsg_free(msg);
	return r->err;
}

static int genl_get_state(struct genl *g, struct reply *r)
{
	int err = genl_do(g, IDGEN_CMD_GET_STATE, NULL, 0, r);

	if (!err && r->nreplies != 1)
		err = r->err = -EPROTO;
	return err;
}

static int genl_set_fence_near(struct genl *g, __u32 ms, struct reply *r)
{
	struct raw_attr a = { IDGEN_A_FENCE_NEAR_MS, 4, ms };

	return genl_do(g, IDGEN_CMD_SET_CONFIG, &a, 1, r);
}

/* ------------------------------------------------------------------ */
/* Events                                                              */

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

static const char *event_name(__u64 type)
{
	return type <= IDGEN_EVENT_MAX && event_names[type] ? event_names[type] : "?";
}

#define MAX_EVENTS	128

struct listener {
	struct nl_sock *sk;
	int family;
	int group;
	struct attrs ev[MAX_EVENTS];	/* received since the last drain */
	int n;
	int next;			/* the first not yet waited for */
	int lost;			/* events beyond MAX_EVENTS */
};

static int cb_event(struct nl_msg *msg, void *arg)
{
	struct listener *l = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	if (nlh->nlmsg_type != l->family || !genlmsg_valid_hdr(nlh, 0))
		return NL_SKIP;
	if (l->n == MAX_EVENTS) {
		l->lost++;
		return NL_SKIP;
	}
	attrs_parse(&l->ev[l->n++], nlh);
	return NL_OK;
}

/* Join the "events" group (again, after a reload) on l's socket. */
static int listener_join(struct listener *l)
{
	struct nl_sock *sk = nl_socket_alloc();
	int ret = -EIO;

	/* Resolved on a socket of its own: the listener may be non-blocking. */
	if (!sk || genl_connect(sk))
		goto out;
	l->family = genl_ctrl_resolve(sk, IDGEN_GENL_NAME);
	l->group = genl_ctrl_resolve_grp(sk, IDGEN_GENL_NAME, IDGEN_GENL_MCGRP_EVENTS);
	if (l->family < 0 || l->group < 0 || nl_socket_add_membership(l->sk, l->group))
		goto out;
	ret = 0;
out:
	if (sk)
		nl_socket_free(sk);
	return ret;
}

static int listener_open(struct listener *l)
{
	memset(l, 0, sizeof(*l));
	l->sk = nl_socket_alloc();
	if (!l->sk || genl_connect(l->sk))
		return -EIO;
	nl_socket_disable_seq_check(l->sk);
	nl_socket_modify_cb(l->sk, NL_CB_VALID, NL_CB_CUSTOM, cb_event, l);
	if (nl_socket_set_nonblocking(l->sk))
		return -EIO;
	return listener_join(l);
}

static void listener_close(struct listener *l)
{
	if (l->sk)
		nl_socket_free(l->sk);
	l->sk = NULL;
}

/*
 * Receive what arrives within timeout_ms (0: what is queued now).  Returns
 * how many messages came, or the libnl error the socket reported (say,
 * ENOBUFS as -NLE_NOMEM).
 */
static int listener_pump(struct listener *l, int timeout_ms)
{
	struct pollfd p = { .fd = nl_socket_get_fd(l->sk), .events = POLLIN };
	int ret, got = 0;

	if (poll(&p, 1, timeout_ms) <= 0)
		return 0;
	while ((ret = nl_recvmsgs_report(l->sk, nl_socket_get_cb(l->sk))) > 0)
		got += ret;
	/* Non-blocking: libnl reports the empty queue as -NLE_AGAIN. */
	return ret < 0 && ret != -NLE_AGAIN ? ret : got;
}

/* Forget what was received so far: the next wait sees only newer events. */
static void listener_drain(struct listener *l)
{
	while (listener_pump(l, 0) > 0)
		;
	l->n = l->next = 0;
	l->lost = 0;
}

/*
 * Wait up to timeout_ms for an event of kind type, skipping others; copy
 * it to *ev.  Returns whether one came.
 */
static bool wait_event(struct listener *l, __u32 type, int timeout_ms, struct attrs *ev)
{
	__u64 deadline = clock_ns(CLOCK_MONOTONIC) + timeout_ms * NSEC_PER_MSEC;

	for (;;) {
		__u64 now;

		for (; l->next < l->n; l->next++) {
			struct attrs *a = &l->ev[l->next];

			if (a->cmd == IDGEN_CMD_EVENT && a->has[IDGEN_A_EVENT] &&
			    a->v[IDGEN_A_EVENT] == type) {
				*ev = *a;
				l->next++;
				return true;
			}
		}
		now = clock_ns(CLOCK_MONOTONIC);
		if (now >= deadline)
			return false;
		listener_pump(l, (deadline - now) / NSEC_PER_MSEC + 1);
	}
}

/* "lease-revoked, fence-near": what was received, for the log. */
static const char *events_seen(const struct listener *l, char *buf, size_t size)
{
	size_t len = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < l->n && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
				event_name(l->ev[i].v[IDGEN_A_EVENT]));
	if (!l->n)
		snprintf(buf, size, "none");
	return buf;
}

/* ------------------------------------------------------------------ */
/* GET_STATE against IDGEN_IOC_GET_STATE                               */

static const struct {
	int attr;
	size_t off;
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

#define NR_COUNTERS	(sizeof(counters) / sizeof(counters[0]))

/* In every GET_STATE reply; the lease's four only with a lease. */
static const int state_attrs[] = {
	IDGEN_A_NOW_MS, IDGEN_A_WALL_MS, IDGEN_A_LAST_MS, IDGEN_A_NEXT_MS,
	IDGEN_A_FLAGS, IDGEN_A_HELD_STEP_MS, IDGEN_A_MAX_LEAD_MS,
	IDGEN_A_MAX_STEP_MS, IDGEN_A_FENCE_NEAR_MS, IDGEN_A_REGION_BITS,
	IDGEN_A_WORKER_BITS, IDGEN_A_SEQ_BITS, IDGEN_A_CNT_IDS,
	IDGEN_A_CNT_READS, IDGEN_A_CNT_BORROWED_MS, IDGEN_A_CNT_STEPS_BACK,
	IDGEN_A_CNT_STEPS_FORWARD, IDGEN_A_CNT_STEPS_ADOPTED,
	IDGEN_A_CNT_FENCE_REFUSALS, IDGEN_A_CNT_LEAD_REFUSALS,
	IDGEN_A_CNT_NOLEASE_REFUSALS, IDGEN_A_CNT_RANGE_REFUSALS,
	IDGEN_A_CNT_EVENTS_DROPPED,
};

static const int lease_attrs[] = {
	IDGEN_A_REGION, IDGEN_A_WORKER, IDGEN_A_FLOOR_MS, IDGEN_A_VALID_UNTIL_MS,
};

#define EXPECT_BETWEEN(lo, v, hi, what) do {					\
	EXPECT_LE((__u64)(lo), (__u64)(v)) TH_LOG("%s %llu below %llu", what,	\
		(unsigned long long)(v), (unsigned long long)(lo));		\
	EXPECT_GE((__u64)(hi), (__u64)(v)) TH_LOG("%s %llu above %llu", what,	\
		(unsigned long long)(v), (unsigned long long)(hi));		\
} while (0)

static __u64 counter(const struct idgen_state *st, size_t i)
{
	return *(const __u64 *)((const char *)st + counters[i].off);
}

/*
 * n, the netlink reply, was taken between the ioctl states a and b: fixed
 * values equal theirs, moving ones lie between theirs.
 */
static void expect_state_matches(struct __test_metadata *_metadata,
				 const struct idgen_state *a,
				 const struct attrs *n,
				 const struct idgen_state *b)
{
	bool leased = a->flags & IDGEN_STATE_LEASED;
	const __u64 *v = n->v;
	size_t i;

	EXPECT_WELL_FORMED(n);
	EXPECT_EQ(IDGEN_CMD_GET_STATE, n->cmd);
	for (i = 0; i < sizeof(state_attrs) / sizeof(state_attrs[0]); i++)
		EXPECT_TRUE(n->has[state_attrs[i]])
			TH_LOG("GET_STATE reply without attribute %d", state_attrs[i]);
	EXPECT_FALSE(n->has[IDGEN_A_EVENT] || n->has[IDGEN_A_STEP_MS])
		TH_LOG("event attributes in a GET_STATE reply");

	ASSERT_EQ(leased, !!(b->flags & IDGEN_STATE_LEASED))
		TH_LOG("the lease changed during the test");
	for (i = 0; i < sizeof(lease_attrs) / sizeof(lease_attrs[0]); i++)
		EXPECT_EQ(leased, n->has[lease_attrs[i]])
			TH_LOG("lease attribute %d %s", lease_attrs[i],
			       leased ? "missing" : "sent without a lease");
	if (leased && a->valid_until_ms == b->valid_until_ms && a->floor_ms == b->floor_ms) {
		EXPECT_EQ(a->region, v[IDGEN_A_REGION]);
		EXPECT_EQ(a->worker, v[IDGEN_A_WORKER]);
		EXPECT_EQ(a->floor_ms, v[IDGEN_A_FLOOR_MS]);
		EXPECT_EQ(a->valid_until_ms, v[IDGEN_A_VALID_UNTIL_MS]);
	}

	EXPECT_BETWEEN(a->now_ms, v[IDGEN_A_NOW_MS], b->now_ms, "now_ms");
	EXPECT_BETWEEN(a->wall_ms, v[IDGEN_A_WALL_MS], b->wall_ms, "wall_ms");
	EXPECT_BETWEEN(a->last_ms, v[IDGEN_A_LAST_MS], b->last_ms, "last_ms");
	EXPECT_BETWEEN(a->next_ms, v[IDGEN_A_NEXT_MS], b->next_ms, "next_ms");
	if (a->flags == b->flags)
		EXPECT_EQ(a->flags, v[IDGEN_A_FLAGS]);
	if (a->held_step_ms == b->held_step_ms)
		EXPECT_EQ(a->held_step_ms, (__s64)v[IDGEN_A_HELD_STEP_MS]);
	EXPECT_EQ(a->max_lead_ms, v[IDGEN_A_MAX_LEAD_MS]);
	EXPECT_EQ(a->max_step_ms, v[IDGEN_A_MAX_STEP_MS]);
	EXPECT_EQ(a->region_bits, v[IDGEN_A_REGION_BITS]);
	EXPECT_EQ(a->worker_bits, v[IDGEN_A_WORKER_BITS]);
	EXPECT_EQ(a->seq_bits, v[IDGEN_A_SEQ_BITS]);
	EXPECT_BETWEEN(1, v[IDGEN_A_FENCE_NEAR_MS], IDGEN_FENCE_NEAR_MS_MAX, "fence_near_ms");
	for (i = 0; i < NR_COUNTERS; i++)
		EXPECT_BETWEEN(counter(a, i), v[counters[i].attr], counter(b, i), "counter");
}

/* ------------------------------------------------------------------ */
/* Read-only: any machine with the module                              */

/*
 * Open g on idgen's family, or SKIP the test when there is none (idgen.ko
 * not loaded).  The other failures are test failures.
 */
#define GENL_OPEN_OR_SKIP(g) do {						\
	int ret_ = genl_open(g);						\
										\
	if (ret_ == -ENOENT)							\
		SKIP(return, "no generic netlink family \"%s\" (idgen.ko not loaded?)", \
		     IDGEN_GENL_NAME);						\
	ASSERT_EQ(0, ret_) TH_LOG("generic netlink socket failed");		\
} while (0)

FIXTURE(nl) {
	int fd;
	struct genl g;
};

FIXTURE_SETUP(nl)
{
	GENL_OPEN_OR_SKIP(&self->g);
	OPEN_OR_SKIP(self->fd, 0);
}

FIXTURE_TEARDOWN(nl)
{
	close(self->fd);
	genl_close(&self->g);
}

TEST_F(nl, get_state_matches_ioctl)
{
	struct idgen_state a, b;
	struct reply r;

	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	ASSERT_EQ(0, genl_get_state(&self->g, &r))
		TH_LOG("GET_STATE: %s \"%s\"", strerror(-r.err), r.msg);
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	expect_state_matches(_metadata, &a, &r.a, &b);
}

/* "Request: no attributes": strict validation refuses any. */
TEST_F(nl, get_state_refuses_attributes)
{
	struct raw_attr attr = { IDGEN_A_FENCE_NEAR_MS, 4, 60000 };
	struct reply r;

	EXPECT_EQ(-EINVAL, genl_do(&self->g, IDGEN_CMD_GET_STATE, &attr, 1, &r))
		TH_LOG("GET_STATE with an attribute: %s", strerror(-r.err));
	EXPECT_EQ(0, r.nreplies);
}

TEST_F(nl, unknown_command_refused)
{
	struct reply r;

	/* IDGEN_CMD_EVENT is only ever sent by the kernel. */
	EXPECT_EQ(-EOPNOTSUPP, genl_do(&self->g, IDGEN_CMD_EVENT, NULL, 0, &r))
		TH_LOG("IDGEN_CMD_EVENT request: %s", strerror(-r.err));
	EXPECT_EQ(-EOPNOTSUPP, genl_do(&self->g, IDGEN_CMD_MAX + 1, NULL, 0, &r))
		TH_LOG("command %d: %s", IDGEN_CMD_MAX + 1, strerror(-r.err));
}

/* Any user may read the state; changing a setting needs CAP_NET_ADMIN. */
TEST_F(nl, nonroot_can_get_but_not_set)
{
	static const char *const what[] = {
		[1] = "dropping to uid/gid 65534 failed",
		[2] = "generic netlink as nobody failed",
		[3] = "GET_STATE as nobody failed",
		[4] = "SET_CONFIG as nobody did not fail with EPERM",
	};
	struct reply r, after;
	__u32 near;
	int status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root to drop to nobody");
	ASSERT_EQ(0, genl_get_state(&self->g, &r));
	near = r.a.v[IDGEN_A_FENCE_NEAR_MS];

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct genl g;

		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			_exit(1);
		if (genl_open(&g))
			_exit(2);
		if (genl_get_state(&g, &r) || !r.a.has[IDGEN_A_NOW_MS])
			_exit(3);
		/* A value root could set, so only the caller is wrong. */
		if (genl_set_fence_near(&g, near, &r) != -EPERM)
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("%s", WEXITSTATUS(status) < 5 ? what[WEXITSTATUS(status)] : "?");
	ASSERT_EQ(0, genl_get_state(&self->g, &after));
	EXPECT_EQ(near, after.a.v[IDGEN_A_FENCE_NEAR_MS]);
}

/* ------------------------------------------------------------------ */
/* SET_CONFIG refusals (root, in the guest: a bug would change it)      */

FIXTURE(malformed) {
	struct genl g;
	__u32 near0;
};

FIXTURE_VARIANT(malformed) {
	struct raw_attr attrs[2];
	int nattrs;
};

FIXTURE_VARIANT_ADD(malformed, fence_near_zero) {
	.attrs = { { IDGEN_A_FENCE_NEAR_MS, 4, 0 } }, .nattrs = 1,
};

FIXTURE_VARIANT_ADD(malformed, fence_near_4000000) {
	.attrs = { { IDGEN_A_FENCE_NEAR_MS, 4, 4000000 } }, .nattrs = 1,
};

FIXTURE_VARIANT_ADD(malformed, fence_near_max_plus_1) {
	.attrs = { { IDGEN_A_FENCE_NEAR_MS, 4, IDGEN_FENCE_NEAR_MS_MAX + 1 } }, .nattrs = 1,
};

FIXTURE_VARIANT_ADD(malformed, fence_near_missing) {
	.nattrs = 0,
};

FIXTURE_VARIANT_ADD(malformed, fence_near_u8) {
	.attrs = { { IDGEN_A_FENCE_NEAR_MS, 1, 5 } }, .nattrs = 1,
};

FIXTURE_VARIANT_ADD(malformed, fence_near_u64) {
	.attrs = { { IDGEN_A_FENCE_NEAR_MS, 8, 1234 } }, .nattrs = 1,
};

FIXTURE_VARIANT_ADD(malformed, other_attribute_only) {
	.attrs = { { IDGEN_A_FLAGS, 4, 0 } }, .nattrs = 1,
};

FIXTURE_VARIANT_ADD(malformed, fence_near_with_other_attribute) {
	.attrs = { { IDGEN_A_FENCE_NEAR_MS, 4, 1234 }, { IDGEN_A_REGION, 4, 1 } },
	.nattrs = 2,
};

FIXTURE_VARIANT_ADD(malformed, beyond_attr_max) {
	.attrs = { { IDGEN_A_FENCE_NEAR_MS, 4, 1234 }, { IDGEN_A_MAX + 1, 4, 1 } },
	.nattrs = 2,
};

FIXTURE_SETUP(malformed)
{
	struct reply r;

	REQUIRE_GUEST_ROOT("changes the generator");
	GENL_OPEN_OR_SKIP(&self->g);
	ASSERT_EQ(0, genl_get_state(&self->g, &r));
	self->near0 = r.a.v[IDGEN_A_FENCE_NEAR_MS];
}

FIXTURE_TEARDOWN(malformed)
{
	struct reply r;

	/* Only a failed test changed it; put it back for the others. */
	genl_set_fence_near(&self->g, self->near0, &r);
	genl_close(&self->g);
}

/*
 * EINVAL per the header; ERANGE is what the kernel's range policy returns
 * for a value out of range, accepted too.  Either way an extended ack
 * message, and nothing changed.
 */
TEST_F(malformed, set_config_refused)
{
	struct reply r, after;
	int err;

	err = genl_do(&self->g, IDGEN_CMD_SET_CONFIG, variant->attrs, variant->nattrs, &r);
	EXPECT_TRUE(err == -EINVAL || err == -ERANGE)
		TH_LOG("SET_CONFIG: %s, expected EINVAL or ERANGE", err ? strerror(-err) : "accepted");
	EXPECT_NE(0, r.msg[0])
		TH_LOG("no extended ack message (missing-attribute TLV: %d)", r.miss_type);
	TH_LOG("refused with %s: \"%s\"", strerror(-err), r.msg);
	ASSERT_EQ(0, genl_get_state(&self->g, &after));
	EXPECT_EQ(self->near0, after.a.v[IDGEN_A_FENCE_NEAR_MS]);
}

/* ------------------------------------------------------------------ */
/* Leases, events and the clock (root, in the guest)                   */

FIXTURE(guest) {
	int fd;
	struct genl g;
	struct listener l;
	__u32 region, worker;
	__u32 near0;
	bool near_changed;
	__u64 real0, mono0;	/* CLOCK_REALTIME, CLOCK_MONOTONIC at setup */
	bool clock_stepped;
	int caught_up_ms;	/* how long teardown waits for the clock */
};

/* Put CLOCK_REALTIME where it would be had nobody stepped it. */
static int restore_clock(FIXTURE_DATA(guest) *self)
{
	__u64 ns = self->real0 + (clock_ns(CLOCK_MONOTONIC) - self->mono0);
	struct timespec ts = {
		.tv_sec = ns / NSEC_PER_SEC,
		.tv_nsec = ns % NSEC_PER_SEC,
	};

	return clock_settime(CLOCK_REALTIME, &ts);
}

static void step_clock(struct __test_metadata *_metadata,
		       FIXTURE_DATA(guest) *self, int64_t delta_ms)
{
	self->clock_stepped = true;
	ASSERT_EQ(0, step_wall_clock(delta_ms)) TH_LOG("clock_settime: %s", strerror(errno));
}

/*
 * Wait until the generator is behind the wall clock (an adopted step or a
 * floor may have left it ahead), so reads do not fail with ETIME and a new
 * lease mints at the wall clock's millisecond.  now_ms never goes back, so
 * idgen_wait_caught_up() does not see this after a step back.
 */
static int wait_behind_wall(int fd, int timeout_ms)
{
	__u64 deadline = clock_ns(CLOCK_MONOTONIC) + timeout_ms * NSEC_PER_MSEC;
	struct idgen_state st;

	for (;;) {
		if (idgen_get_state(fd, &st))
			return -1;
		if (st.last_ms < st.wall_ms)
			return 0;
		if (clock_ns(CLOCK_MONOTONIC) >= deadline) {
			errno = ETIMEDOUT;
			return -1;
		}
		sleep_ms(10);
	}
}

static int revoke_if_leased(int fd)
{
	struct idgen_state st;
	__u64 l;

	if (idgen_get_state(fd, &st))
		return -1;
	return st.flags & IDGEN_STATE_LEASED ? idgen_revoke(fd, &l) : 0;
}

FIXTURE_SETUP(guest)
{
	struct idgen_state st;
	struct reply r;

	REQUIRE_GUEST_ROOT("changes the generator");
	GENL_OPEN_OR_SKIP(&self->g);
	self->fd = open(IDGEN_DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", IDGEN_DEV, strerror(errno));
	ASSERT_EQ(0, genl_get_state(&self->g, &r));
	self->near0 = r.a.v[IDGEN_A_FENCE_NEAR_MS];
	self->caught_up_ms = 10000;

	ASSERT_EQ(0, revoke_if_leased(self->fd));
	ASSERT_EQ(0, wait_behind_wall(self->fd, 20000))
		TH_LOG("generator still ahead of the wall clock: %s", strerror(errno));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	ASSERT_FALSE(st.flags & IDGEN_STATE_CLOCK_HELD) TH_LOG("a forward step is held");
	self->region = TEST_REGION & field_mask(st.region_bits);
	self->worker = TEST_WORKER & field_mask(st.worker_bits);
	self->real0 = clock_ns(CLOCK_REALTIME);
	self->mono0 = clock_ns(CLOCK_MONOTONIC);
	ASSERT_EQ(0, listener_open(&self->l)) TH_LOG("cannot join the events group");
}

FIXTURE_TEARDOWN(guest)
{
	struct reply r;

	if (self->clock_stepped) {
		EXPECT_EQ(0, restore_clock(self));
		/* Restoring may itself be a forward step the module holds. */
		EXPECT_EQ(0, ioctl(self->fd, IDGEN_IOC_ADOPT_CLOCK));
	}
	if (self->near_changed)
		EXPECT_EQ(0, genl_set_fence_near(&self->g, self->near0, &r));
	EXPECT_EQ(0, revoke_if_leased(self->fd));
	/* An adopted step leaves the generator ahead until the clock catches up. */
	EXPECT_EQ(0, wait_behind_wall(self->fd, self->caught_up_ms))
		TH_LOG("generator still ahead of the wall clock");
	listener_close(&self->l);
	genl_close(&self->g);
	close(self->fd);
}

/* Lease region/worker from the host's last_ms to now + valid_for. */
static void lease_up(struct __test_metadata *_metadata, FIXTURE_DATA(guest) *self,
		     __u32 worker, __u64 valid_for, struct idgen_state *st)
{
	struct idgen_state before;

	ASSERT_EQ(0, idgen_get_state(self->fd, &before));
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, worker, before.last_ms,
				     before.now_ms + valid_for))
		TH_LOG("set lease: %s", strerror(errno));
	ASSERT_EQ(0, idgen_get_state(self->fd, st));
	ASSERT_TRUE(st->flags & IDGEN_STATE_LEASED);
}

/* One read of one ID: 0 or -errno. */
static int read_one(int fd)
{
	__u64 id;

	return idgen_read(fd, &id, 1) == 1 ? 0 : -errno;
}

static void set_fence_near(struct __test_metadata *_metadata,
			   FIXTURE_DATA(guest) *self, __u32 ms)
{
	struct reply r;

	self->near_changed = true;
	ASSERT_EQ(0, genl_set_fence_near(&self->g, ms, &r))
		TH_LOG("SET_CONFIG fence-near %u: %s \"%s\"", ms, strerror(-r.err), r.msg);
}

static __u64 events_dropped(struct genl *g)
{
	struct reply r;

	return genl_get_state(g, &r) ? 0 : r.a.v[IDGEN_A_CNT_EVENTS_DROPPED];
}

/* Wait for an event of kind type, failing the test with what came instead. */
#define ASSERT_EVENT(self, type, ev) do {					\
	char _seen[512];							\
										\
	ASSERT_TRUE(wait_event(&(self)->l, (type), EVENT_WAIT_MS, (ev)))	\
		TH_LOG("no %s event within %d ms; got: %s; events_dropped %llu", \
		       event_name(type), EVENT_WAIT_MS,				\
		       events_seen(&(self)->l, _seen, sizeof(_seen)),		\
		       events_dropped(&(self)->g));				\
	EXPECT_WELL_FORMED(ev);							\
} while (0)

/* IDGEN_A_NOW_MS: the wall clock when the event was sent, within [w0, w1]. */
#define EXPECT_SENT_BETWEEN(ev, w0, w1) do {					\
	EXPECT_TRUE((ev)->has[IDGEN_A_NOW_MS]);					\
	EXPECT_BETWEEN((w0) - 2, (ev)->v[IDGEN_A_NOW_MS], (w1) + 2, "event now_ms"); \
} while (0)

/* A lease event's node, floor and fence. */
#define EXPECT_LEASE_EVENT(ev, reg, wrk, until) do {				\
	EXPECT_TRUE((ev)->has[IDGEN_A_REGION] && (ev)->has[IDGEN_A_WORKER] &&	\
		    (ev)->has[IDGEN_A_VALID_UNTIL_MS]);				\
	EXPECT_EQ((reg), (ev)->v[IDGEN_A_REGION]);				\
	EXPECT_EQ((wrk), (ev)->v[IDGEN_A_WORKER]);				\
	EXPECT_EQ((until), (ev)->v[IDGEN_A_VALID_UNTIL_MS]);			\
	EXPECT_FALSE((ev)->has[IDGEN_A_STEP_MS]);				\
} while (0)

TEST_F(guest, get_state_leased_matches_ioctl)
{
	struct idgen_state st, a, b;
	struct reply r;

	lease_up(_metadata, self, self->worker, LEASE_MS, &st);
	ASSERT_EQ(0, read_one(self->fd));
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	ASSERT_EQ(0, genl_get_state(&self->g, &r));
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	expect_state_matches(_metadata, &a, &r.a, &b);
}

TEST_F(guest, get_state_without_lease_matches_ioctl)
{
	struct idgen_state a, b;
	struct reply r;

	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	ASSERT_FALSE(a.flags & IDGEN_STATE_LEASED);
	ASSERT_EQ(0, genl_get_state(&self->g, &r));
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	expect_state_matches(_metadata, &a, &r.a, &b);
}

TEST_F(guest, set_config_bounds_accepted)
{
	struct reply r;

	set_fence_near(_metadata, self, 1);
	ASSERT_EQ(0, genl_get_state(&self->g, &r));
	EXPECT_EQ(1, r.a.v[IDGEN_A_FENCE_NEAR_MS]);
	set_fence_near(_metadata, self, IDGEN_FENCE_NEAR_MS_MAX);
	ASSERT_EQ(0, genl_get_state(&self->g, &r));
	EXPECT_EQ(IDGEN_FENCE_NEAR_MS_MAX, r.a.v[IDGEN_A_FENCE_NEAR_MS]);
}

/* A new lease, then a new node: lease-set, with what was set. */
TEST_F(guest, lease_set_event)
{
	struct idgen_state st, now;
	__u32 worker2;
	struct attrs ev;
	int64_t w0, w1;

	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	worker2 = (self->worker + 1) & field_mask(st.worker_bits);
	listener_drain(&self->l);
	w0 = wall_idgen_ms();
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker, st.last_ms,
				     st.now_ms + LEASE_MS));
	ASSERT_EVENT(self, IDGEN_EVENT_LEASE_SET, &ev);
	w1 = wall_idgen_ms();
	EXPECT_LEASE_EVENT(&ev, self->region, self->worker, st.now_ms + LEASE_MS);
	EXPECT_TRUE(ev.has[IDGEN_A_FLOOR_MS]);
	EXPECT_EQ(st.last_ms, ev.v[IDGEN_A_FLOOR_MS]);
	EXPECT_FALSE(ev.has[IDGEN_A_LAST_MS]);
	EXPECT_SENT_BETWEEN(&ev, w0, w1);

	/* Another node: a new lease too. */
	ASSERT_EQ(0, read_one(self->fd));
	ASSERT_EQ(0, idgen_get_state(self->fd, &now));
	listener_drain(&self->l);
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, worker2, now.last_ms,
				     now.now_ms + LEASE_MS + 1000));
	ASSERT_EVENT(self, IDGEN_EVENT_LEASE_SET, &ev);
	EXPECT_LEASE_EVENT(&ev, self->region, worker2, now.now_ms + LEASE_MS + 1000);
	EXPECT_EQ(now.last_ms, ev.v[IDGEN_A_FLOOR_MS]);
}

/* The same node again: lease-renewed, not lease-set. */
TEST_F(guest, lease_renewed_event)
{
	struct idgen_state st, after;
	struct attrs ev;
	int64_t w0, w1;
	int i;

	lease_up(_metadata, self, self->worker, LEASE_MS, &st);
	listener_drain(&self->l);
	w0 = wall_idgen_ms();
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker, st.floor_ms,
				     st.valid_until_ms + 1000));
	ASSERT_EVENT(self, IDGEN_EVENT_LEASE_RENEWED, &ev);
	w1 = wall_idgen_ms();
	EXPECT_LEASE_EVENT(&ev, self->region, self->worker, st.valid_until_ms + 1000);
	EXPECT_TRUE(ev.has[IDGEN_A_FLOOR_MS]);
	EXPECT_EQ(st.floor_ms, ev.v[IDGEN_A_FLOOR_MS]);
	EXPECT_SENT_BETWEEN(&ev, w0, w1);
	for (i = 0; i < self->l.n; i++)
		EXPECT_NE(IDGEN_EVENT_LEASE_SET, self->l.ev[i].v[IDGEN_A_EVENT])
			TH_LOG("a renewal announced as a new lease");

	/*
	 * A renewal asking for a lower floor keeps the lease's: the event
	 * should carry the lease's floor, the one GET_STATE shows.
	 */
	listener_drain(&self->l);
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker, 0,
				     st.valid_until_ms + 2000));
	ASSERT_EVENT(self, IDGEN_EVENT_LEASE_RENEWED, &ev);
	ASSERT_EQ(0, idgen_get_state(self->fd, &after));
	EXPECT_EQ(st.floor_ms, after.floor_ms);
	EXPECT_EQ(after.floor_ms, ev.v[IDGEN_A_FLOOR_MS])
		TH_LOG("renewal event floor %llu is the request's, not the lease's %llu",
		       ev.v[IDGEN_A_FLOOR_MS], after.floor_ms);
}

/* Revoke: lease-revoked with the L the ioctl returned. */
TEST_F(guest, lease_revoked_event)
{
	struct idgen_state st;
	__u64 ids[16], l;
	struct attrs ev;
	int64_t w0, w1;

	lease_up(_metadata, self, self->worker, LEASE_MS, &st);
	ASSERT_EQ(16, idgen_read(self->fd, ids, 16));
	listener_drain(&self->l);
	w0 = wall_idgen_ms();
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EVENT(self, IDGEN_EVENT_LEASE_REVOKED, &ev);
	w1 = wall_idgen_ms();
	EXPECT_LEASE_EVENT(&ev, self->region, self->worker, st.valid_until_ms);
	EXPECT_TRUE(ev.has[IDGEN_A_LAST_MS]);
	EXPECT_EQ(l, ev.v[IDGEN_A_LAST_MS]);
	EXPECT_LE(id_ms(ids[15]), ev.v[IDGEN_A_LAST_MS]);
	EXPECT_FALSE(ev.has[IDGEN_A_FLOOR_MS]) TH_LOG("revoked carries last_ms instead of the floor");
	EXPECT_SENT_BETWEEN(&ev, w0, w1);

	/* Without a lease a revoke changes nothing: no event. */
	listener_drain(&self->l);
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	EXPECT_FALSE(wait_event(&self->l, IDGEN_EVENT_LEASE_REVOKED, 300, &ev))
		TH_LOG("lease-revoked without a lease");
}

/* fence-near 60 s, a lease of 30 s, one read: fence-near. */
TEST_F(guest, fence_near_event)
{
	struct idgen_state st;
	struct attrs ev;
	int64_t w0, w1;

	set_fence_near(_metadata, self, 60000);
	lease_up(_metadata, self, self->worker, 30000, &st);
	listener_drain(&self->l);
	w0 = wall_idgen_ms();
	ASSERT_EQ(0, read_one(self->fd));
	ASSERT_EVENT(self, IDGEN_EVENT_FENCE_NEAR, &ev);
	w1 = wall_idgen_ms();
	EXPECT_LEASE_EVENT(&ev, self->region, self->worker, st.valid_until_ms);
	EXPECT_SENT_BETWEEN(&ev, w0, w1);

	/* Once per lease. */
	ASSERT_EQ(0, read_one(self->fd));
	EXPECT_FALSE(wait_event(&self->l, IDGEN_EVENT_FENCE_NEAR, 300, &ev))
		TH_LOG("fence-near sent twice for one lease");
}

/* The setting decides: not near at 60 s with 120 s to go, near at 1 h. */
TEST_F(guest, fence_near_follows_setting)
{
	struct idgen_state st;
	struct attrs ev;

	set_fence_near(_metadata, self, 60000);
	lease_up(_metadata, self, self->worker, 120000, &st);
	listener_drain(&self->l);
	ASSERT_EQ(0, read_one(self->fd));
	EXPECT_FALSE(wait_event(&self->l, IDGEN_EVENT_FENCE_NEAR, 300, &ev))
		TH_LOG("fence-near with the fence 120 s away and fence-near 60 s");
	set_fence_near(_metadata, self, IDGEN_FENCE_NEAR_MS_MAX);
	ASSERT_EQ(0, read_one(self->fd));
	ASSERT_EVENT(self, IDGEN_EVENT_FENCE_NEAR, &ev);
	EXPECT_LEASE_EVENT(&ev, self->region, self->worker, st.valid_until_ms);
}

/* A lease 150 ms long, read until EKEYEXPIRED: fence-reached. */
TEST_F(guest, fence_reached_event)
{
	struct idgen_state st;
	__u64 until, deadline;
	struct attrs ev;
	int err;

	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	until = st.now_ms + 150;
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker, st.last_ms, until));
	listener_drain(&self->l);
	deadline = clock_ns(CLOCK_MONOTONIC) + 3 * NSEC_PER_SEC;
	while ((err = read_one(self->fd)) == 0 && clock_ns(CLOCK_MONOTONIC) < deadline)
		sleep_ms(5);
	ASSERT_EQ(-EKEYEXPIRED, err) TH_LOG("read: %s", strerror(-err));
	ASSERT_EVENT(self, IDGEN_EVENT_FENCE_REACHED, &ev);
	EXPECT_LEASE_EVENT(&ev, self->region, self->worker, until);

	/* Once, however many reads meet the fence. */
	EXPECT_EQ(-EKEYEXPIRED, read_one(self->fd));
	EXPECT_FALSE(wait_event(&self->l, IDGEN_EVENT_FENCE_REACHED, 300, &ev))
		TH_LOG("fence-reached sent twice for one lease");
}

/* The wall clock 500 ms back, then a read: clock-step-back, about -500. */
TEST_F(guest, clock_step_back_event)
{
	struct idgen_state st;
	struct attrs ev;
	int64_t w0, w1;

	lease_up(_metadata, self, self->worker, LEASE_MS, &st);
	if (st.max_lead_ms < 600)
		SKIP(return, "max_lead_ms %u: a 500 ms step would stop minting", st.max_lead_ms);
	ASSERT_EQ(0, read_one(self->fd));
	listener_drain(&self->l);
	step_clock(_metadata, self, -500);
	w0 = wall_idgen_ms();
	EXPECT_EQ(0, read_one(self->fd));
	ASSERT_EVENT(self, IDGEN_EVENT_CLOCK_STEP_BACK, &ev);
	w1 = wall_idgen_ms();
	ASSERT_TRUE(ev.has[IDGEN_A_STEP_MS]);
	EXPECT_GE(STEP_SLACK_MS, llabs((__s64)ev.v[IDGEN_A_STEP_MS] + 500))
		TH_LOG("step_ms %lld, expected about -500", (long long)ev.v[IDGEN_A_STEP_MS]);
	EXPECT_FALSE(ev.has[IDGEN_A_FLAGS] && ev.v[IDGEN_A_FLAGS] & IDGEN_STATE_CLOCK_HELD);
	EXPECT_FALSE(ev.has[IDGEN_A_REGION]);
	EXPECT_SENT_BETWEEN(&ev, w0, w1);
}

/*
 * A flapping clock cannot flood listeners: of FLAPS steps back in a row, at
 * most IDGEN_EVENT_BURST clock-step-back events arrive, and every one held
 * back is counted in IDGEN_A_CNT_EVENTS_DROPPED.  (The steps add up to less
 * than the lead bound, so no lead-exceeded event mixes in.)
 */
#define FLAPS		30
#define FLAP_MS		20

TEST_F(guest, flapping_clock_is_rate_limited)
{
	struct idgen_state st;
	struct attrs ev;
	__u64 dropped0, dropped;
	int i, got = 0;

	lease_up(_metadata, self, self->worker, LEASE_MS, &st);
	if (st.max_lead_ms < FLAPS * FLAP_MS + 200)
		SKIP(return, "max_lead_ms %u: the steps would stop minting", st.max_lead_ms);
	ASSERT_EQ(0, read_one(self->fd));
	listener_drain(&self->l);
	dropped0 = events_dropped(&self->g);
	for (i = 0; i < FLAPS; i++) {
		step_clock(_metadata, self, -FLAP_MS);
		EXPECT_EQ(0, read_one(self->fd));
	}
	while (wait_event(&self->l, IDGEN_EVENT_CLOCK_STEP_BACK, 500, &ev))
		got++;
	dropped = events_dropped(&self->g) - dropped0;
	TH_LOG("%d steps back: %d events delivered, %llu held back", FLAPS, got,
	       (unsigned long long)dropped);
	EXPECT_GE(IDGEN_EVENT_BURST, got);
	EXPECT_EQ(FLAPS, got + dropped);
}

/*
 * Forward 2 h, then a read: clock-step-forward, about +7200000 and held.
 * Then the step is reverted, which leaves no trace.
 */
TEST_F(guest, clock_step_forward_event)
{
	struct idgen_state st;
	struct attrs ev;
	int64_t w0, w1;

	lease_up(_metadata, self, self->worker, LEASE_MS, &st);
	if (st.max_step_ms >= HOUR_MS)
		SKIP(return, "max_step_ms %u: 2 h would be followed", st.max_step_ms);
	ASSERT_EQ(0, read_one(self->fd));
	listener_drain(&self->l);
	step_clock(_metadata, self, 2 * HOUR_MS);
	w0 = wall_idgen_ms();
	EXPECT_EQ(0, read_one(self->fd));
	ASSERT_EVENT(self, IDGEN_EVENT_CLOCK_STEP_FWD, &ev);
	w1 = wall_idgen_ms();
	ASSERT_TRUE(ev.has[IDGEN_A_STEP_MS]);
	EXPECT_GE(STEP_SLACK_MS, llabs((__s64)ev.v[IDGEN_A_STEP_MS] - 2 * HOUR_MS))
		TH_LOG("step_ms %lld, expected about %lld", (long long)ev.v[IDGEN_A_STEP_MS],
		       2 * HOUR_MS);
	EXPECT_TRUE(ev.has[IDGEN_A_FLAGS] && ev.v[IDGEN_A_FLAGS] & IDGEN_STATE_CLOCK_HELD)
		TH_LOG("a 2 h step not flagged as held");
	EXPECT_SENT_BETWEEN(&ev, w0, w1);

	/* Back where it was: minting goes on, nothing held. */
	ASSERT_EQ(0, restore_clock(self));
	EXPECT_EQ(0, read_one(self->fd));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	EXPECT_FALSE(st.flags & IDGEN_STATE_CLOCK_HELD);
}

/*
 * Forward F (beyond max_step and max_lead), adopted: clock-adopted, about
 * F.  Then the real time back: the generator stands F ahead, a read fails
 * with ETIME: lead-exceeded.  F is small, so the clock is back and the
 * generator caught up (teardown waits) before the next test.
 */
TEST_F_TIMEOUT(guest, clock_adopted_then_lead_exceeded, 90)
{
	struct idgen_state st;
	__u64 dropped;
	struct attrs ev;
	int64_t fwd;
	int err;

	lease_up(_metadata, self, self->worker, LEASE_MS, &st);
	fwd = (st.max_step_ms > st.max_lead_ms ? st.max_step_ms : st.max_lead_ms) + 10000;
	self->caught_up_ms = fwd + 10000;
	ASSERT_EQ(0, read_one(self->fd));
	listener_drain(&self->l);
	step_clock(_metadata, self, fwd);
	EXPECT_EQ(0, read_one(self->fd));
	ASSERT_EVENT(self, IDGEN_EVENT_CLOCK_STEP_FWD, &ev);
	EXPECT_GE(STEP_SLACK_MS, llabs((__s64)ev.v[IDGEN_A_STEP_MS] - fwd))
		TH_LOG("step_ms %lld, expected about %lld", (long long)ev.v[IDGEN_A_STEP_MS],
		       (long long)fwd);

	listener_drain(&self->l);
	ASSERT_EQ(0, ioctl(self->fd, IDGEN_IOC_ADOPT_CLOCK));
	ASSERT_EVENT(self, IDGEN_EVENT_CLOCK_ADOPTED, &ev);
	ASSERT_TRUE(ev.has[IDGEN_A_STEP_MS]);
	EXPECT_GE(STEP_SLACK_MS, llabs((__s64)ev.v[IDGEN_A_STEP_MS] - fwd))
		TH_LOG("adopted step_ms %lld, expected about %lld",
		       (long long)ev.v[IDGEN_A_STEP_MS], (long long)fwd);
	EXPECT_EQ(0, read_one(self->fd));

	/* The real time back: F behind the generator, beyond max_lead. */
	listener_drain(&self->l);
	dropped = events_dropped(&self->g);
	ASSERT_EQ(0, restore_clock(self));
	err = read_one(self->fd);
	ASSERT_EQ(-ETIME, err) TH_LOG("read with the clock %lld ms behind: %s",
				      (long long)fwd, strerror(-err));
	if (!wait_event(&self->l, IDGEN_EVENT_LEAD_EXCEEDED, EVENT_WAIT_MS, &ev)) {
		if (events_dropped(&self->g) > dropped) {
			/* Held back by the limit (earlier refusals): again. */
			TH_LOG("lead-exceeded rate-limited; retrying after the interval");
			sleep_ms(IDGEN_EVENT_INTERVAL_MS + 100);
			ASSERT_EQ(-ETIME, read_one(self->fd));
		}
		ASSERT_EVENT(self, IDGEN_EVENT_LEAD_EXCEEDED, &ev);
	}
	EXPECT_WELL_FORMED(&ev);
	EXPECT_FALSE(ev.has[IDGEN_A_REGION] || ev.has[IDGEN_A_STEP_MS]);
}

/* ------------------------------------------------------------------ */
/* Unloading the module under a listener                               */

/* Run argv in a child; its exit status, or -1. */
static int run(const char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * A subscribed listener while rmmod runs: the family and its group go
 * away under it, the socket stays usable (an error is allowed), and after
 * insmod it can join the new group and gets events again.  Last: it leaves
 * a freshly loaded module behind.
 */
FIXTURE(reload) {
	int unused;
};

FIXTURE_SETUP(reload)
{
}

FIXTURE_TEARDOWN(reload)
{
}

TEST_F_TIMEOUT(reload, listener_survives_rmmod, 60)
{
	const char *module = getenv("IDGEN_MODULE");
	const char *rmmod[] = { "rmmod", IDGEN_DEVICE_NAME, NULL };
	const char *insmod[] = { "insmod", module, NULL };
	struct listener l;
	struct idgen_state st;
	struct attrs ev;
	struct genl g;
	int status, ret, fd;
	pid_t pid;

	REQUIRE_GUEST_ROOT("changes the generator");
	if (!module)
		SKIP(return, "IDGEN_MODULE (the path of idgen.ko to reload) is not set");
	ret = genl_open(&g);
	if (ret == -ENOENT)
		SKIP(return, "no generic netlink family \"%s\"", IDGEN_GENL_NAME);
	ASSERT_EQ(0, ret);
	genl_close(&g);
	ASSERT_EQ(0, listener_open(&l));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		execvp(rmmod[0], (char *const *)rmmod);
		_exit(127);
	}
	/* Listen while the module goes. */
	do {
		ret = listener_pump(&l, 50);
	} while (waitpid(pid, &status, WNOHANG) == 0);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) TH_LOG("rmmod failed");
	ret = listener_pump(&l, 200);
	TH_LOG("listener after rmmod: %s", ret < 0 ? nl_geterror(ret) : "no error");
	EXPECT_EQ(-ENOENT, genl_open(&g)) TH_LOG("the family outlived rmmod");

	ASSERT_EQ(0, run(insmod)) TH_LOG("insmod %s failed", module);
	ASSERT_EQ(0, genl_open(&g));
	ASSERT_EQ(0, listener_join(&l)) TH_LOG("cannot join the new events group");
	listener_drain(&l);

	fd = open(IDGEN_DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("open %s after insmod: %s", IDGEN_DEV, strerror(errno));
	ASSERT_EQ(0, idgen_get_state(fd, &st));
	ASSERT_EQ(0, idgen_set_lease(fd, TEST_REGION & field_mask(st.region_bits),
				     TEST_WORKER & field_mask(st.worker_bits), st.last_ms,
				     st.now_ms + LEASE_MS));
	EXPECT_TRUE(wait_event(&l, IDGEN_EVENT_LEASE_SET, EVENT_WAIT_MS, &ev))
		TH_LOG("the old listener gets no events from the reloaded module");
	EXPECT_EQ(0, revoke_if_leased(fd));
	close(fd);
	listener_close(&l);
	genl_close(&g);
}

TEST_HARNESS_MAIN

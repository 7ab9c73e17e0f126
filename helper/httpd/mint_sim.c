// SPDX-License-Identifier: GPL-2.0
/*
 * The simulated generator (mint_sim.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"
#include "log.h"
#include "mint_sim.h"

#define SEQ_BITS	12	/* layout version 1: 3/7/12 */
#define SEQ_MASK	((1ULL << SEQ_BITS) - 1)

struct mint_sim {
	/*
	 * The last (ms, sequence) reserved, as ms << SEQ_BITS | seq: adding
	 * one past a full sequence carries into the next ms (a borrow).
	 */
	_Atomic uint64_t last;
	_Atomic uint64_t minted;	/* IDs handed out, for the log at the end */
	uint32_t worker;
	int lock_fd;			/* the node's lock (lock_node()) */
	uint64_t floor_ms;
	uint64_t valid_until_ms;	/* LIBIDGEN_MS_MAX + 1: no fence */
};

/* The wall clock in idgen ms; 0 before the epoch. */
static uint64_t wall_ms(void)
{
	struct timespec ts;
	uint64_t ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	return ms > LIBIDGEN_EPOCH_UNIX_MS ? ms - LIBIDGEN_EPOCH_UNIX_MS : 0;
}

static ssize_t sim_mint(void *ctx, uint64_t *ids, size_t n)
{
	struct mint_sim *s = ctx;
	uint64_t old, first, top, now, lead_end, fence;
	unsigned int waited = 0;
	size_t i;

	if (!n)
		return -EINVAL;
	old = atomic_load(&s->last);
	for (;;) {
		now = wall_ms();
		if (!now)
			return -ETIME;		/* a clock before the epoch */
		first = old + 1;
		if (first >> SEQ_BITS < now)
			first = now << SEQ_BITS;
		/* The last slot it may use: within the lead and the fence. */
		lead_end = ((now + MINT_SIM_MAX_LEAD_MS + 1) << SEQ_BITS) - 1;
		fence = s->valid_until_ms < LIBIDGEN_MS_MAX + 1 ?
			s->valid_until_ms : LIBIDGEN_MS_MAX + 1;
		if (first >> SEQ_BITS >= fence)
			return fence == LIBIDGEN_MS_MAX + 1 ? -EOVERFLOW : -EKEYEXPIRED;
		if (first > lead_end) {
			/*
			 * Only the lead holds it back, the clock running on: wait
			 * for the next millisecond, as the module's read blocks.
			 * Further ahead than the lead can take it, the clock was
			 * stepped back: refused, as by the module.
			 */
			if ((first >> SEQ_BITS) - now > MINT_SIM_MAX_LEAD_MS + 1 ||
			    waited++ >= MINT_SIM_WAIT_MS)
				return -ETIME;
			minter_sleep_to_next_ms();
			old = atomic_load(&s->last);
			continue;
		}
		top = first + (n - 1);
		if (top > lead_end)
			top = lead_end;
		if (top >> SEQ_BITS >= fence)
			top = (fence << SEQ_BITS) - 1;
		if (atomic_compare_exchange_weak(&s->last, &old, top))
			break;
	}

	for (i = 0; first + i <= top; i++) {
		uint64_t slot = first + i;

		idgen_compose(&idgen_layout_v1, slot >> SEQ_BITS, 0, s->worker,
			      slot & SEQ_MASK, &ids[i]);
	}
	atomic_fetch_add(&s->minted, i);
	return i;
}

static int sim_state(void *ctx, struct minter_state *st)
{
	struct mint_sim *s = ctx;
	uint64_t now = wall_ms(), slot = atomic_load(&s->last);
	uint64_t next = (slot + 1) >> SEQ_BITS;

	st->leased = true;
	st->region = 0;
	st->worker = s->worker;
	st->floor_ms = s->floor_ms;
	st->valid_until_ms = s->valid_until_ms;
	st->wall_ms = now;
	/* Its clock: the wall clock, which it trusts (the module's now_ms). */
	st->now_ms = now;
	/*
	 * In force while it can still mint: its next ms, by the clock or
	 * by what it used, lies below the fence.
	 */
	if ((next > now ? next : now) >= s->valid_until_ms)
		st->leased = false;
	return 0;
}

static int sim_counters(void *ctx, struct minter_counters *c)
{
	struct mint_sim *s = ctx;

	memset(c, 0, sizeof(*c));
	c->ids = atomic_load(&s->minted);
	return 0;
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
	struct mint_sim *s = ctx;

	log_info("simulated generator: %" PRIu64 " IDs minted", atomic_load(&s->minted));
	close(s->lock_fd);
	free(s);
}

static const struct minter_ops sim_ops = {
	.mint = sim_mint,
	.state = sim_state,
	.counters = sim_counters,
	.layout = sim_layout,
	.close = sim_close,
};

/*
 * One simulated generator per node on the host: two of one worker would
 * mint the same IDs.  The lock is a name in the abstract socket namespace
 * ("@idgen-httpd-sim-r0-wWORKER", unix(7)), bound for the process's life:
 * one name for every user, environment and directory on the host (its
 * network namespace), which no file system clean-up can remove and which
 * the kernel lets go when the process ends however it ends.  A file's
 * lock could be neither: its directory depended on who ran it, and a
 * removed file let a second process lock a new one.  The abstract
 * namespace is one per network namespace: a simulation in another one
 * (a container's, unshare -n) does not see this lock, and mint_sim_open()
 * says so in the log.
 */
static int lock_node(uint32_t worker, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd, ret;

	/* sun_path[0] stays 0: the abstract namespace. */
	len = offsetof(struct sockaddr_un, sun_path) + 1 +
	      snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
		       MINT_SIM_LOCK_NAME "%u", worker);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "the simulated generator of region 0, worker %u "
			 "cannot make its lock (a unix socket): %s", worker, strerror(-ret));
		return ret;
	}
	if (bind(fd, (struct sockaddr *)&sa, len)) {
		ret = -errno;
		close(fd);
		if (ret == -EADDRINUSE) {
			snprintf(err, errlen, "another simulated generator of region 0, "
				 "worker %u runs on this host (it holds @" MINT_SIM_LOCK_NAME
				 "%u): two would mint the same IDs; give each its own worker",
				 worker, worker);
			return -EBUSY;
		}
		snprintf(err, errlen, "the simulated generator of region 0, worker %u "
			 "cannot take its lock @" MINT_SIM_LOCK_NAME "%u: %s", worker,
			 worker, strerror(-ret));
		return ret;
	}
	return fd;
}

/* Whether this process shares its network namespace with PID 1's. */
static bool same_netns_as_init(void)
{
	char mine[64], init[64];
	ssize_t a, b;

	a = readlink("/proc/self/ns/net", mine, sizeof(mine));
	b = readlink("/proc/1/ns/net", init, sizeof(init));
	/* Unreadable (no /proc, PID 1 not ours to see): no warning. */
	return a <= 0 || b <= 0 || (a == b && !memcmp(mine, init, a));
}

int mint_sim_open(struct minter *m, uint32_t worker, uint64_t lease_ms,
		  char *err, size_t errlen)
{
	struct timespec pause = { 0, 1000000 };
	struct mint_sim *s;
	uint64_t now = wall_ms();
	int fd;

	if (worker >> idgen_layout_v1.worker_bits) {
		snprintf(err, errlen, "the simulation's worker must be from 0 to 127");
		return -EINVAL;
	}
	if (!now) {
		snprintf(err, errlen, "the wall clock is before the idgen epoch");
		return -ETIME;
	}
	/*
	 * A real generator's lease may hold any worker of region 0 too: the
	 * module loaded (seen in /sys even where a container has no device
	 * node) is a real generator on this host.
	 */
	if (!access("/dev/idgen", F_OK) || !access("/sys/module/idgen", F_OK)) {
		snprintf(err, errlen, "the idgen module is loaded (/dev/idgen or "
			 "/sys/module/idgen): a real generator runs on this host, and a "
			 "simulated one could mint its IDs; use --device /dev/idgen");
		return -EEXIST;
	}
	fd = lock_node(worker, err, errlen);
	if (fd < 0)
		return fd;
	if (!same_netns_as_init())
		log_warn("simulated generator: this process is in a network namespace "
			 "of its own, and its lock @" MINT_SIM_LOCK_NAME "%u holds only "
			 "there: a simulation of worker %u in another namespace would "
			 "mint the same IDs", worker, worker);
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	s->worker = worker;
	s->lock_fd = fd;
	/* Above every ms a run before this one could have stamped. */
	s->floor_ms = now + MINT_SIM_MAX_LEAD_MS;
	atomic_init(&s->last, (s->floor_ms << SEQ_BITS) | SEQ_MASK);
	s->valid_until_ms = lease_ms ? s->floor_ms + lease_ms : LIBIDGEN_MS_MAX + 1;
	while (wall_ms() <= s->floor_ms)
		nanosleep(&pause, NULL);
	m->ops = &sim_ops;
	m->ctx = s;
	snprintf(m->name, sizeof(m->name), "sim:%u", worker);
	m->simulated = true;
	m->sim_worker = worker;
	return 0;
}

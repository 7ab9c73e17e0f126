// SPDX-License-Identifier: GPL-2.0
/*
 * kfuzz - a seeded fuzzer of idgen.ko's user interfaces that checks the
 * contract of include/uapi/linux/idgen.h while it runs.
 *
 * Run it as root in a disposable guest with idgen.ko loaded (it sets and
 * revokes leases and changes the fence-near setting):
 *
 *   tests/fuzz/kfuzz [--seed S] [--calls N] [--seconds T] [--threads N]
 *                    [--module PATH] [--no-clock]
 *   tests/fuzz/kfuzz --lease     set a plain lease for ten minutes, for
 *                                other fuzzers (trinity) to mint under
 *
 * tests/vm/fuzz-suite.sh does so; `make fuzz` runs 10^6 calls on 6.12 and
 * scripts/check.sh a fixed-seed slice on the debug kernel.  The same seed
 * makes the same choices in each thread; the interleaving is the
 * scheduler's.
 *
 * What it calls, from --threads threads (one of them also changes the
 * lease) and one process running as uid 65534:
 *   - every IDGEN_IOC_* ioctl with random and edge arguments: leases of
 *     random and garbage layouts, nodes in and out of range, floors and
 *     fences near 0, near now and near IDGEN_MS_MAX, flags and pad
 *     garbage, bad pointers; unknown commands and known numbers with
 *     other sizes or directions (what a 32-bit caller could send);
 *   - read() and readv() of random sizes: 0, aligned, unaligned, huge,
 *     into NULL, kernel addresses and buffers that end at a guard page,
 *     blocking (interrupted by a short per-thread timer) and O_NONBLOCK;
 *   - poll() and epoll (edge- and level-triggered), lseek, pread, mmap,
 *     write, reopening the device;
 *   - steps of the wall clock, back and forward, by up to a few seconds
 *     and by 30 s, and back to the true time (unless --no-clock; the
 *     clock is left at the true time at the end);
 *   - generic netlink requests to the idgen family: both commands with
 *     random, missing, oversized and wrong-type attributes, unknown
 *     commands, dump requests, truncated headers and attributes; a
 *     listener on the events group whose events must be well-formed.
 * With --module, also (now and then) floors far ahead, up to IDGEN_MS_MAX,
 * that, once accepted, leave the generator unable to mint until it is
 * reloaded: between rounds, when the host's last_ms lies more than
 * POISONED_MS ahead of its clock (such a floor, or a step back), it
 * reloads idgen.ko, which exercises load and unload too.  Without it such
 * floors are not set.
 *
 * What it checks, on every call:
 *   1. every ID a read returns is above every ID the same thread read
 *      before and above every ID of every read that had returned before
 *      this one began (the generator's order, across threads and
 *      processes); bit 63 is clear;
 *   2. no ID is returned twice (a shared hash set of the round's IDs);
 *   3. every ID carries the node (region, worker, layout) of a lease in
 *      force at some point during its read, a millisecond above that
 *      lease's floor and below its fence, and at or below the L of a
 *      revoke of it; a read that saw a lease in force all along never
 *      fails with ENOKEY, and a blocking read never with EAGAIN;
 *   4. every errno is one the header documents for the call, and EINVAL
 *      exactly when the arguments are invalid (unaligned length, bad
 *      lease, fence moved back), ENOTTY for unknown commands, ESPIPE,
 *      ENODEV for what the device does not do;
 *   5. lease changes: after each, GET_STATE shows exactly the lease the
 *      change should have left (a failed one changed nothing), a revoke's
 *      L is at or above the lease's floor, the host's last_ms never falls
 *      behind an ID read;
 *   6. netlink: GET_STATE replies carry every attribute at its size (the
 *      lease's iff one is in force), SET_CONFIG fails with ERANGE or
 *      EINVAL exactly as the policy says, unknown commands and dumps with
 *      EOPNOTSUPP, truncated headers with EINVAL; events are well-formed;
 *   7. without CAP_SYS_ADMIN / CAP_NET_ADMIN, every change fails with
 *      EPERM while reads and GET_STATE work;
 *   8. the run was not vacuous: IDs were minted and checked.
 * It prints one TAP line per check, the number of calls made, and the
 * first failures in detail; it exits 1 if a check failed.  Kernel splats
 * (KASAN, lockdep, WARN) are the guest harness's to catch.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "../selftests/idgen_util.h"

#define NOBODY		65534
#define MAX_THREADS	16
#define HIST		4096		/* lease states kept, a ring */
#define SET_SLOTS	(1U << 22)	/* the round's IDs: 32 MiB */
#define SET_PROBES	64
#define BUF_BYTES	(1U << 20)	/* a reader's buffer, then a guard page */
#define MAX_REPORTS	25
/* A host this far ahead of its clock mints nothing for a while: reload. */
#define POISONED_MS	5000
#define KERNEL_ADDR	((void *)0xffffffff81000000UL)

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define min(a, b)	((a) < (b) ? (a) : (b))
#define max(a, b)	((a) > (b) ? (a) : (b))

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

enum check {
	C_ORDER, C_UNIQUE, C_LEASE, C_ERRNO, C_CHANGE, C_NETLINK, C_PERM,
	C_NVACUOUS, C_MAX
};

static const char *const check_names[C_MAX] = {
	[C_ORDER] = "every ID read is above every ID its thread read before and every ID of reads that returned before it began",
	[C_UNIQUE] = "no ID was returned twice",
	[C_LEASE] = "every ID carries the node of a lease in force during its read, within its floor, fence and revoke",
	[C_ERRNO] = "every errno is one documented for its call, EINVAL exactly for invalid arguments",
	[C_CHANGE] = "GET_STATE shows exactly what each lease change left; a failed one changed nothing",
	[C_NETLINK] = "netlink replies are well-formed, errors and events as documented",
	[C_PERM] = "without CAP_SYS_ADMIN/CAP_NET_ADMIN every change fails with EPERM",
	[C_NVACUOUS] = "IDs were minted and checked under leases, lease changes and netlink requests succeeded",
};

enum op {
	OP_READ, OP_READV, OP_POLL, OP_EPOLL, OP_GET_STATE, OP_JUNK_IOCTL,
	OP_MISC, OP_REOPEN, OP_NETLINK, OP_EVENTS, OP_CHANGE, OP_CLOCK, OP_MAX
};

static const char *const op_names[OP_MAX] = {
	"read", "readv", "poll", "epoll", "get_state", "other ioctl", "lseek/pread/mmap/write",
	"reopen", "netlink", "events", "lease change", "clock step",
};

/* The state after one lease change: what the fuzzer knows is in force. */
struct lease_rec {
	bool leased;
	__u32 region, worker;
	__u8 rb, wb, sb;
	__u64 first_floor;	/* the floor the node was set with */
	__u64 floor;		/* raised by renewals */
	__u64 valid_until;
	bool revoke;		/* this change revoked a lease ... */
	__u64 revoke_l;		/* ... and the L it returned */
};

/* Shared by the threads and the unprivileged process (MAP_SHARED). */
struct shared {
	atomic_ulong calls;
	atomic_ulong failures[C_MAX];
	atomic_ulong reported;
	atomic_ulong op_calls[OP_MAX];
	atomic_ulong ids, reads_checked, reads_unchecked, set_skipped;
	atomic_ulong leases_set, nl_ok, nl_events;
	atomic_ulong read_errno[256];	/* read() results by errno, 0 for IDs */
	atomic_ulong begun, done;	/* lease changes started, completed */
	struct lease_rec hist[HIST];
	atomic_ullong max_id;		/* of reads that returned */
	atomic_int stop;
	long long clock_offset_ms;	/* the wall clock's steps so far */
	__u64 clock_step_at;		/* CLOCK_MONOTONIC ns of the last */
	atomic_ulong clock_steps;
	unsigned long round_calls;	/* this round's quota */
	atomic_ulong round_used;
	__u64 set[SET_SLOTS];
};

static struct shared *sh;
static struct {
	unsigned long long seed;
	unsigned long calls;
	unsigned int seconds;
	unsigned int threads;
	const char *module;
	bool clock;
} opt = { .seed = 1, .calls = 1000000, .threads = 4, .clock = true };
static __u64 start_ns;
static __u8 def_rb, def_wb, def_sb;	/* the module's default layout */
static pthread_mutex_t change_mu = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------ */
/* Per thread                                                          */

struct ctx {
	int idx;
	bool priv;		/* root, or the uid 65534 process */
	__u64 rng;
	int fd, fd_nb, fd_rw;	/* blocking, O_NONBLOCK, O_RDWR (root) */
	int ep;			/* epoll on fd_nb */
	__u8 *buf;		/* BUF_BYTES, then a PROT_NONE page */
	__u64 last_id;		/* the highest ID this thread read */
	timer_t timer;
	bool have_timer;
	struct nl_sock *nl;
	int family;
	__u32 seq;
	struct nl_sock *ev;	/* events listener */
	__u8 nlbuf[65536];
};

static __u64 rnd(struct ctx *c)
{
	/* xorshift64* */
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * 2685821657736338717ULL;
}

static __u64 below(struct ctx *c, __u64 n)
{
	return n ? rnd(c) % n : 0;
}

static bool chance(struct ctx *c, unsigned int percent)
{
	return below(c, 100) < percent;
}

static void fail(enum check k, const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	atomic_fetch_add(&sh->failures[k], 1);
	if (atomic_fetch_add(&sh->reported, 1) >= MAX_REPORTS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One write per line: threads and the child share stdout. */
	dprintf(1, "# FAIL [%d] %s\n", k + 1, msg);
}

/* Is err one of the listed errnos (0-terminated)? */
static bool errno_in(int err, ...)
{
	va_list ap;
	int e;

	va_start(ap, err);
	while ((e = va_arg(ap, int)))
		if (e == err) {
			va_end(ap);
			return true;
		}
	va_end(ap);
	return false;
}

static bool time_up(void)
{
	if (atomic_load(&sh->stop))
		return true;
	if (opt.seconds && clock_ns(CLOCK_MONOTONIC) - start_ns >= opt.seconds * NSEC_PER_SEC) {
		atomic_store(&sh->stop, 1);
		return true;
	}
	return false;
}

static __u64 now_ms(void)
{
	int64_t ms = wall_idgen_ms();

	return ms > 0 ? (__u64)ms : 0;
}

/* ------------------------------------------------------------------ */
/* Checking IDs                                                        */

static bool set_insert(__u64 id, bool *dup)
{
	__u64 h = id * 0x9e3779b97f4a7c15ULL;
	unsigned int i, slot = (h >> 40) & (SET_SLOTS - 1);

	*dup = false;
	for (i = 0; i < SET_PROBES; i++, slot = (slot + 1) & (SET_SLOTS - 1)) {
		__u64 expected = 0;

		if (__atomic_compare_exchange_n(&sh->set[slot], &expected, id, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return true;
		if (expected == id) {
			*dup = true;
			return true;
		}
	}
	return false;
}

static bool lease_fits(const struct lease_rec *l, __u64 id)
{
	unsigned int nb = l->rb + l->wb;
	__u64 node = (id >> l->sb) & ((1ULL << nb) - 1);
	__u64 ms = id_ms(id);

	return l->leased && node == (((__u64)l->region << l->wb) | l->worker) &&
	       ms > l->first_floor && ms < l->valid_until;
}

/*
 * Does some lease in force between change a-1 and change b explain id?
 * A lease revoked later in the window bounds its IDs by the revoke's L.
 */
static bool lease_explains(__u64 id, unsigned long a, unsigned long b)
{
	__u64 min_l = ~0ULL;
	unsigned long j = b + 1;

	while (j-- > (a ? a - 1 : 0)) {
		const struct lease_rec *l = &sh->hist[j % HIST];

		if (lease_fits(l, id) && id_ms(id) <= min_l)
			return true;
		if (l->revoke && l->revoke_l < min_l)
			min_l = l->revoke_l;
	}
	return false;
}

/* Was a lease in force all through the window? */
static bool leased_throughout(unsigned long a, unsigned long b)
{
	unsigned long j;

	for (j = a ? a - 1 : 0; j <= b; j++)
		if (!sh->hist[j % HIST].leased)
			return false;
	return true;
}

/* Wait for change b to complete, so its record is written. */
static bool window_ready(unsigned long a, unsigned long b)
{
	int spins = 0;

	while (atomic_load(&sh->done) < b) {
		if (++spins > 200000)
			return false;
		sched_yield();
	}
	return b - (a ? a - 1 : 0) < HIST / 2;
}

static void check_ids(struct ctx *c, const char *what, const __u64 *ids, size_t n,
		      unsigned long a, unsigned long b, __u64 gmax)
{
	bool window = window_ready(a, b), dup;
	size_t i, unexplained = 0;
	__u64 prev = c->last_id, top;

	for (i = 0; i < n; i++) {
		__u64 id = ids[i];

		if (id >> 63 || id <= prev)
			fail(C_ORDER, "%s: ID %zu of %zu is %#llx, after %#llx (bit 63 set or not increasing)",
			     what, i, n, (unsigned long long)id, (unsigned long long)prev);
		if (i == 0 && id <= gmax)
			fail(C_ORDER, "%s: first ID %#llx not above %#llx, read and returned before this read began",
			     what, (unsigned long long)id, (unsigned long long)gmax);
		prev = id;
		if (!set_insert(id, &dup))
			atomic_fetch_add(&sh->set_skipped, 1);
		else if (dup)
			fail(C_UNIQUE, "%s: ID %#llx returned twice", what, (unsigned long long)id);
		if (window && !lease_explains(id, a, b)) {
			if (!unexplained++)
				fail(C_LEASE, "%s: ID %#llx (ms %llu) fits no lease in force during the read (changes %lu..%lu)",
				     what, (unsigned long long)id,
				     (unsigned long long)id_ms(id), a, b);
		}
	}
	/* The ring may have moved on while we looked. */
	if (window && atomic_load(&sh->begun) - (a ? a - 1 : 0) >= HIST)
		window = false;
	atomic_fetch_add(window ? &sh->reads_checked : &sh->reads_unchecked, 1);
	atomic_fetch_add(&sh->ids, n);
	if (n) {
		c->last_id = ids[n - 1];
		top = atomic_load(&sh->max_id);
		while (top < ids[n - 1] &&
		       !atomic_compare_exchange_weak(&sh->max_id, &top, ids[n - 1]))
			;
	}
}

/* ------------------------------------------------------------------ */
/* The device                                                          */

static void timer_arm(struct ctx *c, unsigned int us)
{
	struct itimerspec it = { .it_value = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L } };

	if (c->have_timer)
		timer_settime(c->timer, 0, &it, NULL);
}

static void timer_disarm(struct ctx *c)
{
	struct itimerspec it = {};

	if (c->have_timer)
		timer_settime(c->timer, 0, &it, NULL);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static int open_dev(int flags)
{
	int fd = open(IDGEN_DEV, flags | O_CLOEXEC);

	if (fd < 0)
		fail(C_ERRNO, "open(%s, %#x): %s", IDGEN_DEV, flags, strerror(errno));
	return fd;
}

static void open_fds(struct ctx *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDNORM };

	c->fd = open_dev(O_RDONLY);
	c->fd_nb = open_dev(O_RDONLY | O_NONBLOCK);
	c->fd_rw = c->priv ? open_dev(O_RDWR) : -1;
	if (chance(c, 50))
		ev.events |= EPOLLET;
	if (c->ep >= 0 && c->fd_nb >= 0 && epoll_ctl(c->ep, EPOLL_CTL_ADD, c->fd_nb, &ev))
		fail(C_ERRNO, "epoll_ctl(ADD /dev/idgen): %s", strerror(errno));
}

static void close_fds(struct ctx *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->fd_nb >= 0)
		close(c->fd_nb);	/* leaves the epoll set with it */
	if (c->fd_rw >= 0)
		close(c->fd_rw);
	c->fd = c->fd_nb = c->fd_rw = -1;
}

/* A length for a read: mostly modest, sometimes an edge. */
static size_t pick_len(struct ctx *c)
{
	switch (below(c, 12)) {
	case 0:
		return 0;
	case 1:
		return 8;
	case 2:
		return 1 + below(c, 7);			/* shorter than an ID */
	case 3:
		return 8 * (1 + below(c, 512)) + 1 + below(c, 7); /* unaligned */
	case 4:
		return (size_t)1 << (16 + below(c, 15));	/* huge */
	case 5:
		return 8 * 4096 + 8 * below(c, 3);	/* a batch, give or take */
	case 6:
		return 8 * (1 + below(c, 2048));
	default:
		return 8 * (1 + below(c, 128));
	}
}

/* Where the read goes: the buffer, its end at the guard page, or nowhere. */
static void *pick_dst(struct ctx *c, size_t *room)
{
	size_t r;

	switch (below(c, 20)) {
	case 0:
		*room = 0;
		return NULL;
	case 1:
		*room = 0;
		return KERNEL_ADDR;
	case 2:
		*room = 0;
		return c->buf + BUF_BYTES;		/* the guard page */
	case 3:
	case 4:
		/* Ends at the guard page: the copy stops there. */
		r = 8 * (1 + below(c, 64));
		*room = r;
		return c->buf + BUF_BYTES - r;
	default:
		*room = BUF_BYTES;
		return c->buf;
	}
}

static void do_read(struct ctx *c, bool vectored)
{
	bool nb = chance(c, 50);
	int fd = nb ? c->fd_nb : (c->fd_rw >= 0 && chance(c, 30) ? c->fd_rw : c->fd);
	struct iovec iov[6];
	int niov = 1, i;
	size_t len = 0, room;
	unsigned long a, b;
	__u64 gmax;
	ssize_t r;
	int err;
	void *dst;

	if (fd < 0)
		return;
	if (vectored) {
		size_t off = 0;

		/* Back to back in the buffer, so the IDs land contiguous. */
		niov = 2 + below(c, 5);
		for (i = 0; i < niov; i++) {
			size_t l = chance(c, 70) ? 8 * below(c, 200) : below(c, 1200);

			if (off + l > BUF_BYTES)
				l = BUF_BYTES - off;
			iov[i].iov_base = c->buf + off;
			iov[i].iov_len = l;
			off += l;
			len += l;
		}
		room = len;
		dst = c->buf;
	} else {
		len = pick_len(c);
		dst = pick_dst(c, &room);
		if (!dst && len == 0)
			dst = c->buf;
	}

	if (!nb)
		timer_arm(c, 200 + below(c, 20000));
	gmax = atomic_load(&sh->max_id);
	a = atomic_load(&sh->begun);
	r = vectored ? readv(fd, iov, niov) : read(fd, dst, len);
	err = errno;
	b = atomic_load(&sh->begun);
	if (!nb)
		timer_disarm(c);

	atomic_fetch_add(&sh->read_errno[r < 0 && err < 256 ? err : 0], 1);
	if (r < 0) {
		if (len % 8) {
			/* The VFS refuses a kernel address before the device sees the length. */
			if (err != EINVAL && !(err == EFAULT && dst == KERNEL_ADDR))
				fail(C_ERRNO, "read of %zu bytes (unaligned) failed with %s, not EINVAL",
				     len, strerror(err));
			return;
		}
		if (!errno_in(err, ENOKEY, EKEYEXPIRED, ETIME, EOVERFLOW, EFAULT, EINTR,
			      nb ? EAGAIN : EINTR, 0))
			fail(C_ERRNO, "%s read of %zu bytes failed with %s", nb ? "non-blocking" : "blocking",
			     len, strerror(err));
		if (err == EFAULT && room >= 8)
			fail(C_ERRNO, "read of %zu bytes into %zu writable bytes failed with EFAULT", len, room);
		if (err == ENOKEY && window_ready(a, b) && leased_throughout(a, b))
			fail(C_LEASE, "read failed with ENOKEY while a lease was in force (changes %lu..%lu)", a, b);
		return;
	}
	if (len % 8) {
		fail(C_ERRNO, "read of %zu bytes (unaligned) returned %zd, not EINVAL", len, r);
		return;
	}
	if ((size_t)r > len || r % 8 || (size_t)r > room) {
		fail(C_ERRNO, "read of %zu bytes (%zu writable) returned %zd", len, room, r);
		return;
	}
	if (len && !r)
		fail(C_ERRNO, "read of %zu bytes returned 0", len);
	check_ids(c, vectored ? "readv" : "read", dst, r / 8, a, b, gmax);
}

static void do_poll(struct ctx *c)
{
	struct pollfd p = { .fd = chance(c, 50) ? c->fd : c->fd_nb, .events = POLLIN | POLLRDNORM | POLLOUT | POLLPRI };
	int r;

	if (p.fd < 0)
		return;
	r = poll(&p, 1, below(c, 4));
	if (r < 0 && errno != EINTR)
		fail(C_ERRNO, "poll: %s", strerror(errno));
	if (r > 0 && (p.revents & ~(POLLIN | POLLRDNORM)))
		fail(C_ERRNO, "poll reported %#x, not only POLLIN|POLLRDNORM", p.revents);
}

static void do_epoll(struct ctx *c)
{
	struct epoll_event ev[4];
	int r, i;

	if (c->ep < 0)
		return;
	r = epoll_wait(c->ep, ev, 4, below(c, 4));
	if (r < 0 && errno != EINTR)
		fail(C_ERRNO, "epoll_wait: %s", strerror(errno));
	for (i = 0; i < r; i++)
		if (ev[i].events & ~(EPOLLIN | EPOLLRDNORM))
			fail(C_ERRNO, "epoll reported %#x, not only EPOLLIN|EPOLLRDNORM", ev[i].events);
}

/* The state the header describes, whatever the lease. */
static void check_state(const struct idgen_state *st, const char *who)
{
	bool leased = st->flags & IDGEN_STATE_LEASED;

	if (st->pad || st->flags & ~(IDGEN_STATE_LEASED | IDGEN_STATE_CLOCK_HELD) ||
	    st->region_bits + st->worker_bits + st->seq_bits != IDGEN_NODE_SEQ_BITS ||
	    st->region_bits > IDGEN_REGION_BITS_MAX || st->seq_bits < IDGEN_SEQ_BITS_MIN ||
	    st->next_ms < st->now_ms || !st->max_lead_ms ||
	    !(st->flags & IDGEN_STATE_CLOCK_HELD) != !st->held_step_ms ||
	    (leased && (st->floor_ms >= st->valid_until_ms ||
			(__u64)st->region >> st->region_bits ||
			(__u64)st->worker >> st->worker_bits)) ||
	    (!leased && (st->floor_ms || st->valid_until_ms || st->region || st->worker)))
		fail(C_CHANGE, "%s: GET_STATE inconsistent: flags %#x layout %u/%u/%u pad %u now %llu next %llu held %lld floor %llu until %llu r%u/w%u",
		     who, st->flags, st->region_bits, st->worker_bits, st->seq_bits, st->pad,
		     (unsigned long long)st->now_ms, (unsigned long long)st->next_ms,
		     (long long)st->held_step_ms, (unsigned long long)st->floor_ms,
		     (unsigned long long)st->valid_until_ms, st->region, st->worker);
}

static void do_get_state(struct ctx *c)
{
	struct idgen_state *st = (void *)c->buf;
	__u64 gmax = atomic_load(&sh->max_id);
	int fd = c->fd, r;

	switch (below(c, 10)) {
	case 0:
		r = ioctl(fd, IDGEN_IOC_GET_STATE, NULL);
		break;
	case 1:
		/* Straddles the guard page. */
		r = ioctl(fd, IDGEN_IOC_GET_STATE, c->buf + BUF_BYTES - 8 * below(c, 20));
		break;
	case 2:
		r = ioctl(fd, IDGEN_IOC_GET_STATE, KERNEL_ADDR);
		break;
	default:
		memset(st, JUNK, sizeof(*st));
		r = ioctl(fd, IDGEN_IOC_GET_STATE, st);
		if (r) {
			fail(C_ERRNO, "GET_STATE into a good buffer: %s", strerror(errno));
			return;
		}
		check_state(st, "get_state");
		if (gmax && st->last_ms < id_ms(gmax))
			fail(C_ORDER, "GET_STATE last_ms %llu below the ms of ID %#llx read before",
			     (unsigned long long)st->last_ms, (unsigned long long)gmax);
		return;
	}
	if (r == 0 || errno != EFAULT)
		fail(C_ERRNO, "GET_STATE to a bad address: %d, %s, not EFAULT", r, strerror(errno));
}

/* A command number the device does not know, nor the VFS handles itself. */
static unsigned int junk_cmd(struct ctx *c)
{
	static const unsigned int sizes[] = { 0, 4, 8, 28, 32, 36, 152, 160, 164 };
	unsigned int type, cmd;

	for (;;) {
		switch (below(c, 4)) {
		case 0:	/* our numbers with another size or direction */
			cmd = _IOC(below(c, 4), IDGEN_IOC_MAGIC, 1 + below(c, 4),
				   sizes[below(c, ARRAY_SIZE(sizes))]);
			break;
		case 1:	/* our type, other numbers */
			cmd = _IOC(below(c, 4), IDGEN_IOC_MAGIC, chance(c, 50) ? 0 : 5 + below(c, 251),
				   sizes[below(c, ARRAY_SIZE(sizes))]);
			break;
		case 2:	/* the old type byte, nsfs's */
			cmd = _IOC(below(c, 4), 0xB7, below(c, 8), below(c, 2) * 8);
			break;
		default:
			cmd = rnd(c);
			break;
		}
		if (cmd == IDGEN_IOC_SET_LEASE || cmd == IDGEN_IOC_REVOKE ||
		    cmd == IDGEN_IOC_GET_STATE || cmd == IDGEN_IOC_ADOPT_CLOCK)
			continue;
		/* FIO*, FIFREEZE, FICLONE, FS_IOC_*: the VFS answers those. */
		type = _IOC_TYPE(cmd);
		if (type == 'T' || type == 'X' || type == 'f' || type == 0x94 || type == 0x15 ||
		    type == 'v')
			continue;
		return cmd;
	}
}

static void do_junk_ioctl(struct ctx *c)
{
	unsigned int cmd = junk_cmd(c);
	void *arg = chance(c, 50) ? (void *)c->buf : chance(c, 50) ? NULL : (void *)(uintptr_t)rnd(c);
	int r = ioctl(chance(c, 50) ? c->fd : c->fd_nb, cmd, arg);

	if (r != -1 || errno != ENOTTY)
		fail(C_ERRNO, "ioctl %#x: %d, %s, not ENOTTY", cmd, r, r ? strerror(errno) : "success");
}

static void do_misc(struct ctx *c)
{
	void *p;
	ssize_t r;

	switch (below(c, 5)) {
	case 0:
		if (lseek(c->fd, below(c, 64), SEEK_SET) != -1 || errno != ESPIPE)
			fail(C_ERRNO, "lseek: %s, not ESPIPE", strerror(errno));
		break;
	case 1:
		r = pread(c->fd_nb, c->buf, 8 * below(c, 8), below(c, 64));
		if (r != -1 || errno != ESPIPE)
			fail(C_ERRNO, "pread: %zd, %s, not ESPIPE", r, strerror(errno));
		break;
	case 2:
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, c->fd, 0);
		if (p != MAP_FAILED || errno != ENODEV) {
			fail(C_ERRNO, "mmap of the device: %s, not ENODEV", strerror(errno));
			if (p != MAP_FAILED)
				munmap(p, 4096);
		}
		break;
	case 3:
		r = write(c->fd_rw >= 0 ? c->fd_rw : c->fd, c->buf, 8);
		if (r != -1 || !errno_in(errno, c->fd_rw >= 0 ? EINVAL : EBADF, 0))
			fail(C_ERRNO, "write: %zd, %s", r, strerror(errno));
		break;
	default:
		if (fcntl(c->fd, F_GETFL) < 0)
			fail(C_ERRNO, "fcntl(F_GETFL): %s", strerror(errno));
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Lease changes (one thread, under change_mu, or refused EPERM)       */

static __u64 pick_ms(struct ctx *c, __u64 now, const struct lease_rec *cur, bool fence)
{
	switch (below(c, fence ? 12 : 10)) {
	case 0:
		return below(c, 3);				/* near 0 */
	case 1:
		return IDGEN_MS_MAX + 1 - below(c, 4);		/* near the end */
	case 2:
		return IDGEN_MS_MAX + 1 + below(c, 3);		/* beyond it */
	case 3:
		return rnd(c);
	case 4:
		return now + below(c, 50);			/* near now */
	case 5:
		return now > 10000 ? now - below(c, 10000) : 0;
	case 6:
		return cur->leased ? cur->valid_until : now;	/* a handover */
	case 7:
		return now + below(c, 1200);			/* a little ahead */
	case 10:
	case 11:
		return now + 1000 + below(c, 600000);		/* a usual fence */
	default:
		return fence ? now + 60000 : 0;
	}
}

/* Would the kernel refuse these arguments with EINVAL, as the header says? */
static bool lease_invalid(const struct idgen_lease_args *a, __u8 *rb, __u8 *wb, __u8 *sb)
{
	if (a->pad || a->flags & ~IDGEN_LEASE_FLAGS_ALL)
		return true;
	if (!a->region_bits && !a->worker_bits && !a->seq_bits) {
		*rb = def_rb, *wb = def_wb, *sb = def_sb;
	} else {
		*rb = a->region_bits, *wb = a->worker_bits, *sb = a->seq_bits;
		if (*rb > IDGEN_REGION_BITS_MAX || *sb < IDGEN_SEQ_BITS_MIN ||
		    *rb + *wb + *sb != IDGEN_NODE_SEQ_BITS)
			return true;
	}
	if ((__u64)a->region >> *rb || (__u64)a->worker >> *wb)
		return true;
	return a->floor_ms >= a->valid_until_ms || a->valid_until_ms > IDGEN_MS_MAX + 1;
}

static void pick_lease(struct ctx *c, const struct lease_rec *cur, struct idgen_lease_args *a)
{
	__u64 now = now_ms();
	__u8 rb, wb, sb;

	memset(a, 0, sizeof(*a));
	if (chance(c, 50)) {
		/* A good one, so IDs flow most of the time. */
		a->region = below(c, 1U << def_rb);
		a->worker = below(c, 1U << def_wb);
		a->floor_ms = chance(c, 50) ? 0 : now - below(c, 5000);
		a->valid_until_ms = now + 30000 + below(c, 60000);
		return;
	}
	switch (below(c, 10)) {
	case 0:
	case 1:
	case 2:
	case 3:
		break;					/* the default layout */
	case 4:
		a->region_bits = rnd(c);
		a->worker_bits = rnd(c);
		a->seq_bits = rnd(c);
		break;
	default:
		a->region_bits = below(c, IDGEN_REGION_BITS_MAX + 2);
		a->seq_bits = IDGEN_SEQ_BITS_MIN - 1 + below(c, 18);
		a->worker_bits = IDGEN_NODE_SEQ_BITS - a->region_bits - a->seq_bits +
				 (chance(c, 10) ? 1 : 0);
		break;
	}
	if (cur->leased && chance(c, 35)) {
		/* A renewal, or an attempt at one. */
		a->region = cur->region;
		a->worker = cur->worker;
		a->region_bits = cur->rb;
		a->worker_bits = cur->wb;
		a->seq_bits = cur->sb;
		if (chance(c, 20) && cur->rb == def_rb && cur->wb == def_wb && cur->sb == def_sb)
			a->region_bits = a->worker_bits = a->seq_bits = 0;
	} else {
		rb = a->region_bits || a->worker_bits || a->seq_bits ? a->region_bits : def_rb;
		wb = a->region_bits || a->worker_bits || a->seq_bits ? a->worker_bits : def_wb;
		a->region = chance(c, 10) ? rnd(c) : chance(c, 10) ? (1ULL << (rb & 31)) - 1 :
			    below(c, 1ULL << (rb & 31));
		a->worker = chance(c, 10) ? rnd(c) : chance(c, 10) ? (1ULL << (wb & 31)) - 1 :
			    below(c, 1ULL << (wb & 31));
	}
	a->floor_ms = pick_ms(c, now, cur, false);
	a->valid_until_ms = pick_ms(c, now, cur, true);
	if (chance(c, 20))
		a->flags = IDGEN_LEASE_CLOCK_SYNCED;
	else if (chance(c, 3))
		a->flags = rnd(c);
	if (chance(c, 3))
		a->pad = 1 + below(c, 255);
	/*
	 * A floor far ahead, once accepted, leaves the host's last_ms there:
	 * no lease mints again until the module is reloaded.  Only with
	 * --module, which reloads it between rounds, and only now and then.
	 */
	if ((!opt.module || chance(c, 80)) && !lease_invalid(a, &rb, &wb, &sb) &&
	    a->floor_ms > now + 2000) {
		a->floor_ms = now;
		if (a->floor_ms >= a->valid_until_ms)
			a->floor_ms = 0;
	}
}

static void check_change(struct ctx *c, const struct lease_rec *want, const char *what)
{
	struct idgen_state st;

	if (idgen_get_state(c->fd, &st)) {
		fail(C_ERRNO, "GET_STATE after %s: %s", what, strerror(errno));
		return;
	}
	check_state(&st, what);
	if (!!(st.flags & IDGEN_STATE_LEASED) != want->leased ||
	    (want->leased && (st.region != want->region || st.worker != want->worker ||
			      st.region_bits != want->rb || st.worker_bits != want->wb ||
			      st.seq_bits != want->sb || st.floor_ms != want->floor ||
			      st.valid_until_ms != want->valid_until)))
		fail(C_CHANGE, "after %s GET_STATE shows %s r%u/w%u %u/%u/%u floor %llu until %llu; expected %s r%u/w%u %u/%u/%u floor %llu until %llu",
		     what, st.flags & IDGEN_STATE_LEASED ? "leased" : "unleased", st.region, st.worker,
		     st.region_bits, st.worker_bits, st.seq_bits, (unsigned long long)st.floor_ms,
		     (unsigned long long)st.valid_until_ms, want->leased ? "leased" : "unleased",
		     want->region, want->worker, want->rb, want->wb, want->sb,
		     (unsigned long long)want->floor, (unsigned long long)want->valid_until);
}

/* Unprivileged: every change is refused, before anything else is looked at. */
static void do_change_unpriv(struct ctx *c)
{
	struct idgen_lease_args a;
	void *arg = chance(c, 20) ? NULL : c->buf;
	struct lease_rec none = {};
	unsigned long cmd;
	int r;

	pick_lease(c, &none, &a);
	memcpy(c->buf, &a, sizeof(a));
	switch (below(c, 3)) {
	case 0:
		cmd = IDGEN_IOC_SET_LEASE;
		break;
	case 1:
		cmd = IDGEN_IOC_REVOKE;
		break;
	default:
		cmd = IDGEN_IOC_ADOPT_CLOCK;
		break;
	}
	r = ioctl(chance(c, 50) ? c->fd : c->fd_nb, cmd, arg);
	if (r != -1 || errno != EPERM)
		fail(C_PERM, "ioctl %#lx as uid %d: %d, %s, not EPERM", cmd, getuid(), r,
		     r ? strerror(errno) : "success");
}

static void do_change(struct ctx *c)
{
	struct lease_rec cur, next;
	struct idgen_lease_args a;
	unsigned long k;
	__u8 rb, wb, sb;
	__u64 l = JUNK64, gmax;
	bool bad_ptr = chance(c, 5), invalid, renewal;
	void *arg;
	int r, err;
	char what[160];

	if (!c->priv) {
		do_change_unpriv(c);
		return;
	}
	pthread_mutex_lock(&change_mu);
	k = atomic_load(&sh->begun) + 1;
	cur = sh->hist[(k - 1) % HIST];
	next = cur;
	next.revoke = false;
	atomic_store(&sh->begun, k);

	switch (below(c, 12)) {
	case 0:
		gmax = atomic_load(&sh->max_id);
		arg = bad_ptr ? (chance(c, 50) ? NULL : (void *)(c->buf + BUF_BYTES)) : (void *)&l;
		r = ioctl(c->fd, IDGEN_IOC_REVOKE, arg);
		err = errno;
		snprintf(what, sizeof(what), "REVOKE%s", bad_ptr ? " to a bad address" : "");
		if (bad_ptr) {
			if (r != -1 || err != EFAULT)
				fail(C_ERRNO, "REVOKE to a bad address: %d, %s, not EFAULT", r, strerror(err));
			break;
		}
		if (r) {
			fail(C_ERRNO, "REVOKE: %s", strerror(err));
			break;
		}
		if (cur.leased && l < cur.floor)
			fail(C_CHANGE, "REVOKE returned L %llu, below the lease's floor %llu",
			     (unsigned long long)l, (unsigned long long)cur.floor);
		if (gmax && l < id_ms(gmax))
			fail(C_ORDER, "REVOKE returned L %llu, below the ms of ID %#llx read before",
			     (unsigned long long)l, (unsigned long long)gmax);
		next.leased = false;
		next.revoke = cur.leased;
		next.revoke_l = l;
		break;
	case 1:
		r = ioctl(c->fd, IDGEN_IOC_ADOPT_CLOCK, chance(c, 50) ? NULL : (void *)(uintptr_t)rnd(c));
		if (r)
			fail(C_ERRNO, "ADOPT_CLOCK: %s", strerror(errno));
		snprintf(what, sizeof(what), "ADOPT_CLOCK");
		break;
	default:
		pick_lease(c, &cur, &a);
		invalid = lease_invalid(&a, &rb, &wb, &sb);
		renewal = !invalid && cur.leased && cur.region == a.region && cur.worker == a.worker &&
			  cur.rb == rb && cur.wb == wb && cur.sb == sb;
		snprintf(what, sizeof(what), "SET_LEASE r%u/w%u %u/%u/%u floor %llu until %llu flags %#x pad %u%s",
			 a.region, a.worker, a.region_bits, a.worker_bits, a.seq_bits,
			 (unsigned long long)a.floor_ms, (unsigned long long)a.valid_until_ms,
			 a.flags, a.pad, bad_ptr ? " from a bad address" : "");
		if (bad_ptr) {
			/* The struct straddles the guard page. */
			arg = c->buf + BUF_BYTES - 8 * below(c, 4);
			memcpy(arg, &a, min(sizeof(a), (size_t)(c->buf + BUF_BYTES - (__u8 *)arg)));
		} else {
			arg = c->buf;
			memcpy(arg, &a, sizeof(a));
		}
		r = ioctl(c->fd, IDGEN_IOC_SET_LEASE, arg);
		err = r ? errno : 0;
		if (bad_ptr) {
			if (err != EFAULT)
				fail(C_ERRNO, "%s: %s, not EFAULT", what, err ? strerror(err) : "success");
			break;
		}
		if (invalid) {
			if (err != EINVAL)
				fail(C_ERRNO, "%s: %s, not EINVAL", what, err ? strerror(err) : "success");
			break;
		}
		if (renewal && a.valid_until_ms < cur.valid_until) {
			if (!errno_in(err, EINVAL, EKEYEXPIRED, EOVERFLOW, 0))
				fail(C_ERRNO, "%s, a renewal moving the fence back: %s", what,
				     err ? strerror(err) : "success");
			break;
		}
		if (err) {
			if (!errno_in(err, EKEYEXPIRED, EOVERFLOW, ENOMEM, 0))
				fail(C_ERRNO, "%s: %s", what, strerror(err));
			break;
		}
		atomic_fetch_add(&sh->leases_set, 1);
		if (renewal) {
			next.valid_until = a.valid_until_ms;
			next.floor = max(cur.floor, a.floor_ms);
		} else {
			next.leased = true;
			next.region = a.region;
			next.worker = a.worker;
			next.rb = rb;
			next.wb = wb;
			next.sb = sb;
			next.first_floor = next.floor = a.floor_ms;
			next.valid_until = a.valid_until_ms;
		}
		break;
	}
	sh->hist[k % HIST] = next;
	atomic_store(&sh->done, k);
	check_change(c, &next, what);
	pthread_mutex_unlock(&change_mu);
}

/*
 * Step the wall clock (the guest's: kfuzz runs only there), back or
 * forward by up to a few seconds, by 30 s now and then, and back to the
 * true time more often than not, at most every CLOCK_STEP_GAP_MS.  The
 * generator's order must hold whatever the clock does; a step back stalls
 * minting (ETIME) until the clock catches up or comes back.
 */
#define CLOCK_STEP_GAP_MS	200

static void do_clock(struct ctx *c)
{
	__u64 t = clock_ns(CLOCK_MONOTONIC);
	long long off = sh->clock_offset_ms, d;

	if (!opt.clock || t - sh->clock_step_at < CLOCK_STEP_GAP_MS * NSEC_PER_MSEC)
		return;
	switch (below(c, 8)) {
	case 0:
		d = -(long long)(1 + below(c, 3000));
		break;
	case 1:
		d = 1 + below(c, 3000);
		break;
	case 2:
		d = chance(c, 50) ? 30000 : -30000;
		break;
	default:
		d = -off;
		break;
	}
	if (llabs(off + d) > 60000)
		d = -off;
	if (!d)
		return;
	if (step_wall_clock(d)) {
		fail(C_ERRNO, "clock_settime: %s", strerror(errno));
		return;
	}
	sh->clock_offset_ms = off + d;
	sh->clock_step_at = t;
	atomic_fetch_add(&sh->clock_steps, 1);
}

/* ------------------------------------------------------------------ */
/* Generic netlink                                                     */

static const unsigned char attr_len[IDGEN_A_MAX + 1] = {
	[IDGEN_A_EVENT] = 4,
	[IDGEN_A_NOW_MS ... IDGEN_A_STEP_MS] = 8,
	[IDGEN_A_FLAGS ... IDGEN_A_WORKER] = 4,
	[IDGEN_A_REGION_BITS ... IDGEN_A_SEQ_BITS] = 1,
	[IDGEN_A_MAX_LEAD_MS ... IDGEN_A_FENCE_NEAR_MS] = 4,
	[IDGEN_A_CNT_IDS ... IDGEN_A_CNT_EVENTS_DROPPED] = 8,
};

struct nl_attrs {
	bool has[IDGEN_A_MAX + 1];
	__u64 v[IDGEN_A_MAX + 1];
	bool bad;
	char why[96];
};

static void nl_parse(struct nl_attrs *p, const struct nlattr *at, int len)
{
	memset(p, 0, sizeof(*p));
	while (len >= (int)sizeof(*at) && at->nla_len >= sizeof(*at) && at->nla_len <= len) {
		int t = at->nla_type & NLA_TYPE_MASK, l = at->nla_len - NLA_HDRLEN;
		const void *d = (const char *)at + NLA_HDRLEN;

		if (t != IDGEN_A_PAD) {
			if (t <= 0 || t > IDGEN_A_MAX || l != attr_len[t] || p->has[t]) {
				p->bad = true;
				snprintf(p->why, sizeof(p->why), "attribute %d of %d bytes%s", t, l,
					 t > 0 && t <= IDGEN_A_MAX && p->has[t] ? ", twice" : "");
			} else {
				p->has[t] = true;
				if (l == 1)
					p->v[t] = *(const __u8 *)d;
				else if (l == 4)
					p->v[t] = *(const __u32 *)d;
				else
					memcpy(&p->v[t], d, 8);
			}
		}
		len -= NLA_ALIGN(at->nla_len);
		at = (const void *)((const char *)at + NLA_ALIGN(at->nla_len));
	}
	if (len > 0 && !p->bad) {
		p->bad = true;
		snprintf(p->why, sizeof(p->why), "%d bytes left over", len);
	}
}

static void nl_check_state(const struct nl_attrs *p)
{
	static const int always[] = {
		IDGEN_A_NOW_MS, IDGEN_A_WALL_MS, IDGEN_A_LAST_MS, IDGEN_A_NEXT_MS,
		IDGEN_A_FLAGS, IDGEN_A_HELD_STEP_MS, IDGEN_A_MAX_LEAD_MS, IDGEN_A_MAX_STEP_MS,
		IDGEN_A_FENCE_NEAR_MS, IDGEN_A_REGION_BITS, IDGEN_A_WORKER_BITS, IDGEN_A_SEQ_BITS,
	};
	static const int lease[] = {
		IDGEN_A_REGION, IDGEN_A_WORKER, IDGEN_A_FLOOR_MS, IDGEN_A_VALID_UNTIL_MS,
	};
	bool leased;
	unsigned int i;

	if (p->bad) {
		fail(C_NETLINK, "GET_STATE reply malformed: %s", p->why);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(always); i++)
		if (!p->has[always[i]])
			fail(C_NETLINK, "GET_STATE reply lacks attribute %d", always[i]);
	for (i = IDGEN_A_CNT_IDS; i <= IDGEN_A_CNT_EVENTS_DROPPED; i++)
		if (!p->has[i])
			fail(C_NETLINK, "GET_STATE reply lacks counter %u", i);
	leased = p->v[IDGEN_A_FLAGS] & IDGEN_STATE_LEASED;
	for (i = 0; i < ARRAY_SIZE(lease); i++)
		if (p->has[lease[i]] != leased)
			fail(C_NETLINK, "GET_STATE reply %s attribute %d though %sleased",
			     leased ? "lacks" : "has", lease[i], leased ? "" : "not ");
	if (!p->v[IDGEN_A_FENCE_NEAR_MS] || p->v[IDGEN_A_FENCE_NEAR_MS] > IDGEN_FENCE_NEAR_MS_MAX)
		fail(C_NETLINK, "GET_STATE reply: fence-near %llu out of range",
		     (unsigned long long)p->v[IDGEN_A_FENCE_NEAR_MS]);
}

static int nl_start(struct ctx *c)
{
	int one = 1;
	struct timeval tv = { .tv_sec = 30 };

	c->nl = nl_socket_alloc();
	if (!c->nl || genl_connect(c->nl))
		return -1;
	setsockopt(nl_socket_get_fd(c->nl), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(nl_socket_get_fd(c->nl), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(nl_socket_get_fd(c->nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	c->family = genl_ctrl_resolve(c->nl, IDGEN_GENL_NAME);
	if (c->family < 0) {
		fail(C_NETLINK, "cannot resolve the %s family: %s", IDGEN_GENL_NAME,
		     nl_geterror(c->family));
		return -1;
	}
	/* An events listener, drained now and then. */
	c->ev = nl_socket_alloc();
	if (c->ev && !genl_connect(c->ev)) {
		int grp = genl_ctrl_resolve_grp(c->nl, IDGEN_GENL_NAME, IDGEN_GENL_MCGRP_EVENTS);

		if (grp < 0 || nl_socket_add_membership(c->ev, grp))
			fail(C_NETLINK, "cannot join the events group");
		nl_socket_set_nonblocking(c->ev);
	}
	return 0;
}

static void nl_shut(struct ctx *c)
{
	if (c->nl)
		nl_socket_free(c->nl);
	if (c->ev)
		nl_socket_free(c->ev);
	c->nl = c->ev = NULL;
}

static int put_attr(__u8 *p, int room, __u16 type, const void *v, int len)
{
	struct nlattr *at = (void *)p;

	if (NLA_HDRLEN + NLA_ALIGN(len) > room)
		return 0;
	at->nla_type = type;
	at->nla_len = NLA_HDRLEN + len;
	memcpy(p + NLA_HDRLEN, v, len);
	memset(p + NLA_HDRLEN + len, 0, NLA_ALIGN(len) - len);
	return NLA_HDRLEN + NLA_ALIGN(len);
}

/*
 * One request: build it, predict the answer from the header's rules and
 * strict attribute validation, send it, compare.
 */
static void do_netlink(struct ctx *c)
{
	__u8 msg[1024], *p;
	struct nlmsghdr *nh = (void *)msg;
	struct genlmsghdr *gh = (void *)(msg + NLMSG_HDRLEN);
	int room, i, nattrs, expect = 0, alt = -1, replies = 0, got = 1;
	bool any_attr = false, fence_ok = false, attr_unsure = false, unsure = false;
	bool dropped = false;
	size_t send_len;
	bool dump = false, request = true;
	__u32 seq = ++c->seq;
	__u8 cmd;
	ssize_t n;

	if (!c->nl)
		return;
	memset(msg, 0, sizeof(msg));
	switch (below(c, 10)) {
	case 0:
		cmd = below(c, 2) ? IDGEN_CMD_EVENT : IDGEN_CMD_UNSPEC;
		break;
	case 1:
		cmd = rnd(c);
		break;
	case 2:
	case 3:
	case 4:
		cmd = IDGEN_CMD_GET_STATE;
		break;
	default:
		cmd = IDGEN_CMD_SET_CONFIG;
		break;
	}
	nh->nlmsg_type = c->family;
	nh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	if (chance(c, 5)) {
		nh->nlmsg_flags |= NLM_F_DUMP;
		dump = true;
	} else if (chance(c, 5)) {
		/* NLM_F_ROOT alone is no dump. */
		nh->nlmsg_flags |= (NLM_F_ATOMIC | NLM_F_ROOT | NLM_F_APPEND) & rnd(c);
		dump = (nh->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
	}
	if (chance(c, 3)) {
		nh->nlmsg_flags &= ~NLM_F_REQUEST;
		request = false;
	}
	nh->nlmsg_seq = seq;
	nh->nlmsg_pid = 0;
	gh->cmd = cmd;
	gh->version = chance(c, 90) ? IDGEN_GENL_VERSION : rnd(c);
	gh->reserved = chance(c, 90) ? 0 : rnd(c);

	p = msg + NLMSG_HDRLEN + GENL_HDRLEN;
	room = sizeof(msg) - (p - msg);
	nattrs = cmd == IDGEN_CMD_SET_CONFIG ? below(c, 4) : chance(c, 70) ? 0 : 1 + below(c, 3);
	if (cmd == IDGEN_CMD_SET_CONFIG && chance(c, 60))
		nattrs = 1;
	/*
	 * SET_CONFIG's policy, strictly validated in order: an attribute of
	 * another type, size or with NLA_F_NESTED is EINVAL, a value out of
	 * 1..IDGEN_FENCE_NEAR_MS_MAX ERANGE; without FENCE_NEAR_MS, EINVAL.  GET_STATE has
	 * an empty policy: any attribute is EINVAL.
	 */
	for (i = 0; i < nattrs && !expect; i++) {
		__u16 type = chance(c, 75) ? IDGEN_A_FENCE_NEAR_MS : below(c, IDGEN_A_MAX + 5);
		int len = chance(c, 80) ? 4 : (int)(below(c, 3) ? below(c, 9) : below(c, 300));
		__u32 v32 = chance(c, 50) ? 1 + below(c, IDGEN_FENCE_NEAR_MS_MAX) :
			    (__u32[]){ 0, 1, IDGEN_FENCE_NEAR_MS_MAX, IDGEN_FENCE_NEAR_MS_MAX + 1, ~0U, (__u32)rnd(c) }[below(c, 6)];
		__u8 val[300];
		int w;

		if (chance(c, 3))
			type |= chance(c, 50) ? NLA_F_NESTED : NLA_F_NET_BYTEORDER;
		memset(val, 0, sizeof(val));
		for (w = 0; w < len; w++)
			val[w] = rnd(c);
		if (len >= 4)
			memcpy(val, &v32, 4);
		w = put_attr(p, room, type, val, len);
		if (!w)
			break;
		p += w;
		room -= w;
		any_attr = true;
		if (cmd != IDGEN_CMD_SET_CONFIG)
			continue;
		if (type & NLA_F_NET_BYTEORDER) {
			attr_unsure = true;
			break;
		}
		if (type != IDGEN_A_FENCE_NEAR_MS || len != 4)
			expect = EINVAL;
		else if (!v32 || v32 > IDGEN_FENCE_NEAR_MS_MAX)
			expect = ERANGE;
		else
			fence_ok = true;
	}
	/* Trailing bytes too few for an attribute: left over, EINVAL. */
	if (chance(c, 3) && !attr_unsure) {
		int junk = 1 + below(c, 3);

		memset(p, 0xee, junk);
		p += junk;
		if (!expect)
			expect = EINVAL;
		any_attr = true;
	}
	nh->nlmsg_len = p - msg;
	/* A lying attribute length: runs past the message. */
	if (chance(c, 2) && nh->nlmsg_len >= NLMSG_HDRLEN + GENL_HDRLEN + NLA_HDRLEN) {
		struct nlattr *at = (void *)(msg + NLMSG_HDRLEN + GENL_HDRLEN);

		at->nla_len = 1000 + below(c, 1000);
		expect = EINVAL;
		any_attr = true;
		attr_unsure = false;
	}
	/*
	 * Truncated: no whole genl header.  Only nlmsg_len bytes are sent:
	 * bytes after it would be parsed as a next message, of any family.
	 */
	send_len = nh->nlmsg_len;
	if (chance(c, 3)) {
		nh->nlmsg_len = send_len = NLMSG_HDRLEN + below(c, GENL_HDRLEN);
	} else if (chance(c, 1)) {
		/* Not even a netlink header: dropped without an answer. */
		nh->nlmsg_len = below(c, NLMSG_HDRLEN);
		send_len = NLMSG_HDRLEN;
		dropped = true;
	}

	if (!request) {
		expect = 0;
	} else if (!dropped && nh->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN) {
		expect = EINVAL;
	} else if (gh->reserved || (nh->nlmsg_flags & ~(dump ? NLM_F_DUMP : 0) &
				    ~(NLM_F_REQUEST | NLM_F_ACK | NLM_F_ECHO))) {
		/* genetlink's header check: reserved bytes, unknown flags. */
		expect = EINVAL;
	} else if (cmd != IDGEN_CMD_GET_STATE && cmd != IDGEN_CMD_SET_CONFIG) {
		expect = EOPNOTSUPP;
	} else if (cmd == IDGEN_CMD_SET_CONFIG && !c->priv) {
		expect = EPERM;
		/* 6.1 checks the permission before the dump, later ones after. */
		if (dump)
			alt = EOPNOTSUPP;
	} else if (dump) {
		expect = EOPNOTSUPP;
	} else if (cmd == IDGEN_CMD_GET_STATE) {
		expect = any_attr ? EINVAL : 0;
	} else if (attr_unsure) {
		/* NLA_F_NET_BYTEORDER: what strict validation makes of it varies. */
		unsure = true;
	} else if (!expect) {
		expect = fence_ok ? 0 : EINVAL;
	}

	if (nl_sendto(c->nl, msg, send_len) < 0) {
		fail(C_NETLINK, "sending a request failed");
		return;
	}
	if (dropped)
		return;
	while (got) {
		struct nlmsghdr *r;
		int len;

		n = recv(nl_socket_get_fd(c->nl), c->nlbuf, sizeof(c->nlbuf), 0);
		if (n < 0) {
			fail(C_NETLINK, "no answer to cmd %u seq %u: %s", cmd, seq, strerror(errno));
			return;
		}
		len = n;
		for (r = (void *)c->nlbuf; NLMSG_OK(r, len); r = NLMSG_NEXT(r, len)) {
			if (r->nlmsg_seq != seq)
				continue;	/* an answer to an earlier, dropped request */
			if (r->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(r);

				got = 0;
				if (unsure ? !errno_in(-e->error, EINVAL, ERANGE, 0) && e->error :
				    -e->error != expect && -e->error != alt)
					fail(C_NETLINK, "cmd %u flags %#x len %u (%d attributes): %s, expected %s",
					     cmd, nh->nlmsg_flags, nh->nlmsg_len, nattrs,
					     e->error ? strerror(-e->error) : "success",
					     expect ? strerror(expect) : "success");
				if (!e->error)
					atomic_fetch_add(&sh->nl_ok, 1);
				break;
			}
			if (r->nlmsg_type == c->family) {
				struct genlmsghdr *rg = NLMSG_DATA(r);
				struct nl_attrs pa;

				replies++;
				if (rg->cmd != IDGEN_CMD_GET_STATE || cmd != IDGEN_CMD_GET_STATE)
					fail(C_NETLINK, "a reply of cmd %u to cmd %u", rg->cmd, cmd);
				nl_parse(&pa, (void *)((char *)rg + GENL_HDRLEN),
					 r->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN);
				nl_check_state(&pa);
			}
		}
	}
	if (replies != (expect == 0 && request && !dump && cmd == IDGEN_CMD_GET_STATE))
		fail(C_NETLINK, "cmd %u: %d replies", cmd, replies);
}

static void do_events(struct ctx *c)
{
	ssize_t n;

	if (!c->ev)
		return;
	while ((n = recv(nl_socket_get_fd(c->ev), c->nlbuf, sizeof(c->nlbuf), MSG_DONTWAIT)) > 0) {
		struct nlmsghdr *r;
		int len = n;

		for (r = (void *)c->nlbuf; NLMSG_OK(r, len); r = NLMSG_NEXT(r, len)) {
			struct genlmsghdr *g = NLMSG_DATA(r);
			struct nl_attrs pa;

			if (r->nlmsg_type != c->family)
				continue;
			atomic_fetch_add(&sh->nl_events, 1);
			nl_parse(&pa, (void *)((char *)g + GENL_HDRLEN),
				 r->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN);
			if (g->cmd != IDGEN_CMD_EVENT || pa.bad || !pa.has[IDGEN_A_EVENT] ||
			    !pa.has[IDGEN_A_NOW_MS] || !pa.v[IDGEN_A_EVENT] ||
			    pa.v[IDGEN_A_EVENT] > IDGEN_EVENT_MAX)
				fail(C_NETLINK, "malformed event: cmd %u type %llu %s", g->cmd,
				     (unsigned long long)pa.v[IDGEN_A_EVENT], pa.why);
		}
	}
	/* ENOBUFS: events overran the socket, which is allowed. */
	if (n < 0 && !errno_in(errno, EAGAIN, ENOBUFS, 0))
		fail(C_NETLINK, "events socket: %s", strerror(errno));
}

/* ------------------------------------------------------------------ */
/* The loop                                                            */

/* Weights of the ops, by role. */
static enum op pick_op(struct ctx *c)
{
	static const unsigned char w_reader[OP_MAX] = {
		[OP_READ] = 40, [OP_READV] = 6, [OP_POLL] = 8, [OP_EPOLL] = 6,
		[OP_GET_STATE] = 6, [OP_JUNK_IOCTL] = 5, [OP_MISC] = 4, [OP_REOPEN] = 1,
		[OP_NETLINK] = 4, [OP_EVENTS] = 1, [OP_CHANGE] = 0,
	};
	static const unsigned char w_changer[OP_MAX] = {
		[OP_READ] = 20, [OP_READV] = 3, [OP_POLL] = 3, [OP_EPOLL] = 3,
		[OP_GET_STATE] = 5, [OP_JUNK_IOCTL] = 3, [OP_MISC] = 2, [OP_REOPEN] = 1,
		[OP_NETLINK] = 4, [OP_EVENTS] = 1, [OP_CHANGE] = 5, [OP_CLOCK] = 2,
	};
	static const unsigned char w_netlink[OP_MAX] = {
		[OP_READ] = 15, [OP_READV] = 2, [OP_POLL] = 2, [OP_EPOLL] = 2,
		[OP_GET_STATE] = 3, [OP_JUNK_IOCTL] = 2, [OP_MISC] = 1, [OP_REOPEN] = 1,
		[OP_NETLINK] = 30, [OP_EVENTS] = 4, [OP_CHANGE] = 0,
	};
	static const unsigned char w_unpriv[OP_MAX] = {
		[OP_READ] = 30, [OP_READV] = 4, [OP_POLL] = 4, [OP_EPOLL] = 4,
		[OP_GET_STATE] = 4, [OP_JUNK_IOCTL] = 3, [OP_MISC] = 2, [OP_REOPEN] = 1,
		[OP_NETLINK] = 8, [OP_EVENTS] = 1, [OP_CHANGE] = 6,
	};
	const unsigned char *w = !c->priv ? w_unpriv : c->idx == 0 ? w_changer :
				 c->idx == 1 ? w_netlink : w_reader;
	unsigned int total = 0, i, x;

	for (i = 0; i < OP_MAX; i++)
		total += w[i];
	x = below(c, total);
	for (i = 0; i < OP_MAX; i++) {
		if (x < w[i])
			return i;
		x -= w[i];
	}
	return OP_READ;
}

static void *worker(void *arg)
{
	struct ctx *c = arg;
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGALRM };

	sev.sigev_notify_thread_id = syscall(SYS_gettid);
	c->have_timer = !timer_create(CLOCK_MONOTONIC, &sev, &c->timer);
	c->buf = mmap(NULL, BUF_BYTES + 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->buf == MAP_FAILED) {
		fail(C_ERRNO, "mmap of a buffer: %s", strerror(errno));
		return NULL;
	}
	mprotect(c->buf + BUF_BYTES, 4096, PROT_NONE);
	c->ep = epoll_create1(EPOLL_CLOEXEC);
	open_fds(c);
	nl_start(c);

	while (!time_up() && atomic_fetch_add(&sh->round_used, 1) < sh->round_calls) {
		enum op op = pick_op(c);

		atomic_fetch_add(&sh->op_calls[op], 1);
		atomic_fetch_add(&sh->calls, 1);
		switch (op) {
		case OP_READ:
			do_read(c, false);
			break;
		case OP_READV:
			do_read(c, true);
			break;
		case OP_POLL:
			do_poll(c);
			break;
		case OP_EPOLL:
			do_epoll(c);
			break;
		case OP_GET_STATE:
			do_get_state(c);
			break;
		case OP_JUNK_IOCTL:
			do_junk_ioctl(c);
			break;
		case OP_MISC:
			do_misc(c);
			break;
		case OP_REOPEN:
			close_fds(c);
			open_fds(c);
			break;
		case OP_NETLINK:
			do_netlink(c);
			break;
		case OP_EVENTS:
			do_events(c);
			break;
		case OP_CHANGE:
			do_change(c);
			break;
		case OP_CLOCK:
			pthread_mutex_lock(&change_mu);
			do_clock(c);
			pthread_mutex_unlock(&change_mu);
			break;
		case OP_MAX:
			break;
		}
	}
	nl_shut(c);
	close_fds(c);
	if (c->ep >= 0)
		close(c->ep);
	if (c->have_timer)
		timer_delete(c->timer);
	munmap(c->buf, BUF_BYTES + 4096);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Rounds                                                              */

/* Revoke, so a round starts from a known state: change 0, no lease. */
static int round_start(void)
{
	struct idgen_state st;
	int fd = open(IDGEN_DEV, O_RDONLY | O_CLOEXEC);
	__u64 l;

	if (fd < 0 || idgen_revoke(fd, &l) || idgen_get_state(fd, &st)) {
		fprintf(stderr, "kfuzz: %s: %s\n", IDGEN_DEV, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	def_rb = st.region_bits, def_wb = st.worker_bits, def_sb = st.seq_bits;
	memset(sh->hist, 0, sizeof(sh->hist));
	atomic_store(&sh->begun, 0);
	atomic_store(&sh->done, 0);
	/* The generator's order holds within one load of the module. */
	return 0;
}

/*
 * The hash set holds one round's IDs: those of earlier rounds all lie
 * below max_id, which every read's first ID must exceed.
 */
static void round_reset_set(void)
{
	memset(sh->set, 0, sizeof(sh->set));
}

/* A floor far ahead left the host unable to mint: reload the module. */
static int maybe_reload(bool *reloaded)
{
	struct idgen_state st;
	int fd = open(IDGEN_DEV, O_RDONLY | O_CLOEXEC), mfd, tries;

	*reloaded = false;
	if (fd < 0 || idgen_get_state(fd, &st)) {
		fprintf(stderr, "kfuzz: %s: %s\n", IDGEN_DEV, strerror(errno));
		return -1;
	}
	close(fd);
	if (!opt.module || st.last_ms < st.now_ms + POISONED_MS)
		return 0;
	for (tries = 0; syscall(SYS_delete_module, "idgen", O_NONBLOCK); tries++) {
		if ((errno != EAGAIN && errno != EBUSY) || tries > 100) {
			fprintf(stderr, "kfuzz: rmmod idgen: %s\n", strerror(errno));
			return -1;
		}
		sleep_ms(50);
	}
	mfd = open(opt.module, O_RDONLY | O_CLOEXEC);
	if (mfd < 0 || syscall(SYS_finit_module, mfd, "", 0)) {
		fprintf(stderr, "kfuzz: insmod %s: %s\n", opt.module, strerror(errno));
		return -1;
	}
	close(mfd);
	*reloaded = true;
	return 0;
}

static void run_workers(unsigned long quota, unsigned long long round)
{
	struct ctx *ctx = calloc(opt.threads, sizeof(*ctx));
	pthread_t tid[MAX_THREADS];
	unsigned int i;

	sh->round_calls = quota;
	atomic_store(&sh->round_used, 0);
	for (i = 0; i < opt.threads; i++) {
		ctx[i].idx = i;
		ctx[i].priv = true;
		ctx[i].ep = -1;
		ctx[i].rng = (opt.seed * 0x100000001b3ULL) ^ (round << 20) ^ (i + 1) ^ 0x5bd1e995ULL;
		pthread_create(&tid[i], NULL, worker, &ctx[i]);
	}
	for (i = 0; i < opt.threads; i++)
		pthread_join(tid[i], NULL);
	free(ctx);
}

/* The unprivileged process: a reader that tries every change too. */
static pid_t fork_unpriv(unsigned long long round)
{
	pid_t pid = fork();
	struct ctx *c;

	if (pid)
		return pid;
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY)) {
		fail(C_PERM, "cannot become uid %d: %s", NOBODY, strerror(errno));
		_exit(1);
	}
	c = calloc(1, sizeof(*c));
	c->idx = 99;
	c->priv = false;
	c->ep = -1;
	c->rng = (opt.seed * 0x100000001b3ULL) ^ (round << 20) ^ 0xdeadbeefULL;
	worker(c);
	_exit(0);
}

/* A lease of the default layout for ten minutes, from now. */
static int set_plain_lease(void)
{
	int fd = open(IDGEN_DEV, O_RDONLY | O_CLOEXEC);
	__u64 l;

	if (fd < 0 || idgen_revoke(fd, &l) ||
	    idgen_set_lease(fd, 1, 2, l, now_ms() + 600000)) {
		fprintf(stderr, "kfuzz: setting a lease on %s: %s\n", IDGEN_DEV, strerror(errno));
		return 1;
	}
	close(fd);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kfuzz [--seed S] [--calls N] [--seconds T] [--threads N] [--module PATH]\n"
		"             [--no-clock]\n"
		"       kfuzz --lease\n"
		"Fuzzes /dev/idgen and the idgen netlink family, as root, in a test guest.\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "calls", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "threads", required_argument, NULL, 'j' },
		{ "module", required_argument, NULL, 'm' },
		{ "lease", no_argument, NULL, 'l' },
		{ "no-clock", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	unsigned long round_quota, rounds = 0, reloads = 0, unchecked_total;
	unsigned long long round = 0;
	const char *guest = getenv("IDGEN_GUEST");
	bool reloaded, lease_only = false;
	int o, i, failed = 0, status;
	char *end;

	while ((o = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (o) {
		case 's':
			opt.seed = strtoull(optarg, &end, 0);
			if (*end)
				usage();
			break;
		case 'n':
			opt.calls = strtoul(optarg, &end, 0);
			if (*end || !opt.calls)
				usage();
			break;
		case 't':
			opt.seconds = strtoul(optarg, &end, 0);
			if (*end)
				usage();
			break;
		case 'j':
			opt.threads = strtoul(optarg, &end, 0);
			if (*end || opt.threads < 2 || opt.threads > MAX_THREADS)
				usage();
			break;
		case 'm':
			opt.module = optarg;
			break;
		case 'l':
			lease_only = true;
			break;
		case 'c':
			opt.clock = false;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (!guest || strcmp(guest, "1") || geteuid()) {
		fprintf(stderr, "kfuzz: sets leases and reloads the module: runs only as root with IDGEN_GUEST=1 (a test guest)\n");
		return 2;
	}

	if (lease_only)
		return set_plain_lease();

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("kfuzz: mmap");
		return 1;
	}
	sigaction(SIGALRM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..%d\n", C_MAX);
	printf("# kfuzz: seed %llu, %lu calls, %u s bound, %u threads + 1 process as uid %d%s\n",
	       opt.seed, opt.calls, opt.seconds, opt.threads, NOBODY,
	       opt.module ? ", reloading the module when a floor left it unable to mint" : "");

	start_ns = clock_ns(CLOCK_MONOTONIC);
	/* Rounds: the unprivileged process is forked afresh, reloads happen between. */
	round_quota = min(max(opt.calls / 50, 2000UL), 10000UL);
	while (atomic_load(&sh->calls) < opt.calls && !time_up()) {
		unsigned long quota = min(round_quota, opt.calls - atomic_load(&sh->calls));
		pid_t child;

		if (round_start())
			return 1;
		round_reset_set();
		/* The child counts in the same quota; it ends when the threads do. */
		child = fork_unpriv(round);
		run_workers(quota, round);
		atomic_store(&sh->round_used, ~0UL >> 1);
		waitpid(child, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail(C_PERM, "the unprivileged process ended with status %#x", status);
		rounds++;
		round++;
		if (maybe_reload(&reloaded))
			return 1;
		if (reloaded) {
			/* A fresh generator's order starts afresh. */
			reloads++;
			atomic_store(&sh->max_id, 0);
		}
	}

	/* Leave the wall clock where it would be without the steps. */
	if (sh->clock_offset_ms && step_wall_clock(-sh->clock_offset_ms))
		fail(C_ERRNO, "clock_settime back to the true time: %s", strerror(errno));
	unchecked_total = atomic_load(&sh->reads_unchecked);
	printf("# calls: %lu in %llu s, %lu rounds, %lu module reloads\n",
	       atomic_load(&sh->calls),
	       (unsigned long long)((clock_ns(CLOCK_MONOTONIC) - start_ns) / NSEC_PER_SEC),
	       rounds, reloads);
	for (i = 0; i < OP_MAX; i++)
		printf("#   %-24s %lu\n", op_names[i], atomic_load(&sh->op_calls[i]));
	printf("# IDs checked: %lu in %lu reads (%lu reads outside the lease history window, %lu IDs past the hash set)\n",
	       atomic_load(&sh->ids), atomic_load(&sh->reads_checked), unchecked_total,
	       atomic_load(&sh->set_skipped));
	printf("# read results:");
	for (i = 0; i < 256; i++)
		if (atomic_load(&sh->read_errno[i]))
			printf(" %s %lu", i ? strerrorname_np(i) : "IDs", atomic_load(&sh->read_errno[i]));
	printf("\n");
	printf("# wall-clock steps: %lu\n", atomic_load(&sh->clock_steps));
	printf("# leases set: %lu, netlink requests answered success: %lu, events: %lu\n",
	       atomic_load(&sh->leases_set), atomic_load(&sh->nl_ok), atomic_load(&sh->nl_events));
	if (!atomic_load(&sh->ids) || !atomic_load(&sh->reads_checked) ||
	    !atomic_load(&sh->leases_set) || !atomic_load(&sh->nl_ok))
		fail(C_NVACUOUS, "nothing to check: %lu IDs, %lu reads checked, %lu leases, %lu netlink successes",
		     atomic_load(&sh->ids), atomic_load(&sh->reads_checked),
		     atomic_load(&sh->leases_set), atomic_load(&sh->nl_ok));
	for (i = 0; i < C_MAX; i++) {
		unsigned long f = atomic_load(&sh->failures[i]);

		if (f) {
			failed = 1;
			printf("not ok %d - %s (%lu failures)\n", i + 1, check_names[i], f);
		} else {
			printf("ok %d - %s\n", i + 1, check_names[i]);
		}
	}
	return failed;
}

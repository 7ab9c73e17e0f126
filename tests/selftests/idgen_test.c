// SPDX-License-Identifier: GPL-2.0
/*
 * idgen_test - selftests of /dev/idgen against include/uapi/linux/idgen.h.
 *
 * Run as root in a disposable guest with idgen.ko loaded and IDGEN_GUEST=1
 * in the environment (tests/vm/run-guest.sh sets it).  Every test that
 * needs a lease revokes whatever is in force, waits until the generator is
 * not ahead of the clock, sets its own lease and revokes it on teardown.
 * The clock is never stepped here (see clock_steps.c for that).
 *
 * Environment: IDGEN_STRESS_SECS (default 5) sets how long the concurrent
 * readers of the stress test run.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <linux/nsfs.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "idgen_util.h"
#include "kselftest_harness.h"

#define TEST_REGION	5
#define TEST_WORKER	77
#define LEASE_MS	60000	/* valid_until = now + LEASE_MS */
#define SLACK_MS	2000	/* IDs carry the wall clock's ms, give or take */
#define NOBODY		65534
#define NREADERS	4

/*
 * Revoke whatever is in force, wait until the generator is not ahead of
 * the trusted clock, then lease region/worker (masked to the default
 * layout) from the host's last_ms to now + LEASE_MS.  *st gets the state
 * with the lease in force.
 */
static void lease_up(struct __test_metadata *_metadata, int fd, __u32 *region,
		     __u32 *worker, struct idgen_state *st)
{
	struct idgen_state before;
	__u64 l;

	ASSERT_EQ(0, idgen_revoke(fd, &l)) TH_LOG("revoke: %s", strerror(errno));
	ASSERT_EQ(0, idgen_wait_caught_up(fd, 10000))
		TH_LOG("generator still ahead of the clock: %s", strerror(errno));
	ASSERT_EQ(0, idgen_get_state(fd, &before));
	*region = TEST_REGION & field_mask(before.region_bits);
	*worker = TEST_WORKER & field_mask(before.worker_bits);
	ASSERT_EQ(0, idgen_set_lease(fd, *region, *worker, before.last_ms,
				     before.now_ms + LEASE_MS))
		TH_LOG("set lease: %s", strerror(errno));
	ASSERT_EQ(0, idgen_get_state(fd, st));
	ASSERT_TRUE(st->flags & IDGEN_STATE_LEASED);
	ASSERT_EQ(*region, st->region);
	ASSERT_EQ(*worker, st->worker);
}

/*
 * Check one batch: strictly increasing and above prev, bit 63 clear, the
 * lease's node, milliseconds in [lo_ms, hi_ms].  Returns the index of the
 * first bad ID (and why) or n.
 */
static size_t check_batch(const __u64 *ids, size_t n, __u64 prev,
			  const struct idgen_state *st, int64_t lo_ms,
			  int64_t hi_ms, const char **why)
{
	size_t i;

	for (i = 0; i < n; i++) {
		__u64 id = ids[i];

		if (id >> 63) {
			*why = "bit 63 set";
			return i;
		}
		if (id <= (i ? ids[i - 1] : prev) && (i || prev)) {
			*why = "not above the ID before it";
			return i;
		}
		if (id_region(id, st) != st->region ||
		    id_worker(id, st) != st->worker) {
			*why = "node is not the lease's";
			return i;
		}
		if ((int64_t)id_ms(id) < lo_ms || (int64_t)id_ms(id) > hi_ms) {
			*why = "millisecond too far from the wall clock";
			return i;
		}
	}
	*why = "";
	return n;
}

/* Read n IDs and check them; returns the last one. */
static __u64 read_checked(struct __test_metadata *_metadata, int fd,
			  const struct idgen_state *st, __u64 prev, size_t n)
{
	__u64 *ids = malloc(n * sizeof(*ids));
	int64_t lo, hi;
	const char *why;
	ssize_t r;
	size_t i;
	__u64 last;

	ASSERT_NE(NULL, ids);
	lo = wall_idgen_ms() - SLACK_MS;
	r = idgen_read(fd, ids, n);
	hi = wall_idgen_ms() + SLACK_MS;
	ASSERT_EQ((ssize_t)n, r) TH_LOG("read %zu IDs: %s", n, r < 0 ? strerror(errno) : "short");
	i = check_batch(ids, n, prev, st, lo, hi, &why);
	ASSERT_EQ(n, i) TH_LOG("ID %zu of %zu (%llu, ms %llu, prev %llu): %s",
			       i, n, ids[i], id_ms(ids[i]), prev, why);
	last = ids[n - 1];
	free(ids);
	return last;
}

/* The lease-related part of the state, which a failed call must not touch. */
static bool lease_unchanged(const struct idgen_state *a, const struct idgen_state *b)
{
	return a->flags == b->flags && a->region == b->region &&
	       a->worker == b->worker && a->floor_ms == b->floor_ms &&
	       a->valid_until_ms == b->valid_until_ms &&
	       a->last_ms == b->last_ms && a->region_bits == b->region_bits &&
	       a->worker_bits == b->worker_bits && a->seq_bits == b->seq_bits;
}

/* ------------------------------------------------------------------ */

TEST(device_node)
{
	struct stat sb;

	if (stat(IDGEN_DEV, &sb) && errno == ENOENT)
		SKIP(return, IDGEN_ABSENT);
	ASSERT_EQ(0, stat(IDGEN_DEV, &sb));
	EXPECT_TRUE(S_ISCHR(sb.st_mode));
	EXPECT_EQ(0444, sb.st_mode & 07777);
}

/* ------------------------------------------------------------------ */
/* A lease is in force for the whole test.                             */

FIXTURE(leased) {
	int fd;
	__u32 region, worker;
	struct idgen_state st;
};

FIXTURE_SETUP(leased)
{
	REQUIRE_GUEST_ROOT("changes the host's lease");
	OPEN_OR_SKIP(self->fd, 0);
	lease_up(_metadata, self->fd, &self->region, &self->worker, &self->st);
}

FIXTURE_TEARDOWN(leased)
{
	__u64 l;

	EXPECT_EQ(0, idgen_revoke(self->fd, &l));
	close(self->fd);
}

TEST_F(leased, read_len_zero)
{
	__u64 id = JUNK64;

	EXPECT_EQ(0, read(self->fd, &id, 0));
	EXPECT_EQ(JUNK64, id);
}

TEST_F(leased, read_len_not_multiple_of_8)
{
	static const size_t lens[] = { 1, 4, 7, 9, 15, 8 * 512 + 1 };
	__u64 ids[520], first;
	struct idgen_state a, b;
	size_t i;

	first = read_checked(_metadata, self->fd, &self->st, 0, 1);
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		errno = 0;
		EXPECT_EQ(-1, read(self->fd, ids, lens[i])) TH_LOG("len %zu", lens[i]);
		EXPECT_EQ(EINVAL, errno) TH_LOG("len %zu", lens[i]);
	}
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_EQ(a.ids, b.ids) TH_LOG("a refused read handed out IDs");
	read_checked(_metadata, self->fd, &self->st, first, 1);
}

TEST_F(leased, lseek_espipe)
{
	static const int whence[] = { SEEK_SET, SEEK_CUR, SEEK_END };
	size_t i;

	for (i = 0; i < 3; i++) {
		errno = 0;
		EXPECT_EQ(-1, lseek(self->fd, 0, whence[i]));
		EXPECT_EQ(ESPIPE, errno);
	}
	errno = 0;
	EXPECT_EQ(-1, lseek(self->fd, 8, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
}

TEST_F(leased, read_efault)
{
	long page = sysconf(_SC_PAGESIZE);
	__u64 before, after;
	char *none, *ro;

	none = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, none);
	ASSERT_NE(MAP_FAILED, ro);

	before = read_checked(_metadata, self->fd, &self->st, 0, 1);
	errno = 0;
	EXPECT_EQ(-1, syscall(SYS_read, self->fd, NULL, 8));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(-1, read(self->fd, none, 64));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(-1, read(self->fd, ro, 8));
	EXPECT_EQ(EFAULT, errno);
	/* IDs reserved for the faulting reads are holes, never reissued. */
	after = read_checked(_metadata, self->fd, &self->st, before, 1);
	EXPECT_LT(before, after);

	munmap(none, page);
	munmap(ro, page);
}

TEST_F(leased, read_straddling_fault_is_short)
{
	long page = sysconf(_SC_PAGESIZE);
	__u64 *ids, next;
	const char *why;
	char *map;
	ssize_t r;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));

	/* Room for 3 IDs before the hole, 10 asked for. */
	ids = (__u64 *)(map + page) - 3;
	memset(ids, JUNK, 3 * sizeof(*ids));
	r = read(self->fd, ids, 10 * sizeof(*ids));
	ASSERT_EQ(3 * (ssize_t)sizeof(*ids), r)
		TH_LOG("read across a PROT_NONE page returned %zd (%s)", r,
		       r < 0 ? strerror(errno) : "count");
	ASSERT_EQ(3, check_batch(ids, 3, 0, &self->st, wall_idgen_ms() - SLACK_MS,
				 wall_idgen_ms() + SLACK_MS, &why)) TH_LOG("%s", why);

	/* The next read works and is above what was delivered. */
	next = read_checked(_metadata, self->fd, &self->st, ids[2], 8);
	EXPECT_LT(ids[2], next);
	munmap(map, 2 * page);
}

/*
 * A read(2) buffer is written in place, eight IDs a store round: a fault
 * at any place of a round, or in a later batch, still returns exactly the
 * IDs before it.
 */
TEST_F(leased, read_fault_anywhere_returns_the_ids_before)
{
	/* Every place in a round, a round's edges, a batch's (512 IDs). */
	static const size_t befores[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17,
					  511, 512, 513, 515, 519 };
	long page = sysconf(_SC_PAGESIZE);
	__u64 *ids, prev = 0;
	const char *why;
	size_t b, n;
	char *map;
	ssize_t r;

	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + 2 * page, page, PROT_NONE));
	for (b = 0; b < sizeof(befores) / sizeof(befores[0]); b++) {
		n = befores[b];
		ids = (__u64 *)(map + 2 * page) - n;
		memset(ids, JUNK, n * sizeof(*ids));
		r = read(self->fd, ids, (n + 10) * sizeof(*ids));
		ASSERT_EQ((ssize_t)(n * sizeof(*ids)), r)
			TH_LOG("%zu IDs before the hole: read returned %zd (%s)", n, r,
			       r < 0 ? strerror(errno) : "count");
		ASSERT_EQ(n, check_batch(ids, n, prev, &self->st,
					 wall_idgen_ms() - SLACK_MS,
					 wall_idgen_ms() + SLACK_MS, &why))
			TH_LOG("%zu IDs before the hole: %s", n, why);
		prev = ids[n - 1];
	}
	munmap(map, 3 * page);
}

/*
 * readv() gets IDs composed and copied, not written in place: across its
 * buffers they increase, and a fault ends it after the IDs before it.
 */
TEST_F(leased, readv_ids_increase_across_buffers)
{
	long page = sysconf(_SC_PAGESIZE);
	static __u64 a[1], b[100], c[700];
	static __u64 all[801];
	struct iovec iov[3] = {
		{ a, sizeof(a) }, { b, sizeof(b) }, { c, sizeof(c) },
	};
	__u64 *tail;
	const char *why;
	char *map;
	ssize_t r;

	r = readv(self->fd, iov, 3);
	ASSERT_EQ((ssize_t)sizeof(all), r) TH_LOG("readv: %s", r < 0 ? strerror(errno) : "short");
	memcpy(all, a, sizeof(a));
	memcpy(all + 1, b, sizeof(b));
	memcpy(all + 101, c, sizeof(c));
	ASSERT_EQ(801, check_batch(all, 801, 0, &self->st, wall_idgen_ms() - SLACK_MS,
				   wall_idgen_ms() + SLACK_MS, &why)) TH_LOG("%s", why);

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));
	tail = (__u64 *)(map + page) - 3;
	iov[0] = (struct iovec){ a, sizeof(a) };
	iov[1] = (struct iovec){ tail, 10 * sizeof(*tail) };
	r = readv(self->fd, iov, 2);
	ASSERT_EQ(4 * (ssize_t)sizeof(__u64), r)
		TH_LOG("readv across a PROT_NONE page returned %zd (%s)", r,
		       r < 0 ? strerror(errno) : "count");
	ASSERT_LT(all[800], a[0]);
	ASSERT_LT(a[0], tail[0]);
	ASSERT_EQ(3, check_batch(tail, 3, a[0], &self->st, wall_idgen_ms() - SLACK_MS,
				 wall_idgen_ms() + SLACK_MS, &why)) TH_LOG("%s", why);
	munmap(map, 2 * page);
}

/*
 * A buffer that is not 8-byte aligned, its fourth ID half in a PROT_NONE
 * page: the ID that straddles the hole is not returned, whether the store
 * that faulted wrote part of it (a copy) or nothing (a store of the whole
 * ID).  By read(2), written in place; by a readv() of one buffer, through
 * ->read_iter; by a readv() of two, composed and copied.
 */
TEST_F(leased, unaligned_read_fault_returns_whole_ids)
{
	static const char *const ways[] = { "read", "readv of 1", "readv of 2" };
	long page = sysconf(_SC_PAGESIZE);
	__u64 ids[4], first, prev = 0;
	struct iovec iov[2];
	const char *why;
	size_t w, n;
	char *map, *buf;
	ssize_t r;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));
	/* Room for 3 whole IDs and half of a fourth. */
	buf = map + page - 3 * sizeof(__u64) - 4;
	for (w = 0; w < 3; w++) {
		memset(buf, JUNK, 3 * sizeof(__u64) + 4);
		iov[0] = (struct iovec){ buf, 10 * sizeof(__u64) };
		n = 3;
		if (w == 0) {
			r = read(self->fd, buf, 10 * sizeof(__u64));
		} else if (w == 1) {
			r = readv(self->fd, iov, 1);
		} else {
			iov[1] = iov[0];
			iov[0] = (struct iovec){ &first, sizeof(first) };
			r = readv(self->fd, iov, 2);
			n = 4;
		}
		ASSERT_EQ((ssize_t)(n * sizeof(__u64)), r)
			TH_LOG("%s across a PROT_NONE page, unaligned: returned %zd (%s)",
			       ways[w], r, r < 0 ? strerror(errno) : "count");
		if (n == 4)
			ids[0] = first;
		memcpy(ids + n - 3, buf, 3 * sizeof(__u64));
		ASSERT_EQ(n, check_batch(ids, n, prev, &self->st,
					 wall_idgen_ms() - SLACK_MS,
					 wall_idgen_ms() + SLACK_MS, &why))
			TH_LOG("%s: %s", ways[w], why);
		prev = ids[n - 1];
	}
	munmap(map, 2 * page);
}

TEST_F(leased, read_after_revoke_enokey)
{
	struct idgen_state a, b;
	__u64 id, l;

	read_checked(_metadata, self->fd, &self->st, 0, 1);
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	errno = 0;
	EXPECT_EQ(-1, read(self->fd, &id, sizeof(id)));
	EXPECT_EQ(ENOKEY, errno);
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_LT(a.nolease_refusals, b.nolease_refusals);
	EXPECT_EQ(a.ids, b.ids);
}

TEST_F(leased, nonblocking_open_reads)
{
	__u64 last;
	int fd;

	fd = open(IDGEN_DEV, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	last = read_checked(_metadata, fd, &self->st, 0, 1);
	last = read_checked(_metadata, fd, &self->st, last, 64);
	/* Both files are views of the one generator. */
	read_checked(_metadata, self->fd, &self->st, last, 64);
	close(fd);
}

TEST_F(leased, counters_count_reads)
{
	struct idgen_state a, b;

	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	read_checked(_metadata, self->fd, &self->st, 0, 10);
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_EQ(a.ids + 10, b.ids);
	EXPECT_EQ(a.reads + 1, b.reads);
}

TEST_F(leased, ioctl_unknown_cmd_enotty)
{
	const unsigned long cmds[] = {
		_IO(IDGEN_IOC_MAGIC, 0),
		_IO(IDGEN_IOC_MAGIC, 99),
		_IO('x', 1),
		/* Known numbers with the wrong size or direction. */
		_IOW(IDGEN_IOC_MAGIC, 1, __u64),
		_IOR(IDGEN_IOC_MAGIC, 2, __u32),
		_IOR(IDGEN_IOC_MAGIC, 3, __u64),
		_IOW(IDGEN_IOC_MAGIC, 3, struct idgen_state),
		_IOW(IDGEN_IOC_MAGIC, 4, __u64),
	};
	struct idgen_state a, b;
	char buf[256];
	size_t i;

	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		memset(buf, 0, sizeof(buf));
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, cmds[i], buf)) TH_LOG("cmd %#lx", cmds[i]);
		EXPECT_EQ(ENOTTY, errno) TH_LOG("cmd %#lx", cmds[i]);
	}
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_TRUE(lease_unchanged(&a, &b));
}

/*
 * The device and namespace files do not share ioctl numbers: nsfs's
 * NS_GET_OWNER_UID is not an idgen command (it once was ADOPT_CLOCK), and
 * idgen's commands mean nothing to a namespace file.
 */
TEST_F(leased, ioctl_numbers_not_nsfs)
{
	const unsigned long ours[] = {
		IDGEN_IOC_SET_LEASE, IDGEN_IOC_REVOKE, IDGEN_IOC_GET_STATE,
		IDGEN_IOC_ADOPT_CLOCK,
	};
	const unsigned long theirs[] = {
		NS_GET_USERNS, NS_GET_PARENT, NS_GET_NSTYPE, NS_GET_OWNER_UID,
	};
	static const char *const ns_files[] = {
		"/proc/self/ns/user", "/proc/self/ns/uts", "/proc/self/ns/net",
		"/proc/self/ns/mnt",
	};
	struct idgen_state a, b;
	char buf[256];
	int ns = -1;
	size_t i;

	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	for (i = 0; i < sizeof(theirs) / sizeof(theirs[0]); i++) {
		memset(buf, 0, sizeof(buf));
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, theirs[i], buf)) TH_LOG("nsfs cmd %#lx", theirs[i]);
		EXPECT_EQ(ENOTTY, errno) TH_LOG("nsfs cmd %#lx: %s", theirs[i], strerror(errno));
	}
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_TRUE(lease_unchanged(&a, &b));

	for (i = 0; i < sizeof(ours) / sizeof(ours[0]); i++) {
		EXPECT_NE(NSIO, _IOC_TYPE(ours[i])) TH_LOG("cmd %#lx", ours[i]);
	}

	/* A kernel built without namespaces has no nsfs file to ask. */
	for (i = 0; i < sizeof(ns_files) / sizeof(ns_files[0]); i++) {
		ns = open(ns_files[i], O_RDONLY | O_CLOEXEC);
		if (ns >= 0)
			break;
	}
	if (ns < 0) {
		TH_LOG("no namespace file: idgen's numbers not tried on nsfs");
		return;
	}
	for (i = 0; i < sizeof(ours) / sizeof(ours[0]); i++) {
		memset(buf, 0, sizeof(buf));
		errno = 0;
		EXPECT_EQ(-1, ioctl(ns, ours[i], buf)) TH_LOG("idgen cmd %#lx", ours[i]);
		EXPECT_EQ(ENOTTY, errno) TH_LOG("idgen cmd %#lx: %s", ours[i], strerror(errno));
	}
	close(ns);
}

enum bad_lease {
	BAD_WORKER, BAD_REGION, BAD_REGION_V1, BAD_WORKER_V1,
	BAD_FLOOR_EQ, BAD_FLOOR_GT, BAD_UNTIL_MAX, BAD_UNTIL_U64,
	BAD_PAD, BAD_FLAG1, BAD_FLAG31, BAD_SUM_LOW, BAD_SUM_HIGH,
	BAD_PARTIAL, BAD_SEQ_MIN, BAD_REGION_BITS, BAD_U8_WRAP,
	BAD_NR
};

static const char *const bad_lease_name[BAD_NR] = {
	"worker = 2^worker_bits", "region = 2^region_bits",
	"region 8 in layout 3/7/12", "worker 128 in layout 3/7/12",
	"floor == valid_until", "floor > valid_until",
	"valid_until = IDGEN_MS_MAX + 2", "valid_until = U64_MAX",
	"pad != 0", "unknown flag 1<<1", "unknown flag 1<<31",
	"layout 3/7/11", "layout 3/7/13", "layout 0/0/12",
	"layout 8/9/5 (seq < 6)", "layout 9/7/6 (region_bits > 8)",
	"layout 200/200/134 (sum 22 mod 256)",
};

static void set_layout(struct idgen_lease_args *a, __u8 r, __u8 w, __u8 s)
{
	a->region_bits = r;
	a->worker_bits = w;
	a->seq_bits = s;
}

TEST_F(leased, set_lease_bad_params_einval)
{
	const struct idgen_state *st = &self->st;
	struct idgen_lease_args args;
	struct idgen_state a, b;
	int i;

	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	for (i = 0; i < BAD_NR; i++) {
		/* A valid new lease for another worker, then one thing wrong. */
		idgen_lease_init(&args, self->region, self->worker ^ 1,
				 a.last_ms, a.now_ms + LEASE_MS);
		switch (i) {
		case BAD_WORKER:
			args.worker = 1U << st->worker_bits;
			break;
		case BAD_REGION:
			args.region = 1U << st->region_bits;
			break;
		case BAD_REGION_V1:
			set_layout(&args, 3, 7, 12);
			args.region = 8;
			break;
		case BAD_WORKER_V1:
			set_layout(&args, 3, 7, 12);
			args.worker = 128;
			break;
		case BAD_FLOOR_EQ:
			args.floor_ms = args.valid_until_ms;
			break;
		case BAD_FLOOR_GT:
			args.floor_ms = args.valid_until_ms + 1;
			break;
		case BAD_UNTIL_MAX:
			args.valid_until_ms = IDGEN_MS_MAX + 2;
			break;
		case BAD_UNTIL_U64:
			args.valid_until_ms = ~0ULL;
			break;
		case BAD_PAD:
			args.pad = 1;
			break;
		case BAD_FLAG1:
			args.flags = 1U << 1;
			break;
		case BAD_FLAG31:
			args.flags = 1U << 31;
			break;
		case BAD_SUM_LOW:
			set_layout(&args, 3, 7, 11);
			break;
		case BAD_SUM_HIGH:
			set_layout(&args, 3, 7, 13);
			break;
		case BAD_PARTIAL:
			set_layout(&args, 0, 0, 12);
			break;
		case BAD_SEQ_MIN:
			set_layout(&args, 8, 9, 5);
			args.region = 0;
			break;
		case BAD_REGION_BITS:
			set_layout(&args, 9, 7, 6);
			break;
		case BAD_U8_WRAP:
			set_layout(&args, 200, 200, 134);
			break;
		}
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, IDGEN_IOC_SET_LEASE, &args))
			TH_LOG("%s accepted", bad_lease_name[i]);
		EXPECT_EQ(EINVAL, errno) TH_LOG("%s: %s", bad_lease_name[i], strerror(errno));
		ASSERT_EQ(0, idgen_get_state(self->fd, &b));
		EXPECT_TRUE(lease_unchanged(&a, &b)) TH_LOG("%s changed the state", bad_lease_name[i]);
		a = b;	/* blame each change on one case only */
	}
	/* Still minting under the original lease. */
	read_checked(_metadata, self->fd, st, 0, 4);
}

/*
 * A lease whose first ID would lie at or past its own fence could never
 * mint: refused with EKEYEXPIRED when it is set, changing nothing, rather
 * than accepted for every read to fail.  One millisecond of room is enough.
 */
TEST_F(leased, set_lease_never_mints_ekeyexpired)
{
	struct idgen_lease_args args;
	struct idgen_state a, b;
	__u64 last, id, floor;
	int i;

	last = read_checked(_metadata, self->fd, &self->st, 0, 1);
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	ASSERT_LE(id_ms(last), a.last_ms);
	for (i = 0; i < 4; i++) {
		switch (i) {
		case 0:	/* another node: the floor leaves no room */
			idgen_lease_init(&args, self->region, self->worker ^ 1,
					 a.now_ms + 100, a.now_ms + 101);
			break;
		case 1:	/* another node: the host's last ms leaves none */
			idgen_lease_init(&args, self->region, self->worker ^ 1,
					 0, a.last_ms + 1);
			break;
		case 2:	/* a renewal whose floor lifts the next ID to the fence */
			idgen_lease_init(&args, self->region, self->worker,
					 a.valid_until_ms - 1, a.valid_until_ms);
			break;
		case 3:	/* a renewal lifting it past the fence */
			idgen_lease_init(&args, self->region, self->worker,
					 a.valid_until_ms + 5, a.valid_until_ms + 6);
			break;
		}
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, IDGEN_IOC_SET_LEASE, &args))
			TH_LOG("case %d: floor %llu, valid_until %llu accepted", i,
			       args.floor_ms, args.valid_until_ms);
		EXPECT_EQ(EKEYEXPIRED, errno) TH_LOG("case %d: %s", i, strerror(errno));
		ASSERT_EQ(0, idgen_get_state(self->fd, &b));
		EXPECT_TRUE(lease_unchanged(&a, &b)) TH_LOG("case %d changed the state", i);
		a = b;
	}
	/* Still minting under the original lease, above what it minted. */
	EXPECT_LT(last, read_checked(_metadata, self->fd, &self->st, last, 4));

	/*
	 * Exactly one millisecond of room, ahead of the clock (within the
	 * lead) so it is still to come when the read runs: accepted, and it
	 * mints there.
	 */
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	floor = a.now_ms + a.max_lead_ms / 2;
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker ^ 1,
				     floor, floor + 2)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(1, idgen_read(self->fd, &id, 1)) TH_LOG("read: %s", strerror(errno));
	EXPECT_EQ(floor + 1, id_ms(id));
}

/*
 * A lease whose fence the clock has already passed could never mint
 * either, even though nothing the host used lies at or above it: refused
 * with EKEYEXPIRED when it is set, rather than accepted for every read to
 * fail.
 */
TEST_F(leased, set_lease_fence_past_ekeyexpired)
{
	struct idgen_state a, b;
	__u64 l;

	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	/* The clock moves on while nothing is minted. */
	do {
		sleep_ms(20);
		ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	} while (a.now_ms < a.last_ms + 100);
	errno = 0;
	EXPECT_EQ(-1, idgen_set_lease(self->fd, self->region, self->worker ^ 1,
				      a.last_ms, a.last_ms + 50))
		TH_LOG("fence %llu accepted at ms %llu", a.last_ms + 50, a.now_ms);
	EXPECT_EQ(EKEYEXPIRED, errno) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_FALSE(b.flags & IDGEN_STATE_LEASED);
	EXPECT_EQ(a.last_ms, b.last_ms);
	/* The fixture's teardown revokes: lease again. */
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker,
				     b.last_ms, b.now_ms + LEASE_MS));
}

TEST_F(leased, renewal)
{
	struct idgen_state a, b;
	__u64 until = self->st.valid_until_ms;

	/* Moving the fence back is refused and changes nothing. */
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	errno = 0;
	EXPECT_EQ(-1, idgen_set_lease(self->fd, self->region, self->worker,
				      self->st.floor_ms, until - 1));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_TRUE(lease_unchanged(&a, &b));

	/* Moving it forward renews, same node, minting goes on. */
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker,
				     self->st.floor_ms, until + 1000));
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_EQ(until + 1000, b.valid_until_ms);
	EXPECT_EQ(self->region, b.region);
	EXPECT_EQ(self->worker, b.worker);
	EXPECT_TRUE(b.flags & IDGEN_STATE_LEASED);
	read_checked(_metadata, self->fd, &b, 0, 8);

	/* The fence may be IDGEN_MS_MAX + 1, no further. */
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker,
				     self->st.floor_ms, IDGEN_MS_MAX + 1));
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	EXPECT_EQ(IDGEN_MS_MAX + 1, a.valid_until_ms);
	errno = 0;
	EXPECT_EQ(-1, idgen_set_lease(self->fd, self->region, self->worker,
				      self->st.floor_ms, IDGEN_MS_MAX + 2));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_TRUE(lease_unchanged(&a, &b));
}

TEST_F(leased, ioctl_bad_pointer_efault)
{
	long page = sysconf(_SC_PAGESIZE);
	struct idgen_state a, b;
	void *none, *ro;

	none = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, none);
	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));

	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, IDGEN_IOC_SET_LEASE, NULL));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, IDGEN_IOC_SET_LEASE, none));
	EXPECT_EQ(EFAULT, errno);
	/* The last byte of the args in the hole. */
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, IDGEN_IOC_SET_LEASE,
			    (char *)none - sizeof(struct idgen_lease_args) + 1));
	EXPECT_EQ(EFAULT, errno);
	/* A revoke that cannot return L must not revoke (Documentation/design.md section 8). */
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, IDGEN_IOC_REVOKE, NULL));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, IDGEN_IOC_REVOKE, ro));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, IDGEN_IOC_GET_STATE, NULL));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, IDGEN_IOC_GET_STATE, ro));
	EXPECT_EQ(EFAULT, errno);

	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_TRUE(lease_unchanged(&a, &b));
	munmap(none, page);
	munmap(ro, page);
}

TEST_F(leased, get_state_fills_every_field)
{
	struct idgen_state a, b;
	int64_t wall;

	/* Two junk patterns: a field the kernel never wrote differs. */
	memset(&a, 0xa5, sizeof(a));
	memset(&b, 0x5a, sizeof(b));
	ASSERT_EQ(0, ioctl(self->fd, IDGEN_IOC_GET_STATE, &a));
	ASSERT_EQ(0, ioctl(self->fd, IDGEN_IOC_GET_STATE, &b));
	wall = wall_idgen_ms();

#define SAME(f)		EXPECT_EQ(a.f, b.f) TH_LOG(#f " was not written")
#define CLOSE(f)	EXPECT_GT(1000, llabs((long long)(a.f - b.f)))	\
				TH_LOG(#f " was not written")
	SAME(last_ms); SAME(floor_ms); SAME(valid_until_ms);
	SAME(held_step_ms); SAME(flags); SAME(region); SAME(worker);
	SAME(max_lead_ms); SAME(max_step_ms); SAME(region_bits);
	SAME(worker_bits); SAME(seq_bits); SAME(pad); SAME(ids); SAME(reads);
	SAME(borrowed_ms); SAME(steps_back); SAME(steps_forward);
	SAME(steps_adopted); SAME(fence_refusals); SAME(lead_refusals);
	SAME(nolease_refusals); SAME(range_refusals);
	/* next_ms is at least now_ms, so it moves with the clock too. */
	CLOSE(now_ms); CLOSE(wall_ms); CLOSE(next_ms);
#undef SAME
#undef CLOSE

	EXPECT_EQ(0, a.pad);
	EXPECT_EQ(IDGEN_NODE_SEQ_BITS, a.region_bits + a.worker_bits + a.seq_bits);
	EXPECT_GE(IDGEN_REGION_BITS_MAX, a.region_bits);
	EXPECT_LE(IDGEN_SEQ_BITS_MIN, a.seq_bits);
	EXPECT_EQ(0, a.flags & ~(__u32)(IDGEN_STATE_LEASED | IDGEN_STATE_CLOCK_HELD));
	EXPECT_TRUE(a.flags & IDGEN_STATE_LEASED);
	EXPECT_FALSE(a.flags & IDGEN_STATE_CLOCK_HELD);
	EXPECT_EQ(0, a.held_step_ms);
	EXPECT_EQ(self->region, a.region);
	EXPECT_EQ(self->worker, a.worker);
	EXPECT_EQ(self->st.floor_ms, a.floor_ms);
	EXPECT_EQ(self->st.valid_until_ms, a.valid_until_ms);
	EXPECT_LT(0, a.max_lead_ms);
	EXPECT_LT(0, a.max_step_ms);
	EXPECT_GT(SLACK_MS, llabs((long long)a.now_ms - wall));
	EXPECT_GT(SLACK_MS, llabs((long long)a.wall_ms - wall));
	EXPECT_LE(a.last_ms, a.next_ms);
	EXPECT_LE(a.now_ms, a.next_ms);
	EXPECT_LT(a.floor_ms, a.next_ms);
	EXPECT_GT(a.valid_until_ms, a.next_ms);
	EXPECT_NE(JUNK64, a.ids);
	EXPECT_NE(JUNK64, a.range_refusals);
}

TEST_F(leased, adopt_clock_without_held_step_is_noop)
{
	struct idgen_state a, b;

	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	EXPECT_EQ(0, ioctl(self->fd, IDGEN_IOC_ADOPT_CLOCK));
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_EQ(a.steps_adopted, b.steps_adopted);
	EXPECT_TRUE(lease_unchanged(&a, &b));
	read_checked(_metadata, self->fd, &b, 0, 1);
}

/* Any user may mint and read the state; changing state needs root. */
TEST_F(leased, nonroot_cannot_change_state)
{
	static const char *const what[] = {
		[1] = "dropping to uid/gid 65534 failed",
		[2] = "open as nobody failed",
		[3] = "read as nobody failed",
		[4] = "GET_STATE as nobody failed",
		[5] = "SET_LEASE as nobody did not fail with EPERM",
		[6] = "REVOKE as nobody did not fail with EPERM",
		[7] = "ADOPT_CLOCK as nobody did not fail with EPERM",
	};
	struct idgen_state a, b;
	__u64 *ids, last;
	const char *why;
	int status;
	pid_t pid;

	ids = mmap(NULL, 8 * sizeof(*ids), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ids);
	last = read_checked(_metadata, self->fd, &self->st, 0, 1);
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct idgen_lease_args args;
		struct idgen_state st;
		__u64 l;
		int fd;

		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			_exit(1);
		fd = open(IDGEN_DEV, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(2);
		if (idgen_read(fd, ids, 8) != 8)
			_exit(3);
		if (idgen_get_state(fd, &st) || st.worker != a.worker)
			_exit(4);
		/* Arguments root could set, so only the caller is wrong. */
		idgen_lease_init(&args, a.region, a.worker, a.floor_ms,
				 a.valid_until_ms + 1000);
		if (ioctl(fd, IDGEN_IOC_SET_LEASE, &args) != -1 || errno != EPERM)
			_exit(5);
		if (ioctl(fd, IDGEN_IOC_REVOKE, &l) != -1 || errno != EPERM)
			_exit(6);
		if (ioctl(fd, IDGEN_IOC_ADOPT_CLOCK) != -1 || errno != EPERM)
			_exit(7);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("%s", WEXITSTATUS(status) < 8 ? what[WEXITSTATUS(status)] : "?");

	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_EQ(a.flags, b.flags);
	EXPECT_EQ(a.valid_until_ms, b.valid_until_ms);
	EXPECT_EQ(a.floor_ms, b.floor_ms);
	EXPECT_EQ(a.region, b.region);
	EXPECT_EQ(a.worker, b.worker);
	ASSERT_EQ(8, check_batch(ids, 8, last, &self->st, wall_idgen_ms() - SLACK_MS,
				 wall_idgen_ms() + SLACK_MS, &why)) TH_LOG("%s", why);
	munmap(ids, 8 * sizeof(*ids));
}

/* F1: no ID at or after valid_until; renewal resumes minting. */
TEST_F(leased, fence_stops_minting)
{
	struct idgen_state st, a, b;
	__u64 ids[64], l, until, prev = 0, start;
	size_t got = 0;
	ssize_t r, i;

	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	until = st.now_ms + 200;
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker, l, until));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));

	start = clock_ns(CLOCK_MONOTONIC);
	for (;;) {
		r = idgen_read(self->fd, ids, 64);
		if (r < 0)
			break;
		ASSERT_LT(0, r);
		for (i = 0; i < r; i++) {
			ASSERT_LT(prev, ids[i]);
			ASSERT_GT(until, id_ms(ids[i])) TH_LOG("ID %llu at or past the fence", ids[i]);
			ASSERT_EQ(self->worker, id_worker(ids[i], &st));
			prev = ids[i];
		}
		got += r;
		ASSERT_GT(3 * NSEC_PER_SEC, clock_ns(CLOCK_MONOTONIC) - start)
			TH_LOG("still minting 3 s after a fence 200 ms ahead");
	}
	ASSERT_EQ(EKEYEXPIRED, errno) TH_LOG("read: %s", strerror(errno));
	ASSERT_LT(0, got);

	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	errno = 0;
	EXPECT_EQ(-1, idgen_read(self->fd, ids, 1));
	EXPECT_EQ(EKEYEXPIRED, errno);
	EXPECT_FALSE(poll_revents(self->fd, 0) & POLLIN);
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_LT(a.fence_refusals, b.fence_refusals);
	EXPECT_EQ(a.ids, b.ids);

	/* Renewal: same node, fence forward. */
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker, l,
				     b.now_ms + LEASE_MS));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	r = idgen_read(self->fd, ids, 16);
	ASSERT_EQ(16, r) TH_LOG("read after renewal: %s", strerror(errno));
	EXPECT_LT(prev, ids[0]);
	EXPECT_LE(until, id_ms(ids[0]));
	EXPECT_EQ(self->worker, id_worker(ids[0], &st));
	EXPECT_EQ(16, first_not_increasing(ids, 16));
}

/* F2: a floor less than max_lead ahead lifts the first ID above it. */
TEST_F(leased, floor_ahead_lifts_first_id)
{
	struct idgen_state st;
	__u64 id, l, floor;

	if (self->st.max_lead_ms < 400)
		SKIP(return, "max_lead_ms %u < 400", self->st.max_lead_ms);
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	floor = st.now_ms + 300;
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker, floor,
				     st.now_ms + LEASE_MS));
	ASSERT_EQ(1, idgen_read(self->fd, &id, 1)) TH_LOG("read: %s", strerror(errno));
	EXPECT_LT(floor, id_ms(id));
	EXPECT_GT(floor + SLACK_MS, id_ms(id));
}

/* A renewal's floor above the last stamped ms lifts the next ID. */
TEST_F(leased, renewal_floor_lifts_next_id)
{
	struct idgen_state st;
	__u64 id, prev, floor;

	if (self->st.max_lead_ms < 400)
		SKIP(return, "max_lead_ms %u < 400", self->st.max_lead_ms);
	prev = read_checked(_metadata, self->fd, &self->st, 0, 1);
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	floor = st.now_ms + 300;
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker, floor,
				     st.valid_until_ms));
	ASSERT_EQ(1, idgen_read(self->fd, &id, 1)) TH_LOG("read: %s", strerror(errno));
	EXPECT_LT(prev, id);
	EXPECT_LT(floor, id_ms(id));
	EXPECT_EQ(self->worker, id_worker(id, &st));
}

/*
 * A floor beyond max_lead: reads fail with ETIME at once, blocking or not
 * (EAGAIN is only for waits of a few ms), and poll() does not report POLLIN.
 */
TEST_F(leased, floor_beyond_lead_etime)
{
	struct idgen_state st, a, b;
	__u64 id, l, floor, t;
	int nb;

	if (self->st.max_lead_ms >= 4000)
		SKIP(return, "max_lead_ms %u >= 4000", self->st.max_lead_ms);
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	floor = st.now_ms + 5000;
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker, floor,
				     st.now_ms + LEASE_MS));
	ASSERT_EQ(0, idgen_get_state(self->fd, &a));

	t = clock_ns(CLOCK_MONOTONIC);
	errno = 0;
	EXPECT_EQ(-1, idgen_read(self->fd, &id, 1));
	EXPECT_EQ(ETIME, errno);
	EXPECT_GT(1500 * NSEC_PER_MSEC, clock_ns(CLOCK_MONOTONIC) - t)
		TH_LOG("a read blocked for a floor 5 s ahead");

	nb = open(IDGEN_DEV, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, nb);
	errno = 0;
	EXPECT_EQ(-1, idgen_read(nb, &id, 1));
	EXPECT_EQ(ETIME, errno);
	EXPECT_FALSE(poll_revents(nb, 0) & POLLIN);
	close(nb);

	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_LE(a.lead_refusals + 2, b.lead_refusals);
	EXPECT_EQ(a.ids, b.ids);

	/* The revoke fences off the floor; later leases wait for the clock. */
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	EXPECT_LE(floor, l);
}

/* F3, G2: revoke bounds every ID; the next lease starts above it. */
TEST_F(leased, revoke_then_new_node)
{
	struct idgen_state st;
	__u64 prev = 0, l, l2, id, floor;
	__u32 worker2 = self->worker ^ 1;
	int i;

	for (i = 0; i < 5; i++)
		prev = read_checked(_metadata, self->fd, &self->st, prev, 100);
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	EXPECT_LE(self->st.floor_ms, l);
	EXPECT_LE(id_ms(prev), l);

	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	EXPECT_FALSE(st.flags & IDGEN_STATE_LEASED);
	EXPECT_EQ(0, st.floor_ms);
	EXPECT_EQ(0, st.valid_until_ms);
	EXPECT_EQ(l, st.last_ms);
	errno = 0;
	EXPECT_EQ(-1, idgen_read(self->fd, &id, 1));
	EXPECT_EQ(ENOKEY, errno);

	/* A retried revoke is safe and returns the same L. */
	ASSERT_EQ(0, idgen_revoke(self->fd, &l2));
	EXPECT_EQ(l, l2);

	/* A floor below L: the module itself keeps the next ID above L. */
	floor = l > 10000 ? l - 10000 : 0;
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, worker2, floor,
				     st.now_ms + LEASE_MS));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	ASSERT_EQ(1, idgen_read(self->fd, &id, 1)) TH_LOG("read: %s", strerror(errno));
	EXPECT_LT(l, id_ms(id));
	EXPECT_LT(prev, id);
	EXPECT_EQ(worker2, id_worker(id, &st));
	EXPECT_EQ(self->region, id_region(id, &st));
}

/* A lease may bring its own layout; IDs decode with it. */
TEST_F(leased, lease_with_layout)
{
	struct idgen_lease_args args;
	struct idgen_state st;
	__u64 prev, l, ids[600];
	const char *why;
	ssize_t r;

	prev = read_checked(_metadata, self->fd, &self->st, 0, 1);
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	idgen_lease_init(&args, 5, 1000, l, st.now_ms + LEASE_MS);
	set_layout(&args, 3, 10, 9);
	ASSERT_EQ(0, ioctl(self->fd, IDGEN_IOC_SET_LEASE, &args))
		TH_LOG("lease with layout 3/10/9: %s", strerror(errno));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	EXPECT_EQ(3, st.region_bits);
	EXPECT_EQ(10, st.worker_bits);
	EXPECT_EQ(9, st.seq_bits);
	EXPECT_EQ(1000, st.worker);

	/* 600 IDs > 512 per ms: the batch spans two milliseconds at least. */
	r = idgen_read(self->fd, ids, 600);
	ASSERT_EQ(600, r) TH_LOG("read: %s", r < 0 ? strerror(errno) : "short");
	ASSERT_EQ(600, check_batch(ids, 600, prev, &st, wall_idgen_ms() - SLACK_MS,
				   wall_idgen_ms() + SLACK_MS, &why)) TH_LOG("%s", why);
	EXPECT_LT(id_ms(ids[0]), id_ms(ids[599]));
	EXPECT_LT(id_ms(prev), id_ms(ids[0]));

	/* Without a lease the state shows the default layout again. */
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	EXPECT_EQ(self->st.region_bits, st.region_bits);
	EXPECT_EQ(self->st.worker_bits, st.worker_bits);
	EXPECT_EQ(self->st.seq_bits, st.seq_bits);
}

TEST_F(leased, poll_ready_with_lease)
{
	short ev = poll_revents(self->fd, 0);

	EXPECT_TRUE(ev & POLLIN) TH_LOG("revents %#x", ev);
	EXPECT_TRUE(ev & POLLRDNORM) TH_LOG("revents %#x", ev);
}

/*
 * A lease push that could never mint is refused, but the old lease's state
 * word was closed meanwhile: a poller that met it closed once saw "not
 * ready", armed no timer and slept its whole timeout on a device that
 * reads at once, since the refused push woke nobody.  One thread repeats
 * such a push while this one polls; a poll that lasts its full timeout
 * while the device reads at once is that lost wake-up (the race hits
 * about one poll in two thousand; a ready device's poll returns at once).
 */
#define REFUSED_PUSH_RUN_MS	8000
#define REFUSED_PUSH_POLL_MS	3000

struct refused_pusher {
	int fd;
	struct idgen_lease_args args;
	atomic_bool stop;
	unsigned long refused, other;
	int other_errno;
};

static void *refused_push_fn(void *arg)
{
	struct refused_pusher *p = arg;

	while (!atomic_load(&p->stop)) {
		if (ioctl(p->fd, IDGEN_IOC_SET_LEASE, &p->args) &&
		    errno == EKEYEXPIRED) {
			p->refused++;
		} else {
			p->other++;
			p->other_errno = errno;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(leased, poll_ready_during_refused_pushes, 120)
{
	struct refused_pusher p = { .stop = false };
	__u64 t0, t, end, id;
	unsigned long polls = 0, lost = 0;
	struct idgen_state st;
	pthread_t th;
	int nb;

	nb = open(IDGEN_DEV, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, nb);
	ASSERT_EQ(1, idgen_read(nb, &id, 1)) TH_LOG("read: %s", strerror(errno));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	/* Another node whose first ms, floor + 1, is its fence. */
	p.fd = self->fd;
	idgen_lease_init(&p.args, self->region, self->worker ^ 1,
			 st.now_ms + 100, st.now_ms + 101);
	ASSERT_EQ(0, pthread_create(&th, NULL, refused_push_fn, &p));

	end = clock_ns(CLOCK_MONOTONIC) + REFUSED_PUSH_RUN_MS * NSEC_PER_MSEC;
	while ((t0 = clock_ns(CLOCK_MONOTONIC)) < end && !lost) {
		struct pollfd pfd = { .fd = nb, .events = POLLIN };

		poll(&pfd, 1, REFUSED_PUSH_POLL_MS);
		t = (clock_ns(CLOCK_MONOTONIC) - t0) / NSEC_PER_MSEC;
		polls++;
		if (t >= REFUSED_PUSH_POLL_MS && idgen_read(nb, &id, 1) == 1) {
			TH_LOG("poll %lu slept %llu ms on a device that reads at once",
			       polls, t);
			lost++;
		}
	}
	atomic_store(&p.stop, true);
	ASSERT_EQ(0, pthread_join(th, NULL));
	close(nb);
	TH_LOG("%lu polls, %lu pushes refused", polls, p.refused);
	EXPECT_EQ(0, lost);
	EXPECT_LT(0, p.refused);
	EXPECT_EQ(0, p.other) TH_LOG("a push not refused with EKEYEXPIRED: %s",
				     strerror(p.other_errno));
	/* The pushes left the lease alone. */
	EXPECT_EQ(1, idgen_read(self->fd, &id, 1));
	EXPECT_EQ(self->worker, id_worker(id, &self->st));
}

/*
 * An edge-triggered poller that read the device dry (EAGAIN: the readers
 * used up the lead bound) is woken once the clock has caught up, without
 * calling poll() itself.  A 6-bit sequence (64 IDs per ms) makes the lead
 * quick to drain on the slowest guest; the bound on the wake-up is
 * generous, since without one it never comes.
 */
#define EPOLLET_BOUND_MS	5000
TEST_F_TIMEOUT(leased, epollet_woken_after_eagain, 120)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	struct idgen_lease_args args;
	struct idgen_state st;
	__u64 ids[512], l, t0, waited;
	size_t drained = 0;
	int nb, ep, n;
	ssize_t r;

	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	idgen_lease_init(&args, 0, self->worker, l, st.now_ms + LEASE_MS);
	set_layout(&args, 0, 16, 6);
	ASSERT_EQ(0, ioctl(self->fd, IDGEN_IOC_SET_LEASE, &args))
		TH_LOG("lease with layout 0/16/6: %s", strerror(errno));

	nb = open(IDGEN_DEV, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, nb);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, nb, &ev));
	/* The edge of the lease being there. */
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, 0));

	t0 = clock_ns(CLOCK_MONOTONIC);
	while ((r = idgen_read(nb, ids, 512)) > 0) {
		drained += r;
		ASSERT_GT(60 * NSEC_PER_SEC, clock_ns(CLOCK_MONOTONIC) - t0)
			TH_LOG("still reading after 60 s, %zu IDs", drained);
	}
	ASSERT_EQ(EAGAIN, errno) TH_LOG("read: %s", strerror(errno));

	t0 = clock_ns(CLOCK_MONOTONIC);
	n = epoll_wait(ep, &ev, 1, EPOLLET_BOUND_MS);
	waited = (clock_ns(CLOCK_MONOTONIC) - t0) / NSEC_PER_MSEC;
	TH_LOG("drained %zu IDs to EAGAIN; woken after %llu ms", drained, waited);
	ASSERT_EQ(1, n) TH_LOG("no EPOLLIN within %d ms of EAGAIN", EPOLLET_BOUND_MS);
	EXPECT_TRUE(ev.events & EPOLLIN);
	EXPECT_LT(0, idgen_read(nb, ids, 1)) TH_LOG("read after EPOLLIN: %s", strerror(errno));
	close(ep);
	close(nb);
}

static void ignore_signal(int sig)
{
	(void)sig;
}

static int cmp_ull(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static __u64 median(__u64 *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_ull);
	return v[n / 2];
}

/*
 * A signal ends a throttled read's sleep at once, rather than leaving the
 * reader spinning in the kernel until the sleep's deadline.  Each round
 * renews the lease with a floor that puts the next ID 5 ms beyond the lead
 * bound, so a blocking read sleeps for the clock; every other round a
 * timer signals the thread 1 ms into that read.  A read that spins until
 * its sleep's deadline (the bug: ~4 ms of CPU each) both costs more CPU
 * than the same read left to sleep and returns no sooner than it.  Either
 * figure alone can mislead on a loaded guest: a late timer delays the
 * interrupted read, and a PREEMPT_RT kernel charges the reader for the
 * signal's delivery; so the read fails only when both say it spun.
 */
#define THROTTLE_ROUNDS		21
#define THROTTLE_SLACK_NS	(1000 * 1000ULL)
TEST_F_TIMEOUT(leased, signal_ends_throttled_read, 120)
{
	struct sigaction sa = { .sa_handler = ignore_signal };	/* no SA_RESTART */
	struct sigevent sev = {
		.sigev_notify = SIGEV_THREAD_ID,
		.sigev_signo = SIGUSR1,
	};
	const struct itimerspec in_1ms = { .it_value.tv_nsec = 1000 * 1000 };
	const struct itimerspec off = {};
	__u64 cpu_intr[THROTTLE_ROUNDS], cpu_slept[THROTTLE_ROUNDS];
	__u64 wall_intr[THROTTLE_ROUNDS], wall_slept[THROTTLE_ROUNDS];
	__u64 id, c0, w0, floor;
	bool cheap, early;
	int i, nintr = 0, nslept = 0, err;
	struct idgen_state st;
	timer_t timer;
	ssize_t r;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	sev._sigev_un._tid = gettid();
	ASSERT_EQ(0, timer_create(CLOCK_MONOTONIC, &sev, &timer));
	for (i = 0; i < 2 * THROTTLE_ROUNDS; i++) {
		bool signal = i & 1;

		ASSERT_EQ(0, idgen_get_state(self->fd, &st));
		floor = st.now_ms + st.max_lead_ms + 4;
		ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker,
					     floor, st.valid_until_ms))
			TH_LOG("renewal with floor %llu: %s", floor, strerror(errno));
		if (signal)
			ASSERT_EQ(0, timer_settime(timer, 0, &in_1ms, NULL));
		w0 = clock_ns(CLOCK_MONOTONIC);
		c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		r = idgen_read(self->fd, &id, 1);
		err = errno;
		c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		w0 = clock_ns(CLOCK_MONOTONIC) - w0;
		ASSERT_EQ(0, timer_settime(timer, 0, &off, NULL));
		if (!signal) {
			ASSERT_EQ(1, r) TH_LOG("throttled read: %s", strerror(err));
			EXPECT_LT(floor, id_ms(id));
			wall_slept[nslept] = w0;
			cpu_slept[nslept++] = c0;
		} else if (r < 0) {
			ASSERT_EQ(EINTR, err) TH_LOG("read: %s", strerror(err));
			wall_intr[nintr] = w0;
			cpu_intr[nintr++] = c0;
		}
		/* The next round's floor lies above this one's. */
		sleep_ms(7);
	}
	timer_delete(timer);
	signal(SIGUSR1, SIG_DFL);

	/* A slow guest may have slept through the 1 ms; most rounds do not. */
	ASSERT_LE(THROTTLE_ROUNDS / 3, nintr) TH_LOG("only %d reads interrupted", nintr);
	TH_LOG("median CPU of a throttled read: %llu us slept, %llu us interrupted (%d); median time to return: %llu us slept, %llu us interrupted",
	       median(cpu_slept, nslept) / 1000, median(cpu_intr, nintr) / 1000,
	       nintr, median(wall_slept, nslept) / 1000,
	       median(wall_intr, nintr) / 1000);
	cheap = median(cpu_slept, nslept) + THROTTLE_SLACK_NS > median(cpu_intr, nintr);
	early = median(wall_intr, nintr) + THROTTLE_SLACK_NS < median(wall_slept, nslept);
	EXPECT_TRUE(cheap || early)
		TH_LOG("an interrupted read burnt the CPU until its sleep's deadline");
}

/* ------------------------------------------------------------------ */
/* Batches of several sizes, one variant each.                         */

FIXTURE(batch) {
	int fd;
	__u32 region, worker;
	struct idgen_state st;
};

FIXTURE_VARIANT(batch) {
	size_t n;
};

FIXTURE_VARIANT_ADD(batch, ids_1) { .n = 1 };
FIXTURE_VARIANT_ADD(batch, ids_7) { .n = 7 };
FIXTURE_VARIANT_ADD(batch, ids_512) { .n = 512 };
FIXTURE_VARIANT_ADD(batch, ids_4096) { .n = 4096 };
FIXTURE_VARIANT_ADD(batch, ids_65536) { .n = 65536 };

FIXTURE_SETUP(batch)
{
	REQUIRE_GUEST_ROOT("changes the host's lease");
	OPEN_OR_SKIP(self->fd, 0);
	lease_up(_metadata, self->fd, &self->region, &self->worker, &self->st);
}

FIXTURE_TEARDOWN(batch)
{
	__u64 l;

	EXPECT_EQ(0, idgen_revoke(self->fd, &l));
	close(self->fd);
}

/* Strictly increasing within and across reads, the lease's node, now's ms. */
TEST_F(batch, read_increasing_decodes)
{
	size_t n = variant->n, i;
	__u64 *ids, prev = 0;
	const char *why;
	int64_t lo, hi;
	ssize_t r;
	int round;

	ids = malloc(n * sizeof(*ids));
	ASSERT_NE(NULL, ids);
	for (round = 0; round < 3; round++) {
		memset(ids, JUNK, n * sizeof(*ids));
		lo = wall_idgen_ms() - SLACK_MS;
		r = idgen_read(self->fd, ids, n);
		hi = wall_idgen_ms() + SLACK_MS;
		ASSERT_EQ((ssize_t)n, r) TH_LOG("read of %zu: %s", n,
						 r < 0 ? strerror(errno) : "short");
		i = check_batch(ids, n, prev, &self->st, lo, hi, &why);
		ASSERT_EQ(n, i) TH_LOG("ID %zu (%llu): %s", i, ids[i], why);
		/* More IDs than a millisecond holds: borrowed milliseconds. */
		EXPECT_LE((n - 1) >> self->st.seq_bits,
			  id_ms(ids[n - 1]) - id_ms(ids[0]));
		prev = ids[n - 1];
	}
	free(ids);
}

/* ------------------------------------------------------------------ */
/* No lease in force.                                                   */

FIXTURE(nolease) {
	int fd;
};

FIXTURE_SETUP(nolease)
{
	__u64 l;

	REQUIRE_GUEST_ROOT("changes the host's lease");
	OPEN_OR_SKIP(self->fd, 0);
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
}

FIXTURE_TEARDOWN(nolease)
{
	__u64 l;

	EXPECT_EQ(0, idgen_revoke(self->fd, &l));
	close(self->fd);
}

TEST_F(nolease, read_enokey)
{
	struct idgen_state a, b;
	__u64 ids[8];

	ASSERT_EQ(0, idgen_get_state(self->fd, &a));
	EXPECT_FALSE(a.flags & IDGEN_STATE_LEASED);
	EXPECT_EQ(0, a.floor_ms);
	EXPECT_EQ(0, a.valid_until_ms);
	errno = 0;
	EXPECT_EQ(-1, idgen_read(self->fd, ids, 8));
	EXPECT_EQ(ENOKEY, errno);
	errno = 0;
	EXPECT_EQ(-1, idgen_read(self->fd, ids, 1));
	EXPECT_EQ(ENOKEY, errno);
	ASSERT_EQ(0, idgen_get_state(self->fd, &b));
	EXPECT_LE(a.nolease_refusals + 2, b.nolease_refusals);
	EXPECT_EQ(a.ids, b.ids);
}

TEST_F(nolease, revoke_without_lease_returns_last_ms)
{
	struct idgen_state st;
	__u64 l;

	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	EXPECT_EQ(st.last_ms, l);
}

TEST_F(nolease, poll_not_ready)
{
	EXPECT_EQ(0, poll_revents(self->fd, 0));
}

struct delayed_lease {
	int fd;
	unsigned int delay_ms;
	__u32 region, worker;
	int ret, err;
};

static void *set_lease_later(void *arg)
{
	struct delayed_lease *d = arg;
	struct idgen_state st;

	sleep_ms(d->delay_ms);
	d->ret = idgen_get_state(d->fd, &st);
	if (!d->ret)
		d->ret = idgen_set_lease(d->fd, d->region, d->worker,
					 st.last_ms, st.now_ms + LEASE_MS);
	d->err = errno;
	return NULL;
}

TEST_F(nolease, poll_wakes_on_lease)
{
	struct delayed_lease d = { .fd = self->fd, .delay_ms = 200 };
	struct idgen_state st;
	pthread_t thread;
	__u64 t, id;
	short ev;

	ASSERT_EQ(0, idgen_wait_caught_up(self->fd, 10000));
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	d.region = TEST_REGION & field_mask(st.region_bits);
	d.worker = TEST_WORKER & field_mask(st.worker_bits);
	ASSERT_EQ(0, pthread_create(&thread, NULL, set_lease_later, &d));
	/*
	 * The lease comes 200 ms from now, or later on a loaded machine:
	 * a poll that ends with POLLIN within its long timeout was woken by
	 * it.  No upper bound on the time: the thread setting the lease may
	 * be late.
	 */
	t = clock_ns(CLOCK_MONOTONIC);
	ev = poll_revents(self->fd, 20000);
	t = clock_ns(CLOCK_MONOTONIC) - t;
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ASSERT_EQ(0, d.ret) TH_LOG("set lease: %s", strerror(d.err));
	EXPECT_TRUE(ev & POLLIN) TH_LOG("revents %#x after %llu ms", ev, t / NSEC_PER_MSEC);
	EXPECT_LE(150 * NSEC_PER_MSEC, t) TH_LOG("POLLIN before the lease was set");
	EXPECT_EQ(1, idgen_read(self->fd, &id, 1));
}

/* ------------------------------------------------------------------ */
/* Concurrent readers.                                                   */

struct read_rec {
	__u64 t0, t1;		/* CLOCK_MONOTONIC before and after read() */
	__u64 first, last;
};

struct reader {
	pthread_t thread;
	int fd;
	const unsigned int *sizes;
	size_t nsizes;
	atomic_bool *stop;
	__u64 deadline;		/* CLOCK_MONOTONIC ns; 0 for none */
	int stop_errno;		/* an errno that ends the reader, e.g. ENOKEY */
	bool spin;

	/* Storage, optional: IDs past ids_cap are checked, not kept. */
	__u64 *ids;
	size_t nids, ids_cap;
	struct read_rec *recs;
	size_t nrecs, recs_cap;

	/* Results. */
	__u64 scratch[4096];
	__u64 prev, max_id, last_ok_t0, nreads, total;
	size_t lead_refusals;
	int end_errno, err;
	bool not_increasing, zero_read;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	size_t k = 0;

	while (!atomic_load(rd->stop)) {
		size_t n = rd->sizes[k++ % rd->nsizes];
		bool keep = rd->ids && rd->nids + n <= rd->ids_cap;
		__u64 *buf = keep ? rd->ids + rd->nids : rd->scratch;
		__u64 t0, t1;
		ssize_t r, i;

		if (rd->deadline && clock_ns(CLOCK_MONOTONIC) >= rd->deadline)
			break;
		if (rd->recs && rd->nrecs == rd->recs_cap)
			break;
		t0 = clock_ns(CLOCK_MONOTONIC);
		r = idgen_read(rd->fd, buf, n);
		t1 = clock_ns(CLOCK_MONOTONIC);
		if (r < 0) {
			if (errno == rd->stop_errno) {
				rd->end_errno = errno;
				break;
			}
			if (errno == ETIME) {
				/* Ran max_lead ahead of the clock: back off. */
				rd->lead_refusals++;
				sleep_ms(1);
				continue;
			}
			rd->err = errno;
			break;
		}
		if (r == 0) {
			rd->zero_read = true;
			break;
		}
		for (i = 0; i < r; i++) {
			if (buf[i] <= rd->prev)
				rd->not_increasing = true;
			rd->prev = buf[i];
		}
		rd->max_id = rd->prev;
		rd->last_ok_t0 = t0;
		rd->nreads++;
		rd->total += r;
		if (keep)
			rd->nids += r;
		if (rd->recs)
			rd->recs[rd->nrecs++] = (struct read_rec){
				.t0 = t0, .t1 = t1,
				.first = buf[0], .last = buf[r - 1],
			};
		if (!rd->spin)
			sched_yield();
	}
	return NULL;
}

static void start_readers(struct __test_metadata *_metadata, struct reader *rds,
			  int fd, atomic_bool *stop)
{
	int i;

	for (i = 0; i < NREADERS; i++) {
		rds[i].fd = fd;
		rds[i].stop = stop;
		ASSERT_EQ(0, pthread_create(&rds[i].thread, NULL, reader_main, &rds[i]));
	}
}

static void join_readers(struct __test_metadata *_metadata, struct reader *rds)
{
	int i;

	for (i = 0; i < NREADERS; i++)
		ASSERT_EQ(0, pthread_join(rds[i].thread, NULL));
}

static int cmp_t0(const void *a, const void *b)
{
	const struct read_rec *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int cmp_t1(const void *a, const void *b)
{
	const struct read_rec *x = a, *y = b;

	return x->t1 < y->t1 ? -1 : x->t1 > y->t1;
}

/*
 * G2 across readers: when read A returned before read B was called, every
 * ID of A is below every ID of B.  Sweep the reads in order of start,
 * keeping the highest ID of all reads that ended before it.  Returns the
 * number of reads that break it; sorts recs.
 */
static size_t linear_order_violations(struct read_rec *recs, size_t n,
				      struct read_rec *bad)
{
	struct read_rec *by_end = malloc(n * sizeof(*recs) + 1);
	size_t i, j = 0, violations = 0;
	__u64 max_last = 0;

	if (!by_end)
		return (size_t)-1;
	memcpy(by_end, recs, n * sizeof(*recs));
	qsort(recs, n, sizeof(*recs), cmp_t0);
	qsort(by_end, n, sizeof(*recs), cmp_t1);
	for (i = 0; i < n; i++) {
		while (j < n && by_end[j].t1 < recs[i].t0) {
			if (by_end[j].last > max_last)
				max_last = by_end[j].last;
			j++;
		}
		if (j && max_last >= recs[i].first) {
			if (!violations++)
				*bad = recs[i];
		}
	}
	free(by_end);
	return violations;
}

static unsigned int stress_secs(void)
{
	const char *s = getenv("IDGEN_STRESS_SECS");
	unsigned long v;
	char *end;

	if (!s || !*s)
		return 5;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < 1 || v > 600 || *s == '-') {
		fprintf(stderr, "# IDGEN_STRESS_SECS=%s: want 1..600, using 5\n", s);
		return 5;
	}
	return v;
}

#define STRESS_IDS_PER_READER	(1UL << 20)
#define STRESS_RECS_PER_READER	(1UL << 18)

TEST_F_TIMEOUT(leased, stress_concurrent_readers, 900)
{
	static const unsigned int sizes[] = { 1, 3, 64, 500, 4096 };
	struct reader *rds = calloc(NREADERS, sizeof(*rds));
	unsigned int secs = stress_secs();
	struct read_rec *recs, bad;
	size_t nrecs = 0, nids = 0, dups, v;
	atomic_bool stop = false;
	__u64 *ids, deadline;
	int i;

	ASSERT_NE(NULL, rds);
	ids = malloc(NREADERS * STRESS_IDS_PER_READER * sizeof(*ids));
	recs = malloc(NREADERS * STRESS_RECS_PER_READER * sizeof(*recs));
	ASSERT_NE(NULL, ids);
	ASSERT_NE(NULL, recs);

	/* A lease that outlives the run. */
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, self->worker,
				     self->st.floor_ms,
				     self->st.now_ms + LEASE_MS + secs * 1000ULL));
	deadline = clock_ns(CLOCK_MONOTONIC) + secs * NSEC_PER_SEC;
	for (i = 0; i < NREADERS; i++) {
		rds[i].sizes = sizes;
		rds[i].nsizes = sizeof(sizes) / sizeof(sizes[0]);
		rds[i].deadline = deadline;
		rds[i].spin = true;
		rds[i].ids = ids + i * STRESS_IDS_PER_READER;
		rds[i].ids_cap = STRESS_IDS_PER_READER;
		rds[i].recs = recs + i * STRESS_RECS_PER_READER;
		rds[i].recs_cap = STRESS_RECS_PER_READER;
	}
	start_readers(_metadata, rds, self->fd, &stop);
	join_readers(_metadata, rds);

	for (i = 0; i < NREADERS; i++) {
		EXPECT_EQ(0, rds[i].err) TH_LOG("reader %d: %s", i, strerror(rds[i].err));
		EXPECT_FALSE(rds[i].zero_read) TH_LOG("reader %d: read returned 0", i);
		EXPECT_FALSE(rds[i].not_increasing) TH_LOG("reader %d: IDs went back", i);
		EXPECT_LT(0, rds[i].nreads);
		/* Blocking readers beyond the ceiling are throttled, not refused. */
		EXPECT_EQ(0, rds[i].lead_refusals)
			TH_LOG("reader %d: %zu ETIME at the lead bound", i, rds[i].lead_refusals);
		TH_LOG("reader %d: %llu reads, %llu IDs, %zu kept", i,
		       rds[i].nreads, rds[i].total, rds[i].nids);
		/* Gather into one array: the kept IDs and all reads. */
		memmove(ids + nids, rds[i].ids, rds[i].nids * sizeof(*ids));
		nids += rds[i].nids;
		memmove(recs + nrecs, rds[i].recs, rds[i].nrecs * sizeof(*recs));
		nrecs += rds[i].nrecs;
	}

	dups = sort_count_dups(ids, nids);
	EXPECT_EQ(0, dups) TH_LOG("%zu duplicate IDs among %zu", dups, nids);
	v = linear_order_violations(recs, nrecs, &bad);
	EXPECT_EQ(0, v) TH_LOG("%zu reads below an earlier read, e.g. [%llu..%llu] at %llu ns",
			       v, bad.first, bad.last, bad.t0);
	free(ids);
	free(recs);
	free(rds);
}

/* F3: revoke under concurrent readers bounds every ID by L. */
TEST_F_TIMEOUT(leased, revoke_during_reads, 60)
{
	static const unsigned int sizes[] = { 1, 3, 64, 500, 4096 };
	struct reader *rds = calloc(NREADERS, sizeof(*rds));
	atomic_bool stop = false;
	__u64 l, t_revoked, max_id = 0;
	int i;

	ASSERT_NE(NULL, rds);
	for (i = 0; i < NREADERS; i++) {
		rds[i].sizes = sizes;
		rds[i].nsizes = sizeof(sizes) / sizeof(sizes[0]);
		rds[i].stop_errno = ENOKEY;
		rds[i].spin = true;
	}
	start_readers(_metadata, rds, self->fd, &stop);
	sleep_ms(300);
	ASSERT_EQ(0, idgen_revoke(self->fd, &l));
	t_revoked = clock_ns(CLOCK_MONOTONIC);
	/* Readers end on ENOKEY; make sure they end anyway. */
	sleep_ms(2000);
	atomic_store(&stop, true);
	join_readers(_metadata, rds);

	for (i = 0; i < NREADERS; i++) {
		EXPECT_EQ(0, rds[i].err) TH_LOG("reader %d: %s", i, strerror(rds[i].err));
		EXPECT_EQ(ENOKEY, rds[i].end_errno) TH_LOG("reader %d did not see ENOKEY", i);
		EXPECT_FALSE(rds[i].not_increasing);
		EXPECT_LT(0, rds[i].nreads);
		EXPECT_GT(t_revoked, rds[i].last_ok_t0)
			TH_LOG("reader %d minted in a read begun after the revoke", i);
		if (rds[i].max_id > max_id)
			max_id = rds[i].max_id;
	}
	EXPECT_LE(id_ms(max_id), l) TH_LOG("ID %llu (ms %llu) above L %llu",
					   max_id, id_ms(max_id), l);
	EXPECT_LE(self->st.floor_ms, l);
	free(rds);
}

/* F3, G2: a node switch under readers: old node's IDs all below the new's. */
TEST_F_TIMEOUT(leased, node_switch_during_reads, 60)
{
	static const unsigned int sizes[] = { 1, 3, 64, 500 };
	const size_t cap = 1UL << 21;
	struct reader *rds = calloc(NREADERS, sizeof(*rds));
	__u32 worker2 = self->worker ^ 1;
	__u64 *ids, max_old = 0, min_new = ~0ULL;
	size_t nids = 0, n_old = 0, n_new = 0, other = 0, dups, j;
	atomic_bool stop = false;
	struct idgen_state st;
	int i;

	ASSERT_NE(NULL, rds);
	ids = malloc(NREADERS * cap * sizeof(*ids));
	ASSERT_NE(NULL, ids);
	for (i = 0; i < NREADERS; i++) {
		rds[i].sizes = sizes;
		rds[i].nsizes = sizeof(sizes) / sizeof(sizes[0]);
		rds[i].ids = ids + i * cap;
		rds[i].ids_cap = cap;
		rds[i].spin = true;
	}
	start_readers(_metadata, rds, self->fd, &stop);
	sleep_ms(200);
	/*
	 * The floor is the old lease's, far below the ms in use: the module
	 * itself must start the new node above everything the old one minted.
	 */
	ASSERT_EQ(0, idgen_get_state(self->fd, &st));
	ASSERT_EQ(0, idgen_set_lease(self->fd, self->region, worker2, self->st.floor_ms,
				     st.now_ms + LEASE_MS));
	sleep_ms(200);
	atomic_store(&stop, true);
	join_readers(_metadata, rds);

	for (i = 0; i < NREADERS; i++) {
		EXPECT_EQ(0, rds[i].err) TH_LOG("reader %d: %s", i, strerror(rds[i].err));
		EXPECT_FALSE(rds[i].not_increasing) TH_LOG("reader %d: IDs went back", i);
		for (j = 0; j < rds[i].nids; j++) {
			__u64 id = rds[i].ids[j];
			__u32 w = id_worker(id, &self->st);

			if (id_region(id, &self->st) != self->region) {
				other++;
			} else if (w == self->worker) {
				n_old++;
				if (id > max_old)
					max_old = id;
			} else if (w == worker2) {
				n_new++;
				if (id < min_new)
					min_new = id;
			} else {
				other++;
			}
		}
		memmove(ids + nids, rds[i].ids, rds[i].nids * sizeof(*ids));
		nids += rds[i].nids;
	}
	TH_LOG("%zu IDs of the old node, %zu of the new", n_old, n_new);
	EXPECT_EQ(0, other) TH_LOG("%zu IDs of neither node", other);
	ASSERT_LT(0, n_old);
	ASSERT_LT(0, n_new) TH_LOG("no reads after the switch (storage full?)");
	EXPECT_LT(max_old, min_new) TH_LOG("old %llu (ms %llu) >= new %llu (ms %llu)",
					   max_old, id_ms(max_old), min_new, id_ms(min_new));
	EXPECT_LT(id_ms(max_old), id_ms(min_new));
	dups = sort_count_dups(ids, nids);
	EXPECT_EQ(0, dups);
	free(ids);
	free(rds);
}

TEST_HARNESS_MAIN

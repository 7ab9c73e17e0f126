/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the idgen selftests: device access, ID decoding, clocks
 * and checks over arrays of IDs.  Everything here returns plain values or
 * -1/errno; the tests do the asserting, but for the two macros a test's
 * setup starts with (REQUIRE_GUEST_ROOT, OPEN_OR_SKIP), which SKIP or
 * ASSERT on kselftest_harness.h.
 */
#ifndef IDGEN_UTIL_H
#define IDGEN_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/idgen.h>

#define IDGEN_DEV	"/dev/" IDGEN_DEVICE_NAME
#define JUNK		0xa5
#define JUNK64		0xa5a5a5a5a5a5a5a5ULL

/* The ABI is fixed: catch a header edit that moves a field. */
_Static_assert(sizeof(struct idgen_lease_args) == 32, "idgen_lease_args size");
_Static_assert(sizeof(struct idgen_state) == 160, "idgen_state size");

/*
 * A test that sets leases, steps the clock or changes the generator would
 * take over a real host's (and stop its idgend's IDs): it runs only where
 * IDGEN_GUEST=1 says this is a throw-away machine, as tests/vm/run-guest.sh
 * does, and as root.  what: what it changes, for the SKIP's reason.
 */
#define REQUIRE_GUEST_ROOT(what) do {						\
	const char *guest = getenv("IDGEN_GUEST");				\
										\
	if (!guest || strcmp(guest, "1"))					\
		SKIP(return, what ": runs only with IDGEN_GUEST=1");		\
	if (geteuid())								\
		SKIP(return, "needs root");					\
} while (0)

#define IDGEN_ABSENT	IDGEN_DEV " is absent (idgen.ko not loaded?)"

/*
 * Open the device, or SKIP the test when it does not exist.  The other
 * failures are test failures.
 */
#define OPEN_OR_SKIP(fd, flags) do {						\
	(fd) = open(IDGEN_DEV, O_RDONLY | O_CLOEXEC | (flags));			\
	if ((fd) < 0 && errno == ENOENT)					\
		SKIP(return, IDGEN_ABSENT);					\
	ASSERT_LE(0, (fd)) TH_LOG("open %s: %s", IDGEN_DEV, strerror(errno));	\
} while (0)

/* A field of bits bits, all ones. */
static inline __u32 field_mask(unsigned int bits)
{
	return bits >= 32 ? ~0U : (1U << bits) - 1;
}

#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

static inline __u64 clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (__u64)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* CLOCK_REALTIME in milliseconds since IDGEN_EPOCH_UNIX_MS (may be < 0). */
static inline int64_t wall_idgen_ms(void)
{
	return (int64_t)(clock_ns(CLOCK_REALTIME) / NSEC_PER_MSEC) -
	       (int64_t)IDGEN_EPOCH_UNIX_MS;
}

static inline void sleep_ms(unsigned int ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * NSEC_PER_MSEC,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Shift the wall clock by delta_ms (destructive: guest only). */
static inline int step_wall_clock(int64_t delta_ms)
{
	struct timespec ts;
	int64_t ns;

	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (int64_t)ts.tv_sec * (int64_t)NSEC_PER_SEC + ts.tv_nsec +
	     delta_ms * (int64_t)NSEC_PER_MSEC;
	ts.tv_sec = ns / (int64_t)NSEC_PER_SEC;
	ts.tv_nsec = ns % (int64_t)NSEC_PER_SEC;
	return clock_settime(CLOCK_REALTIME, &ts);
}

/* ------------------------------------------------------------------ */
/* Device                                                              */

/* GET_STATE into a junk-filled struct, so unwritten fields show. */
static inline int idgen_get_state(int fd, struct idgen_state *st)
{
	memset(st, JUNK, sizeof(*st));
	return ioctl(fd, IDGEN_IOC_GET_STATE, st);
}

static inline void idgen_lease_init(struct idgen_lease_args *a, __u32 region,
				    __u32 worker, __u64 floor_ms,
				    __u64 valid_until_ms)
{
	memset(a, 0, sizeof(*a));
	a->region = region;
	a->worker = worker;
	a->floor_ms = floor_ms;
	a->valid_until_ms = valid_until_ms;
}

static inline int idgen_set_lease(int fd, __u32 region, __u32 worker,
				  __u64 floor_ms, __u64 valid_until_ms)
{
	struct idgen_lease_args a;

	idgen_lease_init(&a, region, worker, floor_ms, valid_until_ms);
	return ioctl(fd, IDGEN_IOC_SET_LEASE, &a);
}

static inline int idgen_revoke(int fd, __u64 *last_ms)
{
	*last_ms = JUNK64;
	return ioctl(fd, IDGEN_IOC_REVOKE, last_ms);
}

/*
 * Wait until the generator is not ahead of the trusted clock any more (an
 * earlier test may have left a floor or borrowed milliseconds ahead), so a
 * new lease mints at once and its IDs carry the current millisecond.
 */
static inline int idgen_wait_caught_up(int fd, unsigned int timeout_ms)
{
	struct idgen_state st;
	unsigned int waited = 0;

	for (;;) {
		if (idgen_get_state(fd, &st))
			return -1;
		if (st.last_ms < st.now_ms)
			return 0;
		if (waited >= timeout_ms) {
			errno = ETIMEDOUT;
			return -1;
		}
		sleep_ms(5);
		waited += 5;
	}
}

/* read() of n IDs: the number of IDs read, or -1 with errno. */
static inline ssize_t idgen_read(int fd, __u64 *ids, size_t n)
{
	ssize_t r = read(fd, ids, n * sizeof(*ids));

	return r < 0 ? r : r / (ssize_t)sizeof(*ids);
}

/* poll() for reading; revents holds only the bits asked for (and errors). */
static inline short poll_revents(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDNORM };
	int r = poll(&p, 1, timeout_ms);

	return r <= 0 ? (r < 0 ? -1 : 0) : p.revents;
}

/* ------------------------------------------------------------------ */
/* Decoding, with the layout reported by GET_STATE                     */

static inline __u64 id_ms(__u64 id)
{
	return id >> IDGEN_NODE_SEQ_BITS;
}

static inline __u32 id_region(__u64 id, const struct idgen_state *st)
{
	return (id >> (st->worker_bits + st->seq_bits)) &
	       ((1U << st->region_bits) - 1);
}

static inline __u32 id_worker(__u64 id, const struct idgen_state *st)
{
	return (id >> st->seq_bits) & ((1U << st->worker_bits) - 1);
}

static inline __u32 id_seq(__u64 id, const struct idgen_state *st)
{
	return id & ((1U << st->seq_bits) - 1);
}

/* ------------------------------------------------------------------ */
/* Checks over arrays of IDs                                           */

/* Index of the first ID not above its predecessor, or n. */
static inline size_t first_not_increasing(const __u64 *ids, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (ids[i] <= ids[i - 1])
			return i;
	return n;
}

static inline int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* Sorts ids in place and counts IDs equal to their predecessor. */
static inline size_t sort_count_dups(__u64 *ids, size_t n)
{
	size_t i, dups = 0;

	qsort(ids, n, sizeof(*ids), cmp_u64);
	for (i = 1; i < n; i++)
		dups += ids[i] == ids[i - 1];
	return dups;
}

/* Same, on a copy, leaving ids as they were. */
static inline ssize_t count_dups(const __u64 *ids, size_t n)
{
	__u64 *copy = malloc(n * sizeof(*ids) + 1);
	size_t dups;

	if (!copy)
		return -1;
	memcpy(copy, ids, n * sizeof(*ids));
	dups = sort_count_dups(copy, n);
	free(copy);
	return dups;
}

#endif /* IDGEN_UTIL_H */

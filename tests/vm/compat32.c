// SPDX-License-Identifier: GPL-2.0
/*
 * compat32: /dev/idgen from a 32-bit (i386) process on a 64-bit kernel,
 * as root inside a test guest with the module loaded and no lease set.
 *
 * Built static with gcc -m32 (tests/vm/Makefile), so the guest needs no
 * i386 libraries.  Every ioctl goes through the module's compat_ioctl
 * (compat_ptr_ioctl): the structures must come out the same as for a
 * 64-bit caller, field by field.  Prints TAP.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/idgen.h>

_Static_assert(sizeof(long) == 4, "compat32 must be built for i386 (-m32)");

static int failures;
static int tests;

static void result(int ok, const char *fmt, ...)
{
	va_list ap;

	tests++;
	if (!ok)
		failures++;
	printf("%sok %d - ", ok ? "" : "not ", tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static int get_state(int fd, struct idgen_state *st)
{
	memset(st, 0xa5, sizeof(*st));
	return ioctl(fd, IDGEN_IOC_GET_STATE, st);
}

int main(void)
{
	const uint32_t region = 3, worker = 77;
	struct idgen_lease_args args;
	struct idgen_state st, st2;
	uint64_t ids[16], last = 0, revoked;
	unsigned int node_seq, seq_bits, i;
	int fd, ok;
	ssize_t n;

	printf("TAP version 13\n1..9\n");
	fd = open("/dev/idgen", O_RDONLY);
	if (fd < 0) {
		printf("Bail out! open /dev/idgen: %s\n", strerror(errno));
		return 1;
	}

	ok = get_state(fd, &st) == 0 && !(st.flags & IDGEN_STATE_LEASED) &&
	     st.region_bits + st.worker_bits + st.seq_bits == IDGEN_NODE_SEQ_BITS &&
	     st.pad == 0 && st.now_ms > 0 && st.max_lead_ms > 0;
	result(ok, "GET_STATE without a lease: layout %u/%u/%u, now_ms %" PRIu64,
	       st.region_bits, st.worker_bits, st.seq_bits, st.now_ms);

	memset(&args, 0, sizeof(args));
	args.floor_ms = st.now_ms - 1;
	args.valid_until_ms = st.now_ms + 600000;
	args.region = region;
	args.worker = worker;
	ok = ioctl(fd, IDGEN_IOC_SET_LEASE, &args) == 0;
	result(ok, "SET_LEASE region %u worker %u (%s)", region, worker,
	       ok ? "done" : strerror(errno));

	ok = get_state(fd, &st2) == 0 && (st2.flags & IDGEN_STATE_LEASED) &&
	     st2.region == region && st2.worker == worker &&
	     st2.floor_ms == args.floor_ms &&
	     st2.valid_until_ms == args.valid_until_ms &&
	     st2.max_lead_ms == st.max_lead_ms && st2.max_step_ms == st.max_step_ms;
	result(ok, "GET_STATE reports the lease: region %u worker %u, fence %" PRIu64,
	       st2.region, st2.worker, st2.valid_until_ms);

	n = read(fd, ids, sizeof(ids));
	ok = n == (ssize_t)sizeof(ids);
	seq_bits = st2.seq_bits;
	node_seq = st2.region_bits + st2.worker_bits + st2.seq_bits;
	for (i = 0; ok && i < 16; i++) {
		uint64_t node = (ids[i] >> seq_bits) &
				((1ULL << (node_seq - seq_bits)) - 1);
		uint64_t ms = ids[i] >> node_seq;

		ok = ids[i] > last &&
		     node == ((uint64_t)region << st2.worker_bits | worker) &&
		     ms > args.floor_ms && ms < args.valid_until_ms;
		last = ids[i];
	}
	result(ok, "read 16 IDs: increasing, of region %u worker %u, inside the lease",
	       region, worker);

	ok = get_state(fd, &st) == 0 && st.ids >= st2.ids + 16 &&
	     st.reads >= st2.reads + 1 && st.last_ms >= (last >> node_seq);
	result(ok, "GET_STATE counts them: ids %" PRIu64 ", last_ms %" PRIu64,
	       st.ids, st.last_ms);

	ok = ioctl(fd, IDGEN_IOC_ADOPT_CLOCK) == 0;
	result(ok, "ADOPT_CLOCK with no held step (%s)", ok ? "done" : strerror(errno));

	revoked = 0;
	ok = ioctl(fd, IDGEN_IOC_REVOKE, &revoked) == 0 &&
	     revoked >= (last >> node_seq) && revoked < args.valid_until_ms;
	result(ok, "REVOKE returns L %" PRIu64 ", at or above the last ID's ms %" PRIu64,
	       revoked, last >> node_seq);

	errno = 0;
	ok = read(fd, ids, 8) < 0 && errno == ENOKEY &&
	     get_state(fd, &st) == 0 && !(st.flags & IDGEN_STATE_LEASED);
	result(ok, "after REVOKE: read fails with ENOKEY, no lease in GET_STATE");

	errno = 0;
	ok = ioctl(fd, _IO(IDGEN_IOC_MAGIC, 0x7f)) < 0 && errno == ENOTTY;
	result(ok, "an unknown ioctl fails with ENOTTY");

	close(fd);
	printf("# %d of %d failed\n", failures, tests);
	return failures != 0;
}

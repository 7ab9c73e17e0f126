// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The device: open, mint, its state and layout, the lease's ioctls, what
 * its errnos mean.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/idgen.h>

#include "internal.h"

_Static_assert(LIBIDGEN_EPOCH_UNIX_MS == IDGEN_EPOCH_UNIX_MS, "epoch");
_Static_assert(LIBIDGEN_MS_MAX == IDGEN_MS_MAX, "time bits");
_Static_assert(LIBIDGEN_NODE_SEQ_BITS == IDGEN_NODE_SEQ_BITS, "node+seq bits");
_Static_assert(LIBIDGEN_REGION_BITS_MAX == IDGEN_REGION_BITS_MAX, "region max");
_Static_assert(LIBIDGEN_SEQ_BITS_MIN == IDGEN_SEQ_BITS_MIN, "seq min");

/* One read() is capped well below what read() can return (SSIZE_MAX). */
#define MINT_MAX	(1U << 24)

/* Where the kernel says which number the module's misc device has. */
#define SYSFS_MISC		"/sys/class/misc"
#define SYSFS_IDGEN_DEV		SYSFS_MISC "/idgen/dev"

/*
 * Whether a file, by its status, can be idgen's device: a character
 * device, and, when sysfs says which number the module's misc device has,
 * that one (sysfs mounted with no idgen there: the module is not loaded,
 * and no device is idgen's).  Looked at before the open, so that neither
 * a FIFO nor another driver's device (a watchdog arms when opened) is
 * opened at all, and again on the descriptor, which is what gets read.
 * 1: the number is idgen's; 0: sysfs cannot say; -ENOTTY: not idgen's.
 */
static int node_check(const struct stat *st)
{
	unsigned int major_nr, minor_nr;
	char text[32];
	ssize_t len;
	int fd;

	if (!S_ISCHR(st->st_mode))
		return -ENOTTY;
	fd = open(SYSFS_IDGEN_DEV, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT && !access(SYSFS_MISC, F_OK) ? -ENOTTY : 0;
	len = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	text[len] = '\0';
	if (sscanf(text, "%u:%u", &major_nr, &minor_nr) != 2)
		return 0;
	return st->st_rdev == makedev(major_nr, minor_nr) ? 1 : -ENOTTY;
}

IDGEN_EXPORT int idgen_device_state_valid(const struct idgen_device_state *st)
{
	if (!idgen_widths_valid(st->region_bits, st->worker_bits, st->seq_bits))
		return 0;
	/* The module sets the flag exactly when a step is held. */
	if (!(st->flags & LIBIDGEN_STATE_CLOCK_HELD) != !st->held_step_ms)
		return 0;
	if (!(st->flags & LIBIDGEN_STATE_LEASED))
		return !st->region && !st->worker && !st->floor_ms && !st->valid_until_ms;
	/* What IDGEN_IOC_SET_LEASE lets in (uapi), widths at most 16 bits. */
	return !(st->region >> st->region_bits) && !(st->worker >> st->worker_bits) &&
	       st->floor_ms < st->valid_until_ms &&
	       st->valid_until_ms <= LIBIDGEN_MS_MAX + 1;
}

IDGEN_EXPORT int idgen_device_verify(int fd, struct idgen_device_state *out)
{
	struct idgen_device_state st;
	struct stat sb;
	int known, ret;

	if (fstat(fd, &sb))
		return -errno;
	known = node_check(&sb);
	if (known < 0)
		return known;
	/*
	 * Only then the request: another driver answers one it does not
	 * know with ENOTTY (or EINVAL, or whatever it likes), and only a
	 * device sysfs vouches for is idgen's whatever its error.
	 */
	ret = idgen_device_get_state(fd, &st);
	if (ret)
		return known ? ret : -ENOTTY;
	if (!idgen_device_state_valid(&st))
		return -EIO;
	if (out)
		*out = st;
	return 0;
}

IDGEN_EXPORT int idgen_open(const char *path, unsigned int flags)
{
	struct stat sb;
	int fd, fl, ret;

	if (flags & ~(LIBIDGEN_NONBLOCK | LIBIDGEN_VERIFY))
		return -EINVAL;
	if (!path)
		path = LIBIDGEN_DEVICE;
	if (!(flags & LIBIDGEN_VERIFY)) {
		fd = open(path, O_RDONLY | O_CLOEXEC |
			  (flags & LIBIDGEN_NONBLOCK ? O_NONBLOCK : 0));
		return fd < 0 ? -errno : fd;
	}
	/* What path names first: a missing one is open()'s to report. */
	if (!stat(path, &sb)) {
		ret = node_check(&sb);
		if (ret < 0)
			return ret;
	}
	/*
	 * Non-blocking, and never a controlling terminal: had path changed
	 * since into a FIFO, the open would otherwise wait for a writer.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	ret = idgen_device_verify(fd, NULL);
	if (!ret && !(flags & LIBIDGEN_NONBLOCK)) {
		fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
			ret = -errno;
	}
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

IDGEN_EXPORT int idgen_close(int fd)
{
	return close(fd) ? -errno : 0;
}

IDGEN_EXPORT ssize_t idgen_mint(int fd, uint64_t *ids, size_t n)
{
	ssize_t r;

	if (!n || n > MINT_MAX)
		return -EINVAL;
	do {
		r = read(fd, ids, n * sizeof(*ids));
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0 || r % sizeof(*ids))
		return -EIO;	/* not an idgen device */
	return r / sizeof(*ids);
}

IDGEN_EXPORT int idgen_mint_one(int fd, uint64_t *id)
{
	ssize_t r = idgen_mint(fd, id, 1);

	return r < 0 ? (int)r : 0;
}

_Static_assert(LIBIDGEN_STATE_LEASED == IDGEN_STATE_LEASED, "state flags");
_Static_assert(LIBIDGEN_STATE_CLOCK_HELD == IDGEN_STATE_CLOCK_HELD, "state flags");
_Static_assert(LIBIDGEN_LEASE_CLOCK_SYNCED == IDGEN_LEASE_CLOCK_SYNCED, "lease flags");

IDGEN_EXPORT int idgen_device_get_state(int fd, struct idgen_device_state *out)
{
	struct idgen_state st;

	memset(&st, 0, sizeof(st));
	if (ioctl(fd, IDGEN_IOC_GET_STATE, &st))
		return -errno;
	memset(out, 0, sizeof(*out));
	out->now_ms = st.now_ms;
	out->wall_ms = st.wall_ms;
	out->last_ms = st.last_ms;
	out->next_ms = st.next_ms;
	out->floor_ms = st.floor_ms;
	out->valid_until_ms = st.valid_until_ms;
	out->held_step_ms = st.held_step_ms;
	out->flags = st.flags;
	out->region = st.region;
	out->worker = st.worker;
	out->max_lead_ms = st.max_lead_ms;
	out->max_step_ms = st.max_step_ms;
	out->region_bits = st.region_bits;
	out->worker_bits = st.worker_bits;
	out->seq_bits = st.seq_bits;
	out->ids = st.ids;
	out->reads = st.reads;
	out->borrowed_ms = st.borrowed_ms;
	out->steps_back = st.steps_back;
	out->steps_forward = st.steps_forward;
	out->steps_adopted = st.steps_adopted;
	out->fence_refusals = st.fence_refusals;
	out->lead_refusals = st.lead_refusals;
	out->nolease_refusals = st.nolease_refusals;
	out->range_refusals = st.range_refusals;
	return 0;
}

IDGEN_EXPORT int idgen_device_layout(int fd, struct idgen_layout *out)
{
	struct idgen_device_state st;
	int ret;

	ret = idgen_device_get_state(fd, &st);
	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->region_bits = st.region_bits;
	out->worker_bits = st.worker_bits;
	out->seq_bits = st.seq_bits;
	return 0;
}

IDGEN_EXPORT int idgen_device_set_lease(int fd, uint32_t region, uint32_t worker,
					uint64_t floor_ms, uint64_t valid_until_ms,
					const struct idgen_layout *layout,
					unsigned int flags)
{
	struct idgen_lease_args args;

	memset(&args, 0, sizeof(args));
	args.floor_ms = floor_ms;
	args.valid_until_ms = valid_until_ms;
	args.region = region;
	args.worker = worker;
	args.flags = flags;
	if (layout) {
		args.region_bits = layout->region_bits;
		args.worker_bits = layout->worker_bits;
		args.seq_bits = layout->seq_bits;
	}
	return ioctl(fd, IDGEN_IOC_SET_LEASE, &args) ? -errno : 0;
}

IDGEN_EXPORT int idgen_device_revoke(int fd, uint64_t *last_ms)
{
	__u64 last = 0;
	int ret;

	ret = ioctl(fd, IDGEN_IOC_REVOKE, &last) ? -errno : 0;
	*last_ms = last;
	return ret;
}

IDGEN_EXPORT const char *idgen_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case ENOKEY:
		return "no lease is in force (ENOKEY): set one with 'idgenctl lease set' or start idgend";
	case EKEYEXPIRED:
		return "the lease's fence is reached (EKEYEXPIRED): renew the lease";
	case ETIME:
		return "the clock is behind the generator by more than max_lead_ms (ETIME): "
		       "retry once the wall clock has caught up";
	case EAGAIN:
		return "the generator would have to wait for the clock (EAGAIN): retry";
	case EOVERFLOW:
		return "the time range is exhausted (EOVERFLOW): no millisecond after "
		       "2095-09-07T15:47:35.551Z fits in an ID";
	case EPERM:
		return "changing the generator's state needs CAP_SYS_ADMIN (EPERM)";
	case ENOENT:
	case ENODEV:
	case ENXIO:
		return "no idgen device: is idgen.ko loaded?";
	case ENOTTY:
		return "not an idgen device, or a module that does not know this request";
	case EKEYREJECTED:
		return "a public ID of a key version the keyring does not hold (EKEYREJECTED)";
	case EBADMSG:
		return "a booking code whose check symbol does not match (EBADMSG): mistyped";
	default:
		return NULL;
	}
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The device: open, mint, the layout in force, what its errnos mean.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
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

IDGEN_EXPORT int idgen_open(const char *path, unsigned int flags)
{
	int fd;

	if (flags & ~LIBIDGEN_NONBLOCK)
		return -EINVAL;
	fd = open(path ? path : LIBIDGEN_DEVICE, O_RDONLY | O_CLOEXEC |
		  (flags & LIBIDGEN_NONBLOCK ? O_NONBLOCK : 0));
	return fd < 0 ? -errno : fd;
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

IDGEN_EXPORT int idgen_device_layout(int fd, struct idgen_layout *out)
{
	struct idgen_state st;

	memset(&st, 0, sizeof(st));
	if (ioctl(fd, IDGEN_IOC_GET_STATE, &st))
		return -errno;
	memset(out, 0, sizeof(*out));
	out->region_bits = st.region_bits;
	out->worker_bits = st.worker_bits;
	out->seq_bits = st.seq_bits;
	return 0;
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

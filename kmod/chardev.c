// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/idgen: read() mints, ioctl() administers.
 *
 * The read path follows drivers/char/random.c: the request is served in
 * bounded batches, each reserved with one atomic operation and written
 * out, with a signal check and cond_resched() between batches so a huge
 * read neither hogs the CPU nor ignores signals.  A plain read(2) buffer
 * is written in place; other iterators get IDs built on the stack and
 * copied.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <uapi/linux/idgen.h>
#include <uapi/linux/nsfs.h>

#include "chardev.h"
#include "generator.h"
#include "stats.h"

/*
 * The type byte once collided with nsfs's: an ioctl meant for a namespace
 * file must never change a generator's clock, nor the other way round.
 */
static_assert(_IOC_TYPE(IDGEN_IOC_ADOPT_CLOCK) != NSIO);
#ifdef NS_GET_OWNER_UID
static_assert(IDGEN_IOC_ADOPT_CLOCK != NS_GET_OWNER_UID);
#endif

/* IDs reserved with one atomic: a page's worth, as random.c copies. */
#define IDGEN_BATCH_IDS		(PAGE_SIZE / sizeof(u64))
/* IDs composed on the stack per copy_to_iter(). */
#define IDGEN_CHUNK_IDS		64

/*
 * The device and its generator.  misc_open() points file->private_data at
 * @misc; idgen_open() replaces it with the file's own struct idgen_file.
 */
struct idgen_chardev {
	struct miscdevice misc;
	struct idgen_gen *gen;
};

/*
 * One open file: its generator and its share of each millisecond
 * (fair.h), so one greedy reader cannot take every ID there is.
 */
struct idgen_file {
	struct idgen_gen *gen;
	struct idgen_share share;
};

static struct idgen_gen *idgen_file_gen(struct file *file)
{
	return ((struct idgen_file *)file->private_data)->gen;
}

static struct idgen_share *idgen_file_share(struct file *file)
{
	return &((struct idgen_file *)file->private_data)->share;
}

/*
 * Write @n IDs from @tick on.  Within a millisecond consecutive ticks are
 * consecutive IDs, so each millisecond's run is composed once and counted.
 */
static void idgen_fill(u64 *buf, u32 n, u64 tick, u8 seq_bits, u64 node_bits)
{
	u64 seq_mask = (1ULL << seq_bits) - 1;
	u32 i = 0, k, run;
	u64 id;

	while (i < n) {
		id = idgen_tick_id(tick, seq_bits, node_bits);
		run = min_t(u64, n - i, seq_mask + 1 - (tick & seq_mask));
		for (k = 0; k < run; k++)
			buf[i + k] = id + k;
		i += run;
		tick += run;
	}
}

/* Copy the run out; returns the bytes of whole IDs copied. */
static size_t idgen_copy_ids(const struct idgen_range *r, struct iov_iter *to)
{
	u64 buf[IDGEN_CHUNK_IDS];
	size_t copied = 0;
	u32 off, n;

	for (off = 0; off < r->count; off += n) {
		size_t len, c;

		n = min_t(u32, r->count - off, IDGEN_CHUNK_IDS);
		idgen_fill(buf, n, r->first + off, r->seq_bits, r->node_bits);
		len = n * sizeof(u64);
		c = copy_to_iter(buf, len, to);
		copied += c;
		if (c != len)
			return round_down(copied, sizeof(u64));
	}
	return copied;
}

/*
 * Write the run straight into the reader's buffer when it is one piece of
 * user memory (read(2) gives an ITER_UBUF): one pass, with no stack
 * buffer and no second copy, which for a batch costs more than composing
 * the IDs.  Eight IDs a round, each store with a fault label of its own,
 * so that a fault still returns exactly the bytes of the IDs written
 * before it, as copy_to_iter() would: the label adds the stores of the
 * round that went through.  Returns false, having written nothing, when
 * the range is not all user memory (its end past the top of the user
 * address space): the copy's own checks, chunk by chunk, then decide how
 * much of it is written, as for every other iterator.
 */
static bool idgen_write_user(const struct idgen_range *r, u64 __user *p,
			     size_t *written)
{
	u64 tick = r->first, node_bits = r->node_bits, id;
	u64 seq_mask = (1ULL << r->seq_bits) - 1;
	u32 count = r->count, i, k = 0, run;
	u8 seq_bits = r->seq_bits;
	u64 __user *q = p, *end;

	might_fault();
	if (!user_access_begin(p, count * sizeof(u64)))
		return false;
	/* Within a millisecond consecutive ticks are consecutive IDs. */
	for (i = 0; i < count; i += run, tick += run) {
		id = idgen_tick_id(tick, seq_bits, node_bits);
		run = min_t(u64, count - i, seq_mask + 1 - (tick & seq_mask));
		for (end = q + (run & ~7U); q != end; q += 8, id += 8) {
			unsafe_put_user(id, q, fault);
			unsafe_put_user(id + 1, q + 1, fault_1);
			unsafe_put_user(id + 2, q + 2, fault_2);
			unsafe_put_user(id + 3, q + 3, fault_3);
			unsafe_put_user(id + 4, q + 4, fault_4);
			unsafe_put_user(id + 5, q + 5, fault_5);
			unsafe_put_user(id + 6, q + 6, fault_6);
			unsafe_put_user(id + 7, q + 7, fault_7);
		}
		for (end = q + (run & 7); q != end; q++, id++)
			unsafe_put_user(id, q, fault);
	}
	user_access_end();
	*written = (size_t)count * sizeof(u64);
	return true;

	/* The store at q + k faulted: the ones before it went through. */
fault_7:
	k++;
fault_6:
	k++;
fault_5:
	k++;
fault_4:
	k++;
fault_3:
	k++;
fault_2:
	k++;
fault_1:
	k++;
fault:
	user_access_end();
	*written = (size_t)(q - p + k) * sizeof(u64);
	return true;
}

/* Write the run into a ubuf iterator, in place when it can be. */
static size_t idgen_put_ids(const struct idgen_range *r, struct iov_iter *to)
{
	size_t written;

	if (!idgen_write_user(r, to->ubuf + to->iov_offset, &written))
		return idgen_copy_ids(r, to);
	iov_iter_advance(to, written);
	return written;
}

/* What a read that wrote @done bytes, or failed with @err, returns. */
static ssize_t idgen_read_end(struct idgen_gen *gen, size_t done, int err)
{
	if (done) {
		idgen_stat_read(gen->stats, done / sizeof(u64));
		return done;
	}
	idgen_gen_count_refusal(gen, err);
	return err;
}

/* Serve a read of @file into @to; @nowait: never sleep for the clock. */
static ssize_t idgen_read_ids(struct file *file, bool nowait,
			      struct iov_iter *to)
{
	struct idgen_gen *gen = idgen_file_gen(file);
	struct idgen_share *share = idgen_file_share(file);
	size_t left = iov_iter_count(to);
	ssize_t done = 0;
	int err = 0;

	if (!IS_ALIGNED(left, sizeof(u64)))
		return -EINVAL;

	while (left) {
		struct idgen_range r;
		size_t copied;

		if (done) {
			if (signal_pending(current))
				break;
			cond_resched();
		}
		/*
		 * With IDs in hand, return them rather than wait for a clock
		 * that is behind; the share and the borrow bound are waited
		 * for (mint.c), so a big blocking read is served whole.
		 */
		err = idgen_gen_mint(gen, share,
				     min_t(size_t, left / sizeof(u64),
					   IDGEN_BATCH_IDS),
				     (nowait ? IDGEN_MINT_NOWAIT : 0) |
				     (done ? IDGEN_MINT_MORE : 0), &r);
		if (err)
			break;
		/* IDs reserved but not copied are holes, never reissued. */
		copied = iter_is_ubuf(to) ? idgen_put_ids(&r, to) :
					    idgen_copy_ids(&r, to);
		done += copied;
		left -= copied;
		if (copied != r.count * sizeof(u64)) {
			err = -EFAULT;
			break;
		}
	}

	return idgen_read_end(gen, done, err);
}

static ssize_t idgen_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	return idgen_read_ids(iocb->ki_filp,
			      (iocb->ki_flags & IOCB_NOWAIT) ||
			      (iocb->ki_filp->f_flags & O_NONBLOCK), to);
}

/*
 * A read(2) that wants more than one ID, or that the fast path could not
 * serve one: up to a batch is tried on the fast path and written in
 * place, in one pass.  Whatever the fast path leaves (no lease, a clock
 * step to judge, a reader waiting, a bound in the way) it leaves with
 * nothing reserved, and the full path serves the read from the start, on
 * a ubuf iterator of its own.  Either way the reader sees the same: the
 * IDs it asked for, the bytes of those written before a fault, or the
 * errno.
 */
static noinline ssize_t idgen_read_more(struct file *file, char __user *buf,
					size_t len)
{
	struct idgen_file *f = file->private_data;
	struct idgen_range r;
	struct iov_iter to;

	iov_iter_ubuf(&to, ITER_DEST, buf, len);
	if (len > sizeof(u64) && len <= IDGEN_BATCH_IDS * sizeof(u64) &&
	    IS_ALIGNED(len, sizeof(u64)) &&
	    idgen_gen_mint_fast(f->gen, &f->share, len / sizeof(u64), &r))
		/* IDs reserved but not written are holes, never reissued. */
		return idgen_read_end(f->gen, idgen_put_ids(&r, &to), -EFAULT);
	return idgen_read_ids(file, file->f_flags & O_NONBLOCK, &to);
}

/*
 * read(2) itself, as drivers/char/mem.c has for /dev/zero beside its
 * ->read_iter: without it, the VFS would set up a kiocb for the call and
 * go through ->read_iter, which for one ID costs more than a tenth of
 * what the module does.  One ID, the most common read, is minted and
 * stored here with nothing on the stack; the rest is idgen_read_more().
 */
static ssize_t idgen_read(struct file *file, char __user *buf, size_t len,
			  loff_t *ppos)
{
	struct idgen_file *f = file->private_data;
	u64 id;

	if (len == sizeof(u64)) {
		id = idgen_gen_mint_one(f->gen, &f->share);
		if (id) {
			/* A fault leaves the ID a hole, never reissued. */
			if (put_user(id, (u64 __user *)buf))
				return -EFAULT;
			idgen_stat_read(f->gen->stats, 1);
			return sizeof(u64);
		}
	}
	return idgen_read_more(file, buf, len);
}

static __poll_t idgen_poll(struct file *file, poll_table *wait)
{
	struct idgen_gen *gen = idgen_file_gen(file);

	poll_wait(file, &gen->wait, wait);
	return idgen_gen_probe(gen, idgen_file_share(file)) ? 0 :
	       EPOLLIN | EPOLLRDNORM;
}

static long idgen_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct idgen_gen *gen = idgen_file_gen(file);
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case IDGEN_IOC_GET_STATE: {
		struct idgen_state st;

		idgen_gen_get_state(gen, &st);
		if (copy_to_user(argp, &st, sizeof(st)))
			return -EFAULT;
		return 0;
	}
	case IDGEN_IOC_SET_LEASE: {
		struct idgen_lease_args args;

		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		if (copy_from_user(&args, argp, sizeof(args)))
			return -EFAULT;
		return idgen_gen_set_lease(gen, &args);
	}
	case IDGEN_IOC_REVOKE: {
		u64 __user *lastp = argp;

		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		/* Fault before revoking, so a bad pointer changes nothing. */
		if (put_user(0, lastp))
			return -EFAULT;
		return put_user(idgen_gen_revoke(gen), lastp);
	}
	case IDGEN_IOC_ADOPT_CLOCK:
		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		idgen_gen_adopt_clock(gen);
		return 0;
	default:
		return -ENOTTY;
	}
}

static int idgen_open(struct inode *inode, struct file *file)
{
	/* misc_open() pointed private_data at the miscdevice. */
	struct idgen_chardev *dev = container_of(file->private_data,
						 struct idgen_chardev, misc);
	struct idgen_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->gen = dev->gen;
	atomic64_set(&f->share.word, 0);
	atomic64_set(&f->share.wait, 0);
	atomic64_set(&f->share.back_by, 0);
	file->private_data = f;
	/* IDs have no position: no seeking, no pread(). */
	return stream_open(inode, file);
}

static int idgen_release(struct inode *inode, struct file *file)
{
	idgen_gen_share_closed(idgen_file_gen(file), idgen_file_share(file));
	kfree(file->private_data);
	return 0;
}

static const struct file_operations idgen_fops = {
	.owner		= THIS_MODULE,
	.open		= idgen_open,
	.release	= idgen_release,
	.read		= idgen_read,
	.read_iter	= idgen_read_iter,
	.poll		= idgen_poll,
	.unlocked_ioctl	= idgen_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static struct idgen_chardev idgen_chardev = {
	.misc = {
		.minor	= MISC_DYNAMIC_MINOR,
		.name	= IDGEN_DEVICE_NAME,
		.fops	= &idgen_fops,
		.mode	= 0444,
	},
};

int idgen_chardev_init(struct idgen_gen *gen)
{
	idgen_chardev.gen = gen;
	return misc_register(&idgen_chardev.misc);
}

void idgen_chardev_uninit(void)
{
	misc_deregister(&idgen_chardev.misc);
	idgen_chardev.gen = NULL;
}

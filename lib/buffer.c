// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A small thread-safe buffer of minted IDs, refilled when half empty and
 * never handing out an ID older than its age bound, nor in a child
 * process an ID its parent buffered (forkguard.h).
 *
 * An ID's age is the time since the read that minted it, on
 * CLOCK_BOOTTIME: a clock that never steps and counts time suspended.  The
 * wall clock would not do: while the module holds a forward step of it
 * (until the step is adopted), it mints behind the new wall time, and
 * measured against CLOCK_REALTIME every ID, just read or not, would look
 * as old as the step and be dropped, every take failing with ETIME.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "forkguard.h"
#include "internal.h"

#define BUFFER_MAX	65536

struct idgen_buffer {
	pthread_mutex_t lock;
	int fd;			/* the device's, or -1 ... */
	struct idgen_sim *sim;	/* ... for a simulation's */
	size_t capacity;
	uint64_t max_age_ms;
	/* Protected by lock: ids[head..head+count) are increasing. */
	size_t head, count;
	struct idgen_forkguard_stamp stamp;	/* whose the IDs are */
	uint64_t *read_ms;	/* each ID's read, CLOCK_BOOTTIME ms: ids + capacity */
	uint64_t ids[];
};

static int buffer_new(int fd, struct idgen_sim *sim, size_t capacity,
		      uint64_t max_age_ms, struct idgen_buffer **out)
{
	struct idgen_buffer *b;

	if (!capacity || capacity > BUFFER_MAX || max_age_ms > LIBIDGEN_MS_MAX)
		return -EINVAL;
	b = calloc(1, sizeof(*b) + 2 * capacity * sizeof(b->ids[0]));
	if (!b)
		return -ENOMEM;
	b->read_ms = b->ids + capacity;
	if (pthread_mutex_init(&b->lock, NULL)) {
		free(b);
		return -ENOMEM;
	}
	b->fd = fd;
	b->sim = sim;
	/*
	 * Without a wipe-on-fork page the guard cannot tell every child
	 * (_Fork() or clone() into a new PID namespace from its PID 1 keeps
	 * the PID and runs no atfork handler), so the buffer keeps no ID
	 * across calls: a buffer of one reads each ID as it hands it out.
	 * Uniqueness holds at the cost of a read() per ID; failing here
	 * instead would add an error idgen_buffer_new() does not document,
	 * on a device that works.
	 */
	b->capacity = idgen_forkguard_init() ? capacity : 1;
	b->max_age_ms = max_age_ms;
	b->stamp = idgen_forkguard_stamp();
	*out = b;
	return 0;
}

IDGEN_EXPORT int idgen_buffer_new(int fd, size_t capacity, uint64_t max_age_ms,
				  struct idgen_buffer **out)
{
	if (fd < 0)
		return -EINVAL;
	return buffer_new(fd, NULL, capacity, max_age_ms, out);
}

IDGEN_EXPORT int idgen_buffer_new_sim(struct idgen_sim *sim, size_t capacity,
				      uint64_t max_age_ms, struct idgen_buffer **out)
{
	if (!sim)
		return -EINVAL;
	return buffer_new(-1, sim, capacity, max_age_ms, out);
}

IDGEN_EXPORT void idgen_buffer_free(struct idgen_buffer *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* CLOCK_BOOTTIME in ms: never stepped, and it counts time suspended. */
static uint64_t boot_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Drop IDs read longer than the age bound ago. */
static void drop_stale(struct idgen_buffer *b)
{
	uint64_t now = boot_ms();

	while (b->count && now - b->read_ms[b->head] > b->max_age_ms) {
		b->head++;
		b->count--;
	}
	if (!b->count)
		b->head = 0;
}

/* Top the buffer up with one read(); -errno if it got nothing. */
/* Up to cap IDs held (at most b->capacity). */
static int refill(struct idgen_buffer *b, size_t cap)
{
	uint64_t at;
	ssize_t r;
	size_t i;

	if (b->head) {
		memmove(b->ids, b->ids + b->head, b->count * sizeof(b->ids[0]));
		memmove(b->read_ms, b->read_ms + b->head, b->count * sizeof(b->read_ms[0]));
		b->head = 0;
	}
	if (b->count >= cap)
		return 0;
	/* Before the read: a read that sleeps for the clock ages its IDs. */
	at = boot_ms();
	if (b->sim)
		r = idgen_sim_mint(b->sim, b->ids + b->count, cap - b->count);
	else
		r = idgen_mint(b->fd, b->ids + b->count, cap - b->count);
	if (r < 0)
		return r;
	for (i = 0; i < (size_t)r; i++)
		b->read_ms[b->count + i] = at;
	b->count += r;
	return 0;
}

IDGEN_EXPORT int idgen_buffer_take(struct idgen_buffer *b, uint64_t *id)
{
	/*
	 * This copy of the library's guard, set up here too: a copy that
	 * only takes (another copy made the buffer) must not hold more than
	 * its own guard can protect.  Without a wipe-on-fork page that is
	 * nothing between takes, whatever the buffer was made for.
	 */
	size_t cap = idgen_forkguard_init() ? b->capacity : 1;
	uint64_t taken = 0;
	int ret;

	pthread_mutex_lock(&b->lock);
again:
	ret = 0;
	if (!idgen_forkguard_mine(&b->stamp)) {
		/*
		 * In a child, however made (or checked by another copy of the
		 * library): the parent owns what was buffered.
		 */
		b->head = b->count = 0;
		b->stamp = idgen_forkguard_stamp();
	}
	drop_stale(b);
	if (b->count <= cap / 2) {
		ret = refill(b, cap);
		/* With fresh IDs left, a failed refill can wait. */
		if (ret && b->count)
			ret = 0;
		/*
		 * A blocking read() may sleep (a few ms for the clock): look
		 * again, and should all have gone stale meanwhile, read once
		 * more.
		 */
		drop_stale(b);
		if (!ret && !b->count) {
			ret = refill(b, cap);
			drop_stale(b);
			if (!ret && !b->count)
				ret = -ETIME;
		}
		/*
		 * A fork() in a signal handler while read() slept: the child
		 * goes on from here with its parent's IDs in the buffer.
		 */
		if (!idgen_forkguard_mine(&b->stamp))
			goto again;
	}
	if (!ret) {
		taken = b->ids[b->head++];
		if (!--b->count)
			b->head = 0;
		/*
		 * ... or in a signal handler since the check above: the child
		 * drops its copy of the buffer, this ID with it, and reads.
		 */
		if (!idgen_forkguard_mine(&b->stamp))
			goto again;
		*id = taken;
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

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
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "forkguard.h"
#include "internal.h"

#define BUFFER_MAX	65536

/*
 * What a take changes, in a mapping of its own that every child (of
 * fork(), _Fork(), clone() or clone3()) gets as zeros, made so before the
 * child runs an instruction: an empty buffer, and an unlocked mutex.  A
 * thread of the parent may be asleep in a refill's read() at the fork,
 * the mutex held; the child has no such thread, and the mutex it gets is
 * a new one.  Resetting it in the child instead would need a check before
 * each lock that the child's own threads could race, and _Fork() and
 * clone() run no atfork handler to do it.
 *
 * The mutex is never initialised but by those zeros: that is
 * PTHREAD_MUTEX_INITIALIZER, where buffer_new() finds it all zeros (glibc,
 * musl), and a mutex so made is a default one.
 */
struct buffer_state {
	pthread_mutex_t lock;
	/* Protected by lock: ids[head..head+count) are increasing. */
	size_t head, count;
	struct idgen_forkguard_stamp stamp;	/* whose the IDs are */
	/* capacity IDs, then each one's read, CLOCK_BOOTTIME ns */
	uint64_t ids[];
};

struct idgen_buffer {
	/* Where its IDs come from: borrowed, never closed (no name). */
	struct idgen_generator gen;
	size_t capacity;
	uint64_t max_age_ms;
	/* NULL: no ID is kept between takes (take_unbuffered()). */
	struct buffer_state *s;
	size_t state_size;
};

/* Whether memory of zeros is an unlocked default mutex. */
static bool zeros_are_a_mutex(void)
{
	static const pthread_mutex_t init = PTHREAD_MUTEX_INITIALIZER;
	static const pthread_mutex_t zeros;

	return !memcmp(&init, &zeros, sizeof(init));
}

static int buffer_new(int fd, struct idgen_sim *sim, size_t capacity,
		      uint64_t max_age_ms, struct idgen_buffer **out)
{
	struct idgen_buffer *b;

	if (!capacity || capacity > BUFFER_MAX || max_age_ms > LIBIDGEN_MS_MAX)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->gen.fd = fd;
	b->gen.sim = sim;
	b->capacity = capacity;
	b->max_age_ms = max_age_ms;
	/*
	 * Without a wipe-on-fork page the guard cannot tell every child
	 * (_Fork() or clone() into a new PID namespace from its PID 1 keeps
	 * the PID and runs no atfork handler), and no mutex can be made new
	 * in every child, so the buffer keeps no ID across calls and locks
	 * nothing: each take reads the ID it hands out.  Uniqueness holds at
	 * the cost of a read() per ID; failing here instead would add an
	 * error idgen_buffer_new() does not document, on a device that works.
	 */
	if (idgen_forkguard_init() && zeros_are_a_mutex()) {
		b->state_size = sizeof(*b->s) + 2 * capacity * sizeof(b->s->ids[0]);
		b->s = idgen_forkguard_map(b->state_size);
		if (!b->s) {
			free(b);
			return -ENOMEM;
		}
		b->s->stamp = idgen_forkguard_stamp();
	}
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

IDGEN_EXPORT int idgen_buffer_new_generator(struct idgen_generator *g, size_t capacity,
					    uint64_t max_age_ms, struct idgen_buffer **out)
{
	if (!g)
		return -EINVAL;
	return buffer_new(g->fd, g->sim, capacity, max_age_ms, out);
}

IDGEN_EXPORT void idgen_buffer_free(struct idgen_buffer *b)
{
	if (!b)
		return;
	if (b->s) {
		pthread_mutex_destroy(&b->s->lock);
		idgen_forkguard_unmap(b->s, b->state_size);
	}
	free(b);
}

/*
 * CLOCK_BOOTTIME in ns: never stepped, and it counts time suspended.  In
 * ns, not ms: ages compared in whole milliseconds of one clock let an ID
 * through at up to max_age_ms + 1 by another's (the wall clock an ID's
 * time field is read against).
 */
static uint64_t boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The age bound in ns. */
static uint64_t max_age_ns(const struct idgen_buffer *b)
{
	return b->max_age_ms * 1000000;
}

/* Each buffered ID's read, CLOCK_BOOTTIME ns: after the IDs. */
static uint64_t *read_ns(const struct idgen_buffer *b)
{
	return b->s->ids + b->capacity;
}

static ssize_t mint(struct idgen_buffer *b, uint64_t *ids, size_t n)
{
	return idgen_generator_mint(&b->gen, ids, n);
}

/* Drop IDs read longer than the age bound ago. */
static void drop_stale(struct idgen_buffer *b)
{
	struct buffer_state *s = b->s;
	uint64_t now = boot_ns();

	while (s->count && now - read_ns(b)[s->head] > max_age_ns(b)) {
		s->head++;
		s->count--;
	}
	if (!s->count)
		s->head = 0;
}

/* Top the buffer up with one read(); -errno if it got nothing. */
static int refill(struct idgen_buffer *b)
{
	struct buffer_state *s = b->s;
	uint64_t at, *rd = read_ns(b);
	ssize_t r;
	size_t i;

	if (s->head) {
		memmove(s->ids, s->ids + s->head, s->count * sizeof(s->ids[0]));
		memmove(rd, rd + s->head, s->count * sizeof(rd[0]));
		s->head = 0;
	}
	if (s->count >= b->capacity)
		return 0;
	/* Before the read: a read that sleeps for the clock ages its IDs. */
	at = boot_ns();
	r = mint(b, s->ids + s->count, b->capacity - s->count);
	if (r < 0)
		return r;
	for (i = 0; i < (size_t)r; i++)
		rd[s->count + i] = at;
	s->count += r;
	return 0;
}

/*
 * No ID kept (buffer_new()): the one read is handed out, and read again
 * should the read have slept past the age bound.  No lock: there is
 * nothing to share, and a lock held across the read is one a child made
 * meanwhile would wait for.
 */
static int take_unbuffered(struct idgen_buffer *b, uint64_t *id)
{
	struct idgen_forkguard_stamp me;
	uint64_t at, got;
	ssize_t r;
	int tries;

again:
	me = idgen_forkguard_stamp();
	for (tries = 0; tries < 2; tries++) {
		at = boot_ns();
		r = mint(b, &got, 1);
		if (r < 0)
			return r;
		/*
		 * A fork() in a signal handler while read() slept, that the
		 * fallback's token tells: the parent hands this ID out too.
		 */
		if (!idgen_forkguard_mine(&me))
			goto again;
		if (boot_ns() - at <= max_age_ns(b)) {
			*id = got;
			return 0;
		}
	}
	return -ETIME;
}

IDGEN_EXPORT int idgen_buffer_take(struct idgen_buffer *b, uint64_t *id)
{
	struct buffer_state *s = b->s;
	uint64_t taken = 0;
	int ret;

	/*
	 * This copy of the library's guard, set up here too: a copy that
	 * only takes (another copy made the buffer) must not hold more than
	 * its own guard can protect.  Without a wipe-on-fork page that is
	 * nothing between takes, whatever the buffer was made for.
	 */
	if (!s || !idgen_forkguard_init())
		return take_unbuffered(b, id);
	/* A new mutex in a child, however made: struct buffer_state. */
	pthread_mutex_lock(&s->lock);
again:
	ret = 0;
	if (!idgen_forkguard_mine(&s->stamp)) {
		/*
		 * Another copy of the library made or last used the buffer
		 * (or this is a child, whose buffer is empty already): the IDs
		 * are not this copy's to hand out.
		 */
		s->head = s->count = 0;
		s->stamp = idgen_forkguard_stamp();
	}
	drop_stale(b);
	if (s->count <= b->capacity / 2) {
		ret = refill(b);
		/* With fresh IDs left, a failed refill can wait. */
		if (ret && s->count)
			ret = 0;
		/*
		 * A blocking read() may sleep (a few ms for the clock): look
		 * again, and should all have gone stale meanwhile, read once
		 * more.
		 */
		drop_stale(b);
		if (!ret && !s->count) {
			ret = refill(b);
			drop_stale(b);
			if (!ret && !s->count)
				ret = -ETIME;
		}
		/*
		 * A fork() in a signal handler while read() slept: the child
		 * goes on from here, its state wiped under it, or with the
		 * IDs the read brought in where the parent's were.
		 */
		if (!idgen_forkguard_mine(&s->stamp))
			goto again;
	}
	if (!ret) {
		taken = s->ids[s->head++];
		if (!--s->count)
			s->head = 0;
		/*
		 * ... or in a signal handler since the check above: the child
		 * drops its copy of the buffer, this ID with it, and reads.
		 */
		if (!idgen_forkguard_mine(&s->stamp))
			goto again;
		*id = taken;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

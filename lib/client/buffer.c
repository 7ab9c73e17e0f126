// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libidgen-client's buffer: IDs fetched ahead, handed out first come
 * first served, dropped once older than max_age_ms, refilled by one
 * request at a time.  Every function here runs under c->lock.
 */
#include <string.h>

#include "internal.h"

/* Drop the buffered IDs minted more than max_age_ms ago. */
void idgen_client__drop_stale(struct idgen_client *c)
{
	uint64_t now = wall_unix_ms();
	size_t i, kept = 0;

	if (!c->count)
		return;
	/* Answers of several hosts: not in order, so look at each. */
	for (i = 0; i < c->count; i++) {
		uint64_t id = c->buf[c->head + i];

		if (!id_stale(c, id, now))
			c->buf[c->head + kept++] = id;
	}
	if (kept != c->count) {
		ADD(c, stale_dropped, c->count - kept);
		c->count = kept;
	}
	if (!c->count)
		c->head = 0;
}

/* Unlink w from the waiters (it gave up). */
void idgen_client__unwait(struct idgen_client *c, struct waiter *w)
{
	struct waiter **pp;

	for (pp = &c->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			if (c->waiters_tail == &w->next)
				c->waiters_tail = pp;
			c->waiting -= w->want - w->got;
			return;
		}
}

/*
 * A refill's IDs: first to the callers waiting, in the order they came
 * (so none starves behind faster threads), the rest into the buffer.
 * Should callers still wait, or the buffer be at its mark, refill again.
 *
 * Every ID of the buffered client passes through here, refill after
 * refill, in order (callers wait only while the buffer is empty): so the
 * IDs one thread gets from one host are strictly increasing, even when a
 * call takes some from the buffer and waits for the rest.
 */
void idgen_client__deliver(struct idgen_client *c, struct request *r)
{
	size_t i = 0, room, n;
	struct waiter *w;

	while (i < r->want && (w = c->waiters)) {
		n = w->want - w->got < r->want - i ? w->want - w->got : r->want - i;
		memcpy(w->ids + w->got, r->ids + i, n * sizeof(r->ids[0]));
		w->got += n;
		i += n;
		c->waiting -= n;
		if (w->got < w->want)
			break;
		c->waiters = w->next;
		if (!c->waiters)
			c->waiters_tail = &c->waiters;
	}
	if (c->head) {
		memmove(c->buf, c->buf + c->head, c->count * sizeof(c->buf[0]));
		c->head = 0;
	}
	/* Waiters that gave up leave more than room: those are gaps. */
	room = c->o.buffer_size - c->count;
	n = r->want - i < room ? r->want - i : room;
	memcpy(c->buf + c->count, r->ids + i, n * sizeof(c->buf[0]));
	c->count += n;
}

void idgen_client__submit(struct idgen_client *c, struct request *r)
{
	r->next = NULL;
	*c->queue_tail = r;
	c->queue_tail = &r->next;
}

/*
 * Start a refill if the buffer is at its mark or below, or callers wait,
 * and none runs: for the room in the buffer and the IDs callers wait for
 * (up to refill_cap).  The one refill request is allocated once: a buffer
 * hit that starts a refill costs no allocation.  Returns whether the loop
 * must be woken, which the caller does after unlocking (the loop takes
 * the lock at once).
 *
 * Waking the loop costs the caller a system call and, on a busy machine,
 * often more (the loop thread is scheduled in its place): with a buffer
 * of 32 refilled at 16, that would be one call in 16.  So while callers
 * keep coming the loop looks at the buffer every millisecond by itself
 * (LOOK_NS), and a caller wakes it only when the buffer is down to half
 * its mark or callers wait.
 */
bool idgen_client__maybe_refill(struct idgen_client *c)
{
	struct request *r = c->refill_req;
	size_t room = c->o.buffer_size - c->count + c->waiting;

	if (room > c->refill_cap)
		room = c->refill_cap;
	if (c->refilling || (c->count > c->o.refill_mark && !c->waiting) || !room)
		return false;
	if (!c->in_loop && !c->waiting && c->count > c->o.refill_mark / 2 &&
	    c->looking)
		return false;	/* the loop's next look starts it */
	r->want = room;
	r->refill = true;
	r->start_ns = mono_ns();
	r->deadline_ns = r->start_ns + c->deadline_ns;
	c->refilling = true;
	c->refill_start_ns = r->start_ns;
	BUMP(c, refills);
	BUMP(c, requests);
	idgen_client__submit(c, r);
	return true;
}

/* Up to n fresh IDs from the buffer; *wake as for idgen_client__maybe_refill(). */
size_t idgen_client__take_buffered(struct idgen_client *c, uint64_t *ids, size_t n, bool *wake)
{
	size_t k = 0;

	c->last_take_ns = mono_ns();
	idgen_client__drop_stale(c);
	while (k < n && c->count) {
		ids[k++] = c->buf[c->head++];
		if (!--c->count)
			c->head = 0;
	}
	*wake = idgen_client__maybe_refill(c);
	return k;
}

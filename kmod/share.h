/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _IDGEN_SHARE_H
#define _IDGEN_SHARE_H

/*
 * How readers share the node when they ask for more than it holds.
 *
 * The device is 0444: any local user may read, so one greedy reader must
 * not keep the others waiting.  Alone, a reader may take every ID the node
 * holds, up to the borrow bound; a second reader that finds nothing left
 * is refused by the borrow bound, and that makes it wait.  The generator
 * remembers the oldest wait: of the files the borrow bound refused and
 * that keep asking, the one that began waiting first.  While it holds,
 * every other file is held to its share, a quarter of a millisecond's IDs
 * (IDGEN_SHARE_SHIFT) per millisecond of the trusted clock, and may borrow
 * one millisecond less, so the millisecond the clock opens next is left
 * to the waiting file.  The share's count lives in one word per file,
 * taken before the IDs are reserved and given back when fewer were, so
 * readers of one file (threads, forks) are held to the share together.
 *
 * Waits are ranked by a ticket drawn at their first refusal.  A wait holds
 * only while its file keeps asking: each refusal says when the reader will
 * be back (the sleep or poll wait it was told, plus IDGEN_WAIT_HOLD_MS),
 * and a wait whose reader was not back by then lapses for good: its next
 * refusal starts a new wait with a new ticket, behind every wait that
 * began meanwhile.  A file that stops asking, or only asks when it knows
 * it will be refused, so holds the priority for a few milliseconds at
 * most, and never again ahead of those that waited.
 *
 * All of this is policy: a stale or racing view of it only changes who
 * gets the next IDs, never which IDs exist, since every reservation is
 * one compare-and-exchange on the lease's state word (lease.c).
 */
#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/minmax.h>
#include <linux/types.h>

/* A file takes at most 2^seq_bits >> IDGEN_SHARE_SHIFT IDs per ms. */
#define IDGEN_SHARE_SHIFT	2

/**
 * struct idgen_share - what one open file took in the current millisecond
 * @word: the millisecond (low 32 bits) above the count of IDs taken in it.
 *        A millisecond 2^32 ms (49 days) old that matches by its low bits
 *        can only make the file wait once more: never more IDs.
 * @wait: the ticket of the file's wait for the borrow bound, drawn at
 *        its first refusal since it last got IDs; 0 while not waiting.
 * @back_by: the millisecond the waiting reader said it would be back by.
 */
struct idgen_share {
	atomic64_t word;
	atomic64_t wait;
	atomic64_t back_by;
};

/**
 * struct idgen_oldest_wait - the oldest wait the borrow bound refused
 * @since:   its ticket, 0 for none.
 * @until:   the millisecond it lapses at unless its reader is back.
 * @tickets: the last ticket drawn.
 */
struct idgen_oldest_wait {
	atomic64_t since;
	atomic64_t until;
	atomic64_t tickets;
};

/*
 * How late past the time it was told a waiting reader may come back and
 * keep its place: scheduling latency, not a sleep.
 */
#define IDGEN_WAIT_HOLD_MS	20

static inline u32 idgen_share_quota(u8 seq_bits)
{
	return max(1U, (u32)(BIT_ULL(seq_bits) >> IDGEN_SHARE_SHIFT));
}

/* IDs @word records as taken in @now_ms. */
static inline u32 idgen_share_used(u64 word, u64 now_ms)
{
	return (u32)(word >> 32) == (u32)now_ms ? (u32)word : 0;
}

/**
 * idgen_share_take() - take up to @want IDs of the file's share
 * @share:  the file's share.
 * @now_ms: the trusted clock's millisecond.
 * @quota:  the share, idgen_share_quota() of the lease's layout.
 * @want:   how many IDs the reader wants.
 *
 * Return: how many it may reserve, 0 when the share of @now_ms is used up.
 */
static inline u32 idgen_share_take(struct idgen_share *share, u64 now_ms,
				   u32 quota, u32 want)
{
	u64 old = atomic64_read(&share->word);
	u32 used, n;

	do {
		used = idgen_share_used(old, now_ms);
		if (used >= quota)
			return 0;
		n = min(want, quota - used);
	} while (!atomic64_try_cmpxchg(&share->word, &old,
				       (u64)(u32)now_ms << 32 | (used + n)));
	return n;
}

/* Give back @n IDs taken in @now_ms but not reserved, if still that ms. */
static inline void idgen_share_give_back(struct idgen_share *share, u64 now_ms,
					 u32 n)
{
	u64 old = atomic64_read(&share->word);

	do {
		if (!n || idgen_share_used(old, now_ms) < n)
			return;
	} while (!atomic64_try_cmpxchg(&share->word, &old, old - n));
}

/**
 * idgen_wait_yields() - must a reader holding @share yield to a wait?
 * @oldest: the generator's oldest wait.
 * @share:  the reader's file's share, or NULL for none.
 * @now_ms: the trusted clock's millisecond.
 *
 * Return: true while another file's wait is the oldest and holds: the
 * reader is then held to its share and borrows one millisecond less.
 */
static inline bool idgen_wait_yields(struct idgen_oldest_wait *oldest,
				     struct idgen_share *share, u64 now_ms)
{
	s64 since = atomic64_read(&oldest->since);

	return since && !(share && atomic64_read(&share->wait) == since) &&
	       now_ms < (u64)atomic64_read(&oldest->until);
}

/* Move @v up to @to, never down: racing refusals keep the latest time. */
static inline void idgen_wait_extend(atomic64_t *v, s64 to)
{
	s64 old = atomic64_read(v);

	do {
		if (old >= to)
			return;
	} while (!atomic64_try_cmpxchg(v, &old, to));
}

/**
 * idgen_wait_refused() - the borrow bound refused a reader holding @share
 * @oldest:  the generator's oldest wait.
 * @share:   the reader's file's share.
 * @now_ms:  the trusted clock's millisecond.
 * @back_ms: when the reader will ask again, in ms from @now_ms.
 *
 * Goes on with the file's wait, or starts one when it has none or its
 * reader was not back in time, and makes it the oldest wait when it began
 * before the one there, or that one lapsed.
 */
static inline void idgen_wait_refused(struct idgen_oldest_wait *oldest,
				      struct idgen_share *share, u64 now_ms,
				      u64 back_ms)
{
	u64 back_by = now_ms + back_ms + IDGEN_WAIT_HOLD_MS;
	s64 mine = atomic64_read(&share->wait), since;

	if (mine && now_ms >= (u64)atomic64_read(&share->back_by) &&
	    atomic64_try_cmpxchg(&share->wait, &mine, 0))
		mine = 0;
	/* Threads of one file share its wait: the first refusal starts it. */
	if (!mine) {
		s64 ticket = atomic64_inc_return(&oldest->tickets);

		if (atomic64_try_cmpxchg(&share->wait, &mine, ticket))
			mine = ticket;
	}
	idgen_wait_extend(&share->back_by, back_by);

	since = atomic64_read(&oldest->since);
	if (since == mine) {
		idgen_wait_extend(&oldest->until, back_by);
	} else {
		do {
			if (since && since < mine &&
			    now_ms < (u64)atomic64_read(&oldest->until))
				return;
		} while (!atomic64_try_cmpxchg(&oldest->since, &since, mine));
		atomic64_set(&oldest->until, back_by);
	}
	/*
	 * A thread of the same file that got IDs meanwhile ended the wait
	 * and found it not yet the oldest: do not leave it there, owned by
	 * no file, for others to yield to.
	 */
	smp_mb();
	if (atomic64_read(&share->wait) != mine)
		atomic64_cmpxchg(&oldest->since, mine, 0);
}

/**
 * idgen_wait_over() - a reader holding @share got IDs, or closed the file
 * @oldest: the generator's oldest wait.
 * @share:  the file's share.
 *
 * Ends the file's wait, and the priority with it if it held it.
 */
static inline void idgen_wait_over(struct idgen_oldest_wait *oldest,
				   struct idgen_share *share)
{
	s64 mine;

	/* Read first: on the hot path, a reader never refused, no write. */
	if (!atomic64_read(&share->wait))
		return;
	mine = atomic64_xchg(&share->wait, 0);
	if (mine && atomic64_read(&oldest->since) == mine)
		atomic64_cmpxchg(&oldest->since, mine, 0);
}

#endif /* _IDGEN_SHARE_H */

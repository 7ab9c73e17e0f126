/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _IDGEN_FAIR_H
#define _IDGEN_FAIR_H

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

/**
 * idgen_fair_alone() - may a reader reserve as if it were alone?
 * @oldest: the generator's oldest wait.
 * @share:  the reader's file's share, or NULL for none.
 * @now_ms: the trusted clock's millisecond.
 * @any:    no borrow bound holds: the clock is absorbing a step back.
 *
 * A reader is alone when no step back is being absorbed (a reader with a
 * share would be held to it), no other file's wait holds (it would be
 * held to its share and borrow one ms less), and its file has no wait of
 * its own (IDs would end it).  The policy has nothing to do for it then:
 * a reservation that succeeds is exactly the one it would have made with
 * no other reader about.  The read path's fast way serves only such
 * readers.
 *
 * Return: true when the reader is alone.
 */
static __always_inline bool idgen_fair_alone(struct idgen_oldest_wait *oldest,
					     struct idgen_share *share,
					     u64 now_ms, bool any)
{
	if (any || (share && atomic64_read(&share->wait)))
		return false;
	return !idgen_wait_yields(oldest, share, now_ms);
}

u32 idgen_share_take(struct idgen_share *share, u64 now_ms, u32 quota,
		     u32 want);
void idgen_share_give_back(struct idgen_share *share, u64 now_ms, u32 n);
void idgen_wait_refused(struct idgen_oldest_wait *oldest,
			struct idgen_share *share, u64 now_ms, u64 back_ms);
void idgen_wait_over(struct idgen_oldest_wait *oldest,
		     struct idgen_share *share);

#endif /* _IDGEN_FAIR_H */

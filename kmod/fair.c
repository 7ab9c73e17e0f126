// SPDX-License-Identifier: GPL-2.0
/*
 * The fairness policy: each file's share of a millisecond, and the oldest
 * wait the borrow bound refused (fair.h says how they work together).
 */
#include <linux/atomic.h>
#include <linux/minmax.h>

#include "fair.h"

/**
 * idgen_share_take() - take up to @want IDs of the file's share
 * @share:  the file's share.
 * @now_ms: the trusted clock's millisecond.
 * @quota:  the share, idgen_share_quota() of the lease's layout.
 * @want:   how many IDs the reader wants.
 *
 * Return: how many it may reserve, 0 when the share of @now_ms is used up.
 */
u32 idgen_share_take(struct idgen_share *share, u64 now_ms, u32 quota,
		     u32 want)
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
void idgen_share_give_back(struct idgen_share *share, u64 now_ms, u32 n)
{
	u64 old = atomic64_read(&share->word);

	do {
		if (!n || idgen_share_used(old, now_ms) < n)
			return;
	} while (!atomic64_try_cmpxchg(&share->word, &old, old - n));
}

/* Move @v up to @to, never down: racing refusals keep the latest time. */
static void idgen_wait_extend(atomic64_t *v, s64 to)
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
void idgen_wait_refused(struct idgen_oldest_wait *oldest,
			struct idgen_share *share, u64 now_ms, u64 back_ms)
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
void idgen_wait_over(struct idgen_oldest_wait *oldest,
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

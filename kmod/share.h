/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _IDGEN_SHARE_H
#define _IDGEN_SHARE_H

/*
 * An open file's share of each millisecond's sequence space.
 *
 * The device is 0444: any local user may read, so one greedy reader must
 * not take every ID a millisecond holds.  Each open file may take at most
 * a quarter of them (IDGEN_SHARE_SHIFT) per millisecond of the trusted
 * clock; a reader that used its share waits for the next millisecond.
 * The count lives in one word per file, taken before the IDs are reserved
 * and given back when fewer were, so readers of one file sharing it
 * (threads, forks) are held to the share together.
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
 */
struct idgen_share {
	atomic64_t word;
};

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

#endif /* _IDGEN_SHARE_H */

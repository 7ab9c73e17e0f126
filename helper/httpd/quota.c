// SPDX-License-Identifier: GPL-2.0
/*
 * Per-caller token buckets (quota.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quota.h"

int quota_init(struct quota *q, char **callers, unsigned int nr_callers)
{
	q->callers = callers;
	q->nr_callers = nr_callers;
	q->bucket = calloc(nr_callers + 1, sizeof(*q->bucket));
	return q->bucket ? 0 : -ENOMEM;
}

void quota_free(struct quota *q)
{
	free(q->bucket);
	q->bucket = NULL;
}

void quota_set(struct quota *q, unsigned int i, uint64_t rate_milli, uint64_t burst)
{
	struct quota_bucket *b = &q->bucket[i];

	/*
	 * 10^12 / rate_milli ns per ID, at least 1000 ns: rounded down, the
	 * rate is high by less than one part in a thousand, and a burst of n
	 * single IDs costs exactly what one request of n does.
	 */
	b->cost_ns = 1000000000000ULL / rate_milli;
	b->burst = burst;
	atomic_store(&b->tat_ns, 0);	/* in the past: full */
}

unsigned int quota_caller_index(const struct quota *q, const char *caller)
{
	unsigned int i;

	if (!caller)
		return q->nr_callers;
	for (i = 0; i < q->nr_callers && strcmp(q->callers[i], caller); i++)
		;
	return i;
}

enum quota_verdict quota_take(struct quota *q, unsigned int i, size_t n,
			      uint64_t now_ns, uint64_t *wait_ns, uint64_t *burst,
			      uint64_t *tat_ns)
{
	struct quota_bucket *b = &q->bucket[i];
	uint64_t tat, next, limit, unused;

	if (!tat_ns)
		tat_ns = &unused;
	*tat_ns = 0;
	if (!b->cost_ns)
		return QUOTA_TAKEN;
	if (n > b->burst) {
		*burst = b->burst;
		return QUOTA_OVER_BURST;
	}
	/* cost_ns <= 10^12 and burst <= 10^6: no product passes 10^18. */
	limit = now_ns + b->burst * b->cost_ns;
	tat = atomic_load_explicit(&b->tat_ns, memory_order_relaxed);
	do {
		next = (tat > now_ns ? tat : now_ns) + n * b->cost_ns;
		if (next > limit) {
			*wait_ns = next - limit;
			return QUOTA_WAIT;
		}
	} while (!atomic_compare_exchange_weak_explicit(&b->tat_ns, &tat, next,
							memory_order_relaxed,
							memory_order_relaxed));
	*tat_ns = next;
	return QUOTA_TAKEN;
}

void quota_refund(struct quota *q, unsigned int i, size_t n, uint64_t tat_ns,
		  uint64_t now_ns)
{
	struct quota_bucket *b = &q->bucket[i];
	uint64_t owed, tat, next;

	if (!b->cost_ns || tat_ns <= now_ns)
		return;
	/*
	 * Of the n * cost the take added, the part up to now has refilled
	 * already: only tat_ns - now is still owed.  Handing back more would
	 * hand back time other requests have taken since, and let more than
	 * the burst through.
	 */
	owed = tat_ns - now_ns;
	if (owed > n * b->cost_ns)
		owed = n * b->cost_ns;
	tat = atomic_load_explicit(&b->tat_ns, memory_order_relaxed);
	do {
		if (tat <= now_ns)
			return;		/* full already */
		next = tat - now_ns > owed ? tat - owed : now_ns;
	} while (!atomic_compare_exchange_weak_explicit(&b->tat_ns, &tat, next,
							memory_order_relaxed,
							memory_order_relaxed));
}

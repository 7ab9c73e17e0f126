/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-caller quotas on POST /v1/ids:next: a token bucket per caller, as
 * /metrics names callers (one of the configured callers, or "other" for
 * every other caller and none), refilled at a rate of IDs per second up
 * to a burst.
 *
 * Each bucket is kept as the generic cell rate algorithm's one number,
 * the theoretical arrival time (TAT): the time at which the bucket would
 * be full again.  Taking n IDs moves it to max(TAT, now) + n * cost and is
 * allowed while that lies at most burst * cost ahead of now.  One atomic
 * compare-and-swap per request: no lock, so the thread pool never waits
 * on another thread's request.
 *
 * Callers name themselves in the request, so a quota shares the service
 * out among cooperating callers; it is no barrier against one that lies.
 */
#ifndef HTTPD_QUOTA_H
#define HTTPD_QUOTA_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define QUOTA_MAX_RATE_MILLI	1000000000ULL	/* 1,000,000 IDs/s */
#define QUOTA_MAX_BURST		1000000ULL

struct quota_bucket {
	uint64_t cost_ns;		/* the time one ID refills in; 0: no quota */
	uint64_t burst;			/* IDs */
	_Atomic uint64_t tat_ns;	/* CLOCK_MONOTONIC */
};

struct quota {
	char **callers;			/* the configured names, kept, not copied */
	unsigned int nr_callers;
	struct quota_bucket *bucket;	/* per caller, then "other" */
};

enum quota_verdict {
	QUOTA_TAKEN,		/* the IDs may be minted */
	QUOTA_WAIT,		/* not yet: *wait_ns until they would be */
	QUOTA_OVER_BURST,	/* never: more than the burst at once */
};

/* No bucket limited yet.  0 or -ENOMEM. */
int quota_init(struct quota *q, char **callers, unsigned int nr_callers);
void quota_free(struct quota *q);

/*
 * Limit caller index i (nr_callers: "other") to rate_milli / 1000 IDs/s
 * and a burst of burst IDs.  The bucket starts full.
 */
void quota_set(struct quota *q, unsigned int i, uint64_t rate_milli, uint64_t burst);

/* The index of caller (NULL: none given), nr_callers for "other". */
unsigned int quota_caller_index(const struct quota *q, const char *caller);

/*
 * Take n IDs from caller index i's bucket at now_ns (CLOCK_MONOTONIC).
 * On QUOTA_WAIT *wait_ns is how long until the same request would be
 * taken; on QUOTA_OVER_BURST *burst is the bucket's burst.  Nothing is
 * taken unless QUOTA_TAKEN; then *tat_ns (if not NULL) is the TAT the
 * take stored (0 for a bucket without quota), for quota_refund().
 */
enum quota_verdict quota_take(struct quota *q, unsigned int i, size_t n,
			      uint64_t now_ns, uint64_t *wait_ns, uint64_t *burst,
			      uint64_t *tat_ns);
/*
 * Hand back n IDs taken (the take stored tat_ns) but not minted, at
 * now_ns: only what has not refilled since, min(n * cost, tat_ns - now),
 * and never past a full bucket, so a late give-back cannot let more than
 * the burst through.
 */
void quota_refund(struct quota *q, unsigned int i, size_t n, uint64_t tat_ns,
		  uint64_t now_ns);

#endif /* HTTPD_QUOTA_H */

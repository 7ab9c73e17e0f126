// SPDX-License-Identifier: GPL-2.0
/*
 * A request for IDs from check to refund (next.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "minter.h"
#include "monotonic.h"
#include "next.h"
#include "quota.h"

/* The one table of what a request can come to, for both faces. */
static const struct next_status_text texts[NR_NEXT_STATUSES] = {
	[NEXT_OK] = { 200, NULL, GRPC_OK, NULL },
	[NEXT_PENDING] = { 500, "internal_error", GRPC_INTERNAL,
			   "the request was answered before it was minted" },
	[NEXT_INVALID_COUNT] = { 400, "invalid_count", GRPC_INVALID_ARGUMENT,
				 "count must be from 1 to 10000" },
	[NEXT_INVALID_CALLER] = { 400, "invalid_caller", GRPC_INVALID_ARGUMENT,
				  "caller must be a string of 1 to 64 letters, "
				  "digits, '.', '_', ':' or '-'" },
	[NEXT_CALLER_MISMATCH] = { 403, "caller_mismatch", GRPC_PERMISSION_DENIED,
				   "the request names a caller other than its client "
				   "certificate's: name none, or the certificate's" },
	[NEXT_NO_PUBLIC_KEYS] = { 400, "no_public_keys", GRPC_FAILED_PRECONDITION,
				  "public IDs were asked for, but no public-ID keys "
				  "are configured (public_keys)" },
	[NEXT_COUNT_OVER_BURST] = { 400, "count_over_burst", GRPC_INVALID_ARGUMENT,
				    "count exceeds this caller's burst: ask for "
				    "fewer IDs at once" },
	[NEXT_QUOTA_EXCEEDED] = { 429, "quota_exceeded", GRPC_RESOURCE_EXHAUSTED,
				  "this caller's quota of IDs is used up for now: "
				  "retry after the time the answer gives "
				  "(Retry-After, grpc-retry-pushback-ms)" },
	[NEXT_NO_LEASE] = { 503, "no_lease", GRPC_UNAVAILABLE,
			    "the generator holds no lease" },
	[NEXT_FENCE_REACHED] = { 503, "fence_reached", GRPC_UNAVAILABLE,
				 "the generator's lease has reached its fence" },
	[NEXT_CLOCK_BEHIND] = { 503, "clock_behind", GRPC_UNAVAILABLE,
				"the clock is behind the generator: retry shortly" },
	[NEXT_TIME_RANGE_EXHAUSTED] = { 503, "time_range_exhausted", GRPC_UNAVAILABLE,
					"no millisecond after 2095-09-07T15:47:35.551Z "
					"fits in an ID" },
	[NEXT_DEVICE_ERROR] = { 503, "device_error", GRPC_UNAVAILABLE,
				"the generator cannot be read" },
	[NEXT_DEADLINE_EXCEEDED] = { 504, "deadline_exceeded", GRPC_DEADLINE_EXCEEDED,
				     "the deadline passed before the IDs were minted" },
	[NEXT_CLIENT_GONE] = { 499, "client_gone", GRPC_CANCELLED,
			       "the client went away" },
	[NEXT_NO_MEMORY] = { 503, "out_of_memory", GRPC_RESOURCE_EXHAUSTED,
			     "out of memory" },
};

const struct next_status_text *next_text(enum next_status status)
{
	return &texts[status < NR_NEXT_STATUSES ? status : NEXT_DEVICE_ERROR];
}

/* Refusals come in floods: one log line per kind at most (log.h). */
static void log_refusal(enum next_status status, int err)
{
	static struct log_ratelimit refused[NR_NEXT_STATUSES];

	log_ratelimited(&refused[status], LOG_WARNING,
			"the generator refuses to mint: %s",
			idgen_strerror(err) ? idgen_strerror(err) : strerror(-err));
}

/* What the generator's err (a negative errno) comes to; logged. */
static enum next_status refusal(struct next *n, int err)
{
	enum next_status status;

	switch (-err) {
	case ECONNRESET:
		return NEXT_CLIENT_GONE;
	case ETIMEDOUT:
		return NEXT_DEADLINE_EXCEEDED;
	case ENOMEM:
		return NEXT_NO_MEMORY;
	}
	n->retry_after_ms = 1000;
	switch (-err) {
	case ENOKEY:
		status = NEXT_NO_LEASE;
		break;
	case EKEYEXPIRED:
		status = NEXT_FENCE_REACHED;
		break;
	case ETIME:
	case EAGAIN:
		status = NEXT_CLOCK_BEHIND;
		break;
	case EOVERFLOW:
		status = NEXT_TIME_RANGE_EXHAUSTED;
		n->retry_after_ms = 3600 * 1000;
		break;
	default:
		status = NEXT_DEVICE_ERROR;
	}
	log_refusal(status, err);
	return status;
}

/*
 * A client that names a caller its certificate is not: in the
 * authenticated name, rate-limited (the counter has every one).
 */
static void log_mismatch(const struct next_ask *ask)
{
	static struct log_ratelimit rl;

	log_ratelimited(&rl, LOG_NOTICE, "a client certificate of caller %s asked for "
			"IDs as '%.*s': refused, 403 caller_mismatch",
			*ask->authenticated ? ask->authenticated : "other (unmapped)",
			(int)ask->caller_len, ask->caller);
}

/* The checks, before anything is taken. */
static enum next_status check(struct api *api, const struct next_ask *ask,
			      struct next *n)
{
	if (ask->count < 1 || ask->count > API_MAX_COUNT)
		return NEXT_INVALID_COUNT;
	if (ask->caller && !api_caller_valid(ask->caller, ask->caller_len))
		return NEXT_INVALID_CALLER;
	if (ask->authenticated) {
		/* The certificate's caller; the request may only repeat it. */
		if (ask->caller && (strlen(ask->authenticated) != ask->caller_len ||
				    memcmp(ask->authenticated, ask->caller, ask->caller_len))) {
			log_mismatch(ask);
			return NEXT_CALLER_MISMATCH;
		}
		snprintf(n->caller, sizeof(n->caller), "%s", ask->authenticated);
	} else if (ask->caller) {
		memcpy(n->caller, ask->caller, ask->caller_len);
		n->caller[ask->caller_len] = '\0';
	}
	if (ask->public && !api->keyring)
		return NEXT_NO_PUBLIC_KEYS;
	n->public = ask->public;
	return NEXT_OK;
}

static enum next_status take_quota(struct api *api, struct next *n)
{
	uint64_t wait_ns;

	n->qi = quota_caller_index(api->quota, n->caller[0] ? n->caller : NULL);
	switch (quota_take(api->quota, n->qi, n->job.count, monotonic_ns(), &wait_ns,
			   &n->burst, &n->tat)) {
	case QUOTA_TAKEN:
		n->quota_taken = true;
		return NEXT_OK;
	case QUOTA_OVER_BURST:
		return NEXT_COUNT_OVER_BURST;
	case QUOTA_WAIT:
		break;
	}
	/* In ms, rounded up: a client that waits as told is let through. */
	n->retry_after_ms = (wait_ns + 999999) / 1000000;
	return NEXT_QUOTA_EXCEEDED;
}

/* Minted on this thread: job.got counts those the generator gave. */
static int mint_inline(struct minter *m, struct lane_job *job)
{
	ssize_t r;

	while (job->got < job->count) {
		r = m->ops->mint(m->ctx, job->ids + job->got, job->count - job->got);
		if (r < 0)
			return r;
		job->got += r;
	}
	return 0;
}

enum next_status next_start(struct api *api, const struct next_ask *ask,
			    struct next *n)
{
	memset(n, 0, sizeof(*n));
	n->api = api;
	n->job.fd = ask->fd;
	n->job.deadline_ns = ask->deadline_ns;
	n->status = check(api, ask, n);
	if (n->status != NEXT_OK)
		return n->status;
	n->job.count = ask->count;
	if (api->quota) {
		n->status = take_quota(api, n);
		if (n->status != NEXT_OK)
			return n->status;
	}
	n->job.ids = malloc(n->job.count * sizeof(*n->job.ids));
	if (!n->job.ids)
		return n->status = NEXT_NO_MEMORY;
	/* A large request is minted on the lane, off this thread (lane.h). */
	if (api->lane && n->job.count >= LANE_MIN_COUNT)
		return n->status = NEXT_PENDING;
	n->job.err = mint_inline(api->minter, &n->job);
	n->status = n->job.err ? refusal(n, n->job.err) : NEXT_OK;
	return n->status;
}

static void lane_done(struct lane_job *job)
{
	struct next *n = (struct next *)job;

	if (atomic_load(&job->cancelled))
		n->status = NEXT_CLIENT_GONE;
	else
		n->status = job->err ? refusal(n, job->err) : NEXT_OK;
	n->done(n);
}

void next_submit(struct next *n, void (*done)(struct next *n))
{
	n->done = done;
	n->job.done = lane_done;
	lane_submit(n->api->lane, &n->job);
}

void next_cancel(struct next *n)
{
	atomic_store(&n->job.cancelled, true);
}

void next_end_queued(struct next *n, struct metrics_answer *a)
{
	a->ids = 0;
	if (n->status != NEXT_OK) {
		next_end(n, false);
		return;
	}
	if (n->api->metrics) {
		a->caller = metrics_caller(n->api->metrics, n->caller[0] ? n->caller : NULL);
		a->ids = n->job.count;
	}
	free(n->job.ids);
	n->job.ids = NULL;
}

void next_end(struct next *n, bool delivered)
{
	struct api *api = n->api;
	size_t unminted = n->job.count - n->job.got;
	struct metrics_answer a;

	if (n->status == NEXT_OK && delivered) {
		next_end_queued(n, &a);
		metrics_answer_end(api->metrics, &a, true);
		return;
	}
	/*
	 * Minted and never delivered: holes, charged to the caller, who
	 * took the node's time (or a client could mint on and on for free
	 * by going before each answer).  A refusal's holes are the
	 * generator's, not a client's.
	 */
	if (n->status == NEXT_OK || n->status == NEXT_CLIENT_GONE)
		metrics_ids_lost(api->metrics, n->job.got);
	if (n->quota_taken && unminted)
		quota_refund(api->quota, n->qi, unminted, n->tat, monotonic_ns());
	free(n->job.ids);
	n->job.ids = NULL;
}


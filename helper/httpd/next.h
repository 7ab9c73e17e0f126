/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one path of a request for IDs, whichever face it came in by
 * (Documentation/design.md section 9): POST /v1/ids:next (api.c) and
 * /idgen.v1.IdGen/NextIds (grpc_service.c) only turn their wire formats
 * into a struct next_ask, and a request's status into their own answer.
 *
 *   check     count from 1 to API_MAX_COUNT, a caller's name, public IDs
 *             only with keys; with a client certificate (mTLS, tls.h)
 *             the caller is the certificate's, and a request naming
 *             another is refused: all before anything is taken
 *   quota     the caller's bucket (quota.h): over its burst, or to wait
 *   mint      inline, or on the bulk lane (lane.h) from LANE_MIN_COUNT
 *   answer    the face's, from the IDs
 *   refund    what was taken from the quota and never minted goes back;
 *             what was minted and never delivered is a hole, charged
 *             (it took the node's time) and counted as lost
 *
 * Every status is in one table (next.c), with its HTTP status and code
 * and its gRPC code side by side, and one message for both.
 */
#ifndef HTTPD_NEXT_H
#define HTTPD_NEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "grpc_wire.h"
#include "lane.h"

enum next_status {
	NEXT_OK,			/* minted: ids, count */
	NEXT_PENDING,			/* to be minted on the lane: next_submit() */
	NEXT_INVALID_COUNT,
	NEXT_INVALID_CALLER,
	NEXT_CALLER_MISMATCH,		/* not the client certificate's caller */
	NEXT_NO_PUBLIC_KEYS,
	NEXT_COUNT_OVER_BURST,		/* retry_after_ms 0: never at once */
	NEXT_QUOTA_EXCEEDED,		/* retry_after_ms: when the bucket has them */
	/* The generator's refusals, with retry_after_ms. */
	NEXT_NO_LEASE,
	NEXT_FENCE_REACHED,
	NEXT_CLOCK_BEHIND,
	NEXT_TIME_RANGE_EXHAUSTED,
	NEXT_DEVICE_ERROR,
	NEXT_DEADLINE_EXCEEDED,		/* the caller's deadline passed first */
	NEXT_CLIENT_GONE,		/* cancelled: no answer is sent */
	NEXT_NO_MEMORY,
	NR_NEXT_STATUSES
};

/* How both faces say a status. */
struct next_status_text {
	unsigned int http;		/* HTTP status */
	const char *code;		/* the HTTP API's error code */
	enum grpc_code grpc;
	const char *message;		/* fixed text, for the caller */
};

const struct next_status_text *next_text(enum next_status status);

/* A request, as its face read it off the wire. */
struct next_ask {
	uint64_t count;
	const char *caller;		/* caller_len bytes; NULL: none */
	size_t caller_len;
	bool public;
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC; 0: none */
	int fd;				/* the client's socket for the lane, or -1 */
	/*
	 * The caller the connection's client certificate proves (mTLS), or
	 * NULL: no certificate, the caller is what the request says.  ""
	 * for a certificate that maps to no caller: the caller "other".
	 * Quotas, metrics and logs take it; a request naming another caller
	 * is refused (NEXT_CALLER_MISMATCH), one naming none is its.
	 */
	const char *authenticated;
};

/*
 * A request on its way.  Its face keeps it (on its stack while it is
 * answered at once; for the lane, as the first member of its own
 * struct, which done's n then points to), reads status, job.ids and
 * job.count, and ends it with next_end().
 */
struct next {
	struct lane_job job;		/* the IDs: job.ids, job.count */
	struct api *api;
	enum next_status status;
	uint64_t retry_after_ms;	/* 0: none */
	uint64_t burst;			/* with NEXT_COUNT_OVER_BURST */
	char caller[API_MAX_CALLER + 1];
	bool public;
	bool quota_taken;		/* qi and tat hold the take */
	unsigned int qi;
	uint64_t tat;
	void (*done)(struct next *n);
};

/*
 * Check, take the quota and, unless it is for the lane, mint: n's
 * status, which is also returned.  Any status but NEXT_PENDING is final.
 * A NEXT_PENDING n may be moved (copied) until next_submit().
 */
enum next_status next_start(struct api *api, const struct next_ask *ask,
			    struct next *n);

/*
 * Mint a NEXT_PENDING n on the lane, then done(n) once with its final
 * status, on the lane's thread (or this one, before this returns, when
 * the lane has stopped).
 */
void next_submit(struct next *n, void (*done)(struct next *n));

/* The caller is gone: the lane mints no more for n (any thread). */
void next_cancel(struct next *n);

/*
 * The end of n, its status final: delivered says whether its answer
 * went out.  An answered NEXT_OK counts as issued; IDs minted and never
 * delivered as lost; the quota gets back what was never minted.  Frees
 * n's IDs, not n.
 */
void next_end(struct next *n, bool delivered);

/*
 * As next_end(n, true), for an answer handed to a transport that tells
 * later whether all of it went out: *a is filled for that moment's
 * metrics_answer_end() (metrics.h), and nothing is counted now.
 */
void next_end_queued(struct next *n, struct metrics_answer *a);

#endif /* HTTPD_NEXT_H */

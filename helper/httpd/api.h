/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The service's routes (Documentation/design.md section 9), apart from HTTP
 * transport: a request as libmicrohttpd hands it over in, the status, headers
 * and fixed-shape JSON body out.  Nothing here parses HTTP (server.c leaves
 * that to libmicrohttpd), and a request refused for bad input never reaches the
 * generator.
 *
 *   POST /v1/ids:next        {"count": N, "caller": "...", "public": true},
 *                            all optional; "public" adds "public":[...],
 *                            each ID's public ID, when keys are loaded
 *   GET  /v1/ids/{id}        the decoded ID, libidgen's one JSON shape
 *   GET  /v1/ids:min?at=T    {"id": "..."}, the smallest ID of T's ms
 *   GET  /v1/public/{pub}    the ID a public ID stands for, decoded as
 *                            /v1/ids/{id} answers it (Documentation/design.md
 *                            section 10)
 *   GET  /livez, /readyz
 *   GET  /metrics            Prometheus text (metrics.h)
 *
 * Errors are {"error":{"code":"...","message":"..."}} (api.c lists the
 * codes); HEAD is taken wherever GET is.  A caller over its quota
 * (quota.h) gets 429 with Retry-After before the generator is asked.
 */
#ifndef HTTPD_API_H
#define HTTPD_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idgen.h"
#include "metrics.h"
#include "minter.h"
#include "quota.h"
#include "readiness.h"

struct lane;
struct api_deferred;
struct tls;

#define API_MAX_BODY	4096	/* bytes of a request body */
#define API_MAX_COUNT	10000	/* IDs per request */
#define API_MAX_CALLER	64	/* bytes of a caller's name */

struct api {
	struct minter *minter;
	const struct idgen_layouts *layouts;	/* NULL: version 1 alone */
	struct readiness_config ready;
	struct metrics *metrics;
	struct quota *quota;			/* NULL: no caller limited */
	const struct idgen_keyring *keyring;	/* NULL: no public IDs */
	struct lane *lane;			/* NULL: every request minted inline */
	struct tls *tls;			/* NULL: plaintext listeners */
};

struct api_request {
	const char *method;
	const char *path;		/* percent-decoded, without the query */
	const char *at;			/* the query's "at", or NULL */
	const char *content_type;	/* or NULL */
	const char *body;		/* body_len bytes, then a NUL */
	size_t body_len;
	bool body_too_large;		/* more than API_MAX_BODY bytes came */
	/* The client certificate's caller (next.h's next_ask), or NULL. */
	const char *authenticated;
};

struct api_response {
	unsigned int status;
	char *body;			/* malloc()ed JSON; NULL when out of memory */
	size_t len;
	const char *allow;		/* the Allow header of a 405, or NULL */
	unsigned int retry_after;	/* seconds, 0 for no Retry-After */
	const char *content_type;	/* application/json unless /metrics */
	enum metrics_route route;	/* for idgen_requests_total */
	/* The IDs body carries: issued once all of it is sent, else lost. */
	struct metrics_answer answer;
	/*
	 * Not NULL: no answer yet (status 0, body NULL).  A POST
	 * /v1/ids:next of LANE_MIN_COUNT IDs or more, to be minted on the
	 * api's lane (lane.h): set the connection aside, then api_defer().
	 */
	struct api_deferred *deferred;
};


/*
 * A caller's name: 1 to API_MAX_CALLER of A-Z a-z 0-9 . _ : - (so that
 * it can be a metrics label as it is).
 */
bool api_caller_valid(const char *s, size_t len);

/*
 * Answer a request.  Returns 0, or -ENOMEM when even the error answer
 * could not be built (the caller then closes the connection).
 */
int api_handle(struct api *api, const struct api_request *rq,
	       struct api_response *out);

/*
 * Mint a deferred request's IDs on the lane and make its answer; then
 * resume(arg), once, from the lane's thread or this one.  The connection
 * must be set aside before: resume() may come before this returns.  fd,
 * the client's socket (or -1), is watched meanwhile: a client that can
 * no longer read gets no more IDs minted, and no answer, and the IDs
 * minted for it count as lost; one that only shut its sending side is
 * answered.
 */
void api_defer(struct api_deferred *d, int fd, void (*resume)(void *arg), void *arg);

/*
 * After resume(): the answer into out, and d freed.  0, or -ENOMEM when
 * no answer could be made (the caller closes the connection).
 */
int api_deferred_answer(struct api_deferred *d, struct api_response *out);

/*
 * After resume(), when the answer cannot be sent (the connection closed
 * first): d freed.  The IDs minted for it are holes, charged to the
 * caller's quota, and counted as lost.
 */
void api_deferred_drop(struct api_deferred *d);

/*
 * Instead of api_defer(), when the connection closed first: nothing was
 * minted, and the caller's quota gets back what it took.  d freed.
 */
void api_deferred_cancel(struct api_deferred *d);

#endif /* HTTPD_API_H */

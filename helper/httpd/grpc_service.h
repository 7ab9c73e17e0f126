/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The gRPC face's methods (Documentation/design.md section 9.2,
 * proto/idgen/v1/idgen.proto), apart from HTTP/2: a request message in, a
 * status and a response message out.  They share the HTTP API's minter, quotas,
 * bulk lane, readiness and metrics (api.h): one service, two faces.
 *
 *   /idgen.v1.IdGen/NextIds        count IDs (0 means 1; 1..10000)
 *   /idgen.v1.IdGen/DecodeId       an ID decoded, no minting
 *   /idgen.v1.IdGen/MinIdAt        the smallest ID of a millisecond
 *   /grpc.health.v1.Health/Check   SERVING exactly when /readyz is 200
 *   /grpc.health.v1.Health/Watch   ... and each change (grpc_health.c)
 *
 * Statuses: INVALID_ARGUMENT for bad input (no ID is consumed: it is
 * refused before the quota and the generator), RESOURCE_EXHAUSTED over a
 * caller's quota and UNAVAILABLE for the generator's refusals (both with
 * a push-back), DEADLINE_EXCEEDED when the caller's deadline passes
 * before its IDs are minted, UNIMPLEMENTED for any other method, NOT_FOUND
 * for a health check of a service not served.
 */
#ifndef HTTPD_GRPC_SERVICE_H
#define HTTPD_GRPC_SERVICE_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "grpc_wire.h"
#include "metrics.h"

/* The method a request's :path names (enum metrics_grpc_method). */
enum metrics_grpc_method grpc_method_of(const char *path, size_t len);

/* The reply to a call: a status, and with GRPC_OK a message. */
struct grpc_reply {
	enum grpc_code code;
	const char *text;		/* the status message: fixed text, or NULL */
	int64_t pushback_ms;		/* grpc-retry-pushback-ms; -1: none */
	uint8_t *msg;			/* malloc()ed, the message's bytes */
	size_t len;
};

struct grpc_next;

/*
 * Answer a unary call of method m (not a health Watch) to the request
 * message req (len bytes).  deadline_ns (CLOCK_MONOTONIC; 0: none) is
 * the caller's; authenticated, the caller the connection's client
 * certificate proves, or NULL (next.h's next_ask).  0 with *out made; 1 when the call is a large NextIds
 * to be minted on the lane: *d is set, nothing in *out, and
 * grpc_next_submit(*d) follows; or -ENOMEM.
 */
int grpc_call(struct api *api, enum metrics_grpc_method m, const uint8_t *req,
	      size_t len, uint64_t deadline_ns, const char *authenticated,
	      struct grpc_reply *out, struct grpc_next **d);

/*
 * Mint d on the lane; done(d, arg) once it is, on the lane's thread or
 * this one (then before this returns).
 */
void grpc_next_submit(struct grpc_next *d, void (*done)(struct grpc_next *d, void *arg),
		      void *arg);

/* The IDs d asks for. */
size_t grpc_next_count(const struct grpc_next *d);

/* The caller is gone: the lane mints no more for d (any thread). */
void grpc_next_cancel(struct grpc_next *d);

/*
 * After done: d's reply into *out, and d freed.  With a cancelled d,
 * nothing is answered: the IDs minted before the cancel are holes,
 * charged to the caller's quota (they took the node's time), the rest
 * are given back.
 */
void grpc_next_finish(struct grpc_next *d, struct grpc_reply *out);

/*
 * A health request (Check or Watch) for req's service: 0 with *status
 * (grpc.health.v1's ServingStatus numbers) for a service served, 1 for
 * another, -EINVAL for a request that is not a HealthCheckRequest.
 */
int grpc_health_status(struct api *api, const uint8_t *req, size_t len, int *status);

/* A HealthCheckResponse of status into out: 0, or -ENOMEM. */
int grpc_health_reply(int status, struct grpc_reply *out);

#endif /* HTTPD_GRPC_SERVICE_H */

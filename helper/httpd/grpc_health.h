/* SPDX-License-Identifier: GPL-2.0 */
/*
 * grpc.health.v1.Health (proto/grpc/health/v1/health.proto), as
 * grpc_health.c serves it: Check answers once, Watch streams the status
 * and each change.  SERVING for the services "" and "idgen.v1.IdGen"
 * exactly when /readyz would answer 200; grpc_health_status() and
 * grpc_health_reply() (grpc_service.h) are its Check, for grpc_call().
 */
#ifndef HTTPD_GRPC_HEALTH_H
#define HTTPD_GRPC_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "grpc/health/v1/health.pb-c.h"

#include "grpc_stream.h"

#define HEALTH_STATUS(s)	GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__##s

/* HealthCheckResponse.ServingStatus: its numbers on the wire, by name. */
enum grpc_health {
	HEALTH_UNKNOWN = HEALTH_STATUS(UNKNOWN),
	HEALTH_SERVING = HEALTH_STATUS(SERVING),
	HEALTH_NOT_SERVING = HEALTH_STATUS(NOT_SERVING),
	/* Watch's only: Check answers NOT_FOUND instead. */
	HEALTH_SERVICE_UNKNOWN = HEALTH_STATUS(SERVICE_UNKNOWN),
};

/* A Watch's request whole: its first status sent, or its error. */
void grpc_watch_begin(struct grpc_stream *st, const uint8_t *msg, size_t len);

/*
 * At a tick: the status now (*ready, asked once a tick: -1 until then),
 * sent if it changed; the Watch ended DEADLINE_EXCEEDED once its
 * grpc-timeout has passed.  0, or -ENOMEM.
 */
int grpc_watch_tick(struct grpc_stream *st, uint64_t now, int *ready);

/* The listener stops: NOT_SERVING, then UNAVAILABLE. */
void grpc_watch_stop(struct grpc_stream *st);

#endif /* HTTPD_GRPC_HEALTH_H */

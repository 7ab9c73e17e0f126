// SPDX-License-Identifier: GPL-2.0
/*
 * grpc.health.v1.Health (grpc_health.h): Check for grpc_call(), Watch on
 * the listener's streams.  A Watch sends its first status at once, then
 * a new one at the first tick (GRPC_TICK_MS) that finds readiness
 * changed; it ends DEADLINE_EXCEEDED at the first tick past its
 * grpc-timeout, and UNAVAILABLE, told NOT_SERVING first, when the
 * listener stops.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_health.h"
#include "grpc_service.h"
#include "grpc_wire.h"
#include "monotonic.h"
#include "readiness.h"

/* The services served: idgen's, and "" for the server as a whole. */
static bool served(const char *service)
{
	return !strcmp(service, "") || !strcmp(service, "idgen.v1.IdGen");
}

int grpc_health_status(struct api *api, const uint8_t *req, size_t len, int *status)
{
	const ProtobufCMessageDescriptor *desc =
		&grpc__health__v1__health_check_request__descriptor;
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(desc, "service");
	Grpc__Health__V1__HealthCheckRequest *rq;
	char verdict[2048];
	size_t vlen;
	bool ours;

	rq = grpc__health__v1__health_check_request__unpack(NULL, len, req);
	if (!rq)
		return -EINVAL;
	/*
	 * protobuf-c's service ends at its first NUL: "idgen.v1.IdGen\0x"
	 * would compare equal.  A name with a NUL is no service here.
	 */
	ours = served(rq->service) && !grpc_pb_string_has_nul(req, len, f->id);
	grpc__health__v1__health_check_request__free_unpacked(rq, NULL);
	if (!ours)
		return 1;
	*status = readiness_check(&api->ready, api->minter, verdict, sizeof(verdict), &vlen) ?
		  HEALTH_SERVING : HEALTH_NOT_SERVING;
	return 0;
}

int grpc_health_reply(int status, struct grpc_reply *out)
{
	Grpc__Health__V1__HealthCheckResponse resp =
		GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
	size_t len;

	memset(out, 0, sizeof(*out));
	out->pushback_ms = -1;
	resp.status = status;
	len = protobuf_c_message_get_packed_size(&resp.base);
	out->msg = malloc(len ? len : 1);
	if (!out->msg)
		return -ENOMEM;
	out->len = protobuf_c_message_pack(&resp.base, out->msg);
	out->code = GRPC_OK;
	return 0;
}

/* A Watch's next status, when it changed: 0, or -ENOMEM. */
static int watch_send(struct grpc_stream *st, int status)
{
	struct grpc_reply r;
	int ret;

	if (status == st->watch)
		return 0;
	ret = grpc_health_reply(status, &r);
	if (ret)
		return ret;
	ret = grpc_stream_send(st, r.msg, r.len);
	free(r.msg);
	if (ret)
		return ret;
	st->watch = status;
	return 0;
}

void grpc_watch_begin(struct grpc_stream *st, const uint8_t *msg, size_t len)
{
	int status;

	if (st->deadline_ns && monotonic_ns() >= st->deadline_ns) {
		grpc_stream_status(st, GRPC_DEADLINE_EXCEEDED, "the deadline passed before "
				   "the call was read");
		return;
	}
	switch (grpc_health_status(st->c->api, msg, len, &status)) {
	case 0:
		break;
	case 1:
		/* health.proto: the Watch goes on, should the service appear. */
		status = HEALTH_SERVICE_UNKNOWN;
		break;
	default:
		grpc_stream_status(st, GRPC_INVALID_ARGUMENT, "the request is not a "
				   "HealthCheckRequest message");
		return;
	}
	if (watch_send(st, status)) {
		grpc_stream_status(st, GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	grpc_stream_open(st);
	if (grpc_conn_stopping(st->c))
		grpc_stream_end(st, GRPC_UNAVAILABLE, "the server is stopping");
}

/* Readiness at this tick, asked once for every Watch of the listener. */
static int readiness_now(struct grpc_stream *st, int *ready)
{
	int status;

	if (st->watch == HEALTH_SERVICE_UNKNOWN)
		return HEALTH_SERVICE_UNKNOWN;
	if (*ready < 0) {
		/* An empty HealthCheckRequest: the service "" */
		if (grpc_health_status(st->c->api, (const uint8_t *)"", 0, &status))
			status = HEALTH_NOT_SERVING;
		*ready = status;
	}
	return *ready;
}

int grpc_watch_tick(struct grpc_stream *st, uint64_t now, int *ready)
{
	if (st->method != GRPC_HEALTH_WATCH || st->watch < 0 || st->end)
		return 0;
	if (grpc_conn_stopping(st->c)) {
		grpc_watch_stop(st);
		return 0;
	}
	if (st->deadline_ns && now >= st->deadline_ns) {
		grpc_stream_end(st, GRPC_DEADLINE_EXCEEDED, "the deadline passed");
		return 0;
	}
	return watch_send(st, readiness_now(st, ready));
}

void grpc_watch_stop(struct grpc_stream *st)
{
	if (st->method != GRPC_HEALTH_WATCH || st->watch < 0 || st->end)
		return;
	if (st->watch != HEALTH_SERVICE_UNKNOWN)
		watch_send(st, HEALTH_NOT_SERVING);	/* going away */
	grpc_stream_end(st, GRPC_UNAVAILABLE, "the server is stopping");
}

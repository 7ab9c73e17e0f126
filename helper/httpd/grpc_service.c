// SPDX-License-Identifier: GPL-2.0
/*
 * The gRPC face's methods (grpc_service.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "google/protobuf/timestamp.pb-c.h"
#include "idgen/v1/idgen.pb-c.h"

#include "grpc_service.h"
#include "idgen.h"
#include "monotonic.h"
#include "next.h"
#include "readiness.h"

static const struct {
	const char *path;
	enum metrics_grpc_method m;
} methods[] = {
	{ "/idgen.v1.IdGen/NextIds", GRPC_NEXT_IDS },
	{ "/idgen.v1.IdGen/DecodeId", GRPC_DECODE_ID },
	{ "/idgen.v1.IdGen/MinIdAt", GRPC_MIN_ID_AT },
	{ "/grpc.health.v1.Health/Check", GRPC_HEALTH_CHECK },
	{ "/grpc.health.v1.Health/Watch", GRPC_HEALTH_WATCH },
};

enum metrics_grpc_method grpc_method_of(const char *path, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strlen(methods[i].path) == len && !memcmp(methods[i].path, path, len))
			return methods[i].m;
	return GRPC_OTHER;
}

/* A status without a message: 0 (the reply is made). */
static int status(struct grpc_reply *out, enum grpc_code code, const char *text)
{
	out->code = code;
	out->text = text;
	return 0;
}

/* m packed into out, status OK: 0, or -ENOMEM. */
static int pack(const ProtobufCMessage *m, struct grpc_reply *out)
{
	size_t len = protobuf_c_message_get_packed_size(m);

	out->msg = malloc(len ? len : 1);
	if (!out->msg)
		return -ENOMEM;
	out->len = protobuf_c_message_pack(m, out->msg);
	return status(out, GRPC_OK, NULL);
}

/* NextIdsRequest's caller, its field number in proto/idgen/v1/idgen.proto. */
#define NEXT_IDS_REQUEST_CALLER	2

/* A NextIds for the lane. */
struct grpc_next {
	struct next n;			/* first: the lane's done finds d by it */
	void (*done)(struct grpc_next *d, void *arg);
	void *arg;
};

/* The reply to n, its status final: 0, or -ENOMEM. */
static int next_reply(const struct next *n, struct grpc_reply *out)
{
	Idgen__V1__NextIdsResponse resp = IDGEN__V1__NEXT_IDS_RESPONSE__INIT;
	const struct next_status_text *t = next_text(n->status);
	struct idgen_decoded dec;

	if (n->status != NEXT_OK) {
		if (n->retry_after_ms)
			out->pushback_ms = n->retry_after_ms;
		return status(out, t->grpc, t->message);
	}
	/* An ID is sfixed64 on the wire: a generator's ID is below 2^63. */
	resp.n_ids = n->job.count;
	resp.ids = (int64_t *)n->job.ids;
	idgen_decode(n->job.ids[0], n->api->layouts, &dec);
	resp.layout_version = dec.version;
	return pack(&resp.base, out);
}

static int next_ids(struct api *api, const uint8_t *req, size_t len,
		    uint64_t deadline_ns, const char *authenticated,
		    struct grpc_reply *out, struct grpc_next **deferred)
{
	struct next_ask ask = {
		.deadline_ns = deadline_ns, .fd = -1, .authenticated = authenticated,
	};
	Idgen__V1__NextIdsRequest *rq;
	struct grpc_next *d;
	enum next_status st;
	struct next n;
	int ret;

	rq = idgen__v1__next_ids_request__unpack(NULL, len, req);
	if (!rq)
		return status(out, GRPC_INVALID_ARGUMENT, "the request is not a "
			      "NextIdsRequest message");
	/*
	 * protobuf-c's caller ends at its first NUL: "ab\0cd" would be served
	 * as "ab", and "\0ab" as no caller at all.  The HTTP API refuses a NUL.
	 */
	if (grpc_pb_string_has_nul(req, len, NEXT_IDS_REQUEST_CALLER)) {
		const struct next_status_text *t = next_text(NEXT_INVALID_CALLER);

		idgen__v1__next_ids_request__free_unpacked(rq, NULL);
		return status(out, t->grpc, t->message);
	}
	/* proto3: 0 is the field left out, and means 1; so does "" for none. */
	ask.count = rq->count ? rq->count : 1;
	if (rq->caller[0]) {
		ask.caller = rq->caller;
		ask.caller_len = strlen(rq->caller);
	}
	st = next_start(api, &ask, &n);
	idgen__v1__next_ids_request__free_unpacked(rq, NULL);
	if (st == NEXT_PENDING) {
		d = malloc(sizeof(*d));
		if (!d) {
			next_end(&n, false);
			return -ENOMEM;
		}
		d->n = n;
		*deferred = d;
		return 1;
	}
	ret = next_reply(&n, out);
	next_end(&n, !ret && n.status == NEXT_OK);
	return ret;
}

static void lane_done(struct next *n)
{
	struct grpc_next *d = (struct grpc_next *)n;

	d->done(d, d->arg);
}

void grpc_next_submit(struct grpc_next *d, void (*done)(struct grpc_next *d, void *arg),
		      void *arg)
{
	d->done = done;
	d->arg = arg;
	next_submit(&d->n, lane_done);
}

size_t grpc_next_count(const struct grpc_next *d)
{
	return d->n.job.count;
}

void grpc_next_cancel(struct grpc_next *d)
{
	next_cancel(&d->n);
}

void grpc_next_finish(struct grpc_next *d, struct grpc_reply *out)
{
	memset(out, 0, sizeof(*out));
	out->pushback_ms = -1;
	/* Cancelled after the lane was done, or before it began: gone too. */
	if (atomic_load(&d->n.job.cancelled))
		d->n.status = NEXT_CLIENT_GONE;
	if (d->n.status == NEXT_CLIENT_GONE) {
		next_end(&d->n, false);		/* nothing is answered */
	} else if (next_reply(&d->n, out)) {
		next_end(&d->n, false);
		status(out, GRPC_RESOURCE_EXHAUSTED, "out of memory");
	} else {
		next_end(&d->n, d->n.status == NEXT_OK);
	}
	free(d);
}

static int decode_id(struct api *api, const uint8_t *req, size_t len,
		     struct grpc_reply *out)
{
	Idgen__V1__DecodeIdRequest *rq;
	Idgen__V1__DecodedId resp = IDGEN__V1__DECODED_ID__INIT;
	Google__Protobuf__Timestamp at = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	struct idgen_decoded dec;
	int64_t id;

	rq = idgen__v1__decode_id_request__unpack(NULL, len, req);
	if (!rq)
		return status(out, GRPC_INVALID_ARGUMENT, "the request is not a "
			      "DecodeIdRequest message");
	id = rq->id;
	idgen__v1__decode_id_request__free_unpacked(rq, NULL);
	if (id < 0 || idgen_decode((uint64_t)id, api->layouts, &dec))
		return status(out, GRPC_INVALID_ARGUMENT, "a negative number is no ID");
	at.seconds = dec.unix_ms / 1000;
	at.nanos = dec.unix_ms % 1000 * 1000000;
	resp.id = id;
	resp.created_at = &at;
	resp.region = dec.region;
	resp.worker = dec.worker;
	resp.sequence = dec.seq;
	resp.layout_version = dec.version;
	return pack(&resp.base, out);
}

static int min_id_at(const uint8_t *req, size_t len, struct grpc_reply *out)
{
	Idgen__V1__MinIdAtRequest *rq;
	Idgen__V1__MinIdAtResponse resp = IDGEN__V1__MIN_ID_AT_RESPONSE__INIT;
	int64_t seconds, unix_ms;
	int32_t nanos;
	uint64_t id;
	bool given;

	rq = idgen__v1__min_id_at_request__unpack(NULL, len, req);
	if (!rq)
		return status(out, GRPC_INVALID_ARGUMENT, "the request is not a "
			      "MinIdAtRequest message");
	given = rq->at;
	seconds = given ? rq->at->seconds : 0;
	nanos = given ? rq->at->nanos : 0;
	idgen__v1__min_id_at_request__free_unpacked(rq, NULL);
	if (!given)
		return status(out, GRPC_INVALID_ARGUMENT, "at is required");
	if (nanos < 0 || nanos > 999999999)
		return status(out, GRPC_INVALID_ARGUMENT, "at.nanos must be from 0 to "
			      "999999999");
	/* Beyond these, the time is past the field's end anyway. */
	if (seconds < 0 || seconds > (int64_t)(LIBIDGEN_EPOCH_UNIX_MS + LIBIDGEN_MS_MAX) / 1000)
		return status(out, GRPC_INVALID_ARGUMENT, "at lies outside the times an "
			      "ID can carry, 2026-01-01T00:00:00Z to "
			      "2095-09-07T15:47:35.551Z");
	unix_ms = seconds * 1000 + nanos / 1000000;
	if (unix_ms < (int64_t)LIBIDGEN_EPOCH_UNIX_MS || idgen_min_id_at(unix_ms, &id))
		return status(out, GRPC_INVALID_ARGUMENT, "at lies outside the times an "
			      "ID can carry, 2026-01-01T00:00:00Z to "
			      "2095-09-07T15:47:35.551Z");
	resp.id = (int64_t)id;
	return pack(&resp.base, out);
}

int grpc_call(struct api *api, enum metrics_grpc_method m, const uint8_t *req,
	      size_t len, uint64_t deadline_ns, const char *authenticated,
	      struct grpc_reply *out, struct grpc_next **d)
{
	int st;

	memset(out, 0, sizeof(*out));
	out->pushback_ms = -1;
	if (deadline_ns && monotonic_ns() >= deadline_ns)
		return status(out, GRPC_DEADLINE_EXCEEDED, "the deadline passed before "
			      "the call was read");
	switch (m) {
	case GRPC_NEXT_IDS:
		return next_ids(api, req, len, deadline_ns, authenticated, out, d);
	case GRPC_DECODE_ID:
		return decode_id(api, req, len, out);
	case GRPC_MIN_ID_AT:
		return min_id_at(req, len, out);
	case GRPC_HEALTH_CHECK:
		switch (grpc_health_status(api, req, len, &st)) {
		case 0:
			return grpc_health_reply(st, out);
		case 1:
			return status(out, GRPC_NOT_FOUND, "no such service here");
		default:
			return status(out, GRPC_INVALID_ARGUMENT, "the request is not a "
				      "HealthCheckRequest message");
		}
	default:
		return status(out, GRPC_UNIMPLEMENTED, "no such method");
	}
}

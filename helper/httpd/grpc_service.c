// SPDX-License-Identifier: GPL-2.0
/*
 * The gRPC face's methods (grpc_service.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "google/protobuf/timestamp.pb-c.h"
#include "grpc/health/v1/health.pb-c.h"
#include "idgen/v1/idgen.pb-c.h"

#include "grpc_service.h"
#include "idgen.h"
#include "lane.h"
#include "monotonic.h"
#include "quota.h"
#include "readiness.h"

#define SERVING		GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
#define NOT_SERVING	GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING

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

/* A NextIds past its checks, on the lane or minted inline. */
struct grpc_next {
	struct lane_job job;		/* the IDs: job.ids, job.count */
	struct api *api;
	char caller[API_MAX_CALLER + 1];
	unsigned int qi;		/* the caller's bucket, and what the */
	uint64_t tat;			/* take stored, for a refund */
	void (*done)(struct grpc_next *d, void *arg);
	void *arg;
};

/* n of the IDs taken from the caller's quota, never minted: back to it. */
static void give_back(struct grpc_next *d, size_t n)
{
	if (d->api->quota && n)
		quota_refund(d->api->quota, d->qi, n, d->tat, monotonic_ns());
}

/*
 * The reply to d, its IDs minted (err 0) or not (a negative errno); frees
 * d->job.ids.  0, or -ENOMEM.
 */
static int next_reply(struct grpc_next *d, int err, struct grpc_reply *out)
{
	Idgen__V1__NextIdsResponse resp = IDGEN__V1__NEXT_IDS_RESPONSE__INIT;
	struct idgen_decoded dec;
	struct api_refusal r;
	int ret;

	if (err) {
		free(d->job.ids);
		/* Those minted before the refusal took the node's time. */
		give_back(d, d->job.count - d->job.got);
		if (err == -ETIMEDOUT)
			return status(out, GRPC_DEADLINE_EXCEEDED, "the deadline passed "
				      "before the IDs were minted");
		api_refusal(err, &r);
		out->pushback_ms = r.retry_after_s * 1000ULL;
		return status(out, GRPC_UNAVAILABLE, r.message);
	}
	/* An ID is sfixed64 on the wire: a generator's ID is below 2^63. */
	resp.n_ids = d->job.count;
	resp.ids = (int64_t *)d->job.ids;
	idgen_decode(d->job.ids[0], d->api->layouts, &dec);
	resp.layout_version = dec.version;
	ret = pack(&resp.base, out);
	free(d->job.ids);
	if (ret) {
		give_back(d, d->job.count);
		return ret;
	}
	if (d->api->metrics)
		metrics_issued(d->api->metrics, d->caller[0] ? d->caller : NULL,
			       d->job.count);
	return 0;
}

static int next_ids(struct api *api, const uint8_t *req, size_t len,
		    uint64_t deadline_ns, struct grpc_reply *out, struct grpc_next **deferred)
{
	Idgen__V1__NextIdsRequest *rq;
	struct grpc_next next = { .api = api }, *d;
	uint64_t wait_ns, burst;
	size_t count;

	rq = idgen__v1__next_ids_request__unpack(NULL, len, req);
	if (!rq)
		return status(out, GRPC_INVALID_ARGUMENT, "the request is not a "
			      "NextIdsRequest message");
	count = rq->count ? rq->count : 1;
	if (count > API_MAX_COUNT) {
		idgen__v1__next_ids_request__free_unpacked(rq, NULL);
		return status(out, GRPC_INVALID_ARGUMENT, "count must be from 1 to 10000 "
			      "(0 means 1)");
	}
	if (rq->caller[0] && !api_caller_valid(rq->caller, strlen(rq->caller))) {
		idgen__v1__next_ids_request__free_unpacked(rq, NULL);
		return status(out, GRPC_INVALID_ARGUMENT, "caller must be empty, or 1 to 64 "
			      "letters, digits, '.', '_', ':' or '-'");
	}
	strcpy(next.caller, rq->caller);
	idgen__v1__next_ids_request__free_unpacked(rq, NULL);
	next.job.count = count;

	if (api->quota) {
		next.qi = quota_caller_index(api->quota, next.caller[0] ? next.caller : NULL);
		switch (quota_take(api->quota, next.qi, count, monotonic_ns(), &wait_ns,
				   &burst, &next.tat)) {
		case QUOTA_TAKEN:
			break;
		case QUOTA_OVER_BURST:
			return status(out, GRPC_INVALID_ARGUMENT, "count exceeds this "
				      "caller's burst: ask for fewer IDs at once");
		case QUOTA_WAIT:
			/* In ms, rounded up: a client that waits as told gets in. */
			out->pushback_ms = (wait_ns + 999999) / 1000000;
			return status(out, GRPC_RESOURCE_EXHAUSTED, "this caller's quota "
				      "of IDs is used up for now");
		}
	}
	next.job.ids = malloc(count * sizeof(*next.job.ids));
	if (!next.job.ids) {
		give_back(&next, count);
		return -ENOMEM;
	}
	if (api->lane && count >= LANE_MIN_COUNT) {
		d = malloc(sizeof(*d));
		if (!d) {
			free(next.job.ids);
			give_back(&next, count);
			return -ENOMEM;
		}
		*d = next;
		d->job.fd = -1;		/* a stream, not a socket: cancelled instead */
		d->job.deadline_ns = deadline_ns;
		*deferred = d;
		return 1;
	}
	return next_reply(&next, minter_mint_all(api->minter, next.job.ids, count), out);
}

static void lane_done(struct lane_job *job)
{
	struct grpc_next *d = (struct grpc_next *)job;

	d->done(d, d->arg);
}

void grpc_next_submit(struct grpc_next *d, void (*done)(struct grpc_next *d, void *arg),
		      void *arg)
{
	d->done = done;
	d->arg = arg;
	d->job.done = lane_done;
	lane_submit(d->api->lane, &d->job);
}

size_t grpc_next_count(const struct grpc_next *d)
{
	return d->job.count;
}

void grpc_next_cancel(struct grpc_next *d)
{
	atomic_store(&d->job.cancelled, true);
}

void grpc_next_finish(struct grpc_next *d, struct grpc_reply *out)
{
	memset(out, 0, sizeof(*out));
	out->pushback_ms = -1;
	if (atomic_load(&d->job.cancelled)) {
		/* A reset stream: those minted are lost, the rest given back. */
		free(d->job.ids);
		give_back(d, d->job.count - d->job.got);
		metrics_ids_lost(d->api->metrics, d->job.got);
	} else if (next_reply(d, d->job.err, out)) {
		status(out, GRPC_RESOURCE_EXHAUSTED, "out of memory");
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
	      size_t len, uint64_t deadline_ns, struct grpc_reply *out,
	      struct grpc_next **d)
{
	int st;

	memset(out, 0, sizeof(*out));
	out->pushback_ms = -1;
	if (deadline_ns && monotonic_ns() >= deadline_ns)
		return status(out, GRPC_DEADLINE_EXCEEDED, "the deadline passed before "
			      "the call was read");
	switch (m) {
	case GRPC_NEXT_IDS:
		return next_ids(api, req, len, deadline_ns, out, d);
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

int grpc_health_status(struct api *api, const uint8_t *req, size_t len, int *st)
{
	Grpc__Health__V1__HealthCheckRequest *rq;
	char verdict[2048];
	size_t vlen;
	bool ours;

	rq = grpc__health__v1__health_check_request__unpack(NULL, len, req);
	if (!rq)
		return -EINVAL;
	ours = !strcmp(rq->service, "") || !strcmp(rq->service, "idgen.v1.IdGen");
	grpc__health__v1__health_check_request__free_unpacked(rq, NULL);
	if (!ours)
		return 1;
	*st = readiness_check(&api->ready, api->minter, verdict, sizeof(verdict), &vlen) ?
	      SERVING : NOT_SERVING;
	return 0;
}

int grpc_health_reply(int st, struct grpc_reply *out)
{
	Grpc__Health__V1__HealthCheckResponse resp =
		GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;

	memset(out, 0, sizeof(*out));
	out->pushback_ms = -1;
	resp.status = st;
	return pack(&resp.base, out);
}

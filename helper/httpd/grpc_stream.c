// SPDX-License-Identifier: GPL-2.0
/*
 * A connection's streams (grpc_stream.h).
 *
 * A request is judged as it comes, never held whole before it is: its
 * headers once they are all in; its message's 5-byte prefix as soon as
 * it is (a length past GRPC_MAX_MESSAGE, past what the connection may
 * still buffer, or a Compressed-Flag not taken is answered at once and
 * the stream reset, so nothing of such a message is kept); the message
 * into a buffer of the length announced; the call when the peer ends its
 * side of the stream.
 *
 * A stream that ends before its call does (RST_STREAM, the connection
 * gone) cancels the call: the lane stops minting for it and its unminted
 * IDs go back to the caller's quota.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "grpc_health.h"
#include "grpc_service.h"
#include "grpc_stream.h"
#include "monotonic.h"

_Static_assert(GRPC_MAX_MESSAGE == 4096, "the texts below say 4096 bytes");
_Static_assert(GRPC_MAX_BUFFERED == 65536, "the texts below say 64 KiB");

/* Every listener's large answers not yet read (GRPC_MAX_OWED_TOTAL). */
static _Atomic size_t owed_total;

static void count(struct grpc_stream *st, enum grpc_code code)
{
	struct api *api = st->c->api;

	if (st->counted || !api->metrics)
		return;
	st->counted = true;
	metrics_grpc(api->metrics, st->method, code, monotonic_ns() - st->start_ns);
}

/* The request's message, done with (read, or refused). */
static void request_free(struct grpc_stream *st)
{
	if (!st->req)
		return;
	st->c->buffered -= st->req_len;
	free(st->req);
	st->req = NULL;
}

static void stream_free(struct grpc_stream *st)
{
	if (st->owed) {
		st->c->owed -= st->owed;
		atomic_fetch_sub(&owed_total, st->owed);
	}
	request_free(st);
	free(st->body);
	free(st);
}

/* --- answers ------------------------------------------------------------ */

/* A header field; name and value are NUL-terminated, value is copied. */
static nghttp2_nv field(const char *name, const char *value)
{
	return (nghttp2_nv) {
		.name = (uint8_t *)name, .value = (uint8_t *)value,
		.namelen = strlen(name), .valuelen = strlen(value),
		.flags = NGHTTP2_NV_FLAG_NO_COPY_NAME,
	};
}

/* A status's texts, until the fields that point to them are submitted. */
struct status_text {
	char code[4];
	char message[512];
};

/* A status's fields at nv, grpc-status and, with text, grpc-message: how many. */
static size_t status_fields(nghttp2_nv *nv, struct status_text *t, enum grpc_code code,
			    const char *text)
{
	snprintf(t->code, sizeof(t->code), "%d", code);
	nv[0] = field("grpc-status", t->code);
	if (!text)
		return 1;
	grpc_message_encode(text, t->message, sizeof(t->message));
	nv[1] = field("grpc-message", t->message);
	return 2;
}

static ssize_t body_read_cb(nghttp2_session *session, int32_t id, uint8_t *buf,
			    size_t len, uint32_t *flags, nghttp2_data_source *source,
			    void *user)
{
	struct grpc_stream *st = source->ptr;
	struct grpc_conn *c = user;
	size_t n = st->body_len - st->body_off;
	nghttp2_nv trailers[2];
	struct status_text t;

	if (n > len)
		n = len;
	if (n) {
		memcpy(buf, st->body + st->body_off, n);
		st->body_off += n;
		c->queued -= n;
		c->last_send_ns = monotonic_ns();	/* the peer takes its answers */
	}
	if (st->body_off < st->body_len)
		return n;
	free(st->body);
	st->body = NULL;
	st->body_len = st->body_off = 0;
	if (!st->end) {
		if (n)
			return n;
		st->deferred = true;
		return NGHTTP2_ERR_DEFERRED;
	}
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (!nghttp2_submit_trailer(session, id, trailers,
				    status_fields(trailers, &t, st->code, st->text)))
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
	return n;
}

/*
 * The response's headers, and with no message the status in them
 * (trailers-only).  http_status 200 unless the request was not gRPC.
 */
static void respond(struct grpc_stream *st, unsigned int http_status, enum grpc_code code,
		    const char *text, int64_t pushback_ms, bool with_body)
{
	struct grpc_conn *c = st->c;
	nghttp2_data_provider prd = { .source.ptr = st, .read_callback = body_read_cb };
	char status[4], pushback[24];
	struct status_text t;
	nghttp2_nv nv[6];
	size_t n = 0;

	snprintf(status, sizeof(status), "%u", http_status);
	nv[n++] = field(":status", status);
	nv[n++] = field("content-type", "application/grpc");
	nv[n++] = field("grpc-accept-encoding", "identity");
	st->answered = true;
	if (with_body) {
		if (nghttp2_submit_response(c->session, st->id, nv, n, &prd))
			nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, st->id,
						  NGHTTP2_INTERNAL_ERROR);
		return;
	}
	n += status_fields(nv + n, &t, code, text);
	if (pushback_ms >= 0) {
		snprintf(pushback, sizeof(pushback), "%lld", (long long)pushback_ms);
		nv[n++] = field("grpc-retry-pushback-ms", pushback);
	}
	if (nghttp2_submit_response(c->session, st->id, nv, n, NULL))
		nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, st->id,
					  NGHTTP2_INTERNAL_ERROR);
	count(st, code);
	request_free(st);
}

void grpc_stream_status(struct grpc_stream *st, enum grpc_code code, const char *text)
{
	respond(st, 200, code, text, -1, false);
}

void grpc_stream_open(struct grpc_stream *st)
{
	respond(st, 200, GRPC_OK, NULL, -1, true);
}

int grpc_stream_send(struct grpc_stream *st, const uint8_t *msg, size_t len)
{
	uint8_t *b = realloc(st->body, st->body_len + GRPC_PREFIX_LEN + len);

	if (!b)
		return -ENOMEM;
	st->body = b;
	grpc_prefix_write(b + st->body_len, len);
	memcpy(b + st->body_len + GRPC_PREFIX_LEN, msg, len);
	st->body_len += GRPC_PREFIX_LEN + len;
	st->c->queued += GRPC_PREFIX_LEN + len;
	if (st->deferred) {
		st->deferred = false;
		nghttp2_session_resume_data(st->c->session, st->id);
	}
	return 0;
}

void grpc_stream_end(struct grpc_stream *st, enum grpc_code code, const char *text)
{
	st->end = true;
	st->code = code;
	st->text = text;
	count(st, code);
	if (st->deferred) {
		st->deferred = false;
		nghttp2_session_resume_data(st->c->session, st->id);
	}
}

/* A unary call's reply: its message and OK, or its status alone. */
static void reply(struct grpc_stream *st, struct grpc_reply *r)
{
	if (r->code != GRPC_OK) {
		respond(st, 200, r->code, r->text, r->pushback_ms, false);
	} else if (grpc_stream_send(st, r->msg, r->len)) {
		grpc_stream_status(st, GRPC_RESOURCE_EXHAUSTED, "out of memory");
	} else {
		grpc_stream_end(st, GRPC_OK, NULL);
		grpc_stream_open(st);
	}
	free(r->msg);
}

/* --- the lane's calls --------------------------------------------------- */

/* On the lane's thread: back to the listener's. */
static void next_done(struct grpc_next *d, void *arg)
{
	struct grpc_pending *p = arg;
	struct grpc_server *s = p->srv;

	(void)d;
	pthread_mutex_lock(&s->lock);
	list_add_tail(&s->done, &p->node);
	pthread_mutex_unlock(&s->lock);
	eventfd_write(s->wake_fd, 1);
}

void grpc_pending_finish(struct grpc_pending *p)
{
	struct grpc_stream *st = p->st;
	struct grpc_reply r;

	/*
	 * The stream's connection may be closed, not yet freed: no pointer
	 * to p may outlive it.  An answer no one will read is cancelled
	 * before it is finished: its IDs are holes, never issued.
	 */
	if (st)
		st->pending = NULL;
	if (!st || st->c->dead)
		grpc_next_cancel(p->next);
	grpc_next_finish(p->next, &r);
	if (st && !st->c->dead) {
		struct grpc_conn *c = st->c;

		st->owed_since_ns = monotonic_ns();
		reply(st, &r);
		if (grpc_conn_flush(c))
			c->failed = true;	/* closed at its next event or tick */
		grpc_conn_watch(c);
	} else {
		free(r.msg);
	}
	free(p);
}

/*
 * A large NextIds, to the lane; a socketless session has none.  Its
 * answer is held until read: within the connection's and the process's
 * bounds, or refused before any ID is minted for it.
 */
static void to_lane(struct grpc_stream *st, struct grpc_next *d)
{
	struct grpc_conn *c = st->c;
	size_t owed = GRPC_PREFIX_LEN + 16 + grpc_next_count(d) * sizeof(uint64_t);
	bool over = c->owed + owed > GRPC_MAX_OWED;
	struct grpc_pending *p;
	struct grpc_reply r;

	if (!over && atomic_fetch_add(&owed_total, owed) + owed > GRPC_MAX_OWED_TOTAL) {
		atomic_fetch_sub(&owed_total, owed);
		over = true;
	}
	p = !over && c->srv ? calloc(1, sizeof(*p)) : NULL;
	if (!p) {
		if (!over)
			atomic_fetch_sub(&owed_total, owed);
		grpc_next_cancel(d);
		grpc_next_finish(d, &r);	/* cancelled: every ID given back */
		free(r.msg);
		respond(st, 200, GRPC_RESOURCE_EXHAUSTED, over ? "too many IDs owed and "
			"not yet read: read the answers in flight first" : "out of memory",
			over ? 100 : -1, false);
		return;
	}
	st->owed = owed;
	c->owed += owed;
	p->srv = c->srv;
	p->next = d;
	p->st = st;
	st->pending = p;
	st->answered = true;
	grpc_next_submit(d, next_done, p);
}

/* --- requests ----------------------------------------------------------- */

static bool is(const uint8_t *s, size_t len, const char *lit)
{
	return len == strlen(lit) && !memcmp(s, lit, len);
}

static int begin_headers_cb(nghttp2_session *session, const nghttp2_frame *frame,
			    void *user)
{
	struct grpc_conn *c = user;
	struct grpc_stream *st;

	if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	st->id = frame->hd.stream_id;
	st->c = c;
	st->method = GRPC_OTHER;
	st->start_ns = monotonic_ns();
	st->watch = -1;
	list_add(&c->streams, &st->node);
	c->nr_streams++;
	c->last_active_ns = st->start_ns;
	nghttp2_session_set_stream_user_data(session, st->id, st);
	return 0;
}

static int header_cb(nghttp2_session *session, const nghttp2_frame *frame,
		     const uint8_t *name, size_t namelen, const uint8_t *value,
		     size_t valuelen, uint8_t flags, void *user)
{
	struct grpc_stream *st = nghttp2_session_get_stream_user_data(session,
								      frame->hd.stream_id);
	const char *v = (const char *)value;
	uint64_t ns;

	(void)flags;
	(void)user;
	if (!st)
		return 0;
	/* As SETTINGS_MAX_HEADER_LIST_SIZE counts: the bound on HPACK bombs. */
	st->header_bytes += namelen + valuelen + 32;
	if (st->header_bytes > GRPC_MAX_HEADER_LIST)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	if (frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;	/* a client's trailers: nothing of ours */
	if (is(name, namelen, ":method")) {
		st->post = is(value, valuelen, "POST");
	} else if (is(name, namelen, ":path")) {
		st->method = grpc_method_of(v, valuelen);
	} else if (is(name, namelen, "content-type")) {
		st->content_type_ok = grpc_content_type_ok(v, valuelen);
	} else if (is(name, namelen, "grpc-encoding")) {
		st->compression_named = !grpc_encoding_identity(v, valuelen);
	} else if (is(name, namelen, "grpc-timeout")) {
		if (grpc_timeout_parse(v, valuelen, &ns))
			st->bad_timeout = true;
		else
			st->deadline_ns = ns > UINT64_MAX - st->start_ns ? 0 :
					  st->start_ns + ns;
	}
	return 0;
}

/* The request's headers, all in: refused at once if they are not gRPC's. */
static void headers_check(struct grpc_stream *st)
{
	if (!st->post) {
		respond(st, 405, GRPC_INTERNAL, "gRPC takes POST", -1, false);
	} else if (!st->content_type_ok) {
		respond(st, 415, GRPC_INTERNAL, "content-type must be application/grpc or "
			"application/grpc+proto: this service's messages are protobuf",
			-1, false);
	} else if (st->bad_timeout) {
		grpc_stream_status(st, GRPC_INTERNAL, "grpc-timeout is malformed");
	} else if (st->method == GRPC_OTHER) {
		grpc_stream_status(st, GRPC_UNIMPLEMENTED, "no such method: the service is "
				   "idgen.v1.IdGen (NextIds, DecodeId, MinIdAt) and "
				   "grpc.health.v1.Health");
	}
}

/* The message's prefix, all in: false, or true once refused. */
static bool prefix_refused(struct grpc_stream *st)
{
	struct grpc_conn *c = st->c;
	enum grpc_code code;
	const char *why;
	uint32_t len;
	uint8_t flag;

	grpc_prefix_read(st->prefix, &flag, &len);
	/* As grpc-go's recvMsg(): the length, then the flag. */
	if (len > GRPC_MAX_MESSAGE) {
		grpc_stream_status(st, GRPC_RESOURCE_EXHAUSTED, "the request message "
				   "exceeds 4096 bytes");
		return true;
	}
	code = grpc_prefix_check(flag, st->compression_named, &why);
	if (code != GRPC_OK) {
		grpc_stream_status(st, code, why);
		return true;
	}
	if (len > GRPC_MAX_BUFFERED - c->buffered) {
		grpc_stream_status(st, GRPC_RESOURCE_EXHAUSTED, "this connection's requests "
				   "not yet whole exceed 64 KiB: send each message "
				   "whole before the next");
		return true;
	}
	st->req_len = len;
	if (!len)
		return false;
	st->req = malloc(len);
	if (!st->req) {
		grpc_stream_status(st, GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return true;
	}
	c->buffered += len;
	return false;
}

static int data_chunk_cb(nghttp2_session *session, uint8_t flags, int32_t id,
			 const uint8_t *data, size_t len, void *user)
{
	struct grpc_stream *st = nghttp2_session_get_stream_user_data(session, id);
	size_t n;

	(void)user;
	if (!st)
		return 0;
	/* This chunk's frame ends the peer's side: a refusal needs no reset. */
	if (flags & NGHTTP2_FLAG_END_STREAM)
		st->remote_done = true;
	while (!st->answered && len) {
		if (st->prefix_len < GRPC_PREFIX_LEN) {
			n = GRPC_PREFIX_LEN - st->prefix_len;
			n = n < len ? n : len;
			memcpy(st->prefix + st->prefix_len, data, n);
			st->prefix_len += n;
			if (st->prefix_len == GRPC_PREFIX_LEN && prefix_refused(st))
				break;
		} else if (st->req_got < st->req_len) {
			n = st->req_len - st->req_got;
			n = n < len ? n : len;
			memcpy(st->req + st->req_got, data, n);
			st->req_got += n;
		} else {
			grpc_stream_status(st, GRPC_INVALID_ARGUMENT, "a unary call takes "
					   "exactly one whole request message");
			break;
		}
		data += n;
		len -= n;
	}
	return 0;
}

/*
 * The request whole (the peer's END_STREAM): its answer, or its call
 * begun.  The connection is past its handshake.
 */
static void dispatch(struct grpc_stream *st)
{
	struct grpc_conn *c = st->c;
	const uint8_t *msg = st->req ? st->req : (const uint8_t *)"";
	struct grpc_next *d;
	struct grpc_reply r;
	int ret;

	c->served = true;
	if (st->answered)
		return;
	if (!st->prefix_len) {
		grpc_stream_status(st, GRPC_INVALID_ARGUMENT, "a unary call takes one "
				   "request message; none came");
		return;
	}
	if (st->prefix_len < GRPC_PREFIX_LEN || st->req_got < st->req_len) {
		grpc_stream_status(st, GRPC_INVALID_ARGUMENT, "a unary call takes exactly "
				   "one whole request message");
		return;
	}
	if (st->method == GRPC_HEALTH_WATCH) {
		grpc_watch_begin(st, msg, st->req_len);
		request_free(st);
		return;
	}
	ret = grpc_call(c->api, st->method, msg, st->req_len, st->deadline_ns,
			grpc_conn_caller(c), &r, &d);
	request_free(st);
	if (ret < 0)
		grpc_stream_status(st, GRPC_RESOURCE_EXHAUSTED, "out of memory");
	else if (!ret)
		reply(st, &r);
	else
		to_lane(st, d);
}

static int frame_send_cb(nghttp2_session *session, const nghttp2_frame *frame,
			 void *user)
{
	struct grpc_stream *st;

	(void)user;
	if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
	/*
	 * Answered before the peer's side ended: the rest of the request is
	 * not wanted (RFC 9113 section 8.1), and the stream must not hold a
	 * slot while the peer goes on sending.  Not before the answer is
	 * out: nghttp2 drops what a stream being reset has queued.
	 */
	if (st && !st->remote_done && !st->reset) {
		nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, st->id,
					  NGHTTP2_NO_ERROR);
		st->reset = true;
	}
	return 0;
}

void grpc_stream_frame(struct grpc_conn *c, const nghttp2_frame *frame)
{
	struct grpc_stream *st;

	if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
		return;
	st = nghttp2_session_get_stream_user_data(c->session, frame->hd.stream_id);
	if (!st)
		return;
	if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
		st->remote_done = true;
	if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
		headers_check(st);
	if (st->remote_done)
		dispatch(st);
}

static int stream_close_cb(nghttp2_session *session, int32_t id, uint32_t error_code,
			   void *user)
{
	struct grpc_stream *st = nghttp2_session_get_stream_user_data(session, id);
	struct grpc_conn *c = user;

	(void)error_code;
	if (!st)
		return 0;
	if (st->pending) {
		/* The lane finishes it as cancelled; grpc_pending_finish() frees it. */
		st->pending->st = NULL;
		grpc_next_cancel(st->pending->next);
	}
	count(st, GRPC_CANCELLED);	/* no status sent: the client went away */
	c->queued -= st->body_len - st->body_off;
	list_del(&st->node);
	c->nr_streams--;
	c->last_active_ns = monotonic_ns();
	nghttp2_session_set_stream_user_data(session, id, NULL);
	stream_free(st);
	return 0;
}

void grpc_stream_callbacks(nghttp2_session_callbacks *cb)
{
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, begin_headers_cb);
	nghttp2_session_callbacks_set_on_header_callback(cb, header_cb);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, data_chunk_cb);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, stream_close_cb);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb, frame_send_cb);
}

/* --- the listener's rounds ---------------------------------------------- */

void grpc_stream_tick(struct grpc_stream *st, uint64_t now, uint64_t timeout_ns,
		      int *ready)
{
	struct grpc_conn *c = st->c;

	/* A request not whole after timeout_s: reset. */
	if (!st->answered && !st->reset && now - st->start_ns > timeout_ns) {
		nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, st->id,
					  NGHTTP2_CANCEL);
		st->reset = true;
	}
	/*
	 * A large answer not all taken within timeout_s of being ready: a
	 * peer opening its window a byte at a time would otherwise hold
	 * what it is owed, and the budget, for ever.
	 */
	if (st->owed && st->owed_since_ns && now - st->owed_since_ns > timeout_ns)
		c->failed = true;
	if (grpc_watch_tick(st, now, ready))
		c->failed = true;
}

void grpc_stream_stop(struct grpc_stream *st)
{
	grpc_watch_stop(st);
}

void grpc_streams_free(struct grpc_conn *c)
{
	struct grpc_stream *st, *tmp;

	list_for_each_entry_safe(st, tmp, &c->streams, node) {
		if (st->pending) {
			st->pending->st = NULL;
			grpc_next_cancel(st->pending->next);
		}
		count(st, GRPC_CANCELLED);
		list_del(&st->node);
		stream_free(st);
	}
	c->nr_streams = 0;
}

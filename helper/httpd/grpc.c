// SPDX-License-Identifier: GPL-2.0
/*
 * idgen-httpd's gRPC listeners (grpc.h): sockets and an epoll loop, an
 * nghttp2 server session per connection, and the gRPC framing between
 * the session and grpc_service.h's methods.
 *
 * Everything of a listener happens on its thread but the bulk lane's
 * minting; a call the lane finishes comes back through the listener's
 * queue and its eventfd.  A stream that ends before its call does
 * (RST_STREAM, the connection gone) cancels the call: the lane stops
 * minting for it and its unminted IDs go back to the caller's quota.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "grpc.h"
#include "grpc_service.h"
#include "grpc_wire.h"
#include "log.h"
#include "monotonic.h"
#include "server.h"

#define NS_PER_S	1000000000ULL
#define GRPC_MAX_REQUEST (GRPC_PREFIX_LEN + API_MAX_BODY)
#define READ_SIZE	16384
#define MAX_EVENTS	64

/* A call the lane holds: the stream it is for, or NULL once that is gone. */
struct pending {
	struct grpc_server *srv;
	struct grpc_next *next;
	struct stream *st;
	struct pending *qnext;		/* in the server's done queue */
};

struct stream {
	int32_t id;
	struct grpc_conn *c;
	struct stream *prev, *next;	/* the connection's streams */
	enum metrics_grpc_method method;
	uint64_t start_ns;
	uint64_t deadline_ns;		/* 0: none */
	size_t header_bytes;
	bool post, content_type_ok, bad_timeout;
	uint8_t *req;			/* the request's bytes, up to GRPC_MAX_REQUEST */
	size_t req_len, req_cap;
	bool req_too_large;
	bool answered;			/* a response is submitted */
	bool counted;			/* metrics have its status */
	/* What DATA frames send: whole prefixed messages. */
	uint8_t *body;
	size_t body_len, body_off;
	bool end;			/* after body, the trailers */
	bool deferred;			/* the data source waits for more */
	enum grpc_code code;		/* the trailers' status */
	const char *text;
	struct pending *pending;
	size_t owed;			/* of GRPC_MAX_OWED, held until freed */
	uint64_t owed_since_ns;		/* when its large answer was ready */
	bool reset;			/* RST_STREAM submitted */
	int watch;			/* the status a Watch sent last, or -1 */
};

struct grpc_conn {
	struct grpc_server *srv;	/* NULL: grpc_conn_mem() */
	struct api *api;
	const struct grpc_limits *lim;
	int fd;				/* -1: grpc_conn_mem() */
	nghttp2_session *session;
	unsigned char key[17];		/* the peer, as per-address limits count it */
	struct grpc_conn *prev, *next;
	struct stream *streams;
	unsigned int nr_streams;
	size_t queued;			/* bytes of body not yet sent */
	size_t owed;			/* its streams' owed */
	uint64_t last_recv_ns;		/* bytes came */
	uint64_t last_active_ns;	/* a stream began or ended: PINGs are not use */
	/*
	 * The peer took answers' bytes, or was owed none: PINGs and their
	 * ACKs do not count, or a peer could hold its answers for ever.
	 */
	uint64_t last_send_ns;
	uint64_t ping_ns;		/* a PING of ours unanswered since; 0: none */
	uint64_t ctrl_tat_ns;		/* the control frames' bucket (GCRA) */
	bool blocked;			/* the socket took no more */
	uint8_t *unsent;		/* what a full socket left, to send first */
	size_t unsent_len, unsent_off;
	bool failed;			/* close it */
	bool dead;			/* closed; freed after this round of events */
	bool spoke;			/* a whole frame came (the preface's SETTINGS) */
	uint64_t opened_ns;
	uint32_t events;		/* what epoll watches now */
};

struct grpc_server {
	struct api *api;
	struct grpc_limits lim;
	char addr[160];
	int listen_fd, epoll_fd, wake_fd, timer_fd;
	uint16_t port;
	pthread_t thread;
	bool started;
	_Atomic bool stopping;
	uint64_t drain_until_ns;
	struct grpc_conn *conns;
	unsigned int nr_conns;
	struct grpc_conn *dead;		/* closed in this round of events */
	/* Calls the lane has finished, for the thread; under lock. */
	pthread_mutex_t lock;
	struct pending *done;
	int ready;			/* readiness at this tick: -1 unknown */
	uint8_t *out;			/* the frames of one flush, for one send() */
	size_t out_cap;
};

/* Every listener's large answers not yet read (GRPC_MAX_OWED_TOTAL). */
static _Atomic size_t owed_total;

static void stream_free(struct stream *st)
{
	if (st->owed) {
		st->c->owed -= st->owed;
		atomic_fetch_sub(&owed_total, st->owed);
	}
	free(st->req);
	free(st->body);
	free(st);
}

static uint64_t count_per_ip(struct grpc_server *s, const unsigned char key[17])
{
	struct grpc_conn *c;
	uint64_t n = 0;

	for (c = s->conns; c; c = c->next)
		n += !memcmp(c->key, key, 17);
	return n;
}

/* --- sending ------------------------------------------------------------ */

/*
 * Send what the session has for the peer: its frames gathered into one
 * buffer and one send() (a frame per system call would cost more than
 * the frames).  What the socket does not take waits in c->unsent, and the
 * session is asked for no more until it is gone.  0, or -1 to close.
 */
static int conn_flush(struct grpc_conn *c)
{
	struct grpc_server *s = c->srv;
	const uint8_t *data;
	size_t len;
	ssize_t n;

	if (c->fd < 0) {	/* grpc_conn_mem(): dropped */
		while ((n = nghttp2_session_mem_send(c->session, &data)) > 0)
			;
		return n < 0 ? -1 : 0;
	}
	for (;;) {
		while (c->unsent) {
			n = send(c->fd, c->unsent + c->unsent_off, c->unsent_len - c->unsent_off,
				 MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				if (errno != EAGAIN && errno != EWOULDBLOCK)
					return -1;
				c->blocked = true;
				return 0;
			}
			c->unsent_off += n;
			if (c->unsent_off == c->unsent_len) {
				free(c->unsent);
				c->unsent = NULL;
				c->unsent_len = c->unsent_off = 0;
			}
		}
		c->blocked = false;
		for (len = 0; len < 65536; len += n) {
			n = nghttp2_session_mem_send(c->session, &data);
			if (n < 0)
				return -1;
			if (!n)
				break;
			if (len + n > s->out_cap) {
				uint8_t *out = realloc(s->out, len + n + 65536);

				if (!out)
					return -1;
				s->out = out;
				s->out_cap = len + n + 65536;
			}
			memcpy(s->out + len, data, n);
		}
		if (!len)
			return 0;
		do
			n = send(c->fd, s->out, len, MSG_NOSIGNAL);
		while (n < 0 && errno == EINTR);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		if (n < 0)
			n = 0;
		if ((size_t)n < len) {
			c->unsent = malloc(len - n);
			if (!c->unsent)
				return -1;
			memcpy(c->unsent, s->out + n, len - n);
			c->unsent_len = len - n;
			c->unsent_off = 0;
		}
	}
}

static void conn_watch(struct grpc_server *s, struct grpc_conn *c);

static ssize_t body_read_cb(nghttp2_session *session, int32_t id, uint8_t *buf,
			    size_t len, uint32_t *flags, nghttp2_data_source *source,
			    void *user)
{
	struct stream *st = source->ptr;
	struct grpc_conn *c = user;
	size_t n = st->body_len - st->body_off;
	nghttp2_nv trailers[2];
	char code[4], message[512];

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
	snprintf(code, sizeof(code), "%d", st->code);
	if (st->text)
		grpc_message_encode(st->text, message, sizeof(message));
	trailers[0] = (nghttp2_nv){ (uint8_t *)"grpc-status", (uint8_t *)code,
				    11, strlen(code), NGHTTP2_NV_FLAG_NO_COPY_NAME };
	trailers[1] = (nghttp2_nv){ (uint8_t *)"grpc-message", (uint8_t *)message,
				    12, st->text ? strlen(message) : 0,
				    NGHTTP2_NV_FLAG_NO_COPY_NAME };
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (!nghttp2_submit_trailer(session, id, trailers, st->text ? 2 : 1))
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
	return n;
}

/* Append a message of len bytes to st's body: 0, or -ENOMEM. */
static int body_add(struct stream *st, const uint8_t *msg, size_t len)
{
	uint8_t *b = realloc(st->body, st->body_len + GRPC_PREFIX_LEN + len);

	if (!b)
		return -ENOMEM;
	st->body = b;
	grpc_prefix_write(b + st->body_len, len);
	memcpy(b + st->body_len + GRPC_PREFIX_LEN, msg, len);
	st->body_len += GRPC_PREFIX_LEN + len;
	st->c->queued += GRPC_PREFIX_LEN + len;
	return 0;
}

static void count(struct stream *st, enum grpc_code code)
{
	struct api *api = st->c->api;

	if (st->counted || !api->metrics)
		return;
	st->counted = true;
	metrics_grpc(api->metrics, st->method, code, monotonic_ns() - st->start_ns);
}

/*
 * The response's headers, and with no message the status in them
 * (trailers-only).  http_status 200 unless the request was not gRPC.
 */
static void respond(struct stream *st, unsigned int http_status, enum grpc_code code,
		    const char *text, int64_t pushback_ms, bool with_body)
{
	struct grpc_conn *c = st->c;
	char status[4], gcode[4], pushback[24], message[512];
	nghttp2_nv nv[7];
	nghttp2_data_provider prd = { .source.ptr = st, .read_callback = body_read_cb };
	size_t n = 0;

#define NV(k, v) (nghttp2_nv){ (uint8_t *)(k), (uint8_t *)(v), strlen(k), strlen(v), \
			       NGHTTP2_NV_FLAG_NO_COPY_NAME }
	snprintf(status, sizeof(status), "%u", http_status);
	nv[n++] = NV(":status", status);
	nv[n++] = NV("content-type", "application/grpc");
	nv[n++] = NV("grpc-accept-encoding", "identity");
	st->answered = true;
	st->code = code;
	st->text = text;
	if (with_body) {
		st->end = st->method != GRPC_HEALTH_WATCH;	/* a Watch goes on */
		if (nghttp2_submit_response(c->session, st->id, nv, n, &prd))
			nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, st->id,
						  NGHTTP2_INTERNAL_ERROR);
		if (st->end)
			count(st, code);
		return;
	}
	snprintf(gcode, sizeof(gcode), "%d", code);
	nv[n++] = NV("grpc-status", gcode);
	if (text) {
		grpc_message_encode(text, message, sizeof(message));
		nv[n++] = NV("grpc-message", message);
	}
	if (pushback_ms >= 0) {
		snprintf(pushback, sizeof(pushback), "%lld", (long long)pushback_ms);
		nv[n++] = NV("grpc-retry-pushback-ms", pushback);
	}
#undef NV
	if (nghttp2_submit_response(c->session, st->id, nv, n, NULL))
		nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, st->id,
					  NGHTTP2_INTERNAL_ERROR);
	count(st, code);
}

static void respond_status(struct stream *st, enum grpc_code code, const char *text)
{
	respond(st, 200, code, text, -1, false);
}

/* A unary call's reply: its message and OK, or its status alone. */
static void reply(struct stream *st, struct grpc_reply *r)
{
	if (r->code != GRPC_OK) {
		free(r->msg);
		respond(st, 200, r->code, r->text, r->pushback_ms, false);
		return;
	}
	if (body_add(st, r->msg, r->len)) {
		free(r->msg);
		respond_status(st, GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	free(r->msg);
	respond(st, 200, GRPC_OK, NULL, -1, true);
}

/* --- the lane's calls --------------------------------------------------- */

/* On the lane's thread: back to the listener's. */
static void next_done(struct grpc_next *d, void *arg)
{
	struct pending *p = arg;
	struct grpc_server *s = p->srv;

	(void)d;
	pthread_mutex_lock(&s->lock);
	p->qnext = s->done;
	s->done = p;
	pthread_mutex_unlock(&s->lock);
	eventfd_write(s->wake_fd, 1);
}

/* The listener's thread: the calls the lane has finished, answered. */
static void take_done(struct grpc_server *s)
{
	struct pending *p, *next;
	struct grpc_reply r;

	pthread_mutex_lock(&s->lock);
	p = s->done;
	s->done = NULL;
	pthread_mutex_unlock(&s->lock);
	for (; p; p = next) {
		size_t n = grpc_next_count(p->next);

		next = p->qnext;
		grpc_next_finish(p->next, &r);
		/* The stream's connection may be closed, not yet freed: no
		 * pointer to p may outlive it. */
		if (p->st)
			p->st->pending = NULL;
		if (p->st && !p->st->c->dead) {
			struct grpc_conn *c = p->st->c;

			p->st->owed_since_ns = monotonic_ns();
			reply(p->st, &r);
			if (conn_flush(c))
				c->failed = true;	/* closed at its next event or tick */
			conn_watch(s, c);
		} else {
			/* Its IDs made an answer (a message) the peer never gets. */
			if (r.msg)
				metrics_ids_lost(s->api->metrics, n);
			free(r.msg);
		}
		free(p);
	}
}

/* --- receiving ---------------------------------------------------------- */

static bool is(const uint8_t *s, size_t len, const char *lit)
{
	return len == strlen(lit) && !memcmp(s, lit, len);
}

static int begin_headers_cb(nghttp2_session *session, const nghttp2_frame *frame,
			    void *user)
{
	struct grpc_conn *c = user;
	struct stream *st;

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
	st->next = c->streams;
	if (c->streams)
		c->streams->prev = st;
	c->streams = st;
	c->nr_streams++;
	c->last_active_ns = st->start_ns;
	nghttp2_session_set_stream_user_data(session, st->id, st);
	return 0;
}

static int header_cb(nghttp2_session *session, const nghttp2_frame *frame,
		     const uint8_t *name, size_t namelen, const uint8_t *value,
		     size_t valuelen, uint8_t flags, void *user)
{
	struct stream *st = nghttp2_session_get_stream_user_data(session,
								 frame->hd.stream_id);
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
	if (is(name, namelen, ":method"))
		st->post = is(value, valuelen, "POST");
	else if (is(name, namelen, ":path"))
		st->method = grpc_method_of((const char *)value, valuelen);
	else if (is(name, namelen, "content-type"))
		st->content_type_ok = grpc_content_type_ok((const char *)value, valuelen);
	else if (is(name, namelen, "grpc-timeout")) {
		if (grpc_timeout_parse((const char *)value, valuelen, &ns))
			st->bad_timeout = true;
		else
			st->deadline_ns = ns > UINT64_MAX - st->start_ns ? 0 :
					  st->start_ns + ns;
	}
	return 0;
}

static int data_chunk_cb(nghttp2_session *session, uint8_t flags, int32_t id,
			 const uint8_t *data, size_t len, void *user)
{
	struct stream *st = nghttp2_session_get_stream_user_data(session, id);

	(void)flags;
	(void)user;
	if (!st || st->answered)
		return 0;
	if (len > GRPC_MAX_REQUEST - st->req_len) {
		st->req_too_large = true;
		return 0;
	}
	if (st->req_len + len > st->req_cap) {
		size_t cap = st->req_cap ? st->req_cap : 64;
		uint8_t *r;

		while (cap < st->req_len + len)
			cap *= 2;
		if (cap > GRPC_MAX_REQUEST)
			cap = GRPC_MAX_REQUEST;
		r = realloc(st->req, cap);
		if (!r)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		st->req = r;
		st->req_cap = cap;
	}
	memcpy(st->req + st->req_len, data, len);
	st->req_len += len;
	return 0;
}

/* A health Watch's next status, when it changed: 0, or -ENOMEM. */
static int watch_send(struct stream *st, int status)
{
	struct grpc_reply r;
	int ret;

	if (status == st->watch)
		return 0;
	ret = grpc_health_reply(status, &r);
	if (ret)
		return ret;
	ret = body_add(st, r.msg, r.len);
	free(r.msg);
	if (ret)
		return ret;
	st->watch = status;
	if (st->deferred) {
		st->deferred = false;
		nghttp2_session_resume_data(st->c->session, st->id);
	}
	return 0;
}

static void watch_begin(struct stream *st, const uint8_t *msg, size_t len)
{
	int status;

	switch (grpc_health_status(st->c->api, msg, len, &status)) {
	case 0:
		break;
	case 1:
		status = 3;	/* SERVICE_UNKNOWN: the watch goes on (health.proto) */
		break;
	default:
		respond_status(st, GRPC_INVALID_ARGUMENT, "the request is not a "
			       "HealthCheckRequest message");
		return;
	}
	if (watch_send(st, status)) {
		respond_status(st, GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	respond(st, 200, GRPC_OK, NULL, -1, true);
	if (st->c->srv && atomic_load(&st->c->srv->stopping)) {
		st->end = true;
		st->code = GRPC_UNAVAILABLE;
		st->text = "the server is stopping";
		count(st, st->code);
	}
}

/* A request whole (END_STREAM): its answer, or the call started. */
static void dispatch(struct stream *st)
{
	struct grpc_conn *c = st->c;
	struct grpc_next *d;
	struct grpc_reply r;
	struct pending *p;
	bool compressed, over;
	size_t owed;
	uint32_t len;
	int ret;

	if (st->answered)
		return;
	if (!st->post) {
		respond(st, 405, GRPC_INTERNAL, "gRPC takes POST", -1, false);
		return;
	}
	if (!st->content_type_ok) {
		respond(st, 415, GRPC_INTERNAL, "content-type must be application/grpc",
			-1, false);
		return;
	}
	if (st->bad_timeout) {
		respond_status(st, GRPC_INTERNAL, "grpc-timeout is malformed");
		return;
	}
	if (st->method == GRPC_OTHER) {
		respond_status(st, GRPC_UNIMPLEMENTED, "no such method: the service is "
			       "idgen.v1.IdGen (NextIds, DecodeId, MinIdAt) and "
			       "grpc.health.v1.Health");
		return;
	}
	if (st->req_too_large) {
		respond_status(st, GRPC_RESOURCE_EXHAUSTED, "the request message exceeds "
			       "4096 bytes");
		return;
	}
	if (st->req_len < GRPC_PREFIX_LEN) {
		respond_status(st, GRPC_INVALID_ARGUMENT, "a unary call takes one "
			       "request message; none came");
		return;
	}
	grpc_prefix_read(st->req, &compressed, &len);
	if (compressed) {
		respond_status(st, GRPC_UNIMPLEMENTED, "compressed messages are not "
			       "taken: send them with identity encoding");
		return;
	}
	if (len != st->req_len - GRPC_PREFIX_LEN) {
		respond_status(st, GRPC_INVALID_ARGUMENT, "a unary call takes exactly one "
			       "whole request message");
		return;
	}
	if (st->method == GRPC_HEALTH_WATCH) {
		watch_begin(st, st->req + GRPC_PREFIX_LEN, len);
		return;
	}
	ret = grpc_call(c->api, st->method, st->req + GRPC_PREFIX_LEN, len,
			st->deadline_ns, &r, &d);
	if (ret < 0) {
		respond_status(st, GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	if (!ret) {
		reply(st, &r);
		return;
	}
	/*
	 * A large NextIds, to the lane; a socketless session has none.  Its
	 * answer is held until read: within the connection's and the
	 * process's bounds, or refused before any ID is minted for it.
	 */
	owed = GRPC_PREFIX_LEN + 16 + grpc_next_count(d) * sizeof(uint64_t);
	over = c->owed + owed > GRPC_MAX_OWED;
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

/* Control frames, a bucket per connection: false past it. */
static bool ctrl_take(struct grpc_conn *c)
{
	const uint64_t cost = NS_PER_S / GRPC_CTRL_RATE;
	const uint64_t tolerance = cost * GRPC_CTRL_BURST;
	uint64_t now = monotonic_ns();
	uint64_t tat = c->ctrl_tat_ns > now ? c->ctrl_tat_ns : now;

	if (tat + cost - now > tolerance)
		return false;
	c->ctrl_tat_ns = tat + cost;
	return true;
}

static int frame_recv_cb(nghttp2_session *session, const nghttp2_frame *frame,
			 void *user)
{
	struct grpc_conn *c = user;
	struct stream *st;
	bool ctrl = false;

	c->spoke = true;
	switch (frame->hd.type) {
	case NGHTTP2_PING:
		if (frame->hd.flags & NGHTTP2_FLAG_ACK)
			c->ping_ns = 0;
		else
			ctrl = true;
		break;
	case NGHTTP2_SETTINGS:
		ctrl = !(frame->hd.flags & NGHTTP2_FLAG_ACK);
		break;
	case NGHTTP2_PRIORITY:
		ctrl = true;
		break;
	case NGHTTP2_DATA:
		ctrl = !frame->hd.length && !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
		break;
	}
	if (ctrl && !ctrl_take(c)) {
		log_warn("gRPC: a client sends control frames faster than %d a second: "
			 "GOAWAY ENHANCE_YOUR_CALM", GRPC_CTRL_RATE);
		nghttp2_session_terminate_session(session, NGHTTP2_ENHANCE_YOUR_CALM);
		return 0;
	}
	if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
	    (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
		st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
		if (st)
			dispatch(st);
	}
	return 0;
}

static int stream_close_cb(nghttp2_session *session, int32_t id, uint32_t error_code,
			   void *user)
{
	struct stream *st = nghttp2_session_get_stream_user_data(session, id);
	struct grpc_conn *c = user;

	(void)error_code;
	if (!st)
		return 0;
	if (st->pending) {
		/* The lane finishes it as cancelled; take_done() frees it. */
		st->pending->st = NULL;
		grpc_next_cancel(st->pending->next);
	}
	count(st, GRPC_CANCELLED);	/* no status sent: the client went away */
	c->queued -= st->body_len - st->body_off;
	if (st->prev)
		st->prev->next = st->next;
	else
		c->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	c->nr_streams--;
	c->last_active_ns = monotonic_ns();
	nghttp2_session_set_stream_user_data(session, id, NULL);
	stream_free(st);
	return 0;
}

/* --- connections -------------------------------------------------------- */

static struct grpc_conn *conn_new(struct api *api, const struct grpc_limits *lim, int fd)
{
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	struct grpc_conn *c;
	nghttp2_settings_entry settings[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, lim->max_streams },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, GRPC_MAX_HEADER_LIST },
	};
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->api = api;
	c->lim = lim;
	c->fd = fd;
	c->opened_ns = c->last_recv_ns = c->last_send_ns = c->last_active_ns = monotonic_ns();
	if (nghttp2_session_callbacks_new(&cb)) {
		free(c);
		return NULL;
	}
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, begin_headers_cb);
	nghttp2_session_callbacks_set_on_header_callback(cb, header_cb);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, data_chunk_cb);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, frame_recv_cb);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, stream_close_cb);
	if (nghttp2_option_new(&opt)) {
		nghttp2_session_callbacks_del(cb);
		free(c);
		return NULL;
	}
	/* Rapid reset (CVE-2023-44487), CONTINUATION floods, SETTINGS floods. */
	nghttp2_option_set_stream_reset_rate_limit(opt, 1000, 33);
	nghttp2_option_set_max_continuations(opt, 8);
	nghttp2_option_set_max_settings(opt, 32);
	nghttp2_option_set_max_outbound_ack(opt, 1000);
	ret = nghttp2_session_server_new2(&c->session, cb, c, opt);
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cb);
	if (ret) {
		free(c);
		return NULL;
	}
	nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings,
				sizeof(settings) / sizeof(settings[0]));
	return c;
}

static void conn_free(struct grpc_conn *c)
{
	/* No close callback runs from here: the loop cancels what the lane holds. */
	nghttp2_session_del(c->session);
	while (c->streams) {
		struct stream *st = c->streams;

		c->streams = st->next;
		if (st->pending) {
			st->pending->st = NULL;
			grpc_next_cancel(st->pending->next);
		}
		count(st, GRPC_CANCELLED);
		stream_free(st);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c->unsent);
	free(c);
}

/* Bytes from the peer into the session: 0, or -1 to close. */
static int conn_recv(struct grpc_conn *c, const uint8_t *data, size_t len)
{
	ssize_t n;

	c->last_recv_ns = monotonic_ns();
	n = nghttp2_session_mem_recv(c->session, data, len);
	if (n < 0)
		return -1;
	return conn_flush(c);
}

struct grpc_conn *grpc_conn_mem(struct api *api, const struct grpc_limits *lim)
{
	return conn_new(api, lim, -1);
}

int grpc_conn_feed(struct grpc_conn *c, const uint8_t *data, size_t len)
{
	if (c->failed || conn_recv(c, data, len))
		c->failed = true;
	return c->failed ? -1 : 0;
}

void grpc_conn_mem_free(struct grpc_conn *c)
{
	conn_free(c);
}

/*
 * c closed: out of the list and of epoll now, freed after this round of
 * events (another event of the round may still name it).
 */
static void conn_remove(struct grpc_server *s, struct grpc_conn *c)
{
	epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	c->dead = true;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nr_conns--;
	if (s->api->metrics)
		atomic_fetch_sub(&s->api->metrics->conn_open, 1);
	c->prev = NULL;
	c->next = s->dead;
	s->dead = c;
}

static void bury(struct grpc_server *s)
{
	struct grpc_conn *c;

	while ((c = s->dead)) {
		s->dead = c->next;
		conn_free(c);
	}
}

/* What epoll watches for c. */
static void conn_watch(struct grpc_server *s, struct grpc_conn *c)
{
	uint32_t ev = 0;
	struct epoll_event e;

	/*
	 * Always read while the session wants to: the peer's WINDOW_UPDATEs
	 * are what lets its answers out.  What it is owed is bounded by its
	 * streams, one answer each, and cut off after timeout_s untaken.
	 */
	if (nghttp2_session_want_read(c->session))
		ev |= EPOLLIN;
	if (c->blocked)
		ev |= EPOLLOUT;
	if (ev == c->events)
		return;
	e = (struct epoll_event){ .events = ev, .data.ptr = c };
	epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, c->fd, &e);
	c->events = ev;
}

/* Done with c: its session ended, nothing left to send. */
static bool conn_over(struct grpc_conn *c)
{
	return c->failed || (!c->unsent && !nghttp2_session_want_read(c->session) &&
			     !nghttp2_session_want_write(c->session));
}

static void conn_event(struct grpc_server *s, struct grpc_conn *c, uint32_t events)
{
	uint8_t buf[READ_SIZE];
	ssize_t n;

	if (c->dead)
		return;
	if (events & (EPOLLERR | EPOLLHUP))
		c->failed = true;
	if (!c->failed && (events & EPOLLOUT) && conn_flush(c))
		c->failed = true;
	if (!c->failed && (events & EPOLLIN)) {
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			c->failed = true;
		else if (n > 0 && conn_recv(c, buf, n))
			c->failed = true;
	}
	if (conn_over(c))
		conn_remove(s, c);
	else
		conn_watch(s, c);
}

static void accept_one(struct grpc_server *s)
{
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	struct grpc_conn *c;
	struct epoll_event e;
	unsigned char key[17];
	int fd, one = 1;

	fd = accept4(s->listen_fd, (struct sockaddr *)&sa, &salen,
		     SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE)
			log_warn("gRPC %s: cannot accept: %s (raise LimitNOFILE=)",
				 s->addr, strerror(errno));
		return;
	}
	server_conn_key((struct sockaddr *)&sa, s->lim.ipv6_prefix_per_ip, key);
	if (s->nr_conns >= s->lim.max_connections ||
	    (s->lim.max_connections_per_ip &&
	     count_per_ip(s, key) >= s->lim.max_connections_per_ip)) {
		if (s->api->metrics)
			atomic_fetch_add(&s->api->metrics->conn_refused[
				s->nr_conns >= s->lim.max_connections ?
				REFUSED_MAX_CONNECTIONS : REFUSED_MAX_CONNECTIONS_PER_IP], 1);
		close(fd);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c = conn_new(s->api, &s->lim, fd);
	if (!c) {
		close(fd);
		return;
	}
	c->srv = s;
	memcpy(c->key, key, sizeof(key));
	c->events = EPOLLIN;
	e = (struct epoll_event){ .events = EPOLLIN, .data.ptr = c };
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &e)) {
		conn_free(c);
		return;
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nr_conns++;
	if (s->api->metrics)
		atomic_fetch_add(&s->api->metrics->conn_open, 1);
	if (conn_flush(c))
		conn_remove(s, c);
	else
		conn_watch(s, c);
}

/* --- the loop ----------------------------------------------------------- */

/* The readiness at this tick, asked once for every Watch. */
static int readiness_now(struct grpc_server *s, struct stream *st)
{
	int status;

	if (s->ready < 0) {
		/* An empty HealthCheckRequest: the service "" */
		if (grpc_health_status(s->api, (const uint8_t *)"", 0, &status))
			status = 2;
		s->ready = status;
	}
	return st->watch == 3 ? 3 : s->ready;
}

static void end_watch(struct stream *st)
{
	if (st->method != GRPC_HEALTH_WATCH || st->end || st->watch < 0)
		return;
	if (st->watch != 3)
		watch_send(st, 2);	/* NOT_SERVING: going away */
	st->end = true;
	st->code = GRPC_UNAVAILABLE;
	st->text = "the server is stopping";
	count(st, st->code);
	if (st->deferred) {
		st->deferred = false;
		nghttp2_session_resume_data(st->c->session, st->id);
	}
}

static void tick(struct grpc_server *s)
{
	struct grpc_conn *c, *next;
	struct stream *st;
	uint64_t now = monotonic_ns();
	const uint64_t timeout = s->lim.timeout_s * NS_PER_S;
	const uint64_t idle = s->lim.idle_timeout_s * NS_PER_S;
	bool stopping = atomic_load(&s->stopping);

	s->ready = -1;
	for (c = s->conns; c; c = next) {
		next = c->next;
		for (st = c->streams; st; st = st->next) {
			/* A request not whole after timeout_s: reset. */
			if (!st->answered && !st->reset && now - st->start_ns > timeout) {
				nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE,
							  st->id, NGHTTP2_CANCEL);
				st->reset = true;
			}
			/*
			 * A large answer not all taken within timeout_s of being
			 * ready: a peer opening its window a byte at a time would
			 * otherwise hold what it is owed, and the budget, for ever.
			 */
			if (st->owed && st->owed_since_ns &&
			    now - st->owed_since_ns > timeout)
				c->failed = true;
			if (st->method == GRPC_HEALTH_WATCH && st->watch >= 0 && !st->end) {
				if (stopping)
					end_watch(st);
				else if (watch_send(st, readiness_now(s, st)))
					c->failed = true;
			}
		}
		/* Owed bytes the peer takes none of, for timeout_s: cut off. */
		if (!c->queued && !c->blocked)
			c->last_send_ns = now;
		else if (now - c->last_send_ns > timeout)
			c->failed = true;
		if (c->ping_ns && now - c->ping_ns > timeout)
			c->failed = true;
		/* Not even the preface in timeout_s: no client of ours. */
		if (!c->spoke && now - c->opened_ns > timeout)
			c->failed = true;
		if (!c->nr_streams && now - c->last_active_ns > idle) {
			nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
		} else if (c->nr_streams && !c->ping_ns && now - c->last_recv_ns > idle) {
			/* A Watch's client, silent: still there? */
			if (!nghttp2_submit_ping(c->session, NGHTTP2_FLAG_NONE, NULL))
				c->ping_ns = now;
		}
		if (stopping && s->drain_until_ns && now > s->drain_until_ns)
			c->failed = true;
		if (!c->failed && conn_flush(c))
			c->failed = true;
		if (conn_over(c))
			conn_remove(s, c);
		else
			conn_watch(s, c);
	}
}

static void begin_stop(struct grpc_server *s)
{
	struct grpc_conn *c;
	struct stream *st;

	epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL);
	close(s->listen_fd);
	s->listen_fd = -1;
	for (c = s->conns; c; c = c->next) {
		nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
				      nghttp2_session_get_last_proc_stream_id(c->session),
				      NGHTTP2_NO_ERROR, NULL, 0);
		for (st = c->streams; st; st = st->next)
			end_watch(st);
		if (conn_flush(c))
			c->failed = true;
		else
			conn_watch(s, c);
	}
}

static void *loop(void *arg)
{
	struct grpc_server *s = arg;
	struct epoll_event ev[MAX_EVENTS];
	struct grpc_conn *c;
	bool stop_begun = false;
	uint64_t v;
	int i, n;

	for (;;) {
		if (atomic_load(&s->stopping) && !stop_begun) {
			begin_stop(s);
			stop_begun = true;
		}
		if (stop_begun && !s->conns)
			break;
		n = epoll_wait(s->epoll_fd, ev, MAX_EVENTS, -1);
		for (i = 0; i < n; i++) {
			if (ev[i].data.ptr == &s->listen_fd) {
				accept_one(s);
			} else if (ev[i].data.ptr == &s->wake_fd) {
				eventfd_read(s->wake_fd, &v);
				take_done(s);
			} else if (ev[i].data.ptr == &s->timer_fd) {
				(void)!read(s->timer_fd, &v, sizeof(v));
				tick(s);
			} else {
				c = ev[i].data.ptr;
				conn_event(s, c, ev[i].events);
			}
		}
		bury(s);
	}
	while (s->conns)
		conn_remove(s, s->conns);
	bury(s);
	return NULL;
}

struct grpc_server *grpc_server_start(const char *addr, const struct grpc_limits *lim,
				      struct api *api)
{
	struct itimerspec every = {
		.it_interval = { 0, GRPC_WATCH_TICK_MS * 1000000L },
		.it_value = { 0, GRPC_WATCH_TICK_MS * 1000000L },
	};
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	struct grpc_server *s;
	struct epoll_event e;
	struct addrinfo *ai;
	int one = 1;

	if (server_resolve(addr, &ai))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		freeaddrinfo(ai);
		log_err("gRPC listen address '%s': out of memory", addr);
		return NULL;
	}
	s->api = api;
	s->lim = *lim;
	if (!s->lim.ipv6_prefix_per_ip)
		s->lim.ipv6_prefix_per_ip = 128;
	s->listen_fd = s->epoll_fd = s->wake_fd = s->timer_fd = -1;
	s->ready = -1;
	snprintf(s->addr, sizeof(s->addr), "%s", addr);
	pthread_mutex_init(&s->lock, NULL);
	s->listen_fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0 ||
	    setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->listen_fd, ai->ai_addr, ai->ai_addrlen) ||
	    listen(s->listen_fd, 1024)) {
		log_err("cannot listen for gRPC on %s: %s", addr, strerror(errno));
		goto fail;
	}
	if (!getsockname(s->listen_fd, (struct sockaddr *)&bound, &blen))
		s->port = ntohs(bound.ss_family == AF_INET6 ?
				((struct sockaddr_in6 *)&bound)->sin6_port :
				((struct sockaddr_in *)&bound)->sin_port);
	s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->epoll_fd < 0 || s->wake_fd < 0 || s->timer_fd < 0 ||
	    timerfd_settime(s->timer_fd, 0, &every, NULL)) {
		log_err("gRPC listen address '%s': %s", addr, strerror(errno));
		goto fail;
	}
	e = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &s->listen_fd };
	epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &e);
	e.data.ptr = &s->wake_fd;
	epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->wake_fd, &e);
	e.data.ptr = &s->timer_fd;
	epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->timer_fd, &e);
	if (pthread_create(&s->thread, NULL, loop, s)) {
		log_err("gRPC listen address '%s': cannot start a thread", addr);
		goto fail;
	}
	s->started = true;
	freeaddrinfo(ai);
	return s;
fail:
	freeaddrinfo(ai);
	grpc_server_free(s);
	return NULL;
}

uint16_t grpc_server_port(const struct grpc_server *s)
{
	return s->port;
}

void grpc_servers_stop(struct grpc_server **s, unsigned int n, unsigned int drain_ms)
{
	uint64_t until = monotonic_ns() + drain_ms * 1000000ULL;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!s[i] || !s[i]->started)
			continue;
		s[i]->drain_until_ns = until;
		atomic_store(&s[i]->stopping, true);
		eventfd_write(s[i]->wake_fd, 1);
	}
}

void grpc_servers_join(struct grpc_server **s, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!s[i] || !s[i]->started)
			continue;
		pthread_join(s[i]->thread, NULL);
		s[i]->started = false;
	}
}

void grpc_server_free(struct grpc_server *s)
{
	struct pending *p, *next;
	struct grpc_reply r;

	if (!s)
		return;
	/* The lane has stopped: what it finished for streams now gone. */
	for (p = s->done; p; p = next) {
		next = p->qnext;
		grpc_next_finish(p->next, &r);
		free(r.msg);
		free(p);
	}
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->epoll_fd >= 0)
		close(s->epoll_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->timer_fd >= 0)
		close(s->timer_fd);
	pthread_mutex_destroy(&s->lock);
	free(s->out);
	free(s);
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A connection's streams (grpc_stream.c): the nghttp2 callbacks that
 * make and end them, the request's headers and its one message, framed
 * and bounded as it arrives, unary dispatch to grpc_service.h, large
 * NextIds calls to the lane and back, and the answer: headers, messages,
 * trailers.  All on the listener's thread.
 */
#ifndef HTTPD_GRPC_STREAM_H
#define HTTPD_GRPC_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "grpc_conn.h"
#include "grpc_wire.h"
#include "list.h"
#include "metrics.h"

struct grpc_pending;

struct grpc_stream {
	struct list_node node;		/* in its connection's streams */
	int32_t id;
	struct grpc_conn *c;
	enum metrics_grpc_method method;
	uint64_t start_ns;
	uint64_t deadline_ns;		/* 0: none */
	/* The request's headers. */
	size_t header_bytes;
	bool post, content_type_ok, bad_timeout, compression_named;
	/* Its message: the prefix, then exactly the length it announces. */
	uint8_t prefix[GRPC_PREFIX_LEN];
	size_t prefix_len;
	uint8_t *req;			/* req_len bytes, counted in c->buffered */
	uint32_t req_len, req_got;
	bool remote_done;		/* the peer's END_STREAM came */
	bool answered;			/* a response is submitted */
	bool counted;			/* metrics have its status */
	/* What DATA frames send: whole prefixed messages. */
	uint8_t *body;
	size_t body_len, body_off;
	bool end;			/* after body, the trailers */
	bool deferred;			/* the data source waits for more */
	enum grpc_code code;		/* the trailers' status */
	const char *text;
	struct grpc_pending *pending;	/* a call the lane holds */
	size_t owed;			/* of GRPC_MAX_OWED, held until freed */
	uint64_t owed_since_ns;		/* when its large answer was ready */
	bool reset;			/* RST_STREAM submitted */
	int watch;			/* the status a Watch sent last, or -1 */
};

/* A call the lane holds: the stream it is for, or NULL once that is gone. */
struct grpc_pending {
	struct list_node node;		/* in its server's done list */
	struct grpc_server *srv;
	struct grpc_next *next;
	struct grpc_stream *st;
};

/* The session's callbacks for streams, set on cb. */
void grpc_stream_callbacks(nghttp2_session_callbacks *cb);

/* A HEADERS or DATA frame of a stream came whole (frame_recv). */
void grpc_stream_frame(struct grpc_conn *c, const nghttp2_frame *frame);

/*
 * At each tick: a request not whole in timeout_ns is reset, a large
 * answer not taken in timeout_ns fails the connection, a Watch looks at
 * readiness (*ready, the tick's, -1 until asked) and its deadline.
 */
void grpc_stream_tick(struct grpc_stream *st, uint64_t now, uint64_t timeout_ns,
		      int *ready);

/* The listener stops: a Watch is ended (NOT_SERVING, then UNAVAILABLE). */
void grpc_stream_stop(struct grpc_stream *st);

/* c's session is gone: its streams freed, the lane's calls cancelled. */
void grpc_streams_free(struct grpc_conn *c);

/* The lane finished p: its answer, or nothing for a stream gone; p freed. */
void grpc_pending_finish(struct grpc_pending *p);

/* --- answers, for grpc_health.c ----------------------------------------- */

/*
 * The status alone (trailers-only).  A stream whose request is not whole
 * yet is reset (NO_ERROR) after it: nothing more of it is read.
 */
void grpc_stream_status(struct grpc_stream *st, enum grpc_code code, const char *text);

/* The response's headers, its messages to follow (grpc_stream_send()). */
void grpc_stream_open(struct grpc_stream *st);

/* A message of len bytes, to be sent after those before: 0, or -ENOMEM. */
int grpc_stream_send(struct grpc_stream *st, const uint8_t *msg, size_t len);

/* After the messages sent, the trailers with code: the stream ends. */
void grpc_stream_end(struct grpc_stream *st, enum grpc_code code, const char *text);

#endif /* HTTPD_GRPC_STREAM_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * libmicrohttpd glue for the routes of api.c (server.h).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "decimal.h"
#include "lane.h"
#include "log.h"
#include "server.h"
#include "tls.h"

/*
 * Per connection, libmicrohttpd's: the request headers and its buffers
 * (the body is copied out, into struct request).  Small, so that headers
 * sent a byte at a time end soon at the limit, answered 431.
 */
#define MEMORY_LIMIT	(8 * 1024)
/* A chunked body past the limit is read this far for its 413, then cut. */
#define DROP_LIMIT	(64 * 1024)
/* A connection over a limit that sends no request by then is closed. */
#define REFUSED_MS	1000
/* What a refused connection is told to wait before it tries again. */
#define REFUSED_RETRY_S	1
/* How often the deadline of every connection's request is looked at. */
#define WATCH_MS	100

/*
 * One connection.  libmicrohttpd's idle timeout restarts with every byte,
 * so a client sending a byte a second would hold it for ever: the
 * request must instead be whole and answered by a deadline counted from
 * the connection's opening or its previous answer.  The watch thread
 * shuts the socket down past it (libmicrohttpd then closes it): that
 * covers headers and body alike, and the answer's sending.
 */
struct conn {
	int fd;
	unsigned char ip[17];		/* the client's key for its limit
					 * (conn_key()) */
	char addr[INET6_ADDRSTRLEN];	/* the client's address, for the log */
	int64_t since_ms;		/* under server.lock */
	bool cut;			/* shut down: past its deadline */
	/*
	 * Over a limit (enum metrics_refusal + 1; 0: not): not counted
	 * against any, its request answered 503 and the connection closed.
	 */
	int refused;
	bool busy;			/* opened or a request begun, not answered */
	/*
	 * With TLS: the context it began with, held until it closes, and
	 * whether its handshake is done (set on libmicrohttpd's thread, read
	 * by the watch: one not done by handshake_ms is cut).
	 */
	struct tls_ctx *tls;
	_Atomic bool tls_done;
	/*
	 * With a client CA: the caller its certificate proves, read at its
	 * first request (the handshake has checked the certificate by then).
	 */
	struct tls_peer *peer;
	struct conn *prev, *next;
};

struct server {
	struct MHD_Daemon *d;
	struct api *api;
	char addr[128];
	unsigned int deadline_ms;
	pthread_mutex_t lock;		/* conns, and each one's since_ms */
	struct conn conns;		/* the list's head */
	unsigned int nr_conns;		/* not cut */
	pthread_t watch;
	bool watching;
	_Atomic bool quit;
	unsigned int max_connections, max_connections_per_ip;	/* 0: none */
	unsigned int ipv6_prefix;	/* bits of an IPv6 address that key it */
	struct tls *tls;		/* NULL: plaintext */
	unsigned int handshake_ms;	/* with TLS: the handshake's bound */
};

/* Shared by every listener: what a stop waits for. */
static _Atomic bool stopping;
static _Atomic unsigned int in_flight;	/* requests, their headers read */
static _Atomic unsigned int busy_conns;	/* connections not idle (struct conn) */

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* One request: its body as it comes. */
struct request {
	struct timespec start;		/* its headers were read */
	size_t len;
	size_t dropped;			/* bytes past the limit, read and dropped */
	bool too_large;
	bool answered;
	const char *authenticated;	/* the client certificate's caller, or NULL */
	struct api_deferred *deferred;	/* set aside for the lane (lane.h) */
	bool on_lane;			/* ... and handed to it (set_aside()) */
	struct metrics_answer queued;	/* the answer's IDs, until it is sent */
	char body[API_MAX_BODY + 1];	/* and a NUL, for api.h */
};

static const char *header(struct MHD_Connection *c, enum MHD_ValueKind kind,
			  const char *name)
{
	return MHD_lookup_connection_value(c, kind, name);
}

static enum MHD_Result queue(struct MHD_Connection *c, struct api_response *r,
			     bool close)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char retry[16];

	resp = MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(r->body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
	/* Every answer is of its moment: an ID, a state, a refusal. */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	/* Stopping, or refused: no next request on this connection. */
	if (close || atomic_load(&stopping))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	if (r->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
	if (r->retry_after) {
		snprintf(retry, sizeof(retry), "%u", r->retry_after);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, retry);
	}
	ret = MHD_queue_response(c, r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* The answer out to a request, counted in /metrics. */
static enum MHD_Result send_answer(struct server *s, struct MHD_Connection *c,
				   struct request *rq, struct api_response *out)
{
	struct timespec now;
	enum MHD_Result ret;

	if (!out->body) {
		metrics_answer_end(s->api->metrics, &out->answer, false);
		return MHD_NO;		/* out of memory: close the connection */
	}
	if (s->api->metrics) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		metrics_request(s->api->metrics, out->route, out->status,
				(now.tv_sec - rq->start.tv_sec) * 1000000000ULL +
				now.tv_nsec - rq->start.tv_nsec);
	}
	ret = queue(c, out, false);
	if (ret == MHD_YES)
		rq->queued = out->answer;
	else
		metrics_answer_end(s->api->metrics, &out->answer, false);
	return ret;
}

/* The lane made a set-aside request's answer: back to libmicrohttpd. */
static void resume(void *c)
{
	MHD_resume_connection(c);
}

/* A set-aside request, resumed: its answer is made. */
static enum MHD_Result deferred(struct server *s, struct MHD_Connection *c,
				struct request *rq)
{
	struct api_response out;
	int err;

	err = api_deferred_answer(rq->deferred, &out);
	rq->deferred = NULL;
	rq->answered = true;
	return err ? MHD_NO : send_answer(s, c, rq, &out);
}

/* Answer now, before (or instead of) reading the body. */
static enum MHD_Result answer(struct server *s, struct MHD_Connection *c,
			      const char *url, const char *method,
			      struct request *rq)
{
	struct api_request in = {
		.method = method,
		.path = url,
		.at = header(c, MHD_GET_ARGUMENT_KIND, "at"),
		.content_type = header(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
		.body = rq->body,
		.body_len = rq->len,
		.body_too_large = rq->too_large,
		.authenticated = rq->authenticated,
	};
	struct api_response out;

	rq->body[rq->len] = '\0';
	if (api_handle(s->api, &in, &out))
		return MHD_NO;		/* out of memory: close the connection */
	if (out.deferred) {
		/*
		 * No answer yet: libmicrohttpd calls again at once, and the
		 * request is set aside then (set_aside()).
		 */
		rq->deferred = out.deferred;
		return MHD_YES;
	}
	return send_answer(s, c, rq, &out);
}

/*
 * A request for the lane, on handle()'s second call after its body:
 * set aside before the lane may finish; handle() is called again once it
 * has, and sends the answer (deferred()).
 *
 * Not on the first: libmicrohttpd (0.9.75) sets a connection aside with
 * the events it last waited for, which on the first call are still the
 * request's bytes, and resumed, it reads before anything else.  A client
 * that shut its sending side after the request (nc -N) has left an end
 * of stream there, and that read drops the request unanswered.  Once a
 * call has answered nothing, the connection waits for its answer and
 * reads no more, and so it stays when set aside now: resumed, it sends
 * the answer first.
 */
static enum MHD_Result set_aside(struct MHD_Connection *c, struct request *rq)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

	rq->on_lane = true;
	MHD_suspend_connection(c);
	api_defer(rq->deferred, i ? i->connect_fd : -1, resume, c);
	return MHD_YES;
}

/*
 * An error answered here, not by api.c: in its JSON shape, the
 * connection closed after it.  message is a literal (no escaping).
 */
static enum MHD_Result refuse(struct server *s, struct MHD_Connection *c,
			      struct request *rq, unsigned int status,
			      const char *code, const char *message,
			      unsigned int retry_after, bool count)
{
	struct api_response out = {
		.status = status,
		.content_type = "application/json",
		.retry_after = retry_after,
		.route = ROUTE_OTHER,
	};
	struct timespec now;
	int len;

	len = asprintf(&out.body, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}",
		       code, message);
	if (len < 0)
		return MHD_NO;
	out.len = len;
	rq->answered = true;
	if (s->api->metrics && count) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		metrics_request(s->api->metrics, out.route, out.status,
				(now.tv_sec - rq->start.tv_sec) * 1000000000ULL +
				now.tv_nsec - rq->start.tv_nsec);
	}
	return queue(c, &out, true);
}

/* The headers that frame a request's body, counted (framing()). */
struct framing {
	unsigned int lengths, encodings;
	const char *encoding;
	const char *bad;	/* why a header cannot be trusted, or NULL */
};

/* RFC 9110 section 5.6.2: a field name is a token. */
static bool is_token(const char *p)
{
	if (!*p)
		return false;
	for (; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("!#$%&'*+-.^_`|~", *p))
			return false;
	return true;
}

static bool all_digits(const char *p)
{
	if (!*p)
		return false;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind,
				     const char *key, const char *value)
{
	struct framing *f = cls;
	const char *p;

	(void)kind;
	/*
	 * libmicrohttpd keeps "Content-Length " (a space before the colon)
	 * or a folded line as a header of another name or an odd value, and
	 * frames the request as having no body, where a lenient proxy may
	 * take the bytes that follow for this request's body.
	 */
	if (!is_token(key))
		f->bad = "a header name that is not a token (white space before its colon)";
	/*
	 * A folded "Content-Length:\r\n 147" reaches us as a header named
	 * "Content-Length147" with no value, which a proxy that unfolds it
	 * takes for the body's length.
	 */
	else if ((!strncasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH,
			       strlen(MHD_HTTP_HEADER_CONTENT_LENGTH)) &&
		  strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) ||
		 (!strncasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING,
			       strlen(MHD_HTTP_HEADER_TRANSFER_ENCODING)) &&
		  strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)))
		f->bad = "a framing header's name run into other text (a folded line)";
	for (p = value ? value : ""; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t')
			f->bad = "a control character in a header's value";
	if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
		f->lengths++;
		if (!all_digits(value ? value : ""))
			f->bad = "a Content-Length that is not a decimal number alone";
	} else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		f->encodings++;
		f->encoding = value;
	}
	return MHD_YES;
}

/*
 * Why the request's body has no one length, or NULL.  libmicrohttpd
 * frames by the first Content-Length, or by chunked when both are given;
 * a proxy in front may frame by another, and the bytes one takes for a
 * body the other takes for the next request (request smuggling).  So
 * the body must be framed by one header only, and only chunked is a
 * transfer coding the service reads (RFC 9112 section 6.3: any other
 * leaves the length unknown, a 400, the connection closed).
 */
static const char *framing(struct MHD_Connection *c)
{
	struct framing f = { 0 };

	MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
	if (f.bad)
		return f.bad;
	if (f.lengths > 1)
		return "more than one Content-Length header";
	if (f.encodings > 1)
		return "more than one Transfer-Encoding header";
	if (f.encodings && f.lengths)
		return "both Content-Length and Transfer-Encoding";
	if (f.encodings && strcasecmp(f.encoding, "chunked"))
		return "a Transfer-Encoding other than chunked";
	return NULL;
}

/*
 * The caller cn's client certificate proves, once a connection: 0, or -1
 * when it proves none (no certificate came: no request is served then,
 * whatever the handshake let through).
 */
static int peer_of(struct server *s, struct MHD_Connection *c, struct conn *cn)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	char why[512];

	if (cn->peer)
		return cn->peer->certified ? 0 : -1;
	cn->peer = malloc(sizeof(*cn->peer));
	if (!cn->peer || !i ||
	    tls_peer_of(cn->tls, i->tls_session, cn->peer, why, sizeof(why)) ||
	    !cn->peer->certified) {
		if (cn->peer)
			cn->peer->certified = false;
		if (s->api->metrics)
			atomic_fetch_add(&s->api->metrics->tls_peers_refused, 1);
		return -1;
	}
	return 0;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version,
			      const char *upload, size_t *upload_size, void **con_cls)
{
	struct server *s = cls;
	struct request *rq = *con_cls;
	const union MHD_ConnectionInfo *i;
	struct conn *cn;
	const char *cl, *why;
	uint64_t len;

	(void)version;
	if (!rq) {
		/* A connection refused, its request read before it noticed. */
		i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		cn = i ? i->socket_context : NULL;
		if (cn && cn->cut)
			return MHD_NO;
		rq = malloc(sizeof(*rq));
		if (!rq)
			return MHD_NO;
		clock_gettime(CLOCK_MONOTONIC, &rq->start);
		rq->len = 0;
		rq->dropped = 0;
		rq->too_large = rq->answered = false;
		rq->deferred = NULL;
		rq->on_lane = false;
		rq->queued.ids = 0;
		rq->authenticated = NULL;
		*con_cls = rq;
		atomic_fetch_add(&in_flight, 1);	/* until completed() */
		/* Over a limit at its opening (notify_connection()). */
		if (cn && cn->refused)
			return refuse(s, c, rq, 503, "too_many_connections",
				      cn->refused - 1 == REFUSED_MAX_CONNECTIONS ?
				      "the service is at its connection limit "
				      "(max_connections): try again later" :
				      "too many connections from this address "
				      "(max_connections_per_ip): try again later, "
				      "or over a connection already open",
				      REFUSED_RETRY_S, false);
		if (cn && cn->tls && tls_ctx_mtls(cn->tls)) {
			if (peer_of(s, c, cn))
				return refuse(s, c, rq, 403, "client_certificate_required",
					      "this service takes requests only with a "
					      "client certificate of its client CA", 0, true);
			rq->authenticated = cn->peer->caller;
		}
		why = framing(c);
		if (why) {
			log_ratelimited_by(LOG_INFO, "framing", "%s: a request with "
					   "%s: answered 400, connection closed (the "
					   "client's error, or a proxy's)", s->addr, why);
			return refuse(s, c, rq, 400, "invalid_framing", why, 0, true);
		}
		/*
		 * A body announced too large is refused unread.  HTTP allows
		 * leading zeros in a length ("04097"), the strict parser not.
		 */
		cl = header(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		while (cl && cl[0] == '0' && cl[1])
			cl++;
		if (cl && !idgen_decimal_str(cl, 0, UINT64_MAX, &len) &&
		    len > API_MAX_BODY) {
			rq->too_large = rq->answered = true;
			return answer(s, c, url, method, rq);
		}
		return MHD_YES;
	}
	if (rq->deferred)
		return rq->on_lane ? deferred(s, c, rq) : set_aside(c, rq);
	if (*upload_size) {
		if (!rq->too_large && *upload_size <= API_MAX_BODY - rq->len) {
			memcpy(rq->body + rq->len, upload, *upload_size);
			rq->len += *upload_size;
		} else {
			/*
			 * A body without a length (chunked) that runs past the
			 * limit: read on and drop, to answer 413 at its end,
			 * but not forever.
			 */
			rq->too_large = true;
			rq->dropped += *upload_size;
			if (rq->dropped > DROP_LIMIT) {
				log_ratelimited_by(LOG_INFO, "chunked-cut", "%s: a client "
						   "sent a chunked body past %d KiB: "
						   "connection closed (the client's error)",
						   s->addr, DROP_LIMIT / 1024);
				return MHD_NO;	/* close the connection */
			}
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (rq->answered)
		return MHD_YES;
	return answer(s, c, url, method, rq);
}

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
		return (c | 0x20) - 'a' + 10;
	return -1;
}

/*
 * The path's and the arguments' %XX, decoded in place -- but for a NUL or
 * another control byte, left as written: decoded, a %00 would end the
 * string there ("/v1/ids:next%00junk" taken for "/v1/ids:next"), so it
 * stays text no route matches and no value parses.
 */
static size_t unescape(void *cls, struct MHD_Connection *c, char *uri)
{
	char *in = uri, *out = uri;
	int hi, lo;

	(void)cls;
	(void)c;
	while (*in) {
		if (in[0] == '%' && (hi = hex(in[1])) >= 0 && (lo = hex(in[2])) >= 0 &&
		    hi * 16 + lo >= 0x20 && hi * 16 + lo != 0x7f) {
			*out++ = hi * 16 + lo;
			in += 3;
		} else {
			*out++ = *in++;
		}
	}
	*out = '\0';
	return out - uri;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct server *s = cls;
	const union MHD_ConnectionInfo *i;
	struct conn *cn;

	struct request *rq = *con_cls;

	if (rq) {
		atomic_fetch_sub(&in_flight, 1);
		/* Resumed, and closed before its answer was sent. */
		if (rq->deferred && rq->on_lane)
			api_deferred_drop(rq->deferred);
		/* ... or closed before it was handed to the lane. */
		else if (rq->deferred)
			api_deferred_cancel(rq->deferred);
		/*
		 * The answer was queued: issued if all of it went out, lost if
		 * the connection failed first (the client reset it, or a
		 * stop's deadline).  What the kernel took counts as sent:
		 * past that, nothing here can tell.
		 */
		metrics_answer_end(s->api->metrics, &rq->queued,
				   toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
	}
	free(rq);
	*con_cls = NULL;
	/* The next request's deadline counts from here. */
	i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	cn = i ? i->socket_context : NULL;
	if (cn) {
		pthread_mutex_lock(&s->lock);
		cn->since_ms = now_ms();
		if (cn->busy) {
			cn->busy = false;
			atomic_fetch_sub(&busy_conns, 1);
		}
		pthread_mutex_unlock(&s->lock);
	}
}

/*
 * A request line read (its headers may still be coming): the connection
 * is busy again, and a stop waits for it as for one in flight.
 */
static void *request_begun(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct server *s = cls;
	const union MHD_ConnectionInfo *i;
	struct conn *cn;

	(void)uri;
	i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	cn = i ? i->socket_context : NULL;
	if (cn) {
		pthread_mutex_lock(&s->lock);
		if (!cn->busy) {
			cn->busy = true;
			atomic_fetch_add(&busy_conns, 1);
		}
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;		/* handle() makes its struct request */
}

/*
 * The key a client's connections are counted under for
 * max_connections_per_ip: its IPv4 address (an IPv4-mapped IPv6 one
 * too, as a dual-stack listener sees IPv4 clients), or the first
 * prefix bits of its IPv6 address -- one host commonly holds a whole
 * /64, and would take every slot with an address of it per connection
 * -- then the family (4 or 6), so that no IPv4 and IPv6 keys are equal.
 * Zeroed for another family: all such clients as one.
 */
void server_conn_key(const struct sockaddr *sa, unsigned int prefix,
		     unsigned char key[17])
{
	static const unsigned char mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};
	const unsigned char *a;
	unsigned int i;

	memset(key, 0, 17);
	if (sa->sa_family == AF_INET) {
		memcpy(key, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		key[16] = 4;
	} else if (sa->sa_family == AF_INET6) {
		a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		if (!memcmp(a, mapped, sizeof(mapped))) {
			memcpy(key, a + 12, 4);
			key[16] = 4;
			return;
		}
		for (i = 0; i < 16 && prefix >= 8; i++, prefix -= 8)
			key[i] = a[i];
		if (i < 16 && prefix)
			key[i] = a[i] & (0xff << (8 - prefix));
		key[16] = 6;
	}
}

static void client_address(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a = NULL;

	if (sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (!a || !inet_ntop(sa->sa_family, a, buf, len))
		snprintf(buf, len, "?");
}

/*
 * GnuTLS's hook on a Finished message: the client's ends the handshake.
 * libmicrohttpd sets each session's pointer to its connection (0.9.75,
 * as every version since TLS came), checked before the hook is set.
 */
static int handshake_done(gnutls_session_t session, unsigned int htype,
			  unsigned int when, unsigned int incoming,
			  const gnutls_datum_t *msg)
{
	const union MHD_ConnectionInfo *i;
	struct conn *cn;

	(void)htype;
	(void)when;
	(void)msg;
	if (!incoming)
		return 0;
	i = MHD_get_connection_info(gnutls_session_get_ptr(session),
				    MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	cn = i ? i->socket_context : NULL;
	if (cn)
		atomic_store(&cn->tls_done, true);
	return 0;
}

/*
 * A TLS connection just accepted, its handshake not begun: the context in
 * force now is its own for its life (a reload does not touch it), its
 * credentials replace libmicrohttpd's, and with a client CA it must show
 * a client certificate.  A failure leaves libmicrohttpd's credentials,
 * which have no certificate (refuse_cert()): the handshake fails.
 */
static void tls_begin(struct server *s, struct MHD_Connection *c, struct conn *cn)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t session = i ? i->tls_session : NULL;

	if (!session)
		return;
	cn->tls = tls_current(s->tls);
	if (tls_session_setup(cn->tls, session, TLS_ALPN_HTTP1))
		return;
	if (gnutls_session_get_ptr(session) == (void *)c)
		gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_FINISHED,
						   GNUTLS_HOOK_POST, handshake_done);
}

static void notify_connection(void *cls, struct MHD_Connection *c,
			      void **socket_context,
			      enum MHD_ConnectionNotificationCode toe)
{
	static const char *const limit_name[NR_REFUSED] = {
		[REFUSED_MAX_CONNECTIONS] = "max_connections",
		[REFUSED_MAX_CONNECTIONS_PER_IP] = "max_connections_per_ip",
	};
	struct server *s = cls;
	const union MHD_ConnectionInfo *i;
	struct conn *cn = *socket_context;
	struct conn *other;
	unsigned int same = 0, limit_n = 0;
	int refused = 0;
	char prefix[8] = "";

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		cn = calloc(1, sizeof(*cn));
		i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!cn || !i) {
			free(cn);
			return;		/* unwatched: the idle timeout only */
		}
		cn->fd = i->connect_fd;
		if (s->tls)
			tls_begin(s, c, cn);
		i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (i && i->client_addr) {
			server_conn_key(i->client_addr, s->ipv6_prefix, cn->ip);
			client_address(i->client_addr, cn->addr, sizeof(cn->addr));
		} else {
			snprintf(cn->addr, sizeof(cn->addr), "?");
		}
		pthread_mutex_lock(&s->lock);
		cn->since_ms = now_ms();
		for (other = s->conns.next; other != &s->conns; other = other->next)
			same += !other->cut && !other->refused &&
				!memcmp(other->ip, cn->ip, sizeof(cn->ip));
		/*
		 * The limits are kept here, not by libmicrohttpd: it would
		 * leave connections past max_connections unaccepted, in the
		 * backlog, and close those past the per-address one unanswered.
		 * Its accept policy callback can only accept or drop, too.
		 * Over a limit here, a connection is taken, counted by reason,
		 * and its request answered 503 with Retry-After and
		 * "Connection: close" (handle()): a client, or the load
		 * balancer in front, sees why.
		 */
		if (s->nr_conns >= s->max_connections) {
			refused = REFUSED_MAX_CONNECTIONS + 1;
			limit_n = s->max_connections;
		} else if (s->max_connections_per_ip &&
			   same >= s->max_connections_per_ip) {
			refused = REFUSED_MAX_CONNECTIONS_PER_IP + 1;
			limit_n = s->max_connections_per_ip;
		}
		cn->refused = refused;
		if (!refused) {
			/* Freshly opened: a request is presumably on its way. */
			s->nr_conns++;
			cn->busy = true;
			atomic_fetch_add(&busy_conns, 1);
		}
		cn->next = s->conns.next;
		cn->prev = &s->conns;
		cn->next->prev = cn;
		s->conns.next = cn;
		pthread_mutex_unlock(&s->lock);
		*socket_context = cn;
		if (s->api->metrics)
			atomic_fetch_add(&s->api->metrics->conn_open, 1);
		if (refused) {
			if (s->api->metrics)
				atomic_fetch_add(&s->api->metrics->conn_refused[refused - 1], 1);
			if (refused - 1 == REFUSED_MAX_CONNECTIONS_PER_IP &&
			    cn->ip[16] == 6 && s->ipv6_prefix < 128)
				snprintf(prefix, sizeof(prefix), "/%u", s->ipv6_prefix);
			log_ratelimited_by(LOG_WARNING, limit_name[refused - 1],
					   "%s: connection from %s%s refused (503): %s "
					   "(%u) reached", s->addr, cn->addr, prefix,
					   limit_name[refused - 1], limit_n);
		}
		return;
	}
	if (!cn)
		return;
	/* Before libmicrohttpd closes the socket: the watch never sees it reused. */
	pthread_mutex_lock(&s->lock);
	cn->prev->next = cn->next;
	cn->next->prev = cn->prev;
	if (!cn->cut && !cn->refused)
		s->nr_conns--;
	if (cn->busy)
		atomic_fetch_sub(&busy_conns, 1);
	pthread_mutex_unlock(&s->lock);
	tls_ctx_put(cn->tls);
	free(cn->peer);
	free(cn);
	*socket_context = NULL;
	if (s->api->metrics)
		atomic_fetch_sub(&s->api->metrics->conn_open, 1);
}

static void *watch(void *arg)
{
	struct timespec pause = { 0, WATCH_MS * 1000000L };
	struct server *s = arg;
	unsigned int cut, slow_tls;
	struct conn *cn;
	int64_t now;

	while (!atomic_load(&s->quit)) {
		nanosleep(&pause, NULL);
		cut = slow_tls = 0;
		now = now_ms();
		pthread_mutex_lock(&s->lock);
		for (cn = s->conns.next; cn != &s->conns; cn = cn->next) {
			if (cn->cut)
				continue;
			/*
			 * A handshake not done in time (since_ms is the opening
			 * until a request is answered): a client holding it
			 * half-finished, or trickling it, has its slot no longer.
			 */
			if (s->tls && !atomic_load(&cn->tls_done) &&
			    now - cn->since_ms > s->handshake_ms) {
				shutdown(cn->fd, SHUT_RDWR);
				cn->cut = true;
				if (!cn->refused)
					s->nr_conns--;
				slow_tls++;
				continue;
			}
			if (cn->refused && now - cn->since_ms > REFUSED_MS) {
				/* Refused, and no request to answer 503 came. */
				shutdown(cn->fd, SHUT_RDWR);
				cn->cut = true;
			} else if (!cn->refused && now - cn->since_ms > s->deadline_ms) {
				shutdown(cn->fd, SHUT_RDWR);
				cn->cut = true;
				s->nr_conns--;
				cut++;
			}
		}
		pthread_mutex_unlock(&s->lock);
		if (slow_tls && s->api->metrics)
			atomic_fetch_add(&s->api->metrics->tls_handshake_timeouts, slow_tls);
		if (!cut)
			continue;
		if (s->api->metrics)
			atomic_fetch_add(&s->api->metrics->conn_cut, cut);
		log_ratelimited_by(LOG_NOTICE, "deadline", "%s: %u connection(s) "
				   "closed: a request not answered within %u ms of the "
				   "connection's opening or its previous answer (a slow "
				   "or stalled client)", s->addr, cut, s->deadline_ms);
	}
	return NULL;
}

/* libmicrohttpd's messages, sorted: they come once per connection. */
static bool has(const char *line, const char *what)
{
	return strstr(line, what) != NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct server *s = cls;
	char line[512];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	/* A client gone, or our own MHD_NO (logged where it is returned). */
	if (has(line, "closed by remote") || has(line, "disconnected") ||
	    has(line, "is closed when reading") || has(line, "Failed to receive") ||
	    has(line, "Failed to send") || has(line, "Application reported internal error"))
		log_ratelimited_by(LOG_DEBUG, line, "%s: %s", s->addr, line);
	else
		log_ratelimited_by(LOG_WARNING, line, "%s: %s", s->addr, line);
}

/*
 * libmicrohttpd's own certificate, asked for only by a session whose
 * context could not be set (tls_begin()): none, so that handshake fails.
 */
static int refuse_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_dn,
		       int nreqs, const gnutls_pk_algorithm_t *pk_algos,
		       int pk_algos_length, gnutls_pcert_st **pcert,
		       unsigned int *pcert_length, gnutls_privkey_t *key)
{
	(void)session;
	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	(void)pcert;
	(void)pcert_length;
	(void)key;
	return -1;
}

/* "HOST:PORT" or "[IPv6]:PORT" as a socket address. */
int server_resolve(const char *addr, struct addrinfo **res)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
	};
	char host[128];
	const char *colon, *port, *h = addr;
	size_t hlen;
	uint64_t p;
	int err;

	colon = strrchr(addr, ':');
	if (!colon) {
		log_err("listen address '%s': want HOST:PORT or [IPv6]:PORT", addr);
		return -EINVAL;
	}
	port = colon + 1;
	if (idgen_decimal_str(port, 0, 65535, &p)) {
		log_err("listen address '%s': the port must be a number from 0 to 65535",
			addr);
		return -EINVAL;
	}
	hlen = colon - addr;
	if (hlen >= 2 && addr[0] == '[' && addr[hlen - 1] == ']') {
		h++;		/* addr stays whole, for the messages */
		hlen -= 2;
	}
	if (!hlen || hlen >= sizeof(host)) {
		log_err("listen address '%s': no host (0.0.0.0 or [::] for every address)",
			addr);
		return -EINVAL;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	err = getaddrinfo(host, port, &hints, res);
	if (err) {
		log_err("listen address '%s': %s", addr, gai_strerror(err));
		return -EINVAL;
	}
	return 0;
}

struct server *server_start(const char *addr, const struct server_limits *lim,
			    struct api *api)
{
	unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO |
			     MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME;
	unsigned int threads = lim->threads;
	/* With TLS: GnuTLS's, with every session's own context (tls_begin()). */
	struct MHD_OptionItem tls_opts[] = {
		{ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITY },
		{ MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)refuse_cert },
		{ MHD_OPTION_END, 0, NULL },
	};
	struct addrinfo *ai;
	struct server *s;

	if (server_resolve(addr, &ai))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		freeaddrinfo(ai);
		log_err("listen address '%s': out of memory", addr);
		return NULL;
	}
	s->api = api;
	snprintf(s->addr, sizeof(s->addr), "%s", addr);
	pthread_mutex_init(&s->lock, NULL);
	s->conns.next = s->conns.prev = &s->conns;
	s->deadline_ms = 2 * lim->timeout_s * 1000;
	s->max_connections = lim->max_connections;
	s->max_connections_per_ip = lim->max_connections_per_ip;
	s->ipv6_prefix = lim->ipv6_prefix_per_ip ? lim->ipv6_prefix_per_ip : 128;
	s->tls = api->tls;
	s->handshake_ms = lim->handshake_timeout_s * 1000;
	/*
	 * With TLS, poll() rather than epoll: libmicrohttpd's epoll loop
	 * learns that a socket has nothing left to read only from its own
	 * recv(), but GnuTLS reads the handshake from the socket itself, so
	 * a connection in its handshake stays "ready" and the thread spins
	 * on it (a silent client held a core until the handshake timeout).
	 * poll() asks for each connection what GnuTLS waits for
	 * (gnutls_record_get_direction()) and sleeps until it comes.
	 */
	if (s->tls) {
		flags &= ~MHD_USE_EPOLL_INTERNAL_THREAD;
		flags |= MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_TLS;
	} else {
		tls_opts[0].option = MHD_OPTION_END;
	}
	if (!threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		threads = n > 0 ? n : 1;
	}
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* The logger first, so that MHD's own messages go through it too. */
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, s,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
				MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				MHD_OPTION_THREAD_POOL_SIZE, threads,
				/* Above ours (notify_connection()): room to refuse. */
				MHD_OPTION_CONNECTION_LIMIT,
				lim->max_connections + SERVER_REFUSE_ROOM,
				MHD_OPTION_CONNECTION_TIMEOUT, lim->timeout_s,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MEMORY_LIMIT,
				MHD_OPTION_NOTIFY_COMPLETED, completed, s,
				MHD_OPTION_NOTIFY_CONNECTION, notify_connection, s,
				MHD_OPTION_UNESCAPE_CALLBACK, unescape, s,
				MHD_OPTION_URI_LOG_CALLBACK, request_begun, s,
				MHD_OPTION_ARRAY, tls_opts,
				MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!s->d) {
		log_err("cannot listen on %s (libmicrohttpd's line above says why: "
			"an address in use or not this host's, a port below 1024 "
			"without the capability)", addr);
		free(s);
		return NULL;
	}
	if (pthread_create(&s->watch, NULL, watch, s)) {
		log_err("listen address '%s': cannot start a thread", addr);
		MHD_stop_daemon(s->d);
		free(s);
		return NULL;
	}
	s->watching = true;
	return s;
}

uint16_t server_port(const struct server *s)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);

	return i ? i->port : 0;
}

void servers_stop(struct server **servers, unsigned int n, unsigned int drain_ms)
{
	struct timespec pause = { 0, 10 * 1000000 };
	unsigned int i, waited;
	int fd[n ? n : 1];

	/*
	 * Every listener stops accepting first, so none takes new work while
	 * another drains; answers from now on close their connection.
	 */
	atomic_store(&stopping, true);
	for (i = 0; i < n; i++)
		fd[i] = servers[i] ? MHD_quiesce_daemon(servers[i]->d) : -1;
	/*
	 * The requests in flight, and the connections with one begun or
	 * just opened; not the idle keep-alive ones: they have nothing to
	 * finish.
	 */
	for (waited = 0; waited < drain_ms &&
	     (atomic_load(&in_flight) || atomic_load(&busy_conns)); waited += 10)
		nanosleep(&pause, NULL);
	if (atomic_load(&in_flight) || atomic_load(&busy_conns))
		log_warn("%u connection(s) with a request unanswered after %u ms: "
			 "closing them", atomic_load(&busy_conns), drain_ms);
	/*
	 * No connection may stay set aside when its daemon stops: the lane
	 * answers every request it holds first (all servers share one api).
	 */
	for (i = 0; i < n; i++)
		if (servers[i] && servers[i]->api->lane) {
			lane_stop(servers[i]->api->lane);
			break;
		}
	for (i = 0; i < n; i++) {
		struct server *s = servers[i];

		if (!s)
			continue;
		MHD_stop_daemon(s->d);
		if (fd[i] >= 0)
			close(fd[i]);
		atomic_store(&s->quit, true);
		if (s->watching)
			pthread_join(s->watch, NULL);
		pthread_mutex_destroy(&s->lock);
		free(s);
		servers[i] = NULL;
	}
}

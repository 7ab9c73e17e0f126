// SPDX-License-Identifier: GPL-2.0
/*
 * One gRPC connection (grpc_conn.h): its bytes between its transport and
 * its nghttp2 server session, the limits on what a peer may make the
 * session do or hold, and its timeouts.  What happens on its streams is
 * grpc_stream.c's; the listener that accepts it, grpc_listen.c's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grpc_conn.h"
#include "grpc_stream.h"
#include "log.h"
#include "monotonic.h"

#define READ_SIZE	16384
#define FLUSH_SIZE	65536		/* the frames gathered for one send() */
#define MAX_CONTINUATIONS 8		/* CONTINUATION frames of one header block */
#define MAX_SETTINGS	32		/* entries of one SETTINGS frame */

/* Peers cut off, a line a kind now and then: they come in floods. */
static struct log_ratelimit ctrl_flood, unread;

/* --- the transport ------------------------------------------------------ */

static ssize_t plain_recv(struct grpc_conn *c, uint8_t *buf, size_t len)
{
	return recv(c->fd, buf, len, 0);
}

static ssize_t plain_send(struct grpc_conn *c, const uint8_t *buf, size_t len)
{
	return send(c->fd, buf, len, MSG_NOSIGNAL);
}

static const struct grpc_transport plain = { .recv = plain_recv, .send = plain_send };

/* TLS's records (tls.h), errors as errno. */
static ssize_t tls_io_recv(struct grpc_conn *c, uint8_t *buf, size_t len)
{
	ssize_t n = tls_recv(c->tls, buf, len);

	if (n < 0) {
		errno = -n;
		return -1;
	}
	return n;
}

static ssize_t tls_io_send(struct grpc_conn *c, const uint8_t *buf, size_t len)
{
	ssize_t n = tls_send(c->tls, buf, len);

	if (n < 0) {
		errno = -n;
		return -1;
	}
	return n;
}

static const struct grpc_transport tls_io = { .recv = tls_io_recv, .send = tls_io_send };

int grpc_conn_tls(struct grpc_conn *c, struct tls *tls)
{
	struct tls_ctx *ctx = tls_current(tls);

	if (tls_session_new(ctx, c->fd, TLS_ALPN_H2, &c->tls)) {
		tls_ctx_put(ctx);
		c->tls = NULL;
		return -1;
	}
	c->tls_ctx = ctx;
	c->io = &tls_io;
	return 0;
}

const char *grpc_conn_caller(const struct grpc_conn *c)
{
	return c->peer ? c->peer->caller : NULL;
}

/*
 * Handshakes that fail come in floods (a port scan, a client without a
 * certificate): rate-limited.
 */
static void log_handshake(const struct grpc_conn *c, const char *why)
{
	static struct log_ratelimit rl;
	char addr[INET6_ADDRSTRLEN] = "?";
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);

	if (!getpeername(c->fd, (struct sockaddr *)&sa, &salen))
		inet_ntop(sa.ss_family, sa.ss_family == AF_INET6 ?
			  (void *)&((struct sockaddr_in6 *)&sa)->sin6_addr :
			  (void *)&((struct sockaddr_in *)&sa)->sin_addr, addr, sizeof(addr));
	log_ratelimited(&rl, LOG_NOTICE, "gRPC %s: a TLS handshake from %s failed: %s",
			c->srv ? c->srv->addr : "", addr, why);
}

/*
 * The handshake's next step.  Done, the peer's caller is read (with a
 * client CA), and the session's SETTINGS, queued since the connection
 * opened, go out first.
 */
static void tls_step(struct grpc_conn *c)
{
	const char *why = "";
	char pwhy[512];
	int ret;

	ret = tls_handshake_step(c->tls, TLS_ALPN_H2, &c->tls_want_write, &why);
	if (ret == TLS_WANT)
		return;
	if (ret < 0) {
		log_handshake(c, why);
		c->failed = true;
		return;
	}
	if (tls_ctx_mtls(c->tls_ctx)) {
		c->peer = malloc(sizeof(*c->peer));
		if (!c->peer || tls_peer_of(c->tls_ctx, c->tls, c->peer, pwhy, sizeof(pwhy)) ||
		    !c->peer->certified) {
			if (c->api->metrics)
				atomic_fetch_add(&c->api->metrics->tls_peers_refused, 1);
			log_handshake(c, c->peer ? pwhy : "out of memory");
			c->failed = true;
			return;
		}
	}
	c->tls_done = true;
	if (grpc_conn_flush(c))
		c->failed = true;
}

/* What of buf the transport took: n >= 0, or -1 to close (errno's not EAGAIN). */
static ssize_t transport_send(struct grpc_conn *c, const uint8_t *buf, size_t len)
{
	ssize_t n;

	do
		n = c->io->send(c, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return n;
}

/*
 * Send what the session has for the peer: its frames gathered into one
 * buffer and one send() (a frame per system call would cost more than
 * the frames).  What the socket does not take waits in c->unsent, and the
 * session is asked for no more until it is gone.
 */
int grpc_conn_flush(struct grpc_conn *c)
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
	if (c->tls && !c->tls_done)
		return 0;	/* nothing of HTTP/2 before the handshake is done */
	for (;;) {
		while (c->unsent) {
			n = transport_send(c, c->unsent + c->unsent_off,
					   c->unsent_len - c->unsent_off);
			if (n < 0)
				return -1;
			if (!n) {
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
		for (len = 0; len < FLUSH_SIZE; len += n) {
			n = nghttp2_session_mem_send(c->session, &data);
			if (n < 0)
				return -1;
			if (!n)
				break;
			if (len + n > s->out_cap) {
				uint8_t *out = realloc(s->out, len + n + FLUSH_SIZE);

				if (!out)
					return -1;
				s->out = out;
				s->out_cap = len + n + FLUSH_SIZE;
			}
			memcpy(s->out + len, data, n);
		}
		if (!len)
			return 0;
		n = transport_send(c, s->out, len);
		if (n < 0)
			return -1;
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

void grpc_conn_watch(struct grpc_conn *c)
{
	struct grpc_server *s = c->srv;
	struct epoll_event e;
	uint32_t ev = 0;

	if (!s)
		return;
	/*
	 * Read while the session wants to: the peer's WINDOW_UPDATEs are
	 * what lets its answers out.  What it is owed is bounded by its
	 * streams, one answer each, and cut off after timeout_s untaken;
	 * what nghttp2 queues for it by conn_recv()'s bound.
	 */
	if (c->tls && !c->tls_done)
		ev = EPOLLIN | (c->tls_want_write ? EPOLLOUT : 0);
	else if (!c->stalled && nghttp2_session_want_read(c->session))
		ev |= EPOLLIN;
	if (c->blocked)
		ev |= EPOLLOUT;
	if (ev == c->events)
		return;
	e = (struct epoll_event){ .events = ev, .data.ptr = c };
	epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, c->fd, &e);
	c->events = ev;
}

bool grpc_conn_stopping(const struct grpc_conn *c)
{
	return c->srv && atomic_load(&c->srv->stopping);
}

/* --- the session's limits ---------------------------------------------- */

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
	bool ctrl = false;

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
		log_ratelimited(&ctrl_flood, LOG_WARNING, "gRPC: %s sends control frames "
				"faster than %d a second: GOAWAY ENHANCE_YOUR_CALM",
				c->addr, GRPC_CTRL_RATE);
		nghttp2_session_terminate_session(session, NGHTTP2_ENHANCE_YOUR_CALM);
		return 0;
	}
	grpc_stream_frame(c, frame);
	return 0;
}

/*
 * Frames a connection's session may hold for a peer that does not read:
 * a stream's own few, and the acknowledgements nghttp2 bounds itself.
 * Past it the peer is opening streams only to have them refused.
 */
static size_t queued_frames_max(const struct grpc_conn *c)
{
	return (size_t)GRPC_QUEUED_FRAMES_PER_STREAM * c->lim->max_streams +
	       GRPC_MAX_OUTBOUND_ACK;
}

/* Bytes from the peer into the session: 0, or -1 to close. */
static int conn_recv(struct grpc_conn *c, const uint8_t *data, size_t len)
{
	size_t queued;
	ssize_t n;

	c->last_recv_ns = monotonic_ns();
	n = nghttp2_session_mem_recv(c->session, data, len);
	if (n < 0 || grpc_conn_flush(c))
		return -1;
	queued = nghttp2_session_get_outbound_queue_size(c->session);
	if (!c->stalled && queued > queued_frames_max(c)) {
		log_ratelimited(&unread, LOG_WARNING, "gRPC: %s reads nothing of what it "
				"is sent and opens streams all the while (%zu frames wait "
				"for it): GOAWAY ENHANCE_YOUR_CALM, nothing more is read "
				"from it", c->addr, queued);
		nghttp2_session_terminate_session(c->session, NGHTTP2_ENHANCE_YOUR_CALM);
		c->stalled = true;
		return grpc_conn_flush(c);
	}
	return 0;
}

struct grpc_conn *grpc_conn_new(struct api *api, const struct grpc_limits *lim, int fd)
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
	c->io = &plain;
	list_init(&c->node);
	list_init(&c->streams);
	snprintf(c->addr, sizeof(c->addr), "?");
	c->opened_ns = c->last_recv_ns = c->last_send_ns = c->last_active_ns = monotonic_ns();
	if (nghttp2_session_callbacks_new(&cb)) {
		free(c);
		return NULL;
	}
	grpc_stream_callbacks(cb);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, frame_recv_cb);
	if (nghttp2_option_new(&opt)) {
		nghttp2_session_callbacks_del(cb);
		free(c);
		return NULL;
	}
	/* Rapid reset (CVE-2023-44487), CONTINUATION floods, SETTINGS floods. */
	nghttp2_option_set_stream_reset_rate_limit(opt, GRPC_RST_BURST, GRPC_RST_RATE);
	nghttp2_option_set_max_continuations(opt, MAX_CONTINUATIONS);
	nghttp2_option_set_max_settings(opt, MAX_SETTINGS);
	nghttp2_option_set_max_outbound_ack(opt, GRPC_MAX_OUTBOUND_ACK);
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

void grpc_conn_free(struct grpc_conn *c)
{
	/* No close callback runs from here: the streams' calls are cancelled. */
	nghttp2_session_del(c->session);
	grpc_streams_free(c);
	if (c->tls) {
		/* close_notify, if the socket takes it now; never waited for. */
		if (c->tls_done && !c->failed)
			gnutls_bye(c->tls, GNUTLS_SHUT_WR);
		gnutls_deinit(c->tls);
		tls_ctx_put(c->tls_ctx);
		free(c->peer);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c->unsent);
	free(c);
}

struct grpc_conn *grpc_conn_mem(struct api *api, const struct grpc_limits *lim)
{
	return grpc_conn_new(api, lim, -1);
}

int grpc_conn_feed(struct grpc_conn *c, const uint8_t *data, size_t len)
{
	if (c->failed || conn_recv(c, data, len))
		c->failed = true;
	return c->failed ? -1 : 0;
}

void grpc_conn_mem_free(struct grpc_conn *c)
{
	grpc_conn_free(c);
}

bool grpc_conn_over(const struct grpc_conn *c)
{
	return c->failed || (!c->unsent && !nghttp2_session_want_read(c->session) &&
			     !nghttp2_session_want_write(c->session));
}

void grpc_conn_event(struct grpc_conn *c, uint32_t events)
{
	uint8_t buf[READ_SIZE];
	ssize_t n;

	if (events & (EPOLLERR | EPOLLHUP))
		c->failed = true;
	if (!c->failed && c->tls && !c->tls_done) {
		tls_step(c);
		if (c->failed || !c->tls_done)
			return;
		events |= EPOLLIN;	/* the preface may have come with it */
	}
	if (!c->failed && (events & EPOLLOUT) && grpc_conn_flush(c))
		c->failed = true;
	/* TLS may hold records already read from the socket: those too. */
	while (!c->failed && !c->stalled && (events & EPOLLIN)) {
		n = c->io->recv(c, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			c->failed = true;
		else if (n > 0 && conn_recv(c, buf, n))
			c->failed = true;
		if (n <= 0 || !c->tls || !tls_pending(c->tls))
			break;
	}
}

/* c's own timeouts, at a tick. */
static void conn_timeouts(struct grpc_conn *c, uint64_t now)
{
	const struct grpc_server *s = c->srv;
	const uint64_t timeout = c->lim->timeout_s * NS_PER_S;
	const uint64_t idle = c->lim->idle_timeout_s * NS_PER_S;

	/*
	 * A TLS handshake not done within its bound: held half-finished or
	 * trickled, it has its slot no longer.  Nothing else runs before it.
	 */
	if (c->tls && !c->tls_done) {
		if (now - c->opened_ns > c->lim->handshake_timeout_s * NS_PER_S) {
			c->failed = true;
			if (c->api->metrics)
				atomic_fetch_add(&c->api->metrics->tls_handshake_timeouts, 1);
		}
		return;
	}

	/* Owed bytes the peer takes none of, for timeout_s: cut off. */
	if (!c->queued && !c->blocked)
		c->last_send_ns = now;
	else if (now - c->last_send_ns > timeout)
		c->failed = true;
	if (c->ping_ns && now - c->ping_ns > timeout)
		c->failed = true;
	if (!c->served && now - c->opened_ns > timeout) {
		/*
		 * No whole request in timeout_s: the handshake's time, which
		 * a preface and SETTINGS alone do not stretch to the idle
		 * timeout.
		 */
		nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
	} else if (!c->nr_streams && now - c->last_active_ns > idle) {
		nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
	} else if (c->nr_streams && !c->ping_ns && now - c->last_recv_ns > idle) {
		/* A Watch's client, silent: still there? */
		if (!nghttp2_submit_ping(c->session, NGHTTP2_FLAG_NONE, NULL))
			c->ping_ns = now;
	}
	if (atomic_load(&s->stopping) && s->drain_until_ns && now > s->drain_until_ns)
		c->failed = true;
}

void grpc_conn_tick(struct grpc_conn *c, uint64_t now, int *ready)
{
	struct grpc_stream *st, *tmp;

	list_for_each_entry_safe(st, tmp, &c->streams, node)
		grpc_stream_tick(st, now, c->lim->timeout_s * NS_PER_S, ready);
	conn_timeouts(c, now);
	if (!c->failed && grpc_conn_flush(c))
		c->failed = true;
}

void grpc_conn_stop(struct grpc_conn *c)
{
	struct grpc_stream *st;

	if (c->tls && !c->tls_done) {
		c->failed = true;	/* no request on it yet: nothing to drain */
		return;
	}
	nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
			      nghttp2_session_get_last_proc_stream_id(c->session),
			      NGHTTP2_NO_ERROR, NULL, 0);
	list_for_each_entry(st, &c->streams, node)
		grpc_stream_stop(st);
	if (grpc_conn_flush(c))
		c->failed = true;
}

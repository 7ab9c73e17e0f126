/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the gRPC listener (grpc.h): a listener (grpc_listen.c) and its
 * connections (grpc_conn.c), as grpc_stream.c and grpc_health.c see
 * them too.  All of it belongs to the listener's thread, but the done
 * list.
 */
#ifndef HTTPD_GRPC_CONN_H
#define HTTPD_GRPC_CONN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <gnutls/gnutls.h>
#include <nghttp2/nghttp2.h>

#include "api.h"
#include "grpc.h"
#include "list.h"
#include "tls.h"

#define NS_PER_S	1000000000ULL
#define NS_PER_MS	1000000ULL

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
	struct list_node conns;		/* open: struct grpc_conn */
	unsigned int nr_conns;
	struct list_node dead;		/* closed in this round of events */
	uint64_t accept_paused_ns;	/* out of descriptors since; 0: accepting */
	/* Calls the lane has finished (struct grpc_pending), under lock. */
	pthread_mutex_t lock;
	struct list_node done;
	int ready;			/* readiness at this tick: -1 unknown */
	uint8_t *out;			/* the frames of one flush, for one send() */
	size_t out_cap;
};

struct grpc_conn;

/*
 * How a connection's bytes reach its peer, below HTTP/2: a plain socket,
 * or with TLS (api->tls) GnuTLS's records over it, its handshake done
 * before the session's first byte (grpc_conn_tls()); nothing above them
 * touches the socket.  Each returns as recv(2) and send(2) do.
 */
struct grpc_transport {
	ssize_t (*recv)(struct grpc_conn *c, uint8_t *buf, size_t len);
	ssize_t (*send)(struct grpc_conn *c, const uint8_t *buf, size_t len);
};

struct grpc_conn {
	struct list_node node;		/* in its server's conns, then dead */
	struct grpc_server *srv;	/* NULL: grpc_conn_mem() */
	struct api *api;
	const struct grpc_limits *lim;
	int fd;				/* -1: grpc_conn_mem() */
	const struct grpc_transport *io;
	nghttp2_session *session;
	unsigned char key[17];		/* the peer, as per-address limits count it */
	char addr[56];			/* ... and as the log names it */
	struct list_node streams;	/* struct grpc_stream */
	unsigned int nr_streams;
	size_t queued;			/* bytes of body not yet sent */
	size_t owed;			/* its streams' owed */
	size_t buffered;		/* its streams' requests, of GRPC_MAX_BUFFERED */
	uint64_t opened_ns;
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
	bool stalled;			/* it reads nothing, we read no more of it */
	uint8_t *unsent;		/* what a full socket left, to send first */
	size_t unsent_len, unsent_off;
	bool failed;			/* close it */
	bool dead;			/* closed; freed after this round of events */
	bool served;			/* a whole request came: past the handshake */
	uint32_t events;		/* what epoll watches now */
	/*
	 * With TLS: its session, the context it began with (held until it
	 * closes: a reload does not touch it), whether the handshake is done
	 * and which way it waits, and with a client CA the caller its
	 * certificate proves.
	 */
	gnutls_session_t tls;
	struct tls_ctx *tls_ctx;
	bool tls_done, tls_want_write;
	struct tls_peer *peer;
};

/*
 * A connection on the socket fd (-1: none, grpc_conn_mem()) with its
 * server session, the session's SETTINGS queued; NULL: out of memory.
 * The listener sets srv, key and addr.
 */
struct grpc_conn *grpc_conn_new(struct api *api, const struct grpc_limits *lim, int fd);

/*
 * c speaks TLS on tls's context in force now (ALPN h2), its handshake
 * first: 0, or -1 (out of memory) with c unchanged.
 */
int grpc_conn_tls(struct grpc_conn *c, struct tls *tls);

/* The caller c's client certificate proves (next_ask.authenticated), or NULL. */
const char *grpc_conn_caller(const struct grpc_conn *c);

/* c, its session, its streams (their calls on the lane cancelled), its socket. */
void grpc_conn_free(struct grpc_conn *c);

/* epoll's events for c: read and write what they allow. */
void grpc_conn_event(struct grpc_conn *c, uint32_t events);

/*
 * A tick: each stream's (grpc_stream_tick(), *ready its readiness), then
 * c's own timeouts, then what they made sent.
 */
void grpc_conn_tick(struct grpc_conn *c, uint64_t now, int *ready);

/* The listener stops: GOAWAY, and each stream told (grpc_stream_stop()). */
void grpc_conn_stop(struct grpc_conn *c);

/* Done with c: failed, or its session ended with nothing left to send. */
bool grpc_conn_over(const struct grpc_conn *c);

/* Send what c's session has for its peer: 0, or -1 to close. */
int grpc_conn_flush(struct grpc_conn *c);

/* What epoll watches for c, after its session's wants changed. */
void grpc_conn_watch(struct grpc_conn *c);

/* c's listener is stopping (never, for grpc_conn_mem()'s). */
bool grpc_conn_stopping(const struct grpc_conn *c);

#endif /* HTTPD_GRPC_CONN_H */

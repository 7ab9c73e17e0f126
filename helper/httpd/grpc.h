/* SPDX-License-Identifier: GPL-2.0 */
/*
 * idgen-httpd's gRPC listeners (Documentation/design.md section 9.2):
 * cleartext HTTP/2 with prior knowledge (h2c) on libnghttp2, the gRPC
 * framing on top, and the methods of grpc_service.h.
 *
 * Each listener has one thread with an epoll loop over its connections.
 * Small calls are answered on it; a NextIds of LANE_MIN_COUNT IDs or
 * more is minted on the bulk lane (lane.h) and answered when the lane
 * hands it back, so no connection waits for another's IDs.  The files:
 * grpc_listen.c the listener and the limits on connections; grpc_conn.c
 * a connection, its transport and the limits on what its peer may make
 * it hold; grpc_stream.c the streams, the framing of their messages and
 * unary dispatch; grpc_health.c the health service, Check and Watch.
 *
 * Limits, all per connection unless said:
 *  - grpc_max_streams concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS);
 *    GRPC_MAX_HEADER_LIST bytes of a stream's headers, as HPACK decodes
 *    them (the bound against HPACK bombs);
 *  - a request message of GRPC_MAX_MESSAGE bytes, refused as its 5-byte
 *    prefix arrives (nothing of a larger one is kept), and at most
 *    GRPC_MAX_BUFFERED bytes of requests not yet whole, a stream past it
 *    answered RESOURCE_EXHAUSTED;
 *  - max_connections per listener and max_connections_per_ip as the HTTP
 *    listeners count them; a connection past either is sent GOAWAY with
 *    the limit's name and closed (over TLS, closed);
 *  - control frames (PING, SETTINGS, PRIORITY, empty DATA) at
 *    GRPC_CTRL_RATE a second after a burst of GRPC_CTRL_BURST, and stream
 *    resets at GRPC_RST_RATE after GRPC_RST_BURST (rapid reset): past
 *    either, GOAWAY ENHANCE_YOUR_CALM;
 *  - frames waiting to be sent, past GRPC_QUEUED_FRAMES_PER_STREAM a
 *    stream and GRPC_MAX_OUTBOUND_ACK (a peer that reads nothing while it
 *    opens streams, each refused with a RST_STREAM): GOAWAY
 *    ENHANCE_YOUR_CALM, and nothing more is read from it;
 *  - the answers of large NextIds calls (minted on the lane) up to
 *    GRPC_MAX_OWED bytes a connection and GRPC_MAX_OWED_TOTAL for the
 *    process until they are read, a call past either answered
 *    RESOURCE_EXHAUSTED before any ID is minted for it, and a large answer
 *    held no longer than timeout_s once made;
 *  - a peer that takes nothing of what is owed to it for timeout_s, or
 *    leaves a PING unanswered that long, is cut off;
 *  - timeout_s from its opening to its first whole request (the
 *    handshake: a preface and SETTINGS alone hold no slot longer), then
 *    grpc_idle_timeout_s with no stream begun or ended (PINGs do not
 *    count): GOAWAY, and closed;
 *  - accept() out of descriptors (EMFILE, ENFILE): the listener is left
 *    unpolled for GRPC_ACCEPT_PAUSE_MS, not retried in a busy loop.
 */
#ifndef HTTPD_GRPC_H
#define HTTPD_GRPC_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"

#define GRPC_MAX_HEADER_LIST	8192	/* bytes, as SETTINGS says it */
/*
 * A request message's bytes: the HTTP API's body bound.  The largest
 * request any method takes is under a hundred bytes (a NextIdsRequest
 * with a caller of API_MAX_CALLER).
 */
#define GRPC_MAX_MESSAGE	API_MAX_BODY
/* Bytes of requests not yet whole, a connection: 16 of the largest. */
#define GRPC_MAX_BUFFERED	(16 * GRPC_MAX_MESSAGE)
#define GRPC_CTRL_BURST		1000	/* control frames at once */
#define GRPC_CTRL_RATE		100	/* control frames a second */
#define GRPC_RST_BURST		1000	/* stream resets at once (nghttp2's) */
#define GRPC_RST_RATE		33	/* stream resets a second (nghttp2's) */
/* PING and SETTINGS acknowledgements queued before it is a flood. */
#define GRPC_MAX_OUTBOUND_ACK	1000
/* Frames a stream may have waiting (headers, trailers, a reset, windows). */
#define GRPC_QUEUED_FRAMES_PER_STREAM 4
/* How often a listener looks at its timeouts, and at readiness for Watch. */
#define GRPC_TICK_MS		250
/* A listener out of descriptors stops accepting this long (to a tick). */
#define GRPC_ACCEPT_PAUSE_MS	250
/* Bytes of large answers a connection: grpc_max_streams' 100 of 10000 IDs. */
#define GRPC_MAX_OWED		(8 << 20)
#define GRPC_MAX_OWED_TOTAL	(256 << 20)	/* ... every connection's */

struct grpc_limits {
	unsigned int max_connections;
	unsigned int max_connections_per_ip;	/* 0: no limit */
	unsigned int ipv6_prefix_per_ip;	/* 1..128 */
	unsigned int max_streams;
	unsigned int idle_timeout_s;
	unsigned int timeout_s;
	unsigned int handshake_timeout_s;	/* with TLS (api->tls) */
};

struct grpc_server;

/* A listener on addr (HOST:PORT) and its thread; NULL after a log line. */
struct grpc_server *grpc_server_start(const char *addr, const struct grpc_limits *lim,
				      struct api *api);
uint16_t grpc_server_port(const struct grpc_server *s);

/*
 * Tell the listeners to stop, without waiting: each stops accepting,
 * sends its connections GOAWAY, ends health Watch streams (NOT_SERVING,
 * then UNAVAILABLE), lets the calls in flight finish for drain_ms at
 * most, then closes everything.  grpc_servers_join() waits for that (the
 * HTTP listeners drain meanwhile).  The bulk lane may still hold calls
 * of theirs: free the servers after the lane has stopped.
 */
void grpc_servers_stop(struct grpc_server **s, unsigned int n, unsigned int drain_ms);
void grpc_servers_join(struct grpc_server **s, unsigned int n);
void grpc_server_free(struct grpc_server *s);

/*
 * For the fuzzer: one connection's HTTP/2 session with no socket, fed
 * from memory; what it would send is dropped.  NULL: out of memory.
 */
struct grpc_conn;
struct grpc_conn *grpc_conn_mem(struct api *api, const struct grpc_limits *lim);
/* 0, or a negative value once the session has failed (it stays failed). */
int grpc_conn_feed(struct grpc_conn *c, const uint8_t *data, size_t len);
void grpc_conn_mem_free(struct grpc_conn *c);

#endif /* HTTPD_GRPC_H */

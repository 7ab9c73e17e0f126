/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HTTP for the routes of api.h, on libmicrohttpd: one daemon per listen
 * address, each with an epoll thread pool (MHD_USE_EPOLL_INTERNAL_THREAD,
 * MHD_USE_TURBO), keep-alive, and limits on connections (in all and per
 * client address), idle time and memory per connection, so neither a
 * flood of connections nor a slow client ties the service up.
 *
 * With api->tls, HTTPS (tls.h): libmicrohttpd's GnuTLS, each connection
 * given the context in force when it is accepted, ALPN "http/1.1", and a
 * handshake not done within handshake_timeout_s cut off.
 */
#ifndef HTTPD_SERVER_H
#define HTTPD_SERVER_H

#include <stdint.h>
#include <sys/socket.h>

#include "api.h"

/*
 * Connections a listener takes past max_connections, to answer them 503;
 * past these too, new connections wait in the listen backlog.
 */
#define SERVER_REFUSE_ROOM	64

struct server_limits {
	unsigned int threads;		/* per listener; 0: one per core */
	unsigned int max_connections;
	unsigned int max_connections_per_ip;	/* 0: no limit */
	unsigned int ipv6_prefix_per_ip;	/* 1..128; 0: 128 */
	unsigned int timeout_s;
	unsigned int handshake_timeout_s;	/* with TLS (api->tls) */
};

struct server;

/*
 * Listen on addr ("HOST:PORT", "[IPv6]:PORT"; port 0 picks a free one)
 * and serve api.  NULL after a log line naming addr and the cause.
 */
struct server *server_start(const char *addr, const struct server_limits *lim,
			    struct api *api);
/*
 * The key max_connections_per_ip counts a client's connections under:
 * 16 bytes of address (IPv4 and IPv4-mapped: 4; IPv6: its first prefix
 * bits), then the family, 4 or 6.
 */
void server_conn_key(const struct sockaddr *sa, unsigned int prefix,
		     unsigned char key[17]);
/* The port it listens on. */
/*
 * A listen address, HOST:PORT or [IPv6]:PORT, resolved for bind(): 0,
 * or -EINVAL after a log line naming what is wrong with it.
 */
struct addrinfo;
int server_resolve(const char *addr, struct addrinfo **res);
uint16_t server_port(const struct server *s);
/*
 * Stop: every listener stops accepting, then the requests in flight on
 * any of them are let finish for up to drain_ms (answered with
 * "Connection: close"); idle connections are closed.  NULL entries are
 * skipped; all are freed and set NULL.
 */
void servers_stop(struct server **servers, unsigned int n, unsigned int drain_ms);

#endif /* HTTPD_SERVER_H */

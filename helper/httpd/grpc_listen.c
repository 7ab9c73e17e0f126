// SPDX-License-Identifier: GPL-2.0
/*
 * idgen-httpd's gRPC listeners (grpc.h): a listening socket, and a
 * thread with an epoll loop over it, its connections (grpc_conn.c), a
 * timer and the bulk lane's eventfd; the limits on how many connections
 * there are, and what a connection past them is told.
 *
 * Everything of a listener happens on its thread but the bulk lane's
 * minting; a call the lane finishes comes back through the listener's
 * done list and its eventfd.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "grpc_conn.h"
#include "grpc_stream.h"
#include "log.h"
#include "monotonic.h"
#include "server.h"

#define MAX_EVENTS	64
#define DRAIN_SIZE	16384		/* a refused peer's bytes, read before the close */

/* --- connections -------------------------------------------------------- */

/*
 * c closed: out of the list and of epoll now, freed after this round of
 * events (another event of the round may still name it).
 */
static void conn_remove(struct grpc_server *s, struct grpc_conn *c)
{
	epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	c->dead = true;
	list_del(&c->node);
	list_add(&s->dead, &c->node);
	s->nr_conns--;
	if (s->api->metrics)
		atomic_fetch_sub(&s->api->metrics->conn_open, 1);
}

static void bury(struct grpc_server *s)
{
	struct grpc_conn *c, *tmp;

	list_for_each_entry_safe(c, tmp, &s->dead, node) {
		list_del(&c->node);
		grpc_conn_free(c);
	}
}

/* After c's events or its tick: closed, or watched for what it wants now. */
static void conn_settle(struct grpc_server *s, struct grpc_conn *c)
{
	if (grpc_conn_over(c))
		conn_remove(s, c);
	else
		grpc_conn_watch(c);
}

/* --- accepting ---------------------------------------------------------- */

static unsigned int count_per_ip(struct grpc_server *s, const unsigned char key[17])
{
	struct grpc_conn *c;
	unsigned int n = 0;

	list_for_each_entry(c, &s->conns, node)
		n += !memcmp(c->key, key, 17);
	return n;
}

/*
 * A connection over a limit: told so in HTTP/2's terms, then closed.  A
 * session of its own writes the server's SETTINGS and a GOAWAY that
 * processed no stream, its debug data naming the limit, to the fresh
 * socket's empty buffer; what the peer sent is read before the close, so
 * that it is a FIN, not a reset that could overtake the GOAWAY.
 */
static void refuse(struct grpc_server *s, int fd, const char *peer,
		   enum metrics_refusal why, unsigned int limit)
{
	static const char *const name[NR_REFUSED] = {
		[REFUSED_MAX_CONNECTIONS] = "max_connections",
		[REFUSED_MAX_CONNECTIONS_PER_IP] = "max_connections_per_ip",
	};
	static struct log_ratelimit logged[NR_REFUSED];
	/* One address holding too many is its own doing; a full listener is not. */
	uint32_t code = why == REFUSED_MAX_CONNECTIONS_PER_IP ? NGHTTP2_ENHANCE_YOUR_CALM :
			NGHTTP2_NO_ERROR;
	/*
	 * Over TLS the GOAWAY would need the handshake first, the very cost
	 * the limit spares the listener: the close alone, then.
	 */
	struct grpc_conn *c = s->api->tls ? NULL : grpc_conn_new(s->api, &s->lim, fd);
	uint8_t drain[DRAIN_SIZE];
	char debug[64];
	int len;

	if (s->api->metrics)
		atomic_fetch_add(&s->api->metrics->conn_refused[why], 1);
	log_ratelimited(&logged[why], LOG_WARNING, "gRPC %s: connection from %s "
			"refused (%s): %s (%u) reached", s->addr, peer,
			c ? "GOAWAY" : "closed", name[why], limit);
	if (!c) {
		close(fd);
		return;
	}
	c->srv = s;
	len = snprintf(debug, sizeof(debug), "%s (%u) reached", name[why], limit);
	nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE, 0, code, (uint8_t *)debug, len);
	grpc_conn_flush(c);
	shutdown(fd, SHUT_WR);
	while (recv(fd, drain, sizeof(drain), MSG_DONTWAIT) > 0)
		;
	grpc_conn_free(c);
}

/* accept() found no descriptor: the listener unpolled until the tick after next. */
static void accept_pause(struct grpc_server *s, int err)
{
	static struct log_ratelimit logged;

	epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL);
	s->accept_paused_ns = monotonic_ns();
	if (s->api->metrics)
		atomic_fetch_add(&s->api->metrics->accept_paused, 1);
	log_ratelimited(&logged, LOG_ERR, "gRPC %s: cannot accept connections: %s; "
			"not accepting for %d ms (%u open here: raise LimitNOFILE=, or "
			"lower max_connections)", s->addr, strerror(err),
			GRPC_ACCEPT_PAUSE_MS, s->nr_conns);
}

static void accept_resume(struct grpc_server *s, uint64_t now)
{
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = &s->listen_fd };

	if (!s->accept_paused_ns || s->listen_fd < 0 ||
	    now - s->accept_paused_ns < GRPC_ACCEPT_PAUSE_MS * NS_PER_MS)
		return;
	s->accept_paused_ns = 0;
	epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &e);
}

static void accept_one(struct grpc_server *s)
{
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	struct grpc_conn *c;
	struct epoll_event e;
	unsigned char key[17];
	char peer[INET6_ADDRSTRLEN + 8];
	int fd, one = 1;

	fd = accept4(s->listen_fd, (struct sockaddr *)&sa, &salen,
		     SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		/* The listener stays readable: retried at once, it would spin. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			accept_pause(s, errno);
		return;
	}
	server_conn_key((struct sockaddr *)&sa, s->lim.ipv6_prefix_per_ip, key);
	if (getnameinfo((struct sockaddr *)&sa, salen, peer, sizeof(peer), NULL, 0,
			NI_NUMERICHOST))
		snprintf(peer, sizeof(peer), "?");
	if (s->nr_conns >= s->lim.max_connections) {
		refuse(s, fd, peer, REFUSED_MAX_CONNECTIONS, s->lim.max_connections);
		return;
	}
	if (s->lim.max_connections_per_ip &&
	    count_per_ip(s, key) >= s->lim.max_connections_per_ip) {
		if (key[16] == 6 && s->lim.ipv6_prefix_per_ip < 128)
			snprintf(peer + strlen(peer), sizeof(peer) - strlen(peer), "/%u",
				 s->lim.ipv6_prefix_per_ip);
		refuse(s, fd, peer, REFUSED_MAX_CONNECTIONS_PER_IP,
		       s->lim.max_connections_per_ip);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c = grpc_conn_new(s->api, &s->lim, fd);
	if (!c) {
		close(fd);
		return;
	}
	c->srv = s;
	memcpy(c->key, key, sizeof(key));
	snprintf(c->addr, sizeof(c->addr), "%s", peer);
	if (s->api->tls && grpc_conn_tls(c, s->api->tls)) {
		grpc_conn_free(c);
		return;
	}
	c->events = EPOLLIN;
	e = (struct epoll_event){ .events = EPOLLIN, .data.ptr = c };
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &e)) {
		grpc_conn_free(c);
		return;
	}
	list_add(&s->conns, &c->node);
	s->nr_conns++;
	if (s->api->metrics)
		atomic_fetch_add(&s->api->metrics->conn_open, 1);
	if (grpc_conn_flush(c))
		conn_remove(s, c);
	else
		grpc_conn_watch(c);
}

/* --- the loop ----------------------------------------------------------- */

/* The listener's thread: the calls the lane has finished, answered. */
static void take_done(struct grpc_server *s)
{
	struct grpc_pending *p, *tmp;
	struct list_node done;

	list_init(&done);
	pthread_mutex_lock(&s->lock);
	list_splice_tail(&done, &s->done);
	pthread_mutex_unlock(&s->lock);
	list_for_each_entry_safe(p, tmp, &done, node) {
		list_del(&p->node);
		grpc_pending_finish(p);
	}
}

static void tick(struct grpc_server *s)
{
	struct grpc_conn *c, *tmp;
	uint64_t now = monotonic_ns();

	s->ready = -1;
	accept_resume(s, now);
	list_for_each_entry_safe(c, tmp, &s->conns, node) {
		grpc_conn_tick(c, now, &s->ready);
		conn_settle(s, c);
	}
}

static void begin_stop(struct grpc_server *s)
{
	struct grpc_conn *c;

	epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL);
	close(s->listen_fd);
	s->listen_fd = -1;
	list_for_each_entry(c, &s->conns, node) {
		grpc_conn_stop(c);
		if (!c->failed)
			grpc_conn_watch(c);
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
		if (stop_begun && list_empty(&s->conns))
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
				if (c->dead)
					continue;	/* closed earlier this round */
				grpc_conn_event(c, ev[i].events);
				conn_settle(s, c);
			}
		}
		bury(s);
	}
	while (!list_empty(&s->conns))
		conn_remove(s, list_first_entry(&s->conns, struct grpc_conn, node));
	bury(s);
	return NULL;
}

/* --- starting and stopping ---------------------------------------------- */

struct grpc_server *grpc_server_start(const char *addr, const struct grpc_limits *lim,
				      struct api *api)
{
	struct itimerspec every = {
		.it_interval = { 0, GRPC_TICK_MS * NS_PER_MS },
		.it_value = { 0, GRPC_TICK_MS * NS_PER_MS },
	};
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	struct grpc_server *s;
	struct epoll_event e;
	struct addrinfo *ai;
	int one = 1;

	s = calloc(1, sizeof(*s));
	if (!s) {
		log_err("gRPC listen address '%s': out of memory", addr);
		return NULL;
	}
	if (server_resolve(addr, &ai)) {
		free(s);
		return NULL;
	}
	s->api = api;
	s->lim = *lim;
	if (!s->lim.ipv6_prefix_per_ip)
		s->lim.ipv6_prefix_per_ip = 128;
	s->listen_fd = s->epoll_fd = s->wake_fd = s->timer_fd = -1;
	s->ready = -1;
	list_init(&s->conns);
	list_init(&s->dead);
	list_init(&s->done);
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
	uint64_t until = monotonic_ns() + drain_ms * NS_PER_MS;
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
	struct grpc_pending *p, *tmp;
	int fds[4];
	size_t i;

	if (!s)
		return;
	/* The lane has stopped: what it finished for streams now gone. */
	list_for_each_entry_safe(p, tmp, &s->done, node) {
		list_del(&p->node);
		grpc_pending_finish(p);
	}
	fds[0] = s->listen_fd;
	fds[1] = s->epoll_fd;
	fds[2] = s->wake_fd;
	fds[3] = s->timer_fd;
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	pthread_mutex_destroy(&s->lock);
	free(s->out);
	free(s);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * libmicrohttpd glue for the routes of api.c (server.h).
 */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "decimal.h"
#include "log.h"
#include "server.h"

/* Per connection: the request headers and a body of at most 4 KiB. */
#define MEMORY_LIMIT	(32 * 1024)
/* A chunked body past the limit is read this far for its 413, then cut. */
#define DROP_LIMIT	(64 * 1024)

struct server {
	struct MHD_Daemon *d;
	struct api *api;
	char addr[128];
};

/* One request: its body as it comes. */
struct request {
	struct timespec start;		/* its headers were read */
	size_t len;
	size_t dropped;			/* bytes past the limit, read and dropped */
	bool too_large;
	bool answered;
	char body[API_MAX_BODY + 1];	/* and a NUL, for api.h */
};

static const char *header(struct MHD_Connection *c, enum MHD_ValueKind kind,
			  const char *name)
{
	return MHD_lookup_connection_value(c, kind, name);
}

static enum MHD_Result queue(struct MHD_Connection *c, struct api_response *r)
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
	};
	struct api_response out;
	struct timespec now;

	rq->body[rq->len] = '\0';
	if (api_handle(s->api, &in, &out) || !out.body)
		return MHD_NO;		/* out of memory: close the connection */
	if (s->api->metrics) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		metrics_request(s->api->metrics, out.route, out.status,
				(now.tv_sec - rq->start.tv_sec) * 1000000000ULL +
				now.tv_nsec - rq->start.tv_nsec);
	}
	return queue(c, &out);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version,
			      const char *upload, size_t *upload_size, void **con_cls)
{
	struct server *s = cls;
	struct request *rq = *con_cls;
	const char *cl;
	uint64_t len;

	(void)version;
	if (!rq) {
		rq = malloc(sizeof(*rq));
		if (!rq)
			return MHD_NO;
		clock_gettime(CLOCK_MONOTONIC, &rq->start);
		rq->len = 0;
		rq->dropped = 0;
		rq->too_large = rq->answered = false;
		*con_cls = rq;
		/* A body announced too large is refused unread. */
		cl = header(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && !idgen_decimal_str(cl, 0, UINT64_MAX, &len) &&
		    len > API_MAX_BODY) {
			rq->too_large = rq->answered = true;
			return answer(s, c, url, method, rq);
		}
		return MHD_YES;
	}
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
			if (rq->dropped > DROP_LIMIT)
				return MHD_NO;	/* close the connection */
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (rq->answered)
		return MHD_YES;
	return answer(s, c, url, method, rq);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	free(*con_cls);
	*con_cls = NULL;
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
	log_warn("%s: %s", s->addr, line);
}

/* "HOST:PORT" or "[IPv6]:PORT" as a socket address. */
static int resolve(const char *addr, struct addrinfo **res)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
	};
	char host[128];
	const char *colon, *port;
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
		addr++;
		hlen -= 2;
	}
	if (!hlen || hlen >= sizeof(host)) {
		log_err("listen address '%s': no host (0.0.0.0 or [::] for every address)",
			addr);
		return -EINVAL;
	}
	memcpy(host, addr, hlen);
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
			     MHD_USE_ERROR_LOG | MHD_USE_ITC;
	unsigned int threads = lim->threads;
	struct addrinfo *ai;
	struct server *s;

	if (resolve(addr, &ai))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		freeaddrinfo(ai);
		log_err("listen address '%s': out of memory", addr);
		return NULL;
	}
	s->api = api;
	snprintf(s->addr, sizeof(s->addr), "%s", addr);
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
				MHD_OPTION_CONNECTION_LIMIT, lim->max_connections,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				lim->max_connections_per_ip,
				MHD_OPTION_CONNECTION_TIMEOUT, lim->timeout_s,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MEMORY_LIMIT,
				MHD_OPTION_NOTIFY_COMPLETED, completed, s,
				MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!s->d) {
		log_err("cannot listen on %s (libmicrohttpd's line above says why: "
			"an address in use or not this host's, a port below 1024 "
			"without the capability)", addr);
		free(s);
		return NULL;
	}
	return s;
}

uint16_t server_port(const struct server *s)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);

	return i ? i->port : 0;
}

void server_stop(struct server *s, unsigned int drain_ms)
{
	struct timespec pause = { 0, 10 * 1000000 };
	const union MHD_DaemonInfo *i;
	unsigned int waited;
	int fd;

	/* The listening socket is ours to close once MHD lets go of it. */
	fd = MHD_quiesce_daemon(s->d);
	for (waited = 0; waited < drain_ms; waited += 10) {
		i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (!i || !i->num_connections)
			break;
		nanosleep(&pause, NULL);
	}
	MHD_stop_daemon(s->d);
	if (fd >= 0)
		close(fd);
	free(s);
}

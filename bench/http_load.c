// SPDX-License-Identifier: GPL-2.0
/*
 * http_load: an open-loop HTTP/1.1 load generator, for scripts/bench/bench-http.sh.
 *
 *   http_load HOST PORT PATH BODY RATE SECONDS WARMUP CONNECTIONS [SPECTRUM]
 *
 * Sends POST PATH with BODY (application/json) RATE times a second on a
 * fixed schedule, over CONNECTIONS keep-alive connections, for WARMUP +
 * SECONDS seconds, and gives the latency of the requests after the warm-up
 * measured from the moment each was due to be sent, not from when it was:
 * a request that waits for a free connection, or for the generator, waits
 * on the clock (no coordinated omission).  One request per connection at a
 * time (no pipelining).  Prints one line of key=value figures; SPECTRUM, if
 * given, gets the latency at each percentile for a plot.
 *
 * Only loopback addresses are taken: it is a benchmark of this machine.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NS		1000000000ULL
#define BUF_SIZE	65536
/* How long the answers still owed after the last send are waited for. */
#define DRAIN_NS	(5 * NS)

struct conn {
	int fd;
	bool busy;
	uint64_t due;		/* when its request was due */
	size_t len;		/* bytes of the answer read so far */
	char buf[BUF_SIZE];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NS + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t at_percentile(const uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)(p / 100.0 * n);

	return n ? v[i < n ? i : n - 1] : 0;
}

static unsigned long number(const char *what, const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || !v || v > max) {
		fprintf(stderr, "http_load: %s: '%s' is not a number from 1 to %lu\n",
			what, s, max);
		exit(2);
	}
	return v;
}

/*
 * A whole answer in c->buf: its length, and its status in *status;
 * 0 while it is incomplete.
 */
static size_t answer_length(struct conn *c, int *status)
{
	char *end, *cl;
	size_t head, body;

	c->buf[c->len] = '\0';
	end = strstr(c->buf, "\r\n\r\n");
	if (!end)
		return 0;
	head = end + 4 - c->buf;
	if (strncmp(c->buf, "HTTP/1.1 ", 9))
		return (size_t)-1;
	*status = atoi(c->buf + 9);
	cl = strcasestr(c->buf, "\r\ncontent-length:");
	if (!cl || cl > end)
		return (size_t)-1;	/* every answer here has a length */
	body = strtoul(cl + 17, NULL, 10);
	return c->len >= head + body ? head + body : 0;
}

static int connect_to(const struct sockaddr_in *sa)
{
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa))) {
		perror("http_load: connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	unsigned long rate, seconds, warmup, nconn;
	uint64_t *lat, *lag, *queue, start, end, next_due, t;
	size_t total, sent = 0, done = 0, nlat = 0, nlag = 0, qhead = 0, qtail = 0;
	size_t errors = 0, nidle, i;
	struct conn *conns, **idle;
	char req[4096];
	int reqlen, ep;

	if (argc < 9 || argc > 10) {
		fprintf(stderr, "usage: http_load HOST PORT PATH BODY RATE SECONDS WARMUP "
			"CONNECTIONS [SPECTRUM]\n");
		return 2;
	}
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1 ||
	    (ntohl(sa.sin_addr.s_addr) >> 24) != 127) {
		fprintf(stderr, "http_load: '%s' is not a loopback address (127.0.0.0/8)\n",
			argv[1]);
		return 2;
	}
	sa.sin_port = htons(number("PORT", argv[2], 65535));
	rate = number("RATE", argv[5], 10000000);
	seconds = number("SECONDS", argv[6], 3600);
	warmup = strcmp(argv[7], "0") ? number("WARMUP", argv[7], 3600) : 0;
	nconn = number("CONNECTIONS", argv[8], 1000);
	reqlen = snprintf(req, sizeof(req), "POST %s HTTP/1.1\r\nHost: %s:%s\r\n"
			  "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
			  argv[3], argv[1], argv[2], strlen(argv[4]), argv[4]);
	if (reqlen < 0 || (size_t)reqlen >= sizeof(req)) {
		fprintf(stderr, "http_load: the request is over %zu bytes\n", sizeof(req));
		return 2;
	}

	total = rate * (seconds + warmup);
	lat = malloc(total * sizeof(*lat));
	lag = malloc(total * sizeof(*lag));
	queue = malloc(total * sizeof(*queue));
	conns = calloc(nconn, sizeof(*conns));
	idle = calloc(nconn, sizeof(*idle));
	ep = epoll_create1(0);
	if (!lat || !lag || !queue || !conns || !idle || ep < 0) {
		fprintf(stderr, "http_load: out of memory\n");
		return 1;
	}
	for (i = 0; i < nconn; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &conns[i] };

		conns[i].fd = connect_to(&sa);
		epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
		idle[i] = &conns[i];
	}
	nidle = nconn;

	start = now_ns() + NS / 10;
	end = 0;
	next_due = start;
	while (done + errors < total) {
		struct epoll_event evs[64];
		struct timespec wait;
		uint64_t until;
		int n, k;

		t = now_ns();
		/* Every request due by now joins the queue, stamped when due. */
		while (sent + (qtail - qhead) < total && next_due <= t) {
			queue[qtail++] = next_due;
			next_due = start + (uint64_t)(sent + (qtail - qhead)) * NS / rate;
		}
		while (qhead < qtail && nidle) {
			struct conn *c = idle[--nidle];

			c->due = queue[qhead++];
			c->busy = true;
			c->len = 0;
			if (write(c->fd, req, reqlen) != reqlen) {
				perror("http_load: write");
				return 1;
			}
			if (c->due >= start + warmup * NS)
				lag[nlag++] = t - c->due;
			sent++;
		}
		if (sent == total && !end)
			end = t;
		if (end && t > end + DRAIN_NS)
			break;
		/* Sleep until the next request is due, or an answer comes. */
		until = sent + (qtail - qhead) < total ? next_due : t + DRAIN_NS;
		if (qhead < qtail)
			until = t + DRAIN_NS;	/* queued: only an answer frees a connection */
		wait.tv_sec = (until > t ? until - t : 0) / NS;
		wait.tv_nsec = (until > t ? until - t : 0) % NS;
		n = epoll_pwait2(ep, evs, 64, &wait, NULL);
		if (n < 0 && errno != EINTR) {
			perror("http_load: epoll_pwait2");
			return 1;
		}
		t = now_ns();
		for (k = 0; k < n; k++) {
			struct conn *c = evs[k].data.ptr;
			ssize_t r;
			size_t len;
			int status = 0;

			r = read(c->fd, c->buf + c->len, BUF_SIZE - 1 - c->len);
			if (r <= 0 || !c->busy) {
				fprintf(stderr, "http_load: the server closed a connection "
					"(or sent what was not asked for)\n");
				return 1;
			}
			c->len += r;
			len = answer_length(c, &status);
			if (len == (size_t)-1 || (!len && c->len == BUF_SIZE - 1)) {
				fprintf(stderr, "http_load: an answer that is not HTTP/1.1 "
					"with a Content-Length\n");
				return 1;
			}
			if (!len)
				continue;
			if (status != 200)
				errors++;
			else
				done++;
			if (status == 200 && c->due >= start + warmup * NS)
				lat[nlat++] = t - c->due;
			c->busy = false;
			idle[nidle++] = c;
		}
	}

	qsort(lat, nlat, sizeof(*lat), cmp_u64);
	qsort(lag, nlag, sizeof(*lag), cmp_u64);
	printf("rate=%lu seconds=%lu connections=%lu sent=%zu ok=%zu errors=%zu lost=%zu "
	       "p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f "
	       "send_lag_p99_us=%.1f send_lag_max_us=%.1f\n",
	       rate, seconds, nconn, sent, done, errors, total - done - errors,
	       at_percentile(lat, nlat, 50) / 1e3, at_percentile(lat, nlat, 90) / 1e3,
	       at_percentile(lat, nlat, 99) / 1e3, at_percentile(lat, nlat, 99.9) / 1e3,
	       nlat ? lat[nlat - 1] / 1e3 : 0, at_percentile(lag, nlag, 99) / 1e3,
	       nlag ? lag[nlag - 1] / 1e3 : 0);
	if (argc == 10) {
		FILE *f = fopen(argv[9], "w");
		/* Percentiles spaced evenly in log(1 / (1 - p)), as for a tail. */
		static const double ps[] = { 0, 10, 25, 50, 75, 90, 95, 97.5, 99, 99.5,
					     99.75, 99.9, 99.95, 99.975, 99.99 };

		if (!f) {
			perror(argv[9]);
			return 1;
		}
		fprintf(f, "# percentile latency_us 1/(1-p)\n");
		for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
			fprintf(f, "%g %.1f %g\n", ps[i], at_percentile(lat, nlat, ps[i]) / 1e3,
				1 / (1 - ps[i] / 100));
		fprintf(f, "100 %.1f %g\n", nlat ? lat[nlat - 1] / 1e3 : 0, 1e5);
		fclose(f);
	}
	return total - done - errors ? 1 : 0;
}

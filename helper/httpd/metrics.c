// SPDX-License-Identifier: GPL-2.0
/*
 * GET /metrics (metrics.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grpc_wire.h"
#include "idgen.h"
#include "metrics.h"

#ifndef IDGEN_VERSION
#error "IDGEN_VERSION: the tree's one version (VERSION), set by the Makefile"
#endif

static const char *const route_label[NR_ROUTES] = {
	[ROUTE_NEXT] = "/v1/ids:next",
	[ROUTE_ID] = "/v1/ids/{id}",
	[ROUTE_PUBLIC] = "/v1/public/{pub}",
	[ROUTE_MIN] = "/v1/ids:min",
	[ROUTE_LIVEZ] = "/livez",
	[ROUTE_READYZ] = "/readyz",
	[ROUTE_METRICS] = "/metrics",
	[ROUTE_OTHER] = "other",
};

static const char *const grpc_method_label[NR_GRPC_METHODS] = {
	[GRPC_NEXT_IDS] = "/idgen.v1.IdGen/NextIds",
	[GRPC_DECODE_ID] = "/idgen.v1.IdGen/DecodeId",
	[GRPC_MIN_ID_AT] = "/idgen.v1.IdGen/MinIdAt",
	[GRPC_HEALTH_CHECK] = "/grpc.health.v1.Health/Check",
	[GRPC_HEALTH_WATCH] = "/grpc.health.v1.Health/Watch",
	[GRPC_OTHER] = "other",
};

/* Every status api.c answers; the last slot takes any other. */
static const unsigned int codes[METRICS_NR_CODES] = {
	200, 400, 403, 404, 405, 413, 415, 429, 500, 503, 0
};

/* Upper bounds, in ns and as written. */
static const uint64_t duration_ns[METRICS_NR_DURATIONS] = {
	25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000
};
static const char *const duration_le[METRICS_NR_DURATIONS] = {
	"2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
	"0.005", "0.01"
};
static const unsigned int batch_le[METRICS_NR_BATCHES] = { 1, 10, 100, 1000, 10000 };

int metrics_init(struct metrics *m, char **callers, unsigned int nr_callers)
{
	memset(m, 0, sizeof(*m));
	m->callers = callers;
	m->nr_callers = nr_callers;
	m->issued = calloc(nr_callers + 1, sizeof(*m->issued));
	return m->issued ? 0 : -ENOMEM;
}

void metrics_free(struct metrics *m)
{
	free(m->issued);
	m->issued = NULL;
}

#define ADD(var, n)	atomic_fetch_add_explicit(&(var), (n), memory_order_relaxed)
#define GET(var)	atomic_load_explicit(&(var), memory_order_relaxed)

/* The bucket of a duration of ns. */
static unsigned int duration_bucket(uint64_t ns)
{
	unsigned int d;

	for (d = 0; d < METRICS_NR_DURATIONS && ns > duration_ns[d]; d++)
		;
	return d;
}

void metrics_request(struct metrics *m, enum metrics_route route,
		     unsigned int status, uint64_t ns)
{
	unsigned int c;

	for (c = 0; c < METRICS_NR_CODES - 1 && codes[c] != status; c++)
		;
	ADD(m->requests[route][c], 1);
	/* Each bucket counts its own range; the exposition sums them up. */
	ADD(m->duration[duration_bucket(ns)], 1);
	ADD(m->duration_ns, ns);
}

void metrics_grpc(struct metrics *m, enum metrics_grpc_method method,
		  unsigned int code, uint64_t ns)
{
	ADD(m->grpc_requests[method][code < METRICS_NR_GRPC_CODES ? code : GRPC_UNKNOWN], 1);
	if (method == GRPC_HEALTH_WATCH)
		return;		/* a stream, as long as its client wants */
	ADD(m->grpc_duration[duration_bucket(ns)], 1);
	ADD(m->grpc_duration_ns, ns);
}

unsigned int metrics_caller(const struct metrics *m, const char *caller)
{
	unsigned int i = m->nr_callers;

	if (caller)
		for (i = 0; i < m->nr_callers && strcmp(m->callers[i], caller); i++)
			;
	return i;
}

void metrics_issued(struct metrics *m, unsigned int caller, size_t count)
{
	unsigned int b;

	ADD(m->issued[caller], count);
	for (b = 0; b < METRICS_NR_BATCHES - 1 && count > batch_le[b]; b++)
		;
	ADD(m->batch[b], 1);
	ADD(m->batch_count, 1);
	ADD(m->batch_sum, count);
}

void metrics_ids_lost(struct metrics *m, size_t count)
{
	if (m && count)
		ADD(m->ids_lost, count);
}

void metrics_answer_end(struct metrics *m, const struct metrics_answer *a, bool sent)
{
	if (!m || !a->ids)
		return;
	if (sent)
		metrics_issued(m, a->caller, a->ids);
	else
		metrics_ids_lost(m, a->ids);
}

static void help(FILE *f, const char *name, const char *type, const char *text)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* A latency histogram of buckets, each counting its own range. */
static void durations(FILE *f, const char *name, const char *text,
		      _Atomic uint64_t *bucket, _Atomic uint64_t *total_ns)
{
	uint64_t sum, v;
	unsigned int i;

	help(f, name, "histogram", text);
	for (sum = 0, i = 0; i < METRICS_NR_DURATIONS; i++) {
		sum += GET(bucket[i]);
		fprintf(f, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", name, duration_le[i], sum);
	}
	sum += GET(bucket[METRICS_NR_DURATIONS]);
	v = GET(*total_ns);
	fprintf(f, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n%s_sum %" PRIu64 ".%09" PRIu64
		"\n%s_count %" PRIu64 "\n", name, sum, name, v / 1000000000,
		v % 1000000000, name, sum);
}

static void write_counters(struct metrics *m, FILE *f)
{
	uint64_t sum, v;
	unsigned int r, c, i;

	help(f, "idgen_requests_total", "counter", "HTTP requests answered, by route and status.");
	for (r = 0; r < NR_ROUTES; r++)
		for (c = 0; c < METRICS_NR_CODES; c++) {
			v = GET(m->requests[r][c]);
			if (!v && codes[c] != 200)
				continue;	/* series appear with their first count */
			if (codes[c])
				fprintf(f, "idgen_requests_total{route=\"%s\",code=\"%u\"} %"
					PRIu64 "\n", route_label[r], codes[c], v);
			else
				fprintf(f, "idgen_requests_total{route=\"%s\",code=\"other\"} %"
					PRIu64 "\n", route_label[r], v);
		}

	durations(f, "idgen_request_duration_seconds",
		  "Time from a request's headers to its answer.", m->duration,
		  &m->duration_ns);

	help(f, "idgen_grpc_requests_total", "counter", "gRPC calls answered, by "
	     "method and status (grpc_code).");
	for (r = 0; r < NR_GRPC_METHODS; r++)
		for (c = 0; c < METRICS_NR_GRPC_CODES; c++) {
			v = GET(m->grpc_requests[r][c]);
			if (v || (c == GRPC_OK && r != GRPC_OTHER))
				fprintf(f, "idgen_grpc_requests_total{method=\"%s\","
					"grpc_code=\"%s\"} %" PRIu64 "\n",
					grpc_method_label[r], grpc_code_name(c), v);
		}
	durations(f, "idgen_grpc_request_duration_seconds", "Time from a unary gRPC "
		  "call's headers to its status.", m->grpc_duration, &m->grpc_duration_ns);

	help(f, "idgen_ids_issued_total", "counter",
	     "IDs answered, by the configured caller that asked (the rest: other).");
	for (i = 0; i < m->nr_callers; i++)
		fprintf(f, "idgen_ids_issued_total{caller=\"%s\"} %" PRIu64 "\n",
			m->callers[i], GET(m->issued[i]));
	fprintf(f, "idgen_ids_issued_total{caller=\"other\"} %" PRIu64 "\n",
		GET(m->issued[m->nr_callers]));
	help(f, "idgen_ids_lost_total", "counter", "IDs minted for requests whose client "
	     "went away before the answer reached it (never handed out).");
	fprintf(f, "idgen_ids_lost_total %" PRIu64 "\n", GET(m->ids_lost));

	help(f, "idgen_batch_size", "histogram", "IDs per answered request for IDs "
	     "(POST /v1/ids:next, NextIds).");
	for (sum = 0, i = 0; i < METRICS_NR_BATCHES; i++) {
		sum += GET(m->batch[i]);
		fprintf(f, "idgen_batch_size_bucket{le=\"%u\"} %" PRIu64 "\n", batch_le[i], sum);
	}
	fprintf(f, "idgen_batch_size_bucket{le=\"+Inf\"} %" PRIu64 "\n"
		"idgen_batch_size_sum %" PRIu64 "\nidgen_batch_size_count %" PRIu64 "\n",
		sum, GET(m->batch_sum), GET(m->batch_count));
}

static void counter(FILE *f, const char *name, const char *text, uint64_t v)
{
	help(f, name, "counter", text);
	fprintf(f, "%s %" PRIu64 "\n", name, v);
}

static void write_connections(struct metrics *m, FILE *f)
{
	help(f, "idgen_connections_open", "gauge", "Connections open now, on every listener");
	fprintf(f, "idgen_connections_open %" PRId64 "\n", atomic_load(&m->conn_open));
	help(f, "idgen_connections_refused_total", "counter", "Connections refused "
	     "(answered 503), by the limit reached");
	fprintf(f, "idgen_connections_refused_total{reason=\"max_connections\"} %"
		PRIu64 "\nidgen_connections_refused_total{reason=\"max_connections_per_ip\"} %"
		PRIu64 "\n", GET(m->conn_refused[REFUSED_MAX_CONNECTIONS]),
		GET(m->conn_refused[REFUSED_MAX_CONNECTIONS_PER_IP]));
	counter(f, "idgen_connections_cut_total", "Connections closed because a "
		"request was not complete by its deadline", GET(m->conn_cut));
	counter(f, "idgen_accept_paused_total", "Times a gRPC listener stopped "
		"accepting for a while: no file descriptor was left (EMFILE, ENFILE)",
		GET(m->accept_paused));
}

/* Only with TLS: a plaintext service's exposition stays as it was. */
static void write_tls(struct metrics *m, FILE *f)
{
	int64_t not_after = atomic_load(&m->tls_not_after);
	struct timespec now;

	if (!not_after)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	help(f, "idgen_tls_certificate_expiry_seconds", "gauge", "Seconds until the "
	     "TLS certificate in force expires (the earliest of its chain); "
	     "negative once it has");
	fprintf(f, "idgen_tls_certificate_expiry_seconds %" PRId64 "\n",
		not_after - (int64_t)now.tv_sec);
	help(f, "idgen_tls_reloads_total", "counter", "Reloads of the TLS files "
	     "(SIGHUP), by result: a failed one keeps the files in force");
	fprintf(f, "idgen_tls_reloads_total{result=\"ok\"} %" PRIu64 "\n"
		"idgen_tls_reloads_total{result=\"failed\"} %" PRIu64 "\n",
		GET(m->tls_reloads[0]), GET(m->tls_reloads[1]));
	counter(f, "idgen_tls_client_certificates_refused_total", "Client "
		"certificates refused at the handshake (not of the client CA, expired, "
		"not for client authentication, several URI SANs, unmapped under "
		"tls_unmapped = refuse)", GET(m->tls_peers_refused));
	counter(f, "idgen_tls_handshakes_timed_out_total", "TLS connections closed "
		"because their handshake was not done within tls_handshake_timeout_s",
		GET(m->tls_handshake_timeouts));
}

static void write_generator(struct minter *minter, FILE *f)
{
	struct idgen_device_state c;

	memset(&c, 0, sizeof(c));
	if (minter->ops->counters(minter->ctx, &c))
		return;		/* not readable now: the series are left out */
	counter(f, "idgen_generator_ids_total", "IDs the host's generator minted, "
		"for every reader.", c.ids);
	if (minter->simulated)
		return;		/* the simulation counts nothing else */
	/* In seconds, Prometheus's base unit (promtool refuses "_ms_"). */
	help(f, "idgen_generator_borrowed_seconds_total", "counter", "Time stamped "
	     "ahead of the wall clock because a sequence was full.");
	fprintf(f, "idgen_generator_borrowed_seconds_total %" PRIu64 ".%03" PRIu64 "\n",
		c.borrowed_ms / 1000, c.borrowed_ms % 1000);
	help(f, "idgen_generator_clock_steps_total", "counter",
	     "Wall clock steps the generator saw: back, forward (held), adopted.");
	fprintf(f, "idgen_generator_clock_steps_total{direction=\"back\"} %" PRIu64 "\n"
		"idgen_generator_clock_steps_total{direction=\"forward\"} %" PRIu64 "\n"
		"idgen_generator_clock_steps_total{direction=\"adopted\"} %" PRIu64 "\n",
		c.steps_back, c.steps_forward, c.steps_adopted);
	help(f, "idgen_generator_refusals_total", "counter",
	     "Reads the generator refused: fence reached, clock behind (lead), "
	     "no lease, time range exhausted.");
	fprintf(f, "idgen_generator_refusals_total{reason=\"fence\"} %" PRIu64 "\n"
		"idgen_generator_refusals_total{reason=\"lead\"} %" PRIu64 "\n"
		"idgen_generator_refusals_total{reason=\"no_lease\"} %" PRIu64 "\n"
		"idgen_generator_refusals_total{reason=\"range\"} %" PRIu64 "\n",
		c.fence_refusals, c.lead_refusals, c.nolease_refusals, c.range_refusals);
}

static void gauge(FILE *f, const char *name, const char *text, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void gauge(FILE *f, const char *name, const char *text, const char *fmt, ...)
{
	va_list ap;

	help(f, name, "gauge", text);
	fprintf(f, "%s ", name);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

static void write_state(struct minter *minter, const struct readiness_config *ready,
			const struct idgen_layouts *layouts, FILE *f)
{
	struct minter_state st;
	struct clock_reading c;
	char verdict[2048];
	size_t len;
	bool leased;

	memset(&st, 0, sizeof(st));
	leased = !minter->ops->state(minter->ctx, &st) && st.leased;
	gauge(f, "idgen_lease_in_force", "1 while the generator holds a lease.", "%d", leased);
	if (leased) {
		uint64_t unix_ms = st.valid_until_ms + LIBIDGEN_EPOCH_UNIX_MS;

		gauge(f, "idgen_lease_valid_until_timestamp_seconds",
		      "The lease's fence: no ID at or after it (Unix time).",
		      "%" PRIu64 ".%03" PRIu64, unix_ms / 1000, unix_ms % 1000);
	}
	if (!clock_read(&c)) {
		gauge(f, "idgen_clock_synced", "1 while adjtimex says the clock is "
		      "synchronised.", "%d", c.synced);
		gauge(f, "idgen_clock_offset_seconds", "adjtimex's offset of the clock.",
		      "%s%" PRId64 ".%06" PRId64, c.offset_us < 0 ? "-" : "",
		      (c.offset_us < 0 ? -c.offset_us : c.offset_us) / 1000000,
		      (c.offset_us < 0 ? -c.offset_us : c.offset_us) % 1000000);
		gauge(f, "idgen_clock_maxerror_seconds", "adjtimex's maximum error of the "
		      "clock.", "%" PRIu64 ".%06" PRIu64, c.maxerror_us / 1000000,
		      c.maxerror_us % 1000000);
	}
	gauge(f, "idgen_ready", "1 while GET /readyz answers 200.", "%d",
	      readiness_check(ready, minter, verdict, sizeof(verdict), &len));
	gauge(f, "idgen_generator_simulated", "1 while the IDs come from the "
	      "in-process simulation (--device sim), never fit for production.",
	      "%d", minter->simulated);
	help(f, "idgen_build_info", "gauge", "The build, and the layout version in force "
	     "now by the layouts table.");
	fprintf(f, "idgen_build_info{version=\"%s\",layout_version=\"%u\"} 1\n",
		IDGEN_VERSION, idgen_layout_at(layouts, st.now_ms)->version);
}

int metrics_render(struct metrics *m, struct minter *minter,
		   const struct readiness_config *ready,
		   const struct idgen_layouts *layouts, char **body, size_t *len)
{
	FILE *f = open_memstream(body, len);

	if (!f)
		return -ENOMEM;
	write_counters(m, f);
	write_connections(m, f);
	write_tls(m, f);
	write_generator(minter, f);
	write_state(minter, ready, layouts, f);
	if (fclose(f) || !*body) {
		free(*body);
		*body = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * GET /metrics: the Prometheus text exposition format (version 0.0.4),
 * idgen_ prefix, _total counters, _seconds histograms:
 *
 *   idgen_requests_total{route,code}          answers given, by route and status
 *   idgen_request_duration_seconds            histogram, 25 us to 10 ms
 *   idgen_ids_issued_total{caller}            configured callers, the rest "other"
 *   idgen_ids_lost_total                      minted for a client gone before
 *                                             its answer reached it
 *   idgen_batch_size                          histogram of counts answered
 *   idgen_generator_*                         the generator's own counters
 *                                             (the module's, with its state;
 *                                             the simulation's IDs)
 *   idgen_lease_in_force, idgen_lease_valid_until_timestamp_seconds
 *   idgen_clock_synced, idgen_clock_offset_seconds,
 *   idgen_clock_maxerror_seconds              adjtimex(2)
 *   idgen_ready                               what /readyz answers
 *   idgen_build_info{version,layout_version}
 *   idgen_connections_open, idgen_connections_refused_total{reason},
 *   idgen_connections_cut_total,
 *   idgen_accept_paused_total                 the listeners' connections
 *   idgen_tls_certificate_expiry_seconds      with TLS (tls.h): until the
 *                                             certificate in force expires
 *   idgen_tls_reloads_total{result}           SIGHUP's reloads, ok or failed
 *   idgen_tls_client_certificates_refused_total   at the handshake
 *   idgen_tls_handshakes_timed_out_total      not done by tls_handshake_timeout_s
 *
 * Label values come only from fixed sets (routes, statuses, configured
 * callers), so the series stay bounded whatever requests come.  Counting
 * is lock-free: relaxed atomic adds on the request path.
 */
#ifndef HTTPD_METRICS_H
#define HTTPD_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "idgen.h"
#include "minter.h"
#include "readiness.h"

enum metrics_route {
	ROUTE_NEXT, ROUTE_ID, ROUTE_PUBLIC, ROUTE_MIN, ROUTE_LIVEZ, ROUTE_READYZ,
	ROUTE_METRICS,
	ROUTE_OTHER, NR_ROUTES
};

/* The limits a connection is refused at (answered 503), by server.c. */
/* The gRPC face's methods (grpc_service.h), for idgen_grpc_requests_total. */
enum metrics_grpc_method {
	GRPC_NEXT_IDS, GRPC_DECODE_ID, GRPC_MIN_ID_AT, GRPC_HEALTH_CHECK,
	GRPC_HEALTH_WATCH,
	GRPC_OTHER, NR_GRPC_METHODS
};

#define METRICS_NR_GRPC_CODES	17	/* grpc_wire.h's enum grpc_code */

enum metrics_refusal {
	REFUSED_MAX_CONNECTIONS, REFUSED_MAX_CONNECTIONS_PER_IP, NR_REFUSED
};

#define METRICS_NR_CODES	11	/* the statuses the service answers */
#define METRICS_NR_DURATIONS	9	/* 25 us ... 10 ms */
#define METRICS_NR_BATCHES	5	/* 1 ... 10000 */

struct metrics {
	_Atomic uint64_t requests[NR_ROUTES][METRICS_NR_CODES];
	_Atomic uint64_t duration[METRICS_NR_DURATIONS + 1];	/* + the rest */
	_Atomic uint64_t duration_ns;
	_Atomic uint64_t grpc_requests[NR_GRPC_METHODS][METRICS_NR_GRPC_CODES];
	_Atomic uint64_t grpc_duration[METRICS_NR_DURATIONS + 1];	/* unary only */
	_Atomic uint64_t grpc_duration_ns;
	_Atomic uint64_t batch[METRICS_NR_BATCHES];
	_Atomic uint64_t batch_count;
	_Atomic uint64_t batch_sum;
	char **callers;
	unsigned int nr_callers;
	_Atomic uint64_t *issued;	/* per caller, then "other" */
	_Atomic uint64_t ids_lost;
	/* Connections, counted by server.c. */
	_Atomic int64_t conn_open;
	_Atomic uint64_t conn_refused[NR_REFUSED];	/* at a connection limit */
	_Atomic uint64_t conn_cut;	/* a request past its deadline */
	_Atomic uint64_t accept_paused;	/* a gRPC listener out of descriptors */
	/* TLS, counted by tls.c and the listeners; tls_not_after 0: no TLS. */
	_Atomic int64_t tls_not_after;	/* Unix seconds, the certificate in force */
	_Atomic uint64_t tls_reloads[2];	/* succeeded, failed */
	_Atomic uint64_t tls_peers_refused;	/* client certificates */
	_Atomic uint64_t tls_handshake_timeouts;
};

/* callers: the configured names (kept, not copied).  0 or -ENOMEM. */
int metrics_init(struct metrics *m, char **callers, unsigned int nr_callers);
void metrics_free(struct metrics *m);

/* One answer given: its route, status and time taken. */
void metrics_request(struct metrics *m, enum metrics_route route,
		     unsigned int status, uint64_t ns);
/* A gRPC call ended with code; ns from its headers to its status (unary). */
void metrics_grpc(struct metrics *m, enum metrics_grpc_method method,
		  unsigned int code, uint64_t ns);

/*
 * An answer of ids IDs to one caller, handed to a transport: counted
 * when the transport knows whether all of it went out, so that each
 * minted ID is counted once, issued or lost.
 */
struct metrics_answer {
	unsigned int caller;		/* metrics_caller()'s */
	size_t ids;			/* 0: no IDs to count */
};

/* caller's index for idgen_ids_issued_total (NULL or unconfigured: other). */
unsigned int metrics_caller(const struct metrics *m, const char *caller);
/* count IDs answered to metrics_caller()'s caller. */
void metrics_issued(struct metrics *m, unsigned int caller, size_t count);
/* a's end: issued if all of it went out, else lost.  m may be NULL. */
void metrics_answer_end(struct metrics *m, const struct metrics_answer *a, bool sent);
/*
 * count IDs minted for a request whose client went away before its
 * answer reached it: holes, never handed out.  m may be NULL.
 */
void metrics_ids_lost(struct metrics *m, size_t count);

/*
 * The whole exposition into a malloc()ed *body: the counters above, and
 * the generator's, the lease's, the clock's and readiness's state read
 * now.  0 or -ENOMEM.
 */
int metrics_render(struct metrics *m, struct minter *minter,
		   const struct readiness_config *ready,
		   const struct idgen_layouts *layouts, char **body, size_t *len);

#endif /* HTTPD_METRICS_H */

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libidgen-client - mint idgen IDs from a fleet of idgen-httpd hosts.
 *
 * A companion of libidgen for callers on machines without /dev/idgen
 * (Documentation/design.md section 9.1, in idgen's source tree).  It is a
 * library of its own so that libidgen, the device library, needs no network
 * code: this one links libcurl (its multi interface: one event-loop thread
 * drives every transfer, with keep-alive connections) and json-c.  Decoding
 * stays libidgen's, local.
 *
 *   - Several endpoints, balanced by the power of two choices on the
 *     requests each has in flight.
 *   - A try not answered within the per-try timeout (2 ms) is tried again
 *     on another host; the slow try runs on beside it until either answers,
 *     and the loser's answer is thrown away.  A retry is always safe: an
 *     ID minted but never delivered is a gap, never a duplicate.
 *   - A host that timed out, refused, failed or answered badly, or whose
 *     GET /readyz fails, is skipped while another host is usable, and
 *     probed again in the background every health-check period.
 *   - An optional buffer (32 IDs) refilled in the background when it holds
 *     the refill mark (half) or fewer; it never hands out an ID minted more
 *     than max_age_ms ago by the ID's own timestamp.
 *
 * Errors: functions return a negative errno value; the calling thread's
 * idgen_client_last_error() then says what happened, naming each host
 * tried and why it failed.  Thread safety: every function but
 * idgen_client_free() may be called from many threads at once.  A client
 * serves only the process that made it: in a child (of fork(), _Fork(),
 * clone() or clone3(); a wipe-on-fork page tells, Linux 4.14), calls fail
 * with -ECHILD (its buffer holds its parent's IDs) and idgen_client_free()
 * does nothing.  vfork() is out of scope: see idgen_client(3).
 */
#ifndef LIBIDGEN_CLIENT_H
#define LIBIDGEN_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "idgen.h"

#ifdef __cplusplus
extern "C" {
#endif

/* At most this many endpoints. */
#define IDGEN_CLIENT_MAX_HOSTS	64

/*
 * The service's limits, as idgen-httpd's API states them (POST
 * /v1/ids:next): the most IDs one request takes, and the longest caller
 * name (1 to this many of A-Z a-z 0-9 . _ : -).
 */
#define IDGEN_CLIENT_MAX_COUNT	10000U
#define IDGEN_CLIENT_MAX_CALLER	64

/*
 * Options.  Fill with idgen_client_options_init() first, then change what
 * you need: the struct may grow (size says which fields a caller knows).
 */
struct idgen_client_options {
	size_t size;			/* sizeof(struct idgen_client_options) */
	unsigned int per_try_ms;	/* a try's timeout before another host: 2 */
	unsigned int deadline_ms;	/* a call's whole time: 100 */
	unsigned int buffer_size;	/* IDs buffered: 32; 0 = no buffer */
	unsigned int refill_mark;	/* refill at this many or fewer: half */
	unsigned int max_age_ms;	/* oldest ID the buffer hands out: 1000 */
	unsigned int health_check_ms;	/* /readyz probe period: 500 */
	const char *caller;		/* optional "caller" for the service's
					   metrics and quotas; NULL: none */
	const struct idgen_layouts *layouts;	/* the fleet's layouts (NULL:
					   version 1 alone): an answer's
					   layout_version must be the one in
					   force at its first ID */
	/*
	 * TLS, for https:// endpoints (idgen-httpd --tls-cert, and with
	 * --tls-client-ca its mTLS).  The server's certificate is always
	 * verified, its name or IP against the endpoint's host.  Paths, read
	 * when the client is made and copied; NULL: none.
	 */
	const char *ca_file;		/* PEM CAs the servers' certificates must
					   chain to; NULL: the system's */
	const char *cert_file;		/* PEM client certificate (its chain),
					   for mTLS; with key_file */
	const char *key_file;		/* its PEM private key, mode 0600 (a
					   systemd credential 0440): a key
					   others can read is refused */
};

/* refill_mark's default: half the buffer, whatever its size. */
#define IDGEN_CLIENT_REFILL_HALF	(~0U)

void idgen_client_options_init(struct idgen_client_options *o);

struct idgen_client;

/*
 * endpoints: base URLs separated by commas, "http://10.0.0.1:8080,
 * http://10.0.0.2:8080" (a trailing "/" is dropped; http or https: see
 * the options' ca_file, cert_file and key_file).
 * options: NULL for the defaults.  Starts the event-loop thread.  0, or
 * -EINVAL (bad endpoints or options; idgen_client_last_error() says
 * which), -ENOMEM, -EAGAIN (no thread).
 */
int idgen_client_new(const char *endpoints, const struct idgen_client_options *options,
		     struct idgen_client **out);

/*
 * One ID.  0, or when none could be had within the deadline -ETIMEDOUT
 * (idgen_client_last_error() names each host tried and why it failed);
 * -ECHILD in a child process (fork(), _Fork(), clone(), clone3()).
 */
int idgen_client_next(struct idgen_client *c, uint64_t *id);

/*
 * Up to n IDs (1 to IDGEN_CLIENT_MAX_COUNT).  Without a buffer they are
 * one host's answer, strictly increasing; with it, what the buffer holds
 * and the rest from its refills, those of one host strictly increasing.
 * Returns how many were written: n, or fewer only when some were had and
 * the deadline passed before the rest; or, with none, a negative errno as
 * for idgen_client_next() (-EINVAL for n out of range).
 */
ssize_t idgen_client_next_n(struct idgen_client *c, uint64_t *ids, size_t n);

/* Stop the event loop and free everything; NULL is fine. */
void idgen_client_free(struct idgen_client *c);

/* What happened so far; counters only grow. */
struct idgen_client_stats {
	uint64_t calls;		/* idgen_client_next() and _next_n() calls */
	uint64_t calls_failed;	/* of them, returned an error */
	uint64_t buffer_hits;	/* calls answered from the buffer alone */
	uint64_t requests;	/* POST /v1/ids:next requests wanted (calls
				   without a buffer, and refills) */
	uint64_t tries;		/* HTTP tries for them, retries included */
	uint64_t retries;	/* tries after a request's first */
	uint64_t timeouts;	/* tries past the per-try timeout */
	uint64_t hosts_skipped;	/* hosts passed over as unhealthy */
	uint64_t connect_errors;/* tries that failed to connect or send */
	uint64_t http_errors;	/* tries answered with a status other than 200 */
	uint64_t bad_answers;	/* 200 answers refused as malformed */
	uint64_t abandoned;	/* tries cancelled: another host answered */
	uint64_t ids_received;	/* IDs in accepted answers */
	uint64_t stale_dropped;	/* buffered IDs dropped as older than the bound */
	uint64_t refills;	/* buffer refills started */
	uint64_t probes;	/* /readyz probes */
	uint64_t probes_failed;	/* of them, not 200 */
	uint64_t loop_late_max_us;	/* the event loop's worst lateness
				   behind its timers: what the machine's
				   scheduling cost the client */
	unsigned int hosts;	/* endpoints */
	unsigned int hosts_healthy;	/* of them, not skipped now */
	uint64_t connects;	/* connections made (over https, each one TLS
				   handshake): kept alive and reused, about
				   one per host however many requests */
};

/* Copy the counters; size is sizeof(struct idgen_client_stats). */
int idgen_client_stats(struct idgen_client *c, struct idgen_client_stats *s, size_t size);

/*
 * The last error of a call from this thread, "" if none failed: e.g.
 * "no ID within the 100 ms deadline: http://10.0.0.1:8080: timed out after
 * 2 ms; http://10.0.0.2:8080: connection refused".  Valid until the
 * thread's next call.
 */
const char *idgen_client_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBIDGEN_CLIENT_H */

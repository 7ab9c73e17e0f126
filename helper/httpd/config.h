/* SPDX-License-Identifier: GPL-2.0 */
/*
 * idgen-httpd's configuration: /etc/idgen/idgen-httpd.conf (INI, the
 * dialect of ../common/inifile.h, section [httpd]), then command-line
 * flags, which win.  Every key is also a flag: "ready_margin_ms" in the
 * file is --ready-margin-ms on the command line; --listen and
 * --grpc-listen may be given more than once, and replace the file's list.  See idgen-httpd(8).
 */
#ifndef HTTPD_CONFIG_H
#define HTTPD_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "idgen.h"

#define HTTPD_CONFIG_DEFAULT_PATH	"/etc/idgen/idgen-httpd.conf"
#define HTTPD_MAX_LISTEN		8
#define HTTPD_MAX_CALLERS		32
#define HTTPD_MAX_KEYS			LIBIDGEN_KEYRING_MAX	/* a keyring's */

/* A caller's quota: rate_milli / 1000 IDs per second, burst IDs at once. */
struct httpd_quota {
	char *caller;			/* one of callers, or "other" */
	uint64_t rate_milli;
	uint64_t burst;
};

struct httpd_config {
	const char *path;		/* the file read, or NULL */
	char *listen[HTTPD_MAX_LISTEN];	/* HOST:PORT, [IPv6]:PORT */
	unsigned int nr_listen;
	/* gRPC (grpc.h), the same service over h2c; none: off. */
	char *grpc_listen[HTTPD_MAX_LISTEN];
	unsigned int nr_grpc_listen;
	uint32_t grpc_max_streams;	/* per connection */
	uint32_t grpc_idle_timeout_s;	/* no stream open: GOAWAY */
	/* /metrics counts IDs by these callers, the rest as "other". */
	char *callers[HTTPD_MAX_CALLERS];
	unsigned int nr_callers;
	/* Token buckets on POST /v1/ids:next, by caller (quota.h). */
	struct httpd_quota quotas[HTTPD_MAX_CALLERS + 1];
	unsigned int nr_quotas;
	char *device;			/* a path, or sim[:WORKER] */
	char *layouts;			/* a layouts file, or "" for version 1 */
	uint32_t threads;		/* per listener; 0: one per core */
	uint32_t max_connections;
	uint32_t max_connections_per_ip;	/* 0: no limit */
	uint32_t ipv6_prefix_per_ip;	/* ... an IPv6 client counted by this prefix */
	uint32_t timeout_s;		/* an idle connection is closed */
	uint64_t ready_margin_ms;
	uint64_t ready_max_ahead_ms;	/* 0: the module's max_borrow_ms */
	bool clock_check;
	uint64_t clock_max_offset_us;
	uint64_t sim_lease_ms;		/* --device sim only; 0: no fence */
	/*
	 * Public-ID key files (Documentation/design.md section 10); none:
	 * off.
	 */
	char *public_keys[HTTPD_MAX_KEYS];
	unsigned int nr_public_keys;
	char *public_current;		/* a key version, or "": the highest */
	/*
	 * TLS on every listener (tls.h), with tls_cert and tls_key; "": none,
	 * plaintext.  With tls_client_ca, mTLS: the caller is the client
	 * certificate's (caller_map for SPIFFE IDs); tls_unmapped says what a
	 * certificate mapping to no caller gets.
	 */
	char *tls_cert, *tls_key, *tls_client_ca, *caller_map;
	bool tls_unmapped_refuse;	/* tls_unmapped = refuse; else other */
	uint32_t tls_handshake_timeout_s;
	bool check_only;		/* --check-config */
};

/*
 * Fill *cfg from the file and argv.  0; 1 for --help or --version
 * (printed); or -1 after printing "idgen-httpd: <where>: <what was
 * wrong>" on stderr.
 */
int httpd_config_load(struct httpd_config *cfg, int argc, char *argv[]);
/* The configuration in force, as a file that gives it. */
void httpd_config_print(const struct httpd_config *cfg, FILE *f);
void httpd_config_free(struct httpd_config *cfg);

#endif /* HTTPD_CONFIG_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * idgen-httpd's configuration (config.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "conf.h"
#include "config.h"
#include "decimal.h"
#include "quota.h"

#ifndef IDGEN_VERSION
#error "IDGEN_VERSION: the tree's one version (VERSION), set by the Makefile"
#endif

#define PROG		"idgen-httpd"

static const char usage[] =
	"Usage: idgen-httpd [--config FILE] [--check-config] [--listen HOST:PORT]...\n"
	"                   [--grpc-listen HOST:PORT]... [--device PATH|sim[:WORKER]]\n"
	"                   [--KEY VALUE]...\n"
	"\n"
	"The host's ID service over /dev/idgen: HTTP/JSON and gRPC, see idgen-httpd(8).\n"
	"Every key of the configuration file (default " HTTPD_CONFIG_DEFAULT_PATH ")\n"
	"is also a flag, e.g. --ready-margin-ms 30000; a flag wins over the file.\n"
	"\n"
	"  --listen HOST:PORT        where to listen (repeatable; default 127.0.0.1:8080)\n"
	"  --grpc-listen HOST:PORT   where to serve gRPC over h2c (repeatable;\n"
	"                            default none: off)\n"
	"  --grpc-max-streams N      concurrent gRPC streams per connection (default 100)\n"
	"  --grpc-idle-timeout-s N   a gRPC connection with no stream is closed\n"
	"                            (default 300)\n"
	"  --callers 'A B ...'       callers /metrics names (the rest: other)\n"
	"  --quotas 'C=RATE/BURST ...'  per caller (or other): IDs/s and burst\n"
	"  --device PATH             the generator (default /dev/idgen); sim[:WORKER]\n"
	"                            is a simulated one in the process, for tests\n"
	"  --layouts FILE            decode with this layouts table (idgenctl(8))\n"
	"  --threads N               threads per listener (default 0: one per core)\n"
	"  --max-connections N       open connections per listener (default 1024)\n"
	"  --max-connections-per-ip N   from one address (default 0: no limit)\n"
	"  --ipv6-prefix-per-ip BITS ... an IPv6 address counted by its prefix\n"
	"                            of BITS (default 64; 128: the whole address)\n"
	"  --timeout-s N             an idle connection is closed (default 10)\n"
	"  --ready-margin-ms MS      /readyz wants this much lease left (default 30000)\n"
	"  --clock-check yes|no      /readyz asks adjtimex (default yes)\n"
	"  --clock-max-offset-us US  ... and wants |offset| below this (default 5000)\n"
	"  --sim-lease-ms MS         the simulation's lease ends after MS (default 0: never)\n"
	"  --public-keys 'FILE ...'  public-ID key files (mode 0600); default none: off\n"
	"  --public-current VERSION  the key version public IDs are made with\n"
	"                            (default: the highest loaded)\n"
	"  --tls-cert FILE           serve TLS on every listener: the certificate\n"
	"                            (PEM, then its chain), with --tls-key FILE\n"
	"  --tls-client-ca FILE      require client certificates of this CA (mTLS)\n"
	"  --caller-map FILE         SPIFFE IDs to callers' names, a line each\n"
	"  --tls-unmapped other|refuse  a certificate mapping to no caller\n"
	"                            (default other)\n"
	"  --tls-handshake-timeout-s N  a handshake not done by then is cut (default 5)\n"
	"  --check-config            print the configuration in force and exit\n";

static int set_listen(const struct conf_item *it, const char *value, void *field,
		      void *cfg, char *err, size_t errlen);
static int set_grpc_listen(const struct conf_item *it, const char *value, void *field,
			   void *cfg, char *err, size_t errlen);
static int set_callers(const struct conf_item *it, const char *value, void *field,
		       void *cfg, char *err, size_t errlen);
static int set_quotas(const struct conf_item *it, const char *value, void *field,
		      void *cfg, char *err, size_t errlen);
static int set_keys(const struct conf_item *it, const char *value, void *field,
		    void *cfg, char *err, size_t errlen);
static int set_unmapped(const struct conf_item *it, const char *value, void *field,
			void *cfg, char *err, size_t errlen);

#define O(k, parser, lo, hi) \
	{ "httpd", #k, parser, offsetof(struct httpd_config, k), lo, hi, false }
#define LIST(k, parser) \
	{ "httpd", #k, parser, offsetof(struct httpd_config, k), 0, 0, true }

/* Every key: the file's and, with '-' for '_', the command line's. */
static const struct conf_item items[] = {
	LIST(listen, set_listen),
	LIST(grpc_listen, set_grpc_listen),
	O(grpc_max_streams, conf_u32, 1, 1000),
	O(grpc_idle_timeout_s, conf_u32, 1, 86400),
	LIST(callers, set_callers),
	LIST(quotas, set_quotas),
	O(device, conf_string, 0, 0),
	O(layouts, conf_string_or_empty, 0, 0),
	O(threads, conf_u32, 0, 1024),
	O(max_connections, conf_u32, 1, 1000000),
	O(max_connections_per_ip, conf_u32, 0, 1000000),
	O(ipv6_prefix_per_ip, conf_u32, 1, 128),
	O(timeout_s, conf_u32, 1, 3600),
	O(ready_margin_ms, conf_u64, 0, 86400000),
	O(ready_max_ahead_ms, conf_u64, 0, 86400000),
	O(clock_check, conf_bool, 0, 0),
	O(clock_max_offset_us, conf_u64, 1, 1000000000),
	O(sim_lease_ms, conf_u64, 0, 86400000),
	LIST(public_keys, set_keys),
	O(public_current, conf_string_or_empty, 0, 0),
	O(tls_cert, conf_string_or_empty, 0, 0),
	O(tls_key, conf_string_or_empty, 0, 0),
	O(tls_client_ca, conf_string_or_empty, 0, 0),
	O(caller_map, conf_string_or_empty, 0, 0),
	{ "httpd", "tls_unmapped", set_unmapped,
	  offsetof(struct httpd_config, tls_unmapped_refuse), 0, 0, false },
	O(tls_handshake_timeout_s, conf_u32, 1, 60),
};

#define NR_ITEMS	(sizeof(items) / sizeof(items[0]))

static void free_list(char **list, unsigned int *nr)
{
	while (*nr)
		free(list[--*nr]);
}

enum words { W_LISTEN, W_GRPC_LISTEN, W_CALLERS, W_KEYS };

/*
 * Blank-separated words, replacing the list (listen, grpc_listen, callers
 * or public_keys).
 */
static int set_words(struct httpd_config *cfg, enum words w, const char *value,
		     char *err, size_t errlen)
{
	bool callers = w == W_CALLERS, keys = w == W_KEYS, grpc = w == W_GRPC_LISTEN;
	char **list = callers ? cfg->callers : keys ? cfg->public_keys :
		      grpc ? cfg->grpc_listen : cfg->listen;
	unsigned int *nr = callers ? &cfg->nr_callers : keys ? &cfg->nr_public_keys :
			   grpc ? &cfg->nr_grpc_listen : &cfg->nr_listen;
	unsigned int max = callers ? HTTPD_MAX_CALLERS : keys ? HTTPD_MAX_KEYS :
			   HTTPD_MAX_LISTEN;
	const char *p = value;
	unsigned int i;
	size_t len;

	free_list(list, nr);
	for (;;) {
		p += strspn(p, " \t");
		if (!*p)
			break;
		len = strcspn(p, " \t");
		if (*nr == max) {
			snprintf(err, errlen, "more than %u of them", max);
			return -1;
		}
		if (callers && (!api_caller_valid(p, len) || (len == 5 && !strncmp(p, "other", 5)))) {
			snprintf(err, errlen, "'%.*s' is not a caller's name (1 to %d "
				 "letters, digits, '.', '_', ':' or '-'; not \"other\")",
				 (int)(len > API_MAX_CALLER ? API_MAX_CALLER : len), p,
				 API_MAX_CALLER);
			return -1;
		}
		/* Each caller is one series in /metrics: once. */
		for (i = 0; callers && i < *nr; i++)
			if (strlen(list[i]) == len && !strncmp(list[i], p, len)) {
				snprintf(err, errlen, "caller '%s' is listed twice", list[i]);
				return -1;
			}
		list[*nr] = strndup(p, len);
		if (!list[*nr]) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		++*nr;
		p += len;
	}
	if (w == W_LISTEN && !*nr) {
		snprintf(err, errlen, "no address given");
		return -1;
	}
	return 0;
}

static int set_listen(const struct conf_item *it, const char *value, void *field,
		      void *cfg, char *err, size_t errlen)
{
	(void)it;
	(void)field;
	return set_words(cfg, W_LISTEN, value, err, errlen);
}

static int set_grpc_listen(const struct conf_item *it, const char *value, void *field,
			   void *cfg, char *err, size_t errlen)
{
	(void)it;
	(void)field;
	return set_words(cfg, W_GRPC_LISTEN, value, err, errlen);
}

static int set_callers(const struct conf_item *it, const char *value, void *field,
		       void *cfg, char *err, size_t errlen)
{
	(void)it;
	(void)field;
	return set_words(cfg, W_CALLERS, value, err, errlen);
}

static int set_keys(const struct conf_item *it, const char *value, void *field,
		    void *cfg, char *err, size_t errlen)
{
	(void)it;
	(void)field;
	return set_words(cfg, W_KEYS, value, err, errlen);
}

static void free_quotas(struct httpd_config *cfg)
{
	while (cfg->nr_quotas)
		free(cfg->quotas[--cfg->nr_quotas].caller);
}

/* "12", "0.5", "2.125": IDs/s in thousandths, 1 to QUOTA_MAX_RATE_MILLI. */
static int parse_rate(const char *s, size_t len, uint64_t *milli)
{
	const char *dot = memchr(s, '.', len);
	size_t ilen = dot ? (size_t)(dot - s) : len, flen = dot ? len - ilen - 1 : 0, i;
	uint64_t whole, frac = 0;

	if (idgen_decimal(s, ilen, 0, QUOTA_MAX_RATE_MILLI / 1000, &whole))
		return -1;
	if (dot && (!flen || flen > 3))
		return -1;
	for (i = 0; i < 3; i++) {
		if (i < flen && (dot[1 + i] < '0' || dot[1 + i] > '9'))
			return -1;
		frac = frac * 10 + (i < flen ? dot[1 + i] - '0' : 0);
	}
	*milli = whole * 1000 + frac;
	return *milli && *milli <= QUOTA_MAX_RATE_MILLI ? 0 : -1;
}

/* Blank-separated CALLER=RATE/BURST words, replacing the list. */
static int set_quotas(const struct conf_item *it, const char *value, void *field,
		      void *cfg_, char *err, size_t errlen)
{
	struct httpd_config *cfg = cfg_;
	const char *p = value, *eq, *slash;
	struct httpd_quota *q;
	unsigned int i;
	size_t len;

	(void)it;
	(void)field;
	free_quotas(cfg);
	for (;;) {
		p += strspn(p, " \t");
		if (!*p)
			return 0;
		len = strcspn(p, " \t");
		eq = memchr(p, '=', len);
		slash = eq ? memchr(eq, '/', len - (eq - p)) : NULL;
		if (!slash) {
			snprintf(err, errlen, "'%.*s' is not CALLER=RATE/BURST "
				 "(e.g. order-service=1000/2000)", (int)(len > 80 ? 80 : len), p);
			return -1;
		}
		if (!api_caller_valid(p, eq - p)) {
			snprintf(err, errlen, "'%.*s' is not a caller's name (1 to %d "
				 "letters, digits, '.', '_', ':' or '-'; or other)",
				 (int)(eq - p > API_MAX_CALLER ? API_MAX_CALLER : eq - p), p,
				 API_MAX_CALLER);
			return -1;
		}
		for (i = 0; i < cfg->nr_quotas; i++)
			if (strlen(cfg->quotas[i].caller) == (size_t)(eq - p) &&
			    !strncmp(cfg->quotas[i].caller, p, eq - p)) {
				snprintf(err, errlen, "'%.*s' has two quotas", (int)(eq - p), p);
				return -1;
			}
		if (cfg->nr_quotas == HTTPD_MAX_CALLERS + 1) {
			snprintf(err, errlen, "more than %d of them", HTTPD_MAX_CALLERS + 1);
			return -1;
		}
		q = &cfg->quotas[cfg->nr_quotas];
		if (parse_rate(eq + 1, slash - eq - 1, &q->rate_milli)) {
			snprintf(err, errlen, "%.*s: the rate '%.*s' is not IDs per second "
				 "from 0.001 to %llu (at most 3 decimals)", (int)(eq - p), p,
				 (int)(slash - eq - 1 > 32 ? 32 : slash - eq - 1), eq + 1,
				 QUOTA_MAX_RATE_MILLI / 1000);
			return -1;
		}
		if (idgen_decimal(slash + 1, len - (slash + 1 - p), 1, QUOTA_MAX_BURST,
				  &q->burst)) {
			snprintf(err, errlen, "%.*s: the burst '%.*s' is not a number of "
				 "IDs from 1 to %llu", (int)(eq - p), p,
				 (int)(len - (slash + 1 - p) > 32 ? 32 : len - (slash + 1 - p)),
				 slash + 1, QUOTA_MAX_BURST);
			return -1;
		}
		q->caller = strndup(p, eq - p);
		if (!q->caller) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		cfg->nr_quotas++;
		p += len;
	}
}

/* tls_unmapped: other (served as the caller other) or refuse. */
static int set_unmapped(const struct conf_item *it, const char *value, void *field,
			void *cfg, char *err, size_t errlen)
{
	(void)it;
	(void)cfg;
	if (strcmp(value, "other") && strcmp(value, "refuse")) {
		snprintf(err, errlen, "'%.32s': want other or refuse", value);
		return -1;
	}
	*(bool *)field = !strcmp(value, "refuse");
	return 0;
}

/* Every quota's caller is one /metrics names: configured, or other. */
static int check_quotas(const struct httpd_config *cfg)
{
	unsigned int i, j;

	for (i = 0; i < cfg->nr_quotas; i++) {
		const char *c = cfg->quotas[i].caller;

		for (j = 0; j < cfg->nr_callers && strcmp(cfg->callers[j], c); j++)
			;
		if (j == cfg->nr_callers && strcmp(c, "other")) {
			fprintf(stderr, PROG ": quotas: '%s' is not one of callers (list "
				"it there, or give other a quota for every caller not "
				"listed)\n", c);
			return -1;
		}
	}
	return 0;
}

static int set_defaults(struct httpd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen[0] = strdup("127.0.0.1:8080");
	cfg->nr_listen = 1;
	cfg->device = strdup("/dev/idgen");
	cfg->layouts = strdup("");
	cfg->max_connections = 1024;
	cfg->max_connections_per_ip = 0;
	cfg->ipv6_prefix_per_ip = 64;
	cfg->timeout_s = 10;
	cfg->grpc_max_streams = 100;
	cfg->grpc_idle_timeout_s = 300;
	cfg->ready_margin_ms = 30000;
	cfg->clock_check = true;
	cfg->clock_max_offset_us = 5000;
	cfg->public_current = strdup("");
	cfg->tls_cert = strdup("");
	cfg->tls_key = strdup("");
	cfg->tls_client_ca = strdup("");
	cfg->caller_map = strdup("");
	cfg->tls_handshake_timeout_s = 5;
	return cfg->listen[0] && cfg->device && cfg->layouts && cfg->public_current &&
	       cfg->tls_cert && cfg->tls_key && cfg->tls_client_ca && cfg->caller_map ?
	       0 : -1;
}

/* What --listen and --grpc-listen have replaced: the file's lists, once. */
struct listen_flags {
	struct httpd_config *cfg;
	bool replaced[2];
};

/*
 * --listen or --grpc-listen, repeatable: the first replaces the file's
 * list, the others add to it.  0 (taken), 1 (another flag), -1 (said why).
 */
static int listen_flag(void *arg, int argc, char *argv[], int *i)
{
	static const char *const flags[2] = { "--listen", "--grpc-listen" };
	struct listen_flags *lf = arg;
	struct httpd_config *cfg = lf->cfg;
	const char *value = NULL;
	unsigned int f, *nr;
	char **list;
	size_t n;

	for (f = 0; f < 2 && !value; f++) {
		n = strlen(flags[f]);
		if (!strcmp(argv[*i], flags[f])) {
			if (*i + 1 == argc) {
				fprintf(stderr, PROG ": %s needs a value\n", flags[f]);
				return -1;
			}
			value = argv[++*i];
		} else if (!strncmp(argv[*i], flags[f], n) && argv[*i][n] == '=') {
			value = argv[*i] + n + 1;
		}
	}
	if (!value)
		return 1;
	f--;
	list = f ? cfg->grpc_listen : cfg->listen;
	nr = f ? &cfg->nr_grpc_listen : &cfg->nr_listen;
	if (!lf->replaced[f])
		free_list(list, nr);
	lf->replaced[f] = true;
	if (*nr == HTTPD_MAX_LISTEN) {
		fprintf(stderr, PROG ": %s: more than %d addresses\n", flags[f],
			HTTPD_MAX_LISTEN);
		return -1;
	}
	if (!*value || strpbrk(value, " \t")) {
		fprintf(stderr, PROG ": %s '%s': want one HOST:PORT\n", flags[f], value);
		return -1;
	}
	list[*nr] = strdup(value);
	if (!list[*nr]) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	++*nr;
	return 0;
}

int httpd_config_load(struct httpd_config *cfg, int argc, char *argv[])
{
	struct listen_flags lf = { cfg, { false, false } };
	const struct conf_program prog = {
		.usage = usage,
		.version = IDGEN_VERSION,
		.default_path = HTTPD_CONFIG_DEFAULT_PATH,
		.check_only = &cfg->check_only,
		.flag = listen_flag,
		.flag_arg = &lf,
	};
	struct conf c;
	int ret;

	if (set_defaults(cfg)) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	conf_init(&c, PROG, items, NR_ITEMS, cfg);
	ret = conf_load(&c, &prog, argc, argv);
	if (ret)
		return ret;
	cfg->path = c.path;
	return check_quotas(cfg);
}

void httpd_config_print(const struct httpd_config *cfg, FILE *f)
{
	unsigned int i;

	fprintf(f, "# idgen-httpd: the configuration in force (%s)\n[httpd]\nlisten =",
		cfg->path ? cfg->path : "no file");
	for (i = 0; i < cfg->nr_listen; i++)
		fprintf(f, " %s", cfg->listen[i]);
	fprintf(f, "\ngrpc_listen =");
	for (i = 0; i < cfg->nr_grpc_listen; i++)
		fprintf(f, " %s", cfg->grpc_listen[i]);
	fprintf(f, "\ngrpc_max_streams = %" PRIu32 "\ngrpc_idle_timeout_s = %" PRIu32,
		cfg->grpc_max_streams, cfg->grpc_idle_timeout_s);
	fprintf(f, "\ncallers =");
	for (i = 0; i < cfg->nr_callers; i++)
		fprintf(f, " %s", cfg->callers[i]);
	fprintf(f, "\nquotas =");
	for (i = 0; i < cfg->nr_quotas; i++) {
		const struct httpd_quota *q = &cfg->quotas[i];

		fprintf(f, " %s=%" PRIu64, q->caller, q->rate_milli / 1000);
		if (q->rate_milli % 1000)
			fprintf(f, ".%03" PRIu64, q->rate_milli % 1000);
		fprintf(f, "/%" PRIu64, q->burst);
	}
	fprintf(f, "\ndevice = %s\n", cfg->device);
	if (*cfg->layouts)
		fprintf(f, "layouts = %s\n", cfg->layouts);
	fprintf(f, "threads = %" PRIu32 "\nmax_connections = %" PRIu32
		"\nmax_connections_per_ip = %" PRIu32 "\nipv6_prefix_per_ip = %" PRIu32
		"\ntimeout_s = %" PRIu32
		"\nready_margin_ms = %" PRIu64 "\nclock_check = %s\n"
		"clock_max_offset_us = %" PRIu64 "\nsim_lease_ms = %" PRIu64 "\n",
		cfg->threads, cfg->max_connections, cfg->max_connections_per_ip,
		cfg->ipv6_prefix_per_ip, cfg->timeout_s, cfg->ready_margin_ms, cfg->clock_check ? "yes" : "no",
		cfg->clock_max_offset_us, cfg->sim_lease_ms);
	fprintf(f, "ready_max_ahead_ms = %" PRIu64 "\n", cfg->ready_max_ahead_ms);
	if (cfg->nr_public_keys) {
		fprintf(f, "public_keys =");
		for (i = 0; i < cfg->nr_public_keys; i++)
			fprintf(f, " %s", cfg->public_keys[i]);
		fprintf(f, "\n");
	}
	if (*cfg->public_current)
		fprintf(f, "public_current = %s\n", cfg->public_current);
	/* TLS's keys only when it is on: a plaintext service prints as before. */
	if (*cfg->tls_cert || *cfg->tls_key) {
		fprintf(f, "tls_cert = %s\ntls_key = %s\n", cfg->tls_cert, cfg->tls_key);
		if (*cfg->tls_client_ca)
			fprintf(f, "tls_client_ca = %s\n", cfg->tls_client_ca);
		if (*cfg->caller_map)
			fprintf(f, "caller_map = %s\n", cfg->caller_map);
		fprintf(f, "tls_unmapped = %s\ntls_handshake_timeout_s = %" PRIu32 "\n",
			cfg->tls_unmapped_refuse ? "refuse" : "other",
			cfg->tls_handshake_timeout_s);
	}
}

void httpd_config_free(struct httpd_config *cfg)
{
	free_list(cfg->listen, &cfg->nr_listen);
	free_list(cfg->grpc_listen, &cfg->nr_grpc_listen);
	free_list(cfg->callers, &cfg->nr_callers);
	free_list(cfg->public_keys, &cfg->nr_public_keys);
	free_quotas(cfg);
	free(cfg->device);
	free(cfg->layouts);
	free(cfg->public_current);
	cfg->device = cfg->layouts = cfg->public_current = NULL;
	free(cfg->tls_cert);
	free(cfg->tls_key);
	free(cfg->tls_client_ca);
	free(cfg->caller_map);
	cfg->tls_cert = cfg->tls_key = cfg->tls_client_ca = cfg->caller_map = NULL;
}

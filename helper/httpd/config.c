// SPDX-License-Identifier: GPL-2.0
/*
 * idgen-httpd's configuration (config.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "config.h"
#include "decimal.h"
#include "inifile.h"
#include "quota.h"

#ifndef IDGEN_VERSION
#error "IDGEN_VERSION: the tree's one version (VERSION), set by the Makefile"
#endif

#define PROG		"idgen-httpd"

static const char usage[] =
	"Usage: idgen-httpd [--config FILE] [--check-config] [--listen HOST:PORT]...\n"
	"                   [--device PATH|sim[:WORKER]] [--KEY VALUE]...\n"
	"\n"
	"The host's ID service over /dev/idgen: HTTP/JSON, see idgen-httpd(8).\n"
	"Every key of the configuration file (default " HTTPD_CONFIG_DEFAULT_PATH ")\n"
	"is also a flag, e.g. --ready-margin-ms 30000; a flag wins over the file.\n"
	"\n"
	"  --listen HOST:PORT        where to listen (repeatable; default 127.0.0.1:8080)\n"
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
	"  --check-config            print the configuration in force and exit\n";

enum type { T_STR, T_U32, T_U64, T_BOOL, T_LIST, T_CALLERS, T_QUOTAS, T_KEYS };

struct opt {
	const char *key;
	enum type type;
	size_t offset;
	uint64_t min, max;
};

#define OPT(k, t, lo, hi) { #k, t, offsetof(struct httpd_config, k), lo, hi }

static const struct opt opts[] = {
	OPT(listen, T_LIST, 0, 0),
	OPT(callers, T_CALLERS, 0, 0),
	OPT(quotas, T_QUOTAS, 0, 0),
	OPT(device, T_STR, 0, 0),
	OPT(layouts, T_STR, 0, 0),
	OPT(threads, T_U32, 0, 1024),
	OPT(max_connections, T_U32, 1, 1000000),
	OPT(max_connections_per_ip, T_U32, 0, 1000000),
	OPT(ipv6_prefix_per_ip, T_U32, 1, 128),
	OPT(timeout_s, T_U32, 1, 3600),
	OPT(ready_margin_ms, T_U64, 0, 86400000),
	OPT(ready_max_ahead_ms, T_U64, 0, 86400000),
	OPT(clock_check, T_BOOL, 0, 0),
	OPT(clock_max_offset_us, T_U64, 1, 1000000000),
	OPT(sim_lease_ms, T_U64, 0, 86400000),
	OPT(public_keys, T_KEYS, 0, 0),
	OPT(public_current, T_STR, 0, 0),
};

#define NR_OPTS	(sizeof(opts) / sizeof(opts[0]))

static void *field(struct httpd_config *cfg, const struct opt *o)
{
	return (char *)cfg + o->offset;
}

static void free_list(char **list, unsigned int *nr)
{
	while (*nr)
		free(list[--*nr]);
}

/* Blank-separated words, replacing the list (listen, callers or public_keys). */
static int set_list(struct httpd_config *cfg, const struct opt *o,
		    const char *value, char *err, size_t errlen)
{
	bool callers = o->type == T_CALLERS, keys = o->type == T_KEYS;
	char **list = callers ? cfg->callers : keys ? cfg->public_keys : cfg->listen;
	unsigned int *nr = callers ? &cfg->nr_callers : keys ? &cfg->nr_public_keys :
			   &cfg->nr_listen;
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
			snprintf(err, errlen, "'%.*s' is not a caller's name (1 to 64 "
				 "letters, digits, '.', '_', ':' or '-'; not \"other\")",
				 (int)(len > 64 ? 64 : len), p);
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
	if (o->type == T_LIST && !*nr) {
		snprintf(err, errlen, "no address given");
		return -1;
	}
	return 0;
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
static int set_quotas(struct httpd_config *cfg, const char *value, char *err,
		      size_t errlen)
{
	const char *p = value, *eq, *slash;
	struct httpd_quota *q;
	unsigned int i;
	size_t len;

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
			snprintf(err, errlen, "'%.*s' is not a caller's name (1 to 64 "
				 "letters, digits, '.', '_', ':' or '-'; or other)",
				 (int)(eq - p > 64 ? 64 : eq - p), p);
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

static int set_opt(struct httpd_config *cfg, const struct opt *o,
		   const char *value, char *err, size_t errlen)
{
	uint64_t v;
	char *s;

	switch (o->type) {
	case T_STR:
		s = strdup(value);
		if (!s) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		free(*(char **)field(cfg, o));
		*(char **)field(cfg, o) = s;
		return 0;
	case T_U32:
	case T_U64:
		switch (idgen_decimal_str(value, o->min, o->max, &v)) {
		case 0:
			break;
		case -ERANGE:
			snprintf(err, errlen, "'%.64s' is out of range (%" PRIu64 " to %"
				 PRIu64 ")", value, o->min, o->max);
			return -1;
		default:
			snprintf(err, errlen, "'%.64s' is not a decimal number (digits "
				 "only, no sign, blanks or leading zeros)", value);
			return -1;
		}
		if (o->type == T_U32)
			*(uint32_t *)field(cfg, o) = v;
		else
			*(uint64_t *)field(cfg, o) = v;
		return 0;
	case T_BOOL:
		if (!strcmp(value, "yes") || !strcmp(value, "true")) {
			*(bool *)field(cfg, o) = true;
		} else if (!strcmp(value, "no") || !strcmp(value, "false")) {
			*(bool *)field(cfg, o) = false;
		} else {
			snprintf(err, errlen, "'%.64s' is not yes or no", value);
			return -1;
		}
		return 0;
	case T_LIST:
	case T_CALLERS:
	case T_KEYS:
		return set_list(cfg, o, value, err, errlen);
	case T_QUOTAS:
		return set_quotas(cfg, value, err, errlen);
	}
	return -1;
}

static unsigned int file_line[NR_OPTS];

/* One section header or key of the file (inifile_fn). */
static int config_line(void *user, unsigned int line, const char *section,
		       const char *name, const char *value, bool continued,
		       char *err, size_t errlen)
{
	struct httpd_config *cfg = user;
	char why[200];
	size_t i;

	if (strcmp(section, "httpd")) {
		snprintf(err, errlen, "unknown section [%.64s] (the file has [httpd] "
			 "only)", section);
		return -1;
	}
	if (!name)
		return 0;
	for (i = 0; i < NR_OPTS; i++) {
		if (strcmp(opts[i].key, name))
			continue;
		if (file_line[i]) {
			snprintf(err, errlen, "%.64s is given twice (line %u first)",
				 name, file_line[i]);
			return -1;
		}
		if (continued && opts[i].type != T_LIST && opts[i].type != T_CALLERS &&
		    opts[i].type != T_QUOTAS && opts[i].type != T_KEYS) {
			snprintf(err, errlen, "%.64s: an indented line continues its "
				 "value, and only listen, callers, quotas and public_keys "
				 "take a list",
				 name);
			return -1;
		}
		if (set_opt(cfg, &opts[i], value, why, sizeof(why))) {
			snprintf(err, errlen, "%.64s: %s", name, why);
			return -1;
		}
		file_line[i] = line;
		return 0;
	}
	snprintf(err, errlen, "unknown key '%.64s'", name);
	return -1;
}

/* "--ready-margin-ms" -> the option "ready_margin_ms". */
static const struct opt *find_flag(const char *flag, size_t len)
{
	size_t i;

	for (i = 0; i < NR_OPTS; i++)
		if (inifile_flag_names(flag, len, opts[i].key))
			return &opts[i];
	return NULL;
}

static int apply_file(struct httpd_config *cfg, const char *path)
{
	char err[400], *text;
	size_t len;
	int line;

	if (inifile_read(PROG, path, &text, &len))
		return -1;
	line = inifile_parse(text, len, config_line, cfg, err, sizeof(err));
	free(text);
	if (line < 0) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	if (line) {
		fprintf(stderr, PROG ": %s:%d: %s\n", path, line, err);
		return -1;
	}
	cfg->path = path;
	return 0;
}

static int set_defaults(struct httpd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	memset(file_line, 0, sizeof(file_line));
	cfg->listen[0] = strdup("127.0.0.1:8080");
	cfg->nr_listen = 1;
	cfg->device = strdup("/dev/idgen");
	cfg->layouts = strdup("");
	cfg->max_connections = 1024;
	cfg->max_connections_per_ip = 0;
	cfg->ipv6_prefix_per_ip = 64;
	cfg->timeout_s = 10;
	cfg->ready_margin_ms = 30000;
	cfg->clock_check = true;
	cfg->clock_max_offset_us = 5000;
	cfg->public_current = strdup("");
	return cfg->listen[0] && cfg->device && cfg->layouts && cfg->public_current ?
	       0 : -1;
}

int httpd_config_load(struct httpd_config *cfg, int argc, char *argv[])
{
	const char *path = NULL;
	bool explicit_path = false, listen_flag = false;
	char err[200];
	int i;

	if (set_defaults(cfg)) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 1;
		}
		if (!strcmp(argv[i], "--version")) {
			printf(PROG " %s\n", IDGEN_VERSION);
			return 1;
		}
		if (!strcmp(argv[i], "--config") && i + 1 < argc) {
			path = argv[++i];
			explicit_path = true;
		} else if (!strncmp(argv[i], "--config=", 9)) {
			path = argv[i] + 9;
			explicit_path = true;
		}
	}
	if (!path)
		path = HTTPD_CONFIG_DEFAULT_PATH;
	if ((explicit_path || access(path, F_OK) == 0) && apply_file(cfg, path))
		return -1;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq, *value;
		const struct opt *o;
		size_t len;

		if (!strcmp(arg, "--config")) {
			if (++i == argc) {
				fprintf(stderr, PROG ": --config needs a file\n");
				return -1;
			}
			continue;
		}
		if (!strncmp(arg, "--config=", 9))
			continue;
		if (!strcmp(arg, "--check-config")) {
			cfg->check_only = true;
			continue;
		}
		if (strncmp(arg, "--", 2)) {
			fprintf(stderr, PROG ": unexpected argument '%s' (try --help)\n", arg);
			return -1;
		}
		arg += 2;
		eq = strchr(arg, '=');
		len = eq ? (size_t)(eq - arg) : strlen(arg);
		o = find_flag(arg, len);
		if (!o) {
			fprintf(stderr, PROG ": unknown option '--%.*s' (try --help)\n",
				(int)len, arg);
			return -1;
		}
		if (eq) {
			value = eq + 1;
		} else if (i + 1 < argc) {
			value = argv[++i];
		} else {
			fprintf(stderr, PROG ": --%.*s needs a value\n", (int)len, arg);
			return -1;
		}
		if (o->type == T_LIST) {
			/* Repeatable: the first --listen replaces the file's list. */
			if (!listen_flag)
				free_list(cfg->listen, &cfg->nr_listen);
			listen_flag = true;
			if (cfg->nr_listen == HTTPD_MAX_LISTEN) {
				fprintf(stderr, PROG ": --listen: more than %d addresses\n",
					HTTPD_MAX_LISTEN);
				return -1;
			}
			if (!*value || strpbrk(value, " \t")) {
				fprintf(stderr, PROG ": --listen '%s': want one HOST:PORT\n",
					value);
				return -1;
			}
			cfg->listen[cfg->nr_listen] = strdup(value);
			if (!cfg->listen[cfg->nr_listen]) {
				fprintf(stderr, PROG ": out of memory\n");
				return -1;
			}
			cfg->nr_listen++;
			continue;
		}
		if (set_opt(cfg, o, value, err, sizeof(err))) {
			fprintf(stderr, PROG ": --%.*s: %s\n", (int)len, arg, err);
			return -1;
		}
	}
	return check_quotas(cfg);
}

void httpd_config_print(const struct httpd_config *cfg, FILE *f)
{
	unsigned int i;

	fprintf(f, "# idgen-httpd: the configuration in force (%s)\n[httpd]\nlisten =",
		cfg->path ? cfg->path : "no file");
	for (i = 0; i < cfg->nr_listen; i++)
		fprintf(f, " %s", cfg->listen[i]);
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
}

void httpd_config_free(struct httpd_config *cfg)
{
	free_list(cfg->listen, &cfg->nr_listen);
	free_list(cfg->callers, &cfg->nr_callers);
	free_list(cfg->public_keys, &cfg->nr_public_keys);
	free_quotas(cfg);
	free(cfg->device);
	free(cfg->layouts);
	free(cfg->public_current);
	cfg->device = cfg->layouts = cfg->public_current = NULL;
}

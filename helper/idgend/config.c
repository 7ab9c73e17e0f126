// SPDX-License-Identifier: GPL-2.0
/*
 * The configuration file and the flags (config.h).  One table names every
 * key, its section, type and range, so the file and the command line
 * cannot drift apart.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "decimal.h"
#include "http_url.h"
#include "inifile.h"
#include "json_ascii.h"

#ifndef IDGEN_VERSION
#error "IDGEN_VERSION: the tree's one version (VERSION), set by the Makefile"
#endif

enum opt_type { T_STR, T_U32, T_U64, T_BOOL, T_MODE, T_LIST };

struct opt {
	const char *section;
	const char *key;
	enum opt_type type;
	size_t off;
	uint64_t min, max;
};

#define O(sec, k, t, field, lo, hi) \
	{ sec, #k, t, offsetof(struct config, field), lo, hi }

static const struct opt opts[] = {
	O("idgend", mode, T_MODE, mode, 0, 0),
	O("idgend", device, T_STR, device, 0, 0),
	O("idgend", owner, T_STR, owner, 0, 0),
	O("idgend", region, T_U32, region, 0, 255),
	O("idgend", layout, T_STR, layout_name, 0, 0),
	O("idgend", runtime_dir, T_STR, runtime_dir, 0, 0),
	O("idgend", lease_ms, T_U64, lease_ms, 1000, 86400000),
	O("idgend", renew_ms, T_U64, renew_ms, 100, 43200000),
	O("idgend", require_clock_sync, T_BOOL, require_clock_sync, 0, 0),
	O("standalone", worker, T_U32, worker, 0, 65535),
	O("standalone", state_file, T_STR, state_file, 0, 0),
	O("etcd", endpoints, T_LIST, endpoints, 0, 0),
	O("etcd", prefix, T_STR, prefix, 0, 0),
	O("etcd", timeout_ms, T_U64, timeout_ms, 100, 600000),
	O("etcd", start_timeout_ms, T_U64, start_timeout_ms, 0, 86400000),
	O("etcd", claim_retry_ms, T_U64, claim_retry_ms, 100, 3600000),
};

#define NR_OPTS	(sizeof(opts) / sizeof(opts[0]))

static const char usage[] =
	"Usage: idgend [--config FILE] [--check-config] [--fresh-state]\n"
	"              [--KEY VALUE]...\n"
	"       idgend --cut-over-layout R/W/S [--force] [--config FILE]\n"
	"              [--KEY VALUE]...\n"
	"Lease this host's idgen worker number and keep /dev/idgen's lease\n"
	"in force.  Every key of the configuration file (default "
	CONFIG_DEFAULT_PATH ")\n"
	"is also a flag, with '-' for '_': --mode etcd --endpoints URL,URL ...\n"
	"\n"
	"  [idgend]      mode (standalone|etcd), device, owner, region, layout,\n"
	"                runtime_dir, lease_ms, renew_ms, require_clock_sync (yes|no)\n"
	"  [standalone]  worker, state_file\n"
	"  [etcd]        endpoints, prefix, timeout_ms, start_timeout_ms,\n"
	"                claim_retry_ms\n"
	"\n"
	"--fresh-state: in standalone mode, start even though the state file\n"
	"is missing from its directory (this host never minted as its worker).\n"
	"--force: with --cut-over-layout, write the layout even when it would\n"
	"start more than lease_ms ahead of the clock.\n"
	"\n"
	"See idgend(8).\n";

/* Longer than any configuration: not one. */

static bool seen[NR_OPTS];
static unsigned int file_line[NR_OPTS];	/* where the file gave each key */
static char errbuf[512];

static void *field(struct config *cfg, const struct opt *o)
{
	return (char *)cfg + o->off;
}

static int set_list(struct config *cfg, const char *value)
{
	char *copy = strdup(value), *tok, *save = NULL;
	unsigned int n = 0;
	const char *why;

	if (!copy)
		return -ENOMEM;
	while (cfg->nr_endpoints)
		free(cfg->endpoints[--cfg->nr_endpoints]);
	for (tok = strtok_r(copy, ", \t", &save); tok;
	     tok = strtok_r(NULL, ", \t", &save)) {
		if (n == CONFIG_MAX_ENDPOINTS) {
			snprintf(errbuf, sizeof(errbuf),
				 "more than %d endpoints", CONFIG_MAX_ENDPOINTS);
			free(copy);
			return -EINVAL;
		}
		why = idgen_http_url_fault(tok, false);
		if (why) {
			snprintf(errbuf, sizeof(errbuf), "endpoint '%.200s' %s", tok, why);
			free(copy);
			return -EINVAL;
		}
		cfg->endpoints[n++] = strdup(tok);
		cfg->nr_endpoints = n;
		if (!cfg->endpoints[n - 1]) {
			free(copy);
			return -ENOMEM;
		}
	}
	free(copy);
	if (!n) {
		snprintf(errbuf, sizeof(errbuf), "no endpoint given");
		return -EINVAL;
	}
	return 0;
}

/* Set one key; on failure errbuf says why. */
static int set_opt(struct config *cfg, const struct opt *o, const char *value)
{
	uint64_t v;

	switch (o->type) {
	case T_STR: {
		char **p = field(cfg, o);

		if (!*value) {
			snprintf(errbuf, sizeof(errbuf), "empty value");
			return -EINVAL;
		}
		free(*p);
		*p = strdup(value);
		return *p ? 0 : -ENOMEM;
	}
	case T_U32:
	case T_U64:
		if (idgen_decimal_str(value, o->min, o->max, &v)) {
			snprintf(errbuf, sizeof(errbuf),
				 "'%.200s' is not a whole number from %" PRIu64 " to %" PRIu64,
				 value, o->min, o->max);
			return -EINVAL;
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
			snprintf(errbuf, sizeof(errbuf), "'%s' is not yes or no", value);
			return -EINVAL;
		}
		return 0;
	case T_MODE:
		if (!strcmp(value, "standalone")) {
			cfg->mode = MODE_STANDALONE;
		} else if (!strcmp(value, "etcd")) {
			cfg->mode = MODE_ETCD;
		} else {
			snprintf(errbuf, sizeof(errbuf),
				 "'%s' is not standalone or etcd", value);
			return -EINVAL;
		}
		return 0;
	case T_LIST:
		return set_list(cfg, value);
	}
	return -EINVAL;
}

/* One section header or key of the file (inifile_fn). */
static int config_line(void *user, unsigned int line, const char *section,
		       const char *name, const char *value, bool continued,
		       char *err, size_t errlen)
{
	struct config *cfg = user;
	size_t i;

	for (i = 0; i < NR_OPTS; i++) {
		if (strcmp(opts[i].section, section))
			continue;
		if (!name)
			return 0;	/* a known section */
		if (strcmp(opts[i].key, name))
			continue;
		if (file_line[i]) {
			snprintf(err, errlen, "[%.32s] %.64s is given twice (line %u "
				 "first)", section, name, file_line[i]);
			return -1;
		}
		if (continued && opts[i].type != T_LIST) {
			snprintf(err, errlen, "[%.32s] %.64s: an indented line "
				 "continues its value, and only endpoints takes a "
				 "list", section, name);
			return -1;
		}
		errbuf[0] = '\0';
		if (set_opt(cfg, &opts[i], value)) {
			snprintf(err, errlen, "[%.32s] %.64s: %s", section, name,
				 errbuf);
			return -1;
		}
		file_line[i] = line;
		seen[i] = true;
		return 0;
	}
	if (!name)
		snprintf(err, errlen, "unknown section [%.64s]", section);
	else
		snprintf(err, errlen, "unknown key '%.64s' in section [%.64s]",
			 name, section);
	return -1;
}

/* "--lease-ms" -> the option "lease_ms". */
static const struct opt *find_flag(const char *flag, size_t len)
{
	size_t i;

	for (i = 0; i < NR_OPTS; i++)
		if (inifile_flag_names(flag, len, opts[i].key))
			return &opts[i];
	return NULL;
}

static void set_defaults(struct config *cfg)
{
	char host[256];

	memset(cfg, 0, sizeof(*cfg));
	memset(seen, 0, sizeof(seen));
	memset(file_line, 0, sizeof(file_line));
	cfg->mode = MODE_STANDALONE;
	cfg->device = strdup("/dev/idgen");
	if (gethostname(host, sizeof(host)))
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = '\0';
	cfg->owner = strdup(host);
	cfg->state_file = strdup("/var/lib/idgen/standalone/state");
	cfg->layout_name = strdup("3/7/12");
	cfg->runtime_dir = strdup("/run/idgen");
	cfg->prefix = strdup("/idgen");
	cfg->timeout_ms = 2000;
	cfg->start_timeout_ms = 30000;
	cfg->claim_retry_ms = 5000;
}

/* Defaults that depend on the mode, for keys not given. */
static void mode_defaults(struct config *cfg)
{
	bool etcd = cfg->mode == MODE_ETCD;
	size_t i;

	for (i = 0; i < NR_OPTS; i++) {
		if (seen[i])
			continue;
		if (!strcmp(opts[i].key, "lease_ms"))
			cfg->lease_ms = etcd ? 600000 : 60000;
		else if (!strcmp(opts[i].key, "renew_ms"))
			cfg->renew_ms = etcd ? 30000 : 20000;
		else if (!strcmp(opts[i].key, "require_clock_sync"))
			cfg->require_clock_sync = etcd;
		else if (!strcmp(opts[i].key, "endpoints"))
			set_list(cfg, "http://127.0.0.1:2379");
	}
}

/* NULL, or why the owner cannot name this host in etcd's records. */
static const char *bad_owner(const char *owner)
{
	const unsigned char *c;

	if (strlen(owner) >= 128)
		return "must be shorter than 128 bytes";
	for (c = (const unsigned char *)owner; *c; c++) {
		if (*c == '"')
			return "must not contain '\"'";
		if (*c < 0x20 || *c == 0x7f)
			return "must not contain control characters";
	}
	/* etcd's records hold it as JSON text: Unicode (json_ascii.h). */
	if (!utf8_valid(owner, strlen(owner)))
		return "must be UTF-8";
	return NULL;
}

static int check(struct config *cfg)
{
	const char *where = cfg->path ? cfg->path : "command line";

	if (cfg->renew_ms * 2 > cfg->lease_ms) {
		fprintf(stderr, "idgend: %s: renew_ms (%" PRIu64 ") must be at most half "
			"of lease_ms (%" PRIu64 "), so a renewal can fail once and "
			"still land before the fence\n", where, cfg->renew_ms,
			cfg->lease_ms);
		return -1;
	}
	if (bad_owner(cfg->owner)) {
		fprintf(stderr, "idgend: %s: owner '%.128s' %s\n", where,
			cfg->owner, bad_owner(cfg->owner));
		return -1;
	}
	if (layout_parse(cfg->layout_name, &cfg->layout, errbuf, sizeof(errbuf))) {
		fprintf(stderr, "idgend: %s: layout: %s\n", where, errbuf);
		return -1;
	}
	if (cfg->region >> cfg->layout.region_bits) {
		fprintf(stderr, "idgend: %s: region %" PRIu32 " does not fit layout %s "
			"(%u region bits)\n", where, cfg->region, cfg->layout_name,
			cfg->layout.region_bits);
		return -1;
	}
	if (cfg->mode == MODE_STANDALONE && cfg->worker >> cfg->layout.worker_bits) {
		fprintf(stderr, "idgend: %s: worker %" PRIu32 " does not fit layout %s "
			"(%u worker bits)\n", where, cfg->worker, cfg->layout_name,
			cfg->layout.worker_bits);
		return -1;
	}
	if (cfg->cut_over &&
	    cfg->cut_over_layout.region_bits != cfg->layout.region_bits) {
		fprintf(stderr, "idgend: --cut-over-layout: a cut-over keeps the region "
			"bits (%u): every region shares them\n", cfg->layout.region_bits);
		return -1;
	}
	if (cfg->force && !cfg->cut_over) {
		fprintf(stderr, "idgend: --force is for --cut-over-layout only\n");
		return -1;
	}
	if (cfg->runtime_dir[0] != '/') {
		fprintf(stderr, "idgend: %s: runtime_dir '%s' must be an absolute path\n",
			where, cfg->runtime_dir);
		return -1;
	}
	if (cfg->prefix[0] != '/' || cfg->prefix[strlen(cfg->prefix) - 1] == '/') {
		fprintf(stderr, "idgend: %s: prefix '%s' must start with '/' and not "
			"end with one\n", where, cfg->prefix);
		return -1;
	}
	if (cfg->mode == MODE_ETCD && cfg->timeout_ms * 2 > cfg->renew_ms) {
		fprintf(stderr, "idgend: %s: timeout_ms (%" PRIu64 ") must be at most "
			"half of renew_ms (%" PRIu64 ")\n", where, cfg->timeout_ms,
			cfg->renew_ms);
		return -1;
	}
	return 0;
}

/* The configuration text, keys onto *cfg: 0, or -1 after saying why. */
static int apply_text(struct config *cfg, const char *path, const char *text,
		      size_t len)
{
	char err[sizeof(errbuf) + 200];
	int line;

	line = inifile_parse(text, len, config_line, cfg, err, sizeof(err));
	if (line < 0) {
		fprintf(stderr, "idgend: out of memory\n");
		return -1;
	}
	if (line) {
		fprintf(stderr, "idgend: %s:%d: %s\n", path, line, err);
		return -1;
	}
	cfg->path = path;
	return 0;
}

int config_load_text(struct config *cfg, const char *name, const char *text,
		     size_t len)
{
	set_defaults(cfg);
	if (!cfg->device || !cfg->owner || !cfg->state_file || !cfg->prefix)
		return -1;
	if (apply_text(cfg, name, text, len))
		return -1;
	mode_defaults(cfg);
	return check(cfg);
}

int config_load(struct config *cfg, int argc, char *argv[])
{
	const char *path = NULL;
	bool explicit_path = false;
	int i;

	set_defaults(cfg);
	if (!cfg->device || !cfg->owner || !cfg->state_file || !cfg->prefix ||
	    !cfg->layout_name || !cfg->runtime_dir) {
		fprintf(stderr, "idgend: out of memory\n");
		return -1;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 1;
		}
		if (!strcmp(argv[i], "--version")) {
			printf("idgend %s\n", IDGEN_VERSION);
			return 1;
		}
		if (!strcmp(argv[i], "--config")) {
			if (i + 1 == argc) {
				fprintf(stderr, "idgend: --config needs a file\n");
				return -1;
			}
			path = argv[++i];
			explicit_path = true;
		} else if (!strncmp(argv[i], "--config=", 9)) {
			path = argv[i] + 9;
			explicit_path = true;
		}
	}
	if (!path)
		path = CONFIG_DEFAULT_PATH;

	if (explicit_path || access(path, F_OK) == 0) {
		char *text;
		size_t len;
		int err;

		if (inifile_read("idgend", path, &text, &len))
			return -1;
		err = apply_text(cfg, path, text, len);
		free(text);
		if (err)
			return -1;
	}

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq, *value;
		const struct opt *o;
		size_t len;

		if (!strcmp(arg, "--config")) {
			i++;
			continue;
		}
		if (!strncmp(arg, "--config=", 9))
			continue;
		if (!strcmp(arg, "--check-config")) {
			cfg->check_only = true;
			continue;
		}
		/* A flag only: a key in the file would outlive the one start. */
		if (!strcmp(arg, "--fresh-state")) {
			cfg->fresh_state = true;
			continue;
		}
		if (!strcmp(arg, "--force")) {
			cfg->force = true;
			continue;
		}
		if (!strcmp(arg, "--cut-over-layout")) {
			if (i + 1 == argc) {
				fprintf(stderr, "idgend: --cut-over-layout needs a layout "
					"(region/worker/sequence bits, e.g. 3/10/9)\n");
				return -1;
			}
			if (layout_parse(argv[++i], &cfg->cut_over_layout, errbuf,
					 sizeof(errbuf))) {
				fprintf(stderr, "idgend: --cut-over-layout: %s\n", errbuf);
				return -1;
			}
			cfg->cut_over = true;
			continue;
		}
		if (strncmp(arg, "--", 2)) {
			fprintf(stderr, "idgend: unexpected argument '%s' (try --help)\n",
				arg);
			return -1;
		}
		arg += 2;
		eq = strchr(arg, '=');
		len = eq ? (size_t)(eq - arg) : strlen(arg);
		o = find_flag(arg, len);
		if (!o) {
			fprintf(stderr, "idgend: unknown option '%s' (try --help)\n",
				argv[i]);
			return -1;
		}
		if (eq) {
			value = eq + 1;
		} else if (i + 1 < argc) {
			value = argv[++i];
		} else {
			fprintf(stderr, "idgend: --%.*s needs a value\n", (int)len, arg);
			return -1;
		}
		if (set_opt(cfg, o, value)) {
			fprintf(stderr, "idgend: --%.*s: %s\n", (int)len, arg, errbuf);
			return -1;
		}
		seen[o - opts] = true;
	}
	mode_defaults(cfg);
	return check(cfg);
}

void config_print(const struct config *cfg, FILE *f)
{
	const char *section = "";
	size_t i;

	for (i = 0; i < NR_OPTS; i++) {
		const struct opt *o = &opts[i];
		const void *p = (const char *)cfg + o->off;

		if (strcmp(section, o->section)) {
			section = o->section;
			fprintf(f, "%s[%s]\n", i ? "\n" : "", section);
		}
		fprintf(f, "%s = ", o->key);
		switch (o->type) {
		case T_STR:
			fputs(*(char *const *)p, f);
			break;
		case T_U32:
			fprintf(f, "%" PRIu32, *(const uint32_t *)p);
			break;
		case T_U64:
			fprintf(f, "%" PRIu64, *(const uint64_t *)p);
			break;
		case T_BOOL:
			fputs(*(const bool *)p ? "yes" : "no", f);
			break;
		case T_MODE:
			fputs(cfg->mode == MODE_ETCD ? "etcd" : "standalone", f);
			break;
		case T_LIST:
			for (unsigned int n = 0; n < cfg->nr_endpoints; n++)
				fprintf(f, "%s%s", n ? "," : "", cfg->endpoints[n]);
			break;
		}
		fputc('\n', f);
	}
}

void config_free(struct config *cfg)
{
	free(cfg->device);
	free(cfg->owner);
	free(cfg->state_file);
	free(cfg->prefix);
	free(cfg->layout_name);
	free(cfg->runtime_dir);
	while (cfg->nr_endpoints)
		free(cfg->endpoints[--cfg->nr_endpoints]);
}

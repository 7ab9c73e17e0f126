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
#include <strings.h>
#include <unistd.h>

#include "conf.h"
#include "config.h"
#include "http_url.h"
#include "json_ascii.h"

#ifndef IDGEN_VERSION
#error "IDGEN_VERSION: the tree's one version (VERSION), set by the Makefile"
#endif

static int set_mode(const struct conf_item *it, const char *value, void *field,
		    void *cfg, char *err, size_t errlen);
static int set_endpoints(const struct conf_item *it, const char *value, void *field,
			 void *cfg, char *err, size_t errlen);

#define O(sec, k, parser, lo, hi) \
	{ sec, #k, parser, offsetof(struct config, k), lo, hi, false }

/* Every key: the file's and, with '-' for '_', the command line's. */
static const struct conf_item items[] = {
	O("idgend", mode, set_mode, 0, 0),
	O("idgend", device, conf_string, 0, 0),
	O("idgend", owner, conf_string, 0, 0),
	O("idgend", region, conf_u32, 0, 255),
	{ "idgend", "layout", conf_string, offsetof(struct config, layout_name), 0, 0, false },
	O("idgend", runtime_dir, conf_string, 0, 0),
	O("idgend", lease_ms, conf_u64, 1000, 86400000),
	O("idgend", renew_ms, conf_u64, 100, 43200000),
	O("idgend", require_clock_sync, conf_bool, 0, 0),
	O("standalone", worker, conf_u32, 0, 65535),
	O("standalone", state_file, conf_string, 0, 0),
	{ "etcd", "endpoints", set_endpoints, offsetof(struct config, endpoints), 0, 0, true },
	O("etcd", prefix, conf_string, 0, 0),
	O("etcd", timeout_ms, conf_u64, 100, 600000),
	O("etcd", start_timeout_ms, conf_u64, 0, 86400000),
	O("etcd", claim_retry_ms, conf_u64, 100, 3600000),
	O("etcd", ca_file, conf_string_or_empty, 0, 0),
	O("etcd", cert_file, conf_string_or_empty, 0, 0),
	O("etcd", key_file, conf_string_or_empty, 0, 0),
	O("etcd", user, conf_string_or_empty, 0, 0),
	O("etcd", password_file, conf_string_or_empty, 0, 0),
};

#define NR_ITEMS	(sizeof(items) / sizeof(items[0]))

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
	"                claim_retry_ms, ca_file, cert_file, key_file, user,\n"
	"                password_file\n"
	"\n"
	"--fresh-state: in standalone mode, start even though the state file\n"
	"is missing from its directory (this host never minted as its worker).\n"
	"--force: with --cut-over-layout, write the layout even when it would\n"
	"start more than lease_ms ahead of the clock.\n"
	"\n"
	"See idgend(8).\n";

static char errbuf[512];

/* endpoints: URLs separated by commas or blanks, replacing the list. */
static int set_endpoints(const struct conf_item *it, const char *value, void *field,
			 void *cfg_, char *err, size_t errlen)
{
	struct config *cfg = cfg_;
	char *copy = strdup(value), *tok, *save = NULL;
	unsigned int n = 0;
	const char *why;

	(void)it;
	(void)field;
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	while (cfg->nr_endpoints)
		free(cfg->endpoints[--cfg->nr_endpoints]);
	for (tok = strtok_r(copy, ", \t", &save); tok;
	     tok = strtok_r(NULL, ", \t", &save)) {
		if (n == CONFIG_MAX_ENDPOINTS) {
			snprintf(err, errlen, "more than %d endpoints", CONFIG_MAX_ENDPOINTS);
			free(copy);
			return -1;
		}
		why = idgen_http_url_fault(tok, false);
		if (why) {
			snprintf(err, errlen, "endpoint '%.200s' %s", tok, why);
			free(copy);
			return -1;
		}
		cfg->endpoints[n++] = strdup(tok);
		cfg->nr_endpoints = n;
		if (!cfg->endpoints[n - 1]) {
			snprintf(err, errlen, "out of memory");
			free(copy);
			return -1;
		}
	}
	free(copy);
	if (!n) {
		snprintf(err, errlen, "no endpoint given");
		return -1;
	}
	return 0;
}

static int set_mode(const struct conf_item *it, const char *value, void *field,
		    void *cfg, char *err, size_t errlen)
{
	(void)it;
	(void)cfg;
	if (!strcmp(value, "standalone")) {
		*(enum config_mode *)field = MODE_STANDALONE;
	} else if (!strcmp(value, "etcd")) {
		*(enum config_mode *)field = MODE_ETCD;
	} else {
		snprintf(err, errlen, "'%.64s' is not standalone or etcd", value);
		return -1;
	}
	return 0;
}

static void set_defaults(struct config *cfg)
{
	char host[256];

	memset(cfg, 0, sizeof(*cfg));
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
	cfg->ca_file = strdup("");
	cfg->cert_file = strdup("");
	cfg->key_file = strdup("");
	cfg->user = strdup("");
	cfg->password_file = strdup("");
}

/* Defaults that depend on the mode, for keys not given. */
static int mode_defaults(struct config *cfg, const struct conf *c)
{
	bool etcd = cfg->mode == MODE_ETCD;
	char err[128];

	if (!conf_given(c, "lease_ms"))
		cfg->lease_ms = etcd ? 600000 : 60000;
	if (!conf_given(c, "renew_ms"))
		cfg->renew_ms = etcd ? 30000 : 20000;
	if (!conf_given(c, "require_clock_sync"))
		cfg->require_clock_sync = etcd;
	if (!conf_given(c, "endpoints") &&
	    set_endpoints(NULL, "http://127.0.0.1:2379", NULL, cfg, err, sizeof(err))) {
		fprintf(stderr, "idgend: %s\n", err);
		return -1;
	}
	return 0;
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

/*
 * TLS and authentication: both halves of a pair, and every endpoint
 * https:// once any of them is set.  A plaintext endpoint among TLS ones
 * would hand the token (and, authenticating there, the password) to
 * whoever is on the path, and take its answers from them: a list that
 * mixes the two, or TLS files or a user with a plaintext list, is a
 * mistake to name, not a configuration to run.
 */
static int check_security(const struct config *cfg, const char *where)
{
	unsigned int i, tls = 0;
	const char *need = NULL;

	if (!*cfg->cert_file != !*cfg->key_file) {
		fprintf(stderr, "idgend: %s: cert_file and key_file go together: "
			"%s is given without %s\n", where,
			*cfg->cert_file ? "cert_file" : "key_file",
			*cfg->cert_file ? "key_file" : "cert_file");
		return -1;
	}
	if (!*cfg->user != !*cfg->password_file) {
		fprintf(stderr, "idgend: %s: user and password_file go together: "
			"%s is given without %s (the password is read from a file "
			"only)\n", where, *cfg->user ? "user" : "password_file",
			*cfg->user ? "password_file" : "user");
		return -1;
	}
	if (*cfg->user && bad_owner(cfg->user)) {
		fprintf(stderr, "idgend: %s: user '%.128s' %s\n", where, cfg->user,
			bad_owner(cfg->user));
		return -1;
	}
	for (i = 0; i < cfg->nr_endpoints; i++)
		tls += !strncasecmp(cfg->endpoints[i], "https://", 8);
	if (tls && tls != cfg->nr_endpoints) {
		fprintf(stderr, "idgend: %s: endpoints: %u of %u are https:// and the "
			"others http://: every endpoint must be the one or the other "
			"(a plaintext member would see the token and could answer for "
			"etcd)\n", where, tls, cfg->nr_endpoints);
		return -1;
	}
	if (*cfg->ca_file)
		need = "ca_file";
	else if (*cfg->cert_file)
		need = "cert_file";
	else if (*cfg->user)
		need = "user";
	if (need && !tls) {
		fprintf(stderr, "idgend: %s: %s is given, but the endpoints are "
			"http://: TLS files and etcd users need https:// endpoints "
			"(the password and token would cross the network in plain "
			"text)\n", where, need);
		return -1;
	}
	return 0;
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
	if (check_security(cfg, where))
		return -1;
	if (cfg->mode == MODE_ETCD && cfg->timeout_ms * 2 > cfg->renew_ms) {
		fprintf(stderr, "idgend: %s: timeout_ms (%" PRIu64 ") must be at most "
			"half of renew_ms (%" PRIu64 ")\n", where, cfg->timeout_ms,
			cfg->renew_ms);
		return -1;
	}
	return 0;
}

int config_load_text(struct config *cfg, const char *name, const char *text,
		     size_t len)
{
	struct conf c;

	set_defaults(cfg);
	if (!cfg->device || !cfg->owner || !cfg->state_file || !cfg->prefix ||
	    !cfg->layout_name || !cfg->runtime_dir || !cfg->ca_file ||
	    !cfg->cert_file || !cfg->key_file || !cfg->user || !cfg->password_file)
		return -1;
	conf_init(&c, "idgend", items, NR_ITEMS, cfg);
	if (conf_apply_text(&c, name, text, len))
		return -1;
	cfg->path = c.path;
	if (mode_defaults(cfg, &c))
		return -1;
	return check(cfg);
}

/* A flag of idgend's own, not a key: 0 (taken), 1 (not one), -1 (said why). */
static int own_flag(void *cfg_, int argc, char *argv[], int *i)
{
	struct config *cfg = cfg_;
	const char *arg = argv[*i];

	/* A flag only: a key in the file would outlive the one start. */
	if (!strcmp(arg, "--fresh-state")) {
		cfg->fresh_state = true;
		return 0;
	}
	if (!strcmp(arg, "--force")) {
		cfg->force = true;
		return 0;
	}
	if (strcmp(arg, "--cut-over-layout"))
		return 1;
	if (*i + 1 == argc) {
		fprintf(stderr, "idgend: --cut-over-layout needs a layout "
			"(region/worker/sequence bits, e.g. 3/10/9)\n");
		return -1;
	}
	if (layout_parse(argv[++*i], &cfg->cut_over_layout, errbuf, sizeof(errbuf))) {
		fprintf(stderr, "idgend: --cut-over-layout: %s\n", errbuf);
		return -1;
	}
	cfg->cut_over = true;
	return 0;
}

int config_load(struct config *cfg, int argc, char *argv[])
{
	const struct conf_program prog = {
		.usage = usage,
		.version = IDGEN_VERSION,
		.default_path = CONFIG_DEFAULT_PATH,
		.check_only = &cfg->check_only,
		.flag = own_flag,
		.flag_arg = cfg,
	};
	struct conf c;
	int ret;

	set_defaults(cfg);
	if (!cfg->device || !cfg->owner || !cfg->state_file || !cfg->prefix ||
	    !cfg->layout_name || !cfg->runtime_dir || !cfg->ca_file ||
	    !cfg->cert_file || !cfg->key_file || !cfg->user || !cfg->password_file) {
		fprintf(stderr, "idgend: out of memory\n");
		return -1;
	}
	conf_init(&c, "idgend", items, NR_ITEMS, cfg);
	ret = conf_load(&c, &prog, argc, argv);
	if (ret)
		return ret;
	cfg->path = c.path;
	if (mode_defaults(cfg, &c))
		return -1;
	return check(cfg);
}

void config_print(const struct config *cfg, FILE *f)
{
	const char *section = "";
	size_t i;

	for (i = 0; i < NR_ITEMS; i++) {
		const struct conf_item *it = &items[i];
		const void *p = (const char *)cfg + it->offset;

		if (strcmp(section, it->section)) {
			section = it->section;
			fprintf(f, "%s[%s]\n", i ? "\n" : "", section);
		}
		fprintf(f, "%s = ", it->key);
		if (it->parse == conf_string || it->parse == conf_string_or_empty)
			fputs(*(char *const *)p, f);
		else if (it->parse == conf_u32)
			fprintf(f, "%" PRIu32, *(const uint32_t *)p);
		else if (it->parse == conf_u64)
			fprintf(f, "%" PRIu64, *(const uint64_t *)p);
		else if (it->parse == conf_bool)
			fputs(*(const bool *)p ? "yes" : "no", f);
		else if (it->parse == set_mode)
			fputs(cfg->mode == MODE_ETCD ? "etcd" : "standalone", f);
		else if (it->parse == set_endpoints)
			for (unsigned int n = 0; n < cfg->nr_endpoints; n++)
				fprintf(f, "%s%s", n ? "," : "", cfg->endpoints[n]);
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
	free(cfg->ca_file);
	free(cfg->cert_file);
	free(cfg->key_file);
	free(cfg->user);
	free(cfg->password_file);
	while (cfg->nr_endpoints)
		free(cfg->endpoints[--cfg->nr_endpoints]);
}

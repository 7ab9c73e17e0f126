/* SPDX-License-Identifier: GPL-2.0 */
/*
 * idgend's configuration: /etc/idgen/idgend.conf (INI, see inifile.h),
 * then command-line flags, which win.  Every key is also a flag:
 * "lease_ms" in the file is --lease-ms on the command line.  See
 * idgend(8) for each key and its default.
 */
#ifndef IDGEND_CONFIG_H
#define IDGEND_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "layout.h"

#define CONFIG_DEFAULT_PATH	"/etc/idgen/idgend.conf"
#define CONFIG_MAX_ENDPOINTS	16

enum config_mode { MODE_STANDALONE, MODE_ETCD };

struct config {
	const char *path;		/* the file read, or NULL */
	enum config_mode mode;
	char *device;
	char *owner;
	uint32_t region;
	char *layout_name;		/* "3/7/12", as given */
	struct lease_layout layout;	/* parsed from it */
	char *runtime_dir;		/* lock and owner token: runtime.h */
	uint32_t worker;		/* standalone */
	uint64_t lease_ms;
	uint64_t renew_ms;
	bool require_clock_sync;
	char *state_file;		/* standalone */
	char *endpoints[CONFIG_MAX_ENDPOINTS];
	unsigned int nr_endpoints;
	char *prefix;
	uint64_t timeout_ms;		/* one etcd request */
	uint64_t start_timeout_ms;	/* etcd unreachable at start: give up */
	uint64_t claim_retry_ms;	/* pool exhausted: try again */
	/* TLS and etcd's authentication ("": not given): etcd_creds.h */
	char *ca_file;
	char *cert_file;
	char *key_file;
	char *user;
	char *password_file;
	bool check_only;		/* --check-config */
	bool fresh_state;		/* --fresh-state (standalone) */
	bool cut_over;			/* --cut-over-layout R/W/S */
	bool force;			/* --force: with cut_over only */
	struct lease_layout cut_over_layout;
};

/*
 * Fill *cfg from the file and argv.  0, 1 for --help or --version (printed),
 * or -1 after printing "idgend: <where>: <what was wrong>" on stderr.
 */
int config_load(struct config *cfg, int argc, char *argv[]);

/*
 * The same from a configuration file's text alone (no flags), for the
 * tests and the fuzz target; name stands for the file in messages.
 */
int config_load_text(struct config *cfg, const char *name, const char *text,
		     size_t len);
/* The configuration in force, as a configuration file that gives it. */
void config_print(const struct config *cfg, FILE *f);
void config_free(struct config *cfg);

#endif /* IDGEND_CONFIG_H */

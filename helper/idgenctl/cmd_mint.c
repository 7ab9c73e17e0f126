// SPDX-License-Identifier: GPL-2.0
/*
 * idgenctl mint [--remote URL[,URL...] [--ca-file F] [--cert-file F --key-file F]]
 *                [-n N] [--raw | --json]
 *
 * One read() of N IDs through libidgen, printed one per line and decoded,
 * bare with --raw, or as JSON with the IDs as strings.  With --remote, the
 * IDs come from idgen-httpd hosts through libidgen-client instead of the
 * device, and are decoded here the same way; over https:// with
 * --ca-file (the servers' CA) and, for mTLS, --cert-file and --key-file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "idgen_client.h"
#include "idgenctl.h"

#define MINT_MAX	(1U << 20)
/* A command waits longer than an application would. */
#define REMOTE_DEADLINE_MS	1000

static const char mint_usage[] = "mint [--remote URL[,URL...] [--ca-file FILE] "
	"[--cert-file FILE --key-file FILE]] [-n N] [--raw | --json]";

/* --ca-file, --cert-file, --key-file: for https:// hosts. */
struct tls_files {
	const char *ca, *cert, *key;
};

/* n IDs from the hosts at remote, in batches; 0, or 1 after reporting. */
static int mint_remote(const char *remote, const struct tls_files *tls, uint64_t *ids,
		       uint64_t n)
{
	struct idgen_client_options o;
	struct idgen_client *c;
	uint64_t got = 0;
	ssize_t r;

	idgen_client_options_init(&o);
	o.buffer_size = 0;
	o.deadline_ms = REMOTE_DEADLINE_MS;
	o.layouts = layouts;
	o.ca_file = tls->ca;
	o.cert_file = tls->cert;
	o.key_file = tls->key;
	if (idgen_client_new(remote, &o, &c)) {
		fprintf(stderr, "%s: mint --remote: %s\n", PROG_NAME, idgen_client_last_error());
		return 1;
	}
	while (got < n) {
		/* The most one request takes. */
		r = idgen_client_next_n(c, ids + got, n - got < IDGEN_CLIENT_MAX_COUNT ?
					n - got : IDGEN_CLIENT_MAX_COUNT);
		if (r < 0) {
			fprintf(stderr, "%s: mint --remote: %s\n", PROG_NAME,
				idgen_client_last_error());
			idgen_client_free(c);
			return 1;
		}
		got += r;
	}
	idgen_client_free(c);
	return 0;
}

/*
 * The module mints with the layout it reports; the layouts table decodes
 * by time.  Say so once if the two disagree for these IDs.
 */
static void check_layout(const struct idgen_layout *dev, const struct idgen_decoded *d)
{
	const struct idgen_layout *l = idgen_layout_at(layouts, d->ms);

	if (l->region_bits != dev->region_bits || l->worker_bits != dev->worker_bits ||
	    l->seq_bits != dev->seq_bits)
		fprintf(stderr, "%s: warning: the module mints with layout %u/%u/%u, but layout "
			"version %u (%u/%u/%u) is in force at %llu: decoded fields are wrong; "
			"give the right layouts file with --layouts\n", PROG_NAME,
			dev->region_bits, dev->worker_bits, dev->seq_bits, l->version,
			l->region_bits, l->worker_bits, l->seq_bits,
			(unsigned long long)d->ms);
}

int mint_main(int argc, char *argv[])
{
	struct idgen_decoded *dec = NULL;
	struct idgen_layout dev_layout;
	int i, fd = -1, raw = 0, json = 0, seen_n = 0, ret = 1;
	const char *remote = NULL;
	struct tls_files tls = { NULL, NULL, NULL };
	uint64_t n = 1, *ids = NULL;
	ssize_t got;
	size_t k;

	for (i = 0; i < argc; i++) {
		if (is_help(argv[i])) {
			printf("Usage: %s %s\n", PROG_NAME, mint_usage);
			return 0;
		} else if (!strcmp(argv[i], "--raw")) {
			if (raw++)
				return bad_usage(mint_usage, "--raw given twice");
		} else if (!strcmp(argv[i], "--json")) {
			if (json++)
				return bad_usage(mint_usage, "--json given twice");
		} else if (!strcmp(argv[i], "--remote")) {
			if (remote)
				return bad_usage(mint_usage, "--remote given twice");
			if (i + 1 == argc)
				return bad_usage(mint_usage, "--remote needs URL[,URL...]");
			remote = argv[++i];
		} else if (!strcmp(argv[i], "--ca-file") || !strcmp(argv[i], "--cert-file") ||
			   !strcmp(argv[i], "--key-file")) {
			const char **f = argv[i][2] == 'c' && argv[i][3] == 'a' ? &tls.ca :
					 argv[i][2] == 'c' ? &tls.cert : &tls.key;

			if (*f)
				return bad_usage(mint_usage, "%s given twice", argv[i]);
			if (i + 1 == argc)
				return bad_usage(mint_usage, "%s needs a file", argv[i]);
			*f = argv[++i];
		} else if (!strcmp(argv[i], "-n")) {
			if (seen_n++)
				return bad_usage(mint_usage, "-n given twice");
			if (i + 1 == argc)
				return bad_usage(mint_usage, "-n needs a value");
			if (!parse_u64("-n", argv[++i], 1, MINT_MAX, &n))
				return 1;
		} else {
			return bad_usage(mint_usage, "unexpected argument '%s'", argv[i]);
		}
	}
	if (raw && json)
		return bad_usage(mint_usage, "--raw and --json exclude each other");
	if (!remote && (tls.ca || tls.cert || tls.key))
		return bad_usage(mint_usage, "--ca-file, --cert-file and --key-file go with --remote");
	if (!tls.cert != !tls.key)
		return bad_usage(mint_usage, "--cert-file and --key-file go together");

	if (!remote) {
		fd = device_open();
		if (fd < 0)
			return 1;
	}
	if (!raw && !remote) {
		ret = idgen_device_layout(fd, &dev_layout);
		if (ret) {
			report_errno("IDGEN_IOC_GET_STATE", -ret);
			ret = 1;
			goto out;
		}
		ret = 1;
	}
	ids = malloc(n * sizeof(*ids));
	dec = malloc(n * sizeof(*dec));
	if (!ids || !dec) {
		report_errno("mint", ENOMEM);
		goto out;
	}
	if (remote) {
		if (mint_remote(remote, &tls, ids, n))
			goto out;
		got = n;
	} else {
		got = idgen_mint(fd, ids, n);
	}
	if (got < 0) {
		report_errno("mint", -got);
		goto out;
	}
	for (k = 0; k < (size_t)got; k++) {
		if (raw) {
			printf("%llu\n", (unsigned long long)ids[k]);
			continue;
		}
		idgen_decode(ids[k], layouts, &dec[k]);
		if (!remote && (!k || k + 1 == (size_t)got))
			check_layout(&dev_layout, &dec[k]);
		if (!json)
			print_decoded(&dec[k]);
	}
	if (json)
		idgen_json_write_decoded(stdout, dec, got);
	if (fflush(stdout) || ferror(stdout)) {
		report_errno("stdout", errno);
		goto out;
	}
	if ((size_t)got < n) {
		/* The fence or the clock's lead bound cut the read short. */
		fprintf(stderr, "%s: mint: got %zd of %llu IDs\n", PROG_NAME, got,
			(unsigned long long)n);
		goto out;
	}
	ret = 0;
out:
	free(dec);
	free(ids);
	if (fd >= 0)
		idgen_close(fd);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * idgenctl mint [-n N] [--raw | --json]
 *
 * One read() of N IDs through libidgen, printed one per line and decoded,
 * bare with --raw, or as JSON with the IDs as strings.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "idgenctl.h"

#define MINT_MAX	(1U << 20)

static const char mint_usage[] = "mint [-n N] [--raw | --json]";

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
	int i, fd, raw = 0, json = 0, seen_n = 0, ret = 1;
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

	fd = device_open();
	if (fd < 0)
		return 1;
	if (!raw) {
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
	got = idgen_mint(fd, ids, n);
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
		if (!k || k + 1 == (size_t)got)
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
	idgen_close(fd);
	return ret;
}

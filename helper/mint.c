// SPDX-License-Identifier: GPL-2.0
/*
 * idgenctl mint [-n N] [--raw]
 *
 * One read() of N IDs, printed one per line, decoded with the layout that
 * GET_STATE reports, or bare with --raw.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "idfmt.h"
#include "idgenctl.h"

#define MINT_MAX	(1U << 20)

static const char mint_usage[] = "mint [-n N] [--raw]";

static void print_id(__u64 id, const struct idgen_layout *layout)
{
	char iso[IDGEN_ISO_LEN];
	struct idgen_fields f;

	if (!layout) {
		printf("%llu\n", id);
		return;
	}
	idgen_decode(id, layout, &f);
	printf("%llu  %s region %u worker %u seq %u\n", id,
	       idgen_format_ms(f.ms, iso), f.region, f.worker, f.seq);
}

int mint_main(int argc, char *argv[])
{
	struct idgen_layout layout;
	struct idgen_state st;
	uint64_t n = 1;
	int i, fd, raw = 0, seen_n = 0, ret = 1;
	__u64 *ids = NULL;
	ssize_t r;
	size_t got, k;

	for (i = 0; i < argc; i++) {
		if (is_help(argv[i])) {
			printf("Usage: %s %s\n", PROG_NAME, mint_usage);
			return 0;
		} else if (!strcmp(argv[i], "--raw")) {
			if (raw++)
				return bad_usage(mint_usage, "--raw given twice");
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

	fd = device_open();
	if (fd < 0)
		return 1;
	if (!raw) {
		if (device_get_state(fd, &st))
			goto out;
		layout.region_bits = st.region_bits;
		layout.worker_bits = st.worker_bits;
		layout.seq_bits = st.seq_bits;
		if (layout.region_bits + layout.worker_bits + layout.seq_bits !=
		    IDGEN_NODE_SEQ_BITS) {
			fprintf(stderr, "%s: the module reports layout %u/%u/%u, which does not add up to %u\n",
				PROG_NAME, layout.region_bits, layout.worker_bits,
				layout.seq_bits, IDGEN_NODE_SEQ_BITS);
			goto out;
		}
	}
	ids = malloc(n * sizeof(*ids));
	if (!ids) {
		report_errno("mint", errno);
		goto out;
	}
	r = read(fd, ids, n * sizeof(*ids));
	if (r < 0) {
		report_errno("mint", errno);
		goto out;
	}
	got = r / sizeof(*ids);
	for (k = 0; k < got; k++)
		print_id(ids[k], raw ? NULL : &layout);
	if (fflush(stdout) || ferror(stdout)) {
		report_errno("stdout", errno);
		goto out;
	}
	if (got < n) {
		/* The fence or the clock's lead bound cut the read short. */
		fprintf(stderr, "%s: mint: got %zu of %llu IDs\n", PROG_NAME, got,
			(unsigned long long)n);
		goto out;
	}
	ret = 0;
out:
	free(ids);
	close(fd);
	return ret;
}

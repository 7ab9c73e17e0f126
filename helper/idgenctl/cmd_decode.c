// SPDX-License-Identifier: GPL-2.0
/*
 * idgenctl decode [--json] ID...
 * idgenctl min-id-at TIME
 *
 * Pure: no device.  IDs are decoded with the layout in force at their own
 * millisecond (version 1, or a --layouts file).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idgenctl.h"

static const char decode_usage[] = "decode [--json] ID...";
static const char min_id_at_usage[] = "min-id-at TIME|UNIX_MS|now";

void print_decoded(const struct idgen_decoded *d)
{
	char iso[LIBIDGEN_TIME_STRLEN];

	idgen_format_time(d->unix_ms, iso);
	printf("%llu  %s region %u worker %u seq %u layout %u\n",
	       (unsigned long long)d->id, iso, d->region, d->worker, d->seq,
	       d->version);
}

/* Parse an ID argument, or say what is wrong with it. */
static int parse_id_arg(const char *what, const char *arg, uint64_t *id)
{
	int ret = idgen_parse_id(arg, id);

	if (ret == -ERANGE)
		fprintf(stderr, "%s: %s: '%s' is out of range (IDs are at most %llu)\n",
			PROG_NAME, what, arg, LIBIDGEN_ID_MAX);
	else if (ret)
		fprintf(stderr, "%s: %s: '%s' is not a decimal ID (digits only, no sign, "
			"blanks or leading zeros)\n", PROG_NAME, what, arg);
	return ret;
}

int decode_main(int argc, char *argv[])
{
	struct idgen_decoded *d;
	int i, n = 0, json = 0, ret = 0;
	uint64_t id;

	if (argc == 1 && is_help(argv[0])) {
		printf("Usage: %s %s\n", PROG_NAME, decode_usage);
		return 0;
	}
	if (argc > 0 && !strcmp(argv[0], "--json")) {
		json = 1;
		argc--, argv++;
	}
	if (argc == 0)
		return bad_usage(decode_usage, "decode needs at least one ID");
	d = calloc(argc, sizeof(*d));
	if (!d) {
		report_errno("decode", ENOMEM);
		return 1;
	}
	for (i = 0; i < argc; i++) {
		if (argv[i][0] == '-' && argv[i][1] == '-') {
			free(d);
			return bad_usage(decode_usage, "unexpected option '%s'", argv[i]);
		}
		if (parse_id_arg("decode", argv[i], &id)) {
			ret = 1;
			continue;
		}
		idgen_decode(id, layouts, &d[n++]);
	}
	if (!ret) {
		if (json) {
			idgen_json_write_decoded(stdout, d, n);
		} else {
			for (i = 0; i < n; i++)
				print_decoded(&d[i]);
		}
		if (fflush(stdout) || ferror(stdout)) {
			report_errno("stdout", errno);
			ret = 1;
		}
	}
	free(d);
	return ret;
}

/* TIME as RFC 3339, Unix milliseconds or "now". */
static int parse_moment(const char *arg, int64_t *unix_ms)
{
	struct timespec ts;
	uint64_t v;

	if (!strcmp(arg, "now")) {
		clock_gettime(CLOCK_REALTIME, &ts);
		*unix_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		return 0;
	}
	if (arg[0] >= '0' && arg[0] <= '9' && !strchr(arg, '-')) {
		/* Unix ms: the same strict decimal as IDs. */
		switch (idgen_parse_id(arg, &v)) {
		case 0:
			*unix_ms = v;
			return 0;
		case -ERANGE:
			fprintf(stderr, "%s: min-id-at: '%s' is out of range\n", PROG_NAME, arg);
			return -1;
		default:
			break;
		}
	} else if (!idgen_parse_time(arg, unix_ms)) {
		return 0;
	}
	fprintf(stderr, "%s: min-id-at: '%s' is not a time: want RFC 3339 "
		"(2026-03-15T00:00:00Z, 2026-03-15T00:00:00.250+02:00), Unix milliseconds "
		"or 'now'\n", PROG_NAME, arg);
	return -1;
}

int min_id_at_main(int argc, char *argv[])
{
	int64_t unix_ms;
	uint64_t id;

	if (argc == 1 && is_help(argv[0])) {
		printf("Usage: %s %s\n", PROG_NAME, min_id_at_usage);
		return 0;
	}
	if (argc != 1)
		return bad_usage(min_id_at_usage, argc ? "too many arguments" :
				 "min-id-at needs a time");
	if (parse_moment(argv[0], &unix_ms))
		return 1;
	if (idgen_min_id_at(unix_ms, &id)) {
		fprintf(stderr, "%s: min-id-at: '%s' lies after the last millisecond an ID "
			"can carry (2095-09-07T15:47:35.551Z)\n", PROG_NAME, argv[0]);
		return 1;
	}
	printf("%llu\n", (unsigned long long)id);
	return fflush(stdout) ? 1 : 0;
}

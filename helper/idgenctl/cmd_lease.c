// SPDX-License-Identifier: GPL-2.0
/*
 * idgenctl lease set|show|revoke
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "idgenctl.h"

static const char set_usage[] =
	"lease set --region R --worker W (--valid-for MS | --valid-until MS)\n"
	"                          [--floor MS] [--synced] [--layout R/W/S]";

enum set_opt {
	OPT_REGION, OPT_WORKER, OPT_VALID_FOR, OPT_VALID_UNTIL, OPT_FLOOR,
	OPT_SYNCED, OPT_LAYOUT, NR_SET_OPTS
};

static const struct {
	const char *name;
	int has_value;
} set_opts[NR_SET_OPTS] = {
	[OPT_REGION]	  = { "--region", 1 },
	[OPT_WORKER]	  = { "--worker", 1 },
	[OPT_VALID_FOR]	  = { "--valid-for", 1 },
	[OPT_VALID_UNTIL] = { "--valid-until", 1 },
	[OPT_FLOOR]	  = { "--floor", 1 },
	[OPT_SYNCED]	  = { "--synced", 0 },
	[OPT_LAYOUT]	  = { "--layout", 1 },
};

/* --name VALUE or --name=VALUE; returns the option or -1 after reporting. */
static int next_opt(int argc, char *argv[], int *i, const char **value)
{
	const char *arg = argv[*i], *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	int o;

	for (o = 0; o < NR_SET_OPTS; o++)
		if (strlen(set_opts[o].name) == len && !strncmp(arg, set_opts[o].name, len))
			break;
	if (o == NR_SET_OPTS) {
		bad_usage(set_usage, "unknown argument '%s'", arg);
		return -1;
	}
	*value = NULL;
	if (!set_opts[o].has_value) {
		if (eq) {
			bad_usage(set_usage, "%s takes no value", set_opts[o].name);
			return -1;
		}
	} else if (eq) {
		*value = eq + 1;
	} else if (*i + 1 < argc) {
		*value = argv[++*i];
	} else {
		bad_usage(set_usage, "%s needs a value", set_opts[o].name);
		return -1;
	}
	return o;
}

int lease_set_main(int argc, char *argv[])
{
	struct idgen_layout layout = { 0 };
	uint64_t valid_for = 0, until = 0, floor = 0;
	uint32_t region = 0, worker = 0;
	unsigned int flags = 0;
	int seen[NR_SET_OPTS] = { 0 };
	struct idgen_device_state st;
	const char *value;
	int i, o, fd, err, ret = 1;

	for (i = 0; i < argc; i++) {
		if (is_help(argv[i])) {
			printf("Usage: %s %s\n", PROG_NAME, set_usage);
			return 0;
		}
		o = next_opt(argc, argv, &i, &value);
		if (o < 0)
			return 1;
		if (seen[o]++)
			return bad_usage(set_usage, "%s given twice", set_opts[o].name);
		switch (o) {
		case OPT_REGION:
			if (!parse_u32("--region", value, &region))
				return 1;
			break;
		case OPT_WORKER:
			if (!parse_u32("--worker", value, &worker))
				return 1;
			break;
		case OPT_VALID_FOR:
			if (!parse_u64("--valid-for", value, 1, IDGEN_MS_MAX + 1, &valid_for))
				return 1;
			break;
		case OPT_VALID_UNTIL:
			if (!parse_u64("--valid-until", value, 1, IDGEN_MS_MAX + 1, &until))
				return 1;
			break;
		case OPT_FLOOR:
			if (!parse_u64("--floor", value, 0, IDGEN_MS_MAX, &floor))
				return 1;
			break;
		case OPT_SYNCED:
			flags |= LIBIDGEN_LEASE_CLOCK_SYNCED;
			break;
		case OPT_LAYOUT:
			if (!parse_layout("--layout", value, &layout))
				return 1;
			break;
		}
	}
	if (!seen[OPT_REGION] || !seen[OPT_WORKER])
		return bad_usage(set_usage, "--region and --worker are required");
	if (seen[OPT_VALID_FOR] == seen[OPT_VALID_UNTIL])
		return bad_usage(set_usage, "give one of --valid-for and --valid-until");

	if (seen[OPT_VALID_UNTIL] && floor >= until) {
		fprintf(stderr, "%s: invalid --floor '%" PRIu64 "': not below --valid-until\n",
			PROG_NAME, floor);
		return 1;
	}

	fd = device_open();
	if (fd < 0)
		return 1;
	if (seen[OPT_VALID_FOR]) {
		/* From the generator's trusted clock, the one the fence is on. */
		if (device_get_state(fd, &st))
			goto out;
		until = st.now_ms + valid_for;
		if (until > IDGEN_MS_MAX + 1) {
			fprintf(stderr, "%s: invalid --valid-for '%" PRIu64 "': the fence would lie "
				"past the last millisecond an ID can carry\n", PROG_NAME, valid_for);
			goto out;
		}
	}
	if (floor >= until) {
		fprintf(stderr, "%s: invalid --floor '%" PRIu64 "': not below now + --valid-for (%"
			PRIu64 ")\n", PROG_NAME, floor, until);
		goto out;
	}
	err = idgen_device_set_lease(fd, region, worker, floor, until, &layout, flags);
	if (err) {
		err = -err;
		report_errno("set lease", err);
		if (err == EINVAL)
			fprintf(stderr, "%s: the module refused the lease: a node out of the "
				"layout's range, a renewal moving the fence back, or a bad layout\n",
				PROG_NAME);
		else if (err == EKEYEXPIRED)
			fprintf(stderr, "%s: the module refused the lease: it could never mint, "
				"because its first ID would lie at or past --valid-until (the floor, "
				"or a millisecond this host already used, is too close to the fence; "
				"'idgenctl lease show' gives last_ms)\n", PROG_NAME);
		goto out;
	}
	ret = 0;
out:
	close(fd);
	return ret;
}

/* A millisecond as a number and in ISO-8601; "0 (none)" when unset. */
static void show_ms(const char *key, __u64 ms, int set)
{
	char iso[LIBIDGEN_TIME_STRLEN];

	if (!set)
		printf("  %s: %llu (none)\n", key, ms);
	else if (idgen_format_time(ms + LIBIDGEN_EPOCH_UNIX_MS, iso) < 0)
		printf("  %s: %llu (out of range)\n", key, ms);
	else
		printf("  %s: %llu (%s)\n", key, ms, iso);
}

static void show_counter(const char *key, __u64 v)
{
	printf("  %s: %llu\n", key, v);
}

/* The state and counters, as read from @source (the device or netlink). */
void print_generator_state(const char *source, const struct idgen_device_state *st)
{
	int leased = !!(st->flags & LIBIDGEN_STATE_LEASED);

	printf("generator: %s\n", source);
	printf("  lease: %s\n", leased ? "in force" : "none");
	printf("  layout: %u/%u/%u (region/worker/sequence bits)\n",
	       st->region_bits, st->worker_bits, st->seq_bits);
	if (leased)
		printf("  node: region %u worker %u\n", st->region, st->worker);
	else
		printf("  node: none\n");
	show_ms("floor", st->floor_ms, leased);
	show_ms("valid until", st->valid_until_ms, leased);
	show_ms("last", st->last_ms, st->last_ms != 0);
	show_ms("next", st->next_ms, 1);
	show_ms("now", st->now_ms, 1);
	show_ms("wall", st->wall_ms, 1);
	if (st->flags & LIBIDGEN_STATE_CLOCK_HELD)
		printf("  clock: holding back a forward step (adopt with '%s clock adopt')\n",
		       PROG_NAME);
	else
		printf("  clock: following the wall clock\n");
	printf("  held step: %lld ms\n", (long long)st->held_step_ms);
	printf("  max lead: %u ms\n", st->max_lead_ms);
	printf("  max step: %u ms\n", st->max_step_ms);
	printf("  flags: %#x\n", st->flags);
	printf("\ncounters:\n");
	show_counter("ids", st->ids);
	show_counter("reads", st->reads);
	show_counter("borrowed ms", st->borrowed_ms);
	show_counter("steps back", st->steps_back);
	show_counter("steps forward", st->steps_forward);
	show_counter("steps adopted", st->steps_adopted);
	show_counter("fence refusals", st->fence_refusals);
	show_counter("lead refusals", st->lead_refusals);
	show_counter("no-lease refusals", st->nolease_refusals);
	show_counter("range refusals", st->range_refusals);
}

int lease_show_main(int argc, char *argv[])
{
	struct idgen_device_state st;
	int fd, ret;

	ret = no_args("lease show", argc, argv);
	if (ret)
		return ret < 0 ? 0 : ret;
	fd = device_open();
	if (fd < 0)
		return 1;
	ret = device_get_state(fd, &st) ? 1 : 0;
	close(fd);
	if (!ret)
		print_generator_state(device_path, &st);
	return ret;
}

int lease_revoke_main(int argc, char *argv[])
{
	uint64_t last_ms;
	int fd, ret;

	ret = no_args("lease revoke", argc, argv);
	if (ret)
		return ret < 0 ? 0 : ret;
	fd = device_open();
	if (fd < 0)
		return 1;
	ret = idgen_device_revoke(fd, &last_ms);
	close(fd);
	if (ret) {
		report_errno("revoke lease", -ret);
		return 1;
	}
	printf("%" PRIu64 "\n", last_ms);
	return 0;
}

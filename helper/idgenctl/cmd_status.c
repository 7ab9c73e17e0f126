// SPDX-License-Identifier: GPL-2.0
/*
 * idgenctl status | events | config: the generator over generic netlink
 * (helper/common/idgen_nl.c), for users who have no access to /dev/idgen or want its events.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "idgenctl.h"
#include "idgen_nl.h"

/* The counters, in the order of struct idgen_device_state, then the netlink one. */
static const struct {
	const char *key;	/* JSON */
	const char *label;	/* human */
	size_t off;
} counters[] = {
#define C(field, label) { #field, label, offsetof(struct idgen_nl_state, state.field) }
	C(ids, "ids"),
	C(reads, "reads"),
	C(borrowed_ms, "borrowed ms"),
	C(steps_back, "steps back"),
	C(steps_forward, "steps forward"),
	C(steps_adopted, "steps adopted"),
	C(fence_refusals, "fence refusals"),
	C(lead_refusals, "lead refusals"),
	C(nolease_refusals, "no-lease refusals"),
	C(range_refusals, "range refusals"),
#undef C
	{ "events_dropped", "events dropped", offsetof(struct idgen_nl_state, events_dropped) },
};

#define NR_COUNTERS	(sizeof(counters) / sizeof(counters[0]))

static uint64_t counter(const struct idgen_nl_state *st, size_t i)
{
	return *(const uint64_t *)((const char *)st + counters[i].off);
}

/* ISO-8601 of ms since the idgen epoch, or "(out of range)". */
static const char *iso(uint64_t ms, char buf[LIBIDGEN_TIME_STRLEN])
{
	if (ms > INT64_MAX - LIBIDGEN_EPOCH_UNIX_MS ||
	    idgen_format_time((int64_t)(ms + LIBIDGEN_EPOCH_UNIX_MS), buf) < 0)
		snprintf(buf, LIBIDGEN_TIME_STRLEN, "(out of range)");
	return buf;
}

/* "--json" or nothing; 0 to go on, -1 after --help (exit 0), 1 bad use. */
static int json_flag(const char *usage, int argc, char *argv[], int *json)
{
	int i;

	*json = 0;
	for (i = 0; i < argc; i++) {
		if (is_help(argv[i])) {
			printf("Usage: %s %s\n", PROG_NAME, usage);
			return -1;
		}
		if (strcmp(argv[i], "--json") || *json) {
			bad_usage(usage, "unexpected argument '%s'", argv[i]);
			return 1;
		}
		*json = 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* status                                                              */

/* The same printer as 'lease show', plus what only netlink tells. */
static void print_state(const struct idgen_nl_state *nl)
{
	print_generator_state("netlink family " IDGEN_GENL_NAME, &nl->state);
	printf("  events dropped: %" PRIu64 "\n", nl->events_dropped);
	printf("\nsettings:\n  fence near: %" PRIu32 " ms\n", nl->fence_near_ms);
}

/* One line of JSON; every time a number of ms since the idgen epoch. */
static void print_state_json(const struct idgen_nl_state *nl)
{
	const struct idgen_device_state *st = &nl->state;
	size_t i;

	printf("{\"lease\":");
	if (nl->lease)
		printf("{\"region\":%" PRIu32 ",\"worker\":%" PRIu32 ",\"floor_ms\":%" PRIu64
		       ",\"valid_until_ms\":%" PRIu64 "}",
		       st->region, st->worker, st->floor_ms, st->valid_until_ms);
	else
		printf("null");
	printf(",\"layout\":{\"region_bits\":%u,\"worker_bits\":%u,\"seq_bits\":%u}",
	       st->region_bits, st->worker_bits, st->seq_bits);
	printf(",\"epoch_unix_ms\":%llu", (unsigned long long)LIBIDGEN_EPOCH_UNIX_MS);
	printf(",\"now_ms\":%" PRIu64 ",\"wall_ms\":%" PRIu64 ",\"last_ms\":%" PRIu64
	       ",\"next_ms\":%" PRIu64, st->now_ms, st->wall_ms, st->last_ms, st->next_ms);
	printf(",\"clock_held\":%s,\"held_step_ms\":%" PRId64,
	       st->flags & LIBIDGEN_STATE_CLOCK_HELD ? "true" : "false", st->held_step_ms);
	printf(",\"flags\":%" PRIu32 ",\"max_lead_ms\":%" PRIu32 ",\"max_step_ms\":%" PRIu32
	       ",\"fence_near_ms\":%" PRIu32, st->flags, st->max_lead_ms, st->max_step_ms,
	       nl->fence_near_ms);
	printf(",\"counters\":{");
	for (i = 0; i < NR_COUNTERS; i++)
		printf("%s\"%s\":%" PRIu64, i ? "," : "", counters[i].key, counter(nl, i));
	printf("}}\n");
}

int status_main(int argc, char *argv[])
{
	struct idgen_nl_state st;
	int json, ret;

	ret = json_flag("status [--json]", argc, argv, &json);
	if (ret)
		return ret < 0 ? 0 : ret;
	if (idgen_nl_get_state(&st))
		return 1;
	if (json)
		print_state_json(&st);
	else
		print_state(&st);
	return fflush(stdout) ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* events                                                              */

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static const char *event_name(uint32_t event, char buf[24])
{
	const char *name = idgen_nl_event_name(event);

	if (name)
		return name;
	snprintf(buf, 24, "event-%" PRIu32, event);
	return buf;
}

/*
 * "2026-11-29T22:50:01.123Z lease-set region 1 worker 42 floor F
 * valid-until V": the wall clock when it was sent, the event, then what
 * it carries, times in ms since the idgen epoch.
 */
static void print_event(const struct idgen_nl_event *ev)
{
	char time[LIBIDGEN_TIME_STRLEN], name[24];

	printf("%s %s", ev->present & IDGEN_NL_EV_NOW ? iso(ev->now_ms, time) : "-",
	       event_name(ev->event, name));
	if (ev->present & IDGEN_NL_EV_REGION)
		printf(" region %" PRIu32, ev->region);
	if (ev->present & IDGEN_NL_EV_WORKER)
		printf(" worker %" PRIu32, ev->worker);
	if (ev->present & IDGEN_NL_EV_FLOOR)
		printf(" floor %" PRIu64, ev->floor_ms);
	if (ev->present & IDGEN_NL_EV_VALID_UNTIL)
		printf(" valid-until %" PRIu64, ev->valid_until_ms);
	if (ev->present & IDGEN_NL_EV_LAST)
		printf(" last %" PRIu64, ev->last_ms);
	if (ev->present & IDGEN_NL_EV_STEP)
		printf(" step %+" PRId64 " ms", ev->step_ms);
	if (ev->present & IDGEN_NL_EV_FLAGS && ev->flags & IDGEN_STATE_CLOCK_HELD)
		printf(" held");
	putchar('\n');
}

static void print_event_json(const struct idgen_nl_event *ev)
{
	char time[LIBIDGEN_TIME_STRLEN], name[24];

	printf("{\"event\":\"%s\"", event_name(ev->event, name));
	if (ev->present & IDGEN_NL_EV_NOW)
		printf(",\"now_ms\":%" PRIu64 ",\"time\":\"%s\"", ev->now_ms,
		       iso(ev->now_ms, time));
	if (ev->present & IDGEN_NL_EV_REGION)
		printf(",\"region\":%" PRIu32, ev->region);
	if (ev->present & IDGEN_NL_EV_WORKER)
		printf(",\"worker\":%" PRIu32, ev->worker);
	if (ev->present & IDGEN_NL_EV_FLOOR)
		printf(",\"floor_ms\":%" PRIu64, ev->floor_ms);
	if (ev->present & IDGEN_NL_EV_VALID_UNTIL)
		printf(",\"valid_until_ms\":%" PRIu64, ev->valid_until_ms);
	if (ev->present & IDGEN_NL_EV_LAST)
		printf(",\"last_ms\":%" PRIu64, ev->last_ms);
	if (ev->present & IDGEN_NL_EV_STEP)
		printf(",\"step_ms\":%" PRId64, ev->step_ms);
	if (ev->present & IDGEN_NL_EV_FLAGS)
		printf(",\"clock_held\":%s", ev->flags & IDGEN_STATE_CLOCK_HELD ? "true" : "false");
	printf("}\n");
}

static int on_event(const struct idgen_nl_event *ev, void *ctx)
{
	const int *json = ctx;

	if (*json)
		print_event_json(ev);
	else
		print_event(ev);
	/* One line at a time, for whoever reads a pipe. */
	if (fflush(stdout)) {
		fprintf(stderr, "%s: writing events: %s\n", PROG_NAME, strerror(errno));
		return -EIO;
	}
	return 0;
}

int events_main(int argc, char *argv[])
{
	struct sigaction sa = { .sa_handler = on_stop_signal };
	sigset_t stops, waiting;
	struct idgen_nl *nl;
	struct pollfd p;
	int json, ret;

	ret = json_flag("events [--json]", argc, argv, &json);
	if (ret)
		return ret < 0 ? 0 : ret;

	/*
	 * SIGINT and SIGTERM are blocked but while waiting in ppoll(), so
	 * one cannot slip in between the check and the wait.
	 */
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigprocmask(SIG_BLOCK, &stops, &waiting);
	sigdelset(&waiting, SIGINT);
	sigdelset(&waiting, SIGTERM);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	nl = idgen_nl_subscribe();
	if (!nl)
		return 1;
	p.fd = idgen_nl_fd(nl);
	p.events = POLLIN;
	for (;;) {
		if (ppoll(&p, 1, NULL, &waiting) < 0 && errno != EINTR) {
			fprintf(stderr, "%s: poll: %s\n", PROG_NAME, strerror(errno));
			ret = -EIO;
			break;
		}
		if (stop_signal) {
			ret = 0;
			break;
		}
		ret = idgen_nl_dispatch(nl, on_event, &json);
		if (ret)
			break;
	}
	idgen_nl_close(nl);
	return ret ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* config                                                              */

static const char config_usage[] = "config [fence-near MS]";

int config_main(int argc, char *argv[])
{
	struct idgen_nl_state st;
	uint32_t ms;

	if (argc == 1 && is_help(argv[0])) {
		printf("Usage: %s %s\n", PROG_NAME, config_usage);
		return 0;
	}
	if (argc == 0) {
		/* The settings as they are. */
		if (idgen_nl_get_state(&st))
			return 1;
		printf("fence-near %" PRIu32 "\n", st.fence_near_ms);
		return fflush(stdout) ? 1 : 0;
	}
	if (strcmp(argv[0], "fence-near"))
		return bad_usage(config_usage, "unknown setting '%s'", argv[0]);
	if (argc < 2)
		return bad_usage(config_usage, "fence-near needs a value in ms");
	if (argc > 2)
		return bad_usage(config_usage, "unexpected argument '%s'", argv[2]);
	/* The range is the module's to enforce, and its message to give. */
	if (!parse_u32("fence-near", argv[1], &ms))
		return 1;
	return idgen_nl_set_fence_near(ms) ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * idgenctl - administer and use the host's idgen ID generator.
 *
 * A subcommand table in the manner of wg(8): usage on stderr and exit 1
 * for bad use, "idgenctl: <what>: <error>" and exit 1 for failures.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "idgenctl.h"

const char *PROG_NAME = "idgenctl";
const char *device_path = LIBIDGEN_DEVICE;
struct idgen_layouts *layouts;

static const struct {
	const char *command;
	const char *verb;	/* NULL: the command takes no verb */
	int (*function)(int argc, char *argv[]);
	const char *description;
} subcommands[] = {
	{ "lease", "set", lease_set_main, "Sets or renews the host's lease" },
	{ "lease", "show", lease_show_main, "Shows the generator's state and counters" },
	{ "lease", "revoke", lease_revoke_main, "Ends the lease, prints the last millisecond it used" },
	{ "clock", "adopt", clock_adopt_main, "Adopts a held forward step of the wall clock" },
	{ "mint", NULL, mint_main, "Mints IDs and prints them" },
	{ "decode", NULL, decode_main, "Decodes IDs: time, region, worker, sequence" },
	{ "min-id-at", NULL, min_id_at_main, "Prints the smallest ID of a moment" },
	{ "public", "encode", public_encode_main, "Prints the public IDs of IDs (--key FILE)" },
	{ "public", "decode", public_decode_main, "Prints the IDs of public IDs (--key FILE)" },
	{ "code", "new", code_new_main, "Prints new booking codes" },
	{ "code", "check", code_check_main, "Checks booking codes, prints them canonical" },
	{ "status", NULL, status_main, "Shows the generator's state over netlink (any user)" },
	{ "events", NULL, events_main, "Prints the generator's events, a line each, until interrupted" },
	{ "config", NULL, config_main, "Shows or changes the module's settings (fence-near MS)" },
};

#define NR_SUBCOMMANDS	(sizeof(subcommands) / sizeof(subcommands[0]))

static void show_usage(FILE *file)
{
	char name[32];
	size_t i;

	fprintf(file, "Usage: %s [--device PATH] [--layouts FILE] <cmd> [<args>]\n"
		"       %s --version\n\n", PROG_NAME,
		PROG_NAME);
	fprintf(file, "Available subcommands:\n");
	for (i = 0; i < NR_SUBCOMMANDS; i++) {
		snprintf(name, sizeof(name), "%s%s%s", subcommands[i].command,
			 subcommands[i].verb ? " " : "",
			 subcommands[i].verb ? subcommands[i].verb : "");
		fprintf(file, "  %-13s %s\n", name, subcommands[i].description);
	}
	fprintf(file, "You may pass `--help' to any of these subcommands to view usage.\n");
	fprintf(file, "The device is %s unless --device says otherwise.\n", device_path);
}

/* "lease" without a verb, with --help, or with a verb it does not have. */
static int verb_usage(const char *command, const char *verb)
{
	FILE *file = verb && is_help(verb) ? stdout : stderr;
	size_t i;

	if (verb && file == stderr)
		fprintf(stderr, "%s: invalid subcommand '%s %s'\n", PROG_NAME, command, verb);
	fprintf(file, "Usage: %s %s <", PROG_NAME, command);
	for (i = 0; i < NR_SUBCOMMANDS; i++) {
		if (!strcmp(subcommands[i].command, command) && subcommands[i].verb)
			fprintf(file, "%s%s", subcommands[i].verb,
				i + 1 < NR_SUBCOMMANDS &&
				!strcmp(subcommands[i + 1].command, command) ? "|" : "");
	}
	fprintf(file, "> [<args>]\n");
	return file == stdout ? 0 : 1;
}

void report_errno(const char *what, int err)
{
	const char *why = idgen_strerror(err);

	fprintf(stderr, "%s: %s: %s\n", PROG_NAME, what, strerror(err));
	if (why)
		fprintf(stderr, "%s: %s\n", PROG_NAME, why);
}

int bad_usage(const char *usage, const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		fprintf(stderr, "%s: ", PROG_NAME);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	fprintf(stderr, "Usage: %s %s\n", PROG_NAME, usage);
	return 1;
}

int is_help(const char *arg)
{
	return !strcmp(arg, "--help") || !strcmp(arg, "-h") || !strcmp(arg, "help");
}

int no_args(const char *usage, int argc, char *argv[])
{
	if (argc == 0)
		return 0;
	if (argc == 1 && is_help(argv[0])) {
		printf("Usage: %s %s\n", PROG_NAME, usage);
		return -1;
	}
	bad_usage(usage, "unexpected argument '%s'", argv[0]);
	return 1;
}

/* Only idgen's device, told by what it is: requests go to nothing else. */
int device_open(void)
{
	int fd = idgen_open(device_path, LIBIDGEN_VERIFY);

	if (fd < 0) {
		report_errno(device_path, -fd);
		return -1;
	}
	return fd;
}

int device_ioctl(const char *what, unsigned long cmd, void *arg)
{
	int fd = device_open(), ret = 0;

	if (fd < 0)
		return -1;
	if (ioctl(fd, cmd, arg)) {
		report_errno(what, errno);
		ret = -1;
	}
	close(fd);
	return ret;
}

int device_get_state(int fd, struct idgen_device_state *st)
{
	int ret = idgen_device_get_state(fd, st);

	if (ret) {
		report_errno("IDGEN_IOC_GET_STATE", -ret);
		return -1;
	}
	return 0;
}

int main(int argc, char *argv[])
{
	size_t i;

	argc--, argv++;
	while (argc > 0 && argv[0][0] == '-') {
		if (is_help(argv[0])) {
			show_usage(stdout);
			return 0;
		}
		if (!strcmp(argv[0], "--version")) {
			printf("%s %s\n", PROG_NAME, IDGEN_VERSION);
			return 0;
		}
		if (!strcmp(argv[0], "--device")) {
			if (argc < 2 || !argv[1][0]) {
				fprintf(stderr, "%s: --device needs a path\n", PROG_NAME);
				show_usage(stderr);
				return 1;
			}
			device_path = argv[1];
			argc -= 2, argv += 2;
		} else if (!strncmp(argv[0], "--device=", 9) && argv[0][9]) {
			device_path = argv[0] + 9;
			argc--, argv++;
		} else if (!strcmp(argv[0], "--layouts") ||
			   (!strncmp(argv[0], "--layouts=", 10) && argv[0][10])) {
			const char *path = argv[0][9] ? argv[0] + 10 : argv[1];
			char err[256];

			if (!path || !path[0]) {
				fprintf(stderr, "%s: --layouts needs a file\n", PROG_NAME);
				show_usage(stderr);
				return 1;
			}
			if (layouts) {
				fprintf(stderr, "%s: --layouts given twice\n", PROG_NAME);
				return 1;
			}
			if (idgen_layouts_load(path, &layouts, err, sizeof(err))) {
				fprintf(stderr, "%s: layouts file %s\n", PROG_NAME, err);
				return 1;
			}
			if (argv[0][9]) {
				argc--, argv++;
			} else {
				argc -= 2, argv += 2;
			}
		} else {
			fprintf(stderr, "%s: unknown option '%s'\n", PROG_NAME, argv[0]);
			show_usage(stderr);
			return 1;
		}
	}
	if (argc == 0) {
		show_usage(stderr);
		return 1;
	}
	if (is_help(argv[0])) {
		show_usage(stdout);
		return 0;
	}
	for (i = 0; i < NR_SUBCOMMANDS; i++) {
		if (strcmp(argv[0], subcommands[i].command))
			continue;
		if (!subcommands[i].verb)
			return subcommands[i].function(argc - 1, argv + 1);
		if (argc < 2)
			return verb_usage(argv[0], NULL);
		if (!strcmp(argv[1], subcommands[i].verb))
			return subcommands[i].function(argc - 2, argv + 2);
		if (i + 1 == NR_SUBCOMMANDS || strcmp(argv[0], subcommands[i + 1].command))
			return verb_usage(argv[0], argv[1]);
	}
	fprintf(stderr, "%s: invalid subcommand '%s'\n", PROG_NAME, argv[0]);
	show_usage(stderr);
	return 1;
}

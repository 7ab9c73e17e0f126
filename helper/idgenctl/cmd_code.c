// SPDX-License-Identifier: GPL-2.0
/*
 * idgenctl code new [-n N]
 * idgenctl code check CODE...
 *
 * Booking codes (Documentation/design.md section 10).  new prints N fresh codes
 * from the kernel's CSPRNG; their uniqueness is the database's to enforce.
 * check prints each code in its canonical form, or says why it is not one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "idgenctl.h"

static const char new_usage[] = "code new [-n N]";
static const char check_usage[] = "code check CODE...";

/* More at once would be a job for a program, not a shell loop. */
#define CODE_NEW_MAX	10000000

int code_new_main(int argc, char *argv[])
{
	char text[LIBIDGEN_CODE_STRLEN];
	uint64_t n = 1, i, chunk, codes[1024];
	int ret;

	if (argc == 1 && is_help(argv[0])) {
		printf("Usage: %s %s\n", PROG_NAME, new_usage);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[0], "-n")) {
		if (!parse_u64("-n", argv[1], 1, CODE_NEW_MAX, &n))
			return 1;
	} else if (argc) {
		return bad_usage(new_usage, "unexpected argument '%s'", argv[0]);
	}
	while (n) {
		chunk = n < 1024 ? n : 1024;
		ret = idgen_code_new(codes, chunk);
		if (ret) {
			report_errno("getrandom", -ret);
			return 1;
		}
		for (i = 0; i < chunk; i++) {
			idgen_code_format(codes[i], text);
			puts(text);
		}
		n -= chunk;
	}
	if (fflush(stdout) || ferror(stdout)) {
		report_errno("stdout", errno);
		return 1;
	}
	return 0;
}

int code_check_main(int argc, char *argv[])
{
	char text[LIBIDGEN_CODE_STRLEN];
	uint64_t code;
	int i, ret = 0, err;

	if (argc == 1 && is_help(argv[0])) {
		printf("Usage: %s %s\n", PROG_NAME, check_usage);
		return 0;
	}
	if (argc == 0)
		return bad_usage(check_usage, "code check needs at least one code");
	for (i = 0; i < argc; i++) {
		err = idgen_code_parse(argv[i], &code);
		if (!err) {
			idgen_code_format(code, text);
			puts(text);
		} else if (err == -EBADMSG) {
			fprintf(stderr, "%s: code check: '%s': the check symbol does not match: "
				"a mistyped code\n", PROG_NAME, argv[i]);
			ret = 1;
		} else {
			fprintf(stderr, "%s: code check: '%s' is not a booking code: want 8 "
				"symbols of 0-9 A-Z without I L O U and a check symbol, as "
				"XXXX-XXXX-C\n", PROG_NAME, argv[i]);
			ret = 1;
		}
	}
	if (fflush(stdout) || ferror(stdout)) {
		report_errno("stdout", errno);
		return 1;
	}
	return ret;
}

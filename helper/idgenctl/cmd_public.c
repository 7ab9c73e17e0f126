// SPDX-License-Identifier: GPL-2.0
/*
 * idgenctl public encode --key FILE [--key FILE...] [--current VERSION] ID...
 * idgenctl public decode --key FILE [--key FILE...] [--current VERSION]
 *                        [--all-versions] PUBLIC_ID...
 *
 * Public IDs (Documentation/design.md section 10) with the keys of the key
 * files given; the current key version is --current's, or the highest.  Pure:
 * no device.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "idgenctl.h"

static const char encode_usage[] =
	"public encode --key FILE [--key FILE...] [--current VERSION] ID...";
static const char decode_usage[] =
	"public decode --key FILE [--key FILE...] [--current VERSION] [--all-versions] "
	"PUBLIC_ID...";

/* "--name VALUE" or "--name=VALUE" at argv[*i]: the value, *i moved past. */
static const char *option(const char *name, int argc, char *argv[], int *i, bool *missing)
{
	size_t len = strlen(name);

	*missing = false;
	if (!strcmp(argv[*i], name)) {
		if (*i + 1 >= argc || !argv[*i + 1][0]) {
			*missing = true;
			return NULL;
		}
		*i += 2;
		return argv[*i - 1];
	}
	if (!strncmp(argv[*i], name, len) && argv[*i][len] == '=' && argv[*i][len + 1]) {
		(*i)++;
		return argv[*i - 1] + len + 1;
	}
	return NULL;
}

/*
 * Load the --key options at the front of argv into *kr and choose
 * --current's version (and, if all_versions is given, take
 * --all-versions); returns how many arguments they took, or -1 after
 * reporting bad use or a bad key file.
 */
static int load_keys(const char *usage, int argc, char *argv[], struct idgen_keyring **kr,
		     bool *all_versions)
{
	const char *path, *current = NULL;
	char err[512];
	uint32_t version;
	bool missing;
	int i = 0, ret;

	ret = idgen_keyring_new(kr);
	if (ret) {
		report_errno("keyring", -ret);
		return -1;
	}
	while (i < argc) {
		if (all_versions && !strcmp(argv[i], "--all-versions")) {
			*all_versions = true;
			i++;
			continue;
		}
		path = option("--current", argc, argv, &i, &missing);
		if (missing) {
			bad_usage(usage, "--current needs a key version");
			return -1;
		}
		if (path) {
			current = path;
			continue;
		}
		path = option("--key", argc, argv, &i, &missing);
		if (missing) {
			bad_usage(usage, "--key needs a file");
			return -1;
		}
		if (!path)
			break;
		if (idgen_keyring_load(*kr, path, err, sizeof(err))) {
			fprintf(stderr, "%s: key file %s\n", PROG_NAME, err);
			return -1;
		}
	}
	if (!idgen_keyring_count(*kr)) {
		bad_usage(usage, "a key file is needed (--key FILE)");
		return -1;
	}
	if (current) {
		if (!parse_u32("--current", current, &version))
			return -1;
		if (idgen_keyring_set_current(*kr, version)) {
			fprintf(stderr, "%s: --current %u: no --key file holds key version %u\n",
				PROG_NAME, version, version);
			return -1;
		}
	}
	return i;
}

/* Every ID a public ID may stand for, one line each: "ID version N". */
static int print_candidates(const struct idgen_keyring *kr, const char *s)
{
	uint64_t ids[LIBIDGEN_KEYRING_MAX];
	uint32_t versions[LIBIDGEN_KEYRING_MAX];
	ssize_t n, i;

	/* One per version at the most. */
	n = idgen_public_candidates(kr, s, ids, versions, LIBIDGEN_KEYRING_MAX);
	for (i = 0; i < n; i++)
		printf("%llu version %u\n", (unsigned long long)ids[i], versions[i]);
	return n < 0 ? (int)n : 0;
}

static int public_main(const char *usage, int argc, char *argv[], int encode)
{
	char text[LIBIDGEN_PUBLIC_STRLEN];
	struct idgen_keyring *kr = NULL;
	bool all_versions = false;
	int i, n, ret = 0, err;
	uint64_t v;

	if (argc == 1 && is_help(argv[0])) {
		printf("Usage: %s %s\n", PROG_NAME, usage);
		return 0;
	}
	n = load_keys(usage, argc, argv, &kr, encode ? NULL : &all_versions);
	if (n < 0) {
		idgen_keyring_free(kr);
		return 1;
	}
	argc -= n, argv += n;
	if (argc == 0) {
		idgen_keyring_free(kr);
		return bad_usage(usage, encode ? "public encode needs at least one ID" :
				 "public decode needs at least one public ID");
	}
	for (i = 0; i < argc; i++) {
		if (argv[i][0] == '-' && argv[i][1] == '-') {
			idgen_keyring_free(kr);
			return bad_usage(usage, "unexpected option '%s'", argv[i]);
		}
	}
	for (i = 0; i < argc && !ret; i++) {
		if (encode) {
			err = idgen_parse_id(argv[i], &v);
			if (err == -ERANGE) {
				fprintf(stderr, "%s: public encode: '%s' is out of range (IDs are at "
					"most %llu)\n", PROG_NAME, argv[i], LIBIDGEN_ID_MAX);
			} else if (err) {
				fprintf(stderr, "%s: public encode: '%s' is not a decimal ID (digits "
					"only, no sign, blanks or leading zeros)\n", PROG_NAME, argv[i]);
			} else {
				err = idgen_public_encode(kr, v, text);
				if (err > 0) {
					printf("%s\n", text);
					err = 0;
				} else {
					report_errno("public encode", -err);
				}
			}
		} else {
			if (all_versions) {
				err = print_candidates(kr, argv[i]);
			} else {
				err = idgen_public_decode(kr, argv[i], &v);
				if (!err)
					printf("%llu\n", (unsigned long long)v);
			}
			if (!err) {
				;
			} else if (err == -EKEYREJECTED) {
				fprintf(stderr, "%s: public decode: '%s' names a key version no "
					"--key file holds\n", PROG_NAME, argv[i]);
			} else if (err == -ERANGE) {
				fprintf(stderr, "%s: public decode: '%s' is out of range (public IDs "
					"are at most %llu)\n", PROG_NAME, argv[i], LIBIDGEN_ID_MAX);
			} else {
				fprintf(stderr, "%s: public decode: '%s' is not a public ID (decimal, "
					"or v<VERSION>.<decimal>)\n", PROG_NAME, argv[i]);
			}
		}
		ret = err ? 1 : 0;
	}
	idgen_keyring_free(kr);
	if (fflush(stdout) || ferror(stdout)) {
		report_errno("stdout", errno);
		ret = 1;
	}
	return ret;
}

int public_encode_main(int argc, char *argv[])
{
	return public_main(encode_usage, argc, argv, 1);
}

int public_decode_main(int argc, char *argv[])
{
	return public_main(decode_usage, argc, argv, 0);
}

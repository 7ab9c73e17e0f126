// SPDX-License-Identifier: GPL-2.0
/*
 * A libFuzzer target for the public-ID parsers (lib/public.c): the text
 * form of a public ID and the key file's line.  The first byte chooses
 * which.  A public ID that is accepted must decode and encode back to
 * itself and print in canonical form; a key line that is accepted must be
 * exactly "<canonical decimal> <64 hex digits>" and an optional newline.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct idgen_keyring *kr;

static void init(void)
{
	static const uint8_t k1[32] = "fuzz-key-version-1..............";
	static const uint8_t k7[32] = "fuzz-key-version-7..............";

	if (idgen_keyring_new(&kr) || idgen_keyring_add(kr, 1, k1) ||
	    idgen_keyring_add(kr, 7, k7))
		abort();
}

static void public_text(const char *s)
{
	char buf[LIBIDGEN_PUBLIC_STRLEN], canon[LIBIDGEN_PUBLIC_STRLEN + 16];
	uint64_t pub, id, again, ids[2];
	uint32_t version, versions[2];
	ssize_t n;
	int r;

	r = idgen_public_parse(kr, s, &version, &pub);
	if (r != 0 && r != -EINVAL && r != -ERANGE && r != -EKEYREJECTED)
		abort();
	if (idgen_public_decode(kr, s, &id) != r)
		abort();
	if (r)
		return;
	if ((version != 1 && version != 7) || id > LIBIDGEN_ID_MAX)
		abort();
	if (idgen_public_encrypt(kr, version, id, &again) || again != pub)
		abort();
	if (idgen_public_format(kr, version, pub, buf) <= 0)
		abort();
	/* Canonical: what was read, less a "v7." naming the current version. */
	snprintf(canon, sizeof(canon), "%s", strncmp(s, "v7.", 3) ? s : s + 3);
	if (strcmp(buf, canon))
		abort();
	n = idgen_public_candidates(kr, s, ids, versions, 2);
	if (n != (s[0] == 'v' ? 1 : 2) || ids[n - 1] > LIBIDGEN_ID_MAX)
		abort();
}

static void key_line(const char *s, size_t len)
{
	uint8_t key[LIBIDGEN_PUBLIC_KEY_BYTES];
	char err[200], canon[100];
	uint32_t version;
	size_t i;

	if (idgen_key_parse(s, len, &version, key, err, sizeof(err))) {
		if (!strstr(err, "not a key file: "))
			abort();
		return;
	}
	i = snprintf(canon, sizeof(canon), "%u ", version);
	for (size_t k = 0; k < sizeof(key); k++)
		i += snprintf(canon + i, sizeof(canon) - i, "%02x", key[k]);
	if (len != i && !(len == i + 1 && s[i] == '\n'))
		abort();
	if (strncasecmp(canon, s, i))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (!kr)
		init();
	if (size < 1)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	if (data[0] & 1)
		key_line(s, size - 1);
	else if (!memchr(s, '\0', size - 1))
		public_text(s);
	free(s);
	return 0;
}

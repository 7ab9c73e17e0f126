// SPDX-License-Identifier: GPL-2.0
/*
 * Built under ThreadSanitizer (make tsan; run.sh runs it): threads encode,
 * decode and list versions while another thread adds key versions to the
 * same keyring, as a service loading a rotated key at run time does.
 * TSan reports any unsynchronised access to the keyring; the round trips
 * under version 1, loaded from the start, must hold throughout.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "idgen.h"

#define READERS	2
#define ROUNDS	2000
#define ADDED	63	/* versions 2..64: the keyring full */

static struct idgen_keyring *kr;
static _Atomic int failed;

static void *reader(void *arg)
{
	char text[LIBIDGEN_PUBLIC_STRLEN], v1[LIBIDGEN_PUBLIC_STRLEN + 4];
	uint64_t id, pub, back;
	uint32_t version;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		id = (uint64_t)i * 4194304 + (uintptr_t)arg;
		if (idgen_public_encode(kr, id, text) <= 0 ||
		    idgen_public_decode(kr, text, &back) || back != id) {
			/* The current version may change between the two calls. */
			if (idgen_public_encrypt(kr, 1, id, &pub))
				failed = 1;
		}
		if (idgen_public_encrypt(kr, 1, id, &pub) ||
		    idgen_public_format(kr, 1, pub, text) <= 0)
			failed = 1;
		snprintf(v1, sizeof(v1), "v1.%llu", (unsigned long long)pub);
		if (idgen_public_decode(kr, v1, &back) || back != id)
			failed = 1;
		/* The newest version: it only grows. */
		if (idgen_keyring_version(kr, 0, &version) || !version ||
		    idgen_keyring_count(kr) < version)
			failed = 1;
	}
	return NULL;
}

static void *adder(void *arg)
{
	uint8_t key[LIBIDGEN_PUBLIC_KEY_BYTES];
	uint32_t v;

	(void)arg;
	for (v = 2; v < 2 + ADDED; v++) {
		memset(key, v, sizeof(key));
		if (idgen_keyring_add(kr, v, key))
			failed = 1;
	}
	return NULL;
}

int main(void)
{
	uint8_t key[LIBIDGEN_PUBLIC_KEY_BYTES] = { 0 };
	pthread_t t[READERS + 1];
	uintptr_t i;

	if (idgen_keyring_new(&kr) || idgen_keyring_add(kr, 1, key))
		return 1;
	for (i = 0; i < READERS; i++)
		if (pthread_create(&t[i], NULL, reader, (void *)i))
			return 1;
	if (pthread_create(&t[READERS], NULL, adder, NULL))
		return 1;
	for (i = 0; i <= READERS; i++)
		pthread_join(t[i], NULL);
	if (idgen_keyring_count(kr) != 1 + ADDED)
		failed = 1;
	idgen_keyring_free(kr);
	if (failed)
		fprintf(stderr, "public_race: a round trip or a version was wrong\n");
	return failed;
}

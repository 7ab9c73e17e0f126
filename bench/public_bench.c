// SPDX-License-Identifier: GPL-2.0
/*
 * public_bench: ns per public-ID encode and decode and per booking code,
 * beside the plain decode of an ID, on the host (no device: all of it is
 * pure computation, or getrandom() for new codes).  Prints a markdown
 * section; the goal (encode <= 1 us) is printed, not asserted.
 * Figures are medians of rounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "idgen.h"

#define ROUNDS	7
#define OPS	200000

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct idgen_keyring *kr;
static char pubs[OPS][LIBIDGEN_PUBLIC_STRLEN];
static char codes[OPS][LIBIDGEN_CODE_STRLEN];
static uint64_t ids[OPS], sink;

enum what { DECODE, ENCRYPT, ENCODE, DECODE_PUBLIC, CODE_NEW, CODE_NEW_BATCH, CODE_PARSE };

/* One round of OPS operations; returns ns per operation. */
static double round_ns(enum what w)
{
	struct idgen_decoded d;
	uint64_t t0, v, batch[1000];
	int i;

	t0 = now_ns();
	for (i = 0; i < OPS; i++) {
		switch (w) {
		case DECODE:
			idgen_decode(ids[i], NULL, &d);
			sink += d.worker;
			break;
		case ENCRYPT:
			idgen_public_encrypt(kr, 1, ids[i], &v);
			sink += v;
			break;
		case ENCODE:
			sink += idgen_public_encode(kr, ids[i], pubs[i]);
			break;
		case DECODE_PUBLIC:
			idgen_public_decode(kr, pubs[i], &v);
			sink += v;
			break;
		case CODE_NEW:
			idgen_code_new(&v, 1);
			sink += idgen_code_format(v, codes[i]);
			break;
		case CODE_NEW_BATCH:
			if (i % 1000 == 0)
				idgen_code_new(batch, 1000);
			sink += idgen_code_format(batch[i % 1000], codes[i]);
			break;
		case CODE_PARSE:
			idgen_code_parse(codes[i], &v);
			sink += v;
			break;
		}
	}
	return (double)(now_ns() - t0) / OPS;
}

static double median_ns(enum what w)
{
	double r[ROUNDS];
	int i;

	for (i = 0; i < ROUNDS; i++)
		r[i] = round_ns(w);
	qsort(r, ROUNDS, sizeof(r[0]), cmp_double);
	return r[ROUNDS / 2];
}

int main(void)
{
	static const uint8_t key[LIBIDGEN_PUBLIC_KEY_BYTES] = "public-bench-key-32-bytes-long..";
	double enc;
	uint64_t s = 1;
	int i;

	if (idgen_keyring_new(&kr) || idgen_keyring_add(kr, 1, key)) {
		fprintf(stderr, "public_bench: cannot set up a keyring\n");
		return 1;
	}
	for (i = 0; i < OPS; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		ids[i] = s >> 1;
	}
	printf("## Public IDs and booking codes (host, ns per operation, median of %d rounds of %d)\n\n",
	       ROUNDS, OPS);
	printf("| operation | ns |\n|---|---|\n");
	printf("| idgen_decode() (the plain decode, for scale) | %.1f |\n", median_ns(DECODE));
	printf("| idgen_public_encrypt(): FF1, 10 AES-256 blocks | %.1f |\n", median_ns(ENCRYPT));
	enc = median_ns(ENCODE);
	printf("| idgen_public_encode(): encrypt + decimal text | %.1f |\n", enc);
	printf("| idgen_public_decode(): parse + decrypt | %.1f |\n", median_ns(DECODE_PUBLIC));
	printf("| idgen_code_new() one at a time + format (a getrandom() each) | %.1f |\n",
	       median_ns(CODE_NEW));
	printf("| idgen_code_new() 1000 at a time + format | %.1f |\n", median_ns(CODE_NEW_BATCH));
	printf("| idgen_code_parse() | %.1f |\n", median_ns(CODE_PARSE));
	printf("\nGoal: public-ID encode <= 1000 ns: %.1f ns, %s.\n", enc,
	       enc <= 1000 ? "met" : "NOT met");
	idgen_keyring_free(kr);
	return sink == 42;	/* keeps the work from being optimised away */
}

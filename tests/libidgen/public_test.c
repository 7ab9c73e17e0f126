// SPDX-License-Identifier: GPL-2.0
/*
 * libidgen's FF1 and public IDs: the nine NIST SP 800-38G FF1 samples, the
 * radix-2 path the public IDs take held to the generic code, round trips,
 * the permutation property on a whole small domain, avalanche, keyrings
 * and key versions, key files.  No device needed.  Random inputs come
 * from a fixed seed, so a failure replays.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idgen.h"
#include "kselftest_harness.h"

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static size_t unhex(const char *hex, uint8_t *out)
{
	size_t i, n = strlen(hex) / 2;

	for (i = 0; i < n; i++)
		sscanf(hex + 2 * i, "%2hhx", &out[i]);
	return n;
}

static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";

static void to_numerals(const char *s, uint8_t *x)
{
	for (; *s; s++)
		*x++ = strchr(alphabet, *s) - alphabet;
}

static void to_text(const uint8_t *x, size_t n, char *s)
{
	while (n--)
		*s++ = alphabet[*x++];
	*s = '\0';
}

/*
 * NIST SP 800-38G FF1 samples 1-9 (csrc.nist.gov, "FF1samples.pdf"),
 * as reproduced in the test suites of independent FF1 implementations.
 */
#define K128	"2B7E151628AED2A6ABF7158809CF4F3C"
#define K192	K128 "EF4359D8D580AA4F"
#define K256	K192 "7F036D6F04FC6A94"
#define T1	"39383736353433323130"
#define T2	"3737373770717273373737"
static const struct {
	const char *key, *tweak;
	unsigned int radix;
	const char *pt, *ct;
} nist[] = {
	{ K128, "", 10, "0123456789", "2433477484" },
	{ K128, T1, 10, "0123456789", "6124200773" },
	{ K128, T2, 36, "0123456789abcdefghi", "a9tv40mll9kdu509eum" },
	{ K192, "", 10, "0123456789", "2830668132" },
	{ K192, T1, 10, "0123456789", "2496655549" },
	{ K192, T2, 36, "0123456789abcdefghi", "xbj3kv35jrawxv32ysr" },
	{ K256, "", 10, "0123456789", "6657667009" },
	{ K256, T1, 10, "0123456789", "1001623463" },
	{ K256, T2, 36, "0123456789abcdefghi", "xs8a0azh2avyalyzuwd" },
};

TEST(ff1_nist_samples)
{
	uint8_t key[32], tweak[16], x[32], y[32];
	char out[40];
	size_t i, klen, tlen, n;

	for (i = 0; i < sizeof(nist) / sizeof(nist[0]); i++) {
		struct idgen_ff1 *f;

		klen = unhex(nist[i].key, key);
		tlen = unhex(nist[i].tweak, tweak);
		n = strlen(nist[i].pt);
		to_numerals(nist[i].pt, x);
		ASSERT_EQ(0, idgen_ff1_new(key, klen, nist[i].radix, &f));
		ASSERT_EQ(0, idgen_ff1_encrypt(f, tweak, tlen, x, y, n));
		to_text(y, n, out);
		TH_LOG("sample %zu: AES-%zu radix %u: %s", i + 1, klen * 8, nist[i].radix, out);
		EXPECT_STREQ(nist[i].ct, out);
		ASSERT_EQ(0, idgen_ff1_decrypt(f, tweak, tlen, y, y, n));
		to_text(y, n, out);
		EXPECT_STREQ(nist[i].pt, out);
		idgen_ff1_free(f);
	}
}

TEST(ff1_bounds)
{
	uint8_t key[32] = { 0 }, x[LIBIDGEN_FF1_MAXLEN + 1] = { 0 };
	struct idgen_ff1 *f;

	EXPECT_EQ(-EINVAL, idgen_ff1_new(key, 31, 10, &f));
	EXPECT_EQ(-EINVAL, idgen_ff1_new(key, 32, 1, &f));
	EXPECT_EQ(-EINVAL, idgen_ff1_new(key, 32, 37, &f));
	ASSERT_EQ(0, idgen_ff1_new(key, 32, 10, &f));
	/* radix^minlen >= 10^6 (Rev. 1) */
	EXPECT_EQ(6, idgen_ff1_minlen(f));
	EXPECT_EQ(-ERANGE, idgen_ff1_encrypt(f, NULL, 0, x, x, 5));
	EXPECT_EQ(0, idgen_ff1_encrypt(f, NULL, 0, x, x, 6));
	EXPECT_EQ(0, idgen_ff1_encrypt(f, NULL, 0, x, x, 7));	/* odd: u < v */
	EXPECT_EQ(0, idgen_ff1_decrypt(f, NULL, 0, x, x, 7));
	memset(x, 0, sizeof(x));
	EXPECT_EQ(0, idgen_ff1_encrypt(f, NULL, 0, x, x, LIBIDGEN_FF1_MAXLEN));
	EXPECT_EQ(-ERANGE, idgen_ff1_encrypt(f, NULL, 0, x, x, LIBIDGEN_FF1_MAXLEN + 1));
	x[0] = 10;
	EXPECT_EQ(-EINVAL, idgen_ff1_encrypt(f, NULL, 0, x, x, 6));
	idgen_ff1_free(f);
	ASSERT_EQ(0, idgen_ff1_new(key, 16, 2, &f));
	EXPECT_EQ(20, idgen_ff1_minlen(f));
	idgen_ff1_free(f);
	ASSERT_EQ(0, idgen_ff1_new(key, 16, 36, &f));
	EXPECT_EQ(4, idgen_ff1_minlen(f));
	idgen_ff1_free(f);
}

/* Long strings in every radix: decrypt undoes encrypt. */
TEST(ff1_round_trip_every_radix)
{
	uint8_t key[24], x[300], y[300], z[300];
	uint64_t seed = 7;
	unsigned int radix;
	size_t i, n;

	for (i = 0; i < sizeof(key); i++)
		key[i] = splitmix64(&seed);
	for (radix = 2; radix <= 36; radix++) {
		struct idgen_ff1 *f;

		ASSERT_EQ(0, idgen_ff1_new(key, sizeof(key), radix, &f));
		for (n = idgen_ff1_minlen(f); n < sizeof(x); n += 37) {
			for (i = 0; i < n; i++)
				x[i] = splitmix64(&seed) % radix;
			ASSERT_EQ(0, idgen_ff1_encrypt(f, key, radix % 20, x, y, n));
			for (i = 0; i < n; i++)
				ASSERT_LT(y[i], radix);
			ASSERT_EQ(0, idgen_ff1_decrypt(f, key, radix % 20, y, z, n));
			ASSERT_EQ(0, memcmp(x, z, n));
			EXPECT_NE(0, memcmp(x, y, n));
		}
		idgen_ff1_free(f);
	}
}

/* Every value of a 20-bit domain (radix 2, the least length) hit once. */
TEST(ff1_permutation_radix2_20_bits)
{
	static uint8_t seen[1 << 20];
	uint8_t key[16] = "permutation-key", x[20], y[20], tweak[4] = { 0, 0, 0, 9 };
	struct idgen_ff1 *f;
	uint32_t v, w, dups = 0;
	int i;

	ASSERT_EQ(0, idgen_ff1_new(key, sizeof(key), 2, &f));
	for (v = 0; v < (1 << 20); v++) {
		for (i = 0; i < 20; i++)
			x[i] = v >> (19 - i) & 1;
		ASSERT_EQ(0, idgen_ff1_encrypt(f, tweak, sizeof(tweak), x, y, 20));
		for (w = 0, i = 0; i < 20; i++)
			w = w << 1 | y[i];
		dups += seen[w]++ != 0;
	}
	EXPECT_EQ(0, dups);
	for (v = 0; v < (1 << 20); v++)
		ASSERT_EQ(1, seen[v]);
	idgen_ff1_free(f);
}

static const uint8_t key1[32] = "0123456789abcdef0123456789abcdef";
static const uint8_t key2[32] = "fedcba9876543210fedcba9876543210";

static struct idgen_keyring *keyring(void)
{
	struct idgen_keyring *kr;

	if (idgen_keyring_new(&kr) || idgen_keyring_add(kr, 1, key1))
		abort();
	return kr;
}

/* The public IDs' radix-2 path agrees with the generic FF1 code. */
TEST(public_matches_generic_ff1)
{
	struct idgen_keyring *kr = keyring();
	uint8_t tweak[4] = { 0, 0, 0, 1 }, x[63], y[63];
	uint64_t seed = 1, id, pub, want, back;
	struct idgen_ff1 *f;
	int i, k;

	ASSERT_EQ(0, idgen_ff1_new(key1, 32, 2, &f));
	for (i = 0; i < 5000; i++) {
		id = i < 3 ? (uint64_t[]){ 0, 1, LIBIDGEN_ID_MAX }[i] : splitmix64(&seed) >> 1;
		for (k = 0; k < 63; k++)
			x[k] = id >> (62 - k) & 1;
		ASSERT_EQ(0, idgen_ff1_encrypt(f, tweak, 4, x, y, 63));
		for (want = 0, k = 0; k < 63; k++)
			want = want << 1 | y[k];
		ASSERT_EQ(0, idgen_public_encrypt(kr, 1, id, &pub));
		ASSERT_EQ(want, pub);
		ASSERT_EQ(0, idgen_public_decrypt(kr, 1, pub, &back));
		ASSERT_EQ(id, back);
	}
	idgen_ff1_free(f);
	idgen_keyring_free(kr);
}

TEST(public_round_trip_million)
{
	struct idgen_keyring *kr = keyring();
	char text[LIBIDGEN_PUBLIC_STRLEN];
	uint64_t seed = 2, id, pub, back, bad = 0, unchanged = 0;
	int i;

	for (i = 0; i < 1000000 + 3; i++) {
		id = i < 3 ? (uint64_t[]){ 0, 1, LIBIDGEN_ID_MAX }[i] : splitmix64(&seed) >> 1;
		if (idgen_public_encrypt(kr, 1, id, &pub) || pub > LIBIDGEN_ID_MAX ||
		    idgen_public_decrypt(kr, 1, pub, &back) || back != id)
			bad++;
		unchanged += pub == id;
	}
	EXPECT_EQ(0, bad);
	EXPECT_GT(3, unchanged);	/* 3 > unchanged */

	/* The text form, at the edges. */
	for (i = 0; i < 3; i++) {
		id = (uint64_t[]){ 0, 1, LIBIDGEN_ID_MAX }[i];
		ASSERT_LT(0, idgen_public_encode(kr, id, text));
		ASSERT_NE('v', text[0]);
		ASSERT_EQ(0, idgen_public_decode(kr, text, &back));
		EXPECT_EQ(id, back);
	}
	EXPECT_EQ(-ERANGE, idgen_public_encrypt(kr, 1, LIBIDGEN_ID_MAX + 1, &pub));
	EXPECT_EQ(-ERANGE, idgen_public_decrypt(kr, 1, LIBIDGEN_ID_MAX + 1, &pub));
	idgen_keyring_free(kr);
}

/*
 * Several threads on one keyring: each operation takes the key's AES
 * context, or a copy when another thread holds it.  Every thread must get
 * the answers one thread alone gets.
 */
#define THREADS		4
#define PER_THREAD	50000

static struct idgen_keyring *shared_kr;
static uint64_t thread_want[PER_THREAD];

static void *encrypt_all(void *arg)
{
	uint64_t i, pub, back, bad = 0;

	(void)arg;
	for (i = 0; i < PER_THREAD; i++) {
		if (idgen_public_encrypt(shared_kr, 1, i * 0x9e3779b97f4a7c1ULL >> 1, &pub) ||
		    pub != thread_want[i] || idgen_public_decrypt(shared_kr, 1, pub, &back) ||
		    back != i * 0x9e3779b97f4a7c1ULL >> 1)
			bad++;
	}
	return (void *)(uintptr_t)bad;
}

TEST(public_threads_agree)
{
	pthread_t t[THREADS];
	uint64_t i;
	void *bad;
	int k;

	shared_kr = keyring();
	for (i = 0; i < PER_THREAD; i++)
		ASSERT_EQ(0, idgen_public_encrypt(shared_kr, 1, i * 0x9e3779b97f4a7c1ULL >> 1,
						  &thread_want[i]));
	for (k = 0; k < THREADS; k++)
		ASSERT_EQ(0, pthread_create(&t[k], NULL, encrypt_all, NULL));
	for (k = 0; k < THREADS; k++) {
		ASSERT_EQ(0, pthread_join(t[k], &bad));
		EXPECT_EQ(0, (uintptr_t)bad);
	}
	idgen_keyring_free(shared_kr);
}

/*
 * One input bit flipped changes each output bit with probability 1/2: on
 * average 31.5 of 63.  The band is wide against chance (the mean of 630000
 * flips has a standard deviation near 0.005) and narrow against a weak
 * permutation (too few rounds, a broken carry).
 */
TEST(public_avalanche)
{
	struct idgen_keyring *kr = keyring();
	uint64_t seed = 3, id, a, b, total = 0, per_bit[63] = { 0 };
	const int samples = 10000;
	int i, bit;

	for (i = 0; i < samples; i++) {
		id = splitmix64(&seed) >> 1;
		ASSERT_EQ(0, idgen_public_encrypt(kr, 1, id, &a));
		for (bit = 0; bit < 63; bit++) {
			ASSERT_EQ(0, idgen_public_encrypt(kr, 1, id ^ (1ULL << bit), &b));
			per_bit[bit] += __builtin_popcountll(a ^ b);
		}
	}
	for (bit = 0; bit < 63; bit++) {
		double mean = (double)per_bit[bit] / samples;

		total += per_bit[bit];
		if (mean < 30.0 || mean > 33.0)
			TH_LOG("input bit %d: %.2f output bits change on average", bit, mean);
		EXPECT_TRUE(mean >= 30.0 && mean <= 33.0);
	}
	TH_LOG("%.3f of 63 output bits change on average",
	       (double)total / samples / 63);
	EXPECT_TRUE((double)total / samples / 63 > 31.0 &&
		    (double)total / samples / 63 < 32.0);
	idgen_keyring_free(kr);
}

TEST(public_key_versions)
{
	struct idgen_keyring *kr = keyring();
	char text[LIBIDGEN_PUBLIC_STRLEN], old[LIBIDGEN_PUBLIC_STRLEN];
	uint64_t id = 108421920055775237ULL, back, pub1, pub2, ids[4];
	uint32_t version, versions[4];

	ASSERT_LT(0, idgen_public_encode(kr, id, old));
	ASSERT_EQ(0, idgen_public_encrypt(kr, 1, id, &pub1));
	/* Rotation: version 2 becomes current; the old key stays for decoding. */
	EXPECT_EQ(-EEXIST, idgen_keyring_add(kr, 1, key2));
	ASSERT_EQ(0, idgen_keyring_add(kr, 2, key2));
	ASSERT_EQ(2, idgen_keyring_count(kr));
	ASSERT_EQ(0, idgen_keyring_version(kr, 0, &version));
	EXPECT_EQ(2, version);
	ASSERT_EQ(0, idgen_keyring_version(kr, 1, &version));
	EXPECT_EQ(1, version);
	EXPECT_EQ(-ERANGE, idgen_keyring_version(kr, 2, &version));

	ASSERT_EQ(0, idgen_public_encrypt(kr, 2, id, &pub2));
	EXPECT_NE(pub1, pub2);		/* a rotation changes every public ID */
	ASSERT_LT(0, idgen_public_encode(kr, id, text));
	EXPECT_NE('v', text[0]);
	ASSERT_EQ(0, idgen_public_decode(kr, text, &back));
	EXPECT_EQ(id, back);

	/* The old version's public ID, written with its version. */
	ASSERT_LT(0, idgen_public_format(kr, 1, pub1, text));
	EXPECT_EQ(0, strncmp(text, "v1.", 3));
	EXPECT_STREQ(old, text + 3);
	ASSERT_EQ(0, idgen_public_decode(kr, text, &back));
	EXPECT_EQ(id, back);
	/* "v2." names the current version explicitly: accepted too. */
	snprintf(text, sizeof(text), "v2.%llu", (unsigned long long)pub2);
	ASSERT_EQ(0, idgen_public_decode(kr, text, &back));
	EXPECT_EQ(id, back);

	/* A plain public ID from before the rotation: one candidate per version. */
	ASSERT_EQ(2, idgen_public_candidates(kr, old, ids, versions, 4));
	EXPECT_EQ(2, versions[0]);
	EXPECT_EQ(1, versions[1]);
	EXPECT_EQ(id, ids[1]);
	EXPECT_NE(id, ids[0]);
	EXPECT_EQ(-ENOSPC, idgen_public_candidates(kr, old, ids, versions, 1));
	ASSERT_EQ(1, idgen_public_candidates(kr, text, ids, versions, 1));
	EXPECT_EQ(id, ids[0]);

	/* Bad text. */
	EXPECT_EQ(-EKEYREJECTED, idgen_public_decode(kr, "v3.12", &back));
	EXPECT_EQ(-EINVAL, idgen_public_decode(kr, "v1", &back));
	EXPECT_EQ(-EINVAL, idgen_public_decode(kr, "v.12", &back));
	EXPECT_EQ(-EINVAL, idgen_public_decode(kr, "v01.12", &back));
	EXPECT_EQ(-EINVAL, idgen_public_decode(kr, "V1.12", &back));
	EXPECT_EQ(-EINVAL, idgen_public_decode(kr, "v1.", &back));
	EXPECT_EQ(-EINVAL, idgen_public_decode(kr, "v1.012", &back));
	EXPECT_EQ(-EINVAL, idgen_public_decode(kr, "", &back));
	EXPECT_EQ(-EINVAL, idgen_public_decode(kr, " 12", &back));
	EXPECT_EQ(-EINVAL, idgen_public_decode(kr, "-12", &back));
	EXPECT_EQ(-EINVAL, idgen_public_decode(kr, "v4294967296.12", &back));
	EXPECT_EQ(-ERANGE, idgen_public_decode(kr, "9223372036854775808", &back));
	EXPECT_EQ(-EKEYREJECTED, idgen_public_encrypt(kr, 3, id, &pub1));
	EXPECT_EQ(-EKEYREJECTED, idgen_public_format(kr, 3, 0, text));
	idgen_keyring_free(kr);

	/* An empty keyring encodes nothing. */
	ASSERT_EQ(0, idgen_keyring_new(&kr));
	EXPECT_EQ(-EKEYREJECTED, idgen_public_encode(kr, 1, text));
	EXPECT_EQ(-EKEYREJECTED, idgen_public_decode(kr, "1", &back));
	idgen_keyring_free(kr);
}

/*
 * A rolling rotation: a host that has loaded the new key for decoding only
 * still encodes, formats and reads plain public IDs as one that has not,
 * until the new version is chosen.
 */
TEST(public_rollout_load_then_switch)
{
	struct idgen_keyring *old = keyring(), *kr = keyring();
	char a[LIBIDGEN_PUBLIC_STRLEN], b[LIBIDGEN_PUBLIC_STRLEN];
	uint64_t id = 108421920055775237ULL, back, pub2, ids[4];
	uint32_t version, versions[4];

	EXPECT_EQ(-EKEYREJECTED, idgen_keyring_set_current(kr, 2));
	ASSERT_EQ(0, idgen_keyring_set_current(kr, 1));
	ASSERT_EQ(0, idgen_keyring_add(kr, 2, key2));
	ASSERT_EQ(0, idgen_keyring_current(kr, &version));
	EXPECT_EQ(1, version);
	ASSERT_EQ(0, idgen_keyring_version(kr, 0, &version));
	EXPECT_EQ(2, version);		/* listed highest first all the same */
	/* Loaded, not current: both hosts agree on the plain public ID. */
	ASSERT_LT(0, idgen_public_encode(old, id, a));
	ASSERT_LT(0, idgen_public_encode(kr, id, b));
	EXPECT_STREQ(a, b);
	ASSERT_EQ(0, idgen_public_decode(kr, a, &back));
	EXPECT_EQ(id, back);
	/* The new version's public IDs are written with it; they decode. */
	ASSERT_EQ(0, idgen_public_encrypt(kr, 2, id, &pub2));
	ASSERT_LT(0, idgen_public_format(kr, 2, pub2, b));
	EXPECT_EQ(0, strncmp(b, "v2.", 3));
	ASSERT_EQ(0, idgen_public_decode(kr, b, &back));
	EXPECT_EQ(id, back);
	/* Candidates: the current version first. */
	ASSERT_EQ(2, idgen_public_candidates(kr, a, ids, versions, 4));
	EXPECT_EQ(1, versions[0]);
	EXPECT_EQ(id, ids[0]);
	EXPECT_EQ(2, versions[1]);
	EXPECT_NE(id, ids[1]);

	/* The switch: now the new version is plain, the old one "v1.". */
	ASSERT_EQ(0, idgen_keyring_set_current(kr, 2));
	ASSERT_EQ(0, idgen_keyring_current(kr, &version));
	EXPECT_EQ(2, version);
	ASSERT_LT(0, idgen_public_encode(kr, id, b));
	EXPECT_NE('v', b[0]);
	EXPECT_STRNE(a, b);
	ASSERT_LT(0, idgen_public_format(kr, 1, strtoull(a, NULL, 10), b));
	EXPECT_EQ(0, strncmp(b, "v1.", 3));
	EXPECT_STREQ(a, b + 3);
	/* Chosen, it stays current when a higher version is added. */
	ASSERT_EQ(0, idgen_keyring_add(kr, 3, key2));
	ASSERT_EQ(0, idgen_keyring_current(kr, &version));
	EXPECT_EQ(2, version);
	ASSERT_EQ(3, idgen_public_candidates(kr, a, ids, versions, 4));
	EXPECT_EQ(2, versions[0]);
	EXPECT_EQ(3, versions[1]);
	EXPECT_EQ(1, versions[2]);
	EXPECT_EQ(id, ids[2]);
	idgen_keyring_free(kr);

	/* Never chosen: the highest is current; empty: none. */
	ASSERT_EQ(0, idgen_keyring_add(old, 2, key2));
	ASSERT_EQ(0, idgen_keyring_current(old, &version));
	EXPECT_EQ(2, version);
	idgen_keyring_free(old);
	ASSERT_EQ(0, idgen_keyring_new(&kr));
	EXPECT_EQ(-EKEYREJECTED, idgen_keyring_current(kr, &version));
	idgen_keyring_free(kr);
}

static const char good_key[] =
	"7 000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F\n";

static int write_key(const char *path, const char *text, mode_t mode)
{
	FILE *f;

	unlink(path);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	fclose(f);
	return chmod(path, mode);
}

FIXTURE(keyfile) {
	char dir[64];
	char path[96];
};

FIXTURE_SETUP(keyfile)
{
	strcpy(self->dir, "/tmp/idgen-keys.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->path, sizeof(self->path), "%s/public.key", self->dir);
}

FIXTURE_TEARDOWN(keyfile)
{
	unlink(self->path);
	rmdir(self->dir);
}

TEST_F(keyfile, loads_and_encodes_like_the_key_it_holds)
{
	struct idgen_keyring *a, *b;
	uint8_t key[32];
	uint64_t pa, pb;
	char err[256] = "";
	int i;

	for (i = 0; i < 32; i++)
		key[i] = i;
	ASSERT_EQ(0, write_key(self->path, good_key, 0600));
	ASSERT_EQ(0, idgen_keyring_new(&a));
	ASSERT_EQ(0, idgen_keyring_load(a, self->path, err, sizeof(err)));
	ASSERT_EQ(0, idgen_keyring_new(&b));
	ASSERT_EQ(0, idgen_keyring_add(b, 7, key));
	ASSERT_EQ(0, idgen_public_encrypt(a, 7, 42, &pa));
	ASSERT_EQ(0, idgen_public_encrypt(b, 7, 42, &pb));
	EXPECT_EQ(pa, pb);
	/* The same version twice is refused, naming the file. */
	EXPECT_EQ(-EEXIST, idgen_keyring_load(a, self->path, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "key version 7 is loaded already"));
	EXPECT_EQ(0, strncmp(err, self->path, strlen(self->path)));
	/* No newline at the end is fine; mode 0400 too. */
	ASSERT_EQ(0, write_key(self->path, "8 000102030405060708090a0b0c0d0e0f"
			       "101112131415161718191a1b1c1d1e1f", 0400));
	EXPECT_EQ(0, idgen_keyring_load(a, self->path, err, sizeof(err)));
	idgen_keyring_free(a);
	idgen_keyring_free(b);
}

/*
 * A good key written as path with mode, that group or others may read or
 * write (how): refused with -EACCES and a message naming the file, how it
 * is open and its mode.
 */
static void expect_mode_refused(struct __test_metadata *_metadata,
				struct idgen_keyring *kr, const char *path,
				mode_t mode, const char *how)
{
	char err[256], want[160];

	ASSERT_EQ(0, write_key(path, good_key, mode));
	err[0] = '\0';
	EXPECT_EQ(-EACCES, idgen_keyring_load(kr, path, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: %s by group or others (mode %04o)",
		 path, how, (unsigned int)mode);
	TH_LOG("%s", err);
	EXPECT_EQ(0, strncmp(err, want, strlen(want)));
}

TEST_F(keyfile, readable_by_group_or_others_is_refused)
{
	static const mode_t modes[] = { 0640, 0644, 0604, 0440 };
	struct idgen_keyring *kr;
	char err[256];
	size_t i;

	ASSERT_EQ(0, idgen_keyring_new(&kr));
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		expect_mode_refused(_metadata, kr, self->path, modes[i], "readable");
	EXPECT_EQ(0, idgen_keyring_count(kr));
	/* Missing file: the path and strerror. */
	unlink(self->path);
	EXPECT_EQ(-ENOENT, idgen_keyring_load(kr, self->path, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "No such file or directory"));
	/* A directory is not a key file. */
	EXPECT_EQ(-EINVAL, idgen_keyring_load(kr, self->dir, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "not a regular file"));
	idgen_keyring_free(kr);
}

TEST_F(keyfile, writable_by_group_or_others_is_refused)
{
	static const mode_t modes[] = { 0620, 0602, 0622 };
	struct idgen_keyring *kr;
	size_t i;

	ASSERT_EQ(0, idgen_keyring_new(&kr));
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		expect_mode_refused(_metadata, kr, self->path, modes[i], "writable");
	EXPECT_EQ(0, idgen_keyring_count(kr));
	idgen_keyring_free(kr);
}

/* As ssh: a key file belongs to the user loading it or to root. */
TEST_F(keyfile, owned_by_another_user_is_refused)
{
	struct idgen_keyring *kr;
	char err[256], want[160];

	if (geteuid() != 0)
		SKIP(return, "making a file another user's needs root");
	ASSERT_EQ(0, write_key(self->path, good_key, 0600));
	ASSERT_EQ(0, chown(self->path, 65534, 65534));
	ASSERT_EQ(0, idgen_keyring_new(&kr));
	err[0] = '\0';
	EXPECT_EQ(-EACCES, idgen_keyring_load(kr, self->path, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: owned by uid 65534, neither this user (uid 0) "
		 "nor root", self->path);
	TH_LOG("%s", err);
	EXPECT_EQ(0, strncmp(err, want, strlen(want)));
	/* Root's own file loads. */
	ASSERT_EQ(0, chown(self->path, 0, 0));
	EXPECT_EQ(0, idgen_keyring_load(kr, self->path, err, sizeof(err)));
	idgen_keyring_free(kr);
}

/*
 * LoadCredential= under DynamicUser=yes: systemd puts the key in
 * $CREDENTIALS_DIRECTORY, a directory of mode 0500, as a file of the
 * service's user and group, mode 0440.  That layout loads; the same
 * mode anywhere else, or with the directory writable or open to others,
 * or readable by others, is still refused.
 */
TEST_F(keyfile, a_systemd_credential_loads)
{
	char creds[96], other[96], err[256];
	struct idgen_keyring *kr;
	size_t i;
	static const struct {
		mode_t file, dir;
		bool loads;
	} cases[] = {
		{ 0440, 0500, true },
		{ 0440, 0550, true },
		{ 0400, 0500, true },
		{ 0440, 0700, false },	/* the directory writable */
		{ 0440, 0505, false },	/* the directory open to others */
		{ 0444, 0500, false },	/* the file readable by others */
		{ 0460, 0500, false },	/* the file writable by its group */
	};

	snprintf(creds, sizeof(creds), "%s/credentials", self->dir);
	snprintf(other, sizeof(other), "%s/credentials/public-2.key", self->dir);
	ASSERT_EQ(0, mkdir(creds, 0700));
	ASSERT_EQ(0, setenv("CREDENTIALS_DIRECTORY", creds, 1));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT_EQ(0, chmod(creds, 0700));
		ASSERT_EQ(0, write_key(other, good_key, cases[i].file));
		ASSERT_EQ(0, chmod(creds, cases[i].dir));
		err[0] = '\0';
		ASSERT_EQ(0, idgen_keyring_new(&kr));
		EXPECT_EQ(cases[i].loads ? 0 : -EACCES,
			  idgen_keyring_load(kr, other, err, sizeof(err)))
			TH_LOG("file %04o in a directory %04o: %s", (unsigned int)cases[i].file,
			       (unsigned int)cases[i].dir, err);
		idgen_keyring_free(kr);
	}
	ASSERT_EQ(0, idgen_keyring_new(&kr));
	/* 0440 outside the credentials directory: refused. */
	ASSERT_EQ(0, chmod(creds, 0700));
	ASSERT_EQ(0, write_key(self->path, good_key, 0440));
	EXPECT_EQ(-EACCES, idgen_keyring_load(kr, self->path, err, sizeof(err)));
	/* ... and inside it with no $CREDENTIALS_DIRECTORY. */
	ASSERT_EQ(0, write_key(other, good_key, 0440));
	ASSERT_EQ(0, chmod(creds, 0500));
	ASSERT_EQ(0, unsetenv("CREDENTIALS_DIRECTORY"));
	EXPECT_EQ(-EACCES, idgen_keyring_load(kr, other, err, sizeof(err)));
	ASSERT_EQ(0, chmod(creds, 0700));
	unlink(other);
	rmdir(creds);
	idgen_keyring_free(kr);
}

/* A FIFO at the path: refused at once, not a read that waits forever. */
TEST_F_TIMEOUT(keyfile, a_fifo_is_refused_without_hanging, 10)
{
	struct idgen_keyring *kr;
	char err[256];

	unlink(self->path);
	ASSERT_EQ(0, mkfifo(self->path, 0600));
	ASSERT_EQ(0, idgen_keyring_new(&kr));
	err[0] = '\0';
	EXPECT_EQ(-EINVAL, idgen_keyring_load(kr, self->path, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "not a regular file"));
	idgen_keyring_free(kr);
}

static const struct {
	const char *text, *err;
} bad_keys[] = {
	{ "", "want one line '<version> <64 hex digits>'" },
	{ "\n", "want one line" },
	{ "7\n", "want one line" },
	{ "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n", "want one line" },
	{ "x 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
	  "the key version (the first field, 1 character) is not a decimal number" },
	{ "07 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
	  "the key version (the first field, 2 characters) is not a decimal number" },
	{ "-7 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
	  "is not a decimal number" },
	{ "4294967296 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
	  "the key version is above 4294967295" },
	{ "7 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e\n",
	  "the key is 62 hex digits, want 64" },
	{ "7 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f00\n",
	  "the key is 66 hex digits, want 64" },
	{ "7 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1g\n",
	  "not a hex digit at column 66" },
	{ "7  000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
	  "not a hex digit at column 3" },
	{ "7 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f \n",
	  "not a hex digit at column 67" },
	{ "7 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\r\n",
	  "the line ends in CR LF (a DOS/Windows line ending)" },
	{ "7 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\r",
	  "the line ends in CR LF" },
	{ "7 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n\n",
	  "want one line" },
	{ "7 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
	  "8 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
	  "want one line" },
};

/*
 * Whether err quotes any 12 hex digits in a row of text (more than a
 * key version's 10 decimal ones, which a message may name): an error
 * about a key file reaches the journal, and must never carry the key.
 */
static bool quotes_key(const char *err, const char *text)
{
	size_t i, n = strlen(text);

	for (i = 0; i + 12 <= n; i++) {
		char window[13];

		if (strspn(text + i, "0123456789abcdefABCDEF") < 12)
			continue;
		memcpy(window, text + i, 12);
		window[12] = '\0';
		if (strstr(err, window))
			return true;
	}
	return false;
}

/* The two fields swapped: the key is where the version should be. */
TEST_F(keyfile, an_error_never_quotes_the_key)
{
	static const char *const swapped[] = {
		"8f3ac91e5b27d04a6c1e9f8b3d7a2c5e9b0f4d6a8c2e1b3f5d7a9c0e2b4d6f81 7\n",
		"8f3ac91e5b27d04a6c1e9f8b3d7a2c5e9b0f4d6a8c2e1b3f5d7a9c0e2b4d6f81 7 x\n",
		"8f3ac91e5b27d04a6c1e9f8b 7\n",
	};
	struct idgen_keyring *kr;
	char err[256];
	size_t i;

	ASSERT_EQ(0, idgen_keyring_new(&kr));
	for (i = 0; i < sizeof(swapped) / sizeof(swapped[0]); i++) {
		ASSERT_EQ(0, write_key(self->path, swapped[i], 0600));
		err[0] = '\0';
		EXPECT_EQ(-EINVAL, idgen_keyring_load(kr, self->path, err, sizeof(err)));
		TH_LOG("%s", err);
		EXPECT_FALSE(quotes_key(err, swapped[i]));
		EXPECT_NE(NULL, strstr(err, "the first field"));
	}
	for (i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
		ASSERT_EQ(0, write_key(self->path, bad_keys[i].text, 0600));
		err[0] = '\0';
		EXPECT_EQ(-EINVAL, idgen_keyring_load(kr, self->path, err, sizeof(err)));
		if (quotes_key(err, bad_keys[i].text))
			TH_LOG("key file %zu: '%s' quotes its key", i, err);
		EXPECT_FALSE(quotes_key(err, bad_keys[i].text));
	}
	idgen_keyring_free(kr);
}

TEST_F(keyfile, malformed_key_files_are_refused)
{
	struct idgen_keyring *kr;
	char err[256], want[200];
	FILE *f;
	size_t i;

	ASSERT_EQ(0, idgen_keyring_new(&kr));
	for (i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
		ASSERT_EQ(0, write_key(self->path, bad_keys[i].text, 0600));
		err[0] = '\0';
		EXPECT_EQ(-EINVAL, idgen_keyring_load(kr, self->path, err, sizeof(err)));
		snprintf(want, sizeof(want), "%s: not a key file: ", self->path);
		if (strncmp(err, want, strlen(want)) || !strstr(err, bad_keys[i].err))
			TH_LOG("key file %zu: got '%s', want '%s...%s'", i, err, want,
			       bad_keys[i].err);
		EXPECT_EQ(0, strncmp(err, want, strlen(want)));
		EXPECT_NE(NULL, strstr(err, bad_keys[i].err));
	}
	/* Binary content and oversize files. */
	ASSERT_EQ(0, write_key(self->path, "7 00", 0600));
	f = fopen(self->path, "a");
	ASSERT_NE(NULL, f);
	fputc('\0', f);
	fclose(f);
	EXPECT_EQ(-EINVAL, idgen_keyring_load(kr, self->path, err, sizeof(err)));
	memset(want, 'a', sizeof(want) - 1);
	want[sizeof(want) - 1] = '\0';
	ASSERT_EQ(0, write_key(self->path, want, 0600));
	EXPECT_EQ(-EINVAL, idgen_keyring_load(kr, self->path, err, sizeof(err)));
	EXPECT_EQ(0, idgen_keyring_count(kr));
	idgen_keyring_free(kr);
}

TEST(strerror_meanings)
{
	EXPECT_NE(NULL, strstr(idgen_strerror(-EKEYREJECTED), "key version"));
	EXPECT_NE(NULL, strstr(idgen_strerror(-EBADMSG), "check symbol"));
}

TEST_HARNESS_MAIN

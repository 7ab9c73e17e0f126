// SPDX-License-Identifier: GPL-2.0
/*
 * FF1's busy path (lib/ff1.c, built into this test to reach its lock): a
 * thread that finds the shared AES context taken encrypts on a context of
 * its own and does not wait for the holder.  Here the holder never lets
 * go: a thread that waited on it would never finish, and the harness's
 * timeout would fail the test.
 */
#include <pthread.h>

#include "../../lib/ff1.c"
#include "kselftest_harness.h"

/* NIST SP 800-38G FF1 sample 1: AES-128, radix 10, no tweak. */
static const uint8_t key[16] = {
	0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6,
	0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c,
};
static const uint8_t plain[10] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
static const uint8_t cipher[10] = { 2, 4, 3, 3, 4, 7, 7, 4, 8, 4 };

struct job {
	struct idgen_ff1 *f;
	uint8_t out[10];
	int ret;
};

static void *encrypt_one(void *arg)
{
	struct job *j = arg;

	j->ret = idgen_ff1_encrypt(j->f, NULL, 0, plain, j->out, sizeof(plain));
	return NULL;
}

TEST(busy_context_no_wait)
{
	struct job j = { 0 };
	pthread_t t;

	ASSERT_EQ(0, idgen_ff1_new(key, sizeof(key), 10, &j.f));
	/* Another operation holds the shared context throughout. */
	ASSERT_EQ(0, pthread_mutex_lock(&j.f->lock));
	ASSERT_EQ(0, pthread_create(&t, NULL, encrypt_one, &j));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(0, pthread_mutex_unlock(&j.f->lock));
	ASSERT_EQ(0, j.ret);
	EXPECT_EQ(0, memcmp(cipher, j.out, sizeof(cipher)));
	/* And the shared context still gives the same. */
	memset(j.out, 0, sizeof(j.out));
	encrypt_one(&j);
	ASSERT_EQ(0, j.ret);
	EXPECT_EQ(0, memcmp(cipher, j.out, sizeof(cipher)));
	idgen_ff1_free(j.f);
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * buffer_age DEVICE MAX_AGE_MS: take IDs through struct idgen_buffer,
 * sleeping past the age bound between takes, from one thread and then from
 * four, and check that no ID handed out is older than the bound, that one
 * thread's IDs increase and that no ID comes out twice.  Needs a lease.
 * Prints "# ..." diagnostics; exits 0 on success.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"

#define THREADS		4
#define PER_THREAD	3000

static struct idgen_buffer *buf;
static uint64_t max_age;
static uint64_t taken[THREADS][PER_THREAD];
static int failed;

static uint64_t now_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Take one ID and check its age against the clock read before the take. */
static int take_checked(uint64_t *id)
{
	uint64_t before = now_unix_ms(), id_ms;
	int ret = idgen_buffer_take(buf, id);

	if (ret) {
		printf("# idgen_buffer_take: %s\n", strerror(-ret));
		return -1;
	}
	id_ms = (*id >> 22) + LIBIDGEN_EPOCH_UNIX_MS;
	if (id_ms + max_age < before) {
		printf("# ID %llu is %llu ms old, the bound is %llu ms\n",
		       (unsigned long long)*id,
		       (unsigned long long)(before - id_ms),
		       (unsigned long long)max_age);
		return -1;
	}
	return 0;
}

static void *taker(void *arg)
{
	uint64_t *mine = arg;
	int i;

	for (i = 0; i < PER_THREAD; i++) {
		if (take_checked(&mine[i])) {
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
			break;
		}
		if (i && mine[i] <= mine[i - 1]) {
			printf("# thread saw %llu after %llu\n",
			       (unsigned long long)mine[i], (unsigned long long)mine[i - 1]);
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
			break;
		}
		if (i % 500 == 499)
			usleep((max_age + 20) * 1000);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char *argv[])
{
	pthread_t t[THREADS];
	uint64_t prev = 0, id;
	int fd, ret, i;

	if (argc != 3 || idgen_parse_id(argv[2], &max_age)) {
		fprintf(stderr, "usage: buffer_age DEVICE MAX_AGE_MS\n");
		return 2;
	}
	fd = idgen_open(argv[1], 0);
	if (fd < 0) {
		printf("# %s: %s\n", argv[1], strerror(-fd));
		return 1;
	}
	ret = idgen_buffer_new(fd, 256, max_age, &buf);
	if (ret) {
		printf("# idgen_buffer_new: %s\n", strerror(-ret));
		return 1;
	}
	/* One thread: sleep past the bound after every few takes. */
	for (i = 0; i < 40; i++) {
		if (take_checked(&id))
			return 1;
		if (id <= prev) {
			printf("# %llu after %llu\n", (unsigned long long)id,
			       (unsigned long long)prev);
			return 1;
		}
		prev = id;
		if (i % 4 == 3)
			usleep((max_age + 20) * 1000);
	}
	/* Four threads at once. */
	for (i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, taker, taken[i]);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	if (failed)
		return 1;
	qsort(taken, THREADS * PER_THREAD, sizeof(uint64_t), cmp_u64);
	for (i = 1; i < THREADS * PER_THREAD; i++) {
		if (((uint64_t *)taken)[i] == ((uint64_t *)taken)[i - 1]) {
			printf("# %llu handed out twice\n",
			       (unsigned long long)((uint64_t *)taken)[i]);
			return 1;
		}
	}
	if (((uint64_t *)taken)[0] <= prev) {
		printf("# the threads got an ID at or below an earlier one\n");
		return 1;
	}
	idgen_buffer_free(buf);
	idgen_close(fd);
	return 0;
}

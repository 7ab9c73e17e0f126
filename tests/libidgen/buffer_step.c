// SPDX-License-Identifier: GPL-2.0
/*
 * buffer_step: the buffer's age bound is measured from when a batch was
 * read, on a clock that never steps, so a forward step of the wall clock
 * (which the module holds until it is adopted, minting on behind the new
 * wall time) does not make every buffered ID look stale.  Measured
 * against CLOCK_REALTIME, a held step of 5 s dropped every ID, and every
 * take failed until the step was adopted.
 *
 * The wall clock is this program's: clock_gettime() here, which the
 * statically linked library calls, adds a step to CLOCK_REALTIME.  The
 * device is a pipe of IDs stamped at the start.
 */
#define _GNU_SOURCE	/* pipe2() */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"
#include "kselftest_harness.h"

static int64_t step_ms;	/* added to CLOCK_REALTIME */

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	long r = syscall(SYS_clock_gettime, clk, ts);

	if (!r && clk == CLOCK_REALTIME && step_ms) {
		int64_t ns = ts->tv_nsec + step_ms % 1000 * 1000000;

		ts->tv_sec += step_ms / 1000 + ns / 1000000000;
		ts->tv_nsec = ns % 1000000000;
	}
	return r;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - LIBIDGEN_EPOCH_UNIX_MS;
}

TEST(forward_step_keeps_fresh_ids)
{
	struct timespec pause = { 0, 30 * 1000000 };
	struct idgen_buffer *b;
	uint64_t ids[64], id;
	int p[2], i;

	ASSERT_EQ(0, pipe2(p, O_NONBLOCK));
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, idgen_compose(&idgen_layout_v1, wall_ms(), 0, 1, i, &ids[i]));
	ASSERT_EQ(sizeof(ids), write(p[1], ids, sizeof(ids)));
	ASSERT_EQ(0, idgen_buffer_new(p[0], 32, 10, &b));
	ASSERT_EQ(0, idgen_buffer_take(b, &id));
	ASSERT_EQ(ids[0], id);
	/* The wall clock steps 5 s forward: the batch read a moment ago is fresh. */
	step_ms = 5000;
	ASSERT_EQ(0, idgen_buffer_take(b, &id));
	EXPECT_EQ(ids[1], id);
	/* Past the bound since the read, its IDs are dropped: the next batch. */
	nanosleep(&pause, NULL);
	ASSERT_EQ(0, idgen_buffer_take(b, &id));
	EXPECT_EQ(ids[32], id);
	idgen_buffer_free(b);
	close(p[0]);
	close(p[1]);
}

TEST_HARNESS_MAIN

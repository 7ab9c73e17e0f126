/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bulk lane: where large requests are minted, so that they never make
 * a small one wait (Documentation/design.md section 9, "one caller taking the
 * node").
 *
 * A node mints 2^seq IDs a millisecond.  Minted on the connection's own
 * thread, ten requests for 10,000 IDs each hold their threads for
 * milliseconds apiece, and a request for one ID behind them on the same
 * thread waits for all of them; their reads also keep the generator at
 * the end of its lead, so even a free thread waits for the clock.  So a
 * request of LANE_MIN_COUNT IDs or more is handed to the lane's one
 * thread instead, and its connection set aside until the answer is made:
 *
 *   - the lane mints LANE_CHUNK IDs of one request at a time, taking
 *     its requests in turn, so a large request never waits for all of
 *     the others;
 *   - it keeps the IDs it mints at most LANE_AHEAD_MS ahead of the
 *     generator's own clock (the millisecond of the last ID it got,
 *     against the clock minter_state gives), and sleeps while they run
 *     further ahead, so the rest of the generator's borrow bound (the
 *     module's max_borrow_ms, 10 ms by default; set it above
 *     LANE_AHEAD_MS) is always there for small requests, which never
 *     wait for the clock on its account.  While the generator runs ahead
 *     for another reason (the clock stepped back) the lane waits too, up
 *     to LANE_MAX_WAIT_MS: large requests are slowed, small ones go on;
 *   - it stops minting for a request whose client has gone (its socket
 *     can no longer be written to, or its stream was cancelled), and
 *     answers it with ECONNRESET; and for one whose deadline has passed,
 *     with ETIMEDOUT.  A client that only shut its sending side still
 *     reads, and is minted for;
 *   - it formats the answer itself, so the connection's thread only
 *     sends it.
 *
 * Small requests are minted on the connection's thread as before.  The
 * lane changes who waits, never which IDs exist: every ID still comes
 * from one read of the generator, strictly increasing within a request.
 */
#ifndef HTTPD_LANE_H
#define HTTPD_LANE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "minter.h"

#define LANE_MIN_COUNT	256	/* IDs: a request of this many goes to the lane */
#define LANE_CHUNK	512	/* IDs minted for one request before the next */
#define LANE_AHEAD_MS	5	/* of the generator's 10 ms lead, the lane's */
#define LANE_MAX_WAIT_MS 1000	/* the longest the lane waits for the clock */
#define LANE_NICE	10	/* the lane's thread: this much below the service's */

struct lane_job {
	uint64_t *ids;		/* count of them */
	size_t count;
	size_t got;		/* minted so far */
	int err;		/* 0, the generator's negative errno, or
				 * -ECONNRESET: the client went away */
	int fd;			/* the client's socket, or -1: not watched */
	/* Set by any thread: the client went away (err -ECONNRESET). */
	_Atomic bool cancelled;
	/* CLOCK_MONOTONIC ns past which no more is minted (err -ETIMEDOUT); 0: none */
	uint64_t deadline_ns;
	/*
	 * Called once, when every ID is minted or the generator refused
	 * (err): on the lane's thread, or on lane_submit()'s caller's when
	 * the lane has stopped.  The job is the callee's from then on.
	 */
	void (*done)(struct lane_job *job);
	struct lane_job *next;
};

struct lane;

/* The lane's thread, minting through m.  NULL: out of memory or threads. */
struct lane *lane_start(struct minter *m);

/*
 * Mint job->count IDs into job->ids, then call job->done.  On a lane
 * that has stopped, at once on this thread, in one go.
 */
void lane_submit(struct lane *l, struct lane_job *job);

/*
 * Finish every job submitted (their done called), then stop the thread.
 * Jobs submitted from now on are minted by their submitter.
 */
void lane_stop(struct lane *l);
void lane_free(struct lane *l);

#endif /* HTTPD_LANE_H */

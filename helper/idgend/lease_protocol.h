/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lease protocol of idgend against a store (Documentation/design.md
 * section 7): claim a worker number of the region by compare-and-swap, renew
 * it, give it back, lose it, or adopt the one the generator already holds.
 * The region's layout and width records each claim and adoption is
 * checked against, and the cut-over that changes them, are the layout
 * protocol's (layout_protocol.h).
 *
 * It does no I/O of its own: the store, the generator and the clock are
 * the interfaces it is handed (store.h, device.h, wall_clock.h), so the tests
 * drive it with fakes.  Every lease event is one log line.
 *
 *  The invariant it keeps: the generator never holds a fence the store has
 * not confirmed to this instance (owner and token), and a new lease's
 * floor is the previous holder's valid_until as the claiming write read
 * it, or the layout's from_ms when that is higher.  The rules in full,
 * R1-R7, are Documentation/design.md section 7.1.
 */
#ifndef IDGEND_LEASE_PROTOCOL_H
#define IDGEND_LEASE_PROTOCOL_H

#include <stdbool.h>
#include <stdint.h>

#include "wall_clock.h"
#include "device.h"
#include "layout.h"
#include "layout_protocol.h"
#include "store.h"

struct lease_config {
	const char *owner;		/* this host's name in the store */
	const char *token;		/* this instance's (runtime.h) */
	struct lease_layout layout;	/* this host's; the region's must match */
	uint32_t region;
	uint32_t workers;		/* the region's numbers: 0..workers-1 */
	uint64_t lease_ms;		/* how far a claim or renewal reaches */
	uint64_t floor_wait_ms;		/* longest wait for the clock to pass
					 * a floor before trying another number */
	bool require_sync;		/* wait for a synchronised clock */
	unsigned int claim_attempts;	/* lost races before giving up */
};

/* Writes whose outcome is still unknown that a lease remembers. */
#define LEASE_PENDING_MAX	8

struct lease {
	const struct lease_config *cfg;
	const struct store_ops *store;
	void *store_ctx;
	const struct device *dev;
	const struct clock_ops *clock;
	void *clock_ctx;
	uint64_t rng;			/* herd avoidance; any non-zero seed */

	bool held;
	uint32_t worker;
	int64_t rev;			/* our record's mod_revision */
	int64_t layout_rev;		/* the layout record's, as last read */
	uint64_t layout_from_ms;	/* its from_ms */
	uint64_t floor_ms;
	uint64_t confirmed_ms;		/* valid_until the store holds for us */
	uint64_t pushed_ms;		/* the fence the generator holds */

	/*
	 * R1: the nonce of the write in flight, and those of our writes of
	 * this lease whose outcome is not settled yet (an answer lost while
	 * the record read back unchanged: the write may still land).
	 */
	char nonce[STORE_NONCE_LEN + 1];
	char pending[LEASE_PENDING_MAX][STORE_NONCE_LEN + 1];
	unsigned int npending;
};

/*
 * Claim a free number and push it.  0, or:
 *   -EBUSY     every number of the region is held (logged with when the
 *              first one frees); try again later
 *   -EAGAIN    every attempt lost its race; try again
 *   -EINTR     asked to stop while waiting for the clock
 *   -EMEDIUMTYPE  the region's layout record is not this host's layout
 *              (logged): a configuration error, nothing was written
 *   a store or device error (logged)
 */
int lease_claim(struct lease *l);

/*
 * Move valid_until forward in the store, then push it.  0, or:
 *   -ESTALE    the record is someone else's now: the generator's lease was
 *              revoked at once and l->held is false
 *   -EMEDIUMTYPE  the region's layout record changed to another layout
 *              (a cut-over): revoked likewise; one changed but still
 *              this host's layout is -ESTALE (claim again, above its new
 *              from_ms)
 *   a store error: nothing was pushed; the generator goes on minting up
 *              to the fence it holds, and stops there by itself
 */
int lease_renew(struct lease *l);

/*
 * Revoke in the generator, then write the last ms it returns as
 * valid_until, so the number is free at once.  0 or an error (logged);
 * the lease is not held afterwards either way.
 */
int lease_release(struct lease *l);

/*
 * At start: if the generator holds a lease of our region that the store
 * says is still ours (our owner and token, written under the layout record
 * as it is now), hold it again (the caller renews at once); otherwise
 * revoke it.  0 (check l->held), -EMEDIUMTYPE as for lease_claim (the
 * lease is revoked), or a store or device error.
 */
int lease_adopt(struct lease *l);

#endif /* IDGEND_LEASE_PROTOCOL_H */

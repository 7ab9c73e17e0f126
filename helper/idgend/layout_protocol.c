// SPDX-License-Identifier: GPL-2.0
/*
 * The layout protocol: the prefix's region width record and the region's
 * layout record, checked before a claim or an adoption, written when
 * missing, and changed by the explicit cut-over (layout_protocol.h).
 *
 * Its rule is R3 of Documentation/design.md section 7.1, with R2's
 * compare-and-swap and re-read for each write; the code below cites them
 * by label.  A layout record's from_ms bounds from below the floor of
 * every claim under it (R4, in lease_protocol.c), so no ID of the new
 * layout falls at or below a fence of the old one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "layout_protocol.h"
#include "lease_protocol.h"
#include "log.h"

static bool same_layout(const struct lease_layout *a,
			const struct store_layout *b)
{
	return a->region_bits == b->region_bits &&
		a->worker_bits == b->worker_bits &&
		a->seq_bits == b->seq_bits;
}

/*
 * R3: the prefix's region width record, created with region_bits if there
 * is none.  0 with *width_rev, -EMEDIUMTYPE when it holds another width
 * (logged: a configuration error), or a store error (logged).
 */
static int check_width(const struct lease_config *cfg,
		       const struct store_ops *store, void *ctx,
		       const struct lease_layout *me, int64_t *width_rev)
{
	struct store_width cur;
	int64_t rev;
	int err;

	err = store->width_get(ctx, &cur);
	if (!err && !cur.exists) {
		err = store->width_create(ctx, me->region_bits, &rev);
		if (!err) {
			log_notice("recorded the region width of every region under "
				   "this prefix, %u bits (layout %u/%u/%u)",
				   me->region_bits, me->region_bits,
				   me->worker_bits, me->seq_bits);
			*width_rev = rev;
			return 0;
		}
		/* Another host was first, or the outcome is unknown. */
		if (err == -ECANCELED || err == -ETIMEDOUT || err == -EPROTO)
			err = store->width_get(ctx, &cur);
	}
	if (err) {
		log_err("cannot read the prefix's region width record: %s",
			store->error(ctx));
		return err;
	}
	if (!cur.exists) {
		log_err("the prefix's region width record is still missing after "
			"writing it");
		return -EAGAIN;
	}
	if (!cur.valid) {
		log_err("the prefix's region width record is unreadable (%s); not "
			"claiming until it is repaired (idgend(8), LAYOUT)",
			store->error(ctx));
		return -EMEDIUMTYPE;
	}
	if (cur.region_bits != me->region_bits) {
		log_err("r%" PRIu32 ": every region under this prefix has %u region "
			"bits (the prefix's region width record), this host's "
			"layout %u/%u/%u has %u: not claiming, regions of different "
			"widths mint the same IDs. Use a layout with %u region bits "
			"(idgend(8), LAYOUT)", cfg->region, cur.region_bits,
			me->region_bits, me->worker_bits, me->seq_bits,
			me->region_bits, cur.region_bits);
		return -EMEDIUMTYPE;
	}
	*width_rev = cur.mod_revision;
	return 0;
}

/* At most this many records are named in a refusal. */
#define FAR_NAMED_MAX	10

/*
 * Name the worker records whose valid_until is above limit: the ones a
 * layout record's from_ms would wait for.  Every possible worker number
 * is listed (worker_bits is at most 16), whatever the layout that wrote it.
 */
static void name_far_records(const struct lease_config *cfg,
			     const struct store_ops *store, void *ctx,
			     uint64_t now, uint64_t limit)
{
	const uint32_t n = 1U << 16;
	struct store_record *rec = calloc(n, sizeof(*rec));
	uint32_t i, named = 0;

	if (!rec || store->list(ctx, cfg->region, rec, n)) {
		log_err("r%" PRIu32 ": cannot list the records responsible: %s",
			cfg->region, rec ? store->error(ctx) : "out of memory");
		free(rec);
		return;
	}
	for (i = 0; i < n; i++) {
		if (!rec[i].valid || rec[i].valid_until_ms <= limit)
			continue;
		if (named++ < FAR_NAMED_MAX)
			log_err("r%" PRIu32 "/w%" PRIu32 ": owner '%s', valid_until ms %"
				PRIu64 " (%" PRIu64 " s ahead of this clock)",
				cfg->region, i, rec[i].owner,
				rec[i].valid_until_ms,
				(rec[i].valid_until_ms - now) / 1000);
	}
	if (named > FAR_NAMED_MAX)
		log_err("r%" PRIu32 ": and %" PRIu32 " more", cfg->region,
			named - FAR_NAMED_MAX);
	free(rec);
}

/*
 * R3: write the region's layout record *next, whose mod_revision was
 * expect_rev (0: create it), with from_ms = the highest valid_until of
 * every worker record of the region, whatever its layout, read at the
 * store revision H, in one txn that also requires that no worker record
 * was written after H and that the region width record is still
 * width_rev.  Both the first layout record of a region and every cut-over
 * are written so: the region may hold leases of another layout (a
 * rolling upgrade from an idgend that wrote no layout record, a record
 * deleted by hand), and no ID of the new layout may fall at or below
 * their fences.
 *
 * from_ms is not carried forward from the record it replaces: records
 * are never deleted by idgend, and every ID ever minted in the region is
 * below the valid_until its worker record holds (a record's valid_until
 * never goes below a fence its holders minted under), so the listing
 * alone bounds them all.  Keeping max(old from_ms, listing) would add
 * nothing for a deleted record either (a claim of that number reads floor
 * 0 anyway: deleting records is never safe), and it would make a from_ms
 * set far ahead by mistake (a host whose clock jumped) permanent.  So a
 * from_ms far ahead can be lowered once the record responsible is.
 *
 * A from_ms more than lease_ms ahead of now is refused unless force:
 * the region would mint nothing until then.  0 with *rev, -ERANGE for
 * that refusal (logged, naming the records), -ECANCELED when a compare
 * failed (read again), or a store error.
 */
static int write_layout(const struct lease_config *cfg,
			const struct store_ops *store, void *ctx, uint64_t now,
			bool force, int64_t expect_rev, int64_t width_rev,
			struct store_layout *next, int64_t *rev)
{
	uint64_t max_until;
	uint32_t garbled;
	int64_t at;
	int err;

	err = store->region_scan(ctx, cfg->region, &max_until, &garbled, &at);
	if (err)
		return err;
	if (garbled)
		log_warn("r%" PRIu32 ": %" PRIu32 " worker records hold values "
			 "that are not leases; their fences are unknown "
			 "and not counted", cfg->region, garbled);
	next->from_ms = max_until;
	if (max_until > now + cfg->lease_ms) {
		struct store_layout cur;

		/*
		 * Creating the first record, and leases a lease_ms ahead:
		 * when daemons start together in a new region, those are the
		 * claims of hosts that read a layout record written since
		 * ours was found missing (their clocks a few ms ahead of
		 * this one).  Read it again rather than refuse.
		 */
		if (!expect_rev && !store->layout_get(ctx, cfg->region, &cur) &&
		    cur.exists)
			return -ECANCELED;
		if (!force) {
			log_err("r%" PRIu32 ": the layout %u/%u/%u would start at ms %"
				PRIu64 ", %" PRIu64 " s ahead of this clock (more than "
				"lease_ms): the region would mint nothing until then. "
				"Not written; the worker records responsible:",
				cfg->region, next->region_bits,
				next->worker_bits, next->seq_bits, max_until,
				(max_until - now) / 1000);
			name_far_records(cfg, store, ctx, now,
					 now + cfg->lease_ms);
			log_err("r%" PRIu32 ": stop or fix the hosts that hold them "
				"(a clock far ahead?), or write it anyway with "
				"idgend --cut-over-layout %u/%u/%u --force "
				"(idgend(8), LAYOUT)", cfg->region,
				next->region_bits, next->worker_bits,
				next->seq_bits);
			return -ERANGE;
		}
		log_warn("r%" PRIu32 ": --force: the layout starts at ms %" PRIu64
			 ", %" PRIu64 " s ahead of this clock", cfg->region,
			 max_until, (max_until - now) / 1000);
	}
	return store->layout_cas(ctx, cfg->region, expect_rev, at, width_rev,
				 next, rev);
}

/* How often a layout write may lose its race with lease writes. */
#define LAYOUT_TRIES	8

/*
 * R3, before a claim or an adoption and after a renewal found the layout
 * record changed (layout_protocol.h).
 */
int layout_check(const struct lease_config *cfg, const struct store_ops *store,
		 void *store_ctx, const struct clock_ops *clock, void *clock_ctx,
		 int64_t *layout_rev, uint64_t *from_ms)
{
	const struct lease_layout *me = &cfg->layout;
	struct store_layout cur, want = {
		.region_bits = me->region_bits,
		.worker_bits = me->worker_bits,
		.seq_bits = me->seq_bits,
	};
	int64_t rev, width_rev;
	int err, tries;

	for (tries = 0; tries < LAYOUT_TRIES; tries++) {
		err = check_width(cfg, store, store_ctx, me, &width_rev);
		if (err)
			return err;
		err = store->layout_get(store_ctx, cfg->region, &cur);
		if (err || cur.exists)
			break;
		/* R3: none yet; written with ours, as a cut-over writes. */
		err = write_layout(cfg, store, store_ctx, clock->now_ms(clock_ctx),
				   false, 0, width_rev, &want, &rev);
		if (!err) {
			log_notice("r%" PRIu32 ": recorded the region's layout, "
				   "%u/%u/%u (region/worker/sequence bits), from ms %"
				   PRIu64, cfg->region, me->region_bits,
				   me->worker_bits, me->seq_bits, want.from_ms);
			*layout_rev = rev;
			*from_ms = want.from_ms;
			return 0;
		}
		if (err == -ERANGE)
			return -EMEDIUMTYPE;	/* logged; the operator decides */
		/*
		 * Another host was first, a lease moved, or the outcome is
		 * unknown (R2): read it again.
		 */
		if (err != -ECANCELED && err != -ETIMEDOUT && err != -EPROTO)
			break;
	}
	if (err) {
		log_err("r%" PRIu32 ": cannot read the region's layout record: %s",
			cfg->region, store->error(store_ctx));
		return err;
	}
	if (!cur.exists) {
		log_err("r%" PRIu32 ": the region's layout record is still missing "
			"after writing it %d times", cfg->region, tries);
		return -EAGAIN;
	}
	if (!cur.valid) {
		log_err("r%" PRIu32 ": the region's layout record is unreadable "
			"(%s); not claiming until it is repaired (idgend "
			"--cut-over-layout)", cfg->region, store->error(store_ctx));
		return -EMEDIUMTYPE;
	}
	/* R3: a host of another layout never claims. */
	if (!same_layout(me, &cur)) {
		log_err("r%" PRIu32 ": the region's layout is %u/%u/%u (since ms %"
			PRIu64 "), this host's is %u/%u/%u: not claiming, the IDs "
			"could collide. Set layout = %u/%u/%u in idgend.conf, or cut "
			"the region over (idgend(8), LAYOUT)", cfg->region,
			cur.region_bits, cur.worker_bits, cur.seq_bits,
			cur.from_ms, me->region_bits, me->worker_bits,
			me->seq_bits, cur.region_bits, cur.worker_bits,
			cur.seq_bits);
		return -EMEDIUMTYPE;
	}
	*layout_rev = cur.mod_revision;
	*from_ms = cur.from_ms;
	return 0;
}

/* R3: the explicit cut-over (layout_protocol.h). */
int layout_cut_over(const struct lease_config *cfg,
		    const struct store_ops *store, void *ctx,
		    const struct clock_ops *clock, void *clock_ctx,
		    const struct lease_layout *want, bool force)
{
	struct store_layout cur, next = {
		.region_bits = want->region_bits,
		.worker_bits = want->worker_bits,
		.seq_bits = want->seq_bits,
	};
	int64_t rev, width_rev;
	uint64_t now;
	int err, tries;

	for (tries = 0; tries < LAYOUT_TRIES; tries++) {
		err = store->layout_get(ctx, cfg->region, &cur);
		if (err)
			goto fail;
		now = clock->now_ms(clock_ctx);
		if (cur.exists && cur.valid) {
			if (cur.region_bits != want->region_bits) {
				log_err("r%" PRIu32 ": a cut-over keeps region_bits (%u): "
					"the region bits are shared by every region, "
					"and regions of different widths overlap",
					cfg->region, cur.region_bits);
				return -EINVAL;
			}
			if (same_layout(want, &cur) &&
			    cur.from_ms <= now + cfg->lease_ms) {
				log_notice("r%" PRIu32 ": the layout is %u/%u/%u since ms %"
					   PRIu64 " already; nothing to do",
					   cfg->region, cur.region_bits,
					   cur.worker_bits, cur.seq_bits,
					   cur.from_ms);
				return 0;
			}
			if (same_layout(want, &cur))
				log_notice("r%" PRIu32 ": the layout is %u/%u/%u, but "
					   "from ms %" PRIu64 ", %" PRIu64 " s ahead: "
					   "writing it again from the worker records",
					   cfg->region, cur.region_bits,
					   cur.worker_bits, cur.seq_bits,
					   cur.from_ms, (cur.from_ms - now) / 1000);
		}
		err = check_width(cfg, store, ctx, want, &width_rev);
		if (err == -EMEDIUMTYPE)
			return -EINVAL;
		if (err)
			return err;
		err = write_layout(cfg, store, ctx, now, force,
				   cur.exists ? cur.mod_revision : 0, width_rev,
				   &next, &rev);
		if (err == -ECANCELED)
			continue;	/* a lease moved: list again */
		if (err == -ERANGE)
			return err;
		if (err)
			goto fail;
		log_notice("r%" PRIu32 ": layout cut over to %u/%u/%u, from ms %" PRIu64
			   ": every lease of the layout before ends by then, and "
			   "claims under the new one mint only above it (layout "
			   "record revision %" PRId64 ")", cfg->region,
			   next.region_bits, next.worker_bits, next.seq_bits,
			   next.from_ms, rev);
		return 0;
	}
	log_err("r%" PRIu32 ": the cut-over lost its race with lease writes %d "
		"times; try again", cfg->region, tries);
	return -EAGAIN;
fail:
	log_err("r%" PRIu32 ": cut-over failed: %s%s", cfg->region,
		store->error(ctx), err == -ETIMEDOUT ?
		" (its outcome is unknown: run it again to see)" : "");
	return err;
}

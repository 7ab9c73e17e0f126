// SPDX-License-Identifier: GPL-2.0
/*
 * The lease protocol: claim, renew, release, adopt, cut over
 * (lease_protocol.h).
 *
 * The rules R1-R7 are Documentation/design.md section 7.1; the model in
 * tests/model/ checks them.  The code below cites them by label.
 *
 * The generator enforces its fence by itself (F1, F5), so a daemon that
 * stops here at any point can never cause a duplicate.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "lease_protocol.h"
#include "log.h"

/* How often to say that we are still waiting for the clock. */
#define SYNC_LOG_EVERY_MS	60000
#define SYNC_POLL_MS		1000

static uint64_t now_ms(struct lease *l)
{
	return l->clock->now_ms(l->clock_ctx);
}

/* xorshift64: enough to spread claimers over the free numbers. */
static uint64_t next_random(struct lease *l)
{
	uint64_t x = l->rng ? l->rng : 0x9e3779b97f4a7c15ULL;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	l->rng = x;
	return x;
}

static const char *store_error(struct lease *l)
{
	return l->store->error(l->store_ctx);
}

/* R1: our owner and our token; a record without a token is nobody's. */
static bool is_ours(const struct lease *l, const struct store_record *r)
{
	return r->exists && r->valid && r->token[0] && l->cfg->token &&
		!strcmp(r->token, l->cfg->token) &&
		!strcmp(r->owner, l->cfg->owner);
}

/* R1: a nonce of the write in flight or of one not settled yet. */
static bool is_our_nonce(const struct lease *l, const char *nonce)
{
	unsigned int i;

	if (!nonce[0])
		return false;
	if (!strcmp(nonce, l->nonce))
		return true;
	for (i = 0; i < l->npending; i++)
		if (!strcmp(nonce, l->pending[i]))
			return true;
	return false;
}

/* R1, while we hold a lease: our owner, our token and one of our writes. */
static bool is_our_write(const struct lease *l, const struct store_record *r)
{
	return is_ours(l, r) && is_our_nonce(l, r->nonce);
}

/* The write in flight may still land: remember its nonce (R5). */
static void keep_pending(struct lease *l)
{
	if (l->npending == LEASE_PENDING_MAX) {
		/* The oldest is forgotten: at worst a false loss, never a
		 * false win. */
		memmove(l->pending[0], l->pending[1],
			sizeof(l->pending[0]) * (LEASE_PENDING_MAX - 1));
		l->npending--;
	}
	memcpy(l->pending[l->npending++], l->nonce, sizeof(l->nonce));
}

/* A write of ours succeeded, or a record was taken up: all settled. */
static void settle_pending(struct lease *l)
{
	l->npending = 0;
}

/*
 * A record with our owner and our token that none of our writes made:
 * another idgend runs with this instance's owner token.
 */
static void say_token_twin(const struct lease *l, const struct store_record *r)
{
	log_alert("r%" PRIu32 "/w%" PRIu32 " holds this host's owner '%s' and its "
		  "owner token, but write %s is not one of this instance's: "
		  "another idgend shares this host's owner token (a runtime "
		  "directory on persistent storage, a container image with its "
		  "/run, a cloned VM); this instance does not take the record "
		  "as its own. Give every host its own owner in idgend.conf and "
		  "its runtime directory on a tmpfs made at boot",
		  l->cfg->region, r->worker, r->owner,
		  r->nonce[0] ? r->nonce : "(none)");
}

/*
 * A record that names our owner but is not ours: another host with the
 * same owner name (a cloned image), or a record an older idgend wrote.
 */
static void say_if_twin(const struct lease *l, const struct store_record *r)
{
	if (!r->exists || !r->valid || strcmp(r->owner, l->cfg->owner) ||
	    is_ours(l, r))
		return;
	if (r->token[0])
		log_alert("r%" PRIu32 "/w%" PRIu32 " names this host's owner '%s' "
			  "with another instance's token: two hosts share the "
			  "owner name '%s' (cloned from one image?); this host "
			  "does not take the record as its own. Give every host "
			  "its own owner in idgend.conf", l->cfg->region,
			  r->worker, r->owner, r->owner);
	else
		log_warn("r%" PRIu32 "/w%" PRIu32 " names this host's owner '%s' but "
			 "has no owner token (an older idgend wrote it): not "
			 "taken as this instance's", l->cfg->region, r->worker,
			 r->owner);
}

/*
 * A fresh write nonce in l->nonce, from getrandom(): a cloned VM's kernel
 * reseeds it, where a copy of this process's own generator would repeat.
 */
static void new_nonce(struct lease *l)
{
	uint64_t x;

	if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != sizeof(x))
		x = next_random(l) ^ now_ms(l);
	snprintf(l->nonce, sizeof(l->nonce), "%016" PRIx64, x);
}

static int write_record(struct lease *l, uint32_t worker, int64_t rev,
			uint64_t until, int64_t *new_rev,
			struct store_record *now)
{
	struct store_value v = {
		.owner = l->cfg->owner,
		.token = l->cfg->token,
		.nonce = l->nonce,
		.valid_until_ms = until,
	};

	new_nonce(l);
	return l->store->cas(l->store_ctx, l->cfg->region, worker, rev,
			     l->layout_rev, &v, new_rev, now);
}

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
 * R3: read the region's layout record (write it with ours if there is
 * none, as write_layout() does) and check it is ours, and the prefix's
 * region width.  Sets l->layout_rev and l->layout_from_ms.
 */
static int check_layout(struct lease *l)
{
	const struct lease_layout *me = &l->cfg->layout;
	struct store_layout cur, want = {
		.region_bits = me->region_bits,
		.worker_bits = me->worker_bits,
		.seq_bits = me->seq_bits,
	};
	int64_t rev, width_rev;
	int err, tries;

	for (tries = 0; tries < LAYOUT_TRIES; tries++) {
		err = check_width(l->cfg, l->store, l->store_ctx, me, &width_rev);
		if (err)
			return err;
		err = l->store->layout_get(l->store_ctx, l->cfg->region, &cur);
		if (err || cur.exists)
			break;
		err = write_layout(l->cfg, l->store, l->store_ctx, now_ms(l),
				   false, 0, width_rev, &want, &rev);
		if (!err) {
			log_notice("r%" PRIu32 ": recorded the region's layout, "
				   "%u/%u/%u (region/worker/sequence bits), from ms %"
				   PRIu64, l->cfg->region, me->region_bits,
				   me->worker_bits, me->seq_bits, want.from_ms);
			l->layout_rev = rev;
			l->layout_from_ms = want.from_ms;
			return 0;
		}
		if (err == -ERANGE)
			return -EMEDIUMTYPE;	/* logged; the operator decides */
		/*
		 * Another host was first, a lease moved, or the outcome is
		 * unknown: read it again.
		 */
		if (err != -ECANCELED && err != -ETIMEDOUT && err != -EPROTO)
			break;
	}
	if (err) {
		log_err("r%" PRIu32 ": cannot read the region's layout record: %s",
			l->cfg->region, store_error(l));
		return err;
	}
	if (!cur.exists) {
		log_err("r%" PRIu32 ": the region's layout record is still missing "
			"after writing it %d times", l->cfg->region, tries);
		return -EAGAIN;
	}
	if (!cur.valid) {
		log_err("r%" PRIu32 ": the region's layout record is unreadable "
			"(%s); not claiming until it is repaired (idgend "
			"--cut-over-layout)", l->cfg->region, store_error(l));
		return -EMEDIUMTYPE;
	}
	if (!same_layout(me, &cur)) {
		log_err("r%" PRIu32 ": the region's layout is %u/%u/%u (since ms %"
			PRIu64 "), this host's is %u/%u/%u: not claiming, the IDs "
			"could collide. Set layout = %u/%u/%u in idgend.conf, or cut "
			"the region over (idgend(8), LAYOUT)", l->cfg->region,
			cur.region_bits, cur.worker_bits, cur.seq_bits,
			cur.from_ms, me->region_bits, me->worker_bits,
			me->seq_bits, cur.region_bits, cur.worker_bits,
			cur.seq_bits);
		return -EMEDIUMTYPE;
	}
	l->layout_rev = cur.mod_revision;
	l->layout_from_ms = cur.from_ms;
	return 0;
}

static int wait_for_sync(struct lease *l)
{
	uint64_t waited = 0;

	if (!l->cfg->require_sync)
		return 0;
	while (!l->clock->synced(l->clock_ctx)) {
		if (waited % SYNC_LOG_EVERY_MS == 0)
			log_warn("waiting for the wall clock to be synchronised "
				 "(adjtimex reports it unsynchronised: is NTP running?)");
		if (l->clock->sleep_ms(l->clock_ctx, SYNC_POLL_MS))
			return -EINTR;
		waited += SYNC_POLL_MS;
	}
	if (waited)
		log_info("the wall clock is synchronised");
	return 0;
}

/*
 * Give back a claim that was never pushed: nothing was minted under it, so
 * its valid_until goes back to the floor it was taken with.
 */
static void unclaim(struct lease *l, uint32_t worker, int64_t rev,
		    uint64_t floor_ms)
{
	int64_t new_rev;
	int err;

	err = write_record(l, worker, rev, floor_ms, &new_rev, NULL);
	if (err)
		log_warn("r%" PRIu32 "/w%" PRIu32 ": could not give back the unused claim "
			 "(%s); it frees itself at its valid_until",
			 l->cfg->region, worker, store_error(l));
}

/* Choose among the free records, at random: claimers spread out. */
static int pick_free(struct lease *l, const struct store_record *rec,
		     uint64_t now)
{
	uint32_t i, nfree = 0, garbled = 0, pick;
	uint64_t first_free = UINT64_MAX;

	for (i = 0; i < l->cfg->workers; i++) {
		if (rec[i].exists && !rec[i].valid)
			garbled++;
		else if (!rec[i].exists || rec[i].valid_until_ms <= now)
			nfree++;
		else if (rec[i].valid_until_ms < first_free)
			first_free = rec[i].valid_until_ms;
	}
	if (garbled)
		log_warn("r%" PRIu32 ": %" PRIu32 " records hold values that are not "
			 "leases; they count as taken", l->cfg->region, garbled);
	if (!nfree) {
		if (first_free == UINT64_MAX)
			log_err("r%" PRIu32 ": no free worker number: all %" PRIu32
				" are held or unreadable", l->cfg->region,
				l->cfg->workers);
		else
			log_err("r%" PRIu32 ": no free worker number: all %" PRIu32
				" are held; the first frees at ms %" PRIu64 " (in %" PRIu64 " s)",
				l->cfg->region, l->cfg->workers, first_free,
				(first_free - now + 999) / 1000);
		return -EBUSY;
	}
	/*
	 * A free number this owner held last (a reboot, a restart after a
	 * release) is taken back first: the host keeps its number across
	 * boots, and its floor is its own last valid_until.  Any other is
	 * picked at random, so that hosts claiming at once rarely race for
	 * one.  Two hosts that share an owner name both prefer it; the
	 * claim's compare-and-swap lets one have it.
	 */
	for (i = 0; i < l->cfg->workers; i++)
		if (rec[i].exists && rec[i].valid && rec[i].valid_until_ms <= now &&
		    !strcmp(rec[i].owner, l->cfg->owner))
			return i;
	pick = next_random(l) % nfree;
	for (i = 0; i < l->cfg->workers; i++) {
		if (rec[i].exists && (!rec[i].valid || rec[i].valid_until_ms > now))
			continue;
		if (!pick--)
			return i;
	}
	return -EBUSY;	/* not reached */
}

/*
 * A claiming write timed out: read the record back.  Returns 0 and sets
 * *new_rev if our write landed, -ECANCELED if it did not (or another
 * claimer's did), or the read's error.
 */
static int claim_outcome(struct lease *l, uint32_t worker, int64_t old_rev,
			 uint64_t until, int64_t *new_rev)
{
	struct store_record cur;
	int err;

	err = l->store->get(l->store_ctx, l->cfg->region, worker, &cur);
	if (err)
		return err;
	if (cur.mod_revision != old_rev && is_our_write(l, &cur) &&
	    cur.valid_until_ms == until) {
		*new_rev = cur.mod_revision;
		return 0;
	}
	if (cur.mod_revision == old_rev)
		keep_pending(l);	/* it may land yet */
	return -ECANCELED;
}

/* Wait until the clock has passed the floor, if that takes little time. */
static int wait_past_floor(struct lease *l, uint64_t floor_ms)
{
	uint64_t now = now_ms(l);

	if (now > floor_ms)
		return 0;
	if (floor_ms - now >= l->cfg->floor_wait_ms)
		return -EAGAIN;
	if (l->clock->sleep_ms(l->clock_ctx, floor_ms - now + 1))
		return -EINTR;
	return now_ms(l) > floor_ms ? 0 : -EAGAIN;
}

int lease_claim(struct lease *l)
{
	struct store_record *rec;
	unsigned int attempt;
	int err = -EAGAIN;

	rec = calloc(l->cfg->workers, sizeof(*rec));
	if (!rec)
		return -ENOMEM;

	for (attempt = 0; attempt < l->cfg->claim_attempts; attempt++) {
		struct store_record now_rec;
		uint64_t now, floor_ms, until;
		int64_t new_rev;
		int w;

		err = wait_for_sync(l);
		if (err)
			break;
		err = check_layout(l);
		if (err)
			break;
		err = l->store->list(l->store_ctx, l->cfg->region, rec,
				     l->cfg->workers);
		if (err) {
			log_err("r%" PRIu32 ": cannot list the worker numbers: %s",
				l->cfg->region, store_error(l));
			break;
		}
		now = now_ms(l);
		if (l->layout_from_ms >= now + l->cfg->floor_wait_ms) {
			log_warn("r%" PRIu32 ": the region's layout takes effect at ms %"
				 PRIu64 " (in %" PRIu64 " s), after the last lease of "
				 "the layout before it; claiming then",
				 l->cfg->region, l->layout_from_ms,
				 (l->layout_from_ms - now + 999) / 1000);
			err = -EBUSY;
			break;
		}
		w = pick_free(l, rec, now);
		if (w < 0) {
			err = w;
			break;
		}
		/* R4 */
		floor_ms = rec[w].exists ? rec[w].valid_until_ms : 0;
		if (floor_ms < l->layout_from_ms)
			floor_ms = l->layout_from_ms;
		until = now + l->cfg->lease_ms;

		memset(&now_rec, 0, sizeof(now_rec));
		err = write_record(l, w, rec[w].mod_revision, until, &new_rev,
				   &now_rec);
		/*
		 * A garbled answer is as unknown as a lost one; and a
		 * request resent by the transport fails its compare against
		 * our own first copy.
		 */
		if (err == -ETIMEDOUT || err == -EPROTO) {
			log_warn("r%" PRIu32 "/w%d: the claiming write's outcome is unknown "
				 "(%s); reading it back", l->cfg->region, w,
				 store_error(l));
			err = claim_outcome(l, w, rec[w].mod_revision, until,
					    &new_rev);
		} else if (err == -ECANCELED && is_our_write(l, &now_rec) &&
			   now_rec.valid_until_ms == until) {
			new_rev = now_rec.mod_revision;
			err = 0;
		}
		if (err == -ECANCELED) {
			if (now_rec.layout_rev != STORE_ANY_LAYOUT &&
			    now_rec.layout_rev != l->layout_rev)
				log_warn("r%" PRIu32 ": the region's layout record changed "
					 "while claiming; reading it again",
					 l->cfg->region);
			else
				log_info("r%" PRIu32 "/w%d: another claimer was first; "
					 "trying again", l->cfg->region, w);
			if (is_ours(l, &now_rec))
				say_token_twin(l, &now_rec);
			else
				say_if_twin(l, &now_rec);
			err = -EAGAIN;
			continue;
		}
		if (err) {
			log_err("r%" PRIu32 "/w%d: claim failed: %s", l->cfg->region,
				w, store_error(l));
			break;
		}

		/*
		 * Ours in the store.  The clock must be trusted, and past
		 * the floor, before the generator may mint above it.
		 */
		if (l->cfg->require_sync && !l->clock->synced(l->clock_ctx)) {
			log_warn("r%" PRIu32 "/w%d: the clock lost its synchronisation "
				 "while claiming; giving the number back",
				 l->cfg->region, w);
			unclaim(l, w, new_rev, floor_ms);
			err = -EAGAIN;
			continue;
		}
		err = wait_past_floor(l, floor_ms);
		if (err) {
			if (err == -EAGAIN)
				log_warn("r%" PRIu32 "/w%d: floor ms %" PRIu64 " is %" PRIu64
					 " ms ahead of this clock; trying another number",
					 l->cfg->region, w, floor_ms,
					 floor_ms - now_ms(l));
			unclaim(l, w, new_rev, floor_ms);
			if (err == -EINTR)
				break;
			continue;
		}
		err = l->dev->ops->push(l->dev->ctx, l->cfg->region, w,
					floor_ms, until,
					l->clock->synced(l->clock_ctx));
		if (err) {
			log_err("r%" PRIu32 "/w%d: the generator refused the lease: %s",
				l->cfg->region, w, strerror(-err));
			unclaim(l, w, new_rev, floor_ms);
			break;
		}
		l->held = true;
		l->worker = w;
		l->rev = new_rev;
		settle_pending(l);
		l->floor_ms = floor_ms;
		l->confirmed_ms = until;
		l->pushed_ms = until;
		log_notice("lease claimed: r%" PRIu32 "/w%d, floor ms %" PRIu64
			   ", valid until ms %" PRIu64 " (%" PRIu64 " s), revision %" PRId64,
			   l->cfg->region, w, floor_ms, until,
			   l->cfg->lease_ms / 1000, new_rev);
		break;
	}
	free(rec);
	if (err == -EAGAIN)
		log_warn("r%" PRIu32 ": no claim after %u attempts; trying again later",
			 l->cfg->region, l->cfg->claim_attempts);
	return err;
}

/* The record is someone else's: stop minting under it at once. */
static int lost(struct lease *l, const struct store_record *cur)
{
	uint64_t last = 0;
	int err;

	say_if_twin(l, cur);
	err = l->dev->ops->revoke(l->dev->ctx, &last);
	l->held = false;
	settle_pending(l);
	if (err) {
		log_alert("lease lost: r%" PRIu32 "/w%" PRIu32 " is held by '%s' until ms %"
			  PRIu64 ", and revoking it failed (%s); the generator stops at "
			  "its fence, ms %" PRIu64, l->cfg->region, l->worker,
			  cur->valid ? cur->owner : "?", cur->valid_until_ms,
			  strerror(-err), l->pushed_ms);
		return -ESTALE;
	}
	log_alert("lease lost: r%" PRIu32 "/w%" PRIu32 " is held by '%s' until ms %" PRIu64
		  "; revoked, last ms %" PRIu64, l->cfg->region, l->worker,
		  cur->valid ? cur->owner : "(unreadable)", cur->valid_until_ms,
		  last);
	return -ESTALE;
}

/*
 * The layout record changed under our lease (R5): a cut-over, or the
 * record deleted and written again.  Stop at once, then read it again: if
 * it still is this host's layout, the lease is claimed anew above its new
 * from_ms (-ESTALE); if it is not, -EMEDIUMTYPE (a configuration error,
 * logged by check_layout() with both layouts).
 */
static int lost_layout(struct lease *l)
{
	uint64_t last = 0;
	int err, rerr;

	err = l->dev->ops->revoke(l->dev->ctx, &last);
	l->held = false;
	settle_pending(l);
	if (err)
		log_alert("lease lost: r%" PRIu32 "/w%" PRIu32 ": the region's layout "
			  "record changed (a cut-over, or the record written "
			  "again), and revoking failed (%s); the generator stops "
			  "at its fence, ms %" PRIu64 "; reading the record again",
			  l->cfg->region, l->worker, strerror(-err),
			  l->pushed_ms);
	else
		log_alert("lease lost: r%" PRIu32 "/w%" PRIu32 ": the region's layout "
			  "record changed (a cut-over, or the record written "
			  "again): revoked, last ms %" PRIu64 "; reading the record "
			  "again", l->cfg->region, l->worker, last);
	rerr = check_layout(l);
	if (rerr == -EMEDIUMTYPE)
		return rerr;
	if (!rerr)
		log_notice("r%" PRIu32 ": the region's layout is still this host's, "
			   "%u/%u/%u, from ms %" PRIu64 ": claiming anew above it",
			   l->cfg->region, l->cfg->layout.region_bits,
			   l->cfg->layout.worker_bits, l->cfg->layout.seq_bits,
			   l->layout_from_ms);
	return -ESTALE;
}

/*
 * Push a fence the store confirmed.  Should the generator no longer hold
 * our lease (revoked behind our back), this sets it anew, and the module
 * starts it above every ms it ever used (G2): no floor to fix up here.
 * It cannot have been reloaded under us: our open file pins it.
 */
static int push_confirmed(struct lease *l)
{
	int err;

	err = l->dev->ops->push(l->dev->ctx, l->cfg->region, l->worker,
				l->floor_ms, l->confirmed_ms,
				l->clock->synced(l->clock_ctx));
	if (err) {
		log_err("r%" PRIu32 "/w%" PRIu32 ": the generator refused the renewal (%s); "
			"it stops at ms %" PRIu64, l->cfg->region, l->worker,
			strerror(-err), l->pushed_ms);
		return err;
	}
	l->pushed_ms = l->confirmed_ms;
	return 0;
}

int lease_renew(struct lease *l)
{
	struct store_record cur;
	uint64_t until;
	int64_t new_rev;
	int err, tries;

	if (!l->held)
		return -ENOKEY;
	for (tries = 0; tries < 2; tries++) {
		until = now_ms(l) + l->cfg->lease_ms;
		if (until < l->confirmed_ms)
			until = l->confirmed_ms;	/* never back */
		memset(&cur, 0, sizeof(cur));
		err = write_record(l, l->worker, l->rev, until, &new_rev, &cur);
		if (err == -ETIMEDOUT || err == -EPROTO) {
			log_warn("r%" PRIu32 "/w%" PRIu32 ": the renewal's outcome is unknown "
				 "(%s); reading it back", l->cfg->region,
				 l->worker, store_error(l));
			err = l->store->get(l->store_ctx, l->cfg->region,
					    l->worker, &cur);
			if (err) {
				keep_pending(l);	/* it may land yet */
				goto unreachable;
			}
			if (cur.mod_revision == l->rev) {
				keep_pending(l);	/* not yet applied */
				return -ETIMEDOUT;
			}
			/*
			 * Changed: if ours, by our own write, which passed
			 * the layout compare and so came before any cut-over.
			 */
			cur.layout_rev = l->layout_rev;
			err = -ECANCELED;
		}
		if (err == -ECANCELED) {
			if (cur.layout_rev != STORE_ANY_LAYOUT &&
			    cur.layout_rev != l->layout_rev)
				return lost_layout(l);
			if (!is_ours(l, &cur))
				return lost(l, &cur);
			if (!is_our_write(l, &cur)) {
				say_token_twin(l, &cur);
				return lost(l, &cur);
			}
			/*
			 * Still ours at another revision: a write of ours
			 * whose answer was lost.  Take the record as the
			 * store has it; push only what it says.
			 */
			l->rev = cur.mod_revision;
			settle_pending(l);
			if (cur.valid_until_ms < l->pushed_ms) {
				log_alert("r%" PRIu32 "/w%" PRIu32 ": the store holds valid_until "
					  "ms %" PRIu64 ", below the fence pushed (ms %" PRIu64
					  "); revoking", l->cfg->region, l->worker,
					  cur.valid_until_ms, l->pushed_ms);
				return lost(l, &cur);
			}
			l->confirmed_ms = cur.valid_until_ms;
			if (cur.valid_until_ms == until)
				break;
			continue;
		}
		if (err)
			goto unreachable;
		l->rev = new_rev;
		l->confirmed_ms = until;
		settle_pending(l);
		break;
	}
	if (tries == 2)
		return -EAGAIN;
	err = push_confirmed(l);
	if (!err)
		log_info("lease renewed: r%" PRIu32 "/w%" PRIu32 " valid until ms %" PRIu64
			 ", revision %" PRId64, l->cfg->region, l->worker,
			 l->pushed_ms, l->rev);
	return err;

unreachable:
	{
		uint64_t now = now_ms(l);

		if (now < l->pushed_ms)
			log_warn("r%" PRIu32 "/w%" PRIu32 ": renewal failed (%s); minting "
				 "goes on until the fence, ms %" PRIu64 " (in %" PRIu64 " s)",
				 l->cfg->region, l->worker, store_error(l),
				 l->pushed_ms, (l->pushed_ms - now) / 1000);
		else
			log_err("r%" PRIu32 "/w%" PRIu32 ": renewal failed (%s); the "
				"fence, ms %" PRIu64 ", has passed: not minting",
				l->cfg->region, l->worker, store_error(l),
				l->pushed_ms);
	}
	return err;
}

/*
 * Where the number frees when the release could not write it back: at
 * the valid_until the store holds, which is the one confirmed to us
 * unless a renewal whose answer was lost has landed since (or lands yet).
 */
static void say_frees_at(struct lease *l, const struct store_record *cur)
{
	if (cur && cur->exists && cur->valid)
		log_warn("r%" PRIu32 "/w%" PRIu32 ": the store holds valid_until ms %"
			 PRIu64 " for '%s': the number frees then",
			 l->cfg->region, l->worker, cur->valid_until_ms,
			 cur->owner);
	else if (l->npending)
		log_warn("r%" PRIu32 "/w%" PRIu32 ": the number frees at the "
			 "valid_until the store holds: ms %" PRIu64 ", or later if "
			 "a renewal whose answer was lost landed", l->cfg->region,
			 l->worker, l->confirmed_ms);
	else
		log_warn("r%" PRIu32 "/w%" PRIu32 ": the number frees at the "
			 "valid_until the store holds, ms %" PRIu64, l->cfg->region,
			 l->worker, l->confirmed_ms);
}

int lease_release(struct lease *l)
{
	struct store_record cur;
	uint64_t last = 0;
	int64_t new_rev;
	int err, tries;

	if (!l->held)
		return 0;
	l->held = false;
	err = l->dev->ops->revoke(l->dev->ctx, &last);
	if (err) {
		/* Unknown what was minted: the record keeps its fence. */
		log_err("r%" PRIu32 "/w%" PRIu32 ": revoke failed (%s)",
			l->cfg->region, l->worker, strerror(-err));
		say_frees_at(l, NULL);
		return err;
	}
	if (last >= l->confirmed_ms) {
		/* The generator never mints at the fence: not reached. */
		log_err("r%" PRIu32 "/w%" PRIu32 ": revoke returned last ms %" PRIu64
			" at or past the fence", l->cfg->region, l->worker, last);
		say_frees_at(l, NULL);
		return -EPROTO;
	}
	for (tries = 0; tries < 2; tries++) {
		memset(&cur, 0, sizeof(cur));
		err = write_record(l, l->worker, l->rev, last, &new_rev, &cur);
		if (err == -ETIMEDOUT &&
		    !l->store->get(l->store_ctx, l->cfg->region, l->worker, &cur) &&
		    is_our_write(l, &cur) && cur.valid_until_ms == last)
			err = 0;
		/*
		 * Our own write at another revision: this one, resent by
		 * the transport, or a renewal whose answer was lost, landed
		 * late (write over it).
		 */
		if (err == -ECANCELED && is_our_write(l, &cur)) {
			if (cur.valid_until_ms == last) {
				err = 0;
				break;
			}
			l->rev = cur.mod_revision;
			continue;
		}
		break;
	}
	if (err) {
		log_warn("lease revoked: r%" PRIu32 "/w%" PRIu32 ", last ms %" PRIu64
			 "; writing it back failed (%s)", l->cfg->region,
			 l->worker, last, store_error(l));
		say_frees_at(l, err == -ECANCELED ? &cur : NULL);
		settle_pending(l);
		return err;
	}
	settle_pending(l);
	log_notice("lease released: r%" PRIu32 "/w%" PRIu32 ", last ms %" PRIu64
		   "; the number is free", l->cfg->region, l->worker, last);
	return 0;
}

/* Revoke a lease the generator holds that we do not keep, saying why. */
static int adopt_refused(struct lease *l, const struct idgen_device_state *h,
			 const char *why)
{
	uint64_t last = 0;
	int err;

	err = l->dev->ops->revoke(l->dev->ctx, &last);
	log_warn("the generator held r%" PRIu32 "/w%" PRIu32 " until ms %" PRIu64
		 ", which %s: %s", h->region, h->worker, h->valid_until_ms, why,
		 err ? strerror(-err) : "revoked");
	return err;
}

int lease_adopt(struct lease *l)
{
	const struct lease_layout *me = &l->cfg->layout;
	struct store_record cur;
	struct idgen_device_state h;
	char why[STORE_OWNER_MAX + 128];
	int err;

	err = l->dev->ops->held(l->dev->ctx, &h);
	if (err) {
		log_err("cannot read the generator's state: %s", strerror(-err));
		return err;
	}
	if (!device_leased(&h))
		return 0;
	if (h.region != l->cfg->region || h.worker >= l->cfg->workers ||
	    h.region_bits != me->region_bits || h.worker_bits != me->worker_bits) {
		snprintf(why, sizeof(why), "is outside region %" PRIu32 " and "
			 "layout %u/%u/%u of this configuration", l->cfg->region,
			 me->region_bits, me->worker_bits, me->seq_bits);
		return adopt_refused(l, &h, why);
	}
	err = check_layout(l);
	if (err == -EMEDIUMTYPE) {
		adopt_refused(l, &h, "is of a layout the region no longer has");
		return err;
	}
	if (err)
		return err;
	err = l->store->get(l->store_ctx, h.region, h.worker, &cur);
	if (err) {
		log_err("r%" PRIu32 "/w%" PRIu32 ": cannot read the record of the lease "
			"the generator holds: %s", h.region, h.worker,
			store_error(l));
		return err;
	}
	if (!is_ours(l, &cur)) {
		if (cur.valid && cur.token[0] &&
		    !strcmp(cur.owner, l->cfg->owner) &&
		    cur.valid_until_ms == h.valid_until_ms) {
			/*
			 * Exactly the fence the generator holds: most likely
			 * this host's own idgend before the runtime directory
			 * (and its owner token) was lost; but another host
			 * with this owner name cannot be ruled out.
			 */
			log_warn("r%" PRIu32 "/w%" PRIu32 " names this host's owner "
				 "'%s' with another owner token, at exactly the fence "
				 "the generator holds: this host's own idgend before "
				 "its runtime directory (with the owner token) was "
				 "lost, or another host with the same owner name; not "
				 "taken as this instance's", h.region, h.worker,
				 cur.owner);
		} else {
			say_if_twin(l, &cur);
		}
		snprintf(why, sizeof(why), "the store gives to '%s' until ms %" PRIu64
			 "%s", cur.valid ? cur.owner : "(nobody)",
			 cur.valid_until_ms,
			 cur.valid && !strcmp(cur.owner, l->cfg->owner) ?
			 " with another token" : "");
		return adopt_refused(l, &h, why);
	}
	if (cur.valid_until_ms < h.valid_until_ms)
		return adopt_refused(l, &h, "the store holds to a lower fence");
	if (cur.valid_until_ms > h.valid_until_ms) {
		snprintf(why, sizeof(why), "the store holds to a later fence, ms %"
			 PRIu64 ": a renewal of this host's that was never pushed, "
			 "or another idgend with this host's owner token (R7)",
			 cur.valid_until_ms);
		return adopt_refused(l, &h, why);
	}
	/* R7: written before the layout record was, it is of an older era. */
	if (cur.mod_revision <= l->layout_rev)
		return adopt_refused(l, &h, "was written before the region's "
				     "layout record last changed");
	l->held = true;
	l->worker = h.worker;
	l->rev = cur.mod_revision;
	l->floor_ms = h.floor_ms;
	l->confirmed_ms = cur.valid_until_ms;
	l->pushed_ms = h.valid_until_ms;
	log_notice("lease adopted: r%" PRIu32 "/w%" PRIu32 ", valid until ms %" PRIu64
		   ", revision %" PRId64, h.region, h.worker, cur.valid_until_ms,
		   cur.mod_revision);
	return 0;
}

int lease_cut_over(const struct lease_config *cfg,
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

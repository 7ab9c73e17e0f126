// SPDX-License-Identifier: GPL-2.0
/*
 * The lease protocol: claim, renew, release, adopt (see lease.h).
 *
 * Every write to the store is a compare-and-swap on the record's revision,
 * and a write whose outcome is unknown is followed by a read before any
 * decision.  The generator is told a fence only after the store confirmed
 * it; it enforces that fence by itself, so a daemon that stops here at any
 * point can never cause a duplicate.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lease.h"
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

static bool is_ours(const struct lease *l, const struct store_record *r)
{
	return r->exists && r->valid && !strcmp(r->owner, l->cfg->owner);
}

static const char *store_error(struct lease *l)
{
	return l->store->error(l->store_ctx);
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

	err = l->store->cas(l->store_ctx, l->cfg->region, worker, rev,
			    l->cfg->owner, floor_ms, &new_rev, NULL);
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
	if (cur.mod_revision != old_rev && is_ours(l, &cur) &&
	    cur.valid_until_ms == until) {
		*new_rev = cur.mod_revision;
		return 0;
	}
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
		err = l->store->list(l->store_ctx, l->cfg->region, rec,
				     l->cfg->workers);
		if (err) {
			log_err("r%" PRIu32 ": cannot list the worker numbers: %s",
				l->cfg->region, store_error(l));
			break;
		}
		now = now_ms(l);
		w = pick_free(l, rec, now);
		if (w < 0) {
			err = w;
			break;
		}
		floor_ms = rec[w].exists ? rec[w].valid_until_ms : 0;
		until = now + l->cfg->lease_ms;

		err = l->store->cas(l->store_ctx, l->cfg->region, w,
				    rec[w].mod_revision, l->cfg->owner, until,
				    &new_rev, &now_rec);
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
		} else if (err == -ECANCELED && is_ours(l, &now_rec) &&
			   now_rec.valid_until_ms == until) {
			new_rev = now_rec.mod_revision;
			err = 0;
		}
		if (err == -ECANCELED) {
			log_info("r%" PRIu32 "/w%d: another claimer was first; trying again",
				 l->cfg->region, w);
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

	err = l->dev->ops->revoke(l->dev->ctx, &last);
	l->held = false;
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
		err = l->store->cas(l->store_ctx, l->cfg->region, l->worker,
				    l->rev, l->cfg->owner, until, &new_rev, &cur);
		if (err == -ETIMEDOUT || err == -EPROTO) {
			log_warn("r%" PRIu32 "/w%" PRIu32 ": the renewal's outcome is unknown "
				 "(%s); reading it back", l->cfg->region,
				 l->worker, store_error(l));
			err = l->store->get(l->store_ctx, l->cfg->region,
					    l->worker, &cur);
			if (err)
				goto unreachable;
			if (cur.mod_revision == l->rev)
				return -ETIMEDOUT;	/* not applied */
			err = -ECANCELED;
		}
		if (err == -ECANCELED) {
			if (!is_ours(l, &cur))
				return lost(l, &cur);
			/*
			 * Still ours at another revision: a write of ours
			 * whose answer was lost.  Take the record as the
			 * store has it; push only what it says.
			 */
			l->rev = cur.mod_revision;
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

int lease_release(struct lease *l)
{
	struct store_record cur;
	uint64_t last = 0;
	int64_t new_rev;
	int err;

	if (!l->held)
		return 0;
	l->held = false;
	err = l->dev->ops->revoke(l->dev->ctx, &last);
	if (err) {
		/* Unknown what was minted: the record keeps its fence. */
		log_err("r%" PRIu32 "/w%" PRIu32 ": revoke failed (%s); the number "
			"frees at ms %" PRIu64, l->cfg->region, l->worker,
			strerror(-err), l->confirmed_ms);
		return err;
	}
	if (last >= l->confirmed_ms) {
		/* The generator never mints at the fence: not reached. */
		log_err("r%" PRIu32 "/w%" PRIu32 ": revoke returned last ms %" PRIu64
			" at or past the fence; the number frees at ms %" PRIu64,
			l->cfg->region, l->worker, last, l->confirmed_ms);
		return -EPROTO;
	}
	err = l->store->cas(l->store_ctx, l->cfg->region, l->worker, l->rev,
			    l->cfg->owner, last, &new_rev, &cur);
	if (err == -ETIMEDOUT &&
	    !l->store->get(l->store_ctx, l->cfg->region, l->worker, &cur) &&
	    is_ours(l, &cur) && cur.valid_until_ms == last)
		err = 0;
	if (err) {
		log_warn("lease revoked: r%" PRIu32 "/w%" PRIu32 ", last ms %" PRIu64
			 "; writing it back failed (%s), so the number frees at ms %"
			 PRIu64, l->cfg->region, l->worker, last, store_error(l),
			 l->confirmed_ms);
		return err;
	}
	log_notice("lease released: r%" PRIu32 "/w%" PRIu32 ", last ms %" PRIu64
		   "; the number is free", l->cfg->region, l->worker, last);
	return 0;
}

int lease_adopt(struct lease *l)
{
	struct store_record cur;
	struct device_held h;
	uint64_t last = 0;
	int err;

	err = l->dev->ops->held(l->dev->ctx, &h);
	if (err) {
		log_err("cannot read the generator's state: %s", strerror(-err));
		return err;
	}
	if (!h.leased)
		return 0;
	if (h.region != l->cfg->region || h.worker >= l->cfg->workers) {
		err = l->dev->ops->revoke(l->dev->ctx, &last);
		log_warn("the generator held r%" PRIu32 "/w%" PRIu32 ", outside region %"
			 PRIu32 " of this configuration: %s", h.region, h.worker,
			 l->cfg->region, err ? strerror(-err) : "revoked");
		return err;
	}
	err = l->store->get(l->store_ctx, h.region, h.worker, &cur);
	if (err) {
		log_err("r%" PRIu32 "/w%" PRIu32 ": cannot read the record of the lease "
			"the generator holds: %s", h.region, h.worker,
			store_error(l));
		return err;
	}
	if (!is_ours(l, &cur) || cur.valid_until_ms < h.valid_until_ms) {
		err = l->dev->ops->revoke(l->dev->ctx, &last);
		log_warn("the generator held r%" PRIu32 "/w%" PRIu32 " until ms %" PRIu64
			 ", which the store gives to '%s' until ms %" PRIu64 ": %s",
			 h.region, h.worker, h.valid_until_ms,
			 cur.valid ? cur.owner : "(nobody)", cur.valid_until_ms,
			 err ? strerror(-err) : "revoked");
		return err;
	}
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

// SPDX-License-Identifier: GPL-2.0
/*
 * The lease protocol: claim, renew, release, adopt (lease_protocol.h).
 *
 * The rules R1-R7 are Documentation/design.md section 7.1; the model in
 * tests/model/ checks them.  The code below cites them by label where it
 * enforces them: R1 ownership, R2 every write a compare-and-swap whose
 * unknown outcome is read back, R4 the floor, R5 renewal, R6 release, R7
 * adoption.  R3, the layout and region width records, is the layout
 * protocol's (layout_protocol.c), which every claim and adoption runs
 * first.
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

/*
 * R2: every write of a worker record, one txn comparing its revision with
 * rev and the layout record's with the one read last, under a fresh
 * nonce (R1).
 */
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

/*
 * R3: the region's layout and width records are this host's (the layout
 * protocol's check); sets l->layout_rev and l->layout_from_ms.
 */
static int check_layout(struct lease *l)
{
	return layout_check(l->cfg, l->store, l->store_ctx, l->clock,
			    l->clock_ctx, &l->layout_rev, &l->layout_from_ms);
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
 * R4: give back a claim that was never pushed: nothing was minted under
 * it, so its valid_until goes back to the floor it was taken with (R2).
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
 * R2: a claiming write timed out: read the record back.  Returns 0 and sets
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
		/* R4: the floor the claiming txn compares, or from_ms. */
		floor_ms = rec[w].exists ? rec[w].valid_until_ms : 0;
		if (floor_ms < l->layout_from_ms)
			floor_ms = l->layout_from_ms;
		until = now + l->cfg->lease_ms;

		memset(&now_rec, 0, sizeof(now_rec));
		err = write_record(l, w, rec[w].mod_revision, until, &new_rev,
				   &now_rec);
		/*
		 * R2: a garbled answer is as unknown as a lost one; and a
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
		 * R4: ours in the store.  The clock must be trusted, and past
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

/* R5: the record is someone else's (R1): stop minting under it at once. */
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
 * R5: push a fence the store confirmed.  Should the generator no longer hold
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

/* R5: the renewal, a CAS (R2) pushed only once the store confirmed it. */
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
		/* R2: an unknown outcome is read back before any decision. */
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
			 * R5: still ours at another revision: a write of ours
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

/*
 * R6: revoke first, then write the last ms as valid_until (R2); our own
 * write found at another revision (R1) is written over.
 */
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

/* R7: revoke a lease the generator holds that we do not keep, saying why. */
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

/*
 * R7: the generator's lease is kept only if its record is ours (R1), at
 * exactly the generator's fence, and written after the layout record.
 */
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


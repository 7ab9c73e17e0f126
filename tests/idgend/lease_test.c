// SPDX-License-Identifier: GPL-2.0
/*
 * The lease protocol (helper/idgend/lease_protocol.c, standalone.c) against an
 * in-memory store, fake generators and a clock the test moves: every rule of
 * Documentation/design.md section 7, faults injected at each write, and a
 * random walk of two daemons over one store checking the one property that
 * matters: no two generators ever may mint the same (worker, ms).
 *
 * Output is TAP; the exit status is non-zero on any failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout_protocol.h"
#include "lease_protocol.h"
#include "standalone.h"
#include "state_file.h"
#include "tap.h"

#define WORKERS		8
#define LEASE_MS	60000
/* The fake generators' layout: 8 numbers per region. */
#define TEST_LAYOUT	((struct lease_layout){ 3, 3, 16 })



/* ---- the daemon's log lines, in a file the tests read back ---- */

static FILE *log_file;

static long log_mark(void)
{
	fflush(stderr);
	return ftell(log_file);
}

/* Whether a line logged since mark contains needle. */
static bool logged_since(long mark, const char *needle)
{
	char line[2048];
	bool found = false;

	fflush(stderr);
	fseek(log_file, mark, SEEK_SET);
	while (!found && fgets(line, sizeof(line), log_file))
		found = strstr(line, needle) != NULL;
	fseek(log_file, 0, SEEK_END);
	return found;
}

/* ---- the clock ---- */

static uint64_t fake_now = 1000000;
static bool fake_synced = true;
static int sync_after_sleeps = -1;	/* becomes synced after n sleeps */
static int stop_after_sleeps = -1;	/* asked to stop after n sleeps */
static bool clock_stopped;		/* sleeping does not move it */
static unsigned int sleeps;
static uint64_t slept_min_ms;		/* the shortest sleep */

static uint64_t fc_now(void *ctx)
{
	(void)ctx;
	return fake_now;
}

static bool fc_synced(void *ctx)
{
	(void)ctx;
	return fake_synced;
}

static int fc_sleep(void *ctx, uint64_t ms)
{
	(void)ctx;
	if (!clock_stopped)
		fake_now += ms;
	if (!sleeps || ms < slept_min_ms)
		slept_min_ms = ms;
	sleeps++;
	if (sync_after_sleeps >= 0 && --sync_after_sleeps < 0)
		fake_synced = true;
	if (stop_after_sleeps >= 0 && --stop_after_sleeps < 0)
		return 1;
	return 0;
}

static const struct clock_ops fake_clock = {
	.now_ms = fc_now, .synced = fc_synced, .sleep_ms = fc_sleep,
};

/* ---- the store ---- */

enum fault {
	F_NONE,
	F_UNREACHABLE,		/* nothing sent */
	F_TIMEOUT_APPLIED,	/* written, answer lost */
	F_TIMEOUT_LOST,		/* not written, answer lost */
	F_RACE,			/* another owner writes just before */
	F_TIMEOUT_LATE,		/* answer lost; lands at the next cas */
};

struct fake_store {
	struct store_record rec[WORKERS];
	struct store_layout layout;
	struct store_width width;
	int64_t revision;
	enum fault next_cas;	/* one-shot */
	bool down;		/* every call fails */
	int64_t step_on_list;	/* one-shot clock step after a list */
	unsigned int writes;
	/* F_TIMEOUT_LATE's write, still in flight */
	bool late;
	uint32_t late_worker;
	int64_t late_expect, late_layout_rev;
	char late_owner[STORE_OWNER_MAX], late_token[STORE_TOKEN_MAX];
	char late_nonce[STORE_NONCE_LEN + 1];
	uint64_t late_until;
};

static int fs_list(void *ctx, uint32_t region, struct store_record *rec,
		   uint32_t n)
{
	struct fake_store *s = ctx;

	(void)region;
	if (s->down)
		return -ECONNREFUSED;
	memset(rec, 0, n * sizeof(*rec));
	memcpy(rec, s->rec, (n < WORKERS ? n : WORKERS) * sizeof(*rec));
	fake_now += s->step_on_list;
	s->step_on_list = 0;
	return 0;
}

static int fs_get(void *ctx, uint32_t region, uint32_t worker,
		  struct store_record *out)
{
	struct fake_store *s = ctx;

	(void)region;
	if (s->down)
		return -ECONNREFUSED;
	*out = s->rec[worker];
	return 0;
}

static void fs_write_nonce(struct fake_store *s, uint32_t w, const char *owner,
			   const char *token, const char *nonce, uint64_t until)
{
	struct store_record *r = &s->rec[w];

	r->exists = r->valid = true;
	r->worker = w;
	snprintf(r->owner, sizeof(r->owner), "%s", owner);
	snprintf(r->token, sizeof(r->token), "%s", token);
	snprintf(r->nonce, sizeof(r->nonce), "%s", nonce ? nonce : "");
	r->valid_until_ms = until;
	r->mod_revision = ++s->revision;
	s->writes++;
}

/* A write by another instance with this owner and token: its own nonce. */
static void fs_write_tok(struct fake_store *s, uint32_t w, const char *owner,
			 const char *token, uint64_t until)
{
	fs_write_nonce(s, w, owner, token, "0123456789abcdef", until);
}

/* Another host's write: a token of its own. */
static void fs_write(struct fake_store *s, uint32_t w, const char *owner,
		     uint64_t until)
{
	fs_write_tok(s, w, owner, "0ther0token", until);
}

static int fs_cas(void *ctx, uint32_t region, uint32_t w, int64_t expect,
		  int64_t layout_rev, const struct store_value *val,
		  int64_t *new_rev, struct store_record *now)
{
	struct fake_store *s = ctx;
	enum fault f = s->next_cas;

	(void)region;
	s->next_cas = F_NONE;
	if (s->late) {
		/* The write in flight lands first, if its compare holds. */
		s->late = false;
		if (s->rec[s->late_worker].mod_revision == s->late_expect &&
		    (s->late_layout_rev == STORE_ANY_LAYOUT ||
		     s->late_layout_rev == s->layout.mod_revision))
			fs_write_nonce(s, s->late_worker, s->late_owner,
				       s->late_token, s->late_nonce, s->late_until);
	}
	if (s->down || f == F_UNREACHABLE)
		return -ECONNREFUSED;
	if (f == F_TIMEOUT_LOST)
		return -ETIMEDOUT;
	if (f == F_TIMEOUT_LATE) {
		s->late = true;
		s->late_worker = w;
		s->late_expect = expect;
		s->late_layout_rev = layout_rev;
		snprintf(s->late_owner, sizeof(s->late_owner), "%s", val->owner);
		snprintf(s->late_token, sizeof(s->late_token), "%s", val->token);
		snprintf(s->late_nonce, sizeof(s->late_nonce), "%s",
			 val->nonce ? val->nonce : "");
		s->late_until = val->valid_until_ms;
		return -ETIMEDOUT;
	}
	if (f == F_RACE)
		fs_write(s, w, "intruder", fake_now + LEASE_MS);
	if (s->rec[w].mod_revision != expect ||
	    (layout_rev != STORE_ANY_LAYOUT &&
	     layout_rev != s->layout.mod_revision)) {
		if (now) {
			*now = s->rec[w];
			now->worker = w;
			now->layout_rev = s->layout.mod_revision;
		}
		return -ECANCELED;
	}
	fs_write_nonce(s, w, val->owner, val->token, val->nonce,
		       val->valid_until_ms);
	*new_rev = s->rec[w].mod_revision;
	return f == F_TIMEOUT_APPLIED ? -ETIMEDOUT : 0;
}

static const char *fs_error(void *ctx)
{
	(void)ctx;
	return "fake store failure";
}

static int fs_layout_get(void *ctx, uint32_t region, struct store_layout *out)
{
	struct fake_store *s = ctx;

	(void)region;
	if (s->down)
		return -ECONNREFUSED;
	*out = s->layout;
	return 0;
}

static int fs_layout_cas(void *ctx, uint32_t region, int64_t expect,
			 int64_t workers_rev, int64_t width_rev,
			 const struct store_layout *l, int64_t *new_rev)
{
	struct fake_store *s = ctx;
	int w;

	(void)region;
	if (s->down)
		return -ECONNREFUSED;
	if (s->layout.mod_revision != expect ||
	    (width_rev && s->width.mod_revision != width_rev))
		return -ECANCELED;
	for (w = 0; workers_rev && w < WORKERS; w++)
		if (s->rec[w].mod_revision > workers_rev)
			return -ECANCELED;
	s->layout = *l;
	s->layout.exists = s->layout.valid = true;
	s->layout.mod_revision = *new_rev = ++s->revision;
	return 0;
}

static int fs_width_get(void *ctx, struct store_width *out)
{
	struct fake_store *s = ctx;

	if (s->down)
		return -ECONNREFUSED;
	*out = s->width;
	return 0;
}

static int fs_width_create(void *ctx, uint8_t region_bits, int64_t *new_rev)
{
	struct fake_store *s = ctx;

	if (s->down)
		return -ECONNREFUSED;
	if (s->width.exists)
		return -ECANCELED;
	s->width.exists = s->width.valid = true;
	s->width.region_bits = region_bits;
	s->width.mod_revision = *new_rev = ++s->revision;
	return 0;
}

static unsigned int scans;
static void (*after_scan)(struct fake_store *s);	/* one-shot */

static int fs_region_scan(void *ctx, uint32_t region, uint64_t *max_until,
			  uint32_t *garbled, int64_t *revision)
{
	struct fake_store *s = ctx;
	int w;

	(void)region;
	if (s->down)
		return -ECONNREFUSED;
	*max_until = 0;
	*garbled = 0;
	for (w = 0; w < WORKERS; w++)
		if (s->rec[w].valid && s->rec[w].valid_until_ms > *max_until)
			*max_until = s->rec[w].valid_until_ms;
	*revision = s->revision;
	scans++;
	if (after_scan) {
		void (*f)(struct fake_store *) = after_scan;

		after_scan = NULL;
		f(s);
	}
	return 0;
}

static const struct store_ops fake_store_ops = {
	.list = fs_list, .get = fs_get, .cas = fs_cas,
	.layout_get = fs_layout_get, .layout_cas = fs_layout_cas,
	.region_scan = fs_region_scan, .width_get = fs_width_get,
	.width_create = fs_width_create, .error = fs_error,
};

/* ---- generators, and the uniqueness check across them ---- */

struct fake_gen {
	const char *owner;
	const char *token;
	struct fake_store *store;	/* to check pushes against */
	const char *state_file;		/* standalone: checked before a push */
	struct idgen_device_state h;
	bool revoked;
	unsigned int pushes, revokes;
	int fail_push;			/* one-shot errno */
	bool violation;
};

/* What each generator may have minted, per worker: for the walk. */
#define MAX_GENS	4
static struct fake_gen *gens[MAX_GENS];
static int nr_gens;

/* The highest ms g may ever stamp under its current or last lease. */
static uint64_t gen_bound(const struct fake_gen *g)
{
	if (!g->pushes)
		return 0;
	if (g->revoked)
		return g->h.last_ms;
	return g->h.valid_until_ms - 1;
}

static int fg_push(void *ctx, uint32_t region, uint32_t worker,
		   uint64_t floor_ms, uint64_t until, bool synced)
{
	struct fake_gen *g = ctx;
	int i;

	(void)synced;
	if (g->fail_push) {
		int err = -g->fail_push;

		g->fail_push = 0;
		return err;
	}
	if (floor_ms >= until)
		return -EINVAL;
	if (device_leased(&g->h) && g->h.region == region && g->h.worker == worker) {
		if (until < g->h.valid_until_ms)
			return -EINVAL;
	} else {
		g->h.floor_ms = floor_ms;
	}
	/* Pushed only what the store confirmed to this owner. */
	if (g->store) {
		const struct store_record *r = &g->store->rec[worker];

		if (!r->valid || strcmp(r->owner, g->owner) ||
		    strcmp(r->token, g->token) || r->valid_until_ms < until)
			g->violation = true;
	}
	/* Pushed only what is durable on disk. */
	if (g->state_file) {
		uint64_t stored = 0;

		if (state_file_read(g->state_file, &stored) || stored < until)
			g->violation = true;
	}
	/* Above everything any other generator may mint on this number. */
	for (i = 0; i < nr_gens; i++)
		if (gens[i] != g && gens[i]->pushes &&
		    gens[i]->h.worker == worker && gen_bound(gens[i]) > floor_ms &&
		    (!device_leased(&g->h) || g->h.worker != worker))
			g->violation = true;
	/*
	 * A renewal too: no ms both this lease, (floor, until), and another
	 * generator's last one, (its floor, its bound], could mint.
	 */
	for (i = 0; i < nr_gens; i++) {
		const struct fake_gen *o = gens[i];
		uint64_t lo = floor_ms, hi = until;
		bool renewal = device_leased(&g->h) && g->h.region == region &&
			g->h.worker == worker;

		if (renewal && g->h.floor_ms > lo)
			lo = g->h.floor_ms;
		if (o == g || !o->pushes || o->h.worker != worker)
			continue;
		if (o->h.floor_ms > lo)
			lo = o->h.floor_ms;
		if (gen_bound(o) + 1 < hi)
			hi = gen_bound(o) + 1;
		if (lo + 1 < hi)
			g->violation = true;
	}
	g->h.flags |= LIBIDGEN_STATE_LEASED;
	g->h.region = region;
	g->h.worker = worker;
	g->h.valid_until_ms = until;
	if (floor_ms > g->h.last_ms)
		g->h.last_ms = floor_ms;
	g->revoked = false;
	g->pushes++;
	return 0;
}

static int fg_revoke(void *ctx, uint64_t *last)
{
	struct fake_gen *g = ctx;
	uint64_t top;

	if (!device_leased(&g->h)) {
		*last = g->h.last_ms;	/* as the module: a retry is safe */
		return 0;
	}
	/* Worst case: it minted every ms up to now, below the fence. */
	top = fake_now < g->h.valid_until_ms ? fake_now : g->h.valid_until_ms - 1;
	if (top > g->h.last_ms)
		g->h.last_ms = top;
	g->h.flags &= ~LIBIDGEN_STATE_LEASED;
	g->revoked = true;
	g->revokes++;
	*last = g->h.last_ms;
	return 0;
}

static int fg_held(void *ctx, struct idgen_device_state *out)
{
	struct fake_gen *g = ctx;

	*out = g->h;
	out->now_ms = fake_now;
	out->region_bits = 3;
	out->worker_bits = 3;
	return 0;
}

static const struct device_ops fake_gen_ops = {
	.push = fg_push, .revoke = fg_revoke, .held = fg_held,
};

/* ---- fixtures ---- */

struct fixture {
	char token[33];
	struct fake_store store;
	struct fake_gen gen;
	struct device dev;
	struct lease_config cfg;
	struct lease l;
};

/* A restarted daemon: its own state gone, store and generator kept. */
static void restart(struct fixture *f)
{
	memset(&f->l, 0, sizeof(f->l));
	f->l.cfg = &f->cfg;
	f->l.store = &fake_store_ops;
	f->l.store_ctx = &f->store;
	f->l.dev = &f->dev;
	f->l.clock = &fake_clock;
}

static void setup(struct fixture *f, const char *owner, uint64_t seed)
{
	static unsigned int instances;

	memset(f, 0, sizeof(*f));
	/* Every fixture is another instance: a token of its own. */
	snprintf(f->token, sizeof(f->token), "%032x", ++instances);
	f->gen.owner = owner;
	f->gen.token = f->token;
	f->cfg.token = f->token;
	f->cfg.layout = TEST_LAYOUT;
	f->gen.store = &f->store;
	f->dev.ops = &fake_gen_ops;
	f->dev.ctx = &f->gen;
	f->cfg.owner = owner;
	f->cfg.region = 0;
	f->cfg.workers = WORKERS;
	f->cfg.lease_ms = LEASE_MS;
	f->cfg.floor_wait_ms = 1000;
	f->cfg.require_sync = true;
	f->cfg.claim_attempts = 8;
	restart(f);
	f->l.rng = seed;
	fake_synced = true;
	sync_after_sleeps = -1;
	nr_gens = 1;
	gens[0] = &f->gen;
}

/*
 * The region's layout recorded by its other hosts, before they wrote
 * their leases: the test layout, from ms 0.
 */
static void layout_recorded(struct fake_store *s)
{
	if (s->layout.exists)
		return;
	s->width = (struct store_width){ .exists = true, .valid = true,
		.region_bits = TEST_LAYOUT.region_bits,
		.mod_revision = ++s->revision };
	s->layout = (struct store_layout){ .exists = true, .valid = true,
		.region_bits = TEST_LAYOUT.region_bits,
		.worker_bits = TEST_LAYOUT.worker_bits,
		.seq_bits = TEST_LAYOUT.seq_bits,
		.mod_revision = ++s->revision };
}

/* Every number held by someone else until later, but the one given. */
static void fill_others(struct fake_store *s, int except, uint64_t except_until)
{
	int w;

	layout_recorded(s);
	for (w = 0; w < WORKERS; w++)
		fs_write(s, w, "other", w == except ? except_until : fake_now + 5000);
}

/* ---- claim ---- */

static void test_claim_empty(void)
{
	struct fixture f;
	int err;

	setup(&f, "me", 1);
	err = lease_claim(&f.l);
	check(!err && f.l.held, "claim: an empty region gives a number (%d)", err);
	check(f.gen.pushes == 1 && f.gen.h.floor_ms == 0 &&
	      f.gen.h.valid_until_ms == fake_now + LEASE_MS,
	      "claim: pushed floor 0, fence now + lease");
	check(!strcmp(f.store.rec[f.l.worker].owner, "me") &&
	      f.store.rec[f.l.worker].valid_until_ms == fake_now + LEASE_MS &&
	      f.l.rev == f.store.rec[f.l.worker].mod_revision,
	      "claim: the record holds owner and fence; its revision is kept");
	check(!f.gen.violation, "claim: pushed only what the store confirmed");
}

static void test_claim_prefers_expired(void)
{
	struct fixture f;
	uint64_t old = fake_now - 10;

	setup(&f, "me", 7);
	fill_others(&f.store, 5, old);
	check(!lease_claim(&f.l) && f.l.worker == 5,
	      "claim: takes the one number whose valid_until has passed");
	check(f.gen.h.floor_ms == old && f.l.floor_ms == old,
	      "claim: the previous valid_until is the floor");
	check(!f.gen.violation, "claim: no overlap with the previous holder");
}

static void test_claim_takes_own_back(void)
{
	struct fixture f;
	uint64_t mine = fake_now - 20, theirs = fake_now - 10;
	int w;

	setup(&f, "me", 11);
	layout_recorded(&f.store);
	/* Every number free; one last held by this owner, one by another. */
	for (w = 0; w < WORKERS; w++)
		if (w == 6)
			fs_write(&f.store, w, "me", mine);
		else if (w == 4)
			fs_write(&f.store, w, "other", theirs);
	check(!lease_claim(&f.l) && f.l.worker == 6,
	      "claim: takes back the free number this owner held last");
	check(f.gen.h.floor_ms == mine && f.l.floor_ms == mine,
	      "claim: its own last valid_until is the floor");
}

static void test_claim_spreads(void)
{
	bool picked[WORKERS] = { false };
	int distinct = 0, w, seed;

	for (seed = 1; seed <= 32; seed++) {
		struct fixture f;

		setup(&f, "me", seed * 2654435761u);
		if (!lease_claim(&f.l))
			picked[f.l.worker] = true;
	}
	for (w = 0; w < WORKERS; w++)
		distinct += picked[w];
	check(distinct >= WORKERS / 2,
	      "claim: claimers spread over the free numbers (%d of %d used)",
	      distinct, WORKERS);
}

static void test_claim_exhausted(void)
{
	struct fixture f;
	unsigned int writes;
	int err;

	setup(&f, "me", 3);
	fill_others(&f.store, -1, 0);
	writes = f.store.writes;
	err = lease_claim(&f.l);
	check(err == -EBUSY && !f.l.held && !f.gen.pushes &&
	      f.store.writes == writes,
	      "claim: an exhausted pool is -EBUSY, nothing written or pushed");
	fake_now += 5000;
	err = lease_claim(&f.l);
	check(!err && f.l.held, "claim: succeeds once a number frees (%d)", err);
}

static void test_claim_race(void)
{
	struct fixture f;
	int w;

	setup(&f, "me", 11);
	f.store.next_cas = F_RACE;
	check(!lease_claim(&f.l) && f.l.held,
	      "claim: a lost race is retried on a fresh list");
	for (w = 0; w < WORKERS; w++)
		if (!strcmp(f.store.rec[w].owner, "intruder"))
			break;
	check(w < WORKERS && f.l.worker != (uint32_t)w,
	      "claim: never the number the winner took");
	check(!f.gen.violation, "claim: after a race, pushed only what is ours");
}

static void test_claim_timeout(void)
{
	struct fixture f;

	setup(&f, "me", 13);
	f.store.next_cas = F_TIMEOUT_APPLIED;
	check(!lease_claim(&f.l) && f.l.held && f.gen.pushes == 1 &&
	      f.store.writes == 1,
	      "claim: a timed-out write that landed is read back and kept");
	check(!f.gen.violation && f.l.rev == f.store.rec[f.l.worker].mod_revision,
	      "claim: ... with the revision the store holds");

	setup(&f, "me", 13);
	f.store.next_cas = F_TIMEOUT_LOST;
	check(!lease_claim(&f.l) && f.l.held && f.store.writes == 1 &&
	      f.gen.pushes == 1,
	      "claim: a timed-out write that did not land is retried");
}

static void test_claim_waits_for_sync(void)
{
	struct fixture f;
	uint64_t t0;

	setup(&f, "me", 17);
	fake_synced = false;
	sync_after_sleeps = 3;
	sleeps = 0;
	t0 = fake_now;
	check(!lease_claim(&f.l) && f.l.held && sleeps >= 3,
	      "claim: waits for a synchronised clock");
	check(f.store.rec[f.l.worker].valid_until_ms >= t0 + 3000 + LEASE_MS,
	      "claim: the write comes after the wait, not before");

	setup(&f, "me", 17);
	f.cfg.require_sync = false;
	fake_synced = false;
	check(!lease_claim(&f.l) && f.l.held,
	      "claim: require_clock_sync = no does not wait");
}

static void test_claim_floor_ahead(void)
{
	struct fixture f;
	uint64_t ahead, t;
	int w;

	/* A record freed by a clean stop can sit a little ahead of us. */
	setup(&f, "me", 19);
	fill_others(&f.store, 2, 0);
	fs_write(&f.store, 2, "other", fake_now - 1);
	ahead = fake_now + 500;
	f.store.rec[2].valid_until_ms = ahead;	/* frees in 500 ms */
	check(lease_claim(&f.l) == -EBUSY,
	      "claim: a record whose valid_until is ahead is not free");
	fake_now = ahead;
	check(!lease_claim(&f.l) && f.l.worker == 2 && fake_now > ahead,
	      "claim: the push waits until the clock is past the floor");

	/*
	 * The clock steps back 5 s between the list and the push: the
	 * floor is then far ahead, and the number is given back untouched.
	 */
	setup(&f, "me", 23);
	t = fake_now;
	for (w = 0; w < WORKERS; w++)
		fs_write(&f.store, w, "other", t - 10);
	f.store.step_on_list = -5000;
	check(lease_claim(&f.l) == -EBUSY && !f.gen.pushes,
	      "claim: a floor far ahead of the clock is not pushed");
	for (w = 0; w < WORKERS; w++)
		if (f.store.rec[w].valid_until_ms != t - 10)
			break;
	check(w == WORKERS, "claim: ... and the number is given back at its floor");
}

/* ---- renew ---- */

static void test_renew(void)
{
	struct fixture f;
	struct store_record before;
	int err;

	setup(&f, "me", 29);
	lease_claim(&f.l);
	fake_now += 30000;
	err = lease_renew(&f.l);
	check(!err && f.gen.h.valid_until_ms == fake_now + LEASE_MS &&
	      f.store.rec[f.l.worker].valid_until_ms == fake_now + LEASE_MS,
	      "renew: store then generator move to now + lease");
	check(!f.gen.violation, "renew: pushed only after the store confirmed");

	/* etcd down: nothing pushed, minting goes on to the old fence. */
	before = f.store.rec[f.l.worker];
	f.store.down = true;
	fake_now += 30000;
	err = lease_renew(&f.l);
	check(err == -ECONNREFUSED && f.gen.pushes == 2 && device_leased(&f.gen.h) &&
	      f.gen.h.valid_until_ms == before.valid_until_ms && f.l.held,
	      "renew: store unreachable: no push, the lease stays in force");
	f.store.down = false;
	fake_now += 60000;	/* past the fence: the generator stopped */
	err = lease_renew(&f.l);
	check(!err && f.gen.h.valid_until_ms == fake_now + LEASE_MS,
	      "renew: after the outage, an unchanged record renews");

	/* A timed-out renewal that landed is pushed; one that did not, not. */
	f.store.next_cas = F_TIMEOUT_APPLIED;
	fake_now += 1000;
	check(!lease_renew(&f.l) && f.gen.h.valid_until_ms == fake_now + LEASE_MS &&
	      !f.gen.violation, "renew: timed out but landed: read back, pushed");
	f.store.next_cas = F_TIMEOUT_LOST;
	fake_now += 1000;
	check(lease_renew(&f.l) == -ETIMEDOUT &&
	      f.gen.h.valid_until_ms == fake_now - 1000 + LEASE_MS,
	      "renew: timed out and not landed: nothing pushed");
}

static void test_renew_lost(void)
{
	struct fixture f;
	int err;

	setup(&f, "me", 31);
	lease_claim(&f.l);
	fs_write(&f.store, f.l.worker, "thief", fake_now + LEASE_MS);
	fake_now += 1000;
	err = lease_renew(&f.l);
	check(err == -ESTALE && !f.l.held && f.gen.revokes == 1 &&
	      !device_leased(&f.gen.h),
	      "renew: a record taken by another owner revokes at once");
	check(!strcmp(f.store.rec[f.l.worker].owner, "thief"),
	      "renew: ... and leaves the other owner's record alone");

	/*
	 * Our own write whose answer we lost, read back unchanged, that
	 * lands later: the next renewal finds it and takes it up.
	 */
	setup(&f, "me", 37);
	lease_claim(&f.l);
	f.store.next_cas = F_TIMEOUT_LATE;
	fake_now += 1000;
	err = lease_renew(&f.l);
	check(err == -ETIMEDOUT && f.gen.pushes == 1 && f.l.npending == 1,
	      "renew: an answer lost, the record unchanged: nothing pushed, its "
	      "nonce kept as pending (%d)", err);
	fake_now += 1000;
	check(!lease_renew(&f.l) && f.l.held && !f.gen.revokes &&
	      f.l.rev == f.store.rec[f.l.worker].mod_revision &&
	      f.gen.h.valid_until_ms == fake_now + LEASE_MS && !f.l.npending &&
	      !f.gen.violation,
	      "renew: our own write landing late is taken up, not lost; "
	      "the next write settles it");
}

static void test_release(void)
{
	struct fixture f;
	uint32_t w;

	setup(&f, "me", 41);
	lease_claim(&f.l);
	w = f.l.worker;
	fake_now += 2000;
	check(!lease_release(&f.l) && f.gen.revokes == 1 && !f.l.held,
	      "release: revokes in the generator");
	check(f.store.rec[w].valid_until_ms == f.gen.h.last_ms &&
	      f.store.rec[w].valid_until_ms <= fake_now,
	      "release: valid_until is the last ms: the number is free now");
	check(f.gen.h.last_ms >= fake_now - 1,
	      "release: ... and not below anything minted");
}

/* A renewal whose answer was lost lands late, after the release's revoke. */
static void test_release_late_renewal(void)
{
	struct fixture f;
	uint32_t w;
	long mark;
	int err;

	setup(&f, "me", 45);
	lease_claim(&f.l);
	w = f.l.worker;
	f.store.next_cas = F_TIMEOUT_LATE;
	fake_now += 1000;
	lease_renew(&f.l);
	fake_now += 1000;
	mark = log_mark();
	err = lease_release(&f.l);
	check(!err && f.store.rec[w].valid_until_ms == f.gen.h.last_ms &&
	      !strcmp(f.store.rec[w].owner, "me") &&
	      logged_since(mark, "lease released"),
	      "release: a renewal of ours that landed late is written over; the "
	      "number is free (%d)", err);

	/* Another's record by then: the log says what the store holds. */
	setup(&f, "me", 47);
	lease_claim(&f.l);
	w = f.l.worker;
	fs_write(&f.store, w, "thief", fake_now + 2 * LEASE_MS);
	fake_now += 1000;
	mark = log_mark();
	err = lease_release(&f.l);
	check(err == -ECANCELED && logged_since(mark, "the store holds valid_until ms") &&
	      logged_since(mark, "for 'thief': the number frees then"),
	      "release: a failed write-back logs the valid_until the store holds "
	      "(%d)", err);
}

static void test_adopt(void)
{
	struct fixture f;
	uint32_t w;
	long mark;

	setup(&f, "me", 43);
	lease_claim(&f.l);
	w = f.l.worker;
	restart(&f);
	check(!lease_adopt(&f.l) && f.l.held && f.l.worker == w &&
	      !f.gen.revokes && f.l.rev == f.store.rec[w].mod_revision,
	      "adopt: the generator's lease that the store says is ours is kept");
	fake_now += 1000;
	check(!lease_renew(&f.l) && f.gen.pushes == 2,
	      "adopt: ... and renews");

	/* Someone else's now: revoke. */
	fs_write(&f.store, w, "other", fake_now + LEASE_MS * 2);
	restart(&f);
	check(!lease_adopt(&f.l) && !f.l.held && f.gen.revokes == 1 &&
	      !device_leased(&f.gen.h),
	      "adopt: a lease the store gives to another owner is revoked");

	/*
	 * The runtime directory lost (a new token) while the module kept
	 * the lease: the record holds exactly the module's fence, so the
	 * log names this host's own idgend as the likely writer.
	 */
	setup(&f, "me", 44);
	lease_claim(&f.l);
	restart(&f);
	snprintf(f.token, sizeof(f.token), "%032x", 0xfeed);
	mark = log_mark();
	check(!lease_adopt(&f.l) && !f.l.held && !device_leased(&f.gen.h),
	      "adopt: a new owner token (runtime directory lost): revoked");
	check(logged_since(mark, "this host's own idgend before its runtime "
			   "directory (with the owner token) was lost, or another "
			   "host") && !logged_since(mark, "cloned from one image"),
	      "adopt: ... saying both possibilities, not only a clone");

	/* R7: a later fence in the store than the module's: not kept. */
	setup(&f, "me", 46);
	lease_claim(&f.l);
	fs_write_nonce(&f.store, f.l.worker, "me", f.token, "00000000000000aa",
		       f.gen.h.valid_until_ms + 1000);
	restart(&f);
	check(!lease_adopt(&f.l) && !f.l.held && !device_leased(&f.gen.h),
	      "adopt: our token but a later fence than the module's (an unpushed "
	      "renewal, or another instance with our token): revoked");

	/* The store unreachable: an error, and nothing revoked. */
	setup(&f, "me", 47);
	lease_claim(&f.l);
	f.store.down = true;
	f.l.held = false;
	check(lease_adopt(&f.l) == -ECONNREFUSED && device_leased(&f.gen.h) &&
	      !f.gen.revokes, "adopt: store unreachable: error, lease untouched");
}

/* ---- two daemons, one store, random faults ---- */

static void test_walk(const char *name_a, const char *name_b, bool one_token)
{
	struct fixture a, b;
	struct lease *ls[2];
	struct fake_gen *gs[2];
	uint64_t rng = 0x1234567;
	int step, i, lost = 0, claims = 0, violations = 0;

	setup(&a, name_a, 51);
	setup(&b, name_b, 53);
	if (one_token) {
		/* One owner-token file copied to both hosts. */
		memcpy(b.token, a.token, sizeof(b.token));
		b.gen.token = b.cfg.token = b.token;
	}
	/* One store for both. */
	b.gen.store = &a.store;
	b.l.store_ctx = &a.store;
	b.cfg.workers = a.cfg.workers = 2;	/* contend hard */
	ls[0] = &a.l;
	ls[1] = &b.l;
	gs[0] = &a.gen;
	gs[1] = &b.gen;
	gens[0] = &a.gen;
	gens[1] = &b.gen;
	nr_gens = 2;

	for (step = 0; step < 20000; step++) {
		int who, op;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		who = rng & 1;
		op = (rng >> 8) % 10;
		fake_now += (rng >> 16) % 20000;
		a.store.next_cas = (rng >> 32) % 4 == 0 ? (enum fault)((rng >> 40) % 6) : F_NONE;
		if (!ls[who]->held) {
			if (op < 6 && !lease_claim(ls[who]))
				claims++;
		} else if (op < 8) {
			if (lease_renew(ls[who]) == -ESTALE)
				lost++;
		} else if (op == 8) {
			lease_release(ls[who]);
		} else {
			/* frozen: time passes, nothing else */
			fake_now += LEASE_MS / 2;
		}
		for (i = 0; i < 2; i++)
			violations += gs[i]->violation;
		if (violations)
			break;
	}
	check(!violations, "walk (%s, %s%s): 20000 steps of two daemons with "
	      "faults: no (worker, ms) two generators could both mint, no "
	      "unconfirmed push (%d claims, %d losses)", name_a, name_b,
	      one_token ? ", one token" : "", claims, lost);
	check(claims > 100 && lost > 0, "walk (%s, %s%s): the walk claimed and "
	      "lost leases", name_a, name_b, one_token ? ", one token" : "");
}


static struct lease *renew_target;

static void renew_during_scan(struct fake_store *s)
{
	(void)s;
	fake_now += 1000;
	lease_renew(renew_target);
}

/* ---- owner tokens: two hosts with one owner name ---- */

/* Two daemons with the same owner name on one store, each its token. */
static void twins(struct fixture *a, struct fixture *b, uint64_t seed)
{
	setup(a, "same", seed);
	setup(b, "same", seed + 1);
	b->gen.store = &a->store;
	b->l.store_ctx = &a->store;
	gens[0] = &a->gen;
	gens[1] = &b->gen;
	nr_gens = 2;
}

static void test_token(void)
{
	struct fixture a, b;
	uint64_t fence;
	long mark;
	int err;

	/* (a) X frozen past its lease, Y claims, X thaws and renews. */
	twins(&a, &b, 61);
	fill_others(&a.store, 5, 0);
	check(!lease_claim(&a.l) && a.l.worker == 5, "token: X claims w5");
	fence = a.gen.h.valid_until_ms;
	fake_now = fence + 1;		/* X frozen past its fence */
	for (int w = 0; w < WORKERS; w++)
		if (w != 5)
			fs_write(&a.store, w, "other", fake_now + 10 * LEASE_MS);
	check(!lease_claim(&b.l) && b.l.worker == 5 && b.gen.h.floor_ms >= fence,
	      "token: Y, same owner name, claims w5 above X's fence");
	mark = log_mark();
	fake_now += 1000;
	err = lease_renew(&a.l);
	check(err == -ESTALE && !a.l.held && a.gen.revokes == 1 &&
	      a.gen.pushes == 1,
	      "token: X's renewal finds Y's token: lost and revoked, nothing "
	      "pushed (%d)", err);
	check(!a.gen.violation && !b.gen.violation,
	      "token: X and Y never could mint one (worker, ms)");
	check(logged_since(mark, "two hosts share the owner name 'same'"),
	      "token: ... and says loudly that two hosts share the owner name");
	fake_now += 1000;
	check(!lease_renew(&b.l) && b.l.held && !b.gen.violation,
	      "token: Y renews undisturbed");

	/* (b) X killed, Y claims, X restarts with its own token. */
	twins(&a, &b, 71);
	fill_others(&a.store, 5, 0);
	lease_claim(&a.l);
	fence = a.gen.h.valid_until_ms;
	restart(&a);			/* killed: its generator keeps the lease */
	fake_now = fence + 1;
	for (int w = 0; w < WORKERS; w++)
		if (w != 5)
			fs_write(&a.store, w, "other", fake_now + 10 * LEASE_MS);
	check(!lease_claim(&b.l) && b.l.worker == 5, "token: Y claims X's w5");
	mark = log_mark();
	err = lease_adopt(&a.l);
	check(!err && !a.l.held && a.gen.revokes == 1 && !device_leased(&a.gen.h),
	      "token: restarted X does not adopt Y's record: revoked (%d)", err);
	check(logged_since(mark, "two hosts share the owner name 'same'"),
	      "token: ... and says so loudly");
	fake_now += 1000;
	if (a.l.held)
		lease_renew(&a.l);
	check(!lease_renew(&b.l) && !a.gen.violation && !b.gen.violation,
	      "token: no (worker, ms) both could mint");

	/*
	 * (c) One owner name AND one token (an owner-token file copied with
	 * a runtime directory, a cloned VM): X frozen past its lease, Y
	 * claims, X thaws.  Only the write nonce tells Y's record from a
	 * write of X's own.
	 */
	twins(&a, &b, 67);
	memcpy(b.token, a.token, sizeof(b.token));
	fill_others(&a.store, 5, 0);
	check(!lease_claim(&a.l) && a.l.worker == 5, "one token: X claims w5");
	fence = a.gen.h.valid_until_ms;
	fake_now = fence + 1;
	for (int w = 0; w < WORKERS; w++)
		if (w != 5)
			fs_write(&a.store, w, "other", fake_now + 10 * LEASE_MS);
	check(!lease_claim(&b.l) && b.l.worker == 5 && b.gen.h.floor_ms >= fence,
	      "one token: Y, with X's owner and token, claims w5 above X's fence");
	mark = log_mark();
	fake_now += 1000;
	err = lease_renew(&a.l);
	check(err == -ESTALE && !a.l.held && a.gen.revokes == 1 &&
	      a.gen.pushes == 1,
	      "one token: X's renewal finds a write not its own: lost and "
	      "revoked, nothing pushed (%d)", err);
	check(logged_since(mark, "another idgend shares this host's owner token"),
	      "one token: ... and says so loudly");
	fake_now += 1000;
	check(!lease_renew(&b.l) && b.l.held && !a.gen.violation &&
	      !b.gen.violation,
	      "one token: Y renews undisturbed; no (worker, ms) both could mint");

	/* A record an older idgend wrote (no token) is nobody's. */
	setup(&a, "me", 73);
	lease_claim(&a.l);
	fs_write_tok(&a.store, a.l.worker, "me", "", fake_now + LEASE_MS);
	fake_now += 1000;
	check(lease_renew(&a.l) == -ESTALE && !a.l.held,
	      "token: a record without a token is not ours, even with our name");

	/* Our own writes whose answers were lost are still ours. */
	setup(&a, "me", 79);
	a.store.next_cas = F_TIMEOUT_APPLIED;
	check(!lease_claim(&a.l) && a.l.held && !a.gen.violation,
	      "token: a claim whose answer was lost reads back with our token: kept");
	a.store.next_cas = F_TIMEOUT_APPLIED;
	fake_now += 1000;
	check(!lease_renew(&a.l) && a.l.held && a.gen.pushes == 2 &&
	      !a.gen.violation,
	      "token: a renewal whose answer was lost: ours, pushed");
	restart(&a);
	check(!lease_adopt(&a.l) && a.l.held,
	      "token: a restart with the same token adopts");
}

/* ---- the layout record ---- */

static void test_layout(void)
{
	struct fixture a, b;
	struct lease_layout wide = { 3, 2, 17 };
	unsigned int writes;
	uint64_t fence;
	long mark;
	int err;

	setup(&a, "me", 83);
	check(!lease_claim(&a.l) && a.store.layout.exists &&
	      a.store.layout.region_bits == 3 && a.store.layout.worker_bits == 3 &&
	      a.store.layout.seq_bits == 16 && a.store.layout.from_ms == 0,
	      "layout: the first claim records the region's layout, from ms 0");
	check(a.l.layout_rev == a.store.layout.mod_revision,
	      "layout: ... and keeps its revision");

	/* Another host, configured with another layout: refused. */
	setup(&b, "other-host", 89);
	b.store.layout = a.store.layout;
	b.store.revision = 10;
	b.cfg.layout = wide;
	writes = b.store.writes;
	mark = log_mark();
	err = lease_claim(&b.l);
	check(err == -EMEDIUMTYPE && !b.gen.pushes && b.store.writes == writes,
	      "layout: a host of another layout does not claim (%d), writes nothing",
	      err);
	check(logged_since(mark, "the region's layout is 3/3/16 (since ms 0), "
			   "this host's is 3/2/17"),
	      "layout: ... and says which layouts differ");
	b.l.held = false;
	restart(&b);
	b.gen.h.flags |= LIBIDGEN_STATE_LEASED;	/* holds a lease of a layout not the region's */
	check(!lease_adopt(&b.l) && !b.l.held && !device_leased(&b.gen.h) &&
	      lease_claim(&b.l) == -EMEDIUMTYPE,
	      "layout: a held lease of another layout is revoked at start");

	/*
	 * The cut-over: fenced by every lease of the old layout.  The old
	 * host holds w6, a number the new layout (4 numbers) does not have:
	 * only from_ms keeps the new layout's claims above its IDs.
	 */
	setup(&a, "old-host", 97);
	fill_others(&a.store, 6, 0);
	lease_claim(&a.l);
	check(a.l.worker == 6, "cut-over: the old layout's host holds w6");
	fake_now += 1000;
	lease_renew(&a.l);
	fence = a.store.rec[a.l.worker].valid_until_ms;
	err = layout_cut_over(&a.cfg, &fake_store_ops, &a.store, &fake_clock, NULL,
			      &(struct lease_layout){ 2, 4, 16 }, false);
	check(err == -EINVAL && a.store.layout.worker_bits == 3,
	      "cut-over: a change of region bits is refused");
	err = layout_cut_over(&a.cfg, &fake_store_ops, &a.store, &fake_clock,
			      NULL, &wide, false);
	check(!err && a.store.layout.worker_bits == 2 &&
	      a.store.layout.from_ms == fence,
	      "cut-over: the new layout starts above the old layout's last fence");
	fake_now += 1000;
	mark = log_mark();
	err = lease_renew(&a.l);
	check(err == -EMEDIUMTYPE && !a.l.held && !device_leased(&a.gen.h) &&
	      a.gen.h.valid_until_ms == fence,
	      "cut-over: the old layout's renewal fails its compare: revoked, "
	      "nothing pushed (%d)", err);
	check(logged_since(mark, "layout record changed (a cut-over, or the record written again)"),
	      "cut-over: ... with an alert");
	check(lease_claim(&a.l) == -EMEDIUMTYPE,
	      "cut-over: the old layout's host claims no more");

	/* A host of the new layout waits for from_ms, then starts above it. */
	setup(&b, "new-host", 101);
	b.store = a.store;
	b.cfg.layout = wide;
	b.cfg.workers = 4;
	fake_now = fence - 10 * 1000;
	check(lease_claim(&b.l) == -EBUSY && !b.gen.pushes,
	      "cut-over: a claim under the new layout waits for its from_ms");
	fake_now = fence - 500;
	err = lease_claim(&b.l);
	check(!err && b.gen.h.floor_ms >= fence && fake_now > fence,
	      "cut-over: ... then mints only above it (floor %" PRIu64 ", from_ms %"
	      PRIu64 ")", b.gen.h.floor_ms, fence);

	/* A renewal between the cut-over's listing and its write. */
	setup(&a, "old-host", 103);
	lease_claim(&a.l);
	renew_target = &a.l;
	after_scan = renew_during_scan;
	scans = 0;
	err = layout_cut_over(&a.cfg, &fake_store_ops, &a.store, &fake_clock,
			      NULL, &wide, false);
	check(!err && scans == 2 &&
	      a.store.layout.from_ms == a.store.rec[a.l.worker].valid_until_ms &&
	      a.store.layout.from_ms == a.gen.h.valid_until_ms,
	      "cut-over: a lease renewed after its listing makes it list again; "
	      "from_ms covers the renewed fence");

	/* R7: a lease written before the layout record last changed. */
	setup(&a, "me", 107);
	lease_claim(&a.l);
	fake_now += 1000;
	layout_cut_over(&a.cfg, &fake_store_ops, &a.store, &fake_clock,
			      NULL, &wide, false);
	layout_cut_over(&a.cfg, &fake_store_ops, &a.store, &fake_clock, NULL,
		        &TEST_LAYOUT, false);
	restart(&a);
	check(!lease_adopt(&a.l) && !a.l.held && !device_leased(&a.gen.h),
	      "layout: a lease from before a cut-over (and back) is not adopted");
}

/* ---- one region width for the prefix; layout records written again ---- */

static uint64_t write_at_scan_until;

static void lease_written_during_scan(struct fake_store *s)
{
	fs_write(s, 1, "other", write_at_scan_until);
}

static void test_region_width(void)
{
	struct fixture a, b;
	unsigned int writes;
	long mark;
	int err;

	setup(&a, "me", 201);
	check(!lease_claim(&a.l) && a.store.width.exists &&
	      a.store.width.region_bits == 3,
	      "region width: the first claim records the prefix's region width");

	/* Region 1 of the same prefix, another region width: refused. */
	setup(&b, "two-bits", 203);
	b.store.width = a.store.width;
	b.store.revision = a.store.revision;
	b.cfg.region = 1;
	b.cfg.layout = (struct lease_layout){ 2, 4, 16 };
	writes = b.store.writes;
	mark = log_mark();
	err = lease_claim(&b.l);
	check(err == -EMEDIUMTYPE && !b.gen.pushes && b.store.writes == writes &&
	      !b.store.layout.exists,
	      "region width: a region of another width does not claim (%d), and "
	      "records no layout", err);
	check(logged_since(mark, "every region under this prefix has 3 region bits") &&
	      logged_since(mark, "this host's layout 2/4/16 has 2"),
	      "region width: ... and names both widths");
	err = layout_cut_over(&b.cfg, &fake_store_ops, &b.store, &fake_clock, NULL,
			      &(struct lease_layout){ 2, 4, 16 }, false);
	check(err == -EINVAL && !b.store.layout.exists,
	      "region width: a cut-over to another width is refused (%d)", err);

	/* The width record changed between the check and the layout write. */
	setup(&b, "me", 205);
	b.store.width = a.store.width;
	b.store.revision = 100;
	after_scan = NULL;
	check(!lease_claim(&b.l), "region width: setup");
	b.store.layout = (struct store_layout){ 0 };
	b.store.width.mod_revision = ++b.store.revision;
	err = layout_cut_over(&b.cfg, &fake_store_ops, &b.store, &fake_clock, NULL,
			      &TEST_LAYOUT, false);
	check(!err && b.store.layout.exists,
	      "region width: a layout write compares the width record's "
	      "revision, read fresh on each try (%d)", err);
}

static void test_layout_rewritten(void)
{
	struct fixture p, q;
	struct lease_layout wide = { 3, 2, 17 };
	uint64_t fence;
	long mark;
	int err;

	/*
	 * P (3/3/16) holds w6; the layout record is deleted by hand; Q
	 * (3/2/17) finds none and records its own: from_ms must be above
	 * P's fence, as a cut-over's, or Q mints P's node bits.
	 */
	setup(&p, "p", 211);
	fill_others(&p.store, 6, 0);
	check(!lease_claim(&p.l) && p.l.worker == 6, "layout rewritten: P holds w6");
	fence = p.gen.h.valid_until_ms;
	p.store.layout = (struct store_layout){ 0 };
	setup(&q, "q", 213);
	q.store = p.store;
	q.cfg.layout = wide;
	q.cfg.workers = 4;
	q.gen.store = &q.store;
	scans = 0;
	err = lease_claim(&q.l);
	check(err == -EBUSY && !q.gen.pushes && q.store.layout.exists &&
	      q.store.layout.worker_bits == 2 && q.store.layout.from_ms == fence,
	      "layout rewritten: Q records its layout from P's fence, ms %" PRIu64
	      " (from_ms %" PRIu64 "), and waits for it (%d)", fence,
	      q.store.layout.from_ms, err);
	fake_now = fence - 500;
	err = lease_claim(&q.l);
	check(!err && q.gen.h.floor_ms >= fence && fake_now > fence,
	      "layout rewritten: ... then mints only above it (floor %" PRIu64 ")",
	      q.gen.h.floor_ms);

	/* A lease written between the listing and the layout write. */
	setup(&q, "q", 215);
	write_at_scan_until = fake_now + LEASE_MS * 3;
	after_scan = lease_written_during_scan;
	scans = 0;
	q.cfg.lease_ms = LEASE_MS * 4;
	err = lease_claim(&q.l);
	check(err == -EBUSY && scans == 2 &&
	      q.store.layout.from_ms == write_at_scan_until,
	      "layout recorded: a lease written after its listing makes it list "
	      "again; from_ms covers it (%d, %u scans)", err, scans);

	/* A rolling upgrade: leases of an idgend that recorded no layout. */
	setup(&q, "q", 217);
	fence = fake_now + 500;
	for (int w = 0; w < WORKERS; w++)
		fs_write(&q.store, w, "old-idgend", w == 3 ? fake_now - 1 : fence);
	err = lease_claim(&q.l);
	check(!err && q.store.layout.from_ms == fence && q.l.worker == 3 &&
	      q.gen.h.floor_ms >= fence && fake_now > fence,
	      "layout recorded: the first layout record of a region with older "
	      "leases starts above them all (%d)", err);

	/* A cut-over there and back: P claims anew instead of stopping. */
	setup(&p, "p", 219);
	check(!lease_claim(&p.l), "layout there and back: P claims");
	fake_now += 1000;
	lease_renew(&p.l);
	fence = p.gen.h.valid_until_ms;
	check(!layout_cut_over(&p.cfg, &fake_store_ops, &p.store, &fake_clock,
			       NULL, &wide, false) &&
	       !layout_cut_over(&p.cfg, &fake_store_ops, &p.store, &fake_clock,
			       NULL, &TEST_LAYOUT, false) &&
	       p.store.layout.worker_bits == 3,
	       "layout there and back: cut over to 3/2/17 and back to 3/3/16");
	fake_now += 1000;
	mark = log_mark();
	err = lease_renew(&p.l);
	check(err == -ESTALE && !p.l.held && !device_leased(&p.gen.h) &&
	      p.gen.h.valid_until_ms == fence,
	      "layout there and back: P's renewal revokes, nothing pushed, and "
	      "says claim again, not stop (%d)", err);
	check(logged_since(mark, "the region's layout is still this host's, 3/3/16") &&
	      !logged_since(mark, "is no longer the region's"),
	      "layout there and back: ... with a true message");
	fake_now = p.store.layout.from_ms - 500;
	err = lease_claim(&p.l);
	check(!err && p.gen.h.floor_ms >= p.store.layout.from_ms && !p.gen.violation,
	      "layout there and back: P claims again above the new from_ms (%d)",
	      err);

	/* The record deleted under P's lease: P writes it again, claims anew. */
	fake_now += 1000;
	p.store.layout = (struct store_layout){ 0 };
	err = lease_renew(&p.l);
	check(err == -ESTALE && p.store.layout.exists &&
	      p.store.layout.from_ms >= p.gen.h.valid_until_ms &&
	      !device_leased(&p.gen.h),
	      "layout deleted: the renewal revokes, records the layout again "
	      "above its own fence, and claims anew (%d)", err);
}

static uint64_t far_ahead;

static void test_cut_over_far_ahead(void)
{
	struct fixture a;
	struct lease_layout wide = { 3, 2, 17 };
	uint64_t old_from;
	long mark;
	int err;

	/* A record from a host whose clock jumped decades ahead. */
	setup(&a, "me", 231);
	check(!lease_claim(&a.l), "far ahead: setup");
	far_ahead = fake_now + 86400000ULL * 365 * 20;
	fs_write(&a.store, (a.l.worker + 1) % WORKERS, "clock-ahead", far_ahead);
	old_from = a.store.layout.from_ms;
	mark = log_mark();
	err = layout_cut_over(&a.cfg, &fake_store_ops, &a.store, &fake_clock, NULL,
			      &wide, false);
	check(err == -ERANGE && a.store.layout.worker_bits == 3 &&
	      a.store.layout.from_ms == old_from,
	      "far ahead: a cut-over whose from_ms is decades ahead is refused, "
	      "nothing written (%d)", err);
	check(logged_since(mark, "owner 'clock-ahead', valid_until ms") &&
	      logged_since(mark, "--force"),
	      "far ahead: ... naming the record responsible and --force");
	err = layout_cut_over(&a.cfg, &fake_store_ops, &a.store, &fake_clock, NULL,
			      &wide, true);
	check(!err && a.store.layout.worker_bits == 2 &&
	      a.store.layout.from_ms == far_ahead,
	      "far ahead: --force writes it (%d)", err);

	/* The record responsible put right: the same layout comes down. */
	fs_write(&a.store, (a.l.worker + 1) % WORKERS, "clock-ahead", fake_now);
	err = layout_cut_over(&a.cfg, &fake_store_ops, &a.store, &fake_clock, NULL,
			      &wide, false);
	check(!err && a.store.layout.worker_bits == 2 &&
	      a.store.layout.from_ms < far_ahead &&
	      a.store.layout.from_ms >= a.store.rec[a.l.worker].valid_until_ms,
	      "far ahead: once the record is put right, a cut-over to the same "
	      "layout lowers from_ms to the listing's (%d)", err);
	err = layout_cut_over(&a.cfg, &fake_store_ops, &a.store, &fake_clock, NULL,
			      &wide, false);
	check(!err, "far ahead: ... and then has nothing to do");

	/* A host that finds no layout record does not write one far ahead. */
	setup(&a, "me", 233);
	fs_write(&a.store, 2, "clock-ahead", far_ahead);
	err = lease_claim(&a.l);
	check(err == -EMEDIUMTYPE && !a.store.layout.exists && !a.gen.pushes,
	      "far ahead: nor does a claim record a layout decades ahead (%d)",
	      err);
}

/* ---- standalone ---- */

static void test_standalone(void)
{
	char dir[] = "/tmp/idgend-lease-test.XXXXXX", path[256];
	struct fake_gen g = { .owner = "me" };
	struct device dev = { .ops = &fake_gen_ops, .ctx = &g };
	struct standalone s = {
		.region = 1, .worker = 3, .lease_ms = LEASE_MS,
		.dev = &dev, .clock = &fake_clock,
	};
	uint64_t stored, fence, module_last;
	long mark;

	if (!mkdtemp(dir)) {
		check(false, "standalone: mkdtemp: %s", strerror(errno));
		return;
	}
	/* A directory idgend makes itself: a first start. */
	snprintf(path, sizeof(path), "%s/sub/state", dir);
	s.state_file = path;
	g.state_file = path;
	nr_gens = 0;
	fake_synced = true;

	mark = log_mark();
	check(!standalone_start(&s) && g.h.floor_ms == 0 &&
	      !state_file_read(path, &stored) && stored == fake_now + LEASE_MS &&
	      !g.violation,
	      "standalone: first start stores the fence, then pushes it");
	check(logged_since(mark, "IDs may repeat if the wall clock is behind"),
	      "standalone: ... warning that a wiped state directory looks the same");
	fake_now += 20000;
	check(!standalone_renew(&s) && !state_file_read(path, &stored) &&
	      stored == fake_now + LEASE_MS && g.h.valid_until_ms == stored &&
	      !g.violation, "standalone: renewal stores before it pushes");

	/* A crash and a module reload: the floor is the stored fence. */
	fence = stored;
	memset(&g.h, 0, sizeof(g.h));
	memset(&s.held, 0, sizeof(s) - offsetof(struct standalone, held));
	sleeps = 0;
	check(!standalone_start(&s) && g.h.floor_ms == fence && fake_now > fence &&
	      sleeps, "standalone: after a crash and reload, waits for and "
	      "starts above the stored fence");

	/* A clean stop stores the last ms; the next start is at once. */
	fake_now += 1000;
	check(!standalone_stop(&s) && !state_file_read(path, &stored) &&
	      stored == g.h.last_ms && stored <= fake_now,
	      "standalone: a clean stop stores the last ms");
	memset(&g.h, 0, sizeof(g.h));
	fence = fake_now;
	check(!standalone_start(&s) && g.h.floor_ms == stored &&
	      fake_now - fence <= 1,
	      "standalone: ... and the next start begins right above it");

	/* The same module still holding our lease: adopt, no new floor. */
	memset(&s.held, 0, sizeof(s) - offsetof(struct standalone, held));
	g.pushes = 0;
	check(!standalone_start(&s) && s.held && !g.pushes,
	      "standalone: a restart adopts the lease the module holds");

	/* A push that fails leaves the store ahead, never behind. */
	g.fail_push = EIO;
	fake_now += 1000;
	check(standalone_renew(&s) == -EIO && !state_file_read(path, &stored) &&
	      stored >= g.h.valid_until_ms,
	      "standalone: a refused push leaves the file at or above the fence");

	/* A corrupt state file: refuse to guess. */
	{
		FILE *f = fopen(path, "w");

		fputs("valid_until_ms banana\n", f);
		fclose(f);
	}
	memset(&s.held, 0, sizeof(s) - offsetof(struct standalone, held));
	memset(&g.h, 0, sizeof(g.h));
	g.pushes = 0;
	check(standalone_start(&s) == -EBADMSG && !g.pushes,
	      "standalone: a corrupt state file is an error, nothing pushed");

	/* Deleted: not a first start, unless the operator says so. */
	unlink(path);
	g.h.last_ms = 5000;
	check(standalone_start(&s) == -ENOENT && !g.pushes && !s.held,
	      "standalone: a state file missing from its directory is refused, "
	      "nothing pushed");
	s.fresh_state = true;
	check(!standalone_start(&s) && g.pushes == 1 && g.h.floor_ms == 5000 &&
	      !state_file_read(path, &stored) && stored == g.h.valid_until_ms,
	      "standalone: ... and with --fresh-state it starts above what the "
	      "generator remembers");
	s.fresh_state = false;

	/*
	 * The whole state directory wiped while the module keeps its state
	 * (an idgend restart, no reboot): the floor is the module's last ms.
	 */
	unlink(path);
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/sub/state", dir);
	memset(&s.held, 0, sizeof(s) - offsetof(struct standalone, held));
	g.h.flags &= ~LIBIDGEN_STATE_LEASED;
	module_last = fake_now - 10;
	g.h.last_ms = module_last;
	g.pushes = 0;
	mark = log_mark();
	check(!standalone_start(&s) && g.pushes == 1 &&
	      g.h.floor_ms == module_last && s.floor_ms == module_last,
	      "standalone: a wiped state directory starts above the module's "
	      "last ms (floor %" PRIu64 ")", s.floor_ms);
	check(logged_since(mark, "the state directory wiped"),
	      "standalone: ... with the warning");

	unlink(path);
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	rmdir(dir);
}

/* Every way a state file can differ from what the writer writes. */
static const struct {
	const char *text;
	size_t len;		/* 0: strlen(text) */
	int ret;
	uint64_t ms;
} state_texts[] = {
	{ "valid_until_ms 28\n", 0, 0, 28 },
	{ "valid_until_ms 0\n", 0, 0, 0 },
	{ "valid_until_ms 2199023255551\n", 0, 0, 2199023255551ULL },
	{ "valid_until_ms 2199023255552\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 18446744073709551615\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 18446744073709551616\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 28", 0, -EBADMSG, 0 },
	{ "valid_until_ms ", 0, -EBADMSG, 0 },
	{ "valid_until_ms", 0, -EBADMSG, 0 },
	{ "", 0, -EBADMSG, 0 },
	{ "valid_until_ms \n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 28\nx", 0, -EBADMSG, 0 },
	{ "valid_until_ms 28\n\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 28x\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 28 \n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 28\r\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 2\0" "8\n", 19, -EBADMSG, 0 },
	{ "valid_until_ms 28\n\0", 19, -EBADMSG, 0 },
	{ "valid_until_ms  28\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms +28\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms -28\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 028\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 0x1c\n", 0, -EBADMSG, 0 },
	{ " valid_until_ms 28\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms\t28\n", 0, -EBADMSG, 0 },
	{ "VALID_UNTIL_MS 28\n", 0, -EBADMSG, 0 },
	{ "valid_until 28\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 28\nvalid_until_ms 29\n", 0, -EBADMSG, 0 },
	{ "valid_until_ms 28000000000000000000000000000000000000000000000000\n",
	  0, -EBADMSG, 0 },
};

static void test_state_file(void)
{
	char dir[] = "/tmp/idgend-state-test.XXXXXX", path[256];
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(state_texts) / sizeof(state_texts[0]); i++) {
		size_t len = state_texts[i].len ? state_texts[i].len :
			     strlen(state_texts[i].text);
		uint64_t ms = 12345;
		int ret;

		why = NULL;
		ret = state_file_parse(state_texts[i].text, len, &ms, &why);
		check(ret == state_texts[i].ret &&
		      ms == (ret ? 12345 : state_texts[i].ms) && (!ret || why),
		      "state file: '%.*s' (%zu bytes): %s", (int)strcspn(
		      state_texts[i].text, "\n"), state_texts[i].text, len,
		      state_texts[i].ret ? "refused, saying why" : "accepted");
	}

	/* Through the file: what the writer writes is what the reader reads. */
	if (!mkdtemp(dir)) {
		check(false, "state file: mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/state", dir);
	for (i = 0; i < sizeof(state_texts) / sizeof(state_texts[0]); i++) {
		size_t len = state_texts[i].len ? state_texts[i].len :
			     strlen(state_texts[i].text);
		FILE *f = fopen(path, "w");
		uint64_t ms = 12345, back = 0;
		int ret;

		fwrite(state_texts[i].text, 1, len, f);
		fclose(f);
		ret = state_file_read(path, &ms);
		if (state_texts[i].ret) {
			check(ret == state_texts[i].ret && ms == 12345,
			      "state file read: #%zu refused", i);
			continue;
		}
		check(!ret && ms == state_texts[i].ms && !state_file_write(path, ms) &&
		      !state_file_read(path, &back) && back == ms,
		      "state file read: #%zu, written back the same", i);
	}
	check(state_file_write(path, STATE_FILE_MS_MAX + 1) == -ERANGE,
	      "state file: the writer refuses what the reader would refuse");
	unlink(path);
	check(state_file_read(path, &(uint64_t){ 0 }) == -ENOENT,
	      "state file: a missing file is -ENOENT");
	rmdir(dir);
}

/*
 * A clock before the epoch (now reads 0): standalone waits for it to be
 * set, looking every second, instead of giving up; a stop request ends
 * the wait.
 */
static void test_standalone_clock_before_epoch(void)
{
	char dir[] = "/tmp/idgend-epoch-test.XXXXXX", path[256];
	struct fake_gen g = { .owner = "me" };
	struct device dev = { .ops = &fake_gen_ops, .ctx = &g };
	struct standalone s = {
		.region = 1, .worker = 3, .lease_ms = LEASE_MS,
		.dev = &dev, .clock = &fake_clock,
	};
	uint64_t saved_now = fake_now;

	if (!mkdtemp(dir)) {
		check(false, "clock before the epoch: mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/sub/state", dir);
	s.state_file = path;
	g.state_file = path;
	nr_gens = 0;

	fake_now = 0;
	sleeps = 0;
	clock_stopped = true;
	stop_after_sleeps = 5;
	check(standalone_start(&s) == -EINTR && !g.pushes && sleeps == 6 &&
	      slept_min_ms >= 1000,
	      "clock before the epoch: standalone waits, looking every second, "
	      "nothing pushed, until asked to stop");
	clock_stopped = false;
	stop_after_sleeps = -1;

	fake_now = 0;
	sleeps = 0;
	check(!standalone_start(&s) && g.pushes == 1 && g.h.floor_ms == 0 &&
	      sleeps == 1 && g.h.valid_until_ms == 1000 + LEASE_MS && !g.violation,
	      "clock before the epoch: once the clock is past it, the lease is set");
	unlink(path);
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	rmdir(dir);
	fake_now = saved_now;
}

int main(void)
{
	/* The daemon's log lines, one per lease event: noise here. */
	char log_path[] = "/tmp/idgend-lease-test-log.XXXXXX";
	int fd = mkstemp(log_path);

	/* The daemon's log lines go to a file that the tests read back. */
	if (fd < 0 || !freopen(log_path, "w", stderr))
		return 1;
	close(fd);
	log_file = fopen(log_path, "r");
	if (!getenv("LEASE_TEST_LOG"))
		unlink(log_path);
	else
		printf("# the log: %s\n", log_path);
	if (!log_file)
		return 1;
	printf("TAP version 13\n");
	test_claim_empty();
	test_claim_prefers_expired();
	test_claim_takes_own_back();
	test_claim_spreads();
	test_claim_exhausted();
	test_claim_race();
	test_claim_timeout();
	test_claim_waits_for_sync();
	test_claim_floor_ahead();
	test_renew();
	test_renew_lost();
	test_release();
	test_release_late_renewal();
	test_adopt();
	test_walk("host-a", "host-b", false);
	/* Two hosts with one owner name: only their tokens tell them apart. */
	test_walk("twin", "twin", false);
	/* ... and with one token too: only their write nonces. */
	test_walk("twin", "twin", true);
	test_token();
	test_layout();
	test_region_width();
	test_layout_rewritten();
	test_cut_over_far_ahead();
	test_standalone();
	test_state_file();
	test_standalone_clock_before_epoch();
	return tap_done();
}

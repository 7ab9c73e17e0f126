// SPDX-License-Identifier: GPL-2.0
/*
 * idgen_generator: the generator (generator.h's idgen_gen_*: generator.c,
 * and minting in mint.c) as the device drives it, on the real clock: its
 * state right after init, and the events minting sends.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/time64.h>
#include <linux/timekeeping.h>

#include "generator.h"

#define FENCES_MAX	40000

/*
 * A generator whose events are counted by kind, and whose renewals' fences
 * are logged in the order the events arrive.
 */
struct gen_rig {
	struct idgen_gen gen;
	spinlock_t lock;	/* serialises the counts and the log */
	int events[IDGEN_EVENT_MAX + 1];
	u64 *fences;
	int nfences;
	u64 reached_fence;	/* of the last fence-reached event */
};

static void count_event(struct idgen_gen *gen, const struct idgen_event_info *ev)
{
	struct gen_rig *rig = container_of(gen, struct gen_rig, gen);

	spin_lock(&rig->lock);
	rig->events[ev->type]++;
	if (ev->type == IDGEN_EVENT_LEASE_RENEWED && rig->fences &&
	    rig->nfences < FENCES_MAX)
		rig->fences[rig->nfences++] = ev->valid_until_ms;
	if (ev->type == IDGEN_EVENT_FENCE_REACHED)
		rig->reached_fence = ev->valid_until_ms;
	spin_unlock(&rig->lock);
}

static void gen_rig_free(void *rig)
{
	idgen_clock_stop(&((struct gen_rig *)rig)->gen.clock);
	idgen_gen_uninit(&((struct gen_rig *)rig)->gen);
	rcu_barrier();
}

static struct gen_rig *gen_rig_lead(struct kunit *test, u32 max_lead_ms)
{
	static const struct idgen_bits v1 = { 3, 7, 12 };
	struct gen_rig *rig = kunit_kzalloc(test, sizeof(*rig), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, rig);
	spin_lock_init(&rig->lock);
	KUNIT_ASSERT_EQ(test, idgen_gen_init(&rig->gen, &v1, max_lead_ms, 1000), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, gen_rig_free, rig), 0);
	rig->gen.notify = count_event;
	/* As the module starts it: once events have somewhere to go. */
	idgen_clock_start(&rig->gen.clock);
	return rig;
}

static struct gen_rig *gen_rig_new(struct kunit *test)
{
	return gen_rig_lead(test, 1000);
}

static u64 wall_ms(void)
{
	return div_u64(ktime_get_real_ns(), NSEC_PER_MSEC) - IDGEN_EPOCH_UNIX_MS;
}

/* The offset is taken when the clock starts: a step before the first read shows. */
static void idgen_generator_test_clock_read_at_init(struct kunit *test)
{
	struct gen_rig *rig = gen_rig_new(test);

	KUNIT_EXPECT_TRUE(test, rig->gen.clock.state.valid);
	KUNIT_EXPECT_NE(test, rig->gen.clock.state.ref_raw_ns, 0ULL);
	KUNIT_EXPECT_EQ(test, rig->gen.clock.state.held_ns, 0LL);
}

/*
 * LEAD_EXCEEDED tells of a read refused with ETIME, not of a follow-on
 * batch that stopped at the lead bound while the read returns IDs.
 */
static void idgen_generator_test_lead_event_on_refusal_only(struct kunit *test)
{
	struct gen_rig *rig = gen_rig_new(test);
	struct idgen_lease_args args = { .worker = 1 };
	struct idgen_range r;
	u64 now = wall_ms();

	/* A floor 5 s ahead, beyond the 1 s lead: ETIME, no sleep. */
	args.floor_ms = now + 5000;
	args.valid_until_ms = now + 60000;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(&rig->gen, &args), 0);

	KUNIT_EXPECT_EQ(test, idgen_gen_mint(&rig->gen, NULL, 1, IDGEN_MINT_MORE, &r),
			-ETIME);
	KUNIT_EXPECT_EQ(test, rig->events[IDGEN_EVENT_LEAD_EXCEEDED], 0);
	KUNIT_EXPECT_EQ(test, idgen_gen_mint(&rig->gen, NULL, 1, IDGEN_MINT_NOWAIT, &r),
			-ETIME);
	KUNIT_EXPECT_EQ(test, rig->events[IDGEN_EVENT_LEAD_EXCEEDED], 1);
	idgen_gen_revoke(&rig->gen);
}

/* One of two threads renewing the same lease, each with its own fences. */
struct renewer {
	struct gen_rig *rig;
	u64 base;
	int parity;
	int accepted;
	struct completion done;
};

static int renewer_fn(void *arg)
{
	struct renewer *w = arg;
	struct idgen_lease_args args = { .worker = 1 };
	int i;

	for (i = 0; i < FENCES_MAX / 2; i++) {
		args.valid_until_ms = w->base + 2 * i + w->parity;
		/* A fence below the one in force is refused: no event. */
		if (!idgen_gen_set_lease(&w->rig->gen, &args))
			w->accepted++;
		if (!(i % 64))
			cond_resched();
	}
	complete(&w->done);
	return 0;
}

/*
 * Lease events leave in the order the changes were made: two threads
 * renew one lease with fences that interleave, and the fences the events
 * carry never go back.
 */
static void idgen_generator_test_lease_events_in_order(struct kunit *test)
{
	struct gen_rig *rig = gen_rig_new(test);
	struct idgen_lease_args args = { .worker = 1 };
	struct renewer *w = kunit_kcalloc(test, 2, sizeof(*w), GFP_KERNEL);
	u64 now = wall_ms();
	struct task_struct *t[2];
	int i, back = 0;

	KUNIT_ASSERT_NOT_NULL(test, w);
	rig->fences = kunit_kcalloc(test, FENCES_MAX, sizeof(u64), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rig->fences);
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	args.valid_until_ms = now + 60000;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(&rig->gen, &args), 0);

	for (i = 0; i < 2; i++) {
		w[i].rig = rig;
		w[i].base = now + 60000;
		w[i].parity = i;
		init_completion(&w[i].done);
		t[i] = kthread_run(renewer_fn, &w[i], "idgen-renew/%d", i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(t[i]));
	}
	for (i = 0; i < 2; i++)
		wait_for_completion(&w[i].done);

	KUNIT_EXPECT_EQ(test, rig->nfences, w[0].accepted + w[1].accepted);
	for (i = 1; i < rig->nfences; i++)
		back += rig->fences[i] < rig->fences[i - 1];
	KUNIT_EXPECT_EQ_MSG(test, back, 0, "%d of %d renewal events out of order",
			    back, rig->nfences);
	idgen_gen_revoke(&rig->gen);
}

/* A reader on another CPU, started on demand, that mints one ID. */
struct delayed_minter {
	struct idgen_gen *gen;
	struct completion go, done;
	atomic_t minting;
	u64 minting_ms;		/* the wall clock as it began */
	int err;
};

static int delayed_minter_fn(void *arg)
{
	struct delayed_minter *m = arg;
	struct idgen_range r;

	wait_for_completion(&m->go);
	m->minting_ms = wall_ms();
	atomic_set(&m->minting, 1);
	m->err = idgen_gen_mint(m->gen, NULL, 1, IDGEN_MINT_NOWAIT, &r);
	complete(&m->done);
	return 0;
}

/*
 * A reader held up for longer than the lead between reading the clock and
 * reserving is judged on the clock as it is then, not as it was: here it
 * waits on a lease switch for 300 ms, with a lead of 100 ms, and meets a
 * state word 250 ms past the clock it read first.
 */
static void idgen_generator_test_clock_read_again_after_delay(struct kunit *test)
{
	struct gen_rig *rig = gen_rig_lead(test, 100);
	struct idgen_lease_args args = { .worker = 1 };
	struct delayed_minter *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	struct idgen_lease *lease;
	struct task_struct *t;
	int cpu, here, other = -1;
	u64 next;

	KUNIT_ASSERT_NOT_NULL(test, m);
	/*
	 * Stay on this CPU until the spin below is over: moved onto the
	 * minter's CPU, it would spin there with the lock held for ever.
	 */
	migrate_disable();
	here = raw_smp_processor_id();
	for_each_online_cpu(cpu)
		if (cpu != here)
			other = cpu;
	if (other < 0) {
		migrate_enable();
		kunit_skip(test, "needs a second CPU");
	}
	args.valid_until_ms = wall_ms() + 60000;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(&rig->gen, &args), 0);
	m->gen = &rig->gen;
	init_completion(&m->go);
	init_completion(&m->done);
	t = kthread_create(delayed_minter_fn, m, "idgen-delayed");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	kthread_bind(t, other);
	wake_up_process(t);

	/* A switch under way: the reader will wait for it, as readers do. */
	lease = rcu_dereference_protected(rig->gen.lease, true);
	spin_lock(&rig->gen.switch_lock);
	next = idgen_lease_close(lease);
	complete(&m->go);
	while (!atomic_read(&m->minting))
		cpu_relax();
	/* By the wall clock: a busy delay runs short in a slow guest. */
	while (wall_ms() < m->minting_ms + 300)
		cpu_relax();
	/* The switch ends with the state word 250 ms past the clock then. */
	idgen_lease_reopen(lease, max(next, (m->minting_ms + 250) <<
				      lease->layout.seq_bits));
	spin_unlock(&rig->gen.switch_lock);
	migrate_enable();

	wait_for_completion(&m->done);
	KUNIT_EXPECT_EQ(test, m->err, 0);
	idgen_gen_revoke(&rig->gen);
}

/* Mint until the fence refuses: the number of IDs minted. */
static u64 mint_to_fence(struct kunit *test, struct gen_rig *rig)
{
	struct idgen_range r;
	u64 n = 0;
	int err;

	while (!(err = idgen_gen_mint(&rig->gen, NULL, 4096, IDGEN_MINT_NOWAIT, &r)))
		n += r.count;
	KUNIT_EXPECT_EQ(test, err, -EKEYEXPIRED);
	return n;
}

/*
 * A fence-reached event speaks of the fence the refused reader judged, once
 * per fence: a renewal neither lends a reader that judged the old fence
 * the new one, nor uses up the event the new fence is owed.
 */
static void idgen_generator_test_fence_event_per_fence(struct kunit *test)
{
	struct gen_rig *rig = gen_rig_new(test);
	struct idgen_lease_args a = {};
	atomic64_t sent = ATOMIC64_INIT(0);
	u64 now = wall_ms();

	/* The race, as the rule sees it: judged F1, renewed to F2 meanwhile. */
	KUNIT_EXPECT_TRUE(test, idgen_fence_event_claim(&sent, 1000));
	KUNIT_EXPECT_FALSE(test, idgen_fence_event_claim(&sent, 1000));
	KUNIT_EXPECT_TRUE(test, idgen_fence_event_claim(&sent, 2000));
	KUNIT_EXPECT_FALSE(test, idgen_fence_event_claim(&sent, 1000));
	KUNIT_EXPECT_FALSE(test, idgen_fence_event_claim(&sent, 2000));

	/* Two ms of room, ahead of the clock within the lead. */
	a.floor_ms = now + 100;
	a.valid_until_ms = now + 103;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(&rig->gen, &a), 0);
	KUNIT_EXPECT_GT(test, mint_to_fence(test, rig), 0);
	mint_to_fence(test, rig);
	KUNIT_EXPECT_EQ(test, rig->events[IDGEN_EVENT_FENCE_REACHED], 1);
	KUNIT_EXPECT_EQ(test, rig->reached_fence, now + 103);

	a.valid_until_ms = now + 105;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(&rig->gen, &a), 0);
	KUNIT_EXPECT_GT(test, mint_to_fence(test, rig), 0);
	KUNIT_EXPECT_EQ(test, rig->events[IDGEN_EVENT_FENCE_REACHED], 2);
	KUNIT_EXPECT_EQ(test, rig->reached_fence, now + 105);
	idgen_gen_revoke(&rig->gen);
}

/*
 * Fill the borrow window as a reader of no file, then ask for one ID
 * through @share with @flags: the answer, tried again while the clock
 * moves on between the two.
 */
static int mint_after_fill(struct gen_rig *rig, struct idgen_share *share,
			   unsigned int flags)
{
	struct idgen_range r;
	int i, err = 0;

	for (i = 0; i < 100 && !err; i++) {
		while (!idgen_gen_mint(&rig->gen, NULL, 4096, IDGEN_MINT_NOWAIT, &r))
			;
		err = idgen_gen_mint(&rig->gen, share, 1, flags, &r);
	}
	return err;
}

/*
 * A read the borrow bound refuses is a wait, and may become the oldest,
 * unless it is a non-blocking read's follow-on batch, which returns the
 * IDs it has; closing the file ends the wait.
 */
static void idgen_generator_test_waits_recorded(struct kunit *test)
{
	struct gen_rig *rig = gen_rig_new(test);
	struct idgen_lease_args a = { .worker = 1 };
	struct idgen_oldest_wait *o = &rig->gen.oldest_wait;
	struct idgen_share share;

	atomic64_set(&share.word, 0);
	atomic64_set(&share.wait, 0);
	atomic64_set(&share.back_by, 0);
	a.valid_until_ms = wall_ms() + 60000;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(&rig->gen, &a), 0);

	/* Blocking reads wait, first batch or not; non-blocking ones once. */
	KUNIT_EXPECT_TRUE(test, idgen_mint_waits(0));
	KUNIT_EXPECT_TRUE(test, idgen_mint_waits(IDGEN_MINT_MORE));
	KUNIT_EXPECT_TRUE(test, idgen_mint_waits(IDGEN_MINT_NOWAIT));
	KUNIT_EXPECT_FALSE(test, idgen_mint_waits(IDGEN_MINT_NOWAIT |
						  IDGEN_MINT_MORE));

	KUNIT_EXPECT_EQ(test, mint_after_fill(rig, &share, IDGEN_MINT_NOWAIT |
					      IDGEN_MINT_MORE), -EAGAIN);
	KUNIT_EXPECT_EQ(test, atomic64_read(&share.wait), 0LL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&o->since), 0LL);

	KUNIT_EXPECT_EQ(test, mint_after_fill(rig, &share, IDGEN_MINT_NOWAIT),
			-EAGAIN);
	KUNIT_EXPECT_NE(test, atomic64_read(&share.wait), 0LL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&o->since),
			atomic64_read(&share.wait));

	idgen_gen_share_closed(&rig->gen, &share);
	KUNIT_EXPECT_EQ(test, atomic64_read(&share.wait), 0LL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&o->since), 0LL);
	idgen_gen_revoke(&rig->gen);
}

/*
 * Alone, a file may take the whole node; while another file's wait is the
 * oldest, it is held to its share, a quarter of a millisecond's IDs.
 */
static void idgen_generator_test_share_only_when_others_wait(struct kunit *test)
{
	struct gen_rig *rig = gen_rig_new(test);
	struct idgen_lease_args a = { .worker = 1 };
	struct idgen_oldest_wait *o = &rig->gen.oldest_wait;
	struct idgen_share share;
	struct idgen_range r;

	atomic64_set(&share.word, 0);
	atomic64_set(&share.wait, 0);
	atomic64_set(&share.back_by, 0);
	a.valid_until_ms = wall_ms() + 60000;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(&rig->gen, &a), 0);

	KUNIT_ASSERT_EQ(test, idgen_gen_mint(&rig->gen, &share, 4096,
					     IDGEN_MINT_NOWAIT, &r), 0);
	KUNIT_EXPECT_EQ(test, r.count, 4096U);

	/* Another file's wait, as a refusal would have left it. */
	atomic64_set(&o->until, wall_ms() + 60000);
	atomic64_set(&o->since, 12345);
	KUNIT_ASSERT_EQ(test, idgen_gen_mint(&rig->gen, &share, 4096,
					     IDGEN_MINT_NOWAIT, &r), 0);
	KUNIT_EXPECT_LE(test, r.count, idgen_share_quota(12));
	atomic64_set(&o->since, 0);
	idgen_gen_revoke(&rig->gen);
}

/*
 * A poller whose read was refused reads again only once poll() says it
 * may: poll() refusing it must go on with its wait, or its wait could
 * never become the oldest and it would never be told.
 */
static void idgen_generator_test_poll_goes_on_with_a_wait(struct kunit *test)
{
	struct gen_rig *rig = gen_rig_new(test);
	struct idgen_lease_args a = { .worker = 1 };
	struct idgen_oldest_wait *o = &rig->gen.oldest_wait;
	struct idgen_share first, poller;
	struct idgen_range r;
	int i, err = 0;

	atomic64_set(&first.word, 0);
	atomic64_set(&first.wait, 0);
	atomic64_set(&first.back_by, 0);
	poller = first;
	a.valid_until_ms = wall_ms() + 60000;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(&rig->gen, &a), 0);

	/* Two refused reads, the first file's wait the older. */
	KUNIT_ASSERT_EQ(test, mint_after_fill(rig, &first, IDGEN_MINT_NOWAIT),
			-EAGAIN);
	KUNIT_ASSERT_EQ(test, mint_after_fill(rig, &poller, IDGEN_MINT_NOWAIT),
			-EAGAIN);
	KUNIT_ASSERT_EQ(test, atomic64_read(&o->since),
			atomic64_read(&first.wait));
	/* The first file is served and leaves: the poller's wait is next. */
	idgen_gen_share_closed(&rig->gen, &first);
	KUNIT_ASSERT_EQ(test, atomic64_read(&o->since), 0LL);
	for (i = 0; i < 100 && err != -EAGAIN; i++) {
		while (!idgen_gen_mint(&rig->gen, NULL, 4096, IDGEN_MINT_NOWAIT, &r))
			;
		err = idgen_gen_probe(&rig->gen, &poller);
	}
	KUNIT_EXPECT_EQ(test, err, -EAGAIN);
	KUNIT_EXPECT_NE(test, atomic64_read(&poller.wait), 0LL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&o->since),
			atomic64_read(&poller.wait));
	idgen_gen_share_closed(&rig->gen, &poller);
	idgen_gen_revoke(&rig->gen);
}

/*
 * The fast path serves only where the full path would serve the same
 * way: it leaves to the full path a clock absorbing a step back, a wait
 * that holds, and a file of its own waiting; it sends the fence-near
 * event once per fence as the full path does.  Its refusals hold
 * whatever the timing; where it must serve, it is given a few tries, so
 * that a reader preempted past the clock's refresh period is not taken
 * for a refusal.
 */
static bool mint_fast_soon(struct gen_rig *rig, struct idgen_share *share)
{
	struct idgen_range r;
	int i;

	for (i = 0; i < 10; i++) {
		/* A fresh reading of the clock: the fast path judges against it. */
		idgen_clock_read(&rig->gen.clock, false, NULL);
		if (idgen_gen_mint_fast(&rig->gen, share, 1, &r))
			return true;
	}
	return false;
}

static void idgen_generator_test_fast_path_defers(struct kunit *test)
{
	struct gen_rig *rig = gen_rig_new(test);
	struct idgen_lease_args args = { .worker = 1 };
	struct idgen_gen *gen = &rig->gen;
	struct idgen_share share = {};
	struct idgen_range r;
	u64 now = wall_ms();

	args.valid_until_ms = now + 3600000;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(gen, &args), 0);
	KUNIT_EXPECT_TRUE(test, mint_fast_soon(rig, NULL));
	KUNIT_EXPECT_TRUE(test, mint_fast_soon(rig, &share));

	/* The clock reads below the mark: a step back is being absorbed. */
	atomic64_set(&gen->clock_high_ms, now + 1000000);
	KUNIT_EXPECT_FALSE(test, idgen_gen_mint_fast(gen, NULL, 1, &r));
	atomic64_set(&gen->clock_high_ms, 0);
	KUNIT_EXPECT_TRUE(test, mint_fast_soon(rig, NULL));

	/* Another file's wait holds: readers are held to their shares. */
	atomic64_set(&gen->oldest_wait.since, 5);
	atomic64_set(&gen->oldest_wait.until, now + 1000000);
	KUNIT_EXPECT_FALSE(test, idgen_gen_mint_fast(gen, NULL, 1, &r));
	KUNIT_EXPECT_FALSE(test, idgen_gen_mint_fast(gen, &share, 1, &r));
	/* ... until it lapses, though its ticket stays. */
	atomic64_set(&gen->oldest_wait.until, 0);
	KUNIT_EXPECT_TRUE(test, mint_fast_soon(rig, &share));
	atomic64_set(&gen->oldest_wait.since, 0);

	/* The file's own wait: the full path serves it, and ends the wait. */
	atomic64_set(&share.wait, 7);
	KUNIT_EXPECT_FALSE(test, idgen_gen_mint_fast(gen, &share, 1, &r));
	KUNIT_EXPECT_EQ(test, idgen_gen_mint(gen, &share, 1, IDGEN_MINT_NOWAIT, &r), 0);
	KUNIT_EXPECT_EQ(test, atomic64_read(&share.wait), 0LL);
	KUNIT_EXPECT_TRUE(test, mint_fast_soon(rig, &share));

	/* A lease 30 s from its fence, within fence_near_ms of it. */
	args.valid_until_ms = wall_ms() + 30000;
	args.worker = 2;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(gen, &args), 0);
	KUNIT_EXPECT_EQ(test, rig->events[IDGEN_EVENT_FENCE_NEAR], 0);
	/* The fence-near event, once per fence. */
	KUNIT_EXPECT_TRUE(test, mint_fast_soon(rig, NULL));
	KUNIT_EXPECT_EQ(test, rig->events[IDGEN_EVENT_FENCE_NEAR], 1);
	KUNIT_EXPECT_TRUE(test, mint_fast_soon(rig, NULL));
	KUNIT_EXPECT_EQ(test, rig->events[IDGEN_EVENT_FENCE_NEAR], 1);
	/* No lease: nothing. */
	idgen_gen_revoke(gen);
	KUNIT_EXPECT_FALSE(test, idgen_gen_mint_fast(gen, NULL, 1, &r));
}

/* Step the wall clock by @step_ns, as clock_settime() would. */
static void step_wall_clock(struct kunit *test, s64 step_ns)
{
	struct timespec64 ts;

	ktime_get_real_ts64(&ts);
	ts = timespec64_add(ts, ns_to_timespec64(step_ns));
	KUNIT_ASSERT_EQ(test, do_settimeofday64(&ts), 0);
}

/* Step the wall clock forward again by *@arg ns, if it was stepped back. */
static void unstep_wall_clock(void *arg)
{
	const s64 *back_ns = arg;
	struct timespec64 ts;

	if (!*back_ns)
		return;
	ktime_get_real_ts64(&ts);
	ts = timespec64_add(ts, ns_to_timespec64(*back_ns));
	do_settimeofday64(&ts);
}

/*
 * C3: the wall clock stepped back by three times the lead, right after
 * IDs were stamped.  Every read is refused with ETIME until it catches
 * up, on either path, blocking or not, and poll says so; the state
 * shows the next ID more than the lead ahead of the wall clock, which
 * is what takes idgen-httpd out of rotation.  The step is the real
 * clock's, undone once the generator is gone.
 */
static void idgen_generator_test_step_back_past_lead(struct kunit *test)
{
	const u32 lead_ms = 1000;
	s64 *back_ns = kunit_kzalloc(test, sizeof(*back_ns), GFP_KERNEL);
	struct idgen_lease_args args = { .worker = 1 };
	struct idgen_share share = {};
	struct idgen_state st;
	struct idgen_range r;
	struct idgen_gen *gen;
	struct gen_rig *rig;

	KUNIT_ASSERT_NOT_NULL(test, back_ns);
	/* Registered first, so undone last: after the generator is gone. */
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, unstep_wall_clock,
							back_ns), 0);
	rig = gen_rig_lead(test, lead_ms);
	gen = &rig->gen;
	args.valid_until_ms = wall_ms() + 3600000;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(gen, &args), 0);
	KUNIT_ASSERT_EQ(test, idgen_gen_mint(gen, &share, 1, IDGEN_MINT_NOWAIT, &r),
			0);
	KUNIT_ASSERT_TRUE(test, mint_fast_soon(rig, &share));

	step_wall_clock(test, -3LL * lead_ms * NSEC_PER_MSEC);
	*back_ns = 3LL * lead_ms * NSEC_PER_MSEC;

	/* The full path judges the step first, then the fast path meets it. */
	KUNIT_EXPECT_EQ(test, idgen_gen_mint(gen, &share, 1, IDGEN_MINT_NOWAIT, &r),
			-ETIME);
	KUNIT_EXPECT_EQ(test, idgen_gen_mint_one(gen, &share), 0ULL);
	KUNIT_EXPECT_EQ(test, idgen_gen_mint_one(gen, NULL), 0ULL);
	KUNIT_EXPECT_FALSE(test, idgen_gen_mint_fast(gen, &share, 4, &r));
	KUNIT_EXPECT_EQ(test, idgen_gen_mint(gen, NULL, 4, 0, &r), -ETIME);
	KUNIT_EXPECT_EQ(test, idgen_gen_probe(gen, &share), -ETIME);

	idgen_gen_get_state(gen, &st);
	KUNIT_EXPECT_GT(test, st.next_ms, st.wall_ms + st.max_lead_ms);
	KUNIT_EXPECT_EQ(test, st.steps_back, 1ULL);
	KUNIT_EXPECT_EQ(test, rig->events[IDGEN_EVENT_CLOCK_STEP_BACK], 1);
	idgen_gen_share_closed(gen, &share);
	idgen_gen_revoke(gen);
}

static struct kunit_case idgen_generator_test_cases[] = {
	KUNIT_CASE(idgen_generator_test_clock_read_at_init),
	KUNIT_CASE(idgen_generator_test_lead_event_on_refusal_only),
	KUNIT_CASE_SLOW(idgen_generator_test_lease_events_in_order),
	KUNIT_CASE(idgen_generator_test_clock_read_again_after_delay),
	KUNIT_CASE(idgen_generator_test_fence_event_per_fence),
	KUNIT_CASE(idgen_generator_test_waits_recorded),
	KUNIT_CASE(idgen_generator_test_share_only_when_others_wait),
	KUNIT_CASE(idgen_generator_test_poll_goes_on_with_a_wait),
	KUNIT_CASE(idgen_generator_test_fast_path_defers),
	KUNIT_CASE(idgen_generator_test_step_back_past_lead),
	{}
};

static struct kunit_suite idgen_generator_suite = {
	.name = "idgen_generator",
	.test_cases = idgen_generator_test_cases,
};

kunit_test_suite(idgen_generator_suite);

// SPDX-License-Identifier: GPL-2.0
/*
 * idgen_admin: lease changes (admin.c) against concurrent readers.  A
 * kthread on every CPU mints batches through the real generator while the
 * test renews, switches and revokes leases under them.
 * Afterwards: every ID is unique, every thread's IDs increase, every lease's
 * IDs lie at or below the last ms its close reported (F3), and each lease's
 * IDs are all above the previous lease's (G2).
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/random.h>
#include <linux/sort.h>
#include <linux/vmalloc.h>
#include <uapi/linux/idgen.h>

#include "generator.h"

#define MINT_IDS_PER_THREAD	(96 * 1024)
#define MINT_LEASES		24	/* workers 1..MINT_LEASES, in order */
#define MINT_MS			2500

struct minter {
	struct idgen_gen *gen;
	struct task_struct *task;
	u64 *ids;
	size_t n;
	unsigned long calls, refusals, fast;
};

static int minter_fn(void *data)
{
	struct minter *m = data;
	struct idgen_range r;
	u32 i, want;

	while (!kthread_should_stop()) {
		if (m->n == MINT_IDS_PER_THREAD) {
			schedule_timeout_interruptible(1);
			continue;
		}
		want = 1 + get_random_u32_below(64);
		want = min_t(size_t, want, MINT_IDS_PER_THREAD - m->n);
		m->calls++;
		/* Half the calls try the fast path first, as read(2) does. */
		if ((m->calls & 1) && idgen_gen_mint_fast(m->gen, NULL, want, &r)) {
			m->fast++;
		} else if (idgen_gen_mint(m->gen, NULL, want, IDGEN_MINT_NOWAIT,
					  &r)) {
			m->refusals++;
			cond_resched();
			continue;
		}
		for (i = 0; i < r.count; i++)
			m->ids[m->n++] = idgen_tick_id(r.first + i, r.seq_bits,
						       r.node_bits);
		cond_resched();
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * The clock is refreshed from a work item from idgen_clock_start() on:
 * should an assertion end a test early, it must not run on the freed
 * generator.
 */
static void stop_clock_refresh(void *gen)
{
	idgen_clock_stop(&((struct idgen_gen *)gen)->clock);
}

static void idgen_admin_test_leases_under_load(struct kunit *test)
{
	static const struct idgen_bits v1 = { 3, 7, 12 };
	struct idgen_gen *gen = kunit_kzalloc(test, sizeof(*gen), GFP_KERNEL);
	/* Per worker: the last ms its close reported, its lowest and highest ID. */
	u64 *closed_at = kunit_kcalloc(test, MINT_LEASES + 1, sizeof(u64), GFP_KERNEL);
	u64 *lo = kunit_kcalloc(test, MINT_LEASES + 1, sizeof(u64), GFP_KERNEL);
	u64 *hi = kunit_kcalloc(test, MINT_LEASES + 1, sizeof(u64), GFP_KERNEL);
	struct idgen_lease_args args = {};
	struct minter *m;
	unsigned long deadline;
	int cpu, nr = 0, i, worker = 1, revokes = 0, renewals = 0;
	size_t total = 0, k;
	unsigned long fast = 0, full = 0;
	u64 *all;

	KUNIT_ASSERT_NOT_NULL(test, gen);
	KUNIT_ASSERT_TRUE(test, closed_at && lo && hi);
	KUNIT_ASSERT_EQ(test, idgen_gen_init(gen, &v1, 1000, 1000), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, stop_clock_refresh, gen), 0);
	idgen_clock_start(&gen->clock);
	m = kunit_kcalloc(test, nr_cpu_ids, sizeof(*m), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, m);

	args.worker = worker;
	args.floor_ms = 0;
	args.valid_until_ms = IDGEN_MS_MAX;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(gen, &args), 0);

	for_each_online_cpu(cpu) {
		struct minter *t = &m[nr];

		t->gen = gen;
		t->ids = vmalloc(array_size(MINT_IDS_PER_THREAD, sizeof(u64)));
		KUNIT_ASSERT_NOT_NULL(test, t->ids);
		t->task = kthread_create(minter_fn, t, "idgen-mint/%d", cpu);
		KUNIT_ASSERT_FALSE(test, IS_ERR(t->task));
		kthread_bind(t->task, cpu);
		wake_up_process(t->task);
		nr++;
	}

	/* Change the lease under the minters: renew, switch, revoke. */
	deadline = jiffies + msecs_to_jiffies(MINT_MS);
	while (time_before(jiffies, deadline) && worker < MINT_LEASES) {
		usleep_range(20000, 40000);
		switch (get_random_u32_below(3)) {
		case 0:
			args.valid_until_ms = IDGEN_MS_MAX + 1;
			KUNIT_EXPECT_EQ(test, idgen_gen_set_lease(gen, &args), 0);
			renewals++;
			break;
		case 1:
			closed_at[worker] = idgen_gen_revoke(gen);
			revokes++;
			usleep_range(1000, 2000);
			fallthrough;
		default:
			/* The successor's first ms is gen->last_ms + 1. */
			args.worker = ++worker;
			args.valid_until_ms = IDGEN_MS_MAX;
			KUNIT_EXPECT_EQ(test, idgen_gen_set_lease(gen, &args), 0);
			if (!closed_at[worker - 1])
				closed_at[worker - 1] = gen->last_ms;
			break;
		}
	}
	closed_at[worker] = idgen_gen_revoke(gen);

	for (i = 0; i < nr; i++) {
		kthread_stop(m[i].task);
		total += m[i].n;
		fast += m[i].fast;
		full += m[i].calls - m[i].fast;
	}
	kunit_info(test, "%d threads minted %zu IDs under %d leases (%d revokes, %d renewals), %lu calls served fast, %lu not\n",
		   nr, total, worker, revokes, renewals, fast, full);
	KUNIT_EXPECT_GT(test, total, (size_t)10000);
	/* Both paths raced each other and the lease changes. */
	KUNIT_EXPECT_GT(test, fast, 1000UL);
	KUNIT_EXPECT_GT(test, full, 1000UL);
	KUNIT_EXPECT_GE(test, worker, 3);

	all = vmalloc(array_size(total ?: 1, sizeof(u64)));
	KUNIT_ASSERT_NOT_NULL(test, all);
	for (i = 0; i <= MINT_LEASES; i++) {
		lo[i] = U64_MAX;
		hi[i] = 0;
	}
	total = 0;
	for (i = 0; i < nr; i++) {
		for (k = 0; k < m[i].n; k++) {
			u64 id = m[i].ids[k];
			u32 w = (id >> 12) & 127;

			/* Per thread: strictly increasing. */
			if (k)
				KUNIT_ASSERT_GT(test, id, m[i].ids[k - 1]);
			KUNIT_ASSERT_GE(test, w, 1U);
			KUNIT_ASSERT_LE(test, w, (u32)worker);
			/* F3: nothing above what the lease's close reported. */
			KUNIT_ASSERT_LE_MSG(test, id >> IDGEN_NODE_SEQ_BITS,
					    closed_at[w], "worker %u", w);
			lo[w] = min(lo[w], id);
			hi[w] = max(hi[w], id);
			all[total++] = id;
		}
		vfree(m[i].ids);
	}

	/* G2 across leases: each lease's IDs above all its predecessors'. */
	for (i = 2; i <= worker; i++)
		if (lo[i] != U64_MAX && hi[i - 1])
			KUNIT_EXPECT_GT_MSG(test, lo[i], hi[i - 1], "worker %d", i);

	/* G1: unique. */
	sort(all, total, sizeof(u64), cmp_u64, NULL);
	for (k = 1; k < total; k++)
		KUNIT_ASSERT_NE(test, all[k], all[k - 1]);
	vfree(all);
	idgen_clock_stop(&gen->clock);
	idgen_gen_uninit(gen);
	rcu_barrier();
}

/*
 * F3 made deterministic: a reader that found the lease before a revoke or
 * a node switch, and reserves only after it, must be refused (and look the
 * lease up again), not mint under the retired lease.
 */
struct inflight {
	struct idgen_gen *gen;
	struct completion found;
	struct completion done;
	atomic_t go;
	int err;
};

static int inflight_fn(void *data)
{
	struct inflight *f = data;
	struct idgen_lease *lease;
	struct idgen_range r;
	u64 wait, borrowed;

	rcu_read_lock();
	lease = rcu_dereference(f->gen->lease);
	complete(&f->found);
	while (!atomic_read(&f->go))
		cpu_relax();
	f->err = idgen_lease_reserve(lease, 0, 1000, IDGEN_BORROW_ANY, 1, &r, &wait, &borrowed);
	rcu_read_unlock();
	complete(&f->done);
	while (!kthread_should_stop())
		schedule_timeout_interruptible(1);
	return 0;
}

static void idgen_admin_run_inflight(struct kunit *test, bool revoke)
{
	static const struct idgen_bits v1 = { 3, 7, 12 };
	struct idgen_gen *gen = kunit_kzalloc(test, sizeof(*gen), GFP_KERNEL);
	struct idgen_lease_args args = { .worker = 1, .valid_until_ms = IDGEN_MS_MAX };
	struct inflight *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct task_struct *t;
	int cpu, other = -1;

	KUNIT_ASSERT_TRUE(test, gen && f);
	for_each_online_cpu(cpu)
		if (cpu != raw_smp_processor_id())
			other = cpu;
	if (other < 0)
		kunit_skip(test, "needs a second CPU");

	KUNIT_ASSERT_EQ(test, idgen_gen_init(gen, &v1, 1000, 1000), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, stop_clock_refresh, gen), 0);
	idgen_clock_start(&gen->clock);
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(gen, &args), 0);
	f->gen = gen;
	init_completion(&f->found);
	init_completion(&f->done);
	t = kthread_create(inflight_fn, f, "idgen-inflight");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	kthread_bind(t, other);
	wake_up_process(t);

	wait_for_completion(&f->found);
	if (revoke) {
		idgen_gen_revoke(gen);
	} else {
		args.worker = 2;
		KUNIT_EXPECT_EQ(test, idgen_gen_set_lease(gen, &args), 0);
	}
	atomic_set(&f->go, 1);
	wait_for_completion(&f->done);
	kthread_stop(t);

	KUNIT_EXPECT_EQ(test, f->err, -ESTALE);
	idgen_gen_revoke(gen);
	idgen_clock_stop(&gen->clock);
	idgen_gen_uninit(gen);
	rcu_barrier();
}

static void idgen_admin_test_inflight_revoke(struct kunit *test)
{
	idgen_admin_run_inflight(test, true);
}

static void idgen_admin_test_inflight_switch(struct kunit *test)
{
	idgen_admin_run_inflight(test, false);
}

static struct kunit_case idgen_admin_test_cases[] = {
	KUNIT_CASE(idgen_admin_test_inflight_revoke),
	KUNIT_CASE(idgen_admin_test_inflight_switch),
	KUNIT_CASE_SLOW(idgen_admin_test_leases_under_load),
	{}
};

static struct kunit_suite idgen_admin_suite = {
	.name = "idgen_admin",
	.test_cases = idgen_admin_test_cases,
};

kunit_test_suite(idgen_admin_suite);

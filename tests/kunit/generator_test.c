// SPDX-License-Identifier: GPL-2.0
/*
 * idgen_generator: the generator as the device drives it, on the real
 * clock: its state right after init, and the events minting sends.
 */
#include <kunit/test.h>
#include <linux/math64.h>
#include <linux/rcupdate.h>

#include "generator.h"

/* A generator whose events are counted by kind. */
struct gen_rig {
	struct idgen_gen gen;
	int events[IDGEN_EVENT_MAX + 1];
};

static void count_event(struct idgen_gen *gen, const struct idgen_event_info *ev)
{
	container_of(gen, struct gen_rig, gen)->events[ev->type]++;
}

static void gen_rig_free(void *rig)
{
	idgen_gen_uninit(&((struct gen_rig *)rig)->gen);
	rcu_barrier();
}

static struct gen_rig *gen_rig_new(struct kunit *test)
{
	static const struct idgen_layout v1 = { 3, 7, 12 };
	struct gen_rig *rig = kunit_kzalloc(test, sizeof(*rig), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, rig);
	KUNIT_ASSERT_EQ(test, idgen_gen_init(&rig->gen, &v1, 1000, 1000), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, gen_rig_free, rig), 0);
	rig->gen.notify = count_event;
	return rig;
}

/* The clock's offset is taken at init: a step before the first read shows. */
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
	u64 now = div_u64(ktime_get_real_ns(), NSEC_PER_MSEC) -
		  IDGEN_EPOCH_UNIX_MS;

	/* A floor 5 s ahead, beyond the 1 s lead: ETIME, no sleep. */
	args.floor_ms = now + 5000;
	args.valid_until_ms = now + 60000;
	KUNIT_ASSERT_EQ(test, idgen_gen_set_lease(&rig->gen, &args), 0);

	KUNIT_EXPECT_EQ(test, idgen_gen_mint(&rig->gen, 1, IDGEN_MINT_MORE, &r),
			-ETIME);
	KUNIT_EXPECT_EQ(test, rig->events[IDGEN_EVENT_LEAD_EXCEEDED], 0);
	KUNIT_EXPECT_EQ(test, idgen_gen_mint(&rig->gen, 1, IDGEN_MINT_NOWAIT, &r),
			-ETIME);
	KUNIT_EXPECT_EQ(test, rig->events[IDGEN_EVENT_LEAD_EXCEEDED], 1);
	idgen_gen_revoke(&rig->gen);
}

static struct kunit_case idgen_generator_test_cases[] = {
	KUNIT_CASE(idgen_generator_test_clock_read_at_init),
	KUNIT_CASE(idgen_generator_test_lead_event_on_refusal_only),
	{}
};

static struct kunit_suite idgen_generator_suite = {
	.name = "idgen_generator",
	.test_cases = idgen_generator_test_cases,
};

kunit_test_suite(idgen_generator_suite);

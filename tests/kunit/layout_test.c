// SPDX-License-Identifier: GPL-2.0
/*
 * idgen_layout: composing and taking apart IDs, for every width split.
 */
#include <kunit/test.h>

#include "layout.h"

/*
 * An ID taken apart again, as user space does it (lib/decode.c): the
 * module itself never decodes, so this lives with the tests of its layout.
 */
struct idgen_fields {
	u64 ms;
	u32 region;
	u32 worker;
	u32 seq;
};

static void idgen_decompose(const struct idgen_bits *l, u64 id,
			    struct idgen_fields *f)
{
	u64 low = id & ((1ULL << IDGEN_NODE_SEQ_BITS) - 1);

	f->ms = id >> IDGEN_NODE_SEQ_BITS;
	f->seq = low & ((1ULL << l->seq_bits) - 1);
	f->worker = (low >> l->seq_bits) & ((1ULL << l->worker_bits) - 1);
	f->region = low >> (l->seq_bits + l->worker_bits);
}

/* The smallest ID any node can mint in millisecond @ms. */
static u64 idgen_min_id_at(u64 ms)
{
	return ms << IDGEN_NODE_SEQ_BITS;
}

struct idgen_layout_case {
	const char *name;
	struct idgen_bits layout;
};

static const struct idgen_layout_case idgen_layout_cases[] = {
	{ "v1 3/7/12", { 3, 7, 12 } },
	{ "many hosts 3/10/9", { 3, 10, 9 } },
	{ "no region 0/10/12", { 0, 10, 12 } },
	{ "widest region 8/8/6", { 8, 8, 6 } },
	{ "one node 0/0/22", { 0, 0, 22 } },
	{ "widest worker 0/16/6", { 0, 16, 6 } },
};

static void idgen_layout_case_desc(const struct idgen_layout_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(idgen_layout, idgen_layout_cases, idgen_layout_case_desc);

static void idgen_layout_roundtrip(struct kunit *test, const struct idgen_bits *l,
				   u64 ms, u32 region, u32 worker, u32 seq)
{
	u64 tick = ms << l->seq_bits | seq;
	u64 id = idgen_tick_id(tick, l->seq_bits, idgen_node_bits(l, region, worker));
	struct idgen_fields f;

	KUNIT_EXPECT_EQ(test, id >> 63, 0ULL);
	KUNIT_EXPECT_EQ(test, idgen_tick_ms(tick, l->seq_bits), ms);
	idgen_decompose(l, id, &f);
	KUNIT_EXPECT_EQ(test, f.ms, ms);
	KUNIT_EXPECT_EQ(test, f.region, region);
	KUNIT_EXPECT_EQ(test, f.worker, worker);
	KUNIT_EXPECT_EQ(test, f.seq, seq);
	/* The smallest ID of a millisecond bounds every ID of it. */
	KUNIT_EXPECT_LE(test, idgen_min_id_at(ms), id);
	if (ms < IDGEN_MS_MAX)
		KUNIT_EXPECT_LT(test, id, idgen_min_id_at(ms + 1));
}

static void idgen_layout_test_roundtrip(struct kunit *test)
{
	const struct idgen_layout_case *c = test->param_value;
	const struct idgen_bits *l = &c->layout;
	u32 rmax = (1U << l->region_bits) - 1;
	u32 wmax = (1U << l->worker_bits) - 1;
	u32 smax = (1U << l->seq_bits) - 1;
	static const u64 times[] = { 0, 1, 4095, 1ULL << 31, IDGEN_MS_MAX - 1,
				     IDGEN_MS_MAX };
	int i;

	KUNIT_ASSERT_TRUE(test, idgen_bits_valid(l));
	for (i = 0; i < ARRAY_SIZE(times); i++) {
		idgen_layout_roundtrip(test, l, times[i], 0, 0, 0);
		idgen_layout_roundtrip(test, l, times[i], rmax, wmax, smax);
		idgen_layout_roundtrip(test, l, times[i], rmax / 2, wmax / 3,
				       smax / 5);
	}
}

/* Consecutive ticks are consecutive IDs, and a full sequence carries. */
static void idgen_layout_test_carry(struct kunit *test)
{
	const struct idgen_layout_case *c = test->param_value;
	const struct idgen_bits *l = &c->layout;
	u64 node = idgen_node_bits(l, 0, 0);
	u64 last = (1000ULL << l->seq_bits) + (1ULL << l->seq_bits) - 1;
	u64 a = idgen_tick_id(last, l->seq_bits, node);
	u64 b = idgen_tick_id(last + 1, l->seq_bits, node);

	KUNIT_EXPECT_EQ(test, a >> IDGEN_NODE_SEQ_BITS, 1000ULL);
	KUNIT_EXPECT_EQ(test, b, idgen_min_id_at(1001));
	KUNIT_EXPECT_LT(test, a, b);
}

static void idgen_layout_test_fixed(struct kunit *test)
{
	static const struct idgen_bits v1 = { 3, 7, 12 };
	struct idgen_fields f;

	/* Examples worked out by hand from Documentation/design.md's layout. */
	KUNIT_EXPECT_EQ(test, idgen_tick_id(1ULL << 12 | 5, 12,
					    idgen_node_bits(&v1, 1, 2)),
			(1ULL << 22) | (1ULL << 19) | (2ULL << 12) | 5);
	KUNIT_EXPECT_EQ(test, idgen_min_id_at(IDGEN_MS_MAX),
			0x7fffffffffc00000ULL);
	idgen_decompose(&v1, 0x7fffffffffffffffULL, &f);
	KUNIT_EXPECT_EQ(test, f.ms, IDGEN_MS_MAX);
	KUNIT_EXPECT_EQ(test, f.region, 7U);
	KUNIT_EXPECT_EQ(test, f.worker, 127U);
	KUNIT_EXPECT_EQ(test, f.seq, 4095U);
}

static void idgen_layout_test_valid(struct kunit *test)
{
	static const struct idgen_bits bad[] = {
		{ 3, 7, 11 },	/* sums to 21 */
		{ 3, 7, 13 },	/* sums to 23 */
		{ 9, 7, 6 },	/* region too wide */
		{ 3, 14, 5 },	/* sequence too narrow */
		/*
		 * worker_bits=2^32-1 truncated into a layout: guards the
		 * validator; the guest test insmod_bad_layout is what shows
		 * main.c checks the parameters before they are truncated.
		 */
		{ 3, 255, 20 },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		KUNIT_EXPECT_FALSE(test, idgen_bits_valid(&bad[i]));
}

static struct kunit_case idgen_layout_test_cases[] = {
	KUNIT_CASE_PARAM(idgen_layout_test_roundtrip, idgen_layout_gen_params),
	KUNIT_CASE_PARAM(idgen_layout_test_carry, idgen_layout_gen_params),
	KUNIT_CASE(idgen_layout_test_fixed),
	KUNIT_CASE(idgen_layout_test_valid),
	{}
};

static struct kunit_suite idgen_layout_suite = {
	.name = "idgen_layout",
	.test_cases = idgen_layout_test_cases,
};

kunit_test_suite(idgen_layout_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests for idgen");

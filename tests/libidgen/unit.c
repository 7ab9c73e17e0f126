// SPDX-License-Identifier: GPL-2.0
/*
 * libidgen unit tests: decode, compose, min_id_at, IDs and times as
 * strings, layouts files, JSON; every edge; what is not idgen's device.
 * No device needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decimal.h"
#include "idgen.h"
#include "kselftest_harness.h"

#define EPOCH	LIBIDGEN_EPOCH_UNIX_MS
#define MS_MAX	LIBIDGEN_MS_MAX

TEST(decode_epoch_zero)
{
	struct idgen_decoded d;
	char t[LIBIDGEN_TIME_STRLEN];

	ASSERT_EQ(0, idgen_decode(0, NULL, &d));
	EXPECT_EQ(0, d.ms);
	EXPECT_EQ(EPOCH, d.unix_ms);
	EXPECT_EQ(0, d.region);
	EXPECT_EQ(0, d.worker);
	EXPECT_EQ(0, d.seq);
	EXPECT_EQ(1, d.version);
	ASSERT_EQ(24, idgen_format_time(d.unix_ms, t));
	EXPECT_STREQ("2026-01-01T00:00:00.000Z", t);
}

TEST(decode_last_ms_max_fields)
{
	struct idgen_decoded d;
	char t[LIBIDGEN_TIME_STRLEN];

	/* The largest ID: last ms, region 7, worker 127, seq 4095. */
	ASSERT_EQ(0, idgen_decode(LIBIDGEN_ID_MAX, NULL, &d));
	EXPECT_EQ(MS_MAX, d.ms);
	EXPECT_EQ(7, d.region);
	EXPECT_EQ(127, d.worker);
	EXPECT_EQ(4095, d.seq);
	idgen_format_time(d.unix_ms, t);
	EXPECT_STREQ("2095-09-07T15:47:35.551Z", t);
}

TEST(decode_known_id)
{
	struct idgen_decoded d;
	uint64_t id;

	ASSERT_EQ(0, idgen_compose(&idgen_layout_v1, 28766324588ULL, 5, 77, 9, &id));
	EXPECT_EQ(28766324588ULL << 22 | 5 << 19 | 77 << 12 | 9, id);
	ASSERT_EQ(0, idgen_decode(id, NULL, &d));
	EXPECT_EQ(28766324588ULL, d.ms);
	EXPECT_EQ(5, d.region);
	EXPECT_EQ(77, d.worker);
	EXPECT_EQ(9, d.seq);
}

TEST(decode_top_bit_refused)
{
	struct idgen_decoded d;

	EXPECT_EQ(-EINVAL, idgen_decode(1ULL << 63, NULL, &d));
	EXPECT_EQ(-EINVAL, idgen_decode(UINT64_MAX, NULL, &d));
}

TEST(compose_ranges)
{
	uint64_t id;

	EXPECT_EQ(-ERANGE, idgen_compose(&idgen_layout_v1, MS_MAX + 1, 0, 0, 0, &id));
	EXPECT_EQ(-ERANGE, idgen_compose(&idgen_layout_v1, 0, 8, 0, 0, &id));
	EXPECT_EQ(-ERANGE, idgen_compose(&idgen_layout_v1, 0, 0, 128, 0, &id));
	EXPECT_EQ(-ERANGE, idgen_compose(&idgen_layout_v1, 0, 0, 0, 4096, &id));
	ASSERT_EQ(0, idgen_compose(&idgen_layout_v1, MS_MAX, 7, 127, 4095, &id));
	EXPECT_EQ(LIBIDGEN_ID_MAX, id);
}

TEST(min_id_at_edges)
{
	uint64_t id, max;

	ASSERT_EQ(0, idgen_min_id_at(EPOCH, &id));
	EXPECT_EQ(0, id);
	id = 1;
	ASSERT_EQ(0, idgen_min_id_at(EPOCH - 1, &id));
	EXPECT_EQ(0, id);
	ASSERT_EQ(0, idgen_min_id_at(INT64_MIN, &id));
	EXPECT_EQ(0, id);
	ASSERT_EQ(0, idgen_min_id_at(EPOCH + 1, &id));
	EXPECT_EQ(1ULL << 22, id);
	ASSERT_EQ(0, idgen_min_id_at(EPOCH + MS_MAX, &id));
	EXPECT_EQ(MS_MAX << 22, id);
	EXPECT_EQ(-ERANGE, idgen_min_id_at(EPOCH + MS_MAX + 1, &id));
	EXPECT_EQ(-ERANGE, idgen_min_id_at(INT64_MAX, &id));
	/* The largest ID of a ms is below the smallest of the next. */
	ASSERT_EQ(0, idgen_compose(&idgen_layout_v1, 1000, 7, 127, 4095, &max));
	ASSERT_EQ(0, idgen_min_id_at(EPOCH + 1001, &id));
	EXPECT_EQ(max + 1, id);
}

TEST(min_id_at_day_range)
{
	uint64_t lo, hi, id;
	int64_t start, end;

	ASSERT_EQ(0, idgen_parse_time("2026-03-15T00:00:00Z", &start));
	ASSERT_EQ(0, idgen_parse_time("2026-03-16T00:00:00Z", &end));
	ASSERT_EQ(0, idgen_min_id_at(start, &lo));
	ASSERT_EQ(0, idgen_min_id_at(end, &hi));
	/* Last ID of the day before: out; first and last of the day: in. */
	ASSERT_EQ(0, idgen_compose(&idgen_layout_v1, start - EPOCH - 1, 7, 127, 4095, &id));
	EXPECT_LT(id, lo);
	ASSERT_EQ(0, idgen_compose(&idgen_layout_v1, start - EPOCH, 0, 0, 0, &id));
	EXPECT_EQ(lo, id);
	ASSERT_EQ(0, idgen_compose(&idgen_layout_v1, end - EPOCH - 1, 7, 127, 4095, &id));
	EXPECT_LT(id, hi);
	ASSERT_EQ(0, idgen_compose(&idgen_layout_v1, end - EPOCH, 0, 0, 0, &id));
	EXPECT_EQ(hi, id);
}

static const struct {
	const char *s;
	int ret;
	uint64_t id;
} ids[] = {
	{ "0", 0, 0 },
	{ "1", 0, 1 },
	{ "120655649973116928", 0, 120655649973116928ULL },
	{ "9223372036854775807", 0, 9223372036854775807ULL },
	{ "9223372036854775808", -ERANGE, 0 },
	{ "18446744073709551615", -ERANGE, 0 },
	{ "18446744073709551616", -ERANGE, 0 },
	{ "99999999999999999999999999", -ERANGE, 0 },
	{ "-1", -EINVAL, 0 },
	{ "-0", -EINVAL, 0 },
	{ "+1", -EINVAL, 0 },
	{ "12a", -EINVAL, 0 },
	{ "99999999999999999999a", -EINVAL, 0 },
	{ " 1", -EINVAL, 0 },
	{ "1 ", -EINVAL, 0 },
	{ "1\n", -EINVAL, 0 },
	{ "", -EINVAL, 0 },
	{ "00", -EINVAL, 0 },
	{ "01", -EINVAL, 0 },
	{ "0x10", -EINVAL, 0 },
	{ "1e3", -EINVAL, 0 },
	{ "1.0", -EINVAL, 0 },
};

TEST(parse_id_table)
{
	size_t i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		uint64_t v = 12345;
		int ret = idgen_parse_id(ids[i].s, &v);

		if (ret != ids[i].ret)
			TH_LOG("'%s': got %d, want %d", ids[i].s, ret, ids[i].ret);
		EXPECT_EQ(ids[i].ret, ret);
		EXPECT_EQ(ids[i].ret ? 12345 : ids[i].id, v);
	}
}

/* lib/decimal.h, the one decimal parser: every edge of its rule. */
static const struct {
	const char *s;
	size_t len;		/* 0: strlen(s) */
	uint64_t min, max;
	int ret;
	uint64_t v;
} decimals[] = {
	{ "0", 0, 0, 9, 0, 0 },
	{ "9", 0, 0, 9, 0, 9 },
	{ "10", 0, 0, 10, 0, 10 },
	{ "10", 0, 0, 9, -ERANGE, 0 },
	{ "5", 0, 5, 5, 0, 5 },
	{ "4", 0, 5, 5, -ERANGE, 0 },
	{ "6", 0, 5, 5, -ERANGE, 0 },
	{ "0", 0, 1, 9, -ERANGE, 0 },
	{ "18446744073709551615", 0, 0, UINT64_MAX, 0, UINT64_MAX },
	{ "18446744073709551614", 0, 0, UINT64_MAX - 1, 0, UINT64_MAX - 1 },
	{ "18446744073709551615", 0, 0, UINT64_MAX - 1, -ERANGE, 0 },
	{ "18446744073709551616", 0, 0, UINT64_MAX, -ERANGE, 0 },
	{ "18446744073709551620", 0, 0, UINT64_MAX, -ERANGE, 0 },
	{ "99999999999999999999", 0, 0, UINT64_MAX, -ERANGE, 0 },
	{ "184467440737095516150", 0, 0, UINT64_MAX, -ERANGE, 0 },
	{ "1000000000000000000000000000000", 0, 0, UINT64_MAX, -ERANGE, 0 },
	{ "9223372036854775807", 0, 0, INT64_MAX, 0, INT64_MAX },
	{ "9223372036854775808", 0, 0, INT64_MAX, -ERANGE, 0 },
	{ "4294967295", 0, 0, UINT32_MAX, 0, UINT32_MAX },
	{ "4294967296", 0, 0, UINT32_MAX, -ERANGE, 0 },
	/* Not decimal numbers, whatever the range. */
	{ "", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "00", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "007", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "0123456789", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "+1", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "-1", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "-0", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ " 1", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "1 ", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "\t1", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "1\n", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "1\r", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "1a", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "a1", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "0x10", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "1e3", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "1.0", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "1,000", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "1_000", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "/", 0, 0, UINT64_MAX, -EINVAL, 0 },	/* '0' - 1 */
	{ ":", 0, 0, UINT64_MAX, -EINVAL, 0 },	/* '9' + 1 */
	{ "1/", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "1:", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "\xd9\xa1", 0, 0, UINT64_MAX, -EINVAL, 0 },	/* ARABIC-INDIC ONE */
	{ "\xef\xbc\x91", 0, 0, UINT64_MAX, -EINVAL, 0 },	/* FULLWIDTH ONE */
	{ "1\xb9", 0, 0, UINT64_MAX, -EINVAL, 0 },
	/* Garbage is garbage even after an overflow, or out of range. */
	{ "99999999999999999999x", 0, 0, UINT64_MAX, -EINVAL, 0 },
	{ "10x", 0, 0, 9, -EINVAL, 0 },
	/* Exactly len bytes: a NUL inside, or a prefix of a longer string. */
	{ "1\0" "2", 3, 0, UINT64_MAX, -EINVAL, 0 },
	{ "1\0", 2, 0, UINT64_MAX, -EINVAL, 0 },
	{ "\0", 1, 0, UINT64_MAX, -EINVAL, 0 },
	{ "123", 2, 0, UINT64_MAX, 0, 12 },
	{ "0123", 1, 0, UINT64_MAX, 0, 0 },
};

TEST(decimal_table)
{
	size_t i;

	for (i = 0; i < sizeof(decimals) / sizeof(decimals[0]); i++) {
		size_t len = decimals[i].len ? decimals[i].len : strlen(decimals[i].s);
		uint64_t v = 12345;
		int ret = idgen_decimal(decimals[i].s, len, decimals[i].min,
					decimals[i].max, &v);

		if (ret != decimals[i].ret)
			TH_LOG("#%zu '%.*s': got %d, want %d", i, (int)len,
			       decimals[i].s, ret, decimals[i].ret);
		EXPECT_EQ(decimals[i].ret, ret);
		EXPECT_EQ(decimals[i].ret ? 12345 : decimals[i].v, v);
		if (!decimals[i].len) {
			v = 12345;
			EXPECT_EQ(ret, idgen_decimal_str(decimals[i].s, decimals[i].min,
							 decimals[i].max, &v));
			EXPECT_EQ(decimals[i].ret ? 12345 : decimals[i].v, v);
		}
	}
}

/* Every value from 0 to 100 000 reads back from its canonical spelling. */
TEST(decimal_round_trip)
{
	char buf[32];
	uint64_t i, v;

	for (i = 0; i <= 100000; i++) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)i);
		ASSERT_EQ(0, idgen_decimal_str(buf, 0, UINT64_MAX, &v));
		ASSERT_EQ(i, v);
		if (i) {
			snprintf(buf, sizeof(buf), "0%llu", (unsigned long long)i);
			ASSERT_EQ(-EINVAL, idgen_decimal_str(buf, 0, UINT64_MAX, &v));
		}
	}
	for (i = 0; i < 64; i++) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)(1ULL << i));
		ASSERT_EQ(0, idgen_decimal_str(buf, 0, UINT64_MAX, &v));
		ASSERT_EQ(1ULL << i, v);
		ASSERT_EQ(-ERANGE, idgen_decimal_str(buf, 0, (1ULL << i) - 1, &v));
		ASSERT_EQ(-ERANGE, idgen_decimal_str(buf, (1ULL << i) + 1, UINT64_MAX, &v));
	}
}

TEST(format_id_round_trip)
{
	static const uint64_t v[] = {
		0, 1, 9, 10, 4194303, 4194304, (1ULL << 53) + 1,
		120655649973116928ULL, LIBIDGEN_ID_MAX, UINT64_MAX,
	};
	char buf[LIBIDGEN_ID_STRLEN], ref[32];
	uint64_t back;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int n = idgen_format_id(v[i], buf);

		snprintf(ref, sizeof(ref), "%llu", (unsigned long long)v[i]);
		EXPECT_STREQ(ref, buf);
		EXPECT_EQ(strlen(ref), n);
		if (v[i] <= LIBIDGEN_ID_MAX) {
			ASSERT_EQ(0, idgen_parse_id(buf, &back));
			EXPECT_EQ(v[i], back);
		}
	}
}

static const struct {
	const char *s;
	int ret;
	int64_t unix_ms;
} times[] = {
	{ "2026-01-01T00:00:00Z", 0, 1767225600000LL },
	{ "2026-01-01T00:00:00.000Z", 0, 1767225600000LL },
	{ "2026-01-01t00:00:00z", 0, 1767225600000LL },
	{ "2026-01-01T01:00:00+01:00", 0, 1767225600000LL },
	{ "2025-12-31T19:30:00-04:30", 0, 1767225600000LL },
	{ "2026-01-01T00:00:00.5Z", 0, 1767225600500LL },
	{ "2026-01-01T00:00:00.123456789Z", 0, 1767225600123LL },
	{ "2095-09-07T15:47:35.551Z", 0, 1767225600000LL + (1LL << 41) - 1 },
	{ "1970-01-01T00:00:00Z", 0, 0 },
	{ "1969-12-31T23:59:59.999Z", 0, -1 },
	{ "2028-02-29T00:00:00Z", 0, 1835395200000LL },
	{ "2000-02-29T12:00:00Z", 0, 951825600000LL },
	{ "2026-02-29T00:00:00Z", -EINVAL, 0 },
	{ "2100-02-29T00:00:00Z", -EINVAL, 0 },
	{ "2026-04-31T00:00:00Z", -EINVAL, 0 },
	{ "2026-13-01T00:00:00Z", -EINVAL, 0 },
	{ "2026-00-01T00:00:00Z", -EINVAL, 0 },
	{ "2026-01-00T00:00:00Z", -EINVAL, 0 },
	{ "2026-01-01T24:00:00Z", -EINVAL, 0 },
	{ "2026-01-01T00:60:00Z", -EINVAL, 0 },
	{ "2026-01-01T00:00:60Z", -EINVAL, 0 },
	/* A leap second: 23:59:60 UTC is 23:59:59.999, whatever its fraction. */
	{ "2026-12-31T23:59:60Z", 0, 1798761599999LL },
	{ "2026-12-31T23:59:60.000Z", 0, 1798761599999LL },
	{ "2026-12-31T23:59:60.999999999Z", 0, 1798761599999LL },
	{ "2026-12-31T15:59:60-08:00", 0, 1798761599999LL },
	{ "2027-01-01T05:29:60+05:30", 0, 1798761599999LL },
	{ "2026-12-31T23:58:60Z", -EINVAL, 0 },
	{ "2026-12-31T22:59:60Z", -EINVAL, 0 },
	{ "2026-12-31T23:59:60+01:00", -EINVAL, 0 },
	{ "2026-12-31T23:59:61Z", -EINVAL, 0 },
	/* RFC 3339's years start at 0000: before 1970, negative Unix ms. */
	{ "0000-01-01T00:00:00Z", 0, -62167219200000LL },
	{ "9999-12-31T23:59:59.999Z", 0, 253402300799999LL },
	{ "2026-01-01T00:00:00", -EINVAL, 0 },
	{ "2026-01-01 00:00:00Z", -EINVAL, 0 },
	{ "2026-01-01T00:00:00.Z", -EINVAL, 0 },
	{ "2026-01-01T00:00:00.1234567890Z", -EINVAL, 0 },
	{ "2026-01-01T00:00:00+0100", -EINVAL, 0 },
	{ "2026-01-01T00:00:00+24:00", -EINVAL, 0 },
	{ "2026-01-01T00:00:00Z ", -EINVAL, 0 },
	{ " 2026-01-01T00:00:00Z", -EINVAL, 0 },
	{ "2026-1-01T00:00:00Z", -EINVAL, 0 },
	{ "+2026-01-01T00:00:00Z", -EINVAL, 0 },
	{ "", -EINVAL, 0 },
};

TEST(parse_time_table)
{
	size_t i;

	for (i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		int64_t v = 12345;
		int ret = idgen_parse_time(times[i].s, &v);

		if (ret != times[i].ret || (!ret && v != times[i].unix_ms))
			TH_LOG("'%s': got %d, %lld", times[i].s, ret, (long long)v);
		EXPECT_EQ(times[i].ret, ret);
		EXPECT_EQ(times[i].ret ? 12345 : times[i].unix_ms, v);
	}
}

/*
 * Around a leap second, and from year 0000: min-id-at never goes down
 * as the time goes up, and any time before the epoch is 0.
 */
TEST(min_id_at_through_a_leap_second)
{
	static const char *const in_order[] = {
		"0000-01-01T00:00:00Z",
		"2025-12-31T23:59:60Z",
		"2026-01-01T00:00:00Z",
		"2026-12-31T23:59:59.998Z",
		"2026-12-31T23:59:59.999Z",
		"2026-12-31T23:59:60Z",
		"2026-12-31T23:59:60.5Z",
		"2026-12-31T15:59:60.999-08:00",
		"2027-01-01T00:00:00Z",
		"2027-01-01T00:00:00.001Z",
	};
	uint64_t id, last = 0;
	int64_t unix_ms;
	size_t i;

	for (i = 0; i < sizeof(in_order) / sizeof(in_order[0]); i++) {
		ASSERT_EQ(0, idgen_parse_time(in_order[i], &unix_ms)) TH_LOG("%s", in_order[i]);
		ASSERT_EQ(0, idgen_min_id_at(unix_ms, &id));
		EXPECT_LE(last, id) TH_LOG("%s", in_order[i]);
		if (i < 2)
			EXPECT_EQ(0, id);
		last = id;
	}
	/* The leap second is above every ID of the second before it. */
	ASSERT_EQ(0, idgen_parse_time("2026-12-31T23:59:60Z", &unix_ms));
	ASSERT_EQ(0, idgen_min_id_at(unix_ms, &id));
	EXPECT_EQ((uint64_t)(1798761599999LL - 1767225600000LL) << 22, id);
}

TEST(format_time_round_trip)
{
	static const int64_t v[] = {
		0, -1, 1767225600000LL, 1767225600999LL,
		1767225600000LL + (1LL << 41) - 1, 253402300799999LL,
	};
	char buf[LIBIDGEN_TIME_STRLEN];
	int64_t back;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ASSERT_EQ(24, idgen_format_time(v[i], buf));
		ASSERT_EQ(0, idgen_parse_time(buf, &back));
		EXPECT_EQ(v[i], back);
	}
	EXPECT_STREQ("1969-12-31T23:59:59.999Z", (idgen_format_time(-1, buf), buf));
	EXPECT_EQ(-ERANGE, idgen_format_time(253402300800000LL, buf));
}

TEST(layouts_file)
{
	static const char text[] =
		"# version cutover_ms region_bits worker_bits seq_bits\n"
		"\n"
		"1 0 3 7 12\n"
		"2\t1000 3 10 9   # more workers\n"
		"  3 5000 0 16 6";
	const struct idgen_layout *l;
	struct idgen_layouts *t;
	struct idgen_decoded d;
	char err[128] = "";
	uint64_t id;

	ASSERT_EQ(0, idgen_layouts_parse(text, &t, err, sizeof(err)));
	ASSERT_EQ(3, idgen_layouts_count(t));
	EXPECT_EQ(1, idgen_layout_at(t, 0)->version);
	EXPECT_EQ(1, idgen_layout_at(t, 999)->version);
	EXPECT_EQ(2, idgen_layout_at(t, 1000)->version);
	EXPECT_EQ(2, idgen_layout_at(t, 4999)->version);
	l = idgen_layout_at(t, 5000);
	EXPECT_EQ(3, l->version);
	EXPECT_EQ(16, l->worker_bits);
	EXPECT_EQ(3, idgen_layout_at(t, MS_MAX)->version);

	/* Decoding picks the layout by the ID's own millisecond. */
	ASSERT_EQ(0, idgen_compose(idgen_layout_at(t, 1000), 1000, 5, 1000, 511, &id));
	ASSERT_EQ(0, idgen_decode(id, t, &d));
	EXPECT_EQ(2, d.version);
	EXPECT_EQ(5, d.region);
	EXPECT_EQ(1000, d.worker);
	EXPECT_EQ(511, d.seq);
	ASSERT_EQ(0, idgen_decode(id, NULL, &d));	/* v1 reads it otherwise */
	EXPECT_EQ(1, d.version);
	EXPECT_NE(1000, d.worker);
	idgen_layouts_free(t);

	ASSERT_EQ(0, idgen_layouts_parse("", &t, NULL, 0));
	EXPECT_EQ(1, idgen_layouts_count(t));
	idgen_layouts_free(t);
	EXPECT_EQ(1, idgen_layouts_count(NULL));
	EXPECT_EQ(idgen_layout_at(NULL, 5), idgen_layouts_get(NULL, 0));
	EXPECT_EQ(NULL, idgen_layouts_get(NULL, 1));
}

static const struct {
	const char *text;
	const char *err;
} bad_layouts[] = {
	{ "2 1000 3 10 8\n", "line 1: bad widths 3/10/8" },
	{ "2 1000 9 7 6\n", "line 1: bad widths" },
	{ "2 1000 3 14 5\n", "line 1: bad widths" },
	{ "\n# c\n2 1000 3 10\n", "line 3: want 'version cutover_ms region_bits worker_bits seq_bits', seq_bits is missing" },
	{ "2 1000 3 10 9 7\n", "line 1: unexpected text after seq_bits" },
	{ "2 1000 3 10 9x\n", "line 1: seq_bits is not a decimal number" },
	{ "2 -1000 3 10 9\n", "line 1: cutover_ms is not a decimal number" },
	{ "2 +1000 3 10 9\n", "line 1: cutover_ms is not a decimal number" },
	{ "2 2199023255552 3 10 9\n", "line 1: cutover_ms is out of range" },
	{ "2 1000 3 10 9\n2 2000 3 10 9\n", "line 2: version 2 is not above the previous one (2)" },
	{ "2 1000 3 10 9\n3 1000 3 10 9\n", "line 2: cutover_ms 1000 is not after" },
	{ "2 0 3 10 9\n", "line 1: cutover_ms 0 is not after" },
	{ "1 0 3 10 9\n", "line 1: version 1 is built in" },
	{ "2 1000 3 10 9\n1 0 3 7 12\n", "line 2: version 1 must come first" },
	{ "0 1000 3 10 9\n", "line 1: version 0 is not above" },
	{ "2,1000,3,10,9\n", "line 1: version is not a decimal number" },
	{ "2 01000 3 10 9\n", "line 1: cutover_ms is not a decimal number" },
	{ "2 1000 3 10 +9\n", "line 1: seq_bits is not a decimal number" },
	{ "2 1000 3 10 9x\n", "line 1: seq_bits is not a decimal number" },
	{ "2 1000 3 10 256\n", "line 1: seq_bits is out of range" },
};

TEST(layouts_file_errors)
{
	struct idgen_layouts *t = NULL;
	char err[200];
	size_t i;

	for (i = 0; i < sizeof(bad_layouts) / sizeof(bad_layouts[0]); i++) {
		err[0] = '\0';
		EXPECT_EQ(-EINVAL, idgen_layouts_parse(bad_layouts[i].text, &t, err, sizeof(err)));
		if (strncmp(err, bad_layouts[i].err, strlen(bad_layouts[i].err)))
			TH_LOG("got '%s', want '%s...'", err, bad_layouts[i].err);
		EXPECT_EQ(0, strncmp(err, bad_layouts[i].err, strlen(bad_layouts[i].err)));
		EXPECT_EQ(NULL, t);
	}
}

TEST(layouts_load_missing_file)
{
	struct idgen_layouts *t = NULL;
	char err[200];

	EXPECT_EQ(-ENOENT, idgen_layouts_load("/nonexistent/layouts", &t, err, sizeof(err)));
	EXPECT_STREQ("/nonexistent/layouts: No such file or directory", err);
}

/* "R/W/S" as every program reads it, by the rule the module applies. */
TEST(widths_parse)
{
	static const char *const bad_syntax[] = {
		"", "3/7", "3/7/12/0", "03/7/12", "3/7/+12", "3 /7/12", "3/7/12 ",
		"3//12", "a/b/c", "256/0/0",
	};
	static const char *const bad_rule[] = {
		"3/7/11", "9/7/6", "3/14/5", "0/0/0", "0/17/5",
	};
	struct idgen_layout l;
	char err[200];
	size_t i;

	ASSERT_EQ(0, idgen_widths_parse("3/7/12", &l, err, sizeof(err)));
	EXPECT_EQ(3, l.region_bits);
	EXPECT_EQ(7, l.worker_bits);
	EXPECT_EQ(12, l.seq_bits);
	EXPECT_EQ(0, l.version);
	EXPECT_EQ(0, l.cutover_ms);
	ASSERT_EQ(0, idgen_widths_parse("0/16/6", &l, NULL, 0));
	EXPECT_EQ(16, l.worker_bits);
	ASSERT_EQ(0, idgen_widths_parse("8/0/14", &l, NULL, 0));
	for (i = 0; i < sizeof(bad_syntax) / sizeof(bad_syntax[0]); i++) {
		err[0] = '\0';
		EXPECT_EQ(-EINVAL, idgen_widths_parse(bad_syntax[i], &l, err, sizeof(err)));
		EXPECT_NE(NULL, strstr(err, "is not region/worker/sequence bits"));
	}
	for (i = 0; i < sizeof(bad_rule) / sizeof(bad_rule[0]); i++) {
		err[0] = '\0';
		EXPECT_EQ(-EINVAL, idgen_widths_parse(bad_rule[i], &l, err, sizeof(err)));
		EXPECT_NE(NULL, strstr(err, "the three must add up to 22"));
	}
	EXPECT_EQ(1, idgen_widths_valid(3, 7, 12));
	EXPECT_EQ(0, idgen_widths_valid(9, 7, 6));
	EXPECT_EQ(0, idgen_widths_valid(3, 14, 5));
	EXPECT_EQ(0, idgen_widths_valid(0, 0, 0));
}

TEST(json_strings)
{
	struct idgen_decoded d;
	char buf[256];
	uint64_t id;

	ASSERT_EQ(0, idgen_compose(&idgen_layout_v1, MS_MAX, 7, 127, 4095, &id));
	ASSERT_EQ(0, idgen_decode(id, NULL, &d));
	ASSERT_LT(0, idgen_json_decoded(buf, sizeof(buf), &d));
	EXPECT_STREQ("{\"id\":\"9223372036854775807\",\"created_at\":"
		     "\"2095-09-07T15:47:35.551Z\",\"region\":7,\"worker\":127,"
		     "\"sequence\":4095,\"layout_version\":1,\"ms\":2199023255551,"
		     "\"unix_ms\":3966248855551}", buf);
	/* snprintf()-style: the length it needs, truncated output. */
	EXPECT_EQ(strlen(buf), idgen_json_decoded(buf, 4, &d));
	EXPECT_STREQ("{\"i", buf);
}

/*
 * The contract's example (Documentation/design.md section 9), field for
 * field.
 */
TEST(json_contract_example)
{
	struct idgen_decoded d;
	char buf[256];

	ASSERT_EQ(0, idgen_decode(108421920055775237ULL, NULL, &d));
	ASSERT_LT(0, idgen_json_decoded(buf, sizeof(buf), &d));
	EXPECT_STREQ("{\"id\":\"108421920055775237\",\"created_at\":"
		     "\"2026-10-27T04:30:00.123Z\",\"region\":1,\"worker\":37,"
		     "\"sequence\":5,\"layout_version\":1,\"ms\":25849800123,"
		     "\"unix_ms\":1793075400123}", buf);
}

TEST(json_write_ids)
{
	uint64_t v[2] = { 0, LIBIDGEN_ID_MAX };
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, idgen_json_write_ids(f, v, 2));
	ASSERT_EQ(0, idgen_json_write_ids(f, v, 0));
	fclose(f);
	EXPECT_STREQ("{\"ids\":[\"0\",\"9223372036854775807\"]}\n{\"ids\":[]}\n", out);
	free(out);
}

TEST(strerror_meanings)
{
	EXPECT_NE(NULL, strstr(idgen_strerror(-ENOKEY), "ENOKEY"));
	EXPECT_NE(NULL, strstr(idgen_strerror(EKEYEXPIRED), "EKEYEXPIRED"));
	EXPECT_NE(NULL, strstr(idgen_strerror(-ETIME), "ETIME"));
	EXPECT_NE(NULL, strstr(idgen_strerror(-EOVERFLOW), "EOVERFLOW"));
	EXPECT_EQ(NULL, idgen_strerror(-EBADF));
}

TEST(device_absent)
{
	EXPECT_EQ(-ENOENT, idgen_open("/nonexistent/idgen", 0));
	EXPECT_EQ(-EINVAL, idgen_open(NULL, 1U << 5));
}

/* A state such as the module reports: no lease, then one. */
static struct idgen_device_state state_unleased(void)
{
	struct idgen_device_state st = {
		.now_ms = 1000, .wall_ms = 1000, .last_ms = 900, .next_ms = 1000,
		.max_lead_ms = 1000, .max_step_ms = 100,
		.region_bits = 3, .worker_bits = 7, .seq_bits = 12,
	};

	return st;
}

static struct idgen_device_state state_leased(void)
{
	struct idgen_device_state st = state_unleased();

	st.flags = LIBIDGEN_STATE_LEASED;
	st.region = 7;
	st.worker = 127;
	st.floor_ms = 500;
	st.valid_until_ms = 60000;
	return st;
}

TEST(device_state_valid)
{
	struct idgen_device_state st, zero = { 0 };

	st = state_unleased();
	EXPECT_EQ(1, idgen_device_state_valid(&st));
	st = state_leased();
	EXPECT_EQ(1, idgen_device_state_valid(&st));
	st.region_bits = 8, st.worker_bits = 8, st.seq_bits = 6, st.region = 255, st.worker = 255;
	EXPECT_EQ(1, idgen_device_state_valid(&st));
	st = state_leased();
	st.valid_until_ms = MS_MAX + 1;
	EXPECT_EQ(1, idgen_device_state_valid(&st));
	st = state_leased();
	st.flags |= LIBIDGEN_STATE_CLOCK_HELD, st.held_step_ms = -5000;
	EXPECT_EQ(1, idgen_device_state_valid(&st));

	/* What a driver that wrote nothing leaves: widths 0/0/0. */
	EXPECT_EQ(0, idgen_device_state_valid(&zero));
	st = state_unleased();
	st.seq_bits = 11;
	EXPECT_EQ(0, idgen_device_state_valid(&st));
	st = state_leased();
	st.region = 8;
	EXPECT_EQ(0, idgen_device_state_valid(&st));
	st = state_leased();
	st.worker = 128;
	EXPECT_EQ(0, idgen_device_state_valid(&st));
	st = state_leased();
	st.floor_ms = st.valid_until_ms;
	EXPECT_EQ(0, idgen_device_state_valid(&st));
	st = state_leased();
	st.valid_until_ms = MS_MAX + 2;
	EXPECT_EQ(0, idgen_device_state_valid(&st));
	st = state_leased();
	st.flags |= LIBIDGEN_STATE_CLOCK_HELD;
	EXPECT_EQ(0, idgen_device_state_valid(&st));
	st = state_leased();
	st.held_step_ms = 5000;
	EXPECT_EQ(0, idgen_device_state_valid(&st));
	/* No lease, and yet a node or a fence. */
	st = state_unleased();
	st.worker = 1;
	EXPECT_EQ(0, idgen_device_state_valid(&st));
	st = state_unleased();
	st.valid_until_ms = 60000;
	EXPECT_EQ(0, idgen_device_state_valid(&st));
	st = state_unleased();
	st.floor_ms = 1;
	EXPECT_EQ(0, idgen_device_state_valid(&st));
}

/* Files that are not idgen's device, made in a directory of their own. */
FIXTURE(not_idgen) {
	char dir[64];
	char file[96], fifo[96], link_file[96], link_zero[96];
};

FIXTURE_SETUP(not_idgen)
{
	static const uint64_t ids[4] = { 1ULL << 22, 2ULL << 22, 3ULL << 22, 4ULL << 22 };
	int fd;

	strcpy(self->dir, "/tmp/idgen-unit.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->file, sizeof(self->file), "%s/ids", self->dir);
	snprintf(self->fifo, sizeof(self->fifo), "%s/fifo", self->dir);
	snprintf(self->link_file, sizeof(self->link_file), "%s/link-ids", self->dir);
	snprintf(self->link_zero, sizeof(self->link_zero), "%s/link-zero", self->dir);
	/* Whole IDs, as a read of the device gives them. */
	fd = open(self->file, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)sizeof(ids), write(fd, ids, sizeof(ids)));
	close(fd);
	ASSERT_EQ(0, mkfifo(self->fifo, 0644));
	ASSERT_EQ(0, symlink(self->file, self->link_file));
	ASSERT_EQ(0, symlink("/dev/zero", self->link_zero));
}

FIXTURE_TEARDOWN(not_idgen)
{
	unlink(self->file);
	unlink(self->fifo);
	unlink(self->link_file);
	unlink(self->link_zero);
	rmdir(self->dir);
}

/* idgen_device_verify() on descriptors: -ENOTTY for each, file left open. */
TEST_F(not_idgen, verify_fd)
{
	struct idgen_device_state st;
	const char *paths[] = { "/dev/zero", "/dev/null", self->file, self->link_file,
				self->link_zero, self->dir };
	int fds[2], fd;
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		ASSERT_LE(0, fd) TH_LOG("%s: %s", paths[i], strerror(errno));
		memset(&st, 0x5a, sizeof(st));
		EXPECT_EQ(-ENOTTY, idgen_device_verify(fd, &st)) TH_LOG("%s", paths[i]);
		EXPECT_EQ(0x5a5a5a5a, st.worker) TH_LOG("%s: state written", paths[i]);
		EXPECT_LE(0, fcntl(fd, F_GETFD)) TH_LOG("%s: closed", paths[i]);
		close(fd);
	}
	/* A pipe, both ends, and the FIFO's read end (opened non-blocking). */
	ASSERT_EQ(0, pipe(fds));
	EXPECT_EQ(-ENOTTY, idgen_device_verify(fds[0], NULL));
	EXPECT_EQ(-ENOTTY, idgen_device_verify(fds[1], NULL));
	close(fds[0]);
	close(fds[1]);
	fd = open(self->fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOTTY, idgen_device_verify(fd, NULL));
	close(fd);
	EXPECT_EQ(-EBADF, idgen_device_verify(-1, NULL));
}

/*
 * idgen_open(LIBIDGEN_VERIFY) refuses each, the FIFO without waiting for
 * a writer (the harness's timeout would end a blocked open), and leaves
 * no descriptor behind; without the flag it opens what it is given.
 */
TEST_F(not_idgen, open_verify)
{
	const char *paths[] = { "/dev/zero", "/dev/null", self->file, self->link_file,
				self->link_zero, self->fifo, self->dir };
	int fd, before;
	size_t i;

	before = dup(0);
	ASSERT_LE(0, before);
	close(before);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		EXPECT_EQ(-ENOTTY, idgen_open(paths[i], LIBIDGEN_VERIFY)) TH_LOG("%s", paths[i]);
		EXPECT_EQ(-ENOTTY, idgen_open(paths[i], LIBIDGEN_VERIFY | LIBIDGEN_NONBLOCK))
			TH_LOG("%s", paths[i]);
	}
	/* Nothing left open: the next descriptor is the one free before. */
	fd = dup(0);
	EXPECT_EQ(before, fd);
	close(fd);
	EXPECT_EQ(-ENOENT, idgen_open("/nonexistent/idgen", LIBIDGEN_VERIFY));
	EXPECT_EQ(-EINVAL, idgen_open(self->file, LIBIDGEN_VERIFY | 1U << 5));
	fd = idgen_open(self->file, 0);
	EXPECT_LE(0, fd);
	idgen_close(fd);
}

TEST(buffer_bad_args)
{
	struct idgen_buffer *b;

	EXPECT_EQ(-EINVAL, idgen_buffer_new(-1, 16, 100, &b));
	EXPECT_EQ(-EINVAL, idgen_buffer_new(0, 0, 100, &b));
	EXPECT_EQ(-EINVAL, idgen_buffer_new(0, 65537, 100, &b));
}

TEST_HARNESS_MAIN

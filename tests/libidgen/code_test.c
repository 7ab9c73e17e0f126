// SPDX-License-Identifier: GPL-2.0
/*
 * libidgen's booking codes: the written form, the forgiving reading
 * (case, I/L/O, hyphens, spaces), and the check symbol catching every
 * single substitution and every transposition of neighbours in a set of
 * codes.  Random codes come from a fixed seed, so a failure replays.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "idgen.h"
#include "kselftest_harness.h"

static const char symbols[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U";

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The 9 symbols of a code, without the hyphens. */
static void bare(uint64_t code, char out[10])
{
	char buf[LIBIDGEN_CODE_STRLEN];
	int i, n = 0;

	idgen_code_format(code, buf);
	for (i = 0; buf[i]; i++)
		if (buf[i] != '-')
			out[n++] = buf[i];
	out[n] = '\0';
}

TEST(format_known)
{
	char buf[LIBIDGEN_CODE_STRLEN];
	uint64_t v;

	ASSERT_EQ(11, idgen_code_format(0, buf));
	EXPECT_STREQ("0000-0000-0", buf);
	/* 2^40 - 1 = 1099511627775 = 37 * 29716530480 + 15 */
	ASSERT_EQ(11, idgen_code_format(LIBIDGEN_CODE_MAX, buf));
	EXPECT_STREQ("ZZZZ-ZZZZ-F", buf);
	/* 36 mod 37 = 36: the check symbol U */
	ASSERT_EQ(11, idgen_code_format(36, buf));
	EXPECT_STREQ("0000-0014-U", buf);
	ASSERT_EQ(11, idgen_code_format(32, buf));
	EXPECT_STREQ("0000-0010-*", buf);
	ASSERT_EQ(0, idgen_code_parse("0000-0014-u", &v));
	EXPECT_EQ(36, v);
	EXPECT_EQ(-ERANGE, idgen_code_format(LIBIDGEN_CODE_MAX + 1, buf));
}

TEST(round_trip)
{
	char buf[LIBIDGEN_CODE_STRLEN];
	uint64_t seed = 11, v, back;
	int i;

	for (i = 0; i < 100000; i++) {
		v = splitmix64(&seed) & LIBIDGEN_CODE_MAX;
		ASSERT_EQ(11, idgen_code_format(v, buf));
		ASSERT_EQ(0, idgen_code_parse(buf, &back));
		ASSERT_EQ(v, back);
	}
}

TEST(normalisation)
{
	static const char *const same[] = {
		"1O0L-IJKM-?", "1o0l-ijkm-?", "10011jkm?", "1 0 0 1-1 J K M ?",
		"--100 1-1jkm-?--", "1OOI IJKM ?", "1oOi lJkM ?",
	};
	char want[LIBIDGEN_CODE_STRLEN], text[32];
	uint64_t v, got;
	size_t i;

	/* 1001-1JKM and its check symbol. */
	v = 1ULL << 35 | 1ULL << 20 | 1ULL << 15 | 18 << 10 | 19 << 5 | 20;
	ASSERT_EQ(11, idgen_code_format(v, want));
	EXPECT_EQ(0, strncmp(want, "1001-1JKM-", 10));
	for (i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		snprintf(text, sizeof(text), "%s", same[i]);
		*strchr(text, '?') = want[10];
		ASSERT_EQ(0, idgen_code_parse(text, &got));
		EXPECT_EQ(v, got);
	}
}

TEST(malformed)
{
	static const char *const bad[] = {
		"", "-", "0000-0000", "0000-0000-", "0000-0000-00", "000-0000-0",
		"00000-0000-0", "0000_0000-0", "0000-0000-0\n", "0000+0000-0",
		"U000-0000-U", "*000-0000-0", "0000-000=-0", "0000-0000-!",
		"0000-0000-0-0", "\xc3\x98" "000-0000-0", "0000\t0000-0",
	};
	uint64_t v = 12345;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (idgen_code_parse(bad[i], &v) != -EINVAL)
			TH_LOG("'%s' was not refused as malformed", bad[i]);
		EXPECT_EQ(-EINVAL, idgen_code_parse(bad[i], &v));
	}
	EXPECT_EQ(12345, v);
	EXPECT_EQ(-EINVAL, idgen_code_parse(NULL, &v));
	/* A wrong check symbol has its own error: a mistyped code. */
	EXPECT_EQ(-EBADMSG, idgen_code_parse("0000-0000-1", &v));
	EXPECT_EQ(-EBADMSG, idgen_code_parse("0000-0000-U", &v));
	EXPECT_EQ(12345, v);
}

/* Every single substitution, in every position, by every other symbol. */
TEST(every_substitution_is_caught)
{
	uint64_t seed = 12, code, v;
	char s[10], t[10];
	int i, pos, sym, tried = 0, missed = 0;

	for (i = 0; i < 2000; i++) {
		code = i == 0 ? 0 : i == 1 ? LIBIDGEN_CODE_MAX : splitmix64(&seed) & LIBIDGEN_CODE_MAX;
		bare(code, s);
		for (pos = 0; pos < 9; pos++) {
			for (sym = 0; sym < 37; sym++) {
				if (symbols[sym] == s[pos])
					continue;
				memcpy(t, s, sizeof(t));
				t[pos] = symbols[sym];
				tried++;
				if (!idgen_code_parse(t, &v)) {
					missed++;
					TH_LOG("%s read as valid (from %s)", t, s);
				}
			}
		}
	}
	EXPECT_EQ(2000 * 9 * 36, tried);
	EXPECT_EQ(0, missed);
}

/* Every transposition of two different neighbouring symbols. */
TEST(every_adjacent_transposition_is_caught)
{
	uint64_t seed = 13, code, v;
	char s[10], t[10];
	int i, pos, tried = 0, missed = 0, bad_check = 0;

	for (i = 0; i < 20000; i++) {
		code = splitmix64(&seed) & LIBIDGEN_CODE_MAX;
		bare(code, s);
		for (pos = 0; pos < 8; pos++) {
			if (s[pos] == s[pos + 1])
				continue;
			memcpy(t, s, sizeof(t));
			t[pos] = s[pos + 1];
			t[pos + 1] = s[pos];
			tried++;
			switch (idgen_code_parse(t, &v)) {
			case 0:
				missed++;
				TH_LOG("%s read as valid (from %s)", t, s);
				break;
			case -EBADMSG:
				bad_check++;
				break;
			}
		}
	}
	EXPECT_LT(100000, tried);
	EXPECT_EQ(0, missed);
	/* Most are caught by the check symbol, not by the syntax. */
	EXPECT_LT(tried * 9 / 10, bad_check);
}

TEST(new_codes)
{
	uint64_t codes[1000], v;
	char buf[LIBIDGEN_CODE_STRLEN];
	int i, same = 0;

	ASSERT_EQ(0, idgen_code_new(codes, 1000));
	for (i = 0; i < 1000; i++) {
		ASSERT_GE(LIBIDGEN_CODE_MAX, codes[i]);
		ASSERT_EQ(11, idgen_code_format(codes[i], buf));
		ASSERT_EQ(0, idgen_code_parse(buf, &v));
		ASSERT_EQ(codes[i], v);
		same += i && codes[i] == codes[i - 1];
	}
	/* 40 random bits: two equal neighbours in 1000 has odds near 1e-9. */
	EXPECT_EQ(0, same);
	EXPECT_EQ(0, idgen_code_new(codes, 0));
}

TEST_HARNESS_MAIN

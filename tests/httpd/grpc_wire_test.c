// SPDX-License-Identifier: GPL-2.0
/*
 * gRPC's own rules (helper/httpd/grpc_wire.c): grpc-timeout in every
 * unit and every malformed shape, grpc-message's percent-encoding, the
 * 5-byte prefix both ways, and which content types are gRPC's.
 */
#include <errno.h>
#include <string.h>

#include "grpc_wire.h"
#include "kselftest_harness.h"

static int timeout(const char *v, uint64_t *ns)
{
	return grpc_timeout_parse(v, strlen(v), ns);
}

TEST(timeout_units)
{
	uint64_t ns;

	ASSERT_EQ(0, timeout("1H", &ns));
	EXPECT_EQ(3600000000000ULL, ns);
	ASSERT_EQ(0, timeout("2M", &ns));
	EXPECT_EQ(120000000000ULL, ns);
	ASSERT_EQ(0, timeout("3S", &ns));
	EXPECT_EQ(3000000000ULL, ns);
	ASSERT_EQ(0, timeout("250m", &ns));
	EXPECT_EQ(250000000ULL, ns);
	ASSERT_EQ(0, timeout("7u", &ns));
	EXPECT_EQ(7000ULL, ns);
	ASSERT_EQ(0, timeout("0n", &ns));
	EXPECT_EQ(0ULL, ns);
	/* Eight digits, the most the protocol allows, of the largest unit. */
	ASSERT_EQ(0, timeout("99999999H", &ns));
	EXPECT_EQ(UINT64_MAX, ns);
}

TEST(timeout_malformed)
{
	static const char *const bad[] = {
		"", "S", "1", "123456789S", "1s", "1h", "-1S", "+1S", " 1S", "1S ",
		"1.5S", "1SS", "0x1S", "1\0S",
	};
	uint64_t ns = 42;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(-EINVAL, timeout(bad[i], &ns)) TH_LOG("case %zu", i);
	EXPECT_EQ(42ULL, ns);
}

TEST(message_encoding)
{
	char out[64];

	EXPECT_EQ(11U, grpc_message_encode("no such ID!", out, sizeof(out)));
	EXPECT_STREQ("no such ID!", out);
	EXPECT_EQ(15U, grpc_message_encode("50% \xc3\xa9\n", out, sizeof(out)));
	EXPECT_STREQ("50%25 %C3%A9%0A", out);
	/* Short of room: the length it needs, a NUL-terminated prefix. */
	EXPECT_EQ(9U, grpc_message_encode("%%%", out, 4));
	EXPECT_STREQ("%25", out);
	/* An escape that does not fit ends what is written: no gap after. */
	EXPECT_EQ(5U, grpc_message_encode("a%b", out, 3));
	EXPECT_STREQ("a", out);
	EXPECT_EQ(7U, grpc_message_encode("ab\ncd", out, 5));
	EXPECT_STREQ("ab", out);
}

TEST(prefix_both_ways)
{
	uint8_t p[GRPC_PREFIX_LEN];
	bool compressed;
	uint32_t len;

	grpc_prefix_write(p, 0x01020304);
	EXPECT_EQ(0, memcmp(p, "\x00\x01\x02\x03\x04", 5));
	grpc_prefix_read(p, &compressed, &len);
	EXPECT_FALSE(compressed);
	EXPECT_EQ(0x01020304U, len);
	grpc_prefix_read((const uint8_t *)"\x01\xff\xff\xff\xff", &compressed, &len);
	EXPECT_TRUE(compressed);
	EXPECT_EQ(UINT32_MAX, len);
}

TEST(content_types)
{
	static const char *const good[] = {
		"application/grpc", "application/grpc+proto", "application/grpc;charset=x",
		"Application/GRPC",
	};
	static const char *const bad[] = {
		"application/grpcx", "application/json", "application/grp", "",
		"application/grpc-web",
	};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		EXPECT_TRUE(grpc_content_type_ok(good[i], strlen(good[i]))) TH_LOG("case %zu", i);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_FALSE(grpc_content_type_ok(bad[i], strlen(bad[i]))) TH_LOG("case %zu", i);
}

TEST(code_names)
{
	EXPECT_STREQ("OK", grpc_code_name(GRPC_OK));
	EXPECT_STREQ("RESOURCE_EXHAUSTED", grpc_code_name(GRPC_RESOURCE_EXHAUSTED));
	EXPECT_STREQ("UNAUTHENTICATED", grpc_code_name(GRPC_UNAUTHENTICATED));
	EXPECT_STREQ("UNKNOWN", grpc_code_name(GRPC_NR_CODES));
}

TEST_HARNESS_MAIN

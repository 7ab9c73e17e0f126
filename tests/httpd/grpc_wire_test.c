// SPDX-License-Identifier: GPL-2.0
/*
 * gRPC's own rules (helper/httpd/grpc_wire.c): grpc-timeout in every
 * unit and every malformed shape, grpc-message's percent-encoding, the
 * 5-byte prefix both ways and what its Compressed-Flag allows, which
 * content types are taken, and the NUL a protobuf string field may hold.
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
	static const struct {
		const char *v;
		uint64_t ns;
	} good[] = {
		{ "1H", 3600000000000ULL }, { "2M", 120000000000ULL },
		{ "3S", 3000000000ULL }, { "250m", 250000000ULL }, { "7u", 7000ULL },
		{ "0n", 0 },
		/* Eight digits, the most the protocol allows, of the largest unit. */
		{ "99999999H", UINT64_MAX },
	};
	uint64_t ns;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ASSERT_EQ(0, timeout(good[i].v, &ns)) TH_LOG("%s", good[i].v);
		EXPECT_EQ(good[i].ns, ns) TH_LOG("%s", good[i].v);
	}
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
	uint8_t p[GRPC_PREFIX_LEN], flag;
	uint32_t len;

	grpc_prefix_write(p, 0x01020304);
	EXPECT_EQ(0, memcmp(p, "\x00\x01\x02\x03\x04", 5));
	grpc_prefix_read(p, &flag, &len);
	EXPECT_EQ(0, flag);
	EXPECT_EQ(0x01020304U, len);
	grpc_prefix_read((const uint8_t *)"\x01\xff\xff\xff\xff", &flag, &len);
	EXPECT_EQ(1, flag);
	EXPECT_EQ(UINT32_MAX, len);
	/* The whole byte: a flag of 2 is not 0 with a bit to spare. */
	grpc_prefix_read((const uint8_t *)"\x02\x00\x00\x00\x01", &flag, &len);
	EXPECT_EQ(2, flag);
}

/* grpc-go's checkRecvPayload() (rpc_util.go), on the server's side. */
TEST(compressed_flag)
{
	const char *why;

	EXPECT_EQ(GRPC_OK, grpc_prefix_check(0, false, &why));
	EXPECT_EQ(NULL, why);
	EXPECT_EQ(GRPC_OK, grpc_prefix_check(0, true, &why));
	EXPECT_EQ(GRPC_INTERNAL, grpc_prefix_check(1, false, &why));
	EXPECT_NE(NULL, why);
	EXPECT_EQ(GRPC_UNIMPLEMENTED, grpc_prefix_check(1, true, &why));
	EXPECT_NE(NULL, strstr(why, "identity"));
	EXPECT_EQ(GRPC_INTERNAL, grpc_prefix_check(2, false, &why));
	EXPECT_EQ(GRPC_INTERNAL, grpc_prefix_check(2, true, &why));
	EXPECT_EQ(GRPC_INTERNAL, grpc_prefix_check(0x81, true, &why));
	EXPECT_TRUE(grpc_encoding_identity("identity", 8));
	EXPECT_FALSE(grpc_encoding_identity("gzip", 4));
	EXPECT_FALSE(grpc_encoding_identity("identityx", 9));
	EXPECT_FALSE(grpc_encoding_identity("", 0));
}

TEST(content_types)
{
	static const char *const good[] = {
		"application/grpc", "application/grpc+proto", "application/grpc;charset=x",
		"Application/GRPC", "application/grpc+PROTO", "application/grpc+proto;x=y",
		"application/grpc+",
	};
	static const char *const bad[] = {
		"application/grpcx", "application/json", "application/grp", "",
		"application/grpc-web", "application/grpc+json", "application/grpc+protobuf",
		"application/grpc+pro", "application/grpc+json;x=proto",
	};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		EXPECT_TRUE(grpc_content_type_ok(good[i], strlen(good[i]))) TH_LOG("case %zu", i);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_FALSE(grpc_content_type_ok(bad[i], strlen(bad[i]))) TH_LOG("case %zu", i);
}

/* Messages as string literals: their length without the final NUL. */
#define HAS_NUL(lit, field) \
	grpc_pb_string_has_nul((const uint8_t *)(lit), sizeof(lit) - 1, field)

/* NextIdsRequest.caller is field 2 (proto/idgen/v1/idgen.proto). */
TEST(pb_string_nul)
{
	EXPECT_EQ(0, HAS_NUL("", 2));
	EXPECT_EQ(0, HAS_NUL("\x08\x03", 2));	/* count 3 alone */
	EXPECT_EQ(0, HAS_NUL("\x08\x03\x12\x02" "ab", 2));
	EXPECT_EQ(1, HAS_NUL("\x08\x03\x12\x05" "ab\0cd", 2));
	EXPECT_EQ(1, HAS_NUL("\x12\x01\0", 2));
	/* Another field's NUL is not the caller's. */
	EXPECT_EQ(0, HAS_NUL("\x1a\x02\0\0\x12\x01x", 2));
	EXPECT_EQ(1, HAS_NUL("\x1a\x02\0\0\x12\x01x", 3));
	/* The last occurrence is the value. */
	EXPECT_EQ(0, HAS_NUL("\x12\x01\0\x12\x01x", 2));
	EXPECT_EQ(1, HAS_NUL("\x12\x01x\x12\x01\0", 2));
	/* Fields of every other wire type are stepped over. */
	EXPECT_EQ(1, HAS_NUL("\x09" "\0\0\0\0\0\0\0\0"
			     "\x1d\0\0\0\0"
			     "\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
			     "\x12\x02" "a\0", 2));
	/* A field number of two bytes' varint. */
	EXPECT_EQ(1, HAS_NUL("\x82\x01\x01\0", 16));
	EXPECT_EQ(0, HAS_NUL("\x82\x01\x01\0", 2));
	/* The largest field number there is (2^29 - 1). */
	EXPECT_EQ(0, HAS_NUL("\xfa\xff\xff\xff\x0f\0", 2));
}

TEST(pb_malformed)
{
	static const struct {
		const char *msg;
		size_t len;
	} bad[] = {
		{ "\x12", 1 },				/* a key, no length */
		{ "\x12\x05" "abc", 5 },		/* a length past the end */
		{ "\x12\xff\xff\xff\xff\x0f", 6 },	/* ... far past it */
		{ "\x08", 1 },				/* a varint missing */
		{ "\x08\x80", 2 },			/* ... cut short */
		{ "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12 },	/* 11 bytes */
		{ "\x09\0\0\0", 4 },			/* 64 bits cut short */
		{ "\x0d\0\0", 3 },			/* 32 bits cut short */
		{ "\x0b\x0c", 2 },			/* a group */
		{ "\x0e\0", 2 },			/* wire type 6 */
		{ "\x0f\0", 2 },			/* wire type 7 */
		{ "\x02\x00", 2 },			/* field number 0 */
		{ "\x10\x01", 2 },			/* field 2, but a varint */
		{ "\x15\0\0\0\0", 5 },		/* field 2, but 32 bits */
		{ "\x82\x80\x80\x80\x20\0", 6 },	/* field number 2^30 */
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(-EINVAL, grpc_pb_string_has_nul((const uint8_t *)bad[i].msg,
							  bad[i].len, 2)) TH_LOG("case %zu", i);
}

TEST(code_names)
{
	EXPECT_STREQ("OK", grpc_code_name(GRPC_OK));
	EXPECT_STREQ("RESOURCE_EXHAUSTED", grpc_code_name(GRPC_RESOURCE_EXHAUSTED));
	EXPECT_STREQ("UNAUTHENTICATED", grpc_code_name(GRPC_UNAUTHENTICATED));
	EXPECT_STREQ("UNKNOWN", grpc_code_name(GRPC_NR_CODES));
}

TEST_HARNESS_MAIN

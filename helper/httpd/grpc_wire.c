// SPDX-License-Identifier: GPL-2.0
/*
 * The gRPC protocol's own rules (grpc_wire.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "grpc_wire.h"

static const char *const code_names[GRPC_NR_CODES] = {
	[GRPC_OK] = "OK",
	[GRPC_CANCELLED] = "CANCELLED",
	[GRPC_UNKNOWN] = "UNKNOWN",
	[GRPC_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
	[GRPC_DEADLINE_EXCEEDED] = "DEADLINE_EXCEEDED",
	[GRPC_NOT_FOUND] = "NOT_FOUND",
	[GRPC_ALREADY_EXISTS] = "ALREADY_EXISTS",
	[GRPC_PERMISSION_DENIED] = "PERMISSION_DENIED",
	[GRPC_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
	[GRPC_FAILED_PRECONDITION] = "FAILED_PRECONDITION",
	[GRPC_ABORTED] = "ABORTED",
	[GRPC_OUT_OF_RANGE] = "OUT_OF_RANGE",
	[GRPC_UNIMPLEMENTED] = "UNIMPLEMENTED",
	[GRPC_INTERNAL] = "INTERNAL",
	[GRPC_UNAVAILABLE] = "UNAVAILABLE",
	[GRPC_DATA_LOSS] = "DATA_LOSS",
	[GRPC_UNAUTHENTICATED] = "UNAUTHENTICATED",
};

const char *grpc_code_name(enum grpc_code code)
{
	return (unsigned int)code < GRPC_NR_CODES ? code_names[code] : "UNKNOWN";
}

int grpc_timeout_parse(const char *v, size_t len, uint64_t *ns)
{
	static const struct {
		char unit;
		uint64_t ns;
	} units[] = {
		{ 'H', 3600000000000ULL }, { 'M', 60000000000ULL },
		{ 'S', 1000000000ULL }, { 'm', 1000000ULL }, { 'u', 1000ULL },
		{ 'n', 1ULL },
	};
	uint64_t n = 0;
	size_t i;

	if (len < 2 || len > 9)
		return -EINVAL;
	for (i = 0; i < len - 1; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		n = n * 10 + (v[i] - '0');	/* 8 digits: no overflow */
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (v[len - 1] == units[i].unit) {
			*ns = n > UINT64_MAX / units[i].ns ? UINT64_MAX : n * units[i].ns;
			return 0;
		}
	return -EINVAL;
}

size_t grpc_message_encode(const char *text, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	const unsigned char *p;

	size_t written = 0;	/* the whole characters that fit */

	for (p = (const unsigned char *)text; *p; p++) {
		bool plain = *p >= ' ' && *p <= '~' && *p != '%';
		size_t w = plain ? 1 : 3;

		/* Written only while each before it was: no gap. */
		if (written == n && n + w < size) {
			if (plain) {
				out[n] = *p;
			} else {
				out[n] = '%';
				out[n + 1] = hex[*p >> 4];
				out[n + 2] = hex[*p & 15];
			}
			written += w;
		}
		n += w;
	}
	if (size)
		out[written] = '\0';
	return n;
}

void grpc_prefix_write(uint8_t out[GRPC_PREFIX_LEN], uint32_t len)
{
	out[0] = 0;
	out[1] = len >> 24;
	out[2] = len >> 16;
	out[3] = len >> 8;
	out[4] = len;
}

void grpc_prefix_read(const uint8_t in[GRPC_PREFIX_LEN], uint8_t *flag,
		      uint32_t *len)
{
	*flag = in[0];
	*len = (uint32_t)in[1] << 24 | (uint32_t)in[2] << 16 | (uint32_t)in[3] << 8 | in[4];
}

enum grpc_code grpc_prefix_check(uint8_t flag, bool compression_named,
				 const char **why)
{
	*why = NULL;
	switch (flag) {
	case 0:
		return GRPC_OK;
	case 1:
		if (!compression_named) {
			*why = "the message's Compressed-Flag is 1, but grpc-encoding "
			       "names no compression";
			return GRPC_INTERNAL;
		}
		*why = "compressed messages are not taken: send them with identity "
		       "encoding";
		return GRPC_UNIMPLEMENTED;
	default:
		*why = "a message's Compressed-Flag must be 0 or 1";
		return GRPC_INTERNAL;
	}
}

bool grpc_encoding_identity(const char *v, size_t len)
{
	return len == 8 && !memcmp(v, "identity", 8);
}

bool grpc_content_type_ok(const char *v, size_t len)
{
	static const char type[] = "application/grpc";
	size_t n = sizeof(type) - 1;

	if (len < n || strncasecmp(v, type, n))
		return false;
	if (len > n && v[n] == '+') {
		/* grpc-go takes "application/grpc+" as naming no format: protobuf. */
		n++;
		if (len - n >= 5 && !strncasecmp(v + n, "proto", 5))
			n += 5;
	}
	return len == n || v[n] == ';';
}

#define PB_MAX_FIELD	((1U << 29) - 1)

/* A varint at *p, before end: 0 with *v and *p past it, or -EINVAL. */
static int pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned int shift;

	*v = 0;
	for (shift = 0; shift < 70 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -EINVAL;		/* past the end, or over 10 bytes */
}

int grpc_pb_string_has_nul(const uint8_t *msg, size_t len, uint32_t field)
{
	const uint8_t *p = msg, *end = msg + len;
	int nul = 0;
	uint64_t key, n;

	while (p < end) {
		/* Field numbers are 1 to 2^29 - 1. */
		if (pb_varint(&p, end, &key) || key >> 3 == 0 || key >> 3 > PB_MAX_FIELD)
			return -EINVAL;
		switch (key & 7) {
		case 0:		/* varint */
			if (pb_varint(&p, end, &n))
				return -EINVAL;
			break;
		case 1:		/* 64-bit */
		case 5:		/* 32-bit */
			n = (key & 7) == 1 ? 8 : 4;
			if ((size_t)(end - p) < n)
				return -EINVAL;
			p += n;
			break;
		case 2:		/* length-delimited */
			if (pb_varint(&p, end, &n) || n > (size_t)(end - p))
				return -EINVAL;
			if (key >> 3 == field)
				nul = memchr(p, 0, n) != NULL;
			p += n;
			continue;
		default:	/* groups (3, 4), and 6 and 7, which no message has */
			return -EINVAL;
		}
		if (key >> 3 == field)
			return -EINVAL;		/* a string field is length-delimited */
	}
	return nul;
}

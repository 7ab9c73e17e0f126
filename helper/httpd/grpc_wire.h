/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The gRPC-over-HTTP/2 protocol's own rules, apart from HTTP/2 and from
 * the service: status codes and their names, the grpc-timeout header,
 * the grpc-message header's percent-encoding, the 5-byte prefix that
 * frames every message (the "Length-Prefixed-Message" of gRPC's
 * PROTOCOL-HTTP2.md) and what its Compressed-Flag allows, the content
 * types taken, and the one question of protobuf's wire format that
 * protobuf-c's C strings cannot answer.  Pure functions, so that each is
 * tested alone.
 */
#ifndef HTTPD_GRPC_WIRE_H
#define HTTPD_GRPC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The codes of grpc/status.h, by their numbers on the wire. */
enum grpc_code {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_ALREADY_EXISTS = 6,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_ABORTED = 10,
	GRPC_OUT_OF_RANGE = 11,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
	GRPC_DATA_LOSS = 15,
	GRPC_UNAUTHENTICATED = 16,
	GRPC_NR_CODES
};

/* "OK", "INVALID_ARGUMENT", ...: the name /metrics labels a code with. */
const char *grpc_code_name(enum grpc_code code);

/* The message prefix: a compressed-flag byte, then the length, big-endian. */
#define GRPC_PREFIX_LEN	5

/*
 * A grpc-timeout value: 1 to 8 ASCII digits, then a unit (H hours, M
 * minutes, S seconds, m milliseconds, u microseconds, n nanoseconds).
 * 0 with *ns set (saturated at UINT64_MAX), or -EINVAL.
 */
int grpc_timeout_parse(const char *v, size_t len, uint64_t *ns);

/*
 * text as a grpc-message value: bytes outside ' '..'~', and '%', become
 * %XX.  Writes at most size bytes with the NUL; returns the length the
 * whole encoding needs (as snprintf()), so size 3 * strlen(text) + 1 is
 * always enough.
 */
size_t grpc_message_encode(const char *text, char *out, size_t size);

/* The prefix of a message of len bytes, not compressed. */
void grpc_prefix_write(uint8_t out[GRPC_PREFIX_LEN], uint32_t len);

/* The prefix at in: its Compressed-Flag byte, and the message's length. */
void grpc_prefix_read(const uint8_t in[GRPC_PREFIX_LEN], uint8_t *flag,
		      uint32_t *len);

/*
 * Whether a message of this Compressed-Flag may be read, as grpc-go's
 * server and gRPC's C core decide it: GRPC_OK for flag 0; a flag of 1
 * is GRPC_INTERNAL when the request's grpc-encoding names no compression
 * (absent, or "identity": the flag contradicts it), GRPC_UNIMPLEMENTED
 * when it names one (only identity is taken); any other flag is
 * GRPC_INTERNAL.  *why: fixed text for grpc-message, with any code but
 * GRPC_OK.
 */
enum grpc_code grpc_prefix_check(uint8_t flag, bool compression_named,
				 const char **why);

/* A grpc-encoding value that names no compression ("identity"). */
bool grpc_encoding_identity(const char *v, size_t len);

/*
 * content-type says gRPC with protobuf messages: "application/grpc" or
 * "application/grpc+proto" (the type case-insensitive), alone or
 * followed by ";" and parameters.  Another message format
 * ("application/grpc+json") is gRPC too, but not one this service can
 * read: false, as for a type that is not gRPC at all.
 */
bool grpc_content_type_ok(const char *v, size_t len);

/*
 * Whether the length-delimited field number field at the top level of
 * the protobuf message msg (len bytes) holds a NUL byte, in the
 * occurrence that counts (the last: protobuf's rule for a field that is
 * not repeated).  protobuf-c hands a string field over as a C string,
 * which ends at its first NUL: "ab\0cd" would read as "ab".  1 if it
 * does, 0 if not (or the field is absent), -EINVAL for a message that is
 * not well-formed protobuf (a varint over 10 bytes, a length past the
 * end, a group, wire types 6 and 7, field number 0) or that has the
 * field with another wire type.
 */
int grpc_pb_string_has_nul(const uint8_t *msg, size_t len, uint32_t field);

#endif /* HTTPD_GRPC_WIRE_H */

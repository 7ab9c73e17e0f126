/* SPDX-License-Identifier: GPL-2.0 */
/*
 * etcd v3's JSON gateway, the encoding layer of idgend's store: etcd 3.4
 * serves it next to gRPC (POST /v3/kv/range and /v3/kv/txn) and speaks
 * proto3's JSON mapping: bytes are base64, int64 are decimal strings, and
 * every field at its default value is left out (no "kvs" for an empty
 * range, no "succeeded" for a failed txn, no "value" for an empty value).
 * Absent fields therefore mean their default, while anything present must
 * have the right type, or the response is garbled.
 *
 * No I/O and nothing of idgen's records: etcd_http.h sends what is built
 * here, and etcd.c puts idgen's records in it.
 */
#ifndef IDGEND_ETCD_GATEWAY_H
#define IDGEND_ETCD_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json.h>

/* Strict unsigned decimal (lib/decimal.h), at most max. */
bool gw_parse_dec(const char *s, size_t len, uint64_t max, uint64_t *v);

/*
 * Parses len bytes as one JSON value and nothing else: 0, -EPROTO with why
 * saying where it went wrong, or -ENOMEM.
 */
int gw_parse_json(const char *buf, size_t len, struct json_object **out,
		  char *why, size_t why_size);

/* A proto3 int64 member: a non-negative decimal string, 0 when absent. */
bool gw_get_i64(struct json_object *parent, const char *name, int64_t *v);

/* A proto3 bytes member: base64, empty when absent (*p malloc'd). */
int gw_get_bytes(struct json_object *parent, const char *name,
		 unsigned char **p, size_t *len);

/* A member that must be of one type when present; *o NULL when absent. */
bool gw_get_typed(struct json_object *parent, const char *name,
		  enum json_type type, struct json_object **o);

/* Add member name: the string s, or base64 of len bytes of p.  -ENOMEM. */
int gw_add_str(struct json_object *o, const char *name, const char *s);
int gw_add_b64(struct json_object *o, const char *name, const void *p,
	       size_t len);

/* A new object or array as member name of o, or element of array o. */
struct json_object *gw_add_new(struct json_object *o, const char *name,
			       bool array);

/* o as the plain JSON text a request carries (o's buffer). */
const char *gw_to_string(struct json_object *o);

/* o as ASCII-only JSON in a malloc'd string, or NULL (json_ascii.h). */
char *gw_to_ascii(struct json_object *o);

/*
 * One compare of a txn: MOD(key) result rev, over [key, range_end) when
 * range_end is given.  etcd compares a missing key's mod_revision as 0.
 */
struct txn_compare {
	const char *key;
	const char *range_end;		/* NULL: the key alone */
	int64_t rev;
	const char *result;		/* "EQUAL", "LESS" */
};

/*
 * A TxnRequest: if every compare holds then put key = value, else range
 * each of the nfail keys (NULL entries skipped), so a failed write reads
 * back what it met.  NULL: no memory.
 */
struct json_object *txn_request(const struct txn_compare *cmp, size_t ncmp,
				const char *key, const char *value,
				const char *const *fail, size_t nfail);

/* Element i of a failed txn's n "responses": its response_range, or NULL. */
struct json_object *gw_failed_range(struct json_object *resp, size_t i,
				    size_t n);

#endif /* IDGEND_ETCD_GATEWAY_H */

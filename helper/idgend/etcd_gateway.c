// SPDX-License-Identifier: GPL-2.0
/*
 * etcd_gateway.c: etcd v3's JSON gateway as idgend speaks it
 * (etcd_gateway.h): base64 with libcrypto, strict JSON with json-c, the
 * typed members of proto3's JSON mapping, and the requests built from them.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "decimal.h"
#include "etcd_gateway.h"
#include "json_ascii.h"

/* --- base64 ------------------------------------------------------------ */

static char *b64_encode(const void *p, size_t len)
{
	char *s;

	if (len > INT_MAX / 2)
		return NULL;
	s = malloc(4 * ((len + 2) / 3) + 1);
	if (s)
		EVP_EncodeBlock((unsigned char *)s, p, (int)len);
	return s;
}

/*
 * EVP_DecodeBlock skips surrounding whitespace and counts '=' padding as
 * output bytes, so the alphabet and the padding are checked here first and
 * the padding taken off its count.  *out is NUL-terminated for convenience
 * but may hold NULs itself.
 */
static int b64_decode(const char *s, size_t len, unsigned char **out,
		      size_t *out_len)
{
	unsigned char *buf;
	size_t i, pad = 0;
	int n;

	if (len % 4 || len > INT_MAX)
		return -EPROTO;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (c == '=') {
			if (i < len - 2)
				return -EPROTO;
			pad++;
		} else if (pad || !((c >= 'A' && c <= 'Z') ||
				    (c >= 'a' && c <= 'z') ||
				    (c >= '0' && c <= '9') ||
				    c == '+' || c == '/')) {
			return -EPROTO;
		}
	}
	buf = malloc(len / 4 * 3 + 1);
	if (!buf)
		return -ENOMEM;
	n = EVP_DecodeBlock(buf, (const unsigned char *)s, (int)len);
	if (n < 0 || (size_t)n < pad) {
		free(buf);
		return -EPROTO;
	}
	n -= pad;
	buf[n] = '\0';
	*out = buf;
	*out_len = n;
	return 0;
}

/* --- JSON helpers -------------------------------------------------------- */

/* Strict unsigned decimal (lib/decimal.h), at most max. */
bool gw_parse_dec(const char *s, size_t len, uint64_t max, uint64_t *v)
{
	return !idgen_decimal(s, len, 0, max, v);
}

/*
 * Parses len bytes as one JSON value and nothing else.  On failure, why
 * says where it went wrong, for the message (a byte offset past a
 * non-ASCII character counts in the escaped text json-c read).
 */
int gw_parse_json(const char *buf, size_t len, struct json_object **out,
		      char *why, size_t why_size)
{
	struct json_tokener *tok;
	struct json_object *o;
	enum json_tokener_error jerr;
	const char *bad;
	char *ascii;
	size_t end, ascii_len;
	int ret = -EPROTO;

	*out = NULL;
	if (!len) {
		snprintf(why, why_size, "empty");
		return -EPROTO;
	}
	/* Raw UTF-8 as \uXXXX: json-c 0.18 rejects it in strict mode. */
	ret = json_ascii(buf, len, &ascii, &ascii_len, &end, &bad);
	if (ret == -EILSEQ) {
		snprintf(why, why_size, "%s at byte %zu", bad, end);
		return -EPROTO;
	}
	if (ret)
		return ret;
	if (ascii) {
		buf = ascii;
		len = ascii_len;
	}
	ret = -EPROTO;
	if (len > INT_MAX) {
		snprintf(why, why_size, "too long");
		free(ascii);
		return -EPROTO;
	}
	tok = json_tokener_new();
	if (!tok) {
		free(ascii);
		return -ENOMEM;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	if (!o && jerr == json_tokener_continue) {
		/* A top-level scalar only ends at the end of the input. */
		o = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		if (!o && jerr == json_tokener_error_parse_eof) {
			snprintf(why, why_size, "truncated at byte %zu", len);
			goto out;
		}
	}
	if (!o) {
		snprintf(why, why_size, "%s at byte %zu",
			 json_tokener_error_desc(jerr),
			 json_tokener_get_parse_end(tok));
		goto out;
	}
	end = json_tokener_get_parse_end(tok);
	while (end < len && (buf[end] == ' ' || buf[end] == '\t' ||
			     buf[end] == '\r' || buf[end] == '\n'))
		end++;
	if (end < len) {
		snprintf(why, why_size, "trailing data at byte %zu", end);
		json_object_put(o);
		goto out;
	}
	*out = o;
	ret = 0;
out:
	json_tokener_free(tok);
	free(ascii);
	return ret;
}

/*
 * A proto3 int64 field: a decimal string, 0 when absent.  Every int64 we
 * read is a revision or a count, so a negative one is as wrong as a
 * non-number.
 */
bool gw_get_i64(struct json_object *parent, const char *name, int64_t *v)
{
	struct json_object *o;
	uint64_t u;

	if (!json_object_object_get_ex(parent, name, &o) || !o) {
		*v = 0;
		return true;
	}
	if (!json_object_is_type(o, json_type_string) ||
	    !gw_parse_dec(json_object_get_string(o), json_object_get_string_len(o),
		       INT64_MAX, &u))
		return false;
	*v = (int64_t)u;
	return true;
}

/* A proto3 bytes field: base64, empty when absent. */
int gw_get_bytes(struct json_object *parent, const char *name,
		     unsigned char **p, size_t *len)
{
	struct json_object *o;

	if (!json_object_object_get_ex(parent, name, &o) || !o)
		return b64_decode("", 0, p, len);
	if (!json_object_is_type(o, json_type_string))
		return -EPROTO;
	return b64_decode(json_object_get_string(o),
			  json_object_get_string_len(o), p, len);
}

/* A member that must be of one type when present; NULL when absent. */
bool gw_get_typed(struct json_object *parent, const char *name,
		      enum json_type type, struct json_object **o)
{
	if (!json_object_object_get_ex(parent, name, o) || !*o) {
		*o = NULL;
		return true;
	}
	return json_object_is_type(*o, type);
}

/* --- requests ------------------------------------------------------------ */

int gw_add_str(struct json_object *o, const char *name, const char *s)
{
	struct json_object *v = json_object_new_string(s);

	if (!v || json_object_object_add(o, name, v)) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

/* Adds name: base64 of len bytes of p. */
int gw_add_b64(struct json_object *o, const char *name, const void *p,
		   size_t len)
{
	char *s = b64_encode(p, len);
	int ret;

	if (!s)
		return -ENOMEM;
	ret = gw_add_str(o, name, s);
	free(s);
	return ret;
}

const char *gw_to_string(struct json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
}

/*
 * o as ASCII-only JSON in a malloc'd string, or NULL: what a strict
 * json-c 0.18 reads back (json_ascii.h), for values stored in etcd.
 */
char *gw_to_ascii(struct json_object *o)
{
	const char *s = gw_to_string(o), *bad;
	size_t len = strlen(s), at;
	char *ascii;

	if (json_ascii(s, len, &ascii, &len, &at, &bad))
		return NULL;
	return ascii ?: strdup(s);
}

/* A new object or array as member name of o, or element of array o. */
struct json_object *gw_add_new(struct json_object *o, const char *name,
				   bool array)
{
	struct json_object *v = array ? json_object_new_array() :
		json_object_new_object();
	int ret;

	if (!v)
		return NULL;
	ret = name ? json_object_object_add(o, name, v) :
		json_object_array_add(o, v);
	if (ret) {
		json_object_put(v);
		return NULL;
	}
	return v;
}

/* Appends {"target": "MOD", "key": ..., ["range_end": ...,] "mod_revision": ..., "result": ...}. */
static int add_compare(struct json_object *a, const struct txn_compare *c)
{
	struct json_object *o = gw_add_new(a, NULL, false);
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, c->rev);
	if (!o || gw_add_str(o, "target", "MOD") ||
	    gw_add_b64(o, "key", c->key, strlen(c->key)) ||
	    (c->range_end && gw_add_b64(o, "range_end", c->range_end, strlen(c->range_end))) ||
	    gw_add_str(o, "mod_revision", s) || gw_add_str(o, "result", c->result))
		return -ENOMEM;
	return 0;
}

/* Appends {"request_range": {"key": key}} to array a. */
static int add_range_op(struct json_object *a, const char *key)
{
	struct json_object *op = gw_add_new(a, NULL, false);

	op = op ? gw_add_new(op, "request_range", false) : NULL;
	if (!op || gw_add_b64(op, "key", key, strlen(key)))
		return -ENOMEM;
	return 0;
}

/*
 * The one shape of every write idgend makes (R2): if every compare holds
 * then put key = value, else range each of the nfail keys (NULL entries
 * skipped), so a failed write reads back what it met.  NULL: no memory.
 */
struct json_object *txn_request(const struct txn_compare *cmp, size_t ncmp,
				       const char *key, const char *value,
				       const char *const *fail, size_t nfail)
{
	struct json_object *req, *a, *op;
	size_t i;

	req = json_object_new_object();
	a = req ? gw_add_new(req, "compare", true) : NULL;
	for (i = 0; a && i < ncmp; i++)
		if (add_compare(a, &cmp[i]))
			a = NULL;
	if (!a)
		goto nomem;
	a = gw_add_new(req, "success", true);
	op = a ? gw_add_new(a, NULL, false) : NULL;
	op = op ? gw_add_new(op, "request_put", false) : NULL;
	if (!op || gw_add_b64(op, "key", key, strlen(key)) ||
	    gw_add_b64(op, "value", value, strlen(value)))
		goto nomem;
	if (nfail) {
		a = gw_add_new(req, "failure", true);
		for (i = 0; a && i < nfail; i++)
			if (fail[i] && add_range_op(a, fail[i]))
				a = NULL;
		if (!a)
			goto nomem;
	}
	return req;
nomem:
	json_object_put(req);
	return NULL;
}

/* Element i of a failed txn's "responses": its response_range. */
struct json_object *gw_failed_range(struct json_object *resp, size_t i,
					size_t n)
{
	struct json_object *rs, *r, *rr;

	if (!gw_get_typed(resp, "responses", json_type_array, &rs) || !rs ||
	    json_object_array_length(rs) != n ||
	    !(r = json_object_array_get_idx(rs, i)) ||
	    !json_object_is_type(r, json_type_object) ||
	    !json_object_object_get_ex(r, "response_range", &rr) ||
	    !json_object_is_type(rr, json_type_object))
		return NULL;
	return rr;
}

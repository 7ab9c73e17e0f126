// SPDX-License-Identifier: GPL-2.0
/*
 * etcd.c: the store of store.h on etcd v3, through the JSON gateway that
 * etcd 3.4 serves next to gRPC (POST /v3/kv/range and /v3/kv/txn), with
 * libcurl for HTTP, json-c for JSON and libcrypto for base64.
 *
 * The gateway speaks proto3's JSON mapping: bytes are base64, int64 are
 * decimal strings, and every field at its default value is left out (no
 * "kvs" for an empty range, no "succeeded" for a failed txn, no "value"
 * for an empty value).  Absent fields therefore mean their default, while
 * anything present must have the right type, or the response is garbled:
 * the endpoint's failure (call()).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json.h>
#include <openssl/evp.h>

#include "etcd.h"

/*
 * Far above one page of a listing (ETCD_PAGE_KEYS) or one record: a bigger
 * answer is not etcd's, or a page to ask for again in smaller pieces.
 */
#define ETCD_BODY_MAX		(4u << 20)
#define ETCD_CONNECT_MS		1000u

struct etcd {
	CURL *curl;
	struct curl_slist *headers;
	char **endpoints;
	unsigned int n_endpoints;
	unsigned int current;		/* the last endpoint that answered */
	char *prefix;
	char *key;			/* etcd_key()'s buffer */
	size_t key_size;

	char *body;			/* the response, NUL-terminated */
	size_t body_len;
	size_t body_cap;
	bool body_too_big;
	bool body_nomem;

	char curl_err[CURL_ERROR_SIZE];
	char err[512];
};

static void set_err(struct etcd *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_err(struct etcd *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->err, sizeof(e->err), fmt, ap);
	va_end(ap);
}

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

/* Strict unsigned decimal: digits only, at least one, at most max. */
static bool parse_dec(const char *s, size_t len, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++) {
		unsigned int d = (unsigned char)s[i] - '0';

		if (d > 9 || x > (max - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return true;
}

/*
 * Parses len bytes as one JSON value and nothing else.  On failure, why
 * says where it went wrong, for the message.
 */
static int parse_json(const char *buf, size_t len, struct json_object **out,
		      char *why, size_t why_size)
{
	struct json_tokener *tok;
	struct json_object *o;
	enum json_tokener_error jerr;
	size_t end;

	*out = NULL;
	if (!len) {
		snprintf(why, why_size, "empty");
		return -EPROTO;
	}
	if (len > INT_MAX) {
		snprintf(why, why_size, "too long");
		return -EPROTO;
	}
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	if (!o && jerr == json_tokener_continue) {
		/* A top-level scalar only ends at the end of the input. */
		o = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		if (!o && jerr == json_tokener_error_parse_eof) {
			snprintf(why, why_size, "truncated at byte %zu", len);
			goto fail;
		}
	}
	if (!o) {
		snprintf(why, why_size, "%s at byte %zu",
			 json_tokener_error_desc(jerr),
			 json_tokener_get_parse_end(tok));
		goto fail;
	}
	end = json_tokener_get_parse_end(tok);
	while (end < len && (buf[end] == ' ' || buf[end] == '\t' ||
			     buf[end] == '\r' || buf[end] == '\n'))
		end++;
	if (end < len) {
		snprintf(why, why_size, "trailing data at byte %zu", end);
		json_object_put(o);
		goto fail;
	}
	json_tokener_free(tok);
	*out = o;
	return 0;
fail:
	json_tokener_free(tok);
	return -EPROTO;
}

/*
 * A proto3 int64 field: a decimal string, 0 when absent.  Every int64 we
 * read is a revision or a count, so a negative one is as wrong as a
 * non-number.
 */
static bool get_i64(struct json_object *parent, const char *name, int64_t *v)
{
	struct json_object *o;
	uint64_t u;

	if (!json_object_object_get_ex(parent, name, &o) || !o) {
		*v = 0;
		return true;
	}
	if (!json_object_is_type(o, json_type_string) ||
	    !parse_dec(json_object_get_string(o), json_object_get_string_len(o),
		       INT64_MAX, &u))
		return false;
	*v = (int64_t)u;
	return true;
}

/* A proto3 bytes field: base64, empty when absent. */
static int get_bytes(struct json_object *parent, const char *name,
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
static bool get_typed(struct json_object *parent, const char *name,
		      enum json_type type, struct json_object **o)
{
	if (!json_object_object_get_ex(parent, name, o) || !*o) {
		*o = NULL;
		return true;
	}
	return json_object_is_type(*o, type);
}

/* --- records ------------------------------------------------------------- */

/*
 * What an output record says after a failure: present and unreadable,
 * which the lease logic treats as held, so a caller that ignores the
 * return value still does not take the worker number.
 */
static void rec_unknown(struct store_record *r, uint32_t worker)
{
	memset(r, 0, sizeof(*r));
	r->worker = worker;
	r->exists = true;
}

static void rec_absent(struct store_record *r, uint32_t worker)
{
	memset(r, 0, sizeof(*r));
	r->worker = worker;
}

/*
 * Our value, {"owner": "...", "valid_until_ms": N}.  Someone else's value
 * is not a protocol error: the record is then held by nobody we know of.
 */
static void parse_value(const unsigned char *v, size_t len,
			struct store_record *r)
{
	struct json_object *root = NULL, *owner, *until;
	char why[64];
	uint64_t ms;
	size_t olen;

	r->valid = false;
	r->owner[0] = '\0';
	r->valid_until_ms = 0;
	if (parse_json((const char *)v, len, &root, why, sizeof(why)))
		return;
	if (!json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "owner", &owner) ||
	    !json_object_is_type(owner, json_type_string) ||
	    !json_object_object_get_ex(root, "valid_until_ms", &until))
		goto out;
	olen = json_object_get_string_len(owner);
	if (olen >= STORE_OWNER_MAX ||
	    memchr(json_object_get_string(owner), '\0', olen))
		goto out;
	if (json_object_is_type(until, json_type_int)) {
		/* json-c saturates out-of-range numbers at UINT64_MAX. */
		if (json_object_get_int64(until) < 0)
			goto out;
		ms = json_object_get_uint64(until);
		if (ms == UINT64_MAX)
			goto out;
	} else if (json_object_is_type(until, json_type_string)) {
		if (!parse_dec(json_object_get_string(until),
			       json_object_get_string_len(until), UINT64_MAX,
			       &ms))
			goto out;
	} else {
		goto out;
	}
	memcpy(r->owner, json_object_get_string(owner), olen + 1);
	r->valid_until_ms = ms;
	r->valid = true;
out:
	json_object_put(root);
}

/*
 * One element of "kvs": *key (malloc'ed) is its key; r gets the rest.
 * The element must be an object; absent members take their defaults.
 */
static int parse_kv(struct etcd *e, const char *ep, struct json_object *kv,
		    unsigned char **key, size_t *key_len,
		    struct store_record *r)
{
	unsigned char *val;
	size_t val_len;
	int ret;

	if (!json_object_is_type(kv, json_type_object)) {
		set_err(e, "%s: a kv is not an object", ep);
		return -EPROTO;
	}
	ret = get_bytes(kv, "key", key, key_len);
	if (ret) {
		if (ret == -EPROTO)
			set_err(e, "%s: a kv's key is not base64", ep);
		return ret;
	}
	r->exists = true;
	if (!get_i64(kv, "mod_revision", &r->mod_revision)) {
		set_err(e, "%s: a kv's mod_revision is not an int64 string",
			ep);
		ret = -EPROTO;
		goto fail;
	}
	ret = get_bytes(kv, "value", &val, &val_len);
	if (ret) {
		if (ret == -EPROTO)
			set_err(e, "%s: a kv's value is not base64", ep);
		goto fail;
	}
	parse_value(val, val_len, r);
	free(val);
	return 0;
fail:
	free(*key);
	*key = NULL;
	return ret;
}

/*
 * A RangeResponse on one key: *r is the record, absent if "kvs" is.
 * Anything but that one key in it is not an answer to our question.
 */
static int parse_range_one(struct etcd *e, const char *ep,
			   struct json_object *resp, const char *key,
			   uint32_t worker, struct store_record *r)
{
	struct json_object *kvs;
	unsigned char *k;
	size_t klen, n;
	int ret;

	rec_absent(r, worker);
	if (!get_typed(resp, "kvs", json_type_array, &kvs)) {
		set_err(e, "%s: kvs is not an array", ep);
		return -EPROTO;
	}
	n = kvs ? json_object_array_length(kvs) : 0;
	if (!n)
		return 0;
	if (n > 1) {
		set_err(e, "%s: %zu kvs for the one key %s", ep, n, key);
		return -EPROTO;
	}
	ret = parse_kv(e, ep, json_object_array_get_idx(kvs, 0), &k, &klen,
		       r);
	if (ret)
		return ret;
	if (klen != strlen(key) || memcmp(k, key, klen)) {
		set_err(e, "%s: asked for %s, got another key", ep, key);
		ret = -EPROTO;
	}
	free(k);
	return ret;
}

/* The response's "header", which every answer of etcd has. */
static int check_header(struct etcd *e, const char *ep,
			struct json_object *resp, int64_t *revision)
{
	struct json_object *h;

	if (!json_object_is_type(resp, json_type_object)) {
		set_err(e, "%s: response is not a JSON object", ep);
		return -EPROTO;
	}
	if (!json_object_object_get_ex(resp, "header", &h) ||
	    !json_object_is_type(h, json_type_object)) {
		set_err(e, "%s: response has no header", ep);
		return -EPROTO;
	}
	if (!get_i64(h, "revision", revision)) {
		set_err(e, "%s: header.revision is not an int64 string", ep);
		return -EPROTO;
	}
	return 0;
}

/* --- HTTP ---------------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct etcd *e = ctx;
	size_t n = size * nmemb;

	if (n > ETCD_BODY_MAX - e->body_len) {
		e->body_too_big = true;
		return 0;
	}
	if (e->body_len + n + 1 > e->body_cap) {
		size_t cap = e->body_cap ? e->body_cap : 4096;
		char *b;

		while (cap < e->body_len + n + 1)
			cap *= 2;
		b = realloc(e->body, cap);
		if (!b) {
			e->body_nomem = true;
			return 0;
		}
		e->body = b;
		e->body_cap = cap;
	}
	memcpy(e->body + e->body_len, p, n);
	e->body_len += n;
	e->body[e->body_len] = '\0';
	return n;
}

/* A printable excerpt of a body that is not what we expected, for logs. */
static void excerpt(const char *b, size_t len, char *out, size_t size)
{
	size_t i;

	if (len > size - 1)
		len = size - 1;
	while (len && (b[len - 1] == '\n' || b[len - 1] == '\r'))
		len--;
	for (i = 0; i < len; i++)
		out[i] = b[i] >= 0x20 && b[i] < 0x7f ? b[i] : '?';
	out[i] = '\0';
}

enum outcome {
	ANSWERED,	/* a 2xx response; e->body holds it */
	NOT_SENT,	/* nothing left here: safe to send elsewhere */
	NO_ANSWER,	/* sent, but no usable answer: outcome unknown */
	TOO_BIG,	/* an answer over ETCD_BODY_MAX: garbled, or a page
			 * to ask again in smaller pieces */
	COMPACTED,	/* the revision read at was compacted away */
	FATAL,		/* -ENOMEM: stop here */
};

/*
 * etcd's error for a read at a compacted revision, rpctypes.ErrCompacted
 * through the gateway: gRPC code 11 (OutOfRange), which also covers "a
 * future revision"; only the message tells them apart.
 */
static bool is_compacted(struct json_object *o)
{
	struct json_object *c, *m;

	return json_object_object_get_ex(o, "code", &c) &&
	       json_object_is_type(c, json_type_int) &&
	       json_object_get_int64(c) == 11 &&
	       json_object_object_get_ex(o, "message", &m) &&
	       json_object_is_type(m, json_type_string) &&
	       strstr(json_object_get_string(m),
		      "required revision has been compacted");
}

/* One POST to one endpoint; what went wrong is in e->err. */
static enum outcome post(struct etcd *e, const char *ep, const char *path,
			 const char *req, int *fatal)
{
	char url[1024], why[160];
	struct json_object *o;
	curl_off_t sent = 0;
	long status = 0, oserr = 0;
	CURLcode rc;

	if ((size_t)snprintf(url, sizeof(url), "%s%s", ep, path) >=
	    sizeof(url)) {
		set_err(e, "%s: endpoint too long", ep);
		return NOT_SENT;
	}
	e->body_len = 0;
	e->body_too_big = false;
	e->body_nomem = false;
	e->curl_err[0] = '\0';
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, req);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(req));
	rc = curl_easy_perform(e->curl);

	if (e->body_nomem) {
		*fatal = -ENOMEM;
		set_err(e, "%s: out of memory for the response", ep);
		return FATAL;
	}
	if (e->body_too_big) {
		set_err(e, "%s: response larger than %u bytes", ep,
			ETCD_BODY_MAX);
		return TOO_BIG;
	}
	if (rc != CURLE_OK) {
		const char *msg = e->curl_err[0] ? e->curl_err :
			curl_easy_strerror(rc);

		curl_easy_getinfo(e->curl, CURLINFO_OS_ERRNO, &oserr);
		if (oserr)
			set_err(e, "%s: %s (%s)", ep, msg, strerror(oserr));
		else
			set_err(e, "%s: %s", ep, msg);
		/*
		 * REQUEST_SIZE counts request bytes handed to the socket in
		 * this transfer, also on a reused connection (where the
		 * connect time is 0): only at 0 can the server not have
		 * acted on the request.
		 */
		if (curl_easy_getinfo(e->curl, CURLINFO_REQUEST_SIZE, &sent) ||
		    sent > 0)
			return NO_ANSWER;
		return NOT_SENT;
	}
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300)
		return ANSWERED;

	/* etcd's errors: {"error": "...", "code": N, "message": "..."} */
	o = NULL;
	if (!parse_json(e->body, e->body_len, &o, why, sizeof(why)) &&
	    json_object_is_type(o, json_type_object)) {
		struct json_object *m;

		if ((json_object_object_get_ex(o, "message", &m) ||
		     json_object_object_get_ex(o, "error", &m)) &&
		    json_object_is_type(m, json_type_string)) {
			enum outcome out = is_compacted(o) ? COMPACTED :
				NO_ANSWER;

			set_err(e, "%s: HTTP %ld: %s", ep, status,
				json_object_get_string(m));
			json_object_put(o);
			return out;
		}
	}
	json_object_put(o);
	excerpt(e->body, e->body_len, why, 80);
	set_err(e, "%s: HTTP %ld: %s", ep, status, why);
	return NO_ANSWER;
}

/*
 * What an operation reads from an answer that is JSON with a header:
 * fills arg and returns 0, or returns -EPROTO (e->err saying why) when the
 * answer is not one to its request, or -ENOMEM.  It may be called once per
 * endpoint, so it must not leave anything behind on failure.
 */
typedef int (*answer_fn)(struct etcd *e, const char *ep,
			 struct json_object *resp, int64_t revision,
			 void *arg);

/* call()'s flags. */
#define CALL_WRITE	0x1	/* not idempotent: never sent twice */
#define CALL_PAGE	0x2	/* a page of a listing at a fixed revision:
				 * a compacted revision is -ESTALE */
#define CALL_SHRINK	0x4	/* an answer too big is -EMSGSIZE, for the
				 * caller to ask for less */

/* Parses e->body as an answer and hands it to parse. */
static int answer(struct etcd *e, const char *ep, answer_fn parse,
		  void *arg)
{
	struct json_object *resp;
	int64_t revision;
	char why[160];
	int ret;

	ret = parse_json(e->body, e->body_len, &resp, why, sizeof(why));
	if (ret) {
		if (ret == -EPROTO)
			set_err(e, "%s: response is not JSON (%s)", ep, why);
		return ret;
	}
	ret = check_header(e, ep, resp, &revision);
	if (!ret)
		ret = parse(e, ep, resp, revision, arg);
	json_object_put(resp);
	return ret;
}

/*
 * Sends req to path on each endpoint in turn, from the last one that
 * answered, until one gives an answer parse accepts.  A read goes on after
 * any failure, a garbled answer included: that endpoint is broken, not
 * etcd.  A write stops at the first endpoint that may have received it
 * (sending it again elsewhere could apply it twice; only a re-read can
 * tell) and is -ETIMEDOUT; the next call then starts at the next endpoint,
 * so that the re-read does not ask the one that failed.
 *
 * When every endpoint failed: -EPROTO if one of them answered garbage,
 * else -ETIMEDOUT if one of them may have received the request, else
 * -ECONNREFUSED.  With CALL_PAGE or CALL_SHRINK, -ESTALE or -EMSGSIZE as
 * said at the flags, at once: every member would answer the same.
 */
static int call(struct etcd *e, const char *path, const char *req,
		unsigned int flags, answer_fn parse, void *arg)
{
	char last[sizeof(e->err)] = "";
	bool sent = false, garbled = false;
	unsigned int i, k;
	int ret;

	if (!e->n_endpoints) {
		set_err(e, "no etcd endpoints");
		return -ECONNREFUSED;
	}
	for (i = 0; i < e->n_endpoints; i++) {
		const char *ep;

		k = (e->current + i) % e->n_endpoints;
		ep = e->endpoints[k];
		switch (post(e, ep, path, req, &ret)) {
		case FATAL:
			return ret;
		case NOT_SENT:
			memcpy(last, e->err, sizeof(last));
			continue;
		case COMPACTED:
			if (flags & CALL_PAGE) {
				e->current = k;
				return -ESTALE;
			}
			sent = true;
			break;
		case NO_ANSWER:
			sent = true;
			break;
		case TOO_BIG:
			if (flags & CALL_SHRINK) {
				e->current = k;
				return -EMSGSIZE;
			}
			garbled = true;
			break;
		case ANSWERED:
			ret = answer(e, ep, parse, arg);
			if (!ret) {
				e->current = k;
				return 0;
			}
			if (ret != -EPROTO)
				return ret;
			garbled = true;
			break;
		}
		/* Sent, and no usable answer from this endpoint. */
		if (flags & CALL_WRITE) {
			e->current = (k + 1) % e->n_endpoints;
			return -ETIMEDOUT;
		}
		memcpy(last, e->err, sizeof(last));
	}
	if (e->n_endpoints == 1)
		memcpy(e->err, last, sizeof(e->err));
	else
		set_err(e, "all %u endpoints %s (last: %.400s)",
			e->n_endpoints, sent || garbled ? "failed" :
			"unreachable", last);
	return garbled ? -EPROTO : sent ? -ETIMEDOUT : -ECONNREFUSED;
}

/* --- requests ------------------------------------------------------------ */

static int add_str(struct json_object *o, const char *name, const char *s)
{
	struct json_object *v = json_object_new_string(s);

	if (!v || json_object_object_add(o, name, v)) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

/* Adds name: base64 of len bytes of p. */
static int add_b64(struct json_object *o, const char *name, const void *p,
		   size_t len)
{
	char *s = b64_encode(p, len);
	int ret;

	if (!s)
		return -ENOMEM;
	ret = add_str(o, name, s);
	free(s);
	return ret;
}

static const char *to_string(struct json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* --- store_ops ----------------------------------------------------------- */

const char *etcd_key(struct etcd *e, uint32_t region, uint32_t worker)
{
	snprintf(e->key, e->key_size, "%s/r%" PRIu32 "/w/%" PRIu32,
		 e->prefix, region, worker);
	return e->key;
}

/*
 * A listing reads the region's range in pages of at most ETCD_PAGE_KEYS
 * keys, all at the revision of the first page, so that it is one
 * consistent read however many pages it takes (etcd caps an answer, and
 * keys are never deleted: a region can hold tens of thousands).  A page
 * answer too big for ETCD_BODY_MAX (foreign values can be large) is asked
 * again for half as many keys, down to one key without its value: a value
 * that big is not a lease, so the record is held by someone we do not
 * know.  If the revision is compacted away between two pages, the listing
 * starts over, at most ETCD_LIST_RESTARTS times.
 */
#define ETCD_PAGE_KEYS		512u
#define ETCD_LIST_RESTARTS	3u

struct page {
	/* The request. */
	const unsigned char *pfx;	/* the range is every key under pfx */
	size_t plen;
	unsigned char *from;		/* the first key asked for */
	size_t from_len;
	int64_t revision;		/* read at; 0 on the first page */
	uint32_t limit;
	uint32_t n;			/* worker numbers wanted: 0..n-1 */

	/* The answer. */
	int64_t header_rev;
	bool more;
	struct store_record *rec;	/* the records naming a wanted number */
	uint32_t nrec;
	unsigned char *last;		/* the page's last key (malloc) */
	size_t last_len;
};

/* Byte-wise, as etcd orders keys: "w/10" < "w/2". */
static int key_cmp(const unsigned char *a, size_t alen,
		   const unsigned char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* The worker number a key of the range names, if it names one wanted. */
static bool page_worker(const struct page *p, const unsigned char *k,
			size_t klen, uint32_t *worker)
{
	uint64_t w;

	/* Only the spelling etcd_key() writes names a worker. */
	if (parse_dec((char *)k + p->plen, klen - p->plen, UINT32_MAX, &w) &&
	    (klen - p->plen == 1 || k[p->plen] != '0') && w < p->n) {
		*worker = w;
		return true;
	}
	return false;
}

static int page_parse(struct etcd *e, const char *ep, struct json_object *resp,
		      int64_t revision, void *arg)
{
	struct page *p = arg;
	struct json_object *kvs, *more;
	const unsigned char *prev = p->from;
	size_t prev_len = p->from_len, i, nkv;
	int64_t at = p->revision ? p->revision : revision;
	unsigned char *k = NULL;
	size_t klen = 0;
	int ret;

	p->nrec = 0;
	free(p->last);
	p->last = NULL;
	if (!get_typed(resp, "kvs", json_type_array, &kvs)) {
		set_err(e, "%s: kvs is not an array", ep);
		return -EPROTO;
	}
	if (!get_typed(resp, "more", json_type_boolean, &more)) {
		set_err(e, "%s: more is not a boolean", ep);
		return -EPROTO;
	}
	p->more = more && json_object_get_boolean(more);
	nkv = kvs ? json_object_array_length(kvs) : 0;
	if (nkv > p->limit || (p->more && !nkv)) {
		set_err(e, "%s: %zu kvs%s for a limit of %" PRIu32, ep, nkv,
			p->more ? " and more" : "", p->limit);
		return -EPROTO;
	}
	if (p->more && !at) {
		set_err(e, "%s: a partial range at no revision", ep);
		return -EPROTO;
	}
	for (i = 0; i < nkv; i++) {
		struct store_record r = { 0 };
		uint32_t w;

		ret = parse_kv(e, ep, json_object_array_get_idx(kvs, i), &k,
			       &klen, &r);
		if (ret)
			goto fail;
		if (klen < p->plen || memcmp(k, p->pfx, p->plen)) {
			set_err(e, "%s: a key outside the range asked for",
				ep);
			ret = -EPROTO;
			goto fail;
		}
		/* In order, from where we asked: else pages could loop. */
		if (key_cmp(k, klen, prev, prev_len) < (i ? 1 : 0)) {
			set_err(e, "%s: keys out of order", ep);
			ret = -EPROTO;
			goto fail;
		}
		if (r.mod_revision > at) {
			set_err(e, "%s: a kv of revision %" PRId64
				" in a read at %" PRId64, ep, r.mod_revision,
				at);
			ret = -EPROTO;
			goto fail;
		}
		if (page_worker(p, k, klen, &w)) {
			r.worker = w;
			p->rec[p->nrec++] = r;
		}
		free(p->last);
		p->last = k;
		p->last_len = klen;
		prev = k;
		prev_len = klen;
		k = NULL;
	}
	p->header_rev = revision;
	return 0;
fail:
	free(k);
	free(p->last);
	p->last = NULL;
	p->nrec = 0;
	return ret;
}

/* The request for the page from p->from. */
static struct json_object *page_request(const struct page *p,
					const unsigned char *end,
					bool keys_only)
{
	struct json_object *req = json_object_new_object(), *v;
	char num[24];

	if (!req || add_b64(req, "key", p->from, p->from_len) ||
	    add_b64(req, "range_end", end, p->plen))
		goto nomem;
	snprintf(num, sizeof(num), "%" PRIu32, p->limit);
	if (add_str(req, "limit", num))
		goto nomem;
	if (p->revision) {
		snprintf(num, sizeof(num), "%" PRId64, p->revision);
		if (add_str(req, "revision", num))
			goto nomem;
	}
	if (keys_only) {
		v = json_object_new_boolean(1);
		if (!v || json_object_object_add(req, "keys_only", v)) {
			json_object_put(v);
			goto nomem;
		}
	}
	return req;
nomem:
	json_object_put(req);
	return NULL;
}

/* The next page starts right after the last key: last + "\0". */
static int page_next(struct page *p)
{
	unsigned char *from = malloc(p->last_len + 1);

	if (!from)
		return -ENOMEM;
	memcpy(from, p->last, p->last_len);
	from[p->last_len] = '\0';
	free(p->from);
	p->from = from;
	p->from_len = p->last_len + 1;
	return 0;
}

static int etcd_list(void *ctx, uint32_t region, struct store_record *rec,
		     uint32_t n)
{
	struct etcd *e = ctx;
	struct page p = { 0 };
	char *pfx = NULL, *end = NULL, why[sizeof(e->err)];
	unsigned int compacted = 0;
	struct json_object *req;
	bool keys_only;
	uint32_t i;
	int len, ret;

	e->err[0] = '\0';
	for (i = 0; i < n; i++)
		rec_absent(&rec[i], i);

	/* The range [prefix, prefix with its last byte + 1): '/' -> '0'. */
	len = asprintf(&pfx, "%s/r%" PRIu32 "/w/", e->prefix, region);
	if (len < 0) {
		pfx = NULL;
		goto nomem;
	}
	end = malloc(len);
	p.rec = malloc(ETCD_PAGE_KEYS * sizeof(*p.rec));
	if (!end || !p.rec)
		goto nomem;
	memcpy(end, pfx, len);
	end[len - 1]++;
	p.pfx = (unsigned char *)pfx;
	p.plen = len;
	p.n = n;

restart:
	free(p.from);
	p.from = malloc(p.plen);
	if (!p.from)
		goto nomem;
	memcpy(p.from, pfx, p.plen);
	p.from_len = p.plen;
	p.revision = 0;
	p.limit = ETCD_PAGE_KEYS;
	keys_only = false;
	for (;;) {
		req = page_request(&p, (unsigned char *)end, keys_only);
		if (!req)
			goto nomem;
		ret = call(e, "/v3/kv/range", to_string(req),
			   (p.revision ? CALL_PAGE : 0) |
			   (p.limit > 1 || !keys_only ? CALL_SHRINK : 0),
			   page_parse, &p);
		json_object_put(req);
		if (ret == -EMSGSIZE) {
			if (p.limit > 1)
				p.limit /= 2;
			else
				keys_only = true;
			continue;
		}
		if (ret == -ESTALE) {
			if (++compacted <= ETCD_LIST_RESTARTS) {
				for (i = 0; i < n; i++)
					rec_absent(&rec[i], i);
				goto restart;
			}
			memcpy(why, e->err, sizeof(why));
			set_err(e, "%s: the revision of the listing was "
				"compacted away before its last page, %u "
				"times in a row (last: revision %" PRId64
				", %.200s)", pfx, compacted, p.revision, why);
			ret = -ETIMEDOUT;
		}
		if (ret)
			goto fail;
		for (i = 0; i < p.nrec; i++)
			rec[p.rec[i].worker] = p.rec[i];
		if (!p.revision)
			p.revision = p.header_rev;
		if (!p.more)
			break;
		ret = page_next(&p);
		if (ret)
			goto nomem;
		keys_only = false;
		if (p.limit < ETCD_PAGE_KEYS)
			p.limit *= 2;
	}
	ret = 0;
	goto out;
nomem:
	set_err(e, "out of memory");
	ret = -ENOMEM;
fail:
	for (i = 0; i < n; i++)
		rec_unknown(&rec[i], i);
out:
	free(p.from);
	free(p.last);
	free(p.rec);
	free(end);
	free(pfx);
	return ret;
}

struct get_answer {
	const char *key;
	uint32_t worker;
	struct store_record *out;
};

static int get_parse(struct etcd *e, const char *ep, struct json_object *resp,
		     int64_t revision, void *arg)
{
	struct get_answer *a = arg;

	(void)revision;
	return parse_range_one(e, ep, resp, a->key, a->worker, a->out);
}

static int etcd_get(void *ctx, uint32_t region, uint32_t worker,
		    struct store_record *out)
{
	struct etcd *e = ctx;
	struct json_object *req;
	const char *key = etcd_key(e, region, worker);
	struct get_answer a = { key, worker, out };
	int ret;

	e->err[0] = '\0';
	req = json_object_new_object();
	if (!req || add_b64(req, "key", key, strlen(key))) {
		json_object_put(req);
		set_err(e, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	ret = call(e, "/v3/kv/range", to_string(req), 0, get_parse, &a);
	json_object_put(req);
	if (!ret)
		return 0;
fail:
	rec_unknown(out, worker);
	return ret;
}

/* A new object or array as member name of o, or element of array o. */
static struct json_object *add_new(struct json_object *o, const char *name,
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

/*
 * The txn: if mod_revision(key) == expect_rev then put else range.  etcd
 * compares a missing key's mod_revision as 0, so expect_rev 0 is "does not
 * exist yet" (also after a delete) without a second compare.
 */
static struct json_object *cas_request(const char *key, int64_t expect_rev,
				       const char *value)
{
	struct json_object *req, *a, *c, *op;
	size_t klen = strlen(key);
	char rev[24];

	snprintf(rev, sizeof(rev), "%" PRId64, expect_rev);
	req = json_object_new_object();
	if (!req)
		return NULL;

	a = add_new(req, "compare", true);
	c = a ? add_new(a, NULL, false) : NULL;
	if (!c || add_str(c, "target", "MOD") ||
	    add_b64(c, "key", key, klen) ||
	    add_str(c, "mod_revision", rev) || add_str(c, "result", "EQUAL"))
		goto nomem;

	a = add_new(req, "success", true);
	op = a ? add_new(a, NULL, false) : NULL;
	op = op ? add_new(op, "request_put", false) : NULL;
	if (!op || add_b64(op, "key", key, klen) ||
	    add_b64(op, "value", value, strlen(value)))
		goto nomem;

	a = add_new(req, "failure", true);
	op = a ? add_new(a, NULL, false) : NULL;
	op = op ? add_new(op, "request_range", false) : NULL;
	if (!op || add_b64(op, "key", key, klen))
		goto nomem;
	return req;
nomem:
	json_object_put(req);
	return NULL;
}

/* A TxnResponse to cas_request(): applied, or the record as it is. */
struct cas_answer {
	const char *key;
	uint32_t worker;
	int64_t expect_rev;
	bool succeeded;
	int64_t new_rev;		/* when succeeded */
	struct store_record now;	/* when not */
};

static int cas_parse(struct etcd *e, const char *ep, struct json_object *resp,
		     int64_t revision, void *arg)
{
	struct cas_answer *a = arg;
	struct json_object *ok, *rs, *r0, *rr;

	if (!get_typed(resp, "succeeded", json_type_boolean, &ok)) {
		set_err(e, "%s: succeeded is not a boolean", ep);
		return -EPROTO;
	}
	a->succeeded = ok && json_object_get_boolean(ok);
	if (a->succeeded) {
		/* The txn's revision is the put's: the record's new one. */
		if (revision <= a->expect_rev) {
			set_err(e, "%s: txn succeeded at revision %" PRId64,
				ep, revision);
			return -EPROTO;
		}
		a->new_rev = revision;
		return 0;
	}
	if (!get_typed(resp, "responses", json_type_array, &rs) || !rs ||
	    json_object_array_length(rs) != 1 ||
	    !(r0 = json_object_array_get_idx(rs, 0)) ||
	    !json_object_is_type(r0, json_type_object) ||
	    !json_object_object_get_ex(r0, "response_range", &rr) ||
	    !json_object_is_type(rr, json_type_object)) {
		set_err(e, "%s: failed txn without its response_range", ep);
		return -EPROTO;
	}
	return parse_range_one(e, ep, rr, a->key, a->worker, &a->now);
}

static int etcd_cas(void *ctx, uint32_t region, uint32_t worker,
		    int64_t expect_rev, const char *owner,
		    uint64_t valid_until_ms, int64_t *new_rev,
		    struct store_record *now)
{
	struct etcd *e = ctx;
	struct json_object *val, *v, *req = NULL;
	const char *key = etcd_key(e, region, worker);
	struct cas_answer a = { key, worker, expect_rev, false, 0, { 0 } };
	int ret;

	e->err[0] = '\0';
	if (new_rev)
		*new_rev = 0;
	if (expect_rev < 0 || strlen(owner) >= STORE_OWNER_MAX) {
		set_err(e, "%s: bad cas arguments", key);
		ret = -EINVAL;
		goto fail;
	}
	val = json_object_new_object();
	if (!val || add_str(val, "owner", owner)) {
		json_object_put(val);
		goto nomem;
	}
	v = json_object_new_uint64(valid_until_ms);
	if (!v || json_object_object_add(val, "valid_until_ms", v)) {
		json_object_put(v);
		json_object_put(val);
		goto nomem;
	}
	req = cas_request(key, expect_rev, to_string(val));
	json_object_put(val);
	if (!req)
		goto nomem;
	ret = call(e, "/v3/kv/txn", to_string(req), CALL_WRITE, cas_parse,
		   &a);
	json_object_put(req);
	if (ret)
		goto fail;
	if (a.succeeded) {
		if (new_rev)
			*new_rev = a.new_rev;
		return 0;
	}
	set_err(e, "%s: revision is %" PRId64 ", not %" PRId64, key,
		a.now.mod_revision, expect_rev);
	if (now)
		*now = a.now;
	return -ECANCELED;
nomem:
	set_err(e, "out of memory");
	ret = -ENOMEM;
fail:
	if (new_rev)
		*new_rev = 0;
	if (now)
		rec_unknown(now, worker);
	return ret;
}

static const char *etcd_error(void *ctx)
{
	struct etcd *e = ctx;

	return e->err;
}

const struct store_ops etcd_store_ops = {
	.list = etcd_list,
	.get = etcd_get,
	.cas = etcd_cas,
	.error = etcd_error,
};

/* --- setup --------------------------------------------------------------- */

void etcd_free(struct etcd *e)
{
	unsigned int i;

	if (!e)
		return;
	if (e->curl)
		curl_easy_cleanup(e->curl);
	curl_slist_free_all(e->headers);
	for (i = 0; i < e->n_endpoints; i++)
		free(e->endpoints[i]);
	free(e->endpoints);
	free(e->prefix);
	free(e->key);
	free(e->body);
	free(e);
}

struct etcd *etcd_new(const char *const *endpoints, unsigned int n,
		      const char *prefix, unsigned int timeout_ms)
{
	struct etcd *e = calloc(1, sizeof(*e));
	struct curl_slist *h;
	unsigned int i;
	long connect_ms;
	size_t len;
	CURL *c;

	if (!e)
		return NULL;
	e->endpoints = calloc(n ? n : 1, sizeof(*e->endpoints));
	if (!e->endpoints)
		goto fail;
	for (i = 0; i < n; i++) {
		e->endpoints[i] = strdup(endpoints[i]);
		if (!e->endpoints[i])
			goto fail;
		e->n_endpoints++;
		/* We append "/v3/...". */
		len = strlen(e->endpoints[i]);
		while (len && e->endpoints[i][len - 1] == '/')
			e->endpoints[i][--len] = '\0';
	}
	e->prefix = strdup(prefix);
	if (!e->prefix)
		goto fail;
	len = strlen(e->prefix);
	while (len && e->prefix[len - 1] == '/')
		e->prefix[--len] = '\0';
	e->key_size = len + sizeof("/r4294967295/w/4294967295");
	e->key = malloc(e->key_size);
	if (!e->key)
		goto fail;

	h = curl_slist_append(NULL, "Content-Type: application/json");
	if (!h)
		goto fail;
	e->headers = h;
	/* curl would otherwise wait for a 100 Continue on larger bodies. */
	h = curl_slist_append(e->headers, "Expect:");
	if (!h)
		goto fail;
	e->headers = h;

	c = e->curl = curl_easy_init();
	if (!c)
		goto fail;
	if (!timeout_ms)
		timeout_ms = 1;		/* 0 would be curl's "forever" */
	connect_ms = timeout_ms < ETCD_CONNECT_MS ? timeout_ms :
		ETCD_CONNECT_MS;
	if (curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) ||
	    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms) ||
	    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, connect_ms) ||
	    curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->headers) ||
	    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body) ||
	    curl_easy_setopt(c, CURLOPT_WRITEDATA, e) ||
	    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, e->curl_err) ||
	    /* http_proxy in a daemon's environment is not meant for etcd. */
	    curl_easy_setopt(c, CURLOPT_PROXY, "") ||
#if LIBCURL_VERSION_NUM >= 0x075500
	    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") ||
#else
	    curl_easy_setopt(c, CURLOPT_PROTOCOLS,
			     (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS)) ||
#endif
	    curl_easy_setopt(c, CURLOPT_POST, 1L))
		goto fail;
	return e;
fail:
	etcd_free(e);
	return NULL;
}

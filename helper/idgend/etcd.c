// SPDX-License-Identifier: GPL-2.0
/*
 * etcd.c: the store of store.h on etcd v3, the layer of idgen's records:
 * the keys, the values and what each says, the listings of a region, and
 * the txns every write is (R2).  Their encoding for the JSON gateway is
 * etcd_gateway.h's, their transport etcd_http.h's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decimal.h"
#include "etcd.h"
#include "etcd_gateway.h"
#include "etcd_http.h"

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

/* A write nonce: exactly STORE_NONCE_LEN lowercase hex digits. */
static bool is_nonce(struct json_object *o)
{
	const char *s = json_object_get_string(o);
	size_t i;

	if (!json_object_is_type(o, json_type_string) ||
	    json_object_get_string_len(o) != STORE_NONCE_LEN)
		return false;
	for (i = 0; i < STORE_NONCE_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/*
 * Our value, {"owner": "...", "token": "...", "write": "...",
 * "valid_until_ms": N}; token and write are absent in values older idgend
 * wrote.  Someone else's value is not a protocol error: the record is then
 * held by nobody we know of.
 */
static void parse_value(const unsigned char *v, size_t len,
			struct store_record *r)
{
	struct json_object *root = NULL, *owner, *token = NULL, *nonce = NULL;
	struct json_object *until;
	char why[64];
	uint64_t ms;
	size_t olen, tlen = 0;

	r->valid = false;
	r->owner[0] = '\0';
	r->token[0] = '\0';
	r->nonce[0] = '\0';
	r->valid_until_ms = 0;
	if (gw_parse_json((const char *)v, len, &root, why, sizeof(why)))
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
	if (json_object_object_get_ex(root, "token", &token)) {
		if (!json_object_is_type(token, json_type_string))
			goto out;
		tlen = json_object_get_string_len(token);
		if (!tlen || tlen >= STORE_TOKEN_MAX ||
		    memchr(json_object_get_string(token), '\0', tlen))
			goto out;
	}
	if (json_object_object_get_ex(root, "write", &nonce) && !is_nonce(nonce))
		goto out;
	if (json_object_is_type(until, json_type_int)) {
		/* json-c saturates out-of-range numbers at UINT64_MAX. */
		if (json_object_get_int64(until) < 0)
			goto out;
		ms = json_object_get_uint64(until);
		if (ms == UINT64_MAX)
			goto out;
	} else if (json_object_is_type(until, json_type_string)) {
		if (!gw_parse_dec(json_object_get_string(until),
			       json_object_get_string_len(until), UINT64_MAX,
			       &ms))
			goto out;
	} else {
		goto out;
	}
	memcpy(r->owner, json_object_get_string(owner), olen + 1);
	if (token)
		memcpy(r->token, json_object_get_string(token), tlen + 1);
	if (nonce)
		memcpy(r->nonce, json_object_get_string(nonce),
		       STORE_NONCE_LEN + 1);
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
		etcd_set_err(e, "%s: a kv is not an object", ep);
		return -EPROTO;
	}
	ret = gw_get_bytes(kv, "key", key, key_len);
	if (ret) {
		if (ret == -EPROTO)
			etcd_set_err(e, "%s: a kv's key is not base64", ep);
		return ret;
	}
	r->exists = true;
	if (!gw_get_i64(kv, "mod_revision", &r->mod_revision)) {
		etcd_set_err(e, "%s: a kv's mod_revision is not an int64 string",
			ep);
		ret = -EPROTO;
		goto fail;
	}
	ret = gw_get_bytes(kv, "value", &val, &val_len);
	if (ret) {
		if (ret == -EPROTO)
			etcd_set_err(e, "%s: a kv's value is not base64", ep);
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
	if (!gw_get_typed(resp, "kvs", json_type_array, &kvs)) {
		etcd_set_err(e, "%s: kvs is not an array", ep);
		return -EPROTO;
	}
	n = kvs ? json_object_array_length(kvs) : 0;
	if (!n)
		return 0;
	if (n > 1) {
		etcd_set_err(e, "%s: %zu kvs for the one key %s", ep, n, key);
		return -EPROTO;
	}
	ret = parse_kv(e, ep, json_object_array_get_idx(kvs, 0), &k, &klen,
		       r);
	if (ret)
		return ret;
	if (klen != strlen(key) || memcmp(k, key, klen)) {
		etcd_set_err(e, "%s: asked for %s, got another key", ep, key);
		ret = -EPROTO;
	}
	free(k);
	return ret;
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
 * keys are never deleted: a region can hold tens of thousands).  Both
 * whole-region reads are listings (list_pages()): list, and region_scan,
 * whose revision the cut-over's compare "no worker record written after
 * it" relies on.  A page answer too big for ETCD_BODY_MAX (foreign values
 * can be large) is asked again for half as many keys, down to one key
 * without its value: a value that big is not a lease, so the record is
 * held by someone we do not know (region_scan counts it as garbled).  If
 * the revision is compacted away between two pages, the listing starts
 * over, at most ETCD_LIST_RESTARTS times.
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
	struct store_record *rec;	/* every kv of the page; .worker is
					 * PAGE_NO_WORKER unless its key names
					 * a wanted number */
	uint32_t nrec;
	unsigned char *last;		/* the page's last key (malloc) */
	size_t last_len;
};

#define PAGE_NO_WORKER		UINT32_MAX

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
	if (!idgen_decimal((const char *)k + p->plen, klen - p->plen, 0,
			   UINT32_MAX, &w) && w < p->n) {
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
	if (!gw_get_typed(resp, "kvs", json_type_array, &kvs)) {
		etcd_set_err(e, "%s: kvs is not an array", ep);
		return -EPROTO;
	}
	if (!gw_get_typed(resp, "more", json_type_boolean, &more)) {
		etcd_set_err(e, "%s: more is not a boolean", ep);
		return -EPROTO;
	}
	p->more = more && json_object_get_boolean(more);
	nkv = kvs ? json_object_array_length(kvs) : 0;
	if (nkv > p->limit || (p->more && !nkv)) {
		etcd_set_err(e, "%s: %zu kvs%s for a limit of %" PRIu32, ep, nkv,
			p->more ? " and more" : "", p->limit);
		return -EPROTO;
	}
	if (p->more && !at) {
		etcd_set_err(e, "%s: a partial range at no revision", ep);
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
			etcd_set_err(e, "%s: a key outside the range asked for",
				ep);
			ret = -EPROTO;
			goto fail;
		}
		/* In order, from where we asked: else pages could loop. */
		if (key_cmp(k, klen, prev, prev_len) < (i ? 1 : 0)) {
			etcd_set_err(e, "%s: keys out of order", ep);
			ret = -EPROTO;
			goto fail;
		}
		if (r.mod_revision > at) {
			etcd_set_err(e, "%s: a kv of revision %" PRId64
				" in a read at %" PRId64, ep, r.mod_revision,
				at);
			ret = -EPROTO;
			goto fail;
		}
		r.worker = page_worker(p, k, klen, &w) ? w : PAGE_NO_WORKER;
		p->rec[p->nrec++] = r;
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

	if (!req || gw_add_b64(req, "key", p->from, p->from_len) ||
	    gw_add_b64(req, "range_end", end, p->plen))
		goto nomem;
	snprintf(num, sizeof(num), "%" PRIu32, p->limit);
	if (gw_add_str(req, "limit", num))
		goto nomem;
	if (p->revision) {
		snprintf(num, sizeof(num), "%" PRId64, p->revision);
		if (gw_add_str(req, "revision", num))
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

/*
 * What a listing does with each page's records (p->rec, p->nrec), in
 * order; p NULL when the listing starts (over): forget what earlier pages
 * gave.
 */
typedef void (*page_fn)(const struct page *p, void *arg);

/*
 * Lists every key of the region's range, workers 0..n-1 named in the
 * records' .worker, handing each page to fn.  On 0, *revision is the one
 * revision every page was read at.
 */
static int list_pages(struct etcd *e, uint32_t region, uint32_t n,
		      page_fn fn, void *arg, int64_t *revision)
{
	struct page p = { 0 };
	char *pfx = NULL, *end = NULL, why[sizeof(e->err)];
	unsigned int compacted = 0;
	struct json_object *req;
	bool keys_only;
	int len, ret;

	*revision = 0;
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
	fn(NULL, arg);
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
		ret = etcd_call(e, "/v3/kv/range", gw_to_string(req),
			   (p.revision ? ETCD_CALL_PAGE : 0) |
			   (p.limit > 1 || !keys_only ? ETCD_CALL_SHRINK : 0),
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
			if (++compacted <= ETCD_LIST_RESTARTS)
				goto restart;
			memcpy(why, e->err, sizeof(why));
			etcd_set_err(e, "%s: the revision of the listing was "
				"compacted away before its last page, %u "
				"times in a row (last: revision %" PRId64
				", %.200s)", pfx, compacted, p.revision, why);
			ret = -ETIMEDOUT;
		}
		if (ret)
			goto out;
		fn(&p, arg);
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
	*revision = p.revision;
	ret = 0;
	goto out;
nomem:
	etcd_set_err(e, "out of memory");
	ret = -ENOMEM;
out:
	free(p.from);
	free(p.last);
	free(p.rec);
	free(end);
	free(pfx);
	return ret;
}

struct list_state {
	struct store_record *rec;
	uint32_t n;
};

static void list_page(const struct page *p, void *arg)
{
	struct list_state *l = arg;
	uint32_t i;

	if (!p) {
		for (i = 0; i < l->n; i++)
			rec_absent(&l->rec[i], i);
		return;
	}
	for (i = 0; i < p->nrec; i++)
		if (p->rec[i].worker != PAGE_NO_WORKER)
			l->rec[p->rec[i].worker] = p->rec[i];
}

static int etcd_list(void *ctx, uint32_t region, struct store_record *rec,
		     uint32_t n)
{
	struct etcd *e = ctx;
	struct list_state l = { rec, n };
	int64_t revision;
	uint32_t i;
	int ret;

	e->err[0] = '\0';
	ret = list_pages(e, region, n, list_page, &l, &revision);
	if (ret)
		for (i = 0; i < n; i++)
			rec_unknown(&rec[i], i);
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
	if (!req || gw_add_b64(req, "key", key, strlen(key))) {
		json_object_put(req);
		etcd_set_err(e, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	ret = etcd_call(e, "/v3/kv/range", gw_to_string(req), 0, get_parse, &a);
	json_object_put(req);
	if (!ret)
		return 0;
fail:
	rec_unknown(out, worker);
	return ret;
}

/* The key of a region's layout record: "/idgen/r0/layout". */
static char *layout_key(struct etcd *e, uint32_t region)
{
	char *k;

	if (asprintf(&k, "%s/r%" PRIu32 "/layout", e->prefix, region) < 0)
		return NULL;
	return k;
}

/* The key of the prefix's region width record: "/idgen/region_bits". */
static char *width_key(struct etcd *e)
{
	char *k;

	if (asprintf(&k, "%s/region_bits", e->prefix) < 0)
		return NULL;
	return k;
}

/*
 * The txn: if mod_revision(key) == expect_rev [and mod_revision(lkey) ==
 * layout_rev] then put else range key [and range lkey].  etcd compares a
 * missing key's mod_revision as 0, so expect_rev 0 is "does not exist yet"
 * (also after a delete) without a second compare.
 */
static struct json_object *cas_request(const char *key, int64_t expect_rev,
				       const char *lkey, int64_t layout_rev,
				       const char *value)
{
	const struct txn_compare cmp[] = {
		{ key, NULL, expect_rev, "EQUAL" },
		{ lkey, NULL, layout_rev, "EQUAL" },
	};
	const char *const fail[] = { key, lkey };

	return txn_request(cmp, lkey ? 2 : 1, key, value, fail, 2);
}

/* {"owner": ..., "token": ..., "write": ..., "valid_until_ms": N}, or NULL. */
static char *value_json(const struct store_value *val)
{
	struct json_object *o, *v;
	char *s = NULL;

	o = json_object_new_object();
	if (!o || gw_add_str(o, "owner", val->owner) ||
	    (val->token && val->token[0] && gw_add_str(o, "token", val->token)) ||
	    (val->nonce && gw_add_str(o, "write", val->nonce)))
		goto out;
	v = json_object_new_uint64(val->valid_until_ms);
	if (!v || json_object_object_add(o, "valid_until_ms", v)) {
		json_object_put(v);
		goto out;
	}
	s = gw_to_ascii(o);
out:
	json_object_put(o);
	return s;
}

/*
 * A TxnResponse to cas_request(): applied, or the record as it is, with
 * the layout record's revision when the txn compared it (lkey).
 */
struct cas_answer {
	const char *key;
	uint32_t worker;
	int64_t expect_rev;
	const char *lkey;		/* NULL: the layout was not compared */
	bool succeeded;
	int64_t new_rev;		/* when succeeded */
	struct store_record now;	/* when not */
};

static int cas_parse(struct etcd *e, const char *ep, struct json_object *resp,
		     int64_t revision, void *arg)
{
	struct cas_answer *a = arg;
	struct json_object *ok, *rr;
	struct store_record lay;
	size_t nr = a->lkey ? 2 : 1;
	int ret;

	if (!gw_get_typed(resp, "succeeded", json_type_boolean, &ok)) {
		etcd_set_err(e, "%s: succeeded is not a boolean", ep);
		return -EPROTO;
	}
	a->succeeded = ok && json_object_get_boolean(ok);
	if (a->succeeded) {
		/* The txn's revision is the put's: the record's new one. */
		if (revision <= a->expect_rev) {
			etcd_set_err(e, "%s: txn succeeded at revision %" PRId64,
				ep, revision);
			return -EPROTO;
		}
		a->new_rev = revision;
		return 0;
	}
	rr = gw_failed_range(resp, 0, nr);
	if (!rr) {
		etcd_set_err(e, "%s: failed txn without its response_range", ep);
		return -EPROTO;
	}
	ret = parse_range_one(e, ep, rr, a->key, a->worker, &a->now);
	if (ret)
		return ret;
	a->now.layout_rev = STORE_ANY_LAYOUT;
	if (!a->lkey)
		return 0;
	rr = gw_failed_range(resp, 1, nr);
	if (!rr) {
		etcd_set_err(e, "%s: failed txn without the layout's response_range",
			ep);
		return -EPROTO;
	}
	ret = parse_range_one(e, ep, rr, a->lkey, 0, &lay);
	if (ret)
		return ret;
	a->now.layout_rev = lay.mod_revision;
	return 0;
}

static int etcd_cas(void *ctx, uint32_t region, uint32_t worker,
		    int64_t expect_rev, int64_t layout_rev,
		    const struct store_value *val, int64_t *new_rev,
		    struct store_record *now)
{
	struct etcd *e = ctx;
	struct json_object *req = NULL;
	const char *key = etcd_key(e, region, worker);
	char *lkey = NULL, *value = NULL;
	bool fenced = layout_rev != STORE_ANY_LAYOUT;
	struct cas_answer a = { key, worker, expect_rev, NULL, false, 0,
				{ 0 } };
	int ret;

	e->err[0] = '\0';
	if (new_rev)
		*new_rev = 0;
	if (expect_rev < 0 || (fenced && layout_rev < 0) ||
	    strlen(val->owner) >= STORE_OWNER_MAX ||
	    (val->token && strlen(val->token) >= STORE_TOKEN_MAX) ||
	    (val->nonce && strlen(val->nonce) != STORE_NONCE_LEN)) {
		etcd_set_err(e, "%s: bad cas arguments", key);
		ret = -EINVAL;
		goto fail;
	}
	value = value_json(val);
	if (!value || (fenced && !(lkey = layout_key(e, region))))
		goto nomem;
	a.lkey = lkey;
	req = cas_request(key, expect_rev, lkey, layout_rev, value);
	if (!req)
		goto nomem;
	ret = etcd_call(e, "/v3/kv/txn", gw_to_string(req), ETCD_CALL_WRITE, cas_parse,
		   &a);
	json_object_put(req);
	if (ret)
		goto fail;
	if (a.succeeded) {
		free(lkey);
		free(value);
		if (new_rev)
			*new_rev = a.new_rev;
		return 0;
	}
	if (fenced && a.now.layout_rev != layout_rev)
		etcd_set_err(e, "%s: revision %" PRId64 ", not %" PRId64 " (the layout changed)",
			lkey, a.now.layout_rev, layout_rev);
	else
		etcd_set_err(e, "%s: revision is %" PRId64 ", not %" PRId64, key,
			a.now.mod_revision, expect_rev);
	free(lkey);
	free(value);
	if (now)
		*now = a.now;
	return -ECANCELED;
nomem:
	etcd_set_err(e, "out of memory");
	ret = -ENOMEM;
fail:
	free(lkey);
	free(value);
	if (new_rev)
		*new_rev = 0;
	if (now)
		rec_unknown(now, worker);
	return ret;
}

/* --- the layout record --------------------------------------------------- */

/* A member that must be a JSON integer from 0 to max. */
static bool get_uint(struct json_object *o, const char *name, uint64_t max,
		     uint64_t *v)
{
	struct json_object *m;

	if (!json_object_object_get_ex(o, name, &m) ||
	    !json_object_is_type(m, json_type_int) ||
	    json_object_get_int64(m) < 0)
		return false;
	*v = json_object_get_uint64(m);
	return *v <= max;
}

/*
 * A record of ours whose value is one JSON object (the layout and region
 * width records), read by value_get(): its key (malloc'ed: value_get()
 * frees it), what the value must be (for the message when it is not),
 * and the record, rec of size bytes, with its exists, valid and
 * mod_revision fields; fields() takes the object's members into rec and
 * says whether they were all there.
 */
struct value_get {
	char *key;
	const char *what;		/* "a layout" */
	bool (*fields)(struct json_object *root, void *rec);
	void *rec;
	size_t size;
	bool *exists, *valid;
	int64_t *mod_revision;
};

#define VALUE_GET(key, what, fields, out)				\
	{ key, what, fields, out, sizeof(*(out)), &(out)->exists,	\
	  &(out)->valid, &(out)->mod_revision }

/*
 * A RangeResponse on g->key: absent, or one kv with a revision and a
 * value.  A value that is not what g->what says is not a protocol error:
 * the record exists, unreadable (valid false, its fields zeros).
 */
static int value_parse(struct etcd *e, const char *ep, struct json_object *resp,
		       int64_t revision, void *arg)
{
	struct value_get *g = arg;
	struct json_object *kvs, *kv, *root = NULL;
	unsigned char *val = NULL;
	size_t n, val_len;
	int64_t mod_revision;
	char why[64];

	(void)revision;
	memset(g->rec, 0, g->size);
	if (!gw_get_typed(resp, "kvs", json_type_array, &kvs)) {
		etcd_set_err(e, "%s: kvs is not an array", ep);
		return -EPROTO;
	}
	n = kvs ? json_object_array_length(kvs) : 0;
	if (n > 1) {
		etcd_set_err(e, "%s: %zu kvs for the one key %s", ep, n, g->key);
		return -EPROTO;
	}
	if (!n)
		return 0;
	kv = json_object_array_get_idx(kvs, 0);
	if (!json_object_is_type(kv, json_type_object) ||
	    !gw_get_i64(kv, "mod_revision", &mod_revision) ||
	    gw_get_bytes(kv, "value", &val, &val_len)) {
		free(val);
		etcd_set_err(e, "%s: %s: not a kv with a revision and a value", ep,
			g->key);
		return -EPROTO;
	}
	if (!gw_parse_json((const char *)val, val_len, &root, why, sizeof(why)) &&
	    json_object_is_type(root, json_type_object) && g->fields(root, g->rec)) {
		*g->valid = true;
	} else {
		memset(g->rec, 0, g->size);
		etcd_set_err(e, "%s: %s holds a value that is not %s", ep, g->key,
			g->what);
	}
	*g->exists = true;
	*g->mod_revision = mod_revision;
	json_object_put(root);
	free(val);
	return 0;
}

/*
 * The range on g->key (NULL: out of memory), through value_parse(); on
 * an error the record is unknown, which is never "absent".
 */
static int value_get(struct etcd *e, struct value_get *g)
{
	struct json_object *req;
	int ret = -ENOMEM;

	e->err[0] = '\0';
	memset(g->rec, 0, g->size);
	req = g->key ? json_object_new_object() : NULL;
	if (!req || gw_add_b64(req, "key", g->key, strlen(g->key)))
		etcd_set_err(e, "out of memory");
	else
		ret = etcd_call(e, "/v3/kv/range", gw_to_string(req), 0,
				value_parse, g);
	json_object_put(req);
	free(g->key);
	if (ret) {
		memset(g->rec, 0, g->size);
		*g->exists = true;
	}
	return ret;
}

/* {"region_bits": R, "worker_bits": W, "seq_bits": S, "from_ms": N}. */
static bool layout_fields(struct json_object *root, void *rec)
{
	struct store_layout *l = rec;
	uint64_t rb, wb, sb, from;

	if (!get_uint(root, "region_bits", 64, &rb) ||
	    !get_uint(root, "worker_bits", 64, &wb) ||
	    !get_uint(root, "seq_bits", 64, &sb) ||
	    !get_uint(root, "from_ms", UINT64_MAX - 1, &from))
		return false;
	l->region_bits = rb;
	l->worker_bits = wb;
	l->seq_bits = sb;
	l->from_ms = from;
	return true;
}

static int etcd_layout_get(void *ctx, uint32_t region, struct store_layout *out)
{
	struct etcd *e = ctx;
	struct value_get g = VALUE_GET(layout_key(e, region), "a layout",
				       layout_fields, out);

	return value_get(e, &g);
}

/* A TxnResponse to value_put()'s txn: applied (at revision) or not. */
struct put_answer {
	int64_t expect_rev;
	bool succeeded;
	int64_t revision;
};

static int put_parse(struct etcd *e, const char *ep, struct json_object *resp,
		     int64_t revision, void *arg)
{
	struct put_answer *a = arg;
	struct json_object *ok;

	if (!gw_get_typed(resp, "succeeded", json_type_boolean, &ok)) {
		etcd_set_err(e, "%s: succeeded is not a boolean", ep);
		return -EPROTO;
	}
	a->succeeded = ok && json_object_get_boolean(ok);
	/* As for a worker record: the put's revision is a new one. */
	if (a->succeeded && revision <= a->expect_rev) {
		etcd_set_err(e, "%s: txn succeeded at revision %" PRId64, ep,
			revision);
		return -EPROTO;
	}
	a->revision = revision;
	return 0;
}

/*
 * The write of a record of ours whose value is one JSON object (the
 * layout and region width records): one txn (R2) that puts val at key if
 * the n compares hold, the first of them key's revision against
 * expect_rev.  0 with *new_rev, -ECANCELED when a compare failed (e->err:
 * the key and lost), or a store error.
 */
static int value_put(struct etcd *e, const struct txn_compare *cmp, size_t n,
		     const char *key, struct json_object *val,
		     int64_t expect_rev, const char *lost, int64_t *new_rev)
{
	struct put_answer r = { expect_rev, false, 0 };
	struct json_object *req;
	int ret;

	req = txn_request(cmp, n, key, gw_to_string(val), NULL, 0);
	if (!req) {
		etcd_set_err(e, "out of memory");
		return -ENOMEM;
	}
	ret = etcd_call(e, "/v3/kv/txn", gw_to_string(req), ETCD_CALL_WRITE,
			put_parse, &r);
	json_object_put(req);
	if (ret)
		return ret;
	if (!r.succeeded) {
		etcd_set_err(e, "%s: %s", key, lost);
		return -ECANCELED;
	}
	*new_rev = r.revision;
	return 0;
}

/*
 * if MOD(layout) == expect_rev [and MOD(width) == width_rev] [and
 * MOD(every worker key) < workers_rev + 1] then put layout.
 */
static int etcd_layout_cas(void *ctx, uint32_t region, int64_t expect_rev,
			   int64_t workers_rev, int64_t width_rev,
			   const struct store_layout *l, int64_t *new_rev)
{
	struct etcd *e = ctx;
	struct json_object *val = NULL;
	char *key = layout_key(e, region), *start = NULL, *end = NULL, *wkey = NULL;
	struct txn_compare cmp[3];
	size_t n = 0;
	int ret;

	e->err[0] = '\0';
	*new_rev = 0;
	if (!key)
		goto nomem;
	val = json_object_new_object();
	if (!val ||
	    json_object_object_add(val, "region_bits", json_object_new_int(l->region_bits)) ||
	    json_object_object_add(val, "worker_bits", json_object_new_int(l->worker_bits)) ||
	    json_object_object_add(val, "seq_bits", json_object_new_int(l->seq_bits)) ||
	    json_object_object_add(val, "from_ms", json_object_new_uint64(l->from_ms)))
		goto nomem;
	if (width_rev && !(wkey = width_key(e)))
		goto nomem;
	cmp[n++] = (struct txn_compare){ key, NULL, expect_rev, "EQUAL" };
	if (width_rev)
		cmp[n++] = (struct txn_compare){ wkey, NULL, width_rev, "EQUAL" };
	if (workers_rev) {
		/* Every key in [.../w/, .../w0): '/' + 1 is '0'. */
		if (asprintf(&start, "%s/r%" PRIu32 "/w/", e->prefix, region) < 0) {
			start = NULL;
			goto nomem;
		}
		end = strdup(start);
		if (!end)
			goto nomem;
		end[strlen(end) - 1]++;
		cmp[n++] = (struct txn_compare){ start, end, workers_rev + 1, "LESS" };
	}
	ret = value_put(e, cmp, n, key, val, expect_rev, "changed since it was read",
			new_rev);
	goto out;
nomem:
	etcd_set_err(e, "out of memory");
	ret = -ENOMEM;
out:
	json_object_put(val);
	free(key);
	free(start);
	free(end);
	free(wkey);
	return ret;
}

/* --- the region width record ------------------------------------------- */

/* {"region_bits": R}. */
static bool width_fields(struct json_object *root, void *rec)
{
	struct store_width *w = rec;
	uint64_t rb;

	if (!get_uint(root, "region_bits", 64, &rb))
		return false;
	w->region_bits = rb;
	return true;
}

static int etcd_width_get(void *ctx, struct store_width *out)
{
	struct etcd *e = ctx;
	struct value_get g = VALUE_GET(width_key(e), "a region width",
				       width_fields, out);

	return value_get(e, &g);
}

/* if MOD(width) == 0 (absent) then put {"region_bits": R}. */
static int etcd_width_create(void *ctx, uint8_t region_bits, int64_t *new_rev)
{
	struct etcd *e = ctx;
	struct json_object *val = NULL;
	char *key = width_key(e);
	int ret;

	e->err[0] = '\0';
	*new_rev = 0;
	val = key ? json_object_new_object() : NULL;
	if (!val || json_object_object_add(val, "region_bits",
					   json_object_new_int(region_bits))) {
		etcd_set_err(e, "out of memory");
		ret = -ENOMEM;
	} else {
		ret = value_put(e, &(struct txn_compare){ key, NULL, 0, "EQUAL" }, 1,
				key, val, 0, "exists already", new_rev);
	}
	json_object_put(val);
	free(key);
	return ret;
}

/* What region_scan's pages say: the records' fences. */
struct scan_state {
	uint64_t max_until;
	uint32_t garbled;
};

static void scan_page(const struct page *p, void *arg)
{
	struct scan_state *sc = arg;
	uint32_t i;

	if (!p) {
		sc->max_until = 0;
		sc->garbled = 0;
		return;
	}
	/* Every key of the range, whether or not it names a number. */
	for (i = 0; i < p->nrec; i++) {
		if (!p->rec[i].valid)
			sc->garbled++;
		else if (p->rec[i].valid_until_ms > sc->max_until)
			sc->max_until = p->rec[i].valid_until_ms;
	}
}

/* Every worker record of the region: a listing at one revision. */
static int etcd_region_scan(void *ctx, uint32_t region, uint64_t *max_until,
			    uint32_t *garbled, int64_t *revision)
{
	struct etcd *e = ctx;
	struct scan_state sc = { 0, 0 };
	int ret;

	e->err[0] = '\0';
	*max_until = 0;
	*garbled = 0;
	ret = list_pages(e, region, 0, scan_page, &sc, revision);
	if (!ret) {
		*max_until = sc.max_until;
		*garbled = sc.garbled;
	}
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
	.layout_get = etcd_layout_get,
	.layout_cas = etcd_layout_cas,
	.region_scan = etcd_region_scan,
	.width_get = etcd_width_get,
	.width_create = etcd_width_create,
	.error = etcd_error,
};

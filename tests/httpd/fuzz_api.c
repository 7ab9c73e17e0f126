// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: idgen-httpd's request handling (helper/httpd/api.c),
 * everything a request carries past libmicrohttpd.  The input is
 *
 *   M PATH \n CONTENT-TYPE \n AT \n BODY
 *
 * M one byte choosing the method (GET, HEAD, POST, PUT, DELETE, OPTIONS);
 * an empty CONTENT-TYPE or AT line stands for no header or no "at".  The
 * generator is a counter standing in for /dev/idgen.  For every input:
 *
 *   - an answer of a status the service documents, with a body;
 *   - bodies parse (json-c, strict) as one object, but /metrics's: an error
 *     {"error":{"code","message"}} for 4xx/5xx;
 *   - 405 carries Allow, 503 and 429 Retry-After;
 *   - the caller "chat" has a quota of 5 IDs (refilled one per 1000 s):
 *     a 429 or 400 count_over_burst for it, never more than 5 IDs;
 *   - only a 200 to POST /v1/ids:next took IDs from the generator, and
 *     exactly as many as it answered, strictly increasing: no other input
 *     consumes an ID or changes any state;
 *   - a public-ID key (version 7) is loaded: a "public" array answered
 *     beside "ids" holds, in order, each ID's public ID as a string.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "api.h"

#include "fake_minter.h"

static const char *const methods[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS" };

/* The next line of [*p, end) as a new string; NULL past the end. */
static char *line(const uint8_t **p, const uint8_t *end)
{
	const uint8_t *nl;
	char *s;

	if (*p > end)
		return NULL;
	nl = memchr(*p, '\n', end - *p);
	if (!nl)
		nl = end;
	s = strndup((const char *)*p, nl - *p);
	*p = nl + 1;
	return s;
}

static void check_json(const struct api_response *r)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o, *e, *v;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, r->body, r->len);
	if (json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != r->len ||
	    !json_object_is_type(o, json_type_object))
		abort();
	if (r->status >= 400) {
		if (!json_object_object_get_ex(o, "error", &e) ||
		    !json_object_object_get_ex(e, "code", &v) ||
		    !json_object_is_type(v, json_type_string) ||
		    !json_object_object_get_ex(e, "message", &v) ||
		    !json_object_is_type(v, json_type_string))
			abort();
	}
	json_object_put(o);
	json_tokener_free(tok);
}

static void check_ids(const struct api_response *r, uint64_t took,
		      const struct idgen_keyring *kr)
{
	struct json_object *o = json_tokener_parse(r->body), *ids, *pub = NULL;
	uint64_t prev = 0, id, back;
	size_t i, n;

	if (!json_object_object_get_ex(o, "ids", &ids) ||
	    !json_object_is_type(ids, json_type_array))
		abort();
	n = json_object_array_length(ids);
	if (n != took || !n || n > API_MAX_COUNT)
		abort();
	if (json_object_object_get_ex(o, "public", &pub) &&
	    (!json_object_is_type(pub, json_type_array) ||
	     json_object_array_length(pub) != n))
		abort();
	for (i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(ids, i);

		if (!json_object_is_type(s, json_type_string) ||
		    idgen_parse_id(json_object_get_string(s), &id) || id <= prev)
			abort();
		prev = id;
		if (pub) {
			s = json_object_array_get_idx(pub, i);
			if (!json_object_is_type(s, json_type_string) ||
			    idgen_public_decode(kr, json_object_get_string(s), &back) ||
			    back != id)
				abort();
		}
	}
	json_object_put(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct minter minter = { .ops = &fake_ops };
	static char *callers[] = { "order-service", "chat" };
	static struct metrics metrics;
	static struct quota quota;
	static struct idgen_keyring *keyring;
	static struct api api = {
		.minter = &minter,
		.metrics = &metrics,
		.quota = &quota,
		.ready = { .margin_ms = 30000, .check_clock = false, .max_offset_us = 5000 },
	};
	const uint8_t *p = data + 1, *end = data + size;
	struct api_request rq;
	struct api_response r;
	char *path, *type, *at, *body;
	uint64_t before = minted;
	size_t body_len;

	if (!size)
		return 0;
	if (!metrics.issued && metrics_init(&metrics, callers, 2))
		abort();
	if (!keyring) {
		static const uint8_t key[LIBIDGEN_PUBLIC_KEY_BYTES] = { 7, 1, 2, 3 };

		if (idgen_keyring_new(&keyring) || idgen_keyring_add(keyring, 7, key))
			abort();
		api.keyring = keyring;
	}
	if (!quota.bucket) {
		if (quota_init(&quota, callers, 2))
			abort();
		quota_set(&quota, 1, 1, 5);	/* chat: 0.001 IDs/s, bursts of 5 */
	}
	path = line(&p, end);
	type = line(&p, end);
	at = line(&p, end);
	body_len = p < end ? (size_t)(end - p) : 0;
	body = malloc(body_len + 1);
	if (!path || !type || !at || !body)
		goto out;
	memcpy(body, p < end ? p : (const uint8_t *)"", body_len);
	body[body_len] = '\0';

	memset(&rq, 0, sizeof(rq));
	rq.method = methods[data[0] % (sizeof(methods) / sizeof(methods[0]))];
	rq.path = path;
	rq.content_type = *type ? type : NULL;
	rq.at = *at ? at : NULL;
	rq.body = body;
	rq.body_len = body_len > API_MAX_BODY ? API_MAX_BODY : body_len;
	rq.body_too_large = body_len > API_MAX_BODY;
	if (api_handle(&api, &rq, &r))
		abort();	/* only out of memory may fail */
	if (!r.body || !r.len)
		abort();
	switch (r.status) {
	case 200: case 400: case 404: case 405: case 413: case 415: case 429: case 503:
		break;
	default:
		abort();
	}
	if ((r.status == 405) != (r.allow != NULL) ||
	    (r.status == 503 || r.status == 429) != (r.retry_after != 0))
		abort();
	/* A quota's burst is never exceeded: chat's 5 IDs in 1000 s. */
	if (r.status == 200 && !strcmp(path, "/v1/ids:next") &&
	    atomic_load(&metrics.issued[1]) > 5)
		abort();
	if (strcmp(r.content_type, "application/json")) {
		/* /metrics, the one answer in another format */
		if (r.status != 200 || strcmp(path, "/metrics"))
			abort();
	} else {
		check_json(&r);
	}
	if (r.status == 200 && !strcmp(path, "/v1/ids:next"))
		check_ids(&r, minted - before, keyring);
	else if (minted != before)
		abort();	/* a refused request took an ID */
	free(r.body);
out:
	free(path);
	free(type);
	free(at);
	free(body);
	return 0;
}

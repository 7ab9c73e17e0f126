// SPDX-License-Identifier: GPL-2.0
/*
 * etcd_http.c: the transport of idgend's store (etcd_http.h): one POST to
 * one endpoint with libcurl, what its outcome means for a read and for a
 * write, and the turn from endpoint to endpoint.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd.h"
#include "etcd_gateway.h"
#include "etcd_http.h"

void etcd_set_err(struct etcd *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->err, sizeof(e->err), fmt, ap);
	va_end(ap);
}

/* The response's "header", which every answer of etcd has. */
static int check_header(struct etcd *e, const char *ep,
			struct json_object *resp, int64_t *revision)
{
	struct json_object *h;

	if (!json_object_is_type(resp, json_type_object)) {
		etcd_set_err(e, "%s: response is not a JSON object", ep);
		return -EPROTO;
	}
	if (!json_object_object_get_ex(resp, "header", &h) ||
	    !json_object_is_type(h, json_type_object)) {
		etcd_set_err(e, "%s: response has no header", ep);
		return -EPROTO;
	}
	if (!gw_get_i64(h, "revision", revision)) {
		etcd_set_err(e, "%s: header.revision is not an int64 string", ep);
		return -EPROTO;
	}
	return 0;
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
		etcd_set_err(e, "%s: endpoint too long", ep);
		return NOT_SENT;
	}
	idgen_http_body_reset(&e->body, ETCD_BODY_MAX);
	e->curl_err[0] = '\0';
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, req);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(req));
	rc = curl_easy_perform(e->curl);

	if (e->body.nomem) {
		*fatal = -ENOMEM;
		etcd_set_err(e, "%s: out of memory for the response", ep);
		return FATAL;
	}
	if (e->body.too_long) {
		etcd_set_err(e, "%s: response larger than %u bytes", ep,
			ETCD_BODY_MAX);
		return TOO_BIG;
	}
	if (rc != CURLE_OK) {
		const char *msg = e->curl_err[0] ? e->curl_err :
			curl_easy_strerror(rc);

		curl_easy_getinfo(e->curl, CURLINFO_OS_ERRNO, &oserr);
		if (oserr)
			etcd_set_err(e, "%s: %s (%s)", ep, msg, strerror(oserr));
		else
			etcd_set_err(e, "%s: %s", ep, msg);
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
	if (!gw_parse_json(e->body.text, e->body.len, &o, why, sizeof(why)) &&
	    json_object_is_type(o, json_type_object)) {
		struct json_object *m;

		if ((json_object_object_get_ex(o, "message", &m) ||
		     json_object_object_get_ex(o, "error", &m)) &&
		    json_object_is_type(m, json_type_string)) {
			enum outcome out = is_compacted(o) ? COMPACTED :
				NO_ANSWER;

			etcd_set_err(e, "%s: HTTP %ld: %s", ep, status,
				json_object_get_string(m));
			json_object_put(o);
			return out;
		}
	}
	json_object_put(o);
	excerpt(e->body.text, e->body.len, why, 80);
	etcd_set_err(e, "%s: HTTP %ld: %s", ep, status, why);
	return NO_ANSWER;
}

/* Parses e->body as an answer and hands it to parse. */
static int answer(struct etcd *e, const char *ep, etcd_answer_fn parse,
		  void *arg)
{
	struct json_object *resp;
	int64_t revision;
	char why[160];
	int ret;

	ret = gw_parse_json(e->body.text, e->body.len, &resp, why, sizeof(why));
	if (ret) {
		if (ret == -EPROTO)
			etcd_set_err(e, "%s: response is not JSON (%s)", ep, why);
		return ret;
	}
	ret = check_header(e, ep, resp, &revision);
	if (!ret)
		ret = parse(e, ep, resp, revision, arg);
	json_object_put(resp);
	return ret;
}

/* etcd_http.h says what it does; every store operation comes here. */
int etcd_call(struct etcd *e, const char *path, const char *req,
		unsigned int flags, etcd_answer_fn parse, void *arg)
{
	char last[sizeof(e->err)] = "";
	bool sent = false, garbled = false;
	unsigned int i, k;
	int ret;

	if (!e->n_endpoints) {
		etcd_set_err(e, "no etcd endpoints");
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
			if (flags & ETCD_CALL_PAGE) {
				e->current = k;
				return -ESTALE;
			}
			sent = true;
			break;
		case NO_ANSWER:
			sent = true;
			break;
		case TOO_BIG:
			if (flags & ETCD_CALL_SHRINK) {
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
		if (flags & ETCD_CALL_WRITE) {
			e->current = (k + 1) % e->n_endpoints;
			return -ETIMEDOUT;
		}
		memcpy(last, e->err, sizeof(last));
	}
	if (e->n_endpoints == 1)
		memcpy(e->err, last, sizeof(e->err));
	else
		etcd_set_err(e, "all %u endpoints %s (last: %.400s)",
			e->n_endpoints, sent || garbled ? "failed" :
			"unreachable", last);
	return garbled ? -EPROTO : sent ? -ETIMEDOUT : -ECONNREFUSED;
}

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
	idgen_http_body_free(&e->body);
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
	    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, idgen_http_body_write) ||
	    curl_easy_setopt(c, CURLOPT_WRITEDATA, &e->body) ||
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

// SPDX-License-Identifier: GPL-2.0
/*
 * The service's routes (api.h).  Status and error codes:
 *
 *   400 invalid_json        the body is not one strict JSON value, or it
 *                           gives a key twice
 *   400 invalid_request     JSON of the wrong shape: not an object, or a
 *                           field the route does not know (a top-level key
 *                           is its name exactly, written without escapes)
 *   400 invalid_count       count not an integer from 1 to API_MAX_COUNT
 *   400 invalid_caller      caller not a string of 1 to API_MAX_CALLER of
 *                           A-Z a-z 0-9 . _ : -
 *   400 invalid_id          not a canonical decimal ID up to 2^63 - 1
 *   400 invalid_public_id   not a public ID: canonical decimal up to
 *                           2^63 - 1, or v<VERSION>.<that>
 *   400 invalid_public      "public" not true or false
 *   400 no_public_keys      "public": true, and no key is loaded
 *   400 invalid_time        "at" missing, not RFC 3339, or past 2095
 *   400 count_over_burst    count above the caller's burst: it can never
 *                           be answered at once
 *   403 caller_mismatch     caller names another than the connection's
 *                           client certificate proves (mTLS)
 *   404 not_found           no such route; or GET /v1/public/{pub} with
 *                           no key loaded
 *   404 unknown_key_version the public ID's key version is not loaded
 *   405 method_not_allowed  with Allow
 *   413 body_too_large      more than API_MAX_BODY bytes
 *   415 unsupported_media_type  a body that is not application/json
 *   429 quota_exceeded      the caller's quota is used up; with Retry-After
 *   500 internal_error      a minted ID's public ID could not be made
 *   503 no_lease, fence_reached, clock_behind, time_range_exhausted,
 *       device_error        the generator refused; with Retry-After
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>

#include "api.h"
#include "log.h"
#include "next.h"

#define JSON_DEPTH	8	/* the body is one flat object */

static int respond(struct api_response *out, unsigned int status,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int respond(struct api_response *out, unsigned int status,
		   const char *fmt, ...)
{
	va_list ap;
	int len;

	out->status = status;
	va_start(ap, fmt);
	len = vasprintf(&out->body, fmt, ap);
	va_end(ap);
	if (len < 0) {
		out->body = NULL;
		return -ENOMEM;
	}
	out->len = len;
	return 0;
}

/* Messages are fixed text: no request byte is echoed, none needs escaping. */
static int error(struct api_response *out, unsigned int status,
		 const char *code, const char *message)
{
	return respond(out, status, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}",
		       code, message);
}

/* An error answered: 1, or -ENOMEM. */
static int reject(struct api_response *out, unsigned int status,
		  const char *code, const char *message)
{
	return error(out, status, code, message) ?: 1;
}

static int method_not_allowed(struct api_response *out, const char *allow)
{
	out->allow = allow;
	return error(out, 405, "method_not_allowed",
		     allow[0] == 'P' ? "this route takes POST" :
		     "this route takes GET (or HEAD)");
}

static bool is_get(const char *method)
{
	return !strcmp(method, "GET") || !strcmp(method, "HEAD");
}

/* application/json, with parameters or not, in any case. */
static bool is_json(const char *type)
{
	size_t n = strlen("application/json");

	if (!type || strncasecmp(type, "application/json", n))
		return false;
	type += n;
	while (*type == ' ' || *type == '\t')
		type++;
	return !*type || *type == ';';
}

bool api_caller_valid(const char *s, size_t len)
{
	size_t i;

	if (!len || len > API_MAX_CALLER)
		return false;
	for (i = 0; i < len; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._:-", s[i]) || !s[i])
			return false;
	return true;
}

/* The index of the '"' closing the string whose '"' is at body[i], or len. */
static size_t string_end(const char *body, size_t len, size_t i)
{
	for (i++; i < len && body[i] != '"'; i++)
		if (body[i] == '\\')
			i++;
	return i < len ? i : len;
}

/*
 * What json-c's strict mode still lets through: a quote ' outside a
 * string ({'count':2} parses), NaN and Infinity, and a key given twice
 * (the last wins, so a proxy that checked the first is fooled).  Scans
 * the text json-c accepted: false for a ' or a word not true, false or
 * null, else *keys the top-level object's keys counted, duplicates and
 * all, and *escaped_key whether one of them is written with a '\'.
 * json-c ends a key at an escaped NUL ("caller\u0000" is "caller"), so
 * only a key without escapes is the name json-c gives for it.
 */
static bool strict_scan(const char *body, size_t len, size_t *keys,
			bool *escaped_key)
{
	char last = 0;		/* the last structural character */
	unsigned int depth = 0;
	size_t i, end;

	*keys = 0;
	*escaped_key = false;
	for (i = 0; i < len; i++) {
		char ch = body[i];

		if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z') {
			size_t n = 0;

			if ((ch | 0x20) == 'e' && i && strchr("0123456789.", body[i - 1]))
				continue;	/* a number's exponent */
			while (i + n < len && body[i + n] >= 'a' && body[i + n] <= 'z')
				n++;
			if (!((n == 4 && (!strncmp(body + i, "true", 4) ||
					  !strncmp(body + i, "null", 4))) ||
			      (n == 5 && !strncmp(body + i, "false", 5))))
				return false;
			i += n - 1;
			last = 'a';
			continue;
		}
		switch (ch) {
		case '\'':
			return false;
		case '"':
			end = string_end(body, len, i);
			if (depth == 1 && (last == '{' || last == ',')) {
				(*keys)++;
				if (memchr(body + i + 1, '\\', end - i - 1))
					*escaped_key = true;
			}
			i = end;
			break;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			depth--;
			break;
		}
		if (!strchr(" \t\r\n", ch))
			last = ch;
	}
	return true;
}

/*
 * Whether the top-level object's "count" is an integer of more than 19
 * digits (not starting with 0), so beyond any int64_t.  json-c disagrees with itself there:
 * 0.16 (Debian 12) takes 2^64 and gives INT64_MAX, which the range check
 * refuses as invalid_count, while 0.18 (Debian 13) in strict mode fails
 * the whole parse.  Looked for before parsing, so that both answer the
 * valid JSON {"count": 18446744073709551616} the same way.
 */
static bool count_beyond_int64(const char *body, size_t len)
{
	static const char key[] = "\"count\"";
	unsigned int depth = 0;
	size_t i, j, digits;

	for (i = 0; i < len; i++) {
		char ch = body[i];

		if (ch == '{' || ch == '[') {
			depth++;
			continue;
		}
		if (ch == '}' || ch == ']') {
			depth--;
			continue;
		}
		if (ch != '"')
			continue;
		if (depth != 1 || len - i < sizeof(key) - 1 ||
		    memcmp(body + i, key, sizeof(key) - 1)) {
			i = string_end(body, len, i);
			continue;
		}
		/* "count", blanks, ':', blanks, an optional '-', digits. */
		j = i + sizeof(key) - 1;
		while (j < len && strchr(" \t\r\n", body[j]))
			j++;
		if (j == len || body[j] != ':') {
			i = string_end(body, len, i);	/* a value that reads "count" */
			continue;
		}
		for (j++; j < len && strchr(" \t\r\n", body[j]); j++)
			;
		if (j < len && body[j] == '-')
			j++;
		if (j < len && body[j] == '0') {
			i = j;		/* JSON has no leading zeros: json-c's */
			continue;
		}
		for (digits = 0; j < len && body[j] >= '0' && body[j] <= '9'; j++)
			digits++;
		if (digits > 19)
			return true;
		i = j - 1;
	}
	return false;
}

/*
 * The body of POST /v1/ids:next into ask (its caller's name in caller,
 * as given: next.c checks it): 0, or an error answered (a positive
 * return).  The JSON's shape and types are checked here, the values by
 * the pipeline (next.h).
 */
static int parse_next(const struct api_request *rq, struct api_response *out,
		      struct next_ask *ask, char caller[API_MAX_CALLER + 1])
{
	const struct next_status_text *count_text = next_text(NEXT_INVALID_COUNT);
	struct json_tokener *tok;
	struct json_object *obj;
	enum json_tokener_error jerr;
	size_t end, i, keys;
	bool escaped_key;
	int ret = 1;

	ask->count = 1;
	ask->caller = NULL;
	ask->public = false;
	if (!rq->body_len)
		return 0;		/* no body: every default */
	if (!is_json(rq->content_type))
		return reject(out, 415, "unsupported_media_type",
			     "the body must be application/json");
	if (memchr(rq->body, '\0', rq->body_len))
		return reject(out, 400, "invalid_json", "the body is not JSON");
	if (count_beyond_int64(rq->body, rq->body_len))
		return reject(out, count_text->http, count_text->code, count_text->message);
	tok = json_tokener_new_ex(JSON_DEPTH);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	/* With its NUL: a number at the very end ends there ("5" is 5). */
	obj = json_tokener_parse_ex(tok, rq->body, rq->body_len + 1);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	/* One value, then blanks only: "{} {}" or "{}x" is no body of ours. */
	for (i = end; jerr == json_tokener_success && i < rq->body_len; i++)
		if (!strchr(" \t\r\n", rq->body[i]))
			jerr = json_tokener_error_parse_unexpected;
	if (jerr != json_tokener_success) {
		json_object_put(obj);
		return reject(out, 400, "invalid_json", "the body is not one JSON value");
	}
	if (!strict_scan(rq->body, end, &keys, &escaped_key)) {
		ret = reject(out, 400, "invalid_json", "the body is not strict JSON: "
			    "strings and keys take double quotes, no NaN or Infinity");
		goto out;
	}
	if (!json_object_is_type(obj, json_type_object)) {
		ret = reject(out, 400, "invalid_request",
			    "the body must be a JSON object, e.g. {\\\"count\\\": 3}");
		goto out;
	}
	if (keys != (size_t)json_object_object_length(obj)) {
		ret = reject(out, 400, "invalid_json", "a key is given twice");
		goto out;
	}
	json_object_object_foreach(obj, key, val) {
		/* Written with an escape, a key is none of ours (the else). */
		const char *name = escaped_key ? "" : key;

		if (!strcmp(name, "count")) {
			if (!json_object_is_type(val, json_type_int)) {
				ret = reject(out, count_text->http, count_text->code,
					    "count must be an integer (not a string, "
					    "a fraction or an exponent)");
				goto out;
			}
			/*
			 * Past INT64_MAX json-c 0.16 gives INT64_MAX, and a
			 * negative count is past API_MAX_COUNT as a uint64_t:
			 * both out of range for the pipeline's check.
			 */
			ask->count = (uint64_t)json_object_get_int64(val);
		} else if (!strcmp(name, "caller")) {
			if (!json_object_is_type(val, json_type_string)) {
				const struct next_status_text *t =
					next_text(NEXT_INVALID_CALLER);

				ret = reject(out, t->http, t->code, t->message);
				goto out;
			}
			/* Past API_MAX_CALLER bytes the length alone refuses it. */
			ask->caller_len = json_object_get_string_len(val);
			memcpy(caller, json_object_get_string(val),
			       ask->caller_len < API_MAX_CALLER ? ask->caller_len :
			       API_MAX_CALLER);
			ask->caller = caller;
		} else if (!strcmp(name, "public")) {
			if (!json_object_is_type(val, json_type_boolean)) {
				ret = reject(out, 400, "invalid_public",
					    "public must be true or false (a JSON boolean)");
				goto out;
			}
			ask->public = json_object_get_boolean(val);
		} else {
			ret = reject(out, 400, "invalid_request",
				    "unknown field: the body takes count, caller and public only");
			goto out;
		}
	}
	ret = 0;
out:
	json_object_put(obj);
	return ret;
}

/*
 * ","public":["P1","P2",...]" at p, the IDs' public IDs in their order:
 * its length, or a negative errno.  An ID from the generator is at most
 * 2^63 - 1 and the keyring is not empty, so no encode is expected to fail.
 */
static ssize_t public_array(const struct idgen_keyring *kr, const uint64_t *ids,
			    size_t count, char *p)
{
	char *start = p;
	size_t i;
	int len;

	p += sprintf(p, ",\"public\":[");
	for (i = 0; i < count; i++) {
		if (i)
			*p++ = ',';
		*p++ = '"';
		len = idgen_public_encode(kr, ids[i], p);
		if (len <= 0)
			return len < 0 ? len : -EINVAL;
		p += len;
		*p++ = '"';
	}
	*p++ = ']';
	return p - start;
}

/* A refusal of n, as its status says it: 0, or -ENOMEM. */
static int next_refused(const struct next *n, struct api_response *out)
{
	const struct next_status_text *t = next_text(n->status);

	if (n->status == NEXT_NO_MEMORY || n->status == NEXT_CLIENT_GONE)
		return -ENOMEM;		/* no answer: the connection is closed */
	/* Seconds, rounded up: a client that waits as told is let through. */
	out->retry_after = (n->retry_after_ms + 999) / 1000;
	if (n->status == NEXT_COUNT_OVER_BURST)
		return respond(out, t->http, "{\"error\":{\"code\":\"%s\",\"message\":"
			       "\"%s (a burst of %" PRIu64 " IDs)\"}}", t->code,
			       t->message, n->burst);
	return error(out, t->http, t->code, t->message);
}

/*
 * The answer to n, its status final: 0, or -ENOMEM when none could be
 * made (the connection is then closed).
 */
static int next_answer(const struct next *n, struct api_response *out)
{
	struct api *api = n->api;
	const uint64_t *ids = n->job.ids;
	size_t count = n->job.count, i, size;
	struct idgen_decoded dec;
	char *p;

	if (n->status != NEXT_OK)
		return next_refused(n, out);
	/*
	 * "{"ids":[" + count * ""id"," + "],"layout_version":N}", and
	 * ","public":[" + count * ""pub"," with public.
	 */
	size = 64 + count * (LIBIDGEN_ID_STRLEN + 3) +
	       (n->public ? 16 + count * (LIBIDGEN_PUBLIC_STRLEN + 3) : 0);
	out->body = malloc(size);
	if (!out->body)
		return -ENOMEM;
	p = out->body;
	p += sprintf(p, "{\"ids\":[");
	for (i = 0; i < count; i++) {
		*p++ = i ? ',' : '"';
		if (i)
			*p++ = '"';
		p += idgen_format_id(ids[i], p);
		*p++ = '"';
	}
	*p++ = ']';
	if (n->public) {
		ssize_t len = public_array(api->keyring, ids, count, p);

		if (len < 0) {
			free(out->body);
			out->body = NULL;
			log_err("public ID of a minted ID: %s", strerror((int)-len));
			return error(out, 500, "internal_error", "a public ID could not "
				     "be made");
		}
		p += len;
	}
	idgen_decode(ids[0], api->layouts, &dec);
	p += sprintf(p, ",\"layout_version\":%u}", dec.version);
	out->len = p - out->body;
	out->status = 200;
	return 0;
}

/* A POST /v1/ids:next for the lane. */
struct api_deferred {
	struct next n;			/* first: the lane's done finds d by it */
	struct api_response out;	/* made by deferred_done() */
	void (*resume)(void *arg);
	void *arg;
};

/* On the lane's thread, n's IDs minted: its answer, then the server's turn. */
static void deferred_done(struct next *n)
{
	struct api_deferred *d = (struct api_deferred *)n;

	d->out.content_type = "application/json";
	d->out.route = ROUTE_NEXT;
	/* Out of memory, the body stays NULL: the connection is closed. */
	next_answer(n, &d->out);
	free(n->job.ids);
	n->job.ids = NULL;
	d->resume(d->arg);
}

void api_defer(struct api_deferred *d, int fd, void (*resume)(void *arg), void *arg)
{
	d->resume = resume;
	d->arg = arg;
	d->n.job.fd = fd;
	next_submit(&d->n, deferred_done);
}

int api_deferred_answer(struct api_deferred *d, struct api_response *out)
{
	*out = d->out;
	if (out->body && out->status == 200)
		next_end_queued(&d->n, &out->answer);
	else
		next_end(&d->n, false);
	free(d);
	return out->body ? 0 : -ENOMEM;
}

void api_deferred_drop(struct api_deferred *d)
{
	free(d->out.body);
	next_end(&d->n, false);
	free(d);
}

void api_deferred_cancel(struct api_deferred *d)
{
	next_end(&d->n, false);
	free(d);
}

static int ids_next(struct api *api, const struct api_request *rq,
		    struct api_response *out)
{
	struct next_ask ask = { .fd = -1 };
	char caller[API_MAX_CALLER + 1];
	struct api_deferred *d;
	struct next n;
	int ret;

	if (strcmp(rq->method, "POST"))
		return method_not_allowed(out, "POST");
	if (rq->body_too_large)
		return error(out, 413, "body_too_large", "the body exceeds 4096 bytes");
	ret = parse_next(rq, out, &ask, caller);
	if (ret)
		return ret < 0 ? ret : 0;
	ask.authenticated = rq->authenticated;
	if (next_start(api, &ask, &n) == NEXT_PENDING) {
		/* Set aside by the server, then api_defer() (api.h). */
		d = malloc(sizeof(*d));
		if (!d) {
			next_end(&n, false);
			return -ENOMEM;
		}
		memset(d, 0, sizeof(*d));
		d->n = n;
		out->deferred = d;
		return 0;
	}
	ret = next_answer(&n, out);
	if (!ret && out->status == 200)
		next_end_queued(&n, &out->answer);
	else
		next_end(&n, false);
	return ret;
}

/* 200 with the decoded ID, the one body of GET /v1/ids/{id}. */
static int id_answer(struct api *api, uint64_t id, struct api_response *out)
{
	struct idgen_decoded d;
	char obj[256];
	int len;

	idgen_decode(id, api->layouts, &d);
	len = idgen_json_decoded(obj, sizeof(obj), &d);
	if (len < 0 || (size_t)len >= sizeof(obj))
		return error(out, 400, "invalid_id", "the ID's time cannot be written");
	return respond(out, 200, "%s", obj);
}

static int ids_get(struct api *api, const struct api_request *rq,
		   const char *text, struct api_response *out)
{
	uint64_t id;

	if (!is_get(rq->method))
		return method_not_allowed(out, "GET, HEAD");
	switch (idgen_parse_id(text, &id)) {
	case 0:
		break;
	case -ERANGE:
		return error(out, 400, "invalid_id", "the ID is above 2^63 - 1, "
			     "the largest ID");
	default:
		return error(out, 400, "invalid_id", "not a decimal ID: digits only, "
			     "no sign, blanks or leading zeros");
	}
	return id_answer(api, id, out);
}

/* GET /v1/public/{pub}: the ID it stands for, answered as /v1/ids/{id}. */
static int public_get(struct api *api, const struct api_request *rq,
		      const char *text, struct api_response *out)
{
	uint64_t id;

	if (!is_get(rq->method))
		return method_not_allowed(out, "GET, HEAD");
	if (!api->keyring)
		return error(out, 404, "not_found", "no public-ID keys configured "
			     "(public_keys): public IDs are off");
	switch (idgen_public_decode(api->keyring, text, &id)) {
	case 0:
		break;
	case -EKEYREJECTED:
		return error(out, 404, "unknown_key_version", "the public ID's key "
			     "version is not loaded");
	case -ERANGE:
		return error(out, 400, "invalid_public_id", "the public ID is above "
			     "2^63 - 1");
	default:
		return error(out, 400, "invalid_public_id", "not a public ID: decimal "
			     "digits (no sign, blanks or leading zeros), or "
			     "v<VERSION>.<decimal>");
	}
	return id_answer(api, id, out);
}

static int ids_min(const struct api_request *rq, struct api_response *out)
{
	char text[LIBIDGEN_ID_STRLEN];
	int64_t unix_ms;
	uint64_t id;

	if (!is_get(rq->method))
		return method_not_allowed(out, "GET, HEAD");
	if (!rq->at || !*rq->at)
		return error(out, 400, "invalid_time", "give the time as ?at=<RFC 3339>");
	if (idgen_parse_time(rq->at, &unix_ms))
		return error(out, 400, "invalid_time", "at is not an RFC 3339 time, "
			     "e.g. 2026-03-15T00:00:00Z (an offset's + written %2B)");
	if (idgen_min_id_at(unix_ms, &id))
		return error(out, 400, "invalid_time", "at lies after the last "
			     "millisecond an ID can carry, 2095-09-07T15:47:35.551Z");
	idgen_format_id(id, text);
	return respond(out, 200, "{\"id\":\"%s\"}", text);
}

static int readyz(struct api *api, const struct api_request *rq,
		  struct api_response *out)
{
	char buf[2048];
	size_t len;
	bool ready;

	if (!is_get(rq->method))
		return method_not_allowed(out, "GET, HEAD");
	ready = readiness_check(&api->ready, api->minter, buf, sizeof(buf), &len);
	return respond(out, ready ? 200 : 503, "%.*s", (int)len, buf);
}

static int metrics(struct api *api, const struct api_request *rq,
		   struct api_response *out)
{
	if (!is_get(rq->method))
		return method_not_allowed(out, "GET, HEAD");
	if (!api->metrics)
		return error(out, 404, "not_found", "no metrics in this build");
	if (metrics_render(api->metrics, api->minter, &api->ready, api->layouts,
			   &out->body, &out->len))
		return -ENOMEM;
	out->status = 200;
	out->content_type = "text/plain; version=0.0.4; charset=utf-8";
	return 0;
}

int api_handle(struct api *api, const struct api_request *rq,
	       struct api_response *out)
{
	static const char ids_prefix[] = "/v1/ids/";
	static const char public_prefix[] = "/v1/public/";
	const char *path = rq->path;

	memset(out, 0, sizeof(*out));
	out->content_type = "application/json";
	if (!strcmp(path, "/v1/ids:next")) {
		out->route = ROUTE_NEXT;
		return ids_next(api, rq, out);
	}
	if (!strcmp(path, "/v1/ids:min")) {
		out->route = ROUTE_MIN;
		return ids_min(rq, out);
	}
	if (!strncmp(path, ids_prefix, sizeof(ids_prefix) - 1)) {
		out->route = ROUTE_ID;
		return ids_get(api, rq, path + sizeof(ids_prefix) - 1, out);
	}
	if (!strncmp(path, public_prefix, sizeof(public_prefix) - 1)) {
		out->route = ROUTE_PUBLIC;
		return public_get(api, rq, path + sizeof(public_prefix) - 1, out);
	}
	if (!strcmp(path, "/livez")) {
		out->route = ROUTE_LIVEZ;
		return is_get(rq->method) ? respond(out, 200, "{\"status\":\"ok\"}") :
		       method_not_allowed(out, "GET, HEAD");
	}
	if (!strcmp(path, "/readyz")) {
		out->route = ROUTE_READYZ;
		return readyz(api, rq, out);
	}
	if (!strcmp(path, "/metrics")) {
		out->route = ROUTE_METRICS;
		return metrics(api, rq, out);
	}
	out->route = ROUTE_OTHER;
	return error(out, 404, "not_found", "no such route: see idgen-httpd(8)");
}

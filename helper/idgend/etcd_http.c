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
#include <strings.h>

#include "etcd.h"
#include "etcd_gateway.h"
#include "etcd_http.h"
#include "log.h"

static int answer(struct etcd *e, const char *ep, etcd_answer_fn parse,
		  void *arg);

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
	REFUSED,	/* etcd refused the request (auth, permission): every
			 * member would; nothing applied */
	TLS_REFUSED,	/* the TLS handshake failed: this endpoint's; nothing
			 * applied */
	REAUTH,		/* the token is invalid or stale: authenticate and
			 * send it again; nothing applied */
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

/*
 * Whether a transfer that failed with rc failed in TLS: a handshake that
 * did not complete, or, with TLS 1.3, the member's alert on the first read
 * after it (a server checks the client's certificate after the client
 * finished its handshake).  Either way etcd never saw the request.
 */
static bool tls_failed(CURLcode rc, const char *msg)
{
	switch (rc) {
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
		return true;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
		return strstr(msg, "SSL") && strstr(msg, " alert ");
	default:
		return false;
	}
}

/* What a TLS failure's message means for the operator, or "". */
static const char *tls_hint(const char *msg)
{
	if (strstr(msg, "alert certificate required"))
		return " (the member requires a client certificate: cert_file, key_file)";
	if (strstr(msg, "alert bad certificate") || strstr(msg, "alert unknown ca") ||
	    strstr(msg, "alert certificate unknown"))
		return " (the member refused this host's client certificate: is it "
		       "signed by a CA in the member's --trusted-ca-file?)";
	if (strstr(msg, "alert certificate expired"))
		return " (the member says this host's client certificate expired)";
	if (strstr(msg, "SSL certificate problem"))
		return " (the member's certificate does not verify against ca_file, or "
		       "the system's CAs without one)";
	if (strstr(msg, "wrong version number"))
		return " (is the member serving TLS on this port?)";
	return "";
}

/*
 * etcd's own refusals, from the gateway's JSON error: auth and
 * permission, which the gRPC codes alone do not tell apart from others.
 * What the gateway of etcd 3.4 and 3.5 answers (code and HTTP status
 * from the gRPC code): an invalid token, code 16 (Unauthenticated), 401;
 * a stale one after a user or role change, "revision of auth store is
 * old", code 3, 400; no token where one is needed, "user name is empty",
 * code 3, 400; a wrong password, "authentication failed", code 3, 400;
 * a key the role does not cover, "permission denied", code 7, 403.
 */
static enum outcome auth_error(struct etcd *e, const char *ep, long status,
			       int64_t code, const char *msg)
{
	const char *user = e->creds ? e->creds->user : NULL;

	if (code == 16 || strstr(msg, "invalid auth token") ||
	    strstr(msg, "revision of auth store is old")) {
		etcd_set_err(e, "%s: HTTP %ld: %s", ep, status, msg);
		return REAUTH;
	}
	if (strstr(msg, "user name is empty")) {
		if (user) {
			etcd_set_err(e, "%s: HTTP %ld: %s", ep, status, msg);
			return REAUTH;
		}
		etcd_set_err(e, "%s: etcd requires authentication (%s): set [etcd] "
			     "user and password_file", ep, msg);
		return REFUSED;
	}
	if (strstr(msg, "authentication failed")) {
		etcd_set_err(e, "%s: etcd refused user '%s': %s (password_file %s)",
			     ep, user ? user : "", msg,
			     e->creds && e->creds->password.path ?
			     e->creds->password.path : "none");
		return REFUSED;
	}
	if (code == 7 || strstr(msg, "permission denied")) {
		etcd_set_err(e, "%s: etcd: %s: user '%s' has no read and write "
			     "permission on the keys under %s/ (etcdctl role "
			     "grant-permission ROLE --prefix=true readwrite %s/)",
			     ep, msg, user ? user : "", e->prefix, e->prefix);
		return REFUSED;
	}
	return NO_ANSWER;
}

/*
 * One POST to one endpoint with those headers; what went wrong is in
 * e->err.
 */
static enum outcome perform(struct etcd *e, const char *ep, const char *path,
			    const char *req, struct curl_slist *headers,
			    int *fatal)
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
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, req);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(req));
	curl_easy_setopt(e->curl, CURLOPT_FRESH_CONNECT, e->fresh ? 1L : 0L);
	rc = curl_easy_perform(e->curl);
	e->fresh = false;

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

		if (tls_failed(rc, msg)) {
			etcd_set_err(e, "%s: TLS: %s%s", ep, msg, tls_hint(msg));
			return TLS_REFUSED;
		}
		curl_easy_getinfo(e->curl, CURLINFO_OS_ERRNO, &oserr);
		/*
		 * With TLS 1.3 a member that refuses our certificate may
		 * just reset the connection it finished a handshake on, no
		 * alert read (a reset on a connection new in this transfer):
		 * say what that most likely means.  Whether the
		 * request was sent decides as for any reset, below.  Over
		 * HTTP/2 (ALPN h2, which etcd offers) curl reports the
		 * reset as the framing layer's error, CURLE_HTTP2.
		 */
		if ((rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR || rc == CURLE_HTTP2) &&
		    oserr == ECONNRESET && e->creds && e->creds->cert.path) {
			long conns = 0;

			curl_easy_getinfo(e->curl, CURLINFO_NUM_CONNECTS, &conns);
			if (conns > 0 && !strncasecmp(ep, "https://", 8)) {
				etcd_set_err(e, "%s: TLS: %s (connection reset just after "
					     "the TLS handshake: the member most likely "
					     "refused this host's client certificate: is it "
					     "signed by a CA in the member's "
					     "--trusted-ca-file?)", ep, msg);
				if (curl_easy_getinfo(e->curl, CURLINFO_REQUEST_SIZE, &sent) ||
				    sent > 0)
					return NO_ANSWER;
				return TLS_REFUSED;
			}
		}
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
		struct json_object *m, *c;

		if ((json_object_object_get_ex(o, "message", &m) ||
		     json_object_object_get_ex(o, "error", &m)) &&
		    json_object_is_type(m, json_type_string)) {
			int64_t code = json_object_object_get_ex(o, "code", &c) &&
				json_object_is_type(c, json_type_int) ?
				json_object_get_int64(c) : -1;
			enum outcome out = is_compacted(o) ? COMPACTED :
				auth_error(e, ep, status, code,
					   json_object_get_string(m));

			if (out == NO_ANSWER || out == COMPACTED)
				etcd_set_err(e, "%s: HTTP %ld: %s", ep, status,
					     json_object_get_string(m));
			json_object_put(o);
			return out;
		}
	}
	json_object_put(o);
	/*
	 * etcd 3.4.23 and later refuse, in plain text, a gateway request
	 * over TLS whose client certificate has a common name: the gateway
	 * would lose it (it talks to etcd's gRPC as itself), so the
	 * identity would not be the one the certificate claims.
	 */
	if (status == 400 && e->body.len > 10 &&
	    strstr(e->body.text, "CommonName of client")) {
		etcd_set_err(e, "%s: etcd refuses gateway requests from a client "
			     "certificate with a common name (CN) in its subject: "
			     "issue cert_file without one; the etcd user "
			     "(user, password_file) is the identity", ep);
		return REFUSED;
	}
	excerpt(e->body.text, e->body.len, why, 80);
	etcd_set_err(e, "%s: HTTP %ld: %s", ep, status, why);
	return NO_ANSWER;
}

/* JSON's string escapes of s, into buf (of at least 6 * len + 1 bytes). */
static size_t json_escape(char *buf, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = c;
		} else if (c < 0x20 || c == 0x7f) {
			memcpy(buf + n, "\\u00", 4);
			buf[n + 4] = hex[c >> 4];
			buf[n + 5] = hex[c & 15];
			n += 6;
		} else {
			buf[n++] = c;
		}
	}
	buf[n] = '\0';
	return n;
}

static void drop_token(struct etcd *e)
{
	if (e->token)
		explicit_bzero(e->token, strlen(e->token));
	free(e->token);
	e->token = NULL;
	curl_slist_free_all(e->auth_headers);
	e->auth_headers = NULL;
}

/* The token of an answer to /v3/auth/authenticate, in e->token. */
static int take_token(struct etcd *e, const char *ep, struct json_object *resp,
		      int64_t revision, void *arg)
{
	struct curl_slist *h = NULL, *n;
	struct json_object *t;
	const char *tok;
	char *line;
	size_t i;

	(void)revision;
	(void)arg;
	if (!json_object_object_get_ex(resp, "token", &t) ||
	    !json_object_is_type(t, json_type_string)) {
		etcd_set_err(e, "%s: authenticate: no token in the answer", ep);
		return -EPROTO;
	}
	tok = json_object_get_string(t);
	/* It goes into a header line as it is. */
	for (i = 0; tok[i]; i++)
		if (tok[i] <= 0x20 || tok[i] >= 0x7f)
			break;
	if (!i || tok[i] || i > 4096) {
		etcd_set_err(e, "%s: authenticate: a token that is no header value", ep);
		return -EPROTO;
	}
	if (asprintf(&line, "Authorization: %s", tok) < 0)
		return -ENOMEM;
	h = curl_slist_append(NULL, "Content-Type: application/json");
	n = h ? curl_slist_append(h, "Expect:") : NULL;
	n = n ? curl_slist_append(n, line) : NULL;
	explicit_bzero(line, strlen(line));
	free(line);
	if (!n) {
		curl_slist_free_all(h);
		return -ENOMEM;
	}
	drop_token(e);
	e->token = strdup(tok);
	if (!e->token) {
		curl_slist_free_all(h);
		return -ENOMEM;
	}
	e->auth_headers = h;
	return 0;
}

/*
 * POST /v3/auth/authenticate {"name", "password"} to ep: ANSWERED with
 * e->token (or e->auth_off: etcd has no authentication enabled), or why
 * not.  The request, which holds the password, lives in memory of its
 * own and is cleared at once.
 */
static enum outcome authenticate(struct etcd *e, const char *ep, int *fatal)
{
	const struct etcd_creds *c = e->creds;
	size_t ulen = strlen(c->user), size;
	enum outcome out;
	char *req;
	size_t n;
	int ret;

	size = 6 * (ulen + c->password.len) + sizeof("{\"name\":\"\",\"password\":\"\"}");
	req = secret_alloc(size);
	if (!req) {
		*fatal = -ENOMEM;
		etcd_set_err(e, "out of memory");
		return FATAL;
	}
	n = 0;
	memcpy(req, "{\"name\":\"", 9);
	n = 9;
	n += json_escape(req + n, c->user, ulen);
	memcpy(req + n, "\",\"password\":\"", 14);
	n += 14;
	n += json_escape(req + n, c->password.data, c->password.len);
	memcpy(req + n, "\"}", 3);
	out = perform(e, ep, "/v3/auth/authenticate", req, e->headers, fatal);
	secret_free(req, size);

	if (out == ANSWERED) {
		ret = answer(e, ep, take_token, NULL);
		if (ret == -ENOMEM) {
			*fatal = ret;
			etcd_set_err(e, "out of memory");
			return FATAL;
		}
		if (ret) {
			out = NO_ANSWER;
		} else {
			e->auth_off = false;
		}
		idgen_http_body_reset(&e->body, ETCD_BODY_MAX);
		return out;
	}
	if (out == NO_ANSWER && strstr(e->err, "authentication is not enabled")) {
		if (!e->auth_off)
			log_warn("%s: etcd has no authentication enabled; sending "
				 "requests without a token (user '%s' is configured)",
				 ep, c->user);
		e->auth_off = true;
		return ANSWERED;
	}
	if (out == REAUTH) {
		/* No token can be invalid here: etcd refuses the user. */
		out = REFUSED;
	}
	return out;
}

/* New files in force since curl was given them: give it those. */
static void creds_sync(struct etcd *e, bool force)
{
	struct etcd_creds *c = e->creds;
	struct curl_blob b = { .flags = CURL_BLOB_COPY };

	etcd_creds_refresh(c, force);
	if (c->password_gen != e->password_gen) {
		/* Authenticate with the new password before the next request. */
		drop_token(e);
		e->auth_off = false;
		e->password_gen = c->password_gen;
	}
	if (c->tls_gen == e->tls_gen)
		return;
	if (c->ca.data) {
		b.data = c->ca.data;
		b.len = c->ca.len;
		curl_easy_setopt(e->curl, CURLOPT_CAINFO_BLOB, &b);
	}
	if (c->cert.data) {
		b.data = c->cert.data;
		b.len = c->cert.len;
		curl_easy_setopt(e->curl, CURLOPT_SSLCERT_BLOB, &b);
		b.data = c->key.data;
		b.len = c->key.len;
		curl_easy_setopt(e->curl, CURLOPT_SSLKEY_BLOB, &b);
	}
	e->tls_gen = c->tls_gen;
	e->fresh = true;
}

/*
 * One request to one endpoint, authenticated first when there is a user
 * and no token yet; sent once more, after authenticating anew, when etcd
 * calls the token invalid or stale (a member restarted: simple tokens
 * live in one member's memory; a TTL passed; a user or role changed).
 */
static enum outcome post(struct etcd *e, const char *ep, const char *path,
			 const char *req, int *fatal)
{
	enum outcome out;
	int tries;

	if (e->creds)
		creds_sync(e, false);
	for (tries = 0;; tries++) {
		if (e->creds && e->creds->user && !e->token && !e->auth_off) {
			out = authenticate(e, ep, fatal);
			/* The request itself was not sent. */
			if (out == NO_ANSWER || out == TOO_BIG || out == COMPACTED)
				out = NOT_SENT;
			if (out != ANSWERED)
				return out;
		}
		out = perform(e, ep, path, req, e->token ? e->auth_headers :
			      e->headers, fatal);
		if (out != REAUTH)
			return out;
		if (tries || !e->creds || !e->creds->user)
			return REFUSED;		/* e->err says why */
		log_info("%s; authenticating again", e->err);
		drop_token(e);
		e->auth_off = false;
	}
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
	char last[sizeof(e->err)] = "", tls[sizeof(e->err)] = "";
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
		case TLS_REFUSED:
			memcpy(tls, e->err, sizeof(tls));
			memcpy(last, e->err, sizeof(last));
			continue;
		case REFUSED:
		case REAUTH:
			e->current = k;
			return -EACCES;
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
	/* A TLS failure is what the operator has to mend: say that one. */
	if (*tls && !garbled)
		memcpy(last, tls, sizeof(last));
	if (e->n_endpoints == 1)
		memcpy(e->err, last, sizeof(e->err));
	else
		etcd_set_err(e, "all %u endpoints %s (%s: %.400s)",
			e->n_endpoints, sent || garbled || *tls ? "failed" :
			"unreachable", *tls && !garbled ? "TLS" : "last", last);
	return garbled ? -EPROTO : *tls ? -EACCES : sent ? -ETIMEDOUT :
		-ECONNREFUSED;
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
	drop_token(e);
	if (e->creds) {
		etcd_creds_free(e->creds);
		free(e->creds);
	}
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
	    /* https:// endpoints: the member's name or IP verified, always. */
	    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L) ||
	    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L) ||
	    curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2) ||
#if LIBCURL_VERSION_NUM >= 0x075700
	    /* The CAs read again for each new connection, as the files are. */
	    curl_easy_setopt(c, CURLOPT_CA_CACHE_TIMEOUT, 0L) ||
#endif
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

int etcd_secure(struct etcd *e, const struct etcd_security *s, char *err,
		size_t errlen)
{
	struct etcd_creds *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (etcd_creds_load(c, s, err, errlen)) {
		free(c);
		return -1;
	}
	/* ca_file: that CA alone, not the system's besides. */
	if (c->ca.path &&
	    (curl_easy_setopt(e->curl, CURLOPT_CAINFO, NULL) ||
	     curl_easy_setopt(e->curl, CURLOPT_CAPATH, NULL))) {
		snprintf(err, errlen, "libcurl takes no ca_file");
		etcd_creds_free(c);
		free(c);
		return -1;
	}
	if (c->cert.path &&
	    (curl_easy_setopt(e->curl, CURLOPT_SSLCERTTYPE, "PEM") ||
	     curl_easy_setopt(e->curl, CURLOPT_SSLKEYTYPE, "PEM"))) {
		snprintf(err, errlen, "libcurl takes no client certificate");
		etcd_creds_free(c);
		free(c);
		return -1;
	}
	e->creds = c;
	e->tls_gen = c->tls_gen - 1;	/* creds_sync() gives them to curl */
	e->password_gen = c->password_gen;
	creds_sync(e, false);
	return 0;
}

void etcd_reload(struct etcd *e)
{
	e->fresh = true;
	if (e->creds)
		creds_sync(e, true);
}

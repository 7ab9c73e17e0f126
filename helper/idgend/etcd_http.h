/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The transport layer of idgend's store: a struct etcd holds the
 * endpoints and one libcurl handle, and etcd_call() POSTs a request to
 * them in turn (etcd.h says the rule) and hands the first answer that is
 * etcd's to a parser.  What a request says is etcd_gateway.h's, what it
 * means etcd.c's.
 */
#ifndef IDGEND_ETCD_HTTP_H
#define IDGEND_ETCD_HTTP_H

#include <stdint.h>

#include <curl/curl.h>
#include <json.h>

#include "etcd_creds.h"
#include "http_body.h"

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

	struct idgen_http_body body;	/* the response */

	/*
	 * TLS files and etcd's authentication (etcd_secure()); creds NULL:
	 * neither.  token: etcd's for the user, sent as the raw
	 * Authorization header of every request (auth_headers); NULL until
	 * authenticated, and after etcd called it invalid or stale.
	 */
	struct etcd_creds *creds;
	unsigned int tls_gen, password_gen;	/* what curl was given */
	bool fresh;			/* the next request on a new connection */
	char *token;
	struct curl_slist *auth_headers;
	bool auth_off;			/* etcd said auth is not enabled */

	char curl_err[CURL_ERROR_SIZE];
	char err[512];
};

/* What went wrong, for store_ops.error(): e->err. */
void etcd_set_err(struct etcd *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * What an operation reads from an answer that is JSON with a header:
 * fills arg and returns 0, or returns -EPROTO (e->err saying why) when the
 * answer is not one to its request, or -ENOMEM.  It may be called once per
 * endpoint, so it must not leave anything behind on failure.
 */
typedef int (*etcd_answer_fn)(struct etcd *e, const char *ep,
			      struct json_object *resp, int64_t revision,
			      void *arg);

/* etcd_call()'s flags. */
#define ETCD_CALL_WRITE		0x1	/* not idempotent: never sent twice */
#define ETCD_CALL_PAGE		0x2	/* a page of a listing at a fixed
					 * revision: a compacted revision is
					 * -ESTALE */
#define ETCD_CALL_SHRINK	0x4	/* an answer too big is -EMSGSIZE, for
					 * the caller to ask for less */

/*
 * Sends req to path on each endpoint in turn, from the last one that
 * answered, until one gives an answer parse accepts.  A read goes on after
 * any failure, a garbled answer included: that endpoint is broken, not
 * etcd.  A write stops at the first endpoint that may have received it
 * (sending it again elsewhere could apply it twice; only a re-read can
 * tell) and is -ETIMEDOUT; the next call then starts at the next
 * endpoint, so that the re-read does not ask the one that failed.
 *
 * A request etcd answers with an invalid or stale token is sent again
 * once, after authenticating anew; one that etcd refuses (a wrong
 * password, no permission on the prefix, a client certificate etcd's
 * gateway does not take) is -EACCES at once, nothing applied: every member
 * would say the same.  A TLS handshake that fails (the member's
 * certificate does not verify, or the member refuses ours) is that
 * endpoint's failure, and the next one is tried.
 *
 * When every endpoint failed: -EPROTO if one of them answered garbage,
 * else -EACCES if a TLS handshake failed (e->err saying why), else
 * -ETIMEDOUT if one of them may have received the request, else
 * -ECONNREFUSED.  With ETCD_CALL_PAGE or ETCD_CALL_SHRINK, -ESTALE or
 * -EMSGSIZE as said at the flags, at once: every member would answer the
 * same.
 */
int etcd_call(struct etcd *e, const char *path, const char *req,
	      unsigned int flags, etcd_answer_fn parse, void *arg);

#endif /* IDGEND_ETCD_HTTP_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * The service's TLS contexts, their sessions and their peers (tls.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/x509.h>

#include "caller_map.h"
#include "credential.h"
#include "errf.h"
#include "log.h"
#include "metrics.h"
#include "tls.h"

/* A file of ours is small: a chain, a key, a CA bundle, a caller map. */
#define MAX_FILE	(1 << 20)

struct tls_ctx {
	_Atomic unsigned int refs;
	gnutls_certificate_credentials_t cred;
	gnutls_priority_t prio;
	bool mtls;
	enum tls_unmapped unmapped;
	struct tls_caller_map *map;
	char *const *callers;		/* the configuration's (tls_files) */
	unsigned int nr_callers;
	int64_t not_after;		/* the chain's earliest */
	char subject[256];		/* the first certificate's, for the log */
	unsigned int chain, cas;	/* certificates served, CAs trusted */
	struct metrics *metrics;	/* NULL: uncounted */
	struct tls_ctx *prev, *next;	/* live contexts (find()) */
};

/*
 * Every context alive, so that a session's peer check (called by GnuTLS
 * with the session alone) finds the context whose credentials the session
 * holds: the one it began with, not one a reload put in force since.
 */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tls_ctx *live;

/* --- files ------------------------------------------------------------- */

/*
 * name's bytes, NUL-terminated, into *data (a secret's cleared when
 * freed: file_free()): 0, or -1 with err.
 */
static int file_read(const char *what, const char *name, bool secret,
		     gnutls_datum_t *data, char *err, size_t errlen)
{
	char *path = idgen_credential_path(name), why[512];
	struct stat st;
	ssize_t n;
	size_t len = 0;
	char *p;
	int fd = -1;

	data->data = NULL;
	data->size = 0;
	if (!path) {
		idgen_errf(err, errlen, "%s %s: out of memory", what, name);
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		idgen_errf(err, errlen, "%s %s: %s", what, path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE) {
		idgen_errf(err, errlen, "%s %s: not a regular file of at most %d bytes", what,
			   path, MAX_FILE);
		goto out;
	}
	/* A key: libidgen's one rule for a secret's file. */
	if (secret && idgen_secret_file_fault(path, &st, why, sizeof(why))) {
		idgen_errf(err, errlen, "%s %s", what, why);
		goto out;
	}
	p = malloc(st.st_size + 1);
	if (!p) {
		idgen_errf(err, errlen, "%s %s: out of memory", what, path);
		goto out;
	}
	while (len < (size_t)st.st_size &&
	       ((n = read(fd, p + len, st.st_size - len)) > 0 ||
		(n < 0 && errno == EINTR)))
		if (n > 0)
			len += n;
	p[len] = '\0';
	data->data = (unsigned char *)p;
	data->size = len;
out:
	if (fd >= 0)
		close(fd);
	free(path);
	return data->data ? 0 : -1;
}

static void file_free(gnutls_datum_t *d, bool secret)
{
	if (d->data && secret)
		gnutls_memset(d->data, 0, d->size);
	free(d->data);
	d->data = NULL;
}

/* --- callers ----------------------------------------------------------- */

/*
 * Whether a CN is a caller: one the configuration names, and not one the
 * caller map gives to a SPIFFE ID.  Any certificate of the client CA has
 * some CN (a host's, a user's); taken as it is, it would be a caller of
 * its own, never "unmapped" for tls_unmapped = refuse, and a CN that
 * spelt a mapped caller's name would take that caller's quota.
 */
static bool cn_is_caller(const struct tls_ctx *ctx, const char *cn, size_t len)
{
	unsigned int i;

	if (!api_caller_valid(cn, len) || tls_caller_map_assigns(ctx->map, cn))
		return false;
	for (i = 0; i < ctx->nr_callers; i++)
		if (!strcmp(ctx->callers[i], cn))
			return true;
	return false;
}

/* --- contexts ----------------------------------------------------------- */

static const char *gtls_why(int ret)
{
	switch (ret) {
	case GNUTLS_E_CERTIFICATE_KEY_MISMATCH:
		return "the key is not the certificate's (a key of another "
		       "certificate, or the files swapped)";
	case GNUTLS_E_BASE64_DECODING_ERROR:
	case GNUTLS_E_BASE64_UNEXPECTED_HEADER_ERROR:
	case GNUTLS_E_ASN1_DER_ERROR:
	case GNUTLS_E_ASN1_TAG_ERROR:
		return "not PEM, or PEM that does not decode";
	default:
		return gnutls_strerror(ret);
	}
}

static void ctx_free(struct tls_ctx *c)
{
	if (c->cred)
		gnutls_certificate_free_credentials(c->cred);
	if (c->prio)
		gnutls_priority_deinit(c->prio);
	tls_caller_map_free(c->map);
	free(c);
}

/* The served chain, parsed: each certificate's times; the first's subject. */
static int chain_check(struct tls_ctx *c, const char *path, const gnutls_datum_t *pem,
		       char *err, size_t errlen)
{
	gnutls_x509_crt_t *crts = NULL;
	unsigned int n = 0, i;
	time_t now = time(NULL), t;
	size_t size = sizeof(c->subject);
	int ret;

	ret = gnutls_x509_crt_list_import2(&crts, &n, pem, GNUTLS_X509_FMT_PEM,
					   GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
	if (ret < 0 || !n) {
		idgen_errf(err, errlen, "tls_cert %s: %s", path, ret < 0 ? gtls_why(ret) :
			   "no certificate in it");
		return -1;
	}
	c->chain = n;
	c->not_after = INT64_MAX;
	for (i = 0; i < n; i++) {
		t = gnutls_x509_crt_get_expiration_time(crts[i]);
		if (t != (time_t)-1 && t < c->not_after)
			c->not_after = t;
		if (t != (time_t)-1 && t <= now) {
			idgen_errf(err, errlen, "tls_cert %s: certificate %u of the chain expired "
				   "at %jd (Unix time; now %jd)", path, i + 1, (intmax_t)t,
				   (intmax_t)now);
			ret = -1;
		}
		t = gnutls_x509_crt_get_activation_time(crts[i]);
		if (!ret && t != (time_t)-1 && t > now + 300) {
			idgen_errf(err, errlen, "tls_cert %s: certificate %u of the chain is valid "
				   "only from %jd (Unix time; now %jd): is the clock right?",
				   path, i + 1, (intmax_t)t, (intmax_t)now);
			ret = -1;
		}
	}
	if (gnutls_x509_crt_get_dn(crts[0], c->subject, &size) < 0)
		snprintf(c->subject, sizeof(c->subject), "?");
	for (i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	return ret < 0 ? -1 : 0;
}

int tls_ctx_load(const struct tls_files *f, struct tls_ctx **out, char *err,
		 size_t errlen)
{
	gnutls_datum_t cert = { 0 }, key = { 0 }, ca = { 0 }, map = { 0 };
	struct tls_ctx *c;
	const char *pos;
	int ret;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		idgen_errf(err, errlen, "out of memory");
		return -1;
	}
	atomic_init(&c->refs, 1);
	c->unmapped = f->unmapped;
	c->callers = f->callers;
	c->nr_callers = f->nr_callers;
	ret = -1;
	if (file_read("tls_cert", f->cert, false, &cert, err, errlen) ||
	    chain_check(c, f->cert, &cert, err, errlen) ||
	    file_read("tls_key", f->key, true, &key, err, errlen))
		goto out;
	if (gnutls_certificate_allocate_credentials(&c->cred)) {
		idgen_errf(err, errlen, "out of memory");
		goto out;
	}
	ret = gnutls_certificate_set_x509_key_mem2(c->cred, &cert, &key,
						   GNUTLS_X509_FMT_PEM, NULL, 0);
	if (ret < 0) {
		idgen_errf(err, errlen, "tls_key %s with tls_cert %s: %s", f->key, f->cert,
			   gtls_why(ret));
		ret = -1;
		goto out;
	}
	ret = -1;
	if (f->client_ca) {
		if (file_read("tls_client_ca", f->client_ca, false, &ca, err, errlen))
			goto out;
		ret = gnutls_certificate_set_x509_trust_mem(c->cred, &ca,
							    GNUTLS_X509_FMT_PEM);
		if (ret <= 0) {
			idgen_errf(err, errlen, "tls_client_ca %s: %s", f->client_ca,
				   ret < 0 ? gtls_why(ret) : "no certificate in it");
			ret = -1;
			goto out;
		}
		c->cas = ret;
		c->mtls = true;
		ret = -1;
	}
	if (f->caller_map) {
		if (!f->client_ca) {
			idgen_errf(err, errlen, "caller_map %s: given without tls_client_ca: "
				   "without client certificates there is no identity to map",
				   f->caller_map);
			goto out;
		}
		if (file_read("caller_map", f->caller_map, false, &map, err, errlen) ||
		    tls_caller_map_parse(f->caller_map, (const char *)map.data, map.size,
					 &c->map, err, errlen))
			goto out;
	}
	if (gnutls_priority_init2(&c->prio, TLS_PRIORITY, &pos, 0)) {
		idgen_errf(err, errlen, "GnuTLS takes not the priority string at '%s'", pos);
		goto out;
	}
	ret = 0;
out:
	file_free(&cert, false);
	file_free(&key, true);
	file_free(&ca, false);
	file_free(&map, false);
	if (ret) {
		ctx_free(c);
		return -1;
	}
	pthread_mutex_lock(&live_lock);
	c->next = live;
	if (live)
		live->prev = c;
	live = c;
	pthread_mutex_unlock(&live_lock);
	*out = c;
	return 0;
}

struct tls_ctx *tls_ctx_get(struct tls_ctx *ctx)
{
	atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
	return ctx;
}

void tls_ctx_put(struct tls_ctx *ctx)
{
	if (!ctx || atomic_fetch_sub_explicit(&ctx->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_lock(&live_lock);
	if (ctx->prev)
		ctx->prev->next = ctx->next;
	else
		live = ctx->next;
	if (ctx->next)
		ctx->next->prev = ctx->prev;
	pthread_mutex_unlock(&live_lock);
	ctx_free(ctx);
}

int64_t tls_ctx_not_after(const struct tls_ctx *ctx)
{
	return ctx->not_after;
}

bool tls_ctx_mtls(const struct tls_ctx *ctx)
{
	return ctx->mtls;
}

void tls_ctx_describe(const struct tls_ctx *ctx, char *buf, size_t len)
{
	char when[32];
	struct tm tm;
	time_t t = ctx->not_after;

	if (!gmtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(when, sizeof(when), "%jd", (intmax_t)ctx->not_after);
	if (!ctx->mtls) {
		snprintf(buf, len, "certificate %s (a chain of %u), expires %s; no client "
			 "certificates asked for", ctx->subject, ctx->chain, when);
		return;
	}
	snprintf(buf, len, "certificate %s (a chain of %u), expires %s; client "
		 "certificates required, of %u CA(s); %zu SPIFFE ID(s) mapped to "
		 "callers, unmapped ones %s", ctx->subject, ctx->chain, when, ctx->cas,
		 tls_caller_map_size(ctx->map), ctx->unmapped == TLS_UNMAPPED_REFUSE ?
		 "refused" : "served as the caller other");
}

/* The context whose credentials s holds; a reference, or NULL. */
static struct tls_ctx *find(gnutls_session_t s)
{
	struct tls_ctx *c;
	void *cred = NULL;

	if (gnutls_credentials_get(s, GNUTLS_CRD_CERTIFICATE, &cred) || !cred)
		return NULL;
	pthread_mutex_lock(&live_lock);
	for (c = live; c && (void *)c->cred != cred; c = c->next)
		;
	if (c)
		tls_ctx_get(c);
	pthread_mutex_unlock(&live_lock);
	return c;
}

/* --- peers -------------------------------------------------------------- */

/* The peer's address, for the log. */
static void peer_addr(gnutls_session_t s, char *buf, size_t len)
{
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	int fd = gnutls_transport_get_int(s);
	const void *a = NULL;

	if (fd >= 0 && !getpeername(fd, (struct sockaddr *)&sa, &salen)) {
		if (sa.ss_family == AF_INET)
			a = &((struct sockaddr_in *)&sa)->sin_addr;
		else if (sa.ss_family == AF_INET6)
			a = &((struct sockaddr_in6 *)&sa)->sin6_addr;
	}
	if (!a || !inet_ntop(sa.ss_family, a, buf, len))
		snprintf(buf, len, "?");
}

int tls_peer_of(const struct tls_ctx *ctx, gnutls_session_t s, struct tls_peer *p,
		char *why, size_t whylen)
{
	const gnutls_datum_t *certs;
	unsigned int n = 0;

	memset(p, 0, sizeof(*p));
	if (!ctx->mtls)
		return 0;
	certs = gnutls_certificate_get_peers(s, &n);
	if (!certs || !n) {
		idgen_errf(why, whylen, "no client certificate");
		return -1;
	}
	return tls_peer_of_der(ctx, &certs[0], p, why, whylen);
}

int tls_peer_of_der(const struct tls_ctx *ctx, const gnutls_datum_t *der,
		    struct tls_peer *p, char *why, size_t whylen)
{
	unsigned int i, uris = 0, critical;
	gnutls_x509_crt_t crt;
	char buf[TLS_MAX_IDENTITY + 1];
	const char *caller;
	size_t size;
	int ret;

	memset(p, 0, sizeof(*p));
	if (gnutls_x509_crt_init(&crt)) {
		idgen_errf(why, whylen, "out of memory");
		return -1;
	}
	if (gnutls_x509_crt_import(crt, der, GNUTLS_X509_FMT_DER)) {
		gnutls_x509_crt_deinit(crt);
		idgen_errf(why, whylen, "a client certificate that does not parse");
		return -1;
	}
	for (i = 0;; i++) {
		size = sizeof(buf) - 1;
		ret = gnutls_x509_crt_get_subject_alt_name(crt, i, buf, &size, &critical);
		if (ret == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
			break;
		if (ret == GNUTLS_E_SHORT_MEMORY_BUFFER) {
			gnutls_x509_crt_deinit(crt);
			idgen_errf(why, whylen, "a subject alternative name longer than %d bytes",
				   TLS_MAX_IDENTITY);
			return -1;
		}
		if (ret != GNUTLS_SAN_URI)
			continue;
		if (++uris > 1) {
			gnutls_x509_crt_deinit(crt);
			idgen_errf(why, whylen, "several URI SANs: which one is the caller is not "
				   "for the service to guess (a SPIFFE certificate has one)");
			return -1;
		}
		if (memchr(buf, '\0', size)) {
			gnutls_x509_crt_deinit(crt);
			idgen_errf(why, whylen, "a URI SAN with a NUL byte in it");
			return -1;
		}
		memcpy(p->identity, buf, size);
		p->identity[size] = '\0';
	}
	if (!uris) {
		/* No SPIFFE ID: the subject's one CN is the caller. */
		size = sizeof(buf) - 1;
		ret = gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0,
						    buf, &size);
		if (!ret) {
			size_t more = 0;

			if (gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 1,
							  0, NULL, &more) !=
			    GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) {
				gnutls_x509_crt_deinit(crt);
				idgen_errf(why, whylen, "no URI SAN and several CNs: which one is "
					   "the caller is not for the service to guess");
				return -1;
			}
			memcpy(p->identity, buf, size);
			p->identity[size] = '\0';
			if (cn_is_caller(ctx, buf, size))
				memcpy(p->caller, buf, size + 1);	/* <= API_MAX_CALLER */
		}
	}
	gnutls_x509_crt_deinit(crt);
	p->certified = true;
	if (uris) {
		caller = tls_caller_map_find(ctx->map, p->identity);
		if (caller)
			snprintf(p->caller, sizeof(p->caller), "%s", caller);
	}
	if (!p->caller[0] && ctx->unmapped == TLS_UNMAPPED_REFUSE) {
		idgen_errf(why, whylen, "%s '%.200s' maps to no caller (tls_unmapped = refuse; "
			   "%s)", uris ? "the SPIFFE ID" : p->identity[0] ? "the CN" : "a "
			   "certificate with neither URI SAN nor CN,", p->identity,
			   uris ? "add it to caller_map" : "a CN must name one of callers, "
			   "and not one caller_map gives to a SPIFFE ID");
		return -1;
	}
	return 0;
}

/* Refused certificates come in floods: rate-limited (the counter has each). */
static void log_refused(const char *addr, const char *why)
{
	static struct log_ratelimit rl;

	log_ratelimited(&rl, LOG_NOTICE, "TLS: a client certificate from %s refused at "
			"the handshake: %s", addr, why);
}

/*
 * GnuTLS's check of a client certificate, as it arrives: the chain to the
 * client CA, its times, its fitness for client authentication, then its
 * identity.  Non-zero fails the handshake (GnuTLS sends the alert).
 */
static int verify_peer(gnutls_session_t s)
{
	gnutls_typed_vdata_st purpose = {
		.type = GNUTLS_DT_KEY_PURPOSE_OID,
		.data = (void *)GNUTLS_KP_TLS_WWW_CLIENT,
	};
	struct tls_ctx *ctx = find(s);
	char why[512], addr[INET6_ADDRSTRLEN];
	gnutls_datum_t text = { 0 };
	struct tls_peer peer;
	unsigned int status = 0;
	int ret;

	if (!ctx)
		return -1;
	ret = gnutls_certificate_verify_peers(s, &purpose, 1, &status);
	if (ret < 0) {
		idgen_errf(why, sizeof(why), "%s", gnutls_strerror(ret));
	} else if (status) {
		if (!gnutls_certificate_verification_status_print(status,
								  GNUTLS_CRT_X509, &text, 0))
			idgen_errf(why, sizeof(why), "%s", (char *)text.data);
		else
			idgen_errf(why, sizeof(why), "it does not verify (status %#x)", status);
		gnutls_free(text.data);
		ret = -1;
	} else {
		ret = tls_peer_of(ctx, s, &peer, why, sizeof(why));
	}
	if (ret) {
		if (ctx->metrics)
			atomic_fetch_add(&ctx->metrics->tls_peers_refused, 1);
		peer_addr(s, addr, sizeof(addr));
		log_refused(addr, why);
	}
	tls_ctx_put(ctx);
	return ret ? -1 : 0;
}

int tls_session_setup(struct tls_ctx *ctx, gnutls_session_t s, enum tls_alpn alpn)
{
	static const gnutls_datum_t protos[] = {
		[TLS_ALPN_HTTP1] = { (unsigned char *)"http/1.1", 8 },
		[TLS_ALPN_H2] = { (unsigned char *)"h2", 2 },
	};
	int ret;

	ret = gnutls_priority_set(s, ctx->prio);
	if (!ret)
		ret = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, ctx->cred);
	/*
	 * Mandatory: a client that offers ALPN without this listener's
	 * protocol fails its handshake (no_application_protocol) rather than
	 * speaking another protocol; one that offers none is taken at its
	 * word on the HTTP listener, and refused after the handshake on the
	 * gRPC one (tls_alpn_ok()).
	 */
	if (!ret)
		ret = gnutls_alpn_set_protocols(s, &protos[alpn], 1, GNUTLS_ALPN_MANDATORY);
	if (ret)
		return ret;
	if (ctx->mtls) {
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_function(s, verify_peer);
	} else {
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_IGNORE);
	}
	return 0;
}

int tls_session_new(struct tls_ctx *ctx, int fd, enum tls_alpn alpn,
		    gnutls_session_t *out)
{
	gnutls_session_t s;
	int ret;

	ret = gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL |
			  GNUTLS_NO_TICKETS);
	if (ret)
		return ret;
	ret = tls_session_setup(ctx, s, alpn);
	if (ret) {
		gnutls_deinit(s);
		return ret;
	}
	gnutls_transport_set_int(s, fd);
	*out = s;
	return 0;
}

int tls_handshake_step(gnutls_session_t s, enum tls_alpn alpn, bool *want_write,
		       const char **why)
{
	gnutls_datum_t proto = { 0 };
	int ret;

	*want_write = false;
	do
		ret = gnutls_handshake(s);
	while (ret == GNUTLS_E_INTERRUPTED);
	if (ret == GNUTLS_E_AGAIN) {
		*want_write = gnutls_record_get_direction(s) == 1;
		return TLS_WANT;
	}
	if (ret < 0) {
		*why = gnutls_strerror(ret);
		return -1;
	}
	if (alpn == TLS_ALPN_H2 &&
	    (gnutls_alpn_get_selected_protocol(s, &proto) || proto.size != 2 ||
	     memcmp(proto.data, "h2", 2))) {
		*why = "no ALPN h2 negotiated (gRPC over TLS is HTTP/2 by ALPN, never h2c)";
		return -1;
	}
	return TLS_DONE;
}

static ssize_t record_error(ssize_t ret)
{
	switch (ret) {
	case GNUTLS_E_AGAIN:
	case GNUTLS_E_INTERRUPTED:
		return -EAGAIN;
	case GNUTLS_E_REHANDSHAKE:
		return -EPROTO;
	case GNUTLS_E_DECRYPTION_FAILED:
		return -EBADMSG;
	case GNUTLS_E_PREMATURE_TERMINATION:
		return 0;		/* a peer that closed without close_notify */
	default:
		return -ECONNRESET;
	}
}

ssize_t tls_recv(gnutls_session_t s, void *buf, size_t len)
{
	ssize_t ret = gnutls_record_recv(s, buf, len);

	return ret >= 0 ? ret : record_error(ret);
}

ssize_t tls_send(gnutls_session_t s, const void *buf, size_t len)
{
	ssize_t ret = gnutls_record_send(s, buf, len);

	return ret >= 0 ? ret : record_error(ret);
}

size_t tls_pending(gnutls_session_t s)
{
	return gnutls_record_check_pending(s);
}

/* --- the service's ------------------------------------------------------- */

struct tls {
	pthread_mutex_t lock;		/* cur */
	struct tls_ctx *cur;
	char *cert, *key, *client_ca, *caller_map;
	enum tls_unmapped unmapped;
	char *const *callers;
	unsigned int nr_callers;
	struct metrics *metrics;
};

static void files_of(const struct tls *t, struct tls_files *f)
{
	*f = (struct tls_files){
		.cert = t->cert, .key = t->key, .client_ca = t->client_ca,
		.caller_map = t->caller_map, .unmapped = t->unmapped,
		.callers = t->callers, .nr_callers = t->nr_callers,
	};
}

static void put_in_force(struct tls *t, struct tls_ctx *c)
{
	struct tls_ctx *old;

	c->metrics = t->metrics;
	pthread_mutex_lock(&t->lock);
	old = t->cur;
	t->cur = c;
	pthread_mutex_unlock(&t->lock);
	if (t->metrics)
		atomic_store(&t->metrics->tls_not_after, c->not_after);
	tls_ctx_put(old);
}

int tls_open(struct tls **out, const struct tls_files *f, struct metrics *m,
	     char *err, size_t errlen)
{
	struct tls_files copy;
	struct tls_ctx *c;
	struct tls *t;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t) {
		idgen_errf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->metrics = m;
	t->unmapped = f->unmapped;
	t->callers = f->callers;
	t->nr_callers = f->nr_callers;
	t->cert = strdup(f->cert);
	t->key = strdup(f->key);
	t->client_ca = f->client_ca ? strdup(f->client_ca) : NULL;
	t->caller_map = f->caller_map ? strdup(f->caller_map) : NULL;
	if (!t->cert || !t->key || (f->client_ca && !t->client_ca) ||
	    (f->caller_map && !t->caller_map)) {
		idgen_errf(err, errlen, "out of memory");
		tls_close(t);
		return -1;
	}
	files_of(t, &copy);
	if (tls_ctx_load(&copy, &c, err, errlen)) {
		tls_close(t);
		return -1;
	}
	put_in_force(t, c);
	*out = t;
	return 0;
}

struct tls_ctx *tls_current(struct tls *t)
{
	struct tls_ctx *c;

	pthread_mutex_lock(&t->lock);
	c = tls_ctx_get(t->cur);
	pthread_mutex_unlock(&t->lock);
	return c;
}

int tls_reload(struct tls *t)
{
	struct tls_files f;
	struct tls_ctx *c;
	char err[1024], what[1024];

	files_of(t, &f);
	if (tls_ctx_load(&f, &c, err, sizeof(err))) {
		if (t->metrics)
			atomic_fetch_add(&t->metrics->tls_reloads[1], 1);
		log_warn("SIGHUP: the TLS files were not reloaded, the ones in force "
			 "are kept: %s", err);
		return -1;
	}
	put_in_force(t, c);
	if (t->metrics)
		atomic_fetch_add(&t->metrics->tls_reloads[0], 1);
	tls_ctx_describe(c, what, sizeof(what));
	log_info("SIGHUP: TLS reloaded, for connections from now on: %s", what);
	return 0;
}

void tls_close(struct tls *t)
{
	if (!t)
		return;
	tls_ctx_put(t->cur);
	pthread_mutex_destroy(&t->lock);
	free(t->cert);
	free(t->key);
	free(t->client_ca);
	free(t->caller_map);
	free(t);
}

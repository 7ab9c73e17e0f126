/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TLS for both of idgen-httpd's listeners, on GnuTLS (Documentation/design.md
 * section 9.3): the one place that loads and checks the certificate, its
 * key, the client CA and the caller map, and the one policy every
 * handshake gets.
 *
 *   policy    TLS 1.2 and 1.3, ECDHE key exchange and AEAD ciphers only
 *             (Mozilla's "intermediate" without DHE), no compression
 *             (GnuTLS has none), no renegotiation (RFC 9113 section 9.2.1:
 *             the service never answers one, and a peer that asks is cut
 *             off), no session tickets (every connection is a full
 *             handshake, and its client certificate is checked against the
 *             CA in force); ALPN exactly one protocol: "h2" on the gRPC
 *             listener, "http/1.1" on the HTTP one, a client that offers
 *             others only refused at the handshake
 *   context   the certificate chain and key (the key must be the
 *             certificate's; the chain's earliest expiry read), the client
 *             CA and the caller map, loaded whole or not at all.
 *             Refcounted: a connection holds the one it began with, so a
 *             reload (SIGHUP) builds a new one that new connections take,
 *             open ones keep theirs, and a set that fails to load leaves
 *             the one in force
 *   mTLS      with a client CA, every connection must present a
 *             certificate that chains to it and is fit for client
 *             authentication, or its handshake fails; the caller is then
 *             the certificate's (tls_peer_of())
 *
 * Key files follow idgend's rule for secrets: this user's or root's, mode
 * 0600, or a systemd credential (libidgen's rule, credential.h); a bare
 * name (no '/') is one, in $CREDENTIALS_DIRECTORY.  The certificate, the CA and the caller
 * map are public, and may be named bare too.
 */
#ifndef HTTPD_TLS_H
#define HTTPD_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gnutls/gnutls.h>

#include "api.h"
#include "caller_map.h"

/*
 * The one priority string, for libmicrohttpd's sessions and ours alike.
 * SIGN-ALL less SHA-1 and SHA-224 signatures; the groups of ECDHE only
 * (no finite-field ones: no DHE); %NO_TICKETS: no resumption.
 */
#define TLS_PRIORITY	"NONE:+VERS-TLS1.3:+VERS-TLS1.2:+ECDHE-ECDSA:+ECDHE-RSA:" \
			"+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:+AEAD:" \
			"+SIGN-ALL:-SIGN-RSA-SHA1:-SIGN-ECDSA-SHA1:-SIGN-RSA-SHA224:" \
			"-SIGN-ECDSA-SHA224:+GROUP-X25519:+GROUP-SECP256R1:" \
			"+GROUP-SECP384R1:+COMP-NULL:+CTYPE-X509:%SAFE_RENEGOTIATION:" \
			"%NO_TICKETS:%SERVER_PRECEDENCE"


/* A certificate whose identity maps to no caller (tls_unmapped). */
enum tls_unmapped {
	TLS_UNMAPPED_OTHER,		/* served, as the caller "other" */
	TLS_UNMAPPED_REFUSE,		/* its handshake fails */
};

/* What a context is made of: the configuration's file names. */
struct tls_files {
	const char *cert;		/* PEM: the certificate, then its chain */
	const char *key;		/* PEM: its private key */
	const char *client_ca;		/* PEM, or NULL: no client certificates */
	const char *caller_map;		/* or NULL: SPIFFE IDs map to no caller */
	enum tls_unmapped unmapped;
	/*
	 * The configured callers (kept, not copied): a certificate's CN is
	 * a caller only when it names one of them that the caller map does
	 * not give to a SPIFFE ID.
	 */
	char *const *callers;
	unsigned int nr_callers;
};

/* Which listener a session is for: the protocol ALPN must select. */
enum tls_alpn { TLS_ALPN_HTTP1, TLS_ALPN_H2 };

struct tls_ctx;

/*
 * A complete context from f: 0, or -1 with err naming the file and what
 * is wrong with it (unreadable, not PEM, a key not the certificate's, an
 * expired certificate, a caller map's line).  *out holds one reference.
 */
int tls_ctx_load(const struct tls_files *f, struct tls_ctx **out, char *err,
		 size_t errlen);
struct tls_ctx *tls_ctx_get(struct tls_ctx *ctx);
void tls_ctx_put(struct tls_ctx *ctx);
/* When the first certificate of the chain expires (Unix seconds). */
int64_t tls_ctx_not_after(const struct tls_ctx *ctx);
bool tls_ctx_mtls(const struct tls_ctx *ctx);
/* What a reload or a start logs: subject, expiry, CA and map. */
void tls_ctx_describe(const struct tls_ctx *ctx, char *buf, size_t len);

/*
 * Make s, a server session not yet in its handshake, ctx's: its
 * credentials, priorities, ALPN, and with a client CA the demand for a
 * client certificate, checked as it arrives (the handshake fails on a bad
 * one).  ctx must outlive s.  0 or a GnuTLS error.
 */
int tls_session_setup(struct tls_ctx *ctx, gnutls_session_t s, enum tls_alpn alpn);

/*
 * A new non-blocking server session on fd, set up as above: 0, or a
 * GnuTLS error.
 */
int tls_session_new(struct tls_ctx *ctx, int fd, enum tls_alpn alpn,
		    gnutls_session_t *out);

/*
 * A non-blocking session's handshake, one step: TLS_DONE, TLS_WANT (call
 * again when the socket is readable, or writable when *want_write), or a
 * negative value: failed, with why (a GnuTLS error's text).  On the gRPC
 * listener, TLS_DONE only with ALPN "h2" selected: a client that
 * negotiated none fails here.
 */
enum { TLS_DONE = 0, TLS_WANT = 1 };
int tls_handshake_step(gnutls_session_t s, enum tls_alpn alpn, bool *want_write,
		       const char **why);

/*
 * Records in and out of a session whose handshake is done, for a
 * non-blocking socket: bytes, 0 at the peer's end, -EAGAIN (the socket
 * has no more for now, or took no more), or another negative errno: the
 * connection is over (-EPROTO for a peer that asks to renegotiate, which
 * the service never does, RFC 9113 section 9.2.1; -EBADMSG for a record
 * that does not decrypt).  tls_send() of a record cut short by -EAGAIN
 * must be called again with the same bytes (GnuTLS's rule).
 */
ssize_t tls_recv(gnutls_session_t s, void *buf, size_t len);
ssize_t tls_send(gnutls_session_t s, const void *buf, size_t len);
/* Bytes already decrypted and waiting: read them before epoll says so. */
size_t tls_pending(gnutls_session_t s);

/* A connection's caller, as its certificate proves it. */
struct tls_peer {
	bool certified;			/* a client certificate was verified */
	/* The one URI SAN (a SPIFFE ID), else the subject's CN: for the log. */
	char identity[TLS_MAX_IDENTITY + 1];
	/* The caller it is; "" when it maps to none ("other"). */
	char caller[API_MAX_CALLER + 1];
};

/*
 * The caller of s's verified client certificate, by ctx's caller map: 0;
 * or -1 with why saying what refuses it (several URI SANs, several CNs,
 * an identity that maps to no caller under tls_unmapped = refuse).
 * Without a client CA: 0, not certified.
 */
int tls_peer_of(const struct tls_ctx *ctx, gnutls_session_t s, struct tls_peer *p,
		char *why, size_t whylen);
/* The same, of a certificate already verified, DER (and for the fuzzer). */
int tls_peer_of_der(const struct tls_ctx *ctx, const gnutls_datum_t *der,
		    struct tls_peer *p, char *why, size_t whylen);

/*
 * The service's TLS: the context in force, and how to build the next.
 * Counts in metrics (may be NULL): reloads, refused client certificates,
 * the certificate's expiry.
 */
struct tls;
struct metrics;

/* The first context from f, copied: 0, or -1 with err. */
int tls_open(struct tls **out, const struct tls_files *f, struct metrics *m,
	     char *err, size_t errlen);
/* A reference to the context in force, for a new connection. */
struct tls_ctx *tls_current(struct tls *t);
/*
 * Load the files again into a new context and put it in force: 0; or -1
 * after a warning saying why, the context in force kept (and counted in
 * idgen_tls_reloads_total{result="failed"}).
 */
int tls_reload(struct tls *t);
void tls_close(struct tls *t);

#endif /* HTTPD_TLS_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: idgen-httpd's TLS (helper/httpd/tls.c), what a TLS
 * port takes from outside.  The input's first byte chooses:
 *
 *   0  the rest is a caller map's text (tls_caller_map_parse())
 *   1  the rest is a client certificate, DER, taken as verified: the
 *      caller it names (tls_peer_of_der()), with a caller map loaded
 *   2+ the rest is what a client sends a server session of the listener's
 *      (ALPN h2 or http/1.1 by the byte's low bit) made by
 *      tls_session_setup() on a context with a client CA, mTLS's check of
 *      the client certificate included; what the server sends is dropped
 *
 * The context is made once, on a self-signed certificate GnuTLS makes at
 * the start (no key file in the tree).  For every input: no crash, no
 * leak, no undefined behaviour (ASan, UBSan), and no handshake that
 * completes: the input has no client certificate of the CA's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "tls.h"

static struct tls_ctx *ctx;

/* What the session reads: the input, then the end of the stream. */
struct feed {
	const uint8_t *data;
	size_t len, off;
};

static ssize_t pull(gnutls_transport_ptr_t p, void *buf, size_t len)
{
	struct feed *f = p;

	if (len > f->len - f->off)
		len = f->len - f->off;
	memcpy(buf, f->data + f->off, len);
	f->off += len;
	return len;
}

static ssize_t push(gnutls_transport_ptr_t p, const void *buf, size_t len)
{
	(void)p;
	(void)buf;
	return len;
}

static void write_pem(const char *path, const gnutls_datum_t *d)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(d->data, 1, d->size, f) != d->size || fclose(f))
		abort();
}

/* A P-256 key and a self-signed certificate for it, the CA and map too. */
static void make_ctx(void)
{
	char dir[] = "/tmp/idgen-fuzz-tls.XXXXXX", path[4][64], err[512];
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	gnutls_datum_t d;
	time_t now = time(NULL);
	static const char map[] = "spiffe://example.org/ns/orders/sa/order-service orders\n";
	struct tls_files f;
	FILE *m;

	if (!mkdtemp(dir))
		abort();
	snprintf(path[0], sizeof(path[0]), "%s/c.pem", dir);
	snprintf(path[1], sizeof(path[1]), "%s/k.pem", dir);
	snprintf(path[2], sizeof(path[2]), "%s/m", dir);
	if (gnutls_x509_privkey_init(&key) ||
	    gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
					 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) ||
	    gnutls_x509_crt_init(&crt) || gnutls_x509_crt_set_version(crt, 3) ||
	    gnutls_x509_crt_set_serial(crt, "\x01", 1) ||
	    gnutls_x509_crt_set_activation_time(crt, now - 60) ||
	    gnutls_x509_crt_set_expiration_time(crt, now + 86400) ||
	    gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "fuzz", 4) ||
	    gnutls_x509_crt_set_basic_constraints(crt, 1, -1) ||
	    gnutls_x509_crt_set_key(crt, key) ||
	    gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0))
		abort();
	if (gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d))
		abort();
	write_pem(path[0], &d);
	gnutls_free(d.data);
	if (gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d))
		abort();
	write_pem(path[1], &d);
	gnutls_free(d.data);
	chmod(path[1], 0600);
	m = fopen(path[2], "w");
	if (!m || fputs(map, m) < 0 || fclose(m))
		abort();
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	/* The certificate is its own client CA: no input is signed by it. */
	f = (struct tls_files){ .cert = path[0], .key = path[1], .client_ca = path[0],
				.caller_map = path[2] };
	if (tls_ctx_load(&f, &ctx, err, sizeof(err))) {
		fprintf(stderr, "fuzz_tls: %s\n", err);
		abort();
	}
	unlink(path[0]);
	unlink(path[1]);
	unlink(path[2]);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tls_caller_map *map;
	struct tls_peer peer;
	gnutls_session_t s;
	gnutls_datum_t der;
	struct feed feed;
	char err[512];
	int ret, i;

	if (!ctx)
		make_ctx();
	if (!size)
		return 0;
	switch (data[0]) {
	case 0:
		if (!tls_caller_map_parse("fuzz", (const char *)data + 1, size - 1, &map, err,
					  sizeof(err)))
			tls_caller_map_free(map);
		return 0;
	case 1:
		der = (gnutls_datum_t){ (unsigned char *)data + 1, size - 1 };
		if (!tls_peer_of_der(ctx, &der, &peer, err, sizeof(err)) &&
		    (!peer.certified || strlen(peer.caller) > API_MAX_CALLER))
			abort();
		return 0;
	}
	feed = (struct feed){ data + 1, size - 1, 0 };
	if (gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NO_SIGNAL | GNUTLS_NO_TICKETS))
		return 0;
	if (tls_session_setup(ctx, s, data[0] & 1 ? TLS_ALPN_H2 : TLS_ALPN_HTTP1)) {
		gnutls_deinit(s);
		return 0;
	}
	gnutls_transport_set_ptr(s, &feed);
	gnutls_transport_set_pull_function(s, pull);
	gnutls_transport_set_push_function(s, push);
	/* The input runs out: the pull's end of stream ends every loop. */
	for (i = 0; i < 64; i++) {
		ret = gnutls_handshake(s);
		if (ret == 0 || gnutls_error_is_fatal(ret))
			break;
	}
	if (ret == 0)
		abort();	/* a client certificate of the CA's, from nowhere */
	gnutls_deinit(s);
	return 0;
}

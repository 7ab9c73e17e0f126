// SPDX-License-Identifier: GPL-2.0
/*
 * idgen-httpd's TLS module (helper/httpd/tls.c), on certificates
 * tls-certs.sh makes with openssl in a directory of the test's own: a
 * context is loaded whole or not at all (a key not the certificate's, an
 * expired certificate, a key others may read, a chain out of order, a CA
 * file that is no PEM, a caller map without a client CA: each refused
 * with the file named); the caller map's strict parser, its errors by
 * line; handshakes over a socket pair against a GnuTLS client: the
 * caller a client certificate proves (a mapped SPIFFE ID, a CN, an
 * unmapped ID as other or refused), the certificates refused at the
 * handshake (another CA's, an expired one, one not for client
 * authentication, two URI SANs, none at all), ALPN held to the listener's
 * protocol; and a reload: a bad set keeps the context in force and is
 * counted, a good one is taken by new connections while a connection's
 * old context stays whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#include "metrics.h"
#include "tls.h"
#include "kselftest_harness.h"

static char dir[256];
static pid_t maker;

/* The certificates, once for every test (each runs in a child). */
__attribute__((constructor)) static void make_certs(void)
{
	char cmd[1024];
	const char *top = getenv("TOP");

	snprintf(dir, sizeof(dir), "/tmp/idgen-tls-test.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	maker = getpid();
	snprintf(cmd, sizeof(cmd), "%s/tests/httpd/tls-certs.sh %s", top ? top : ".", dir);
	if (system(cmd)) {
		fprintf(stderr, "tls_test: %s failed (set TOP to the tree)\n", cmd);
		exit(1);
	}
}

__attribute__((destructor)) static void remove_certs(void)
{
	char cmd[512];

	if (getpid() != maker)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "tls_test: could not remove %s\n", dir);
}

static const char *path(const char *name)
{
	static char buf[8][512];
	static unsigned int next;
	char *p = buf[next++ % 8];

	snprintf(p, 512, "%s/%s", dir, name);
	return p;
}

static void write_file(const char *name, const char *text, mode_t mode)
{
	FILE *f = fopen(path(name), "w");

	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
	chmod(path(name), mode);
}

static void copy(const char *from, const char *to)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "cp -p %s %s", path(from), path(to));
	if (system(cmd))
		abort();
}

static struct tls_files files(const char *cert, const char *key, const char *ca,
			      const char *map)
{
	return (struct tls_files){
		.cert = path(cert), .key = path(key),
		.client_ca = ca ? path(ca) : NULL, .caller_map = map ? path(map) : NULL,
	};
}

/* --- loading ---------------------------------------------------------- */

TEST(a_whole_context_loads)
{
	struct tls_files f = files("chain.pem", "server.key", "ca.pem", "callers.map");
	struct tls_ctx *c;
	char err[1024], what[1024];
	time_t now = time(NULL);

	ASSERT_EQ(0, tls_ctx_load(&f, &c, err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_TRUE(tls_ctx_mtls(c));
	/* The leaf's two days, the CA's thirty: the earliest counts. */
	EXPECT_GT(tls_ctx_not_after(c), now + 86400);
	EXPECT_LT(tls_ctx_not_after(c), now + 3 * 86400);
	tls_ctx_describe(c, what, sizeof(what));
	EXPECT_NE(NULL, strstr(what, "CN=localhost (a chain of 2)")) TH_LOG("%s", what);
	EXPECT_NE(NULL, strstr(what, "1 SPIFFE ID(s) mapped")) TH_LOG("%s", what);
	tls_ctx_put(c);
}

struct bad_load {
	const char *desc;
	const char *cert, *key, *ca, *map;
	const char *want;		/* in the error */
};

TEST(each_bad_set_is_refused_naming_its_file)
{
	const struct bad_load cases[] = {
		{ "a key of another certificate", "server.pem", "server2.key", NULL, NULL,
		  "the key is not the certificate's" },
		{ "an expired certificate", "expired.pem", "expired.key", NULL, NULL,
		  "expired at" },
		{ "no such certificate file", "nothing.pem", "server.key", NULL, NULL,
		  "nothing.pem: No such file" },
		{ "a key file others may read", "server.pem", "open.key", NULL, NULL,
		  "readable by group or others (mode 0644)" },
		{ "a key file others may write", "server.pem", "writable.key", NULL, NULL,
		  "writable by group or others" },
		{ "a certificate that is no PEM", "junk.pem", "server.key", NULL, NULL,
		  "tls_cert" },
		{ "a chain in the wrong order", "backwards.pem", "server.key", NULL, NULL,
		  "tls_cert" },
		{ "a client CA that is no PEM", "server.pem", "server.key", "junk.pem", NULL,
		  "tls_client_ca" },
		{ "a caller map without a client CA", "server.pem", "server.key", NULL,
		  "callers.map", "without tls_client_ca" },
		{ "a caller map with a bad line", "server.pem", "server.key", "ca.pem",
		  "bad.map", "bad.map:2:" },
	};
	struct tls_ctx *c;
	char err[1024], cmd[1200];
	unsigned int i;

	copy("server.key", "open.key");
	chmod(path("open.key"), 0644);
	copy("server.key", "writable.key");
	chmod(path("writable.key"), 0622);
	write_file("junk.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n"
		   "-----END CERTIFICATE-----\n", 0644);
	write_file("bad.map", "# ok\nspiffe://example.org/a order-service extra\n", 0644);
	snprintf(cmd, sizeof(cmd), "cat %s %s >%s", path("ca.pem"), path("server.pem"),
		 path("backwards.pem"));
	ASSERT_EQ(0, system(cmd));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_load *b = &cases[i];
		struct tls_files f = files(b->cert, b->key, b->ca, b->map);

		c = (void *)1;
		err[0] = '\0';
		EXPECT_EQ(-1, tls_ctx_load(&f, &c, err, sizeof(err))) TH_LOG("%s", b->desc);
		EXPECT_EQ(NULL, c);
		EXPECT_NE(NULL, strstr(err, b->want)) TH_LOG("%s: %s", b->desc, err);
	}
}

/* --- the caller map ---------------------------------------------------- */

TEST(the_caller_map_parses_strictly)
{
	const char good[] = "# SPIFFE ID -> caller\n\n"
			    "spiffe://example.org/ns/orders/sa/order-service order-service\n"
			    "  spiffe://prod.example-1.org/billing\tbilling # not a comment\n";
	const struct { const char *text, *want; } bad[] = {
		{ "spiffe://example.org/a\n", "m:1: want one SPIFFE ID and one caller" },
		{ "\nspiffe://example.org/a b c\n", "m:2: want one" },
		{ "https://example.org/a b\n", "m:1: 'https://example.org/a': not a SPIFFE ID" },
		{ "spiffe://Example.org/a b\n", "m:1: 'spiffe://Example.org/a': a trust domain" },
		{ "spiffe:///a b\n", "no trust domain" },
		{ "spiffe://example.org/a//b b\n", "an empty path segment" },
		{ "spiffe://example.org/a/ b\n", "an empty path segment" },
		{ "spiffe://example.org/a/../b b\n", "\"..\"" },
		{ "spiffe://example.org/a?x=1 b\n", "a path segment takes only" },
		{ "spiffe://example.org/a order/service\n", "m:1: 'order/service' is not a caller's name" },
		{ "spiffe://example.org/a other\n", "not \"other\"" },
		{ "spiffe://example.org/a x\nspiffe://example.org/a y\n", "m:2: 'spiffe://example.org/a' is mapped twice" },
	};
	struct tls_caller_map *m;
	char err[512];
	unsigned int i;

	/* A comment only at a line's start: "#" after a caller is a third word. */
	ASSERT_EQ(-1, tls_caller_map_parse("m", good, strlen(good), &m, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "m:4: want one")) TH_LOG("%s", err);
	ASSERT_EQ(0, tls_caller_map_parse("m", good, strlen(good) - 17, &m, err,
					  sizeof(err))) TH_LOG("%s", err);
	EXPECT_STREQ("order-service",
		     tls_caller_map_find(m, "spiffe://example.org/ns/orders/sa/order-service"));
	EXPECT_STREQ("billing", tls_caller_map_find(m, "spiffe://prod.example-1.org/billing"));
	EXPECT_EQ(NULL, tls_caller_map_find(m, "spiffe://example.org/ns/orders"));
	tls_caller_map_free(m);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		EXPECT_EQ(-1, tls_caller_map_parse("m", bad[i].text, strlen(bad[i].text), &m,
						   err, sizeof(err))) TH_LOG("%s", bad[i].text);
		EXPECT_NE(NULL, strstr(err, bad[i].want)) TH_LOG("%s: %s", bad[i].text, err);
	}
	ASSERT_EQ(-1, tls_caller_map_parse("m", "spiffe://a/b c\0d\n", 16, &m, err,
					   sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "NUL")) TH_LOG("%s", err);
}

/* --- handshakes -------------------------------------------------------- */

struct client {
	int fd;
	const char *cert, *key;		/* NULL: none */
	const char *alpn;		/* NULL: none offered */
	int ret;			/* its handshake */
};

static void *client_run(void *arg)
{
	struct client *cl = arg;
	gnutls_certificate_credentials_t cred;
	gnutls_session_t s;
	gnutls_datum_t proto;
	char byte;

	gnutls_certificate_allocate_credentials(&cred);
	gnutls_certificate_set_x509_trust_file(cred, path("ca.pem"), GNUTLS_X509_FMT_PEM);
	if (cl->cert)
		gnutls_certificate_set_x509_key_file(cred, path(cl->cert), path(cl->key),
						     GNUTLS_X509_FMT_PEM);
	gnutls_init(&s, GNUTLS_CLIENT);
	gnutls_set_default_priority(s);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
	gnutls_server_name_set(s, GNUTLS_NAME_DNS, "localhost", 9);
	gnutls_session_set_verify_cert(s, "localhost", 0);
	if (cl->alpn) {
		proto = (gnutls_datum_t){ (unsigned char *)cl->alpn, strlen(cl->alpn) };
		gnutls_alpn_set_protocols(s, &proto, 1, 0);
	}
	gnutls_transport_set_int(s, cl->fd);
	do
		cl->ret = gnutls_handshake(s);
	while (cl->ret < 0 && !gnutls_error_is_fatal(cl->ret));
	/* TLS 1.3: a refusal of the client's certificate comes after. */
	if (!cl->ret && gnutls_record_recv(s, &byte, 1) < 0)
		cl->ret = -1;
	gnutls_deinit(s);
	gnutls_certificate_free_credentials(cred);
	close(cl->fd);
	return NULL;
}

/*
 * A handshake of the client (cert, key, alpn) with a server session of
 * ctx: the server's result, and with 0 its peer in *p.
 */
static int handshake(struct tls_ctx *ctx, enum tls_alpn alpn, const char *cert,
		     const char *key, const char *offer, struct tls_peer *p,
		     char *why, size_t whylen)
{
	struct client cl = { .cert = cert, .key = key, .alpn = offer };
	gnutls_session_t s;
	pthread_t t;
	int sv[2], ret;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -errno;
	cl.fd = sv[1];
	if (tls_session_new(ctx, sv[0], alpn, &s)) {
		close(sv[0]);
		close(sv[1]);
		return -ENOMEM;
	}
	pthread_create(&t, NULL, client_run, &cl);
	do
		ret = gnutls_handshake(s);
	while (ret < 0 && !gnutls_error_is_fatal(ret));
	snprintf(why, whylen, "%s", ret ? gnutls_strerror(ret) : "");
	if (!ret && tls_peer_of(ctx, s, p, why, whylen))
		ret = -1;
	if (!ret)
		gnutls_record_send(s, "x", 1);	/* the client's read ends */
	gnutls_bye(s, GNUTLS_SHUT_WR);
	close(sv[0]);
	pthread_join(t, NULL);
	gnutls_deinit(s);
	return ret;
}

FIXTURE(mtls) {
	struct tls_ctx *ctx, *refusing;
	struct metrics m;
};

/* The configured callers: a CN is a caller only when it names one. */
static char *callers[] = { "order-service", "billing" };

FIXTURE_SETUP(mtls)
{
	struct tls_files f = files("server.pem", "server.key", "ca.pem", "callers.map");
	char err[1024];

	f.callers = callers;
	f.nr_callers = 2;

	memset(&self->m, 0, sizeof(self->m));
	ASSERT_EQ(0, tls_ctx_load(&f, &self->ctx, err, sizeof(err))) TH_LOG("%s", err);
	f.unmapped = TLS_UNMAPPED_REFUSE;
	ASSERT_EQ(0, tls_ctx_load(&f, &self->refusing, err, sizeof(err))) TH_LOG("%s", err);
}

FIXTURE_TEARDOWN(mtls)
{
	tls_ctx_put(self->ctx);
	tls_ctx_put(self->refusing);
}

TEST_F(mtls, a_spiffe_id_is_the_caller_the_map_gives)
{
	struct tls_peer p;
	char why[512];

	ASSERT_EQ(0, handshake(self->ctx, TLS_ALPN_H2, "spiffe.pem", "spiffe.key", "h2",
			       &p, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_TRUE(p.certified);
	EXPECT_STREQ("spiffe://example.org/ns/orders/sa/order-service", p.identity);
	EXPECT_STREQ("order-service", p.caller);
}

TEST_F(mtls, without_a_uri_san_the_cn_is_the_caller)
{
	struct tls_peer p;
	char why[512];

	ASSERT_EQ(0, handshake(self->ctx, TLS_ALPN_HTTP1, "cn.pem", "cn.key", NULL, &p,
			       why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_STREQ("billing", p.identity);
	EXPECT_STREQ("billing", p.caller);
}

TEST_F(mtls, an_unmapped_id_is_other_or_refused)
{
	struct tls_peer p;
	char why[512];

	ASSERT_EQ(0, handshake(self->ctx, TLS_ALPN_H2, "unmapped.pem", "unmapped.key",
			       "h2", &p, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_TRUE(p.certified);
	EXPECT_STREQ("", p.caller);
	EXPECT_NE(0, handshake(self->refusing, TLS_ALPN_H2, "unmapped.pem",
			       "unmapped.key", "h2", &p, why, sizeof(why)));
	/* The mapped one still passes where unmapped ones are refused. */
	EXPECT_EQ(0, handshake(self->refusing, TLS_ALPN_H2, "spiffe.pem", "spiffe.key",
			       "h2", &p, why, sizeof(why))) TH_LOG("%s", why);
}

/*
 * Any certificate of the client CA has some CN: one that names no
 * configured caller, or names one the caller map gives to a SPIFFE ID, is
 * no caller of its own (and is refused with tls_unmapped = refuse).
 */
TEST_F(mtls, a_cn_is_a_caller_only_if_configured_and_not_mapped)
{
	const char *const cns[][2] = {
		{ "cn-host.pem", "cn-host.key" },	/* CN=www.example.com */
		{ "cn-mapped.pem", "cn-mapped.key" },	/* CN=order-service */
	};
	struct tls_peer p;
	char why[512];
	unsigned int i;

	for (i = 0; i < sizeof(cns) / sizeof(cns[0]); i++) {
		ASSERT_EQ(0, handshake(self->ctx, TLS_ALPN_HTTP1, cns[i][0], cns[i][1],
				       NULL, &p, why, sizeof(why))) TH_LOG("%s", why);
		EXPECT_STREQ("", p.caller) TH_LOG("%s", cns[i][0]);
		EXPECT_NE(0, handshake(self->refusing, TLS_ALPN_HTTP1, cns[i][0],
				       cns[i][1], NULL, &p, why, sizeof(why)))
			TH_LOG("%s", cns[i][0]);
	}
	/* A configured one that the map does not give away passes both. */
	EXPECT_EQ(0, handshake(self->refusing, TLS_ALPN_HTTP1, "cn.pem", "cn.key", NULL,
			       &p, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_STREQ("billing", p.caller);
}

TEST_F(mtls, bad_client_certificates_fail_the_handshake)
{
	const char *const bad[][2] = {
		{ "foreign.pem", "foreign.key" },	/* another CA's */
		{ "expired.pem", "expired.key" },
		{ "serveronly.pem", "serveronly.key" },	/* no clientAuth */
		{ "two-uris.pem", "two-uris.key" },
		{ NULL, NULL },				/* none at all */
	};
	struct tls_peer p;
	char why[512];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_NE(0, handshake(self->ctx, TLS_ALPN_H2, bad[i][0], bad[i][1], "h2",
				       &p, why, sizeof(why))) TH_LOG("%s", bad[i][0]);
}

TEST_F(mtls, alpn_must_be_the_listeners_protocol)
{
	struct tls_peer p;
	char why[512];

	EXPECT_NE(0, handshake(self->ctx, TLS_ALPN_H2, "spiffe.pem", "spiffe.key",
			       "http/1.1", &p, why, sizeof(why)));
	EXPECT_NE(0, handshake(self->ctx, TLS_ALPN_HTTP1, "spiffe.pem", "spiffe.key",
			       "h2", &p, why, sizeof(why)));
	EXPECT_EQ(0, handshake(self->ctx, TLS_ALPN_HTTP1, "spiffe.pem", "spiffe.key",
			       "http/1.1", &p, why, sizeof(why))) TH_LOG("%s", why);
}

TEST(without_a_client_ca_no_certificate_is_asked_for)
{
	struct tls_files f = files("server.pem", "server.key", NULL, NULL);
	struct tls_ctx *c;
	struct tls_peer p;
	char err[1024];

	ASSERT_EQ(0, tls_ctx_load(&f, &c, err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_FALSE(tls_ctx_mtls(c));
	ASSERT_EQ(0, handshake(c, TLS_ALPN_H2, NULL, NULL, "h2", &p, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_FALSE(p.certified);
	tls_ctx_put(c);
}

/* --- the gRPC listener's transport: non-blocking steps ------------------ */

struct reneg_client {
	int fd;
	const char *alpn;		/* NULL: none offered */
	bool tls12, renegotiate;
	char got[16];			/* what it read */
};

static void *reneg_client_run(void *arg)
{
	struct reneg_client *cl = arg;
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t proto;
	gnutls_session_t s;
	int ret;

	gnutls_certificate_allocate_credentials(&cred);
	gnutls_certificate_set_x509_trust_file(cred, path("ca.pem"), GNUTLS_X509_FMT_PEM);
	gnutls_certificate_set_x509_key_file(cred, path("spiffe.pem"), path("spiffe.key"),
					     GNUTLS_X509_FMT_PEM);
	gnutls_init(&s, GNUTLS_CLIENT);
	gnutls_priority_set_direct(s, cl->tls12 ? "NORMAL:-VERS-ALL:+VERS-TLS1.2" : "NORMAL",
				   NULL);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
	if (cl->alpn) {
		proto = (gnutls_datum_t){ (unsigned char *)cl->alpn, strlen(cl->alpn) };
		gnutls_alpn_set_protocols(s, &proto, 1, 0);
	}
	gnutls_transport_set_int(s, cl->fd);
	do
		ret = gnutls_handshake(s);
	while (ret < 0 && !gnutls_error_is_fatal(ret));
	if (!ret) {
		gnutls_record_send(s, "ping", 4);
		if (cl->renegotiate)
			gnutls_handshake(s);	/* a TLS 1.2 client's renegotiation */
		ret = gnutls_record_recv(s, cl->got, sizeof(cl->got) - 1);
		if (ret > 0)
			cl->got[ret] = '\0';
	}
	gnutls_deinit(s);
	gnutls_certificate_free_credentials(cred);
	close(cl->fd);
	return NULL;
}

/*
 * The server's side as the gRPC listener drives it: non-blocking steps on
 * a non-blocking socket.  Returns the handshake's result (TLS_DONE or -1)
 * and, done, what tls_recv() gave first (*first) and after answering
 * "pong" (*second).
 */
static int serve_steps(struct tls_ctx *ctx, struct reneg_client *cl, ssize_t *first,
		       ssize_t *second)
{
	const char *why = NULL;
	gnutls_session_t s;
	char buf[64];
	bool want_write;
	pthread_t t;
	int sv[2], ret, i;
	ssize_t r;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
		return -2;
	cl->fd = sv[1];
	fcntl(sv[1], F_SETFL, 0);		/* the client blocks */
	if (tls_session_new(ctx, sv[0], TLS_ALPN_H2, &s))
		return -2;
	pthread_create(&t, NULL, reneg_client_run, cl);
	for (i = 0; i < 10000; i++) {
		ret = tls_handshake_step(s, TLS_ALPN_H2, &want_write, &why);
		if (ret != TLS_WANT)
			break;
		usleep(1000);
	}
	*first = *second = 0;
	if (ret == TLS_DONE) {
		for (i = 0; i < 5000 && (r = tls_recv(s, buf, sizeof(buf))) == -EAGAIN; i++)
			usleep(1000);
		*first = r;
		while (tls_send(s, "pong", 4) == -EAGAIN)
			usleep(1000);
		for (i = 0; i < 5000 && (r = tls_recv(s, buf, sizeof(buf))) == -EAGAIN; i++)
			usleep(1000);
		*second = r;
	}
	close(sv[0]);
	pthread_join(t, NULL);
	gnutls_deinit(s);
	return ret;
}

TEST_F(mtls, the_grpc_transport_steps_a_handshake_and_refuses_renegotiation)
{
	struct reneg_client plain = { .alpn = "h2" }, none = { .alpn = NULL },
			    reneg = { .alpn = "h2", .tls12 = true, .renegotiate = true };
	ssize_t first, second;

	ASSERT_EQ(TLS_DONE, serve_steps(self->ctx, &plain, &first, &second));
	EXPECT_EQ(4, first);
	EXPECT_STREQ("pong", plain.got);
	EXPECT_EQ(0, second);			/* the client's end */
	/* gRPC clients want h2: a client that negotiated no ALPN is refused. */
	EXPECT_EQ(-1, serve_steps(self->ctx, &none, &first, &second));
	/* A TLS 1.2 client asks to renegotiate: the connection is over. */
	ASSERT_EQ(TLS_DONE, serve_steps(self->ctx, &reneg, &first, &second));
	EXPECT_EQ(4, first);
	EXPECT_EQ(-EPROTO, second);
}

/* --- reloads ------------------------------------------------------------ */

TEST(a_reload_takes_a_whole_new_set_or_keeps_the_old)
{
	struct tls_files f = files("live.pem", "live.key", "ca.pem", NULL);
	struct tls_ctx *held, *now;
	struct metrics m;
	struct tls *t;
	struct tls_peer p;
	char err[1024];

	memset(&m, 0, sizeof(m));
	copy("server.pem", "live.pem");
	copy("server.key", "live.key");
	ASSERT_EQ(0, tls_open(&t, &f, &m, err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_NE(0, atomic_load(&m.tls_not_after));
	held = tls_current(t);		/* a connection open across the reloads */

	/* Half a rotation: the new certificate, the old key. */
	copy("server2.pem", "live.pem");
	EXPECT_EQ(-1, tls_reload(t));
	EXPECT_EQ(1, atomic_load(&m.tls_reloads[1]));
	now = tls_current(t);
	EXPECT_EQ(held, now);
	tls_ctx_put(now);

	/* The rotation done: new connections take it, the old one is whole. */
	copy("server2.key", "live.key");
	EXPECT_EQ(0, tls_reload(t));
	EXPECT_EQ(1, atomic_load(&m.tls_reloads[0]));
	now = tls_current(t);
	EXPECT_NE(held, now);
	ASSERT_EQ(0, handshake(now, TLS_ALPN_H2, "spiffe.pem", "spiffe.key", "h2", &p, err,
			       sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(0, handshake(held, TLS_ALPN_H2, "spiffe.pem", "spiffe.key", "h2", &p,
			       err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_STREQ("", p.caller);	/* no caller map */
	tls_ctx_put(now);
	tls_ctx_put(held);
	tls_close(t);
}

TEST_HARNESS_MAIN

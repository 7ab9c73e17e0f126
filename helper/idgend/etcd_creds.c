// SPDX-License-Identifier: GPL-2.0
/*
 * etcd_creds.c: the files that secure the connection to etcd, read,
 * checked and kept in force (etcd_creds.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "credential.h"
#include "errf.h"
#include "etcd_creds.h"
#include "log.h"

/* Far above any CA bundle or certificate chain; a password is one line. */
#define CREDS_FILE_MAX		(1u << 20)
#define PASSWORD_MAX		1024u
/* A key file: an RSA key of 16384 bits is some 12 KiB of PEM. */
#define SECRET_FILE_MAX		(64u << 10)

static size_t secret_span(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (size + page - 1) / page * page;
}

void *secret_alloc(size_t size)
{
	void *p = mmap(NULL, secret_span(size), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, secret_span(size), MADV_DONTDUMP);
	mlock(p, secret_span(size));	/* best effort: RLIMIT_MEMLOCK */
	return p;
}

void secret_free(void *p, size_t size)
{
	if (!p)
		return;
	explicit_bzero(p, size);
	munlock(p, secret_span(size));
	munmap(p, secret_span(size));
}

static bool same_version(const struct stat *a, const struct stat *b)
{
	/* The mode and owner too: a file whose mode was mended is news. */
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_mode == b->st_mode && a->st_uid == b->st_uid &&
	       a->st_gid == b->st_gid && a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* A file's bytes as read now: 0, or -1 with err saying why. */
struct version {
	struct stat st;
	char *data;
	size_t len;
	size_t alloc;			/* data's size, for secret_free() */
	bool secret;
};

static void version_free(struct version *v)
{
	if (v->secret)
		secret_free(v->data, v->alloc);
	else
		free(v->data);
	v->data = NULL;
}

static int read_version(const char *path, bool secret, struct version *v,
			char *err, size_t errlen)
{
	size_t cap = secret ? SECRET_FILE_MAX : CREDS_FILE_MAX;
	char *buf;
	ssize_t r;
	size_t len = 0;
	int fd;

	memset(v, 0, sizeof(*v));
	v->secret = secret;
	/* O_NONBLOCK: a FIFO must not hang the open; it is refused below. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		idgen_errf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &v->st)) {
		idgen_errf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(v->st.st_mode)) {
		idgen_errf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	/* A key or password file: libidgen's one rule for a secret's. */
	if (secret && idgen_secret_file_fault(path, &v->st, err, errlen)) {
		close(fd);
		return -1;
	}
	if ((uint64_t)v->st.st_size > cap) {
		idgen_errf(err, errlen, "%s: larger than %zu bytes", path, cap);
		close(fd);
		return -1;
	}
	buf = secret ? secret_alloc(cap + 1) : malloc(cap + 1);
	if (!buf) {
		idgen_errf(err, errlen, "%s: out of memory", path);
		close(fd);
		return -1;
	}
	while (len < cap) {
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			idgen_errf(err, errlen, "%s: %s", path, strerror(errno));
			close(fd);
			if (secret)
				secret_free(buf, cap + 1);
			else
				free(buf);
			return -1;
		}
		if (!r)
			break;
		len += r;
	}
	close(fd);
	buf[len] = '\0';
	if (secret) {
		/* Into a buffer of its own size, the big one cleared. */
		v->data = secret_alloc(len + 1);
		v->alloc = len + 1;
		if (v->data)
			memcpy(v->data, buf, len + 1);
		secret_free(buf, cap + 1);
	} else {
		v->data = buf;
	}
	if (!v->data) {
		idgen_errf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	v->len = len;
	return 0;
}

/* OpenSSL's reason for the last failure, or what. */
static const char *ssl_reason(const char *what)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;

	ERR_clear_error();
	return r ? r : what;
}

/* Never ask for a passphrase on a terminal: an encrypted key is refused. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

static const char *when(const ASN1_TIME *t, char *buf, size_t size)
{
	struct tm tm;

	if (!ASN1_TIME_to_tm(t, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, size, "?");
	return buf;
}

/* The CA file: at least one certificate, all of it PEM. */
static int check_ca(const char *path, const struct version *v, char *err,
		    size_t errlen)
{
	BIO *b = BIO_new_mem_buf(v->data, (int)v->len);
	STACK_OF(X509_INFO) *infos;
	int n = 0, i;

	if (!b) {
		idgen_errf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	infos = PEM_X509_INFO_read_bio(b, NULL, NULL, NULL);
	BIO_free(b);
	if (infos) {
		for (i = 0; i < sk_X509_INFO_num(infos); i++)
			n += sk_X509_INFO_value(infos, i)->x509 != NULL;
		sk_X509_INFO_pop_free(infos, X509_INFO_free);
	}
	if (!n) {
		idgen_errf(err, errlen, "%s: no PEM certificate in it (%s)", path,
			   ssl_reason("no certificate"));
		return -1;
	}
	ERR_clear_error();
	return 0;
}

/*
 * The client certificate (its first one; more may follow, the chain up
 * to the CA) in force now, and the key its own.  *cn: whether its subject
 * has a common name, which etcd's gateway refuses (etcd_http.c).
 */
static int check_pair(const char *cpath, const struct version *cert,
		      const char *kpath, const struct version *key, bool *cn,
		      char *err, size_t errlen)
{
	char t[32];
	BIO *b;
	X509 *x = NULL;
	EVP_PKEY *k = NULL;
	int ret = -1;

	b = BIO_new_mem_buf(cert->data, (int)cert->len);
	if (b)
		x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL);
	BIO_free(b);
	if (!x) {
		idgen_errf(err, errlen, "%s: not a PEM certificate (%s)", cpath,
			   ssl_reason("no certificate"));
		goto out;
	}
	if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
		idgen_errf(err, errlen, "%s: the certificate expired at %s", cpath,
			   when(X509_get0_notAfter(x), t, sizeof(t)));
		goto out;
	}
	if (X509_cmp_current_time(X509_get0_notBefore(x)) >= 0) {
		idgen_errf(err, errlen, "%s: the certificate is not valid before %s", cpath,
			   when(X509_get0_notBefore(x), t, sizeof(t)));
		goto out;
	}
	b = BIO_new_mem_buf(key->data, (int)key->len);
	if (b)
		k = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
	BIO_free(b);
	if (!k) {
		idgen_errf(err, errlen, "%s: not a PEM private key without a passphrase (%s)",
			   kpath, ssl_reason("no key"));
		goto out;
	}
	if (X509_check_private_key(x, k) != 1) {
		idgen_errf(err, errlen, "%s: the key does not match the certificate in %s",
			   kpath, cpath);
		goto out;
	}
	*cn = X509_NAME_get_index_by_NID(X509_get_subject_name(x), NID_commonName,
					 -1) >= 0;
	ret = 0;
out:
	ERR_clear_error();
	EVP_PKEY_free(k);
	X509_free(x);
	return ret;
}

/* The password: the file's one line, without its newline. */
static int check_password(const char *path, struct version *v, char *err,
			  size_t errlen)
{
	if (v->len && v->data[v->len - 1] == '\n')
		v->data[--v->len] = '\0';
	if (v->len && v->data[v->len - 1] == '\r')
		v->data[--v->len] = '\0';
	if (!v->len) {
		idgen_errf(err, errlen, "%s: empty: it holds the etcd user's password, one "
			   "line", path);
		return -1;
	}
	if (v->len > PASSWORD_MAX || memchr(v->data, '\n', v->len) ||
	    memchr(v->data, '\0', v->len)) {
		idgen_errf(err, errlen, "%s: not one line of at most %u bytes: it holds the "
			   "etcd user's password", path, PASSWORD_MAX);
		return -1;
	}
	return 0;
}

static void take(struct etcd_file *f, struct version *v)
{
	if (f->secret)
		secret_free(f->data, f->alloc);
	else
		free(f->data);
	f->data = v->data;
	f->len = v->len;
	f->alloc = v->alloc;
	f->secret = v->secret;
	f->loaded = v->st;
	f->has_failed = false;
	v->data = NULL;
}

/*
 * Read the TLS files (those that changed, or all), check them as one set
 * (a new certificate with the key in force, say) and take it: 1 when
 * taken, 0 when nothing changed, -1 with err.
 */
static int tls_refresh(struct etcd_creds *c, bool force, char *err, size_t errlen)
{
	struct etcd_file *files[3] = { &c->ca, &c->cert, &c->key };
	struct version v[3] = { 0 };
	bool changed = false, cn = false;
	int i, ret = -1;

	for (i = 0; i < 3; i++) {
		struct etcd_file *f = files[i];
		struct stat st;

		if (!f->path)
			continue;
		if (!force && f->data && !stat(f->path, &st) &&
		    (same_version(&st, &f->loaded) ||
		     (f->has_failed && same_version(&st, &f->failed))))
			continue;
		if (read_version(f->path, f == &c->key, &v[i], err, errlen))
			goto out;
		changed = true;
	}
	if (!changed)
		return 0;
	if (v[0].data && check_ca(c->ca.path, &v[0], err, errlen))
		goto out;
	if (c->cert.path) {
		/* What is not new is what is in force. */
		struct version oc = { .data = c->cert.data, .len = c->cert.len };
		struct version ok = { .data = c->key.data, .len = c->key.len };

		if (check_pair(c->cert.path, v[1].data ? &v[1] : &oc, c->key.path,
			       v[2].data ? &v[2] : &ok, &cn, err, errlen))
			goto out;
		if (cn)
			log_warn("%s: the client certificate's subject has a common name "
				 "(CN): etcd refuses requests through its JSON gateway from "
				 "such a certificate; issue it without one (idgend(8))",
				 c->cert.path);
	}
	/* The same bytes again (a touch, a SIGHUP) change nothing. */
	changed = false;
	for (i = 0; i < 3; i++)
		if (v[i].data && (v[i].len != files[i]->len || !files[i]->data ||
				  memcmp(v[i].data, files[i]->data, v[i].len)))
			changed = true;
	for (i = 0; i < 3; i++) {
		if (!v[i].data)
			continue;
		if (changed) {
			take(files[i], &v[i]);
		} else {
			files[i]->loaded = v[i].st;
			files[i]->has_failed = false;
		}
	}
	ret = changed;
	if (changed)
		c->tls_gen++;
out:
	if (ret < 0) {
		/* Not tried again until one of the files changes again. */
		for (i = 0; i < 3; i++) {
			if (!files[i]->path)
				continue;
			files[i]->has_failed = !stat(files[i]->path, &files[i]->failed);
		}
	}
	for (i = 0; i < 3; i++)
		version_free(&v[i]);
	return ret;
}

static int password_refresh(struct etcd_creds *c, bool force, char *err,
			    size_t errlen)
{
	struct etcd_file *f = &c->password;
	struct version v;
	struct stat st;

	if (!f->path)
		return 0;
	if (!force && f->data && !stat(f->path, &st) &&
	    (same_version(&st, &f->loaded) ||
	     (f->has_failed && same_version(&st, &f->failed))))
		return 0;
	if (read_version(f->path, true, &v, err, errlen) ||
	    check_password(f->path, &v, err, errlen)) {
		version_free(&v);
		f->has_failed = !stat(f->path, &f->failed);
		return -1;
	}
	/* The same password again (a touch, a SIGHUP) changes nothing. */
	if (f->data && f->len == v.len && !memcmp(f->data, v.data, v.len)) {
		f->loaded = v.st;
		version_free(&v);
		return 0;
	}
	take(f, &v);
	c->password_gen++;
	return 1;
}

static int set_path(struct etcd_file *f, const char *what, const char *name)
{
	f->what = what;
	if (!name || !*name)
		return 0;
	f->path = idgen_credential_path(name);
	return f->path ? 0 : -1;
}

int etcd_creds_load(struct etcd_creds *c, const struct etcd_security *s,
		    char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	if (set_path(&c->ca, "ca_file", s->ca_file) ||
	    set_path(&c->cert, "cert_file", s->cert_file) ||
	    set_path(&c->key, "key_file", s->key_file) ||
	    set_path(&c->password, "password_file", s->password_file) ||
	    (s->user && *s->user && !(c->user = strdup(s->user)))) {
		idgen_errf(err, errlen, "out of memory");
		goto fail;
	}
	if (tls_refresh(c, true, err, errlen) < 0 ||
	    password_refresh(c, true, err, errlen) < 0)
		goto fail;
	return 0;
fail:
	etcd_creds_free(c);
	return -1;
}

bool etcd_creds_refresh(struct etcd_creds *c, bool force)
{
	char err[512];
	bool news = false;
	int ret;

	ret = tls_refresh(c, force, err, sizeof(err));
	if (ret < 0)
		log_warn("etcd TLS files: %s; the ones read before stay in force", err);
	news |= ret > 0;
	if (ret > 0)
		log_info("etcd TLS files read again; new connections use them");
	ret = password_refresh(c, force, err, sizeof(err));
	if (ret < 0)
		log_warn("password_file %s; the password read before stays in force",
			 err);
	if (ret > 0)
		log_info("password_file read again; authenticating with it");
	return news || ret > 0;
}

static void file_free(struct etcd_file *f)
{
	if (f->secret)
		secret_free(f->data, f->alloc);
	else
		free(f->data);
	free(f->path);
	memset(f, 0, sizeof(*f));
}

void etcd_creds_free(struct etcd_creds *c)
{
	file_free(&c->ca);
	file_free(&c->cert);
	file_free(&c->key);
	file_free(&c->password);
	free(c->user);
	c->user = NULL;
}

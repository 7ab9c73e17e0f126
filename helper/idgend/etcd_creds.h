/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What secures idgend's connection to etcd, as files: the CA that signed
 * the members' certificates, a client certificate and its key, and the
 * password of an etcd user.  Each is read into memory and checked before
 * it is used: a CA file must hold certificates, a client certificate must
 * be in force now and its key must be its own, a key or password file
 * must be private to this user (mode 0600, or a systemd credential), so
 * that a bad file is named at once rather than in a TLS handshake.
 *
 * Rotation: etcd_creds_refresh() looks at the files again (stat(); cheap
 * enough for every request) and reads those that changed, all of them
 * when forced (SIGHUP).  A new set that fails its checks is not taken:
 * the set in force stays, and one warning names the file and the fault
 * (once per version of the files, not once per request).
 *
 * A bare name (no '/') is a systemd credential, in $CREDENTIALS_DIRECTORY
 * (LoadCredential=NAME:/etc/idgen/NAME in the unit), when systemd gave
 * the service one, as idgen-httpd reads its key files.
 */
#ifndef IDGEND_ETCD_CREDS_H
#define IDGEND_ETCD_CREDS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* The [etcd] keys, as configured; NULL or "" for a key not given. */
struct etcd_security {
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
	const char *user;
	const char *password_file;
};

/* One file as last read. */
struct etcd_file {
	const char *what;		/* its key: "cert_file" */
	char *path;			/* resolved; NULL when not configured */
	struct stat loaded;		/* the version in data */
	struct stat failed;		/* the last version refused, not retried */
	bool has_failed;
	char *data;			/* its bytes, NUL-terminated */
	size_t len;
	size_t alloc;			/* data's size, for secret_free() */
	bool secret;			/* data is secret_alloc()ed */
};

struct etcd_creds {
	struct etcd_file ca, cert, key, password;
	char *user;			/* NULL: no authentication */
	/* Bumped when new TLS files came into force, and the password. */
	unsigned int tls_gen, password_gen;
};

/*
 * Read and check every file s names: 0, or -1 with err naming the file and
 * what is wrong with it (nothing kept).
 */
int etcd_creds_load(struct etcd_creds *c, const struct etcd_security *s,
		    char *err, size_t errlen);

/*
 * Read again the files that changed since they were read (with force,
 * all of them), and take the new set if it passes the checks; a set that
 * does not is logged as a warning and the one in force kept.  Returns
 * true when something new came into force (the generations say what).
 */
bool etcd_creds_refresh(struct etcd_creds *c, bool force);

/* Clears the secrets and frees everything. */
void etcd_creds_free(struct etcd_creds *c);

/*
 * Memory for a secret: kept out of core dumps (MADV_DONTDUMP) and, where
 * the process may, out of swap; secret_free() clears it first.
 */
void *secret_alloc(size_t size);
void secret_free(void *p, size_t size);

#endif /* IDGEND_ETCD_CREDS_H */

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Public IDs (Documentation/design.md section 10): FF1 with AES-256 over radix
 * 2, the ID's 63 bits most significant first, the tweak the key version as 4
 * big-endian bytes.  A keyring holds the key versions; the current one is the
 * version set by idgen_keyring_set_current(), or else the highest.  Text: the
 * current version's public ID in plain decimal, any version's as
 * "v<N>.<decimal>".
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "credential.h"
#include "decimal.h"
#include "ff1.h"
#include "internal.h"

#define PUBLIC_BITS	63
/* "4294967295 " + 64 hex digits + "\n", and room to see more. */
#define KEY_FILE_MAX	128

struct public_key {
	uint32_t version;
	uint8_t tweak[4];
	uint8_t p[16];		/* CIPH_K(P) for n = 63, t = 4 */
	struct idgen_ff1 *ff1;
};

/*
 * Adding a version shifts k[] and bumps n while other threads may be
 * encoding: readers hold lock for reading, idgen_keyring_add() for
 * writing.  An encode holds it for a few hundred nanoseconds.
 */
struct idgen_keyring {
	pthread_rwlock_t lock;
	bool pinned;		/* current set: an added version decodes only */
	uint32_t current;	/* when pinned */
	size_t n;
	struct public_key k[LIBIDGEN_KEYRING_MAX];	/* by version, increasing */
};

IDGEN_EXPORT int idgen_keyring_new(struct idgen_keyring **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	if (pthread_rwlock_init(&(*out)->lock, NULL)) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* The lock is the keyring's own mutable state, not its keys. */
static void read_lock(const struct idgen_keyring *kr)
{
	pthread_rwlock_rdlock((pthread_rwlock_t *)&kr->lock);
}

static void read_unlock(const struct idgen_keyring *kr)
{
	pthread_rwlock_unlock((pthread_rwlock_t *)&kr->lock);
}

IDGEN_EXPORT void idgen_keyring_free(struct idgen_keyring *kr)
{
	size_t i;

	if (!kr)
		return;
	for (i = 0; i < kr->n; i++)
		idgen_ff1_free(kr->k[i].ff1);
	pthread_rwlock_destroy(&kr->lock);
	OPENSSL_cleanse(kr, sizeof(*kr));
	free(kr);
}

IDGEN_EXPORT int idgen_keyring_add(struct idgen_keyring *kr, uint32_t version,
				   const uint8_t key[LIBIDGEN_PUBLIC_KEY_BYTES])
{
	struct public_key nk = { .version = version };
	size_t i;
	int ret;

	/* The key schedule and P block outside the lock: encoders go on. */
	ret = idgen_ff1_new(key, LIBIDGEN_PUBLIC_KEY_BYTES, 2, &nk.ff1);
	if (ret)
		return ret;
	nk.tweak[0] = version >> 24;
	nk.tweak[1] = version >> 16;
	nk.tweak[2] = version >> 8;
	nk.tweak[3] = version;
	ret = ff1_p_block(nk.ff1, PUBLIC_BITS, sizeof(nk.tweak), nk.p);
	if (ret) {
		idgen_ff1_free(nk.ff1);
		return ret;
	}
	pthread_rwlock_wrlock(&kr->lock);
	for (i = 0; i < kr->n; i++)
		if (kr->k[i].version == version)
			ret = -EEXIST;
	if (!ret && kr->n == LIBIDGEN_KEYRING_MAX)
		ret = -E2BIG;
	if (!ret) {
		for (i = kr->n; i > 0 && kr->k[i - 1].version > version; i--)
			kr->k[i] = kr->k[i - 1];
		kr->k[i] = nk;
		kr->n++;
	}
	pthread_rwlock_unlock(&kr->lock);
	if (ret)
		idgen_ff1_free(nk.ff1);
	return ret;
}

IDGEN_EXPORT size_t idgen_keyring_count(const struct idgen_keyring *kr)
{
	size_t n;

	read_lock(kr);
	n = kr->n;
	read_unlock(kr);
	return n;
}

IDGEN_EXPORT int idgen_keyring_version(const struct idgen_keyring *kr, size_t i,
				       uint32_t *version)
{
	int ret = 0;

	read_lock(kr);
	if (i >= kr->n)
		ret = -ERANGE;
	else	/* i = 0 is the highest version. */
		*version = kr->k[kr->n - 1 - i].version;
	read_unlock(kr);
	return ret;
}

/* The version encode uses and a plain decimal means; n > 0. */
static uint32_t current(const struct idgen_keyring *kr)
{
	return kr->pinned ? kr->current : kr->k[kr->n - 1].version;
}

IDGEN_EXPORT int idgen_keyring_set_current(struct idgen_keyring *kr, uint32_t version)
{
	int ret = -EKEYREJECTED;
	size_t i;

	pthread_rwlock_wrlock(&kr->lock);
	for (i = 0; i < kr->n; i++)
		if (kr->k[i].version == version)
			ret = 0;
	if (!ret) {
		kr->pinned = true;
		kr->current = version;
	}
	pthread_rwlock_unlock(&kr->lock);
	return ret;
}

IDGEN_EXPORT int idgen_keyring_current(const struct idgen_keyring *kr, uint32_t *version)
{
	int ret = 0;

	read_lock(kr);
	if (!kr->n)
		ret = -EKEYREJECTED;
	else
		*version = current(kr);
	read_unlock(kr);
	return ret;
}

/* The functions below up to the exported ones run under the read lock. */

static const struct public_key *find(const struct idgen_keyring *kr, uint32_t version)
{
	size_t i;

	for (i = 0; i < kr->n; i++)
		if (kr->k[i].version == version)
			return &kr->k[i];
	return NULL;
}

static int crypt_id(const struct idgen_keyring *kr, uint32_t version, uint64_t in,
		    bool encrypt, uint64_t *out)
{
	const struct public_key *k = find(kr, version);

	if (!k)
		return -EKEYREJECTED;
	if (in > LIBIDGEN_ID_MAX)
		return -ERANGE;
	return ff1_binary(k->ff1, k->p, k->tweak, sizeof(k->tweak), PUBLIC_BITS, in,
			  encrypt, out);
}

static int format(const struct idgen_keyring *kr, uint32_t version, uint64_t pub,
		  char buf[LIBIDGEN_PUBLIC_STRLEN])
{
	int len = 0;

	if (pub > LIBIDGEN_ID_MAX)
		return -ERANGE;
	if (!find(kr, version))
		return -EKEYREJECTED;
	if (version != current(kr))
		len = snprintf(buf, LIBIDGEN_PUBLIC_STRLEN, "v%u.", version);
	return len + idgen_format_id(pub, buf + len);
}

static int parse(const struct idgen_keyring *kr, const char *s, uint32_t *version,
		 uint64_t *pub)
{
	const char *dot;
	uint64_t v;
	int ret;

	if (!s)
		return -EINVAL;
	if (s[0] == 'v') {
		dot = strchr(s, '.');
		if (!dot)
			return -EINVAL;
		ret = idgen_decimal(s + 1, dot - s - 1, 0, UINT32_MAX, &v);
		if (ret)
			return -EINVAL;
		if (!find(kr, v))
			return -EKEYREJECTED;
		s = dot + 1;
	} else {
		if (!kr->n)
			return -EKEYREJECTED;
		v = current(kr);
	}
	ret = idgen_parse_id(s, pub);
	if (ret)
		return ret;
	*version = v;
	return 0;
}

static int encode(const struct idgen_keyring *kr, uint64_t id,
		  char buf[LIBIDGEN_PUBLIC_STRLEN])
{
	uint64_t pub;
	uint32_t version;
	int ret;

	if (!kr->n)
		return -EKEYREJECTED;
	version = current(kr);
	ret = crypt_id(kr, version, id, true, &pub);
	return ret ? ret : format(kr, version, pub, buf);
}

static int decode(const struct idgen_keyring *kr, const char *s, uint64_t *id)
{
	uint32_t version;
	uint64_t pub;
	int ret = parse(kr, s, &version, &pub);

	return ret ? ret : crypt_id(kr, version, pub, false, id);
}

static ssize_t candidates(const struct idgen_keyring *kr, const char *s,
			  uint64_t *ids, uint32_t *versions, size_t n)
{
	uint32_t version;
	uint64_t pub;
	size_t i, got = 0;
	int ret = parse(kr, s, &version, &pub);

	if (ret)
		return ret;
	if (s[0] == 'v') {
		if (n < 1)
			return -ENOSPC;
		versions[0] = version;
		return crypt_id(kr, version, pub, false, &ids[0]) ?: 1;
	}
	if (n < kr->n)
		return -ENOSPC;
	/* The current version first (the ID a plain decimal means), then the
	 * others newest first. */
	versions[got++] = version;
	for (i = kr->n; i-- > 0;)
		if (kr->k[i].version != version)
			versions[got++] = kr->k[i].version;
	for (i = 0; i < got; i++) {
		ret = crypt_id(kr, versions[i], pub, false, &ids[i]);
		if (ret)
			return ret;
	}
	return got;
}

/* Each exported call holds the read lock once, start to end. */
#define LOCKED(type, call)		\
	do {				\
		type ret_;		\
					\
		read_lock(kr);		\
		ret_ = (call);		\
		read_unlock(kr);	\
		return ret_;		\
	} while (0)

IDGEN_EXPORT int idgen_public_encrypt(const struct idgen_keyring *kr, uint32_t version,
				      uint64_t id, uint64_t *pub)
{
	LOCKED(int, crypt_id(kr, version, id, true, pub));
}

IDGEN_EXPORT int idgen_public_decrypt(const struct idgen_keyring *kr, uint32_t version,
				      uint64_t pub, uint64_t *id)
{
	LOCKED(int, crypt_id(kr, version, pub, false, id));
}

IDGEN_EXPORT int idgen_public_format(const struct idgen_keyring *kr, uint32_t version,
				     uint64_t pub, char buf[LIBIDGEN_PUBLIC_STRLEN])
{
	LOCKED(int, format(kr, version, pub, buf));
}

IDGEN_EXPORT int idgen_public_encode(const struct idgen_keyring *kr, uint64_t id,
				     char buf[LIBIDGEN_PUBLIC_STRLEN])
{
	LOCKED(int, encode(kr, id, buf));
}

IDGEN_EXPORT int idgen_public_parse(const struct idgen_keyring *kr, const char *s,
				    uint32_t *version, uint64_t *pub)
{
	LOCKED(int, parse(kr, s, version, pub));
}

IDGEN_EXPORT int idgen_public_decode(const struct idgen_keyring *kr, const char *s,
				     uint64_t *id)
{
	LOCKED(int, decode(kr, s, id));
}

IDGEN_EXPORT ssize_t idgen_public_candidates(const struct idgen_keyring *kr, const char *s,
					     uint64_t *ids, uint32_t *versions, size_t n)
{
	LOCKED(ssize_t, candidates(kr, s, ids, versions, n));
}

/* Key files ---------------------------------------------------------------- */

static int key_fail(char *err, size_t errlen, int ret, const char *path, const char *fmt, ...)
{
	va_list ap;
	int len;

	if (err && errlen) {
		len = snprintf(err, errlen, "%s: ", path);
		if (len >= 0 && (size_t)len < errlen) {
			va_start(ap, fmt);
			vsnprintf(err + len, errlen - len, fmt, ap);
			va_end(ap);
		}
	}
	return ret;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

IDGEN_EXPORT int idgen_key_parse(const char *text, size_t len, uint32_t *version,
				 uint8_t key[LIBIDGEN_PUBLIC_KEY_BYTES], char *err, size_t errlen)
{
	const char *sp, *hex, *end = text + len;
	size_t hexlen, i;
	uint64_t v;
	int ret;

#define BAD(...) key_fail(err, errlen, -EINVAL, "not a key file", __VA_ARGS__)
	if (len && text[len - 1] == '\n')
		end--;
	if (end > text && end[-1] == '\r')
		return BAD("the line ends in CR LF (a DOS/Windows line ending): want a "
			   "plain newline (dos2unix, or tr -d '\\r')");
	sp = memchr(text, ' ', end - text);
	if (!sp)
		return BAD("want one line '<version> <64 hex digits>'");
	ret = idgen_decimal(text, sp - text, 0, UINT32_MAX, &v);
	if (ret == -ERANGE)
		return BAD("the key version is above 4294967295");
	/* Never the text itself: swapped fields would put the key in a log. */
	if (ret)
		return BAD("the key version (the first field, %zu character%s) is not "
			   "a decimal number", (size_t)(sp - text), sp - text == 1 ? "" : "s");
	hex = sp + 1;
	hexlen = end - hex;
	for (i = 0; i < hexlen; i++)
		if (hex_value(hex[i]) < 0)
			return BAD("the key has a character that is not a hex digit at column %zu",
				   (size_t)(hex - text) + i + 1);
	if (hexlen != 2 * LIBIDGEN_PUBLIC_KEY_BYTES)
		return BAD("the key is %zu hex digits, want 64 (32 bytes, AES-256)", hexlen);
#undef BAD
	for (i = 0; i < LIBIDGEN_PUBLIC_KEY_BYTES; i++)
		key[i] = hex_value(hex[2 * i]) << 4 | hex_value(hex[2 * i + 1]);
	*version = v;
	return 0;
}

IDGEN_EXPORT int idgen_keyring_load(struct idgen_keyring *kr, const char *path,
				    char *err, size_t errlen)
{
	char text[KEY_FILE_MAX + 1], sub[160];
	uint8_t key[LIBIDGEN_PUBLIC_KEY_BYTES];
	uint32_t version;
	struct stat st;
	size_t len = 0;
	ssize_t r = 0;
	int fd, ret;

	/* O_NONBLOCK: a FIFO at path must not hang the open; it is refused below. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		return key_fail(err, errlen, ret, path, "%s", strerror(-ret));
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return key_fail(err, errlen, ret, path, "%s", strerror(-ret));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return key_fail(err, errlen, -EINVAL, path, "not a regular file");
	}
	/*
	 * As ssh does for its keys: whoever else could write the file could
	 * plant a key of their own, so only this user or root owns it and
	 * only the owner writes it; and only the owner reads it, but for a
	 * credential systemd gave the service (idgen_systemd_credential()).
	 */
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		close(fd);
		return key_fail(err, errlen, -EACCES, path,
				"owned by uid %u, neither this user (uid %u) nor root: a key "
				"file must belong to the user that loads it or to root",
				(unsigned int)st.st_uid, (unsigned int)geteuid());
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		close(fd);
		return key_fail(err, errlen, -EACCES, path,
				"writable by group or others (mode %04o): a key file must be "
				"mode 0600 (chmod 600 %s)", (unsigned int)(st.st_mode & 07777), path);
	}
	if (st.st_mode & (S_IRGRP | S_IROTH) && !idgen_systemd_credential(path, &st)) {
		close(fd);
		return key_fail(err, errlen, -EACCES, path,
				"readable by group or others (mode %04o): a key file must be "
				"mode 0600 (chmod 600 %s)", (unsigned int)(st.st_mode & 07777), path);
	}
	while (len <= KEY_FILE_MAX) {
		r = read(fd, text + len, KEY_FILE_MAX + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += r;
	}
	ret = r < 0 ? -errno : 0;
	close(fd);
	if (ret) {
		OPENSSL_cleanse(text, sizeof(text));
		return key_fail(err, errlen, ret, path, "%s", strerror(-ret));
	}
	if (len > KEY_FILE_MAX || memchr(text, '\0', len) ||
	    (memchr(text, '\n', len) && memchr(text, '\n', len) != text + len - 1)) {
		OPENSSL_cleanse(text, sizeof(text));
		return key_fail(err, errlen, -EINVAL, path,
				"not a key file: want one line '<version> <64 hex digits>'");
	}
	ret = idgen_key_parse(text, len, &version, key, sub, sizeof(sub));
	OPENSSL_cleanse(text, sizeof(text));
	if (ret)
		return key_fail(err, errlen, ret, path, "%s", sub);
	ret = idgen_keyring_add(kr, version, key);
	OPENSSL_cleanse(key, sizeof(key));
	if (ret == -EEXIST)
		return key_fail(err, errlen, ret, path, "key version %u is loaded already", version);
	if (ret == -E2BIG)
		return key_fail(err, errlen, ret, path, "more than %d key versions",
				LIBIDGEN_KEYRING_MAX);
	if (ret)
		return key_fail(err, errlen, ret, path, "%s", strerror(-ret));
	return 0;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * FF1, the format-preserving cipher of NIST SP 800-38G (Rev. 1), over AES
 * from libcrypto's EVP interface: any radix 2..36, numeral strings from
 * the standard's minimum length (radix^minlen >= 1000000) up to
 * LIBIDGEN_FF1_MAXLEN.
 *
 * Numbers are kept as big-endian byte strings and numeral strings as
 * digit arrays; the only arithmetic needed is "times radix plus digit"
 * (NUM_radix) and "divide by radix" (the low m digits of y), so no bignum
 * library is needed.  ff1_binary() is the same algorithm for radix 2 and
 * at most 64 numerals in a uint64_t, which the public IDs use; the unit
 * tests hold it to the generic code.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "ff1.h"
#include "internal.h"

#define FF1_ROUNDS	10

struct idgen_ff1 {
	/*
	 * ctx is used under lock.  A caller that finds it taken sets up a
	 * context of its own from the key instead (a key schedule, about a
	 * hundred nanoseconds), touching nothing another thread writes, so
	 * threads never wait on each other's AES calls.  Copying ctx would
	 * read it while its holder encrypts with it, which libcrypto does
	 * not promise to be safe.
	 */
	pthread_mutex_t lock;
	EVP_CIPHER_CTX *ctx;
	const EVP_CIPHER *cipher;
	uint8_t key[32];	/* keylen bytes of it; for the busy path */
	unsigned int radix;
	size_t minlen;
};

/* The AES context one FF1 operation uses: the shared one, or its own. */
struct aes {
	const struct idgen_ff1 *f;
	EVP_CIPHER_CTX *ctx;
};

static int aes_begin(const struct idgen_ff1 *f, struct aes *a)
{
	/* The lock is the object's own mutable state, not its key. */
	pthread_mutex_t *lock = (pthread_mutex_t *)&f->lock;

	a->f = f;
	if (!pthread_mutex_trylock(lock)) {
		a->ctx = f->ctx;
		return 0;
	}
	a->ctx = EVP_CIPHER_CTX_new();
	if (!a->ctx)
		return -ENOMEM;
	if (!EVP_EncryptInit_ex(a->ctx, f->cipher, NULL, f->key, NULL) ||
	    !EVP_CIPHER_CTX_set_padding(a->ctx, 0)) {
		EVP_CIPHER_CTX_free(a->ctx);
		return -EIO;
	}
	return 0;
}

static void aes_end(struct aes *a)
{
	if (a->ctx == a->f->ctx)
		pthread_mutex_unlock((pthread_mutex_t *)&a->f->lock);
	else
		EVP_CIPHER_CTX_free(a->ctx);
}

static int aes(struct aes *a, const uint8_t in[16], uint8_t out[16])
{
	int len;

	if (!EVP_EncryptUpdate(a->ctx, out, &len, in, 16) || len != 16)
		return -EIO;
	return 0;
}

int ff1_aes_block(const struct idgen_ff1 *f, const uint8_t in[16], uint8_t out[16])
{
	struct aes a;
	int ret = aes_begin(f, &a);

	if (ret)
		return ret;
	ret = aes(&a, in, out);
	aes_end(&a);
	return ret;
}

IDGEN_EXPORT int idgen_ff1_new(const uint8_t *key, size_t keylen, unsigned int radix,
			       struct idgen_ff1 **out)
{
	const EVP_CIPHER *cipher;
	struct idgen_ff1 *f;
	uint64_t span = 1;

	switch (keylen) {
	case 16:
		cipher = EVP_aes_128_ecb();
		break;
	case 24:
		cipher = EVP_aes_192_ecb();
		break;
	case 32:
		cipher = EVP_aes_256_ecb();
		break;
	default:
		return -EINVAL;
	}
	if (radix < LIBIDGEN_FF1_RADIX_MIN || radix > LIBIDGEN_FF1_RADIX_MAX)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->radix = radix;
	f->cipher = cipher;
	memcpy(f->key, key, keylen);
	/* SP 800-38G Rev. 1: radix^minlen >= 1000000. */
	while (span < 1000000) {
		span *= radix;
		f->minlen++;
	}
	f->ctx = EVP_CIPHER_CTX_new();
	if (!f->ctx) {
		OPENSSL_cleanse(f->key, sizeof(f->key));
		free(f);
		return -ENOMEM;
	}
	/* ECB over single blocks is the bare cipher CIPH_K of the standard. */
	if (!EVP_EncryptInit_ex(f->ctx, cipher, NULL, key, NULL) ||
	    !EVP_CIPHER_CTX_set_padding(f->ctx, 0)) {
		EVP_CIPHER_CTX_free(f->ctx);
		OPENSSL_cleanse(f->key, sizeof(f->key));
		free(f);
		return -EIO;
	}
	pthread_mutex_init(&f->lock, NULL);
	*out = f;
	return 0;
}

IDGEN_EXPORT void idgen_ff1_free(struct idgen_ff1 *f)
{
	if (!f)
		return;
	/* EVP_CIPHER_CTX_free() cleanses the key schedule. */
	EVP_CIPHER_CTX_free(f->ctx);
	OPENSSL_cleanse(f->key, sizeof(f->key));
	pthread_mutex_destroy(&f->lock);
	free(f);
}

IDGEN_EXPORT size_t idgen_ff1_minlen(const struct idgen_ff1 *f)
{
	return f->minlen;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* P = [1] [2] [1] [radix]^3 [10] [u mod 256] [n]^4 [t]^4, enciphered. */
static int p_block(struct aes *a, unsigned int radix, size_t n, size_t t, uint8_t out[16])
{
	uint8_t p[16] = { 1, 2, 1, radix >> 16, radix >> 8, radix, 10, (n / 2) & 0xff };

	put_be32(p + 8, n);
	put_be32(p + 12, t);
	return aes(a, p, out);
}

int ff1_p_block(const struct idgen_ff1 *f, size_t n, size_t t, uint8_t out[16])
{
	struct aes a;
	int ret = aes_begin(f, &a);

	if (ret)
		return ret;
	ret = p_block(&a, f->radix, n, t, out);
	aes_end(&a);
	return ret;
}

/* x = x * mul + add over a big-endian byte string; returns the carry out. */
static unsigned int bytes_mul_add(uint8_t *x, size_t len, unsigned int mul, unsigned int add)
{
	unsigned int carry = add;
	size_t j;

	for (j = len; j-- > 0;) {
		carry += x[j] * mul;
		x[j] = carry & 0xff;
		carry >>= 8;
	}
	return carry;
}

/* x = x / div over a big-endian byte string; returns the remainder. */
static unsigned int bytes_divmod(uint8_t *x, size_t len, unsigned int div)
{
	unsigned int rem = 0;
	size_t j;

	for (j = 0; j < len; j++) {
		rem = rem << 8 | x[j];
		x[j] = rem / div;
		rem %= div;
	}
	return rem;
}

/*
 * b = ceil(ceil(v * log2(radix)) / 8), exactly: ceil(v * log2(radix)) is
 * the least k with 2^k >= radix^v, the bit length of radix^v - 1.
 */
static size_t ff1_b(unsigned int radix, size_t v, uint8_t *scratch, size_t len)
{
	size_t i, j, bits;

	memset(scratch, 0, len);
	scratch[len - 1] = 1;
	for (i = 0; i < v; i++)
		bytes_mul_add(scratch, len, radix, 0);
	/* minus 1: radix^v >= 2, so the borrow stops inside. */
	for (j = len; j-- > 0 && scratch[j]-- == 0;)
		;
	for (j = 0; j < len && !scratch[j]; j++)
		;
	if (j == len)
		return 0;
	bits = (len - j - 1) * 8;
	for (i = scratch[j]; i; i >>= 1)
		bits++;
	return (bits + 7) / 8;
}

/*
 * One round's y, reduced mod radix^m and given as its m low base-radix
 * digits, least significant first: PRF(P || Q) extended to d bytes (S),
 * then divided by the radix m times.
 */
static int round_y(struct aes *a, const uint8_t pblock[16], const uint8_t *q, size_t qlen,
		   size_t d, uint8_t *s, unsigned int radix, size_t m, uint8_t *ydig)
{
	uint8_t r[16], blk[16];
	size_t i, j;
	int ret;

	memcpy(r, pblock, 16);
	for (i = 0; i < qlen; i += 16) {
		for (j = 0; j < 16; j++)
			blk[j] = r[j] ^ q[i + j];
		ret = aes(a, blk, r);
		if (ret)
			return ret;
	}
	memcpy(s, r, 16);
	for (i = 1; i * 16 < d; i++) {
		/* R xor [i]^16 */
		memcpy(blk, r, 16);
		for (j = 0; j < 8; j++)
			blk[15 - j] ^= (uint8_t)((uint64_t)i >> (8 * j));
		ret = aes(a, blk, s + 16 * i);
		if (ret)
			return ret;
	}
	for (i = 0; i < m; i++)
		ydig[i] = bytes_divmod(s, d, radix);
	return 0;
}

static int ff1_crypt(const struct idgen_ff1 *f, const uint8_t *tweak, size_t t,
		     const uint8_t *x, uint8_t *y, size_t n, bool encrypt)
{
	size_t u = n / 2, v = n - u, b, d, pad, qlen, m, k, bufsz, powlen, la, lb;
	unsigned int radix, sum;
	uint8_t pblock[16], *mem, *q, *s, *ydig, *buf[3], *numb;
	struct aes a;
	int i, ret, round;

	if (!f || (!tweak && t) || !x || !y)
		return -EINVAL;
	radix = f->radix;
	if (n < f->minlen || n < 2 || n > LIBIDGEN_FF1_MAXLEN || t > LIBIDGEN_FF1_TWEAK_MAX)
		return -ERANGE;
	for (k = 0; k < n; k++)
		if (x[k] >= radix)
			return -EINVAL;

	powlen = v + 2;		/* radix^v < 256^(v+1) */
	mem = malloc(powlen);
	if (!mem)
		return -ENOMEM;
	b = ff1_b(radix, v, mem, powlen);
	free(mem);
	d = 4 * ((b + 3) / 4) + 4;
	pad = (16 - (t + b + 1) % 16) % 16;
	qlen = t + pad + 1 + b;
	/* q, s (d rounded up to blocks), ydig (v), three numeral buffers (v). */
	bufsz = qlen + (d + 15) / 16 * 16 + 4 * v;
	mem = calloc(1, bufsz);
	if (!mem)
		return -ENOMEM;
	q = mem;
	s = q + qlen;
	ydig = s + (d + 15) / 16 * 16;
	buf[0] = ydig + v;
	buf[1] = buf[0] + v;
	buf[2] = buf[1] + v;
	if (t)
		memcpy(q, tweak, t);
	numb = q + t + pad + 1;

	/* Encrypt: A = X[..u], B = X[u..]; decrypt: the same split of Y. */
	memcpy(buf[0], x, u);
	memcpy(buf[1], x + u, v);
	la = u;
	lb = v;

	ret = aes_begin(f, &a);
	if (ret)
		goto out;
	ret = p_block(&a, radix, n, t, pblock);
	for (round = 0; !ret && round < FF1_ROUNDS; round++) {
		uint8_t *A = buf[0], *B = buf[1], *C = buf[2];
		const uint8_t *src;

		i = encrypt ? round : FF1_ROUNDS - 1 - round;
		m = i % 2 ? v : u;
		/* Q = T || 0^pad || [i] || [NUM_radix(B or A)]^b */
		q[t + pad] = i;
		memset(numb, 0, b);
		src = encrypt ? B : A;
		for (k = 0; k < (encrypt ? lb : la); k++)
			bytes_mul_add(numb, b, radix, src[k]);
		ret = round_y(&a, pblock, q, qlen, d, s, radix, m, ydig);
		if (ret)
			break;
		/* C = STR^m_radix((NUM(A) + y) mod radix^m), or (NUM(B) - y). */
		src = encrypt ? A : B;
		sum = 0;
		for (k = 0; k < m; k++) {
			unsigned int digit = src[m - 1 - k];

			if (encrypt) {
				sum += digit + ydig[k];
				C[m - 1 - k] = sum % radix;
				sum /= radix;
			} else {
				int diff = (int)digit - ydig[k] - (int)sum;

				sum = diff < 0;
				C[m - 1 - k] = diff < 0 ? diff + (int)radix : diff;
			}
		}
		if (encrypt) {
			buf[0] = B, la = lb;
			buf[1] = C, lb = m;
		} else {
			buf[1] = A, lb = la;
			buf[0] = C, la = m;
		}
		buf[2] = encrypt ? A : B;
	}
	aes_end(&a);
	if (!ret) {
		memcpy(y, buf[0], la);
		memcpy(y + la, buf[1], lb);
	}
out:
	OPENSSL_cleanse(mem, bufsz);
	free(mem);
	return ret;
}

IDGEN_EXPORT int idgen_ff1_encrypt(const struct idgen_ff1 *f, const uint8_t *tweak,
				   size_t tlen, const uint8_t *x, uint8_t *y, size_t n)
{
	return ff1_crypt(f, tweak, tlen, x, y, n, true);
}

IDGEN_EXPORT int idgen_ff1_decrypt(const struct idgen_ff1 *f, const uint8_t *tweak,
				   size_t tlen, const uint8_t *x, uint8_t *y, size_t n)
{
	return ff1_crypt(f, tweak, tlen, x, y, n, false);
}

/*
 * Radix 2, n <= 64: A and B are plain integers (NUM_2 is the identity),
 * b <= 4 and d == 8, so y mod 2^m is the low m bits of S's 8 bytes.  The
 * tweak must leave Q within 64 bytes.
 */
int ff1_binary(const struct idgen_ff1 *f, const uint8_t p[16], const uint8_t *tweak,
	       size_t tlen, unsigned int n, uint64_t x, bool encrypt, uint64_t *out)
{
	unsigned int u = n / 2, v = n - u, b = (v + 7) / 8, pad, qlen, i, j, k, m;
	uint64_t A, B, y, mask_u, mask_v;
	uint8_t q[64], r[16], blk[16];
	struct aes a;
	int round, ret;

	if (f->radix != 2 || n < 20 || n > 64)
		return -EINVAL;
	pad = (16 - (tlen + b + 1) % 16) % 16;
	qlen = tlen + pad + 1 + b;
	if (qlen > sizeof(q))
		return -ERANGE;
	memset(q, 0, qlen);
	if (tlen)
		memcpy(q, tweak, tlen);
	mask_u = (1ULL << u) - 1;
	mask_v = (1ULL << v) - 1;	/* v <= 32 */
	A = x >> v & mask_u;
	B = x & mask_v;
	ret = aes_begin(f, &a);
	if (ret)
		return ret;
	for (round = 0; round < FF1_ROUNDS; round++) {
		uint64_t num = encrypt ? B : A;

		i = encrypt ? round : FF1_ROUNDS - 1 - round;
		m = i % 2 ? v : u;
		q[tlen + pad] = i;
		for (k = 0; k < b; k++)
			q[qlen - 1 - k] = num >> (8 * k);
		memcpy(r, p, 16);
		for (j = 0; j < qlen; j += 16) {
			for (k = 0; k < 16; k++)
				blk[k] = r[k] ^ q[j + k];
			ret = aes(&a, blk, r);
			if (ret)
				goto out;
		}
		y = 0;
		for (k = 0; k < 8; k++)
			y = y << 8 | r[k];
		y &= (1ULL << m) - 1;
		if (encrypt) {
			uint64_t c = (A + y) & ((1ULL << m) - 1);

			A = B;
			B = c;
		} else {
			uint64_t c = (B - y) & ((1ULL << m) - 1);

			B = A;
			A = c;
		}
	}
	*out = A << v | B;
out:
	aes_end(&a);
	OPENSSL_cleanse(r, sizeof(r));
	return ret;
}

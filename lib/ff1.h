/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * FF1's insides that public.c shares with ff1.c: the AES block cipher
 * behind a struct idgen_ff1, and FF1 on binary numeral strings of up to 64
 * bits, kept in a uint64_t (the public ID's case, without the generic
 * code's digit arrays).  Not part of the library's ABI.
 */
#ifndef LIBIDGEN_FF1_H
#define LIBIDGEN_FF1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idgen.h"

/* CIPH_K(in) for one 16-byte block; 0 or -EIO (libcrypto failed). */
int ff1_aes_block(const struct idgen_ff1 *f, const uint8_t in[16], uint8_t out[16]);

/*
 * CIPH_K(P), the PRF's first block, which depends only on the radix, the
 * lengths n and t; callers that use one n and t all the time compute it
 * once.
 */
int ff1_p_block(const struct idgen_ff1 *f, size_t n, size_t t, uint8_t out[16]);

/*
 * FF1 over radix 2 for 20 <= n <= 64: x holds the numeral string, most
 * significant numeral first, in its low n bits.  p is ff1_p_block(f, n,
 * tlen).  The radix of f must be 2.  0 or -EIO.
 */
int ff1_binary(const struct idgen_ff1 *f, const uint8_t p[16], const uint8_t *tweak,
	       size_t tlen, unsigned int n, uint64_t x, bool encrypt, uint64_t *out);

#endif /* LIBIDGEN_FF1_H */

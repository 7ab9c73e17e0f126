/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one decimal parser of idgen's user space: libidgen, idgenctl and
 * idgend all read numbers with it, so an ID, a flag, a configuration key,
 * an etcd revision and the state file follow one rule.  Not part of the
 * library's ABI: built with hidden visibility into libidgen.a and the
 * programs that link decimal.c.
 *
 * The rule: one or more ASCII digits and nothing else (no sign, no
 * whitespace, no NUL, no "0x"), no leading zero unless the number is "0"
 * (a number has one spelling), and the value within [min, max].
 */
#ifndef LIBIDGEN_DECIMAL_H
#define LIBIDGEN_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/*
 * The len bytes at s as a decimal number from min to max.  0 with *out
 * set; -EINVAL when the bytes are not a decimal number as above; -ERANGE
 * when they are, but the value is below min or above max (however many
 * digits).  *out is untouched on failure.
 */
int idgen_decimal(const char *s, size_t len, uint64_t min, uint64_t max,
		  uint64_t *out);

/* The same for a NUL-terminated string. */
int idgen_decimal_str(const char *s, uint64_t min, uint64_t max,
		      uint64_t *out);

#endif /* LIBIDGEN_DECIMAL_H */

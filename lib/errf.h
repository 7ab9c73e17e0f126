/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one writer of an error buffer, for the functions that take
 * (char *err, size_t errlen) to say why they failed: libidgen.a's and
 * the programs' that link it.  Not part of the library's ABI: built with
 * hidden visibility into libidgen.a.
 */
#ifndef LIBIDGEN_ERRF_H
#define LIBIDGEN_ERRF_H

#include <stddef.h>

/* fmt into err, cut to errlen; nothing when err is NULL or errlen 0. */
void idgen_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* LIBIDGEN_ERRF_H */

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the library's files share.  Everything is built with
 * -fvisibility=hidden: only functions marked IDGEN_EXPORT are in the
 * shared library's ABI (and libidgen.map versions them).
 */
#ifndef LIBIDGEN_INTERNAL_H
#define LIBIDGEN_INTERNAL_H

#include "idgen.h"

#define IDGEN_EXPORT	__attribute__((visibility("default")))

#define LIBIDGEN_REGION_BITS_MAX	8
#define LIBIDGEN_SEQ_BITS_MIN		6

#endif /* LIBIDGEN_INTERNAL_H */

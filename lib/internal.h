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

/*
 * A generator (generator.c): the device's descriptor or a simulation,
 * never both.  A buffer holds a copy, borrowed: its name NULL, closed by
 * its owner alone.
 */
struct idgen_generator {
	int fd;			/* the device's, or -1 ... */
	struct idgen_sim *sim;	/* ... for a simulation's */
	char *name;		/* malloc'd: the path, "sim:WORKER" or "sim:FILE" */
};

#endif /* LIBIDGEN_INTERNAL_H */

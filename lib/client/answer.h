/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libidgen-client's check of an answer of POST /v1/ids:next (answer.c).
 * Not part of the ABI: hidden like everything but idgen_client_*, and
 * named idgen_ so that a static link meets no clash.
 */
#ifndef LIBIDGEN_CLIENT_ANSWER_H
#define LIBIDGEN_CLIENT_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "idgen.h"

/*
 * The len bytes at body, a 200 answer to {"count":want}: NULL when good,
 * with ids[0..want) filled; else what is wrong, e.g. "IDs not strictly
 * increasing" (ids may then hold some of them).  layouts: the fleet's
 * table (NULL: version 1 alone), for layout_version.
 */
const char *idgen_answer_check(const struct idgen_layouts *layouts, const char *body,
				size_t len, unsigned int want, uint64_t *ids);

#endif /* LIBIDGEN_CLIENT_ANSWER_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Strict parsing of command-line values: plain decimal by libidgen's one
 * rule (lib/decimal.h: digits only, no sign, no spaces, no leading zeros,
 * no overflow).  On failure each reports
 * "idgenctl: invalid <name> '<arg>': <why>" on stderr and returns false.
 */
#ifndef IDGENCTL_ARGS_H
#define IDGENCTL_ARGS_H

#include <stdbool.h>
#include <stdint.h>

bool parse_u64(const char *name, const char *arg, uint64_t min, uint64_t max,
	       uint64_t *out);
bool parse_u32(const char *name, const char *arg, uint32_t *out);

/*
 * "R/W/S" layout widths: 0/0/0 (the module's default), or widths by
 * libidgen's rule (idgen_widths_parse()).
 */
struct idgen_layout;
bool parse_layout(const char *name, const char *arg, struct idgen_layout *out);

#endif /* IDGENCTL_ARGS_H */

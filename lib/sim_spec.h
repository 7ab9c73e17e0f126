/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one reading of a simulated generator's spec (idgen.h,
 * idgen_sim_open()): "sim" and "sim:WORKER" name a node of its own,
 * "sim:FILE" (anything after "sim:" but a number) the lease side of a
 * host kept in FILE, and anything else is no simulation (a device's
 * path).  idgen_sim_open(), idgen_sim_is_spec() and idgen_generator_open()
 * read it; the programs name the forms they serve in the generator's
 * flags, never reading a spec themselves.  Not part of the library's
 * ABI: built with hidden visibility into libidgen.a (sim_test.c tests it).
 */
#ifndef LIBIDGEN_SIM_SPEC_H
#define LIBIDGEN_SIM_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A simulated node is of layout version 1: worker 0 to 127. */
#define IDGEN_SIM_WORKER_BITS	7

enum idgen_sim_kind {
	IDGEN_SIM_NONE,			/* not a simulation */
	IDGEN_SIM_WORKER,		/* "sim" or "sim:WORKER" */
	IDGEN_SIM_FILE,			/* "sim:FILE" */
};

struct idgen_sim_spec {
	enum idgen_sim_kind kind;
	bool worker_named;		/* "sim:WORKER", not "sim" alone */
	uint32_t worker;		/* IDGEN_SIM_WORKER: 0 for "sim" */
	const char *file;		/* IDGEN_SIM_FILE: in the spec */
};

/*
 * What spec names: 0 with *out, or -EINVAL with err (when not NULL)
 * saying what is wrong: "sim:" with nothing after it, or a WORKER that is
 * not a decimal from 0 to 127 (lib/decimal.h's rule: no sign, no leading
 * zero).  spec NULL is no simulation.
 */
int idgen_sim_spec_parse(const char *spec, struct idgen_sim_spec *out,
			 char *err, size_t errlen);

#endif /* LIBIDGEN_SIM_SPEC_H */

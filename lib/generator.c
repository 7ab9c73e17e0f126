// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A generator (idgen.h, struct idgen_generator): idgen's device or the
 * simulation behind one set of calls.  The one place that tells the two
 * apart: every program that mints or leases, and the buffer, go through
 * these calls, so that a rule of either backend (the device's
 * verification, the simulation's forms) is kept once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sim_spec.h"

#define GENERATOR_FORMS	(LIBIDGEN_GENERATOR_SIM | LIBIDGEN_GENERATOR_SIM_WORKER | \
			 LIBIDGEN_GENERATOR_SIM_FILE)

static void say(char *err, size_t errlen, const char *fmt, const char *arg)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, arg);
}

/*
 * Whether the caller takes the form spec names; -EPROTONOSUPPORT with err
 * saying what it takes instead when not.
 */
static int form_taken(const struct idgen_sim_spec *p, unsigned int flags,
		      char *err, size_t errlen)
{
	bool node_taken = flags & (LIBIDGEN_GENERATOR_SIM | LIBIDGEN_GENERATOR_SIM_WORKER);

	switch (p->kind) {
	case IDGEN_SIM_NONE:
		return 0;
	case IDGEN_SIM_WORKER:
		if (flags & (p->worker_named ? LIBIDGEN_GENERATOR_SIM_WORKER :
			     LIBIDGEN_GENERATOR_SIM))
			return 0;
		if (flags & LIBIDGEN_GENERATOR_SIM_FILE)
			say(err, errlen, "%s", "a simulation's lease side is taken here, "
			    "sim:FILE, not a node of its own (sim or sim:WORKER; a file "
			    "named by digits is sim:./FILE)");
		else if (flags & LIBIDGEN_GENERATOR_SIM_WORKER)
			say(err, errlen, "a simulated node is named by its worker here: "
			    "sim:WORKER, from 0 to %s", "127");
		else
			say(err, errlen, "%s", "no simulated generator is taken here: "
			    "give the device's path");
		return -EPROTONOSUPPORT;
	case IDGEN_SIM_FILE:
		if (flags & LIBIDGEN_GENERATOR_SIM_FILE)
			return 0;
		/* After "sim:", anything but a number is a file: a worker mistyped. */
		if (node_taken)
			say(err, errlen, "the simulation's worker must be a decimal "
			    "number from 0 to %s", "127");
		else
			say(err, errlen, "%s", "no simulated generator is taken here: "
			    "give the device's path");
		return -EPROTONOSUPPORT;
	}
	return -EINVAL;
}

/* The device, only idgen's: told by what it is, never by its path. */
static int open_device(struct idgen_generator *g, const char *path,
		       char *err, size_t errlen)
{
	const char *what;
	int fd;

	fd = idgen_open(path, LIBIDGEN_VERIFY);
	if (fd >= 0) {
		g->fd = fd;
		return 0;
	}
	if (fd == -ENOTTY)
		say(err, errlen, "%s", "not an idgen device (not idgen's character "
		    "device, or no answer to its state request)");
	else if (fd == -EIO)
		say(err, errlen, "%s", "not an idgen device (its state is one no "
		    "idgen module reports)");
	else {
		what = idgen_strerror(fd);
		say(err, errlen, "%s", what ? what : strerror(-fd));
	}
	return fd;
}

IDGEN_EXPORT int idgen_generator_open(const char *spec, unsigned int flags,
				      uint64_t sim_lease_ms,
				      struct idgen_generator **out,
				      char *err, size_t errlen)
{
	struct idgen_generator *g;
	struct idgen_sim_spec p;
	char name[32];
	int ret;

	if (flags & ~GENERATOR_FORMS)
		return -EINVAL;
	ret = idgen_sim_spec_parse(spec, &p, err, errlen);
	if (ret)
		return ret;
	ret = form_taken(&p, flags, err, errlen);
	if (ret)
		return ret;
	g = calloc(1, sizeof(*g));
	if (!g) {
		say(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	g->fd = -1;
	if (p.kind == IDGEN_SIM_NONE) {
		ret = open_device(g, spec, err, errlen);
		spec = spec ? spec : LIBIDGEN_DEVICE;
	} else {
		/* The file form has no lease from open: sim_lease_ms is the node's. */
		ret = idgen_sim_open(spec, p.kind == IDGEN_SIM_WORKER ? sim_lease_ms : 0,
				     &g->sim, err, errlen);
		if (p.kind == IDGEN_SIM_WORKER) {
			snprintf(name, sizeof(name), "sim:%" PRIu32, p.worker);
			spec = name;
		}
	}
	if (!ret) {
		g->name = strdup(spec);
		if (!g->name) {
			say(err, errlen, "%s", strerror(ENOMEM));
			ret = -ENOMEM;
		}
	}
	if (ret) {
		idgen_generator_close(g);
		return ret;
	}
	*out = g;
	return 0;
}

IDGEN_EXPORT void idgen_generator_close(struct idgen_generator *g)
{
	if (!g)
		return;
	if (g->fd >= 0)
		idgen_close(g->fd);
	idgen_sim_close(g->sim);
	free(g->name);
	free(g);
}

IDGEN_EXPORT int idgen_generator_simulated(const struct idgen_generator *g)
{
	return g->sim != NULL;
}

IDGEN_EXPORT const char *idgen_generator_name(const struct idgen_generator *g)
{
	return g->name;
}

IDGEN_EXPORT ssize_t idgen_generator_mint(struct idgen_generator *g, uint64_t *ids,
					  size_t n)
{
	if (g->sim)
		return idgen_sim_mint(g->sim, ids, n);
	return idgen_mint(g->fd, ids, n);
}

IDGEN_EXPORT int idgen_generator_get_state(struct idgen_generator *g,
					   struct idgen_device_state *out)
{
	if (g->sim)
		return idgen_sim_get_state(g->sim, out);
	return idgen_device_get_state(g->fd, out);
}

IDGEN_EXPORT int idgen_generator_layout(struct idgen_generator *g,
					struct idgen_layout *out)
{
	struct idgen_device_state st;
	int ret;

	if (!g->sim)
		return idgen_device_layout(g->fd, out);
	/* The simulation's state carries its widths as the module's does. */
	ret = idgen_sim_get_state(g->sim, &st);
	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->region_bits = st.region_bits;
	out->worker_bits = st.worker_bits;
	out->seq_bits = st.seq_bits;
	return 0;
}

IDGEN_EXPORT int idgen_generator_set_lease(struct idgen_generator *g, uint32_t region,
					   uint32_t worker, uint64_t floor_ms,
					   uint64_t valid_until_ms,
					   const struct idgen_layout *layout,
					   unsigned int flags)
{
	if (g->sim)
		return idgen_sim_set_lease(g->sim, region, worker, floor_ms,
					   valid_until_ms, layout, flags);
	return idgen_device_set_lease(g->fd, region, worker, floor_ms,
				      valid_until_ms, layout, flags);
}

IDGEN_EXPORT int idgen_generator_revoke(struct idgen_generator *g, uint64_t *last_ms)
{
	if (g->sim)
		return idgen_sim_revoke(g->sim, last_ms);
	return idgen_device_revoke(g->fd, last_ms);
}

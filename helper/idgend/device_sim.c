// SPDX-License-Identifier: GPL-2.0
/*
 * The simulated generator (device_sim.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/idgen.h>

#include "wall_clock.h"
#include "device_sim.h"
#include "log.h"

/* The load-time layout, as the module's default: version 1. */
#define SIM_REGION_BITS	IDGEN_V1_REGION_BITS
#define SIM_WORKER_BITS	IDGEN_V1_WORKER_BITS
#define SIM_SEQ_BITS	IDGEN_V1_SEQ_BITS

struct sim {
	char *file;
	char *tmp;
	char *log;
	struct lease_layout push_layout;	/* what this daemon pushes */
	struct idgen_device_state h;
};

/* The host's wall clock, as idgend's clock reads it. */
static uint64_t sim_now(void)
{
	return system_clock_ops.now_ms(NULL);
}

/* Everything below the fence and up to now counts as minted. */
static void sim_advance(struct sim *s)
{
	uint64_t now = sim_now(), top;

	if (!device_leased(&s->h) || now <= s->h.floor_ms)
		return;
	top = now < s->h.valid_until_ms ? now : s->h.valid_until_ms - 1;
	if (top > s->h.last_ms)
		s->h.last_ms = top;
}

static void sim_default_layout(struct sim *s)
{
	s->h.region_bits = SIM_REGION_BITS;
	s->h.worker_bits = SIM_WORKER_BITS;
	s->h.seq_bits = SIM_SEQ_BITS;
}

static int sim_load(struct sim *s)
{
	unsigned int leased, rb, wb, sb;
	FILE *f;
	int n;

	memset(&s->h, 0, sizeof(s->h));
	sim_default_layout(s);
	f = fopen(s->file, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	n = fscanf(f, "%u %" SCNu32 " %" SCNu32 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %u %u %u", &leased, &s->h.region, &s->h.worker,
		   &s->h.floor_ms, &s->h.valid_until_ms, &s->h.last_ms, &rb, &wb,
		   &sb);
	fclose(f);
	/* A layout the module would not take is not one it holds. */
	if (n != 9 || !idgen_widths_valid(rb, wb, sb))
		return -EIO;
	if (leased)
		s->h.flags |= LIBIDGEN_STATE_LEASED;
	s->h.region_bits = rb;
	s->h.worker_bits = wb;
	s->h.seq_bits = sb;
	return 0;
}

static int sim_store(struct sim *s)
{
	FILE *f = fopen(s->tmp, "w");

	if (!f)
		return -errno;
	fprintf(f, "%u %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64
		" %u %u %u\n", (unsigned int)device_leased(&s->h), s->h.region, s->h.worker,
		s->h.floor_ms, s->h.valid_until_ms, s->h.last_ms,
		s->h.region_bits, s->h.worker_bits, s->h.seq_bits);
	if (fclose(f) || rename(s->tmp, s->file))
		return -errno;
	return 0;
}

static void sim_log(struct sim *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sim_log(struct sim *s, const char *fmt, ...)
{
	FILE *f = fopen(s->log, "a");
	va_list ap;

	if (!f)
		return;
	fprintf(f, "%" PRIu64 " ", sim_now());
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/*
 * A lease that could never mint, its first ms @first_ms at or past its
 * fence, is refused as the module refuses it (uapi IDGEN_IOC_SET_LEASE):
 * EOVERFLOW when the time field ends first, EKEYEXPIRED otherwise.
 */
static int sim_never_mints(uint64_t first_ms)
{
	return first_ms > IDGEN_MS_MAX ? -EOVERFLOW : -EKEYEXPIRED;
}

static int sim_push(void *ctx, uint32_t region, uint32_t worker,
		    uint64_t floor_ms, uint64_t valid_until_ms, bool synced)
{
	struct sim *s = ctx;
	const struct lease_layout *lay = &s->push_layout;
	uint64_t now = sim_now(), first_ms;
	bool renewal = false;
	int err;

	(void)synced;
	err = sim_load(s);
	if (err)
		return err;
	sim_advance(s);
	if (region >= 1U << lay->region_bits || worker >= 1U << lay->worker_bits ||
	    floor_ms >= valid_until_ms || valid_until_ms > IDGEN_MS_MAX + 1)
		return -EINVAL;
	/* A fence the clock has passed: the module refuses it so. */
	if (valid_until_ms <= now)
		return sim_never_mints(now);
	if (device_leased(&s->h) && s->h.region == region && s->h.worker == worker &&
	    s->h.region_bits == lay->region_bits &&
	    s->h.worker_bits == lay->worker_bits) {
		if (valid_until_ms < s->h.valid_until_ms)
			return -EINVAL;
		renewal = true;
	}
	/*
	 * Nor can it mint when its first ms, above the floor and above every
	 * ms the host used, lies at or past the fence.  Nothing changed.
	 */
	first_ms = (floor_ms > s->h.last_ms ? floor_ms : s->h.last_ms) + 1;
	if (first_ms >= valid_until_ms)
		return sim_never_mints(first_ms);
	if (renewal) {
		if (floor_ms > s->h.floor_ms)
			s->h.floor_ms = floor_ms;
	} else {
		s->h.floor_ms = floor_ms;
	}
	if (floor_ms > s->h.last_ms)
		s->h.last_ms = floor_ms;
	s->h.flags |= LIBIDGEN_STATE_LEASED;
	s->h.region = region;
	s->h.worker = worker;
	s->h.valid_until_ms = valid_until_ms;
	s->h.region_bits = lay->region_bits;
	s->h.worker_bits = lay->worker_bits;
	s->h.seq_bits = lay->seq_bits;
	/*
	 * Logged before it is stored: a daemon killed in between leaves a
	 * log that says more than the generator holds, never less, so the
	 * windows the tests derive from the log are never too small.
	 */
	sim_log(s, "push r=%" PRIu32 " w=%" PRIu32 " floor=%" PRIu64
		" until=%" PRIu64 " layout=%u/%u/%u", region, worker, floor_ms,
		valid_until_ms, lay->region_bits, lay->worker_bits,
		lay->seq_bits);
	return sim_store(s);
}

static int sim_revoke(void *ctx, uint64_t *last_ms)
{
	struct sim *s = ctx;
	int err;

	err = sim_load(s);
	if (err)
		return err;
	if (!device_leased(&s->h)) {
		/* As the module: a retried revoke is safe. */
		*last_ms = s->h.last_ms;
		sim_log(s, "revoke-idle last=%" PRIu64, s->h.last_ms);
		return 0;
	}
	sim_advance(s);
	s->h.flags &= ~LIBIDGEN_STATE_LEASED;
	err = sim_store(s);
	if (err)
		return err;
	*last_ms = s->h.last_ms;
	sim_log(s, "revoke last=%" PRIu64, s->h.last_ms);
	return 0;
}

static int sim_held(void *ctx, struct idgen_device_state *out)
{
	struct sim *s = ctx;
	int err;

	err = sim_load(s);
	if (err)
		return err;
	sim_advance(s);
	if (!device_leased(&s->h))
		sim_default_layout(s);	/* the default's, as the module */
	*out = s->h;
	out->now_ms = sim_now();
	return 0;
}

static const struct device_ops sim_device_ops = {
	.push = sim_push,
	.revoke = sim_revoke,
	.held = sim_held,
};

int device_sim_open(struct device *dev, const char *file,
		    const struct lease_layout *layout)
{
	struct sim *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->file = strdup(file);
	if (!s->file || asprintf(&s->tmp, "%s.tmp", file) < 0 ||
	    asprintf(&s->log, "%s.log", file) < 0) {
		free(s->file);
		free(s->tmp);
		free(s);
		return -ENOMEM;
	}
	s->push_layout = *layout;
	err = sim_load(s);
	if (err) {
		log_err("simulated generator %s: %s", file,
			err == -EIO ? "not a state file" : strerror(-err));
		device_sim_close(&(struct device){ .ctx = s });
		return err;
	}
	dev->ops = &sim_device_ops;
	dev->ctx = s;
	return 0;
}

void device_sim_close(struct device *dev)
{
	struct sim *s = dev->ctx;

	free(s->file);
	free(s->tmp);
	free(s->log);
	free(s);
}

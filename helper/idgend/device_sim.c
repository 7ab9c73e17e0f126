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

#include "clock.h"
#include "device_sim.h"
#include "log.h"

#define SIM_REGION_BITS	3
#define SIM_WORKER_BITS	7

struct sim {
	char *file;
	char *tmp;
	char *log;
	struct device_held h;
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

	if (!s->h.leased || now <= s->h.floor_ms)
		return;
	top = now < s->h.valid_until_ms ? now : s->h.valid_until_ms - 1;
	if (top > s->h.last_ms)
		s->h.last_ms = top;
}

static int sim_load(struct sim *s)
{
	unsigned int leased;
	FILE *f;
	int n;

	memset(&s->h, 0, sizeof(s->h));
	f = fopen(s->file, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	n = fscanf(f, "%u %" SCNu32 " %" SCNu32 " %" SCNu64 " %" SCNu64 " %" SCNu64,
		   &leased, &s->h.region, &s->h.worker, &s->h.floor_ms,
		   &s->h.valid_until_ms, &s->h.last_ms);
	fclose(f);
	if (n != 6)
		return -EIO;
	s->h.leased = leased;
	return 0;
}

static int sim_store(struct sim *s)
{
	FILE *f = fopen(s->tmp, "w");

	if (!f)
		return -errno;
	fprintf(f, "%u %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
		s->h.leased, s->h.region, s->h.worker, s->h.floor_ms,
		s->h.valid_until_ms, s->h.last_ms);
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

static int sim_push(void *ctx, uint32_t region, uint32_t worker,
		    uint64_t floor_ms, uint64_t valid_until_ms, bool synced)
{
	struct sim *s = ctx;
	int err;

	(void)synced;
	err = sim_load(s);
	if (err)
		return err;
	sim_advance(s);
	if (region >= 1U << SIM_REGION_BITS || worker >= 1U << SIM_WORKER_BITS ||
	    floor_ms >= valid_until_ms || valid_until_ms > IDGEN_MS_MAX + 1)
		return -EINVAL;
	if (s->h.leased && s->h.region == region && s->h.worker == worker) {
		if (valid_until_ms < s->h.valid_until_ms)
			return -EINVAL;
		if (floor_ms > s->h.floor_ms)
			s->h.floor_ms = floor_ms;
	} else {
		s->h.floor_ms = floor_ms;
	}
	if (floor_ms > s->h.last_ms)
		s->h.last_ms = floor_ms;
	s->h.leased = true;
	s->h.region = region;
	s->h.worker = worker;
	s->h.valid_until_ms = valid_until_ms;
	err = sim_store(s);
	if (!err)
		sim_log(s, "push r=%" PRIu32 " w=%" PRIu32 " floor=%" PRIu64
			" until=%" PRIu64, region, worker, floor_ms,
			valid_until_ms);
	return err;
}

static int sim_revoke(void *ctx, uint64_t *last_ms)
{
	struct sim *s = ctx;
	int err;

	err = sim_load(s);
	if (err)
		return err;
	if (!s->h.leased)
		return -ENOKEY;
	sim_advance(s);
	s->h.leased = false;
	err = sim_store(s);
	if (err)
		return err;
	*last_ms = s->h.last_ms;
	sim_log(s, "revoke last=%" PRIu64, s->h.last_ms);
	return 0;
}

static int sim_held(void *ctx, struct device_held *out)
{
	struct sim *s = ctx;
	int err;

	err = sim_load(s);
	if (err)
		return err;
	sim_advance(s);
	*out = s->h;
	out->now_ms = sim_now();
	out->region_bits = SIM_REGION_BITS;
	out->worker_bits = SIM_WORKER_BITS;
	return 0;
}

static const struct device_ops sim_device_ops = {
	.push = sim_push,
	.revoke = sim_revoke,
	.held = sim_held,
};

int device_sim_open(struct device *dev, const char *file)
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

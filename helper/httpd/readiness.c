// SPDX-License-Identifier: GPL-2.0
/*
 * GET /readyz (readiness.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/timex.h>

#include "readiness.h"

/* The most offset the kernel keeps (its MAXPHASE), in microseconds. */
#define MAX_OFFSET_US	500000

int clock_read(struct clock_reading *c)
{
	struct timex tx;
	int state;

	memset(&tx, 0, sizeof(tx));
	state = adjtimex(&tx);
	if (state < 0)
		return -errno;
	c->synced = state != TIME_ERROR && !(tx.status & STA_UNSYNC);
	if (tx.status & STA_NANO)
		c->offset_us = tx.offset / 1000;
	else if (tx.offset > MAX_OFFSET_US)
		/*
		 * Older kernels in microsecond mode divide a 32-bit nanosecond
		 * offset: a negative one comes out as 2^32 ns less a little,
		 * ~+4294967 us.  The kernel never holds more than 500 ms.
		 */
		c->offset_us = ((int64_t)tx.offset * 1000 - (1LL << 32)) / 1000;
	else
		c->offset_us = tx.offset;
	c->maxerror_us = tx.maxerror;
	return 0;
}

struct answer {
	char *buf;
	size_t size;
	size_t len;
	int reasons;
};

static void add(struct answer *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add(struct answer *a, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (a->len >= a->size)
		return;
	va_start(ap, fmt);
	r = vsnprintf(a->buf + a->len, a->size - a->len, fmt, ap);
	va_end(ap);
	if (r > 0)
		a->len += r;
	if (a->len >= a->size)
		a->len = a->size - 1;
}

/* The messages hold no character JSON would need escaped. */
static void reason(struct answer *a, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void reason(struct answer *a, const char *code, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	add(a, "%s{\"code\":\"%s\",\"message\":\"%s\"}", a->reasons++ ? "," : "",
	    code, msg);
}

/* The module's max_borrow_ms parameter, or 0 when it cannot be read. */
static uint64_t module_max_borrow_ms(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/sys/module/idgen/parameters/max_borrow_ms", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/*
 * The design's clock rule: a generator borrows at most a bound ahead of
 * the wall clock "and otherwise fails and takes itself out of rotation".
 * adjtimex cannot see it: after a step back the clock is still called
 * synchronised while the module stamps ahead of it, and refuses with
 * ETIME once past its lead.  A forward step the module holds back (until
 * idgend adopts it) leaves its IDs behind the wall clock.
 */
static void generator_clock(const struct readiness_config *cfg,
			    const struct minter_state *st, struct answer *a)
{
	uint64_t ahead, bound;

	if (!st->max_lead_ms)
		return;		/* the simulation has no such clock */
	ahead = st->next_ms > st->wall_ms ? st->next_ms - st->wall_ms : 0;
	bound = cfg->max_ahead_ms ? cfg->max_ahead_ms : module_max_borrow_ms();
	if (ahead > st->max_lead_ms)
		reason(a, "clock_behind", "the next ID is %" PRIu64
		       " ms ahead of the wall clock, past the lead of %" PRIu32
		       " ms: the generator refuses to mint (ETIME) until the"
		       " clock catches up", ahead, st->max_lead_ms);
	else if (bound && ahead > bound)
		reason(a, "generator_ahead", "the next ID is %" PRIu64
		       " ms ahead of the wall clock, more than the %" PRIu64
		       " ms allowed", ahead, bound);
	if (st->step_held)
		reason(a, "clock_step_held", "a forward step of the wall clock"
		       " (%" PRId64 " ms) is held until idgend adopts it",
		       st->held_step_ms);
}

bool readiness_check(const struct readiness_config *cfg, struct minter *m,
		     char *buf, size_t size, size_t *len)
{
	struct answer a = { .buf = buf, .size = size };
	struct minter_state st;
	struct clock_reading c;
	int err;

	add(&a, "{\"ready\":false,\"reasons\":[");
	memset(&st, 0, sizeof(st));
	err = m->ops->state(m->ctx, &st);
	if (err) {
		reason(&a, "device_error", "the generator's state cannot be read: %s",
		       strerror(-err));
	} else if (!st.leased) {
		reason(&a, "no_lease", "the generator holds no lease: it refuses to mint");
	} else {
		if (st.valid_until_ms <= st.now_ms + cfg->margin_ms)
			reason(&a, "lease_expiring", "the lease's fence is %" PRIu64
			       " ms away, not more than the margin of %" PRIu64 " ms",
			       st.valid_until_ms > st.now_ms ?
			       st.valid_until_ms - st.now_ms : 0, cfg->margin_ms);
		if (st.wall_ms <= st.floor_ms)
			reason(&a, "clock_before_floor", "the wall clock is %" PRIu64
			       " ms behind the lease's floor", st.floor_ms - st.wall_ms + 1);
		generator_clock(cfg, &st, &a);
	}
	if (cfg->check_clock) {
		err = clock_read(&c);
		if (err)
			reason(&a, "clock_unsynchronised", "adjtimex failed: %s",
			       strerror(-err));
		else if (!c.synced)
			reason(&a, "clock_unsynchronised",
			       "adjtimex says the clock is not synchronised");
		else if ((uint64_t)(c.offset_us < 0 ? -c.offset_us : c.offset_us) >=
			 cfg->max_offset_us)
			reason(&a, "clock_offset", "the clock is %" PRId64 " us off, "
			       "not under %" PRIu64 " us", c.offset_us, cfg->max_offset_us);
	}
	/* Written before the verdict was known: say it now. */
	if (!a.reasons)
		a.len = snprintf(buf, size, "{\"ready\":true,\"reasons\":[");
	add(&a, "]%s}", m->simulated ? ",\"generator\":\"simulated\"" : "");
	*len = a.len;
	return !a.reasons;
}

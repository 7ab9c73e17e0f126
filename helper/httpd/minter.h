/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where idgen-httpd's IDs come from: libidgen's generator, /dev/idgen or
 * its in-process simulated node (idgen_generator_open(), --device
 * sim[:WORKER]).  minter_ops is the seam the tests' fakes fill; the
 * service's one implementation is over the generator.
 * The service holds no lease logic: the generator enforces lease and
 * fence, and the service only reports what it says.
 */
#ifndef HTTPD_MINTER_H
#define HTTPD_MINTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct idgen_device_state;
struct idgen_layout;

/* What readiness needs of the generator; times in idgen ms. */
struct minter_state {
	bool leased;
	uint32_t region;
	uint32_t worker;
	uint64_t floor_ms;
	uint64_t valid_until_ms;
	uint64_t now_ms;		/* the generator's clock */
	uint64_t wall_ms;		/* the wall clock, as it read it */
	/* The module's alone (0 from the simulation): readiness's clock rule. */
	uint64_t next_ms;		/* the ms the next ID carries at the earliest */
	uint32_t max_lead_ms;		/* past wall_ms + this, reads fail with ETIME */
	bool step_held;			/* a forward step waits to be adopted */
	int64_t held_step_ms;
};

struct minter_ops {
	/*
	 * As idgen_mint(): 1..n IDs, strictly increasing and above every ID
	 * minted before, or a negative errno (-ENOKEY, -EKEYEXPIRED, -ETIME,
	 * -EAGAIN, -EOVERFLOW, ...).
	 */
	ssize_t (*mint)(void *ctx, uint64_t *ids, size_t n);
	int (*state)(void *ctx, struct minter_state *st);
	/*
	 * The generator's counters, for /metrics, in libidgen's view of the
	 * device: the module's fills them all, the simulation ids alone.
	 */
	int (*counters)(void *ctx, struct idgen_device_state *c);
	/* The widths it mints with now (version and cutover_ms 0). */
	int (*layout)(void *ctx, struct idgen_layout *out);
	void (*close)(void *ctx);
};

struct minter {
	const struct minter_ops *ops;
	void *ctx;
	char name[64];			/* for log lines: the path, or "sim:W" */
	bool simulated;			/* libidgen's simulation, not a device */
	uint32_t sim_worker;
};

/*
 * spec: a path of the device (NULL: /dev/idgen), or "sim" or "sim:WORKER"
 * (0..127) for the simulation; sim_lease_ms as idgen_sim_open()'s lease_ms.
 * Returns 0 or a negative errno, with err saying what went wrong.
 */
int minter_open(struct minter *m, const char *spec, uint64_t sim_lease_ms,
		char *err, size_t errlen);
void minter_close(struct minter *m);

/*
 * Exactly n IDs into ids, in as many reads as the generator needs: 0, or
 * the negative errno of the read that got none (the IDs read before it
 * are holes, never reissued).
 */
int minter_mint_all(struct minter *m, uint64_t *ids, size_t n);

/*
 * Sleep until the wall clock's next millisecond: the generator's clock
 * (the module's, and the simulation's) moves on it, so a wait for the
 * generator is taken a millisecond at a time.
 */
static inline void minter_sleep_to_next_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts = (struct timespec){ 0, 1000000 - ts.tv_nsec % 1000000 };
	nanosleep(&ts, NULL);
}

#endif /* HTTPD_MINTER_H */

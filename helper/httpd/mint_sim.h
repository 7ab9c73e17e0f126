/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A simulated generator inside the process, for tests and benchmarks on a
 * host that cannot load idgen.ko (--device sim[:WORKER]).  It keeps the
 * module's guarantees within the process: layout version 1, region 0, the
 * given worker; one atomic word holds the millisecond and the sequence,
 * so every batch is reserved with one compare-and-swap, strictly above
 * every ID before it (G2), borrowing the next millisecond when the
 * sequence runs out, and never running more than MINT_SIM_MAX_LEAD_MS
 * ahead of the wall clock: at the lead it waits for the clock's next
 * millisecond (as the module's read blocks), up to MINT_SIM_WAIT_MS,
 * and refuses (-ETIME) a clock stepped back behind what it used.
 *
 * Across restarts it relies on the wall clock: it starts with a floor of
 * the wall clock at start plus its lead bound, above every ID an earlier
 * process could have stamped, and waits for the clock to pass it.  A wall
 * clock stepped back between two runs is not covered (the module is what
 * covers it); use the simulation for tests, never for IDs that are kept.
 * At the end it logs how many IDs it minted.
 *
 * Only one may run per node (region 0 and its worker) on the host: it
 * binds the abstract unix socket name MINT_SIM_LOCK_NAME WORKER for its
 * whole life, one name whoever runs it, and a second one on the same
 * worker is refused.  It refuses to run beside a real generator
 * (/dev/idgen), whose numbers it would share.
 */
#ifndef HTTPD_MINT_SIM_H
#define HTTPD_MINT_SIM_H

#include <stdint.h>

#include "minter.h"

/* The k-sort target: a batch never stamps further ahead than this. */
#define MINT_SIM_MAX_LEAD_MS	10
/* The most milliseconds one call waits for the clock at the lead. */
#define MINT_SIM_WAIT_MS	1000

/* The node's lock: this, then the worker, in the abstract namespace. */
#define MINT_SIM_LOCK_NAME	"idgen-httpd-sim-r0-w"

/*
 * worker 0..127.  lease_ms 0: the lease never ends; else it ends that
 * many ms after the floor, and minting then fails with -EKEYEXPIRED as
 * at the module's fence (for tests of the service's refusals).
 * Returns 0, or a negative errno with err saying why: -EBUSY when
 * another process holds the worker's lock (err names region, worker and
 * lock), -EEXIST when /dev/idgen exists, -EINVAL for a worker out of
 * range, -ETIME for a wall clock before the epoch.
 */
int mint_sim_open(struct minter *m, uint32_t worker, uint64_t lease_ms,
		  char *err, size_t errlen);

#endif /* HTTPD_MINT_SIM_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A client of the "idgen" generic netlink family (the GENERIC
 * NETLINK section of include/uapi/linux/idgen.h), on libnl-genl.
 *
 * Each function reports its own failures on stderr as
 * "<program>: <what>: <error>", followed by the kernel's extended ack
 * message when it sent one, and returns 0 or a negative errno.  A missing
 * family is reported as "the idgen module is not loaded" (-ENOENT).
 */
#ifndef COMMON_IDGEN_NL_H
#define COMMON_IDGEN_NL_H

#include <stdbool.h>
#include <stdint.h>

#include "idgen.h"

/*
 * The reply to IDGEN_CMD_GET_STATE: the state and counters as libidgen
 * reads them from the device (idgen_device_get_state()), and what only
 * netlink tells.  Times in ms since IDGEN_EPOCH_UNIX_MS.
 */
struct idgen_nl_state {
	struct idgen_device_state state;
	bool lease;			/* the four lease fields were sent */
	uint32_t fence_near_ms;
	uint64_t events_dropped;
};

/* IDGEN_CMD_GET_STATE (any user). */
int idgen_nl_get_state(struct idgen_nl_state *out);

/* IDGEN_CMD_SET_CONFIG with IDGEN_A_FENCE_NEAR_MS (CAP_NET_ADMIN). */
int idgen_nl_set_fence_near(uint32_t ms);

/* Bits of idgen_nl_event.present: which of the fields below were sent. */
#define IDGEN_NL_EV_NOW		(1U << 0)
#define IDGEN_NL_EV_REGION	(1U << 1)
#define IDGEN_NL_EV_WORKER	(1U << 2)
#define IDGEN_NL_EV_FLOOR	(1U << 3)
#define IDGEN_NL_EV_VALID_UNTIL	(1U << 4)
#define IDGEN_NL_EV_LAST	(1U << 5)
#define IDGEN_NL_EV_STEP	(1U << 6)
#define IDGEN_NL_EV_FLAGS	(1U << 7)

/* One IDGEN_CMD_EVENT message. */
struct idgen_nl_event {
	uint32_t event;			/* enum idgen_event */
	uint32_t present;		/* IDGEN_NL_EV_* */
	uint64_t now_ms;
	uint32_t region;
	uint32_t worker;
	uint64_t floor_ms;
	uint64_t valid_until_ms;
	uint64_t last_ms;
	int64_t step_ms;		/* < 0: the clock stepped back */
	uint32_t flags;			/* IDGEN_STATE_CLOCK_HELD: not followed */
};

/* "lease-set", "clock-step-back", ...; NULL for an event this build lacks. */
const char *idgen_nl_event_name(uint32_t event);

/* Called per event; a non-zero return stops the loop with that value. */
typedef int (*idgen_nl_event_cb)(const struct idgen_nl_event *ev, void *ctx);

/*
 * Subscribe to the "events" group and call cb for each event until cb
 * returns non-zero (that value is returned), a signal interrupts the wait
 * (-EINTR, not reported), the module is unloaded (-ENODEV) or an error.
 * Events the socket's buffer could not hold are reported on stderr and the
 * loop goes on.
 */
int idgen_nl_events(idgen_nl_event_cb cb, void *ctx);

/*
 * The same for a caller's own poll loop: open a subscribed, non-blocking
 * socket, poll its fd for POLLIN, and let dispatch() handle what is queued
 * (0 once drained, else as idgen_nl_events()).
 */
struct idgen_nl;
struct idgen_nl *idgen_nl_subscribe(void);
int idgen_nl_fd(const struct idgen_nl *nl);
int idgen_nl_dispatch(struct idgen_nl *nl, idgen_nl_event_cb cb, void *ctx);
void idgen_nl_close(struct idgen_nl *nl);

#endif /* COMMON_IDGEN_NL_H */

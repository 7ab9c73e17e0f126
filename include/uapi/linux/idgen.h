/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * idgen - host-wide 64-bit unique, time-ordered ID generator.
 *
 * This header is the whole contract between idgen.ko and user space.
 *
 * ID LAYOUT
 * ---------
 *
 *   bit 63       0, so an ID fits a signed 64-bit integer
 *   bits 62..22  milliseconds since IDGEN_EPOCH_UNIX_MS (41 bits)
 *   bits 21..0   node (region, then worker) and sequence; the widths are
 *                the layout's: version 1 is 3 region, 7 worker, 12 sequence
 *                bits, so ID = ms << 22 | region << 19 | worker << 12 | seq.
 *
 * The time field never moves, so IDs of all layouts sort together by time.
 * A layout may move bits between worker and sequence; region, worker and
 * sequence widths always add up to IDGEN_NODE_SEQ_BITS.
 *
 * THE DEVICE
 * ----------
 *
 * /dev/idgen (mode 0444).  Any user may read(); changing state needs
 * CAP_SYS_ADMIN.
 *
 * read(fd, buf, len) fills buf with len / 8 native-endian __u64 IDs.  len
 * must be a multiple of 8, else EINVAL; len == 0 returns 0.  Every ID a
 * host's generator returns is greater than every ID it returned before, on
 * any CPU, to any reader; one read() returns a strictly increasing batch.
 * A read may return fewer IDs than asked for (at the fence, at the clock's
 * lead or borrow bound, at the file's share, on a signal); IDs reserved
 * but not delivered (a faulting buffer, a signal) are never issued again.
 * The file has no position: lseek() fails with ESPIPE.
 *
 * When no ID can be returned, read() fails with:
 *
 *   ENOKEY       no lease: none was set since the module was loaded, or it
 *                was revoked.  Set one with IDGEN_IOC_SET_LEASE.
 *   EKEYEXPIRED  the lease's fence is reached: the next ID would carry a
 *                millisecond at or after valid_until_ms.  Renew the lease.
 *   ETIME        the clock is behind: the next ID would carry a millisecond
 *                more than max_lead_ms ahead of the trusted wall clock (the
 *                wall clock was stepped back, or a floor lies ahead), and
 *                waiting for it would take more than a few milliseconds, or
 *                a blocking reader waited for it a second in all.  Retry
 *                once the wall clock has caught up.  Never the answer to
 *                readers merely outrunning the node (see FAIRNESS).
 *   EAGAIN       the file is non-blocking and the read would have to wait
 *                for the clock: the readers outran the node's ceiling
 *                (the borrow bound), this file used its share of the
 *                current millisecond, or the clock is a few milliseconds
 *                short of the lead bound.  poll() and retry; a blocking
 *                reader sleeps instead.
 *   EOVERFLOW    the time field is exhausted: the next millisecond does not
 *                fit in 41 bits, whatever the lease's fence (renewing
 *                cannot help).  Never returned before 2095-09-07.
 *   EFAULT       buf is not writable and no ID was copied.
 *   EINTR        a signal arrived before any ID was copied (restarted
 *                instead under SA_RESTART).
 *
 * poll() reports EPOLLIN | EPOLLRDNORM when a read of one ID would not fail.
 * A read or poll that found the clock behind (EAGAIN, ETIME) wakes pollers
 * when it has caught up, so an edge-triggered (EPOLLET) poller that read
 * the device dry is woken too.
 *
 * THE CLOCK
 * ---------
 *
 * The millisecond stamped into IDs follows CLOCK_REALTIME checked against
 * CLOCK_MONOTONIC_RAW (plus time spent suspended).  It never goes back.
 * When the wall clock steps back, the generator keeps stamping its last
 * millisecond, borrowing the next one when the sequence runs out, while it
 * stays within max_lead_ms of the wall clock (then ETIME).  On a healthy
 * clock borrowing stops at max_borrow_ms (see FAIRNESS).  When the wall
 * clock jumps forward by more than max_step_ms beyond the elapsed
 * monotonic-raw time, the generator does not follow: it goes on at the
 * monotonic-raw rate until the step is adopted (IDGEN_LEASE_CLOCK_SYNCED on
 * a lease push, or IDGEN_IOC_ADOPT_CLOCK) or reverted (the wall clock
 * comes back to the trusted time; what is left of a step partly undone is
 * judged as a step of its own).  NTP slew, up to 500 ppm, is credited for
 * at most a minute since the clock was last read, and the module reads it
 * every ten seconds from load to unload, lease or not, idle or not.
 *
 * FAIRNESS
 * --------
 *
 * Any local user may read, so no reader may keep the others waiting:
 *
 *   - the borrow bound: while the clock is healthy, readers that run a
 *     sequence out may push the stamped millisecond at most max_borrow_ms
 *     (module parameter, 10 by default, at most max_lead_ms) ahead of the
 *     trusted wall clock, or of the lease's first millisecond when its
 *     floor lies ahead.  The rest of a millisecond already begun is still
 *     served.  While a step back is being absorbed (the clock reads below
 *     the highest millisecond it read before), only max_lead_ms applies.
 *   - the oldest wait: a reader the borrow bound refuses waits, and of the
 *     open files waiting that keep asking, the one that began waiting
 *     first is served first: while it waits, every other file may borrow
 *     one millisecond less, so the millisecond the clock opens next is
 *     left to it.  A wait ends when its file gets IDs or is closed, and
 *     lapses for good when its reader is not back within 20 ms of the
 *     time it was told to come back (the sleep of a blocking read, the
 *     poll wake-up of a non-blocking one); its next refusal then begins a
 *     new wait, behind those that began meanwhile.
 *   - the share: while another file waits, and while a step back is being
 *     absorbed, each open file takes at most a quarter of a millisecond's
 *     sequence space (2^seq_bits / 4 IDs, 1,024 with 12 bits) per
 *     millisecond of the clock, however many threads or processes read
 *     through it.  A reader alone may take all the node holds.
 *
 * These are throttles, lifted by the clock moving on: a blocking read that
 * meets one sleeps, a millisecond or a few at a time, until it gets IDs
 * (a signal ends the sleep: EINTR, or the IDs read so far); a non-blocking
 * one fails with EAGAIN and pollers are woken when it would succeed.  So a
 * reader that keeps asking is served after the waits that began before
 * its own, a greedy reader gets at most its share per millisecond per
 * file it opens while others wait, and no reader is refused.  A big
 * blocking read is served whole, a share at a time while others wait; a
 * non-blocking one returns the IDs it got.
 *
 * THE LEASE
 * ---------
 *
 * A lease is (layout, region, worker, floor_ms, valid_until_ms), times in
 * milliseconds since the epoch.  Under a lease the module never stamps a
 * millisecond at or before floor_ms, nor at or after valid_until_ms: the
 * fence is checked on the millisecond stamped into each ID, so a frozen or
 * dead lease holder cannot make the host mint past it.
 */
#ifndef _UAPI_LINUX_IDGEN_H
#define _UAPI_LINUX_IDGEN_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define IDGEN_DEVICE_NAME	"idgen"

/* 2026-01-01T00:00:00Z as milliseconds since the Unix epoch. */
#define IDGEN_EPOCH_UNIX_MS	1767225600000ULL

#define IDGEN_TIME_BITS		41
#define IDGEN_NODE_SEQ_BITS	22
/* The last millisecond an ID can carry: 2095-09-07T15:47:35.551Z. */
#define IDGEN_MS_MAX		((1ULL << IDGEN_TIME_BITS) - 1)

/* Layout version 1. */
#define IDGEN_V1_REGION_BITS	3
#define IDGEN_V1_WORKER_BITS	7
#define IDGEN_V1_SEQ_BITS	12

/* Bounds the module accepts for a layout's widths. */
#define IDGEN_REGION_BITS_MAX	8
#define IDGEN_SEQ_BITS_MIN	6

/**
 * struct idgen_lease_args - argument of IDGEN_IOC_SET_LEASE
 * @floor_ms:       no ID under this lease carries a millisecond <= floor_ms;
 *                  normally the previous holder's valid_until_ms.
 * @valid_until_ms: the fence: no ID carries a millisecond >= valid_until_ms.
 *                  Must be greater than floor_ms and at most IDGEN_MS_MAX + 1.
 * @region:         region number, below 2^region_bits.
 * @worker:         worker number, below 2^worker_bits.
 * @flags:          IDGEN_LEASE_* flags; unknown bits are refused.
 * @region_bits:    layout widths; all three 0 means the module's load-time
 *                  layout (module parameters, version 1 by default).
 *                  Otherwise they must add up to IDGEN_NODE_SEQ_BITS, with
 *                  region_bits <= IDGEN_REGION_BITS_MAX and
 *                  seq_bits >= IDGEN_SEQ_BITS_MIN.
 * @worker_bits:    see @region_bits.
 * @seq_bits:       see @region_bits.
 * @pad:            must be zero.
 */
struct idgen_lease_args {
	__u64 floor_ms;
	__u64 valid_until_ms;
	__u32 region;
	__u32 worker;
	__u32 flags;
	__u8 region_bits;
	__u8 worker_bits;
	__u8 seq_bits;
	__u8 pad;
};

/*
 * The caller vouches that the wall clock is synchronised (adjtimex() reports
 * TIME_OK): a forward step that the generator is holding back is adopted.
 */
#define IDGEN_LEASE_CLOCK_SYNCED	(1U << 0)
#define IDGEN_LEASE_FLAGS_ALL		IDGEN_LEASE_CLOCK_SYNCED

/* Bits of idgen_state.flags. */
#define IDGEN_STATE_LEASED		(1U << 0) /* a lease is in force */
#define IDGEN_STATE_CLOCK_HELD		(1U << 1) /* a forward step is held */

/**
 * struct idgen_state - result of IDGEN_IOC_GET_STATE
 * @now_ms:           the trusted wall clock now, in ms since the epoch (0
 *                    before the epoch); IDs are stamped at or after it.
 * @wall_ms:          CLOCK_REALTIME now, in ms since the epoch (0 before it).
 * @last_ms:          the highest millisecond the host has stamped or fenced
 *                    off (a floor or a revoke) since the module was loaded.
 * @next_ms:          the millisecond the next ID would carry at the earliest.
 *                    The clock is read after the generator's state, so
 *                    next_ms - now_ms never shows more lead than there was.
 * @floor_ms:         the lease's floor (0 without a lease).
 * @valid_until_ms:   the lease's fence (0 without a lease).
 * @held_step_ms:     size of a forward wall-clock step not yet adopted.
 * @flags:            IDGEN_STATE_* bits.
 * @region:           the lease's region.
 * @worker:           the lease's worker.
 * @max_lead_ms:      how far IDs may run ahead of the wall clock (a step
 *                    back; borrowing on a healthy clock stops at the
 *                    max_borrow_ms module parameter, see FAIRNESS).
 * @max_step_ms:      the largest forward step followed without adoption.
 * @region_bits:      the layout in force (the lease's, else the default).
 * @worker_bits:      see @region_bits.
 * @seq_bits:         see @region_bits.
 * @pad:              zero.
 * @ids:              IDs handed out.
 * @reads:            read() calls that returned IDs.
 * @borrowed_ms:      milliseconds started ahead of the clock because a
 *                    sequence ran out.
 * @steps_back:       wall-clock steps back seen.
 * @steps_forward:    wall-clock steps forward held back.
 * @steps_adopted:    held forward steps adopted.
 * @fence_refusals:   reads refused with EKEYEXPIRED.
 * @lead_refusals:    reads refused with ETIME or EAGAIN.
 * @nolease_refusals: reads refused with ENOKEY.
 * @range_refusals:   reads refused with EOVERFLOW.
 */
struct idgen_state {
	__u64 now_ms;
	__u64 wall_ms;
	__u64 last_ms;
	__u64 next_ms;
	__u64 floor_ms;
	__u64 valid_until_ms;
	__s64 held_step_ms;
	__u32 flags;
	__u32 region;
	__u32 worker;
	__u32 max_lead_ms;
	__u32 max_step_ms;
	__u8 region_bits;
	__u8 worker_bits;
	__u8 seq_bits;
	__u8 pad;
	__u64 ids;
	__u64 reads;
	__u64 borrowed_ms;
	__u64 steps_back;
	__u64 steps_forward;
	__u64 steps_adopted;
	__u64 fence_refusals;
	__u64 lead_refusals;
	__u64 nolease_refusals;
	__u64 range_refusals;
};

/*
 * The ioctl type byte: free in Documentation/userspace-api/ioctl/
 * ioctl-number.rst (Linux 6.12).  The module asserts at build time that
 * its commands are not nsfs's.
 */
#define IDGEN_IOC_MAGIC		0xE9

/*
 * IDGEN_IOC_SET_LEASE - set or renew the lease (CAP_SYS_ADMIN).
 *
 * With a lease in force for the same region, worker and layout this is a
 * renewal: valid_until_ms may only move forward, and a floor_ms above the
 * last stamped millisecond lifts the next ID above it.  Otherwise it is a
 * new lease: the node switch is atomic against concurrent readers, and the
 * first ID under the new lease carries a millisecond greater than both
 * floor_ms and every millisecond the host has used since the module loaded.
 * IDGEN_LEASE_CLOCK_SYNCED adopts a held forward clock step.
 *
 * Errors: EPERM without CAP_SYS_ADMIN; EFAULT; EINVAL for a node out of the
 * layout's range, floor_ms >= valid_until_ms, valid_until_ms beyond
 * IDGEN_MS_MAX + 1, a renewal that would move the fence back, a bad layout,
 * unknown flags or non-zero pad; EKEYEXPIRED for a lease that could never
 * mint: its first ID would carry a millisecond at or after valid_until_ms,
 * because floor_ms or a millisecond the host already used (last_ms of
 * IDGEN_IOC_GET_STATE; for a renewal, the lease's next ID) lies at
 * valid_until_ms - 1 or later, or because the trusted clock (now_ms of
 * IDGEN_IOC_GET_STATE) is already at or past valid_until_ms; EOVERFLOW
 * instead when that first millisecond, or the trusted clock, lies beyond
 * IDGEN_MS_MAX: the time field is exhausted and no lease can help.  A
 * failed call changes nothing.
 */
#define IDGEN_IOC_SET_LEASE	_IOW(IDGEN_IOC_MAGIC, 1, struct idgen_lease_args)

/*
 * IDGEN_IOC_REVOKE - end the lease now (CAP_SYS_ADMIN).
 *
 * Writes L to the __u64 argument: no ID minted under the lease, including
 * by readers in the middle of a read() while the revoke ran, carries a
 * millisecond above L.  L is never below the lease's floor.  Without a lease
 * it succeeds and returns the host's last_ms, so a retried revoke is safe.
 * Reads fail with ENOKEY afterwards.
 */
#define IDGEN_IOC_REVOKE	_IOR(IDGEN_IOC_MAGIC, 2, __u64)

/*
 * IDGEN_IOC_GET_STATE - read the generator's state and counters (any user).
 */
#define IDGEN_IOC_GET_STATE	_IOR(IDGEN_IOC_MAGIC, 3, struct idgen_state)

/*
 * IDGEN_IOC_ADOPT_CLOCK - adopt a held forward wall-clock step now
 * (CAP_SYS_ADMIN).  Succeeds, changing nothing, when no step is held.
 */
#define IDGEN_IOC_ADOPT_CLOCK	_IO(IDGEN_IOC_MAGIC, 4)

/*
 * GENERIC NETLINK
 * ---------------
 *
 * Family IDGEN_GENL_NAME, version IDGEN_GENL_VERSION, in the initial network
 * namespace only.  Attributes are the idgen_attr values below; times are
 * milliseconds since the epoch as u64 (IDGEN_A_PAD aligns them), steps as
 * s64 milliseconds.  Documentation/netlink/specs/idgen.yaml in the source
 * tree describes the same family for tools.
 *
 * IDGEN_CMD_GET_STATE - the generator's state and every counter (any user).
 *   Request: no attributes.  Reply: IDGEN_CMD_GET_STATE with IDGEN_A_NOW_MS,
 *   IDGEN_A_WALL_MS, IDGEN_A_LAST_MS, IDGEN_A_NEXT_MS, IDGEN_A_FLAGS,
 *   IDGEN_A_HELD_STEP_MS, IDGEN_A_MAX_LEAD_MS, IDGEN_A_MAX_STEP_MS,
 *   IDGEN_A_FENCE_NEAR_MS, IDGEN_A_REGION_BITS, IDGEN_A_WORKER_BITS,
 *   IDGEN_A_SEQ_BITS, every IDGEN_A_CNT_* counter, and, with a lease in
 *   force, IDGEN_A_REGION, IDGEN_A_WORKER, IDGEN_A_FLOOR_MS and
 *   IDGEN_A_VALID_UNTIL_MS.  Each means what the struct idgen_state field
 *   of the same name does; the reply is its own snapshot, so clocks and
 *   counters may have moved since an ioctl's.  IDGEN_A_FENCE_NEAR_MS and
 *   IDGEN_A_CNT_EVENTS_DROPPED have no ioctl counterpart.
 *
 * IDGEN_CMD_SET_CONFIG - change a setting (CAP_NET_ADMIN).
 *   IDGEN_A_FENCE_NEAR_MS (u32, 1..IDGEN_FENCE_NEAR_MS_MAX, an hour): how
 *   long before valid_until
 *   the fence-near event fires.  A value out of range fails with ERANGE;
 *   a request without an attribute it can apply, or with a malformed or
 *   unknown one, with EINVAL.  Either way an extended ack message says
 *   why, and nothing changes.  GET_STATE, which takes no attributes,
 *   refuses any with EINVAL.
 *
 * IDGEN_CMD_EVENT - sent to the IDGEN_GENL_MCGRP_EVENTS multicast group.
 *   IDGEN_A_EVENT names it (enum idgen_event); IDGEN_A_NOW_MS says when.
 *   Lease events carry IDGEN_A_REGION, IDGEN_A_WORKER, IDGEN_A_FLOOR_MS and
 *   IDGEN_A_VALID_UNTIL_MS (revoked: IDGEN_A_LAST_MS instead of the floor);
 *   fence events the lease's node and IDGEN_A_VALID_UNTIL_MS; clock events
 *   IDGEN_A_STEP_MS (negative for a step back), and IDGEN_A_FLAGS with
 *   IDGEN_STATE_CLOCK_HELD for a forward step not followed.  IDGEN_A_NOW_MS
 *   is the wall clock when the event was sent.  Fence, clock and lead
 *   events are rate-limited, each kind to IDGEN_EVENT_BURST per
 *   IDGEN_EVENT_INTERVAL_MS, so a flapping clock cannot flood listeners;
 *   IDGEN_A_CNT_EVENTS_DROPPED counts what was held back.  Lease events,
 *   caused only by administrators, are never held back.
 */
#define IDGEN_GENL_NAME			"idgen"
#define IDGEN_GENL_VERSION		1
#define IDGEN_GENL_MCGRP_EVENTS		"events"
#define IDGEN_EVENT_BURST		10
#define IDGEN_EVENT_INTERVAL_MS		5000
#define IDGEN_FENCE_NEAR_MS_MAX		3600000

enum idgen_cmd {
	IDGEN_CMD_UNSPEC,
	IDGEN_CMD_GET_STATE,
	IDGEN_CMD_SET_CONFIG,
	IDGEN_CMD_EVENT,

	__IDGEN_CMD_MAX,
	IDGEN_CMD_MAX = __IDGEN_CMD_MAX - 1
};

enum idgen_event {
	IDGEN_EVENT_UNSPEC,
	IDGEN_EVENT_LEASE_SET,		/* a new lease (or node) is in force */
	IDGEN_EVENT_LEASE_RENEWED,	/* the fence moved forward */
	IDGEN_EVENT_LEASE_REVOKED,	/* no lease any more */
	IDGEN_EVENT_FENCE_NEAR,		/* IDs stamped within fence_near_ms of it */
	IDGEN_EVENT_FENCE_REACHED,	/* minting stopped at the fence */
	IDGEN_EVENT_CLOCK_STEP_BACK,	/* wall clock stepped back */
	IDGEN_EVENT_CLOCK_STEP_FWD,	/* ... jumped forward (followed or held) */
	IDGEN_EVENT_CLOCK_ADOPTED,	/* a held forward step was adopted */
	IDGEN_EVENT_LEAD_EXCEEDED,	/* a read refused with ETIME */

	__IDGEN_EVENT_MAX,
	IDGEN_EVENT_MAX = __IDGEN_EVENT_MAX - 1
};

enum idgen_attr {
	IDGEN_A_UNSPEC,
	IDGEN_A_PAD,
	IDGEN_A_EVENT,			/* u32, enum idgen_event */
	IDGEN_A_NOW_MS,			/* u64 */
	IDGEN_A_WALL_MS,		/* u64 */
	IDGEN_A_LAST_MS,		/* u64 */
	IDGEN_A_NEXT_MS,		/* u64 */
	IDGEN_A_FLOOR_MS,		/* u64 */
	IDGEN_A_VALID_UNTIL_MS,		/* u64 */
	IDGEN_A_HELD_STEP_MS,		/* s64 */
	IDGEN_A_STEP_MS,		/* s64, the size of a clock step */
	IDGEN_A_FLAGS,			/* u32, IDGEN_STATE_* */
	IDGEN_A_REGION,			/* u32 */
	IDGEN_A_WORKER,			/* u32 */
	IDGEN_A_REGION_BITS,		/* u8 */
	IDGEN_A_WORKER_BITS,		/* u8 */
	IDGEN_A_SEQ_BITS,		/* u8 */
	IDGEN_A_MAX_LEAD_MS,		/* u32 */
	IDGEN_A_MAX_STEP_MS,		/* u32 */
	IDGEN_A_FENCE_NEAR_MS,		/* u32 */
	IDGEN_A_CNT_IDS,		/* u64 counters, as in struct idgen_state */
	IDGEN_A_CNT_READS,
	IDGEN_A_CNT_BORROWED_MS,
	IDGEN_A_CNT_STEPS_BACK,
	IDGEN_A_CNT_STEPS_FORWARD,
	IDGEN_A_CNT_STEPS_ADOPTED,
	IDGEN_A_CNT_FENCE_REFUSALS,
	IDGEN_A_CNT_LEAD_REFUSALS,
	IDGEN_A_CNT_NOLEASE_REFUSALS,
	IDGEN_A_CNT_RANGE_REFUSALS,
	IDGEN_A_CNT_EVENTS_DROPPED,	/* u64, events held back by the limit */

	__IDGEN_A_MAX,
	IDGEN_A_MAX = __IDGEN_A_MAX - 1
};

#endif /* _UAPI_LINUX_IDGEN_H */

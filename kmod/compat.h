/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Compatibility with the older kernels idgen supports (Debian 12's 6.1 up
 * to the newest), in one place so the rest of the module reads like
 * mainline code of today.  Each shim is keyed on the feature it stands in
 * for, not on a version number, so a stable kernel that backported the
 * feature uses its own.
 */
#ifndef _IDGEN_COMPAT_H
#define _IDGEN_COMPAT_H

#include <linux/timekeeping.h>
#include <linux/timer.h>

/* 6.16 renamed from_timer() to timer_container_of() and later dropped it. */
#ifndef timer_container_of
#define timer_container_of(var, callback_timer, timer_fieldname) \
	container_of(callback_timer, typeof(*(var)), timer_fieldname)
#endif

/*
 * CLOCK_REALTIME and CLOCK_MONOTONIC_RAW read together.  7.x replaced
 * ktime_get_snapshot() by ktime_get_snapshot_id(), which names the clock
 * and its fields differently (IDGEN_HAVE_* come from ccflags.mk).
 */
struct idgen_time_snapshot {
	ktime_t real;
	ktime_t raw;
};

static inline void idgen_get_snapshot(struct idgen_time_snapshot *s)
{
	struct system_time_snapshot snap;

#ifdef IDGEN_HAVE_KTIME_GET_SNAPSHOT_ID
	ktime_get_snapshot_id(CLOCK_REALTIME, &snap);
	s->real = snap.systime;
	s->raw = snap.monoraw;
#else
	ktime_get_snapshot(&snap);
	s->real = snap.real;
	s->raw = snap.raw;
#endif
}

#endif /* _IDGEN_COMPAT_H */

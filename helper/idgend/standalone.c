// SPDX-License-Identifier: GPL-2.0
/*
 * Standalone mode (standalone.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "log.h"
#include "standalone.h"
#include "state_file.h"

/* Say so when the wait for the stored fence is longer than this. */
#define FLOOR_WAIT_LOG_MS	1000
/* While waiting for the clock, look at it this often. */
#define CLOCK_POLL_MS		1000

static uint64_t now_ms(struct standalone *s)
{
	return s->clock->now_ms(s->clock_ctx);
}

static int push(struct standalone *s, uint64_t until)
{
	int err;

	err = state_file_write(s->state_file, until);
	if (err)
		return err;	/* nothing pushed that is not on disk */
	err = s->dev->ops->push(s->dev->ctx, s->region, s->worker, s->floor_ms,
				until, s->clock->synced(s->clock_ctx));
	if (err) {
		log_err("r%" PRIu32 "/w%" PRIu32 ": the generator refused the lease "
			"(floor ms %" PRIu64 ", valid until ms %" PRIu64 "): %s",
			s->region, s->worker, s->floor_ms, until, strerror(-err));
		return err;
	}
	s->pushed_ms = until;
	return 0;
}

/*
 * The stored fence, or what stands for it when there is no file: 0 on a
 * first start (the directory was made just now) or when the operator says
 * the state is fresh, else -ENOENT.  A file deleted or lost (a restored
 * backup, a wiped disk) must not pass for a first start: the generator
 * forgets everything on a reboot, so the file is the only record of the
 * milliseconds this region and worker already used.
 */
static int read_state(struct standalone *s, uint64_t module_last_ms,
		      uint64_t *stored)
{
	bool created;
	int err;

	err = state_file_prepare(s->state_file, &created);
	if (err)
		return err;
	err = state_file_read(s->state_file, stored);
	if (!err && s->fresh_state)
		log_notice("state file %s exists: --fresh-state has no effect",
			   s->state_file);
	if (err != -ENOENT)
		return err;
	/*
	 * A fresh start is written down at once, so that a start stopped
	 * before its first push is not taken for a deleted file next time.
	 */
	*stored = 0;
	if (created) {
		/*
		 * A first start, or the whole state directory wiped (rm -rf,
		 * systemctl clean --what=state): the two look the same.  The
		 * generator's own last ms is the floor either way (it
		 * survives an idgend restart, not a reboot or a reload).
		 */
		log_warn("state file %s: none yet, in a directory made just now: "
			 "taken for a first start of r%" PRIu32 "/w%" PRIu32 ". If "
			 "this host minted as r%" PRIu32 "/w%" PRIu32 " before (the "
			 "state directory wiped), IDs may repeat if the wall clock "
			 "is behind the highest ms it used then; the floor is what "
			 "the generator remembers, ms %" PRIu64, s->state_file,
			 s->region, s->worker, s->region, s->worker,
			 module_last_ms);
		return state_file_write(s->state_file, 0);
	}
	if (s->fresh_state) {
		log_warn("state file %s is missing; starting fresh as --fresh-state "
			 "says: the floor is only what the generator remembers",
			 s->state_file);
		return state_file_write(s->state_file, 0);
	}
	log_alert("state file %s is missing, but its directory exists: was it "
		  "deleted?  Without it idgend cannot know the highest millisecond "
		  "r%" PRIu32 "/w%" PRIu32 " used before, and IDs could repeat.  "
		  "Restore it; or, if this host has never minted as r%" PRIu32
		  "/w%" PRIu32 ", start once with --fresh-state (see idgend(8))",
		  s->state_file, s->region, s->worker, s->region, s->worker);
	return -ENOENT;
}

/*
 * Until the clock is past floor_ms, looking at it every CLOCK_POLL_MS at
 * most: NTP may set a clock that reads before the epoch, or step back a
 * clock that was ahead.  0 with *now, or -EINTR when asked to stop.
 */
static int wait_past(struct standalone *s, uint64_t floor_ms, uint64_t *now)
{
	bool told = false;
	uint64_t ms;

	for (;;) {
		*now = now_ms(s);
		if (*now > floor_ms)
			break;
		if (!*now) {
			if (!told)
				log_alert("the wall clock reads before the idgen epoch, "
					  "2026-01-01T00:00:00Z: no ID can be minted.  "
					  "Waiting for the clock to be set (is NTP "
					  "running?)");
			told = true;
			ms = CLOCK_POLL_MS;
		} else {
			if (!told && floor_ms - *now >= FLOOR_WAIT_LOG_MS)
				log_warn("r%" PRIu32 "/w%" PRIu32 ": the stored fence, "
					 "ms %" PRIu64 ", is %" PRIu64 " ms ahead of the "
					 "clock (a crash, or a clock set back): waiting "
					 "for it", s->region, s->worker, floor_ms,
					 floor_ms - *now);
			told = true;
			ms = floor_ms - *now + 1;
			if (ms > CLOCK_POLL_MS)
				ms = CLOCK_POLL_MS;
		}
		if (s->clock->sleep_ms(s->clock_ctx, ms))
			return -EINTR;
	}
	if (told)
		log_notice("the wall clock, ms %" PRIu64 ", is past ms %" PRIu64
			   ": starting", *now, floor_ms);
	return 0;
}

int standalone_start(struct standalone *s)
{
	struct idgen_device_state h;
	uint64_t stored, floor_ms, now;
	int err;

	err = s->dev->ops->held(s->dev->ctx, &h);
	if (err) {
		log_err("cannot read the generator's state: %s", strerror(-err));
		return err;
	}
	err = read_state(s, h.last_ms, &stored);
	if (err)
		return err;
	if (device_leased(&h) && h.region == s->region && h.worker == s->worker &&
	    h.valid_until_ms <= stored) {
		s->held = true;
		s->floor_ms = h.floor_ms;
		s->pushed_ms = h.valid_until_ms;
		log_notice("lease adopted: r%" PRIu32 "/w%" PRIu32 ", valid until ms %"
			   PRIu64 " (standalone)", s->region, s->worker,
			   h.valid_until_ms);
		return 0;
	}

	/* Above the file, and above what this module instance ever used. */
	floor_ms = stored > h.last_ms ? stored : h.last_ms;
	err = wait_past(s, floor_ms, &now);
	if (err)
		return err;
	s->floor_ms = floor_ms;
	err = push(s, now + s->lease_ms);
	if (err)
		return err;
	s->held = true;
	log_notice("lease set: r%" PRIu32 "/w%" PRIu32 ", floor ms %" PRIu64
		   ", valid until ms %" PRIu64 " (standalone, state in %s)",
		   s->region, s->worker, s->floor_ms, s->pushed_ms,
		   s->state_file);
	return 0;
}

int standalone_renew(struct standalone *s)
{
	struct idgen_device_state h;
	uint64_t until = now_ms(s) + s->lease_ms;
	int err;

	if (until < s->pushed_ms)
		until = s->pushed_ms;
	err = s->dev->ops->held(s->dev->ctx, &h);
	if (!err && (!device_leased(&h) || h.region != s->region || h.worker != s->worker)) {
		/*
		 * The module was reloaded (or the lease revoked behind our
		 * back): what it minted reaches up to the fence it held.
		 */
		if (s->pushed_ms - 1 > s->floor_ms)
			s->floor_ms = s->pushed_ms - 1;
		log_err("r%" PRIu32 "/w%" PRIu32 ": the generator no longer holds the "
			"lease; setting it again with floor ms %" PRIu64,
			s->region, s->worker, s->floor_ms);
	}
	err = push(s, until);
	if (!err)
		log_info("lease renewed: r%" PRIu32 "/w%" PRIu32 " valid until ms %"
			 PRIu64, s->region, s->worker, until);
	return err;
}

int standalone_stop(struct standalone *s)
{
	uint64_t last = 0;
	int err;

	if (!s->held)
		return 0;
	s->held = false;
	err = s->dev->ops->revoke(s->dev->ctx, &last);
	if (err) {
		log_err("r%" PRIu32 "/w%" PRIu32 ": revoke failed (%s); the state file "
			"keeps ms %" PRIu64, s->region, s->worker, strerror(-err),
			s->pushed_ms);
		return err;
	}
	err = state_file_write(s->state_file, last);
	if (err)
		return err;
	log_notice("lease released: r%" PRIu32 "/w%" PRIu32 ", last ms %" PRIu64
		   " stored", s->region, s->worker, last);
	return 0;
}

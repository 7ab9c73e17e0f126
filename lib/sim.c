// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The simulated generator (idgen.h, "A simulated generator"): the
 * module's lease and minting rules in a process, for tests and benchmarks
 * on a host whose kernel must not load idgen.ko.  idgend drives its lease
 * side ("sim:FILE"), idgen-httpd and the PostgreSQL extension mint from
 * it ("sim:WORKER").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* asprintf() */
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "decimal.h"
#include "internal.h"

/* The module's load-time layout: version 1, 3/7/12. */
#define SIM_REGION_BITS	3
#define SIM_WORKER_BITS	7
#define SIM_SEQ_BITS	12

struct idgen_sim {
	/*
	 * The last (ms, sequence) minted, as ms << seq_bits | seq: adding one
	 * past a full sequence carries into the next ms (a borrow), so a
	 * batch is reserved with one compare-and-swap, as in the module.
	 */
	_Atomic uint64_t last;
	_Atomic uint64_t minted;	/* IDs handed out */
	/* The lease; changed only by set_lease and revoke (one thread). */
	bool leased;
	uint32_t region, worker;
	uint64_t floor_ms;
	uint64_t valid_until_ms;
	uint8_t region_bits, worker_bits, seq_bits;
	pid_t pid;			/* who opened it: only it mints */
	int lock_fd;			/* the node's lock; -1: none (file) */
	char *file, *tmp, *log;		/* the file form's; NULL otherwise */
};

/* The wall clock in idgen ms; 0 before the epoch. */
static uint64_t sim_now(void)
{
	struct timespec ts;
	uint64_t ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec < 0)
		return 0;
	ms = (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	return ms > LIBIDGEN_EPOCH_UNIX_MS ? ms - LIBIDGEN_EPOCH_UNIX_MS : 0;
}

static void sim_sleep_to_next_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts = (struct timespec){ 0, 1000000 - ts.tv_nsec % 1000000 };
	nanosleep(&ts, NULL);
}

static uint64_t last_ms(const struct idgen_sim *s)
{
	return atomic_load(&s->last) >> s->seq_bits;
}

/* Every slot of ms and below used: the next ID is ms + 1's first. */
static void set_last_ms(struct idgen_sim *s, uint64_t ms)
{
	atomic_store(&s->last, ((ms + 1) << s->seq_bits) - 1);
}

static void default_layout(struct idgen_sim *s)
{
	s->region_bits = SIM_REGION_BITS;
	s->worker_bits = SIM_WORKER_BITS;
	s->seq_bits = SIM_SEQ_BITS;
}

/*
 * The file form: every millisecond below the fence and up to now counts
 * as minted, the worst case for the lease's next holder.
 */
static void file_advance(struct idgen_sim *s)
{
	uint64_t now = sim_now(), top;

	if (!s->leased || now <= s->floor_ms)
		return;
	top = now < s->valid_until_ms ? now : s->valid_until_ms - 1;
	if (top > last_ms(s))
		set_last_ms(s, top);
}

/*
 * The state file: "leased region worker floor until last R W S", one
 * line, replaced whole (rename) at every change.
 */
static int file_load(struct idgen_sim *s)
{
	unsigned int leased, rb, wb, sb;
	uint64_t last = 0;
	FILE *f;
	int n;

	if (!s->file)
		return 0;
	s->leased = false;
	s->region = s->worker = 0;
	s->floor_ms = s->valid_until_ms = 0;
	default_layout(s);
	f = fopen(s->file, "r");
	if (!f) {
		if (errno != ENOENT)
			return -errno;
		set_last_ms(s, 0);
		return 0;
	}
	n = fscanf(f, "%u %" SCNu32 " %" SCNu32 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %u %u %u", &leased, &s->region, &s->worker, &s->floor_ms,
		   &s->valid_until_ms, &last, &rb, &wb, &sb);
	fclose(f);
	/* A layout the module would not take is not one it holds. */
	if (n != 9 || !idgen_widths_valid(rb, wb, sb))
		return -EIO;
	s->leased = leased;
	s->region_bits = rb;
	s->worker_bits = wb;
	s->seq_bits = sb;
	set_last_ms(s, last);
	file_advance(s);
	return 0;
}

static int file_store(struct idgen_sim *s)
{
	FILE *f;

	if (!s->file)
		return 0;
	f = fopen(s->tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%u %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64
		" %u %u %u\n", (unsigned int)s->leased, s->region, s->worker,
		s->floor_ms, s->valid_until_ms, last_ms(s), s->region_bits,
		s->worker_bits, s->seq_bits);
	if (fclose(f) || rename(s->tmp, s->file))
		return -errno;
	return 0;
}

static void file_log(struct idgen_sim *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void file_log(struct idgen_sim *s, const char *fmt, ...)
{
	va_list ap;
	FILE *f;

	if (!s->log)
		return;
	f = fopen(s->log, "a");
	if (!f)
		return;
	fprintf(f, "%" PRIu64 " ", sim_now());
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

IDGEN_EXPORT ssize_t idgen_sim_mint(struct idgen_sim *s, uint64_t *ids, size_t n)
{
	const struct idgen_layout lay = {
		.region_bits = s->region_bits, .worker_bits = s->worker_bits,
		.seq_bits = s->seq_bits,
	};
	uint64_t old, first, top, now, lead_end, fence, mask;
	unsigned int waited = 0;
	size_t i;

	if (!n || n > (1U << 24))
		return -EINVAL;
	/* A child's copy of the state would mint its parent's IDs. */
	if (s->pid != getpid())
		return -ECHILD;
	if (!s->leased)
		return -ENOKEY;
	fence = s->valid_until_ms;
	mask = (1ULL << s->seq_bits) - 1;
	old = atomic_load(&s->last);
	for (;;) {
		now = sim_now();
		if (!now)
			return -ETIME;		/* a clock before the epoch */
		first = old + 1;
		if (first >> s->seq_bits < now)
			first = now << s->seq_bits;
		if (first >> s->seq_bits <= s->floor_ms)
			first = (s->floor_ms + 1) << s->seq_bits;
		if (first >> s->seq_bits >= fence)
			return fence > LIBIDGEN_MS_MAX ? -EOVERFLOW : -EKEYEXPIRED;
		/* The last slot it may use: within the lead and the fence. */
		lead_end = ((now + LIBIDGEN_SIM_MAX_LEAD_MS + 1) << s->seq_bits) - 1;
		if (first > lead_end) {
			/*
			 * Only the lead holds it back, the clock running on: wait
			 * for the next millisecond, as the module's read blocks.
			 * Further ahead than the lead can take it, the clock was
			 * stepped back (or the floor is ahead): refused, as by
			 * the module.
			 */
			if ((first >> s->seq_bits) - now > LIBIDGEN_SIM_MAX_LEAD_MS + 1 ||
			    waited++ >= LIBIDGEN_SIM_WAIT_MS)
				return -ETIME;
			sim_sleep_to_next_ms();
			old = atomic_load(&s->last);
			continue;
		}
		top = first + (n - 1);
		if (top > lead_end)
			top = lead_end;
		if (top >> s->seq_bits >= fence)
			top = (fence << s->seq_bits) - 1;
		if (atomic_compare_exchange_weak(&s->last, &old, top))
			break;
	}
	for (i = 0; first + i <= top; i++) {
		uint64_t slot = first + i;

		idgen_compose(&lay, slot >> s->seq_bits, s->region, s->worker,
			      slot & mask, &ids[i]);
	}
	atomic_fetch_add(&s->minted, i);
	if (s->file) {
		int err = file_store(s);

		if (err)
			return err;
	}
	return i;
}

IDGEN_EXPORT int idgen_sim_get_state(struct idgen_sim *s,
				     struct idgen_device_state *out)
{
	uint64_t now, used;
	int err;

	err = file_load(s);
	if (err)
		return err;
	now = sim_now();
	used = last_ms(s);
	memset(out, 0, sizeof(*out));
	out->now_ms = out->wall_ms = now;
	out->last_ms = used;
	out->max_lead_ms = LIBIDGEN_SIM_MAX_LEAD_MS;
	out->ids = atomic_load(&s->minted);
	if (!s->leased) {
		/* The load-time default's widths, as the module. */
		out->region_bits = SIM_REGION_BITS;
		out->worker_bits = SIM_WORKER_BITS;
		out->seq_bits = SIM_SEQ_BITS;
		return 0;
	}
	out->flags = LIBIDGEN_STATE_LEASED;
	out->region = s->region;
	out->worker = s->worker;
	out->floor_ms = s->floor_ms;
	out->valid_until_ms = s->valid_until_ms;
	out->region_bits = s->region_bits;
	out->worker_bits = s->worker_bits;
	out->seq_bits = s->seq_bits;
	/* The ms the next ID carries at the earliest. */
	out->next_ms = (atomic_load(&s->last) + 1) >> s->seq_bits;
	if (out->next_ms < now)
		out->next_ms = now;
	if (out->next_ms <= s->floor_ms)
		out->next_ms = s->floor_ms + 1;
	return 0;
}

/*
 * A lease that could never mint, its first ms @first_ms at or past its
 * fence, is refused as the module refuses it (uapi IDGEN_IOC_SET_LEASE):
 * EOVERFLOW when the time field ends first, EKEYEXPIRED otherwise.
 */
static int never_mints(uint64_t first_ms)
{
	return first_ms > LIBIDGEN_MS_MAX ? -EOVERFLOW : -EKEYEXPIRED;
}

IDGEN_EXPORT int idgen_sim_set_lease(struct idgen_sim *s, uint32_t region,
				     uint32_t worker, uint64_t floor_ms,
				     uint64_t valid_until_ms,
				     const struct idgen_layout *layout,
				     unsigned int flags)
{
	unsigned int rb = SIM_REGION_BITS, wb = SIM_WORKER_BITS, sb = SIM_SEQ_BITS;
	uint64_t now = sim_now(), first_ms, used;
	bool renewal = false;
	int err;

	if (flags & ~LIBIDGEN_LEASE_CLOCK_SYNCED)
		return -EINVAL;
	if (layout && (layout->region_bits || layout->worker_bits || layout->seq_bits)) {
		if (!idgen_widths_valid(layout->region_bits, layout->worker_bits,
					layout->seq_bits))
			return -EINVAL;
		rb = layout->region_bits;
		wb = layout->worker_bits;
		sb = layout->seq_bits;
	}
	err = file_load(s);
	if (err)
		return err;
	if (region >= 1U << rb || worker >= 1U << wb ||
	    floor_ms >= valid_until_ms || valid_until_ms > LIBIDGEN_MS_MAX + 1)
		return -EINVAL;
	/* The node form holds one node's lock: only that node's leases. */
	if (s->lock_fd >= 0 && (region || worker != s->worker || rb != SIM_REGION_BITS ||
				wb != SIM_WORKER_BITS || sb != SIM_SEQ_BITS))
		return -EPERM;
	/* A fence the clock has passed: the module refuses it so. */
	if (valid_until_ms <= now)
		return never_mints(now);
	if (s->leased && s->region == region && s->worker == worker &&
	    s->region_bits == rb && s->worker_bits == wb) {
		if (valid_until_ms < s->valid_until_ms)
			return -EINVAL;
		renewal = true;
	}
	/*
	 * Nor can it mint when its first ms, above the floor and above every
	 * ms the host used, lies at or past the fence.  Nothing changed.
	 */
	used = last_ms(s);
	first_ms = (floor_ms > used ? floor_ms : used) + 1;
	if (first_ms >= valid_until_ms)
		return never_mints(first_ms);
	/*
	 * Logged before it takes effect: a process killed in between leaves a
	 * log that says more than the generator holds, never less, so the
	 * windows tests derive from the log are never too small.
	 */
	file_log(s, "push r=%" PRIu32 " w=%" PRIu32 " floor=%" PRIu64
		 " until=%" PRIu64 " layout=%u/%u/%u", region, worker, floor_ms,
		 valid_until_ms, rb, wb, sb);
	if (!renewal || floor_ms > s->floor_ms)
		s->floor_ms = floor_ms;
	if (floor_ms > used)
		used = floor_ms;
	s->region = region;
	s->worker = worker;
	s->valid_until_ms = valid_until_ms;
	s->region_bits = rb;
	s->worker_bits = wb;
	s->seq_bits = sb;
	set_last_ms(s, used);
	s->leased = true;
	return file_store(s);
}

IDGEN_EXPORT int idgen_sim_revoke(struct idgen_sim *s, uint64_t *last)
{
	int err;

	err = file_load(s);
	if (err)
		return err;
	if (!s->leased) {
		/* As the module: a retried revoke is safe. */
		*last = last_ms(s);
		file_log(s, "revoke-idle last=%" PRIu64, *last);
		return 0;
	}
	s->leased = false;
	err = file_store(s);
	if (err)
		return err;
	*last = last_ms(s);
	file_log(s, "revoke last=%" PRIu64, *last);
	return 0;
}

/*
 * One minting simulation per node on the host: two of one worker would
 * mint the same IDs.  The lock is a name in the abstract socket namespace
 * ("@idgen-sim-r0-wWORKER", unix(7)), bound for the process's life: one
 * name for every user, environment and directory on the host (its network
 * namespace), which no file system clean-up can remove and which the
 * kernel lets go when the process ends however it ends.  A file's lock
 * could be neither.  The abstract namespace is one per network namespace:
 * a simulation in another one (a container's, unshare -n) does not see
 * this lock.
 */
static int lock_node(uint32_t worker, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd, ret;

	/* sun_path[0] stays 0: the abstract namespace. */
	len = offsetof(struct sockaddr_un, sun_path) + 1 +
	      snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
		       LIBIDGEN_SIM_LOCK_NAME "%u", worker);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "the simulated generator of region 0, worker %u "
			 "cannot make its lock (a unix socket): %s", worker, strerror(-ret));
		return ret;
	}
	if (bind(fd, (struct sockaddr *)&sa, len)) {
		ret = -errno;
		close(fd);
		if (ret == -EADDRINUSE) {
			snprintf(err, errlen, "another simulated generator of region 0, "
				 "worker %u runs on this host (it holds @" LIBIDGEN_SIM_LOCK_NAME
				 "%u): two would mint the same IDs; give each its own worker",
				 worker, worker);
			return -EBUSY;
		}
		snprintf(err, errlen, "the simulated generator of region 0, worker %u "
			 "cannot take its lock @" LIBIDGEN_SIM_LOCK_NAME "%u: %s", worker,
			 worker, strerror(-ret));
		return ret;
	}
	return fd;
}

static void say(char *err, size_t errlen, const char *what)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", what);
}

static int open_node(uint32_t worker, uint64_t lease_ms, struct idgen_sim **out,
		     char *err, size_t errlen)
{
	struct timespec pause = { 0, 1000000 };
	char why[256];
	struct idgen_sim *s;
	uint64_t now = sim_now();
	int fd;

	if (worker >> SIM_WORKER_BITS) {
		say(err, errlen, "the simulation's worker must be from 0 to 127");
		return -EINVAL;
	}
	if (lease_ms > LIBIDGEN_MS_MAX) {
		say(err, errlen, "the simulation's lease is longer than the time field");
		return -EINVAL;
	}
	if (!now) {
		say(err, errlen, "the wall clock is before the idgen epoch");
		return -ETIME;
	}
	/*
	 * A real generator's lease may hold any worker of region 0 too: the
	 * module loaded (seen in /sys even where a container has no device
	 * node) is a real generator on this host.
	 */
	if (!access(LIBIDGEN_DEVICE, F_OK) || !access("/sys/module/idgen", F_OK)) {
		say(err, errlen, "the idgen module is loaded (/dev/idgen or "
		    "/sys/module/idgen): a real generator runs on this host, and a "
		    "simulated one could mint its IDs; use /dev/idgen");
		return -EEXIST;
	}
	fd = lock_node(worker, why, sizeof(why));
	if (fd < 0) {
		say(err, errlen, why);
		return fd;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		say(err, errlen, strerror(ENOMEM));
		return -ENOMEM;
	}
	default_layout(s);
	s->pid = getpid();
	s->lock_fd = fd;
	s->worker = worker;
	s->leased = true;
	/* Above every ms a run before this one could have stamped. */
	s->floor_ms = now + LIBIDGEN_SIM_MAX_LEAD_MS;
	set_last_ms(s, s->floor_ms);
	s->valid_until_ms = lease_ms ? s->floor_ms + lease_ms : LIBIDGEN_MS_MAX + 1;
	if (s->valid_until_ms > LIBIDGEN_MS_MAX + 1)
		s->valid_until_ms = LIBIDGEN_MS_MAX + 1;
	while (sim_now() <= s->floor_ms)
		nanosleep(&pause, NULL);
	*out = s;
	return 0;
}

static int open_file(const char *file, struct idgen_sim **out, char *err,
		     size_t errlen)
{
	struct idgen_sim *s = calloc(1, sizeof(*s));
	int ret;

	if (!s) {
		say(err, errlen, strerror(ENOMEM));
		return -ENOMEM;
	}
	s->pid = getpid();
	s->lock_fd = -1;
	s->file = strdup(file);
	if (!s->file || asprintf(&s->tmp, "%s.tmp", file) < 0 ||
	    asprintf(&s->log, "%s.log", file) < 0) {
		s->tmp = s->log = NULL;
		idgen_sim_close(s);
		say(err, errlen, strerror(ENOMEM));
		return -ENOMEM;
	}
	ret = file_load(s);
	if (ret) {
		if (err && errlen)
			snprintf(err, errlen, "simulated generator %s: %s", file,
				 ret == -EIO ? "not a state file" : strerror(-ret));
		idgen_sim_close(s);
		return ret;
	}
	*out = s;
	return 0;
}

IDGEN_EXPORT int idgen_sim_open(const char *spec, uint64_t lease_ms,
				struct idgen_sim **out, char *err, size_t errlen)
{
	uint64_t worker = 0;

	if (!spec || (strcmp(spec, "sim") && strncmp(spec, "sim:", 4))) {
		say(err, errlen, "not a simulated generator: give sim, sim:WORKER or sim:FILE");
		return -EINVAL;
	}
	if (!spec[3])
		return open_node(0, lease_ms, out, err, errlen);
	spec += 4;
	if (!*spec || strspn(spec, "0123456789") != strlen(spec))
		return *spec ? open_file(spec, out, err, errlen) :
		       (say(err, errlen, "sim: names no worker and no file"), -EINVAL);
	if (idgen_decimal_str(spec, 0, (1U << SIM_WORKER_BITS) - 1, &worker)) {
		say(err, errlen, "the simulation's worker must be a decimal number "
		    "from 0 to 127");
		return -EINVAL;
	}
	return open_node(worker, lease_ms, out, err, errlen);
}

IDGEN_EXPORT int idgen_sim_is_spec(const char *spec)
{
	return spec && (!strcmp(spec, "sim") || !strncmp(spec, "sim:", 4));
}

IDGEN_EXPORT void idgen_sim_close(struct idgen_sim *s)
{
	if (!s)
		return;
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	free(s->file);
	free(s->tmp);
	free(s->log);
	free(s);
}

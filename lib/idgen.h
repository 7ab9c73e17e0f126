/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libidgen - mint, decode and format idgen IDs.
 *
 * An idgen ID is a 64-bit integer whose top bit is 0, so it fits a signed
 * bigint or a Java long:
 *
 *   bits 62..22  milliseconds since 2026-01-01T00:00:00Z (41 bits)
 *   bits 21..0   region, worker and sequence; their widths are a layout's.
 *
 * The time field never moves, so IDs of every layout sort together by time,
 * and the creation time, region, worker and sequence come back out of an ID
 * with shifts and masks, with no call to the device (idgen_decode()).  Only
 * minting needs /dev/idgen (idgen_open(), idgen_mint(), struct
 * idgen_buffer; struct idgen_generator for a program that may run on the
 * simulation instead).
 *
 * Errors: every function that can fail returns a negative errno value
 * (-EINVAL, -ERANGE, -ENOKEY, ...) and leaves errno alone; 0 or a count
 * means success.  idgen_strerror() says what an errno means for idgen.
 *
 * Thread safety: everything is safe to call from several threads at once,
 * given distinct output buffers; a struct idgen_buffer has its own lock,
 * a struct idgen_keyring a read-write lock (a key version may be added
 * while other threads encode), and a struct idgen_layouts is read-only
 * once loaded.
 *
 * Times: "ms" is milliseconds since the idgen epoch, the number in the ID;
 * "unix_ms" is milliseconds since 1970-01-01T00:00:00Z.
 */
#ifndef LIBIDGEN_H
#define LIBIDGEN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2026-01-01T00:00:00Z in Unix milliseconds. */
#define LIBIDGEN_EPOCH_UNIX_MS	1767225600000ULL
/* The last millisecond an ID can carry: 2095-09-07T15:47:35.551Z. */
#define LIBIDGEN_MS_MAX		((1ULL << 41) - 1)
/* Region, worker and sequence bits together. */
#define LIBIDGEN_NODE_SEQ_BITS	22
/* The largest ID: 2^63 - 1. */
#define LIBIDGEN_ID_MAX		0x7fffffffffffffffULL

/* Room for an ID in decimal and its NUL: 2^63 - 1 has 19 digits. */
#define LIBIDGEN_ID_STRLEN	21
/* Room for "2095-09-07T15:47:35.551Z" and its NUL (and for any year). */
#define LIBIDGEN_TIME_STRLEN	32

/*
 * A layout: from millisecond cutover_ms on (idgen ms, not Unix ms), IDs
 * carry region_bits, worker_bits and seq_bits, which add up to 22, with at
 * most 8 region bits and at least 6 sequence bits.  Version 1, in force
 * from the epoch, is 3/7/12.
 */
struct idgen_layout {
	unsigned int version;
	uint64_t cutover_ms;
	uint8_t region_bits;
	uint8_t worker_bits;
	uint8_t seq_bits;
};

/* Layout version 1. */
extern const struct idgen_layout idgen_layout_v1;

/*
 * A table of layouts, ordered by cutover: version 1 at cutover 0, then the
 * ones a layouts file adds.  NULL wherever a table is taken means the
 * built-in table, version 1 alone.
 */
struct idgen_layouts;

/*
 * Parse a layouts file's text.  One layout a line:
 *
 *   # version cutover_ms region_bits worker_bits seq_bits
 *   2 31536000000 3 10 9
 *
 * Fields are plain decimal separated by blanks; '#' starts a comment;
 * blank lines are ignored.  Version 1 is built in: a line for it must say
 * "1 0 3 7 12".  Versions and cutovers must strictly increase from line to
 * line, cutovers must not exceed LIBIDGEN_MS_MAX, and the widths must be
 * valid (see struct idgen_layout).  On success *out is a new table for
 * idgen_layouts_free().  On failure returns -EINVAL (or -ENOMEM) and, when
 * err is not NULL, writes "line N: what is wrong" into err.
 */
int idgen_layouts_parse(const char *text, struct idgen_layouts **out,
			char *err, size_t errlen);

/*
 * idgen_layouts_parse() on the contents of the file at path; err is then
 * "PATH: line N: ..." or "PATH: strerror".  -errno from open() or read().
 */
int idgen_layouts_load(const char *path, struct idgen_layouts **out,
		       char *err, size_t errlen);

/* Free a table from idgen_layouts_parse() or _load(); NULL is fine. */
void idgen_layouts_free(struct idgen_layouts *layouts);

/*
 * The layout in force at millisecond ms: the one with the greatest cutover
 * at or below ms.  Never NULL.
 */
const struct idgen_layout *idgen_layout_at(const struct idgen_layouts *layouts,
					   uint64_t ms);

/* How many layouts a table holds, and the i-th, in cutover order. */
size_t idgen_layouts_count(const struct idgen_layouts *layouts);
const struct idgen_layout *idgen_layouts_get(const struct idgen_layouts *layouts,
					     size_t i);

/* An ID taken apart. */
struct idgen_decoded {
	uint64_t id;
	uint64_t ms;		/* since the idgen epoch */
	uint64_t unix_ms;	/* ms + LIBIDGEN_EPOCH_UNIX_MS */
	uint32_t region;
	uint32_t worker;
	uint32_t seq;
	unsigned int version;	/* the layout the ID was decoded with */
};

/*
 * Decode id with the layout in force at its own millisecond.  Pure: no
 * call to the device.  -EINVAL if the top bit is set (not an idgen ID).
 */
int idgen_decode(uint64_t id, const struct idgen_layouts *layouts,
		 struct idgen_decoded *out);

/*
 * The ID a node of the given layout mints as sequence number seq of
 * millisecond ms.  -ERANGE if ms exceeds LIBIDGEN_MS_MAX or a field does
 * not fit its width.  The inverse of idgen_decode(); for tests and tools.
 */
int idgen_compose(const struct idgen_layout *layout, uint64_t ms,
		  uint32_t region, uint32_t worker, uint32_t seq,
		  uint64_t *id);

/*
 * The smallest ID any node can mint at or after the moment unix_ms: with
 * the node and sequence bits zero.  So the IDs minted during [start, end)
 * are exactly those with
 *
 *   id >= idgen_min_id_at(start) AND id < idgen_min_id_at(end)
 *
 * A moment before the epoch gives 0.  -ERANGE past the last millisecond
 * (LIBIDGEN_EPOCH_UNIX_MS + LIBIDGEN_MS_MAX): no ID is that late, and no
 * bigint is above all IDs.
 */
int idgen_min_id_at(int64_t unix_ms, uint64_t *id);

/*
 * Parse an ID in canonical decimal: digits only, no sign, no blanks, no
 * leading zeros ("0" itself is fine), nothing after.  -EINVAL for
 * anything else (including an empty string), -ERANGE above 2^63 - 1.
 */
int idgen_parse_id(const char *s, uint64_t *id);

/* Format id in decimal into buf; returns the length. */
int idgen_format_id(uint64_t id, char buf[LIBIDGEN_ID_STRLEN]);

/*
 * Format Unix milliseconds as UTC RFC 3339 with milliseconds,
 * "2026-11-29T21:40:01.123Z".  Returns the length, -ERANGE if the time
 * does not fit a struct tm.
 */
int idgen_format_time(int64_t unix_ms, char buf[LIBIDGEN_TIME_STRLEN]);

/*
 * Parse an RFC 3339 timestamp, strictly: YYYY-MM-DDTHH:MM:SS, an optional
 * fraction of 1 to 9 digits (truncated to the millisecond), and "Z" or an
 * offset "+hh:mm"/"-hh:mm".  "T" and "Z" may be lower case; nothing else
 * is tolerated (no blanks, the day must exist in the month).  A leap
 * second, second 60 of 23:59 UTC, is the last millisecond of 23:59:59
 * (23:59:59.999), whatever its fraction; second 60 of any other UTC
 * minute is refused.  Years 0000 to 9999, as RFC 3339 has them; a time
 * before 1970 gives negative Unix ms, and idgen_min_id_at() of any time
 * before the idgen epoch is 0.  -EINVAL on bad syntax or a field out of
 * range.
 */
int idgen_parse_time(const char *s, int64_t *unix_ms);

/*
 * JSON, with IDs as strings (they pass 2^53, which JSON numbers do not
 * keep).  idgen_json_decoded() writes one object, snprintf()-style (the
 * return value is the length the whole object needs):
 *
 *   {"id":"120655649973116928","created_at":"2026-11-29T21:58:44.588Z",
 *    "region":5,"worker":77,"sequence":0,"layout_version":1,
 *    "ms":28766324588,"unix_ms":1795991924588}
 *
 * created_at is RFC 3339 UTC with milliseconds; ms (since the idgen epoch)
 * and unix_ms are JSON numbers: they stay below 2^53.  Every idgen program
 * writes a decoded ID in this shape (idgen-httpd's GET /v1/ids/{id} too).
 * idgen_json_write_decoded() writes a JSON array of such objects and a
 * newline to f; idgen_json_write_ids() writes {"ids":["...",...]} and a
 * newline.  Both return 0 or -EIO.
 */
int idgen_json_decoded(char *buf, size_t size, const struct idgen_decoded *d);
int idgen_json_write_decoded(FILE *f, const struct idgen_decoded *d, size_t n);
int idgen_json_write_ids(FILE *f, const uint64_t *ids, size_t n);

/*
 * The device.  idgen_open() opens path (NULL: /dev/idgen) read-only and
 * close-on-exec and returns the file descriptor, or -errno.  Pass
 * LIBIDGEN_NONBLOCK to get -EAGAIN instead of short sleeps for the clock.
 * Pass LIBIDGEN_VERIFY to open only idgen's device, as every program that
 * mints should: what path names, through symbolic links, is looked at
 * before it is opened (a regular file, a FIFO or a directory is refused
 * with -ENOTTY unopened, and so is another driver's device when sysfs
 * can tell), the open never blocks (O_NONBLOCK until it is done, and
 * O_NOCTTY), and the descriptor must pass idgen_device_verify(): its
 * -ENOTTY or -EIO, the file closed.  idgen_close() closes it.
 */
#define LIBIDGEN_DEVICE		"/dev/idgen"
#define LIBIDGEN_NONBLOCK	(1U << 0)
#define LIBIDGEN_VERIFY		(1U << 1)
int idgen_open(const char *path, unsigned int flags);
int idgen_close(int fd);

/*
 * Mint up to n IDs (n >= 1) with one read(): a strictly increasing batch,
 * each ID greater than every ID the host minted before.  Returns how many
 * were minted, 1 to n (fewer than n at the lease's fence or the clock's
 * lead bound), or, when none was:
 *
 *   -ENOKEY       no lease is in force
 *   -EKEYEXPIRED  the lease's fence is reached
 *   -ETIME        the clock is behind the generator
 *   -EAGAIN       non-blocking, and the generator would wait for the clock
 *   -EOVERFLOW    the 41-bit time range is exhausted
 *   -EINVAL       n is 0 or too large
 *   or another -errno from read() (EINTR is retried).
 */
ssize_t idgen_mint(int fd, uint64_t *ids, size_t n);

/* One ID: 0 or a negative errno as for idgen_mint(). */
int idgen_mint_one(int fd, uint64_t *id);

/*
 * The layout the module mints with now (IDGEN_IOC_GET_STATE), as widths;
 * version and cutover_ms are 0.  -errno.
 */
int idgen_device_layout(int fd, struct idgen_layout *out);

/*
 * The generator's state and counters (IDGEN_IOC_GET_STATE, any reader of
 * the device): what every program that looks at the generator reads, in
 * the fields and units of the module's struct idgen_state
 * (include/uapi/linux/idgen.h says what each one means).  Times are ms
 * since the idgen epoch.  The struct is fixed, as the module's is: what
 * the module adds later comes in a new struct and call.
 */
#define LIBIDGEN_STATE_LEASED		(1U << 0)	/* a lease is in force */
#define LIBIDGEN_STATE_CLOCK_HELD	(1U << 1)	/* a forward step is held */
struct idgen_device_state {
	uint64_t now_ms;
	uint64_t wall_ms;
	uint64_t last_ms;
	uint64_t next_ms;
	uint64_t floor_ms;		/* the lease's; 0 without one */
	uint64_t valid_until_ms;	/* the lease's fence; 0 without one */
	int64_t held_step_ms;
	uint32_t flags;			/* LIBIDGEN_STATE_* */
	uint32_t region;
	uint32_t worker;
	uint32_t max_lead_ms;
	uint32_t max_step_ms;
	uint8_t region_bits;		/* the layout in force */
	uint8_t worker_bits;
	uint8_t seq_bits;
	uint64_t ids;
	uint64_t reads;
	uint64_t borrowed_ms;
	uint64_t steps_back;
	uint64_t steps_forward;
	uint64_t steps_adopted;
	uint64_t fence_refusals;
	uint64_t lead_refusals;
	uint64_t nolease_refusals;
	uint64_t range_refusals;
};
int idgen_device_get_state(int fd, struct idgen_device_state *out);

/*
 * Whether a state is one the module can report: widths that
 * idgen_widths_valid() accepts; LIBIDGEN_STATE_CLOCK_HELD exactly when
 * held_step_ms is not 0; with a lease, a region and a worker that fit the
 * widths and floor_ms < valid_until_ms <= LIBIDGEN_MS_MAX + 1; without
 * one, region, worker, floor_ms and valid_until_ms all 0.  1 or 0.
 */
int idgen_device_state_valid(const struct idgen_device_state *st);

/*
 * Whether fd is idgen's device, told by what it is, never by its path:
 * a character device (-ENOTTY for a regular file, whose every reader
 * would read the same IDs, a FIFO, a socket, a directory), of the number
 * /sys/class/misc/idgen/dev gives when that is readable (-ENOTTY for
 * another: /dev/zero would mint ID 0 for ever; with sysfs mounted and no
 * idgen there, no device is idgen's), that answers IDGEN_IOC_GET_STATE
 * (-ENOTTY if not; asked only once the number is checked, so that no
 * device sysfs says is another driver's receives the request) with a
 * state idgen_device_state_valid() accepts (-EIO if not).  0, or -errno
 * from fstat(), or from the ioctl on a device sysfs vouches for.  *out,
 * when out is not NULL, gets the state on success.
 */
int idgen_device_verify(int fd, struct idgen_device_state *out);

/*
 * Set the lease, or renew it when region and worker are those held
 * (IDGEN_IOC_SET_LEASE, CAP_SYS_ADMIN): IDs from max(floor_ms, the host's
 * last ms + 1) until valid_until_ms, with layout's widths (NULL, or all
 * three 0: the module's load-time default; version and cutover_ms are not
 * looked at).  flags: LIBIDGEN_LEASE_CLOCK_SYNCED vouches that the wall
 * clock is synchronised, so a held forward step is adopted.  0, or -EINVAL
 * for a lease the module refuses, -EKEYEXPIRED for one it could never mint
 * under, -EPERM, or another -errno.
 */
#define LIBIDGEN_LEASE_CLOCK_SYNCED	(1U << 0)
int idgen_device_set_lease(int fd, uint32_t region, uint32_t worker,
			   uint64_t floor_ms, uint64_t valid_until_ms,
			   const struct idgen_layout *layout, unsigned int flags);

/*
 * Stop minting under the lease (IDGEN_IOC_REVOKE, CAP_SYS_ADMIN); *last_ms
 * is the host's last ms, which bounds every ID minted.  Without a lease it
 * succeeds too.  0 or -errno.
 */
int idgen_device_revoke(int fd, uint64_t *last_ms);

/*
 * Whether widths make a layout the module accepts: they add up to
 * LIBIDGEN_NODE_SEQ_BITS (22), with at most 8 region bits and at least 6
 * sequence bits (so at most 16 worker bits).  1 or 0.
 */
int idgen_widths_valid(unsigned int region_bits, unsigned int worker_bits,
		       unsigned int seq_bits);

/*
 * Parse widths as programs and configuration files name them, "R/W/S"
 * ("3/7/12": region, worker and sequence bits): three numbers in canonical
 * decimal (as idgen_parse_id()) that idgen_widths_valid() accepts.  Fills
 * the widths of *out, version and cutover_ms 0.  0, or -EINVAL with err
 * (when not NULL) saying what is wrong.
 */
int idgen_widths_parse(const char *s, struct idgen_layout *out,
		       char *err, size_t errlen);

/*
 * What an errno means from idgen, or NULL when idgen gives it no meaning
 * of its own (use strerror()).  Takes err positive or negative.
 */
const char *idgen_strerror(int err);

/*
 * A buffer of minted IDs, for apps that want one ID at a time without a
 * system call for each.  It holds up to capacity IDs, read from fd in
 * batches; when a take finds it half empty or less it tops it up.  It never
 * hands out an ID read more than max_age_ms ago (measured on CLOCK_BOOTTIME,
 * which no step of the wall clock moves: a forward step the module holds
 * does not age what it mints): older IDs are dropped (they are holes, never
 * reissued), so IDs from the buffer stay k-sorted with other hosts' within
 * max_age_ms plus clock skew.  IDs come out in increasing order.
 *
 * idgen_buffer_take() may be called from many threads at once (a mutex;
 * a refill, one read(), happens under it).  A child process, however it
 * was made (fork(), _Fork(), clone(), clone3(), into a new PID namespace
 * or not), never gets the IDs its parent buffered, and never waits for a
 * take its parent's threads were in at the fork: the IDs and the mutex
 * are in a wipe-on-fork mapping, which the child gets as zeros (an empty
 * buffer, a mutex no thread holds; libidgen(3) says what an old kernel
 * without one gets).  The buffer does
 * not own fd; close it after
 * idgen_buffer_free().
 *
 * idgen_buffer_new(): capacity 1 to 65536; returns 0 or -EINVAL/-ENOMEM.
 * idgen_buffer_take(): 0, or a negative errno as for idgen_mint() when
 * the buffer holds no fresh ID and a refill got none.
 */
struct idgen_buffer;
int idgen_buffer_new(int fd, size_t capacity, uint64_t max_age_ms,
		     struct idgen_buffer **out);
int idgen_buffer_take(struct idgen_buffer *b, uint64_t *id);
void idgen_buffer_free(struct idgen_buffer *b);

/*
 * A simulated generator: the module's minting and lease rules in this
 * process, for tests and benchmarks on a host whose kernel must not load
 * idgen.ko.  Never for IDs that are kept: across a restart of the host
 * it relies on the wall clock alone.  spec:
 *
 *   "sim" or "sim:WORKER"  a node of its own, region 0, worker 0..127,
 *       layout version 1, leased from open: its floor is above every ID
 *       an earlier process of the worker stamped, and its fence lease_ms
 *       after the floor (0: none).  Its minting word is kept in the file
 *       LIBIDGEN_SIM_STATE_DIR "/" LIBIDGEN_SIM_LOCK_NAME "WORKER" (16
 *       bytes: "idgensim", then the last ID reserved as a native 64-bit
 *       ms << 22 | sequence in its low 63 bits), mapped shared, so the
 *       last ID outlives the process however it ends: the floor is the
 *       later of that ID's millisecond and the wall clock at open plus
 *       the lead bound (for the runs before the file was made), and the
 *       word is only ever raised.  A wall clock stepped back between two
 *       runs makes the next one refuse to mint (-ETIME) until it has
 *       caught up, as the module does; the open does not wait.  Nothing
 *       is kept across a restart of the host (a tmpfs) or the file's
 *       removal: then the wall clock alone.  Whoever could write the
 *       file could replay its IDs: it is made 0600, opened with
 *       O_NOFOLLOW (-ELOOP for a link), and refused (-EPERM) when another
 *       user owns it or anyone but its owner may open it.  Only one
 *       process per worker on the host: it holds flock(2) on the file
 *       for its life, seen from every network namespace, and binds the
 *       abstract unix socket "@" LIBIDGEN_SIM_LOCK_NAME "WORKER", which
 *       holds even when the file is removed under it; a second open of
 *       the worker fails with -EBUSY on either (a container with a
 *       /dev/shm and a network namespace of its own is another host).  A systemd dynamic user (uid 61184
 *       to 65519: DynamicUser=, which implies RemoveIPC=, removing the
 *       file whenever its service stops) is refused (-EPERM).  It refuses
 *       (-EEXIST) to run beside a real generator (/dev/idgen or the
 *       module loaded).  Its
 *       lease may be renewed and revoked; only its own node's is taken
 *       (-EPERM).
 *   "sim:FILE"  (anything but a number) the lease side of a host, kept in
 *       FILE so that it outlives the process as the module's does, with
 *       every push and revoke appended to FILE.log ("<ms> push r=R w=W
 *       floor=F until=U layout=R/W/S", "<ms> revoke last=L",
 *       "<ms> revoke-idle last=L"; a push logged before it takes effect,
 *       a revoke after).  No lease until one is set; every millisecond
 *       below the fence and up to now counts as minted, the worst case for
 *       the next holder.  Not for several threads.  FILE, FILE.tmp and
 *       FILE.log are refused (-EPERM) when another user owns them or
 *       others may write them, never followed through a link (-ELOOP).
 *
 * Minting is the module's: one compare-and-swap on a word that holds the
 * millisecond and the sequence reserves a strictly increasing batch above
 * every ID before it, borrowing the next millisecond when the sequence
 * runs out, never stamping more than LIBIDGEN_SIM_MAX_LEAD_MS ahead of
 * CLOCK_REALTIME (at the lead it waits for the clock's next millisecond,
 * up to LIBIDGEN_SIM_WAIT_MS), never at or below the floor nor at or past
 * the fence.  A clock stepped back behind what it used is refused
 * (-ETIME), never followed back.
 *
 * idgen_sim_open(): 0, or -EINVAL, -EBUSY, -EEXIST, -ETIME (a wall clock
 * before the epoch), -EIO (FILE is not a state file, or the mark is not a
 * mark), -EACCES and the like (the mark cannot be opened), -ENOMEM,
 * -EOPNOTSUPP (no MADV_WIPEONFORK: a child could not be told from its
 * parent), with err (when not NULL) saying why.  idgen_sim_mint(): as
 * idgen_mint(), and -ECHILD in a process other than the one that opened
 * it, however it was made (a child's copy would mint its parent's IDs); thread-safe for "sim:WORKER", renewals
 * and revokes beside it included: a revoke's last_ms bounds every ID of
 * the lease, those of mints in flight as it ran too.
 * idgen_sim_get_state(), idgen_sim_set_lease(), idgen_sim_revoke(): as
 * idgen_device_get_state(), idgen_device_set_lease(),
 * idgen_device_revoke() (the counters are 0 but ids).
 * idgen_sim_is_spec(): 1 when spec names a simulation, else 0.
 * idgen_buffer_new_sim(): a buffer as idgen_buffer_new() over a
 * simulation, which must outlive it.
 */
#define LIBIDGEN_SIM_MAX_LEAD_MS	10
#define LIBIDGEN_SIM_WAIT_MS		1000
#define LIBIDGEN_SIM_LOCK_NAME		"idgen-sim-r0-w"
#define LIBIDGEN_SIM_STATE_DIR		"/dev/shm"
struct idgen_sim;
int idgen_sim_is_spec(const char *spec);
int idgen_sim_open(const char *spec, uint64_t lease_ms, struct idgen_sim **out,
		   char *err, size_t errlen);
void idgen_sim_close(struct idgen_sim *s);
ssize_t idgen_sim_mint(struct idgen_sim *s, uint64_t *ids, size_t n);
int idgen_sim_get_state(struct idgen_sim *s, struct idgen_device_state *out);
int idgen_sim_set_lease(struct idgen_sim *s, uint32_t region, uint32_t worker,
			uint64_t floor_ms, uint64_t valid_until_ms,
			const struct idgen_layout *layout, unsigned int flags);
int idgen_sim_revoke(struct idgen_sim *s, uint64_t *last_ms);
int idgen_buffer_new_sim(struct idgen_sim *s, size_t capacity, uint64_t max_age_ms,
			 struct idgen_buffer **out);

/*
 * A generator: idgen's device or a simulation behind one set of calls,
 * opened by the spec a program is configured with, so that no program
 * tells the two apart to mint, lease or look.  spec:
 *
 *   a path, or NULL for LIBIDGEN_DEVICE: the device, opened as
 *       idgen_open() with LIBIDGEN_VERIFY, always (a regular file, a FIFO,
 *       /dev/zero or another driver's device is refused: -ENOTTY, or -EIO
 *       for a state no module reports), blocking for the clock's short
 *       waits as the module's reads do;
 *   "sim", "sim:WORKER", "sim:FILE": the simulation (idgen_sim_open(),
 *       with its rules: owner-only state, one process per worker, -ECHILD
 *       in a child), each form only when flags take it:
 *
 *   LIBIDGEN_GENERATOR_SIM         "sim": a node of its own, worker 0
 *   LIBIDGEN_GENERATOR_SIM_WORKER  "sim:WORKER": a node of its own
 *   LIBIDGEN_GENERATOR_SIM_FILE    "sim:FILE": a host's lease side
 *
 * sim_lease_ms is a node's lease from open, as idgen_sim_open()'s lease_ms
 * (the file form has none until one is set).
 *
 * idgen_generator_open(): 0 with *out, or -EINVAL (a flag unknown, or a
 * spec that names a simulation wrongly: "sim:", a worker past 127),
 * -EPROTONOSUPPORT (a simulation of a form flags do not take), -ENOMEM,
 * or an errno of idgen_open() or idgen_sim_open(); err (when not NULL)
 * says why in words a program may print after the spec.
 * idgen_generator_close(): closes what it opened; NULL is fine.
 * idgen_generator_simulated(): 1 for a simulation, 0 for the device.
 * idgen_generator_name(): for log lines: the device's path, "sim:WORKER"
 * (also for "sim") or "sim:FILE".
 * idgen_generator_mint(), _get_state(), _set_lease(), _revoke(): as
 * idgen_mint(), idgen_device_get_state(), idgen_device_set_lease() and
 * idgen_device_revoke() on the device, or the idgen_sim_*() calls on a
 * simulation, with their errnos (-ECHILD from a simulation's mint in a
 * process other than its opener's).
 * idgen_generator_layout(): the widths minted with now, as
 * idgen_device_layout() (version and cutover_ms 0).
 * idgen_buffer_new_generator(): a buffer as idgen_buffer_new() over the
 * generator, which must outlive it.
 */
#define LIBIDGEN_GENERATOR_SIM		(1U << 0)
#define LIBIDGEN_GENERATOR_SIM_WORKER	(1U << 1)
#define LIBIDGEN_GENERATOR_SIM_FILE	(1U << 2)
struct idgen_generator;
int idgen_generator_open(const char *spec, unsigned int flags, uint64_t sim_lease_ms,
			 struct idgen_generator **out, char *err, size_t errlen);
void idgen_generator_close(struct idgen_generator *g);
int idgen_generator_simulated(const struct idgen_generator *g);
const char *idgen_generator_name(const struct idgen_generator *g);
ssize_t idgen_generator_mint(struct idgen_generator *g, uint64_t *ids, size_t n);
int idgen_generator_get_state(struct idgen_generator *g, struct idgen_device_state *out);
int idgen_generator_layout(struct idgen_generator *g, struct idgen_layout *out);
int idgen_generator_set_lease(struct idgen_generator *g, uint32_t region, uint32_t worker,
			      uint64_t floor_ms, uint64_t valid_until_ms,
			      const struct idgen_layout *layout, unsigned int flags);
int idgen_generator_revoke(struct idgen_generator *g, uint64_t *last_ms);
int idgen_buffer_new_generator(struct idgen_generator *g, size_t capacity,
			       uint64_t max_age_ms, struct idgen_buffer **out);

/*
 * FF1, the format-preserving cipher of NIST SP 800-38G Rev. 1, with AES
 * (libcrypto).  A struct idgen_ff1 holds an AES key (16, 24 or 32 bytes:
 * AES-128/192/256) and a radix from 2 to 36.  Numeral strings are arrays
 * of values 0..radix-1, most significant first, of a length from the
 * standard's minimum (the least n with radix^n >= 1000000: 20 for radix
 * 2, 6 for radix 10; idgen_ff1_minlen()) to LIBIDGEN_FF1_MAXLEN; tweaks
 * are up to LIBIDGEN_FF1_TWEAK_MAX bytes.  idgen_ff1_encrypt() and
 * _decrypt() write n numerals to y (which may be x); 0, -EINVAL for a
 * numeral >= radix, -ERANGE for a length out of bounds, -ENOMEM, or -EIO
 * when libcrypto fails.  One struct may be used by several threads at once.
 */
#define LIBIDGEN_FF1_RADIX_MIN	2
#define LIBIDGEN_FF1_RADIX_MAX	36
#define LIBIDGEN_FF1_MAXLEN	4096
#define LIBIDGEN_FF1_TWEAK_MAX	256
struct idgen_ff1;
int idgen_ff1_new(const uint8_t *key, size_t keylen, unsigned int radix,
		  struct idgen_ff1 **out);
void idgen_ff1_free(struct idgen_ff1 *f);
size_t idgen_ff1_minlen(const struct idgen_ff1 *f);
int idgen_ff1_encrypt(const struct idgen_ff1 *f, const uint8_t *tweak, size_t tlen,
		      const uint8_t *x, uint8_t *y, size_t n);
int idgen_ff1_decrypt(const struct idgen_ff1 *f, const uint8_t *tweak, size_t tlen,
		      const uint8_t *x, uint8_t *y, size_t n);

/*
 * Public IDs (Documentation/design.md section 10, in idgen's source tree): an
 * ID shown on pages and in links instead of the ID itself, which reveals its
 * time, region and worker.
 * pub = FF1-AES-256 over radix 2 of the ID's 63 bits (most significant
 * first) with the key version as a 4-byte big-endian tweak: a permutation
 * of 0..2^63-1, so every ID has one public ID and every public ID one ID.
 * It hides, it does not authenticate: every number decodes to some ID, so
 * check authorisation on each read.
 *
 * A keyring holds key versions; the current one, which
 * idgen_public_encode() uses, is the one idgen_keyring_set_current()
 * chose, or the highest while none was chosen.  Text form: the current
 * version's public ID in canonical decimal ("5938279163094021517");
 * another version's as "v<N>.<decimal>" ("v1.2209738914530744317").  A
 * plain decimal always means the current version, so after a rotation a
 * plain public ID issued before it decodes to the wrong ID;
 * idgen_public_candidates() gives the ID it stands for under each version
 * for a lookup to settle.
 *
 * Rotating across hosts: hosts that disagree on the current version
 * disagree on what a plain public ID means.  So first load the new key
 * everywhere for decoding only (keep the old version chosen with
 * idgen_keyring_set_current()), then, once every host has it, choose the
 * new version everywhere.
 *
 * idgen_keyring_add():  -EEXIST for a version loaded already, -E2BIG past
 *   LIBIDGEN_KEYRING_MAX versions.
 * idgen_keyring_load(): adds the key file at path: one line, the version
 *   in decimal, a space, 64 hex digits, an optional newline; refused with
 *   -EACCES when readable or writable by group or others or owned by
 *   neither the effective user nor root, -EINVAL when not a regular file
 *   (a FIFO too, without waiting on it) or not such a line (a CR LF line
 *   end named as such); err says "PATH: what is wrong".
 * idgen_keyring_set_current(): makes version the current one, and keeps
 *   it current when versions are added; -EKEYREJECTED when not loaded.
 * idgen_keyring_current(): the current version; -EKEYREJECTED when empty.
 * idgen_keyring_version(): the i-th version, highest first.
 * idgen_public_encrypt()/_decrypt(): the permutation under one version;
 *   -ERANGE above 2^63-1, -EKEYREJECTED for a version not in the keyring.
 * idgen_public_format()/_parse(): the text form; _parse() gives -EINVAL
 *   for anything but the two forms (the decimal as idgen_parse_id()),
 *   -ERANGE above 2^63-1, -EKEYREJECTED for a version not loaded.
 * idgen_public_encode(): encrypt with the current version and format;
 *   returns the length.  idgen_public_decode(): parse and decrypt.
 * idgen_public_candidates(): for "v<N>." one ID; for plain decimal one per
 *   version, the current first, then the others highest first (-ENOSPC if
 *   n is too small); returns the count.
 */
#define LIBIDGEN_PUBLIC_KEY_BYTES	32
/* Key versions a keyring holds, and so the candidates of a plain public ID. */
#define LIBIDGEN_KEYRING_MAX		64
/* "v4294967295." + 19 digits + NUL */
#define LIBIDGEN_PUBLIC_STRLEN		32
struct idgen_keyring;
int idgen_keyring_new(struct idgen_keyring **out);
void idgen_keyring_free(struct idgen_keyring *kr);
int idgen_keyring_add(struct idgen_keyring *kr, uint32_t version,
		      const uint8_t key[LIBIDGEN_PUBLIC_KEY_BYTES]);
int idgen_keyring_load(struct idgen_keyring *kr, const char *path,
		       char *err, size_t errlen);
size_t idgen_keyring_count(const struct idgen_keyring *kr);
int idgen_keyring_set_current(struct idgen_keyring *kr, uint32_t version);
int idgen_keyring_current(const struct idgen_keyring *kr, uint32_t *version);
int idgen_keyring_version(const struct idgen_keyring *kr, size_t i, uint32_t *version);
/* A key file's text (len bytes); -EINVAL with err as for _load(). */
int idgen_key_parse(const char *text, size_t len, uint32_t *version,
		    uint8_t key[LIBIDGEN_PUBLIC_KEY_BYTES], char *err, size_t errlen);
int idgen_public_encrypt(const struct idgen_keyring *kr, uint32_t version,
			 uint64_t id, uint64_t *pub);
int idgen_public_decrypt(const struct idgen_keyring *kr, uint32_t version,
			 uint64_t pub, uint64_t *id);
int idgen_public_format(const struct idgen_keyring *kr, uint32_t version,
			uint64_t pub, char buf[LIBIDGEN_PUBLIC_STRLEN]);
int idgen_public_parse(const struct idgen_keyring *kr, const char *s,
		       uint32_t *version, uint64_t *pub);
int idgen_public_encode(const struct idgen_keyring *kr, uint64_t id,
			char buf[LIBIDGEN_PUBLIC_STRLEN]);
int idgen_public_decode(const struct idgen_keyring *kr, const char *s, uint64_t *id);
ssize_t idgen_public_candidates(const struct idgen_keyring *kr, const char *s,
				uint64_t *ids, uint32_t *versions, size_t n);

/*
 * Booking codes (Documentation/design.md section 10): 40 random bits, written
 * as 8 Crockford base32 symbols and a check symbol (the value mod 37, the extra
 * symbols "*~$=U" for 32..36): "XXXX-XXXX-C", e.g. "0000-0000-0" for 0.  A code
 * is a uint64_t from 0 to LIBIDGEN_CODE_MAX.
 *
 * idgen_code_new(): n codes from getrandom(2); 0 or -errno.
 *   Uniqueness is the database's: a unique constraint, and a new code on
 *   conflict.
 * idgen_code_format(): returns the length (11), -ERANGE above the max.
 * idgen_code_parse(): case-insensitive, I and L read as 1, O as 0,
 *   hyphens and spaces ignored; -EINVAL unless 8 data symbols and a check
 *   symbol remain, -EBADMSG when the check symbol is wrong (a mistyped
 *   code: refuse it before any lookup).
 */
#define LIBIDGEN_CODE_MAX	((1ULL << 40) - 1)
#define LIBIDGEN_CODE_STRLEN	12
int idgen_code_new(uint64_t *codes, size_t n);
int idgen_code_format(uint64_t code, char buf[LIBIDGEN_CODE_STRLEN]);
int idgen_code_parse(const char *s, uint64_t *code);

#ifdef __cplusplus
}
#endif

#endif /* LIBIDGEN_H */

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
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "decimal.h"
#include "forkguard.h"
#include "internal.h"
#include "sim_spec.h"

/* The module's load-time layout: version 1, 3/7/12. */
#define SIM_REGION_BITS	3
#define SIM_WORKER_BITS	IDGEN_SIM_WORKER_BITS
#define SIM_SEQ_BITS	12

/*
 * The minting word: the last ID reserved, as its millisecond and
 * sequence, ms << WORD_SEQ | seq, the sequence always in 22 bits (the
 * most any layout has), so that the word orders IDs whatever the layout.
 * A sequence at or past the layout's last (END: every one) means the
 * next ID is the next millisecond's first.  Bit 63 says which of the two
 * lease records (struct idgen_sim.lease[]) is in force: a lease change
 * writes the other one and switches to it with the same compare-and-swap
 * minting does, so a mint in flight across the change fails its swap
 * and starts again under the new lease, and a revoke's last millisecond
 * bounds every ID of the lease revoked.
 */
#define WORD_SEQ	22
#define WORD_SLOT	(1ULL << 63)
#define WORD_END	((1ULL << WORD_SEQ) - 1)

static inline uint64_t word_ms(uint64_t w)
{
	return (w & ~WORD_SLOT) >> WORD_SEQ;
}

static inline uint64_t word_seq(uint64_t w)
{
	return w & WORD_END;
}

static inline unsigned int word_slot(uint64_t w)
{
	return !!(w & WORD_SLOT);
}

/* Every ID of ms and below used: the next is ms + 1's first. */
static inline uint64_t word_end_of(unsigned int slot, uint64_t ms)
{
	return (slot ? WORD_SLOT : 0) | ms << WORD_SEQ | WORD_END;
}

/* The ms of the next ID after w, in a layout of sb sequence bits. */
static inline uint64_t word_next_ms(uint64_t w, unsigned int sb)
{
	return word_seq(w) + 1 >= 1ULL << sb ? word_ms(w) + 1 : word_ms(w);
}

/*
 * A lease, as minting reads it: each field on its own (relaxed), any
 * mix of a record's fields minted with only if the word did not change
 * meanwhile.  A renewal changes its record in place, and only upwards
 * (the floor, after the word is raised above it, and the fence); any
 * other change writes the record not in force and switches the word to
 * it.
 */
struct sim_lease {
	_Atomic bool leased;
	_Atomic uint32_t region, worker;
	_Atomic uint64_t floor_ms, valid_until_ms;
	_Atomic uint8_t region_bits, worker_bits, seq_bits;
};

/* One record's fields, read. */
struct lease {
	bool leased;
	uint32_t region, worker;
	uint64_t floor_ms, valid_until_ms;
	uint8_t region_bits, worker_bits, seq_bits;
};

struct idgen_sim {
	_Atomic uint64_t *last;		/* the minting word: &word here */
	_Atomic uint64_t word;
	_Atomic uint64_t minted;	/* IDs handed out */
	struct sim_lease lease[2];
	pthread_mutex_t change;		/* lease changes, one at a time */
	/* Who opened it: only that process mints (forkguard.h). */
	struct idgen_forkguard_stamp stamp;
	uint32_t node;			/* the node form's worker */
	int lock_fd;			/* the node's lock; -1: none (file) */
	int name_fd;			/* its second lock, the name; -1: none */
	struct sim_mark *mark;		/* the node's mark: last is in it */
	char *file, *tmp, *log;		/* the file form's; NULL otherwise */
};

#define RELAXED	memory_order_relaxed

static struct lease lease_read(const struct sim_lease *l)
{
	return (struct lease){
		.leased = atomic_load_explicit(&l->leased, RELAXED),
		.region = atomic_load_explicit(&l->region, RELAXED),
		.worker = atomic_load_explicit(&l->worker, RELAXED),
		.floor_ms = atomic_load_explicit(&l->floor_ms, RELAXED),
		.valid_until_ms = atomic_load_explicit(&l->valid_until_ms, RELAXED),
		.region_bits = atomic_load_explicit(&l->region_bits, RELAXED),
		.worker_bits = atomic_load_explicit(&l->worker_bits, RELAXED),
		.seq_bits = atomic_load_explicit(&l->seq_bits, RELAXED),
	};
}

static void lease_write(struct sim_lease *l, const struct lease *v)
{
	atomic_store_explicit(&l->leased, v->leased, RELAXED);
	atomic_store_explicit(&l->region, v->region, RELAXED);
	atomic_store_explicit(&l->worker, v->worker, RELAXED);
	atomic_store_explicit(&l->floor_ms, v->floor_ms, RELAXED);
	atomic_store_explicit(&l->valid_until_ms, v->valid_until_ms, RELAXED);
	atomic_store_explicit(&l->region_bits, v->region_bits, RELAXED);
	atomic_store_explicit(&l->worker_bits, v->worker_bits, RELAXED);
	atomic_store_explicit(&l->seq_bits, v->seq_bits, RELAXED);
}

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

/* The lease in force and the word it was read with (change lock held). */
static struct lease current(struct idgen_sim *s, uint64_t *word)
{
	uint64_t w = atomic_load(s->last);

	if (word)
		*word = w;
	return lease_read(&s->lease[word_slot(w)]);
}

static struct lease default_lease(void)
{
	return (struct lease){
		.region_bits = SIM_REGION_BITS, .worker_bits = SIM_WORKER_BITS,
		.seq_bits = SIM_SEQ_BITS,
	};
}

/*
 * Put lease v in force with the word ending at ms last (the file form's
 * load, one thread: no minting beside it).
 */
static void install(struct idgen_sim *s, const struct lease *v, uint64_t last)
{
	lease_write(&s->lease[0], v);
	atomic_store(s->last, word_end_of(0, last));
}

/*
 * The file form: every millisecond below the fence and up to now counts
 * as minted, the worst case for the lease's next holder.
 */
static void file_advance(struct idgen_sim *s)
{
	uint64_t now = sim_now(), top, w;
	struct lease l = current(s, &w);

	if (!l.leased || now <= l.floor_ms)
		return;
	top = now < l.valid_until_ms ? now : l.valid_until_ms - 1;
	if (top > word_ms(w))
		atomic_store(s->last, word_end_of(word_slot(w), top));
}

/*
 * Whoever else may write a generator's state could make it mint again
 * what it minted: a file that another user owns, or that a user other
 * than its owner may open as @others says (022: write, 077: open at all),
 * is none of this process's.
 */
static bool foreign(const struct stat *st, mode_t others)
{
	return st->st_uid != geteuid() || (st->st_mode & others);
}

/*
 * The file form's files, opened as fopen() would but never through a
 * symbolic link, made 0600, and refused (EPERM) when foreign().
 */
static FILE *file_open(const char *path, int flags, mode_t others)
{
	struct stat st;
	int fd, err = 0;
	FILE *f;

	/* Truncated only once it is known to be this process's own. */
	fd = open(path, (flags & ~O_TRUNC) | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st))
		err = errno;
	else if (!S_ISREG(st.st_mode))
		err = EIO;
	else if (foreign(&st, others))
		err = EPERM;
	else if ((flags & O_TRUNC) && ftruncate(fd, 0))
		err = errno;
	f = err ? NULL : fdopen(fd, flags & O_APPEND ? "a" : flags & O_WRONLY ? "w" : "r");
	if (!f) {
		err = err ? err : errno;
		close(fd);
		errno = err;
	}
	return f;
}

/*
 * The state file: "leased region worker floor until last R W S", one
 * line, replaced whole (rename) at every change.
 */
static int file_scan(FILE *f, unsigned int *leased, struct lease *l,
		     uint64_t *last, unsigned int *rb, unsigned int *wb,
		     unsigned int *sb)
{
	char line[256], *p, *end;
	uint64_t v[9];
	int i;

	if (!fgets(line, sizeof(line), f))
		return 0;
	/* Plain decimals only: strtoull would take "-1" for 2^64 - 1. */
	for (i = 0, p = line; i < 9; i++, p = end) {
		p += strspn(p, " ");
		if (*p < '0' || *p > '9')
			return i;
		errno = 0;
		v[i] = strtoull(p, &end, 10);
		if (errno || (*end != ' ' && *end != '\n' && *end))
			return i;
	}
	if (v[0] > 1 || v[1] > UINT32_MAX || v[2] > UINT32_MAX || v[6] > 64 ||
	    v[7] > 64 || v[8] > 64)
		return 0;
	*leased = v[0];
	l->region = v[1];
	l->worker = v[2];
	l->floor_ms = v[3];
	l->valid_until_ms = v[4];
	*last = v[5];
	*rb = v[6];
	*wb = v[7];
	*sb = v[8];
	return 9;
}

static int file_load(struct idgen_sim *s)
{
	unsigned int leased, rb, wb, sb;
	struct lease l = default_lease();
	uint64_t last = 0;
	FILE *f;
	int n;

	if (!s->file)
		return 0;
	f = file_open(s->file, O_RDONLY, 022);
	if (!f) {
		if (errno != ENOENT)
			return -errno;
		install(s, &l, 0);
		return 0;
	}
	n = file_scan(f, &leased, &l, &last, &rb, &wb, &sb);
	fclose(f);
	/*
	 * A layout the module would not take is not one it holds, nor a node
	 * wider than its layout, a floor not below its fence, or a
	 * millisecond past the time field: minting from them would compose
	 * no ID.
	 */
	if (n != 9 || leased > 1 || !idgen_widths_valid(rb, wb, sb) ||
	    l.region >> rb || l.worker >> wb || last > LIBIDGEN_MS_MAX ||
	    l.valid_until_ms > LIBIDGEN_MS_MAX + 1 ||
	    (leased && l.floor_ms >= l.valid_until_ms))
		return -EIO;
	l.leased = leased;
	l.region_bits = rb;
	l.worker_bits = wb;
	l.seq_bits = sb;
	install(s, &l, last);
	file_advance(s);
	return 0;
}

static int file_store(struct idgen_sim *s)
{
	struct lease l;
	uint64_t w;
	FILE *f;

	if (!s->file)
		return 0;
	l = current(s, &w);
	f = file_open(s->tmp, O_WRONLY | O_CREAT | O_TRUNC, 022);
	if (!f)
		return -errno;
	fprintf(f, "%u %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64
		" %u %u %u\n", (unsigned int)l.leased, l.region, l.worker,
		l.floor_ms, l.valid_until_ms, word_ms(w), l.region_bits,
		l.worker_bits, l.seq_bits);
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
	f = file_open(s->log, O_WRONLY | O_CREAT | O_APPEND, 022);
	if (!f)
		return;
	fprintf(f, "%" PRIu64 " ", sim_now());
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/*
 * Slots are counted in a layout's own terms, ms << sb | seq, to reserve
 * a batch across millisecond borders; the word keeps them as ms and seq.
 */
static inline uint64_t word_of_slot(unsigned int slot, uint64_t at, unsigned int sb)
{
	return (slot ? WORD_SLOT : 0) | (at >> sb) << WORD_SEQ | (at & ((1ULL << sb) - 1));
}

IDGEN_EXPORT ssize_t idgen_sim_mint(struct idgen_sim *s, uint64_t *ids, size_t n)
{
	uint64_t old, first, top, now, lead_end, first_ms, mask;
	unsigned int waited = 0, sb;
	struct idgen_layout lay;
	struct lease l;
	size_t i;

	if (!n || n > (1U << 24))
		return -EINVAL;
	/*
	 * A child's copy of the state would mint its parent's IDs, whatever
	 * its PID: a child made with clone(CLONE_NEWPID) by PID 1 of a
	 * namespace is PID 1 too.
	 */
	if (!idgen_forkguard_mine(&s->stamp))
		return -ECHILD;
	old = atomic_load(s->last);
	for (;;) {
		/* The lease the word says, read anew with each word. */
		l = lease_read(&s->lease[word_slot(old)]);
		if (!l.leased)
			return -ENOKEY;
		sb = l.seq_bits;
		now = sim_now();
		if (!now)
			return -ETIME;		/* a clock before the epoch */
		first_ms = word_next_ms(old, sb);
		first = first_ms == word_ms(old) ? (first_ms << sb) + word_seq(old) + 1 :
			first_ms << sb;
		if (first_ms < now) {
			first_ms = now;
			first = now << sb;
		}
		if (first_ms <= l.floor_ms) {
			first_ms = l.floor_ms + 1;
			first = first_ms << sb;
		}
		if (first_ms >= l.valid_until_ms)
			return l.valid_until_ms > LIBIDGEN_MS_MAX ? -EOVERFLOW : -EKEYEXPIRED;
		/* The last slot it may use: within the lead and the fence. */
		lead_end = ((now + LIBIDGEN_SIM_MAX_LEAD_MS + 1) << sb) - 1;
		if (first > lead_end) {
			/*
			 * Only the lead holds it back, the clock running on: wait
			 * for the next millisecond, as the module's read blocks.
			 * Further ahead than the lead can take it, the clock was
			 * stepped back (or the floor is ahead): refused, as by
			 * the module.
			 */
			if (first_ms - now > LIBIDGEN_SIM_MAX_LEAD_MS + 1 ||
			    waited++ >= LIBIDGEN_SIM_WAIT_MS)
				return -ETIME;
			sim_sleep_to_next_ms();
			old = atomic_load(s->last);
			continue;
		}
		top = first + (n - 1);
		if (top > lead_end)
			top = lead_end;
		if (top >> sb >= l.valid_until_ms)
			top = (l.valid_until_ms << sb) - 1;
		if (atomic_compare_exchange_weak(s->last, &old,
						 word_of_slot(word_slot(old), top, sb)))
			break;
	}
	/* The lease the swap was made under: nothing of it changed since. */
	lay = (struct idgen_layout){
		.region_bits = l.region_bits, .worker_bits = l.worker_bits,
		.seq_bits = l.seq_bits,
	};
	mask = (1ULL << sb) - 1;
	for (i = 0; first + i <= top; i++) {
		uint64_t at = first + i;

		/*
		 * The lease was checked when it was set or loaded: a refusal
		 * here is a state no lease gives, and no ID goes out of it.
		 */
		if (idgen_compose(&lay, at >> sb, l.region, l.worker, at & mask, &ids[i]))
			return -EIO;
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
	uint64_t now, w;
	struct lease l;
	int err;

	pthread_mutex_lock(&s->change);
	err = file_load(s);
	l = current(s, &w);
	pthread_mutex_unlock(&s->change);
	if (err)
		return err;
	now = sim_now();
	memset(out, 0, sizeof(*out));
	out->now_ms = out->wall_ms = now;
	out->last_ms = word_ms(w);
	out->max_lead_ms = LIBIDGEN_SIM_MAX_LEAD_MS;
	out->ids = atomic_load(&s->minted);
	if (!l.leased) {
		/* The load-time default's widths, as the module. */
		out->region_bits = SIM_REGION_BITS;
		out->worker_bits = SIM_WORKER_BITS;
		out->seq_bits = SIM_SEQ_BITS;
		return 0;
	}
	out->flags = LIBIDGEN_STATE_LEASED;
	out->region = l.region;
	out->worker = l.worker;
	out->floor_ms = l.floor_ms;
	out->valid_until_ms = l.valid_until_ms;
	out->region_bits = l.region_bits;
	out->worker_bits = l.worker_bits;
	out->seq_bits = l.seq_bits;
	/* The ms the next ID carries at the earliest. */
	out->next_ms = word_next_ms(w, l.seq_bits);
	if (out->next_ms < now)
		out->next_ms = now;
	if (out->next_ms <= l.floor_ms)
		out->next_ms = l.floor_ms + 1;
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

static int set_lease(struct idgen_sim *s, uint32_t region, uint32_t worker,
		     uint64_t floor_ms, uint64_t valid_until_ms,
		     const struct idgen_layout *layout, unsigned int flags)
{
	unsigned int rb = SIM_REGION_BITS, wb = SIM_WORKER_BITS, sb = SIM_SEQ_BITS;
	uint64_t now = sim_now(), first_ms, w, nw, asked_floor = floor_ms;
	struct lease l, cur;
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
	if (s->lock_fd >= 0 && (region || worker != s->node ||
				rb != SIM_REGION_BITS || wb != SIM_WORKER_BITS ||
				sb != SIM_SEQ_BITS))
		return -EPERM;
	/* A fence the clock has passed: the module refuses it so. */
	if (valid_until_ms <= now)
		return never_mints(now);
	cur = current(s, &w);
	if (cur.leased && cur.region == region && cur.worker == worker &&
	    cur.region_bits == rb && cur.worker_bits == wb) {
		if (valid_until_ms < cur.valid_until_ms)
			return -EINVAL;
		renewal = true;
		if (floor_ms < cur.floor_ms)
			floor_ms = cur.floor_ms;
	}
	l = (struct lease){
		.leased = true, .region = region, .worker = worker,
		.floor_ms = floor_ms, .valid_until_ms = valid_until_ms,
		.region_bits = rb, .worker_bits = wb, .seq_bits = sb,
	};
	/*
	 * Nor can it mint when its first ms, above the floor and above every
	 * ms the host used, lies at or past the fence.  Nothing changed.
	 * Minters may move the word on meanwhile: the check is made again
	 * with each word the swap below is tried on.
	 */
	for (;;) {
		unsigned int slot = renewal ? word_slot(w) : !word_slot(w);

		/*
		 * A renewal keeps its record and word (raised over the floor
		 * when the floor rose); a new lease starts above every slot
		 * the word held, so that no word is ever seen twice.
		 */
		nw = word_end_of(slot, floor_ms);
		if (renewal) {
			if ((w & ~WORD_SLOT) > (nw & ~WORD_SLOT))
				nw = w;
		} else {
			/* Its first ID in a ms after every one the word used. */
			if (word_ms(w) > floor_ms)
				nw = word_end_of(slot, word_ms(w));
			if ((w & ~WORD_SLOT) == (nw & ~WORD_SLOT))
				nw = ((w & ~WORD_SLOT) + 1) | (slot ? WORD_SLOT : 0);
		}
		first_ms = word_next_ms(nw, sb);
		if (first_ms >= valid_until_ms)
			return never_mints(first_ms);
		if (nw == w)
			break;
		if (renewal) {
			if (atomic_compare_exchange_strong(s->last, &w, nw))
				break;
			continue;
		}
		/* The record not in force, written before the word names it. */
		lease_write(&s->lease[slot], &l);
		if (atomic_compare_exchange_strong(s->last, &w, nw))
			break;
	}
	/*
	 * Logged before the change is seen by the file form's next process:
	 * a process killed in between leaves a log that says more than the
	 * generator holds, never less, so the windows tests derive from the
	 * log are never too small.
	 */
	file_log(s, "push r=%" PRIu32 " w=%" PRIu32 " floor=%" PRIu64
		 " until=%" PRIu64 " layout=%u/%u/%u", region, worker, asked_floor,
		 valid_until_ms, rb, wb, sb);
	if (renewal) {
		/* Upwards only, and the floor under the word already. */
		atomic_store(&s->lease[word_slot(nw)].floor_ms, floor_ms);
		atomic_store(&s->lease[word_slot(nw)].valid_until_ms, valid_until_ms);
	}
	return file_store(s);
}

IDGEN_EXPORT int idgen_sim_set_lease(struct idgen_sim *s, uint32_t region,
				     uint32_t worker, uint64_t floor_ms,
				     uint64_t valid_until_ms,
				     const struct idgen_layout *layout,
				     unsigned int flags)
{
	int ret;

	pthread_mutex_lock(&s->change);
	ret = set_lease(s, region, worker, floor_ms, valid_until_ms, layout, flags);
	pthread_mutex_unlock(&s->change);
	return ret;
}

static int sim_revoke(struct idgen_sim *s, uint64_t *last)
{
	struct lease l;
	uint64_t w;
	int err;

	err = file_load(s);
	if (err)
		return err;
	l = current(s, &w);
	if (!l.leased) {
		/* As the module: a retried revoke is safe. */
		*last = word_ms(w);
		file_log(s, "revoke-idle last=%" PRIu64, *last);
		return 0;
	}
	/*
	 * The word switches to a record without a lease in one swap: a mint
	 * either swapped before it, and its IDs are within the ms this
	 * returns, or fails its swap and finds no lease.
	 */
	l.leased = false;
	lease_write(&s->lease[!word_slot(w)], &l);
	while (!atomic_compare_exchange_strong(s->last, &w, w ^ WORD_SLOT))
		;
	err = file_store(s);
	if (err)
		return err;
	*last = word_ms(w);
	file_log(s, "revoke last=%" PRIu64, *last);
	return 0;
}

IDGEN_EXPORT int idgen_sim_revoke(struct idgen_sim *s, uint64_t *last)
{
	int ret;

	pthread_mutex_lock(&s->change);
	ret = sim_revoke(s, last);
	pthread_mutex_unlock(&s->change);
	return ret;
}

static void sim_init(struct idgen_sim *s)
{
	struct lease none = default_lease();

	s->last = &s->word;
	s->name_fd = -1;
	pthread_mutex_init(&s->change, NULL);
	install(s, &none, 0);
	s->stamp = idgen_forkguard_stamp();
}

/*
 * A second lock, a name in the abstract socket namespace
 * ("@idgen-sim-r0-wWORKER", unix(7)), bound for the process's life: the
 * state file's flock holds only while the file keeps its name, and a file
 * removed under a running process (by its owner, or by logind's
 * RemoveIPC= at the owner's last logout) would let the next opener make a
 * new one and lock that.  The name cannot be removed; it is one per
 * network namespace, which the flock covers.  Either lock refuses a
 * second opener.
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

/*
 * The node's state: its minting word in a file every run of the worker
 * maps (MAP_SHARED), so that each mint's swap is also the record of the
 * last ID, which outlives the process however it ends, and the next run
 * starts above it even when the wall clock was stepped back in between.
 * The file, LIBIDGEN_SIM_STATE_DIR "/" LIBIDGEN_SIM_LOCK_NAME "WORKER",
 * lives until the host restarts (a tmpfs) or someone removes it.
 *
 * Whoever can write the file can make the process mint again what it
 * minted: it is its owner's alone (mode 0600, made so, and refused when
 * another user owns it or anyone else may open it), opened without
 * following a link.  It is also the lock: one minting simulation per
 * worker, held by flock(2) on the file for the process's life, which the
 * kernel lets go however the process ends, and which every process that
 * sees this /dev/shm sees, whatever its network namespace.  A container
 * with a /dev/shm of its own is another host to it.
 */
#define MARK_PATH	LIBIDGEN_SIM_STATE_DIR "/" LIBIDGEN_SIM_LOCK_NAME
#define MARK_MAGIC	"idgensim"

struct sim_mark {
	char magic[8];
	_Atomic uint64_t word;
};

/*
 * systemd's dynamic users (DynamicUser=, systemd.exec(5)): their IPC,
 * the state file among it, is removed whenever the service stops
 * (RemoveIPC=, implied), and the next start would trust the wall clock
 * alone.
 */
#define DYNAMIC_UID_MIN	61184
#define DYNAMIC_UID_MAX	65519

/* Opens, checks and locks the state file; its descriptor, or -errno. */
static int open_state(uint32_t worker, const char *path, char *err, size_t errlen)
{
	struct stat st, now;
	int fd, ret, tries = 0;

again:
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "the simulated generator of region 0, worker %u "
			 "cannot open its state %s: %s", worker, path,
			 ret == -ELOOP ? "a symbolic link" : strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "the simulated generator of region 0, worker %u: "
			 "%s: %s", worker, path, strerror(-ret));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EIO;
		snprintf(err, errlen, "the simulated generator of region 0, worker %u: "
			 "%s is not a regular file", worker, path);
		goto fail;
	}
	if (foreign(&st, 077)) {
		ret = -EPERM;
		snprintf(err, errlen, "the simulated generator of region 0, worker %u: "
			 "%s has uid %u, mode %04o; only uid %u's own, mode 0600, is "
			 "used: whoever else may write it could replay its IDs", worker, path, (unsigned int)st.st_uid,
			 (unsigned int)(st.st_mode & 07777), (unsigned int)geteuid());
		goto fail;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (ret == -EBUSY)
			snprintf(err, errlen, "another simulated generator of region 0, "
				 "worker %u runs on this host (it holds the lock on %s): "
				 "two would mint the same IDs; give each its own worker",
				 worker, path);
		else
			snprintf(err, errlen, "the simulated generator of region 0, worker "
				 "%u cannot lock %s: %s", worker, path, strerror(-ret));
		goto fail;
	}
	/*
	 * Removed between the open and the lock (its owner tidying up): the
	 * lock is on a file the next opener will not see.  The name's file
	 * is opened again.
	 */
	if (lstat(path, &now) || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
		close(fd);
		if (++tries < 3)
			goto again;
		snprintf(err, errlen, "the simulated generator of region 0, worker %u: "
			 "%s is being removed and made again", worker, path);
		return -EBUSY;
	}
	return fd;
fail:
	close(fd);
	return ret;
}

/* Maps the locked state file fd; 0, or -errno with err said. */
static int map_mark(int fd, uint32_t worker, const char *path,
		    struct sim_mark **out, char *err, size_t errlen)
{
	static const char zero[8];
	struct sim_mark *m;
	struct stat st;
	int ret = 0;

	/* Checked again under the lock: a new file is sized by its locker. */
	if (fstat(fd, &st))
		ret = -errno;
	else if (st.st_size && st.st_size != (off_t)sizeof(*m))
		ret = -EIO;
	else if (!st.st_size && ftruncate(fd, sizeof(*m)))
		ret = -errno;
	m = ret ? MAP_FAILED : mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE,
				    MAP_SHARED, fd, 0);
	if (!ret && m == MAP_FAILED)
		ret = -errno;
	if (!ret) {
		if (!memcmp(m->magic, zero, sizeof(zero)) && !atomic_load(&m->word))
			memcpy(m->magic, MARK_MAGIC, sizeof(m->magic));	/* a new one */
		if (memcmp(m->magic, MARK_MAGIC, sizeof(m->magic)) ||
		    word_ms(atomic_load(&m->word)) > LIBIDGEN_MS_MAX)
			ret = -EIO;
		if (ret)
			munmap(m, sizeof(*m));
	}
	if (ret) {
		snprintf(err, errlen, "the simulated generator of region 0, worker %u: "
			 "%s is not its state: %s (remove it only if no run of the "
			 "worker has its IDs in use)", worker, path,
			 ret == -EIO ? "not a state file" : strerror(-ret));
		return ret;
	}
	*out = m;
	return 0;
}

/*
 * The word only ever moves up: raised to at least w, and put on the
 * record of slot 0, the only one a new process has written.
 */
static void mark_raise(_Atomic uint64_t *word, uint64_t w)
{
	uint64_t old = atomic_load(word), nw;

	do {
		nw = (old & ~WORD_SLOT) > (w & ~WORD_SLOT) ? old & ~WORD_SLOT : w & ~WORD_SLOT;
	} while (!atomic_compare_exchange_weak(word, &old, nw));
}

static int open_node(uint32_t worker, uint64_t lease_ms, struct idgen_sim **out,
		     char *err, size_t errlen)
{
	char why[512], mark_path[64];
	uint64_t now = sim_now(), prev;
	struct idgen_sim *s;
	unsigned int waited;
	struct lease l;
	int fd, ret;

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
	if (geteuid() >= DYNAMIC_UID_MIN && geteuid() <= DYNAMIC_UID_MAX) {
		say(err, errlen, "a simulated generator run by a dynamic user "
		    "(systemd's DynamicUser=, which implies RemoveIPC=) loses its state "
		    "whenever the service stops, and would then trust the wall clock "
		    "alone: run it as a user of its own");
		return -EPERM;
	}
	snprintf(mark_path, sizeof(mark_path), MARK_PATH "%u", worker);
	fd = open_state(worker, mark_path, why, sizeof(why));
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
	sim_init(s);
	s->lock_fd = fd;
	s->node = worker;
	s->name_fd = lock_node(worker, why, sizeof(why));
	if (s->name_fd < 0) {
		ret = s->name_fd;
		say(err, errlen, why);
		idgen_sim_close(s);
		return ret;
	}
	ret = map_mark(fd, worker, mark_path, &s->mark, err, errlen);
	if (ret) {
		idgen_sim_close(s);
		return ret;
	}
	prev = atomic_load(&s->mark->word);
	/*
	 * Above every ms a run before this one stamped: the last ID of the
	 * runs since the mark was made, and (for a run before it, or when it
	 * was lost) the most a run can have stamped ahead of the clock.
	 * After a step back of the clock the floor is ahead of it, and
	 * minting refuses (ETIME) until the clock has caught up: the open
	 * does not wait for it.
	 */
	l = default_lease();
	l.leased = true;
	l.worker = worker;
	l.floor_ms = now + LIBIDGEN_SIM_MAX_LEAD_MS;
	if (word_ms(prev) > l.floor_ms)
		l.floor_ms = word_ms(prev);
	l.valid_until_ms = lease_ms ? l.floor_ms + lease_ms : LIBIDGEN_MS_MAX + 1;
	if (l.valid_until_ms > LIBIDGEN_MS_MAX + 1)
		l.valid_until_ms = LIBIDGEN_MS_MAX + 1;
	if (l.floor_ms >= l.valid_until_ms) {
		if (err && errlen)
			snprintf(err, errlen, "the simulated generator of region 0, worker %u "
				 "has used its last millisecond (%s)", worker, mark_path);
		idgen_sim_close(s);
		return -EOVERFLOW;
	}
	/* From here on, every mint's swap is the mark's update. */
	lease_write(&s->lease[0], &l);
	mark_raise(&s->mark->word, word_end_of(0, l.floor_ms));
	s->last = &s->mark->word;
	/*
	 * The clock runs up to the floor within the lead bound (a few ms):
	 * waited for here, so that the first mint has the whole lead.  A
	 * floor further ahead is not waited for.
	 */
	for (waited = 0; waited <= LIBIDGEN_SIM_MAX_LEAD_MS + 1 &&
	     sim_now() <= l.floor_ms && l.floor_ms - sim_now() <= LIBIDGEN_SIM_MAX_LEAD_MS + 1;
	     waited++)
		sim_sleep_to_next_ms();
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
	sim_init(s);
	s->lock_fd = -1;
	s->name_fd = -1;
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
	struct idgen_sim_spec p;
	int ret;

	ret = idgen_sim_spec_parse(spec, &p, err, errlen);
	if (!ret && p.kind == IDGEN_SIM_NONE) {
		say(err, errlen, "not a simulated generator: give sim, sim:WORKER or sim:FILE");
		return -EINVAL;
	}
	/*
	 * Without a wipe-on-fork page the fork guard cannot tell every child
	 * from its parent (forkguard.h), and a child would mint its parent's
	 * IDs: no simulation then.
	 */
	if (!idgen_forkguard_init()) {
		say(err, errlen, "this kernel gives no wipe-on-fork page (MADV_WIPEONFORK, "
		    "Linux 4.14): the simulated generator could not tell a child "
		    "process from its parent");
		return -EOPNOTSUPP;
	}
	if (ret)
		return ret;
	if (p.kind == IDGEN_SIM_FILE)
		return open_file(p.file, out, err, errlen);
	return open_node(p.worker, lease_ms, out, err, errlen);
}

IDGEN_EXPORT int idgen_sim_is_spec(const char *spec)
{
	struct idgen_sim_spec p;

	/* A spec that names a simulation wrongly ("sim:") is one too. */
	return idgen_sim_spec_parse(spec, &p, NULL, 0) || p.kind != IDGEN_SIM_NONE;
}

IDGEN_EXPORT void idgen_sim_close(struct idgen_sim *s)
{
	if (!s)
		return;
	if (s->mark)
		munmap(s->mark, sizeof(*s->mark));
	if (s->name_fd >= 0)
		close(s->name_fd);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	pthread_mutex_destroy(&s->change);
	free(s->file);
	free(s->tmp);
	free(s->log);
	free(s);
}

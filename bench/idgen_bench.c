// SPDX-License-Identifier: GPL-2.0
/*
 * idgen_bench: how close /dev/idgen comes to the syscall floor and
 * to the node's ceiling, beside the anchors, all in one run so every figure
 * shares the same conditions.  Run inside a guest with idgen.ko loaded and
 * a lease in force; prints a markdown report, and the data for the plot
 * (batch size against ns per ID for every contender) on lines starting
 * with "DAT ", since the guest's file system is read-only.
 *
 * Figures are medians of rounds; latencies come with p50/p99/p999.
 * Nothing here is asserted: goals are printed as ratios.
 *
 * idgen_bench --icount [CALLS] instead counts instructions: it runs each
 * measured call CALLS times (default 1000) between the markers of
 * bench/icount/marker.h, at SCHED_FIFO, for the guest to run under QEMU
 * with the bench/icount plugin, which writes the counts; this program
 * prints only what each marker tag measures ("ICOUNT-TAG" lines) and the
 * conditions that change the counts ("ICOUNT-ENV" lines).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <linux/idgen.h>

#include "idgen.h"
#include "icount/marker.h"

#define ROUNDS		7
#define LAT_SAMPLES	20000
#define MAX_BATCH	4096
#define CEILING_PER_MS	4096.0

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile of v (sorted in place). */
static double quantile(double *v, int n, double q)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(int)(q * (n - 1))];
}

static int open_or_die(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		fprintf(stderr, "idgen_bench: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

static void read_or_die(int fd, void *buf, size_t len, const char *what)
{
	ssize_t r = read(fd, buf, len);

	if (r != (ssize_t)len) {
		fprintf(stderr, "idgen_bench: read %zu bytes of %s: %s\n", len,
			what, r < 0 ? strerror(errno) : "short read");
		exit(1);
	}
}

/* ------------------------------------------------ in-process anchors */

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - IDGEN_EPOCH_UNIX_MS;
}

/* The textbook Snowflake: a mutex, and a wait for the next ms when full. */
static struct {
	pthread_mutex_t lock;
	uint64_t last_ms;
	uint32_t seq;
} mutex_gen = { PTHREAD_MUTEX_INITIALIZER, 0, 0 };

static uint64_t mutex_next(void)
{
	uint64_t ms, id;

	pthread_mutex_lock(&mutex_gen.lock);
	ms = wall_ms();
	if (ms <= mutex_gen.last_ms) {
		if (++mutex_gen.seq == 4096) {
			while ((ms = wall_ms()) <= mutex_gen.last_ms)
				;
			mutex_gen.last_ms = ms;
			mutex_gen.seq = 0;
		}
	} else {
		mutex_gen.last_ms = ms;
		mutex_gen.seq = 0;
	}
	id = mutex_gen.last_ms << 22 | mutex_gen.seq;
	pthread_mutex_unlock(&mutex_gen.lock);
	return id;
}

/* Lock-free on one atomic word of ms << 12 | seq, as the module does. */
static _Atomic uint64_t lockfree_word;

static uint64_t lockfree_next(void)
{
	uint64_t old = atomic_load_explicit(&lockfree_word, memory_order_relaxed);
	uint64_t base, now;

	for (;;) {
		now = wall_ms();
		base = old >= now << 12 ? old : now << 12;
		if ((base >> 12) > now) {
			/* This ms is full: wait for the next, as the textbook does. */
			old = atomic_load_explicit(&lockfree_word, memory_order_relaxed);
			continue;
		}
		if (atomic_compare_exchange_weak(&lockfree_word, &old, base + 1))
			return (base >> 12) << 22 | (base & 4095);
	}
}

/* ------------------------------------------------ measurements */

struct lat {
	double p50, p99, p999;
};

static struct lat latency(int fd, size_t len, int pread_it, int samples)
{
	static double v[LAT_SAMPLES];
	char buf[64];
	struct lat l;
	int i;

	for (i = 0; i < samples; i++) {
		uint64_t t0 = now_ns();
		ssize_t r = pread_it ? pread(fd, buf, len, 0) : read(fd, buf, len);

		v[i] = (double)(now_ns() - t0);
		if (r <= 0) {
			fprintf(stderr, "idgen_bench: latency read: %s\n",
				r < 0 ? strerror(errno) : "EOF");
			exit(1);
		}
	}
	l.p50 = quantile(v, samples, 0.5);
	l.p99 = quantile(v, samples, 0.99);
	l.p999 = quantile(v, samples, 0.999);
	return l;
}

/*
 * ns per ID (or per 8 bytes) reading @n IDs at a time, median of rounds;
 * with @settle, each round after a pause.
 */
static double per_id_read(int fd, int n, uint64_t *buf, bool settle)
{
	/*
	 * At most 8 ms of the node's capacity per round, each round after
	 * the generator has caught up with the clock, so the borrow bound
	 * (10 ms ahead) is never reached: the cost of a read is measured,
	 * not the node's ceiling.
	 */
	int reps = 32768 / n, r, i;
	double v[ROUNDS];

	if (reps < 5)
		reps = 5;
	for (r = 0; r < ROUNDS; r++) {
		uint64_t t0;

		if (settle)
			sleep_ms(20);
		t0 = now_ns();

		for (i = 0; i < reps; i++)
			read_or_die(fd, buf, n * sizeof(uint64_t), "a batch");
		v[r] = (double)(now_ns() - t0) / ((double)reps * n);
	}
	return quantile(v, ROUNDS, 0.5);
}

static double per_id_inproc(uint64_t (*next)(void), int n)
{
	int reps = 200000 / n / ROUNDS, r, i, k;
	volatile uint64_t sink = 0;
	double v[ROUNDS];

	if (reps < 5)
		reps = 5;
	for (r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();

		for (i = 0; i < reps; i++)
			for (k = 0; k < n; k++)
				sink += next();
		v[r] = (double)(now_ns() - t0) / ((double)reps * n);
	}
	(void)sink;
	return quantile(v, ROUNDS, 0.5);
}

/* libidgen's buffered path: one ID per call from a thread-safe buffer. */
static struct idgen_buffer *buffer;

static uint64_t buffered_next(void)
{
	uint64_t id;
	int err = idgen_buffer_take(buffer, &id);

	if (err) {
		fprintf(stderr, "idgen_bench: buffered take: %s\n", idgen_strerror(-err));
		exit(1);
	}
	return id;
}

struct reader {
	int fd;
	uint64_t start;		/* count from here (after the warm-up) */
	uint64_t deadline;
	uint64_t ids;
	int lat_mode;
	double *lat;
	int nlat;
};

static void *reader_fn(void *arg)
{
	struct reader *rd = arg;
	uint64_t buf[512];

	while (now_ns() < rd->deadline) {
		uint64_t t0 = now_ns();
		size_t n = rd->lat_mode ? 1 : 512;
		ssize_t r = read(rd->fd, buf, n * sizeof(uint64_t));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "idgen_bench: reader: %s\n", strerror(errno));
			exit(1);
		}
		if (t0 < rd->start)
			continue;
		rd->ids += r / sizeof(uint64_t);
		if (rd->lat_mode && rd->nlat < LAT_SAMPLES)
			rd->lat[rd->nlat++] = (double)(now_ns() - t0);
	}
	return NULL;
}

/*
 * IDs per second with @threads readers for @secs, after @warm seconds of
 * reading uncounted; or latencies.
 */
static double run_readers(int threads, double warm, double secs, int lat_mode,
			  struct lat *lat)
{
	struct reader rd[16];
	pthread_t tid[16];
	uint64_t t0, total = 0;
	double *all = NULL;
	int i, n = 0;

	t0 = now_ns();
	for (i = 0; i < threads; i++) {
		rd[i] = (struct reader){
			.fd = open_or_die("/dev/idgen"),
			.start = t0 + (uint64_t)(warm * 1e9),
			.deadline = t0 + (uint64_t)((warm + secs) * 1e9),
			.lat_mode = lat_mode,
			.lat = lat_mode ? calloc(LAT_SAMPLES, sizeof(double)) : NULL,
		};
		pthread_create(&tid[i], NULL, reader_fn, &rd[i]);
	}
	for (i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		total += rd[i].ids;
		close(rd[i].fd);
	}
	if (lat_mode) {
		all = calloc((size_t)threads * LAT_SAMPLES, sizeof(double));
		for (i = 0; i < threads; i++) {
			memcpy(all + n, rd[i].lat, rd[i].nlat * sizeof(double));
			n += rd[i].nlat;
			free(rd[i].lat);
		}
		lat->p50 = quantile(all, n, 0.5);
		lat->p99 = quantile(all, n, 0.99);
		lat->p999 = quantile(all, n, 0.999);
		free(all);
	}
	return total / secs;
}

static long sysfs_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void print_memory(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);

	printf("## Memory\n\n| what | bytes |\n|---|---|\n");
	printf("| module text and data (/sys/module/idgen/coresize) | %ld |\n",
	       sysfs_long("/sys/module/idgen/coresize"));
	/* enum idgen_stat: ten u64 counters per CPU (kmod/stats.h). */
	printf("| per-CPU counters: 10 x 8 B x %ld CPUs | %ld |\n", cpus, 80 * cpus);
	/* struct idgen_lease on x86_64 (kmod/lease.h), one per lease. */
	printf("| per lease: struct idgen_lease, one kmalloc | 72 |\n\n");
}

static void goal(const char *what, double ratio, double bound, int at_most)
{
	int met = at_most ? ratio <= bound : ratio >= bound;

	printf("| %s | %.2f | %s %.2f | %s |\n", what, ratio, at_most ? "<=" : ">=",
	       bound, met ? "met" : "**missed**");
}

/* ------------------------------------------------ instruction counts */

static void check_len(ssize_t r, size_t len, const char *what)
{
	if (r != (ssize_t)len) {
		fprintf(stderr, "idgen_bench: %s: %s\n", what,
			r < 0 ? strerror(errno) : "short read");
		exit(1);
	}
}

static void check_take(int err)
{
	if (err) {
		fprintf(stderr, "idgen_bench: libidgen buffer: %s\n", idgen_strerror(-err));
		exit(1);
	}
}

/* Unmarked calls first, so that what is counted runs warm. */
#define WARMUP	50

/*
 * COUNT(tag, calls, pause_us, call, check): run @call @calls times between
 * the markers of @tag (a constant), each after @pause_us microseconds of
 * sleep (outside the markers), and @check after each, outside too.
 */
#define COUNT(tag, calls, pause_us, call, check) do {			\
	int i_;								\
	for (i_ = 0; i_ < WARMUP + (calls); i_++) {			\
		if (pause_us)						\
			usleep(pause_us);				\
		if (i_ < WARMUP) {					\
			call;						\
		} else {						\
			ICOUNT_BEGIN(tag);				\
			call;						\
			ICOUNT_END(tag);				\
		}							\
		check;							\
	}								\
} while (0)

static void tag(int t, int ids, int bytes, const char *what)
{
	printf("ICOUNT-TAG %d %d %d %s\n", t, ids, bytes, what);
}

static void print_env(void)
{
	char line[512] = "", model[256] = "";
	struct utsname u;
	FILE *f;

	uname(&u);
	printf("ICOUNT-ENV kernel %s %s\n", u.release, u.version);
	f = fopen("/proc/cmdline", "r");
	if (f) {
		if (fgets(line, sizeof(line), f))
			line[strcspn(line, "\n")] = 0;
		fclose(f);
	}
	printf("ICOUNT-ENV cmdline %s\n", line);
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
			snprintf(model, sizeof(model), "%s", strchr(line, ':') + 2);
			model[strcspn(model, "\n")] = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	printf("ICOUNT-ENV cpu %s, %ld online\n", model, sysconf(_SC_NPROCESSORS_ONLN));
}

/*
 * The calls of the instruction-count table.  Reads of many IDs sleep
 * first, so that the generator has caught up with the clock and no read
 * waits for it: a read's cost is counted, not the node's ceiling.
 */
static int count_instructions(int calls)
{
	static uint64_t buf[MAX_BATCH];
	struct sched_param sp = { .sched_priority = 50 };
	int idgen, zero, uuid, few = calls / 4 > 20 ? calls / 4 : 20;
	volatile uint64_t sink = 0;
	ssize_t r = 0;
	uint64_t id;
	int err = 0;

	/* Kernel threads busy after boot would preempt the calls otherwise. */
	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		fprintf(stderr, "idgen_bench: SCHED_FIFO: %s\n", strerror(errno));
		return 1;
	}
	idgen = open_or_die("/dev/idgen");
	zero = open_or_die("/dev/zero");
	uuid = open_or_die("/proc/sys/kernel/random/uuid");
	read_or_die(idgen, buf, 8, "/dev/idgen (is a lease set?)");
	if (idgen_buffer_new(idgen, 1024, 10, &buffer)) {
		fprintf(stderr, "idgen_bench: cannot make a libidgen buffer\n");
		return 1;
	}
	print_env();

	tag(1, 0, 0, "the markers alone (nothing between them)");
	COUNT(1, calls, 0, (void)0, (void)0);
	tag(2, 0, 8, "read 8 B of /dev/zero");
	COUNT(2, calls, 0, r = read(zero, buf, 8), check_len(r, 8, "/dev/zero"));
	tag(3, 0, 4096, "read 4096 B of /dev/zero");
	COUNT(3, calls, 0, r = read(zero, buf, 4096), check_len(r, 4096, "/dev/zero"));
	tag(4, 0, 0, "getppid()");
	COUNT(4, calls, 0, r = getppid(), (void)0);
	tag(5, 0, 37, "pread /proc/sys/kernel/random/uuid");
	COUNT(5, calls, 0, r = pread(uuid, buf, 64, 0), check_len(r, 37, "uuid"));

	tag(10, 1, 8, "read 1 ID of /dev/idgen");
	COUNT(10, calls, 0, r = read(idgen, buf, 8), check_len(r, 8, "/dev/idgen"));
	tag(11, 2, 16, "read 2 IDs of /dev/idgen");
	COUNT(11, calls, 0, r = read(idgen, buf, 16), check_len(r, 16, "/dev/idgen"));
	tag(12, 8, 64, "read 8 IDs of /dev/idgen");
	COUNT(12, calls, 0, r = read(idgen, buf, 64), check_len(r, 64, "/dev/idgen"));
	tag(13, 64, 512, "read 64 IDs of /dev/idgen");
	COUNT(13, calls, 200, r = read(idgen, buf, 512), check_len(r, 512, "/dev/idgen"));
	tag(14, 512, 4096, "read 512 IDs of /dev/idgen");
	COUNT(14, few, 1000, r = read(idgen, buf, 4096), check_len(r, 4096, "/dev/idgen"));
	tag(15, 4096, 32768, "read 4096 IDs of /dev/idgen");
	COUNT(15, few, 3000, r = read(idgen, buf, 32768), check_len(r, 32768, "/dev/idgen"));

	tag(20, 1, 0, "in-process lock-free, 1 ID");
	COUNT(20, calls, 0, sink += lockfree_next(), (void)0);
	tag(21, 1, 0, "in-process mutex, 1 ID");
	COUNT(21, calls, 0, sink += mutex_next(), (void)0);
	tag(22, 1, 0, "libidgen buffer (1024 IDs, 10 ms age bound), 1 ID");
	COUNT(22, calls, 0, err = idgen_buffer_take(buffer, &id),
	      check_take(err));
	(void)sink;
	(void)id;
	idgen_buffer_free(buffer);
	return 0;
}

int main(int argc, char **argv)
{
	static uint64_t buf[MAX_BATCH];
	struct lat l_idgen, l_zero, l_uuid, l_threads;
	double idgen512 = 0, zero512 = 0, lockfree = 0, ceiling_ms, buffered;
	double one_reader, tp[5], one_id[5];
	int idgen, zero, uuid, n, t;

	if (argc >= 2 && !strcmp(argv[1], "--icount")) {
		char *end = NULL;
		long calls = argc == 3 ? strtol(argv[2], &end, 10) : 1000;

		if (argc > 3 || (end && (*end || calls < 1 || calls > 1000000))) {
			fprintf(stderr, "usage: %s --icount [CALLS (1..1000000)]\n", argv[0]);
			return 2;
		}
		return count_instructions((int)calls);
	}
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--icount [CALLS]]\n", argv[0]);
		return 2;
	}
	idgen = open_or_die("/dev/idgen");
	zero = open_or_die("/dev/zero");
	uuid = open_or_die("/proc/sys/kernel/random/uuid");
	read_or_die(idgen, buf, 8, "/dev/idgen (is a lease set?)");

	printf("## Single-ID read latency (ns, %d calls each)\n\n", LAT_SAMPLES);
	printf("| source | p50 | p99 | p999 | p50 / floor |\n|---|---|---|---|---|\n");
	l_zero = latency(zero, 8, 0, LAT_SAMPLES);
	l_idgen = latency(idgen, 8, 0, LAT_SAMPLES);
	l_uuid = latency(uuid, 64, 1, LAT_SAMPLES);
	printf("| read 8 B of /dev/zero (the floor) | %.0f | %.0f | %.0f | 1.00 |\n",
	       l_zero.p50, l_zero.p99, l_zero.p999);
	printf("| read 1 ID of /dev/idgen | %.0f | %.0f | %.0f | %.2f |\n",
	       l_idgen.p50, l_idgen.p99, l_idgen.p999, l_idgen.p50 / l_zero.p50);
	printf("| pread /proc/sys/kernel/random/uuid | %.0f | %.0f | %.0f | %.2f |\n\n",
	       l_uuid.p50, l_uuid.p99, l_uuid.p999, l_uuid.p50 / l_zero.p50);

	if (idgen_buffer_new(idgen, 1024, 10, &buffer)) {
		fprintf(stderr, "idgen_bench: cannot make a libidgen buffer\n");
		return 1;
	}
	buffered = per_id_inproc(buffered_next, 1);
	printf("## One ID per call: ns per ID (median of %d rounds)\n\n", ROUNDS);
	printf("| path | ns per ID |\n|---|---|\n");
	printf("| libidgen buffer (1024 IDs, 10 ms age bound) | %.1f |\n", buffered);
	printf("| in-process lock-free | %.1f |\n", per_id_inproc(lockfree_next, 1));
	printf("| in-process mutex | %.1f |\n\n", per_id_inproc(mutex_next, 1));
	sleep_ms(150);

	printf("## Batch reads: ns per ID (median of %d rounds)\n\n", ROUNDS);
	printf("| IDs per call | /dev/idgen | /dev/zero, same bytes | idgen / zero | in-process lock-free | in-process mutex |\n");
	printf("|---|---|---|---|---|---|\n");
	for (n = 1; n <= MAX_BATCH; n *= 2) {
		double a, z, lf, mx;

		sleep_ms(150);	/* let any lead run off */
		a = per_id_read(idgen, n, buf, true);
		z = per_id_read(zero, n, buf, false);
		lf = per_id_inproc(lockfree_next, n);
		mx = per_id_inproc(mutex_next, n);
		if (n == 512) {
			idgen512 = a;
			zero512 = z;
			lockfree = lf;
		}
		printf("DAT %d %.2f %.2f %.2f %.2f %.2f\n", n, a, z, lf, mx, buffered);
		printf("| %d | %.1f | %.1f | %.2f | %.1f | %.1f |\n", n, a, z, a / z, lf, mx);
	}

	/*
	 * The first max_borrow_ms worth of IDs can be borrowed ahead of the
	 * clock: read 1.5 s uncounted first, so what is counted is the
	 * steady state.  Each reader has its own file; a reader alone may take
	 * the whole ceiling, and readers that outrun it together share it
	 * (the oldest wait and the fairness share).
	 */
	printf("\n## Sustained throughput (512-ID reads, 3 s each after 1.5 s of warm-up)\n\n");
	printf("| readers | IDs/s | share of the ceiling (%.0f IDs/s) |\n|---|---|---|\n",
	       CEILING_PER_MS * 1000);
	ceiling_ms = CEILING_PER_MS * 1000;
	for (t = 1; t <= 4; t++) {
		sleep_ms(1200);	/* start each run with no lead */
		tp[t] = run_readers(t, 1.5, 3.0, 0, NULL);
		printf("| %d | %.0f | %.1f%% |\n", t, tp[t], 100 * tp[t] / ceiling_ms);
	}
	one_reader = tp[1];

	/*
	 * Scaling where the syscall, not the node's ceiling, limits: 1-ID
	 * reads from 1, 2 and 4 threads, each on its own file, stay far below
	 * the ceiling, so the rate per thread shows what readers cost each
	 * other (the guest has 2 vCPUs: 4 threads share them).
	 */
	printf("\n## 1-ID reads from 1, 2 and 4 threads (2 s each after 0.2 s of warm-up)\n\n");
	printf("| threads | IDs/s per thread | IDs/s in all | p50 (ns) | p99 (ns) | p999 (ns) |\n");
	printf("|---|---|---|---|---|---|\n");
	for (t = 1; t <= 4; t *= 2) {
		sleep_ms(1200);
		one_id[t] = run_readers(t, 0.2, 2.0, 1, &l_threads) / t;
		printf("| %d | %.0f | %.0f | %.0f | %.0f | %.0f |\n", t, one_id[t], one_id[t] * t,
		       l_threads.p50, l_threads.p99, l_threads.p999);
	}
	printf("\n");

	print_memory();

	printf("## Goals, in time\n\n| goal | measured | target | |\n|---|---|---|---|\n");
	goal("single-ID read p50 / /dev/zero p50", l_idgen.p50 / l_zero.p50, 1.3, 1);
	goal("512-ID batch ns/ID / in-process lock-free ns/ID", idgen512 / lockfree, 1.0, 1);
	goal("512-ID batch ns/ID / /dev/zero ns per 8 B", idgen512 / zero512, 2.0, 1);
	goal("one reader / the node's ceiling", one_reader / ceiling_ms, 0.95, 0);
	goal("two readers / the node's ceiling", tp[2] / ceiling_ms, 0.95, 0);
	/*
	 * No target: on a shared 2-core host the guest's second vCPU is not
	 * a core of its own.  Reported so that a change that makes readers
	 * cost each other shows.
	 */
	printf("| 1-ID reads, IDs/s per thread: 2 threads / 1 thread | %.2f | (reported) | |\n",
	       one_id[2] / one_id[1]);
	printf("| 1-ID reads, IDs/s per thread: 4 threads / 1 thread | %.2f | (reported) | |\n\n",
	       one_id[4] / one_id[1]);
	return 0;
}

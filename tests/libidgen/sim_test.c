// SPDX-License-Identifier: GPL-2.0
/*
 * libidgen's simulated generator (lib/sim.c), as idgen-httpd and the
 * PostgreSQL extension mint from it ("sim:WORKER"), keeps the module's
 * guarantees within its process: strictly increasing
 * batches of its own node, borrowing the next millisecond, never more
 * than its lead ahead of the wall clock, refusing at its fence, no ID
 * twice across threads, a restart above every ID of the run before
 * (a wall clock stepped back between them too),
 * and only one process per worker on the host.
 */
#define _GNU_SOURCE	/* unshare() */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"
#include "sim_spec.h"
#include "child.h"
#include "kselftest_harness.h"

#define SEQ_PER_MS	4096

static char err[512];	/* what idgen_sim_open() says when it fails */

static int sim_open(struct idgen_sim **s, unsigned int worker, uint64_t lease_ms)
{
	char spec[32];

	snprintf(spec, sizeof(spec), "sim:%u", worker);
	return idgen_sim_open(spec, lease_ms, s, err, sizeof(err));
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - LIBIDGEN_EPOCH_UNIX_MS;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

TEST(batch_of_its_node_borrowing_ms)
{
	static uint64_t ids[10000];
	struct idgen_decoded d, first;
	struct idgen_sim *m;
	uint64_t ms_seen = 0;
	size_t i;

	ASSERT_EQ(0, sim_open(&m, 111, 0));
	ASSERT_EQ(10000, idgen_sim_mint(m, ids, 10000));
	ASSERT_EQ(0, idgen_decode(ids[0], NULL, &first));
	for (i = 0; i < 10000; i++) {
		ASSERT_EQ(0, idgen_decode(ids[i], NULL, &d));
		EXPECT_EQ(0, d.region);
		EXPECT_EQ(111, d.worker);
		if (i)
			ASSERT_LT(ids[i - 1], ids[i]);
		if (d.ms != ms_seen)
			ms_seen = d.ms;
	}
	/* 10000 IDs do not fit 4096 a ms: at least three ms were used. */
	EXPECT_LE(first.ms + 2, ms_seen);
	idgen_sim_close(m);
}

TEST(never_past_the_lead)
{
	static uint64_t ids[65536];
	struct idgen_decoded d;
	struct idgen_sim *m;
	uint64_t last = 0, after;
	int i;
	ssize_t r;

	ASSERT_EQ(0, sim_open(&m, 112, 0));
	/*
	 * Asking for more than the lead holds: short batches, waiting for
	 * the clock at the lead rather than refusing, never past it.
	 */
	for (i = 0; i < 50; i++) {
		r = idgen_sim_mint(m, ids, 65536);
		after = wall_ms();
		ASSERT_LT(0, r);
		ASSERT_LE(r, (LIBIDGEN_SIM_MAX_LEAD_MS + 1) * SEQ_PER_MS);
		ASSERT_LT(last, ids[0]);
		last = ids[r - 1];
		ASSERT_EQ(0, idgen_decode(last, NULL, &d));
		ASSERT_LE(d.ms, after + LIBIDGEN_SIM_MAX_LEAD_MS);
	}
	pause_ms(2 * LIBIDGEN_SIM_MAX_LEAD_MS + 5);
	ASSERT_EQ(1, idgen_sim_mint(m, ids, 1));
	EXPECT_LT(last, ids[0]);
	idgen_sim_close(m);
}

TEST(restart_starts_above_the_run_before)
{
	static uint64_t ids[65536];
	struct idgen_sim *a, *b;
	uint64_t last = 0;
	ssize_t r;
	int i;

	/* The first run borrows as far ahead as it may (each call), and ends. */
	ASSERT_EQ(0, sim_open(&a, 113, 0));
	for (i = 0; i < 20; i++) {
		r = idgen_sim_mint(a, ids, 65536);
		ASSERT_LT(0, r);
		last = ids[r - 1];
	}
	idgen_sim_close(a);
	/* The next run, at once, on the same node. */
	ASSERT_EQ(0, sim_open(&b, 113, 0));
	ASSERT_EQ(1, idgen_sim_mint(b, ids, 1));
	EXPECT_LT(last, ids[0]);
	idgen_sim_close(b);
}

TEST(stops_at_its_fence)
{
	static uint64_t ids[4096];
	struct idgen_device_state st;
	struct idgen_decoded d;
	struct idgen_sim *m;
	ssize_t r = 0;
	int i;

	ASSERT_EQ(0, sim_open(&m, 114, 50));
	ASSERT_EQ(0, idgen_sim_get_state(m, &st));
	EXPECT_EQ(st.floor_ms + 50, st.valid_until_ms);
	for (i = 0; i < 2000; i++) {
		r = idgen_sim_mint(m, ids, 4096);
		if (r == -EKEYEXPIRED)
			break;
		if (r == -ETIME) {
			pause_ms(1);
			continue;
		}
		ASSERT_LT(0, r);
		ASSERT_EQ(0, idgen_decode(ids[r - 1], NULL, &d));
		ASSERT_LT(d.ms, st.valid_until_ms);
		ASSERT_EQ(0, idgen_decode(ids[0], NULL, &d));
		ASSERT_LT(st.floor_ms, d.ms);
	}
	ASSERT_EQ(-EKEYEXPIRED, r);
	ASSERT_EQ(0, idgen_sim_get_state(m, &st));
	/* The lease stays set, as the module's, but its next ms is past the fence. */
	EXPECT_LE(st.valid_until_ms, st.next_ms);
	idgen_sim_close(m);
}

TEST(worker_out_of_range)
{
	struct idgen_sim *m;

	EXPECT_EQ(-EINVAL, sim_open(&m, 128, 0));
}

#define THREADS	4
#define PER	20000

struct worker_arg {
	struct idgen_sim *m;
	uint64_t ids[PER];
	int bad;
};

static void *take(void *p)
{
	struct worker_arg *w = p;
	size_t got = 0;
	ssize_t r;

	while (got < PER) {
		r = idgen_sim_mint(w->m, w->ids + got, PER - got < 100 ? PER - got : 100);
		if (r == -ETIME) {
			pause_ms(1);
			continue;
		}
		if (r <= 0) {
			w->bad = 1;
			break;
		}
		got += r;
	}
	for (got = 1; got < PER; got++)
		if (w->ids[got - 1] >= w->ids[got])
			w->bad = 1;
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

TEST(threads_never_share_an_id)
{
	static struct worker_arg w[THREADS];
	static uint64_t all[THREADS * PER];
	pthread_t t[THREADS];
	struct idgen_sim *m;
	int i;

	ASSERT_EQ(0, sim_open(&m, 115, 0));
	for (i = 0; i < THREADS; i++) {
		w[i].m = m;
		ASSERT_EQ(0, pthread_create(&t[i], NULL, take, &w[i]));
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		EXPECT_FALSE(w[i].bad);
		memcpy(all + i * PER, w[i].ids, sizeof(w[i].ids));
	}
	qsort(all, THREADS * PER, sizeof(all[0]), cmp);
	for (i = 1; i < THREADS * PER; i++)
		ASSERT_NE(all[i - 1], all[i]);
	idgen_sim_close(m);
}

/*
 * Two processes on one worker would mint the same IDs: the second is
 * refused, naming region, worker and the lock file, while another
 * worker opens; once the first has ended the worker is free again.
 */
TEST(one_process_per_worker)
{
	const char *lock = LIBIDGEN_SIM_STATE_DIR "/" LIBIDGEN_SIM_LOCK_NAME "116";
	char dir[] = "/tmp/sim_test.XXXXXX";
	int held[2], done[2], status;
	struct idgen_sim *m, *other;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(held));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* The first process: holds worker 116 until told to end. */
		close(held[0]);
		close(done[1]);
		if (sim_open(&m, 116, 0))
			_exit(1);
		if (write(held[1], "h", 1) != 1 || read(done[0], &c, 1) < 0)
			_exit(2);
		_exit(0);
	}
	close(held[1]);
	close(done[0]);
	ASSERT_EQ(1, read(held[0], &c, 1));

	ASSERT_EQ(-EBUSY, sim_open(&m, 116, 0));
	TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(err, "region 0, worker 116"));
	EXPECT_NE(NULL, strstr(err, lock));
	/* The lock is one whatever the environment says: no directory of its own. */
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, setenv("RUNTIME_DIRECTORY", dir, 1));
	ASSERT_EQ(-EBUSY, sim_open(&m, 116, 0));
	ASSERT_EQ(0, unsetenv("RUNTIME_DIRECTORY"));
	rmdir(dir);
	ASSERT_EQ(0, sim_open(&other, 117, 0));
	idgen_sim_close(other);

	close(done[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, sim_open(&m, 116, 0));
	idgen_sim_close(m);
}

/*
 * Its lease as the module's: revoked, minting is refused with ENOKEY and
 * the revoke says the last ms used; renewed, it mints again above it; a
 * lease of another node than the one it locked is not taken.
 */
TEST(revoke_and_renew)
{
	struct idgen_device_state st;
	struct idgen_decoded d;
	struct idgen_sim *m;
	uint64_t id, last_ms = 0, now;

	ASSERT_EQ(0, sim_open(&m, 118, 0));
	ASSERT_EQ(1, idgen_sim_mint(m, &id, 1));
	ASSERT_EQ(0, idgen_sim_revoke(m, &last_ms));
	ASSERT_EQ(0, idgen_decode(id, NULL, &d));
	EXPECT_LE(d.ms, last_ms);
	EXPECT_EQ(-ENOKEY, idgen_sim_mint(m, &id, 1));
	ASSERT_EQ(0, idgen_sim_get_state(m, &st));
	EXPECT_FALSE(st.flags & LIBIDGEN_STATE_LEASED);
	now = wall_ms();
	EXPECT_EQ(-EPERM, idgen_sim_set_lease(m, 0, 119, now, now + 60000, NULL, 0));
	EXPECT_EQ(-EPERM, idgen_sim_set_lease(m, 1, 118, now, now + 60000, NULL, 0));
	ASSERT_EQ(0, idgen_sim_set_lease(m, 0, 118, now, now + 60000, NULL, 0));
	ASSERT_EQ(1, idgen_sim_mint(m, &id, 1));
	ASSERT_EQ(0, idgen_decode(id, NULL, &d));
	EXPECT_LT(last_ms, d.ms);
	EXPECT_EQ(118, d.worker);
	idgen_sim_close(m);
}

/* A child's copy of the state would mint its parent's IDs: refused. */
TEST(child_refused)
{
	struct idgen_sim *m;
	uint64_t id;
	int status;
	pid_t pid;

	ASSERT_EQ(0, sim_open(&m, 119, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(idgen_sim_mint(m, &id, 1) == -ECHILD ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(1, idgen_sim_mint(m, &id, 1));
	idgen_sim_close(m);
}

/* A buffer over it, as the PostgreSQL extension's for idgen.device = 'sim:N'. */
TEST(buffer_over_it)
{
	struct idgen_buffer *b;
	struct idgen_sim *m;
	uint64_t id, prev = 0;
	int i;

	ASSERT_EQ(0, sim_open(&m, 120, 0));
	ASSERT_EQ(-EINVAL, idgen_buffer_new_sim(NULL, 32, 10, &b));
	ASSERT_EQ(0, idgen_buffer_new_sim(m, 32, 10, &b));
	for (i = 0; i < 10000; i++) {
		ASSERT_EQ(0, idgen_buffer_take(b, &id));
		ASSERT_LT(prev, id);
		prev = id;
	}
	idgen_buffer_free(b);
	idgen_sim_close(m);
}

/* What is not a simulation, or a worker out of range, is refused. */
TEST(specs)
{
	struct idgen_sim *m;

	EXPECT_TRUE(idgen_sim_is_spec("sim"));
	EXPECT_TRUE(idgen_sim_is_spec("sim:7"));
	EXPECT_FALSE(idgen_sim_is_spec("/dev/idgen"));
	EXPECT_FALSE(idgen_sim_is_spec("simulated"));
	EXPECT_EQ(-EINVAL, idgen_sim_open("/dev/idgen", 0, &m, err, sizeof(err)));
	EXPECT_EQ(-EINVAL, idgen_sim_open("sim:", 0, &m, err, sizeof(err)));
	EXPECT_EQ(-EINVAL, idgen_sim_open("sim:128", 0, &m, err, sizeof(err)));
	EXPECT_EQ(-EINVAL, idgen_sim_open("sim:012", 0, &m, err, sizeof(err)));
}

/* The one reading of a spec (sim_spec.h), which every program takes. */
TEST(spec_parse)
{
	struct idgen_sim_spec p;

	ASSERT_EQ(0, idgen_sim_spec_parse("sim", &p, err, sizeof(err)));
	EXPECT_EQ(IDGEN_SIM_WORKER, p.kind);
	EXPECT_FALSE(p.worker_named);
	EXPECT_EQ(0U, p.worker);
	ASSERT_EQ(0, idgen_sim_spec_parse("sim:127", &p, err, sizeof(err)));
	EXPECT_EQ(IDGEN_SIM_WORKER, p.kind);
	EXPECT_TRUE(p.worker_named);
	EXPECT_EQ(127U, p.worker);
	ASSERT_EQ(0, idgen_sim_spec_parse("sim:/tmp/x", &p, err, sizeof(err)));
	EXPECT_EQ(IDGEN_SIM_FILE, p.kind);
	EXPECT_STREQ("/tmp/x", p.file);
	ASSERT_EQ(0, idgen_sim_spec_parse("sim:+5", &p, err, sizeof(err)));
	EXPECT_EQ(IDGEN_SIM_FILE, p.kind);
	ASSERT_EQ(0, idgen_sim_spec_parse("/dev/idgen", &p, err, sizeof(err)));
	EXPECT_EQ(IDGEN_SIM_NONE, p.kind);
	ASSERT_EQ(0, idgen_sim_spec_parse("simulated", &p, err, sizeof(err)));
	EXPECT_EQ(IDGEN_SIM_NONE, p.kind);
	ASSERT_EQ(0, idgen_sim_spec_parse(NULL, &p, err, sizeof(err)));
	EXPECT_EQ(IDGEN_SIM_NONE, p.kind);
	EXPECT_EQ(-EINVAL, idgen_sim_spec_parse("sim:", &p, err, sizeof(err)));
	EXPECT_STREQ("sim: names no worker and no file", err);
	EXPECT_EQ(-EINVAL, idgen_sim_spec_parse("sim:128", &p, err, sizeof(err)));
	EXPECT_STREQ("the simulation's worker must be a decimal number from 0 to 127",
		     err);
	EXPECT_EQ(-EINVAL, idgen_sim_spec_parse("sim:012", &p, NULL, 0));
	EXPECT_TRUE(idgen_sim_is_spec("sim:"));
}

/*
 * Lease changes while other threads mint: renewing it (as idgen-httpd's
 * lease side does) must not move the minting word back under them, nor
 * may they mint with half a new lease.
 */
#define RENEW_PER	200000

struct renew_arg {
	struct idgen_sim *m;
	uint64_t *ids;
	size_t got;
	int bad;
};

static void *take_8s(void *p)
{
	struct renew_arg *w = p;
	ssize_t r;

	while (w->got + 8 <= RENEW_PER) {
		r = idgen_sim_mint(w->m, w->ids + w->got, 8);
		if (r == -ETIME)
			continue;
		if (r <= 0) {
			w->bad = 1;
			break;
		}
		w->got += r;
	}
	return NULL;
}

TEST(renew_while_minting)
{
	struct renew_arg w[2];
	pthread_t t[2];
	struct idgen_sim *m;
	uint64_t *all, now;
	size_t n = 0, dups = 0, i;
	int k, renewals = 0;

	/* A fence of its own, so that each renewal pushes it on. */
	ASSERT_EQ(0, sim_open(&m, 111, 1000));
	for (k = 0; k < 2; k++) {
		w[k] = (struct renew_arg){ .m = m, .ids = calloc(RENEW_PER, 8) };
		ASSERT_NE(NULL, w[k].ids);
		ASSERT_EQ(0, pthread_create(&t[k], NULL, take_8s, &w[k]));
	}
	while (__atomic_load_n(&w[0].got, __ATOMIC_RELAXED) + 8 <= RENEW_PER ||
	       __atomic_load_n(&w[1].got, __ATOMIC_RELAXED) + 8 <= RENEW_PER) {
		if (w[0].bad || w[1].bad)
			break;
		now = wall_ms();
		ASSERT_EQ(0, idgen_sim_set_lease(m, 0, 111, now, now + 600000,
						 NULL, 0));
		renewals++;
	}
	all = calloc(2 * RENEW_PER, 8);
	ASSERT_NE(NULL, all);
	for (k = 0; k < 2; k++) {
		pthread_join(t[k], NULL);
		EXPECT_FALSE(w[k].bad);
		memcpy(all + n, w[k].ids, w[k].got * 8);
		n += w[k].got;
		free(w[k].ids);
	}
	qsort(all, n, sizeof(all[0]), cmp);
	for (i = 1; i < n; i++)
		dups += all[i - 1] == all[i];
	TH_LOG("%zu IDs, %d renewals, %zu duplicates", n, renewals, dups);
	EXPECT_EQ(0, dups);
	free(all);
	idgen_sim_close(m);
}

/*
 * Revoked while threads mint: the millisecond the revoke returns bounds
 * every ID of the lease, those of mints in flight included (spec F3).
 */
struct revoke_arg {
	struct idgen_sim *m;
	uint64_t max_id;
	atomic_int started;
	int bad;
};

static void *take_until_revoked(void *p)
{
	struct revoke_arg *w = p;
	uint64_t ids[8];
	ssize_t r;

	atomic_fetch_add(&w->started, 1);
	for (;;) {
		r = idgen_sim_mint(w->m, ids, 8);
		if (r == -ENOKEY)
			return NULL;
		if (r == -ETIME)
			continue;
		if (r <= 0) {
			w->bad = 1;
			return NULL;
		}
		if (ids[r - 1] > w->max_id)
			w->max_id = ids[r - 1];
	}
}

TEST(revoke_bounds_mints_in_flight)
{
	struct revoke_arg w[2];
	struct idgen_decoded d;
	struct idgen_sim *m;
	uint64_t last, now;
	pthread_t t[2];
	int round, k, late = 0;

	ASSERT_EQ(0, sim_open(&m, 112, 0));
	for (round = 0; round < 300; round++) {
		for (k = 0; k < 2; k++) {
			w[k] = (struct revoke_arg){ .m = m };
			ASSERT_EQ(0, pthread_create(&t[k], NULL, take_until_revoked, &w[k]));
		}
		while (atomic_load(&w[0].started) + atomic_load(&w[1].started) < 2)
			;
		pause_ms(round % 3);
		ASSERT_EQ(0, idgen_sim_revoke(m, &last));
		for (k = 0; k < 2; k++) {
			pthread_join(t[k], NULL);
			EXPECT_FALSE(w[k].bad);
			if (!w[k].max_id)
				continue;
			ASSERT_EQ(0, idgen_decode(w[k].max_id, NULL, &d));
			if (d.ms > last) {
				TH_LOG("round %d: an ID of ms %llu after revoke said %llu",
				       round, (unsigned long long)d.ms,
				       (unsigned long long)last);
				late++;
			}
		}
		now = wall_ms();
		ASSERT_EQ(0, idgen_sim_set_lease(m, 0, 112, now, now + 600000, NULL, 0));
	}
	EXPECT_EQ(0, late);
	idgen_sim_close(m);
}

/*
 * A child made by clone(CLONE_NEWPID) from PID 1 of a PID namespace is
 * PID 1 too: the PID cannot tell it from its parent, the fork guard can.
 */
TEST(child_in_a_new_pid_namespace_refused)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct idgen_sim *m;
		uint64_t id;
		pid_t inner, child;

		if (unshare(CLONE_NEWPID))
			_exit(errno == EPERM ? 4 : 1);
		inner = fork();
		if (inner < 0)
			_exit(1);
		if (inner) {
			if (waitpid(inner, &status, 0) != inner || !WIFEXITED(status))
				_exit(1);
			_exit(WEXITSTATUS(status));
		}
		/* PID 1 of the new namespace. */
		if (getpid() != 1 || sim_open(&m, 113, 0) || idgen_sim_mint(m, &id, 1) != 1)
			_exit(2);
		child = child_make(CHILD_CLONE, true);
		if (child < 0)
			_exit(errno == EPERM ? 4 : 1);
		if (!child)
			_exit(getpid() != 1 ? 5 : idgen_sim_mint(m, &id, 1) == -ECHILD ? 0 : 3);
		if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
			_exit(1);
		_exit(WEXITSTATUS(status));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 4)
		SKIP(return, "a new PID namespace needs CAP_SYS_ADMIN");
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * A state file ("sim:FILE") that no lease could have written is refused at
 * open: a worker or region wider than its layout, a floor not below the
 * fence, a millisecond past the time field.
 */
TEST(corrupt_state_file_refused)
{
	static const char *const bad[] = {
		"1 0 200 10 20000 0 3 7 12\n",		/* worker > 127 */
		"1 9 1 10 20000 0 3 7 12\n",		/* region > 7 */
		"1 0 1 30000 20000 0 3 7 12\n",		/* floor >= until */
		"1 0 1 10 20000 2199023255552 3 7 12\n",	/* last > MS_MAX */
		"1 0 1 10 2199023255553 0 3 7 12\n",	/* until > MS_MAX + 1 */
		"1 0 -1 10 20000 0 3 7 12\n",		/* a negative worker */
		"7 0 1 10 20000 0 3 7 12\n",		/* leased neither 0 nor 1 */
	};
	char dir[] = "/tmp/sim_test.XXXXXX", path[64], spec[80];
	struct idgen_sim *m;
	unsigned int i;
	FILE *f;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state", dir);
	snprintf(spec, sizeof(spec), "sim:%s", path);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = fopen(path, "w");
		ASSERT_NE(NULL, f);
		fputs(bad[i], f);
		fclose(f);
		m = NULL;
		EXPECT_EQ(-EIO, idgen_sim_open(spec, 0, &m, err, sizeof(err))) {
			TH_LOG("state \"%.*s\" taken", (int)strlen(bad[i]) - 1, bad[i]);
		}
		idgen_sim_close(m);
	}
	/* A sound one is taken. */
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fputs("1 0 1 10 2199023255552 0 3 7 12\n", f);
	fclose(f);
	ASSERT_EQ(0, idgen_sim_open(spec, 0, &m, err, sizeof(err)));
	idgen_sim_close(m);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state.tmp", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state.log", dir);
	unlink(path);
	rmdir(dir);
}

/*
 * A run's last millisecond outlives it (/dev/shm/idgen-sim-r0-wWORKER):
 * after the wall clock stepped back between two runs, the next run does
 * not follow it back under the IDs of the run before.  A step back is
 * played by a state file whose last ID is ahead of the clock.
 */
static void put_mark(struct __test_metadata *_metadata, unsigned int worker,
		     uint64_t ms)
{
	uint64_t rec[2] = { 0, ms << 22 | ((1 << 22) - 1) };
	char path[64];
	int fd;

	memcpy(&rec[0], "idgensim", 8);
	snprintf(path, sizeof(path), "/dev/shm/idgen-sim-r0-w%u", worker);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(sizeof(rec), pwrite(fd, rec, sizeof(rec), 0));
	close(fd);
}

/* The millisecond of the last ID the mark holds. */
static uint64_t get_mark(unsigned int worker)
{
	uint64_t rec[2] = { 0, 0 };
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/idgen-sim-r0-w%u", worker);
	fd = open(path, O_RDONLY);
	if (fd < 0 || pread(fd, rec, sizeof(rec), 0) != sizeof(rec) ||
	    memcmp(&rec[0], "idgensim", 8))
		rec[1] = 0;
	if (fd >= 0)
		close(fd);
	return (rec[1] & ~(1ULL << 63)) >> 22;
}

TEST(restart_after_a_step_back)
{
	struct idgen_decoded d;
	struct idgen_sim *m;
	uint64_t id, mark, t0;
	ssize_t r;

	/* A run that stamped 40 ms ahead of the clock now. */
	mark = wall_ms() + 40;
	put_mark(_metadata, 114, mark);
	ASSERT_EQ(0, sim_open(&m, 114, 0));
	t0 = wall_ms();
	while ((r = idgen_sim_mint(m, &id, 1)) == -ETIME && wall_ms() < t0 + 2000)
		pause_ms(1);
	ASSERT_EQ(1, r);
	ASSERT_EQ(0, idgen_decode(id, NULL, &d));
	EXPECT_LT(mark, d.ms);
	/* The mark holds it, the process still running. */
	EXPECT_LE(d.ms, get_mark(114));
	idgen_sim_close(m);

	/* Far ahead: refused at once (ETIME), never a hang, never below it. */
	mark = wall_ms() + 60000;
	put_mark(_metadata, 114, mark);
	t0 = wall_ms();
	r = sim_open(&m, 114, 0);
	if (!r) {
		EXPECT_EQ(-ETIME, idgen_sim_mint(m, &id, 1));
		idgen_sim_close(m);
	} else {
		EXPECT_EQ(-ETIME, r);
	}
	EXPECT_GT(t0 + 1500, wall_ms());
	/* And the next run where the clock has caught up. */
	put_mark(_metadata, 114, wall_ms() - 1000);
	ASSERT_EQ(0, sim_open(&m, 114, 0));
	t0 = wall_ms();
	while ((r = idgen_sim_mint(m, &id, 1)) == -ETIME && wall_ms() < t0 + 2000)
		pause_ms(1);
	EXPECT_EQ(1, r);
	idgen_sim_close(m);
}

/* The state file of worker w, and a path to it. */
static char *state_path(unsigned int worker)
{
	static char path[64];

	snprintf(path, sizeof(path), LIBIDGEN_SIM_STATE_DIR "/" LIBIDGEN_SIM_LOCK_NAME "%u",
		 worker);
	return path;
}

/*
 * Whoever may write a worker's state could make it mint again what it
 * minted: the state is made 0600, and a state file that another user
 * owns, that anyone else may open, or that is a symbolic link, is
 * refused, naming the file.
 */
TEST(foreign_state_refused)
{
	char link_to[] = "/tmp/sim_test.XXXXXX";
	struct idgen_sim *m;
	struct stat st;
	uint64_t id;
	int fd;

	unlink(state_path(110));
	ASSERT_EQ(0, sim_open(&m, 110, 0));
	ASSERT_EQ(1, idgen_sim_mint(m, &id, 1));
	ASSERT_EQ(0, stat(state_path(110), &st));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(geteuid(), st.st_uid);
	idgen_sim_close(m);

	/* Anyone may write it. */
	ASSERT_EQ(0, chmod(state_path(110), 0666));
	EXPECT_EQ(-EPERM, sim_open(&m, 110, 0));
	TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(err, state_path(110)));
	/* Anyone may read it, and so lock it against its owner. */
	ASSERT_EQ(0, chmod(state_path(110), 0640));
	EXPECT_EQ(-EPERM, sim_open(&m, 110, 0));
	ASSERT_EQ(0, chmod(state_path(110), 0600));
	ASSERT_EQ(0, sim_open(&m, 110, 0));
	idgen_sim_close(m);

	/* Another user's. */
	if (geteuid() == 0) {
		ASSERT_EQ(0, chown(state_path(110), 65534, 65534));
		EXPECT_EQ(-EPERM, sim_open(&m, 110, 0));
		EXPECT_NE(NULL, strstr(err, "uid 65534"));
	}
	ASSERT_EQ(0, unlink(state_path(110)));

	/* A link, to a file of this user's that looks like a new state. */
	fd = mkstemp(link_to);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, symlink(link_to, state_path(110)));
	EXPECT_EQ(-ELOOP, sim_open(&m, 110, 0));
	EXPECT_NE(NULL, strstr(err, state_path(110)));
	EXPECT_EQ(0, unlink(state_path(110)));
	EXPECT_EQ(0, unlink(link_to));
}

/*
 * Another user cannot open a running worker's state to write an earlier
 * word back into it: every ID of that stretch would be minted again.
 */
TEST(state_not_writable_by_others)
{
	struct idgen_sim *m;
	int status;
	pid_t pid;

	if (geteuid() != 0)
		SKIP(return, "needs root, to become another user");
	unlink(state_path(109));
	ASSERT_EQ(0, sim_open(&m, 109, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		_exit(open(state_path(109), O_RDWR) < 0 && errno == EACCES ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	idgen_sim_close(m);
}

/*
 * The lock is the state file's: a second opener of the worker in a
 * network namespace of its own (where no abstract socket of this one
 * reaches) is refused while the first runs.
 */
TEST(one_per_worker_across_network_namespaces)
{
	struct idgen_sim *m;
	int status;
	pid_t pid;

	ASSERT_EQ(0, sim_open(&m, 108, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct idgen_sim *other;

		if (unshare(CLONE_NEWNET))
			_exit(errno == EPERM ? 4 : 1);
		_exit(sim_open(&other, 108, 0) == -EBUSY ? 0 : 3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 4)
		SKIP(idgen_sim_close(m); return, "a new network namespace needs CAP_SYS_ADMIN");
	EXPECT_EQ(0, WEXITSTATUS(status));
	idgen_sim_close(m);
}

/*
 * systemd's dynamic users lose their IPC, the state among it, whenever
 * the service stops (DynamicUser= implies RemoveIPC=): refused, naming
 * why, before any file is made.
 */
TEST(dynamic_user_refused)
{
	int status;
	pid_t pid;

	if (geteuid() != 0)
		SKIP(return, "needs root, to become a dynamic user");
	unlink(state_path(107));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct idgen_sim *m;

		if (setresgid(61200, 61200, 61200) || setresuid(61200, 61200, 61200))
			_exit(2);
		if (sim_open(&m, 107, 0) != -EPERM)
			_exit(1);
		_exit(strstr(err, "DynamicUser=") && access(state_path(107), F_OK) ? 0 : 3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * The lease side's state ("sim:FILE") likewise: a file others may write,
 * or a symbolic link, is refused at open.
 */
TEST(foreign_file_state_refused)
{
	char dir[] = "/tmp/sim_test.XXXXXX", path[64], spec[80], target[80];
	struct idgen_sim *m = NULL;
	FILE *f;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state", dir);
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	snprintf(spec, sizeof(spec), "sim:%s", path);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fputs("1 0 1 10 2199023255552 0 3 7 12\n", f);
	fclose(f);
	ASSERT_EQ(0, chmod(path, 0666));
	EXPECT_EQ(-EPERM, idgen_sim_open(spec, 0, &m, err, sizeof(err)));
	ASSERT_EQ(0, rename(path, target));
	ASSERT_EQ(0, chmod(target, 0600));
	ASSERT_EQ(0, symlink(target, path));
	EXPECT_EQ(-ELOOP, idgen_sim_open(spec, 0, &m, err, sizeof(err)));
	ASSERT_EQ(0, unlink(path));
	ASSERT_EQ(0, rename(target, path));
	ASSERT_EQ(0, idgen_sim_open(spec, 0, &m, err, sizeof(err)));
	idgen_sim_close(m);
	unlink(path);
	rmdir(dir);
}

/*
 * The state file removed under a running process (its owner, or logind's
 * RemoveIPC= at a logout): a second opener makes a new file and locks it,
 * and only the name the process holds refuses it.
 */
TEST(one_per_worker_when_its_file_is_removed)
{
	struct idgen_sim *m, *other;

	ASSERT_EQ(0, sim_open(&m, 106, 0));
	ASSERT_EQ(0, unlink(state_path(106)));
	EXPECT_EQ(-EBUSY, sim_open(&other, 106, 0));
	TH_LOG("%s", err);
	idgen_sim_close(m);
	unlink(state_path(106));
}

TEST_HARNESS_MAIN

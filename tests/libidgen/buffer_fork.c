// SPDX-License-Identifier: GPL-2.0
/*
 * buffer_fork: struct idgen_buffer across every way of making a child
 * process.  A pipe stands in for the device: the test writes fresh IDs
 * into it, and as a pipe hands each byte to one reader only, an ID comes
 * out twice only if a child took it from its copy of the parent's buffer.
 *
 * The parent fills its buffer, makes a child by fork(), _Fork(), clone()
 * or clone3() (the last three run no atfork handler), and both take IDs:
 * the child's calls succeed (libidgen(3): it never gets IDs its parent
 * buffered; it reads its own), no ID is taken twice, and the parent goes
 * on taking.  The pidns_* tests do it from PID 1 of a PID namespace into
 * a new one, as `unshare --pid --fork` does there: the child is PID 1
 * too.  They need CAP_SYS_ADMIN and are skipped without it.
 *
 * The no_wipe_* tests do the same where the kernel has no MADV_WIPEONFORK
 * (a seccomp filter makes that madvise() fail with EINVAL, as a kernel
 * before 4.14 does): the buffer then holds no ID between calls.
 *
 * The taking_* tests make the child while other threads of the parent
 * are inside a take, one of them asleep in the refill's read() on an
 * empty pipe, the buffer's mutex held: the child's takes must come back
 * all the same, with IDs of its own (an alarm ends a child that hangs).
 */
#define _GNU_SOURCE	/* unshare(), _Fork() */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stddef.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "idgen.h"
#include "child.h"
#include "kselftest_harness.h"

#define CAP	16	/* the buffer's capacity */
#define TAKE	8	/* IDs each side takes after the child is made */
#define STOCK	512	/* IDs in the pipe */

#define SKIPPED	4	/* scenario()'s exit: no CAP_SYS_ADMIN */

/* What the child saw, through a pipe. */
struct report {
	int ret[TAKE];
	uint64_t ids[TAKE];
	pid_t pid;
};

/*
 * The scenario, in this process: 0 if it held, 1 if not (with "# " lines
 * saying why), SKIPPED if the child could not be made for want of a
 * capability.  With newpid, this process is PID 1 of its namespace.
 */
static int scenario(enum child_how how, bool newpid, bool no_wipe)
{
	uint64_t stock[STOCK], first, mine[2 * TAKE];
	struct idgen_buffer *b;
	struct sigaction sa;
	struct report r;
	int dev[2], rep[2], status, unread, i, bad = 0;
	size_t buffered;
	ssize_t got;
	pid_t pid;

	if (pipe(dev) || pipe(rep))
		return 1;
	if (idgen_min_id_at((uint64_t)time(NULL) * 1000, &stock[0]))
		return 1;
	for (i = 0; i < STOCK; i++)
		stock[i] = stock[0] + i;
	if (write(dev[1], stock, sizeof(stock)) != sizeof(stock))
		return 1;
	if (idgen_buffer_new(dev[0], CAP, 600000, &b))
		return 1;
	/* The first take's refill fills the buffer. */
	if (idgen_buffer_take(b, &first) || first != stock[0]) {
		printf("# the parent's first take failed\n");
		return 1;
	}
	if (ioctl(dev[0], FIONREAD, &unread))
		return 1;
	buffered = STOCK - unread / sizeof(uint64_t);	/* stock[1..buffered) */
	printf("# the parent holds %zu IDs in its buffer\n", buffered - 1);
	fflush(stdout);
	if (no_wipe && buffered != 1) {
		printf("# without MADV_WIPEONFORK the buffer must hold none\n");
		return 1;
	}

	pid = child_make(how, newpid);
	if (pid < 0) {
		printf("# making the child: %s\n", strerror(errno));
		return errno == EPERM ? SKIPPED : 1;
	}
	if (!pid) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = child_on_alarm;
		sigaction(SIGALRM, &sa, NULL);
		alarm(10);
		memset(&r, 0, sizeof(r));
		for (i = 0; i < TAKE; i++)
			r.ret[i] = idgen_buffer_take(b, &r.ids[i]);
		r.pid = getpid();
		_exit(write(rep[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(rep[1]);
	for (i = 0; i < TAKE; i++)
		if (idgen_buffer_take(b, &mine[i])) {
			printf("# the parent's take %d after the child was made failed\n", i);
			bad = 1;
		}
	got = read(rep[0], &r, sizeof(r));
	waitpid(pid, &status, 0);
	if (got != sizeof(r) || !WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("# the child did not report (status 0x%x)\n", status);
		return 1;
	}
	/* The parent goes on. */
	for (i = TAKE; i < 2 * TAKE; i++)
		if (idgen_buffer_take(b, &mine[i])) {
			printf("# the parent's take %d after the child exited failed\n", i);
			bad = 1;
		}
	for (i = 0; i < TAKE; i++) {
		if (r.ret[i]) {
			printf("# the child's take %d: %s\n", i, strerror(-r.ret[i]));
			bad = 1;
			continue;
		}
		if (child_id_among(r.ids[i], stock + 1, buffered - 1)) {
			printf("# the child took %llu from its parent's buffer\n",
			       (unsigned long long)r.ids[i]);
			bad = 1;
		}
		if (r.ids[i] == first || child_id_among(r.ids[i], mine, 2 * TAKE)) {
			printf("# the child and the parent both took %llu\n",
			       (unsigned long long)r.ids[i]);
			bad = 1;
		}
	}
	if (newpid && (getpid() != 1 || r.pid != 1)) {
		printf("# not the case under test: the parent is PID %d, the child PID %d\n",
		       getpid(), r.pid);
		bad = 1;
	}
	idgen_buffer_free(b);
	return bad;
}

/*
 * With lying set, every madvise() answers 0 and does nothing, as QEMU's
 * user-mode emulation before 5.0 does: the guard must not take that for
 * a wipe-on-fork page.
 */
static bool lying;

static int run(enum child_how how, bool newpid, bool no_wipe)
{
	int status;
	pid_t pid;

	/* Before the library's first buffer: the guard is set up then. */
	if (no_wipe && child_no_wipe_on_fork(lying)) {
		printf("# seccomp: %s\n", strerror(errno));
		return 1;
	}
	if (!newpid)
		return scenario(how, false, no_wipe);
	/* Become PID 1 of a new namespace, as `unshare --pid --fork` makes. */
	if (unshare(CLONE_NEWPID))
		return errno == EPERM ? SKIPPED : 1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid)
		_exit(scenario(how, true, no_wipe));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}

#define FORK_TEST(name, how, newpid, no_wipe)					\
	TEST(name)								\
	{									\
		int ret = run(how, newpid, no_wipe);				\
										\
		if (ret == SKIPPED)						\
			SKIP(return, "a new PID namespace needs CAP_SYS_ADMIN");	\
		ASSERT_EQ(0, ret);						\
	}

FORK_TEST(child_of_fork, CHILD_FORK, false, false)
FORK_TEST(child_of__Fork, CHILD__FORK, false, false)
FORK_TEST(child_of_clone, CHILD_CLONE, false, false)
FORK_TEST(child_of_clone3, CHILD_CLONE3, false, false)
FORK_TEST(pidns_unshare_fork, CHILD_FORK, true, false)
FORK_TEST(pidns__Fork, CHILD__FORK, true, false)
FORK_TEST(pidns_clone, CHILD_CLONE, true, false)
FORK_TEST(pidns_clone3, CHILD_CLONE3, true, false)
FORK_TEST(no_wipe_child_of__Fork, CHILD__FORK, false, true)
FORK_TEST(no_wipe_pidns_clone, CHILD_CLONE, true, true)

/* A madvise() that says yes to everything is not believed. */
TEST(lying_madvise_child_of__Fork)
{
	lying = true;
	ASSERT_EQ(0, run(CHILD__FORK, false, true));
}

#define RACE_LOOPS	200	/* children made, each in a race of its own */
#define RACE_THREADS	3	/* the parent's takers; a fork()ed child's too */
#define RACE_TAKE	8	/* IDs each of the child's takers takes */
#define RACE_STOCK	128	/* IDs in the child's own pipe */
#define RACE_CHILD	1000000	/* the child's IDs: this far above the parent's */

struct racer {
	struct idgen_buffer *b;
	pthread_t thread;
	pid_t tid;		/* for /proc: is it in read()? */
	unsigned int taken, failed;	/* atomic */
	bool *stop;
};

/* Take until stopped; a failure counts unless it came of the stop. */
static void *racer_main(void *arg)
{
	struct racer *r = arg;
	uint64_t id;

	__atomic_store_n(&r->tid, gettid(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE)) {
		if (!idgen_buffer_take(r->b, &id))
			__atomic_add_fetch(&r->taken, 1, __ATOMIC_RELAXED);
		else if (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE))
			__atomic_add_fetch(&r->failed, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Whether the thread tid sleeps in read(): its refill's, under the mutex. */
static bool in_read(pid_t tid)
{
	char path[64], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strtol(buf, NULL, 10) == SYS_read && buf[0] != 'r';	/* "running" */
}

/* The child's IDs from its own pipe, none from the parent's buffer. */
struct child_taker {
	struct idgen_buffer *b;
	uint64_t base;
	int bad;
};

static void *child_take(void *arg)
{
	struct child_taker *t = arg;
	uint64_t id;
	int i;

	for (i = 0; i < RACE_TAKE; i++) {
		if (idgen_buffer_take(t->b, &id)) {
			t->bad = 1;
			return NULL;
		}
		if (id < t->base || id >= t->base + RACE_STOCK) {
			t->bad = 2;
			return NULL;
		}
	}
	return NULL;
}

/*
 * In the child: its own pipe in place of the parent's, at the same fd,
 * so that what the child reads is never the parent's; then its takes.  A
 * child of fork() takes from several threads at once, started before its
 * first take.  Exits 0, 1 (a take failed), 2 (an ID not its own) or 3
 * (the alarm: a take hung).
 */
static void child_race(enum child_how how, struct idgen_buffer *b, int dev, int own,
		       uint64_t base)
{
	struct child_taker t[RACE_THREADS];
	pthread_t th[RACE_THREADS];
	struct sigaction sa;
	int i, n = how == CHILD_FORK ? RACE_THREADS : 1;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = child_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	alarm(5);
	if (dup2(own, dev) != dev)
		_exit(1);
	for (i = 0; i < n; i++)
		t[i] = (struct child_taker){ .b = b, .base = base };
	if (n == 1) {
		child_take(&t[0]);
		_exit(t[0].bad);
	}
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, child_take, &t[i]))
			_exit(1);
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		if (t[i].bad)
			_exit(t[i].bad);
	}
	_exit(0);
}

/*
 * One race: the parent's threads take until the buffer, half empty, reads
 * an empty pipe (one thread asleep in read() under the mutex, the others
 * waiting for it, the buffer holding what is left of the first fill);
 * then the child is made, and must take; then the parent goes on.  0, or
 * 1 with "# " lines saying why.
 */
static int race(enum child_how how, unsigned int loop)
{
	uint64_t stock[RACE_STOCK], base;
	struct racer r[RACE_THREADS];
	struct idgen_buffer *b;
	unsigned int taken;
	int dev[2], own[2], i, k, status;
	bool stop = false, asleep = false;
	pid_t pid;

	if (pipe(dev) || pipe(own))
		return 1;
	if (idgen_min_id_at((uint64_t)time(NULL) * 1000, &base))
		return 1;
	/* The first fill: CAP IDs, so that the refill at half reads nothing. */
	for (i = 0; i < CAP; i++)
		stock[i] = base + i;
	if (write(dev[1], stock, CAP * sizeof(stock[0])) != CAP * sizeof(stock[0]))
		return 1;
	for (i = 0; i < RACE_STOCK; i++)
		stock[i] = base + RACE_CHILD + i;
	if (write(own[1], stock, sizeof(stock)) != sizeof(stock))
		return 1;
	if (idgen_buffer_new(dev[0], CAP, 600000, &b))
		return 1;
	for (i = 0; i < RACE_THREADS; i++) {
		r[i] = (struct racer){ .b = b, .stop = &stop };
		if (pthread_create(&r[i].thread, NULL, racer_main, &r[i]))
			return 1;
	}
	/* Until one of them sleeps in the refill's read(): 5 s at most. */
	for (k = 0; k < 50000 && !asleep; k++) {
		for (i = 0; i < RACE_THREADS && !asleep; i++) {
			pid_t tid = __atomic_load_n(&r[i].tid, __ATOMIC_ACQUIRE);

			asleep = tid && in_read(tid);
		}
		if (!asleep)
			usleep(100);
	}
	if (!asleep) {
		printf("# loop %u: no thread came to read the empty pipe\n", loop);
		return 1;
	}
	fflush(stdout);
	pid = child_make(how, false);
	if (pid < 0) {
		printf("# loop %u: making the child: %s\n", loop, strerror(errno));
		return 1;
	}
	if (!pid)
		child_race(how, b, dev[0], own[0], base + RACE_CHILD);
	close(own[0]);
	close(own[1]);
	taken = 0;
	for (i = 0; i < RACE_THREADS; i++)
		taken += __atomic_load_n(&r[i].taken, __ATOMIC_RELAXED);
	/* The parent goes on: its sleeper and the others get IDs. */
	for (i = 0; i < CAP; i++)
		stock[i] = base + CAP + i;
	if (write(dev[1], stock, CAP * sizeof(stock[0])) != CAP * sizeof(stock[0]))
		return 1;
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("# loop %u: the child %s (status 0x%x)\n", loop,
		       !WIFEXITED(status) ? "was killed" :
		       WEXITSTATUS(status) == 3 ? "hung in a take (the alarm ended it)" :
		       WEXITSTATUS(status) == 2 ? "took an ID that was not its own" :
		       "failed a take", status);
		return 1;
	}
	for (k = 0; k < 50000; k++) {
		unsigned int now = 0;

		for (i = 0; i < RACE_THREADS; i++)
			now += __atomic_load_n(&r[i].taken, __ATOMIC_RELAXED);
		if (now > taken)
			break;
		usleep(100);
	}
	if (k == 50000) {
		printf("# loop %u: the parent's threads took nothing after the child\n", loop);
		return 1;
	}
	/* The end of the pipe ends the takers' reads. */
	__atomic_store_n(&stop, true, __ATOMIC_SEQ_CST);
	close(dev[1]);
	for (i = 0; i < RACE_THREADS; i++) {
		pthread_join(r[i].thread, NULL);
		if (r[i].failed) {
			printf("# loop %u: a take of the parent's failed\n", loop);
			return 1;
		}
	}
	close(dev[0]);
	idgen_buffer_free(b);
	return 0;
}

static int races(enum child_how how, bool no_wipe)
{
	unsigned int loop;

	if (no_wipe && child_no_wipe_on_fork(false)) {
		printf("# seccomp: %s\n", strerror(errno));
		return 1;
	}
	for (loop = 0; loop < RACE_LOOPS; loop++)
		if (race(how, loop))
			return 1;
	return 0;
}

TEST(taking_child_of_fork)
{
	ASSERT_EQ(0, races(CHILD_FORK, false));
}

TEST(taking_child_of__Fork)
{
	ASSERT_EQ(0, races(CHILD__FORK, false));
}

TEST(taking_child_of_clone)
{
	ASSERT_EQ(0, races(CHILD_CLONE, false));
}

TEST(taking_child_of_clone3)
{
	ASSERT_EQ(0, races(CHILD_CLONE3, false));
}

TEST(no_wipe_taking_child_of_fork)
{
	ASSERT_EQ(0, races(CHILD_FORK, true));
}

TEST(no_wipe_taking_child_of__Fork)
{
	ASSERT_EQ(0, races(CHILD__FORK, true));
}

TEST_HARNESS_MAIN

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
 */
#define _GNU_SOURCE	/* unshare(), _Fork() */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
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

TEST_HARNESS_MAIN

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * child.h: the ways a process is copied, and a kernel without
 * MADV_WIPEONFORK, for the fork tests of both libraries' buffers
 * (tests/libidgen/buffer_fork.c, tests/client/client_test.c).  Only
 * fork() runs atfork handlers; _Fork(), clone() and clone3() by the
 * system call do not, and each can make its child in a new PID namespace.
 */
#ifndef TESTS_LIB_CHILD_H
#define TESTS_LIB_CHILD_H

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

enum child_how { CHILD_FORK, CHILD__FORK, CHILD_CLONE, CHILD_CLONE3 };

/* "fork", "_Fork", "clone" or "clone3": 0, or -1. */
static inline int child_how_named(const char *name, enum child_how *how)
{
	static const char *const names[] = { "fork", "_Fork", "clone", "clone3" };
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i])) {
			*how = (enum child_how)i;
			return 0;
		}
	return -1;
}

/* A child made the way asked, into a new PID namespace if newpid. */
static inline pid_t child_make(enum child_how how, bool newpid)
{
	struct clone_args ca;

	switch (how) {
	case CHILD_FORK:
	case CHILD__FORK:
		if (newpid && unshare(CLONE_NEWPID))
			return -1;
		return how == CHILD_FORK ? fork() : _Fork();
	case CHILD_CLONE:
		return syscall(SYS_clone, SIGCHLD | (newpid ? CLONE_NEWPID : 0), 0, 0, 0, 0);
	case CHILD_CLONE3:
		memset(&ca, 0, sizeof(ca));
		ca.flags = newpid ? CLONE_NEWPID : 0;
		ca.exit_signal = SIGCHLD;
		return syscall(SYS_clone3, &ca, sizeof(ca));
	}
	errno = EINVAL;
	return -1;
}

/* Whether id is one of the n IDs at ids: did a child get one it must not? */
static inline bool child_id_among(uint64_t id, const uint64_t *ids, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* A child that hangs ends (a PID 1 ignores a default SIGALRM). */
static inline void child_on_alarm(int sig)
{
	(void)sig;
	_exit(3);
}

/*
 * madvise(MADV_WIPEONFORK) fails with EINVAL from now on, as before Linux
 * 4.14; with lying, every madvise() answers 0 and does nothing, as QEMU's
 * user-mode emulation before 5.0 does.  0, or -1 with errno.
 */
static inline int child_no_wipe_on_fork(bool lying)
{
	/* The advice argument's low 32 bits. */
	const unsigned int advice = offsetof(struct seccomp_data, args[2]) +
		(__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0);
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_madvise, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, advice),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_WIPEONFORK, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter lie[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_madvise, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (lying) {
		prog.len = sizeof(lie) / sizeof(lie[0]);
		prog.filter = lie;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return 0;
}

#endif /* TESTS_LIB_CHILD_H */

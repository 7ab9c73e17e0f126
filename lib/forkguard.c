// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fork guard (forkguard.h): a per-process token in a wipe-on-fork
 * page, with a fallback for kernels without one.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "forkguard.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK	18	/* Linux 4.14; older headers lack the name */
#endif

static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static bool wipes;		/* the word is in a wipe-on-fork page */
static uint64_t zero;		/* the word without one: never written */
uint64_t *idgen_forkguard_word = &zero;

/*
 * The last token handed out in this process or, copied, in an ancestor:
 * every token an ancestor set is at most this, so a child's next one is
 * new.  Ordinary memory, copied into each child.
 */
static uint64_t last_token;

/* fork()s this process came through: the fallback's token. */
static uint64_t forks_seen;

/*
 * A child made by fork() runs this, one made by _Fork() or clone() does
 * not.  The page's word is 0 in the child already; clearing it again
 * costs nothing and keeps fork() caught should the page ever be kept.
 */
static void count_fork(void)
{
	__atomic_add_fetch(&forks_seen, 1, __ATOMIC_RELAXED);
	if (wipes)
		__atomic_store_n(idgen_forkguard_word, 0, __ATOMIC_RELAXED);
}

static void setup(void)
{
	long size = sysconf(_SC_PAGESIZE);
	void *p;

	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/*
	 * A madvise() that answers 0 to anything (QEMU's user-mode emulation
	 * before 5.0, some sandboxes) would make a page that is never wiped
	 * look like one: only a madvise() that refuses an advice it cannot
	 * know (EINVAL) is believed when it accepts MADV_WIPEONFORK.
	 */
	if (p != MAP_FAILED && madvise(p, size, -1) && errno == EINVAL &&
	    !madvise(p, size, MADV_WIPEONFORK)) {
		/* Never unmapped: its address names this copy (forkguard.h). */
		idgen_forkguard_word = p;
		wipes = true;
	} else if (p != MAP_FAILED) {
		munmap(p, size);	/* EINVAL: a kernel before 4.14 */
	}
	pthread_atfork(NULL, NULL, count_fork);
}

bool idgen_forkguard_init(void)
{
	pthread_once(&guard_once, setup);
	return wipes;
}

void *idgen_forkguard_map(size_t size)
{
	void *p;

	if (!idgen_forkguard_init())
		return NULL;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* setup() found madvise() true to its word: a failure is memory's. */
	if (madvise(p, size, MADV_WIPEONFORK)) {
		munmap(p, size);
		return NULL;
	}
	return p;
}

void idgen_forkguard_unmap(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

/*
 * The word was 0: the first call in this process (or in this child).
 * Threads of a new child may race here: each takes a new number, the
 * first to store its own wins, and all return the one stored.
 */
uint64_t idgen_forkguard_renew(void)
{
	uint64_t t = 0, next;

	if (!wipes)
		/*
		 * A PID fits in 22 bits (PID_MAX_LIMIT): never 0, never mixed;
		 * bit 63, which no count of tokens reaches, keeps it apart from
		 * every token of a page.
		 */
		return 1ULL << 63 |
		       __atomic_load_n(&forks_seen, __ATOMIC_RELAXED) << 32 |
		       (uint32_t)getpid();
	next = __atomic_add_fetch(&last_token, 1, __ATOMIC_RELAXED);
	if (__atomic_compare_exchange_n(idgen_forkguard_word, &t, next, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return next;
	return t;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fork guard: a token that names the process a library object was
 * made in, so that an object copied into a child (its buffered IDs the
 * parent hands out too) is known for a copy however the child was made.
 * Built into libidgen and into libidgen-client, each its own copy.
 *
 * The token lives in a page marked MADV_WIPEONFORK (Linux 4.14): the
 * kernel gives any child of fork(), _Fork(), clone() or clone3() that page
 * as zeros, whether or not it ran an atfork handler and whatever PID it
 * has.  The first call in the child finds 0 and takes a new token, one
 * that no token of its ancestors can equal.  So the check on each call is
 * a load and a compare, with no system call.
 *
 * Without such a page (an older kernel, or mmap()/madvise() refused), the
 * token is made on every call from what the process can see itself: the
 * forks counted by a pthread_atfork() handler and getpid().  That misses a
 * child made without the handler (_Fork(), clone()) that has its parent's
 * PID, as PID 1 of a new PID namespace does: idgen_forkguard_init() says
 * so, and then the libraries keep no ID across calls.
 *
 * A child made with CLONE_VM (vfork()) shares its parent's memory, the
 * page included: it is no new process to the guard.
 *
 * An object is stamped with the token and with the address of the word
 * that holds it: two copies of the library in one process (one static,
 * one shared; or a library closed with dlclose() and opened again, whose
 * new copy counts its tokens from the start) each have their own page,
 * and the page is never unmapped, so no copy's address is ever another's,
 * in this process or in any child.  An object checked by another copy of
 * the library than the one that made it is a copy too.
 *
 * Checkpoint and restore (CRIU) make no child: a process restored twice
 * from one image, or checkpointed with --leave-running, is two processes
 * with one token, and the guard cannot tell them apart.
 */
#ifndef LIBIDGEN_FORKGUARD_H
#define LIBIDGEN_FORKGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Each library's own: never in a shared library's ABI. */
#define FORKGUARD_HIDDEN	__attribute__((visibility("hidden")))

/*
 * Set the guard up (once per process; any thread).  Returns true if the
 * token is in a wipe-on-fork page, false if it is the fallback's, which
 * cannot tell every child from its parent.
 */
FORKGUARD_HIDDEN bool idgen_forkguard_init(void);

/*
 * size bytes of zeros in a mapping of their own that every child gets as
 * zeros again, the kernel's doing at the fork (MADV_WIPEONFORK): for
 * state no child may inherit, a lock held across a system call among it.
 * NULL if there is no such page here (idgen_forkguard_init() false) or
 * no memory.  Undone by idgen_forkguard_unmap() with the same size.
 */
FORKGUARD_HIDDEN void *idgen_forkguard_map(size_t size);
FORKGUARD_HIDDEN void idgen_forkguard_unmap(void *p, size_t size);

/* The wipe-on-fork word (0 in a new child), or a word that is always 0. */
extern FORKGUARD_HIDDEN uint64_t *idgen_forkguard_word;

FORKGUARD_HIDDEN uint64_t idgen_forkguard_renew(void);

/*
 * This process's token, never 0; equal in one process, different in
 * any child.  Only after idgen_forkguard_init().
 */
static inline uint64_t idgen_forkguard_token(void)
{
	uint64_t t = __atomic_load_n(idgen_forkguard_word, __ATOMIC_RELAXED);

	return t ? t : idgen_forkguard_renew();
}

/* What an object is stamped with: this copy of the library, this process. */
struct idgen_forkguard_stamp {
	const uint64_t *word;
	uint64_t token;
};

static inline struct idgen_forkguard_stamp idgen_forkguard_stamp(void)
{
	return (struct idgen_forkguard_stamp){ idgen_forkguard_word,
					       idgen_forkguard_token() };
}

/* Whether s was stamped by this copy of the library in this process. */
static inline bool idgen_forkguard_mine(const struct idgen_forkguard_stamp *s)
{
	return s->word == idgen_forkguard_word && s->token == idgen_forkguard_token();
}

#endif /* LIBIDGEN_FORKGUARD_H */

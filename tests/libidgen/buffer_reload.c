// SPDX-License-Identifier: GPL-2.0
/*
 * buffer_reload LIBIDGEN_SO: a buffer and a copy of libidgen that did not
 * make it.  libidgen.so closed with dlclose() and opened again is a new
 * copy whose fork guard counts its tokens from the start; the token a
 * child takes from it may equal the one its parent's buffer was stamped
 * with.  The buffer is stamped with its copy of the library too, so:
 *   - a child that reopens the library never takes the IDs its parent
 *     buffered, and the parent goes on with them;
 *   - in one process, the new copy drops what the old one buffered;
 *   - a new copy without a wipe-on-fork page (madvise() refused) holds
 *     nothing between takes, whatever the buffer was made to hold.
 * The device is a file of increasing IDs read through one open file, so
 * every read(), in any process, gets IDs no read got before.  Prints TAP.
 */
#define _GNU_SOURCE	/* child.h: unshare(), _Fork() */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "tap.h"

#define IDS	4096
#define TAKE	8

struct idgen_buffer;
typedef int (*buffer_new_fn)(int, size_t, uint64_t, struct idgen_buffer **);
typedef int (*buffer_take_fn)(struct idgen_buffer *, uint64_t *);

static const char *lib;

/* A stand-in for /dev/idgen: IDS increasing IDs, one shared offset. */
static int fake_device(void)
{
	char path[] = "/tmp/idgen-reload-XXXXXX";
	int fd = mkstemp(path);
	uint64_t ids[IDS];
	size_t i;

	if (fd < 0)
		return -1;
	unlink(path);
	/* Of a millisecond this year: no age bound drops them (days). */
	for (i = 0; i < IDS; i++)
		ids[i] = (30ULL * 86400000 << 22) + i;
	if (write(fd, ids, sizeof(ids)) != sizeof(ids) || lseek(fd, 0, SEEK_SET))
		return -1;
	return fd;
}

struct copy {
	void *h;
	buffer_new_fn bnew;
	buffer_take_fn take;
};

static int open_copy(struct copy *c)
{
	c->h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!c->h)
		return -1;
	c->bnew = (buffer_new_fn)dlsym(c->h, "idgen_buffer_new");
	c->take = (buffer_take_fn)dlsym(c->h, "idgen_buffer_take");
	return c->bnew && c->take ? 0 : -1;
}

/* The parent fills a buffer; its child reopens the library and takes. */
static void child_reopens(void)
{
	uint64_t first, mine[TAKE], theirs[TAKE] = { 0 };
	struct idgen_buffer *b, *other;
	int fd = fake_device(), p[2], shared = 0, status, i;
	struct copy a, c;
	pid_t pid;

	if (fd < 0 || open_copy(&a) || pipe(p) || a.bnew(fd, 64, 86400000ULL * 365, &b) ||
	    a.take(b, &first)) {
		check(false, "child reopens: set up (%s)", dlerror() ?: "no fake device");
		return;
	}
	pid = fork();
	if (!pid) {
		dlclose(a.h);
		if (open_copy(&c) || c.bnew(fd, 64, 86400000ULL * 365, &other))
			_exit(2);
		for (i = 0; i < TAKE; i++)
			if (c.take(b, &theirs[i]))
				_exit(3);
		_exit(write(p[1], theirs, sizeof(theirs)) == sizeof(theirs) ? 0 : 4);
	}
	check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      !WEXITSTATUS(status), "child reopens libidgen.so: its takes from the "
	      "parent's buffer succeed (status %d)", status);
	if (read(p[0], theirs, sizeof(theirs)) != sizeof(theirs))
		memset(theirs, 0, sizeof(theirs));
	for (i = 0; i < TAKE; i++)
		if (a.take(b, &mine[i]))
			mine[i] = 0;
	for (i = 0; i < TAKE; i++)
		shared += theirs[i] && child_id_among(theirs[i], mine, TAKE);
	check(!shared, "... and share no ID with the parent's (%d of %d shared)",
	      shared, TAKE);
	check(mine[0] == first + 1 && mine[TAKE - 1] == first + TAKE,
	      "... the parent goes on with the IDs it buffered");
	dlclose(a.h);		/* loaded no more: same_process() opens anew */
	close(fd);
}

/* One process: the library reopened takes from the old copy's buffer. */
static void same_process(void)
{
	struct idgen_buffer *b;
	uint64_t first, next;
	int fd = fake_device();
	struct copy a, c;

	if (fd < 0 || open_copy(&a) || a.bnew(fd, 64, 86400000ULL * 365, &b) ||
	    a.take(b, &first)) {
		check(false, "same process: set up");
		return;
	}
	/* Another handle keeps nothing loaded: a new copy opens. */
	dlclose(a.h);
	if (open_copy(&c) || c.take(b, &next)) {
		check(false, "same process: the reopened copy takes (%s)",
		      dlerror() ?: "take failed");
		return;
	}
	/* The old copy read 64 at its first take: the new one reads past them. */
	check(next >= first + 64, "a reopened libidgen.so drops what the old copy "
	      "buffered: the next ID comes from the device (%llu after %llu)",
	      (unsigned long long)(next - first), 64ULL);
	dlclose(c.h);		/* loaded no more: the next test opens anew */
	close(fd);
}

/*
 * The old copy (with its page) made and filled the buffer; a child, where
 * madvise() refuses MADV_WIPEONFORK, reopens the library and takes: the
 * device is read for that one ID alone.
 */
static void reopened_without_page(void)
{
	struct idgen_buffer *b;
	struct copy a, c;
	int fd = fake_device(), status = -1;
	uint64_t first, id;
	pid_t pid, w = 0;

	if (fd < 0 || open_copy(&a) || a.bnew(fd, 64, 86400000ULL * 365, &b) ||
	    a.take(b, &first)) {
		check(false, "without a page: set up");
		return;
	}
	pid = fork();
	if (!pid) {
		off_t before;

		if (child_no_wipe_on_fork(false))
			_exit(2);
		dlclose(a.h);
		if (open_copy(&c))
			_exit(3);
		before = lseek(fd, 0, SEEK_CUR);
		if (c.take(b, &id))
			_exit(4);
		/* One ID read, none kept: 8 bytes, not the buffer's 64 IDs. */
		_exit(lseek(fd, 0, SEEK_CUR) - before == sizeof(id) ? 0 : 1);
	}
	if (pid > 0)
		w = waitpid(pid, &status, 0);
	check(w == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "a copy without a wipe-on-fork page, taking from another copy's "
	      "buffer, reads the one ID it hands out and keeps none (status %d)",
	      status);
	dlclose(a.h);
	close(fd);
}

int main(int argc, char *argv[])
{
	if (argc != 2) {
		fprintf(stderr, "usage: buffer_reload LIBIDGEN_SO\n");
		return 2;
	}
	lib = argv[1];
	child_reopens();
	same_process();
	reopened_without_page();
	return tap_done();
}

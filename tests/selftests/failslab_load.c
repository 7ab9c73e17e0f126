// SPDX-License-Identifier: GPL-2.0
/*
 * failslab_load MODULE.ko: load MODULE with its n-th slab allocation
 * failing, for n = 1, 2, ... until a load needs no failure injected.
 * Every failed load must leave no device behind, and every load that
 * succeeds must unload.  Needs a kernel with CONFIG_FAILSLAB and
 * failslab's ignore-gfp-wait off; run it in a test guest only.
 *
 * fail-nth counts the allocations of this thread only, from the moment it
 * is written, so the failure lands inside finit_module() itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_NTH 2000

static int write_nth(int fd, int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d", n);

	return pwrite(fd, buf, len, 0) == len ? 0 : -1;
}

static int read_nth(int fd)
{
	char buf[16] = "";

	if (pread(fd, buf, sizeof(buf) - 1, 0) < 0)
		return -1;
	return atoi(buf);
}

int main(int argc, char **argv)
{
	int nth_fd, mod_fd, n, refused = 0, tolerated = 0;
	struct stat st;

	if (argc != 2) {
		fprintf(stderr, "usage: %s MODULE.ko\n", argv[0]);
		return 2;
	}
	if (!getenv("IDGEN_GUEST")) {
		fprintf(stderr, "%s: refusing to run outside a test guest\n", argv[0]);
		return 2;
	}
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nth_fd < 0) {
		perror("/proc/thread-self/fail-nth");
		return 1;
	}

	for (n = 1; n <= MAX_NTH; n++) {
		int ret, err, left;

		mod_fd = open(argv[1], O_RDONLY | O_CLOEXEC);
		if (mod_fd < 0) {
			perror(argv[1]);
			return 1;
		}
		if (write_nth(nth_fd, n)) {
			perror("fail-nth");
			return 1;
		}
		ret = syscall(SYS_finit_module, mod_fd, "", 0);
		err = errno;
		left = read_nth(nth_fd);
		write_nth(nth_fd, 0);
		close(mod_fd);

		if (ret == 0) {
			if (syscall(SYS_delete_module, "idgen", 0)) {
				perror("delete_module");
				return 1;
			}
			if (left > 0) {
				printf("# load %d needed no injected failure: %d refused, %d tolerated\n",
				       n, refused, tolerated);
				return refused > 0 ? 0 : 1;
			}
			tolerated++;
			continue;
		}
		refused++;
		if (stat("/dev/idgen", &st) == 0) {
			printf("# /dev/idgen left behind after failing allocation %d (%s)\n",
			       n, strerror(err));
			return 1;
		}
	}
	printf("# no clean load within %d allocations\n", MAX_NTH);
	return 1;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The standalone state file (state_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "state_file.h"

int state_file_read(const char *path, uint64_t *valid_until_ms)
{
	char line[128], *end;
	unsigned long long v;
	FILE *f;

	*valid_until_ms = 0;
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		log_err("state file %s: %s", path, strerror(errno));
		return -errno;
	}
	if (!fgets(line, sizeof(line), f) || strncmp(line, "valid_until_ms ", 15) ||
	    line[15] < '0' || line[15] > '9') {
		fclose(f);
		log_err("state file %s is not an idgend state file (want "
			"'valid_until_ms <N>'); it must hold the highest ms ever "
			"fenced, so idgend will not guess: fix or remove it",
			path);
		return -EBADMSG;
	}
	fclose(f);
	errno = 0;
	v = strtoull(line + 15, &end, 10);
	if (errno || (*end && strcmp(end, "\n"))) {
		log_err("state file %s: bad number '%s'", path, line + 15);
		return -EBADMSG;
	}
	*valid_until_ms = v;
	return 0;
}

int state_file_prepare(const char *path)
{
	char *copy = strdup(path);
	const char *dir;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	if (mkdir(dir, 0755) && errno != EEXIST)
		err = -errno;
	else if (access(dir, W_OK))
		err = -errno;
	if (err)
		log_err("state file %s: its directory %s: %s", path, dir,
			strerror(-err));
	free(copy);
	return err;
}

static int fsync_dir(const char *path)
{
	char *copy = strdup(path);
	int fd, err = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd))
		err = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return err;
}

int state_file_write(const char *path, uint64_t valid_until_ms)
{
	char tmp[4096], buf[64];
	int fd, len, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	len = snprintf(buf, sizeof(buf), "valid_until_ms %" PRIu64 "\n",
		       valid_until_ms);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	errno = 0;
	if (write(fd, buf, len) != len)
		err = errno ? -errno : -EIO;
	else if (fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (!err)
		err = fsync_dir(path);
out:
	if (err) {
		log_err("state file %s: cannot store valid_until ms %" PRIu64 ": %s",
			path, valid_until_ms, strerror(-err));
		unlink(tmp);
	}
	return err;
}

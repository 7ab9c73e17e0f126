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
#include <sys/types.h>
#include <unistd.h>

#include "decimal.h"
#include "log.h"
#include "state_file.h"

/* Longer than anything state_file_write() writes: not a state file. */
#define STATE_TEXT_MAX	64

_Static_assert(STATE_FILE_MS_MAX == 2199023255551ULL,
	       "the message below names the bound");

int state_file_parse(const char *text, size_t len, uint64_t *valid_until_ms,
		     const char **why)
{
	const size_t plen = strlen(STATE_FILE_KEY);
	const char *nl;
	int err;

	if (!len) {
		*why = "it is empty (a write that never completed?)";
		return -EBADMSG;
	}
	if (len < plen || memcmp(text, STATE_FILE_KEY, plen)) {
		*why = "it does not start with '" STATE_FILE_KEY "'";
		return -EBADMSG;
	}
	nl = memchr(text + plen, '\n', len - plen);
	if (!nl) {
		*why = "its line has no newline: the file is truncated";
		return -EBADMSG;
	}
	if ((size_t)(nl - text) + 1 != len) {
		*why = "there is more after its one line";
		return -EBADMSG;
	}
	err = idgen_decimal(text + plen, nl - (text + plen), 0, STATE_FILE_MS_MAX,
			    valid_until_ms);
	if (err == -ERANGE) {
		*why = "the number is beyond the 41 bits of the IDs' time "
		       "field (2199023255551 at most)";
		return -EBADMSG;
	}
	if (err) {
		*why = "the value is not a decimal number (digits only)";
		return -EBADMSG;
	}
	return 0;
}

int state_file_read(const char *path, uint64_t *valid_until_ms)
{
	char text[STATE_TEXT_MAX + 1];
	const char *why;
	ssize_t n;
	size_t len = 0;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err != -ENOENT)
			log_err("state file %s: %s", path, strerror(-err));
		return err;
	}
	/* One byte more than a state file holds tells a longer file apart. */
	while (len < sizeof(text)) {
		n = read(fd, text + len, sizeof(text) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			close(fd);
			log_err("state file %s: %s", path, strerror(-err));
			return err;
		}
		if (!n)
			break;
		len += n;
	}
	close(fd);
	if (len > STATE_TEXT_MAX) {
		why = "it is longer than a state file";
		err = -EBADMSG;
	} else {
		err = state_file_parse(text, len, valid_until_ms, &why);
	}
	if (err)
		log_err("state file %s is not what idgend writes ('"
			STATE_FILE_KEY "<ms>' and a newline): %s.  It must hold "
			"the highest millisecond ever fenced, and idgend will not "
			"guess it: restore the file, or see idgend(8), STATE FILE",
			path, why);
	return err;
}

/* Make the entry of path in its directory durable. */
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

/* 0 when made now, -EEXIST when it was there, or another -errno. */
static int make_dir(const char *dir)
{
	if (mkdir(dir, 0755))
		return -errno;
	return 0;
}

int state_file_prepare(const char *path, bool *created)
{
	char *copy = strdup(path);
	const char *dir;
	int err = 0;

	*created = false;
	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	/*
	 * A directory made now must last: lost in a crash after the first
	 * push, it would make the next start a first start.
	 */
	err = make_dir(dir);
	if (err == -ENOENT) {
		/*
		 * The default's parent, /var/lib/idgen, is systemd's
		 * StateDirectory=; run by hand on a new host it may be
		 * missing too.  One level more, no further: a deeper missing
		 * path is more likely a typo than a new host.
		 */
		char *parent = strdup(dir);

		err = parent ? make_dir(dirname(parent)) : -ENOMEM;
		if (!err)
			err = fsync_dir(parent);
		free(parent);
		if (!err || err == -EEXIST)
			err = make_dir(dir);
	}
	if (!err) {
		*created = true;
		err = fsync_dir(dir);
	} else if (err == -EEXIST) {
		err = 0;
	}
	if (!err && access(dir, W_OK))
		err = -errno;
	if (err)
		log_err("state file %s: its directory %s: %s", path, dir,
			strerror(-err));
	free(copy);
	return err;
}

int state_file_write(const char *path, uint64_t valid_until_ms)
{
	char tmp[4096], buf[64];
	int fd, len, err = 0;

	if (valid_until_ms > STATE_FILE_MS_MAX) {
		log_err("state file %s: ms %" PRIu64 " is beyond the IDs' time "
			"field", path, valid_until_ms);
		return -ERANGE;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	len = snprintf(buf, sizeof(buf), STATE_FILE_KEY "%" PRIu64 "\n",
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

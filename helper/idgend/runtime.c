// SPDX-License-Identifier: GPL-2.0
/*
 * The runtime directory: the lock and the owner token (runtime.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "runtime.h"

#define LOCK_NAME	"idgend.lock"
#define TOKEN_NAME	"owner-token"

static char *path_in(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

/* The pid the lock holder wrote, or 0. */
static long holder_pid(int fd)
{
	char buf[24];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *end;
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	return end != buf && *end == '\n' && pid > 0 ? pid : 0;
}

int runtime_lock(const char *dir)
{
	char *path = path_in(dir, LOCK_NAME), pid[24];
	int fd, err, n;

	if (!path)
		return -ENOMEM;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		err = -errno;
		log_err("cannot make the runtime directory %s: %s", dir,
			strerror(-err));
		goto out;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		err = -errno;
		log_err("cannot open %s: %s", path, strerror(-err));
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		if (err == -EWOULDBLOCK) {
			long other = holder_pid(fd);

			if (other)
				log_err("another idgend (pid %ld) runs with the runtime "
					"directory %s: one idgend per host", other, dir);
			else
				log_err("another idgend runs with the runtime directory "
					"%s (%s is locked): one idgend per host", dir,
					path);
		} else {
			log_err("cannot lock %s: %s", path, strerror(-err));
		}
		close(fd);
		goto out;
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, pid, n, 0) != n)
		log_warn("cannot write this pid to %s: %s", path, strerror(errno));
	free(path);
	return fd;
out:
	free(path);
	return err;
}

static bool is_token(const char *s, size_t len)
{
	size_t i;

	if (len != RUNTIME_TOKEN_LEN + 1 || s[RUNTIME_TOKEN_LEN] != '\n')
		return false;
	for (i = 0; i < RUNTIME_TOKEN_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* 0 and the token, -ENOENT, -EBADMSG (logged) or another error (logged). */
static int read_token(const char *path, char *token)
{
	char buf[RUNTIME_TOKEN_LEN + 2];
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		err = -errno;
		if (err != -ENOENT)
			log_err("cannot read %s: %s", path, strerror(-err));
		return err;
	}
	n = read(fd, buf, sizeof(buf));
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err) {
		log_err("cannot read %s: %s", path, strerror(-err));
		return err;
	}
	if (!is_token(buf, n)) {
		log_err("%s is not an owner token (32 lowercase hex digits and a "
			"newline); refusing to guess. Remove it while no idgend "
			"runs: the next start makes a new one, and a lease the "
			"generator holds is then revoked and claimed anew", path);
		return -EBADMSG;
	}
	memcpy(token, buf, RUNTIME_TOKEN_LEN);
	token[RUNTIME_TOKEN_LEN] = '\0';
	return 0;
}

/* Written in full and synced under another name, then linked: never half. */
static int make_token(const char *dir, const char *path, char *token)
{
	unsigned char rnd[RUNTIME_TOKEN_LEN / 2];
	char *tmp = path_in(dir, TOKEN_NAME ".new"), buf[RUNTIME_TOKEN_LEN + 1];
	int fd, dfd, err = 0;
	size_t i;

	if (!tmp)
		return -ENOMEM;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		err = -errno;
		log_err("getrandom: %s", strerror(-err));
		goto out;
	}
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(buf + 2 * i, 3, "%02x", rnd[i]);
	buf[RUNTIME_TOKEN_LEN] = '\n';
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
	    fsync(fd)) {
		err = -errno;
		log_err("cannot write %s: %s", tmp, strerror(-err));
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (link(tmp, path)) {
		err = -errno;
		log_err("cannot make %s: %s", path, strerror(-err));
		unlink(tmp);
		goto out;
	}
	unlink(tmp);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	memcpy(token, buf, RUNTIME_TOKEN_LEN);
	token[RUNTIME_TOKEN_LEN] = '\0';
	log_info("made this host's owner token for this boot, %s", path);
out:
	free(tmp);
	return err;
}

int runtime_token(const char *dir, char token[RUNTIME_TOKEN_LEN + 1])
{
	char *path = path_in(dir, TOKEN_NAME);
	int err;

	if (!path)
		return -ENOMEM;
	err = read_token(path, token);
	if (err == -ENOENT)
		err = make_token(dir, path, token);
	free(path);
	return err;
}

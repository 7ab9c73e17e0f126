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

static bool is_hex(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* 8-4-4-4-12 lowercase hex digits, as the kernel writes a boot id. */
static bool is_boot_id(const char *s)
{
	return is_hex(s, 8) && s[8] == '-' && is_hex(s + 9, 4) && s[13] == '-' &&
		is_hex(s + 14, 4) && s[18] == '-' && is_hex(s + 19, 4) &&
		s[23] == '-' && is_hex(s + 24, 12);
}

int runtime_boot_id(char boot_id[RUNTIME_BOOT_ID_LEN + 1])
{
	static const char path[] = "/proc/sys/kernel/random/boot_id";
	char buf[RUNTIME_BOOT_ID_LEN + 2];
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		log_err("cannot read this boot's id, %s: %s", path, strerror(-err));
		return err;
	}
	n = read(fd, buf, sizeof(buf));
	err = n < 0 ? -errno : 0;
	close(fd);
	if (!err && (n != RUNTIME_BOOT_ID_LEN + 1 || buf[RUNTIME_BOOT_ID_LEN] != '\n' ||
		     !is_boot_id(buf)))
		err = -EBADMSG;
	if (err) {
		log_err("cannot read this boot's id, %s: %s", path,
			err == -EBADMSG ? "not a boot id" : strerror(-err));
		return err;
	}
	memcpy(boot_id, buf, RUNTIME_BOOT_ID_LEN);
	boot_id[RUNTIME_BOOT_ID_LEN] = '\0';
	return 0;
}

/*
 * The file's forms: the token and the boot id, each on a line of its own
 * (FILE_LEN bytes), or the token alone (OLD_LEN: an idgend that did not
 * write the boot id).
 */
#define FILE_LEN	(RUNTIME_TOKEN_LEN + 1 + RUNTIME_BOOT_ID_LEN + 1)
#define OLD_LEN		(RUNTIME_TOKEN_LEN + 1)

/*
 * 0 and the token, when the file holds one made in this boot; -ESTALE
 * (logged) when it was made in another boot or does not say; -ENOENT;
 * -EBADMSG (logged) or another error (logged).
 */
static int read_token(const char *path, const char *boot_id, char *token)
{
	char buf[FILE_LEN + 1];
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
	if (n >= OLD_LEN && is_hex(buf, RUNTIME_TOKEN_LEN) &&
	    buf[RUNTIME_TOKEN_LEN] == '\n') {
		if (n == OLD_LEN) {
			log_notice("%s names no boot (an older idgend made it): "
				   "making a new owner token for this boot", path);
			return -ESTALE;
		}
		if (n == FILE_LEN && is_boot_id(buf + OLD_LEN) &&
		    buf[FILE_LEN - 1] == '\n') {
			if (!memcmp(buf + OLD_LEN, boot_id, RUNTIME_BOOT_ID_LEN)) {
				memcpy(token, buf, RUNTIME_TOKEN_LEN);
				token[RUNTIME_TOKEN_LEN] = '\0';
				return 0;
			}
			log_notice("%s was made in another boot (boot id %.*s; this "
				   "one is %s): a runtime directory that outlived "
				   "its boot, or one copied from another host. "
				   "Making a new owner token for this boot", path,
				   RUNTIME_BOOT_ID_LEN, buf + OLD_LEN, boot_id);
			return -ESTALE;
		}
	}
	log_err("%s is not an owner token (32 lowercase hex digits and a "
		"newline, then the boot id and a newline); refusing to guess. "
		"Remove it while no idgend runs: the next start makes a new one, "
		"and a lease the generator holds is then revoked and claimed "
		"anew", path);
	return -EBADMSG;
}

/*
 * Written in full and synced under another name, then renamed over the
 * file: never half.  The runtime directory's lock is held.
 */
static int make_token(const char *dir, const char *path, const char *boot_id,
		      char *token)
{
	unsigned char rnd[RUNTIME_TOKEN_LEN / 2];
	char *tmp = path_in(dir, TOKEN_NAME ".new"), buf[FILE_LEN + 1];
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
	snprintf(buf + RUNTIME_TOKEN_LEN, sizeof(buf) - RUNTIME_TOKEN_LEN,
		 "\n%.*s\n", RUNTIME_BOOT_ID_LEN, boot_id);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, buf, FILE_LEN) != FILE_LEN || fsync(fd)) {
		err = -errno;
		log_err("cannot write %s: %s", tmp, strerror(-err));
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (rename(tmp, path)) {
		err = -errno;
		log_err("cannot make %s: %s", path, strerror(-err));
		unlink(tmp);
		goto out;
	}
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

int runtime_token(const char *dir, const char *boot_id,
		  char token[RUNTIME_TOKEN_LEN + 1])
{
	char *path = path_in(dir, TOKEN_NAME);
	int err;

	if (!path)
		return -ENOMEM;
	if (strlen(boot_id) != RUNTIME_BOOT_ID_LEN || !is_boot_id(boot_id)) {
		log_err("'%s' is not a boot id", boot_id);
		free(path);
		return -EINVAL;
	}
	err = read_token(path, boot_id, token);
	if (err == -ENOENT || err == -ESTALE)
		err = make_token(dir, path, boot_id, token);
	free(path);
	return err;
}

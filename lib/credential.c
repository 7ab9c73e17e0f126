// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A secret file systemd handed the service, a secret file at all, and
 * where a bare name points (credential.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* asprintf() */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credential.h"
#include "errf.h"

char *idgen_credential_path(const char *name)
{
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	char *path;

	if (strchr(name, '/') || !dir || !*dir)
		return strdup(name);
	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return NULL;
	return path;
}

bool idgen_systemd_credential(const char *path, const struct stat *st)
{
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	struct stat dst, pst;
	char *real, *slash;
	bool ok = false;

	if ((st->st_mode & 077) != S_IRGRP || st->st_gid != getegid() ||
	    !dir || dir[0] != '/' || stat(dir, &dst) || !S_ISDIR(dst.st_mode) ||
	    (dst.st_uid != geteuid() && dst.st_uid != 0) ||
	    (dst.st_mode & (S_IWUSR | S_IWGRP | S_IRWXO)))
		return false;
	real = realpath(path, NULL);
	if (!real)
		return false;
	slash = strrchr(real, '/');
	if (slash) {
		*(slash == real ? slash + 1 : slash) = '\0';
		ok = !stat(real, &pst) && pst.st_dev == dst.st_dev &&
		     pst.st_ino == dst.st_ino;
	}
	free(real);
	return ok;
}

int idgen_secret_file_fault(const char *path, const struct stat *st, char *err,
			    size_t errlen)
{
	unsigned int mode = st->st_mode & 07777;

	if (st->st_uid != geteuid() && st->st_uid != 0) {
		idgen_errf(err, errlen, "%s: owned by uid %u, neither this user (uid %u) "
			   "nor root", path, (unsigned int)st->st_uid,
			   (unsigned int)geteuid());
		return -1;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		idgen_errf(err, errlen, "%s: writable by group or others (mode %04o): "
			   "it must be mode 0600 (chmod 600 %s)", path, mode, path);
		return -1;
	}
	if (st->st_mode & (S_IRGRP | S_IROTH) && !idgen_systemd_credential(path, st)) {
		idgen_errf(err, errlen, "%s: readable by group or others (mode %04o): "
			   "it must be mode 0600 (chmod 600 %s)", path, mode, path);
		return -1;
	}
	return 0;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A secret file systemd handed the service (credential.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credential.h"

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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one rule for a secret file that systemd handed the service as a
 * credential (LoadCredential=): libidgen's public-ID key files
 * (idgen_keyring_load()) and idgend's key and password files
 * (helper/idgend/etcd_creds.c) both take a group-readable file only so;
 * the programs' one rule for a secret file, with its messages; and where
 * a bare name in their configuration points.
 * Not part of the library's ABI: built with hidden visibility into
 * libidgen.a, which idgend links.
 */
#ifndef LIBIDGEN_CREDENTIAL_H
#define LIBIDGEN_CREDENTIAL_H

#include <stdbool.h>
#include <sys/stat.h>

/*
 * The path of a file the configuration names: a bare name (no '/') is a
 * systemd credential, $CREDENTIALS_DIRECTORY/NAME (LoadCredential=
 * NAME:/etc/idgen/NAME in the unit), when systemd gave the service any;
 * every other name is the path as it is.  malloc()ed (free() it); NULL
 * when out of memory.
 */
char *idgen_credential_path(const char *name);

/*
 * Whether path, whose stat(2) is *st and which is group-readable, is a
 * credential as systemd lays them out: a file directly in
 * $CREDENTIALS_DIRECTORY, of this process's group (systemd's 0440 for
 * the service's user and group, which DynamicUser= makes its own), and
 * that directory of this user or root, writable by nobody and closed to
 * others (0500 or 0550).  No one but the service reads it there, so it is
 * as private as a 0600 file elsewhere; outside it, 0440 is refused.
 */
bool idgen_systemd_credential(const char *path, const struct stat *st);

/*
 * Whether path (stat(2) *st) may hold a secret (a private key, a
 * password): whoever else could read it has the secret, and whoever else
 * could write it could plant their own, so only this user or root owns
 * it and only the owner reads and writes it, but for a systemd credential
 * (idgen_systemd_credential()).  0, or -1 with err (when not NULL) saying
 * "PATH: what is wrong" and the chmod that mends it.
 */
int idgen_secret_file_fault(const char *path, const struct stat *st, char *err,
			    size_t errlen);

#endif /* LIBIDGEN_CREDENTIAL_H */

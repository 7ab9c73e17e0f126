/* SPDX-License-Identifier: GPL-2.0 */
/*
 * idgend's runtime directory (runtime_dir, /run/idgen under systemd's
 * RuntimeDirectory=): it lives exactly one boot of one host, like the
 * module's lease, and is never part of a disk image.
 *
 *   idgend.lock   flock()ed by the running idgend: one per host
 *   owner-token   this host's owner token for the boot: 32 hex digits and
 *                 a newline, then the boot id it was made in
 *                 (/proc/sys/kernel/random/boot_id) and a newline; made
 *                 from getrandom() and kept across idgend restarts of that
 *                 boot, so a restarted idgend takes back the lease it holds
 *                 and never another host's (R1, Documentation/design.md section
 *                 7.1).  A file made in another boot (a runtime directory
 *                 on persistent storage, a container image that has one)
 *                 is replaced by a new token: no two boots, and so no two
 *                 hosts started from one copy, share a token.
 */
#ifndef IDGEND_RUNTIME_H
#define IDGEND_RUNTIME_H

#define RUNTIME_TOKEN_LEN	32	/* hex digits: 128 bits */
#define RUNTIME_BOOT_ID_LEN	36	/* a UUID: 8-4-4-4-12 hex digits */

/*
 * Create dir if it is missing (one level, mode 0755) and lock it for this
 * process's lifetime.  Returns the lock's fd (keep it open), or a negative
 * errno after a log line: -EWOULDBLOCK when another idgend holds it.
 */
int runtime_lock(const char *dir);

/*
 * This boot's id, from /proc/sys/kernel/random/boot_id (NUL-terminated).
 * 0, or a negative errno (logged).
 */
int runtime_boot_id(char boot_id[RUNTIME_BOOT_ID_LEN + 1]);

/*
 * Read dir/owner-token, or make it if there is none, or if it was made in
 * another boot than boot_id (or by an idgend that did not write the boot
 * id).  0 with token filled (NUL-terminated), -EBADMSG for a file not in
 * the exact format (logged: a configuration error), or another negative
 * errno (logged).
 */
int runtime_token(const char *dir, const char *boot_id,
		  char token[RUNTIME_TOKEN_LEN + 1]);

#endif /* IDGEND_RUNTIME_H */

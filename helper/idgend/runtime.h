/* SPDX-License-Identifier: GPL-2.0 */
/*
 * idgend's runtime directory (runtime_dir, /run/idgen under systemd's
 * RuntimeDirectory=): it lives exactly one boot of one host, like the
 * module's lease, and is never part of a disk image.
 *
 *   idgend.lock   flock()ed by the running idgend: one per host
 *   owner-token   this host's owner token for the boot: 32 hex digits and
 *                 a newline, made once from getrandom() and kept across
 *                 idgend restarts, so a restarted idgend takes back the
 *                 lease it holds and never another host's (lease.c, R1)
 */
#ifndef IDGEND_RUNTIME_H
#define IDGEND_RUNTIME_H

#define RUNTIME_TOKEN_LEN	32	/* hex digits: 128 bits */

/*
 * Create dir if it is missing (one level, mode 0755) and lock it for this
 * process's lifetime.  Returns the lock's fd (keep it open), or a negative
 * errno after a log line: -EWOULDBLOCK when another idgend holds it.
 */
int runtime_lock(const char *dir);

/*
 * Read dir/owner-token, or make it if there is none.  0 with token filled
 * (NUL-terminated), -EBADMSG for a file not in the exact format (logged:
 * a configuration error), or another negative errno (logged).
 */
int runtime_token(const char *dir, char token[RUNTIME_TOKEN_LEN + 1]);

#endif /* IDGEND_RUNTIME_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Standalone mode's memory: the highest valid_until ever pushed (or the
 * last ms a clean stop returned), so that after a reboot or a module
 * reload the generator starts above every millisecond ever used.
 *
 * The file holds one line, "valid_until_ms <N>".  It is replaced
 * atomically (a temporary file, fsync, rename, fsync of the directory)
 * before every push, so it never holds less than the generator may mint.
 */
#ifndef IDGEND_STATE_FILE_H
#define IDGEND_STATE_FILE_H

#include <stdint.h>

/*
 * At start: create the file's directory if it is missing (one level, as
 * /var/lib/idgen), and fail early, with a log line, if it is not writable.
 */
int state_file_prepare(const char *path);

/*
 * 0 and *valid_until_ms (0 if the file does not exist yet), or a negative
 * errno: -EBADMSG for a file that is not a state file (logged, with the
 * line), which the daemon refuses to guess past.
 */
int state_file_read(const char *path, uint64_t *valid_until_ms);

/* 0 once the value is durable, or a negative errno (logged). */
int state_file_write(const char *path, uint64_t valid_until_ms);

#endif /* IDGEND_STATE_FILE_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Standalone mode's memory: the highest valid_until ever pushed (or the
 * last ms a clean stop returned), so that after a reboot or a module
 * reload the generator starts above every millisecond ever used.
 *
 * The file holds one line, "valid_until_ms <N>" and a newline, exactly as
 * state_file_write() writes it: N canonical decimal, at most
 * STATE_FILE_MS_MAX.  It is replaced atomically (a temporary file, fsync,
 * rename, fsync of the directory) before every push, so it never holds
 * less than the generator may mint.  Anything else (truncated, trailing
 * bytes, a NUL, a number beyond the time field) is refused, never guessed
 * past: the floor it gives is what keeps IDs unique.
 */
#ifndef IDGEND_STATE_FILE_H
#define IDGEND_STATE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/idgen.h>

#define STATE_FILE_KEY		"valid_until_ms "
/* The last ms of the IDs' 41-bit time field, whatever the layout. */
#define STATE_FILE_MS_MAX	IDGEN_MS_MAX

/*
 * At start: create the file's directory if it is missing (one level, as
 * /var/lib/idgen), and fail early, with a log line, if it is not writable.
 * *created says whether the directory was made now: a missing file in a
 * directory that already existed is not a first start.
 */
int state_file_prepare(const char *path, bool *created);

/*
 * 0 and *valid_until_ms, -ENOENT (not logged) when the file does not
 * exist, -EBADMSG for a file that is not exactly a state file (logged,
 * saying what is wrong), or another negative errno (logged).
 */
int state_file_read(const char *path, uint64_t *valid_until_ms);

/*
 * The check state_file_read() makes on the len bytes of a file: 0 and
 * *valid_until_ms, or -EBADMSG and *why, a phrase saying what is wrong.
 */
int state_file_parse(const char *text, size_t len, uint64_t *valid_until_ms,
		     const char **why);

/* 0 once the value is durable, or a negative errno (logged). */
int state_file_write(const char *path, uint64_t valid_until_ms);

#endif /* IDGEND_STATE_FILE_H */

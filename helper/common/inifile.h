/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The INI dialect of idgen's configuration files (idgend.conf,
 * idgen-httpd.conf), read from memory, with no limit on a
 * line's length (a realistic endpoints line is longer than inih's 200
 * bytes, and a truncated line must never pass for a shorter one):
 *
 *   [section]            then "key = value" lines, trimmed of blanks
 *   ; or # at the start  a comment line
 *   value ; comment      ';' after a blank ends the value
 *   an indented line     continues the previous key's value (joined with
 *                        one space), as in Python's configparser
 *
 * A UTF-8 byte-order mark and CRLF line ends are accepted.  A NUL or any
 * other control character but tab, a line that is neither of the above,
 * and a section header with text after its ']' are errors.
 */
#ifndef COMMON_INIFILE_H
#define COMMON_INIFILE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Called for each section header (key and value NULL) and for each key,
 * once its continuation lines are read (continued tells there were some);
 * line is the header's or the key's line.  Returns 0, or non-zero to stop
 * after writing why into err.
 */
typedef int (*inifile_fn)(void *ctx, unsigned int line, const char *section,
			  const char *key, const char *value, bool continued,
			  char *err, size_t errlen);

/*
 * Parse len bytes.  0 when every line is well-formed and fn returned 0
 * each time; else the number of the line at fault (of a key's first line
 * when fn refused it), with err saying what is wrong.  -1 if out of
 * memory.
 */
int inifile_parse(const char *text, size_t len, inifile_fn fn, void *ctx,
		  char *err, size_t errlen);

/* The longest configuration file read: far beyond any real one. */
#define INIFILE_MAX	(1 << 20)

/*
 * The file at path, whole and NUL-terminated, into *text (malloc'ed) and
 * *len: 0, or -1 after a line on stderr, prefixed "prog: ", saying why.
 * Only a regular file of at most INIFILE_MAX bytes is a configuration (a
 * directory would read as empty).
 */
int inifile_read(const char *prog, const char *path, char **text, size_t *len);

/*
 * Whether the command-line flag's name (len bytes, after "--") names the
 * file's key: "lease-ms" names "lease_ms".
 */
bool inifile_flag_names(const char *flag, size_t len, const char *key);

#endif /* COMMON_INIFILE_H */

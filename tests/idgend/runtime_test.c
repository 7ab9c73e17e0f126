// SPDX-License-Identifier: GPL-2.0
/*
 * idgend's runtime directory (helper/idgend/runtime.c): the owner token is
 * made once and read back exactly, anything else in its file is refused,
 * and the lock admits one idgend.  TAP.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime.h"

static int tests, failures;
static FILE *log_file;

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	tests++;
	if (!ok)
		failures++;
	printf("%sok %d - ", ok ? "" : "not ", tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static bool logged(const char *needle)
{
	char line[1024];
	bool found = false;

	fflush(stderr);
	rewind(log_file);
	while (!found && fgets(line, sizeof(line), log_file))
		found = strstr(line, needle) != NULL;
	return found;
}

static void put(const char *path, const char *s, size_t len)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fwrite(s, 1, len, f);
		fclose(f);
	}
}

int main(void)
{
	char dir[] = "/tmp/idgend-runtime-test.XXXXXX", sub[256], path[300];
	char log_path[] = "/tmp/idgend-runtime-log.XXXXXX", msg[64];
	char tok[RUNTIME_TOKEN_LEN + 1], tok2[RUNTIME_TOKEN_LEN + 1];
	static const char *const bad[] = {
		"0123456789abcdef0123456789abcde\n",		/* 31 digits */
		"0123456789ABCDEF0123456789abcdef\n",		/* upper case */
		"0123456789abcdef0123456789abcdef",		/* no newline */
		"0123456789abcdef0123456789abcdef\nx",		/* trailing */
		"0123456789abcdef0123456789abcdeg\n",		/* not hex */
		"",
	};
	struct stat st;
	int fd, fd2, err, lfd;
	size_t i;
	bool all;

	printf("TAP version 13\n");
	lfd = mkstemp(log_path);
	if (!mkdtemp(dir) || lfd < 0 || !freopen(log_path, "w", stderr))
		return 1;
	close(lfd);
	log_file = fopen(log_path, "r");
	unlink(log_path);
	snprintf(sub, sizeof(sub), "%s/run", dir);
	snprintf(path, sizeof(path), "%s/owner-token", sub);

	fd = runtime_lock(sub);
	check(fd >= 0 && !stat(sub, &st) && S_ISDIR(st.st_mode),
	      "lock: makes the missing directory and locks it");
	fd2 = runtime_lock(sub);
	snprintf(msg, sizeof(msg), "another idgend (pid %d)", (int)getpid());
	check(fd2 == -EWOULDBLOCK && logged(msg),
	      "lock: a second idgend is refused, naming the first one's pid");

	err = runtime_token(sub, tok);
	check(!err && strlen(tok) == RUNTIME_TOKEN_LEN &&
	      strspn(tok, "0123456789abcdef") == RUNTIME_TOKEN_LEN,
	      "token: made from 128 random bits, 32 hex digits (%d)", err);
	check(!stat(path, &st) && st.st_size == RUNTIME_TOKEN_LEN + 1 &&
	      (st.st_mode & 0777) == 0600,
	      "token: the file holds it and a newline, mode 0600");
	err = runtime_token(sub, tok2);
	check(!err && !strcmp(tok, tok2), "token: read back the same (a restart)");
	unlink(path);
	err = runtime_token(sub, tok2);
	check(!err && strcmp(tok, tok2), "token: a new directory (a boot) makes "
	      "another one");

	all = true;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(path, bad[i], strlen(bad[i]));
		all &= runtime_token(sub, tok2) == -EBADMSG;
	}
	check(all, "token: a short, upper-case, unterminated, trailing, non-hex "
	      "or empty file is refused");
	check(logged("is not an owner token"), "token: ... with a clear message");

	close(fd);
	fd2 = runtime_lock(sub);
	check(fd2 >= 0, "lock: free again once the holder is gone");
	close(fd2);
	unlink(path);
	snprintf(path, sizeof(path), "%s/idgend.lock", sub);
	unlink(path);
	rmdir(sub);
	rmdir(dir);
	printf("1..%d\n", tests);
	return failures ? 1 : 0;
}

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
#include "tap.h"

static FILE *log_file;


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

#define BOOT		"8e92c4e6-335a-41be-a9b0-37f6b65b9792"
#define OTHER_BOOT	"0b5e1c2d-9a7f-4e3b-8c6d-2f1e0a9b8c7d"

/* Whether the file holds exactly want. */
static bool file_is(const char *path, const char *want)
{
	char buf[256];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return n == strlen(want) && !memcmp(buf, want, n);
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
	char boot[RUNTIME_BOOT_ID_LEN + 1], want[128];
	static const char *const bad[] = {
		"0123456789abcdef0123456789abcde\n",		/* 31 digits */
		"0123456789ABCDEF0123456789abcdef\n",		/* upper case */
		"0123456789abcdef0123456789abcdef",		/* no newline */
		"0123456789abcdef0123456789abcdef\nx",		/* trailing */
		"0123456789abcdef0123456789abcdeg\n",		/* not hex */
		"",
		"0123456789abcdef0123456789abcdef\n" BOOT,	/* unterminated */
		"0123456789abcdef0123456789abcdef\n" BOOT "\n\n",
		"0123456789abcdef0123456789abcdef\n"
		"8E92C4E6-335A-41BE-A9B0-37F6B65B9792\n",	/* upper case */
		"0123456789abcdef0123456789abcdef\n"
		"8e92c4e6-335a-41be-a9b0+37f6b65b9792\n",	/* not a UUID */
		"0123456789abcdef0123456789abcdef "
		"8e92c4e6-335a-41be-a9b0-37f6b65b9792\n",	/* one line */
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

	err = runtime_token(sub, BOOT, tok);
	check(!err && strlen(tok) == RUNTIME_TOKEN_LEN &&
	      strspn(tok, "0123456789abcdef") == RUNTIME_TOKEN_LEN,
	      "token: made from 128 random bits, 32 hex digits (%d)", err);
	snprintf(want, sizeof(want), "%s\n%s\n", tok, BOOT);
	check(!stat(path, &st) && (st.st_mode & 0777) == 0600 &&
	      file_is(path, want),
	      "token: the file holds it and the boot id, each on a line, mode 0600");
	err = runtime_token(sub, BOOT, tok2);
	check(!err && !strcmp(tok, tok2), "token: read back the same (a restart "
	      "in the same boot)");
	err = runtime_token(sub, OTHER_BOOT, tok2);
	snprintf(want, sizeof(want), "%s\n%s\n", tok2, OTHER_BOOT);
	check(!err && strcmp(tok, tok2) && file_is(path, want),
	      "token: a file made in another boot (a runtime directory that "
	      "outlived it, or copied) gets a new token for this boot");
	check(logged("was made in another boot"), "token: ... and says so");
	put(path, "0123456789abcdef0123456789abcdef\n", 33);
	err = runtime_token(sub, BOOT, tok2);
	snprintf(want, sizeof(want), "%s\n%s\n", tok2, BOOT);
	check(!err && strcmp(tok2, "0123456789abcdef0123456789abcdef") &&
	      file_is(path, want),
	      "token: a file without the boot id (an older idgend) gets a new "
	      "token for this boot");
	strcpy(tok, tok2);
	unlink(path);
	err = runtime_token(sub, BOOT, tok2);
	check(!err && strcmp(tok, tok2), "token: a new directory (a boot) makes "
	      "another one");

	all = true;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(path, bad[i], strlen(bad[i]));
		all &= runtime_token(sub, BOOT, tok2) == -EBADMSG;
	}
	check(all, "token: a short, upper-case, unterminated, trailing, non-hex "
	      "or empty file, or a bad boot id line, is refused");
	check(logged("is not an owner token"), "token: ... with a clear message");
	check(!runtime_boot_id(boot) && strlen(boot) == RUNTIME_BOOT_ID_LEN,
	      "boot id: read from /proc, 36 characters");
	check(runtime_token(sub, "not-a-boot-id", tok2) == -EINVAL,
	      "token: refuses a boot id that is not one");

	close(fd);
	fd2 = runtime_lock(sub);
	check(fd2 >= 0, "lock: free again once the holder is gone");
	close(fd2);
	unlink(path);
	snprintf(path, sizeof(path), "%s/idgend.lock", sub);
	unlink(path);
	rmdir(sub);
	rmdir(dir);
	return tap_done();
}

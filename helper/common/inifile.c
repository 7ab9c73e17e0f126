// SPDX-License-Identifier: GPL-2.0
/*
 * The INI dialect of idgend.conf and idgen-httpd.conf (inifile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inifile.h"

struct parser {
	inifile_fn fn;
	void *ctx;
	char *err;
	size_t errlen;
	char *section;		/* NULL before the first header */
	char *key;		/* the key whose value is being read */
	char *value;		/* malloc'ed, grown by continuation lines */
	size_t value_len;
	unsigned int key_line;
	bool continued;
};

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* [*s, *e) without leading and trailing blanks. */
static void trim(const char **s, const char **e)
{
	while (*s < *e && blank(**s))
		(*s)++;
	while (*e > *s && blank((*e)[-1]))
		(*e)--;
}

/*
 * The end of a value: the first ';' that follows a blank or opens the
 * value.  "key =;x" is an empty value with a comment, as "key = ;x" is:
 * otherwise the value ";x" would print (--check-config) as something
 * that reads back as a comment.
 */
static const char *value_end(const char *s, const char *e)
{
	const char *p;

	for (p = s; p < e; p++)
		if (*p == ';' && (p == s || blank(p[-1])))
			return p;
	return e;
}

static char *dup_range(const char *s, const char *e)
{
	char *d = malloc(e - s + 1);

	if (d) {
		memcpy(d, s, e - s);
		d[e - s] = '\0';
	}
	return d;
}

/* Hand the pending key to fn.  0, or -1 (err set by fn). */
static int flush(struct parser *p)
{
	int ret = 0;

	if (!p->key)
		return 0;
	if (p->fn(p->ctx, p->key_line, p->section, p->key, p->value,
		  p->continued, p->err, p->errlen))
		ret = -1;
	free(p->key);
	free(p->value);
	p->key = NULL;
	p->value = NULL;
	return ret;
}

static int append(struct parser *p, const char *s, const char *e)
{
	char *v = realloc(p->value, p->value_len + 1 + (e - s) + 1);

	if (!v)
		return -1;
	v[p->value_len] = ' ';
	memcpy(v + p->value_len + 1, s, e - s);
	p->value_len += 1 + (e - s);
	v[p->value_len] = '\0';
	p->value = v;
	p->continued = true;
	return 0;
}

/*
 * One line, [s, e) without its line end: 0; 1 when the line is bad; 2
 * when fn refused the key before it (whose line is p->key_line); -1 when
 * out of memory.
 */
static int line(struct parser *p, const char *s, const char *e,
		unsigned int nr)
{
	bool indented = s < e && blank(*s);
	const char *eq, *k, *ke, *v, *ve;

	trim(&s, &e);
	if (s == e)
		return flush(p) ? 2 : 0;	/* a blank line ends a value */
	if (*s == ';' || *s == '#')
		return 0;
	if (indented && p->key) {
		e = value_end(s, e);
		trim(&s, &e);
		return append(p, s, e);
	}
	if (flush(p))
		return 2;
	if (*s == '[') {
		const char *close = memchr(s, ']', e - s), *rest;

		if (!close) {
			snprintf(p->err, p->errlen, "a section header without its ']'");
			return 1;
		}
		rest = close + 1;
		trim(&rest, &e);
		if (rest < e && *rest != ';' && *rest != '#') {
			snprintf(p->err, p->errlen, "text after the section header");
			return 1;
		}
		k = s + 1;
		ke = close;
		trim(&k, &ke);
		free(p->section);
		p->section = dup_range(k, ke);
		if (!p->section)
			return -1;
		if (k == ke) {
			snprintf(p->err, p->errlen, "an empty section name");
			return 1;
		}
		return p->fn(p->ctx, nr, p->section, NULL, NULL, false, p->err,
			     p->errlen) ? 1 : 0;
	}
	eq = memchr(s, '=', e - s);
	if (!eq) {
		snprintf(p->err, p->errlen, "not a 'key = value' line");
		return 1;
	}
	k = s;
	ke = eq;
	trim(&k, &ke);
	if (k == ke) {
		snprintf(p->err, p->errlen, "no key before the '='");
		return 1;
	}
	if (!p->section) {
		snprintf(p->err, p->errlen, "key '%.*s' before any [section]",
			 (int)(ke - k > 64 ? 64 : ke - k), k);
		return 1;
	}
	v = eq + 1;
	ve = value_end(v, e);
	trim(&v, &ve);
	p->key = dup_range(k, ke);
	p->value = dup_range(v, ve);
	if (!p->key || !p->value)
		return -1;
	p->value_len = ve - v;
	p->key_line = nr;
	p->continued = false;
	return 0;
}

int inifile_parse(const char *text, size_t len, inifile_fn fn, void *ctx,
		  char *err, size_t errlen)
{
	struct parser p = {
		.fn = fn, .ctx = ctx, .err = err, .errlen = errlen,
	};
	const char *s = text, *end = text + len;
	unsigned int nr = 0;
	int ret = 0;

	err[0] = '\0';
	if (len >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
		s += 3;
	while (s < end && !ret) {
		const char *nl = memchr(s, '\n', end - s), *e, *c;

		e = nl ? nl : end;
		nr++;
		if (e > s && e[-1] == '\r')
			e--;
		for (c = s; c < e; c++) {
			unsigned char b = *c;

			if ((b < 0x20 && b != '\t') || b == 0x7f) {
				if (b)
					snprintf(err, errlen, "a control character "
						 "(byte 0x%02x)", b);
				else
					snprintf(err, errlen, "a NUL byte");
				ret = nr;
				break;
			}
		}
		if (ret)
			break;
		switch (line(&p, s, e, nr)) {
		case 0:
			break;
		case 1:
			ret = nr;
			break;
		case 2:
			ret = p.key_line;
			break;
		default:
			ret = -1;
			break;
		}
		s = nl ? nl + 1 : end;
	}
	if (!ret && flush(&p))
		ret = p.key_line;
	free(p.section);
	free(p.key);
	free(p.value);
	return ret;
}

int inifile_read(const char *prog, const char *path, char **text, size_t *len)
{
	struct stat st;
	ssize_t n;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot read %s: %s\n", prog, path,
			strerror(errno));
		return -1;
	}
	if (fstat(fd, &st)) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > INIFILE_MAX) {
		fprintf(stderr, "%s: %s: %s\n", prog, path,
			S_ISDIR(st.st_mode) ? "is a directory, not a configuration file" :
			!S_ISREG(st.st_mode) ? "is not a regular file" :
			"is longer than 1 MiB: not a configuration file");
		close(fd);
		return -1;
	}
	buf = malloc(st.st_size + 1);
	if (!buf) {
		close(fd);
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	*len = 0;
	while (*len < (size_t)st.st_size) {
		n = read(fd, buf + *len, st.st_size - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "%s: cannot read %s: %s\n", prog, path,
				n ? strerror(errno) : "it shrank while being read");
			free(buf);
			close(fd);
			return -1;
		}
		*len += n;
	}
	close(fd);
	buf[*len] = '\0';
	*text = buf;
	return 0;
}

bool inifile_flag_names(const char *flag, size_t len, const char *key)
{
	size_t i;

	if (strlen(key) != len)
		return false;
	for (i = 0; i < len; i++)
		if (flag[i] != (key[i] == '_' ? '-' : key[i]))
			return false;
	return true;
}

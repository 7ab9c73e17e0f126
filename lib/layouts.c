// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Layout tables: version 1 built in, more from a layouts file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decimal.h"
#include "internal.h"

/* Layouts files are short; anything longer is not one. */
#define LAYOUTS_FILE_MAX	(64 * 1024)
#define LAYOUTS_MAX		256

struct idgen_layouts {
	size_t n;
	struct idgen_layout l[];	/* l[0] is version 1 */
};

/* Version 1 alone: the table NULL stands for. */
static const struct idgen_layouts builtin = { 1, { { 1, 0, 3, 7, 12 } } };

#define BUILTIN	(&builtin)

static int fail(char *err, size_t errlen, unsigned int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || !errlen)
		return -EINVAL;
	n = snprintf(err, errlen, "line %u: ", line);
	if (n < 0 || (size_t)n >= errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

IDGEN_EXPORT int idgen_widths_valid(unsigned int r, unsigned int w,
				    unsigned int s)
{
	return r <= LIBIDGEN_REGION_BITS_MAX && s >= LIBIDGEN_SEQ_BITS_MIN &&
	       r + w + s == LIBIDGEN_NODE_SEQ_BITS;
}

IDGEN_EXPORT int idgen_widths_parse(const char *s, struct idgen_layout *out,
				    char *err, size_t errlen)
{
	const char *p = s;
	uint64_t w[3];
	size_t len;
	int i;

	for (i = 0; i < 3; i++) {
		len = strcspn(p, "/");
		if (idgen_decimal(p, len, 0, 255, &w[i]) ||
		    p[len] != (i < 2 ? '/' : '\0')) {
			if (err && errlen)
				snprintf(err, errlen, "'%s' is not region/worker/sequence "
					 "bits such as 3/7/12", s);
			return -EINVAL;
		}
		p += len + (i < 2);
	}
	if (!idgen_widths_valid(w[0], w[1], w[2])) {
		if (err && errlen)
			snprintf(err, errlen, "layout %u/%u/%u: the three must add up "
				 "to %u, with at most %u region bits, at most %u worker "
				 "bits and at least %u sequence bits",
				 (unsigned int)w[0], (unsigned int)w[1], (unsigned int)w[2],
				 LIBIDGEN_NODE_SEQ_BITS, LIBIDGEN_REGION_BITS_MAX,
				 LIBIDGEN_NODE_SEQ_BITS - LIBIDGEN_SEQ_BITS_MIN,
				 LIBIDGEN_SEQ_BITS_MIN);
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	out->region_bits = w[0];
	out->worker_bits = w[1];
	out->seq_bits = w[2];
	return 0;
}

static const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

IDGEN_EXPORT int idgen_layouts_parse(const char *text, struct idgen_layouts **out,
				     char *err, size_t errlen)
{
	static const char *const names[5] = {
		"version", "cutover_ms", "region_bits", "worker_bits", "seq_bits"
	};
	static const uint64_t max[5] = {
		UINT32_MAX, LIBIDGEN_MS_MAX, 255, 255, 255
	};
	struct idgen_layouts *t;
	const char *p = text;
	unsigned int line = 0;
	uint64_t v[5];
	size_t len;
	int i, ret;

	t = malloc(sizeof(*t) + LAYOUTS_MAX * sizeof(t->l[0]));
	if (!t)
		return -ENOMEM;
	t->n = 1;
	t->l[0] = idgen_layout_v1;

	while (*p) {
		const struct idgen_layout *prev = &t->l[t->n - 1];
		struct idgen_layout *l;

		line++;
		p = skip_blanks(p);
		if (*p == '#')
			p += strcspn(p, "\n");
		if (*p == '\n' || !*p) {
			if (*p)
				p++;
			continue;
		}
		for (i = 0; i < 5; i++) {
			if (i) {
				const char *q = skip_blanks(p);

				if (q == p && *q && *q != '\n' && *q != '#') {
					ret = fail(err, errlen, line, "%s is not a decimal number",
						   names[i - 1]);
					goto err;
				}
				p = q;
			}
			if (!*p || *p == '\n' || *p == '#') {
				ret = fail(err, errlen, line,
					   "want 'version cutover_ms region_bits worker_bits seq_bits', %s is missing",
					   names[i]);
				goto err;
			}
			len = strcspn(p, " \t\n#");
			ret = idgen_decimal(p, len, 0, max[i], &v[i]);
			if (ret == -ERANGE) {
				ret = fail(err, errlen, line, "%s is out of range (at most %llu)",
					   names[i], (unsigned long long)max[i]);
				goto err;
			}
			if (ret) {
				ret = fail(err, errlen, line, "%s is not a decimal number",
					   names[i]);
				goto err;
			}
			p += len;
		}
		p = skip_blanks(p);
		if (*p == '#')
			p += strcspn(p, "\n");
		if (*p && *p != '\n') {
			ret = fail(err, errlen, line, "unexpected text after seq_bits");
			goto err;
		}
		if (*p)
			p++;

		if (!idgen_widths_valid(v[2], v[3], v[4])) {
			ret = fail(err, errlen, line,
				   "bad widths %llu/%llu/%llu: they must add up to 22, with at most 8 region and at least 6 sequence bits",
				   (unsigned long long)v[2], (unsigned long long)v[3],
				   (unsigned long long)v[4]);
			goto err;
		}
		if (v[0] == 1) {
			if (v[1] || v[2] != 3 || v[3] != 7 || v[4] != 12) {
				ret = fail(err, errlen, line,
					   "version 1 is built in as '1 0 3 7 12' and cannot be redefined");
				goto err;
			}
			if (t->n > 1) {
				ret = fail(err, errlen, line, "version 1 must come first");
				goto err;
			}
			continue;
		}
		if (v[0] <= prev->version) {
			ret = fail(err, errlen, line, "version %llu is not above the previous one (%u)",
				   (unsigned long long)v[0], prev->version);
			goto err;
		}
		if (v[1] <= prev->cutover_ms) {
			ret = fail(err, errlen, line,
				   "cutover_ms %llu is not after the previous layout's (%llu)",
				   (unsigned long long)v[1], (unsigned long long)prev->cutover_ms);
			goto err;
		}
		if (t->n == LAYOUTS_MAX) {
			ret = fail(err, errlen, line, "more than %d layouts", LAYOUTS_MAX);
			goto err;
		}
		l = &t->l[t->n++];
		l->version = v[0];
		l->cutover_ms = v[1];
		l->region_bits = v[2];
		l->worker_bits = v[3];
		l->seq_bits = v[4];
	}
	*out = t;
	return 0;
err:
	free(t);
	return ret;
}

IDGEN_EXPORT int idgen_layouts_load(const char *path, struct idgen_layouts **out,
				    char *err, size_t errlen)
{
	char *text, sub[200];
	size_t len = 0;
	ssize_t r;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto report;
	}
	text = malloc(LAYOUTS_FILE_MAX + 1);
	if (!text) {
		close(fd);
		ret = -ENOMEM;
		goto report;
	}
	for (;;) {
		r = read(fd, text + len, LAYOUTS_FILE_MAX + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += r;
		if (len > LAYOUTS_FILE_MAX)
			break;
	}
	ret = r < 0 ? -errno : 0;
	close(fd);
	if (!ret && len > LAYOUTS_FILE_MAX)
		ret = -EFBIG;
	if (!ret && memchr(text, '\0', len))
		ret = -EINVAL;
	if (ret) {
		free(text);
		goto report;
	}
	text[len] = '\0';
	ret = idgen_layouts_parse(text, out, sub, sizeof(sub));
	free(text);
	if (ret && err && errlen)
		snprintf(err, errlen, "%s: %s", path, ret == -EINVAL ? sub : strerror(-ret));
	return ret;
report:
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", path,
			 ret == -EINVAL ? "not a text file" : strerror(-ret));
	return ret;
}

IDGEN_EXPORT void idgen_layouts_free(struct idgen_layouts *layouts)
{
	free(layouts);
}

IDGEN_EXPORT const struct idgen_layout *
idgen_layout_at(const struct idgen_layouts *t, uint64_t ms)
{
	size_t i;

	if (!t)
		t = BUILTIN;
	for (i = t->n; i > 1; i--)
		if (t->l[i - 1].cutover_ms <= ms)
			return &t->l[i - 1];
	return &t->l[0];
}

IDGEN_EXPORT size_t idgen_layouts_count(const struct idgen_layouts *t)
{
	return t ? t->n : 1;
}

IDGEN_EXPORT const struct idgen_layout *
idgen_layouts_get(const struct idgen_layouts *t, size_t i)
{
	if (!t)
		t = BUILTIN;
	return i < t->n ? &t->l[i] : NULL;
}

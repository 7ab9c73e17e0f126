// SPDX-License-Identifier: GPL-2.0
/*
 * The one configuration reader (conf.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "decimal.h"
#include "inifile.h"

static int set_string(const char *value, void *field, char *err, size_t errlen)
{
	char *s = strdup(value);

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	free(*(char **)field);
	*(char **)field = s;
	return 0;
}

int conf_string(const struct conf_item *it, const char *value, void *field,
		void *cfg, char *err, size_t errlen)
{
	(void)it;
	(void)cfg;
	if (!*value) {
		snprintf(err, errlen, "empty value");
		return -1;
	}
	return set_string(value, field, err, errlen);
}

int conf_string_or_empty(const struct conf_item *it, const char *value,
			 void *field, void *cfg, char *err, size_t errlen)
{
	(void)it;
	(void)cfg;
	return set_string(value, field, err, errlen);
}

/* A whole number in the row's range, stored in a field of size bytes. */
static int number(const struct conf_item *it, const char *value, void *field,
		  size_t size, char *err, size_t errlen)
{
	uint64_t v;

	if (idgen_decimal_str(value, it->min, it->max, &v)) {
		snprintf(err, errlen, "'%.200s' is not a whole number from %" PRIu64
			 " to %" PRIu64, value, it->min, it->max);
		return -1;
	}
	if (size == sizeof(uint32_t))
		*(uint32_t *)field = v;
	else
		*(uint64_t *)field = v;
	return 0;
}

int conf_u32(const struct conf_item *it, const char *value, void *field,
	     void *cfg, char *err, size_t errlen)
{
	(void)cfg;
	return number(it, value, field, sizeof(uint32_t), err, errlen);
}

int conf_u64(const struct conf_item *it, const char *value, void *field,
	     void *cfg, char *err, size_t errlen)
{
	(void)cfg;
	return number(it, value, field, sizeof(uint64_t), err, errlen);
}

int conf_bool(const struct conf_item *it, const char *value, void *field,
	      void *cfg, char *err, size_t errlen)
{
	(void)it;
	(void)cfg;
	if (!strcmp(value, "yes") || !strcmp(value, "true")) {
		*(bool *)field = true;
	} else if (!strcmp(value, "no") || !strcmp(value, "false")) {
		*(bool *)field = false;
	} else {
		snprintf(err, errlen, "'%.64s' is not yes or no", value);
		return -1;
	}
	return 0;
}

void conf_init(struct conf *c, const char *prog, const struct conf_item *items,
	       size_t nr_items, void *cfg)
{
	memset(c, 0, sizeof(*c));
	c->prog = prog;
	c->items = items;
	c->nr_items = nr_items < CONF_MAX_ITEMS ? nr_items : CONF_MAX_ITEMS;
	c->cfg = cfg;
}

static int parse(struct conf *c, size_t i, const char *value, char *err,
		 size_t errlen)
{
	const struct conf_item *it = &c->items[i];

	if (it->parse(it, value, (char *)c->cfg + it->offset, c->cfg, err, errlen))
		return -1;
	c->given[i] = true;
	return 0;
}

/* The sections the table knows, for a message: "[a], [b]". */
static void sections(const struct conf *c, char *out, size_t size)
{
	size_t i, j, len = 0;

	out[0] = '\0';
	for (i = 0; i < c->nr_items; i++) {
		for (j = 0; j < i && strcmp(c->items[j].section, c->items[i].section); j++)
			;
		if (j == i && len < size)
			len += snprintf(out + len, size - len, "%s[%s]", len ? ", " : "",
					c->items[i].section);
	}
}

/* One section header or key of the file (inifile_fn). */
static int on_line(void *ctx, unsigned int line, const char *section,
		   const char *key, const char *value, bool continued,
		   char *err, size_t errlen)
{
	struct conf *c = ctx;
	char why[400], known[200];
	bool section_known = false;
	size_t i;

	for (i = 0; i < c->nr_items; i++) {
		if (strcmp(c->items[i].section, section))
			continue;
		section_known = true;
		if (!key)
			return 0;
		if (strcmp(c->items[i].key, key))
			continue;
		if (c->line[i]) {
			snprintf(err, errlen, "[%.32s] %.64s is given twice (line %u first)",
				 section, key, c->line[i]);
			return -1;
		}
		if (continued && !c->items[i].list) {
			snprintf(err, errlen, "[%.32s] %.64s: an indented line continues "
				 "its value, and this key takes one value", section, key);
			return -1;
		}
		if (parse(c, i, value, why, sizeof(why))) {
			snprintf(err, errlen, "[%.32s] %.64s: %s", section, key, why);
			return -1;
		}
		c->line[i] = line;
		return 0;
	}
	sections(c, known, sizeof(known));
	if (!section_known)
		snprintf(err, errlen, "unknown section [%.64s] (the file has %s)",
			 section, known);
	else
		snprintf(err, errlen, "unknown key '%.64s' in section [%.64s]", key,
			 section);
	return -1;
}

int conf_apply_text(struct conf *c, const char *name, const char *text,
		    size_t len)
{
	char err[640];
	int line;

	line = inifile_parse(text, len, on_line, c, err, sizeof(err));
	if (line < 0) {
		fprintf(stderr, "%s: out of memory\n", c->prog);
		return -1;
	}
	if (line) {
		fprintf(stderr, "%s: %s:%d: %s\n", c->prog, name, line, err);
		return -1;
	}
	c->path = name;
	return 0;
}

int conf_apply_file(struct conf *c, const char *path)
{
	char *text;
	size_t len;
	int ret;

	if (inifile_read(c->prog, path, &text, &len))
		return -1;
	ret = conf_apply_text(c, path, text, len);
	free(text);
	return ret;
}

int conf_path_flag(const struct conf *c, int argc, char *argv[], const char **path)
{
	int i;

	*path = NULL;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config")) {
			if (i + 1 == argc) {
				fprintf(stderr, "%s: --config needs a file\n", c->prog);
				return -1;
			}
			*path = argv[++i];
		} else if (!strncmp(argv[i], "--config=", 9)) {
			*path = argv[i] + 9;
		}
	}
	return 0;
}

int conf_apply_flag(struct conf *c, int argc, char *argv[], int *i)
{
	const char *arg = argv[*i], *eq, *value;
	char why[400];
	size_t len, k;

	if (strncmp(arg, "--", 2))
		return 1;
	arg += 2;
	eq = strchr(arg, '=');
	len = eq ? (size_t)(eq - arg) : strlen(arg);
	for (k = 0; k < c->nr_items; k++)
		if (inifile_flag_names(arg, len, c->items[k].key))
			break;
	if (k == c->nr_items)
		return 1;
	if (eq) {
		value = eq + 1;
	} else if (*i + 1 < argc) {
		value = argv[++*i];
	} else {
		fprintf(stderr, "%s: --%.*s needs a value\n", c->prog, (int)len, arg);
		return -1;
	}
	if (parse(c, k, value, why, sizeof(why))) {
		fprintf(stderr, "%s: --%.*s: %s\n", c->prog, (int)len, arg, why);
		return -1;
	}
	return 0;
}

int conf_load(struct conf *c, const struct conf_program *p, int argc,
	      char *argv[])
{
	const char *path;
	int i, ret;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(p->usage, stdout);
			return 1;
		}
		if (!strcmp(argv[i], "--version")) {
			printf("%s %s\n", c->prog, p->version);
			return 1;
		}
	}
	if (conf_path_flag(c, argc, argv, &path))
		return -1;
	/* The default file is read if it is there; one named must be. */
	if (path ? conf_apply_file(c, path) :
	    !access(p->default_path, F_OK) && conf_apply_file(c, p->default_path))
		return -1;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config")) {
			i++;
			continue;
		}
		if (!strncmp(argv[i], "--config=", 9))
			continue;
		if (!strcmp(argv[i], "--check-config")) {
			*p->check_only = true;
			continue;
		}
		ret = p->flag ? p->flag(p->flag_arg, argc, argv, &i) : 1;
		if (ret == 1)
			ret = conf_apply_flag(c, argc, argv, &i);
		if (ret < 0)
			return -1;
		if (ret == 1) {
			fprintf(stderr, "%s: %s '%s' (try --help)\n", c->prog,
				strncmp(argv[i], "--", 2) ? "unexpected argument" :
				"unknown option", argv[i]);
			return -1;
		}
	}
	return 0;
}

bool conf_given(const struct conf *c, const char *key)
{
	size_t i;

	for (i = 0; i < c->nr_items; i++)
		if (!strcmp(c->items[i].key, key))
			return c->given[i];
	return false;
}

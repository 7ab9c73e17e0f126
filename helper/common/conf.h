/* SPDX-License-Identifier: GPL-2.0 */
/*
 * idgen's programs' configuration, read the way systemd's conf-parser
 * reads unit files: each program declares a table of rows (section, key,
 * parser, field offset, range) and nothing else; one reader applies the
 * file (the INI dialect of inifile.h) and then the command line, where
 * every key is a flag ("lease_ms" is --lease-ms, and a flag wins), and
 * says what is wrong in one format:
 *
 *   PROG: FILE:LINE: [SECTION] KEY: WHY      a key of the file
 *   PROG: FILE:LINE: WHY                     a line that is no key
 *   PROG: --FLAG: WHY                        a flag
 */
#ifndef COMMON_CONF_H
#define COMMON_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conf_item;

/*
 * Set the field (cfg + it->offset) from value: 0, or -1 with err saying
 * why (the field unchanged).  cfg is the whole configuration, for a
 * parser that sets more than its field.
 */
typedef int (*conf_parser)(const struct conf_item *it, const char *value,
			   void *field, void *cfg, char *err, size_t errlen);

struct conf_item {
	const char *section;
	const char *key;
	conf_parser parse;
	size_t offset;
	uint64_t min, max;		/* conf_u32(), conf_u64(): the range */
	bool list;			/* may go on over indented lines */
};

/* A string of one byte or more, strdup()ed over the char * there. */
int conf_string(const struct conf_item *it, const char *value, void *field,
		void *cfg, char *err, size_t errlen);
/* The same, and the empty string too. */
int conf_string_or_empty(const struct conf_item *it, const char *value,
			 void *field, void *cfg, char *err, size_t errlen);
/* A whole number from min to max (lib/decimal.h's one rule). */
int conf_u32(const struct conf_item *it, const char *value, void *field,
	     void *cfg, char *err, size_t errlen);
int conf_u64(const struct conf_item *it, const char *value, void *field,
	     void *cfg, char *err, size_t errlen);
/* yes or true, no or false. */
int conf_bool(const struct conf_item *it, const char *value, void *field,
	      void *cfg, char *err, size_t errlen);

#define CONF_MAX_ITEMS	64

struct conf {
	const char *prog;		/* for messages: "idgend" */
	const struct conf_item *items;
	size_t nr_items;
	void *cfg;
	const char *path;		/* the file applied, or NULL */
	unsigned int line[CONF_MAX_ITEMS];	/* where the file gave each */
	bool given[CONF_MAX_ITEMS];	/* by the file or a flag */
};

/* Nothing given yet. */
void conf_init(struct conf *c, const char *prog, const struct conf_item *items,
	       size_t nr_items, void *cfg);

/*
 * A file's text, named name in messages: 0, or -1 after saying why on
 * stderr.  Each key once; an unknown section or key is an error.
 */
int conf_apply_text(struct conf *c, const char *name, const char *text,
		    size_t len);
/* The file at path (inifile_read()), the same way. */
int conf_apply_file(struct conf *c, const char *path);

/*
 * The --config FILE (or --config=FILE) of argv, or NULL; -1 after saying
 * so when --config has no file.
 */
int conf_path_flag(const struct conf *c, int argc, char *argv[], const char **path);

/*
 * argv[*i], a flag of the table (--KEY VALUE or --KEY=VALUE): 0 with *i
 * at its last word, 1 when it names no key (nothing said), or -1 after
 * saying why.
 */
int conf_apply_flag(struct conf *c, int argc, char *argv[], int *i);

/*
 * What a program's command line holds beside its table's keys, for
 * conf_load().
 */
struct conf_program {
	const char *usage;		/* --help (or -h) prints it on stdout */
	const char *version;		/* --version prints "PROG VERSION" */
	const char *default_path;	/* read if it is there, unless --config */
	bool *check_only;		/* set by --check-config */
	/*
	 * A flag of the program's own (NULL: none), argv[*i]: 0 with *i at
	 * its last word, 1 when it is not one, or -1 after saying why.
	 */
	int (*flag)(void *arg, int argc, char *argv[], int *i);
	void *flag_arg;
};

/*
 * The one driver of every program's configuration: --help or --version
 * anywhere in argv is answered alone (1); otherwise the file --config
 * names (it must be there), or p->default_path if it is there, and then
 * every word of argv in order: --config FILE (read already),
 * --check-config, the program's own flags, the table's keys, and anything
 * else is an unknown option or an unexpected argument.  0, 1, or -1
 * after saying why.  c->path is the file read, if any.
 */
int conf_load(struct conf *c, const struct conf_program *p, int argc,
	      char *argv[]);

/* Whether the table's key was given, by the file or a flag. */
bool conf_given(const struct conf *c, const char *key);

#endif /* COMMON_CONF_H */

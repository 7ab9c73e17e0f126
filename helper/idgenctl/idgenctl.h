/* SPDX-License-Identifier: GPL-2.0 */
/*
 * idgenctl: what the subcommands share.
 */
#ifndef IDGENCTL_H
#define IDGENCTL_H

#include <linux/idgen.h>

#include "idgen.h"

extern const char *PROG_NAME;
extern const char *device_path;
/* The layouts table decoding uses: --layouts FILE, else NULL (version 1). */
extern struct idgen_layouts *layouts;

/* Subcommands: argv holds the arguments after the subcommand's words. */
int lease_set_main(int argc, char *argv[]);
int lease_show_main(int argc, char *argv[]);
int lease_revoke_main(int argc, char *argv[]);
int clock_adopt_main(int argc, char *argv[]);
int mint_main(int argc, char *argv[]);
int status_main(int argc, char *argv[]);
void print_generator_state(const char *source, const struct idgen_device_state *st);
int events_main(int argc, char *argv[]);
int config_main(int argc, char *argv[]);
int decode_main(int argc, char *argv[]);
int min_id_at_main(int argc, char *argv[]);
int public_encode_main(int argc, char *argv[]);
int public_decode_main(int argc, char *argv[]);
int code_new_main(int argc, char *argv[]);
int code_check_main(int argc, char *argv[]);

/* "ID  TIME region R worker W seq S layout V" on stdout. */
void print_decoded(const struct idgen_decoded *d);

/*
 * "idgenctl: <what>: <strerror(err)>" on stderr, then a line on what an
 * idgen errno means and what to do about it.
 */
void report_errno(const char *what, int err);

/* "idgenctl: <message>" then "Usage: idgenctl <usage>", on stderr; returns 1. */
int bad_usage(const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Whether arg asks for help ("--help", "-h", "help"). */
int is_help(const char *arg);

/*
 * For verbs that take no arguments: 0 if there are none, -1 after printing
 * the usage for --help (exit 0), 1 after reporting bad use (exit 1).
 */
int no_args(const char *usage, int argc, char *argv[]);

/* Open the device read-only; reports and returns -1 on failure. */
int device_open(void);

/* Open, one ioctl, close; reports (as "what") and returns -1 on failure. */
int device_ioctl(const char *what, unsigned long cmd, void *arg);

/* idgen_device_get_state(); reports and returns -1 on failure. */
int device_get_state(int fd, struct idgen_device_state *st);

#endif /* IDGENCTL_H */

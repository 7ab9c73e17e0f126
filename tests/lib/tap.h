/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tap.h: TAP from the host's C tests that are sequences of checks rather
 * than kselftest_harness.h fixtures (one copy per test program; the
 * shell suites have tap.sh):
 *
 *   check(ok, fmt, ...)   one result: "ok N - ..." or "not ok N - ..."
 *   return tap_done();    the plan, last; 1 if any check failed
 *
 * Each result is flushed at once, so a child process made later does not
 * print its parent's buffered lines again.
 */
#ifndef TESTS_LIB_TAP_H
#define TESTS_LIB_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int tap_tests, tap_failures;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	tap_tests++;
	if (!ok)
		tap_failures++;
	printf("%sok %d - ", ok ? "" : "not ", tap_tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_tests);
	return tap_failures ? 1 : 0;
}

#endif /* TESTS_LIB_TAP_H */

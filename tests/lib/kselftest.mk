# SPDX-License-Identifier: GPL-2.0
#
# kselftest.mk: the kernel's kselftest harness for the C tests.
#
# kselftest_harness.h and kselftest.h come at build time from the kernel
# source the build depends on (linux-source-6.12), extracted by
# scripts/build/kselftest-headers.sh into $(KSELFTEST); the tree holds only code
# written for idgen.  Set KSELFTEST to a directory that holds them, or
# LINUX_SOURCE to another tarball or tree, to build against others.
#
# A Makefile including this adds $(KSELFTEST_CFLAGS) to the compiler's
# flags and lists $(KSELFTEST_HEADERS) among a test's prerequisites.

KSELFTEST_TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/../..)
KSELFTEST ?= $(KSELFTEST_TOP)/build/kselftest
KSELFTEST_HEADERS := $(KSELFTEST)/kselftest_harness.h $(KSELFTEST)/kselftest.h
# The harness's macros compare int literals with unsigned values, its
# handlers ignore parameters and its setjmp() trips -Wclobbered: kernel
# selftests build with -Wall alone.
KSELFTEST_CFLAGS := -I$(KSELFTEST) -Wno-unused-parameter -Wno-sign-compare \
		    -Wno-clobbered

# Both come from one extraction (a grouped target: make 4.3).  The rule
# must not become the including Makefile's default goal.
kselftest_goal := $(.DEFAULT_GOAL)
$(KSELFTEST_HEADERS) &:
	$(KSELFTEST_TOP)/scripts/build/kselftest-headers.sh $(KSELFTEST)
.DEFAULT_GOAL := $(kselftest_goal)

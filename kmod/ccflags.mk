# SPDX-License-Identifier: GPL-2.0
#
# The compiler flags of every Kbuild that compiles kmod/ sources: kmod/Kbuild
# (idgen.ko, in a kernel tree or out of one) and tests/kunit/Kbuild (the
# KUnit suites linked with the module's objects).

# Every message the module prints names it: pr_fmt, set here once.
ccflags-y += -D'pr_fmt(fmt)=KBUILD_MODNAME ": " fmt'

# Kernel features that kmod/compat.h cannot see with the preprocessor (a
# function, not a macro, came or went): found in the kernel's headers and
# passed on as IDGEN_HAVE_* defines.

# ktime_get_snapshot_id() (any clock, fields systime and monoraw) replaced
# ktime_get_snapshot() (CLOCK_REALTIME only, fields real and raw).
ifneq ($(shell grep -s -w ktime_get_snapshot_id $(srctree)/include/linux/timekeeping.h),)
ccflags-y += -DIDGEN_HAVE_KTIME_GET_SNAPSHOT_ID
endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The markers a program executes around the calls whose instructions
 * bench/icount/icount.so counts: `nopl DISP(%rax)`, a no-op on every x86-64
 * CPU, whose 32-bit displacement carries a signature, the marker's kind
 * and an 8-bit tag naming the measure.  The plugin recognises them when it
 * translates the code, so they cost nothing to count but one callback.
 *
 *	ICOUNT_BEGIN(3);
 *	read(fd, buf, 8);
 *	ICOUNT_END(3);
 *
 * The tag must be a constant expression (it is an immediate operand).
 */
#ifndef IDGEN_BENCH_ICOUNT_MARKER_H
#define IDGEN_BENCH_ICOUNT_MARKER_H

#define ICOUNT_SIGNATURE	0x49430000u	/* "IC" in the top half */
#define ICOUNT_KIND_BEGIN	1u
#define ICOUNT_KIND_END		2u
#define ICOUNT_DISP(kind, tag)	(ICOUNT_SIGNATURE | (kind) << 8 | ((tag) & 0xffu))

/* Encoded as 0f 1f 80 <disp32>: the displacement never fits in 8 bits. */
#define ICOUNT_MARK(kind, tag) \
	__asm__ volatile("nopl %c0(%%rax)" : : "i" (ICOUNT_DISP(kind, tag)) : "memory")
#define ICOUNT_BEGIN(tag)	ICOUNT_MARK(ICOUNT_KIND_BEGIN, tag)
#define ICOUNT_END(tag)		ICOUNT_MARK(ICOUNT_KIND_END, tag)

#endif

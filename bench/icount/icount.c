// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * icount: a QEMU TCG plugin that counts the guest instructions each marked
 * call executes, kernel and user apart.
 *
 *   qemu-system-x86_64 -smp 1 ... -plugin icount.so,out=FILE[,profile=TAG...]
 *
 * Every executed instruction adds one to the kernel's or user's counter,
 * inline (no call out of the translated code); which counter is decided
 * when the instruction is translated, from its virtual address (x86-64
 * kernel addresses are in the upper half).  The program under test runs
 * ICOUNT_BEGIN(tag) and ICOUNT_END(tag) (marker.h) around each call; the
 * plugin recognises those no-ops at translation time, snapshots the
 * counters at a begin and records the difference at the matching end.
 * Counts are exact and do not depend on the host's speed or load, only on
 * the guest's code paths: pin the kernel, the -cpu model and the kernel's
 * layout (nokaslr) and they repeat.  One vCPU: the counters are shared.
 *
 * At exit, for each tag, one line to FILE (tab-separated):
 *   C tag calls mode min mode_kernel min_kernel mode_user min_user mean at_mode
 * (mode: the most frequent count, ties to the smaller; at_mode: how many
 * calls counted it).  With
 * profile=TAG (repeatable), also where the kernel instructions of that
 * tag's calls went, summed over its calls, by translation block (the
 * host names them by function, bench/icount/profile.sh):
 *   P tag block_address instructions
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin-api.h"
#include "marker.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define KERNEL_START	0xffff800000000000ull
#define NTAGS		256
#define MAX_PROFILED	8

static uint64_t kernel_insns, user_insns;

struct sample {
	uint64_t kernel, user;
};

static struct tag {
	struct sample *v;
	size_t n, cap;
	int profiled;		/* with profile=: its index in block.count, + 1 */
} tags[NTAGS];
static int nprofiled;

/* The tag of the call being counted, or -1. */
static int open_tag = -1;

/* The counters at the begin of the call being counted (open_tag). */
static struct sample open_base;

static char *out_path;

/* ------------------------------------------------ where the calls go */

/*
 * With profile=TAG, each kernel translation block counts the instructions
 * it executes inside that tag's calls.  A block is keyed by its address
 * and length (a block translated again, as it is, finds its counter).
 * The host names the addresses (the guest's /proc/kallsyms, the same
 * every boot with nokaslr): the plugin has no access to guest memory.
 */
struct block {
	uint64_t vaddr;
	uint64_t insns;
	uint64_t count[MAX_PROFILED];	/* executed, by profiled tag */
};

static struct block **blocks;	/* open addressing, a power of two */
static size_t nblocks, blocks_cap;
static int profiling;

static size_t block_hash(uint64_t vaddr, uint64_t insns, size_t cap)
{
	return (size_t)((vaddr * 0x9e3779b97f4a7c15ull) ^ insns) & (cap - 1);
}

static void blocks_grow(void)
{
	size_t cap = blocks_cap ? 2 * blocks_cap : 65536, i, h;
	struct block **v = calloc(cap, sizeof(*v));

	if (!v)
		abort();
	for (i = 0; i < blocks_cap; i++) {
		if (!blocks[i])
			continue;
		h = block_hash(blocks[i]->vaddr, blocks[i]->insns, cap);
		while (v[h])
			h = (h + 1) & (cap - 1);
		v[h] = blocks[i];
	}
	free(blocks);
	blocks = v;
	blocks_cap = cap;
}

static struct block *block_of(uint64_t vaddr, uint64_t insns)
{
	size_t h;

	if (2 * (nblocks + 1) > blocks_cap)
		blocks_grow();
	h = block_hash(vaddr, insns, blocks_cap);
	while (blocks[h]) {
		if (blocks[h]->vaddr == vaddr && blocks[h]->insns == insns)
			return blocks[h];
		h = (h + 1) & (blocks_cap - 1);
	}
	blocks[h] = calloc(1, sizeof(*blocks[h]));
	if (!blocks[h])
		abort();
	blocks[h]->vaddr = vaddr;
	blocks[h]->insns = insns;
	nblocks++;
	return blocks[h];
}

static void on_kernel_block(unsigned int vcpu, void *udata)
{
	struct block *b = udata;

	(void)vcpu;
	if (open_tag >= 0 && tags[open_tag].profiled)
		b->count[tags[open_tag].profiled - 1] += b->insns;
}

/* ------------------------------------------------ markers */

static void add_sample(struct tag *t, struct sample s)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->v = realloc(t->v, t->cap * sizeof(*t->v));
		if (!t->v)
			abort();
	}
	t->v[t->n++] = s;
}

static void on_marker(unsigned int vcpu, void *udata)
{
	uint32_t disp = (uint32_t)(uintptr_t)udata;
	unsigned int kind = disp >> 8 & 0xff, tag = disp & 0xff;
	struct tag *t = &tags[tag];

	(void)vcpu;
	if (kind == ICOUNT_KIND_BEGIN) {
		open_tag = (int)tag;
		open_base.kernel = kernel_insns;
		open_base.user = user_insns;
		return;
	}
	if (kind != ICOUNT_KIND_END || open_tag != (int)tag)
		return;		/* an end without its begin: not a call */
	open_tag = -1;
	add_sample(t, (struct sample){ kernel_insns - open_base.kernel,
				       user_insns - open_base.user });
}

/* The marker's displacement, or 0 if @insn is not one of ours. */
static uint32_t marker_of(const struct qemu_plugin_insn *insn)
{
	const unsigned char *p = qemu_plugin_insn_data(insn);
	uint32_t disp;

	if (qemu_plugin_insn_size(insn) != 7 || p[0] != 0x0f || p[1] != 0x1f ||
	    p[2] != 0x80)
		return 0;
	disp = p[3] | p[4] << 8 | p[5] << 16 | (uint32_t)p[6] << 24;
	return (disp & 0xffff0000u) == ICOUNT_SIGNATURE ? disp : 0;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	uint64_t start = qemu_plugin_tb_vaddr(tb);

	(void)id;
	if (profiling && start >= KERNEL_START)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_kernel_block, QEMU_PLUGIN_CB_NO_REGS,
						     block_of(start, n));
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
		int kernel = vaddr >= KERNEL_START;
		uint32_t disp = marker_of(insn);

		if (disp)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)disp);
		qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
							   kernel ? &kernel_insns : &user_insns, 1);
	}
}

/* ------------------------------------------------ the report */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Mode (the smaller of equals), how many times it occurs, and minimum of
 * @v, sorted in place.
 */
static size_t mode_min(uint64_t *v, size_t n, uint64_t *mode, uint64_t *min)
{
	size_t i, run = 0, best = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	*min = v[0];
	*mode = v[0];
	for (i = 0; i < n; i++) {
		run = i && v[i] == v[i - 1] ? run + 1 : 1;
		if (run > best) {
			best = run;
			*mode = v[i];
		}
	}
	return best;
}

static void report_profile(FILE *f, unsigned int tag)
{
	int p = tags[tag].profiled - 1;
	size_t i;

	for (i = 0; i < blocks_cap; i++)
		if (blocks[i] && blocks[i]->count[p])
			fprintf(f, "P\t%u\t%" PRIx64 "\t%" PRIu64 "\n", tag,
				blocks[i]->vaddr, blocks[i]->count[p]);
}

static void on_exit_report(qemu_plugin_id_t id, void *udata)
{
	uint64_t *tot, *k, *u, mode, min, kmode, kmin, umode, umin;
	size_t at_mode;
	FILE *f = fopen(out_path, "w");
	unsigned int tag;
	double sum;
	size_t i;

	(void)id;
	(void)udata;
	if (!f) {
		fprintf(stderr, "icount: %s: %s\n", out_path, strerror(errno));
		return;
	}
	fprintf(f, "# C tag calls mode min mode_kernel min_kernel mode_user min_user mean at_mode\n");
	for (tag = 0; tag < NTAGS; tag++) {
		struct tag *t = &tags[tag];

		if (!t->n)
			continue;
		tot = malloc(t->n * sizeof(*tot));
		k = malloc(t->n * sizeof(*k));
		u = malloc(t->n * sizeof(*u));
		if (!tot || !k || !u)
			abort();
		sum = 0;
		for (i = 0; i < t->n; i++) {
			k[i] = t->v[i].kernel;
			u[i] = t->v[i].user;
			tot[i] = k[i] + u[i];
			sum += (double)tot[i];
		}
		at_mode = mode_min(tot, t->n, &mode, &min);
		mode_min(k, t->n, &kmode, &kmin);
		mode_min(u, t->n, &umode, &umin);
		fprintf(f, "C\t%u\t%zu\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
			"\t%" PRIu64 "\t%" PRIu64 "\t%.1f\t%zu\n", tag, t->n, mode, min,
			kmode, kmin, umode, umin, sum / (double)t->n, at_mode);
		free(tot);
		free(k);
		free(u);
		if (t->profiled)
			report_profile(f, tag);
	}
	if (fclose(f))
		fprintf(stderr, "icount: %s: %s\n", out_path, strerror(errno));
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strncmp(a, "out=", 4)) {
			out_path = strdup(a + 4);
		} else if (!strncmp(a, "profile=", 8)) {
			char *end;
			unsigned long tag = strtoul(a + 8, &end, 0);

			if (*end || end == a + 8 || tag >= NTAGS) {
				fprintf(stderr, "icount: profile= wants a tag 0..%d, got '%s'\n",
					NTAGS - 1, a + 8);
				return -1;
			}
			if (nprofiled == MAX_PROFILED) {
				fprintf(stderr, "icount: at most %d profile= tags\n", MAX_PROFILED);
				return -1;
			}
			if (!tags[tag].profiled)
				tags[tag].profiled = ++nprofiled;
			profiling = 1;
		} else {
			fprintf(stderr, "icount: unknown argument '%s' (out=FILE, profile=TAG)\n",
				a);
			return -1;
		}
	}
	if (!out_path) {
		fprintf(stderr, "icount: out=FILE is required\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_exit_report, NULL);
	return 0;
}

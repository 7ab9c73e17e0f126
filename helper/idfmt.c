// SPDX-License-Identifier: GPL-2.0
/*
 * Decoding IDs and formatting idgen milliseconds.
 */
#include <stdio.h>
#include <time.h>

#include <linux/idgen.h>

#include "idfmt.h"

static uint32_t field(uint64_t v, unsigned int shift, unsigned int bits)
{
	return (v >> shift) & ((1ULL << bits) - 1);
}

void idgen_decode(uint64_t id, const struct idgen_layout *l,
		  struct idgen_fields *f)
{
	f->ms = id >> IDGEN_NODE_SEQ_BITS;
	f->region = field(id, l->worker_bits + l->seq_bits, l->region_bits);
	f->worker = field(id, l->seq_bits, l->worker_bits);
	f->seq = field(id, 0, l->seq_bits);
}

const char *idgen_format_ms(uint64_t ms, char buf[IDGEN_ISO_LEN])
{
	uint64_t unix_ms = IDGEN_EPOCH_UNIX_MS + ms;
	time_t secs = unix_ms / 1000;
	struct tm tm;
	size_t n = 0;

	if (ms <= UINT64_MAX - IDGEN_EPOCH_UNIX_MS && gmtime_r(&secs, &tm))
		n = strftime(buf, IDGEN_ISO_LEN - 5, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!n) {
		snprintf(buf, IDGEN_ISO_LEN, "(out of range)");
		return buf;
	}
	snprintf(buf + n, IDGEN_ISO_LEN - n, ".%03uZ", (unsigned int)(unix_ms % 1000));
	return buf;
}

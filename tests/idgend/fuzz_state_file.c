// SPDX-License-Identifier: GPL-2.0
/*
 * A libFuzzer target for standalone mode's state file reader: the bytes
 * it accepts are exactly the bytes state_file_write() writes for some
 * millisecond of the time field, and it says why it refuses anything
 * else.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t ms = 12345;
	const char *why = NULL;
	char written[64];
	int ret, n;

	ret = state_file_parse((const char *)data, size, &ms, &why);
	if (ret) {
		if (ret != -EBADMSG || !why || ms != 12345)
			abort();
		return 0;
	}
	n = snprintf(written, sizeof(written), STATE_FILE_KEY "%" PRIu64 "\n", ms);
	if (ms > STATE_FILE_MS_MAX || (size_t)n != size || memcmp(written, data, size)) {
		fprintf(stderr, "accepted %zu bytes as ms %" PRIu64
			", which is written as '%s'\n", size, ms, written);
		abort();
	}
	return 0;
}

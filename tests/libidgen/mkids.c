// SPDX-License-Identifier: GPL-2.0
/*
 * mkids: IDs for known fields, for the tests.  Reads lines
 *
 *   TIME REGION WORKER SEQ
 *
 * (TIME in RFC 3339) on stdin and prints the version-1 ID of each, one a
 * line.  Exits 1, naming the line, on anything malformed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idgen.h"

int main(void)
{
	char line[256], time[64];
	unsigned int region, worker, seq, n = 0;
	int64_t unix_ms;
	uint64_t id;

	while (fgets(line, sizeof(line), stdin)) {
		n++;
		if (sscanf(line, "%63s %u %u %u", time, &region, &worker, &seq) != 4 ||
		    idgen_parse_time(time, &unix_ms) ||
		    unix_ms < (int64_t)LIBIDGEN_EPOCH_UNIX_MS ||
		    idgen_compose(&idgen_layout_v1, unix_ms - LIBIDGEN_EPOCH_UNIX_MS,
				  region, worker, seq, &id)) {
			fprintf(stderr, "mkids: line %u: want 'TIME REGION WORKER SEQ' in range: %s",
				n, line);
			return 1;
		}
		printf("%llu\n", (unsigned long long)id);
	}
	return 0;
}

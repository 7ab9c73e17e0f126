// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * JSON output with IDs as strings.  Only formatting: the library parses
 * no JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "internal.h"

IDGEN_EXPORT int idgen_json_decoded(char *buf, size_t size, const struct idgen_decoded *d)
{
	char time[LIBIDGEN_TIME_STRLEN];

	if (idgen_format_time(d->unix_ms, time) < 0)
		return -ERANGE;
	return snprintf(buf, size,
			"{\"id\":\"%" PRIu64 "\",\"ms\":%" PRIu64 ",\"unix_ms\":%" PRIu64
			",\"time\":\"%s\",\"region\":%" PRIu32 ",\"worker\":%" PRIu32
			",\"seq\":%" PRIu32 ",\"layout\":%u}",
			d->id, d->ms, d->unix_ms, time, d->region, d->worker, d->seq,
			d->version);
}

IDGEN_EXPORT int idgen_json_write_decoded(FILE *f, const struct idgen_decoded *d, size_t n)
{
	char obj[256];
	size_t i;

	fputc('[', f);
	for (i = 0; i < n; i++) {
		int len = idgen_json_decoded(obj, sizeof(obj), &d[i]);

		if (len < 0 || (size_t)len >= sizeof(obj))
			return -ERANGE;
		fprintf(f, "%s%s", i ? "," : "", obj);
	}
	fputs("]\n", f);
	return ferror(f) ? -EIO : 0;
}

IDGEN_EXPORT int idgen_json_write_ids(FILE *f, const uint64_t *ids, size_t n)
{
	size_t i;

	fputs("{\"ids\":[", f);
	for (i = 0; i < n; i++)
		fprintf(f, "%s\"%" PRIu64 "\"", i ? "," : "", ids[i]);
	fputs("]}\n", f);
	return ferror(f) ? -EIO : 0;
}

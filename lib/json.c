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
	/*
	 * The one shape of a decoded ID (idgen-httpd's GET /v1/ids/{id} and
	 * idgenctl's --json too): the contract's fields first, in its order,
	 * then the two numbers a program may want without parsing a time.
	 */
	return snprintf(buf, size,
			"{\"id\":\"%" PRIu64 "\",\"created_at\":\"%s\",\"region\":%" PRIu32
			",\"worker\":%" PRIu32 ",\"sequence\":%" PRIu32
			",\"layout_version\":%u,\"ms\":%" PRIu64 ",\"unix_ms\":%" PRIu64 "}",
			d->id, time, d->region, d->worker, d->seq, d->version, d->ms,
			d->unix_ms);
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

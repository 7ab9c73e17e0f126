// SPDX-License-Identifier: LGPL-2.1-or-later
/* The one writer of an error buffer (errf.h). */
#include <stdarg.h>
#include <stdio.h>

#include "errf.h"

void idgen_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

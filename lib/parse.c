// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * IDs and times as strings: strict parsing, canonical formatting.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "decimal.h"
#include "internal.h"

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

IDGEN_EXPORT int idgen_parse_id(const char *s, uint64_t *id)
{
	return idgen_decimal_str(s, 0, LIBIDGEN_ID_MAX, id);
}

IDGEN_EXPORT int idgen_format_id(uint64_t id, char buf[LIBIDGEN_ID_STRLEN])
{
	char tmp[LIBIDGEN_ID_STRLEN];
	int n = 0, i;

	do {
		tmp[n++] = '0' + id % 10;
		id /= 10;
	} while (id);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

IDGEN_EXPORT int idgen_format_time(int64_t unix_ms, char buf[LIBIDGEN_TIME_STRLEN])
{
	int64_t secs = unix_ms / 1000, frac = unix_ms % 1000;
	struct tm tm;
	time_t t;
	size_t n;

	if (frac < 0) {
		frac += 1000;
		secs--;
	}
	t = secs;
	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
		return -ERANGE;
	n = strftime(buf, LIBIDGEN_TIME_STRLEN, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!n)
		return -ERANGE;
	return n + snprintf(buf + n, LIBIDGEN_TIME_STRLEN - n, ".%03dZ", (int)frac);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned int m, unsigned int d)
{
	int64_t era;
	unsigned int yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned int)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static unsigned int days_in_month(unsigned int y, unsigned int m)
{
	static const unsigned char days[12] = {
		31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31
	};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return days[m - 1] + (m == 2 && leap);
}

/* Exactly n digits, then sep (when not '\0'); at most max. */
static int fixed(const char **s, unsigned int n, char sep, unsigned int min,
		 unsigned int max, unsigned int *out)
{
	const char *p = *s;
	unsigned int v = 0, i;

	for (i = 0; i < n; i++, p++) {
		if (!is_digit(*p))
			return -EINVAL;
		v = v * 10 + (*p - '0');
	}
	if (sep && *p++ != sep)
		return -EINVAL;
	if (v < min || v > max)
		return -EINVAL;
	*s = p;
	*out = v;
	return 0;
}

IDGEN_EXPORT int idgen_parse_time(const char *s, int64_t *unix_ms)
{
	unsigned int year, mon, day, hour, min, sec, oh = 0, om = 0, ms = 0, i;
	const char *p = s;
	int64_t secs;
	int sign = 0;

	if (fixed(&p, 4, '-', 0, 9999, &year) ||
	    fixed(&p, 2, '-', 1, 12, &mon) ||
	    fixed(&p, 2, '\0', 1, days_in_month(year, mon), &day))
		return -EINVAL;
	if (*p != 'T' && *p != 't')
		return -EINVAL;
	p++;
	if (fixed(&p, 2, ':', 0, 23, &hour) ||
	    fixed(&p, 2, ':', 0, 59, &min) ||
	    fixed(&p, 2, '\0', 0, 60, &sec))
		return -EINVAL;
	if (*p == '.') {
		p++;
		for (i = 0; is_digit(*p); i++, p++) {
			if (i >= 9)
				return -EINVAL;
			if (i < 3)
				ms = ms * 10 + (*p - '0');
		}
		if (!i)
			return -EINVAL;
		for (; i < 3; i++)
			ms *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '+' ? 1 : -1;
		if (fixed(&p, 2, ':', 0, 23, &oh) || fixed(&p, 2, '\0', 0, 59, &om))
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	/*
	 * A leap second is 23:59:60 UTC (RFC 3339 5.7), whatever the
	 * offset makes of its hour and minute.  Unix time has no such
	 * second: it is the last millisecond of 23:59:59, whatever its
	 * fraction, so that a later time never maps below an earlier one
	 * (and idgen_min_id_at() never goes backwards).
	 */
	if (sec == 60) {
		int utc_min = ((int)(hour * 60 + min) - sign * (int)(oh * 60 + om) +
			       2 * 1440) % 1440;

		if (utc_min != 23 * 60 + 59)
			return -EINVAL;
		sec = 59;
		ms = 999;
	}
	secs = days_from_civil(year, mon, day) * 86400 + hour * 3600 + min * 60 + sec;
	secs -= sign * (int64_t)(oh * 3600 + om * 60);
	*unix_ms = secs * 1000 + ms;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD=fake_adjtimex.so: adjtimex(2) as NTP would leave it, for
 * idgen-httpd's /readyz on a test host whose own clock state is not the
 * test's to set.  IDGEN_FAKE_ADJTIMEX says what to report:
 *
 *   unsynced            TIME_ERROR with STA_UNSYNC
 *   synced:OFFSET_US    TIME_OK, offset OFFSET_US microseconds (as given:
 *                       an older kernel's negative offset is ~+4294967)
 *   synced-nano:NS      TIME_OK, STA_NANO, offset NS nanoseconds
 *
 * Anything else, or a call that would change the clock, fails with EPERM.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>

int adjtimex(struct timex *tx)
{
	const char *how = getenv("IDGEN_FAKE_ADJTIMEX");

	if (!how || tx->modes) {
		errno = EPERM;
		return -1;
	}
	memset(tx, 0, sizeof(*tx));
	tx->maxerror = 1000;
	if (!strcmp(how, "unsynced")) {
		tx->status = STA_UNSYNC;
		return TIME_ERROR;
	}
	if (!strncmp(how, "synced:", 7)) {
		tx->offset = strtol(how + 7, NULL, 10);
		return TIME_OK;
	}
	if (!strncmp(how, "synced-nano:", 12)) {
		tx->status = STA_NANO;
		tx->offset = strtol(how + 12, NULL, 10);
		return TIME_OK;
	}
	errno = EPERM;
	return -1;
}

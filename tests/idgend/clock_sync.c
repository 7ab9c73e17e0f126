// SPDX-License-Identifier: GPL-2.0
/*
 * clock_sync sync|unsync|show: mark this machine's wall clock synchronised
 * the way an NTP daemon does (STA_UNSYNC cleared, small error bounds), or
 * unsynchronised, or say which it is.  For idgend's clock gating in a test
 * guest, which has no NTP: never run it on a real host.
 */
#include <stdio.h>
#include <string.h>
#include <sys/timex.h>

int main(int argc, char *argv[])
{
	struct timex tx;
	int state;

	memset(&tx, 0, sizeof(tx));
	if (argc != 2)
		goto usage;
	if (!strcmp(argv[1], "sync")) {
		tx.modes = ADJ_STATUS | ADJ_MAXERROR | ADJ_ESTERROR;
		tx.status = 0;		/* STA_UNSYNC cleared; PLL unused */
		tx.maxerror = 1000;	/* us */
		tx.esterror = 100;
	} else if (!strcmp(argv[1], "unsync")) {
		tx.modes = ADJ_STATUS;
		tx.status = STA_UNSYNC;
	} else if (strcmp(argv[1], "show")) {
		goto usage;
	}
	state = adjtimex(&tx);
	if (state < 0) {
		perror("clock_sync: adjtimex");
		return 1;
	}
	printf("%s\n", state == TIME_ERROR || (tx.status & STA_UNSYNC) ?
	       "unsynchronised" : "synchronised");
	return 0;
usage:
	fprintf(stderr, "usage: clock_sync sync|unsync|show\n");
	return 2;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * idgenctl clock adopt
 */
#include <errno.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "idgenctl.h"

int clock_adopt_main(int argc, char *argv[])
{
	int fd, ret;

	ret = no_args("clock adopt", argc, argv);
	if (ret)
		return ret < 0 ? 0 : ret;
	fd = device_open();
	if (fd < 0)
		return 1;
	ret = 0;
	if (ioctl(fd, IDGEN_IOC_ADOPT_CLOCK)) {
		report_errno("adopt clock", errno);
		ret = 1;
	}
	close(fd);
	return ret;
}

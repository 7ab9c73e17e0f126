// SPDX-License-Identifier: GPL-2.0
/*
 * idgenctl clock adopt
 */
#include "idgenctl.h"

int clock_adopt_main(int argc, char *argv[])
{
	int ret = no_args("clock adopt", argc, argv);

	if (ret)
		return ret < 0 ? 0 : ret;
	return device_ioctl("adopt clock", IDGEN_IOC_ADOPT_CLOCK, NULL) ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The simulated generator as idgend drives it (helper/idgend/device.c,
 * "sim:FILE": libidgen's idgen_sim_open()) behaves as the module does where idgend's paths differ by it: revoke without a lease
 * succeeds with the host's last ms (uapi IDGEN_IOC_REVOKE), the layout
 * pushed with each lease is the one it holds, and a lease that could never
 * mint is refused with the module's errno (uapi IDGEN_IOC_SET_LEASE); and a
 * node of its own ("sim:12") or a regular file is refused.  TAP.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/idgen.h>

#include "wall_clock.h"
#include "device.h"
#include "tap.h"



static bool log_has(const char *path, const char *needle)
{
	char line[256];
	bool found = false;
	FILE *f = fopen(path, "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return found;
}

int main(void)
{
	const struct lease_layout v1 = { 3, 7, 12 }, wide = { 3, 10, 9 };
	char dir[] = "/tmp/idgend-sim-test.XXXXXX", file[256], log[300], spec[300];
	struct device dev;
	struct idgen_device_state h;
	uint64_t now, last = 99, last2 = 99;
	int err;

	printf("TAP version 13\n");
	if (!mkdtemp(dir))
		return 1;
	snprintf(file, sizeof(file), "%s/gen", dir);
	snprintf(log, sizeof(log), "%s.log", file);
	snprintf(spec, sizeof(spec), "sim:%s", file);

	err = device_open(&dev, spec, &v1);
	check(!err, "open a new simulated generator (%d)", err);
	if (err)
		return 1;
	err = dev.ops->revoke(dev.ctx, &last);
	check(!err && last == 0,
	      "revoke without a lease succeeds with last ms 0, as the module (%d)",
	      err);
	check(log_has(log, "revoke-idle last=0"), "... and is logged as idle");

	now = system_clock_ops.now_ms(NULL);
	err = dev.ops->push(dev.ctx, 0, 5, now - 10, now + 1000, true);
	check(!err, "push r0/w5 (%d)", err);
	err = dev.ops->revoke(dev.ctx, &last);
	check(!err && last >= now - 10 && last < now + 1000,
	      "revoke of the lease returns its last ms (%d)", err);
	err = dev.ops->revoke(dev.ctx, &last2);
	check(!err && last2 == last,
	      "a retried revoke succeeds with the same last ms (%d)", err);
	err = dev.ops->held(dev.ctx, &h);
	check(!err && !device_leased(&h) && h.region_bits == 3 && h.worker_bits == 7,
	      "after it no lease is held; the default layout is reported");
	err = dev.ops->push(dev.ctx, 0, 200, 0, now + 1000, true);
	check(err == -EINVAL, "a worker beyond 7 bits is refused (%d)", err);
	device_close(&dev);

	err = device_open(&dev, spec, &wide);
	err = err ?: dev.ops->push(dev.ctx, 0, 1000, now, now + 2000, true);
	check(!err, "another layout's worker 1000 is pushed under 3/10/9 (%d)", err);
	err = dev.ops->held(dev.ctx, &h);
	check(!err && device_leased(&h) && h.worker == 1000 && h.region_bits == 3 &&
	      h.worker_bits == 10 && h.floor_ms == now,
	      "the lease held carries its layout");
	check(log_has(log, "layout=3/10/9"), "the push is logged with its layout");

	/* Leases that could never mint are refused as the module does. */
	now = system_clock_ops.now_ms(NULL);
	err = dev.ops->push(dev.ctx, 0, 3, now - 100, now - 50, true);
	check(err == -EKEYEXPIRED,
	      "a lease whose fence the clock passed is refused with EKEYEXPIRED (%d)",
	      err);
	err = dev.ops->held(dev.ctx, &h);
	err = err ?: dev.ops->push(dev.ctx, 0, 3, h.last_ms + 5, h.last_ms + 6,
				   true);
	check(err == -EKEYEXPIRED,
	      "a lease whose floor leaves no ms before its fence is refused with EKEYEXPIRED (%d)",
	      err);
	err = dev.ops->held(dev.ctx, &h);
	check(!err && device_leased(&h) && h.worker == 1000,
	      "... and neither changed the lease held");
	err = dev.ops->push(dev.ctx, 0, 3, IDGEN_MS_MAX, IDGEN_MS_MAX + 1, true);
	check(err == -EOVERFLOW,
	      "a lease whose first ms is past the time field is refused with EOVERFLOW (%d)",
	      err);
	device_close(&dev);

	/*
	 * idgend holds a host's lease side: "sim:12" is a node of its own,
	 * never a file named 12 (that is sim:./12), and what is not idgen's
	 * device, a regular file, is refused before any lease is pushed.
	 */
	err = device_open(&dev, "sim:12", &v1);
	check(err == -EPROTONOSUPPORT, "sim:12, a node of its own, is refused (%d)", err);
	err = device_open(&dev, "sim", &v1);
	check(err == -EPROTONOSUPPORT, "sim, a node of its own, is refused (%d)", err);
	err = device_open(&dev, file, &v1);
	check(err == -ENOTTY, "a regular file is not idgen's device (%d)", err);

	unlink(log);
	unlink(file);
	rmdir(dir);
	return tap_done();
}

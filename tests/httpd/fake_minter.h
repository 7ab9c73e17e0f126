/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fuzz targets' generator: a counter standing in for /dev/idgen,
 * always leased, that counts what it hands out (minted), so that a
 * target can tell which inputs took IDs.
 */
#ifndef TESTS_HTTPD_FAKE_MINTER_H
#define TESTS_HTTPD_FAKE_MINTER_H

#include <string.h>

#include "idgen.h"
#include "minter.h"

static uint64_t minted;		/* IDs the stand-in generator handed out */
static uint64_t next_slot = 1ULL << 22;

static ssize_t fake_mint(void *ctx, uint64_t *ids, size_t n)
{
	size_t i;

	(void)ctx;
	for (i = 0; i < n; i++)
		ids[i] = next_slot++;
	minted += n;
	return n;
}

static int fake_state(void *ctx, struct minter_state *st)
{
	(void)ctx;
	memset(st, 0, sizeof(*st));
	st->leased = true;
	st->valid_until_ms = 1ULL << 40;
	st->now_ms = st->wall_ms = 1000;
	return 0;
}

static int fake_counters(void *ctx, struct idgen_device_state *c)
{
	(void)ctx;
	memset(c, 0, sizeof(*c));
	c->ids = minted;
	return 0;
}

static void fake_close(void *ctx)
{
	(void)ctx;
}

static const struct minter_ops fake_ops = {
	.mint = fake_mint,
	.state = fake_state,
	.counters = fake_counters,
	.close = fake_close,
};

#endif /* TESTS_HTTPD_FAKE_MINTER_H */

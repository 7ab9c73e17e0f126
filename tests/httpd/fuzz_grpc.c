// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: idgen-httpd's gRPC face (helper/httpd/grpc_conn.c,
 * grpc_stream.c, grpc_health.c and grpc_service.c): one connection's
 * nghttp2 server session, with the service's callbacks, fed the input as
 * the bytes a client sends after its connection preface and an empty
 * SETTINGS.  The generator is a counter standing in for /dev/idgen
 * (fake_minter.h); the caller "chat" has a quota of 5 IDs.  For every
 * input: no crash, no leak, no undefined behaviour (ASan, UBSan), and no
 * more IDs minted than the NextIds calls the input can hold could ask
 * for, none past "chat"'s quota of 5.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "fake_minter.h"
#include "grpc.h"

static const uint8_t preface[] =
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	"\x00\x00\x00\x04\x00\x00\x00\x00\x00";	/* SETTINGS, empty */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct minter minter = { .ops = &fake_ops };
	static char *callers[] = { "chat" };
	static struct quota quota;
	static struct api api = {
		.minter = &minter,
		.ready = { .margin_ms = 0, .check_clock = false },
	};
	static const struct grpc_limits lim = {
		.max_connections = 1, .max_streams = 100, .idle_timeout_s = 300,
		.timeout_s = 10,
	};
	struct grpc_conn *c;
	uint64_t before = minted;

	if (!api.quota) {
		if (quota_init(&quota, callers, 1))
			abort();
		quota_set(&quota, 0, 1, 5);	/* 0.001 IDs/s, a burst of 5 */
		api.quota = &quota;
	}
	c = grpc_conn_mem(&api, &lim);
	if (!c)
		return 0;
	if (!grpc_conn_feed(c, preface, sizeof(preface) - 1))
		grpc_conn_feed(c, data, size);
	grpc_conn_mem_free(c);
	/* A NextIds needs at least a HEADERS frame: 9 bytes, and 10000 IDs. */
	if (minted - before > (size / 9 + 1) * API_MAX_COUNT)
		abort();
	return 0;
}

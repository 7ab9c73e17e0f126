/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An HTTP answer's body as libcurl hands it over, collected up to a
 * limit: the one collector of idgen's network clients (idgend's etcd
 * client, libidgen-client).
 */
#ifndef IDGEN_HTTP_BODY_H
#define IDGEN_HTTP_BODY_H

#include <stdbool.h>
#include <stddef.h>

struct idgen_http_body {
	char *text;		/* len bytes and a NUL; NULL before the first */
	size_t len;
	size_t cap;
	size_t max;		/* more than this ends the transfer: too_long */
	bool too_long;
	bool nomem;		/* a byte could not be kept: the transfer ended */
};

/* CURLOPT_WRITEFUNCTION, its CURLOPT_WRITEDATA a struct idgen_http_body. */
size_t idgen_http_body_write(char *data, size_t size, size_t nmemb, void *body);

/* Empty, for a transfer of at most max bytes; the buffer is kept. */
void idgen_http_body_reset(struct idgen_http_body *b, size_t max);

void idgen_http_body_free(struct idgen_http_body *b);

#endif /* IDGEN_HTTP_BODY_H */

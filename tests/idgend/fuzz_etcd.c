// SPDX-License-Identifier: GPL-2.0
/*
 * A libFuzzer target for idgend's etcd client: whatever bytes an endpoint
 * answers with, list, get and cas must return an error or a well-formed
 * result, never crash, leak, or report a success they did not get.
 *
 * libcurl is replaced at link time (--wrap): the "transfer" hands the
 * fuzzer's bytes to the client's write callback as a 200 response, so no
 * socket is ever opened.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd.h"

typedef size_t (*write_cb)(char *, size_t, size_t, void *);

static write_cb body_cb;
static void *body_ctx;
static const uint8_t *fuzz_data;
static size_t fuzz_len;

CURLcode __wrap_curl_easy_setopt(CURL *curl, CURLoption opt, ...);
CURLcode __wrap_curl_easy_perform(CURL *curl);
CURLcode __wrap_curl_easy_getinfo(CURL *curl, CURLINFO info, ...);

CURLcode __wrap_curl_easy_setopt(CURL *curl, CURLoption opt, ...)
{
	va_list ap;

	(void)curl;
	va_start(ap, opt);
	if (opt == CURLOPT_WRITEFUNCTION)
		body_cb = va_arg(ap, write_cb);
	else if (opt == CURLOPT_WRITEDATA)
		body_ctx = va_arg(ap, void *);
	va_end(ap);
	return CURLE_OK;
}

/* The body in two pieces, as a network would split it. */
CURLcode __wrap_curl_easy_perform(CURL *curl)
{
	size_t half = fuzz_len / 2;

	(void)curl;
	if (!body_cb)
		return CURLE_FAILED_INIT;
	if (half && body_cb((char *)fuzz_data, 1, half, body_ctx) != half)
		return CURLE_WRITE_ERROR;
	if (fuzz_len - half &&
	    body_cb((char *)fuzz_data + half, 1, fuzz_len - half, body_ctx) !=
	    fuzz_len - half)
		return CURLE_WRITE_ERROR;
	return CURLE_OK;
}

CURLcode __wrap_curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
	va_list ap;

	(void)curl;
	va_start(ap, info);
	if (info == CURLINFO_RESPONSE_CODE)
		*va_arg(ap, long *) = 200;
	va_end(ap);
	return CURLE_OK;
}

#define WORKERS	128

static void well_formed(const struct store_record *r, uint32_t worker)
{
	if (r->worker != worker || memchr(r->owner, '\0', sizeof(r->owner)) == NULL ||
	    memchr(r->token, '\0', sizeof(r->token)) == NULL)
		abort();
	if (!r->exists && (r->valid || r->mod_revision || r->owner[0]))
		abort();
	if (r->valid && !r->exists)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const char *const ep[] = { "http://fuzz" };
	static struct store_record rec[WORKERS];
	static const struct store_value val = {
		.owner = "me", .token = "0123456789abcdef0123456789abcdef",
		.valid_until_ms = 10,
	};
	struct store_record now;
	struct store_layout lay;
	uint64_t max_until;
	uint32_t garbled;
	struct etcd *e;
	int64_t rev;
	uint32_t i;
	int ret;

	fuzz_data = data;
	fuzz_len = len;
	e = etcd_new(ep, 1, "/f", 1000);
	if (!e)
		return 0;

	ret = etcd_store_ops.list(e, 0, rec, WORKERS);
	if (!ret)
		for (i = 0; i < WORKERS; i++)
			well_formed(&rec[i], i);
	else if (!*etcd_store_ops.error(e))
		abort();	/* every failure says why */

	ret = etcd_store_ops.get(e, 0, 3, &now);
	if (!ret)
		well_formed(&now, 3);
	else if (!*etcd_store_ops.error(e))
		abort();

	rev = 0;
	ret = etcd_store_ops.cas(e, 0, 3, 5, STORE_ANY_LAYOUT, &val, &rev, &now);
	if (!ret && rev <= 5)
		abort();	/* a success moves the revision on */
	if (ret == -ECANCELED)
		well_formed(&now, 3);
	if (ret && !*etcd_store_ops.error(e))
		abort();

	/* The same with the layout compare: two ranges in a failed txn. */
	rev = 0;
	ret = etcd_store_ops.cas(e, 0, 3, 5, 4, &val, &rev, &now);
	if (!ret && rev <= 5)
		abort();
	if (ret == -ECANCELED)
		well_formed(&now, 3);
	if (ret && !*etcd_store_ops.error(e))
		abort();

	ret = etcd_store_ops.layout_get(e, 0, &lay);
	if (ret && !*etcd_store_ops.error(e))
		abort();
	if (!ret && lay.valid && !lay.exists)
		abort();
	ret = etcd_store_ops.region_scan(e, 0, &max_until, &garbled, &rev);
	if (ret && !*etcd_store_ops.error(e))
		abort();
	etcd_free(e);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * A libFuzzer target for idgend's etcd client: whatever bytes endpoints
 * answer with, list, get and cas must return an error or a well-formed
 * result, never crash, leak, loop, or report a success they did not get.
 *
 * libcurl is replaced at link time (--wrap), so no socket is ever opened.
 * The input is a sequence of answers separated by NUL bytes (which JSON
 * never holds), handed out one per request, from the first again for each
 * operation: a listing's pages, a fail-over to the second endpoint and a
 * retry all read the next answer.  An answer is a 200 response with that
 * body, unless it starts with '#' and three digits (another HTTP status),
 * or is "#000" (sent, then no answer) or "#big" (over the client's size
 * bound).  Past the last answer, the endpoint refuses the connection.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
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
static size_t fuzz_pos;		/* where the next answer starts */
static long status;		/* of the last transfer */
static long request_size;	/* of the last transfer */
static unsigned int requests;	/* of the current operation */

/* Bigger than any answer the client accepts (4 MiB). */
static char big[(4u << 20) + 1];

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

static bool feed(const char *p, size_t len)
{
	return !len || body_cb((char *)p, 1, len, body_ctx) == len;
}

/* The next answer; its body in two pieces, as a network would split it. */
CURLcode __wrap_curl_easy_perform(CURL *curl)
{
	const uint8_t *a = fuzz_data + fuzz_pos, *nul;
	size_t len, half;

	(void)curl;
	if (!body_cb)
		return CURLE_FAILED_INIT;
	requests++;
	status = 200;
	request_size = 100;
	if (fuzz_pos > fuzz_len || (fuzz_pos == fuzz_len && fuzz_len)) {
		request_size = 0;
		return CURLE_COULDNT_CONNECT;
	}
	nul = memchr(a, '\0', fuzz_len - fuzz_pos);
	len = nul ? (size_t)(nul - a) : fuzz_len - fuzz_pos;
	fuzz_pos += len + 1;
	if (len >= 4 && a[0] == '#') {
		if (!memcmp(a, "#000", 4))
			return CURLE_RECV_ERROR;
		if (!memcmp(a, "#big", 4))
			return feed(big, sizeof(big)) ? CURLE_OK :
				CURLE_WRITE_ERROR;
		if (a[1] >= '1' && a[1] <= '5' && a[2] >= '0' && a[2] <= '9' &&
		    a[3] >= '0' && a[3] <= '9') {
			status = (a[1] - '0') * 100 + (a[2] - '0') * 10 +
				 (a[3] - '0');
			a += 4;
			len -= 4;
		}
	}
	half = len / 2;
	if (!feed((const char *)a, half) ||
	    !feed((const char *)a + half, len - half))
		return CURLE_WRITE_ERROR;
	return CURLE_OK;
}

CURLcode __wrap_curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
	va_list ap;

	(void)curl;
	va_start(ap, info);
	if (info == CURLINFO_RESPONSE_CODE)
		*va_arg(ap, long *) = status;
	else if (info == CURLINFO_REQUEST_SIZE)
		*va_arg(ap, long *) = request_size;
	else if (info == CURLINFO_OS_ERRNO)
		*va_arg(ap, long *) = 0;
	va_end(ap);
	return CURLE_OK;
}

#define WORKERS	128

/* Each operation reads the answers from the first. */
static void next_op(void)
{
	fuzz_pos = 0;
	requests = 0;
}

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

/* After a failure: held by someone unknown, so a careless caller waits. */
static void unknown(const struct store_record *r, uint32_t worker)
{
	if (r->worker != worker || !r->exists || r->valid || r->owner[0])
		abort();
}

/* The errors store.h names for a read; never an internal one. */
static void read_error(struct etcd *e, int ret)
{
	if (ret != -EPROTO && ret != -ETIMEDOUT && ret != -ECONNREFUSED &&
	    ret != -EACCES && ret != -ENOMEM)
		abort();
	if (!*etcd_store_ops.error(e))
		abort();	/* every failure says why */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const char *const ep[] = { "http://fuzz1", "http://fuzz2" };
	static struct store_record rec[WORKERS];
	static const struct store_value val = {
		.owner = "me", .token = "0123456789abcdef0123456789abcdef",
		.valid_until_ms = 10,
	};
	static const struct store_layout lay_want = {
		.region_bits = 3, .worker_bits = 7, .seq_bits = 12,
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
	e = etcd_new(ep, 2, "/f", 1000);
	if (!e)
		return 0;

	next_op();
	ret = etcd_store_ops.list(e, 0, rec, WORKERS);
	for (i = 0; i < WORKERS; i++) {
		if (!ret)
			well_formed(&rec[i], i);
		else
			unknown(&rec[i], i);
	}
	if (ret)
		read_error(e, ret);

	next_op();
	ret = etcd_store_ops.get(e, 0, 3, &now);
	if (!ret) {
		well_formed(&now, 3);
	} else {
		unknown(&now, 3);
		read_error(e, ret);
	}

	next_op();
	rev = 0;
	ret = etcd_store_ops.cas(e, 0, 3, 5, STORE_ANY_LAYOUT, &val, &rev, &now);
	if (!ret && rev <= 5)
		abort();	/* a success moves the revision on */
	if (ret == -ECANCELED)
		well_formed(&now, 3);
	else if (ret)
		unknown(&now, 3);
	/* A garbled answer to a write is an unknown outcome, not -EPROTO. */
	if (ret && ret != -ECANCELED && ret != -ETIMEDOUT &&
	    ret != -ECONNREFUSED && ret != -EACCES && ret != -ENOMEM)
		abort();
	if (ret && !*etcd_store_ops.error(e))
		abort();
	/* A write is sent once: to the second endpoint only if refused. */
	if (requests > 2)
		abort();

	/* The same with the layout compare: two ranges in a failed txn. */
	next_op();
	rev = 0;
	ret = etcd_store_ops.cas(e, 0, 3, 5, 4, &val, &rev, &now);
	if (!ret && rev <= 5)
		abort();
	if (ret == -ECANCELED)
		well_formed(&now, 3);
	else if (ret)
		unknown(&now, 3);
	if (ret && ret != -ECANCELED && ret != -ETIMEDOUT &&
	    ret != -ECONNREFUSED && ret != -EACCES && ret != -ENOMEM)
		abort();
	if (ret && !*etcd_store_ops.error(e))
		abort();
	if (requests > 2)
		abort();

	next_op();
	ret = etcd_store_ops.layout_get(e, 0, &lay);
	if (ret)
		read_error(e, ret);
	if (ret && !lay.exists)
		abort();	/* unknown is never "absent" */
	if (!ret && lay.valid && !lay.exists)
		abort();

	next_op();
	rev = 0;
	ret = etcd_store_ops.layout_cas(e, 0, 0, 7, 0, &lay_want, &rev);
	if (!ret && !rev)
		abort();
	if (ret && rev)
		abort();
	if (ret && ret != -ECANCELED && ret != -ETIMEDOUT &&
	    ret != -ECONNREFUSED && ret != -EACCES && ret != -ENOMEM)
		abort();
	if (ret && !*etcd_store_ops.error(e))
		abort();
	if (requests > 2)
		abort();

	next_op();
	ret = etcd_store_ops.region_scan(e, 0, &max_until, &garbled, &rev);
	if (ret)
		read_error(e, ret);
	etcd_free(e);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * An HTTP answer's body, collected (http_body.h).
 */
#include <stdlib.h>
#include <string.h>

#include "http_body.h"

size_t idgen_http_body_write(char *data, size_t size, size_t nmemb, void *body)
{
	struct idgen_http_body *b = body;
	size_t n = size * nmemb, cap;
	char *p;

	if (n > b->max - b->len) {
		b->too_long = true;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		for (cap = b->cap ? b->cap : 256; cap < b->len + n + 1; cap *= 2)
			;
		p = realloc(b->text, cap);
		if (!p) {
			b->nomem = true;
			return 0;
		}
		b->text = p;
		b->cap = cap;
	}
	memcpy(b->text + b->len, data, n);
	b->len += n;
	b->text[b->len] = '\0';
	return n;
}

void idgen_http_body_reset(struct idgen_http_body *b, size_t max)
{
	b->len = 0;
	b->max = max;
	b->too_long = false;
	b->nomem = false;
	if (b->text)
		b->text[0] = '\0';
}

void idgen_http_body_free(struct idgen_http_body *b)
{
	free(b->text);
	b->text = NULL;
	b->len = b->cap = 0;
}

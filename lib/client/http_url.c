// SPDX-License-Identifier: GPL-2.0
/*
 * http(s) URLs, as libcurl reads them (http_url.h).
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "http_url.h"

/* Whether part of h is absent (or empty). */
static bool no_part(CURLU *h, CURLUPart part)
{
	char *v = NULL;
	bool none = curl_url_get(h, part, &v, 0) != CURLUE_OK || !v || !*v;

	curl_free(v);
	return none;
}

static const char *judge(CURLU *h, const char *url, bool base)
{
	const char *authority = strstr(url, "://");
	size_t len = authority ? strcspn(authority + 3, "/?#") : 0;
	char *v = NULL;
	bool ok;

	switch (curl_url_set(h, CURLUPART_URL, url, 0)) {
	case CURLUE_OK:
		break;
	case CURLUE_NO_HOST:
		return "names no host";
	case CURLUE_BAD_PORT_NUMBER:
		return "has a bad port (want 1 to 65535)";
	case CURLUE_BAD_IPV6:
		return "has a bad [IPv6] host";
	case CURLUE_BAD_SCHEME:
	case CURLUE_UNSUPPORTED_SCHEME:
		return "is not an http:// or https:// URL";
	default:
		return "is not a URL libcurl can read (a bad host name, "
		       "blanks or control characters)";
	}
	ok = curl_url_get(h, CURLUPART_SCHEME, &v, 0) == CURLUE_OK &&
	     (!strcmp(v, "http") || !strcmp(v, "https"));
	curl_free(v);
	if (!ok || !authority)
		return "is not an http:// or https:// URL";
	if (no_part(h, CURLUPART_HOST))
		return "names no host";
	if (!no_part(h, CURLUPART_USER) || !no_part(h, CURLUPART_PASSWORD))
		return "has user information, which is never sent";
	/* libcurl decodes a %-escape in a host, and reads "h:" as "h". */
	if (memchr(authority + 3, '%', len))
		return "has a bad host name (a %-escape)";
	if (len && authority[3 + len - 1] == ':')
		return "has a bad port (want 1 to 65535)";
	/* libcurl takes 0 to 65535, and gives the number back as digits. */
	if (curl_url_get(h, CURLUPART_PORT, &v, 0) == CURLUE_OK) {
		ok = strcmp(v, "0") != 0;
		curl_free(v);
		if (!ok)
			return "has a bad port (want 1 to 65535)";
	}
	if (base && (!no_part(h, CURLUPART_QUERY) || !no_part(h, CURLUPART_FRAGMENT) ||
		     strpbrk(url, "?#")))
		return "is not a base URL: it has a query or a fragment";
	return NULL;
}

const char *idgen_http_url_fault(const char *url, bool base)
{
	CURLU *h = curl_url();
	const char *why;

	if (!h)
		return "cannot be parsed (out of memory)";
	why = judge(h, url, base);
	curl_url_cleanup(h);
	return why;
}

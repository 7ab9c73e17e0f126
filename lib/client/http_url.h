/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one rule for the http(s) URLs idgen's network clients are given:
 * idgend's etcd endpoints and libidgen-client's idgen-httpd hosts.  Both
 * hand them to libcurl, so libcurl's own URL parser (curl_url(3)) judges
 * them, as libcurl will read them.
 */
#ifndef IDGEN_HTTP_URL_H
#define IDGEN_HTTP_URL_H

#include <stdbool.h>

/*
 * Why url is not an http:// or https:// URL naming a host (a name, an
 * IPv4 address or a bracketed IPv6 one) with no user information and a
 * port, if any, from 1 to 65535; with base, not one with no query or
 * fragment either (a path may follow).  NULL when it is one.  The reason
 * reads after the URL: "endpoint 'URL' <reason>".
 */
const char *idgen_http_url_fault(const char *url, bool base);

#endif /* IDGEN_HTTP_URL_H */

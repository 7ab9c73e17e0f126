/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The caller map (caller_map = FILE): one line an identity, a SPIFFE ID
 * and the caller it is,
 *
 *   spiffe://example.org/ns/orders/sa/order-service order-service
 *
 * blank lines and '#' comments aside.  Each SPIFFE ID as the SPIFFE
 * standard writes it and each caller a valid caller's name other than
 * "other"; no identity twice.  tls.c reads the file with the rest of a
 * context's files and asks the map for each client certificate's caller.
 */
#ifndef HTTPD_CALLER_MAP_H
#define HTTPD_CALLER_MAP_H

#include <stdbool.h>
#include <stddef.h>

/* The longest identity taken from a certificate (a SPIFFE ID's bound). */
#define TLS_MAX_IDENTITY	2048
/* Lines of a caller map. */
#define TLS_MAX_CALLER_MAP	4096

struct tls_caller_map;

/*
 * The caller map's text (named name in messages) into its lines: 0, or
 * -1 with err "NAME:LINE: why".
 */
int tls_caller_map_parse(const char *name, const char *text, size_t len,
			 struct tls_caller_map **out, char *err, size_t errlen);
/* The caller an identity maps to, or NULL (m may be NULL: no map). */
const char *tls_caller_map_find(const struct tls_caller_map *m, const char *identity);
/* Whether the map gives caller to some SPIFFE ID (m may be NULL). */
bool tls_caller_map_assigns(const struct tls_caller_map *m, const char *caller);
/* How many identities it maps (m may be NULL: 0). */
size_t tls_caller_map_size(const struct tls_caller_map *m);
void tls_caller_map_free(struct tls_caller_map *m);

#endif /* HTTPD_CALLER_MAP_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * The caller map: which caller each SPIFFE ID of a client certificate
 * is (caller_map.h).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "caller_map.h"
#include "errf.h"

struct tls_caller_map {
	size_t n;
	struct {
		char *identity;
		char caller[API_MAX_CALLER + 1];
	} *e;
};

static bool td_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
	       c == '-' || c == '_';
}

static bool path_char(char c)
{
	return td_char(c) || (c >= 'A' && c <= 'Z');
}

/*
 * A SPIFFE ID as the SPIFFE standard writes it: "spiffe://", a trust
 * domain of [a-z0-9._-], then path segments of [A-Za-z0-9._-], none
 * empty, "." or "..", no trailing '/', no query or fragment; at most
 * TLS_MAX_IDENTITY bytes.  NULL, or why not.
 */
static const char *spiffe_fault(const char *s, size_t len)
{
	size_t i = 9, seg;

	if (len > TLS_MAX_IDENTITY)
		return "longer than 2048 bytes";
	if (len < 10 || strncmp(s, "spiffe://", 9))
		return "not a SPIFFE ID (spiffe://TRUST-DOMAIN/PATH)";
	for (; i < len && s[i] != '/'; i++)
		if (!td_char(s[i]))
			return "a trust domain takes only a-z, 0-9, '.', '-' and '_'";
	if (i == 9)
		return "no trust domain";
	while (i < len) {
		seg = ++i;
		for (; i < len && s[i] != '/'; i++)
			if (!path_char(s[i]))
				return "a path segment takes only A-Z, a-z, 0-9, '.', '-' "
				       "and '_'";
		if (i == seg)
			return "an empty path segment (\"//\", or a trailing '/')";
		if ((i - seg == 1 && s[seg] == '.') ||
		    (i - seg == 2 && s[seg] == '.' && s[seg + 1] == '.'))
			return "a path segment \".\" or \"..\"";
	}
	return NULL;
}

void tls_caller_map_free(struct tls_caller_map *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->e[i].identity);
	free(m->e);
	free(m);
}

int tls_caller_map_parse(const char *name, const char *text, size_t len,
			 struct tls_caller_map **out, char *err, size_t errlen)
{
	struct tls_caller_map *m = calloc(1, sizeof(*m));
	const char *p = text, *end = text + len, *eol, *a, *b, *why;
	size_t alen, blen, i, cap = 0;
	unsigned int line = 0;

	*out = NULL;
	if (!m) {
		idgen_errf(err, errlen, "%s: out of memory", name);
		return -1;
	}
	if (memchr(text, '\0', len)) {
		idgen_errf(err, errlen, "%s: a NUL byte: not a text file", name);
		goto bad;
	}
	for (; p < end; p = eol + (eol < end)) {
		eol = memchr(p, '\n', end - p);
		if (!eol)
			eol = end;
		line++;
		/* Blank lines and comments; otherwise IDENTITY CALLER. */
		for (a = p; a < eol && (*a == ' ' || *a == '\t'); a++)
			;
		if (a >= eol || *a == '#')
			continue;
		for (alen = 0; a + alen < eol && a[alen] != ' ' && a[alen] != '\t'; alen++)
			;
		b = a + alen;
		while (b < eol && (*b == ' ' || *b == '\t'))
			b++;
		for (blen = 0; b + blen < eol && b[blen] != ' ' && b[blen] != '\t' &&
		     b[blen] != '\r'; blen++)
			;
		for (i = b + blen - p; p + i < eol; i++)
			if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
				break;
		if (!blen || p + i < eol) {
			idgen_errf(err, errlen, "%s:%u: want one SPIFFE ID and one caller's name, "
				   "blank-separated (spiffe://example.org/ns/orders/sa/order-service "
				   "order-service)", name, line);
			goto bad;
		}
		why = spiffe_fault(a, alen);
		if (why) {
			idgen_errf(err, errlen, "%s:%u: '%.*s': %s", name, line,
				   (int)(alen > 80 ? 80 : alen), a, why);
			goto bad;
		}
		if (!api_caller_valid(b, blen) || (blen == 5 && !strncmp(b, "other", 5))) {
			idgen_errf(err, errlen, "%s:%u: '%.*s' is not a caller's name (1 to %d "
				   "letters, digits, '.', '_', ':' or '-'; not \"other\": leave "
				   "the identity out for that)", name, line,
				   (int)(blen > API_MAX_CALLER ? API_MAX_CALLER : blen), b,
				   API_MAX_CALLER);
			goto bad;
		}
		for (i = 0; i < m->n; i++)
			if (strlen(m->e[i].identity) == alen &&
			    !memcmp(m->e[i].identity, a, alen)) {
				idgen_errf(err, errlen, "%s:%u: '%.*s' is mapped twice", name, line,
					   (int)(alen > 80 ? 80 : alen), a);
				goto bad;
			}
		if (m->n == TLS_MAX_CALLER_MAP) {
			idgen_errf(err, errlen, "%s:%u: more than %d identities", name, line,
				   TLS_MAX_CALLER_MAP);
			goto bad;
		}
		if (m->n == cap) {
			void *e = realloc(m->e, (cap ? cap * 2 : 16) * sizeof(*m->e));

			if (!e)
				goto nomem;
			m->e = e;
			cap = cap ? cap * 2 : 16;
		}
		m->e[m->n].identity = strndup(a, alen);
		if (!m->e[m->n].identity)
			goto nomem;
		memcpy(m->e[m->n].caller, b, blen);
		m->e[m->n].caller[blen] = '\0';
		m->n++;
	}
	*out = m;
	return 0;
nomem:
	idgen_errf(err, errlen, "%s: out of memory", name);
bad:
	tls_caller_map_free(m);
	return -1;
}

const char *tls_caller_map_find(const struct tls_caller_map *m, const char *identity)
{
	size_t i;

	for (i = 0; m && i < m->n; i++)
		if (!strcmp(m->e[i].identity, identity))
			return m->e[i].caller;
	return NULL;
}

bool tls_caller_map_assigns(const struct tls_caller_map *m, const char *caller)
{
	size_t i;

	for (i = 0; m && i < m->n; i++)
		if (!strcmp(m->e[i].caller, caller))
			return true;
	return false;
}

size_t tls_caller_map_size(const struct tls_caller_map *m)
{
	return m ? m->n : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * json_ascii(): what it writes is ASCII, means the same to a strict
 * json-c of whichever version this is linked against (run.sh links it
 * against Debian 12's 0.16 and Debian 13's 0.18), and what JSON forbids
 * stays forbidden.  Prints TAP.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "json_ascii.h"

static int n, failed;

static void ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	failed |= !cond;
}

/* The string value of the one-member object json, read strictly; or NULL. */
static char *strict_value(const char *json, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o, *v;
	char *s = NULL;

	if (!tok)
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, json, (int)len);
	if (o && json_object_object_get_ex(o, "owner", &v) &&
	    json_object_is_type(v, json_type_string))
		s = strdup(json_object_get_string(v));
	json_object_put(o);
	json_tokener_free(tok);
	return s;
}

static bool is_ascii(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80)
			return false;
	return true;
}

/* owner (raw UTF-8) as json-c writes it, rewritten, read back strictly. */
static void round_trip(const char *owner, const char *what)
{
	struct json_object *o = json_object_new_object();
	const char *text, *why = "";
	char *ascii = NULL, *back = NULL;
	size_t len, at = 0;
	int ret;

	json_object_object_add(o, "owner", json_object_new_string(owner));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
	ret = json_ascii(text, strlen(text), &ascii, &len, &at, &why);
	if (!ret && ascii)
		back = strict_value(ascii, len);
	ok(!ret && ascii && is_ascii(ascii, len) && back && !strcmp(back, owner),
	   "%s: written as %s, read back strictly (json-c %s)", what,
	   ascii ? ascii : why, json_c_version());
	free(back);
	free(ascii);
	json_object_put(o);
}

static void rejects(const char *text, size_t want_at, const char *what)
{
	const char *why = NULL;
	char *ascii = NULL;
	size_t len, at = 0;
	int ret;

	ret = json_ascii(text, strlen(text), &ascii, &len, &at, &why);
	ok(ret == -EILSEQ && !ascii && at == want_at && why,
	   "%s: rejected at byte %zu (%s)", what, at, why ? why : "accepted");
	free(ascii);
}

int main(void)
{
	const char *plain = "{\"owner\":\"host-1\"}";
	char *ascii = (char *)"unset";
	size_t len = 1, at;
	const char *why;

	printf("TAP version 13\n");
	ok(!json_ascii(plain, strlen(plain), &ascii, &len, &at, &why) &&
	   !ascii && !len, "ASCII text is left as it is (no copy)");

	round_trip("x\"y\\z/\xc3\xbc", "quotes, backslash, slash and U+00FC");
	round_trip("\xe2\x82\xac \xe4\xb8\xad", "3-byte characters (U+20AC, U+4E2D)");
	round_trip("\xf0\x9f\x98\x80", "a 4-byte character as a surrogate pair");
	round_trip("\xef\xbf\xbf\xf4\x8f\xbf\xbf", "U+FFFF and U+10FFFF");

	rejects("{\"owner\":\"\xc3\"}", 10, "a truncated sequence");
	rejects("{\"owner\":\"\xc0\xaf\"}", 10, "an overlong '/'");
	rejects("{\"owner\":\"\xed\xa0\x80\"}", 10, "a UTF-8 encoded surrogate");
	rejects("{\"owner\":\"\xf4\x90\x80\x80\"}", 10, "past U+10FFFF");
	rejects("{\"owner\":\"\x80\"}", 10, "a lone continuation byte");
	rejects("{\"owner\":\"x\"\xc3\xbc}", 12, "a character outside a string");
	rejects("{\"owner\":\"\\\xc3\xbc\"}", 11, "a character after a backslash");
	rejects("{\"o\":\"\\\\\",\"\xc3\xbc\":1,\xc3\xbc}", 17,
		"an escaped backslash ends no string; the text after it counts");

	ok(utf8_valid("h\xc3\xb6st", 5) && !utf8_valid("h\xf6st", 4),
	   "utf8_valid: UTF-8 yes, Latin-1 no");

	printf("1..%d\n", n);
	return failed;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libidgen-client: what an answer of POST /v1/ids:next must be to be taken
 * (answer.h).  Anything else is a failed try, and the call goes on to
 * another host.
 */
#include <string.h>

#include <json-c/json.h>

#include "answer.h"

/*
 * Check a 200 answer: one JSON object (nothing after it but blanks) with
 * "ids", exactly want strings of canonical decimal IDs, strictly
 * increasing, and "layout_version", an integer: the version of the layout
 * in force at the first ID.  Other members are let through (the service
 * may add some).  NULL when good (ids filled), else what is wrong.
 */
const char *idgen_answer_check(const struct idgen_layouts *layouts, const char *body,
				size_t len, unsigned int want, uint64_t *ids)
{
	struct json_tokener *tok;
	struct json_object *obj, *arr, *ver;
	const char *why = NULL;
	size_t end, i;

	tok = json_tokener_new();
	if (!tok)
		return "out of memory";
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, body, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (!obj || json_tokener_get_error(tok) != json_tokener_success) {
		why = "not JSON";
		goto out;
	}
	while (end < len && strchr(" \t\r\n", body[end]) && body[end])
		end++;
	if (end != len) {
		why = "not JSON: something after the object";
		goto out;
	}
	if (!json_object_is_type(obj, json_type_object)) {
		why = "not a JSON object";
		goto out;
	}
	if (!json_object_object_get_ex(obj, "ids", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		why = "no \"ids\" array";
		goto out;
	}
	if (json_object_array_length(arr) != want) {
		why = "a wrong number of IDs";
		goto out;
	}
	for (i = 0; i < want; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		const char *s;

		if (!json_object_is_type(e, json_type_string)) {
			why = "an ID that is not a string";
			goto out;
		}
		s = json_object_get_string(e);
		if (strlen(s) != (size_t)json_object_get_string_len(e) ||
		    idgen_parse_id(s, &ids[i])) {
			why = "an ID that is not canonical decimal";
			goto out;
		}
		if (i && ids[i] <= ids[i - 1]) {
			why = "IDs not strictly increasing";
			goto out;
		}
	}
	if (!json_object_object_get_ex(obj, "layout_version", &ver) ||
	    !json_object_is_type(ver, json_type_int)) {
		why = "no integer \"layout_version\"";
		goto out;
	}
	if (json_object_get_int64(ver) !=
	    idgen_layout_at(layouts, ids[0] >> LIBIDGEN_NODE_SEQ_BITS)->version)
		why = "a layout_version other than the one in force for its IDs";
out:
	json_object_put(obj);
	json_tokener_free(tok);
	return why;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * jget(): the value at a dotted path in a JSON document, for the host
 * tests that read what ipttool wrote (meta.json and the like).
 */
#ifndef IPT_JSON_PATH_H
#define IPT_JSON_PATH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

/*
 * The value at @path in @o: keys separated by dots, a key that starts
 * with a digit an index into an array ("traces.0.cpu"); NULL if there
 * is none.
 */
static inline struct json_object *jget(struct json_object *o, const char *path)
{
	char buf[128], *save = NULL, *k;

	snprintf(buf, sizeof(buf), "%s", path);
	for (k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save)) {
		if (*k >= '0' && *k <= '9') {
			if (!json_object_is_type(o, json_type_array))
				return NULL;
			o = json_object_array_get_idx(o, (size_t)atoi(k));
		} else if (!json_object_object_get_ex(o, k, &o)) {
			return NULL;
		}
	}
	return o;
}

#endif /* IPT_JSON_PATH_H */

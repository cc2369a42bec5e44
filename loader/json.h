/* SPDX-License-Identifier: GPL-2.0 */
/* A small streaming JSON writer: objects, arrays, strings, numbers. */
#ifndef IOURING_BPF_JSON_H
#define IOURING_BPF_JSON_H

#include <stdbool.h>
#include <stdio.h>

struct json;

struct json *json_new(FILE *f);
/* Kept in memory until json_destroy() writes it to out; json_discard()
 * drops it (an error object takes its place: one document either way). */
struct json *json_new_buffered(FILE *out);
void json_destroy(struct json *j);	/* ends with a newline */
void json_discard(struct json *j);
void json_key(struct json *j, const char *key);
void json_object_start(struct json *j);
void json_object_end(struct json *j);
void json_array_start(struct json *j);
void json_array_end(struct json *j);
void json_string(struct json *j, const char *s);
void json_int(struct json *j, long long v);
void json_uint(struct json *j, unsigned long long v);
void json_double(struct json *j, double v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);

/* key + value in one call */
#define json_kv_string(j, k, v) (json_key(j, k), json_string(j, v))
#define json_kv_int(j, k, v) (json_key(j, k), json_int(j, v))
#define json_kv_uint(j, k, v) (json_key(j, k), json_uint(j, v))
#define json_kv_bool(j, k, v) (json_key(j, k), json_bool(j, v))

#endif

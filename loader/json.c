// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>

#include "json.h"

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH];	/* no element yet at this level */
	bool after_key;
};

struct json *json_new(FILE *f)
{
	struct json *j = calloc(1, sizeof(*j));

	if (j) {
		j->f = f;
		j->first[0] = true;
	}
	return j;
}

void json_destroy(struct json *j)
{
	if (!j)
		return;
	fputc('\n', j->f);
	fflush(j->f);
	free(j);
}

/* Before a value or key: a comma unless it is the first at its level. */
static void json_sep(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
}

static void json_raw_string(struct json *j, const char *s)
{
	fputc('"', j->f);
	for (; s && *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(j->f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", j->f);
		else if (c == '\t')
			fputs("\\t", j->f);
		else if (c < 0x20)
			fprintf(j->f, "\\u%04x", c);
		else
			fputc(c, j->f);
	}
	fputc('"', j->f);
}

void json_key(struct json *j, const char *key)
{
	json_sep(j);
	json_raw_string(j, key);
	fputc(':', j->f);
	j->after_key = true;
}

static void json_open(struct json *j, char c)
{
	json_sep(j);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void json_close(struct json *j, char c)
{
	fputc(c, j->f);
	if (j->depth)
		j->depth--;
}

void json_object_start(struct json *j) { json_open(j, '{'); }
void json_object_end(struct json *j) { json_close(j, '}'); }
void json_array_start(struct json *j) { json_open(j, '['); }
void json_array_end(struct json *j) { json_close(j, ']'); }

void json_string(struct json *j, const char *s)
{
	json_sep(j);
	if (s)
		json_raw_string(j, s);
	else
		fputs("null", j->f);
}

void json_int(struct json *j, long long v)
{
	json_sep(j);
	fprintf(j->f, "%lld", v);
}

void json_uint(struct json *j, unsigned long long v)
{
	json_sep(j);
	fprintf(j->f, "%llu", v);
}

void json_double(struct json *j, double v)
{
	json_sep(j);
	fprintf(j->f, "%.3f", v);
}

void json_bool(struct json *j, bool v)
{
	json_sep(j);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j)
{
	json_sep(j);
	fputs("null", j->f);
}

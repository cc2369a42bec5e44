// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE	/* open_memstream() */
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH];	/* no element yet at this level */
	bool after_key;
	FILE *out;			/* buffered: where json_destroy() writes */
	char *buf;
	size_t len;
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

struct json *json_new_buffered(FILE *out)
{
	struct json *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->f = open_memstream(&j->buf, &j->len);
	if (!j->f) {
		free(j);
		return NULL;
	}
	j->out = out;
	j->first[0] = true;
	return j;
}

static void json_free(struct json *j)
{
	if (j->out) {
		fclose(j->f);
		free(j->buf);
	}
	free(j);
}

void json_destroy(struct json *j)
{
	if (!j)
		return;
	fputc('\n', j->f);
	fflush(j->f);
	if (j->out) {
		fwrite(j->buf, 1, j->len, j->out);
		fflush(j->out);
	}
	json_free(j);
}

void json_discard(struct json *j)
{
	if (!j)
		return;
	if (!j->out)	/* unbuffered output is out already: end it at least */
		json_destroy(j);
	else
		json_free(j);
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

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf;	/* bounds of the second byte */

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* A JSON string: quotes, backslashes and control characters escaped; each
 * byte that is not part of well-formed UTF-8 becomes U+FFFD. */
static void json_raw_string(struct json *j, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");

	fputc('"', j->f);
	while (*s) {
		unsigned char c = *s;
		size_t n = utf8_len(s);

		if (!n) {
			fputs("\\ufffd", j->f);
			s++;
			continue;
		}
		if (c == '"' || c == '\\')
			fprintf(j->f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", j->f);
		else if (c == '\t')
			fputs("\\t", j->f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(j->f, "\\u%04x", c);
		else
			fwrite(s, 1, n, j->f);
		s += n;
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

// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf's output, for every command: errors and usage errors (text
 * or a JSON error object), warnings, libbpf's messages (kept for the tail
 * of a verifier log, or printed with -d), and integers of a policy's
 * globals as text or JSON.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <liburing-bpf.h>

#include "loader.h"

/* the JSON error object on stdout: {"error", "errno"[, "usage": true]} */
static void json_error(const char *msg, int err, bool usage)
{
	struct json *e = json_new(stdout);

	json_object_start(e);
	json_kv_string(e, "error", msg);
	json_kv_int(e, "errno", err);
	if (usage)
		json_kv_bool(e, "usage", true);
	json_object_end(e);
	json_destroy(e);
}

int fail(int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (json_output)
		json_error(msg, err > 0 ? -err : err, false);
	else
		fprintf(stderr, "%s: %s\n", prog_name, msg);
	return err > 0 ? -err : err;
}

int usage_fail(void (*usage)(FILE *), const char *cmd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (json_output) {
		char text[1200];

		snprintf(text, sizeof(text), "%s%s%s", cmd ? cmd : "", cmd ? ": " : "", msg);
		json_error(text, -EINVAL, true);
	} else {
		fprintf(stderr, "%s%s%s: %s\n", prog_name, cmd ? " " : "", cmd ? cmd : "", msg);
		if (usage)
			usage(stderr);
	}
	return USAGE_ERROR;
}

void warn(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: warning: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* libbpf's messages: printed with -d, else kept for a verifier log tail. */
static char log_buf[1 << 17];
static size_t log_len;

void libbpf_log_reset(void)
{
	log_len = 0;
	log_buf[0] = 0;
}

int libbpf_log_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int n;

	if (debug_output)
		return vfprintf(stderr, fmt, ap);
	if (level == LIBBPF_DEBUG)
		return 0;
	if (log_len > sizeof(log_buf) / 2) {	/* keep the newest half */
		memmove(log_buf, log_buf + log_len - sizeof(log_buf) / 4, sizeof(log_buf) / 4);
		log_len = sizeof(log_buf) / 4;
	}
	n = vsnprintf(log_buf + log_len, sizeof(log_buf) - log_len, fmt, ap);
	if (n > 0)
		log_len += (size_t)n < sizeof(log_buf) - log_len ? (size_t)n :
			   sizeof(log_buf) - log_len - 1;
	return n;
}

/* The end of the last verifier log libbpf printed (or of its messages). */
void libbpf_log_print_tail(unsigned int lines)
{
	char *end = strstr(log_buf, "-- END PROG LOAD LOG --"), *start;

	if (!log_len)
		return;
	for (char *next = end; next; next = strstr(end + 1, "-- END PROG LOAD LOG --"))
		end = next;
	if (!end)
		end = log_buf + log_len;
	start = end;
	while (start > log_buf && lines) {
		start--;
		if (*start == '\n' && start + 1 < end)
			lines--;
	}
	if (*start == '\n')
		start++;
	fprintf(stderr, "%s: end of the verifier log (-d prints all of it):\n", prog_name);
	fwrite(start, 1, end - start, stderr);
}

struct int_val int_from_bytes(const void *p, unsigned int size, bool is_signed)
{
	struct int_val v = { .is_signed = is_signed };

	switch (size) {
	case 1: v.bits = is_signed ? (__u64)(__s64)*(const __s8 *)p : *(const __u8 *)p; break;
	case 2: v.bits = is_signed ? (__u64)(__s64)*(const __s16 *)p : *(const __u16 *)p; break;
	case 4: v.bits = is_signed ? (__u64)(__s64)*(const __s32 *)p : *(const __u32 *)p; break;
	case 8: v.bits = *(const __u64 *)p; break;
	}
	return v;
}

struct int_val policy_global_int(const struct iouring_bpf_policy *p,
				 const struct iouring_bpf_global *g)
{
	__u64 v = 0;

	if (g->size > sizeof(v) || iouring_bpf_policy_get_global(p, g->name, &v, g->size))
		return (struct int_val){ .is_signed = g->flags & IOURING_BPF_GLOBAL_SIGNED };
	return int_from_bytes(&v, g->size, g->flags & IOURING_BPF_GLOBAL_SIGNED);
}

const char *int_val_text(struct int_val v, char *buf, size_t size)
{
	if (v.is_signed)
		snprintf(buf, size, "%lld", (long long)v.bits);
	else
		snprintf(buf, size, "%llu", v.bits);
	return buf;
}

void json_int_val(struct json *j, struct int_val v)
{
	if (v.is_signed)
		json_int(j, (long long)v.bits);
	else
		json_uint(j, v.bits);
}

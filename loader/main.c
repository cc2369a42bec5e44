// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf: load, run, list, inspect and unload io_uring BPF policies.
 * Commands live in a table, as in bpftool; each parses its own arguments
 * with the options interface.c describes. Exit status: 0 done, 1 failed,
 * 2 usage error.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <liburing-bpf.h>

#include "interface.h"
#include "loader.h"
#include "ublk_cmd.h"

bool json_output;
bool debug_output;
struct json *jw;
const char *prog_name = "iouring-bpf";

#define IOURING_BPF_VERSION LIBURING_BPF_VERSION	/* one version everywhere */

int fail(int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (json_output) {
		struct json *e = json_new(stdout);

		json_object_start(e);
		json_kv_string(e, "error", msg);
		json_kv_int(e, "errno", err > 0 ? -err : err);
		json_object_end(e);
		json_destroy(e);
	} else {
		fprintf(stderr, "%s: %s\n", prog_name, msg);
	}
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
		struct json *e = json_new(stdout);
		char text[1200];

		snprintf(text, sizeof(text), "%s%s%s", cmd ? cmd : "", cmd ? ": " : "", msg);
		json_object_start(e);
		json_kv_string(e, "error", text);
		json_kv_int(e, "errno", -EINVAL);
		json_kv_bool(e, "usage", true);
		json_object_end(e);
		json_destroy(e);
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

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
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

static int cmd_help(int argc, char **argv);

/* what runs each command of the interface table (interface.c) */
static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "load", cmd_load },
	{ "list", cmd_list },
	{ "unload", cmd_unload },
	{ "inspect", cmd_inspect },
	{ "ublk", cmd_ublk },
	{ "sandbox", cmd_sandbox },
	{ "help", cmd_help },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [-j|--json] [-d|--debug] COMMAND ...\n"
		   "       %s COMMAND --help\n"
		   "       %s --version\n\ncommands:\n", prog_name, prog_name, prog_name);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		iface_print_synopsis(f, "  ", "  ", commands[i].name, NULL);
	fputc('\n', f);
	iface_print_summaries(f, NULL);
	fprintf(f, "\noptions:\n");
	iface_print_global_options(f);
	fprintf(f, "-j and -d may also follow the command, up to a '--'. A long option's\n"
		   "value follows it as the next word or after '='.\n"
		   "See iouring-bpf(8).\n");
}

static void print_version(void)
{
	if (json_output) {
		jw = json_new(stdout);
		json_object_start(jw);
		json_kv_string(jw, "version", IOURING_BPF_VERSION);
		json_kv_string(jw, "libbpf", libbpf_version_string());
		json_object_end(jw);
		json_destroy(jw);
	} else {
		printf("%s %s (libbpf %s)\n", prog_name, IOURING_BPF_VERSION, libbpf_version_string());
	}
}

/* help; help --options (hidden): the interface, for the tests (interface.c) */
static int cmd_help(int argc, char **argv)
{
	struct iface_parser p;
	int c;

	iface_parse_init(&p, "help", NULL, argc, argv, 0);
	while ((c = iface_parse_next(&p)) != IFACE_END) {
		if (c == OPT_OPTIONS) {
			iface_dump(stdout);
			return 0;
		}
	}
	usage(stdout);
	return 0;
}

/* the global flag ARG sets (false: ARG is no global flag) */
static bool global_flag(const char *arg)
{
	if (!strcmp(arg, "-j") || !strcmp(arg, "--json"))
		return json_output = true;
	if (!strcmp(arg, "-d") || !strcmp(arg, "--debug"))
		return debug_output = true;
	return false;
}

int main(int argc, char **argv)
{
	struct iface_parser p;
	char **rest;
	int i, n, c, nrest, ret;

	/*
	 * -j/--json and -d/--debug may come anywhere up to a "--" (after the
	 * command too: `ublk add ... --json`); taken out here, so commands
	 * never see them. First, so usage errors are JSON too.
	 */
	for (i = 1, n = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (i < argc)
				argv[n++] = argv[i++];
			break;
		}
		if (!global_flag(argv[i]))
			argv[n++] = argv[i];
	}
	argc = n;
	argv[argc] = NULL;
	iface_parse_init(&p, NULL, NULL, argc - 1, argv + 1, IFACE_STOP_AT_OPERAND);
	while ((c = iface_parse_next(&p)) != IFACE_END) {
		if (c == OPT_HELP)
			return usage(stdout), 0;
		if (c == OPT_VERSION)
			return print_version(), 0;
		if (c == IFACE_UNKNOWN)
			return usage_fail(usage, NULL, "unknown option '%s'", p.value), 2;
	}
	rest = iface_parse_rest(&p, &nrest);
	if (!nrest)
		return usage_fail(usage, NULL, "which command? (load, list, unload, inspect, ublk, sandbox)"), 2;
	libbpf_set_print(libbpf_print);
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++) {
		if (strcmp(rest[0], commands[k].name))
			continue;
		ret = commands[k].fn(nrest - 1, rest + 1);
		return ret == USAGE_ERROR ? 2 : ret ? 1 : 0;
	}
	usage_fail(NULL, NULL, "unknown command '%s' (commands: load, list, unload, inspect, ublk, sandbox)",
		   rest[0]);
	return 2;
}

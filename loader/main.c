// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf: load, run, list, inspect and unload io_uring BPF policies.
 * Commands live in a table, as in bpftool; each parses its own arguments
 * with the options interface.c describes. Exit status: 0 done, 1 failed,
 * 2 usage error. Here: the global options, the command table and
 * --version; the output every command shares is in output.c.
 */
#include <bpf/libbpf.h>
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
	libbpf_set_print(libbpf_log_print);
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

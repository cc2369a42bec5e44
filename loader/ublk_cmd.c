// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf ublk: ublk block devices served by BPF policies inside the
 * kernel (loop, split, bpf) or by the copying user-space loop (loop-user).
 * Here: the ublk command's dispatcher and what its subcommands share.
 * add is in ublk_add.c, list and del in ublk_admin.c, the daemon in
 * ublk_daemon.c and its state file in ublk_state.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "interface.h"
#include "loader.h"
#include "ublk_cmd.h"

int usage_error(void (*usage)(FILE *), const char *sub, const char *fmt, ...)
{
	char cmd[32], msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "ublk %s", sub);
	return usage_fail(usage, cmd, "%s", msg);
}

int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

const char *driver_error(int err)
{
	if (err == -ENOENT || err == -ENODEV)
		return "/dev/ublk-control is missing: the ublk driver is not loaded (modprobe "
		       "ublk_drv, or a kernel with CONFIG_BLK_DEV_UBLK)";
	if (err == -EPERM || err == -EACCES)
		return "not allowed to use /dev/ublk-control: ublk devices need root "
		       "(CAP_SYS_ADMIN)";
	return strerror(-err);
}

static void ublk_usage(FILE *f)
{
	iface_print_usage(f, "ublk", NULL);
	fprintf(f, "       %s ublk SUBCOMMAND --help\n\n"
		   "ublk block devices (/dev/ublkbN) served by a BPF policy inside the kernel with\n"
		   "zero copy (loop, split, bpf), or by a copying loop in user space (loop-user).\n",
		prog_name);
	iface_print_summaries(f, "ublk");
	fprintf(f, "State files and daemon logs: %s/ID, ID.log\n", ublk_state_dir());
}

int cmd_ublk(int argc, char **argv)
{
	struct iface_parser p;
	char **sub;
	int c, n;

	/* options of ublk itself (--help) come before the subcommand */
	iface_parse_init(&p, "ublk", NULL, argc, argv, IFACE_STOP_AT_OPERAND);
	while ((c = iface_parse_next(&p)) != IFACE_END) {
		if (c == OPT_HELP)
			return ublk_usage(stdout), 0;
		return usage_fail(ublk_usage, "ublk",
				  "unknown option '%s' (the subcommand comes first: add, list, del)",
				  p.value);
	}
	sub = iface_parse_rest(&p, &n);
	if (!n)
		return usage_fail(ublk_usage, "ublk", "which subcommand? (add, list, del)");
	if (!strcmp(sub[0], "help"))
		return ublk_usage(stdout), 0;
	if (!strcmp(sub[0], "add"))
		return cmd_ublk_add(n - 1, sub + 1);
	if (!strcmp(sub[0], "list"))
		return cmd_ublk_list(n - 1, sub + 1);
	if (!strcmp(sub[0], "del"))
		return cmd_ublk_del(n - 1, sub + 1);
	return usage_fail(ublk_usage, "ublk", "unknown subcommand '%s' (add, list, del)", sub[0]);
}

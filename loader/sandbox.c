// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf sandbox: run a program with io_uring narrowed for it and
 * everything it forks and execs: no_new_privs, then task filters (and an
 * optional opcode allowlist), then exec. The rules are compiled to classic
 * BPF by liburing-bpf.
 */
#define _GNU_SOURCE	/* O_TMPFILE, O_PATH, syscall() */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>
#include <linux/openat2.h>

#include <liburing-bpf.h>
#include "interface.h"
#include "loader.h"

#define MAX_LIST 64

static void sandbox_usage(FILE *f)
{
	iface_print_usage(f, "sandbox", NULL);
	fprintf(f,
		"\nRuns PROGRAM with io_uring requests filtered for it and every process it\n"
		"forks and execs (no_new_privs is set first). Rules only narrow; none\n"
		"can be lifted by PROGRAM. Rules bind only rings created after them, so\n"
		"PROGRAM may not inherit a ring: an io_uring descriptor open without\n"
		"FD_CLOEXEC here is refused (EBUSY).\n"
		"The kernel needs IORING_REGISTER_BPF_FILTER (Linux 7.0, or this project's\n"
		"6.12 series).\n\n"
		"options:\n");
	iface_print_options(f, "sandbox", NULL);
}

struct name_val {
	const char *name;
	unsigned long long val;
};

static const struct name_val families[] = {
	{ "unix", AF_UNIX }, { "local", AF_UNIX }, { "inet", AF_INET }, { "inet6", AF_INET6 },
	{ "netlink", AF_NETLINK }, { "packet", AF_PACKET },
};

static const struct name_val open_flags[] = {
	{ "creat", O_CREAT }, { "trunc", O_TRUNC }, { "excl", O_EXCL }, { "append", O_APPEND },
	{ "tmpfile", O_TMPFILE }, { "path", O_PATH }, { "wronly", O_WRONLY }, { "rdwr", O_RDWR },
};

static const struct name_val resolve_flags[] = {
	{ "in_root", RESOLVE_IN_ROOT }, { "beneath", RESOLVE_BENEATH },
	{ "no_symlinks", RESOLVE_NO_SYMLINKS }, { "no_magiclinks", RESOLVE_NO_MAGICLINKS },
	{ "no_xdev", RESOLVE_NO_XDEV },
};

/* one name of @tbl, or a number; 0 and *val, or -EINVAL */
static int lookup(const struct name_val *tbl, size_t n, const char *s, unsigned long long *val)
{
	char *end;

	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(tbl[i].name, s)) {
			*val = tbl[i].val;
			return 0;
		}
	errno = 0;
	*val = strtoull(s, &end, 0);
	return (!*s || *end || errno) ? -EINVAL : 0;
}

/*
 * Split @arg at commas into @out (at most MAX_LIST): opcodes (@tbl NULL)
 * or names of @tbl. The count, or USAGE_ERROR after the message.
 */
static int parse_list(const char *opt, char *arg, const struct name_val *tbl, size_t n,
		      unsigned long long *out)
{
	int nr = 0;

	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		unsigned long long v;
		int op;

		if (nr == MAX_LIST)
			return usage_fail(sandbox_usage, "sandbox", "%s: more than %d names",
					  opt, MAX_LIST);
		if (!tbl) {
			op = iouring_bpf_opcode_from_name(tok);
			if (op < 0)
				return usage_fail(sandbox_usage, "sandbox",
						  "%s: no io_uring opcode '%s'", opt, tok);
			v = (unsigned int)op;
		} else if (lookup(tbl, n, tok, &v)) {
			return usage_fail(sandbox_usage, "sandbox", "%s: unknown name '%s'",
					  opt, tok);
		}
		out[nr++] = v;
	}
	if (!nr)
		return usage_fail(sandbox_usage, "sandbox", "%s: an empty list", opt);
	return nr;
}

/*
 * A profile file: one JSON object whose keys are the long options without
 * their dashes ("-" may be "_"), each a string, an array of strings or
 * (deny-rest) true/false:
 *   { "allow": ["accept", "recv", "send"], "deny-rest": true,
 *     "socket-family": ["inet", "inet6"] }
 * Each becomes "--KEY VALUE" (arrays joined with commas) in *argv_out.
 */
struct profile_args {
	char *argv[64];
	int argc;
};

static void skip_ws(const char **p)
{
	while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
		(*p)++;
}

/* a JSON string without escapes other than \" and \\ into a new buffer */
static char *json_str(const char **p)
{
	const char *s = *p;
	size_t n = 0;
	char *out;

	if (*s != '"')
		return NULL;
	out = malloc(strlen(s) + 1);
	if (!out)
		return NULL;
	for (s++; *s && *s != '"'; s++) {
		if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
			s++;
		else if (*s == '\\' || (unsigned char)*s < 0x20)
			break;
		out[n++] = *s;
	}
	if (*s != '"') {
		free(out);
		return NULL;
	}
	out[n] = '\0';
	*p = s + 1;
	return out;
}

static int add_arg(struct profile_args *a, char *arg)
{
	if (!arg || a->argc == (int)(sizeof(a->argv) / sizeof(a->argv[0])) - 1) {
		free(arg);
		return -EINVAL;
	}
	a->argv[a->argc++] = arg;
	return 0;
}

static int read_profile(const char *path, struct profile_args *a)
{
	char buf[16384], *key = NULL;
	const char *p = buf;
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return fail(-errno, "profile %s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	skip_ws(&p);
	if (*p++ != '{')
		goto bad;
	for (;;) {
		char opt[64];

		skip_ws(&p);
		if (*p == '}')
			break;
		key = json_str(&p);
		if (!key || strlen(key) > 40)
			goto bad;
		for (char *c = key; *c; c++)
			if (*c == '_')
				*c = '-';
		snprintf(opt, sizeof(opt), "--%s", key);
		free(key);
		key = NULL;
		skip_ws(&p);
		if (*p++ != ':')
			goto bad;
		skip_ws(&p);
		if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
			if (*p == 't' && add_arg(a, strdup(opt)))
				goto bad;
			p += *p == 't' ? 4 : 5;
		} else if (*p == '"') {
			if (add_arg(a, strdup(opt)) || add_arg(a, json_str(&p)))
				goto bad;
		} else if (*p == '[') {
			char list[4096] = "";

			p++;
			for (;;) {
				char *item;

				skip_ws(&p);
				if (*p == ']') {
					p++;
					break;
				}
				item = json_str(&p);
				if (!item || strlen(list) + strlen(item) + 2 > sizeof(list)) {
					free(item);
					goto bad;
				}
				if (*list)
					strcat(list, ",");
				strcat(list, item);
				free(item);
				skip_ws(&p);
				if (*p == ',')
					p++;
			}
			if (add_arg(a, strdup(opt)) || add_arg(a, strdup(list)))
				goto bad;
		} else {
			goto bad;
		}
		skip_ws(&p);
		if (*p == ',')
			p++;
	}
	return 0;
bad:
	free(key);
	return fail(-EINVAL, "profile %s: not a flat JSON object of strings, string arrays "
		    "and booleans (near byte %td)", path, p - buf);
}

/*
 * A task restriction binds only rings created after it: a ring this
 * process holds without FD_CLOEXEC would reach PROGRAM unfiltered. Refuse
 * to run PROGRAM with one rather than pass it on.
 */
static int refuse_inherited_rings(void)
{
	char target[256];
	struct dirent *de;
	int fd, flags, ret = 0;
	DIR *d;

	d = opendir("/proc/self/fd");
	if (!d)
		return fail(-errno, "cannot list /proc/self/fd: %s", strerror(errno));
	while (!ret && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		fd = atoi(de->d_name);
		if (fd == dirfd(d))
			continue;
		flags = fcntl(fd, F_GETFD);
		if (flags < 0 || (flags & FD_CLOEXEC))
			continue;
		if (fd_is_io_uring(getpid(), fd, target, sizeof(target)))
			ret = fail(-EBUSY, "descriptor %d is an io_uring created before the sandbox, "
				   "which its rules would not bind: close it or set FD_CLOEXEC", fd);
	}
	closedir(d);
	return ret;
}

/*
 * Has this kernel IORING_REGISTER_BPF_FILTER for the calling task? -EINVAL
 * from a registration means either "no such registration" or "a rule this
 * kernel does not know"; a registration of nothing tells them apart: a
 * kernel that has it copies the (NULL) filter in and fails with -EFAULT.
 * 1: it has, 0: it has not, -1: cannot tell.
 */
static int kernel_has_task_filters(void)
{
	long ret = syscall(SYS_io_uring_register, IOURING_BPF_FILTER_TASK,
			   IOURING_BPF_REGISTER_BPF_FILTER, NULL, 1);

	if (!ret || errno == EFAULT)
		return 1;
	if (errno == EINVAL || errno == ENOSYS)	/* ENOSYS: no io_uring at all */
		return 0;
	return -1;
}

/* Why registering the filters of option @opt failed (@err is -errno). */
static int filter_fail(int err, const char *opt)
{
	int has = err == -EINVAL ? kernel_has_task_filters() : 1;

	if (!has)
		return fail(err, "cannot register io_uring filters (%s): this kernel has no "
			    "IORING_REGISTER_BPF_FILTER (Linux 7.0, or this project's 6.12 series)",
			    opt);
	if (has < 0)
		return fail(err, "cannot register io_uring filters (%s): %s: either this kernel "
			    "has no IORING_REGISTER_BPF_FILTER (Linux 7.0, or this project's 6.12 "
			    "series) or it does not know a rule", opt, strerror(-err));
	if (err == -EINVAL)
		return fail(err, "cannot register io_uring filters (%s): %s: the kernel has "
			    "IORING_REGISTER_BPF_FILTER but refused a rule (an opcode or flag "
			    "it does not know?)", opt, strerror(-err));
	return fail(err, "cannot register io_uring filters (%s): %s", opt, strerror(-err));
}

/*
 * --profile FILE, the first option: the profile's options, then the
 * command line's (which add to or replace them). A new argument vector in
 * *out, its [0] the command's name as getopt_long() wants; it is needed
 * until the program runs (execvp() takes its words), so it is never freed.
 * 0, or the error fail() printed.
 */
static int expand_profile(const char *path, char *command, char **rest, int nrest, char ***out,
			  int *nout)
{
	struct profile_args pa = { .argc = 0 };
	char **all;
	int ret;

	pa.argv[pa.argc++] = command;
	ret = read_profile(path, &pa);
	if (ret)
		return ret;
	all = calloc(pa.argc + nrest + 1, sizeof(*all));
	if (!all)
		return fail(-ENOMEM, "profile %s: %s", path, strerror(ENOMEM));
	memcpy(all, pa.argv, pa.argc * sizeof(*all));
	memcpy(all + pa.argc, rest, nrest * sizeof(*all));
	*nout = pa.argc + nrest;
	all[*nout] = NULL;
	*out = all;
	return 0;
}

int cmd_sandbox(int argc, char **argv)
{
	unsigned long long allow[MAX_LIST], deny[MAX_LIST], sock[MAX_LIST], conn[MAX_LIST];
	unsigned long long tmp[MAX_LIST], open_deny = 0, resolve = 0;
	int nr_allow = 0, nr_deny = 0, nr_sock = 0, nr_conn = 0, c, ret, nprog;
	unsigned int ops[MAX_LIST];
	int fams[MAX_LIST];
	bool deny_rest = false;
	const char *rule;
	struct iface_parser p;
	char **prog;

	iface_parse_init(&p, "sandbox", NULL, argc, argv, IFACE_STOP_AT_OPERAND);
	c = iface_parse_next(&p);
	if (c == OPT_PROFILE) {
		char **all = NULL, **rest;
		int nall = 0, nrest;

		rest = iface_parse_rest(&p, &nrest);
		ret = expand_profile(p.value, argv[-1], rest, nrest, &all, &nall);
		if (ret)
			return ret;
		iface_parse_init(&p, "sandbox", NULL, nall - 1, all + 1, IFACE_STOP_AT_OPERAND);
		c = iface_parse_next(&p);
	}
	for (; c != IFACE_END; c = iface_parse_next(&p)) {
		char *v = (char *)p.value;	/* a word of argv: strtok() may cut it */
		int n;

		switch (c) {
		case OPT_ALLOW:
			nr_allow = parse_list("--allow", v, NULL, 0, allow);
			if (nr_allow < 0)
				return nr_allow;
			break;
		case OPT_DENY_REST:
			deny_rest = true;
			break;
		case OPT_DENY:
			nr_deny = parse_list("--deny", v, NULL, 0, deny);
			if (nr_deny < 0)
				return nr_deny;
			break;
		case OPT_SOCKET_FAMILY:
			nr_sock = parse_list("--socket-family", v, families,
					     sizeof(families) / sizeof(families[0]), sock);
			if (nr_sock < 0)
				return nr_sock;
			break;
		case OPT_CONNECT_FAMILY:
			nr_conn = parse_list("--connect-family", v, families,
					     sizeof(families) / sizeof(families[0]), conn);
			if (nr_conn < 0)
				return nr_conn;
			break;
		case OPT_OPEN_DENY:
		case OPT_OPEN_RESOLVE:
			n = c == OPT_OPEN_DENY ?
			    parse_list("--open-deny", v, open_flags,
				       sizeof(open_flags) / sizeof(open_flags[0]), tmp) :
			    parse_list("--open-resolve", v, resolve_flags,
				       sizeof(resolve_flags) / sizeof(resolve_flags[0]), tmp);
			if (n < 0)
				return n;
			for (int i = 0; i < n; i++)
				*(c == OPT_OPEN_DENY ? &open_deny : &resolve) |= tmp[i];
			break;
		case OPT_PROFILE:
			return usage_fail(sandbox_usage, "sandbox", "--profile must come first "
					  "(the options after it add to or replace the profile's)");
		case OPT_HELP:
			sandbox_usage(stdout);
			return 0;
		case IFACE_NO_VALUE:
			return usage_fail(sandbox_usage, "sandbox", "%s needs a value", p.value);
		default:
			return usage_fail(sandbox_usage, "sandbox", "unknown option '%s'", p.value);
		}
	}
	prog = iface_parse_rest(&p, &nprog);
	if (!nprog)
		return usage_fail(sandbox_usage, "sandbox", "which program? (sandbox ... -- PROGRAM)");
	if (deny_rest && !nr_allow)
		return usage_fail(sandbox_usage, "sandbox", "--deny-rest needs --allow");

	ret = refuse_inherited_rings();
	if (ret)
		return ret;
	ret = iouring_bpf_no_new_privs();
	if (ret)
		return fail(ret, "cannot set no_new_privs: %s", strerror(-ret));
	/* the payload filters first: DENY_REST only fills opcodes with none */
	for (int i = 0; i < nr_sock; i++)
		fams[i] = (int)sock[i];
	rule = "--socket-family";
	if (nr_sock && (ret = iouring_bpf_filter_socket_families(IOURING_BPF_FILTER_TASK,
								 fams, nr_sock)))
		goto err;
	for (int i = 0; i < nr_conn; i++)
		fams[i] = (int)conn[i];
	rule = "--connect-family";
	if (nr_conn && (ret = iouring_bpf_filter_connect_families(IOURING_BPF_FILTER_TASK,
								  fams, nr_conn)))
		goto err;
	rule = open_deny ? "--open-deny" : "--open-resolve";
	if ((open_deny || resolve) &&
	    (ret = iouring_bpf_filter_open(IOURING_BPF_FILTER_TASK, open_deny, resolve)))
		goto err;
	rule = "--deny";
	for (int i = 0; i < nr_deny; i++)
		if ((ret = iouring_bpf_filter_deny(IOURING_BPF_FILTER_TASK, (unsigned int)deny[i])))
			goto err;
	for (int i = 0; i < nr_allow; i++)
		ops[i] = (unsigned int)allow[i];
	rule = "--allow";
	if (nr_allow && (ret = iouring_bpf_filter_allow(IOURING_BPF_FILTER_TASK, ops, nr_allow,
							deny_rest)))
		goto err;

	execvp(prog[0], prog);
	return fail(-errno, "cannot run %s: %s", prog[0], strerror(errno));
err:
	return filter_fail(ret, rule);
}

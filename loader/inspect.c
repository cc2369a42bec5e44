// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf inspect PROG.o: struct_ops maps and their programs, the
 * globals that can be set, the kfuncs the programs call, and whether the
 * running kernel has what the object needs.
 */
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <unistd.h>
#include <liburing-bpf.h>
#include <stdlib.h>
#include <string.h>

#include "interface.h"
#include "loader.h"

static void inspect_usage(FILE *f)
{
	iface_print_usage(f, "inspect", NULL);
	fprintf(f, "\nWhat the object holds and needs: io_uring_bpf_ops maps and their programs,\n"
		   "globals (which can be set with load --set, and their defaults), the kfuncs\n"
		   "its programs call and whether the running kernel has them. Needs no\n"
		   "privileges; nothing is loaded.\n"
		   "With --pid: what is in force on each io_uring ring of process PID\n"
		   "(no_new_privs, allowlists, request filters by opcode).\n\n"
		   "options:\n");
	iface_print_options(f, "inspect", NULL);
}

/* inspect --pid: the rings of a process and what restricts them */
static int inspect_pid(const char *arg)
{
	char path[64], target[256], line[256];
	struct dirent *de;
	int pid, nnp = -1, rings = 0;
	char *end;
	FILE *f;
	DIR *d;

	pid = (int)strtol(arg, &end, 10);
	if (!*arg || *end || pid <= 0)
		return usage_fail(inspect_usage, "inspect", "--pid: not a process id '%s'", arg);
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return fail(-errno, "process %d: %s", pid, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "NoNewPrivs:\t%d", &nnp) == 1)
			break;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return fail(-errno, "cannot list the files of process %d: %s", pid, strerror(errno));
	if (json_output) {
		jw = json_new(stdout);
		json_object_start(jw);
		json_key(jw, "pid");
		json_int(jw, pid);
		json_key(jw, "no_new_privs");
		json_bool(jw, nnp == 1);
		json_key(jw, "rings");
		json_array_start(jw);
	} else {
		printf("process %d: no_new_privs %s\n", pid, nnp == 1 ? "yes" : "no");
	}
	while ((de = readdir(d))) {
		struct iouring_bpf_ring_filters rf;
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.' || !fd_is_io_uring(pid, fd, target, sizeof(target)))
			continue;
		if (iouring_bpf_ring_filters_read(pid, fd, &rf))
			continue;
		rings++;
		if (json_output) {
			json_object_start(jw);
			json_kv_int(jw, "ring_fd", fd);
			json_key(jw, "reported");
			json_bool(jw, rf.reported);
			json_key(jw, "sqe_allowlist");
			json_bool(jw, rf.sqe_restricted);
			json_key(jw, "register_allowlist");
			json_bool(jw, rf.reg_restricted);
			json_key(jw, "filters");
			json_object_start(jw);
			for (unsigned int op = 0; op < 256; op++) {
				const char *name = iouring_bpf_opcode_name(op);
				char num[8];

				if (!rf.nr_filters[op] && !rf.deny_rest[op])
					continue;
				snprintf(num, sizeof(num), "%u", op);
				json_key(jw, name ? name : num);
				json_string(jw, rf.deny_rest[op] ? (rf.nr_filters[op] ? "filtered, denied" :
								   "denied") : "filtered");
			}
			json_object_end(jw);
			json_object_end(jw);
			continue;
		}
		printf("ring fd %d:", fd);
		if (!rf.reported) {
			printf(" this kernel does not show restrictions or filters\n");
			continue;
		}
		printf(" SQE allowlist %s, register allowlist %s\n",
		       rf.sqe_restricted ? "yes" : "no", rf.reg_restricted ? "yes" : "no");
		unsigned int denied = 0, open = 0;

		for (unsigned int op = 0; op < 256; op++) {
			const char *name = iouring_bpf_opcode_name(op);

			if (!rf.nr_filters[op] && !rf.deny_rest[op]) {
				open += name != NULL;
				continue;
			}
			if (rf.deny_rest[op] && !rf.nr_filters[op]) {
				denied++;
				continue;
			}
			printf("  %-18s %u filter(s)%s\n", name ? name : "?", rf.nr_filters[op],
			       rf.deny_rest[op] ? ", then denied" : "");
		}
		/* a deny-rest profile denies dozens: one line (--json names them) */
		if (denied && !open)
			printf("  every other opcode (%u) denied (deny-rest)\n", denied);
		else if (denied)
			printf("  %u other opcode(s) denied (deny-rest)\n", denied);
	}
	closedir(d);
	if (json_output) {
		json_array_end(jw);
		json_object_end(jw);
		json_destroy(jw);
	} else if (!rings) {
		/* task restrictions have no file of their own: a new ring shows them */
		printf("no io_uring rings (restrictions it inherited show on the rings it creates)\n");
	}
	return 0;
}

static const char *type_name(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	return t ? btf__name_by_offset(btf, t->name_off) : "?";
}

/* Why a global cannot be set from the command line, or NULL if it can. */
static const char *not_settable(const struct iouring_bpf_global *g)
{
	if (g->flags & IOURING_BPF_GLOBAL_STATIC)
		return "static";
	if (g->flags & IOURING_BPF_GLOBAL_CONST)
		return "const (compiled in)";
	if (!(g->flags & IOURING_BPF_GLOBAL_INT))
		return "not an integer";
	return NULL;
}

int cmd_inspect(int argc, char **argv)
{
	struct iouring_bpf_policy *p = NULL;
	struct iouring_bpf_global g[256];
	struct bpf_object *obj;
	const struct btf *btf;
	struct btf *kbtf;
	struct bpf_program *prog;
	struct bpf_map *map;
	struct iface_parser args;
	const char *object = NULL, *pid = NULL;
	int n, c, ret, has_ops, objects = 0;

	iface_parse_init(&args, "inspect", NULL, argc, argv, 0);
	while ((c = iface_parse_next(&args)) != IFACE_END) {
		switch (c) {
		case OPT_HELP:
			return inspect_usage(stdout), 0;
		case OPT_PID:
			pid = args.value;
			break;
		case IFACE_OPERAND:
			object = args.value;
			objects++;
			break;
		case IFACE_NO_VALUE:
			return usage_fail(inspect_usage, "inspect", "%s needs a value", args.value);
		default:
			return usage_fail(inspect_usage, "inspect", "unknown option '%s'",
					  args.value);
		}
	}
	if (pid && objects)
		return usage_fail(inspect_usage, "inspect", "--pid PID or an object, not both");
	if (pid)
		return inspect_pid(pid);
	if (objects != 1)
		return usage_fail(inspect_usage, "inspect", "one object expected");
	ret = iouring_bpf_policy_open(object, &p);
	if (ret) {
		fail(ret, "%s", iouring_bpf_policy_strerror(p));
		iouring_bpf_policy_close(p);
		return ret;
	}
	obj = iouring_bpf_policy_object(p);
	btf = bpf_object__btf(obj);
	kbtf = kernel_btf_load();
	has_ops = kernel_has_bpf_ops(kbtf);

	if (json_output) {
		jw = json_new(stdout);
		json_object_start(jw);
		json_kv_string(jw, "object", object);
		json_key(jw, "struct_ops");
		json_array_start(jw);
	} else {
		printf("%s\n  struct_ops maps:\n", object);
	}
	bpf_object__for_each_map(map, obj) {
		if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS)
			continue;
		if (json_output) {
			json_object_start(jw);
			json_kv_string(jw, "map", bpf_map__name(map));
			json_kv_string(jw, "type", type_name(btf, bpf_map__btf_value_type_id(map)));
			json_object_end(jw);
		} else {
			printf("    %-20s struct %s\n", bpf_map__name(map),
			       type_name(btf, bpf_map__btf_value_type_id(map)));
		}
	}
	if (json_output) {
		json_array_end(jw);
		json_key(jw, "programs");
		json_array_start(jw);
	} else {
		printf("  programs:\n");
	}
	bpf_object__for_each_program(prog, obj) {
		const char *type = libbpf_bpf_prog_type_str(bpf_program__type(prog));

		if (json_output) {
			json_object_start(jw);
			json_kv_string(jw, "name", bpf_program__name(prog));
			json_kv_string(jw, "section", bpf_program__section_name(prog));
			json_kv_string(jw, "type", type ? type : "unknown");
			json_object_end(jw);
		} else {
			printf("    %-20s %-24s %s\n", bpf_program__name(prog),
			       bpf_program__section_name(prog), type ? type : "unknown");
		}
	}

	n = iouring_bpf_policy_globals(p, g, 256);
	if (n > 256)
		n = 256;
	if (json_output) {
		json_array_end(jw);
		json_key(jw, "globals");
		json_array_start(jw);
	} else {
		printf("  globals (load --set NAME=VALUE):\n");
	}
	for (int i = 0; i < n; i++) {
		const char *why = not_settable(&g[i]);
		bool is_int = g[i].flags & IOURING_BPF_GLOBAL_INT;
		char text[24];

		if (json_output) {
			json_object_start(jw);
			json_kv_string(jw, "name", g[i].name);
			json_kv_string(jw, "section", g[i].section);
			json_kv_uint(jw, "size", g[i].size);
			json_kv_bool(jw, "signed", g[i].flags & IOURING_BPF_GLOBAL_SIGNED);
			json_kv_bool(jw, "settable", !why);
			if (why)
				json_kv_string(jw, "why_not", why);
			if (is_int) {
				json_key(jw, "default");
				json_int_val(jw, policy_global_int(p, &g[i]));
			}
			json_object_end(jw);
		} else if (is_int) {
			printf("    %-28s %-8s %s%-3u %-9s default %s\n", g[i].name, g[i].section,
			       g[i].flags & IOURING_BPF_GLOBAL_SIGNED ? "s" : "u", g[i].size * 8,
			       why ? why : "settable",
			       int_val_text(policy_global_int(p, &g[i]), text, sizeof(text)));
		} else {
			printf("    %-28s %-8s %u bytes, %s\n", g[i].name, g[i].section, g[i].size,
			       why ? why : "settable");
		}
	}

	if (json_output) {
		json_array_end(jw);
		json_key(jw, "kfuncs");
		json_array_start(jw);
	} else {
		printf("  kfuncs (in this kernel?):\n");
	}
	/* kfuncs: extern FUNCs of the object's BTF as the file has it (at open,
	 * libbpf relabels them and puts dummies in .ksyms) */
	struct btf *raw = btf__parse_elf(object, NULL);

	for (__u32 id = 1; raw && id < btf__type_cnt(raw); id++) {
		const struct btf_type *t = btf__type_by_id(raw, id);
		const char *name;
		bool present;

		if (!btf_is_func(t) || btf_vlen(t) != BTF_FUNC_EXTERN)
			continue;
		name = btf__name_by_offset(raw, t->name_off);
		present = kbtf && btf__find_by_name_kind(kbtf, name, BTF_KIND_FUNC) > 0;
		if (json_output) {
			json_object_start(jw);
			json_kv_string(jw, "name", name);
			json_kv_bool(jw, "in_kernel", present);
			json_object_end(jw);
		} else {
			printf("    %-32s %s\n", name, present ? "yes" : "no");
		}
	}
	btf__free(raw);
	if (json_output) {
		json_array_end(jw);
		json_key(jw, "kernel_has_io_uring_bpf_ops");
		has_ops < 0 ? json_null(jw) : json_bool(jw, has_ops);
		json_object_end(jw);
		json_destroy(jw);
	} else {
		printf("  this kernel has io_uring_bpf_ops: %s\n",
		       has_ops < 0 ? "unknown (no kernel BTF)" : has_ops ? "yes" : "no");
	}
	btf__free(kbtf);
	iouring_bpf_policy_close(p);
	return 0;
}

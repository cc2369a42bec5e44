// SPDX-License-Identifier: GPL-2.0
/* iouring-bpf list and unload: the policies pinned under the pin root. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "interface.h"
#include "loader.h"

struct prog_stats {
	__u64 run_cnt, run_time_ns;
	bool have;
};

static struct prog_stats prog_stats(const struct pin_meta *m)
{
	struct prog_stats s = {};

	for (__u32 i = 0; i < m->nr_progs && i < META_MAX_PROGS; i++) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(m->prog_ids[i]);

		if (fd < 0)
			continue;
		if (!bpf_prog_get_info_by_fd(fd, &info, &len)) {
			s.run_cnt += info.run_cnt;
			s.run_time_ns += info.run_time_ns;
			s.have = true;
		}
		close(fd);
	}
	return s;
}

/* attached / detached / ring gone, from the owner's fdinfo (patch 0008). */
static const char *ring_state(const struct pin_meta *m)
{
	struct foreign_ring r = {};
	char target[64];

	if (!fd_is_io_uring(m->owner_pid, m->ring_fd, target, sizeof(target)) ||
	    ring_fdinfo(m->owner_pid, m->ring_fd, &r))
		return "ring gone";
	return r.bpf_loop == 1 ? "attached" : r.bpf_loop == 0 ? "detached" : "unknown";
}

/* Integer variables of a pinned data map, decoded with its BTF. */
static void print_counters(const char *dir, const char *file)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), zero = 0;
	char path[4400];
	struct btf *btf = NULL;
	void *value = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return;
	if (bpf_map_get_info_by_fd(fd, &info, &len) || !info.btf_id ||
	    !(btf = btf__load_from_kernel_by_id(info.btf_id)) ||
	    !(value = calloc(1, info.value_size)) || bpf_map_lookup_elem(fd, &zero, value))
		goto out;

	const struct btf_type *sec = btf__type_by_id(btf, info.btf_value_type_id);
	const struct btf_var_secinfo *vs = sec && btf_is_datasec(sec) ? btf_var_secinfos(sec) : NULL;

	for (int i = 0; vs && i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *var = btf__type_by_id(btf, vs->type);
		const struct btf_type *t = btf__type_by_id(btf, btf__resolve_type(btf, var->type));
		const char *name = btf__name_by_offset(btf, var->name_off);
		bool is_signed;
		struct int_val v;
		char text[24];

		if (!t || btf_var(var)->linkage == BTF_VAR_STATIC ||
		    vs->offset + vs->size > info.value_size)
			continue;
		if (btf_is_int(t))
			is_signed = btf_int_encoding(t) & BTF_INT_SIGNED;
		else if (btf_is_any_enum(t))
			is_signed = btf_kflag(t);
		else
			continue;
		if (vs->size != 1 && vs->size != 2 && vs->size != 4 && vs->size != 8)
			continue;
		v = int_from_bytes((char *)value + vs->offset, vs->size, is_signed);
		if (json_output)
			json_key(jw, name), json_int_val(jw, v);
		else
			printf(" %s=%s", name, int_val_text(v, text, sizeof(text)));
	}
out:
	free(value);
	btf__free(btf);
	close(fd);
}

static void list_usage(FILE *f)
{
	iface_print_usage(f, "list", NULL);
	fprintf(f, "\nPolicies pinned under %s: name, ring owner (PID:FD) and\n"
		   "whether the policy is still attached, program ids, run count and run time\n"
		   "(when kernel.bpf_stats_enabled is 1), attach time, and the policy's integer\n"
		   "globals (its counters and exit status).\n\n"
		   "options:\n", pin_root());
	iface_print_options(f, "list", NULL);
}

int cmd_list(int argc, char **argv)
{
	struct iface_parser p;
	struct dirent *e;
	DIR *d = NULL;
	int rootfd;

	iface_parse_init(&p, "list", NULL, argc, argv, 0);
	if (iface_parse_next(&p) == OPT_HELP)
		return list_usage(stdout), 0;
	if (p.value)
		return usage_fail(list_usage, "list", "no arguments expected ('%s')", p.value);
	rootfd = pin_root_open(false);	/* on bpffs; none yet: an empty list */
	if (rootfd < 0 && rootfd != -ENOENT)
		return rootfd;
	if (rootfd >= 0 && !(d = fdopendir(rootfd))) {
		close(rootfd);
		return fail(errno, "%s: %s", pin_root(), strerror(errno));
	}
	if (json_output) {	/* one document: the list, or an error object */
		jw = json_new_buffered(stdout);
		json_array_start(jw);
	}
	if (!json_output)
		printf("%-16s %-12s %-10s %-10s %10s %12s  %-19s %s\n", "NAME", "RING", "STATE",
		       "PROG_IDS", "RUNS", "RUN_NS", "ATTACHED", "OBJECT");
	while (d && (e = readdir(d))) {
		struct pin_meta m = {};
		char dir[4200], when[32], ids[64] = "";
		int dfd, ret;

		/* pins are directories (a bpffs root also has files: progs.debug) */
		if (e->d_name[0] == '.' || e->d_type == DT_REG)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", pin_root(), e->d_name);
		dfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		ret = dfd < 0 ? -errno : pin_meta_read(dfd, &m);
		if (dfd >= 0)
			close(dfd);
		if (ret) {
			warn("%s: not a pin directory of %s (no readable attachment record: %s); "
			     "skipped", dir, prog_name, strerror(-ret));
			continue;
		}

		struct prog_stats s = prog_stats(&m);
		time_t t = m.attach_time_ns / 1000000000ULL;
		struct tm tm;
		const char *state = ring_state(&m);

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
		for (__u32 i = 0; i < m.nr_progs && i < META_MAX_PROGS; i++)
			snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%u", i ? "," : "",
				 m.prog_ids[i]);
		if (json_output) {
			json_object_start(jw);
			json_kv_string(jw, "name", e->d_name);
			json_kv_string(jw, "pin", dir);
			json_kv_int(jw, "pid", m.owner_pid);	/* the ring's owner */
			json_kv_int(jw, "ring_fd", m.ring_fd);
			json_kv_string(jw, "state", state);
			json_kv_string(jw, "object", m.object);
			json_kv_string(jw, "ops_map", m.ops_map);
			json_key(jw, "prog_ids");
			json_array_start(jw);
			for (__u32 i = 0; i < m.nr_progs && i < META_MAX_PROGS; i++)
				json_uint(jw, m.prog_ids[i]);
			json_array_end(jw);
			json_key(jw, "run_cnt");
			s.have ? json_uint(jw, s.run_cnt) : json_null(jw);
			json_key(jw, "run_time_ns");
			s.have ? json_uint(jw, s.run_time_ns) : json_null(jw);
			json_kv_uint(jw, "attach_time_ns", m.attach_time_ns);
			json_kv_string(jw, "attach_time", when);
			json_key(jw, "globals");
			json_object_start(jw);
			print_counters(dir, "bss");
			print_counters(dir, "data");
			json_object_end(jw);
			json_object_end(jw);
		} else {
			char ring[32];

			snprintf(ring, sizeof(ring), "%d:%d", m.owner_pid, m.ring_fd);
			printf("%-16s %-12s %-10s %-10s %10llu %12llu  %-19s %s\n", e->d_name, ring,
			       state, ids, (unsigned long long)s.run_cnt,
			       (unsigned long long)s.run_time_ns, when, m.object);
			printf("  globals:");
			print_counters(dir, "bss");
			print_counters(dir, "data");
			printf("\n");
		}
	}
	if (d)
		closedir(d);
	if (json_output) {
		json_array_end(jw);
		json_destroy(jw);
	}
	return 0;
}

static void unload_usage(FILE *f)
{
	iface_print_usage(f, "unload", NULL);
	fprintf(f, "\nUnpin %s/NAME: the policy detaches from its ring\n"
		   "(unless something else holds its link) and the owner's next io_uring_enter()\n"
		   "behaves as on a ring without a policy.\n\n"
		   "options:\n", pin_root());
	iface_print_options(f, "unload", NULL);
}

int cmd_unload(int argc, char **argv)
{
	const char *name = NULL;
	struct iface_parser p;
	int c, ret;

	iface_parse_init(&p, "unload", NULL, argc, argv, 0);
	while ((c = iface_parse_next(&p)) != IFACE_END) {
		if (c == OPT_HELP)
			return unload_usage(stdout), 0;
		if (c == IFACE_UNKNOWN)
			return usage_fail(unload_usage, "unload", "unknown option '%s'", p.value);
		if (name)
			return usage_fail(unload_usage, "unload", "one NAME expected");
		name = p.value;
	}
	if (!name)
		return usage_fail(unload_usage, "unload", "one NAME expected");
	/* only a directory on bpffs with our record, only the names we made */
	ret = pin_remove(name, true, false);
	if (ret)
		return ret;
	if (json_output) {
		jw = json_new(stdout);
		json_object_start(jw);
		json_kv_string(jw, "unloaded", name);
		json_object_end(jw);
		json_destroy(jw);
	} else {
		printf("%s: detached and unpinned\n", name);
	}
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf load: attach a policy to a ring another process owns and pin
 * it, or run a self-contained policy on a ring of our own until it stops.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <liburing-bpf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "interface.h"
#include "loader.h"

#define MAX_SETS 64

struct load_args {
	const char *object;
	bool ring, self_hosted;
	int pid, fd;
	const char *pin;
	unsigned int entries;
	const char *sets[MAX_SETS];
	int nr_sets;
};

static void load_usage(FILE *f)
{
	fprintf(f,
		"usage: %s load PROG.o --ring PID:FD [--pin NAME] [--set VAR=VALUE]...\n"
		"       %s load PROG.o --ring [--entries N] [--set VAR=VALUE]...\n\n"
		"With PID:FD: take ring FD of process PID (pidfd_getfd(), which needs the\n"
		"rights of ptrace attach), fill the policy's ring geometry from it, set\n"
		"globals, load, attach, pin the link under %s/NAME\n"
		"(NAME defaults to the object's file name without .bpf.o) and exit,\n"
		"leaving the policy attached. The owner's next io_uring_enter() runs it.\n\n"
		"With --ring alone: create a ring (--entries, default 64) with the flags\n"
		"the loop needs, attach the policy, run the loop until the policy stops,\n"
		"then print its exit status (iou_exit_status) and counters. The tool exits\n"
		"1 if the status is not 0.\n\n"
		"options:\n",
		prog_name, prog_name, pin_root());
	iface_print_options(f, "load", NULL);
}

static int usage_error(const char *fmt, const char *arg)
{
	char msg[1024];

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(msg, sizeof(msg), fmt, arg);
#pragma GCC diagnostic pop
	return usage_fail(load_usage, "load", "%s", msg);
}

static int parse_load_args(int argc, char **argv, struct load_args *a)
{
	struct iface_parser p;
	int c;

	iface_parse_init(&p, "load", NULL, argc, argv, 0);
	while ((c = iface_parse_next(&p)) != IFACE_END) {
		const char *v = p.value;
		char *end;
		unsigned long n;

		switch (c) {
		case OPT_HELP:
			load_usage(stdout);
			return 1;
		case OPT_RING:	/* its value is optional: --ring alone is a ring of our own */
			a->ring = true;
			if (!v)
				a->self_hosted = true;
			else if (parse_pid_fd(v, &a->pid, &a->fd))
				return usage_error("'%s' is not PID:FD (e.g. 1234:5)", v);
			break;
		case OPT_PIN:
			a->pin = v;
			break;
		case OPT_SET:
			if (!strchr(v, '=') || v[0] == '=')
				return usage_error("--set wants VAR=VALUE, not '%s'", v);
			if (a->nr_sets == MAX_SETS)
				return usage_error("more than 64 --set%s", "");
			a->sets[a->nr_sets++] = v;
			break;
		case OPT_ENTRIES:
			n = strtoul(v, &end, 0);
			if (*end || !n || n > 32768 || (n & (n - 1)))
				return usage_error("--entries wants a power of two up to 32768, "
						   "not '%s'", v);
			a->entries = n;
			break;
		case IFACE_NO_VALUE:
			return usage_error("%s needs a value", v);
		case IFACE_OPERAND:
			if (a->object)
				return usage_error("one object only ('%s' is extra)", v);
			a->object = v;
			break;
		default:
			return usage_error("unknown option '%s'", v);
		}
	}
	if (!a->object)
		return usage_error("which object?%s", "");
	if (!a->ring)
		return usage_error("--ring is required: --ring PID:FD for another process's ring, "
				   "--ring alone for a ring of our own%s", "");
	if (a->self_hosted && a->pin)
		return usage_error("--pin needs --ring PID:FD: a self-hosted run ends with the tool%s", "");
	if (!a->self_hosted && a->entries)
		return usage_error("--entries is for a ring of our own (--ring without PID:FD)%s", "");
	if (a->pin && pin_name_check(a->pin))
		return usage_error("pin name '%s' must be letters, digits, '-', '_' or '.' "
				   "(up to 64, not starting with '.')", a->pin);
	_Static_assert(PIN_NAME_MAX == 64, "the usage message says 64");
	return 0;
}

/* "dir/nops.bpf.o" -> "nops" (name has room for NAME_MAX + 1 bytes) */
static void default_pin_name(const char *object, char *name, size_t size)
{
	const char *base = strrchr(object, '/');
	char *dot;

	snprintf(name, size, "%s", base ? base + 1 : object);
	dot = strstr(name, ".bpf.o");
	if (!dot)
		dot = strrchr(name, '.');
	if (dot && dot != name)
		*dot = 0;
	for (char *c = name; *c; c++)
		if (pin_name_check((char[]){ *c, 0 }))
			*c = '_';
}

static int check_kernel(void)
{
	struct btf *btf = kernel_btf_load();
	int ret = btf ? kernel_has_bpf_ops(btf) : -errno;
	struct utsname u;

	btf__free(btf);
	uname(&u);
	if (ret < 0)
		return fail(ret, "cannot read the kernel's BTF (%s): %s; io_uring BPF policies need "
				 "CONFIG_DEBUG_INFO_BTF",
			    getenv("IOURING_BPF_KERNEL_BTF") ?: "/sys/kernel/btf/vmlinux",
			    strerror(-ret));
	if (!ret)
		return fail(EOPNOTSUPP, "this kernel (%s) has no io_uring_bpf_ops: io_uring BPF "
					"policies need a kernel with the iouring-bpf patches "
					"(or Linux 7.1 or later)", u.release);
	return 0;
}

/* The foreign ring can take a loop: say why not before loading anything. */
static int check_foreign_ring(const struct foreign_ring *r)
{
	if (r->have_flags && (r->flags & IORING_SETUP_SQPOLL || r->sq_thread >= 0))
		return fail(EOPNOTSUPP, "ring %d:%d uses SQPOLL: a BPF loop runs in the owner's "
					"io_uring_enter(), not in a poller thread", r->pid, r->owner_fd);
	if (r->have_flags && r->flags & IORING_SETUP_IOPOLL)
		return fail(EOPNOTSUPP, "ring %d:%d uses IOPOLL, which a BPF loop does not support",
			    r->pid, r->owner_fd);
	if (r->have_flags && !(r->flags & IORING_SETUP_DEFER_TASKRUN))
		return fail(EOPNOTSUPP, "ring %d:%d was set up without IORING_SETUP_DEFER_TASKRUN, "
					"which a BPF loop needs: completions must arrive as task "
					"work its owner runs", r->pid, r->owner_fd);
	/* the loop's shape: what the policies' ring helpers read and write */
	if (r->have_flags && !(r->flags & IORING_SETUP_SQ_REWIND))
		return fail(EOPNOTSUPP, "ring %d:%d was set up without IORING_SETUP_SQ_REWIND (and "
					"IORING_SETUP_NO_SQARRAY), which a BPF loop needs: a policy "
					"writes its SQEs from index 0, and on this ring it would "
					"submit the owner's queued SQEs and wait for completions that "
					"never come (set the ring up with IOURING_BPF_RING_FLAGS)",
			    r->pid, r->owner_fd);
	if (r->have_flags && r->flags & IORING_SETUP_CQE32)
		return fail(EOPNOTSUPP, "ring %d:%d uses 32-byte CQEs (IORING_SETUP_CQE32); a BPF "
					"loop's policies read 16-byte CQEs", r->pid, r->owner_fd);
	/* SQE128 is fine: the geometry says so, and liburing-bpf refuses a
	 * policy too old to read it (iouring_bpf_policy_set_ring()) */
	if (!r->have_flags)
		return fail(EOPNOTSUPP, "ring %d:%d: this kernel does not show a ring's setup flags "
					"in fdinfo (Flags:, kernel patch 8), so whether the ring can "
					"take a BPF loop (SQ_REWIND, 16-byte CQEs, the SQE size) "
					"cannot be checked", r->pid, r->owner_fd);
	if (r->bpf_loop == 1)
		return fail(EBUSY, "ring %d:%d already has a policy attached ('%s list' shows the "
				   "pinned ones)", r->pid, r->owner_fd, prog_name);
	return 0;
}

/* Geometry of a foreign ring (checked fit): a probe ring of ours with the same shape. */
static int foreign_geometry(const struct foreign_ring *r, struct iouring_bpf_ring *out)
{
	struct iouring_bpf_ring probe;
	int ret;

	ret = iouring_bpf_ring_init(&probe, r->sq_entries, r->cq_entries,
				    IOURING_BPF_RING_FLAGS | (r->flags & IORING_SETUP_SQE128));
	if (ret)
		return fail(ret, "a probe ring of %u/%u entries for the geometry: %s",
			    r->sq_entries, r->cq_entries, strerror(-ret));
	memset(out, 0, sizeof(*out));
	out->params = probe.params;
	out->geom = probe.geom;
	out->fd = r->fd;
	iouring_bpf_ring_exit(&probe);
	return 0;
}

static int load_fail(struct iouring_bpf_policy *p, int ret, const char *object)
{
	if (strstr(iouring_bpf_policy_strerror(p), "loading failed")) {
		if (ret == -EPERM)
			return fail(ret, "%s: not allowed to load BPF programs: this needs root (or "
					 "CAP_BPF and CAP_PERFMON)", object);
		/* libbpf printed a program load log: the verifier said no */
		fail(ret, "%s: the verifier rejected the policy: %s", object, strerror(-ret));
		if (!debug_output)
			libbpf_log_print_tail(20);
		return ret;
	}
	return fail(ret, "%s: %s", object, iouring_bpf_policy_strerror(p));
}

/* An exit status in words: 0 is "ok", -ERRNO (or a positive errno) its strerror. */
static const char *status_text(int status)
{
	return status ? strerror(status < 0 ? -status : status) : "ok";
}

/* Run until the policy stops; print its exit status and counters. */
static int run_self_hosted(struct iouring_bpf_policy *p, struct iouring_bpf_ring *ring,
			   const char *object)
{
	struct iouring_bpf_global g[256];
	struct timespec t0, t1;
	int status, n, ret;
	__u64 elapsed_ns;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* no handlers here: EINTR is a stop and continue (SIGTSTP, SIGCONT) */
	do
		ret = iouring_bpf_policy_run(p, ring, &status);
	while (ret == -EINTR);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ret)
		return fail(ret, "%s: %s", object, iouring_bpf_policy_strerror(p));
	elapsed_ns = (t1.tv_sec - t0.tv_sec) * 1000000000ULL + t1.tv_nsec - t0.tv_nsec;
	n = iouring_bpf_policy_globals(p, g, 256);
	if (n > 256)
		n = 256;

	/* counters: the policy's own integer globals that change, not settings */
	if (json_output) {
		jw = json_new(stdout);
		json_object_start(jw);
		json_kv_string(jw, "object", object);
		json_kv_int(jw, "exit_status", status);
		json_kv_string(jw, "exit_status_text", status_text(status));
		/* times are integer nanoseconds in every command's JSON */
		json_kv_uint(jw, "elapsed_ns", elapsed_ns);
		json_key(jw, "counters");
		json_object_start(jw);
	} else {
		printf("%s: stopped after %.3f ms, exit status %d (%s)\n", object,
		       elapsed_ns / 1e6, status, status_text(status));
	}
	for (int i = 0; i < n; i++) {
		char text[24];

		if (!(g[i].flags & IOURING_BPF_GLOBAL_INT) ||
		    g[i].flags & (IOURING_BPF_GLOBAL_RODATA | IOURING_BPF_GLOBAL_STATIC) ||
		    !strcmp(g[i].name, "iou_exit_status"))
			continue;
		if (json_output)
			json_key(jw, g[i].name), json_int_val(jw, policy_global_int(p, &g[i]));
		else
			printf("  %-28s %s\n", g[i].name,
			       int_val_text(policy_global_int(p, &g[i]), text, sizeof(text)));
	}
	if (json_output) {
		json_object_end(jw);
		json_object_end(jw);
		json_destroy(jw);
	}
	if (status) {
		if (!json_output)
			fprintf(stderr, "%s: the policy stopped with %d (%s)\n", prog_name, status,
				status_text(status));
		return status < 0 ? status : -EIO;
	}
	return 0;
}

/*
 * Before attach: the pin directory, the attachment record and the data
 * maps. Whatever fails here fails with nothing attached.
 */
static int pin_prepare(struct iouring_bpf_policy *p, const struct load_args *a,
		       const struct foreign_ring *fr, const char *name, const char *dir,
		       struct pin_meta *out)
{
	struct bpf_object *obj = iouring_bpf_policy_object(p);
	struct pin_meta meta = { .version = 1, .owner_pid = fr->pid, .ring_fd = fr->owner_fd };
	struct bpf_program *prog;
	struct bpf_map *map;
	struct timespec now;
	char path[4300];
	int ret, meta_fd = -1, zero = 0;

	ret = pin_prepare_root();
	if (ret)
		return ret;
	if (mkdir(dir, 0700))
		return fail(errno, errno == EEXIST ? "pin name '%s' is already used" :
			    "creating %s: %s", errno == EEXIST ? name : dir, strerror(errno));

	clock_gettime(CLOCK_REALTIME, &now);
	meta.attach_time_ns = now.tv_sec * 1000000000ULL + now.tv_nsec;
	char *abs = realpath(a->object, NULL);	/* list is read from anywhere */

	snprintf(meta.object, sizeof(meta.object), "%s", abs ? abs : a->object);
	free(abs);
	bpf_object__for_each_map(map, obj)
		if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS && bpf_map__fd(map) >= 0)
			snprintf(meta.ops_map, sizeof(meta.ops_map), "%s", bpf_map__name(map));
	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (bpf_program__fd(prog) < 0 || meta.nr_progs == META_MAX_PROGS ||
		    bpf_prog_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		meta.prog_ids[meta.nr_progs++] = info.id;
	}

	meta_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "iou_pin_meta", sizeof(__u32), sizeof(meta),
				 1, NULL);
	ret = meta_fd < 0 ? -errno : bpf_map_update_elem(meta_fd, &zero, &meta, 0);
	if (!ret) {
		snprintf(path, sizeof(path), "%s/meta", dir);
		ret = bpf_obj_pin(meta_fd, path) ? -errno : 0;
	}
	if (ret) {
		fail(ret, "recording the attachment in %s/meta: %s", dir, strerror(-ret));
		goto err;
	}
	/* the policy's counters, for 'list' */
	bpf_object__for_each_map(map, obj) {
		const char *sec = strchr(bpf_map__name(map), '.');

		if (!bpf_map__is_internal(map) || !sec || (strcmp(sec, ".bss") && strcmp(sec, ".data")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, sec + 1);
		ret = bpf_map__pin(map, path);
		if (ret) {
			fail(ret, "pinning %s at %s: %s", bpf_map__name(map), path, strerror(-ret));
			goto err;
		}
	}
	close(meta_fd);
	*out = meta;
	return 0;
err:
	if (meta_fd >= 0)
		close(meta_fd);
	pin_remove(name, false, true);	/* the names we made, quietly: the error is out */
	return ret;
}

/*
 * After attach: pin the link, the last step, and let go without detaching.
 * If it fails, the pins go and the caller's close detaches the policy: never
 * a live policy without its pins.
 */
static int pin_link(struct iouring_bpf_policy *p, const struct load_args *a,
		    const struct foreign_ring *fr, const char *name, const char *dir,
		    const struct pin_meta *meta)
{
	struct bpf_link *link = iouring_bpf_policy_link(p);
	char path[4300];
	int ret;

	snprintf(path, sizeof(path), "%s/link", dir);
	ret = bpf_link__pin(link, path);
	if (ret) {
		fail(ret, "pinning the link at %s: %s; the policy is detached again", path,
		     strerror(-ret));
		pin_remove(name, false, true);
		return ret;
	}
	bpf_link__disconnect(link);	/* closing the policy must not detach it */

	if (json_output) {
		jw = json_new(stdout);
		json_object_start(jw);
		json_kv_string(jw, "name", name);
		json_kv_string(jw, "pin", dir);
		json_kv_int(jw, "pid", fr->pid);	/* the ring's owner */
		json_kv_int(jw, "ring_fd", fr->owner_fd);
		json_key(jw, "prog_ids");
		json_array_start(jw);
		for (__u32 i = 0; i < meta->nr_progs; i++)
			json_uint(jw, meta->prog_ids[i]);
		json_array_end(jw);
		json_object_end(jw);
		json_destroy(jw);
	} else {
		printf("%s: attached to ring %d:%d, pinned at %s\n", a->object, fr->pid,
		       fr->owner_fd, dir);
	}
	return 0;
}

int cmd_load(int argc, char **argv)
{
	struct load_args a = { .pid = -1, .fd = -1 };
	struct iouring_bpf_policy *p = NULL;
	struct foreign_ring fr = { .fd = -1 };
	struct iouring_bpf_ring ring = { .fd = -1 }, *own = NULL;
	char pin_name[NAME_MAX + 1], pin_dir[PATH_MAX];
	struct pin_meta meta = { 0 };
	int ret;

	ret = parse_load_args(argc, argv, &a);
	if (ret)
		return ret > 0 ? 0 : ret;
	if (!a.self_hosted) {
		if (!a.pin)
			default_pin_name(a.object, pin_name, sizeof(pin_name));
		else
			snprintf(pin_name, sizeof(pin_name), "%s", a.pin);
		/* a default name is checked as --pin is: nothing truncated, nothing odd */
		if (!a.pin && strlen(pin_name) > PIN_NAME_MAX)
			return fail(ENAMETOOLONG, "the pin name from the object's file name ('%.*s...', "
						  "%zu characters) is longer than %d: choose one with "
						  "--pin NAME", 24, pin_name, strlen(pin_name),
				    PIN_NAME_MAX);
		if (!a.pin && pin_name_check(pin_name))
			return fail(EINVAL, "the pin name from the object's file name ('%s') is not "
					    "a pin name (letters, digits, '-', '_' or '.', not "
					    "starting with '.'): choose one with --pin NAME",
				    pin_name);
		if ((size_t)snprintf(pin_dir, sizeof(pin_dir), "%s/%s", pin_root(), pin_name) >=
		    sizeof(pin_dir))
			return fail(ENAMETOOLONG, "%s/%s: the path is too long", pin_root(), pin_name);
		if (!access(pin_dir, F_OK))
			return fail(EEXIST, "pin name '%s' is already used (%s); '%s unload %s' "
					    "frees it, or choose another with --pin", pin_name,
				    pin_dir, prog_name, pin_name);
	}

	/* what needs no kernel first: the object and the globals */
	ret = iouring_bpf_policy_open(a.object, &p);
	if (ret) {
		fail(ret, "%s", iouring_bpf_policy_strerror(p));
		goto out;
	}
	for (int i = 0; i < a.nr_sets; i++) {
		char name[256];
		const char *eq = strchr(a.sets[i], '=');

		snprintf(name, sizeof(name), "%.*s", (int)(eq - a.sets[i]), a.sets[i]);
		ret = iouring_bpf_policy_set_global_str(p, name, eq + 1);
		if (ret) {
			fail(ret, "--set %s: %s", a.sets[i], iouring_bpf_policy_strerror(p));
			goto out;
		}
	}
	ret = check_kernel();
	if (ret)
		goto out;

	if (a.self_hosted) {
		ret = iouring_bpf_ring_init(&ring, a.entries ? a.entries : 64, 0,
					    IOURING_BPF_RING_FLAGS);
		if (ret) {
			fail(ret, "creating a ring for the loop: %s", strerror(-ret));
			goto out;
		}
		own = &ring;
	} else {
		ret = foreign_ring_open(&fr, a.pid, a.fd);
		if (!ret)
			ret = check_foreign_ring(&fr);
		if (!ret)
			ret = foreign_geometry(&fr, &ring);
		if (ret)
			goto out;
	}

	ret = iouring_bpf_policy_set_ring(p, &ring);
	if (ret) {
		fail(ret, "%s: %s", a.object, iouring_bpf_policy_strerror(p));
		goto out;
	}
	libbpf_log_reset();
	ret = iouring_bpf_policy_load(p);
	if (ret) {
		load_fail(p, ret, a.object);
		goto out;
	}
	if (!a.self_hosted) {
		ret = pin_prepare(p, &a, &fr, pin_name, pin_dir, &meta);
		if (ret)
			goto out;
	}
	ret = iouring_bpf_policy_attach(p);
	if (ret) {
		fail(ret, "%s: %s", a.object, iouring_bpf_policy_strerror(p));
		if (!a.self_hosted)
			pin_remove(pin_name, false, true);
		goto out;
	}
	if (a.self_hosted)
		ret = run_self_hosted(p, &ring, a.object);
	else
		ret = pin_link(p, &a, &fr, pin_name, pin_dir, &meta);
out:
	iouring_bpf_policy_close(p);
	if (own)
		iouring_bpf_ring_exit(own);
	if (fr.fd >= 0)
		close(fr.fd);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf ublk list and del: the ublk devices the kernel has, with what
 * the state files of our daemons (ublk_state.c) add about them; deleting
 * one, stopped by its daemon when that is ours, and its state file.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "interface.h"
#include "loader.h"
#include "ublk_cmd.h"

/* --- list --- */

static void list_usage(FILE *f)
{
	iface_print_usage(f, "ublk", "list");
	fprintf(f,
		"\nEvery ublk device: id, state (LIVE, DEAD, QUIESCED), queues, depth, size,\n"
		"the daemon's pid and whether it is alive, target, flags and backing files\n"
		"(target and files from %s/ID, for devices made by\n"
		"'%s ublk add').\n\n"
		"options:\n",
		ublk_state_dir(), prog_name);
	iface_print_options(f, "ublk", "list");
}

static const char *const flag_names[] = {
	"zero_copy", "comp_in_task", "need_get_data", "user_recovery",
	"user_recovery_reissue", "unprivileged", "cmd_ioctl_encode", "user_copy", "zoned",
};

static void flags_text(__u64 flags, char *buf, size_t size)
{
	buf[0] = 0;
	for (unsigned int i = 0; i < 64; i++) {
		char name[32];

		if (!(flags & (1ULL << i)))
			continue;
		if (i < sizeof(flag_names) / sizeof(flag_names[0]))
			snprintf(name, sizeof(name), "%s", flag_names[i]);
		else
			snprintf(name, sizeof(name), "bit%u", i);
		snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", buf[0] ? "," : "", name);
	}
	if (!buf[0])
		snprintf(buf, size, "-");
}

static const char *state_name(__u16 state)
{
	switch (state) {
	case UBLK_S_DEV_DEAD: return "DEAD";
	case UBLK_S_DEV_LIVE: return "LIVE";
	case UBLK_S_DEV_QUIESCED: return "QUIESCED";
	default: return "?";
	}
}

static void size_text(__u64 b, char *buf, size_t size)
{
	static const char *const units[] = { "TiB", "GiB", "MiB", "KiB" };

	for (int i = 0; i < 4; i++) {
		__u64 u = 1ULL << (10 * (4 - i));

		if (b >= u && !(b % u)) {
			snprintf(buf, size, "%llu %s", (unsigned long long)(b / u), units[i]);
			return;
		}
	}
	snprintf(buf, size, "%llu B", (unsigned long long)b);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Numbers N of directory entries PREFIX<N>, sorted; count or -errno. */
static int scan_ids(const char *dir, const char *prefix, int *ids, int max)
{
	size_t plen = strlen(prefix);
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((e = readdir(d)) && n < max) {
		char *end;
		long v;

		if (strncmp(e->d_name, prefix, plen) || !e->d_name[plen])
			continue;
		v = strtol(e->d_name + plen, &end, 10);
		if (*end || v < 0 || e->d_name[plen] == '-' || e->d_name[plen] == '+')
			continue;
		ids[n++] = v;
	}
	closedir(d);
	qsort(ids, n, sizeof(ids[0]), cmp_int);
	return n;
}

static void list_one(struct iouring_bpf_ublk_dev *dev, const struct ublk_state *st, bool have_st)
{
	const struct ublksrv_ctrl_dev_info *info = &dev->info;
	struct ublk_params params;
	int id = info->dev_id;
	/* the kernel's word, not the state file's: a file is easier to get wrong */
	pid_t pid = info->ublksrv_pid;
	bool alive = ublk_pid_alive(pid);
	__u64 bytes = 0, chunk = 0;
	char flags[256], size[32], path[PATH_MAX];

	if (!iouring_bpf_ublk_get_params(dev, &params) && params.types & UBLK_PARAM_TYPE_BASIC) {
		bytes = params.basic.dev_sectors << 9;
		chunk = (__u64)params.basic.chunk_sectors << 9;
	}
	flags_text(info->flags, flags, sizeof(flags));
	if (json_output) {
		json_object_start(jw);
		json_kv_int(jw, "id", id);
		json_kv_string(jw, "state", state_name(info->state));
		json_kv_uint(jw, "queues", info->nr_hw_queues);
		json_kv_uint(jw, "depth", info->queue_depth);
		json_kv_uint(jw, "size", bytes);
		json_kv_uint(jw, "max_io_bytes", info->max_io_buf_bytes);
		/* the kernel's chunk_sectors (a policy's IOU_UBLK_CHUNK_BYTES()) */
		json_key(jw, "chunk_bytes");
		chunk ? json_uint(jw, chunk) : json_null(jw);
		snprintf(path, sizeof(path), "/dev/ublkb%d", id);
		json_kv_string(jw, "block", path);
		snprintf(path, sizeof(path), "/dev/ublkc%d", id);
		json_kv_string(jw, "char", path);
		json_key(jw, "flags");
		json_array_start(jw);
		for (unsigned int i = 0; i < 64; i++) {
			if (!(info->flags & (1ULL << i)))
				continue;
			if (i < sizeof(flag_names) / sizeof(flag_names[0]))
				json_string(jw, flag_names[i]);
			else
				json_int(jw, i);
		}
		json_array_end(jw);
		json_key(jw, "pid");	/* the daemon's, as ublk add prints it */
		pid > 0 ? json_int(jw, pid) : json_null(jw);
		json_kv_bool(jw, "daemon_alive", alive);
		json_key(jw, "target");
		json_string(jw, have_st ? ublk_target_name(st->conf.target) : NULL);
		json_key(jw, "files");
		json_array_start(jw);
		for (unsigned int i = 0; have_st && i < st->conf.nr_files; i++)
			json_string(jw, st->conf.files[i]);
		json_array_end(jw);
		json_key(jw, "policy");
		json_string(jw, have_st && st->conf.policy[0] ? st->conf.policy : NULL);
		json_key(jw, "path");
		json_string(jw, !have_st || st->conf.target == UBLK_TARGET_LOOP_USER ? NULL :
			    st->conf.kernel_path ? "kernel" : "daemon");
		ublk_state_path(id, ".log", path, sizeof(path));
		json_key(jw, "log");
		json_string(jw, access(path, F_OK) ? NULL : path);
		json_object_end(jw);
		return;
	}
	char daemon[48];

	if (pid > 0)
		snprintf(daemon, sizeof(daemon), "%d %s", (int)pid, alive ? "alive" : "gone");
	else
		snprintf(daemon, sizeof(daemon), "-");
	size_text(bytes, size, sizeof(size));
	printf("%-4d %-9s %6u %6u %10s  %-16s %-10s %s\n", id, state_name(info->state),
	       info->nr_hw_queues, info->queue_depth, size, daemon,
	       have_st ? ublk_target_name(st->conf.target) : "-", flags);
	if (have_st && st->conf.policy[0])
		printf("     policy: %s (%s path)\n", st->conf.policy,
		       st->conf.kernel_path ? "kernel" : "daemon");
	if (chunk) {
		size_text(chunk, size, sizeof(size));
		printf("     chunk: %s\n", size);
	}
	for (unsigned int i = 0; have_st && i < st->conf.nr_files; i++)
		printf("     file: %s\n", st->conf.files[i]);
}

int cmd_ublk_list(int argc, char **argv)
{
	static int ids[4096], state_ids[4096];
	struct iouring_bpf_ublk_dev dev;
	struct iface_parser p;
	int n, ns, ret;

	iface_parse_init(&p, "ublk", "list", argc, argv, 0);
	if (iface_parse_next(&p) == OPT_HELP)
		return list_usage(stdout), 0;
	if (p.value)
		return usage_error(list_usage, "list", "no arguments expected ('%s')", p.value);

	n = scan_ids("/sys/class/ublk-char", "ublkc", ids, 4096);
	if (n < 0) {
		if (access("/dev/ublk-control", F_OK))
			return fail(ENODEV, "%s", driver_error(-ENODEV));
		n = 0;
	}
	if (json_output) {	/* one document: the list, or an error object */
		jw = json_new_buffered(stdout);
		json_array_start(jw);
	} else {
		printf("%-4s %-9s %6s %6s %10s  %-16s %-10s %s\n", "ID", "STATE", "QUEUES", "DEPTH",
		       "SIZE", "DAEMON", "TARGET", "FLAGS");
	}
	for (int i = 0; i < n; i++) {
		struct ublk_state st;
		bool have_st;

		ret = iouring_bpf_ublk_open(&dev, ids[i]);
		if (ret == -ENODEV)
			continue;	/* went away meanwhile */
		if (ret) {
			json_discard(jw);
			return fail(ret, "ublk %d: %s", ids[i], driver_error(ret));
		}
		/* a state file describes the device only if it names the kernel's daemon */
		have_st = !ublk_state_read(ids[i], &st) && st.pid == (pid_t)dev.info.ublksrv_pid;
		list_one(&dev, &st, have_st);
		iouring_bpf_ublk_close(&dev);
	}
	if (json_output) {
		json_array_end(jw);
		json_destroy(jw);
	}

	/* state files of devices that are gone */
	ns = scan_ids(ublk_state_dir(), "", state_ids, 4096);
	for (int i = 0; i < ns; i++) {
		if (bsearch(&state_ids[i], ids, n, sizeof(ids[0]), cmp_int))
			continue;
		warn("%s/%d: ublk %d does not exist any more; '%s ublk del %d' removes the file",
		     ublk_state_dir(), state_ids[i], state_ids[i], prog_name, state_ids[i]);
	}
	return 0;
}

/* --- del --- */

static void del_usage(FILE *f)
{
	iface_print_usage(f, "ublk", "del");
	fprintf(f,
		"\nStop ublk device ID (its I/O in flight completes, new I/O fails) and delete\n"
		"it. An iouring-bpf daemon is asked to stop it (SIGTERM) and killed if it has\n"
		"not done so within %d s. Deleting waits, up to %d s, until the daemon closed\n"
		"/dev/ublkcID. The state file goes too. Works when the daemon was killed.\n"
		"A device another program serves (a live server that is not ours, and no\n"
		"state file) is refused with EBUSY unless --force is given; its server is\n"
		"never signalled.\n\n"
		"options:\n",
		DEL_WAIT_MS / 1000, DEL_WAIT_MS / 1000);
	iface_print_options(f, "ublk", "del");
}

/* pid's executable is this program's (the same file, or one rebuilt in its place). */
static bool runs_our_exe(pid_t pid)
{
	char a[PATH_MAX], b[PATH_MAX], path[64];
	struct stat sa, sb;
	ssize_t n, m;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (!stat(path, &sa) && !stat("/proc/self/exe", &sb) && sa.st_dev == sb.st_dev &&
	    sa.st_ino == sb.st_ino)
		return true;
	n = readlink(path, a, sizeof(a) - 1);
	m = readlink("/proc/self/exe", b, sizeof(b) - 1);
	if (n <= 0 || m <= 0)
		return false;
	a[n] = b[m] = 0;
	if (n > 10 && !strcmp(a + n - 10, " (deleted)"))
		a[n - 10] = 0;
	return !strcmp(a, b);
}

/* pid has ublk ID's char device (/dev/ublkcID) open: it serves that device. */
static bool holds_char_dev(pid_t pid, unsigned long id)
{
	char path[PATH_MAX];
	unsigned int major, minor;
	struct dirent *e;
	bool found = false;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/class/ublk-char/ublkc%lu/dev", id);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fscanf(f, "%u:%u", &major, &minor) != 2) {
		fclose(f);
		return false;
	}
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)pid, e->d_name);
		found = !stat(path, &st) && S_ISCHR(st.st_mode) &&
			st.st_rdev == makedev(major, minor);
	}
	closedir(d);
	return found;
}

/*
 * A pidfd for pid if it is our daemon for ublk ID: it runs this program and
 * holds /dev/ublkcID open; -1 if not. Not its name (anything can be called
 * iouring-bpf) and not a state file's word. Signals then go through the
 * pidfd, so they reach that process even if pid is reused meanwhile.
 */
static int our_daemon_pidfd(pid_t pid, unsigned long id)
{
	int pidfd;

	if (pid <= 0 || pid == getpid())
		return -1;
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -1;
	/* checked after the pidfd pins the process: still the same one afterwards */
	if (!ublk_pid_alive(pid) || !runs_our_exe(pid) || !holds_char_dev(pid, id) ||
	    syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0)) {
		close(pidfd);
		return -1;
	}
	return pidfd;
}

static void pidfd_kill(int pidfd, int sig)
{
	if (pidfd >= 0)
		syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* Poll the device until it is not LIVE (or gone): true if so within ms. */
static bool wait_not_live(struct iouring_bpf_ublk_dev *dev, int ms)
{
	for (int waited = 0; ; waited += 50) {
		int ret = iouring_bpf_ublk_get_info(dev);

		if (ret || dev->info.state != UBLK_S_DEV_LIVE)
			return true;
		if (waited >= ms)
			return false;
		usleep(50000);
	}
}

int cmd_ublk_del(int argc, char **argv)
{
	struct iouring_bpf_ublk_dev dev;
	struct ublk_state st;
	unsigned long id;
	bool have_st, force = false;
	const char *id_arg = NULL;
	struct iface_parser p;
	pid_t pid;
	int c, ret, pidfd, st_ret;

	iface_parse_init(&p, "ublk", "del", argc, argv, 0);
	while ((c = iface_parse_next(&p)) != IFACE_END) {
		if (c == OPT_HELP)
			return del_usage(stdout), 0;
		if (c == OPT_FORCE)
			force = true;
		else if (c == IFACE_OPERAND && !id_arg)
			id_arg = p.value;
		else
			return usage_error(del_usage, "del", "unexpected '%s'", p.value);
	}
	if (!id_arg)
		return usage_error(del_usage, "del", "one ID expected");
	if (parse_uint(id_arg, (1U << 20) - 1, &id))
		return usage_error(del_usage, "del", "'%s' is not a ublk device number", id_arg);

	st_ret = ublk_state_read(id, &st);
	have_st = !st_ret;
	ret = iouring_bpf_ublk_open(&dev, id);
	if (ret == -ENODEV && have_st && !ublk_pid_alive(st.pid)) {
		ublk_state_remove(id, 0);
		warn("ublk %lu does not exist; removed its stale state file", id);
		goto done;
	}
	if (ret == -ENODEV)
		return fail(ret, "no ublk device %lu ('%s ublk list' shows them)", id, prog_name);
	if (ret)
		return fail(ret, "%s", driver_error(ret));

	/*
	 * The daemon is the one the kernel names (START_DEV's pid), and only if
	 * it is ours and serves this device: never the state file's pid.
	 */
	pid = dev.info.ublksrv_pid;
	pidfd = our_daemon_pidfd(pid, id);
	/* a live server that is not ours, and no record of ours: not our device */
	if (st_ret == -ENOENT && !force && pidfd < 0 && pid > 0 && ublk_pid_alive(pid)) {
		iouring_bpf_ublk_close(&dev);
		return fail(EBUSY, "ublk %lu is served by pid %d, not by iouring-bpf (no state file "
				   "in %s); not deleting it (--force deletes it anyway)",
			    id, (int)pid, ublk_state_dir());
	}
	if (dev.info.state == UBLK_S_DEV_LIVE && pidfd >= 0) {
		/* the daemon stops the device itself: we never wait on a hung one */
		pidfd_kill(pidfd, SIGTERM);
		if (!wait_not_live(&dev, DEL_WAIT_MS)) {
			warn("the daemon (pid %d) did not stop ublk %lu within %d s: killing it",
			     (int)pid, id, DEL_WAIT_MS / 1000);
			pidfd_kill(pidfd, SIGKILL);
			wait_not_live(&dev, DEL_WAIT_MS);
		}
	}
	/* waits for requests in flight if a daemon of another program still serves them */
	ret = iouring_bpf_ublk_stop(&dev);
	if (ret && ret != -ENODEV) {
		iouring_bpf_ublk_close(&dev);
		if (pidfd >= 0)
			close(pidfd);
		return fail(ret, "stopping ublk %lu (STOP_DEV): %s", id, strerror(-ret));
	}
	ret = iouring_bpf_ublk_delete(&dev, DEL_WAIT_MS);
	if (ret == -ETIMEDOUT && pidfd >= 0) {
		warn("the daemon (pid %d) did not close /dev/ublkc%lu within %d s: killing it",
		     (int)pid, id, DEL_WAIT_MS / 1000);
		pidfd_kill(pidfd, SIGKILL);
		ret = iouring_bpf_ublk_delete(&dev, DEL_WAIT_MS);
	}
	if (pidfd >= 0)
		close(pidfd);
	iouring_bpf_ublk_close(&dev);
	if (ret == -ETIMEDOUT)
		return fail(ret, "ublk %lu is stopped and removed, but its daemon (pid %d) still "
				 "holds /dev/ublkc%lu: the number stays taken until it exits",
			    id, (int)pid, id);
	if (ret && ret != -ENODEV)
		return fail(ret, "deleting ublk %lu (DEL_DEV): %s", id, strerror(-ret));
	ublk_state_remove(id, 0);
done:
	if (json_output) {
		jw = json_new(stdout);
		json_object_start(jw);
		json_kv_int(jw, "deleted", id);
		json_object_end(jw);
		json_destroy(jw);
	} else {
		printf("ublk %lu deleted\n", id);
	}
	return 0;
}

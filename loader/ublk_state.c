// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf ublk: the daemon's state file, STATE_DIR/ID, one "key=value"
 * per line (target, pid, queues, depth, size, policy, file...), written by
 * the daemon once the device is live and read by list and del.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ublk_cmd.h"

static const char *const target_names[] = {
	[UBLK_TARGET_LOOP] = "loop",
	[UBLK_TARGET_SPLIT] = "split",
	[UBLK_TARGET_LOOP_USER] = "loop-user",
	[UBLK_TARGET_BPF] = "bpf",
};

const char *ublk_target_name(enum ublk_target t)
{
	return (unsigned int)t < sizeof(target_names) / sizeof(target_names[0]) ?
	       target_names[t] : "?";
}

int ublk_target_parse(const char *name, enum ublk_target *t)
{
	for (unsigned int i = 0; i < sizeof(target_names) / sizeof(target_names[0]); i++) {
		if (!strcmp(name, target_names[i])) {
			*t = i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *ublk_state_dir(void)
{
	const char *d = getenv("IOURING_BPF_UBLK_DIR");

	return d && *d ? d : UBLK_STATE_DIR_DEFAULT;
}

/*
 * mkdir -p: the parents 0755, the state directory itself 0700 and ours. Its
 * files name daemons that del signals, so nobody else may write there, and
 * it must not be a symlink to somewhere else.
 */
int ublk_state_prepare_dir(void)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s", ublk_state_dir());
	for (char *p = path + 1; ; p++) {
		if (*p && *p != '/')
			continue;
		char c = *p;

		*p = 0;
		if (mkdir(path, c ? 0755 : 0700) && errno != EEXIST)
			return -errno;
		*p = c;
		if (!c)
			break;
	}
	if (lstat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return -ENOTDIR;
	/* one made by an older version with 0755 */
	if ((st.st_mode & 077) && chmod(path, 0700))
		return -errno;
	return 0;
}

void ublk_state_path(int id, const char *suffix, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%d%s", ublk_state_dir(), id, suffix ? suffix : "");
}

/*
 * Values are written escaped: a backslash as two, a control character
 * (newline, tab, DEL, ...) as backslash, 'x', two hex digits; so no value
 * (a file name may hold a newline) can start a line, or a key, of its own.
 */
static void put_value(FILE *f, const char *key, const char *v)
{
	fprintf(f, "%s=", key);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
	fputc('\n', f);
}

/* Undo put_value() in place: 0, or -EINVAL for a malformed escape. */
static int unescape(char *v)
{
	char *out = v;

	for (char *p = v; *p; p++) {
		if (*p != '\\') {
			*out++ = *p;
			continue;
		}
		if (p[1] == '\\') {
			*out++ = '\\';
			p++;
		} else if (p[1] == 'x' && isxdigit((unsigned char)p[2]) &&
			   isxdigit((unsigned char)p[3])) {
			char hex[3] = { p[2], p[3], 0 };

			*out++ = (char)strtoul(hex, NULL, 16);
			p += 3;
		} else {
			return -EINVAL;
		}
	}
	*out = 0;
	return 0;
}

int ublk_state_write(const struct ublk_state *s)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	const struct ublk_conf *c = &s->conf;
	FILE *f;
	int ret = 0, fd;

	ublk_state_path(s->id, NULL, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		return ret;
	}
	fprintf(f, "id=%d\ntarget=%s\npid=%d\nqueues=%u\ndepth=%u\nsize=%llu\n", s->id,
		ublk_target_name(c->target), (int)s->pid, c->queues, c->depth,
		(unsigned long long)c->dev_bytes);
	if (c->policy[0])
		put_value(f, "policy", c->policy);
	if (c->kernel_path)
		fprintf(f, "path=kernel\n");
	for (unsigned int i = 0; i < c->nr_files; i++)
		put_value(f, "file", c->files[i]);
	if (fflush(f) || ferror(f))
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

/*
 * Read STATE_DIR/ID. A file that names a key other than "file" twice, or
 * holds a malformed line, is refused (-EINVAL) rather than half believed.
 */
int ublk_state_read(int id, struct ublk_state *s)
{
	static const char *const single[] = { "id", "target", "pid", "queues", "depth", "size",
					      "policy", "path" };
	unsigned int seen = 0;
	char path[PATH_MAX], line[4 * PATH_MAX + 32];
	int ret = 0, fd;
	FILE *f;

	memset(s, 0, sizeof(*s));
	s->id = -1;
	s->pid = -1;
	ublk_state_path(id, NULL, path, sizeof(path));
	/* a symlink planted in place of a state file is not followed */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "r");
	if (!f) {
		ret = -errno;
		close(fd);
		return ret;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		char *v = strchr(line, '='), *nl = strchr(line, '\n');

		if (!v || !nl || nl[1]) {
			ret = -EINVAL;	/* no '=', or a line too long to be ours */
			break;
		}
		*v++ = 0;
		*nl = 0;
		if (unescape(v)) {
			ret = -EINVAL;
			break;
		}
		for (unsigned int i = 0; i < sizeof(single) / sizeof(single[0]); i++) {
			if (strcmp(line, single[i]))
				continue;
			if (seen & (1U << i))
				ret = -EINVAL;	/* a second "pid=" never overrides the first */
			seen |= 1U << i;
		}
		if (ret)
			break;
		if (!strcmp(line, "id"))
			s->id = atoi(v);
		else if (!strcmp(line, "target"))
			ublk_target_parse(v, &s->conf.target);
		else if (!strcmp(line, "pid"))
			s->pid = atoi(v);
		else if (!strcmp(line, "queues"))
			s->conf.queues = strtoul(v, NULL, 10);
		else if (!strcmp(line, "depth"))
			s->conf.depth = strtoul(v, NULL, 10);
		else if (!strcmp(line, "size"))
			s->conf.dev_bytes = strtoull(v, NULL, 10);
		else if (!strcmp(line, "policy"))
			snprintf(s->conf.policy, sizeof(s->conf.policy), "%s", v);
		else if (!strcmp(line, "path"))
			s->conf.kernel_path = !strcmp(v, "kernel");
		else if (!strcmp(line, "file") && s->conf.nr_files < IOU_UBLK_MAX_FILES)
			snprintf(s->conf.files[s->conf.nr_files++], PATH_MAX, "%s", v);
	}
	fclose(f);
	if (ret)
		return ret;
	return s->id == id ? 0 : -EINVAL;
}

/* Remove the state file (only if it names only_if_pid, when that is > 0). */
void ublk_state_remove(int id, pid_t only_if_pid)
{
	struct ublk_state s;
	char path[PATH_MAX];

	if (only_if_pid > 0 && (ublk_state_read(id, &s) || s.pid != only_if_pid))
		return;
	ublk_state_path(id, NULL, path, sizeof(path));
	unlink(path);
}

bool ublk_pid_alive(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	bool alive = false;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	/* "pid (comm) S ...": the state follows the last ')' */
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[1] == ' ')
		alive = p[2] != 'Z' && p[2] != 'X';
	fclose(f);
	return alive;
}

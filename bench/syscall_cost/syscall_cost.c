// SPDX-License-Identifier: GPL-2.0
/*
 * syscall_cost: what one system call costs on this kernel and boot, the
 * price every io_uring_enter() a policy saves is worth. It times a loop of
 * getppid() (a syscall that does nearly nothing, and that glibc does not
 * cache), interleaved rounds, median, and records what decides the price:
 * the kernel release, the mitigation settings on the command line and what
 * the kernel reports about the CPU's vulnerabilities.
 *
 * JSON (-j): {"kernel", "cmdline", "mitigations", "syscall_ns", "iterations",
 * "rounds", "vulnerabilities": {name: status}}. "mitigations" is the boot
 * setting: the value of the cmdline's mitigations= ("auto", "off", ...) and
 * its pti= or nopti words, or "auto" (the kernel's default) when there are
 * none.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../bench.h"

static double time_getppid(unsigned long n)
{
	double start = bench_now_ms();

	for (unsigned long i = 0; i < n; i++)
		syscall(SYS_getppid);
	return (bench_now_ms() - start) * 1e6 / n;
}

/* the file's first line, without its newline; "" when unreadable */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* the cmdline's mitigations=... and pti=... words, space-separated */
static void mitigation_words(const char *cmdline, char *out, size_t len)
{
	char copy[4096], *save = NULL;

	out[0] = 0;
	snprintf(copy, sizeof(copy), "%s", cmdline);
	for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (strncmp(w, "mitigations=", 12) && strncmp(w, "pti=", 4) &&
		    strcmp(w, "nopti"))
			continue;
		/* mitigations=auto is recorded as "auto", pti=on as itself */
		if (!strncmp(w, "mitigations=", 12))
			w += 12;
		snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? " " : "", w);
	}
	if (!out[0])
		snprintf(out, len, "auto");
}

/* JSON string contents: the few characters that need escaping here */
static void json_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f, "usage: %s [-n CALLS] [-r ROUNDS] [-j FILE.json]\n"
		   "  -n CALLS   getppid() calls per round (default 200000)\n"
		   "  -r ROUNDS  rounds, median reported (default 5)\n"
		   "  -j FILE    also write the results as JSON\n"
		   "  -h, --help this text\n", argv0);
}

int main(int argc, char **argv)
{
	static const char vuln_dir[] = "/sys/devices/system/cpu/vulnerabilities";
	unsigned long n = 200000;
	int rounds = 5, opt;
	const char *json = NULL;
	char cmdline[4096], mitig[512];
	struct utsname u;
	double t[100];

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		usage(stdout, argv[0]);
		return 0;
	}
	while ((opt = getopt_long(argc, argv, "n:r:j:h", bench_long_options(), NULL)) != -1) {
		switch (opt) {
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 'r': rounds = atoi(optarg); break;
		case 'j': json = optarg; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (!n || rounds < 1 || rounds > 100) {
		usage(stderr, argv[0]);
		return 2;
	}
	uname(&u);
	read_line("/proc/cmdline", cmdline, sizeof(cmdline));
	mitigation_words(cmdline, mitig, sizeof(mitig));

	time_getppid(n / 10 + 1);	/* warm up */
	for (int r = 0; r < rounds; r++)
		t[r] = time_getppid(n);
	double ns = bench_median(t, rounds);

	printf("syscall_cost: kernel %s, mitigations: %s\n", u.release, mitig);
	printf("  getppid(): %.1f ns per call (median of %d rounds of %lu)\n", ns, rounds, n);

	FILE *f = NULL;

	if (json && !(f = fopen(json, "w"))) {
		fprintf(stderr, "syscall_cost: %s: %s\n", json, strerror(errno));
		return 1;
	}
	if (f) {
		fprintf(f, "{\"kernel\": \"");
		json_str(f, u.release);
		fprintf(f, "\", \"cmdline\": \"");
		json_str(f, cmdline);
		fprintf(f, "\", \"mitigations\": \"");
		json_str(f, mitig);
		fprintf(f, "\", \"syscall_ns\": %.2f, \"iterations\": %lu, \"rounds\": %d, "
			   "\"vulnerabilities\": {", ns, n, rounds);
	}
	/* what the kernel decided for each known vulnerability, in the table too */
	DIR *d = opendir(vuln_dir);
	struct dirent *e;
	int nv = 0;

	while (d && (e = readdir(d))) {
		char path[512], status[256];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", vuln_dir, e->d_name);
		read_line(path, status, sizeof(status));
		printf("  %-24s %s\n", e->d_name, status);
		if (f) {
			fprintf(f, "%s\"", nv ? ", " : "");
			json_str(f, e->d_name);
			fprintf(f, "\": \"");
			json_str(f, status);
			fprintf(f, "\"");
		}
		nv++;
	}
	if (d)
		closedir(d);
	if (f) {
		fprintf(f, "}}\n");
		fclose(f);
	}
	return 0;
}

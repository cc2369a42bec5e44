// SPDX-License-Identifier: (LGPL-2.1 OR MIT)
/*
 * ublk_serve: a ublk block device served by a BPF policy, with liburing-bpf
 * alone (no iouring-bpf tool):
 *
 *   ublk_serve POLICY.bpf.o FILE
 *
 * creates /dev/ublkbN over FILE (the policy maps the device onto it, e.g.
 * ublk_loop.bpf.o), prints the device's path once it is live, and serves
 * until SIGINT or SIGTERM (or until the device is stopped from elsewhere);
 * the device is deleted on the way out.
 *
 * The signals are blocked in every thread and taken by one thread of ours
 * with sigwait(), which asks the server to stop; the main thread waits for
 * the server meanwhile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <liburing-bpf.h>

static void say(const char *line, void *arg)
{
	(void)arg;
	fprintf(stderr, "ublk_serve: %s\n", line);
}

static void *stopper(void *arg)
{
	struct iouring_bpf_ublk_server *s = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (!sigwait(&set, &sig)) {
		fprintf(stderr, "ublk_serve: %s: stopping the device\n", strsignal(sig));
		iouring_bpf_ublk_server_stop(s);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct iouring_bpf_ublk_server_opts o = {
		.sz = sizeof(o),
		.nr_files = 1,
		.dev_id = -1,		/* the first free number */
		.log = say,
	};
	struct iouring_bpf_ublk_server *s;
	pthread_t t;
	sigset_t set;
	int ret;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: %s POLICY.bpf.o FILE\n"
		       "Serve FILE as a new ublk device with the BPF policy until SIGINT or\n"
		       "SIGTERM, which stop and delete the device.\n", argv[0]);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: %s POLICY.bpf.o FILE\n", argv[0]);
		return 2;
	}
	o.policy = argv[1];
	o.files[0] = argv[2];

	/* before any thread exists, so that all of them (the library's too) block them */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	ret = iouring_bpf_ublk_server_start(&o, &s);
	if (ret) {
		fprintf(stderr, "ublk_serve: %s\n", iouring_bpf_ublk_server_strerror(s));
		iouring_bpf_ublk_server_destroy(s);
		return 1;
	}
	printf("/dev/ublkb%d\n", iouring_bpf_ublk_server_id(s));
	fflush(stdout);

	ret = -pthread_create(&t, NULL, stopper, s);
	if (ret) {
		fprintf(stderr, "ublk_serve: pthread_create: %s\n", strerror(-ret));
		iouring_bpf_ublk_server_destroy(s);	/* stops and deletes the device */
		return 1;
	}
	ret = iouring_bpf_ublk_server_wait(s);
	if (ret)
		fprintf(stderr, "ublk_serve: the server ended: %s\n", strerror(-ret));
	/* deletes the device; the stopper thread ends with the process */
	iouring_bpf_ublk_server_destroy(s);
	return ret ? 1 : 0;
}

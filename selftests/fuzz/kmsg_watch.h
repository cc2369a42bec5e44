/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel reports (WARN, BUG, KASAN, lockdep...) seen while a fuzz case
 * ran. The test runner fails a test on any report in dmesg, but only a
 * fuzzer knows which case it was in: after each case it reads what the
 * kernel logged meanwhile (from /dev/kmsg, without blocking) and names
 * the case seed. A report can trail its cause a little, so the previous
 * case is named too.
 */
#ifndef FUZZ_KMSG_WATCH_H
#define FUZZ_KMSG_WATCH_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* the phrases of scripts/kernel-report.re */
static const char *const kmsg_report_words[] = {
	"WARNING:", "BUG:", "Oops", "KASAN", "UBSAN:", "Kernel panic",
	"general protection fault", "blocked for more than", "detected stalls",
	"lockdep is turned off", "DEBUG_LOCKS_WARN_ON", "possible circular locking",
	"possible recursive locking", "inconsistent lock state", "suspicious RCU usage",
	"lockdep_assert",
};

static int kmsg_fd = -1;

/* Start watching from now on; false if /dev/kmsg cannot be read. */
static inline bool kmsg_watch_start(void)
{
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg_fd < 0)
		return false;
	lseek(kmsg_fd, 0, SEEK_END);
	return true;
}

/*
 * The first report logged since the last call, copied to line (empty if
 * none). Reads everything logged meanwhile.
 */
static inline bool kmsg_watch_report(char *line, size_t size)
{
	char rec[2048];
	bool found = false;

	line[0] = 0;
	if (kmsg_fd < 0)
		return false;
	for (;;) {
		ssize_t n = read(kmsg_fd, rec, sizeof(rec) - 1);

		if (n < 0) {
			if (errno == EPIPE)	/* overwritten records: go on */
				continue;
			break;
		}
		rec[n] = 0;
		if (found)
			continue;
		/* "prio,seq,time,flags;message" */
		char *msg = strchr(rec, ';');

		msg = msg ? msg + 1 : rec;
		for (size_t i = 0; i < sizeof(kmsg_report_words) / sizeof(kmsg_report_words[0]); i++) {
			if (strstr(msg, kmsg_report_words[i])) {
				size_t len = strcspn(msg, "\n");

				if (len >= size)
					len = size - 1;
				memcpy(line, msg, len);
				line[len] = 0;
				found = true;
				break;
			}
		}
	}
	return found;
}

#endif

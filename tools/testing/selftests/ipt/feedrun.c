// SPDX-License-Identifier: GPL-2.0
/*
 * feedrun: become a program the simulated PT unit replays.
 *
 *   feedrun FEED [TIMEOUT_S]
 *
 * Writes FEED (a ground-truth feed from tools/testing/groundtruth) as this
 * thread's own program (ipt_sim debugfs task_feed), says "ready" on
 * stdout, then spins until the unit has used the whole feed, which it does
 * only while this thread is traced.  So a per-thread recording of this
 * thread (ipttool record -p PID) must decode to exactly the program's
 * instructions.  Exit status: 0 when the feed was used up, 1 on an error,
 * 2 on the timeout (default 120 s: nobody traced it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TASK_FEED "/sys/kernel/debug/ipt_sim/task_feed"
#define CHUNK (64 * 1024)	/* the most one write takes */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	double deadline;
	ssize_t len = 0, n;
	int in, tf;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: feedrun FEED [TIMEOUT_S]\n");
		return 1;
	}
	deadline = now() + (argc > 2 ? atof(argv[2]) : 120);
	in = open(argv[1], O_RDONLY);
	if (in < 0) {
		fprintf(stderr, "feedrun: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	while ((n = read(in, buf + len, sizeof(buf) - len)) > 0)
		len += n;
	close(in);
	if (n < 0 || !len || len == sizeof(buf)) {
		fprintf(stderr, "feedrun: %s: empty, unreadable or over 1 MiB\n", argv[1]);
		return 1;
	}
	tf = open(TASK_FEED, O_RDWR | O_TRUNC);
	if (tf < 0) {
		fprintf(stderr, "feedrun: %s: %s (is ipt_sim loaded?)\n", TASK_FEED,
			strerror(errno));
		return 1;
	}
	for (n = 0; n < len; ) {
		ssize_t w = write(tf, buf + n, len - n > CHUNK ? CHUNK : len - n);

		if (w <= 0) {
			fprintf(stderr, "feedrun: writing the feed: %s\n", strerror(errno));
			return 1;
		}
		n += w;
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	while (now() < deadline) {
		char line[64];
		size_t pos, total;

		n = read(tf, line, sizeof(line) - 1);
		if (n <= 0) {
			fprintf(stderr, "feedrun: reading %s: %s\n", TASK_FEED, strerror(errno));
			return 1;
		}
		line[n] = '\0';
		if (sscanf(line, "%zu %zu", &pos, &total) == 2 && pos == total)
			return 0;
	}
	fprintf(stderr, "feedrun: the unit did not use the feed (was the thread traced?)\n");
	return 2;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A thread blocked in poll() on a /dev/ipt file, for the kselftests that
 * check who wakes it (stream_test, thread_test), and a wait until a
 * thread sleeps in a given system call.  Needs -pthread.
 */
#ifndef IPT_POLLER_H
#define IPT_POLLER_H

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A poller's bound (30 s), and 10 ms tries of a wait for as long. */
#define IPT_POLL_MS 30000
#define IPT_POLLS 3000

static inline void ipt_poller_nap(void)
{
	struct timespec d = { 0, 10000000 };

	nanosleep(&d, NULL);
}

/*
 * A thread blocked in poll() on @fd, for up to IPT_POLL_MS; @tid is set
 * once its tid is known, and the test waits until the thread is inside
 * the poll system call (/proc/self/task/TID/syscall) before acting.
 * @ms: how long it was in poll(): a poll that reaches its bound still
 * reports the events its last look found (fs/select.c do_poll() looks
 * once more when the time is up), so a readiness that nothing woke it
 * for shows only as a poll that lasted IPT_POLL_MS.
 */
struct poller {
	pthread_t th;
	int fd;
	int tid;
	int ret;
	short revents;
	long ms;
};

static inline void *poller_run(void *arg)
{
	struct poller *p = arg;
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
	struct timespec t0, t1;

	__atomic_store_n(&p->tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	p->ret = poll(&pfd, 1, IPT_POLL_MS);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	p->revents = pfd.revents;
	p->ms = (t1.tv_sec - t0.tv_sec) * 1000 +
		(t1.tv_nsec - t0.tv_nsec) / 1000000;
	return NULL;
}

/*
 * Whether thread @tid sleeps in system call @nr (/proc's syscall file:
 * its number while blocked, "running" while it runs): 1, or 0 when it
 * did not within IPT_POLLS tries (30 s, never reached when all is well).
 */
static inline int wait_in_syscall(pid_t tid, int nr)
{
	char path[64], line[64], want[16];
	int i, in = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	snprintf(want, sizeof(want), "%d ", nr);
	for (i = 0; i < IPT_POLLS && !in; i++) {
		f = fopen(path, "r");
		if (f && fgets(line, sizeof(line), f))
			in = !strncmp(line, want, strlen(want));
		if (f)
			fclose(f);
		if (!in)
			ipt_poller_nap();
	}
	return in;
}

/* Start a poller and wait until it sleeps in poll(); 0 on timeout. */
static inline int poller_start(struct poller *p, int fd)
{
	int i, tid = 0;

	memset(p, 0, sizeof(*p));
	p->fd = fd;
	if (pthread_create(&p->th, NULL, poller_run, p))
		return 0;
	for (i = 0; i < IPT_POLLS && !tid; i++) {
		tid = __atomic_load_n(&p->tid, __ATOMIC_ACQUIRE);
		if (!tid)
			ipt_poller_nap();
	}
	return tid && wait_in_syscall(tid, SYS_poll);
}

/* Join the poller; 1 when something woke it before its bound. */
static inline int poller_join(struct poller *p)
{
	pthread_join(p->th, NULL);
	return p->ms < IPT_POLL_MS;
}

#endif /* IPT_POLLER_H */

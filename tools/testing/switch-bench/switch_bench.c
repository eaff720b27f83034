// SPDX-License-Identifier: GPL-2.0
/*
 * switch_bench: what per-thread tracing adds to a context switch.
 *
 * Two threads pinned to one CPU pass a byte back and forth through pipes,
 * so that every hand-over is a context switch from one to the other.  The
 * same run is timed untraced (the peer), then with both threads traced in
 * a per-thread session on the XSAVES path and on the MSR path (ipt's
 * force_msr parameter).  For the traced runs ipt's debugfs switch_stats
 * gives the exact PT instructions executed per load and per unload.
 *
 * Prints ratios against the untraced run; it is a measurement, not a
 * test: it fails only when it cannot run.  Under QEMU's TCG with the
 * simulated unit the times say little about hardware; the instruction
 * counts are exact everywhere.
 *
 *   switch_bench [ROUND_TRIPS]      (needs /dev/ipt with a backend, root)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/ipt.h>

#define FORCE_MSR "/sys/module/ipt/parameters/force_msr"
#define SWITCH_STATS "/sys/kernel/debug/ipt/switch_stats"

struct side {
	int in, out;
	int fd;			/* /dev/ipt, or -1: untraced */
	long n;
	int err;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int pin0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static int attach_self(int fd)
{
	struct ipt_attach a = { .size = sizeof(a) };

	return fd < 0 ? 0 : ioctl(fd, IPT_IOC_ATTACH, &a);
}

static void *ponger(void *arg)
{
	struct side *s = arg;
	char c;
	long i;

	if (pin0() || attach_self(s->fd)) {
		s->err = errno;
		return NULL;
	}
	for (i = 0; i < s->n; i++)
		if (read(s->in, &c, 1) != 1 || write(s->out, &c, 1) != 1) {
			s->err = errno;
			break;
		}
	return NULL;
}

/* ns per context switch for @n round trips; @fd traces both threads. */
static double run(int fd, long n)
{
	int a[2], b[2];
	struct side s;
	pthread_t th;
	uint64_t t0;
	char c = 'x';
	long i;

	if (pipe(a) || pipe(b))
		return -1;
	s = (struct side){ .in = a[0], .out = b[1], .fd = fd, .n = n };
	if (pin0() || attach_self(fd))
		return -1;
	if (pthread_create(&th, NULL, ponger, &s))
		return -1;
	/* A few round trips to settle, then the timed ones. */
	t0 = now_ns();
	for (i = 0; i < n; i++)
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			break;
	t0 = now_ns() - t0;
	pthread_join(th, NULL);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	if (i < n || s.err)
		return -1;
	return (double)t0 / (2.0 * n);
}

static int write_str(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -1;
	if (write(fd, v, strlen(v)) < 0)
		ret = -1;
	close(fd);
	return ret;
}

static long long stat_of(const char *key)
{
	char line[128];
	size_t klen = strlen(key);
	long long v = -1;
	FILE *f = fopen(SWITCH_STATS, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ' ')
			v = strtoll(line + klen + 1, NULL, 0);
	fclose(f);
	return v;
}

static int path_is_xsaves(void)
{
	char line[128];
	int v = -1;
	FILE *f = fopen(SWITCH_STATS, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "path ", 5))
			v = !strncmp(line + 5, "xsaves", 6);
	fclose(f);
	return v;
}

/* A traced run: returns ns per switch; prints the instruction counts. */
static double traced(const char *name, int force_msr, long n, double base)
{
	struct ipt_config cfg;
	struct ipt_cmd cmd = { .size = sizeof(cmd) };
	long long loads, unloads, rd, wr, xs, xr;
	double ns;
	int fd;

	if (write_str(FORCE_MSR, force_msr ? "1" : "0"))
		return -1;
	fd = open(IPT_DEVICE_PATH, O_RDWR);
	if (fd < 0)
		return -1;
	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.mode = IPT_MODE_THREAD;
	cfg.trace_flags = IPT_TRACE_USER | IPT_TRACE_BRANCH;
	cfg.buffer_size = 1 << 20;
	cfg.max_threads = 2;
	if (ioctl(fd, IPT_IOC_CONFIGURE, &cfg) || ioctl(fd, IPT_IOC_START, &cmd)) {
		close(fd);
		return -1;
	}
	if (force_msr == 0 && path_is_xsaves() != 1) {
		printf("# switch-bench: %s: not available on this CPU (model without XSAVES for PT)\n",
		       name);
		close(fd);
		write_str(FORCE_MSR, "0");
		return 0;
	}
	write_str(SWITCH_STATS, "0");
	ns = run(fd, n);
	loads = stat_of("loads");
	unloads = stat_of("unloads");
	rd = stat_of("rdmsr");
	wr = stat_of("wrmsr");
	xs = stat_of("xsaves");
	xr = stat_of("xrstors");
	ioctl(fd, IPT_IOC_STOP, &cmd);
	close(fd);
	write_str(FORCE_MSR, "0");
	if (ns < 0 || loads <= 0 || unloads <= 0)
		return -1;
	printf("# switch-bench: %-7s %9.0f ns/switch  x%.2f of untraced  loads %lld unloads %lld  per load: %.2f WRMSR %.2f XRSTORS  per unload: %.2f RDMSR %.2f WRMSR %.2f XSAVES\n",
	       name, ns, ns / base, loads, unloads,
	       force_msr ? (double)(wr - unloads) / loads : 0.0,
	       (double)xr / loads, (double)rd / unloads,
	       force_msr ? 1.0 : (double)wr / unloads, (double)xs / unloads);
	return ns;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000;
	double base;

	if (n <= 0) {
		fprintf(stderr, "usage: switch_bench [ROUND_TRIPS]\n");
		return 2;
	}
	base = run(-1, n);
	if (base <= 0) {
		fprintf(stderr, "switch_bench: the untraced run failed: %s\n", strerror(errno));
		return 1;
	}
	printf("# switch-bench: %ld round trips on CPU 0 (2 switches each)\n", n);
	printf("# switch-bench: %-7s %9.0f ns/switch  (the peer)\n", "untraced", base);
	if (traced("xsaves", 0, n, base) < 0 || traced("msr", 1, n, base) < 0) {
		fprintf(stderr, "switch_bench: a traced run failed (is ipt loaded with a backend?): %s\n",
			strerror(errno));
		return 1;
	}
	return 0;
}

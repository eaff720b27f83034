// SPDX-License-Identifier: GPL-2.0
/*
 * stream-bench: what a streaming consumer (libiptcap's iptcap_stream_*,
 * the loop 'ipttool record' runs) sustains, against memcpy bandwidth
 * measured in the same run.  Not a test: it prints figures and ratios.
 *
 * 1. memcpy of a buffer-sized block (best of N), and the consumer's own
 *    copy-out, the default file sink writing every byte at its stream
 *    position, from an anonymous mapping standing in for the trace
 *    buffer, to /dev/null and to a file in --dir (best of N each), with
 *    the consumer's CPU time per MB (getrusage).
 * 2. With /dev/ipt offering streaming (IPT_FEAT_STREAM): a streamed
 *    per-CPU session on every CPU for --seconds while a busy loop per
 *    CPU makes trace, drained into --dir with the file sink; the rate per
 *    CPU, the gaps (the unit paused: the consumer was slower than the
 *    unit), the consumer's CPU per MB, and the rate against memcpy.  On
 *    the simulated unit the trace rate is the simulator's (its module
 *    parameters), so raise it until gaps appear to find the sustained rate
 *    with no gap.  Without IPT_FEAT_STREAM this part says why and is left
 *    out.
 *
 * Usage: stream-bench [--size SZ_MIB] [--runs N] [--seconds S] [--dir DIR]
 *                     [--regions N]
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "iptcap.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds (user + system) of this process so far. */
static double cpu_secs(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double mb_s(uint64_t bytes, double secs)
{
	return secs > 0 ? (double)bytes / 1e6 / secs : 0;
}

/* Writes to /dev/null at stream offsets (pwrite), as the file sink does to a file. */
static int null_fd = -1;

static int null_data(const struct iptcap_stream_trace *tr, uint64_t off, const void *data,
		     size_t len, void *user)
{
	(void)tr;
	(void)user;
	return pwrite(null_fd, data, len, (off_t)off) == (ssize_t)len ? 0 : errno;
}

struct copy_result {
	double secs;		/* best wall time */
	double cpu_per_mb;	/* CPU seconds per MB, of that run */
};

/*
 * The file sink's copy-out of @buf (@size bytes) as @chunks calls of a
 * region each, @runs times: best time.  @dir NULL: /dev/null.
 */
static int time_sink(const unsigned char *buf, size_t size, unsigned int regions, int runs,
		     const char *dir, struct copy_result *res)
{
	struct iptcap_stream_trace tr = { .trace = 0, .cpu = 0 };
	int r;

	res->secs = 1e9;
	for (r = 0; r < runs; r++) {
		struct iptcap_stream_files *f = NULL;
		double t0, c0, t, c;
		uint64_t off = 0;
		unsigned int k;
		int rc = 0;

		if (dir && iptcap_stream_files_open(dir, &f))
			return -1;
		c0 = cpu_secs();
		t0 = now();
		/* 4 buffers' worth, a region at a time, as a drain hands them out */
		for (k = 0; k < 4 * regions && !rc; k++) {
			size_t n = size / regions;

			rc = dir ? iptcap_stream_files_data(&tr, off, buf + off % size, n, f) :
			      null_data(&tr, off, buf + off % size, n, NULL);
			off += n;
		}
		t = now() - t0;
		c = cpu_secs() - c0;
		if (f && iptcap_stream_files_close(f))
			rc = EIO;
		if (rc)
			return -1;
		if (t / 4 < res->secs) {
			res->secs = t / 4;
			res->cpu_per_mb = c / ((double)off / 1e6);
		}
	}
	return 0;
}

static volatile sig_atomic_t spin_stop;

static void on_alarm(int sig)
{
	(void)sig;
	spin_stop = 1;
}

/* A busy loop with branches on every CPU (children), until killed. */
static void spin_children(long ncpu, pid_t *pids)
{
	long i;

	for (i = 0; i < ncpu; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			volatile unsigned long x = 0;
			unsigned long k;

			for (k = 0;; k++)
				if ((k * 2654435761u) & 0x100)
					x += k;
				else
					x ^= k;
		}
	}
}

static void stream_part(size_t size, unsigned int regions, double seconds, const char *dir,
			double memcpy_mb_s)
{
	struct iptcap_stream_ops ops = { .data = iptcap_stream_files_data };
	struct iptcap_stream_files *files = NULL;
	struct iptcap_stream *s = NULL;
	struct iptcap_stream_stats st;
	struct iptcap_config cfg;
	struct ipt_caps caps;
	struct iptcap *ipt;
	enum iptcap_err err;
	double t0, c0, t, c;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), i;
	pid_t *pids;
	char msg[256] = "";

	err = iptcap_open(NULL, &ipt);
	if (err) {
		printf("stream: skipped: cannot open %s: %s\n", IPT_DEVICE_PATH,
		       iptcap_strerror(err));
		return;
	}
	if (iptcap_get_caps(ipt, &caps) || !(caps.features & IPT_FEAT_STREAM)) {
		printf("stream: skipped: this ipt.ko does not offer streaming (IPT_FEAT_STREAM)\n");
		iptcap_close(ipt);
		return;
	}
	iptcap_config_init(&cfg);
	cfg.buffer_size = size;
	cfg.stream = true;
	cfg.nr_regions = regions;
	cfg.kernel = false;
	err = iptcap_configure(ipt, &cfg, msg, sizeof(msg));
	if (!err)
		err = iptcap_stream_files_open(dir, &files);
	if (!err)
		err = iptcap_stream_open(ipt, &ops, files, &s);
	if (err) {
		printf("stream: skipped: %s\n", *msg ? msg : iptcap_strerror(err));
		iptcap_stream_files_close(files);
		iptcap_close(ipt);
		return;
	}
	pids = calloc((size_t)(ncpu > 0 ? ncpu : 1), sizeof(*pids));
	if (!pids)
		return;
	spin_children(ncpu, pids);
	signal(SIGALRM, on_alarm);
	alarm((unsigned int)(seconds + 0.5));
	c0 = cpu_secs();
	t0 = now();
	iptcap_start(ipt);
	while (!spin_stop && !err) {
		if (iptcap_stream_wait(s, 100) < 0)
			break;
		err = iptcap_stream_drain(s);
	}
	iptcap_stop(ipt);
	if (!err)
		err = iptcap_stream_finish(s);
	t = now() - t0;
	c = cpu_secs() - c0;
	for (i = 0; i < ncpu; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	free(pids);
	iptcap_stream_stats(s, &st);
	printf("stream: %u CPUs, %.1f s, %.1f MB streamed: %.1f MB/s per CPU, %.1f MB/s in all\n",
	       st.traces, t, (double)st.bytes / 1e6, mb_s(st.bytes, t) / (st.traces ? st.traces : 1),
	       mb_s(st.bytes, t));
	printf("stream: gaps %llu (%llu not itemised, %.1f MB lost)%s%s\n",
	       (unsigned long long)(st.gaps + st.gaps_unlisted),
	       (unsigned long long)st.gaps_unlisted, (double)st.gap_bytes / 1e6,
	       err ? ", stopped by an error: " : "", err ? iptcap_strerror(err) : "");
	printf("stream: consumer CPU %.3f ms per MB; rate / memcpy %.3f (%s)\n",
	       st.bytes ? c * 1e3 / ((double)st.bytes / 1e6) : 0.0,
	       memcpy_mb_s > 0 ? mb_s(st.bytes, t) / memcpy_mb_s : 0.0,
	       st.gaps + st.gaps_unlisted ? "gaps: the unit was faster than the consumer" :
	       "no gap: the rate is the unit's, not the consumer's limit");
	iptcap_stream_close(s);
	iptcap_stream_files_close(files);
	iptcap_close(ipt);
	for (i = 0; i < (long)caps.nr_cpus; i++) {
		char p[4096];

		snprintf(p, sizeof(p), "%s/cpu%ld.pt", dir, i);
		unlink(p);
	}
}

int main(int argc, char **argv)
{
	size_t size = 64ull << 20;
	unsigned int regions = IPT_STREAM_DEF_REGIONS;
	int runs = 5, r, i;
	double seconds = 5, best = 1e9, mc_mb_s;
	const char *dir = "/tmp";
	struct copy_result dn, df;
	unsigned char *buf, *dst;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = (size_t)strtoull(argv[++i], NULL, 0) << 20;
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--regions") && i + 1 < argc)
			regions = (unsigned int)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: stream-bench [--size SZ_MIB] [--runs N] "
				"[--seconds S] [--dir DIR] [--regions N]\n");
			return 2;
		}
	}
	if (!size || runs < 1 || !regions || size % regions) {
		fprintf(stderr, "stream-bench: bad --size, --runs or --regions\n");
		return 2;
	}
	buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (buf == MAP_FAILED || dst == MAP_FAILED || null_fd < 0) {
		perror("stream-bench");
		return 1;
	}
	for (size_t k = 0; k < size; k++)
		buf[k] = (unsigned char)(k * 131 + (k >> 12));
	memset(dst, 1, size);
	for (r = 0; r < runs; r++) {
		double t0 = now(), t;

		memcpy(dst, buf, size);
		t = now() - t0;
		if (t < best)
			best = t;
	}
	mc_mb_s = mb_s(size, best);
	printf("memcpy: %zu MiB, best of %d: %.1f MB/s\n", size >> 20, runs, mc_mb_s);
	if (time_sink(buf, size, regions, runs, NULL, &dn) ||
	    time_sink(buf, size, regions, runs, dir, &df)) {
		fprintf(stderr, "stream-bench: writing to /dev/null or %s failed: %s\n", dir,
			strerror(errno));
		return 1;
	}
	printf("copy-out to /dev/null (the loop and the system calls; nothing is copied): "
	       "%.1f MB/s (%.3f x memcpy), CPU %.3f ms per MB\n",
	       mb_s(size, dn.secs), mb_s(size, dn.secs) / mc_mb_s, dn.cpu_per_mb * 1e3);
	printf("copy-out to a file in %s: %.1f MB/s (%.3f x memcpy), CPU %.3f ms per MB\n", dir,
	       mb_s(size, df.secs), mb_s(size, df.secs) / mc_mb_s, df.cpu_per_mb * 1e3);
	{
		char p[4096];

		snprintf(p, sizeof(p), "%s/cpu0.pt", dir);
		unlink(p);
	}
	stream_part(size, regions, seconds, dir, mc_mb_s);
	return 0;
}

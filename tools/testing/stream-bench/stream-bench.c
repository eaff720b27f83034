// SPDX-License-Identifier: GPL-2.0
/*
 * stream-bench: what a streaming consumer (libiptcap's iptcap_stream_*,
 * the loop 'ipttool record' runs) sustains, against memcpy bandwidth
 * measured in the same run.  Not a test: it prints figures and ratios
 * (Documentation/testing.rst, "The streaming benchmark").
 *
 * 1. The source: CPU 0's trace buffer of a configured streamed session,
 *    mapped read-only as the consumer reads it (an anonymous mapping when
 *    /dev/ipt does not stream).  memcpy from it (best of --runs), and the
 *    consumer's own copy-out, the default file sink writing every byte at
 *    its stream offset, a region per call, to /dev/null and to a file in
 *    --dir (best of --runs each), with the CPU time per MB (getrusage).
 * 2. With /dev/ipt offering streaming (IPT_FEAT_STREAM): trials of a
 *    streamed per-CPU session on every CPU for --seconds, drained by
 *    libiptcap's loop into the file sink (/dev/null when a trial's data
 *    would not fit in --dir).  On the simulated unit the trials search
 *    the highest rate per CPU with no gap: the unit's rate (debugfs
 *    ipt_sim/rate; in bulk mode, debugfs ipt_sim/bulk, where the
 *    simulator has it) doubles from --start MiB/s (default 1) until a trial
 *    has a gap or the rate passes the simulator's maximum, then --steps
 *    bisections between the last rate without a gap and the first with
 *    one.  It prints each
 *    trial (rate delivered, gaps, the consumer's CPU share and CPU time
 *    per MB), the highest rate delivered without a gap per CPU and in all
 *    against memcpy, and what limited it; when that trial went to
 *    /dev/null, also the best one that went to a file.  On hardware the
 *    producer is a busy loop per CPU: one trial at its rate.
 *
 * Usage: stream-bench [--size SZ_MIB] [--regions N] [--runs N] [--seconds S]
 *                     [--dir DIR] [--start MIB_S] [--steps N]
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/statvfs.h>
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

		if (dir) {
			char p[4096];

			/* the sink creates its files exclusively: the last run's goes first */
			snprintf(p, sizeof(p), "%s/cpu0.pt", dir);
			unlink(p);
			if (iptcap_stream_files_open(dir, &f))
				return -1;
		}
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

/* ---- the simulated unit's rate (debugfs; ipt_sim only) ----------------- */

#define SIM_RATE	"/sys/kernel/debug/ipt_sim/rate"
#define SIM_BULK	"/sys/kernel/debug/ipt_sim/bulk"
/* IPT_SIM_RATE_MAX and IPT_SIM_BULK_RATE_MAX, kmod/sim/ipt_sim_module.h */
#define SIM_RATE_MAX	(64ull << 20)
#define SIM_BULK_RATE_MAX	(256ull << 20)

/* Read (@get) or write (@set) the number in debugfs file @path. */
static int sim_knob(const char *path, uint64_t *get, uint64_t set)
{
	char b[32];
	int fd = open(path, get ? O_RDONLY : O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	if (get) {
		n = read(fd, b, sizeof(b) - 1);
		if (n > 0) {
			b[n] = 0;
			*get = strtoull(b, NULL, 0);
		}
	} else {
		n = snprintf(b, sizeof(b), "%llu\n", (unsigned long long)set);
		n = write(fd, b, (size_t)n) == n ? n : -1;
	}
	close(fd);
	return n > 0 ? 0 : -1;
}

static int sim_rate(uint64_t *get, uint64_t set)
{
	return sim_knob(SIM_RATE, get, set);
}

/* A busy loop with branches on every CPU (children), until killed: the
 * producer on hardware, where the trace rate is the program's. */
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

struct trial {
	uint64_t rate;		/* the unit's set rate per CPU, bytes/s (0: hardware) */
	double secs;		/* wall time from start to the end of the last drain */
	double cpu;		/* the consumer's CPU seconds */
	struct iptcap_stream_stats st;
	bool to_file;
	enum iptcap_err err;
};

static bool gapless(const struct trial *t)
{
	return !t->err && !t->st.gaps && !t->st.gaps_unlisted && !t->st.gap_bytes;
}

/* Delivered MB/s per CPU. */
static double per_cpu(const struct trial *t)
{
	return t->st.traces ? mb_s(t->st.bytes, t->secs) / t->st.traces : 0;
}

static volatile sig_atomic_t stop_now;

static void on_alarm(int sig)
{
	(void)sig;
	stop_now = 1;
}

/*
 * One streamed per-CPU session on every CPU for @seconds, drained by
 * libiptcap's loop into the file sink in @dir (or /dev/null when the
 * trial's data would not fit there), as 'ipttool record' does.
 */
static void trial_run(struct trial *tr, size_t size, unsigned int regions, double seconds,
		      const char *dir, bool spin)
{
	struct iptcap_stream_ops ops = { .data = iptcap_stream_files_data };
	struct iptcap_stream_files *files = NULL;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), i;
	struct iptcap_stream *s = NULL;
	struct iptcap_config cfg;
	struct iptcap *ipt;
	struct statvfs vfs;
	pid_t *pids = NULL;
	double t0, c0;
	char msg[256] = "";

	memset(&tr->st, 0, sizeof(tr->st));
	tr->secs = tr->cpu = 0;
	/* what the trial writes, at the set rate, must fit in @dir twice over */
	tr->to_file = !tr->rate || (!statvfs(dir, &vfs) &&
				    (double)tr->rate * seconds * (double)ncpu * 2 <
				    (double)vfs.f_bavail * (double)vfs.f_frsize);
	if (!tr->to_file)
		ops.data = null_data;
	tr->err = iptcap_open(NULL, &ipt);
	if (tr->err)
		return;
	iptcap_config_init(&cfg);
	cfg.buffer_size = size;
	cfg.stream = true;
	cfg.nr_regions = regions;
	cfg.kernel = false;
	tr->err = iptcap_configure(ipt, &cfg, msg, sizeof(msg));
	if (!tr->err && tr->to_file)
		tr->err = iptcap_stream_files_open(dir, &files);
	if (!tr->err)
		tr->err = iptcap_stream_open(ipt, &ops, files, &s);
	if (tr->err) {
		fprintf(stderr, "stream-bench: %s\n", *msg ? msg : iptcap_strerror(tr->err));
		goto out;
	}
	if (spin) {
		pids = calloc((size_t)(ncpu > 0 ? ncpu : 1), sizeof(*pids));
		if (pids)
			spin_children(ncpu, pids);
	}
	stop_now = 0;
	signal(SIGALRM, on_alarm);
	setitimer(ITIMER_REAL, &(struct itimerval){
		.it_value = { .tv_sec = (time_t)seconds,
			      .tv_usec = (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6) },
	}, NULL);
	c0 = cpu_secs();
	t0 = now();
	tr->err = iptcap_start(ipt);
	while (!stop_now && !tr->err) {
		if (iptcap_stream_wait(s, 100) < 0)
			break;
		tr->err = iptcap_stream_drain(s);
	}
	iptcap_stop(ipt);
	if (!tr->err)
		tr->err = iptcap_stream_finish(s);
	tr->secs = now() - t0;
	tr->cpu = cpu_secs() - c0;
	if (pids) {
		for (i = 0; i < ncpu; i++) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
		free(pids);
	}
	iptcap_stream_stats(s, &tr->st);
out:
	iptcap_stream_close(s);
	iptcap_stream_files_close(files);
	iptcap_close(ipt);
	for (i = 0; i < ncpu; i++) {
		char p[4096];

		snprintf(p, sizeof(p), "%s/cpu%ld.pt", dir, i);
		unlink(p);
	}
}

static void trial_print(const struct trial *t)
{
	char set[48] = "hardware";

	if (t->rate)
		snprintf(set, sizeof(set), "set %.1f MB/s per CPU", (double)t->rate / 1e6);
	printf("trial: %s: %u CPUs, %.1f s, delivered %.1f MB/s per CPU (%.1f in all) to %s; "
	       "gaps %llu (%.1f MB lost); consumer CPU %.0f%%, %.3f ms per MB%s%s\n",
	       set, t->st.traces, t->secs, per_cpu(t), mb_s(t->st.bytes, t->secs),
	       t->to_file ? "a file" : "/dev/null",
	       (unsigned long long)(t->st.gaps + t->st.gaps_unlisted),
	       (double)t->st.gap_bytes / 1e6, t->secs > 0 ? 100 * t->cpu / t->secs : 0.0,
	       t->st.bytes ? t->cpu * 1e3 / ((double)t->st.bytes / 1e6) : 0.0,
	       t->err ? "; error: " : "", t->err ? iptcap_strerror(t->err) : "");
	fflush(stdout);
}

/*
 * The search, on the simulated unit: double its per-CPU rate from @lo
 * until a trial has a gap or the rate passes the unit's maximum, then
 * bisect between the last rate without a gap and the first with one,
 * @steps times.  The figure is the highest rate *delivered* by a trial
 * without a gap.
 */
static void stream_part(size_t size, unsigned int regions, double seconds, const char *dir,
			double memcpy_mb_s, uint64_t lo, unsigned int steps)
{
	struct trial best = { 0 }, best_file = { 0 }, t = { 0 };
	uint64_t old_rate = 0, old_bulk = 0, good = 0, bad = 0, rate, max = SIM_RATE_MAX;
	const char *why = NULL;
	struct ipt_caps caps;
	struct iptcap *ipt;
	enum iptcap_err err;
	unsigned int i;

	err = iptcap_open(NULL, &ipt);
	if (err) {
		printf("stream: skipped: cannot open %s: %s\n", IPT_DEVICE_PATH,
		       iptcap_strerror(err));
		return;
	}
	err = iptcap_get_caps(ipt, &caps);
	iptcap_close(ipt);
	if (err || !(caps.features & IPT_FEAT_STREAM)) {
		printf("stream: skipped: this ipt.ko does not offer streaming (IPT_FEAT_STREAM)\n");
		return;
	}
	printf("stream: per-CPU sessions on every CPU, %zu KiB buffers in %u regions, "
	       "%.1f s a trial\n", size >> 10, regions, seconds);
	if (caps.backend != IPT_BACKEND_SIM || sim_rate(&old_rate, 0)) {
		/* Hardware: the rate is the busy loops', one trial. */
		t.rate = 0;
		trial_run(&t, size, regions, seconds, dir, true);
		trial_print(&t);
		best = t;
		why = gapless(&t) ? "the program's rate (hardware: no rate to raise)" :
				    "gaps at the program's rate (hardware)";
		goto report;
	}
	/*
	 * Bulk mode, where the simulator has it: the built-in loop's packets
	 * written in large units, so the unit can outrun the consumer.
	 */
	if (!sim_knob(SIM_BULK, &old_bulk, 0) && !sim_knob(SIM_BULK, NULL, 1)) {
		max = SIM_BULK_RATE_MAX;
		printf("stream: the simulated unit in bulk mode (debugfs ipt_sim/bulk), "
		       "up to %llu MiB/s per CPU\n", (unsigned long long)(max >> 20));
	}
	for (rate = lo; rate <= max; rate *= 2) {
		t.rate = rate;
		if (sim_rate(NULL, rate))
			break;
		trial_run(&t, size, regions, seconds, dir, false);
		trial_print(&t);
		if (t.err) {
			why = "an error";
			break;
		}
		if (!gapless(&t)) {
			bad = rate;
			break;
		}
		good = rate;
		if (per_cpu(&t) > per_cpu(&best))
			best = t;
		if (t.to_file && per_cpu(&t) > per_cpu(&best_file))
			best_file = t;
	}
	if (bad && good) {
		for (i = 0; i < steps; i++) {
			rate = good + (bad - good) / 2;
			t.rate = rate;
			if (sim_rate(NULL, rate))
				break;
			trial_run(&t, size, regions, seconds, dir, false);
			trial_print(&t);
			if (gapless(&t)) {
				good = rate;
				if (per_cpu(&t) > per_cpu(&best))
					best = t;
				if (t.to_file && per_cpu(&t) > per_cpu(&best_file))
					best_file = t;
			} else {
				bad = rate;
			}
		}
	}
	/*
	 * Without a gap, what was delivered is what the unit wrote: well
	 * below the rate it was set to, the unit (its timer, under
	 * emulation) is what limited the trial, not the consumer.
	 */
	if (!why && !bad && per_cpu(&best) * 1e6 < 0.9 * (double)best.rate)
		why = "the simulated unit: it wrote less than its set rate, and no trial had a gap";
	if (!why)
		why = bad ? "the consumer: a gap above this rate" :
			    "the simulated unit's maximum rate, with no gap";
	sim_rate(NULL, old_rate);
	sim_knob(SIM_BULK, NULL, old_bulk);
report:
	if (!best.st.traces) {
		printf("stream: no rate without a gap (lowest tried %.1f MB/s per CPU)\n",
		       (double)lo / 1e6);
		return;
	}
	printf("stream: highest sustained rate with no gap: %.1f MB/s per CPU, %.1f MB/s in all "
	       "(%u CPUs); limited by %s\n", per_cpu(&best), mb_s(best.st.bytes, best.secs),
	       best.st.traces, why);
	printf("stream: against memcpy (%.1f MB/s): %.3f x per CPU, %.3f x in all (target 0.8); "
	       "consumer CPU %.0f%%, %.3f ms per MB\n", memcpy_mb_s,
	       per_cpu(&best) / memcpy_mb_s, mb_s(best.st.bytes, best.secs) / memcpy_mb_s,
	       best.secs > 0 ? 100 * best.cpu / best.secs : 0.0,
	       best.st.bytes ? best.cpu * 1e3 / ((double)best.st.bytes / 1e6) : 0.0);
	/* Trials whose data did not fit in --dir went to /dev/null: no sink's cost. */
	if (!best.to_file && best_file.st.traces)
		printf("stream: to a file (trials above went to /dev/null, their data not fitting in "
		       "%s): %.1f MB/s per CPU, %.1f MB/s in all, %.3f x memcpy per CPU, %.3f x in "
		       "all; consumer CPU %.0f%%, %.3f ms per MB\n", dir, per_cpu(&best_file),
		       mb_s(best_file.st.bytes, best_file.secs), per_cpu(&best_file) / memcpy_mb_s,
		       mb_s(best_file.st.bytes, best_file.secs) / memcpy_mb_s,
		       best_file.secs > 0 ? 100 * best_file.cpu / best_file.secs : 0.0,
		       best_file.st.bytes ?
		       best_file.cpu * 1e3 / ((double)best_file.st.bytes / 1e6) : 0.0);
}

/*
 * The buffer the copy-out reads: CPU 0's trace buffer, mapped read-only
 * from a configured (not started) streamed session when the loaded
 * ipt.ko streams, else an anonymous mapping standing in for it.  *@ipt
 * keeps the session (and the mapping) until iptcap_close().
 */
static const unsigned char *source(size_t size, unsigned int regions, struct iptcap **ipt,
				   const char **what)
{
	struct iptcap_config cfg;
	unsigned char *anon;
	char msg[256];
	const void *buf;
	size_t len;

	*ipt = NULL;
	if (!iptcap_open(NULL, ipt)) {
		iptcap_config_init(&cfg);
		cfg.buffer_size = size;
		cfg.stream = true;
		cfg.nr_regions = regions;
		cfg.kernel = false;
		if (!iptcap_configure(*ipt, &cfg, msg, sizeof(msg)) && !iptcap_map(*ipt, 0, &buf, &len) &&
		    len == size) {
			*what = "CPU 0's trace buffer, mapped read-only";
			return buf;
		}
		iptcap_close(*ipt);
		*ipt = NULL;
	}
	anon = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED)
		return NULL;
	for (size_t k = 0; k < size; k++)
		anon[k] = (unsigned char)(k * 131 + (k >> 12));
	*what = "an anonymous mapping (no streamed session to map)";
	return anon;
}

static void usage(void)
{
	fprintf(stderr, "usage: stream-bench [--size SZ_MIB] [--regions N] [--runs N] "
		"[--seconds S] [--dir DIR] [--start MIB_S] [--steps N]\n");
}

int main(int argc, char **argv)
{
	size_t size = 4ull << 20;
	unsigned int regions = IPT_STREAM_DEF_REGIONS, steps = 3;
	int runs = 5, r, i;
	double seconds = 3, best = 1e9, mc_mb_s, start = 1;
	const char *dir = "/tmp", *what;
	struct copy_result dn, df;
	const unsigned char *buf;
	struct iptcap *ipt;
	unsigned char *dst;

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
		else if (!strcmp(argv[i], "--start") && i + 1 < argc)
			start = atof(argv[++i]);
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = (unsigned int)atoi(argv[++i]);
		else {
			usage();
			return 2;
		}
	}
	if (!size || runs < 1 || !regions || size % regions || seconds <= 0 || start <= 0) {
		fprintf(stderr, "stream-bench: bad --size, --runs, --regions, --seconds or --start\n");
		return 2;
	}
	buf = source(size, regions, &ipt, &what);
	dst = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (!buf || dst == MAP_FAILED || null_fd < 0) {
		perror("stream-bench");
		return 1;
	}
	memset(dst, 1, size);
	printf("source: %s, %zu MiB\n", what, size >> 20);
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
	iptcap_close(ipt);	/* the session the source was mapped from */
	stream_part(size, regions, seconds, dir, mc_mb_s, (uint64_t)(start * (1 << 20)), steps);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * capture-bench: how fast libiptcap copies a trace out of a per-CPU buffer
 * in order (a wrapped ring is unrolled: [oldest, size) then [0, oldest)),
 * compared with plain memcpy of the same number of bytes in the same run.
 *
 * With /dev/ipt and a PT unit (or ipt_sim) it traces CPU 0 into a ring of
 * SIZE bytes for a moment and times iptcap_copy_trace() from the real
 * mapping; otherwise (or with --synthetic) it times iptcap_copy_segments()
 * on an anonymous mapping described as a ring that wrapped at a third of
 * its size, and says so.  Best of N runs; prints GiB/s and the ratio.
 *
 * Usage: capture-bench [--size SZ_MIB] [--runs N] [--synthetic]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "iptcap.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double gib_s(size_t bytes, double secs)
{
	return secs > 0 ? (double)bytes / secs / (double)(1ull << 30) : 0;
}

/* A real session on CPU 0: 0 with the trace ready in @ipt, or -1 and why. */
static int real_trace(size_t size, struct iptcap **out, struct ipt_trace_state *ts,
		      char *why, size_t len)
{
	static uint64_t mask = 1;
	struct iptcap_config cfg;
	struct iptcap *ipt;
	enum iptcap_err err;
	char msg[256];
	int i;

	err = iptcap_open(NULL, &ipt);
	if (err) {
		snprintf(why, len, "cannot open %s: %s", IPT_DEVICE_PATH, iptcap_strerror(err));
		return -1;
	}
	iptcap_config_init(&cfg);
	cfg.all_cpus = false;
	cfg.cpu_mask = &mask;
	cfg.cpu_mask_words = 1;
	cfg.buffer_size = size;
	err = iptcap_configure(ipt, &cfg, msg, sizeof(msg));
	if (!err)
		err = iptcap_start(ipt);
	if (err) {
		snprintf(why, len, "cannot trace CPU 0: %s", msg[0] ? msg : iptcap_strerror(err));
		iptcap_close(ipt);
		return -1;
	}
	/* Let the unit write for a second: ipt_sim at its rate, or whatever runs. */
	for (i = 0; i < 20; i++) {
		struct timespec d = { 0, 50 * 1000 * 1000 };

		nanosleep(&d, NULL);
	}
	iptcap_stop(ipt);
	iptcap_trace_state(ipt, 0, ts);
	if (!ts->bytes_valid) {
		snprintf(why, len, "the unit wrote nothing on CPU 0");
		iptcap_close(ipt);
		return -1;
	}
	*out = ipt;
	return 0;
}

int main(int argc, char **argv)
{
	size_t size = 256u << 20, n;
	int runs = 5, i;
	bool synthetic = false;
	struct ipt_trace_state ts;
	struct iptcap *ipt = NULL;
	const void *src;
	size_t srclen;
	char why[512] = "";
	unsigned char *dst, *buf = NULL;
	double best_memcpy = 1e9, best_copy = 1e9;
	struct iptcap_seg seg[2];
	int nseg;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = (size_t)strtoul(argv[++i], NULL, 10) << 20;
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--synthetic"))
			synthetic = true;
		else {
			fprintf(stderr, "usage: capture-bench [--size MIB] [--runs N] [--synthetic]\n");
			return 2;
		}
	}
	if (!size || runs < 1) {
		fprintf(stderr, "capture-bench: --size and --runs must be positive\n");
		return 2;
	}

	if (synthetic || real_trace(size, &ipt, &ts, why, sizeof(why))) {
		if (!why[0])
			snprintf(why, sizeof(why), "--synthetic given");
		buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED) {
			fprintf(stderr, "capture-bench: mmap %zu bytes: %s\n", size, strerror(errno));
			return 1;
		}
		for (n = 0; n < size; n++)
			buf[n] = (unsigned char)(n * 131 + 7);
		memset(&ts, 0, sizeof(ts));
		ts.buffer_size = ts.bytes_valid = size;
		ts.status = IPT_TS_WRAPPED;
		ts.head = ts.oldest = (size / 3) & ~(size_t)4095;
		src = buf;
		srclen = size;
		printf("source: SYNTHETIC anonymous mapping of %zu MiB described as a wrapped ring "
		       "(%s)\n", size >> 20, why);
	} else {
		if (iptcap_map(ipt, 0, &src, &srclen)) {
			fprintf(stderr, "capture-bench: cannot map the buffer of CPU 0\n");
			return 1;
		}
		printf("source: /dev/ipt, CPU 0, ring of %zu MiB, %s, %llu bytes of trace\n",
		       srclen >> 20, ts.status & IPT_TS_WRAPPED ? "wrapped" : "not wrapped",
		       (unsigned long long)ts.bytes_valid);
	}
	nseg = iptcap_trace_segments(&ts, seg);
	dst = malloc(ts.bytes_valid);
	if (!dst || nseg < 0) {
		fprintf(stderr, "capture-bench: out of memory or inconsistent trace state\n");
		return 1;
	}
	memset(dst, 0, ts.bytes_valid);	/* fault the destination in */
	for (i = 0; i < runs; i++) {
		double t0, t1;
		size_t done = 0;
		enum iptcap_err err;

		t0 = now();
		memcpy(dst, src, (size_t)ts.bytes_valid);
		t1 = now();
		if (t1 - t0 < best_memcpy)
			best_memcpy = t1 - t0;
		t0 = now();
		err = ipt ? iptcap_copy_trace(ipt, 0, dst, ts.bytes_valid, &done) :
			    iptcap_copy_segments(src, &ts, dst, ts.bytes_valid, &done);
		t1 = now();
		if (err || done != ts.bytes_valid) {
			fprintf(stderr, "capture-bench: copy failed: %s\n", iptcap_strerror(err));
			return 1;
		}
		if (t1 - t0 < best_copy)
			best_copy = t1 - t0;
	}
	/* The copy must be the trace in order: check where the ring was cut. */
	if (nseg == 2 && memcmp(dst, (const char *)src + seg[0].off, 4096)) {
		fprintf(stderr, "capture-bench: the copy is not in trace order\n");
		return 1;
	}
	printf("bytes per copy: %llu (%d piece%s), best of %d runs\n",
	       (unsigned long long)ts.bytes_valid, nseg, nseg == 1 ? "" : "s", runs);
	printf("memcpy:          %7.2f GiB/s\n", gib_s(ts.bytes_valid, best_memcpy));
	printf("iptcap copy-out: %7.2f GiB/s (%s)\n", gib_s(ts.bytes_valid, best_copy),
	       ipt ? "iptcap_copy_trace" : "iptcap_copy_segments");
	printf("ratio copy-out / memcpy: %.3f\n", best_memcpy / best_copy);
	free(dst);
	if (buf)
		munmap(buf, size);
	iptcap_close(ipt);
	return 0;
}

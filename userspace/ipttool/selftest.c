// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool selftest: does ipt work on this CPU?  (Documentation/man/
 * ipttool-selftest.8)
 *
 * Loads nothing: opens the device, reads the caps and runs four checks,
 * each with a verdict (PASS, FAIL, SKIP) and one line saying what to do:
 *
 * thread-trace  the bundled program (selftest_work.c) traced per thread,
 *               decoded with libipt against its own code in memory, must
 *               give exactly its instructions and branch outcomes
 * cpu-trace     the same, per CPU (address-filtered to the program)
 * pmi-wrap      a one-page ring must report the wrap count that the
 *               bytes of the same program in a large buffer predict
 * perf          perf's intel_pt and ipt refuse each other
 *
 * The simulated unit runs no code of ours: it writes what its feed says.
 * Against it the checks give it the program's trace as a feed (debugfs
 * task_feed or cpuN/feed, Documentation/simulator.rst), made here from
 * the same model, so that what is checked is ipt's capture, its buffers
 * and PMIs, and the decode against the real code; on silicon the CPU
 * traces the program itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <intel-pt.h>

#include "ipttool.h"

#ifndef IPT_VERSION
#define IPT_VERSION "unknown"
#endif

#define SIM_DIR		"/sys/kernel/debug/ipt_sim"
#define PT_TYPE_PATH	"/sys/bus/event_source/devices/intel_pt/type"
#define FEED_HDR	16
#define FEED_CTX_OFF	1
/* A bounded wait on the simulated unit's feed: never reached when it works. */
#define FEED_WAIT_S	30

/* ---- the pure parts: feed, decode, comparison (unit-tested) ------------- */

/* Append byte @b at *@pos of @buf (@cap bytes); false when full. */
static bool put8(uint8_t *buf, size_t cap, size_t *pos, uint8_t b)
{
	if (*pos >= cap)
		return false;
	buf[(*pos)++] = b;
	return true;
}

/* A TIP-class packet (@hdr: 0x11 TIP.PGE, 0x01 TIP.PGD) with a full 48-bit IP. */
static bool put_tip(uint8_t *buf, size_t cap, size_t *pos, uint8_t hdr, uint64_t ip)
{
	bool ok = put8(buf, cap, pos, (3 << 5) | hdr);	/* IPBytes 011 */

	for (int i = 0; i < 6; i++)
		ok = ok && put8(buf, cap, pos, ip >> (8 * i));
	return ok;
}

size_t selftest_tnt(const bool *bits, size_t nbits, uint8_t *buf, size_t cap)
{
	size_t pos = 0, i = 0;

	while (i < nbits) {
		size_t k = nbits - i > 47 ? 47 : nbits - i;
		uint64_t v = 1;		/* the stop bit, above the oldest bit */

		for (size_t j = 0; j < k; j++)
			v = v << 1 | bits[i + j];
		if (k <= 6) {		/* TNT-8 */
			if (!put8(buf, cap, &pos, v << 1))
				return 0;
		} else {		/* TNT-64: 02 a3, 6 bytes */
			if (!put8(buf, cap, &pos, 0x02) || !put8(buf, cap, &pos, 0xa3))
				return 0;
			for (int b = 0; b < 6; b++)
				if (!put8(buf, cap, &pos, v >> (8 * b)))
					return 0;
		}
		i += k;
	}
	return pos;
}

/* A feed record header (Documentation/simulator.rst, "Feed format"). */
static bool put_hdr(uint8_t *buf, size_t cap, size_t *pos, uint16_t len, uint64_t ip)
{
	bool ok = put8(buf, cap, pos, len) && put8(buf, cap, pos, len >> 8) &&
		  put8(buf, cap, pos, FEED_CTX_OFF) && put8(buf, cap, pos, 0);

	for (int i = 0; i < 4; i++)
		ok = ok && put8(buf, cap, pos, 0);
	for (int i = 0; i < 8; i++)
		ok = ok && put8(buf, cap, pos, ip >> (8 * i));
	return ok;
}

size_t selftest_run_packets(unsigned int n, uint64_t work, uint64_t after, uint8_t *buf,
			    size_t cap)
{
	size_t pos = 0, nb = selftest_expected_branches(n), t;
	bool *bits = calloc(nb, sizeof(*bits));

	if (!bits)
		return 0;
	for (size_t k = 0; k < nb; k++)
		bits[k] = selftest_expected_taken(n, k);
	if (!put_tip(buf, cap, &pos, 0x11, work)) {
		free(bits);
		return 0;
	}
	t = selftest_tnt(bits, nb, buf + pos, cap - pos);
	free(bits);
	if (!t)
		return 0;
	pos += t;
	return put_tip(buf, cap, &pos, 0x01, after) ? pos : 0;
}

size_t selftest_feed(unsigned int n, unsigned int runs, uint64_t work, uint64_t after,
		     uint8_t *buf, size_t cap)
{
	size_t pos = 0;

	/*
	 * The simulator evaluates FilterEn from a record's IP only at enable
	 * and when the thread comes back to a CPU, and plays records only
	 * while that made PacketEn (it does not model filtering inside an
	 * enabled span): so every record names the program's entry, which
	 * is in the filter range, and CTX_OFF keeps the unit from writing an
	 * IP packet of its own (no TIP.PGE at enable, no FUP in a PSB+).
	 * The packets of each call carry the IPs a real unit would write.
	 */
	if (!put_hdr(buf, cap, &pos, 0, work))
		return 0;
	for (unsigned int r = 0; r < runs; r++) {
		size_t hdr = pos, len;

		if (cap - pos < FEED_HDR)
			return 0;
		pos += FEED_HDR;
		len = selftest_run_packets(n, work, after, buf + pos, cap - pos);
		if (!len || len > 0xffff)
			return 0;
		pos += len;
		if (!put_hdr(buf, cap, &hdr, len, work))
			return 0;
	}
	return pos;
}

/* libipt's memory: this process's own readable code. */
static int read_own_code(uint8_t *dst, size_t size, const struct pt_asid *asid,
			 uint64_t ip, void *ctx)
{
	const struct selftest_image *img = ctx;

	(void)asid;
	for (unsigned int i = 0; i < img->nr; i++)
		if (ip >= img->start[i] && ip < img->end[i]) {
			size_t n = img->end[i] - ip < size ? img->end[i] - ip : size;

			memcpy(dst, (const void *)(uintptr_t)ip, n);
			return (int)n;
		}
	return -pte_nomap;
}

void selftest_image_work(struct selftest_image *img)
{
	img->nr = 1;
	img->start[0] = (uintptr_t)ipt_st_work;
	img->end[0] = (uintptr_t)ipt_st_work_end;
}

int selftest_image_self(struct selftest_image *img)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	img->nr = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && img->nr < SELFTEST_MAX_MAPS) {
		unsigned long long s, e;
		char perm[8];

		if (sscanf(line, "%llx-%llx %7s", &s, &e, perm) == 3 &&
		    perm[0] == 'r' && perm[2] == 'x') {
			img->start[img->nr] = s;
			img->end[img->nr++] = e;
		}
	}
	fclose(f);
	return img->nr ? 0 : -1;
}

/* Keep the first decode error of @d (libipt's status @err at @off). */
static void decode_error(struct selftest_decoded *d, int err, uint64_t off)
{
	if (!d->errors++)
		snprintf(d->first_error, sizeof(d->first_error), "%s at trace offset %#" PRIx64,
			 pt_errstr(pt_errcode(err)), off);
}

/* Record instruction @insn of the decode into @d. */
static void note_insn(struct selftest_decoded *d, const struct pt_insn *insn,
		      uint64_t lo, uint64_t hi)
{
	if (d->pending_cond) {
		bool taken = insn->ip != d->cond_next;

		if (d->nbranches < SELFTEST_MAX_BRANCHES)
			d->taken[d->nbranches / 8] |= taken << (d->nbranches % 8);
		d->nbranches++;
		d->pending_cond = false;
	}
	if (insn->ip < lo || insn->ip >= hi)
		return;
	d->insns++;
	if (insn->iclass == ptic_cond_jump) {
		d->pending_cond = true;
		d->cond_next = insn->ip + insn->size;
	}
}

int selftest_decode(const uint8_t *pt, size_t len, const struct ipt_caps *caps,
		    const struct selftest_image *img, uint64_t lo, uint64_t hi,
		    struct selftest_decoded *d)
{
	struct pt_insn_decoder *dec;
	struct pt_image *image;
	struct pt_config cfg;
	int status;

	memset(d, 0, sizeof(*d));
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)pt;
	cfg.end = (uint8_t *)pt + len;
	cfg.cpu.vendor = pcv_intel;
	cfg.cpu.family = caps->family;
	cfg.cpu.model = caps->model;
	cfg.cpu.stepping = caps->stepping;
	if (pt_cpu_errata(&cfg.errata, &cfg.cpu) < 0)
		return -1;
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec)
		return -1;
	image = pt_insn_get_image(dec);
	pt_image_set_callback(image, read_own_code, (void *)img);
	for (;;) {
		struct pt_insn insn;
		uint64_t off = 0;

		status = pt_insn_sync_forward(dec);
		if (status == -pte_eos)
			break;
		if (status < 0) {
			pt_insn_get_offset(dec, &off);
			decode_error(d, status, off);
			break;		/* no further PSB */
		}
		d->syncs++;
		/* what ran before the sync point is not known: no branch spans it */
		d->pending_cond = false;
		for (;;) {
			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				if (ev.type == ptev_overflow)
					d->overflows++;
			}
			if (status < 0)
				break;
			status = pt_insn_next(dec, &insn, sizeof(insn));
			/* on an error @insn holds nothing new: it counts as one */
			if (status >= 0)
				note_insn(d, &insn, lo, hi);
			if (status < 0)
				break;
		}
		if (status == -pte_eos)
			break;
		pt_insn_get_offset(dec, &off);
		decode_error(d, status, off);
	}
	/* a conditional branch with nothing after it: its outcome is unknown */
	if (d->pending_cond)
		d->unresolved++;
	pt_insn_free_decoder(dec);
	return 0;
}

int selftest_compare(const struct selftest_decoded *d, unsigned int n, char *why, size_t len)
{
	uint64_t want = selftest_expected_insns(n), nb = selftest_expected_branches(n);

	if (d->errors) {
		snprintf(why, len, "%" PRIu64 " decode error(s), the first: %s", d->errors,
			 d->first_error);
		return -1;
	}
	if (d->overflows) {
		snprintf(why, len, "the trace has %" PRIu64 " overflow(s) (the unit dropped bytes)",
			 d->overflows);
		return -1;
	}
	if (!d->syncs) {
		snprintf(why, len, "no PSB in the trace: nothing to decode");
		return -1;
	}
	for (uint64_t k = 0; k < nb && k < d->nbranches && k < SELFTEST_MAX_BRANCHES; k++) {
		bool got = d->taken[k / 8] >> (k % 8) & 1;

		if (got != selftest_expected_taken(n, k)) {
			snprintf(why, len, "branch %" PRIu64 " of %" PRIu64 " was %s, the program %s it",
				 k, nb, got ? "taken" : "not taken",
				 got ? "does not take" : "takes");
			return -1;
		}
	}
	if (d->nbranches != nb || d->unresolved) {
		snprintf(why, len, "%" PRIu64 " conditional branches decoded (%" PRIu64
			 " unresolved), the program has %" PRIu64, d->nbranches, d->unresolved, nb);
		return -1;
	}
	if (d->insns != want) {
		snprintf(why, len, "%" PRIu64 " instructions decoded, the program has %" PRIu64,
			 d->insns, want);
		return -1;
	}
	snprintf(why, len, "%" PRIu64 " instructions and %" PRIu64
		 " branch outcomes equal the program's", want, nb);
	return 0;
}

unsigned int selftest_pmi_runs(uint64_t ref_bytes, unsigned int ref_runs, uint64_t size,
			       unsigned int wraps)
{
	uint64_t per_run, runs;

	if (!ref_bytes || !ref_runs)
		return 0;
	per_run = (ref_bytes + ref_runs - 1) / ref_runs;
	/* (wraps + 1/2) rings of trace: a wrap boundary is half a ring away */
	runs = ((2 * wraps + 1) * size / 2 + per_run / 2) / per_run;
	return runs && runs <= 1u << 20 ? runs : 0;
}

/* ---- the checks ---------------------------------------------------------- */

#define WORK_N		2000	/* iterations of the program per run */
#define REF_RUNS	8	/* runs of the pmi-wrap reference */
#define PMI_WRAPS	3	/* wraps the ring must report */
#define RING_SIZE	4096	/* the smallest buffer the ABI allows */
#define REF_SIZE	(256 * 1024)

struct st {
	struct ipttool *t;
	struct iptcap *ipt;
	struct ipt_caps caps;
	bool sim;
	bool filter;		/* an address filter on the program is possible */
	int cpu;		/* -c, else the CPU selftest runs on */
	struct json_object *checks;
	int passed, failed, skipped;
};

/* One check's result: printed, and kept for the JSON report. */
static void verdict(struct st *s, const char *name, const char *v, struct json_object *nums,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void verdict(struct st *s, const char *name, const char *v, struct json_object *nums,
		    const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	if (!strcmp(v, "FAIL"))
		s->failed++;
	else if (!strcmp(v, "SKIP"))
		s->skipped++;
	else
		s->passed++;
	if (!s->t->json)
		printf("%-4s  %-12s  %s\n", v, name, reason);
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "verdict", json_object_new_string(v));
	json_object_object_add(o, "reason", json_object_new_string(reason));
	if (nums)
		json_object_object_add(o, "numbers", nums);
	json_object_array_add(s->checks, o);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Write all of @buf to debugfs file @path (truncated first); fd or -errno. */
static int sim_write_feed(const char *path, const uint8_t *buf, size_t len)
{
	int fd = open(path, O_RDWR | O_TRUNC);
	size_t done = 0;

	if (fd < 0)
		return -errno;
	while (done < len) {
		size_t k = len - done > 65536 ? 65536 : len - done;
		ssize_t w = write(fd, buf + done, k);

		if (w <= 0) {
			int err = w < 0 ? errno : EIO;

			close(fd);
			return -err;
		}
		done += w;
	}
	return fd;
}

/* Empty a feed again (O_TRUNC brings the unit's own program back). */
static void sim_clear_feed(const char *path)
{
	int fd = open(path, O_RDWR | O_TRUNC);

	if (fd >= 0)
		close(fd);
}

/*
 * Whether the feed in @fd (task_feed: "POS LEN") or in cpuN/stats ("feed
 * on POS/LEN") was used up.
 */
static bool feed_done(int fd, int cpu)
{
	char buf[16384], path[64];
	unsigned long long pos, total;
	size_t len = 0;
	ssize_t n;
	char *p;

	if (cpu < 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		if (n <= 0)
			return false;
		buf[n] = '\0';
		return sscanf(buf, "%llu %llu", &pos, &total) == 2 && pos == total;
	}
	snprintf(path, sizeof(path), SIM_DIR "/cpu%d/stats", cpu);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	p = strstr(buf, "\nfeed ");
	return p && sscanf(p, "\nfeed on %llu/%llu", &pos, &total) == 2 && pos == total;
}

static void base_config(struct st *s, struct iptcap_config *cfg, bool per_thread,
			uint64_t size, bool filter)
{
	iptcap_config_init(cfg);
	cfg->per_thread = per_thread;
	cfg->max_threads = 1;
	cfg->user = true;
	cfg->kernel = false;
	cfg->buffer_size = size;
	cfg->stop_on_full = false;
	if (filter) {
		cfg->ranges[0].start = (uintptr_t)ipt_st_work;
		cfg->ranges[0].end = (uintptr_t)ipt_st_work_end - 1;
		cfg->ranges[0].kind = IPT_RANGE_FILTER;
		cfg->nr_ranges = 1;
	}
	(void)s;
}

/**
 * struct run - one recording of the program
 * @runs: times the program runs
 * @ts: the trace's final state
 * @pt: the trace, @len bytes (malloc'ed)
 * @err: why it could not be recorded (one sentence), with @skip when it
 *       is not ipt's fault
 */
struct run {
	unsigned int runs;
	struct ipt_trace_state ts;
	uint8_t *pt;
	size_t len;
	char err[256];
	bool skip;
};

/* Run the program @runs times; on the sim, until its feed is used up. */
static int run_program(struct st *s, unsigned int runs, int feed_fd, int cpu, struct run *r)
{
	double deadline = now_s() + FEED_WAIT_S;

	for (unsigned int i = 0; i < runs; i++)
		ipt_st_call(WORK_N);
	if (!s->sim)
		return 0;
	/* a per-thread feed plays only while this thread runs: stay on the CPU */
	while (!feed_done(feed_fd, cpu)) {
		if (now_s() > deadline) {
			snprintf(r->err, sizeof(r->err),
				 "the simulated unit did not use the program's feed in %d s (was it traced?)",
				 FEED_WAIT_S);
			return -1;
		}
		if (cpu >= 0) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	return 0;
}

/*
 * Record the program @r->runs times, per thread (this thread) or (@cpu >=
 * 0) on CPU @cpu, into a buffer of @size bytes.  0, or -1 with @r->err.
 */
static int record_program_here(struct st *s, int cpu, uint64_t size, bool filter, struct run *r)
{
	char msg[256], feed_path[64] = "";
	struct iptcap_config cfg;
	uint64_t mask[1] = { 0 };
	enum iptcap_err err;
	unsigned int trace = 0;
	int feed_fd = -1, ret = -1;
	size_t copied;

	base_config(s, &cfg, cpu < 0, size, filter);
	if (cpu >= 0) {
		cpu_set_t set;

		if (cpu >= 64) {
			snprintf(r->err, sizeof(r->err), "CPU %d: this check uses CPUs 0-63", cpu);
			r->skip = true;
			return -1;
		}
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			snprintf(r->err, sizeof(r->err), "cannot run on CPU %d: %s", cpu,
				 strerror(errno));
			r->skip = true;
			return -1;
		}
		mask[0] = 1ull << cpu;
		cfg.all_cpus = false;
		cfg.cpu_mask = mask;
		cfg.cpu_mask_words = 1;
		trace = cpu;
	}
	err = iptcap_configure(s->ipt, &cfg, msg, sizeof(msg));
	if (err) {
		snprintf(r->err, sizeof(r->err), "configure: %s%s%.200s", iptcap_strerror(err),
			 *msg ? ": " : "", msg);
		if (err == IPTCAP_ERR_PERMISSION) {
			snprintf(r->err, sizeof(r->err),
				 "%s needs CAP_PERFMON: run as root to check it",
				 cpu >= 0 ? "per-CPU tracing" : "this session");
			r->skip = true;
		}
		return -1;
	}
	if (s->sim) {
		/* per call: a header, TIP.PGE, TNT-64s of 47 outcomes, TIP.PGD */
		size_t per = FEED_HDR + 7 + (2 * WORK_N + 46) / 47 * 8 + 7;
		size_t cap = FEED_HDR + (size_t)r->runs * per, len;
		uint8_t *feed = malloc(cap);

		len = feed ? selftest_feed(WORK_N, r->runs, (uintptr_t)ipt_st_work,
					   (uintptr_t)ipt_st_after, feed, cap) : 0;
		if (cpu >= 0)
			snprintf(feed_path, sizeof(feed_path), SIM_DIR "/cpu%d/feed", cpu);
		else
			snprintf(feed_path, sizeof(feed_path), SIM_DIR "/task_feed");
		feed_fd = len ? sim_write_feed(feed_path, feed, len) : -ENOMEM;
		free(feed);
		if (feed_fd < 0) {
			snprintf(r->err, sizeof(r->err),
				 "the simulated unit runs no code: it needs the program as a feed in %s: %s (run as root with debugfs mounted)",
				 feed_path, strerror(-feed_fd));
			r->skip = true;
			feed_path[0] = '\0';
			goto out;
		}
	}
	if (cpu < 0) {
		err = iptcap_attach(s->ipt, 0, 0, &trace);
		if (err) {
			snprintf(r->err, sizeof(r->err), "attaching this thread: %s",
				 iptcap_strerror(err));
			goto out;
		}
	}
	err = iptcap_start(s->ipt);
	if (err) {
		snprintf(r->err, sizeof(r->err), "start: %s", iptcap_strerror(err));
		goto out;
	}
	ret = run_program(s, r->runs, feed_fd, cpu, r);
	err = iptcap_stop(s->ipt);
	if (err && !ret) {
		snprintf(r->err, sizeof(r->err), "stop: %s", iptcap_strerror(err));
		ret = -1;
	}
	if (ret)
		goto out;
	ret = -1;
	err = iptcap_trace_state(s->ipt, trace, &r->ts);
	if (err) {
		snprintf(r->err, sizeof(r->err), "reading the trace state: %s",
			 iptcap_strerror(err));
		goto out;
	}
	r->pt = malloc(r->ts.bytes_valid ? r->ts.bytes_valid : 1);
	if (!r->pt) {
		snprintf(r->err, sizeof(r->err), "out of memory");
		goto out;
	}
	err = iptcap_copy_trace(s->ipt, trace, r->pt, r->ts.bytes_valid, &copied);
	if (err) {
		snprintf(r->err, sizeof(r->err), "copying the trace: %s", iptcap_strerror(err));
		goto out;
	}
	r->len = copied;
	ret = 0;
out:
	iptcap_release(s->ipt);
	if (feed_fd >= 0)
		close(feed_fd);
	if (feed_path[0])
		sim_clear_feed(feed_path);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		for (int i = 0; i < CPU_SETSIZE; i++)
			CPU_SET(i, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	return ret;
}

struct thread_job {
	struct st *s;
	uint64_t size;
	bool filter;
	struct run *r;
	int ret;
};

static void *record_thread(void *arg)
{
	struct thread_job *j = arg;

	j->ret = record_program_here(j->s, -1, j->size, j->filter, j->r);
	return NULL;
}

/*
 * Record the program @r->runs times, per thread (@cpu < 0) or on CPU @cpu.
 * Per thread, in a thread of its own that exits afterwards: on the
 * simulated unit a thread that wrote task_feed keeps that program (the
 * CPU's own waits while it runs), which must not outlive the check.
 */
static int record_program(struct st *s, int cpu, uint64_t size, bool filter, struct run *r)
{
	struct thread_job j = { .s = s, .size = size, .filter = filter, .r = r, .ret = -1 };
	pthread_t th;
	int err;

	if (cpu >= 0)
		return record_program_here(s, cpu, size, filter, r);
	err = pthread_create(&th, NULL, record_thread, &j);
	if (err) {
		snprintf(r->err, sizeof(r->err), "cannot start a thread: %s", strerror(err));
		return -1;
	}
	pthread_join(th, NULL);
	return j.ret;
}

static struct json_object *trace_numbers(const struct run *r, const struct selftest_decoded *d)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "iterations", json_object_new_int64(WORK_N));
	json_object_object_add(o, "expected_instructions",
			       json_object_new_int64(selftest_expected_insns(WORK_N)));
	json_object_object_add(o, "expected_branches",
			       json_object_new_int64(selftest_expected_branches(WORK_N)));
	json_object_object_add(o, "trace_bytes", json_object_new_int64(r->len));
	if (d) {
		json_object_object_add(o, "decoded_instructions", json_object_new_int64(d->insns));
		json_object_object_add(o, "decoded_branches", json_object_new_int64(d->nbranches));
		json_object_object_add(o, "decode_errors", json_object_new_int64(d->errors));
	}
	json_object_object_add(o, "switches", json_object_new_int64(r->ts.switches));
	return o;
}

/* thread-trace / cpu-trace: one run of the program, decoded exactly. */
static void check_trace(struct st *s, const char *name, int cpu)
{
	struct selftest_image img;
	struct selftest_decoded *d;
	struct run r = { .runs = 1 };
	char why[512];

	if (cpu >= 0 && !s->filter) {
		verdict(s, name, "SKIP", NULL,
			"needs address filtering (CPUID.(14H,0):EBX[2]) to single the program out on a shared CPU; thread-trace covers tracing here");
		return;
	}
	if (record_program(s, cpu, 64 * 1024, s->filter, &r)) {
		verdict(s, name, r.skip ? "SKIP" : "FAIL", NULL, "%s%s", r.err,
			r.skip ? "" : ": attach this report to a bug");
		return;
	}
	if (iptcap_trace_loss(&r.ts)) {
		verdict(s, name, "FAIL", trace_numbers(&r, NULL),
			"the trace lost data (%s) in a 64 KiB buffer: attach this report to a bug",
			iptcap_strerror(iptcap_trace_loss(&r.ts)));
		free(r.pt);
		return;
	}
	/* filtered: the program alone; else this whole process's code */
	if (s->filter && !s->sim)
		selftest_image_work(&img);
	else if (selftest_image_self(&img))
		selftest_image_work(&img);
	d = calloc(1, sizeof(*d));
	if (!d || selftest_decode(r.pt, r.len, &s->caps, &img, (uintptr_t)ipt_st_work,
				  (uintptr_t)ipt_st_work_end, d)) {
		verdict(s, name, "FAIL", NULL, "cannot set up libipt's decoder (out of memory?)");
	} else if (selftest_compare(d, WORK_N, why, sizeof(why))) {
		verdict(s, name, "FAIL", trace_numbers(&r, d),
			"%s: the trace does not match the program; attach this report to a bug",
			why);
	} else {
		verdict(s, name, "PASS", trace_numbers(&r, d), "%s", why);
	}
	free(d);
	free(r.pt);
}

/*
 * pmi-wrap: the smallest ring reports the wraps the program's bytes
 * predict.  Per CPU (on --cpu) where the program can be singled out there
 * (address filtering) and the caller may trace CPUs: there nothing but
 * the PMI handler counts a wrap before the stop, so a PMI that is never
 * delivered always shows (the stop takes one left pending, no more).  Per
 * thread otherwise: ipt also takes a PMI left pending when the thread
 * leaves a CPU (and re-arms the LVT), so lost PMIs show only when the
 * ring wraps again before the thread is switched out.
 */
static void check_pmi(struct st *s)
{
	struct run ref = { .runs = REF_RUNS }, ring = { 0 };
	struct json_object *nums;
	uint64_t want, total;
	int cpu = s->filter ? s->cpu : -1;

	if (cpu >= 0 && record_program(s, cpu, REF_SIZE, s->filter, &ref)) {
		if (!ref.skip) {
			verdict(s, "pmi-wrap", "FAIL", NULL, "reference run on CPU %d: %s", cpu,
				ref.err);
			return;
		}
		/* not permitted here: per thread */
		free(ref.pt);
		ref = (struct run){ .runs = REF_RUNS };
		cpu = -1;
	}
	if (cpu < 0 && record_program(s, -1, REF_SIZE, s->filter, &ref)) {
		verdict(s, "pmi-wrap", ref.skip ? "SKIP" : "FAIL", NULL,
			"reference run: %s", ref.err);
		return;
	}
	free(ref.pt);
	if (ref.ts.wrap_count || !ref.ts.bytes_captured) {
		verdict(s, "pmi-wrap", "FAIL", NULL,
			"the reference run of %u programs wrote %" PRIu64 " bytes with %" PRIu64
			" wraps into %u KiB: expected some bytes and no wrap; attach this report to a bug",
			REF_RUNS, (uint64_t)ref.ts.bytes_captured, (uint64_t)ref.ts.wrap_count,
			REF_SIZE / 1024);
		return;
	}
	ring.runs = selftest_pmi_runs(ref.ts.bytes_captured, REF_RUNS, RING_SIZE, PMI_WRAPS);
	if (!ring.runs) {
		verdict(s, "pmi-wrap", "FAIL", NULL, "the reference run's %" PRIu64
			" bytes give no usable run count", (uint64_t)ref.ts.bytes_captured);
		return;
	}
	total = (ref.ts.bytes_captured * ring.runs + REF_RUNS / 2) / REF_RUNS;
	want = total / RING_SIZE;
	if (record_program(s, cpu, RING_SIZE, s->filter, &ring)) {
		verdict(s, "pmi-wrap", ring.skip ? "SKIP" : "FAIL", NULL, "%s-byte ring: %s",
			"4096", ring.err);
		return;
	}
	free(ring.pt);
	nums = json_object_new_object();
	json_object_object_add(nums, "mode", json_object_new_string(cpu >= 0 ? "cpu" : "thread"));
	if (cpu >= 0)
		json_object_object_add(nums, "cpu", json_object_new_int(cpu));
	json_object_object_add(nums, "ring_bytes", json_object_new_int64(RING_SIZE));
	json_object_object_add(nums, "runs", json_object_new_int64(ring.runs));
	json_object_object_add(nums, "reference_runs", json_object_new_int64(REF_RUNS));
	json_object_object_add(nums, "reference_bytes",
			       json_object_new_int64(ref.ts.bytes_captured));
	json_object_object_add(nums, "expected_bytes", json_object_new_int64(total));
	json_object_object_add(nums, "expected_wraps", json_object_new_int64(want));
	json_object_object_add(nums, "bytes_captured",
			       json_object_new_int64(ring.ts.bytes_captured));
	json_object_object_add(nums, "wrap_count", json_object_new_int64(ring.ts.wrap_count));
	if (ring.ts.wrap_count != want)
		verdict(s, "pmi-wrap", "FAIL", nums,
			"a %d-byte ring reported %" PRIu64 " wraps for ~%" PRIu64
			" bytes of trace, expected %" PRIu64
			": ToPA PMIs are lost or extra; attach this report to a bug",
			RING_SIZE, (uint64_t)ring.ts.wrap_count, total, want);
	else if (ring.ts.bytes_captured != ring.ts.wrap_count * RING_SIZE + ring.ts.head)
		verdict(s, "pmi-wrap", "FAIL", nums,
			"bytes_captured %" PRIu64 " is not wraps x size + head (%" PRIu64
			"): attach this report to a bug", (uint64_t)ring.ts.bytes_captured,
			(uint64_t)(ring.ts.wrap_count * RING_SIZE + ring.ts.head));
	else
		verdict(s, "pmi-wrap", "PASS", nums,
			"a %d-byte ring reported %" PRIu64 " wraps for ~%" PRIu64 " bytes, as expected",
			RING_SIZE, want, total);
}

/* perf_event_open(2) of a user-only intel_pt event on this thread: fd or -errno. */
static int perf_pt_open(int type)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = type;
	a.exclude_kernel = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int perf_pt_type(void)
{
	char buf[32] = "";
	int fd = open(PT_TYPE_PATH, O_RDONLY), n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : -1;
}

/* perf: ipt refused while perf holds intel_pt, perf refused while ipt does. */
static void check_perf(struct st *s)
{
	struct iptcap_config cfg;
	struct json_object *nums;
	enum iptcap_err err;
	int type = perf_pt_type(), pfd;
	char msg[256];

	if (type < 0) {
		verdict(s, "perf", "SKIP", NULL,
			"no intel_pt PMU (%s): perf cannot use PT on this kernel, nothing to share",
			PT_TYPE_PATH);
		return;
	}
	nums = json_object_new_object();
	json_object_object_add(nums, "intel_pt_type", json_object_new_int64(type));
	pfd = perf_pt_open(type);
	if (pfd < 0) {
		verdict(s, "perf", "SKIP", nums,
			"perf_event_open of intel_pt refused (%s): run as root or lower kernel.perf_event_paranoid to check",
			strerror(-pfd));
		return;
	}
	base_config(s, &cfg, true, 64 * 1024, false);
	err = iptcap_configure(s->ipt, &cfg, msg, sizeof(msg));
	close(pfd);
	if (!err) {
		iptcap_release(s->ipt);
		verdict(s, "perf", "FAIL", nums,
			"ipt configured a session while perf's intel_pt event was active: both would program the unit; attach this report to a bug");
		return;
	}
	if (err != IPTCAP_ERR_BUSY) {
		verdict(s, "perf", "FAIL", nums,
			"ipt refused a session beside perf with '%s', not 'busy' (%s)",
			iptcap_strerror(err), msg);
		return;
	}
	err = iptcap_configure(s->ipt, &cfg, msg, sizeof(msg));
	if (err) {
		verdict(s, "perf", "FAIL", nums,
			"after perf's event closed, ipt still refuses a session: %s (%s)",
			iptcap_strerror(err), msg);
		return;
	}
	pfd = perf_pt_open(type);
	iptcap_release(s->ipt);
	if (pfd >= 0) {
		close(pfd);
		verdict(s, "perf", "FAIL", nums,
			"perf opened intel_pt while an ipt session held the unit: both would program it; attach this report to a bug");
		return;
	}
	if (pfd != -EBUSY) {
		verdict(s, "perf", "FAIL", nums,
			"perf was refused intel_pt during an ipt session with '%s', not EBUSY",
			strerror(-pfd));
		return;
	}
	verdict(s, "perf", "PASS", nums,
		"ipt refused a session while perf used intel_pt (busy), and perf got EBUSY while ipt held it");
}

/* ---- the report ---------------------------------------------------------- */

/* "model name" and "microcode" of the first CPU in /proc/cpuinfo. */
static void cpuinfo(struct json_object *cpu)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	bool name = false, ucode = false;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && !(name && ucode)) {
		char *v = strchr(line, ':');

		if (!v)
			continue;
		v += 1 + (v[1] == ' ');
		v[strcspn(v, "\n")] = '\0';
		if (!name && !strncmp(line, "model name", 10)) {
			json_object_object_add(cpu, "model_name", json_object_new_string(v));
			name = true;
		} else if (!ucode && !strncmp(line, "microcode", 9)) {
			json_object_object_add(cpu, "microcode", json_object_new_string(v));
			ucode = true;
		}
	}
	fclose(f);
}

struct json_object *selftest_report(const struct ipt_caps *caps, struct json_object *checks,
				    int failed)
{
	struct json_object *o = json_object_new_object(), *cpu = json_object_new_object();
	struct json_object *k = json_object_new_object();
	struct utsname u;

	json_object_object_add(o, "ipttool_version", json_object_new_string(IPT_VERSION));
	json_object_object_add(o, "abi_version", json_object_new_int64(IPT_ABI_VERSION));
	if (!uname(&u)) {
		json_object_object_add(k, "release", json_object_new_string(u.release));
		json_object_object_add(k, "version", json_object_new_string(u.version));
		json_object_object_add(k, "machine", json_object_new_string(u.machine));
	}
	json_object_object_add(o, "kernel", k);
	json_object_object_add(cpu, "vendor", json_object_new_string(caps->vendor));
	json_object_object_add(cpu, "family", json_object_new_int64(caps->family));
	json_object_object_add(cpu, "model", json_object_new_int64(caps->model));
	json_object_object_add(cpu, "stepping", json_object_new_int64(caps->stepping));
	cpuinfo(cpu);
	json_object_object_add(o, "cpu", cpu);
	json_object_object_add(o, "caps", caps_to_json(caps));
	json_object_object_add(o, "checks", checks);
	json_object_object_add(o, "result", json_object_new_string(failed ? "fail" : "pass"));
	return o;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: ipttool [-j] selftest [--json FILE] [--cpu N]\n\n"
		   "Check that ipt works on this CPU: trace a bundled program per thread and\n"
		   "per CPU and compare the decode with its known instructions, check ToPA PMI\n"
		   "wrap counts, and that perf's intel_pt and ipt refuse each other.\n"
		   "Exit status 1 when a check fails.\n\n"
		   "  --json FILE   also write the JSON report to FILE (-j: to stdout)\n"
		   "  --cpu N       the CPU of the per-CPU checks (default: the current one)\n"
		   "  -h, --help    this help\n");
}

int cmd_selftest(struct ipttool *t, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", required_argument, NULL, 'J' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct st s = { .t = t, .cpu = -1 };
	const char *json_file = NULL;
	struct json_object *report;
	enum iptcap_err err;
	char *end;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'J':
			json_file = optarg;
			break;
		case 'c':
			errno = 0;
			s.cpu = strtol(optarg, &end, 10);
			if (errno || *end || s.cpu < 0 || s.cpu >= 64) {
				ipt_err("selftest: --cpu %s: not a CPU number 0-63", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			ipt_err("selftest: option '%s' is unknown or needs an argument",
				argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		ipt_err("selftest: unexpected argument '%s'", argv[optind]);
		return 2;
	}
	err = iptcap_open(t->device, &s.ipt);
	if (err) {
		ipt_err_open(t, err);
		return 1;
	}
	err = iptcap_get_caps(s.ipt, &s.caps);
	if (err) {
		ipt_err("reading capabilities from %s: %s", t->device, iptcap_strerror(err));
		iptcap_close(s.ipt);
		return 1;
	}
	s.checks = json_object_new_array();
	s.sim = s.caps.backend == IPT_BACKEND_SIM;
	s.filter = (s.caps.features & IPT_FEAT_IP_FILTER) && s.caps.num_addr_ranges >= 1;
	if (s.cpu < 0)
		s.cpu = sched_getcpu() >= 0 && sched_getcpu() < 64 ? sched_getcpu() : 0;

	if (s.caps.unavailable != IPT_UNAVAIL_NONE) {
		const char *why = iptcap_unavail_str(s.caps.unavailable);

		verdict(&s, "unit", "FAIL", NULL,
			"Intel PT is unavailable: %s; nothing else can be checked (see ipttool caps)",
			why ? why : "unknown reason");
	} else {
		verdict(&s, "unit", "PASS", NULL, "Intel PT on %s %u/%u/%u, %s backend",
			s.caps.vendor, s.caps.family, s.caps.model, s.caps.stepping,
			s.sim ? "sim" : iptcap_backend_name(s.caps.backend));
		check_trace(&s, "thread-trace", -1);
		check_trace(&s, "cpu-trace", s.cpu);
		check_pmi(&s);
		check_perf(&s);
	}
	iptcap_close(s.ipt);

	report = selftest_report(&s.caps, s.checks, s.failed);
	if (!t->json)
		printf("%s: %d passed, %d failed, %d skipped\n", s.failed ? "FAIL" : "PASS",
		       s.passed, s.failed, s.skipped);
	ret = s.failed ? 1 : 0;
	if (json_file) {
		FILE *f = fopen(json_file, "w");

		if (!f) {
			ipt_err("selftest: --json %s: %s", json_file, strerror(errno));
			ret = 1;
		} else {
			fprintf(f, "%s\n", json_object_to_json_string_ext(report,
				JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
			if (ipt_close_out(f, json_file))
				ret = 1;
		}
	}
	if (t->json) {
		if (ipt_print_json(t, report))
			ret = 1;
	} else {
		json_object_put(report);
	}
	return ret;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool record: trace every CPU (-a) or some (-C), or threads (a
 * command from its first instruction, or running threads with -p) into a
 * capture directory, until the command ends, --duration passes, or
 * SIGINT/SIGTERM (-p: also when every traced thread has exited).
 */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipttool.h"

int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	default:
		return -1;
	}
	if (*end && end[1])
		return -1;
	if (shift && v > (~0ull >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

int parse_cpu_list(const char *s, uint64_t *mask, unsigned int words)
{
	unsigned long max = (unsigned long)words * 64 - 1;

	memset(mask, 0, words * sizeof(*mask));
	if (!s || !*s)
		return -1;
	for (;;) {
		unsigned long a, b, i;
		char *end;

		if (*s < '0' || *s > '9')
			return -1;
		errno = 0;
		a = strtoul(s, &end, 10);
		if (errno || a > max)
			return -1;
		b = a;
		s = end;
		if (*s == '-') {
			s++;
			if (*s < '0' || *s > '9')
				return -1;
			b = strtoul(s, &end, 10);
			if (errno || b > max || b < a)
				return -1;
			s = end;
		}
		for (i = a; i <= b; i++)
			mask[i / 64] |= 1ull << (i % 64);
		if (!*s)
			return 0;
		if (*s != ',')
			return -1;
		s++;
	}
}

static int parse_u64(const char *s, const char **end, uint64_t *out)
{
	unsigned long long v;
	char *e;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &e, 0);
	if (errno || e == s)
		return -1;
	*out = v;
	*end = e;
	return 0;
}

int parse_range(const char *s, uint64_t *start, uint64_t *end)
{
	const char *p;

	if (parse_u64(s, &p, start) || *p != '-' || parse_u64(p + 1, &p, end) || *p)
		return -1;
	return *start <= *end ? 0 : -1;
}

/*
 * FILE:SYMBOL: the symbol's bytes in a file that is not position-
 * independent (an ET_EXEC program, or a vmlinux), where the address in the
 * file is the address at run time.  0, or -1 with @msg.
 */
static int range_of_symbol(const char *opt, const char *arg, uint64_t *start, uint64_t *end,
			   char *msg, size_t len)
{
	char file[4096], err[512];
	const char *colon = strrchr(arg, ':');
	uint64_t value, size;
	bool pie;

	if (colon == arg || !colon[1] || (size_t)(colon - arg) >= sizeof(file)) {
		snprintf(msg, len, "%s '%s': give FILE:SYMBOL, e.g. ./prog:main", opt, arg);
		return -1;
	}
	memcpy(file, arg, (size_t)(colon - arg));
	file[colon - arg] = '\0';
	if (iptcap_elf_symbol(file, colon + 1, &value, &size, &pie, err, sizeof(err))) {
		snprintf(msg, len, "%s '%s': %s", opt, arg, err);
		return -1;
	}
	if (pie) {
		snprintf(msg, len, "%s '%s': %s is position-independent (ET_DYN): where %s lies is "
			 "known only once it is loaded; give its addresses as START-END", opt, arg,
			 file, colon + 1);
		return -1;
	}
	if (!size) {
		snprintf(msg, len, "%s '%s': the symbol has no size; give START-END", opt, arg);
		return -1;
	}
	*start = value;
	*end = value + size - 1;
	return 0;
}

/* Parse -p's "TID[,TID...]" into @o->tids; 0, or -1 with @msg. */
static int parse_tids(const char *arg, struct record_opts *o, char *msg, size_t len)
{
	const char *s = arg;

	for (;;) {
		unsigned long v;
		char *end;
		unsigned int i;

		errno = 0;
		v = *s >= '0' && *s <= '9' ? strtoul(s, &end, 10) : 0;
		if (!v || errno || v > 0x7fffffffUL || (*end && *end != ',')) {
			snprintf(msg, len, "-p '%s': give thread ids, e.g. -p 1234 or -p 1234,1240",
				 arg);
			return -1;
		}
		for (i = 0; i < o->nr_tids; i++)
			if (o->tids[i] == v) {
				snprintf(msg, len, "-p '%s': thread %lu is given twice", arg, v);
				return -1;
			}
		if (o->nr_tids == RECORD_MAX_TIDS) {
			snprintf(msg, len, "-p: at most %d threads", RECORD_MAX_TIDS);
			return -1;
		}
		o->tids[o->nr_tids++] = (uint32_t)v;
		if (!*end)
			return 0;
		s = end + 1;
	}
}

int record_parse(int argc, char **argv, struct record_opts *o, char *msg, size_t len)
{
	enum { O_SIZE = 256, O_RING, O_SOF, O_USER, O_KERNEL, O_TSC, O_MTC, O_CYC, O_PSB,
	       O_NORETC, O_DURATION, O_FILTER, O_STOP_RANGE, O_CR3, O_NO_SB, O_THREADS,
	       O_NO_INHERIT, O_REGIONS, O_PROGRESS };
	static const struct option opts[] = {
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "size", required_argument, NULL, O_SIZE },
		{ "ring", no_argument, NULL, O_RING },
		{ "stop-on-full", no_argument, NULL, O_SOF },
		{ "user", no_argument, NULL, O_USER },
		{ "kernel", no_argument, NULL, O_KERNEL },
		{ "tsc", no_argument, NULL, O_TSC },
		{ "mtc", required_argument, NULL, O_MTC },
		{ "cyc", required_argument, NULL, O_CYC },
		{ "psb", required_argument, NULL, O_PSB },
		{ "no-retcomp", no_argument, NULL, O_NORETC },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "filter", required_argument, NULL, O_FILTER },
		{ "stop-range", required_argument, NULL, O_STOP_RANGE },
		{ "cr3", required_argument, NULL, O_CR3 },
		{ "no-sideband", no_argument, NULL, O_NO_SB },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "no-inherit", no_argument, NULL, O_NO_INHERIT },
		{ "regions", required_argument, NULL, O_REGIONS },
		{ "progress", no_argument, NULL, O_PROGRESS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	bool all = false, cpus = false, user = false, kernel = false, ring = false;
	bool size_given = false;
	unsigned long threads = 0;
	unsigned long v;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	iptcap_config_init(&o->cfg);
	o->out_dir = "ipt.data";
	optind = 0;	/* glibc: a full reset, so that parsing can be repeated */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+aC:p:o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			all = true;
			break;
		case 'C':
			if (parse_cpu_list(optarg, o->cpu_mask, IPT_MAX_CPU_MASK_WORDS)) {
				snprintf(msg, len, "-C '%s': not a CPU list like 0-3,5", optarg);
				return 2;
			}
			cpus = true;
			break;
		case 'p':
			if (parse_tids(optarg, o, msg, len))
				return 2;
			break;
		case O_THREADS:
			if (parse_uint(optarg, IPT_MAX_THREADS, &threads) || !threads) {
				snprintf(msg, len, "--threads '%s': give the number of threads to "
					 "trace, 1..%d", optarg, IPT_MAX_THREADS);
				return 2;
			}
			break;
		case O_NO_INHERIT:
			o->no_inherit = true;
			break;
		case 'o':
			if (!*optarg) {
				snprintf(msg, len, "-o: empty directory name");
				return 2;
			}
			o->out_dir = optarg;
			break;
		case O_SIZE:
			if (parse_size(optarg, &o->cfg.buffer_size) || !o->cfg.buffer_size ||
			    o->cfg.buffer_size % 4096) {
				snprintf(msg, len, "--size '%s': give a multiple of 4096 bytes, "
					 "e.g. 64K, 4M, 1G", optarg);
				return 2;
			}
			size_given = true;
			break;
		case O_RING:
			ring = true;
			break;
		case O_SOF:
			o->cfg.stop_on_full = true;
			break;
		case O_REGIONS:
			if (parse_uint(optarg, IPT_STREAM_MAX_REGIONS, &v) ||
			    v < IPT_STREAM_MIN_REGIONS || (v & (v - 1))) {
				snprintf(msg, len, "--regions '%s': give a power of two from %d to %d",
					 optarg, IPT_STREAM_MIN_REGIONS, IPT_STREAM_MAX_REGIONS);
				return 2;
			}
			o->cfg.nr_regions = (unsigned int)v;
			break;
		case O_PROGRESS:
			o->progress = true;
			break;
		case O_USER:
			user = true;
			break;
		case O_KERNEL:
			kernel = true;
			break;
		case O_TSC:
			o->cfg.tsc = true;
			break;
		case O_MTC:
		case O_CYC:
		case O_PSB:
			if (parse_uint(optarg, 31, &v)) {
				snprintf(msg, len, "--%s '%s': give an encoding 0..31 (see 'ipttool caps')",
					 c == O_MTC ? "mtc" : c == O_CYC ? "cyc" : "psb", optarg);
				return 2;
			}
			if (c == O_MTC)
				o->cfg.mtc_freq = (int)v;
			else if (c == O_CYC)
				o->cfg.cyc_thresh = (int)v;
			else
				o->cfg.psb_freq = (int)v;
			break;
		case O_NORETC:
			o->cfg.no_retcomp = true;
			break;
		case O_DURATION:
			o->duration = strtod(optarg, &end);
			if (end == optarg || *end || !(o->duration > 0) || o->duration > 1e7) {
				snprintf(msg, len, "--duration '%s': give a positive number of seconds",
					 optarg);
				return 2;
			}
			break;
		case O_FILTER:
		case O_STOP_RANGE: {
			struct ipt_addr_range *r = &o->cfg.ranges[o->cfg.nr_ranges];
			const char *name = c == O_FILTER ? "--filter" : "--stop-range";

			if (o->cfg.nr_ranges == IPT_MAX_ADDR_RANGES) {
				snprintf(msg, len, "%s %s: at most %d address ranges "
					 "(--filter and --stop-range together)", name, optarg,
					 IPT_MAX_ADDR_RANGES);
				return 2;
			}
			uint64_t a, b;
			const char *colon = strrchr(optarg, ':');

			if (colon) {
				if (range_of_symbol(name, optarg, &a, &b, msg, len))
					return 2;
			} else if (parse_range(optarg, &a, &b)) {
				snprintf(msg, len, "%s '%s': give START-END, addresses in hex "
					 "(0x401000-0x401fff) or decimal, END inclusive, START <= END, "
					 "or FILE:SYMBOL", name, optarg);
				return 2;
			}
			r->start = a;
			r->end = b;
			r->kind = c == O_FILTER ? IPT_RANGE_FILTER : IPT_RANGE_STOP;
			o->cfg.nr_ranges++;
			break;
		}
		case O_CR3: {
			const char *e;

			if (parse_u64(optarg, &e, &o->cfg.cr3_match) || *e) {
				snprintf(msg, len, "--cr3 '%s': give the raw CR3 value, e.g. 0x1a2b3000",
					 optarg);
				return 2;
			}
			o->cfg.cr3_filter = true;
			break;
		}
		case O_NO_SB:
			o->no_sideband = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			o->help = true;
			return 0;
		default:
			if (optopt && optopt < 256 && strchr("Cpo", optopt))
				snprintf(msg, len, "-%c needs an argument", optopt);
			else if (optopt)
				snprintf(msg, len, "option needs an argument or is unknown: '%s'",
					 argv[optind - 1]);
			else
				snprintf(msg, len, "unknown option '%s'", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc)
		o->prog_argv = argv + optind;
	if (all && cpus) {
		snprintf(msg, len, "-a and -C exclude each other");
		return 2;
	}
	if (ring && o->cfg.stop_on_full) {
		snprintf(msg, len, "--ring and --stop-on-full exclude each other");
		return 2;
	}
	o->buffer_given = ring || o->cfg.stop_on_full;
	if (o->buffer_given && o->cfg.nr_regions) {
		snprintf(msg, len, "--regions divides a stream: --ring and --stop-on-full do not "
			 "stream");
		return 2;
	}
	/* Streaming is the default; cmd_record drops it when the kernel cannot. */
	o->cfg.stream = !o->buffer_given;
	if (o->nr_tids && (all || cpus)) {
		snprintf(msg, len, "-p traces threads, -a and -C trace CPUs: give one of them");
		return 2;
	}
	if (o->nr_tids && o->prog_argv) {
		snprintf(msg, len, "-p and a command exclude each other: -p attaches threads that "
			 "run already");
		return 2;
	}
	if (!all && !cpus && !o->nr_tids && !o->prog_argv) {
		snprintf(msg, len, "what to record: give a command after -- (per-thread), "
			 "-p TID, -a, or -C CPUS");
		return 2;
	}
	if ((all || cpus) && (threads || o->no_inherit)) {
		snprintf(msg, len, "%s applies to per-thread recording (a command without -a/-C, "
			 "or -p)", threads ? "--threads" : "--no-inherit");
		return 2;
	}
	if (!all && !cpus) {
		o->cfg.per_thread = true;
		o->cfg.max_threads = threads ? (unsigned int)threads : RECORD_THREAD_MAX;
		if (o->nr_tids > o->cfg.max_threads) {
			snprintf(msg, len, "-p gives %u threads, more than --threads %u", o->nr_tids,
				 o->cfg.max_threads);
			return 2;
		}
		if (!size_given) {
			o->cfg.buffer_size = RECORD_THREAD_SIZE;
			o->size_default = true;
		}
		/* A thread's user code unless asked: the kernel needs CAP_PERFMON. */
		if (!user && !kernel)
			user = true;
	}
	if (user || kernel) {
		o->cfg.user = user;
		o->cfg.kernel = kernel;
	}
	o->cfg.all_cpus = all;
	if (cpus) {
		unsigned int w = IPT_MAX_CPU_MASK_WORDS;

		while (w > 1 && !o->cpu_mask[w - 1])
			w--;
		o->cfg.cpu_mask = o->cpu_mask;
		o->cfg.cpu_mask_words = w;
	}
	return 0;
}

static void record_usage(FILE *f)
{
	fprintf(f,
		"Usage: ipttool record [OPTIONS] -- PROG ARGS...     (per-thread)\n"
		"       ipttool record [OPTIONS] -p TID[,TID...]     (per-thread)\n"
		"       ipttool record {-a | -C CPUS} [OPTIONS] [--] [PROG ARGS...]  (per-CPU)\n\n"
		"  -a, --all-cpus      trace every CPU\n"
		"  -C, --cpu CPUS      trace these CPUs (e.g. 0-3,5)\n"
		"  -p, --tid TIDS      trace these running threads (and what they create)\n"
		"  --threads N         per-thread: traces the session holds (default 64)\n"
		"  --no-inherit        per-thread: do not trace new threads and children\n"
		"  -o, --output DIR    capture directory (default ipt.data)\n"
		"  --size SZ           buffer per CPU (default 4M) or per thread (default 1M),\n"
		"                      a multiple of 4K; without CAP_IPC_LOCK the per-thread\n"
		"                      default is lowered to fit the locked-memory limit\n"
		"                      (streamed: the buffer is written out while tracing)\n"
		"  --ring              no streaming: a ring that keeps the newest data\n"
		"  --stop-on-full      no streaming: stop a trace when its buffer is full\n"
		"  --regions N         streaming: interrupts per buffer, a power of two\n"
		"                      from 2 to 64 (default 8)\n"
		"  --user, --kernel    trace only user / kernel code (default: both per CPU,\n"
		"                      user per thread)\n"
		"  --tsc               TSC packets\n"
		"  --mtc N             MTC packets, period encoding N\n"
		"  --cyc N             CYC packets, threshold encoding N\n"
		"  --psb N             PSB period encoding N\n"
		"  --no-retcomp        disable return compression\n"
		"  --duration SEC      stop after SEC seconds\n"
		"  --filter START-END  trace only inside this address range (repeatable);\n"
		"                      FILE:SYMBOL for a function of a non-PIE program\n"
		"  --stop-range START-END  stop tracing when entering this range\n"
		"  --cr3 VALUE         trace only while CR3 is VALUE (raw, e.g. 0x1a2b3000)\n"
		"  --no-sideband       no perf sideband (the /proc snapshot is still taken)\n"
		"  -q, --quiet         no progress line on a terminal\n"
		"  --progress          the progress line also when stderr is not a terminal\n"
		"Records until PROG exits, --duration passes, or SIGINT (Ctrl-C); -p also\n"
		"until every traced thread has exited. Per-thread: one thread-TID.pt per\n"
		"traced thread. See ipttool-record(8).\n");
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

void record_child_signals(const sigset_t *mask)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
}

/*
 * SIGPIPE (stderr or a progress pipe closed) is caught, not fatal: the
 * write fails with EPIPE, and the recording ends as with any write
 * error, its capture saying so.  A caught signal is SIG_DFL again in the
 * command after exec.
 */
static void on_sigpipe(int sig)
{
	(void)sig;
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Create @dir, or reuse an empty one or an older capture (its files go).
 * A directory holding only meta.json's reserve and temporary file is a
 * capture that was killed before its first meta.json: reused too.
 */
int capture_prepare_dir(const char *dir, char *msg, size_t len)
{
	char path[4096];
	struct dirent *e;
	bool capture = false, other = false, cpufiles = false;
	DIR *d;

	if (!mkdir(dir, 0755))
		return 0;
	if (errno != EEXIST) {
		snprintf(msg, len, "cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	d = opendir(dir);
	if (!d) {
		snprintf(msg, len, "%s: %s", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(e->d_name, CAPTURE_META))
			capture = true;
		else if (!strcmp(e->d_name, CAPTURE_META ".tmp") ||
			 !strcmp(e->d_name, CAPTURE_META_RESERVE))
			;	/* written before anything else: ours either way */
		else if (!strncmp(e->d_name, "cpu", 3) ||
			 (!strncmp(e->d_name, "thread-", 7) && strstr(e->d_name, ".pt")) ||
			 !strcmp(e->d_name, CAPTURE_SIDEBAND) ||
			 (!strncmp(e->d_name, "vdso", 4) && strstr(e->d_name, ".so")))
			cpufiles = true;
		else
			other = true;
	}
	if (other || (cpufiles && !capture)) {
		closedir(d);
		snprintf(msg, len, "%s exists and is not an ipt capture: remove it or choose "
			 "another with -o", dir);
		return -1;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	}
	closedir(d);
	return 0;
}

void capture_thread_file(struct capture_trace *traces, size_t i)
{
	size_t k;

	for (k = 0; k < i; k++)
		if (traces[k].ts.tid == traces[i].ts.tid)
			break;
	if (k < i)
		snprintf(traces[i].file, sizeof(traces[i].file), "thread-%u.%u.pt",
			 traces[i].ts.tid, traces[i].cpu);
	else
		snprintf(traces[i].file, sizeof(traces[i].file), "thread-%u.pt", traces[i].ts.tid);
}

int capture_collect(struct iptcap *ipt, struct capture *c)
{
	enum iptcap_err err;
	unsigned int cpu, count = c->per_thread ? c->config.max_threads : c->caps.nr_cpus;
	int rc;

	c->nr_traces = 0;
	memset(c->traces, 0, (count ? count : 1) * sizeof(*c->traces));
	for (cpu = 0; cpu < count; cpu++) {
		struct capture_trace *tr = &c->traces[c->nr_traces];
		struct iptcap_seg segs[2];
		const void *buf = NULL;
		size_t blen;
		int n;

		err = iptcap_trace_state(ipt, cpu, &tr->ts);
		if (err == IPTCAP_ERR_NO_SUCH_CPU)
			continue;
		if (err == IPTCAP_ERR_NO_SUCH_TRACE)
			break;	/* traces are handed out in order: no more */
		tr->cpu = cpu;
		c->nr_traces++;
		if (err) {
			capture_incomplete(c, "reading the state of %s%u failed: %s",
					   c->per_thread ? "trace " : "cpu", cpu, iptcap_strerror(err));
			continue;
		}
		if (c->per_thread)
			capture_thread_file(c->traces, c->nr_traces - 1);
		n = iptcap_trace_segments(&tr->ts, segs);
		if (n < 0) {
			capture_incomplete(c, "%s: the driver reported an inconsistent "
					   "trace position", tr->file[0] ? tr->file : "cpu");
			n = 0;
		}
		if (n) {
			err = iptcap_map(ipt, cpu, &buf, &blen);
			if (err) {
				capture_incomplete(c, "mapping the buffer of %s%u failed: %s",
						   c->per_thread ? "trace " : "cpu", cpu,
						   strerror(iptcap_last_errno(ipt)));
				n = 0;
			}
		}
		rc = capture_write_trace(c, tr, buf, segs, n);
		if (rc)
			ipt_err("writing %s/%s: %s (wrote %" PRIu64 " of %" PRIu64 " bytes)",
				c->dir, tr->file, strerror(rc), tr->written,
				(uint64_t)tr->ts.bytes_valid);
	}
	rc = capture_write_meta(c);
	if (rc) {
		ipt_err("cannot write %s/%s: %s; the capture stays marked incomplete",
			c->dir, CAPTURE_META, strerror(rc));
		capture_incomplete(c, "writing the metadata failed: %s", strerror(rc));
	}
	return c->complete ? 0 : 1;
}

/* The record/start option that sets the field @e names. */
static const char *config_option(const struct iptcap_config *cfg,
				 const struct iptcap_config_error *e)
{
	switch (e->field) {
	case IPTCAP_FIELD_CPUS:
		return "-C";
	case IPTCAP_FIELD_MAX_THREADS:
		return "--threads";
	case IPTCAP_FIELD_BUFFER_SIZE:
		return "--size";
	case IPTCAP_FIELD_PRIVILEGE:
		return "--user/--kernel";
	case IPTCAP_FIELD_MTC_FREQ:
		return "--mtc";
	case IPTCAP_FIELD_CYC_THRESH:
		return "--cyc";
	case IPTCAP_FIELD_PSB_FREQ:
		return "--psb";
	case IPTCAP_FIELD_RANGES:
		if (e->index < 0 || (unsigned int)e->index >= cfg->nr_ranges)
			return "--filter/--stop-range";
		return cfg->ranges[e->index].kind == IPT_RANGE_STOP ? "--stop-range" : "--filter";
	case IPTCAP_FIELD_CR3_MATCH:
		return "--cr3";
	case IPTCAP_FIELD_STREAM:
		return "--regions";
	case IPTCAP_FIELD_NONE:
		break;
	}
	return "";
}

enum iptcap_err check_config(const struct iptcap_config *cfg, const struct ipt_caps *caps,
			     struct ipt_config *out, char *msg, size_t msg_len)
{
	struct iptcap_config_error e;
	enum iptcap_err err;

	err = iptcap_config_check(cfg, caps, out, &e);
	if (err)
		iptcap_config_error_format(&e, config_option(cfg, &e), msg, msg_len);
	return err;
}

void err_session(const struct ipttool *t, enum iptcap_err err, const char *what,
			const char *detail)
{
	ipt_err("%s: %s", what, detail && *detail ? detail : iptcap_strerror(err));
	switch (err) {
	case IPTCAP_ERR_BUSY:
		holders_describe(t->device, stderr);
		break;
	case IPTCAP_ERR_PERMISSION:
		fprintf(stderr, "  Run as root, or give ipttool CAP_PERFMON (tracing the kernel "
			"needs it).\n");
		break;
	case IPTCAP_ERR_NOMEM:
		fprintf(stderr, "  The buffers could not be allocated: try a smaller --size or "
			"fewer CPUs.\n");
		break;
	case IPTCAP_ERR_CAPABILITY:
		fprintf(stderr, "  '%s caps' shows what this PT unit supports.\n", "ipttool");
		break;
	case IPTCAP_ERR_NO_PT:
		fprintf(stderr, "  This CPU has no usable Intel PT. To try ipttool without it, "
			"load the simulated unit: 'insmod ipt_sim.ko'.\n");
		break;
	default:
		break;
	}
}

void print_summary(const struct ipttool *t, const struct capture *c)
{
	size_t i;

	if (t->json) {
		ipt_print_json(t, capture_meta_json(c));
		return;
	}
	for (i = 0; i < c->nr_traces; i++) {
		const struct capture_trace *tr = &c->traces[i];

		if (c->per_thread) {
			fprintf(stderr, "ipttool: %s: tid %u, trace %u", tr->file, tr->ts.tid, tr->cpu);
			if (tr->ts.parent != IPT_TRACE_NONE)
				fprintf(stderr, " (parent trace %u)", tr->ts.parent);
			fprintf(stderr, ", %" PRIu64 " bytes%s%s", tr->written,
				tr->ts.status & IPT_TS_EXITED ? ", exited" : "",
				tr->ts.status & IPT_TS_DETACHED ? ", detached" : "");
			if (tr->ts.missed)
				fprintf(stderr, ", %u new threads NOT traced (no free trace: raise "
					"--threads)", tr->ts.missed);
			if (tr->ts.busy)
				fprintf(stderr, ", %" PRIu64 " gaps (PT unit busy)",
					(uint64_t)tr->ts.busy);
		} else {
			fprintf(stderr, "ipttool: cpu%u.pt: %" PRIu64 " bytes", tr->cpu, tr->written);
		}
		if (tr->ts.status & IPT_TS_WRAPPED)
			fprintf(stderr, ", ring wrapped %" PRIu64 " times, %" PRIu64
				" older bytes overwritten", (uint64_t)tr->ts.wrap_count,
				(uint64_t)tr->ts.bytes_lost);
		if (tr->ts.status & IPT_TS_FULL)
			fprintf(stderr, ", buffer full: tracing stopped early");
		if (tr->ts.status & IPT_TS_ERROR)
			fprintf(stderr, ", the PT unit reported an error");
		fputc('\n', stderr);
	}
	if (c->sb.cpus) {
		uint64_t recs = 0;
		int k;

		for (k = IPTCAP_SB_MMAP; k < IPTCAP_SB_OTHER; k++)
			recs += c->sb.counts[k];
		fprintf(stderr, "ipttool: sideband: %" PRIu64 " perf records, %" PRIu64
			" lost; snapshot of %" PRIu64 " processes\n", recs, c->sb.lost,
			c->sb.snap.processes);
	}
	else if (c->sb.have_snap)
		fprintf(stderr, "ipttool: sideband: snapshot of %" PRIu64 " processes only (%s)\n",
			c->sb.snap.processes, c->sb.perf_skipped);
	if (c->per_thread && c->prog.argv) {
		if (c->prog.exited)
			fprintf(stderr, "ipttool: %s exited with status %d\n", c->prog.argv[0],
				c->prog.status);
		else if (c->prog.signal)
			fprintf(stderr, "ipttool: %s was killed by signal %d (%s)\n", c->prog.argv[0],
				c->prog.signal, strsignal(c->prog.signal));
	}
	fprintf(stderr, "ipttool: capture in %s%s%s\n", c->dir,
		c->complete ? "" : " is INCOMPLETE: ", c->complete ? "" : c->reason);
}

/* ---- progress on a terminal ---------------------------------------------- */

/**
 * struct progress - the progress line of a recording
 * @cpus: the session's CPUs, @nr of them
 * @bufs: their mapped buffers (NULL if mapping failed), @lens their sizes
 * @stop_on_full: the buffers stop when full (else rings)
 */
struct progress {
	unsigned int *cpus;
	const void **bufs;
	size_t *lens;
	unsigned int nr;
	bool stop_on_full;
};

static bool page_used(const unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += 64)	/* any non-zero byte, a line at a time */
		if (p[i] || memcmp(p + i, p + i + 1, 63))
			return true;
	return false;
}

/*
 * Bytes written so far, to a page: the driver reports positions only at a
 * stop, but the unit fills the zeroed buffer from its start, so the end of
 * the written part is the last page that is not all zero (binary search).
 */
uint64_t progress_estimate(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t lo = 0, hi = len / 4096;	/* pages [0, lo) used, [hi, n) unused */

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (page_used(p + mid * 4096, 4096))
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint64_t)lo * 4096;
}

static void human(char *buf, size_t len, uint64_t v)
{
	if (v >= 10ull << 30)
		snprintf(buf, len, "%" PRIu64 "G", v >> 30);
	else if (v >= 10ull << 20)
		snprintf(buf, len, "%" PRIu64 "M", v >> 20);
	else if (v >= 10ull << 10)
		snprintf(buf, len, "%" PRIu64 "K", v >> 10);
	else
		snprintf(buf, len, "%" PRIu64, v);
}

static void progress_init(struct progress *pr, struct iptcap *ipt, const struct capture *c)
{
	unsigned int cpu;

	memset(pr, 0, sizeof(*pr));
	pr->stop_on_full = c->config.buffer_flags & IPT_BUFFER_STOP_ON_FULL;
	pr->cpus = calloc(c->caps.nr_cpus ? c->caps.nr_cpus : 1, sizeof(*pr->cpus));
	pr->bufs = calloc(c->caps.nr_cpus ? c->caps.nr_cpus : 1, sizeof(*pr->bufs));
	pr->lens = calloc(c->caps.nr_cpus ? c->caps.nr_cpus : 1, sizeof(*pr->lens));
	if (!pr->cpus || !pr->bufs || !pr->lens)
		return;
	for (cpu = 0; cpu < c->caps.nr_cpus; cpu++) {
		struct ipt_trace_state ts;

		if (iptcap_trace_state(ipt, cpu, &ts))
			continue;
		pr->cpus[pr->nr] = cpu;
		if (iptcap_map(ipt, cpu, &pr->bufs[pr->nr], &pr->lens[pr->nr]))
			pr->bufs[pr->nr] = NULL;
		pr->nr++;
	}
}

static void progress_free(struct progress *pr)
{
	free(pr->cpus);
	free(pr->bufs);
	free(pr->lens);
}

/* One line, rewritten in place: elapsed time, bytes per CPU, full, lost. */
static void progress_show(const struct progress *pr, const struct capture *c, double secs)
{
	char line[1024], num[32];
	size_t used;
	uint64_t total = 0, lost = c->sb.lost;
	unsigned int i, full = 0;

	used = (size_t)snprintf(line, sizeof(line), "ipttool: %.1fs", secs);
	for (i = 0; i < pr->nr; i++) {
		uint64_t b = pr->bufs[i] ? progress_estimate(pr->bufs[i], pr->lens[i]) : 0;
		bool is_full = pr->bufs[i] && b == pr->lens[i];

		total += b;
		full += is_full;
		if (pr->nr <= 8 && used < sizeof(line)) {
			human(num, sizeof(num), b);
			used += (size_t)snprintf(line + used, sizeof(line) - used, "  cpu%u %s%s",
						 pr->cpus[i], pr->bufs[i] ? num : "?",
						 !is_full ? "" : pr->stop_on_full ? " FULL" : " ring full");
		}
	}
	if (pr->nr > 8 && used < sizeof(line)) {
		human(num, sizeof(num), total);
		used += (size_t)snprintf(line + used, sizeof(line) - used, "  %u CPUs %s", pr->nr,
					 num);
		if (full)
			used += (size_t)snprintf(line + used, sizeof(line) - used, ", %u %s", full,
						 pr->stop_on_full ? "FULL (stopped)" : "ring full");
	}
	if (used < sizeof(line) && c->sb.sb)
		used += (size_t)snprintf(line + used, sizeof(line) - used,
					 "  sideband %" PRIu64 " records", c->sb.lines);
	if (used < sizeof(line) && lost)
		snprintf(line + used, sizeof(line) - used, ", %" PRIu64 " LOST", lost);
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
}

/* Per-thread progress: the traces handed out so far and their bytes. */
static void progress_show_threads(struct iptcap *ipt, const struct capture *c, double secs)
{
	char line[512], num[32];
	unsigned int n = 0, i, full = 0;
	uint64_t total = 0;
	size_t used;

	iptcap_nr_traces(ipt, &n);
	for (i = 0; i < n; i++) {
		const void *buf;
		size_t len;
		uint64_t b;

		if (iptcap_map(ipt, i, &buf, &len))
			continue;
		b = progress_estimate(buf, len);
		total += b;
		full += b == len;
	}
	human(num, sizeof(num), total);
	used = (size_t)snprintf(line, sizeof(line), "ipttool: %.1fs  %u thread%s %s", secs, n,
				n == 1 ? "" : "s", num);
	if (full && used < sizeof(line))
		used += (size_t)snprintf(line + used, sizeof(line) - used, ", %u %s", full,
					 c->config.buffer_flags & IPT_BUFFER_STOP_ON_FULL ?
					 "FULL (stopped)" : "ring full");
	if (used < sizeof(line) && c->sb.sb)
		used += (size_t)snprintf(line + used, sizeof(line) - used,
					 "  sideband %" PRIu64 " records", c->sb.lines);
	if (used < sizeof(line) && c->sb.lost)
		snprintf(line + used, sizeof(line) - used, ", %" PRIu64 " LOST", c->sb.lost);
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
}

/* -p: whether every trace handed out is final (its thread exited or was detached). */
static bool all_threads_gone(struct iptcap *ipt)
{
	struct ipt_trace_state ts;
	unsigned int n = 0, i;

	if (iptcap_nr_traces(ipt, &n) || !n)
		return false;
	for (i = 0; i < n; i++)
		if (iptcap_trace_state(ipt, i, &ts) ||
		    !(ts.status & (IPT_TS_EXITED | IPT_TS_DETACHED)))
			return false;
	return true;
}

/* Report a failed attach of thread @tid (-p) with what to do about it. */
static void err_attach(struct iptcap *ipt, enum iptcap_err err, uint32_t tid)
{
	switch (err) {
	case IPTCAP_ERR_PERMISSION:
		ipt_err("-p %u: permission denied: thread %u belongs to another process, and "
			"tracing another process's threads needs CAP_PERFMON (or root)", tid, tid);
		fprintf(stderr, "  Run as root, or give ipttool CAP_PERFMON "
			"('setcap cap_perfmon+ep ipttool').\n");
		break;
	case IPTCAP_ERR_NO_SUCH_THREAD:
		ipt_err("-p %u: no such thread (or it is exiting)", tid);
		break;
	case IPTCAP_ERR_ALREADY_TRACED:
		ipt_err("-p %u: the thread is already traced in this session (it was created "
			"by a thread given before it, which is traced with its new threads)", tid);
		break;
	case IPTCAP_ERR_INVALID:
		ipt_err("-p %u: the driver refused the thread (a kernel thread?): %s", tid,
			strerror(iptcap_last_errno(ipt)));
		break;
	default:
		ipt_err("-p %u: attaching the thread failed: %s (%s)", tid, iptcap_strerror(err),
			strerror(iptcap_last_errno(ipt)));
		break;
	}
}

/*
 * The command of a per-thread recording.  The child attaches itself (tid
 * 0) on the inherited device file, reports the result on @st (an int:
 * 0 or the errno), waits for a byte on @go and execs; the device file
 * and both pipes are close-on-exec.  If exec fails, its errno follows on
 * @st.  Never returns.
 */
static void thread_child(struct iptcap *ipt, const struct record_opts *o, int st, int go)
{
	enum iptcap_err err;
	int e = 0;
	char b;

	err = iptcap_attach(ipt, 0, o->no_inherit ? 0 : IPTCAP_ATTACH_INHERIT, NULL);
	if (err)
		e = iptcap_last_errno(ipt) ? iptcap_last_errno(ipt) : EINVAL;
	if (write(st, &e, sizeof(e)) != sizeof(e) || e)
		_exit(127);
	if (read(go, &b, 1) != 1)
		_exit(127);
	execvp(o->prog_argv[0], o->prog_argv);
	e = errno;
	if (write(st, &e, sizeof(e)) != sizeof(e))
		_exit(127);
	_exit(127);
}

/*
 * The per-thread buffer size to use when @traces buffers of @size bytes
 * must fit in @budget bytes: @size, else the largest power of two below
 * it that fits, at least one page; 0 when not even a page each fits.
 */
uint64_t record_fit_size(uint64_t budget, unsigned int traces, uint64_t size)
{
	if (!traces || budget / traces >= size)
		return size;
	while (size > 4096 && size > budget / traces)
		size >>= 1;
	return size <= budget / traces ? size : 0;
}

/* Whether this process has CAP_IPC_LOCK (bit 14 of CapEff), as the kernel checks. */
static bool have_ipc_lock(void)
{
	unsigned long long eff = 0;
	char line[256];
	bool found = false;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	if (f)
		fclose(f);
	return !found || (eff >> 14) & 1;
}

/*
 * Per-thread without --size: the default 64 x 1 MiB is locked memory
 * (Documentation/abi.rst, "Locked memory"), more than an unprivileged
 * user may lock by default.  Without CAP_IPC_LOCK, lower the size to fit
 * the module's per-user allowance (ipt.mlock_kb per online CPU) plus
 * RLIMIT_MEMLOCK, as perf gives unprivileged users a smaller AUX buffer,
 * and say so; what the user already has locked is not known here, and a
 * refusal still names the limit.  A module without the parameter leaves
 * the size alone.
 */
static void record_fit_default(struct record_opts *o)
{
	unsigned long long kb = 0;
	struct rlimit rl;
	uint64_t budget, size;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	FILE *f;

	if (!o->size_default || have_ipc_lock() || getrlimit(RLIMIT_MEMLOCK, &rl) ||
	    rl.rlim_cur == RLIM_INFINITY || ncpu < 1)
		return;
	f = fopen("/sys/module/ipt/parameters/mlock_kb", "r");
	if (!f)
		return;
	if (fscanf(f, "%llu", &kb) != 1)
		kb = 0;
	fclose(f);
	budget = (uint64_t)kb * 1024 * (uint64_t)ncpu + rl.rlim_cur;
	size = record_fit_size(budget, o->cfg.max_threads, o->cfg.buffer_size);
	if (!size || size == o->cfg.buffer_size)
		return;
	if (!o->quiet)
		fprintf(stderr, "ipttool: record: %u per-thread buffers of %" PRIu64 " KiB, not %"
			PRIu64 " KiB: without CAP_IPC_LOCK a user may lock %" PRIu64 " KiB "
			"(ipt.mlock_kb per CPU and RLIMIT_MEMLOCK); --size and --threads set them\n",
			o->cfg.max_threads, size >> 10, o->cfg.buffer_size >> 10, budget >> 10);
	o->cfg.buffer_size = size;
}

/* Read one int from @fd: 1 when read, 0 at end of file, -1 on error. */
static int read_int(int fd, int *v)
{
	size_t got = 0;

	while (got < sizeof(*v)) {
		ssize_t n = read(fd, (char *)v + got, sizeof(*v) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 && !got ? 0 : -1;
		got += (size_t)n;
	}
	return 1;
}

static void set_prog_status(struct capture *c, int status)
{
	if (WIFEXITED(status)) {
		c->prog.exited = true;
		c->prog.status = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		c->prog.signal = WTERMSIG(status);
	}
}

/* ---- streaming --------------------------------------------------------- */

/**
 * struct record_stream - the consumer of a streamed recording
 * @c: the capture (its slots keep the gaps)
 * @files: the trace files (libiptcap's default sink)
 * @s: the consumer
 */
struct record_stream {
	struct capture *c;
	struct iptcap_stream_files *files;
	struct iptcap_stream *s;
};

static int rs_data(const struct iptcap_stream_trace *tr, uint64_t off, const void *data,
		   size_t len, void *user)
{
	struct record_stream *rs = user;

	return iptcap_stream_files_data(tr, off, data, len, rs->files);
}

static int rs_gap(const struct iptcap_stream_trace *tr, const struct ipt_gap *gap, void *user)
{
	return capture_stream_gap(tr, gap, ((struct record_stream *)user)->c);
}

static int rs_unlisted(const struct iptcap_stream_trace *tr, uint64_t nr, void *user)
{
	return capture_stream_unlisted(tr, nr, ((struct record_stream *)user)->c);
}

static const struct iptcap_stream_ops rs_ops = {
	.data = rs_data,
	.gap = rs_gap,
	.unlisted = rs_unlisted,
};

/* One pass of the consumer; a failure marks @c incomplete.  0 or -1. */
static int record_drain(struct record_stream *rs, bool final)
{
	enum iptcap_err err = final ? iptcap_stream_finish(rs->s) : iptcap_stream_drain(rs->s);
	int e = iptcap_stream_errno(rs->s);

	if (!err)
		return 0;
	if (e) {
		ipt_err("writing the streamed trace to %s failed: %s", rs->c->dir, strerror(e));
		capture_incomplete(rs->c, "writing the streamed trace failed: %s", strerror(e));
	} else {
		ipt_err("streaming the trace failed: %s", iptcap_strerror(err));
		capture_incomplete(rs->c, "streaming the trace failed: %s", iptcap_strerror(err));
	}
	return -1;
}

/* Streamed: MB written, MB/s and gaps, rewritten in place. */
static void progress_show_stream(const struct record_stream *rs, double secs, bool tty)
{
	struct iptcap_stream_stats st;

	iptcap_stream_stats(rs->s, &st);
	fprintf(stderr, "%sipttool: %.1fs  %.1f MB written  %.1f MB/s  %u trace%s  gaps %" PRIu64,
		tty ? "\r" : "", secs, (double)st.bytes / 1e6,
		secs > 0 ? (double)st.bytes / 1e6 / secs : 0.0, st.traces,
		st.traces == 1 ? "" : "s", st.gaps + st.gaps_unlisted);
	if (st.gap_bytes)
		fprintf(stderr, " (%.1f MB lost)", (double)st.gap_bytes / 1e6);
	if (st.paused)
		fprintf(stderr, ", %u paused", st.paused);
	fprintf(stderr, tty ? "\033[K" : "\n");
	fflush(stderr);
}

int cmd_record(struct ipttool *t, int argc, char **argv)
{
	struct record_opts o;
	struct capture c;
	struct ipt_caps caps;
	struct iptcap *ipt = NULL;
	enum iptcap_err err;
	struct sigaction sa;
	sigset_t stopset, oldmask;
	char msg[512];
	pid_t child = -1;
	int child_status = 0, ret = 1, pipefd[2] = { -1, -1 }, stpipe[2] = { -1, -1 };
	uint64_t t0, last_progress = 0, last_check = 0, last_snap = 0, snap_gaps = 0, snap_cost = 0;
	unsigned int snap_traces = 0;
	struct progress pr;
	struct record_stream rs = { 0 };
	bool show_progress = false, progress_shown = false, exec_failed = false, tty;
	bool stream_failed = false, regions_given;
	uint64_t nr_gaps = 0;
	size_t nr_slots;
	unsigned int i;
	int rc;

	memset(&pr, 0, sizeof(pr));
	rc = record_parse(argc, argv, &o, msg, sizeof(msg));
	if (rc) {
		ipt_err("record: %s", msg);
		fprintf(stderr, "  See 'ipttool record --help'.\n");
		return rc;
	}
	if (o.help) {
		record_usage(stdout);
		return 0;
	}
	record_fit_default(&o);
	memset(&c, 0, sizeof(c));
	c.complete = true;
	c.dir = o.out_dir;
	c.per_thread = o.cfg.per_thread;
	c.inherit = o.cfg.per_thread && !o.no_inherit;
	c.tids = o.tids;
	c.nr_tids = o.nr_tids;
	if (c.per_thread)
		c.prog.argv = o.prog_argv;

	err = iptcap_open(t->device, &ipt);
	if (err) {
		ipt_err_open(t, err);
		return 1;
	}
	err = iptcap_get_caps(ipt, &caps);
	if (err) {
		err_session(t, err, "reading capabilities", NULL);
		goto out;
	}
	c.caps = caps;
	if (o.cfg.stream && !(caps.features & IPT_FEAT_STREAM)) {
		/* An older ipt.ko: record into a ring as before, and say so once. */
		o.cfg.stream = false;
		snprintf(c.stream_fallback, sizeof(c.stream_fallback),
			 "this ipt.ko cannot stream (no IPT_FEAT_STREAM): a ring that keeps the "
			 "newest %" PRIu64 " KiB per %s", (uint64_t)(o.cfg.buffer_size ? o.cfg.buffer_size :
			 IPTCAP_DEFAULT_BUFFER_SIZE) >> 10, o.cfg.per_thread ? "thread" : "CPU");
		if (o.cfg.nr_regions) {
			ipt_err("record: --regions: %s", c.stream_fallback);
			ret = 2;
			goto out;
		}
		if (!o.quiet)
			fprintf(stderr, "ipttool: record: %s\n", c.stream_fallback);
	}
	regions_given = o.cfg.nr_regions != 0;
	if (o.cfg.stream && !o.cfg.nr_regions) {
		/*
		 * Streaming by default: fewer regions for a small buffer (a
		 * region is two pages or more), none below two regions.
		 */
		uint64_t sz = o.cfg.buffer_size ? o.cfg.buffer_size :
			      IPTCAP_DEFAULT_BUFFER_SIZE < caps.max_trace_size ?
			      IPTCAP_DEFAULT_BUFFER_SIZE : caps.max_trace_size;
		unsigned int nr = IPT_STREAM_DEF_REGIONS;

		while (nr > IPT_STREAM_MIN_REGIONS && sz / nr < 2 * 4096)
			nr /= 2;
		if (sz / nr < 2 * 4096) {
			o.cfg.stream = false;
			snprintf(c.stream_fallback, sizeof(c.stream_fallback),
				 "a buffer of %" PRIu64 " KiB is too small to stream (%d regions of "
				 "two pages or more): a ring that keeps the newest %" PRIu64 " KiB",
				 sz >> 10, IPT_STREAM_MIN_REGIONS, sz >> 10);
			if (!o.quiet)
				fprintf(stderr, "ipttool: record: %s\n", c.stream_fallback);
		} else if (nr != IPT_STREAM_DEF_REGIONS) {
			o.cfg.nr_regions = nr;
		}
	}
	c.stream = o.cfg.stream;
	/* Refuse what the unit cannot do before touching the output. */
	err = check_config(&o.cfg, &caps, &c.config, msg, sizeof(msg));
	if (err) {
		err_session(t, err, "record", msg);
		ret = err == IPTCAP_ERR_INVALID ? 2 : 1;
		goto out;
	}
	/* Allocate before touching the output: busy or no memory leave no trace. */
	err = iptcap_configure(ipt, &o.cfg, msg, sizeof(msg));
	if (err == IPTCAP_ERR_UNSUPPORTED && o.cfg.stream && !regions_given &&
	    iptcap_last_errno(ipt) == EOPNOTSUPP) {
		/* A kernel that streams some sessions but not this kind: a ring, said once. */
		o.cfg.stream = false;
		o.cfg.nr_regions = 0;
		c.stream = false;
		snprintf(c.stream_fallback, sizeof(c.stream_fallback),
			 "this ipt.ko cannot stream %s traces (EOPNOTSUPP): a ring that keeps the "
			 "newest %" PRIu64 " KiB per %s", o.cfg.per_thread ? "per-thread" : "per-CPU",
			 (uint64_t)(o.cfg.buffer_size ? o.cfg.buffer_size :
				    IPTCAP_DEFAULT_BUFFER_SIZE) >> 10,
			 o.cfg.per_thread ? "thread" : "CPU");
		if (!o.quiet)
			fprintf(stderr, "ipttool: record: %s\n", c.stream_fallback);
		err = check_config(&o.cfg, &caps, &c.config, msg, sizeof(msg));
		if (!err)
			err = iptcap_configure(ipt, &o.cfg, msg, sizeof(msg));
	}
	if (err) {
		err_session(t, err, "configuring the session", msg);
		if (err == IPTCAP_ERR_NO_THREAD_MODE)
			fprintf(stderr, "  Per-CPU recording still works: 'ipttool record -a -- "
				"PROG' traces every CPU while PROG runs.\n");
		goto out;
	}
	/* -p: the threads exist already; attach them before any output. */
	for (i = 0; i < o.nr_tids; i++) {
		err = iptcap_attach(ipt, o.tids[i], o.no_inherit ? 0 : IPTCAP_ATTACH_INHERIT, NULL);
		if (err) {
			err_attach(ipt, err, o.tids[i]);
			goto out;
		}
	}
	if (capture_prepare_dir(o.out_dir, msg, sizeof(msg))) {
		ipt_err("%s", msg);
		goto out;
	}
	nr_slots = c.per_thread ? c.config.max_threads : caps.nr_cpus;
	c.traces = calloc(nr_slots ? nr_slots : 1, sizeof(*c.traces));
	if (!c.traces) {
		ipt_err("out of memory");
		goto out;
	}
	if (c.stream) {
		c.nr_slots = nr_slots;
		c.slots = calloc(nr_slots ? nr_slots : 1, sizeof(*c.slots));
		rs.c = &c;
		if (!c.slots || iptcap_stream_files_open(o.out_dir, &rs.files) ||
		    iptcap_stream_open(ipt, &rs_ops, &rs, &rs.s)) {
			ipt_err("cannot set up streaming into %s: %s", o.out_dir, strerror(errno));
			goto out;
		}
	}
	capture_time_conv(&c);
	c.meta_reserve = capture_meta_reserve(&c, c.per_thread ? nr_slots : caps.nr_cpus);
	/*
	 * From the moment the capture exists on disk a SIGINT, SIGTERM or
	 * SIGHUP (the terminal closed) ends the recording cleanly (the loop
	 * below sees stop_signal): whoever waits for meta.json to appear may
	 * signal at once.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_sigpipe;
	sigaction(SIGPIPE, &sa, NULL);

	/* Until the end, the capture on disk says it is incomplete. */
	c.complete = false;
	snprintf(c.reason, sizeof(c.reason), "%s", CAPTURE_UNFINISHED);
	rc = capture_begin_meta(&c);
	if (rc) {
		ipt_err("cannot write %s/%s: %s", c.dir, CAPTURE_META, strerror(rc));
		goto out;
	}
	c.complete = true;
	c.reason[0] = '\0';

	/* Sideband first: it must see the command's fork and exec. */
	if (capture_sb_begin(&c, !o.no_sideband, msg, sizeof(msg))) {
		ipt_err("%s", msg);
		capture_incomplete(&c, "%s", msg);
	} else if (!o.no_sideband && !c.sb.sb) {
		ipt_err("no perf sideband (%s); recording without it, see meta.json",
			c.sb.perf_skipped);
	}
	if (o.no_sideband)
		snprintf(c.sb.perf_skipped, sizeof(c.sb.perf_skipped),
			 "disabled with --no-sideband");

	if (o.prog_argv) {
		/* The child waits until tracing runs, then execs. */
		if (pipe2(pipefd, O_CLOEXEC) || (c.per_thread && pipe2(stpipe, O_CLOEXEC))) {
			int e = errno;

			ipt_err("pipe: %s", strerror(e));
			capture_incomplete(&c, "pipe: %s", strerror(e));
			goto out_meta;
		}
		/*
		 * The stop signals stay blocked until the child has their
		 * default action back: one sent before would run the
		 * recorder's handler in the child and be lost.
		 */
		sigemptyset(&stopset);
		sigaddset(&stopset, SIGINT);
		sigaddset(&stopset, SIGTERM);
		sigaddset(&stopset, SIGHUP);
		sigprocmask(SIG_BLOCK, &stopset, &oldmask);
		child = fork();
		if (child == 0)
			record_child_signals(&oldmask);
		else
			sigprocmask(SIG_SETMASK, &oldmask, NULL);
		if (child < 0) {
			int e = errno;

			ipt_err("fork: %s", strerror(e));
			capture_incomplete(&c, "fork: %s", strerror(e));
			goto out_meta;
		}
		if (child == 0) {
			char b;

			close(pipefd[1]);
			if (c.per_thread) {
				close(stpipe[0]);
				thread_child(ipt, &o, stpipe[1], pipefd[0]);
			}
			if (read(pipefd[0], &b, 1) != 1)
				_exit(127);
			close(pipefd[0]);
			execvp(o.prog_argv[0], o.prog_argv);
			fprintf(stderr, "ipttool: cannot run %s: %s\n", o.prog_argv[0],
				strerror(errno));
			_exit(127);
		}
		close(pipefd[0]);
		pipefd[0] = -1;
		c.prog.pid = child;
		if (c.per_thread) {
			int e = 0;

			close(stpipe[1]);
			stpipe[1] = -1;
			rc = read_int(stpipe[0], &e);
			if (rc != 1 || e) {
				ipt_err("the command's process could not attach itself to the "
					"session: %s", rc == 1 ? strerror(e) : "it died");
				capture_incomplete(&c, "the command could not be traced");
				goto out_meta;
			}
		}
	}

	c.start_ns = now_ns(CLOCK_REALTIME);
	err = iptcap_start(ipt);
	if (err) {
		err_session(t, err, "starting the trace", NULL);
		capture_incomplete(&c, "starting the trace failed: %s", iptcap_strerror(err));
		goto out_meta;
	}
	t0 = now_ns(CLOCK_MONOTONIC);
	tty = isatty(STDERR_FILENO);
	show_progress = (tty || o.progress) && !o.quiet;
	if (show_progress && !c.per_thread && !c.stream)
		progress_init(&pr, ipt, &c);
	if (child > 0) {
		if (write(pipefd[1], "g", 1) != 1)
			ipt_err("cannot start %s", o.prog_argv[0]);
		close(pipefd[1]);
		pipefd[1] = -1;
		if (c.per_thread) {
			int e = 0;

			/* End of file: the exec succeeded (the pipe is close-on-exec). */
			if (read_int(stpipe[0], &e) == 1) {
				ipt_err("cannot run %s: %s", o.prog_argv[0], strerror(e));
				capture_incomplete(&c, "the command %s could not be run: %s",
						   o.prog_argv[0], strerror(e));
				exec_failed = true;
			}
			close(stpipe[0]);
			stpipe[0] = -1;
		}
	}
	while (!stop_signal) {
		if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
			child = -1;
			set_prog_status(&c, child_status);
			break;
		}
		if (o.duration > 0 &&
		    (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9 >= o.duration)
			break;
		if (o.nr_tids && now_ns(CLOCK_MONOTONIC) - last_check >= 200000000ull) {
			last_check = now_ns(CLOCK_MONOTONIC);
			if (all_threads_gone(ipt))
				break;
		}
		if (c.stream) {
			struct iptcap_stream_stats st0, st1;

			/* Until a region is ready (or 20 ms for the sideband and the child). */
			iptcap_stream_stats(rs.s, &st0);
			if (iptcap_stream_wait(rs.s, 20) < 0) {
				ipt_err("waiting for the trace: %s", strerror(errno));
				capture_incomplete(&c, "waiting for the trace failed: %s",
						   strerror(errno));
				stream_failed = true;
				break;
			}
			if (record_drain(&rs, false)) {
				stream_failed = true;
				break;
			}
			iptcap_stream_stats(rs.s, &st1);
			/*
			 * New traces or gaps: meta.json lists them at once, then at
			 * most once a second and for at most a twentieth of this
			 * thread's time (capture_snapshot_due()), so that a
			 * recording killed before it ends leaves its gap records
			 * for the decoder.
			 */
			if ((st1.traces != snap_traces ||
			     st1.gaps + st1.gaps_unlisted != snap_gaps) &&
			    capture_snapshot_due(now_ns(CLOCK_MONOTONIC), last_snap, snap_cost)) {
				last_snap = now_ns(CLOCK_MONOTONIC);
				snap_traces = st1.traces;
				snap_gaps = st1.gaps + st1.gaps_unlisted;
				capture_snapshot_stream(ipt, &c, rs.files);
				snap_cost = now_ns(CLOCK_MONOTONIC) - last_snap;
			}
			/* Readable but nothing moved (a final trace): do not spin. */
			if (st1.bytes == st0.bytes && st1.gaps == st0.gaps)
				capture_sb_wait(&c, 20);
		} else {
			capture_sb_wait(&c, 20);	/* 20 ms, or until a sideband ring fills */
		}
		capture_sb_drain(&c);
		if (show_progress && now_ns(CLOCK_MONOTONIC) - last_progress >= 500000000ull) {
			last_progress = now_ns(CLOCK_MONOTONIC);
			if (c.stream)
				progress_show_stream(&rs, (double)(last_progress - t0) / 1e9, tty);
			else if (c.per_thread)
				progress_show_threads(ipt, &c, (double)(last_progress - t0) / 1e9);
			else
				progress_show(&pr, &c, (double)(last_progress - t0) / 1e9);
			progress_shown = true;
		}
	}
	err = iptcap_stop(ipt);
	c.stop_ns = now_ns(CLOCK_REALTIME);
	if (c.stream && !stream_failed && record_drain(&rs, true))
		stream_failed = true;
	if (c.stream) {
		struct iptcap_stream_stats st;

		iptcap_stream_stats(rs.s, &st);
		c.stream_bytes = st.bytes;
		c.stream_secs = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
	}
	if (progress_shown) {
		double secs = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;

		if (c.stream)
			progress_show_stream(&rs, secs, tty);
		else if (c.per_thread)
			progress_show_threads(ipt, &c, secs);
		else
			progress_show(&pr, &c, secs);
		if (tty || !c.stream)
			fputc('\n', stderr);
	}
	capture_sb_end(&c);
	if (err) {
		err_session(t, err, "stopping the trace", NULL);
		capture_incomplete(&c, "stopping the trace failed: %s", iptcap_strerror(err));
	}
	if (stop_signal)
		fprintf(stderr, "ipttool: %s: stopping and writing the capture\n",
			strsignal(stop_signal));

	if (c.stream) {
		capture_collect_stream(ipt, &c, rs.files);
		nr_gaps = capture_nr_gaps(&c);
	} else {
		capture_collect(ipt, &c);
	}
	iptcap_release(ipt);
	print_summary(t, &c);
	if (nr_gaps)
		ipt_err("record: %" PRIu64 " gap%s: the consumer fell behind and the unit paused; "
			"see \"gaps\" in %s/%s", nr_gaps, nr_gaps == 1 ? "" : "s", c.dir,
			CAPTURE_META);
	ret = c.complete && !exec_failed && !nr_gaps && !stream_failed ? 0 : 1;
	goto out;
out_meta:
	/* Failed after the capture was begun: it says why. */
	capture_sb_end(&c);
	capture_write_meta(&c);
out:
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (stpipe[0] >= 0)
		close(stpipe[0]);
	if (stpipe[1] >= 0)
		close(stpipe[1]);
	if (child > 0) {
		kill(child, stop_signal ? stop_signal : SIGTERM);
		waitpid(child, &child_status, 0);
	}
	capture_sb_free(&c);
	progress_free(&pr);
	iptcap_stream_close(rs.s);
	iptcap_stream_files_close(rs.files);
	iptcap_close(ipt);
	free(c.traces);
	for (i = 0; c.slots && i < c.nr_slots; i++)
		free(c.slots[i].gaps);
	free(c.slots);
	return ret;
}

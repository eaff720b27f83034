// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool record: trace every CPU (-a) or some (-C) into a capture
 * directory, until a command ends, --duration passes, or SIGINT/SIGTERM.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
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

#define PER_THREAD_MSG "per-thread mode is not available yet: record every CPU with -a " \
		       "or some with -C CPUS (the command then runs while they are traced)"

int record_parse(int argc, char **argv, struct record_opts *o, char *msg, size_t len)
{
	enum { O_SIZE = 256, O_RING, O_SOF, O_USER, O_KERNEL, O_TSC, O_MTC, O_CYC, O_PSB,
	       O_NORETC, O_DURATION };
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
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	bool all = false, cpus = false, user = false, kernel = false, ring = false;
	unsigned long v;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	iptcap_config_init(&o->cfg);
	o->out_dir = "ipt.data";
	optind = 0;	/* glibc: a full reset, so that parsing can be repeated */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+aC:p:o:h", opts, NULL)) != -1) {
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
			snprintf(msg, len, "-p %s: " PER_THREAD_MSG, optarg);
			return 2;
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
			break;
		case O_RING:
			ring = true;
			break;
		case O_SOF:
			o->cfg.stop_on_full = true;
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
	if (!all && !cpus) {
		if (o->prog_argv)
			snprintf(msg, len, "%s", PER_THREAD_MSG);
		else
			snprintf(msg, len, "what to record: give -a, -C CPUS, or a command "
				 "after --");
		return 2;
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
		"Usage: ipttool record {-a | -C CPUS} [OPTIONS] [--] [PROG ARGS...]\n\n"
		"  -a, --all-cpus      trace every CPU\n"
		"  -C, --cpu CPUS      trace these CPUs (e.g. 0-3,5)\n"
		"  -o, --output DIR    capture directory (default ipt.data)\n"
		"  --size SZ           buffer per CPU, multiple of 4K (default 4M)\n"
		"  --ring              overwrite the oldest data when full (default)\n"
		"  --stop-on-full      stop a CPU's trace when its buffer is full\n"
		"  --user, --kernel    trace only user / kernel code (default both)\n"
		"  --tsc               TSC packets\n"
		"  --mtc N             MTC packets, period encoding N\n"
		"  --cyc N             CYC packets, threshold encoding N\n"
		"  --psb N             PSB period encoding N\n"
		"  --no-retcomp        disable return compression\n"
		"  --duration SEC      stop after SEC seconds\n"
		"Records until PROG exits, --duration passes, or SIGINT (Ctrl-C).\n"
		"-p TID and per-thread recording of PROG are not available yet.\n"
		"See ipttool-record(8).\n");
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Create @dir, or reuse an empty one or an older capture (its files go). */
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
		else if (!strncmp(e->d_name, "cpu", 3) || !strcmp(e->d_name, CAPTURE_META ".tmp"))
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

int capture_collect(struct iptcap *ipt, struct capture *c)
{
	enum iptcap_err err;
	unsigned int cpu;
	int rc;

	c->nr_traces = 0;
	memset(c->traces, 0, (c->caps.nr_cpus ? c->caps.nr_cpus : 1) * sizeof(*c->traces));
	for (cpu = 0; cpu < c->caps.nr_cpus; cpu++) {
		struct capture_trace *tr = &c->traces[c->nr_traces];
		struct iptcap_seg segs[2];
		const void *buf = NULL;
		size_t blen;
		int n;

		err = iptcap_trace_state(ipt, cpu, &tr->ts);
		if (err == IPTCAP_ERR_NO_SUCH_CPU)
			continue;
		tr->cpu = cpu;
		c->nr_traces++;
		if (err) {
			capture_incomplete(c, "reading the state of cpu%u failed: %s", cpu,
					   iptcap_strerror(err));
			continue;
		}
		n = iptcap_trace_segments(&tr->ts, segs);
		if (n < 0) {
			capture_incomplete(c, "cpu%u: the driver reported an inconsistent "
					   "trace position", cpu);
			n = 0;
		}
		if (n) {
			err = iptcap_map(ipt, cpu, &buf, &blen);
			if (err) {
				capture_incomplete(c, "mapping the buffer of cpu%u failed: %s", cpu,
						   strerror(iptcap_last_errno(ipt)));
				n = 0;
			}
		}
		rc = capture_write_trace(c, tr, buf, segs, n);
		if (rc)
			ipt_err("writing %s/cpu%u.pt: %s (wrote %" PRIu64 " of %" PRIu64 " bytes)",
				c->dir, cpu, strerror(rc), tr->written, (uint64_t)tr->ts.bytes_valid);
	}
	rc = capture_write_meta(c);
	if (rc) {
		ipt_err("cannot write %s/%s: %s; the capture stays marked incomplete",
			c->dir, CAPTURE_META, strerror(rc));
		capture_incomplete(c, "writing the metadata failed: %s", strerror(rc));
	}
	return c->complete ? 0 : 1;
}

void err_session(const struct ipttool *t, enum iptcap_err err, const char *what,
			const char *detail)
{
	ipt_err("%s: %s", what, detail && *detail ? detail : iptcap_strerror(err));
	switch (err) {
	case IPTCAP_ERR_BUSY:
		fprintf(stderr, "  Another session or tracer owns Intel PT (another ipttool, "
			"'ipttool start', perf with intel_pt). Stop it and retry.\n");
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
	(void)t;
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

		fprintf(stderr, "ipttool: cpu%u.pt: %" PRIu64 " bytes", tr->cpu, tr->written);
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
	fprintf(stderr, "ipttool: capture in %s%s%s\n", c->dir,
		c->complete ? "" : " is INCOMPLETE: ", c->complete ? "" : c->reason);
}

int cmd_record(struct ipttool *t, int argc, char **argv)
{
	struct record_opts o;
	struct capture c;
	struct ipt_caps caps;
	struct iptcap *ipt = NULL;
	enum iptcap_err err;
	struct sigaction sa;
	char msg[512];
	pid_t child = -1;
	int child_status = 0, ret = 1, pipefd[2] = { -1, -1 };
	uint64_t t0;
	int rc;

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
	memset(&c, 0, sizeof(c));
	c.complete = true;
	c.dir = o.out_dir;

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
	/* Refuse what the unit cannot do before touching the output. */
	err = iptcap_config_to_ipt(&o.cfg, &caps, &c.config, msg, sizeof(msg));
	if (err) {
		err_session(t, err, "record", msg);
		ret = err == IPTCAP_ERR_INVALID ? 2 : 1;
		goto out;
	}
	/* Allocate before touching the output: busy or no memory leave no trace. */
	err = iptcap_configure(ipt, &o.cfg, msg, sizeof(msg));
	if (err) {
		err_session(t, err, "configuring the session", msg);
		goto out;
	}
	if (capture_prepare_dir(o.out_dir, msg, sizeof(msg))) {
		ipt_err("%s", msg);
		goto out;
	}
	c.traces = calloc(caps.nr_cpus ? caps.nr_cpus : 1, sizeof(*c.traces));
	if (!c.traces) {
		ipt_err("out of memory");
		goto out;
	}
	capture_time_conv(&c);
	c.meta_reserve = 4096 + 1024 * (size_t)caps.nr_cpus;
	/* Until the end, the capture on disk says it is incomplete. */
	c.complete = false;
	snprintf(c.reason, sizeof(c.reason), "the recording did not finish");
	rc = capture_write_meta(&c);
	if (rc) {
		ipt_err("cannot write %s/%s: %s", c.dir, CAPTURE_META, strerror(rc));
		goto out;
	}
	c.complete = true;
	c.reason[0] = '\0';

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (o.prog_argv) {
		/* The child waits until tracing runs, then execs. */
		if (pipe(pipefd)) {
			ipt_err("pipe: %s", strerror(errno));
			goto out;
		}
		child = fork();
		if (child < 0) {
			ipt_err("fork: %s", strerror(errno));
			goto out;
		}
		if (child == 0) {
			char b;

			close(pipefd[1]);
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			if (read(pipefd[0], &b, 1) != 1)
				_exit(127);
			close(pipefd[0]);
			execvp(o.prog_argv[0], o.prog_argv);
			fprintf(stderr, "ipttool: cannot run %s: %s\n", o.prog_argv[0],
				strerror(errno));
			_exit(127);
		}
		close(pipefd[0]);
	}

	c.start_ns = now_ns(CLOCK_REALTIME);
	err = iptcap_start(ipt);
	if (err) {
		err_session(t, err, "starting the trace", NULL);
		goto out;
	}
	t0 = now_ns(CLOCK_MONOTONIC);
	if (child > 0) {
		if (write(pipefd[1], "g", 1) != 1)
			ipt_err("cannot start %s", o.prog_argv[0]);
		close(pipefd[1]);
		pipefd[1] = -1;
	}
	while (!stop_signal) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
			child = -1;
			break;
		}
		if (o.duration > 0 &&
		    (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9 >= o.duration)
			break;
		nanosleep(&ts, NULL);
	}
	err = iptcap_stop(ipt);
	c.stop_ns = now_ns(CLOCK_REALTIME);
	if (err) {
		err_session(t, err, "stopping the trace", NULL);
		capture_incomplete(&c, "stopping the trace failed: %s", iptcap_strerror(err));
	}
	if (stop_signal)
		fprintf(stderr, "ipttool: %s: stopping and writing the capture\n",
			strsignal(stop_signal));

	capture_collect(ipt, &c);
	iptcap_release(ipt);
	print_summary(t, &c);
	ret = c.complete ? 0 : 1;
out:
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (child > 0) {
		kill(child, stop_signal ? stop_signal : SIGTERM);
		waitpid(child, &child_status, 0);
	}
	iptcap_close(ipt);
	free(c.traces);
	return ret;
}

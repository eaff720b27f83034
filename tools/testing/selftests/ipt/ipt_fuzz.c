// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_fuzz: a seeded, struct-aware fuzzer of /dev/ipt, bounded by a call
 * count (not by time), so that one seed replays the same calls per worker.
 *
 *   ipt_fuzz [--seed S] [--calls N] [--threads T] [--procs P] [--kmemleak]
 *            [--verbose]
 *
 * Several worker threads in several processes (root ones, and one that
 * drops to uid IPT_TEST_UID after opening its files) share some /dev/ipt
 * files (opened before fork: one open file each, on the same and on
 * different fds) and have some of their own.  Each worker draws its calls
 * from its own generator, seeded from S and its number: every command of
 * uapi/linux/ipt.h with a struct built for it (valid-ish, in both modes,
 * or mutated: sizes, flags, reserved fields, cpu masks, thread counts,
 * bad pointers), whole sessions in a row (configure, attach and detach,
 * start, read, map, stop, release), unknown commands, mmap / munmap / mremap /
 * mprotect of real and bogus offsets, files swapped under the others
 * (dup2), short-lived threads that attach themselves and exit, fork /
 * exec / exit of traced children, and (root, first worker) CPU offline and
 * online.
 *
 * Invariants checked on every call: the errno is one the ABI documents; a
 * struct with a non-zero reserved field, an unknown flag, a bad size or a
 * privileged request from the unprivileged process never succeeds; what
 * a successful call returns is in range (an ATTACH index is below the
 * largest max_threads configured, a trace's head and valid bytes within
 * its buffer, sizes written back).  After the run: no kernel report in
 * /dev/kmsg since the start (the "bad" rows of scripts/vm-check-log, built
 * in as kmsg_patterns.h), the module's reference count and this process's
 * VmPin as at the start, the unit free (per-CPU on every CPU, and
 * per-thread, configure and trace), the locked-memory charge of uid 0 and
 * of IPT_TEST_UID back to what it was (a buffer of exactly the allowance
 * plus RLIMIT_MEMLOCK fits, one page more does not), every CPU online
 * and, with --kmemleak, no kmemleak report.  Any failure prints the seed
 * and the call, and the program exits 1.  Output is TAP.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "ipt_lib.h"
#include "kmsg_patterns.h"

#define PAGE		4096UL
#define MAX_WORKERS	64
#define NR_POOL		3	/* files shared by every process */
#define NR_TIDS		128	/* attach targets */
#define NR_MAPS		4	/* mappings a worker keeps */
#define RECENT		8	/* calls remembered per worker */
#define DESC_LEN	160

enum op {
	OP_CONFIGURE, OP_START, OP_STOP, OP_RELEASE, OP_GET_TRACE, OP_GET_CAPS,
	OP_ATTACH, OP_DETACH, OP_MMAP, OP_MUNMAP, OP_RAW, OP_FILES, OP_THREAD,
	OP_SPAWN, OP_CYCLE, OP_LIST, OP_HOTPLUG, NR_OPS
};

/* ---- state shared by every process (MAP_SHARED) -------------------------- */

struct shared {
	atomic_ulong calls;
	atomic_uint failures;
	atomic_int stop;
	atomic_uint max_threads_cfg;	/* largest max_threads tried */
	atomic_ullong ids[NR_TIDS];	/* process << 32 | tid; 0 if free */
	atomic_ulong ok[NR_OPS], err[NR_OPS];	/* per op kind */
	atomic_ulong errs[NR_OPS][64];	/* per op kind and errno */
	atomic_uint recent_pos[MAX_WORKERS];
	char recent[MAX_WORKERS][RECENT][DESC_LEN];
	pthread_mutex_t print_lock;
	atomic_long rest_room;		/* charge_room()'s answer, in pages */
	atomic_int rest_err;		/* or the error that stopped it */
};

static struct shared *sh;
static uint64_t seed;
static unsigned long budget = 20000;
static unsigned int nthreads = 3, nprocs = 1, ncpus;
static bool verbose, do_kmemleak;
static struct ipt_caps caps;
static int pool[NR_POOL];
static const char *self_exe = "/proc/self/exe";


static const char *const op_names[NR_OPS] = {
	"configure", "start", "stop", "release", "get_trace", "get_caps",
	"attach", "detach", "mmap", "munmap", "raw", "files", "thread",
	"spawn", "cycle", "list", "hotplug",
};

/* Weights of the ops, in that order (hotplug only for one worker). */
static const unsigned int op_weight[NR_OPS] = {
	10, 6, 6, 8, 12, 2, 14, 8, 8, 5, 4, 3, 1, 1, 6, 3, 0,
};

struct mapping {
	void *p;
	size_t len;
};

struct worker {
	unsigned int id;
	uint64_t rng;
	unsigned long n;		/* calls made */
	unsigned long budget;
	bool root;			/* the process keeps its privileges */
	bool hotplug;			/* this one takes CPUs off and on */
	int own_fd;			/* a file of this worker only */
	pthread_t th;
	struct mapping maps[NR_MAPS];
	uint8_t *arg;			/* 3 pages; the second is PROT_NONE */
	char desc[DESC_LEN];
};

/* ---- output and failures --------------------------------------------------- */

static void out(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&sh->print_lock);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	pthread_mutex_unlock(&sh->print_lock);
}

/* Every worker's last calls, oldest first. */
static void dump_recent(void)
{
	unsigned int w, i;

	for (w = 0; w < MAX_WORKERS; w++) {
		unsigned int pos = atomic_load(&sh->recent_pos[w]);

		if (!pos)
			continue;
		for (i = pos > RECENT ? pos - RECENT : 0; i < pos; i++)
			out("#   worker %u: %s\n", w, sh->recent[w][i % RECENT]);
	}
}

static void fail(struct worker *w, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	atomic_fetch_add(&sh->failures, 1);
	atomic_store(&sh->stop, 1);
	if (w)
		out("# FAIL: seed %llu worker %u call %lu: %s: %s\n",
		    (unsigned long long)seed, w->id, w->n, w->desc, msg);
	else
		out("# FAIL: seed %llu: %s\n", (unsigned long long)seed, msg);
}

static void note_call(struct worker *w, const char *fmt, ...)
{
	unsigned int pos;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->desc, sizeof(w->desc), fmt, ap);
	va_end(ap);
	pos = atomic_fetch_add(&sh->recent_pos[w->id], 1);
	memcpy(sh->recent[w->id][pos % RECENT], w->desc, DESC_LEN);
	if (verbose)
		out("# w%u #%lu %s\n", w->id, w->n, w->desc);
}

/* ---- random numbers --------------------------------------------------------- */

static uint64_t rnd(struct worker *w)
{
	/* splitmix64 */
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned int below(struct worker *w, unsigned int n)
{
	return n ? rnd(w) % n : 0;
}

static bool one_in(struct worker *w, unsigned int n)
{
	return below(w, n) == 0;
}

/* A random set bit of @mask, or 0. */
static unsigned int pick_bit(struct worker *w, uint32_t mask)
{
	unsigned int i, n = __builtin_popcount(mask), k;

	if (!n)
		return 0;
	k = below(w, n);
	for (i = 0; i < 32; i++)
		if ((mask >> i & 1) && !k--)
			return i;
	return 0;
}

/* ---- the errno rules ------------------------------------------------------ */

static bool errno_documented(enum op op, int e)
{
	switch (e) {
	case EINVAL: case EBUSY: case ENOENT: case EPERM: case EFAULT:
	case E2BIG: case ENOTTY: case ENOMEM: case EFBIG: case EOPNOTSUPP:
	case ESRCH: case EEXIST: case ENOSPC:
		return true;
	case EACCES: case EOVERFLOW:
		return op == OP_MMAP || op == OP_MUNMAP;
	}
	return false;
}

/* One call's result: @ret is 0 or -errno; @must_fail marks invalid input. */
static void judge(struct worker *w, enum op op, int ret, bool must_fail)
{
	if (ret)
		atomic_fetch_add(&sh->err[op], 1);
	else
		atomic_fetch_add(&sh->ok[op], 1);
	if (ret && -ret < 64)
		atomic_fetch_add(&sh->errs[op][-ret], 1);
	if (ret && !errno_documented(op, -ret))
		fail(w, "errno %d (%s) is not one the ABI documents", -ret,
		     strerror(-ret));
	if (!ret && must_fail)
		fail(w, "an invalid argument was accepted");
}

/* ---- argument placement ---------------------------------------------------- */

/*
 * Where the argument goes: at the end of the worker's argument page, or
 * cut short by the PROT_NONE page after it (an argument that runs into
 * it: EFAULT part-way when the kernel reads that far), or a pointer that
 * is not user memory.
 */
static void *place(struct worker *w, const void *arg, size_t len, bool *must_fail)
{
	unsigned int how = below(w, 40);
	uint32_t usize;
	uint8_t *p;

	if (how == 0) {
		*must_fail = true;
		return NULL;
	}
	if (how == 1) {
		*must_fail = true;
		return (void *)0xffff888000000000ULL;	/* the kernel's */
	}
	if (how == 2 && len > 4) {
		size_t cut = 1 + below(w, len - 4);

		p = w->arg + PAGE - (len - cut);
		memcpy(p, arg, len - cut);
		memcpy(&usize, arg, sizeof(usize));
		if (usize > len - cut)
			*must_fail = true;
		return p;
	}
	p = w->arg + PAGE - len;
	memcpy(p, arg, len);
	return p;
}

/*
 * The size word of an argument struct of @ksize bytes (the kernel's, from
 * the same header) whose first published size is @ver0: mostly right,
 * sometimes smaller, larger with a zero or non-zero tail, or absurd.
 * Returns the bytes to pass; sets *@must_fail for sizes the ABI refuses.
 */
static size_t mutate_size(struct worker *w, uint8_t *buf, size_t ksize, size_t ver0,
			  bool *must_fail)
{
	uint32_t size = ksize;
	size_t len = ksize;

	switch (below(w, 32)) {
	case 0:
		size = below(w, ver0);
		*must_fail = true;
		break;
	case 1:
		size = ver0;
		break;
	case 2:
		len = ksize + 8 * (1 + below(w, 4));
		size = len;
		memset(buf + ksize, 0, len - ksize);
		break;
	case 3:
		len = ksize + 8 * (1 + below(w, 4));
		size = len;
		memset(buf + ksize, 0, len - ksize);
		buf[ksize + below(w, len - ksize)] = 1 + below(w, 255);
		*must_fail = true;
		break;
	case 4:
		size = PAGE + 1 + below(w, 1 << 20);
		*must_fail = true;
		break;
	}
	memcpy(buf, &size, sizeof(size));
	return len;
}

/* Read one byte of a mapping (the page is faulted in). */
static void touch(const void *p, size_t off)
{
	(void)__atomic_load_n((const uint8_t *)p + off, __ATOMIC_RELAXED);
}

static int do_ioctl(int fd, unsigned long cmd, void *p)
{
	return ioctl(fd, cmd, p) ? -errno : 0;
}

/*
 * A file to call: one of the pool (shared with the other processes; the
 * first most often, so that calls meet on one file) or our own.
 */
static int pick_fd(struct worker *w)
{
	unsigned int i = below(w, 2 * NR_POOL + 1);

	if (i <= NR_POOL)
		return pool[0];
	return i < 2 * NR_POOL ? pool[i - NR_POOL] : w->own_fd;
}

/* ---- CONFIGURE -------------------------------------------------------------- */

static void gen_config(struct worker *w, struct ipt_config *c, uint64_t *mask)
{
	static const uint64_t sizes[] = {
		4096, 8192, 12288, 16384, 65536, 135168, 1 << 20, (4 << 20) + 4096,
	};
	static const unsigned int thr[] = { 1, 1, 2, 3, 4, 8, 16, 64 };
	uint32_t all = ncpus >= 64 ? ~0U : (1U << ncpus) - 1;
	unsigned int i;

	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->buffer_size = sizes[below(w, one_in(w, 8) ? 8 : 5)];
	c->trace_flags = IPT_TRACE_USER | IPT_TRACE_BRANCH;
	if (one_in(w, 2)) {
		c->mode = IPT_MODE_CPU;
		if (one_in(w, 6)) {
			c->flags = IPT_CONFIG_ALL_CPUS;
		} else {
			memset(mask, 0, 2 * sizeof(*mask));
			mask[0] = (rnd(w) & all) ?: 1;
			c->cpu_mask_words = 1 + one_in(w, 8);
			c->cpu_mask_ptr = (uintptr_t)mask;
		}
	} else {
		c->mode = IPT_MODE_THREAD;
		c->max_threads = thr[below(w, 8)];
		if (one_in(w, 256)) {
			c->max_threads = IPT_MAX_THREADS;
			c->buffer_size = 4096;
		}
	}
	if (one_in(w, 2))
		c->trace_flags |= IPT_TRACE_TSC;
	if (one_in(w, 8))
		c->trace_flags |= IPT_TRACE_KERNEL;
	if (one_in(w, 6) && (caps.features & IPT_FEAT_MTC)) {
		c->trace_flags |= IPT_TRACE_MTC;
		c->mtc_freq = pick_bit(w, caps.mtc_freq_mask);
	}
	if (one_in(w, 6) && (caps.features & IPT_FEAT_PSB_CYC)) {
		c->trace_flags |= IPT_TRACE_CYC;
		c->cyc_thresh = pick_bit(w, caps.cyc_thresh_mask);
	}
	if (one_in(w, 6) && (caps.features & IPT_FEAT_PSB_CYC))
		c->psb_freq = pick_bit(w, caps.psb_freq_mask);
	if (one_in(w, 8))
		c->trace_flags |= IPT_TRACE_NO_RETCOMP;
	if (one_in(w, 8) && (caps.features & IPT_FEAT_PTWRITE))
		c->trace_flags |= IPT_TRACE_PTWRITE |
				  (one_in(w, 2) ? IPT_TRACE_PTWRITE_FUP : 0);
	if (one_in(w, 8) && (caps.features & IPT_FEAT_POWER_EVENTS))
		c->trace_flags |= IPT_TRACE_POWER_EVENTS;
	if (one_in(w, 12) && (caps.features & IPT_FEAT_CR3_FILTER)) {
		c->trace_flags |= IPT_TRACE_CR3_FILTER;
		c->cr3_match = (rnd(w) & 0xffffff) << 12;
	}
	for (i = 0; i < caps.num_addr_ranges; i++) {
		if (!one_in(w, 5))
			continue;
		c->ranges[i].kind = 1 + below(w, 2);
		c->ranges[i].start = (rnd(w) & 0x7fffffff) << 12;
		c->ranges[i].end = c->ranges[i].start + (rnd(w) & 0xfffff);
	}
	if (one_in(w, 4))
		c->chunk_order = one_in(w, 8) ? 22 : 12 + below(w, 3);
	if (one_in(w, 4))
		c->buffer_flags = below(w, 4);
	/* Streams, of 2..64 regions (some of them refused: abi.rst). */
	if (one_in(w, 6) && (caps.features & IPT_FEAT_STREAM)) {
		c->buffer_flags = IPT_BUFFER_STREAM |
				  (one_in(w, 4) ? IPT_BUFFER_EXACT_CHUNKS : 0);
		c->nr_regions = one_in(w, 3) ? 0 : 1U << below(w, 7);
	}
	if (c->mode == IPT_MODE_THREAD && c->max_threads > 1 &&
	    c->buffer_size > 65536)
		c->buffer_size = 65536;	/* bounded memory per session */

	/* Mutations: one in four configs gets one or two. */
	if (!one_in(w, 4))
		return;
	for (i = 1 + one_in(w, 2); i; i--) {
		switch (below(w, 16)) {
		case 0:
			c->flags |= 1ULL << (1 + below(w, 63));
			break;
		case 1:
			c->nr_regions = 1 + below(w, 1000);
			break;
		case 2:
			c->reserved[below(w, 3)] = rnd(w) | 1;
			break;
		case 3:
			c->ranges[below(w, IPT_MAX_ADDR_RANGES)].reserved = 1 + below(w, 9);
			break;
		case 4:
			c->mode = one_in(w, 2) ? 0 : 3 + below(w, 100);
			break;
		case 5:
			c->trace_flags |= 1ULL << (11 + below(w, 53));
			break;
		case 6:
			if (c->mode == IPT_MODE_CPU)
				c->max_threads = 1 + below(w, 8);
			else if (one_in(w, 2))
				c->max_threads = 0;
			else
				c->max_threads = IPT_MAX_THREADS + 1 + below(w, 9);
			break;
		case 7:
			c->cpu_mask_words = below(w, 2) ? 0 : IPT_MAX_CPU_MASK_WORDS + 1;
			break;
		case 8:
			c->cpu_mask_ptr = one_in(w, 2) ? 8 : 0xffff888000000000ULL;
			break;
		case 9:
			mask[one_in(w, 2)] |= 1ULL << (ncpus + below(w, 64 - ncpus));
			break;
		case 10:
			c->buffer_size = one_in(w, 2) ? 0 : (rnd(w) & 0xfffff) | 1;
			break;
		case 11:
			c->buffer_size = caps.max_trace_size + PAGE * (1 + below(w, 4));
			break;
		case 12:
			c->chunk_order = below(w, 40);
			break;
		case 13:
			c->buffer_flags |= 1ULL << (2 + below(w, 62));
			break;
		case 14:
			c->mtc_freq = below(w, 20);
			c->cyc_thresh = below(w, 20);
			c->psb_freq = below(w, 20);
			break;
		default:
			((uint8_t *)c)[4 + below(w, sizeof(*c) - 4)] ^= 1 << below(w, 8);
			break;
		}
	}
}

/*
 * Whether the streaming fields are refused (Documentation/abi.rst):
 * nr_regions without IPT_BUFFER_STREAM; with it, stop-on-full, a region
 * count that is not a power of two in 2..64, regions not of whole pages,
 * exact chunks larger than a region's largest power-of-two divisor, or a
 * unit without the feature.  Both modes stream.
 */
static bool stream_invalid(const struct ipt_config *c)
{
	uint64_t n = c->nr_regions ? c->nr_regions : IPT_STREAM_DEF_REGIONS;
	uint64_t rsize;

	if (!(c->buffer_flags & IPT_BUFFER_STREAM))
		return c->nr_regions != 0;
	if (!(caps.features & IPT_FEAT_STREAM) ||
	    (c->buffer_flags & IPT_BUFFER_STOP_ON_FULL) || (n & (n - 1)) ||
	    n < IPT_STREAM_MIN_REGIONS || n > IPT_STREAM_MAX_REGIONS ||
	    !c->buffer_size || c->buffer_size % (n * PAGE))
		return true;
	rsize = c->buffer_size / n;
	return (c->buffer_flags & IPT_BUFFER_EXACT_CHUNKS) && c->chunk_order &&
	       c->chunk_order < 64 && (1ULL << c->chunk_order) > (rsize & -rsize);
}

/*
 * Whether the ABI refuses @c whatever else it holds (a mutation can undo
 * another, so this looks at the final struct): unknown flags, reserved
 * fields, a bad mode or max_threads, a buffer size out of range, bad
 * streaming fields; per-CPU mode or kernel tracing without privilege.
 */
static bool config_invalid(const struct worker *w, const struct ipt_config *c)
{
	unsigned int i;

	if ((c->flags & ~IPT_CONFIG_ALL_CPUS) || stream_invalid(c) ||
	    c->reserved[0] || c->reserved[1] || c->reserved[2] ||
	    (c->trace_flags & ~((IPT_TRACE_CR3_FILTER << 1) - 1)) ||
	    (c->buffer_flags & ~(IPT_BUFFER_STOP_ON_FULL | IPT_BUFFER_EXACT_CHUNKS |
				 IPT_BUFFER_STREAM)) ||
	    !c->buffer_size || c->buffer_size % PAGE ||
	    c->buffer_size > caps.max_trace_size)
		return true;
	for (i = 0; i < IPT_MAX_ADDR_RANGES; i++)
		if (c->ranges[i].reserved)
			return true;
	if (c->mode == IPT_MODE_CPU)
		return c->max_threads || !w->root;
	if (c->mode != IPT_MODE_THREAD)
		return true;
	if (!c->max_threads || c->max_threads > IPT_MAX_THREADS)
		return true;
	return (c->trace_flags & IPT_TRACE_KERNEL) && !w->root;
}

static void op_configure(struct worker *w)
{
	struct ipt_config c;
	uint64_t *mask = (uint64_t *)(w->arg + 2 * PAGE);	/* own page */
	uint8_t buf[sizeof(c) + 64];
	bool must_fail = false;
	size_t len;
	int fd = pick_fd(w), ret;
	void *p;

	gen_config(w, &c, mask);
	must_fail = config_invalid(w, &c);
	if (c.mode == IPT_MODE_THREAD) {
		unsigned int cur = atomic_load(&sh->max_threads_cfg);

		while (c.max_threads > cur &&
		       !atomic_compare_exchange_weak(&sh->max_threads_cfg, &cur,
						     c.max_threads))
			;
	}
	memcpy(buf, &c, sizeof(c));
	len = mutate_size(w, buf, sizeof(c), IPT_CONFIG_SIZE_VER0, &must_fail);
	p = place(w, buf, len, &must_fail);
	note_call(w, "CONFIGURE fd %d size %u mode %u flags %#llx tf %#llx buf %llu thr %u co %u "
		  "bf %#llx mask %#llx/%u%s", fd, *(uint32_t *)buf, c.mode, (unsigned long long)c.flags,
		  (unsigned long long)c.trace_flags,
		  (unsigned long long)c.buffer_size, c.max_threads, c.chunk_order,
		  (unsigned long long)c.buffer_flags, (unsigned long long)mask[0],
		  c.cpu_mask_words, must_fail ? " (invalid)" : "");
	ret = do_ioctl(fd, IPT_IOC_CONFIGURE, p);
	judge(w, OP_CONFIGURE, ret, must_fail);
}

/* ---- START, STOP, RELEASE ---------------------------------------------------- */

static void op_cmd(struct worker *w, enum op op)
{
	static const unsigned long cmds[] = {
		[OP_START] = IPT_IOC_START, [OP_STOP] = IPT_IOC_STOP,
		[OP_RELEASE] = IPT_IOC_RELEASE,
	};
	struct ipt_cmd c = { sizeof(c), 0 };
	uint8_t buf[sizeof(c) + 64];
	bool must_fail = false;
	int fd = pick_fd(w), ret;
	size_t len;
	void *p;

	if (one_in(w, 16)) {
		c.flags = 1ULL << below(w, 32);
		must_fail = true;
	}
	memcpy(buf, &c, sizeof(c));
	len = mutate_size(w, buf, sizeof(c), IPT_CMD_SIZE_VER0, &must_fail);
	p = place(w, buf, len, &must_fail);
	note_call(w, "%s fd %d size %u flags %#x%s", op_names[op], fd,
		  *(uint32_t *)buf, c.flags, must_fail ? " (invalid)" : "");
	ret = do_ioctl(fd, cmds[op], p);
	judge(w, op, ret, must_fail);
}

/* ---- GET_TRACE ---------------------------------------------------------------- */

static void op_get_trace(struct worker *w)
{
	struct ipt_trace_state ts, *r;
	uint32_t orders[64];
	uint8_t buf[sizeof(ts) + 64];
	bool must_fail = false, tail_ok;
	int fd = pick_fd(w), ret;
	uint32_t i, usize;
	size_t len, past_end = 0;

	memset(&ts, 0, sizeof(ts));
	ts.size = sizeof(ts);
	ts.cpu = one_in(w, 16) ? (uint32_t)rnd(w) : below(w, one_in(w, 2) ? ncpus + 1 : 9);
	if (one_in(w, 3)) {
		ts.chunks_ptr = (uintptr_t)orders;
		ts.chunks_len = below(w, 65);
	}
	switch (below(w, 24)) {
	case 0:
		ts.flags = 1 << below(w, 32);
		must_fail = true;
		break;
	case 1:
		ts.tid = 1 + below(w, 100);
		must_fail = true;
		break;
	case 2:
		ts.parent = 1 + below(w, 100);
		must_fail = true;
		break;
	case 3:
		ts.missed = 1;
		must_fail = true;
		break;
	case 4:
		ts.switches = rnd(w) | 1;
		must_fail = true;
		break;
	case 5:
		ts.busy = 1;
		must_fail = true;
		break;
	case 6:
		/*
		 * Beyond IPT_TRACE_STATE_SIZE_VER0 since the streaming
		 * fields: refused only when the caller's size reaches it.
		 */
		ts.reserved[0] = 1;
		past_end = offsetof(struct ipt_trace_state, reserved) + 8;
		break;
	case 10:
		switch (below(w, 5)) {
		case 0:
			ts.released = 1;
			break;
		case 1:
			ts.region_size = 1;
			break;
		case 2:
			ts.nr_gaps = 1;
			break;
		case 3:
			ts.gap_bytes = 1;
			break;
		default:
			ts.paused_tsc = 1;
			break;
		}
		past_end = offsetof(struct ipt_trace_state, reserved);
		break;
	case 7:
		ts.chunks_ptr = 0;
		ts.chunks_len = 1 + below(w, 9);
		must_fail = true;
		break;
	case 8:
		ts.chunks_ptr = one_in(w, 2) ? 8 : 0xffff888000000000ULL;
		ts.chunks_len = 1 + below(w, 9);
		break;
	case 9:
		ts.chunks_len = 0xffffffffU - below(w, 4);
		break;
	}
	memcpy(buf, &ts, sizeof(ts));
	len = mutate_size(w, buf, sizeof(ts), IPT_TRACE_STATE_SIZE_VER0, &must_fail);
	usize = *(uint32_t *)buf;
	/* An input-only field the caller's size covers (all of it, at most). */
	if (past_end && usize >= past_end)
		must_fail = true;
	r = place(w, buf, len, &must_fail);
	tail_ok = (uint8_t *)r == w->arg + PAGE - len;
	note_call(w, "GET_TRACE fd %d size %u cpu %u chunks %#llx/%u%s", fd, usize,
		  ts.cpu, (unsigned long long)ts.chunks_ptr, ts.chunks_len,
		  must_fail ? " (invalid)" : "");
	ret = do_ioctl(fd, IPT_IOC_GET_TRACE, r);
	judge(w, OP_GET_TRACE, ret, must_fail);
	if (ret || !tail_ok)
		return;
	/* The answer, as far as the caller's struct reaches. */
	memcpy(&ts, r, usize < sizeof(ts) ? usize : sizeof(ts));
	if (usize >= 4 && ts.size != sizeof(ts))
		fail(w, "size written back %u, want %zu", ts.size, sizeof(ts));
	if (usize < IPT_TRACE_STATE_SIZE_VER0)
		return;
	if (ts.state < IPT_STATE_CONFIGURED || ts.state > IPT_STATE_STOPPED)
		fail(w, "state %u", ts.state);
	if (!ts.buffer_size || ts.buffer_size % PAGE ||
	    ts.buffer_size > caps.max_trace_size)
		fail(w, "buffer_size %llu", (unsigned long long)ts.buffer_size);
	if (ts.head > ts.buffer_size || ts.bytes_valid > ts.buffer_size ||
	    ts.oldest > ts.buffer_size || ts.mmap_offset % PAGE)
		fail(w, "head %llu valid %llu oldest %llu offset %#llx in a buffer of %llu",
		     (unsigned long long)ts.head, (unsigned long long)ts.bytes_valid,
		     (unsigned long long)ts.oldest, (unsigned long long)ts.mmap_offset,
		     (unsigned long long)ts.buffer_size);
	if (ts.bytes_valid > ts.bytes_captured)
		fail(w, "valid %llu > captured %llu", (unsigned long long)ts.bytes_valid,
		     (unsigned long long)ts.bytes_captured);
	if (!ts.nr_chunks || !ts.nr_tables)
		fail(w, "%u chunks, %u tables", ts.nr_chunks, ts.nr_tables);
	if (ts.chunks_ptr == (uintptr_t)orders)
		for (i = 0; i < ts.chunks_len && i < ts.nr_chunks && i < 64; i++)
			if (orders[i] < 12 || orders[i] > 27)
				fail(w, "chunk %u of order %u", i, orders[i]);
	if (ts.status & IPT_TS_THREAD) {
		unsigned int max = atomic_load(&sh->max_threads_cfg);

		if (ts.cpu >= max)
			fail(w, "a thread trace at index %u, max_threads at most %u",
			     ts.cpu, max);
	}
	/* Remember a real offset for mmap. */
	if (one_in(w, 2) && ts.buffer_size <= (1 << 20)) {
		size_t n = ts.buffer_size;
		void *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, ts.mmap_offset);

		if (m != MAP_FAILED) {
			touch(m, rnd(w) % n);
			munmap(m, n);
		}
	}
}

/* ---- GET_CAPS --------------------------------------------------------------- */

static void op_get_caps(struct worker *w)
{
	struct ipt_caps c = { .size = sizeof(c) };
	uint8_t buf[sizeof(c) + 64];
	bool must_fail = false;
	int fd = pick_fd(w), ret;
	uint32_t usize;
	size_t len;
	void *p;

	if (one_in(w, 8)) {
		c.flags = 1 << below(w, 32);
		must_fail = true;
	}
	memcpy(buf, &c, sizeof(c));
	len = mutate_size(w, buf, sizeof(c), IPT_CAPS_SIZE_VER0, &must_fail);
	usize = *(uint32_t *)buf;
	p = place(w, buf, len, &must_fail);
	note_call(w, "GET_CAPS fd %d size %u flags %#x%s", fd, usize, c.flags,
		  must_fail ? " (invalid)" : "");
	ret = do_ioctl(fd, IPT_IOC_GET_CAPS, p);
	judge(w, OP_GET_CAPS, ret, must_fail);
	if (!ret && p == w->arg + PAGE - len) {
		memcpy(&c, p, usize < sizeof(c) ? usize : sizeof(c));
		if (c.size != sizeof(c) || c.abi_version != IPT_ABI_VERSION ||
		    c.backend != caps.backend)
			fail(w, "caps size %u abi %u backend %u", c.size,
			     c.abi_version, c.backend);
	}
}

/* ---- ATTACH, DETACH -------------------------------------------------------- */

static pid_t gettid_(void)
{
	return syscall(SYS_gettid);
}

/* Register the calling thread as an attach target; its slot. */
static int tid_add(void)
{
	unsigned long long zero, id = (unsigned long long)getpid() << 32 | gettid_();
	int i;

	for (i = 0; i < NR_TIDS; i++) {
		zero = 0;
		if (atomic_compare_exchange_strong(&sh->ids[i], &zero, id))
			return i;
	}
	return -1;
}

static void tid_del(int slot)
{
	if (slot >= 0)
		atomic_store(&sh->ids[slot], 0);
}

/* ATTACH on @fd; the index of the trace, or -1. */
static int attach_on(struct worker *w, int fd)
{
	struct ipt_attach a = { .size = sizeof(a) }, *r;
	uint8_t buf[sizeof(a) + 64];
	bool must_fail = false, other = false;
	int ret;
	unsigned long long id;
	unsigned int max;
	uint32_t usize;
	size_t len;

	switch (below(w, 10)) {
	case 0:
	case 1:
	case 2:
		a.tid = 0;
		break;
	case 3:
		a.tid = gettid_();
		break;
	case 4:
		a.tid = one_in(w, 2) ? 0x7ffffff0 + below(w, 15) : 2;	/* none; kthreadd */
		must_fail = true;
		break;
	default:
		id = atomic_load(&sh->ids[below(w, NR_TIDS)]);
		a.tid = (uint32_t)id;
		other = a.tid && (pid_t)(id >> 32) != getpid();
		break;
	}
	if (one_in(w, 3))
		a.flags = IPT_ATTACH_INHERIT;
	switch (below(w, 20)) {
	case 0:
		a.flags |= 1ULL << (1 + below(w, 31));
		must_fail = true;
		break;
	case 1:
		a.trace = 1 + below(w, 100);
		must_fail = true;
		break;
	case 2:
		a.reserved[below(w, 2)] = rnd(w) | 1;
		must_fail = true;
		break;
	}
	/* Another process's thread: privileged only. */
	if (other && !w->root)
		must_fail = true;
	memcpy(buf, &a, sizeof(a));
	len = mutate_size(w, buf, sizeof(a), IPT_ATTACH_SIZE_VER0, &must_fail);
	usize = *(uint32_t *)buf;
	r = place(w, buf, len, &must_fail);
	note_call(w, "ATTACH fd %d size %u tid %u%s flags %#x trace %u%s", fd, usize,
		  a.tid, other ? " (other process)" : "", a.flags, a.trace,
		  must_fail ? " (invalid)" : "");
	ret = do_ioctl(fd, IPT_IOC_ATTACH, r);
	judge(w, OP_ATTACH, ret, must_fail);
	if (ret || (uint8_t *)r != w->arg + PAGE - len)
		return -1;
	max = atomic_load(&sh->max_threads_cfg);
	if (r->trace >= max || r->trace >= IPT_MAX_THREADS)
		fail(w, "ATTACH returned trace %u (%#x); max_threads at most %u",
		     r->trace, r->trace, max);
	if (r->size != sizeof(a))
		fail(w, "size written back %u", r->size);
	return r->trace;
}

static void op_attach(struct worker *w)
{
	attach_on(w, pick_fd(w));
}

/* DETACH of trace @trace on @fd, or of a random one when @trace < 0. */
static void detach_on(struct worker *w, int fd, int trace)
{
	struct ipt_detach d = { .size = sizeof(d) };
	uint8_t buf[sizeof(d) + 64];
	bool must_fail = false;
	int ret;
	size_t len;
	void *p;

	if (trace >= 0)
		d.trace = trace;
	else
		d.trace = one_in(w, 16) ? (uint32_t)rnd(w) : below(w, 9);
	switch (below(w, 16)) {
	case 0:
		d.flags = 1 << below(w, 32);
		must_fail = true;
		break;
	case 1:
		d.reserved = 1 + below(w, 99);
		must_fail = true;
		break;
	}
	memcpy(buf, &d, sizeof(d));
	len = mutate_size(w, buf, sizeof(d), IPT_DETACH_SIZE_VER0, &must_fail);
	p = place(w, buf, len, &must_fail);
	note_call(w, "DETACH fd %d size %u trace %u flags %#x%s", fd,
		  *(uint32_t *)buf, d.trace, d.flags, must_fail ? " (invalid)" : "");
	ret = do_ioctl(fd, IPT_IOC_DETACH, p);
	judge(w, OP_DETACH, ret, must_fail);
}

static void op_detach(struct worker *w)
{
	detach_on(w, pick_fd(w), -1);
}

/* ---- mmap and friends ---------------------------------------------------- */

static void keep_map(struct worker *w, void *p, size_t len)
{
	unsigned int i = below(w, NR_MAPS);

	if (w->maps[i].p)
		munmap(w->maps[i].p, w->maps[i].len);
	w->maps[i].p = p;
	w->maps[i].len = len;
}

static void op_mmap(struct worker *w)
{
	static const int prots[] = { PROT_READ, PROT_READ, PROT_READ,
				     PROT_READ | PROT_WRITE, PROT_WRITE, PROT_NONE };
	int fd = pick_fd(w), prot = prots[below(w, 6)], ret;
	int flags = one_in(w, 4) ? MAP_PRIVATE : MAP_SHARED;
	size_t len = PAGE << below(w, 5);
	off_t off = (off_t)below(w, 40) * PAGE;
	bool must_fail = prot & PROT_WRITE;
	void *p;

	if (one_in(w, 16)) {
		off = (off_t)(rnd(w) & 0x7ffffffffff000ULL);
	} else if (one_in(w, 16)) {
		off = 123;
		must_fail = true;
	}
	note_call(w, "mmap fd %d len %zu prot %d %s off %#llx%s", fd, len, prot,
		  flags == MAP_SHARED ? "shared" : "private", (long long)off,
		  must_fail ? " (invalid)" : "");
	p = mmap(NULL, len, prot, flags, fd, off);
	ret = p == MAP_FAILED ? -errno : 0;
	/* Writable, shared or private, is refused: EPERM. */
	judge(w, OP_MMAP, ret, must_fail);
	if (ret)
		return;
	if (prot & PROT_READ)
		touch(p, rnd(w) % len);
	keep_map(w, p, len);
}

static void op_munmap(struct worker *w)
{
	struct mapping *m = &w->maps[below(w, NR_MAPS)];
	int ret = 0;
	size_t nlen;
	void *q;

	if (!m->p) {
		note_call(w, "munmap (nothing mapped)");
		return;
	}
	switch (below(w, 5)) {
	case 0:
		/* Split it: the first page goes, the rest stays. */
		note_call(w, "munmap first page of %p+%zu", m->p, m->len);
		if (munmap(m->p, PAGE))
			ret = -errno;
		if (m->len > PAGE) {
			m->p = (uint8_t *)m->p + PAGE;
			m->len -= PAGE;
		} else {
			m->p = NULL;
		}
		break;
	case 1:
		note_call(w, "mprotect %p+%zu read-write", m->p, m->len);
		ret = mprotect(m->p, m->len, PROT_READ | PROT_WRITE) ? -errno : 0;
		if (!ret)
			fail(w, "a trace mapping was made writable");
		ret = 0;
		break;
	case 2:
		note_call(w, "mremap %p+%zu", m->p, m->len);
		nlen = one_in(w, 2) ? PAGE : m->len + PAGE;
		q = mremap(m->p, m->len, nlen, MREMAP_MAYMOVE);
		if (q == MAP_FAILED) {
			ret = -errno;
			if (nlen > m->len && ret == -EFAULT)
				ret = 0;	/* VM_DONTEXPAND refuses growth */
		} else if (nlen > m->len) {
			fail(w, "a trace mapping grew");
			m->p = q;
			m->len = nlen;
		} else {
			m->p = q;
			m->len = nlen;
		}
		break;
	default:
		note_call(w, "munmap %p+%zu", m->p, m->len);
		if (munmap(m->p, m->len))
			ret = -errno;
		m->p = NULL;
		break;
	}
	judge(w, OP_MUNMAP, ret, false);
}

/* ---- LIST_SESSIONS ------------------------------------------------------------ */

/*
 * Who holds the unit: a struct mutated like the others, an entry array of
 * a random stride (some below the first published size, some above a
 * page, some unmapped).  On success the kernel wrote at most the room it
 * was given, and a worker that dropped its privileges saw only sessions
 * of its own real uid (Documentation/abi.rst, IPT_IOC_LIST_SESSIONS).
 */
static void op_list(struct worker *w)
{
	struct ipt_sessions l = { .size = sizeof(l) };
	uint8_t buf[sizeof(l) + 64];
	uint8_t *ents = w->arg + PAGE + PAGE;	/* the third page: writable */
	bool must_fail = false;
	int fd = pick_fd(w), ret;
	unsigned int room, i;
	size_t len;
	void *p;

	switch (below(w, 8)) {
	case 0:
		l.entry_size = below(w, IPT_SESSION_INFO_SIZE_VER0);
		must_fail = true;
		break;
	case 1:
		l.entry_size = PAGE + 1 + below(w, PAGE);
		must_fail = true;
		break;
	default:
		l.entry_size = IPT_SESSION_INFO_SIZE_VER0 + 8 * below(w, 8);
		break;
	}
	room = l.entry_size && l.entry_size <= PAGE ? PAGE / l.entry_size : 0;
	l.nr_entries = below(w, room + 1);
	l.entries_ptr = l.nr_entries ? (uintptr_t)ents : 0;
	switch (below(w, 24)) {
	case 0:
		l.flags = 1u << below(w, 32);
		must_fail = true;
		break;
	case 1:
		l.total = 1 + below(w, 8);	/* an output field set on input */
		must_fail = true;
		break;
	case 2:
		l.reserved0 = 1;
		must_fail = true;
		break;
	case 3:
		l.reserved[below(w, 2)] = 1 + rnd(w) % 255;
		must_fail = true;
		break;
	case 4:
		if (l.nr_entries) {
			l.entries_ptr = 0;	/* room without an address */
			must_fail = true;
		}
		break;
	case 5:
		if (l.nr_entries) {
			/* the PROT_NONE page: EFAULT once a session is seen */
			l.entries_ptr = (uintptr_t)(w->arg + PAGE);
		}
		break;
	}
	memset(ents, 0xa5, PAGE);
	memcpy(buf, &l, sizeof(l));
	len = mutate_size(w, buf, sizeof(l), IPT_SESSIONS_SIZE_VER0, &must_fail);
	p = place(w, buf, len, &must_fail);
	note_call(w, "LIST_SESSIONS fd %d entry_size %u nr_entries %u%s", fd,
		  l.entry_size, l.nr_entries, must_fail ? " (invalid)" : "");
	ret = do_ioctl(fd, IPT_IOC_LIST_SESSIONS, p);
	judge(w, OP_LIST, ret, must_fail);
	if (ret || !p || l.entries_ptr != (uintptr_t)ents)
		return;
	memcpy(&l, p, sizeof(l));
	if (l.nr_entries > room || (l.nr_entries && l.nr_entries > l.total))
		fail(w, "LIST_SESSIONS wrote %u entries (room %u, total %u)",
		     l.nr_entries, room, l.total);
	for (i = 0; i < l.nr_entries && i < room; i++) {
		struct ipt_session_info e;

		memcpy(&e, ents + (size_t)i * l.entry_size, sizeof(e));
		if (!w->root && e.uid != getuid())
			fail(w, "LIST_SESSIONS showed uid %u's session to uid %u",
			     e.uid, getuid());
		if (e.reserved[0] || e.reserved[1] ||
		    e.flags & ~(IPT_SESSION_THIS | IPT_SESSION_KERNEL))
			fail(w, "LIST_SESSIONS entry %u has unknown bits", i);
	}
}

/* ---- unknown commands and raw arguments ------------------------------------ */

static void op_raw(struct worker *w)
{
	unsigned int dir = below(w, 4), nr = below(w, 16), size = below(w, 1 << 14);
	unsigned int type = one_in(w, 8) ? below(w, 256) : IPT_IOC_MAGIC;
	unsigned long cmd = _IOC(dir, type, nr, size);
	int fd = pick_fd(w), ret;
	uint8_t *p = w->arg;
	size_t i;

	/* Random bytes; a plausible size word most of the time. */
	for (i = 0; i < PAGE; i += 8) {
		uint64_t v = one_in(w, 2) ? 0 : rnd(w);

		memcpy(p + i, &v, 8);
	}
	if (!one_in(w, 4)) {
		uint32_t sz = 8 + below(w, 300);

		memcpy(p, &sz, 4);
	}
	note_call(w, "raw ioctl fd %d cmd %#lx", fd, cmd);
	ret = do_ioctl(fd, cmd, p);
	judge(w, OP_RAW, ret, false);
}

/* ---- files: swap a shared one under the others, reopen our own --------------- */

static void op_files(struct worker *w)
{
	int nfd, ret = 0;

	switch (below(w, 3)) {
	case 0: {
		unsigned int i = below(w, NR_POOL);

		/* dup2 replaces it at once: no call sees a closed number. */
		note_call(w, "swap pool file %d", pool[i]);
		nfd = open(IPT_DEVICE_PATH, O_RDWR);
		if (nfd < 0) {
			ret = w->root ? -errno : 0;
			break;
		}
		if (dup2(nfd, pool[i]) < 0)
			ret = -errno;
		close(nfd);
		break;
	}
	case 1:
		note_call(w, "reopen own file %d", w->own_fd);
		nfd = open(IPT_DEVICE_PATH, O_RDWR);
		if (nfd < 0) {
			ret = w->root ? -errno : 0;
			break;
		}
		if (dup2(nfd, w->own_fd) < 0)
			ret = -errno;
		close(nfd);
		break;
	default: {
		/* A dup of a pool file as our own: the same open file. */
		unsigned int i = below(w, NR_POOL);

		note_call(w, "own file %d := dup of pool file %d", w->own_fd, pool[i]);
		if (dup2(pool[i], w->own_fd) < 0)
			ret = -errno;
		break;
	}
	}
	judge(w, OP_FILES, ret, false);
}

/* ---- threads that attach themselves and exit --------------------------------- */

struct short_thread {
	int fd;
	uint32_t flags;
};

static void *short_thread_fn(void *arg)
{
	struct short_thread *st = arg;
	struct ipt_attach a = { .size = sizeof(a), .flags = st->flags };
	int slot = tid_add();

	/* Traced (or not) and gone: exit with a live trace. */
	ioctl(st->fd, IPT_IOC_ATTACH, &a);
	sched_yield();
	tid_del(slot);
	return NULL;
}

static void op_thread(struct worker *w)
{
	struct short_thread st = { pick_fd(w), one_in(w, 2) ? IPT_ATTACH_INHERIT : 0 };
	pthread_t th;
	int ret;

	note_call(w, "thread: attach itself to fd %d flags %#x, exit", st.fd, st.flags);
	ret = -pthread_create(&th, NULL, short_thread_fn, &st);
	if (!ret)
		pthread_join(th, NULL);
	if (ret == -EAGAIN)
		ret = 0;
	judge(w, OP_THREAD, ret, false);
}

/* ---- fork, exec, exit --------------------------------------------------------- */

static void *exec_child_thread(void *arg)
{
	return arg;
}

/*
 * The program image a traced child execs: a thread and a child of its
 * own (each inherits the trace if the session says so), then exit.
 */
static int exec_child(int fd)
{
	struct ipt_attach a = { .size = sizeof(a), .flags = IPT_ATTACH_INHERIT };
	pthread_t th;
	pid_t pid;

	if (fd >= 0)
		ioctl(fd, IPT_IOC_ATTACH, &a);
	if (!pthread_create(&th, NULL, exec_child_thread, NULL))
		pthread_join(th, NULL);
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return 0;
}

static void op_spawn(struct worker *w)
{
	int fd = pick_fd(w), how = below(w, 3), status, ret = 0;
	uint32_t flags = one_in(w, 2) ? IPT_ATTACH_INHERIT : 0;
	char fdarg[16];
	pid_t pid;

	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	note_call(w, "fork: attach itself to fd %d flags %#x, then %s", fd, flags,
		  how == 0 ? "exec" : how == 1 ? "exit" : "detach and exit");
	pid = fork();
	if (pid == 0) {
		/* Only async-signal-safe calls until exec or _exit. */
		struct ipt_attach a = { .size = sizeof(a), .flags = flags };
		struct ipt_detach d = { .size = sizeof(d) };

		if (ioctl(fd, IPT_IOC_ATTACH, &a) == 0 && how == 2) {
			d.trace = a.trace;
			ioctl(fd, IPT_IOC_DETACH, &d);
		}
		if (how == 0) {
			char *argv[] = { "ipt_fuzz", "--exec-child", fdarg, NULL };

			execv(self_exe, argv);
		}
		_exit(0);
	}
	if (pid < 0) {
		ret = errno == EAGAIN ? 0 : -errno;
	} else if (waitpid(pid, &status, 0) != pid) {
		ret = -errno;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fail(w, "the forked child ended with status %#x", status);
	}
	judge(w, OP_SPAWN, ret, false);
}

/* ---- a whole session in a row ----------------------------------------------- */

/*
 * A valid session from configure to release on one file, so that the
 * others meet real sessions (most random calls find none, or find the
 * unit taken): configure, attach this thread and others in per-thread
 * mode, start, read a trace and map it, stop, and release, or leave it
 * for the other workers one time in ten.  Each ioctl is one call.
 */
static void op_cycle(struct worker *w)
{
	uint64_t *mask = (uint64_t *)(w->arg + 2 * PAGE);
	struct ipt_trace_state ts;
	struct ipt_config c;
	bool must_fail;
	int fd = pick_fd(w), ret, i;
	unsigned int cur;

	do {
		gen_config(w, &c, mask);
		must_fail = config_invalid(w, &c);
	} while (must_fail && w->root);
	if (c.mode == IPT_MODE_THREAD) {
		cur = atomic_load(&sh->max_threads_cfg);
		while (c.max_threads > cur &&
		       !atomic_compare_exchange_weak(&sh->max_threads_cfg, &cur,
						     c.max_threads))
			;
	}
	note_call(w, "cycle: CONFIGURE fd %d mode %u tf %#llx buf %llu thr %u%s", fd,
		  c.mode, (unsigned long long)c.trace_flags,
		  (unsigned long long)c.buffer_size, c.max_threads,
		  must_fail ? " (invalid)" : "");
	ret = do_ioctl(fd, IPT_IOC_CONFIGURE, &c);
	judge(w, OP_CYCLE, ret, must_fail);
	if (ret)
		return;
	/* Attach to this session, and detach some of them again. */
	for (i = 0; c.mode == IPT_MODE_THREAD && i < 3; i++) {
		int t;

		w->n++;
		t = attach_on(w, fd);
		if (t >= 0 && one_in(w, 2)) {
			w->n++;
			detach_on(w, fd, t);
		}
	}
	for (i = 0; i < 4; i++) {
		static const unsigned long cmds[] = {
			IPT_IOC_START, IPT_IOC_GET_TRACE, IPT_IOC_STOP, IPT_IOC_RELEASE,
		};

		if (i == 3 && one_in(w, 10))
			break;
		w->n++;
		note_call(w, "cycle: %s fd %d", i == 0 ? "START" : i == 1 ? "GET_TRACE" :
			  i == 2 ? "STOP" : "RELEASE", fd);
		if (i == 1)
			ret = ipt_state(fd, 0, &ts);
		else
			ret = ipt_cmd(fd, cmds[i]);
		judge(w, OP_CYCLE, ret, false);
		if (i == 1 && !ret && ts.buffer_size <= (1 << 20)) {
			void *m = mmap(NULL, ts.buffer_size, PROT_READ, MAP_SHARED, fd,
				       ts.mmap_offset);

			if (m != MAP_FAILED)
				keep_map(w, m, ts.buffer_size);
		}
	}
}

/* ---- CPU offline and online ---------------------------------------------------- */

static int cpu_online(int cpu)
{
	char path[64];
	FILE *f;
	int v = 1;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	f = fopen(path, "r");
	if (!f)
		return 1;
	if (fscanf(f, "%d", &v) != 1)
		v = 1;
	fclose(f);
	return v;
}

static void op_hotplug(struct worker *w)
{
	int cpu = 1 + below(w, ncpus - 1), on = !cpu_online(cpu), ret;

	note_call(w, "cpu %d %s", cpu, on ? "online" : "offline");
	ret = ipt_cpu_online_set(cpu, on);
	if (ret == -EBUSY)	/* the kernel's own refusal, not ipt's */
		ret = 0;
	judge(w, OP_HOTPLUG, ret, false);
}

/* ---- workers -------------------------------------------------------------- */

static struct timespec t_start;

static void progress(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	out("# progress: %lu calls in %.0f s\n", atomic_load(&sh->calls),
	    (t.tv_sec - t_start.tv_sec) + (t.tv_nsec - t_start.tv_nsec) / 1e9);
}

static enum op pick_op(struct worker *w)
{
	unsigned int total = 0, i, r;

	if (w->hotplug && one_in(w, 400))
		return OP_HOTPLUG;
	for (i = 0; i < NR_OPS; i++)
		total += op_weight[i];
	r = below(w, total);
	for (i = 0; i < NR_OPS; i++) {
		if (r < op_weight[i])
			return i;
		r -= op_weight[i];
	}
	return OP_GET_CAPS;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	int slot = tid_add();

	for (w->n = 0; w->n < w->budget && !atomic_load(&sh->stop); w->n++) {
		unsigned long before = w->n;
		enum op op = pick_op(w);

		switch (op) {
		case OP_CONFIGURE:
			op_configure(w);
			break;
		case OP_START:
		case OP_STOP:
		case OP_RELEASE:
			op_cmd(w, op);
			break;
		case OP_GET_TRACE:
			op_get_trace(w);
			break;
		case OP_GET_CAPS:
			op_get_caps(w);
			break;
		case OP_ATTACH:
			op_attach(w);
			break;
		case OP_DETACH:
			op_detach(w);
			break;
		case OP_MMAP:
			op_mmap(w);
			break;
		case OP_MUNMAP:
			op_munmap(w);
			break;
		case OP_RAW:
			op_raw(w);
			break;
		case OP_FILES:
			op_files(w);
			break;
		case OP_THREAD:
			op_thread(w);
			break;
		case OP_SPAWN:
			op_spawn(w);
			break;
		case OP_CYCLE:
			op_cycle(w);
			break;
		case OP_LIST:
			op_list(w);
			break;
		case OP_HOTPLUG:
			op_hotplug(w);
			break;
		default:
			break;
		}
		unsigned long k = w->n - before + 1;
		unsigned long total = atomic_fetch_add(&sh->calls, k) + k;

		if (total / 100000 != (total - k) / 100000)
			progress();
	}
	tid_del(slot);
	return NULL;
}

/*
 * Run @n workers numbered from @first in this process, each with its
 * share of the budget; returns when all are done and their mappings and
 * own files are gone.
 */
static int run_workers(unsigned int first, unsigned int n, unsigned int nworkers,
		       bool root, bool hotplug)
{
	struct worker *ws = calloc(n, sizeof(*ws));
	unsigned int i, j;

	if (!ws)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct worker *w = &ws[i];

		w->id = first + i;
		w->rng = seed * 0x100000001b3ULL + w->id * 0x9e3779b97f4a7c15ULL;
		w->budget = budget / nworkers + (w->id < budget % nworkers);
		w->root = root;
		w->hotplug = hotplug && i == 0;
		w->own_fd = open(IPT_DEVICE_PATH, O_RDWR);
		if (w->own_fd < 0)
			w->own_fd = dup(pool[0]);
		/* Page 1: arguments; page 2: PROT_NONE; page 3: cpu masks, entries. */
		w->arg = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (w->arg == MAP_FAILED)
			return -ENOMEM;
		mprotect(w->arg + PAGE, PAGE, PROT_NONE);
	}
	for (i = 0; i < n; i++)
		if (pthread_create(&ws[i].th, NULL, worker_fn, &ws[i]))
			return -EAGAIN;
	for (i = 0; i < n; i++)
		pthread_join(ws[i].th, NULL);
	for (i = 0; i < n; i++) {
		for (j = 0; j < NR_MAPS; j++)
			if (ws[i].maps[j].p)
				munmap(ws[i].maps[j].p, ws[i].maps[j].len);
		close(ws[i].own_fd);
		munmap(ws[i].arg, 3 * PAGE);
	}
	free(ws);
	return 0;
}

/* ---- the kernel log -------------------------------------------------------- */

struct kmsg_rules {
	regex_t *ok, *bad;
	unsigned int nok, nbad;
};

static struct kmsg_rules rules;

static int compile_rules(void)
{
	unsigned int i;

	const unsigned int n = sizeof(kmsg_patterns) / sizeof(kmsg_patterns[0]);

	rules.ok = calloc(n, sizeof(regex_t));
	rules.bad = calloc(n, sizeof(regex_t));
	for (i = 0; i < n; i++) {
		regex_t *re;

		if (!strcmp(kmsg_patterns[i].kind, "ok"))
			re = &rules.ok[rules.nok++];
		else if (!strcmp(kmsg_patterns[i].kind, "bad"))
			re = &rules.bad[rules.nbad++];
		else
			continue;
		if (regcomp(re, kmsg_patterns[i].re, REG_EXTENDED | REG_NOSUB)) {
			printf("# cannot compile kernel-log pattern %s\n", kmsg_patterns[i].re);
			return -1;
		}
	}
	return rules.nbad ? 0 : -1;
}

/* Whether a kernel message is a report (scripts/vm-check-log's "bad" rows). */
static bool kmsg_bad(const char *msg)
{
	unsigned int i;

	for (i = 0; i < rules.nok; i++)
		if (!regexec(&rules.ok[i], msg, 0, NULL, 0))
			return false;
	for (i = 0; i < rules.nbad; i++)
		if (!regexec(&rules.bad[i], msg, 0, NULL, 0))
			return true;
	return false;
}

static int kmsg_fd = -1, kmsg_stop[2] = { -1, -1 };
static atomic_uint kmsg_reports;

/* Read what /dev/kmsg has; false when nothing is left (or on stop). */
static bool kmsg_read_one(void)
{
	char rec[8192], *msg, *nl;
	ssize_t n = read(kmsg_fd, rec, sizeof(rec) - 1);

	if (n < 0)
		return errno == EPIPE;	/* overwritten records: go on */
	rec[n] = '\0';
	msg = strchr(rec, ';');
	if (!msg)
		return true;
	msg++;
	nl = strchr(msg, '\n');
	if (nl)
		*nl = '\0';
	if (kmsg_bad(msg)) {
		if (!atomic_fetch_add(&kmsg_reports, 1)) {
			out("# FAIL: seed %llu: a kernel report during the run; %s\n",
			    (unsigned long long)seed, "the workers' last calls:");
			dump_recent();
			atomic_store(&sh->stop, 1);
		}
		out("# kernel: %s\n", msg);
	}
	return true;
}

/* Follows /dev/kmsg during the run (woken by new records, not by a clock). */
static void *kmsg_monitor(void *arg)
{
	struct pollfd p[2] = { { kmsg_fd, POLLIN, 0 }, { kmsg_stop[0], POLLIN, 0 } };

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN)
			kmsg_read_one();
		if (p[1].revents)
			break;
	}
	/* Drain what is left. */
	while (kmsg_read_one())
		;
	return NULL;
}

/* ---- checks after the run --------------------------------------------------- */

static int tap_n, tap_failed;

static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	tap_failed += !ok;
	printf("%s %d - ", ok ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static long module_refcnt(void)
{
	uint64_t v = ~0ULL;
	FILE *f = fopen("/sys/module/ipt/refcnt", "r");

	if (f) {
		if (fscanf(f, "%llu", (unsigned long long *)&v) != 1)
			v = ~0ULL;
		fclose(f);
	}
	return (long)v;
}

/* The first number after @key in the file at @path; -1 if none. */
static long file_number(const char *path, const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key))) {
			v = strtol(line + strlen(key), NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* The unit takes a per-CPU session on every CPU and a per-thread one. */
static int unit_free(char *why, size_t len)
{
	struct ipt_config c;
	struct ipt_attach a = { .size = sizeof(a) };
	struct ipt_detach d = { .size = sizeof(d) };
	uint64_t mask[2] = { 0 };
	int fd = open(IPT_DEVICE_PATH, O_RDWR), ret;

	if (fd < 0)
		return snprintf(why, len, "open: %s", strerror(errno)), -1;
	ipt_cfg_cpu(&c, mask, 0, 8192);
	c.flags = IPT_CONFIG_ALL_CPUS;
	c.cpu_mask_words = 0;
	c.cpu_mask_ptr = 0;
	ret = ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c);
	ret = ret ?: ipt_cmd(fd, IPT_IOC_START);
	ret = ret ?: ipt_cmd(fd, IPT_IOC_STOP);
	ret = ret ?: ipt_cmd(fd, IPT_IOC_RELEASE);
	if (ret) {
		snprintf(why, len, "per-CPU session on every CPU: %s", strerror(-ret));
		close(fd);
		return -1;
	}
	ipt_cfg_thread(&c, 8192, 2);
	c.trace_flags = IPT_TRACE_USER | IPT_TRACE_BRANCH;
	ret = ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c);
	ret = ret ?: ipt_ioctl(fd, IPT_IOC_ATTACH, &a);
	ret = ret ?: ipt_cmd(fd, IPT_IOC_START);
	d.trace = a.trace;
	ret = ret ?: ipt_ioctl(fd, IPT_IOC_DETACH, &d);
	ret = ret ?: ipt_cmd(fd, IPT_IOC_STOP);
	ret = ret ?: ipt_cmd(fd, IPT_IOC_RELEASE);
	if (ret) {
		snprintf(why, len, "per-thread session: %s", strerror(-ret));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * How many pages @uid may still lock in trace buffers: the largest
 * per-thread buffer a child of that uid, without CAP_IPC_LOCK and with
 * RLIMIT_MEMLOCK at 64 KiB, can configure, found by bisection between
 * nothing and one page above the whole allowance (ipt.mlock_kb per online
 * CPU plus the rlimit, Documentation/abi.rst).  Compared before and after
 * the run, so that what earlier tests leave charged on purpose (a buffer
 * ipt must leak because a unit would not stop: life_test) does not count,
 * but every charge the run takes and does not give back does.
 * Returns the pages, or -1 with @why set.
 */
static long charge_room(uid_t uid, char *why, size_t len)
{
	const unsigned long rlim = 64 * 1024;
	long kb = file_number("/sys/module/ipt/parameters/mlock_kb", "");
	unsigned long pages = (kb >> 2) * sysconf(_SC_NPROCESSORS_ONLN) + rlim / PAGE;
	int fd = open(IPT_DEVICE_PATH, O_RDWR), status;
	pid_t pid;

	if (fd < 0 || kb < 0)
		return snprintf(why, len, "no /dev/ipt or mlock_kb"), -1;
	atomic_store(&sh->rest_room, -1);
	atomic_store(&sh->rest_err, 0);
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { rlim, rlim };
		int no_ipc_lock[] = { CAP_IPC_LOCK };
		unsigned long lo = 0, hi = pages + 1, mid;
		struct ipt_config c;
		int r;

		if (uid ? ipt_become_user() : ipt_drop_caps(no_ipc_lock, 1))
			_exit(10);
		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(11);
		ipt_cfg_thread(&c, hi * PAGE, 1);
		c.trace_flags = IPT_TRACE_USER | IPT_TRACE_BRANCH;
		r = ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c);
		if (r != -EPERM) {
			atomic_store(&sh->rest_err, r ? r : 1);
			_exit(12);
		}
		/* lo fits (nothing), hi does not. */
		while (hi - lo > 1) {
			mid = lo + (hi - lo) / 2;
			c.buffer_size = mid * PAGE;
			r = ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c);
			if (!r) {
				ipt_cmd(fd, IPT_IOC_RELEASE);
				lo = mid;
			} else if (r == -EPERM) {
				hi = mid;
			} else {
				atomic_store(&sh->rest_err, r);
				_exit(13);
			}
		}
		atomic_store(&sh->rest_room, lo);
		_exit(0);
	}
	close(fd);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return snprintf(why, len, "fork: %s", strerror(errno)), -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(why, len,
			 "status %#x (12: more than the allowance of %lu pages fit or failed otherwise, 13: a configure failed; error %d)",
			 status, pages, atomic_load(&sh->rest_err));
		return -1;
	}
	return atomic_load(&sh->rest_room);
}

static int kmemleak_clean(char *why, size_t len)
{
	const char *path = "/sys/kernel/debug/kmemleak";
	char line[256];
	int n = 0;
	FILE *f;

	if (access(path, W_OK))
		return snprintf(why, len, "no kmemleak"), -1;
	/* kmemleak reports only objects older than its 5 s minimum age. */
	sleep(6);
	ipt_write_file(path, "scan");
	ipt_write_file(path, "scan");
	f = fopen(path, "r");
	if (!f)
		return snprintf(why, len, "cannot read kmemleak"), -1;
	while (fgets(line, sizeof(line), f)) {
		if (n++ < 40)
			printf("# kmemleak: %s", line);
	}
	fclose(f);
	snprintf(why, len, "%d lines", n);
	return n ? -1 : 0;
}

/* ---- main --------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: ipt_fuzz [--seed S] [--calls N] [--threads T] [--procs P] [--kmemleak] [--verbose]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned int i, nworkers, first;
	long ref0, pin0;
	struct timespec t0, t1;
	pid_t pids[64];
	int npids = 0, status, ret, cpu;
	char why[256];
	pthread_t mon;
	bool seeded = false;
	long room0, room65534, room;
	pthread_mutexattr_t ma;

	if (argc == 3 && !strcmp(argv[1], "--exec-child"))
		return exec_child(atoi(argv[2]));
	for (i = 1; i < (unsigned int)argc; i++) {
		const char *a = argv[i], *v = i + 1 < (unsigned int)argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--kmemleak"))
			do_kmemleak = true;
		else if (!strcmp(a, "--verbose"))
			verbose = true;
		else if (!v)
			usage();
		else if (!strcmp(a, "--seed"))
			seed = strtoull(v, NULL, 0), seeded = true, i++;
		else if (!strcmp(a, "--calls"))
			budget = strtoul(v, NULL, 0), i++;
		else if (!strcmp(a, "--threads"))
			nthreads = strtoul(v, NULL, 0), i++;
		else if (!strcmp(a, "--procs"))
			nprocs = strtoul(v, NULL, 0), i++;
		else
			usage();
	}
	nworkers = nthreads * (nprocs + 2);
	if (!nthreads || nworkers > MAX_WORKERS || nprocs > 60)
		usage();
	if (!seeded) {
		clock_gettime(CLOCK_REALTIME, &t0);
		seed = (uint64_t)t0.tv_sec * 1000003 ^ t0.tv_nsec;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	printf("# ipt_fuzz --seed %llu --calls %lu --threads %u --procs %u\n",
	       (unsigned long long)seed, budget, nthreads, nprocs);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&sh->print_lock, &ma);
	if (geteuid() || !ipt_sim_loaded()) {
		printf("1..0 # SKIP needs root and the simulated unit (ipt_sim)\n");
		return 4;
	}
	if (compile_rules()) {
		printf("1..0 # the kernel-log patterns do not compile\nnot ok 1\n");
		return 1;
	}
	ncpus = sysconf(_SC_NPROCESSORS_CONF);
	for (cpu = 1; cpu < (int)ncpus; cpu++)
		if (!cpu_online(cpu))
			ipt_cpu_online_set(cpu, 1);
	ref0 = module_refcnt();
	pin0 = ipt_vm_pin_kb(0);
	room0 = charge_room(0, why, sizeof(why));
	if (room0 < 0)
		printf("# uid 0's room before the run: %s\n", why);
	room65534 = charge_room(IPT_TEST_UID, why, sizeof(why));
	if (room65534 < 0)
		printf("# uid %d's room before the run: %s\n", IPT_TEST_UID, why);

	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg_fd < 0 || lseek(kmsg_fd, 0, SEEK_END) < 0 || pipe(kmsg_stop)) {
		printf("1..0 # /dev/kmsg: %s\nnot ok 1\n", strerror(errno));
		return 1;
	}
	if (pthread_create(&mon, NULL, kmsg_monitor, NULL))
		return 1;
	caps.size = sizeof(caps);
	for (i = 0; i < NR_POOL; i++) {
		pool[i] = open(IPT_DEVICE_PATH, O_RDWR);
		if (pool[i] < 0 || (i == 0 && ipt_ioctl(pool[0], IPT_IOC_GET_CAPS, &caps)))
			return printf("1..0 # /dev/ipt: %s\nnot ok 1\n", strerror(errno)), 1;
	}
	atomic_store(&sh->max_threads_cfg, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	t_start = t0;

	/* Processes: root ones and an unprivileged one, sharing the pool. */
	first = nthreads;
	for (i = 0; i <= nprocs; i++, first += nthreads) {
		bool unpriv = i == nprocs;
		pid_t pid = fork();

		if (pid == 0) {
			close(kmsg_fd);
			if (unpriv && ipt_become_user()) {
				out("# FAIL: cannot become uid %d\n", IPT_TEST_UID);
				_exit(1);
			}
			_exit(run_workers(first, nthreads, nworkers, !unpriv, false) ? 1 : 0);
		}
		if (pid > 0)
			pids[npids++] = pid;
	}
	ret = run_workers(0, nthreads, nworkers, true, ncpus > 1);
	for (i = 0; i < (unsigned int)npids; i++)
		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			fail(NULL, "worker process %d ended with status %#x", pids[i], status);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (i = 0; i < NR_POOL; i++)
		close(pool[i]);
	for (cpu = 1; cpu < (int)ncpus; cpu++)
		if (!cpu_online(cpu))
			ipt_cpu_online_set(cpu, 1);

	printf("# %lu calls in %.1f s by %u workers in %u processes\n",
	       atomic_load(&sh->calls),
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
	       nworkers, nprocs + 2);
	for (i = 0; i < NR_OPS; i++) {
		int e;

		printf("#   %-10s %8lu ok %8lu failed:", op_names[i],
		       atomic_load(&sh->ok[i]), atomic_load(&sh->err[i]));
		for (e = 1; e < 64; e++)
			if (atomic_load(&sh->errs[i][e]))
				printf(" %s %lu", strerrorname_np(e),
				       atomic_load(&sh->errs[i][e]));
		printf("\n");
	}

	printf("1..%d\n", 8 + do_kmemleak);
	tap(!ret && atomic_load(&sh->failures) == 0 &&
	    atomic_load(&sh->calls) >= budget,
	    "%lu calls of a budget of %lu, %u invariant failures (seed %llu)",
	    atomic_load(&sh->calls), budget, atomic_load(&sh->failures),
	    (unsigned long long)seed);
	ret = unit_free(why, sizeof(why));
	tap(!ret, "the unit is free afterwards%s%s", ret ? ": " : "", ret ? why : "");
	tap(module_refcnt() == ref0, "ipt's reference count is back to %ld (now %ld)",
	    ref0, module_refcnt());
	tap(ipt_vm_pin_kb(0) == pin0, "VmPin is back to %ld kB (now %ld)", pin0, ipt_vm_pin_kb(0));
	room = charge_room(0, why, sizeof(why));
	tap(room0 >= 0 && room == room0,
	    "uid 0's locked-memory charge is at rest: room %ld pages, before %ld%s%s",
	    room, room0, room < 0 ? ": " : "", room < 0 ? why : "");
	room = charge_room(IPT_TEST_UID, why, sizeof(why));
	tap(room65534 >= 0 && room == room65534,
	    "uid %d's locked-memory charge is at rest: room %ld pages, before %ld%s%s",
	    IPT_TEST_UID, room, room65534, room < 0 ? ": " : "", room < 0 ? why : "");
	for (ret = 0, cpu = 1; cpu < (int)ncpus; cpu++)
		ret |= !cpu_online(cpu);
	tap(!ret, "every CPU is online");
	if (write(kmsg_stop[1], "x", 1) != 1)
		return 1;
	pthread_join(mon, NULL);
	tap(!atomic_load(&kmsg_reports), "no kernel report in /dev/kmsg since the start (%u)",
	    atomic_load(&kmsg_reports));
	if (do_kmemleak) {
		ret = kmemleak_clean(why, sizeof(why));
		tap(!ret, "kmemleak: %s", why);
	}
	if (atomic_load(&sh->failures) || atomic_load(&kmsg_reports))
		printf("# to replay: ipt_fuzz --seed %llu --calls %lu --threads %u --procs %u\n",
		       (unsigned long long)seed, budget, nthreads, nprocs);
	return tap_n == 8 + do_kmemleak && !tap_failed ? 0 : 1;
}

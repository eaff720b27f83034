// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: per-thread mode on the simulated PT unit - PT state that
 * follows threads across context switches and CPUs.
 *
 * The simulator runs, on whichever CPU a thread is, that thread's own
 * program (debugfs task_feed), and writes its packets only while the unit
 * is enabled.  So a thread's trace holds its program's packets exactly
 * when the driver saved and restored the right state at every switch: a
 * real program's execution (a ground-truth feed from
 * tools/testing/groundtruth) fed to a thread that hops between CPUs
 * hundreds of times must still decode to exactly its instructions, two
 * such threads must stay apart, and the bytes the unit wrote on all CPUs
 * must equal what the thread's trace says it captured.
 *
 * Every test runs on both switching paths: XSAVES (where the simulated CPU
 * model has it) and MSRs (ipt's force_msr parameter).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "ipt_lib.h"
#include "ipt_poller.h"
#include "kselftest_harness.h"

#define KIB 1024ULL
#define MIB (1024 * KIB)
#define FORCE_MSR "/sys/module/ipt/parameters/force_msr"
#define SWITCH_STATS "/sys/kernel/debug/ipt/switch_stats"

static void msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void spin_us(unsigned int us)
{
	uint64_t end = now_ns() + us * 1000ULL;

	while (now_ns() < end)
		;
}

static pid_t gettid_(void)
{
	return syscall(SYS_gettid);
}

static int nr_cpus(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN);
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* ipt_cfg_thread() with this file's argument order. */
static void cfg_thread(struct ipt_config *cfg, unsigned int max, uint64_t size)
{
	ipt_cfg_thread(cfg, size, max);
}

static int attach(int fd, pid_t tid, uint32_t flags, uint32_t *trace)
{
	struct ipt_attach a = { .size = sizeof(a), .flags = flags, .tid = tid };
	int ret = ipt_ioctl(fd, IPT_IOC_ATTACH, &a);

	if (!ret && trace)
		*trace = a.trace;
	return ret;
}

/* ATTACH of the caller with the argument in a read-only page. */
static int attach_read_only(int fd)
{
	struct ipt_attach *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ret;

	if (ro == MAP_FAILED)
		return -errno;
	ro->size = sizeof(*ro);
	ret = mprotect(ro, 4096, PROT_READ) ? -errno :
	      ipt_ioctl(fd, IPT_IOC_ATTACH, ro);
	munmap(ro, 4096);
	return ret;
}

static int detach(int fd, uint32_t trace)
{
	struct ipt_detach d = { .size = sizeof(d), .trace = trace };

	return ipt_ioctl(fd, IPT_IOC_DETACH, &d);
}

/*
 * Wait until task @pid sleeps (state S or D in /proc/PID/stat), so that it
 * has been switched out; at most 30 s (never reached when all is well).
 * Returns whether it does.
 */
static bool wait_sleeping(pid_t pid)
{
	char path[64], buf[512], *p;
	int i, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (i = 0; i < 3000; i++) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return false;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			p = strrchr(buf, ')');
			if (p && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D'))
				return true;
		}
		msleep(10);
	}
	return false;
}

static uint64_t sim_bytes_all(void)
{
	uint64_t sum = 0;
	int cpu;

	for (cpu = 0; cpu < nr_cpus(); cpu++)
		sum += ipt_sim_stat(cpu, "bytes");
	return sum;
}

static uint64_t sim_sum(const char *key)
{
	uint64_t sum = 0;
	int cpu;

	for (cpu = 0; cpu < nr_cpus(); cpu++)
		sum += ipt_sim_stat(cpu, key);
	return sum;
}

/* Value of @key in ipt's switch_stats; for "path", 1 = xsaves, 0 = msr. */
static long long switch_stat(const char *key)
{
	char line[128];
	size_t klen = strlen(key);
	long long v = -1;
	FILE *f = fopen(SWITCH_STATS, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) || line[klen] != ' ')
			continue;
		if (!strcmp(key, "path"))
			v = !strncmp(line + klen + 1, "xsaves", 6);
		else
			v = strtoll(line + klen + 1, NULL, 0);
	}
	fclose(f);
	return v;
}

static void *map_trace(int fd, const struct ipt_trace_state *ts)
{
	void *p = mmap(NULL, ts->buffer_size, PROT_READ, MAP_SHARED, fd,
		       ts->mmap_offset);

	return p == MAP_FAILED ? NULL : p;
}

/* Read a ground-truth feed; returns its length or -errno. */
static ssize_t read_feed(const char *dir, uint8_t *buf, size_t cap)
{
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/feed.bin", dir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap);
	close(fd);
	return n < 0 ? -errno : n;
}

/* The @i-th directory of IPT_GT_DIRS, or NULL. */
static const char *gt_dir(int i, char *buf, size_t len)
{
	const char *dirs = getenv("IPT_GT_DIRS");
	char *list, *d, *save = NULL;
	const char *ret = NULL;

	if (!dirs)
		return NULL;
	list = strdup(dirs);
	for (d = strtok_r(list, " ", &save); d; d = strtok_r(NULL, " ", &save))
		if (!i--) {
			snprintf(buf, len, "%s", d);
			ret = buf;
			break;
		}
	free(list);
	return ret;
}

/* Save trace @idx to @path and run ptverify on it against @dir. */
static int verify_trace(int fd, uint32_t idx, const char *dir,
			const char *path, struct ipt_trace_state *ts)
{
	const char *ptverify = getenv("IPT_PTVERIFY") ?: "/opt/bin/ptverify";
	char cmd[1024], out[600];
	uint8_t *p;
	int f, st;

	if (ipt_state(fd, idx, ts))
		return -1;
	p = map_trace(fd, ts);
	if (!p)
		return -2;
	f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (f < 0 || write(f, p, ts->bytes_valid) != (ssize_t)ts->bytes_valid)
		return -3;
	close(f);
	munmap(p, ts->buffer_size);
	snprintf(out, sizeof(out), "%s.out", path);
	snprintf(cmd, sizeof(cmd), "%s --trace %s %s >%s 2>&1", ptverify, path,
		 dir, out);
	st = system(cmd);
	ipt_print_file("# ptverify: ", out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -4;
}

/* ---- a worker thread that runs a program and hops between CPUs ----------- */

struct worker {
	int fd;				/* /dev/ipt */
	const char *dir;		/* ground-truth dir whose feed it runs */
	uint32_t attach_flags;
	int min_hops;			/* at least this many CPU changes */
	unsigned int spin;		/* microseconds on a CPU between hops */
	int timeout_s;
	atomic_int ready;
	atomic_int go;
	atomic_int quit;
	pid_t tid;
	uint32_t trace;
	int hops;
	int err;			/* 0, or a line number that failed */
};

static void *worker_fn(void *arg)
{
	static __thread uint8_t feed[64 * 1024];
	struct worker *w = arg;
	int tf = -1, ncpu = nr_cpus();
	uint64_t deadline;
	ssize_t n;

	w->tid = gettid_();
	if (w->dir) {
		n = read_feed(w->dir, feed, sizeof(feed));
		if (n <= 0 || n == sizeof(feed)) {
			w->err = __LINE__;
			goto out;
		}
		tf = open(IPT_SIM_DEBUGFS "/task_feed", O_RDWR | O_TRUNC);
		if (tf < 0 || write(tf, feed, n) != n) {
			w->err = __LINE__;
			goto out;
		}
	}
	if (attach(w->fd, 0, w->attach_flags, &w->trace)) {
		w->err = __LINE__;
		goto out;
	}
	atomic_store(&w->ready, 1);
	while (!atomic_load(&w->go))
		sched_yield();
	deadline = now_ns() + w->timeout_s * 1000000000ULL;
	for (w->hops = 0; now_ns() < deadline && !atomic_load(&w->quit);
	     w->hops++) {
		char line[64];
		size_t pos, len;

		if (ncpu > 1 && pin(w->hops % ncpu)) {
			w->err = __LINE__;
			break;
		}
		spin_us(w->spin);
		if (w->hops < w->min_hops)
			continue;
		if (tf < 0)
			break;
		n = read(tf, line, sizeof(line) - 1);
		if (n <= 0) {
			w->err = __LINE__;
			break;
		}
		line[n] = '\0';
		if (sscanf(line, "%zu %zu", &pos, &len) == 2 && pos == len)
			break;
	}
	if (now_ns() >= deadline)
		w->err = __LINE__;
out:
	if (tf >= 0)
		close(tf);
	atomic_store(&w->ready, 1);
	return NULL;
}

static void worker_init(struct worker *w, int fd, const char *dir)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->dir = dir;
	w->min_hops = 200;
	w->spin = 300;
	w->timeout_s = 120;
}

/*
 * Wait until @w's thread says it is ready: at most 30 s (never reached
 * when all is well; a thread that never gets there fails the test
 * instead of hanging it).  Returns whether it did.
 */
static bool wait_ready(struct worker *w)
{
	int i;

	for (i = 0; i < 30000 && !atomic_load(&w->ready); i++)
		msleep(1);
	return atomic_load(&w->ready);
}

/*
 * Wait until the simulated units of all CPUs together wrote at least
 * @min bytes (sim_bytes_all()): the event that a traced thread ran
 * traced on some CPU.  At most 30 s.  Returns whether they did.
 */
static bool wait_bytes_all(uint64_t min)
{
	int i;

	for (i = 0; i < 3000 && sim_bytes_all() < min; i++)
		msleep(10);
	return sim_bytes_all() >= min;
}

/*
 * Run @w: its thread attaches itself; once it is ready the session starts
 * (*@bytes0, if given, gets the simulator's byte count just before), the
 * thread runs to its end, and the session stops.  0, or the line of the
 * worker or of this function that failed.
 */
static int run_worker(int fd, struct worker *w, uint64_t *bytes0)
{
	pthread_t th;
	int ret = 0;

	if (pthread_create(&th, NULL, worker_fn, w))
		return __LINE__;
	if (!wait_ready(w)) {
		ret = __LINE__;
		atomic_store(&w->quit, 1);
	} else if (!w->err) {
		if (bytes0)
			*bytes0 = sim_bytes_all();
		if (ipt_cmd(fd, IPT_IOC_START)) {
			ret = __LINE__;
			atomic_store(&w->quit, 1);
		}
	}
	atomic_store(&w->go, 1);
	pthread_join(th, NULL);
	if (!ret)
		ret = w->err;
	if (!ret && ipt_cmd(fd, IPT_IOC_STOP))
		ret = __LINE__;
	return ret;
}

/* ---- argument checks (no tracing) --------------------------------------- */

FIXTURE(abi) {
	int fd;
};

FIXTURE_SETUP(abi)
{
	if (!ipt_sim_loaded())
		SKIP(return, "the simulated PT unit is not loaded");
	self->fd = open(IPT_DEVICE_PATH, O_RDWR);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(abi)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(abi, configure_rejects_bad_thread_fields)
{
	uint64_t mask[1] = { 1 };
	struct ipt_config c;

#define TRY(err, stmt) do {						\
		cfg_thread(&c, 4, 64 * KIB);				\
		stmt;							\
		EXPECT_EQ(err, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c)); \
		if (!err)						\
			ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE)); \
	} while (0)

	TRY(0, (void)0);
	TRY(-EINVAL, c.max_threads = 0);
	TRY(-EINVAL, c.max_threads = IPT_MAX_THREADS + 1);
	TRY(-EINVAL, c.flags = IPT_CONFIG_ALL_CPUS);
	TRY(-EINVAL, (c.cpu_mask_words = 1, c.cpu_mask_ptr = (uintptr_t)mask));
	TRY(-EINVAL, c.cpu_mask_words = 1);
	TRY(-EINVAL, c.nr_regions = 1);
	TRY(-EINVAL, c.mode = 3);
	TRY(-EINVAL, (c.mode = IPT_MODE_CPU, c.flags = IPT_CONFIG_ALL_CPUS));
	TRY(0, c.max_threads = IPT_MAX_THREADS);
#undef TRY
}

TEST_F(abi, attach_and_detach_errors)
{
	uint64_t mask[1] = { 0 };
	struct ipt_attach a;
	struct ipt_detach d;
	struct ipt_config c;
	struct ipt_trace_state ts;
	uint32_t t0, t1;
	pid_t child;

	/* No session, or a per-CPU one: not a command for it. */
	EXPECT_EQ(-EINVAL, attach(self->fd, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, detach(self->fd, 0));
	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	EXPECT_EQ(-EINVAL, attach(self->fd, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, detach(self->fd, 0));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	cfg_thread(&c, 2, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));

	/* Malformed arguments change nothing. */
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.flags = 2;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_ATTACH, &a));
	a.flags = 0;
	a.trace = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_ATTACH, &a));
	a.trace = 0;
	a.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_ATTACH, &a));
	a.reserved[1] = 0;
	a.size = IPT_ATTACH_SIZE_VER0 - 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_ATTACH, &a));
	EXPECT_EQ(-EFAULT, ipt_ioctl(self->fd, IPT_IOC_ATTACH, (void *)8));
	EXPECT_EQ(-ENOENT, ipt_state(self->fd, 0, &ts));
	/*
	 * A valid argument whose answer cannot be written back (a read-only
	 * page): EFAULT before anything changes, so no thread is attached
	 * that the caller would never hear of.
	 */
	EXPECT_EQ(-EFAULT, attach_read_only(self->fd));
	EXPECT_EQ(-ENOENT, ipt_state(self->fd, 0, &ts));

	/* No such thread; a kernel thread (kthreadd is pid 2). */
	EXPECT_EQ(-ESRCH, attach(self->fd, 0x3ffffff0, 0, NULL));
	EXPECT_EQ(-EINVAL, attach(self->fd, 2, 0, NULL));
	EXPECT_EQ(-ENOENT, ipt_state(self->fd, 0, &ts));

	ASSERT_EQ(0, attach(self->fd, 0, 0, &t0));
	EXPECT_EQ(0U, t0);
	EXPECT_EQ(-EEXIST, attach(self->fd, gettid_(), 0, NULL));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		pause();
		_exit(0);
	}
	ASSERT_EQ(0, attach(self->fd, child, IPT_ATTACH_INHERIT, &t1));
	EXPECT_EQ(1U, t1);
	EXPECT_EQ(-ENOSPC, attach(self->fd, getppid(), 0, NULL));

	ASSERT_EQ(0, ipt_state(self->fd, t1, &ts));
	EXPECT_EQ((uint32_t)child, ts.tid);
	EXPECT_EQ(IPT_TRACE_NONE, ts.parent);
	EXPECT_EQ(IPT_TS_THREAD | IPT_TS_INHERIT, ts.status);
	EXPECT_EQ(IPT_STATE_CONFIGURED, ts.state);
	EXPECT_EQ(0ULL, ts.bytes_captured);
	EXPECT_EQ(64 * KIB, ts.buffer_size);
	EXPECT_EQ(64 * KIB, ts.mmap_offset);
	ASSERT_EQ(-ENOENT, ipt_state(self->fd, 2, &ts));

	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.flags = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_DETACH, &d));
	d.flags = 0;
	d.reserved = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_DETACH, &d));
	EXPECT_EQ(-ENOENT, detach(self->fd, 2));
	EXPECT_EQ(0, detach(self->fd, t1));
	EXPECT_EQ(-ESRCH, detach(self->fd, t1));
	ASSERT_EQ(0, ipt_state(self->fd, t1, &ts));
	EXPECT_EQ(IPT_TS_THREAD | IPT_TS_INHERIT | IPT_TS_DETACHED, ts.status);
	/* A detached thread can be attached again, to a new trace... */
	EXPECT_EQ(-ENOSPC, attach(self->fd, child, 0, NULL));

	/* ...and one that exited is final. */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	EXPECT_EQ(-ESRCH, attach(self->fd, child, 0, NULL));

	/* Input-only fields of GET_TRACE must be zero. */
	memset(&ts, 0, sizeof(ts));
	ts.size = sizeof(ts);
	ts.tid = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_TRACE, &ts));
	ts.tid = 0;
	ts.busy = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_GET_TRACE, &ts));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * Without CAP_PERFMON / CAP_SYS_ADMIN: per-thread sessions on one's own
 * threads work; per-CPU mode, kernel tracing and other processes' threads
 * are refused with EPERM.
 */
TEST_F(abi, unprivileged_callers)
{
	static const int caps[] = { CAP_SYS_ADMIN, CAP_PERFMON };
	pid_t other, pid;
	int status;

	other = fork();
	ASSERT_LE(0, other);
	if (other == 0) {
		pause();
		_exit(0);
	}
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		uint64_t mask[1] = { 0 };
		struct ipt_config c;
		int fd;

		if (ipt_drop_caps(caps, 2))
			_exit(10);
		fd = open(IPT_DEVICE_PATH, O_RDWR);
		if (fd < 0)
			_exit(11);
		ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
		if (ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c) != -EPERM)
			_exit(12);
		cfg_thread(&c, 4, 64 * KIB);
		c.trace_flags |= IPT_TRACE_KERNEL;
		if (ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c) != -EPERM)
			_exit(13);
		cfg_thread(&c, 4, 64 * KIB);
		if (ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c))
			_exit(14);
		if (attach(fd, other, 0, NULL) != -EPERM)
			_exit(15);
		if (attach(fd, 0, 0, NULL))
			_exit(16);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* ---- what an unprivileged user may trace ---------------------------------- */

#define TEST_UID	IPT_TEST_UID
#define EXEC_HELPER_ENV	"IPT_THREAD_TEST_EXEC_HELPER"

/*
 * This program, exec'd by exec_as_user() as a setuid or execute-only copy
 * with EXEC_HELPER_ENV="R W": it says it runs (a byte to fd W), waits to be
 * let go (a byte from fd R), spins for what would be plenty of trace, and
 * exits; the tests never start.
 */
__attribute__((constructor)) static void exec_helper(void)
{
	const char *env = getenv(EXEC_HELPER_ENV);
	int rfd, wfd;
	char ch;

	if (!env)
		return;
	if (sscanf(env, "%d %d", &rfd, &wfd) != 2 ||
	    write(wfd, "x", 1) != 1 || read(rfd, &ch, 1) != 1)
		_exit(30);
	spin_us(200000);
	_exit(0);
}

/* A copy of this program at @path, root's, with @mode. */
static int copy_self(const char *path, mode_t mode)
{
	char buf[65536];
	int in, out, ret = 0;
	ssize_t n;

	in = open("/proc/self/exe", O_RDONLY);
	out = open(path, O_WRONLY | O_CREAT | O_EXCL, 0700);
	if (in < 0 || out < 0)
		ret = -1;
	while (!ret && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			ret = -1;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out))
		ret = -1;
	/* chmod after the writes: a write clears S_ISUID. */
	if (!ret && (chown(path, 0, 0) || chmod(path, mode)))
		ret = -1;
	return ret;
}

/*
 * pthread_join() returns when the kernel clears the thread's tid, and
 * waitpid() when the process becomes a zombie: both before the thread's
 * last switch-out, where ipt marks its trace exited (TASK_DEAD in
 * ipt_probe_switch()).  Wait for that mark (at most 20 s).
 */
static int wait_exited(int fd, uint32_t t, struct ipt_trace_state *ts)
{
	int i, ret = 0;

	for (i = 0; i < 2000; i++) {
		ret = ipt_state(fd, t, ts);
		if (ret || (ts->status & IPT_TS_EXITED))
			break;
		msleep(10);
	}
	return ret;
}

/*
 * A child drops to TEST_UID, configures @fd's session itself when
 * @user_configures (else root has), attaches itself, runs a little and
 * execs @path.  Once the new image runs, its trace must say DETACHED, and
 * while it spins its bytes must not change; *@before gets the bytes from
 * before the exec.  With @root_attaches (root configures too) the child
 * attaches itself while still root and only then drops to TEST_UID: the
 * trace must follow it into the image, not detached, with bytes from the
 * new image.  Returns 0 or the line (or 1000 + the child's status) that
 * failed; the session is released.
 */
static int exec_as_user(int fd, const char *path, bool user_configures,
			bool root_attaches, bool stream,
			struct ipt_trace_state *ts, uint64_t *before)
{
	int ready[2], go[2], up[2], go2[2], status, i, ret = 0;
	bool polling = false;
	uint64_t after_exec;
	struct ipt_config c;
	struct poller p;
	pid_t child;
	char ch;

	cfg_thread(&c, 1, 1 * MIB);
	if (stream) {
		/* 256 KiB regions: what it writes before the exec is less */
		c.buffer_flags = IPT_BUFFER_STREAM;
		c.nr_regions = 4;
	}
	if (!user_configures && (ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c) ||
				 ipt_cmd(fd, IPT_IOC_START)))
		return __LINE__;
	if (pipe(ready) || pipe(go) || pipe(up) || pipe(go2))
		return __LINE__;
	child = fork();
	if (child < 0)
		return __LINE__;
	if (child == 0) {
		char env[32];

		if (!root_attaches && ipt_become_user())
			_exit(10);
		if (user_configures && (ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c) ||
					ipt_cmd(fd, IPT_IOC_START)))
			_exit(11);
		if (attach(fd, 0, 0, NULL))
			_exit(12);
		if (root_attaches && ipt_become_user())
			_exit(15);
		spin_us(20000);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &ch, 1) != 1)
			_exit(13);
		snprintf(env, sizeof(env), "%d %d", go2[0], up[1]);
		setenv(EXEC_HELPER_ENV, env, 1);
		execl(path, path, NULL);
		_exit(14);
	}
	/* The child's ends: a child that dies makes the reads below fail. */
	close(ready[1]);
	close(up[1]);
	if (read(ready[0], &ch, 1) != 1 || !wait_sleeping(child)) {
		ret = __LINE__;
		goto out_kill;
	}
	/* Blocked in read(go), its state saved: bytes from before the exec. */
	for (i = 0; i < 3000; i++) {
		if (ipt_state(fd, 0, ts)) {
			ret = __LINE__;
			goto out_kill;
		}
		if (ts->bytes_captured)
			break;
		msleep(10);
	}
	*before = ts->bytes_captured;
	if (!*before || (ts->status & IPT_TS_DETACHED)) {
		ret = __LINE__;
		goto out_kill;
	}
	/*
	 * Streamed: a poller waits (the sleeping thread's partial region is
	 * not ready); the detach makes it ready and must wake it.
	 */
	if (stream && !root_attaches) {
		polling = poller_start(&p, fd);
		if (!polling) {
			ret = __LINE__;
			goto out_kill;
		}
	}
	if (write(go[1], "g", 1) != 1) {
		ret = __LINE__;
		goto out_kill;
	}
	/*
	 * The new image runs: detached by now, and no bytes from here on;
	 * or, followed, still traced.
	 */
	if (read(up[0], &ch, 1) != 1 || ipt_state(fd, 0, ts)) {
		ret = __LINE__;
		goto out_kill;
	}
	after_exec = ts->bytes_captured;
	if (!(ts->status & IPT_TS_DETACHED) == !root_attaches) {
		ret = __LINE__;
		goto out_kill;
	}
	if (polling) {
		polling = false;
		if (!poller_join(&p) || !(p.revents & POLLIN)) {
			/* nothing woke it: it slept to its bound */
			ret = __LINE__;
			goto out_kill;
		}
	}
	if (write(go2[1], "g", 1) != 1) {
		ret = __LINE__;
		goto out_kill;
	}
	if (waitpid(child, &status, 0) != child)
		ret = __LINE__;
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		ret = 1000 + status;
	else if (root_attaches ? wait_exited(fd, 0, ts) : ipt_state(fd, 0, ts))
		ret = __LINE__;
	else if (root_attaches &&
		 (ts->bytes_captured <= after_exec ||
		  (ts->status & (IPT_TS_DETACHED | IPT_TS_EXITED)) !=
		  IPT_TS_EXITED))
		ret = __LINE__;
	else if (!root_attaches &&
		 (ts->bytes_captured != after_exec ||
		  ts->status != (IPT_TS_THREAD | IPT_TS_DETACHED |
				 (stream ? IPT_TS_STREAM : 0))))
		ret = __LINE__;
	goto out;

out_kill:
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
out:
	ipt_cmd(fd, IPT_IOC_STOP);
	ipt_cmd(fd, IPT_IOC_RELEASE);
	if (polling)
		poller_join(&p);	/* the stop woke it */
	close(ready[0]);
	close(up[0]);
	for (i = 0; i < 2; i++) {
		close(go[i]);
		close(go2[i]);
	}
	return ret;
}

/*
 * A thread that execs a program its owner may not inspect - setuid root
 * (04755) or execute-only (0111), so not user-dumpable - ends DETACHED with
 * no bytes after the exec: in a session an unprivileged user configured,
 * and in one root configured and handed on (the thread's attach was not
 * privileged); streamed too, where the detach must wake a poller (what
 * the thread wrote is less than a region: ready now, and no region end
 * or exit of a traced thread would say so).
 */
TEST_F_TIMEOUT(abi, exec_of_what_the_user_may_not_read_detaches, 120)
{
	static const struct { const char *name; mode_t mode; } bins[] = {
		{ "setuid", 04755 }, { "xonly", 0111 },
	};
	char dir[] = "/tmp/ipt-thread-test.XXXXXX", path[64];
	struct ipt_trace_state ts = { 0 };
	unsigned int b, u, st, streams;
	struct ipt_caps caps = { 0 };
	struct statvfs sv;
	uint64_t before = 0;
	int ret;

	if (geteuid())
		SKIP(return, "needs root to make the setuid copy");
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, chmod(dir, 0755));
	ASSERT_EQ(0, statvfs(dir, &sv));
	if (sv.f_flag & ST_NOSUID) {
		rmdir(dir);
		SKIP(return, "%s is mounted nosuid", dir);
	}
	caps.size = sizeof(caps);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &caps));
	streams = caps.features & IPT_FEAT_STREAM ? 2 : 1;
	for (b = 0; b < 2; b++) {
		snprintf(path, sizeof(path), "%s/%s", dir, bins[b].name);
		ASSERT_EQ(0, copy_self(path, bins[b].mode));
		for (u = 0; u < 2; u++) {
			for (st = 0; st < streams; st++) {
				ret = exec_as_user(self->fd, path, u, false, st,
						   &ts, &before);
				EXPECT_EQ(0, ret) TH_LOG("%s (%04o), session configured by %s%s: status %#llx, %llu bytes before the exec, %llu at the end",
							 bins[b].name, bins[b].mode,
							 u ? "the user" : "root",
							 st ? ", streamed" : "",
							 (unsigned long long)ts.status,
							 (unsigned long long)before,
							 (unsigned long long)ts.bytes_captured);
			}
		}
		unlink(path);
	}
	rmdir(dir);
}

/*
 * The exception to the rule above: a session root configured and a thread
 * root attached (both privileged) follow the thread into a setuid image it
 * then execs as TEST_UID: not detached, and the new image's bytes are
 * captured until it exits.
 */
TEST_F_TIMEOUT(abi, exec_followed_when_session_and_attach_are_privileged, 60)
{
	char dir[] = "/tmp/ipt-thread-test.XXXXXX", path[64];
	struct ipt_trace_state ts = { 0 };
	struct statvfs sv;
	uint64_t before = 0;
	int ret;

	if (geteuid())
		SKIP(return, "needs root to make the setuid copy");
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, chmod(dir, 0755));
	ASSERT_EQ(0, statvfs(dir, &sv));
	if (sv.f_flag & ST_NOSUID) {
		rmdir(dir);
		SKIP(return, "%s is mounted nosuid", dir);
	}
	snprintf(path, sizeof(path), "%s/setuid", dir);
	ASSERT_EQ(0, copy_self(path, 04755));
	ret = exec_as_user(self->fd, path, false, true, false, &ts, &before);
	EXPECT_EQ(0, ret) TH_LOG("status %#llx, %llu bytes before the exec, %llu at the end",
				 (unsigned long long)ts.status,
				 (unsigned long long)before,
				 (unsigned long long)ts.bytes_captured);
	unlink(path);
	rmdir(dir);
}

/*
 * Kernel tracing needs the privilege at ATTACH too: a root-configured
 * session that traces the kernel takes no thread of an unprivileged holder
 * of the file (EPERM, nothing attached); one that does not, does.
 */
TEST_F(abi, unprivileged_attach_to_kernel_session)
{
	struct ipt_trace_state ts;
	struct ipt_config c;
	int status, k;

	for (k = 1; k >= 0; k--) {
		pid_t pid;

		cfg_thread(&c, 2, 64 * KIB);
		if (k)
			c.trace_flags |= IPT_TRACE_KERNEL;
		ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			if (ipt_become_user())
				_exit(10);
			_exit(attach(self->fd, 0, 0, NULL) == (k ? -EPERM : 0) ?
			      0 : 11);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("kernel tracing %d", k);
		if (k) {
			EXPECT_EQ(-ENOENT, ipt_state(self->fd, 0, &ts));
			/* Root's own threads are welcome. */
			EXPECT_EQ(0, attach(self->fd, 0, 0, NULL));
		} else {
			EXPECT_EQ(0, ipt_state(self->fd, 0, &ts));
		}
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	}
}

/*
 * Inheritance checks the child: an unprivileged thread that made itself
 * non-dumpable (PR_SET_DUMPABLE 0) hands no trace to its new threads or
 * children, which are not counted as missed either.  A thread root
 * attached to root's session (both privileged) does hand one on.
 */
TEST_F(abi, no_inherit_into_non_dumpable)
{
	struct ipt_trace_state ts;
	struct ipt_config c;
	int status, root;

	for (root = 0; root < 2; root++) {
		pid_t pid;

		cfg_thread(&c, 2, 64 * KIB);
		ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			pid_t gc;

			if (!root && ipt_become_user())
				_exit(10);
			if (attach(self->fd, 0, IPT_ATTACH_INHERIT, NULL))
				_exit(11);
			if (root && ipt_become_user())
				_exit(15);
			if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
				_exit(12);
			gc = fork();
			if (gc < 0)
				_exit(13);
			if (gc == 0)
				_exit(0);
			_exit(waitpid(gc, &status, 0) == gc ? 0 : 14);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("attached by %s",
							 root ? "root" : "the user");
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		EXPECT_EQ(0U, ts.missed);
		EXPECT_EQ(root ? 0 : -ENOENT, ipt_state(self->fd, 1, &ts));
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	}
}

/*
 * Per-CPU and per-thread sessions exclude each other, either way round;
 * per-thread sessions share the unit (multi_test has more).
 */
TEST_F(abi, one_mode_at_a_time)
{
	uint64_t mask[1] = { 0 };
	struct ipt_config c, t;
	int fd2 = open(IPT_DEVICE_PATH, O_RDWR);

	ASSERT_LE(0, fd2);
	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	cfg_thread(&t, 2, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &t));
	EXPECT_EQ(-EBUSY, ipt_ioctl(fd2, IPT_IOC_CONFIGURE, &c));
	EXPECT_EQ(0, ipt_ioctl(fd2, IPT_IOC_CONFIGURE, &t));
	ASSERT_EQ(0, ipt_cmd(fd2, IPT_IOC_RELEASE));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	ASSERT_EQ(0, ipt_ioctl(fd2, IPT_IOC_CONFIGURE, &c));
	EXPECT_EQ(-EBUSY, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &t));
	close(fd2);
	/* Closing the owner's file lets the other configure. */
	EXPECT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &t));
}

/*
 * The session pins the simulator; releasing it lets go of everything.
 * One reference is the backend's; where the simulator registered perf's
 * intel_pt, each CPU's hold on it (a perf event of its PMU) is another.
 */
TEST_F(abi, module_references)
{
	char buf[32];
	struct ipt_config c;
	int before, during, after, fd, holds;

#define REFCNT(v) do {							\
		fd = open("/sys/module/ipt_sim/refcnt", O_RDONLY);	\
		ASSERT_LE(0, fd);					\
		buf[read(fd, buf, sizeof(buf) - 1)] = '\0';		\
		close(fd);						\
		v = atoi(buf);						\
	} while (0)

	REFCNT(before);
	cfg_thread(&c, 2, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, attach(self->fd, 0, 0, NULL));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	REFCNT(during);
	holds = access("/sys/bus/event_source/devices/intel_pt", F_OK) ? 0 :
		nr_cpus();
	EXPECT_EQ(before + 1 + holds, during);
	EXPECT_EQ(-1, syscall(SYS_delete_module, "ipt_sim", O_NONBLOCK));
	EXPECT_TRUE(errno == EWOULDBLOCK || errno == EBUSY);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	REFCNT(after);
	EXPECT_EQ(before, after);
#undef REFCNT
}

/* ---- ATTACH against RELEASE and CONFIGURE on one file -------------------- */

#define RACE_ATTACHERS	4	/* threads that call ATTACH */
#define RACE_IDLE	2	/* threads that only exist, to be attached */
#define RACE_TIDS	(RACE_ATTACHERS + RACE_IDLE)
#define RACE_ROUNDS	400	/* RELEASE + CONFIGURE rounds */
#define RACE_MAX	4	/* the sessions' max_threads: 1 .. RACE_MAX */

struct attach_race {
	int fd;
	int idle_pipe[2];		/* idle threads read until EOF */
	pid_t tids[RACE_TIDS];
	atomic_int next_tid;		/* the next free slot of @tids */
	atomic_int nr_tids;		/* slots written */
	atomic_int done;		/* the configuring thread's rounds are over */
	atomic_int stopped;		/* attaching threads out of their loop */
	atomic_uint attached;		/* ATTACHes that succeeded */
	atomic_uint refused;		/* EINVAL (IDLE), EEXIST, ENOSPC */
	atomic_uint bad_index;		/* succeeded with trace >= RACE_MAX */
	atomic_uint bad_errno;		/* failed with another errno */
	atomic_uint first_bad;		/* the first bad index or -errno */
};

static void race_add_tid(struct attach_race *r)
{
	r->tids[atomic_fetch_add(&r->next_tid, 1)] = gettid_();
	atomic_fetch_add(&r->nr_tids, 1);
}

static void *race_idle_fn(void *arg)
{
	struct attach_race *r = arg;
	char c;

	race_add_tid(r);
	while (read(r->idle_pipe[0], &c, 1) > 0)
		;
	return NULL;
}

static void race_bad(struct attach_race *r, atomic_uint *count, uint32_t v)
{
	unsigned int zero = 0;

	if (!atomic_fetch_add(count, 1))
		atomic_compare_exchange_strong(&r->first_bad, &zero, v);
}

/* ATTACH the threads in turn until the configuring thread is done. */
static void *race_attach_fn(void *arg)
{
	struct attach_race *r = arg;
	unsigned int i;

	race_add_tid(r);
	while (atomic_load(&r->nr_tids) < RACE_TIDS)
		sched_yield();
	for (i = 0; !atomic_load(&r->done); i++) {
		uint32_t trace = ~0U;
		int ret = attach(r->fd, r->tids[i % RACE_TIDS], 0, &trace);

		if (!ret && trace < RACE_MAX)
			atomic_fetch_add(&r->attached, 1);
		else if (!ret)
			race_bad(r, &r->bad_index, trace);
		else if (ret == -EINVAL || ret == -EEXIST || ret == -ENOSPC)
			atomic_fetch_add(&r->refused, 1);
		else
			race_bad(r, &r->bad_errno, ret);
	}
	/* No thread ends while another may still attach it (ESRCH). */
	atomic_fetch_add(&r->stopped, 1);
	while (atomic_load(&r->stopped) < RACE_ATTACHERS)
		sched_yield();
	return NULL;
}

/*
 * Issue 16: ATTACH, RELEASE and CONFIGURE on one file from several threads.
 * The index ATTACH returns must come from the session it attached to, so
 * it is always below the largest max_threads configured: never a
 * difference of two heap addresses (the index computed after RELEASE freed
 * the traces, or CONFIGURE allocated new ones).  max_threads varies so
 * that consecutive sessions' traces come from different slab caches.
 * Bounded by RACE_ROUNDS, not by time; a race it cannot provoke passes.
 */
TEST_F_TIMEOUT(abi, attach_races_release_and_configure, 300)
{
	pthread_t idle[RACE_IDLE], att[RACE_ATTACHERS];
	struct attach_race r = { .fd = self->fd };
	unsigned int round, i;
	struct ipt_config c;
	int ret;

	ASSERT_EQ(0, pipe(r.idle_pipe));
	for (i = 0; i < RACE_IDLE; i++)
		ASSERT_EQ(0, pthread_create(&idle[i], NULL, race_idle_fn, &r));
	for (i = 0; i < RACE_ATTACHERS; i++)
		ASSERT_EQ(0, pthread_create(&att[i], NULL, race_attach_fn, &r));
	while (atomic_load(&r.nr_tids) < RACE_TIDS)
		sched_yield();

	for (round = 0; round < RACE_ROUNDS; round++) {
		ret = ipt_cmd(self->fd, IPT_IOC_RELEASE);
		if (ret && !(ret == -EINVAL && round == 0))
			break;
		cfg_thread(&c, 1 + round % RACE_MAX, 4 * KIB);
		ret = ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c);
		if (ret)
			break;
	}
	atomic_store(&r.done, 1);
	for (i = 0; i < RACE_ATTACHERS; i++)
		pthread_join(att[i], NULL);
	close(r.idle_pipe[1]);
	for (i = 0; i < RACE_IDLE; i++)
		pthread_join(idle[i], NULL);
	close(r.idle_pipe[0]);

	TH_LOG("%u rounds: %u attached, %u refused, %u bad indexes, %u bad errnos (first bad %#x)",
	       round, atomic_load(&r.attached), atomic_load(&r.refused),
	       atomic_load(&r.bad_index), atomic_load(&r.bad_errno),
	       atomic_load(&r.first_bad));
	EXPECT_EQ(0, ret);
	EXPECT_EQ(RACE_ROUNDS, round);
	EXPECT_EQ(0U, atomic_load(&r.bad_index));
	EXPECT_EQ(0U, atomic_load(&r.bad_errno));
	/* Not vacuous: threads were attached. */
	EXPECT_LT(0U, atomic_load(&r.attached));
	ipt_cmd(self->fd, IPT_IOC_RELEASE);
}

/* ---- tracing, on both switching paths ------------------------------------ */

FIXTURE(thr) {
	int fd;
	uint64_t gp;
	uint64_t clobbered;
};

FIXTURE_VARIANT(thr) {
	int force_msr;
};

FIXTURE_VARIANT_ADD(thr, xsaves) {
	.force_msr = 0,
};

FIXTURE_VARIANT_ADD(thr, msr) {
	.force_msr = 1,
};

FIXTURE_SETUP(thr)
{
	if (!ipt_sim_loaded())
		SKIP(return, "the simulated PT unit is not loaded");
	ASSERT_EQ(0, ipt_write_file(FORCE_MSR, variant->force_msr ? "1" : "0"));
	ASSERT_EQ(0, ipt_sim_set_rate(1 * MIB));
	self->fd = open(IPT_DEVICE_PATH, O_RDWR);
	ASSERT_LE(0, self->fd);
	self->gp = sim_sum("gp");
	self->clobbered = sim_sum("clobbered");
}

FIXTURE_TEARDOWN(thr)
{
	if (self->fd >= 0)
		close(self->fd);
	/* No instruction of the switching path may have faulted. */
	EXPECT_EQ(self->gp, sim_sum("gp"));
	EXPECT_EQ(self->clobbered, sim_sum("clobbered"));
	ipt_write_file(FORCE_MSR, "0");
	ipt_sim_set_rate(1 * MIB);
}

/* Whether this session should be on the XSAVES path. */
static int want_xsaves(int fd, int force_msr)
{
	struct ipt_caps caps = { .size = sizeof(caps) };

	if (ipt_ioctl(fd, IPT_IOC_GET_CAPS, &caps))
		return -1;
	return !force_msr && (caps.features & IPT_FEAT_XSAVES_PT);
}

/*
 * A thread runs a real program while hopping between CPUs hundreds of
 * times: its trace decodes to exactly that program's instructions, and
 * the unit wrote nothing for anyone else.
 */
TEST_F_TIMEOUT(thr, one_program_across_cpus, 300)
{
	char dir[256];
	struct ipt_trace_state ts;
	struct ipt_config c;
	struct worker w;
	uint64_t bytes0;
	int err;

	if (!gt_dir(0, dir, sizeof(dir)))
		SKIP(return, "IPT_GT_DIRS is not set (no ground-truth traces)");
	cfg_thread(&c, 4, 1 * MIB);
	c.buffer_flags = IPT_BUFFER_STOP_ON_FULL;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	EXPECT_EQ(want_xsaves(self->fd, variant->force_msr), switch_stat("path"));
	ASSERT_EQ(0, ipt_sim_set_rate(128 * KIB));

	worker_init(&w, self->fd, dir);
	err = run_worker(self->fd, &w, &bytes0);
	ASSERT_EQ(0, err) TH_LOG("failed at line %d", err);

	ASSERT_EQ(0, ipt_state(self->fd, w.trace, &ts));
	TH_LOG("%d hops, %llu loads, %llu bytes", w.hops,
	       (unsigned long long)ts.switches,
	       (unsigned long long)ts.bytes_captured);
	EXPECT_LE(w.hops, (int)ts.switches);
	EXPECT_EQ(0ULL, ts.busy);
	EXPECT_EQ((uint32_t)w.tid, ts.tid);
	EXPECT_EQ(0, ts.status & (IPT_TS_FULL | IPT_TS_ERROR | IPT_TS_RUNNING));
	/* Every byte the unit wrote, on every CPU, is this thread's. */
	EXPECT_EQ(sim_bytes_all() - bytes0, ts.bytes_captured);
	EXPECT_EQ(0, verify_trace(self->fd, w.trace, dir, "/tmp/ipt-thr.pt", &ts))
		TH_LOG("the trace of a thread that hopped CPUs != ground truth");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/* Two threads with different programs, hopping at once, stay apart. */
TEST_F_TIMEOUT(thr, two_programs_stay_apart, 300)
{
	char dir0[256], dir1[256];
	struct ipt_trace_state ts;
	struct ipt_config c;
	struct worker w[2];
	pthread_t th[2];
	uint64_t bytes0, sum = 0;
	int i;

	if (!gt_dir(0, dir0, sizeof(dir0)) || !gt_dir(1, dir1, sizeof(dir1)))
		SKIP(return, "IPT_GT_DIRS names fewer than two traces");
	cfg_thread(&c, 2, 1 * MIB);
	c.buffer_flags = IPT_BUFFER_STOP_ON_FULL;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_sim_set_rate(128 * KIB));
	for (i = 0; i < 2; i++) {
		worker_init(&w[i], self->fd, i ? dir1 : dir0);
		w[i].min_hops = 100;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker_fn, &w[i]));
		ASSERT_TRUE(wait_ready(&w[i]));
		ASSERT_EQ(0, w[i].err) TH_LOG("worker failed at line %d", w[i].err);
	}
	bytes0 = sim_bytes_all();
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	for (i = 0; i < 2; i++)
		atomic_store(&w[i].go, 1);
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		ASSERT_EQ(0, w[i].err) TH_LOG("worker failed at line %d", w[i].err);
	}
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	for (i = 0; i < 2; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/tmp/ipt-thr%d.pt", i);
		EXPECT_EQ(0, verify_trace(self->fd, w[i].trace, i ? dir1 : dir0,
					  path, &ts))
			TH_LOG("thread %d: trace != its own ground truth", i);
		sum += ts.bytes_captured;
	}
	EXPECT_EQ(sim_bytes_all() - bytes0, sum);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A small ring wraps many times while its thread hops CPUs: the wrap
 * count (PMIs taken while it ran, or found pending when it left a CPU)
 * and the position add up to exactly the bytes the unit wrote.
 */
TEST_F_TIMEOUT(thr, ring_wraps_counted_across_switches, 120)
{
	struct ipt_trace_state ts;
	struct ipt_config c;
	struct worker w;
	uint64_t bytes0;
	int err;

	cfg_thread(&c, 1, 8 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_sim_set_rate(4 * MIB));
	worker_init(&w, self->fd, NULL);
	w.min_hops = 300;
	err = run_worker(self->fd, &w, &bytes0);
	ASSERT_EQ(0, err) TH_LOG("failed at line %d", err);
	ASSERT_EQ(0, ipt_state(self->fd, w.trace, &ts));
	TH_LOG("%llu bytes, %llu wraps, %llu loads",
	       (unsigned long long)ts.bytes_captured,
	       (unsigned long long)ts.wrap_count,
	       (unsigned long long)ts.switches);
	EXPECT_LT(2ULL, ts.wrap_count);
	EXPECT_TRUE(ts.status & IPT_TS_WRAPPED);
	EXPECT_EQ(sim_bytes_all() - bytes0, ts.bytes_captured);
	EXPECT_EQ(ts.bytes_captured - ts.buffer_size, ts.bytes_lost);
	EXPECT_EQ(ts.head, ts.oldest);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/* Stop-on-full per thread: exactly the first buffer_size bytes. */
TEST_F_TIMEOUT(thr, stop_on_full, 120)
{
	struct ipt_trace_state ts;
	struct ipt_config c;
	struct worker w;
	unsigned long psbs;
	size_t gap;
	uint8_t *p;
	int err;

	cfg_thread(&c, 1, 16 * KIB);
	c.buffer_flags = IPT_BUFFER_STOP_ON_FULL;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	/*
	 * 200 hops of 300 us are about 60 ms on a CPU: at 4 MiB/s several
	 * times the buffer even when a loaded 4-CPU VM gives the thread a
	 * fraction of that (at 1 MiB/s one run wrote only 15 KiB).
	 */
	ASSERT_EQ(0, ipt_sim_set_rate(4 * MIB));
	worker_init(&w, self->fd, NULL);
	w.min_hops = 200;
	err = run_worker(self->fd, &w, NULL);
	ASSERT_EQ(0, err) TH_LOG("failed at line %d", err);
	ASSERT_EQ(0, ipt_state(self->fd, w.trace, &ts));
	EXPECT_TRUE(ts.status & IPT_TS_FULL);
	EXPECT_TRUE(ts.status & IPT_TS_STOP_ON_FULL);
	EXPECT_EQ(16 * KIB, ts.bytes_captured);
	EXPECT_EQ(16 * KIB, ts.bytes_valid);
	p = map_trace(self->fd, &ts);
	ASSERT_NE(NULL, p);
	EXPECT_TRUE(ipt_is_psb(p, ts.bytes_valid));
	EXPECT_LT(0, ipt_parse(p, ts.bytes_valid, &psbs, &gap));
	munmap(p, ts.buffer_size);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/* A thread that does not run gets no bytes; once it runs, it does. */
static void *sleeper_fn(void *arg)
{
	int *pipefd = arg;
	char ch;

	if (read(pipefd[0], &ch, 1) != 1)
		return (void *)1;
	spin_us(100000);
	return NULL;
}

TEST_F_TIMEOUT(thr, output_only_while_on_cpu, 120)
{
	struct ipt_trace_state ts;
	struct ipt_config c;
	int pipefd[2];
	pthread_t th;
	void *ret;
	uint32_t t;
	pid_t tid;

	cfg_thread(&c, 2, 1 * MIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, pipe(pipefd));
	ASSERT_EQ(0, pthread_create(&th, NULL, sleeper_fn, pipefd));
	/* Its tid, through /proc; then wait until it is blocked in read(). */
	tid = 0;
	{
		char path[64];
		DIR *d;
		struct dirent *e;

		snprintf(path, sizeof(path), "/proc/%d/task", getpid());
		d = opendir(path);
		ASSERT_NE(NULL, d);
		while ((e = readdir(d)))
			if (atoi(e->d_name) > 0 && atoi(e->d_name) != getpid())
				tid = atoi(e->d_name);
		closedir(d);
		ASSERT_LT(0, tid);
	}
	ASSERT_TRUE(wait_sleeping(tid));
	ASSERT_EQ(0, attach(self->fd, tid, 0, &t));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	spin_us(200000);
	ASSERT_EQ(0, ipt_state(self->fd, t, &ts));
	EXPECT_EQ(0ULL, ts.bytes_captured);
	EXPECT_EQ(0ULL, ts.switches);
	ASSERT_EQ(1, write(pipefd[1], "x", 1));
	pthread_join(th, &ret);
	EXPECT_EQ(NULL, ret);
	ASSERT_EQ(0, wait_exited(self->fd, t, &ts));
	EXPECT_LT(0ULL, ts.bytes_captured);
	EXPECT_LE(1ULL, ts.switches);
	EXPECT_TRUE(ts.status & IPT_TS_EXITED);
	EXPECT_FALSE(ts.status & IPT_TS_RUNNING);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	close(pipefd[0]);
	close(pipefd[1]);
}

/* Attached and detached while the session runs, and while it spins. */
static void *spinner_fn(void *arg)
{
	struct worker *w = arg;

	w->tid = gettid_();
	atomic_store(&w->ready, 1);
	while (!atomic_load(&w->quit))
		;
	return NULL;
}

TEST_F_TIMEOUT(thr, attach_and_detach_while_running, 120)
{
	struct ipt_trace_state ts;
	struct ipt_config c;
	struct worker w;
	pthread_t th;
	uint64_t b1;
	uint32_t t;

	cfg_thread(&c, 2, 1 * MIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	memset(&w, 0, sizeof(w));
	ASSERT_EQ(0, pthread_create(&th, NULL, spinner_fn, &w));
	ASSERT_TRUE(wait_ready(&w));
	b1 = sim_bytes_all();
	ASSERT_EQ(0, attach(self->fd, w.tid, 0, &t));
	/* It ran traced: the units wrote more than a PSB+ for it. */
	EXPECT_TRUE(wait_bytes_all(b1 + 1 * KIB));
	ASSERT_EQ(0, detach(self->fd, t));
	ASSERT_EQ(0, ipt_state(self->fd, t, &ts));
	b1 = ts.bytes_captured;
	EXPECT_LT(0ULL, b1);
	EXPECT_LE(1ULL, ts.switches);
	EXPECT_EQ(IPT_TS_THREAD | IPT_TS_DETACHED, ts.status);
	/*
	 * Detached (the state says so): its trace cannot grow.  The sleep
	 * only gives a trace wrongly still loaded time to show itself; on a
	 * slow host it may miss that bug, but it cannot fail unless the
	 * kernel is wrong.
	 */
	msleep(100);
	ASSERT_EQ(0, ipt_state(self->fd, t, &ts));
	EXPECT_EQ(b1, ts.bytes_captured);
	atomic_store(&w.quit, 1);
	pthread_join(th, NULL);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, t, &ts));
	EXPECT_EQ(b1, ts.bytes_captured);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

static void *short_spin_fn(void *arg)
{
	spin_us(50000);
	return arg;
}

/* New threads and children of an inheriting thread get traces of their own. */
TEST_F_TIMEOUT(thr, inherit_threads_and_children, 120)
{
	struct ipt_trace_state ts;
	struct ipt_config c;
	pthread_t th;
	pid_t child;
	uint32_t t0;
	int status;

	cfg_thread(&c, 3, 256 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, attach(self->fd, 0, IPT_ATTACH_INHERIT, &t0));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));

	ASSERT_EQ(0, pthread_create(&th, NULL, short_spin_fn, NULL));
	pthread_join(th, NULL);
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		spin_us(50000);
		_exit(0);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_EQ(0, wait_exited(self->fd, 2, &ts));
	/* The third creation finds every trace in use. */
	ASSERT_EQ(0, pthread_create(&th, NULL, short_spin_fn, NULL));
	pthread_join(th, NULL);
	ASSERT_EQ(0, wait_exited(self->fd, 1, &ts));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));

	ASSERT_EQ(0, ipt_state(self->fd, t0, &ts));
	EXPECT_EQ(1U, ts.missed);
	EXPECT_EQ(IPT_TS_THREAD | IPT_TS_INHERIT, ts.status);
	ASSERT_EQ(0, ipt_state(self->fd, 1, &ts));
	EXPECT_EQ(t0, ts.parent);
	EXPECT_EQ(IPT_TS_THREAD | IPT_TS_INHERIT | IPT_TS_INHERITED |
		  IPT_TS_EXITED, ts.status);
	EXPECT_LT(0ULL, ts.bytes_captured);
	ASSERT_EQ(0, ipt_state(self->fd, 2, &ts));
	EXPECT_EQ((uint32_t)child, ts.tid);
	EXPECT_EQ(t0, ts.parent);
	EXPECT_TRUE(ts.status & IPT_TS_EXITED);
	EXPECT_LT(0ULL, ts.bytes_captured);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	/* Without IPT_ATTACH_INHERIT nothing new is traced. */
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, attach(self->fd, 0, 0, &t0));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, pthread_create(&th, NULL, short_spin_fn, NULL));
	pthread_join(th, NULL);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_EQ(-ENOENT, ipt_state(self->fd, 1, &ts));
	ASSERT_EQ(0, ipt_state(self->fd, t0, &ts));
	EXPECT_EQ(0U, ts.missed);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/* A child that attaches itself and execs stays traced through the exec. */
TEST_F_TIMEOUT(thr, exec_keeps_tracing, 120)
{
	struct ipt_trace_state ts;
	struct ipt_config c;
	int ready[2], go[2], status, i;
	uint64_t before;
	pid_t child;
	char ch;

	cfg_thread(&c, 1, 1 * MIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		if (attach(self->fd, 0, 0, NULL))
			_exit(20);
		spin_us(20000);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &ch, 1) != 1)
			_exit(21);
		close(self->fd);
		execl("/bin/sh", "sh", "-c",
		      "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done", NULL);
		_exit(22);
	}
	ASSERT_EQ(1, read(ready[0], &ch, 1));
	/*
	 * Blocked in read(go): switched out, its state saved.  (A fixed
	 * sleep was not enough in the loaded 4-CPU debug VM: the child had
	 * not reached read() yet, so nothing was saved.)
	 */
	ASSERT_TRUE(wait_sleeping(child));
	/*
	 * /proc says S from the moment the task sets its state, a little
	 * before schedule() switches it out and saves its trace: that was
	 * seen once in the 4-CPU stock VM (0 bytes).  Still blocked in
	 * read(go), so whatever shows up is from before the exec.
	 */
	for (i = 0; i < 3000; i++) {
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		if (ts.bytes_captured)
			break;
		msleep(10);
	}
	before = ts.bytes_captured;
	EXPECT_LT(0ULL, before);
	EXPECT_FALSE(ts.status & IPT_TS_EXITED);
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Reaped before its last switch-out, possibly. */
	ASSERT_EQ(0, wait_exited(self->fd, 0, &ts));
	EXPECT_LT(before, ts.bytes_captured) TH_LOG("no trace after exec");
	EXPECT_TRUE(ts.status & IPT_TS_EXITED);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
}

/*
 * A unit that another tracer enabled is never touched: the thread runs
 * untraced there (busy), and per-CPU mode refuses to start on it.
 */
TEST_F_TIMEOUT(thr, foreign_unit_is_left_alone, 120)
{
	uint64_t mask[1] = { 0 };
	char path[96];
	cpu_set_t set;
	struct ipt_trace_state ts;
	struct ipt_config c;
	struct worker w;
	pthread_t th;
	int cpu = nr_cpus() - 1;

	if (cpu < 1)
		SKIP(return, "needs two CPUs");
	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/foreign", cpu);
	ASSERT_EQ(0, ipt_write_file(path, "1"));

	ipt_cfg_cpu(&c, mask, cpu, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	EXPECT_EQ(-EBUSY, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	cfg_thread(&c, 1, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	memset(&w, 0, sizeof(w));
	ASSERT_EQ(0, pthread_create(&th, NULL, spinner_fn, &w));
	ASSERT_TRUE(wait_ready(&w));
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(0, sched_setaffinity(w.tid, sizeof(set), &set));
	ASSERT_EQ(0, attach(self->fd, w.tid, 0, NULL));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	/* The load refused on the foreign unit: wait for the count. */
	for (int i = 0; i < 3000; i++) {
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		if (ts.busy)
			break;
		msleep(10);
	}
	sched_yield();
	atomic_store(&w.quit, 1);
	pthread_join(th, NULL);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_LE(1ULL, ts.busy);
	EXPECT_EQ(0ULL, ts.switches);
	EXPECT_EQ(0ULL, ts.bytes_captured);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(1ULL, ipt_sim_stat(cpu, "foreign"));
	ASSERT_EQ(0, ipt_write_file(path, "0"));
	/* The refused XRSTORS / WRMSR faulted, by design: not a driver bug. */
	self->gp = sim_sum("gp");
}

/*
 * IA32_XSS bit 8 is set on every CPU for an XSAVES-path session and put
 * back at release; the MSR path never touches IA32_XSS.
 */
TEST_F(thr, xss_set_and_restored)
{
	uint64_t base[64];
	struct ipt_config c;
	int cpu, xsaves;

	ASSERT_GE(64, nr_cpus());
	for (cpu = 0; cpu < nr_cpus(); cpu++) {
		ASSERT_EQ(0ULL, ipt_sim_stat(cpu, "xss"));
		base[cpu] = ipt_sim_stat(cpu, "output_base");
	}
	cfg_thread(&c, 1, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	xsaves = want_xsaves(self->fd, variant->force_msr);
	for (cpu = 0; cpu < nr_cpus(); cpu++)
		EXPECT_EQ(xsaves ? 0x100ULL : 0ULL, ipt_sim_stat(cpu, "xss"));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	for (cpu = 0; cpu < nr_cpus(); cpu++) {
		EXPECT_EQ(0ULL, ipt_sim_stat(cpu, "xss"));
		if (!xsaves)
			continue;
		/*
		 * IA32_XSS changed only with the PT MSRs at their initial
		 * values; then, where perf's intel_pt exists, OUTPUT_BASE got
		 * back what it held before the session (perf's cache,
		 * Documentation/design.rst).
		 */
		EXPECT_EQ(0ULL, ipt_sim_stat(cpu, "ctl"));
		EXPECT_EQ(access("/sys/bus/event_source/devices/intel_pt", F_OK) ?
			  0ULL : base[cpu], ipt_sim_stat(cpu, "output_base"));
	}
}

/*
 * IA32_XSS loses bit 8 on a CPU while a traced thread is loaded there, as
 * after KVM's VM exit or a resume (debugfs cpuN/clear_xss): XSAVES then
 * saves nothing and leaves TraceEn set.  Every unload must still leave
 * the unit off (ipt falls back to MSRs and counts it), and the trace
 * keeps its data; at release nothing is left tracing.
 */
TEST_F_TIMEOUT(thr, xss_lost_under_a_thread, 120)
{
	char path[96];
	struct ipt_trace_state ts;
	struct ipt_config c;
	struct worker w;
	cpu_set_t set;
	pthread_t th;
	uint64_t bytes;
	int cpu = nr_cpus() - 1;

	cfg_thread(&c, 1, 1 * MIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	if (!want_xsaves(self->fd, variant->force_msr)) {
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
		SKIP(return, "not on the XSAVES path");
	}
	ASSERT_EQ(0, ipt_write_file(SWITCH_STATS, "0"));
	memset(&w, 0, sizeof(w));
	ASSERT_EQ(0, pthread_create(&th, NULL, spinner_fn, &w));
	ASSERT_TRUE(wait_ready(&w));
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(0, sched_setaffinity(w.tid, sizeof(set), &set));
	ASSERT_EQ(0, attach(self->fd, w.tid, 0, NULL));
	bytes = ipt_sim_stat(cpu, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	/* Loaded and tracing on its CPU: past the PSB+ of the load. */
	EXPECT_EQ(0, ipt_sim_wait_stat(cpu, "bytes", bytes + 1 * KIB));
	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/clear_xss", cpu);
	ASSERT_EQ(0, ipt_write_file(path, "1"));
	/* And it goes on tracing there with IA32_XSS bit 8 gone. */
	bytes = ipt_sim_stat(cpu, "bytes");
	EXPECT_EQ(0, ipt_sim_wait_stat(cpu, "bytes", bytes + 1 * KIB));
	/* The stop unloads the thread where it runs: with IA32_XSS bit 8 gone. */
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_EQ(0ULL, ipt_sim_stat(cpu, "ctl") & 1)
		TH_LOG("TraceEn left on on CPU %d after the stop", cpu);
	EXPECT_LE(1LL, switch_stat("fallbacks"));
	TH_LOG("fallbacks %lld, XSAVES that saved nothing %llu",
	       switch_stat("fallbacks"),
	       (unsigned long long)ipt_sim_stat(cpu, "xsaves_empty"));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(0, ts.status & (IPT_TS_RUNNING | IPT_TS_ERROR));
	EXPECT_LT(0ULL, ts.bytes_captured);
	atomic_store(&w.quit, 1);
	pthread_join(th, NULL);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(0ULL, ipt_sim_stat(cpu, "ctl") & 1);
	EXPECT_EQ(0ULL, ipt_sim_stat(cpu, "xss"));
	/* An XRSTORS after the bit went faults, by design (then MSRs). */
	self->gp = sim_sum("gp");
}

/*
 * A CPU that goes offline and comes back during a session: IA32_XSS is put
 * back when it leaves and bit 8 set again when it returns (silicon comes
 * back with the kernel's value), and a thread pinned to it afterwards is
 * traced there, never refused as busy.
 */
TEST_F_TIMEOUT(thr, cpu_hotplug_in_a_session, 120)
{
	struct ipt_trace_state ts;
	struct ipt_config c;
	struct worker w;
	cpu_set_t set;
	pthread_t th;
	uint64_t bytes;
	int cpu = nr_cpus() - 1, xsaves;

	if (cpu < 1)
		SKIP(return, "needs two CPUs");
	cfg_thread(&c, 1, 1 * MIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	xsaves = want_xsaves(self->fd, variant->force_msr);
	memset(&w, 0, sizeof(w));
	ASSERT_EQ(0, pthread_create(&th, NULL, spinner_fn, &w));
	ASSERT_TRUE(wait_ready(&w));
	ASSERT_EQ(0, attach(self->fd, w.tid, 0, NULL));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));

	ASSERT_EQ(0, ipt_cpu_online_set(cpu, 0));
	EXPECT_EQ(0ULL, ipt_sim_stat(cpu, "xss"));
	ASSERT_EQ(0, ipt_cpu_online_set(cpu, 1));
	EXPECT_EQ(xsaves ? 0x100ULL : 0ULL, ipt_sim_stat(cpu, "xss"));
	bytes = ipt_sim_stat(cpu, "bytes");
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(0, sched_setaffinity(w.tid, sizeof(set), &set));
	/* Traced there: its unit wrote more than a PSB+ for it. */
	EXPECT_EQ(0, ipt_sim_wait_stat(cpu, "bytes", bytes + 1 * KIB));
	atomic_store(&w.quit, 1);
	pthread_join(th, NULL);
	ASSERT_EQ(0, wait_exited(self->fd, 0, &ts));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_EQ(0ULL, ts.busy);
	EXPECT_LE(1ULL, ts.switches);
	EXPECT_LT(0ULL, ts.bytes_captured);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(0ULL, ipt_sim_stat(cpu, "xss"));
}

/* The switching path counts its instructions (debugfs switch_stats). */
TEST_F_TIMEOUT(thr, switch_costs_are_counted, 120)
{
	long long loads, unloads, ops, rd, wr, xs, xr;
	struct ipt_config c;
	struct worker w;
	int xsaves, err;

	cfg_thread(&c, 1, 1 * MIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	xsaves = want_xsaves(self->fd, variant->force_msr);
	ASSERT_EQ(xsaves, switch_stat("path"));
	ASSERT_EQ(0, ipt_write_file(SWITCH_STATS, "0"));
	worker_init(&w, self->fd, NULL);
	w.min_hops = 100;
	err = run_worker(self->fd, &w, NULL);
	ASSERT_EQ(0, err) TH_LOG("failed at line %d", err);
	loads = switch_stat("loads");
	unloads = switch_stat("unloads");
	rd = switch_stat("rdmsr");
	wr = switch_stat("wrmsr");
	xs = switch_stat("xsaves");
	xr = switch_stat("xrstors");
	ops = switch_stat("ops_per_switch_x100");
	TH_LOG("%s path: %lld loads, %lld unloads, %lld rdmsr, %lld wrmsr, %lld xsaves, %lld xrstors, %lld.%02lld per load or unload",
	       xsaves ? "XSAVES" : "MSR", loads, unloads, rd, wr, xs, xr,
	       ops / 100, ops % 100);
	EXPECT_LE(100, loads);
	EXPECT_EQ(loads, unloads);
	if (xsaves) {
		/* One XRSTORS in, one XSAVES and a GLOBAL_STATUS read out. */
		EXPECT_EQ(loads, xr);
		EXPECT_EQ(unloads, xs);
		EXPECT_EQ(unloads, rd);
	} else {
		/* In: BASE, MASK, STATUS, CTL.  Out: CTL; BASE, MASK, STATUS, GLOBAL_STATUS. */
		EXPECT_EQ(0, xs + xr);
		EXPECT_EQ(4 * unloads, rd);
		EXPECT_LE(4 * loads + unloads, wr);
	}
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

TEST_HARNESS_MAIN

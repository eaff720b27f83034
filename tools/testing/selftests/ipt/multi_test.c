// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: /dev/ipt is shared, against the simulated unit.
 *
 * - A configure that is allocating its buffers holds no lock another
 *   caller or CPU hotplug needs: with one configure provably parked in
 *   the middle of its allocation (the simulator's alloc_pause operation,
 *   debugfs ipt_sim/alloc_gate), another process's IPT_IOC_GET_CAPS and
 *   a CPU offline complete.  No timing: the gate says "parked", and every
 *   wait is bounded (a blocked call is a failure, then the gate is opened
 *   so that nothing stays stuck).  The parked configure holds the
 *   backend's module: ipt_sim cannot be unloaded under it.
 * - The XSAVES areas of a per-thread session's threads are allocated
 *   there too: a parked configure already holds them.
 * - A configure that loses the race for the unit while it allocated
 *   (another session took it meanwhile) fails with EBUSY and gives back
 *   the locked memory it charged before allocating.
 * - Per-thread sessions of different users run at once, each trace
 *   holding its own thread's packets only; a thread is in one session at
 *   most; a per-CPU session and any per-thread one exclude each other
 *   (EBUSY); perf's intel_pt stays held until the last session goes.
 * - IPT_IOC_LIST_SESSIONS shows a privileged caller every session (mode,
 *   state, uid and pid of the configurer, traces, threads), any other
 *   caller only its own; its argument is checked like every other.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/perf_event.h>

#include <grp.h>

#include "ipt_lib.h"
#include "kselftest_harness.h"

#define GATE		"/sys/kernel/debug/ipt_sim/alloc_gate"
/* Bound of every wait for an event: generous, never reached when all is well. */
#define WAIT_MS		20000

/* The gate's state, "idle", "armed" or "parked"; "" if unreadable. */
static const char *gate_state(char *buf, size_t len)
{
	FILE *f = fopen(GATE, "r");

	buf[0] = '\0';
	if (!f)
		return buf;
	if (!fgets(buf, len, f))
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
	return buf;
}

/* Wait (bounded) until the gate reads @want; 0 or -1. */
static int gate_wait(const char *want)
{
	char buf[32];
	int i;

	for (i = 0; i < WAIT_MS / 10; i++) {
		if (!strcmp(gate_state(buf, sizeof(buf)), want))
			return 0;
		usleep(10000);
	}
	return -1;
}

/*
 * A child that runs @fn and reports its int result through a pipe; the
 * parent reads it with a bounded wait.
 */
struct call {
	pid_t pid;
	int rfd;
};

static struct call call_start(int (*fn)(void *), void *arg)
{
	struct call c = { -1, -1 };
	int p[2];

	if (pipe(p))
		return c;
	c.pid = fork();
	if (!c.pid) {
		int r;

		close(p[0]);
		r = fn(arg);
		if (write(p[1], &r, sizeof(r)) != sizeof(r))
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	c.rfd = p[0];
	return c;
}

/*
 * The result of @c, or -ETIMEDOUT when it did not answer within WAIT_MS
 * (blocked); the child is reaped later by call_reap().
 */
static int call_result(struct call *c)
{
	struct pollfd pfd = { .fd = c->rfd, .events = POLLIN };
	int r;

	if (c->pid < 0)
		return -ECHILD;
	if (poll(&pfd, 1, WAIT_MS) != 1)
		return -ETIMEDOUT;
	if (read(c->rfd, &r, sizeof(r)) != sizeof(r))
		return -EPIPE;
	return r;
}

static void call_reap(struct call *c)
{
	if (c->pid > 0)
		waitpid(c->pid, NULL, 0);
	if (c->rfd >= 0)
		close(c->rfd);
	c->pid = c->rfd = -1;
}

/* Configure a per-thread session on a new fd; the fd is kept open. */
static int do_configure(void *arg)
{
	const struct ipt_config *cfg = arg;
	int fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return ipt_ioctl(fd, IPT_IOC_CONFIGURE, (void *)cfg);
}

static int do_get_caps(void *arg)
{
	struct ipt_caps caps = { .size = sizeof(caps) };
	int fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = ipt_ioctl(fd, IPT_IOC_GET_CAPS, &caps);
	close(fd);
	return r;
}

#define MLOCK_KB_PARAM	"/sys/module/ipt/parameters/mlock_kb"

/*
 * A per-CPU configure of CPU 0 that must lose the race: 0 when it fails
 * with EBUSY and this process has nothing pinned afterwards; else the
 * configure's result (or 1 for a success), or 1000 + the KiB still pinned.
 */
static int do_configure_lose(void *arg)
{
	uint64_t mask[1] = { 0 };
	struct ipt_config cfg;
	int fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC), r;
	long pin;

	if (fd < 0)
		return -errno;
	ipt_cfg_cpu(&cfg, mask, 0, 256 * 1024);
	r = ipt_ioctl(fd, IPT_IOC_CONFIGURE, &cfg);
	if (r != -EBUSY)
		return r ?: 1;
	pin = ipt_vm_pin_kb(0);
	return pin ? 1000 + pin : 0;
}

/*
 * A per-CPU configure of CPU *@arg, then GET_TRACE of it; the session is
 * released when the process exits.
 */
static int do_configure_cpu(void *arg)
{
	uint64_t mask[1] = { 0 };
	struct ipt_trace_state ts;
	struct ipt_config cfg;
	int fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	ipt_cfg_cpu(&cfg, mask, *(int *)arg, 64 * 1024);
	r = ipt_ioctl(fd, IPT_IOC_CONFIGURE, &cfg);
	if (!r)
		r = ipt_state(fd, *(int *)arg, &ts);
	if (!r && ts.state != IPT_STATE_CONFIGURED)
		r = -EPROTO;
	return r;
}

static int do_offline(void *arg)
{
	return ipt_cpu_online_set(*(int *)arg, 0);
}

FIXTURE(multi) {
	int cpus;
};

FIXTURE_SETUP(multi)
{
	if (!ipt_sim_loaded())
		SKIP(return, "the simulated unit (ipt_sim) is not loaded");
	if (geteuid())
		SKIP(return, "must run as root");
	self->cpus = sysconf(_SC_NPROCESSORS_ONLN);
}

FIXTURE_TEARDOWN(multi)
{
	ipt_write_file(GATE, "open");
}

/*
 * One configure parked in its allocation: another process's GET_CAPS, a
 * small per-thread configure and a CPU offline complete meanwhile; the
 * parked configure then succeeds too (per-thread sessions share the unit).
 */
TEST_F_TIMEOUT(multi, alloc_holds_no_lock, 150)
{
	struct ipt_config cfg, small_cfg;
	struct call big, caps, small, off = { -1, -1 };
	int cpu = 1, r_caps, r_small, r_off = 0, r_big;

	if (access(GATE, W_OK))
		SKIP(return, "no %s", GATE);

	ipt_cfg_thread(&cfg, 64 * 1024, 8);
	ASSERT_EQ(0, ipt_write_file(GATE, "arm"));
	big = call_start(do_configure, &cfg);
	ASSERT_EQ(0, gate_wait("parked")) TH_LOG("the configure never reached the gate");

	caps = call_start(do_get_caps, NULL);
	r_caps = call_result(&caps);
	small_cfg = cfg;
	small_cfg.max_threads = 1;
	small = call_start(do_configure, &small_cfg);
	r_small = call_result(&small);
	if (self->cpus > 1) {
		off = call_start(do_offline, &cpu);
		r_off = call_result(&off);
	}
	/* Whatever happened, let the configure go before judging. */
	ipt_write_file(GATE, "open");
	r_big = call_result(&big);
	call_reap(&caps);
	call_reap(&small);
	call_reap(&off);
	call_reap(&big);
	if (self->cpus > 1)
		ipt_cpu_online_set(cpu, 1);

	EXPECT_EQ(0, r_caps) TH_LOG("GET_CAPS while a configure allocates: %d (%s)",
				    r_caps, r_caps == -ETIMEDOUT ? "blocked" : "failed");
	EXPECT_EQ(0, r_small) TH_LOG("another per-thread configure meanwhile: %d (%s)",
				     r_small, r_small == -ETIMEDOUT ? "blocked" : "failed");
	if (self->cpus > 1)
		EXPECT_EQ(0, r_off) TH_LOG("CPU %d offline while a configure allocates: %d (%s)",
					   cpu, r_off, r_off == -ETIMEDOUT ? "blocked" : "failed");
	EXPECT_EQ(0, r_big);
}

/*
 * The gate is the simulated backend's code (ipt_hw_ops.alloc_pause): while
 * a configure sleeps in it, ipt_sim cannot be unloaded (ipt.ko holds a
 * reference to the backend's module across the call); once the configure
 * went on, it succeeds.
 */
TEST_F_TIMEOUT(multi, parked_configure_pins_backend, 120)
{
	struct ipt_config cfg;
	struct call conf;
	int r_del, err_del, r_conf;

	if (access(GATE, W_OK))
		SKIP(return, "no %s", GATE);

	ipt_cfg_thread(&cfg, 64 * 1024, 2);
	ASSERT_EQ(0, ipt_write_file(GATE, "arm"));
	conf = call_start(do_configure, &cfg);
	ASSERT_EQ(0, gate_wait("parked")) TH_LOG("the configure never reached the gate");
	r_del = syscall(__NR_delete_module, "ipt_sim", O_NONBLOCK);
	err_del = errno;
	ipt_write_file(GATE, "open");
	r_conf = call_result(&conf);
	call_reap(&conf);

	EXPECT_EQ(-1, r_del) TH_LOG("ipt_sim was unloaded under a parked configure");
	EXPECT_EQ(EWOULDBLOCK, err_del) TH_LOG("delete_module: %s", strerror(err_del));
	EXPECT_EQ(0, r_conf);
	EXPECT_TRUE(ipt_sim_loaded());
}

#define SWITCH_STATS	"/sys/kernel/debug/ipt/switch_stats"
#define FORCE_MSR	"/sys/module/ipt/parameters/force_msr"

/*
 * A per-thread configure on the XSAVES path allocates its threads' XSAVES
 * areas with its buffers, without the locks: parked in its allocation it
 * already holds all of them (switch_stats xsave_areas), while another
 * process's GET_CAPS completes; once its session is gone, so are they.
 */
TEST_F_TIMEOUT(multi, xsave_areas_outside_the_locks, 120)
{
	struct ipt_config cfg;
	struct call conf, caps;
	uint64_t base, parked, after;
	int r_caps, r_conf;
	char fm[8] = "";
	FILE *f;

	if (access(GATE, W_OK))
		SKIP(return, "no %s", GATE);
	f = fopen(FORCE_MSR, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(fm, sizeof(fm), f));
	fclose(f);
	if (fm[0] == 'Y')
		SKIP(return, "force_msr: no XSAVES areas");
	base = ipt_file_stat(SWITCH_STATS, "xsave_areas");
	ASSERT_NE(~0ULL, base);

	ipt_cfg_thread(&cfg, 16 * 1024, 8);
	ASSERT_EQ(0, ipt_write_file(GATE, "arm"));
	conf = call_start(do_configure, &cfg);
	ASSERT_EQ(0, gate_wait("parked")) TH_LOG("the configure never reached the gate");
	parked = ipt_file_stat(SWITCH_STATS, "xsave_areas");
	caps = call_start(do_get_caps, NULL);
	r_caps = call_result(&caps);
	ipt_write_file(GATE, "open");
	r_conf = call_result(&conf);
	call_reap(&caps);
	call_reap(&conf);
	after = ipt_file_stat(SWITCH_STATS, "xsave_areas");

	EXPECT_EQ(base + 8, parked) TH_LOG("XSAVES areas while parked: %llu, want %llu",
					   (unsigned long long)parked,
					   (unsigned long long)base + 8);
	EXPECT_EQ(0, r_caps);
	EXPECT_EQ(0, r_conf);
	EXPECT_EQ(base, after) TH_LOG("XSAVES areas left after the session: %llu",
				      (unsigned long long)(after - base));
}

/*
 * A per-CPU configure of CPU 1 parked in its allocation while CPU 1 goes
 * offline: the offline completes, the configure then succeeds (the CPU
 * is present; it traces once it is back), and the session is released
 * with the CPU offline.
 */
TEST_F_TIMEOUT(multi, cpu_offline_while_allocating, 120)
{
	struct call conf, off;
	int cpu = 1, r_off, r_conf;

	if (access(GATE, W_OK))
		SKIP(return, "no %s", GATE);
	if (self->cpus < 2)
		SKIP(return, "needs a second CPU");

	ASSERT_EQ(0, ipt_write_file(GATE, "arm"));
	conf = call_start(do_configure_cpu, &cpu);
	ASSERT_EQ(0, gate_wait("parked")) TH_LOG("the configure never reached the gate");
	off = call_start(do_offline, &cpu);
	r_off = call_result(&off);
	ipt_write_file(GATE, "open");
	r_conf = call_result(&conf);
	call_reap(&off);
	call_reap(&conf);
	ipt_cpu_online_set(cpu, 1);

	EXPECT_EQ(0, r_off) TH_LOG("CPU %d offline: %d (%s)", cpu, r_off,
				   r_off == -ETIMEDOUT ? "blocked" : "failed");
	EXPECT_EQ(0, r_conf) TH_LOG("the configure of the CPU that went offline: %d", r_conf);
}

/*
 * A per-CPU configure parked in its allocation, charged; a per-thread
 * session takes the unit meanwhile; the parked one then fails with EBUSY
 * and its charge is gone.  The allowance is set to 0 so that every page
 * charged shows in VmPin.
 */
TEST_F_TIMEOUT(multi, lost_race_uncharged, 120)
{
	struct ipt_config cfg;
	char mlock_kb[32] = "";
	struct call lose;
	long pin_parked;
	int fd, r_thread, r_lose;
	FILE *f;

	if (access(GATE, W_OK))
		SKIP(return, "no %s", GATE);

	f = fopen(MLOCK_KB_PARAM, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(mlock_kb, sizeof(mlock_kb), f));
	fclose(f);
	ASSERT_EQ(0, ipt_write_file(MLOCK_KB_PARAM, "0"));
	fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);

	ASSERT_EQ(0, ipt_write_file(GATE, "arm"));
	lose = call_start(do_configure_lose, NULL);
	ASSERT_EQ(0, gate_wait("parked")) TH_LOG("the configure never reached the gate");
	pin_parked = ipt_vm_pin_kb(lose.pid);
	ipt_cfg_thread(&cfg, 16 * 1024, 2);
	r_thread = ipt_ioctl(fd, IPT_IOC_CONFIGURE, &cfg);
	ipt_write_file(GATE, "open");
	r_lose = call_result(&lose);
	call_reap(&lose);
	close(fd);
	ipt_write_file(MLOCK_KB_PARAM, mlock_kb);

	EXPECT_EQ(256, pin_parked) TH_LOG("charged before allocating: VmPin %ld KiB", pin_parked);
	EXPECT_EQ(0, r_thread);
	EXPECT_EQ(0, r_lose) TH_LOG("the configure that lost: %d (0: EBUSY and nothing pinned)",
				    r_lose);
}

/* ---- several per-thread sessions ----------------------------------------- */

#define KIB		1024ULL
/* The two users (nobody, and the uid below it) and their programs' IPs. */
#define UID(i)		(IPT_TEST_UID - (i))
#define MARK(i)		((i) ? 0x7f0022222000ULL : 0x7f0011111000ULL)
#define RECORDS		400

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/*
 * The feed of program @i: an IP-only record at MARK(@i), then RECORDS
 * records each holding one TIP (IPBytes 011) to MARK(@i).
 */
static size_t make_feed(int i, uint8_t *buf)
{
	size_t off = 0;
	int r, b;

	for (r = 0; r <= RECORDS; r++) {
		uint16_t len = r ? 7 : 0;
		uint64_t ip = MARK(i);

		memset(buf + off, 0, 16);
		memcpy(buf + off, &len, 2);
		memcpy(buf + off + 8, &ip, 8);
		off += 16;
		if (!r)
			continue;
		buf[off++] = 0x6d;
		for (b = 0; b < 6; b++)
			buf[off++] = ip >> (8 * b);
	}
	return off;
}

/*
 * IP packets (TIP, TIP.PGE, TIP.PGD, FUP with 6-byte IPs) in @n bytes of
 * trace: *@own of them name MARK(@i), *@other MARK(!@i).  -1 if the bytes
 * do not parse.
 */
static int count_marks(const uint8_t *p, size_t n, int i, int *own, int *other)
{
	size_t off = 0;

	*own = *other = 0;
	while (off < n) {
		int len = ipt_pkt_len(p + off, n - off), b;
		uint8_t h = p[off];

		if (len < 0)
			return -1;
		if (!len)
			break;
		if (len == 7 && (h >> 5) == 3 &&
		    ((h & 0x1f) == 0x0d || (h & 0x1f) == 0x11 ||
		     (h & 0x1f) == 0x01 || (h & 0x1f) == 0x1d)) {
			uint64_t ip = 0;

			for (b = 0; b < 6; b++)
				ip |= (uint64_t)p[off + 1 + b] << (8 * b);
			*own += ip == MARK(i);
			*other += ip == MARK(!i);
		}
		off += len;
	}
	return 0;
}

/* Read one byte from @fd with a bounded wait; 0 or -1. */
static int pipe_wait(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&pfd, 1, WAIT_MS) != 1 || read(fd, &c, 1) != 1)
		return -1;
	return 0;
}

/*
 * User @i: opens /dev/ipt and its thread's task_feed as root, becomes
 * UID(@i), configures a per-thread session, attaches itself, says so on
 * @ready, waits for @go (both sessions exist by then), starts, runs its
 * program to the end, stops and checks its trace: packets of its own
 * program, none of the other's.  Exits 0, or the line that failed.
 */
static void user_run(int i, int ready, int go)
{
	static uint8_t feed[32 * 1024];
	struct ipt_trace_state ts;
	struct ipt_config cfg;
	struct ipt_attach a = { .size = sizeof(a) };
	int fd, tf, own, other;
	uint64_t deadline;
	size_t n = make_feed(i, feed);
	uint8_t *p;

	fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	tf = open(IPT_SIM_DEBUGFS "/task_feed", O_RDWR | O_TRUNC);
	CHECK(fd >= 0 && tf >= 0, "open: %s", strerror(errno));
	CHECK(setgroups(0, NULL) == 0 && setresgid(UID(i), UID(i), UID(i)) == 0 &&
	      setresuid(UID(i), UID(i), UID(i)) == 0, "setresuid: %s", strerror(errno));
	ipt_cfg_thread(&cfg, 256 * KIB, 1);
	cfg.buffer_flags = IPT_BUFFER_STOP_ON_FULL;
	CHECK(ipt_ioctl(fd, IPT_IOC_CONFIGURE, &cfg) == 0, "user %d: configure", i);
	CHECK(ipt_ioctl(fd, IPT_IOC_ATTACH, &a) == 0 && a.trace == 0, "attach");
	CHECK(write(ready, "r", 1) == 1, "ready");
	CHECK(pipe_wait(go) == 0, "no go");
	CHECK(ipt_cmd(fd, IPT_IOC_START) == 0, "start");
	CHECK(write(tf, feed, n) == (ssize_t)n, "feed: %s", strerror(errno));
	deadline = now_ns() + WAIT_MS * 1000000ULL;
	for (;;) {
		char line[64];
		size_t pos, len;
		ssize_t r;

		CHECK(now_ns() < deadline, "user %d: the program did not run to its end", i);
		r = read(tf, line, sizeof(line) - 1);
		CHECK(r > 0, "task_feed read");
		line[r] = '\0';
		if (sscanf(line, "%zu %zu", &pos, &len) == 2 && pos == len)
			break;
	}
	CHECK(ipt_cmd(fd, IPT_IOC_STOP) == 0, "stop");
	CHECK(ipt_state(fd, 0, &ts) == 0, "get_trace");
	CHECK(ts.bytes_valid > 0, "user %d: no bytes", i);
	p = mmap(NULL, ts.buffer_size, PROT_READ, MAP_SHARED, fd, ts.mmap_offset);
	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	CHECK(count_marks(p, ts.bytes_valid, i, &own, &other) == 0,
	      "user %d: the trace does not parse", i);
	CHECK(own >= RECORDS, "user %d: %d packets of its own program, %d expected",
	      i, own, RECORDS);
	CHECK(other == 0, "user %d: %d packets of the other user's program", i, other);
	_exit(0);
}

/*
 * Two users, each a per-thread session of its own, trace at the same
 * time; each trace holds its own thread's program only.  On the old code
 * (one session owns the unit) the second configure failed with EBUSY.
 */
TEST_F_TIMEOUT(multi, two_users_trace_apart, 120)
{
	int ready[2][2], go[2][2], st, i, ok = 0;
	pid_t pid[2];

	ASSERT_EQ(0, ipt_sim_set_rate(1024 * KIB));
	/* A user that failed early closed its pipe: its status says why. */
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pipe(ready[i]));
		ASSERT_EQ(0, pipe(go[i]));
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (!pid[i]) {
			close(ready[i][0]);
			close(go[i][1]);
			user_run(i, ready[i][1], go[i][0]);
		}
		close(ready[i][1]);
		close(go[i][0]);
	}
	/* Both sessions configured, each with its thread attached. */
	for (i = 0; i < 2; i++)
		ok += !pipe_wait(ready[i][0]);
	for (i = 0; i < 2; i++)
		if (write(go[i][1], "g", 1) != 1)
			ok = 0;
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			TH_LOG("user %d failed (status 0x%x)", i, st);
		close(ready[i][0]);
		close(go[i][1]);
	}
	EXPECT_EQ(2, ok) TH_LOG("both sessions were not configured at once");
}

/*
 * Per-thread sessions share the unit, a per-CPU session excludes them and
 * they it; a thread is in one session at most; perf's intel_pt stays
 * held until the last session is released.
 */
TEST_F(multi, sessions_share_and_exclude)
{
	uint64_t mask[1] = { 0 };
	struct ipt_config c, t;
	struct ipt_attach a = { .size = sizeof(a) };
	int fd[3], i, type = ipt_perf_pt_type(), pfd;

	for (i = 0; i < 3; i++) {
		fd[i] = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd[i]);
	}
	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	ipt_cfg_thread(&t, 64 * KIB, 2);
	ASSERT_EQ(0, ipt_ioctl(fd[0], IPT_IOC_CONFIGURE, &t));
	ASSERT_EQ(0, ipt_ioctl(fd[1], IPT_IOC_CONFIGURE, &t));
	EXPECT_EQ(-EBUSY, ipt_ioctl(fd[2], IPT_IOC_CONFIGURE, &c));
	/* This thread, in the first session, cannot join the second. */
	ASSERT_EQ(0, ipt_ioctl(fd[0], IPT_IOC_ATTACH, &a));
	a.trace = 0;
	EXPECT_EQ(-EEXIST, ipt_ioctl(fd[1], IPT_IOC_ATTACH, &a));
	a.trace = 0;
	ASSERT_EQ(0, ipt_cmd(fd[0], IPT_IOC_START));
	ASSERT_EQ(0, ipt_cmd(fd[1], IPT_IOC_START));
	ASSERT_EQ(0, ipt_cmd(fd[0], IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(fd[1], IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(fd[0], IPT_IOC_RELEASE));
	/* One session left: still exclusive against per-CPU, and perf. */
	EXPECT_EQ(-EBUSY, ipt_ioctl(fd[2], IPT_IOC_CONFIGURE, &c));
	if (type >= 0)
		EXPECT_EQ(-EBUSY, ipt_perf_pt_open(type, 0, -1));
	/* The thread is free again: the second session takes it. */
	EXPECT_EQ(0, ipt_ioctl(fd[1], IPT_IOC_ATTACH, &a));
	ASSERT_EQ(0, ipt_cmd(fd[1], IPT_IOC_RELEASE));
	if (type >= 0) {
		pfd = ipt_perf_pt_open(type, 0, -1);
		EXPECT_LE(0, pfd) TH_LOG("perf's intel_pt after the last release: %d", pfd);
		if (pfd >= 0)
			close(pfd);
	}
	/* Per-CPU now; then no per-thread session beside it. */
	ASSERT_EQ(0, ipt_ioctl(fd[2], IPT_IOC_CONFIGURE, &c));
	EXPECT_EQ(-EBUSY, ipt_ioctl(fd[0], IPT_IOC_CONFIGURE, &t));
	EXPECT_EQ(-EBUSY, ipt_ioctl(fd[1], IPT_IOC_CONFIGURE, &c));
	for (i = 0; i < 3; i++)
		close(fd[i]);
}

/* ---- IPT_IOC_LIST_SESSIONS ---------------------------------------------- */

static int list(int fd, struct ipt_session_info *e, uint32_t n, uint32_t *total)
{
	struct ipt_sessions l = {
		.size = sizeof(l), .entry_size = sizeof(*e), .nr_entries = n,
		.entries_ptr = (uintptr_t)e,
	};
	int r = ipt_ioctl(fd, IPT_IOC_LIST_SESSIONS, &l);

	if (total)
		*total = l.total;
	return r ? r : (int)l.nr_entries;
}

/*
 * An unprivileged user (opens as root, then becomes nobody) configures a
 * session, attaches itself and lists: only its own session.  Exits 0 or
 * the line that failed; @ready and @done sync with the parent.
 */
static void list_user(int ready, int done)
{
	struct ipt_session_info e[4];
	struct ipt_attach a = { .size = sizeof(a) };
	struct ipt_config cfg;
	uint32_t total;
	int fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC), n;

	CHECK(fd >= 0, "open");
	CHECK(ipt_become_user() == 0, "setresuid");
	ipt_cfg_thread(&cfg, 16 * KIB, 3);
	CHECK(ipt_ioctl(fd, IPT_IOC_CONFIGURE, &cfg) == 0, "configure");
	CHECK(ipt_ioctl(fd, IPT_IOC_ATTACH, &a) == 0, "attach");
	memset(e, 0xff, sizeof(e));
	n = list(fd, e, 4, &total);
	CHECK(n == 1 && total == 1, "the user sees %d of %u sessions, 1 expected", n, total);
	CHECK(e[0].mode == IPT_MODE_THREAD && e[0].state == IPT_STATE_CONFIGURED &&
	      e[0].uid == IPT_TEST_UID && e[0].pid == (uint32_t)getpid() &&
	      e[0].nr_traces == 3 && e[0].nr_threads == 1 &&
	      e[0].flags == IPT_SESSION_THIS && !e[0].reserved[0] && !e[0].reserved[1],
	      "entry: mode %u state %u uid %u pid %u traces %u threads %u flags 0x%llx",
	      e[0].mode, e[0].state, e[0].uid, e[0].pid, e[0].nr_traces,
	      e[0].nr_threads, (unsigned long long)e[0].flags);
	CHECK(write(ready, "r", 1) == 1, "ready");
	CHECK(pipe_wait(done) == 0, "no done");
	_exit(0);
}

TEST_F_TIMEOUT(multi, list_sessions, 60)
{
	struct ipt_session_info e[4];
	struct ipt_config cfg;
	int fd, ready[2], done[2], st, n, i, seen = 0;
	uint32_t total;
	pid_t pid;

	fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, list(fd, NULL, 0, &total));
	EXPECT_EQ(0, total);
	ipt_cfg_thread(&cfg, 16 * KIB, 2);
	cfg.trace_flags |= IPT_TRACE_KERNEL;
	ASSERT_EQ(0, ipt_ioctl(fd, IPT_IOC_CONFIGURE, &cfg));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(done));
	/* A user that failed early closed its pipe: its status says why. */
	signal(SIGPIPE, SIG_IGN);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(ready[0]);
		close(done[1]);
		list_user(ready[1], done[0]);
	}
	close(ready[1]);
	close(done[0]);
	EXPECT_EQ(0, pipe_wait(ready[0])) TH_LOG("the user's session never came");

	/* Root sees both: its own (this file) and the user's. */
	n = list(fd, e, 4, &total);
	EXPECT_EQ(2, n);
	EXPECT_EQ(2, total);
	for (i = 0; i < n && i < 4; i++) {
		if (e[i].uid == 0) {
			seen |= 1;
			EXPECT_EQ(IPT_SESSION_THIS | IPT_SESSION_KERNEL, e[i].flags);
			EXPECT_EQ((uint32_t)getpid(), e[i].pid);
			EXPECT_EQ(2, e[i].nr_traces);
			EXPECT_EQ(0, e[i].nr_threads);
		} else if (e[i].uid == IPT_TEST_UID) {
			seen |= 2;
			EXPECT_EQ(0, e[i].flags);
			EXPECT_EQ((uint32_t)pid, e[i].pid);
			EXPECT_EQ(3, e[i].nr_traces);
			EXPECT_EQ(1, e[i].nr_threads);
		}
		EXPECT_EQ(IPT_MODE_THREAD, e[i].mode);
	}
	EXPECT_EQ(3, seen);
	/* Room for one: one written, the total still says two. */
	EXPECT_EQ(1, list(fd, e, 1, &total));
	EXPECT_EQ(2, total);
	/* Counting only. */
	EXPECT_EQ(0, list(fd, NULL, 0, &total));
	EXPECT_EQ(2, total);

	if (write(done[1], "d", 1) != 1)
		TH_LOG("cannot tell the user to finish");
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("user status 0x%x", st);
	close(ready[0]);
	close(done[1]);
	close(fd);
}

/* The argument is checked like every other; a larger entry is zero-padded. */
TEST_F(multi, list_sessions_abi)
{
	struct ipt_sessions l;
	struct ipt_config cfg;
	uint8_t buf[2 * 64];
	int fd, i;

	fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ipt_cfg_thread(&cfg, 16 * KIB, 1);
	ASSERT_EQ(0, ipt_ioctl(fd, IPT_IOC_CONFIGURE, &cfg));
#define L0 (struct ipt_sessions){ .size = sizeof(l), .entry_size = 48 }
	l = L0; l.flags = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(fd, IPT_IOC_LIST_SESSIONS, &l));
	l = L0; l.reserved0 = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(fd, IPT_IOC_LIST_SESSIONS, &l));
	l = L0; l.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(fd, IPT_IOC_LIST_SESSIONS, &l));
	l = L0; l.total = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(fd, IPT_IOC_LIST_SESSIONS, &l));
	l = L0; l.entry_size = 40;
	EXPECT_EQ(-EINVAL, ipt_ioctl(fd, IPT_IOC_LIST_SESSIONS, &l));
	l = L0; l.entry_size = 4097;
	EXPECT_EQ(-E2BIG, ipt_ioctl(fd, IPT_IOC_LIST_SESSIONS, &l));
	l = L0; l.nr_entries = 1;
	EXPECT_EQ(-EINVAL, ipt_ioctl(fd, IPT_IOC_LIST_SESSIONS, &l));
	l = L0; l.size = 40;
	EXPECT_EQ(-EINVAL, ipt_ioctl(fd, IPT_IOC_LIST_SESSIONS, &l));
	l = L0; l.nr_entries = 1; l.entries_ptr = 8;
	EXPECT_EQ(-EFAULT, ipt_ioctl(fd, IPT_IOC_LIST_SESSIONS, &l));
	/* A 64-byte entry: the kernel's 48, then zeroes up to the stride. */
	memset(buf, 0xff, sizeof(buf));
	l = L0; l.entry_size = 64; l.nr_entries = 2; l.entries_ptr = (uintptr_t)buf;
	ASSERT_EQ(0, ipt_ioctl(fd, IPT_IOC_LIST_SESSIONS, &l));
	EXPECT_EQ(1, l.nr_entries);
	EXPECT_EQ(1, l.total);
	EXPECT_EQ(IPT_MODE_THREAD, ((struct ipt_session_info *)buf)->mode);
	for (i = 48; i < 64; i++)
		EXPECT_EQ(0, buf[i]);
	for (i = 64; i < 128; i++)
		EXPECT_EQ(0xff, buf[i]);
	/* The next command number is unknown. */
	EXPECT_EQ(-ENOTTY, ipt_ioctl(fd, _IOWR(IPT_IOC_MAGIC, 0x09, struct ipt_sessions), &l));
#undef L0
	close(fd);
}

TEST_HARNESS_MAIN

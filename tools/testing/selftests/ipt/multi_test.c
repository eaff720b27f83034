// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: /dev/ipt is shared, against the simulated unit.
 *
 * - A configure that is allocating its buffers holds no lock another
 *   caller or CPU hotplug needs: with one configure provably parked in
 *   the middle of its allocation (debugfs ipt/alloc_gate), another
 *   process's IPT_IOC_GET_CAPS and a CPU offline complete.  No timing:
 *   the gate says "parked", and every wait is bounded (a blocked call is
 *   a failure, then the gate is opened so that nothing stays stuck).
 * - A configure that loses the race for the unit while it allocated
 *   (another session took it meanwhile) fails with EBUSY and gives back
 *   the locked memory it charged before allocating.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "ipt_lib.h"
#include "kselftest_harness.h"

#define GATE		"/sys/kernel/debug/ipt/alloc_gate"
/* Bound of every wait for an event: generous, never reached when all is well. */
#define WAIT_MS		20000

/* In a child: on failure say where and why, and exit 1. */
#define CHECK(cond, fmt, ...) do {						\
	if (!(cond)) {								\
		fprintf(stderr, "# %s:%d: %s: " fmt "\n", __FILE__, __LINE__,	\
			#cond, ##__VA_ARGS__);					\
		_exit(1);							\
	}									\
} while (0)

static void cfg_thread(struct ipt_config *cfg, uint64_t size, uint32_t max)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->mode = IPT_MODE_THREAD;
	cfg->trace_flags = IPT_TRACE_USER | IPT_TRACE_BRANCH | IPT_TRACE_TSC;
	cfg->buffer_size = size;
	cfg->max_threads = max;
}

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

/* VmPin of process @pid (0: this one), in KiB; -1 if not found. */
static long vm_pin_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

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
	pin = vm_pin_kb(0);
	return pin ? 1000 + pin : 0;
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
	if (access(GATE, W_OK))
		SKIP(return, "no %s", GATE);
	self->cpus = sysconf(_SC_NPROCESSORS_ONLN);
}

FIXTURE_TEARDOWN(multi)
{
	ipt_write_file(GATE, "open");
}

/*
 * One configure parked in its allocation: another process's GET_CAPS and
 * a CPU offline complete meanwhile; the configure then succeeds.
 */
TEST_F_TIMEOUT(multi, alloc_holds_no_lock, 150)
{
	struct ipt_config cfg;
	struct call big, caps, off = { -1, -1 };
	int cpu = 1, r_caps, r_off = 0, r_big;

	cfg_thread(&cfg, 64 * 1024, 8);
	ASSERT_EQ(0, ipt_write_file(GATE, "arm"));
	big = call_start(do_configure, &cfg);
	ASSERT_EQ(0, gate_wait("parked")) TH_LOG("the configure never reached the gate");

	caps = call_start(do_get_caps, NULL);
	r_caps = call_result(&caps);
	if (self->cpus > 1) {
		off = call_start(do_offline, &cpu);
		r_off = call_result(&off);
	}
	/* Whatever happened, let the configure go before judging. */
	ipt_write_file(GATE, "open");
	r_big = call_result(&big);
	call_reap(&caps);
	call_reap(&off);
	call_reap(&big);
	if (self->cpus > 1)
		ipt_cpu_online_set(cpu, 1);

	EXPECT_EQ(0, r_caps) TH_LOG("GET_CAPS while a configure allocates: %d (%s)",
				    r_caps, r_caps == -ETIMEDOUT ? "blocked" : "failed");
	if (self->cpus > 1)
		EXPECT_EQ(0, r_off) TH_LOG("CPU %d offline while a configure allocates: %d (%s)",
					   cpu, r_off, r_off == -ETIMEDOUT ? "blocked" : "failed");
	EXPECT_EQ(0, r_big);
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
	pin_parked = vm_pin_kb(lose.pid);
	cfg_thread(&cfg, 16 * 1024, 2);
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

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: ipt and perf's intel_pt share the PT unit by refusing each
 * other (Documentation/design.rst, "Sharing the machine with perf").
 *
 * The simulated unit registers a perf PMU named "intel_pt" that traces it
 * the way Linux's pt.c does, caching OUTPUT_BASE, OUTPUT_MASK_PTRS and
 * ADDR0 and skipping their WRMSR when its cache says unchanged (debugfs
 * cpuN/perf: "stale" counts starts that found a register rewritten
 * behind its back).  These tests open it with perf_event_open(2) directly:
 * a perf event refuses an ipt session (EBUSY) and keeps its registers, an
 * ipt session refuses perf (EBUSY), each works again after the other is
 * gone, and the hold survives a CPU going offline and coming back (or
 * is refused, if perf took the CPU meanwhile).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/perf_event.h>

#include "ipt_lib.h"
#include "kselftest_harness.h"

#define KIB 1024ULL

/* Value of @key in the sim's cpuN/perf; ~0 if absent. */
static uint64_t perf_stat(int cpu, const char *key)
{
	char path[128];

	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/perf", cpu);
	return ipt_file_stat(path, key);
}

static int cpu_hotpluggable(int cpu)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	return access(path, W_OK) == 0;
}

/* A child pinned to @cpu that runs once per byte written to @kick. */
struct child {
	pid_t pid;
	int kick;
	int done;
};

static int child_start(struct child *c, int cpu)
{
	int a[2], b[2];
	cpu_set_t set;
	char x;

	if (pipe(a) || pipe(b))
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (!c->pid) {
		close(a[1]);
		close(b[0]);
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			_exit(1);
		while (read(a[0], &x, 1) == 1)
			if (write(b[1], &x, 1) != 1)
				_exit(1);
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	c->kick = a[1];
	c->done = b[0];
	return 0;
}

/*
 * Let the child run once on @cpu, and wait until perf has switched it
 * out there again (its event stopped): a state, bounded at 30 s.
 */
static int child_run_once(struct child *c, int cpu)
{
	uint64_t stops = perf_stat(cpu, "stops");
	char x = 'x';
	int i;

	if (write(c->kick, &x, 1) != 1 || read(c->done, &x, 1) != 1)
		return -EIO;
	for (i = 0; i < 30000; i++) {
		if (perf_stat(cpu, "running") == 0 &&
		    perf_stat(cpu, "stops") > stops)
			return 0;
		usleep(1000);
	}
	return -ETIMEDOUT;
}

static void child_stop(struct child *c)
{
	if (c->pid <= 0)
		return;
	close(c->kick);
	close(c->done);
	waitpid(c->pid, NULL, 0);
	c->pid = 0;
}

FIXTURE(pf) {
	int fd;
	int type;
	struct ipt_config cfg;
	uint64_t mask[2];
	int offline;		/* a CPU a test took offline, or -1 */
	struct child child;
};

FIXTURE_SETUP(pf)
{
	self->fd = -1;
	self->offline = -1;
	self->child.pid = 0;
	if (!ipt_sim_loaded())
		SKIP(return, "the simulated unit (ipt_sim) is not loaded");
	/* The sim registers intel_pt: it must be there. */
	ASSERT_EQ(1ULL, perf_stat(0, "registered"));
	self->type = ipt_perf_pt_type();
	ASSERT_LE(0, self->type);
	self->fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	memset(self->mask, 0, sizeof(self->mask));
	ipt_cfg_cpu(&self->cfg, self->mask, 0, 64 * KIB);
}

FIXTURE_TEARDOWN(pf)
{
	child_stop(&self->child);
	if (self->offline >= 0)
		ipt_cpu_online_set(self->offline, 1);
	if (self->fd >= 0)
		close(self->fd);
}

static int configure(int fd, struct ipt_config *cfg)
{
	return ipt_ioctl(fd, IPT_IOC_CONFIGURE, cfg);
}

/*
 * Start perf's tracer on @cpu once (CPU-wide, then closed), so that its
 * cache holds what the unit holds: a register rewritten afterwards by
 * anyone else shows as "stale" at its next start.
 */
static int prime_perf(int type, int cpu)
{
	int pfd = ipt_perf_pt_open(type, -1, cpu);

	if (pfd < 0)
		return pfd;
	close(pfd);
	return perf_stat(cpu, "running") == 0 ? 0 : -EIO;
}

/* (a) A CPU-wide perf event: ipt refuses, and touches nothing of it. */
TEST_F(pf, cpu_wide_perf_refuses_ipt)
{
	uint64_t base, ctl, wrmsr, gp;
	struct ipt_config tc;
	int pfd, ret;

	pfd = ipt_perf_pt_open(self->type, -1, 0);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(1ULL, perf_stat(0, "running"));
	base = ipt_sim_stat(0, "output_base");
	ctl = ipt_sim_stat(0, "ctl");
	wrmsr = ipt_sim_stat(0, "wrmsr");
	gp = perf_stat(0, "gp");
	EXPECT_EQ(perf_stat(0, "base"), base);
	EXPECT_EQ(1ULL, ctl & 1);

	ret = configure(self->fd, &self->cfg);
	EXPECT_EQ(-EBUSY, ret);
	if (!ret) {
		ipt_cmd(self->fd, IPT_IOC_START);
		ipt_cmd(self->fd, IPT_IOC_STOP);
		ipt_cmd(self->fd, IPT_IOC_RELEASE);
	}
	ipt_cfg_thread(&tc, 64 * KIB, 1);
	ret = configure(self->fd, &tc);
	EXPECT_EQ(-EBUSY, ret);
	if (!ret)
		ipt_cmd(self->fd, IPT_IOC_RELEASE);

	/* The unit is as perf left it: no write of ipt's reached it. */
	EXPECT_EQ(base, ipt_sim_stat(0, "output_base"));
	EXPECT_EQ(ctl, ipt_sim_stat(0, "ctl"));
	EXPECT_EQ(wrmsr, ipt_sim_stat(0, "wrmsr"));
	EXPECT_EQ(gp, perf_stat(0, "gp"));
	EXPECT_EQ(1ULL, perf_stat(0, "running"));
	close(pfd);
	EXPECT_EQ(0ULL, perf_stat(0, "running"));
	EXPECT_EQ(0ULL, perf_stat(0, "clobbered"));

	/* (c) perf gone: ipt works again. */
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * (a) A per-task perf event whose task sleeps: TraceEn is clear on every
 * CPU, yet the unit is perf's.  ipt refuses; perf's next start finds its
 * registers where it left them (nothing stale).
 */
TEST_F(pf, per_task_perf_refuses_ipt)
{
	uint64_t base, stale;
	struct ipt_config tc;
	int pfd, ret;

	ASSERT_EQ(0, child_start(&self->child, 0));
	pfd = ipt_perf_pt_open(self->type, self->child.pid, -1);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, child_run_once(&self->child, 0));
	base = perf_stat(0, "base");
	stale = perf_stat(0, "stale");
	EXPECT_EQ(base, ipt_sim_stat(0, "output_base"));
	EXPECT_EQ(0ULL, ipt_sim_stat(0, "ctl") & 1);

	ret = configure(self->fd, &self->cfg);
	EXPECT_EQ(-EBUSY, ret);
	if (!ret) {
		/* What went wrong before: ipt used the unit under perf. */
		EXPECT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
		ipt_cmd(self->fd, IPT_IOC_STOP);
		ipt_cmd(self->fd, IPT_IOC_RELEASE);
	}
	ipt_cfg_thread(&tc, 64 * KIB, 1);
	ret = configure(self->fd, &tc);
	EXPECT_EQ(-EBUSY, ret);
	if (!ret)
		ipt_cmd(self->fd, IPT_IOC_RELEASE);

	ASSERT_EQ(0, child_run_once(&self->child, 0));
	EXPECT_EQ(stale, perf_stat(0, "stale"));
	EXPECT_EQ(base, ipt_sim_stat(0, "output_base"));
	EXPECT_EQ(0ULL, perf_stat(0, "clobbered"));
	child_stop(&self->child);
	close(pfd);

	/* (c) */
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * (b) An ipt session refuses perf, CPU-wide and per-task, configured and
 * tracing; (c) after release perf works and finds its registers back.
 */
TEST_F(pf, ipt_session_refuses_perf)
{
	uint64_t stale;
	int pfd;

	ASSERT_EQ(0, prime_perf(self->type, 0));
	stale = perf_stat(0, "stale");
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, -1, 0));
	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, 0, -1));
	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, 0, 0));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, -1, 0));
	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, 0, -1));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, -1, 0));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	pfd = ipt_perf_pt_open(self->type, -1, 0);
	ASSERT_LE(0, pfd);
	EXPECT_EQ(1ULL, perf_stat(0, "running"));
	/* ipt put back what perf's cache holds. */
	EXPECT_EQ(stale, perf_stat(0, "stale"));
	EXPECT_EQ(perf_stat(0, "base"), ipt_sim_stat(0, "output_base"));
	close(pfd);
	pfd = ipt_perf_pt_open(self->type, 0, -1);
	EXPECT_LE(0, pfd);
	if (pfd >= 0)
		close(pfd);
}

/* (b) A per-thread session holds every CPU; closing the file ends it. */
TEST_F(pf, thread_session_refuses_perf)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN), cpu;
	struct ipt_config tc;
	int pfd;

	ipt_cfg_thread(&tc, 64 * KIB, 1);
	ASSERT_EQ(0, configure(self->fd, &tc));
	for (cpu = 0; cpu < n; cpu++)
		EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, -1, cpu));
	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, 0, -1));
	close(self->fd);
	self->fd = -1;
	for (cpu = 0; cpu < n; cpu++) {
		pfd = ipt_perf_pt_open(self->type, -1, cpu);
		EXPECT_LE(0, pfd);
		if (pfd >= 0)
			close(pfd);
	}
}

/* A per-CPU session and a CPU-wide perf event on other CPUs coexist. */
TEST_F(pf, disjoint_cpus_coexist)
{
	uint64_t gp;
	int pfd;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs");
	pfd = ipt_perf_pt_open(self->type, -1, 1);
	ASSERT_LE(0, pfd);
	gp = perf_stat(1, "gp");
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, -1, 0));
	EXPECT_EQ(1ULL, perf_stat(1, "running"));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(gp, perf_stat(1, "gp"));
	EXPECT_EQ(0ULL, perf_stat(1, "clobbered"));
	close(pfd);
}

/*
 * (d) perf drops a CPU's events when it goes offline: the hold is taken
 * again when it comes back, and perf is still refused there; the trace
 * goes on there; after release perf finds its registers back.
 */
TEST_F_TIMEOUT(pf, hotplug_keeps_the_hold, 120)
{
	uint64_t stale;
	int pfd, cpu = 1;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !cpu_hotpluggable(cpu))
		SKIP(return, "needs a second CPU that can go offline");
	ASSERT_EQ(0, prime_perf(self->type, cpu));
	stale = perf_stat(cpu, "stale");
	ipt_cfg_cpu(&self->cfg, self->mask, cpu, 64 * KIB);
	self->mask[0] |= 1;
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_EQ(1ULL, ipt_sim_stat(cpu, "ctl") & 1);

	self->offline = cpu;
	ASSERT_EQ(0, ipt_cpu_online_set(cpu, 0));
	EXPECT_EQ(0ULL, ipt_sim_stat(cpu, "ctl") & 1);
	/* perf's per-task events stay refused meanwhile. */
	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, 0, -1));
	ASSERT_EQ(0, ipt_cpu_online_set(cpu, 1));
	self->offline = -1;

	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, -1, cpu));
	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, 0, -1));
	EXPECT_EQ(1ULL, ipt_sim_stat(cpu, "ctl") & 1);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	pfd = ipt_perf_pt_open(self->type, -1, cpu);
	ASSERT_LE(0, pfd);
	EXPECT_EQ(stale, perf_stat(cpu, "stale"));
	EXPECT_EQ(1ULL, perf_stat(cpu, "running"));
	close(pfd);
}

/*
 * A per-CPU session whose only CPU is offline holds nothing, so perf may
 * take intel_pt meanwhile; when the CPU comes back it is perf's: the
 * session does not start there (EBUSY, the unit untouched) until perf is
 * gone, and then START takes it.
 */
TEST_F_TIMEOUT(pf, perf_takes_a_cpu_while_offline, 120)
{
	uint64_t wrmsr;
	int pfd, cpu = 1;
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !cpu_hotpluggable(cpu))
		SKIP(return, "needs a second CPU that can go offline");
	/*
	 * perf's per-task event below runs wherever this task runs: kept on
	 * CPU 0, it writes nothing on CPU 1, the unit looked at (a CI run
	 * saw the task moved to CPU 1 and perf's own writes there).
	 */
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	ipt_cfg_cpu(&self->cfg, self->mask, cpu, 64 * KIB);
	self->offline = cpu;
	ASSERT_EQ(0, ipt_cpu_online_set(cpu, 0));
	ASSERT_EQ(0, configure(self->fd, &self->cfg));
	pfd = ipt_perf_pt_open(self->type, 0, -1);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, ipt_cpu_online_set(cpu, 1));
	self->offline = -1;

	wrmsr = ipt_sim_stat(cpu, "wrmsr");
	EXPECT_EQ(-EBUSY, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_EQ(wrmsr, ipt_sim_stat(cpu, "wrmsr"));
	EXPECT_EQ(0ULL, ipt_sim_stat(cpu, "ctl") & 1);
	close(pfd);

	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_EQ(1ULL, ipt_sim_stat(cpu, "ctl") & 1);
	EXPECT_EQ(-EBUSY, ipt_perf_pt_open(self->type, -1, cpu));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

TEST_HARNESS_MAIN

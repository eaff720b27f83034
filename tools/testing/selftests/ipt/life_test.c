// SPDX-License-Identifier: GPL-2.0
/*
 * ipt's lifecycle against the simulated unit: a unit that ignores the
 * stop keeps its buffers (leaked, never freed under it); reboot / kexec,
 * panic and a real suspend (/sys/power/pm_test "core": the whole S3 path
 * but the platform's sleep, in which the simulator cuts every unit's
 * power) leave every simulated unit off.  Needs ipt_sim; run as root.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>

#include "ipt_lib.h"
#include "kselftest_harness.h"

#define KIB 1024ULL
#define IPT_DEBUGFS "/sys/kernel/debug/ipt"

static int nr_cpus(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN);
}

static int sim_on(int cpu)
{
	return ipt_sim_stat(cpu, "ctl") & 1;	/* TraceEn */
}

static int cpu_knob(int cpu, const char *knob, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/%s", cpu, knob);
	return ipt_write_file(path, val);
}

/* A per-CPU session of every online CPU, @size bytes each. */
static void cfg_all(struct ipt_config *c, uint64_t *mask, uint64_t size)
{
	int cpu;

	ipt_cfg_cpu(c, mask, 0, size);
	for (cpu = 0; cpu < nr_cpus() && cpu < 128; cpu++)
		mask[cpu / 64] |= 1ULL << (cpu % 64);
	c->cpu_mask_words = (cpu - 1) / 64 + 1;
}

/*
 * Tell scripts/vm-check-log that the next WARNING in the kernel log is
 * the one this test provokes, and which message precedes it (exactly).
 */
static void expect_warning(const char *msg)
{
	char line[256];
	int fd = open("/dev/kmsg", O_WRONLY);

	if (fd < 0)
		return;
	snprintf(line, sizeof(line), "ipt-test: expect warning: %s\n", msg);
	if (write(fd, line, strlen(line)) < 0)
		perror("/dev/kmsg");
	close(fd);
}

FIXTURE(life) {
	int fd;
	uint64_t mask[2];
	struct ipt_config cfg;
};

FIXTURE_SETUP(life)
{
	if (!ipt_sim_loaded())
		SKIP(return, "the simulated unit (ipt_sim) is not loaded");
	self->fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	memset(self->mask, 0, sizeof(self->mask));
}

FIXTURE_TEARDOWN(life)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * A unit that ignores the stop (sim "stuck") still writes to its buffer
 * after the session ends: release must leak the buffer (debugfs
 * "leaked"), with one WARN, instead of freeing pages under a live unit.
 */
TEST_F_TIMEOUT(life, stuck_unit_keeps_its_buffer, 120)
{
	int cpu = nr_cpus() - 1;
	uint64_t bufs, bytes, ignored;
	char msg[160];

	bufs = ipt_file_stat(IPT_DEBUGFS "/leaked", "buffers");
	bytes = ipt_file_stat(IPT_DEBUGFS "/leaked", "bytes");
	ASSERT_NE(~0ULL, bufs);
	ignored = ipt_sim_stat(cpu, "stops_ignored");
	ASSERT_NE(~0ULL, ignored);

	ipt_cfg_cpu(&self->cfg, self->mask, cpu, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &self->cfg));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, cpu_knob(cpu, "stuck", "1"));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_EQ(ignored + 1, ipt_sim_stat(cpu, "stops_ignored"));
	ASSERT_TRUE(sim_on(cpu));

	snprintf(msg, sizeof(msg),
		 "ipt: CPU %d still traces after stop: leaking 1 buffers (65536 bytes)",
		 cpu);
	expect_warning(msg);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(bufs + 1, ipt_file_stat(IPT_DEBUGFS "/leaked", "buffers"));
	EXPECT_EQ(bytes + 64 * KIB, ipt_file_stat(IPT_DEBUGFS "/leaked", "bytes"));
	/* Still live, into the leaked buffer: it keeps writing. */
	EXPECT_TRUE(sim_on(cpu));
	EXPECT_EQ(0, ipt_sim_wait_stat(cpu, "bytes", ipt_sim_stat(cpu, "bytes") + 1));

	/* Un-stuck, it carries out the stop it ignored. */
	ASSERT_EQ(0, cpu_knob(cpu, "stuck", "0"));
	EXPECT_FALSE(sim_on(cpu));

	/* The next session is unaffected, and frees its buffer. */
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &self->cfg));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(bufs + 1, ipt_file_stat(IPT_DEBUGFS "/leaked", "buffers"));
}

/*
 * The reboot notifier (reboot, halt, power-off, kexec) stops every CPU's
 * unit and refuses new starts with ESHUTDOWN.
 */
TEST_F(life, reboot_stops_every_cpu)
{
	struct ipt_trace_state ts;
	int cpu;

	cfg_all(&self->cfg, self->mask, 16 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &self->cfg));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	for (cpu = 0; cpu < nr_cpus(); cpu++)
		ASSERT_TRUE(sim_on(cpu));
	ASSERT_EQ(0, ipt_write_file(IPT_DEBUGFS "/life_test", "reboot"));
	for (cpu = 0; cpu < nr_cpus(); cpu++) {
		EXPECT_FALSE(sim_on(cpu)) TH_LOG("cpu%d still traces", cpu);
		ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
		EXPECT_EQ(IPT_STATE_STOPPED, ts.state);
		EXPECT_FALSE(ts.status & IPT_TS_RUNNING);
	}
	EXPECT_EQ(-ESHUTDOWN, ipt_cmd(self->fd, IPT_IOC_START));
	for (cpu = 0; cpu < nr_cpus(); cpu++)
		EXPECT_FALSE(sim_on(cpu));
	ASSERT_EQ(0, ipt_write_file(IPT_DEBUGFS "/life_test", "up"));
	EXPECT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * The panic notifier stops the panicking CPU's unit (the others are
 * stopped by panic itself and left alone); the session can still be
 * stopped and read afterwards.
 */
TEST_F(life, panic_stops_this_cpu)
{
	struct ipt_trace_state ts;
	int cpu = nr_cpus() - 1, other = 0;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	cfg_all(&self->cfg, self->mask, 16 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &self->cfg));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_write_file(IPT_DEBUGFS "/life_test", "panic"));
	EXPECT_FALSE(sim_on(cpu));
	if (other != cpu)
		EXPECT_TRUE(sim_on(other));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	for (cpu = 0; cpu < nr_cpus(); cpu++) {
		EXPECT_FALSE(sim_on(cpu));
		ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
		EXPECT_FALSE(ts.status & IPT_TS_ERROR);
	}
	EXPECT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/* Whether "mem" with pm_test "core" can be used here. */
static int can_suspend(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/power/state", "r");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strstr(buf, "mem") && access("/sys/power/pm_test", W_OK) == 0;
}

/*
 * A real suspend (pm_test "core": freezer, devices, non-boot CPUs
 * offline, syscore; only the platform's sleep is skipped, and the
 * simulator cuts every unit's power there as S3 does).  No unit may go
 * into it enabled, tracing goes on after it from where it stopped, and
 * the traces are marked IPT_TS_SUSPENDED.  Before the fix CPU0's unit
 * went in live and its trace came back empty.
 */
TEST_F_TIMEOUT(life, suspend_stops_and_restarts, 300)
{
	struct ipt_trace_state ts;
	uint64_t before[128], sleeps[128];
	int cpu, n = nr_cpus() < 128 ? nr_cpus() : 128, ret;

	if (!can_suspend())
		SKIP(return, "no suspend to mem with pm_test here (see suspend_hook)");
	cfg_all(&self->cfg, self->mask, 16 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &self->cfg));
	for (cpu = 0; cpu < n; cpu++)
		before[cpu] = ipt_sim_stat(cpu, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	for (cpu = 0; cpu < n; cpu++)
		ASSERT_EQ(0, ipt_sim_wait_stat(cpu, "bytes", before[cpu] + 1));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	for (cpu = 0; cpu < n; cpu++) {
		ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
		before[cpu] = ts.bytes_captured;
		ASSERT_LT(0ULL, before[cpu]);
		sleeps[cpu] = ipt_sim_stat(cpu, "sleeps");
		ASSERT_NE(~0ULL, sleeps[cpu]);
	}
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));

	ASSERT_EQ(0, ipt_write_file("/sys/module/suspend/parameters/pm_test_delay", "0"));
	ASSERT_EQ(0, ipt_write_file("/sys/power/pm_test", "core"));
	ret = ipt_write_file("/sys/power/state", "mem");
	ipt_write_file("/sys/power/pm_test", "none");
	ASSERT_EQ(0, ret);

	for (cpu = 0; cpu < n; cpu++) {
		EXPECT_EQ(sleeps[cpu] + 1, ipt_sim_stat(cpu, "sleeps"));
		EXPECT_EQ(0ULL, ipt_sim_stat(cpu, "lost_live"))
			TH_LOG("cpu%d went into the sleep tracing", cpu);
		EXPECT_TRUE(sim_on(cpu)) TH_LOG("cpu%d not restarted", cpu);
	}
	for (cpu = 0; cpu < n; cpu++)
		ASSERT_EQ(0, ipt_sim_wait_stat(cpu, "bytes",
					       ipt_sim_stat(cpu, "bytes") + 1));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	for (cpu = 0; cpu < n; cpu++) {
		ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
		EXPECT_TRUE(ts.status & IPT_TS_SUSPENDED);
		EXPECT_FALSE(ts.status & IPT_TS_ERROR);
		EXPECT_LT(before[cpu], ts.bytes_captured)
			TH_LOG("cpu%d: %llu bytes before the sleep, %llu after",
			       cpu, (unsigned long long)before[cpu],
			       (unsigned long long)ts.bytes_captured);
	}
	EXPECT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * The PM notifier's work through the test hook, where the kernel cannot
 * suspend (the debug kernel has no CONFIG_SUSPEND): every unit off in
 * between, starts refused with EAGAIN, tracing restarted after and the
 * traces marked.
 */
TEST_F(life, suspend_hook)
{
	struct ipt_trace_state ts;
	int cpu;

	cfg_all(&self->cfg, self->mask, 16 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &self->cfg));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_write_file(IPT_DEBUGFS "/life_test", "suspend"));
	for (cpu = 0; cpu < nr_cpus(); cpu++)
		EXPECT_FALSE(sim_on(cpu)) TH_LOG("cpu%d still traces", cpu);
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_STATE_TRACING, ts.state);
	EXPECT_EQ(-EBUSY, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_EQ(-EAGAIN, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_write_file(IPT_DEBUGFS "/life_test", "resume"));
	/* Stopped by its owner meanwhile: it stays stopped. */
	for (cpu = 0; cpu < nr_cpus(); cpu++)
		EXPECT_FALSE(sim_on(cpu));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_write_file(IPT_DEBUGFS "/life_test", "suspend"));
	ASSERT_EQ(0, ipt_write_file(IPT_DEBUGFS "/life_test", "resume"));
	for (cpu = 0; cpu < nr_cpus(); cpu++)
		EXPECT_TRUE(sim_on(cpu)) TH_LOG("cpu%d not restarted", cpu);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	for (cpu = 0; cpu < nr_cpus(); cpu++) {
		ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
		EXPECT_TRUE(ts.status & IPT_TS_SUSPENDED);
	}
	EXPECT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/* A per-thread session for one thread: the caller, pinned to @cpu. */
static int thread_session(int fd, int cpu, uint64_t size)
{
	struct ipt_attach a = { .size = sizeof(a) };
	struct ipt_config c;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	ipt_cfg_thread(&c, size, 1);
	return ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c) ?:
	       ipt_ioctl(fd, IPT_IOC_ATTACH, &a);
}

/*
 * Per-thread mode through the PM notifier's work: the thread is unloaded
 * for the sleep (every unit off), loaded again after it, its trace marked.
 */
TEST_F(life, thread_suspend_hook)
{
	struct ipt_trace_state ts;
	int cpu;

	ASSERT_EQ(0, thread_session(self->fd, nr_cpus() - 1, 16 * KIB));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_write_file(IPT_DEBUGFS "/life_test", "suspend"));
	for (cpu = 0; cpu < nr_cpus(); cpu++)
		EXPECT_FALSE(sim_on(cpu)) TH_LOG("cpu%d still traces", cpu);
	ASSERT_EQ(0, ipt_write_file(IPT_DEBUGFS "/life_test", "resume"));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	for (cpu = 0; cpu < nr_cpus(); cpu++)
		EXPECT_FALSE(sim_on(cpu));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_TRUE(ts.status & IPT_TS_SUSPENDED);
	/* Loaded at the start and again, running, at the resume. */
	EXPECT_LE(2ULL, ts.switches);
	EXPECT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A stuck unit under a per-thread session: the switch-out (XSAVES or MSR
 * path) leaves TraceEn set, so release leaks the thread's buffer.
 */
TEST_F_TIMEOUT(life, thread_stuck_unit_keeps_its_buffer, 120)
{
	int cpu = nr_cpus() - 1;
	uint64_t bufs;
	char msg[160];

	bufs = ipt_file_stat(IPT_DEBUGFS "/leaked", "buffers");
	ASSERT_NE(~0ULL, bufs);
	ASSERT_EQ(0, thread_session(self->fd, cpu, 64 * KIB));
	ASSERT_EQ(0, cpu_knob(cpu, "stuck", "1"));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	EXPECT_TRUE(sim_on(cpu));
	EXPECT_LE(1ULL, ipt_sim_stat(cpu, "stops_ignored"));
	/* Only the first leak of a boot WARNs; this may be it. */
	snprintf(msg, sizeof(msg),
		 "ipt: CPU %d still traces after stop: leaking 1 buffers (65536 bytes)",
		 cpu);
	expect_warning(msg);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
	EXPECT_EQ(bufs + 1, ipt_file_stat(IPT_DEBUGFS "/leaked", "buffers"));
	ASSERT_EQ(0, cpu_knob(cpu, "stuck", "0"));
	EXPECT_FALSE(sim_on(cpu));
}

TEST_HARNESS_MAIN

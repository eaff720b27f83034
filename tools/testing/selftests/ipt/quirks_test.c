// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: CPU quirks of Broadwell, on the simulator's "bdw" model
 * (tools/testing/vm/guest-tests loads ipt_sim model=bdw for it):
 *
 *  - erratum BDM106: enabling with BranchEn = 0 is #GP, so ipt refuses a
 *    configuration without IPT_TRACE_BRANCH at IPT_IOC_CONFIGURE with
 *    EINVAL, as Linux's pt_event_valid() refuses the perf event, instead
 *    of failing IPT_IOC_START with EIO;
 *  - no configurable PSB (CPUID.(14H,0):EBX[1] = 0): a non-zero
 *    PacketByteCnt in IA32_RTIT_STATUS is #GP, so a restart (per CPU) or a
 *    thread's load after a switch must not write back the count it read.
 *
 * No instruction of ipt may fault on the way (the unit's #GP counter).
 * The "bdw" fixture skips unless the loaded unit is a Broadwell (family 6,
 * model 0x3d) with ToPA output.
 *
 * The "pti" fixture (guest-tests loads ipt_sim model=skl pti=1 pcid=1 for
 * it) checks the CR3 filter under page-table isolation: user mode runs on
 * the address space's CR3 | bit 12 (| bit 11 with PCIDs), so a CR3 filter
 * must match that value for a user-only trace to hold any branch.  It
 * skips unless the simulated kernel uses page-table isolation.
 *
 * The "vmx" fixture (on "bdw", whose IA32_VMX_MISC[14] is 0) checks VMX
 * operation without PT support: VMXON (the simulator's cpuN/vmxon, as KVM
 * runs it when a VM is created) clears TraceEn and makes every write of
 * IA32_RTIT_CTL #GP until VMXOFF.  A stop must not fail or fault on it
 * and must mark the trace IPT_TS_CUT; a start is refused with EBUSY; a
 * thread's loads are refused (busy) without a fault.
 *
 * The "hybrid" fixture (guest-tests loads ipt_sim model=adl: even CPUs are
 * P cores with 2 ranges, MTC 0x249, CYC 0x3fff; odd CPUs E cores with 1,
 * 0x9, 0xff) checks that the caps are the intersection of the online
 * CPUs' CPUID leaf 14H, that configurations beyond it are refused, and
 * that a CPU coming online with less than a session uses is not
 * programmed (per CPU) or not loaded (per thread), the trace marked
 * IPT_TS_CUT, without a #GP.  It needs CPUs 0 and 1.
 *
 * The "topa_change" fixture (guest-tests loads ipt_sim model=adl
 * e_topa_single=1: the E cores' ToPA tables hold one entry) checks a
 * configure whose unit changed its ToPA layout while it allocated, with
 * no lock held: with the E cores offline the buffers are laid out for
 * many-entry tables; the configure is parked in its allocation (debugfs
 * ipt_sim/alloc_gate), an E core comes online, and the configure then
 * fails with EAGAIN, its charged memory given back (VmPin 0) and its
 * threads' XSAVES areas freed (switch_stats xsave_areas).  The
 * "hybrid" fixture skips there: it runs on the plain adl model.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <time.h>

#include "ipt_lib.h"
#include "kselftest_harness.h"

#define KIB 1024ULL
#define MIB (1024 * KIB)

static int nr_cpus(void)
{
	return sysconf(_SC_NPROCESSORS_CONF);
}

/* #GP count of every simulated CPU. */
static uint64_t sim_gp(void)
{
	uint64_t sum = 0;
	int cpu;

	for (cpu = 0; cpu < nr_cpus(); cpu++)
		sum += ipt_sim_stat(cpu, "gp");
	return sum;
}

/*
 * This harness runs a test's body even when its FIXTURE_SETUP skipped:
 * each body returns at once when its fixture set @skip.
 */
#define SKIP_IF_SKIPPED() do { if (self->skip) return; } while (0)

/*
 * What each fixture's setup begins with.  *@fd is -1 and *@skip true
 * until it opened ipt, read its caps into @caps and @why_not returned
 * NULL: @why_not says why the loaded model is not the fixture's (the skip
 * reason), or NULL when it is.  Then it sets the unit's output rate and
 * takes the #GP count the teardown compares with (*@gp).  Returns whether
 * the fixture's tests run.
 */
static bool quirk_setup(struct __test_metadata *_metadata, bool *skip, int *fd,
			struct ipt_caps *caps, uint64_t *gp,
			const char *(*why_not)(const struct ipt_caps *caps))
{
	const char *why;

	*fd = -1;
	*skip = true;
	if (!ipt_sim_loaded())
		SKIP(return false, "the simulated unit (ipt_sim) is not loaded");
	*fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, *fd);
	caps->size = sizeof(*caps);
	ASSERT_EQ(0, ipt_ioctl(*fd, IPT_IOC_GET_CAPS, caps));
	why = why_not(caps);
	if (why) {
		close(*fd);
		*fd = -1;
		SKIP(return false, "%s", why);
	}
	*skip = false;
	ASSERT_EQ(0, ipt_sim_set_rate(1 * MIB));
	*gp = sim_gp();
	return true;
}

FIXTURE(bdw) {
	bool skip;
	int fd;
	struct ipt_caps caps;
	uint64_t gp;
};

static const char *not_bdw(const struct ipt_caps *caps)
{
	if (caps->family != 6 || caps->model != 0x3d ||
	    !(caps->features & IPT_FEAT_TOPA))
		return "not a Broadwell with ToPA (load ipt_sim model=bdw)";
	return NULL;
}

FIXTURE_SETUP(bdw)
{
	if (!quirk_setup(_metadata, &self->skip, &self->fd, &self->caps,
			 &self->gp, not_bdw))
		return;
	ASSERT_EQ(0, self->caps.features & IPT_FEAT_PSB_CYC);
}

FIXTURE_TEARDOWN(bdw)
{
	if (self->fd < 0)
		return;
	close(self->fd);
	if (self->skip)
		return;
	/* Nothing ipt did faulted. */
	EXPECT_EQ(self->gp, sim_gp());
}

/*
 * Sleep 1 ms at a time until trace @trace of @fd counts @want loads
 * (switches) or, with @busy, @want refused loads; at most 20000 sleeps
 * (>= 20 s).  A sleep need not switch the thread out (a timer that
 * expired before the task slept), so the count is waited for, not
 * assumed.  Returns 0, or -ETIMEDOUT.
 */
static int sleep_until(int fd, uint32_t trace, bool busy, uint64_t want)
{
	struct timespec d = { 0, 1000000 };
	struct ipt_trace_state ts;
	int i;

	for (i = 0; i < 20000; i++) {
		if (ipt_state(fd, trace, &ts))
			return -EIO;
		if ((busy ? ts.busy : ts.switches) >= want)
			return 0;
		nanosleep(&d, NULL);
	}
	return -ETIMEDOUT;
}

TEST_F(bdw, bdm106_refused_at_configure)
{
	struct ipt_trace_state ts;
	uint64_t mask[1] = { 0 };
	struct ipt_config c;

	SKIP_IF_SKIPPED();

	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	c.trace_flags &= ~IPT_TRACE_BRANCH;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	/* Nothing configured: the file has no session. */
	EXPECT_EQ(-EINVAL, ipt_cmd(self->fd, IPT_IOC_START));
	EXPECT_NE(0, ipt_state(self->fd, 0, &ts));

	/* Per-thread sessions alike. */
	ipt_cfg_thread(&c, 64 * KIB, 1);
	c.trace_flags = IPT_TRACE_USER | IPT_TRACE_TSC;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));

	/* With BranchEn it configures, starts and traces. */
	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_LT(0ULL, ts.bytes_captured);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * Stop and start again: the STATUS ipt read at the stop holds a non-zero
 * PacketByteCnt (the disable's own packets came after the last PSB), which
 * this unit does not let software write.  The restart must work, and the
 * unit writes a PSB+ at it, which is where the new bytes begin.
 */
TEST_F(bdw, restart_without_configurable_psb)
{
	struct ipt_trace_state ts;
	uint64_t mask[1] = { 0 }, head;
	struct ipt_config c;
	const uint8_t *buf;
	int round;

	SKIP_IF_SKIPPED();

	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	c.buffer_flags = IPT_BUFFER_STOP_ON_FULL;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	buf = mmap(NULL, ts.buffer_size, PROT_READ, MAP_SHARED, self->fd, ts.mmap_offset);
	ASSERT_NE(MAP_FAILED, buf);
	head = 0;
	for (round = 0; round < 3; round++) {
		uint64_t from = ipt_sim_stat(0, "bytes");

		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START)) TH_LOG("start %d", round);
		/*
		 * Some of the workload's own output too, not just the PSB+
		 * (the unit's own counter: a per-CPU trace's state is as of
		 * its last stop).
		 */
		ASSERT_EQ(0, ipt_sim_wait_stat(0, "bytes", from + 65));
		ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
		ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
		EXPECT_EQ(0, ts.status & (IPT_TS_ERROR | IPT_TS_FULL));
		ASSERT_LT(head + 16, ts.head);
		EXPECT_TRUE(ipt_is_psb(buf + head, ts.head - head))
			TH_LOG("round %d: the bytes at %llu are not a PSB", round,
			       (unsigned long long)head);
		head = ts.head;
	}
	munmap((void *)buf, ts.buffer_size);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A traced thread that sleeps is switched out (ipt reads STATUS) and in
 * again (ipt writes it): on the MSR path (bdw has no XSAVES for PT) the
 * load must not write the count back.
 */
TEST_F(bdw, thread_switches_without_configurable_psb)
{
	struct ipt_attach a = { .size = sizeof(a) };
	struct ipt_trace_state ts;
	struct ipt_config c;

	SKIP_IF_SKIPPED();

	ipt_cfg_thread(&c, 64 * KIB, 1);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_ATTACH, &a));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	/* Sleeps switch the thread out and in: 20 loads. */
	ASSERT_EQ(0, sleep_until(self->fd, a.trace, false, 20));
	ASSERT_EQ(0, ipt_state(self->fd, a.trace, &ts));
	EXPECT_LE(20ULL, ts.switches);
	EXPECT_EQ(0ULL, ts.busy);
	EXPECT_EQ(0, ts.status & IPT_TS_ERROR);
	EXPECT_LT(0ULL, ts.bytes_captured);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

FIXTURE(pti) {
	bool skip;
	int fd;
	struct ipt_caps caps;
	uint64_t code_cr3;
	uint64_t user_cr3;
	uint64_t gp;
};

static const char *not_pti(const struct ipt_caps *caps)
{
	if (ipt_file_stat(IPT_SIM_DEBUGFS "/model", "pti") != 1)
		return "no page-table isolation (load ipt_sim pti=1)";
	return NULL;
}

FIXTURE_SETUP(pti)
{
	if (!quirk_setup(_metadata, &self->skip, &self->fd, &self->caps,
			 &self->gp, not_pti))
		return;
	ASSERT_NE(0, self->caps.features & IPT_FEAT_CR3_FILTER);
	ASSERT_NE(0, self->caps.platform & IPT_PLAT_PTI);
	EXPECT_EQ(ipt_file_stat(IPT_SIM_DEBUGFS "/model", "pcid") == 1,
		  !!(self->caps.platform & IPT_PLAT_PCID));
	self->code_cr3 = ipt_file_stat(IPT_SIM_DEBUGFS "/model", "code_cr3");
	self->user_cr3 = ipt_file_stat(IPT_SIM_DEBUGFS "/model", "user_cr3");
	ASSERT_NE(~0ULL, self->code_cr3);
	ASSERT_NE(~0ULL, self->user_cr3);
	/* The model's premise: user mode runs on another CR3. */
	ASSERT_NE(self->code_cr3 >> 5, self->user_cr3 >> 5);
}

FIXTURE_TEARDOWN(pti)
{
	if (self->fd < 0)
		return;
	close(self->fd);
	EXPECT_EQ(self->gp, sim_gp());
}

static uint64_t sim_bytes(void)
{
	uint64_t sum = 0;
	int cpu;

	for (cpu = 0; cpu < nr_cpus(); cpu++)
		sum += ipt_sim_stat(cpu, "bytes");
	return sum;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* TNT-8 packets (the workload's branches) among whole packets of @p. */
static unsigned long count_tnt(const uint8_t *p, size_t n)
{
	unsigned long tnt = 0;
	size_t off = 0;

	while (off < n) {
		int len = ipt_pkt_len(p + off, n - off);

		if (len <= 0)
			break;
		if (len == 1 && p[off] && !(p[off] & 1))
			tnt++;
		off += len;
	}
	return tnt;
}

/*
 * A per-thread, user-only trace filtered on the address space's CR3 (as
 * the kernel runs on it): ipt must program the user-mode CR3, or the
 * filter never matches and the trace holds no branch at all.  The thread
 * spins (it is traced only while it runs) until the unit wrote 8 KiB or
 * 20 s passed.
 */
TEST_F(pti, thread_cr3_filter_user)
{
	struct ipt_attach a = { .size = sizeof(a) };
	struct ipt_trace_state ts;
	struct ipt_config c;
	const uint8_t *buf;
	uint64_t from, n;
	unsigned long tnt;
	double end;

	SKIP_IF_SKIPPED();

	ipt_cfg_thread(&c, 64 * KIB, 1);
	c.trace_flags |= IPT_TRACE_CR3_FILTER;
	c.cr3_match = self->code_cr3;
	c.buffer_flags = IPT_BUFFER_STOP_ON_FULL;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_ATTACH, &a));
	from = sim_bytes();
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	end = now_s() + 20;
	while (sim_bytes() - from < 8 * KIB && now_s() < end)
		;
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, a.trace, &ts));
	EXPECT_EQ(0, ts.status & IPT_TS_ERROR);
	EXPECT_LE(8 * KIB, ts.bytes_captured);
	n = ts.head < ts.buffer_size ? ts.head : ts.buffer_size;
	buf = mmap(NULL, ts.buffer_size, PROT_READ, MAP_SHARED, self->fd, ts.mmap_offset);
	ASSERT_NE(MAP_FAILED, buf);
	tnt = count_tnt(buf, n);
	munmap((void *)buf, ts.buffer_size);
	EXPECT_LT(1000UL, tnt) TH_LOG("%lu TNT packets in %llu bytes", tnt,
				      (unsigned long long)n);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * One CR3_MATCH value matches either the user or the kernel half under
 * page-table isolation: a filter for both modes is refused, as is a
 * kernel-only filter on a user-mode CR3; a user-only one may name either.
 */
TEST_F(pti, cr3_filter_modes)
{
	uint64_t mask[1] = { 1 };
	struct ipt_config c;

	SKIP_IF_SKIPPED();

	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	c.trace_flags |= IPT_TRACE_KERNEL | IPT_TRACE_CR3_FILTER;
	c.cr3_match = self->code_cr3;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	EXPECT_EQ(-EINVAL, ipt_cmd(self->fd, IPT_IOC_START));

	c.trace_flags &= ~IPT_TRACE_USER;
	c.cr3_match = self->user_cr3 & ~0x1fULL;
	EXPECT_EQ(-EINVAL, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));

	c.cr3_match = self->code_cr3;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	c.trace_flags |= IPT_TRACE_CR3_FILTER;
	c.cr3_match = self->user_cr3 & ~0x1fULL;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

FIXTURE(vmx) {
	bool skip;
	int fd;
	struct ipt_caps caps;
	uint64_t gp;
};

static const char *not_vmx_no_pt(const struct ipt_caps *caps)
{
	if (!(caps->platform & IPT_PLAT_VMX_NO_PT))
		return "PT works in VMX operation here (load ipt_sim model=bdw)";
	return NULL;
}

FIXTURE_SETUP(vmx)
{
	quirk_setup(_metadata, &self->skip, &self->fd, &self->caps, &self->gp,
		    not_vmx_no_pt);
}

/* VMXON (1) or VMXOFF (0) on CPU @cpu, or on every CPU for -1. */
static int sim_vmxon(int cpu, int on)
{
	char path[128];
	int c, ret = 0;

	for (c = cpu < 0 ? 0 : cpu; c < (cpu < 0 ? nr_cpus() : cpu + 1); c++) {
		snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/vmxon", c);
		ret = ret ?: ipt_write_file(path, on ? "1" : "0");
	}
	return ret;
}

FIXTURE_TEARDOWN(vmx)
{
	if (self->fd < 0)
		return;
	close(self->fd);
	if (self->skip)
		return;
	EXPECT_EQ(0, sim_vmxon(-1, 0));
	/* Nothing ipt did faulted: no write of CTL in VMX operation. */
	EXPECT_EQ(self->gp, sim_gp());
}

/*
 * A per-CPU trace that VMXON switched off: the stop reads the position
 * (the bytes up to VMXON are there), does not fault, and marks the trace
 * cut; a start in VMX operation is EBUSY; after VMXOFF it traces again.
 */
TEST_F(vmx, cpu_trace_cut_by_vmxon)
{
	struct ipt_trace_state ts;
	uint64_t mask[1] = { 0 }, from, head;
	struct ipt_config c;

	SKIP_IF_SKIPPED();
	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	from = ipt_sim_stat(0, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_sim_wait_stat(0, "bytes", from + 1025));
	from = ipt_sim_stat(0, "vmxon_cleared");
	ASSERT_EQ(0, sim_vmxon(0, 1));
	/* The model's premise: VMXON cleared TraceEn. */
	ASSERT_EQ(from + 1, ipt_sim_stat(0, "vmxon_cleared"));

	EXPECT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_NE(0, ts.status & IPT_TS_CUT);
	EXPECT_EQ(0, ts.status & (IPT_TS_RUNNING | IPT_TS_ERROR));
	EXPECT_LE(1024ULL, ts.bytes_captured);
	head = ts.head;

	/* Still in VMX operation: the unit cannot be enabled. */
	EXPECT_EQ(-EBUSY, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(0, ts.status & IPT_TS_RUNNING);

	/* VMXOFF: it traces again, on from where it was cut. */
	ASSERT_EQ(0, sim_vmxon(0, 0));
	from = ipt_sim_stat(0, "bytes");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_sim_wait_stat(0, "bytes", from + 1025));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_LT(head + 1024, ts.head);
	EXPECT_NE(0, ts.status & IPT_TS_CUT);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * A traced thread while every CPU enters VMX operation: the unload of its
 * cleared unit reads the position without a fault, its loads are refused
 * (busy) until VMXOFF, and the trace is marked cut.
 */
TEST_F(vmx, thread_cut_by_vmxon)
{
	struct ipt_attach a = { .size = sizeof(a) };
	struct ipt_trace_state ts;
	struct ipt_config c;
	uint64_t before;

	SKIP_IF_SKIPPED();
	ipt_cfg_thread(&c, 64 * KIB, 1);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_ATTACH, &a));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, sleep_until(self->fd, a.trace, false, 3));
	ASSERT_EQ(0, ipt_state(self->fd, a.trace, &ts));
	EXPECT_EQ(0, ts.status & IPT_TS_CUT);
	before = ts.bytes_captured;
	EXPECT_LT(0ULL, before);

	/* This thread is loaded while it writes: VMXON cuts it. */
	ASSERT_EQ(0, sim_vmxon(-1, 1));
	ASSERT_EQ(0, sleep_until(self->fd, a.trace, true, 3));
	ASSERT_EQ(0, ipt_state(self->fd, a.trace, &ts));
	EXPECT_NE(0, ts.status & IPT_TS_CUT);
	EXPECT_LE(before, ts.bytes_captured);

	ASSERT_EQ(0, sim_vmxon(-1, 0));
	before = ts.bytes_captured;
	ASSERT_EQ(0, sleep_until(self->fd, a.trace, false, ts.switches + 3));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_state(self->fd, a.trace, &ts));
	EXPECT_LT(before, ts.bytes_captured);
	EXPECT_EQ(0, ts.status & IPT_TS_ERROR);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

#define E_TOPA_SINGLE	"/sys/module/ipt_sim/parameters/e_topa_single"
#define GATE		"/sys/kernel/debug/ipt_sim/alloc_gate"
#define MLOCK_KB_PARAM	"/sys/module/ipt/parameters/mlock_kb"
#define SWITCH_STATS	"/sys/kernel/debug/ipt/switch_stats"
/* Bound of every wait for an event: generous, never reached when all is well. */
#define WAIT_MS		20000

/* ipt_sim was loaded with e_topa_single=1. */
static bool e_topa_single(void)
{
	char buf[8] = "";
	FILE *f = fopen(E_TOPA_SINGLE, "r");

	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return buf[0] == 'Y';
}

FIXTURE(hybrid) {
	bool skip;
	int fd;
	struct ipt_caps caps;
	uint64_t gp;
};

static const char *not_hybrid(const struct ipt_caps *caps)
{
	if (caps->model != 0x9a)
		return "not the hybrid model (load ipt_sim model=adl)";
	if (nr_cpus() < 2)
		return "needs CPUs 0 and 1";
	if (e_topa_single())
		return "e_topa_single: the topa_change fixture's";
	return NULL;
}

FIXTURE_SETUP(hybrid)
{
	quirk_setup(_metadata, &self->skip, &self->fd, &self->caps, &self->gp,
		    not_hybrid);
}

FIXTURE_TEARDOWN(hybrid)
{
	if (self->fd < 0)
		return;
	close(self->fd);
	if (self->skip)
		return;
	EXPECT_EQ(0, ipt_cpu_online_set(1, 1));
	/* Nothing ipt did faulted: no E core got what it lacks. */
	EXPECT_EQ(self->gp, sim_gp());
}

static int get_caps(int fd, struct ipt_caps *caps)
{
	memset(caps, 0, sizeof(*caps));
	caps->size = sizeof(*caps);
	return ipt_ioctl(fd, IPT_IOC_GET_CAPS, caps);
}

/* A TraceStop range far from the workload: it only uses ADDRn. */
static void use_range(struct ipt_config *c, int n)
{
	c->ranges[n].kind = IPT_RANGE_STOP;
	c->ranges[n].start = 0x10000;
	c->ranges[n].end = 0x10fff;
}

/* With both core types online the caps are their intersection. */
TEST_F(hybrid, caps_are_the_intersection)
{
	uint64_t mask[1] = { 3 };
	struct ipt_trace_state ts;
	struct ipt_config c;
	int cpu;

	SKIP_IF_SKIPPED();
	EXPECT_NE(0, self->caps.platform & IPT_PLAT_HYBRID);
	EXPECT_EQ(1, self->caps.num_addr_ranges);
	EXPECT_EQ(0x9, self->caps.mtc_freq_mask);
	EXPECT_EQ(0xff, self->caps.cyc_thresh_mask);
	EXPECT_EQ(0x3f, self->caps.psb_freq_mask);

#define TRY(err, stmt) do {						\
		ipt_cfg_cpu(&c, mask, 0, 64 * KIB);			\
		mask[0] = 3;						\
		stmt;							\
		EXPECT_EQ(err, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c)) \
			TH_LOG("%s", #stmt);				\
		if (!err)						\
			ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE)); \
	} while (0)
	/* What only the P cores have. */
	TRY(-EOPNOTSUPP, use_range(&c, 1));
	TRY(-EOPNOTSUPP, c.trace_flags |= IPT_TRACE_MTC; c.mtc_freq = 6);
	TRY(-EOPNOTSUPP, c.trace_flags |= IPT_TRACE_CYC; c.cyc_thresh = 9);
	TRY(-EOPNOTSUPP, c.mode = IPT_MODE_THREAD; c.max_threads = 1;
	    c.cpu_mask_words = 0; c.cpu_mask_ptr = 0; use_range(&c, 1));
#undef TRY

	/* What both have configures, and runs on both without a #GP. */
	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	mask[0] = 3;
	use_range(&c, 0);
	c.trace_flags |= IPT_TRACE_MTC | IPT_TRACE_CYC;
	c.mtc_freq = 3;
	c.cyc_thresh = 7;
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	for (cpu = 0; cpu < 2; cpu++) {
		ASSERT_EQ(0, ipt_state(self->fd, cpu, &ts));
		EXPECT_EQ(0, ts.status & (IPT_TS_CUT | IPT_TS_ERROR));
		EXPECT_LT(0ULL, ts.bytes_captured);
	}
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/*
 * With the E core offline the caps are the P core's; a session uses a
 * second range.  When the E core comes online it is not programmed (its
 * trace is cut), the caps narrow again, and nothing faults.
 */
TEST_F(hybrid, cpu_online_with_fewer_caps)
{
	uint64_t mask[1] = { 3 };
	struct ipt_trace_state ts;
	struct ipt_config c;
	struct ipt_caps caps;

	SKIP_IF_SKIPPED();
	ASSERT_EQ(0, ipt_cpu_online_set(1, 0));
	ASSERT_EQ(0, get_caps(self->fd, &caps));
	EXPECT_EQ(2, caps.num_addr_ranges);
	EXPECT_EQ(0, caps.platform & IPT_PLAT_HYBRID);

	ipt_cfg_cpu(&c, mask, 0, 64 * KIB);
	mask[0] = 3;
	use_range(&c, 1);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_cpu_online_set(1, 1));

	ASSERT_EQ(0, get_caps(self->fd, &caps));
	EXPECT_EQ(1, caps.num_addr_ranges);
	EXPECT_NE(0, caps.platform & IPT_PLAT_HYBRID);
	ASSERT_EQ(0, ipt_state(self->fd, 1, &ts));
	EXPECT_EQ(0, ts.status & IPT_TS_RUNNING);
	EXPECT_NE(0, ts.status & IPT_TS_CUT);
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_NE(0, ts.status & IPT_TS_RUNNING);
	EXPECT_EQ(0, ts.status & IPT_TS_CUT);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	/* Both online now: the E core still cannot run it. */
	EXPECT_EQ(-EOPNOTSUPP, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

/* Pin the calling thread to @cpu. */
static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/*
 * A per-thread session configured with the E core offline uses a second
 * range: on the E core the thread is not loaded (busy, cut), on the P core
 * it is.
 */
TEST_F(hybrid, thread_on_core_with_fewer_caps)
{
	struct ipt_attach a = { .size = sizeof(a) };
	struct ipt_trace_state ts;
	struct ipt_config c;
	uint64_t switches;

	SKIP_IF_SKIPPED();
	ASSERT_EQ(0, pin(0));
	ASSERT_EQ(0, ipt_cpu_online_set(1, 0));
	ipt_cfg_thread(&c, 64 * KIB, 1);
	use_range(&c, 1);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_ATTACH, &a));
	ASSERT_EQ(0, ipt_cpu_online_set(1, 1));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, sleep_until(self->fd, a.trace, false, 2));
	ASSERT_EQ(0, ipt_state(self->fd, a.trace, &ts));
	EXPECT_EQ(0, ts.status & IPT_TS_CUT);

	ASSERT_EQ(0, pin(1));
	ASSERT_EQ(0, sleep_until(self->fd, a.trace, true, 2));
	ASSERT_EQ(0, ipt_state(self->fd, a.trace, &ts));
	EXPECT_NE(0, ts.status & IPT_TS_CUT);
	switches = ts.switches;

	ASSERT_EQ(0, pin(0));
	ASSERT_EQ(0, sleep_until(self->fd, a.trace, false, switches + 2));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));
}

FIXTURE(topa_change) {
	bool skip;
	int fd;
	char mlock_kb[32];
	bool offlined[64];
};

FIXTURE_SETUP(topa_change)
{
	struct ipt_caps caps = { .size = sizeof(caps) };
	FILE *f;

	self->fd = -1;
	self->skip = true;
	if (!ipt_sim_loaded())
		SKIP(return, "the simulated unit (ipt_sim) is not loaded");
	if (!e_topa_single())
		SKIP(return, "needs ipt_sim model=adl e_topa_single=1");
	if (geteuid())
		SKIP(return, "must run as root");
	if (nr_cpus() < 2)
		SKIP(return, "needs CPUs 0 and 1");
	self->fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &caps));
	ASSERT_EQ(0x9a, caps.model);
	ASSERT_EQ(0, access(GATE, W_OK));
	f = fopen(MLOCK_KB_PARAM, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(self->mlock_kb, sizeof(self->mlock_kb), f));
	fclose(f);
	self->skip = false;
}

FIXTURE_TEARDOWN(topa_change)
{
	int cpu;

	if (self->fd >= 0)
		close(self->fd);
	if (self->skip)
		return;
	ipt_write_file(GATE, "open");
	for (cpu = 1; cpu < nr_cpus() && cpu < 64; cpu += 2)
		if (self->offlined[cpu])
			EXPECT_EQ(0, ipt_cpu_online_set(cpu, 1));
	ipt_write_file(MLOCK_KB_PARAM, self->mlock_kb);
}

/* The gate reads @want within WAIT_MS: 0, else -1. */
static int gate_wait(const char *want)
{
	char buf[32];
	int i;

	for (i = 0; i < WAIT_MS / 10; i++) {
		FILE *f = fopen(GATE, "r");

		buf[0] = '\0';
		if (f) {
			if (!fgets(buf, sizeof(buf), f))
				buf[0] = '\0';
			fclose(f);
		}
		buf[strcspn(buf, "\n")] = '\0';
		if (!strcmp(buf, want))
			return 0;
		usleep(10000);
	}
	return -1;
}

/*
 * Configured while only P cores (many-entry ToPA) are online, parked in
 * its allocation; an E core (one entry) comes online meanwhile: EAGAIN,
 * and nothing of what it charged stays pinned.  The allowance is 0, so
 * every page charged shows in VmPin.
 */
TEST_F_TIMEOUT(topa_change, configure_eagain_when_layout_changes, 120)
{
	struct pollfd pfd = { .events = POLLIN };
	struct ipt_caps caps;
	struct ipt_config c;
	long pin_parked, res[2] = { 1, -1 };
	uint64_t areas;
	int p[2], cpu;
	pid_t pid;

	SKIP_IF_SKIPPED();
	for (cpu = 1; cpu < nr_cpus() && cpu < 64; cpu += 2) {
		char path[64], on = '1';
		FILE *f;

		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%d/online", cpu);
		f = fopen(path, "r");
		if (f) {
			on = fgetc(f);
			fclose(f);
		}
		if (on == '1') {
			ASSERT_EQ(0, ipt_cpu_online_set(cpu, 0));
			self->offlined[cpu] = true;
		}
	}
	ASSERT_TRUE(self->offlined[1]);
	ASSERT_EQ(0, get_caps(self->fd, &caps));
	ASSERT_NE(0, caps.features & IPT_FEAT_TOPA_MULTI) TH_LOG("P cores only");
	ASSERT_EQ(0, ipt_write_file(MLOCK_KB_PARAM, "0"));
	areas = ipt_file_stat(SWITCH_STATS, "xsave_areas");
	ASSERT_NE(~0ULL, areas);

	ipt_cfg_thread(&c, 64 * KIB, 2);
	c.trace_flags = IPT_TRACE_USER | IPT_TRACE_BRANCH;
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, ipt_write_file(GATE, "arm"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);

		res[0] = fd < 0 ? -errno : ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c);
		res[1] = ipt_vm_pin_kb(getpid());
		_exit(write(p[1], res, sizeof(res)) == sizeof(res) ? 0 : 1);
	}
	close(p[1]);
	pfd.fd = p[0];
	EXPECT_EQ(0, gate_wait("parked")) TH_LOG("the configure never reached the gate");
	pin_parked = ipt_vm_pin_kb(pid);
	EXPECT_EQ(0, ipt_cpu_online_set(1, 1));
	self->offlined[1] = false;
	EXPECT_EQ(0, get_caps(self->fd, &caps));
	EXPECT_EQ(0, caps.features & IPT_FEAT_TOPA_MULTI) TH_LOG("an E core is online");
	ipt_write_file(GATE, "open");
	if (poll(&pfd, 1, WAIT_MS) != 1 ||
	    read(p[0], res, sizeof(res)) != sizeof(res))
		res[0] = -ETIMEDOUT;
	close(p[0]);
	waitpid(pid, NULL, 0);

	EXPECT_EQ(128, pin_parked) TH_LOG("charged before allocating: VmPin %ld KiB", pin_parked);
	EXPECT_EQ(-EAGAIN, res[0]) TH_LOG("the configure: %ld (%s)", res[0],
					  strerror((int)-res[0]));
	EXPECT_EQ(0, res[1]) TH_LOG("VmPin %ld KiB after the refused configure", res[1]);
	EXPECT_EQ(areas, ipt_file_stat(SWITCH_STATS, "xsave_areas"))
		TH_LOG("XSAVES areas of the refused configure left allocated");
}

TEST_HARNESS_MAIN

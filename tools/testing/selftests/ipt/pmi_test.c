// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: the ToPA PMI on a platform shared with perf.  The simulated
 * unit models what silicon does around the PMI (ipt_sim_nmi.c): the
 * local APIC masks its performance-counter LVT entry at each delivery and
 * drops a PMI raised while it is masked, and the NMI chain runs its
 * handlers in registration order, where a perf-like handler (debugfs
 * "perf_nmi", registered as perf's, at the tail) acknowledges every bit of
 * IA32_PERF_GLOBAL_STATUS, bit 55 included.  A small ring wraps several
 * times; its wrap count must equal what the unit wrote, with and without
 * the perf-like handler; a PMI the LVT dropped must be reported, and the
 * LVT re-armed.  Skips on units with single-entry ToPA (topa1_test).
 */
#define _GNU_SOURCE
#include "ipt_lib.h"
#include "kselftest_harness.h"

#define KIB 1024ULL
#define MIB (1024 * KIB)
#define RING (8 * KIB)

static int set_perf_nmi(int on)
{
	return ipt_write_file(IPT_SIM_DEBUGFS "/perf_nmi", on ? "1" : "0");
}

static int sim_write(int cpu, const char *file, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), IPT_SIM_DEBUGFS "/cpu%d/%s", cpu, file);
	return ipt_write_file(path, val);
}

/* The unit's counters a test compares before and after. */
struct counts {
	uint64_t bytes, pmis, masked, perf_topa, lost, lvt_early, op_errors;
};

static void counts(int cpu, struct counts *c)
{
	c->bytes = ipt_sim_stat(cpu, "bytes");
	c->pmis = ipt_sim_stat(cpu, "pmis");
	c->masked = ipt_sim_stat(cpu, "pmis_masked");
	c->perf_topa = ipt_sim_stat(cpu, "perf_topa");
	c->lost = ipt_sim_stat(cpu, "pmis_lost");
	c->op_errors = ipt_sim_stat(cpu, "op_errors");
	c->lvt_early = ipt_sim_stat(cpu, "lvt_early");
}

FIXTURE(pmi) {
	int fd;
	struct ipt_caps caps;
};

FIXTURE_SETUP(pmi)
{
	self->fd = -1;
	if (!ipt_sim_loaded())
		SKIP(return, "the simulated unit (ipt_sim) is not loaded");
	if (access(IPT_SIM_DEBUGFS "/perf_nmi", W_OK))
		SKIP(return, "ipt_sim does not model the NMI chain");
	self->fd = open(IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->caps.size = sizeof(self->caps);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_GET_CAPS, &self->caps));
	if (!(self->caps.features & IPT_FEAT_TOPA_MULTI))
		SKIP(return, "single-entry ToPA (topa1_test covers its PMI)");
	/* 1 KiB a 1 ms period: a PMI every ~8 ms, each handled in time. */
	ASSERT_EQ(0, ipt_sim_set_rate(1 * MIB));
	ASSERT_EQ(0, set_perf_nmi(0));
}

FIXTURE_TEARDOWN(pmi)
{
	if (self->fd >= 0)
		close(self->fd);
	set_perf_nmi(0);
	ipt_sim_set_rate(1 * MIB);
}

/*
 * Trace an 8 KiB ring on CPU 0 until it wrapped @laps times and stop:
 * wrap count, position and bytes must match what the unit wrote exactly,
 * every PMI it raised must have been delivered (none dropped by a masked
 * LVT) and taken by ipt (none acknowledged by the perf-like handler
 * first), and the LVT never unmasked while perf's bits were pending.
 */
static void ring_laps(struct __test_metadata *_metadata, int fd, int laps,
		      int pmc_overflows)
{
	uint64_t mask[1] = { 0 };
	struct ipt_trace_state ts;
	struct ipt_config c;
	struct counts b, a;
	int i;

	ipt_cfg_cpu(&c, mask, 0, RING);
	ASSERT_EQ(0, ipt_ioctl(fd, IPT_IOC_CONFIGURE, &c));
	counts(0, &b);
	ASSERT_EQ(0, ipt_cmd(fd, IPT_IOC_START));
	for (i = 1; i <= laps; i++) {
		ASSERT_EQ(0, ipt_sim_wait_stat(0, "bytes", b.bytes + i * RING + RING / 2))
			TH_LOG("the unit did not write %d laps", i);
		/* perf's own counter overflows now and then: its PMI, its bit. */
		if (i <= pmc_overflows)
			ASSERT_EQ(0, sim_write(0, "pmc0_ovf", "1"));
	}
	ASSERT_EQ(0, ipt_cmd(fd, IPT_IOC_STOP));
	counts(0, &a);
	ASSERT_EQ(0, ipt_state(fd, 0, &ts));
	EXPECT_EQ(IPT_TS_WRAPPED, ts.status);
	EXPECT_EQ(a.bytes - b.bytes, ts.bytes_captured);
	EXPECT_EQ(ts.bytes_captured / RING, ts.wrap_count)
		TH_LOG("%llu bytes, %llu wraps, %llu PMIs raised, %llu dropped by the LVT, %llu acked by perf",
		       (unsigned long long)ts.bytes_captured,
		       (unsigned long long)ts.wrap_count,
		       (unsigned long long)(a.pmis - b.pmis),
		       (unsigned long long)(a.masked - b.masked),
		       (unsigned long long)(a.perf_topa - b.perf_topa));
	EXPECT_EQ(ts.bytes_captured % RING, ts.head);
	EXPECT_LE((uint64_t)laps, ts.wrap_count);
	EXPECT_EQ(a.pmis - b.pmis, ts.wrap_count);
	EXPECT_EQ(0, a.masked - b.masked);
	EXPECT_EQ(0, a.perf_topa - b.perf_topa);
	EXPECT_EQ(0, a.lost - b.lost);
	EXPECT_EQ(0, a.lvt_early - b.lvt_early);
	EXPECT_EQ(0, ipt_sim_stat(0, "lvt_masked"));
	/* the unit's counters live as long as ipt_sim: earlier tests count too */
	EXPECT_EQ(0, a.op_errors - b.op_errors);
	ASSERT_EQ(0, ipt_cmd(fd, IPT_IOC_RELEASE));
}

/* Several PMIs in a row: each delivery masks the LVT, ipt re-arms it. */
TEST_F_TIMEOUT(pmi, several_pmis_in_a_row, 120)
{
	ring_laps(_metadata, self->fd, 6, 0);
}

/*
 * The NMI watchdog or any perf event on: perf's handler, registered
 * before ipt's, acknowledges all of GLOBAL_STATUS; ipt is first in the
 * chain all the same and counts every wrap.  perf's own counter
 * overflows go on being perf's.
 */
TEST_F_TIMEOUT(pmi, perf_handler_in_the_chain, 120)
{
	ASSERT_EQ(0, set_perf_nmi(1));
	ring_laps(_metadata, self->fd, 6, 2);
}

/*
 * A PMI the LVT dropped (masked by someone else's PMI that was not
 * re-armed) cannot be counted when it happens, but it is not silent: the
 * stop finds bit 55 still set, counts it, reports IPT_TS_PMI_LATE (the
 * wrap count is a lower bound) and re-arms the LVT, so that the next
 * session counts exactly again.
 */
TEST_F_TIMEOUT(pmi, dropped_pmi_is_reported_and_the_lvt_rearmed, 120)
{
	uint64_t mask[1] = { 0 };
	struct ipt_trace_state ts;
	struct ipt_config c;
	struct counts b, a;

	ipt_cfg_cpu(&c, mask, 0, RING);
	ASSERT_EQ(0, ipt_ioctl(self->fd, IPT_IOC_CONFIGURE, &c));
	counts(0, &b);
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_START));
	ASSERT_EQ(0, ipt_sim_wait_stat(0, "bytes", b.bytes + RING + RING / 2));
	ASSERT_EQ(0, sim_write(0, "lvt_mask", "1"));
	ASSERT_EQ(0, ipt_sim_wait_stat(0, "pmis_masked", b.masked + 2))
		TH_LOG("no PMI was dropped by the masked LVT");
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_STOP));
	counts(0, &a);
	ASSERT_EQ(0, ipt_state(self->fd, 0, &ts));
	EXPECT_EQ(IPT_TS_WRAPPED | IPT_TS_PMI_LATE, ts.status);
	/* One delivered, one taken at stop; the others are missing. */
	EXPECT_LE(2, ts.wrap_count);
	EXPECT_GT((a.bytes - b.bytes) / RING, ts.wrap_count);
	EXPECT_EQ(0, ipt_sim_stat(0, "lvt_masked"));
	EXPECT_EQ(0, ipt_sim_stat(0, "global_status"));
	ASSERT_EQ(0, ipt_cmd(self->fd, IPT_IOC_RELEASE));

	/* The LVT is armed again: exact counts, nothing reported. */
	ring_laps(_metadata, self->fd, 3, 0);
}

TEST_HARNESS_MAIN

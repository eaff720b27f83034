// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit test of the live per-CPU units (ipt_sim_pcpu.c): through the
 * registered operations, as ipt.ko uses them, the output timer fills a
 * ToPA ring and delivers its PMI.
 */
#include <kunit/test.h>
#include <linux/bits.h>
#include <linux/completion.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/string.h>

#include "ipt_sim_test.h"

/*
 * The rate the test runs at, whatever debugfs "rate" says: with the
 * default 1 ms period, about 1 KiB a period, so the 8 KiB ring fills and
 * raises its PMI in some 8 ms.
 */
#define LIVE_RATE	SZ_1M

/* Completed by the PMI handler. */
static DECLARE_COMPLETION(live_done);

/*
 * Context: the ToPA PMI handler (hard interrupt context).  It does what a
 * handler must: acknowledge bit 55 and re-arm the LVT.
 */
static bool live_pmi(void)
{
	const struct ipt_hw_ops *ops = ipt_sim_live_ops();

	ops->write_msr(MSR_CORE_PERF_GLOBAL_OVF_CTRL,
		       GLOBAL_STATUS_TRACE_TOPAPMI);
	ops->pmi_unmask();
	complete(&live_done);
	return true;
}

static int live_wrmsr(const struct ipt_hw_ops *ops, u32 msr, u64 val)
{
	int ret;

	preempt_disable();
	ret = ops->write_msr(msr, val);
	preempt_enable();
	return ret;
}

static u64 live_rdmsr(struct kunit *test, const struct ipt_hw_ops *ops, u32 msr)
{
	u64 val = 0;
	int ret;

	preempt_disable();
	ret = ops->read_msr(msr, &val);
	preempt_enable();
	KUNIT_EXPECT_EQ(test, ret, 0);
	return val;
}

/*
 * Trace on this CPU through the registered operations into a two-region
 * ring whose second region has INT; the output timer fills it and the
 * PMI reaches the handler on this CPU, which acknowledges it.
 */
static void live_timer_pmi(struct kunit *test)
{
	const struct ipt_hw_ops *ops = ipt_sim_live_ops();
	struct ipt_cpuid_regs r;
	u64 tpa, pa0, pa1, st, rate;
	unsigned long left;
	u8 *r0, psb[16];
	u64 *table;

	ops->cpuid(IPT_CPUID_PT, 0, &r);
	if (!(r.ecx & BIT(1)))
		kunit_skip(test, "model without multi-entry ToPA");
	table = (u64 *)sim_mem(test, 0, &tpa);
	r0 = sim_mem(test, 0, &pa0);
	sim_mem(test, 0, &pa1);
	table[0] = topa_entry(pa0, 0, 0);
	table[1] = topa_entry(pa1, 0, IPT_TOPA_INT);
	table[2] = topa_entry(tpa, 0, IPT_TOPA_END);
	reinit_completion(&live_done);
	if (ops->pmi_request(live_pmi, IPT_PMI_FIRST))
		kunit_skip(test, "a PMI handler is installed already");

	rate = ipt_sim_live_rate(LIVE_RATE);
	migrate_disable();
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_BASE, tpa), 0);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_MASK, 0x7f), 0);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_STATUS, 0), 0);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_CTL, CTL_TOPA), 0);
	/* A live CTL change is refused. */
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_CTL,
					 CTL_TOPA | RTIT_CTL_OS), -EIO);
	/* A bound only: the PMI comes in milliseconds. */
	left = wait_for_completion_timeout(&live_done, 5 * HZ);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_CTL, 0), 0);
	st = live_rdmsr(test, ops, MSR_IA32_RTIT_STATUS);
	KUNIT_EXPECT_EQ(test, live_rdmsr(test, ops, MSR_CORE_PERF_GLOBAL_STATUS), 0ULL);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_STATUS, 0), 0);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_BASE, 0), 0);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_MASK, 0), 0);
	migrate_enable();
	ops->pmi_release();
	ipt_sim_live_rate(rate);

	KUNIT_EXPECT_NE_MSG(test, left, 0UL, "no PMI within 5 s");
	KUNIT_EXPECT_FALSE(test, st & RTIT_STATUS_ERROR);
	ipt_sim_pkt_psb(psb);
	KUNIT_EXPECT_EQ(test, memcmp(r0, psb, sizeof(psb)), 0);
}

/*
 * The output timer's rest after a tick: none (the next is on the period's
 * grid) after a short tick; after one longer than half a period, as long
 * as the tick took (the output keeps at most about half of its CPU in
 * hard interrupt context, Documentation/simulator.rst, "Timer"); in bulk
 * mode at most IPT_SIM_BULK_CATCH_UP / 2 periods.
 */
static void live_tick_rest(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, ipt_sim_tick_rest(1000000, 0, true), 0ULL);
	KUNIT_EXPECT_EQ(test, ipt_sim_tick_rest(1000000, 500000, false), 0ULL);
	KUNIT_EXPECT_EQ(test, ipt_sim_tick_rest(1000000, 500001, true), 500001ULL);
	KUNIT_EXPECT_EQ(test, ipt_sim_tick_rest(1000000, 1900000, true), 1900000ULL);
	KUNIT_EXPECT_EQ(test, ipt_sim_tick_rest(1000000, 8000000, true), 8000000ULL);
	KUNIT_EXPECT_EQ(test, ipt_sim_tick_rest(1000000, 141000000, true), 8000000ULL);
	/* a packet at a time: a 130 ms tick (64 MiB/s under TCG) rests as long */
	KUNIT_EXPECT_EQ(test, ipt_sim_tick_rest(1000000, 130000000, false), 130000000ULL);
}

/*
 * A timer started while idle: a period from now, or at the end of the
 * rest its last tick began if that is later (the rest is kept across a
 * stop, ipt_sim_kick()).
 */
static void live_start_delay(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, ipt_sim_start_delay(1000000, 5000000, 0), 1000000ULL);
	KUNIT_EXPECT_EQ(test, ipt_sim_start_delay(1000000, 5000000, 4000000), 1000000ULL);
	KUNIT_EXPECT_EQ(test, ipt_sim_start_delay(1000000, 5000000, 5500000), 1000000ULL);
	KUNIT_EXPECT_EQ(test, ipt_sim_start_delay(1000000, 5000000, 6000001), 1000001ULL);
	KUNIT_EXPECT_EQ(test, ipt_sim_start_delay(1000000, 5000000, 135000000), 130000000ULL);
}

static struct kunit_case sim_live_cases[] = {
	KUNIT_CASE(live_timer_pmi),
	KUNIT_CASE(live_tick_rest),
	KUNIT_CASE(live_start_delay),
	{}
};

static struct kunit_suite sim_live_suite = {
	.name = "ipt_sim_live",
	.init = sim_test_init,
	.exit = sim_test_exit,
	.test_cases = sim_live_cases,
};

kunit_test_suites(&sim_live_suite);

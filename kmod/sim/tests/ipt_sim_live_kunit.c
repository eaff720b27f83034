// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit test of the live per-CPU units (ipt_sim_pcpu.c): through the
 * registered operations, as ipt.ko uses them, the output timer fills a
 * ToPA ring and delivers its PMI.
 */
#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "ipt_sim_test.h"

static atomic_t live_pmis;

static void live_pmi(void)
{
	atomic_inc(&live_pmis);
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
 * PMI reaches the handler on this CPU, acknowledged by the backend.
 */
static void live_timer_pmi(struct kunit *test)
{
	const struct ipt_hw_ops *ops = ipt_sim_live_ops();
	struct ipt_cpuid_regs r;
	u64 tpa, pa0, pa1, st;
	unsigned int i;
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
	atomic_set(&live_pmis, 0);
	if (ops->pmi_request(live_pmi))
		kunit_skip(test, "a PMI handler is installed already");

	migrate_disable();
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_BASE, tpa), 0);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_MASK, 0x7f), 0);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_STATUS, 0), 0);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_CTL, CTL_TOPA), 0);
	/* A live CTL change is refused. */
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_CTL,
					 CTL_TOPA | RTIT_CTL_OS), -EIO);
	for (i = 0; i < 250 && !atomic_read(&live_pmis); i++)
		msleep(20);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_CTL, 0), 0);
	st = live_rdmsr(test, ops, MSR_IA32_RTIT_STATUS);
	KUNIT_EXPECT_EQ(test, live_rdmsr(test, ops, MSR_CORE_PERF_GLOBAL_STATUS), 0ULL);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_STATUS, 0), 0);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_BASE, 0), 0);
	KUNIT_EXPECT_EQ(test, live_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_MASK, 0), 0);
	migrate_enable();
	ops->pmi_release();

	KUNIT_EXPECT_GE(test, atomic_read(&live_pmis), 1);
	KUNIT_EXPECT_FALSE(test, st & RTIT_STATUS_ERROR);
	ipt_sim_pkt_psb(psb);
	KUNIT_EXPECT_EQ(test, memcmp(r0, psb, sizeof(psb)), 0);
}

static struct kunit_case sim_live_cases[] = {
	KUNIT_CASE(live_timer_pmi),
	{}
};

static struct kunit_suite sim_live_suite = {
	.name = "ipt_sim_live",
	.init = sim_test_init,
	.exit = sim_test_exit,
	.test_cases = sim_live_cases,
};

kunit_test_suites(&sim_live_suite);

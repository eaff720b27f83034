// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the unit's life around the platform (ipt_sim_life.c):
 * a stuck unit that ignores clears of TraceEn, and power lost in a system
 * sleep (ipt_sim_life).
 */
#include <kunit/test.h>
#include <linux/sizes.h>

#include "ipt_sim_test.h"

#define ALIGN64(p) ((void *)ALIGN((unsigned long)(p), 64))

/* A stuck unit ignores a WRMSR clearing TraceEn and goes on writing. */
static void life_stuck_ignores_wrmsr(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa, bytes;

	sim_mem(test, 0, &pa);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	KUNIT_EXPECT_EQ(test, ipt_sim_set_stuck(c, true), 0);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.stops_ignored, 1ULL);
	bytes = c->stats.bytes;
	sim_produce(c, bytes + 64);
	KUNIT_EXPECT_GT(test, c->stats.bytes, bytes);
	/* Un-stuck, it carries the ignored clear out. */
	KUNIT_EXPECT_EQ(test, ipt_sim_set_stuck(c, false), 0);
	KUNIT_EXPECT_FALSE(test, c->ctl & RTIT_CTL_TRACEEN);
	/* And works normally again. */
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_FALSE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.stops_ignored, 1ULL);
}

/* XSAVES of a stuck unit saves the state but leaves TraceEn set. */
static void life_stuck_ignores_xsaves(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *mem = kunit_kzalloc(test, 2 * SZ_4K, GFP_KERNEL);
	u64 pa;

	KUNIT_ASSERT_NOT_NULL(test, mem);
	sim_mem(test, 0, &pa);
	sim_expect_ok(test, c, MSR_IA32_XSS, XFEATURE_MASK_PT);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	ipt_sim_set_stuck(c, true);
	KUNIT_EXPECT_EQ(test, ipt_sim_xsaves(c, ALIGN64(mem)), 0);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.stops_ignored, 1ULL);
	ipt_sim_set_stuck(c, false);
	KUNIT_EXPECT_FALSE(test, c->ctl & RTIT_CTL_TRACEEN);
}

/*
 * VMXON without PT in VMX operation (bdw): TraceEn cleared with the
 * disable's packets, every CTL write and an XRSTORS #GP until VMXOFF; the
 * other PT MSRs stay readable.  With PT in VMX operation (icl) nothing
 * changes.
 */
static void life_vmxon(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "bdw");
	u64 pa, bytes, val;

	sim_mem(test, 0, &pa);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	sim_produce(c, 64);
	bytes = c->stats.bytes;
	ipt_sim_set_vmx(c, true);
	KUNIT_EXPECT_TRUE(test, c->vmx_on);
	KUNIT_EXPECT_FALSE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.vmxon_cleared, 1ULL);
	/* FUP and TIP.PGD, as a disable writes them. */
	KUNIT_EXPECT_GT(test, c->stats.bytes, bytes);
	bytes = c->stats.bytes;
	sim_produce(c, bytes + 64);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, bytes);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_IA32_RTIT_OUTPUT_MASK, &val), 0);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_IA32_VMX_MISC, &val), 0);
	KUNIT_EXPECT_EQ(test, val & MSR_IA32_VMX_MISC_INTEL_PT, 0ULL);
	/* VMXON again changes nothing; VMXOFF lets CTL be written. */
	ipt_sim_set_vmx(c, true);
	KUNIT_EXPECT_EQ(test, c->stats.vmxon_cleared, 1ULL);
	ipt_sim_set_vmx(c, false);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);

	c = sim_cpu(test, "icl");
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	ipt_sim_set_vmx(c, true);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.vmxon_cleared, 0ULL);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_IA32_VMX_MISC, &val), 0);
	KUNIT_EXPECT_NE(test, val & MSR_IA32_VMX_MISC_INTEL_PT, 0ULL);
}

/*
 * Power loss: registers back to power-on values, the sleep counted, and
 * a unit that went in enabled counted as lost live; not a foreign one.
 */
static void life_power_loss(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa;

	sim_mem(test, 0, &pa);
	sim_expect_ok(test, c, MSR_IA32_XSS, XFEATURE_MASK_PT);
	KUNIT_EXPECT_FALSE(test, ipt_sim_power_loss(c));
	KUNIT_EXPECT_EQ(test, c->stats.sleeps, 1ULL);
	KUNIT_EXPECT_EQ(test, c->stats.lost_live, 0ULL);
	KUNIT_EXPECT_EQ(test, c->xss, 0ULL);

	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	sim_produce(c, 64);
	ipt_sim_set_stuck(c, true);
	KUNIT_EXPECT_TRUE(test, ipt_sim_power_loss(c));
	KUNIT_EXPECT_EQ(test, c->stats.sleeps, 2ULL);
	KUNIT_EXPECT_EQ(test, c->stats.lost_live, 1ULL);
	KUNIT_EXPECT_EQ(test, c->ctl, 0ULL);
	KUNIT_EXPECT_EQ(test, c->output_base, 0ULL);
	KUNIT_EXPECT_EQ(test, c->output_mask | 0x7f, 0x7fULL);
	KUNIT_EXPECT_EQ(test, c->status, 0ULL);
	KUNIT_EXPECT_FALSE(test, c->stuck);
	KUNIT_EXPECT_GT(test, c->stats.bytes, 0ULL);

	c->ctl = CTL_TOPA;
	c->foreign = true;
	KUNIT_EXPECT_FALSE(test, ipt_sim_power_loss(c));
	KUNIT_EXPECT_EQ(test, c->stats.lost_live, 1ULL);
	KUNIT_EXPECT_FALSE(test, c->foreign);
}

static struct kunit_case sim_life_cases[] = {
	KUNIT_CASE(life_stuck_ignores_wrmsr),
	KUNIT_CASE(life_stuck_ignores_xsaves),
	KUNIT_CASE(life_power_loss),
	KUNIT_CASE(life_vmxon),
	{}
};

static struct kunit_suite sim_life_suite = {
	.name = "ipt_sim_life",
	.init = sim_test_init,
	.exit = sim_test_exit,
	.test_cases = sim_life_cases,
};

kunit_test_suites(&sim_life_suite);

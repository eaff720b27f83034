// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the unit's registers (ipt_sim_msr.c): every #GP rule
 * of WRMSR (ipt_sim_gp), and XSAVES / XRSTORS of the PT component
 * (ipt_sim_xsaves).
 */
#include <kunit/test.h>
#include <linux/bitfield.h>
#include <linux/bits.h>
#include <linux/kernel.h>
#include <linux/sizes.h>
#include <linux/string.h>

#include "ipt_sim_test.h"

/* ---- #GP write rules -------------------------------------------------- */

static void gp_ctl_while_tracing(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa;

	sim_mem(test, 0, &pa);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE | RTIT_CTL_OS);
	/* The identical value is allowed, and so is clearing TraceEn. */
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.gp, 1ULL);
}

/*
 * Fault injection (struct ipt_sim_cpu.gp_ctl) counts only transitions:
 * a write of CTL with TraceEn clear while it already is clears nothing
 * and is no "write that clears TraceEn"; one with TraceEn set while it
 * already is sets nothing.  Those writes succeed and leave the fault
 * armed for the real transition, which takes it, once.
 */
static void gp_ctl_fault_transitions_only(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa;

	sim_mem(test, 0, &pa);
	c->gp_ctl = IPT_SIM_GP_CTL_CLEAR | IPT_SIM_GP_CTL_SET;
	/* off, written off: no transition */
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->gp_ctl, IPT_SIM_GP_CTL_CLEAR | IPT_SIM_GP_CTL_SET);
	/* off to on: the set fault, taken once */
	c->gp_ctl = IPT_SIM_GP_CTL_SET;
	sim_expect_ok(test, c, MSR_IA32_RTIT_OUTPUT_BASE, pa);
	sim_expect_ok(test, c, MSR_IA32_RTIT_OUTPUT_MASK, SZ_4K - 1);
	KUNIT_EXPECT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_CTL, CTL_RANGE),
			-EIO);
	KUNIT_EXPECT_EQ(test, c->gp_ctl, 0);
	KUNIT_EXPECT_FALSE(test, c->ctl & RTIT_CTL_TRACEEN);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
	/* on, written on (the identical value): no transition */
	c->gp_ctl = IPT_SIM_GP_CTL_CLEAR | IPT_SIM_GP_CTL_SET;
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
	KUNIT_EXPECT_EQ(test, c->gp_ctl, IPT_SIM_GP_CTL_CLEAR | IPT_SIM_GP_CTL_SET);
	/* on to off: the clear fault, taken once; the unit still on */
	KUNIT_EXPECT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_CTL,
					    CTL_RANGE & ~RTIT_CTL_TRACEEN), -EIO);
	KUNIT_EXPECT_EQ(test, c->gp_ctl, IPT_SIM_GP_CTL_SET);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
}

static void gp_ctl_reserved(struct kunit *test)
{
	static const unsigned int bits[] = {
		18, 23, 28, 29, 30, 48, 49, 50, 51, 52, 53, 54, 57, 58, 59,
		60, 61, 62, 63,
	};
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bits); i++)
		sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, BIT_ULL(bits[i]));
}

static void gp_ctl_unsupported_feature(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "bdw-sro");

	/* bdw-sro enumerates nothing in CPUID.(14H,0):EBX and no ToPA. */
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_CR3EN);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_CYCLEACC);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, FIELD_PREP(RTIT_CTL_CYC_THRESH, 1));
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, FIELD_PREP(RTIT_CTL_PSB_FREQ, 1));
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_MTC_EN);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, FIELD_PREP(RTIT_CTL_MTC_RANGE, 3));
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_PTW_EN);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_FUP_ON_PTW);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_PWR_EVT_EN);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_TOPA);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_EVENT_EN);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_NOTNT);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, IPT_RTIT_CTL_INJECTPSBPMI);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, IPT_RTIT_CTL_ADDR_CFG(0) & (1ULL << 32));
	/* No model has trace transport. */
	c = sim_cpu(test, "icl");
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_FABRIC_EN);
	/* skl lacks PTWRITE, power events, event trace, TNT disable. */
	c = sim_cpu(test, "skl");
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_PTW_EN);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_PWR_EVT_EN);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_EVENT_EN);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_NOTNT);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_CR3EN |
		  RTIT_CTL_CYCLEACC | RTIT_CTL_MTC_EN | RTIT_CTL_TOPA);
}

static void gp_ctl_encodings(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	unsigned int v;

	for (v = 0; v < 16; v++) {
		u64 mtc = FIELD_PREP(RTIT_CTL_MTC_RANGE, v);
		u64 cyc = FIELD_PREP(RTIT_CTL_CYC_THRESH, v);
		u64 psb = FIELD_PREP(RTIT_CTL_PSB_FREQ, v);

		if (0x249 & BIT(v))
			sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, mtc);
		else
			sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, mtc);
		if (0x1fff & BIT(v))
			sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, cyc);
		else
			sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, cyc);
		if (0x3f & BIT(v))
			sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, psb);
		else
			sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, psb);
	}
}

static void gp_ctl_addr_cfg(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	unsigned int n, v;

	for (n = 0; n < 4; n++) {
		for (v = 1; v < 16; v++) {
			u64 val = (u64)v << (32 + 4 * n);

			if (v <= 2 && n < 2)
				sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, val);
			else
				sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, val);
		}
	}
}

/* A part without single-range output (ECX = ToPA | multi-entry). */
static const struct ipt_sim_model topa_only = {
	.name = "topa-only",
	.desc = "test",
	.signature = 0x000406e3,
	.leaf_14_0 = { 1, 0xf, 0x3, 0 },
	.leaf_14_1 = { 0x02490002, 0x003f1fff, 0, 0 },
	.maxphyaddr = 39,
	.nom_ratio = 20,
};

static void gp_ctl_no_output_scheme(struct kunit *test)
{
	struct sim_test *t = test->priv;

	ipt_sim_cpu_init(&t->c, &topa_only);
	sim_expect_gp(test, &t->c, MSR_IA32_RTIT_CTL, CTL_RANGE);
	sim_expect_ok(test, &t->c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
}

static void gp_ctl_bdm106(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "bdw-sro");
	u64 pa;

	sim_mem(test, 0, &pa);
	sim_expect_ok(test, c, MSR_IA32_RTIT_OUTPUT_BASE, pa);
	sim_expect_ok(test, c, MSR_IA32_RTIT_OUTPUT_MASK, SZ_4K - 1);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_BRANCH_EN);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
}

static void gp_msrs_while_tracing(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa;

	sim_mem(test, 0, &pa);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	sim_expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_BASE, pa);
	sim_expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_MASK, SZ_4K - 1);
	sim_expect_gp(test, c, MSR_IA32_RTIT_STATUS, 0);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CR3_MATCH, 0);
	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_A(0), 0);
	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_B(0), 0);
	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_A(1), 0);
	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_B(1), 0);
}

static void gp_status(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "skl");
	u64 v;

	sim_expect_gp(test, c, MSR_IA32_RTIT_STATUS, BIT_ULL(3));
	sim_expect_gp(test, c, MSR_IA32_RTIT_STATUS, BIT_ULL(8));
	sim_expect_gp(test, c, MSR_IA32_RTIT_STATUS, BIT_ULL(49));
	/* PendPSB / PendTopaPMI need PSB and PMI preservation. */
	sim_expect_gp(test, c, MSR_IA32_RTIT_STATUS, IPT_RTIT_STATUS_PENDPSB);
	sim_expect_gp(test, c, MSR_IA32_RTIT_STATUS, IPT_RTIT_STATUS_PENDTOPAPMI);
	c = sim_cpu(test, "icl");
	sim_expect_ok(test, c, MSR_IA32_RTIT_STATUS, IPT_RTIT_STATUS_PENDPSB);
	/* The processor's own bits ignore software; the rest sticks. */
	sim_expect_ok(test, c, MSR_IA32_RTIT_STATUS, RTIT_STATUS_TRIGGEREN |
		  RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED | (5ULL << 32));
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_IA32_RTIT_STATUS, &v), 0);
	KUNIT_EXPECT_EQ(test, v, RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED | (5ULL << 32));
}

/*
 * Without configurable PSB (bdw: CPUID.(14H,0):EBX[1] = 0) a non-zero
 * PacketByteCnt is #GP, RDMSR still shows the count (the worst case the
 * SDM allows) and every enable writes a PSB+; with it (icl) an enable
 * with a count left over does not.
 */
static void gp_status_bytecnt(struct kunit *test)
{
	static const char *const models[] = { "bdw", "icl" };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(models); i++) {
		struct ipt_sim_cpu *c = sim_cpu(test, models[i]);
		bool psb_cyc = c->model->leaf_14_0.ebx & BIT(1);
		u64 pa, v, off;
		u8 *mem;

		mem = sim_mem(test, 0, &pa);
		if (psb_cyc)
			sim_expect_ok(test, c, MSR_IA32_RTIT_STATUS, 5ULL << 32);
		else
			sim_expect_gp(test, c, MSR_IA32_RTIT_STATUS, 5ULL << 32);
		sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
		sim_produce(c, 100);
		sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
		KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_IA32_RTIT_STATUS, &v), 0);
		KUNIT_EXPECT_NE_MSG(test, FIELD_GET(RTIT_STATUS_BYTECNT, v), 0ULL,
				    "%s", models[i]);
		/* Writing back what was read is #GP without PSB_CYC. */
		if (psb_cyc)
			sim_expect_ok(test, c, MSR_IA32_RTIT_STATUS, v);
		else
			sim_expect_gp(test, c, MSR_IA32_RTIT_STATUS, v);
		off = out_offset(c);
		sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
		KUNIT_EXPECT_EQ_MSG(test, mem[off] == 0x02 && mem[off + 1] == 0x82,
				    !psb_cyc, "%s: enable with a count left", models[i]);
	}
}

/* ADDRn canonical to the model's linear address width (LA57: 57 bits). */
static void gp_addr_la57(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icx");

	sim_expect_ok(test, c, IPT_MSR_RTIT_ADDR_A(0), 0x00ff800000401000ULL);
	sim_expect_ok(test, c, IPT_MSR_RTIT_ADDR_B(0), 0xff00000000000000ULL);
	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_A(1), 0x0100000000000000ULL);
	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_B(1), 0xfeffffffffffffffULL);
	c = sim_cpu(test, "icl");
	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_A(0), 0x00ff800000401000ULL);
	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_B(0), 0xff00000000000000ULL);
}

static void gp_output_base(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	unsigned int i;

	for (i = 0; i < 7; i++)
		sim_expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_BASE, 0x1000 | BIT(i));
	sim_expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_BASE, BIT_ULL(39));
	sim_expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_BASE, BIT_ULL(63));
	/* Bits 11:7 are an operational error in ToPA mode, not a #GP. */
	sim_expect_ok(test, c, MSR_IA32_RTIT_OUTPUT_BASE, 0x1080);
}

static void gp_cr3_match(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	unsigned int i;
	u64 v;

	for (i = 0; i < 5; i++)
		sim_expect_gp(test, c, MSR_IA32_RTIT_CR3_MATCH, 0x1000 | BIT(i));
	sim_expect_ok(test, c, MSR_IA32_RTIT_CR3_MATCH, 0x1020);
	/* Without CR3 filtering the MSR does not exist. */
	c = sim_cpu(test, "bdw-sro");
	sim_expect_gp(test, c, MSR_IA32_RTIT_CR3_MATCH, 0);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_IA32_RTIT_CR3_MATCH, &v), -EIO);
	KUNIT_EXPECT_EQ(test, c->stats.gp, 2ULL);
}

static void gp_addr(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 v;

	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_A(0), 0x0000800000000000ULL);
	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_B(1), 0xffff7fffffffffffULL);
	sim_expect_ok(test, c, IPT_MSR_RTIT_ADDR_A(0), 0xffff800000000000ULL);
	sim_expect_ok(test, c, IPT_MSR_RTIT_ADDR_B(1), 0x00007fffffffffffULL);
	/* icl has two ranges: ADDR2/3 do not exist. */
	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_A(2), 0);
	sim_expect_gp(test, c, IPT_MSR_RTIT_ADDR_B(3), 0);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, IPT_MSR_RTIT_ADDR_A(2), &v), -EIO);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, IPT_MSR_RTIT_ADDR_B(1), &v), 0);
	KUNIT_EXPECT_EQ(test, v, 0x00007fffffffffffULL);
}

/*
 * A unit another tracer enabled (debugfs "foreign"): every write but one
 * clearing TraceEn faults, XRSTORS faults, and a write that clears
 * TraceEn is counted as clobbering it.
 */
static void gp_foreign_owner(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 ctl = RTIT_CTL_TRACEEN | RTIT_CTL_TOPA | RTIT_CTL_USR |
		  RTIT_CTL_BRANCH_EN;

	c->ctl = ctl;
	c->foreign = true;
	sim_expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_BASE, 0x1000);
	sim_expect_gp(test, c, MSR_IA32_RTIT_STATUS, 0);
	sim_expect_gp(test, c, MSR_IA32_RTIT_CTL, ctl | RTIT_CTL_OS);
	KUNIT_EXPECT_EQ(test, c->stats.clobbered, 0ULL);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, 0);
	KUNIT_EXPECT_EQ(test, c->stats.clobbered, 1ULL);
	KUNIT_EXPECT_FALSE(test, c->foreign);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 0ULL);
}

static void gp_other_msrs(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 v;

	sim_expect_gp(test, c, MSR_PLATFORM_INFO, 0);
	sim_expect_gp(test, c, MSR_CORE_PERF_GLOBAL_STATUS, 0);
	sim_expect_gp(test, c, 0x10, 0);
	sim_expect_gp(test, c, MSR_CORE_PERF_GLOBAL_OVF_CTRL, BIT_ULL(40));
	sim_expect_gp(test, c, MSR_IA32_XSS, BIT_ULL(11));
	sim_expect_ok(test, c, MSR_IA32_XSS, XFEATURE_MASK_PT);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, 0x10, &v), -EIO);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_PLATFORM_INFO, &v), 0);
	KUNIT_EXPECT_EQ(test, v, 20ULL << 8);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_IA32_RTIT_OUTPUT_MASK, &v), 0);
	KUNIT_EXPECT_EQ(test, v, 0x7fULL);
	c = sim_cpu(test, "icl-noxsaves");
	sim_expect_gp(test, c, MSR_IA32_XSS, XFEATURE_MASK_PT);
}

static struct kunit_case sim_gp_cases[] = {
	KUNIT_CASE(gp_ctl_while_tracing),
	KUNIT_CASE(gp_ctl_fault_transitions_only),
	KUNIT_CASE(gp_ctl_reserved),
	KUNIT_CASE(gp_ctl_unsupported_feature),
	KUNIT_CASE(gp_ctl_encodings),
	KUNIT_CASE(gp_ctl_addr_cfg),
	KUNIT_CASE(gp_ctl_no_output_scheme),
	KUNIT_CASE(gp_ctl_bdm106),
	KUNIT_CASE(gp_msrs_while_tracing),
	KUNIT_CASE(gp_status),
	KUNIT_CASE(gp_status_bytecnt),
	KUNIT_CASE(gp_output_base),
	KUNIT_CASE(gp_cr3_match),
	KUNIT_CASE(gp_addr),
	KUNIT_CASE(gp_addr_la57),
	KUNIT_CASE(gp_other_msrs),
	KUNIT_CASE(gp_foreign_owner),
	{}
};

static struct kunit_suite sim_gp_suite = {
	.name = "ipt_sim_gp",
	.init = sim_test_init,
	.exit = sim_test_exit,
	.test_cases = sim_gp_cases,
};

/* ---- XSAVES / XRSTORS --------------------------------------------------- */

static u64 *xfield(u8 *area, unsigned int i)
{
	return (u64 *)(area + IPT_XSAVE_PT_OFFSET) + i;
}

static u8 *xs_start(struct kunit *test, struct ipt_sim_cpu *c, u8 **out)
{
	u64 pa, apa;
	u8 *area = sim_mem(test, 0, &apa);

	*out = sim_mem(test, 3, &pa);
	sim_expect_ok(test, c, MSR_IA32_XSS, XFEATURE_MASK_PT);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CR3_MATCH, 0x5000);
	sim_expect_ok(test, c, IPT_MSR_RTIT_ADDR_A(0), 0x400000);
	sim_expect_ok(test, c, IPT_MSR_RTIT_ADDR_B(0), 0x402000);
	sim_expect_ok(test, c, IPT_MSR_RTIT_ADDR_A(1), 0x1000);
	sim_expect_ok(test, c, IPT_MSR_RTIT_ADDR_B(1), 0x2000);
	sim_start(test, c, pa, SZ_32K - 1, CTL_RANGE);
	ipt_sim_run(c, 10);
	return area;
}

/*
 * Layout: header, then the nine fields at 576; CTL saved before disable.
 * The area starts filled with 0xaa, so what XSAVES writes and what it
 * leaves alone both show.
 */
static void xsaves_layout_order(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out, *area = xs_start(test, c, &out);
	u64 *hdr = (u64 *)(area + IPT_XSAVE_HDR_OFFSET);
	u64 bytes = c->stats.bytes;

	memset(area, 0xaa, IPT_XSAVE_PT_OFFSET + IPT_SIM_XSAVE_PT_SIZE);
	KUNIT_ASSERT_EQ(test, ipt_sim_xsaves(c, area), 0);
	KUNIT_EXPECT_EQ(test, hdr[0], BIT_ULL(8));
	KUNIT_EXPECT_EQ(test, hdr[1], BIT_ULL(63) | BIT_ULL(8));
	KUNIT_EXPECT_EQ(test, *xfield(area, IPT_XSAVE_CTL), CTL_RANGE);
	KUNIT_EXPECT_FALSE(test, c->ctl & RTIT_CTL_TRACEEN);
	/* The disable wrote FUP + TIP.PGD (8 bytes) before the rest was saved. */
	KUNIT_EXPECT_EQ(test, c->stats.bytes, bytes + 8);
	KUNIT_EXPECT_EQ(test, *xfield(area, IPT_XSAVE_OUTPUT_MASK),
			(u64)(SZ_32K - 1) | (bytes + 8) << 32);
	KUNIT_EXPECT_EQ(test, *xfield(area, IPT_XSAVE_OUTPUT_BASE), c->output_base);
	KUNIT_EXPECT_EQ(test, *xfield(area, IPT_XSAVE_STATUS), c->status);
	KUNIT_EXPECT_FALSE(test, c->status & RTIT_STATUS_TRIGGEREN);
	KUNIT_EXPECT_EQ(test, *xfield(area, IPT_XSAVE_CR3_MATCH), 0x5000ULL);
	KUNIT_EXPECT_EQ(test, *xfield(area, IPT_XSAVE_ADDR0_A), 0x400000ULL);
	KUNIT_EXPECT_EQ(test, *xfield(area, IPT_XSAVE_ADDR0_B), 0x402000ULL);
	KUNIT_EXPECT_EQ(test, *xfield(area, IPT_XSAVE_ADDR1_A), 0x1000ULL);
	KUNIT_EXPECT_EQ(test, *xfield(area, IPT_XSAVE_ADDR1_B), 0x2000ULL);
	/*
	 * The legacy area and header bytes 16..63 are left alone; the
	 * component's bytes after the nine fields are written as zero.
	 */
	KUNIT_EXPECT_TRUE(test, !memchr_inv(area, 0xaa, IPT_XSAVE_HDR_OFFSET));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(area + IPT_XSAVE_HDR_OFFSET + 16,
					    0xaa, 48));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(area + IPT_XSAVE_PT_OFFSET +
					    IPT_XSAVE_PT_MIN_SIZE, 0,
					    IPT_SIM_XSAVE_PT_SIZE -
					    IPT_XSAVE_PT_MIN_SIZE));
}

/* XRSTORS puts everything back, CTL last: trace resumes without PSB. */
static void xrstors_roundtrip(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out, *area = xs_start(test, c, &out);
	u64 bytes;

	KUNIT_ASSERT_EQ(test, ipt_sim_xsaves(c, area), 0);
	bytes = c->stats.bytes;
	/* Another user of the unit in between. */
	sim_expect_ok(test, c, MSR_IA32_RTIT_OUTPUT_MASK, 0);
	sim_expect_ok(test, c, IPT_MSR_RTIT_ADDR_A(1), 0);
	KUNIT_ASSERT_EQ(test, ipt_sim_xrstors(c, area), 0);
	KUNIT_EXPECT_EQ(test, c->ctl, CTL_RANGE);
	KUNIT_EXPECT_EQ(test, c->addr_a[1], 0x1000ULL);
	KUNIT_EXPECT_EQ(test, c->stats.psb, 1ULL);
	/* Enable packets land where the saved offset said. */
	EXPECT_BYTES(test, out + bytes, 0x02, 0x03, 0x14, 0x00, 0x99, 0x01, 0x71);
}

static void xrstors_gp_tracing(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out, *area = xs_start(test, c, &out);
	struct ipt_sim_cpu before;

	KUNIT_ASSERT_EQ(test, ipt_sim_xsaves(c, area), 0);
	KUNIT_ASSERT_EQ(test, ipt_sim_xrstors(c, area), 0);
	before = *c;
	KUNIT_EXPECT_EQ(test, ipt_sim_xrstors(c, area), -EIO);
	KUNIT_EXPECT_EQ(test, c->stats.gp, before.stats.gp + 1);
	before.stats = c->stats;
	KUNIT_EXPECT_EQ(test, memcmp(&before, c, sizeof(before)), 0);
}

/* A field WRMSR would refuse makes XRSTORS fault, changing nothing. */
static void xrstors_gp_write_rules(struct kunit *test)
{
	static const struct { unsigned int field; u64 val; } bad[] = {
		{ IPT_XSAVE_CTL, BIT_ULL(18) },
		{ IPT_XSAVE_CTL, 1ULL << 14 },	/* MTCFreq 1 */
		{ IPT_XSAVE_OUTPUT_BASE, 0x1001 },
		{ IPT_XSAVE_STATUS, BIT_ULL(3) },
		{ IPT_XSAVE_CR3_MATCH, 0x1001 },
		{ IPT_XSAVE_ADDR0_A, 0x0000800000000000ULL },
		{ IPT_XSAVE_ADDR1_B, 0x0000800000000000ULL },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct ipt_sim_cpu *c = sim_cpu(test, "icl");
		u8 *out, *area = xs_start(test, c, &out);
		struct ipt_sim_cpu before;

		KUNIT_ASSERT_EQ(test, ipt_sim_xsaves(c, area), 0);
		*xfield(area, bad[i].field) = bad[i].val;
		before = *c;
		KUNIT_EXPECT_EQ_MSG(test, ipt_sim_xrstors(c, area), -EIO,
				    "field %u", bad[i].field);
		before.stats = c->stats;
		KUNIT_EXPECT_EQ(test, memcmp(&before, c, sizeof(before)), 0);
	}
}

static void xsaves_gp(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 apa;
	u8 *area = sim_mem(test, 0, &apa);
	u64 *hdr = (u64 *)(area + IPT_XSAVE_HDR_OFFSET);

	sim_expect_ok(test, c, MSR_IA32_XSS, XFEATURE_MASK_PT);
	/* Misaligned. */
	KUNIT_EXPECT_EQ(test, ipt_sim_xsaves(c, area + 32), -EIO);
	KUNIT_EXPECT_EQ(test, ipt_sim_xrstors(c, area + 32), -EIO);
	/* Header: XCOMP_BV not compacted, reserved bytes, XSTATE_BV. */
	KUNIT_ASSERT_EQ(test, ipt_sim_xsaves(c, area), 0);
	hdr[1] = BIT_ULL(8);
	KUNIT_EXPECT_EQ(test, ipt_sim_xrstors(c, area), -EIO);
	hdr[1] = BIT_ULL(63) | BIT_ULL(8);
	hdr[3] = 1;
	KUNIT_EXPECT_EQ(test, ipt_sim_xrstors(c, area), -EIO);
	hdr[3] = 0;
	hdr[0] = BIT_ULL(9);
	KUNIT_EXPECT_EQ(test, ipt_sim_xrstors(c, area), -EIO);
	KUNIT_EXPECT_EQ(test, c->stats.gp, 5ULL);
	/* XSTATE_BV bit 8 clear: the initial state. */
	hdr[0] = 0;
	sim_expect_ok(test, c, MSR_IA32_RTIT_CR3_MATCH, 0x5000);
	KUNIT_EXPECT_EQ(test, ipt_sim_xrstors(c, area), 0);
	KUNIT_EXPECT_EQ(test, c->cr3_match, 0ULL);
}

/*
 * IA32_XSS bit 8 clear (KVM's VM exit or a resume rewrote it), SDM vol. 1
 * 13.11 and 13.5.6: RFBM lacks PT, so XSAVES saves nothing of it, leaves
 * TraceEn set and writes XCOMP_BV = bit 63 only; XRSTORS of an area that
 * holds PT faults, and of one that does not restores nothing.
 */
static void xsaves_xss_clear(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out, *area = xs_start(test, c, &out);
	u64 *hdr = (u64 *)(area + IPT_XSAVE_HDR_OFFSET);
	u64 base = c->output_base;

	*xfield(area, IPT_XSAVE_OUTPUT_BASE) = 0x1234000;
	sim_expect_ok(test, c, MSR_IA32_XSS, 0);
	KUNIT_EXPECT_EQ(test, ipt_sim_xsaves(c, area), 0);
	KUNIT_EXPECT_EQ(test, c->stats.xsaves_empty, 1ULL);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->output_base, base);
	KUNIT_EXPECT_EQ(test, hdr[0], 0ULL);
	KUNIT_EXPECT_EQ(test, hdr[1], BIT_ULL(63));
	KUNIT_EXPECT_EQ(test, *xfield(area, IPT_XSAVE_OUTPUT_BASE), 0x1234000ULL);
	/* Nothing to restore: no fault, no change. */
	KUNIT_EXPECT_EQ(test, ipt_sim_xrstors(c, area), 0);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);
	/* An area that holds PT: XCOMP_BV bit 8 is not in XCR0 | XSS. */
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	hdr[0] = BIT_ULL(8);
	hdr[1] = BIT_ULL(63) | BIT_ULL(8);
	KUNIT_EXPECT_EQ(test, ipt_sim_xrstors(c, area), -EIO);
	/* A model whose XSAVES lacks PT cannot set the bit at all. */
	c = sim_cpu(test, "icl-noxsaves");
	sim_expect_gp(test, c, MSR_IA32_XSS, XFEATURE_MASK_PT);
	KUNIT_EXPECT_EQ(test, ipt_sim_xsaves(c, area), 0);
	KUNIT_EXPECT_EQ(test, hdr[1], BIT_ULL(63));
}

/* The component is written up to the size CPUID.(0DH,8):EAX reports. */
static void xsaves_component_size(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	static struct ipt_sim_model big;
	struct ipt_cpuid_regs r;
	u8 *out, *area;

	big = *c->model;
	big.xsave_pt_size = 256;
	c->model = &big;
	ipt_sim_cpuid(&big, IPT_CPUID_XSAVE, IPT_CPUID_XSAVE_PT_COMPONENT, &r);
	KUNIT_EXPECT_EQ(test, r.eax, 256u);
	area = xs_start(test, c, &out);
	memset(area + IPT_XSAVE_PT_OFFSET, 0xaa, 512);
	KUNIT_ASSERT_EQ(test, ipt_sim_xsaves(c, area), 0);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(area + IPT_XSAVE_PT_OFFSET + 72, 0,
					    256 - 72));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(area + IPT_XSAVE_PT_OFFSET + 256,
					    0xaa, 256));
}

static struct kunit_case sim_xsaves_cases[] = {
	KUNIT_CASE(xsaves_layout_order),
	KUNIT_CASE(xrstors_roundtrip),
	KUNIT_CASE(xrstors_gp_tracing),
	KUNIT_CASE(xrstors_gp_write_rules),
	KUNIT_CASE(xsaves_gp),
	KUNIT_CASE(xsaves_xss_clear),
	KUNIT_CASE(xsaves_component_size),
	{}
};

static struct kunit_suite sim_xsaves_suite = {
	.name = "ipt_sim_xsaves",
	.init = sim_test_init,
	.exit = sim_test_exit,
	.test_cases = sim_xsaves_cases,
};

kunit_test_suites(&sim_gp_suite, &sim_xsaves_suite);

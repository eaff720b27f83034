// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the simulated PT unit (ipt_sim.ko): one suite per family
 * of rules (CPUID models, #GP write rules, ToPA output and operational
 * errors, packets, XSAVES).  They drive the pure rule functions on a state
 * of their own; the per-CPU units of the loaded simulator are not touched.
 */
#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/bitfield.h>
#include <linux/delay.h>
#include <linux/preempt.h>
#include <linux/gfp.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/string.h>

#include "../../ipt.h"
#include "../ipt_sim.h"

/* TraceEn | ToPA | User | BranchEn */
#define CTL_TOPA	(RTIT_CTL_TRACEEN | RTIT_CTL_TOPA |	\
			 RTIT_CTL_USR | RTIT_CTL_BRANCH_EN)
#define CTL_RANGE	(CTL_TOPA & ~RTIT_CTL_TOPA)
#define LOOP_TNT	0xec

#define MAX_PAGES	16

/**
 * struct sim_test - per-test fixture
 * @c: the simulated unit under test
 * @pages: pages allocated for output and tables, freed at exit
 * @orders: their orders
 * @n: number of @pages
 */
struct sim_test {
	struct ipt_sim_cpu c;
	struct page *pages[MAX_PAGES];
	unsigned int orders[MAX_PAGES];
	unsigned int n;
};

static const struct ipt_sim_model *model(const char *name)
{
	unsigned int i;

	for (i = 0; i < ipt_sim_nr_models; i++)
		if (!strcmp(ipt_sim_models[i].name, name))
			return &ipt_sim_models[i];
	return NULL;
}

static struct ipt_sim_cpu *sim_cpu(struct kunit *test, const char *name)
{
	struct sim_test *t = test->priv;
	const struct ipt_sim_model *m = model(name);

	KUNIT_ASSERT_NOT_NULL(test, m);
	ipt_sim_cpu_init(&t->c, m);
	return &t->c;
}

/* Zeroed, naturally aligned physical memory; returns its kernel address. */
static u8 *sim_mem(struct kunit *test, unsigned int order, u64 *pa)
{
	struct sim_test *t = test->priv;
	struct page *page;

	KUNIT_ASSERT_LT(test, t->n, MAX_PAGES);
	page = alloc_pages(GFP_KERNEL | __GFP_ZERO, order);
	KUNIT_ASSERT_NOT_NULL(test, page);
	t->pages[t->n] = page;
	t->orders[t->n++] = order;
	*pa = page_to_phys(page);
	return page_address(page);
}

static int sim_test_init(struct kunit *test)
{
	test->priv = kunit_kzalloc(test, sizeof(struct sim_test), GFP_KERNEL);
	return test->priv ? 0 : -ENOMEM;
}

static void sim_test_exit(struct kunit *test)
{
	struct sim_test *t = test->priv;
	unsigned int i;

	for (i = 0; i < t->n; i++)
		__free_pages(t->pages[i], t->orders[i]);
}

static u64 topa_entry(u64 pa, unsigned int size, u64 flags)
{
	return pa | (u64)size << 6 | flags;
}

static u64 out_index(const struct ipt_sim_cpu *c)
{
	return (c->output_mask & 0xffffff80) >> 7;
}

static u64 out_offset(const struct ipt_sim_cpu *c)
{
	return c->output_mask >> 32;
}

static void sim_start(struct kunit *test, struct ipt_sim_cpu *c, u64 base,
		      u64 mask, u64 ctl)
{
	KUNIT_ASSERT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_OUTPUT_BASE, base), 0);
	KUNIT_ASSERT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_OUTPUT_MASK, mask), 0);
	KUNIT_ASSERT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_STATUS, 0), 0);
	KUNIT_ASSERT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_CTL, ctl), 0);
}

/* Run until at least @bytes were written (or output ended). */
static void sim_produce(struct ipt_sim_cpu *c, u64 bytes)
{
	if (c->stats.bytes < bytes)
		ipt_sim_run(c, bytes - c->stats.bytes);
}

/*
 * The reference stream: what the unit writes with @ctl (ToPA bit cleared)
 * into one 32 KiB single range, until at least @bytes.  Returns its
 * length; ToPA output of the same trace must hold exactly these bytes.
 */
static u64 sim_reference(struct kunit *test, const char *name, u64 ctl,
			 u64 bytes, u8 **ref)
{
	struct ipt_sim_cpu *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	u64 pa;

	KUNIT_ASSERT_NOT_NULL(test, c);
	KUNIT_ASSERT_LE(test, bytes, (u64)SZ_32K - 64);
	ipt_sim_cpu_init(c, model(name));
	*ref = sim_mem(test, 3, &pa);
	sim_start(test, c, pa, SZ_32K - 1, ctl & ~RTIT_CTL_TOPA);
	sim_produce(c, bytes);
	return c->stats.bytes;
}

/* ---- CPUID models --------------------------------------------------- */

static struct ipt_sim_cpu *probe_cpu;

static void probe_cpuid(u32 leaf, u32 subleaf, struct ipt_cpuid_regs *r)
{
	ipt_sim_cpuid(probe_cpu->model, leaf, subleaf, r);
}

static int probe_rdmsr(u32 msr, u64 *val)
{
	return ipt_sim_rdmsr(probe_cpu, msr, val);
}

static int probe_wrmsr(u32 msr, u64 val)
{
	return ipt_sim_wrmsr(probe_cpu, msr, val);
}

static const struct ipt_hw_ops probe_ops = {
	.name = "sim-kunit",
	.backend = IPT_BACKEND_SIM,
	.cpuid = probe_cpuid,
	.read_msr = probe_rdmsr,
	.write_msr = probe_wrmsr,
};

struct model_case {
	const char *name;
	u32 family, model;
	u64 features_set, features_clear;
	u32 ranges, mtc, cyc, psb, xsave;
};

static const struct model_case model_cases[] = {
	{ "icl", 6, 0x7e, IPT_FEAT_TOPA | IPT_FEAT_TOPA_MULTI |
	  IPT_FEAT_SINGLE_RANGE | IPT_FEAT_XSAVES_PT | IPT_FEAT_PTWRITE |
	  IPT_FEAT_POWER_EVENTS | IPT_FEAT_EVENT_TRACE | IPT_FEAT_TNT_DISABLE,
	  0, 2, 0x249, 0x1fff, 0x3f, 128 },
	{ "icl-noxsaves", 6, 0x7e, IPT_FEAT_TOPA_MULTI, IPT_FEAT_XSAVES_PT,
	  2, 0x249, 0x1fff, 0x3f, 0 },
	{ "skl", 6, 0x4e, IPT_FEAT_TOPA_MULTI | IPT_FEAT_CR3_FILTER,
	  IPT_FEAT_PTWRITE | IPT_FEAT_XSAVES_PT, 2, 0x249, 0x1fff, 0x3f, 0 },
	{ "glm", 6, 0x5c, IPT_FEAT_TOPA | IPT_FEAT_SINGLE_RANGE,
	  IPT_FEAT_TOPA_MULTI, 2, 0x249, 0x1fff, 0x3f, 0 },
	{ "bdw-sro", 6, 0x3d, IPT_FEAT_SINGLE_RANGE,
	  IPT_FEAT_TOPA | IPT_FEAT_CR3_FILTER | IPT_FEAT_MTC, 0, 0, 0, 0, 0 },
};

/* Every model probes through ipt.ko's own capability code as intended. */
static void sim_models_probe(struct kunit *test)
{
	unsigned int i;

	KUNIT_EXPECT_EQ(test, ipt_sim_nr_models, ARRAY_SIZE(model_cases));
	for (i = 0; i < ARRAY_SIZE(model_cases); i++) {
		const struct model_case *mc = &model_cases[i];
		struct ipt_caps caps;

		probe_cpu = sim_cpu(test, mc->name);
		KUNIT_ASSERT_EQ(test, ipt_caps_probe(&probe_ops, &caps),
				IPT_UNAVAIL_NONE);
		KUNIT_EXPECT_STREQ(test, caps.vendor, "GenuineIntel");
		KUNIT_EXPECT_EQ_MSG(test, caps.family, mc->family, "%s", mc->name);
		KUNIT_EXPECT_EQ_MSG(test, caps.model, mc->model, "%s", mc->name);
		KUNIT_EXPECT_EQ_MSG(test, caps.features & mc->features_set,
				    mc->features_set, "%s", mc->name);
		KUNIT_EXPECT_EQ_MSG(test, caps.features & mc->features_clear,
				    0ULL, "%s", mc->name);
		KUNIT_EXPECT_EQ_MSG(test, caps.num_addr_ranges, mc->ranges, "%s", mc->name);
		KUNIT_EXPECT_EQ_MSG(test, caps.mtc_freq_mask, mc->mtc, "%s", mc->name);
		KUNIT_EXPECT_EQ_MSG(test, caps.cyc_thresh_mask, mc->cyc, "%s", mc->name);
		KUNIT_EXPECT_EQ_MSG(test, caps.psb_freq_mask, mc->psb, "%s", mc->name);
		KUNIT_EXPECT_EQ_MSG(test, caps.xsave_pt_size, mc->xsave, "%s", mc->name);
		KUNIT_EXPECT_EQ_MSG(test, caps.nom_freq, (u32)probe_cpu->model->nom_ratio,
				    "%s", mc->name);
	}
}

static void sim_models_maxphyaddr(struct kunit *test)
{
	struct ipt_cpuid_regs r;

	ipt_sim_cpuid(model("icl"), 0x80000008, 0, &r);
	KUNIT_EXPECT_EQ(test, r.eax & 0xff, 39u);
	ipt_sim_cpuid(model("icl"), 0x12345, 0, &r);
	KUNIT_EXPECT_EQ(test, r.eax | r.ebx | r.ecx | r.edx, 0u);
}

static struct kunit_case sim_model_cases[] = {
	KUNIT_CASE(sim_models_probe),
	KUNIT_CASE(sim_models_maxphyaddr),
	{}
};

static struct kunit_suite sim_model_suite = {
	.name = "ipt_sim_models",
	.init = sim_test_init,
	.exit = sim_test_exit,
	.test_cases = sim_model_cases,
};

/* ---- #GP write rules -------------------------------------------------- */

/* The write must fault, change nothing, and be counted. */
static void expect_gp(struct kunit *test, struct ipt_sim_cpu *c, u32 msr,
		      u64 val)
{
	struct ipt_sim_cpu before = *c;

	KUNIT_EXPECT_EQ_MSG(test, ipt_sim_wrmsr(c, msr, val), -EIO,
			    "msr %#x val %#llx", msr, val);
	KUNIT_EXPECT_EQ(test, c->stats.gp, before.stats.gp + 1);
	KUNIT_EXPECT_EQ(test, c->stats.wrmsr, before.stats.wrmsr + 1);
	before.stats = c->stats;
	KUNIT_EXPECT_EQ_MSG(test, memcmp(&before, c, sizeof(before)), 0,
			    "state changed by msr %#x val %#llx", msr, val);
}

static void expect_ok(struct kunit *test, struct ipt_sim_cpu *c, u32 msr,
		      u64 val)
{
	KUNIT_EXPECT_EQ_MSG(test, ipt_sim_wrmsr(c, msr, val), 0,
			    "msr %#x val %#llx", msr, val);
}

static void gp_ctl_while_tracing(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa;

	sim_mem(test, 0, &pa);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE | RTIT_CTL_OS);
	/* The identical value is allowed, and so is clearing TraceEn. */
	expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
	expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.gp, 1ULL);
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
		expect_gp(test, c, MSR_IA32_RTIT_CTL, BIT_ULL(bits[i]));
}

static void gp_ctl_unsupported_feature(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "bdw-sro");

	/* bdw-sro enumerates nothing in CPUID.(14H,0):EBX and no ToPA. */
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_CR3EN);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_CYCLEACC);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, FIELD_PREP(RTIT_CTL_CYC_THRESH, 1));
	expect_gp(test, c, MSR_IA32_RTIT_CTL, FIELD_PREP(RTIT_CTL_PSB_FREQ, 1));
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_MTC_EN);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, FIELD_PREP(RTIT_CTL_MTC_RANGE, 3));
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_PTW_EN);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_FUP_ON_PTW);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_PWR_EVT_EN);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_TOPA);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_EVENT_EN);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_NOTNT);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, IPT_RTIT_CTL_INJECTPSBPMI);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, IPT_RTIT_CTL_ADDR_CFG(0) & (1ULL << 32));
	/* No model has trace transport. */
	c = sim_cpu(test, "icl");
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_FABRIC_EN);
	/* skl lacks PTWRITE, power events, event trace, TNT disable. */
	c = sim_cpu(test, "skl");
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_PTW_EN);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_PWR_EVT_EN);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_EVENT_EN);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_NOTNT);
	expect_ok(test, c, MSR_IA32_RTIT_CTL, RTIT_CTL_CR3EN |
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
			expect_ok(test, c, MSR_IA32_RTIT_CTL, mtc);
		else
			expect_gp(test, c, MSR_IA32_RTIT_CTL, mtc);
		if (0x1fff & BIT(v))
			expect_ok(test, c, MSR_IA32_RTIT_CTL, cyc);
		else
			expect_gp(test, c, MSR_IA32_RTIT_CTL, cyc);
		if (0x3f & BIT(v))
			expect_ok(test, c, MSR_IA32_RTIT_CTL, psb);
		else
			expect_gp(test, c, MSR_IA32_RTIT_CTL, psb);
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
				expect_ok(test, c, MSR_IA32_RTIT_CTL, val);
			else
				expect_gp(test, c, MSR_IA32_RTIT_CTL, val);
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
	expect_gp(test, &t->c, MSR_IA32_RTIT_CTL, CTL_RANGE);
	expect_ok(test, &t->c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
}

static void gp_ctl_bdm106(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "bdw-sro");
	u64 pa;

	sim_mem(test, 0, &pa);
	expect_ok(test, c, MSR_IA32_RTIT_OUTPUT_BASE, pa);
	expect_ok(test, c, MSR_IA32_RTIT_OUTPUT_MASK, SZ_4K - 1);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_BRANCH_EN);
	expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
}

static void gp_msrs_while_tracing(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa;

	sim_mem(test, 0, &pa);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_BASE, pa);
	expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_MASK, SZ_4K - 1);
	expect_gp(test, c, MSR_IA32_RTIT_STATUS, 0);
	expect_gp(test, c, MSR_IA32_RTIT_CR3_MATCH, 0);
	expect_gp(test, c, IPT_MSR_RTIT_ADDR_A(0), 0);
	expect_gp(test, c, IPT_MSR_RTIT_ADDR_B(0), 0);
	expect_gp(test, c, IPT_MSR_RTIT_ADDR_A(1), 0);
	expect_gp(test, c, IPT_MSR_RTIT_ADDR_B(1), 0);
}

static void gp_status(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "skl");
	u64 v;

	expect_gp(test, c, MSR_IA32_RTIT_STATUS, BIT_ULL(3));
	expect_gp(test, c, MSR_IA32_RTIT_STATUS, BIT_ULL(8));
	expect_gp(test, c, MSR_IA32_RTIT_STATUS, BIT_ULL(49));
	/* PendPSB / PendTopaPMI need PSB and PMI preservation. */
	expect_gp(test, c, MSR_IA32_RTIT_STATUS, IPT_RTIT_STATUS_PENDPSB);
	expect_gp(test, c, MSR_IA32_RTIT_STATUS, IPT_RTIT_STATUS_PENDTOPAPMI);
	c = sim_cpu(test, "icl");
	expect_ok(test, c, MSR_IA32_RTIT_STATUS, IPT_RTIT_STATUS_PENDPSB);
	/* The processor's own bits ignore software; the rest sticks. */
	expect_ok(test, c, MSR_IA32_RTIT_STATUS, RTIT_STATUS_TRIGGEREN |
		  RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED | (5ULL << 32));
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_IA32_RTIT_STATUS, &v), 0);
	KUNIT_EXPECT_EQ(test, v, RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED | (5ULL << 32));
}

static void gp_output_base(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	unsigned int i;

	for (i = 0; i < 7; i++)
		expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_BASE, 0x1000 | BIT(i));
	expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_BASE, BIT_ULL(39));
	expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_BASE, BIT_ULL(63));
	/* Bits 11:7 are an operational error in ToPA mode, not a #GP. */
	expect_ok(test, c, MSR_IA32_RTIT_OUTPUT_BASE, 0x1080);
}

static void gp_cr3_match(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	unsigned int i;
	u64 v;

	for (i = 0; i < 5; i++)
		expect_gp(test, c, MSR_IA32_RTIT_CR3_MATCH, 0x1000 | BIT(i));
	expect_ok(test, c, MSR_IA32_RTIT_CR3_MATCH, 0x1020);
	/* Without CR3 filtering the MSR does not exist. */
	c = sim_cpu(test, "bdw-sro");
	expect_gp(test, c, MSR_IA32_RTIT_CR3_MATCH, 0);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_IA32_RTIT_CR3_MATCH, &v), -EIO);
	KUNIT_EXPECT_EQ(test, c->stats.gp, 2ULL);
}

static void gp_addr(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 v;

	expect_gp(test, c, IPT_MSR_RTIT_ADDR_A(0), 0x0000800000000000ULL);
	expect_gp(test, c, IPT_MSR_RTIT_ADDR_B(1), 0xffff7fffffffffffULL);
	expect_ok(test, c, IPT_MSR_RTIT_ADDR_A(0), 0xffff800000000000ULL);
	expect_ok(test, c, IPT_MSR_RTIT_ADDR_B(1), 0x00007fffffffffffULL);
	/* icl has two ranges: ADDR2/3 do not exist. */
	expect_gp(test, c, IPT_MSR_RTIT_ADDR_A(2), 0);
	expect_gp(test, c, IPT_MSR_RTIT_ADDR_B(3), 0);
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
	expect_gp(test, c, MSR_IA32_RTIT_OUTPUT_BASE, 0x1000);
	expect_gp(test, c, MSR_IA32_RTIT_STATUS, 0);
	expect_gp(test, c, MSR_IA32_RTIT_CTL, ctl | RTIT_CTL_OS);
	KUNIT_EXPECT_EQ(test, c->stats.clobbered, 0ULL);
	expect_ok(test, c, MSR_IA32_RTIT_CTL, 0);
	KUNIT_EXPECT_EQ(test, c->stats.clobbered, 1ULL);
	KUNIT_EXPECT_FALSE(test, c->foreign);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 0ULL);
}

static void gp_other_msrs(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 v;

	expect_gp(test, c, MSR_PLATFORM_INFO, 0);
	expect_gp(test, c, MSR_CORE_PERF_GLOBAL_STATUS, 0);
	expect_gp(test, c, 0x10, 0);
	expect_gp(test, c, MSR_CORE_PERF_GLOBAL_OVF_CTRL, BIT_ULL(40));
	expect_gp(test, c, MSR_IA32_XSS, BIT_ULL(11));
	expect_ok(test, c, MSR_IA32_XSS, XFEATURE_MASK_PT);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, 0x10, &v), -EIO);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_PLATFORM_INFO, &v), 0);
	KUNIT_EXPECT_EQ(test, v, 20ULL << 8);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_IA32_RTIT_OUTPUT_MASK, &v), 0);
	KUNIT_EXPECT_EQ(test, v, 0x7fULL);
	c = sim_cpu(test, "icl-noxsaves");
	expect_gp(test, c, MSR_IA32_XSS, XFEATURE_MASK_PT);
}

static struct kunit_case sim_gp_cases[] = {
	KUNIT_CASE(gp_ctl_while_tracing),
	KUNIT_CASE(gp_ctl_reserved),
	KUNIT_CASE(gp_ctl_unsupported_feature),
	KUNIT_CASE(gp_ctl_encodings),
	KUNIT_CASE(gp_ctl_addr_cfg),
	KUNIT_CASE(gp_ctl_no_output_scheme),
	KUNIT_CASE(gp_ctl_bdm106),
	KUNIT_CASE(gp_msrs_while_tracing),
	KUNIT_CASE(gp_status),
	KUNIT_CASE(gp_output_base),
	KUNIT_CASE(gp_cr3_match),
	KUNIT_CASE(gp_addr),
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

/* ---- ToPA and single-range output ------------------------------------ */

/* Region to region inside one table, byte-exact against the reference. */
static void topa_region_to_region(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa0, pa1, len;
	u8 *ref, *r0, *r1;
	u64 *table;

	len = sim_reference(test, "icl", CTL_TOPA, 6000, &ref);
	table = (u64 *)sim_mem(test, 0, &tpa);
	r0 = sim_mem(test, 0, &pa0);
	r1 = sim_mem(test, 1, &pa1);
	table[0] = topa_entry(pa0, 0, 0);
	table[1] = topa_entry(pa1, 1, 0);
	table[2] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, 6000);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, len);
	KUNIT_EXPECT_EQ(test, memcmp(r0, ref, SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r1, ref + SZ_4K, len - SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, c->output_base, tpa);
	KUNIT_EXPECT_EQ(test, out_index(c), 1ULL);
	KUNIT_EXPECT_EQ(test, out_offset(c), len - SZ_4K);
	KUNIT_EXPECT_EQ(test, c->status & RTIT_STATUS_ERROR, 0ULL);
}

/* END to a second table and back: a two-table ring. */
static void topa_end_next_table(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tapa, tbpa, pa0, pa1, len;
	u64 *ta, *tb;
	u8 *ref, *r0, *r1;

	len = sim_reference(test, "icl", CTL_TOPA, 10000, &ref);
	ta = (u64 *)sim_mem(test, 0, &tapa);
	tb = (u64 *)sim_mem(test, 0, &tbpa);
	r0 = sim_mem(test, 0, &pa0);
	r1 = sim_mem(test, 0, &pa1);
	ta[0] = topa_entry(pa0, 0, 0);
	ta[1] = topa_entry(tbpa, 0, IPT_TOPA_END);
	tb[0] = topa_entry(pa1, 0, 0);
	tb[1] = topa_entry(tapa, 0, IPT_TOPA_END);
	sim_start(test, c, tapa, 0x7f, CTL_TOPA);

	/* Exactly one region full: the END is followed at once. */
	sim_produce(c, SZ_4K);
	if (c->stats.bytes == SZ_4K) {
		KUNIT_EXPECT_EQ(test, c->output_base, tbpa);
		KUNIT_EXPECT_EQ(test, out_index(c), 0ULL);
	}
	sim_produce(c, 10000);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, len);
	KUNIT_EXPECT_EQ(test, c->output_base, tapa);
	KUNIT_EXPECT_EQ(test, out_index(c), 0ULL);
	KUNIT_EXPECT_EQ(test, out_offset(c), len - SZ_8K);
	KUNIT_EXPECT_EQ(test, memcmp(r0, ref + SZ_8K, len - SZ_8K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r0 + len - SZ_8K, ref + len - SZ_8K,
				     SZ_8K + SZ_4K - len), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r1, ref + SZ_4K, SZ_4K), 0);
}

/* One table whose END points at itself: a ring of two regions. */
static void topa_ring_wrap(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa0, pa1, len;
	u8 *ref, *r0, *r1;
	u64 *table;

	len = sim_reference(test, "icl", CTL_TOPA, 13000, &ref);
	table = (u64 *)sim_mem(test, 0, &tpa);
	r0 = sim_mem(test, 0, &pa0);
	r1 = sim_mem(test, 0, &pa1);
	table[0] = topa_entry(pa0, 0, 0);
	table[1] = topa_entry(pa1, 0, 0);
	table[2] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, 13000);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, len);
	KUNIT_EXPECT_EQ(test, c->output_base, tpa);
	KUNIT_EXPECT_EQ(test, out_index(c), 1ULL);
	KUNIT_EXPECT_EQ(test, out_offset(c), len - 3 * SZ_4K);
	KUNIT_EXPECT_EQ(test, memcmp(r0, ref + SZ_8K, SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r1, ref + 3 * SZ_4K, len - 3 * SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r1 + len - 3 * SZ_4K, ref + len - SZ_8K,
				     4 * SZ_4K - len), 0);
}

/* STOP: Stopped, TriggerEn clear, TraceEn still 1, offset = size. */
static void topa_stop(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa0, pa1, bytes;
	u8 *ref, *r0, *r1;
	u64 *table;

	sim_reference(test, "icl", CTL_TOPA, 5000, &ref);
	table = (u64 *)sim_mem(test, 0, &tpa);
	r0 = sim_mem(test, 0, &pa0);
	r1 = sim_mem(test, 0, &pa1);
	table[0] = topa_entry(pa0, 0, IPT_TOPA_STOP);
	table[1] = topa_entry(pa1, 0, 0);
	table[2] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, 5000);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, (u64)SZ_4K);
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_STOPPED);
	KUNIT_EXPECT_FALSE(test, c->status & RTIT_STATUS_TRIGGEREN);
	KUNIT_EXPECT_FALSE(test, c->status & RTIT_STATUS_ERROR);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->output_base, tpa);
	KUNIT_EXPECT_EQ(test, out_index(c), 0ULL);
	KUNIT_EXPECT_EQ(test, out_offset(c), (u64)SZ_4K);
	KUNIT_EXPECT_EQ(test, memcmp(r0, ref, SZ_4K), 0);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(r1, 0, SZ_4K));
	/* Disabling writes nothing more (no TIP.PGD after STOP). */
	bytes = c->stats.bytes;
	expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_TOPA & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, bytes);
	/* Re-enabling without clearing Stopped writes nothing either. */
	expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_TOPA);
	sim_produce(c, 6000);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, bytes);
	KUNIT_EXPECT_EQ(test, c->stats.op_errors, 0ULL);
}

/* INT: a PMI when the region fills, and output goes on. */
static void topa_int_pmi(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa0, pa1, v;
	u64 *table;

	table = (u64 *)sim_mem(test, 0, &tpa);
	sim_mem(test, 0, &pa0);
	sim_mem(test, 0, &pa1);
	table[0] = topa_entry(pa0, 0, 0);
	table[1] = topa_entry(pa1, 0, IPT_TOPA_INT);
	table[2] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, SZ_8K - 100);
	KUNIT_EXPECT_FALSE(test, c->pmi_pending);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 0ULL);
	sim_produce(c, SZ_8K + 100);
	KUNIT_EXPECT_TRUE(test, c->pmi_pending);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 1ULL);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_CORE_PERF_GLOBAL_STATUS, &v), 0);
	KUNIT_EXPECT_EQ(test, v, GLOBAL_STATUS_TRACE_TOPAPMI);
	KUNIT_EXPECT_GT(test, out_offset(c), 0ULL);
	KUNIT_EXPECT_EQ(test, out_index(c), 0ULL);
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_TRIGGEREN);
	/* The acknowledgment clears bit 55. */
	expect_ok(test, c, MSR_CORE_PERF_GLOBAL_OVF_CTRL, GLOBAL_STATUS_TRACE_TOPAPMI);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_CORE_PERF_GLOBAL_STATUS, &v), 0);
	KUNIT_EXPECT_EQ(test, v, 0ULL);
}

/* Single-entry ToPA: early PMI, wrap through the self-pointing END. */
static void topa_single_entry(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "glm");
	u64 tpa, pa0, len;
	u8 *ref, *r0;
	u64 *table;

	len = sim_reference(test, "glm", CTL_TOPA, 5000, &ref);
	table = (u64 *)sim_mem(test, 0, &tpa);
	r0 = sim_mem(test, 0, &pa0);
	table[0] = topa_entry(pa0, 0, IPT_TOPA_INT);
	table[1] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, SZ_4K - IPT_SIM_SINGLE_PMI_EARLY - 1);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 0ULL);
	sim_produce(c, SZ_4K - IPT_SIM_SINGLE_PMI_EARLY + 40);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 1ULL);
	KUNIT_EXPECT_LT(test, c->stats.bytes, (u64)SZ_4K);
	sim_produce(c, 5000);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, len);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 1ULL);
	KUNIT_EXPECT_EQ(test, c->output_base, tpa);
	KUNIT_EXPECT_EQ(test, out_index(c), 0ULL);
	KUNIT_EXPECT_EQ(test, out_offset(c), len - SZ_4K);
	KUNIT_EXPECT_EQ(test, memcmp(r0, ref + SZ_4K, len - SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r0 + len - SZ_4K, ref + len - SZ_4K,
				     SZ_8K - len), 0);
	KUNIT_EXPECT_EQ(test, c->stats.op_errors, 0ULL);
}

static void topa_single_entry_stop(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "glm");
	u64 tpa, pa0;
	u64 *table;

	table = (u64 *)sim_mem(test, 0, &tpa);
	sim_mem(test, 0, &pa0);
	table[0] = topa_entry(pa0, 0, IPT_TOPA_INT | IPT_TOPA_STOP);
	table[1] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, 5000);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, (u64)SZ_4K);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 1ULL);
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_STOPPED);
	KUNIT_EXPECT_EQ(test, out_offset(c), (u64)SZ_4K);
}

/* Single-range output wraps at the end of the range. */
static void single_range_wrap(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "bdw-sro");
	u64 pa, len;
	u8 *ref, *r;

	len = sim_reference(test, "bdw-sro", CTL_RANGE, 5000, &ref);
	r = sim_mem(test, 0, &pa);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	sim_produce(c, 5000);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, len);
	KUNIT_EXPECT_EQ(test, out_offset(c), len - SZ_4K);
	KUNIT_EXPECT_EQ(test, c->output_mask & 0xffffffff, (u64)SZ_4K - 1);
	KUNIT_EXPECT_EQ(test, memcmp(r, ref + SZ_4K, len - SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r + len - SZ_4K, ref + len - SZ_4K,
				     SZ_8K - len), 0);
}

/* PacketByteCnt counts the bytes since the last PSB. */
static void packet_byte_cnt(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa;

	sim_mem(test, 3, &pa);
	sim_start(test, c, pa, SZ_32K - 1, CTL_RANGE);
	KUNIT_EXPECT_EQ(test, FIELD_GET(RTIT_STATUS_BYTECNT, c->status), 31ULL);
	sim_produce(c, 1000);
	KUNIT_EXPECT_EQ(test, FIELD_GET(RTIT_STATUS_BYTECNT, c->status),
			c->stats.bytes);
}

/* An operational error: Error set, TriggerEn clear, nothing written. */
static void expect_op_error(struct kunit *test, struct ipt_sim_cpu *c)
{
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_ERROR);
	KUNIT_EXPECT_FALSE(test, c->status & RTIT_STATUS_TRIGGEREN);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.op_errors, 1ULL);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 0ULL);
	sim_produce(c, 100);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 0ULL);
}

/* A one-table ring with entry 0 = @e0; returns the table. */
static u64 *op_table(struct kunit *test, u64 *tpa, u64 *pa, unsigned int order)
{
	u64 *table = (u64 *)sim_mem(test, 0, tpa);

	sim_mem(test, order, pa);
	table[1] = topa_entry(*tpa, 0, IPT_TOPA_END);
	return table;
}

static void op_err_reserved_bit(struct kunit *test)
{
	static const unsigned int bits[] = { 1, 3, 5, 10, 11, 52, 60, 63 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bits); i++) {
		struct ipt_sim_cpu *c = sim_cpu(test, "icl");
		u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

		t[0] = topa_entry(pa, 0, BIT_ULL(bits[i]));
		sim_start(test, c, tpa, 0x7f, CTL_TOPA);
		expect_op_error(test, c);
	}
}

static void op_err_table_misaligned(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[16] = topa_entry(pa, 0, 0);
	t[17] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa + 0x80, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_region_misaligned(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 2);

	/* An 8 KiB region at a 4 KiB but not 8 KiB aligned address. */
	t[0] = topa_entry(pa + SZ_4K, 1, 0);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_beyond_maxphyaddr(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[0] = topa_entry(BIT_ULL(39), 0, 0);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_offset_too_big(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[0] = topa_entry(pa, 0, 0);
	sim_start(test, c, tpa, 0x7f | (u64)SZ_4K << 32, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_stop_on_end(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[0] = topa_entry(pa, 0, 0);
	t[1] |= IPT_TOPA_STOP;
	sim_start(test, c, tpa, 0x7f | 1 << 7, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_int_on_end(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[0] = topa_entry(pa, 0, 0);
	t[1] |= IPT_TOPA_INT;
	sim_start(test, c, tpa, 0x7f | 1 << 7, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_end_in_entry0(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[0] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_single_entry_shape(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "glm");
	u64 tpa, pa, pa2, *t = op_table(test, &tpa, &pa, 0);

	/* Two output entries on a single-entry part. */
	sim_mem(test, 0, &pa2);
	t[0] = topa_entry(pa, 0, 0);
	t[1] = topa_entry(pa2, 0, 0);
	t[2] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_single_entry_end_elsewhere(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "glm");
	u64 tpa, pa, t2pa, *t = op_table(test, &tpa, &pa, 0);

	sim_mem(test, 0, &t2pa);
	t[0] = topa_entry(pa, 0, 0);
	t[1] = topa_entry(t2pa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_forced(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa, bytes;

	sim_mem(test, 0, &pa);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	bytes = c->stats.bytes;
	ipt_sim_force_error(c);
	sim_produce(c, bytes + 100);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, bytes);
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_ERROR);
	/* Sticky: only software clears it, with TraceEn = 0. */
	expect_gp(test, c, MSR_IA32_RTIT_STATUS, 0);
	expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_ERROR);
	expect_ok(test, c, MSR_IA32_RTIT_STATUS, 0);
	KUNIT_EXPECT_FALSE(test, c->status & RTIT_STATUS_ERROR);
}

static struct kunit_case sim_output_cases[] = {
	KUNIT_CASE(topa_region_to_region),
	KUNIT_CASE(topa_end_next_table),
	KUNIT_CASE(topa_ring_wrap),
	KUNIT_CASE(topa_stop),
	KUNIT_CASE(topa_int_pmi),
	KUNIT_CASE(topa_single_entry),
	KUNIT_CASE(topa_single_entry_stop),
	KUNIT_CASE(single_range_wrap),
	KUNIT_CASE(packet_byte_cnt),
	KUNIT_CASE(op_err_reserved_bit),
	KUNIT_CASE(op_err_table_misaligned),
	KUNIT_CASE(op_err_region_misaligned),
	KUNIT_CASE(op_err_beyond_maxphyaddr),
	KUNIT_CASE(op_err_offset_too_big),
	KUNIT_CASE(op_err_stop_on_end),
	KUNIT_CASE(op_err_int_on_end),
	KUNIT_CASE(op_err_end_in_entry0),
	KUNIT_CASE(op_err_single_entry_shape),
	KUNIT_CASE(op_err_single_entry_end_elsewhere),
	KUNIT_CASE(op_err_forced),
	{}
};

static struct kunit_suite sim_output_suite = {
	.name = "ipt_sim_output",
	.init = sim_test_init,
	.exit = sim_test_exit,
	.test_cases = sim_output_cases,
};

/* ---- packets ---------------------------------------------------------- */

#define EXPECT_BYTES(test, got, ...) do {				\
	static const u8 __exp[] = { __VA_ARGS__ };			\
	KUNIT_EXPECT_EQ(test, memcmp(got, __exp, sizeof(__exp)), 0);	\
} while (0)

static void pkt_encodings(struct kunit *test)
{
	u8 b[16];

	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_psb(b), (size_t)16);
	EXPECT_BYTES(test, b, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		     0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_psbend(b), (size_t)2);
	EXPECT_BYTES(test, b, 0x02, 0x23);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_tsc(b, 0x11223344556677ULL), (size_t)8);
	EXPECT_BYTES(test, b, 0x19, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_tma(b, 0xbeef, 0x1ff), (size_t)7);
	EXPECT_BYTES(test, b, 0x02, 0x73, 0xef, 0xbe, 0x00, 0xff, 0x01);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_cbr(b, 0x14), (size_t)4);
	EXPECT_BYTES(test, b, 0x02, 0x03, 0x14, 0x00);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_mode_exec(b), (size_t)2);
	EXPECT_BYTES(test, b, 0x99, 0x01);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_ip(b, IPT_SIM_PKT_TIP_PGE, 0x401000),
			(size_t)7);
	EXPECT_BYTES(test, b, 0x71, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_ip(b, IPT_SIM_PKT_FUP,
					     0xffffffff81000000ULL), (size_t)7);
	EXPECT_BYTES(test, b, 0x7d, 0x00, 0x00, 0x00, 0x81, 0xff, 0xff);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_ip(b, IPT_SIM_PKT_TIP, 0x1234), (size_t)7);
	EXPECT_BYTES(test, b, 0x6d, 0x34, 0x12, 0x00, 0x00, 0x00, 0x00);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_ip(b, IPT_SIM_PKT_TIP_PGD,
					     IPT_SIM_IP_NONE), (size_t)1);
	EXPECT_BYTES(test, b, 0x01);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_mtc(b, 0xa5), (size_t)2);
	EXPECT_BYTES(test, b, 0x59, 0xa5);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_ovf(b), (size_t)2);
	EXPECT_BYTES(test, b, 0x02, 0xf3);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_cyc(b, 0x1f), (size_t)1);
	EXPECT_BYTES(test, b, 0xfb);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_cyc(b, 100), (size_t)2);
	EXPECT_BYTES(test, b, 0x27, 0x06);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_cyc(b, 0x1000), (size_t)3);
	EXPECT_BYTES(test, b, 0x07, 0x01, 0x02);
}

/* A 32 KiB single range for packet tests; returns its kernel address. */
static u8 *pkt_start(struct kunit *test, struct ipt_sim_cpu *c, u64 ctl)
{
	u64 pa;
	u8 *out = sim_mem(test, 3, &pa);

	sim_start(test, c, pa, SZ_32K - 1, ctl);
	return out;
}

/* PacketByteCnt = 0: PSB+ (without FUP), then TIP.PGE. */
static void pkt_enable_psb(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	c->tsc = 0x123456789aULL;
	out = pkt_start(test, c, CTL_RANGE | RTIT_CTL_TSC_EN | RTIT_CTL_MTC_EN);
	/* CTC = TSC / 104 * 2 = 0x599f338c */
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 46ULL);
	EXPECT_BYTES(test, out, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		     0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		     0x19, 0x9a, 0x78, 0x56, 0x34, 0x12, 0x00, 0x00,
		     0x02, 0x73, 0x8c, 0x33, 0x00, 0x00, 0x00,
		     0x02, 0x03, 0x14, 0x00,
		     0x99, 0x01,
		     0x02, 0x23,
		     0x71, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00);
	KUNIT_EXPECT_EQ(test, c->stats.psb, 1ULL);
	KUNIT_EXPECT_TRUE(test, c->packet_en);
}

/* PacketByteCnt > 0: TSC, TMA, CBR, MODE.Exec, TIP.PGE; no PSB. */
static void pkt_enable_no_psb(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 ctl = CTL_RANGE | RTIT_CTL_TSC_EN | RTIT_CTL_MTC_EN;
	u8 *out;

	out = pkt_start(test, c, ctl);
	ipt_sim_run(c, 3);
	expect_ok(test, c, MSR_IA32_RTIT_CTL, ctl & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 46ULL + 3 + 8);
	/* Disable: FUP at the loop's jmp, TIP.PGD without IP. */
	EXPECT_BYTES(test, out + 46, LOOP_TNT, LOOP_TNT, LOOP_TNT,
		     0x7d, 0x09, 0x10, 0x40, 0x00, 0x00, 0x00, 0x01);
	c->tsc = 208;	/* CTC 4 */
	expect_ok(test, c, MSR_IA32_RTIT_CTL, ctl);
	EXPECT_BYTES(test, out + 57, 0x19, 0xd0, 0, 0, 0, 0, 0, 0,
		     0x02, 0x73, 0x04, 0x00, 0x00, 0x00, 0x00,
		     0x02, 0x03, 0x14, 0x00, 0x99, 0x01,
		     0x71, 0x09, 0x10, 0x40, 0x00, 0x00, 0x00);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 57ULL + 28);
	KUNIT_EXPECT_EQ(test, c->stats.psb, 1ULL);
}

/* No PacketEn (User = 0 for user code): PSB+ only, no TIP.PGE. */
static void pkt_enable_no_packet_en(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	out = pkt_start(test, c, CTL_RANGE & ~RTIT_CTL_USR);
	KUNIT_EXPECT_FALSE(test, c->packet_en);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 24ULL);
	EXPECT_BYTES(test, out + 16, 0x02, 0x03, 0x14, 0x00, 0x99, 0x01,
		     0x02, 0x23);
	ipt_sim_run(c, 100);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 24ULL);
}

/* A PSB+ (with FUP) every 2K << PSBFreq bytes. */
static void pkt_psb_interval(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 ctl = CTL_RANGE | FIELD_PREP(RTIT_CTL_PSB_FREQ, 1);
	u8 *out;

	out = pkt_start(test, c, ctl);
	ipt_sim_run(c, SZ_8K + 100);
	KUNIT_EXPECT_EQ(test, out[SZ_4K - 1], LOOP_TNT);
	EXPECT_BYTES(test, out + SZ_4K, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		     0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		     0x02, 0x03, 0x14, 0x00, 0x99, 0x01,
		     0x7d, 0x09, 0x10, 0x40, 0x00, 0x00, 0x00, 0x02, 0x23,
		     LOOP_TNT);
	EXPECT_BYTES(test, out + SZ_8K, 0x02, 0x82);
	KUNIT_EXPECT_EQ(test, out[SZ_8K - 1], LOOP_TNT);
	KUNIT_EXPECT_EQ(test, c->stats.psb, 3ULL);
}

/* Dropped bytes: OVF then FUP with the current IP. */
static void pkt_ovf(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	out = pkt_start(test, c, CTL_RANGE);
	c->drop = 10;
	ipt_sim_run(c, 12);
	KUNIT_EXPECT_EQ(test, c->stats.dropped, 10ULL);
	KUNIT_EXPECT_EQ(test, c->stats.ovf, 1ULL);
	EXPECT_BYTES(test, out + 31, 0x02, 0xf3,
		     0x7d, 0x09, 0x10, 0x40, 0x00, 0x00, 0x00, LOOP_TNT);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 10);
}

static void pkt_mtc_cyc(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	out = pkt_start(test, c, CTL_RANGE | RTIT_CTL_MTC_EN | RTIT_CTL_CYCLEACC);
	c->tsc = 1040;	/* CTC 20 */
	ipt_sim_run(c, 3);	/* the MTC counts against the budget */
	/* MTC with CTC[7:0], CYC of 1040 cycles, then the TNT. */
	EXPECT_BYTES(test, out + 31, 0x59, 0x14, 0x87, 0x40, LOOP_TNT);
	ipt_sim_run(c, 1);
	/* Same time: no MTC, no CYC. */
	KUNIT_EXPECT_EQ(test, out[31 + 5], LOOP_TNT);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 6);
}

/*
 * Feed records are written verbatim, the IP follows them, and a leading
 * IP-only record sets the IP the enable packets carry.
 */
static void pkt_feed(struct kunit *test)
{
	static const u8 feed[] = {
		/* len 0: set the IP to 0x400100 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* len 8: TNT-8 (T), TIP 0x400200 (IPBytes 011) */
		0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x02, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x06, 0x6d, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00,
	};
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out, *buf;

	buf = kunit_kzalloc(test, sizeof(feed) + 8, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	memcpy(buf, feed, sizeof(feed));
	/* A partial header at the end waits for more. */
	c->feed.buf = buf;
	c->feed.len = sizeof(feed) + 8;
	c->feed.cap = sizeof(feed) + 8;
	ipt_sim_run(c, 100);	/* TraceEn = 0: nothing consumed */
	KUNIT_EXPECT_EQ(test, c->feed.pos, (size_t)0);
	out = pkt_start(test, c, CTL_RANGE);
	/* The leading IP-only record gave the enable's TIP.PGE its IP. */
	KUNIT_EXPECT_EQ(test, c->feed.pos, (size_t)16);
	EXPECT_BYTES(test, out + 24, 0x71, 0x00, 0x01, 0x40, 0x00, 0x00, 0x00);
	ipt_sim_run(c, 100);
	KUNIT_EXPECT_EQ(test, c->feed.pos, sizeof(feed));
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 8);
	EXPECT_BYTES(test, out + 31, 0x06, 0x6d, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00);
	KUNIT_EXPECT_EQ(test, c->ip, 0x400200ULL);
	expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	EXPECT_BYTES(test, out + 39, 0x7d, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00, 0x01);
}

/*
 * A record flagged CTX_OFF (the program left the traced context, e.g. a
 * system call) keeps the unit's own FUPs out: PSB+ without FUP, and no
 * FUP + TIP.PGD when TraceEn is cleared.
 */
static void pkt_feed_ctx_off(struct kunit *test)
{
	static const u8 feed[] = {
		/* len 0: start at 0x400100 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* len 1, CTX_OFF: TIP.PGD without IP; at 0x400200 */
		0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x02, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x01,
	};
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out, *buf;

	buf = kunit_kzalloc(test, sizeof(feed), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	memcpy(buf, feed, sizeof(feed));
	c->feed.buf = buf;
	c->feed.len = sizeof(feed);
	c->feed.cap = sizeof(feed);
	out = pkt_start(test, c, CTL_RANGE);
	ipt_sim_run(c, 100);
	KUNIT_EXPECT_EQ(test, c->feed.pos, sizeof(feed));
	KUNIT_EXPECT_TRUE(test, c->feed_ctx_off);
	KUNIT_EXPECT_EQ(test, out[31], 0x01);
	/* Disable: nothing more is written. */
	expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 1);
	KUNIT_EXPECT_EQ(test, out[32], 0x00);
}

/*
 * A context switch to another program (ipt_sim_switch_out()): FUP and
 * TIP.PGD for the program leaving, then nothing until the next program
 * runs user code, which starts with TIP.PGE at its IP.  An enable in
 * between (the driver's switch-in) writes no TIP.PGE of its own.
 */
static void pkt_switch_programs(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	out = pkt_start(test, c, CTL_RANGE);
	ipt_sim_run(c, 1);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, 31ULL + 1);
	ipt_sim_switch_out(c);
	KUNIT_EXPECT_EQ(test, c->stats.switches, 1ULL);
	KUNIT_EXPECT_FALSE(test, c->packet_en);
	KUNIT_EXPECT_TRUE(test, c->pge_pending);
	EXPECT_BYTES(test, out + 32, 0x7d, 0x09, 0x10, 0x40, 0x00, 0x00, 0x00, 0x01);
	/* The driver's switch-out and switch-in, in the kernel. */
	expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 1 + 8);
	c->ip = 0x400500;
	expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
	KUNIT_EXPECT_FALSE(test, c->packet_en);
	/* CBR only (PacketByteCnt > 0, no TSC), no MODE.Exec, no TIP.PGE. */
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 1 + 8 + 4);
	EXPECT_BYTES(test, out + 40, 0x02, 0x03, 0x14, 0x00);
	/* The new program runs: TIP.PGE at its IP, then its packets. */
	ipt_sim_run(c, 8);
	KUNIT_EXPECT_FALSE(test, c->pge_pending);
	KUNIT_EXPECT_TRUE(test, c->packet_en);
	EXPECT_BYTES(test, out + 44, 0x71, 0x00, 0x05, 0x40, 0x00, 0x00, 0x00, LOOP_TNT);
}

/* Without output on (TraceEn = 0) a switch writes nothing. */
static void pkt_switch_untraced(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");

	ipt_sim_switch_out(c);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 0ULL);
	KUNIT_EXPECT_TRUE(test, c->pge_pending);
}

static struct kunit_case sim_pkt_cases[] = {
	KUNIT_CASE(pkt_encodings),
	KUNIT_CASE(pkt_enable_psb),
	KUNIT_CASE(pkt_enable_no_psb),
	KUNIT_CASE(pkt_enable_no_packet_en),
	KUNIT_CASE(pkt_psb_interval),
	KUNIT_CASE(pkt_ovf),
	KUNIT_CASE(pkt_mtc_cyc),
	KUNIT_CASE(pkt_feed),
	KUNIT_CASE(pkt_feed_ctx_off),
	KUNIT_CASE(pkt_switch_programs),
	KUNIT_CASE(pkt_switch_untraced),
	{}
};

static struct kunit_suite sim_pkt_suite = {
	.name = "ipt_sim_packets",
	.init = sim_test_init,
	.exit = sim_test_exit,
	.test_cases = sim_pkt_cases,
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
	expect_ok(test, c, MSR_IA32_XSS, XFEATURE_MASK_PT);
	expect_ok(test, c, MSR_IA32_RTIT_CR3_MATCH, 0x5000);
	expect_ok(test, c, IPT_MSR_RTIT_ADDR_A(0), 0x400000);
	expect_ok(test, c, IPT_MSR_RTIT_ADDR_B(0), 0x402000);
	expect_ok(test, c, IPT_MSR_RTIT_ADDR_A(1), 0x1000);
	expect_ok(test, c, IPT_MSR_RTIT_ADDR_B(1), 0x2000);
	sim_start(test, c, pa, SZ_32K - 1, CTL_RANGE);
	ipt_sim_run(c, 10);
	return area;
}

/* Layout: header, then the nine fields at 576; CTL saved before disable. */
static void xsaves_layout_order(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out, *area = xs_start(test, c, &out);
	u64 *hdr = (u64 *)(area + IPT_XSAVE_HDR_OFFSET);
	u64 bytes = c->stats.bytes;

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
	/* Nothing beyond the nine fields, nothing in the legacy area. */
	KUNIT_EXPECT_TRUE(test, !memchr_inv(area, 0, IPT_XSAVE_HDR_OFFSET));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(area + IPT_XSAVE_PT_OFFSET + 72, 0,
					    IPT_XSAVE_PT_SIZE - 72));
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
	expect_ok(test, c, MSR_IA32_RTIT_OUTPUT_MASK, 0);
	expect_ok(test, c, IPT_MSR_RTIT_ADDR_A(1), 0);
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

	/* IA32_XSS bit 8 clear. */
	KUNIT_EXPECT_EQ(test, ipt_sim_xsaves(c, area), -EIO);
	KUNIT_EXPECT_EQ(test, ipt_sim_xrstors(c, area), -EIO);
	expect_ok(test, c, MSR_IA32_XSS, XFEATURE_MASK_PT);
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
	KUNIT_EXPECT_EQ(test, c->stats.gp, 7ULL);
	/* XSTATE_BV bit 8 clear: the initial state. */
	hdr[0] = 0;
	expect_ok(test, c, MSR_IA32_RTIT_CR3_MATCH, 0x5000);
	KUNIT_EXPECT_EQ(test, ipt_sim_xrstors(c, area), 0);
	KUNIT_EXPECT_EQ(test, c->cr3_match, 0ULL);
	/* A model whose XSAVES lacks PT. */
	c = sim_cpu(test, "icl-noxsaves");
	KUNIT_EXPECT_EQ(test, ipt_sim_xsaves(c, area), -EIO);
}

static struct kunit_case sim_xsaves_cases[] = {
	KUNIT_CASE(xsaves_layout_order),
	KUNIT_CASE(xrstors_roundtrip),
	KUNIT_CASE(xrstors_gp_tracing),
	KUNIT_CASE(xrstors_gp_write_rules),
	KUNIT_CASE(xsaves_gp),
	{}
};

static struct kunit_suite sim_xsaves_suite = {
	.name = "ipt_sim_xsaves",
	.init = sim_test_init,
	.exit = sim_test_exit,
	.test_cases = sim_xsaves_cases,
};

/* ---- the live units: timer, PMI, locking ----------------------------- */

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

kunit_test_suites(&sim_model_suite, &sim_gp_suite, &sim_output_suite,
		  &sim_pkt_suite, &sim_xsaves_suite, &sim_live_suite);

MODULE_DESCRIPTION("KUnit tests for the simulated PT unit");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

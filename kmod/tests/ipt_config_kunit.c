// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for ipt.ko's configuration checks against every simulated
 * CPU model (built into ipt_sim_kunit.ko, which has both modules'
 * symbols): ipt_sim_config: what ipt_config_check() accepts on a model,
 * the model's unit accepts as MSR writes (no #GP), and what it refuses
 * comes with the errno the model's capabilities call for.
 */
#include <kunit/test.h>
#include <linux/bitfield.h>
#include <linux/gfp.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/string.h>

#include "../ipt.h"
#include "../sim/ipt_sim.h"

static const struct ipt_sim_model *cfg_model;

static void cfg_cpuid(u32 leaf, u32 subleaf, struct ipt_cpuid_regs *r)
{
	ipt_sim_cpuid(cfg_model, leaf, subleaf, r);
}

static int cfg_rdmsr(u32 msr, u64 *val)
{
	struct ipt_sim_cpu c = {};

	ipt_sim_cpu_init(&c, cfg_model);
	return ipt_sim_rdmsr(&c, msr, val);
}

static int cfg_wrmsr(u32 msr, u64 val)
{
	return -EIO;
}

static const struct ipt_hw_ops cfg_ops = {
	.name = "config-kunit",
	.backend = IPT_BACKEND_SIM,
	.cpuid = cfg_cpuid,
	.read_msr = cfg_rdmsr,
	.write_msr = cfg_wrmsr,
};

static void base_config(struct ipt_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->mode = IPT_MODE_CPU;
	cfg->trace_flags = IPT_TRACE_USER | IPT_TRACE_BRANCH | IPT_TRACE_TSC;
}

/*
 * Program @hw on a fresh unit of the model as a session would, into a
 * one-page ring (a table with one output entry and END back to itself,
 * which single-entry units accept too), enable it, run it, stop it, and
 * start it again with the STATUS a restart writes back (@hw's
 * status_keep of what the stop read): every #GP the model has on the way
 * (BDM106 on enable, PacketByteCnt without configurable PSB) fails it.
 */
static int program(const struct ipt_caps *caps, const struct ipt_hwcfg *hw)
{
	struct ipt_sim_cpu c = {};
	struct page *pages;
	u64 *table, status = 0;
	unsigned int i, pass;
	int ret = 0;

	pages = alloc_pages(GFP_KERNEL | __GFP_ZERO, 1);
	if (!pages)
		return -ENOMEM;
	table = page_address(pages);
	table[0] = page_to_phys(pages + 1);
	table[1] = page_to_phys(pages) | IPT_TOPA_END;

	ipt_sim_cpu_init(&c, cfg_model);
	for (pass = 0; !ret && pass < 2; pass++) {
		ret = ipt_sim_wrmsr(&c, MSR_IA32_RTIT_OUTPUT_BASE,
				    page_to_phys(pages));
		if (!ret)
			ret = ipt_sim_wrmsr(&c, MSR_IA32_RTIT_OUTPUT_MASK,
					    IPT_RTIT_MASK_LOW);
		if (!ret)
			ret = ipt_sim_wrmsr(&c, MSR_IA32_RTIT_STATUS,
					    status & hw->status_keep);
		if (!ret && (caps->features & IPT_FEAT_CR3_FILTER))
			ret = ipt_sim_wrmsr(&c, MSR_IA32_RTIT_CR3_MATCH,
					    hw->cr3_match);
		for (i = 0; !ret && i < caps->num_addr_ranges; i++) {
			ret = ipt_sim_wrmsr(&c, IPT_MSR_RTIT_ADDR_A(i),
					    hw->addr_a[i]);
			if (!ret)
				ret = ipt_sim_wrmsr(&c, IPT_MSR_RTIT_ADDR_B(i),
						    hw->addr_b[i]);
		}
		if (!ret)
			ret = ipt_sim_wrmsr(&c, MSR_IA32_RTIT_CTL, hw->ctl);
		if (!ret)
			ret = ipt_sim_wrmsr(&c, MSR_IA32_RTIT_CTL,
					    hw->ctl | RTIT_CTL_TRACEEN);
		if (!ret) {
			c.tsc += 1000;
			ipt_sim_run(&c, 100);
			ret = ipt_sim_wrmsr(&c, MSR_IA32_RTIT_CTL, hw->ctl);
		}
		if (!ret)
			ret = ipt_sim_rdmsr(&c, MSR_IA32_RTIT_STATUS, &status);
	}
	__free_pages(pages, 1);
	return ret;
}

struct cfg_case {
	const char *what;
	u64 add_flags;
	u32 mtc, cyc, psb;
	u64 cr3;
	unsigned int range;	/* 1 + index of a filter range, or 0 */
	u64 need;		/* features it needs */
	u32 field;		/* which mask its encoding needs: 1 mtc 2 cyc 3 psb */
	u64 clear_flags;	/* trace flags taken away */
	bool la57;		/* range 0 canonical to 57 bits only */
};

/* Canonical to 57 bits (bits 63:56 equal), not to 48. */
#define LA57_START	0x00ff800000401000ULL

static const struct cfg_case cfg_cases[] = {
	{ "plain" },
	{ "kernel", IPT_TRACE_KERNEL },
	{ "no retcomp", IPT_TRACE_NO_RETCOMP },
	{ "mtc 3", IPT_TRACE_MTC, 3, 0, 0, 0, 0, IPT_FEAT_MTC, 1 },
	{ "mtc 1", IPT_TRACE_MTC, 1, 0, 0, 0, 0, IPT_FEAT_MTC, 1 },
	{ "cyc 0", IPT_TRACE_CYC, 0, 0, 0, 0, 0, IPT_FEAT_PSB_CYC, 2 },
	{ "cyc 12", IPT_TRACE_CYC, 0, 12, 0, 0, 0, IPT_FEAT_PSB_CYC, 2 },
	{ "cyc 13", IPT_TRACE_CYC, 0, 13, 0, 0, 0, IPT_FEAT_PSB_CYC, 2 },
	{ "psb 5", 0, 0, 0, 5, 0, 0, IPT_FEAT_PSB_CYC, 3 },
	{ "psb 6", 0, 0, 0, 6, 0, 0, IPT_FEAT_PSB_CYC, 3 },
	{ "ptwrite", IPT_TRACE_PTWRITE | IPT_TRACE_PTWRITE_FUP, 0, 0, 0, 0, 0,
	  IPT_FEAT_PTWRITE },
	{ "power", IPT_TRACE_POWER_EVENTS, 0, 0, 0, 0, 0,
	  IPT_FEAT_POWER_EVENTS },
	{ "cr3", IPT_TRACE_CR3_FILTER, 0, 0, 0, 0x1000, 0, IPT_FEAT_CR3_FILTER },
	{ "range 0", 0, 0, 0, 0, 0, 1, IPT_FEAT_IP_FILTER },
	{ "range 1", 0, 0, 0, 0, 0, 2, IPT_FEAT_IP_FILTER },
	{ "range 2", 0, 0, 0, 0, 0, 3, IPT_FEAT_IP_FILTER },
	{ "range 3", 0, 0, 0, 0, 0, 4, IPT_FEAT_IP_FILTER },
	/* BDM106: refused at configure, not #GP at start. */
	{ "no branch", .clear_flags = IPT_TRACE_BRANCH },
	{ "no branch, mtc", IPT_TRACE_MTC, 3, .need = IPT_FEAT_MTC, .field = 1,
	  .clear_flags = IPT_TRACE_BRANCH },
	/* Canonical by the CPU's linear address width. */
	{ "range la57", .range = 1, .need = IPT_FEAT_IP_FILTER, .la57 = true },
};

/* The errno ipt_config_check() owes @c on a unit with @caps. */
static int expected(const struct cfg_case *c, const struct ipt_caps *caps)
{
	/* ToPA is needed; one output entry per table is enough. */
	if (!(caps->features & IPT_FEAT_TOPA))
		return -EOPNOTSUPP;
	/* What the model's unit would #GP on enable (erratum BDM106). */
	if ((c->clear_flags & IPT_TRACE_BRANCH) && cfg_model->bdm106)
		return -EINVAL;
	/* Malformed whatever the unit has: checked before the count. */
	if (c->la57 && cfg_model->virt_bits < 57)
		return -EINVAL;
	if (c->need && !(caps->features & c->need)) {
		/* PSBFreq 0 is what every unit does. */
		if (c->field == 3 && !c->psb)
			return 0;
		return -EOPNOTSUPP;
	}
	if (c->field == 1 && !(caps->mtc_freq_mask & BIT(c->mtc)))
		return -EOPNOTSUPP;
	if (c->field == 2 && !(caps->cyc_thresh_mask & BIT(c->cyc)))
		return -EOPNOTSUPP;
	if (c->field == 3 && !(caps->psb_freq_mask & BIT(c->psb)))
		return -EOPNOTSUPP;
	if (c->range > caps->num_addr_ranges)
		return -EOPNOTSUPP;
	return 0;
}

static void config_against_models(struct kunit *test)
{
	unsigned int m, i;

	for (m = 0; m < ipt_sim_nr_models; m++) {
		struct ipt_caps caps;

		cfg_model = &ipt_sim_models[m];
		KUNIT_ASSERT_EQ(test, ipt_caps_probe(&cfg_ops, &caps),
				IPT_UNAVAIL_NONE);
		for (i = 0; i < ARRAY_SIZE(cfg_cases); i++) {
			const struct cfg_case *c = &cfg_cases[i];
			struct ipt_config cfg;
			struct ipt_hwcfg hw;
			int ret, want = expected(c, &caps);

			base_config(&cfg);
			cfg.trace_flags |= c->add_flags;
			cfg.trace_flags &= ~c->clear_flags;
			cfg.mtc_freq = c->mtc;
			cfg.cyc_thresh = c->cyc;
			cfg.psb_freq = c->psb;
			cfg.cr3_match = c->cr3;
			if (c->range) {
				cfg.ranges[c->range - 1].kind = IPT_RANGE_FILTER;
				cfg.ranges[c->range - 1].start = IPT_SIM_CODE_BASE;
				cfg.ranges[c->range - 1].end = IPT_SIM_CODE_LOOP_END;
			}
			if (c->la57) {
				cfg.ranges[0].start = LA57_START;
				cfg.ranges[0].end = LA57_START + 0x1000;
			}
			memset(&hw, 0xa5, sizeof(hw));
			ret = ipt_config_check(&cfg, &caps, true, &hw);
			KUNIT_EXPECT_EQ_MSG(test, ret, want, "%s: %s",
					    cfg_model->name, c->what);
			if (ret)
				continue;
			KUNIT_EXPECT_EQ_MSG(test, hw.ctl & RTIT_CTL_TRACEEN, 0ULL,
					    "%s: %s", cfg_model->name, c->what);
			KUNIT_EXPECT_EQ_MSG(test, program(&caps, &hw), 0,
					    "%s: %s: ctl %#llx", cfg_model->name,
					    c->what, hw.ctl);
		}
	}
}

/* Malformed input, whatever the model. */
static void config_malformed(struct kunit *test)
{
	struct ipt_config cfg;
	struct ipt_hwcfg hw;
	struct ipt_caps caps;
	u64 want;

	cfg_model = ipt_sim_model_by_name("icl");	/* everything */
	KUNIT_ASSERT_NOT_NULL(test, cfg_model);
	KUNIT_ASSERT_EQ(test, ipt_caps_probe(&cfg_ops, &caps), IPT_UNAVAIL_NONE);

#define EXPECT_CFG(err, priv, stmt) do {					\
		base_config(&cfg);					\
		stmt;							\
		KUNIT_EXPECT_EQ_MSG(test, ipt_config_check(&cfg, &caps, priv, &hw), \
				    err, #stmt);			\
	} while (0)

	EXPECT_CFG(0, false, (void)0);
	EXPECT_CFG(-EPERM, false, cfg.trace_flags |= IPT_TRACE_KERNEL);
	EXPECT_CFG(-EINVAL, true, cfg.trace_flags = IPT_TRACE_BRANCH);
	EXPECT_CFG(-EINVAL, true, cfg.trace_flags |= BIT_ULL(40));
	EXPECT_CFG(0, true, cfg.mode = IPT_MODE_THREAD);
	EXPECT_CFG(-EINVAL, true, cfg.mode = 0);
	EXPECT_CFG(-EINVAL, true, cfg.mtc_freq = 3);
	EXPECT_CFG(-EINVAL, true, cfg.trace_flags |= IPT_TRACE_MTC; cfg.mtc_freq = 16);
	EXPECT_CFG(-EINVAL, true, cfg.cyc_thresh = 1);
	EXPECT_CFG(-EINVAL, true, cfg.psb_freq = 16);
	EXPECT_CFG(-EINVAL, true, cfg.trace_flags |= IPT_TRACE_PTWRITE_FUP);
	EXPECT_CFG(-EINVAL, true, cfg.cr3_match = 0x2000);
	EXPECT_CFG(-EINVAL, true, cfg.trace_flags |= IPT_TRACE_CR3_FILTER;
		   cfg.cr3_match = 0x2010);
	EXPECT_CFG(-EINVAL, true, cfg.ranges[0].kind = 3);
	EXPECT_CFG(-EINVAL, true, cfg.ranges[0].reserved = 1);
	EXPECT_CFG(-EINVAL, true, cfg.ranges[0].end = 5);
	EXPECT_CFG(-EINVAL, true, cfg.ranges[0].kind = 1; cfg.ranges[0].start = 5;
		   cfg.ranges[0].end = 4);
	EXPECT_CFG(-EINVAL, true, cfg.ranges[0].kind = 2;
		   cfg.ranges[0].end = 0x0000800000000000ULL);
	EXPECT_CFG(0, true, cfg.ranges[1].kind = 2;
		   cfg.ranges[1].start = 0xffff800000000000ULL;
		   cfg.ranges[1].end = ~0ULL);
	/* The CTL of a full configuration, bit by bit. */
	base_config(&cfg);
	cfg.trace_flags |= IPT_TRACE_KERNEL | IPT_TRACE_MTC | IPT_TRACE_CYC |
			   IPT_TRACE_NO_RETCOMP | IPT_TRACE_CR3_FILTER;
	cfg.mtc_freq = 9;
	cfg.cyc_thresh = 4;
	cfg.psb_freq = 2;
	cfg.cr3_match = 0x1000;
	cfg.ranges[1].kind = 2;
	cfg.ranges[1].start = 0x1000;
	cfg.ranges[1].end = 0x2000;
	KUNIT_ASSERT_EQ(test, ipt_config_check(&cfg, &caps, true, &hw), 0);
	want = RTIT_CTL_TOPA | RTIT_CTL_USR | RTIT_CTL_OS |
	       RTIT_CTL_BRANCH_EN | RTIT_CTL_TSC_EN | RTIT_CTL_MTC_EN |
	       RTIT_CTL_CYCLEACC | RTIT_CTL_DISRETC |
	       RTIT_CTL_CR3EN | (2ULL << 36);
	want |= FIELD_PREP(RTIT_CTL_MTC_RANGE, 9);
	want |= FIELD_PREP(RTIT_CTL_CYC_THRESH, 4);
	want |= FIELD_PREP(RTIT_CTL_PSB_FREQ, 2);
	KUNIT_EXPECT_EQ(test, hw.ctl, want);
	KUNIT_EXPECT_EQ(test, hw.cr3_match, 0x1000ULL);
	KUNIT_EXPECT_EQ(test, hw.addr_a[1], 0x1000ULL);
	KUNIT_EXPECT_EQ(test, hw.addr_b[1], 0x2000ULL);
#undef EXPECT_CFG
}

/*
 * The CR3 filter under page-table isolation: user mode runs on CR3 | bit 12
 * (| bit 11 with PCID), so a user-only filter programs that value, a
 * kernel-only one the value as given, and one for both modes is refused.
 */
static void config_cr3_pti(struct kunit *test)
{
	static const struct {
		const char *what;
		u64 platform;
		u64 modes;
		u64 cr3;
		int err;
		u64 match;
	} cases[] = {
		{ "no PTI, user", 0, IPT_TRACE_USER, 0x2000, 0, 0x2000 },
		{ "no PTI, both", 0, IPT_TRACE_USER | IPT_TRACE_KERNEL, 0x3000, 0, 0x3000 },
		{ "PCID alone, user", IPT_PLAT_PCID, IPT_TRACE_USER, 0x2000, 0, 0x2000 },
		{ "PTI, user", IPT_PLAT_PTI, IPT_TRACE_USER, 0x2000, 0, 0x3000 },
		{ "PTI, user, given the user CR3", IPT_PLAT_PTI, IPT_TRACE_USER,
		  0x3000, 0, 0x3000 },
		{ "PTI+PCID, user", IPT_PLAT_PTI | IPT_PLAT_PCID, IPT_TRACE_USER,
		  0x2000, 0, 0x3800 },
		{ "PTI, kernel", IPT_PLAT_PTI, IPT_TRACE_KERNEL, 0x2000, 0, 0x2000 },
		{ "PTI, kernel, a user CR3", IPT_PLAT_PTI, IPT_TRACE_KERNEL,
		  0x3000, -EINVAL, 0 },
		{ "PTI+PCID, kernel, user PCID", IPT_PLAT_PTI | IPT_PLAT_PCID,
		  IPT_TRACE_KERNEL, 0x2800, -EINVAL, 0 },
		{ "PTI, both", IPT_PLAT_PTI, IPT_TRACE_USER | IPT_TRACE_KERNEL,
		  0x2000, -EINVAL, 0 },
		{ "PTI, bits 4:0", IPT_PLAT_PTI, IPT_TRACE_USER, 0x2001, -EINVAL, 0 },
	};
	struct ipt_config cfg;
	struct ipt_hwcfg hw;
	struct ipt_caps caps;
	unsigned int i;

	cfg_model = ipt_sim_model_by_name("skl");
	KUNIT_ASSERT_NOT_NULL(test, cfg_model);
	KUNIT_ASSERT_EQ(test, ipt_caps_probe(&cfg_ops, &caps), IPT_UNAVAIL_NONE);
	KUNIT_ASSERT_EQ(test, caps.platform, 0ULL);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		caps.platform = cases[i].platform;
		base_config(&cfg);
		cfg.trace_flags &= ~IPT_TRACE_USER;
		cfg.trace_flags |= cases[i].modes | IPT_TRACE_CR3_FILTER;
		cfg.cr3_match = cases[i].cr3;
		memset(&hw, 0xa5, sizeof(hw));
		KUNIT_EXPECT_EQ_MSG(test, ipt_config_check(&cfg, &caps, true, &hw),
				    cases[i].err, "%s", cases[i].what);
		if (cases[i].err) {
			/* Untouched on failure. */
			KUNIT_EXPECT_EQ_MSG(test, hw.cr3_match, 0xa5a5a5a5a5a5a5a5ULL,
					    "%s", cases[i].what);
			continue;
		}
		KUNIT_EXPECT_EQ_MSG(test, hw.cr3_match, cases[i].match, "%s",
				    cases[i].what);
		KUNIT_EXPECT_TRUE_MSG(test, hw.ctl & RTIT_CTL_CR3EN, "%s",
				      cases[i].what);
	}
}

static struct kunit_case config_cases[] = {
	KUNIT_CASE(config_against_models),
	KUNIT_CASE(config_malformed),
	KUNIT_CASE(config_cr3_pti),
	{}
};

static struct kunit_suite config_suite = {
	.name = "ipt_sim_config",
	.test_cases = config_cases,
};

kunit_test_suites(&config_suite);

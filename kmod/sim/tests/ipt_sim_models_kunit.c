// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the CPU models (ipt_sim_models.c): every model probes
 * through ipt.ko's own capability code as intended, and CPUID answers
 * what it should.
 */
#include <kunit/test.h>
#include <linux/kernel.h>

#include "../../ipt.h"
#include "ipt_sim_test.h"

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
	u32 virt_bits;
};

static const struct model_case model_cases[] = {
	{ "icl", 6, 0x7e, IPT_FEAT_TOPA | IPT_FEAT_TOPA_MULTI |
	  IPT_FEAT_SINGLE_RANGE | IPT_FEAT_XSAVES_PT | IPT_FEAT_PTWRITE |
	  IPT_FEAT_POWER_EVENTS | IPT_FEAT_EVENT_TRACE | IPT_FEAT_TNT_DISABLE,
	  0, 2, 0x249, 0x1fff, 0x3f, 128, 48 },
	{ "icl-noxsaves", 6, 0x7e, IPT_FEAT_TOPA_MULTI, IPT_FEAT_XSAVES_PT,
	  2, 0x249, 0x1fff, 0x3f, 0, 48 },
	{ "skl", 6, 0x4e, IPT_FEAT_TOPA_MULTI | IPT_FEAT_CR3_FILTER,
	  IPT_FEAT_PTWRITE | IPT_FEAT_XSAVES_PT, 2, 0x249, 0x1fff, 0x3f, 0, 48 },
	{ "glm", 6, 0x5c, IPT_FEAT_TOPA | IPT_FEAT_SINGLE_RANGE,
	  IPT_FEAT_TOPA_MULTI, 2, 0x249, 0x1fff, 0x3f, 0, 48 },
	{ "icx", 6, 0x6a, IPT_FEAT_TOPA | IPT_FEAT_TOPA_MULTI | IPT_FEAT_XSAVES_PT,
	  0, 2, 0x249, 0x1fff, 0x3f, 128, 57 },
	{ "adl", 6, 0x9a, IPT_FEAT_TOPA | IPT_FEAT_TOPA_MULTI | IPT_FEAT_XSAVES_PT,
	  0, 2, 0x249, 0x3fff, 0x3f, 128, 48 },
	{ "bdw", 6, 0x3d, IPT_FEAT_TOPA | IPT_FEAT_TOPA_MULTI | IPT_FEAT_SINGLE_RANGE,
	  IPT_FEAT_PSB_CYC | IPT_FEAT_CR3_FILTER | IPT_FEAT_MTC | IPT_FEAT_IP_FILTER,
	  0, 0, 0, 0, 0, 48 },
	{ "bdw-sro", 6, 0x3d, IPT_FEAT_SINGLE_RANGE,
	  IPT_FEAT_TOPA | IPT_FEAT_CR3_FILTER | IPT_FEAT_MTC, 0, 0, 0, 0, 0, 48 },
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
		KUNIT_EXPECT_EQ_MSG(test, caps.virt_addr_bits, mc->virt_bits, "%s", mc->name);
		/* No PT in VMX operation exactly where IA32_VMX_MISC[14] = 0. */
		KUNIT_EXPECT_EQ_MSG(test, caps.platform,
				    probe_cpu->model->vmx_pt ? 0ULL : IPT_PLAT_VMX_NO_PT,
				    "%s", mc->name);
		KUNIT_EXPECT_EQ_MSG(test, probe_cpu->model->vmx_pt,
				    strncmp(mc->name, "bdw", 3) != 0, "%s", mc->name);
	}
}

static void sim_models_maxphyaddr(struct kunit *test)
{
	const struct ipt_sim_model *m = ipt_sim_model_by_name("icl");
	struct ipt_cpuid_regs r;

	KUNIT_ASSERT_NOT_NULL(test, m);
	ipt_sim_cpuid(m, 0x80000008, 0, &r);
	KUNIT_EXPECT_EQ(test, r.eax & 0xff, 39u);
	ipt_sim_cpuid(m, 0x12345, 0, &r);
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

kunit_test_suites(&sim_model_suite);

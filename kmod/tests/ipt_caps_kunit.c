// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for ipt_caps.c: capability discovery from CPUID.
 *
 * A table-driven fake backend answers CPUID and MSR reads, so every path
 * of the probe runs on any machine.
 */
#include <kunit/test.h>
#include <linux/cpumask.h>
#include <linux/module.h>
#include <linux/string.h>

#include "../ipt_session.h"

struct fake_leaf {
	u32 leaf, subleaf;
	struct ipt_cpuid_regs r;
};

static const struct fake_leaf *fake_leaves;
static unsigned int fake_nr_leaves;
static bool fake_platform_info_faults;
static unsigned int fake_msr_reads;

static void fake_cpuid(u32 leaf, u32 subleaf, struct ipt_cpuid_regs *r)
{
	unsigned int i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < fake_nr_leaves; i++) {
		if (fake_leaves[i].leaf == leaf &&
		    fake_leaves[i].subleaf == subleaf) {
			*r = fake_leaves[i].r;
			return;
		}
	}
}

static int fake_rdmsr(u32 msr, u64 *val)
{
	fake_msr_reads++;
	if (msr != MSR_PLATFORM_INFO || fake_platform_info_faults)
		return -EIO;
	*val = 0x2400ULL;	/* nominal ratio 0x24 = 36 (3.6 GHz) */
	return 0;
}

static int fake_wrmsr(u32 msr, u64 val)
{
	return -EIO;
}

static const struct ipt_hw_ops fake_ops = {
	.name = "fake",
	.backend = IPT_BACKEND_SIM,
	.cpuid = fake_cpuid,
	.read_msr = fake_rdmsr,
	.write_msr = fake_wrmsr,
};

/* "GenuineIntel" in EBX, EDX, ECX order. */
#define GI_EBX 0x756e6547
#define GI_EDX 0x49656e69
#define GI_ECX 0x6c65746e

/* A Skylake client (family 6, model 0x4e, stepping 3) with full PT. */
static const struct fake_leaf skylake[] = {
	{ 0x0, 0, { 0x16, GI_EBX, GI_ECX, GI_EDX } },
	{ 0x1, 0, { 0x000406e3, 0, 0, 0 } },
	{ 0x7, 0, { 0, BIT(25), 0, 0 } },
	{ 0xd, 1, { 0xf, 0, 0x100, 0 } },
	{ 0xd, 8, { 128, 0, 1, 0 } },
	{ 0x14, 0, { 1, 0x1ff, 0x80000007, 0 } },
	{ 0x14, 1, { 0x02490002, 0x003f1fff, 0, 0 } },
	{ 0x15, 0, { 2, 250, 24000000, 0 } },
};

static void set_cpu(const struct fake_leaf *leaves, unsigned int n)
{
	fake_leaves = leaves;
	fake_nr_leaves = n;
	fake_platform_info_faults = false;
	fake_msr_reads = 0;
}

static void caps_full_pt(struct kunit *test)
{
	struct ipt_caps caps;

	set_cpu(skylake, ARRAY_SIZE(skylake));
	KUNIT_ASSERT_EQ(test, ipt_caps_probe(&fake_ops, &caps), IPT_UNAVAIL_NONE);
	KUNIT_EXPECT_EQ(test, caps.size, (u32)sizeof(caps));
	KUNIT_EXPECT_EQ(test, caps.abi_version, (u32)IPT_ABI_VERSION);
	KUNIT_EXPECT_EQ(test, caps.backend, (u32)IPT_BACKEND_SIM);
	KUNIT_EXPECT_STREQ(test, caps.vendor, "GenuineIntel");
	KUNIT_EXPECT_EQ(test, caps.family, 6u);
	KUNIT_EXPECT_EQ(test, caps.model, 0x4eu);
	KUNIT_EXPECT_EQ(test, caps.stepping, 3u);
	KUNIT_EXPECT_EQ(test, caps.features,
			IPT_FEAT_CR3_FILTER | IPT_FEAT_PSB_CYC |
			IPT_FEAT_IP_FILTER | IPT_FEAT_MTC | IPT_FEAT_PTWRITE |
			IPT_FEAT_POWER_EVENTS | IPT_FEAT_PSB_PMI_KEEP |
			IPT_FEAT_EVENT_TRACE | IPT_FEAT_TNT_DISABLE |
			IPT_FEAT_TOPA | IPT_FEAT_TOPA_MULTI |
			IPT_FEAT_SINGLE_RANGE | IPT_FEAT_LIP |
			IPT_FEAT_XSAVES_PT);
	KUNIT_EXPECT_EQ(test, caps.num_addr_ranges, 2u);
	KUNIT_EXPECT_EQ(test, caps.mtc_freq_mask, 0x249u);
	KUNIT_EXPECT_EQ(test, caps.cyc_thresh_mask, 0x1fffu);
	KUNIT_EXPECT_EQ(test, caps.psb_freq_mask, 0x3fu);
	KUNIT_EXPECT_EQ(test, caps.nom_freq, 0x24u);
	KUNIT_EXPECT_EQ(test, caps.xsave_pt_size, 128u);
	KUNIT_EXPECT_EQ(test, caps.max_topa_order, 27u);
	KUNIT_EXPECT_EQ(test, caps.nr_cpus, nr_cpu_ids);
	KUNIT_EXPECT_EQ(test, caps.cpuid_15.ebx, 250u);
	KUNIT_EXPECT_EQ(test, caps.cpuid_15.ecx, 24000000u);
	KUNIT_EXPECT_EQ(test, caps.cpuid_14_1.eax, 0x02490002u);
}

/* A faulting MSR_PLATFORM_INFO leaves nom_freq unknown, nothing else. */
static void caps_platform_info_faults(struct kunit *test)
{
	struct ipt_caps caps;

	set_cpu(skylake, ARRAY_SIZE(skylake));
	fake_platform_info_faults = true;
	KUNIT_ASSERT_EQ(test, ipt_caps_probe(&fake_ops, &caps), IPT_UNAVAIL_NONE);
	KUNIT_EXPECT_EQ(test, caps.nom_freq, 0u);
	KUNIT_EXPECT_EQ(test, caps.num_addr_ranges, 2u);
}

/* QEMU TCG's "max" model: an AMD vendor string and no PT. */
static const struct fake_leaf amd[] = {
	{ 0x0, 0, { 0xd, 0x68747541, 0x444d4163, 0x69746e65 } },
	{ 0x1, 0, { 0x00a00f11, 0, 0, 0 } },
	{ 0x7, 0, { 0, BIT(25), 0, 0 } },
	{ 0x14, 0, { 1, 0x1ff, 0x7, 0 } },
};

static void caps_not_intel(struct kunit *test)
{
	struct ipt_caps caps;

	set_cpu(amd, ARRAY_SIZE(amd));
	KUNIT_EXPECT_EQ(test, ipt_caps_probe(&fake_ops, &caps),
			IPT_UNAVAIL_NOT_INTEL);
	KUNIT_EXPECT_EQ(test, caps.unavailable, (u32)IPT_UNAVAIL_NOT_INTEL);
	KUNIT_EXPECT_EQ(test, caps.backend, (u32)IPT_BACKEND_NONE);
	KUNIT_EXPECT_STREQ(test, caps.vendor, "AuthenticAMD");
	KUNIT_EXPECT_EQ(test, caps.family, 0x19u);
	KUNIT_EXPECT_EQ(test, caps.model, 0x1u);
	KUNIT_EXPECT_EQ(test, caps.features, 0ull);
	KUNIT_EXPECT_EQ(test, caps.cpuid_14_0.ecx, 0u);
	/* No MSR may be touched on a CPU that is not known to have PT. */
	KUNIT_EXPECT_EQ(test, fake_msr_reads, 0u);
}

static const struct fake_leaf intel_no_pt[] = {
	{ 0x0, 0, { 0x16, GI_EBX, GI_ECX, GI_EDX } },
	{ 0x1, 0, { 0x000306a9, 0, 0, 0 } },
	{ 0x7, 0, { 0, 0, 0, 0 } },
	{ 0x14, 0, { 1, 0x1ff, 0x7, 0 } },
};

static void caps_no_pt_bit(struct kunit *test)
{
	struct ipt_caps caps;

	set_cpu(intel_no_pt, ARRAY_SIZE(intel_no_pt));
	KUNIT_EXPECT_EQ(test, ipt_caps_probe(&fake_ops, &caps), IPT_UNAVAIL_NO_PT);
	KUNIT_EXPECT_EQ(test, caps.family, 6u);
	KUNIT_EXPECT_EQ(test, caps.model, 0x3au);
	KUNIT_EXPECT_EQ(test, caps.stepping, 9u);
	KUNIT_EXPECT_EQ(test, caps.features, 0ull);
	KUNIT_EXPECT_EQ(test, fake_msr_reads, 0u);
}

static const struct fake_leaf intel_low_max_leaf[] = {
	{ 0x0, 0, { 0x5, GI_EBX, GI_ECX, GI_EDX } },
	{ 0x1, 0, { 0x000006f6, 0, 0, 0 } },
	{ 0x7, 0, { 0, BIT(25), 0, 0 } },
};

static void caps_max_leaf_below_7(struct kunit *test)
{
	struct ipt_caps caps;

	set_cpu(intel_low_max_leaf, ARRAY_SIZE(intel_low_max_leaf));
	KUNIT_EXPECT_EQ(test, ipt_caps_probe(&fake_ops, &caps), IPT_UNAVAIL_NO_PT);
}

static const struct fake_leaf intel_no_leaf_14[] = {
	{ 0x0, 0, { 0xd, GI_EBX, GI_ECX, GI_EDX } },
	{ 0x1, 0, { 0x000406e3, 0, 0, 0 } },
	{ 0x7, 0, { 0, BIT(25), 0, 0 } },
	{ 0x14, 0, { 1, 0x1ff, 0x7, 0 } },
};

static void caps_no_leaf_14(struct kunit *test)
{
	struct ipt_caps caps;

	set_cpu(intel_no_leaf_14, ARRAY_SIZE(intel_no_leaf_14));
	KUNIT_EXPECT_EQ(test, ipt_caps_probe(&fake_ops, &caps),
			IPT_UNAVAIL_NO_LEAF_14);
	KUNIT_EXPECT_EQ(test, caps.cpuid_14_0.ebx, 0u);
}

static const struct fake_leaf intel_no_output[] = {
	{ 0x0, 0, { 0x14, GI_EBX, GI_ECX, GI_EDX } },
	{ 0x1, 0, { 0x000406e3, 0, 0, 0 } },
	{ 0x7, 0, { 0, BIT(25), 0, 0 } },
	{ 0x14, 0, { 0, 0x1ff, 0x8, 0 } },
};

static void caps_no_output(struct kunit *test)
{
	struct ipt_caps caps;

	set_cpu(intel_no_output, ARRAY_SIZE(intel_no_output));
	KUNIT_EXPECT_EQ(test, ipt_caps_probe(&fake_ops, &caps),
			IPT_UNAVAIL_NO_OUTPUT);
	/* Only the identity survives: no half-filled PT fields. */
	KUNIT_EXPECT_EQ(test, caps.features, 0ull);
	KUNIT_EXPECT_EQ(test, caps.cpuid_14_0.ebx, 0u);
	KUNIT_EXPECT_EQ(test, caps.backend, (u32)IPT_BACKEND_NONE);
	KUNIT_EXPECT_EQ(test, caps.nr_cpus, nr_cpu_ids);
	KUNIT_EXPECT_EQ(test, fake_msr_reads, 0u);
}

/*
 * Goldmont-like: ToPA with one output entry per table, no CR3 / IP
 * filtering, PSB/CYC and MTC not enumerated, subleaf 1 bitmaps set anyway:
 * the masks must follow the features, not the raw bitmaps.
 */
static const struct fake_leaf goldmont_lite[] = {
	{ 0x0, 0, { 0x15, GI_EBX, GI_ECX, GI_EDX } },
	{ 0x1, 0, { 0x000506c9, 0, 0, 0 } },
	{ 0x7, 0, { 0, BIT(25), 0, 0 } },
	{ 0x14, 0, { 1, 0x0, 0x1, 0 } },
	{ 0x14, 1, { 0x02490002, 0x003f1fff, 0, 0 } },
};

static void caps_features_gate_masks(struct kunit *test)
{
	struct ipt_caps caps;

	set_cpu(goldmont_lite, ARRAY_SIZE(goldmont_lite));
	KUNIT_ASSERT_EQ(test, ipt_caps_probe(&fake_ops, &caps), IPT_UNAVAIL_NONE);
	KUNIT_EXPECT_EQ(test, caps.features, IPT_FEAT_TOPA);
	KUNIT_EXPECT_EQ(test, caps.model, 0x5cu);
	KUNIT_EXPECT_EQ(test, caps.num_addr_ranges, 0u);
	KUNIT_EXPECT_EQ(test, caps.mtc_freq_mask, 0u);
	KUNIT_EXPECT_EQ(test, caps.cyc_thresh_mask, 0u);
	KUNIT_EXPECT_EQ(test, caps.psb_freq_mask, 0u);
	KUNIT_EXPECT_EQ(test, caps.xsave_pt_size, 0u);
	/* Raw leaves are still reported for decoders. */
	KUNIT_EXPECT_EQ(test, caps.cpuid_14_1.ebx, 0x003f1fffu);
	/* Max leaf 0x15 means leaf 0x15 is read (it is all zero here). */
	KUNIT_EXPECT_EQ(test, caps.cpuid_15.ebx, 0u);
}

/* A range count above the four ADDRn_CFG fields is clamped. */
static const struct fake_leaf eight_ranges[] = {
	{ 0x0, 0, { 0x14, GI_EBX, GI_ECX, GI_EDX } },
	{ 0x1, 0, { 0x000906ea, 0, 0, 0 } },
	{ 0x7, 0, { 0, BIT(25), 0, 0 } },
	{ 0x14, 0, { 1, 0x4, 0x1, 0 } },
	{ 0x14, 1, { 0x7, 0, 0, 0 } },
};

static void caps_ranges_clamped(struct kunit *test)
{
	struct ipt_caps caps;

	set_cpu(eight_ranges, ARRAY_SIZE(eight_ranges));
	KUNIT_ASSERT_EQ(test, ipt_caps_probe(&fake_ops, &caps), IPT_UNAVAIL_NONE);
	KUNIT_EXPECT_EQ(test, caps.num_addr_ranges, 4u);
	/* Leaf 0x15 is above the max leaf 0x14: not read. */
	KUNIT_EXPECT_EQ(test, caps.cpuid_15.ecx, 0u);
}

/* XSAVES without the PT bit in CPUID.(0DH,1):ECX is not XSAVES-PT. */
static const struct fake_leaf xsaves_no_pt[] = {
	{ 0x0, 0, { 0x16, GI_EBX, GI_ECX, GI_EDX } },
	{ 0x1, 0, { 0x000406e3, 0, 0, 0 } },
	{ 0x7, 0, { 0, BIT(25), 0, 0 } },
	{ 0xd, 1, { 0xf, 0, 0x0, 0 } },
	{ 0xd, 8, { 128, 0, 1, 0 } },
	{ 0x14, 0, { 0, 0x0, 0x1, 0 } },
};

static void caps_xsaves_without_pt(struct kunit *test)
{
	struct ipt_caps caps;

	set_cpu(xsaves_no_pt, ARRAY_SIZE(xsaves_no_pt));
	KUNIT_ASSERT_EQ(test, ipt_caps_probe(&fake_ops, &caps), IPT_UNAVAIL_NONE);
	KUNIT_EXPECT_FALSE(test, caps.features & IPT_FEAT_XSAVES_PT);
	KUNIT_EXPECT_EQ(test, caps.xsave_pt_size, 0u);
	/* Subleaf 1 is not read when leaf 14H says max subleaf 0. */
	KUNIT_EXPECT_EQ(test, caps.cpuid_14_1.eax, 0u);
}

struct sig_case {
	u32 eax, family, model, stepping;
};

static const struct sig_case sig_cases[] = {
	{ 0x000406e3, 6, 0x4e, 3 },	/* Skylake: extended model */
	{ 0x000906ea, 6, 0x9e, 10 },	/* Coffee Lake */
	{ 0x00000f29, 15, 2, 9 },	/* Pentium 4: family 15, ext 0 */
	{ 0x00100f42, 16, 4, 2 },	/* ext family added to 15 */
	{ 0x00010652, 6, 0x15, 2 },
	{ 0x00010582, 5, 8, 2 },	/* family 5: no extended model */
};

static void caps_signature(struct kunit *test)
{
	struct ipt_caps caps;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sig_cases); i++) {
		memset(&caps, 0, sizeof(caps));
		ipt_caps_signature(sig_cases[i].eax, &caps);
		KUNIT_EXPECT_EQ_MSG(test, caps.family, sig_cases[i].family,
				    "eax %#x", sig_cases[i].eax);
		KUNIT_EXPECT_EQ_MSG(test, caps.model, sig_cases[i].model,
				    "eax %#x", sig_cases[i].eax);
		KUNIT_EXPECT_EQ_MSG(test, caps.stepping, sig_cases[i].stepping,
				    "eax %#x", sig_cases[i].eax);
	}
}

/* The odd CPUs' answer to CPUID.(14H,1): one range (an E core), or two. */
static bool fake_odd_one_range;

static void fake_cpuid_hybrid(u32 leaf, u32 subleaf, struct ipt_cpuid_regs *r)
{
	fake_cpuid(leaf, subleaf, r);
	if (leaf == 0x14 && subleaf == 1 && fake_odd_one_range &&
	    (raw_smp_processor_id() & 1))
		r->eax = (r->eax & ~0x7) | 1;
}

static const struct ipt_hw_ops fake_hybrid_ops = {
	.name = "fake-hybrid",
	.backend = IPT_BACKEND_SIM,
	.cpuid = fake_cpuid_hybrid,
	.read_msr = fake_rdmsr,
	.write_msr = fake_wrmsr,
};

/*
 * A per-thread session's mask of the CPUs that can run it
 * (ipt_thread_fits_set(), what the switch-in tests): with ADDR1 in use,
 * a one-range CPU is not in it; a CPU going offline leaves it, and one
 * coming online is in it as its own leaf 14H, read again, says.
 */
static void caps_fits_mask_follows_hotplug(struct kunit *test)
{
	struct ipt_device *idev = kunit_kzalloc(test, sizeof(*idev), GFP_KERNEL);
	struct ipt_session *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	struct ipt_caps caps;
	unsigned int cpu;

	KUNIT_ASSERT_NOT_NULL(test, idev);
	KUNIT_ASSERT_NOT_NULL(test, s);
	if (!cpu_online(0) || !cpu_online(1))
		kunit_skip(test, "needs CPUs 0 and 1 online");
	set_cpu(skylake, ARRAY_SIZE(skylake));
	fake_odd_one_range = true;
	KUNIT_ASSERT_EQ(test, ipt_caps_probe(&fake_hybrid_ops, &caps),
			IPT_UNAVAIL_NONE);
	KUNIT_EXPECT_EQ(test, caps.num_addr_ranges, 1u);
	mutex_init(&idev->lock);
	s->idev = idev;
	s->hw = &fake_hybrid_ops;
	s->hwcfg.ctl = RTIT_CTL_TOPA | IPT_RTIT_CTL_ADDR_CFG(1);

	ipt_cpus_read_lock();
	mutex_lock(&idev->lock);
	for_each_possible_cpu(cpu)
		ipt_thread_fits_set(s, cpu, cpu_online(cpu));
	KUNIT_EXPECT_TRUE(test, cpumask_test_cpu(0, &s->fits));
	KUNIT_EXPECT_FALSE(test, cpumask_test_cpu(1, &s->fits));

	/* CPU 0 goes offline, and comes back. */
	ipt_caps_cpu_update(&fake_hybrid_ops, &caps, 0, false);
	ipt_thread_fits_set(s, 0, false);
	KUNIT_EXPECT_FALSE(test, cpumask_test_cpu(0, &s->fits));
	ipt_caps_cpu_update(&fake_hybrid_ops, &caps, 0, true);
	ipt_thread_fits_set(s, 0, true);
	KUNIT_EXPECT_TRUE(test, cpumask_test_cpu(0, &s->fits));

	/* CPU 1 comes online with two ranges, then again with one. */
	fake_odd_one_range = false;
	ipt_caps_cpu_update(&fake_hybrid_ops, &caps, 1, true);
	ipt_thread_fits_set(s, 1, true);
	KUNIT_EXPECT_TRUE(test, cpumask_test_cpu(1, &s->fits));
	fake_odd_one_range = true;
	ipt_caps_cpu_update(&fake_hybrid_ops, &caps, 1, true);
	ipt_thread_fits_set(s, 1, true);
	KUNIT_EXPECT_FALSE(test, cpumask_test_cpu(1, &s->fits));
	mutex_unlock(&idev->lock);
	ipt_cpus_read_unlock();
}

static void caps_unavail_strings(struct kunit *test)
{
	enum ipt_unavail why;

	for (why = IPT_UNAVAIL_NONE; why <= IPT_UNAVAIL_NO_OUTPUT; why++)
		KUNIT_EXPECT_STRNEQ(test, ipt_unavail_str(why), "unknown reason");
	KUNIT_EXPECT_STREQ(test, ipt_unavail_str(99), "unknown reason");
}

static struct kunit_case ipt_caps_cases[] = {
	KUNIT_CASE(caps_full_pt),
	KUNIT_CASE(caps_platform_info_faults),
	KUNIT_CASE(caps_not_intel),
	KUNIT_CASE(caps_no_pt_bit),
	KUNIT_CASE(caps_max_leaf_below_7),
	KUNIT_CASE(caps_no_leaf_14),
	KUNIT_CASE(caps_no_output),
	KUNIT_CASE(caps_features_gate_masks),
	KUNIT_CASE(caps_ranges_clamped),
	KUNIT_CASE(caps_xsaves_without_pt),
	KUNIT_CASE(caps_signature),
	KUNIT_CASE(caps_unavail_strings),
	KUNIT_CASE(caps_fits_mask_follows_hotplug),
	{}
};

static struct kunit_suite ipt_caps_suite = {
	.name = "ipt_caps",
	.test_cases = ipt_caps_cases,
};

kunit_test_suite(ipt_caps_suite);

MODULE_DESCRIPTION("KUnit tests for ipt");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: discovering what a PT unit can do, from CPUID (through the backend).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bits.h>
#include <linux/cpumask.h>
#include <linux/kernel.h>
#include <linux/preempt.h>
#include <linux/string.h>
#include <kunit/visibility.h>

#include "ipt.h"

/* The ADDRn_CFG fields of IA32_RTIT_CTL exist for n = 0..3 only. */
#define IPT_MAX_ADDR_RANGES	4

/* ToPA regions are 4 KiB << Size, Size being 4 bits: up to 128 MiB. */
#define IPT_TOPA_MAX_ORDER	27

static const struct {
	u64 feature;
	bool in_ecx;	/* else EBX of CPUID.(14H,0) */
	u8 bit;
} ipt_feature_bits[] = {
	{ IPT_FEAT_CR3_FILTER, false, 0 },
	{ IPT_FEAT_PSB_CYC, false, 1 },
	{ IPT_FEAT_IP_FILTER, false, 2 },
	{ IPT_FEAT_MTC, false, 3 },
	{ IPT_FEAT_PTWRITE, false, 4 },
	{ IPT_FEAT_POWER_EVENTS, false, 5 },
	{ IPT_FEAT_PSB_PMI_KEEP, false, 6 },
	{ IPT_FEAT_EVENT_TRACE, false, 7 },
	{ IPT_FEAT_TNT_DISABLE, false, 8 },
	{ IPT_FEAT_TOPA, true, 0 },
	{ IPT_FEAT_TOPA_MULTI, true, 1 },
	{ IPT_FEAT_SINGLE_RANGE, true, 2 },
	{ IPT_FEAT_TRANSPORT, true, 3 },
	{ IPT_FEAT_LIP, true, 31 },
};

/**
 * ipt_caps_signature() - decode CPUID.1:EAX into display family and model
 * @eax: CPUID.1:EAX
 * @caps: receives family, model and stepping
 *
 * Applies the SDM's rules: the extended family is added when the base
 * family is 0FH; the extended model is prepended for families 06H and 0FH.
 */
VISIBLE_IF_KUNIT void ipt_caps_signature(u32 eax, struct ipt_caps *caps)
{
	u32 family = (eax >> 8) & 0xf;
	u32 model = (eax >> 4) & 0xf;

	if (family == 0xf)
		family += (eax >> 20) & 0xff;
	if (family == 0x6 || family >= 0xf)
		model |= ((eax >> 16) & 0xf) << 4;
	caps->family = family;
	caps->model = model;
	caps->stepping = eax & 0xf;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_caps_signature);

static bool ipt_xsaves_pt(const struct ipt_hw_ops *hw, u32 max_leaf, u32 *size)
{
	struct ipt_cpuid_regs r;

	*size = 0;
	if (max_leaf < IPT_CPUID_XSAVE)
		return false;
	/* CPUID.(0DH,1): EAX[3] XSAVES/XRSTORS, ECX[8] IA32_XSS may set PT. */
	hw->cpuid(IPT_CPUID_XSAVE, 1, &r);
	if (!(r.eax & BIT(3)) || !(r.ecx & BIT(IPT_CPUID_XSAVE_PT_COMPONENT)))
		return false;
	hw->cpuid(IPT_CPUID_XSAVE, IPT_CPUID_XSAVE_PT_COMPONENT, &r);
	/* A supervisor component (ECX[0]) with a size is what XSAVES needs. */
	if (!r.eax || !(r.ecx & BIT(0)))
		return false;
	*size = r.eax;
	return true;
}

/*
 * The linear address width, CPUID.80000008H:EAX[15:8], as Linux's
 * x86_virt_bits (arch/x86/kernel/cpu/common.c, get_cpu_address_sizes()),
 * which pt.c checks filter addresses against (pt.c:1384-1401).  It is the
 * width the processor supports (57 on LA57 parts even with 4-level paging
 * in use), the one WRMSR checks ADDRn against.  A leaf that is missing or
 * says less than 48 (no x86-64 part has less) counts as 48.
 */
static u32 ipt_caps_virt_bits(const struct ipt_hw_ops *hw)
{
	struct ipt_cpuid_regs r;
	u32 bits;

	hw->cpuid(IPT_CPUID_EXT_MAX, 0, &r);
	if (r.eax < IPT_CPUID_ADDR_SIZES || r.eax > IPT_CPUID_EXT_MAX + 0xffff)
		return 48;
	hw->cpuid(IPT_CPUID_ADDR_SIZES, 0, &r);
	bits = (r.eax >> 8) & 0xff;
	return bits >= 48 && bits <= 64 ? bits : 48;
}

/*
 * Broadwell's erratum BDM106: enabling with BranchEn = 0 is #GP.  Linux
 * keeps BranchEn on for these four models (pt.c:213-224, checked in
 * pt_event_valid(), pt.c:391-407).  Intel PT implies family 6.
 */
static const u32 ipt_bdm106_models[] = {
	0x3d,	/* INTEL_FAM6_BROADWELL */
	0x47,	/* INTEL_FAM6_BROADWELL_G */
	0x4f,	/* INTEL_FAM6_BROADWELL_X */
	0x56,	/* INTEL_FAM6_BROADWELL_D */
};

/**
 * ipt_caps_branch_required() - whether the unit cannot run with BranchEn = 0
 * @caps: the unit's capabilities
 *
 * Context: any; reads @caps only.
 * Return: true on the parts with erratum BDM106.
 */
bool ipt_caps_branch_required(const struct ipt_caps *caps)
{
	unsigned int i;

	if (caps->family != 6)
		return false;
	for (i = 0; i < ARRAY_SIZE(ipt_bdm106_models); i++)
		if (caps->model == ipt_bdm106_models[i])
			return true;
	return false;
}

/*
 * Whether VMXON clears TraceEn: a CPU with VMX (CPUID.1:ECX[5]) whose
 * IA32_VMX_MISC[14] is 0 cannot trace in VMX operation.  Linux reads the
 * same bit (pt_pmu_hw_init(), arch/x86/events/intel/pt.c:226-235,
 * MSR_IA32_VMX_MISC_INTEL_PT, arch/x86/include/asm/msr-index.h:1133; SDM
 * vol. 3C, "Tracing post-VMXON").  An unreadable MSR counts as no VMX.
 */
static bool ipt_caps_vmx_no_pt(const struct ipt_hw_ops *hw)
{
	struct ipt_cpuid_regs r;
	u64 misc;
	int ret;

	hw->cpuid(IPT_CPUID_SIGNATURE, 0, &r);
	if (!(r.ecx & IPT_CPUID_SIGNATURE_ECX_VMX))
		return false;
	preempt_disable();
	ret = hw->read_msr(MSR_IA32_VMX_MISC, &misc);
	preempt_enable();
	return !ret && !(misc & MSR_IA32_VMX_MISC_INTEL_PT);
}

/**
 * ipt_caps_cr3_user_bits() - the CR3 bits user mode adds to an address space's CR3
 * @caps: the unit's capabilities
 *
 * With page-table isolation, Linux runs user mode on the user half of an
 * 8 KiB PGD: CR3 | PTI_USER_PGTABLE_MASK (bit 12), and with PCID also
 * PTI_USER_PCID_MASK (bit 11), the user PCID being the kernel one + 2048
 * (arch/x86/entry/calling.h:153-157, 180-212; arch/x86/mm/tlb.c:148-155).
 * Both bits are in CR3[63:5], which IA32_RTIT_CR3_MATCH[63:5] is compared
 * with (SDM vol. 3C, 33.2.8.6); the kernel PCID itself, kern_pcid() =
 * ASID + 1 <= TLB_NR_DYN_ASIDS = 6 (tlb.c:112-143, tlbflush.h:61), lies in
 * bits 2:0, which the comparison ignores.
 *
 * Context: any; reads @caps only.
 * Return: the bits, 0 without IPT_PLAT_PTI.
 */
u64 ipt_caps_cr3_user_bits(const struct ipt_caps *caps)
{
	u64 bits;

	if (!(caps->platform & IPT_PLAT_PTI))
		return 0;
	bits = IPT_CR3_PTI_USER_PGTABLE;
	if (caps->platform & IPT_PLAT_PCID)
		bits |= IPT_CR3_PTI_USER_PCID;
	return bits;
}

static void ipt_caps_clear_pt(struct ipt_caps *caps)
{
	size_t from = offsetof(struct ipt_caps, features);

	memset((u8 *)caps + from, 0, sizeof(*caps) - from);
	caps->nr_cpus = nr_cpu_ids;
}

/**
 * ipt_caps_probe() - learn what the PT unit behind a backend can do
 * @hw: the backend whose CPUID (and MSR_PLATFORM_INFO) is read
 * @caps: filled in completely; @caps->size is set to sizeof(*caps)
 *
 * Reads only CPUID until it has established that the CPU is an Intel part
 * with PT, and touches no MSR otherwise.  When PT is unusable, the reason
 * is stored in @caps->unavailable, @caps->backend is IPT_BACKEND_NONE and
 * only the CPU identity and @caps->nr_cpus are filled.
 *
 * Context: process context; does not sleep.
 * Return: @caps->unavailable.
 */
enum ipt_unavail ipt_caps_probe(const struct ipt_hw_ops *hw,
				struct ipt_caps *caps)
{
	struct ipt_cpuid_regs r;
	u32 max_leaf, i;
	u64 platform_info;
	bool is_intel;

	memset(caps, 0, sizeof(*caps));
	caps->size = sizeof(*caps);
	caps->abi_version = IPT_ABI_VERSION;
	caps->nr_cpus = nr_cpu_ids;
	caps->backend = IPT_BACKEND_NONE;

	hw->cpuid(IPT_CPUID_VENDOR, 0, &r);
	max_leaf = r.eax;
	memcpy(caps->vendor + 0, &r.ebx, 4);
	memcpy(caps->vendor + 4, &r.edx, 4);
	memcpy(caps->vendor + 8, &r.ecx, 4);
	is_intel = !strcmp(caps->vendor, "GenuineIntel");
	if (max_leaf >= IPT_CPUID_SIGNATURE) {
		hw->cpuid(IPT_CPUID_SIGNATURE, 0, &r);
		ipt_caps_signature(r.eax, caps);
	}

	if (!is_intel) {
		caps->unavailable = IPT_UNAVAIL_NOT_INTEL;
		return caps->unavailable;
	}
	if (max_leaf < IPT_CPUID_EXT_FEATURES) {
		caps->unavailable = IPT_UNAVAIL_NO_PT;
		return caps->unavailable;
	}
	hw->cpuid(IPT_CPUID_EXT_FEATURES, 0, &r);
	if (!(r.ebx & IPT_CPUID_EXT_FEATURES_EBX_PT)) {
		caps->unavailable = IPT_UNAVAIL_NO_PT;
		return caps->unavailable;
	}
	if (max_leaf < IPT_CPUID_PT) {
		caps->unavailable = IPT_UNAVAIL_NO_LEAF_14;
		return caps->unavailable;
	}

	hw->cpuid(IPT_CPUID_PT, 0, &caps->cpuid_14_0);
	for (i = 0; i < ARRAY_SIZE(ipt_feature_bits); i++) {
		u32 reg = ipt_feature_bits[i].in_ecx ? caps->cpuid_14_0.ecx :
						       caps->cpuid_14_0.ebx;

		if (reg & BIT(ipt_feature_bits[i].bit))
			caps->features |= ipt_feature_bits[i].feature;
	}
	if (!(caps->features & (IPT_FEAT_TOPA | IPT_FEAT_SINGLE_RANGE))) {
		caps->unavailable = IPT_UNAVAIL_NO_OUTPUT;
		ipt_caps_clear_pt(caps);
		return caps->unavailable;
	}

	if (caps->cpuid_14_0.eax >= 1) {
		hw->cpuid(IPT_CPUID_PT, 1, &caps->cpuid_14_1);
		if (caps->features & IPT_FEAT_IP_FILTER)
			caps->num_addr_ranges = min_t(u32, caps->cpuid_14_1.eax & 0x7,
						      IPT_MAX_ADDR_RANGES);
		if (caps->features & IPT_FEAT_MTC)
			caps->mtc_freq_mask = caps->cpuid_14_1.eax >> 16;
		if (caps->features & IPT_FEAT_PSB_CYC) {
			caps->cyc_thresh_mask = caps->cpuid_14_1.ebx & 0xffff;
			caps->psb_freq_mask = caps->cpuid_14_1.ebx >> 16;
		}
	}
	if (max_leaf >= IPT_CPUID_TSC)
		hw->cpuid(IPT_CPUID_TSC, 0, &caps->cpuid_15);
	if (ipt_xsaves_pt(hw, max_leaf, &caps->xsave_pt_size))
		caps->features |= IPT_FEAT_XSAVES_PT;

	preempt_disable();
	if (!hw->read_msr(MSR_PLATFORM_INFO, &platform_info))
		caps->nom_freq = (platform_info >> 8) & 0xff;
	preempt_enable();

	caps->virt_addr_bits = ipt_caps_virt_bits(hw);
	if (hw->platform)
		caps->platform = hw->platform();
	if (ipt_caps_vmx_no_pt(hw))
		caps->platform |= IPT_PLAT_VMX_NO_PT;

	if (caps->features & IPT_FEAT_TOPA)
		caps->max_topa_order = IPT_TOPA_MAX_ORDER;
	caps->backend = hw->backend;
	caps->unavailable = IPT_UNAVAIL_NONE;
	return IPT_UNAVAIL_NONE;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_caps_probe);

/**
 * ipt_unavail_str() - a short explanation of an enum ipt_unavail value
 * @why: the reason
 *
 * Return: a static string.
 */
const char *ipt_unavail_str(enum ipt_unavail why)
{
	switch (why) {
	case IPT_UNAVAIL_NONE:
		return "available";
	case IPT_UNAVAIL_NOT_INTEL:
		return "the CPU is not an Intel CPU";
	case IPT_UNAVAIL_NO_PT:
		return "CPUID.(EAX=07H,ECX=0):EBX[25] (Intel PT) is 0";
	case IPT_UNAVAIL_NO_LEAF_14:
		return "CPUID leaf 14H is not enumerated";
	case IPT_UNAVAIL_NO_OUTPUT:
		return "neither ToPA nor single-range output is enumerated";
	}
	return "unknown reason";
}
EXPORT_SYMBOL_IF_KUNIT(ipt_unavail_str);

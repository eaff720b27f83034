// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: discovering what a PT unit can do, from CPUID (through the backend).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitfield.h>
#include <linux/bits.h>
#include <linux/cpumask.h>
#include <linux/kernel.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/smp.h>
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

/* The features CPUID leaf 14H enumerates (every bit of the table). */
#define IPT_FEAT_LEAF_14	(IPT_FEAT_CR3_FILTER | IPT_FEAT_PSB_CYC |	\
				 IPT_FEAT_IP_FILTER | IPT_FEAT_MTC |		\
				 IPT_FEAT_PTWRITE | IPT_FEAT_POWER_EVENTS |	\
				 IPT_FEAT_PSB_PMI_KEEP | IPT_FEAT_EVENT_TRACE |	\
				 IPT_FEAT_TNT_DISABLE | IPT_FEAT_TOPA |	\
				 IPT_FEAT_TOPA_MULTI | IPT_FEAT_SINGLE_RANGE |	\
				 IPT_FEAT_TRANSPORT | IPT_FEAT_LIP)

/**
 * struct ipt_cpu_pt - one CPU's CPUID leaf 14H, decoded
 * @valid: probed while the CPU was online, and it has not gone offline
 * @hw: the backend it was read through; the data counts only for it
 * @features: its IPT_FEAT_LEAF_14 bits
 * @num_addr_ranges: as struct ipt_caps
 * @mtc_freq_mask: as struct ipt_caps
 * @cyc_thresh_mask: as struct ipt_caps
 * @psb_freq_mask: as struct ipt_caps
 *
 * Hybrid parts answer leaf 14H differently on different core types; Linux
 * 6.1 reads it on one CPU (pt_pmu_hw_init(), pt.c:237-243) and uses that
 * for all.  ipt keeps each online CPU's and reports their intersection.
 *
 * Locking: written under the device lock (probe, CPU online and offline);
 * read there, and by ipt_caps_cpu_fits() on the CPU itself.
 */
struct ipt_cpu_pt {
	bool valid;
	const struct ipt_hw_ops *hw;
	u64 features;
	u32 num_addr_ranges;
	u32 mtc_freq_mask;
	u32 cyc_thresh_mask;
	u32 psb_freq_mask;
};

static DEFINE_PER_CPU(struct ipt_cpu_pt, ipt_cpu_pt);

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

/*
 * CPUID leaf 14H of the CPU this runs on (subleaf 1 zero when not
 * enumerated), decoded into @pt, which is marked valid.
 */
static void ipt_caps_read_pt(const struct ipt_hw_ops *hw,
			     struct ipt_cpuid_regs *l0,
			     struct ipt_cpuid_regs *l1, struct ipt_cpu_pt *pt)
{
	unsigned int i;

	memset(pt, 0, sizeof(*pt));
	memset(l1, 0, sizeof(*l1));
	hw->cpuid(IPT_CPUID_PT, 0, l0);
	for (i = 0; i < ARRAY_SIZE(ipt_feature_bits); i++) {
		u32 reg = ipt_feature_bits[i].in_ecx ? l0->ecx : l0->ebx;

		if (reg & BIT(ipt_feature_bits[i].bit))
			pt->features |= ipt_feature_bits[i].feature;
	}
	if (l0->eax >= 1) {
		hw->cpuid(IPT_CPUID_PT, 1, l1);
		if (pt->features & IPT_FEAT_IP_FILTER)
			pt->num_addr_ranges = min_t(u32, l1->eax & 0x7,
						    IPT_MAX_ADDR_RANGES);
		if (pt->features & IPT_FEAT_MTC)
			pt->mtc_freq_mask = l1->eax >> 16;
		if (pt->features & IPT_FEAT_PSB_CYC) {
			pt->cyc_thresh_mask = l1->ebx & 0xffff;
			pt->psb_freq_mask = l1->ebx >> 16;
		}
	}
	pt->valid = true;
}

struct ipt_caps_pt_call {
	const struct ipt_hw_ops *hw;
	struct ipt_cpu_pt pt;
};

static void ipt_caps_read_pt_here(void *arg)
{
	struct ipt_caps_pt_call *c = arg;
	struct ipt_cpuid_regs l0, l1;

	ipt_caps_read_pt(c->hw, &l0, &l1, &c->pt);
	c->pt.hw = c->hw;
}

/* Leaf 14H of @cpu, read there; invalid if it is not online. */
static void ipt_caps_probe_cpu(const struct ipt_hw_ops *hw, unsigned int cpu)
{
	struct ipt_caps_pt_call c = { .hw = hw };

	if (smp_call_function_single(cpu, ipt_caps_read_pt_here, &c, 1))
		c.pt.valid = false;
	*per_cpu_ptr(&ipt_cpu_pt, cpu) = c.pt;
}

/*
 * @caps's leaf 14H fields become the intersection of every valid CPU's:
 * features and encoding bitmaps ANDed, the fewest ranges.  CPUs that
 * differ make it a hybrid part (IPT_PLAT_HYBRID).  Nothing changes when no
 * CPU is valid.
 */
static void ipt_caps_intersect(struct ipt_caps *caps)
{
	const struct ipt_cpu_pt *first = NULL;
	struct ipt_cpu_pt and = {};
	bool differ = false;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		const struct ipt_cpu_pt *p = per_cpu_ptr(&ipt_cpu_pt, cpu);

		if (!p->valid)
			continue;
		if (!first) {
			first = p;
			and = *p;
			continue;
		}
		differ |= memcmp(p, first, sizeof(*p)) != 0;
		and.features &= p->features;
		and.num_addr_ranges = min(and.num_addr_ranges, p->num_addr_ranges);
		and.mtc_freq_mask &= p->mtc_freq_mask;
		and.cyc_thresh_mask &= p->cyc_thresh_mask;
		and.psb_freq_mask &= p->psb_freq_mask;
	}
	if (!first)
		return;
	caps->features = (caps->features & ~IPT_FEAT_LEAF_14) | and.features;
	caps->num_addr_ranges = and.num_addr_ranges;
	caps->mtc_freq_mask = and.mtc_freq_mask;
	caps->cyc_thresh_mask = and.cyc_thresh_mask;
	caps->psb_freq_mask = and.psb_freq_mask;
	if (differ)
		caps->platform |= IPT_PLAT_HYBRID;
	else
		caps->platform &= ~IPT_PLAT_HYBRID;
}

/* Leaf 14H of every online CPU, and their intersection in @caps. */
static void ipt_caps_probe_cpus(const struct ipt_hw_ops *hw,
				struct ipt_caps *caps)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		if (cpu_online(cpu))
			ipt_caps_probe_cpu(hw, cpu);
		else
			per_cpu_ptr(&ipt_cpu_pt, cpu)->valid = false;
	}
	ipt_caps_intersect(caps);
}

/**
 * ipt_caps_cpu_update() - a CPU came online or goes offline
 * @hw: the backend @caps were probed through
 * @caps: the capabilities reported; their leaf 14H fields are updated
 * @cpu: the CPU
 * @online: it came online (its leaf 14H is read there), else it goes
 *          offline (it no longer counts)
 *
 * @caps stay the intersection of the online CPUs': a CPU with less narrows
 * them for configurations to come (a session already configured is
 * checked per CPU, ipt_caps_cpu_fits()), one going offline may widen them.
 *
 * Context: process context (CPU hotplug callback); device lock held.
 */
void ipt_caps_cpu_update(const struct ipt_hw_ops *hw, struct ipt_caps *caps,
			 unsigned int cpu, bool online)
{
	if (online)
		ipt_caps_probe_cpu(hw, cpu);
	else
		per_cpu_ptr(&ipt_cpu_pt, cpu)->valid = false;
	ipt_caps_intersect(caps);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_caps_cpu_update);

/**
 * ipt_caps_cpu_ranges() - the ADDRn pairs a CPU has, of a session's
 * @hw: the session's backend
 * @cpu: the CPU
 * @nr: the session's (the intersection's when it was configured)
 *
 * A hybrid part's CPU that came online later may have fewer; ADDRn beyond
 * its own count do not exist there (RDMSR and WRMSR #GP).
 *
 * Context: any; on @cpu or under the device lock.
 * Return: min(@nr, @cpu's count), or @nr for a CPU not probed through @hw.
 */
unsigned int ipt_caps_cpu_ranges(const struct ipt_hw_ops *hw,
				 unsigned int cpu, unsigned int nr)
{
	const struct ipt_cpu_pt *p = per_cpu_ptr(&ipt_cpu_pt, cpu);

	if (!READ_ONCE(p->valid) || READ_ONCE(p->hw) != hw)
		return nr;
	return min_t(unsigned int, nr, READ_ONCE(p->num_addr_ranges));
}

/**
 * ipt_caps_cpu_fits() - whether a CPU's unit can run a configuration
 * @ops: the session's backend
 * @cpu: the CPU
 * @hw: the configuration's MSR values
 * @single: the session's ToPA tables hold one output entry
 *
 * Checks every IA32_RTIT_CTL field and the STATUS write-back against the
 * CPU's own leaf 14H, as ipt_config_check() does against the intersection:
 * on a hybrid part a CPU that came online after the configuration may have
 * less.  A CPU not probed through @ops fits (the intersection applied).
 *
 * Context: any; on @cpu or under the device lock.
 * Return: true if programming @hw there cannot #GP for a missing feature.
 */
bool ipt_caps_cpu_fits(const struct ipt_hw_ops *ops, unsigned int cpu,
		       const struct ipt_hwcfg *hw, bool single)
{
	const struct ipt_cpu_pt *p = per_cpu_ptr(&ipt_cpu_pt, cpu);
	u64 ctl = hw->ctl, f = READ_ONCE(p->features);
	unsigned int n;

	if (!READ_ONCE(p->valid) || READ_ONCE(p->hw) != ops)
		return true;
	if (((ctl & RTIT_CTL_TOPA) && !(f & IPT_FEAT_TOPA)) ||
	    (!single && !(f & IPT_FEAT_TOPA_MULTI)) ||
	    ((ctl & RTIT_CTL_CR3EN) && !(f & IPT_FEAT_CR3_FILTER)) ||
	    ((ctl & RTIT_CTL_PTW_EN) && !(f & IPT_FEAT_PTWRITE)) ||
	    ((ctl & RTIT_CTL_PWR_EVT_EN) && !(f & IPT_FEAT_POWER_EVENTS)))
		return false;
	if ((ctl & RTIT_CTL_MTC_EN) &&
	    (!(f & IPT_FEAT_MTC) ||
	     !(READ_ONCE(p->mtc_freq_mask) &
	       BIT(FIELD_GET(RTIT_CTL_MTC_RANGE, ctl)))))
		return false;
	if ((ctl & RTIT_CTL_CYCLEACC) &&
	    (!(f & IPT_FEAT_PSB_CYC) ||
	     !(READ_ONCE(p->cyc_thresh_mask) &
	       BIT(FIELD_GET(RTIT_CTL_CYC_THRESH, ctl)))))
		return false;
	if (f & IPT_FEAT_PSB_CYC) {
		if (!(READ_ONCE(p->psb_freq_mask) &
		      BIT(FIELD_GET(RTIT_CTL_PSB_FREQ, ctl))))
			return false;
	} else if (FIELD_GET(RTIT_CTL_PSB_FREQ, ctl) ||
		   (hw->status_keep & RTIT_STATUS_BYTECNT)) {
		return false;
	}
	for (n = READ_ONCE(p->num_addr_ranges); n < IPT_MAX_ADDR_RANGES; n++)
		if (ctl & IPT_RTIT_CTL_ADDR_CFG(n))
			return false;
	return true;
}

/**
 * ipt_caps_probe() - learn what the PT unit behind a backend can do
 * @hw: the backend whose CPUID (and MSR_PLATFORM_INFO) is read
 * @caps: filled in completely; @caps->size is set to sizeof(*caps)
 *
 * Reads only CPUID until it has established that the CPU is an Intel part
 * with PT, and touches no MSR otherwise.  CPUID leaf 14H is read on every
 * online CPU (a hybrid part's core types differ) and the leaf 14H fields
 * are their intersection (IPT_PLAT_HYBRID when they differ); the raw
 * cpuid_14_0/1 are those of the CPU the probe runs on.  When PT is unusable, the reason
 * is stored in @caps->unavailable, @caps->backend is IPT_BACKEND_NONE and
 * only the CPU identity and @caps->nr_cpus are filled.
 *
 * Context: process context; may wait for cross-CPU calls (not with
 * interrupts off).
 * Return: @caps->unavailable.
 */
enum ipt_unavail ipt_caps_probe(const struct ipt_hw_ops *hw,
				struct ipt_caps *caps)
{
	struct ipt_cpuid_regs r;
	struct ipt_cpu_pt pt;
	u64 platform_info;
	bool is_intel;
	u32 max_leaf;

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

	ipt_caps_read_pt(hw, &caps->cpuid_14_0, &caps->cpuid_14_1, &pt);
	if (!(pt.features & (IPT_FEAT_TOPA | IPT_FEAT_SINGLE_RANGE))) {
		caps->unavailable = IPT_UNAVAIL_NO_OUTPUT;
		ipt_caps_clear_pt(caps);
		return caps->unavailable;
	}
	caps->features |= pt.features;
	caps->num_addr_ranges = pt.num_addr_ranges;
	caps->mtc_freq_mask = pt.mtc_freq_mask;
	caps->cyc_thresh_mask = pt.cyc_thresh_mask;
	caps->psb_freq_mask = pt.psb_freq_mask;
	ipt_caps_probe_cpus(hw, caps);
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
		caps->platform |= hw->platform();
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

// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: the CPU models the simulated unit can present and CPUID as
 * each answers it.  See "Models" in Documentation/simulator.rst.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/string.h>
#include <kunit/visibility.h>

#include "ipt_sim.h"

/* "GenuineIntel" in EBX, EDX, ECX order. */
#define IPT_SIM_GI_EBX	0x756e6547
#define IPT_SIM_GI_EDX	0x49656e69
#define IPT_SIM_GI_ECX	0x6c65746e

/* Typical subleaf 1: 2 ranges, MTC 0x249, CYC 0x1fff, PSB 0x3f. */
#define IPT_SIM_LEAF_14_1_TYPICAL	{ 0x02490002, 0x003f1fff, 0, 0 }

const struct ipt_sim_model ipt_sim_models[] = {
	{
		.name = "icl",
		.desc = "Ice Lake client, every PT feature, multi-entry ToPA, XSAVES-PT",
		.signature = 0x000706e5,
		.leaf_14_0 = { 1, 0x1ff, 0x7, 0 },
		.leaf_14_1 = IPT_SIM_LEAF_14_1_TYPICAL,
		.leaf_15 = { 2, 104, 38400000, 0 },
		.xsaves_pt = true,
		.xsave_pt_size = IPT_SIM_XSAVE_PT_SIZE,
		.maxphyaddr = 39,
		.virt_bits = 48,
		.nom_ratio = 20,
		.vmx_pt = true,
	},
	{
		.name = "icl-noxsaves",
		.desc = "Ice Lake client as 'icl', but XSAVES does not support PT",
		.signature = 0x000706e5,
		.leaf_14_0 = { 1, 0x1ff, 0x7, 0 },
		.leaf_14_1 = IPT_SIM_LEAF_14_1_TYPICAL,
		.leaf_15 = { 2, 104, 38400000, 0 },
		.maxphyaddr = 39,
		.virt_bits = 48,
		.nom_ratio = 20,
		.vmx_pt = true,
	},
	{
		.name = "skl",
		.desc = "Skylake client: CR3/IP filter, CYC, MTC, multi-entry ToPA",
		.signature = 0x000406e3,
		.leaf_14_0 = { 1, 0xf, 0x7, 0 },
		.leaf_14_1 = IPT_SIM_LEAF_14_1_TYPICAL,
		.leaf_15 = { 2, 216, 0, 0 },
		.maxphyaddr = 39,
		.virt_bits = 48,
		.nom_ratio = 26,
		.vmx_pt = true,
	},
	{
		.name = "glm",
		.desc = "Goldmont (Apollo Lake): single-entry ToPA, single-range",
		.signature = 0x000506c9,
		.leaf_14_0 = { 1, 0x3f, 0x5, 0 },
		.leaf_14_1 = IPT_SIM_LEAF_14_1_TYPICAL,
		.leaf_15 = { 1, 62, 19200000, 0 },
		.maxphyaddr = 39,
		.virt_bits = 48,
		.nom_ratio = 12,
		.vmx_pt = true,
	},
	{
		.name = "icx",
		.desc = "Ice Lake server as 'icl', with 57-bit linear addresses (LA57)",
		.signature = 0x000606a6,
		.leaf_14_0 = { 1, 0x1ff, 0x7, 0 },
		.leaf_14_1 = IPT_SIM_LEAF_14_1_TYPICAL,
		.leaf_15 = { 2, 104, 38400000, 0 },
		.xsaves_pt = true,
		.xsave_pt_size = IPT_SIM_XSAVE_PT_SIZE,
		.maxphyaddr = 46,
		.virt_bits = 57,
		.nom_ratio = 20,
		.vmx_pt = true,
	},
	{
		/*
		 * A hybrid part (Alder Lake): the performance cores (even CPUs)
		 * and the efficiency cores (odd CPUs) answer CPUID.(14H,1)
		 * differently: 2 ranges / 1, MTC 0x249 / 0x9, CYC 0x3fff /
		 * 0xff.  Linux 6.1 reads leaf 14H on one CPU only
		 * (pt_pmu_hw_init(), pt.c:237-243).
		 */
		.name = "adl",
		.desc = "Alder Lake hybrid: P and E cores differ in CPUID.(14H,1)",
		.signature = 0x000906a3,
		.leaf_14_0 = { 1, 0x1ff, 0x7, 0 },
		.leaf_14_1 = { 0x02490002, 0x003f3fff, 0, 0 },
		.hybrid = true,
		.leaf_14_1_e = { 0x00090001, 0x003f00ff, 0, 0 },
		.leaf_15 = { 2, 188, 38400000, 0 },
		.xsaves_pt = true,
		.xsave_pt_size = IPT_SIM_XSAVE_PT_SIZE,
		.maxphyaddr = 39,
		.virt_bits = 48,
		.nom_ratio = 24,
		.vmx_pt = true,
	},
	{
		/*
		 * Broadwell as it is: ToPA with many entries and single-range
		 * output, nothing in CPUID.(14H,0):EBX (so no configurable
		 * PSB: PacketByteCnt is not writable), no subleaf 1, no leaf
		 * 15H, erratum BDM106, no PT in VMX operation
		 * (IA32_VMX_MISC[14] = 0: VMXON clears TraceEn).
		 */
		.name = "bdw",
		.desc = "Broadwell client: ToPA, single-range, nothing in EBX, BDM106",
		.signature = 0x000306d4,
		.leaf_14_0 = { 0, 0x0, 0x7, 0 },
		.maxphyaddr = 39,
		.virt_bits = 48,
		.nom_ratio = 22,
		.bdm106 = true,
	},
	{
		.name = "bdw-sro",
		.desc = "Broadwell client limited to single-range output, BDM106",
		.signature = 0x000306d4,
		.leaf_14_0 = { 0, 0x0, 0x4, 0 },
		.maxphyaddr = 39,
		.virt_bits = 48,
		.nom_ratio = 22,
		.bdm106 = true,
	},
};
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_models);
const unsigned int ipt_sim_nr_models = ARRAY_SIZE(ipt_sim_models);
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_nr_models);

/**
 * ipt_sim_model_by_name() - a model by name
 * @name: its name (struct ipt_sim_model); a trailing newline is ignored,
 *        as in a sysfs write
 *
 * Context: any.
 *
 * Return: the model, or NULL.
 */
const struct ipt_sim_model *ipt_sim_model_by_name(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ipt_sim_models); i++)
		if (sysfs_streq(name, ipt_sim_models[i].name))
			return &ipt_sim_models[i];
	return NULL;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_model_by_name);

/* The highest basic leaf: 16H when leaf 15H is implemented, else 14H. */
static u32 ipt_sim_max_leaf(const struct ipt_sim_model *m)
{
	return m->leaf_15.ebx ? 0x16 : 0x14;
}

/**
 * ipt_sim_cpuid() - CPUID as the model answers it
 * @m: the model
 * @leaf: EAX
 * @subleaf: ECX
 * @r: the result
 *
 * Leaves 0, 1, 7, 0DH, 14H, 15H, 16H, 80000000H and 80000008H are
 * answered; every other leaf reads as zero.
 *
 * Context: any; models are constant.
 */
void ipt_sim_cpuid(const struct ipt_sim_model *m, u32 leaf, u32 subleaf,
		   struct ipt_cpuid_regs *r)
{
	memset(r, 0, sizeof(*r));
	if (leaf > ipt_sim_max_leaf(m) && leaf < 0x80000000)
		return;
	switch (leaf) {
	case IPT_CPUID_VENDOR:
		r->eax = ipt_sim_max_leaf(m);
		r->ebx = IPT_SIM_GI_EBX;
		r->edx = IPT_SIM_GI_EDX;
		r->ecx = IPT_SIM_GI_ECX;
		break;
	case IPT_CPUID_SIGNATURE:
		r->eax = m->signature;
		r->ecx = BIT(5) | BIT(26) | BIT(27);	/* VMX, XSAVE, OSXSAVE */
		r->edx = BIT(5);		/* MSR */
		break;
	case IPT_CPUID_EXT_FEATURES:
		if (subleaf == 0)
			r->ebx = IPT_CPUID_EXT_FEATURES_EBX_PT;
		break;
	case IPT_CPUID_XSAVE:
		if (subleaf == 0) {
			r->eax = 0x3;		/* x87, SSE */
			r->ebx = 576;
			r->ecx = 576;
		} else if (subleaf == 1) {
			r->eax = 0xb;		/* XSAVEOPT, XSAVEC, XSAVES */
			r->ecx = m->xsaves_pt ? BIT(IPT_CPUID_XSAVE_PT_COMPONENT) : 0;
		} else if (subleaf == IPT_CPUID_XSAVE_PT_COMPONENT && m->xsaves_pt) {
			r->eax = m->xsave_pt_size;
			r->ecx = BIT(0);	/* supervisor */
		}
		break;
	case IPT_CPUID_PT:
		if (subleaf == 0)
			*r = m->leaf_14_0;
		else if (subleaf == 1 && m->leaf_14_0.eax >= 1)
			*r = m->leaf_14_1;
		break;
	case IPT_CPUID_TSC:
		*r = m->leaf_15;
		break;
	case 0x16:
		r->eax = m->nom_ratio * 100;	/* base MHz */
		break;
	case 0x80000000:
		r->eax = 0x80000008;
		break;
	case 0x80000008:
		r->eax = m->maxphyaddr | (m->virt_bits << 8);
		break;
	}
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_cpuid);

/**
 * ipt_sim_nr_ranges() - number of ADDRn ranges the model has
 * @m: the model
 *
 * Context: any; models are constant.
 *
 * Return: CPUID.(14H,1):EAX[2:0] capped at 4, or 0 without IP filtering.
 */
unsigned int ipt_sim_nr_ranges(const struct ipt_sim_model *m)
{
	if (!(m->leaf_14_0.ebx & BIT(2)) || m->leaf_14_0.eax < 1)
		return 0;
	return min_t(unsigned int, m->leaf_14_1.eax & 0x7, 4);
}

/**
 * ipt_sim_user_cr3() - CR3 while the workload runs in user mode
 * @m: the model
 *
 * IPT_SIM_CODE_CR3 with the kernel PCID when the kernel uses PCIDs, and
 * under page-table isolation the user half of the PGD (bit 12) and, with
 * PCIDs, the user PCID (bit 11), as Linux's SWITCH_TO_USER_CR3 sets them
 * (arch/x86/entry/calling.h:153-157, 180-212; arch/x86/mm/tlb.c:112-155).
 *
 * Context: any; models are constant.
 *
 * Return: the CR3 value.
 */
u64 ipt_sim_user_cr3(const struct ipt_sim_model *m)
{
	u64 cr3 = IPT_SIM_CODE_CR3;

	if (m->pcid)
		cr3 |= IPT_SIM_CODE_KPCID;
	if (m->pti) {
		cr3 |= BIT_ULL(12);
		if (m->pcid)
			cr3 |= BIT_ULL(11);
	}
	return cr3;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_user_cr3);

/**
 * ipt_sim_platform() - the IPT_PLAT_* bits of the simulated kernel
 * @m: the model
 *
 * Context: any; models are constant.
 *
 * Return: IPT_PLAT_PTI and IPT_PLAT_PCID as @m says.
 */
u64 ipt_sim_platform(const struct ipt_sim_model *m)
{
	return (m->pti ? IPT_PLAT_PTI : 0) | (m->pcid ? IPT_PLAT_PCID : 0);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_platform);

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipt: the PT register and memory layouts the kernel's headers do not name.
 *
 * MSR numbers and the IA32_RTIT_CTL / IA32_RTIT_STATUS bits come from
 * <asm/msr-index.h>, the ToPA PMI bit of IA32_PERF_GLOBAL_STATUS from
 * <asm/perf_event.h> and the PT state component from <asm/fpu/types.h>,
 * so that ipt.ko, the simulated unit and Linux's own PT driver
 * (arch/x86/events/intel/pt.c) read the same definitions.  This header adds
 * only what those lack: the ToPA entry format (Intel SDM vol. 3C, 33.2.7.2,
 * private to pt.h in Linux), the ADDRn MSRs by index, the CPUID leaves the
 * driver reads and the layout of the XSAVES PT component (SDM vol. 1,
 * 13.5.6).
 */
#ifndef _IPT_REGS_H
#define _IPT_REGS_H

#include <linux/align.h>
#include <linux/bits.h>
#include <linux/types.h>
#include <asm/page_types.h>
#include <asm/fpu/types.h>
#include <asm/msr-index.h>
#include <asm/perf_event.h>

/* IA32_RTIT_ADDRn_A / _B by index (MSR_IA32_RTIT_ADDR0_A + 2n). */
#define IPT_MSR_RTIT_ADDR_A(n)		(MSR_IA32_RTIT_ADDR0_A + 2 * (n))
#define IPT_MSR_RTIT_ADDR_B(n)		(MSR_IA32_RTIT_ADDR0_B + 2 * (n))

/* IA32_RTIT_CTL.ADDRn_CFG by index. */
#define IPT_RTIT_CTL_ADDR_CFG_SHIFT(n)	(RTIT_CTL_ADDR0_OFFSET + 4 * (n))
#define IPT_RTIT_CTL_ADDR_CFG(n)	(0xfULL << IPT_RTIT_CTL_ADDR_CFG_SHIFT(n))
/* IA32_RTIT_CTL.InjectPsbPmiOnEnable (SDM vol. 3C, 33.2.8.2). */
#define IPT_RTIT_CTL_INJECTPSBPMI	BIT_ULL(56)

/* IA32_RTIT_STATUS bits Linux does not name (SDM vol. 3C, 33.2.8.4). */
#define IPT_RTIT_STATUS_PENDPSB		BIT_ULL(6)
#define IPT_RTIT_STATUS_PENDTOPAPMI	BIT_ULL(7)

/* IA32_RTIT_OUTPUT_MASK_PTRS: bits 6:0 read as 1. */
#define IPT_RTIT_MASK_LOW		0x7fULL
#define IPT_RTIT_MASK_INDEX		GENMASK_ULL(31, 7)

/* A ToPA entry (SDM vol. 3C, 33.2.7.2). */
#define IPT_TOPA_END			BIT_ULL(0)
#define IPT_TOPA_INT			BIT_ULL(2)
#define IPT_TOPA_STOP			BIT_ULL(4)
#define IPT_TOPA_SIZE			GENMASK_ULL(9, 6)
#define IPT_TOPA_BASE			GENMASK_ULL(51, 12)
/* Regions are 4 KiB << Size. */
#define IPT_TOPA_MIN_SHIFT		12
#define IPT_TOPA_MAX_SHIFT		27

/*
 * CR3 of user mode under page-table isolation: the user half of the PGD
 * and the user PCID (arch/x86/entry/calling.h:153-157, private there).
 */
#define IPT_CR3_PTI_USER_PGTABLE	BIT_ULL(12)
#define IPT_CR3_PTI_USER_PCID		BIT_ULL(11)
/* IA32_RTIT_CR3_MATCH[4:0] are reserved (SDM vol. 3C, 33.2.8.6). */
#define IPT_CR3_MATCH_RSVD		GENMASK_ULL(4, 0)

/* CPUID leaves and bits the driver reads. */
#define IPT_CPUID_VENDOR		0x00000000
#define IPT_CPUID_SIGNATURE		0x00000001
#define IPT_CPUID_SIGNATURE_ECX_VMX	BIT(5)
#define IPT_CPUID_EXT_FEATURES		0x00000007
#define IPT_CPUID_EXT_FEATURES_EBX_PT	BIT(25)
#define IPT_CPUID_XSAVE			0x0000000d
#define IPT_CPUID_XSAVE_PT_COMPONENT	XFEATURE_PT_UNIMPLEMENTED_SO_FAR
#define IPT_CPUID_PT			0x00000014
#define IPT_CPUID_TSC			0x00000015
#define IPT_CPUID_EXT_MAX		0x80000000
#define IPT_CPUID_ADDR_SIZES		0x80000008

/*
 * XSAVES / XRSTORS of the PT component alone, compacted format (SDM vol.
 * 1, 13.4.3): the 512-byte legacy area, the 64-byte XSAVE header
 * (XSTATE_BV at 512, XCOMP_BV at 520), then the component at 576 (the
 * first and only one, so 64-byte aligned whatever CPUID.(0DH,8):ECX[1]
 * says).  It holds nine 8-byte fields, in this order, followed by
 * reserved bytes up to its size, CPUID.(0DH,8):EAX; the area is sized
 * from that (IPT_XSAVE_AREA_BYTES()), never from a constant.
 */
#define IPT_XSAVE_ALIGN			64
#define IPT_XSAVE_HDR_OFFSET		512
#define IPT_XSAVE_PT_OFFSET		576

/**
 * enum ipt_xsave_pt_field - the fields of the XSAVES PT component, by index
 * @IPT_XSAVE_CTL: IA32_RTIT_CTL
 * @IPT_XSAVE_OUTPUT_BASE: IA32_RTIT_OUTPUT_BASE
 * @IPT_XSAVE_OUTPUT_MASK: IA32_RTIT_OUTPUT_MASK_PTRS
 * @IPT_XSAVE_STATUS: IA32_RTIT_STATUS
 * @IPT_XSAVE_CR3_MATCH: IA32_RTIT_CR3_MATCH
 * @IPT_XSAVE_ADDR0_A: IA32_RTIT_ADDR0_A
 * @IPT_XSAVE_ADDR0_B: IA32_RTIT_ADDR0_B
 * @IPT_XSAVE_ADDR1_A: IA32_RTIT_ADDR1_A
 * @IPT_XSAVE_ADDR1_B: IA32_RTIT_ADDR1_B
 * @IPT_XSAVE_NR_FIELDS: number of fields
 */
enum ipt_xsave_pt_field {
	IPT_XSAVE_CTL,
	IPT_XSAVE_OUTPUT_BASE,
	IPT_XSAVE_OUTPUT_MASK,
	IPT_XSAVE_STATUS,
	IPT_XSAVE_CR3_MATCH,
	IPT_XSAVE_ADDR0_A,
	IPT_XSAVE_ADDR0_B,
	IPT_XSAVE_ADDR1_A,
	IPT_XSAVE_ADDR1_B,
	IPT_XSAVE_NR_FIELDS,
};

/* The nine fields ipt reads: a smaller component is not used. */
#define IPT_XSAVE_PT_MIN_SIZE		(IPT_XSAVE_NR_FIELDS * 8)
/* The area for a component of @pt_size bytes (CPUID.(0DH,8):EAX). */
#define IPT_XSAVE_AREA_BYTES(pt_size)	\
	ALIGN(IPT_XSAVE_PT_OFFSET + (pt_size), IPT_XSAVE_ALIGN)

#endif /* _IPT_REGS_H */

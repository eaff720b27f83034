/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipt: the hardware boundary.
 *
 * Everything ipt.ko does to the PT unit goes through struct ipt_hw_ops, at
 * the level of single instructions.  The native backend executes them on the
 * CPU; a simulated unit (module ipt_sim) implements the same operations in
 * software.  Code above this interface must not know which one runs.
 */
#ifndef _IPT_HW_H
#define _IPT_HW_H

#include <linux/bits.h>
#include <linux/types.h>
#include <uapi/linux/ipt.h>

struct module;

/* Architectural MSRs the driver touches (Intel SDM vol. 4). */
#define IPT_MSR_PLATFORM_INFO		0x000000ce
#define IPT_MSR_RTIT_OUTPUT_BASE	0x00000560
#define IPT_MSR_RTIT_OUTPUT_MASK	0x00000561
#define IPT_MSR_RTIT_CTL		0x00000570
#define IPT_MSR_RTIT_STATUS		0x00000571
#define IPT_MSR_RTIT_CR3_MATCH		0x00000572
#define IPT_MSR_RTIT_ADDR_A(n)		(0x00000580 + 2 * (n))
#define IPT_MSR_RTIT_ADDR_B(n)		(0x00000581 + 2 * (n))
#define IPT_MSR_PERF_GLOBAL_STATUS	0x0000038e
#define IPT_MSR_PERF_GLOBAL_OVF_CTRL	0x00000390
#define IPT_MSR_XSS			0x00000da0

/* IA32_RTIT_CTL */
#define IPT_RTIT_CTL_TRACEEN		BIT_ULL(0)
#define IPT_RTIT_CTL_CYCEN		BIT_ULL(1)
#define IPT_RTIT_CTL_OS			BIT_ULL(2)
#define IPT_RTIT_CTL_USER		BIT_ULL(3)
#define IPT_RTIT_CTL_PWREVTEN		BIT_ULL(4)
#define IPT_RTIT_CTL_FUPONPTW		BIT_ULL(5)
#define IPT_RTIT_CTL_CR3FILTER		BIT_ULL(7)
#define IPT_RTIT_CTL_TOPA		BIT_ULL(8)
#define IPT_RTIT_CTL_MTCEN		BIT_ULL(9)
#define IPT_RTIT_CTL_TSCEN		BIT_ULL(10)
#define IPT_RTIT_CTL_DISRETC		BIT_ULL(11)
#define IPT_RTIT_CTL_PTWEN		BIT_ULL(12)
#define IPT_RTIT_CTL_BRANCHEN		BIT_ULL(13)
#define IPT_RTIT_CTL_MTCFREQ		GENMASK_ULL(17, 14)
#define IPT_RTIT_CTL_CYCTHRESH		GENMASK_ULL(22, 19)
#define IPT_RTIT_CTL_PSBFREQ		GENMASK_ULL(27, 24)
#define IPT_RTIT_CTL_ADDR_CFG_SHIFT(n)	(32 + 4 * (n))

/* IA32_RTIT_STATUS */
#define IPT_RTIT_STATUS_ERROR		BIT_ULL(4)
#define IPT_RTIT_STATUS_STOPPED		BIT_ULL(5)
#define IPT_RTIT_STATUS_BYTECNT		GENMASK_ULL(48, 32)

/* IA32_RTIT_OUTPUT_MASK_PTRS: bits 6:0 read as 1. */
#define IPT_RTIT_MASK_LOW		0x7fULL
#define IPT_RTIT_MASK_INDEX		GENMASK_ULL(31, 7)

/* A ToPA entry. */
#define IPT_TOPA_END			BIT_ULL(0)
#define IPT_TOPA_INT			BIT_ULL(2)
#define IPT_TOPA_STOP			BIT_ULL(4)
#define IPT_TOPA_SIZE			GENMASK_ULL(9, 6)
#define IPT_TOPA_BASE			GENMASK_ULL(51, 12)
/* Regions are 4 KiB << Size. */
#define IPT_TOPA_MIN_SHIFT		12
#define IPT_TOPA_MAX_SHIFT		27

/* IA32_PERF_GLOBAL_STATUS / _OVF_CTRL: the ToPA PMI. */
#define IPT_GLOBAL_STATUS_TOPA_PMI	BIT_ULL(55)
/* IA32_XSS: the PT state component. */
#define IPT_XSS_PT			BIT_ULL(8)

/* CPUID leaves and bits the driver reads. */
#define IPT_CPUID_VENDOR		0x00000000
#define IPT_CPUID_SIGNATURE		0x00000001
#define IPT_CPUID_EXT_FEATURES		0x00000007
#define IPT_CPUID_EXT_FEATURES_EBX_PT	BIT(25)
#define IPT_CPUID_XSAVE			0x0000000d
#define IPT_CPUID_XSAVE_PT_COMPONENT	8
#define IPT_CPUID_PT			0x00000014
#define IPT_CPUID_TSC			0x00000015

/*
 * XSAVES / XRSTORS of the PT component alone, compacted format: the
 * 512-byte legacy area, the 64-byte XSAVE header (XSTATE_BV at 512,
 * XCOMP_BV at 520), then the component at 576.  It holds nine 8-byte
 * fields, in this order, followed by reserved bytes up to its size.
 */
#define IPT_XSAVE_ALIGN			64
#define IPT_XSAVE_HDR_OFFSET		512
#define IPT_XSAVE_PT_OFFSET		576
#define IPT_XSAVE_PT_SIZE		128
#define IPT_XSAVE_AREA_SIZE		(IPT_XSAVE_PT_OFFSET + IPT_XSAVE_PT_SIZE)

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

/**
 * typedef ipt_pmi_fn - the driver's ToPA PMI handler
 *
 * Called by the backend on the CPU that took the PMI, with
 * IA32_PERF_GLOBAL_STATUS bit 55 set; the backend acknowledges the PMI
 * (IA32_PERF_GLOBAL_OVF_CTRL) after the handler returns.
 *
 * Context: NMI (native) or hard interrupt with interrupts disabled (sim).
 * The handler must not sleep or take locks that are not NMI-safe; it may
 * use the backend's @read_msr and @write_msr of the current CPU.
 */
typedef void (*ipt_pmi_fn)(void);

/**
 * struct ipt_hw_ops - one implementation of the PT unit's instructions
 * @name: short name for messages ("native", "sim")
 * @backend: the enum ipt_backend value reported to userspace
 * @owner: module that implements the operations (pinned while in use)
 * @cpuid: execute CPUID(@leaf, @subleaf) and store the result in @regs.
 *         May run on any CPU, in any context; the result is the same on
 *         every CPU of the system.
 * @read_msr: read MSR @msr of the current CPU into @val.  Returns 0, or
 *         -EIO where the instruction would fault (like rdmsrl_safe()).
 *         The caller keeps preemption disabled.
 * @write_msr: write @val to MSR @msr of the current CPU.  Returns 0, or -EIO
 *         where the instruction would fault (#GP), in which case nothing
 *         changed (like wrmsrl_safe()).  The caller keeps preemption
 *         disabled.
 * @xsaves: XSAVES with RFBM = bit 8 (the PT component only) into @area, on
 *         the current CPU: saves CTL, clears TraceEn (ending output as a
 *         WRMSR would), then saves the other fields.  @area is
 *         IPT_XSAVE_AREA_SIZE bytes, IPT_XSAVE_ALIGN aligned.  Returns 0,
 *         or -EIO where the instruction would fault (#GP / #UD: misaligned
 *         area, no XSAVES support for PT, IA32_XSS bit 8 clear).  The
 *         caller keeps preemption disabled.
 * @xrstors: XRSTORS with RFBM = bit 8 from @area on the current CPU.
 *         Returns 0, or -EIO where the instruction would fault: as for
 *         @xsaves, a malformed XSAVE header, TraceEn = 1 at the time, or
 *         a restored value that a WRMSR of it would #GP on; then nothing
 *         changed.  The caller keeps preemption disabled.
 * @pmi_request: install @fn as the ToPA PMI handler for every CPU.  Only one
 *         handler can be installed (-EBUSY).  Process context; may sleep.
 * @pmi_release: remove the handler; on return no call to it is running
 *         and none will start.  Process context; may sleep.
 */
struct ipt_hw_ops {
	const char *name;
	enum ipt_backend backend;
	struct module *owner;
	void (*cpuid)(u32 leaf, u32 subleaf, struct ipt_cpuid_regs *regs);
	int (*read_msr)(u32 msr, u64 *val);
	int (*write_msr)(u32 msr, u64 val);
	int (*xsaves)(void *area);
	int (*xrstors)(const void *area);
	int (*pmi_request)(ipt_pmi_fn fn);
	void (*pmi_release)(void);
};

extern const struct ipt_hw_ops ipt_hw_native_ops;

int ipt_hw_register(const struct ipt_hw_ops *ops);
void ipt_hw_unregister(const struct ipt_hw_ops *ops);

#endif /* _IPT_HW_H */

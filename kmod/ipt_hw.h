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

/* CPUID leaves and bits the driver reads. */
#define IPT_CPUID_VENDOR		0x00000000
#define IPT_CPUID_SIGNATURE		0x00000001
#define IPT_CPUID_EXT_FEATURES		0x00000007
#define IPT_CPUID_EXT_FEATURES_EBX_PT	BIT(25)
#define IPT_CPUID_XSAVE			0x0000000d
#define IPT_CPUID_XSAVE_PT_COMPONENT	8
#define IPT_CPUID_PT			0x00000014
#define IPT_CPUID_TSC			0x00000015

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
 */
struct ipt_hw_ops {
	const char *name;
	enum ipt_backend backend;
	struct module *owner;
	void (*cpuid)(u32 leaf, u32 subleaf, struct ipt_cpuid_regs *regs);
	int (*read_msr)(u32 msr, u64 *val);
	int (*write_msr)(u32 msr, u64 val);
};

extern const struct ipt_hw_ops ipt_hw_native_ops;

#endif /* _IPT_HW_H */

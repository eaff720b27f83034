// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: the native backend, which runs the real instructions on the CPU.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <asm/msr.h>
#include <asm/processor.h>

#include "ipt_hw.h"

static void ipt_native_cpuid(u32 leaf, u32 subleaf, struct ipt_cpuid_regs *r)
{
	cpuid_count(leaf, subleaf, &r->eax, &r->ebx, &r->ecx, &r->edx);
}

static int ipt_native_rdmsr(u32 msr, u64 *val)
{
	return rdmsrl_safe(msr, val) ? -EIO : 0;
}

static int ipt_native_wrmsr(u32 msr, u64 val)
{
	return wrmsrl_safe(msr, val) ? -EIO : 0;
}

const struct ipt_hw_ops ipt_hw_native_ops = {
	.name = "native",
	.backend = IPT_BACKEND_NATIVE,
	.owner = THIS_MODULE,
	.cpuid = ipt_native_cpuid,
	.read_msr = ipt_native_rdmsr,
	.write_msr = ipt_native_wrmsr,
};

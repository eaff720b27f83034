// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: the native backend, which runs the real instructions on the CPU.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <asm/apic.h>
#include <asm/asm.h>
#include <asm/cpufeature.h>
#include <asm/msr.h>
#include <asm/nmi.h>
#include <asm/processor.h>

#include "ipt_hw.h"

static void ipt_native_cpuid(u32 leaf, u32 subleaf, struct ipt_cpuid_regs *r)
{
	cpuid_count(leaf, subleaf, &r->eax, &r->ebx, &r->ecx, &r->edx);
}

/*
 * X86_FEATURE_PTI: the entry code switches to the user half of the PGD on
 * the way to user mode, setting PTI_USER_PGTABLE_MASK (bit 12) and, with
 * X86_FEATURE_PCID, PTI_USER_PCID_MASK (bit 11) in CR3
 * (arch/x86/entry/calling.h:153-157, 180-212).  X86_FEATURE_PCID is what
 * build_cr3() tests to put a PCID in CR3[11:0] (arch/x86/mm/tlb.c:157-165).
 */
static u64 ipt_native_platform(void)
{
	u64 p = 0;

	if (boot_cpu_has(X86_FEATURE_PTI))
		p |= IPT_PLAT_PTI;
	if (boot_cpu_has(X86_FEATURE_PCID))
		p |= IPT_PLAT_PCID;
	return p;
}

/*
 * KVM sets CR4.VMXE before VMXON and clears it after VMXOFF
 * (kvm_cpu_vmxon(), arch/x86/kvm/vmx/vmx.c:2495-2513; cpu_vmxoff(),
 * arch/x86/include/asm/virtext.h:44-58).
 */
static bool ipt_native_vmx_active(void)
{
	return __read_cr4() & X86_CR4_VMXE;
}

static int ipt_native_rdmsr(u32 msr, u64 *val)
{
	return rdmsrl_safe(msr, val) ? -EIO : 0;
}

static int ipt_native_wrmsr(u32 msr, u64 val)
{
	return wrmsrl_safe(msr, val) ? -EIO : 0;
}

/*
 * XSAVES / XRSTORS of the PT component: ipt calls them only where
 * CPUID.(0DH,1) enumerates XSAVES with PT support (IPT_FEAT_XSAVES_PT) and
 * on a CPU where it set IA32_XSS bit 8 and read it back.  Nothing is
 * checked here per call: a CPUID and an RDMSR of IA32_XSS at every context
 * switch are two VM exits in a guest.  If IA32_XSS loses bit 8 underneath
 * (KVM's VM exit, a resume), XSAVES saves nothing of PT without a fault
 * and XRSTORS of an area holding PT faults (SDM vol. 1, 13.11, 13.12);
 * ipt_thread.c checks the XSAVES header for the one and catches the fault
 * of the other.  Only what cannot change is checked: the CPU has XSAVES,
 * the kernel enabled XSAVE (CR4.OSXSAVE), the area is aligned.
 */
static bool ipt_native_xsaves_usable(const void *area)
{
	return IS_ALIGNED((unsigned long)area, IPT_XSAVE_ALIGN) &&
	       boot_cpu_has(X86_FEATURE_OSXSAVE) &&
	       boot_cpu_has(X86_FEATURE_XSAVES);
}

/*
 * The instructions, with RFBM = EDX:EAX = bit 8.  A fault is turned into a
 * non-zero @err by the exception table (EX_TYPE_FAULT stores the trap
 * number in the output register).
 */
static int ipt_native_xsaves(void *area)
{
	int err;

	if (!ipt_native_xsaves_usable(area))
		return -EIO;
	asm volatile("1: xsaves64 (%[area])\n\t"
		     "xor %[err], %[err]\n"
		     "2:\n\t"
		     _ASM_EXTABLE_TYPE(1b, 2b, EX_TYPE_FAULT)
		     : [err] "=a" (err)
		     : [area] "D" (area), "a" (BIT(IPT_CPUID_XSAVE_PT_COMPONENT)),
		       "d" (0)
		     : "memory");
	return err ? -EIO : 0;
}

static int ipt_native_xrstors(const void *area)
{
	int err;

	if (!ipt_native_xsaves_usable(area))
		return -EIO;
	asm volatile("1: xrstors64 (%[area])\n\t"
		     "xor %[err], %[err]\n"
		     "2:\n\t"
		     _ASM_EXTABLE_TYPE(1b, 2b, EX_TYPE_FAULT)
		     : [err] "=a" (err)
		     : [area] "D" (area), "a" (BIT(IPT_CPUID_XSAVE_PT_COMPONENT)),
		       "d" (0)
		     : "memory");
	return err ? -EIO : 0;
}

/* Gaps are timed with the clock the unit's TSC packets carry. */
static u64 ipt_native_tsc(void)
{
	return rdtsc_ordered();
}

/* The installed PMI handler; NULL when none.  Written under the mutex. */
static ipt_pmi_fn ipt_native_pmi_fn;
static DEFINE_MUTEX(ipt_native_pmi_lock);

/*
 * The ToPA PMI arrives as an NMI through the local APIC's performance
 * counter LVT entry, and NMIs do not say where they come from: every
 * NMI_LOCAL NMI reaches this handler, and ipt_pmi.c decides from
 * IA32_PERF_GLOBAL_STATUS whether it is ipt's.
 */
static int ipt_native_nmi(unsigned int cmd, struct pt_regs *regs)
{
	ipt_pmi_fn fn = READ_ONCE(ipt_native_pmi_fn);

	return fn && fn() ? NMI_HANDLED : NMI_DONE;
}

/*
 * IPT_PMI_FIRST is NMI_FLAG_FIRST: the handler goes to the head of the
 * NMI_LOCAL list (arch/x86/kernel/nmi.c:193-196), in front of perf's
 * "PMI" handler (arch/x86/events/core.c:2123, no flags).  perf's
 * intel_pmu_handle_irq() acknowledges every bit of GLOBAL_STATUS it read,
 * bit 55 included (arch/x86/events/intel/core.c:3081-3087, 2392-2395), so
 * behind it ipt would never see its PMI.
 */
static int ipt_native_pmi_request(ipt_pmi_fn fn, unsigned int flags)
{
	int ret;

	mutex_lock(&ipt_native_pmi_lock);
	if (ipt_native_pmi_fn) {
		ret = -EBUSY;
		goto out_unlock;
	}
	WRITE_ONCE(ipt_native_pmi_fn, fn);
	/* The flags must be constant: register_nmi_handler() is a macro. */
	if (flags & IPT_PMI_FIRST)
		ret = register_nmi_handler(NMI_LOCAL, ipt_native_nmi,
					   NMI_FLAG_FIRST, "ipt_pmi");
	else
		ret = register_nmi_handler(NMI_LOCAL, ipt_native_nmi, 0,
					   "ipt_pmi");
	if (ret)
		WRITE_ONCE(ipt_native_pmi_fn, NULL);
out_unlock:
	mutex_unlock(&ipt_native_pmi_lock);
	return ret;
}

static void ipt_native_pmi_release(void)
{
	mutex_lock(&ipt_native_pmi_lock);
	if (ipt_native_pmi_fn) {
		/* Waits for running handlers (synchronize_rcu()). */
		unregister_nmi_handler(NMI_LOCAL, "ipt_pmi");
		WRITE_ONCE(ipt_native_pmi_fn, NULL);
	}
	mutex_unlock(&ipt_native_pmi_lock);
}

/* What perf writes to re-arm the LVT (arch/x86/events/intel/core.c:3124). */
static void ipt_native_pmi_unmask(void)
{
	apic_write(APIC_LVTPC, APIC_DM_NMI);
}

const struct ipt_hw_ops ipt_hw_native_ops = {
	.name = "native",
	.backend = IPT_BACKEND_NATIVE,
	.owner = THIS_MODULE,
	.cpuid = ipt_native_cpuid,
	.read_msr = ipt_native_rdmsr,
	.write_msr = ipt_native_wrmsr,
	.xsaves = ipt_native_xsaves,
	.xrstors = ipt_native_xrstors,
	.pmi_request = ipt_native_pmi_request,
	.pmi_release = ipt_native_pmi_release,
	.pmi_unmask = ipt_native_pmi_unmask,
	.platform = ipt_native_platform,
	.vmx_active = ipt_native_vmx_active,
	.tsc = ipt_native_tsc,
};

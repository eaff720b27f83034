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

#include "ipt_regs.h"

struct module;

/**
 * typedef ipt_pmi_fn - the driver's PMI handler
 *
 * Called by the backend on the CPU that took an NMI through the local
 * APIC's performance-counter LVT entry (natively: every NMI_LOCAL NMI,
 * since NMIs do not say where they come from), before perf's handler
 * (@pmi_request with IPT_PMI_FIRST).  The handler itself looks at
 * IA32_PERF_GLOBAL_STATUS, acknowledges only bit 55 and re-arms the LVT
 * (@pmi_unmask) when it consumed a ToPA PMI: ipt_pmi.c holds the protocol
 * so that the simulator runs the same code as silicon.
 *
 * Context: NMI (native) or hard interrupt with interrupts disabled (sim).
 * The handler must not sleep or take locks that are not NMI-safe; it may
 * use the backend's @read_msr, @write_msr and @pmi_unmask of the current
 * CPU.
 *
 * Return: true when it consumed a ToPA PMI (NMI_HANDLED), false when the
 * NMI is not ipt's (NMI_DONE: the next handler of the chain decides).
 */
typedef bool (*ipt_pmi_fn)(void);

/*
 * @pmi_request flags.  IPT_PMI_FIRST: ahead of the handlers already
 * installed (Linux: NMI_FLAG_FIRST, list_add_rcu() at the head of the
 * NMI_LOCAL list, arch/x86/kernel/nmi.c:193-196; perf's "PMI" handler is
 * registered without flags, at the tail, arch/x86/events/core.c:2123).
 */
#define IPT_PMI_FIRST		BIT(0)

/**
 * struct ipt_hw_ops - one implementation of the PT unit's instructions
 * @name: short name for messages ("native", "sim")
 * @backend: the enum ipt_backend value reported to userspace
 * @owner: module that implements the operations (pinned while in use)
 * @cpuid: execute CPUID(@leaf, @subleaf) and store the result in @regs.
 *         May run on any CPU, in any context.  The result is that of the
 *         CPU it runs on: on a hybrid part leaf 14H differs between core
 *         types (ipt_caps.c reads it on each CPU).
 * @read_msr: read MSR @msr of the current CPU into @val.  Returns 0, or
 *         -EIO where the instruction would fault (like rdmsrl_safe()).
 *         The caller keeps preemption disabled.
 * @write_msr: write @val to MSR @msr of the current CPU.  Returns 0, or -EIO
 *         where the instruction would fault (#GP), in which case nothing
 *         changed (like wrmsrl_safe()).  The caller keeps preemption
 *         disabled.
 * @xsaves: XSAVES with EDX:EAX = bit 8 (the PT component only) into @area,
 *         on the current CPU.  The instruction's RFBM is (XCR0 | IA32_XSS)
 *         & bit 8 (SDM vol. 1, 13.11): with IA32_XSS bit 8 set it saves
 *         CTL, clears TraceEn (ending output as a WRMSR would), then saves
 *         the other fields (13.5.6); with it clear it saves nothing of PT,
 *         leaves TraceEn as it was and does not fault.  Either way it
 *         writes XSTATE_BV and XCOMP_BV = bit 63 | RFBM, so XCOMP_BV bit 8
 *         tells whether PT was saved.  @area is
 *         IPT_XSAVE_AREA_BYTES(CPUID.(0DH,8):EAX) bytes, IPT_XSAVE_ALIGN
 *         aligned.  Returns 0, or -EIO where the instruction would fault
 *         (#GP / #UD: misaligned area, no XSAVES).  The caller keeps
 *         preemption disabled.
 * @xrstors: XRSTORS with EDX:EAX = bit 8 from @area on the current CPU.
 *         Returns 0, or -EIO where the instruction would fault: as for
 *         @xsaves, a malformed XSAVE header (XCOMP_BV bit 8 while IA32_XSS
 *         lacks it, 13.12), TraceEn = 1 at the time, or a restored value
 *         that a WRMSR of it would #GP on.  On a fault, TraceEn is
 *         unchanged (13.5.6); for TraceEn = 1 the fault comes before any
 *         PT state is modified, but otherwise each of the other PT MSRs
 *         (and the other bits of IA32_RTIT_CTL) may hold its previous
 *         value, the value from @area or 0 (13.12): callers must not rely
 *         on them.  The caller keeps preemption disabled.
 * @pmi_request: install @fn as the ToPA PMI handler for every CPU, in the
 *         NMI chain at the place @flags (IPT_PMI_*) say.  Only one
 *         handler can be installed (-EBUSY).  Process context; may sleep.
 * @pmi_release: remove the handler; on return no call to it is running
 *         and none will start.  Process context; may sleep.
 * @pmi_unmask: clear the mask bit of the current CPU's local APIC LVT
 *         performance-counter entry, delivery mode NMI: what every Linux
 *         PMU handler writes (apic_write(APIC_LVTPC, APIC_DM_NMI),
 *         arch/x86/events/intel/core.c:3073-3074, 3110-3111, 3123-3124),
 *         because the APIC sets that mask bit each time it delivers a
 *         performance-monitoring interrupt (SDM vol. 3A, "Local Vector
 *         Table", the LVT performance counter register), and a PMI raised
 *         while it is set is not delivered.  Called by the PMI handler
 *         and, with interrupts off, by the code that settles a PMI in its
 *         place.  The caller keeps preemption disabled.
 * @platform: the IPT_PLAT_* bits of the kernel the unit runs under (how it
 *         uses CR3: page-table isolation, PCID); fixed from boot on.  May
 *         be NULL (no bits).  Any context.
 * @vmx_active: whether the current CPU is in VMX operation (CR4.VMXE, set
 *         by KVM before VMXON and cleared after VMXOFF).  Asked only where
 *         IA32_VMX_MISC[14] = 0 (IPT_PLAT_VMX_NO_PT): there, in VMX
 *         operation TraceEn is clear and IA32_RTIT_CTL cannot be written.
 *         May be NULL (never).  The caller keeps preemption disabled.
 * @alloc_pause: a test hook: called once by each IPT_IOC_CONFIGURE that
 *         allocates buffers for this backend, after its first buffer,
 *         with no lock of ipt held and a reference to @owner; may sleep
 *         until the backend's own test interface lets it go (the
 *         simulator's debugfs alloc_gate), so that a test can call
 *         others meanwhile.  May be NULL (native: never pauses).
 * @tsc: optional; the time stamp counter of the current CPU, in the units
 *         the unit's TSC packets carry (natively RDTSC).  Any context,
 *         NMI included.  NULL: gaps are timed with the CPU's RDTSC.
 * @lost_bytes: optional; trace bytes the current CPU's unit could not
 *         write so far because output was Stopped (IA32_RTIT_STATUS.Stopped
 *         with TraceEn = 1): a running count, only ever growing, a reset
 *         of the unit included (one found lower than at the trace's start
 *         makes the gap's size IPT_GAP_BYTES_UNKNOWN).  Silicon
 *         counts nothing of the kind (NULL natively: a gap's size is then
 *         IPT_GAP_BYTES_UNKNOWN); the simulator counts exactly.  Any
 *         context, NMI included; the caller keeps preemption disabled.
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
	int (*pmi_request)(ipt_pmi_fn fn, unsigned int flags);
	void (*pmi_release)(void);
	void (*pmi_unmask)(void);
	u64 (*platform)(void);
	bool (*vmx_active)(void);
	void (*alloc_pause)(void);
	u64 (*tsc)(void);
	u64 (*lost_bytes)(void);
};

extern const struct ipt_hw_ops ipt_hw_native_ops;

int ipt_hw_register(const struct ipt_hw_ops *ops);
void ipt_hw_unregister(const struct ipt_hw_ops *ops);

#endif /* _IPT_HW_H */

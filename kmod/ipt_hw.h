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

// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: the platform around the unit's life - power lost in a system
 * sleep, a unit stuck enabled, and VMX operation.
 *
 *  - Power loss: on S3 and hibernation every core loses its PT state; Linux
 *    restores no RTIT MSR on resume (arch/x86/power/cpu.c restores a fixed
 *    list without them) and rewrites IA32_XSS (fpu__resume_cpu()).  The
 *    simulator's syscore suspend callback, which runs on the boot CPU
 *    with interrupts off after the non-boot CPUs went offline
 *    (kernel/power/suspend.c:447-459, hibernate.c), puts every unit's
 *    registers back to their power-on values and counts, per unit, the
 *    sleep and whether the unit was still enabled (the trace it wrote is
 *    cut without a stop, and the driver would restart from zeros).
 *  - Stuck unit (debugfs cpuN/stuck): the unit ignores every clear of
 *    TraceEn (WRMSR and XSAVES; ipt_sim_msr.c), so that a driver that
 *    frees a buffer after a stop without checking frees it under a live
 *    unit.
 *  - VMX operation (debugfs cpuN/vmxon): KVM's VMXON and VMXOFF.  On a
 *    model without PT in VMX operation VMXON clears TraceEn and CTL cannot
 *    be written until VMXOFF.
 *
 * The rules (ipt_sim_power_loss(), ipt_sim_set_stuck(), ipt_sim_set_vmx())
 * are pure functions of a struct ipt_sim_cpu, as everywhere in the
 * simulator; the syscore and debugfs glue around them is here too, the
 * concern being one.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/syscore_ops.h>
#include <kunit/visibility.h>

#include "ipt_sim_module.h"

/**
 * ipt_sim_power_loss() - the unit loses power (S3, hibernation)
 * @c: the state
 *
 * The PT MSRs, IA32_PERF_GLOBAL_STATUS bit 55 and IA32_XSS go back to
 * their power-on values (IA32_XSS to the kernel's own, which has no bit
 * 8); a foreign owner and a stuck unit are gone.  The program, the feed
 * and the counters stay.  Counts the sleep, and whether the unit was
 * enabled (@c->stats.lost_live).
 *
 * Context: the owner of @c serialises every call on it.
 * Return: true if TraceEn was set by a driver (not a foreign owner).
 */
bool ipt_sim_power_loss(struct ipt_sim_cpu *c)
{
	bool live = (c->ctl & RTIT_CTL_TRACEEN) && !c->foreign;
	unsigned int i;

	c->stats.sleeps++;
	if (live)
		c->stats.lost_live++;
	c->ctl = 0;
	c->status = 0;
	c->output_base = 0;
	c->output_mask = 0x7f;
	c->cr3_match = 0;
	for (i = 0; i < ARRAY_SIZE(c->addr_a); i++) {
		c->addr_a[i] = 0;
		c->addr_b[i] = 0;
	}
	c->global_status = 0;
	c->xss = 0;
	c->packet_en = false;
	c->pmi_pending = false;
	c->foreign = false;
	c->stuck = false;
	c->stuck_pending = false;
	/* What the unit still held never reached memory. */
	ipt_sim_hold_drop(c);
	return live;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_power_loss);

/**
 * ipt_sim_set_stuck() - make the unit ignore clears of TraceEn, or not
 * @c: the state
 * @stuck: from now on, every write or XSAVES that should clear TraceEn
 *         leaves it set (counted in @c->stats.stops_ignored)
 *
 * Un-sticking a unit that ignored a clear carries that clear out now, as
 * a WRMSR would, so that a test leaves the unit off.
 *
 * Context: the owner of @c serialises every call on it.
 * Return: 0, or -EIO if that clear faulted.
 */
int ipt_sim_set_stuck(struct ipt_sim_cpu *c, bool stuck)
{
	bool pending = c->stuck_pending;

	c->stuck = stuck;
	if (stuck)
		return 0;
	c->stuck_pending = false;
	if (pending && (c->ctl & RTIT_CTL_TRACEEN) && !c->foreign)
		return ipt_sim_wrmsr(c, MSR_IA32_RTIT_CTL,
				     c->ctl & ~RTIT_CTL_TRACEEN);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_set_stuck);

/**
 * ipt_sim_set_vmx() - the CPU enters (VMXON) or leaves (VMXOFF) VMX operation
 * @c: the unit
 * @on: VMXON when true, VMXOFF when false
 *
 * On a model without PT in VMX operation (IA32_VMX_MISC[14] = 0) VMXON
 * clears TraceEn (SDM vol. 3C, "Tracing post-VMXON"; the comment of
 * intel_pt_handle_vmx(), arch/x86/events/intel/pt.c:1542-1545), with the
 * packets of a disable, and in VMX operation every write of IA32_RTIT_CTL
 * is #GP (ipt_sim_wrmsr()).  KVM runs VMXON on every CPU when its first VM
 * is created (vmx_hardware_enable(), arch/x86/kvm/vmx/vmx.c:2515-2540),
 * with CR4.VMXE set first (kvm_cpu_vmxon(), vmx.c:2495-2513), which the
 * backend's vmx_active operation reports.  With PT in VMX operation
 * nothing of PT changes.
 *
 * Context: the owner of @c serialises every call on it.
 */
void ipt_sim_set_vmx(struct ipt_sim_cpu *c, bool on)
{
	if (on && !c->vmx_on && !c->model->vmx_pt &&
	    (c->ctl & RTIT_CTL_TRACEEN)) {
		ipt_sim_trace_disable(c);
		c->ctl &= ~RTIT_CTL_TRACEEN;
		c->stats.vmxon_cleared++;
	}
	c->vmx_on = on;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_set_vmx);

/* ---- the module's glue ---------------------------------------------- */

/*
 * syscore suspend: the boot CPU alone, interrupts off, just before the
 * platform sleeps (or, with /sys/power/pm_test "core", pretends to).
 */
static int ipt_sim_life_suspend(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct ipt_sim_pcpu *pc = per_cpu_ptr(ipt_sim_pcpu, cpu);

		raw_spin_lock(&pc->lock);
		ipt_sim_power_loss(&pc->st);
		raw_spin_unlock(&pc->lock);
	}
	return 0;
}

static struct syscore_ops ipt_sim_life_syscore = {
	.suspend = ipt_sim_life_suspend,
};

static int ipt_sim_stuck_rule(struct ipt_sim_pcpu *pc, u64 val)
{
	return ipt_sim_set_stuck(&pc->st, val);
}

static u64 ipt_sim_stuck_read(const struct ipt_sim_pcpu *pc)
{
	return pc->st.stuck;
}
DEFINE_IPT_SIM_KNOB_ATTRIBUTE(ipt_sim_stuck_fops, ipt_sim_stuck_read,
			      ipt_sim_stuck_rule);

static int ipt_sim_vmxon_rule(struct ipt_sim_pcpu *pc, u64 val)
{
	ipt_sim_set_vmx(&pc->st, val);
	return 0;
}

static u64 ipt_sim_vmxon_read(const struct ipt_sim_pcpu *pc)
{
	return pc->st.vmx_on;
}
DEFINE_IPT_SIM_KNOB_ATTRIBUTE(ipt_sim_vmxon_fops, ipt_sim_vmxon_read,
			      ipt_sim_vmxon_rule);

/**
 * ipt_sim_life_debugfs() - the per-CPU knobs "stuck" and "vmxon"
 * @dir: the CPU's debugfs directory
 * @pc: its unit
 *
 * Context: module init (ipt_sim_debugfs_init()).
 */
void ipt_sim_life_debugfs(struct dentry *dir, struct ipt_sim_pcpu *pc)
{
	debugfs_create_file_unsafe("stuck", 0600, dir, pc, &ipt_sim_stuck_fops);
	debugfs_create_file_unsafe("vmxon", 0600, dir, pc, &ipt_sim_vmxon_fops);
}

/**
 * ipt_sim_life_init() - model power loss in system sleeps
 *
 * Context: module init, after ipt_sim_pcpu_init().
 */
void ipt_sim_life_init(void)
{
	register_syscore_ops(&ipt_sim_life_syscore);
}

/**
 * ipt_sim_life_exit() - undo ipt_sim_life_init()
 *
 * Context: module exit, before the units are freed.
 */
void ipt_sim_life_exit(void)
{
	unregister_syscore_ops(&ipt_sim_life_syscore);
}

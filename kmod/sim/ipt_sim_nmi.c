// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: the platform around the unit's PMI - the local APIC's
 * performance-counter LVT entry and the NMI_LOCAL handler chain - and a
 * perf-like second consumer of that chain.
 *
 * On silicon the ToPA PMI is an NMI through LVTPC, shared with perf's
 * counter overflows and the NMI watchdog.  What a driver must get right,
 * and what this file models so that the same driver code fails here as it
 * would there:
 *
 *  - the chain: every NMI runs every handler of the NMI_LOCAL list, in
 *    list order (arch/x86/kernel/nmi.c:152-163); a handler registered
 *    with NMI_FLAG_FIRST goes to the head, any other to the tail
 *    (nmi.c:193-196).  Here: ipt's handler (IPT_PMI_FIRST at the head,
 *    else the tail) and, when debugfs "perf_nmi" is 1, a perf-like
 *    handler registered without flags, as perf's "PMI" handler is
 *    (arch/x86/events/core.c:2123).
 *  - the perf-like handler does what intel_pmu_handle_irq() does
 *    (arch/x86/events/intel/core.c:3050-3127): it reads
 *    IA32_PERF_GLOBAL_STATUS, acknowledges every bit it read, bit 55
 *    included (3081-3087, 2392-2395), claims the NMI if any was set, and
 *    unmasks LVTPC at the end whatever it found (late_ack, 3123-3124).
 *  - the LVT mask: the APIC sets the mask bit of LVTPC each time it
 *    delivers a performance-monitoring interrupt (SDM vol. 3A, "Local
 *    Vector Table": "When a performance-monitoring counters interrupt is
 *    generated, the mask bit for its associated LVT entry is set"), and a
 *    masked entry inhibits reception.  A PMI raised while LVTPC is masked
 *    is not delivered, and not held either: the SDM describes no pending
 *    state for a masked local interrupt, so the simulator takes the
 *    strict reading and drops it (counted as pmis_masked).  The overflow
 *    itself stays visible in IA32_PERF_GLOBAL_STATUS until acknowledged.
 *  - IA32_PERF_GLOBAL_STATUS holds bit 55 (raised by the output engine)
 *    and PMC0's overflow bit 0 (debugfs cpuN/pmc_overflow, perf's
 *    counter); IA32_PERF_GLOBAL_OVF_CTRL clears the bits written as 1
 *    (ipt_sim_msr.c).
 *
 * Delivery (ipt_sim_nmi_deliver()) runs from the unit's timer in hard
 * interrupt context on the unit's CPU.  The chain's order is read under a
 * raw spinlock; its handlers run with interrupts off, an RCU read side,
 * so that removing one waits with synchronize_rcu().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <kunit/visibility.h>

#include "ipt_sim_module.h"

/* The handlers of the modelled NMI_LOCAL list. */
enum ipt_sim_nmi_who {
	IPT_SIM_NMI_IPT,
	IPT_SIM_NMI_PERF,
	IPT_SIM_NMI_MAX,
};

/* The list, in order; writers hold ipt_sim_nmi_mutex and the raw lock. */
static u8 ipt_sim_chain[IPT_SIM_NMI_MAX];
static unsigned int ipt_sim_chain_len;
static DEFINE_RAW_SPINLOCK(ipt_sim_chain_lock);
static DEFINE_MUTEX(ipt_sim_nmi_mutex);

/* ipt's handler, or NULL; READ_ONCE in delivery. */
static ipt_pmi_fn ipt_sim_pmi_fn;

static bool ipt_sim_chain_has(enum ipt_sim_nmi_who who)
{
	unsigned int i;

	lockdep_assert_held(&ipt_sim_nmi_mutex);
	for (i = 0; i < ipt_sim_chain_len; i++)
		if (ipt_sim_chain[i] == who)
			return true;
	return false;
}

/* list_add_rcu() or list_add_tail_rcu(), nmi.c:193-196. */
static void ipt_sim_chain_add(enum ipt_sim_nmi_who who, bool first)
{
	unsigned long flags;

	lockdep_assert_held(&ipt_sim_nmi_mutex);
	raw_spin_lock_irqsave(&ipt_sim_chain_lock, flags);
	if (first) {
		memmove(ipt_sim_chain + 1, ipt_sim_chain, ipt_sim_chain_len);
		ipt_sim_chain[0] = who;
	} else {
		ipt_sim_chain[ipt_sim_chain_len] = who;
	}
	ipt_sim_chain_len++;
	raw_spin_unlock_irqrestore(&ipt_sim_chain_lock, flags);
}

/* Remove @who; on return no NMI runs its handler (synchronize_rcu()). */
static void ipt_sim_chain_del(enum ipt_sim_nmi_who who)
{
	unsigned long flags;
	unsigned int i;

	lockdep_assert_held(&ipt_sim_nmi_mutex);
	raw_spin_lock_irqsave(&ipt_sim_chain_lock, flags);
	for (i = 0; i < ipt_sim_chain_len; i++) {
		if (ipt_sim_chain[i] != who)
			continue;
		memmove(ipt_sim_chain + i, ipt_sim_chain + i + 1,
			ipt_sim_chain_len - i - 1);
		ipt_sim_chain_len--;
		break;
	}
	raw_spin_unlock_irqrestore(&ipt_sim_chain_lock, flags);
	synchronize_rcu();
}

/*
 * The perf-like handler: intel_pmu_handle_irq() in outline.  Acks all it
 * read (write-1-to-clear), unmasks LVTPC last, claims the NMI if it found
 * any bit.  Context: NMI delivery, hard interrupt on @pc's CPU.
 */
static bool ipt_sim_perf_nmi(struct ipt_sim_pcpu *pc)
{
	u64 status;

	raw_spin_lock(&pc->lock);
	status = pc->st.global_status;
	if (status & GLOBAL_STATUS_TRACE_TOPAPMI)
		pc->st.stats.perf_topa++;
	ipt_sim_global_ack(&pc->st, status);
	pc->st.lvt_masked = false;
	raw_spin_unlock(&pc->lock);
	return status;
}

/**
 * ipt_sim_nmi_deliver() - deliver a raised PMI through LVTPC and the chain
 * @pc: the unit that raised it
 *
 * A PMI whose every IA32_PERF_GLOBAL_STATUS bit was acknowledged in the
 * meantime (a driver that settled it) is not delivered, as a handler that
 * checks the status would ignore its NMI.  With LVTPC masked it is not
 * delivered and is lost (pmis_masked); otherwise delivery masks LVTPC and
 * runs every handler of the chain in order.  An NMI no handler claims is
 * counted as pmis_lost (Linux: "NMI received for unknown reason").
 *
 * Context: hard interrupt on @pc's CPU, @pc->lock not held.
 */
void ipt_sim_nmi_deliver(struct ipt_sim_pcpu *pc)
{
	u8 chain[IPT_SIM_NMI_MAX];
	unsigned int i, n;
	bool handled = false;
	ipt_pmi_fn fn;

	lockdep_assert_irqs_disabled();
	raw_spin_lock(&pc->lock);
	if (!pc->st.global_status) {
		raw_spin_unlock(&pc->lock);
		return;
	}
	if (pc->st.lvt_masked) {
		pc->st.stats.pmis_masked++;
		raw_spin_unlock(&pc->lock);
		return;
	}
	pc->st.lvt_masked = true;
	raw_spin_unlock(&pc->lock);

	raw_spin_lock(&ipt_sim_chain_lock);
	n = ipt_sim_chain_len;
	memcpy(chain, ipt_sim_chain, n);
	raw_spin_unlock(&ipt_sim_chain_lock);

	for (i = 0; i < n; i++) {
		if (chain[i] == IPT_SIM_NMI_PERF) {
			handled |= ipt_sim_perf_nmi(pc);
			continue;
		}
		fn = READ_ONCE(ipt_sim_pmi_fn);
		if (fn)
			handled |= fn();
	}
	if (!handled) {
		raw_spin_lock(&pc->lock);
		pc->st.stats.pmis_lost++;
		raw_spin_unlock(&pc->lock);
	}
}

/* ---- backend operations ----------------------------------------------- */

/**
 * ipt_sim_nmi_request() - struct ipt_hw_ops.pmi_request
 * @fn: ipt's handler
 * @flags: IPT_PMI_FIRST puts it at the head of the chain, else the tail
 *
 * Context: process context.
 * Return: 0, or -EBUSY when a handler is installed already.
 */
int ipt_sim_nmi_request(ipt_pmi_fn fn, unsigned int flags)
{
	int ret = 0;

	mutex_lock(&ipt_sim_nmi_mutex);
	if (ipt_sim_pmi_fn) {
		ret = -EBUSY;
	} else {
		WRITE_ONCE(ipt_sim_pmi_fn, fn);
		ipt_sim_chain_add(IPT_SIM_NMI_IPT, flags & IPT_PMI_FIRST);
	}
	mutex_unlock(&ipt_sim_nmi_mutex);
	return ret;
}

/**
 * ipt_sim_nmi_release() - struct ipt_hw_ops.pmi_release
 *
 * Context: process context, may sleep.  On return no call of the handler
 * runs.
 */
void ipt_sim_nmi_release(void)
{
	mutex_lock(&ipt_sim_nmi_mutex);
	if (ipt_sim_pmi_fn) {
		ipt_sim_chain_del(IPT_SIM_NMI_IPT);
		WRITE_ONCE(ipt_sim_pmi_fn, NULL);
	}
	mutex_unlock(&ipt_sim_nmi_mutex);
}

/**
 * ipt_sim_nmi_unmask() - struct ipt_hw_ops.pmi_unmask: LVTPC = NMI
 *
 * Counts lvt_early when another IA32_PERF_GLOBAL_STATUS bit than 55 is
 * still set: perf's handler unmasks only after resetting its overflow
 * bits, "this avoids spurious NMIs on Haswell CPUs"
 * (arch/x86/events/intel/core.c:3117-3124), so a driver must leave that
 * to perf.
 *
 * Context: preemption disabled, on the CPU whose LVT it is.
 */
void ipt_sim_nmi_unmask(void)
{
	struct ipt_sim_pcpu *pc = this_cpu_ptr(ipt_sim_pcpu);
	unsigned long flags;

	raw_spin_lock_irqsave(&pc->lock, flags);
	if (pc->st.global_status & ~GLOBAL_STATUS_TRACE_TOPAPMI)
		pc->st.stats.lvt_early++;
	pc->st.lvt_masked = false;
	raw_spin_unlock_irqrestore(&pc->lock, flags);
}

/* ---- the perf-like consumer ------------------------------------------- */

/**
 * ipt_sim_perf_nmi_set() - register (true) or remove the perf-like handler
 * @on: whether it is registered
 *
 * Registered without flags, at the tail of the chain, as perf's is: ahead
 * of a handler registered later without IPT_PMI_FIRST, behind one with it.
 *
 * Context: process context, may sleep.
 */
void ipt_sim_perf_nmi_set(bool on)
{
	mutex_lock(&ipt_sim_nmi_mutex);
	if (on && !ipt_sim_chain_has(IPT_SIM_NMI_PERF))
		ipt_sim_chain_add(IPT_SIM_NMI_PERF, false);
	else if (!on && ipt_sim_chain_has(IPT_SIM_NMI_PERF))
		ipt_sim_chain_del(IPT_SIM_NMI_PERF);
	mutex_unlock(&ipt_sim_nmi_mutex);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_perf_nmi_set);

/**
 * ipt_sim_perf_nmi_get() - whether the perf-like handler is registered
 *
 * Context: process context.
 * Return: true when it is.
 */
bool ipt_sim_perf_nmi_get(void)
{
	bool on;

	mutex_lock(&ipt_sim_nmi_mutex);
	on = ipt_sim_chain_has(IPT_SIM_NMI_PERF);
	mutex_unlock(&ipt_sim_nmi_mutex);
	return on;
}

/**
 * ipt_sim_pmc_overflow() - perf's counter PMC0 overflows on @pc's unit
 * @pc: the unit
 *
 * Sets IA32_PERF_GLOBAL_STATUS bit 0 and raises a PMI, delivered like the
 * unit's own.
 *
 * Context: on @pc's CPU (the timer is pinned), @pc->lock held.
 */
void ipt_sim_pmc_overflow(struct ipt_sim_pcpu *pc)
{
	lockdep_assert_held(&pc->lock);
	pc->st.global_status |= IPT_SIM_GLOBAL_PMC0;
	pc->st.pmi_pending = true;
	ipt_sim_kick(pc, pc->st.ctl & RTIT_CTL_TRACEEN, true);
}

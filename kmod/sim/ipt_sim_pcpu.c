// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: the per-CPU units behind ipt.ko's backend interface.
 *
 * One struct ipt_sim_pcpu per possible CPU holds a unit's state under a
 * raw spinlock.  The backend operations (struct ipt_hw_ops) run the unit's
 * rules (ipt_sim_msr.c) on the calling CPU's state; a pinned hard-interrupt
 * hrtimer per CPU produces output while TraceEn = 1 and delivers the PMIs
 * that output raises through the modelled LVT and NMI chain
 * (ipt_sim_nmi.c), where ipt.ko's handler is one of the consumers.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cpuhotplug.h>
#include <linux/hrtimer.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <kunit/visibility.h>

#include "ipt_sim_module.h"

struct ipt_sim_pcpu __percpu *ipt_sim_pcpu;
u64 ipt_sim_rate;			/* bytes/s, READ_ONCE */
bool ipt_sim_bulk;			/* bulk mode, READ_ONCE */

/**
 * ipt_sim_rate_max() - the largest rate the output timer follows now
 *
 * Context: any; reads ipt_sim_bulk with READ_ONCE().
 *
 * Return: IPT_SIM_BULK_RATE_MAX in bulk mode, else IPT_SIM_RATE_MAX.
 */
u64 ipt_sim_rate_max(void)
{
	return READ_ONCE(ipt_sim_bulk) ? IPT_SIM_BULK_RATE_MAX :
					 IPT_SIM_RATE_MAX;
}

/*
 * The simulated TSC runs at the nominal ratio times 100 MHz, and never
 * backwards: ipt_sim_run() may have run the unit's clock a little ahead
 * of the wall clock as the program ran.
 */
static void ipt_sim_clock(struct ipt_sim_pcpu *pc)
{
	u64 now = mul_u64_u32_div(ktime_get_ns(), ipt_sim_model->nom_ratio, 10);

	lockdep_assert_held(&pc->lock);
	pc->st.tsc = max(pc->st.tsc, now);
}

/**
 * ipt_sim_tick_rest() - the least time between the end of a tick and the next
 * @period_ns: the output timer's period (ipt_sim_period_us)
 * @took_ns: how long the tick that just ran took
 * @bulk: the tick ran in bulk mode
 *
 * A tick runs in hard interrupt context, and under emulation a tick can
 * take longer than a period (a packet at a time at a high rate, or a full
 * bulk tick, IPT_SIM_BULK_TICK_MAX bytes, 0.7-1.9 ms under TCG), after
 * which the next period's tick would follow at once and the CPU would
 * run little else.  A tick that took more than half a period is followed
 * by as long a rest.  In bulk mode a tick's work is bounded (a few ms at
 * most under TCG): a longer one was the host descheduling the vCPU, and
 * the rest is at most half of bulk mode's catch-up (IPT_SIM_BULK_CATCH_UP
 * periods, over which its slice keeps the rate), so that it costs no
 * output.  A packet at a time, the tick's work is the rate times a
 * period, unbounded under emulation: the rest is what it took.
 *
 * Context: any.
 *
 * Return: 0 (the next tick is on the period's grid), or the nanoseconds
 * to rest from the end of the tick.
 */
u64 ipt_sim_tick_rest(u64 period_ns, u64 took_ns, bool bulk)
{
	if (took_ns <= period_ns / 2)
		return 0;
	return bulk ? min(took_ns, IPT_SIM_BULK_CATCH_UP / 2 * period_ns) : took_ns;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_tick_rest);

/**
 * ipt_sim_start_delay() - when an idle output timer that is started runs
 * @period_ns: the output timer's period
 * @now_ns: ktime_get_ns() now
 * @rest_until_ns: the end of the last tick's rest (0: none)
 *
 * A period from now, or at the end of the rest the last tick began, if
 * that is later: a timer stopped by TraceEn clear right after a long
 * tick and started again at once rests as if it had not stopped.
 *
 * Context: any.
 *
 * Return: the nanoseconds from now to the first tick.
 */
u64 ipt_sim_start_delay(u64 period_ns, u64 now_ns, u64 rest_until_ns)
{
	return max(period_ns, rest_until_ns > now_ns ? rest_until_ns - now_ns : 0);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_start_delay);

/*
 * The output timer: a slice of rate x period_us bytes.  In bulk mode the
 * built-in loop writes them in units of up to IPT_SIM_BULK_CHUNK bytes
 * (ipt_sim_run()), and the slice is rate x the time since the last tick
 * (up to IPT_SIM_BULK_CATCH_UP periods: a tick that came late under
 * emulation does not lower the rate, one that a PMI brought early does
 * not raise it), at most IPT_SIM_BULK_TICK_MAX bytes; else a packet at
 * a time, at most IPT_SIM_RATE_MAX a second.  A rate set beyond the
 * mode's maximum (bulk mode turned off after it was set) runs at it.
 * The next tick comes on the period's grid, or, after a tick longer than
 * half a period, as long after its end, within a bound
 * (ipt_sim_tick_rest()).
 */
static enum hrtimer_restart ipt_sim_tick(struct hrtimer *timer)
{
	struct ipt_sim_pcpu *pc = container_of(timer, struct ipt_sim_pcpu, timer);
	u64 period_ns = (u64)ipt_sim_period_us * NSEC_PER_USEC;
	bool bulk = READ_ONCE(ipt_sim_bulk);
	u64 rate = min(READ_ONCE(pc->rate) ?: READ_ONCE(ipt_sim_rate),
		       bulk ? IPT_SIM_BULK_RATE_MAX : IPT_SIM_RATE_MAX);
	u64 now = ktime_get_ns(), slice = period_ns, budget, end, rest;
	bool pmi, on;

	/*
	 * The timer is pinned: it fires elsewhere only after its CPU went
	 * offline (the dying CPU's hrtimers move to another one, Linux 6.1
	 * kernel/time/hrtimer.c, migrate_hrtimer_list()).  An offline CPU
	 * runs nothing and takes no interrupt: no output, no PMI, until
	 * it is back (ipt_sim_cpu_online()).
	 */
	if (smp_processor_id() != pc->cpu)
		return HRTIMER_NORESTART;

	raw_spin_lock(&pc->lock);
	if (bulk && now > pc->last_tick_ns)
		slice = min(now - pc->last_tick_ns,
			    IPT_SIM_BULK_CATCH_UP * period_ns);
	pc->last_tick_ns = now;
	budget = div_u64(rate * slice, NSEC_PER_SEC);
	if (bulk)
		budget = min_t(u64, budget, IPT_SIM_BULK_TICK_MAX);
	ipt_sim_clock(pc);
	pc->st.bulk = bulk ? pc->bulk : NULL;
	ipt_sim_run(&pc->st, budget ?: 1);
	pmi = pc->st.pmi_pending;
	pc->st.pmi_pending = false;
	raw_spin_unlock(&pc->lock);

	if (pmi)
		ipt_sim_nmi_deliver(pc);
	/* The handler's WRMSR may have re-armed the timer already. */
	if (hrtimer_is_queued(timer))
		return HRTIMER_NORESTART;

	raw_spin_lock(&pc->lock);
	on = pc->st.ctl & RTIT_CTL_TRACEEN;
	pmi = pc->st.pmi_pending;
	end = ktime_get_ns();
	rest = ipt_sim_tick_rest(period_ns, end - now, bulk);
	/* kept for a start after a stop (ipt_sim_kick()) */
	pc->rest_until_ns = rest ? end + rest : 0;
	raw_spin_unlock(&pc->lock);
	if (!on && !pmi)
		return HRTIMER_NORESTART;
	if (pmi) {
		hrtimer_forward_now(timer, ns_to_ktime(1));
	} else {
		/*
		 * An absolute expiry, on the timer's own clock (monotonic):
		 * HRTIMER_RESTART enqueues the timer at the expiry the callback
		 * left (Linux 6.1 kernel/time/hrtimer.c, __run_hrtimer(),
		 * enqueue_hrtimer(..., HRTIMER_MODE_ABS)).
		 */
		if (rest)
			hrtimer_set_expires(timer, ns_to_ktime(end + rest));
		else
			hrtimer_forward_now(timer, ns_to_ktime(period_ns));
	}
	return HRTIMER_RESTART;
}

/**
 * ipt_sim_kick() - keep a unit's output timer running while there is work
 * @pc: the unit
 * @on: its TraceEn
 * @pmi: it has a PMI pending
 *
 * Called after anything that may have turned output on or raised a PMI: a
 * pending PMI is delivered at once, output is produced every period.
 *
 * Context: on @pc's CPU (the timer is pinned), @pc->lock held.
 */
void ipt_sim_kick(struct ipt_sim_pcpu *pc, bool on, bool pmi)
{
	bool idle;

	lockdep_assert_held(&pc->lock);
	if (!on && !pmi)
		return;
	/* A timer that was idle starts its time slices afresh. */
	idle = !hrtimer_active(&pc->timer);
	if (idle)
		pc->last_tick_ns = ktime_get_ns();
	if (pmi)
		hrtimer_start(&pc->timer, 0, HRTIMER_MODE_REL_PINNED_HARD);
	else if (idle)
		hrtimer_start(&pc->timer,
			      ns_to_ktime(ipt_sim_start_delay((u64)ipt_sim_period_us *
							      NSEC_PER_USEC,
							      pc->last_tick_ns,
							      pc->rest_until_ns)),
			      HRTIMER_MODE_REL_PINNED_HARD);
}

/* ---- the backend operations ------------------------------------------- */

static struct ipt_sim_pcpu *ipt_sim_this_cpu(void)
{
	lockdep_assert_preemption_disabled();
	return this_cpu_ptr(ipt_sim_pcpu);
}

static void ipt_sim_op_cpuid(u32 leaf, u32 subleaf, struct ipt_cpuid_regs *r)
{
	/* Whichever CPU this runs on: a hybrid model's cores differ. */
	ipt_sim_cpuid(ipt_sim_model_of(raw_smp_processor_id()), leaf, subleaf, r);
}

static int ipt_sim_op_rdmsr(u32 msr, u64 *val)
{
	struct ipt_sim_pcpu *pc = ipt_sim_this_cpu();
	unsigned long flags;
	int ret;

	raw_spin_lock_irqsave(&pc->lock, flags);
	ret = ipt_sim_rdmsr(&pc->st, msr, val);
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return ret;
}

/* Run @op on this CPU's state; -EIO for the ops' #GP. */
enum ipt_sim_op { IPT_SIM_WRMSR, IPT_SIM_XSAVES, IPT_SIM_XRSTORS };

static int ipt_sim_op(enum ipt_sim_op op, u32 msr, u64 val, void *area)
{
	struct ipt_sim_pcpu *pc = ipt_sim_this_cpu();
	unsigned long flags;
	bool on, pmi;
	u8 hide = 0;
	int ret;

	raw_spin_lock_irqsave(&pc->lock, flags);
	ipt_sim_clock(pc);
	/* gp_ctl bit 2: a write outside hard-interrupt context does not fault. */
	if ((pc->st.gp_ctl & IPT_SIM_GP_CTL_IRQ) && !in_hardirq())
		hide = pc->st.gp_ctl & (IPT_SIM_GP_CTL_CLEAR | IPT_SIM_GP_CTL_SET);
	pc->st.gp_ctl &= ~hide;
	if (op == IPT_SIM_WRMSR)
		ret = ipt_sim_wrmsr(&pc->st, msr, val);
	else if (op == IPT_SIM_XSAVES)
		ret = ipt_sim_xsaves(&pc->st, area);
	else
		ret = ipt_sim_xrstors(&pc->st, area);
	pc->st.gp_ctl |= hide;
	on = pc->st.ctl & RTIT_CTL_TRACEEN;
	pmi = pc->st.pmi_pending;
	ipt_sim_kick(pc, on, pmi);
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return ret;
}

static int ipt_sim_op_wrmsr(u32 msr, u64 val)
{
	return ipt_sim_op(IPT_SIM_WRMSR, msr, val, NULL);
}

static int ipt_sim_op_xsaves(void *area)
{
	return ipt_sim_op(IPT_SIM_XSAVES, 0, 0, area);
}

static int ipt_sim_op_xrstors(const void *area)
{
	return ipt_sim_op(IPT_SIM_XRSTORS, 0, 0, (void *)area);
}

static bool ipt_sim_op_vmx_active(void)
{
	struct ipt_sim_pcpu *pc = ipt_sim_this_cpu();

	return READ_ONCE(pc->st.vmx_on);
}

/* The unit's clock, which its TSC packets carry. */
static u64 ipt_sim_op_tsc(void)
{
	struct ipt_sim_pcpu *pc = ipt_sim_this_cpu();
	unsigned long flags;
	u64 tsc;

	raw_spin_lock_irqsave(&pc->lock, flags);
	ipt_sim_clock(pc);
	tsc = pc->st.tsc;
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return tsc;
}

/*
 * Bytes not written while Stopped at STOP: the unit counts them exactly,
 * and a reset (debugfs "reset") does not take the count back.
 */
static u64 ipt_sim_op_lost_bytes(void)
{
	struct ipt_sim_pcpu *pc = ipt_sim_this_cpu();
	unsigned long flags;
	u64 n;

	raw_spin_lock_irqsave(&pc->lock, flags);
	n = pc->st.lost_before + pc->st.stats.stopped;
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return n;
}

static u64 ipt_sim_op_platform(void)
{
	return ipt_sim_platform(ipt_sim_model);
}

const struct ipt_hw_ops ipt_sim_ops = {
	.name = "sim",
	.backend = IPT_BACKEND_SIM,
	.owner = THIS_MODULE,
	.cpuid = ipt_sim_op_cpuid,
	.read_msr = ipt_sim_op_rdmsr,
	.write_msr = ipt_sim_op_wrmsr,
	.xsaves = ipt_sim_op_xsaves,
	.xrstors = ipt_sim_op_xrstors,
	.pmi_request = ipt_sim_nmi_request,
	.pmi_release = ipt_sim_nmi_release,
	.pmi_unmask = ipt_sim_nmi_unmask,
	.platform = ipt_sim_op_platform,
	.vmx_active = ipt_sim_op_vmx_active,
	.alloc_pause = ipt_sim_gate_pause,
	.tsc = ipt_sim_op_tsc,
	.lost_bytes = ipt_sim_op_lost_bytes,
};

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * ipt_sim_live_ops() - the registered operations, for KUnit
 *
 * Lets the live suite drive the per-CPU units through the same interface
 * ipt.ko uses: timer, PMI delivery and locking run for real.
 *
 * Context: any; the operations have ipt.ko's calling rules (struct
 * ipt_hw_ops).
 *
 * Return: the simulator's struct ipt_hw_ops.
 */
const struct ipt_hw_ops *ipt_sim_live_ops(void)
{
	return &ipt_sim_ops;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_live_ops);

/**
 * ipt_sim_live_rate() - set the output rate of the live units, for KUnit
 * @rate: bytes per second per tracing CPU, at most IPT_SIM_RATE_MAX
 *
 * What debugfs "rate" sets; lets the live suite run at a rate of its own
 * choosing and put the previous one back.
 *
 * Context: any; the timer reads the rate with READ_ONCE().
 *
 * Return: the previous rate.
 */
u64 ipt_sim_live_rate(u64 rate)
{
	return xchg(&ipt_sim_rate, min_t(u64, rate, IPT_SIM_RATE_MAX));
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_live_rate);

/**
 * ipt_sim_live_state() - a copy of a live unit's state, for KUnit
 * @cpu: the unit's CPU
 * @st: receives the copy (registers, LVT mask, counters)
 *
 * Context: process context; takes the unit's lock.
 */
void ipt_sim_live_state(unsigned int cpu, struct ipt_sim_cpu *st)
{
	struct ipt_sim_pcpu *pc = per_cpu_ptr(ipt_sim_pcpu, cpu);
	unsigned long flags;

	raw_spin_lock_irqsave(&pc->lock, flags);
	*st = pc->st;
	raw_spin_unlock_irqrestore(&pc->lock, flags);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_live_state);
#endif

/* ---- set-up and tear-down --------------------------------------------- */

static enum cpuhp_state ipt_sim_online_state;

/*
 * A CPU back online: its unit goes on producing (and its PMI pending is
 * delivered) if it was left enabled, by someone other than ipt (which
 * stops and restarts its own around hotplug), while the CPU was off.
 * Context: CPU hotplug callback on @cpu, preemption enabled.
 */
static int ipt_sim_cpu_online(unsigned int cpu)
{
	struct ipt_sim_pcpu *pc = per_cpu_ptr(ipt_sim_pcpu, cpu);
	unsigned long flags;

	/*
	 * The timer moved off this CPU when it died may still be queued
	 * there (its expiry kept): ipt_sim_kick() would take it as running.
	 * Its callback returns before taking the lock (ipt_sim_tick()).
	 */
	hrtimer_cancel(&pc->timer);
	raw_spin_lock_irqsave(&pc->lock, flags);
	ipt_sim_kick(pc, pc->st.ctl & RTIT_CTL_TRACEEN, pc->st.pmi_pending);
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return 0;
}

/**
 * ipt_sim_pcpu_init() - a unit in its reset state for every possible CPU
 *
 * Each presents ipt_sim_model, with its output timer ready but not
 * running, and restarted when its CPU comes back online.
 *
 * Context: module init, before anything can reach the units.
 *
 * Return: 0, -ENOMEM, or the error of the hotplug state's set-up.
 */
int ipt_sim_pcpu_init(void)
{
	unsigned int cpu;
	int ret = -ENOMEM;

	ipt_sim_pcpu = alloc_percpu(struct ipt_sim_pcpu);
	if (!ipt_sim_pcpu)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		struct ipt_sim_pcpu *pc = per_cpu_ptr(ipt_sim_pcpu, cpu);

		pc->st.hold = kzalloc(sizeof(*pc->st.hold), GFP_KERNEL);
		pc->bulk = kmalloc(IPT_SIM_BULK_CHUNK, GFP_KERNEL);
		if (!pc->st.hold || !pc->bulk)
			goto nomem;
	}
	for_each_possible_cpu(cpu) {
		struct ipt_sim_pcpu *pc = per_cpu_ptr(ipt_sim_pcpu, cpu);

		raw_spin_lock_init(&pc->lock);
		ipt_sim_cpu_init(&pc->st, ipt_sim_model_of(cpu));
		hrtimer_init(&pc->timer, CLOCK_MONOTONIC,
			     HRTIMER_MODE_REL_PINNED_HARD);
		pc->timer.function = ipt_sim_tick;
		pc->cpu = cpu;
	}
	ret = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "ipt_sim:online",
					ipt_sim_cpu_online, NULL);
	if (ret < 0)
		goto nomem;
	ipt_sim_online_state = ret;
	return 0;
nomem:
	for_each_possible_cpu(cpu) {
		kfree(per_cpu_ptr(ipt_sim_pcpu, cpu)->st.hold);
		kfree(per_cpu_ptr(ipt_sim_pcpu, cpu)->bulk);
	}
	free_percpu(ipt_sim_pcpu);
	ipt_sim_pcpu = NULL;
	return ret;
}

/**
 * ipt_sim_pcpu_free() - stop and free every unit, and their programs
 *
 * Context: process context; no backend operation, sched_switch hook or
 * debugfs file can reach the units any more, and no CPU traces.
 */
void ipt_sim_pcpu_free(void)
{
	unsigned int cpu;

	cpuhp_remove_state_nocalls(ipt_sim_online_state);
	for_each_possible_cpu(cpu) {
		struct ipt_sim_pcpu *pc = per_cpu_ptr(ipt_sim_pcpu, cpu);

		hrtimer_cancel(&pc->timer);
		ipt_sim_prog_cpu_free(pc);
		kfree(pc->st.hold);
		kfree(pc->bulk);
	}
	free_percpu(ipt_sim_pcpu);
}

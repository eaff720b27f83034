// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: per-CPU mode - one trace per chosen CPU, whatever runs on it,
 * started and stopped by cross-CPU calls.
 *
 * The session state machine (ipt_session.c) calls this file only through
 * ipt_cpu_mode_ops.  See Documentation/design.rst (sessions, PMI, hotplug).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/lockdep.h>
#include <linux/smp.h>
#include <linux/wait.h>
#include <kunit/visibility.h>

#include "ipt_session.h"

/* ---- cross-CPU calls: run on t->cpu with interrupts off ------------- */

static void ipt_trace_check_free_on_cpu(void *arg)
{
	struct ipt_trace *t = arg;
	u64 ctl;

	t->err = t->s->hw->read_msr(MSR_IA32_RTIT_CTL, &ctl);
	if (!t->err && (ctl & RTIT_CTL_TRACEEN))
		t->err = -EBUSY;
}

/*
 * Start: the SDM order, OUTPUT_BASE, OUTPUT_MASK_PTRS, STATUS, CR3_MATCH,
 * ADDRn, and RTIT_CTL last.  Refuses a unit someone else has enabled, and
 * one in VMX operation on a part without PT there (-EBUSY: VMXON cleared
 * TraceEn and CTL cannot be written until VMXOFF; pt.c likewise writes no
 * CTL while pt->vmx_on, pt.c:416-427), and, on a hybrid part, a CPU whose
 * own leaf 14H lacks something the configuration uses (-EOPNOTSUPP: it
 * came online after the configuration was checked).
 */
static void ipt_trace_start_on_cpu(void *arg)
{
	struct ipt_trace *t = arg;
	const struct ipt_session *s = t->s;
	const struct ipt_hw_ops *hw = s->hw;
	unsigned int i, nr = ipt_caps_cpu_ranges(hw, smp_processor_id(),
						   s->nr_ranges);
	u64 ctl;
	int ret;

	ret = hw->read_msr(MSR_IA32_RTIT_CTL, &ctl);
	if (!ret && (ctl & RTIT_CTL_TRACEEN))
		ret = -EBUSY;
	if (!ret && s->hwcfg.vmx_check && hw->vmx_active && hw->vmx_active())
		ret = -EBUSY;
	if (!ret && !ipt_caps_cpu_fits(hw, smp_processor_id(), &s->hwcfg,
				       s->single))
		ret = -EOPNOTSUPP;
	if (!ret)
		ret = hw->write_msr(MSR_IA32_RTIT_OUTPUT_BASE, t->base);
	if (!ret)
		ret = hw->write_msr(MSR_IA32_RTIT_OUTPUT_MASK, t->mask);
	if (!ret)
		ret = hw->write_msr(MSR_IA32_RTIT_STATUS,
				    t->status & s->hwcfg.status_keep);
	if (!ret && s->has_cr3)
		ret = hw->write_msr(MSR_IA32_RTIT_CR3_MATCH, s->hwcfg.cr3_match);
	for (i = 0; !ret && i < nr; i++) {
		ret = hw->write_msr(IPT_MSR_RTIT_ADDR_A(i), s->hwcfg.addr_a[i]);
		if (!ret)
			ret = hw->write_msr(IPT_MSR_RTIT_ADDR_B(i),
					    s->hwcfg.addr_b[i]);
	}
	if (!ret && s->stream)
		ipt_stream_started_here(t);
	if (!ret)
		ret = hw->write_msr(MSR_IA32_RTIT_CTL,
				    s->hwcfg.ctl | RTIT_CTL_TRACEEN);
	t->err = ret;
	if (!ret) {
		t->running = true;
		ipt_life_mark_on();
	}
}

/*
 * Stop: CTL without TraceEn, then read OUTPUT_BASE, MASK_PTRS, STATUS.  A
 * TraceEn found clear was cleared by someone else: VMXON on a part without
 * PT in VMX operation (where a write of CTL would then #GP), or a power
 * loss.  Nothing is left to stop; the trace is marked cut (a gap, not a
 * failure) and its position read as for any stop.  A stop that faulted
 * (the CTL read or write) changed nothing: the unit still traces, @running
 * stays set, and @err says why.
 */
static void ipt_trace_stop_on_cpu(void *arg)
{
	struct ipt_trace *t = arg;
	const struct ipt_hw_ops *hw = t->s->hw;
	u64 ctl;
	int ret;

	ret = hw->read_msr(MSR_IA32_RTIT_CTL, &ctl);
	if (!ret && !(ctl & RTIT_CTL_TRACEEN))
		t->cut = true;
	else if (!ret)
		ret = hw->write_msr(MSR_IA32_RTIT_CTL, t->s->hwcfg.ctl);
	/* A faulted stop leaves the unit ipt's: panic would still clear it. */
	t->err = ret;
	if (ret)
		return;
	ipt_life_mark_off();
	t->running = false;
	ret = hw->read_msr(MSR_IA32_RTIT_OUTPUT_BASE, &t->base);
	if (!ret)
		ret = hw->read_msr(MSR_IA32_RTIT_OUTPUT_MASK, &t->mask);
	if (!ret)
		ret = hw->read_msr(MSR_IA32_RTIT_STATUS, &t->status);
	if (!ret && t->s->stream)
		ipt_stream_stopped_here(t);
	else if (t->s->stream)
		ipt_stream_stopped_lost(t);
	t->err = ret;
}

/* The argument of ipt_stream_move_on_cpu(). */
struct ipt_stream_move {
	struct ipt_trace *t;
	u64 released;
};

/*
 * Stream: move STOP with the unit off, as the SDM wants the ToPA of an
 * enabled unit left alone (it may cache entries, 33.2.7.2) and Linux 6.1's
 * perf does (markers reset in the PMI after pt_config_stop(),
 * arch/x86/events/intel/pt.c:1514-1530): stop, settle the head (and the
 * gap of a pause), move STOP, restart one region on if it was Stopped.
 * A unit that stopped where its position could not be read is off all
 * the same: its head was kept and the trace cut (ipt_stream_stopped_lost()),
 * and it goes on from there, as a thread's does.
 */
static void ipt_stream_move_on_cpu(void *arg)
{
	struct ipt_stream_move *m = arg;
	struct ipt_trace *t = m->t;

	ipt_trace_stop_on_cpu(t);
	/* The stop faulted: the unit traces on, nothing changed. */
	if (t->running)
		return;
	/* The head was placed against the old release position. */
	t->stream.released = m->released;
	ipt_stream_rearm(t);
	ipt_trace_start_on_cpu(t);
}

/* ---- per-trace operations (process context, device lock held) ------- */

/*
 * Start tracing on the trace's CPU, which is online.  Context: process
 * context; device lock held; CPU hotplug excluded (cpus read lock or a
 * hotplug callback).  Return: 0, -EBUSY when the unit already traces,
 * -EIO when an MSR write faulted.
 */
static int ipt_trace_start(struct ipt_trace *t)
{
	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&t->s->idev->lock);
	smp_call_function_single(t->cpu, ipt_trace_start_on_cpu, t, 1);
	if (t->err && t->running)
		t->running = false;
	return t->err;
}

/*
 * The final stop of a trace (its session stops, its CPU goes offline), on
 * its CPU, interrupts off: ipt_trace_stop_on_cpu(), and a stop that
 * faulted is taken as done: the trace is off (no PMI of its own is
 * handled after this: ipt_stream_pmi() wants it running) and cut, and a
 * stream trace is settled as one whose position cannot be read
 * (ipt_stream_stopped_lost()): the head stays at what was known and a
 * pause still open is a closed gap, which IPT_IOC_GET_GAPS keeps counting
 * once the trace no longer runs.  @t->err stays the stop's.
 */
static void ipt_trace_stop_final_on_cpu(void *arg)
{
	struct ipt_trace *t = arg;

	lockdep_assert_irqs_disabled();
	ipt_trace_stop_on_cpu(t);
	if (!t->err || !t->running)
		return;
	pr_warn_ratelimited("CPU %u: the unit did not stop (%d); the trace is cut\n",
			    t->cpu, t->err);
	t->running = false;
	t->cut = true;
	if (t->s->stream)
		ipt_stream_stopped_lost(t);
}

/*
 * Stop tracing on the trace's CPU and settle its state: stops the unit,
 * reads its position, then drains the PMI (ipt_pmi_drain()) so that the
 * wrap count matches the position.  A stop that faults cannot be retried
 * here (the session stops, the CPU goes offline): the trace is taken as
 * stopped and cut, where its unit was known to be, a stream's open pause
 * closed as a gap (a CTL write faults on silicon only where TraceEn is
 * already clear, VMXON; a panic clears it otherwise).
 * The session's pollers are woken: what the trace holds is final.
 *
 * Context: process context, may sleep; device lock held; CPU hotplug
 * excluded.
 */
static void ipt_trace_stop(struct ipt_trace *t)
{
	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&t->s->idev->lock);
	if (!t->running)
		return;
	smp_call_function_single(t->cpu, ipt_trace_stop_final_on_cpu, t, 1);
	ipt_pmi_drain(t);
	if (t->s->stream)
		wake_up_all(&t->s->wq);
}

/**
 * ipt_cpu_stream_move() - the consumer released up to @released
 * @t: a per-CPU stream trace; @released is past a region boundary its
 *     current release position is not
 * @released: the new release position, checked by the caller
 *
 * A trace that runs is stopped, rearmed and restarted on its CPU in one
 * cross-CPU call; one that does not (the session stopped, the CPU
 * offline) is rearmed in place and starts from there.
 *
 * A stop that faults changes nothing: its error is returned, the unit
 * traces on.  Once the unit is off the release holds and STOP moves: a
 * position that cannot be read cuts the trace (IPT_TS_CUT) and the unit
 * restarts at the head kept; a restart that fails leaves the trace
 * stopped and cut.  Either way a pause that was open is a closed gap, and
 * neither is an error of the release.
 *
 * Context: process context; device lock held; CPU hotplug excluded.
 * Return: 0, or the error of the stop (-EIO) or of the cross-CPU call,
 * with nothing changed.
 */
static int ipt_cpu_stream_move(struct ipt_trace *t, u64 released)
{
	struct ipt_stream_move m = { .t = t, .released = released };
	int ret;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&t->s->idev->lock);
	/* The per-CPU mode's op: a thread's trace has its own. */
	if (WARN_ON_ONCE(t->s->mode != IPT_MODE_CPU))
		return -EOPNOTSUPP;
	if (!t->running) {
		t->stream.released = released;
		ipt_stream_rearm(t);
		return 0;
	}
	ret = smp_call_function_single(t->cpu, ipt_stream_move_on_cpu, &m, 1);
	if (ret)
		return ret;	/* not run: nothing changed */
	if (t->err && t->running)
		return t->err;	/* the stop faulted: nothing changed */
	if (t->err) {
		t->stream.released = released;
		t->cut = true;
		pr_warn_ratelimited("CPU %u: the stream could not be restarted (%d)\n",
				    t->cpu, t->err);
		t->err = 0;
	}
	return 0;
}

/* ---- the mode operations ---------------------------------------------- */

/*
 * Point the PMI handler's per-CPU counters at the traces, one per CPU.
 * Context: as ipt_mode_ops.install.
 */
static void ipt_cpu_install(struct ipt_session *s)
{
	unsigned int i;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	for (i = 0; i < s->nr_traces; i++)
		ipt_pmi_arm(&s->traces[i], s->traces[i].cpu);
}

/* Start every online CPU's trace, or none.  Context: as ipt_mode_ops. */
static int ipt_cpu_start(struct ipt_session *s)
{
	unsigned int i;
	int ret = 0;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);

	/*
	 * Refuse before touching anything if any unit is someone else's:
	 * perf's, when perf took a CPU while it was offline and still has
	 * it (ipt_own_claim()), or enabled by another tracer.
	 */
	for (i = 0; i < s->nr_traces; i++) {
		struct ipt_trace *t = &s->traces[i];

		if (!cpu_online(t->cpu))
			continue;
		ret = ipt_own_claim(s, t->cpu);
		if (ret)
			return ret;
		smp_call_function_single(t->cpu, ipt_trace_check_free_on_cpu,
					 t, 1);
		if (t->err)
			return t->err;
	}
	for (i = 0; i < s->nr_traces; i++) {
		if (!cpu_online(s->traces[i].cpu))
			continue;	/* starts when it comes online */
		ret = ipt_trace_start(&s->traces[i]);
		if (ret)
			break;
	}
	if (ret) {
		while (i--)
			ipt_trace_stop(&s->traces[i]);
		return ret;
	}
	return 0;
}

static void ipt_cpu_stop(struct ipt_session *s)
{
	unsigned int i;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	for (i = 0; i < s->nr_traces; i++)
		ipt_trace_stop(&s->traces[i]);
}

/* The trace of @cpu, or NULL.  Context: device lock held. */
static struct ipt_trace *ipt_cpu_trace(struct ipt_session *s, u32 cpu)
{
	unsigned int i;

	lockdep_assert_held(&s->idev->lock);
	for (i = 0; i < s->nr_traces; i++)
		if (s->traces[i].cpu == cpu)
			return &s->traces[i];
	return NULL;
}

/*
 * A CPU comes online: its trace starts if the session traces, unless a
 * system sleep stopped it (the sleep's end starts it, ipt_life.c).  A unit
 * that cannot be started (in VMX operation where PT does not run there:
 * KVM enables VMX on a CPU that comes online while VMs exist, before this
 * callback; or a hybrid part's core that lacks a capability the
 * configuration uses) is not programmed and leaves a gap in the trace:
 * marked cut.
 */
static void ipt_cpu_online(struct ipt_session *s, unsigned int cpu)
{
	struct ipt_trace *t;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (s->state != IPT_STATE_TRACING || ipt_life_paused())
		return;
	t = ipt_cpu_trace(s, cpu);
	/* A unit someone else took meanwhile stays theirs. */
	if (t && !t->running && ipt_own_cpu(cpu) && ipt_trace_start(t))
		t->cut = true;
}

/* A CPU goes offline: its trace stops, its position settled. */
static void ipt_cpu_offline(struct ipt_session *s, unsigned int cpu)
{
	struct ipt_trace *t;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	t = ipt_cpu_trace(s, cpu);
	if (t)
		ipt_trace_stop(t);
}

/* A per-CPU trace's state as of its last stop.  Device lock held. */
static void ipt_cpu_fill(const struct ipt_trace *t, struct ipt_trace_state *ts)
{
	struct ipt_trace_pos pos = {
		.base = t->base,
		.mask = t->mask,
		.status = t->status,
		.wraps = t->pmis_at_stop,
		.running = t->running,
		.pmi_late = t->pmi_late,
		.sample = t->sample_at_stop,
	};

	lockdep_assert_held(&t->s->idev->lock);
	ipt_pos_fill(t->buf, t->s->single, &pos, ts);
	if (t->s->stream)
		ipt_stream_fill(t, ts);
	if (t->cut)
		ts->status |= IPT_TS_CUT;
}

const struct ipt_mode_ops ipt_cpu_mode_ops = {
	.install = ipt_cpu_install,
	.start = ipt_cpu_start,
	.stop = ipt_cpu_stop,
	.cpu_online = ipt_cpu_online,
	.cpu_offline = ipt_cpu_offline,
	.trace = ipt_cpu_trace,
	.fill = ipt_cpu_fill,
	.stream_move = ipt_cpu_stream_move,
};
EXPORT_SYMBOL_IF_KUNIT(ipt_cpu_mode_ops);

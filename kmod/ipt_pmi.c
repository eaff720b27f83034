// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: the ToPA PMI protocol - how the wrap count of a trace follows the
 * PMIs its output raises.
 *
 * A ring or stop-on-full ToPA buffer has INT on its last region only, so
 * each PMI is one wrap of a ring or a full stop-on-full buffer.  A stream
 * buffer has INT at the end of every region; its PMIs are not counted
 * (one PMI may stand for several regions): the handler reads where the
 * unit is (ipt_stream_pmi()).  The protocol, in one place:
 *
 *  - the handler (ipt_pmi_handler()): installed first in the NMI chain,
 *    ahead of perf's, which acknowledges every GLOBAL_STATUS bit it reads;
 *    it claims an NMI only when this CPU counts PMIs for a trace and
 *    IA32_PERF_GLOBAL_STATUS bit 55 is set, acknowledges bit 55 alone and
 *    re-arms the LVT (which the APIC masked on delivery) unless bits of
 *    perf's are pending, in which case perf, next in the chain, does it.
 *  - request / release: the handler is installed for a configured session
 *    and removed at teardown; removal waits for running calls, after which
 *    the per-CPU pointers are cleared and the traces may be freed.
 *  - arm: a per-CPU pointer says which trace's counter the handler of that
 *    CPU increments: set at configure time for per-CPU mode, at each load
 *    (switch-in) for per-thread mode.  Single-entry ToPA rings also get a
 *    pointer to where the handler stores the output offset (the sample).
 *  - drain at stop (per-CPU mode): after the unit stops, wait until a PMI
 *    raised by output up to the stop has been handled, so that the wrap
 *    count matches the position.  One never delivered (a masked LVT) is
 *    taken there, counted, and reported (IPT_TS_PMI_LATE): wraps while it
 *    was pending may be missing from the count.
 *  - settle at unload (per-thread mode, interrupts off): a PMI raised by
 *    the outgoing thread but not yet handled is counted for it and
 *    acknowledged there.
 *
 * Every register access goes through the backend (struct ipt_hw_ops), so
 * the simulator, which models the NMI chain and the LVT mask, runs this
 * very code.
 *
 * See Documentation/design.rst ("The ToPA PMI").
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/lockdep.h>
#include <linux/percpu.h>
#include <linux/smp.h>
#include <kunit/visibility.h>

#include "ipt_session.h"

/* How long stop waits for a pending ToPA PMI to be handled: 100 ms. */
#define IPT_PMI_DRAIN_TRIES	1000
#define IPT_PMI_DRAIN_US	100
/* ToPA PMIs one NMI takes at most (perf's loop bound is 100). */
#define IPT_PMI_LOOPS		8

/* The counter the handler increments on this CPU: a trace's @pmis, or NULL. */
static DEFINE_PER_CPU(atomic64_t *, ipt_pmi_count);
/* Single-entry rings: where the handler stores the offset (or NULL). */
static DEFINE_PER_CPU(u64 *, ipt_pmi_sample);
/* Stream traces: the trace whose pauses the handler watches (or NULL). */
static DEFINE_PER_CPU(struct ipt_trace *, ipt_pmi_stream);
/* The backend the handler reads the position with, for ipt_pmi_sample. */
static const struct ipt_hw_ops *ipt_pmi_hw;
/* Sessions the installed handler serves (device lock held). */
static unsigned int ipt_pmi_users;
/* Takes the count of a PMI that arrives while a thread is being unloaded. */
static DEFINE_PER_CPU(atomic64_t, ipt_pmi_orphans);

/*
 * Re-arm the LVT after ipt acknowledged bit 55, unless @gs, the
 * IA32_PERF_GLOBAL_STATUS value last read, has another bit: that belongs
 * to perf, whose handler runs after ipt's in the same NMI, acknowledges
 * it and then unmasks the LVT itself, last ("only unmask the NMI after
 * the overflow counters have been reset", intel/core.c:3117-3124 of
 * arch/x86/events): unmasking before that could raise a spurious NMI.
 * Context: the PMI handler, or interrupts off.
 */
static void ipt_pmi_rearm(const struct ipt_hw_ops *hw, u64 gs)
{
	if (!(gs & ~GLOBAL_STATUS_TRACE_TOPAPMI))
		hw->pmi_unmask();
}

/*
 * The PMI handler: every NMI of this CPU comes here first (IPT_PMI_FIRST).
 * Context: NMI (native) or hard interrupt (sim), on the CPU that took it.
 * Only NMI-safe work: per-CPU reads, MSR accesses, an atomic increment.
 * The counter stays valid while the handler is installed: its trace is
 * freed only after hw->pmi_release(), which waits for running handlers.
 * Return: true when it took a ToPA PMI.
 */
static bool ipt_pmi_handler(void)
{
	const struct ipt_hw_ops *hw = READ_ONCE(ipt_pmi_hw);
	atomic64_t *count = this_cpu_read(ipt_pmi_count);
	u64 *sample = this_cpu_read(ipt_pmi_sample);
	struct ipt_trace *stream = this_cpu_read(ipt_pmi_stream);
	unsigned int loops = 0;
	u64 gs, mask;

	/*
	 * Not counting for a trace here, or the unit is not ipt's now (perf
	 * holds this CPU): not ipt's PMI, leave every MSR alone, as Linux's
	 * handler acts only for the event it has (pt.c:1485-1493).
	 */
	if (!count || !hw || !ipt_own_here())
		return false;
	if (hw->read_msr(MSR_CORE_PERF_GLOBAL_STATUS, &gs) ||
	    !(gs & GLOBAL_STATUS_TRACE_TOPAPMI))
		return false;
	do {
		/*
		 * Single-entry ToPA: the PMI comes shortly before the one
		 * region is full, so whether the wrap it announces has
		 * happened depends on where the unit is now.  OutputOffset
		 * read while tracing may lag a little; it only has to tell
		 * the two sides of the wrap apart.
		 */
		if (sample && !hw->read_msr(MSR_IA32_RTIT_OUTPUT_MASK, &mask))
			WRITE_ONCE(*sample, mask >> 32);
		atomic64_inc(count);
		/* Write-1-to-clear: bit 55 alone, perf's bits stay. */
		if (hw->write_msr(MSR_CORE_PERF_GLOBAL_OVF_CTRL,
				  GLOBAL_STATUS_TRACE_TOPAPMI))
			return true;	/* cannot happen where probed */
		/*
		 * A stream's region ended: note where, and a pause.  Its
		 * stop and restart write packets, which may end the next
		 * region while the LVT is masked: the status is read after
		 * it, so that such a PMI is taken here, as Linux reads the
		 * status again after intel_pt_interrupt()
		 * (arch/x86/events/intel/core.c:3100-3107).
		 */
		if (stream)
			ipt_stream_pmi(stream, hw);
		if (hw->read_msr(MSR_CORE_PERF_GLOBAL_STATUS, &gs))
			return true;	/* cannot happen where probed */
		/* Raised again since (SDM: "before or just after"): another. */
	} while ((gs & GLOBAL_STATUS_TRACE_TOPAPMI) && ++loops < IPT_PMI_LOOPS);
	ipt_pmi_rearm(hw, gs);
	return true;
}

/* The trace's ring needs the handler's sample: single-entry ToPA. */
static bool ipt_pmi_wants_sample(const struct ipt_trace *t)
{
	return t->s->single && !t->buf->stop_on_full;
}

/**
 * ipt_pmi_request() - install the handler for a session being configured
 * @s: the session; its backend chosen, its per-CPU traces armed
 *
 * First in the NMI chain (IPT_PMI_FIRST), so that ipt sees bit 55 before
 * perf's handler acknowledges it.  One handler serves every session (the
 * per-CPU pointers say for which trace it counts): a session configured
 * while others are only counts itself in.
 *
 * Context: process context; device lock held.
 * Return: 0 or the backend's error (nothing installed then).
 */
int ipt_pmi_request(struct ipt_session *s)
{
	int ret;

	lockdep_assert_held(&s->idev->lock);
	if (ipt_pmi_users) {
		ipt_pmi_users++;
		return 0;
	}
	WRITE_ONCE(ipt_pmi_hw, s->hw);
	ret = s->hw->pmi_request(ipt_pmi_handler, IPT_PMI_FIRST);
	if (ret)
		WRITE_ONCE(ipt_pmi_hw, NULL);
	else
		ipt_pmi_users = 1;
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_pmi_request);

/**
 * ipt_pmi_disarm() - clear the per-CPU pointers at @s's traces
 * @s: the session; the handler is not installed (any more), or serves
 *     other sessions only
 *
 * Per-CPU traces were armed at configure time; a per-thread session's
 * pointers are NULL already once its threads are unloaded, and a CPU a
 * thread of it ran on last may count for another session's thread now:
 * left alone.
 *
 * Context: process context; device lock held.
 */
void ipt_pmi_disarm(struct ipt_session *s)
{
	unsigned int i;

	lockdep_assert_held(&s->idev->lock);
	for (i = 0; s->mode != IPT_MODE_THREAD && i < s->nr_traces; i++) {
		WRITE_ONCE(per_cpu(ipt_pmi_count, s->traces[i].cpu), NULL);
		WRITE_ONCE(per_cpu(ipt_pmi_sample, s->traces[i].cpu), NULL);
		WRITE_ONCE(per_cpu(ipt_pmi_stream, s->traces[i].cpu), NULL);
	}
	if (!ipt_pmi_users)
		WRITE_ONCE(ipt_pmi_hw, NULL);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_pmi_disarm);

/**
 * ipt_pmi_release() - remove the handler, then forget @s's traces
 * @s: the session, tearing down: nothing traces into it any more
 *
 * On return no handler call counts for @s's traces and none will: the
 * traces may be freed.  The last session removes the handler, which
 * waits for running calls.  Before that the handler counts only for the
 * trace of its own CPU's pointer, and a per-thread session's threads
 * were unloaded, each on its CPU with interrupts off (an NMI that had
 * read the pointer there finished before the unload went on), so no
 * pointer leads to @s's traces any more.
 *
 * Context: process context, may sleep; device lock held.
 */
void ipt_pmi_release(struct ipt_session *s)
{
	lockdep_assert_held(&s->idev->lock);
	if (!WARN_ON_ONCE(!ipt_pmi_users) && !--ipt_pmi_users)
		s->hw->pmi_release();
	ipt_pmi_disarm(s);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_pmi_release);

/**
 * ipt_pmi_arm() - count the PMIs of @cpu for the per-CPU trace @t
 * @t: the trace
 * @cpu: its CPU
 *
 * Context: process context; device lock held; the handler not installed
 * yet (configure time).
 */
void ipt_pmi_arm(struct ipt_trace *t, unsigned int cpu)
{
	lockdep_assert_held(&t->s->idev->lock);
	WRITE_ONCE(per_cpu(ipt_pmi_count, cpu), &t->pmis);
	if (ipt_pmi_wants_sample(t))
		WRITE_ONCE(per_cpu(ipt_pmi_sample, cpu), &t->sample);
	if (t->s->stream)
		WRITE_ONCE(per_cpu(ipt_pmi_stream, cpu), t);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_pmi_arm);

/**
 * ipt_pmi_arm_here() - count this CPU's PMIs for @t, about to be loaded
 * @t: a thread's trace
 *
 * Set before TraceEn, so that the count holds from the first byte on; a
 * stream trace's PMIs are announced for it on whichever CPU its thread
 * runs (ipt_stream_pmi()).
 *
 * Context: interrupts off, on the CPU @t is being loaded on.
 */
void ipt_pmi_arm_here(struct ipt_trace *t)
{
	lockdep_assert_irqs_disabled();
	this_cpu_write(ipt_pmi_count, &t->pmis);
	if (ipt_pmi_wants_sample(t))
		this_cpu_write(ipt_pmi_sample, &t->sample);
	if (t->s->stream)
		this_cpu_write(ipt_pmi_stream, t);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_pmi_arm_here);

/**
 * ipt_pmi_disarm_here() - count no PMI on this CPU (a load that failed)
 *
 * Context: interrupts off.
 */
void ipt_pmi_disarm_here(void)
{
	lockdep_assert_irqs_disabled();
	this_cpu_write(ipt_pmi_count, NULL);
	this_cpu_write(ipt_pmi_sample, NULL);
	this_cpu_write(ipt_pmi_stream, NULL);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_pmi_disarm_here);

/*
 * Take a ToPA PMI in the handler's place, on this CPU with interrupts off:
 * one pending in IA32_PERF_GLOBAL_STATUS is acknowledged (and the LVT
 * re-armed, in case it was masked), and counted once for @count.  An NMI
 * may still arrive meanwhile (natively NMIs ignore the interrupt flag):
 * while this runs, the handler counts into a per-CPU orphan counter, and
 * one PMI is counted for @count if either saw it.  On return this CPU's
 * counter pointer points at the orphans: the caller sets it.
 * Return: true when a PMI was counted for @count.
 */
static bool ipt_pmi_take_here(const struct ipt_hw_ops *hw, atomic64_t *count,
			      unsigned int *rdmsr, unsigned int *wrmsr)
{
	atomic64_t *orphans = this_cpu_ptr(&ipt_pmi_orphans);
	s64 orphaned;
	bool pending;
	u64 gs = 0;

	lockdep_assert_irqs_disabled();
	orphaned = atomic64_read(orphans);
	this_cpu_write(ipt_pmi_count, orphans);
	(*rdmsr)++;
	pending = !hw->read_msr(MSR_CORE_PERF_GLOBAL_STATUS, &gs) &&
		  (gs & GLOBAL_STATUS_TRACE_TOPAPMI);
	if (pending) {
		(*wrmsr)++;
		hw->write_msr(MSR_CORE_PERF_GLOBAL_OVF_CTRL,
			      GLOBAL_STATUS_TRACE_TOPAPMI);
		ipt_pmi_rearm(hw, gs);
	}
	if (!pending && atomic64_read(orphans) == orphaned)
		return false;
	atomic64_inc(count);
	return true;
}

/**
 * ipt_pmi_settle_here() - settle the PMI of a thread's trace leaving this CPU
 * @t: the trace; the unit has just stopped tracing into it
 * @mask: OUTPUT_MASK_PTRS as saved at the stop
 * @rdmsr: incremented for each MSR read done here
 * @wrmsr: incremented for each MSR write done here
 *
 * A PMI raised by @t's output but not yet handled (PMIs are NMIs on
 * hardware and hard interrupts in the simulator, which cannot run here)
 * is counted for @t and acknowledged (the LVT re-armed), so that it is
 * neither lost nor counted for the next thread.  While that is settled, a
 * PMI that does arrive is counted into a per-CPU orphan counter instead,
 * and one PMI is counted for @t if either saw it; where the unit stopped
 * is then its sample.  On return this CPU counts no PMI.
 *
 * Context: interrupts off, on the CPU @t was loaded on.
 * Return: true when a PMI was counted for @t here.
 */
bool ipt_pmi_settle_here(struct ipt_trace *t, u64 mask, unsigned int *rdmsr,
			 unsigned int *wrmsr)
{
	lockdep_assert_irqs_disabled();
	this_cpu_write(ipt_pmi_sample, NULL);
	/* A stream's position is read from the unit at the unload. */
	this_cpu_write(ipt_pmi_stream, NULL);
	if (!ipt_pmi_take_here(t->s->hw, &t->pmis, rdmsr, wrmsr)) {
		this_cpu_write(ipt_pmi_count, NULL);
		return false;
	}
	this_cpu_write(ipt_pmi_count, NULL);
	/* Settled here: where the unit stopped is the PMI's sample. */
	WRITE_ONCE(t->sample, mask >> 32);
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_pmi_settle_here);

static void ipt_pmi_pending_on_cpu(void *arg)
{
	struct ipt_trace *t = arg;
	u64 v;

	t->err = 0;
	if (!t->s->hw->read_msr(MSR_CORE_PERF_GLOBAL_STATUS, &v) &&
	    (v & GLOBAL_STATUS_TRACE_TOPAPMI))
		t->err = -EAGAIN;
}

/*
 * The drain ran out: the PMI was never delivered (the LVT was masked when
 * it was raised; the APIC does not hold it).  Take it here, so that the
 * LVT is re-armed and the PMI counted; wraps while it was pending raised
 * no PMI of their own (bit 55 was set already) and are not counted.
 * Context: IPI on @t's CPU, interrupts off.
 */
static void ipt_pmi_take_on_cpu(void *arg)
{
	struct ipt_trace *t = arg;
	unsigned int rd = 0, wr = 0;

	if (ipt_pmi_take_here(t->s->hw, &t->pmis, &rd, &wr) &&
	    ipt_pmi_wants_sample(t))
		WRITE_ONCE(t->sample, t->mask >> 32);
	this_cpu_write(ipt_pmi_count, &t->pmis);
}

/**
 * ipt_pmi_drain() - wait for the PMI of a per-CPU trace that just stopped
 * @t: the trace; its unit stopped and its position read
 *
 * Waits (up to 100 ms) until IA32_PERF_GLOBAL_STATUS bit 55 is clear on
 * @t's CPU, so that a PMI raised by output up to the stop has been
 * handled; then takes the wrap count and sample that go with the
 * position.  A PMI still pending then was lost on its way (a masked LVT):
 * it is taken on @t's CPU, counted, and @t->pmi_late set, because the
 * count may miss wraps that happened while it was pending.
 *
 * Context: process context, may sleep; device lock held; CPU hotplug
 * excluded.
 */
void ipt_pmi_drain(struct ipt_trace *t)
{
	unsigned int i;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&t->s->idev->lock);
	for (i = 0; i < IPT_PMI_DRAIN_TRIES; i++) {
		smp_call_function_single(t->cpu, ipt_pmi_pending_on_cpu, t, 1);
		if (!t->err)
			break;
		usleep_range(IPT_PMI_DRAIN_US, 2 * IPT_PMI_DRAIN_US);
	}
	if (i == IPT_PMI_DRAIN_TRIES) {
		smp_call_function_single(t->cpu, ipt_pmi_take_on_cpu, t, 1);
		t->pmi_late = true;
		pr_warn_ratelimited("CPU %u: a ToPA PMI was not delivered (LVT masked?); taken at stop, the wrap count may be low\n",
				    t->cpu);
	}
	t->err = 0;
	t->pmis_at_stop = atomic64_read(&t->pmis);
	t->sample_at_stop = READ_ONCE(t->sample);
}

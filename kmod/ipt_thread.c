// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: per-thread mode - PT state that follows threads across context
 * switches.
 *
 * A per-thread session owns max_threads traces, allocated at configure
 * time; several per-thread sessions may be configured at once, a thread
 * being in one of them at most.  Traced threads are found from their
 * task_struct in a hash table shared by the sessions, and each trace
 * leads to its session;
 * three scheduler tracepoints, hooked for the module's life, do the work:
 *
 *  - sched_switch (runs in __schedule() with the runqueue lock held and
 *    interrupts off): the outgoing thread's PT state is saved and the unit
 *    stopped; the incoming thread's state is restored and the unit enabled.
 *    With XSAVES support for the PT component that is one XSAVES and one
 *    XRSTORS (RFBM = bit 8, IA32_XSS bit 8 set for the session); otherwise
 *    it is the SDM sequence of MSR accesses.  The hooks never sleep, never
 *    allocate and take only raw spinlocks: a stream trace's th.lock at
 *    every load and unload, ipt_thread_lock when a traced thread dies.
 *  - sched_process_fork (runs in the parent before the child first runs):
 *    a thread traced with IPT_ATTACH_INHERIT hands one of the session's
 *    free traces to the new thread, so it is traced from its first
 *    instruction.
 *  - sched_process_exec: a thread that execs an image its owner may not
 *    inspect (not user-dumpable: setuid, setgid, not readable; or
 *    AT_SECURE) is detached, unless both the session and the thread's
 *    attach were privileged (ipt_thread_may_follow()).
 *
 * Documentation/design.rst ("Per-thread mode") describes what runs where
 * and under which lock; the per-switch cost is measured there.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/binfmts.h>
#include <linux/capability.h>
#include <linux/cpu.h>
#include <linux/debugfs.h>
#include <linux/hashtable.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/coredump.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "ipt_session.h"

static bool force_msr;
module_param(force_msr, bool, 0644);
MODULE_PARM_DESC(force_msr,
		 "per-thread mode: switch PT state with MSR accesses even where XSAVES could (read when a session is configured)");

/* The traced threads, by task_struct; writers hold ipt_thread_lock. */
static DEFINE_HASHTABLE(ipt_thread_hash, 8);
static DEFINE_RAW_SPINLOCK(ipt_thread_lock);

/*
 * Per-thread sessions published to the hooks, and how many of them switch
 * with XSAVES (debugfs).  Written under the device lock; READ_ONCE() in
 * the hooks, which do nothing while there is none.  A thread is in at
 * most one session (the hash is keyed by task), and its trace leads to
 * its session (struct ipt_trace.s).
 */
static unsigned int ipt_thread_sessions;
static unsigned int ipt_thread_xsaves_sessions;
/* XSAVES areas allocated and not yet freed (debugfs switch_stats). */
static atomic_long_t ipt_thread_xsave_areas = ATOMIC_LONG_INIT(0);
/* A session set IA32_XSS bit 8 since the last had none (device lock). */
static bool ipt_thread_xss_set;

/* The trace whose state is on this CPU's unit. */
static DEFINE_PER_CPU(struct ipt_trace *, ipt_thread_loaded);

/* IA32_XSS as found, on CPUs where a session set bit 8. */
static DEFINE_PER_CPU(u64, ipt_xss_orig);
static DEFINE_PER_CPU(bool, ipt_xss_changed);
/*
 * Threads are switched on this CPU with XSAVES / XRSTORS: decided when a
 * session on the XSAVES path set IA32_XSS bit 8 here and read it back
 * (configure, CPU online); cleared when an XSAVES did not save PT or an
 * XRSTORS faulted with bit 8 gone (IA32_XSS rewritten underneath), and
 * when the bit is put back.  Only this CPU writes it, interrupts off.
 */
static DEFINE_PER_CPU(bool, ipt_xsaves_here);

/**
 * struct ipt_switch_stats - what the switching path did on one CPU
 * @loads: thread states loaded (switch-in, start, attach)
 * @unloads: thread states saved (switch-out, stop, detach, exit)
 * @busy: loads refused because the unit was enabled by someone else
 * @rdmsr: RDMSRs executed by loads and unloads
 * @wrmsr: WRMSRs executed by loads and unloads
 * @xsaves: XSAVES executed
 * @xrstors: XRSTORS executed
 * @pmis: ToPA PMIs found pending at unload and counted there
 * @fallbacks: switches on the XSAVES path that found PT not saved or not
 *             restorable (IA32_XSS bit 8 gone) and used the MSR sequence
 */
struct ipt_switch_stats {
	u64 loads;
	u64 unloads;
	u64 busy;
	u64 rdmsr;
	u64 wrmsr;
	u64 xsaves;
	u64 xrstors;
	u64 pmis;
	u64 fallbacks;
};

static DEFINE_PER_CPU(struct ipt_switch_stats, ipt_switch_stats);

/* ---- the save / restore sequences (interrupts off) ------------------- */

static int ipt_th_rd(const struct ipt_hw_ops *hw, u32 msr, u64 *val)
{
	this_cpu_inc(ipt_switch_stats.rdmsr);
	return hw->read_msr(msr, val);
}

static int ipt_th_wr(const struct ipt_hw_ops *hw, u32 msr, u64 val)
{
	this_cpu_inc(ipt_switch_stats.wrmsr);
	return hw->write_msr(msr, val);
}

static u64 *ipt_xsave_fields(void *area)
{
	return area + IPT_XSAVE_PT_OFFSET;
}

/*
 * IA32_XSS no longer has bit 8 on this CPU (KVM's VM exit or a resume
 * rewrote it).  Context: interrupts off.
 */
static bool ipt_xss_lost_here(const struct ipt_hw_ops *hw)
{
	u64 xss;

	return ipt_th_rd(hw, MSR_IA32_XSS, &xss) || !(xss & XFEATURE_MASK_PT);
}

/**
 * ipt_thread_area_init() - the XSAVES area of a thread that never ran
 * @s: the session (its configuration)
 * @t: the trace; @t->th.xsave is @s->xsave_size bytes
 *
 * Builds what XSAVES would have stored for the trace at its position
 * (@t->base, @t->mask, @t->status: at its start, the first ToPA table and
 * entry): the compacted-format header with XSTATE_BV = XCOMP_BV = bit 8
 * (XCOMP_BV also bit 63), and the component: CTL with TraceEn,
 * OUTPUT_BASE, OUTPUT_MASK_PTRS, the STATUS bits a restore keeps, the CR3
 * and ADDR0/1 filter values.  Also used after a switch-out that saved the
 * state with MSR accesses, so that an XRSTORS on another CPU resumes it.
 *
 * Context: any; @t is not loaded anywhere, or is being unloaded by the
 * caller (interrupts off).
 */
VISIBLE_IF_KUNIT void ipt_thread_area_init(const struct ipt_session *s,
					   struct ipt_trace *t)
{
	u64 *hdr = t->th.xsave + IPT_XSAVE_HDR_OFFSET;
	u64 *v = ipt_xsave_fields(t->th.xsave);

	hdr[0] = XFEATURE_MASK_PT;
	hdr[1] = XCOMP_BV_COMPACTED_FORMAT | XFEATURE_MASK_PT;
	v[IPT_XSAVE_CTL] = s->hwcfg.ctl | RTIT_CTL_TRACEEN;
	v[IPT_XSAVE_OUTPUT_BASE] = t->base;
	v[IPT_XSAVE_OUTPUT_MASK] = t->mask;
	v[IPT_XSAVE_STATUS] = t->status & s->hwcfg.status_keep;
	v[IPT_XSAVE_CR3_MATCH] = s->has_cr3 ? s->hwcfg.cr3_match : 0;
	if (s->nr_ranges > 0) {
		v[IPT_XSAVE_ADDR0_A] = s->hwcfg.addr_a[0];
		v[IPT_XSAVE_ADDR0_B] = s->hwcfg.addr_b[0];
	}
	if (s->nr_ranges > 1) {
		v[IPT_XSAVE_ADDR1_A] = s->hwcfg.addr_a[1];
		v[IPT_XSAVE_ADDR1_B] = s->hwcfg.addr_b[1];
	}
}
EXPORT_SYMBOL_IF_KUNIT(ipt_thread_area_init);

/* ipt_thread_load() with @t->th.lock held. */
static bool ipt_thread_load_locked(struct ipt_trace *t)
{
	const struct ipt_session *s = t->s;
	const struct ipt_hw_ops *hw = s->hw;
	bool xsaves = s->xsaves && this_cpu_read(ipt_xsaves_here);
	unsigned int i;
	/* perf took this CPU back (ipt_own_cpu_online()): not ours. */
	int ret = ipt_own_here() ? 0 : -EBUSY;
	bool gap = false;

	lockdep_assert_irqs_disabled();
	lockdep_assert_held(&t->th.lock);
	if (!ret && s->hwcfg.vmx_check && hw->vmx_active && hw->vmx_active()) {
		gap = true;
		ret = -EBUSY;
	}
	/* A hybrid part's core without what the configuration uses. */
	if (!ret && !cpumask_test_cpu(smp_processor_id(), &s->fits)) {
		gap = true;
		ret = -EOPNOTSUPP;
	}
	if (!ret && s->stream)
		ipt_stream_thread_in(t);
	/* Counted from the first byte on: set before TraceEn. */
	ipt_pmi_arm_here(t);
	if (xsaves && !ret) {
		for (i = s->xsaves_switch_from; !ret && i < s->nr_switch_msrs; i++)
			ret = ipt_th_wr(hw, s->switch_msrs[i].msr,
					s->switch_msrs[i].val);
		if (!ret) {
			this_cpu_inc(ipt_switch_stats.xrstors);
			ret = hw->xrstors(t->th.xsave);
		}
		/*
		 * The area holds PT (XCOMP_BV bit 8), so XRSTORS faults if
		 * IA32_XSS lost the bit (SDM vol. 1, 13.12): checked here,
		 * where it costs nothing on the way that works.
		 */
		if (ret && ipt_xss_lost_here(hw)) {
			this_cpu_write(ipt_xsaves_here, false);
			this_cpu_inc(ipt_switch_stats.fallbacks);
			xsaves = false;
			ret = 0;
		}
	}
	if (!xsaves && !ret) {
		ret = ipt_th_wr(hw, MSR_IA32_RTIT_OUTPUT_BASE, t->base);
		if (!ret)
			ret = ipt_th_wr(hw, MSR_IA32_RTIT_OUTPUT_MASK, t->mask);
		if (!ret)
			ret = ipt_th_wr(hw, MSR_IA32_RTIT_STATUS,
					t->status & s->hwcfg.status_keep);
		for (i = 0; !ret && i < s->nr_switch_msrs; i++)
			ret = ipt_th_wr(hw, s->switch_msrs[i].msr,
					s->switch_msrs[i].val);
		if (!ret)
			ret = ipt_th_wr(hw, MSR_IA32_RTIT_CTL,
					s->hwcfg.ctl | RTIT_CTL_TRACEEN);
	}

	write_seqcount_begin(&t->th.seq);
	if (ret) {
		t->th.busy++;
		if (gap)
			t->cut = true;
	} else {
		t->th.switches++;
		WRITE_ONCE(t->cpu, smp_processor_id());
		t->running = true;
	}
	write_seqcount_end(&t->th.seq);

	if (ret) {
		ipt_pmi_disarm_here();
		this_cpu_inc(ipt_switch_stats.busy);
		return false;
	}
	this_cpu_write(ipt_thread_loaded, t);
	this_cpu_inc(ipt_switch_stats.loads);
	ipt_life_mark_on();
	return true;
}

/**
 * ipt_thread_load() - put a thread's PT state on this CPU's unit, enabled
 * @t: the trace of the thread that runs (or is about to run) here
 *
 * XSAVES path (this CPU's, see ipt_xsaves_here): the ADDRn pairs the
 * component lacks (ranges 2 and 3, when used), then XRSTORS.  If that
 * faults because IA32_XSS lost bit 8, this CPU goes over to the MSR path
 * and the load is done again that way.  MSR path, in the SDM order: OUTPUT_BASE,
 * OUTPUT_MASK_PTRS, STATUS, CR3_MATCH and the ADDRn pairs in use, CTL with
 * TraceEn last.  A unit that someone else enabled makes the first write
 * fault (every one of them is #GP while TraceEn = 1), so nothing of theirs
 * is changed: the load is counted in @t->th.busy and the thread runs
 * untraced until its next switch-in.  So does a CPU in VMX operation on a
 * part without PT there (@s->hwcfg.vmx_check: CTL cannot be written, an
 * XRSTORS of it faults) and a hybrid part's core whose leaf 14H lacks
 * something the configuration uses (its bit clear in @s->fits, kept by
 * ipt_thread_fits_set()), both asked before anything is written; they
 * also mark the trace cut (a gap).  VMX operation is asked each time: KVM
 * enters and leaves it (VMXON, VMXOFF) at any time, with no notifier.
 *
 * A stream trace's saved state is read under @t->th.lock, which a
 * release that rearms it while the thread is switched out holds
 * (ipt_thread_stream_move()); so is everything the load writes.
 *
 * Context: interrupts off, on the CPU the thread runs on; nothing loaded.
 * Return: true when the unit now traces into @t.
 */
VISIBLE_IF_KUNIT bool ipt_thread_load(struct ipt_trace *t)
{
	bool ret;

	raw_spin_lock(&t->th.lock);
	ret = ipt_thread_load_locked(t);
	raw_spin_unlock(&t->th.lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_thread_load);

/*
 * XSAVES of @t's state on the XSAVES path; whether it saved PT.  XSAVES
 * writes XCOMP_BV = bit 63 | RFBM and RFBM holds bit 8 only while
 * IA32_XSS does (SDM vol. 1, 13.11); saving PT clears TraceEn (13.5.6).
 * So XCOMP_BV bit 8, cleared first, set again by this XSAVES means the
 * state is saved and the unit is off; anything else (IA32_XSS rewritten
 * by a KVM VM exit, a resume, a fault) means neither, and costs no RDMSR
 * (a VM exit in a guest) to find out.
 */
static bool ipt_thread_xsaves(const struct ipt_hw_ops *hw, struct ipt_trace *t)
{
	u64 *xcomp_bv = t->th.xsave + IPT_XSAVE_HDR_OFFSET + 8;

	WRITE_ONCE(*xcomp_bv, 0);
	this_cpu_inc(ipt_switch_stats.xsaves);
	if (hw->xsaves(t->th.xsave))
		return false;
	return READ_ONCE(*xcomp_bv) & XFEATURE_MASK_PT;
}

/*
 * ipt_thread_unload(); with @keep, a stop that faults while TraceEn stays
 * set (or cannot be read back) changes nothing and returns false: the
 * unit still writes into @t, which stays loaded, its PMI armed.
 */
static bool ipt_thread_unload_or_keep(struct ipt_trace *t, bool keep)
{
	const struct ipt_session *s = t->s;
	const struct ipt_hw_ops *hw = s->hw;
	u64 base = t->base, mask = t->mask, status = t->status, ctl;
	unsigned int rd = 0, wr = 0;
	bool saved = false, cut = false, off = false, lost = false;

	lockdep_assert_irqs_disabled();
	if (s->xsaves && this_cpu_read(ipt_xsaves_here)) {
		u64 *v = ipt_xsave_fields(t->th.xsave);

		saved = ipt_thread_xsaves(hw, t);
		if (saved) {
			cut = !(v[IPT_XSAVE_CTL] & RTIT_CTL_TRACEEN);
			base = v[IPT_XSAVE_OUTPUT_BASE];
			mask = v[IPT_XSAVE_OUTPUT_MASK];
			status = v[IPT_XSAVE_STATUS];
		} else {
			this_cpu_write(ipt_xsaves_here, false);
			this_cpu_inc(ipt_switch_stats.fallbacks);
		}
	}
	if (!saved) {
		/* In VMX operation there, a write of CTL is #GP: read it. */
		bool vmx = s->hwcfg.vmx_check && hw->vmx_active &&
			   hw->vmx_active();

		if (!vmx && !ipt_th_wr(hw, MSR_IA32_RTIT_CTL, s->hwcfg.ctl))
			off = true;
		else if (!ipt_th_rd(hw, MSR_IA32_RTIT_CTL, &ctl) &&
			 !(ctl & RTIT_CTL_TRACEEN))
			cut = true;
		else if (!keep)
			lost = true;	/* still writing: where is not known */
		else
			return false;
		off = off || cut;
	}
	/*
	 * A position not read now is not the trace's: what was written at
	 * load (@t->base) is behind every byte written since.
	 */
	if (off && (ipt_th_rd(hw, MSR_IA32_RTIT_OUTPUT_BASE, &base) ||
		    ipt_th_rd(hw, MSR_IA32_RTIT_OUTPUT_MASK, &mask) ||
		    ipt_th_rd(hw, MSR_IA32_RTIT_STATUS, &status)))
		lost = true;
	if (lost)
		cut = true;

	if (ipt_pmi_settle_here(t, mask, &rd, &wr))
		this_cpu_inc(ipt_switch_stats.pmis);
	this_cpu_add(ipt_switch_stats.rdmsr, rd);
	this_cpu_add(ipt_switch_stats.wrmsr, wr);

	raw_spin_lock(&t->th.lock);
	write_seqcount_begin(&t->th.seq);
	t->base = base;
	t->mask = mask;
	t->status = status;
	t->pmis_at_stop = atomic64_read(&t->pmis);
	t->sample_at_stop = READ_ONCE(t->sample);
	if (s->stream && ipt_stream_thread_out(t, lost))
		cut = true;	/* the position lost: registers rebuilt */
	t->running = false;
	if (cut)
		t->cut = true;
	/*
	 * Saved with MSRs: the area an XRSTORS resumes from says so too.
	 * Saved with XSAVES from a unit found off (a VMXON, a PMI restart
	 * that faulted): its CTL lacks TraceEn and every XRSTORS would
	 * resume the unit off; rebuilt, the next load traces again, as the
	 * MSR path's does.
	 */
	if (s->xsaves && (!saved || cut))
		ipt_thread_area_init(s, t);
	write_seqcount_end(&t->th.seq);
	raw_spin_unlock(&t->th.lock);

	this_cpu_write(ipt_thread_loaded, NULL);
	this_cpu_inc(ipt_switch_stats.unloads);
	/*
	 * A unit whose stop faulted may still write into @t's buffer: it
	 * stays marked on, so that a release frees no buffer while this CPU
	 * is offline (or reads TraceEn set, online), and a panic on this CPU
	 * clears it (ipt_life_release(), ipt_life_panic_here()).  XSAVES
	 * cleared it.
	 */
	if (saved || off)
		ipt_life_mark_off();
	return true;
}

/**
 * ipt_thread_unload() - save the state of the thread loaded on this CPU
 * @t: this CPU's loaded trace
 *
 * On this CPU's XSAVES path, XSAVES, which clears TraceEn when it saves
 * PT.  When it did not (see ipt_thread_xsaves()), or on the MSR path, CTL
 * without TraceEn and then OUTPUT_BASE, OUTPUT_MASK_PTRS and STATUS; on
 * the XSAVES path that is a fallback: counted, this CPU stays on the MSR
 * path, and the trace's XSAVES area is rebuilt from the registers read so
 * that an XRSTORS elsewhere resumes from there.  So the unit is off on
 * return either way, unless its stop faulted and TraceEn reads back set:
 * a switch cannot fail, and the unit is left as it is (a release's stop
 * fails instead, ipt_thread_stream_move_on_cpu()), still marked on
 * (ipt_life_mark_on()): it may write into @t's buffer until someone
 * clears TraceEn, so no release frees a buffer while this CPU is offline
 * or reads TraceEn set, and a panic on this CPU clears it.  Its position
 * is not known then (nor when a read of the output registers faults):
 * the trace is cut, and a stream trace's head settled as for a lost
 * position (ipt_stream_thread_out()).  A TraceEn found
 * clear (the saved CTL lacks it, or a read of CTL where its write faulted
 * or, on a part without PT in VMX operation, the CPU is in VMX operation
 * and a write would #GP) was cleared by someone else: VMXON there clears it.  The position is read
 * all the same and the trace marked cut.  Then the ToPA PMI is settled
 * (ipt_pmi_settle_here()): one raised by this thread's output but not yet
 * handled is counted for @t, neither lost nor counted for the next thread.
 *
 * Context: interrupts off, on the CPU @t is loaded on.
 */
VISIBLE_IF_KUNIT void ipt_thread_unload(struct ipt_trace *t)
{
	ipt_thread_unload_or_keep(t, false);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_thread_unload);

/**
 * ipt_thread_loaded_session_here() - the session of the thread whose
 * state is on this CPU's unit
 *
 * Context: interrupts off (a cross-CPU call), so that no switch on this
 * CPU changes it meanwhile.
 * Return: the session, or NULL when no thread is loaded here.
 */
const struct ipt_session *ipt_thread_loaded_session_here(void)
{
	const struct ipt_trace *t = this_cpu_read(ipt_thread_loaded);

	lockdep_assert_irqs_disabled();
	return t ? t->s : NULL;
}

/* ---- the task hash ----------------------------------------------------- */

/* Context: RCU read side (the hooks run with preemption off). */
static struct ipt_trace *ipt_thread_find(struct task_struct *task)
{
	struct ipt_trace *t;

	hash_for_each_possible_rcu(ipt_thread_hash, t, th.node,
				   (unsigned long)task)
		if (t->th.task == task)
			return t;
	return NULL;
}

static bool ipt_thread_live(const struct ipt_trace *t)
{
	return !(READ_ONCE(t->th.flags) & (IPT_TS_EXITED | IPT_TS_DETACHED));
}

/*
 * Hand the next free trace to @task; @privileged: the attach (or the one
 * it inherits from) was privileged.  Context: ipt_thread_lock held; @s
 * has a free trace.
 */
static struct ipt_trace *ipt_thread_bind(struct ipt_session *s,
					 struct task_struct *task, u32 parent,
					 u32 flags, bool privileged)
{
	struct ipt_trace *t = &s->traces[s->nr_used];

	lockdep_assert_held(&ipt_thread_lock);
	get_task_struct(task);
	t->th.task = task;
	t->th.tid = task_pid_nr_ns(task, s->pid_ns);
	t->th.parent = parent;
	t->th.flags = flags;
	t->th.privileged = privileged;
	hash_add_rcu(ipt_thread_hash, &t->th.node, (unsigned long)task);
	/* The trace's fields before the count that publishes it. */
	smp_store_release(&s->nr_used, s->nr_used + 1);
	return t;
}

/* Context: ipt_thread_lock held. */
static void ipt_thread_unhash(struct ipt_trace *t, u32 why)
{
	lockdep_assert_held(&ipt_thread_lock);
	t->th.flags |= why;
	if (!hlist_unhashed(&t->th.node))
		hash_del_rcu(&t->th.node);
}

/* ---- who may be traced ------------------------------------------------- */

/*
 * Whether @task's owner may inspect it without privilege: its memory is
 * user-dumpable, the test ptrace makes (task_still_dumpable(),
 * kernel/ptrace.c:285-297) and perf applies at exec (fs/exec.c:1418-1425).
 * Not a task without memory.  Context: @task is current, or a new child
 * that has not run yet.
 */
static bool ipt_task_user_dumpable(struct task_struct *task)
{
	struct mm_struct *mm = READ_ONCE(task->mm);

	return mm && get_dumpable(mm) == SUID_DUMP_USER;
}

/*
 * Whether trace @t may follow its thread into an image (exec) or a child
 * (inherit) that is not user-dumpable: only when the session was
 * configured, and the thread attached, by callers with CAP_PERFMON or
 * CAP_SYS_ADMIN.  Whoever holds the file reads the trace, and either
 * caller may have handed it on.  Context: RCU sched read side.
 */
static bool ipt_thread_may_follow(const struct ipt_session *s,
				  const struct ipt_trace *t)
{
	return s->privileged && READ_ONCE(t->th.privileged);
}

/* ---- scheduler hooks --------------------------------------------------- */

static void ipt_probe_switch(void *data, bool preempt,
			     struct task_struct *prev,
			     struct task_struct *next, unsigned int prev_state)
{
	struct ipt_trace *t = this_cpu_read(ipt_thread_loaded);

	/* Whatever is loaded belongs to @prev, which leaves the CPU. */
	if (t)
		ipt_thread_unload(t);
	if (!READ_ONCE(ipt_thread_sessions))
		return;
	if (prev_state & TASK_DEAD) {
		t = ipt_thread_find(prev);
		if (t) {
			raw_spin_lock(&ipt_thread_lock);
			ipt_thread_unhash(t, IPT_TS_EXITED);
			raw_spin_unlock(&ipt_thread_lock);
			/* Its partial region is ready now: say so. */
			if (t->s->stream)
				ipt_stream_thread_end(t);
		}
	}
	/* The trace, and so its session, lives while it is hashed. */
	t = ipt_thread_find(next);
	if (t && READ_ONCE(t->s->tracing))
		ipt_thread_load(t);
}

static void ipt_probe_fork(void *data, struct task_struct *parent,
			   struct task_struct *child)
{
	struct ipt_trace *pt;
	struct ipt_session *s;
	unsigned long flags;

	if (!READ_ONCE(ipt_thread_sessions))
		return;
	pt = ipt_thread_find(parent);
	if (!pt || !(READ_ONCE(pt->th.flags) & IPT_TS_INHERIT))
		return;
	s = pt->s;
	raw_spin_lock_irqsave(&ipt_thread_lock, flags);
	/* Not after the session's teardown began: its count is final. */
	if (!ipt_thread_live(pt) || !s->published)
		goto out;
	/* A child its owner may not inspect is not traced (see exec). */
	if (!ipt_thread_may_follow(s, pt) && !ipt_task_user_dumpable(child))
		goto out;
	if (s->nr_used == s->nr_traces) {
		pt->th.missed++;
		goto out;
	}
	ipt_thread_bind(s, child, pt - s->traces,
			IPT_TS_INHERITED | IPT_TS_INHERIT, pt->th.privileged);
out:
	raw_spin_unlock_irqrestore(&ipt_thread_lock, flags);
}

/*
 * A program its owner may not inspect (not user-dumpable, or AT_SECURE)
 * is not traced: the exec detaches the thread, before the new image runs
 * (what perf does at fs/exec.c:1418-1425), unless ipt_thread_may_follow().
 * Dumpability and credentials of the new image are final here: the
 * tracepoint fires after begin_new_exec() (fs/exec.c:1840).
 */
static void ipt_probe_exec(void *data, struct task_struct *p, pid_t old_pid,
			   struct linux_binprm *bprm)
{
	struct ipt_trace *t;
	unsigned long flags;

	if (!READ_ONCE(ipt_thread_sessions))
		return;
	t = ipt_thread_find(p);
	if (!t || ipt_thread_may_follow(t->s, t) ||
	    (!bprm->secureexec && ipt_task_user_dumpable(p)))
		return;
	local_irq_save(flags);
	if (this_cpu_read(ipt_thread_loaded) == t)
		ipt_thread_unload(t);
	raw_spin_lock(&ipt_thread_lock);
	ipt_thread_unhash(t, IPT_TS_DETACHED);
	raw_spin_unlock(&ipt_thread_lock);
	/* Its partial region is ready now: say so, as at an exit. */
	if (t->s->stream)
		ipt_stream_thread_end(t);
	local_irq_restore(flags);
}

/**
 * struct ipt_probe - a scheduler tracepoint ipt hooks
 * @name: the tracepoint
 * @probe: the hook
 * @tp: the tracepoint, once found
 */
struct ipt_probe {
	const char *name;
	void *probe;
	struct tracepoint *tp;
};

static struct ipt_probe ipt_probes[] = {
	{ .name = "sched_switch", .probe = ipt_probe_switch },
	{ .name = "sched_process_fork", .probe = ipt_probe_fork },
	{ .name = "sched_process_exec", .probe = ipt_probe_exec },
};

/* Unhook the first @n probes; on return none of them is running. */
static void ipt_probes_unregister(unsigned int n)
{
	while (n--)
		tracepoint_probe_unregister(ipt_probes[n].tp, ipt_probes[n].probe,
					    NULL);
	tracepoint_synchronize_unregister();
}

static void ipt_probe_lookup(struct tracepoint *tp, void *priv)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ipt_probes); i++)
		if (!strcmp(tp->name, ipt_probes[i].name))
			ipt_probes[i].tp = tp;
}

/* ---- IA32_XSS ------------------------------------------------------------ */

/*
 * Set IA32_XSS bit 8 on this CPU for the session, with every PT MSR at
 * its initial value first (the only time changing XSS is safe), and
 * decide this CPU's path: XSAVES if the bit reads back.  A unit someone
 * else has enabled, or perf's (ipt_own_here()), is left alone: the CPU
 * stays on the MSR path, whose first write faults (or is refused), which
 * counts as busy.  Context: interrupts off, on the CPU.
 */
VISIBLE_IF_KUNIT void ipt_xss_set_on_cpu(void *arg)
{
	const struct ipt_session *s = arg;
	const struct ipt_hw_ops *hw = s->hw;
	/* A hybrid part's core may have fewer ranges than the session. */
	unsigned int i, nr = ipt_caps_cpu_ranges(hw, smp_processor_id(),
						   s->nr_ranges);
	u64 ctl, xss;

	if (this_cpu_read(ipt_xss_changed) || !ipt_own_here() ||
	    hw->read_msr(MSR_IA32_RTIT_CTL, &ctl) ||
	    (ctl & RTIT_CTL_TRACEEN) || hw->read_msr(MSR_IA32_XSS, &xss))
		return;
	hw->write_msr(MSR_IA32_RTIT_CTL, 0);
	hw->write_msr(MSR_IA32_RTIT_STATUS, 0);
	hw->write_msr(MSR_IA32_RTIT_OUTPUT_BASE, 0);
	hw->write_msr(MSR_IA32_RTIT_OUTPUT_MASK, IPT_RTIT_MASK_LOW);
	if (s->has_cr3)
		hw->write_msr(MSR_IA32_RTIT_CR3_MATCH, 0);
	for (i = 0; i < nr; i++) {
		hw->write_msr(IPT_MSR_RTIT_ADDR_A(i), 0);
		hw->write_msr(IPT_MSR_RTIT_ADDR_B(i), 0);
	}
	if (!hw->write_msr(MSR_IA32_XSS, xss | XFEATURE_MASK_PT)) {
		this_cpu_write(ipt_xss_orig, xss);
		this_cpu_write(ipt_xss_changed, true);
		/* This CPU's path, decided once: the bit must read back. */
		this_cpu_write(ipt_xsaves_here,
			       !hw->read_msr(MSR_IA32_XSS, &xss) &&
			       (xss & XFEATURE_MASK_PT));
	}
}
EXPORT_SYMBOL_IF_KUNIT(ipt_xss_set_on_cpu);

/* Put IA32_XSS back, PT MSRs at their initial values first. */
VISIBLE_IF_KUNIT void ipt_xss_restore_on_cpu(void *arg)
{
	const struct ipt_session *s = arg;
	const struct ipt_hw_ops *hw = s->hw;
	u64 ctl;

	this_cpu_write(ipt_xsaves_here, false);
	if (!this_cpu_read(ipt_xss_changed))
		return;
	if (!hw->read_msr(MSR_IA32_RTIT_CTL, &ctl) &&
	    !(ctl & RTIT_CTL_TRACEEN)) {
		hw->write_msr(MSR_IA32_RTIT_CTL, 0);
		hw->write_msr(MSR_IA32_RTIT_STATUS, 0);
		hw->write_msr(MSR_IA32_RTIT_OUTPUT_BASE, 0);
		hw->write_msr(MSR_IA32_RTIT_OUTPUT_MASK, IPT_RTIT_MASK_LOW);
	}
	hw->write_msr(MSR_IA32_XSS, this_cpu_read(ipt_xss_orig));
	this_cpu_write(ipt_xss_changed, false);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_xss_restore_on_cpu);

/* ---- session operations (device lock held) ------------------------------ */

/**
 * ipt_thread_use_xsaves() - whether a session switches threads with XSAVES
 * @caps: the unit's capabilities
 *
 * Yes when XSAVES enumerates PT (CPUID.(0DH,1):ECX[8]) and its component,
 * CPUID.(0DH,8):EAX bytes, holds the nine fields ipt reads; unless the
 * force_msr parameter says otherwise.
 *
 * Context: any.
 * Return: true for the XSAVES path.
 */
VISIBLE_IF_KUNIT bool ipt_thread_use_xsaves(const struct ipt_caps *caps)
{
	if (READ_ONCE(force_msr) || !(caps->features & IPT_FEAT_XSAVES_PT))
		return false;
	if (caps->xsave_pt_size < IPT_XSAVE_PT_MIN_SIZE) {
		pr_notice_once("XSAVES PT component of %u bytes, less than the %u read: switching with MSRs\n",
			       caps->xsave_pt_size, IPT_XSAVE_PT_MIN_SIZE);
		return false;
	}
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_thread_use_xsaves);

/**
 * ipt_thread_xsave_size() - bytes of each trace's XSAVES area
 * @caps: the unit's capabilities
 *
 * Context: device lock held (the caps are stable under it).
 * Return: IPT_XSAVE_AREA_BYTES(CPUID.(0DH,8):EAX) on the XSAVES path
 * (ipt_thread_use_xsaves()), 0 on the MSR path.
 */
u32 ipt_thread_xsave_size(const struct ipt_caps *caps)
{
	return ipt_thread_use_xsaves(caps) ?
		IPT_XSAVE_AREA_BYTES(caps->xsave_pt_size) : 0;
}

/**
 * ipt_thread_alloc_areas() - the XSAVES areas of a configuration's traces
 * @traces: the traces, not yet any session's
 * @nr: how many
 * @size: bytes of each area (ipt_thread_xsave_size()), not 0
 *
 * Like the buffers, allocated by the configuring caller (charged to its
 * memory cgroup) before the locks are taken: a thousand threads' areas
 * are a thousand allocations, which must hold off neither CPU hotplug nor
 * other /dev/ipt callers.
 *
 * Context: process context, no lock of ipt held.
 * Return: 0, or -ENOMEM with none left allocated.
 */
int ipt_thread_alloc_areas(struct ipt_trace *traces, unsigned int nr, u32 size)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		struct ipt_thread *th = &traces[i].th;

		th->xsave_mem = kzalloc(size + IPT_XSAVE_ALIGN, IPT_GFP_ACCOUNT);
		if (!th->xsave_mem)
			goto err_free;
		th->xsave = PTR_ALIGN(th->xsave_mem, IPT_XSAVE_ALIGN);
		atomic_long_inc(&ipt_thread_xsave_areas);
	}
	return 0;

err_free:
	while (i--)
		ipt_thread_free_area(&traces[i]);
	return -ENOMEM;
}

/**
 * ipt_thread_free_area() - free a trace's XSAVES area, if it has one
 * @t: the trace; no CPU can load it (never published, or torn down)
 *
 * Context: process context.
 */
void ipt_thread_free_area(struct ipt_trace *t)
{
	if (!t->th.xsave_mem)
		return;
	kfree(t->th.xsave_mem);
	t->th.xsave_mem = NULL;
	t->th.xsave = NULL;
	atomic_long_dec(&ipt_thread_xsave_areas);
}

/* Append ADDRn pair @i to @s->switch_msrs if its ADDRn_CFG is not 0. */
static void ipt_thread_switch_range(struct ipt_session *s, unsigned int i,
				    unsigned int *n)
{
	if (!(s->hwcfg.ctl & IPT_RTIT_CTL_ADDR_CFG(i)))
		return;
	s->switch_msrs[*n].msr = IPT_MSR_RTIT_ADDR_A(i);
	s->switch_msrs[(*n)++].val = s->hwcfg.addr_a[i];
	s->switch_msrs[*n].msr = IPT_MSR_RTIT_ADDR_B(i);
	s->switch_msrs[(*n)++].val = s->hwcfg.addr_b[i];
}

/**
 * ipt_thread_switch_msrs() - the filter MSRs each switch-in writes
 * @s: the session, its configuration chosen
 *
 * MSR path: CR3_MATCH when CR3 filtering is on, and each ADDRn pair whose
 * ADDRn_CFG is not 0, in @s->switch_msrs.  XSAVES path: only such pairs
 * beyond the two the XSAVES component holds: the entries from
 * @s->xsaves_switch_from on.  Both lists are kept, since each CPU has its
 * own path.
 */
VISIBLE_IF_KUNIT void ipt_thread_switch_msrs(struct ipt_session *s)
{
	unsigned int i, n = 0;

	if (s->hwcfg.ctl & RTIT_CTL_CR3EN) {
		s->switch_msrs[n].msr = MSR_IA32_RTIT_CR3_MATCH;
		s->switch_msrs[n++].val = s->hwcfg.cr3_match;
	}
	for (i = 0; i < min(s->nr_ranges, 2U); i++)
		ipt_thread_switch_range(s, i, &n);
	/* The XSAVES component holds CR3_MATCH and ADDR0/1, no more. */
	s->xsaves_switch_from = n;
	for (; i < s->nr_ranges; i++)
		ipt_thread_switch_range(s, i, &n);
	s->nr_switch_msrs = n;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_thread_switch_msrs);

/**
 * ipt_thread_fits_set() - keep @cpu's bit of @s->fits
 * @s: the per-thread session
 * @cpu: the CPU
 * @online: @cpu is online (its leaf 14H read, ipt_caps_cpu_update()),
 *          else it is going offline
 *
 * The bit says whether @cpu's unit can run @s's configuration
 * (ipt_caps_cpu_fits()), which changes only when the session is
 * configured and when a CPU comes online or goes offline: the switch-in
 * then tests the bit instead of comparing the CPU's leaf 14H.
 *
 * Context: process context; device lock held, CPU hotplug excluded (the
 * cpus read lock, or a hotplug callback).
 */
VISIBLE_IF_KUNIT void ipt_thread_fits_set(struct ipt_session *s,
					  unsigned int cpu, bool online)
{
	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (online && ipt_caps_cpu_fits(s->hw, cpu, &s->hwcfg, s->single))
		cpumask_set_cpu(cpu, &s->fits);
	else
		cpumask_clear_cpu(cpu, &s->fits);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_thread_fits_set);

/**
 * ipt_thread_configure() - make a configured session a per-thread one
 * @s: the session, its traces installed with their XSAVES areas when
 *     @s->xsave_size is not 0 (allocated without the locks,
 *     ipt_thread_alloc_areas(); ipt_ioctl_configure() checked that the
 *     size is still the unit's), not yet published
 *
 * Takes the switching path the areas were made for, prepares each trace,
 * sets IA32_XSS bit 8 on the online CPUs for the XSAVES path (each CPU
 * then uses it if the bit reads back), and publishes the session to the
 * scheduler hooks.  Allocates nothing.
 *
 * Context: process context; cpus read lock and device lock held.
 * Return: 0.
 */
static int ipt_thread_configure(struct ipt_session *s)
{
	unsigned int i;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);

	s->xsaves = s->xsave_size != 0;
	ipt_thread_switch_msrs(s);
	for_each_possible_cpu(i)
		ipt_thread_fits_set(s, i, cpu_online(i));
	for (i = 0; i < s->nr_traces; i++) {
		struct ipt_trace *t = &s->traces[i];

		INIT_HLIST_NODE(&t->th.node);
		seqcount_init(&t->th.seq);
		raw_spin_lock_init(&t->th.lock);
		t->th.parent = IPT_TRACE_NONE;
		if (s->xsaves)
			ipt_thread_area_init(s, t);
	}
	s->pid_ns = get_pid_ns(task_active_pid_ns(current));
	s->nr_used = 0;
	s->tracing = false;
	/* Idempotent per CPU: a CPU set for another session stays as it is. */
	if (s->xsaves) {
		on_each_cpu(ipt_xss_set_on_cpu, s, 1);
		ipt_thread_xss_set = true;
		WRITE_ONCE(ipt_thread_xsaves_sessions,
			   ipt_thread_xsaves_sessions + 1);
	}
	raw_spin_lock_irq(&ipt_thread_lock);
	s->published = true;
	raw_spin_unlock_irq(&ipt_thread_lock);
	WRITE_ONCE(ipt_thread_sessions, ipt_thread_sessions + 1);
	return 0;
}

/* The number of traces handed out, and their fields, as of now. */
static unsigned int ipt_thread_nr_used(struct ipt_session *s)
{
	/* Pairs with the release in ipt_thread_bind(). */
	return smp_load_acquire(&s->nr_used);
}

/*
 * Load the thread that runs on this CPU, if it is one of @arg's live
 * threads and nothing is loaded.  Context: a cross-CPU call, or the
 * thread itself with interrupts off.
 */
static void ipt_thread_kick_on_cpu(void *arg)
{
	struct ipt_session *s = arg;
	struct ipt_trace *t;

	if (this_cpu_read(ipt_thread_loaded) || !READ_ONCE(s->tracing))
		return;
	t = ipt_thread_find(current);
	if (t && t->s == s && ipt_thread_live(t))
		ipt_thread_load(t);
}

/*
 * Load threads that are running right now; the hook loads the others at
 * their next switch-in.  A call to every CPU closes the race with a
 * switch-in in flight: on each CPU either the hook runs after the call
 * and sees @s->tracing and the hash as they are now, or it ran before and
 * the call finds the thread current.
 */
static void ipt_thread_kick(struct ipt_session *s)
{
	on_each_cpu(ipt_thread_kick_on_cpu, s, 1);
}

static void ipt_thread_unload_on_cpu(void *arg)
{
	struct ipt_trace *t = arg;

	if (this_cpu_read(ipt_thread_loaded) == t)
		ipt_thread_unload(t);
}

/*
 * Unload a trace that no hook can load any more (not tracing, or out of
 * the hash, and a grace period since).
 */
static void ipt_thread_settle(struct ipt_trace *t)
{
	if (READ_ONCE(t->running))
		smp_call_function_single(READ_ONCE(t->cpu),
					 ipt_thread_unload_on_cpu, t, 1);
}

/* ---- streaming: STOP follows the consumer, wherever the thread is ------ */

/*
 * Rearm a stream trace that is not loaded: STOP ahead of @released, a
 * pause resumed as a gap (ipt_stream_thread_resume()), and what the next
 * load restores from rebuilt (the XSAVES area), inside @t->th.seq for
 * IPT_IOC_GET_TRACE.  Context: @t->th.lock held, interrupts off; the
 * device lock held by the caller or, in a cross-CPU call, by the task
 * that waits for it.
 */
static void ipt_thread_stream_rearm(struct ipt_trace *t, u64 released,
				    bool final)
{
	lockdep_assert_held(&t->th.lock);
	write_seqcount_begin(&t->th.seq);
	ipt_stream_thread_resume(t, released, final);
	if (t->s->xsaves)
		ipt_thread_area_init(t->s, t);
	write_seqcount_end(&t->th.seq);
}

/*
 * How many times a release looks for the CPU its thread is loaded on
 * (ipt_thread_stream_move()) before it gives up with -EAGAIN.
 */
#define IPT_THREAD_MOVE_TRIES	16

/**
 * struct ipt_thread_move - a release carried to the CPU of a loaded thread
 * @t: the trace
 * @released: the new release position
 * @done: the trace was still loaded there, and was rearmed or its stop
 *        failed (@ret)
 * @ret: 0, or -EIO: the unit could not be stopped, nothing changed
 */
struct ipt_thread_move {
	struct ipt_trace *t;
	u64 released;
	bool done;
	int ret;
};

/*
 * On the CPU @m->t was seen loaded on: if it still is (interrupts are
 * off, so no switch here changes that meanwhile, and a thread is loaded
 * on one CPU at a time), the unit is stopped and the state saved
 * (ipt_thread_unload()), STOP moved and a pause resumed with the unit
 * off, and the thread loaded again, Stopped cleared: the unit resumes
 * with a PSB+.  Markers move only with TraceEn = 0, as the SDM wants
 * the ToPA of an enabled unit left alone (vol. 3C, 33.2.7.2: the unit
 * may cache table entries) and as Linux 6.1's perf moves them after
 * pt_config_stop() (arch/x86/events/intel/pt.c:1514-1530).  So a stop
 * that faults (the WRMSR clearing TraceEn is #GP and TraceEn reads back
 * set) moves nothing and leaves the thread loaded, the unit writing into
 * its buffer as before: the release fails with -EIO, as a per-CPU
 * release's does (ipt_cpu_stream_move()).  Once the unit is off the
 * release holds: a reload that fails (the unit someone else's, a CTL
 * write that faults) leaves the thread untraced until its next switch-in
 * and the trace cut (IPT_TS_CUT: bytes it did not write), as a per-CPU
 * restart that fails does; the release returns 0.
 */
static void ipt_thread_stream_move_on_cpu(void *arg)
{
	struct ipt_thread_move *m = arg;
	struct ipt_trace *t = m->t;

	if (this_cpu_read(ipt_thread_loaded) != t)
		return;
	m->done = true;
	if (!ipt_thread_unload_or_keep(t, true)) {
		m->ret = -EIO;
		return;
	}
	raw_spin_lock(&t->th.lock);
	ipt_thread_stream_rearm(t, m->released, false);
	raw_spin_unlock(&t->th.lock);
	if (ipt_thread_load(t))
		return;
	raw_spin_lock(&t->th.lock);
	write_seqcount_begin(&t->th.seq);
	t->cut = true;
	write_seqcount_end(&t->th.seq);
	raw_spin_unlock(&t->th.lock);
}

/**
 * ipt_thread_stream_move() - the consumer released a thread's trace up to
 * @released (struct ipt_mode_ops.stream_move)
 * @t: a thread's stream trace
 * @released: the new release position, past a region boundary
 *
 * Under @t->th.lock, which every load takes: a trace not loaded anywhere
 * is rearmed in place, and its next load, on any CPU, takes the new
 * markers and the resumed state; a loaded one is rearmed on its CPU
 * (ipt_thread_stream_move_on_cpu()), the lock dropped first: that CPU
 * may be spinning on it with interrupts off.  A thread that left that
 * CPU meanwhile is looked at again, IPT_THREAD_MOVE_TRIES times in all:
 * each try that misses needs the thread to have left the CPU between the
 * look and the call, and a thread that does so every time (it sleeps and
 * wakes elsewhere constantly, or the user moves it) must not keep the
 * caller in the kernel for good.  A finished thread's pause (it exited or
 * was detached while paused) ends where it was last unloaded.
 *
 * Context: process context; cpus read lock and device lock held.
 * Return: 0; -EIO: the loaded thread's unit could not be stopped; or
 * -EAGAIN: the thread was on another CPU at every try; nothing changed
 * on either error.  A reload that fails leaves the thread untraced until
 * its next switch-in, as any load (@t->th.busy), and the trace cut.
 */
static int ipt_thread_stream_move(struct ipt_trace *t, u64 released)
{
	struct ipt_thread_move m = { .t = t, .released = released };
	unsigned int cpu, tries;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&t->s->idev->lock);
	for (tries = 0; tries < IPT_THREAD_MOVE_TRIES; tries++) {
		raw_spin_lock_irq(&t->th.lock);
		if (!t->running) {
			ipt_thread_stream_rearm(t, released,
						!ipt_thread_live(t));
			raw_spin_unlock_irq(&t->th.lock);
			return 0;
		}
		cpu = t->cpu;
		raw_spin_unlock_irq(&t->th.lock);
		smp_call_function_single(cpu, ipt_thread_stream_move_on_cpu,
					 &m, 1);
		if (m.done)
			return m.ret;
		cond_resched();
	}
	return -EAGAIN;
}

/*
 * The open pause of a stream trace that will not be loaded again before
 * the next start (its thread exited or was detached, or the session
 * stopped; unloaded) becomes a gap ending at its last unload.  Context:
 * device lock held.
 */
static void ipt_thread_stream_close(struct ipt_trace *t)
{
	lockdep_assert_held(&t->s->idev->lock);
	raw_spin_lock_irq(&t->th.lock);
	if (!t->running)
		ipt_stream_thread_close(t);
	raw_spin_unlock_irq(&t->th.lock);
}

/**
 * ipt_thread_start() - start tracing the session's threads
 * @s: the session
 *
 * Context: process context; cpus read lock and device lock held.
 * Return: 0.
 */
static int ipt_thread_start(struct ipt_session *s)
{
	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	WRITE_ONCE(s->tracing, true);
	ipt_thread_kick(s);
	return 0;
}

/**
 * ipt_thread_stop() - stop tracing; every thread's state saved
 * @s: the session
 *
 * Context: process context, sleeps (a grace period); cpus read lock and
 * device lock held.
 */
static void ipt_thread_stop(struct ipt_session *s)
{
	unsigned int i, n;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	WRITE_ONCE(s->tracing, false);
	/* Every hook that could still load a thread has returned. */
	synchronize_rcu();
	n = ipt_thread_nr_used(s);
	for (i = 0; i < n; i++) {
		ipt_thread_settle(&s->traces[i]);
		if (s->stream)
			ipt_thread_stream_close(&s->traces[i]);
	}
}

/**
 * ipt_thread_teardown() - unpublish the session and let its threads go
 * @s: the session, stopped
 *
 * Context: process context, sleeps; cpus read lock and device lock held.
 */
static void ipt_thread_teardown(struct ipt_session *s)
{
	unsigned int i, n;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	raw_spin_lock_irq(&ipt_thread_lock);
	s->published = false;
	raw_spin_unlock_irq(&ipt_thread_lock);
	synchronize_rcu();

	n = ipt_thread_nr_used(s);
	for (i = 0; i < n; i++) {
		struct ipt_trace *t = &s->traces[i];

		ipt_thread_settle(t);
		raw_spin_lock_irq(&ipt_thread_lock);
		if (!hlist_unhashed(&t->th.node))
			hash_del_rcu(&t->th.node);
		raw_spin_unlock_irq(&ipt_thread_lock);
	}
	/* No reader of the hash still sees them. */
	synchronize_rcu();
	for (i = 0; i < n; i++) {
		put_task_struct(s->traces[i].th.task);
		s->traces[i].th.task = NULL;
	}
	for (i = 0; i < s->nr_traces; i++)
		ipt_thread_free_area(&s->traces[i]);
	if (s->xsaves)
		WRITE_ONCE(ipt_thread_xsaves_sessions,
			   ipt_thread_xsaves_sessions - 1);
	WRITE_ONCE(ipt_thread_sessions, ipt_thread_sessions - 1);
	/*
	 * IA32_XSS goes back when no thread of any session can be loaded:
	 * rewriting it under a loaded thread (of a session on the MSR path)
	 * is what ipt_xss_set_on_cpu() avoids too.
	 */
	if (!ipt_thread_sessions && ipt_thread_xss_set)
		on_each_cpu(ipt_xss_restore_on_cpu, s, 1);
	if (!ipt_thread_sessions)
		ipt_thread_xss_set = false;
	put_pid_ns(s->pid_ns);
	s->pid_ns = NULL;
	s->nr_used = 0;
}

/**
 * ipt_thread_cpu_hotplug() - this CPU comes online or goes offline during
 * a per-thread session
 * @s: the session
 * @online: it came online (else it is going offline)
 *
 * On the XSAVES path, IA32_XSS bit 8 is set on a CPU that comes online,
 * and put back on one that goes offline: it may come back with the
 * kernel's own value (silicon re-initialises it), so coming online sets
 * the bit afresh instead of trusting a stale record.  A CPU going offline
 * has switched its threads out already (the hotplug thread runs this).
 *
 * Context: the CPU's own hotplug callback, device lock held.
 */
static void ipt_thread_cpu_hotplug(struct ipt_session *s, bool online)
{
	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (!s->xsaves)
		return;
	local_irq_disable();
	if (online)
		ipt_xss_set_on_cpu(s);
	else
		ipt_xss_restore_on_cpu(s);
	local_irq_enable();
}

/* The caps of @cpu were read again (ipt_hw_cpu_update_locked()) first. */
static void ipt_thread_cpu_online(struct ipt_session *s, unsigned int cpu)
{
	ipt_thread_fits_set(s, cpu, true);
	ipt_thread_cpu_hotplug(s, true);
}

/* A thread on this CPU is switched out, and its state saved, first. */
static void ipt_thread_cpu_offline(struct ipt_session *s, unsigned int cpu)
{
	ipt_thread_fits_set(s, cpu, false);
	ipt_thread_cpu_hotplug(s, false);
}

/* ---- IPT_IOC_ATTACH / IPT_IOC_DETACH ------------------------------------- */

static struct task_struct *ipt_thread_get_task(u32 tid)
{
	struct task_struct *task;

	if (!tid)
		return get_task_struct(current);
	rcu_read_lock();
	task = pid_task(find_vpid(tid), PIDTYPE_PID);
	if (task)
		get_task_struct(task);
	rcu_read_unlock();
	return task;
}

/**
 * ipt_ioctl_attach_pre() - IPT_IOC_ATTACH's checks, without the device
 * @c: the call; on success @c->data holds a reference to the thread, which
 *     ipt_ioctl_attach_post() drops
 *
 * Checks the argument, that the answer can be delivered (before anything
 * changes), and that the caller may trace the thread; notes the caller's
 * privilege in @c->privileged.  These come before the session's own
 * checks under the lock, so ATTACH of a thread that does not exist is
 * -ESRCH whatever the session's state or mode.
 *
 * Context: process context, no lock held.
 * Return: 0; -EINVAL (bad argument, a kernel thread), -EFAULT, -ESRCH (no
 * such thread), -EPERM (another process's thread without CAP_PERFMON).
 */
int ipt_ioctl_attach_pre(struct ipt_ioctl_call *c)
{
	struct ipt_attach __user *ua = c->uarg;
	const struct ipt_attach *a = c->arg;
	struct task_struct *task;

	if ((a->flags & ~IPT_ATTACH_INHERIT) || a->trace ||
	    memchr_inv(a->reserved, 0, sizeof(a->reserved)))
		return -EINVAL;
	/* The answer must be deliverable before anything changes. */
	if (put_user(0U, &ua->trace))
		return -EFAULT;
	task = ipt_thread_get_task(a->tid);
	if (!task)
		return -ESRCH;
	c->privileged = perfmon_capable();
	if ((task->flags & PF_KTHREAD) ||
	    (!same_thread_group(task, current) && !c->privileged)) {
		int ret = task->flags & PF_KTHREAD ? -EINVAL : -EPERM;

		put_task_struct(task);
		return ret;
	}
	c->data = task;
	return 0;
}

/**
 * ipt_ioctl_attach() - IPT_IOC_ATTACH: trace a thread
 * @c: the call, checked by ipt_ioctl_attach_pre(); on success the
 *     argument's trace is the index of the thread's trace
 *
 * A session that traces the kernel takes threads only from a caller with
 * CAP_PERFMON or CAP_SYS_ADMIN, whoever configured it.
 *
 * Context: process context; cpus read lock and device lock held.
 * Return: 0; -EINVAL (not a per-thread session), -EPERM (the session
 * traces the kernel and the caller is not privileged), -ESRCH (the thread
 * is exiting), -EEXIST (already traced), -ENOSPC (every trace used).
 */
long ipt_ioctl_attach(struct ipt_ioctl_call *c)
{
	struct ipt_attach *a = c->arg;
	struct task_struct *task = c->data;
	struct ipt_session *s = c->s;
	struct ipt_trace *t = NULL;
	int ret = 0;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (s->state == IPT_STATE_IDLE || s->mode != IPT_MODE_THREAD)
		return -EINVAL;
	if ((s->hwcfg.ctl & RTIT_CTL_OS) && !c->privileged)
		return -EPERM;
	raw_spin_lock_irq(&ipt_thread_lock);
	if (task->flags & PF_EXITING)
		ret = -ESRCH;
	else if (ipt_thread_find(task))
		ret = -EEXIST;
	else if (s->nr_used == s->nr_traces)
		ret = -ENOSPC;
	else
		t = ipt_thread_bind(s, task, IPT_TRACE_NONE,
				    (a->flags & IPT_ATTACH_INHERIT) ?
				    IPT_TS_INHERIT : 0, c->privileged);
	raw_spin_unlock_irq(&ipt_thread_lock);
	if (t && s->tracing)
		ipt_thread_kick(s);
	/*
	 * The index is taken here, under the device lock: a RELEASE or
	 * CONFIGURE on this file frees or replaces @s->traces only under it,
	 * and ipt_ioctl() copies this kernel copy out after dropping it.
	 */
	if (t)
		a->trace = t - s->traces;
	return ret;
}

/**
 * ipt_ioctl_attach_post() - drop ipt_ioctl_attach_pre()'s reference
 * @c: the call
 * @ret: the command's result so far
 *
 * Context: process context, no lock held.
 * Return: @ret.
 */
long ipt_ioctl_attach_post(struct ipt_ioctl_call *c, long ret)
{
	put_task_struct(c->data);
	return ret;
}

/**
 * ipt_ioctl_detach_pre() - IPT_IOC_DETACH's checks of the argument
 * @c: the call
 *
 * Context: process context, no lock held.
 * Return: 0 or -EINVAL.
 */
int ipt_ioctl_detach_pre(struct ipt_ioctl_call *c)
{
	const struct ipt_detach *d = c->arg;

	return d->flags || d->reserved ? -EINVAL : 0;
}

/**
 * ipt_ioctl_detach() - IPT_IOC_DETACH: stop tracing a thread
 * @c: the call
 *
 * The thread's state is saved and its trace stays readable and mapped
 * until the session is released; a stream session's pollers are woken
 * (data short of a region is ready now: ipt_stream_ready()).
 *
 * Context: process context, sleeps; cpus read lock and device lock held.
 * Return: 0; -EINVAL (not a per-thread session); -ENOENT (no such trace);
 * -ESRCH (its thread already exited or was detached).
 */
long ipt_ioctl_detach(struct ipt_ioctl_call *c)
{
	const struct ipt_detach *d = c->arg;
	struct ipt_session *s = c->s;
	struct ipt_trace *t;
	int ret = 0;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (s->state == IPT_STATE_IDLE || s->mode != IPT_MODE_THREAD)
		return -EINVAL;
	if (d->trace >= ipt_thread_nr_used(s))
		return -ENOENT;
	t = &s->traces[d->trace];
	raw_spin_lock_irq(&ipt_thread_lock);
	if (!ipt_thread_live(t))
		ret = -ESRCH;
	else
		ipt_thread_unhash(t, IPT_TS_DETACHED);
	raw_spin_unlock_irq(&ipt_thread_lock);
	if (!ret) {
		synchronize_rcu();
		ipt_thread_settle(t);
		if (s->stream) {
			ipt_thread_stream_close(t);
			/* Data short of a region is ready now. */
			wake_up_all(&s->wq);
		}
	}
	return ret;
}

/**
 * ipt_thread_fill() - a thread trace's state for IPT_IOC_GET_TRACE
 * @t: the trace, handed out
 * @ts: receives the state
 *
 * The position is the one saved when the thread last left a CPU (or the
 * start), read as one snapshot with the wrap count of that moment.
 *
 * Context: device lock held.
 */
static void ipt_thread_fill(const struct ipt_trace *t,
			    struct ipt_trace_state *ts)
{
	struct ipt_trace_pos pos;
	unsigned int seq;
	u64 switches, busy;
	u32 flags, missed;
	bool cut;

	lockdep_assert_held(&t->s->idev->lock);
	/*
	 * The flags first: a thread's last unload comes before EXITED is
	 * set, so a trace that says EXITED also has its final position.
	 */
	raw_spin_lock_irq(&ipt_thread_lock);
	flags = t->th.flags;
	missed = t->th.missed;
	raw_spin_unlock_irq(&ipt_thread_lock);
	do {
		seq = read_seqcount_begin(&t->th.seq);
		pos.base = t->base;
		pos.mask = t->mask;
		pos.status = t->status;
		pos.wraps = t->pmis_at_stop;
		pos.sample = t->sample_at_stop;
		pos.running = t->running;
		switches = t->th.switches;
		busy = t->th.busy;
		cut = t->cut;
	} while (read_seqcount_retry(&t->th.seq, seq));
	pos.pmi_late = false;
	ipt_pos_fill(t->buf, t->s->single, &pos, ts);
	if (t->s->stream)
		ipt_stream_fill(t, ts);
	if (cut)
		ts->status |= IPT_TS_CUT;

	ts->status |= IPT_TS_THREAD | flags;
	ts->missed = missed;
	ts->tid = t->th.tid;
	ts->parent = t->th.parent;
	ts->switches = switches;
	ts->busy = busy;
}

/**
 * ipt_thread_trace() - the trace IPT_IOC_GET_TRACE names, if handed out
 * @s: a per-thread session
 * @idx: the index
 *
 * Context: device lock held.
 * Return: the trace or NULL.
 */
static struct ipt_trace *ipt_thread_trace(struct ipt_session *s, u32 idx)
{
	lockdep_assert_held(&s->idev->lock);
	if (idx >= ipt_thread_nr_used(s))
		return NULL;
	return &s->traces[idx];
}

/**
 * ipt_thread_trace_settle() - bring a trace up to date before a command
 * reads or releases it (struct ipt_mode_ops.settle)
 * @t: a trace ipt_thread_trace() returned
 *
 * A stream trace whose thread exited or was detached while paused has its
 * pause closed here, as of the thread's last unload (the exit happens in
 * the scheduler hook, which cannot take the device lock the gap records
 * are under).  Called once the command cannot fail any more, so that an
 * error leaves the pause open, as it was.
 *
 * Context: device lock held.
 */
static void ipt_thread_trace_settle(struct ipt_trace *t)
{
	lockdep_assert_held(&t->s->idev->lock);
	if (t->s->stream && !ipt_thread_live(t))
		ipt_thread_stream_close(t);
}

const struct ipt_mode_ops ipt_thread_mode_ops = {
	.configure = ipt_thread_configure,
	.start = ipt_thread_start,
	.stop = ipt_thread_stop,
	.teardown = ipt_thread_teardown,
	.cpu_online = ipt_thread_cpu_online,
	.cpu_offline = ipt_thread_cpu_offline,
	.trace = ipt_thread_trace,
	.settle = ipt_thread_trace_settle,
	.fill = ipt_thread_fill,
	.stream_move = ipt_thread_stream_move,
};
EXPORT_SYMBOL_IF_KUNIT(ipt_thread_mode_ops);

/* ---- debugfs: the cost of switching --------------------------------------- */

static struct dentry *ipt_debugfs_dir;

static int ipt_switch_stats_show(struct seq_file *m, void *v)
{
	struct ipt_switch_stats sum = {};
	const char *path = "none";
	unsigned int cpu, xsaves_cpus = 0;
	u64 switches, ops;

	for_each_possible_cpu(cpu) {
		const struct ipt_switch_stats *c = per_cpu_ptr(&ipt_switch_stats,
							       cpu);

		sum.loads += READ_ONCE(c->loads);
		sum.unloads += READ_ONCE(c->unloads);
		sum.busy += READ_ONCE(c->busy);
		sum.rdmsr += READ_ONCE(c->rdmsr);
		sum.wrmsr += READ_ONCE(c->wrmsr);
		sum.xsaves += READ_ONCE(c->xsaves);
		sum.xrstors += READ_ONCE(c->xrstors);
		sum.pmis += READ_ONCE(c->pmis);
		sum.fallbacks += READ_ONCE(c->fallbacks);
		if (cpu_online(cpu) && READ_ONCE(per_cpu(ipt_xsaves_here, cpu)))
			xsaves_cpus++;
	}
	/* With sessions on both paths, "xsaves": some CPUs may use it. */
	if (READ_ONCE(ipt_thread_xsaves_sessions))
		path = "xsaves";
	else if (READ_ONCE(ipt_thread_sessions))
		path = "msr";

	switches = sum.loads + sum.unloads;
	ops = sum.rdmsr + sum.wrmsr + sum.xsaves + sum.xrstors;
	seq_printf(m, "path %s\nloads %llu\nunloads %llu\nbusy %llu\n", path,
		   sum.loads, sum.unloads, sum.busy);
	seq_printf(m, "rdmsr %llu\nwrmsr %llu\nxsaves %llu\nxrstors %llu\npmis %llu\n",
		   sum.rdmsr, sum.wrmsr, sum.xsaves, sum.xrstors, sum.pmis);
	seq_printf(m, "fallbacks %llu\nxsaves_cpus %u\n", sum.fallbacks,
		   xsaves_cpus);
	/* Not a rate: not reset by a write. */
	seq_printf(m, "xsave_areas %ld\n",
		   atomic_long_read(&ipt_thread_xsave_areas));
	/* Hundredths of an operation per load or unload. */
	seq_printf(m, "ops_per_switch_x100 %llu\n",
		   switches ? div64_u64(ops * 100, switches) : 0);
	return 0;
}

static int ipt_switch_stats_open(struct inode *inode, struct file *file)
{
	return single_open(file, ipt_switch_stats_show, NULL);
}

/* Any write zeroes the counters. */
static ssize_t ipt_switch_stats_write(struct file *file, const char __user *buf,
				      size_t len, loff_t *ppos)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct ipt_switch_stats *c = per_cpu_ptr(&ipt_switch_stats, cpu);

		/* Racy against running hooks by design: a rough reset. */
		WRITE_ONCE(c->loads, 0);
		WRITE_ONCE(c->unloads, 0);
		WRITE_ONCE(c->busy, 0);
		WRITE_ONCE(c->rdmsr, 0);
		WRITE_ONCE(c->wrmsr, 0);
		WRITE_ONCE(c->xsaves, 0);
		WRITE_ONCE(c->xrstors, 0);
		WRITE_ONCE(c->pmis, 0);
		WRITE_ONCE(c->fallbacks, 0);
	}
	return len;
}

static const struct file_operations ipt_switch_stats_fops = {
	.owner = THIS_MODULE,
	.open = ipt_switch_stats_open,
	.read = seq_read,
	.write = ipt_switch_stats_write,
	.llseek = seq_lseek,
	.release = single_release,
};

/**
 * ipt_thread_init() - hook the scheduler tracepoints; debugfs
 *
 * The hooks are registered for the module's life, not per session: each
 * registration or removal rewrites the tracepoint's call site in
 * __schedule() while other CPUs run it (static calls), and doing that at
 * every session start made QEMU's TCG execute a stale int3 now and then
 * (an oops in the 4-CPU debug VM).  Without a per-thread session the
 * switch hook costs a per-CPU read and an RCU pointer test.
 *
 * Context: module init.
 * Return: 0, -ENOENT when the kernel lacks one of the tracepoints, or the
 * error of registering a hook.
 */
int ipt_thread_init(void)
{
	unsigned int i;
	int ret = 0;

	for_each_kernel_tracepoint(ipt_probe_lookup, NULL);
	for (i = 0; i < ARRAY_SIZE(ipt_probes); i++) {
		if (!ipt_probes[i].tp) {
			pr_err("kernel has no tracepoint %s\n",
			       ipt_probes[i].name);
			return -ENOENT;
		}
	}
	for (i = 0; i < ARRAY_SIZE(ipt_probes); i++) {
		ret = tracepoint_probe_register(ipt_probes[i].tp,
						ipt_probes[i].probe, NULL);
		if (ret)
			break;
	}
	if (ret) {
		pr_err("cannot hook tracepoint %s: %d\n", ipt_probes[i].name, ret);
		ipt_probes_unregister(i);
		return ret;
	}
	ipt_debugfs_dir = debugfs_create_dir("ipt", NULL);
	debugfs_create_file("switch_stats", 0600, ipt_debugfs_dir, NULL,
			    &ipt_switch_stats_fops);
	return 0;
}

/**
 * ipt_thread_exit() - undo ipt_thread_init()
 *
 * On return no hook is running.
 *
 * Context: module exit; no session exists.
 */
void ipt_thread_exit(void)
{
	debugfs_remove_recursive(ipt_debugfs_dir);
	ipt_probes_unregister(ARRAY_SIZE(ipt_probes));
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipt: sessions and traces, shared by the session state machine
 * (ipt_session.c) and the modes it runs through struct ipt_mode_ops:
 * per-CPU (ipt_cpu.c) and per-thread (ipt_thread.c).  See
 * Documentation/design.rst.
 */
#ifndef _IPT_SESSION_H
#define _IPT_SESSION_H

#include <linux/atomic.h>
#include <linux/irq_work.h>
#include <linux/list.h>
#include <linux/percpu.h>
#include <linux/poll.h>
#include <linux/seqlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>

#include "ipt.h"

struct cpumask;
struct file;
struct pid;
struct pid_namespace;
struct task_struct;
struct ipt_mode_ops;

/**
 * struct ipt_thread - the per-thread part of a trace (IPT_MODE_THREAD)
 * @node: in the task hash while the thread is traced (ipt_thread.c)
 * @task: the thread; a reference is held until the session is torn down
 * @tid: its id in the session's pid namespace
 * @parent: the trace of the thread that created it, or IPT_TRACE_NONE
 * @flags: IPT_TS_EXITED, _DETACHED, _INHERITED and _INHERIT
 * @missed: threads it created that found no free trace
 * @switches: times its state was loaded onto a CPU
 * @busy: times a load found the unit enabled by someone else
 * @privileged: attached by a caller with CAP_PERFMON or CAP_SYS_ADMIN (or
 *              inherited from such a thread): in a privileged session it
 *              stays traced when it execs an image that is not
 *              user-dumpable
 * @seq: makes @base, @mask, @status, @pmis_at_stop and @running of the
 *       trace (and of a stream trace, @stream.head) readable as one
 *       snapshot by IPT_IOC_GET_TRACE
 * @lock: a stream trace's saved state against a release that rearms it
 *        while the thread is switched out: taken by every load and
 *        unload (interrupts off) and by that release; never held across
 *        a cross-CPU call
 * @xsave: the XSAVES area (IPT_XSAVE_ALIGN aligned), on the XSAVES path
 * @xsave_mem: the allocation @xsave is in
 *
 * Locking: @flags, @missed, @privileged and @node under ipt_thread_lock
 * (a raw spinlock, also taken by the scheduler hooks); @privileged is
 * set before the trace is published and not changed.  @switches, @busy,
 * @xsave and the trace's saved registers are written only by the CPU the
 * thread is loaded on or being loaded on, with interrupts off, inside @seq
 * and under @lock; by a release only while the thread is not loaded, under
 * @lock and inside @seq (ipt_thread.c, streaming).
 */
struct ipt_thread {
	struct hlist_node node;
	struct task_struct *task;
	u32 tid;
	u32 parent;
	u32 flags;
	u32 missed;
	u64 switches;
	u64 busy;
	bool privileged;
	seqcount_t seq;
	raw_spinlock_t lock;
	void *xsave;
	void *xsave_mem;
};

/* Gaps a stream trace itemises; older ones are only counted. */
#define IPT_STREAM_GAPS		64
/* struct ipt_stream @announced: no PMI since the unit started. */
#define IPT_STREAM_NONE		U64_MAX

/**
 * struct ipt_stream - the streaming state of a trace (IPT_BUFFER_STREAM)
 * @gaps: the last IPT_STREAM_GAPS closed gaps, gap i at i % IPT_STREAM_GAPS
 * @nr_gaps: closed gaps so far
 * @gap_bytes: bytes the unit is known to have lost in them
 * @released: stream position the consumer released up to
 * @head: stream position of the next byte, as of the last time the unit
 *        was off (a stop, a release that moved STOP)
 * @lost_base: the backend's lost-bytes count when the unit last started
 *        or resumed on the trace's CPU
 * @paused: the unit hit STOP and waits for a release (set by the PMI
 *        handler, or found at a stop; cleared when it resumes)
 * @paused_tsc: TSC when the pause began
 * @announced: where the PMI handler last saw the unit, rounded down to
 *        a region boundary: the buffer offset (0 .. size - 1), plus the
 *        buffer size when the unit was Stopped at STOP; IPT_STREAM_NONE
 *        when no PMI was handled since the unit last started
 * @work: wakes the session's pollers, queued by the PMI handler
 * @lost: per-thread: bytes the backend lost for the open pause on the
 *        CPUs the thread left since (ipt_stream_thread_out())
 * @out_tsc: per-thread: TSC when the thread was last unloaded
 * @restart_failed: the PMI handler could not re-enable the unit after
 *        its stop (ipt_stream_pmi()): the unit has been off since, and
 *        the next unload of a thread's trace marks it cut
 *
 * Locking: everything under the device lock, the cross-CPU calls of
 * ipt_cpu.c writing while the caller holds it and waits; but @paused,
 * @paused_tsc, @announced and @restart_failed, which the PMI handler
 * (NMI) also writes with WRITE_ONCE (@paused and @paused_tsc only when
 * @paused is clear; @paused set with a release after @paused_tsc), and
 * which are read with READ_ONCE (@paused with an acquire before
 * @paused_tsc is read: ipt_stream_pause_begun()); a thread's load
 * and unload clear @restart_failed on the handler's CPU, interrupts off.
 * A thread's trace: @head, @lost, @lost_base, @out_tsc, @paused and
 * @paused_tsc are also written by its loads and unloads under &struct
 * ipt_thread.lock (@head inside its @seq); @released, the STOP marker
 * and the gap records only with the device lock held too, and only while
 * the thread is not loaded (a release rearms it off the CPU, or unloads
 * and reloads it on its CPU).
 */
struct ipt_stream {
	struct ipt_gap *gaps;
	u64 nr_gaps;
	u64 gap_bytes;
	u64 released;
	u64 head;
	u64 lost_base;
	bool paused;
	u64 paused_tsc;
	u64 announced;
	struct irq_work work;
	u64 lost;
	u64 out_tsc;
	bool restart_failed;
};

/**
 * struct ipt_trace - one trace: a CPU's (IPT_MODE_CPU) or a thread's
 * @s: the session
 * @cpu: the CPU; for a thread, the CPU it is loaded on (when @running) or
 *       was loaded on last
 * @buf: its buffer
 * @mmap_offset: where @buf maps on the /dev/ipt file
 * @base: IA32_RTIT_OUTPUT_BASE, as read at the last stop (or initial)
 * @mask: IA32_RTIT_OUTPUT_MASK_PTRS, likewise
 * @status: IA32_RTIT_STATUS, likewise
 * @pmis_at_stop: @pmis as it was after the last stop's PMI drain
 * @running: TraceEn is set on @cpu for this trace
 * @pmi_late: a stop found a PMI still pending after the drain timeout
 * @cut: TraceEn was found clear where this trace had set it, or the unit
 *        could not be enabled for it (VMX operation on a part without PT
 *        there): the trace has a gap (IPT_TS_CUT)
 * @err: result of the last cross-CPU call
 * @pmis: ToPA PMIs taken for this buffer (a ring's or stop-on-full
 *        buffer's INT is on its last region only, so each is one wrap of
 *        a ring, or a full stop-on-full buffer; a stream buffer's count
 *        means nothing, its position is @stream.announced); incremented by
 *        the PMI handler in NMI context
 * @sample: single-entry ToPA rings: the buffer offset when the last PMI
 *        was handled (written by the handler, or by a thread's unload)
 * @sample_at_stop: @sample as it was with @pmis_at_stop
 * @stream: the streaming state (a stream session's traces only)
 * @th: per-thread state; unused in IPT_MODE_CPU
 *
 * Locking: per-CPU traces: everything but @pmis under the device lock;
 * the cross-CPU calls write @base, @mask, @status, @running, @cut and @err while
 * the caller holds the device lock and waits for them.  Thread traces:
 * see struct ipt_thread.
 */
struct ipt_trace {
	struct ipt_session *s;
	unsigned int cpu;
	struct ipt_buffer *buf;
	u64 mmap_offset;
	u64 base;
	u64 mask;
	u64 status;
	u64 pmis_at_stop;
	bool running;
	bool pmi_late;
	bool cut;
	int err;
	atomic64_t pmis;
	u64 sample;
	u64 sample_at_stop;
	struct ipt_stream stream;
	struct ipt_thread th;
};

/* An MSR and the value a thread's switch-in writes to it. */
struct ipt_msr_val {
	u32 msr;
	u64 val;
};

/**
 * struct ipt_session - the state of one open /dev/ipt file
 * @idev: the device
 * @state: enum ipt_state
 * @mode: enum ipt_mode (valid when not IDLE)
 * @mops: the mode's operations (valid when not IDLE)
 * @hw: the backend, pinned (module reference, @idev->users) while the
 *      session is not IDLE
 * @hwcfg: the MSR values the configuration programs
 * @nr_ranges: ADDRn pairs to program (the unit's number of ranges)
 * @has_cr3: the unit has CR3 filtering, so CR3_MATCH exists
 * @nr_traces: entries of @traces
 * @traces: per-CPU: one per chosen CPU, in CPU order; per-thread: the
 *          max_threads traces, used in order
 * @map_size: bytes of all buffers together: the mmap space
 * @single: the unit's ToPA tables hold one output entry: each buffer is
 *          one region (Documentation/design.rst, "Single-entry ToPA")
 * @xsaves: per-thread: threads are switched with XSAVES / XRSTORS on the
 *          CPUs where IA32_XSS bit 8 holds (ipt_thread.c), MSRs elsewhere
 * @fits: per-thread: the online CPUs whose unit can run the configuration
 *        (ipt_caps_cpu_fits(): a hybrid part's core may lack what it
 *        uses), so that the switch-in tests one bit.  Written only with
 *        the device lock held and CPU hotplug excluded (at configure and
 *        by the hotplug callbacks, ipt_thread_fits_set()); read by the
 *        scheduler hook with interrupts off (cpumask_test_cpu())
 * @xsave_size: per-thread, XSAVES path: bytes of each XSAVES area,
 *              IPT_XSAVE_AREA_BYTES(CPUID.(0DH,8):EAX)
 * @tracing: per-thread: threads are loaded at switch-in (READ_ONCE in
 *           the scheduler hooks)
 * @nr_used: per-thread: traces handed out (under ipt_thread_lock)
 * @privileged: the configuring caller had CAP_PERFMON or CAP_SYS_ADMIN
 * @ipc_lock: the configuring caller had CAP_IPC_LOCK (ipt_config_req)
 * @pid_ns: per-thread: the pid namespace tids are reported in
 * @nr_switch_msrs: entries of @switch_msrs
 * @switch_msrs: filter MSRs each switch-in writes before enabling: on
 *               the MSR path CR3_MATCH and the ADDRn pairs in use; on the
 *               XSAVES path only the ADDRn pairs it does not hold, the
 *               entries from @xsaves_switch_from on
 * @xsaves_switch_from: see @switch_msrs
 * @node: in @idev->sessions while not IDLE
 * @published: per-thread: the scheduler hooks may hand the session's
 *             traces to new threads (under ipt_thread_lock; READ_ONCE in
 *             the hooks)
 * @life_gap: a system sleep stopped and restarted the session
 *            (IPT_TS_SUSPENDED), until it is IDLE again
 * @life_paused: a system sleep stopped it and has not restarted it yet
 * @uid: the configuring caller's real uid (IPT_IOC_LIST_SESSIONS)
 * @pid: the configuring caller's thread group (a reference)
 * @stream: the buffers are stream buffers (IPT_BUFFER_STREAM)
 * @wq: poll()/epoll waiters; woken by the traces' irq_work and at stop
 *
 * Locking: every field under @idev->lock, except where noted.
 */
struct ipt_session {
	struct list_head node;
	struct ipt_device *idev;
	enum ipt_state state;
	enum ipt_mode mode;
	const struct ipt_mode_ops *mops;
	const struct ipt_hw_ops *hw;
	struct ipt_hwcfg hwcfg;
	unsigned int nr_ranges;
	bool has_cr3;
	unsigned int nr_traces;
	struct ipt_trace *traces;
	u64 map_size;
	bool single;
	bool xsaves;
	u32 xsave_size;
	bool tracing;
	unsigned int nr_used;
	bool privileged;
	bool ipc_lock;
	struct pid_namespace *pid_ns;
	unsigned int nr_switch_msrs;
	unsigned int xsaves_switch_from;
	struct ipt_msr_val switch_msrs[1 + 2 * IPT_MAX_ADDR_RANGES];
	bool published;
	struct cpumask fits;
	bool life_gap;
	bool life_paused;
	kuid_t uid;
	struct pid *pid;
	bool stream;
	wait_queue_head_t wq;
};

/**
 * struct ipt_mode_ops - a tracing mode, as the session state machine sees it
 * @install: optional; take @s's traces (installed, their buffers
 *         allocated and laid out by the configure's unlocked half),
 *         before the PMI handler is installed.
 * @configure: optional; finish configuring once the PMI handler is
 *         installed.  0 or a negative errno, with nothing left to undo.
 * @start: start tracing.  0 or a negative errno, with nothing started.
 * @stop: stop tracing; every trace's position and wrap count settled.
 * @teardown: optional; undo @configure, before the PMI handler goes.
 * @cpu_online: the hotplug callback of @cpu, which came online.
 * @cpu_offline: the hotplug callback of @cpu, which goes offline.
 * @trace: the trace IPT_IOC_GET_TRACE names by @idx (a CPU or a trace
 *         index), or NULL; a lookup only, nothing changed.
 * @settle: optional; called by a command that reports or releases @t
 *         (IPT_IOC_GET_TRACE, IPT_IOC_STREAM_RELEASE, IPT_IOC_GET_GAPS)
 *         once it can no longer fail (but for EFAULT copying the result
 *         out, after which the next such call closes it the same way):
 *         bring @t's state up to date before it is read (a thread's pause
 *         that no load will end is closed).
 * @fill: that trace's state, for IPT_IOC_GET_TRACE: the position
 *         (ipt_pos_fill()) and what the mode adds; @ts's state,
 *         mmap_offset and parent (IPT_TRACE_NONE) are set already.
 * @stream_move: a stream session's: the consumer released @t up to
 *         @released, past a region boundary its release position is not
 *         (checked by the caller): move STOP with the unit writing into
 *         @t off, resume a pause and record its gap.  The error of a
 *         stop that faulted (-EIO), or per thread of a thread that was
 *         on another CPU at every try (-EAGAIN), with nothing changed; a
 *         restart that fails cuts the trace (IPT_TS_CUT) and is no
 *         error, the release holds.
 *
 * The state machine keeps @s->state; the operations do not change it.
 *
 * Locking: every operation is called with the device lock held; all but
 * @trace, @settle and @fill also with CPU hotplug excluded (the cpus read lock, or
 * the hotplug callback @cpu_online and @cpu_offline run in).
 */
struct ipt_mode_ops {
	void (*install)(struct ipt_session *s);
	int (*configure)(struct ipt_session *s);
	int (*start)(struct ipt_session *s);
	void (*stop)(struct ipt_session *s);
	void (*teardown)(struct ipt_session *s);
	void (*cpu_online)(struct ipt_session *s, unsigned int cpu);
	void (*cpu_offline)(struct ipt_session *s, unsigned int cpu);
	struct ipt_trace *(*trace)(struct ipt_session *s, u32 idx);
	void (*settle)(struct ipt_trace *t);
	void (*fill)(const struct ipt_trace *t, struct ipt_trace_state *ts);
	int (*stream_move)(struct ipt_trace *t, u64 released);
};

/* ipt_pmi.c */
int ipt_pmi_request(struct ipt_session *s);
void ipt_pmi_release(struct ipt_session *s);
void ipt_pmi_disarm(struct ipt_session *s);
void ipt_pmi_arm(struct ipt_trace *t, unsigned int cpu);
void ipt_pmi_arm_here(struct ipt_trace *t);
void ipt_pmi_disarm_here(void);
bool ipt_pmi_settle_here(struct ipt_trace *t, u64 mask, unsigned int *rdmsr,
			 unsigned int *wrmsr);
void ipt_pmi_drain(struct ipt_trace *t);

/* ipt_own.c: the unit held against perf's intel_pt */
int ipt_own_lookup(void);
int ipt_own_acquire(struct ipt_session *s, const struct cpumask *cpus,
		    int type);
void ipt_own_release(struct ipt_session *s);
int ipt_own_claim(struct ipt_session *s, unsigned int cpu);
void ipt_own_cpu_online(struct ipt_session *s, unsigned int cpu);
void ipt_own_cpu_offline(struct ipt_session *s, unsigned int cpu);
bool ipt_own_cpu(unsigned int cpu);
bool ipt_own_here(void);

/* ipt_cpu.c */
extern const struct ipt_mode_ops ipt_cpu_mode_ops;

/* ipt_thread.c */
extern const struct ipt_mode_ops ipt_thread_mode_ops;
const struct ipt_session *ipt_thread_loaded_session_here(void);
int ipt_thread_init(void);
void ipt_thread_exit(void);
u32 ipt_thread_xsave_size(const struct ipt_caps *caps);
int ipt_thread_alloc_areas(struct ipt_trace *traces, unsigned int nr, u32 size);
void ipt_thread_free_area(struct ipt_trace *t);

/* ipt_life.c: reboot, kexec, panic, system sleep; release */
int ipt_life_init(struct ipt_device *idev);
void ipt_life_exit(void);
void ipt_life_mark_on(void);
void ipt_life_mark_off(void);
bool ipt_life_on_here(void);
int ipt_life_may_start(void);
bool ipt_life_paused(void);
bool ipt_life_gap_of(const struct ipt_session *s);
void ipt_life_configure(struct ipt_session *s);
bool ipt_life_release(struct ipt_session *s);
void ipt_life_panic_here(void);

/* ipt_stream.c: streaming (IPT_BUFFER_STREAM) */
u64 ipt_stream_position(u64 size, u64 region_size, u64 released, u64 off,
			bool full);
unsigned int ipt_stream_stop_region(const struct ipt_buffer *buf,
				    u64 released);
int ipt_stream_alloc(struct ipt_trace *t);
void ipt_stream_free(struct ipt_trace *t);
void ipt_stream_install(struct ipt_trace *t);
void ipt_stream_sync(struct ipt_session *s);
void ipt_stream_pmi(struct ipt_trace *t, const struct ipt_hw_ops *hw);
void ipt_stream_started_here(struct ipt_trace *t);
void ipt_stream_stopped_here(struct ipt_trace *t);
void ipt_stream_stopped_lost(struct ipt_trace *t);
void ipt_stream_rearm(struct ipt_trace *t);
u64 ipt_stream_captured(const struct ipt_trace *t);
void ipt_stream_fill(const struct ipt_trace *t, struct ipt_trace_state *ts);
int ipt_ioctl_stream_release_pre(struct ipt_ioctl_call *c);
long ipt_ioctl_stream_release(struct ipt_ioctl_call *c);
int ipt_ioctl_get_gaps_pre(struct ipt_ioctl_call *c);
long ipt_ioctl_get_gaps(struct ipt_ioctl_call *c);
long ipt_ioctl_get_gaps_post(struct ipt_ioctl_call *c, long ret);
bool ipt_stream_ready(const struct ipt_trace *t);
void ipt_stream_thread_in(struct ipt_trace *t);
bool ipt_stream_thread_out(struct ipt_trace *t, bool lost);
void ipt_stream_thread_end(struct ipt_trace *t);
void ipt_stream_thread_resume(struct ipt_trace *t, u64 released, bool final);
void ipt_stream_thread_close(struct ipt_trace *t);

/* ipt_session.c: what the modes share */
void ipt_session_stop_locked(struct ipt_session *s);
__poll_t ipt_session_poll(struct ipt_session *s, struct file *file,
			  poll_table *wait);

#if IS_ENABLED(CONFIG_KUNIT)
bool ipt_session_excluded(struct ipt_device *idev, enum ipt_mode mode);
void ipt_thread_area_init(const struct ipt_session *s, struct ipt_trace *t);
bool ipt_thread_load(struct ipt_trace *t);
void ipt_thread_unload(struct ipt_trace *t);
void ipt_thread_switch_msrs(struct ipt_session *s);
bool ipt_thread_use_xsaves(const struct ipt_caps *caps);
void ipt_thread_fits_set(struct ipt_session *s, unsigned int cpu, bool online);
void ipt_xss_set_on_cpu(void *arg);
void ipt_xss_restore_on_cpu(void *arg);
#endif

#endif /* _IPT_SESSION_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipt_sim: what the files of the module share, around the unit's rules
 * (ipt_sim.h): the selected model and parameters (ipt_sim_main.c), the
 * per-CPU units with their timer (ipt_sim_pcpu.c), PMI delivery through
 * LVTPC and the NMI chain (ipt_sim_nmi.c), the programs and feeds
 * (ipt_sim_prog.c), the perf-like foreign tracer (ipt_sim_perf.c) and
 * debugfs (ipt_sim_debugfs.c).
 *
 * Lock order: ipt_sim_feed_lock (a mutex), then a unit's
 * ipt_sim_pcpu.lock, then ipt_sim_task_lock (both raw spinlocks, taken
 * with interrupts off).
 */
#ifndef _IPT_SIM_MODULE_H
#define _IPT_SIM_MODULE_H

#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/percpu.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "ipt_sim.h"

/* Largest rate, bytes/s per tracing CPU (module parameter and debugfs). */
#define IPT_SIM_RATE_MAX	(64UL * SZ_1M)
/*
 * In bulk mode (ipt_sim_bulk): the largest rate, and the most bytes one
 * tick of the output timer writes (in hard interrupt context), whatever
 * rate x period_us asks for: under QEMU's TCG, where a bulk tick costs
 * about 3 us per KiB (6-7 with MTC), 0.8 ms of work (2 ms with MTC);
 * Documentation/simulator.rst, "Bulk mode".
 */
#define IPT_SIM_BULK_RATE_MAX	(256UL * SZ_1M)
#define IPT_SIM_BULK_TICK_MAX	(256UL * SZ_1K)
/* Bulk mode: periods of output a late tick catches up at most. */
#define IPT_SIM_BULK_CATCH_UP	16

struct ipt_sim_task;

/**
 * struct ipt_sim_prog - a program's place: its feed and where it is
 * @feed: the feed (see struct ipt_sim_feed)
 * @ip: its instruction pointer
 * @ctx_off: it is outside the traced context (IPT_SIM_FEED_CTX_OFF)
 */
struct ipt_sim_prog {
	struct ipt_sim_feed feed;
	u64 ip;
	bool ctx_off;
};

/**
 * struct ipt_sim_pcpu - one CPU of the simulator
 * @lock: protects @st; taken with interrupts off (the timer and PMI run
 *        in hard interrupt context)
 * @st: the unit's state
 * @timer: produces output while TraceEn = 1; pinned to @cpu
 * @cpu: the CPU this is
 * @own: the CPU's own program (built-in loop or cpuN/feed) while a
 *       thread's program is on the unit
 * @bound: the thread whose program is on the unit, or NULL
 * @rate: this CPU's output rate in bytes/s, or 0 for the global one
 *        (debugfs cpuN/rate: one CPU can outrun its consumer); READ_ONCE
 * @bulk: IPT_SIM_BULK_CHUNK bytes of scratch, given to @st.bulk by the
 *        timer while bulk mode is on
 * @last_tick_ns: ktime_get_ns() at the timer's last run, or when it
 *        was started after being idle (bulk mode's time slices)
 * @rest_until_ns: the end of the rest the timer's last run began
 *        (ipt_sim_tick_rest()), or 0: a start waits for it
 *
 * Locking: @st, @own, @bound, @last_tick_ns and @rest_until_ns only under
 * @lock.  The MSR and XSAVES
 * operations run on @cpu with preemption disabled; debugfs may take
 * @lock from any CPU.  @lock nests outside ipt_sim_task_lock.
 */
struct ipt_sim_pcpu {
	raw_spinlock_t lock;
	struct ipt_sim_cpu st;
	struct hrtimer timer;
	unsigned int cpu;
	struct ipt_sim_prog own;
	struct ipt_sim_task *bound;
	u64 rate;
	u8 *bulk;
	u64 last_tick_ns;
	u64 rest_until_ns;
};

/* ipt_sim_main.c: fixed once the module is loaded */
extern const struct ipt_sim_model *ipt_sim_model;
const struct ipt_sim_model *ipt_sim_model_of(unsigned int cpu);
extern unsigned int ipt_sim_period_us;
extern unsigned long ipt_sim_feed_size;

/* ipt_sim_pcpu.c: the per-CPU units, their timer and PMI delivery */
extern struct ipt_sim_pcpu __percpu *ipt_sim_pcpu;
extern u64 ipt_sim_rate;
extern bool ipt_sim_bulk;
u64 ipt_sim_rate_max(void);
extern const struct ipt_hw_ops ipt_sim_ops;
int ipt_sim_pcpu_init(void);
void ipt_sim_pcpu_free(void);
void ipt_sim_kick(struct ipt_sim_pcpu *pc, bool on, bool pmi);

/* ipt_sim_nmi.c: LVTPC, the NMI chain and its perf-like handler */
void ipt_sim_nmi_deliver(struct ipt_sim_pcpu *pc);
int ipt_sim_nmi_request(ipt_pmi_fn fn, unsigned int flags);
void ipt_sim_nmi_release(void);
void ipt_sim_nmi_unmask(void);
bool ipt_sim_perf_nmi_get(void);
void ipt_sim_pmc_overflow(struct ipt_sim_pcpu *pc);

/* ipt_sim_prog.c: programs of CPUs and threads, and their feeds */
extern u32 ipt_sim_fail_alloc;
extern const struct file_operations ipt_sim_feed_fops;
extern const struct file_operations ipt_sim_task_feed_fops;
int ipt_sim_prog_init(void);
void ipt_sim_prog_exit(void);
void ipt_sim_prog_cpu_free(struct ipt_sim_pcpu *pc);
void ipt_sim_prog_free_tasks(void);

/* ipt_sim_life.c: power loss in system sleeps, a stuck unit */
struct dentry;
void ipt_sim_life_init(void);
void ipt_sim_life_exit(void);
void ipt_sim_life_debugfs(struct dentry *dir, struct ipt_sim_pcpu *pc);

/* ipt_sim_perf.c: the perf-like foreign tracer, PMU "intel_pt" */
int ipt_sim_perf_init(void);
void ipt_sim_perf_exit(void);
void ipt_sim_perf_debugfs(struct dentry *dir, struct ipt_sim_pcpu *pc);

/* ipt_sim_gate.c: the allocation gate, a test hook (alloc_pause) */
void ipt_sim_gate_pause(void);
void ipt_sim_gate_debugfs(struct dentry *dir);

/* ipt_sim_debugfs.c: /sys/kernel/debug/ipt_sim */
int ipt_sim_knob_set(void *data, u64 val,
		     int (*rule)(struct ipt_sim_pcpu *pc, u64 val));
int ipt_sim_knob_get(void *data, u64 *val,
		     u64 (*rule)(const struct ipt_sim_pcpu *pc));

/*
 * DEFINE_IPT_SIM_KNOB_ATTRIBUTE(fops, read, rule): the debugfs attribute
 * @fops of a CPU's knob (the file's data its struct ipt_sim_pcpu): a
 * write runs @rule, a read @read (NULL: the knob is only written), each
 * under the unit's lock (ipt_sim_knob_set(), ipt_sim_knob_get()).
 */
#define DEFINE_IPT_SIM_KNOB_ATTRIBUTE(__fops, __read, __rule)		\
static int __fops##_get(void *data, u64 *val)				\
{									\
	return ipt_sim_knob_get(data, val, __read);			\
}									\
static int __fops##_set(void *data, u64 val)				\
{									\
	return ipt_sim_knob_set(data, val, __rule);			\
}									\
DEFINE_DEBUGFS_ATTRIBUTE(__fops, __fops##_get, __fops##_set, "%llu\n")

void ipt_sim_debugfs_init(void);
void ipt_sim_debugfs_exit(void);

#endif /* _IPT_SIM_MODULE_H */

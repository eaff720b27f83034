// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: a simulated Intel PT unit behind ipt.ko's backend interface.
 *
 * Loading this module registers it with ipt.ko (ipt_hw_register()), which
 * then drives it as it would drive the CPU's own unit; unloading it gives
 * ipt.ko back the native probe.  This file is the thin per-CPU layer:
 * locking, the output timer, PMI delivery and debugfs.  The rules live in
 * ipt_sim_msr.c and ipt_sim_output.c.  See Documentation/simulator.rst.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "ipt_sim.h"

static char *model = "icl";
module_param(model, charp, 0444);
MODULE_PARM_DESC(model, "CPU model: icl, icl-noxsaves, skl, glm, bdw-sro");

static unsigned long rate = SZ_1M;
module_param(rate, ulong, 0444);
MODULE_PARM_DESC(rate, "trace bytes per second per tracing CPU (initial; debugfs 'rate' changes it)");

static unsigned int period_us = 1000;
module_param(period_us, uint, 0444);
MODULE_PARM_DESC(period_us, "output timer period in microseconds (100..100000)");

static unsigned long feed_size = SZ_1M;
module_param(feed_size, ulong, 0444);
MODULE_PARM_DESC(feed_size, "bytes of feed buffer per CPU (4096..64 MiB)");

#define IPT_SIM_RATE_MAX	(64UL * SZ_1M)
#define IPT_SIM_FEED_MAX	(64UL * SZ_1M)
#define IPT_SIM_WRITE_MAX	SZ_64K

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
 * struct ipt_sim_task - a thread that runs a program of its own
 * @task: the thread (reference held), or NULL for a free slot
 * @prog: its program while it is off every CPU
 * @cpu: the CPU whose unit holds the program (it runs there), or -1
 * @dead: the thread exited; the slot is freed when next needed
 *
 * A test thread writes its own feed through debugfs "task_feed"; from
 * then on whichever CPU runs the thread runs that program, so a trace
 * shows which thread ran where.  Locking: the array under
 * ipt_sim_task_lock; @prog is moved in and out of a CPU's state only on
 * that CPU, under its lock and the array lock, when the thread is
 * switched in or out (ipt_sim_probe_switch()).
 */
struct ipt_sim_task {
	struct task_struct *task;
	struct ipt_sim_prog prog;
	int cpu;
	bool dead;
};

#define IPT_SIM_MAX_TASKS	16

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
 *
 * Locking: @st, @own and @bound only under @lock.  The MSR and XSAVES
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
};

static const struct ipt_sim_model *ipt_sim_model;
static struct ipt_sim_pcpu __percpu *ipt_sim_pcpu;
static struct dentry *ipt_sim_dir;
static u64 ipt_sim_rate;		/* bytes/s, READ_ONCE */
static u32 ipt_sim_fail_alloc;		/* under ipt_sim_feed_lock */
static DEFINE_MUTEX(ipt_sim_feed_lock);	/* feed writers, fail_alloc */

static struct ipt_sim_task ipt_sim_tasks[IPT_SIM_MAX_TASKS];
static DEFINE_RAW_SPINLOCK(ipt_sim_task_lock);
static struct tracepoint *ipt_sim_tp_switch;

static ipt_pmi_fn ipt_sim_pmi_fn;	/* READ_ONCE in the timer */
static DEFINE_MUTEX(ipt_sim_pmi_lock);

/* The simulated TSC runs at the nominal ratio times 100 MHz. */
static void ipt_sim_clock(struct ipt_sim_pcpu *pc)
{
	lockdep_assert_held(&pc->lock);
	pc->st.tsc = mul_u64_u32_div(ktime_get_ns(), ipt_sim_model->nom_ratio, 10);
}

static void ipt_sim_deliver_pmi(struct ipt_sim_pcpu *pc)
{
	ipt_pmi_fn fn = READ_ONCE(ipt_sim_pmi_fn);
	bool raised;

	/* Acknowledged meanwhile (a driver that settled it): nothing to do. */
	raw_spin_lock(&pc->lock);
	raised = pc->st.global_status & GLOBAL_STATUS_TRACE_TOPAPMI;
	raw_spin_unlock(&pc->lock);
	if (!raised)
		return;
	if (!fn) {
		raw_spin_lock(&pc->lock);
		pc->st.stats.pmis_lost++;
		raw_spin_unlock(&pc->lock);
		return;
	}
	fn();
	/* The acknowledgment: IA32_PERF_GLOBAL_OVF_CTRL bit 55. */
	raw_spin_lock(&pc->lock);
	pc->st.global_status &= ~GLOBAL_STATUS_TRACE_TOPAPMI;
	raw_spin_unlock(&pc->lock);
}

static enum hrtimer_restart ipt_sim_tick(struct hrtimer *timer)
{
	struct ipt_sim_pcpu *pc = container_of(timer, struct ipt_sim_pcpu, timer);
	u64 period_ns = (u64)period_us * NSEC_PER_USEC;
	u64 budget = div_u64(READ_ONCE(ipt_sim_rate) * period_ns, NSEC_PER_SEC);
	bool pmi, on;

	WARN_ON_ONCE(smp_processor_id() != pc->cpu);

	raw_spin_lock(&pc->lock);
	ipt_sim_clock(pc);
	ipt_sim_run(&pc->st, budget ?: 1);
	pmi = pc->st.pmi_pending;
	pc->st.pmi_pending = false;
	raw_spin_unlock(&pc->lock);

	if (pmi)
		ipt_sim_deliver_pmi(pc);
	/* The handler's WRMSR may have re-armed the timer already. */
	if (hrtimer_is_queued(timer))
		return HRTIMER_NORESTART;

	raw_spin_lock(&pc->lock);
	on = pc->st.ctl & RTIT_CTL_TRACEEN;
	pmi = pc->st.pmi_pending;
	raw_spin_unlock(&pc->lock);
	if (!on && !pmi)
		return HRTIMER_NORESTART;
	hrtimer_forward_now(timer, ns_to_ktime(pmi ? 1 : period_ns));
	return HRTIMER_RESTART;
}

/* After an operation: keep the timer running while there is work. */
static void ipt_sim_kick(struct ipt_sim_pcpu *pc, bool on, bool pmi)
{
	if (!on && !pmi)
		return;
	if (pmi)
		hrtimer_start(&pc->timer, 0, HRTIMER_MODE_REL_PINNED_HARD);
	else if (!hrtimer_active(&pc->timer))
		hrtimer_start(&pc->timer, ns_to_ktime((u64)period_us * NSEC_PER_USEC),
			      HRTIMER_MODE_REL_PINNED_HARD);
}

/* ---- programs of threads ----------------------------------------------- */

static void ipt_sim_prog_save(const struct ipt_sim_cpu *c,
			      struct ipt_sim_prog *p)
{
	p->feed = c->feed;
	p->ip = c->ip;
	p->ctx_off = c->feed_ctx_off;
}

static void ipt_sim_prog_load(struct ipt_sim_cpu *c,
			      const struct ipt_sim_prog *p)
{
	c->feed = p->feed;
	c->ip = p->ip;
	c->feed_ctx_off = p->ctx_off;
}

/* The slot of @task's program.  Context: ipt_sim_task_lock held. */
static struct ipt_sim_task *ipt_sim_task_of(struct task_struct *task)
{
	unsigned int i;

	lockdep_assert_held(&ipt_sim_task_lock);
	for (i = 0; i < IPT_SIM_MAX_TASKS; i++)
		if (ipt_sim_tasks[i].task == task && !ipt_sim_tasks[i].dead)
			return &ipt_sim_tasks[i];
	return NULL;
}

/*
 * Run @to's program (the CPU's own when NULL) on @pc's unit from now on.
 * Context: on @pc's CPU, interrupts off, @pc->lock and ipt_sim_task_lock
 * held.
 */
static void ipt_sim_rebind(struct ipt_sim_pcpu *pc, struct ipt_sim_task *to)
{
	struct ipt_sim_task *from = pc->bound;

	lockdep_assert_held(&pc->lock);
	lockdep_assert_held(&ipt_sim_task_lock);
	if (from == to)
		return;
	ipt_sim_switch_out(&pc->st);
	ipt_sim_prog_save(&pc->st, from ? &from->prog : &pc->own);
	if (from)
		from->cpu = -1;
	ipt_sim_prog_load(&pc->st, to ? &to->prog : &pc->own);
	if (to)
		to->cpu = pc->cpu;
	pc->bound = to;
}

/*
 * sched_switch, ahead of ipt.ko's hook (higher priority): the CPU now
 * runs @next's program.  Context: __schedule(), interrupts off.
 */
static void ipt_sim_probe_switch(void *data, bool preempt,
				 struct task_struct *prev,
				 struct task_struct *next,
				 unsigned int prev_state)
{
	struct ipt_sim_pcpu *pc = this_cpu_ptr(ipt_sim_pcpu);
	struct ipt_sim_task *dead;

	raw_spin_lock(&pc->lock);
	raw_spin_lock(&ipt_sim_task_lock);
	ipt_sim_rebind(pc, ipt_sim_task_of(next));
	if (prev_state & TASK_DEAD) {
		dead = ipt_sim_task_of(prev);
		if (dead)
			dead->dead = true;
	}
	raw_spin_unlock(&ipt_sim_task_lock);
	ipt_sim_kick(pc, pc->st.ctl & RTIT_CTL_TRACEEN, pc->st.pmi_pending);
	raw_spin_unlock(&pc->lock);
}

static void ipt_sim_tp_lookup(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_switch"))
		ipt_sim_tp_switch = tp;
}

static struct ipt_sim_pcpu *ipt_sim_this_cpu(void)
{
	lockdep_assert_preemption_disabled();
	return this_cpu_ptr(ipt_sim_pcpu);
}

static void ipt_sim_op_cpuid(u32 leaf, u32 subleaf, struct ipt_cpuid_regs *r)
{
	ipt_sim_cpuid(ipt_sim_model, leaf, subleaf, r);
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
	int ret;

	raw_spin_lock_irqsave(&pc->lock, flags);
	ipt_sim_clock(pc);
	if (op == IPT_SIM_WRMSR)
		ret = ipt_sim_wrmsr(&pc->st, msr, val);
	else if (op == IPT_SIM_XSAVES)
		ret = ipt_sim_xsaves(&pc->st, area);
	else
		ret = ipt_sim_xrstors(&pc->st, area);
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

static int ipt_sim_op_pmi_request(ipt_pmi_fn fn)
{
	int ret = 0;

	mutex_lock(&ipt_sim_pmi_lock);
	if (ipt_sim_pmi_fn)
		ret = -EBUSY;
	else
		WRITE_ONCE(ipt_sim_pmi_fn, fn);
	mutex_unlock(&ipt_sim_pmi_lock);
	return ret;
}

static void ipt_sim_op_pmi_release(void)
{
	mutex_lock(&ipt_sim_pmi_lock);
	WRITE_ONCE(ipt_sim_pmi_fn, NULL);
	/* PMIs are delivered with interrupts off: an RCU read side. */
	synchronize_rcu();
	mutex_unlock(&ipt_sim_pmi_lock);
}

static const struct ipt_hw_ops ipt_sim_ops = {
	.name = "sim",
	.backend = IPT_BACKEND_SIM,
	.owner = THIS_MODULE,
	.cpuid = ipt_sim_op_cpuid,
	.read_msr = ipt_sim_op_rdmsr,
	.write_msr = ipt_sim_op_wrmsr,
	.xsaves = ipt_sim_op_xsaves,
	.xrstors = ipt_sim_op_xrstors,
	.pmi_request = ipt_sim_op_pmi_request,
	.pmi_release = ipt_sim_op_pmi_release,
};

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * ipt_sim_live_ops() - the registered operations, for KUnit
 *
 * Lets the live suite drive the per-CPU units through the same interface
 * ipt.ko uses: timer, PMI delivery and locking run for real.
 *
 * Return: the simulator's struct ipt_hw_ops.
 */
const struct ipt_hw_ops *ipt_sim_live_ops(void)
{
	return &ipt_sim_ops;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_live_ops);
#endif

/* ---- debugfs ---------------------------------------------------------- */

static int ipt_sim_stats_show(struct seq_file *m, void *v)
{
	struct ipt_sim_pcpu *pc = m->private;
	struct ipt_sim_cpu st;
	unsigned long flags;
	unsigned int i;

	raw_spin_lock_irqsave(&pc->lock, flags);
	st = pc->st;
	raw_spin_unlock_irqrestore(&pc->lock, flags);

	seq_printf(m, "rdmsr %llu\nwrmsr %llu\ngp %llu\nop_errors %llu\n",
		   st.stats.rdmsr, st.stats.wrmsr, st.stats.gp,
		   st.stats.op_errors);
	seq_printf(m, "pmis %llu\npmis_lost %llu\nbytes %llu\ndropped %llu\n",
		   st.stats.pmis, st.stats.pmis_lost, st.stats.bytes,
		   st.stats.dropped);
	seq_printf(m, "ovf %llu\npsb %llu\nxsaves %llu\nxrstors %llu\n",
		   st.stats.ovf, st.stats.psb, st.stats.xsaves,
		   st.stats.xrstors);
	seq_printf(m, "clobbered %llu\nswitches %llu\nforeign %u\n",
		   st.stats.clobbered, st.stats.switches, st.foreign);
	seq_printf(m, "ctl %#llx\nstatus %#llx\noutput_base %#llx\noutput_mask %#llx\n",
		   st.ctl, st.status, st.output_base, st.output_mask | 0x7f);
	seq_printf(m, "cr3_match %#llx\nglobal_status %#llx\nxss %#llx\n",
		   st.cr3_match, st.global_status, st.xss);
	for (i = 0; i < 4; i++)
		seq_printf(m, "addr%u %#llx %#llx\n", i, st.addr_a[i],
			   st.addr_b[i]);
	seq_printf(m, "ip %#llx\nfeed %s %zu/%zu\ndrop %llu\n", st.ip,
		   st.feed.buf ? "on" : "off", st.feed.pos, st.feed.len,
		   st.drop);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipt_sim_stats);

static int ipt_sim_force_error_set(void *data, u64 val)
{
	struct ipt_sim_pcpu *pc = data;
	unsigned long flags;

	if (!val)
		return 0;
	raw_spin_lock_irqsave(&pc->lock, flags);
	ipt_sim_force_error(&pc->st);
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(ipt_sim_force_error_fops, NULL,
			 ipt_sim_force_error_set, "%llu\n");

static int ipt_sim_drop_set(void *data, u64 val)
{
	struct ipt_sim_pcpu *pc = data;
	unsigned long flags;

	raw_spin_lock_irqsave(&pc->lock, flags);
	pc->st.drop = val;
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(ipt_sim_drop_fops, NULL, ipt_sim_drop_set,
			 "%llu\n");

/*
 * Another tracer takes (1) or gives back (0) the unit: TraceEn set with
 * no output of ours, so that every write but one clearing TraceEn faults.
 */
static int ipt_sim_foreign_set(void *data, u64 val)
{
	struct ipt_sim_pcpu *pc = data;
	unsigned long flags;
	int ret = 0;

	raw_spin_lock_irqsave(&pc->lock, flags);
	if (val && (pc->st.ctl & RTIT_CTL_TRACEEN)) {
		ret = -EBUSY;
	} else if (val) {
		pc->st.ctl = RTIT_CTL_TRACEEN | RTIT_CTL_TOPA |
			     RTIT_CTL_USR | RTIT_CTL_BRANCH_EN;
		pc->st.foreign = true;
	} else if (pc->st.foreign) {
		pc->st.ctl = 0;
		pc->st.foreign = false;
	}
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return ret;
}

static int ipt_sim_foreign_get(void *data, u64 *val)
{
	struct ipt_sim_pcpu *pc = data;
	unsigned long flags;

	raw_spin_lock_irqsave(&pc->lock, flags);
	*val = pc->st.foreign;
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(ipt_sim_foreign_fops, ipt_sim_foreign_get,
			 ipt_sim_foreign_set, "%llu\n");

/* Reset the unit to its power-on state; refused while TraceEn = 1. */
static int ipt_sim_reset_set(void *data, u64 val)
{
	struct ipt_sim_pcpu *pc = data;
	unsigned long flags;
	int ret = 0;

	raw_spin_lock_irqsave(&pc->lock, flags);
	if (pc->st.ctl & RTIT_CTL_TRACEEN)
		ret = -EBUSY;
	else
		ipt_sim_cpu_init(&pc->st, ipt_sim_model);
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return ret;
}
DEFINE_DEBUGFS_ATTRIBUTE(ipt_sim_reset_fops, NULL, ipt_sim_reset_set,
			 "%llu\n");

static int ipt_sim_rate_get(void *data, u64 *val)
{
	*val = READ_ONCE(ipt_sim_rate);
	return 0;
}

static int ipt_sim_rate_set(void *data, u64 val)
{
	if (val > IPT_SIM_RATE_MAX)
		return -EINVAL;
	WRITE_ONCE(ipt_sim_rate, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(ipt_sim_rate_fops, ipt_sim_rate_get,
			 ipt_sim_rate_set, "%llu\n");

/* Detach the feed under the lock; the caller frees it. */
static u8 *ipt_sim_feed_detach(struct ipt_sim_pcpu *pc)
{
	struct ipt_sim_prog prog;
	unsigned long flags;
	u8 *buf;

	raw_spin_lock_irqsave(&pc->lock, flags);
	/* The CPU's own program: on the unit unless a thread's is. */
	if (pc->bound)
		prog = pc->own;
	else
		ipt_sim_prog_save(&pc->st, &prog);
	buf = prog.feed.buf;
	memset(&prog.feed, 0, sizeof(prog.feed));
	/*
	 * The built-in loop runs again, from where it is between packets:
	 * not at the fed program's last IP, which the loop never reaches.
	 */
	prog.ip = IPT_SIM_CODE_LOOP_END;
	prog.ctx_off = false;
	if (pc->bound)
		pc->own = prog;
	else
		ipt_sim_prog_load(&pc->st, &prog);
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return buf;
}

/*
 * Append @count bytes at @kbuf to @f, giving it @nbuf (feed_size bytes)
 * when it has no buffer yet.  Returns @count, or -ENOSPC when they do not
 * fit; then @f is unchanged.  Context: @f's owner's locks held.
 */
static ssize_t ipt_sim_feed_append(struct ipt_sim_feed *f, const u8 *kbuf,
				   size_t count, u8 **nbuf)
{
	if (!f->buf) {
		f->buf = *nbuf;
		*nbuf = NULL;
		f->cap = feed_size;
		f->len = 0;
		f->pos = 0;
	}
	if (f->len + count > f->cap && f->pos) {
		memmove(f->buf, f->buf + f->pos, f->len - f->pos);
		f->len -= f->pos;
		f->pos = 0;
	}
	if (f->len + count > f->cap)
		return -ENOSPC;
	memcpy(f->buf + f->len, kbuf, count);
	f->len += count;
	return count;
}

static int ipt_sim_feed_open(struct inode *inode, struct file *file)
{
	struct ipt_sim_pcpu *pc = inode->i_private;

	file->private_data = pc;
	if (file->f_flags & O_TRUNC) {
		mutex_lock(&ipt_sim_feed_lock);
		kvfree(ipt_sim_feed_detach(pc));
		mutex_unlock(&ipt_sim_feed_lock);
	}
	return nonseekable_open(inode, file);
}

/* Append records to the feed; a write that does not fit fails whole. */
/*
 * A feed buffer for a feed that has none (@has_buf false), unless fault
 * injection says the allocation fails.  Buffers only come and go under
 * ipt_sim_feed_lock, so @has_buf stays true until it is used.
 */
static int ipt_sim_feed_alloc(bool has_buf, u8 **nbuf)
{
	lockdep_assert_held(&ipt_sim_feed_lock);
	*nbuf = NULL;
	if (has_buf)
		return 0;
	if (ipt_sim_fail_alloc) {
		ipt_sim_fail_alloc--;
		return -ENOMEM;
	}
	*nbuf = kvzalloc(feed_size, GFP_KERNEL);
	return *nbuf ? 0 : -ENOMEM;
}

static ssize_t ipt_sim_feed_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	struct ipt_sim_pcpu *pc = file->private_data;
	struct ipt_sim_feed *f;
	unsigned long flags;
	u8 *kbuf, *nbuf;
	ssize_t ret;

	count = min_t(size_t, count, IPT_SIM_WRITE_MAX);
	kbuf = memdup_user(ubuf, count);
	if (IS_ERR(kbuf))
		return PTR_ERR(kbuf);

	mutex_lock(&ipt_sim_feed_lock);
	raw_spin_lock_irqsave(&pc->lock, flags);
	f = pc->bound ? &pc->own.feed : &pc->st.feed;
	ret = !!f->buf;
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	ret = ipt_sim_feed_alloc(ret, &nbuf);
	if (ret)
		goto out_unlock;
	raw_spin_lock_irqsave(&pc->lock, flags);
	f = pc->bound ? &pc->own.feed : &pc->st.feed;
	ret = ipt_sim_feed_append(f, kbuf, count, &nbuf);
	raw_spin_unlock_irqrestore(&pc->lock, flags);
out_unlock:
	mutex_unlock(&ipt_sim_feed_lock);
	kvfree(nbuf);
	kfree(kbuf);
	return ret;
}

static const struct file_operations ipt_sim_feed_fops = {
	.owner = THIS_MODULE,
	.open = ipt_sim_feed_open,
	.write = ipt_sim_feed_write,
	.llseek = no_llseek,
};

/*
 * debugfs "task_feed": the thread that opens it gets a program of its own
 * (struct ipt_sim_task), fed by its writes; O_TRUNC empties it.  Only that
 * thread may write.
 */
static int ipt_sim_task_feed_open(struct inode *inode, struct file *file)
{
	struct ipt_sim_task *slot = NULL, *dead[IPT_SIM_MAX_TASKS];
	struct ipt_sim_pcpu *pc;
	unsigned int i, nr_dead = 0;
	u8 *old = NULL;
	int ret = 0;

	mutex_lock(&ipt_sim_feed_lock);
	raw_spin_lock_irq(&ipt_sim_task_lock);
	/* Slots of threads that exited are freed here, in process context. */
	for (i = 0; i < IPT_SIM_MAX_TASKS; i++)
		if (ipt_sim_tasks[i].task && ipt_sim_tasks[i].dead)
			dead[nr_dead++] = &ipt_sim_tasks[i];
	raw_spin_unlock_irq(&ipt_sim_task_lock);
	for (i = 0; i < nr_dead; i++) {
		kvfree(dead[i]->prog.feed.buf);
		put_task_struct(dead[i]->task);
		raw_spin_lock_irq(&ipt_sim_task_lock);
		memset(dead[i], 0, sizeof(*dead[i]));
		dead[i]->cpu = -1;
		raw_spin_unlock_irq(&ipt_sim_task_lock);
	}

	/* The opener runs here: its program is on this CPU's unit. */
	pc = get_cpu_ptr(ipt_sim_pcpu);
	raw_spin_lock_irq(&pc->lock);
	raw_spin_lock(&ipt_sim_task_lock);
	slot = ipt_sim_task_of(current);
	for (i = 0; !slot && i < IPT_SIM_MAX_TASKS; i++) {
		if (ipt_sim_tasks[i].task)
			continue;
		slot = &ipt_sim_tasks[i];
		slot->task = get_task_struct(current);
		slot->prog.ip = IPT_SIM_CODE_LOOP_END;
		slot->cpu = -1;
	}
	if (!slot) {
		ret = -ENOSPC;
	} else {
		ipt_sim_rebind(pc, slot);
		if (file->f_flags & O_TRUNC) {
			old = pc->st.feed.buf;
			memset(&pc->st.feed, 0, sizeof(pc->st.feed));
			pc->st.ip = IPT_SIM_CODE_LOOP_END;
			pc->st.feed_ctx_off = false;
		}
	}
	raw_spin_unlock(&ipt_sim_task_lock);
	ipt_sim_kick(pc, pc->st.ctl & RTIT_CTL_TRACEEN, pc->st.pmi_pending);
	raw_spin_unlock_irq(&pc->lock);
	put_cpu_ptr(ipt_sim_pcpu);
	mutex_unlock(&ipt_sim_feed_lock);
	kvfree(old);
	if (ret)
		return ret;
	file->private_data = slot;
	return nonseekable_open(inode, file);
}

static ssize_t ipt_sim_task_feed_write(struct file *file,
				       const char __user *ubuf, size_t count,
				       loff_t *ppos)
{
	struct ipt_sim_task *slot = file->private_data;
	struct ipt_sim_pcpu *pc;
	u8 *kbuf, *nbuf;
	ssize_t ret;

	if (slot->task != current)
		return -EPERM;
	count = min_t(size_t, count, IPT_SIM_WRITE_MAX);
	kbuf = memdup_user(ubuf, count);
	if (IS_ERR(kbuf))
		return PTR_ERR(kbuf);
	mutex_lock(&ipt_sim_feed_lock);
	pc = get_cpu_ptr(ipt_sim_pcpu);
	raw_spin_lock_irq(&pc->lock);
	ret = pc->bound == slot && pc->st.feed.buf;
	raw_spin_unlock_irq(&pc->lock);
	put_cpu_ptr(ipt_sim_pcpu);
	ret = ipt_sim_feed_alloc(ret, &nbuf);
	if (ret)
		goto out_unlock;
	pc = get_cpu_ptr(ipt_sim_pcpu);
	raw_spin_lock_irq(&pc->lock);
	raw_spin_lock(&ipt_sim_task_lock);
	/* Bound here since its open or its last switch-in. */
	if (pc->bound == slot)
		ret = ipt_sim_feed_append(&pc->st.feed, kbuf, count, &nbuf);
	else
		ret = -EIO;
	raw_spin_unlock(&ipt_sim_task_lock);
	raw_spin_unlock_irq(&pc->lock);
	put_cpu_ptr(ipt_sim_pcpu);
out_unlock:
	mutex_unlock(&ipt_sim_feed_lock);
	kvfree(nbuf);
	kfree(kbuf);
	return ret;
}

/* Reading says how far the caller's program got: "POS LEN\n" (bytes). */
static ssize_t ipt_sim_task_feed_read(struct file *file, char __user *ubuf,
				      size_t count, loff_t *ppos)
{
	struct ipt_sim_task *slot = file->private_data;
	struct ipt_sim_pcpu *pc;
	size_t pos = 0, len = 0;
	char line[48];
	int n, ret = 0;

	if (slot->task != current)
		return -EPERM;
	pc = get_cpu_ptr(ipt_sim_pcpu);
	raw_spin_lock_irq(&pc->lock);
	if (pc->bound == slot) {
		pos = pc->st.feed.pos;
		len = pc->st.feed.len;
	} else {
		ret = -EIO;
	}
	raw_spin_unlock_irq(&pc->lock);
	put_cpu_ptr(ipt_sim_pcpu);
	if (ret)
		return ret;
	n = scnprintf(line, sizeof(line), "%zu %zu\n", pos, len);
	/* Each read is a fresh answer: the position is the caller's. */
	*ppos = 0;
	return simple_read_from_buffer(ubuf, count, ppos, line, n);
}

static const struct file_operations ipt_sim_task_feed_fops = {
	.owner = THIS_MODULE,
	.open = ipt_sim_task_feed_open,
	.read = ipt_sim_task_feed_read,
	.write = ipt_sim_task_feed_write,
	.llseek = no_llseek,
};

static int ipt_sim_model_show(struct seq_file *m, void *v)
{
	const struct ipt_sim_model *sm = ipt_sim_model;
	struct ipt_cpuid_regs r;

	ipt_sim_cpuid(sm, IPT_CPUID_SIGNATURE, 0, &r);
	seq_printf(m, "%s: %s\nsignature %#x\ncode_base %#llx\ncode_size %zu\n",
		   sm->name, sm->desc, r.eax, IPT_SIM_CODE_BASE,
		   ipt_sim_code_size);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipt_sim_model);

static struct debugfs_blob_wrapper ipt_sim_code_blob;

static void ipt_sim_debugfs_init(void)
{
	char name[16];
	unsigned int cpu;

	ipt_sim_dir = debugfs_create_dir("ipt_sim", NULL);
	debugfs_create_file("model", 0444, ipt_sim_dir, NULL,
			    &ipt_sim_model_fops);
	ipt_sim_code_blob.data = (void *)ipt_sim_code;
	ipt_sim_code_blob.size = ipt_sim_code_size;
	debugfs_create_blob("code", 0444, ipt_sim_dir, &ipt_sim_code_blob);
	debugfs_create_file_unsafe("rate", 0644, ipt_sim_dir, NULL,
				   &ipt_sim_rate_fops);
	debugfs_create_u32("fail_alloc", 0644, ipt_sim_dir,
			   &ipt_sim_fail_alloc);
	debugfs_create_file("task_feed", 0600, ipt_sim_dir, NULL,
			    &ipt_sim_task_feed_fops);
	for_each_possible_cpu(cpu) {
		struct ipt_sim_pcpu *pc = per_cpu_ptr(ipt_sim_pcpu, cpu);
		struct dentry *d;

		snprintf(name, sizeof(name), "cpu%u", cpu);
		d = debugfs_create_dir(name, ipt_sim_dir);
		debugfs_create_file("stats", 0444, d, pc, &ipt_sim_stats_fops);
		debugfs_create_file_unsafe("force_error", 0200, d, pc,
					   &ipt_sim_force_error_fops);
		debugfs_create_file_unsafe("drop", 0200, d, pc,
					   &ipt_sim_drop_fops);
		debugfs_create_file_unsafe("reset", 0200, d, pc,
					   &ipt_sim_reset_fops);
		debugfs_create_file("feed", 0200, d, pc, &ipt_sim_feed_fops);
		debugfs_create_file_unsafe("foreign", 0600, d, pc,
					   &ipt_sim_foreign_fops);
	}
}

/* ---- module ----------------------------------------------------------- */

static const struct ipt_sim_model *ipt_sim_find_model(const char *name)
{
	unsigned int i;

	for (i = 0; i < ipt_sim_nr_models; i++)
		if (sysfs_streq(name, ipt_sim_models[i].name))
			return &ipt_sim_models[i];
	return NULL;
}

/* Context: no hook registered any more, no CPU tracing. */
static void ipt_sim_free(void)
{
	unsigned int cpu, i;

	for_each_possible_cpu(cpu) {
		struct ipt_sim_pcpu *pc = per_cpu_ptr(ipt_sim_pcpu, cpu);

		hrtimer_cancel(&pc->timer);
		if (pc->bound) {
			ipt_sim_prog_save(&pc->st, &pc->bound->prog);
			ipt_sim_prog_load(&pc->st, &pc->own);
		}
		kvfree(pc->st.feed.buf);
	}
	for (i = 0; i < IPT_SIM_MAX_TASKS; i++) {
		if (!ipt_sim_tasks[i].task)
			continue;
		kvfree(ipt_sim_tasks[i].prog.feed.buf);
		put_task_struct(ipt_sim_tasks[i].task);
		memset(&ipt_sim_tasks[i], 0, sizeof(ipt_sim_tasks[i]));
	}
	free_percpu(ipt_sim_pcpu);
}

static int __init ipt_sim_init(void)
{
	unsigned int cpu, i;
	int ret;

	ipt_sim_model = ipt_sim_find_model(model);
	if (!ipt_sim_model) {
		pr_err("unknown model '%s' (see Documentation/simulator.rst)\n",
		       model);
		return -EINVAL;
	}
	if (rate > IPT_SIM_RATE_MAX || period_us < 100 || period_us > 100000 ||
	    feed_size < SZ_4K || feed_size > IPT_SIM_FEED_MAX) {
		pr_err("rate, period_us or feed_size out of range\n");
		return -EINVAL;
	}
	ipt_sim_rate = rate;

	ipt_sim_pcpu = alloc_percpu(struct ipt_sim_pcpu);
	if (!ipt_sim_pcpu)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		struct ipt_sim_pcpu *pc = per_cpu_ptr(ipt_sim_pcpu, cpu);

		raw_spin_lock_init(&pc->lock);
		ipt_sim_cpu_init(&pc->st, ipt_sim_model);
		hrtimer_init(&pc->timer, CLOCK_MONOTONIC,
			     HRTIMER_MODE_REL_PINNED_HARD);
		pc->timer.function = ipt_sim_tick;
		pc->cpu = cpu;
	}
	for (i = 0; i < IPT_SIM_MAX_TASKS; i++)
		ipt_sim_tasks[i].cpu = -1;
	for_each_kernel_tracepoint(ipt_sim_tp_lookup, NULL);
	if (!ipt_sim_tp_switch) {
		pr_err("kernel has no sched_switch tracepoint\n");
		ret = -ENOENT;
		goto err_percpu;
	}
	/* Ahead of ipt.ko's hook, which runs at the default priority. */
	ret = tracepoint_probe_register_prio(ipt_sim_tp_switch,
					     ipt_sim_probe_switch, NULL,
					     TRACEPOINT_DEFAULT_PRIO + 10);
	if (ret)
		goto err_percpu;
	ipt_sim_debugfs_init();

	ret = ipt_hw_register(&ipt_sim_ops);
	if (ret) {
		pr_err("cannot register with ipt: %d\n", ret);
		goto err_free;
	}
	pr_info("simulated PT unit: %s (%s)\n", ipt_sim_model->name,
		ipt_sim_model->desc);
	return 0;

err_free:
	debugfs_remove_recursive(ipt_sim_dir);
	tracepoint_probe_unregister(ipt_sim_tp_switch, ipt_sim_probe_switch,
				    NULL);
	tracepoint_synchronize_unregister();
err_percpu:
	ipt_sim_free();
	return ret;
}

static void __exit ipt_sim_exit(void)
{
	ipt_hw_unregister(&ipt_sim_ops);
	debugfs_remove_recursive(ipt_sim_dir);
	tracepoint_probe_unregister(ipt_sim_tp_switch, ipt_sim_probe_switch,
				    NULL);
	tracepoint_synchronize_unregister();
	ipt_sim_free();
}

module_init(ipt_sim_init);
module_exit(ipt_sim_exit);

MODULE_DESCRIPTION("Simulated Intel PT unit for ipt");
MODULE_AUTHOR("The ipt developers");
MODULE_LICENSE("GPL");

// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: the programs the simulated units run, and their feeds.
 *
 * Each CPU has a program of its own: the built-in loop, or the records a
 * test writes to debugfs cpuN/feed.  A test thread may have one too
 * (debugfs task_feed): the simulator hooks sched_switch ahead of ipt.ko
 * and puts that program on whichever CPU runs the thread, so a trace
 * shows which thread ran where.  The feed record layout is in
 * ipt_sim_feed.h; see "Programs of threads" and "Feed format" in
 * Documentation/simulator.rst.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/lockdep.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>

#include "ipt_sim_module.h"

#define IPT_SIM_WRITE_MAX	SZ_64K

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

u32 ipt_sim_fail_alloc;			/* under ipt_sim_feed_lock */
static DEFINE_MUTEX(ipt_sim_feed_lock);	/* feed writers, fail_alloc */

static struct ipt_sim_task ipt_sim_tasks[IPT_SIM_MAX_TASKS];
static DEFINE_RAW_SPINLOCK(ipt_sim_task_lock);
static struct tracepoint *ipt_sim_tp_switch;

/* ---- programs of threads ---------------------------------------------- */

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

/* ---- feeds ------------------------------------------------------------ */

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
 * Append @count bytes at @kbuf to @f, giving it @nbuf (ipt_sim_feed_size bytes)
 * when it has no buffer yet.  Returns @count, or -ENOSPC when they do not
 * fit; then @f is unchanged.  Context: @f's owner's locks held.
 */
static ssize_t ipt_sim_feed_append(struct ipt_sim_feed *f, const u8 *kbuf,
				   size_t count, u8 **nbuf)
{
	if (!f->buf) {
		f->buf = *nbuf;
		*nbuf = NULL;
		f->cap = ipt_sim_feed_size;
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
	*nbuf = kvzalloc(ipt_sim_feed_size, GFP_KERNEL);
	return *nbuf ? 0 : -ENOMEM;
}

/* Append records to the feed; a write that does not fit fails whole. */
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

/* debugfs cpuN/feed: the CPU's own program; O_TRUNC removes it. */
const struct file_operations ipt_sim_feed_fops = {
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

const struct file_operations ipt_sim_task_feed_fops = {
	.owner = THIS_MODULE,
	.open = ipt_sim_task_feed_open,
	.read = ipt_sim_task_feed_read,
	.write = ipt_sim_task_feed_write,
	.llseek = no_llseek,
};

/* ---- set-up and tear-down --------------------------------------------- */

/**
 * ipt_sim_prog_init() - hook sched_switch for the programs of threads
 *
 * The probe runs ahead of ipt.ko's (a higher tracepoint priority), so the
 * program of the thread switched in is on the unit when ipt.ko restores
 * that thread's trace state.
 *
 * Context: module init, after ipt_sim_pcpu_init().
 *
 * Return: 0, -ENOENT without a sched_switch tracepoint, or the error of
 * registering the probe.
 */
int ipt_sim_prog_init(void)
{
	unsigned int i;

	for (i = 0; i < IPT_SIM_MAX_TASKS; i++)
		ipt_sim_tasks[i].cpu = -1;
	for_each_kernel_tracepoint(ipt_sim_tp_lookup, NULL);
	if (!ipt_sim_tp_switch) {
		pr_err("kernel has no sched_switch tracepoint\n");
		return -ENOENT;
	}
	/* Ahead of ipt.ko's hook, which runs at the default priority. */
	return tracepoint_probe_register_prio(ipt_sim_tp_switch,
					      ipt_sim_probe_switch, NULL,
					      TRACEPOINT_DEFAULT_PRIO + 10);
}

/**
 * ipt_sim_prog_exit() - unhook sched_switch
 *
 * Returns once no probe runs any more.
 *
 * Context: process context, after a successful ipt_sim_prog_init().
 */
void ipt_sim_prog_exit(void)
{
	tracepoint_probe_unregister(ipt_sim_tp_switch, ipt_sim_probe_switch,
				    NULL);
	tracepoint_synchronize_unregister();
}

/**
 * ipt_sim_prog_cpu_free() - free the feed of a CPU's own program
 * @pc: the unit
 *
 * A thread's program on the unit goes back to the thread's slot first,
 * to be freed by ipt_sim_prog_free_tasks().
 *
 * Context: module exit (see ipt_sim_pcpu_free()): nothing else reaches
 * @pc, so no lock is taken.
 */
void ipt_sim_prog_cpu_free(struct ipt_sim_pcpu *pc)
{
	if (pc->bound) {
		ipt_sim_prog_save(&pc->st, &pc->bound->prog);
		ipt_sim_prog_load(&pc->st, &pc->own);
	}
	kvfree(pc->st.feed.buf);
}

/**
 * ipt_sim_prog_free_tasks() - free every thread's program slot
 *
 * Drops the references to the threads and frees their feeds.
 *
 * Context: module exit, after ipt_sim_prog_exit() and
 * ipt_sim_pcpu_free(): nothing else reaches the slots.
 */
void ipt_sim_prog_free_tasks(void)
{
	unsigned int i;

	for (i = 0; i < IPT_SIM_MAX_TASKS; i++) {
		if (!ipt_sim_tasks[i].task)
			continue;
		kvfree(ipt_sim_tasks[i].prog.feed.buf);
		put_task_struct(ipt_sim_tasks[i].task);
		memset(&ipt_sim_tasks[i], 0, sizeof(ipt_sim_tasks[i]));
	}
}

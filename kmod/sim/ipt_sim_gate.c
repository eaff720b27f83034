// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: the allocation gate - the simulated unit's alloc_pause
 * operation (struct ipt_hw_ops), a test hook that parks one
 * IPT_IOC_CONFIGURE in the middle of allocating its buffers until a test
 * lets it go.
 *
 * A configure of many threads or large buffers spends a long time zeroing
 * pages and migrating contiguous ranges.  That must not hold off CPU
 * hotplug or other /dev/ipt callers; a test proves it without timing by
 * parking an allocation here, provably (the state reads "parked"), and
 * calling the others meanwhile.  ipt.ko calls the operation with no lock
 * of its own held and with a reference to this module, so that the
 * module cannot go while a caller sleeps here.  The native backend has no
 * such operation.
 *
 * debugfs ipt_sim/alloc_gate (root only): write "arm" so that the next
 * allocation parks after its first buffer, "open" to let a parked one go
 * (or disarm); read "idle", "armed" or "parked".  A parked caller may
 * also be killed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "ipt_sim_module.h"

enum ipt_sim_gate_state {
	IPT_SIM_GATE_IDLE,
	IPT_SIM_GATE_ARMED,
	IPT_SIM_GATE_PARKED,
	IPT_SIM_GATE_OPEN,
};

static const char *const ipt_sim_gate_names[] = {
	[IPT_SIM_GATE_IDLE] = "idle",
	[IPT_SIM_GATE_ARMED] = "armed",
	[IPT_SIM_GATE_PARKED] = "parked",
	[IPT_SIM_GATE_OPEN] = "parked",
};

/* The gate's state: written under ipt_sim_gate_lock, read with READ_ONCE(). */
static enum ipt_sim_gate_state ipt_sim_gate_state;
static DEFINE_MUTEX(ipt_sim_gate_lock);
static DECLARE_WAIT_QUEUE_HEAD(ipt_sim_gate_wq);

/**
 * ipt_sim_gate_pause() - the alloc_pause operation: park a configure
 *
 * Parks the caller if the gate is armed, until the gate is opened or the
 * caller gets a fatal signal.
 *
 * Context: process context, may sleep; no lock of ipt held (the point of
 * the gate: whatever the caller holds, a test sees it held); the caller
 * holds a reference to this module.
 */
void ipt_sim_gate_pause(void)
{
	if (READ_ONCE(ipt_sim_gate_state) != IPT_SIM_GATE_ARMED)
		return;
	mutex_lock(&ipt_sim_gate_lock);
	if (ipt_sim_gate_state != IPT_SIM_GATE_ARMED) {
		mutex_unlock(&ipt_sim_gate_lock);
		return;
	}
	WRITE_ONCE(ipt_sim_gate_state, IPT_SIM_GATE_PARKED);
	mutex_unlock(&ipt_sim_gate_lock);
	wait_event_killable(ipt_sim_gate_wq,
			    READ_ONCE(ipt_sim_gate_state) == IPT_SIM_GATE_OPEN);
	mutex_lock(&ipt_sim_gate_lock);
	WRITE_ONCE(ipt_sim_gate_state, IPT_SIM_GATE_IDLE);
	mutex_unlock(&ipt_sim_gate_lock);
}

static ssize_t ipt_sim_gate_read(struct file *file, char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	char buf[16];
	int n;

	n = scnprintf(buf, sizeof(buf), "%s\n",
		      ipt_sim_gate_names[READ_ONCE(ipt_sim_gate_state)]);
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static ssize_t ipt_sim_gate_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	char buf[8] = {};
	ssize_t ret = len;

	if (len >= sizeof(buf) || copy_from_user(buf, ubuf, len))
		return -EINVAL;
	mutex_lock(&ipt_sim_gate_lock);
	if (sysfs_streq(buf, "arm")) {
		if (ipt_sim_gate_state == IPT_SIM_GATE_IDLE)
			WRITE_ONCE(ipt_sim_gate_state, IPT_SIM_GATE_ARMED);
	} else if (sysfs_streq(buf, "open")) {
		if (ipt_sim_gate_state == IPT_SIM_GATE_PARKED)
			WRITE_ONCE(ipt_sim_gate_state, IPT_SIM_GATE_OPEN);
		else if (ipt_sim_gate_state == IPT_SIM_GATE_ARMED)
			WRITE_ONCE(ipt_sim_gate_state, IPT_SIM_GATE_IDLE);
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&ipt_sim_gate_lock);
	wake_up_all(&ipt_sim_gate_wq);
	return ret;
}

static const struct file_operations ipt_sim_gate_fops = {
	.owner = THIS_MODULE,
	.read = ipt_sim_gate_read,
	.write = ipt_sim_gate_write,
	.llseek = noop_llseek,
};

/**
 * ipt_sim_gate_debugfs() - create debugfs ipt_sim/alloc_gate
 * @dir: the module's debugfs directory
 *
 * Removed with @dir at module exit, when no caller is parked (each holds
 * a reference to the module).
 *
 * Context: module init.
 */
void ipt_sim_gate_debugfs(struct dentry *dir)
{
	debugfs_create_file("alloc_gate", 0600, dir, NULL, &ipt_sim_gate_fops);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: the allocation gate - a test hook that parks one IPT_IOC_CONFIGURE
 * in the middle of allocating its buffers, until a test lets it go.
 *
 * A configure of many threads or large buffers spends a long time zeroing
 * pages and migrating contiguous ranges.  That must not hold off CPU
 * hotplug or other /dev/ipt callers; a test proves it without timing by
 * parking an allocation here, provably (the state reads "parked"), and
 * calling the others meanwhile.  The gate acts only on a configure that
 * allocates for the simulated unit (IPT_BACKEND_SIM): on silicon it is a
 * READ_ONCE().
 *
 * debugfs ipt/alloc_gate (root only): write "arm" so that the next such
 * allocation parks after its first buffer, "open" to let a parked one go
 * (or disarm); read "idle", "armed" or "parked".  A parked caller may
 * also be killed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "ipt.h"

enum ipt_gate_state {
	IPT_GATE_IDLE,
	IPT_GATE_ARMED,
	IPT_GATE_PARKED,
	IPT_GATE_OPEN,
};

static const char *const ipt_gate_names[] = {
	[IPT_GATE_IDLE] = "idle",
	[IPT_GATE_ARMED] = "armed",
	[IPT_GATE_PARKED] = "parked",
	[IPT_GATE_OPEN] = "parked",
};

/* The gate's state: written under ipt_gate_lock, read with READ_ONCE(). */
static enum ipt_gate_state ipt_gate_state;
static DEFINE_MUTEX(ipt_gate_lock);
static DECLARE_WAIT_QUEUE_HEAD(ipt_gate_wq);
static struct dentry *ipt_gate_file;

/**
 * ipt_gate_alloc() - where a configure's allocation may be parked
 * @backend: the backend the configuration is for
 *
 * Parks the caller if the gate is armed and @backend is the simulated unit,
 * until the gate is opened or the caller gets a fatal signal.
 *
 * Context: process context, may sleep; no lock of ipt held (the point of
 * the gate: whatever the caller holds, a test sees it held).
 */
void ipt_gate_alloc(enum ipt_backend backend)
{
	if (backend != IPT_BACKEND_SIM ||
	    READ_ONCE(ipt_gate_state) != IPT_GATE_ARMED)
		return;
	mutex_lock(&ipt_gate_lock);
	if (ipt_gate_state != IPT_GATE_ARMED) {
		mutex_unlock(&ipt_gate_lock);
		return;
	}
	WRITE_ONCE(ipt_gate_state, IPT_GATE_PARKED);
	mutex_unlock(&ipt_gate_lock);
	wait_event_killable(ipt_gate_wq,
			    READ_ONCE(ipt_gate_state) == IPT_GATE_OPEN);
	mutex_lock(&ipt_gate_lock);
	WRITE_ONCE(ipt_gate_state, IPT_GATE_IDLE);
	mutex_unlock(&ipt_gate_lock);
}

static ssize_t ipt_gate_read(struct file *file, char __user *ubuf, size_t len,
			     loff_t *ppos)
{
	char buf[16];
	int n;

	n = scnprintf(buf, sizeof(buf), "%s\n",
		      ipt_gate_names[READ_ONCE(ipt_gate_state)]);
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static ssize_t ipt_gate_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *ppos)
{
	char buf[8] = {};
	ssize_t ret = len;

	if (len >= sizeof(buf) || copy_from_user(buf, ubuf, len))
		return -EINVAL;
	mutex_lock(&ipt_gate_lock);
	if (sysfs_streq(buf, "arm")) {
		if (ipt_gate_state == IPT_GATE_IDLE)
			WRITE_ONCE(ipt_gate_state, IPT_GATE_ARMED);
	} else if (sysfs_streq(buf, "open")) {
		if (ipt_gate_state == IPT_GATE_PARKED)
			WRITE_ONCE(ipt_gate_state, IPT_GATE_OPEN);
		else if (ipt_gate_state == IPT_GATE_ARMED)
			WRITE_ONCE(ipt_gate_state, IPT_GATE_IDLE);
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&ipt_gate_lock);
	wake_up_all(&ipt_gate_wq);
	return ret;
}

static const struct file_operations ipt_gate_fops = {
	.owner = THIS_MODULE,
	.read = ipt_gate_read,
	.write = ipt_gate_write,
	.llseek = noop_llseek,
};

/**
 * ipt_gate_init() - create debugfs ipt/alloc_gate
 *
 * Context: module init, after ipt_thread_init() made ipt's directory.
 */
void ipt_gate_init(void)
{
	struct dentry *dir = debugfs_lookup("ipt", NULL) ?: ERR_PTR(-ENOENT);

	ipt_gate_file = debugfs_create_file("alloc_gate", 0600, dir, NULL,
					    &ipt_gate_fops);
	if (!IS_ERR(dir))
		dput(dir);
}

/**
 * ipt_gate_exit() - remove it
 *
 * Context: module exit; no configure is running (each holds the file).
 */
void ipt_gate_exit(void)
{
	debugfs_remove(ipt_gate_file);
}

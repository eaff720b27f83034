// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: Intel Processor Trace driver - the /dev/ipt device and its ioctls.
 *
 * See Documentation/design.rst for how the pieces fit and
 * Documentation/abi.rst for the commands.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/fs.h>
#include <linux/lockdep.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "ipt_session.h"

static struct ipt_device ipt_dev = {
	.lock = __MUTEX_INITIALIZER(ipt_dev.lock),
	.sessions = LIST_HEAD_INIT(ipt_dev.sessions),
};

/* ---- the ioctl table --------------------------------------------------- */

/*
 * Flags of struct ipt_ioctl_desc.  Every handler runs under the device
 * lock; these say what else a command needs.
 */
#define IPT_IOCTL_CPUS		BIT(0)	/* the cpus read lock, taken first */
#define IPT_IOCTL_OUT		BIT(1)	/* the argument is copied back out */

/**
 * struct ipt_ioctl_desc - one command: its argument, locks and handlers
 * @key: IPT_IOC_KEY() of the command
 * @size: the kernel's size of the argument struct
 * @min_size: its first published size (_SIZE_VER0)
 * @flags: IPT_IOCTL_CPUS, IPT_IOCTL_OUT
 * @pre: optional; checks of the argument and user memory beyond it, with
 *       no lock held; 0 or a negative errno (then nothing else runs)
 * @func: the command, under the device lock (and the cpus read lock if
 *        @flags says so); what it returns in
 *        the argument is computed here, from state the locks keep (the
 *        copy out happens after they are dropped)
 * @post: optional; with no lock held, after @func whatever it returned
 *        (when @pre succeeded): user memory beyond the argument, freeing
 *        what @pre or @func left in the call; returns the result
 *
 * Locking: immutable.
 */
struct ipt_ioctl_desc {
	unsigned int key;
	u32 size;
	u32 min_size;
	unsigned int flags;
	int (*pre)(struct ipt_ioctl_call *c);
	long (*func)(struct ipt_ioctl_call *c);
	long (*post)(struct ipt_ioctl_call *c, long ret);
};

#define IPT_IOCTL(_cmd, _type, _min, _flags, _pre, _func, _post)	\
	{ .key = IPT_IOC_KEY(_cmd), .size = sizeof(_type),		\
	  .min_size = (_min), .flags = (_flags), .pre = (_pre),		\
	  .func = (_func), .post = (_post) }

/* The largest argument: the kernel copy every command uses. */
union ipt_ioctl_arg {
	struct ipt_caps caps;
	struct ipt_config config;
	struct ipt_cmd cmd;
	struct ipt_trace_state trace;
	struct ipt_attach attach;
	struct ipt_detach detach;
	struct ipt_sessions sessions;
	struct ipt_stream_release stream_release;
	struct ipt_gaps gaps;
};

static int ipt_ioctl_get_caps_pre(struct ipt_ioctl_call *c)
{
	const struct ipt_caps *caps = c->arg;

	return caps->flags ? -EINVAL : 0;
}

/* IPT_IOC_GET_CAPS.  Context: device lock held. */
static long ipt_ioctl_get_caps(struct ipt_ioctl_call *c)
{
	struct ipt_device *idev = c->s->idev;

	lockdep_assert_held(&idev->lock);
	memcpy(c->arg, &idev->caps, sizeof(idev->caps));
	return 0;
}

static const struct ipt_ioctl_desc ipt_ioctls[] = {
	IPT_IOCTL(IPT_IOC_GET_CAPS, struct ipt_caps, IPT_CAPS_SIZE_VER0,
		  IPT_IOCTL_OUT,
		  ipt_ioctl_get_caps_pre, ipt_ioctl_get_caps, NULL),
	IPT_IOCTL(IPT_IOC_CONFIGURE, struct ipt_config, IPT_CONFIG_SIZE_VER0,
		  IPT_IOCTL_CPUS,
		  ipt_ioctl_configure_pre, ipt_ioctl_configure,
		  ipt_ioctl_configure_post),
	IPT_IOCTL(IPT_IOC_START, struct ipt_cmd, IPT_CMD_SIZE_VER0,
		  IPT_IOCTL_CPUS,
		  ipt_ioctl_cmd_pre, ipt_ioctl_start, NULL),
	IPT_IOCTL(IPT_IOC_STOP, struct ipt_cmd, IPT_CMD_SIZE_VER0,
		  IPT_IOCTL_CPUS,
		  ipt_ioctl_cmd_pre, ipt_ioctl_stop, NULL),
	IPT_IOCTL(IPT_IOC_GET_TRACE, struct ipt_trace_state,
		  IPT_TRACE_STATE_SIZE_VER0, IPT_IOCTL_OUT,
		  ipt_ioctl_get_trace_pre, ipt_ioctl_get_trace,
		  ipt_ioctl_get_trace_post),
	IPT_IOCTL(IPT_IOC_RELEASE, struct ipt_cmd, IPT_CMD_SIZE_VER0,
		  IPT_IOCTL_CPUS,
		  ipt_ioctl_cmd_pre, ipt_ioctl_release, NULL),
	IPT_IOCTL(IPT_IOC_ATTACH, struct ipt_attach, IPT_ATTACH_SIZE_VER0,
		  IPT_IOCTL_CPUS | IPT_IOCTL_OUT,
		  ipt_ioctl_attach_pre, ipt_ioctl_attach,
		  ipt_ioctl_attach_post),
	IPT_IOCTL(IPT_IOC_DETACH, struct ipt_detach, IPT_DETACH_SIZE_VER0,
		  IPT_IOCTL_CPUS,
		  ipt_ioctl_detach_pre, ipt_ioctl_detach, NULL),
	IPT_IOCTL(IPT_IOC_LIST_SESSIONS, struct ipt_sessions,
		  IPT_SESSIONS_SIZE_VER0, IPT_IOCTL_OUT,
		  ipt_ioctl_list_pre, ipt_ioctl_list, ipt_ioctl_list_post),
	IPT_IOCTL(IPT_IOC_STREAM_RELEASE, struct ipt_stream_release,
		  IPT_STREAM_RELEASE_SIZE_VER0, IPT_IOCTL_CPUS,
		  ipt_ioctl_stream_release_pre, ipt_ioctl_stream_release, NULL),
	IPT_IOCTL(IPT_IOC_GET_GAPS, struct ipt_gaps, IPT_GAPS_SIZE_VER0,
		  IPT_IOCTL_OUT,
		  ipt_ioctl_get_gaps_pre, ipt_ioctl_get_gaps,
		  ipt_ioctl_get_gaps_post),
};

/*
 * Commands are matched on type, number and direction, not size: the
 * argument carries its own (ipt_arg_in()).  The argument is copied in,
 * checked (pre), the command runs under the device lock (and the cpus
 * read lock where it declares it), then post,
 * then the argument is copied out.
 */
static long ipt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	const struct ipt_ioctl_desc *d = NULL;
	union ipt_ioctl_arg karg;
	struct ipt_ioctl_call c = {
		.s = file->private_data,
		.arg = &karg,
		.uarg = (void __user *)arg,
	};
	struct mutex *lock = &c.s->idev->lock;
	unsigned int i;
	long ret;
	u32 usize;

	for (i = 0; i < ARRAY_SIZE(ipt_ioctls); i++) {
		if (ipt_ioctls[i].key == IPT_IOC_KEY(cmd)) {
			d = &ipt_ioctls[i];
			break;
		}
	}
	if (!d)
		return -ENOTTY;
	ret = ipt_arg_in(&karg, d->size, d->min_size, c.uarg);
	if (ret)
		return ret;
	usize = *(u32 *)&karg;
	if (d->pre) {
		ret = d->pre(&c);
		if (ret)
			return ret;
	}
	if (d->flags & IPT_IOCTL_CPUS)
		ipt_cpus_read_lock();
	mutex_lock(lock);
	ret = d->func(&c);
	mutex_unlock(lock);
	if (d->flags & IPT_IOCTL_CPUS)
		ipt_cpus_read_unlock();
	if (d->post)
		ret = d->post(&c, ret);
	if (!ret && (d->flags & IPT_IOCTL_OUT))
		ret = ipt_arg_out(c.uarg, usize, &karg, d->size);
	return ret;
}

static int ipt_open(struct inode *inode, struct file *file)
{
	struct ipt_session *s;
	int ret;

	/*
	 * The node's mode decides who opens it; what a trace may show is
	 * checked per command (per-CPU mode, kernel tracing and other
	 * processes' threads need CAP_PERFMON or CAP_SYS_ADMIN).
	 */
	ret = nonseekable_open(inode, file);
	if (ret)
		return ret;
	s = ipt_session_new(&ipt_dev);
	if (!s)
		return -ENOMEM;
	file->private_data = s;
	return 0;
}

static int ipt_release(struct inode *inode, struct file *file)
{
	ipt_session_close(file->private_data);
	return 0;
}

static int ipt_mmap(struct file *file, struct vm_area_struct *vma)
{
	return ipt_session_mmap(file->private_data, vma);
}

static __poll_t ipt_poll(struct file *file, poll_table *wait)
{
	return ipt_session_poll(file->private_data, file, wait);
}

static const struct file_operations ipt_fops = {
	.owner = THIS_MODULE,
	.open = ipt_open,
	.release = ipt_release,
	.mmap = ipt_mmap,
	.poll = ipt_poll,
	.unlocked_ioctl = ipt_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

/**
 * ipt_select_backend() - find the PT unit to drive, at load time
 * @idev: the device; its @hw and @caps are set
 *
 * Context: takes and releases @idev->lock.
 */
static void ipt_select_backend(struct ipt_device *idev)
{
	ipt_hw_attach(idev);
	mutex_lock(&idev->lock);
	ipt_hw_select_locked(idev);
	mutex_unlock(&idev->lock);
}

static int __init ipt_init(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct ipt_caps) != IPT_CAPS_SIZE_VER2);
	BUILD_BUG_ON(sizeof(struct ipt_config) != IPT_CONFIG_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_cmd) != IPT_CMD_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_trace_state) != IPT_TRACE_STATE_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct ipt_addr_range) != 24);
	BUILD_BUG_ON(sizeof(struct ipt_attach) != IPT_ATTACH_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_detach) != IPT_DETACH_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_stream_release) !=
		     IPT_STREAM_RELEASE_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_gaps) != IPT_GAPS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_gap) != IPT_GAP_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_sessions) != IPT_SESSIONS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_session_info) !=
		     IPT_SESSION_INFO_SIZE_VER0);

	ret = ipt_thread_init();
	if (ret)
		return ret;
	ipt_gate_init();
	ipt_select_backend(&ipt_dev);
	ret = ipt_session_init(&ipt_dev);
	if (ret) {
		pr_err("cannot register for CPU hotplug: %d\n", ret);
		goto err_thread;
	}

	ret = ipt_life_init(&ipt_dev);
	if (ret) {
		pr_err("cannot register the reboot / PM notifiers: %d\n", ret);
		ipt_session_exit();
		goto err_thread;
	}

	ipt_dev.misc.minor = MISC_DYNAMIC_MINOR;
	ipt_dev.misc.name = "ipt";
	ipt_dev.misc.fops = &ipt_fops;
	ipt_dev.misc.mode = 0600;
	ret = misc_register(&ipt_dev.misc);
	if (ret) {
		pr_err("cannot register /dev/ipt: %d\n", ret);
		ipt_life_exit();
		ipt_session_exit();
		goto err_thread;
	}
	return 0;

err_thread:
	ipt_hw_detach(&ipt_dev);
	ipt_gate_exit();
	ipt_thread_exit();
	return ret;
}

static void __exit ipt_exit(void)
{
	misc_deregister(&ipt_dev.misc);
	ipt_life_exit();
	ipt_session_exit();
	ipt_hw_detach(&ipt_dev);
	ipt_gate_exit();
	ipt_thread_exit();
	ipt_account_exit();
}

module_init(ipt_init);
module_exit(ipt_exit);

MODULE_DESCRIPTION("Intel Processor Trace driver");
MODULE_AUTHOR("The ipt developers");
MODULE_LICENSE("GPL");

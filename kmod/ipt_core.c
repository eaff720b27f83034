// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: Intel Processor Trace driver - the /dev/ipt device and its ioctls.
 *
 * See Documentation/design.rst for how the pieces fit and
 * Documentation/abi.rst for the commands.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/uaccess.h>

#include "ipt_session.h"

static struct ipt_device ipt_dev = {
	.lock = __MUTEX_INITIALIZER(ipt_dev.lock),
};

static long ipt_ioctl_get_caps(struct ipt_device *idev, void __user *uarg)
{
	struct ipt_caps caps;
	u32 usize;
	int ret;

	ret = ipt_arg_in(&caps, sizeof(caps), IPT_CAPS_SIZE_VER0, uarg);
	if (ret)
		return ret;
	if (caps.flags)
		return -EINVAL;
	usize = caps.size;

	mutex_lock(&idev->lock);
	caps = idev->caps;
	mutex_unlock(&idev->lock);

	return ipt_arg_out(uarg, usize, &caps, sizeof(caps));
}

static long ipt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct ipt_device *idev = &ipt_dev;
	void __user *uarg = (void __user *)arg;

	switch (IPT_IOC_KEY(cmd)) {
	case IPT_IOC_KEY(IPT_IOC_GET_CAPS):
		return ipt_ioctl_get_caps(idev, uarg);
	default:
		return ipt_session_ioctl(file->private_data, IPT_IOC_KEY(cmd),
					 uarg);
	}
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

static const struct file_operations ipt_fops = {
	.owner = THIS_MODULE,
	.open = ipt_open,
	.release = ipt_release,
	.mmap = ipt_mmap,
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

	BUILD_BUG_ON(sizeof(struct ipt_caps) != IPT_CAPS_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct ipt_config) != IPT_CONFIG_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_cmd) != IPT_CMD_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_trace_state) != IPT_TRACE_STATE_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_addr_range) != 24);
	BUILD_BUG_ON(sizeof(struct ipt_attach) != IPT_ATTACH_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct ipt_detach) != IPT_DETACH_SIZE_VER0);

	ret = ipt_thread_init();
	if (ret)
		return ret;
	ipt_select_backend(&ipt_dev);
	ret = ipt_session_init(&ipt_dev);
	if (ret) {
		pr_err("cannot register for CPU hotplug: %d\n", ret);
		goto err_thread;
	}

	ipt_dev.misc.minor = MISC_DYNAMIC_MINOR;
	ipt_dev.misc.name = "ipt";
	ipt_dev.misc.fops = &ipt_fops;
	ipt_dev.misc.mode = 0600;
	ret = misc_register(&ipt_dev.misc);
	if (ret) {
		pr_err("cannot register /dev/ipt: %d\n", ret);
		ipt_session_exit();
		goto err_thread;
	}
	return 0;

err_thread:
	ipt_hw_detach(&ipt_dev);
	ipt_thread_exit();
	return ret;
}

static void __exit ipt_exit(void)
{
	misc_deregister(&ipt_dev.misc);
	ipt_session_exit();
	ipt_hw_detach(&ipt_dev);
	ipt_thread_exit();
}

module_init(ipt_init);
module_exit(ipt_exit);

MODULE_DESCRIPTION("Intel Processor Trace driver");
MODULE_AUTHOR("The ipt developers");
MODULE_LICENSE("GPL");

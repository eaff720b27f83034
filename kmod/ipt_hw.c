// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: choosing the backend that runs the PT unit.
 *
 * At load, ipt.ko probes the native backend.  A separate module (ipt_sim,
 * the simulated PT unit) may then register itself with ipt_hw_register(),
 * in the way dummy_stm registers with the STM core or netdevsim with the
 * network stack: ipt.ko re-probes the capabilities through it and drives
 * it exactly as it would drive the CPU's unit.  ipt_hw_unregister() goes
 * back to the native probe result.  Since the registering module links
 * against ipt.ko, ipt.ko cannot be unloaded while a backend is registered.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/mutex.h>

#include "ipt.h"

/* The device backends register with; set while ipt.ko is loaded. */
static struct ipt_device *ipt_hw_dev;

/**
 * ipt_hw_attach() - make @idev the device that backends register with
 * @idev: the /dev/ipt instance
 *
 * Context: module init, before any backend can register.
 */
void ipt_hw_attach(struct ipt_device *idev)
{
	ipt_hw_dev = idev;
}

/**
 * ipt_hw_detach() - undo ipt_hw_attach()
 * @idev: the /dev/ipt instance
 *
 * Context: module exit or failed init; no backend is registered then,
 * because a registered backend's module holds a reference to ipt.ko.
 */
void ipt_hw_detach(struct ipt_device *idev)
{
	WARN_ON_ONCE(idev->registered);
	ipt_hw_dev = NULL;
}

/**
 * ipt_hw_select_locked() - probe the current backend and publish its caps
 * @idev: the device
 *
 * The current backend is @idev->registered when set, else the native one.
 * Sets @idev->hw (NULL when the backend has no usable PT unit) and
 * @idev->caps, and says in the kernel log what was found.
 *
 * Context: process context; @idev->lock must be held.
 */
void ipt_hw_select_locked(struct ipt_device *idev)
{
	const struct ipt_hw_ops *ops = idev->registered ?: &ipt_hw_native_ops;
	enum ipt_unavail why;

	lockdep_assert_held(&idev->lock);

	why = ipt_caps_probe(ops, &idev->caps);
	idev->hw = why == IPT_UNAVAIL_NONE ? ops : NULL;
	/*
	 * Sessions need ToPA output (Documentation/design.rst).  Where a
	 * table holds one output entry, a trace is one contiguous region.
	 */
	if (idev->hw && (idev->caps.features & IPT_FEAT_TOPA))
		ipt_config_limits(&idev->caps);

	if (why != IPT_UNAVAIL_NONE)
		pr_info("no Intel PT on this CPU (%s %u/%u/%u): %s; /dev/ipt reports capabilities only\n",
			idev->caps.vendor, idev->caps.family, idev->caps.model,
			idev->caps.stepping, ipt_unavail_str(why));
	else
		pr_info("Intel PT on %s %u/%u/%u, %s backend\n",
			idev->caps.vendor, idev->caps.family, idev->caps.model,
			idev->caps.stepping, ops->name);
}

/**
 * ipt_hw_cpu_update_locked() - a CPU came online or goes offline
 * @idev: the device, with a usable backend
 * @cpu: the CPU
 * @online: it came online, else it goes offline
 *
 * The capabilities stay the intersection of the online CPUs' (hybrid
 * parts, ipt_caps_cpu_update()) and the limits follow them.
 *
 * Context: CPU hotplug callback; @idev->lock must be held.
 */
void ipt_hw_cpu_update_locked(struct ipt_device *idev, unsigned int cpu,
			      bool online)
{
	lockdep_assert_held(&idev->lock);
	ipt_caps_cpu_update(idev->hw, &idev->caps, cpu, online);
	if (idev->caps.features & IPT_FEAT_TOPA)
		ipt_config_limits(&idev->caps);
}

/*
 * ipt_hw_in_use() - whether anything holds the current backend.
 * This is the hook for sessions: they count themselves in @idev->users
 * (with @idev->lock held) and the backend cannot change under them.
 */
static bool ipt_hw_in_use(struct ipt_device *idev)
{
	lockdep_assert_held(&idev->lock);
	return idev->users != 0;
}

/**
 * ipt_hw_register() - replace the native backend by another one
 * @ops: the backend; must stay valid until ipt_hw_unregister(@ops)
 *
 * Probes @ops with the same code as the native backend; IPT_IOC_GET_CAPS
 * then reports what @ops enumerates.  Only one backend can be registered.
 *
 * Context: process context; takes the device lock.
 * Return: 0; -ENODEV if ipt.ko has no device, -EBUSY if another backend
 * is registered or the unit is in use, -EINVAL if @ops lacks an operation,
 * -ENXIO if the probe through @ops finds no usable PT unit.
 */
int ipt_hw_register(const struct ipt_hw_ops *ops)
{
	struct ipt_device *idev = ipt_hw_dev;
	int ret = 0;

	if (!idev)
		return -ENODEV;
	if (!ops->cpuid || !ops->read_msr || !ops->write_msr ||
	    !ops->xsaves || !ops->xrstors || !ops->pmi_request ||
	    !ops->pmi_release || !ops->pmi_unmask)
		return -EINVAL;

	mutex_lock(&idev->lock);
	if (idev->registered || ipt_hw_in_use(idev)) {
		ret = -EBUSY;
		goto out_unlock;
	}
	idev->registered = ops;
	ipt_hw_select_locked(idev);
	if (!idev->hw) {
		idev->registered = NULL;
		ipt_hw_select_locked(idev);
		ret = -ENXIO;
	}
out_unlock:
	mutex_unlock(&idev->lock);
	return ret;
}
EXPORT_SYMBOL_GPL(ipt_hw_register);

/**
 * ipt_hw_unregister() - go back to the native backend
 * @ops: the backend passed to ipt_hw_register()
 *
 * Users of the unit hold a reference to @ops->owner, so none remain when
 * the owner's module exit calls this.
 *
 * Context: process context; takes the device lock.
 */
void ipt_hw_unregister(const struct ipt_hw_ops *ops)
{
	struct ipt_device *idev = ipt_hw_dev;

	if (WARN_ON_ONCE(!idev))
		return;

	mutex_lock(&idev->lock);
	if (!WARN_ON_ONCE(idev->registered != ops || ipt_hw_in_use(idev))) {
		idev->registered = NULL;
		ipt_hw_select_locked(idev);
	}
	mutex_unlock(&idev->lock);
}
EXPORT_SYMBOL_GPL(ipt_hw_unregister);

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipt: internal interfaces shared by the files of ipt.ko.
 */
#ifndef _IPT_H
#define _IPT_H

#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <uapi/linux/ipt.h>

#include "ipt_hw.h"

/**
 * struct ipt_device - the one /dev/ipt instance
 * @misc: the registered misc device
 * @lock: serialises every command and protects @hw and @caps
 * @hw: the backend that runs the PT unit, or NULL when there is none
 * @caps: what @hw can do, as reported by IPT_IOC_GET_CAPS; when @hw is
 *        NULL it still names the CPU and says why PT is unavailable
 * @registered: the backend registered with ipt_hw_register() (the
 *        simulator), which replaces the native one while it is set
 * @users: number of users of @hw (sessions); the backend may change only
 *        while it is 0
 *
 * Locking: @hw, @caps, @registered and @users are written only with @lock
 * held and read under it by the ioctl paths.
 */
struct ipt_device {
	struct miscdevice misc;
	struct mutex lock;	/* see Locking above */
	const struct ipt_hw_ops *hw;
	struct ipt_caps caps;
	const struct ipt_hw_ops *registered;
	unsigned int users;
};

/* ipt_caps.c */
const char *ipt_unavail_str(enum ipt_unavail why);
enum ipt_unavail ipt_caps_probe(const struct ipt_hw_ops *hw,
				struct ipt_caps *caps);
#if IS_ENABLED(CONFIG_KUNIT)
void ipt_caps_signature(u32 eax, struct ipt_caps *caps);
#endif

/* ipt_hw.c */
void ipt_hw_attach(struct ipt_device *idev);
void ipt_hw_detach(struct ipt_device *idev);
void ipt_hw_select_locked(struct ipt_device *idev);

/* ipt_uaccess.c */
int ipt_arg_in(void *karg, size_t ksize, size_t min_size,
	       const void __user *uarg);
int ipt_arg_out(void __user *uarg, u32 usize, void *karg, size_t ksize);

#endif /* _IPT_H */

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
 *
 * Locking: @hw and @caps are written only with @lock held and read under
 * it by the ioctl paths.
 */
struct ipt_device {
	struct miscdevice misc;
	struct mutex lock;	/* see Locking above */
	const struct ipt_hw_ops *hw;
	struct ipt_caps caps;
};

/* ipt_caps.c */
const char *ipt_unavail_str(enum ipt_unavail why);
enum ipt_unavail ipt_caps_probe(const struct ipt_hw_ops *hw,
				struct ipt_caps *caps);
#if IS_ENABLED(CONFIG_KUNIT)
void ipt_caps_signature(u32 eax, struct ipt_caps *caps);
#endif

/* ipt_uaccess.c */
int ipt_arg_in(void *karg, size_t ksize, size_t min_size,
	       const void __user *uarg);
int ipt_arg_out(void __user *uarg, u32 usize, void *karg, size_t ksize);

#endif /* _IPT_H */

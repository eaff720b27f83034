// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: copying size-first extensible ioctl arguments to and from userspace.
 *
 * Every ipt ioctl argument starts with a __u32 size.  The rules (see
 * uapi/linux/ipt.h) are enforced here, in one place.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/uaccess.h>

#include "ipt.h"

/**
 * ipt_arg_in() - copy a size-first ioctl argument into the kernel
 * @karg: kernel copy, @ksize bytes; fully written on success
 * @ksize: the kernel's size of the struct
 * @min_size: the struct's first published size (its _SIZE_VER0)
 * @uarg: the user pointer
 *
 * A smaller user struct is zero-extended; a larger one must have a zero
 * tail.  On success @karg's size member holds the user's size.
 *
 * Return: 0; -EFAULT on a bad pointer; -EINVAL if the user size is below
 * @min_size; -E2BIG if it exceeds a page or has non-zero unknown bytes.
 */
int ipt_arg_in(void *karg, size_t ksize, size_t min_size,
	       const void __user *uarg)
{
	u32 usize;
	int ret;

	if (get_user(usize, (const u32 __user *)uarg))
		return -EFAULT;
	if (usize < min_size)
		return -EINVAL;
	if (usize > PAGE_SIZE)
		return -E2BIG;
	ret = copy_struct_from_user(karg, ksize, uarg, usize);
	if (ret)
		return ret;
	/* Userspace may have changed it between the two reads. */
	*(u32 *)karg = usize;
	return 0;
}

/**
 * ipt_arg_out() - copy a size-first ioctl result back to userspace
 * @uarg: the user pointer, @usize bytes
 * @usize: the user's size, as validated by ipt_arg_in()
 * @karg: the kernel struct; its size member is set to @ksize
 * @ksize: the kernel's size of the struct
 *
 * Copies min(@usize, @ksize) bytes and zeroes the rest of a larger user
 * struct, so that no byte the kernel did not define reaches userspace.
 *
 * Return: 0 or -EFAULT.
 */
int ipt_arg_out(void __user *uarg, u32 usize, void *karg, size_t ksize)
{
	*(u32 *)karg = ksize;
	if (copy_to_user(uarg, karg, min_t(size_t, usize, ksize)))
		return -EFAULT;
	if (usize > ksize && clear_user(uarg + ksize, usize - ksize))
		return -EFAULT;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: IPT_IOC_LIST_SESSIONS - who holds the PT unit.
 *
 * Several per-thread sessions, or one per-CPU session, may hold the unit
 * (ipt_session.c); a configure that one of them excludes fails with
 * EBUSY.  This command lists the configured sessions: mode, state, the
 * real uid and process that configured each, its traces and threads.
 * A caller with CAP_PERFMON or CAP_SYS_ADMIN sees every session, any
 * other caller only the sessions its real uid configured: nothing about
 * other users' tracing is shown to it.
 *
 * See Documentation/abi.rst ("IPT_IOC_LIST_SESSIONS").
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/uidgid.h>

#include "ipt_session.h"

/**
 * ipt_ioctl_list_pre() - IPT_IOC_LIST_SESSIONS's checks of the argument
 * @c: the call; @c->privileged is set
 *
 * Context: process context, no lock held.
 * Return: 0; -EINVAL (flags, reserved or output fields set, an entry size
 * below IPT_SESSION_INFO_SIZE_VER0, entries without an address); -E2BIG
 * (an entry size above a page).
 */
int ipt_ioctl_list_pre(struct ipt_ioctl_call *c)
{
	const struct ipt_sessions *l = c->arg;

	if (l->flags || l->total || l->reserved0 ||
	    memchr_inv(l->reserved, 0, sizeof(l->reserved)) ||
	    l->entry_size < IPT_SESSION_INFO_SIZE_VER0 ||
	    (l->nr_entries && !l->entries_ptr))
		return -EINVAL;
	if (l->entry_size > PAGE_SIZE)
		return -E2BIG;
	c->privileged = perfmon_capable();
	return 0;
}

/* Whether the caller of @c may see @s.  Context: device lock held. */
static bool ipt_list_visible(const struct ipt_ioctl_call *c,
			     const struct ipt_session *s)
{
	lockdep_assert_held(&s->idev->lock);
	return c->privileged || uid_eq(s->uid, current_uid());
}

static void ipt_list_fill(const struct ipt_ioctl_call *c,
			  const struct ipt_session *s,
			  struct ipt_session_info *e)
{
	lockdep_assert_held(&s->idev->lock);
	memset(e, 0, sizeof(*e));
	e->mode = s->mode;
	e->state = s->state;
	e->uid = from_kuid_munged(current_user_ns(), s->uid);
	e->pid = pid_vnr(s->pid);
	e->nr_traces = s->nr_traces;
	if (s->mode == IPT_MODE_THREAD) {
		/* Pairs with the release that publishes a handed-out trace. */
		e->nr_threads = smp_load_acquire(&s->nr_used);
	}
	if (s == c->s)
		e->flags |= IPT_SESSION_THIS;
	if (s->hwcfg.ctl & RTIT_CTL_OS)
		e->flags |= IPT_SESSION_KERNEL;
}

/**
 * ipt_ioctl_list() - IPT_IOC_LIST_SESSIONS: the sessions the caller may see
 * @c: the call, checked by ipt_ioctl_list_pre(); on success @c->data
 *     holds the entries for ipt_ioctl_list_post() to copy out, and the
 *     argument's total and nr_entries are set
 *
 * The entries are gathered under the device lock, at most as many as the
 * caller has room for and as there are sessions (each holds charged
 * buffers, so their number is bounded by memory the users paid for).
 *
 * Context: process context; device lock held.
 * Return: 0 or -ENOMEM.
 */
long ipt_ioctl_list(struct ipt_ioctl_call *c)
{
	struct ipt_device *idev = c->s->idev;
	struct ipt_sessions *l = c->arg;
	struct ipt_session_info *e = NULL;
	struct ipt_session *s;
	u32 total = 0, n = 0;

	lockdep_assert_held(&idev->lock);
	list_for_each_entry(s, &idev->sessions, node)
		total += ipt_list_visible(c, s);
	if (l->nr_entries && total) {
		e = kvcalloc(min(l->nr_entries, total), sizeof(*e),
			     GFP_KERNEL_ACCOUNT);
		if (!e)
			return -ENOMEM;
		list_for_each_entry(s, &idev->sessions, node) {
			if (n == min(l->nr_entries, total))
				break;
			if (ipt_list_visible(c, s))
				ipt_list_fill(c, s, &e[n++]);
		}
	}
	l->total = total;
	l->nr_entries = n;
	c->data = e;
	c->data_len = n;
	return 0;
}

/**
 * ipt_ioctl_list_post() - copy the entries out, free them
 * @c: the call
 * @ret: the command's result so far
 *
 * Each entry takes the caller's entry_size bytes: the kernel's struct,
 * cut to that size or followed by zeroes.
 *
 * Context: process context, no lock held.
 * Return: @ret, or -EFAULT.
 */
long ipt_ioctl_list_post(struct ipt_ioctl_call *c, long ret)
{
	const struct ipt_sessions *l = c->arg;
	const struct ipt_session_info *e = c->data;
	size_t stride = l->entry_size, len = min(stride, sizeof(*e));
	void __user *u = u64_to_user_ptr(l->entries_ptr);
	u32 i;

	for (i = 0; !ret && i < c->data_len; i++, u += stride) {
		if (copy_to_user(u, &e[i], len) ||
		    (stride > len && clear_user(u + len, stride - len)))
			ret = -EFAULT;
	}
	kvfree(c->data);
	return ret;
}

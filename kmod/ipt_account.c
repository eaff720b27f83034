// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: locked-memory accounting of trace buffers, the way perf accounts
 * its AUX buffers (perf_mmap(), kernel/events/core.c:6415-6504 in Linux
 * 6.1):
 *
 * - each user may pin mlock_kb KiB per online CPU (the module parameter,
 *   perf's kernel.perf_event_mlock_kb) with no other limit;
 * - pages beyond that are charged to the user's user_struct.locked_vm,
 *   the per-user count io_uring charges (__io_account_mem(),
 *   io_uring/rsrc.c:45-63), against RLIMIT_MEMLOCK unless the caller has
 *   CAP_IPC_LOCK, and shown in the configuring mm's pinned_vm (VmPin), as
 *   perf shows them (core.c:6481-6483);
 * - the charge is taken at IPT_IOC_CONFIGURE, before the buffer exists,
 *   and held by the buffer until it is freed: after IPT_IOC_RELEASE and
 *   the last munmap() of it (ipt_mmap.c), against the same user and mm.
 *
 * The pages themselves are charged to the caller's memory cgroup by the
 * allocator (__GFP_ACCOUNT, ipt_buffer.c).  See Documentation/design.rst
 * (Memory accounting) and Documentation/abi.rst (Privilege and accounting).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/resource.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>
#include <kunit/visibility.h>

#include "ipt.h"

/* perf's default: sysctl_perf_event_mlock, kernel/events/core.c:427. */
static unsigned int mlock_kb = 512 + (PAGE_SIZE / 1024);
module_param(mlock_kb, uint, 0644);
MODULE_PARM_DESC(mlock_kb,
		 "KiB of trace buffer per online CPU each user may pin on top of RLIMIT_MEMLOCK, as perf_event_mlock_kb (read at each configure)");

/**
 * struct ipt_account_user - what one user has pinned within the allowance
 * @node: in ipt_account_users
 * @uid: the user
 * @pages: pages charged to the allowance (struct ipt_charge.allow)
 *
 * Locking: under ipt_account_lock; freed when @pages drops to 0.
 */
struct ipt_account_user {
	struct hlist_node node;
	kuid_t uid;
	unsigned long pages;
};

static DEFINE_HASHTABLE(ipt_account_users, 6);
static DEFINE_SPINLOCK(ipt_account_lock);

/**
 * ipt_account_split() - split a charge between the allowance and the rest
 * @used: pages the user has charged to the allowance already
 * @limit: the allowance, in pages
 * @pages: pages to charge
 * @allow: receives the part the allowance takes
 * @extra: receives the rest, for locked_vm and RLIMIT_MEMLOCK
 *
 * perf's arithmetic (core.c:6436-6453): a @used above @limit (the
 * parameter was lowered) counts as @limit.
 */
void ipt_account_split(unsigned long used, unsigned long limit,
		       unsigned long pages, unsigned long *allow,
		       unsigned long *extra)
{
	unsigned long room = limit - min(used, limit);

	*allow = min(pages, room);
	*extra = pages - *allow;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_account_split);

/**
 * ipt_account_fits() - whether @extra more locked pages are allowed
 * @locked: the user's locked_vm, in pages
 * @extra: pages to add
 * @rlim: RLIMIT_MEMLOCK in pages (RLIM_INFINITY >> PAGE_SHIFT: none)
 *
 * Return: true when @locked + @extra <= @rlim, without overflow.
 */
bool ipt_account_fits(unsigned long locked, unsigned long extra,
		      unsigned long rlim)
{
	return locked <= rlim && extra <= rlim - locked;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_account_fits);

/* The allowance in pages: mlock_kb per online CPU, as perf (6431-6436). */
static unsigned long ipt_account_limit(void)
{
	return (unsigned long)(READ_ONCE(mlock_kb) >> (PAGE_SHIFT - 10)) *
	       num_online_cpus();
}

static struct ipt_account_user *ipt_account_find(kuid_t uid)
{
	struct ipt_account_user *u;

	lockdep_assert_held(&ipt_account_lock);
	hash_for_each_possible(ipt_account_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/*
 * Take up to @pages of @uid's allowance; returns the pages taken.  @spare
 * is a zeroed entry the table may keep (set to NULL then).
 */
static unsigned long ipt_account_take(kuid_t uid, unsigned long pages,
				      struct ipt_account_user **spare)
{
	unsigned long allow, extra, limit = ipt_account_limit();
	struct ipt_account_user *u;

	spin_lock(&ipt_account_lock);
	u = ipt_account_find(uid);
	ipt_account_split(u ? u->pages : 0, limit, pages, &allow, &extra);
	if (allow && !u) {
		u = *spare;
		*spare = NULL;
		u->uid = uid;
		hash_add(ipt_account_users, &u->node, __kuid_val(uid));
	}
	if (allow)
		u->pages += allow;
	spin_unlock(&ipt_account_lock);
	return allow;
}

/* Give back @pages of @uid's allowance. */
static void ipt_account_give(kuid_t uid, unsigned long pages)
{
	struct ipt_account_user *u;

	if (!pages)
		return;
	spin_lock(&ipt_account_lock);
	u = ipt_account_find(uid);
	if (WARN_ON_ONCE(!u || u->pages < pages)) {
		spin_unlock(&ipt_account_lock);
		return;
	}
	u->pages -= pages;
	if (!u->pages)
		hash_del(&u->node);
	else
		u = NULL;
	spin_unlock(&ipt_account_lock);
	kfree(u);
}

/**
 * ipt_account_user_pages() - pages a user has charged to the allowance
 * @uid: the user
 *
 * Context: any process context; takes ipt_account_lock.
 * Return: the pages, 0 when the user has none.
 */
unsigned long ipt_account_user_pages(kuid_t uid)
{
	struct ipt_account_user *u;
	unsigned long pages;

	spin_lock(&ipt_account_lock);
	u = ipt_account_find(uid);
	pages = u ? u->pages : 0;
	spin_unlock(&ipt_account_lock);
	return pages;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_account_user_pages);

/* user->locked_vm += @extra within @rlim pages, io_uring's cmpxchg loop. */
static bool ipt_account_lock_pages(struct user_struct *user,
				   unsigned long extra, unsigned long rlim,
				   bool bypass)
{
	unsigned long cur = atomic_long_read(&user->locked_vm);

	do {
		if (!bypass && !ipt_account_fits(cur, extra, rlim))
			return false;
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur, cur + extra));
	return true;
}

/**
 * ipt_account_charge() - charge @pages of trace buffer to the caller
 * @ch: receives the charge; zeroed, or left zeroed on failure
 * @pages: buffer pages
 * @bypass: the caller has CAP_IPC_LOCK: RLIMIT_MEMLOCK does not apply
 *          (the pages are still counted), as in perf (core.c:6457-6465)
 *
 * The allowance first, the rest to current's user_struct.locked_vm
 * against current's RLIMIT_MEMLOCK, shown in current->mm's pinned_vm.
 * The charge keeps a reference to the user and to the mm (mmgrab(): the
 * struct, not the address space) to be given back to by
 * ipt_account_uncharge(), from whichever process that runs in.
 *
 * Context: process context (the IPT_IOC_CONFIGURE caller); may sleep.
 * Return: 0; -EPERM when the rest does not fit RLIMIT_MEMLOCK (perf's
 * errno for it); -ENOMEM.  Nothing charged on error.
 */
int ipt_account_charge(struct ipt_charge *ch, unsigned long pages,
		       bool bypass)
{
	unsigned long rlim = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	struct ipt_account_user *spare;
	struct user_struct *user;
	unsigned long allow;

	might_sleep();
	spare = kzalloc(sizeof(*spare), IPT_GFP_ACCOUNT);
	if (!spare)
		return -ENOMEM;
	user = get_current_user();
	allow = ipt_account_take(user->uid, pages, &spare);
	kfree(spare);
	if (!ipt_account_lock_pages(user, pages - allow, rlim, bypass)) {
		ipt_account_give(user->uid, allow);
		free_uid(user);
		return -EPERM;
	}
	ch->user = user;
	ch->allow = allow;
	ch->extra = pages - allow;
	ch->mm = current->mm;
	if (ch->mm) {
		mmgrab(ch->mm);
		atomic64_add(ch->extra, &ch->mm->pinned_vm);
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_account_charge);

/**
 * ipt_account_uncharge() - give a charge back, once
 * @ch: the charge, or a zeroed one (nothing to do)
 *
 * To the user and mm it was taken from, whichever process this runs in;
 * @ch is zeroed, so a second call does nothing.
 *
 * Context: process context (session release, or the close of the last
 * mapping, under mmap_lock); does not sleep.
 */
void ipt_account_uncharge(struct ipt_charge *ch)
{
	if (!ch->user)
		return;
	ipt_account_give(ch->user->uid, ch->allow);
	atomic_long_sub(ch->extra, &ch->user->locked_vm);
	if (ch->mm) {
		atomic64_sub(ch->extra, &ch->mm->pinned_vm);
		mmdrop(ch->mm);
	}
	free_uid(ch->user);
	memset(ch, 0, sizeof(*ch));
}
EXPORT_SYMBOL_IF_KUNIT(ipt_account_uncharge);

/**
 * ipt_account_exit() - forget the allowance table at module unload
 *
 * Every buffer is freed before ipt.ko can go (a mapping's file holds the
 * module) except those ipt_life_release() leaked because a unit still
 * wrote to them: their charges are never given back, as their memory is
 * never freed, and what they hold of the allowance goes with the table.
 *
 * Context: module exit; no other user of the table is left.
 */
void ipt_account_exit(void)
{
	struct ipt_account_user *u;
	struct hlist_node *tmp;
	unsigned int bkt;

	spin_lock(&ipt_account_lock);
	hash_for_each_safe(ipt_account_users, bkt, tmp, u, node) {
		pr_info("uid %u keeps %lu pages of leaked buffers charged\n",
			from_kuid(&init_user_ns, u->uid), u->pages);
		hash_del(&u->node);
		kfree(u);
	}
	spin_unlock(&ipt_account_lock);
}

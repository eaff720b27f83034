// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: lifecycle - how ipt shares the machine with reboot, kexec, panic
 * and system sleep, and the rule that a buffer is freed only once every
 * unit that wrote to it reads back TraceEn = 0.
 *
 *  - reboot, halt, power-off and kexec: a reboot notifier stops the
 *    session (every CPU) and refuses new starts (-ESHUTDOWN).
 *  - panic: an atomic panic notifier clears TraceEn on the panicking CPU
 *    if ipt enabled it there; no lock, no sleeping, no cross-CPU call.
 *  - suspend, hibernation: a PM notifier stops the session before the
 *    system sleeps (all CPUs online, process context) and starts it again
 *    after; the traces are marked IPT_TS_SUSPENDED (a gap).
 *  - release: before a session's buffers are freed, IA32_RTIT_CTL is read
 *    on every CPU where the session set TraceEn; if one still has it, the
 *    buffers are leaked with a warning instead (debugfs "leaked").
 *
 * See Documentation/design.rst ("Power management, reboot, kexec and
 * panic").
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <kunit/visibility.h>
#include <linux/atomic.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/kmemleak.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/panic_notifier.h>
#include <linux/percpu.h>
#include <linux/reboot.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/suspend.h>
#include <linux/wait.h>

#include "ipt_session.h"

static struct ipt_device *ipt_life_dev;

/*
 * The backend of the configured sessions, for the panic notifier, which
 * takes no lock: set at the first configure and cleared at the last
 * teardown, while the sessions pin the backend's module.
 */
static const struct ipt_hw_ops *ipt_life_hw;

/*
 * ipt set TraceEn on this CPU's unit and has not cleared it since.  Only
 * this CPU writes it, with interrupts off.
 */
static DEFINE_PER_CPU(bool, ipt_life_on);

/*
 * The CPUs where a configured session set TraceEn: the ones whose
 * IA32_RTIT_CTL is read before a session's buffers are freed.  Set by the
 * CPU itself (ipt_life_mark_on()), cleared at the first configure and
 * after the last session's check.
 */
static struct cpumask ipt_life_used;

/* Reboot, halt, power-off or kexec is under way: no more tracing. */
static bool ipt_life_down;
/* A system sleep is under way: the sessions were stopped for it. */
static bool ipt_life_sleeping;

/* Buffers leaked because a unit still had TraceEn at release. */
static atomic64_t ipt_life_leaked_buffers;
static atomic64_t ipt_life_leaked_bytes;
static atomic64_t ipt_life_leaked_sessions;

/* The first leak WARNs (scripts/vm-check-log knows the text), later ones log. */
#define IPT_LIFE_LEAK_FMT \
	"CPU %u still traces after stop: leaking %u buffers (%llu bytes)\n"

static struct dentry *ipt_life_leaked_file, *ipt_life_test_file;

/**
 * ipt_life_mark_on() - ipt has set TraceEn on this CPU's unit
 *
 * Context: interrupts off, on the CPU, right after the enabling write
 * succeeded.
 */
void ipt_life_mark_on(void)
{
	unsigned int cpu = smp_processor_id();

	lockdep_assert_irqs_disabled();
	this_cpu_write(ipt_life_on, true);
	/* A read, not a locked write, once the CPU is in the mask. */
	if (!cpumask_test_cpu(cpu, &ipt_life_used))
		cpumask_set_cpu(cpu, &ipt_life_used);
}

/**
 * ipt_life_mark_off() - ipt has cleared TraceEn on this CPU's unit
 *
 * Context: interrupts off, on the CPU, after the disabling write.
 */
void ipt_life_mark_off(void)
{
	lockdep_assert_irqs_disabled();
	this_cpu_write(ipt_life_on, false);
}

/**
 * ipt_life_on_here() - whether ipt takes this CPU's unit to have TraceEn
 * set by it (marked on, not marked off since)
 *
 * Context: interrupts off, on the CPU.
 * Return: the mark.
 */
bool ipt_life_on_here(void)
{
	lockdep_assert_irqs_disabled();
	return this_cpu_read(ipt_life_on);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_life_on_here);

/**
 * ipt_life_may_start() - whether a session may start tracing now
 *
 * Context: device lock held.
 * Return: 0; -ESHUTDOWN after the reboot notifier ran; -EAGAIN while a
 * system sleep is under way.
 */
int ipt_life_may_start(void)
{
	lockdep_assert_held(&ipt_life_dev->lock);
	if (ipt_life_down)
		return -ESHUTDOWN;
	return ipt_life_sleeping ? -EAGAIN : 0;
}

/**
 * ipt_life_paused() - a system sleep has stopped the session
 *
 * The hotplug callbacks must not start a CPU's trace then (suspend takes
 * the non-boot CPUs down and up again).
 *
 * Context: device lock held.
 * Return: true while traces must stay stopped.
 */
bool ipt_life_paused(void)
{
	lockdep_assert_held(&ipt_life_dev->lock);
	return ipt_life_sleeping || ipt_life_down;
}

/**
 * ipt_life_gap_of() - a system sleep stopped and restarted @s
 * @s: the session
 *
 * Context: device lock held.
 * Return: true if the traces of @s have a gap (IPT_TS_SUSPENDED).
 */
bool ipt_life_gap_of(const struct ipt_session *s)
{
	lockdep_assert_held(&ipt_life_dev->lock);
	return s->life_gap;
}

/**
 * ipt_life_configure() - a session takes the unit
 * @s: the session, configured, not yet among the device's sessions
 *
 * Context: cpus read lock and device lock held.
 */
void ipt_life_configure(struct ipt_session *s)
{
	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&ipt_life_dev->lock);
	s->life_gap = false;
	s->life_paused = false;
	if (!list_empty(&ipt_life_dev->sessions))
		return;
	cpumask_clear(&ipt_life_used);
	WRITE_ONCE(ipt_life_hw, s->hw);
}

/*
 * The result of ipt_life_check_on_cpu(), per CPU: the call runs with
 * interrupts off on that CPU and the caller waits for it.
 */
static DEFINE_PER_CPU(int, ipt_life_err);

/*
 * Cross-CPU call: is TraceEn clear on this CPU, or set for a thread of
 * another session (loaded here, ipt_thread_loaded_session_here())?  err 0
 * if so.
 */
static void ipt_life_check_on_cpu(void *arg)
{
	struct ipt_session *s = arg;
	int *err = this_cpu_ptr(&ipt_life_err);
	const struct ipt_session *other;
	u64 ctl;

	*err = s->hw->read_msr(MSR_IA32_RTIT_CTL, &ctl);
	if (*err || !(ctl & RTIT_CTL_TRACEEN))
		return;
	other = ipt_thread_loaded_session_here();
	if (!other || other == s)
		*err = -EBUSY;
}

/**
 * ipt_life_release() - free a session's buffers only if no unit writes them
 * @s: the session, stopped, its PMI handler released
 *
 * Reads IA32_RTIT_CTL on every online CPU where the session set TraceEn;
 * a CPU that went offline counts as off only if ipt cleared TraceEn
 * there.  If any still has TraceEn (a unit that ignored the stop), every
 * buffer of @s is leaked instead of freed: the first time with a WARN,
 * then with an error line; the count is in debugfs "leaked".  The
 * buffers are then taken out of @s (its trace's @buf NULL), so that
 * freeing the traces leaves them alone.
 *
 * Context: process context; cpus read lock and device lock held.
 * Return: true if the buffers may be freed.
 */
bool ipt_life_release(struct ipt_session *s)
{
	unsigned int cpu, stuck = nr_cpu_ids, i, n = 0;
	u64 bytes = 0;
	bool last;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&ipt_life_dev->lock);
	last = list_is_singular(&ipt_life_dev->sessions);
	if (last)
		WRITE_ONCE(ipt_life_hw, NULL);
	s->life_gap = false;
	s->life_paused = false;
	for_each_cpu(cpu, &ipt_life_used) {
		int err = per_cpu(ipt_life_on, cpu) ? -EBUSY : 0;

		if (cpu_online(cpu)) {
			smp_call_function_single(cpu, ipt_life_check_on_cpu, s, 1);
			err = per_cpu(ipt_life_err, cpu);
		}
		if (err) {
			stuck = cpu;
			break;
		}
	}
	if (stuck >= nr_cpu_ids) {
		if (last)
			cpumask_clear(&ipt_life_used);
		return true;
	}
	for (i = 0; i < s->nr_traces; i++) {
		struct ipt_buffer *buf = s->traces[i].buf;

		if (!buf)
			continue;
		/* Still referenced, on purpose: not a leak for kmemleak. */
		kmemleak_not_leak(buf);
		bytes += buf->size;
		n++;
		s->traces[i].buf = NULL;
	}
	atomic64_add(n, &ipt_life_leaked_buffers);
	atomic64_add(bytes, &ipt_life_leaked_bytes);
	atomic64_inc(&ipt_life_leaked_sessions);
	if (!WARN_ONCE(1, "ipt: " IPT_LIFE_LEAK_FMT, stuck, n, bytes))
		pr_err(IPT_LIFE_LEAK_FMT, stuck, n, bytes);
	return false;
}

/* ---- reboot, halt, power-off, kexec ------------------------------------ */

/*
 * kernel_restart_prepare() (reboot and kexec: kernel/reboot.c:82-88,
 * kernel/kexec_core.c:1178) and kernel_shutdown_prepare() (halt,
 * power-off) call the chain in process context with every CPU online,
 * before device_shutdown() and machine_shutdown().
 */
static int ipt_life_reboot(struct notifier_block *nb, unsigned long action,
			   void *data)
{
	struct ipt_device *idev = ipt_life_dev;
	struct ipt_session *s;

	ipt_cpus_read_lock();
	mutex_lock(&idev->lock);
	ipt_life_down = true;
	list_for_each_entry(s, &idev->sessions, node)
		if (s->state == IPT_STATE_TRACING)
			ipt_session_stop_locked(s);
	mutex_unlock(&idev->lock);
	ipt_cpus_read_unlock();
	return NOTIFY_DONE;
}

static struct notifier_block ipt_life_reboot_nb = {
	.notifier_call = ipt_life_reboot,
};

/* ---- panic --------------------------------------------------------------- */

/**
 * ipt_life_panic_here() - clear TraceEn on this CPU if ipt set it
 *
 * Only the unit ipt enabled (ipt_life_on) is touched, and only TraceEn of
 * it: IA32_RTIT_CTL is read and written back without TraceEn, which is
 * allowed while tracing.  No lock, no sleeping, no cross-CPU call.
 *
 * Context: interrupts off (the panic notifier, or a test).
 */
void ipt_life_panic_here(void)
{
	const struct ipt_hw_ops *hw = READ_ONCE(ipt_life_hw);
	u64 ctl;

	if (!hw || !this_cpu_read(ipt_life_on))
		return;
	if (!hw->read_msr(MSR_IA32_RTIT_CTL, &ctl) &&
	    !hw->write_msr(MSR_IA32_RTIT_CTL, ctl & ~RTIT_CTL_TRACEEN))
		this_cpu_write(ipt_life_on, false);
}

/*
 * panic() runs the chain on the panicking CPU only, interrupts off, after
 * the other CPUs were stopped (kernel/panic.c:360-366); with a crash
 * kernel loaded and crash_kexec_post_notifiers unset, __crash_kexec() runs
 * first and the chain never does (kernel/panic.c:357-358).
 */
static int ipt_life_panic(struct notifier_block *nb, unsigned long action,
			  void *data)
{
	ipt_life_panic_here();
	return NOTIFY_DONE;
}

static struct notifier_block ipt_life_panic_nb = {
	.notifier_call = ipt_life_panic,
};

/* ---- suspend, hibernation ------------------------------------------------ */

/*
 * Before a system sleep (PM_*_PREPARE: process context, every CPU
 * online, tasks not frozen yet; kernel/power/suspend.c:367,
 * hibernate.c:746, 841, 1013), stop the session: the boot CPU's PT MSRs
 * are not restored on resume (arch/x86/power/cpu.c) and the others go
 * through CPU hotplug.  After it (PM_POST_*), start it again from where
 * it stopped, unless someone stopped or released it meanwhile.
 */
static void ipt_life_sleep(bool enter)
{
	struct ipt_device *idev = ipt_life_dev;
	struct ipt_session *s;
	int ret;

	ipt_cpus_read_lock();
	mutex_lock(&idev->lock);
	ipt_life_sleeping = enter;
	list_for_each_entry(s, &idev->sessions, node) {
		if (enter && s->state == IPT_STATE_TRACING) {
			s->mops->stop(s);
			s->life_gap = true;
			s->life_paused = true;
		} else if (!enter && s->life_paused) {
			s->life_paused = false;
			if (s->state != IPT_STATE_TRACING || ipt_life_down)
				continue;
			ret = s->mops->start(s);
			if (ret) {
				pr_warn("cannot restart tracing after resume: %d\n",
					ret);
				s->state = IPT_STATE_STOPPED;
				/* Pollers see the end: EPOLLHUP. */
				wake_up_all(&s->wq);
			}
		}
	}
	mutex_unlock(&idev->lock);
	ipt_cpus_read_unlock();
}

static int ipt_life_pm(struct notifier_block *nb, unsigned long action,
		       void *data)
{
	switch (action) {
	case PM_SUSPEND_PREPARE:
	case PM_HIBERNATION_PREPARE:
	case PM_RESTORE_PREPARE:
		ipt_life_sleep(true);
		break;
	case PM_POST_SUSPEND:
	case PM_POST_HIBERNATION:
	case PM_POST_RESTORE:
		ipt_life_sleep(false);
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block ipt_life_pm_nb = {
	.notifier_call = ipt_life_pm,
};

/* ---- debugfs -------------------------------------------------------------- */

static int ipt_life_leaked_show(struct seq_file *m, void *v)
{
	seq_printf(m, "sessions %lld\nbuffers %lld\nbytes %lld\n",
		   atomic64_read(&ipt_life_leaked_sessions),
		   atomic64_read(&ipt_life_leaked_buffers),
		   atomic64_read(&ipt_life_leaked_bytes));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipt_life_leaked);

/*
 * Test hook (debugfs ipt/life_test, root only), for the paths a test VM
 * cannot take for real:
 *   "panic"  the panic notifier's work on the writer's CPU, interrupts
 *            off, as panic() runs it on the panicking CPU;
 *   "reboot" the reboot notifier, as reboot and kexec run it;
 *   "up"     forget that the reboot notifier ran, so that the VM's later
 *            tests can trace again (only this hook can make that happen);
 *   "suspend", "resume"  the PM notifier's work before and after a system
 *            sleep, for kernels without CONFIG_SUSPEND (the debug kernel).
 */
static ssize_t ipt_life_test_write(struct file *file, const char __user *ubuf,
				   size_t len, loff_t *ppos)
{
	char buf[8] = {};
	unsigned long flags;

	if (len >= sizeof(buf) || copy_from_user(buf, ubuf, len))
		return -EINVAL;
	if (sysfs_streq(buf, "panic")) {
		local_irq_save(flags);
		ipt_life_panic_here();
		local_irq_restore(flags);
	} else if (sysfs_streq(buf, "reboot")) {
		ipt_life_reboot(NULL, SYS_RESTART, NULL);
	} else if (sysfs_streq(buf, "suspend")) {
		ipt_life_sleep(true);
	} else if (sysfs_streq(buf, "resume")) {
		ipt_life_sleep(false);
	} else if (sysfs_streq(buf, "up")) {
		mutex_lock(&ipt_life_dev->lock);
		ipt_life_down = false;
		mutex_unlock(&ipt_life_dev->lock);
	} else {
		return -EINVAL;
	}
	return len;
}

static const struct file_operations ipt_life_test_fops = {
	.owner = THIS_MODULE,
	.write = ipt_life_test_write,
	.llseek = noop_llseek,
};

/* ---- module ---------------------------------------------------------------- */

/**
 * ipt_life_init() - register the reboot, panic and PM notifiers
 * @idev: the device
 *
 * Also creates "leaked" and the test hook "life_test" in ipt's debugfs
 * directory (made by ipt_thread_init()).
 *
 * Context: module init, before /dev/ipt exists.
 * Return: 0 or a negative errno, with nothing registered.
 */
int ipt_life_init(struct ipt_device *idev)
{
	struct dentry *dir;
	int ret;

	ipt_life_dev = idev;
	ret = register_reboot_notifier(&ipt_life_reboot_nb);
	if (ret)
		return ret;
	ret = register_pm_notifier(&ipt_life_pm_nb);
	if (ret) {
		unregister_reboot_notifier(&ipt_life_reboot_nb);
		return ret;
	}
	atomic_notifier_chain_register(&panic_notifier_list, &ipt_life_panic_nb);
	dir = debugfs_lookup("ipt", NULL) ?: ERR_PTR(-ENOENT);
	ipt_life_leaked_file = debugfs_create_file("leaked", 0400, dir, NULL,
						   &ipt_life_leaked_fops);
	ipt_life_test_file = debugfs_create_file("life_test", 0200, dir, NULL,
						 &ipt_life_test_fops);
	if (!IS_ERR(dir))
		dput(dir);
	return 0;
}

/**
 * ipt_life_exit() - undo ipt_life_init()
 *
 * Leaked buffers stay allocated: a unit may still write them.
 *
 * Context: module exit; no session exists.
 */
void ipt_life_exit(void)
{
	debugfs_remove(ipt_life_test_file);
	debugfs_remove(ipt_life_leaked_file);
	atomic_notifier_chain_unregister(&panic_notifier_list,
					 &ipt_life_panic_nb);
	unregister_pm_notifier(&ipt_life_pm_nb);
	unregister_reboot_notifier(&ipt_life_reboot_nb);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: owning the PT unit against perf.
 *
 * perf's intel_pt PMU (arch/x86/events/intel/pt.c) keeps per-task events
 * scheduled out with TraceEn = 0 and caches OUTPUT_BASE, OUTPUT_MASK_PTRS
 * and ADDRn, skipping the WRMSR when its copy says unchanged (pt.c:623-648
 * pt_config_buffer(), 458-497 pt_config_filters()), so "TraceEn is clear"
 * does not mean "the unit is free".  A session therefore holds intel_pt
 * through perf's own in-kernel API: one disabled kernel counter on each
 * CPU it uses, taken all or nothing at IPT_IOC_CONFIGURE and given back at
 * the end of the session.  perf's core then refuses every other intel_pt
 * event on those CPUs (and every per-task one) with EBUSY
 * (kernel/events/core.c:4950-5022, exclusive_event_init() and
 * exclusive_event_installable(); intel_pt is PERF_PMU_CAP_EXCLUSIVE,
 * pt.c:1797), and a hold that perf refuses is the session's EBUSY.
 *
 * The counter is never enabled: an OFF event is never scheduled
 * (core.c:3817-3818), so pt.c never touches an MSR for it.  The values of
 * OUTPUT_BASE, OUTPUT_MASK_PTRS and ADDRn are read when a CPU is taken and
 * written back before it is given up, so pt.c's cache is true again.
 *
 * CPU hotplug: perf removes every event of a CPU going offline from that
 * CPU's context and does not put it back (core.c:13678-13737), so the hold
 * is re-taken when the CPU comes online (ipt's CPUHP_AP_ONLINE_DYN state
 * runs after perf's CPUHP_AP_PERF_ONLINE).
 *
 * See Documentation/design.rst, "Sharing the machine with perf".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/cred.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/kernel_read_file.h>
#include <linux/lockdep.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/smp.h>
#include <linux/string.h>

#include "ipt_session.h"

#define IPT_OWN_PMU		"intel_pt"
#define IPT_OWN_TYPE_PATH	"/sys/bus/event_source/devices/" IPT_OWN_PMU "/type"

/**
 * struct ipt_own_cpu - ipt's hold on one CPU's PT unit
 * @event: the disabled intel_pt kernel counter, or NULL; after the CPU
 *         went offline it is no longer in the CPU's context, but it still
 *         counts against per-task intel_pt events until it is replaced
 * @held: @event is installed on the CPU and the values below were read:
 *        ipt may write this CPU's PT MSRs
 * @base: IA32_RTIT_OUTPUT_BASE when the CPU was taken
 * @mask: IA32_RTIT_OUTPUT_MASK_PTRS, likewise
 * @addr_a: IA32_RTIT_ADDRn_A, likewise (the unit's ranges)
 * @addr_b: IA32_RTIT_ADDRn_B, likewise
 * @err: result of the last cross-CPU call
 *
 * Locking: written with the device lock held and CPU hotplug excluded;
 * @held is also read without a lock by ipt_own_here() on its own CPU.
 */
struct ipt_own_cpu {
	struct perf_event *event;
	bool held;
	u64 base;
	u64 mask;
	u64 addr_a[IPT_MAX_ADDR_RANGES];
	u64 addr_b[IPT_MAX_ADDR_RANGES];
	int err;
};

static DEFINE_PER_CPU(struct ipt_own_cpu, ipt_own_pcpu);

/*
 * A hold is in force (intel_pt exists and a session holds it), its PMU
 * type, the CPUs the sessions use and how many sessions share the hold
 * (per-thread sessions, which all use every CPU; a per-CPU session is
 * alone).  Device lock held; ipt_own_perf is also read by ipt_own_cpu()
 * and ipt_own_here() with READ_ONCE().
 */
static bool ipt_own_perf;
static u32 ipt_own_type;
static struct cpumask ipt_own_cpus;
static unsigned int ipt_own_users;

/**
 * ipt_own_lookup() - the PMU type of perf's intel_pt
 *
 * Linux 6.1 exports no lookup of a PMU by name (pmu_idr is static,
 * kernel/events/core.c:11294), so the type is read where perf publishes
 * it, IPT_OWN_TYPE_PATH, in the initial mount namespace
 * (kernel_read_file_from_path_initns(), fs/kernel_read_file.c:148-172).
 * sysfs files have i_size PAGE_SIZE: a buffer smaller than that reads a
 * prefix without the whole-file size check.
 *
 * Context: process context, may sleep; no lock held (kernfs locks are
 * taken).
 * Return: the type; -ENOENT when there is no intel_pt PMU, another
 * negative errno when it could not be read.
 */
int ipt_own_lookup(void)
{
	char buf[16] = { };
	void *p = buf;
	size_t fsize;
	u32 type;
	int ret;

	ret = kernel_read_file_from_path_initns(IPT_OWN_TYPE_PATH, 0, &p,
						sizeof(buf) - 1, &fsize,
						READING_UNKNOWN);
	if (ret < 0)
		return ret;
	buf[strcspn(buf, "\n")] = '\0';
	ret = kstrtou32(buf, 10, &type);
	if (ret || type > INT_MAX)
		return -EINVAL;
	return type;
}

/* ---- cross-CPU calls: run on the CPU with interrupts off ------------- */

/*
 * Read what pt.c may have cached.  A unit another tracer (not perf)
 * enabled is read all the same: the modes refuse it as before, and the
 * values are written back only if it is off by then.
 */
static void ipt_own_save_on_cpu(void *arg)
{
	const struct ipt_session *s = arg;
	const struct ipt_hw_ops *hw = s->hw;
	struct ipt_own_cpu *oc = this_cpu_ptr(&ipt_own_pcpu);
	/* A hybrid part's core may have fewer ranges than the session. */
	unsigned int i, nr = ipt_caps_cpu_ranges(hw, smp_processor_id(),
						   s->nr_ranges);
	int ret;

	ret = hw->read_msr(MSR_IA32_RTIT_OUTPUT_BASE, &oc->base);
	if (!ret)
		ret = hw->read_msr(MSR_IA32_RTIT_OUTPUT_MASK, &oc->mask);
	for (i = 0; !ret && i < nr; i++) {
		ret = hw->read_msr(IPT_MSR_RTIT_ADDR_A(i), &oc->addr_a[i]);
		if (!ret)
			ret = hw->read_msr(IPT_MSR_RTIT_ADDR_B(i),
					   &oc->addr_b[i]);
	}
	oc->err = ret;
}

/*
 * Write back what ipt_own_save_on_cpu() read, with the unit off (the
 * session stopped it; a TraceEn still set is another tracer's, and its
 * registers are left alone).
 */
static void ipt_own_restore_on_cpu(void *arg)
{
	const struct ipt_session *s = arg;
	const struct ipt_hw_ops *hw = s->hw;
	struct ipt_own_cpu *oc = this_cpu_ptr(&ipt_own_pcpu);
	unsigned int i, nr = ipt_caps_cpu_ranges(hw, smp_processor_id(),
						   s->nr_ranges);
	u64 ctl;
	int ret;

	ret = hw->read_msr(MSR_IA32_RTIT_CTL, &ctl);
	if (!ret && (ctl & RTIT_CTL_TRACEEN))
		ret = -EBUSY;
	if (!ret)
		ret = hw->write_msr(MSR_IA32_RTIT_OUTPUT_BASE, oc->base);
	if (!ret)
		ret = hw->write_msr(MSR_IA32_RTIT_OUTPUT_MASK, oc->mask);
	for (i = 0; !ret && i < nr; i++) {
		ret = hw->write_msr(IPT_MSR_RTIT_ADDR_A(i), oc->addr_a[i]);
		if (!ret)
			ret = hw->write_msr(IPT_MSR_RTIT_ADDR_B(i),
					    oc->addr_b[i]);
	}
	oc->err = ret;
}

/* ---- one CPU ---------------------------------------------------------- */

/*
 * A disabled intel_pt counter on @cpu, with the kernel's credentials: the
 * hold is the driver's, and perf_allow_cpu() (core.c find_get_context())
 * would refuse a CPU-wide event to an unprivileged caller of a per-thread
 * session.  Context: process context; device lock held, hotplug excluded.
 */
static struct perf_event *ipt_own_create(unsigned int cpu)
{
	struct perf_event_attr attr = {
		.type = ipt_own_type,
		.size = sizeof(attr),
		.config = 0,
		.disabled = 1,
	};
	const struct cred *kcred, *old;
	struct perf_event *event;

	kcred = prepare_kernel_cred(NULL);
	if (!kcred)
		return ERR_PTR(-ENOMEM);
	old = override_creds(kcred);
	event = perf_event_create_kernel_counter(&attr, cpu, NULL, NULL, NULL);
	revert_creds(old);
	put_cred(kcred);
	if (IS_ERR(event))
		return event;
	/* The type was read before the lock: it must still be intel_pt. */
	if (strcmp(event->pmu->name, IPT_OWN_PMU)) {
		perf_event_release_kernel(event);
		return ERR_PTR(-EAGAIN);
	}
	return event;
}

/*
 * Take @cpu: the counter, then the MSR values pt.c may have cached.  On
 * success @cpu's event is the new one; an event @cpu had (from before it
 * went offline) is released after the new one is in place, so that
 * per-task intel_pt events stay refused throughout.
 * Context: as ipt_own_create().
 * Return: 0, -EBUSY (perf holds intel_pt there), or another errno of
 * perf_event_create_kernel_counter() or RDMSR.
 */
static int ipt_own_take(struct ipt_session *s, unsigned int cpu)
{
	struct ipt_own_cpu *oc = per_cpu_ptr(&ipt_own_pcpu, cpu);
	struct perf_event *event;

	event = ipt_own_create(cpu);
	if (IS_ERR(event))
		return PTR_ERR(event);
	smp_call_function_single(cpu, ipt_own_save_on_cpu, s, 1);
	if (oc->err) {
		perf_event_release_kernel(event);
		return oc->err;
	}
	if (oc->event)
		perf_event_release_kernel(oc->event);
	oc->event = event;
	WRITE_ONCE(oc->held, true);
	return 0;
}

/* Give @cpu's unit back (values restored if held), keeping the event. */
static void ipt_own_give(struct ipt_session *s, unsigned int cpu)
{
	struct ipt_own_cpu *oc = per_cpu_ptr(&ipt_own_pcpu, cpu);

	if (!oc->held)
		return;
	smp_call_function_single(cpu, ipt_own_restore_on_cpu, s, 1);
	WRITE_ONCE(oc->held, false);
}

static void ipt_own_drop(unsigned int cpu)
{
	struct ipt_own_cpu *oc = per_cpu_ptr(&ipt_own_pcpu, cpu);

	if (oc->event)
		perf_event_release_kernel(oc->event);
	oc->event = NULL;
}

static void ipt_own_refused(unsigned int cpu, int err)
{
	if (err == -EBUSY)
		pr_info_ratelimited("CPU %u: the PT unit is in use by perf (intel_pt): refused\n",
				    cpu);
	else
		pr_info_ratelimited("CPU %u: cannot hold perf's intel_pt: %d\n",
				    cpu, err);
}

/* ---- the session's hold ---------------------------------------------- */

/**
 * ipt_own_acquire() - take the PT unit of every online CPU of @cpus
 * @s: the session, configuring; @s->hw and @s->nr_ranges are set
 * @cpus: the CPUs the session uses (CPUs coming online later are taken
 *        then, ipt_own_cpu_online())
 * @type: ipt_own_lookup()'s answer
 *
 * The hold is shared: a session configured while others hold it (they
 * are per-thread sessions, as @s is: the session state machine lets no
 * other session beside a per-CPU one) counts itself in and takes nothing;
 * the last ipt_own_release() gives it back.  Every session has the same
 * backend and number of ranges (the backend changes only without
 * sessions), so whichever session the hold's calls name reads and writes
 * the same MSRs.
 *
 * With no intel_pt PMU (@type is -ENOENT: no PT, or perf's driver did not
 * register) there is nothing to hold and ipt behaves as it always did,
 * trusting TraceEn alone.  Otherwise all or nothing: the first CPU that
 * cannot be taken releases the ones taken and fails the call.
 *
 * perf_event_create_kernel_counter() sleeps and takes the CPU context's
 * ctx->mutex (core.c:12918), and pt.c's event_init takes
 * pmc_reserve_mutex (arch/x86/events/core.c:433-461).  perf's hotplug
 * callbacks take pmus_lock then ctx->mutex under the hotplug lock held
 * for writing (core.c:13693-13737), so the order here, cpu_hotplug_lock
 * (read) -> ipt_device.lock -> ctx->mutex, agrees with it; nothing of perf
 * calls into ipt, and the hardlockup detector creates its counters from
 * a hotplug callback the same way (kernel/watchdog_hld.c).  The counter
 * is not a task or freq event, so account_event() does not take the
 * hotplug lock again (core.c:11776-11832).
 *
 * Context: process context, sleeps; cpus read lock and device lock held;
 * no raw spinlock.
 * Return: 0; -EBUSY when perf holds intel_pt on one of the CPUs (or has
 * a per-task intel_pt event); another negative errno when intel_pt could
 * not be looked up or held.
 */
int ipt_own_acquire(struct ipt_session *s, const struct cpumask *cpus,
		    int type)
{
	unsigned int cpu;
	int ret = 0;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (ipt_own_users) {
		ipt_own_users++;
		return 0;
	}
	if (type == -ENOENT) {
		ipt_own_users = 1;
		return 0;
	}
	if (type < 0) {
		pr_info_ratelimited("cannot read %s: %d\n", IPT_OWN_TYPE_PATH,
				    type);
		return type;
	}
	ipt_own_type = type;
	cpumask_copy(&ipt_own_cpus, cpus);
	for_each_cpu_and(cpu, cpus, cpu_online_mask) {
		ret = ipt_own_take(s, cpu);
		if (ret) {
			ipt_own_refused(cpu, ret);
			break;
		}
	}
	if (ret) {
		for_each_cpu(cpu, cpus) {
			/* Nothing was written: the values need no restoring. */
			WRITE_ONCE(per_cpu(ipt_own_pcpu.held, cpu), false);
			ipt_own_drop(cpu);
		}
		return ret;
	}
	WRITE_ONCE(ipt_own_perf, true);
	ipt_own_users = 1;
	return 0;
}

/**
 * ipt_own_release() - give the PT unit back to perf
 * @s: the session; every unit it used is off
 *
 * When @s is the last session of the hold: on each CPU still held,
 * OUTPUT_BASE, OUTPUT_MASK_PTRS and ADDRn get back the values read when
 * it was taken (what pt.c's cache holds), then every counter is released.
 * Otherwise @s only counts itself out.
 *
 * Context: process context, sleeps; cpus read lock and device lock held.
 */
void ipt_own_release(struct ipt_session *s)
{
	unsigned int cpu;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (WARN_ON_ONCE(!ipt_own_users) || --ipt_own_users || !ipt_own_perf)
		return;
	for_each_cpu(cpu, &ipt_own_cpus) {
		if (cpu_online(cpu))
			ipt_own_give(s, cpu);
		ipt_own_drop(cpu);
	}
	WRITE_ONCE(ipt_own_perf, false);
}

/**
 * ipt_own_claim() - make sure ipt holds @cpu, taking it if need be
 * @s: a session of the hold
 * @cpu: an online CPU
 *
 * Nothing to do without a hold (no intel_pt), for a CPU the session does
 * not use, or one it holds.  Otherwise (the CPU came online, or perf took
 * it then and IPT_IOC_START asks again) a new counter is created, and the
 * CPU's old one, if any, released after it.
 *
 * Context: process context, sleeps; device lock held, CPU hotplug
 * excluded (cpus read lock or @cpu's hotplug callback).
 * Return: 0 when ipt may write @cpu's PT MSRs; -EBUSY when perf holds
 * intel_pt there (said in one line), or another negative errno.
 */
int ipt_own_claim(struct ipt_session *s, unsigned int cpu)
{
	int ret;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (!ipt_own_perf || !cpumask_test_cpu(cpu, &ipt_own_cpus) ||
	    per_cpu(ipt_own_pcpu.held, cpu))
		return 0;
	ret = ipt_own_take(s, cpu);
	if (ret)
		ipt_own_refused(cpu, ret);
	return ret;
}

/**
 * ipt_own_cpu_online() - re-take @cpu, which came online
 * @s: a session of the hold (called once, for all of them)
 * @cpu: the CPU; the callback runs on it
 *
 * perf dropped the CPU's events when it went offline, so a new counter is
 * created (ipt_own_claim()).  If perf was faster (an intel_pt event
 * installed between perf's online callback and ipt's, or any intel_pt
 * event while the session held no CPU), the CPU stays perf's: ipt does
 * not trace there (ipt_own_cpu()) until a claim succeeds.
 *
 * Context: @cpu's hotplug callback (CPU hotplug excluded), device lock
 * held, before the mode's cpu_online.
 */
void ipt_own_cpu_online(struct ipt_session *s, unsigned int cpu)
{
	ipt_own_claim(s, cpu);
}

/**
 * ipt_own_cpu_offline() - @cpu goes offline: give its unit back
 * @s: a session of the hold (called once, for all of them)
 * @cpu: the CPU; the callback runs on it
 *
 * The values are restored (the mode stopped the unit already); the
 * counter stays until the CPU is back (perf removes it from the CPU's
 * context, but it still refuses per-task intel_pt events meanwhile).
 *
 * Context: @cpu's hotplug callback, device lock held, after the mode's
 * cpu_offline.
 */
void ipt_own_cpu_offline(struct ipt_session *s, unsigned int cpu)
{
	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (ipt_own_perf)
		ipt_own_give(s, cpu);
}

/**
 * ipt_own_cpu() - whether ipt may write @cpu's PT MSRs
 * @cpu: the CPU
 *
 * True when no intel_pt PMU is held (none exists) or ipt holds @cpu.
 *
 * Context: device lock held, CPU hotplug excluded.
 * Return: see above.
 */
bool ipt_own_cpu(unsigned int cpu)
{
	return !READ_ONCE(ipt_own_perf) ||
	       READ_ONCE(per_cpu(ipt_own_pcpu.held, cpu));
}

/**
 * ipt_own_here() - ipt_own_cpu() of this CPU, for the switch hooks
 *
 * Context: interrupts off (the value changes only in this CPU's hotplug
 * callbacks and while the session is not published).
 * Return: see ipt_own_cpu().
 */
bool ipt_own_here(void)
{
	return !READ_ONCE(ipt_own_perf) || this_cpu_read(ipt_own_pcpu.held);
}

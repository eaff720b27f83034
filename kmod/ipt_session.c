// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: sessions - the state machine of one open /dev/ipt, which runs its
 * mode (ipt_cpu.c, ipt_thread.c) through struct ipt_mode_ops and the ToPA
 * PMI protocol (ipt_pmi.c); CPU hotplug.
 *
 * See Documentation/design.rst (sessions, locking, PMI, hotplug, mmap
 * lifetime) and Documentation/abi.rst (the commands).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/topology.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <kunit/visibility.h>

#include "ipt_session.h"

static struct ipt_device *ipt_session_dev;
static enum cpuhp_state ipt_cpuhp_state;

#ifdef CONFIG_LOCKDEP
static struct lock_class_key ipt_cpus_key;
/* See ipt.h: CPU hotplug excluded. */
struct lockdep_map ipt_cpus_map = STATIC_LOCKDEP_MAP_INIT("ipt_cpus_held",
							  &ipt_cpus_key);
#endif

/**
 * ipt_cpus_read_lock() - exclude CPU hotplug: the cpus read lock
 *
 * cpus_read_lock(), and ipt_cpus_map held for
 * ipt_lockdep_assert_cpus_held().
 *
 * Context: process context, may sleep; before the device lock.
 */
void ipt_cpus_read_lock(void)
{
	cpus_read_lock();
	lock_map_acquire_read(&ipt_cpus_map);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_cpus_read_lock);

/**
 * ipt_cpus_read_unlock() - undo ipt_cpus_read_lock()
 *
 * Context: process context; after the device lock is dropped.
 */
void ipt_cpus_read_unlock(void)
{
	lock_map_release(&ipt_cpus_map);
	cpus_read_unlock();
}
EXPORT_SYMBOL_IF_KUNIT(ipt_cpus_read_unlock);

/* The modes, by enum ipt_mode. */
static const struct ipt_mode_ops *const ipt_modes[] = {
	[IPT_MODE_CPU] = &ipt_cpu_mode_ops,
	[IPT_MODE_THREAD] = &ipt_thread_mode_ops,
};

/* ---- CPU hotplug ------------------------------------------------------ */

/*
 * Callbacks of a dynamic AP state: they run on the CPU in question, in
 * process context, with CPU hotplug excluded.  Ioctls that make cross-CPU
 * calls take the cpus read lock before the device lock, as these do.
 * The hold on perf's intel_pt is one for all sessions: taken again once
 * before the modes hear of a CPU coming online, given back once after
 * they let a CPU go.
 */
static int ipt_session_cpu_online(unsigned int cpu)
{
	struct ipt_device *idev = ipt_session_dev;
	struct ipt_session *s;

	lock_map_acquire_read(&ipt_cpus_map);
	mutex_lock(&idev->lock);
	/* A hybrid part's CPU may have less: the caps, and the checks below. */
	if (idev->hw)
		ipt_hw_cpu_update_locked(idev, cpu, true);
	s = list_first_entry_or_null(&idev->sessions, struct ipt_session, node);
	/* perf dropped the hold at offline: take it again first. */
	if (s)
		ipt_own_cpu_online(s, cpu);
	list_for_each_entry(s, &idev->sessions, node)
		s->mops->cpu_online(s, cpu);
	mutex_unlock(&idev->lock);
	lock_map_release(&ipt_cpus_map);
	return 0;
}

static int ipt_session_cpu_offline(unsigned int cpu)
{
	struct ipt_device *idev = ipt_session_dev;
	struct ipt_session *s;

	lock_map_acquire_read(&ipt_cpus_map);
	mutex_lock(&idev->lock);
	list_for_each_entry(s, &idev->sessions, node)
		s->mops->cpu_offline(s, cpu);
	s = list_first_entry_or_null(&idev->sessions, struct ipt_session, node);
	if (s)
		ipt_own_cpu_offline(s, cpu);
	if (idev->hw)
		ipt_hw_cpu_update_locked(idev, cpu, false);
	mutex_unlock(&idev->lock);
	lock_map_release(&ipt_cpus_map);
	return 0;
}

/* ---- session lifetime -------------------------------------------------- */

static void ipt_session_free_traces(struct ipt_session *s)
{
	unsigned int i;

	/* Mapped buffers live on, charged, until their last munmap(). */
	for (i = 0; s->traces && i < s->nr_traces; i++) {
		ipt_thread_free_area(&s->traces[i]);
		ipt_stream_free(&s->traces[i]);
		ipt_buffer_put(s->traces[i].buf);
	}
	kfree(s->traces);
	s->traces = NULL;
	s->nr_traces = 0;
	s->map_size = 0;
}

/*
 * Back to IDLE: let the mode undo its configuration (per-thread: let the
 * threads go), release the PMI handler (the last session's release waits
 * for running calls), then free what the handler could see, then let the
 * unit go: back to perf when no other session holds it
 * (ipt_own_release(), every unit of the session off by now), and to
 * other sessions.
 * Context: cpus read lock and device lock held.
 */
static void ipt_session_teardown_locked(struct ipt_session *s)
{
	struct ipt_device *idev = s->idev;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&idev->lock);
	if (s->mops->teardown)
		s->mops->teardown(s);
	ipt_pmi_release(s);
	ipt_stream_sync(s);
	/* A unit that ignored the stop keeps its buffers: leaked. */
	ipt_life_release(s);
	ipt_session_free_traces(s);
	ipt_own_release(s);
	list_del_init(&s->node);
	put_pid(s->pid);
	s->pid = NULL;
	idev->users--;
	module_put(s->hw->owner);
	s->hw = NULL;
	s->mops = NULL;
	s->stream = false;
	s->state = IPT_STATE_IDLE;
	/* Pollers see the end of the session: EPOLLHUP. */
	wake_up_all(&s->wq);
}

/**
 * ipt_session_stop_locked() - stop a tracing session: TRACING to STOPPED
 * @s: the session, tracing
 *
 * Context: process context, sleeps; cpus read lock and device lock held.
 */
void ipt_session_stop_locked(struct ipt_session *s)
{
	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	s->mops->stop(s);
	s->state = IPT_STATE_STOPPED;
	/* Pollers see the data left unreleased (the lock orders this). */
	wake_up_all(&s->wq);
}

/**
 * ipt_session_poll() - poll()/epoll on a /dev/ipt file
 * @s: its session
 * @file: the file
 * @wait: the poll table
 *
 * EPOLLIN when a trace of a stream session has something for its
 * consumer (ipt_stream_ready()); EPOLLHUP when no trace is being written
 * any more, the session STOPPED or IDLE (never configured, or torn
 * down: IPT_IOC_RELEASE).  Sessions that do not stream never poll
 * EPOLLIN.  Woken by the traces' PMIs (irq_work), a release, a stop and
 * the teardown.
 *
 * Context: process context; takes the device lock.
 * Return: the event mask.
 */
__poll_t ipt_session_poll(struct ipt_session *s, struct file *file,
			  poll_table *wait)
{
	__poll_t mask = 0;
	unsigned int i;

	poll_wait(file, &s->wq, wait);
	mutex_lock(&s->idev->lock);
	if (s->state == IPT_STATE_IDLE || s->state == IPT_STATE_STOPPED)
		mask |= EPOLLHUP;
	if (s->stream && s->state != IPT_STATE_IDLE) {
		for (i = 0; i < s->nr_traces; i++) {
			if (ipt_stream_ready(&s->traces[i])) {
				mask |= EPOLLIN | EPOLLRDNORM;
				break;
			}
		}
	}
	mutex_unlock(&s->idev->lock);
	return mask;
}

/**
 * ipt_session_new() - the state of a newly opened /dev/ipt
 * @idev: the device
 *
 * Return: an IDLE session, or NULL.
 */
struct ipt_session *ipt_session_new(struct ipt_device *idev)
{
	struct ipt_session *s = kzalloc(sizeof(*s), GFP_KERNEL);

	if (s) {
		s->idev = idev;
		INIT_LIST_HEAD(&s->node);
		init_waitqueue_head(&s->wq);
	}
	return s;
}

/**
 * ipt_session_close() - the file is released: stop, free, forget
 * @s: the session
 *
 * Buffer pages still mapped stay allocated until unmapped.
 *
 * Context: process context; takes the cpus read lock and the device lock.
 */
void ipt_session_close(struct ipt_session *s)
{
	struct ipt_device *idev = s->idev;

	ipt_cpus_read_lock();
	mutex_lock(&idev->lock);
	if (s->state == IPT_STATE_TRACING)
		ipt_session_stop_locked(s);
	if (s->state != IPT_STATE_IDLE)
		ipt_session_teardown_locked(s);
	mutex_unlock(&idev->lock);
	ipt_cpus_read_unlock();
	kfree(s);
}

/* ---- IPT_IOC_CONFIGURE ------------------------------------------------- */

/* Free traces that were never installed, and their buffers (uncharged). */
static void ipt_session_free_unused(struct ipt_trace *traces, unsigned int nr)
{
	unsigned int i;

	for (i = 0; traces && i < nr; i++) {
		ipt_thread_free_area(&traces[i]);
		ipt_stream_free(&traces[i]);
		ipt_buffer_put(traces[i].buf);
	}
	kfree(traces);
}

/**
 * ipt_session_alloc_traces() - a configuration's traces, each with its buffer
 * @req: the request: @req->nr_traces traces (per-CPU mode: one per CPU of
 *       @req->cpus, its buffer on that CPU's node), laid out as
 *       @req->single says, charged with @req->ipc_lock's rules; receives
 *       @req->traces and @req->map_size
 * @cfg: the configuration (buffer size, chunk order and flags), checked
 *       against the unit
 *
 * Every buffer is charged to the caller (ipt_account_charge()) before
 * any is allocated, and keeps its charge until it is freed.  Chunks above
 * the page allocator's largest block (alloc_contig_range(), which charges
 * no memory cgroup) are only for a caller with CAP_IPC_LOCK
 * (@req->ipc_lock): others get smaller chunks, or -EPERM when the chunks
 * must be exact.
 *
 * Per-thread sessions on the XSAVES path (@req->xsave_size) get each
 * trace's XSAVES area too, all of them before the first buffer.
 *
 * Lays the buffers out one after the other in the mmap space and sets
 * each trace's initial position: the first entry of its first ToPA table.
 * The traces belong to no session yet (ipt_session_install()).
 *
 * This is the long part of a configure (zeroing, migrating pages for
 * contiguous ranges), so it runs without any lock: CPU hotplug and other
 * /dev/ipt callers go on meanwhile.
 * After the first buffer it calls @req->pause's alloc_pause test hook,
 * if any (the caller holds a reference to that backend's module).
 *
 * Context: process context (the configuring caller, whose user, mm and
 * memory cgroup are charged), no lock held.
 * Return: 0; -EPERM (over RLIMIT_MEMLOCK, or exact chunks above 4 MiB
 * without CAP_IPC_LOCK); -ENOMEM or another allocation error.  Nothing
 * left allocated or charged on error.
 */
static int ipt_session_alloc_traces(struct ipt_config_req *req,
				    const struct ipt_config *cfg)
{
	unsigned int shift = cfg->chunk_order ?: ipt_buffer_default_chunk_shift();
	bool exact = cfg->buffer_flags & IPT_BUFFER_EXACT_CHUNKS;
	bool stop = cfg->buffer_flags & IPT_BUFFER_STOP_ON_FULL;
	unsigned long pages = cfg->buffer_size >> PAGE_SHIFT;
	bool per_cpu = cfg->mode == IPT_MODE_CPU;
	unsigned int cpu = 0, i, nr = req->nr_traces;
	struct ipt_charge *charges;
	struct ipt_trace *traces;
	u64 map_size = 0;
	int ret;

	/* Single-entry ToPA: the buffer is one region. */
	if (req->single) {
		shift = ilog2(cfg->buffer_size);
		exact = true;
	}
	/*
	 * Stream: every region must end on a ToPA entry.  Chunks no larger
	 * than the largest power of two dividing the region size do
	 * (ipt_buffer_set_regions()); exact larger ones were refused.
	 */
	if (req->nr_regions) {
		u64 rsize = cfg->buffer_size / req->nr_regions;

		shift = min_t(unsigned int, shift, __ffs64(rsize));
	}
	if (shift > ipt_buffer_default_chunk_shift() && !req->ipc_lock) {
		if (exact)
			return -EPERM;
		shift = ipt_buffer_default_chunk_shift();
	}
	charges = kvcalloc(nr, sizeof(*charges), IPT_GFP_ACCOUNT);
	if (!charges)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		ret = ipt_account_charge(&charges[i], pages, req->ipc_lock);
		if (ret)
			goto out_uncharge;
	}
	traces = kcalloc(nr, sizeof(*traces), IPT_GFP_ACCOUNT);
	if (!traces) {
		ret = -ENOMEM;
		goto out_uncharge;
	}
	/* Per-thread, XSAVES path: every area before the first buffer. */
	if (req->xsave_size) {
		ret = ipt_thread_alloc_areas(traces, nr, req->xsave_size);
		if (ret) {
			kfree(traces);
			goto out_uncharge;
		}
	}
	for (i = 0; i < nr; i++) {
		struct ipt_trace *t = &traces[i];
		int node = NUMA_NO_NODE;

		if (per_cpu) {
			cpu = i ? cpumask_next(cpu, req->cpus) :
				  cpumask_first(req->cpus);
			node = cpu_to_node(cpu);
		}
		t->cpu = cpu;
		t->buf = ipt_buffer_alloc(cfg->buffer_size, shift, exact, stop,
					  node, NULL);
		if (IS_ERR(t->buf)) {
			ret = PTR_ERR(t->buf);
			t->buf = NULL;
			ipt_session_free_unused(traces, nr);
			goto out_uncharge;
		}
		/* The buffer gives the charge back when it is freed. */
		t->buf->charge = charges[i];
		memset(&charges[i], 0, sizeof(charges[i]));
		if (req->nr_regions) {
			ret = ipt_buffer_set_regions(t->buf, req->nr_regions);
			if (!ret)
				ret = ipt_stream_alloc(t);
			if (ret) {
				ipt_session_free_unused(traces, nr);
				goto out_uncharge;
			}
		}
		/* A test may park the allocation here (struct ipt_hw_ops). */
		if (!i && req->pause)
			req->pause->alloc_pause();
		t->mmap_offset = map_size;
		map_size += cfg->buffer_size;
		t->base = t->buf->table_phys[0];
		t->mask = IPT_RTIT_MASK_LOW;
		atomic64_set(&t->pmis, 0);
	}
	kvfree(charges);
	req->traces = traces;
	req->map_size = map_size;
	return 0;

out_uncharge:
	for (i = 0; i < nr; i++)
		ipt_account_uncharge(&charges[i]);
	kvfree(charges);
	return ret;
}

/**
 * ipt_session_excluded() - whether a session of @mode must wait its turn
 * @idev: the device
 * @mode: the mode asked for
 *
 * Per-thread sessions share the unit, as perf's per-task intel_pt events
 * do: each thread has its own trace, switched with the thread.  A per-CPU
 * session traces whatever runs on its CPUs, so it excludes every other
 * session, and they it.
 *
 * Context: device lock held.
 * Return: true when a session of @mode cannot be configured now.
 */
VISIBLE_IF_KUNIT bool ipt_session_excluded(struct ipt_device *idev,
					   enum ipt_mode mode)
{
	struct ipt_session *o;

	lockdep_assert_held(&idev->lock);
	list_for_each_entry(o, &idev->sessions, node)
		if (mode == IPT_MODE_CPU || o->mode == IPT_MODE_CPU)
			return true;
	return false;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_session_excluded);

/*
 * Whether @s may be configured as @cfg asks, against the unit as it is
 * now: IDLE, not excluded by the other sessions, a unit, and @cfg valid
 * for it (into @hwcfg).
 * Context: device lock held.
 */
static int ipt_session_may_configure(struct ipt_session *s,
				     const struct ipt_config *cfg,
				     const struct ipt_config_req *req,
				     struct ipt_hwcfg *hwcfg)
{
	struct ipt_device *idev = s->idev;

	lockdep_assert_held(&idev->lock);
	if (s->state != IPT_STATE_IDLE ||
	    ipt_session_excluded(idev, cfg->mode))
		return -EBUSY;
	if (!idev->hw)
		return -ENODEV;
	return ipt_config_validate(cfg, req, &idev->caps, hwcfg);
}

/*
 * Bytes of each XSAVES area a session of @mode needs on the unit as it is
 * now (0: none).  Context: device lock held.
 */
static u32 ipt_session_xsave_size(const struct ipt_device *idev,
				  enum ipt_mode mode)
{
	lockdep_assert_held(&idev->lock);
	return mode == IPT_MODE_THREAD ? ipt_thread_xsave_size(&idev->caps) : 0;
}

/* The unit's ToPA tables hold one output entry.  Context: device lock held. */
static bool ipt_session_single(const struct ipt_device *idev)
{
	lockdep_assert_held(&idev->lock);
	return !(idev->caps.features & IPT_FEAT_TOPA_MULTI);
}

/**
 * ipt_ioctl_configure_pre() - IPT_IOC_CONFIGURE's unlocked half
 * @c: the call; on success @c->data is a struct ipt_config_req holding the
 *     traces and their buffers
 *
 * ipt_config_parse(), with the caller's privilege; perf's intel_pt PMU
 * type (ipt_own_lookup(), which reads sysfs: not under the locks); then,
 * after a look at the unit under the device lock (so that a configure
 * that cannot succeed allocates nothing), the buffers, with no lock held
 * (ipt_session_alloc_traces()).  ipt_ioctl_configure() checks again under
 * the locks, since anything may have changed meanwhile.
 *
 * Context: process context, no lock held (reads the CPU mask from
 * userspace, allocates); takes and drops the device lock.
 * Return: 0; as ipt_ioctl_configure(), but -EAGAIN; nothing allocated or
 * charged on error.
 */
int ipt_ioctl_configure_pre(struct ipt_ioctl_call *c)
{
	const struct ipt_config *cfg = c->arg;
	struct ipt_device *idev = c->s->idev;
	struct ipt_config_req *req;
	struct ipt_hwcfg hwcfg;
	int ret;

	req = ipt_config_parse(cfg, perfmon_capable());
	if (IS_ERR(req))
		return PTR_ERR(req);
	req->perf_type = ipt_own_lookup();
	req->ipc_lock = capable(CAP_IPC_LOCK);
	mutex_lock(&idev->lock);
	ret = ipt_session_may_configure(c->s, cfg, req, &hwcfg);
	if (!ret) {
		req->single = ipt_session_single(idev);
		req->xsave_size = ipt_session_xsave_size(idev, cfg->mode);
		/* The backend's module stays while the hook may sleep in it. */
		if (idev->hw->alloc_pause && try_module_get(idev->hw->owner))
			req->pause = idev->hw;
	}
	mutex_unlock(&idev->lock);
	if (!ret)
		ret = ipt_session_alloc_traces(req, cfg);
	if (req->pause) {
		module_put(req->pause->owner);
		req->pause = NULL;
	}
	if (ret) {
		ipt_config_req_free(req);
		return ret;
	}
	c->data = req;
	return 0;
}

/*
 * Give @s the traces ipt_ioctl_configure_pre() allocated.  Context:
 * device lock held; @s is configuring.
 */
static void ipt_session_install(struct ipt_session *s,
				struct ipt_config_req *req)
{
	unsigned int i;

	lockdep_assert_held(&s->idev->lock);
	s->traces = req->traces;
	s->nr_traces = req->nr_traces;
	s->map_size = req->map_size;
	s->xsave_size = req->xsave_size;
	req->traces = NULL;
	s->stream = req->nr_regions;
	for (i = 0; i < s->nr_traces; i++) {
		s->traces[i].s = s;
		if (s->stream)
			ipt_stream_install(&s->traces[i]);
	}
}

/**
 * ipt_ioctl_configure() - IPT_IOC_CONFIGURE: IDLE to CONFIGURED
 * @c: the call, its argument checked and its buffers allocated by
 *     ipt_ioctl_configure_pre()
 *
 * The state, the unit and the configuration are checked again: another
 * command of this file, a backend change or CPU hotplug may have come in
 * between.  Then the buffers are installed.  The session holds perf's
 * intel_pt from here until it is IDLE again (ipt_own_acquire()): the whole
 * session, so that nothing of perf's can run on its units between
 * CONFIGURE and START or between STOP and START.  On failure the buffers
 * stay in @c->data, for ipt_ioctl_configure_post() to free.
 *
 * Context: process context; cpus read lock and device lock held.
 * Return: 0; -EBUSY (not IDLE, the unit is another session's, or perf
 * holds intel_pt), -ENODEV (no PT unit), -EFBIG, -EINVAL, -EOPNOTSUPP,
 * -EPERM (per ipt_config_validate(), or per ipt_session_alloc_traces():
 * over RLIMIT_MEMLOCK), -ENOMEM, -EAGAIN (the unit's ToPA layout changed
 * while the buffers were allocated: with its backend, or with CPU hotplug
 * on a hybrid part whose core types differ in CPUID.(14H,0):ECX[1]), or
 * the backend's error.
 */
long ipt_ioctl_configure(struct ipt_ioctl_call *c)
{
	struct ipt_config_req *req = c->data;
	const struct ipt_config *cfg = c->arg;
	struct ipt_session *s = c->s;
	struct ipt_device *idev = s->idev;
	const struct ipt_mode_ops *mops = ipt_modes[cfg->mode];
	const struct ipt_hw_ops *hw = idev->hw;
	struct ipt_hwcfg hwcfg;
	int ret;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&idev->lock);
	ret = ipt_session_may_configure(s, cfg, req, &hwcfg);
	if (ret)
		return ret;
	if (req->single != ipt_session_single(idev) ||
	    req->xsave_size != ipt_session_xsave_size(idev, cfg->mode))
		return -EAGAIN;
	if (!try_module_get(hw->owner))
		return -ENODEV;
	s->single = req->single;
	s->hw = hw;
	s->hwcfg = hwcfg;
	s->mode = cfg->mode;
	s->mops = mops;
	s->privileged = req->privileged;
	s->ipc_lock = req->ipc_lock;
	s->nr_ranges = idev->caps.num_addr_ranges;
	s->has_cr3 = idev->caps.features & IPT_FEAT_CR3_FILTER;
	/* Per-thread: threads run on any CPU. */
	ret = ipt_own_acquire(s, cfg->mode == IPT_MODE_CPU ? req->cpus :
			      cpu_possible_mask, req->perf_type);
	if (ret)
		goto out_put;
	ipt_session_install(s, req);
	if (mops->install)
		mops->install(s);
	ret = ipt_pmi_request(s);
	if (ret)
		goto out_free_traces;
	if (mops->configure) {
		ret = mops->configure(s);
		if (ret)
			goto out_release_pmi;
	}
	ipt_life_configure(s);
	s->uid = current_uid();
	s->pid = get_pid(task_tgid(current));
	list_add_tail(&s->node, &idev->sessions);
	idev->users++;
	s->state = IPT_STATE_CONFIGURED;
	return 0;

out_release_pmi:
	ipt_pmi_release(s);
	ipt_stream_sync(s);
	ipt_session_free_traces(s);
	goto out_own;
out_free_traces:
	ipt_pmi_disarm(s);
	ipt_session_free_traces(s);
out_own:
	ipt_own_release(s);
out_put:
	module_put(hw->owner);
	s->hw = NULL;
	s->mops = NULL;
	s->stream = false;
	return ret;
}

/**
 * ipt_ioctl_configure_post() - free what ipt_ioctl_configure_pre() made
 * @c: the call; its traces, unless ipt_ioctl_configure() installed them
 * @ret: the command's result so far
 *
 * Context: process context, no lock held.
 * Return: @ret.
 */
long ipt_ioctl_configure_post(struct ipt_ioctl_call *c, long ret)
{
	struct ipt_config_req *req = c->data;

	/* Not installed (the configure failed): freed, uncharged. */
	ipt_session_free_unused(req->traces, req->nr_traces);
	ipt_config_req_free(req);
	return ret;
}

/* ---- IPT_IOC_START / STOP / RELEASE ------------------------------------ */

/**
 * ipt_ioctl_cmd_pre() - the checks of a struct ipt_cmd argument
 * @c: the call
 *
 * Context: process context, no lock held.
 * Return: 0, or -EINVAL for flags.
 */
int ipt_ioctl_cmd_pre(struct ipt_ioctl_call *c)
{
	const struct ipt_cmd *cmd = c->arg;

	return cmd->flags ? -EINVAL : 0;
}

/**
 * ipt_ioctl_start() - IPT_IOC_START: CONFIGURED or STOPPED to TRACING
 * @c: the call
 *
 * Context: process context; cpus read lock and device lock held.
 * Return: 0; -EBUSY (tracing already, or a unit is someone else's),
 * -EINVAL (IDLE), -EIO, -EAGAIN (a system sleep is under way),
 * -ESHUTDOWN (the system is going down: reboot, halt, kexec).
 */
long ipt_ioctl_start(struct ipt_ioctl_call *c)
{
	struct ipt_session *s = c->s;
	int ret = 0;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (s->state == IPT_STATE_TRACING) {
		ret = -EBUSY;
	} else if (s->state == IPT_STATE_IDLE) {
		ret = -EINVAL;
	} else {
		ret = ipt_life_may_start();
		if (!ret)
			ret = s->mops->start(s);
		if (!ret)
			s->state = IPT_STATE_TRACING;
	}
	return ret;
}

/**
 * ipt_ioctl_stop() - IPT_IOC_STOP: TRACING to STOPPED
 * @c: the call
 *
 * Context: process context, sleeps; cpus read lock and device lock held.
 * Return: 0, or -EINVAL when not tracing.
 */
long ipt_ioctl_stop(struct ipt_ioctl_call *c)
{
	struct ipt_session *s = c->s;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (s->state != IPT_STATE_TRACING)
		return -EINVAL;
	ipt_session_stop_locked(s);
	return 0;
}

/**
 * ipt_ioctl_release() - IPT_IOC_RELEASE: back to IDLE
 * @c: the call
 *
 * Context: process context, sleeps; cpus read lock and device lock held.
 * Return: 0; -EBUSY while tracing; -EINVAL when IDLE.
 */
long ipt_ioctl_release(struct ipt_ioctl_call *c)
{
	struct ipt_session *s = c->s;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	if (s->state == IPT_STATE_TRACING)
		return -EBUSY;
	if (s->state == IPT_STATE_IDLE)
		return -EINVAL;
	ipt_session_teardown_locked(s);
	return 0;
}

/* ---- IPT_IOC_GET_TRACE ------------------------------------------------- */

/**
 * ipt_ioctl_get_trace_pre() - IPT_IOC_GET_TRACE's checks of the argument
 * @c: the call; the argument is cleared but for its inputs
 *
 * Context: process context, no lock held.
 * Return: 0 or -EINVAL.
 */
int ipt_ioctl_get_trace_pre(struct ipt_ioctl_call *c)
{
	struct ipt_trace_state *ts = c->arg;
	u64 chunks_ptr = ts->chunks_ptr;
	u32 cpu = ts->cpu, len = ts->chunks_len;

	if (ts->flags || ts->tid || ts->parent || ts->missed || ts->switches ||
	    ts->busy || ts->released || ts->region_size || ts->nr_gaps ||
	    ts->gap_bytes || ts->paused_tsc ||
	    memchr_inv(ts->reserved, 0, sizeof(ts->reserved)) ||
	    (!ts->chunks_ptr && ts->chunks_len))
		return -EINVAL;
	memset(ts, 0, sizeof(*ts));
	ts->cpu = cpu;
	ts->chunks_ptr = chunks_ptr;
	ts->chunks_len = len;
	return 0;
}

/**
 * ipt_ioctl_get_trace() - IPT_IOC_GET_TRACE: one trace's state
 * @c: the call; on success with a chunk array wanted, @c->data holds the
 *     chunk orders for ipt_ioctl_get_trace_post() to copy out
 *
 * The trace is brought up to date (struct ipt_mode_ops.settle) only once
 * nothing can fail: an error changes nothing.
 *
 * Context: process context; device lock held.
 * Return: 0; -EINVAL (IDLE), -ENOENT (no such trace), -ENOMEM.
 */
long ipt_ioctl_get_trace(struct ipt_ioctl_call *c)
{
	struct ipt_trace_state *ts = c->arg;
	struct ipt_session *s = c->s;
	struct ipt_trace *t;
	u32 *orders, n, i;

	lockdep_assert_held(&s->idev->lock);
	if (s->state == IPT_STATE_IDLE)
		return -EINVAL;
	t = s->mops->trace(s, ts->cpu);
	if (!t)
		return -ENOENT;
	if (ts->chunks_ptr) {
		/* Copied out after the lock: no user access under it. */
		n = min_t(u32, ts->chunks_len, t->buf->nr_chunks);
		orders = kvcalloc(n ?: 1, sizeof(*orders), GFP_KERNEL);
		if (!orders)
			return -ENOMEM;
		for (i = 0; i < n; i++)
			orders[i] = t->buf->chunks[i].shift;
		c->data = orders;
		c->data_len = n;
	}
	if (s->mops->settle)
		s->mops->settle(t);
	ts->state = s->state;
	ts->mmap_offset = t->mmap_offset;
	ts->parent = IPT_TRACE_NONE;
	s->mops->fill(t, ts);
	if (ipt_life_gap_of(s))
		ts->status |= IPT_TS_SUSPENDED;
	return 0;
}

/**
 * ipt_ioctl_get_trace_post() - copy the chunk orders out, free them
 * @c: the call
 * @ret: the command's result so far
 *
 * Context: process context, no lock held.
 * Return: @ret, or -EFAULT.
 */
long ipt_ioctl_get_trace_post(struct ipt_ioctl_call *c, long ret)
{
	const struct ipt_trace_state *ts = c->arg;

	if (!ret && c->data_len &&
	    copy_to_user(u64_to_user_ptr(ts->chunks_ptr), c->data,
			 c->data_len * sizeof(u32)))
		ret = -EFAULT;
	kvfree(c->data);
	return ret;
}

/* ---- module ----------------------------------------------------------- */

/**
 * ipt_session_init() - register for CPU hotplug
 * @idev: the device sessions belong to
 *
 * Context: module init.
 * Return: 0 or a negative errno.
 */
int ipt_session_init(struct ipt_device *idev)
{
	int ret;

	ipt_session_dev = idev;
	ret = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "ipt:online",
					ipt_session_cpu_online,
					ipt_session_cpu_offline);
	if (ret < 0)
		return ret;
	ipt_cpuhp_state = ret;
	return 0;
}

/**
 * ipt_session_exit() - undo ipt_session_init()
 *
 * Context: module exit; no session exists.
 */
void ipt_session_exit(void)
{
	cpuhp_remove_state_nocalls(ipt_cpuhp_state);
	ipt_session_dev = NULL;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipt: internal interfaces shared by the files of ipt.ko.
 */
#ifndef _IPT_H
#define _IPT_H

#include <linux/cpumask.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/miscdevice.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
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
 * @sessions: the sessions that are not IDLE (struct ipt_session.node):
 *        one per-CPU session, or any number of per-thread ones
 *
 * Locking: @hw, @caps, @registered, @users and @sessions are written only
 * with @lock held and read under it by the ioctl paths.  @lock nests
 * inside cpu_hotplug_lock and mmap_lock (Documentation/design.rst).
 */
struct ipt_device {
	struct miscdevice misc;
	struct mutex lock;	/* see Locking above */
	const struct ipt_hw_ops *hw;
	struct ipt_caps caps;
	const struct ipt_hw_ops *registered;
	unsigned int users;
	struct list_head sessions;
};

struct ipt_session;

/*
 * Commands are matched on type, number and direction; the size bits of the
 * ioctl number are ignored because arguments carry their own size.
 */
#define IPT_IOC_KEY(cmd)	((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT))

/*
 * The IA32_RTIT_STATUS bits a (re)start writes back, per CPU and per
 * thread alike: the sticky Error and Stopped, and PacketByteCnt, which
 * keeps the PSB rhythm across a stop.
 */
#define IPT_STATUS_KEEP	(RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED | \
			 RTIT_STATUS_BYTECNT)

/* ipt_account.c */

/*
 * What a buffer, and everything sized by the caller's configuration, is
 * allocated with: charged to the caller's memory cgroup, and failing with
 * ENOMEM at the cgroup's limit, or when memory runs out, rather than
 * invoking the OOM killer (try_charge_memcg() gives up before
 * mem_cgroup_oom() for __GFP_RETRY_MAYFAIL, mm/memcontrol.c:2720-2721).
 */
#define IPT_GFP_ACCOUNT	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL)

struct user_struct;
struct ipt_trace;

/**
 * struct ipt_charge - the locked memory one buffer is charged for
 * @user: the user charged (a reference), or NULL: nothing charged
 * @mm: the mm whose pinned_vm shows @extra (mmgrab()), or NULL
 * @allow: pages charged to @user's allowance (the mlock_kb parameter)
 * @extra: pages charged to @user->locked_vm and @mm->pinned_vm
 *
 * Locking: set by ipt_account_charge() before the buffer is published,
 * given back by ipt_account_uncharge() when it is freed; not shared.
 */
struct ipt_charge {
	struct user_struct *user;
	struct mm_struct *mm;
	unsigned long allow;
	unsigned long extra;
};

void ipt_account_split(unsigned long used, unsigned long limit,
		       unsigned long pages, unsigned long *allow,
		       unsigned long *extra);
bool ipt_account_fits(unsigned long locked, unsigned long extra,
		      unsigned long rlim);
unsigned long ipt_account_user_pages(kuid_t uid);
int ipt_account_charge(struct ipt_charge *ch, unsigned long pages,
		       bool bypass);
void ipt_account_uncharge(struct ipt_charge *ch);
void ipt_account_exit(void);

/* ipt_buffer.c */

/* A ToPA table is one page: its last entry is kept for the END link. */
#define IPT_TOPA_TABLE_SIZE	4096U
#define IPT_TOPA_OUTPUTS	(IPT_TOPA_TABLE_SIZE / 8 - 1)

/**
 * struct ipt_chunk - one physically contiguous piece of a buffer
 * @page: its first page (NULL in KUnit's fake buffers); every page of the
 *        chunk has its own reference (split_page(), or as
 *        alloc_contig_range() leaves them)
 * @phys: physical address, aligned to the chunk's size
 * @offset: byte offset of the chunk in the buffer
 * @shift: log2 of its size in bytes (12..27)
 */
struct ipt_chunk {
	struct page *page;
	u64 phys;
	u64 offset;
	unsigned int shift;
};

/**
 * struct ipt_buffer - one trace buffer and the ToPA chain describing it
 * @size: bytes
 * @stop_on_full: STOP on the last region; else a ring
 * @nr_chunks: entries of @chunks
 * @chunks: the chunks, in buffer order
 * @nr_tables: ToPA tables
 * @tables: their kernel addresses
 * @table_phys: their physical addresses
 * @table_pages: their pages
 * @ref: references: the session's trace, and each mapping of it
 *       (ipt_mmap.c); the last ipt_buffer_put() frees it
 * @charge: the locked memory it is charged for, given back when it is
 *          freed (set by the session after ipt_buffer_alloc())
 * @nr_regions: a stream buffer (IPT_BUFFER_STREAM): its regions, each
 *          ending on a ToPA entry with INT; 0 for a ring or stop-on-full
 * @region_size: a stream buffer: bytes per region
 * @stop_region: a stream buffer: the region whose last entry has STOP
 * @region_last: a stream buffer: the chunk each region ends with
 *
 * Locking: immutable after ipt_buffer_alloc() (and @charge and the region
 * layout after the session set them, before the buffer can be mapped)
 * except by the PT unit, which writes the chunks' contents, and the STOP
 * marker of a stream buffer (@stop_region and the STOP bits of @tables),
 * which ipt_topa_move_stop() moves under the device lock while the unit
 * writing into the buffer is off (ipt_stream.c); @ref is atomic.
 */
struct ipt_buffer {
	u64 size;
	bool stop_on_full;
	unsigned int nr_chunks;
	struct ipt_chunk *chunks;
	unsigned int nr_tables;
	u64 **tables;
	u64 *table_phys;
	struct page **table_pages;
	refcount_t ref;
	struct ipt_charge charge;
	unsigned int nr_regions;
	u64 region_size;
	unsigned int stop_region;
	u32 region_last[IPT_STREAM_MAX_REGIONS];
};

typedef struct page *(*ipt_page_alloc_fn)(int node, unsigned int order);

unsigned int ipt_buffer_max_chunk_shift(void);
unsigned int ipt_buffer_default_chunk_shift(void);
unsigned int ipt_buffer_chunk_shift(u64 remaining, unsigned int max_shift);
void ipt_topa_build(struct ipt_buffer *buf);
int ipt_topa_offset(const struct ipt_buffer *buf, u64 base, u64 mask,
		    u64 *off);
struct ipt_buffer *ipt_buffer_alloc(u64 size, unsigned int max_shift,
				    bool exact, bool stop_on_full, int node,
				    ipt_page_alloc_fn alloc);
void ipt_buffer_free(struct ipt_buffer *buf);
int ipt_buffer_set_regions(struct ipt_buffer *buf, unsigned int nr);
void ipt_topa_move_stop(struct ipt_buffer *buf, unsigned int region);
void ipt_topa_pos(const struct ipt_buffer *buf, u64 off, u64 *base,
		  u64 *mask);
struct ipt_buffer *ipt_buffer_get(struct ipt_buffer *buf);
void ipt_buffer_put(struct ipt_buffer *buf);
struct page *ipt_buffer_page(const struct ipt_buffer *buf, u64 off);

/* ipt_config.c */

/**
 * struct ipt_hwcfg - the MSR values a validated configuration programs
 * @ctl: IA32_RTIT_CTL without TraceEn
 * @cr3_match: IA32_RTIT_CR3_MATCH
 * @addr_a: IA32_RTIT_ADDRn_A
 * @addr_b: IA32_RTIT_ADDRn_B
 * @status_keep: the IA32_RTIT_STATUS bits a (re)start writes back
 *        (IPT_STATUS_KEEP, without PacketByteCnt where the unit has no
 *        configurable PSB: writing it there is #GP)
 * @vmx_check: the unit does not trace in VMX operation
 *        (IPT_PLAT_VMX_NO_PT): ask the backend's vmx_active before
 *        enabling, since writing IA32_RTIT_CTL there is #GP
 */
struct ipt_hwcfg {
	u64 ctl;
	u64 status_keep;
	u64 cr3_match;
	u64 addr_a[IPT_MAX_ADDR_RANGES];
	u64 addr_b[IPT_MAX_ADDR_RANGES];
	bool vmx_check;
};

/**
 * struct ipt_config_req - what a configuration asks for, as checked by
 * ipt_config_parse()
 * @cpus: per-CPU mode: the chosen CPUs (empty in per-thread mode)
 * @nr_traces: the traces the session will have
 * @privileged: the caller had CAP_PERFMON or CAP_SYS_ADMIN
 * @perf_type: perf's intel_pt PMU type, or -ENOENT (none) or another
 *             negative errno (ipt_own_lookup(), before the locks)
 * @ipc_lock: the caller had CAP_IPC_LOCK (set by the configure pre
 *            handler): RLIMIT_MEMLOCK does not limit it, and it may have
 *            chunks from alloc_contig_range()
 * @single: the unit's ToPA tables held one output entry when the buffers
 *          were laid out (checked again under the device lock)
 * @backend: the backend the buffers were allocated for (ipt_gate.c)
 * @traces: the @nr_traces traces with their buffers, allocated without
 *          the locks by the configure pre handler; taken by the session,
 *          else freed by the post handler
 * @map_size: bytes of their buffers together
 * @nr_regions: IPT_BUFFER_STREAM: regions of each buffer, else 0
 *
 * Locking: private to one IPT_IOC_CONFIGURE call.
 */
struct ipt_config_req {
	cpumask_var_t cpus;
	unsigned int nr_traces;
	bool privileged;
	int perf_type;
	bool ipc_lock;
	bool single;
	enum ipt_backend backend;
	struct ipt_trace *traces;
	u64 map_size;
	unsigned int nr_regions;
};

int ipt_config_check(const struct ipt_config *cfg, const struct ipt_caps *caps,
		     bool privileged, struct ipt_hwcfg *hwcfg);
struct ipt_config_req *ipt_config_parse(const struct ipt_config *cfg,
					bool privileged);
void ipt_config_req_free(struct ipt_config_req *req);
int ipt_config_validate(const struct ipt_config *cfg,
			const struct ipt_config_req *req,
			const struct ipt_caps *caps, struct ipt_hwcfg *hwcfg);
void ipt_config_limits(struct ipt_caps *caps);

/* ipt_stream.c: the streaming fields of a configuration */
int ipt_stream_check(const struct ipt_config *cfg, unsigned int *nr);

/* ipt_pos.c */

/**
 * struct ipt_trace_pos - a trace's position, as one snapshot
 * @base: IA32_RTIT_OUTPUT_BASE
 * @mask: IA32_RTIT_OUTPUT_MASK_PTRS
 * @status: IA32_RTIT_STATUS
 * @wraps: PMIs counted up to that moment
 * @running: the unit was tracing into it at the time of the call
 * @pmi_late: a PMI could not be waited for
 * @sample: single-entry ring: the offset when the last counted PMI was
 *          handled (struct ipt_trace)
 *
 * Locking: a value; taken by the modes under their trace's rules.
 */
struct ipt_trace_pos {
	u64 base;
	u64 mask;
	u64 status;
	u64 wraps;
	bool running;
	bool pmi_late;
	u64 sample;
};

void ipt_pos_fill(const struct ipt_buffer *buf, bool single,
		  const struct ipt_trace_pos *pos, struct ipt_trace_state *ts);

/*
 * CPU hotplug excluded.  Code that makes cross-CPU calls or touches
 * per-CPU state of other CPUs runs with CPU hotplug excluded: under the
 * cpus read lock (taken before the device lock) or in one of ipt's
 * hotplug callbacks.  lockdep_assert_cpus_held() would check the first
 * only, and Linux 6.1 does not export it to modules; so ipt marks both
 * with a lockdep map of its own, ipt_cpus_map, held (recursive read)
 * inside the cpus read lock or for the callback's duration, and
 * ipt_lockdep_assert_cpus_held() asserts it where a rule says "CPU
 * hotplug excluded".
 */
extern struct lockdep_map ipt_cpus_map;

#define ipt_lockdep_assert_cpus_held() \
	lockdep_assert(lock_is_held(&ipt_cpus_map))

void ipt_cpus_read_lock(void);
void ipt_cpus_read_unlock(void);

/* ipt_core.c: the ioctl table */

/**
 * struct ipt_ioctl_call - one ioctl call, as its handlers see it
 * @s: the file's session
 * @arg: the kernel copy of the argument, the command's struct (copied in
 *       by the table, and out again for IPT_IOCTL_OUT commands)
 * @uarg: the user's argument, for the unlocked pre and post handlers
 *        only (user memory beyond @arg)
 * @data: what a pre or the locked handler hands on (freed by post)
 * @data_len: a length that goes with @data
 * @privileged: the caller has CAP_PERFMON or CAP_SYS_ADMIN, as a pre
 *              handler found (set by the pre handlers that ask)
 *
 * Locking: private to one call.
 */
struct ipt_ioctl_call {
	struct ipt_session *s;
	void *arg;
	void __user *uarg;
	void *data;
	u32 data_len;
	bool privileged;
};

/* ipt_session.c */
struct ipt_session *ipt_session_new(struct ipt_device *idev);
void ipt_session_close(struct ipt_session *s);
int ipt_session_init(struct ipt_device *idev);
void ipt_session_exit(void);
int ipt_ioctl_configure_pre(struct ipt_ioctl_call *c);
long ipt_ioctl_configure(struct ipt_ioctl_call *c);
long ipt_ioctl_configure_post(struct ipt_ioctl_call *c, long ret);
int ipt_ioctl_cmd_pre(struct ipt_ioctl_call *c);
long ipt_ioctl_start(struct ipt_ioctl_call *c);
long ipt_ioctl_stop(struct ipt_ioctl_call *c);
long ipt_ioctl_release(struct ipt_ioctl_call *c);
int ipt_ioctl_get_trace_pre(struct ipt_ioctl_call *c);
long ipt_ioctl_get_trace(struct ipt_ioctl_call *c);
long ipt_ioctl_get_trace_post(struct ipt_ioctl_call *c, long ret);

/* ipt_thread.c */
int ipt_ioctl_attach_pre(struct ipt_ioctl_call *c);
long ipt_ioctl_attach(struct ipt_ioctl_call *c);
long ipt_ioctl_attach_post(struct ipt_ioctl_call *c, long ret);
int ipt_ioctl_detach_pre(struct ipt_ioctl_call *c);
long ipt_ioctl_detach(struct ipt_ioctl_call *c);

/* ipt_list.c */
int ipt_ioctl_list_pre(struct ipt_ioctl_call *c);
long ipt_ioctl_list(struct ipt_ioctl_call *c);
long ipt_ioctl_list_post(struct ipt_ioctl_call *c, long ret);

/* ipt_mmap.c */
int ipt_session_mmap(struct ipt_session *s, struct vm_area_struct *vma);

/* ipt_caps.c */
const char *ipt_unavail_str(enum ipt_unavail why);
enum ipt_unavail ipt_caps_probe(const struct ipt_hw_ops *hw,
				struct ipt_caps *caps);
bool ipt_caps_branch_required(const struct ipt_caps *caps);
u64 ipt_caps_cr3_user_bits(const struct ipt_caps *caps);
void ipt_caps_cpu_update(const struct ipt_hw_ops *hw, struct ipt_caps *caps,
			 unsigned int cpu, bool online);
bool ipt_caps_cpu_fits(const struct ipt_hw_ops *ops, unsigned int cpu,
		       const struct ipt_hwcfg *hw, bool single);
unsigned int ipt_caps_cpu_ranges(const struct ipt_hw_ops *hw,
				 unsigned int cpu, unsigned int nr);
#if IS_ENABLED(CONFIG_KUNIT)
void ipt_caps_signature(u32 eax, struct ipt_caps *caps);
#endif

/* ipt_gate.c: the allocation gate, a test hook */
void ipt_gate_alloc(enum ipt_backend backend);
void ipt_gate_init(void);
void ipt_gate_exit(void);

/* ipt_hw.c */
void ipt_hw_attach(struct ipt_device *idev);
void ipt_hw_detach(struct ipt_device *idev);
void ipt_hw_select_locked(struct ipt_device *idev);
void ipt_hw_cpu_update_locked(struct ipt_device *idev, unsigned int cpu,
			      bool online);

/* ipt_uaccess.c */
int ipt_arg_in(void *karg, size_t ksize, size_t min_size,
	       const void __user *uarg);
int ipt_arg_out(void __user *uarg, u32 usize, void *karg, size_t ksize);

#endif /* _IPT_H */

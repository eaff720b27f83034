/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ipt: Intel Processor Trace driver, userspace ABI.
 *
 * This header is the only interface between ipt.ko and userspace; the full
 * reference is Documentation/abi.rst.
 *
 * Conventions shared by every command:
 *  - Every argument is a struct whose first member is __u32 size: the size
 *    of the struct as the caller knows it.  The kernel accepts any size from
 *    the command's first published size (IPT_*_SIZE_VER0) up to one page:
 *    a caller built against an older header passes a smaller struct and
 *    gets the fields it knows; a caller built against a newer header passes
 *    a larger one, whose unknown tail must be zero on input (-E2BIG
 *    otherwise) and is zeroed on output.  On output the kernel stores in
 *    size the number of bytes it knows about.
 *  - The size encoded in the ioctl number is not used; the command is
 *    identified by its type, number and direction only.  Unknown commands
 *    fail with -ENOTTY.
 *  - Every flags word and reserved member must be zero on input (-EINVAL).
 *  - Sizes, offsets and addresses are 64-bit.
 */
#ifndef _UAPI_LINUX_IPT_H
#define _UAPI_LINUX_IPT_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define IPT_DEVICE_PATH		"/dev/ipt"
#define IPT_IOC_MAGIC		0xB8

/* Bumped on incompatible changes only; compatible growth uses sizes. */
#define IPT_ABI_VERSION		1

/**
 * enum ipt_backend - what executes the PT instructions
 * @IPT_BACKEND_NONE: no Intel PT unit: only IPT_IOC_GET_CAPS works
 * @IPT_BACKEND_NATIVE: the CPU's own Intel PT unit
 * @IPT_BACKEND_SIM: the simulated PT unit (module ipt_sim)
 */
enum ipt_backend {
	IPT_BACKEND_NONE = 0,
	IPT_BACKEND_NATIVE = 1,
	IPT_BACKEND_SIM = 2,
};

/**
 * enum ipt_unavail - why there is no usable PT unit (ipt_caps.unavailable)
 * @IPT_UNAVAIL_NONE: PT is available
 * @IPT_UNAVAIL_NOT_INTEL: the CPU vendor is not Intel
 * @IPT_UNAVAIL_NO_PT: CPUID.(EAX=07H,ECX=0):EBX[25] is 0
 * @IPT_UNAVAIL_NO_LEAF_14: CPUID leaf 14H is not enumerated
 * @IPT_UNAVAIL_NO_OUTPUT: neither ToPA nor single-range output is enumerated
 */
enum ipt_unavail {
	IPT_UNAVAIL_NONE = 0,
	IPT_UNAVAIL_NOT_INTEL = 1,
	IPT_UNAVAIL_NO_PT = 2,
	IPT_UNAVAIL_NO_LEAF_14 = 3,
	IPT_UNAVAIL_NO_OUTPUT = 4,
};

/* ipt_caps.features: one bit per enumerated feature. */
#define IPT_FEAT_CR3_FILTER	_BITULL(0)	/* CPUID.14H.0:EBX[0] */
#define IPT_FEAT_PSB_CYC	_BITULL(1)	/* EBX[1]: PSBFreq, CYC, CycThresh */
#define IPT_FEAT_IP_FILTER	_BITULL(2)	/* EBX[2]: ADDRn filter and TraceStop */
#define IPT_FEAT_MTC		_BITULL(3)	/* EBX[3] */
#define IPT_FEAT_PTWRITE	_BITULL(4)	/* EBX[4] */
#define IPT_FEAT_POWER_EVENTS	_BITULL(5)	/* EBX[5] */
#define IPT_FEAT_PSB_PMI_KEEP	_BITULL(6)	/* EBX[6]: PSB and PMI preservation */
#define IPT_FEAT_EVENT_TRACE	_BITULL(7)	/* EBX[7] */
#define IPT_FEAT_TNT_DISABLE	_BITULL(8)	/* EBX[8] */
#define IPT_FEAT_TOPA		_BITULL(16)	/* ECX[0]: ToPA output */
#define IPT_FEAT_TOPA_MULTI	_BITULL(17)	/* ECX[1]: many entries per table */
#define IPT_FEAT_SINGLE_RANGE	_BITULL(18)	/* ECX[2]: single-range output */
#define IPT_FEAT_TRANSPORT	_BITULL(19)	/* ECX[3]: trace transport output */
#define IPT_FEAT_LIP		_BITULL(20)	/* ECX[31]: IPs include CS base */
#define IPT_FEAT_XSAVES_PT	_BITULL(32)	/* XSAVES handles the PT component */
/* Bits 48 and up: what this driver offers on top of the unit. */
#define IPT_FEAT_STREAM		_BITULL(48)	/* IPT_BUFFER_STREAM */

/*
 * ipt_caps.platform: what the kernel around the unit does that changes how
 * a configuration is programmed (Documentation/design.rst, "CPU quirks").
 */
#define IPT_PLAT_PTI		_BITULL(0)	/* page-table isolation: user CR3 differs */
#define IPT_PLAT_PCID		_BITULL(1)	/* CR4.PCIDE: CR3[11:0] is a PCID */
/* IA32_VMX_MISC[14] = 0: no PT in VMX operation, VMXON clears TraceEn */
#define IPT_PLAT_VMX_NO_PT	_BITULL(2)
/* CPUs differ in CPUID leaf 14H (hybrid): the caps are their intersection */
#define IPT_PLAT_HYBRID		_BITULL(3)

/**
 * struct ipt_cpuid_regs - one CPUID result, as the CPU returned it
 * @eax: EAX
 * @ebx: EBX
 * @ecx: ECX
 * @edx: EDX
 */
struct ipt_cpuid_regs {
	__u32 eax;
	__u32 ebx;
	__u32 ecx;
	__u32 edx;
};

/**
 * struct ipt_caps - what the PT unit can do (IPT_IOC_GET_CAPS)
 * @size: in: the caller's sizeof(struct ipt_caps); out: the kernel's
 * @flags: in: must be 0
 * @abi_version: IPT_ABI_VERSION of the running module
 * @backend: enum ipt_backend
 * @unavailable: enum ipt_unavail; IPT_UNAVAIL_NONE when @backend can trace
 * @vendor: CPUID.0 vendor string, NUL-terminated
 * @family: display family (base + extended), from CPUID.1:EAX
 * @model: display model (base + extended << 4 for family 6 and 15)
 * @stepping: stepping
 * @features: IPT_FEAT_* bits, decoded from @cpuid_14_0 and CPUID leaf 0DH
 * @num_addr_ranges: address ranges usable as filter or TraceStop (0..4)
 * @mtc_freq_mask: supported CTL.MTCFreq encodings (bit n: MTCFreq = n)
 * @cyc_thresh_mask: supported CTL.CycThresh encodings
 * @psb_freq_mask: supported CTL.PSBFreq encodings
 * @nom_freq: maximum non-turbo ratio, MSR_PLATFORM_INFO[15:8] (0: unknown)
 * @xsave_pt_size: size of the XSAVES PT component, CPUID.(0DH,8):EAX
 *                 (0 when XSAVES cannot save PT state)
 * @nr_cpus: number of possible CPUs (CPU ids are below this)
 * @max_topa_order: largest ToPA region, as log2(bytes) (12..27)
 * @max_trace_size: largest buffer one trace may have, in bytes; 0 when the
 *                  driver cannot trace on this unit
 * @cpuid_14_0: raw CPUID.(EAX=14H,ECX=0) (zero when not enumerated)
 * @cpuid_14_1: raw CPUID.(EAX=14H,ECX=1)
 * @cpuid_15: raw CPUID.15H: TSC / crystal ratio, as decoders need it
 * @max_chunk_order: largest buffer chunk the driver can allocate, as
 *                   log2(bytes): 27 where the kernel has a contiguous range
 *                   allocator (CONFIG_CONTIG_ALLOC), else the page
 *                   allocator's largest block (22 on x86-64); ipt_config's
 *                   chunk_order 0 means min(22, this)
 * @virt_addr_bits: the CPU's linear address width, CPUID.80000008H:EAX[15:8]
 *                  (48, or 57 with 5-level paging): address ranges must be
 *                  canonical to it.  0 from modules that predate the field
 *                  (it was reserved): they check 48 bits
 * @platform: IPT_PLAT_* bits: how the running kernel uses the CPU in ways
 *            that change what ipt programs (with IPT_PLAT_PTI, cr3_match
 *            is turned into the user-mode CR3 for user-only traces;
 *            with IPT_PLAT_VMX_NO_PT, PT does not run in VMX operation)
 *
 * When @unavailable is not IPT_UNAVAIL_NONE, only the CPU identity fields
 * are filled and every PT field is zero.
 */
struct ipt_caps {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 backend;
	__u32 unavailable;
	char vendor[16];
	__u32 family;
	__u32 model;
	__u32 stepping;
	__u64 features;
	__u32 num_addr_ranges;
	__u32 mtc_freq_mask;
	__u32 cyc_thresh_mask;
	__u32 psb_freq_mask;
	__u32 nom_freq;
	__u32 xsave_pt_size;
	__u32 nr_cpus;
	__u32 max_topa_order;
	__u64 max_trace_size;
	struct ipt_cpuid_regs cpuid_14_0;
	struct ipt_cpuid_regs cpuid_14_1;
	struct ipt_cpuid_regs cpuid_15;
	__u32 max_chunk_order;
	__u32 virt_addr_bits;
	__u64 platform;
};

#define IPT_CAPS_SIZE_VER0	144	/* sizeof first published ipt_caps */
#define IPT_CAPS_SIZE_VER1	152	/* + max_chunk_order */
#define IPT_CAPS_SIZE_VER2	160	/* + platform */

/**
 * enum ipt_mode - what a session traces (ipt_config.mode)
 * @IPT_MODE_CPU: every chosen CPU, whatever runs on it, into a buffer per
 *        CPU (privileged: CAP_PERFMON or CAP_SYS_ADMIN)
 * @IPT_MODE_THREAD: chosen threads, on whatever CPU they run, each into a
 *        buffer of its own (IPT_IOC_ATTACH); up to ipt_config.max_threads
 */
enum ipt_mode {
	IPT_MODE_CPU = 1,
	IPT_MODE_THREAD = 2,
};

/* ipt_config.flags */
#define IPT_CONFIG_ALL_CPUS	_BITULL(0)	/* every present CPU; no mask */

/* ipt_config.trace_flags: what the unit traces, as named fields. */
#define IPT_TRACE_USER		_BITULL(0)	/* CPL > 0 (CTL.User) */
#define IPT_TRACE_KERNEL	_BITULL(1)	/* CPL 0 (CTL.OS); privileged */
#define IPT_TRACE_BRANCH	_BITULL(2)	/* control flow (CTL.BranchEn) */
#define IPT_TRACE_TSC		_BITULL(3)	/* TSC packets (CTL.TSCEn) */
#define IPT_TRACE_MTC		_BITULL(4)	/* MTC at mtc_freq (IPT_FEAT_MTC) */
#define IPT_TRACE_CYC		_BITULL(5)	/* CYC at cyc_thresh (IPT_FEAT_PSB_CYC) */
#define IPT_TRACE_NO_RETCOMP	_BITULL(6)	/* no return compression (DisRETC) */
#define IPT_TRACE_PTWRITE	_BITULL(7)	/* PTW packets (IPT_FEAT_PTWRITE) */
#define IPT_TRACE_PTWRITE_FUP	_BITULL(8)	/* FUP after PTW (needs _PTWRITE) */
#define IPT_TRACE_POWER_EVENTS	_BITULL(9)	/* IPT_FEAT_POWER_EVENTS */
#define IPT_TRACE_CR3_FILTER	_BITULL(10)	/* only cr3_match (IPT_FEAT_CR3_FILTER) */

/* ipt_config.buffer_flags */
#define IPT_BUFFER_STOP_ON_FULL	_BITULL(0)	/* else a ring */
#define IPT_BUFFER_EXACT_CHUNKS	_BITULL(1)	/* no fallback to smaller chunks */
/*
 * Stream (IPT_FEAT_STREAM): the buffer is split into nr_regions regions;
 * the unit interrupts at the end of each, the consumer hands regions back
 * with IPT_IOC_STREAM_RELEASE, and the unit pauses rather than overwrite
 * what was not released (each pause is a gap: IPT_IOC_GET_GAPS).
 * Excludes IPT_BUFFER_STOP_ON_FULL.
 */
#define IPT_BUFFER_STREAM	_BITULL(2)
#define IPT_STREAM_MIN_REGIONS	2
#define IPT_STREAM_MAX_REGIONS	64
#define IPT_STREAM_DEF_REGIONS	8

/**
 * enum ipt_range_kind - use of one address range (ipt_addr_range.kind)
 * @IPT_RANGE_OFF: unused; start and end must be 0
 * @IPT_RANGE_FILTER: trace only inside [start, end] (ADDRn_CFG = 1)
 * @IPT_RANGE_STOP: stop tracing on entering [start, end] (ADDRn_CFG = 2)
 */
enum ipt_range_kind {
	IPT_RANGE_OFF = 0,
	IPT_RANGE_FILTER = 1,
	IPT_RANGE_STOP = 2,
};

#define IPT_MAX_ADDR_RANGES	4

/**
 * struct ipt_addr_range - one IA32_RTIT_ADDRn_A/B pair
 * @start: first linear address, canonical (ipt_caps.virt_addr_bits)
 * @end: last linear address (inclusive), canonical, >= @start
 * @kind: enum ipt_range_kind
 * @reserved: must be 0
 */
struct ipt_addr_range {
	__u64 start;
	__u64 end;
	__u32 kind;
	__u32 reserved;
};

/* Largest cpu mask: IPT_MAX_CPU_MASK_WORDS * 64 CPUs. */
#define IPT_MAX_CPU_MASK_WORDS	128

/**
 * struct ipt_config - a session: what to trace, where, into what (IPT_IOC_CONFIGURE)
 * @size: the caller's sizeof(struct ipt_config)
 * @flags: IPT_CONFIG_*
 * @mode: enum ipt_mode
 * @chunk_order: log2 of the largest buffer chunk in bytes (12..27), or 0
 *        for 4 MiB (the page allocator's largest block); chunks above
 *        ipt_caps.max_chunk_order cannot be had (see IPT_BUFFER_EXACT_CHUNKS)
 * @trace_flags: IPT_TRACE_*
 * @mtc_freq: CTL.MTCFreq (with IPT_TRACE_MTC; bit of ipt_caps.mtc_freq_mask)
 * @cyc_thresh: CTL.CycThresh (with IPT_TRACE_CYC; ipt_caps.cyc_thresh_mask)
 * @psb_freq: CTL.PSBFreq (ipt_caps.psb_freq_mask; 0 without IPT_FEAT_PSB_CYC)
 * @cpu_mask_words: number of __u64 words at @cpu_mask_ptr (1..128), or 0
 *        with IPT_CONFIG_ALL_CPUS
 * @cpu_mask_ptr: user pointer to the CPU bitmap: bit n of word n / 64 is
 *        CPU n; every CPU must be present
 * @cr3_match: IA32_RTIT_CR3_MATCH with IPT_TRACE_CR3_FILTER, else 0
 * @ranges: address ranges; entries at and beyond ipt_caps.num_addr_ranges
 *        must be IPT_RANGE_OFF
 * @buffer_size: bytes of trace buffer per CPU (per thread in
 *        IPT_MODE_THREAD): a multiple of 4096, at most ipt_caps.max_trace_size
 * @buffer_flags: IPT_BUFFER_*
 * @max_threads: IPT_MODE_THREAD: traces (threads) the session can hold,
 *        1..IPT_MAX_THREADS; their buffers are allocated here, so that a
 *        thread created under IPT_ATTACH_INHERIT gets one without
 *        allocating.  Must be 0 in IPT_MODE_CPU.
 * @nr_regions: IPT_BUFFER_STREAM: regions of the buffer, a power of two
 *        from IPT_STREAM_MIN_REGIONS to IPT_STREAM_MAX_REGIONS, or 0 for
 *        IPT_STREAM_DEF_REGIONS; must be 0 without IPT_BUFFER_STREAM
 * @reserved: must be 0
 */
struct ipt_config {
	__u32 size;
	__u32 flags;
	__u32 mode;
	__u32 chunk_order;
	__u64 trace_flags;
	__u32 mtc_freq;
	__u32 cyc_thresh;
	__u32 psb_freq;
	__u32 cpu_mask_words;
	__u64 cpu_mask_ptr;
	__u64 cr3_match;
	struct ipt_addr_range ranges[IPT_MAX_ADDR_RANGES];
	__u64 buffer_size;
	__u64 buffer_flags;
	__u32 max_threads;
	__u32 nr_regions;
	__u64 reserved[3];
};

/* Most traces of an IPT_MODE_THREAD session. */
#define IPT_MAX_THREADS		1024

#define IPT_CONFIG_SIZE_VER0	200	/* sizeof first published ipt_config */

/**
 * struct ipt_cmd - argument of commands that need no data
 * @size: the caller's sizeof(struct ipt_cmd)
 * @flags: must be 0
 */
struct ipt_cmd {
	__u32 size;
	__u32 flags;
};

#define IPT_CMD_SIZE_VER0	8

/**
 * enum ipt_state - the state of the session of one open file
 * @IPT_STATE_IDLE: no session (after open and IPT_IOC_RELEASE)
 * @IPT_STATE_CONFIGURED: buffers allocated, the unit is this file's
 * @IPT_STATE_TRACING: tracing on the session's online CPUs
 * @IPT_STATE_STOPPED: stopped; trace state is final until the next start
 */
enum ipt_state {
	IPT_STATE_IDLE = 0,
	IPT_STATE_CONFIGURED = 1,
	IPT_STATE_TRACING = 2,
	IPT_STATE_STOPPED = 3,
};

/* ipt_trace_state.status */
#define IPT_TS_RUNNING		_BITULL(0)	/* the unit of this CPU traces now */
#define IPT_TS_WRAPPED		_BITULL(1)	/* ring: older bytes overwritten */
#define IPT_TS_FULL		_BITULL(2)	/* stop-on-full: buffer full, stopped */
#define IPT_TS_ERROR		_BITULL(3)	/* STATUS.Error seen: output stopped */
#define IPT_TS_STOP_ON_FULL	_BITULL(4)	/* the buffer is stop-on-full */
/* A PMI was still pending after stop's wait: wrap_count may be low. */
#define IPT_TS_PMI_LATE		_BITULL(5)
/* IPT_MODE_THREAD traces: */
#define IPT_TS_THREAD		_BITULL(6)	/* the trace of one thread */
#define IPT_TS_EXITED		_BITULL(7)	/* the thread exited: final */
#define IPT_TS_DETACHED		_BITULL(8)	/* IPT_IOC_DETACH: final */
#define IPT_TS_INHERITED	_BITULL(9)	/* attached at its creation */
#define IPT_TS_INHERIT		_BITULL(10)	/* its new threads are traced */
/*
 * A system sleep (suspend, hibernation) stopped the session while it
 * traced, and it started again after: the trace has a gap there.
 */
#define IPT_TS_SUSPENDED	_BITULL(11)
/*
 * Someone else switched the unit off under the trace, or it could not be
 * enabled for part of the time (VMXON on a CPU without PT in VMX
 * operation, caps.platform IPT_PLAT_VMX_NO_PT): the trace has a gap.
 */
#define IPT_TS_CUT		_BITULL(12)
#define IPT_TS_STREAM		_BITULL(13)	/* IPT_BUFFER_STREAM */
/* Stream: the unit reached data not yet released and is paused (a gap). */
#define IPT_TS_PAUSED		_BITULL(14)

/* ipt_trace_state.parent when the thread was attached by IPT_IOC_ATTACH. */
#define IPT_TRACE_NONE		0xffffffffU

/**
 * struct ipt_trace_state - one trace (IPT_IOC_GET_TRACE)
 * @size: the caller's sizeof(struct ipt_trace_state)
 * @flags: in: must be 0
 * @cpu: in: the CPU whose trace is wanted (IPT_MODE_CPU), or the index of
 *        the trace, 0 .. max_threads - 1 (IPT_MODE_THREAD)
 * @state: enum ipt_state of the session
 * @status: IPT_TS_*
 * @buffer_size: bytes in the buffer
 * @mmap_offset: where the buffer maps on the /dev/ipt file (mmap offset)
 * @head: where the next byte goes, 0 .. @buffer_size (as of the last stop;
 *        for a thread, as of the last time it left a CPU)
 * @bytes_captured: bytes the unit wrote since the session was configured
 * @bytes_valid: bytes of trace in the buffer: min(@bytes_captured, size)
 * @oldest: buffer offset of the oldest valid byte (@head when wrapped)
 * @wrap_count: times a ring wrapped (exact: one PMI per wrap)
 * @bytes_lost: bytes overwritten in a ring (@bytes_captured - size)
 * @chunks_ptr: in: 0, or user pointer to @chunks_len __u32 that receive the
 *        log2 size of each chunk, in buffer order
 * @chunks_len: in: entries at @chunks_ptr
 * @nr_chunks: physically contiguous chunks of the buffer
 * @nr_tables: ToPA tables (4 KiB each) describing it
 * @tid: in: must be 0; out: IPT_MODE_THREAD: the thread's id, in the pid
 *        namespace of the process that configured the session
 * @parent: in: must be 0; out: the trace of the thread that created this
 *        one (IPT_TS_INHERITED), else IPT_TRACE_NONE
 * @missed: in: must be 0; out: threads this one created that could not be
 *        traced because every trace of the session was in use
 * @switches: in: must be 0; out: times the thread's PT state was loaded
 *        onto a CPU (context switches in, and starts)
 * @busy: in: must be 0; out: times it could not be, because the CPU's
 *        unit was already enabled by someone else (its trace has a gap)
 * @released: in: must be 0; out: IPT_TS_STREAM: stream position up to
 *        which the consumer released the data (IPT_IOC_STREAM_RELEASE).
 *        Stream positions count bytes since configure, as @bytes_captured
 *        does; position p lies at buffer offset p % @buffer_size. Bytes
 *        @released .. @bytes_captured are ready to read.
 * @region_size: in: must be 0; out: IPT_TS_STREAM: bytes per region
 * @nr_gaps: in: must be 0; out: IPT_TS_STREAM: gaps recorded so far
 * @gap_bytes: in: must be 0; out: bytes the unit is known to have lost in
 *        those gaps (gaps of unknown size add nothing)
 * @paused_tsc: in: must be 0; out: IPT_TS_PAUSED: TSC when the pause began
 * @reserved: in: must be 0
 */
struct ipt_trace_state {
	__u32 size;
	__u32 flags;
	__u32 cpu;
	__u32 state;
	__u64 status;
	__u64 buffer_size;
	__u64 mmap_offset;
	__u64 head;
	__u64 bytes_captured;
	__u64 bytes_valid;
	__u64 oldest;
	__u64 wrap_count;
	__u64 bytes_lost;
	__u64 chunks_ptr;
	__u32 chunks_len;
	__u32 nr_chunks;
	__u32 nr_tables;
	__u32 tid;
	__u32 parent;
	__u32 missed;
	__u64 switches;
	__u64 busy;
	__u64 released;
	__u64 region_size;
	__u64 nr_gaps;
	__u64 gap_bytes;
	__u64 paused_tsc;
	__u64 reserved[4];
};

#define IPT_TRACE_STATE_SIZE_VER0	144
#define IPT_TRACE_STATE_SIZE_VER1	208	/* + streaming */

/* ipt_attach.flags */
#define IPT_ATTACH_INHERIT	_BITULL(0)	/* trace its new threads and children too */

/**
 * struct ipt_attach - trace a thread (IPT_IOC_ATTACH, IPT_MODE_THREAD)
 * @size: the caller's sizeof(struct ipt_attach)
 * @flags: IPT_ATTACH_*
 * @tid: the thread, in the caller's pid namespace; 0 for the calling thread.
 *        Threads of other processes, and any thread of a session that
 *        traces the kernel, need CAP_PERFMON or CAP_SYS_ADMIN.
 * @trace: out: the index of its trace (IPT_IOC_GET_TRACE, mmap)
 * @reserved: must be 0
 */
struct ipt_attach {
	__u32 size;
	__u32 flags;
	__u32 tid;
	__u32 trace;
	__u64 reserved[2];
};

#define IPT_ATTACH_SIZE_VER0	32

/**
 * struct ipt_detach - stop tracing a thread (IPT_IOC_DETACH)
 * @size: the caller's sizeof(struct ipt_detach)
 * @flags: must be 0
 * @trace: the index of its trace; the trace stays readable
 * @reserved: must be 0
 */
struct ipt_detach {
	__u32 size;
	__u32 flags;
	__u32 trace;
	__u32 reserved;
};

#define IPT_DETACH_SIZE_VER0	16

/* ipt_session_info.flags */
#define IPT_SESSION_THIS	_BITULL(0)	/* the session of the file asked */
#define IPT_SESSION_KERNEL	_BITULL(1)	/* it traces the kernel (CPL 0) */

/**
 * struct ipt_session_info - one configured session (IPT_IOC_LIST_SESSIONS)
 * @mode: enum ipt_mode
 * @state: enum ipt_state (never IPT_STATE_IDLE)
 * @uid: the real uid of the process that configured it, in the caller's
 *       user namespace (the overflow uid if it has none there)
 * @pid: that process (its thread-group id) in the caller's pid namespace;
 *       0 if it is not visible there or has exited
 * @nr_traces: per-CPU: the CPUs; per-thread: max_threads
 * @nr_threads: per-thread: threads given a trace so far (attached or
 *              inherited); per-CPU: 0
 * @flags: IPT_SESSION_*
 * @reserved: 0
 */
struct ipt_session_info {
	__u32 mode;
	__u32 state;
	__u32 uid;
	__u32 pid;
	__u32 nr_traces;
	__u32 nr_threads;
	__u64 flags;
	__u64 reserved[2];
};

#define IPT_SESSION_INFO_SIZE_VER0	48

/**
 * struct ipt_sessions - who holds the PT unit (IPT_IOC_LIST_SESSIONS)
 * @size: the caller's sizeof(struct ipt_sessions)
 * @flags: must be 0
 * @entry_size: the caller's sizeof(struct ipt_session_info), at least
 *              IPT_SESSION_INFO_SIZE_VER0 and at most a page: each entry
 *              is written with that stride, bytes beyond the kernel's
 *              struct zeroed
 * @nr_entries: in: room at @entries_ptr, in entries; out: entries written
 * @total: out: configured sessions the caller may see (all of them with
 *         CAP_PERFMON or CAP_SYS_ADMIN, else those its real uid
 *         configured); must be 0 in
 * @reserved0: must be 0
 * @entries_ptr: the entries, or 0 with @nr_entries 0 to count only
 * @reserved: must be 0
 */
struct ipt_sessions {
	__u32 size;
	__u32 flags;
	__u32 entry_size;
	__u32 nr_entries;
	__u32 total;
	__u32 reserved0;
	__u64 entries_ptr;
	__u64 reserved[2];
};

#define IPT_SESSIONS_SIZE_VER0	48

/**
 * struct ipt_stream_release - hand streamed data back (IPT_IOC_STREAM_RELEASE)
 * @size: the caller's sizeof(struct ipt_stream_release)
 * @flags: must be 0
 * @trace: the CPU (IPT_MODE_CPU) or trace index (IPT_MODE_THREAD)
 * @reserved0: must be 0
 * @released: the new release position: not below the trace's current one
 *            and not beyond its bytes_captured (else EINVAL, no change)
 * @reserved: must be 0
 */
struct ipt_stream_release {
	__u32 size;
	__u32 flags;
	__u32 trace;
	__u32 reserved0;
	__u64 released;
	__u64 reserved[2];
};

#define IPT_STREAM_RELEASE_SIZE_VER0	40

/* ipt_gap.bytes_lost when the unit cannot count what it did not write. */
#define IPT_GAP_BYTES_UNKNOWN	(~0ULL)

/**
 * struct ipt_gap - one pause of a streamed trace
 * @offset: stream position where the missing bytes would have been: the
 *          data before it was written before the pause, the data at it
 *          after the resume (the unit starts it with a PSB+)
 * @tsc_start: TSC when the unit paused
 * @tsc_end: TSC when it resumed; 0 while it is still paused
 * @bytes_lost: trace bytes the unit could not write, or
 *              IPT_GAP_BYTES_UNKNOWN
 * @cpu: the CPU it paused on
 * @flags: 0
 * @reserved: 0
 */
struct ipt_gap {
	__u64 offset;
	__u64 tsc_start;
	__u64 tsc_end;
	__u64 bytes_lost;
	__u32 cpu;
	__u32 flags;
	__u64 reserved;
};

#define IPT_GAP_SIZE_VER0	48

/**
 * struct ipt_gaps - the gaps of a streamed trace (IPT_IOC_GET_GAPS)
 * @size: the caller's sizeof(struct ipt_gaps)
 * @flags: must be 0
 * @trace: the CPU (IPT_MODE_CPU) or trace index (IPT_MODE_THREAD)
 * @entry_size: the caller's sizeof(struct ipt_gap), at least
 *              IPT_GAP_SIZE_VER0 and at most a page
 * @nr_entries: in: room at @entries_ptr; out: entries written
 * @reserved0: must be 0
 * @first: in: index of the first gap wanted (gaps are numbered from 0 in
 *         the order they began)
 * @total: out: gaps recorded so far; must be 0 in
 * @oldest: out: index of the oldest gap the kernel still itemises (it
 *          keeps a bounded number; older ones are counted in @total and
 *          in the trace's gap_bytes only); must be 0 in
 * @entries_ptr: the entries, or 0 with @nr_entries 0 to count only
 * @reserved: must be 0
 */
struct ipt_gaps {
	__u32 size;
	__u32 flags;
	__u32 trace;
	__u32 entry_size;
	__u32 nr_entries;
	__u32 reserved0;
	__u64 first;
	__u64 total;
	__u64 oldest;
	__u64 entries_ptr;
	__u64 reserved[2];
};

#define IPT_GAPS_SIZE_VER0	72

#define IPT_IOC_GET_CAPS	_IOWR(IPT_IOC_MAGIC, 0x00, struct ipt_caps)
#define IPT_IOC_CONFIGURE	_IOW(IPT_IOC_MAGIC, 0x01, struct ipt_config)
#define IPT_IOC_START		_IOW(IPT_IOC_MAGIC, 0x02, struct ipt_cmd)
#define IPT_IOC_STOP		_IOW(IPT_IOC_MAGIC, 0x03, struct ipt_cmd)
#define IPT_IOC_GET_TRACE	_IOWR(IPT_IOC_MAGIC, 0x04, struct ipt_trace_state)
#define IPT_IOC_RELEASE		_IOW(IPT_IOC_MAGIC, 0x05, struct ipt_cmd)
#define IPT_IOC_ATTACH		_IOWR(IPT_IOC_MAGIC, 0x06, struct ipt_attach)
#define IPT_IOC_DETACH		_IOW(IPT_IOC_MAGIC, 0x07, struct ipt_detach)
#define IPT_IOC_LIST_SESSIONS	_IOWR(IPT_IOC_MAGIC, 0x08, struct ipt_sessions)
#define IPT_IOC_STREAM_RELEASE	_IOW(IPT_IOC_MAGIC, 0x09, struct ipt_stream_release)
#define IPT_IOC_GET_GAPS	_IOWR(IPT_IOC_MAGIC, 0x0a, struct ipt_gaps)

#endif /* _UAPI_LINUX_IPT_H */

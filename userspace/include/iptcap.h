/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libiptcap: capture Intel Processor Trace through ipt.ko (/dev/ipt).
 *
 * Every function returns an enum iptcap_err; none prints or exits.  The
 * errno behind the last failure on a handle is kept for diagnostics
 * (iptcap_last_errno()).  Documentation/libiptcap.rst is the reference.
 */
#ifndef IPTCAP_H
#define IPTCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/ipt.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * enum iptcap_err - outcome of a library call
 */
enum iptcap_err {
	IPTCAP_OK = 0,
	IPTCAP_ERR_INVALID,	/* a parameter is invalid (EINVAL, E2BIG) */
	IPTCAP_ERR_NO_DEVICE,	/* /dev/ipt is missing: ipt.ko not loaded */
	IPTCAP_ERR_NO_PT,	/* no PT unit (ENODEV) */
	IPTCAP_ERR_BUSY,	/* PT is in use (EBUSY) */
	IPTCAP_ERR_PERMISSION,	/* needs CAP_PERFMON or root (EPERM, EACCES) */
	IPTCAP_ERR_NOMEM,	/* out of memory (ENOMEM) */
	IPTCAP_ERR_UNSUPPORTED,	/* the kernel does not know the request (ENOTTY) */
	IPTCAP_ERR_ABI,		/* the module speaks an incompatible ABI */
	IPTCAP_ERR_IO,		/* any other system error; see iptcap_last_errno() */
	IPTCAP_ERR_CAPABILITY,	/* the PT unit lacks a capability the config needs */
	IPTCAP_ERR_STATE,	/* the call does not fit the session's state */
	IPTCAP_ERR_NO_SUCH_CPU,	/* the CPU is not one of the session's (ENOENT) */
	IPTCAP_ERR_OVERWRITTEN,	/* a ring wrapped: its oldest bytes were overwritten */
	IPTCAP_ERR_TRUNCATED,	/* a stop-on-full buffer filled: later bytes were lost */
	IPTCAP_ERR_HW_ERROR,	/* the unit reported an operational error (STATUS.Error) */
	IPTCAP_ERR_NO_SPACE,	/* no space left on the output device (ENOSPC, EDQUOT) */
	IPTCAP_ERR__COUNT	/* number of values; not an error */
};

struct iptcap;

/* A short, static, human description of @err. */
const char *iptcap_strerror(enum iptcap_err err);
/* The enum iptcap_err a failing system call's errno maps to. */
enum iptcap_err iptcap_err_from_errno(int err);

/*
 * Open the device (@path NULL means IPT_DEVICE_PATH).  On success *@out
 * is a handle to release with iptcap_close(); on failure *@out is NULL.
 */
enum iptcap_err iptcap_open(const char *path, struct iptcap **out);
void iptcap_close(struct iptcap *ipt);
/* The errno of the last failed call on @ipt (0 if none). */
int iptcap_last_errno(const struct iptcap *ipt);

/* Read the PT unit's capabilities (IPT_IOC_GET_CAPS). */
enum iptcap_err iptcap_get_caps(struct iptcap *ipt, struct ipt_caps *caps);

/* Names for the values in struct ipt_caps; NULL for unknown values. */
const char *iptcap_backend_name(uint32_t backend);
const char *iptcap_unavail_str(uint32_t why);
/* @bit is one IPT_FEAT_* bit; the name is a stable lower_case token. */
const char *iptcap_feature_name(uint64_t bit);

/* ---- per-CPU sessions --------------------------------------------------- */

#define IPTCAP_DEFAULT_BUFFER_SIZE	(4ull << 20)

/**
 * struct iptcap_config - a per-CPU session, as named options
 * @all_cpus: trace every present CPU (@cpu_mask is ignored)
 * @cpu_mask: bitmap of CPUs (bit n of word n / 64 is CPU n) when !@all_cpus
 * @cpu_mask_words: words at @cpu_mask (1..IPT_MAX_CPU_MASK_WORDS)
 * @buffer_size: bytes per CPU, a multiple of 4096; 0: the default (4 MiB,
 *        or ipt_caps.max_trace_size when smaller)
 * @stop_on_full: stop when the buffer is full; else a ring (flight recorder)
 * @user: trace CPL > 0
 * @kernel: trace CPL 0 (privileged)
 * @tsc: TSC packets
 * @mtc_freq: MTC packets with CTL.MTCFreq = @mtc_freq; -1: no MTC
 * @cyc_thresh: CYC packets with CTL.CycThresh = @cyc_thresh; -1: no CYC
 * @psb_freq: CTL.PSBFreq; -1: the default (0)
 * @no_retcomp: disable return compression
 * @ranges: @nr_ranges address ranges (IPT_RANGE_FILTER: trace only inside,
 *        IPT_RANGE_STOP: stop tracing on entry), at most
 *        ipt_caps.num_addr_ranges (needs IPT_FEAT_IP_FILTER)
 * @nr_ranges: entries used in @ranges
 * @cr3_filter: trace only while CR3 equals @cr3_match (IPT_FEAT_CR3_FILTER)
 * @cr3_match: the raw CR3 value (bits 4:0 must be 0)
 *
 * Initialise with iptcap_config_init(); every field has a name, none is a
 * raw register value except the encodings the SDM defines (MTCFreq,
 * CycThresh, PSBFreq), which are checked against the caps' masks.
 */
struct iptcap_config {
	bool all_cpus;
	const uint64_t *cpu_mask;
	unsigned int cpu_mask_words;
	uint64_t buffer_size;
	bool stop_on_full;
	bool user;
	bool kernel;
	bool tsc;
	int mtc_freq;
	int cyc_thresh;
	int psb_freq;
	bool no_retcomp;
	struct ipt_addr_range ranges[IPT_MAX_ADDR_RANGES];
	unsigned int nr_ranges;
	bool cr3_filter;
	uint64_t cr3_match;
};

/* Defaults: all CPUs, user and kernel, ring, default size, no timing. */
void iptcap_config_init(struct iptcap_config *cfg);

/*
 * Check @cfg against @caps and translate it into @out.  On failure, @msg
 * (if not NULL) receives one sentence saying what is wrong; a missing
 * capability is named by its iptcap_feature_name() ("mtc", "psb_cyc", ...)
 * and gives IPTCAP_ERR_CAPABILITY.  @out->cpu_mask_ptr points into @cfg's
 * @cpu_mask, which must outlive @out's use.  Pure: no system call.
 */
enum iptcap_err iptcap_config_to_ipt(const struct iptcap_config *cfg,
				     const struct ipt_caps *caps,
				     struct ipt_config *out,
				     char *msg, size_t msg_len);

/*
 * Configure a per-CPU session on @ipt: read the caps, check @cfg (see
 * iptcap_config_to_ipt(), @msg as there) and allocate the buffers.
 * The session belongs to @ipt: iptcap_close() ends it.
 */
enum iptcap_err iptcap_configure(struct iptcap *ipt, const struct iptcap_config *cfg,
				 char *msg, size_t msg_len);
enum iptcap_err iptcap_start(struct iptcap *ipt);
enum iptcap_err iptcap_stop(struct iptcap *ipt);
/* Free the buffers (unmapping what iptcap_map() mapped); back to idle. */
enum iptcap_err iptcap_release(struct iptcap *ipt);

/* The state of @cpu's trace; IPTCAP_ERR_NO_SUCH_CPU if not in the session. */
enum iptcap_err iptcap_trace_state(struct iptcap *ipt, unsigned int cpu,
				   struct ipt_trace_state *ts);
/*
 * What a trace state says about lost data: IPTCAP_OK (complete),
 * IPTCAP_ERR_HW_ERROR, IPTCAP_ERR_OVERWRITTEN (ring wrapped) or
 * IPTCAP_ERR_TRUNCATED (stop-on-full filled), in that order of precedence.
 */
enum iptcap_err iptcap_trace_loss(const struct ipt_trace_state *ts);

/*
 * Map @cpu's buffer read-only (zero copy).  The mapping stays valid until
 * iptcap_release() or iptcap_close(); mapping twice returns the same one.
 */
enum iptcap_err iptcap_map(struct iptcap *ipt, unsigned int cpu,
			   const void **buf, size_t *len);

/**
 * struct iptcap_seg - a piece of a buffer, in trace order
 * @off: buffer offset
 * @len: bytes
 */
struct iptcap_seg {
	uint64_t off;
	uint64_t len;
};

/*
 * The trace in @ts as at most two buffer pieces in order, oldest byte
 * first: a wrapped ring is [oldest, size) then [0, oldest); anything else
 * is [0, bytes_valid) (a full stop-on-full buffer: exactly its size).
 * Returns the number of pieces (0 for an empty trace) or -1 when @ts is
 * inconsistent (offsets beyond the buffer).  Pure.
 */
int iptcap_trace_segments(const struct ipt_trace_state *ts, struct iptcap_seg seg[2]);

/*
 * Copy the trace of @cpu in order into @dst (at most @len bytes); *@copied
 * receives the bytes copied.  IPTCAP_ERR_INVALID if @len is smaller than
 * the trace (nothing is copied then; iptcap_trace_state() gives the size).
 */
enum iptcap_err iptcap_copy_trace(struct iptcap *ipt, unsigned int cpu,
				  void *dst, size_t len, size_t *copied);

/*
 * Copy the trace described by @ts out of @buf (its buffer, e.g. the
 * mapping of iptcap_map()) into @dst in order, oldest byte first (see
 * iptcap_trace_segments()).  IPTCAP_ERR_INVALID if @len is smaller than
 * the trace, IPTCAP_ERR_ABI if @ts is inconsistent.  Pure.
 */
enum iptcap_err iptcap_copy_segments(const void *buf, const struct ipt_trace_state *ts,
				     void *dst, size_t len, size_t *copied);

/* ---- time: TSC <-> perf time ------------------------------------------- */

/**
 * struct iptcap_time_conv - the kernel's TSC <-> perf clock conversion
 * @time_shift: perf_event_mmap_page.time_shift
 * @time_mult: perf_event_mmap_page.time_mult
 * @time_zero: perf_event_mmap_page.time_zero (valid with cap_user_time_zero)
 */
struct iptcap_time_conv {
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
};

/*
 * Read the conversion from a perf software dummy event's mmap page.
 * IPTCAP_ERR_UNSUPPORTED when the kernel offers none (cap_user_time_zero
 * is 0, e.g. an unstable TSC); other errors from perf_event_open(2).
 * @msg (if not NULL) receives one sentence on failure.
 */
enum iptcap_err iptcap_read_time_conv(struct iptcap_time_conv *tc, char *msg, size_t msg_len);
/* perf time (ns of the perf clock) of TSC value @tsc, and back.  Pure. */
uint64_t iptcap_tsc_to_time(const struct iptcap_time_conv *tc, uint64_t tsc);
uint64_t iptcap_time_to_tsc(const struct iptcap_time_conv *tc, uint64_t time);

/* ---- sideband: what ran where (perf dummy events, /proc) --------------- */

/**
 * enum iptcap_sb_type - kind of a sideband record
 * @IPTCAP_SB_MMAP: an executable mapping (PERF_RECORD_MMAP2, or a
 *        /proc/PID/maps line of the snapshot)
 * @IPTCAP_SB_COMM: a thread's name; @exec when it comes from an exec
 * @IPTCAP_SB_FORK: a process or thread was created
 * @IPTCAP_SB_EXIT: a thread exited
 * @IPTCAP_SB_SWITCH: a context switch on @cpu (PERF_RECORD_SWITCH_CPU_WIDE)
 * @IPTCAP_SB_LOST: the kernel dropped @lost records: the ring was full
 * @IPTCAP_SB_OTHER: a record of another type (@raw_type), not parsed
 */
enum iptcap_sb_type {
	IPTCAP_SB_MMAP = 1,
	IPTCAP_SB_COMM,
	IPTCAP_SB_FORK,
	IPTCAP_SB_EXIT,
	IPTCAP_SB_SWITCH,
	IPTCAP_SB_LOST,
	IPTCAP_SB_OTHER,
};

/**
 * struct iptcap_sb_rec - one sideband record, parsed
 * @type: enum iptcap_sb_type
 * @raw_type: the perf record type (PERF_RECORD_*), 0 for snapshot records
 * @misc: the perf record header's misc bits
 * @snapshot: from the /proc snapshot: @time and @cpu are not meaningful
 * @cpu: the CPU the record was written on
 * @time: perf time in ns (sample_id_all), see struct iptcap_time_conv
 * @pid: process; for MMAP, COMM, FORK, EXIT the record's own pid, for
 *       SWITCH and LOST the task current when it was written
 * @tid: thread, likewise
 * @ppid: FORK / EXIT: the parent process
 * @ptid: FORK / EXIT: the parent thread
 * @addr: MMAP: start address
 * @len: MMAP: length in bytes
 * @pgoff: MMAP: file offset in bytes
 * @prot: MMAP: PROT_* bits
 * @flags: MMAP: MAP_* bits (MAP_SHARED or MAP_PRIVATE from a snapshot)
 * @has_dev: MMAP: @maj, @min, @ino, @ino_generation are valid
 * @build_id_size: MMAP: bytes of @build_id (0: none)
 * @build_id: MMAP: the ELF build-id (the kernel's with
 *        PERF_RECORD_MISC_MMAP_BUILD_ID)
 * @name: MMAP: the file ("[vdso]", "//anon", ...); COMM: the name.
 *        Points into the record: valid during the callback only
 * @exec: COMM: set by an exec (PERF_RECORD_MISC_COMM_EXEC)
 * @switch_out: SWITCH: the task @pid/@tid leaves the CPU (else enters)
 * @preempt: SWITCH: switched out while runnable (preempted)
 * @next_prev_pid: SWITCH: the task entering (out) or leaving (in)
 * @next_prev_tid: likewise
 * @lost: LOST: records dropped
 */
struct iptcap_sb_rec {
	enum iptcap_sb_type type;
	uint32_t raw_type;
	uint32_t misc;
	bool snapshot;
	uint32_t cpu;
	uint64_t time;
	uint32_t pid, tid, ppid, ptid;
	uint64_t addr, len, pgoff;
	uint32_t prot, flags;
	bool has_dev;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint8_t build_id_size;
	uint8_t build_id[20];
	const char *name;
	bool exec;
	bool switch_out;
	bool preempt;
	uint32_t next_prev_pid, next_prev_tid;
	uint64_t lost;
};

/*
 * Parse one perf record of a sideband event (attr.sample_id_all with
 * sample_type PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU) at
 * @rec, @len bytes (its header's size).  0, or -1 if it is malformed.
 * @out->name points into @rec.  Pure.
 */
int iptcap_sb_parse(const void *rec, size_t len, struct iptcap_sb_rec *out);

/**
 * struct iptcap_sb_opts - what iptcap_sb_open() records
 * @data_pages: ring pages per CPU, a power of two; 0: 256 (1 MiB), halved
 *        down to 8 while perf_event_mlock_kb does not allow it
 * @no_switch: no context-switch records
 * @no_build_id: do not ask the kernel for build-ids in mmap records
 */
struct iptcap_sb_opts {
	unsigned int data_pages;
	bool no_switch;
	bool no_build_id;
};

struct iptcap_sb;

/*
 * Open a software dummy perf event on every online CPU (disabled): mmap2
 * of executable mappings with build-ids where the kernel gives them,
 * comm and exec, fork and exit, CPU-wide context switches, each with
 * time, pid/tid and CPU.  @opts may be NULL.  Needs CAP_PERFMON (or
 * root), or perf_event_paranoid <= 0; IPTCAP_ERR_PERMISSION otherwise.
 * @msg (if not NULL) receives one sentence on failure.
 */
enum iptcap_err iptcap_sb_open(const struct iptcap_sb_opts *opts, struct iptcap_sb **out,
			       char *msg, size_t msg_len);
enum iptcap_err iptcap_sb_enable(struct iptcap_sb *sb);
enum iptcap_err iptcap_sb_disable(struct iptcap_sb *sb);
void iptcap_sb_close(struct iptcap_sb *sb);
/* Whether the kernel accepted attr.build_id (mmap records carry build-ids). */
bool iptcap_sb_build_ids(const struct iptcap_sb *sb);

/*
 * Wait up to @timeout_ms for a ring to fill to a quarter of its size: 1 if
 * one did, 0 on timeout (or a signal), -1 on error or when an event hung
 * up (the caller should then sleep instead).  Drain with
 * iptcap_sb_read() after it.  (Polls the first 64 CPUs' rings.)
 */
int iptcap_sb_wait(struct iptcap_sb *sb, int timeout_ms);

/* Called for each record; a non-zero return stops the read and is passed back. */
typedef int (*iptcap_sb_fn)(const struct iptcap_sb_rec *rec, void *arg);

/*
 * Drain every CPU's ring, calling @fn for each record in ring order (per
 * CPU in time order, CPUs one after the other).  Returns @fn's first
 * non-zero value (records after it stay in the ring), or 0.
 */
int iptcap_sb_read(struct iptcap_sb *sb, iptcap_sb_fn fn, void *arg);

/**
 * struct iptcap_sb_cpu_stats - one CPU's sideband so far
 * @cpu: the CPU
 * @records: records read (PERF_RECORD_LOST ones included)
 * @lost: records the kernel dropped (sum of PERF_RECORD_LOST)
 * @bytes: bytes read from the ring
 */
struct iptcap_sb_cpu_stats {
	uint32_t cpu;
	uint64_t records;
	uint64_t lost;
	uint64_t bytes;
};

/* CPUs with an event; the stats of the @i-th (0 .. that - 1). */
unsigned int iptcap_sb_nr_cpus(const struct iptcap_sb *sb);
void iptcap_sb_cpu_stats(const struct iptcap_sb *sb, unsigned int i,
			 struct iptcap_sb_cpu_stats *st);

/**
 * struct iptcap_snapshot_stats - what iptcap_proc_snapshot() found
 * @processes: processes whose maps were read
 * @threads: threads whose comm was read
 * @maps: executable mappings reported
 * @vanished: processes that exited while being read, or whose /proc
 *        files could not be read (permission)
 */
struct iptcap_snapshot_stats {
	uint64_t processes;
	uint64_t threads;
	uint64_t maps;
	uint64_t vanished;
};

/*
 * The processes that exist now, from @proc (NULL: "/proc"): for each
 * process, a COMM record per thread (/proc/PID/task/TID/comm) and an
 * MMAP record per executable mapping of /proc/PID/maps (@has_dev set,
 * @build_id from the file for regular files when readable), all with
 * @snapshot set.  A process that vanishes meanwhile is counted and
 * skipped.  Returns @fn's first non-zero value, or 0.
 */
int iptcap_proc_snapshot(const char *proc, iptcap_sb_fn fn, void *arg,
			 struct iptcap_snapshot_stats *st);

/*
 * The address range of the function or object @name in the 64-bit ELF
 * file at @path (its .symtab, else .dynsym): *@start = st_value, *@size =
 * st_size, *@pie = the file is ET_DYN (position-independent: the address
 * is relative to where it is loaded).  0, or -1 with one sentence in @msg.
 */
int iptcap_elf_symbol(const char *path, const char *name, uint64_t *start, uint64_t *size,
		      bool *pie, char *msg, size_t msg_len);

/*
 * The GNU build-id (NT_GNU_BUILD_ID) of the ELF file at @path, read from
 * its PT_NOTE segments: 0 and *@len bytes in @id, or -1 (not ELF, no
 * build-id, unreadable).
 */
int iptcap_elf_build_id(const char *path, uint8_t id[20], uint8_t *len);

#ifdef __cplusplus
}
#endif

#endif /* IPTCAP_H */

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
	IPTCAP_ERR_NO_SUCH_THREAD,	/* no such thread, or it is exiting (ESRCH) */
	IPTCAP_ERR_NO_FREE_TRACE,	/* every trace of the per-thread session is in use */
	IPTCAP_ERR_ALREADY_TRACED,	/* the thread is already traced in this session (EEXIST) */
	IPTCAP_ERR_NO_SUCH_TRACE,	/* no thread has that trace (yet) (ENOENT) */
	IPTCAP_ERR_NO_THREAD_MODE,	/* this ipt.ko has no per-thread mode (too old) */
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

/* ---- sessions: per-CPU and per-thread ----------------------------------- */

#define IPTCAP_DEFAULT_BUFFER_SIZE	(4ull << 20)
/* Traces of a per-thread session when iptcap_config.max_threads is 0. */
#define IPTCAP_DEFAULT_MAX_THREADS	64

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
 * @per_thread: an IPT_MODE_THREAD session: threads are attached with
 *        iptcap_attach(), each into a buffer of @buffer_size bytes;
 *        @all_cpus and @cpu_mask are ignored
 * @max_threads: per-thread: traces the session holds (1..IPT_MAX_THREADS;
 *        0: IPTCAP_DEFAULT_MAX_THREADS), all allocated at configure time
 * @stream: stream the buffer (IPT_BUFFER_STREAM, needs IPT_FEAT_STREAM):
 *        read it while tracing with iptcap_stream_*(); excludes
 *        @stop_on_full
 * @nr_regions: @stream: regions of the buffer, a power of two from
 *        IPT_STREAM_MIN_REGIONS to IPT_STREAM_MAX_REGIONS of two pages or
 *        more each; 0: IPT_STREAM_DEF_REGIONS
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
	bool per_thread;
	unsigned int max_threads;
	bool stream;
	unsigned int nr_regions;
};

/* Defaults: per-CPU, all CPUs, user and kernel, ring, default size, no timing. */
void iptcap_config_init(struct iptcap_config *cfg);

/*
 * The field of struct iptcap_config a check found wrong.  A library reports
 * fields, never a tool's option names: a tool maps the field to its own
 * option (ipttool: IPTCAP_FIELD_MTC_FREQ is --mtc).
 */
enum iptcap_field {
	IPTCAP_FIELD_NONE,		/* not one field: no usable PT unit */
	IPTCAP_FIELD_CPUS,		/* @all_cpus, @cpu_mask, @cpu_mask_words */
	IPTCAP_FIELD_MAX_THREADS,
	IPTCAP_FIELD_BUFFER_SIZE,
	IPTCAP_FIELD_PRIVILEGE,		/* @user and @kernel */
	IPTCAP_FIELD_MTC_FREQ,
	IPTCAP_FIELD_CYC_THRESH,
	IPTCAP_FIELD_PSB_FREQ,
	IPTCAP_FIELD_RANGES,		/* @ranges, @nr_ranges */
	IPTCAP_FIELD_CR3_MATCH,		/* @cr3_filter, @cr3_match */
	IPTCAP_FIELD_STREAM,		/* @stream, @nr_regions */
};

/* The field's name as in struct iptcap_config ("mtc_freq", ...). */
const char *iptcap_field_name(enum iptcap_field field);

/**
 * struct iptcap_config_error - what iptcap_config_check() refused
 * @field: the field at fault
 * @index: IPTCAP_FIELD_RANGES: the range at fault (-1: the ranges together)
 * @value: the offending value as text ("31", "0x1004", "0x2000-0x1000"), or
 *         "" where the field as a whole is wrong
 * @reason: what is wrong, one clause without the field's name
 *          ("this PT unit supports 0,3,7")
 */
struct iptcap_config_error {
	enum iptcap_field field;
	int index;
	char value[64];
	char reason[200];
};

/*
 * Check @cfg against @caps and translate it into @out.  On failure @e (if
 * not NULL) says which field is wrong and why; a missing capability is
 * named in @e->reason by its iptcap_feature_name() ("mtc", "psb_cyc", ...)
 * and gives IPTCAP_ERR_CAPABILITY, a value no unit accepts
 * IPTCAP_ERR_INVALID.  @out->cpu_mask_ptr points into @cfg's @cpu_mask,
 * which must outlive @out's use.  Pure: no system call.
 */
enum iptcap_err iptcap_config_check(const struct iptcap_config *cfg,
				    const struct ipt_caps *caps,
				    struct ipt_config *out,
				    struct iptcap_config_error *e);

/*
 * One sentence for @e into @msg: "NAME[INDEX] VALUE: REASON", NAME being
 * @name (a tool's option) or, if NULL, the field's name; the range index is
 * shown with the field's own name only.
 */
void iptcap_config_error_format(const struct iptcap_config_error *e, const char *name,
				char *msg, size_t msg_len);

/*
 * iptcap_config_check() with the failure as one sentence in @msg (if not
 * NULL), the field named as in struct iptcap_config
 * (iptcap_config_error_format() with no @name).
 */
enum iptcap_err iptcap_config_to_ipt(const struct iptcap_config *cfg,
				     const struct ipt_caps *caps,
				     struct ipt_config *out,
				     char *msg, size_t msg_len);

/*
 * Configure a session on @ipt (per-CPU, or per-thread with
 * @cfg->per_thread): read the caps, check @cfg (see iptcap_config_to_ipt(),
 * @msg as there) and allocate the buffers.  The session belongs to @ipt:
 * iptcap_close() ends it.  A per-thread configuration refused by a module
 * that predates per-thread mode gives IPTCAP_ERR_NO_THREAD_MODE.
 */
enum iptcap_err iptcap_configure(struct iptcap *ipt, const struct iptcap_config *cfg,
				 char *msg, size_t msg_len);
enum iptcap_err iptcap_start(struct iptcap *ipt);
enum iptcap_err iptcap_stop(struct iptcap *ipt);
/* Free the buffers (unmapping what iptcap_map() mapped); back to idle. */
enum iptcap_err iptcap_release(struct iptcap *ipt);

/*
 * The state of @cpu's trace; IPTCAP_ERR_NO_SUCH_CPU if not in the session.
 * In a per-thread session @cpu is the trace index (0 .. max_threads - 1):
 * IPTCAP_ERR_NO_SUCH_TRACE when no thread has been given it yet.  Every
 * function below that takes a CPU takes a trace index in that mode.
 */
enum iptcap_err iptcap_trace_state(struct iptcap *ipt, unsigned int cpu,
				   struct ipt_trace_state *ts);

/* Whether the session configured on @ipt is per-thread. */
bool iptcap_is_per_thread(const struct iptcap *ipt);
/*
 * Whether the module behind @ipt knows per-thread mode (IPT_IOC_ATTACH):
 * probed with a malformed attach, which a new module refuses with EINVAL
 * and an old one with ENOTTY.  No session is needed.
 */
bool iptcap_has_thread_mode(struct iptcap *ipt);

/* iptcap_attach() flags */
#define IPTCAP_ATTACH_INHERIT	IPT_ATTACH_INHERIT	/* its new threads and children too */

/*
 * Per-thread session: trace thread @tid (in the caller's pid namespace; 0
 * is the calling thread) into the next free trace, whose index goes to
 * *@trace.  Valid once configured, also while tracing.  Errors:
 * IPTCAP_ERR_NO_SUCH_THREAD, IPTCAP_ERR_PERMISSION (another process's
 * thread without CAP_PERFMON), IPTCAP_ERR_ALREADY_TRACED,
 * IPTCAP_ERR_NO_FREE_TRACE (traces are handed out in order and never
 * reused within a session), IPTCAP_ERR_STATE (not a per-thread session).
 * Safe between fork() and exec() (one ioctl, no allocation).
 */
enum iptcap_err iptcap_attach(struct iptcap *ipt, uint32_t tid, unsigned int flags,
			      unsigned int *trace);
/*
 * Stop tracing the thread of @trace; the trace stays readable (final,
 * IPT_TS_DETACHED).  IPTCAP_ERR_NO_SUCH_TRACE, or IPTCAP_ERR_NO_SUCH_THREAD
 * when its thread already exited or was detached.
 */
enum iptcap_err iptcap_detach(struct iptcap *ipt, unsigned int trace);
/*
 * Per-thread session: the number of traces handed out so far (they are
 * indexes 0 .. *@n - 1, in attach / creation order).
 */
enum iptcap_err iptcap_nr_traces(struct iptcap *ipt, unsigned int *n);
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

/* ---- streaming (IPT_BUFFER_STREAM) ------------------------------------- */

/* The device file of @ipt, e.g. for the caller's own poll()/epoll loop. */
int iptcap_fd(const struct iptcap *ipt);
/*
 * Hand the data of a streamed trace back up to stream position @released
 * (IPT_IOC_STREAM_RELEASE): IPTCAP_ERR_INVALID when it is below the
 * current release position or beyond bytes_captured.  A thread's trace the
 * kernel could not reach because the thread kept migrating (EAGAIN,
 * nothing changed) is tried again, up to IPTCAP_RELEASE_TRIES times in
 * all, yielding the CPU between tries; then IPTCAP_ERR_IO, errno EAGAIN.
 */
#define IPTCAP_RELEASE_TRIES 64
enum iptcap_err iptcap_stream_release(struct iptcap *ipt, unsigned int trace, uint64_t released);
/*
 * Read up to @nr gap records of a streamed trace from gap index @first
 * into @gaps (IPT_IOC_GET_GAPS; @gaps NULL or @nr 0: count only): *@got
 * entries, *@total gaps so far, *@oldest the oldest the kernel still
 * itemises (entries start at the larger of @first and *@oldest).
 */
enum iptcap_err iptcap_get_gaps(struct iptcap *ipt, unsigned int trace, uint64_t first,
				struct ipt_gap *gaps, unsigned int nr, unsigned int *got,
				uint64_t *total, uint64_t *oldest);

/**
 * struct iptcap_stream_trace - the trace a stream callback is about
 * @trace: the CPU (per-CPU session) or trace index (per-thread)
 * @cpu: per-CPU: the CPU; per-thread: IPT_TRACE_NONE (it follows a thread)
 * @tid: per-thread: the thread; per-CPU: 0
 */
struct iptcap_stream_trace {
	unsigned int trace;
	uint32_t cpu;
	uint32_t tid;
};

/**
 * struct iptcap_stream_ops - what a stream consumer is handed
 * @data: @len bytes of the trace at stream position @offset (bytes since
 *        configure; a sink that writes every byte at file offset @offset
 *        makes stream and file offsets equal), pointing into the read-only
 *        mapping: valid during the call only.  Called in stream order per
 *        trace; a wrapped range comes as two calls.  Return 0, or an errno
 *        value: the data is then not released and the drain stops.
 * @gap: a pause of the unit (may be NULL): @gap->offset is the stream
 *        position of the first byte after it.  0 or an errno, as @data.
 * @unlisted: @nr gaps the kernel counted but no longer itemises (it keeps
 *        a bounded number): their place and size are unknown (may be NULL)
 */
struct iptcap_stream_ops {
	int (*data)(const struct iptcap_stream_trace *tr, uint64_t offset, const void *data,
		    size_t len, void *user);
	int (*gap)(const struct iptcap_stream_trace *tr, const struct ipt_gap *gap, void *user);
	int (*unlisted)(const struct iptcap_stream_trace *tr, uint64_t nr, void *user);
};

/**
 * struct iptcap_stream_stats - what a stream delivered so far
 * @bytes: trace bytes handed to @data (and released)
 * @gaps: gaps handed to @gap
 * @gaps_unlisted: gaps the kernel no longer itemised
 * @gaps_unknown: of @gaps, those whose size the unit could not count
 * @gap_bytes: bytes lost in the gaps of known size (itemised or not:
 *        the sum of the traces' ipt_trace_state.gap_bytes)
 * @traces: traces seen
 * @paused: traces paused at the last drain (the consumer was too slow)
 */
struct iptcap_stream_stats {
	uint64_t bytes;
	uint64_t gaps;
	uint64_t gaps_unlisted;
	uint64_t gaps_unknown;
	uint64_t gap_bytes;
	unsigned int traces;
	unsigned int paused;
};

struct iptcap_stream;

/*
 * A consumer of the streamed session configured on @ipt (iptcap_config
 * .stream): @ops and @user are passed to every callback.  Traces are
 * found as they appear (per-thread: as threads are attached).
 */
enum iptcap_err iptcap_stream_open(struct iptcap *ipt, const struct iptcap_stream_ops *ops,
				   void *user, struct iptcap_stream **out);
/*
 * Wait up to @timeout_ms (-1: no limit) for the device to say that a
 * trace has a region ready, is paused, or that the session stopped with
 * data unreleased (poll() on iptcap_fd(), as epoll would): 1 ready, 0
 * not (timeout or a signal), -1 on error.
 */
int iptcap_stream_wait(struct iptcap_stream *s, int timeout_ms);
/*
 * One pass over the traces: hand what is ready to @ops->data, release
 * it, then hand new gaps to @ops->gap (a gap the unit is still in is left
 * for a later pass).  A callback's errno stops the pass and is returned
 * as its enum iptcap_err (ENOSPC: IPTCAP_ERR_NO_SPACE), the errno
 * itself in iptcap_stream_errno(); that data stays unreleased.
 */
enum iptcap_err iptcap_stream_drain(struct iptcap_stream *s);
/*
 * With the session stopped: drain everything left, gaps still open
 * included (their tsc_end is 0 when the kernel did not close them).
 */
enum iptcap_err iptcap_stream_finish(struct iptcap_stream *s);
/* The errno a callback returned (0 if none). */
int iptcap_stream_errno(const struct iptcap_stream *s);
void iptcap_stream_stats(const struct iptcap_stream *s, struct iptcap_stream_stats *st);
void iptcap_stream_close(struct iptcap_stream *s);

/*
 * The default sink: every trace's bytes into a file of @dir at their
 * stream offsets, "cpuN.pt" per CPU, "thread-TID.pt" per thread
 * ("thread-TID.TRACE.pt" for a TID's later traces, and for a trace whose
 * "thread-TID.pt" exists already), as ipttool's capture directory
 * (Documentation/capture-format.rst) names them.  Files are created with
 * O_EXCL: the sink never truncates an existing file (a "cpuN.pt" that
 * exists is an EEXIST write error).  Its @data callback is
 * iptcap_stream_files_data() with the handle as @user.
 */
struct iptcap_stream_files;

enum iptcap_err iptcap_stream_files_open(const char *dir, struct iptcap_stream_files **out);
int iptcap_stream_files_data(const struct iptcap_stream_trace *tr, uint64_t offset,
			     const void *data, size_t len, void *user);
/*
 * What was written for @trace: its file name (NULL if no byte came yet),
 * bytes written, and the errno of the first failed write (0: none).
 */
const char *iptcap_stream_files_get(const struct iptcap_stream_files *f, unsigned int trace,
				    uint64_t *written, int *write_errno);
/*
 * Create @tr's file if no byte came for it: an empty file, named by the
 * same rule as one with data, so that names never collide.
 */
enum iptcap_err iptcap_stream_files_touch(struct iptcap_stream_files *f,
					  const struct iptcap_stream_trace *tr);
/*
 * With the stream finished: fsync and close every file, then fsync the
 * directory.  0, or the first errno; a file's fsync or close error
 * becomes its write_errno (iptcap_stream_files_get()).  Data arriving
 * afterwards is refused (EBADF).
 */
int iptcap_stream_files_sync(struct iptcap_stream_files *f);
/* Close the files: 0, or the errno of the first failed write or close. */
int iptcap_stream_files_close(struct iptcap_stream_files *f);

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
 * @raw: the perf record itself (header included), @raw_len bytes; valid
 *       during the callback only (iptcap_sb_parse(): @rec)
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
	const void *raw;
	size_t raw_len;
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
 * @tid: 0: CPU-wide events, one per online CPU; else a single event that
 *       follows thread @tid on any CPU (its own mmaps, comm, exit and
 *       switches in and out, PERF_RECORD_SWITCH), which needs no
 *       CAP_PERFMON for the caller's own threads (perf_event_paranoid <= 2)
 */
struct iptcap_sb_opts {
	unsigned int data_pages;
	bool no_switch;
	bool no_build_id;
	uint32_t tid;
};

struct iptcap_sb;

/*
 * Open a software dummy perf event on every online CPU (or one for
 * @opts->tid), disabled: mmap2
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
 * @cpu: the CPU (UINT32_MAX for the event of iptcap_sb_opts.tid)
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

/* ---- a tracer per thread (the shape of DynamoRIO's drpttracer) ---------- */

/**
 * struct iptcap_thread_opts - how iptcap_thread_create() traces
 * @device: the device node; NULL: IPT_DEVICE_PATH
 * @buffer_size: bytes of trace per start/stop interval (a multiple of
 *        4096; 0: the default, 4 MiB or the unit's maximum when smaller)
 * @stop_on_full: keep the first bytes when the buffer fills (else a ring:
 *        the last ones)
 * @kernel: also trace CPL 0 (needs CAP_PERFMON); user code is always traced
 * @tsc: TSC packets (needed to place the trace on the sideband's clock)
 * @max_threads: traces of the process-wide session (0:
 *        IPTCAP_THREAD_DEFAULT_MAX); each start uses one, see below
 * @no_sideband: no perf sideband events
 *
 * All handles of a process share one per-thread session, configured by
 * the first handle with its options (later handles' @buffer_size,
 * @stop_on_full, @kernel and @tsc are ignored while it exists).
 */
#define IPTCAP_THREAD_DEFAULT_MAX	16

struct iptcap_thread_opts {
	const char *device;
	uint64_t buffer_size;
	bool stop_on_full;
	bool kernel;
	bool tsc;
	unsigned int max_threads;
	bool no_sideband;
};

/**
 * struct iptcap_pt_metadata - what a decoder needs besides the bytes
 * @cpu_family: display family (ptxed --cpu F/M/S)
 * @cpu_model: display model
 * @cpu_stepping: stepping
 * @have_time_conv: @time_shift, @time_mult, @time_zero are valid
 * @time_shift: perf_event_mmap_page.time_shift (TSC <-> perf time)
 * @time_mult: perf_event_mmap_page.time_mult
 * @time_zero: perf_event_mmap_page.time_zero
 * @cpuid_15: CPUID.15H (TSC / crystal ratio)
 * @nom_freq: maximum non-turbo ratio (0: unknown)
 */
struct iptcap_pt_metadata {
	uint32_t cpu_family;
	uint32_t cpu_model;
	uint32_t cpu_stepping;
	bool have_time_conv;
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	struct ipt_cpuid_regs cpuid_15;
	uint32_t nom_freq;
};

/**
 * struct iptcap_output - one thread's trace of one start/stop interval
 * @pt: the raw PT bytes, oldest first (a wrapped ring unrolled), @pt_size
 * @sideband: raw perf records of the thread (each starts with its struct
 *        perf_event_header; parse with iptcap_sb_parse()), @sideband_size
 *        bytes; empty when the sideband event could not be opened
 *        (@sideband_skipped says why)
 * @metadata: CPU identity and the TSC conversion
 * @tid: the traced thread
 * @loss: iptcap_trace_loss() of the trace: IPTCAP_OK, or what was lost
 * @bytes_lost: bytes a ring overwrote
 * @sideband_lost: perf records the kernel dropped
 * @sideband_skipped: empty, or why there is no sideband
 *
 * Zero it before the first iptcap_thread_stop(); it can be reused for the
 * next one (its buffers are reused); iptcap_output_free() frees them.
 */
struct iptcap_output {
	void *pt;
	size_t pt_size;
	void *sideband;
	size_t sideband_size;
	struct iptcap_pt_metadata metadata;
	uint32_t tid;
	enum iptcap_err loss;
	uint64_t bytes_lost;
	uint64_t sideband_lost;
	char sideband_skipped[160];
	size_t pt_cap, sideband_cap;	/* allocated sizes (private) */
};

struct iptcap_thread;

/*
 * A tracer of the calling thread.  @opts may be NULL.  The first handle
 * of the process opens the device and configures and starts the shared
 * per-thread session; the last iptcap_thread_destroy() releases it.
 * A perf sideband event of the thread is opened (best effort).
 */
enum iptcap_err iptcap_thread_create(const struct iptcap_thread_opts *opts,
				     struct iptcap_thread **out);
/*
 * Trace the calling thread (which must be the handle's) from now on, into
 * a fresh trace of the session.  When the session's traces are used up
 * and no other handle traces, the session is configured anew.
 */
enum iptcap_err iptcap_thread_start(struct iptcap_thread *th);
/*
 * Stop tracing and copy what was traced since iptcap_thread_start() into
 * @out: PT bytes, the thread's sideband, the metadata.  The data's losses
 * are in @out->loss, not in the return value.
 */
enum iptcap_err iptcap_thread_stop(struct iptcap_thread *th, struct iptcap_output *out);
/* Stop if tracing, drop the handle (and the session with the last one). */
void iptcap_thread_destroy(struct iptcap_thread *th);
/* Free @out's buffers and zero it. */
void iptcap_output_free(struct iptcap_output *out);

#ifdef __cplusplus
}
#endif

#endif /* IPTCAP_H */

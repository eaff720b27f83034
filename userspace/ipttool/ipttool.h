/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipttool: shared declarations of the command-line tool.
 */
#ifndef IPTTOOL_H
#define IPTTOOL_H

#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

#include "iptcap.h"

/**
 * struct ipttool - options that apply to every command
 * @json: print data as JSON instead of text
 * @pretty: indent JSON output
 * @device: the device node to open
 */
struct ipttool {
	bool json;
	bool pretty;
	const char *device;
};

/* A command: returns the process exit status. */
int cmd_caps(struct ipttool *t, int argc, char **argv);
int cmd_record(struct ipttool *t, int argc, char **argv);
int cmd_info(struct ipttool *t, int argc, char **argv);
int cmd_start(struct ipttool *t, int argc, char **argv);
int cmd_stop(struct ipttool *t, int argc, char **argv);
int cmd_status(struct ipttool *t, int argc, char **argv);
int cmd_dump(struct ipttool *t, int argc, char **argv);
/* decode.c (the decoder itself is in userspace/decode/) */
int cmd_decode(struct ipttool *t, int argc, char **argv);
/* selftest.c: ipttool selftest (Documentation/man/ipttool-selftest.8) */
int cmd_selftest(struct ipttool *t, int argc, char **argv);

/*
 * Print "ipttool: <message>" to stderr (printf-style, newline added); with
 * ipt_set_json_errors(true) (-j), {"error": "<message>"} on stdout instead.
 */
void ipt_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ipt_set_json_errors(bool on);
/*
 * With -j: keep the messages of ipt_err() instead of printing them, for the
 * one JSON document the command ends with (ipt_take_errors(): the messages
 * joined by "; ", malloc'd, or NULL when none).
 */
void ipt_defer_errors(bool on);
char *ipt_take_errors(void);
/*
 * Finish writing the output @f: check every earlier fprintf/fwrite
 * (ferror()), fflush() and, unless stdout or stderr, fclose().  0, or 1
 * after a one-line error: @name ("decode: --insn=FILE") and the errno
 * (once for stdout: later calls on it return 1 quietly).
 */
int ipt_close_out(FILE *f, const char *name);
/*
 * fopen(@path, "w") whose stream keeps the errno of its first failed
 * write for ipt_close_out() (at most 16 open at once).  NULL + errno.
 */
FILE *ipt_fopen_out(const char *path);
/* @v as a JSON string "0x..." (64-bit addresses: jq rounds numbers > 2^53). */
struct json_object *ipt_json_hex(uint64_t v);
/* Report a failed open of the device with what to do about it. */
void ipt_err_open(const struct ipttool *t, enum iptcap_err err);
/* Print @obj to stdout as JSON, following --pretty; drops the reference. */
int ipt_print_json(const struct ipttool *t, struct json_object *obj);

/* caps.c, exposed for the unit tests */
struct json_object *caps_to_json(const struct ipt_caps *caps);

/* holders.c: the sessions holding the unit (IPT_IOC_LIST_SESSIONS) */
/* Up to @max entries into @e, the visible total in @total: count or -errno. */
int holders_get(const char *device, struct ipt_session_info *e,
		unsigned int max, unsigned int *total);
/* One line: mode, state, uid, pid, traces (threads), "kernel". */
void holder_format(const struct ipt_session_info *e, char *buf, size_t len);
struct json_object *holders_to_json(const struct ipt_session_info *e, unsigned int n);
/* The hint after an EBUSY: who holds the unit, one line, on @f. */
void holders_describe(const char *device, FILE *f);
void caps_print_text(FILE *f, const struct ipt_caps *caps);
/* Write @mask as a list of set bit numbers with ranges: "0-12" or "0,3,6". */
void mask_to_list(uint32_t mask, char *buf, size_t len);

/* ---- record.c: option parsing, exposed for the unit tests ---------------- */

/**
 * struct record_opts - what 'ipttool record' was asked to do
 * @cfg: the session; @cfg.cpu_mask points at @cpu_mask
 * @cpu_mask: CPUs of -C
 * @out_dir: -o (default "ipt.data")
 * @duration: --duration in seconds (0: none)
 * @prog_argv: the command after the options (NULL-terminated), or NULL
 * @help: --help was given
 * @quiet: -q: no progress line
 * @no_sideband: --no-sideband
 * @tids: per-thread: the threads of -p, @nr_tids of them (at most
 *        RECORD_MAX_TIDS)
 * @no_inherit: per-thread: --no-inherit (new threads and children of the
 *        traced ones are not traced)
 * @size_default: per-thread without --size: @cfg.buffer_size is
 *        RECORD_THREAD_SIZE, which record_fit_size() may lower to what
 *        the caller may lock
 * @buffer_given: --ring or --stop-on-full was given: no streaming (else
 *        @cfg.stream is set, and dropped when the kernel cannot stream)
 * @progress: --progress: the progress line also when stderr is no terminal
 *
 * Per-thread mode (@cfg.per_thread) is a command without -a/-C, or -p.
 */
#define RECORD_MAX_TIDS		IPT_MAX_THREADS
/* Per-thread defaults of 'ipttool record': buffer per thread, traces. */
#define RECORD_THREAD_SIZE	(1ull << 20)
#define RECORD_THREAD_MAX	64

struct record_opts {
	struct iptcap_config cfg;
	uint64_t cpu_mask[IPT_MAX_CPU_MASK_WORDS];
	const char *out_dir;
	double duration;
	char **prog_argv;
	bool help;
	bool quiet;
	bool no_sideband;
	uint32_t tids[RECORD_MAX_TIDS];
	unsigned int nr_tids;
	bool no_inherit;
	bool size_default;
	bool buffer_given;
	bool progress;
};

uint64_t record_fit_size(uint64_t budget, unsigned int traces, uint64_t size);

/*
 * Bytes a tracing unit has written into @buf (@len bytes, zeroed before
 * tracing) so far, to a page: the end of the last page that is not all
 * zero.  For the progress line only: exact positions come at a stop.
 */
uint64_t progress_estimate(const void *buf, size_t len);
/* Parse "START-END" (hex with 0x, or decimal; END inclusive).  0 or -1. */
int parse_range(const char *s, uint64_t *start, uint64_t *end);

/* Parse "4096", "64K", "4M", "1G" (binary units).  0 or -1 (invalid). */
int parse_size(const char *s, uint64_t *out);
/* Parse a CPU list "0-3,5" into @mask (@words words).  0 or -1. */
int parse_cpu_list(const char *s, uint64_t *mask, unsigned int words);
/*
 * Parse record's arguments (argv[0] is "record").  Returns 0, or 2 with
 * one sentence in @msg (a usage error).
 */
int record_parse(int argc, char **argv, struct record_opts *o, char *msg, size_t len);
/*
 * In the command's process, just forked: SIGINT, SIGTERM, SIGHUP and
 * SIGPIPE take their default action again (the recorder catches them),
 * then the signal mask is @mask (the recorder's before it blocked the stop
 * signals around fork()).
 */
void record_child_signals(const sigset_t *mask);

/* ---- capture.c: the on-disk capture format (Documentation/capture-format.rst) */

#define CAPTURE_FORMAT_NAME	"ipt-capture"
#define CAPTURE_FORMAT_VERSION	1
#define CAPTURE_META		"meta.json"
/* Room for the final meta.json on a full disk (capture_begin_meta()). */
#define CAPTURE_META_RESERVE	"meta.json.reserve"
/* The reason meta.json gives until the recording ends (decode knows it). */
#define CAPTURE_UNFINISHED	"the recording did not finish"

/**
 * struct capture_trace - one trace file of a capture
 * @cpu: the CPU it was recorded on; per-thread: the trace index
 * @ts: the driver's final state of the trace (per-thread: tid, parent, ...)
 * @written: bytes written to the file
 * @write_errno: 0, or the errno that stopped writing the file
 * @file: the file name in the capture: "cpuN.pt", or per-thread
 *        "thread-TID.pt" ("thread-TID.INDEX.pt" for a TID's later traces)
 * @gaps: streamed: the pauses of the unit, @nr_gaps of them, in order
 *        (owned by the capture's struct capture_stream)
 * @gaps_unlisted: streamed: gaps the kernel counted but no longer itemised
 * @read_failed: its final state could not be read (no file)
 */
struct capture_trace {
	unsigned int cpu;
	struct ipt_trace_state ts;
	uint64_t written;
	int write_errno;
	char file[48];
	const struct ipt_gap *gaps;
	size_t nr_gaps;
	uint64_t gaps_unlisted;
	bool read_failed;
};

/**
 * struct capture_stream_slot - what a streamed trace's consumer collected
 * @gaps: its gaps, @nr_gaps (@cap allocated)
 * @unlisted: gaps not itemised
 */
struct capture_stream_slot {
	struct ipt_gap *gaps;
	size_t nr_gaps, cap;
	uint64_t unlisted;
};

/**
 * struct capture_prog - the command a per-thread capture ran
 * @argv: its arguments (NULL-terminated), or NULL (-p, or per-CPU)
 * @pid: its process id
 * @exited: it exited with @status (else @signal killed it, or 0: still
 *        running when recording stopped)
 */
struct capture_prog {
	char **argv;
	int32_t pid;
	bool exited;
	int status;
	int signal;
};

#define CAPTURE_SIDEBAND		"sideband.jsonl"
#define CAPTURE_SIDEBAND_VERSION	1
#define CAPTURE_MAX_VDSO		8

/**
 * struct capture_sb - the sideband of a capture (capture.c)
 * @f: CAPTURE_SIDEBAND being written, or NULL
 * @sb: the perf events, or NULL (@perf_skipped says why)
 * @write_errno: the first error writing @f
 * @counts: perf records read, by enum iptcap_sb_type (snapshot ones: @snap)
 * @lines: lines written
 * @lost: records the kernel dropped
 * @snap: what the /proc snapshot found; @have_snap: it was taken
 * @build_ids: the kernel puts build-ids in mmap records
 * @cpus: per-CPU statistics of @sb at its end, @nr_cpus of them
 * @vdso: vDSO images saved as vdsoN.so, @nr_vdso of them
 * @spool: perf records read while the snapshot is written (@spool_len
 *        bytes of lines, @spool_cap allocated); @snap_recs counts its records
 */
struct capture_sb {
	FILE *f;
	struct iptcap_sb *sb;
	char perf_skipped[256];
	int write_errno;
	uint64_t counts[IPTCAP_SB_OTHER + 1];
	uint64_t lines;
	uint64_t lost;
	struct iptcap_snapshot_stats snap;
	bool have_snap;
	bool build_ids;
	struct iptcap_sb_cpu_stats *cpus;
	unsigned int nr_cpus;
	struct {
		unsigned char *data;
		size_t size;
		char source[32];
	} vdso[CAPTURE_MAX_VDSO];
	unsigned int nr_vdso;
	char *spool;
	size_t spool_len, spool_cap;
	uint64_t snap_recs;
};

/**
 * struct capture - a capture being written
 * @dir: its directory
 * @caps: the PT unit's capabilities
 * @config: the session as the driver got it
 * @traces: one per CPU, @nr_traces of them
 * @complete: every byte the driver had was written and the session ended
 *        normally
 * @reason: why not complete (one sentence), when !@complete
 * @have_time_conv: @time_* are valid; else @time_conv_skipped says why
 * @start_ns: CLOCK_REALTIME at start; @stop_ns: at stop
 * @meta_reserve: the size of CAPTURE_META_RESERVE, where the final
 *        meta.json goes when the disk is full (0: none)
 * @per_thread: a per-thread capture ("mode": "thread"); @traces are in
 *        trace order and @inherit says whether new threads were followed
 * @prog: the traced command (per-thread)
 * @tids: the threads of -p, @nr_tids of them (per-thread)
 * @stream: the traces were streamed (IPT_BUFFER_STREAM) while tracing
 * @stream_fallback: not streamed although record would have: why (the
 *        kernel lacks IPT_FEAT_STREAM); empty otherwise
 * @slots: streamed: per trace slot (CPU or trace index), its gaps
 * @nr_slots: entries of @slots; @gaps_listed: gaps in them, all slots
 * @stream_bytes: streamed: bytes written; @stream_secs: seconds it took
 */
struct capture {
	const char *dir;
	struct ipt_caps caps;
	struct ipt_config config;
	struct capture_trace *traces;
	size_t nr_traces;
	bool complete;
	char reason[256];
	bool have_time_conv;
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	char time_conv_skipped[128];
	uint64_t start_ns;
	uint64_t stop_ns;
	size_t meta_reserve;
	struct capture_sb sb;
	bool per_thread;
	bool inherit;
	struct capture_prog prog;
	const uint32_t *tids;
	unsigned int nr_tids;
	bool stream;
	char stream_fallback[200];
	struct capture_stream_slot *slots;
	size_t nr_slots, gaps_listed;
	uint64_t stream_bytes;
	double stream_secs;
};

/*
 * Gaps itemised in a streamed capture, all traces together, first come
 * (48 bytes each in memory, about 200 in meta.json and some hundreds
 * more while json-c builds it); the ones after are counted, not itemised
 * ("gaps_unlisted"), as the kernel's own bounded list does: a recording
 * that falls behind for hours, on many CPUs or threads, keeps a bounded
 * meta.json.
 */
#define CAPTURE_GAPS_LISTED	65536
/*
 * A streamed recording's meta.json snapshot (capture_snapshot_stream())
 * takes at most 1/CAPTURE_SNAPSHOT_SHARE of the draining thread's time.
 */
#define CAPTURE_SNAPSHOT_SHARE	20

/*
 * Streamed: the gap callback of the consumer (@user is the capture): keep
 * @gap in the slot of its trace, or count it as not itemised (the
 * capture has CAPTURE_GAPS_LISTED, or no memory for more).  0, or EINVAL
 * for a trace without a slot.
 */
int capture_stream_gap(const struct iptcap_stream_trace *tr, const struct ipt_gap *gap,
		       void *user);
int capture_stream_unlisted(const struct iptcap_stream_trace *tr, uint64_t nr, void *user);
/*
 * Streamed, the session stopped and drained into @files: the final state
 * of every trace, its file (an empty one, created by @files' naming rule,
 * for a trace that got no byte), every file fsync'd and closed (a failure
 * makes the trace's write_errno and the capture incomplete), then
 * meta.json, as capture_collect().  Returns 0 when complete, else 1.
 */
int capture_collect_stream(struct iptcap *ipt, struct capture *c,
			   struct iptcap_stream_files *files);
/*
 * Streamed, while recording: meta.json as it stands (temp file and
 * rename), the traces that have a file so far with their gaps, still
 * incomplete, CAPTURE_UNFINISHED, so that a recording that never ends
 * leaves its gap records.  0 or errno.
 */
int capture_snapshot_stream(struct iptcap *ipt, struct capture *c,
			    const struct iptcap_stream_files *files);
/*
 * Whether a streamed recording writes a meta.json snapshot at @now
 * (CLOCK_MONOTONIC ns), the last one having begun at @last and taken
 * @cost ns: at most once a second, and at most a 1/CAPTURE_SNAPSHOT_SHARE
 * share of the time (a snapshot lists every gap so far: its cost grows
 * with them).
 */
bool capture_snapshot_due(uint64_t now, uint64_t last, uint64_t cost);
/* Gaps of every trace, not itemised ones included. */
uint64_t capture_nr_gaps(const struct capture *c);

/* Mark @c incomplete, keeping the first reason (printf-style). */
void capture_incomplete(struct capture *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * Write all of @buf to @fd (retrying short writes and EINTR); 0 or errno.
 * *@done (if not NULL) receives the bytes written, also on failure.
 */
int write_full(int fd, const void *buf, size_t len, size_t *done);
/* Read the TSC conversion parameters of a perf dummy event into @c. */
void capture_time_conv(struct capture *c);
/*
 * Write the trace @segs of @buf (in order) to @tr->file (cpuN.pt when
 * empty) in @c->dir and record the result in @tr; a failure marks @c
 * incomplete.  0 or errno.
 */
int capture_write_trace(struct capture *c, struct capture_trace *tr,
			const void *buf, const struct iptcap_seg *segs, int nr_segs);
/*
 * Start the sideband of @c: CAPTURE_SIDEBAND, the vDSO images, the /proc
 * snapshot, and with @perf the per-CPU perf events (enabled before the
 * snapshot).  A refused perf_event_open leaves @c->sb.perf_skipped set and
 * is no error.  0, or -1 with one sentence in @msg (the file could not be
 * written).
 */
int capture_sb_begin(struct capture *c, bool perf, char *msg, size_t len);
/* Sleep @timeout_ms, or less when a perf ring fills up (then drain it). */
void capture_sb_wait(struct capture *c, int timeout_ms);
/* Write what the perf rings hold now.  0 or the errno of a failed write. */
int capture_sb_drain(struct capture *c);
/* Stop the perf events, write the rest, close the file; failures mark @c incomplete. */
void capture_sb_end(struct capture *c);
/* Free what capture_sb_begin() allocated (after capture_sb_end()). */
void capture_sb_free(struct capture *c);
/* Write @r as one line of CAPTURE_SIDEBAND to @f; 0 or errno. */
int capture_sb_write_rec(struct capture *c, const struct iptcap_sb_rec *r);

/* The metadata of @c as a JSON object (a new reference). */
struct json_object *capture_meta_json(const struct capture *c);
/*
 * The size of CAPTURE_META_RESERVE for up to @nr_traces traces
 * (@meta_reserve; @c's caps, config, prog and tids set): the longest
 * final meta.json @c can end with, its gaps counted but not itemised
 * (what capture_write_meta() falls back to on a full disk), indented:
 * what @c holds now as it is, every string and number the recording may
 * still set at its longest.  0 (no reserve) if memory ran out.
 */
size_t capture_meta_reserve(const struct capture *c, size_t nr_traces);
/*
 * Begin the capture's metadata: CAPTURE_META_RESERVE, @meta_reserve
 * bytes of spaces (written, not sparse, and fsync'd; none if 0), then
 * meta.json (temporary file, fsync, rename).  0 or errno (then neither
 * is left).
 */
int capture_begin_meta(const struct capture *c);
/*
 * Write the final meta.json atomically (temporary file, fsync, rename);
 * with no space for that, into CAPTURE_META_RESERVE, which is then
 * fsync'd and renamed over meta.json, with the gaps only counted if they
 * do not fit.  meta.json changes only by a rename: on any failure it
 * stays as it was.  On success the reserve is removed.  0 or errno.
 */
int capture_write_meta(const struct capture *c);
/* Read DIR/meta.json; NULL with one sentence in @msg on failure. */
struct json_object *capture_read_meta(const char *dir, char *msg, size_t len);

/* ---- shared by record and the flight recorder (record.c) ---------------- */

/* Create @dir, or empty an older capture there; -1 with @msg if not. */
int capture_prepare_dir(const char *dir, char *msg, size_t len);
/*
 * Name per-thread trace @i of @traces (whose ts.tid are set, as are those
 * before it): "thread-TID.pt", or "thread-TID.I.pt" when an earlier trace
 * has the same TID.
 */
void capture_thread_file(struct capture_trace *traces, size_t i);
/*
 * With the session stopped: write every CPU's trace and meta.json of @c
 * (whose caps, config and traces array, sized caps.nr_cpus, are set; for
 * a per-thread capture sized config.max_threads, one per trace handed out).
 * Failures mark @c incomplete (it keeps an earlier mark).  Returns 0 when
 * @c is complete, 1 otherwise (@c->reason says why).
 */
int capture_collect(struct iptcap *ipt, struct capture *c);
/* Report a failed session call on stderr with what to do about it. */
/*
 * iptcap_config_check() with the failure as one sentence in @msg that names
 * the record/start option ("--mtc 31: this PT unit supports 0,3").
 */
enum iptcap_err check_config(const struct iptcap_config *cfg, const struct ipt_caps *caps,
			     struct ipt_config *out, char *msg, size_t msg_len);
void err_session(const struct ipttool *t, enum iptcap_err err, const char *what,
		 const char *detail);
/* The outcome of a capture: a line per CPU on stderr, or JSON on stdout. */
void print_summary(const struct ipttool *t, const struct capture *c);

/* ---- selftest: the bundled program and its ground truth, exposed for tests */

/*
 * selftest_work.c: ipt_st_call(n) (n >= 1) calls ipt_st_work(n), the
 * program in [ipt_st_work, ipt_st_work_end), which returns to ipt_st_after.
 */
void ipt_st_call(unsigned int n);
extern const unsigned char ipt_st_work[], ipt_st_work_end[], ipt_st_after[];
/* What one call does, by construction: instructions, conditional branches. */
uint64_t selftest_expected_insns(unsigned int n);
uint64_t selftest_expected_branches(unsigned int n);
/* The outcome of conditional branch @k (0 .. 2n - 1) of a call. */
bool selftest_expected_taken(unsigned int n, uint64_t k);

/*
 * TNT packets (TNT-64 of up to 47 bits, TNT-8 for a last 6 or fewer) for
 * @nbits outcomes, oldest first, into @buf; bytes written, 0 if @cap is short.
 */
size_t selftest_tnt(const bool *bits, size_t nbits, uint8_t *buf, size_t cap);
/*
 * The packets of one call as an address filter on the program shows it:
 * TIP.PGE(@work), its TNTs, TIP.PGD(@after), full IPs.  Bytes, or 0.
 */
size_t selftest_run_packets(unsigned int n, uint64_t work, uint64_t after, uint8_t *buf,
			    size_t cap);
/*
 * A feed for the simulated unit (Documentation/simulator.rst): an IP-only
 * record and one record per call (selftest_run_packets()), @runs of them,
 * each with CTX_OFF and the IP @work, where the simulator evaluates an
 * address filter on the program.  Bytes, or 0 if @cap is short.
 */
size_t selftest_feed(unsigned int n, unsigned int runs, uint64_t work, uint64_t after,
		     uint8_t *buf, size_t cap);

#define SELFTEST_MAX_MAPS	64
/* Code the decoder may read: this process's own memory in these ranges. */
struct selftest_image {
	unsigned int nr;
	uint64_t start[SELFTEST_MAX_MAPS], end[SELFTEST_MAX_MAPS];
};
/* The program alone; or every readable executable mapping (0 or -1). */
void selftest_image_work(struct selftest_image *img);
int selftest_image_self(struct selftest_image *img);

#define SELFTEST_MAX_BRANCHES	(1u << 16)
/**
 * struct selftest_decoded - what a decode found inside [lo, hi)
 * @insns: instructions in the range
 * @nbranches: their conditional branches; @taken: outcomes, a bitmap
 *        (the first SELFTEST_MAX_BRANCHES)
 * @unresolved: a conditional branch with no instruction after it
 * @errors: decode errors, @first_error the first as text
 * @overflows: OVF packets
 * @syncs: PSBs synchronised on
 */
struct selftest_decoded {
	uint64_t insns;
	uint64_t nbranches;
	uint8_t taken[SELFTEST_MAX_BRANCHES / 8];
	uint64_t unresolved;
	uint64_t errors;
	char first_error[128];
	uint64_t overflows;
	uint64_t syncs;
	/* private: a conditional branch in the range waits for the next IP */
	bool pending_cond;
	uint64_t cond_next;
};
/* Decode @pt with libipt (the CPU of @caps, code from @img).  0 or -1. */
int selftest_decode(const uint8_t *pt, size_t len, const struct ipt_caps *caps,
		    const struct selftest_image *img, uint64_t lo, uint64_t hi,
		    struct selftest_decoded *d);
/*
 * 0 when @d is exactly one call of the program with @n: no error, the
 * branch outcomes and the instruction count equal; else -1.  One sentence
 * in @why either way.
 */
int selftest_compare(const struct selftest_decoded *d, unsigned int n, char *why, size_t len);
/*
 * Calls to make so that a ring of @size bytes wraps @wraps times and half
 * a ring more, from a reference of @ref_runs calls that wrote @ref_bytes;
 * 0 if none fits.
 */
unsigned int selftest_pmi_runs(uint64_t ref_bytes, unsigned int ref_runs, uint64_t size,
			       unsigned int wraps);
/* The JSON report: versions, kernel, CPU, @caps, @checks (taken over). */
struct json_object *selftest_report(const struct ipt_caps *caps, struct json_object *checks,
				    int failed);

#endif /* IPTTOOL_H */

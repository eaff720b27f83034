/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libiptdecode: decode Intel PT traces with libipt into a stream of
 * blocks, events and errors, in parallel, and render that stream in the
 * formats of Documentation/decode.rst.
 *
 * The decode of a trace is split at its PSBs into segments; each segment
 * is decoded on its own (on any thread) into an item list, and the lists
 * are consumed in trace order.  Each segment's decoder runs past its end
 * until it converges with the next segment's (step.c); what the next one
 * decoded before that point is dropped, so the result is what one serial
 * libipt decoder gives, whatever -J (Documentation/decode.rst).
 */
#ifndef IPT_DECODE_H
#define IPT_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <intel-pt.h>
#include <json-c/json.h>

/* qsort() that accepts an empty (possibly NULL) array. */
static inline void dec_sort(void *base, size_t n, size_t size,
			    int (*cmp)(const void *, const void *))
{
	if (n)
		qsort(base, n, size, cmp);
}

struct dec_outputs;

/*
 * Out of memory: the library calls @fn (which must not return: exit or
 * abort), else aborts.  It never exits the process itself (util.c).
 */
void dec_set_nomem(void (*fn)(void));

/* ---- inputs --------------------------------------------------------------- */

/* One piece of code in the traced address space. */
struct dec_image {
	char *file;		/* file holding the bytes */
	uint64_t offset;	/* of the bytes in @file */
	uint64_t size;		/* bytes (0: to the end of the file / ELF segment) */
	uint64_t vaddr;		/* where they were mapped */
	char *elf;		/* ELF file with symbols for this range, or NULL */
	uint64_t elf_off;	/* file offset in @elf that is mapped at @vaddr */
	char *name;		/* DSO name to show (basename) */
	long pid;		/* the process whose code this is (0: every trace's) */
	char *kallsyms;		/* symbols from this /proc/kallsyms-format file, or NULL */
	/* when it was mapped, perf time (ns): [from, until); 0 and UINT64_MAX: always */
	uint64_t from, until;
};

/* One trace file to decode. */
/*
 * A pause of the unit in a streamed capture (meta.json traces[].gaps):
 * the bytes from @off on were written after it; the unit starts them with
 * a PSB+.
 */
struct dec_sgap {
	uint64_t off;		/* trace offset of the first byte after it */
	uint64_t tsc_start;	/* when the unit paused */
	uint64_t tsc_end;	/* when it resumed (0: unknown) */
	uint64_t lost;		/* bytes the unit could not write (UINT64_MAX: unknown) */
};

struct dec_trace {
	struct dec_sgap *sgaps;	/* streamed: its gaps, by offset, @nr_sgaps of them */
	size_t nr_sgaps;
	char *file;
	int cpu;		/* CPU of a capture's trace; -1 otherwise */
	const uint8_t *data;	/* if not NULL: the trace in memory (@file names it) */
	size_t size;
	long tid;		/* per-thread capture: the thread; -1 otherwise */
	long pid;		/* its process, whose images it uses (0: unknown, all images) */
};

/* A thread's name: its last comm record in time order (after an exec, the program's). */
struct dec_comm {
	long pid, tid;
	char comm[64];
};

/*
 * Which thread runs on one CPU from when (a per-CPU capture's "switch"
 * records): switch-ins in time order.
 */
struct dec_sched {
	int cpu;
	size_t n;
	uint64_t *time;		/* perf time (ns) */
	long *pid;		/* from then on (0: idle or unknown) */
	long *tid;		/* its thread (0: idle or unknown) */
};

/**
 * struct dec_input - what to decode, from ptxed-style options, a ptgen
 * directory or an ipt capture directory
 */
struct dec_input {
	struct dec_trace *traces;
	size_t nr_traces;
	struct dec_image *images;
	size_t nr_images;
	struct pt_cpu cpu;
	bool have_cpu;
	uint8_t mtc_freq;
	uint8_t nom_freq;
	uint32_t cpuid_0x15_eax, cpuid_0x15_ebx;
	uint32_t cpuid_0x15_ecx;	/* the crystal clock in Hz (0: unknown) */
	/* TSC to perf time (ns), from a capture's meta.json "time_conv" */
	bool have_time_conv;
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	long pid;		/* capture: whose images to take from the sideband (0: auto) */
	bool cfg_tsc;		/* capture: traced with TSC packets */
	/*
	 * Per-CPU capture with switch records, TSC and a time conversion:
	 * every process's images (tagged with its pid) and which one runs
	 * where when; decoders switch images at context switches.
	 */
	struct dec_sched *sched;
	size_t nr_sched;
	/*
	 * The sideband's images carry when they were mapped (from/until:
	 * exec and mmap in time order); decoders pick by the trace's time.
	 */
	bool timed_maps;
	bool per_thread;	/* a per-thread capture ("mode": "thread") */
	long program_pid;	/* its "program.pid", or 0 */
	struct dec_comm *comms;	/* thread names from the sideband (Perfetto, --folded) */
	size_t nr_comms;
	char kind[16];		/* "pt", "ptgen" or "capture" */
	int *fds;		/* open unlinked files that images name (/proc/self/fd/N) */
	size_t nr_fds;
	char note[320];		/* a remark for the summary ("no sideband: ...") */
	/*
	 * Where libdwfl looks for separate debug files (build-id trees,
	 * .gnu_debuglink targets): its debuginfo_path syntax, e.g.
	 * ":.debug:/usr/lib/debug"; NULL: libdwfl's default.  Not owned.
	 */
	const char *debuginfo_path;
	/*
	 * Why the input is incomplete (a capture that says so, data the unit
	 * lost, a trace file shorter than its metadata, threads or processes
	 * not decoded): one sentence each, @nr_warnings of them.  The decode
	 * of what is there goes on; ipttool warns and exits 3.
	 */
	char **warnings;
	size_t nr_warnings;
};

void dec_input_init(struct dec_input *in);
/* Add a sentence to @in->warnings (printf-style). */
void dec_input_warn(struct dec_input *in, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void dec_input_free(struct dec_input *in);
/* Add --elf FILE[:BASE] (BASE: load address of an ET_DYN file). 0 or -1 + @msg. */
int dec_input_add_elf(struct dec_input *in, const char *arg, char *msg, size_t len);
/*
 * Add --raw FILE:BASE, FILE:FROM:BASE, FILE:FROM-TO:BASE (ptxed's) or
 * FILE:OFFSET:SIZE:BASE.  0 or -1 + @msg.
 */
int dec_input_add_raw(struct dec_input *in, const char *arg, char *msg, size_t len);
/* Add SIZE bytes at OFF of FILE, mapped at VADDR.  0 or -1 + @msg. */
int dec_input_add_raw_at(struct dec_input *in, const char *file, uint64_t off, uint64_t size,
			 uint64_t vaddr, char *msg, size_t len);
/*
 * Add the code of process @pid (0: the one process that exec'd during the
 * recording) from @dir's sideband.jsonl.  0, or -1 with @msg.
 */
int dec_input_sideband(struct dec_input *in, const char *dir, long pid, char *msg, size_t len);
/*
 * Add the running kernel's text (--kcore): [_stext, _etext) as
 * @kallsyms gives them, copied out of the ELF core file @kcore (the
 * PT_LOAD segment that holds them), with the text symbols of @kallsyms;
 * and, if @modules (a /proc/modules-format file) is not NULL, each live
 * module's memory [address, address + size) the same way, named
 * "[module]" (a module no segment holds is left out).  0, or -1 with @msg.
 */
int dec_input_add_kcore(struct dec_input *in, const char *kcore, const char *kallsyms,
			const char *modules, char *msg, size_t len);
/*
 * A stream gap item (DI_GAP of GAP_STREAM) as text:
 * "gap: N bytes lost, tsc A..B" (lost "unknown", B "?" when not known).
 */
struct dec_item;
void dec_sgap_text(const struct dec_item *it, char *buf, size_t len);

/* Parse --cpu F/M[/S]; 0 or -1. */
int dec_parse_cpu(const char *s, struct pt_cpu *cpu);
/* This machine's CPU, if an Intel one (--cpu auto); 0 or -1. */
int dec_host_cpu(struct pt_cpu *cpu);
/*
 * ptxed's "FROM" or "FROM-TO" file suffix: 1 (@from), 2 (@from, @to; @to >
 * @from), 0 (not a range), -1 (@to <= @from).
 */
int dec_parse_range(const char *s, uint64_t *from, uint64_t *to);
/* Load a ptgen output directory or an ipt capture directory. 0 or -1 + @msg. */
int dec_input_load_dir(struct dec_input *in, const char *dir, char *msg, size_t len);
int dec_input_add_trace(struct dec_input *in, const char *file, int cpu);
const char *dec_input_comm(const struct dec_input *in, long pid, long tid);

/* ---- decoding ------------------------------------------------------------- */

enum dec_item_kind {
	DI_BLOCK,	/* @ip..@end_ip, @ninsn instructions, last of class @iclass */
	DI_ENABLED,	/* tracing (re)starts at @ip */
	DI_DISABLED,	/* tracing stops: @code DEC_DIS_* says how, @ip (0: unknown) */
	DI_GAP,		/* trace lost: @code says why; decoding resumed at next PSB */
	DI_ASYNC,	/* asynchronous branch from @ip (interrupt, signal) */
	DI_PROCESS,	/* from here on the code is process @code's (0: unknown), run by
			 * thread @end_ip (a per-CPU capture's switch records; 0: unknown) */
	DI_EOS,		/* the trace ends while tracing is on (ptxed: [end of trace]) */
};

/* DI_DISABLED's @code: libipt's ptev_disabled (@ip: the target, outside the
 * traced range, 0 if suppressed) or ptev_async_disabled (@ip: where an
 * interrupt or a fault struck). */
#define DEC_DIS_SYNC	1
#define DEC_DIS_ASYNC	2

/* Why trace was skipped. */
enum dec_gap {
	GAP_NONE,
	GAP_OVERFLOW,		/* the unit reported an internal buffer overflow */
	GAP_DECODE,		/* libipt reported a decode error */
	GAP_NOMAP,		/* code at an address in no image */
	GAP_PRE_PSB,		/* bytes before the first PSB */
	GAP_LOOP,		/* endless code: no trace read for DEC_MAX_STUCK instructions */
	GAP_STREAM,		/* streamed: the unit paused (a struct dec_sgap) */
	GAP_NR,
};

/*
 * A trace always has a packet within this many instructions (an endless
 * loop of direct jumps is the only code that needs none); more means the
 * trace or the image is wrong, and decoding moves on to the next PSB.
 */
#ifndef DEC_MAX_STUCK
#define DEC_MAX_STUCK 1000000	/* the fuzzer builds with less (tools/testing/decode/fuzz) */
#endif

/*
 * A DI_GAP of GAP_STREAM (the unit paused): @off is where the data after
 * it begins, @tsc when it paused, @sgap_tsc_end when it resumed (0:
 * unknown), @sgap_lost the bytes the unit could not write (UINT64_MAX:
 * unknown), @skipped 0 (no byte of the file is skipped).  It has no IP:
 * its @sgap_* fields share the storage of @ip and @end_ip, which only
 * other items have.
 */
struct dec_item {
	union {
		uint64_t ip;
		uint64_t sgap_tsc_end;	/* DI_GAP of GAP_STREAM */
	};
	union {
		uint64_t end_ip;
		uint64_t sgap_lost;	/* DI_GAP of GAP_STREAM */
	};
	uint64_t off;		/* trace offset */
	uint64_t tsc;		/* 0: unknown */
	uint64_t skipped;	/* DI_GAP: trace bytes skipped */
	int32_t isid;
	int32_t code;		/* DI_GAP: libipt error code (negative); DI_PROCESS: pid */
	uint32_t ninsn;
	uint8_t kind, iclass, gap, last_size; /* last_size: 0 unknown */
	uint8_t mode;		/* DI_BLOCK: enum pt_exec_mode of its instructions */
};

/* The state of a segment's decoder after one of its steps (step.c). */
struct dec_ck {
	uint64_t off;		/* trace offset */
	uint64_t hash;		/* of its observable state */
	size_t nr;		/* the segment's items then */
	uint64_t insns;		/* and instructions */
	uint64_t su;		/* the PSB+ status updates its decoder delivered (su_fold()) */
};

struct dec_prof;
struct dec_ctx;
struct dec_live;

struct dec_segment {
	uint64_t begin, end;	/* trace offsets */
	/*
	 * Streamed: the trace offset of the next gap (else the trace's
	 * length): its decoders read no further, no decoder crosses a gap.
	 */
	uint64_t piece_end;
	size_t sgap;		/* the gap it begins after (its first item), or SIZE_MAX */
	struct dec_item *items;
	size_t nr, cap;
	size_t skip;		/* @items[0..@skip) are dropped (another decoder's part) */
	uint64_t insns;		/* in @items[@skip..] and @prof */
	struct dec_prof *prof;	/* profile_only: its counts, made by the worker */
	struct dec_live *live;	/* its decoder, until dec_converge() */
	struct dec_ck *ck;	/* checkpoints of its first steps */
	size_t nr_ck, cap_ck;
	/*
	 * The item of the first "compressed return without call" or "bad
	 * compressed return" of its own decoder before that decoder's first
	 * resync (SIZE_MAX: none): a decoder synced at this PSB starts with
	 * an empty return stack where the serial one may have calls to
	 * return to, so from there its output may differ although its
	 * checkpoints matched (step.c).
	 */
	size_t ret_suspect;
	/*
	 * The trace offset just past the first TIP, TIP.PGE or TIP.PGD after
	 * its PSB (UINT64_MAX: none in the trace).  A serial decoder may
	 * carry events bound to the next TIP across the PSB (a MODE.EXEC
	 * just before it) that a decoder synced at the PSB does not have and
	 * that no checkpoint shows until that TIP: no match before it.
	 */
	uint64_t tip_end;
};

/*
 * --profile counts of some blocks (sink_profile.c): per function and per DSO,
 * order-independent, so workers count their segments' and the renderer
 * adds them up.
 */
struct dec_prof *dec_prof_new(void);
void dec_prof_free(struct dec_prof *p);
/* Count block @b, in the code of process @pid at perf time @time (0: at the end). */
void dec_prof_block(struct dec_prof *p, struct dec_ctx *c, long pid, uint64_t time,
		    const struct dec_item *b);

/**
 * struct dec_options - how to decode
 */
struct dec_options {
	bool insn_decoder;	/* libipt's instruction decoder instead of blocks */
	bool no_split;		/* one segment per trace (for testing) */
	unsigned int jobs;	/* threads; 0: online CPUs */
	/*
	 * Called on the calling thread after each segment is decoded and
	 * rendered: @done of @total segments, @insns instructions so far
	 * (NULL: none).
	 */
	void (*progress)(void *arg, size_t done, size_t total, uint64_t insns);
	void *progress_arg;
};

struct dec_trace_result {
	const struct dec_trace *trace;
	uint8_t *buf;
	size_t len;
	struct dec_segment *segs;
	size_t nr_segs;
	uint64_t insns;
	uint64_t gaps[GAP_NR];		/* count per reason */
	uint64_t gap_bytes[GAP_NR];	/* bytes skipped per reason */
	char error[256];		/* the trace could not be decoded at all */
	/* its last packet is cut short: the file ends inside it (its offset) */
	bool cut;
	uint64_t cut_off;
	uint64_t first_tsc;		/* the TSC of its first PSB+ with one (0: none) */
	struct dec_item *gap_items;	/* every DI_GAP, in trace order */
	size_t nr_gap_items;
	struct dec_live *live;		/* the decoder whose output is being used */
	/*
	 * The last decoder in the serial decoder's state (the first
	 * segment's, or one resynced since its PSB) that handed over to a
	 * decoder synced at a PSB, paused where it did, and the
	 * instructions the decoders in use have made since (step.c).
	 */
	struct dec_live *anchor;
	uint64_t anchor_insns;
	/*
	 * Its code runs in more than one exec mode (MODE.EXEC packets), or
	 * a PSB+ has no MODE.EXEC, and the block decoder is used: decoders read code through a callback,
	 * with no section and so no block cache.  libipt 2.0.5's block
	 * cache does not compare the exec mode, so with it the result
	 * depended on which decoder filled the cache first.
	 */
	bool uncached;
	/* with a slice (dec_outputs.slice): the instructions the outputs saw */
	uint64_t slice_insns;
	/* --last: the trace's instructions, from a counting pass before the decode */
	uint64_t total_insns;
	/* taken branches: counted by a slice's stream; from the counting pass (--last-branches) */
	uint64_t branches, total_branches;
	/* with a slice: the newest time the stream saw in this trace (0: none) */
	uint64_t last_tsc;
};

struct dec_ctx {
	const struct dec_input *in;
	struct dec_options opt;
	struct pt_config cfg;		/* template (no buffer) */
	struct pt_image_section_cache *iscache;
	int *isids;			/* per input image */
	struct dec_trace_result *res;
	size_t nr_res;
	struct dec_syms *syms;
	/*
	 * No output wants the blocks (only the summary) and the block
	 * decoder is used: segments count instructions and keep their
	 * events and errors, not their blocks, and libipt's blocks need not
	 * end at calls and jumps.
	 */
	bool count_only;
	/*
	 * Only --profile is wanted: count_only, and the workers count each
	 * segment's blocks per function (dec_prof) instead of keeping them;
	 * blocks still end at calls and jumps (few cross a function).
	 */
	bool profile_only;
	/* the outputs see a slice (dec_outputs.slice): slice_insns of each result */
	bool sliced;
	/*
	 * Time: some trace has TSC packets (@timed); the earliest TSC of a
	 * PSB+ in any trace (@t0), which outputs count time from; the TSC
	 * frequency (@tsc_hz, 0: unknown) from CPUID 0x15.
	 */
	bool timed;
	uint64_t t0, tsc_hz;
	char errata_note[128];
	/* the images' bytes, mapped, indexed by isid (lock-free reads) */
	struct dec_code {
		uint64_t vaddr, size;
		const uint8_t *bytes;
		void *map;
		size_t maplen;
	} *code;
	int nr_code;
};

/* The bytes of image section @isid at @ip, *@avail of them; NULL if none. */
const uint8_t *dec_code_at(const struct dec_ctx *c, int isid, uint64_t ip, size_t *avail);

/* Set up (image cache, errata, symbols).  0, or -1 with @msg. */
int dec_open(struct dec_ctx *c, const struct dec_input *in, const struct dec_options *opt,
	     char *msg, size_t len);
/*
 * Decode every trace into c->res, rendering the outputs of @o (may be NULL)
 * on the way; segments are freed once rendered, their errors kept in
 * c->res[].gap_items.  0, or -1 with @msg (no trace readable).
 */
int dec_run(struct dec_ctx *c, const struct dec_outputs *o, char *msg, size_t len);
void dec_close(struct dec_ctx *c);
const char *dec_gap_name(enum dec_gap g);

/*
 * Whether @buf[0..@len) holds MODE.EXEC packets of more than one exec mode
 * (a byte search, confirmed with libipt's packet decoder when it finds
 * two), or a PSB+ without a MODE.EXEC (a decoder synced there has no mode,
 * so only libipt's block cache, filled by another decoder, decodes the code
 * after it).  The packet walk is the serial one (the reference's), made
 * in pieces from the PSBs at @cuts[0..@nr_cuts) (ascending offsets; the
 * segments' starts) on @threads threads and joined exactly (segment.c).
 */
bool dec_mixed_modes(const uint8_t *buf, size_t len, const struct pt_config *tmpl,
		     const uint64_t *cuts, size_t nr_cuts, unsigned int threads);

/*
 * Offsets of PSBs in @buf[0..@len), ascending, into *@offs (malloc'd);
 * returns the count: the first PSB, then each time the first PSB at least
 * (@len - first) / @parts bytes (@parts >= 1) after the one before (found
 * by a byte search: the PSBs in between are not looked at).  *@first_tsc
 * (if not NULL): the TSC of the first PSB+ in @buf that has one (every
 * PSB from the first on, in order, until one has: the same however many
 * @parts), or 0.
 */
size_t dec_find_psbs(const uint8_t *buf, size_t len, const struct pt_config *tmpl, size_t parts,
		     uint64_t **offs, uint64_t *first_tsc);

/*
 * @tsc as nanoseconds: perf time with a capture's time_conv, else from
 * the TSC frequency; false when neither is known.
 */
bool dec_tsc_ns(const struct dec_ctx *c, uint64_t tsc, uint64_t *ns);

/*
 * Walk the instructions of block @b, decoded in the block's exec mode:
 * calls @fn(@arg, ip, size, last, @b) for each; returns the number walked:
 * all, or none when Zydis cannot decode them all or its lengths do not
 * lead to the block's last instruction (an address is never guessed).
 */
typedef void (*dec_insn_fn)(void *arg, uint64_t ip, unsigned int size, bool last,
			    const struct dec_item *blk);
size_t dec_walk_block(struct dec_ctx *c, const struct dec_item *b, dec_insn_fn fn, void *arg);
/* Size of the instruction at @ip (in section @isid, exec mode @mode); 0 if unreadable. */
unsigned int dec_insn_size(struct dec_ctx *c, int isid, uint64_t ip, uint8_t mode, uint8_t *bytes);
/* Zydis's decoder for exec mode @mode (enum pt_exec_mode). */
struct ZydisDecoder_;
const struct ZydisDecoder_ *dec_zydis(uint8_t mode);

/* ---- symbols (syms.c) ----------------------------------------------------- */

struct dec_sym {
	uint64_t start, end;	/* runtime addresses */
	const char *name;
};

struct dec_module {
	uint64_t start, end;	/* runtime range */
	uint64_t bias;		/* runtime - ELF vaddr */
	uint64_t load_base;	/* runtime address of the ELF's lowest segment (or @start) */
	char *name, *path;
	struct dec_sym *syms;
	size_t nr_syms;
	char *elf;		/* the mapped ELF file, or NULL */
	char *debug_elf;	/* its separate debug file (libdwfl found it), or NULL */
	long pid;		/* the process (0: any), as its image's */
	uint64_t from, until;	/* as its image's */
	void *dwarf;		/* its Dwarf handle once opened (libdw) */
	int dwarf_fd;		/* -1: not opened yet; -2: no DWARF */
};

struct dec_syms {
	struct dec_module *mods;
	size_t nr_mods;
	char **strs;
	size_t nr_strs;
};

struct dec_syms *dec_syms_load(const struct dec_input *in);
void dec_syms_free(struct dec_syms *s);
/*
 * The module of @ip in process @pid (0: any) at perf time @time (0: as at
 * the end), or NULL; no state used.
 */
const struct dec_module *dec_syms_module_at(const struct dec_syms *s, uint64_t ip, long pid,
					    uint64_t time);
const struct dec_sym *dec_syms_find(const struct dec_module *m, uint64_t ip);
/*
 * "file:line" of @ip in process @pid at perf time @time (as
 * dec_syms_module_at()) from the module's DWARF (libdw) into @buf, or
 * NULL.  Opens the module's DWARF on first use and keeps it: one thread
 * at a time (the renderer's).
 */
const char *dec_syms_line(struct dec_syms *s, uint64_t ip, long pid, uint64_t time, char *buf,
			  size_t len);

/* ---- outputs (sink.c, sink_*.c, packets.c, summary.c) --------------------------------------------------- */

enum dec_out_kind {
	OUT_INSN, OUT_CALLS, OUT_PROFILE, OUT_FOLDED, OUT_PERFETTO, OUT_DRCOV,
	OUT_BLOCKS, OUT_NR
};

/*
 * One --time range: time since the decode's first TSC in ns (or TSC ticks:
 * dec_slice.time_tsc), both ends inclusive, either open; or, with @pct,
 * perf script's percentages of the decode's time span (from the first TSC
 * to the newest time of the decode, found by a pass before): @from and
 * @to in millionths of a percent (100% is 100000000), resolved by
 * dec_run() as perf does (time-utils.c, set_percent_time: each end
 * rounded, the end one less unless it is the span's end).
 */
struct dec_time_range {
	bool have_from, have_to;
	uint64_t from, to;
	bool pct;
};
#define DEC_PCT_100	100000000ULL

/**
 * struct dec_slice - what part of the decode the outputs see (slice.c,
 * Documentation/decode.rst "Slicing"): every condition given must hold.
 * The stream still walks everything (instruction numbers, call depth,
 * time stay those of the whole trace); only the sinks are told less.
 */
struct dec_slice {
	/* --time: @nr_times ranges, any of which holds (@time_tsc: in TSC ticks, else ns) */
	const struct dec_time_range *times;
	size_t nr_times;
	bool time_tsc;
	/* --insn-range: instruction numbers of each trace, inclusive */
	bool have_insn_from, have_insn_to;
	uint64_t insn_from, insn_to;
	/* --tid, --cpu: traces of these threads / CPUs */
	const long *tids;
	size_t nr_tids;
	const int *cpus;
	size_t nr_cpus;
	/* --symbol: only what runs inside this function and its callees (call depth) */
	const char *symbol;
	/* --last N: the last N instructions of each trace (0: not given) */
	uint64_t last;
	/*
	 * --last-branches N: each trace from where its N-th last taken branch
	 * went on (0: not given); a taken branch is a block that does not
	 * start where the block before would fall through to
	 */
	uint64_t last_branches;
};

/* Is any condition given? */
bool dec_slice_on(const struct dec_slice *s);
/*
 * TSC @tsc as --time compares it: TSC ticks (@tsc_ticks) or ns since the
 * decode's first TSC; 0 when unknown or before it.
 */
uint64_t dec_slice_time(const struct dec_ctx *c, bool tsc_ticks, uint64_t tsc);

struct dec_outputs {
	FILE *f[OUT_NR];	/* NULL: not wanted */
	bool disasm;		/* --insn with Zydis disassembly */
	bool lines;		/* --insn with file:line from DWARF */
	bool folded_time;	/* --folded counts time (ns, else TSC ticks), not instructions */
	const struct dec_slice *slice;	/* NULL: everything */
	unsigned int fields;	/* --fields: DEC_FIELD_* columns before --insn and --calls lines */
	bool json;		/* --jsonl: --insn and --calls as JSON Lines (decode.rst) */
};

#define DEC_FIELD_TID	0x1	/* the trace's thread (per-CPU: the process) */
#define DEC_FIELD_CPU	0x2	/* the trace's CPU */
#define DEC_FIELD_TIME	0x4	/* --insn: the time (--calls has its own column) */

/*
 * The renderer: dec_run() feeds it every segment in trace order, as soon as
 * the segment and all before it are decoded, then frees the segment.
 * dec_render_begin() returns NULL when no output is wanted (the other
 * calls accept NULL).
 */
struct dec_render;
struct dec_render *dec_render_begin(struct dec_ctx *c, const struct dec_outputs *o);
/* What the outputs' sinks need (DEC_NEED_*, sink.h); 0 for NULL. */
unsigned int dec_render_needs(const struct dec_render *r);
void dec_render_trace_begin(struct dec_render *r, const struct dec_trace_result *res, size_t i);
void dec_render_segment(struct dec_render *r, const struct dec_segment *seg);
void dec_render_trace_end(struct dec_render *r);
/* Write the whole-run outputs (profile, folded, blocks, drcov) and free @r. */
void dec_render_end(struct dec_render *r);
/* ptdump-like packet dump of @buf to @f; returns packets dumped or -1. */
long dec_dump_packets(const struct dec_ctx *c, const uint8_t *buf, size_t len, FILE *f);

/* With a slice: the instructions the outputs saw, in all traces. */
uint64_t dec_slice_insns(const struct dec_ctx *c);
/* The summary of @c as JSON (new reference) / as text. */
struct json_object *dec_summary_json(const struct dec_ctx *c);
void dec_summary_text(const struct dec_ctx *c, FILE *f);

#endif /* IPT_DECODE_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libiptdecode, internal: the outputs as sinks.  The stream (sink.c)
 * walks each segment's items in trace order, once, keeps what every
 * output shares (the instruction number, the call depth, the time of the
 * block before, whose code it is) and calls the sinks; each output is
 * one sink in a file of its own (sink_*.c).  What the sinks need decides
 * how the workers decode (dec_render_needs(), pool.c), never which FILE
 * handles are open.
 */
#ifndef IPT_DECODE_SINK_H
#define IPT_DECODE_SINK_H

#include <string.h>

#include "decode.h"
#include "internal.h"

/* What a sink needs from the decode. */
#define DEC_NEED_BLOCKS		0x1	/* the blocks, in order (not only counts) */
#define DEC_NEED_INSNS		0x2	/* the instructions of each function (a block in one: whole) */
#define DEC_NEED_EVERY_INSN	0x4	/* each instruction's address, one by one */
#define DEC_NEED_PROFILE	0x8	/* counts per function, which workers can make (dec_prof) */

/* The state every sink reads, kept by the stream (sink.c). */
struct dec_stream {
	struct dec_ctx *c;
	const struct dec_outputs *o;
	unsigned int tid;		/* the trace's track: its TID, CPU or index */
	uint64_t idx;			/* instructions so far in this trace */
	unsigned int depth;		/* open calls (returns at depth 0 keep it 0) */
	uint64_t prev_tsc;		/* the time of the block before (0: unknown) */
	/* time (c->timed): in ns since the run's first TSC when @time_ok */
	bool time_ok;
	uint64_t ns0;			/* c->t0 in ns */
	/* whose code: symbols are looked up for process @pid at perf time @time */
	long pid;
	uint64_t time;
	long shown_pid;			/* the last DI_PROCESS (-1: none) */
	long thread;			/* per CPU: the thread running, per the last DI_PROCESS (0: unknown) */
	const struct dec_trace_result *res;
	size_t nr_res;
	struct dec_symc sc;		/* the last instruction's function */
	/*
	 * Whose code, as a number: changed with @pid and @time (trace begin,
	 * DI_PROCESS), so that a cache keyed by it with the address never
	 * answers for another process or another time's mappings.
	 */
	uint64_t sym_gen;
	struct dec_fmtc *fmtc;		/* dec_stream_fmt_fast()'s cache (sink.c) */
	struct dec_symcc *symcc;	/* dec_stream_sym()'s cache behind @sc (sink.c) */
	struct dec_walkc *walkc;	/* the instruction walks of blocks (sink.c) */
	struct dec_sizec *sizec;	/* dec_stream_insn_size()'s cache (sink.c) */
	/*
	 * The open calls, [0, @depth): the call instruction, its target and
	 * the address it returns to (0: unknown, the call's bytes cannot be
	 * read), so that a sink entering a slice (enter) knows the stack
	 * above it, and a return finds the call it returns from.
	 */
	struct dec_frame {
		uint64_t call_ip, target, ret;
	} *frames;
	size_t frames_cap;
	/*
	 * A return that unwinds more than one call (to a frame below the
	 * top: after a longjmp, an exception, a call to the next
	 * instruction): the
	 * ret hooks are told of each frame closed, the innermost first, with
	 * @unwinding set for all but the last.
	 */
	bool unwinding;
	/* the block before ended with a call (at @call_ip) whose target is the next block */
	bool call_pending;
	uint64_t call_ip;
	/*
	 * The newest time the stream has seen (blocks and events), and the
	 * time of the line being written: for instructions, when their run
	 * of blocks began (--fields time).
	 */
	uint64_t now_tsc, line_tsc;
	/* the last block since the trace began or trace was lost: its last instruction */
	bool have_last;
	uint64_t last_ip;
	uint8_t last_iclass;
	/*
	 * The block being told to the block hooks continues the block told
	 * before it straight: that one ended without a branch, in the same
	 * exec mode and section, with nothing between them (the block
	 * decoder's runs, sink.c).  True even where the code cannot be walked
	 * and its addresses are unknown.
	 */
	bool block_joins;
};

/*
 * The "[disabled ...]" line of DI_DISABLED item @it into @buf: where
 * tracing stopped and why, as far as libipt says (decode.rst).
 */
const char *dec_disabled_str(const struct dec_stream *st, const struct dec_item *it, char *buf,
			     size_t len);

/*
 * The call depth after a return to @to: the depth of the innermost open
 * call that returns to @to, else of the innermost (sink_ops.ret); 0 at 0.
 */
unsigned int dec_stream_ret_depth(const struct dec_stream *st, uint64_t to);
/*
 * dec_insn_size() of the instruction at @ip (section @isid, exec mode
 * @mode) through a direct-mapped cache keyed by all three: 0 if its bytes
 * cannot be read or decoded.
 */
unsigned int dec_stream_insn_size(struct dec_stream *st, int isid, uint64_t ip, uint8_t mode);
/* The size of block @it's last instruction: libipt's, else dec_stream_insn_size()'s. */
unsigned int dec_stream_last_size(struct dec_stream *st, const struct dec_item *it);
/* The function and module of @ip in @st's code (cached in st->sc). */
const struct dec_symc *dec_stream_sym(struct dec_stream *st, uint64_t ip);
/* "sym+0xoff", "dso+0xoff" or "0xaddr" of @ip in @st's code. */
const char *dec_stream_fmt(const struct dec_stream *st, uint64_t ip, char *buf, size_t len);
/*
 * dec_stream_fmt()'s text of @ip (its length in *@len), from a
 * direct-mapped cache keyed by (@ip, st->sym_gen): the text is a function
 * of the address, the process and the time only.  Valid until the next
 * call.
 */
const char *dec_stream_fmt_fast(struct dec_stream *st, uint64_t ip, size_t *len);
/*
 * dec_walk_block() of @b through the stream's cache of walks: the
 * instructions found, all of @b's or 0.
 */
size_t dec_stream_walk(struct dec_stream *st, const struct dec_item *b, dec_insn_fn fn, void *arg);
/* "file:line" of @ip in @st's code, or NULL. */
const char *dec_stream_line(const struct dec_stream *st, uint64_t ip, char *buf, size_t len);
/* The --calls time column of @tsc (decode.rst). */
const char *dec_stream_time(const struct dec_stream *st, uint64_t tsc, char *buf, size_t len);
/*
 * The thread of @st's line (--fields tid, --tid): the trace's; per CPU,
 * the one the switch records say runs; else the process (0: unknown).
 */
long dec_stream_tid(const struct dec_stream *st);
/* --fields' columns (tid, cpu, time at @tsc) of a line of @st to @f, if any. */
void dec_stream_fields(const struct dec_stream *st, FILE *f, unsigned int which, uint64_t tsc);
/* @s as a JSON string to @f; bytes that are not well-formed UTF-8 become \ufffd. */
void dec_json_str(FILE *f, const char *s);

/*
 * A sink's own output buffer: lines are formatted straight into it and
 * written with one fwrite per DEC_OBUF_SIZE bytes, not one (or several)
 * per line.  A sink that also writes to its FILE by other means
 * (fprintf, dec_stream_fields) calls dec_obuf_flush() before, so that
 * the bytes keep their order; dec_obuf_free() flushes the rest.
 */
#define DEC_OBUF_SIZE	65536

struct dec_obuf {
	FILE *f;
	char *s;
	size_t len, cap;
};

void dec_obuf_init(struct dec_obuf *b, FILE *f);
void dec_obuf_flush(struct dec_obuf *b);
void dec_obuf_free(struct dec_obuf *b);
/* Make room for @n more bytes (flushing, or growing for one long line). */
char *dec_obuf_grow(struct dec_obuf *b, size_t n);

/* Room for @n bytes at the end of @b; dec_obuf_done() says how many were written. */
static inline char *dec_obuf_room(struct dec_obuf *b, size_t n)
{
	return b->len + n <= b->cap ? b->s + b->len : dec_obuf_grow(b, n);
}

static inline void dec_obuf_done(struct dec_obuf *b, const char *end)
{
	b->len = (size_t)(end - b->s);
}

static inline void dec_obuf_put(struct dec_obuf *b, const void *s, size_t n)
{
	char *p = dec_obuf_room(b, n);

	memcpy(p, s, n);
	b->len += n;
}

/* dec_json_str() into @b. */
void dec_obuf_json_str(struct dec_obuf *b, const char *s);

/*
 * One output.  Every hook may be NULL.  The stream calls, for each trace,
 * trace_begin, then per segment: segment (before its items), and per
 * item: block (each DI_BLOCK, after call/ret for the block before it),
 * insn (each instruction, when a sink needs them and the block's
 * instructions can be walked) or insns (a block in one function, when no
 * sink needs every instruction), event (every other item); then
 * trace_end; end writes what is kept for the end and frees the sink.
 */
struct dec_sink;
struct dec_sink_ops {
	const char *name;
	unsigned int needs;
	void (*trace_begin)(struct dec_sink *k, struct dec_stream *st, size_t i);
	void (*segment)(struct dec_sink *k, struct dec_stream *st, const struct dec_segment *seg);
	/* a call into block @b (@depth: the depth outside it) */
	void (*call)(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
		     unsigned int depth);
	/*
	 * A return into block @b (@depth: after it; @popped: a call was
	 * open): the call whose return address is @b's, the innermost such;
	 * when that is below the top, the ret hooks are called once for each
	 * call closed (st->unwinding).  A return to no open call's address
	 * closes the innermost (perf's thread-stack.c matches returns to
	 * calls by return address the same way: thread_stack__pop_cp()).
	 */
	void (*ret)(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
		    unsigned int depth, bool popped);
	void (*block)(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b);
	void (*insn)(struct dec_sink *k, struct dec_stream *st, uint64_t ip, unsigned int size,
		     bool last, const struct dec_item *b);
	void (*insns)(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b);
	/*
	 * Instead of insn: all instructions of block (or run of blocks) @b
	 * at once; false to be told them one by one (insn, unshown).
	 */
	bool (*run)(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b);
	/* @n of @b's instructions could not be shown (unreadable code) */
	void (*unshown)(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b, uint32_t n);
	void (*event)(struct dec_sink *k, struct dec_stream *st, const struct dec_item *it);
	void (*trace_end)(struct dec_sink *k, struct dec_stream *st);
	void (*end)(struct dec_sink *k, struct dec_stream *st);
	/*
	 * With a slice (slice.c): the stream enters it (the next item is the
	 * first the sink is told of since the trace began or since leave;
	 * st->frames are the calls open there) or leaves it (the sink is told
	 * nothing until the next enter).  Without a slice neither is called.
	 */
	void (*enter)(struct dec_sink *k, struct dec_stream *st);
	void (*leave)(struct dec_sink *k, struct dec_stream *st);
};

struct dec_sink {
	const struct dec_sink_ops *ops;
	FILE *f;
};

/* The sinks, one per file; each returns a sink writing to @f. */
struct dec_sink *dec_sink_insn(struct dec_stream *st, FILE *f);
struct dec_sink *dec_sink_calls(struct dec_stream *st, FILE *f);
struct dec_sink *dec_sink_perfetto(struct dec_stream *st, FILE *f);
struct dec_sink *dec_sink_profile(struct dec_stream *st, FILE *f);
struct dec_sink *dec_sink_folded(struct dec_stream *st, FILE *f);
struct dec_sink *dec_sink_blocks(struct dec_stream *st, FILE *f);
struct dec_sink *dec_sink_drcov(struct dec_stream *st, FILE *f);
/* --jsonl: --insn and --calls as JSON Lines (sink_json.c) */
struct dec_sink *dec_sink_insn_json(struct dec_stream *st, FILE *f);
struct dec_sink *dec_sink_calls_json(struct dec_stream *st, FILE *f);

/*
 * Coverage blocks for --blocks and --drcov (sink_blocks.c): libipt's
 * blocks joined where one continues straight into the next, and the taken
 * edges between them.
 */
struct dec_cover {
	struct dec_map blocks, edges;
	bool have_lb;			/* a logical block is open: lb_start..lb_end */
	uint64_t lb_start, lb_end;
	bool have_prev;
	uint64_t prev_last, prev_next;	/* last insn of the block before, its fall-through */
};
void dec_cover_block(struct dec_cover *cv, struct dec_stream *st, const struct dec_item *b);
void dec_cover_event(struct dec_cover *cv, const struct dec_item *it);
void dec_cover_end(struct dec_cover *cv);
void dec_cover_free(struct dec_cover *cv);

/*
 * The slice filter (slice.c): which items of the stream the sinks are
 * told of.  The stream calls it before each item; it never changes the
 * stream's state.
 */
struct dec_slicer;
/* NULL when @sl is NULL or gives no condition. */
struct dec_slicer *dec_slicer_new(const struct dec_slice *sl, struct dec_ctx *c);
void dec_slicer_free(struct dec_slicer *s);
/* Trace @res begins: false if --tid/--cpu leave it out (then nothing of it is shown). */
bool dec_slicer_trace(struct dec_slicer *s, const struct dec_stream *st,
		      const struct dec_trace_result *res);
/*
 * Block @b, the instructions [@n0, @n0 + b->ninsn) of the trace, after
 * the call (@pending 1) or return (2) of the block before, @nbr taken
 * branches of the trace so far (the one into @b included): its
 * instructions [*@k0, *@k1) (relative to @b) are in the slice.
 */
void dec_slicer_block(struct dec_slicer *s, struct dec_stream *st, const struct dec_item *b,
		      uint64_t n0, uint64_t nbr, int pending, uint32_t *k0, uint32_t *k1);
/* An event item @it after @n instructions of the trace: is it in the slice? */
bool dec_slicer_event(struct dec_slicer *s, const struct dec_stream *st, const struct dec_item *it,
		      uint64_t n);

#endif /* IPT_DECODE_SINK_H */

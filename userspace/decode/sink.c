// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: the stream that feeds the sinks (sink.h).  The orderer
 * (pool.c) gives it every segment in trace order, once the segment has
 * converged with the next; it walks the segment's items once and calls
 * each sink for what that sink needs.  It keeps what the outputs share:
 * the instruction number, the call depth, the time of the block before
 * and whose code it is (for stateless symbol lookups).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

struct dec_render {
	struct dec_stream st;
	struct dec_sink *sinks[OUT_NR];
	size_t nr;
	unsigned int needs;	/* of all sinks */
	unsigned int ran;	/* bit i: sinks[i] took the run being walked whole (run) */
	int pending;		/* 1 call, 2 return from the block before */
	/*
	 * The instructions of consecutive blocks are walked as one run (run,
	 * have_run) while each block ends with a non-branch instruction and
	 * the next follows with no item between them, in the same exec mode
	 * and section: it can only start at the fall-through.  libipt 2.0.5
	 * ends blocks at different places on its cached and uncached paths,
	 * so which blocks a decoder gets depends on which decoder filled the
	 * section's block cache first; the runs do not.  (Block decoder only:
	 * the instruction decoder's blocks are single instructions, as the
	 * reference's instruction flavour prints them.)
	 */
	bool merge;
	/*
	 * No slice, and no sink wants instructions or blocks (only calls,
	 * returns and events: --calls, --perfetto): blocks are not gathered
	 * into runs (on_block_lean()).
	 */
	bool lean;
	bool have_run;
	struct dec_item run;
	/*
	 * A slice (slice.c): the sinks are told nothing while @mute; the run
	 * was made while @run_mute.  The stream's own state goes on.
	 */
	struct dec_slicer *sl;
	bool mute, run_mute;
	bool trace_in;		/* --tid/--cpu keep the current trace */
	uint64_t seen;		/* instructions of the trace's blocks so far */
	uint64_t slice_insns;	/* of them, told to the sinks */
	size_t ti;		/* the trace's index */
	uint64_t last_end;	/* the last instruction of the block before */
	/* and its size if libipt gave it (0: decode it), section and mode */
	uint8_t last_size, last_mode;
	int last_isid;
	uint64_t run_tsc;	/* the stream's time when the run began */
	/* taken branches: a block that does not start at @fall, the block before's fall-through */
	uint64_t branches;
	bool count_branches;	/* only --last-branches needs them (an instruction decode per block) */
	bool have_fall;
	uint64_t fall;
};

#define EACH(r, k) \
	for (size_t _i = 0; !(r)->mute && _i < (r)->nr && ((k) = (r)->sinks[_i], 1); _i++)

/*
 * dec_stream_fmt()'s texts by address: --insn formats one per instruction,
 * --calls and --perfetto one per call and return, and a trace runs the
 * same code again and again.  An entry is (address, st->sym_gen): a text
 * made for another process or at another time of the mappings never
 * matches (sym_gen 0 is never current: unused entries never match).
 */
#define FMTC_SIZE	16384		/* entries, a power of 2 */
#define FMTC_LEN	86		/* longer texts are made each time */

struct dec_fmtc {
	struct fmtc_ent {
		uint64_t ip, gen;
		uint8_t len;
		char s[FMTC_LEN];
	} e[FMTC_SIZE];
	char buf[512];			/* dec_sym_fmt_at()'s buffer size */
};

/*
 * dec_stream_sym()'s answers by address, behind the one-function cache
 * st->sc: a block that calls out and is returned to looks its function up
 * again at each call and return (--folded, --perfetto), and st->sc then
 * holds the callee's.  An entry is (address, st->sym_gen) and the
 * dec_symc that dec_symc_lookup() made for that address: a function of
 * the address, the process and the time only.
 */
#define SYMCC_SIZE	4096		/* entries, a power of 2 */

struct dec_symcc {
	struct symcc_ent {
		uint64_t ip, gen;
		struct dec_symc sc;
	} e[SYMCC_SIZE];
};

/* The instruction walks of runs of blocks (walk()): a direct-mapped cache. */
#define WALKC_SIZE	16384		/* entries, a power of 2 */
#define WALKC_MAX	4096		/* longer runs are walked each time */

struct dec_walkc {
	struct walkc_ent {
		uint64_t ip, end_ip;
		int isid;
		uint32_t ninsn;
		uint8_t mode, last_size;
		bool used, ok;		/* @ok: the walk found all @ninsn */
		uint8_t *sizes;		/* [ninsn] when @ok */
		uint32_t cap;
	} e[WALKC_SIZE];
};

/* The sizes of instructions (dec_stream_insn_size()): a direct-mapped cache. */
#define SIZEC_SIZE	4096		/* entries, a power of 2 */

struct dec_sizec {
	struct sizec_ent {
		uint64_t ip;
		int isid;
		uint8_t mode, size;	/* @size 0: empty */
	} e[SIZEC_SIZE];
};

struct walkc_fill {
	uint8_t *s;
	uint32_t n;
};

/* The process or the time changed: symbols are looked up afresh. */
static void stream_where(struct dec_stream *st)
{
	dec_symc_reset(&st->sc);
	st->sym_gen++;
}

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

const char *dec_stream_fmt_fast(struct dec_stream *st, uint64_t ip, size_t *len)
{
	struct fmtc_ent *e;
	size_t l;

	if (!st->fmtc)
		st->fmtc = dec_xcalloc(1, sizeof(*st->fmtc));
	e = &st->fmtc->e[(ip ^ (ip >> 14) ^ (ip >> 28)) & (FMTC_SIZE - 1)];	/* neighbours stay near */
	if (e->gen == st->sym_gen && e->ip == ip) {
		*len = e->len;
		return e->s;
	}
	dec_stream_fmt(st, ip, st->fmtc->buf, sizeof(st->fmtc->buf));
	l = strlen(st->fmtc->buf);
	*len = l;
	if (l >= FMTC_LEN)
		return st->fmtc->buf;
	memcpy(e->s, st->fmtc->buf, l + 1);
	e->len = (uint8_t)l;
	e->ip = ip;
	e->gen = st->sym_gen;
	return e->s;
}

const struct dec_symc *dec_stream_sym(struct dec_stream *st, uint64_t ip)
{
	struct symcc_ent *e;

	if (ip >= st->sc.start && ip < st->sc.end)
		return &st->sc;
	if (!st->symcc)
		st->symcc = dec_xcalloc(1, sizeof(*st->symcc));
	e = &st->symcc->e[(ip ^ (ip >> 12) ^ (ip >> 24)) & (SYMCC_SIZE - 1)];
	if (e->gen == st->sym_gen && e->ip == ip) {
		st->sc = e->sc;
		return &st->sc;
	}
	dec_symc_lookup(&st->sc, st->c->syms, ip, st->pid, st->time);
	e->ip = ip;
	e->gen = st->sym_gen;
	e->sc = st->sc;
	return &st->sc;
}

const char *dec_stream_fmt(const struct dec_stream *st, uint64_t ip, char *buf, size_t len)
{
	return dec_sym_fmt_at(st->c->syms, ip, st->pid, st->time, buf, len);
}

const char *dec_stream_line(const struct dec_stream *st, uint64_t ip, char *buf, size_t len)
{
	return dec_sym_line_at(st->c->syms, ip, st->pid, st->time, buf, len);
}

const char *dec_disabled_str(const struct dec_stream *st, const struct dec_item *it, char *buf,
			     size_t len)
{
	bool far = st->have_last && (st->last_iclass == ptic_far_call ||
				     st->last_iclass == ptic_far_return ||
				     st->last_iclass == ptic_far_jump);

	if (it->code == DEC_DIS_ASYNC && it->ip)
		snprintf(buf, len, "[disabled at %#" PRIx64 ": interrupt or fault]", it->ip);
	else if (it->code == DEC_DIS_SYNC && far)
		snprintf(buf, len, "[disabled at %#" PRIx64 ": system call or far transfer]",
			 st->last_ip);
	else if (it->code == DEC_DIS_SYNC && it->ip && st->have_last)
		snprintf(buf, len, "[disabled at %#" PRIx64 ": branch to %#" PRIx64
			 " outside the traced range]", st->last_ip, it->ip);
	else if (it->code == DEC_DIS_SYNC && it->ip)
		snprintf(buf, len, "[disabled: branch to %#" PRIx64 " outside the traced range]",
			 it->ip);
	else if (st->have_last)
		snprintf(buf, len, "[disabled at %#" PRIx64 "]", st->last_ip);
	else
		snprintf(buf, len, "[disabled]");
	return buf;
}

long dec_stream_tid(const struct dec_stream *st)
{
	const struct dec_trace *t = st->res->trace;

	return t->tid > 0 ? t->tid : st->thread > 0 ? st->thread : st->pid;
}

void dec_stream_fields(const struct dec_stream *st, FILE *f, unsigned int which, uint64_t tsc)
{
	const struct dec_trace *t = st->res->trace;
	unsigned int w = which & st->o->fields;
	char tb[32];

	if (w & DEC_FIELD_TID) {
		long id = dec_stream_tid(st);

		if (id > 0)
			fprintf(f, "%7ld ", id);
		else
			fprintf(f, "%7s ", "-");
	}
	if (w & DEC_FIELD_CPU) {
		if (t->cpu >= 0)
			fprintf(f, "[%03d] ", t->cpu);
		else
			fprintf(f, "[ - ] ");
	}
	if (w & DEC_FIELD_TIME)
		fprintf(f, "%14s ", st->c->timed ? dec_stream_time(st, tsc, tb, sizeof(tb)) : "-");
}

/*
 * The length of the well-formed UTF-8 sequence at @p (Unicode 15, table
 * 3-7: no overlong form, no surrogate, nothing past U+10FFFF), 0 if the
 * bytes there are not one.
 */
static size_t utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/*
 * The length of the run at @s that a JSON string holds as it is: ASCII
 * other than controls, '"' and '\\', and well-formed UTF-8.
 */
static size_t json_plain_len(const char *s)
{
	const unsigned char *e = (const unsigned char *)s;
	size_t n;

	for (;;) {
		if (*e >= 0x20 && *e < 0x80 && *e != '"' && *e != '\\')
			e++;
		else if (*e >= 0x80 && (n = utf8_len(e)))
			e += n;
		else
			return (size_t)((const char *)e - s);
	}
}

/*
 * The escape of @c, the byte that ends a json_plain_len() run (not NUL),
 * into @p (at least 6 bytes); returns its length.  A byte that is not
 * part of well-formed UTF-8 (a name from a binary or a thread's comm is
 * bytes, not text) becomes U+FFFD, so the output is always valid JSON.
 */
static size_t json_escape(unsigned char c, char *p)
{
	static const char hx[] = "0123456789abcdef";

	if (c == '"' || c == '\\') {
		p[0] = '\\';
		p[1] = (char)c;
		return 2;
	}
	if (c >= 0x80) {
		memcpy(p, "\\ufffd", 6);
		return 6;
	}
	memcpy(p, "\\u00", 4);
	p[4] = hx[c >> 4];
	p[5] = hx[c & 15];
	return 6;
}

/*
 * @s as a JSON string.  Each run of characters that need no escape goes
 * in one write (--perfetto writes a name per event); well-formed UTF-8 is
 * kept as it is, anything else escaped (json_escape()).
 */
void dec_json_str(FILE *f, const char *s)
{
	char esc[6];
	size_t n;

	fputc_unlocked('"', f);
	for (;;) {
		n = json_plain_len(s);
		if (n)
			fwrite_unlocked(s, 1, n, f);
		s += n;
		if (!*s)
			break;
		fwrite_unlocked(esc, 1, json_escape((unsigned char)*s, esc), f);
		s++;
	}
	fputc_unlocked('"', f);
}

void dec_obuf_init(struct dec_obuf *b, FILE *f)
{
	b->f = f;
	b->len = 0;
	b->cap = DEC_OBUF_SIZE;
	b->s = dec_xrealloc(NULL, b->cap);
}

void dec_obuf_flush(struct dec_obuf *b)
{
	if (b->len)
		fwrite_unlocked(b->s, 1, b->len, b->f);
	b->len = 0;
}

char *dec_obuf_grow(struct dec_obuf *b, size_t n)
{
	dec_obuf_flush(b);
	if (n > b->cap) {
		b->cap = n;
		b->s = dec_xrealloc(b->s, b->cap);
	}
	return b->s;
}

void dec_obuf_free(struct dec_obuf *b)
{
	dec_obuf_flush(b);
	free(b->s);
	b->s = NULL;
	b->cap = 0;
}

void dec_obuf_json_str(struct dec_obuf *b, const char *s)
{
	size_t n;
	char *p;

	dec_obuf_put(b, "\"", 1);
	for (;;) {
		n = json_plain_len(s);
		if (n)
			dec_obuf_put(b, s, n);
		s += n;
		if (!*s)
			break;
		p = dec_obuf_room(b, 6);
		dec_obuf_done(b, p + json_escape((unsigned char)*s, p));
		s++;
	}
	dec_obuf_put(b, "\"", 1);
}

/*
 * The time column of --calls for @tsc: seconds (to the nanosecond) since
 * the run's first TSC, or TSC ticks since it when the TSC's frequency is
 * unknown; "-" when the decoder had no time there.
 */
const char *dec_stream_time(const struct dec_stream *st, uint64_t tsc, char *buf, size_t len)
{
	uint64_t ns;

	if (!tsc || tsc < st->c->t0)
		return "-";
	if (st->time_ok && dec_tsc_ns(st->c, tsc, &ns) && ns >= st->ns0) {
		ns -= st->ns0;
		snprintf(buf, len, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
	} else {
		snprintf(buf, len, "%" PRIu64, tsc - st->c->t0);
	}
	return buf;
}

struct dec_render *dec_render_begin(struct dec_ctx *c, const struct dec_outputs *o)
{
	static struct dec_sink *(*const make[OUT_NR])(struct dec_stream *, FILE *) = {
		[OUT_INSN] = dec_sink_insn, [OUT_CALLS] = dec_sink_calls,
		[OUT_PROFILE] = dec_sink_profile, [OUT_FOLDED] = dec_sink_folded,
		[OUT_PERFETTO] = dec_sink_perfetto, [OUT_DRCOV] = dec_sink_drcov,
		[OUT_BLOCKS] = dec_sink_blocks,
	};
	struct dec_render *r;
	size_t i;

	for (i = 0; i < OUT_NR && !o->f[i]; i++)
		;
	if (i == OUT_NR && !dec_slice_on(o->slice))	/* the summary needs no rendering */
		return NULL;
	r = dec_xcalloc(1, sizeof(*r));
	r->sl = dec_slicer_new(o->slice, c);
	c->sliced = r->sl != NULL;
	r->count_branches = r->sl && o->slice->last_branches;
	/* a slice is made of blocks: the summary's count too */
	if (r->sl)
		r->needs |= DEC_NEED_BLOCKS;
	r->st.c = c;
	r->st.o = o;
	stream_where(&r->st);
	r->st.time_ok = c->timed && dec_tsc_ns(c, c->t0, &r->st.ns0);
	r->merge = !c->opt.insn_decoder;
	r->lean = !r->sl;
	for (i = 0; i < OUT_NR; i++)
		if (o->f[i]) {
			/* --jsonl: --insn and --calls as JSON Lines (sink_json.c) */
			if (o->json && i == OUT_INSN)
				r->sinks[r->nr] = dec_sink_insn_json(&r->st, o->f[i]);
			else if (o->json && i == OUT_CALLS)
				r->sinks[r->nr] = dec_sink_calls_json(&r->st, o->f[i]);
			else
				r->sinks[r->nr] = make[i](&r->st, o->f[i]);
			r->needs |= r->sinks[r->nr]->ops->needs;
			if (r->sinks[r->nr]->ops->block || r->sinks[r->nr]->ops->insn ||
			    r->sinks[r->nr]->ops->insns || r->sinks[r->nr]->ops->run ||
			    r->sinks[r->nr]->ops->unshown)
				r->lean = false;
			r->nr++;
		}
	if (r->needs & (DEC_NEED_INSNS | DEC_NEED_EVERY_INSN))
		r->lean = false;
	return r;
}

unsigned int dec_render_needs(const struct dec_render *r)
{
	return r ? r->needs : 0;
}

void dec_render_trace_begin(struct dec_render *r, const struct dec_trace_result *res, size_t i)
{
	struct dec_sink *k;

	if (!r)
		return;
	r->st.res = res;
	r->st.tid = res->trace->tid > 0 ? (unsigned int)res->trace->tid :
		    res->trace->cpu >= 0 ? (unsigned int)res->trace->cpu : (unsigned int)i;
	r->st.pid = res->trace->pid;
	r->st.thread = 0;
	r->st.time = 0;
	stream_where(&r->st);	/* another process: forget the symbol caches */
	r->st.idx = 0;
	r->st.depth = 0;
	r->pending = 0;
	r->st.call_pending = false;
	r->st.have_last = false;
	r->st.prev_tsc = 0;
	r->st.now_tsc = 0;
	r->st.shown_pid = res->trace->pid > 0 ? res->trace->pid : -1;
	r->ti = i;
	r->seen = 0;
	r->branches = 0;
	r->have_fall = false;
	r->slice_insns = 0;
	r->have_run = false;
	r->mute = false;
	r->trace_in = !r->sl || dec_slicer_trace(r->sl, &r->st, res);
	EACH(r, k)
		if (k->ops->trace_begin && r->trace_in)
			k->ops->trace_begin(k, &r->st, i);
	/* a slice starts outside: the first item in it enters */
	r->mute = r->sl != NULL;
}

/* The open call at depth @d (0-based) from @call_ip into @target, returning to @ret. */
static void push_frame(struct dec_stream *st, unsigned int d, uint64_t call_ip, uint64_t target,
		       uint64_t ret)
{
	if (d >= st->frames_cap) {
		st->frames_cap = (d + 1) * 2;
		st->frames = dec_xrealloc(st->frames, st->frames_cap * sizeof(*st->frames));
	}
	st->frames[d].call_ip = call_ip;
	st->frames[d].target = target;
	st->frames[d].ret = ret;
}

unsigned int dec_stream_insn_size(struct dec_stream *st, int isid, uint64_t ip, uint8_t mode)
{
	struct sizec_ent *e;

	if (!st->sizec)
		st->sizec = dec_xcalloc(1, sizeof(*st->sizec));
	e = &st->sizec->e[mix64(ip ^ (uint64_t)(uint32_t)isid << 48 ^ mode) & (SIZEC_SIZE - 1)];
	if (!e->size || e->ip != ip || e->isid != isid || e->mode != mode) {
		e->ip = ip;
		e->isid = isid;
		e->mode = mode;
		e->size = (uint8_t)dec_insn_size(st->c, isid, ip, mode, NULL);
	}
	return e->size;
}

unsigned int dec_stream_last_size(struct dec_stream *st, const struct dec_item *it)
{
	return it->last_size ? it->last_size :
	       dec_stream_insn_size(st, it->isid, it->end_ip, it->mode);
}

/*
 * The address the call instruction that ended the block before returns
 * to, or 0 if its bytes cannot be read.
 */
static uint64_t call_return_addr(struct dec_render *r)
{
	unsigned int size = r->last_size ? r->last_size :
			    dec_stream_insn_size(&r->st, r->last_isid, r->last_end, r->last_mode);

	return size ? r->last_end + size : 0;
}

unsigned int dec_stream_ret_depth(const struct dec_stream *st, uint64_t to)
{
	unsigned int d = st->depth;

	/* the innermost call that returns to @to; none: the top one */
	while (d > 0 && st->frames[d - 1].ret != to)
		d--;
	if (!d)
		d = st->depth;
	return d ? d - 1 : 0;
}

/* Close the innermost open call: the ret hooks, told the depth after it. */
static void pop_frame(struct dec_render *r, const struct dec_item *b, bool popped)
{
	struct dec_sink *k;

	if (popped)
		r->st.depth--;
	EACH(r, k)
		if (k->ops->ret)
			k->ops->ret(k, &r->st, b, r->st.depth, popped);
}

/* A call or return made by the block before, seen at the start of block @b. */
static void call_ret(struct dec_render *r, const struct dec_item *b)
{
	struct dec_sink *k;

	r->st.call_pending = false;
	if (r->pending == 1) {
		unsigned int outside = r->st.depth++;

		push_frame(&r->st, outside, r->last_end, b->ip, call_return_addr(r));
		EACH(r, k)
			if (k->ops->call)
				k->ops->call(k, &r->st, b, outside);
	} else if (r->pending == 2) {
		unsigned int after = dec_stream_ret_depth(&r->st, b->ip);

		r->st.unwinding = true;
		while (r->st.depth > after + 1)
			pop_frame(r, b, true);
		r->st.unwinding = false;
		pop_frame(r, b, r->st.depth > 0);
	}
	r->pending = 0;
}

static void on_insn(void *arg, uint64_t ip, unsigned int size, bool last, const struct dec_item *b)
{
	struct dec_render *r = arg;
	struct dec_sink *k;
	size_t i;

	for (i = 0; i < r->nr; i++) {
		k = r->sinks[i];
		if (k->ops->insn && !(r->ran & (1u << i)))
			k->ops->insn(k, &r->st, ip, size, last, b);
	}
	r->st.idx++;
}

/* dec_walk_block()'s callback filling a walk cache entry's sizes. */
static void walkc_note(void *arg, uint64_t ip, unsigned int size, bool last,
		       const struct dec_item *b)
{
	struct walkc_fill *w = arg;

	(void)ip;
	(void)last;
	if (w->n < b->ninsn)
		w->s[w->n++] = (uint8_t)size;
}

/*
 * dec_walk_block() of @it through the stream's walk cache: a walk is a
 * function of the block's section (its bytes), address, exec mode,
 * instruction count, last instruction and its size, all in the key.
 */
size_t dec_stream_walk(struct dec_stream *st, const struct dec_item *it, dec_insn_fn fn, void *arg)
{
	struct walkc_ent *e;
	uint64_t ip, mask;
	uint32_t i;

	if (it->ninsn > WALKC_MAX || !it->ninsn)
		return dec_walk_block(st->c, it, fn, arg);
	if (!st->walkc)
		st->walkc = dec_xcalloc(1, sizeof(*st->walkc));
	e = &st->walkc->e[mix64(it->ip ^ ((uint64_t)(uint32_t)it->isid << 48) ^ it->ninsn) &
			  (WALKC_SIZE - 1)];
	if (!e->used || e->ip != it->ip || e->end_ip != it->end_ip || e->isid != it->isid ||
	    e->ninsn != it->ninsn || e->mode != it->mode || e->last_size != it->last_size) {
		struct walkc_fill w;

		if (e->cap < it->ninsn) {
			e->cap = it->ninsn < 64 ? 64 : it->ninsn;
			e->sizes = dec_xrealloc(e->sizes, e->cap);
		}
		w.s = e->sizes;
		w.n = 0;
		e->used = true;
		e->ip = it->ip;
		e->end_ip = it->end_ip;
		e->isid = it->isid;
		e->ninsn = it->ninsn;
		e->mode = it->mode;
		e->last_size = it->last_size;
		e->ok = dec_walk_block(st->c, it, walkc_note, &w) == it->ninsn;
	}
	if (!e->ok)
		return 0;
	mask = it->mode == ptem_64bit ? UINT64_MAX :
	       it->mode == ptem_32bit ? 0xffffffffULL : 0xffffULL;
	for (i = 0, ip = it->ip; i < it->ninsn; i++) {
		fn(arg, ip, e->sizes[i], i + 1 == it->ninsn, it);
		ip = (ip + e->sizes[i]) & mask;
	}
	return it->ninsn;
}

/* Does block @it lie in one symbol (so that its instructions need no walk)? */
static bool in_one_symbol(struct dec_render *r, const struct dec_item *it)
{
	return dec_symc_holds(dec_stream_sym(&r->st, it->ip), it);
}

/* The instructions of block (or run of blocks) @it, to the sinks that need them. */
static void walk(struct dec_render *r, const struct dec_item *it)
{
	struct dec_sink *k;

	if (!(r->needs & DEC_NEED_EVERY_INSN) && (r->needs & DEC_NEED_INSNS) &&
	    in_one_symbol(r, it)) {
		/* the whole block is in one function: no walk */
		EACH(r, k)
			if (k->ops->insns)
				k->ops->insns(k, &r->st, it);
		r->st.idx += it->ninsn;
	} else if (r->needs & (DEC_NEED_INSNS | DEC_NEED_EVERY_INSN)) {
		uint64_t before = r->st.idx;
		bool rest = false;
		size_t n, i;

		/* the sinks that take the run whole, then a walk for the others */
		r->ran = 0;
		for (i = 0; i < r->nr; i++) {
			k = r->sinks[i];
			if (k->ops->run && k->ops->run(k, &r->st, it))
				r->ran |= 1u << i;
			else if (k->ops->insn || k->ops->unshown)
				rest = true;
		}
		if (!rest) {
			r->st.idx += it->ninsn;
			return;
		}
		n = dec_stream_walk(&r->st, it, on_insn, r);

		if (n < it->ninsn) {
			r->st.idx = before + it->ninsn;
			for (i = 0; i < r->nr; i++) {
				k = r->sinks[i];
				if (k->ops->unshown && !(r->ran & (1u << i)))
					k->ops->unshown(k, &r->st, it, it->ninsn - (uint32_t)n);
			}
		}
	} else {
		r->st.idx += it->ninsn;
	}
}

static void flush_run(struct dec_render *r)
{
	bool mute = r->mute;

	if (!r->have_run)
		return;
	r->have_run = false;
	r->mute = r->run_mute;
	r->st.line_tsc = r->run_tsc;
	if (r->mute) {
		r->st.idx += r->run.ninsn;	/* out of the slice: no walk */
	} else {
		r->slice_insns += r->run.ninsn;
		walk(r, &r->run);
	}
	r->mute = mute;
}

/* Tell the sinks from here on (@mute false: entering the slice) or stop (true: leaving). */
static void set_mute(struct dec_render *r, bool mute)
{
	struct dec_sink *k;

	if (mute == r->mute || !r->trace_in)
		return;
	flush_run(r);
	if (mute) {
		EACH(r, k)
			if (k->ops->leave)
				k->ops->leave(k, &r->st);
		r->mute = true;
		return;
	}
	r->mute = false;
	EACH(r, k)
		if (k->ops->enter)
			k->ops->enter(k, &r->st);
	r->st.shown_pid = r->st.pid;
}


/* What every block leaves for the next one: time, last IP, a call or return to tell. */
static void block_after(struct dec_render *r, const struct dec_item *it)
{
	if (it->tsc)
		r->st.prev_tsc = r->st.now_tsc = it->tsc;
	r->st.call_pending = it->iclass == ptic_call;
	r->st.call_ip = it->end_ip;
	r->last_size = it->last_size;
	r->last_mode = it->mode;
	r->last_isid = it->isid;
	r->st.have_last = true;
	r->st.last_ip = it->end_ip;
	r->st.last_iclass = it->iclass;
	if (it->iclass == ptic_call)
		r->pending = 1;
	else if (it->iclass == ptic_return)
		r->pending = 2;
}
static void on_block(struct dec_render *r, const struct dec_item *it)
{
	struct dec_sink *k;
	bool join = r->merge && r->have_run && r->run.iclass == ptic_other &&
		    it->mode == r->run.mode && it->isid == r->run.isid && r->run_mute == r->mute;

	if (!join)
		flush_run(r);
	call_ret(r, it);
	r->st.block_joins = join;
	EACH(r, k)
		if (k->ops->block)
			k->ops->block(k, &r->st, it);
	if (join) {
		r->run.end_ip = it->end_ip;
		r->run.ninsn += it->ninsn;
		r->run.last_size = it->last_size;
		r->run.iclass = it->iclass;
		if (it->tsc)
			r->run.tsc = it->tsc;
	} else {
		r->run = *it;
		r->have_run = true;
		r->run_mute = r->mute;
		r->run_tsc = r->st.now_tsc;
	}
	r->last_end = it->end_ip;
	if (!r->merge || r->run.iclass != ptic_other)
		flush_run(r);
	block_after(r, it);
}

/*
 * on_block() when r->lean: no sink is told of blocks or instructions, so
 * a block's instructions are counted at once rather than when its run is
 * flushed; every hook still sees the same st->idx (a run is flushed
 * before any call, return or event is told).
 */
static void on_block_lean(struct dec_render *r, const struct dec_item *it)
{
	call_ret(r, it);
	r->st.idx += it->ninsn;
	r->slice_insns += it->ninsn;
	r->last_end = it->end_ip;
	block_after(r, it);
}

struct split {
	uint32_t k;			/* the instruction wanted */
	uint32_t n;
	uint64_t ip, prev_ip;		/* its address, and its predecessor's */
	unsigned int prev_size;
};

static void split_insn(void *arg, uint64_t ip, unsigned int size, bool last,
		       const struct dec_item *b)
{
	struct split *sp = arg;

	(void)last;
	(void)b;
	if (sp->n + 1 == sp->k) {
		sp->prev_ip = ip;
		sp->prev_size = size;
	} else if (sp->n == sp->k) {
		sp->ip = ip;
	}
	sp->n++;
}

/*
 * Block @b cut before its instruction @k (0 < @k < ninsn) into @head and
 * @tail.  Where its code cannot be walked the addresses are unknown: the
 * pieces keep the block's, and the sinks show them as unreadable.
 */
static void split_block(struct dec_render *r, const struct dec_item *b, uint32_t k,
			struct dec_item *head, struct dec_item *tail)
{
	struct split sp = { .k = k };
	const struct dec_item whole = *b;	/* @tail may be @b */

	*head = whole;
	*tail = whole;
	head->ninsn = k;
	head->iclass = ptic_other;
	tail->ninsn = whole.ninsn - k;
	if (dec_walk_block(r->st.c, &whole, split_insn, &sp) == whole.ninsn) {
		head->end_ip = sp.prev_ip;
		head->last_size = (uint8_t)sp.prev_size;
		tail->ip = sp.ip;
	} else {
		head->last_size = 0;
	}
}

/* Block @it, with a slice: the pieces in and out of it, each told or not. */
static void sliced_block(struct dec_render *r, const struct dec_item *it)
{
	struct dec_item piece[3], rest;
	bool in[3];
	uint32_t k0 = 0, k1 = 0;
	size_t n = 0, i;
	uint64_t n0 = r->seen;

	r->seen += it->ninsn;
	if (r->count_branches) {
		unsigned int last_size = dec_stream_last_size(&r->st, it);

		if (r->have_fall && it->ip != r->fall)
			r->branches++;
		r->have_fall = last_size != 0;
		r->fall = it->end_ip + last_size;
	}
	if (r->trace_in)
		dec_slicer_block(r->sl, &r->st, it, n0, r->branches, r->pending, &k0, &k1);
	rest = *it;
	if (k0 > 0 && k0 < k1) {
		split_block(r, &rest, k0, &piece[n], &rest);
		in[n++] = false;
	}
	if (k1 > k0 && k1 - k0 < rest.ninsn) {
		split_block(r, &rest, k1 - k0, &piece[n], &rest);
		in[n++] = true;
		piece[n] = rest;
		in[n++] = false;
	} else {
		piece[n] = rest;
		in[n++] = k1 > k0;
	}
	for (i = 0; i < n; i++) {
		set_mute(r, !in[i]);
		/* the block's time is after its last piece: each piece starts at the time before */
		if (i + 1 < n)
			piece[i].tsc = 0;
		on_block(r, &piece[i]);
	}
}

void dec_render_segment(struct dec_render *r, const struct dec_segment *seg)
{
	struct dec_sink *k;
	size_t i;

	if (!r)
		return;
	if (seg->prof) {
		/* profile counts made by the worker: the items count their own below */
		uint64_t in_items = 0;

		for (i = seg->skip; i < seg->nr; i++)
			if (seg->items[i].kind == DI_BLOCK)
				in_items += seg->items[i].ninsn;
		r->st.idx += seg->insns - in_items;
	}
	for (i = 0; i < r->nr && r->trace_in; i++)
		if (r->sinks[i]->ops->segment)
			r->sinks[i]->ops->segment(r->sinks[i], &r->st, seg);
	for (i = seg->skip; i < seg->nr; i++) {
		const struct dec_item *it = &seg->items[i];

		if (it->kind == DI_BLOCK) {
			if (r->lean)
				on_block_lean(r, it);
			else if (r->sl)
				sliced_block(r, it);
			else
				on_block(r, it);
			continue;
		}
		if (r->sl)
			set_mute(r, !r->trace_in || !dec_slicer_event(r->sl, &r->st, it, r->seen));
		flush_run(r);
		if (it->tsc)
			r->st.now_tsc = it->tsc;
		if (it->kind == DI_GAP) {
			r->have_fall = false;
			r->pending = 0;
			r->st.call_pending = false;
			r->st.have_last = false;
		}
		if (it->kind == DI_PROCESS) {
			/* per-CPU switching: symbols of that process from here on */
			uint64_t ns = 0;

			r->st.thread = (long)it->end_ip;
			/* modules mapped then (mappings in time order) */
			if (!r->st.c->in->timed_maps || !it->tsc || !dec_tsc_ns(r->st.c, it->tsc, &ns))
				ns = 0;
			/* each segment starts with one: the caches stay while the code does */
			if (r->st.pid != it->code || r->st.time != ns) {
				r->st.pid = it->code;
				r->st.time = ns;
				stream_where(&r->st);
			}
		}
		EACH(r, k)
			if (k->ops->event)
				k->ops->event(k, &r->st, it);
		if (it->kind == DI_PROCESS && !r->mute)
			r->st.shown_pid = it->code;
	}
}

void dec_render_trace_end(struct dec_render *r)
{
	struct dec_sink *k;

	if (!r)
		return;
	flush_run(r);
	r->mute = !r->trace_in;
	EACH(r, k)
		if (k->ops->trace_end)
			k->ops->trace_end(k, &r->st);
	r->st.c->res[r->ti].slice_insns = r->trace_in ? r->slice_insns : 0;
	r->st.c->res[r->ti].branches = r->branches;
	r->st.c->res[r->ti].last_tsc = r->st.now_tsc;
}

void dec_render_end(struct dec_render *r)
{
	struct dec_sink *k;

	if (!r)
		return;
	r->st.pid = 0;	/* the whole-run outputs span every process */
	r->st.sym_gen++;	/* no cached text or symbol of another process answers */
	r->mute = false;
	EACH(r, k)
		k->ops->end(k, &r->st);
	dec_slicer_free(r->sl);
	free(r->st.frames);
	free(r->st.fmtc);
	free(r->st.symcc);
	if (r->st.walkc)
		for (size_t i = 0; i < WALKC_SIZE; i++)
			free(r->st.walkc->e[i].sizes);
	free(r->st.walkc);
	free(r->st.sizec);
	free(r);
}

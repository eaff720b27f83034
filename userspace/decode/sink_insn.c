// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: --insn, one line per instruction and per event
 * (Documentation/decode.rst, "Outputs").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <Zydis/Zydis.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

/* insn_run()'s cache of run texts: entries (a power of 2, two per set), longest run kept */
#define RUNC_SIZE	16384
#define RUNC_MAX	1024

struct tbuf {
	char *s;
	size_t len, cap;
};

struct insn_sink {
	struct dec_sink k;
	struct dec_obuf out;		/* the lines, written a buffer at a time */
	ZydisFormatter zf;
	struct tbuf line;
	struct run_ent {
		uint64_t gen;		/* 0: empty */
		uint64_t ip, end_ip;
		int isid;
		uint32_t ninsn;
		uint8_t mode, last_size;
		uint64_t used;		/* @clock when last used */
		struct tbuf text;
	} runc[RUNC_SIZE];
	uint64_t clock;
};

static void insn_trace_begin(struct dec_sink *k, struct dec_stream *st, size_t i)
{
	struct insn_sink *s = (struct insn_sink *)k;

	(void)i;
	dec_obuf_flush(&s->out);
	if (st->c->nr_res > 1)
		fprintf(k->f, "[trace %s]\n", st->res->trace->file);
}

static char *tb_room(struct tbuf *t, size_t n)
{
	if (t->len + n > t->cap) {
		t->cap = (t->len + n) * 2;
		t->s = dec_xrealloc(t->s, t->cap);
	}
	return t->s + t->len;
}

static void tb_put(struct tbuf *t, const char *s, size_t n)
{
	memcpy(tb_room(t, n), s, n);
	t->len += n;
}

/*
 * The line of the instruction at @ip (@size bytes, of block @b) without
 * --fields' columns, appended to @t: "%016x  %-40s" of @ip and
 * dec_sym_fmt_at()'s "sym+0xoff", "dso+0xoff" or "0xaddr" (the stream's
 * per-address cache of it), --lines' file:line, --disasm's text, a
 * newline.  Formatted by hand: per instruction, vfprintf was the largest
 * cost of --insn.  A function of the address, the block's section and
 * mode, and the process and time whose code it is (st->sym_gen) only.
 */
static void insn_line(struct insn_sink *s, struct dec_stream *st, struct tbuf *t, uint64_t ip,
		      unsigned int size, const struct dec_item *b)
{
	static const char hx[] = "0123456789abcdef";
	const struct dec_outputs *o = st->o;
	size_t l;
	const char *sym = dec_stream_fmt_fast(st, ip, &l);
	char *p = tb_room(t, 16 + 2 + l + 40 + 1), *p0 = p;
	uint64_t v = ip;
	int i;

	for (i = 15; i >= 0; i--, v >>= 4)
		p[i] = hx[v & 15];
	p[16] = p[17] = ' ';
	p += 18;
	memcpy(p, sym, l);
	p += l;
	if (l < 40) {
		memset(p, ' ', 40 - l);
		p += 40 - l;
	}
	t->len += (size_t)(p - p0);
	if (o->lines) {
		char lbuf[256], col[300];
		const char *ln = dec_stream_line(st, ip, lbuf, sizeof(lbuf));
		int n = snprintf(col, sizeof(col), o->disasm ? "  %-24s" : "  %s", ln ? ln : "-");

		tb_put(t, col, n < 0 ? 0 : (size_t)n < sizeof(col) ? (size_t)n : sizeof(col) - 1);
	}
	if (o->disasm) {
		ZydisDecodedInstruction zi;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		char text[256];
		size_t n = 0;
		const uint8_t *bytes = dec_code_at(st->c, b->isid, ip, &n);

		if (bytes && n >= size &&
		    ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec_zydis(b->mode), bytes, size, &zi, ops)) &&
		    ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&s->zf, &zi, ops,
								  zi.operand_count_visible,
								  text, sizeof(text), ip, NULL))) {
			tb_put(t, "  ", 2);
			tb_put(t, text, strlen(text));
		} else {
			tb_put(t, "  (bytes unavailable)", 21);
		}
	}
	tb_put(t, "\n", 1);
}

static void insn_insn(struct dec_sink *k, struct dec_stream *st, uint64_t ip, unsigned int size,
		      bool last, const struct dec_item *b)
{
	struct insn_sink *s = (struct insn_sink *)k;

	(void)last;
	if (st->o->fields) {
		dec_obuf_flush(&s->out);
		dec_stream_fields(st, k->f, ~0u, st->line_tsc);
	}
	s->line.len = 0;
	insn_line(s, st, &s->line, ip, size, b);
	dec_obuf_put(&s->out, s->line.s, s->line.len);
}

struct run_fill {
	struct insn_sink *s;
	struct dec_stream *st;
	struct tbuf *t;
};

static void run_fill_insn(void *arg, uint64_t ip, unsigned int size, bool last,
			  const struct dec_item *b)
{
	struct run_fill *w = arg;

	(void)last;
	insn_line(w->s, w->st, w->t, ip, size, b);
}

/* Does run cache entry @e hold the lines of run @b in @st's code? */
static bool run_ent_is(const struct run_ent *e, const struct dec_stream *st,
		       const struct dec_item *b)
{
	return e->gen == st->sym_gen && e->ip == b->ip && e->end_ip == b->end_ip &&
	       e->isid == b->isid && e->ninsn == b->ninsn && e->mode == b->mode &&
	       e->last_size == b->last_size;
}

/*
 * The lines of a whole run of blocks at once, from a two-way set-associative
 * cache of run texts keyed by everything a line depends on: the run (section,
 * address, mode, count, last instruction and its size: its walk) and
 * st->sym_gen (whose code).  Not with --fields (a column per line that
 * changes); false when the run's code cannot be walked (the stream then
 * says which instructions are not shown).
 */
static bool insn_run(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b)
{
	struct insn_sink *s = (struct insn_sink *)k;
	struct run_ent *e, *set;

	if (st->o->fields || !b->ninsn || b->ninsn > RUNC_MAX)
		return false;
	/* two ways per set, the one used longer ago replaced */
	set = &s->runc[((b->ip ^ (uint64_t)b->ninsn << 40 ^ (uint64_t)(uint32_t)b->isid << 52) *
			0x9e3779b97f4a7c15ULL >> 40) & (RUNC_SIZE - 2)];
	for (e = set; e < set + 2 && !run_ent_is(e, st, b); e++)
		;
	if (e == set + 2) {
		struct run_fill w;

		e = set[0].used <= set[1].used ? &set[0] : &set[1];
		w = (struct run_fill){ s, st, &e->text };
		e->gen = 0;
		e->text.len = 0;
		if (dec_stream_walk(st, b, run_fill_insn, &w) != b->ninsn)
			return false;
		e->gen = st->sym_gen;
		e->ip = b->ip;
		e->end_ip = b->end_ip;
		e->isid = b->isid;
		e->ninsn = b->ninsn;
		e->mode = b->mode;
		e->last_size = b->last_size;
	}
	e->used = ++s->clock;
	dec_obuf_put(&s->out, e->text.s, e->text.len);
	return true;
}

static void insn_unshown(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
			 uint32_t n)
{
	dec_obuf_flush(&((struct insn_sink *)k)->out);
	if (st->o->fields)
		dec_stream_fields(st, k->f, ~0u, st->line_tsc);
	fprintf(k->f, "[%" PRIu32 " instructions from %#" PRIx64
		" not shown: their code is unreadable]\n", n, b->ip);
}

static void insn_event(struct dec_sink *k, struct dec_stream *st, const struct dec_item *it)
{
	FILE *f = k->f;

	dec_obuf_flush(&((struct insn_sink *)k)->out);
	if (st->o->fields && (it->kind != DI_PROCESS || it->code != st->shown_pid))
		dec_stream_fields(st, f, ~0u, it->tsc ? it->tsc : st->now_tsc);
	switch (it->kind) {
	case DI_GAP:
		if (it->gap == GAP_STREAM) {
			char g[96];

			dec_sgap_text(it, g, sizeof(g));
			fprintf(f, "[%s, at offset %#" PRIx64 "]\n", g, it->off);
			break;
		}
		fprintf(f, "[lost trace: %s at offset %#" PRIx64 "%s%s, %" PRIu64
			" bytes skipped to the next PSB]\n",
			dec_gap_name((enum dec_gap)it->gap), it->off,
			it->code < 0 ? ": " : "",
			it->code < 0 ? pt_errstr(pt_errcode(it->code)) : "",
			it->skipped);
		break;
	case DI_ENABLED:
		fprintf(f, "[enabled at %#" PRIx64 "]\n", it->ip);
		break;
	case DI_DISABLED: {
		char buf[128];

		fprintf(f, "%s\n", dec_disabled_str(st, it, buf, sizeof(buf)));
		break;
	}
	case DI_ASYNC:
		fprintf(f, "[interrupt at %#" PRIx64 "]\n", it->ip);
		break;
	case DI_EOS:
		fprintf(f, "[end of trace]\n");
		break;
	case DI_PROCESS:
		/* each segment starts with one: shown when it changes */
		if (it->code != st->shown_pid)
			fprintf(f, "[process %d]\n", it->code);
		break;
	}
}

static void insn_end(struct dec_sink *k, struct dec_stream *st)
{
	struct insn_sink *s = (struct insn_sink *)k;

	(void)st;
	dec_obuf_free(&s->out);
	for (size_t i = 0; i < RUNC_SIZE; i++)
		free(s->runc[i].text.s);
	free(s->line.s);
	free(k);
}

static const struct dec_sink_ops insn_ops = {
	.name = "insn",
	.needs = DEC_NEED_BLOCKS | DEC_NEED_EVERY_INSN,
	.trace_begin = insn_trace_begin,
	.insn = insn_insn,
	.run = insn_run,
	.unshown = insn_unshown,
	.event = insn_event,
	.end = insn_end,
};

struct dec_sink *dec_sink_insn(struct dec_stream *st, FILE *f)
{
	struct insn_sink *s = dec_xcalloc(1, sizeof(*s));

	(void)st;
	s->k.ops = &insn_ops;
	s->k.f = f;
	dec_obuf_init(&s->out, f);
	ZydisFormatterInit(&s->zf, ZYDIS_FORMATTER_STYLE_INTEL);
	return &s->k;
}

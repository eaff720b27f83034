// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: --calls, one line per call and per return, indented by
 * the call depth (Documentation/decode.rst, "Outputs").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

struct calls_sink {
	struct dec_sink k;
	struct dec_obuf out;		/* the lines, written a buffer at a time */
};

static void calls_trace_begin(struct dec_sink *k, struct dec_stream *st, size_t i)
{
	struct calls_sink *s = (struct calls_sink *)k;

	(void)i;
	dec_obuf_flush(&s->out);
	if (st->c->nr_res > 1)
		fprintf(k->f, "[trace %s]\n", st->res->trace->file);
}

/* @v in decimal, right-aligned in @width, into @p: returns the end. */
static char *put_dec(char *p, uint64_t v, int width)
{
	char d[20];
	int n = 0;

	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (; width > n; width--)
		*p++ = ' ';
	while (n)
		*p++ = d[--n];
	return p;
}

/*
 * INSN [TIME] <indent> @dir SYMBOL TARGET, formatted by hand (the symbol
 * text from the stream's per-address cache) straight into the sink's
 * output buffer: "%10" PRIu64 " ", "%14s ", "%*s%c %s %#" PRIx64 "\n" as
 * before.  No allocation per line, however deep the indent.
 */
static void calls_line(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
		       unsigned int depth, char dir)
{
	static const char hx[] = "0123456789abcdef";
	struct calls_sink *s = (struct calls_sink *)k;
	char tbuf[32], *p;
	size_t sl, need;
	const char *sym = dec_stream_fmt_fast(st, b->ip, &sl);
	uint64_t ip = b->ip;
	int n;

	if (st->o->fields & (DEC_FIELD_TID | DEC_FIELD_CPU)) {
		dec_obuf_flush(&s->out);
		dec_stream_fields(st, k->f, DEC_FIELD_TID | DEC_FIELD_CPU, 0);
	}
	need = 20 + 1 + 32 + 2 * (size_t)depth + 2 + sl + 1 + 18 + 1;
	p = dec_obuf_room(&s->out, need);
	p = put_dec(p, st->idx, 10);
	*p++ = ' ';
	if (st->c->timed) {
		const char *t = dec_stream_time(st, st->prev_tsc, tbuf, sizeof(tbuf));
		size_t tl = strlen(t);

		for (; tl < 14; tl++)
			*p++ = ' ';
		memcpy(p, t, strlen(t));
		p += strlen(t);
		*p++ = ' ';
	}
	memset(p, ' ', 2 * (size_t)depth);
	p += 2 * (size_t)depth;
	*p++ = dir;
	*p++ = ' ';
	memcpy(p, sym, sl);
	p += sl;
	*p++ = ' ';
	if (ip) {
		char d[16];

		for (n = 0; ip; ip >>= 4)
			d[n++] = hx[ip & 15];
		*p++ = '0';
		*p++ = 'x';
		while (n)
			*p++ = d[--n];
	} else {
		*p++ = '0';
	}
	*p++ = '\n';
	dec_obuf_done(&s->out, p);
}

static void calls_call(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
		       unsigned int depth)
{
	calls_line(k, st, b, depth, '>');
}

static void calls_ret(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
		      unsigned int depth, bool popped)
{
	(void)popped;
	if (!st->unwinding)	/* one line for a return that unwinds several calls */
		calls_line(k, st, b, depth, '<');
}

static void calls_event(struct dec_sink *k, struct dec_stream *st, const struct dec_item *it)
{
	struct calls_sink *s = (struct calls_sink *)k;
	char g[96];

	if (it->kind != DI_GAP)
		return;
	dec_obuf_flush(&s->out);
	if (it->kind == DI_GAP)
		dec_stream_fields(st, k->f, DEC_FIELD_TID | DEC_FIELD_CPU, 0);
	if (it->kind == DI_GAP && it->gap == GAP_STREAM) {
		dec_sgap_text(it, g, sizeof(g));
		fprintf(k->f, "%10" PRIu64 " [%s, at offset %#" PRIx64 "]\n", st->idx, g, it->off);
	} else if (it->kind == DI_GAP)
		fprintf(k->f, "%10" PRIu64 " [lost trace: %s at offset %#" PRIx64 "]\n", st->idx,
			dec_gap_name((enum dec_gap)it->gap), it->off);
}

static void calls_end(struct dec_sink *k, struct dec_stream *st)
{
	struct calls_sink *s = (struct calls_sink *)k;

	(void)st;
	dec_obuf_free(&s->out);
	free(s);
}

static const struct dec_sink_ops calls_ops = {
	.name = "calls",
	.needs = DEC_NEED_BLOCKS,
	.trace_begin = calls_trace_begin,
	.call = calls_call,
	.ret = calls_ret,
	.event = calls_event,
	.end = calls_end,
};

struct dec_sink *dec_sink_calls(struct dec_stream *st, FILE *f)
{
	struct calls_sink *s = dec_xcalloc(1, sizeof(*s));

	(void)st;
	s->k.ops = &calls_ops;
	s->k.f = f;
	dec_obuf_init(&s->out, f);
	return &s->k;
}

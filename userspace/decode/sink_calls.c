// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: --calls, one line per call and per return, indented by
 * the call depth (Documentation/decode.rst, "Outputs").
 */
#include <inttypes.h>
#include <stdlib.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

static void calls_trace_begin(struct dec_sink *k, struct dec_stream *st, size_t i)
{
	(void)i;
	if (st->c->nr_res > 1)
		fprintf(k->f, "[trace %s]\n", st->res->trace->file);
}

/* INSN [TIME] <indent> @dir SYMBOL TARGET */
static void calls_line(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
		       unsigned int depth, char dir)
{
	char sbuf[512], tbuf[32];

	dec_stream_fields(st, k->f, DEC_FIELD_TID | DEC_FIELD_CPU, 0);
	fprintf(k->f, "%10" PRIu64 " ", st->idx);
	if (st->c->timed)
		fprintf(k->f, "%14s ", dec_stream_time(st, st->prev_tsc, tbuf, sizeof(tbuf)));
	fprintf(k->f, "%*s%c %s %#" PRIx64 "\n", (int)(2 * depth), "", dir,
		dec_stream_fmt(st, b->ip, sbuf, sizeof(sbuf)), b->ip);
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
	calls_line(k, st, b, depth, '<');
}

static void calls_event(struct dec_sink *k, struct dec_stream *st, const struct dec_item *it)
{
	char g[96];

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
	(void)st;
	free(k);
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
	struct dec_sink *k = dec_xcalloc(1, sizeof(*k));

	(void)st;
	k->ops = &calls_ops;
	k->f = f;
	return k;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: --blocks, every coverage block and taken edge with its
 * count (Documentation/decode.rst, "Outputs"), and the coverage blocks
 * that --drcov shares (sink_drcov.c).
 */
#include <inttypes.h>
#include <stdlib.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

/*
 * Coverage blocks: libipt's blocks, joined where one continues straight
 * into the next without a branch between them, so that a block is the
 * same however libipt (or a segment boundary) split it: a maximal
 * straight-line run ending in a taken branch, a call or a jump, a far
 * transfer, or a gap in the trace.  A block joins the one before when it
 * starts at that one's fall-through, or when the stream says it continues
 * it (@joins: st->block_joins): where the code cannot be walked the
 * fall-through is unknown, and libipt's split there must not show.
 */
static void lblock_end(struct dec_cover *cv)
{
	if (cv->have_lb)
		dec_map_get(&cv->blocks, cv->lb_start, cv->lb_end)->v++;
	cv->have_lb = false;
}

static void lblock(struct dec_cover *cv, const struct dec_item *it, uint64_t end, bool joins)
{
	if (!cv->have_lb || (it->ip != cv->lb_end && !joins)) {
		lblock_end(cv);
		cv->have_lb = true;
		cv->lb_start = it->ip;
	}
	cv->lb_end = end;
	if (it->iclass != ptic_other && it->iclass != ptic_cond_jump)
		lblock_end(cv);
}

void dec_cover_block(struct dec_cover *cv, struct dec_stream *st, const struct dec_item *it)
{
	unsigned int last_size = dec_stream_last_size(st, it);
	uint64_t fall = 0;
	bool have_fall = false;

	if (cv->have_prev && it->ip != cv->prev_next)
		dec_map_get(&cv->edges, cv->prev_last, it->ip)->v++;
	if (last_size) {
		fall = it->end_ip + last_size;
		have_fall = true;
	}
	lblock(cv, it, have_fall ? fall : it->end_ip + 1, st->block_joins);
	cv->have_prev = have_fall;
	cv->prev_last = it->end_ip;
	cv->prev_next = fall;
}

void dec_cover_event(struct dec_cover *cv, const struct dec_item *it)
{
	if (it->kind == DI_GAP) {
		lblock_end(cv);
		cv->have_prev = false;
	} else if (it->kind == DI_ENABLED) {
		lblock_end(cv);
	}
}

void dec_cover_end(struct dec_cover *cv)
{
	lblock_end(cv);
}

void dec_cover_free(struct dec_cover *cv)
{
	free(cv->blocks.t);
	free(cv->edges.t);
}

struct blocks_sink {
	struct dec_sink k;
	struct dec_cover cv;
};

static void blocks_trace_begin(struct dec_sink *k, struct dec_stream *st, size_t i)
{
	(void)st;
	(void)i;
	((struct blocks_sink *)k)->cv.have_prev = false;
}

static void blocks_block(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b)
{
	dec_cover_block(&((struct blocks_sink *)k)->cv, st, b);
}

static void blocks_event(struct dec_sink *k, struct dec_stream *st, const struct dec_item *it)
{
	(void)st;
	dec_cover_event(&((struct blocks_sink *)k)->cv, it);
}

static void blocks_trace_end(struct dec_sink *k, struct dec_stream *st)
{
	(void)st;
	dec_cover_end(&((struct blocks_sink *)k)->cv);
}

static void blocks_end(struct dec_sink *k, struct dec_stream *st)
{
	struct blocks_sink *s = (struct blocks_sink *)k;
	struct dec_cover *r = &s->cv;
	FILE *f = k->f;
	size_t n, i;

	(void)st;
	n = dec_map_entries(&r->blocks);
	dec_sort(r->blocks.t, n, sizeof(*r->blocks.t), dec_kv_cmp_addr);
	for (i = 0; i < n; i++)
		fprintf(f, "block %#" PRIx64 " %#" PRIx64 " %" PRIu64 "\n", r->blocks.t[i].a,
			r->blocks.t[i].b, r->blocks.t[i].v);
	n = dec_map_entries(&r->edges);
	dec_sort(r->edges.t, n, sizeof(*r->edges.t), dec_kv_cmp_addr);
	for (i = 0; i < n; i++)
		fprintf(f, "edge %#" PRIx64 " %#" PRIx64 " %" PRIu64 "\n", r->edges.t[i].a,
			r->edges.t[i].b, r->edges.t[i].v);
	dec_cover_free(r);
	free(s);
}

static const struct dec_sink_ops blocks_ops = {
	.name = "blocks",
	.needs = DEC_NEED_BLOCKS,
	.trace_begin = blocks_trace_begin,
	.block = blocks_block,
	.event = blocks_event,
	.trace_end = blocks_trace_end,
	.end = blocks_end,
};

struct dec_sink *dec_sink_blocks(struct dec_stream *st, FILE *f)
{
	struct blocks_sink *s = dec_xcalloc(1, sizeof(*s));

	(void)st;
	s->k.ops = &blocks_ops;
	s->k.f = f;
	return &s->k;
}

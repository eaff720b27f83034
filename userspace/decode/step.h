/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libiptdecode, internal: stepping libipt decoders and the convergence of
 * a split decode with a serial one (step.c).
 */
#ifndef IPT_DECODE_STEP_H
#define IPT_DECODE_STEP_H

#include "decode.h"

/*
 * Checkpoints each segment's decoder records, from its sync on: one after
 * each step until its first TIP-class packet is read, then at least
 * DEC_CK_MIN more and until the trace offset has moved DEC_CK_MOVES times
 * after it, and on while the decoder is in the first 1/DEC_CK_PART of its
 * segment, at most DEC_CK_MAX in all.  They cost time (a step per
 * block, a hash per step); a decoder that does not converge within them
 * is not wrong, only slow: the decoder before it decodes its segment
 * (step.c).
 */
#define DEC_CK_MIN 32
/*
 * A match is DEC_CK_RUN checkpoints in a row equal, step for step, over
 * which the trace offset moved DEC_CK_MOVES times.
 */
#define DEC_CK_RUN 4
#define DEC_CK_MOVES 2
#define DEC_CK_PART 256
#define DEC_CK_MAX 256
/*
 * The newest PSB+ status updates a decoder keeps, to tell which it
 * delivered after a PSB (dec_converge()).
 */
#define DEC_SU_RING 16
/*
 * A coarse step ends after this many instructions (or at an event, an
 * error or the end): at most as many blocks.
 */
#define DEC_STEP_INSNS 4096
#define DEC_PEND DEC_STEP_INSNS

/* A libipt decoder over one trace, with its images and state. */
struct dec_live;

/*
 * A decoder for @r's trace (the whole of it, up to trace offset @end: a
 * streamed trace's next gap), its code from @isc.  NULL if out of memory.
 */
struct dec_live *dec_live_new(struct dec_ctx *c, struct dec_trace_result *r, uint64_t end,
			      struct pt_image_section_cache *isc);
void dec_live_free(struct dec_live *L);

/*
 * A worker's part of segment @s: a decoder synced at its PSB (@first: the
 * trace's first segment, synced as a serial decode is), run until it has
 * read past the segment's end, with checkpoints for its first DEC_CK_MAX
 * steps; the decoder is kept in @s->live for dec_converge().
 */
void dec_segment_run(struct dec_ctx *c, struct dec_trace_result *r, struct dec_segment *s,
		     bool first, struct pt_image_section_cache *isc);

/*
 * In trace order, once segments @i and @i + 1 are decoded: run the live
 * decoder on into segment @i until it converges with segment @i + 1's,
 * and mark segment @i + 1's output before that point dropped (->skip).
 * Then segment @i is final.
 */
void dec_converge(struct dec_trace_result *r, size_t i);

#endif /* IPT_DECODE_STEP_H */

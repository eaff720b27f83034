// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: the slice filter between the stream and the sinks
 * (Documentation/decode.rst, "Slicing").  The stream (sink.c) walks every
 * item of every trace and keeps its state (instruction numbers, call
 * depth, time, process) as without a slice; before each item it asks this
 * filter which part of it the sinks are told of.  A block may be cut:
 * the filter says which of its instructions are in, the stream splits it.
 * Nothing here depends on how the trace was split into segments, so -J
 * and --no-split give the same slice.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

struct dec_slicer {
	struct dec_slice sl;
	struct dec_ctx *c;
	/* --insn-range / --last for the current trace: [from, to], inclusive */
	bool have_from, have_to;
	uint64_t from, to;
	/* --symbol: inside it since a block at call depth @entry_depth */
	bool inside;
	unsigned int entry_depth;
	uint64_t last_tsc;		/* the newest time seen in this trace (0: none) */
	uint64_t from_branch;		/* --last-branches: from the block of this branch on */
	uint64_t nbr;			/* taken branches so far */
	/* --tid of a per-CPU trace with switch records: by the thread running (st->thread) */
	bool by_thread;
};

bool dec_slice_on(const struct dec_slice *s)
{
	return s && (s->nr_times || s->have_insn_from ||
		     s->have_insn_to || s->nr_tids || s->nr_cpus || s->symbol || s->last ||
		     s->last_branches);
}

struct dec_slicer *dec_slicer_new(const struct dec_slice *sl, struct dec_ctx *c)
{
	struct dec_slicer *s;

	if (!dec_slice_on(sl))
		return NULL;
	s = dec_xcalloc(1, sizeof(*s));
	s->sl = *sl;
	s->c = c;
	return s;
}

void dec_slicer_free(struct dec_slicer *s)
{
	free(s);
}

bool dec_slicer_trace(struct dec_slicer *s, const struct dec_stream *st,
		      const struct dec_trace_result *res)
{
	bool in = true;
	size_t i;

	(void)st;
	s->inside = false;
	s->entry_depth = 0;
	s->last_tsc = 0;
	s->nbr = 0;
	s->have_from = s->sl.have_insn_from;
	s->from = s->sl.insn_from;
	s->have_to = s->sl.have_insn_to;
	s->to = s->sl.insn_to;
	if (s->sl.last) {
		/* the last N: from total - N on (the counting pass's total) */
		uint64_t from = res->total_insns > s->sl.last ? res->total_insns - s->sl.last : 0;

		if (!s->have_from || from > s->from)
			s->from = from;
		s->have_from = true;
	}
	/* the last N taken branches: numbers total - N + 1 .. total */
	s->from_branch = s->sl.last_branches && res->total_branches >= s->sl.last_branches ?
			 res->total_branches - s->sl.last_branches + 1 : 0;
	s->by_thread = false;
	if (s->sl.nr_tids && res->trace->tid <= 0 && res->trace->cpu >= 0) {
		/* per CPU: the parts its switch records give to these threads */
		for (i = 0; i < s->c->in->nr_sched; i++)
			if (s->c->in->sched[i].cpu == res->trace->cpu && s->c->in->have_time_conv)
				s->by_thread = true;
		in = in && s->by_thread;
	} else if (s->sl.nr_tids) {
		for (i = 0; i < s->sl.nr_tids && s->sl.tids[i] != res->trace->tid; i++)
			;
		in = in && res->trace->tid > 0 && i < s->sl.nr_tids;
	}
	if (s->sl.nr_cpus) {
		for (i = 0; i < s->sl.nr_cpus && s->sl.cpus[i] != res->trace->cpu; i++)
			;
		in = in && res->trace->cpu >= 0 && i < s->sl.nr_cpus;
	}
	return in;
}

uint64_t dec_slice_time(const struct dec_ctx *c, bool tsc_ticks, uint64_t tsc)
{
	uint64_t t = 0, ns0;

	if (tsc && tsc >= c->t0) {
		if (tsc_ticks)
			t = tsc - c->t0;
		else if (dec_tsc_ns(c, tsc, &t) && dec_tsc_ns(c, c->t0, &ns0) && t >= ns0)
			t -= ns0;
		else
			t = 0;
	}
	return t;
}

/* Is TSC @tsc (0: unknown, before everything) in one of the --time ranges? */
static bool time_in(const struct dec_slicer *s, const struct dec_stream *st, uint64_t tsc)
{
	uint64_t t;
	size_t i;

	(void)st;
	if (!s->sl.nr_times)
		return true;
	t = dec_slice_time(s->c, s->sl.time_tsc, tsc);
	for (i = 0; i < s->sl.nr_times; i++) {
		const struct dec_time_range *r = &s->sl.times[i];

		if ((!r->have_from || (tsc && t >= r->from)) && (!r->have_to || t <= r->to))
			return true;
	}
	return false;
}

/* --tid of a per-CPU trace: is the thread running now one of them? */
static bool thread_in(const struct dec_slicer *s, const struct dec_stream *st)
{
	size_t i;

	if (!s->by_thread)
		return true;
	for (i = 0; i < s->sl.nr_tids; i++)
		if (st->thread > 0 && s->sl.tids[i] == st->thread)
			return true;
	return false;
}

/* Is block @b's first instruction in function --symbol? */
static bool in_symbol(struct dec_stream *st, const char *name, uint64_t ip)
{
	const struct dec_symc *sc = dec_stream_sym(st, ip);

	return sc->sym && !strcmp(sc->sym->name, name);
}

void dec_slicer_block(struct dec_slicer *s, struct dec_stream *st, const struct dec_item *b,
		      uint64_t n0, uint64_t nbr, int pending, uint32_t *k0, uint32_t *k1)
{
	uint64_t lo = n0, hi = n0 + b->ninsn;	/* [lo, hi) in */
	/* its time: the decoder's when it starts the block (the newest time before it) */
	bool timely = time_in(s, st, s->last_tsc);

	if (b->tsc)
		s->last_tsc = b->tsc;
	s->nbr = nbr;
	if (s->sl.symbol) {
		/*
		 * A return that closes SYM's call leaves it: one made at SYM's
		 * own depth, or one that unwinds past it (st->depth: before
		 * the return; dec_stream_ret_depth(): after it).
		 */
		unsigned int after = pending == 2 ? dec_stream_ret_depth(st, b->ip) : 0;

		if (s->inside && pending == 2 && (!st->depth || after < s->entry_depth))
			s->inside = false;
		if (!s->inside && in_symbol(st, s->sl.symbol, b->ip)) {
			s->inside = true;
			s->entry_depth = pending == 1 ? st->depth + 1 :
					 pending == 2 ? after : st->depth;
		}
	}
	if ((s->sl.symbol && !s->inside) || !timely || nbr < s->from_branch || !thread_in(s, st))
		hi = lo;
	if (s->have_from && s->from > lo)
		lo = s->from;
	if (s->have_to && hi - 1 > s->to)	/* (hi >= 1: a block has instructions) */
		hi = s->to + 1;
	if (hi <= lo) {
		*k0 = *k1 = 0;
		return;
	}
	*k0 = (uint32_t)(lo - n0);
	*k1 = (uint32_t)(hi - n0);
}

bool dec_slicer_event(struct dec_slicer *s, const struct dec_stream *st, const struct dec_item *it,
		      uint64_t n)
{
	if (it->tsc)
		s->last_tsc = it->tsc;
	if ((s->sl.symbol && !s->inside) || s->nbr < s->from_branch || !thread_in(s, st))
		return false;
	if (!time_in(s, st, s->last_tsc))
		return false;
	/* events just before the first instruction and just after the last one are in */
	if (s->have_from && n < s->from)
		return false;
	return !s->have_to || !n || n - 1 <= s->to;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode, the run/ordering pool: workers decode segments in any
 * order on their own threads (step.c); one orderer takes them in trace
 * order, makes each converge with the next, hands it to the sinks and
 * frees it.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"
#include "step.h"

/*
 * Decoder threads run on stacks this big.  libipt 2.0.5's block decoder
 * recurses along a block (about 200 bytes of stack per instruction); with
 * blocks that do not end at calls and jumps a "jmp ." made a 65535
 * instruction block and overflowed 8 MB.  Blocks now always end there,
 * so this is only a margin; the stack is address space, only what is
 * used is backed by memory.
 */
#define DEC_STACK (256UL << 20)

/*
 * Item arrays of retired segments kept for the next segments a worker
 * starts.  A segment's items run to megabytes (64 bytes a block); each
 * grew by doubling from nothing and page-faulted its memory in again:
 * 7% of --perfetto's CPU time on decode-bench's trace.  At most this
 * many are kept: the window already held them.
 */
#define DEC_SPARES 4

/*
 * Workers claim segments in trace order and decode them; the orderer
 * takes them in the same order as they complete, makes each converge with
 * the next (step.c), renders and frees it.  Workers stay at most @window
 * segments ahead of it, so memory is bounded by the window, not by the
 * trace.
 */
struct work {
	struct dec_ctx *c;
	const struct dec_outputs *o;
	struct dec_render *rd;
	size_t total, next, rendered, window;
	size_t *map_trace, *map_seg;
	bool *done;
	unsigned int jobs;	/* worker threads running (0: the orderer decodes) */
	bool own_iscache;	/* each worker copies the section cache */
	struct pt_image_section_cache **iscs;	/* the workers' copies, freed at the end */
	unsigned int nr_iscs;
	struct {
		struct dec_item *items;
		size_t cap;
	} spare[DEC_SPARES];		/* under @lock */
	size_t nr_spare;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void decode_one(struct work *w, size_t k, struct pt_image_section_cache *isc)
{
	struct dec_trace_result *r = &w->c->res[w->map_trace[k]];
	struct dec_segment *s = &r->segs[w->map_seg[k]];

	pthread_mutex_lock(&w->lock);
	if (!s->items && w->nr_spare) {
		w->nr_spare--;
		s->items = w->spare[w->nr_spare].items;
		s->cap = w->spare[w->nr_spare].cap;
	}
	pthread_mutex_unlock(&w->lock);
	dec_segment_run(w->c, r, s, w->map_seg[k] == 0, isc);
}

static void *worker(void *arg)
{
	struct work *w = arg;
	struct pt_image_section_cache *isc = w->c->iscache;
	size_t k;

	if (w->own_iscache) {
		struct pt_image_section_cache *own = dec_iscache_copy(w->c);

		pthread_mutex_lock(&w->lock);
		if (own) {
			w->iscs[w->nr_iscs++] = own;
			isc = own;
		}
		pthread_mutex_unlock(&w->lock);
	}
	for (;;) {
		pthread_mutex_lock(&w->lock);
		while (w->next < w->total && w->next >= w->rendered + w->window)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->next >= w->total) {
			pthread_mutex_unlock(&w->lock);
			return NULL;
		}
		k = w->next++;
		pthread_mutex_unlock(&w->lock);
		decode_one(w, k, isc);
		pthread_mutex_lock(&w->lock);
		w->done[k] = true;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
}

/* Segment @k is decoded (by a worker, or now by this thread). */
static void wait_done(struct work *w, size_t k)
{
	if (!w->jobs) {
		if (!w->done[k])
			decode_one(w, k, w->c->iscache);
		w->done[k] = true;
		return;
	}
	pthread_mutex_lock(&w->lock);
	while (!w->done[k])
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

/* A rendered segment: count it, keep its errors, free its items (or keep them spare). */
static void retire_segment(struct work *w, struct dec_trace_result *r, struct dec_segment *s)
{
	size_t m;

	r->insns += s->insns;
	for (m = s->skip; m < s->nr; m++) {
		const struct dec_item *it = &s->items[m];

		if (it->kind != DI_GAP)
			continue;
		r->gaps[it->gap]++;
		r->gap_bytes[it->gap] += it->skipped;
		r->gap_items = dec_xrealloc(r->gap_items, (r->nr_gap_items + 1) * sizeof(*r->gap_items));
		r->gap_items[r->nr_gap_items++] = *it;
	}
	pthread_mutex_lock(&w->lock);
	if (s->items && w->nr_spare < DEC_SPARES) {
		w->spare[w->nr_spare].items = s->items;
		w->spare[w->nr_spare++].cap = s->cap;
		s->items = NULL;
	}
	pthread_mutex_unlock(&w->lock);
	free(s->items);
	s->items = NULL;
	s->nr = s->cap = s->skip = 0;
	free(s->ck);
	s->ck = NULL;
	s->nr_ck = s->cap_ck = 0;
	dec_prof_free(s->prof);
	s->prof = NULL;
}

/*
 * The orderer: segments in trace order, each made to converge with the
 * next, rendered and retired.
 */
static void *orderer(void *arg)
{
	struct work *w = arg;
	struct dec_ctx *c = w->c;
	uint64_t insns = 0;
	size_t i, k;

	for (i = 0, k = 0; i < c->nr_res; i++) {
		struct dec_trace_result *r = &c->res[i];

		dec_render_trace_begin(w->rd, r, i);
		for (size_t s = 0; s < r->nr_segs; s++, k++) {
			struct dec_segment *seg = &r->segs[s];

			wait_done(w, k);
			if (s + 1 < r->nr_segs)
				wait_done(w, k + 1);
			dec_converge(r, s);
			dec_render_segment(w->rd, seg);
			insns += seg->insns;
			retire_segment(w, r, seg);
			if (c->opt.progress)
				c->opt.progress(c->opt.progress_arg, k + 1, w->total, insns);
			if (w->jobs) {
				pthread_mutex_lock(&w->lock);
				w->rendered = k + 1;
				pthread_cond_broadcast(&w->cond);
				pthread_mutex_unlock(&w->lock);
			}
		}
		dec_render_trace_end(w->rd);
	}
	return NULL;
}

/*
 * One decode of every trace; @totals (if not NULL): each trace's
 * instructions and taken branches from a pass before (--last,
 * --last-branches): [2 * i], [2 * i + 1].
 */
static int run_pass(struct dec_ctx *c, const struct dec_outputs *o, const uint64_t *totals,
		    char *msg, size_t len)
{
	struct work w = { .c = c };
	struct dec_render *rd = NULL;
	unsigned int jobs = c->opt.jobs, j = 0;
	bool have_orderer = false;
	pthread_t *th = NULL;
	pthread_attr_t attr;
	size_t i, k, ok = 0;
	unsigned int needs;

	c->nr_res = c->in->nr_traces;
	c->res = dec_xcalloc(c->nr_res, sizeof(*c->res));
	if (c->in->cpuid_0x15_eax && c->in->cpuid_0x15_ebx && c->in->cpuid_0x15_ecx)
		c->tsc_hz = (uint64_t)c->in->cpuid_0x15_ecx * c->in->cpuid_0x15_ebx /
			    c->in->cpuid_0x15_eax;
	for (i = 0; i < c->nr_res; i++) {
		struct dec_trace_result *r = &c->res[i];

		r->trace = &c->in->traces[i];
		if (totals) {
			r->total_insns = totals[2 * i];
			r->total_branches = totals[2 * i + 1];
		}
		dec_trace_load(c, r);
		if (r->first_tsc && (!c->timed || r->first_tsc < c->t0)) {
			c->timed = true;
			c->t0 = r->first_tsc;
		}
		w.total += r->nr_segs;
		if (r->nr_segs)
			ok++;
	}
	w.map_trace = dec_xcalloc(w.total + 1, sizeof(size_t));
	w.map_seg = dec_xcalloc(w.total + 1, sizeof(size_t));
	w.done = dec_xcalloc(w.total + 1, sizeof(bool));
	for (i = 0, k = 0; i < c->nr_res; i++)
		for (size_t s = 0; s < c->res[i].nr_segs; s++, k++) {
			w.map_trace[k] = i;
			w.map_seg[k] = s;
		}
	if (!jobs) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		jobs = n > 0 ? (unsigned int)n : 1;
	}
	if (jobs > w.total)
		jobs = w.total ? (unsigned int)w.total : 1;
	w.window = 4 * (size_t)jobs;
	if (o && o->slice && o->slice->nr_times) {
		uint64_t ns;

		if (!c->timed || (!o->slice->time_tsc && !o->slice->times[0].pct &&
				  !dec_tsc_ns(c, c->t0, &ns))) {
			snprintf(msg, len, "--time: %s", !c->timed ?
				 "the trace has no TSC packets (record with --tsc)" :
				 "the TSC's frequency is unknown (give --cpuid-0x15 EAX/EBX/ECX): "
				 "give the times in TSC ticks (e.g. 1000tsc-2000tsc)");
			free(w.map_trace);
			free(w.map_seg);
			free(w.done);
			return -1;
		}
	}
	if (o)
		rd = dec_render_begin(c, o);
	/*
	 * How the workers decode follows from what the sinks need: no sink
	 * needs the blocks themselves (the summary alone, or --profile,
	 * whose counts the workers make): count them.  The instruction
	 * decoder's "blocks" are single instructions: no gain.
	 */
	needs = dec_render_needs(rd);
	c->count_only = !(needs & DEC_NEED_BLOCKS) && !c->opt.insn_decoder;
	c->profile_only = c->count_only && (needs & DEC_NEED_PROFILE);
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	w.rd = rd;
	w.o = o;
	/*
	 * Segments are decoded on @jobs threads of their own, -J 1 too, and
	 * made to converge and rendered on one more (the orderer), all with
	 * big stacks; if no thread can be made, this one does it all.
	 */
	th = calloc(jobs + 1, sizeof(*th));
	w.iscs = calloc(jobs + 1, sizeof(*w.iscs));
	if (th && w.iscs && !pthread_attr_init(&attr)) {
		pthread_attr_setstacksize(&attr, DEC_STACK);
		w.own_iscache = dec_own_iscaches_fit(c, jobs);
		for (j = 0; j < jobs; j++)
			if (pthread_create(&th[j + 1], &attr, worker, &w))
				break;
		w.jobs = j;
		if (j)
			have_orderer = !pthread_create(&th[0], &attr, orderer, &w);
		pthread_attr_destroy(&attr);
	}
	if (!have_orderer)
		orderer(&w);
	else
		pthread_join(th[0], NULL);
	dec_render_end(rd);
	for (j = 0; j < w.jobs; j++)
		pthread_join(th[j + 1], NULL);
	for (j = 0; j < w.nr_iscs; j++)
		pt_iscache_free(w.iscs[j]);
	free(w.iscs);
	free(th);
	while (w.nr_spare)
		free(w.spare[--w.nr_spare].items);
	pthread_mutex_destroy(&w.lock);
	pthread_cond_destroy(&w.cond);
	free(w.map_trace);
	free(w.map_seg);
	free(w.done);
	if (!ok) {
		snprintf(msg, len, "%s", c->nr_res ? c->res[0].error :
			 "no trace to decode (give --pt FILE or a directory)");
		return -1;
	}
	return 0;
}

/* Free the results of a decode (c->res), leaving the images and symbols. */
/* The results of the last dec_run() (segments, buffers, gap items); dec_close() too. */
void dec_free_results(struct dec_ctx *c)
{
	size_t i, k;

	for (i = 0; i < c->nr_res; i++) {
		for (k = 0; k < c->res[i].nr_segs; k++) {
			free(c->res[i].segs[k].items);
			free(c->res[i].segs[k].ck);
			dec_live_free(c->res[i].segs[k].live);
			dec_prof_free(c->res[i].segs[k].prof);
		}
		free(c->res[i].segs);
		free(c->res[i].buf);
		free(c->res[i].gap_items);
		dec_live_free(c->res[i].live);
		dec_live_free(c->res[i].anchor);
	}
	free(c->res);
	c->res = NULL;
	c->nr_res = 0;
}

/*
 * --time percentages: @sl's ranges resolved against the decode's time
 * span, [0, @span] in @sl->time_tsc's unit, as perf's set_percent_time()
 * does (tools/perf/util/time-utils.c): each end rounded to the nearest
 * unit, the end one less when above the start and not the span's end
 * (so that a%/1 and a%/2 do not share a point).  Into @out.
 */
static void resolve_pct(const struct dec_slice *sl, uint64_t span, struct dec_time_range *out)
{
	for (size_t i = 0; i < sl->nr_times; i++) {
		const struct dec_time_range *r = &sl->times[i];
		unsigned __int128 a = (unsigned __int128)span * r->from + DEC_PCT_100 / 2,
				  b = (unsigned __int128)span * r->to + DEC_PCT_100 / 2;

		out[i] = *r;
		if (!r->pct)
			continue;
		out[i].pct = false;
		out[i].have_from = out[i].have_to = true;
		out[i].from = (uint64_t)(a / DEC_PCT_100);
		out[i].to = (uint64_t)(b / DEC_PCT_100);
		if (out[i].to > out[i].from && out[i].to != span)
			out[i].to--;
	}
}

int dec_run(struct dec_ctx *c, const struct dec_outputs *o, char *msg, size_t len)
{
	uint64_t *totals, span = 0;
	bool pct = o && o->slice && o->slice->nr_times && o->slice->times[0].pct;
	struct dec_time_range *times = NULL;
	struct dec_outputs o2;
	struct dec_slice sl2;
	size_t i;
	int ret;

	if (!o || !o->slice || (!o->slice->last && !o->slice->last_branches && !pct))
		return run_pass(c, o, NULL, msg, len);
	/*
	 * --last N: count each trace's instructions first (the summary's
	 * decode, no outputs); --last-branches N: its taken branches too
	 * (a slice of everything, so that the stream walks the blocks);
	 * --time percentages: the newest time of each trace (the same).
	 */
	{
		void (*progress)(void *, size_t, size_t, uint64_t) = c->opt.progress;
		/* everything (no trace has that many branches), its branches counted */
		struct dec_slice all = { .last_branches = UINT64_MAX };
		struct dec_outputs count = { .slice = &all };

		c->opt.progress = NULL;
		ret = run_pass(c, o->slice->last_branches || pct ? &count : NULL, NULL, msg, len);
		c->opt.progress = progress;
	}
	if (ret)
		return ret;
	if (pct) {
		uint64_t ns, last = 0;

		/* in ns where the TSC converts, else in TSC ticks */
		sl2 = *o->slice;
		sl2.time_tsc = !dec_tsc_ns(c, c->t0, &ns);
		for (i = 0; i < c->nr_res; i++)
			if (c->res[i].last_tsc > last)
				last = c->res[i].last_tsc;
		span = dec_slice_time(c, sl2.time_tsc, last);
		times = dec_xcalloc(sl2.nr_times, sizeof(*times));
		resolve_pct(o->slice, span, times);
		sl2.times = times;
		o2 = *o;
		o2.slice = &sl2;
		o = &o2;
	}
	totals = dec_xcalloc(2 * c->nr_res + 1, sizeof(*totals));
	for (i = 0; i < c->nr_res; i++) {
		totals[2 * i] = c->res[i].insns;
		totals[2 * i + 1] = c->res[i].branches;
	}
	dec_free_results(c);
	c->timed = false;
	c->t0 = 0;
	ret = run_pass(c, o, totals, msg, len);
	free(totals);
	free(times);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: stepping libipt decoders over a trace, and the
 * convergence that makes a split (parallel) decode equal a serial one.
 *
 * A serial decode is one libipt decoder run over the whole trace: synced
 * at the first PSB, resynced (pt_*_sync_forward) after each error, until
 * the end of the trace (ptxed's loop).  A split decode runs one decoder
 * per segment, each synced at its segment's PSB and run over the whole
 * trace buffer (so errata checks and the end of the trace are what a
 * serial decoder sees).  A fresh decoder does not know what a serial one
 * carries across a PSB (tracing on or off, the exec mode, compressed
 * returns, an overflow), so its first steps may differ.  Therefore:
 *
 *  - every decoder records a checkpoint after each of its first
 *    DEC_CK_MAX steps: the trace offset and a hash of its observable
 *    state (offset, status, exec mode, time, image, the last block and the
 *    events of the step);
 *  - a worker runs its decoder until it has read past its segment's end;
 *  - the renderer, taking segments in order, runs the decoder whose
 *    output it uses (the "live" one) on, step by step, until its
 *    checkpoint equals one of the next segment's: from there both
 *    decoders make the same steps, so the next segment's output before
 *    that checkpoint is dropped and the live decoder hands over.  When
 *    no checkpoint matches, the live decoder decodes the next segment
 *    itself (its worker's output is dropped) and tries the one after.
 *
 * -J changes which thread runs a step, never which steps are kept.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "internal.h"
#include "step.h"

/* ---- hashing of decoder state ------------------------------------------------ */

#define H0 1469598103934665603ULL

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 1099511628211ULL;
}

static uint64_t item_hash(uint64_t h, const struct dec_item *it)
{
	h = mix(h, it->kind);
	h = mix(h, it->ip);
	h = mix(h, it->end_ip);
	h = mix(h, it->off);
	h = mix(h, it->tsc);
	h = mix(h, (uint64_t)(uint32_t)it->code);
	h = mix(h, it->ninsn);
	h = mix(h, it->gap);
	return mix(h, it->mode);
}

static uint64_t su_fold(uint64_t h, uint64_t v)
{
	return mix(h, v) | 1;	/* odd: never su_since()'s 0 or 2 */
}

/* ---- one decoder of either kind ------------------------------------------------ */

struct anydec {
	bool insn;
	struct pt_block_decoder *blk;
	struct pt_insn_decoder *ins;
};

static uint64_t ad_offset(struct anydec *d)
{
	uint64_t off = 0;

	if (d->insn)
		pt_insn_get_offset(d->ins, &off);
	else
		pt_blk_get_offset(d->blk, &off);
	return off;
}

static uint64_t ad_sync_offset(struct anydec *d)
{
	uint64_t off = 0;

	if (d->insn)
		pt_insn_get_sync_offset(d->ins, &off);
	else
		pt_blk_get_sync_offset(d->blk, &off);
	return off;
}

static uint64_t ad_time(struct anydec *d)
{
	uint64_t tsc = 0;
	uint32_t lm, lc;

	if ((d->insn ? pt_insn_time(d->ins, &tsc, &lm, &lc) : pt_blk_time(d->blk, &tsc, &lm, &lc)) < 0)
		return 0;
	return tsc;
}

static int ad_event(struct anydec *d, struct pt_event *ev)
{
	return d->insn ? pt_insn_event(d->ins, ev, sizeof(*ev)) : pt_blk_event(d->blk, ev, sizeof(*ev));
}

static struct pt_image *ad_image(struct anydec *d)
{
	return d->insn ? pt_insn_get_image(d->ins) : pt_blk_get_image(d->blk);
}

/* ---- a live decoder ------------------------------------------------------------- */

struct dec_live {
	struct dec_ctx *c;
	struct dec_trace_result *r;
	struct anydec d;
	struct pt_image_section_cache *isc;
	int st;			/* libipt's status for the next step */
	bool done;		/* the end of the trace */
	uint64_t last_fail;	/* where the last failed sync left the decoder */
	uint64_t moff, mins;	/* GAP_LOOP: the offset when it last moved, insns since */
	/*
	 * What the current step made: the hash of its items before
	 * @hash_from and of its events; its items from @hash_from on are
	 * hashed only when the step's hash is read (hash_items()).
	 */
	uint64_t step_hash;
	size_t hash_from;
	/*
	 * The step's hash is read: a checkpoint (@fine) or compared with one
	 * because the step ends past @ck_bound (dec_converge()).  Else only
	 * its offset is kept, and its items are not hashed.
	 */
	bool hashing;
	uint64_t ck_bound;
	/*
	 * The step's blocks whose items are not kept (counted for the
	 * summary or --profile): copied here, after the step's kept items,
	 * and hashed only if the step's hash is read.  Hashing every block
	 * at once was a quarter of --profile's time.
	 */
	struct dec_item *pend;
	size_t npend;
	/*
	 * --profile counted by the workers (c->profile_only): the next block
	 * joins a run with the last (which ended in no branch, and no item
	 * came after it), or what came before is not known (a decoder synced
	 * at a segment's PSB, until its first block).  Such blocks are kept
	 * as items (add_block()).
	 */
	bool join_next, join_unknown;
	bool hash_ok;		/* @hash is the newest step's */
	uint8_t mode;		/* of the newest block */
	uint8_t exec_mode;	/* the decoder's, from its exec-mode events (0: none since sync) */
	bool fresh;		/* synced at a segment's PSB, not resynced since: its return stack is not the serial decoder's */
	size_t ret_gap;		/* fresh: its first "compressed return" error's DI_GAP (SIZE_MAX: none) */
	uint64_t insns;		/* instructions it made, in all */
	uint64_t resyncs;	/* resync() calls: after an error or endless code, even at the end */
	uint64_t base;		/* ->insns when its output came into use (dec_converge()) */
	uint64_t off, hash;	/* after the newest step */
	/*
	 * The PSB+ status updates it delivered (events with
	 * ->status_update): how many, their fold (su_fold()), and for the
	 * newest DEC_SU_RING the offset after each and its hash.
	 */
	uint64_t nr_su, su;
	uint64_t su_off[DEC_SU_RING], su_hash[DEC_SU_RING];
	/* images picked by time (switch_process) */
	bool switching;
	const struct dec_sched *sch;
	long pid;
	long cur_pid;		/* whose image the decoder has (-1: none yet) */
	long cur_tid;		/* and the thread running it, per the switch records (0: unknown) */
	uint64_t cur_key;
	uint64_t cur_time;	/* perf time its mappings are of (0: the end) */
	struct {
		uint64_t key;
		struct pt_image *img;
	} pimg[16];
	size_t npimg;
	/* the block libipt's pt_blk_next() writes */
	struct pt_block blk;
	/* r->uncached: the images code is read from (indices into c->in->images) */
	size_t *act, nact;
};

/* r->uncached: libipt reads code through this, from the images in use. */
static int read_code(uint8_t *buffer, size_t size, const struct pt_asid *asid, uint64_t ip,
		     void *arg)
{
	struct dec_live *L = arg;
	size_t i, n;

	(void)asid;
	/* the last one added wins, as with libipt's sections */
	for (i = L->nact; i-- > 0;) {
		const uint8_t *p = dec_code_at(L->c, L->c->isids[L->act[i]], ip, &n);

		if (p) {
			n = n < size ? n : size;
			memcpy(buffer, p, n);
			return (int)n;
		}
	}
	return -pte_nomap;
}

/* r->uncached: the section a block at @ip is in (libipt says 0: the callback's). */
static int32_t code_isid(const struct dec_live *L, uint64_t ip)
{
	size_t i, n;

	for (i = L->nact; i-- > 0;)
		if (dec_code_at(L->c, L->c->isids[L->act[i]], ip, &n))
			return L->c->isids[L->act[i]];
	return 0;
}

/*
 * A PSB+ status update @ev delivered: what it says (its kind, and its
 * mode and IP for MODE.EXEC), folded into L->su, and kept with the
 * offset after it.
 */
static void su_add(struct dec_live *L, const struct pt_event *ev)
{
	uint64_t v = mix(mix(H0, ev->type), ev->ip_suppressed);

	if (ev->type == ptev_exec_mode)
		v = mix(mix(v, ev->variant.exec_mode.mode), ev->variant.exec_mode.ip);
	L->su = su_fold(L->su ? L->su : H0, v);
	L->su_off[L->nr_su % DEC_SU_RING] = ad_offset(&L->d);
	L->su_hash[L->nr_su++ % DEC_SU_RING] = v;
}

static struct dec_item *push(struct dec_segment *s, enum dec_item_kind k)
{
	struct dec_item *it;

	if (s->nr == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->items = dec_xrealloc(s->items, s->cap * sizeof(*s->items));
	}
	it = &s->items[s->nr++];
	memset(it, 0, sizeof(*it));
	it->kind = (uint8_t)k;
	return it;
}

/*
 * Hash the step's items not yet hashed into the step, in the order made:
 * its kept items, then its pending blocks (made after them: an item kept
 * after a pending block hashes those first, push_item()).
 */
static void hash_items(struct dec_live *L, const struct dec_segment *s)
{
	size_t i;

	for (; L->hash_from < s->nr; L->hash_from++)
		L->step_hash = item_hash(L->step_hash, &s->items[L->hash_from]);
	for (i = 0; i < L->npend; i++)
		L->step_hash = item_hash(L->step_hash, &L->pend[i]);
	L->npend = 0;
}

/*
 * Where a block not kept as an item is made: the next pending one, or
 * @tmp, hashed at once, if there is no memory for them (a step makes at
 * most DEC_PEND blocks: DEC_STEP_INSNS instructions).
 */
static struct dec_item *pend_block(struct dec_live *L, const struct dec_segment *s,
				   struct dec_item *tmp)
{
	if (!L->pend) {
		L->pend = malloc(DEC_PEND * sizeof(*L->pend));
		if (!L->pend)
			return tmp;
	}
	if (L->npend == DEC_PEND)
		hash_items(L, s);
	return &L->pend[L->npend++];
}

/*
 * push() for a live decoder: after its pending blocks (hashed now, so
 * that the step's hash is of its items in the order made); an item that
 * is no block ends the run of blocks the renderer joins.
 */
static struct dec_item *push_item(struct dec_live *L, struct dec_segment *s, enum dec_item_kind k)
{
	if (L->npend)
		hash_items(L, s);
	if (k != DI_BLOCK)
		L->join_next = false;
	return push(s, k);
}

/* Mix @v into the step's hash, after its items so far. */
static void step_mix(struct dec_live *L, const struct dec_segment *s, uint64_t v)
{
	hash_items(L, s);
	L->step_hash = mix(L->step_hash, v);
}

/* The step starts (or starts afresh after a sync, at @h) with segment @s's next item. */
static void step_start(struct dec_live *L, const struct dec_segment *s, uint64_t h)
{
	L->step_hash = h;
	L->hash_from = s->nr;
	L->npend = 0;
}

static struct dec_item *gap(struct dec_live *L, struct dec_segment *s, enum dec_gap g, int code,
			    uint64_t off, uint64_t ip, uint64_t tsc)
{
	struct dec_item *it = push_item(L, s, DI_GAP);

	if (g == GAP_DECODE && code == -pte_nomap)
		g = GAP_NOMAP;
	if (L->fresh && (code == -pte_retstack_empty || code == -pte_bad_retcomp)) {
		if (s->ret_suspect == SIZE_MAX)
			s->ret_suspect = s->nr - 1;
		/* only a pop of its empty stack depends on the stack ("bad": a not-taken bit) */
		if (code == -pte_retstack_empty && L->ret_gap == SIZE_MAX)
			L->ret_gap = s->nr - 1;
	}
	it->gap = (uint8_t)g;
	it->code = code;
	it->off = off;
	it->ip = ip;
	it->tsc = tsc;
	return it;
}

/* The process that runs on @sc's CPU at perf time @ns, and *@tid its thread (0: none known). */
static long sched_pid(const struct dec_sched *sc, uint64_t ns, long *tid)
{
	size_t lo = 0, hi = sc->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sc->time[mid] <= ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	*tid = lo ? sc->tid[lo - 1] : 0;
	return lo ? sc->pid[lo - 1] : 0;
}

/* Is image @m of @c in the code of process @pid at perf time @ns (0: at the end)? */
static bool image_in(const struct dec_ctx *c, size_t m, long pid, uint64_t ns)
{
	const struct dec_image *im = &c->in->images[m];

	if (c->isids[m] <= 0 || (im->pid && im->pid != pid))
		return false;
	return ns ? im->from <= ns && ns < im->until : im->until == UINT64_MAX;
}

/*
 * Per-CPU switching and mappings in time order: give the decoder the image
 * of the process that runs at @tsc as it was mapped then, made on first
 * use by this decoder.  A change of process, or of the thread that runs
 * (per CPU: the switch records'), is a DI_PROCESS item.
 */
static void switch_process(struct dec_live *L, struct dec_segment *s, uint64_t tsc)
{
	struct dec_ctx *c = L->c;
	struct pt_image *img = NULL;
	uint64_t ns = 0, key;
	struct dec_item *it;
	long pid = L->pid, tid = 0;
	size_t i, m;

	if (!L->switching)
		return;
	if (!tsc || !dec_tsc_ns(c, tsc, &ns))
		ns = 0;
	if (L->sch)
		pid = ns ? sched_pid(L->sch, ns, &tid) : 0;
	key = H0 ^ (uint64_t)pid;
	for (m = 0; m < c->in->nr_images; m++)
		if (image_in(c, m, pid, c->in->timed_maps ? ns : 0))
			key = (key ^ m) * 1099511628211ULL;
	if (L->cur_pid >= 0 && key == L->cur_key) {
		if (tid == L->cur_tid)
			return;
		goto thread;	/* another thread of the same code: no new image */
	}
	if (L->r->uncached) {
		L->nact = 0;
		for (m = 0; m < c->in->nr_images; m++)
			if (image_in(c, m, pid, c->in->timed_maps ? ns : 0))
				L->act[L->nact++] = m;
		goto switched;
	}
	for (i = 0; i < L->npimg && L->pimg[i].key != key; i++)
		;
	if (i == L->npimg) {
		img = pt_image_alloc(NULL);
		if (!img)
			return;
		for (m = 0; m < c->in->nr_images; m++)
			if (image_in(c, m, pid, c->in->timed_maps ? ns : 0))
				pt_image_add_cached(img, L->isc, c->isids[m], NULL);
		if (L->npimg == sizeof(L->pimg) / sizeof(L->pimg[0])) {
			i = L->pimg[0].img == ad_image(&L->d) ? 1 : 0;
			pt_image_free(L->pimg[i].img);
		} else {
			i = L->npimg++;
		}
		L->pimg[i].key = key;
		L->pimg[i].img = img;
	}
	if (L->d.insn)
		pt_insn_set_image(L->d.ins, L->pimg[i].img);
	else
		pt_blk_set_image(L->d.blk, L->pimg[i].img);
switched:
	L->cur_key = key;
	L->cur_pid = pid;
	L->cur_time = c->in->timed_maps ? ns : 0;
thread:
	L->cur_tid = tid;
	it = push_item(L, s, DI_PROCESS);
	it->code = (int32_t)pid;
	it->end_ip = (uint64_t)tid;
	it->tsc = tsc;
	it->off = ad_offset(&L->d);
}

struct dec_live *dec_live_new(struct dec_ctx *c, struct dec_trace_result *r, uint64_t end,
			      struct pt_image_section_cache *isc)
{
	struct pt_config cfg = c->cfg;
	struct dec_live *L = calloc(1, sizeof(*L));
	struct pt_image *image;
	size_t i;

	if (!L)
		return NULL;
	L->c = c;
	L->r = r;
	L->isc = isc;
	L->d.insn = c->opt.insn_decoder;
	/*
	 * The whole trace (errata look-ahead and the end are a serial
	 * decoder's), up to the next gap of a streamed one: past it the
	 * bytes do not continue these.
	 */
	cfg.begin = r->buf;
	cfg.end = r->buf + (end < r->len ? end : r->len);
	if (L->d.insn)
		L->d.ins = pt_insn_alloc_decoder(&cfg);
	else
		L->d.blk = pt_blk_alloc_decoder(&cfg);
	if (!L->d.ins && !L->d.blk) {
		free(L);
		return NULL;
	}
	image = ad_image(&L->d);
	L->cur_pid = -1;
	for (i = 0; r->trace->cpu >= 0 && i < c->in->nr_sched; i++)
		if (c->in->sched[i].cpu == r->trace->cpu && c->in->have_time_conv)
			L->sch = &c->in->sched[i];
	L->pid = r->trace->pid;
	L->switching = L->sch || (c->in->timed_maps && c->in->have_time_conv && L->pid > 0);
	if (r->uncached) {
		L->act = calloc(c->in->nr_images + 1, sizeof(*L->act));
		if (!L->act || pt_image_set_callback(image, read_code, L) < 0) {
			dec_live_free(L);
			return NULL;
		}
	}
	for (i = 0; !L->switching && i < c->in->nr_images; i++)
		if (c->isids[i] > 0 && c->in->images[i].until == UINT64_MAX &&
		    (!c->in->images[i].pid || !r->trace->pid || c->in->images[i].pid == r->trace->pid)) {
			if (r->uncached)
				L->act[L->nact++] = i;
			else
				pt_image_add_cached(image, isc, c->isids[i], NULL);
		}
	L->last_fail = UINT64_MAX;
	L->moff = UINT64_MAX;
	L->ret_gap = SIZE_MAX;
	return L;
}

void dec_live_free(struct dec_live *L)
{
	size_t i;

	if (!L)
		return;
	if (L->d.insn)
		pt_insn_free_decoder(L->d.ins);
	else
		pt_blk_free_decoder(L->d.blk);
	for (i = 0; i < L->npimg; i++)
		pt_image_free(L->pimg[i].img);
	free(L->act);
	free(L->pend);
	free(L);
}

/*
 * The state after a step: its offset (@off if known, UINT64_MAX: ask the
 * decoder), and the checkpoint hash when it is read (L->hashing, or the
 * step ends past L->ck_bound).
 */
static void end_step(struct dec_live *L, const struct dec_segment *s, uint64_t off)
{
	uint64_t h;

	L->off = off != UINT64_MAX ? off : ad_offset(&L->d);
	L->hash_ok = L->hashing || L->off > L->ck_bound;
	if (!L->hash_ok) {
		L->npend = 0;	/* never read */
		return;
	}
	hash_items(L, s);
	h = L->step_hash;
	h = mix(h, L->off);
	h = mix(h, (uint64_t)(uint32_t)L->st);
	h = mix(h, L->done);
	h = mix(h, L->mode);
	h = mix(h, L->exec_mode);
	h = mix(h, L->mins);
	h = mix(h, L->join_next);
	h = mix(h, L->cur_key);
	h = mix(h, (uint64_t)L->cur_tid);	/* two threads of one process: one image, not one state */
	h = mix(h, ad_time(&L->d));
	L->hash = h;
}

/*
 * Sync forward after an error (@gi: its DI_GAP item, or SIZE_MAX), and
 * again after each failed sync (each a DI_GAP of its own), until synced or
 * at the end: one step, so that no item is left to complete later.  The
 * state after a sync is the same whichever decoder made it: the step hash
 * starts afresh.
 */
static void resync(struct dec_live *L, struct dec_segment *s, size_t gi)
{
	struct anydec *d = &L->d;

	L->resyncs++;
	for (;;) {
		uint64_t erroff = gi != SIZE_MAX ? s->items[gi].off : ad_offset(d), next;
		int st = d->insn ? pt_insn_sync_forward(d->ins) : pt_blk_sync_forward(d->blk);

		if (st < 0 && st != -pte_eos) {
			/* a broken PSB+: no progress guaranteed; count it, stop here */
			if (ad_offset(d) == L->last_fail)
				st = -pte_eos;
			L->last_fail = ad_offset(d);
		}
		next = st == -pte_eos ? L->r->len : st < 0 ? ad_offset(d) : ad_sync_offset(d);
		if (gi != SIZE_MAX)
			s->items[gi].skipped = next > erroff ? next - erroff : 0;
		L->st = st;
		if (st == -pte_eos) {
			L->done = true;
			return;
		}
		if (st >= 0)
			break;
		gi = s->nr;
		gap(L, s, GAP_DECODE, st, ad_offset(d), 0, 0);
	}
	L->fresh = false;	/* a sync resets all of libipt's state, the return stack too */
	step_start(L, s, mix(H0, ad_sync_offset(d)));
	L->moff = UINT64_MAX;
	L->mins = 0;
	L->mode = 0;
	L->exec_mode = 0;
	switch_process(L, s, ad_time(d));
}

/*
 * A block of @ninsn instructions decoded: an item (@items), or a count.
 * Counting for --profile, a block that is not a run of its own (one the
 * renderer joins with the last or the next: see join_next) is kept as an
 * item all the same, so that its run is counted whole (sink_profile.c).
 */
static void add_block(struct dec_live *L, struct dec_segment *s, bool items, uint64_t ip,
		      uint64_t end_ip, uint32_t ninsn, int32_t isid, uint8_t iclass,
		      uint8_t last_size, uint8_t mode)
{
	struct dec_ctx *c = L->c;
	bool keep = items || (c->profile_only &&
			      (L->join_next || L->join_unknown || iclass == ptic_other));
	struct dec_item tmp, *it = keep ? push_item(L, s, DI_BLOCK) : pend_block(L, s, &tmp);

	if (!keep)
		memset(it, 0, sizeof(*it));
	it->kind = DI_BLOCK;
	it->ip = ip;
	it->end_ip = end_ip;
	it->ninsn = ninsn;
	it->iclass = iclass;
	it->isid = L->r->uncached && !isid ? code_isid(L, ip) : isid;
	it->last_size = last_size;
	it->mode = mode;
	/*
	 * A block's time is shown only by outputs that keep blocks; not by
	 * --profile (profile_only: the blocks it keeps are for their runs).
	 * The decoder's time is in the step's hash all the same (end_step()).
	 */
	it->tsc = items && !c->profile_only ? ad_time(&L->d) : 0;
	s->insns += ninsn;
	L->insns += ninsn;
	L->mode = mode;
	L->join_next = iclass == ptic_other;
	L->join_unknown = false;
	if (!keep && c->profile_only)
		dec_prof_block(s->prof, c, L->switching ? (L->cur_pid < 0 ? 0 : L->cur_pid) :
			       L->pid, L->switching ? L->cur_time : 0, it);
	if (it == &tmp) {
		/* no room to keep it pending: hashed now */
		hash_items(L, s);
		L->step_hash = item_hash(L->step_hash, it);
	}
}

/*
 * GAP_LOOP: the offset has not moved for DEC_MAX_STUCK instructions.
 * *@offp: the decoder's offset now.
 */
static bool stuck(struct dec_live *L, uint32_t ninsn, uint64_t *offp)
{
	uint64_t off = ad_offset(&L->d);

	*offp = off;
	if (off != L->moff) {
		L->moff = off;
		L->mins = 0;
	}
	L->mins += ninsn;
	return L->mins > DEC_MAX_STUCK;
}

/*
 * One step: events and one block (or instruction), an error and the sync
 * after it, or a sync.  In a @fine step blocks are items (or, counting
 * only, one block is counted); otherwise the block decoder makes blocks
 * (items, or counted) until an event, an error or DEC_STEP_INSNS
 * instructions: a coarse step's hash is read only when it ends past
 * L->ck_bound, and it holds all of its items.
 */
/*
 * The count loop of live_step() between checkpoints: blocks until an
 * error, an event, the end, endless code (stuck() by hand) or
 * DEC_STEP_INSNS instructions. A function of its own so that its state stays in
 * registers (inside live_step() the compiler kept it on the stack): it
 * runs once per block of the trace, and every instruction of it shows in
 * the decode's time. The last block's end and mode are read once, after
 * the loop; a block of no instructions (which ends it) leaves them as
 * they were.
 */
struct count_run {
	uint64_t moff, mins;	/* in and out: the endless-code rule's state */
	uint64_t off;		/* out: the offset after the last block, or UINT64_MAX */
	uint64_t err_ip;	/* out: the last block's end, or the empty block's ip */
	uint32_t n;		/* out: instructions counted */
	uint8_t mode;		/* in and out: the last block's mode */
	bool loop;		/* out: endless code */
};

static __attribute__((noinline)) int count_blocks(struct pt_block_decoder *blk,
						  struct pt_block *b, struct count_run *r)
{
	uint64_t moff = r->moff, mins = r->mins, off = UINT64_MAX;
	uint32_t n = 0, k;
	uint8_t mode = r->mode;
	int st;

	for (;;) {
		st = pt_blk_next(blk, b, sizeof(*b));
		k = b->ninsn;
		if (!k)
			break;
		n += k;
		mode = (uint8_t)b->mode;
		if (st < 0)
			break;
		off = 0;	/* as ad_offset() */
		pt_blk_get_offset(blk, &off);
		if (off != moff) {
			moff = off;
			mins = 0;
		}
		mins += k;
		if (mins > DEC_MAX_STUCK) {
			r->loop = true;
			break;
		}
		if ((st & (pts_event_pending | pts_eos)) || n >= DEC_STEP_INSNS)
			break;
	}
	if (!k || st < 0)
		off = UINT64_MAX;
	r->err_ip = k ? b->end_ip : b->ip;
	r->off = off;
	r->n = n;
	r->mode = mode;
	r->moff = moff;
	r->mins = mins;
	return st;
}

static void live_step(struct dec_live *L, struct dec_segment *s, bool fine)
{
	struct dec_ctx *c = L->c;
	struct anydec *d = &L->d;
	bool items = !c->count_only || (fine && c->profile_only);
	uint64_t err_ip = 0, off = UINT64_MAX;
	int st = L->st;

	L->hashing = fine;
	step_start(L, s, H0);
	while (st & pts_event_pending) {
		struct pt_event ev;
		struct dec_item *it = NULL;

		st = ad_event(d, &ev);
		if (st < 0)
			break;
		if (ev.status_update)
			su_add(L, &ev);
		switch (ev.type) {
		case ptev_enabled:
			switch_process(L, s, ev.has_tsc ? ev.tsc : ad_time(d));
			it = push_item(L, s, DI_ENABLED);
			it->ip = ev.variant.enabled.ip;
			it->tsc = ev.has_tsc ? ev.tsc : 0;
			break;
		case ptev_disabled:
			/* synchronous: @ip the branch's target outside the traced range, if given */
			it = push_item(L, s, DI_DISABLED);
			it->code = DEC_DIS_SYNC;
			it->ip = ev.ip_suppressed ? 0 : ev.variant.disabled.ip;
			it->tsc = ev.has_tsc ? ev.tsc : 0;
			break;
		case ptev_async_disabled:
			/* an interrupt or a fault (FUP, TIP.PGD): @ip where it struck */
			it = push_item(L, s, DI_DISABLED);
			it->code = DEC_DIS_ASYNC;
			it->ip = ev.variant.async_disabled.at;
			it->tsc = ev.has_tsc ? ev.tsc : 0;
			break;
		case ptev_async_branch:
			it = push_item(L, s, DI_ASYNC);
			it->ip = ev.variant.async_branch.from;
			it->end_ip = ev.variant.async_branch.to;
			break;
		case ptev_overflow:
			it = gap(L, s, GAP_OVERFLOW, 0, 0, ev.ip_suppressed ? 0 : ev.variant.overflow.ip,
				 ev.has_tsc ? ev.tsc : 0);
			break;
		case ptev_exec_mode:
			/*
			 * The decoder's mode, which a block may not show:
			 * libipt 2.0.5's block cache reports the mode of
			 * whichever decoder filled it.
			 */
			L->exec_mode = (uint8_t)ev.variant.exec_mode.mode;
			step_mix(L, s, ev.variant.exec_mode.mode);
			break;
		default:
			step_mix(L, s, ev.type);
			break;
		}
		if (it)
			it->off = ad_offset(d);
	}
	if (st == -pte_eos) {
		L->done = true;
		L->st = st;
		end_step(L, s, UINT64_MAX);
		return;
	}
	if (st < 0) {
		size_t gi = s->nr;

		gap(L, s, GAP_DECODE, st, ad_offset(d), 0, ad_time(d));
		resync(L, s, gi);
		end_step(L, s, UINT64_MAX);
		return;
	}
	if (st & pts_eos) {
		/* libipt has no more trace: stop (ptxed: "[end of trace]") */
		if (!(st & pts_ip_suppressed))
			push_item(L, s, DI_EOS);
		L->done = true;
		L->st = st;
		end_step(L, s, UINT64_MAX);
		return;
	}
	if (d->insn) {
		struct pt_insn insn;

		memset(&insn, 0, sizeof(insn));
		st = pt_insn_next(d->ins, &insn, sizeof(insn));
		if (st >= 0 || (insn.iclass != ptic_error && insn.size)) {
			add_block(L, s, items, insn.ip, insn.ip, 1, insn.isid, (uint8_t)insn.iclass,
				  insn.size, (uint8_t)insn.mode);
			if (st >= 0 && stuck(L, 1, &off)) {
				err_ip = insn.ip;
				goto loop;
			}
		}
		err_ip = insn.ip;
	} else if (!fine && !items && !c->profile_only) {
		/*
		 * Counting only, between checkpoints: as lean as a bare libipt
		 * loop (plus the endless-code rule); the step's hash is its
		 * count and last block, never compared with a checkpoint.
		 */
		struct count_run r = {
			.moff = L->moff, .mins = L->mins, .mode = L->mode,
		};

		st = count_blocks(d->blk, &L->blk, &r);
		off = r.off;
		err_ip = r.err_ip;
		s->insns += r.n;
		L->insns += r.n;
		L->mode = r.mode;
		L->moff = r.moff;
		L->mins = r.mins;
		step_mix(L, s, r.n);
		step_mix(L, s, err_ip);
		if (r.loop)
			goto loop;
	} else {
		uint32_t n = 0;

		do {
			struct pt_block *b = &L->blk;

			st = pt_blk_next(d->blk, b, sizeof(*b));
			off = UINT64_MAX;
			err_ip = b->ninsn ? b->end_ip : b->ip;
			if (!b->ninsn)
				break;
			add_block(L, s, items, b->ip, b->end_ip, b->ninsn, b->isid,
				  (uint8_t)b->iclass, b->truncated ? b->size : 0, (uint8_t)b->mode);
			n += b->ninsn;
			if (st >= 0 && stuck(L, b->ninsn, &off))
				goto loop;
		} while (!fine && st >= 0 && !(st & (pts_event_pending | pts_eos)) &&
			 n < DEC_STEP_INSNS);
	}
	if (st == -pte_eos) {
		L->done = true;
		L->st = st;
	} else if (st < 0) {
		size_t gi = s->nr;

		gap(L, s, GAP_DECODE, st, ad_offset(d), err_ip, ad_time(d));
		resync(L, s, gi);
		off = UINT64_MAX;
	} else {
		L->st = st;
	}
	end_step(L, s, off);
	return;
loop:
	{
		/* endless code without trace: give up until the next PSB */
		size_t gi = s->nr;

		gap(L, s, GAP_LOOP, 0, ad_offset(d), err_ip, ad_time(d));
		resync(L, s, gi);
		end_step(L, s, UINT64_MAX);
	}
}

static void add_ck(struct dec_segment *s, const struct dec_live *L)
{
	uint64_t off = L->off, hash = L->hash;
	struct dec_ck *k;

	if (s->nr_ck == s->cap_ck) {
		s->cap_ck = s->cap_ck ? s->cap_ck * 2 : 64;
		s->ck = dec_xrealloc(s->ck, s->cap_ck * sizeof(*s->ck));
	}
	k = &s->ck[s->nr_ck++];
	k->off = off;
	k->hash = hash;
	k->nr = s->nr;
	k->insns = s->insns;
	k->su = L->su;
}

/*
 * The fold of @L's PSB+ status updates delivered with the trace offset
 * past @off (offsets only grow), oldest first, as su_add() folds them
 * all into L->su: 0 if none, 2 (no fold) if it keeps too few to tell.
 */
static uint64_t su_since(const struct dec_live *L, uint64_t off)
{
	uint64_t k, h = H0;

	for (k = 0; k < L->nr_su; k++) {
		if (L->su_off[(L->nr_su - 1 - k) % DEC_SU_RING] <= off)
			break;
		if (k + 1 == DEC_SU_RING && L->nr_su > DEC_SU_RING)
			return 2;
	}
	if (!k)
		return 0;
	for (; k > 0; k--)
		h = su_fold(h, L->su_hash[(L->nr_su - k) % DEC_SU_RING]);
	return h;
}

/* Segment @s's tip_end: past its PSB's first TIP-class packet. */
static uint64_t first_tip_end(const struct dec_ctx *c, const struct dec_trace_result *r,
			      const struct dec_segment *s)
{
	struct pt_config cfg = c->cfg;
	struct pt_packet_decoder *pd;
	uint64_t end = UINT64_MAX;
	struct pt_packet pkt;

	cfg.begin = r->buf;
	cfg.end = r->buf + r->len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return end;
	if (pt_pkt_sync_set(pd, s->begin) >= 0)
		while (pt_pkt_next(pd, &pkt, sizeof(pkt)) >= 0)
			if (pkt.type == ppt_tip || pkt.type == ppt_tip_pge || pkt.type == ppt_tip_pgd) {
				if (pt_pkt_get_offset(pd, &end) < 0)
					end = UINT64_MAX;
				break;
			}
	pt_pkt_free_decoder(pd);
	return end;
}

void dec_segment_run(struct dec_ctx *c, struct dec_trace_result *r, struct dec_segment *s,
		     bool first, struct pt_image_section_cache *isc)
{
	struct dec_live *L = dec_live_new(c, r, s->piece_end, isc);
	uint64_t win, last_off = 0;
	size_t after_tip = 0, tip_moves = 0;
	int st;

	if (s->sgap != SIZE_MAX) {
		/* the unit paused before this: the gap, in its place */
		const struct dec_sgap *g = &r->trace->sgaps[s->sgap];
		struct dec_item *it = push(s, DI_GAP);

		it->gap = GAP_STREAM;
		it->off = g->off;
		it->tsc = g->tsc_start;
		it->sgap_tsc_end = g->tsc_end;
		it->sgap_lost = g->lost;
	}
	if (c->profile_only)
		s->prof = dec_prof_new();
	s->ret_suspect = SIZE_MAX;
	s->tip_end = first ? 0 : first_tip_end(c, r, s);
	s->live = L;
	if (!L) {
		struct dec_item *it = push(s, DI_GAP);

		it->gap = GAP_DECODE;
		it->code = -pte_nomem;
		it->off = s->begin;
		it->skipped = s->end - s->begin;
		return;
	}
	/* a step's hash is read after it ends past the segment (dec_converge()) */
	L->ck_bound = s->end;
	L->hashing = !first;
	step_start(L, s, H0);
	if (first) {
		/* the serial decode: sync forward from the trace's start */
		resync(L, s, SIZE_MAX);
		end_step(L, s, UINT64_MAX);
	} else {
		st = L->d.insn ? pt_insn_sync_set(L->d.ins, s->begin) : pt_blk_sync_set(L->d.blk, s->begin);
		L->st = st;
		L->fresh = true;
		L->join_unknown = true;	/* what came before the PSB */
		if (st >= 0) {
			step_start(L, s, mix(H0, ad_sync_offset(&L->d)));
			switch_process(L, s, ad_time(&L->d));
			end_step(L, s, UINT64_MAX);
			add_ck(s, L);
		} else {
			size_t gi = s->nr;

			gap(L, s, GAP_DECODE, st, s->begin, 0, 0);
			resync(L, s, gi);
			end_step(L, s, UINT64_MAX);
		}
	}
	/*
	 * Checkpoints for the steps a decoder synced at the segment's PSB
	 * is likely to need to converge with the serial one: while it is
	 * before its first TIP-class packet (no match there, tip_end), then
	 * at least DEC_CK_MIN more and on until the offset has moved
	 * DEC_CK_MOVES times after it (a match needs those moves: a long
	 * TNT packet holds the offset for dozens of steps, and without them
	 * a third of the segments of the benchmark trace never matched and
	 * were decoded again by the orderer), and all that start in the
	 * segment's first 1/DEC_CK_PART (at most DEC_CK_MAX in all); the
	 * rest of the segment is stepped coarsely.  The first segment is the serial
	 * decode itself: no decoder converges into it.
	 */
	win = s->begin + (s->end - s->begin) / DEC_CK_PART;
	while (!L->done && L->off <= s->end) {
		bool fine = !first && s->nr_ck < DEC_CK_MAX &&
			    (L->off < s->tip_end || after_tip < DEC_CK_MIN ||
			     tip_moves < DEC_CK_MOVES || L->off < win);

		live_step(L, s, fine);
		if (fine) {
			add_ck(s, L);
			if (L->off >= s->tip_end) {
				tip_moves += after_tip && L->off != last_off;
				after_tip++;
				last_off = L->off;
			}
		}
	}
}

/* Drop all of segment @n's own output (the live decoder decodes its part). */
static void supersede(struct dec_segment *n)
{
	n->skip = n->nr;
	n->insns = 0;
	if (n->prof) {
		/* the live decoder's coarse steps count into it */
		dec_prof_free(n->prof);
		n->prof = dec_prof_new();
	}
	dec_live_free(n->live);
	n->live = NULL;
}

/*
 * The decoder in use @L made a step into segment @s's output.  A decoder
 * synced at a PSB starts with an empty return stack where the serial one
 * may hold calls made before the PSB: the two make the same steps until it
 * pops its empty stack ("compressed return without call",
 * -pte_retstack_empty), where the serial decoder pops one of those calls
 * ("bad compressed return" is a not-taken bit at a return: the same for
 * both).  On a trace that keeps the SDM's rule that only RETs whose
 * CALLs were seen since the last PSB are compressed (SDM vol. 3C
 * 33.2.1.2, "Indirect Transfer COFI") that never happens; on a corrupt or
 * mutated trace it can, any number of segments after the match that put
 * @L in use (ret_suspect only sees the next segment's own decoder's run).
 * So the last decoder in the serial state that handed over to a fresh one
 * is kept, paused, as the anchor (dec_converge()): here it is stepped on,
 * its output dropped, over the instructions the decoders in use made
 * since, up to and including the failed return (which ends a block for
 * both), and goes on in @L's place; the error and the sync after it are
 * dropped.  Unless the anchor fails there too (its stack is empty as
 * well, regress/retstack-anchor-empty.pt): then the serial decoder makes
 * that error, and @L, which made it and synced on as the serial one does,
 * stays.  A resync puts @L in the serial state itself: the anchor is
 * freed.  Returns the decoder in use now.
 */
static struct dec_live *check_ret(struct dec_trace_result *r, struct dec_live *L,
				  struct dec_segment *s)
{
	struct dec_live *A = r->anchor;
	struct dec_segment tmp;
	size_t gi = L->ret_gap;
	uint64_t k, resyncs;

	L->ret_gap = SIZE_MAX;
	if (!A)
		return L;
	if (gi == SIZE_MAX) {
		if (!L->fresh) {
			dec_live_free(A);
			r->anchor = NULL;
		}
		return L;
	}
	r->anchor = NULL;
	k = r->anchor_insns + (L->insns - L->base);
	memset(&tmp, 0, sizeof(tmp));
	tmp.ret_suspect = SIZE_MAX;
	A->ck_bound = UINT64_MAX;
	resyncs = A->resyncs;
	while (!A->done && A->insns - A->base < k && A->resyncs == resyncs) {
		live_step(A, &tmp, true);
		tmp.nr = 0;
	}
	free(tmp.items);
	if (A->resyncs != resyncs) {
		/*
		 * It failed too: at that return (the steps before are the
		 * same for both), an error the serial decoder makes; @L
		 * made it and synced on after it, as the serial one does.
		 */
		dec_live_free(A);
		return L;
	}
	if (A->insns - A->base != k) {
		/* not at a block's end there: cannot take over (not seen) */
		dec_live_free(A);
		return L;
	}
	s->nr = gi;
	A->ck_bound = L->ck_bound;
	A->ret_gap = SIZE_MAX;
	dec_live_free(L);
	r->live = A;
	return A;
}

/*
 * Segment @i of @r is decoded, and so is @i + 1 (if any): run the live
 * decoder (segment @i's own, or the one that decoded the segments before)
 * until it converges with segment @i + 1's decoder, its steps' output
 * going to segment @i.  Then drop segment @i + 1's output before the
 * checkpoint where they met.
 */
void dec_converge(struct dec_trace_result *r, size_t i)
{
	struct dec_segment *s = &r->segs[i], *n;
	struct dec_live *L = r->live ? r->live : s->live;
	size_t j = 0, run = 0, lastq = 0, moves = 0;

	if (L != s->live) {
		/* segment @i was decoded by the live decoder: its own one is not needed */
		dec_live_free(s->live);
	}
	s->live = NULL;
	r->live = L;
	if (!L)
		return;
	L->ret_gap = SIZE_MAX;	/* from its worker's run: before its match (ret_suspect) */
	if (i + 1 >= r->nr_segs || r->segs[i + 1].piece_end != s->piece_end) {
		/*
		 * The last segment, or the last before a gap: the rest of the
		 * trace, or of the piece, is this decoder's, no hash read;
		 * segment @i + 1 keeps its own decoder's output from its start.
		 */
		L->ck_bound = UINT64_MAX;
		while (!L->done) {
			live_step(L, s, false);
			L = check_ret(r, L, s);
		}
		dec_live_free(L);
		r->live = NULL;
		dec_live_free(r->anchor);
		r->anchor = NULL;
		return;
	}
	n = &r->segs[i + 1];
	/*
	 * Its hash is read after fine steps and, by dec_converge(i + 1),
	 * after the step that ends past segment @i + 1 (its last here).
	 */
	L->ck_bound = n->end;
	while (!L->done) {
		size_t q;

		while (j < n->nr_ck && n->ck[j].off < L->off)
			j++;
		for (q = j; q < n->nr_ck && n->ck[q].off == L->off; q++) {
			assert(L->hash_ok);
			if (n->ck[q].hash != L->hash || n->ck[q].off < n->tip_end)
				continue;
			/* its empty return stack fails later: not the serial decoder's state */
			if (n->ret_suspect != SIZE_MAX && n->ck[q].nr <= n->ret_suspect)
				continue;
			/*
			 * Both must have delivered the same PSB+ status
			 * updates since the PSB: libipt 2.0.5 holds an event
			 * it has fetched until it binds (process_event in
			 * pt_insn_decoder.c and pt_block_decoder.c) and
			 * fetches no other one before, so a serial decoder
			 * that never reaches the IP of the PSB+'s FUP keeps
			 * its MODE.EXEC status update, and with it every
			 * later event, pending, and later fails where a
			 * decoder synced at the PSB (which delivered it at
			 * the sync) shows the event.  Other events of the
			 * PSB's neighbourhood (a TIP.PGD just before it) may
			 * come at other steps: not compared.
			 */
			if (n->ck[q].su != su_since(L, n->begin))
				continue;
			break;
		}
		/*
		 * DEC_CK_RUN checkpoints in a row must match, step for step,
		 * and both decoders must have read on (the offset moved)
		 * DEC_CK_MOVES times at the same steps: TNT bits one decoder
		 * holds from before the PSB make it read the next TNT packet
		 * at another step than the other.
		 */
		if (q < n->nr_ck && n->ck[q].off == L->off) {
			if (run && q == lastq + 1) {
				run++;
				moves += n->ck[q].off != n->ck[lastq].off;
			} else {
				run = 1;
				moves = 0;
			}
			lastq = q;
		} else {
			run = 0;
		}
		if (run >= DEC_CK_RUN && moves >= DEC_CK_MOVES) {
			/* converged: segment @i + 1's decoder goes on from here */
			n->skip = n->ck[q].nr;
			n->insns -= n->ck[q].insns;
			if (!n->live->fresh) {
				/* resynced: in the serial state */
				dec_live_free(r->anchor);
				r->anchor = NULL;
				dec_live_free(L);
			} else if (r->anchor) {
				r->anchor_insns += L->insns - L->base;
				dec_live_free(L);
			} else if (!L->fresh) {
				/* kept, paused, in case its return stack is needed (check_ret()) */
				r->anchor = L;
				r->anchor_insns = 0;
				L->base = L->insns;
			} else {
				/* fresh after a stream gap: no decoder crosses a gap */
				dec_live_free(L);
			}
			n->live->base = n->ck[q].insns;
			r->live = n->live;
			n->live = NULL;
			return;
		}
		if (L->off > n->end)
			break;
		/* past segment @i + 1's last checkpoint no match can come: step coarsely */
		live_step(L, s, j < n->nr_ck);
		L = check_ret(r, L, s);
	}
	/* no match: the live decoder has decoded segment @i + 1's part (or the trace ended) */
	supersede(n);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode, segmenting: a trace's bytes, cut at PSBs into the
 * segments that are decoded on their own (step.c, pool.c); whether its
 * code needs uncached decoding; whether its last packet is cut short.
 * The cut depends on the trace only, never on -J.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "internal.h"

/* A PSB packet: what a byte search for PSBs looks for. */
static const uint8_t psb_bytes[16] = {
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
};

/* The first PSB in @buf[@from, @len), or NULL: a byte search. */
static const uint8_t *next_psb(const uint8_t *buf, size_t len, size_t from)
{
	return from < len ? memmem(buf + from, len - from, psb_bytes, sizeof(psb_bytes)) : NULL;
}

/* The TSC in the PSB+ that @pd is synced at, or 0 (none before its PSBEND or an OVF). */
static uint64_t psb_tsc(struct pt_packet_decoder *pd)
{
	struct pt_packet p;

	while (pt_pkt_next(pd, &p, sizeof(p)) >= 0 && p.type != ppt_psbend && p.type != ppt_ovf)
		if (p.type == ppt_tsc)
			return p.payload.tsc.tsc;
	return 0;
}

/*
 * The TSC of the first PSB+ from @from on that has one, or 0: every PSB
 * looked at in order, so that the answer does not depend on which PSBs
 * the segmenting visited (the split and the unsplit decode agree).
 */
static uint64_t first_psb_tsc(struct pt_packet_decoder *pd, const uint8_t *buf, size_t len,
			      uint64_t from)
{
	const uint8_t *next = buf + from;
	uint64_t tsc = 0;

	while (!tsc && next && pt_pkt_sync_set(pd, (uint64_t)(next - buf)) >= 0) {
		tsc = psb_tsc(pd);
		next = next_psb(buf, len, (size_t)(next - buf) + 1);
	}
	return tsc;
}

size_t dec_find_psbs(const uint8_t *buf, size_t len, const struct pt_config *tmpl, size_t parts,
		     uint64_t **offs, uint64_t *first_tsc)
{
	struct pt_packet_decoder *pd;
	struct pt_config cfg = *tmpl;
	size_t n = 0, cap = 0;
	uint64_t off, stride = 0;
	int st;

	*offs = NULL;
	if (first_tsc)
		*first_tsc = 0;
	if (!len)
		return 0;
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return 0;
	for (st = pt_pkt_sync_forward(pd); st >= 0;) {
		const uint8_t *next;

		if (pt_pkt_get_sync_offset(pd, &off) < 0)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			*offs = dec_xrealloc(*offs, cap * sizeof(**offs));
		}
		(*offs)[n++] = off;
		/* the next PSB @stride bytes on: a search, no packet decoding */
		if (!stride)
			stride = (len - off) / parts > sizeof(psb_bytes) ?
				 (len - off) / parts : sizeof(psb_bytes);
		if (off + stride >= len)
			break;
		next = next_psb(buf, len, off + stride);
		if (!next)
			break;
		st = pt_pkt_sync_set(pd, (uint64_t)(next - buf));
	}
	if (first_tsc && n)
		*first_tsc = first_psb_tsc(pd, buf, len, (*offs)[0]);
	pt_pkt_free_decoder(pd);
	return n;
}

/*
 * Whether @type may stand in a PSB+: libipt 2.0.5 syncs at a PSB only if
 * every packet up to its PSBEND is one with a header function
 * (pt_qry_read_psb_header(); the .header members of
 * pt_decoder_function.c), else the sync fails ("unexpected packet
 * context").
 */
static bool psb_plus_packet(enum pt_packet_type type)
{
	switch (type) {
	case ppt_pad:
	case ppt_fup:
	case ppt_pip:
	case ppt_mode:
	case ppt_tsc:
	case ppt_cbr:
	case ppt_tma:
	case ppt_mtc:
	case ppt_cyc:
	case ppt_vmcs:
	case ppt_mnt:
		return true;
	default:
		return false;
	}
}

/*
 * Whether a decoder synced at the PSB at @off of @pd's trace has no exec
 * mode: its PSB+ is one libipt syncs at (psb_plus_packet(), up to a
 * PSBEND) without a MODE.EXEC.  A broken PSB+ (a TNT, another PSB, a bad
 * packet before the PSBEND) is none: no decoder syncs there.
 */
static bool psb_without_mode(struct pt_packet_decoder *pd, uint64_t off)
{
	struct pt_packet pkt;

	if (pt_pkt_sync_set(pd, off) < 0 || pt_pkt_next(pd, &pkt, sizeof(pkt)) < 0 ||
	    pkt.type != ppt_psb)
		return false;
	while (pt_pkt_next(pd, &pkt, sizeof(pkt)) >= 0) {
		if (pkt.type == ppt_psbend)
			return true;
		if ((pkt.type == ppt_mode && pkt.payload.mode.leaf == pt_mol_exec) ||
		    !psb_plus_packet(pkt.type))
			return false;
	}
	return false;
}

/*
 * The serial packet walk, the reference's (tools/testing/decode/ref.c):
 * libipt's packet decoder synced forward from the trace's start, each
 * packet read in turn, synced forward again after an error, until no PSB
 * is left.  Its cost is one pt_pkt_next() per packet of the whole trace
 * (about 185 instructions each), so it is made in pieces, one from each
 * cut (a segment's PSB) to the next, on several threads, and joined:
 *
 *  - the walk of the piece from cut k starts as a serial walk that has
 *    reached cut k does: its next packet starts there (pt_pkt_sync_set();
 *    the decoder's sync offset, which the serial one may have elsewhere,
 *    matters to pt_pkt_sync_forward() only when the packet read at the
 *    sync fails, and a packet read at a whole PSB never does);
 *  - a piece's walk goes on until its next packet starts at or past the
 *    next cut, or it ends;
 *  - joined in trace order: when the serial walk (piece 0's, then each
 *    joined one's) stops exactly at the next cut, the next piece's walk is
 *    the serial walk from there; when it stops past it (a packet over the
 *    cut, or a sync that jumped it) or ended, the next piece's walk is not
 *    used and the serial walk itself goes on through that piece.
 *
 * So the packets read, and the modes found, are the serial walk's on any
 * input; the threads change only who reads them.
 */
struct walk {
	struct pt_packet_decoder *pd;
	uint64_t from, to;	/* the piece: from a cut (0: the start) to the next */
	uint64_t pos;		/* where the walk's next packet starts */
	bool ended;		/* no PSB left (or no decoder): the walk is over */
	int modes;		/* 1 << the exec mode of each MODE.EXEC read */
};

/*
 * Walk on until the next packet starts at or past @to, or the walk ends.
 * The walk's state is in locals while it runs: two threads walk
 * neighbouring pieces, whose struct walk may share a cache line.
 */
static void walk_to(struct walk *w, uint64_t to)
{
	uint64_t pos = w->pos;
	int modes = w->modes, size;
	bool ended = w->ended;
	struct pt_packet pkt;

	while (!ended && pos < to) {
		size = pt_pkt_next(w->pd, &pkt, sizeof(pkt));
		if (size > 0) {
			pos += (uint64_t)size;
			if (pkt.type == ppt_mode && pkt.payload.mode.leaf == pt_mol_exec)
				modes |= 1 << pt_get_exec_mode(&pkt.payload.mode.bits.exec);
			continue;
		}
		if (pt_pkt_sync_forward(w->pd) < 0 || pt_pkt_get_offset(w->pd, &pos) < 0)
			ended = true;
	}
	w->pos = pos;
	w->modes = modes;
	w->ended = ended;
}

/* Walk a piece: from the trace's start as the serial walk starts, or from its cut. */
static void walk_piece(struct walk *w, const struct pt_config *cfg)
{
	w->pd = pt_pkt_alloc_decoder(cfg);
	w->ended = !w->pd;
	if (w->ended)
		return;
	if (!w->from) {
		if (pt_pkt_sync_forward(w->pd) < 0 || pt_pkt_get_offset(w->pd, &w->pos) < 0)
			w->ended = true;
	} else {
		if (pt_pkt_sync_set(w->pd, w->from) < 0)
			w->ended = true;
		w->pos = w->from;
	}
	walk_to(w, w->to);
}

struct walks {
	struct walk *w;
	size_t n;
	const struct pt_config *cfg;
	pthread_mutex_t lock;
	size_t next;		/* the next piece to walk */
};

static void *walker(void *arg)
{
	struct walks *ws = arg;
	size_t k;

	for (;;) {
		pthread_mutex_lock(&ws->lock);
		k = ws->next < ws->n ? ws->next++ : SIZE_MAX;
		pthread_mutex_unlock(&ws->lock);
		if (k == SIZE_MAX)
			return NULL;
		walk_piece(&ws->w[k], ws->cfg);
	}
}

/*
 * The exec modes of the MODE.EXEC packets the serial walk of @cfg's trace
 * reads (1 << mode each), walked in pieces from @cuts (ascending; those
 * that are not a whole PSB are not used) on @threads threads.  -1 if out
 * of memory.
 */
static int walk_modes(const uint8_t *buf, size_t len, const struct pt_config *cfg,
		      const uint64_t *cuts, size_t nr_cuts, unsigned int threads)
{
	struct walks ws = { .cfg = cfg };
	struct walk *serial;
	pthread_t *th;
	unsigned int t, nth = 0;
	bool nomem = false;
	size_t i, k;
	int modes = 0;

	ws.w = calloc(nr_cuts + 1, sizeof(*ws.w));
	if (!ws.w)
		return -1;
	for (i = 0; i < nr_cuts; i++) {
		uint64_t at = cuts[i];

		if (at <= ws.w[ws.n].from || at > len || len - at < sizeof(psb_bytes) ||
		    memcmp(buf + at, psb_bytes, sizeof(psb_bytes)))
			continue;
		ws.w[ws.n++].to = at;
		ws.w[ws.n].from = at;
	}
	ws.w[ws.n++].to = UINT64_MAX;
	if (threads > ws.n)
		threads = (unsigned int)ws.n;
	pthread_mutex_init(&ws.lock, NULL);
	th = threads > 1 ? calloc(threads - 1, sizeof(*th)) : NULL;
	for (t = 0; th && t + 1 < threads; t++, nth++)
		if (pthread_create(&th[t], NULL, walker, &ws))
			break;
	walker(&ws);
	for (t = 0; t < nth; t++)
		pthread_join(th[t], NULL);
	free(th);
	pthread_mutex_destroy(&ws.lock);
	/* joined in trace order: which piece's walk is the serial one's */
	serial = &ws.w[0];
	for (k = 1; k < ws.n; k++) {
		if (!serial->ended && serial->pos == ws.w[k].from) {
			modes |= serial->modes;
			serial = &ws.w[k];
		} else {
			walk_to(serial, ws.w[k].to);
		}
	}
	modes |= serial->modes;
	for (k = 0; k < ws.n; k++) {
		if (!ws.w[k].pd)
			nomem = true;
		pt_pkt_free_decoder(ws.w[k].pd);
	}
	free(ws.w);
	return nomem ? -1 : modes;
}

bool dec_mixed_modes(const uint8_t *buf, size_t len, const struct pt_config *tmpl,
		     const uint64_t *cuts, size_t nr_cuts, unsigned int threads)
{
	struct pt_config cfg = *tmpl;
	struct pt_packet_decoder *pd;
	const uint8_t *p = buf, *end = buf + len;
	bool mixed = false;
	int seen = -1, modes;

	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return true;
	/* a PSB+ without MODE.EXEC: decoders synced there have no mode until one */
	while (!mixed && p < end &&
	       (p = memmem(p, (size_t)(end - p), psb_bytes, sizeof(psb_bytes)))) {
		mixed = psb_without_mode(pd, (uint64_t)(p - buf));
		p += sizeof(psb_bytes);
	}
	pt_pkt_free_decoder(pd);
	/* MODE.EXEC: 0x99, then a byte with bits 7:5 clear; CS.D and CS.L in bits 1:0 */
	for (p = buf; !mixed && p + 1 < end && (p = memchr(p, 0x99, (size_t)(end - p - 1))); p++) {
		if (p[1] & 0xe0)
			continue;
		if (seen < 0) {
			seen = p[1] & 3;
		} else if (seen != (p[1] & 3)) {
			/* two values: maybe only payload bytes; ask libipt (the serial walk) */
			modes = walk_modes(buf, len, &cfg, cuts, nr_cuts, threads);
			mixed = modes < 0 || (modes & (modes - 1));
			break;
		}
	}
	return mixed;
}

static uint8_t *slurp(const char *path, size_t *len, char *msg, size_t mlen)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		snprintf(msg, mlen, "%s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		return NULL;
	}
	p = dec_xrealloc(NULL, (size_t)n + 1);
	if (fread(p, 1, (size_t)n, f) != (size_t)n) {
		snprintf(msg, mlen, "%s: read error", path);
		free(p);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

/*
 * Whether @r's trace ends inside a packet (a file cut short): walk the
 * packets from its last PSB (libipt's backward sync from the end); libipt
 * reports a packet that runs past the end as -pte_eos.
 */
static void check_cut(struct dec_ctx *c, struct dec_trace_result *r)
{
	struct pt_config cfg = c->cfg;
	struct pt_packet_decoder *pd;
	struct pt_packet pkt;
	uint64_t off = 0;
	int st;

	cfg.begin = r->buf;
	cfg.end = r->buf + r->len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return;
	st = pt_pkt_sync_backward(pd);
	while (st >= 0) {
		pt_pkt_get_offset(pd, &off);
		st = pt_pkt_next(pd, &pkt, sizeof(pkt));
	}
	if (st == -pte_eos && off < r->len) {
		r->cut = true;
		r->cut_off = off;
	}
	pt_pkt_free_decoder(pd);
}

/*
 * Cut @r's trace into segments at PSBs: at most 64, each at least 1/64 of
 * it, so that the cut depends on the trace only (never on -J).  A
 * streamed trace is first cut at its gaps into pieces, each cut so: no
 * segment spans a gap, and the first one after a gap carries it.
 */
static void make_segments(struct dec_ctx *c, struct dec_trace_result *r)
{
	const struct dec_trace *t = r->trace;
	uint64_t start = 0, *psb;
	size_t k, i;

	for (k = 0; k <= t->nr_sgaps; k++) {
		uint64_t end = k < t->nr_sgaps && t->sgaps[k].off < r->len ? t->sgaps[k].off :
			       r->len;
		size_t n;

		if (end < start)
			end = start;
		n = dec_find_psbs(r->buf + start, end - start, &c->cfg, c->opt.no_split ? 1 : 64,
				  &psb, k ? NULL : &r->first_tsc);
		if (!n || psb[0]) {
			r->gaps[GAP_PRE_PSB] += end > start;
			r->gap_bytes[GAP_PRE_PSB] += n ? psb[0] : end - start;
		}
		/* a gap with no PSB after it before the next: counted, not placed */
		if (k && !n)
			r->gaps[GAP_STREAM]++;
		r->segs = dec_xrealloc(r->segs, (r->nr_segs + n) * sizeof(*r->segs));
		memset(r->segs + r->nr_segs, 0, n * sizeof(*r->segs));
		for (i = 0; i < n; i++) {
			struct dec_segment *s = &r->segs[r->nr_segs + i];

			s->begin = start + psb[i];
			s->end = i + 1 < n ? start + psb[i + 1] : end;
			s->piece_end = end;
			s->sgap = k && !i ? k - 1 : SIZE_MAX;
		}
		r->nr_segs += n;
		free(psb);
		start = end;
	}
	if (!r->nr_segs) {
		snprintf(r->error, sizeof(r->error),
			 "%s: no PSB in %zu bytes: not Intel PT, or cut before its first PSB",
			 r->trace->file, r->len);
		return;
	}
	if (!c->opt.insn_decoder) {
		uint64_t *cuts = dec_xcalloc(r->nr_segs + 1, sizeof(*cuts));
		unsigned int threads = c->opt.jobs;

		if (!threads) {
			long n = sysconf(_SC_NPROCESSORS_ONLN);

			threads = n > 0 ? (unsigned int)n : 1;
		}
		for (i = 0; i < r->nr_segs; i++)
			cuts[i] = r->segs[i].begin;
		r->uncached = dec_mixed_modes(r->buf, r->len, &c->cfg, cuts, r->nr_segs, threads);
		free(cuts);
	}
}

void dec_trace_load(struct dec_ctx *c, struct dec_trace_result *r)
{
	if (r->trace->data) {
		r->buf = dec_xrealloc(NULL, r->trace->size + 1);
		memcpy(r->buf, r->trace->data, r->trace->size);
		r->len = r->trace->size;
	} else {
		r->buf = slurp(r->trace->file, &r->len, r->error, sizeof(r->error));
	}
	if (!r->buf)
		return;
	if (!r->len) {
		snprintf(r->error, sizeof(r->error), "%s: empty (no trace was recorded)",
			 r->trace->file);
		return;
	}
	make_segments(c, r);
	if (r->nr_segs)
		check_cut(c, r);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode, segmenting: a trace's bytes, cut at PSBs into the
 * segments that are decoded on their own (step.c, pool.c); whether its
 * code needs uncached decoding; whether its last packet is cut short.
 * The cut depends on the trace only, never on -J.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "internal.h"

size_t dec_find_psbs(const uint8_t *buf, size_t len, const struct pt_config *tmpl, size_t parts,
		     uint64_t **offs, uint64_t *first_tsc)
{
	static const uint8_t psb_bytes[16] = {
		0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	};
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
		struct pt_packet p;
		const uint8_t *next;

		if (pt_pkt_get_sync_offset(pd, &off) < 0)
			break;
		/* the PSB+: its TSC */
		while (pt_pkt_next(pd, &p, sizeof(p)) >= 0 && p.type != ppt_psbend) {
			if (p.type == ppt_tsc && first_tsc && !*first_tsc)
				*first_tsc = p.payload.tsc.tsc;
			if (p.type == ppt_ovf)
				break;
		}
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
		next = memmem(buf + off + stride, len - off - stride, psb_bytes, sizeof(psb_bytes));
		if (!next)
			break;
		st = pt_pkt_sync_set(pd, (uint64_t)(next - buf));
	}
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

bool dec_mixed_modes(const uint8_t *buf, size_t len, const struct pt_config *tmpl)
{
	static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
	struct pt_config cfg = *tmpl;
	struct pt_packet_decoder *pd;
	const uint8_t *p = buf, *end = buf + len;
	bool mixed = false;
	int seen = -1, modes = 0;

	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return true;
	/* a PSB+ without MODE.EXEC: decoders synced there have no mode until one */
	while (!mixed && p < end && (p = memmem(p, (size_t)(end - p), psb, sizeof(psb)))) {
		mixed = psb_without_mode(pd, (uint64_t)(p - buf));
		p += sizeof(psb);
	}
	/* MODE.EXEC: 0x99, then a byte with bits 7:5 clear; CS.D and CS.L in bits 1:0 */
	for (p = buf; !mixed && p + 1 < end && (p = memchr(p, 0x99, (size_t)(end - p - 1))); p++) {
		if (p[1] & 0xe0)
			continue;
		if (seen < 0) {
			seen = p[1] & 3;
		} else if (seen != (p[1] & 3)) {
			/* two values: maybe only payload bytes; ask libipt (a new decoder, from the start) */
			struct pt_packet_decoder *all = pt_pkt_alloc_decoder(&cfg);

			while (all && pt_pkt_sync_forward(all) >= 0) {
				struct pt_packet pkt;

				while (pt_pkt_next(all, &pkt, sizeof(pkt)) >= 0)
					if (pkt.type == ppt_mode && pkt.payload.mode.leaf == pt_mol_exec)
						modes |= 1 << pt_get_exec_mode(&pkt.payload.mode.bits.exec);
			}
			pt_pkt_free_decoder(all);
			mixed = !all || (modes & (modes - 1));
			break;
		}
	}
	pt_pkt_free_decoder(pd);
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
	r->uncached = !c->opt.insn_decoder && dec_mixed_modes(r->buf, r->len, &c->cfg);
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

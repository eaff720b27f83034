// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: --drcov, coverage as DynamoRIO's drcov client writes it
 * on Linux x86-64 (Documentation/decode.rst, "Outputs"), from the
 * coverage blocks of sink_blocks.c.
 */
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

struct drcov_sink {
	struct dec_sink k;
	struct dec_cover cv;
};

/* The module of @ip for the whole-run output: every process's (st->pid 0). */
static const struct dec_module *module_at(const struct dec_stream *st, uint64_t ip)
{
	return st->c->syms ? dec_syms_module_at(st->c->syms, ip, st->pid, st->time) : NULL;
}

static void put16(FILE *f, uint16_t v)
{
	fputc(v & 0xff, f);
	fputc(v >> 8, f);
}

static void put32(FILE *f, uint32_t v)
{
	put16(f, (uint16_t)(v & 0xffff));
	put16(f, (uint16_t)(v >> 16));
}

/*
 * drcov, as DynamoRIO's drcov client writes it on Linux x86-64 today
 * (ext/drcovlib/drcovlib.c, modules.c; read by clients/drcov/postprocess/
 * drcov2lcov.cpp, Lighthouse, bncov): "DRCOV VERSION: 3" (bb offsets from
 * the segment), "DRCOV FLAVOR: drcov-64", module table version 5 with an
 * entry per loaded segment of each module (the first is the module's, the
 * others name it as containing_id), then "BB Table: N bbs" and N binary
 * entries: u32 offset from the start of the entry's segment, u16 size,
 * u16 entry id.
 */
#define DRCOV_PAGE 4096u
#define DRCOV_MAX_BB 0xfffeu	/* drcovlib asserts size < USHRT_MAX */

struct drseg {
	uint64_t vstart, vend;	/* page-aligned, in the ELF's addresses (+ bias: runtime) */
	uint64_t off;		/* p_offset */
};

struct drmod {
	const char *path;
	bool elf;		/* segments from the ELF's PT_LOADs (else one: the image) */
	uint64_t start;		/* a non-ELF image: its start (one module per image) */
	uint64_t bias;		/* runtime = ELF address + bias, for the instance listed */
	uint64_t entry, pref;
	struct drseg *seg;
	size_t nseg;
	unsigned int first_id;
};

struct drbb {
	uint32_t start;
	uint16_t size, id;
};

static int cmp_drbb(const void *x, const void *y)
{
	const struct drbb *a = x, *b = y;

	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->size < b->size ? -1 : a->size > b->size;
}

/* Read the PT_LOAD segments of ELF @path into @d (sorted); false if it has none. */
static bool drcov_elf(struct drmod *d, const char *path)
{
	GElf_Ehdr eh;
	size_t n, i, k;
	bool ok = false;
	int fd = open(path, O_RDONLY);
	Elf *e;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || elf_getphdrnum(e, &n))
		goto out;
	d->seg = calloc(n ? n : 1, sizeof(*d->seg));
	if (!d->seg)
		dec_nomem();
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		struct drseg sg;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		sg.vstart = ph.p_vaddr & ~(uint64_t)(DRCOV_PAGE - 1);
		sg.vend = (ph.p_vaddr + ph.p_memsz + DRCOV_PAGE - 1) & ~(uint64_t)(DRCOV_PAGE - 1);
		sg.off = ph.p_offset;
		for (k = d->nseg; k && d->seg[k - 1].vstart > sg.vstart; k--)
			d->seg[k] = d->seg[k - 1];
		d->seg[k] = sg;
		d->nseg++;
	}
	if (d->nseg) {
		d->entry = eh.e_entry;
		d->pref = d->seg[0].vstart;
		ok = true;
	}
out:
	if (e)
		elf_end(e);
	close(fd);
	return ok;
}

/* Does module @m lie in a segment of @d at bias @bias? */
static bool drcov_fits(const struct drmod *d, const struct dec_module *m, uint64_t bias)
{
	size_t j;

	for (j = 0; j < d->nseg; j++)
		if (m->start - bias >= d->seg[j].vstart && m->end - bias <= d->seg[j].vend)
			return true;
	return false;
}

static void print_drcov(struct drcov_sink *r, const struct dec_stream *st)
{
	FILE *f = r->k.f;
	const struct dec_syms *s = st->c->syms;
	size_t nm = s ? s->nr_mods : 0, nd = 0, n, i, j, nbb = 0, cap = 0;
	struct drmod *d = calloc(nm + 1, sizeof(*d));
	size_t *of = calloc(nm + 1, sizeof(*of));	/* module -> its drmod */
	uint64_t *bias = calloc(nm + 1, sizeof(*bias));	/* module -> its runtime bias */
	struct drbb *bb = NULL;
	unsigned int ids = 0;

	if (!d || !of || !bias)
		dec_nomem();
	/* one DynamoRIO module per ELF file (all its instances), else per image */
	for (i = 0; i < nm; i++) {
		const struct dec_module *m = &s->mods[i];
		struct drmod t = { .path = m->path, .start = m->start };

		if (m->elf) {
			for (j = 0; j < nd && !(d[j].elf && !strcmp(d[j].path, m->elf)); j++)
				;
			if (j < nd && drcov_fits(&d[j], m, m->bias)) {
				of[i] = j;
				bias[i] = m->bias;
				continue;
			}
			t.path = m->elf;
			if (j == nd && drcov_elf(&t, m->elf) && drcov_fits(&t, m, m->bias)) {
				t.elf = true;
				t.bias = m->bias;
				t.entry += m->bias;
				d[nd] = t;
				of[i] = nd++;
				bias[i] = m->bias;
				continue;
			}
			free(t.seg);
			t.seg = NULL;
			t.nseg = 0;
			t.path = m->path;
		}
		/*
		 * Code without its ELF: the image, one segment, rounded out to
		 * pages as DynamoRIO's are (drcov2lcov asserts a page-aligned
		 * module size, module_table_create()).
		 */
		t.seg = calloc(1, sizeof(*t.seg));
		if (!t.seg)
			dec_nomem();
		t.seg[0].vstart = m->start & ~(uint64_t)(DRCOV_PAGE - 1);
		t.seg[0].vend = (m->end + DRCOV_PAGE - 1) & ~(uint64_t)(DRCOV_PAGE - 1);
		t.seg[0].off = t.seg[0].vstart - m->bias;
		t.nseg = 1;
		t.pref = t.seg[0].vstart;
		d[nd] = t;
		of[i] = nd++;
		bias[i] = 0;
	}
	for (i = 0; i < nd; i++) {
		d[i].first_id = ids;
		ids += (unsigned int)d[i].nseg;
	}
	/* the blocks, as entries of their segments, each once */
	n = dec_map_entries(&r->cv.blocks);
	for (i = 0; i < n; i++) {
		const struct dec_module *mod = module_at(st, r->cv.blocks.t[i].a);
		uint64_t a = r->cv.blocks.t[i].a, e = r->cv.blocks.t[i].b;
		const struct drmod *dm;

		if (!mod)
			continue;
		dm = &d[of[mod - s->mods]];
		a -= bias[mod - s->mods];
		e -= bias[mod - s->mods];
		while (a < e) {
			uint64_t len;

			for (j = 0; j < dm->nseg && !(a >= dm->seg[j].vstart && a < dm->seg[j].vend); j++)
				;
			if (j == dm->nseg)
				break;
			len = e - a;
			if (len > dm->seg[j].vend - a)
				len = dm->seg[j].vend - a;
			if (len > DRCOV_MAX_BB)
				len = DRCOV_MAX_BB;
			if (nbb == cap) {
				cap = cap ? 2 * cap : 1024;
				bb = realloc(bb, cap * sizeof(*bb));
				if (!bb)
					dec_nomem();
			}
			bb[nbb].start = (uint32_t)(a - dm->seg[j].vstart);
			bb[nbb].size = (uint16_t)len;
			bb[nbb].id = (uint16_t)(dm->first_id + j);
			nbb++;
			a += len;
		}
	}
	dec_sort(bb, nbb, sizeof(*bb), cmp_drbb);
	for (i = j = 0; i < nbb; i++)
		if (!j || cmp_drbb(&bb[j - 1], &bb[i]))
			bb[j++] = bb[i];
	nbb = j;
	fprintf(f, "DRCOV VERSION: 3\nDRCOV FLAVOR: drcov-64\n");
	fprintf(f, "Module Table: version 5, count %u\n", ids);
	fprintf(f, "Columns: id, containing_id, start, end, entry, offset, preferred_base, path\n");
	for (i = 0; i < nd; i++)
		for (j = 0; j < d[i].nseg; j++)
			fprintf(f, "%3u, %3u, 0x%016" PRIx64 ", 0x%016" PRIx64 ", 0x%016" PRIx64 ", %016"
				PRIx64 ", 0x%016" PRIx64 ",  %s\n", d[i].first_id + (unsigned int)j,
				d[i].first_id, d[i].seg[j].vstart + d[i].bias, d[i].seg[j].vend + d[i].bias,
				d[i].entry, d[i].seg[j].off, d[i].pref + d[i].seg[j].vstart - d[i].seg[0].vstart,
				d[i].path);
	fprintf(f, "BB Table: %zu bbs\n", nbb);
	for (i = 0; i < nbb; i++) {
		put32(f, bb[i].start);
		put16(f, bb[i].size);
		put16(f, bb[i].id);
	}
	for (i = 0; i < nd; i++)
		free(d[i].seg);
	free(d);
	free(of);
	free(bias);
	free(bb);
}

static void drcov_trace_begin(struct dec_sink *k, struct dec_stream *st, size_t i)
{
	(void)st;
	(void)i;
	((struct drcov_sink *)k)->cv.have_prev = false;
}

static void drcov_block(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b)
{
	dec_cover_block(&((struct drcov_sink *)k)->cv, st, b);
}

static void drcov_event(struct dec_sink *k, struct dec_stream *st, const struct dec_item *it)
{
	(void)st;
	dec_cover_event(&((struct drcov_sink *)k)->cv, it);
}

static void drcov_trace_end(struct dec_sink *k, struct dec_stream *st)
{
	(void)st;
	dec_cover_end(&((struct drcov_sink *)k)->cv);
}

static void drcov_end(struct dec_sink *k, struct dec_stream *st)
{
	struct drcov_sink *s = (struct drcov_sink *)k;

	print_drcov(s, st);
	dec_cover_free(&s->cv);
	free(s);
}

static const struct dec_sink_ops drcov_ops = {
	.name = "drcov",
	.needs = DEC_NEED_BLOCKS,
	.trace_begin = drcov_trace_begin,
	.block = drcov_block,
	.event = drcov_event,
	.trace_end = drcov_trace_end,
	.end = drcov_end,
};

struct dec_sink *dec_sink_drcov(struct dec_stream *st, FILE *f)
{
	struct drcov_sink *s = dec_xcalloc(1, sizeof(*s));

	(void)st;
	s->k.ops = &drcov_ops;
	s->k.f = f;
	return &s->k;
}

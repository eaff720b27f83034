// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: --profile, instructions per function and per DSO
 * (Documentation/decode.rst, "Outputs").  The counts are order-
 * independent: when --profile is the only output the workers count each
 * segment's blocks (dec_prof, step.c) and this sink adds them up.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

/*
 * --profile counts: instructions per function (key: its start; code in a
 * module but in no symbol: the instruction's address, b = 1) and per DSO.  The
 * sink keeps one; in profile_only mode each segment has one, made by its
 * worker (with its own symbol cache and whose code it is), which the sink
 * adds to its own.
 */
struct dec_prof {
	struct dec_map fun, dso;
	/*
	 * Blocks wholly in a module without symbols, counted per block
	 * (a: start, b: length in bytes | isid << 32) and their ninsn and
	 * mode (same key; v: ninsn | mode << 32), so that the per-address
	 * rows cost one walk per distinct block, when printed, not one
	 * per execution.
	 */
	struct dec_map nsb, nsb_info;
	uint64_t unknown;	/* instructions in no image */
	struct dec_ctx *c;
	long pid;
	uint64_t time;
	struct dec_symc sc;
	/*
	 * The entries of the last function and DSO counted (consecutive
	 * blocks are mostly in one): valid while their table's capacity is
	 * the one noted (it only grows, and entries move only then).
	 */
	struct dec_kv *last_fun, *last_dso;
	size_t last_fun_cap, last_dso_cap;
};

/* dec_map_get(@m, @a, @b), or *@last if it is that entry and @m has not grown since. */
static struct dec_kv *map_get_last(struct dec_map *m, uint64_t a, uint64_t b,
				   struct dec_kv **last, size_t *last_cap)
{
	if (*last && *last_cap == m->cap && (*last)->a == a && (*last)->b == b)
		return *last;
	*last = dec_map_get(m, a, b);
	*last_cap = m->cap;
	return *last;
}

/*
 * Count @n instructions at @ip of the function and DSO that @sc holds;
 * in a DSO but in no symbol, @n is 1 and the row is @ip's own (perf's
 * "[.] 0x6e45" rows).
 */
static void prof_add(struct dec_prof *p, const struct dec_symc *sc, uint64_t ip, uint64_t n)
{
	if (sc->sym)
		map_get_last(&p->fun, sc->sym->start, 0, &p->last_fun, &p->last_fun_cap)->v += n;
	else if (sc->mod)
		map_get_last(&p->fun, ip, 1, &p->last_fun, &p->last_fun_cap)->v += n;
	if (sc->mod)
		map_get_last(&p->dso, sc->mod->start, 0, &p->last_dso, &p->last_dso_cap)->v += n;
	else
		p->unknown += n;
}

/* Count block @b, wholly in the symbol-less module that @sc holds. */
static void prof_nosym_block(struct dec_prof *p, const struct dec_symc *sc,
			     const struct dec_item *b)
{
	uint64_t key = (b->end_ip - b->ip) | (uint64_t)(uint32_t)b->isid << 32;
	struct dec_kv *e = dec_map_get(&p->nsb, b->ip, key);

	if (!e->v++)
		dec_map_get(&p->nsb_info, b->ip, key)->v = b->ninsn | (uint64_t)b->mode << 32;
	dec_map_get(&p->dso, sc->mod->start, 0)->v += b->ninsn;
}

static void prof_merge(struct dec_prof *dst, const struct dec_prof *src)
{
	size_t i;

	for (i = 0; i < src->nsb.cap; i++)
		if (src->nsb.t[i].used) {
			const struct dec_kv *e = &src->nsb.t[i];
			const struct dec_kv *info = dec_map_find(&src->nsb_info, e->a, e->b);

			dec_map_get(&dst->nsb, e->a, e->b)->v += e->v;
			if (info)
				dec_map_get(&dst->nsb_info, e->a, e->b)->v = info->v;
		}
	for (i = 0; i < src->fun.cap; i++)
		if (src->fun.t[i].used)
			dec_map_get(&dst->fun, src->fun.t[i].a, src->fun.t[i].b)->v += src->fun.t[i].v;
	for (i = 0; i < src->dso.cap; i++)
		if (src->dso.t[i].used)
			dec_map_get(&dst->dso, src->dso.t[i].a, src->dso.t[i].b)->v += src->dso.t[i].v;
	dst->unknown += src->unknown;
}

struct dec_prof *dec_prof_new(void)
{
	struct dec_prof *p = dec_xcalloc(1, sizeof(*p));

	dec_symc_reset(&p->sc);
	return p;
}

void dec_prof_free(struct dec_prof *p)
{
	if (!p)
		return;
	free(p->fun.t);
	free(p->dso.t);
	free(p->nsb.t);
	free(p->nsb_info.t);
	free(p);
}

/* One instruction of a block that crosses functions. */
static void prof_insn(void *arg, uint64_t ip, unsigned int size, bool last, const struct dec_item *b)
{
	struct dec_prof *p = arg;

	(void)size;
	(void)last;
	(void)b;
	dec_symc_lookup(&p->sc, p->c->syms, ip, p->pid, p->time);
	prof_add(p, &p->sc, ip, 1);
}

void dec_prof_block(struct dec_prof *p, struct dec_ctx *c, long pid, uint64_t time,
		    const struct dec_item *b)
{
	p->c = c;
	if (pid != p->pid || time != p->time) {
		p->pid = pid;
		p->time = time;
		dec_symc_reset(&p->sc);
	}
	dec_symc_lookup(&p->sc, c->syms, b->ip, pid, time);
	if (p->sc.sym && dec_symc_holds(&p->sc, b))
		prof_add(p, &p->sc, b->ip, b->ninsn);	/* in one function: no walk */
	else if (dec_symc_holds(&p->sc, b))
		prof_nosym_block(p, &p->sc, b);		/* walked once when printed */
	else
		dec_walk_block(c, b, prof_insn, p);
}

struct profile_sink {
	struct dec_sink k;
	struct dec_prof prof;	/* its c, pid, time and sc unused: the stream's are */
};

/* The module of @ip for the whole-run outputs: every process's (st->pid 0). */
static const struct dec_module *module_at(const struct dec_stream *st, uint64_t ip)
{
	return st->c->syms ? dec_syms_module_at(st->c->syms, ip, st->pid, st->time) : NULL;
}

static const char *mod_name_at(const struct dec_stream *st, uint64_t start)
{
	const struct dec_module *m = module_at(st, start);

	return m ? m->name : "[unknown]";
}

struct nsb_walk {
	struct dec_map *fun;
	uint64_t n;
};

static void nsb_insn(void *arg, uint64_t ip, unsigned int size, bool last, const struct dec_item *b)
{
	struct nsb_walk *w = arg;

	(void)size;
	(void)last;
	(void)b;
	dec_map_get(w->fun, ip, 1)->v += w->n;
}

/* The per-address rows of the blocks counted whole in symbol-less modules. */
static void expand_nosym_blocks(struct profile_sink *s, struct dec_stream *st)
{
	size_t i;

	for (i = 0; i < s->prof.nsb.cap; i++) {
		const struct dec_kv *e = &s->prof.nsb.t[i];
		struct nsb_walk w = { &s->prof.fun, e->v };
		struct dec_item b = { .kind = DI_BLOCK };
		const struct dec_kv *info;

		if (!e->used)
			continue;
		info = dec_map_find(&s->prof.nsb_info, e->a, e->b);
		b.ip = e->a;
		b.end_ip = e->a + (uint32_t)e->b;
		b.isid = (int32_t)(uint32_t)(e->b >> 32);
		b.ninsn = (uint32_t)(info ? info->v : 0);
		b.mode = (uint8_t)((info ? info->v : 0) >> 32);
		if (!dec_walk_block(st->c, &b, nsb_insn, &w))
			dec_map_get(&s->prof.fun, b.ip, 1)->v += e->v * b.ninsn;	/* no bytes: at its start */
	}
}

static void print_profile(struct profile_sink *s, struct dec_stream *st, uint64_t total)
{
	FILE *f = s->k.f;
	size_t n, i;
	double t = total ? (double)total : 1.0;

	expand_nosym_blocks(s, st);

	fprintf(f, "# flat profile: %" PRIu64 " instructions\n", total);
	fprintf(f, "# %10s %7s  %-20s %-32s %s\n", "insns", "share", "dso", "function", "address");
	n = dec_map_entries(&s->prof.fun);
	dec_sort(s->prof.fun.t, n, sizeof(*s->prof.fun.t), dec_kv_cmp_count_desc);
	for (i = 0; i < n; i++) {
		const struct dec_kv *e = &s->prof.fun.t[i];
		const struct dec_module *m = module_at(st, e->a);
		const struct dec_sym *y = e->b ? NULL : dec_syms_find(m, e->a);
		char off[24] = "[no symbol]";

		/* no symbol: the instruction's offset in the DSO, as --insn's dso+0xOFF */
		if (!y && m)
			snprintf(off, sizeof(off), "%#" PRIx64, e->a - m->bias);
		fprintf(f, "%12" PRIu64 " %6.2f%%  %-20s %-32s %#" PRIx64 "\n", e->v,
			100.0 * (double)e->v / t, m ? m->name : "[unknown]",
			y ? y->name : off, e->a);
	}
	if (s->prof.unknown)
		fprintf(f, "%12" PRIu64 " %6.2f%%  %-20s %-32s -\n", s->prof.unknown,
			100.0 * (double)s->prof.unknown / t, "[unknown]", "[no image]");
	fprintf(f, "# per DSO\n");
	n = dec_map_entries(&s->prof.dso);
	dec_sort(s->prof.dso.t, n, sizeof(*s->prof.dso.t), dec_kv_cmp_count_desc);
	for (i = 0; i < n; i++)
		fprintf(f, "%12" PRIu64 " %6.2f%%  %s\n", s->prof.dso.t[i].v,
			100.0 * (double)s->prof.dso.t[i].v / t, mod_name_at(st, s->prof.dso.t[i].a));
	if (s->prof.unknown)
		fprintf(f, "%12" PRIu64 " %6.2f%%  [unknown]\n", s->prof.unknown,
			100.0 * (double)s->prof.unknown / t);
}

static void profile_segment(struct dec_sink *k, struct dec_stream *st, const struct dec_segment *seg)
{
	struct profile_sink *s = (struct profile_sink *)k;

	(void)st;
	if (seg->prof)	/* counted by the worker */
		prof_merge(&s->prof, seg->prof);
}

static void profile_insn(struct dec_sink *k, struct dec_stream *st, uint64_t ip, unsigned int size,
			 bool last, const struct dec_item *b)
{
	struct profile_sink *s = (struct profile_sink *)k;

	(void)size;
	(void)last;
	(void)b;
	prof_add(&s->prof, dec_stream_sym(st, ip), ip, 1);
}

static void profile_insns(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b)
{
	struct profile_sink *s = (struct profile_sink *)k;
	const struct dec_symc *sc = dec_stream_sym(st, b->ip);

	if (sc->sym)
		prof_add(&s->prof, sc, b->ip, b->ninsn);
	else
		prof_nosym_block(&s->prof, sc, b);
}

static void profile_end(struct dec_sink *k, struct dec_stream *st)
{
	struct profile_sink *s = (struct profile_sink *)k;
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < st->c->nr_res; i++)
		total += st->c->sliced ? st->c->res[i].slice_insns : st->c->res[i].insns;
	print_profile(s, st, total);
	free(s->prof.fun.t);
	free(s->prof.dso.t);
	free(s->prof.nsb.t);
	free(s->prof.nsb_info.t);
	free(s);
}

static const struct dec_sink_ops profile_ops = {
	.name = "profile",
	.needs = DEC_NEED_PROFILE | DEC_NEED_INSNS,
	.segment = profile_segment,
	.insn = profile_insn,
	.insns = profile_insns,
	.end = profile_end,
};

struct dec_sink *dec_sink_profile(struct dec_stream *st, FILE *f)
{
	struct profile_sink *s = dec_xcalloc(1, sizeof(*s));

	(void)st;
	s->k.ops = &profile_ops;
	s->k.f = f;
	return &s->k;
}

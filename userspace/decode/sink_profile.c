// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: --profile, instructions per function and per DSO
 * (Documentation/decode.rst, "Outputs").  The counts are order-
 * independent: when --profile is the only output the workers count each
 * segment's blocks (dec_prof, step.c) and this sink adds them up.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
	 * Blocks wholly in a module without symbols, counted per distinct
	 * block (a: start, b: nsb_key(), all else its walk depends on), so
	 * that the per-address rows cost one walk per distinct block, when
	 * printed, not one per execution.
	 */
	struct dec_map nsb;
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

/*
 * The key of block @b in dec_prof.nsb besides its start: its length in
 * bytes, instruction count, exec mode, last instruction's size and
 * section, each in NSB_*_BITS bits.  Two blocks at one address may differ
 * in any of them (a MODE.EXEC between them, or another image there), and
 * each walks differently: keyed on less, whichever came first was walked
 * for both, and the rows depended on the order segments were counted in.
 * False if @b's do not fit (it is walked at once).
 */
#define NSB_LEN_BITS 20
#define NSB_NINSN_BITS 16
#define NSB_MODE_BITS 2
#define NSB_LAST_BITS 4
#define NSB_ISID_BITS (64 - NSB_LEN_BITS - NSB_NINSN_BITS - NSB_MODE_BITS - NSB_LAST_BITS)

static bool nsb_key(const struct dec_item *b, uint64_t *key)
{
	uint64_t len = b->end_ip - b->ip, k;

	if (len >> NSB_LEN_BITS || b->ninsn >> NSB_NINSN_BITS || b->mode >> NSB_MODE_BITS ||
	    b->last_size >> NSB_LAST_BITS || b->isid < 0 || (uint64_t)b->isid >> NSB_ISID_BITS)
		return false;
	k = (uint64_t)b->isid;
	k = k << NSB_LAST_BITS | b->last_size;
	k = k << NSB_MODE_BITS | b->mode;
	k = k << NSB_NINSN_BITS | b->ninsn;
	*key = k << NSB_LEN_BITS | len;
	return true;
}

/* The block nsb_key() @key of start @ip stands for. */
static void nsb_block(uint64_t ip, uint64_t key, struct dec_item *b)
{
	memset(b, 0, sizeof(*b));
	b->kind = DI_BLOCK;
	b->ip = ip;
	b->end_ip = ip + (key & ((1ULL << NSB_LEN_BITS) - 1));
	key >>= NSB_LEN_BITS;
	b->ninsn = (uint32_t)(key & ((1ULL << NSB_NINSN_BITS) - 1));
	key >>= NSB_NINSN_BITS;
	b->mode = (uint8_t)(key & ((1ULL << NSB_MODE_BITS) - 1));
	key >>= NSB_MODE_BITS;
	b->last_size = (uint8_t)(key & ((1ULL << NSB_LAST_BITS) - 1));
	b->isid = (int32_t)(key >> NSB_LAST_BITS);
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

/*
 * The per-address rows of block @b, wholly in a symbol-less module,
 * run @n times: one per instruction, or, if its code cannot be walked,
 * all of them at its start.
 */
static void nsb_count(struct dec_ctx *c, struct dec_map *fun, const struct dec_item *b, uint64_t n)
{
	struct nsb_walk w = { fun, n };

	if (!dec_walk_block(c, b, nsb_insn, &w))
		dec_map_get(fun, b->ip, 1)->v += n * b->ninsn;	/* no bytes: at its start */
}

/* Count block @b, wholly in the symbol-less module that @sc holds. */
static void prof_nosym_block(struct dec_prof *p, struct dec_ctx *c, const struct dec_symc *sc,
			     const struct dec_item *b)
{
	uint64_t key;

	if (nsb_key(b, &key))
		dec_map_get(&p->nsb, b->ip, key)->v++;
	else
		nsb_count(c, &p->fun, b, 1);
	dec_map_get(&p->dso, sc->mod->start, 0)->v += b->ninsn;
}

static void prof_merge(struct dec_prof *dst, const struct dec_prof *src)
{
	size_t i;

	for (i = 0; i < src->nsb.cap; i++)
		if (src->nsb.t[i].used)
			dec_map_get(&dst->nsb, src->nsb.t[i].a, src->nsb.t[i].b)->v += src->nsb.t[i].v;
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
	if (p->sc.sym && dec_symc_holds(&p->sc, b)) {
		prof_add(p, &p->sc, b->ip, b->ninsn);	/* in one function: no walk */
	} else if (dec_symc_holds(&p->sc, b)) {
		prof_nosym_block(p, c, &p->sc, b);	/* walked once when printed */
	} else if (!dec_walk_block(c, b, prof_insn, p)) {
		/* code that cannot be walked: all of it where it starts */
		dec_symc_lookup(&p->sc, c->syms, b->ip, pid, time);
		prof_add(p, &p->sc, b->ip, b->ninsn);
	}
}

struct profile_sink {
	struct dec_sink k;
	struct dec_prof prof;
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

/* The per-address rows of the blocks counted whole in symbol-less modules. */
static void expand_nosym_blocks(struct profile_sink *s, struct dec_stream *st)
{
	size_t i;

	for (i = 0; i < s->prof.nsb.cap; i++) {
		const struct dec_kv *e = &s->prof.nsb.t[i];
		struct dec_item b;

		if (!e->used)
			continue;
		nsb_block(e->a, e->b, &b);
		nsb_count(st->c, &s->prof.fun, &b, e->v);
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

/*
 * A run of blocks (blocks that end in no branch joined with the next, as
 * every output walks them) counted as the workers count a block that is a
 * run by itself (dec_prof_block(); a block of a longer run is kept for
 * this: add_block() in step.c).  Where libipt ends blocks without a
 * branch depends on its decoder's history, so -J and splitting change
 * them: the runs they join into do not change, and neither do the rows
 * of code that cannot be walked, all at the run's start.
 */
static void profile_insns(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b)
{
	struct profile_sink *s = (struct profile_sink *)k;

	dec_prof_block(&s->prof, st->c, st->pid, st->time, b);
}

static bool profile_run(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b)
{
	profile_insns(k, st, b);
	return true;
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
	free(s);
}

static const struct dec_sink_ops profile_ops = {
	.name = "profile",
	.needs = DEC_NEED_PROFILE | DEC_NEED_INSNS,
	.segment = profile_segment,
	.insns = profile_insns,
	.run = profile_run,
	.end = profile_end,
};

struct dec_sink *dec_sink_profile(struct dec_stream *st, FILE *f)
{
	struct profile_sink *s = dec_xcalloc(1, sizeof(*s));

	(void)st;
	dec_symc_reset(&s->prof.sc);
	s->k.ops = &profile_ops;
	s->k.f = f;
	return &s->k;
}

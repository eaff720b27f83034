// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: the output formats of Documentation/decode.rst, rendered
 * from the decoded item lists in trace order.
 */
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <Zydis/Zydis.h>

#include "decode.h"
#include "internal.h"

/* ---- a small open-addressing map: (u64, u64) -> u64 ------------------------ */

struct kv {
	uint64_t a, b, v;
	bool used;
};

struct map {
	struct kv *t;
	size_t cap, n;
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL) * 0xbf58476d1ce4e5b9ULL;

	return h ^ (h >> 31);
}

static struct kv *map_get(struct map *m, uint64_t a, uint64_t b)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct map nm = { .cap = m->cap ? m->cap * 2 : 1024 };

		nm.t = calloc(nm.cap, sizeof(*nm.t));
		if (!nm.t) {
			dec_nomem();
		}
		for (i = 0; i < m->cap; i++)
			if (m->t[i].used) {
				struct kv *d = map_get(&nm, m->t[i].a, m->t[i].b);

				d->v = m->t[i].v;
			}
		free(m->t);
		*m = nm;
	}
	for (i = mix(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct kv *e = &m->t[i];

		if (!e->used) {
			e->used = true;
			e->a = a;
			e->b = b;
			m->n++;
			return e;
		}
		if (e->a == a && e->b == b)
			return e;
	}
}

/*
 * The used entries, compacted to the front of the table; returns the
 * count.  The table is no longer a hash table after this (no map_get()),
 * but may be listed again: the slots after the entries are marked unused,
 * or a second listing (--blocks, then --drcov) would count the moved
 * entries twice.
 */
static size_t map_entries(struct map *m)
{
	size_t i, n = 0;

	for (i = 0; i < m->cap; i++)
		if (m->t[i].used)
			m->t[n++] = m->t[i];
	for (i = n; i < m->cap; i++)
		m->t[i].used = false;
	m->n = n;
	return n;
}

static int cmp_count_desc(const void *x, const void *y)
{
	const struct kv *a = x, *b = y;

	if (a->v != b->v)
		return a->v > b->v ? -1 : 1;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return a->b < b->b ? -1 : a->b > b->b;
}

static int cmp_addr(const void *x, const void *y)
{
	const struct kv *a = x, *b = y;

	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return a->b < b->b ? -1 : a->b > b->b;
}

/* ---- symbol lookups and --profile counts, for the renderer and the workers ---- */

/*
 * The function and module of the last address looked up, valid for
 * [@start, @end): consecutive instructions rarely leave a function.
 */
struct sym_cache {
	uint64_t start, end;
	const struct dec_module *mod;
	const struct dec_sym *sym;
};

static void sym_cache_reset(struct sym_cache *sc)
{
	sc->start = 1;
	sc->end = 0;
}

/* Look @ip up in process @pid's code at perf time @time, unless @sc holds it. */
static void sym_lookup(struct sym_cache *sc, const struct dec_syms *s, uint64_t ip, long pid,
		       uint64_t time)
{
	if (ip >= sc->start && ip < sc->end)
		return;
	sc->mod = dec_syms_module_at(s, ip, pid, time);
	sc->sym = dec_syms_find(sc->mod, ip);
	if (sc->sym) {
		/* valid up to the symbol's end, the next symbol, the module's end */
		const struct dec_sym *next = sc->sym + 1;

		sc->start = sc->sym->start;
		sc->end = sc->sym->end;
		if (next < sc->mod->syms + sc->mod->nr_syms && next->start < sc->end)
			sc->end = next->start;
		if (sc->mod->end < sc->end)
			sc->end = sc->mod->end;
	} else {
		/* no cache for unknown code */
		sym_cache_reset(sc);
	}
}

/*
 * Does block @b, looked up at its start, lie in the one function @sc holds
 * (or in a module without symbols, all of it one "[no symbol]")?
 */
static bool sym_holds(const struct sym_cache *sc, const struct dec_item *b)
{
	if (sc->sym)
		return b->end_ip < sc->end;
	return sc->mod && !sc->mod->nr_syms && b->end_ip < sc->mod->end;
}

/*
 * --profile counts: instructions per function (key: its start; a module
 * without a symbol there: the module's start, b = 1) and per DSO.  The
 * renderer keeps one; in profile_only mode each segment has one, made by
 * its worker (with its own symbol cache and whose code it is), which the
 * renderer adds to its own.
 */
struct dec_prof {
	struct map fun, dso;
	uint64_t unknown;	/* instructions in no image */
	struct dec_ctx *c;
	long pid;
	uint64_t time;
	struct sym_cache sc;
};

/* Count @n instructions of the function and DSO that @sc holds. */
static void prof_add(struct dec_prof *p, const struct sym_cache *sc, uint64_t n)
{
	if (sc->sym)
		map_get(&p->fun, sc->sym->start, 0)->v += n;
	else if (sc->mod)
		map_get(&p->fun, sc->mod->start, 1)->v += n;
	if (sc->mod)
		map_get(&p->dso, sc->mod->start, 0)->v += n;
	else
		p->unknown += n;
}

static void prof_merge(struct dec_prof *dst, const struct dec_prof *src)
{
	size_t i;

	for (i = 0; i < src->fun.cap; i++)
		if (src->fun.t[i].used)
			map_get(&dst->fun, src->fun.t[i].a, src->fun.t[i].b)->v += src->fun.t[i].v;
	for (i = 0; i < src->dso.cap; i++)
		if (src->dso.t[i].used)
			map_get(&dst->dso, src->dso.t[i].a, src->dso.t[i].b)->v += src->dso.t[i].v;
	dst->unknown += src->unknown;
}

struct dec_prof *dec_prof_new(void)
{
	struct dec_prof *p = calloc(1, sizeof(*p));

	if (!p) {
		dec_nomem();
	}
	sym_cache_reset(&p->sc);
	return p;
}

void dec_prof_free(struct dec_prof *p)
{
	if (!p)
		return;
	free(p->fun.t);
	free(p->dso.t);
	free(p);
}

/* One instruction of a block that crosses functions. */
static void prof_insn(void *arg, uint64_t ip, unsigned int size, bool last, const struct dec_item *b)
{
	struct dec_prof *p = arg;

	(void)size;
	(void)last;
	(void)b;
	sym_lookup(&p->sc, p->c->syms, ip, p->pid, p->time);
	prof_add(p, &p->sc, 1);
}

void dec_prof_block(struct dec_prof *p, struct dec_ctx *c, long pid, uint64_t time,
		    const struct dec_item *b)
{
	p->c = c;
	if (pid != p->pid || time != p->time) {
		p->pid = pid;
		p->time = time;
		sym_cache_reset(&p->sc);
	}
	sym_lookup(&p->sc, c->syms, b->ip, pid, time);
	if (sym_holds(&p->sc, b))
		prof_add(p, &p->sc, b->ninsn);	/* in one function: no walk */
	else
		dec_walk_block(c, b, prof_insn, p);
}

/* ---- string map for folded stacks --------------------------------------------- */

struct skv {
	char *s;
	uint64_t v;
};

struct smap {
	struct skv *t;
	size_t cap, n;
};

static uint64_t shash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ULL;
	return h;
}

static void smap_add(struct smap *m, const char *s, uint64_t v)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct smap nm = { .cap = m->cap ? m->cap * 2 : 1024 };

		nm.t = calloc(nm.cap, sizeof(*nm.t));
		if (!nm.t)
			dec_nomem();
		for (i = 0; i < m->cap; i++)
			if (m->t[i].s) {
				size_t j = shash(m->t[i].s) & (nm.cap - 1);

				while (nm.t[j].s)
					j = (j + 1) & (nm.cap - 1);
				nm.t[j] = m->t[i];
				nm.n++;
			}
		free(m->t);
		*m = nm;
	}
	for (i = shash(s) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->t[i].s) {
			m->t[i].s = strdup(s);
			if (!m->t[i].s)
				dec_nomem();
			m->t[i].v = v;
			m->n++;
			return;
		}
		if (!strcmp(m->t[i].s, s)) {
			m->t[i].v += v;
			return;
		}
	}
}

static int cmp_skv(const void *x, const void *y)
{
	const struct skv *a = x, *b = y;

	return strcmp(a->s, b->s);
}

/* ---- the renderer ------------------------------------------------------------------ */

#define MAX_STACK 4096

struct dec_render {
	struct dec_ctx *c;
	const struct dec_outputs *o;
	unsigned int tid;
	uint64_t idx;			/* instructions so far in this trace */
	/* calls / perfetto / folded: the call stack */
	int pending;			/* 1 call, 2 return from the block before */
	unsigned int depth;		/* --calls indentation */
	const char *stack[MAX_STACK];	/* folded: frame names */
	char root[96];			/* folded: the root frame, COMM-TID ("": none) */
	bool root_by_process;		/* per-CPU, switched: the root is COMM-PID */
	/* perfetto: the open spans, so that each "E" repeats its "B"'s name and args */
	struct pspan {
		const char *name;	/* the function, or NULL: named by @mod + offset */
		const struct dec_module *mod;
		uint64_t ip;		/* the callee's address */
	} *pspans;
	size_t pspans_cap;
	long ppid;			/* the track's process id (0: unknown) */
	long *ppids;			/* processes named so far ("process_name") */
	size_t nr_ppids;
	unsigned int sdepth;		/* folded / perfetto depth (may exceed MAX_STACK) */
	struct dec_prof prof;		/* --profile (its own c, pid, time, sc unused) */
	struct sym_cache sc;		/* the last instruction's function */
	/* blocks / edges / drcov */
	struct map blocks, edges;
	bool have_lb;			/* a logical block is open: lb_start..lb_end */
	uint64_t lb_start, lb_end;
	bool have_prev;
	uint64_t prev_last, prev_next;	/* last insn of the block before, its fall-through */
	/* folded */
	struct smap folded;
	char *fstack;			/* "a;b;c" for the current stack */
	size_t fstack_len, fstack_cap;
	const char *run_leaf;
	uint64_t run_count;
	bool perfetto_first;
	/* time (dec_ctx.timed): in ns since the run's first TSC when @time_ok */
	bool time_ok;
	uint64_t ns0;			/* c->t0 in ns */
	uint64_t prev_tsc;		/* the time of the block before (0: unknown) */
	uint64_t ev_tsc;		/* the newest time given to a Perfetto event */
	uint64_t ev_ps;			/* its time in ps, after the 1 ps steps (below) */
	bool have_ev_ps;
	long shown_pid;			/* --insn: the last [process PID] (-1: none) */
	/* --folded-time: the time after the block before (0: none since tracing resumed) */
	bool fold_time;
	uint64_t fold_last;
	ZydisFormatter zf;
};

/* The function of @ip in the code the renderer is in (syms' cur_pid, cur_time). */
static void lookup(struct dec_render *r, uint64_t ip)
{
	const struct dec_syms *s = r->c->syms;

	sym_lookup(&r->sc, s, ip, s ? s->cur_pid : 0, s ? s->cur_time : 0);
}

/* Name of a frame for folded stacks and spans: the function, else [dso], else [unknown]. */
static const char *frame_name(struct dec_render *r, uint64_t ip)
{
	lookup(r, ip);
	if (r->sc.sym)
		return r->sc.sym->name;
	if (r->sc.mod)
		return r->sc.mod->name;
	return "[unknown]";
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/*
 * The time column of --calls for @tsc: seconds (to the nanosecond) since
 * the run's first TSC, or TSC ticks since it when the TSC's frequency is
 * unknown; "-" when the decoder had no time there.
 */
static const char *time_col(struct dec_render *r, uint64_t tsc, char *buf, size_t len)
{
	uint64_t ns;

	if (!tsc || tsc < r->c->t0)
		return "-";
	if (r->time_ok && dec_tsc_ns(r->c, tsc, &ns) && ns >= r->ns0) {
		ns -= r->ns0;
		snprintf(buf, len, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
	} else {
		snprintf(buf, len, "%" PRIu64, tsc - r->c->t0);
	}
	return buf;
}

/*
 * A Perfetto event at the current place: at the time of the block before
 * (microseconds since the run's first TSC, never going back) when the
 * trace is timed and the TSC's frequency known, else at the instruction
 * count.
 */
static void perfetto_ev(struct dec_render *r, char ph, const struct pspan *sp)
{
	FILE *f = r->o->f[OUT_PERFETTO];
	uint64_t ns, ps;

	fprintf(f, "%s{\"ph\":\"%c\",\"pid\":%ld,\"tid\":%u,\"ts\":",
		r->perfetto_first ? "" : ",\n", ph, r->ppid, r->tid);
	if (r->time_ok) {
		if (r->prev_tsc > r->ev_tsc)
			r->ev_tsc = r->prev_tsc;
		if (!r->ev_tsc || !dec_tsc_ns(r->c, r->ev_tsc, &ns) || ns < r->ns0)
			ns = r->ns0;
		ns -= r->ns0;
		/*
		 * Strictly later than the track's event before, by 1 ps when
		 * the time is the same: speedscope pairs a "B" and an "E" of
		 * one name at one time as a zero-length span (trace-event.ts
		 * selectQueueToTakeFromNext), which is wrong for a return from
		 * f followed by the next call to f within one TSC step.
		 */
		ps = ns * 1000;
		if (r->have_ev_ps && ps <= r->ev_ps)
			ps = r->ev_ps + 1;
		r->ev_ps = ps;
		r->have_ev_ps = true;
		fprintf(f, "%" PRIu64 ".%06" PRIu64, ps / 1000000, ps % 1000000);
	} else {
		fprintf(f, "%" PRIu64, r->idx);
	}
	r->perfetto_first = false;
	fprintf(f, ",\"name\":");
	if (sp->name) {
		json_str(f, sp->name);
	} else {
		/* no symbol: DSO+offset (as --insn shows it), the address in args */
		char buf[320];

		if (sp->mod)
			snprintf(buf, sizeof(buf), "%s+%#" PRIx64, sp->mod->name, sp->ip - sp->mod->bias);
		else
			snprintf(buf, sizeof(buf), "%#" PRIx64, sp->ip);
		json_str(f, buf);
		fprintf(f, ",\"args\":{\"addr\":\"%#" PRIx64 "\"}", sp->ip);
	}
	fprintf(f, "}");
}

/* Open a span for a call to @ip (at depth r->depth, already counted). */
static void perfetto_begin(struct dec_render *r, uint64_t ip)
{
	struct pspan *sp;

	if (r->depth > r->pspans_cap) {
		r->pspans_cap = r->depth * 2;
		r->pspans = realloc(r->pspans, r->pspans_cap * sizeof(*r->pspans));
		if (!r->pspans) {
			dec_nomem();
		}
	}
	sp = &r->pspans[r->depth - 1];
	lookup(r, ip);
	sp->name = r->sc.sym ? r->sc.sym->name : NULL;
	sp->mod = r->sc.mod;
	sp->ip = ip;
	perfetto_ev(r, 'B', sp);
}

/* Close the innermost span (r->depth already lowered): "E" with the same name and args. */
static void perfetto_end(struct dec_render *r)
{
	perfetto_ev(r, 'E', &r->pspans[r->depth]);
}

static void folded_flush(struct dec_render *r)
{
	if (!r->run_count || !r->run_leaf)
		return;
	{
		size_t ll = strlen(r->run_leaf);
		char *k = malloc(r->fstack_len + ll + 2);

		if (!k)
			dec_nomem();
		memcpy(k, r->fstack, r->fstack_len);
		if (r->fstack_len)
			k[r->fstack_len] = ';';
		memcpy(k + r->fstack_len + (r->fstack_len ? 1 : 0), r->run_leaf, ll + 1);
		smap_add(&r->folded, k, r->run_count);
		free(k);
	}
	r->run_count = 0;
}

static void fstack_rebuild(struct dec_render *r)
{
	unsigned int i, n = r->sdepth < MAX_STACK ? r->sdepth : MAX_STACK;
	size_t need = strlen(r->root) + 2;

	for (i = 0; i < n; i++)
		need += strlen(r->stack[i]) + 1;
	if (need > r->fstack_cap) {
		r->fstack_cap = need * 2;
		r->fstack = realloc(r->fstack, r->fstack_cap);
		if (!r->fstack)
			dec_nomem();
	}
	r->fstack_len = strlen(r->root);
	memcpy(r->fstack, r->root, r->fstack_len);
	for (i = 0; i < n; i++) {
		size_t l = strlen(r->stack[i]);

		if (r->fstack_len)
			r->fstack[r->fstack_len++] = ';';
		memcpy(r->fstack + r->fstack_len, r->stack[i], l);
		r->fstack_len += l;
	}
	r->fstack[r->fstack_len] = 0;
}

/*
 * What --folded adds for block @b: its instructions, or with
 * --folded-time the time from the block before to this one's end (ns, or
 * TSC ticks when the frequency is unknown); nothing for the first block
 * after tracing resumed, so time with tracing off is not counted.
 */
static uint64_t fold_units(struct dec_render *r, const struct dec_item *b)
{
	uint64_t t, dt = 0;

	if (!r->fold_time)
		return b->ninsn;
	if (!b->tsc)
		return 0;
	if (!r->time_ok || !dec_tsc_ns(r->c, b->tsc, &t))
		t = b->tsc;
	if (r->fold_last && t > r->fold_last)
		dt = t - r->fold_last;
	if (t > r->fold_last)
		r->fold_last = t;
	return dt;
}

/* One instruction, in order. */
static void on_insn(void *arg, uint64_t ip, unsigned int size, bool last, const struct dec_item *b)
{
	struct dec_render *r = arg;
	const struct dec_outputs *o = r->o;
	char sbuf[512];

	(void)size;
	if (o->f[OUT_INSN]) {
		FILE *f = o->f[OUT_INSN];

		fprintf(f, "%016" PRIx64 "  %-40s", ip, dec_syms_fmt(r->c->syms, ip, sbuf, sizeof(sbuf)));
		if (o->lines) {
			char lbuf[256];
			const char *l = dec_syms_line(r->c->syms, ip, lbuf, sizeof(lbuf));

			fprintf(f, o->disasm ? "  %-24s" : "  %s", l ? l : "-");
		}
		if (o->disasm) {
			ZydisDecodedInstruction zi;
			ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
			char text[256];
			size_t n = 0;
			const uint8_t *bytes = dec_code_at(r->c, b->isid, ip, &n);

			if (bytes && n >= size &&
			    ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec_zydis(b->mode), bytes, size, &zi, ops)) &&
			    ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&r->zf, &zi, ops,
									  zi.operand_count_visible,
									  text, sizeof(text), ip, NULL)))
				fprintf(f, "  %s", text);
			else
				fprintf(f, "  (bytes unavailable)");
		}
		fputc('\n', f);
	}
	if (o->f[OUT_PROFILE]) {
		lookup(r, ip);
		prof_add(&r->prof, &r->sc, 1);
	}
	if (o->f[OUT_FOLDED]) {
		const char *leaf = frame_name(r, ip);

		if (leaf != r->run_leaf) {
			folded_flush(r);
			r->run_leaf = leaf;
		}
		if (!r->fold_time)
			r->run_count++;
		else if (last)
			r->run_count += fold_units(r, b);
		if (last && b->iclass == ptic_call) {
			folded_flush(r);
			if (r->sdepth < MAX_STACK)
				r->stack[r->sdepth] = leaf;
			r->sdepth++;
			fstack_rebuild(r);
		} else if (last && b->iclass == ptic_return && r->sdepth) {
			folded_flush(r);
			r->sdepth--;
			fstack_rebuild(r);
		}
	}
	r->idx++;
}

/* Does block @b lie in one symbol (so that its instructions need no walk)? */
static bool in_one_symbol(struct dec_render *r, const struct dec_item *b)
{
	lookup(r, b->ip);
	return sym_holds(&r->sc, b);
}

/* on_insn() for all of block @b at once, when in_one_symbol(). */
static void on_insns(struct dec_render *r, const struct dec_item *b)
{
	const struct dec_outputs *o = r->o;

	if (o->f[OUT_PROFILE])
		prof_add(&r->prof, &r->sc, b->ninsn);
	if (o->f[OUT_FOLDED]) {
		const char *leaf = r->sc.sym ? r->sc.sym->name : r->sc.mod->name;

		if (leaf != r->run_leaf) {
			folded_flush(r);
			r->run_leaf = leaf;
		}
		r->run_count += fold_units(r, b);
		if (b->iclass == ptic_call) {
			folded_flush(r);
			if (r->sdepth < MAX_STACK)
				r->stack[r->sdepth] = leaf;
			r->sdepth++;
			fstack_rebuild(r);
		} else if (b->iclass == ptic_return && r->sdepth) {
			folded_flush(r);
			r->sdepth--;
			fstack_rebuild(r);
		}
	}
	r->idx += b->ninsn;
}

/* The call stack for --calls and --perfetto, at the start of a block. */
static void on_block_start(struct dec_render *r, const struct dec_item *b)
{
	const struct dec_outputs *o = r->o;
	char sbuf[512], tbuf[32];

	if (r->pending == 1) {
		if (o->f[OUT_CALLS]) {
			fprintf(o->f[OUT_CALLS], "%10" PRIu64 " ", r->idx);
			if (r->c->timed)
				fprintf(o->f[OUT_CALLS], "%14s ", time_col(r, r->prev_tsc, tbuf, sizeof(tbuf)));
			fprintf(o->f[OUT_CALLS], "%*s> %s %#" PRIx64 "\n",
				(int)(2 * r->depth), "", dec_syms_fmt(r->c->syms, b->ip, sbuf, sizeof(sbuf)),
				b->ip);
		}
		r->depth++;
		if (o->f[OUT_PERFETTO])
			perfetto_begin(r, b->ip);
	} else if (r->pending == 2) {
		if (r->depth) {
			r->depth--;
			if (o->f[OUT_PERFETTO])
				perfetto_end(r);
		}
		if (o->f[OUT_CALLS]) {
			fprintf(o->f[OUT_CALLS], "%10" PRIu64 " ", r->idx);
			if (r->c->timed)
				fprintf(o->f[OUT_CALLS], "%14s ", time_col(r, r->prev_tsc, tbuf, sizeof(tbuf)));
			fprintf(o->f[OUT_CALLS], "%*s< %s %#" PRIx64 "\n",
				(int)(2 * r->depth), "", dec_syms_fmt(r->c->syms, b->ip, sbuf, sizeof(sbuf)),
				b->ip);
		}
	}
	r->pending = 0;
}

/*
 * Blocks for --blocks and --drcov: libipt's blocks, joined where one
 * continues straight into the next without a branch between them, so that
 * a block is the same however libipt (or a segment boundary) split it: a
 * maximal straight-line run ending in a taken branch, a call or a jump,
 * a far transfer, or a gap in the trace.
 */
static void lblock_end(struct dec_render *r)
{
	if (r->have_lb)
		map_get(&r->blocks, r->lb_start, r->lb_end)->v++;
	r->have_lb = false;
}

static void lblock(struct dec_render *r, const struct dec_item *it, uint64_t end)
{
	if (!r->have_lb || it->ip != r->lb_end) {
		lblock_end(r);
		r->have_lb = true;
		r->lb_start = it->ip;
	}
	r->lb_end = end;
	if (it->iclass != ptic_other && it->iclass != ptic_cond_jump)
		lblock_end(r);
}

void dec_render_segment(struct dec_render *r, const struct dec_segment *seg)
{
	const struct dec_outputs *o;
	size_t i;

	if (!r)
		return;
	o = r->o;
	if (seg->prof) {
		/* profile_only: the worker counted the blocks; add its counts */
		prof_merge(&r->prof, seg->prof);
		uint64_t in_items = 0;

		for (i = seg->skip; i < seg->nr; i++)
			if (seg->items[i].kind == DI_BLOCK)
				in_items += seg->items[i].ninsn;
		r->idx += seg->insns - in_items;	/* the items count theirs below */
	}
	{
		for (i = seg->skip; i < seg->nr; i++) {
			const struct dec_item *it = &seg->items[i];
			uint64_t fall = 0;
			bool have_fall = false;

			switch (it->kind) {
			case DI_BLOCK:
				on_block_start(r, it);
				if (r->have_prev && it->ip != r->prev_next &&
				    (o->f[OUT_BLOCKS] || o->f[OUT_DRCOV]))
					map_get(&r->edges, r->prev_last, it->ip)->v++;
				{
					/* walk the instructions; learn the last one's size */
					unsigned int last_size;
					size_t n;

					if (!o->f[OUT_INSN] && (o->f[OUT_PROFILE] || o->f[OUT_FOLDED]) &&
					    in_one_symbol(r, it)) {
						/* the whole block is in one function: no walk */
						on_insns(r, it);
					} else if (o->f[OUT_INSN] || o->f[OUT_PROFILE] || o->f[OUT_FOLDED]) {
						uint64_t before = r->idx;

						n = dec_walk_block(r->c, it, on_insn, r);
						if (n < it->ninsn) {
							r->idx = before + it->ninsn;
							if (o->f[OUT_INSN])
								fprintf(o->f[OUT_INSN],
									"[%" PRIu32 " instructions from %#" PRIx64
									" not shown: their code is unreadable]\n",
									it->ninsn - (uint32_t)n, it->ip);
						}
					} else {
						r->idx += it->ninsn;
					}
					last_size = it->last_size;
					if (!last_size && (o->f[OUT_BLOCKS] || o->f[OUT_DRCOV]))
						last_size = dec_insn_size(r->c, it->isid, it->end_ip, it->mode, NULL);
					if (last_size) {
						fall = it->end_ip + last_size;
						have_fall = true;
					}
					if (o->f[OUT_BLOCKS] || o->f[OUT_DRCOV])
						lblock(r, it, have_fall ? fall : it->end_ip + 1);
				}
				r->have_prev = have_fall;
				if (it->tsc)
					r->prev_tsc = it->tsc;
				r->prev_last = it->end_ip;
				r->prev_next = fall;
				if (it->iclass == ptic_call)
					r->pending = 1;
				else if (it->iclass == ptic_return)
					r->pending = 2;
				break;
			case DI_GAP:
				lblock_end(r);
				r->have_prev = false;
				r->pending = 0;
				r->fold_last = 0;
				if (o->f[OUT_INSN])
					fprintf(o->f[OUT_INSN],
						"[lost trace: %s at offset %#" PRIx64 "%s%s, %" PRIu64
						" bytes skipped to the next PSB]\n",
						dec_gap_name((enum dec_gap)it->gap), it->off,
						it->code < 0 ? ": " : "",
						it->code < 0 ? pt_errstr(pt_errcode(it->code)) : "",
						it->skipped);
				if (o->f[OUT_CALLS])
					fprintf(o->f[OUT_CALLS], "%10" PRIu64 " [lost trace: %s at offset %#" PRIx64
						"]\n", r->idx, dec_gap_name((enum dec_gap)it->gap), it->off);
				break;
			case DI_ENABLED:
				lblock_end(r);
				/* --folded-time counts from the enable, not from before it */
				r->fold_last = 0;
				if (r->fold_time && it->tsc &&
				    !(r->time_ok && dec_tsc_ns(r->c, it->tsc, &r->fold_last)))
					r->fold_last = it->tsc;
				if (o->f[OUT_INSN])
					fprintf(o->f[OUT_INSN], "[enabled at %#" PRIx64 "]\n", it->ip);
				break;
			case DI_DISABLED:
				if (o->f[OUT_INSN])
					fprintf(o->f[OUT_INSN], "[disabled]\n");
				break;
			case DI_ASYNC:
				if (o->f[OUT_INSN])
					fprintf(o->f[OUT_INSN], "[interrupt at %#" PRIx64 "]\n", it->ip);
				break;
			case DI_EOS:
				if (o->f[OUT_INSN])
					fprintf(o->f[OUT_INSN], "[end of trace]\n");
				break;
			case DI_PROCESS:
				/* per-CPU switching: symbols of that process from here on */
				if (r->c->syms) {
					uint64_t ns = 0;

					r->c->syms->cur_pid = it->code;
					/* modules mapped then (mappings in time order) */
					if (!r->c->in->timed_maps || !it->tsc ||
					    !dec_tsc_ns(r->c, it->tsc, &ns))
						ns = 0;
					r->c->syms->cur_time = ns;
				}
				sym_cache_reset(&r->sc);
				/* folded, per CPU: each process's stacks under its own root */
				if (o->f[OUT_FOLDED] && r->root_by_process && it->code != r->shown_pid) {
					const char *comm = dec_input_comm(r->c->in, it->code, 0);

					folded_flush(r);
					if (it->code > 0)
						snprintf(r->root, sizeof(r->root), "%s-%d",
							 comm ? comm : "[unknown]", it->code);
					else
						r->root[0] = 0;
					fstack_rebuild(r);
				}
				/* each segment starts with one: shown when it changes */
				if (o->f[OUT_INSN] && it->code != r->shown_pid)
					fprintf(o->f[OUT_INSN], "[process %d]\n", it->code);
				r->shown_pid = it->code;
				break;
			}
		}
	}
}

void dec_render_trace_end(struct dec_render *r)
{
	const struct dec_outputs *o;

	if (!r)
		return;
	o = r->o;
	lblock_end(r);
	if (o->f[OUT_FOLDED])
		folded_flush(r);
	if (o->f[OUT_PERFETTO])
		while (r->depth) {
			r->depth--;
			perfetto_end(r);
		}
}

static const char *mod_name_at(const struct dec_syms *s, uint64_t start)
{
	const struct dec_module *m = dec_syms_module(s, start);

	return m ? m->name : "[unknown]";
}

static void print_profile(struct dec_render *r, uint64_t total)
{
	FILE *f = r->o->f[OUT_PROFILE];
	size_t n, i;
	double t = total ? (double)total : 1.0;

	fprintf(f, "# flat profile: %" PRIu64 " instructions\n", total);
	fprintf(f, "# %10s %7s  %-20s %-32s %s\n", "insns", "share", "dso", "function", "address");
	n = map_entries(&r->prof.fun);
	dec_sort(r->prof.fun.t, n, sizeof(*r->prof.fun.t), cmp_count_desc);
	for (i = 0; i < n; i++) {
		const struct kv *e = &r->prof.fun.t[i];
		const struct dec_module *m = dec_syms_module(r->c->syms, e->a);
		const struct dec_sym *y = e->b ? NULL : dec_syms_find(m, e->a);

		fprintf(f, "%12" PRIu64 " %6.2f%%  %-20s %-32s %#" PRIx64 "\n", e->v,
			100.0 * (double)e->v / t, m ? m->name : "[unknown]",
			y ? y->name : "[no symbol]", e->a);
	}
	if (r->prof.unknown)
		fprintf(f, "%12" PRIu64 " %6.2f%%  %-20s %-32s -\n", r->prof.unknown,
			100.0 * (double)r->prof.unknown / t, "[unknown]", "[no image]");
	fprintf(f, "# per DSO\n");
	n = map_entries(&r->prof.dso);
	dec_sort(r->prof.dso.t, n, sizeof(*r->prof.dso.t), cmp_count_desc);
	for (i = 0; i < n; i++)
		fprintf(f, "%12" PRIu64 " %6.2f%%  %s\n", r->prof.dso.t[i].v,
			100.0 * (double)r->prof.dso.t[i].v / t, mod_name_at(r->c->syms, r->prof.dso.t[i].a));
	if (r->prof.unknown)
		fprintf(f, "%12" PRIu64 " %6.2f%%  [unknown]\n", r->prof.unknown,
			100.0 * (double)r->prof.unknown / t);
}

static void print_blocks(struct dec_render *r)
{
	FILE *f = r->o->f[OUT_BLOCKS];
	size_t n, i;

	n = map_entries(&r->blocks);
	dec_sort(r->blocks.t, n, sizeof(*r->blocks.t), cmp_addr);
	for (i = 0; i < n; i++)
		fprintf(f, "block %#" PRIx64 " %#" PRIx64 " %" PRIu64 "\n", r->blocks.t[i].a,
			r->blocks.t[i].b, r->blocks.t[i].v);
	n = map_entries(&r->edges);
	dec_sort(r->edges.t, n, sizeof(*r->edges.t), cmp_addr);
	for (i = 0; i < n; i++)
		fprintf(f, "edge %#" PRIx64 " %#" PRIx64 " %" PRIu64 "\n", r->edges.t[i].a,
			r->edges.t[i].b, r->edges.t[i].v);
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

static void print_drcov(struct dec_render *r)
{
	FILE *f = r->o->f[OUT_DRCOV];
	const struct dec_syms *s = r->c->syms;
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
	n = map_entries(&r->blocks);
	for (i = 0; i < n; i++) {
		const struct dec_module *mod = dec_syms_module(s, r->blocks.t[i].a);
		uint64_t a = r->blocks.t[i].a, e = r->blocks.t[i].b;
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

struct dec_render *dec_render_begin(struct dec_ctx *c, const struct dec_outputs *o)
{
	struct dec_render *r;
	size_t i;

	for (i = 0; i < OUT_NR && !o->f[i]; i++)
		;
	if (i == OUT_NR)	/* nothing wanted: the summary needs no rendering */
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		dec_nomem();
	}
	r->c = c;
	r->o = o;
	ZydisFormatterInit(&r->zf, ZYDIS_FORMATTER_STYLE_INTEL);
	sym_cache_reset(&r->sc);
	r->perfetto_first = true;
	r->time_ok = c->timed && dec_tsc_ns(c, c->t0, &r->ns0);
	r->fold_time = o->f[OUT_FOLDED] && o->folded_time && c->timed;
	if (o->f[OUT_FOLDED] && o->folded_time && !c->timed)
		fprintf(stderr, "ipttool: decode: --folded-time: the trace has no TSC packets "
			"(record with --tsc): --folded counts instructions\n");
	if (o->f[OUT_PERFETTO]) {
		/*
		 * What "ts" is, in the trace-event format's free-form
		 * "otherData" (chrome://tracing) and in "metadata" (Perfetto
		 * keeps it as json_metadata.*): an untimed trace's "ts" are
		 * instruction numbers, shown as microseconds.
		 */
		char meta[512];

		snprintf(meta, sizeof(meta), "{\"generator\":\"ipttool decode\",\"ts_unit\":\"%s\","
			 "\"ts_note\":\"%s\"}", r->time_ok ? "microseconds" : "instructions",
			 r->time_ok ? "ts: microseconds since the first TSC of the decode" :
			 c->timed ? "untimed: the TSC frequency is unknown; ts is the instruction "
				    "number of each trace, shown as microseconds, not a time" :
			 "untimed: the trace has no TSC packets; ts is the instruction number of "
			 "each trace, shown as microseconds, not a time");
		fprintf(o->f[OUT_PERFETTO], "{\"displayTimeUnit\":\"ns\",\"otherData\":%s,"
			"\"metadata\":%s,\"traceEvents\":[\n", meta, meta);
	}
	return r;
}

void dec_render_trace_begin(struct dec_render *r, const struct dec_trace_result *res, size_t i)
{
	const struct dec_outputs *o;

	if (!r)
		return;
	o = r->o;
	r->tid = res->trace->tid > 0 ? (unsigned int)res->trace->tid :
		 res->trace->cpu >= 0 ? (unsigned int)res->trace->cpu : (unsigned int)i;
	if (r->c->syms) {
		r->c->syms->cur_pid = res->trace->pid;
		r->c->syms->cur_time = 0;
	}
	sym_cache_reset(&r->sc);	/* another process: forget the symbol cache */
	r->idx = 0;
	r->depth = r->sdepth = 0;
	r->pending = 0;
	r->have_prev = false;
	r->prev_tsc = r->ev_tsc = r->fold_last = 0;
	r->ev_ps = 0;
	r->have_ev_ps = false;
	r->shown_pid = res->trace->pid > 0 ? res->trace->pid : -1;
	r->run_leaf = NULL;
	r->run_count = 0;
	/* folded: a thread's stacks under its own root, COMM-TID */
	r->root[0] = 0;
	r->root_by_process = res->trace->tid <= 0 && r->c->in->nr_sched;
	if (res->trace->tid > 0) {
		const char *comm = dec_input_comm(r->c->in, res->trace->pid, res->trace->tid);

		snprintf(r->root, sizeof(r->root), "%s-%ld", comm ? comm : "[unknown]",
			 res->trace->tid);
	}
	fstack_rebuild(r);
	if (o->f[OUT_PERFETTO]) {
		FILE *f = o->f[OUT_PERFETTO];
		const char *comm;
		char name[128];
		size_t k;

		/*
		 * The track's process: the trace's own (per thread), else the
		 * one process the decode is about (--pid, the capture's
		 * program); 0 when unknown (raw traces, per-CPU switching).
		 */
		r->ppid = res->trace->pid > 0 ? res->trace->pid :
			  r->c->in->pid > 0 ? r->c->in->pid :
			  !r->c->in->nr_sched && r->c->in->program_pid > 0 ? r->c->in->program_pid : 0;
		for (k = 0; k < r->nr_ppids && r->ppids[k] != r->ppid; k++)
			;
		if (k == r->nr_ppids) {
			r->ppids = realloc(r->ppids, (r->nr_ppids + 1) * sizeof(*r->ppids));
			if (!r->ppids)
				dec_nomem();
			r->ppids[r->nr_ppids++] = r->ppid;
			comm = r->ppid > 0 ? dec_input_comm(r->c->in, r->ppid, 0) : NULL;
			if (comm)
				snprintf(name, sizeof(name), "%s", comm);
			else if (r->ppid > 0)
				snprintf(name, sizeof(name), "process %ld", r->ppid);
			else
				snprintf(name, sizeof(name), "unknown process");
			fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%ld,\"tid\":%u,"
				"\"args\":{\"name\":", r->perfetto_first ? "" : ",\n", r->ppid, r->tid);
			json_str(f, name);
			fprintf(f, "}}");
			r->perfetto_first = false;
		}
		if (res->trace->tid > 0) {
			comm = dec_input_comm(r->c->in, res->trace->pid, res->trace->tid);
			if (comm)
				snprintf(name, sizeof(name), "%s (thread %ld)", comm, res->trace->tid);
			else
				snprintf(name, sizeof(name), "thread %ld", res->trace->tid);
		} else {
			snprintf(name, sizeof(name), res->trace->cpu >= 0 ? "cpu%d" : "trace%d",
				 res->trace->cpu >= 0 ? res->trace->cpu : (int)i);
		}
		fprintf(f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%ld,\"tid\":%u,"
			"\"args\":{\"name\":", r->perfetto_first ? "" : ",\n", r->ppid, r->tid);
		json_str(f, name);
		fprintf(f, "}}");
		r->perfetto_first = false;
	}
	if (o->f[OUT_INSN] && r->c->nr_res > 1)
		fprintf(o->f[OUT_INSN], "[trace %s]\n", res->trace->file);
	if (o->f[OUT_CALLS] && r->c->nr_res > 1)
		fprintf(o->f[OUT_CALLS], "[trace %s]\n", res->trace->file);
}

void dec_render_end(struct dec_render *r)
{
	const struct dec_outputs *o;
	uint64_t total = 0;
	size_t i, n;

	if (!r)
		return;
	o = r->o;
	if (r->c->syms)
		r->c->syms->cur_pid = 0;	/* the summaries span every process */
	for (i = 0; i < r->c->nr_res; i++)
		total += r->c->res[i].insns;
	if (o->f[OUT_PERFETTO])
		fprintf(o->f[OUT_PERFETTO], "\n]}\n");
	if (o->f[OUT_PROFILE])
		print_profile(r, total);
	if (o->f[OUT_FOLDED]) {
		n = 0;
		for (i = 0; i < r->folded.cap; i++)
			if (r->folded.t[i].s)
				r->folded.t[n++] = r->folded.t[i];
		dec_sort(r->folded.t, n, sizeof(*r->folded.t), cmp_skv);
		for (i = 0; i < n; i++) {
			fprintf(o->f[OUT_FOLDED], "%s %" PRIu64 "\n", r->folded.t[i].s, r->folded.t[i].v);
			free(r->folded.t[i].s);
		}
	}
	if (o->f[OUT_BLOCKS])
		print_blocks(r);
	if (o->f[OUT_DRCOV])
		print_drcov(r);
	free(r->prof.fun.t);
	free(r->prof.dso.t);
	free(r->blocks.t);
	free(r->edges.t);
	free(r->folded.t);
	free(r->fstack);
	free(r->pspans);
	free(r->ppids);
	free(r);
}

/* ---- packets and the summary ------------------------------------------------------------ */

static const char *pkt_name(enum pt_packet_type t)
{
	switch (t) {
	case ppt_pad: return "pad";
	case ppt_psb: return "psb";
	case ppt_psbend: return "psbend";
	case ppt_fup: return "fup";
	case ppt_tip: return "tip";
	case ppt_tip_pge: return "tip.pge";
	case ppt_tip_pgd: return "tip.pgd";
	case ppt_tnt_8: return "tnt.8";
	case ppt_tnt_64: return "tnt.64";
	case ppt_mode: return "mode";
	case ppt_pip: return "pip";
	case ppt_vmcs: return "vmcs";
	case ppt_cbr: return "cbr";
	case ppt_tsc: return "tsc";
	case ppt_tma: return "tma";
	case ppt_mtc: return "mtc";
	case ppt_cyc: return "cyc";
	case ppt_stop: return "stop";
	case ppt_ovf: return "ovf";
	case ppt_mnt: return "mnt";
	case ppt_exstop: return "exstop";
	case ppt_mwait: return "mwait";
	case ppt_pwre: return "pwre";
	case ppt_pwrx: return "pwrx";
	case ppt_ptw: return "ptw";
	default: return "unknown";
	}
}

long dec_dump_packets(const struct dec_ctx *c, const uint8_t *buf, size_t len, FILE *f)
{
	struct pt_config cfg = c->cfg;
	struct pt_packet_decoder *pd;
	long n = 0;
	int st;

	if (!len)
		return 0;
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return -1;
	st = pt_pkt_sync_forward(pd);
	for (;;) {
		struct pt_packet p;
		uint64_t off = 0;

		if (st < 0) {
			if (st == -pte_eos)
				break;
			pt_pkt_get_offset(pd, &off);
			fprintf(f, "%016" PRIx64 "  [error: %s; skipping to the next PSB]\n", off,
				pt_errstr(pt_errcode(st)));
			st = pt_pkt_sync_forward(pd);
			continue;
		}
		pt_pkt_get_offset(pd, &off);
		st = pt_pkt_next(pd, &p, sizeof(p));
		if (st < 0)
			continue;
		n++;
		fprintf(f, "%016" PRIx64 "  %-8s", off, pkt_name(p.type));
		switch (p.type) {
		case ppt_fup:
		case ppt_tip:
		case ppt_tip_pge:
		case ppt_tip_pgd:
			if (p.payload.ip.ipc == pt_ipc_suppressed)
				fprintf(f, " (suppressed)");
			else
				fprintf(f, " %d: %#" PRIx64, (int)p.payload.ip.ipc, p.payload.ip.ip);
			break;
		case ppt_tnt_8:
		case ppt_tnt_64: {
			int b;

			fputc(' ', f);
			for (b = p.payload.tnt.bit_size - 1; b >= 0; b--)
				fputc(p.payload.tnt.payload >> b & 1 ? '!' : '.', f);
			break;
		}
		case ppt_mode:
			if (p.payload.mode.leaf == pt_mol_exec)
				fprintf(f, " exec cs.l=%u cs.d=%u", p.payload.mode.bits.exec.csl,
					p.payload.mode.bits.exec.csd);
			else
				fprintf(f, " tsx intx=%u abrt=%u", p.payload.mode.bits.tsx.intx,
					p.payload.mode.bits.tsx.abrt);
			break;
		case ppt_tsc:
			fprintf(f, " %#" PRIx64, p.payload.tsc.tsc);
			break;
		case ppt_cbr:
			fprintf(f, " %u", p.payload.cbr.ratio);
			break;
		case ppt_mtc:
			fprintf(f, " %#x", p.payload.mtc.ctc);
			break;
		case ppt_cyc:
			fprintf(f, " %#" PRIx64, p.payload.cyc.value);
			break;
		case ppt_pip:
			fprintf(f, " cr3=%#" PRIx64, p.payload.pip.cr3);
			break;
		case ppt_tma:
			fprintf(f, " ctc=%#x fc=%#x", p.payload.tma.ctc, p.payload.tma.fc);
			break;
		default:
			break;
		}
		fputc('\n', f);
	}
	pt_pkt_free_decoder(pd);
	return n;
}

static const char *const gap_key[GAP_NR] = {
	[GAP_NONE] = "none", [GAP_OVERFLOW] = "overflow", [GAP_DECODE] = "decode_error",
	[GAP_NOMAP] = "no_image", [GAP_PRE_PSB] = "before_first_psb",
	[GAP_LOOP] = "endless_code",
};

/* 64-bit addresses and TSC values as "0x..." strings: jq rounds numbers above 2^53. */
static struct json_object *json_hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_object_new_string(buf);
}

struct json_object *dec_summary_json(const struct dec_ctx *c)
{
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
	uint64_t insns = 0, skipped = 0, errors = 0;
	size_t i;
	int g;

	json_object_object_add(o, "input", json_object_new_string(c->in->kind));
	json_object_object_add(o, "decoder", json_object_new_string(c->opt.insn_decoder ? "insn" :
								    "block"));
	if (c->in->have_cpu) {
		char cpu[32];

		snprintf(cpu, sizeof(cpu), "%u/%u/%u", c->in->cpu.family, c->in->cpu.model,
			 c->in->cpu.stepping);
		json_object_object_add(o, "cpu", json_object_new_string(cpu));
	} else {
		json_object_object_add(o, "cpu", NULL);
	}
	json_object_object_add(o, "note", c->in->note[0] ? json_object_new_string(c->in->note) : NULL);
	json_object_object_add(o, "errata_note",
			       c->errata_note[0] ? json_object_new_string(c->errata_note) : NULL);
	for (i = 0; i < c->nr_res; i++) {
		const struct dec_trace_result *r = &c->res[i];
		struct json_object *t = json_object_new_object(), *sk = json_object_new_object();
		struct json_object *errs = json_object_new_array();
		uint64_t ts = 0;

		json_object_object_add(t, "file", json_object_new_string(r->trace->file));
		if (r->trace->cpu >= 0)
			json_object_object_add(t, "cpu", json_object_new_int(r->trace->cpu));
		if (r->trace->tid > 0)
			json_object_object_add(t, "tid", json_object_new_int64(r->trace->tid));
		if (r->trace->pid > 0)
			json_object_object_add(t, "pid", json_object_new_int64(r->trace->pid));
		json_object_object_add(t, "bytes", json_object_new_int64((int64_t)r->len));
		json_object_object_add(t, "segments", json_object_new_int64((int64_t)r->nr_segs));
		json_object_object_add(t, "instructions", json_object_new_int64((int64_t)r->insns));
		for (g = GAP_OVERFLOW; g < GAP_NR; g++) {
			struct json_object *e = json_object_new_object();

			json_object_object_add(e, "count", json_object_new_int64((int64_t)r->gaps[g]));
			json_object_object_add(e, "bytes", json_object_new_int64((int64_t)r->gap_bytes[g]));
			json_object_object_add(sk, gap_key[g], e);
			ts += r->gap_bytes[g];
			if (g != GAP_PRE_PSB)
				errors += r->gaps[g];
		}
		json_object_object_add(t, "skipped", sk);
		json_object_object_add(t, "bytes_skipped", json_object_new_int64((int64_t)ts));
		for (size_t k = 0; k < r->nr_gap_items; k++) {
			const struct dec_item *it = &r->gap_items[k];
			struct json_object *e;

			if (json_object_array_length(errs) >= 100)
				break;
			e = json_object_new_object();
			json_object_object_add(e, "reason", json_object_new_string(gap_key[it->gap]));
			json_object_object_add(e, "offset", json_object_new_int64((int64_t)it->off));
			if (it->code < 0)
				json_object_object_add(e, "error", json_object_new_string(
					pt_errstr(pt_errcode(it->code))));
			if (it->ip)
				json_object_object_add(e, "ip", json_hex(it->ip));
			if (it->tsc)
				json_object_object_add(e, "tsc", json_hex(it->tsc));
			json_object_object_add(e, "bytes_skipped",
					       json_object_new_int64((int64_t)it->skipped));
			json_object_array_add(errs, e);
		}
		json_object_object_add(t, "errors", errs);
		json_object_object_add(t, "fatal", r->error[0] ? json_object_new_string(r->error) : NULL);
		json_object_array_add(arr, t);
		insns += r->insns;
		skipped += ts;
	}
	{
		struct json_object *tm = json_object_new_object();
		uint64_t ns;
		bool conv = c->timed && dec_tsc_ns(c, c->t0, &ns);

		json_object_object_add(tm, "tsc", json_object_new_boolean(c->timed));
		json_object_object_add(tm, "first_tsc", c->timed ?
				       json_hex(c->t0) : NULL);
		json_object_object_add(tm, "tsc_hz", c->tsc_hz ?
				       json_object_new_int64((int64_t)c->tsc_hz) : NULL);
		json_object_object_add(tm, "time_conv", json_object_new_boolean(c->in->have_time_conv));
		json_object_object_add(tm, "first_ns", conv ? json_object_new_int64((int64_t)ns) : NULL);
		json_object_object_add(tm, "unit", json_object_new_string(
			!c->timed ? "instructions" : conv ? "ns" : "tsc"));
		json_object_object_add(o, "time", tm);
	}
	json_object_object_add(o, "instructions", json_object_new_int64((int64_t)insns));
	json_object_object_add(o, "bytes_skipped", json_object_new_int64((int64_t)skipped));
	json_object_object_add(o, "errors", json_object_new_int64((int64_t)errors));
	json_object_object_add(o, "traces", arr);
	return o;
}

void dec_summary_text(const struct dec_ctx *c, FILE *f)
{
	uint64_t insns = 0;
	size_t i;
	int g;

	if (c->in->note[0])
		fprintf(f, "note: %s\n", c->in->note);
	if (c->errata_note[0])
		fprintf(f, "note: %s\n", c->errata_note);
	for (i = 0; i < c->nr_res; i++) {
		const struct dec_trace_result *r = &c->res[i];
		size_t shown = 0;

		if (r->error[0])
			fprintf(f, "%s: %s\n", r->trace->file, r->error);
		for (size_t k = 0; k < r->nr_gap_items; k++) {
			const struct dec_item *it = &r->gap_items[k];

			if (shown++ >= 20)
				continue;
			fprintf(f, "%s: offset %#" PRIx64, r->trace->file, it->off);
			if (it->tsc)
				fprintf(f, " (tsc %#" PRIx64 ")", it->tsc);
			fprintf(f, ": %s", dec_gap_name((enum dec_gap)it->gap));
			if (it->code < 0)
				fprintf(f, " (%s)", pt_errstr(pt_errcode(it->code)));
			if (it->gap == GAP_NOMAP && it->ip)
				fprintf(f, " for code at %#" PRIx64 " (add the binary with --elf/--raw)",
					it->ip);
			fprintf(f, "; %" PRIu64 " bytes skipped to the next PSB\n", it->skipped);
		}
		if (shown > 20)
			fprintf(f, "%s: ... %zu more errors (-j lists the first 100)\n", r->trace->file,
				shown - 20);
		fprintf(f, "%s: %" PRIu64 " instructions from %zu bytes in %zu segments", r->trace->file,
			r->insns, r->len, r->nr_segs);
		for (g = GAP_OVERFLOW; g < GAP_NR; g++)
			if (r->gaps[g])
				fprintf(f, "; %" PRIu64 " bytes skipped (%s, %" PRIu64 "x)", r->gap_bytes[g],
					dec_gap_name((enum dec_gap)g), r->gaps[g]);
		fputc('\n', f);
		insns += r->insns;
	}
	if (c->timed) {
		uint64_t ns;

		if (dec_tsc_ns(c, c->t0, &ns))
			fprintf(f, "time: from TSC %#" PRIx64 " (%s), in seconds\n", c->t0,
				c->in->have_time_conv ? "perf time conversion" : "CPUID 0x15 frequency");
		else
			fprintf(f, "time: from TSC %#" PRIx64 ", in TSC ticks (the TSC frequency is "
				"unknown: give --cpuid-0x15 EAX/EBX/ECX)\n", c->t0);
	}
	fprintf(f, "decoded %" PRIu64 " instructions from %zu trace%s\n", insns, c->nr_res,
		c->nr_res == 1 ? "" : "s");
}

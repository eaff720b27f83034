// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: --folded and --folded-time, folded stacks for flame
 * graphs (Documentation/decode.rst, "Outputs").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

/* ---- string map for folded stacks --------------------------------------------- */

struct skv {
	char *s;
	uint64_t v;
	uint64_t h;		/* shash(s) */
	uint32_t node;		/* the first stack node with this text */
};

struct smap {
	struct skv *t;
	size_t cap, n;
};

#define SHASH_BASIS	1469598103934665603ULL

/* FNV-1a of @n bytes of @s, on from @h (SHASH_BASIS to start). */
static uint64_t shash_more(uint64_t h, const char *s, size_t n)
{
	while (n--)
		h = (h ^ (uint8_t)*s++) * 1099511628211ULL;
	return h;
}

/* Add @v to string @s (hash @h: shash_more(SHASH_BASIS, s, strlen(s))); @s stays the caller's. */
static void smap_add(struct smap *m, char *s, uint64_t h, uint64_t v, uint32_t node)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct smap nm = { .cap = m->cap ? m->cap * 2 : 1024 };

		nm.t = calloc(nm.cap, sizeof(*nm.t));
		if (!nm.t)
			dec_nomem();
		for (i = 0; i < m->cap; i++)
			if (m->t[i].s) {
				size_t j = m->t[i].h & (nm.cap - 1);

				while (nm.t[j].s)
					j = (j + 1) & (nm.cap - 1);
				nm.t[j] = m->t[i];
				nm.n++;
			}
		free(m->t);
		*m = nm;
	}
	for (i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->t[i].s) {
			m->t[i].s = s;
			m->t[i].h = h;
			m->t[i].v = v;
			m->t[i].node = node;
			m->n++;
			return;
		}
		if (m->t[i].h == h && !strcmp(m->t[i].s, s)) {
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

#define MAX_STACK 4096

struct folded_sink {
	struct dec_sink k;
	const struct dec_stream *st;
	const char *stack[MAX_STACK];	/* frame names */
	unsigned int sdepth;		/* may exceed MAX_STACK */
	char root[96];			/* the root frame, COMM-TID ("": none) */
	bool root_by_process;		/* per-CPU, switched: the root is COMM-PID */
	/*
	 * Stacks as a tree of frames, node 0 the empty stack, each node a
	 * (parent, frame name pointer) pair with the count of its runs as a
	 * leaf; the strings are made once per node at the end (and merged by
	 * text there: equal names at different pointers).
	 */
	struct smap folded;
	struct fnode {
		uint32_t parent;
		const char *name;
		uint64_t count;
	} *fnodes;
	size_t nr_fnodes, fnodes_cap;
	struct dec_map fnode_ids;	/* (parent, name pointer) -> node + 1 */
	uint32_t snode[MAX_STACK + 1];	/* [0]: the root's node; [i + 1]: after stack[i] */
	const char *snode_name[MAX_STACK];	/* the stack[i] snode[i + 1] was made with */
	unsigned int snode_n;		/* snode[1..snode_n] are valid */
	char **roots;			/* root frames seen (interned: stable pointers) */
	size_t nr_roots;
	const char *cur_root;		/* the interned r->root of snode[0] */
	const char *run_leaf;
	uint64_t run_count;
	/* --folded-time: the time after the block before (0: none since tracing resumed) */
	bool fold_time;
	uint64_t fold_last;
	/*
	 * Frames of code in no symbol, "dso+0xOFF" per instruction address
	 * (as --profile's rows and --insn's): (ip, module) -> index + 1 into
	 * @addr_names, interned so that a frame is one pointer.
	 */
	struct dec_map addr_ids;
	char **addr_names;
	size_t nr_addr_names;
	/* at the end (folded_strings): each node's line, where made, and its length */
	char **texts;
	size_t *text_len;
};

static uint32_t fnode_get(struct folded_sink *r, uint32_t parent, const char *name)
{
	struct dec_kv *e = dec_map_get(&r->fnode_ids, parent, (uint64_t)(uintptr_t)name);

	if (!e->v) {
		if (r->nr_fnodes == r->fnodes_cap) {
			r->fnodes_cap = r->fnodes_cap ? r->fnodes_cap * 2 : 1024;
			r->fnodes = realloc(r->fnodes, r->fnodes_cap * sizeof(*r->fnodes));
			if (!r->fnodes)
				dec_nomem();
		}
		r->fnodes[r->nr_fnodes] = (struct fnode){ parent, name, 0 };
		e->v = ++r->nr_fnodes;
	}
	return (uint32_t)(e->v - 1);
}

static void folded_flush(struct folded_sink *r)
{
	uint32_t id;

	if (!r->run_count || !r->run_leaf)
		return;
	id = fnode_get(r, r->snode[r->snode_n], r->run_leaf);	/* may move r->fnodes */
	r->fnodes[id].count += r->run_count;
	r->run_count = 0;
}

/*
 * The node of the current stack (root, stack[0..]), after a push, a pop
 * or a new root: only the frames above what is still valid are looked up.
 */
static void fstack_rebuild(struct folded_sink *r)
{
	unsigned int i, n = r->sdepth < MAX_STACK ? r->sdepth : MAX_STACK;

	if (!r->nr_fnodes)
		fnode_get(r, UINT32_MAX, "");	/* node 0: the empty stack */
	if (!r->cur_root || strcmp(r->cur_root, r->root)) {
		for (i = 0; i < r->nr_roots && strcmp(r->roots[i], r->root); i++)
			;
		if (i == r->nr_roots) {
			r->roots = realloc(r->roots, (r->nr_roots + 1) * sizeof(*r->roots));
			if (!r->roots || !(r->roots[r->nr_roots++] = strdup(r->root)))
				dec_nomem();
		}
		r->cur_root = r->roots[i];
		r->snode[0] = *r->cur_root ? fnode_get(r, 0, r->cur_root) : 0;
		r->snode_n = 0;
	}
	i = r->snode_n < n ? r->snode_n : n;
	while (i && r->snode_name[i - 1] != r->stack[i - 1])
		i--;
	for (; i < n; i++) {
		r->snode[i + 1] = fnode_get(r, r->snode[i], r->stack[i]);
		r->snode_name[i] = r->stack[i];
	}
	r->snode_n = n;
}

/*
 * The folded lines, "root;a;b;leaf COUNT", of every node counted as a
 * leaf.  Each node's text length and hash are made from its parent's
 * (a parent is made before its children: a lower index), and so is its
 * text: the parent's text, ';', its name (two copies per node, not one
 * per frame of a line that may be hundreds of frames deep); a node
 * neither counted nor a parent gets none.  A text is never scanned again
 * but to tell apart two equal hashes.
 */
static void folded_strings(struct folded_sink *r)
{
	size_t i, n = r->nr_fnodes;
	size_t *len = dec_xcalloc(n + 1, sizeof(*len));
	uint32_t *nlen = malloc((n + 1) * sizeof(*nlen));
	uint64_t *h = malloc((n + 1) * sizeof(*h));
	bool *parent = calloc(n + 1, sizeof(*parent));
	char **txt = dec_xcalloc(n + 1, sizeof(*txt));

	if (!nlen || !h || !parent)
		dec_nomem();
	r->texts = txt;
	r->text_len = len;
	for (i = 1; i < n; i++)
		parent[r->fnodes[i].parent] = true;
	for (i = 0; i < n; i++) {
		uint32_t pa = r->fnodes[i].parent;
		bool top = !i || !pa;	/* node 0, or a frame of the empty stack */

		nlen[i] = (uint32_t)strlen(r->fnodes[i].name);
		if (!i) {
			len[i] = 0;
			h[i] = SHASH_BASIS;
			continue;
		}
		len[i] = top ? nlen[i] : len[pa] + 1 + nlen[i];
		h[i] = top ? SHASH_BASIS : shash_more(h[pa], ";", 1);
		h[i] = shash_more(h[i], r->fnodes[i].name, nlen[i]);
	}
	for (i = 1; i < n; i++) {
		uint32_t pa = r->fnodes[i].parent;
		char *p;

		if (!r->fnodes[i].count && !parent[i])
			continue;
		p = txt[i] = dec_xrealloc(NULL, len[i] + 1);
		if (pa && pa != UINT32_MAX) {	/* below a frame: the parent's line, ';' */
			memcpy(p, txt[pa], len[pa]);
			p += len[pa];
			*p++ = ';';
		}
		memcpy(p, r->fnodes[i].name, nlen[i]);
		p[nlen[i]] = 0;
		if (r->fnodes[i].count)
			smap_add(&r->folded, txt[i], h[i], r->fnodes[i].count, (uint32_t)i);
	}
	free(nlen);
	free(h);
	free(parent);
}

/*
 * What --folded adds for block @b: its instructions, or with
 * --folded-time the time from the block before to this one's end (ns, or
 * TSC ticks when the frequency is unknown); nothing for the first block
 * after tracing resumed, so time with tracing off is not counted.
 */
static uint64_t fold_units(struct folded_sink *r, const struct dec_item *b)
{
	uint64_t t, dt = 0;

	if (!r->fold_time)
		return b->ninsn;
	if (!b->tsc)
		return 0;
	if (!r->st->time_ok || !dec_tsc_ns(r->st->c, b->tsc, &t))
		t = b->tsc;
	if (r->fold_last && t > r->fold_last)
		dt = t - r->fold_last;
	if (t > r->fold_last)
		r->fold_last = t;
	return dt;
}


/*
 * Name of the frame of the instruction at @ip: its function; in a module
 * but in no symbol, "dso+0xOFF" of the instruction itself (perf's
 * "[.] 0x6e45"; one row per address in --profile), never one lump per
 * DSO; else [unknown].
 */
static const char *frame_name(struct folded_sink *r, const struct dec_symc *sc, uint64_t ip)
{
	struct dec_kv *e;
	char buf[320];

	if (sc->sym)
		return sc->sym->name;
	if (!sc->mod)
		return "[unknown]";
	e = dec_map_get(&r->addr_ids, ip, (uint64_t)(uintptr_t)sc->mod);
	if (!e->v) {
		snprintf(buf, sizeof(buf), "%s+%#" PRIx64, sc->mod->name, ip - sc->mod->bias);
		r->addr_names = dec_xrealloc(r->addr_names,
					     (r->nr_addr_names + 1) * sizeof(*r->addr_names));
		r->addr_names[r->nr_addr_names++] = dec_xstrdup(buf);
		e->v = r->nr_addr_names;
	}
	return r->addr_names[e->v - 1];
}

/* @n units of @leaf, then the call or return that ends block @b (if @last). */
static void folded_count(struct folded_sink *r, const char *leaf, uint64_t n, bool last,
			 const struct dec_item *b)
{
	if (leaf != r->run_leaf) {
		folded_flush(r);
		r->run_leaf = leaf;
	}
	r->run_count += n;
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

/*
 * A return the stream matched to a call below the top (sink.h: ret): the
 * return instruction closed one frame here (folded_count()), the stream
 * closes the others; told after each, the stack follows the stream's.
 */
static void folded_ret(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
		       unsigned int depth, bool popped)
{
	struct folded_sink *r = (struct folded_sink *)k;

	(void)st;
	(void)b;
	if (popped && r->sdepth > depth) {
		folded_flush(r);
		r->sdepth = depth;
		fstack_rebuild(r);
	}
}

static void folded_insn(struct dec_sink *k, struct dec_stream *st, uint64_t ip, unsigned int size,
			bool last, const struct dec_item *b)
{
	struct folded_sink *r = (struct folded_sink *)k;
	const char *leaf = frame_name(r, dec_stream_sym(st, ip), ip);
	uint64_t n = 0;

	(void)size;
	if (!r->fold_time)
		n = 1;
	else if (last)
		n = fold_units(r, b);
	folded_count(r, leaf, n, last, b);
}

struct folded_walk {
	struct dec_sink *k;
	struct dec_stream *st;
};

static void folded_walk_insn(void *arg, uint64_t ip, unsigned int size, bool last,
			     const struct dec_item *b)
{
	struct folded_walk *w = arg;

	folded_insn(w->k, w->st, ip, size, last, b);
}

static void folded_insns(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b)
{
	struct folded_sink *r = (struct folded_sink *)k;
	const struct dec_symc *sc = dec_stream_sym(st, b->ip);
	struct folded_walk w = { k, st };
	size_t n;

	if (sc->sym) {
		folded_count(r, sc->sym->name, fold_units(r, b), true, b);
		return;
	}
	/* a module without symbols: a frame per instruction address */
	n = dec_walk_block(st->c, b, folded_walk_insn, &w);
	if (n < b->ninsn)	/* no bytes for the rest: at the block's start */
		folded_count(r, frame_name(r, dec_stream_sym(st, b->ip), b->ip),
			     r->fold_time ? fold_units(r, b) : b->ninsn - (uint32_t)n, true, b);
}

static void folded_trace_begin(struct dec_sink *k, struct dec_stream *st, size_t i)
{
	struct folded_sink *r = (struct folded_sink *)k;
	const struct dec_trace_result *res = st->res;

	(void)i;
	r->sdepth = 0;
	r->fold_last = 0;
	r->run_leaf = NULL;
	r->run_count = 0;
	/* a thread's stacks under its own root, COMM-TID */
	r->root[0] = 0;
	r->root_by_process = res->trace->tid <= 0 && st->c->in->nr_sched;
	if (res->trace->tid > 0) {
		const char *comm = dec_input_comm(st->c->in, res->trace->pid, res->trace->tid);

		snprintf(r->root, sizeof(r->root), "%s-%ld", comm ? comm : "[unknown]",
			 res->trace->tid);
	}
	fstack_rebuild(r);
}

static void folded_event(struct dec_sink *k, struct dec_stream *st, const struct dec_item *it)
{
	struct folded_sink *r = (struct folded_sink *)k;

	switch (it->kind) {
	case DI_GAP:
		r->fold_last = 0;
		break;
	case DI_ENABLED:
		/* --folded-time counts from the enable, not from before it */
		r->fold_last = 0;
		if (r->fold_time && it->tsc &&
		    !(st->time_ok && dec_tsc_ns(st->c, it->tsc, &r->fold_last)))
			r->fold_last = it->tsc;
		break;
	case DI_PROCESS:
		/* per CPU: each process's stacks under its own root */
		if (r->root_by_process && it->code != st->shown_pid) {
			const char *comm = dec_input_comm(st->c->in, it->code, 0);

			folded_flush(r);
			if (it->code > 0)
				snprintf(r->root, sizeof(r->root), "%s-%d",
					 comm ? comm : "[unknown]", it->code);
			else
				r->root[0] = 0;
			fstack_rebuild(r);
		}
		break;
	}
}

/*
 * Entering a slice: the stack is the calls open there (each frame the
 * function of its call instruction), under the root of the process that
 * runs; --folded-time counts from here.
 */
static void folded_enter(struct dec_sink *k, struct dec_stream *st)
{
	struct folded_sink *r = (struct folded_sink *)k;
	unsigned int d;

	folded_flush(r);
	r->run_leaf = NULL;
	r->run_count = 0;
	for (d = 0; d < st->depth && d < MAX_STACK; d++)
		r->stack[d] = frame_name(r, dec_stream_sym(st, st->frames[d].call_ip),
					   st->frames[d].call_ip);
	r->sdepth = st->depth;
	/* a call into the first block of the slice: its frame too (no call hook here) */
	if (st->call_pending) {
		if (r->sdepth < MAX_STACK)
			r->stack[r->sdepth] = frame_name(r, dec_stream_sym(st, st->call_ip),
							 st->call_ip);
		r->sdepth++;
	}
	if (r->root_by_process && st->pid != st->shown_pid) {
		const char *comm = dec_input_comm(st->c->in, st->pid, 0);

		if (st->pid > 0)
			snprintf(r->root, sizeof(r->root), "%s-%ld", comm ? comm : "[unknown]", st->pid);
		else
			r->root[0] = 0;
	}
	fstack_rebuild(r);
	r->fold_last = 0;
	if (r->fold_time && st->prev_tsc &&
	    !(st->time_ok && dec_tsc_ns(st->c, st->prev_tsc, &r->fold_last)))
		r->fold_last = st->prev_tsc;
}

static void folded_trace_end(struct dec_sink *k, struct dec_stream *st)
{
	(void)st;
	folded_flush((struct folded_sink *)k);
}

/*
 * The order of the folded lines without comparing them whole: a line is
 * its node's path, so lines sort as a walk of the tree that visits, among
 * the children of a node, each child's own line (its name, then the end
 * of the string) and its subtree (its name, then ';') in strcmp order of
 * those keys.  @rank gets each node's place in that walk.  Equal names at
 * different pointers, or names with a ';', can make the walk's order
 * differ from strcmp's: the caller checks the result and sorts by strcmp
 * then.
 */
static const struct fnode *tree_nodes;

/*
 * Entries @x, @y (node << 1 | subtree) by their keys: the node's name, then
 * '\0' (its own line) or ';' (its subtree).  Equal keys (or one key a
 * prefix of the other: a name with a ';') by node, for a fixed order.
 */
static int cmp_tree_ent(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	const unsigned char *p = (const unsigned char *)tree_nodes[a >> 1].name;
	const unsigned char *q = (const unsigned char *)tree_nodes[b >> 1].name;

	for (;; p++, q++) {
		unsigned int ca = *p ? *p : (a & 1) ? ';' : 0;
		unsigned int cb = *q ? *q : (b & 1) ? ';' : 0;

		if (ca != cb)
			return ca < cb ? -1 : 1;
		if (!*p || !*q)
			break;
	}
	return a < b ? -1 : a > b;
}

/*
 * A folded line's tail, " COUNT\n" (what "%s %" PRIu64 "\n" appends,
 * without stdio's format parsing), at the end of @d; returns its length.
 */
#define COUNT_TAIL_MAX 24
static size_t count_tail(char d[COUNT_TAIL_MAX], uint64_t v)
{
	size_t nd = 0;

	d[COUNT_TAIL_MAX - 1] = '\n';
	do {
		d[COUNT_TAIL_MAX - 2 - nd++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	d[COUNT_TAIL_MAX - 2 - nd] = ' ';
	return nd + 2;
}

/*
 * The stack tree in the walk's order.  Nodes are merged by text (@canon:
 * the first node with the same name under the same merged parent), so
 * that frames of equal names at different pointers (_start of ld.so and
 * of the program) are one subtree, their counts summed (@sum, at the
 * merged node); @ent[@first[x]..@first[x + 1]) are merged node x's
 * children's entries (node << 1: its own line, if counted; | 1: its
 * subtree, if any) in cmp_tree_ent() order.  @exact: no name holds a ';'
 * and no two names were merged for sharing a hash, so that the walk is
 * strcmp's order of the lines and one merged node one distinct line.
 */
struct tree_order {
	uint32_t *canon, *first, *ent;
	uint64_t *sum;
	bool exact;
};

static void tree_order_make(struct folded_sink *r, struct tree_order *o)
{
	size_t n = r->nr_fnodes, i;
	uint32_t *fill = malloc((n + 1) * sizeof(*fill));
	bool *kids = calloc(n, sizeof(*kids));
	struct dec_map byname = { 0 };

	o->canon = malloc(n * sizeof(*o->canon));
	o->first = calloc(n + 1, sizeof(*o->first));
	o->ent = malloc(2 * n * sizeof(*o->ent) + 4);
	o->sum = calloc(n, sizeof(*o->sum));
	o->exact = true;
	if (!fill || !kids || !o->canon || !o->first || !o->ent || !o->sum)
		dec_nomem();
	o->canon[0] = 0;
	for (i = 1; i < n; i++) {
		const char *name = r->fnodes[i].name, *cn;
		uint32_t cp = o->canon[r->fnodes[i].parent];
		size_t nl = strlen(name);
		struct dec_kv *e = dec_map_get(&byname, cp, shash_more(SHASH_BASIS, name, nl));

		if (!e->v)
			e->v = i + 1;
		o->canon[i] = (uint32_t)(e->v - 1);
		cn = r->fnodes[o->canon[i]].name;
		if (memchr(name, ';', nl) || (cn != name && strcmp(cn, name)))
			o->exact = false;
		o->sum[o->canon[i]] += r->fnodes[i].count;
		if (o->canon[i] == i)
			kids[cp] = true;
	}
	free(byname.t);
	for (i = 1; i < n; i++)
		if (o->canon[i] == i)
			o->first[o->canon[r->fnodes[i].parent] + 1] += !!o->sum[i] + kids[i];
	for (i = 0; i < n; i++)
		o->first[i + 1] += o->first[i];
	memcpy(fill, o->first, (n + 1) * sizeof(*fill));
	for (i = 1; i < n; i++) {
		uint32_t pa = o->canon[r->fnodes[i].parent];

		if (o->canon[i] != i)
			continue;
		if (o->sum[i])
			o->ent[fill[pa]++] = (uint32_t)i << 1;
		if (kids[i])
			o->ent[fill[pa]++] = (uint32_t)i << 1 | 1;
	}
	tree_nodes = r->fnodes;
	for (i = 0; i < n; i++)
		if (o->first[i + 1] - o->first[i] > 1)
			qsort(o->ent + o->first[i], o->first[i + 1] - o->first[i], sizeof(*o->ent),
			      cmp_tree_ent);
	free(fill);
	free(kids);
}

static void tree_order_free(struct tree_order *o)
{
	free(o->canon);
	free(o->first);
	free(o->ent);
	free(o->sum);
}

/* @rank[node]: the place of the node's line in the walk. */
static void tree_rank(struct folded_sink *r, uint32_t *rank)
{
	size_t n = r->nr_fnodes, i, nr = 0, sp = 0;
	struct { uint32_t node, at; } *stk = malloc(n * sizeof(*stk));
	struct tree_order o;

	if (!stk)
		dec_nomem();
	tree_order_make(r, &o);
	stk[sp].node = 0;
	stk[sp++].at = o.first[0];
	while (sp) {
		uint32_t x = stk[sp - 1].node, e;

		if (stk[sp - 1].at == o.first[x + 1]) {
			sp--;
			continue;
		}
		e = o.ent[stk[sp - 1].at++];
		if (!(e & 1)) {
			rank[e >> 1] = (uint32_t)nr++;
		} else {
			stk[sp].node = e >> 1;
			stk[sp++].at = o.first[e >> 1];
		}
	}
	for (i = 1; i < n; i++)
		rank[i] = rank[o.canon[i]];
	tree_order_free(&o);
	free(stk);
}

static const uint32_t *skv_rank;

static int cmp_skv_rank(const void *x, const void *y)
{
	uint32_t a = skv_rank[((const struct skv *)x)->node], b = skv_rank[((const struct skv *)y)->node];

	return a < b ? -1 : a > b;
}

/*
 * The folded lines of the old way: every counted node's whole line made
 * (folded_strings), merged by text, ordered by the tree's walk (tree_rank)
 * and checked, sorted by strcmp where that check fails.  Memory as large
 * as the output: only for names folded_walk() cannot order.
 */
static void folded_sorted(struct folded_sink *r, FILE *f)
{
	size_t i, n = 0;
	uint32_t *rank;

	folded_strings(r);
	for (i = 0; i < r->folded.cap; i++)
		if (r->folded.t[i].s)
			r->folded.t[n++] = r->folded.t[i];
	/* in the tree's order, then checked: by strcmp where that is not strcmp's order */
	rank = calloc(r->nr_fnodes + 1, sizeof(*rank));
	if (!rank)
		dec_nomem();
	if (r->nr_fnodes)
		tree_rank(r, rank);
	skv_rank = rank;
	dec_sort(r->folded.t, n, sizeof(*r->folded.t), cmp_skv_rank);
	for (i = 1; i < n && strcmp(r->folded.t[i - 1].s, r->folded.t[i].s) < 0; i++)
		;
	if (i < n)
		dec_sort(r->folded.t, n, sizeof(*r->folded.t), cmp_skv);
	free(rank);
	for (i = 0; i < n; i++) {
		char d[COUNT_TAIL_MAX];
		size_t t = count_tail(d, r->folded.t[i].v);

		fwrite_unlocked(r->folded.t[i].s, 1, r->text_len[r->folded.t[i].node], f);
		fwrite_unlocked(d + sizeof(d) - t, 1, t, f);
	}
	for (i = 0; i < r->nr_fnodes; i++)
		free(r->texts[i]);
	free(r->texts);
	free(r->text_len);
	free(r->folded.t);
}

/*
 * The folded lines written in strcmp order by one walk of the stack tree,
 * each line made in one path buffer that holds its parent's line: memory
 * and work beyond the output's own bytes are linear in the nodes, however
 * deep the stacks (a trace of many runs in a row, each run's exit() a
 * call that never returns, nests every run in the one before: the lines
 * grow with the trace, and folded_sorted() made each one in memory).
 * The tree merged and ordered as tree_rank() has it (tree_order_make()):
 * when that order is exact it is strcmp's order of the lines and one
 * merged node is one distinct line, so the output is folded_sorted()'s.
 * Otherwise nothing is written and false returned: the caller takes
 * folded_sorted().
 */
static bool folded_walk(struct folded_sink *r, FILE *f)
{
	size_t n = r->nr_fnodes, sp = 0, cap = 256, len;
	struct { uint32_t node, at; size_t len; } *stk = malloc(n * sizeof(*stk));
	char *buf = malloc(cap);
	struct tree_order o;
	bool ok;

	if (!stk || !buf)
		dec_nomem();
	tree_order_make(r, &o);
	ok = o.exact;
	stk[sp].node = 0;
	stk[sp].at = o.first[0];
	stk[sp++].len = 0;
	while (ok && sp) {
		uint32_t x = stk[sp - 1].node, e, y;
		size_t nl;

		if (stk[sp - 1].at == o.first[x + 1]) {
			sp--;
			continue;
		}
		e = o.ent[stk[sp - 1].at++];
		y = e >> 1;
		nl = strlen(r->fnodes[y].name);
		len = stk[sp - 1].len;
		if (len + nl + 32 > cap) {
			cap = 2 * (len + nl + 32);
			buf = dec_xrealloc(buf, cap);
		}
		if (x)	/* below a frame: the parent's line, ';' */
			buf[len++] = ';';
		memcpy(buf + len, r->fnodes[y].name, nl);
		len += nl;
		if (e & 1) {
			stk[sp].node = y;
			stk[sp].at = o.first[y];
			stk[sp++].len = len;
		} else {
			char d[COUNT_TAIL_MAX];
			size_t t = count_tail(d, o.sum[y]);

			memcpy(buf + len, d + sizeof(d) - t, t);
			fwrite_unlocked(buf, 1, len + t, f);
		}
	}
	tree_order_free(&o);
	free(stk);
	free(buf);
	return ok;
}

static void folded_end(struct dec_sink *k, struct dec_stream *st)
{
	struct folded_sink *r = (struct folded_sink *)k;
	size_t i;

	(void)st;
	if (r->nr_fnodes && !folded_walk(r, k->f))
		folded_sorted(r, k->f);
	free(r->fnodes);
	free(r->fnode_ids.t);
	for (i = 0; i < r->nr_addr_names; i++)
		free(r->addr_names[i]);
	free(r->addr_names);
	free(r->addr_ids.t);
	for (i = 0; i < r->nr_roots; i++)
		free(r->roots[i]);
	free(r->roots);
	free(r);
}

static const struct dec_sink_ops folded_ops = {
	.name = "folded",
	.needs = DEC_NEED_BLOCKS | DEC_NEED_INSNS,
	.trace_begin = folded_trace_begin,
	.insn = folded_insn,
	.insns = folded_insns,
	.ret = folded_ret,
	.event = folded_event,
	.trace_end = folded_trace_end,
	.end = folded_end,
	.enter = folded_enter,
	.leave = folded_trace_end,	/* leaving a slice: count what ran */
};

struct dec_sink *dec_sink_folded(struct dec_stream *st, FILE *f)
{
	struct folded_sink *r = dec_xcalloc(1, sizeof(*r));

	r->k.ops = &folded_ops;
	r->k.f = f;
	r->st = st;
	r->fold_time = st->o->folded_time && st->c->timed;
	if (st->o->folded_time && !st->c->timed)
		fprintf(stderr, "ipttool: decode: --folded-time: the trace has no TSC packets "
			"(record with --tsc): --folded counts instructions\n");
	return &r->k;
}

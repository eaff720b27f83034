// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: a small open-addressing map (u64, u64) -> u64, for the
 * profile, coverage blocks and edges.
 */
#include <stdlib.h>

#include "decode.h"
#include "internal.h"

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL) * 0xbf58476d1ce4e5b9ULL;

	return h ^ (h >> 31);
}

struct dec_kv *dec_map_get(struct dec_map *m, uint64_t a, uint64_t b)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct dec_map nm = { .cap = m->cap ? m->cap * 2 : 1024 };

		nm.t = calloc(nm.cap, sizeof(*nm.t));
		if (!nm.t)
			dec_nomem();
		for (i = 0; i < m->cap; i++)
			if (m->t[i].used) {
				struct dec_kv *d = dec_map_get(&nm, m->t[i].a, m->t[i].b);

				d->v = m->t[i].v;
			}
		free(m->t);
		*m = nm;
	}
	for (i = mix(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct dec_kv *e = &m->t[i];

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

/* The entry of (@a, @b) in @m, or NULL. */
const struct dec_kv *dec_map_find(const struct dec_map *m, uint64_t a, uint64_t b)
{
	size_t i;

	if (!m->cap)
		return NULL;
	for (i = mix(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		const struct dec_kv *e = &m->t[i];

		if (!e->used)
			return NULL;
		if (e->a == a && e->b == b)
			return e;
	}
}

/*
 * The used entries, compacted to the front of the table; returns the
 * count.  The table is no longer a hash table after this (no dec_map_get()),
 * but may be listed again: the slots after the entries are marked unused,
 * or a second listing (--blocks, then --drcov) would count the moved
 * entries twice.
 */
size_t dec_map_entries(struct dec_map *m)
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

int dec_kv_cmp_count_desc(const void *x, const void *y)
{
	const struct dec_kv *a = x, *b = y;

	if (a->v != b->v)
		return a->v > b->v ? -1 : 1;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return a->b < b->b ? -1 : a->b > b->b;
}

int dec_kv_cmp_addr(const void *x, const void *y)
{
	const struct dec_kv *a = x, *b = y;

	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return a->b < b->b ? -1 : a->b > b->b;
}

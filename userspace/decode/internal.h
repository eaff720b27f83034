/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libiptdecode, internal: what the layers of the decoder give each other
 * and do not give the application (Documentation/decode.rst, "Design").
 */
#ifndef IPT_DECODE_INTERNAL_H
#define IPT_DECODE_INTERNAL_H

#include "decode.h"

/* util.c: out of memory calls the application's handler (dec_set_nomem), else aborts. */
void dec_nomem(void) __attribute__((noreturn));
void *dec_xrealloc(void *p, size_t n);
void *dec_xcalloc(size_t n, size_t size);
char *dec_xstrdup(const char *s);

/* image.c: @c->in's images into libipt's section cache and mapped.  0, or -1 with @msg. */
int dec_images_open(struct dec_ctx *c, char *msg, size_t len);
void dec_images_close(struct dec_ctx *c);
/* pool.c: free the results of the last dec_run() (dec_close() too). */
void dec_free_results(struct dec_ctx *c);
/* A copy of @c's section cache with the same isids, or NULL. */
struct pt_image_section_cache *dec_iscache_copy(const struct dec_ctx *c);
/* Whether @jobs workers' own section caches stay under their memory bound. */
bool dec_own_iscaches_fit(const struct dec_ctx *c, unsigned int jobs);

/* segment.c: read @r's trace, cut it into segments, look for a cut last packet. */
void dec_trace_load(struct dec_ctx *c, struct dec_trace_result *r);

/* map.c: a small open-addressing map (u64, u64) -> u64. */
struct dec_kv {
	uint64_t a, b, v;
	bool used;
};

struct dec_map {
	struct dec_kv *t;
	size_t cap, n;
};

struct dec_kv *dec_map_get(struct dec_map *m, uint64_t a, uint64_t b);
/* The entry of (@a, @b), or NULL (a hash table still: before dec_map_entries()). */
const struct dec_kv *dec_map_find(const struct dec_map *m, uint64_t a, uint64_t b);
/*
 * The used entries, compacted to the front of the table; returns the
 * count.  No dec_map_get() after this; listing again is fine.
 */
size_t dec_map_entries(struct dec_map *m);
/* qsort() orders of entries: count descending, then key; key. */
int dec_kv_cmp_count_desc(const void *x, const void *y);
int dec_kv_cmp_addr(const void *x, const void *y);

/*
 * lookup.c: stateless symbol lookups.  The function and module of an
 * address in one process's code at one time are a function of (ip, pid,
 * time) only (syms.c's dec_syms_module_at); struct dec_symc only
 * remembers the last answer, valid for [@start, @end), since consecutive
 * instructions rarely leave a function.  The caller resets it when the
 * process or the time changes.
 */
struct dec_symc {
	uint64_t start, end;
	const struct dec_module *mod;
	const struct dec_sym *sym;
};

void dec_symc_reset(struct dec_symc *sc);
/* Look @ip up in process @pid's code at perf time @time, unless @sc holds it. */
void dec_symc_lookup(struct dec_symc *sc, const struct dec_syms *s, uint64_t ip, long pid,
		     uint64_t time);
/* Does block @b lie in the one function @sc holds (or a module without symbols)? */
bool dec_symc_holds(const struct dec_symc *sc, const struct dec_item *b);
/* "sym+0xoff", "dso+0xoff" or "0xaddr" of @ip in process @pid's code at @time. */
const char *dec_sym_fmt_at(const struct dec_syms *s, uint64_t ip, long pid, uint64_t time,
			   char *buf, size_t len);
/* "file:line" of @ip in process @pid's code at @time, or NULL. */
const char *dec_sym_line_at(struct dec_syms *s, uint64_t ip, long pid, uint64_t time,
			    char *buf, size_t len);

#endif /* IPT_DECODE_INTERNAL_H */

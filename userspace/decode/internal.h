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
/* A copy of @c's section cache with the same isids, or NULL. */
struct pt_image_section_cache *dec_iscache_copy(const struct dec_ctx *c);
/* Whether @jobs workers' own section caches stay under their memory bound. */
bool dec_own_iscaches_fit(const struct dec_ctx *c, unsigned int jobs);

/* segment.c: read @r's trace, cut it into segments, look for a cut last packet. */
void dec_trace_load(struct dec_ctx *c, struct dec_trace_result *r);

#endif /* IPT_DECODE_INTERNAL_H */

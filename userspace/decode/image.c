// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode, images: the code of a decode in libipt's image section
 * cache (one shared, or a copy per worker), the same bytes mapped for
 * lock-free reads, and the instructions of a block, walked with Zydis in
 * the block's exec mode.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <Zydis/Zydis.h>

#include "decode.h"
#include "internal.h"

/* One Zydis decoder per exec mode (enum pt_exec_mode); 64-bit for an unknown one. */
static ZydisDecoder zdec[4];
static pthread_once_t zonce = PTHREAD_ONCE_INIT;

static void zinit(void)
{
	ZydisDecoderInit(&zdec[ptem_unknown], ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	ZydisDecoderInit(&zdec[ptem_16bit], ZYDIS_MACHINE_MODE_LEGACY_16, ZYDIS_STACK_WIDTH_16);
	ZydisDecoderInit(&zdec[ptem_32bit], ZYDIS_MACHINE_MODE_LEGACY_32, ZYDIS_STACK_WIDTH_32);
	ZydisDecoderInit(&zdec[ptem_64bit], ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	for (int i = 0; i < 4; i++)
		ZydisDecoderEnableMode(&zdec[i], ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE);
}

const ZydisDecoder *dec_zydis(uint8_t mode)
{
	pthread_once(&zonce, zinit);
	return &zdec[mode < 4 ? mode : ptem_unknown];
}

const uint8_t *dec_code_at(const struct dec_ctx *c, int isid, uint64_t ip, size_t *avail)
{
	const struct dec_code *k;

	if (isid <= 0 || isid >= c->nr_code)
		return NULL;
	k = &c->code[isid];
	if (!k->bytes || ip < k->vaddr || ip >= k->vaddr + k->size)
		return NULL;
	*avail = k->vaddr + k->size - ip;
	return k->bytes + (ip - k->vaddr);
}

unsigned int dec_insn_size(struct dec_ctx *c, int isid, uint64_t ip, uint8_t mode, uint8_t *bytes)
{
	ZydisDecodedInstruction zi;
	const uint8_t *p;
	size_t n;

	p = dec_code_at(c, isid, ip, &n);
	if (!p || mode == ptem_unknown)
		return 0;
	if (n > 15)
		n = 15;
	if (bytes)
		memcpy(bytes, p, n);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec_zydis(mode), NULL, p, n, &zi)))
		return 0;
	return zi.length;
}

/*
 * The instructions of block @b, by Zydis in the block's own exec mode:
 * into @ips/@sizes (room for @b->ninsn); the number found, or 0 when the
 * walk cannot be trusted: unreadable code, an exec mode Zydis does not
 * know, or a walk that does not end at the block's last instruction
 * (Zydis disagrees with libipt on a length) when blocks are contiguous.
 */
static size_t walk(struct dec_ctx *c, const struct dec_item *b, uint64_t *ips, uint8_t *sizes)
{
	const ZydisDecoder *zd = dec_zydis(b->mode);
	uint64_t ip = b->ip;
	size_t i;

	if (b->mode == ptem_unknown)
		return 0;
	for (i = 0; i < b->ninsn; i++) {
		ZydisDecodedInstruction zi;
		bool last = i + 1 == b->ninsn;
		unsigned int size = 0;

		memset(&zi, 0, sizeof(zi));
		if (last && b->last_size) {
			size = b->last_size;
		} else {
			size_t n;
			const uint8_t *p = dec_code_at(c, b->isid, ip, &n);

			if (p && ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(zd, NULL, p, n > 15 ? 15 : n,
									     &zi)))
				size = zi.length;
		}
		/* the last one's address is libipt's: its size may stay unknown (0) */
		if (!size && !last)
			return 0;
		ips[i] = ip;
		sizes[i] = (uint8_t)size;
		/*
		 * Contiguous: libipt ends a block after each near direct call
		 * and jump (end_on_call, end_on_jump: dec_open()), the only
		 * branches it follows without trace; other blocks have one
		 * instruction (the instruction decoder).
		 */
		ip += size;
		if (b->mode != ptem_64bit)
			ip &= b->mode == ptem_32bit ? 0xffffffffULL : 0xffffULL;
	}
	return ips[b->ninsn - 1] == b->end_ip ? b->ninsn : 0;
}

size_t dec_walk_block(struct dec_ctx *c, const struct dec_item *b, dec_insn_fn fn, void *arg)
{
	uint64_t sips[64], *ips = sips;
	uint8_t ssz[64], *sizes = ssz;
	size_t i, n;

	if (!b->ninsn)
		return 0;
	if (b->ninsn > 64) {
		ips = malloc(b->ninsn * sizeof(*ips));
		sizes = malloc(b->ninsn);
		if (!ips || !sizes) {
			free(ips);
			free(sizes);
			return 0;
		}
	}
	n = walk(c, b, ips, sizes);
	for (i = 0; i < n; i++)
		fn(arg, ips[i], sizes[i], i + 1 == n, b);
	if (ips != sips) {
		free(ips);
		free(sizes);
	}
	return n;
}

/*
 * The image section cache this thread's decoders take their sections from:
 * the capture's (c->iscache), or the worker's own copy of it (same files in
 * the same order, so the same isids).  libipt locks a section, and the
 * cache, each time a decoder moves from one section to another (its
 * one-entry mapped-section cache: a call into libc and back is two
 * moves); two workers doing that on the same sections made the parallel
 * decode 6% slower (decode.rst, Benchmark).  A copy costs libipt's block
 * cache again, 4 bytes per byte of code, so workers get one only while
 * that stays under DEC_OWN_ISCACHE_MAX.
 */
#define DEC_OWN_ISCACHE_MAX (256ULL << 20)

/* A copy of @c's section cache with the same isids, or NULL. */
struct pt_image_section_cache *dec_iscache_copy(const struct dec_ctx *c)
{
	struct pt_image_section_cache *isc = pt_iscache_alloc("ipttool-worker");
	size_t i;

	for (i = 0; isc && i < c->in->nr_images; i++) {
		const struct dec_image *im = &c->in->images[i];

		if (pt_iscache_add_file(isc, im->file, im->offset, im->size, im->vaddr) !=
		    c->isids[i]) {
			pt_iscache_free(isc);
			return NULL;
		}
	}
	return isc;
}

/* Whether @jobs workers' own section caches stay under DEC_OWN_ISCACHE_MAX. */
bool dec_own_iscaches_fit(const struct dec_ctx *c, unsigned int jobs)
{
	uint64_t code = 0;
	int i;

	for (i = 1; i < c->nr_code; i++)
		code += c->code[i].size;
	return jobs > 1 && code * 4 * jobs <= DEC_OWN_ISCACHE_MAX;
}

int dec_images_open(struct dec_ctx *c, char *msg, size_t len)
{
	const struct dec_input *in = c->in;
	size_t i;

	c->iscache = pt_iscache_alloc("ipttool-decode");
	if (!c->iscache) {
		snprintf(msg, len, "cannot allocate libipt's image section cache");
		return -1;
	}
	c->isids = calloc(in->nr_images + 1, sizeof(int));
	for (i = 0; i < in->nr_images; i++) {
		const struct dec_image *im = &in->images[i];

		c->isids[i] = pt_iscache_add_file(c->iscache, im->file, im->offset, im->size, im->vaddr);
		if (c->isids[i] < 0) {
			snprintf(msg, len, "%s: libipt cannot use it as code at %#" PRIx64 ": %s",
				 im->file, im->vaddr, pt_errstr(pt_errcode(c->isids[i])));
			return -1;
		}
	}
	/* map the bytes for lock-free instruction walks; isids are small and dense */
	c->nr_code = 1;
	for (i = 0; i < in->nr_images; i++)
		if (c->isids[i] >= c->nr_code)
			c->nr_code = c->isids[i] + 1;
	c->code = calloc((size_t)c->nr_code, sizeof(*c->code));
	for (i = 0; c->code && i < in->nr_images; i++) {
		const struct dec_image *im = &in->images[i];
		struct dec_code *k = &c->code[c->isids[i]];
		int fd = open(im->file, O_RDONLY);
		struct stat st;

		if (fd < 0)
			continue;
		if (!fstat(fd, &st) && im->offset + im->size <= (uint64_t)st.st_size && st.st_size) {
			k->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
			if (k->map == MAP_FAILED) {
				k->map = NULL;
			} else {
				k->maplen = (size_t)st.st_size;
				k->bytes = (const uint8_t *)k->map + im->offset;
				k->vaddr = im->vaddr;
				k->size = im->size;
			}
		}
		close(fd);
	}
	return 0;
}

void dec_images_close(struct dec_ctx *c)
{
	free(c->isids);
	for (int q = 0; c->code && q < c->nr_code; q++)
		if (c->code[q].map)
			munmap(c->code[q].map, c->code[q].maplen);
	free(c->code);
	if (c->iscache)
		pt_iscache_free(c->iscache);
	c->isids = NULL;
	c->code = NULL;
	c->iscache = NULL;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The reference decode: one libipt decoder over the whole trace, synced
 * at the first PSB and again after every error, to the end (ptxed's loop),
 * in either flavour (block or instruction decoder), printing what
 * 'ipttool decode --insn' prints without the symbol column.  Deliberately
 * simple and serial: split and parallel decodes are compared against it
 * (tools/testing/decode/fuzz_diff.c, test_decode).
 *
 *   ref [--insn-decoder] TRACE CPU|- START:END:FILE...
 *
 * prints the instruction trace, then "# instructions N errors M".
 *
 * The rules it shares with ipttool, as documented in decode.rst: blocks
 * end at calls and jumps; a block's instructions are walked with Zydis in
 * the block's exec mode and shown only if the walk lands on the block's
 * last instruction; a decoder that reads no trace for more than 1000000
 * instructions gives up until the next PSB ("endless code"); a sync that
 * fails where the one before failed ends the decode.
 */
#include <inttypes.h>
#include <intel-pt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <Zydis/Zydis.h>

#include "ref.h"

#ifdef DEC_MAX_STUCK
#define MAX_STUCK DEC_MAX_STUCK	/* the fuzzer's build: both the same */
#else
#define MAX_STUCK 1000000
#endif

struct ref {
	const struct ref_code *code;
	size_t nr_code;
	FILE *out;
	const uint8_t *buf;
	size_t len;
	uint64_t insns, errors;
	ZydisDecoder zd[4];
	/*
	 * The run of blocks not printed yet: consecutive blocks are printed
	 * as one while each ends with a non-branch instruction (ptic_other)
	 * and the next follows with nothing printed between them, in the
	 * same exec mode and image, as ipttool walks them (sink.c): libipt
	 * 2.0.5's cached and uncached paths end blocks at different places.
	 */
	bool have_run;
	uint64_t run_ip, run_end;
	uint32_t run_ninsn;
	enum pt_exec_mode run_mode;
	enum pt_insn_class run_iclass;
	unsigned int run_last_size;
	long run_image;
	/* the last block since the start or lost trace: for "[disabled at ...]" */
	bool have_last;
	uint64_t last_end;
	enum pt_insn_class last_iclass;
};

/* The index of the image holding @ip, or -1. */
static long image_of(const struct ref *r, uint64_t ip)
{
	size_t i;

	for (i = 0; i < r->nr_code; i++)
		if (ip >= r->code[i].vaddr && ip - r->code[i].vaddr < r->code[i].size)
			return (long)i;
	return -1;
}

static const uint8_t *code_at(const struct ref *r, uint64_t ip, size_t *n)
{
	size_t i;

	for (i = 0; i < r->nr_code; i++)
		if (ip >= r->code[i].vaddr && ip - r->code[i].vaddr < r->code[i].size) {
			*n = r->code[i].size - (ip - r->code[i].vaddr);
			return r->code[i].bytes + (ip - r->code[i].vaddr);
		}
	return NULL;
}

/*
 * Whether @type may stand in a PSB+: libipt 2.0.5 syncs at a PSB only if
 * every packet up to its PSBEND has a header function
 * (pt_qry_read_psb_header()), else "unexpected packet context".
 */
static bool psb_plus_packet(enum pt_packet_type type)
{
	return type == ppt_pad || type == ppt_fup || type == ppt_pip || type == ppt_mode ||
	       type == ppt_tsc || type == ppt_cbr || type == ppt_tma || type == ppt_mtc ||
	       type == ppt_cyc || type == ppt_vmcs || type == ppt_mnt;
}

/*
 * Whether the trace's MODE.EXEC packets show more than one exec mode, or a
 * PSB+ that libipt syncs at has none (a decoder synced there has no mode;
 * a broken PSB+, with a packet a PSB+ may not hold before its PSBEND, is
 * not synced at): then libipt reads code through read_code(), with no
 * image section and so no block cache.  libipt 2.0.5's block cache does
 * not compare the exec mode, so with it such a trace decodes as whichever
 * mode filled the cache first; ipttool decides the same way.  Otherwise
 * the code is in cached sections, as ptxed has it (the cached and
 * uncached paths of libipt end blocks at different places, and the
 * endless-code check and the "not shown" lines go by block).
 */
static bool mixed_modes(const struct pt_config *tmpl)
{
	struct pt_packet_decoder *pd = pt_pkt_alloc_decoder(tmpl);
	bool in_psb = false, psb_mode = false, nomode = false;
	int modes = 0;

	if (!pd)
		return false;
	while (pt_pkt_sync_forward(pd) >= 0) {
		struct pt_packet pkt;

		in_psb = false;
		while (pt_pkt_next(pd, &pkt, sizeof(pkt)) >= 0) {
			if (pkt.type == ppt_mode && pkt.payload.mode.leaf == pt_mol_exec) {
				modes |= 1 << pt_get_exec_mode(&pkt.payload.mode.bits.exec);
				psb_mode = true;
			}
			if (pkt.type == ppt_psbend && in_psb && !psb_mode)
				nomode = true;
			if (in_psb && !psb_plus_packet(pkt.type))
				in_psb = false;
			if (pkt.type == ppt_psb) {
				in_psb = true;
				psb_mode = false;
			}
		}
	}
	pt_pkt_free_decoder(pd);
	return nomode || (modes & (modes - 1));
}

/* The last image given wins where images overlap, as with libipt's sections. */
static int read_code(uint8_t *buffer, size_t size, const struct pt_asid *asid, uint64_t ip,
		     void *arg)
{
	const struct ref *r = arg;
	size_t i;

	(void)asid;
	for (i = r->nr_code; i-- > 0;)
		if (ip >= r->code[i].vaddr && ip - r->code[i].vaddr < r->code[i].size) {
			size_t n = r->code[i].size - (ip - r->code[i].vaddr);

			n = n < size ? n : size;
			memcpy(buffer, r->code[i].bytes + (ip - r->code[i].vaddr), n);
			return (int)n;
		}
	return -pte_nomap;
}

static void walk_print(struct ref *r, uint64_t ip, uint64_t end_ip, uint32_t ninsn, int mode,
		       unsigned int last_size)
{
	uint64_t *ips = calloc(ninsn, sizeof(*ips)), a = ip;
	uint32_t i;
	bool ok = mode == ptem_16bit || mode == ptem_32bit || mode == ptem_64bit;

	for (i = 0; ok && i < ninsn; i++) {
		ZydisDecodedInstruction zi;
		unsigned int size = 0;
		size_t n;
		const uint8_t *p;

		ips[i] = a;
		if (i + 1 == ninsn)
			break;
		p = code_at(r, a, &n);
		if (p && ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&r->zd[mode], NULL, p,
								     n > 15 ? 15 : n, &zi)))
			size = zi.length;
		if (!size)
			ok = false;
		a += size;
		if (mode == ptem_32bit)
			a &= 0xffffffffULL;
		else if (mode == ptem_16bit)
			a &= 0xffffULL;
	}
	(void)last_size;
	if (ok && ips[ninsn - 1] == end_ip) {
		for (i = 0; i < ninsn; i++)
			fprintf(r->out, "%016" PRIx64 "\n", ips[i]);
	} else {
		fprintf(r->out, "[%" PRIu32 " instructions from %#" PRIx64
			" not shown: their code is unreadable]\n", ninsn, ip);
	}
	free(ips);
}

/* Print the run of blocks held back, if any. */
static void flush(struct ref *r)
{
	if (r->have_run) {
		r->have_run = false;
		walk_print(r, r->run_ip, r->run_end, r->run_ninsn, r->run_mode, r->run_last_size);
	}
}

static void print_block(struct ref *r, const struct pt_block *b)
{
	long image = image_of(r, b->ip);

	r->insns += b->ninsn;
	r->have_last = true;
	r->last_end = b->end_ip;
	r->last_iclass = b->iclass;
	if (r->have_run && r->run_iclass == ptic_other && b->mode == r->run_mode &&
	    image == r->run_image) {
		r->run_end = b->end_ip;
		r->run_ninsn += b->ninsn;
		r->run_last_size = b->truncated ? b->size : 0;
		r->run_iclass = b->iclass;
	} else {
		flush(r);
		r->have_run = true;
		r->run_ip = b->ip;
		r->run_end = b->end_ip;
		r->run_ninsn = b->ninsn;
		r->run_mode = b->mode;
		r->run_iclass = b->iclass;
		r->run_last_size = b->truncated ? b->size : 0;
		r->run_image = image;
	}
	if (b->iclass != ptic_other)
		flush(r);
}

static const char *gap_name(int err, bool loop)
{
	return loop ? "endless code" : err == -pte_nomap ? "no image" : "decode error";
}

/* Events of either decoder, as ipttool shows them. */
static void show_event(struct ref *r, const struct pt_event *ev, uint64_t off)
{
	switch (ev->type) {
	case ptev_enabled:
		flush(r);
		fprintf(r->out, "[enabled at %#" PRIx64 "]\n", ev->variant.enabled.ip);
		break;
	case ptev_disabled:
		/* after a far transfer (a system call); a branch out of the range; else where */
		flush(r);
		if (r->have_last && (r->last_iclass == ptic_far_call ||
				     r->last_iclass == ptic_far_return || r->last_iclass == ptic_far_jump))
			fprintf(r->out, "[disabled at %#" PRIx64 ": system call or far transfer]\n",
				r->last_end);
		else if (!ev->ip_suppressed && ev->variant.disabled.ip && r->have_last)
			fprintf(r->out, "[disabled at %#" PRIx64 ": branch to %#" PRIx64
				" outside the traced range]\n", r->last_end, ev->variant.disabled.ip);
		else if (!ev->ip_suppressed && ev->variant.disabled.ip)
			fprintf(r->out, "[disabled: branch to %#" PRIx64 " outside the traced range]\n",
				ev->variant.disabled.ip);
		else if (r->have_last)
			fprintf(r->out, "[disabled at %#" PRIx64 "]\n", r->last_end);
		else
			fprintf(r->out, "[disabled]\n");
		break;
	case ptev_async_disabled:
		flush(r);
		if (ev->variant.async_disabled.at)
			fprintf(r->out, "[disabled at %#" PRIx64 ": interrupt or fault]\n",
				ev->variant.async_disabled.at);
		else if (r->have_last)
			fprintf(r->out, "[disabled at %#" PRIx64 "]\n", r->last_end);
		else
			fprintf(r->out, "[disabled]\n");
		break;
	case ptev_async_branch:
		flush(r);
		fprintf(r->out, "[interrupt at %#" PRIx64 "]\n", ev->variant.async_branch.from);
		break;
	case ptev_overflow:
		flush(r);
		r->errors++;
		r->have_last = false;
		fprintf(r->out, "[lost trace: overflow at offset %#" PRIx64
			", 0 bytes skipped to the next PSB]\n", off);
		break;
	default:
		break;
	}
}

int ref_decode(const uint8_t *buf, size_t len, const struct pt_cpu *cpu, const struct ref_code *code,
	       size_t nr_code, bool insn_flavour, const char *name, FILE *out, uint64_t *insns,
	       uint64_t *errors)
{
	struct pt_block_decoder *bd = NULL;
	struct pt_insn_decoder *id = NULL;
	struct pt_image_section_cache *isc = NULL;
	struct ref r = { .code = code, .nr_code = nr_code, .out = out, .buf = buf, .len = len };
	struct pt_image *image;
	struct pt_config cfg;
	uint64_t last_fail = UINT64_MAX, moff = UINT64_MAX, mins = 0;
	uint64_t erroff = 0;
	bool have_err = false, err_loop = false;
	int err_code = 0;
	size_t i;
	int st;

	ZydisDecoderInit(&r.zd[ptem_16bit], ZYDIS_MACHINE_MODE_LEGACY_16, ZYDIS_STACK_WIDTH_16);
	ZydisDecoderInit(&r.zd[ptem_32bit], ZYDIS_MACHINE_MODE_LEGACY_32, ZYDIS_STACK_WIDTH_32);
	ZydisDecoderInit(&r.zd[ptem_64bit], ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	pt_config_init(&cfg);
	if (cpu) {
		cfg.cpu = *cpu;
		pt_cpu_errata(&cfg.errata, &cfg.cpu);
	}
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	if (insn_flavour) {
		id = pt_insn_alloc_decoder(&cfg);
		image = id ? pt_insn_get_image(id) : NULL;
	} else {
		cfg.flags.variant.block.end_on_call = 1;
		cfg.flags.variant.block.end_on_jump = 1;
		bd = pt_blk_alloc_decoder(&cfg);
		image = bd ? pt_blk_get_image(bd) : NULL;
	}
	if (!image)
		return -1;
	if (!insn_flavour && mixed_modes(&cfg)) {
		if (pt_image_set_callback(image, read_code, &r) < 0)
			return -1;
	} else {
		isc = pt_iscache_alloc("ref");
		for (i = 0; i < nr_code; i++) {
			int isid = pt_iscache_add_file(isc, code[i].file, code[i].offset,
						       code[i].size, code[i].vaddr);

			if (isid < 0 || pt_image_add_cached(image, isc, isid, NULL) < 0)
				return -1;
		}
	}
	(void)name;	/* one trace: ipttool shows no "[trace NAME]" line */
	for (;;) {
		uint64_t next, off = 0;

		/* sync (after an error: the error's line says what it cost) */
		st = insn_flavour ? pt_insn_sync_forward(id) : pt_blk_sync_forward(bd);
		if (insn_flavour)
			pt_insn_get_offset(id, &off);
		else
			pt_blk_get_offset(bd, &off);
		if (st < 0 && st != -pte_eos) {
			if (off == last_fail)
				st = -pte_eos;
			last_fail = off;
		}
		if (st >= 0) {
			if (insn_flavour)
				pt_insn_get_sync_offset(id, &next);
			else
				pt_blk_get_sync_offset(bd, &next);
		} else {
			next = st == -pte_eos ? len : off;
		}
		if (have_err) {
			flush(&r);
			r.errors++;
			r.have_last = false;
			fprintf(out, "[lost trace: %s at offset %#" PRIx64 "%s%s, %" PRIu64
				" bytes skipped to the next PSB]\n", gap_name(err_code, err_loop), erroff,
				err_loop ? "" : ": ", err_loop ? "" : pt_errstr(pt_errcode(err_code)),
				next > erroff ? next - erroff : 0);
		}
		if (st == -pte_eos)
			break;
		if (st < 0) {
			have_err = true;
			err_loop = false;
			err_code = st;
			erroff = off;
			continue;
		}
		have_err = false;
		moff = UINT64_MAX;
		mins = 0;
		for (;;) {
			uint32_t ninsn;
			uint64_t now;

			while (st & pts_event_pending) {
				struct pt_event ev;

				st = insn_flavour ? pt_insn_event(id, &ev, sizeof(ev)) :
						    pt_blk_event(bd, &ev, sizeof(ev));
				if (st < 0)
					break;
				if (insn_flavour)
					pt_insn_get_offset(id, &off);
				else
					pt_blk_get_offset(bd, &off);
				show_event(&r, &ev, off);
			}
			if (st < 0)
				break;
			if (st & pts_eos) {
				flush(&r);
				if (!(st & pts_ip_suppressed))
					fprintf(out, "[end of trace]\n");
				st = -pte_eos;
				break;
			}
			if (insn_flavour) {
				struct pt_insn in;

				memset(&in, 0, sizeof(in));
				st = pt_insn_next(id, &in, sizeof(in));
				ninsn = 0;
				if (st >= 0 || (in.iclass != ptic_error && in.size)) {
					fprintf(out, "%016" PRIx64 "\n", in.ip);
					r.insns++;
					ninsn = 1;
					r.have_last = true;
					r.last_end = in.ip;
					r.last_iclass = in.iclass;
				}
			} else {
				struct pt_block b;

				memset(&b, 0, sizeof(b));
				st = pt_blk_next(bd, &b, sizeof(b));
				ninsn = b.ninsn;
				if (b.ninsn)
					print_block(&r, &b);
			}
			if (st < 0)
				break;
			/* endless code: the offset has not moved for MAX_STUCK instructions */
			if (insn_flavour)
				pt_insn_get_offset(id, &now);
			else
				pt_blk_get_offset(bd, &now);
			if (now != moff) {
				moff = now;
				mins = 0;
			}
			mins += ninsn;
			if (mins > MAX_STUCK) {
				have_err = true;
				err_loop = true;
				err_code = 0;
				erroff = now;
				break;
			}
		}
		if (have_err)
			continue;
		if (st == -pte_eos)
			break;
		if (insn_flavour)
			pt_insn_get_offset(id, &erroff);
		else
			pt_blk_get_offset(bd, &erroff);
		have_err = true;
		err_loop = false;
		err_code = st;
	}
	flush(&r);
	fprintf(out, "# instructions %" PRIu64 " errors %" PRIu64 "\n", r.insns, r.errors);
	if (insns)
		*insns = r.insns;
	if (errors)
		*errors = r.errors;
	if (id)
		pt_insn_free_decoder(id);
	if (bd)
		pt_blk_free_decoder(bd);
	pt_iscache_free(isc);
	return 0;
}

#ifndef REF_NO_MAIN
int main(int argc, char **argv)
{
	bool insn = argc > 1 && !strcmp(argv[1], "--insn-decoder");
	struct ref_code code[64];
	struct pt_cpu cpu, *cp = NULL;
	unsigned int f, m, s = 0;
	uint8_t *buf;
	long len;
	FILE *fp;
	int i, n = 0;

	if (insn) {
		argv++;
		argc--;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: ref [--insn-decoder] TRACE F/M/S|- START:END:FILE...\n");
		return 2;
	}
	if (sscanf(argv[2], "%u/%u/%u", &f, &m, &s) >= 2) {
		memset(&cpu, 0, sizeof(cpu));
		cpu.vendor = pcv_intel;
		cpu.family = (uint16_t)f;
		cpu.model = (uint8_t)m;
		cpu.stepping = (uint8_t)s;
		cp = &cpu;
	}
	for (i = 3; i < argc && n < 64; i++, n++) {
		unsigned long long a, b;
		static char file[64][4096];
		FILE *cf;

		if (sscanf(argv[i], "%llx:%llx:%4095s", &a, &b, file[n]) != 3)
			return 2;
		code[n].file = file[n];
		code[n].offset = 0;
		code[n].vaddr = a;
		code[n].size = b - a;
		code[n].bytes = calloc(1, code[n].size + 1);
		cf = fopen(file[n], "rb");
		if (!cf || !code[n].bytes)
			return 2;
		code[n].size = fread((void *)code[n].bytes, 1, code[n].size, cf);
		fclose(cf);
	}
	fp = fopen(argv[1], "rb");
	if (!fp || fseek(fp, 0, SEEK_END) || (len = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET))
		return 2;
	buf = malloc((size_t)len + 1);
	if (!buf || fread(buf, 1, (size_t)len, fp) != (size_t)len)
		return 2;
	fclose(fp);
	return ref_decode(buf, (size_t)len, cp, code, (size_t)n, insn, argv[1], stdout, NULL, NULL) ?
	       2 : 0;
}
#endif

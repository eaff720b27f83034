// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: the decode context: libipt's configuration for the
 * input, its images (image.c) and symbols (syms.c).  The layers:
 * input.c and sideband.c (what to decode), image.c (the code),
 * segment.c (traces cut at PSBs), step.c (libipt decoders stepped, and
 * their convergence), pool.c (workers and the orderer), sink.c and
 * sink_*.c (the outputs, one sink each), slice.c (what part of the
 * stream the sinks see), lookup.c (stateless symbol
 * lookups over syms.c), packets.c and summary.c.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "internal.h"
#include "step.h"

void dec_sgap_text(const struct dec_item *it, char *buf, size_t len)
{
	char lost[32], end[24];

	if (it->sgap_lost == UINT64_MAX)
		snprintf(lost, sizeof(lost), "unknown bytes");
	else
		snprintf(lost, sizeof(lost), "%" PRIu64 " bytes", it->sgap_lost);
	if (it->sgap_tsc_end)
		snprintf(end, sizeof(end), "%#" PRIx64, it->sgap_tsc_end);
	else
		snprintf(end, sizeof(end), "?");
	snprintf(buf, len, "gap: %s lost, tsc %#" PRIx64 "..%s", lost, it->tsc, end);
}

const char *dec_gap_name(enum dec_gap g)
{
	static const char *const n[GAP_NR] = {
		[GAP_NONE] = "none", [GAP_OVERFLOW] = "overflow", [GAP_DECODE] = "decode error",
		[GAP_NOMAP] = "no image", [GAP_PRE_PSB] = "before first PSB",
		[GAP_STREAM] = "unit paused (stream gap)",
		[GAP_LOOP] = "endless code",
	};

	return g < GAP_NR ? n[g] : "?";
}

int dec_open(struct dec_ctx *c, const struct dec_input *in, const struct dec_options *opt,
	     char *msg, size_t len)
{
	int e;

	memset(c, 0, sizeof(*c));
	c->in = in;
	c->opt = *opt;
	pt_config_init(&c->cfg);
	if (in->have_cpu) {
		c->cfg.cpu = in->cpu;
		e = pt_cpu_errata(&c->cfg.errata, &c->cfg.cpu);
		if (e < 0)
			snprintf(c->errata_note, sizeof(c->errata_note),
				 "no errata for CPU %u/%u/%u: %s", in->cpu.family, in->cpu.model,
				 in->cpu.stepping, pt_errstr(pt_errcode(e)));
	} else {
		snprintf(c->errata_note, sizeof(c->errata_note),
			 "no CPU given (--cpu F/M/S): errata workarounds are off");
	}
	c->cfg.mtc_freq = in->mtc_freq;
	c->cfg.nom_freq = in->nom_freq;
	c->cfg.cpuid_0x15_eax = in->cpuid_0x15_eax;
	c->cfg.cpuid_0x15_ebx = in->cpuid_0x15_ebx;
	/*
	 * Blocks end at calls (the call trace needs them at block ends) and
	 * at jumps (walking a block needs its instructions contiguous), in
	 * every mode, the summary alone too: the endless-code rule is
	 * checked after each block, so every output (and the reference,
	 * tools/testing/decode/ref.c) must see the same blocks to count the
	 * same instructions.  Longer blocks were 4% faster (decode.rst).
	 */
	c->cfg.flags.variant.block.end_on_call = 1;
	c->cfg.flags.variant.block.end_on_jump = 1;
	if (opt->insn_decoder)
		memset(&c->cfg.flags, 0, sizeof(c->cfg.flags));
	if (dec_images_open(c, msg, len))
		return -1;
	c->syms = dec_syms_load(in);
	return 0;
}

bool dec_tsc_ns(const struct dec_ctx *c, uint64_t tsc, uint64_t *ns)
{
	const struct dec_input *in = c->in;

	if (in->have_time_conv) {
		/* the kernel's formula (perf_event_mmap_page) */
		uint64_t quot = tsc >> in->time_shift;
		uint64_t rem = tsc & (((uint64_t)1 << in->time_shift) - 1);

		*ns = in->time_zero + quot * in->time_mult + ((rem * in->time_mult) >> in->time_shift);
		return true;
	}
	if (c->tsc_hz) {
		*ns = (uint64_t)((unsigned __int128)tsc * 1000000000u / c->tsc_hz);
		return true;
	}
	return false;
}

void dec_close(struct dec_ctx *c)
{
	dec_free_results(c);
	dec_images_close(c);
	if (c->syms)
		dec_syms_free(c->syms);
	memset(c, 0, sizeof(*c));
}

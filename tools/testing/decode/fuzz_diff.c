// SPDX-License-Identifier: GPL-2.0
/*
 * Differential libFuzzer target: every input (a PT trace, decoded against
 * the code of the ptgen directory FUZZ_PTGEN_DIR) is decoded by the
 * reference (ref.c: serial libipt, block and instruction flavours) and by
 * the decoder library split and unsplit, with -J 1 and -J 2, printing
 * --insn, counting only (the summary's path), and printing --profile
 * (which the workers count: equal in every configuration, its count the
 * reference's, and equal to the one rendered from items when another
 * output wants the blocks); any difference in the printed items, gaps, offsets
 * or counts aborts (a libFuzzer crash, input saved).  Also: the packet walk that decides uncached decoding, made
 * in pieces on threads, against one serial walk.  Built and run by
 * tools/testing/decode/fuzz.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../userspace/decode/decode.h"
#include "ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct dec_input base;
static struct ref_code code[64];
static size_t nr_code;
static struct pt_cpu cpu;
static int inited;

static void init(void)
{
	const char *dir = getenv("FUZZ_PTGEN_DIR");
	char path[4096], line[4096 + 300], msg[512];
	FILE *f;

	dec_input_init(&base);
	memset(&cpu, 0, sizeof(cpu));
	cpu.vendor = pcv_intel;
	cpu.family = 6;
	cpu.model = 126;
	cpu.stepping = 5;
	base.cpu = cpu;
	base.have_cpu = true;
	if (!dir) {
		fprintf(stderr, "fuzz_diff: set FUZZ_PTGEN_DIR\n");
		abort();
	}
	snprintf(path, sizeof(path), "%s/images.txt", dir);
	f = fopen(path, "r");
	while (f && nr_code < 64 && fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		char name[256], *file;
		FILE *cf;
		uint8_t *bytes;

		if (sscanf(line, "%llx %llx %255s", &a, &b, name) != 3 || b <= a)
			continue;
		file = malloc(strlen(dir) + strlen(name) + 2);
		sprintf(file, "%s/%s", dir, name);
		bytes = calloc(1, b - a + 1);
		cf = fopen(file, "rb");
		if (!cf || !bytes)
			abort();
		code[nr_code].size = fread(bytes, 1, b - a, cf);
		fclose(cf);
		code[nr_code].file = file;
		code[nr_code].vaddr = a;
		code[nr_code].bytes = bytes;
		if (dec_input_add_raw_at(&base, file, 0, code[nr_code].size, a, msg, sizeof(msg)))
			abort();
		nr_code++;
	}
	if (f)
		fclose(f);
	inited = 1;
}

/* --insn output without the symbol column, as the reference prints it. */
static char *normalize(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s), k;

		for (k = 0; k < 16 && k < n && strchr("0123456789abcdef", s[k]); k++)
			;
		if (k == 16 && n > 16 && s[16] == ' ')
			n = 16;
		memcpy(o, s, n);
		o += n;
		*o++ = '\n';
		s = nl ? nl + 1 : s + strlen(s);
	}
	*o = 0;
	return out;
}

/* What run() prints. */
enum run_out {
	RUN_INSN,	/* --insn, without its symbol column */
	RUN_COUNT,	/* nothing: the summary's path, counting only */
	RUN_PROFILE,	/* --profile: counted by the workers (the block decoder) */
	RUN_PROFILE_RENDERED,	/* --profile with --blocks: counted from the items */
};

/* The decoder library's output @what and counts. */
static char *run(const uint8_t *data, size_t size, bool insn_dec, bool no_split, unsigned int jobs,
		 enum run_out what, uint64_t *insns, int *rc)
{
	struct dec_options opt = { .jobs = jobs, .no_split = no_split, .insn_decoder = insn_dec };
	struct dec_outputs outs = { 0 };
	struct dec_input in = base;
	struct dec_ctx c;
	char msg[512], *buf = NULL, *norm;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	in.traces = NULL;
	in.nr_traces = 0;
	dec_input_add_trace(&in, "fuzz-input", -1);
	in.traces[0].data = data;
	in.traces[0].size = size;
	if (what == RUN_INSN)
		outs.f[OUT_INSN] = f;
	else if (what == RUN_PROFILE || what == RUN_PROFILE_RENDERED)
		outs.f[OUT_PROFILE] = f;
	if (what == RUN_PROFILE_RENDERED) {
		outs.f[OUT_BLOCKS] = fopen("/dev/null", "w");
		if (!outs.f[OUT_BLOCKS])
			abort();	/* else it is RUN_PROFILE again */
	}
	*insns = 0;
	*rc = -2;
	if (!dec_open(&c, &in, &opt, msg, sizeof(msg))) {
		*rc = dec_run(&c, &outs, msg, sizeof(msg));
		if (c.nr_res)
			*insns = c.res[0].insns;
		dec_close(&c);
	}
	fclose(f);
	if (outs.f[OUT_BLOCKS])
		fclose(outs.f[OUT_BLOCKS]);
	free(in.traces[0].file);
	free(in.traces);
	if (what != RUN_INSN)
		return buf ? buf : strdup("");
	norm = normalize(buf ? buf : "");
	free(buf);
	return norm;
}

static void differ(const uint8_t *data, size_t size, const char *what, const char *a, const char *b)
{
	FILE *f = fopen("fuzz-diff-input.pt", "wb");

	if (f) {
		fwrite(data, 1, size, f);
		fclose(f);
	}
	f = fopen("fuzz-diff-a.txt", "w");
	if (f) {
		fputs(a, f);
		fclose(f);
	}
	f = fopen("fuzz-diff-b.txt", "w");
	if (f) {
		fputs(b, f);
		fclose(f);
	}
	fprintf(stderr, "fuzz_diff: DIFFERENCE: %s (input in fuzz-diff-input.pt, outputs in "
		"fuzz-diff-a.txt (reference) and fuzz-diff-b.txt)\n", what);
	abort();
}

/*
 * The packet walk that decides whether code is read uncached
 * (dec_mixed_modes()) is made in pieces from PSBs, on threads, and
 * joined: it must find what one serial walk finds.  Cut at every PSB the
 * input holds (overlapping ones too), on 2 threads, against no cut.
 */
static void check_mode_walk(const uint8_t *data, size_t size)
{
	static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
	uint64_t *cuts = calloc(size + 1, sizeof(*cuts));
	const uint8_t *p = data, *end = data + size;
	struct pt_config cfg;
	size_t n = 0;
	bool pieces, serial;

	if (!cuts)
		abort();
	pt_config_init(&cfg);
	cfg.cpu = cpu;
	pt_cpu_errata(&cfg.errata, &cfg.cpu);
	while (p < end && (p = memmem(p, (size_t)(end - p), psb, sizeof(psb))))
		cuts[n++] = (uint64_t)(p++ - data);
	pieces = dec_mixed_modes(data, size, &cfg, cuts, n, 2);
	serial = dec_mixed_modes(data, size, &cfg, NULL, 0, 1);
	free(cuts);
	if (pieces != serial) {
		char what[128];

		snprintf(what, sizeof(what), "uncached: %d from the packet walk in pieces, %d from "
			 "the serial walk", pieces, serial);
		differ(data, size, what, "", "");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct { bool no_split; unsigned int jobs; } cfgs[] = {
		{ false, 1 }, { false, 2 }, { true, 1 }, { true, 2 },
	};
	int flavour;

	if (!inited)
		init();
	check_mode_walk(data, size);
	for (flavour = 0; flavour < 2; flavour++) {
		char *refout = NULL, *ref, *prof0 = NULL;
		size_t rlen = 0;
		uint64_t rins = 0, rerr = 0;
		FILE *f = open_memstream(&refout, &rlen);
		unsigned int i;

		ref_decode(data, size, &cpu, code, nr_code, flavour, "fuzz-input", f, &rins, &rerr);
		fclose(f);
		/* drop the reference's "# instructions" line */
		{
			char *h = strstr(refout, "# instructions ");

			if (h)
				*h = 0;
		}
		ref = refout;
		for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
			char *prof;
			uint64_t insns;
			int rc;
			char *got = run(data, size, flavour, cfgs[i].no_split, cfgs[i].jobs, RUN_INSN, &insns,
					&rc);
			char what[128];

			snprintf(what, sizeof(what), "%s, %s, -J %u, --insn",
				 flavour ? "insn decoder" : "block decoder",
				 cfgs[i].no_split ? "--no-split" : "split", cfgs[i].jobs);
			if (rc == 0 && strcmp(ref, got))
				differ(data, size, what, ref, got);
			if ((rc == 0 ? insns : 0) != rins)
				differ(data, size, "instruction count (--insn run)", ref, got);
			free(got);
			/* the summary's own path: counting only */
			got = run(data, size, flavour, cfgs[i].no_split, cfgs[i].jobs, RUN_COUNT, &insns,
				  &rc);
			if ((rc == 0 ? insns : 0) != rins) {
				snprintf(what, sizeof(what), "%s, %s, -J %u: summary count %llu, reference %llu",
					 flavour ? "insn decoder" : "block decoder",
					 cfgs[i].no_split ? "--no-split" : "split", cfgs[i].jobs,
					 (unsigned long long)insns, (unsigned long long)rins);
				differ(data, size, what, ref, got);
			}
			free(got);
			/* --profile: the reference's count, the same table in every configuration */
			prof = run(data, size, flavour, cfgs[i].no_split, cfgs[i].jobs, RUN_PROFILE,
				   &insns, &rc);
			snprintf(what, sizeof(what), "%s, %s, -J %u, --profile",
				 flavour ? "insn decoder" : "block decoder",
				 cfgs[i].no_split ? "--no-split" : "split", cfgs[i].jobs);
			if ((rc == 0 ? insns : 0) != rins)
				differ(data, size, what, ref, prof);
			if (!i)
				prof0 = prof;
			else if (strcmp(prof0, prof))
				differ(data, size, what, prof0, prof);
			if (i)
				free(prof);
		}
		/* the same table when the renderer counts every block (another output wants them) */
		{
			uint64_t insns;
			int rc;
			char *prof = run(data, size, flavour, false, 2, RUN_PROFILE_RENDERED, &insns,
					 &rc);

			if (strcmp(prof0, prof))
				differ(data, size, "--profile with --blocks, split, -J 2", prof0, prof);
			free(prof);
		}
		free(prof0);
		free(refout);
	}
	return 0;
}

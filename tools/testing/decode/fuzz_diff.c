// SPDX-License-Identifier: GPL-2.0
/*
 * Differential libFuzzer target: every input (a PT trace, decoded against
 * the code of the ptgen directory FUZZ_PTGEN_DIR) is decoded by the
 * reference (ref.c: serial libipt, block and instruction flavours) and by
 * the decoder library split and unsplit, with -J 1 and -J 2, printing
 * --insn, counting only (the summary's path), and printing --profile
 * (which the workers count: equal in every configuration, its count the
 * reference's, and equal to the one rendered from items when another
 * output wants the blocks), and printing the other outputs rendered from
 * the items (--calls, --folded, --perfetto, --drcov, --blocks: together,
 * the same bytes in every configuration, and each alone the same as
 * together); any difference in the printed items, gaps, offsets, counts
 * or bytes aborts (a libFuzzer crash, input saved).  Also: the packet
 * walk that decides uncached decoding, made in pieces on threads, against
 * one serial walk.  Built and run by
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

/*
 * One decode's printed outputs: for each output k asked, its bytes
 * (out[k], len[k]) when they are kept, else only their length and hash
 * (an output can be large: with the sanitizers, growing a buffer for it
 * cost more than the decode).
 */
struct outs {
	char *out[OUT_NR];
	size_t len[OUT_NR];
	uint64_t hash[OUT_NR];
};

struct hash_sink {
	size_t *len;
	uint64_t *hash;
};

/*
 * fopencookie()'s write: @n bytes into the length and a 64-bit hash (8
 * bytes at a time, multiplied and folded; the length is kept apart).  Not
 * instrumented: it reads only stdio's buffer, and it is the fuzzer's own.
 */
__attribute__((no_sanitize("address", "undefined")))
static ssize_t hash_write(void *cookie, const char *buf, size_t n)
{
	struct hash_sink *h = cookie;
	uint64_t v = *h->hash, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, buf + i, 8);
		v = (v ^ w) * 0x9e3779b97f4a7c15ULL;
		v ^= v >> 29;
	}
	for (; i < n; i++)
		v = (v ^ (uint8_t)buf[i]) * 0x100000001b3ULL;
	*h->hash = v;
	*h->len += n;
	return (ssize_t)n;
}

static int hash_close(void *cookie)
{
	free(cookie);
	return 0;
}

static FILE *hash_open(size_t *len, uint64_t *hash)
{
	static const cookie_io_functions_t io = { .write = hash_write, .close = hash_close };
	struct hash_sink *h = malloc(sizeof(*h));
	FILE *f;

	if (!h)
		abort();
	h->len = len;
	h->hash = hash;
	*len = 0;
	*hash = 0xcbf29ce484222325ULL;
	f = fopencookie(h, "w", io);
	if (!f)
		abort();
	return f;
}

/*
 * Decode @data with the decoder library printing the outputs in @mask (bit
 * k: output k, each to a buffer of its own when @keep, else hashed; 0:
 * counting only); fills @o and the counts.
 */
static void run_outs(const uint8_t *data, size_t size, bool insn_dec, bool no_split,
		     unsigned int jobs, unsigned int mask, bool keep, struct outs *o,
		     uint64_t *insns, int *rc)
{
	struct dec_options opt = { .jobs = jobs, .no_split = no_split, .insn_decoder = insn_dec };
	struct dec_outputs outs = { 0 };
	struct dec_input in = base;
	struct dec_ctx c;
	char msg[512];
	int k;

	memset(o, 0, sizeof(*o));
	in.traces = NULL;
	in.nr_traces = 0;
	dec_input_add_trace(&in, "fuzz-input", -1);
	in.traces[0].data = data;
	in.traces[0].size = size;
	for (k = 0; k < OUT_NR; k++) {
		if (!(mask & (1u << k)))
			continue;
		outs.f[k] = keep ? open_memstream(&o->out[k], &o->len[k]) :
				   hash_open(&o->len[k], &o->hash[k]);
		if (!outs.f[k])
			abort();
	}
	*insns = 0;
	*rc = -2;
	if (!dec_open(&c, &in, &opt, msg, sizeof(msg))) {
		*rc = dec_run(&c, &outs, msg, sizeof(msg));
		if (c.nr_res)
			*insns = c.res[0].insns;
		dec_close(&c);
	}
	for (k = 0; k < OUT_NR; k++)
		if (outs.f[k] && fclose(outs.f[k]))
			abort();
	free(in.traces[0].file);
	free(in.traces);
}

static void outs_free(struct outs *o)
{
	for (int k = 0; k < OUT_NR; k++)
		free(o->out[k]);
}

/* The decoder library's output @what and counts. */
static char *run(const uint8_t *data, size_t size, bool insn_dec, bool no_split, unsigned int jobs,
		 enum run_out what, uint64_t *insns, int *rc)
{
	unsigned int mask = what == RUN_INSN ? 1u << OUT_INSN :
			    what == RUN_PROFILE ? 1u << OUT_PROFILE :
			    what == RUN_PROFILE_RENDERED ? 1u << OUT_PROFILE | 1u << OUT_BLOCKS : 0;
	struct outs o;
	char *buf, *norm;

	run_outs(data, size, insn_dec, no_split, jobs, mask, true, &o, insns, rc);
	buf = what == RUN_INSN ? o.out[OUT_INSN] : what == RUN_COUNT ? NULL : o.out[OUT_PROFILE];
	if (what == RUN_INSN)
		o.out[OUT_INSN] = NULL;
	else if (what != RUN_COUNT)
		o.out[OUT_PROFILE] = NULL;
	outs_free(&o);
	if (what != RUN_INSN)
		return buf ? buf : strdup("");
	norm = normalize(buf ? buf : "");
	free(buf);
	return norm;
}

static void put_file(const char *name, const char *s, size_t n)
{
	FILE *f = fopen(name, "wb");

	if (f) {
		fwrite(s, 1, n, f);
		fclose(f);
	}
}

/* Save the input and both outputs (@a: the one compared against), abort. */
static void differ_n(const uint8_t *data, size_t size, const char *what, const char *a,
		     size_t alen, const char *b, size_t blen)
{
	put_file("fuzz-diff-input.pt", (const char *)data, size);
	put_file("fuzz-diff-a.txt", a, alen);
	put_file("fuzz-diff-b.txt", b, blen);
	fprintf(stderr, "fuzz_diff: DIFFERENCE: %s (input in fuzz-diff-input.pt, outputs in "
		"fuzz-diff-a.txt (reference) and fuzz-diff-b.txt)\n", what);
	abort();
}

static void differ(const uint8_t *data, size_t size, const char *what, const char *a, const char *b)
{
	differ_n(data, size, what, a, strlen(a), b, strlen(b));
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

static const char *const out_names[OUT_NR] = {
	[OUT_INSN] = "--insn", [OUT_CALLS] = "--calls", [OUT_PROFILE] = "--profile",
	[OUT_FOLDED] = "--folded", [OUT_PERFETTO] = "--perfetto", [OUT_DRCOV] = "--drcov",
	[OUT_BLOCKS] = "--blocks",
};

/* The outputs rendered from the workers' items, other than --insn and --profile. */
static const int item_outs[] = { OUT_CALLS, OUT_FOLDED, OUT_PERFETTO, OUT_DRCOV, OUT_BLOCKS };
#define NR_ITEM_OUTS (sizeof(item_outs) / sizeof(item_outs[0]))

/* Output @k of @a and @b (both hashed) the same? */
static bool same_out(const struct outs *a, const struct outs *b, int k)
{
	return a->len[k] == b->len[k] && a->hash[k] == b->hash[k];
}

struct run_cfg {
	bool no_split;
	unsigned int jobs;
	const char *name;
};

/*
 * Output @k differs between configuration @ca with outputs @ma and @cb
 * with @mb: decode both again keeping the bytes, save them and abort.
 */
static void differ_out(const uint8_t *data, size_t size, int flavour, const char *what,
		       const struct run_cfg *ca, unsigned int ma, const struct run_cfg *cb,
		       unsigned int mb, int k)
{
	struct outs a, b;
	uint64_t insns;
	int rc;

	run_outs(data, size, flavour, ca->no_split, ca->jobs, ma, true, &a, &insns, &rc);
	run_outs(data, size, flavour, cb->no_split, cb->jobs, mb, true, &b, &insns, &rc);
	differ_n(data, size, what, a.out[k] ? a.out[k] : "", a.len[k], b.out[k] ? b.out[k] : "",
		 b.len[k]);
}

/*
 * The item outputs, all of them in one decode per configuration: each the
 * same as in the first configuration (split, -J 1), and the reference's
 * count.  With the block decoder (whose blocks libipt ends in different
 * places in different configurations), each also alone (split, -J 2),
 * where the decode's mode follows from that output only (--calls and
 * --perfetto alone take the renderer's lean path, which gathers no runs):
 * the same as together with the others.
 */
static void check_item_outs(const uint8_t *data, size_t size, int flavour, uint64_t rins)
{
	static const struct run_cfg cfgs[] = {
		{ false, 1, "split, -J 1" }, { false, 2, "split, -J 2" },
		{ true, 1, "--no-split, -J 1" }, { true, 2, "--no-split, -J 2" },
	};
	const char *dec = flavour ? "insn decoder" : "block decoder";
	unsigned int mask = 0, i, j;
	struct outs first, o;
	uint64_t insns;
	char what[192];
	int rc;

	for (j = 0; j < NR_ITEM_OUTS; j++)
		mask |= 1u << item_outs[j];
	for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		run_outs(data, size, flavour, cfgs[i].no_split, cfgs[i].jobs, mask, false,
			 i ? &o : &first, &insns, &rc);
		if ((rc == 0 ? insns : 0) != rins) {
			snprintf(what, sizeof(what), "%s, %s, the item outputs together: count %llu, "
				 "reference %llu", dec, cfgs[i].name,
				 (unsigned long long)(rc == 0 ? insns : 0), (unsigned long long)rins);
			differ(data, size, what, "", "");
		}
		for (j = 0; i && j < NR_ITEM_OUTS; j++) {
			int k = item_outs[j];

			if (same_out(&first, &o, k))
				continue;
			snprintf(what, sizeof(what), "%s, %s against %s, %s (together with the "
				 "other item outputs)", dec, cfgs[i].name, cfgs[0].name, out_names[k]);
			differ_out(data, size, flavour, what, &cfgs[0], mask, &cfgs[i], mask, k);
		}
	}
	for (j = 0; !flavour && j < NR_ITEM_OUTS; j++) {
		int k = item_outs[j];

		run_outs(data, size, flavour, false, 2, 1u << k, false, &o, &insns, &rc);
		if ((rc == 0 ? insns : 0) != rins || !same_out(&first, &o, k)) {
			snprintf(what, sizeof(what), "%s, split, -J 2, %s alone against together "
				 "with the others (count %llu, reference %llu)", dec, out_names[k],
				 (unsigned long long)(rc == 0 ? insns : 0), (unsigned long long)rins);
			differ_out(data, size, flavour, what, &cfgs[0], mask, &cfgs[1], 1u << k, k);
		}
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
		check_item_outs(data, size, flavour, rins);
		free(refout);
	}
	return 0;
}

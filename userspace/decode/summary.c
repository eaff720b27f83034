// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: the summary of a decode, as JSON and as text.
 */
#include <inttypes.h>
#include <stdio.h>

#include "decode.h"
#include "internal.h"

static const char *const gap_key[GAP_NR] = {
	[GAP_NONE] = "none", [GAP_OVERFLOW] = "overflow", [GAP_DECODE] = "decode_error",
	[GAP_NOMAP] = "no_image", [GAP_PRE_PSB] = "before_first_psb",
	[GAP_LOOP] = "endless_code", [GAP_STREAM] = "stream_gap",
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
	uint64_t insns = 0, skipped = 0, errors = 0, stream_gaps = 0;
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
		if (c->sliced)
			json_object_object_add(t, "slice_instructions",
					       json_object_new_int64((int64_t)r->slice_insns));
		for (g = GAP_OVERFLOW; g < GAP_NR; g++) {
			struct json_object *e = json_object_new_object();

			json_object_object_add(e, "count", json_object_new_int64((int64_t)r->gaps[g]));
			json_object_object_add(e, "bytes", json_object_new_int64((int64_t)r->gap_bytes[g]));
			json_object_object_add(sk, gap_key[g], e);
			ts += r->gap_bytes[g];
			if (g != GAP_PRE_PSB && g != GAP_STREAM)
				errors += r->gaps[g];
		}
		json_object_object_add(t, "stream_gaps",
				       json_object_new_int64((int64_t)r->gaps[GAP_STREAM]));
		stream_gaps += r->gaps[GAP_STREAM];
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
			/* a stream gap has no IP: its TSCs and bytes lost instead */
			if (it->gap != GAP_STREAM && it->ip)
				json_object_object_add(e, "ip", json_hex(it->ip));
			if (it->tsc)
				json_object_object_add(e, "tsc", json_hex(it->tsc));
			if (it->gap == GAP_STREAM) {
				json_object_object_add(e, "tsc_end", it->sgap_tsc_end ?
						       json_hex(it->sgap_tsc_end) : NULL);
				json_object_object_add(e, "bytes_lost", it->sgap_lost == UINT64_MAX ?
						       NULL :
						       json_object_new_int64((int64_t)it->sgap_lost));
			}
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
	json_object_object_add(o, "stream_gaps", json_object_new_int64((int64_t)stream_gaps));
	json_object_object_add(o, "errors", json_object_new_int64((int64_t)errors));
	/* with a slice (--time, --insn-range, ...): what the outputs saw; null: no slice */
	json_object_object_add(o, "slice_instructions", c->sliced ?
			       json_object_new_int64((int64_t)dec_slice_insns(c)) : NULL);
	json_object_object_add(o, "traces", arr);
	return o;
}

uint64_t dec_slice_insns(const struct dec_ctx *c)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < c->nr_res; i++)
		n += c->res[i].slice_insns;
	return n;
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
			if (it->gap == GAP_STREAM) {
				char gt[96];

				dec_sgap_text(it, gt, sizeof(gt));
				fprintf(f, ": %s; decoding resumed at the PSB after it\n", gt);
				continue;
			}
			fprintf(f, "; %" PRIu64 " bytes skipped to the next PSB\n", it->skipped);
		}
		if (shown > 20)
			fprintf(f, "%s: ... %zu more errors (-j lists the first 100)\n", r->trace->file,
				shown - 20);
		fprintf(f, "%s: %" PRIu64 " instructions from %zu bytes in %zu segments", r->trace->file,
			r->insns, r->len, r->nr_segs);
		if (r->gaps[GAP_STREAM])
			fprintf(f, "; %" PRIu64 " stream gap%s", r->gaps[GAP_STREAM],
				r->gaps[GAP_STREAM] == 1 ? "" : "s");
		for (g = GAP_OVERFLOW; g < GAP_NR; g++)
			if (r->gaps[g] && g != GAP_STREAM)
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
	if (c->sliced)
		fprintf(f, "slice: %" PRIu64 " of them in the outputs\n", dec_slice_insns(c));
}

// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: --insn and --calls as JSON Lines (--jsonl), one object per
 * line (Documentation/decode.rst, "JSON outputs"): what the text forms say,
 * with a key for each column, 64-bit addresses as hex strings, and the
 * --fields context (tid, cpu, time) as keys.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <Zydis/Zydis.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

struct json_sink {
	struct dec_sink k;
	bool calls;		/* --calls, else --insn */
	ZydisFormatter zf;
};

/* ,"KEY":"0xV" */
static void put_hex(FILE *f, const char *key, uint64_t v)
{
	fprintf(f, ",\"%s\":\"0x%" PRIx64 "\"", key, v);
}

/*
 * ,"time_ns":T (ns since the decode's first TSC) or, when the TSC's
 * frequency and a time conversion are both unknown, ,"time_tsc":T (TSC
 * ticks since it); null where the decoder had no time (as "-" in text).
 */
static void put_time(const struct dec_stream *st, FILE *f, uint64_t tsc)
{
	uint64_t ns;

	if (st->time_ok) {
		fputs(",\"time_ns\":", f);
		if (tsc && tsc >= st->c->t0 && dec_tsc_ns(st->c, tsc, &ns) && ns >= st->ns0)
			fprintf(f, "%" PRIu64, ns - st->ns0);
		else
			fputs("null", f);
		return;
	}
	fputs(",\"time_tsc\":", f);
	if (st->c->timed && tsc && tsc >= st->c->t0)
		fprintf(f, "%" PRIu64, tsc - st->c->t0);
	else
		fputs("null", f);
}

/* The --fields keys of @which (tid, cpu, time at @tsc), as the text columns. */
static void put_fields(const struct dec_stream *st, FILE *f, unsigned int which, uint64_t tsc)
{
	const struct dec_trace *t = st->res->trace;
	unsigned int w = which & st->o->fields;

	if (w & DEC_FIELD_TID) {
		long id = dec_stream_tid(st);

		if (id > 0)
			fprintf(f, ",\"tid\":%ld", id);
		else
			fputs(",\"tid\":null", f);
	}
	if (w & DEC_FIELD_CPU) {
		if (t->cpu >= 0)
			fprintf(f, ",\"cpu\":%d", t->cpu);
		else
			fputs(",\"cpu\":null", f);
	}
	if (w & DEC_FIELD_TIME)
		put_time(st, f, tsc);
}

/* ,"ip":"0x..","sym":..,"dso":..,"off":"0x.." of @ip in the stream's code. */
static void put_where(struct dec_stream *st, FILE *f, const char *key, uint64_t ip)
{
	const struct dec_symc *sc = dec_stream_sym(st, ip);

	put_hex(f, key, ip);
	fputs(",\"sym\":", f);
	if (sc->sym)
		dec_json_str(f, sc->sym->name);
	else
		fputs("null", f);
	fputs(",\"dso\":", f);
	if (sc->mod)
		dec_json_str(f, sc->mod->name);
	else
		fputs("null", f);
	if (sc->sym)
		put_hex(f, "off", ip - sc->sym->start);
	else if (sc->mod)
		put_hex(f, "off", ip - sc->mod->bias);
	else
		fputs(",\"off\":null", f);
}

/* {"type":"@type" and the line's --fields keys (@which), at time @tsc */
static void line_begin(struct dec_stream *st, FILE *f, const char *type, unsigned int which,
		       uint64_t tsc)
{
	fprintf(f, "{\"type\":\"%s\"", type);
	put_fields(st, f, which, tsc);
}

static void json_trace_begin(struct dec_sink *k, struct dec_stream *st, size_t i)
{
	(void)i;
	if (st->c->nr_res <= 1)
		return;
	fputs("{\"type\":\"trace\",\"file\":", k->f);
	dec_json_str(k->f, st->res->trace->file);
	fputs("}\n", k->f);
}

static void json_insn(struct dec_sink *k, struct dec_stream *st, uint64_t ip, unsigned int size,
		      bool last, const struct dec_item *b)
{
	struct json_sink *s = (struct json_sink *)k;
	const struct dec_outputs *o = st->o;
	FILE *f = k->f;

	(void)last;
	line_begin(st, f, "insn", ~0u, st->line_tsc);
	fprintf(f, ",\"insn_nr\":%" PRIu64, st->idx);
	put_where(st, f, "ip", ip);
	if (o->lines) {
		char lbuf[256];
		const char *l = dec_stream_line(st, ip, lbuf, sizeof(lbuf));

		fputs(",\"line\":", f);
		if (l)
			dec_json_str(f, l);
		else
			fputs("null", f);
	}
	if (o->disasm) {
		ZydisDecodedInstruction zi;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		char text[256];
		size_t n = 0;
		const uint8_t *bytes = dec_code_at(st->c, b->isid, ip, &n);

		fputs(",\"asm\":", f);
		if (bytes && n >= size &&
		    ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec_zydis(b->mode), bytes, size, &zi, ops)) &&
		    ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&s->zf, &zi, ops,
								  zi.operand_count_visible,
								  text, sizeof(text), ip, NULL)))
			dec_json_str(f, text);
		else
			fputs("null", f);
	}
	fputs("}\n", f);
}

static void json_unshown(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
			 uint32_t n)
{
	line_begin(st, k->f, "unshown", ~0u, st->line_tsc);
	fprintf(k->f, ",\"insn_nr\":%" PRIu64 ",\"count\":%" PRIu32, st->idx, n);
	put_hex(k->f, "ip", b->ip);
	fputs("}\n", k->f);
}

/* A lost-trace or stream-gap item: the same for --insn and --calls. */
static void json_gap(struct dec_stream *st, FILE *f, const struct dec_item *it, unsigned int which,
		     uint64_t tsc)
{
	if (it->gap == GAP_STREAM) {
		char g[96];

		line_begin(st, f, "gap", which, tsc);
		fprintf(f, ",\"insn_nr\":%" PRIu64, st->idx);
		put_hex(f, "offset", it->off);
		fputs(",\"text\":", f);
		dec_sgap_text(it, g, sizeof(g));
		dec_json_str(f, g);
		fputs("}\n", f);
		return;
	}
	line_begin(st, f, "lost", which, tsc);
	fprintf(f, ",\"insn_nr\":%" PRIu64 ",\"reason\":", st->idx);
	dec_json_str(f, dec_gap_name((enum dec_gap)it->gap));
	put_hex(f, "offset", it->off);
	fputs(",\"error\":", f);
	if (it->code < 0)
		dec_json_str(f, pt_errstr(pt_errcode(it->code)));
	else
		fputs("null", f);
	fprintf(f, ",\"bytes_skipped\":%" PRIu64 "}\n", it->skipped);
}

/*
 * "disabled": where tracing stopped and why, as dec_disabled_str() says it
 * in text: "at" (the instruction), "reason", "target" (outside the traced
 * range), each where known, and that text.
 */
static void json_disabled(struct dec_stream *st, FILE *f, const struct dec_item *it)
{
	bool far = st->have_last && (st->last_iclass == ptic_far_call ||
				     st->last_iclass == ptic_far_return ||
				     st->last_iclass == ptic_far_jump);
	const char *reason = NULL;
	char buf[128];
	size_t n;

	if (it->code == DEC_DIS_ASYNC && it->ip) {
		put_hex(f, "at", it->ip);
		reason = "interrupt or fault";
	} else if (it->code == DEC_DIS_SYNC && far) {
		put_hex(f, "at", st->last_ip);
		reason = "system call or far transfer";
	} else if (it->code == DEC_DIS_SYNC && it->ip) {
		if (st->have_last)
			put_hex(f, "at", st->last_ip);
		put_hex(f, "target", it->ip);
		reason = "branch outside the traced range";
	} else if (st->have_last) {
		put_hex(f, "at", st->last_ip);
	}
	fputs(",\"reason\":", f);
	if (reason)
		dec_json_str(f, reason);
	else
		fputs("null", f);
	/* the text line without its brackets */
	dec_disabled_str(st, it, buf, sizeof(buf));
	n = strlen(buf);
	if (n >= 2 && buf[n - 1] == ']')
		buf[n - 1] = 0;
	fputs(",\"text\":", f);
	dec_json_str(f, buf[0] == '[' ? buf + 1 : buf);
}

static void json_event(struct dec_sink *k, struct dec_stream *st, const struct dec_item *it)
{
	struct json_sink *s = (struct json_sink *)k;
	uint64_t tsc = it->tsc ? it->tsc : st->now_tsc;
	FILE *f = k->f;

	if (s->calls) {
		/* --calls shows lost trace only, with its own time column */
		if (it->kind == DI_GAP)
			json_gap(st, f, it, DEC_FIELD_TID | DEC_FIELD_CPU, 0);
		return;
	}
	switch (it->kind) {
	case DI_GAP:
		json_gap(st, f, it, ~0u, tsc);
		return;
	case DI_ENABLED:
		line_begin(st, f, "enabled", ~0u, tsc);
		put_hex(f, "ip", it->ip);
		break;
	case DI_DISABLED:
		line_begin(st, f, "disabled", ~0u, tsc);
		json_disabled(st, f, it);
		break;
	case DI_ASYNC:
		line_begin(st, f, "interrupt", ~0u, tsc);
		put_hex(f, "ip", it->ip);
		break;
	case DI_EOS:
		line_begin(st, f, "end", ~0u, tsc);
		break;
	case DI_PROCESS:
		/* each segment starts with one: shown when the process changes */
		if (it->code == st->shown_pid)
			return;
		line_begin(st, f, "process", ~0u, tsc);
		fprintf(f, ",\"pid\":%d", it->code);
		break;
	default:
		return;
	}
	fprintf(f, ",\"insn_nr\":%" PRIu64 "}\n", st->idx);
}

/* A call or return line of --calls: the time (when timed), as its text column. */
static void json_callret(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
			 unsigned int depth, const char *type)
{
	FILE *f = k->f;

	line_begin(st, f, type, DEC_FIELD_TID | DEC_FIELD_CPU, 0);
	fprintf(f, ",\"insn_nr\":%" PRIu64, st->idx);
	if (st->c->timed)
		put_time(st, f, st->prev_tsc);
	fprintf(f, ",\"depth\":%u", depth);
	put_where(st, f, "target", b->ip);
	fputs("}\n", f);
}

static void json_call(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
		      unsigned int depth)
{
	json_callret(k, st, b, depth, "call");
}

static void json_ret(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
		     unsigned int depth, bool popped)
{
	(void)popped;
	if (!st->unwinding)	/* one record for a return that unwinds several calls */
		json_callret(k, st, b, depth, "return");
}

static void json_end(struct dec_sink *k, struct dec_stream *st)
{
	(void)st;
	free(k);
}

static const struct dec_sink_ops insn_json_ops = {
	.name = "insn-json",
	.needs = DEC_NEED_BLOCKS | DEC_NEED_EVERY_INSN,
	.trace_begin = json_trace_begin,
	.insn = json_insn,
	.unshown = json_unshown,
	.event = json_event,
	.end = json_end,
};

static const struct dec_sink_ops calls_json_ops = {
	.name = "calls-json",
	.needs = DEC_NEED_BLOCKS,
	.trace_begin = json_trace_begin,
	.call = json_call,
	.ret = json_ret,
	.event = json_event,
	.end = json_end,
};

struct dec_sink *dec_sink_insn_json(struct dec_stream *st, FILE *f)
{
	struct json_sink *s = dec_xcalloc(1, sizeof(*s));

	(void)st;
	s->k.ops = &insn_json_ops;
	s->k.f = f;
	ZydisFormatterInit(&s->zf, ZYDIS_FORMATTER_STYLE_INTEL);
	return &s->k;
}

struct dec_sink *dec_sink_calls_json(struct dec_stream *st, FILE *f)
{
	struct json_sink *s = dec_xcalloc(1, sizeof(*s));

	(void)st;
	s->k.ops = &calls_json_ops;
	s->k.f = f;
	s->calls = true;
	return &s->k;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: --insn, one line per instruction and per event
 * (Documentation/decode.rst, "Outputs").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <Zydis/Zydis.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

struct insn_sink {
	struct dec_sink k;
	ZydisFormatter zf;
};

static void insn_trace_begin(struct dec_sink *k, struct dec_stream *st, size_t i)
{
	(void)i;
	if (st->c->nr_res > 1)
		fprintf(k->f, "[trace %s]\n", st->res->trace->file);
}

/*
 * --insn's "%016x  %-40s" of @ip and dec_sym_fmt_at()'s "sym+0xoff",
 * "dso+0xoff" or "0xaddr" (the stream's per-address cache of it), then a
 * newline if @nl, in one unlocked write and without stdio's format
 * parsing: per instruction, vfprintf was the largest cost of --insn.
 */
static void put_insn_head(struct dec_stream *st, FILE *f, uint64_t ip, bool nl)
{
	static const char hx[] = "0123456789abcdef";
	char line[16 + 2 + 512 + 40 + 1], *p = line + 18;
	size_t l;
	const char *sym = dec_stream_fmt_fast(st, ip, &l);
	int i;

	for (i = 15; i >= 0; i--, ip >>= 4)
		line[i] = hx[ip & 15];
	line[16] = line[17] = ' ';
	memcpy(p, sym, l);
	p += l;
	if (l < 40) {
		memset(p, ' ', 40 - l);
		p += 40 - l;
	}
	if (nl)
		*p++ = '\n';
	fwrite_unlocked(line, 1, (size_t)(p - line), f);
}

static void insn_insn(struct dec_sink *k, struct dec_stream *st, uint64_t ip, unsigned int size,
		      bool last, const struct dec_item *b)
{
	struct insn_sink *s = (struct insn_sink *)k;
	const struct dec_outputs *o = st->o;
	FILE *f = k->f;

	(void)last;
	if (o->fields)
		dec_stream_fields(st, f, ~0u, st->line_tsc);
	put_insn_head(st, f, ip, !o->lines && !o->disasm);
	if (!o->lines && !o->disasm)
		return;
	if (o->lines) {
		char lbuf[256];
		const char *l = dec_stream_line(st, ip, lbuf, sizeof(lbuf));

		fprintf(f, o->disasm ? "  %-24s" : "  %s", l ? l : "-");
	}
	if (o->disasm) {
		ZydisDecodedInstruction zi;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		char text[256];
		size_t n = 0;
		const uint8_t *bytes = dec_code_at(st->c, b->isid, ip, &n);

		if (bytes && n >= size &&
		    ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec_zydis(b->mode), bytes, size, &zi, ops)) &&
		    ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&s->zf, &zi, ops,
								  zi.operand_count_visible,
								  text, sizeof(text), ip, NULL)))
			fprintf(f, "  %s", text);
		else
			fprintf(f, "  (bytes unavailable)");
	}
	fputc('\n', f);
}

static void insn_unshown(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
			 uint32_t n)
{
	if (st->o->fields)
		dec_stream_fields(st, k->f, ~0u, st->line_tsc);
	fprintf(k->f, "[%" PRIu32 " instructions from %#" PRIx64
		" not shown: their code is unreadable]\n", n, b->ip);
}

static void insn_event(struct dec_sink *k, struct dec_stream *st, const struct dec_item *it)
{
	FILE *f = k->f;

	if (st->o->fields && (it->kind != DI_PROCESS || it->code != st->shown_pid))
		dec_stream_fields(st, f, ~0u, it->tsc ? it->tsc : st->now_tsc);
	switch (it->kind) {
	case DI_GAP:
		if (it->gap == GAP_STREAM) {
			char g[96];

			dec_sgap_text(it, g, sizeof(g));
			fprintf(f, "[%s, at offset %#" PRIx64 "]\n", g, it->off);
			break;
		}
		fprintf(f, "[lost trace: %s at offset %#" PRIx64 "%s%s, %" PRIu64
			" bytes skipped to the next PSB]\n",
			dec_gap_name((enum dec_gap)it->gap), it->off,
			it->code < 0 ? ": " : "",
			it->code < 0 ? pt_errstr(pt_errcode(it->code)) : "",
			it->skipped);
		break;
	case DI_ENABLED:
		fprintf(f, "[enabled at %#" PRIx64 "]\n", it->ip);
		break;
	case DI_DISABLED: {
		char buf[128];

		fprintf(f, "%s\n", dec_disabled_str(st, it, buf, sizeof(buf)));
		break;
	}
	case DI_ASYNC:
		fprintf(f, "[interrupt at %#" PRIx64 "]\n", it->ip);
		break;
	case DI_EOS:
		fprintf(f, "[end of trace]\n");
		break;
	case DI_PROCESS:
		/* each segment starts with one: shown when it changes */
		if (it->code != st->shown_pid)
			fprintf(f, "[process %d]\n", it->code);
		break;
	}
}

static void insn_end(struct dec_sink *k, struct dec_stream *st)
{
	(void)st;
	free(k);
}

static const struct dec_sink_ops insn_ops = {
	.name = "insn",
	.needs = DEC_NEED_BLOCKS | DEC_NEED_EVERY_INSN,
	.trace_begin = insn_trace_begin,
	.insn = insn_insn,
	.unshown = insn_unshown,
	.event = insn_event,
	.end = insn_end,
};

struct dec_sink *dec_sink_insn(struct dec_stream *st, FILE *f)
{
	struct insn_sink *s = dec_xcalloc(1, sizeof(*s));

	(void)st;
	s->k.ops = &insn_ops;
	s->k.f = f;
	ZydisFormatterInit(&s->zf, ZYDIS_FORMATTER_STYLE_INTEL);
	return &s->k;
}

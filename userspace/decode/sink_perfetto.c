// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: --perfetto, Chrome trace-event JSON: a "B" event at each
 * call, an "E" at its return repeating the "B"'s name and args
 * (Documentation/decode.rst, "Outputs").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "internal.h"
#include "sink.h"

/* An open span, so that its "E" repeats its "B"'s name and args. */
struct pspan {
	const char *name;		/* the function, or NULL: named by @mod + offset */
	const struct dec_module *mod;
	uint64_t ip;			/* the callee's address */
};

struct perfetto_sink {
	struct dec_sink k;
	struct dec_obuf out;		/* the events, written a buffer at a time */
	struct pspan *pspans;		/* [depth - 1]: the innermost open call */
	size_t pspans_cap;
	unsigned int open;		/* spans open: pspans[0, open) */
	long ppid;			/* the track's process id (0: unknown) */
	long *ppids;			/* processes named so far ("process_name") */
	size_t nr_ppids;
	bool first;			/* no event written yet */
	uint64_t ev_tsc;		/* the newest time given to an event */
	uint64_t ev_ps;			/* its time in ps, after the 1 ps steps (below) */
	bool have_ev_ps;
};

/*
 * An event at the current place: at the time of the block before
 * (microseconds since the run's first TSC, never going back) when the
 * trace is timed and the TSC's frequency known, else at the instruction
 * count.
 */
/* @v in decimal at @p (no sign): returns the end. */
static char *put_u64(char *p, uint64_t v)
{
	char d[20];
	int n = 0;

	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = d[--n];
	return p;
}

static void perfetto_ev(struct perfetto_sink *s, struct dec_stream *st, char ph,
			const struct pspan *sp)
{
	struct dec_obuf *o = &s->out;
	uint64_t ns, ps;
	char *p = dec_obuf_room(o, 128);

	/* "%s{\"ph\":\"%c\",\"pid\":%ld,\"tid\":%u,\"ts\":" by hand: one per call and return */
	if (!s->first) {
		*p++ = ',';
		*p++ = '\n';
	}
	memcpy(p, "{\"ph\":\"", 7);
	p += 7;
	*p++ = ph;
	memcpy(p, "\",\"pid\":", 8);
	p += 8;
	if (s->ppid < 0) {
		*p++ = '-';
		p = put_u64(p, -(uint64_t)s->ppid);
	} else {
		p = put_u64(p, (uint64_t)s->ppid);
	}
	memcpy(p, ",\"tid\":", 7);
	p += 7;
	p = put_u64(p, st->tid);
	memcpy(p, ",\"ts\":", 6);
	p += 6;
	if (st->time_ok) {
		if (st->prev_tsc > s->ev_tsc)
			s->ev_tsc = st->prev_tsc;
		if (!s->ev_tsc || !dec_tsc_ns(st->c, s->ev_tsc, &ns) || ns < st->ns0)
			ns = st->ns0;
		ns -= st->ns0;
		/*
		 * Strictly later than the track's event before, by 1 ps when
		 * the time is the same: speedscope pairs a "B" and an "E" of
		 * one name at one time as a zero-length span (trace-event.ts
		 * selectQueueToTakeFromNext), which is wrong for a return from
		 * f followed by the next call to f within one TSC step.
		 */
		ps = ns * 1000;
		if (s->have_ev_ps && ps <= s->ev_ps)
			ps = s->ev_ps + 1;
		s->ev_ps = ps;
		s->have_ev_ps = true;
		/* "%" PRIu64 ".%06" PRIu64 */
		p = put_u64(p, ps / 1000000);
		*p++ = '.';
		for (int i = 5, fr = (int)(ps % 1000000); i >= 0; i--, fr /= 10)
			p[i] = (char)('0' + fr % 10);
		p += 6;
	} else {
		p = put_u64(p, st->idx);
	}
	s->first = false;
	memcpy(p, ",\"name\":", 8);
	dec_obuf_done(o, p + 8);
	if (sp->name) {
		dec_obuf_json_str(o, sp->name);
	} else {
		/* no symbol: DSO+offset (as --insn shows it), the address in args */
		char buf[320];

		if (sp->mod)
			snprintf(buf, sizeof(buf), "%s+%#" PRIx64, sp->mod->name, sp->ip - sp->mod->bias);
		else
			snprintf(buf, sizeof(buf), "%#" PRIx64, sp->ip);
		dec_obuf_json_str(o, buf);
		snprintf(buf, sizeof(buf), ",\"args\":{\"addr\":\"%#" PRIx64 "\"}", sp->ip);
		dec_obuf_put(o, buf, strlen(buf));
	}
	dec_obuf_put(o, "}", 1);
}

/* Open a span for a call into @ip, at depth @depth + 1. */
static void open_span(struct perfetto_sink *s, struct dec_stream *st, unsigned int depth,
		      uint64_t ip)
{
	const struct dec_symc *sc;
	struct pspan *sp;

	if (depth + 1 > s->pspans_cap) {
		s->pspans_cap = (depth + 1) * 2;
		s->pspans = dec_xrealloc(s->pspans, s->pspans_cap * sizeof(*s->pspans));
	}
	sp = &s->pspans[depth];
	sc = dec_stream_sym(st, ip);
	sp->name = sc->sym ? sc->sym->name : NULL;
	sp->mod = sc->mod;
	sp->ip = ip;
	perfetto_ev(s, st, 'B', sp);
	s->open = depth + 1;
}

/* A call into @b, at depth @depth + 1. */
static void perfetto_call(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
			  unsigned int depth)
{
	struct perfetto_sink *s = (struct perfetto_sink *)k;

	open_span(s, st, depth, b->ip);
}

/* Close the innermost span (now at @depth): "E" with the same name and args. */
static void perfetto_ret(struct dec_sink *k, struct dec_stream *st, const struct dec_item *b,
			 unsigned int depth, bool popped)
{
	struct perfetto_sink *s = (struct perfetto_sink *)k;

	(void)b;
	if (popped && depth < s->open) {
		perfetto_ev(s, st, 'E', &s->pspans[depth]);
		s->open = depth;
	}
}

/* Entering a slice: the calls open there, as spans that start now. */
static void perfetto_enter(struct dec_sink *k, struct dec_stream *st)
{
	struct perfetto_sink *s = (struct perfetto_sink *)k;
	unsigned int d;

	for (d = 0; d < st->depth; d++)
		open_span(s, st, d, st->frames[d].target);
}

static void perfetto_trace_begin(struct dec_sink *k, struct dec_stream *st, size_t i)
{
	struct perfetto_sink *s = (struct perfetto_sink *)k;
	const struct dec_trace_result *res = st->res;
	const struct dec_input *in = st->c->in;
	FILE *f = k->f;
	const char *comm;
	char name[128];
	size_t n;

	dec_obuf_flush(&s->out);
	s->ev_tsc = 0;
	s->open = 0;
	s->ev_ps = 0;
	s->have_ev_ps = false;
	/*
	 * The track's process: the trace's own (per thread), else the one
	 * process the decode is about (--pid, the capture's program); 0 when
	 * unknown (raw traces, per-CPU switching).
	 */
	s->ppid = res->trace->pid > 0 ? res->trace->pid :
		  in->pid > 0 ? in->pid :
		  !in->nr_sched && in->program_pid > 0 ? in->program_pid : 0;
	for (n = 0; n < s->nr_ppids && s->ppids[n] != s->ppid; n++)
		;
	if (n == s->nr_ppids) {
		s->ppids = dec_xrealloc(s->ppids, (s->nr_ppids + 1) * sizeof(*s->ppids));
		s->ppids[s->nr_ppids++] = s->ppid;
		comm = s->ppid > 0 ? dec_input_comm(in, s->ppid, 0) : NULL;
		if (comm)
			snprintf(name, sizeof(name), "%s", comm);
		else if (s->ppid > 0)
			snprintf(name, sizeof(name), "process %ld", s->ppid);
		else
			snprintf(name, sizeof(name), "unknown process");
		fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%ld,\"tid\":%u,"
			"\"args\":{\"name\":", s->first ? "" : ",\n", s->ppid, st->tid);
		dec_json_str(f, name);
		fprintf(f, "}}");
		s->first = false;
	}
	if (res->trace->tid > 0) {
		comm = dec_input_comm(in, res->trace->pid, res->trace->tid);
		if (comm)
			snprintf(name, sizeof(name), "%s (thread %ld)", comm, res->trace->tid);
		else
			snprintf(name, sizeof(name), "thread %ld", res->trace->tid);
	} else {
		snprintf(name, sizeof(name), res->trace->cpu >= 0 ? "cpu%d" : "trace%d",
			 res->trace->cpu >= 0 ? res->trace->cpu : (int)i);
	}
	fprintf(f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%ld,\"tid\":%u,"
		"\"args\":{\"name\":", s->first ? "" : ",\n", s->ppid, st->tid);
	dec_json_str(f, name);
	fprintf(f, "}}");
	s->first = false;
}

/* Close whatever is still open, so that spans always nest. */
static void perfetto_trace_end(struct dec_sink *k, struct dec_stream *st)
{
	struct perfetto_sink *s = (struct perfetto_sink *)k;

	while (s->open) {
		s->open--;
		perfetto_ev(s, st, 'E', &s->pspans[s->open]);
	}
}

static void perfetto_end(struct dec_sink *k, struct dec_stream *st)
{
	struct perfetto_sink *s = (struct perfetto_sink *)k;

	(void)st;
	dec_obuf_free(&s->out);
	fprintf(k->f, "\n]}\n");
	free(s->pspans);
	free(s->ppids);
	free(s);
}

static const struct dec_sink_ops perfetto_ops = {
	.name = "perfetto",
	.needs = DEC_NEED_BLOCKS,
	.trace_begin = perfetto_trace_begin,
	.call = perfetto_call,
	.ret = perfetto_ret,
	.trace_end = perfetto_trace_end,
	.end = perfetto_end,
	.enter = perfetto_enter,
	.leave = perfetto_trace_end,	/* leaving a slice closes what is open */
};

struct dec_sink *dec_sink_perfetto(struct dec_stream *st, FILE *f)
{
	struct perfetto_sink *s = dec_xcalloc(1, sizeof(*s));
	const struct dec_ctx *c = st->c;
	char meta[512];

	s->k.ops = &perfetto_ops;
	s->k.f = f;
	s->first = true;
	dec_obuf_init(&s->out, f);
	/*
	 * What "ts" is, in the trace-event format's free-form "otherData"
	 * (chrome://tracing) and in "metadata" (Perfetto keeps it as
	 * json_metadata.*): an untimed trace's "ts" are instruction numbers,
	 * shown as microseconds.
	 */
	snprintf(meta, sizeof(meta), "{\"generator\":\"ipttool decode\",\"ts_unit\":\"%s\","
		 "\"ts_note\":\"%s\"}", st->time_ok ? "microseconds" : "instructions",
		 st->time_ok ? "ts: microseconds since the first TSC of the decode" :
		 c->timed ? "untimed: the TSC frequency is unknown; ts is the instruction "
			    "number of each trace, shown as microseconds, not a time" :
		 "untimed: the trace has no TSC packets; ts is the instruction number of "
		 "each trace, shown as microseconds, not a time");
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":%s,"
		"\"metadata\":%s,\"traceEvents\":[\n", meta, meta);
	return &s->k;
}

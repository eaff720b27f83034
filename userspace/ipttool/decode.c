// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool decode: decode PT traces (an ipt capture, a ptgen directory or
 * ptxed-style inputs) with libipt into instruction traces, call traces,
 * profiles, folded stacks, Perfetto timelines, coverage and packet dumps.
 * The work is done by userspace/decode/; this is the command line.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipttool.h"
#include "../decode/decode.h"

static void decode_usage(FILE *f)
{
	fprintf(f,
		"Usage: ipttool [-j] decode [DIR] [INPUTS] [OUTPUTS] [OPTIONS]\n\n"
		"DIR is an ipt capture (meta.json, cpuN.pt) or a ptgen output directory.\n"
		"Inputs (ptxed-style, for raw PT from anywhere):\n"
		"  --pt FILE[:FROM[-TO]]     a raw PT trace (repeatable), or its bytes FROM-TO\n"
		"  --elf FILE[:BASE]         an ELF's executable segments (ET_DYN loaded at BASE)\n"
		"  --raw FILE:BASE           raw code bytes loaded at BASE\n"
		"  --raw FILE:FROM[-TO]:BASE ptxed's: from file offset FROM (to TO) at BASE\n"
		"  --raw FILE:OFF:SIZE:BASE  SIZE bytes at file offset OFF loaded at BASE\n"
		"  --cpu F/M[/S]|auto|none   the CPU (for errata); captures carry it\n"
		"  --pid PID                 capture: take PID's code from the sideband\n"
		"  --kcore[=FILE]            the running kernel's text from /proc/kcore (or FILE)\n"
		"  --kallsyms FILE           its symbols and _stext/_etext (default /proc/kallsyms)\n"
		"  --modules FILE            modules' code from the core too (default with\n"
		"                            /proc/kcore: /proc/modules)\n"
		"  --debuginfo-path PATH     where to look for separate debug files (libdwfl's\n"
		"                            syntax; default :.debug:/usr/lib/debug)\n"
		"  --mtc-freq N, --nom-freq N, --cpuid-0x15 EAX/EBX[/ECX]   timing parameters\n"
		"  --cpuid-0x15.eax N, --cpuid-0x15.ebx N, --cpuid-0x15.ecx N  (ptxed's spelling)\n"
		"Outputs (to stdout, or to FILE with =FILE; at most one on stdout):\n"
		"  --insn[=FILE]             instruction trace: address, symbol+offset\n"
		"  --disasm                  add Zydis disassembly to --insn\n"
		"  --lines                   add file:line (DWARF) to --insn\n"
		"  --calls[=FILE]            call/return trace with indentation\n"
		"  --jsonl                   --insn and --calls as JSON Lines (one object a line)\n"
		"  --profile[=FILE]          flat per-function and per-DSO instruction counts\n"
		"  --folded[=FILE]           folded stacks (instructions) for flame graphs\n"
		"  --folded-time             count --folded in time (ns) instead of instructions\n"
		"  --blocks[=FILE]           executed blocks and taken edges with counts\n"
		"  --packets[=FILE]          packet dump\n"
		"  --perfetto FILE           Chrome trace-event JSON (Perfetto, chrome://tracing)\n"
		"  --drcov FILE              drcov version 2 coverage (Lighthouse, ...)\n"
		"Options:\n"
		"  --insn-decoder            libipt's instruction decoder instead of the block decoder\n"
		"  -J, --jobs N              decode on N threads (default: online CPUs)\n"
		"  --no-split                decode each trace as one segment (no parallelism)\n"
		"  -j                        the summary as JSON on stdout (else text on stderr)\n"
		"  -q, --quiet               no progress line on a terminal\n"
		"  --progress                the progress line also when stderr is not a terminal\n"
		"Slicing (every output, the summary too, sees only this part):\n"
		"  --time START-END          time since the first TSC: 1.5 (s), 200ms, 30us, 40ns,\n"
		"                            or TSC ticks: 5000tsc; either end may be left out;\n"
		"                            several: 'A-B C-D'; perf's 10%%-20%%,30%%-40%%, 10%%/2, 25%%\n"
		"  --insn-range A-B          instruction numbers of each trace (as --calls shows)\n"
		"  --tid T[,T..]             the traces of these threads\n"
		"  -C, --cpus N[,N..]        the traces of these CPUs\n"
		"  --symbol SYM              what runs inside function SYM, callees included\n"
		"  --last N                  the last N instructions of each trace\n"
		"  --last-branches N         each trace from where its N-th last taken branch went\n"
		"  -F, --fields tid,cpu,time columns before each --insn line (tid, cpu: --calls too)\n"
		"\nSee ipttool-decode(8) and Documentation/decode.rst.\n");
}

enum {
	O_PT = 256, O_ELF, O_RAW, O_CPU, O_MTC, O_NOM, O_C15, O_INSN, O_DISASM, O_CALLS,
	O_PROFILE, O_FOLDED, O_BLOCKS, O_PACKETS, O_PERFETTO, O_DRCOV, O_INSNDEC, O_NOSPLIT,
	O_PID, O_LINES, O_KCORE, O_KALLSYMS, O_MODULES, O_FOLDTIME, O_PROGRESS,
	O_DEBUGINFO, O_JSONL,
	/* ptxed's spellings (ptgen's ptxed-args) */
	O_C15A, O_C15B, O_C15C, O_BLOCKDEC,
};

/* ---- slicing (Documentation/decode.rst, "Slicing") ---------------------------- */

enum { O_SL_TIME = 1024, O_SL_RANGE, O_SL_TID, O_SL_SYMBOL, O_SL_LAST, O_SL_LASTBR };

/* and the line context of --fields (perf script -F): 'F' */

static const struct option slice_opts[] = {
	{ "time", required_argument, NULL, O_SL_TIME },
	{ "insn-range", required_argument, NULL, O_SL_RANGE },
	{ "tid", required_argument, NULL, O_SL_TID },
	{ "cpus", required_argument, NULL, 'C' },
	{ "symbol", required_argument, NULL, O_SL_SYMBOL },
	{ "last", required_argument, NULL, O_SL_LAST },
	{ "last-branches", required_argument, NULL, O_SL_LASTBR },
	{ "fields", required_argument, NULL, 'F' },
};

struct slice_args {
	struct dec_slice sl;
	struct dec_time_range times[64];
	long tids[64];
	int cpus[64];
	unsigned int fields;	/* --fields: DEC_FIELD_* */
};

/* A whole unsigned number, decimal or 0x hex. */
static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	if (!*s || *s == '-' || *s == '+')
		return false;
	*v = strtoull(s, &end, 0);
	return !errno && !*end;
}

/*
 * One end of --time: "" (open), a number of seconds ("1.5", as --calls
 * prints), or with a unit: s, ms, us, ns, tsc (TSC ticks).  @tsc: the unit
 * was tsc (all others are ns).
 */
static bool parse_time_end(const char *s, size_t len, bool *have, uint64_t *v, int *tsc)
{
	static const struct { const char *u; uint64_t mul; } units[] = {
		{ "tsc", 1 }, { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	};
	char buf[64], *p = buf, *frac;
	uint64_t whole = 0, mul = 1000000000, f = 0, fmul;
	size_t i, n;

	*have = len > 0;
	if (!len)
		return true;
	if (len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		n = strlen(units[i].u);
		if (len > n && !strcmp(buf + len - n, units[i].u)) {
			buf[len - n] = 0;
			mul = units[i].mul;
			if (*tsc >= 0 && *tsc != !i)
				return false;	/* tsc and ns ends mixed */
			*tsc = !i;
			break;
		}
	}
	if (i == sizeof(units) / sizeof(units[0])) {
		if (*tsc == 1)
			return false;
		*tsc = 0;
	}
	frac = strchr(p, '.');
	if (frac)
		*frac++ = 0;
	if (!*p || strspn(p, "0123456789") != strlen(p) || (frac && (!*frac ||
	    strspn(frac, "0123456789") != strlen(frac) || mul == 1)))
		return false;
	errno = 0;
	whole = strtoull(p, NULL, 10);
	if (errno || (mul > 1 && whole > UINT64_MAX / mul))
		return false;
	for (fmul = mul / 10; frac && *frac && fmul; frac++, fmul /= 10)
		f += (uint64_t)(*frac - '0') * fmul;
	*v = whole * mul + f;
	return true;
}

/* "A-B" (or "A,B"): the two ends, either empty. */
static bool split_range(const char *s, const char **b, size_t *alen)
{
	const char *sep = strpbrk(s, "-,");

	if (!sep || strpbrk(sep + 1, "-,"))
		return false;
	*alen = (size_t)(sep - s);
	*b = sep + 1;
	return true;
}

/*
 * A percentage "A%" (A decimal, at most 6 decimals) in millionths of a
 * percent, 0..100%.
 */
static bool parse_pct(const char *s, size_t len, uint64_t *v)
{
	uint64_t whole = 0, f = 0, mul = 100000;
	size_t i = 0;

	if (len < 2 || s[len - 1] != '%')
		return false;
	len--;
	for (; i < len && s[i] >= '0' && s[i] <= '9' && whole <= 100; i++)
		whole = whole * 10 + (uint64_t)(s[i] - '0');
	if (!i || (i < len && s[i] != '.'))
		return false;
	if (i < len) {
		size_t k = ++i;

		for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
			if (!mul)
				return false;	/* finer than a millionth of a percent */
			f += (uint64_t)(s[i] - '0') * mul;
			mul /= 10;
		}
		if (i == k || i < len)
			return false;
	}
	*v = whole * 1000000 + f;
	return *v <= DEC_PCT_100;
}

/*
 * --time's argument, as perf script takes it (tools/perf/Documentation/
 * perf-script.txt, --time): ranges START-END (or START,END) separated by
 * spaces, in order and not overlapping; or percentages of the decode's
 * time, comma-separated, all of one form: A%-B% (from A% to B%), A%/N
 * (the N-th slice of A%: from (N-1)A% to NA%), or one A% (A%/1).  Into
 * @a->times.  0; -1: not that form; -2: a share of 0% (0% or 0%/N),
 * which perf refuses too (percent_slash_split(), "pcnt <= 0",
 * tools/perf/util/time-utils.c:244 in Linux 6.1).  Ranges that hold one
 * instant only (T-T, A%-A%) are taken, as perf takes them: the ends are
 * inclusive, and many blocks can share one time.
 */
static int parse_times(const char *arg, struct slice_args *a)
{
	struct dec_slice *sl = &a->sl;
	const char *p = arg, *b;
	size_t n = 0, alen;
	int tsc = -1;

	if (strchr(arg, '%')) {
		bool slash = strchr(arg, '/') != NULL, dash = strchr(arg, '-') != NULL;

		for (; *p; n++) {
			const char *e = strchr(p, ','), *m;
			size_t len = e ? (size_t)(e - p) : strlen(p);
			struct dec_time_range *r = &a->times[n];
			uint64_t x, y;
			char num[24], *end;

			if (n == sizeof(a->times) / sizeof(a->times[0]) || !len)
				return -1;
			r->pct = r->have_from = r->have_to = true;
			if (slash) {
				m = memchr(p, '/', len);
				if (!m || !parse_pct(p, (size_t)(m - p), &x) ||
				    len - (size_t)(m - p) - 1 >= sizeof(num))
					return -1;
				if (!x)
					return -2;
				snprintf(num, sizeof(num), "%.*s", (int)(len - (size_t)(m - p) - 1), m + 1);
				errno = 0;
				y = strtoull(num, &end, 10);
				if (errno || *end || !num[0] || num[0] == '-' || !y || y > DEC_PCT_100 ||
				    x * y > DEC_PCT_100)
					return -1;
				r->from = x * (y - 1);
				r->to = x * y;
			} else if (dash) {
				m = memchr(p, '-', len);
				if (!m || !parse_pct(p, (size_t)(m - p), &r->from) ||
				    !parse_pct(m + 1, len - (size_t)(m - p) - 1, &r->to) ||
				    r->to < r->from)
					return -1;
			} else {
				if (e || !parse_pct(p, len, &r->to))
					return -1;	/* one A% only */
				if (!r->to)
					return -2;
				r->from = 0;
			}
			p += len + (e ? 1 : 0);
			if (e && !*p)
				return -1;
		}
		sl->times = a->times;
		sl->nr_times = n;
		sl->time_tsc = false;
		return 0;
	}
	while (*p) {
		char one[128];
		size_t len = strcspn(p, " ");
		struct dec_time_range *r = &a->times[n];

		if (!len) {
			p++;
			continue;
		}
		if (n == sizeof(a->times) / sizeof(a->times[0]) || len >= sizeof(one))
			return -1;
		snprintf(one, sizeof(one), "%.*s", (int)len, p);
		if (!split_range(one, &b, &alen) ||
		    !parse_time_end(one, alen, &r->have_from, &r->from, &tsc) ||
		    !parse_time_end(b, strlen(b), &r->have_to, &r->to, &tsc) ||
		    (r->have_from && r->have_to && r->to < r->from))
			return -1;
		/* in order, not overlapping: only the first may start open, the last end open */
		if (n && (!r->have_from || !a->times[n - 1].have_to ||
			  a->times[n - 1].to >= r->from))
			return -1;
		n++;
		p += len;
	}
	if (!n)
		return -1;
	sl->times = a->times;
	sl->nr_times = n;
	sl->time_tsc = tsc == 1;
	return 0;
}

/* A slicing option: 1 taken, 0 not one, -1 wrong (after the message). */
static int slice_opt(int c, const char *arg, struct slice_args *a)
{
	struct dec_slice *sl = &a->sl;
	const char *b;
	size_t alen;

	switch (c) {
	case O_SL_TIME: {
		int pt = parse_times(arg, a);

		if (pt == -2) {
			ipt_err("--time %s: a share of 0%% selects nothing (perf refuses it too): "
				"want a share above 0, e.g. --time 10%% or --time 0%%-10%%", arg);
			return -1;
		}
		if (pt) {
			ipt_err("--time %s: want START-END, each end a time since the first TSC "
				"(1.5, 200ms, 30us, 40ns) or TSC ticks (5000tsc), or left out "
				"(START- or -END), END not before START (several: separated by "
				"spaces, in order), or perf's percentages: A%%-B%%[,C%%-D%%..], "
				"A%%/N[,B%%/M..] or A%%", arg);
			return -1;
		}
		return 1;
	}
	case O_SL_RANGE: {
		char x[32];

		if (!split_range(arg, &b, &alen) || alen >= sizeof(x))
			goto bad_range;
		memcpy(x, arg, alen);
		x[alen] = 0;
		sl->have_insn_from = alen > 0;
		sl->have_insn_to = *b != 0;
		if ((sl->have_insn_from && !parse_u64(x, &sl->insn_from)) ||
		    (sl->have_insn_to && !parse_u64(b, &sl->insn_to)) ||
		    (sl->have_insn_from && sl->have_insn_to && sl->insn_to < sl->insn_from))
			goto bad_range;
		return 1;
bad_range:
		ipt_err("--insn-range %s: want A-B, instruction numbers of each trace as --calls "
			"shows them (from 0), either left out (A- or -B), B not below A", arg);
		return -1;
	}
	case O_SL_TID:
	case 'C': {
		char *copy = strdup(arg), *tok, *save = NULL;
		int ok = copy != NULL;

		for (tok = copy ? strtok_r(copy, ",", &save) : NULL; ok && tok;
		     tok = strtok_r(NULL, ",", &save)) {
			uint64_t v;

			if (!parse_u64(tok, &v) || (c == 'C' ? v > 4095 || sl->nr_cpus >= 64 :
						    !v || v > INT32_MAX || sl->nr_tids >= 64))
				ok = 0;
			else if (c == 'C')
				a->cpus[sl->nr_cpus++] = (int)v;
			else
				a->tids[sl->nr_tids++] = (long)v;
		}
		free(copy);
		if (!ok || (c == 'C' ? !sl->nr_cpus : !sl->nr_tids)) {
			ipt_err("%s %s: want a comma-separated list of %s (at most 64)",
				c == 'C' ? "--cpus" : "--tid", arg,
				c == 'C' ? "CPU numbers" : "thread ids");
			return -1;
		}
		sl->cpus = a->cpus;
		sl->tids = a->tids;
		return 1;
	}
	case O_SL_SYMBOL:
		if (!*arg) {
			ipt_err("--symbol: want a function name, as --calls shows it");
			return -1;
		}
		sl->symbol = arg;
		return 1;
	case 'F': {
		char *copy = strdup(arg), *tok, *save = NULL;
		int ok = copy != NULL;

		a->fields = 0;
		for (tok = copy ? strtok_r(copy, ",", &save) : NULL; ok && tok;
		     tok = strtok_r(NULL, ",", &save))
			if (!strcmp(tok, "tid"))
				a->fields |= DEC_FIELD_TID;
			else if (!strcmp(tok, "cpu"))
				a->fields |= DEC_FIELD_CPU;
			else if (!strcmp(tok, "time"))
				a->fields |= DEC_FIELD_TIME;
			else
				ok = 0;
		free(copy);
		if (!ok || !a->fields) {
			ipt_err("--fields %s: want a comma-separated list of tid, cpu, time", arg);
			return -1;
		}
		return 1;
	}
	case O_SL_LAST:
		if (!parse_u64(arg, &sl->last) || !sl->last) {
			ipt_err("--last %s: want a number of instructions, at least 1", arg);
			return -1;
		}
		return 1;
	case O_SL_LASTBR:
		if (!parse_u64(arg, &sl->last_branches) || !sl->last_branches) {
			ipt_err("--last-branches %s: want a number of taken branches, at least 1", arg);
			return -1;
		}
		return 1;
	}
	return 0;
}

/* Does any module's symbol table name a function @name? */
static bool have_symbol(const struct dec_ctx *c, const char *name)
{
	for (size_t m = 0; c->syms && m < c->syms->nr_mods; m++)
		for (size_t i = 0; i < c->syms->mods[m].nr_syms; i++)
			if (!strcmp(c->syms->mods[m].syms[i].name, name))
				return true;
	return false;
}

/* ---- end slicing ------------------------------------------------------------- */

/*
 * The progress line on stderr: percent of segments decoded, and
 * instructions, rewritten in place on a terminal (a new line otherwise);
 * only when the percentage changes.
 */
struct decode_progress {
	bool tty;
	int last;
};

static void decode_progress(void *arg, size_t done, size_t total, uint64_t insns)
{
	struct decode_progress *p = arg;
	int pct = total ? (int)(done * 100 / total) : 100;

	if (pct == p->last)
		return;
	p->last = pct;
	fprintf(stderr, "%sdecode: %3d%% (%zu of %zu segments, %" PRIu64 " instructions)%s",
		p->tty ? "\r\033[K" : "", pct, done, total, insns, p->tty ? "" : "\n");
	if (p->tty && done == total)
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

/* Where an output goes: NULL (stdout) or a file name. */
struct outspec {
	bool on;
	const char *file;
};

static int parse_u8(const char *s, uint8_t *v)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(s, &end, 0);
	if (errno || *end || !*s || n > 255)
		return -1;
	*v = (uint8_t)n;
	return 0;
}

static FILE *open_out(const char *file, const char *what)
{
	FILE *f;

	if (!file || !strcmp(file, "-"))
		return stdout;
	f = ipt_fopen_out(file);
	if (!f)
		ipt_err("%s %s: %s (check the directory exists and is writable)", what, file,
			strerror(errno));
	return f;
}

static const char *const out_opt[OUT_NR] = {
	[OUT_INSN] = "--insn", [OUT_CALLS] = "--calls", [OUT_PROFILE] = "--profile",
	[OUT_FOLDED] = "--folded", [OUT_PERFETTO] = "--perfetto", [OUT_DRCOV] = "--drcov",
	[OUT_BLOCKS] = "--blocks",
};

/* The file of output @i (OUT_NR: --packets), or NULL for stdout. */
static const char *out_file(const struct outspec *spec, const struct outspec *packets, int i)
{
	const struct outspec *o = i < OUT_NR ? &spec[i] : packets;

	if (!o->on || !o->file || !strcmp(o->file, "-"))
		return NULL;
	return o->file;
}

/* @p's directory resolved, then its last component, into @buf; false if not. */
static bool canon(const char *p, char *buf, size_t len)
{
	const char *slash = strrchr(p, '/');
	char dir[PATH_MAX], *r;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - p) + 1 : 1, slash ? p : ".");
	r = realpath(dir, NULL);
	if (!r)
		return false;
	snprintf(buf, len, "%s/%s", r, slash ? slash + 1 : p);
	free(r);
	return true;
}

/* @a and @b (not both existing) name the same file: "x" and "./x". */
static bool same_new_file(const char *a, const char *b)
{
	char ca[PATH_MAX + 256], cb[PATH_MAX + 256];

	return canon(a, ca, sizeof(ca)) && canon(b, cb, sizeof(cb)) && !strcmp(ca, cb);
}

/*
 * Two outputs to one file would interleave: refuse (the same name, or
 * two names of one existing file).  1 after the message, else 0.
 */
static int same_file(const struct outspec *spec, const struct outspec *packets)
{
	for (int i = 0; i <= OUT_NR; i++)
		for (int k = i + 1; k <= OUT_NR; k++) {
			const char *a = out_file(spec, packets, i), *b = out_file(spec, packets, k);
			struct stat sa, sb;

			if (!a || !b)
				continue;
			if (strcmp(a, b) && (stat(a, &sa) || stat(b, &sb) || sa.st_dev != sb.st_dev ||
					     sa.st_ino != sb.st_ino) && !same_new_file(a, b))
				continue;
			ipt_err("decode: %s=%s and %s=%s name the same file: give each output a "
				"file of its own", i < OUT_NR ? out_opt[i] : "--packets", a,
				k < OUT_NR ? out_opt[k] : "--packets", b);
			return 1;
		}
	return 0;
}

/*
 * --pt FILE[:FROM[-TO]] (ptxed's): the whole file, or its bytes from FROM
 * (to the end, or to TO), read into *@buf for the decoder.  0, or 1 after
 * the message.
 */
static int add_pt(struct dec_input *in, const char *arg, uint8_t **buf)
{
	const char *c = strrchr(arg, ':');
	uint64_t from = 0, to = 0;
	int r = c ? dec_parse_range(c + 1, &from, &to) : 0;
	char file[PATH_MAX];
	struct stat st;
	size_t n;
	FILE *f;

	if (r < 0) {
		ipt_err("decode: --pt %s: the range %s ends before it begins: want FROM-TO with "
			"TO > FROM", arg, c + 1);
		return 1;
	}
	snprintf(file, sizeof(file), "%.*s", r > 0 ? (int)(c - arg) : (int)strlen(arg), arg);
	if (access(file, R_OK) || stat(file, &st)) {
		ipt_err("decode: --pt %s: %s", file, strerror(errno));
		return 1;
	}
	if (!r) {
		dec_input_add_trace(in, file, -1);
		return 0;
	}
	if (r == 1)
		to = (uint64_t)st.st_size;
	if (from >= (uint64_t)st.st_size || to > (uint64_t)st.st_size) {
		ipt_err("decode: --pt %s: %#" PRIx64 "-%#" PRIx64 " is beyond the file's %lld bytes",
			arg, from, to, (long long)st.st_size);
		return 1;
	}
	n = (size_t)(to - from);
	*buf = malloc(n ? n : 1);
	f = fopen(file, "rb");
	if (!*buf || !f || fseeko(f, (off_t)from, SEEK_SET) || fread(*buf, 1, n, f) != n) {
		ipt_err("decode: --pt %s: %s", arg, errno ? strerror(errno) : "short read");
		if (f)
			fclose(f);
		return 1;
	}
	fclose(f);
	dec_input_add_trace(in, file, -1);
	in->traces[in->nr_traces - 1].data = *buf;
	in->traces[in->nr_traces - 1].size = n;
	return 0;
}

/* The decoder library's out-of-memory handler: say so, exit status 2. */
static void decode_nomem(void)
{
	fprintf(stderr, "ipttool: out of memory\n");
	exit(2);
}

int cmd_decode(struct ipttool *t, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pt", required_argument, NULL, O_PT },
		{ "elf", required_argument, NULL, O_ELF },
		{ "raw", required_argument, NULL, O_RAW },
		{ "cpu", required_argument, NULL, O_CPU },
		{ "mtc-freq", required_argument, NULL, O_MTC },
		{ "nom-freq", required_argument, NULL, O_NOM },
		{ "cpuid-0x15", required_argument, NULL, O_C15 },
		{ "insn", optional_argument, NULL, O_INSN },
		{ "disasm", no_argument, NULL, O_DISASM },
		{ "lines", no_argument, NULL, O_LINES },
		{ "jsonl", no_argument, NULL, O_JSONL },
		{ "calls", optional_argument, NULL, O_CALLS },
		{ "profile", optional_argument, NULL, O_PROFILE },
		{ "folded", optional_argument, NULL, O_FOLDED },
		{ "folded-time", no_argument, NULL, O_FOLDTIME },
		{ "blocks", optional_argument, NULL, O_BLOCKS },
		{ "packets", optional_argument, NULL, O_PACKETS },
		{ "perfetto", required_argument, NULL, O_PERFETTO },
		{ "drcov", required_argument, NULL, O_DRCOV },
		{ "insn-decoder", no_argument, NULL, O_INSNDEC },
		{ "jobs", required_argument, NULL, 'J' },
		{ "no-split", no_argument, NULL, O_NOSPLIT },
		{ "pid", required_argument, NULL, O_PID },
		{ "kcore", optional_argument, NULL, O_KCORE },
		{ "kallsyms", required_argument, NULL, O_KALLSYMS },
		{ "modules", required_argument, NULL, O_MODULES },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "progress", no_argument, NULL, O_PROGRESS },
		{ "debuginfo-path", required_argument, NULL, O_DEBUGINFO },
		{ "help", no_argument, NULL, 'h' },
		{ "cpuid-0x15.eax", required_argument, NULL, O_C15A },
		{ "cpuid-0x15.ebx", required_argument, NULL, O_C15B },
		{ "cpuid-0x15.ecx", required_argument, NULL, O_C15C },
		{ "block-decoder", no_argument, NULL, O_BLOCKDEC },
		{ 0 }
	};
	struct option all_opts[sizeof(opts) / sizeof(opts[0]) + sizeof(slice_opts) /
			       sizeof(slice_opts[0])];
	static struct slice_args slice;
	struct outspec spec[OUT_NR] = { 0 }, packets = { 0 };
	struct dec_options dopt = { 0 };
	struct dec_outputs outs = { 0 };
	struct dec_input in;
	struct dec_ctx ctx;
	const char *dir = NULL;
	char msg[512];
	int c, i, ret = 2, on_stdout = 0;
	enum { CPU_INPUT, CPU_GIVEN, CPU_NONE, CPU_AUTO } cpu_mode = CPU_INPUT;
	struct pt_cpu cpu_opt;
	uint8_t **ptbufs = calloc((size_t)argc + 1, sizeof(uint8_t *));
	uint8_t mtc = 0, nom = 0;
	bool have_mtc = false, have_nom = false, have_c15 = false;
	uint32_t c15a = 0, c15b = 0, c15c = 0;
	unsigned int c15_parts = 0;	/* ptxed-style registers given: bit 0 eax .. 2 ecx */
	const char *kcore = NULL, *kallsyms = NULL, *modules = NULL;
	struct decode_progress prog = { .last = -1 };
	bool quiet = false, force_progress = false, summary = false, jsonl = false;
	char **pts = calloc((size_t)argc + 1, sizeof(char *));
	char **elfs = calloc((size_t)argc + 1, sizeof(char *));
	char **raws = calloc((size_t)argc + 1, sizeof(char *));
	int npt = 0, nelf = 0, nraw = 0;

	dec_set_nomem(decode_nomem);
	dec_input_init(&in);
	/* the options: the table above, then the slicing ones (the last entry of opts: zeros) */
	memcpy(all_opts, slice_opts, sizeof(slice_opts));
	memcpy(all_opts + sizeof(slice_opts) / sizeof(slice_opts[0]), opts, sizeof(opts));
	memset(&slice, 0, sizeof(slice));
	/* -j anywhere: every error, an option's too, as JSON on stdout */
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			t->json = true;
			ipt_set_json_errors(true);
		}
	/* -j: stdout holds one JSON document: errors go into it (out:) */
	ipt_defer_errors(t->json);
	opterr = 0;
	optind = 0;	/* glibc: reinitialise, so options may follow DIR */
	while ((c = getopt_long(argc, argv, "J:jqhC:F:", all_opts, NULL)) != -1) {
		switch (c) {
		case O_PT: pts[npt++] = optarg; break;
		case O_ELF: elfs[nelf++] = optarg; break;
		case O_RAW: raws[nraw++] = optarg; break;
		case O_CPU:
			/* ptxed's "none" (no errata) and its former "auto" too */
			if (!strcmp(optarg, "none")) {
				cpu_mode = CPU_NONE;
				break;
			}
			if (!strcmp(optarg, "auto")) {
				cpu_mode = CPU_AUTO;
				break;
			}
			if (dec_parse_cpu(optarg, &cpu_opt)) {
				ipt_err("--cpu %s: want FAMILY/MODEL[/STEPPING], e.g. 6/126/5 ('ipttool "
					"info' prints it), auto or none", optarg);
				goto out;
			}
			cpu_mode = CPU_GIVEN;
			break;
		case O_MTC:
			/*
			 * IA32_RTIT_CTL.MTCFreq is bits 17:14 (SDM Vol. 3C, Intel
			 * PT chapter, "IA32_RTIT_CTL MSR"), which libipt's
			 * pt_config.mtc_freq holds as is: 0..15.
			 */
			if (parse_u8(optarg, &mtc) || mtc > 15) {
				ipt_err("--mtc-freq %s: want the MTC frequency encoding 0..15 "
					"(IA32_RTIT_CTL.MTCFreq; 'ipttool info' prints the capture's)",
					optarg);
				goto out;
			}
			have_mtc = true;
			break;
		case O_NOM:
			if (parse_u8(optarg, &nom)) {
				ipt_err("--nom-freq %s: want the nominal frequency ratio 0..255", optarg);
				goto out;
			}
			have_nom = true;
			break;
		case O_C15A:
		case O_C15B:
		case O_C15C: {
			/* ptxed's --cpuid-0x15.eax N and .ebx N; .ecx: the crystal (Hz) */
			uint32_t *r = c == O_C15A ? &c15a : c == O_C15B ? &c15b : &c15c;
			unsigned long long v;
			char *end;

			errno = 0;
			v = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg || *optarg == '-' || v > UINT32_MAX) {
				ipt_err("--%s %s: want a 32-bit number (CPUID leaf 0x15's register)",
					c == O_C15A ? "cpuid-0x15.eax" : c == O_C15B ? "cpuid-0x15.ebx" :
					"cpuid-0x15.ecx", optarg);
				goto out;
			}
			*r = (uint32_t)v;
			c15_parts |= 1u << (c - O_C15A);
			break;
		}
		case O_BLOCKDEC: dopt.insn_decoder = false; break;
		case O_C15: {
			char extra;

			int n = sscanf(optarg, "%i/%i/%i%c", (int *)&c15a, (int *)&c15b,
				       (int *)&c15c, &extra);

			if (n != 2 && n != 3) {
				ipt_err("--cpuid-0x15 %s: want EAX/EBX[/ECX] of CPUID leaf 0x15 "
					"(ECX: the crystal clock in Hz)", optarg);
				goto out;
			}
			have_c15 = true;
			break;
		}
		case O_INSN: spec[OUT_INSN] = (struct outspec){ true, optarg }; break;
		case O_DISASM: outs.disasm = true; if (!spec[OUT_INSN].on) spec[OUT_INSN].on = true; break;
		case O_JSONL: jsonl = true; break;
		case O_LINES: outs.lines = true; if (!spec[OUT_INSN].on) spec[OUT_INSN].on = true; break;
		case O_CALLS: spec[OUT_CALLS] = (struct outspec){ true, optarg }; break;
		case O_PROFILE: spec[OUT_PROFILE] = (struct outspec){ true, optarg }; break;
		case O_FOLDED: spec[OUT_FOLDED] = (struct outspec){ true, optarg }; break;
		case O_FOLDTIME:
			outs.folded_time = true;
			if (!spec[OUT_FOLDED].on)
				spec[OUT_FOLDED].on = true;
			break;
		case O_BLOCKS: spec[OUT_BLOCKS] = (struct outspec){ true, optarg }; break;
		case O_PERFETTO: spec[OUT_PERFETTO] = (struct outspec){ true, optarg }; break;
		case O_DRCOV: spec[OUT_DRCOV] = (struct outspec){ true, optarg }; break;
		case O_PACKETS: packets = (struct outspec){ true, optarg }; break;
		case O_INSNDEC: dopt.insn_decoder = true; break;
		case O_NOSPLIT: dopt.no_split = true; break;
		case O_PID: {
			char *end;

			in.pid = strtol(optarg, &end, 10);
			if (*end || in.pid <= 0) {
				ipt_err("--pid %s: want a process id from the capture's sideband", optarg);
				goto out;
			}
			break;
		}
		case 'J': {
			char *end;
			long n = strtol(optarg, &end, 10);

			if (*end || n < 1 || n > 1024) {
				ipt_err("-J %s: want a number of threads, 1..1024", optarg);
				goto out;
			}
			dopt.jobs = (unsigned int)n;
			break;
		}
		case O_KCORE: kcore = optarg ? optarg : "/proc/kcore"; break;
		case O_KALLSYMS: kallsyms = optarg; break;
		case O_MODULES: modules = optarg; break;
		case 'j':
			t->json = true;
			ipt_set_json_errors(true);
			ipt_defer_errors(true);
			break;
		case 'q': quiet = true; break;
		case O_PROGRESS: force_progress = true; break;
		case O_DEBUGINFO: in.debuginfo_path = optarg; break;
		case 'h': decode_usage(stdout); ret = 0; goto out;
		default:
			if (c != '?' && c != ':') {
				int sc = slice_opt(c, optarg, &slice);

				if (sc < 0)
					goto out;
				if (sc > 0)
					break;
			}
			ipt_err("decode: option '%s' is unknown or needs an argument (ipttool "
				"decode --help lists them)", argv[optind - 1]);
			goto out;
		}
	}
	if (optind < argc)
		dir = argv[optind++];
	if (optind < argc) {
		ipt_err("decode: unexpected argument '%s' (one directory at most; raw traces go "
			"with --pt FILE)", argv[optind]);
		goto out;
	}
	/* they shape the --insn and --calls lines: alone they would do nothing */
	if ((jsonl || slice.fields) && !spec[OUT_INSN].on && !spec[OUT_CALLS].on) {
		ipt_err("decode: %s goes with --insn or --calls (it shapes their lines)",
			jsonl ? "--jsonl" : "-F/--fields");
		goto out;
	}
	if (!dir && !npt) {
		ipt_err("decode: nothing to decode: give a capture or ptgen directory, or --pt FILE");
		decode_usage(stderr);
		goto out;
	}
	if (dir && dec_input_load_dir(&in, dir, msg, sizeof(msg))) {
		ipt_err("decode: %s", msg);
		goto out;
	}
	if (!dir)
		snprintf(in.kind, sizeof(in.kind), "pt");
	for (i = 0; i < npt; i++)
		if (add_pt(&in, pts[i], &ptbufs[i]))
			goto out;
	if ((kallsyms || modules) && !kcore) {
		ipt_err("decode: --%s goes with --kcore (for a vmlinux, give --elf vmlinux)",
			kallsyms ? "kallsyms" : "modules");
		goto out;
	}
	/* the running kernel's modules, unless a kernel without them */
	if (kcore && !modules && !strcmp(kcore, "/proc/kcore") && !access("/proc/modules", R_OK))
		modules = "/proc/modules";
	if (kcore && dec_input_add_kcore(&in, kcore, kallsyms ? kallsyms : "/proc/kallsyms",
					 modules, msg, sizeof(msg))) {
		ipt_err("decode: --kcore: %s", msg);
		goto out;
	}
	for (i = 0; i < nelf; i++)
		if (dec_input_add_elf(&in, elfs[i], msg, sizeof(msg))) {
			ipt_err("decode: %s", msg);
			goto out;
		}
	for (i = 0; i < nraw; i++)
		if (dec_input_add_raw(&in, raws[i], msg, sizeof(msg))) {
			ipt_err("decode: %s", msg);
			goto out;
		}
	switch (cpu_mode) {
	case CPU_INPUT:
		break;
	case CPU_GIVEN:
		in.cpu = cpu_opt;
		in.have_cpu = true;
		break;
	case CPU_NONE:
		memset(&in.cpu, 0, sizeof(in.cpu));
		in.cpu.vendor = pcv_unknown;
		in.have_cpu = false;
		break;
	case CPU_AUTO:
		/* the CPU the input records, else this machine's */
		if (in.have_cpu)
			break;
		if (dec_host_cpu(&in.cpu)) {
			ipt_err("decode: --cpu auto: the input names no CPU and this machine's is not "
				"an Intel one: give --cpu FAMILY/MODEL[/STEPPING] or --cpu none");
			goto out;
		}
		in.have_cpu = true;
		break;
	}
	if (have_mtc)
		in.mtc_freq = mtc;
	if (have_nom)
		in.nom_freq = nom;
	if (have_c15) {
		in.cpuid_0x15_eax = c15a;
		in.cpuid_0x15_ebx = c15b;
		if (c15c)
			in.cpuid_0x15_ecx = c15c;
	}
	if (c15_parts & 1)
		in.cpuid_0x15_eax = c15a;
	if (c15_parts & 2)
		in.cpuid_0x15_ebx = c15b;
	if (c15_parts & 4)
		in.cpuid_0x15_ecx = c15c;
	if (!in.nr_images && !packets.on)
		fprintf(stderr, "ipttool: decode: warning: no code images (give --elf FILE or --raw "
			"FILE:BASE): every instruction fetch will fail\n");

	for (i = 0; i < OUT_NR; i++) {
		if (!spec[i].on)
			continue;
		if (!spec[i].file || !strcmp(spec[i].file, "-"))
			on_stdout++;
	}
	if (packets.on && (!packets.file || !strcmp(packets.file, "-")))
		on_stdout++;
	if (on_stdout > 1 || (on_stdout && t->json)) {
		ipt_err("decode: %s share stdout; send the others to files (--calls=FILE ...)",
			t->json ? "an output and the JSON summary" : "several outputs");
		goto out;
	}
	if (same_file(spec, &packets))
		goto out;
	for (i = 0; i < OUT_NR; i++)
		if (spec[i].on && !(outs.f[i] = open_out(spec[i].file, "decode: output")))
			goto out;

	prog.tty = isatty(STDERR_FILENO);
	if (force_progress || (prog.tty && !quiet)) {
		dopt.progress = decode_progress;
		dopt.progress_arg = &prog;
	}
	if (dec_open(&ctx, &in, &dopt, msg, sizeof(msg))) {
		ipt_err("decode: %s", msg);
		goto out;
	}
	if (slice.sl.symbol && !have_symbol(&ctx, slice.sl.symbol)) {
		ipt_err("decode: --symbol %s: no function of that name in the images' symbols "
			"(--profile lists the functions that ran)", slice.sl.symbol);
		dec_close(&ctx);
		goto out;
	}
	if (dec_slice_on(&slice.sl))
		outs.slice = &slice.sl;
	outs.fields = slice.fields;
	outs.json = jsonl;
	if (packets.on) {
		FILE *pf = open_out(packets.file, "decode: --packets");

		if (!pf) {
			dec_close(&ctx);
			goto out;
		}
		for (size_t k = 0; k < in.nr_traces; k++) {
			size_t len = 0;
			FILE *tf = in.traces[k].data ? NULL : fopen(in.traces[k].file, "rb");
			uint8_t *buf = NULL;
			long n;

			if (in.traces[k].data) {	/* --pt FILE:FROM-TO */
				buf = malloc(in.traces[k].size + 1);
				if (buf) {
					memcpy(buf, in.traces[k].data, in.traces[k].size);
					len = in.traces[k].size;
				}
			}
			if (tf && !fseek(tf, 0, SEEK_END) && (n = ftell(tf)) >= 0 && !fseek(tf, 0, SEEK_SET)) {
				buf = malloc((size_t)n + 1);
				len = buf ? fread(buf, 1, (size_t)n, tf) : 0;
			}
			if (tf)
				fclose(tf);
			if (in.nr_traces > 1)
				fprintf(pf, "[trace %s]\n", in.traces[k].file);
			dec_dump_packets(&ctx, buf, len, pf);
			free(buf);
		}
		snprintf(msg, sizeof(msg), "decode: --packets=%s", packets.file);
		if (ipt_close_out(pf, pf == stdout ? "writing standard output" : msg)) {
			dec_close(&ctx);
			ret = 1;
			goto out;
		}
	}
	ret = 0;
	if (dec_run(&ctx, &outs, msg, sizeof(msg))) {
		ipt_err("decode: %s", msg);
		ret = 1;
	}
	/* every fprintf/fwrite of the writers, their fflush and fclose */
	for (i = 0; i < OUT_NR; i++)
		if (outs.f[i]) {
			snprintf(msg, sizeof(msg), "decode: %s=%s", out_opt[i], spec[i].file);
			if (ipt_close_out(outs.f[i],
					  outs.f[i] == stdout ? "writing standard output" : msg))
				ret = 1;
			outs.f[i] = NULL;
		}
	{
		struct json_object *j = dec_summary_json(&ctx), *w = json_object_new_array();

		if (json_object_get_int64(json_object_object_get(j, "errors")))
			ret = 1;
		if (ctx.sliced && !dec_slice_insns(&ctx) && ctx.nr_res) {
			/* stderr, also with -j: the summary's "slice_instructions" is 0 */
			fprintf(stderr, "ipttool: decode: the slice (--time, --insn-range, --tid, "
				"--cpus, --symbol, --last[-branches]) leaves no instruction: the outputs are "
				"empty (the summary gives the traces' instructions and time)\n");
			if (!ret)
				ret = 1;
		}
		for (size_t k = 0; k < ctx.nr_res; k++) {
			if (ctx.res[k].error[0])
				ret = 1;
			if (ctx.res[k].cut)
				dec_input_warn(&in, "%s: ends inside a packet at offset %#" PRIx64
					       ": the file was cut short", ctx.res[k].trace->file,
					       ctx.res[k].cut_off);
		}
		for (size_t k = 0; k < in.nr_warnings; k++) {
			fprintf(stderr, "ipttool: decode: warning: %s\n", in.warnings[k]);
			json_object_array_add(w, json_object_new_string(in.warnings[k]));
		}
		/* a result from incomplete input: 3, unless something failed (1) */
		if (in.nr_warnings && !ret)
			ret = 3;
		json_object_object_add(j, "complete", json_object_new_boolean(!in.nr_warnings));
		json_object_object_add(j, "warnings", w);
		if (t->json) {
			/* what went wrong while decoding, in the one document */
			char *e = ipt_take_errors();

			if (e)
				json_object_object_add(j, "error", json_object_new_string(e));
			free(e);
			ipt_print_json(t, j);
			summary = true;
		} else {
			json_object_put(j);
		}
	}
	if (!t->json)
		dec_summary_text(&ctx, stderr);
	dec_close(&ctx);
out:
	ipt_defer_errors(false);
	if (t->json && !summary) {
		/* stopped before the summary: the error is the document */
		char *e = ipt_take_errors();

		if (e)
			ipt_err("%s", e);
		free(e);
	}
	for (i = 0; i < OUT_NR; i++)
		if (outs.f[i] && outs.f[i] != stdout)
			fclose(outs.f[i]);
	dec_input_free(&in);
	for (i = 0; ptbufs && i < npt; i++)
		free(ptbufs[i]);
	free(ptbufs);
	free(pts);
	free(elfs);
	free(raws);
	return ret;
}

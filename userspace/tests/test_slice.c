// SPDX-License-Identifier: GPL-2.0
/*
 * Tests of 'ipttool decode' slicing (--time, --insn-range, --tid, --cpus,
 * --symbol, --last; Documentation/decode.rst "Slicing") and of what its
 * lines say (where and why tracing stopped) on ground-truth
 * traces made by ptgen at test time.  What each slice must hold is
 * computed here from ptgen's ground truth (insns.bin, time.bin, the code
 * it dumped, classified with Zydis, and the program's ELF symbol table
 * read with libelf), never from the decoder: the instructions of an
 * --insn-range, of a --time window between two system calls (whose
 * instructions' time windows do not overlap it), of --symbol's function
 * and its callees by call depth, of --last N; every slice on every output
 * is the same with -J 1, -J 2 and --no-split.  TAP on stdout.
 *
 *   test_slice [BUILD_DIR]      BUILD_DIR: the top build/ (default: ../ of
 *                               this program's directory)
 *
 * Needs 'make selftests' (ptgen, the test programs) and 'make userspace'.
 */
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <json-c/json.h>
#include <Zydis/Zydis.h>

#include "tool_test.h"

static bool same_files(const char *a, const char *b)
{
	size_t la, lb;
	char *x = slurp(a, &la), *y = slurp(b, &lb);
	bool ok = x && y && la == lb && !memcmp(x, y, la);

	free(x);
	free(y);
	return ok;
}

/* The summary's integer @key (-1: none or null). */
static int64_t json_int(const char *path, const char *key)
{
	struct json_object *o = json_object_from_file(path), *v;
	int64_t r = -1;

	if (o && json_object_object_get_ex(o, key, &v) && v)
		r = json_object_get_int64(v);
	json_object_put(o);
	return r;
}

/* ---- a ground-truth run ---------------------------------------------------------- */

struct image {
	uint64_t start, end;
	uint8_t *bytes;
};

struct run {
	char name[64], dir[1300];
	uint64_t *ips;		/* insns.bin */
	size_t n;
	uint64_t *tm;		/* time.bin: retire, low, high per instruction (or NULL) */
	uint8_t *kind;		/* 1 near call, 2 ret, 3 syscall, 0 other */
	uint8_t *len;		/* instruction lengths */
	struct image img[64];
	size_t nimg;
	char elf[PATH_MAX];	/* the program (maps.txt's first file) */
	uint64_t elf_base;	/* where its first mapping starts (a PIE's load bias) */
	uint64_t hz_num, hz_den;	/* TSC Hz = ecx * ebx / eax, from "timing" */
};

static char *F(const struct run *r, const char *what)
{
	static char bufs[32][1400];
	static int k;
	char *b = bufs[k++ & 31];

	snprintf(b, sizeof(bufs[0]), "%s/%s.%s", work, r->name, what);
	return b;
}

static ZydisDecoder zd;

static const struct image *find_img(const struct run *r, uint64_t ip)
{
	for (size_t i = r->nimg; i-- > 0;)
		if (ip >= r->img[i].start && ip < r->img[i].end)
			return &r->img[i];
	return NULL;
}

static uint64_t timing_val(const struct run *r, const char *key)
{
	char path[PATH_MAX + 64], line[256], k[64];
	unsigned long long v;
	uint64_t out = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/timing", r->dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lli", k, &v) == 2 && !strcmp(k, key))
			out = v;
	if (f)
		fclose(f);
	return out;
}

static bool load_run(struct run *r)
{
	char path[PATH_MAX + 64], line[PATH_MAX + 128];
	struct image_line il;
	size_t len, i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/insns.bin", r->dir);
	r->ips = (uint64_t *)(void *)slurp(path, &len);
	r->n = len / 8;
	if (!r->ips || !r->n)
		return false;
	snprintf(path, sizeof(path), "%s/time.bin", r->dir);
	r->tm = (uint64_t *)(void *)slurp(path, &len);
	if (r->tm && len != r->n * 24) {
		free(r->tm);
		r->tm = NULL;
	}
	f = images_open(r->dir);
	while (r->nimg < 64 && images_next(f, &il)) {
		char ipath[PATH_MAX + 300];
		size_t ilen;

		snprintf(ipath, sizeof(ipath), "%s/%s", r->dir, il.name);
		r->img[r->nimg].start = il.start;
		r->img[r->nimg].end = il.end;
		r->img[r->nimg].bytes = (uint8_t *)slurp(ipath, &ilen);
		if (r->img[r->nimg].bytes && ilen >= il.end - il.start)
			r->nimg++;
	}
	if (f)
		fclose(f);
	r->kind = calloc(r->n, 1);
	r->len = calloc(r->n, 1);
	for (i = 0; i < r->n; i++) {
		const struct image *im = find_img(r, r->ips[i]);
		ZydisDecodedInstruction zi;

		if (!im || !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&zd, NULL,
				im->bytes + (r->ips[i] - im->start), im->end - r->ips[i], &zi)))
			return false;
		r->len[i] = zi.length;
		if (zi.mnemonic == ZYDIS_MNEMONIC_CALL && zi.meta.branch_type != ZYDIS_BRANCH_TYPE_FAR)
			r->kind[i] = 1;
		else if (zi.mnemonic == ZYDIS_MNEMONIC_RET)
			r->kind[i] = 2;
		else if (zi.mnemonic == ZYDIS_MNEMONIC_SYSCALL)
			r->kind[i] = 3;
	}
	snprintf(path, sizeof(path), "%s/maps.txt", r->dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char p[PATH_MAX];

		unsigned long long base;

		if (line[0] != '#' && sscanf(line, "%llx-%*s %*s %*s %*s %*s %4095s", &base, p) == 2 &&
		    p[0] == '/') {
			snprintf(r->elf, sizeof(r->elf), "%s", p);
			r->elf_base = base;
			break;
		}
	}
	if (f)
		fclose(f);
	r->hz_num = timing_val(r, "cpuid_0x15_ecx") * timing_val(r, "cpuid_0x15_ebx");
	r->hz_den = timing_val(r, "cpuid_0x15_eax");
	return true;
}

/* [start, end) of function @name in @r's program (libelf), false if none. */
static bool elf_func(const struct run *r, const char *name, uint64_t *start, uint64_t *end)
{
	int fd = open(r->elf, O_RDONLY);
	Elf_Scn *scn = NULL;
	bool found = false;
	uint64_t bias = 0;
	Elf *e;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	{
		GElf_Ehdr eh;

		/* a PIE's symbols are offsets from where it was loaded (its first mapping) */
		if (e && gelf_getehdr(e, &eh) && eh.e_type == ET_DYN)
			bias = r->elf_base;
	}
	while (e && !found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t k = 0; d && k < sh.sh_size / sh.sh_entsize; k++) {
			GElf_Sym s;
			const char *nm;

			if (!gelf_getsym(d, (int)k, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC)
				continue;
			nm = elf_strptr(e, sh.sh_link, s.st_name);
			if (nm && !strcmp(nm, name) && s.st_size) {
				*start = bias + s.st_value;
				*end = bias + s.st_value + s.st_size;
				found = true;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

/* Addresses of an --insn output's instruction lines (not the "[...]" ones). */
static uint64_t *insn_addrs(const char *path, size_t *n)
{
	size_t len, cap = 1024;
	char *s = slurp(path, &len), *p, *save = NULL;
	uint64_t *a = malloc(cap * 8);

	*n = 0;
	for (p = s ? strtok_r(s, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
		if (p[0] == '[')
			continue;
		if (*n == cap)
			a = realloc(a, (cap *= 2) * 8);
		a[(*n)++] = strtoull(p, NULL, 16);
	}
	free(s);
	return a;
}

/* Does the --insn output @path list exactly the ground truth's instructions @want[0..@nw)? */
static bool insn_list(const char *path, const uint64_t *want, size_t nw, size_t *got,
		      size_t *first)
{
	uint64_t *a = insn_addrs(path, got);
	size_t i;

	*first = SIZE_MAX;
	for (i = 0; i < *got && i < nw; i++)
		if (a[i] != want[i]) {
			*first = i;
			break;
		}
	free(a);
	return *got == nw && *first == SIZE_MAX;
}

/* Sum of the counts of a --folded file; *@all_have: every stack has frame @frame. */
static uint64_t folded_sum(const char *path, const char *frame, bool *all_have)
{
	size_t len;
	char *s = slurp(path, &len), *p, *save = NULL;
	uint64_t sum = 0;

	*all_have = true;
	for (p = s ? strtok_r(s, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(p, ' ');

		if (!sp)
			continue;
		sum += strtoull(sp + 1, NULL, 10);
		*sp = 0;
		if (frame) {
			size_t l = strlen(frame);
			char *q;

			/* a whole frame: between ';' (or the start) and ';' (or the end) */
			for (q = strstr(p, frame); q; q = strstr(q + 1, frame))
				if ((q == p || q[-1] == ';') && (!q[l] || q[l] == ';'))
					break;
			if (!q)
				*all_have = false;
		}
	}
	free(s);
	return sum;
}

/* The "# flat profile: N instructions" of a --profile file (-1: none). */
static int64_t profile_total(const char *path)
{
	size_t len;
	char *s = slurp(path, &len);
	long long v = -1;

	if (s)
		sscanf(s, "# flat profile: %lld instructions", &v);
	free(s);
	return v;
}

/* Perfetto: "B"/"E" pairs nest per track, with the same names. */
static bool perfetto_nests(const char *path, size_t *nev)
{
	struct json_object *o = json_object_from_file(path), *evs;
	const char *stack[4096];
	size_t depth = 0, i, n;
	bool ok = o && json_object_object_get_ex(o, "traceEvents", &evs);

	*nev = 0;
	n = ok ? json_object_array_length(evs) : 0;
	for (i = 0; ok && i < n; i++) {
		struct json_object *e = json_object_array_get_idx(evs, i), *ph, *nm;
		const char *p;

		if (!json_object_object_get_ex(e, "ph", &ph))
			continue;
		p = json_object_get_string(ph);
		json_object_object_get_ex(e, "name", &nm);
		if (!strcmp(p, "B")) {
			if (depth < 4096)
				stack[depth] = json_object_get_string(nm);
			depth++;
			(*nev)++;
		} else if (!strcmp(p, "E")) {
			ok = depth > 0 && (depth > 4096 || !strcmp(stack[depth - 1],
								   json_object_get_string(nm)));
			depth--;
			(*nev)++;
		}
	}
	json_object_put(o);
	return ok && depth == 0;
}

/* ---- every output, three ways ------------------------------------------------------ */

static const char *const outs[] = { "insn", "calls", "profile", "folded", "json", "blocks", "drcov" };
#define NOUT (sizeof(outs) / sizeof(outs[0]))

/*
 * Decode @r's @input with slice @slice to every output, with -J 1, -J 2
 * and --no-split (files TAG.j1.OUT, TAG.j2.OUT, TAG.ns.OUT, summary
 * TAG.j1.sum): all three byte-identical, exit @want_st.  Returns the -J 1
 * exit status.
 */
static int three_ways(struct run *r, const char *tag, const char *input, const char *slice,
		      int want_st)
{
	static const char *const how[] = { "j1", "j2", "ns" };
	static const char *const opt[] = { "-J 1", "-J 2", "--no-split" };
	char t[3][128];
	int st[3];
	bool same = true, clean = true;
	size_t h, k;

	for (h = 0; h < 3; h++) {
		snprintf(t[h], sizeof(t[h]), "%s.%s", tag, how[h]);
		st[h] = decode(F(r, t[h]), F(r, "err"),
			       "-j decode %s %s %s --insn=%s.insn --calls=%s.calls --profile=%s.profile "
			       "--folded=%s.folded --perfetto %s.json --blocks=%s.blocks --drcov %s.drcov",
			       input, opt[h], slice, F(r, t[h]), F(r, t[h]), F(r, t[h]), F(r, t[h]),
			       F(r, t[h]), F(r, t[h]), F(r, t[h]));
		clean = clean && clean_stderr(F(r, "err"));
	}
	for (h = 1; h < 3; h++)
		for (k = 0; k < NOUT; k++) {
			char a[1500], b[1500];

			snprintf(a, sizeof(a), "%s.%s", F(r, t[0]), outs[k]);
			snprintf(b, sizeof(b), "%s.%s", F(r, t[h]), outs[k]);
			if (!same_files(a, b)) {
				same = false;
				printf("# %s: %s differs from %s\n", tag, b, a);
			}
		}
	CHECK(same && clean && st[0] == want_st && st[1] == want_st && st[2] == want_st,
	      "%s: %s %s: every output (--insn --calls --profile --folded --perfetto --blocks "
	      "--drcov) byte-identical with -J 1, -J 2 and --no-split, exit %d (%d %d %d)",
	      r->name, tag, slice, want_st, st[0], st[1], st[2]);
	return st[0];
}

/* The outputs of TAG.j1 agree with @nsel instructions in the slice (@frame: in every stack). */
static void outputs_agree(struct run *r, const char *tag, uint64_t nsel, const char *frame)
{
	char t[128], p[1500];
	size_t nev = 0;
	bool all = true;
	uint64_t fsum;

	snprintf(t, sizeof(t), "%s.j1", tag);
	CHECK(json_int(F(r, t), "slice_instructions") == (int64_t)nsel,
	      "%s: %s: the summary's slice_instructions is %" PRIu64 " (%" PRId64 ")", r->name, tag,
	      nsel, json_int(F(r, t), "slice_instructions"));
	snprintf(p, sizeof(p), "%s.profile", F(r, t));
	CHECK(profile_total(p) == (int64_t)nsel, "%s: %s: --profile counts %" PRIu64
	      " instructions (%" PRId64 ")", r->name, tag, nsel, profile_total(p));
	snprintf(p, sizeof(p), "%s.folded", F(r, t));
	fsum = folded_sum(p, frame, &all);
	CHECK(fsum == nsel && all, "%s: %s: --folded counts %" PRIu64 " instructions (%" PRIu64
	      ")%s%s", r->name, tag, nsel, fsum, frame ? ", every stack through " : "",
	      frame ? frame : "");
	snprintf(p, sizeof(p), "%s.json", F(r, t));
	CHECK(perfetto_nests(p, &nev), "%s: %s: --perfetto's %zu B/E events nest, each E "
	      "named as its B", r->name, tag, nev);
}

/* ---- the tests ---------------------------------------------------------------------- */

static void test_insn_range(struct run *r)
{
	uint64_t a = r->n / 3, b = r->n / 3 + r->n / 4;
	char slice[64];
	size_t got, first;
	int st;

	snprintf(slice, sizeof(slice), "--insn-range %" PRIu64 "-%" PRIu64, a, b);
	three_ways(r, "range", r->dir, slice, 0);
	CHECK(insn_list(F(r, "range.j1.insn"), r->ips + a, b - a + 1, &got, &first),
	      "%s: --insn-range %" PRIu64 "-%" PRIu64 ": --insn lists ground-truth instructions "
	      "%" PRIu64 "..%" PRIu64 " (%zu lines, first difference %zd)", r->name, a, b, a, b, got,
	      first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first);
	outputs_agree(r, "range", b - a + 1, NULL);
	/* the whole-trace --calls lines in the range, and nothing else */
	st = decode(F(r, "fullsum"), F(r, "err"), "-j decode %s --calls=%s", r->dir,
		    F(r, "full.calls"));
	{
		size_t la, lb;
		char *full = slurp(F(r, "full.calls"), &la), *sl = slurp(F(r, "range.j1.calls"), &lb);
		char *want = calloc(la + 1, 1), *p, *save = NULL;
		size_t o = 0;

		for (p = full ? strtok_r(full, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
			uint64_t idx = strtoull(p, NULL, 10);

			if (idx >= a && idx <= b)
				o += (size_t)sprintf(want + o, "%s\n", p);
		}
		CHECK(st == 0 && sl && o > 0 && !strcmp(want, sl),
		      "%s: --insn-range: --calls is the whole trace's lines numbered %" PRIu64
		      "..%" PRIu64 " (%zu bytes)", r->name, a, b, o);
		free(full);
		free(sl);
		free(want);
	}
	/* open ends */
	st = decode(F(r, "open"), F(r, "err"), "-j decode %s --insn-range %" PRIu64 "- --insn=%s",
		    r->dir, b, F(r, "open.insn"));
	CHECK(st == 0 && insn_list(F(r, "open.insn"), r->ips + b, r->n - b, &got, &first),
	      "%s: --insn-range %" PRIu64 "-: the ground truth from there to the end (%zu)",
	      r->name, b, got);
	st = decode(F(r, "open3"), F(r, "err"), "-j decode %s --insn-range %" PRIu64
		    "-18446744073709551615 --insn=%s", r->dir, b, F(r, "open3.insn"));
	CHECK(st == 0 && same_files(F(r, "open.insn"), F(r, "open3.insn")),
	      "%s: --insn-range %" PRIu64 "-(2^64 - 1) is the open end", r->name, b);
	st = decode(F(r, "open2"), F(r, "err"), "-j decode %s --insn-range -%" PRIu64 " --insn=%s",
		    r->dir, a, F(r, "open2.insn"));
	CHECK(st == 0 && insn_list(F(r, "open2.insn"), r->ips, a + 1, &got, &first),
	      "%s: --insn-range -%" PRIu64 ": the ground truth up to there (%zu)", r->name, a, got);
}

/* @tsc in ns as the decoder converts it (CPUID 0x15: Hz = ecx * ebx / eax). */
static uint64_t to_ns(const struct run *r, uint64_t tsc)
{
	uint64_t hz = r->hz_num / r->hz_den;

	return (uint64_t)((unsigned __int128)tsc * 1000000000u / hz);
}

/*
 * The clean cuts of @r's ground truth: each k after a system call at
 * k - 1 where the highest time of the instructions before k - 1 (the high
 * ends of their windows, time.bin; premax[k - 1]) is 3 or more below the
 * lowest of those from k on (the low ends; sufmin[k]).  @premax, @sufmin
 * and @cuts hold r->n + 1 each; returns the number of cuts.
 */
static size_t clean_cuts(const struct run *r, uint64_t *premax, uint64_t *sufmin, size_t *cuts)
{
	size_t k, ncut = 0;

	premax[0] = 0;
	for (k = 0; k < r->n; k++)
		premax[k + 1] = premax[k] > r->tm[3 * k + 2] ? premax[k] : r->tm[3 * k + 2];
	sufmin[r->n] = UINT64_MAX;
	for (k = r->n; k-- > 0;)
		sufmin[k] = sufmin[k + 1] < r->tm[3 * k + 1] ? sufmin[k + 1] : r->tm[3 * k + 1];
	for (k = 1; k < r->n; k++)
		if (r->kind[k - 1] == 3 && premax[k - 1] + 2 < sufmin[k])
			cuts[ncut++] = k;
	return ncut;
}

/*
 * --time: an instruction's time is the decoder's when it starts the block
 * holding it (decode.rst): after the block before, so at most the high
 * end of the window (time.bin) of that block's last instruction, and
 * after the TIP.PGE that resumes tracing after a system call exactly the
 * TIP.PGE's time (that instruction's window is one point).  So at a cut
 * after a system call at k - 1 where every instruction before k - 1 has
 * high < low of every instruction from k on, a time T between them
 * separates [0, k) from [k, n).  Two such cuts give a window holding
 * exactly the instructions between them.
 */
static void test_time(struct run *r)
{
	uint64_t *premax = calloc(r->n + 1, 8), *sufmin = calloc(r->n + 1, 8), t0, lo, hi;
	size_t *cuts = calloc(r->n + 1, sizeof(size_t)), ncut, k1, k2, got, first;
	char slice[128];
	int st;

	ncut = clean_cuts(r, premax, sufmin, cuts);
	CHECK(ncut >= 3, "%s: the ground truth has %zu clean cuts after system calls (want 3)",
	      r->name, ncut);
	if (ncut < 3)
		goto out;
	k1 = cuts[1];
	k2 = cuts[ncut - 1];
	/* the decode's first TSC: its first PSB's, the clock model's start */
	t0 = timing_val(r, "tsc_start");
	/* TSC ticks: from just after the work before cut 1 to just before cut 2's */
	lo = premax[k1 - 1] + 1 - t0;
	hi = sufmin[k2] - 1 - t0;
	snprintf(slice, sizeof(slice), "--time %" PRIu64 "tsc-%" PRIu64 "tsc", lo, hi);
	three_ways(r, "ttsc", r->dir, slice, 0);
	CHECK(insn_list(F(r, "ttsc.j1.insn"), r->ips + k1, k2 - k1, &got, &first),
	      "%s: %s: --insn lists ground-truth instructions %zu..%zu, those between the cuts "
	      "(%zu, first difference %zd)", r->name, slice, k1, k2 - 1, got,
	      first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first);
	outputs_agree(r, "ttsc", k2 - k1, NULL);
	/* the same window in ns, as --calls shows time; the cuts are wide enough */
	{
		uint64_t ns0 = to_ns(r, t0), a = to_ns(r, premax[k1 - 1]) - ns0 + 1,
			 b = to_ns(r, sufmin[k2]) - ns0 - 1;

		CHECK(a <= to_ns(r, sufmin[k1]) - ns0 && b >= to_ns(r, premax[k2 - 1]) - ns0,
		      "%s: the cuts are wider than a nanosecond", r->name);
		snprintf(slice, sizeof(slice), "--time %" PRIu64 "ns-%" PRIu64 "ns", a, b);
		three_ways(r, "tns", r->dir, slice, 0);
		CHECK(insn_list(F(r, "tns.j1.insn"), r->ips + k1, k2 - k1, &got, &first),
		      "%s: %s: --insn lists ground-truth instructions %zu..%zu (%zu)", r->name, slice,
		      k1, k2 - 1, got);
		/* open start, as seconds: everything up to cut 1 */
		snprintf(slice, sizeof(slice), "--time -0.%09" PRIu64, to_ns(r, sufmin[k1]) - ns0 - 1);
		st = decode(F(r, "tsec"), F(r, "err"), "-j decode %s %s --insn=%s", r->dir, slice,
			    F(r, "tsec.insn"));
		CHECK(st == 0 && insn_list(F(r, "tsec.insn"), r->ips, k1, &got, &first),
		      "%s: %s: the ground truth's first %zu instructions (%zu)", r->name, slice, k1,
		      got);
	}
	{
		/*
		 * --fields time: each instruction line's time is the one
		 * --time compares: never going back, and at the first
		 * instruction after the cut exactly its TIP.PGE's time.
		 */
		size_t len, idx = 0;
		char *txt, *p, *save = NULL, want[40] = "", got_k1[40] = "";
		double prev = -1;
		bool mono = true;
		uint64_t ns = to_ns(r, sufmin[k1]) - to_ns(r, t0);

		snprintf(want, sizeof(want), "%" PRIu64 ".%09" PRIu64, ns / 1000000000u,
			 ns % 1000000000u);
		st = decode(F(r, "fld"), F(r, "err"), "-j decode %s -F time --insn=%s", r->dir,
			    F(r, "fld.insn"));
		txt = slurp(F(r, "fld.insn"), &len);
		for (p = txt ? strtok_r(txt, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
			char tcol[40] = "", rest[8] = "";
			double t;

			if (sscanf(p, " %39s %7s", tcol, rest) != 2)
				continue;
			t = strtod(tcol, NULL);
			mono = mono && t >= prev;
			prev = t;
			if (rest[0] != '[' && idx++ == k1)
				snprintf(got_k1, sizeof(got_k1), "%s", tcol);
		}
		free(txt);
		CHECK(st == 0 && mono && idx == r->n && !strcmp(got_k1, want),
		      "%s: -F time: --insn's times never go back, and instruction %zu (after a system "
		      "call) is at its TIP.PGE's time %s (%s)", r->name, k1, want, got_k1);
	}
out:
	free(premax);
	free(sufmin);
	free(cuts);
}

/* The decode's --insn file @path: the newest time its -F time column shows, in ns. */
static uint64_t newest_ns(const char *path)
{
	size_t len;
	char *txt = slurp(path, &len), *p, *save = NULL;
	uint64_t best = 0;

	for (p = txt ? strtok_r(txt, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
		unsigned long long s, ns;

		if (sscanf(p, " %llu.%9llu", &s, &ns) == 2 && s * 1000000000ull + ns > best)
			best = s * 1000000000ull + ns;
	}
	free(txt);
	return best;
}

/* "P%" of @t ns in a span of @span ns, in perf's form with 6 decimals. */
static void pct_of(uint64_t t, uint64_t span, char *buf, size_t len)
{
	uint64_t m = (uint64_t)((unsigned __int128)t * 100000000u / span);	/* 1e-6 % */

	snprintf(buf, len, "%" PRIu64 ".%06" PRIu64 "%%", m / 1000000, m % 1000000);
}

/*
 * --time's perf forms: several ranges (absolute ones separated by spaces,
 * percentages by commas) and percentages of the decode's time span (from
 * the first TSC to the newest time of the decode, the last -F time):
 * A%-B%, A%/N (the N-th slice of A%), A%.  Against the ground truth, as
 * test_time(): a time inside a clean cut after a system call separates
 * the instructions before it from those after, so percentages that land
 * in two cuts select exactly the instructions between them, two such
 * pairs exactly both runs.  perf's arithmetic (set_percent_time(): ends
 * rounded, an end one less unless the span's end) is checked by
 * equivalences: 10%/2 is 10%-20%, 10%/1,10%/2 is 0%-20% (adjacent slices
 * share no point), 25% is 25%/1, and 10%-20% is the ns range perf's
 * formula gives.
 */
static void test_time_forms(struct run *r)
{
	uint64_t *premax = calloc(r->n + 1, 8), *sufmin = calloc(r->n + 1, 8), ns0, span, lo[4],
		 hi[4], *want = calloc(r->n + 1, 8);
	size_t *cuts = calloc(r->n + 1, sizeof(size_t)), ncut, k, c[4], got, first, nw = 0;
	char slice[256], p[4][40];
	bool wide = true;
	int st, i;

	ncut = clean_cuts(r, premax, sufmin, cuts);
	st = decode(F(r, "tf"), F(r, "err"), "-j decode %s -F time --insn=%s", r->dir,
		    F(r, "tf.insn"));
	span = newest_ns(F(r, "tf.insn"));
	CHECK(st == 0 && ncut >= 5 && span, "%s: %zu clean cuts after system calls (want 5), "
	      "the decode's time span %" PRIu64 " ns", r->name, ncut, span);
	if (st || ncut < 5 || !span)
		goto out;
	ns0 = to_ns(r, timing_val(r, "tsc_start"));
	/* four cuts, each a window [lo, hi] of times (ns) that separates */
	for (i = 0; i < 4; i++) {
		c[i] = cuts[1 + i * (ncut - 2) / 3];
		lo[i] = to_ns(r, premax[c[i] - 1]) - ns0 + 1;
		hi[i] = to_ns(r, sufmin[c[i]]) - ns0 - 1;
		wide = wide && hi[i] >= lo[i] + 2 && c[i] > (i ? c[i - 1] : 0);
		/* an end is one less than the rounded percentage: aim one above the middle */
		pct_of((lo[i] + hi[i]) / 2 + (i & 1), span, p[i], sizeof(p[i]));
	}
	CHECK(wide, "%s: four distinct cuts, each wider than 2 ns", r->name);
	for (k = c[0]; k < c[1]; k++)
		want[nw++] = r->ips[k];
	snprintf(slice, sizeof(slice), "--time %s-%s", p[0], p[1]);
	three_ways(r, "tp1", r->dir, slice, 0);
	CHECK(insn_list(F(r, "tp1.j1.insn"), want, nw, &got, &first),
	      "%s: %s: --insn lists ground-truth instructions %zu..%zu (%zu, first difference %zd)",
	      r->name, slice, c[0], c[1] - 1, got, first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first);
	outputs_agree(r, "tp1", c[1] - c[0], NULL);
	for (k = c[2]; k < c[3]; k++)
		want[nw++] = r->ips[k];
	snprintf(slice, sizeof(slice), "--time %s-%s,%s-%s", p[0], p[1], p[2], p[3]);
	three_ways(r, "tp2", r->dir, slice, 0);
	CHECK(insn_list(F(r, "tp2.j1.insn"), want, nw, &got, &first),
	      "%s: %s (two ranges): --insn lists ground-truth instructions %zu..%zu and %zu..%zu "
	      "(%zu, first difference %zd)", r->name, slice, c[0], c[1] - 1, c[2], c[3] - 1, got,
	      first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first);
	outputs_agree(r, "tp2", nw, NULL);
	snprintf(slice, sizeof(slice), "--time '%" PRIu64 "ns-%" PRIu64 "ns %" PRIu64 "ns-%" PRIu64
		 "ns'", lo[0], hi[1], lo[2], hi[3]);
	st = decode(F(r, "ta2"), F(r, "err"), "-j decode %s %s --insn=%s", r->dir, slice,
		    F(r, "ta2.insn"));
	CHECK(st == 0 && insn_list(F(r, "ta2.insn"), want, nw, &got, &first),
	      "%s: %s (two absolute ranges): --insn lists the same ground-truth instructions (%zu)",
	      r->name, slice, got);
	{
		static const char *const same[][2] = {
			{ "10%/2", "10%-20%" }, { "10%/1,10%/2", "0%-20%" }, { "25%", "25%/1" },
			{ "25%", "0%-25%" },
		};
		char a[64], b[64], perf[96];
		uint64_t s0 = (span * 10 + 50) / 100, s1 = (span * 20 + 50) / 100 - 1;

		for (k = 0; k < sizeof(same) / sizeof(same[0]); k++) {
			st = decode(F(r, "ea"), F(r, "err"), "-j decode %s --time %s --insn=%s", r->dir,
				    same[k][0], F(r, "ea.insn"));
			st |= decode(F(r, "eb"), F(r, "err"), "-j decode %s --time %s --insn=%s", r->dir,
				     same[k][1], F(r, "eb.insn"));
			snprintf(a, sizeof(a), "%s", F(r, "ea.insn"));
			snprintf(b, sizeof(b), "%s", F(r, "eb.insn"));
			CHECK(st == 0 && same_files(a, b) && json_int(F(r, "ea"), "slice_instructions") > 0,
			      "%s: --time %s lists what --time %s does (%" PRId64 " instructions)",
			      r->name, same[k][0], same[k][1], json_int(F(r, "ea"), "slice_instructions"));
		}
		snprintf(perf, sizeof(perf), "%" PRIu64 "ns-%" PRIu64 "ns", s0, s1);
		st = decode(F(r, "ea"), F(r, "err"), "-j decode %s --time 10%%-20%% --insn=%s",
			    r->dir, F(r, "ea.insn"));
		st |= decode(F(r, "eb"), F(r, "err"), "-j decode %s --time %s --insn=%s", r->dir, perf,
			     F(r, "eb.insn"));
		CHECK(st == 0 && same_files(F(r, "ea.insn"), F(r, "eb.insn")),
		      "%s: --time 10%%-20%% of a %" PRIu64 " ns span is --time %s (perf's rounding)",
		      r->name, span, perf);
		/*
		 * An end exactly at an instruction's time: the instruction
		 * after cut 0 is at its TIP.PGE's time T (test_time()); the
		 * percentage P that rounds to T ends 0%-P% one before T (perf's
		 * end), so without it, and starts P%-100% with it.
		 */
		{
			uint64_t t = to_ns(r, sufmin[c[0]]) - ns0;
			char pt[40];
			size_t g2 = 0, f2 = 0;

			pct_of(t, span, pt, sizeof(pt));
			st = decode(F(r, "ea"), F(r, "err"), "-j decode %s --time 0%%-%s --insn=%s",
				    r->dir, pt, F(r, "ea.insn"));
			st |= decode(F(r, "eb"), F(r, "err"), "-j decode %s --time %s-100%% --insn=%s",
				     r->dir, pt, F(r, "eb.insn"));
			CHECK(st == 0 && to_ns(r, premax[c[0] - 1]) - ns0 < t - 1 &&
			      insn_list(F(r, "ea.insn"), r->ips, c[0], &got, &first) &&
			      insn_list(F(r, "eb.insn"), r->ips + c[0], r->n - c[0], &g2, &f2),
			      "%s: --time 0%%-%s ends just before instruction %zu at %" PRIu64 " ns, "
			      "--time %s-100%% starts with it (%zu and %zu instructions)", r->name, pt,
			      c[0], t, pt, got, g2);
		}
		st = decode(F(r, "ea"), F(r, "err"), "-j decode %s --time 0%%-100%%", r->dir);
		CHECK(st == 0 && json_int(F(r, "ea"), "slice_instructions") == (int64_t)r->n,
		      "%s: --time 0%%-100%% is the whole trace (%zu instructions)", r->name, r->n);
	}
out:
	free(premax);
	free(sufmin);
	free(cuts);
	free(want);
}

/*
 * --symbol: from the ground truth, by call depth: inside from the first
 * instruction of a block in the function (entered by a call, or where the
 * trace starts) until the return that closes the call it was entered at:
 * one made at that depth, or one that unwinds past it (a return closes
 * the innermost call whose return address is where it went and the calls
 * above it, else the innermost: perf's thread_stack__pop_cp()).
 */
static void test_symbol(struct run *r, const char *name)
{
	uint64_t fs, fe, *want = calloc(r->n + 1, 8), *rets = calloc(r->n + 1, 8);
	size_t nw = 0, i, got = 0, first = SIZE_MAX;
	unsigned int depth = 0, entry = 0, entry0 = 0;
	bool inside = false, entered = false;
	char slice[128], frame[80];

	if (!elf_func(r, name, &fs, &fe)) {
		CHECK(0, "%s: %s in the program's symbol table", r->name, name);
		free(want);
		return;
	}
	for (i = 0; i < r->n; i++) {
		/* entered where control arrives in it (a call, a jump, a return, the start) */
		if (!inside && r->ips[i] >= fs && r->ips[i] < fe &&
		    (!i || r->ips[i] != r->ips[i - 1] + r->len[i - 1])) {
			inside = true;
			entry = depth;
			if (!entered)
				entry0 = depth;
			entered = true;
		}
		if (inside)
			want[nw++] = r->ips[i];
		if (r->kind[i] == 1) {
			rets[depth++] = r->ips[i] + r->len[i];
		} else if (r->kind[i] == 2) {
			unsigned int before = depth;

			depth = i + 1 < r->n ? gt_ret_depth(rets, depth, r->ips[i + 1]) :
			       depth ? depth - 1 : 0;
			/* the return that closes the call it was entered at leaves it */
			if (inside && (!before || depth < entry))
				inside = false;
		}
	}
	free(rets);
	snprintf(slice, sizeof(slice), "--symbol %s", name);
	three_ways(r, "sym", r->dir, slice, 0);
	CHECK(nw > 0 && insn_list(F(r, "sym.j1.insn"), want, nw, &got, &first),
	      "%s: --symbol %s: --insn lists the %zu ground-truth instructions inside it and its "
	      "callees (%zu, first difference %zd)", r->name, name, nw, got,
	      first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first);
	snprintf(frame, sizeof(frame), "%s", name);
	outputs_agree(r, "sym", nw, NULL);
	{
		/* every stack runs through the function, or ends in it */
		char p[1500];
		bool all = true;

		uint64_t sum;

		snprintf(p, sizeof(p), "%s.folded", F(r, "sym.j1"));
		sum = folded_sum(p, frame, &all);
		CHECK(all && sum, "%s: --symbol %s: every --folded stack has the frame %s", r->name,
		      name, name);
	}
	{
		/*
		 * Perfetto: entering the slice opens a span for each call open
		 * there: the ground truth's depth at the first entry is entry0,
		 * so the first entry0 events are "B"s, the last of them the
		 * function's own.
		 */
		struct json_object *o, *evs, *e, *v;
		char p[1500];
		size_t k, nb = 0;
		const char *nth = "";

		snprintf(p, sizeof(p), "%s.json", F(r, "sym.j1"));
		o = json_object_from_file(p);
		for (k = 0; o && json_object_object_get_ex(o, "traceEvents", &evs) &&
		     k < json_object_array_length(evs); k++) {
			e = json_object_array_get_idx(evs, k);
			if (!json_object_object_get_ex(e, "ph", &v) ||
			    !strcmp(json_object_get_string(v), "M"))
				continue;
			if (strcmp(json_object_get_string(v), "B"))
				break;
			if (++nb == entry0 && json_object_object_get_ex(e, "name", &v))
				nth = json_object_get_string(v);
		}
		CHECK(entry0 > 0 && nb >= entry0 && !strcmp(nth, name),
		      "%s: --symbol %s: --perfetto starts with the %u calls open where it is first "
		      "entered (the ground truth's depth), the last of them into %s (%zu B, \"%s\")",
		      r->name, name, entry0, name, nb, nth);
		json_object_put(o);
	}
	free(want);
}

/* --last N: the tail of the whole decode, and of the ground truth. */
static void test_last(struct run *r)
{
	size_t got, first, la, lb, nl = 0;
	uint64_t nlast = 5000;
	char *full, *sl, *p;
	int st;

	three_ways(r, "last", r->dir, "--last 5000", 0);
	CHECK(insn_list(F(r, "last.j1.insn"), r->ips + r->n - nlast, nlast, &got, &first),
	      "%s: --last %" PRIu64 ": --insn lists the ground truth's last %" PRIu64
	      " instructions (%zu, first difference %zd)", r->name, nlast, nlast, got,
	      first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first);
	outputs_agree(r, "last", nlast, NULL);
	st = decode(F(r, "fullsum"), F(r, "err"), "-j decode %s --insn=%s", r->dir, F(r, "full.insn"));
	full = slurp(F(r, "full.insn"), &la);
	sl = slurp(F(r, "last.j1.insn"), &lb);
	/* the whole --insn after the line of instruction n - N - 1 */
	p = NULL;
	for (char *q = full; q && *q; q = strchr(q, '\n') ? strchr(q, '\n') + 1 : NULL) {
		if (*q != '[' && nl++ == r->n - nlast - 1) {
			p = strchr(q, '\n');
			p = p ? p + 1 : NULL;
			break;
		}
	}
	CHECK(st == 0 && full && sl && p && !strcmp(p, sl),
	      "%s: --last %" PRIu64 ": --insn is the tail of the whole --insn, the events after the "
	      "last instruction included (%zu bytes)", r->name, nlast, lb);
	free(full);
	free(sl);
}

/*
 * --last-branches N: from where the N-th last taken branch went, a taken
 * branch being, in the ground truth, an instruction not followed by the
 * next one in memory (its address + its length, Zydis).
 */
static void test_last_branches(struct run *r, uint64_t nb, bool three)
{
	size_t i, total = 0, k = 0, j = SIZE_MAX, got = 0, first = SIZE_MAX;
	char slice[64], tag[32];
	int st;

	for (i = 0; i + 1 < r->n; i++)
		total += r->ips[i + 1] != r->ips[i] + r->len[i];
	for (i = 0; i + 1 < r->n && j == SIZE_MAX; i++)
		if (r->ips[i + 1] != r->ips[i] + r->len[i] && ++k == total - nb + 1)
			j = i + 1;
	snprintf(slice, sizeof(slice), "--last-branches %" PRIu64, nb);
	snprintf(tag, sizeof(tag), "lastbr%" PRIu64, nb);
	if (three) {
		three_ways(r, tag, r->dir, slice, 0);
		outputs_agree(r, tag, r->n - j, NULL);
		snprintf(tag, sizeof(tag), "lastbr%" PRIu64 ".j1.insn", nb);
		st = 0;
	} else {
		st = decode(F(r, tag), F(r, "err"), "-j decode %s %s --insn=%s.insn", r->dir, slice,
			    F(r, tag));
		snprintf(tag, sizeof(tag), "lastbr%" PRIu64 ".insn", nb);
	}
	CHECK(st == 0 && total > nb && j != SIZE_MAX && insn_list(F(r, tag), r->ips + j, r->n - j,
								    &got, &first),
	      "%s: %s: --insn lists the ground truth from the target of its %" PRIu64 "-th last of "
	      "%zu taken branches, instruction %zu, on (%zu, first difference %zd)", r->name, slice,
	      nb, total, j, got, first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first);
}

/* --tid: the threads of a ptgen run, each its trace; threads.txt has their counts. */
static void test_tid(struct run *r)
{
	char path[PATH_MAX + 64], line[256], slice[64];
	long tid[8];
	unsigned long long cnt[8];
	int nt = 0, k, st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/threads.txt", r->dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f) && nt < 8)
		if (line[0] != '#' && sscanf(line, "%*d %ld %llu", &tid[nt], &cnt[nt]) == 2)
			nt++;
	if (f)
		fclose(f);
	CHECK(nt >= 2, "%s: ptgen traced %d threads", r->name, nt);
	for (k = 1; k < nt && k < 3; k++) {
		char tag[32];

		snprintf(slice, sizeof(slice), "--tid %ld", tid[k]);
		snprintf(tag, sizeof(tag), "tid%d", k);
		three_ways(r, tag, r->dir, slice, 0);
		snprintf(tag, sizeof(tag), "tid%d.j1", k);
		CHECK(json_int(F(r, tag), "slice_instructions") == (int64_t)cnt[k],
		      "%s: --tid %ld: the summary's slice_instructions is the thread's %llu "
		      "instructions (threads.txt)", r->name, tid[k], cnt[k]);
	}
	{
		size_t len, bad = 0, lines = 0;
		char *txt, *p, *save = NULL;

		snprintf(slice, sizeof(slice), "--tid %ld -F tid", tid[1]);
		st = decode(F(r, "ftid"), F(r, "err"), "-j decode %s %s --insn=%s --calls=%s", r->dir,
			    slice, F(r, "ftid.insn"), F(r, "ftid.calls"));
		txt = slurp(F(r, "ftid.insn"), &len);
		for (p = txt ? strtok_r(txt, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save))
			if (p[0] != '[' && (lines++, strtol(p, NULL, 10) != tid[1]))
				bad++;
		free(txt);
		txt = slurp(F(r, "ftid.calls"), &len);
		for (p = txt ? strtok_r(txt, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save))
			if (p[0] != '[' && (lines++, strtol(p, NULL, 10) != tid[1]))
				bad++;
		free(txt);
		CHECK(st == 0 && lines > cnt[1] && !bad,
		      "%s: %s: every --insn and --calls line starts with the thread's id (%zu lines, "
		      "%zu not)", r->name, slice, lines, bad);
	}
	snprintf(slice, sizeof(slice), "--tid %ld,%ld", tid[0], tid[nt - 1]);
	st = decode(F(r, "tids"), F(r, "err"), "-j decode %s %s --folded=%s", r->dir, slice,
		    F(r, "tids.folded"));
	{
		bool all;
		uint64_t sum = folded_sum(F(r, "tids.folded"), NULL, &all);

		CHECK(st == 0 && sum == cnt[0] + cnt[nt - 1],
		      "%s: %s: --folded counts the two threads' %llu instructions (%" PRIu64 ")",
		      r->name, slice, cnt[0] + cnt[nt - 1], sum);
	}
	st = decode(F(r, "tidx"), F(r, "etidx"), "-j decode %s --tid 1 --calls=%s", r->dir,
		    F(r, "tidx.calls"));
	CHECK(st == 1 && json_int(F(r, "tidx"), "slice_instructions") == 0 &&
	      file_contains(F(r, "etidx"), "leaves no instruction"),
	      "%s: --tid of no thread: says the slice leaves nothing, exit 1 (%d)", r->name, st);
}

/* "0x..." of JSON object @o's @key as a number; false if not such a string. */
static bool jhex(struct json_object *o, const char *key, uint64_t *v)
{
	struct json_object *x;
	const char *s;
	char *end;

	if (!json_object_object_get_ex(o, key, &x) || !json_object_is_type(x, json_type_string))
		return false;
	s = json_object_get_string(x);
	if (strncmp(s, "0x", 2))
		return false;
	*v = strtoull(s + 2, &end, 16);
	return end != s + 2 && !*end;
}

/* @o's @key as text ("" if absent; "null" if null). */
static const char *jtext(struct json_object *o, const char *key, char *buf, size_t len)
{
	struct json_object *x;

	buf[0] = 0;
	if (json_object_object_get_ex(o, key, &x))
		snprintf(buf, len, "%s", x ? json_object_get_string(x) : "null");
	return buf;
}

/* --insn's "sym+0xOFF" text of a JSON line (as dec_sym_fmt_at() writes it). */
static void where_text(struct json_object *o, const char *ipkey, char *buf, size_t len)
{
	char sym[256], dso[256];
	uint64_t off, ip = 0;

	jtext(o, "sym", sym, sizeof(sym));
	jtext(o, "dso", dso, sizeof(dso));
	jhex(o, ipkey, &ip);
	if (!jhex(o, "off", &off))
		snprintf(buf, len, "%#" PRIx64, ip);
	else if (off)
		snprintf(buf, len, "%s+%#" PRIx64, strcmp(sym, "null") ? sym : dso, off);
	else
		snprintf(buf, len, "%s+0", strcmp(sym, "null") ? sym : dso);
}

/* The -F time column of a line's "time_ns" ("-" when null). */
static void time_text(struct json_object *o, char *buf, size_t len)
{
	struct json_object *x;

	if (!json_object_object_get_ex(o, "time_ns", &x) || !x) {
		snprintf(buf, len, "-");
		return;
	}
	snprintf(buf, len, "%" PRId64 ".%09" PRId64, json_object_get_int64(x) / 1000000000,
		 json_object_get_int64(x) % 1000000000);
}

/*
 * --jsonl: --insn and --calls as JSON Lines, each line one object that
 * says what the text line with the same -F fields says: every line of the
 * text form is made again from its JSON line, byte for byte (an
 * instruction's address, symbol+offset, tid, cpu and time; a call's or
 * return's instruction number, time, depth, target); addresses are hex
 * strings; the instructions are the ground truth's; -J 2 writes the same.
 */
static void test_jsonl(struct run *r)
{
	const char *fl = "-F tid,cpu,time";
	size_t lt, lj, nins = 0, bad = 0, lines = 0, i;
	char *txt, *js, *tp, *jp, *ts = NULL, *jsv = NULL;
	int st, st2, st3;

	st = decode(F(r, "jl"), F(r, "err"), "-j decode %s %s --jsonl --insn=%s --calls=%s", r->dir,
		    fl, F(r, "jl.insn"), F(r, "jl.calls"));
	st2 = decode(F(r, "jl2"), F(r, "err"), "-j decode %s %s --jsonl -J 2 --insn=%s "
		     "--calls=%s", r->dir, fl, F(r, "jl2.insn"), F(r, "jl2.calls"));
	st3 = decode(F(r, "tl"), F(r, "err"), "-j decode %s %s --insn=%s --calls=%s", r->dir, fl,
		     F(r, "tl.insn"), F(r, "tl.calls"));
	CHECK(!st && !st2 && !st3 && same_files(F(r, "jl.insn"), F(r, "jl2.insn")) &&
	      same_files(F(r, "jl.calls"), F(r, "jl2.calls")),
	      "%s: --jsonl --insn and --calls: exit 0, the same with -J 1 and -J 2", r->name);
	for (i = 0; i < 2; i++) {
		const char *kind = i ? "calls" : "insn";
		char tf[64], jf[64];

		snprintf(tf, sizeof(tf), "tl.%s", kind);
		snprintf(jf, sizeof(jf), "jl.%s", kind);
		txt = slurp(F(r, tf), &lt);
		js = slurp(F(r, jf), &lj);
		bad = lines = 0;
		for (tp = txt ? strtok_r(txt, "\n", &ts) : NULL,
		     jp = js ? strtok_r(js, "\n", &jsv) : NULL; tp || jp;
		     tp = strtok_r(NULL, "\n", &ts), jp = strtok_r(NULL, "\n", &jsv)) {
			struct json_object *o = jp ? json_tokener_parse(jp) : NULL, *x;
			char type[16], tid[32], tm[40], where[600], want[1200];
			uint64_t ip = 0;
			int64_t tidv;

			lines++;
			if (!tp || !o || !json_object_is_type(o, json_type_object)) {
				bad++;
				json_object_put(o);
				break;
			}
			jtext(o, "type", type, sizeof(type));
			tidv = json_object_object_get_ex(o, "tid", &x) ? json_object_get_int64(x) : -1;
			snprintf(tid, sizeof(tid), "%7" PRId64 " [ - ] ", tidv);
			time_text(o, tm, sizeof(tm));
			if (!strcmp(type, "insn")) {
				where_text(o, "ip", where, sizeof(where));
				jhex(o, "ip", &ip);
				snprintf(want, sizeof(want), "%s%14s %016" PRIx64 "  %-40s", tid, tm, ip,
					 where);
				if (nins < r->n && ip != r->ips[nins])
					bad++;
				nins++;
			} else if (!strcmp(type, "call") || !strcmp(type, "return")) {
				char n[32], d[16];

				where_text(o, "target", where, sizeof(where));
				jhex(o, "target", &ip);
				jtext(o, "insn_nr", n, sizeof(n));
				jtext(o, "depth", d, sizeof(d));
				snprintf(want, sizeof(want), "%s%10s %14s %*s%c %s %#" PRIx64, tid, n, tm,
					 2 * atoi(d), "", type[0] == 'c' ? '>' : '<', where, ip);
			} else if (!strcmp(type, "disabled") || !strcmp(type, "enabled")) {
				char text[200];

				if (type[0] == 'e') {
					jhex(o, "ip", &ip);
					snprintf(text, sizeof(text), "enabled at %#" PRIx64, ip);
				} else {
					jtext(o, "text", text, sizeof(text));
				}
				snprintf(want, sizeof(want), "%s%14s [%s]", tid, tm, text);
			} else {
				snprintf(want, sizeof(want), "%s", tp);	/* not compared */
			}
			if (strcmp(want, tp)) {
				if (bad < 3)
					printf("# %s: text  '%s'\n#   from JSON '%s'\n", kind, tp, want);
				bad++;
			}
			json_object_put(o);
		}
		free(txt);
		free(js);
		CHECK(lines > 10 && !bad && (i || nins == r->n),
		      "%s: --jsonl --%s: each of %zu lines one JSON object that gives its text "
		      "line again (%zu differ)%s", r->name, kind, lines, bad,
		      i ? "" : ", the ground truth's instructions");
	}
	st = decode(F(r, "jlo"), F(r, "err"), "-j decode %s --jsonl --insn", r->dir);
	CHECK(st == 2 && file_contains(F(r, "jlo"), "\"error\""),
	      "%s: -j --jsonl --insn on stdout beside the summary: refused, exit 2 (%d)", r->name, st);
}

/* --cpus: a capture of two CPUs (the same trace twice, cpu0.pt and cpu2.pt). */
static void test_cpus(struct run *r)
{
	char cap[1500], raws[8192], line[PATH_MAX + 64], path[PATH_MAX + 64];
	struct image_line il;
	size_t o = 0;
	FILE *f;
	int st;

	size_t tsize = 0;
	char *tr;

	snprintf(path, sizeof(path), "%s/trace.pt", r->dir);
	tr = slurp(path, &tsize);
	free(tr);
	snprintf(cap, sizeof(cap), "%s.cap", F(r, "cpus"));
	sh("rm -rf %s && mkdir -p %s && cp %s/trace.pt %s/cpu0.pt && cp %s/trace.pt %s/cpu2.pt", cap,
	   cap, r->dir, cap, r->dir, cap);
	f = fopen(F(r, "cpus.meta"), "w");
	if (f) {
		fprintf(f, "{\"format\":\"ipt-capture\",\"format_version\":1,\"complete\":true,"
			"\"mode\":\"cpu\",\"cpu\":{\"vendor\":\"GenuineIntel\",\"family\":6,"
			"\"model\":126,\"stepping\":5,\"nom_freq\":20},\"traces\":["
			"{\"cpu\":0,\"file\":\"cpu0.pt\",\"size\":%zu},"
			"{\"cpu\":2,\"file\":\"cpu2.pt\",\"size\":%zu}]}\n", tsize, tsize);
		fclose(f);
	}
	sh("cp %s %s/meta.json", F(r, "cpus.meta"), cap);
	raws[0] = 0;
	f = images_open(r->dir);
	while (images_next(f, &il))
		o += (size_t)snprintf(raws + o, sizeof(raws) - o, " --raw %s/%s:%#llx", r->dir,
				      il.name, il.start);
	if (f)
		fclose(f);
	snprintf(line, sizeof(line), "%s%s", cap, raws);
	three_ways(r, "cpu2", line, "--cpus 2", 0);
	CHECK(json_int(F(r, "cpu2.j1"), "slice_instructions") == (int64_t)r->n &&
	      json_int(F(r, "cpu2.j1"), "instructions") == 2 * (int64_t)r->n,
	      "%s: --cpus 2 of a two-CPU capture: %zu of %zu instructions", r->name, r->n, 2 * r->n);
	outputs_agree(r, "cpu2", r->n, NULL);
	st = decode(F(r, "fcpu"), F(r, "err"), "-j decode %s -C 2 --fields cpu --insn=%s", line,
		    F(r, "fcpu.insn"));
	{
		size_t len, bad = 0, lines = 0;
		char *txt = slurp(F(r, "fcpu.insn"), &len), *p, *save = NULL;

		for (p = txt ? strtok_r(txt, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save))
			if (!strncmp(p, "[trace ", 7))
				continue;	/* a trace's heading, not a line of it */
			else if (strncmp(p, "[002] ", 6))
				bad++;
			else if (p[6] != '[')
				lines++;
		free(txt);
		CHECK(st == 0 && lines == r->n && !bad, "%s: -C 2 --fields cpu: every --insn line "
		      "starts with [002], %zu of them instructions (%zu; %zu not)", r->name, r->n,
		      lines, bad);
	}
	st = decode(F(r, "cpu1"), F(r, "ecpu1"), "-j decode %s --cpus 1 --insn=%s", line,
		    F(r, "cpu1.insn"));
	CHECK(st == 1 && file_contains(F(r, "ecpu1"), "leaves no instruction"),
	      "%s: --cpus 1 (no such trace): says the slice leaves nothing, exit 1 (%d)", r->name,
	      st);
}

/*
 * "[disabled ...]" lines say where tracing stopped and why: after each
 * system call of the ground truth (a SYSCALL, Zydis), in order, "at ITS
 * ADDRESS: system call or far transfer"; a signal that struck with tracing
 * on (FUP + TIP.PGD), "at X: interrupt or fault" where X is the instruction
 * the ground truth resumes at after the handler (the next one after the
 * interrupted one at that depth: some later instruction of the run).
 */
static void test_disabled(struct run *r)
{
	size_t len, ns = 0, nsys = 0, nint = 0, badint = 0, i, k = 0;
	char *s, *p, *save = NULL;
	uint64_t *sys = calloc(r->n + 1, 8);
	bool order = true;
	long async = 0;
	int st;
	char path[PATH_MAX + 64], line[256];
	FILE *f;

	st = decode(F(r, "dis"), F(r, "edis"), "-j decode %s --insn=%s", r->dir, F(r, "dis.insn"));
	s = slurp(F(r, "dis.insn"), &len);
	for (i = 0; i < r->n; i++)
		if (r->kind[i] == 3)
			sys[ns++] = r->ips[i];
	for (p = s ? strtok_r(s, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
		unsigned long long x;

		if (strstr(p, ": system call or far transfer]") &&
		    sscanf(p, "[disabled at %llx:", &x) == 1) {
			order = order && nsys < ns && sys[nsys] == x;
			nsys++;
		} else if (strstr(p, ": interrupt or fault]") &&
			   sscanf(p, "[disabled at %llx:", &x) == 1) {
			nint++;
			for (; k < r->n && r->ips[k] != x; k++)
				;
			if (k == r->n)
				badint++;
		} else if (!strncmp(p, "[disabled", 9)) {
			order = false;
		}
	}
	snprintf(path, sizeof(path), "%s/info.txt", r->dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		sscanf(line, "async_events %ld", &async);
	if (f)
		fclose(f);
	CHECK(st == 0 && ns > 0 && nsys == ns && order,
	      "%s: --insn: a \"[disabled at ADDR: system call or far transfer]\" after each of "
	      "the ground truth's %zu system calls, at its address, in order (%zu), no other "
	      "kind", r->name, ns, nsys);
	CHECK(nint >= 1 && (long)nint <= async && !badint,
	      "%s: --insn: %zu \"[disabled at X: interrupt or fault]\" (of %ld signals), X an "
	      "instruction the ground truth runs later (%zu not)", r->name, nint, async, badint);
	free(s);
	free(sys);
}

/* Wrong slices: usage errors (2), nothing left (1), no time (1). */
static void test_errors(struct run *r, struct run *untimed)
{
	static const char *const bad[] = {
		"--time 5", "--time 2-1", "--time 5tsc-1us", "--time abc-", "--insn-range 9-3",
		"--time 10%/11", "--time 10%,20%", "--time 20%-10%", "--time 101%", "--time 10%/0",
		"--time '2us-3us 1us-4us'", "--time 10%-",
		/* a share of 0%, as perf refuses it (0%/1, 0%/N) */
		"--time 0%", "--time 0%/3", "--time 10%/1,0%/2",
		"--insn-range x", "--tid 0", "--cpus -1", "--last 0", "--last-branches x",
		"--fields tid,comm", "--symbol no_such_function_x",
	};
	size_t i;
	int st;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		st = decode(F(r, "bad"), F(r, "ebad"), "decode %s %s", r->dir, bad[i]);
		CHECK(st == 2 && clean_stderr(F(r, "ebad")) && file_contains(F(r, "ebad"), "want") ==
		      !strstr(bad[i], "symbol"), "%s: decode %s: usage, exit 2 (%d)", r->name, bad[i],
		      st);
	}
	/* one instant is a slice perf takes (its ends are inclusive), not a usage error */
	static const char *const instant[] = { "--time 5%-5%", "--time 3ms-3ms", "--time -0" };

	for (i = 0; i < sizeof(instant) / sizeof(instant[0]); i++) {
		st = decode(F(r, "inst"), F(r, "einst"), "decode %s %s", r->dir, instant[i]);
		CHECK((st == 0 || st == 1) && !file_contains(F(r, "einst"), "want"),
		      "%s: decode %s: one instant is a slice, not a usage error (%d)", r->name,
		      instant[i], st);
	}
	st = decode(F(r, "late"), F(r, "elate"), "-j decode %s --insn-range %zu- --calls=%s", r->dir,
		    r->n, F(r, "late.calls"));
	CHECK(st == 1 && file_contains(F(r, "elate"), "leaves no instruction") &&
	      json_int(F(r, "late"), "slice_instructions") == 0,
	      "%s: --insn-range past the end: says the slice leaves nothing, exit 1 (%d)", r->name,
	      st);
	if (untimed) {
		st = decode(F(untimed, "nt"), F(untimed, "ent"), "decode %s --time 1us-", untimed->dir);
		CHECK(st == 1 && file_contains(F(untimed, "ent"), "no TSC packets"),
		      "%s: --time on a trace without TSC packets: says so, exit 1 (%d)",
		      untimed->name, st);
	}
}

static bool ptgen(struct run *r, const char *opts, const char *prog)
{
	return sh("%s/selftests/ptgen %s -o %s -- %s/groundtruth/%s >%s.log 2>&1", build, opts,
		  r->dir, build, prog, r->dir) == 0;
}

int main(int argc, char **argv)
{
	static struct run timed = { .name = "recurse-timed" }, thr = { .name = "threads" },
			  sig = { .name = "signals" }, calls = { .name = "calls" };

	int status;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!tool_test_setup(argc, argv, "slice-tests", &status))
		return status;
	ZydisDecoderInit(&zd, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	snprintf(timed.dir, sizeof(timed.dir), "%s/%s", work, timed.name);
	snprintf(thr.dir, sizeof(thr.dir), "%s/%s", work, thr.name);
	snprintf(sig.dir, sizeof(sig.dir), "%s/%s", work, sig.name);
	snprintf(calls.dir, sizeof(calls.dir), "%s/%s", work, calls.name);
	CHECK(ptgen(&timed, "--tsc --mtc 0", "recurse") && load_run(&timed) && timed.tm &&
	      timed.hz_den, "%s: ptgen made a timed ground-truth trace (%zu instructions)",
	      timed.name, timed.n);
	CHECK(ptgen(&thr, "", "threads") && load_run(&thr),
	      "%s: ptgen made a ground-truth trace of 3 threads (%zu instructions in thread 0)",
	      thr.name, thr.n);
	if (timed.n && timed.tm && timed.hz_den) {
		test_insn_range(&timed);
		test_time(&timed);
		test_time_forms(&timed);
		test_jsonl(&timed);
		test_symbol(&timed, "fib");
		test_symbol(&timed, "main");
		test_last(&timed);
		test_last_branches(&timed, 500, true);
		test_cpus(&timed);
		test_errors(&timed, thr.n ? &thr : NULL);
	}
	if (thr.n)
		test_tid(&thr);
	CHECK(ptgen(&sig, "", "signals") && load_run(&sig),
	      "%s: ptgen made a ground-truth trace with signals (%zu instructions)", sig.name, sig.n);
	/* longjmp out of middle() (via thrower()): the slice ends where catcher() returns */
	CHECK(ptgen(&calls, "", "calls") && load_run(&calls),
	      "%s: ptgen made a ground-truth trace with longjmp (%zu instructions)", calls.name,
	      calls.n);
	if (calls.n)
		test_symbol(&calls, "middle");
	if (sig.n) {
		test_disabled(&sig);
		/* system calls (no branch), a signal and its return (branches) in the last 40 */
		test_last_branches(&sig, 40, false);
	}
	return tap_done();
}

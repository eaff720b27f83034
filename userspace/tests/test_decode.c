// SPDX-License-Identifier: GPL-2.0
/*
 * Tests of 'ipttool decode' on ground-truth traces made by ptgen at test
 * time.  Every expectation is computed here, independently of the decoder,
 * from ptgen's instruction list (insns.bin), the code it dumped (classified
 * with Zydis) and the program's ELF symbol table (read with libelf):
 * instruction traces, call/return traces, profiles, folded stacks, Perfetto
 * spans, coverage, edges, packets; parallel against serial; captures and
 * ptxed-style inputs; and corrupted input run through the decoder built
 * with ASan/UBSan (ipttool-san).  TAP on stdout.
 *
 *   test_decode [BUILD_DIR]     BUILD_DIR: the top build/ (default: ../ of
 *                               this program's directory)
 *
 * Needs 'make selftests' (ptgen, the test programs) and 'make userspace'.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <intel-pt.h>
#include <json-c/json.h>
#include <Zydis/Zydis.h>

#include "../ipttool/ipttool.h"
#include "tap.h"
#include "tool_test.h"

/* A PSB packet's 16 bytes (SDM vol. 3C, 33.4.2.13). */
#define PT_PSB 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, \
	       0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82

/* PSB+ in 64-bit mode, then tracing enabled at 0x401000. */
#define PT_ENABLE_401000 \
	PT_PSB,						/* PSB */ \
	0x99, 0x01,					/* MODE.Exec 64-bit */ \
	0x02, 0x23,					/* PSBEND */ \
	0x99, 0x01,					/* MODE.Exec 64-bit */ \
	0x71, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00	/* TIP.PGE 0x401000 */

/* ---- small helpers ------------------------------------------------------------ */

static int spew(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(buf, 1, len, f) == len;
	return fclose(f) || !ok ? -1 : 0;
}

/* ---- a ground-truth run ---------------------------------------------------- */

struct image {
	uint64_t start, end;
	uint8_t *bytes;
};

struct gsym {
	uint64_t start, end;
	int rank;
	char *name;
	uint64_t sec_end;	/* the end of its section */
	bool label;		/* STT_NOTYPE */
};

struct run {
	char name[64], dir[1300];
	uint64_t *ips;
	size_t n;
	struct image img[64];
	size_t nimg;
	uint8_t *len;		/* per instruction: its length */
	uint8_t *kind;		/* 1 call, 2 ret, 0 other */
	struct gsym *syms;	/* from the program's ELF (static programs) */
	size_t nsyms;
	bool static_prog;
	char elf[PATH_MAX];
};

static ZydisDecoder zd;

static const struct image *find_img(const struct run *r, uint64_t ip)
{
	size_t i;

	/* later dumps win */
	for (i = r->nimg; i-- > 0;)
		if (ip >= r->img[i].start && ip < r->img[i].end)
			return &r->img[i];
	return NULL;
}

static int cmp_gsym(const void *a, const void *b)
{
	const struct gsym *x = a, *y = b;
	size_t lx, ly;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	lx = strlen(x->name);
	ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * The documented rule (Documentation/decode.rst, "Symbols"): function
 * symbols and labels (STT_NOTYPE) in executable sections, but no $x or .L
 * names; at one address a function before a label, then the global, weak,
 * local one, then the shortest name, then the first alphabetically; a
 * label inside a sized function is dropped; the symbol of an address is
 * the one with the greatest start <= it, if the address is below its end
 * (the largest size among the aliases, else the next symbol or the end of
 * its section, whichever is first).
 */
static void load_syms(struct run *r)
{
	int fd = open(r->elf, O_RDONLY);
	Elf_Scn *scn = NULL;
	struct gsym *raw = NULL;
	size_t nraw = 0, i;
	Elf *e;

	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t k = 0; d && k < sh.sh_size / sh.sh_entsize; k++) {
			GElf_Sym s;
			const char *nm;

			GElf_Shdr ss;
			Elf_Scn *sscn;
			int type;

			if (!gelf_getsym(d, (int)k, &s) || !s.st_value || s.st_shndx == SHN_UNDEF ||
			    s.st_shndx >= SHN_LORESERVE)
				continue;
			type = GELF_ST_TYPE(s.st_info);
			sscn = elf_getscn(e, s.st_shndx);
			if (!sscn || !gelf_getshdr(sscn, &ss) || !(ss.sh_flags & SHF_ALLOC) ||
			    (type != STT_FUNC && type != STT_GNU_IFUNC &&
			     (type != STT_NOTYPE || !(ss.sh_flags & SHF_EXECINSTR))))
				continue;
			nm = elf_strptr(e, sh.sh_link, s.st_name);
			if (!nm || !*nm || *nm == '$' || !strncmp(nm, ".L", 2))
				continue;
			raw = realloc(raw, (nraw + 1) * sizeof(*raw));
			raw[nraw].start = s.st_value;
			raw[nraw].end = s.st_size ? s.st_value + s.st_size : 0;
			raw[nraw].label = type == STT_NOTYPE;
			raw[nraw].rank = (GELF_ST_BIND(s.st_info) == STB_GLOBAL ? 0 :
					  GELF_ST_BIND(s.st_info) == STB_WEAK ? 1 : 2) +
					 (raw[nraw].label ? 3 : 0);
			raw[nraw].sec_end = ss.sh_addr + ss.sh_size;
			raw[nraw].name = strdup(nm);
			nraw++;
		}
	}
	qsort(raw, nraw, sizeof(*raw), cmp_gsym);
	r->syms = calloc(nraw + 1, sizeof(*r->syms));
	{
		uint64_t covered = 0;	/* end of the sized functions so far */

		for (i = 0; i < nraw; i++) {
			if (!raw[i].label && raw[i].end > covered)
				covered = raw[i].end;
			if (r->nsyms && r->syms[r->nsyms - 1].start == raw[i].start) {
				if (raw[i].end > r->syms[r->nsyms - 1].end)
					r->syms[r->nsyms - 1].end = raw[i].end;
				free(raw[i].name);
				continue;
			}
			if (raw[i].label && raw[i].start < covered) {
				free(raw[i].name);
				continue;
			}
			r->syms[r->nsyms++] = raw[i];
		}
	}
	for (i = 0; i < r->nsyms; i++)
		if (!r->syms[i].end) {
			r->syms[i].end = i + 1 < r->nsyms ? r->syms[i + 1].start : UINT64_MAX;
			if (r->syms[i].sec_end > r->syms[i].start &&
			    r->syms[i].sec_end < r->syms[i].end)
				r->syms[i].end = r->syms[i].sec_end;
		}
	free(raw);
	if (e)
		elf_end(e);
	close(fd);
}

static const struct gsym *sym_of(const struct run *r, uint64_t ip)
{
	const struct gsym *best = NULL;
	size_t i;

	for (i = 0; i < r->nsyms && r->syms[i].start <= ip; i++)
		best = &r->syms[i];
	/* (linear on purpose: independent of the decoder's binary search) */
	return best && ip < best->end ? best : NULL;
}

/* A symbol cache for the long loops below. */
static const struct gsym *sym_of_cached(const struct run *r, uint64_t ip)
{
	static const struct run *cr;
	static const struct gsym *cs;

	if (cr == r && cs && ip >= cs->start && ip < cs->end) {
		/* still valid only if no later symbol starts at or before ip */
		if (cs + 1 >= r->syms + r->nsyms || cs[1].start > ip)
			return cs;
	}
	cr = r;
	cs = sym_of(r, ip);
	return cs;
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
	r->len = calloc(r->n, 1);
	r->kind = calloc(r->n, 1);
	for (i = 0; i < r->n; i++) {
		const struct image *im = find_img(r, r->ips[i]);
		ZydisDecodedInstruction zi;

		if (!im || !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&zd, NULL,
				im->bytes + (r->ips[i] - im->start), im->end - r->ips[i], &zi)))
			return false;
		r->len[i] = zi.length;
		if (zi.mnemonic == ZYDIS_MNEMONIC_CALL &&
		    zi.meta.branch_type != ZYDIS_BRANCH_TYPE_FAR)
			r->kind[i] = 1;
		else if (zi.mnemonic == ZYDIS_MNEMONIC_RET)
			r->kind[i] = 2;
	}
	/* the program's ELF: the first mapping in maps.txt */
	snprintf(path, sizeof(path), "%s/maps.txt", r->dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char p[PATH_MAX];

		if (line[0] != '#' && sscanf(line, "%*s %*s %*s %*s %*s %4095s", p) == 1 && p[0] == '/') {
			snprintf(r->elf, sizeof(r->elf), "%s", p);
			break;
		}
	}
	if (f)
		fclose(f);
	if (r->static_prog)
		load_syms(r);
	return true;
}

/* Decoded addresses of an --insn output (lines that start with a hex address). */
static uint64_t *insn_addrs(const char *path, size_t *n)
{
	size_t len, cap = 1024;
	char *s = slurp(path, &len), *p, *save = NULL;
	uint64_t *a = malloc(cap * 8);

	*n = 0;
	if (!s)
		return a;
	for (p = strtok_r(s, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		if (p[0] == '[')
			continue;
		if (*n == cap)
			a = realloc(a, (cap *= 2) * 8);
		a[(*n)++] = strtoull(p, NULL, 16);
	}
	free(s);
	return a;
}

static bool same_files(const char *a, const char *b)
{
	size_t la, lb;
	char *x = slurp(a, &la), *y = slurp(b, &lb);
	bool ok = x && y && la == lb && !memcmp(x, y, la);

	free(x);
	free(y);
	return ok;
}

static int64_t json_int(const char *path, const char *key)
{
	struct json_object *o = json_object_from_file(path), *v;
	int64_t r = -1;

	if (o && json_object_object_get_ex(o, key, &v))
		r = json_object_get_int64(v);
	json_object_put(o);
	return r;
}

/*
 * The keys of the first "stream_gap" entry of the -j summary in @path's
 * "traces"[*]."errors", sorted, comma-separated, into @buf ("" if none).
 */
static void sgap_keys(const char *path, char *buf, size_t len)
{
	struct json_object *o = json_object_from_file(path), *ts = NULL, *errs, *e, *rs;
	const char *keys[16];
	size_t n = 0, i, j, k;

	buf[0] = '\0';
	if (!o || !json_object_object_get_ex(o, "traces", &ts))
		goto out;
	for (i = 0; i < json_object_array_length(ts) && !n; i++) {
		if (!json_object_object_get_ex(json_object_array_get_idx(ts, i), "errors", &errs))
			continue;
		for (j = 0; j < json_object_array_length(errs) && !n; j++) {
			e = json_object_array_get_idx(errs, j);
			if (!json_object_object_get_ex(e, "reason", &rs) ||
			    strcmp(json_object_get_string(rs), "stream_gap"))
				continue;
			json_object_object_foreach(e, key, val) {
				(void)val;
				if (n < 16)
					keys[n++] = key;
			}
			for (k = 1; k < n; k++)
				for (size_t m = k; m > 0 && strcmp(keys[m - 1], keys[m]) > 0; m--) {
					const char *x = keys[m];

					keys[m] = keys[m - 1];
					keys[m - 1] = x;
				}
			for (k = 0; k < n; k++)
				snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", k ? "," : "",
					 keys[k]);
		}
	}
out:
	json_object_put(o);
}

/* ---- expectations from the ground truth ------------------------------------------------ */

/*
 * --calls lines: "IDX <indent>[><] SYM ADDR".  The expected depths: a
 * call opens a frame returning to the instruction after it; a return
 * closes the innermost frame whose return address is where it went, and
 * the frames above it (a call to the next instruction, as 32-bit PIC code
 * makes, is never returned from; longjmp), else the top one, as perf's
 * thread-stack.c does (thread_stack__pop_cp()): one line per return.
 */
static void test_calls(struct run *r, const char *out)
{
	size_t len, i, nexp = 0, ngot = 0, bad = SIZE_MAX;
	char *s = slurp(out, &len), *p, *save = NULL;
	unsigned int depth = 0;
	struct { uint64_t idx, addr; unsigned int indent; char k; } *exp, *got;
	uint64_t *rets = calloc(r->n + 1, sizeof(*rets));

	exp = calloc(r->n + 1, sizeof(*exp));
	got = calloc(r->n + 1, sizeof(*got));
	for (i = 0; i + 1 < r->n; i++) {
		if (r->kind[i] == 1) {
			exp[nexp].idx = i + 1;
			exp[nexp].indent = 2 * depth;
			exp[nexp].k = '>';
			exp[nexp++].addr = r->ips[i + 1];
			rets[depth++] = r->ips[i] + r->len[i];
		} else if (r->kind[i] == 2) {
			depth = gt_ret_depth(rets, depth, r->ips[i + 1]);
			exp[nexp].idx = i + 1;
			exp[nexp].indent = 2 * depth;
			exp[nexp].k = '<';
			exp[nexp++].addr = r->ips[i + 1];
		}
	}
	for (p = s ? strtok_r(s, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
		char *q, *last;

		if (ngot > r->n)
			break;
		got[ngot].idx = strtoull(p, &q, 10);
		q++;	/* the separating space */
		got[ngot].indent = (unsigned int)strspn(q, " ");
		got[ngot].k = q[got[ngot].indent];
		last = strrchr(p, ' ');
		got[ngot++].addr = last ? strtoull(last + 1, NULL, 16) : 0;
	}
	for (i = 0; i < nexp && i < ngot; i++)
		if (exp[i].idx != got[i].idx || exp[i].addr != got[i].addr ||
		    exp[i].indent != got[i].indent || exp[i].k != got[i].k) {
			bad = i;
			break;
		}
	CHECK(nexp == ngot && bad == SIZE_MAX && nexp > 0,
	      "%s: --calls has the %zu calls/returns the ground truth implies, with indices, "
	      "depths and targets (got %zu lines, first difference at %zd)", r->name, nexp, ngot,
	      bad == SIZE_MAX ? (ssize_t)-1 : (ssize_t)bad);
	free(s);
	free(rets);
	free(exp);
	free(got);
}

struct cnt {
	uint64_t key;
	uint64_t n;
	const char *name;
};

static int cmp_cnt(const void *a, const void *b)
{
	const struct cnt *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static void test_profile(struct run *r, const char *out)
{
	struct cnt *exp = calloc(r->nsyms + 1, sizeof(*exp)), *got = calloc(r->nsyms + 64, sizeof(*got));
	size_t nexp = 0, ngot = 0, i, len;
	uint64_t nosym = 0, got_nosym = 0, total = 0;
	char *s = slurp(out, &len), *p, *save = NULL;
	bool ok = true;

	/* counts per symbol index, then compacted */
	uint64_t *per = calloc(r->nsyms + 1, 8);

	for (i = 0; i < r->n; i++) {
		const struct gsym *g = sym_of_cached(r, r->ips[i]);

		if (g)
			per[g - r->syms]++;
		else
			nosym++;
	}
	for (i = 0; i < r->nsyms; i++)
		if (per[i]) {
			exp[nexp].key = r->syms[i].start;
			exp[nexp++].n = per[i];
		}
	for (p = s ? strtok_r(s, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
		unsigned long long c;
		char dso[256], fn[512], addr[64];

		if (p[0] == '#') {
			if (!strncmp(p, "# per DSO", 9))
				break;
			if (sscanf(p, "# flat profile: %llu", &c) == 1)
				total = c;
			continue;
		}
		if (sscanf(p, "%llu %*s %255s %511s %63s", &c, dso, fn, addr) != 4)
			continue;
		/* no symbol: a row per instruction, named by its offset in the DSO */
		if (!strcmp(fn, "[no") || !strncmp(fn, "0x", 2)) {
			got_nosym += c;
			continue;
		}
		if (ngot < r->nsyms + 64) {
			got[ngot].key = strtoull(addr, NULL, 16);
			got[ngot++].n = c;
		}
	}
	qsort(got, ngot, sizeof(*got), cmp_cnt);
	if (ngot != nexp)
		ok = false;
	for (i = 0; ok && i < nexp; i++)
		if (got[i].key != exp[i].key || got[i].n != exp[i].n)
			ok = false;
	CHECK(ok && total == r->n && got_nosym == nosym,
	      "%s: --profile counts per function equal the ground truth's (%zu functions, "
	      "%" PRIu64 " instructions; decoder listed %zu, total %" PRIu64 ")", r->name, nexp, r->n,
	      ngot, total);
	free(per);
	free(exp);
	free(got);
	free(s);
}

/*
 * The --folded frame of @ip in static program @r: its function, else (code
 * in no symbol: IRELATIVE PLT stubs) "prog+0xADDR", the instruction's own
 * address (an ET_EXEC file: offset = address), never one lump per DSO
 * (issue 17).  Interned: the same pointer for the same address.
 */
static const char *frame(struct run *r, uint64_t ip)
{
	static struct { uint64_t ip; const struct run *r; char *name; } *tab;
	static size_t cap, n;
	const struct gsym *g = sym_of_cached(r, ip);
	const char *slash;
	size_t i;

	if (g)
		return g->name;
	if ((n + 1) * 2 > cap) {
		size_t ocap = cap;
		__typeof__(tab) old = tab;

		cap = cap ? cap * 2 : 1024;
		tab = calloc(cap, sizeof(*tab));
		for (i = 0; i < ocap; i++)
			if (old[i].name) {
				size_t k = (old[i].ip * 0x9e3779b97f4a7c15ULL) >> 40 & (cap - 1);

				while (tab[k].name)
					k = (k + 1) & (cap - 1);
				tab[k] = old[i];
			}
		free(old);
	}
	for (i = (ip * 0x9e3779b97f4a7c15ULL) >> 40 & (cap - 1); tab[i].name; i = (i + 1) & (cap - 1))
		if (tab[i].ip == ip && tab[i].r == r)
			return tab[i].name;
	slash = strrchr(r->elf, '/');
	tab[i].ip = ip;
	tab[i].r = r;
	if (asprintf(&tab[i].name, "%s+%#" PRIx64, slash ? slash + 1 : r->elf, ip) < 0)
		return "?";
	n++;
	return tab[i].name;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The root frame --folded gives thread 0 of ptgen run @r: COMM-TID, the
 * name the kernel gave the program (its file's base name, at most 15
 * bytes) and the TID ptgen wrote in threads.txt; "" without a TID.
 */
static void run_root(const struct run *r, char *root, size_t size)
{
	char path[PATH_MAX + 16], line[256];
	const char *slash = strrchr(r->elf, '/');
	unsigned int k;
	long tid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/threads.txt", r->dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%u %ld", &k, &tid) == 2 && k == 0)
			break;
	if (f)
		fclose(f);
	root[0] = 0;
	if (tid > 0)
		snprintf(root, size, "%.15s-%ld;", slash ? slash + 1 : r->elf, tid);
}

/*
 * Folded: under the thread's root frame, the frames are the functions of
 * the call sites, then the current function; a return closes the frames
 * test_calls() says it does.
 */
static void test_folded(struct run *r, const char *out)
{
	size_t cap = 1 << 16, nl = 0, i, len, ngot = 0;
	char **lines = malloc(cap * sizeof(char *));
	const char *stack[4096];
	uint64_t rets[4096];
	unsigned int depth = 0;
	char cur[1 << 16], root[128];
	char *s, *p, *save = NULL, **gotl;
	uint64_t run = 0;
	char key[1 << 16] = "";
	bool ok = true;

	run_root(r, root, sizeof(root));
	/* (stack;leaf, count) pairs, in runs, then merged after sorting */
	for (i = 0; i < r->n; i++) {
		size_t l = (size_t)snprintf(cur, sizeof(cur), "%s", root);
		unsigned int k;

		for (k = 0; k < depth && k < 4096; k++)
			l += (size_t)snprintf(cur + l, sizeof(cur) - l, "%s;", stack[k]);
		snprintf(cur + l, sizeof(cur) - l, "%s", frame(r, r->ips[i]));
		if (strcmp(cur, key)) {
			if (run) {
				if (nl == cap)
					lines = realloc(lines, (cap *= 2) * sizeof(char *));
				if (asprintf(&lines[nl++], "%s %" PRIu64, key, run) < 0)
					exit(2);
			}
			snprintf(key, sizeof(key), "%s", cur);
			run = 0;
		}
		run++;
		if (r->kind[i] == 1) {
			if (depth < 4096) {
				stack[depth] = frame(r, r->ips[i]);
				rets[depth] = r->ips[i] + r->len[i];
			}
			depth++;
		} else if (r->kind[i] == 2 && depth) {
			/* past 4096 frames, or at the trace's end: the innermost closes */
			depth = depth <= 4096 && i + 1 < r->n ?
				gt_ret_depth(rets, depth, r->ips[i + 1]) : depth - 1;
		}
	}
	if (run) {
		if (nl == cap)
			lines = realloc(lines, (cap *= 2) * sizeof(char *));
		if (asprintf(&lines[nl++], "%s %" PRIu64, key, run) < 0)
			exit(2);
	}
	/* merge equal stacks: sort by stack, sum */
	qsort(lines, nl, sizeof(char *), cmp_str);
	{
		size_t w = 0;

		for (i = 0; i < nl; i++) {
			char *sp = strrchr(lines[i], ' ');
			uint64_t c = strtoull(sp + 1, NULL, 10);

			*sp = 0;
			if (w && !strcmp(lines[w - 1], lines[i])) {
				char *prev = lines[w - 1];
				uint64_t pc = strtoull(prev + strlen(prev) + 1, NULL, 10);
				char *merged;

				if (asprintf(&merged, "%s%c%" PRIu64, prev, 0, pc + c) < 0)
					exit(2);
				free(prev);
				free(lines[i]);
				lines[w - 1] = merged;
			} else {
				char *cp;

				if (asprintf(&cp, "%s%c%" PRIu64, lines[i], 0, c) < 0)
					exit(2);
				free(lines[i]);
				lines[w++] = cp;
			}
		}
		nl = w;
	}
	s = slurp(out, &len);
	gotl = calloc(nl + 1, sizeof(char *));
	for (p = s ? strtok_r(s, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
		if (ngot >= nl) {
			ngot++;
			break;
		}
		gotl[ngot++] = p;
	}
	if (ngot != nl)
		ok = false;
	for (i = 0; ok && i < nl; i++) {
		char exp[1 << 16];
		const char *cnt = lines[i] + strlen(lines[i]) + 1;

		snprintf(exp, sizeof(exp), "%s %s", lines[i], cnt);
		/* both sorted by stack; the decoder sorts "stack count" strings */
		if (strcmp(exp, gotl[i])) {
			ok = false;
			printf("# folded line %zu: expected '%.200s', got '%.200s'\n", i, exp, gotl[i]);
		}
	}
	CHECK(ok, "%s: --folded equals the %zu stacks the ground truth implies (got %zu)", r->name,
	      nl, ngot);
	for (i = 0; i < nl; i++)
		free(lines[i]);
	free(lines);
	free(gotl);
	free(s);
}

/*
 * Import the Chrome trace-event JSON @path with speedscope's own importer
 * (tools/testing/speedscope/import-trace.mjs runs the npm package's code
 * under node): it must warn about nothing (speedscope warns for every "E"
 * it drops or that does not match the frame on top of its stack, and for
 * every frame left open), give @ntracks profiles, each with exactly the
 * spans the file has (by name and args, in order), and name a profile
 * with each of @names (process and thread names).  Skipped, saying why,
 * only when node or speedscope is not installed (scripts/setup installs
 * them).
 */
struct pf_ev {
	int64_t ns;
	size_t idx;			/* file order */
	uint32_t pid, tid;
	char ph;
	const char *name;
};

static int cmp_pf_ev(const void *x, const void *y)
{
	const struct pf_ev *a = x, *b = y;

	if (a->ns != b->ns)
		return a->ns < b->ns ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/*
 * The rules of Perfetto's trace-event importer (trace_processor's
 * json_trace_tokenizer.cc and sorter/trace_sorter.h, read for them): "ts"
 * a JSON number in microseconds, turned into ns as llround(ts * 1000)
 * (exactly, when whole), required but for "M"; a negative time is dropped;
 * "pid"/"tid" numbers that fit 32 bits (else 0); the events sorted by that
 * ns, equal times in file order (no "X" event, whose presence makes "E"
 * sort first at equal times); then per (pid, tid) each "E" ends the slice
 * on top of the track's stack.  @path must obey them, and every "E" must
 * end the slice its "B" of the same name began.
 */
static bool perfetto_rules_ok(const char *path, char *why, size_t wlen)
{
	struct json_object *o = json_object_from_file(path), *evs = NULL;
	size_t n = 0, i, bad_ts = 0, bad_id = 0, xs = 0, badnest = 0, open = 0, neg = 0;
	struct pf_ev *ev;

	if (o)
		json_object_object_get_ex(o, "traceEvents", &evs);
	n = evs ? json_object_array_length(evs) : 0;
	ev = calloc(n + 1, sizeof(*ev));
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(evs, i), *v;
		const char *ph = json_object_object_get_ex(e, "ph", &v) ? json_object_get_string(v) : "";

		ev[i].idx = i;
		ev[i].ph = ph[0];
		xs += ph[0] == 'X';
		ev[i].name = json_object_object_get_ex(e, "name", &v) ? json_object_get_string(v) : "";
		for (int k = 0; k < 2; k++) {
			int64_t id = 0;

			if (json_object_object_get_ex(e, k ? "tid" : "pid", &v)) {
				if (!json_object_is_type(v, json_type_int) ||
				    (id = json_object_get_int64(v)) < 0 || id > UINT32_MAX)
					bad_id++;
			}
			if (k)
				ev[i].tid = (uint32_t)id;
			else
				ev[i].pid = (uint32_t)id;
		}
		if (ph[0] == 'M')
			continue;
		if (!json_object_object_get_ex(e, "ts", &v) ||
		    !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))) {
			bad_ts++;
			continue;
		}
		if (json_object_is_type(v, json_type_int)) {
			ev[i].ns = json_object_get_int64(v) * 1000;
		} else {
			double d = json_object_get_double(v);

			ev[i].ns = d == (double)(int64_t)d ? (int64_t)d * 1000 :
				   (int64_t)(d * 1000.0 + (d < 0 ? -0.5 : 0.5));
		}
		neg += ev[i].ns < 0;
	}
	qsort(ev, n, sizeof(*ev), cmp_pf_ev);
	{
		/* per track: a stack of open slice names */
		struct pf_stack { uint32_t pid, tid; const char *open[4096]; size_t n; } *tr = NULL;
		size_t ntr = 0, t;

		for (i = 0; i < n; i++) {
			if (ev[i].ph != 'B' && ev[i].ph != 'E')
				continue;
			for (t = 0; t < ntr && (tr[t].pid != ev[i].pid || tr[t].tid != ev[i].tid); t++)
				;
			if (t == ntr) {
				tr = realloc(tr, (ntr + 1) * sizeof(*tr));
				tr[ntr].pid = ev[i].pid;
				tr[ntr].tid = ev[i].tid;
				tr[ntr++].n = 0;
			}
			if (ev[i].ph == 'B') {
				if (tr[t].n < 4096)
					tr[t].open[tr[t].n] = ev[i].name;
				tr[t].n++;
			} else if (!tr[t].n) {
				badnest++;
			} else if (--tr[t].n < 4096 && strcmp(tr[t].open[tr[t].n], ev[i].name)) {
				badnest++;
			}
		}
		for (t = 0; t < ntr; t++)
			open += tr[t].n;
		free(tr);
	}
	snprintf(why, wlen, "%zu events: %zu bad ts, %zu bad ids, %zu X, %zu negative, %zu "
		 "misnested, %zu left open", n, bad_ts, bad_id, xs, neg, badnest, open);
	free(ev);
	json_object_put(o);
	return o && evs && n && !bad_ts && !bad_id && !xs && !neg && !badnest && !open;
}

static void perfetto_rules(const char *label, const char *path)
{
	static bool controls;
	char why[256];
	bool ok = perfetto_rules_ok(path, why, sizeof(why));

	CHECK(ok, "%s: Perfetto's importer rules: ts numbers (us, to ns as it rounds them), "
	      "pid/tid 32-bit numbers, and after its sort every E ends the slice its B began (%s)",
	      label, why);
	if (!controls) {
		/* the checker itself: files that break those rules are refused */
		static const char *const bad[] = {
			"{\"traceEvents\":[{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":\"5\","
			"\"name\":\"f\"},{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":6,\"name\":\"f\"}]}",
			/* the E is earlier than its B: it sorts first */
			"{\"traceEvents\":[{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":2.0004,"
			"\"name\":\"f\"},{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":1.9,\"name\":\"f\"}]}",
			"{\"traceEvents\":[{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":\"f\"},"
			"{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":2,\"name\":\"g\"},"
			"{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":3,\"name\":\"f\"}]}",
			"{\"traceEvents\":[{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1,"
			"\"name\":\"f\"}]}",
			"{\"traceEvents\":[{\"ph\":\"B\",\"pid\":\"0x1\",\"tid\":1,\"ts\":1,"
			"\"name\":\"f\"},{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":2,\"name\":\"f\"}]}",
		};
		char p[PATH_MAX + 32];
		size_t refused = 0;

		controls = true;
		snprintf(p, sizeof(p), "%s/perfetto-bad.json", work);
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
			refused += !spew(p, bad[k], strlen(bad[k])) && !perfetto_rules_ok(p, why, sizeof(why));
		CHECK(refused == sizeof(bad) / sizeof(bad[0]),
		      "the Perfetto rules check refuses a string ts, an E sorted before its B, an E "
		      "of another name, an X event and a string pid (%zu of %zu)", refused,
		      sizeof(bad) / sizeof(bad[0]));
	}
}

/*
 * @path through speedscope's own importer (import-trace.mjs @how): its
 * exit status, its report in *@s and *@o (parsed, or NULL); -1 when the
 * importer cannot run here (node or speedscope missing: reported as a
 * skip, nothing returned).
 */
static int speedscope_import(const char *label, const char *how, const char *path, char **s,
			     struct json_object **o)
{
	char out[PATH_MAX + 16];
	struct json_object *v;
	int st;

	if (sh("command -v node >/dev/null 2>&1")) {
		SKIP("%s: speedscope's importer: node is not installed (run scripts/setup)", label);
		return -1;
	}
	snprintf(out, sizeof(out), "%s.speedscope", path);
	st = sh("node %s/tools/testing/speedscope/import-trace.mjs %s %s >%s 2>&1", IPT_SRCDIR, how,
		path, out);
	*s = slurp(out, NULL);
	*o = *s ? json_tokener_parse(*s) : NULL;
	if (st != 77)
		return st;
	SKIP("%s: speedscope's importer: %s", label,
	     *o && json_object_object_get_ex(*o, "skip", &v) ? json_object_get_string(v) :
	     "not installed");
	json_object_put(*o);
	free(*s);
	return -1;
}

static void test_speedscope(const char *label, const char *path, size_t ntracks,
			    const char *const *names)
{
	perfetto_rules(label, path);
	char *s;
	struct json_object *o, *v, *profs = NULL;
	size_t i, np = 0, spans = 0;
	bool ok = true;
	int st = speedscope_import(label, "", path, &s, &o);

	if (st < 0)
		return;
	if (st || !o || !json_object_object_get_ex(o, "nwarnings", &v) || json_object_get_int(v) ||
	    !json_object_object_get_ex(o, "profiles", &profs))
		ok = false;
	np = profs ? json_object_array_length(profs) : 0;
	for (i = 0; i < np; i++) {
		struct json_object *p = json_object_array_get_idx(profs, i), *c, *e, *m;

		if (!json_object_object_get_ex(p, "calls", &c) ||
		    !json_object_object_get_ex(p, "expected", &e) ||
		    !json_object_object_get_ex(p, "first_mismatch", &m) ||
		    json_object_get_int64(c) != json_object_get_int64(e) || !json_object_get_int64(e) ||
		    json_object_get_int(m) != -1)
			ok = false;
		spans += (size_t)json_object_get_int64(c);
	}
	for (i = 0; names && names[i]; i++)
		if (!strstr(s, names[i]))
			ok = false;
	CHECK(ok && np == ntracks, "%s: speedscope's own importer takes the Perfetto JSON without a "
	      "warning: %zu profiles (%zu expected), %zu spans, every one closed and named as in the "
	      "file, with the process and thread names", label, np, ntracks, spans);
	if (!ok)
		printf("# speedscope: %.600s\n", s ? s : "(no output)");
	json_object_put(o);
	free(s);
}

/*
 * --folded at @path through speedscope's own importer of collapsed stacks
 * (tools/testing/speedscope/import-trace.mjs --folded): no warning, and
 * its profile has the file's total count and frames.
 */
static void test_speedscope_folded(const char *label, const char *path)
{
	static bool checked_bad;
	char *s;
	struct json_object *o, *v;
	const char *keys[][2] = { { "weight", "file_weight" }, { "frames", "file_frames" } };
	bool ok;
	int st = speedscope_import(label, "--folded", path, &s, &o);

	if (st < 0)
		return;
	ok = st == 0 && o && json_object_object_get_ex(o, "nwarnings", &v) &&
	     !json_object_get_int(v);
	for (size_t i = 0; ok && i < 2; i++) {
		struct json_object *a, *b;

		ok = json_object_object_get_ex(o, keys[i][0], &a) &&
		     json_object_object_get_ex(o, keys[i][1], &b) && json_object_get_int64(a) > 0 &&
		     json_object_get_int64(a) == json_object_get_int64(b);
	}
	CHECK(ok, "%s: speedscope's own importer takes the folded stacks without a warning, with "
	      "the file's total count and frames", label);
	if (!ok)
		printf("# speedscope: %.600s\n", s ? s : "(no output)");
	json_object_put(o);
	free(s);
	if (!checked_bad) {
		char out[PATH_MAX + 16];

		/* the check must be able to fail: a line without its count is refused */
		checked_bad = true;
		snprintf(out, sizeof(out), "%s.bad", path);
		st = sh("printf 'a;b 3\\na;c\\n' >%s && node %s/tools/testing/speedscope/"
			"import-trace.mjs --folded %s >/dev/null 2>&1", out, IPT_SRCDIR, out);
		CHECK(st == 1, "the folded speedscope check refuses a line without a count (%d)",
		      st);
	}
}

/* The "otherData" and "metadata" of trace-event JSON @o say what "ts" is: @unit. */
static bool perfetto_unit(struct json_object *o, const char *unit)
{
	const char *keys[] = { "otherData", "metadata" };
	struct json_object *m, *u;
	size_t i;

	for (i = 0; i < 2; i++)
		if (!json_object_object_get_ex(o, keys[i], &m) ||
		    !json_object_object_get_ex(m, "ts_unit", &u) ||
		    strcmp(json_object_get_string(u), unit))
			return false;
	return true;
}

static void test_perfetto(struct run *r, const char *path)
{
	struct json_object *o = json_object_from_file(path), *evs = NULL;
	size_t i, n, calls = 0, begins = 0, noname = 0;
	int64_t last_ts = -1;
	unsigned int open = 0;
	bool nested = true, order = true, named = true, ends = true, pids = true, pname = false;
	struct json_object *stack[4096];

	for (i = 0; i < r->n; i++)
		calls += r->kind[i] == 1 && i + 1 < r->n;
	CHECK(o && json_object_object_get_ex(o, "traceEvents", &evs) &&
	      json_object_is_type(evs, json_type_array),
	      "%s: --perfetto writes JSON that json-c parses, with a traceEvents array", r->name);
	if (!evs) {
		json_object_put(o);
		return;
	}
	n = json_object_array_length(evs);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(evs, i), *ph, *ts, *nm;
		const char *k;

		if (!json_object_object_get_ex(e, "ph", &ph))
			continue;
		k = json_object_get_string(ph);
		if (!strcmp(k, "M")) {
			if (json_object_object_get_ex(e, "name", &nm) &&
			    !strcmp(json_object_get_string(nm), "process_name"))
				pname = true;
			continue;
		}
		json_object_object_get_ex(e, "ts", &ts);
		if (json_object_get_int64(ts) < last_ts)
			order = false;
		last_ts = json_object_get_int64(ts);
		if (!json_object_object_get_ex(e, "pid", &nm) || json_object_get_int64(nm) == 1)
			pids = false;	/* ptgen: no process id known, never a made-up 1 */
		if (!strcmp(k, "B")) {
			struct json_object *args, *addr;

			if (open < 4096)
				stack[open] = e;
			open++;
			begins++;
			if (!json_object_object_get_ex(e, "name", &nm) || !*json_object_get_string(nm))
				named = false;
			/* no symbol: "dso+0xOFFSET" or "0xADDRESS", the address in args */
			if (json_object_object_get_ex(e, "args", &args)) {
				const char *nms = json_object_get_string(nm);

				noname++;
				if (!json_object_object_get_ex(args, "addr", &addr) ||
				    strncmp(json_object_get_string(addr), "0x", 2) ||
				    (!strstr(nms, "+0x") && strncmp(nms, "0x", 2)))
					named = false;
			}
		} else if (!strcmp(k, "E")) {
			if (!open) {
				nested = false;
			} else if (--open < 4096) {
				/* an "E" repeats its "B"'s name and args (speedscope matches by them) */
				struct json_object *b = stack[open], *bn, *en, *ba = NULL, *ea = NULL;

				if (!json_object_object_get_ex(e, "name", &en) ||
				    !json_object_object_get_ex(b, "name", &bn) ||
				    strcmp(json_object_get_string(en), json_object_get_string(bn)))
					ends = false;
				json_object_object_get_ex(e, "args", &ea);
				json_object_object_get_ex(b, "args", &ba);
				if (!ea != !ba || (ea && strcmp(json_object_to_json_string(ea),
								json_object_to_json_string(ba))))
					ends = false;
			}
		}
	}
	CHECK(nested && open == 0 && order && named && begins == calls,
	      "%s: Perfetto spans nest (every E closes an open B, all closed, time ordered, named; "
	      "%zu without a symbol named dso+offset with the address in args), one per call "
	      "(%zu B events, %zu calls)", r->name, noname, begins, calls);
	CHECK(ends && pids && pname && perfetto_unit(o, "instructions"),
	      "%s: Perfetto: every E has its B's name and args, a process_name, no made-up pid 1, and "
	      "otherData/metadata say ts is in instructions", r->name);
	json_object_put(o);
	test_speedscope(r->name, path, 1, NULL);
}

struct ival {
	uint64_t a, b;
};

static int cmp_ival(const void *x, const void *y)
{
	const struct ival *p = x, *q = y;

	return p->a < q->a ? -1 : p->a > q->a;
}

static size_t merge(struct ival *v, size_t n)
{
	size_t w = 0, i;

	qsort(v, n, sizeof(*v), cmp_ival);
	for (i = 0; i < n; i++) {
		if (w && v[i].a <= v[w - 1].b) {
			if (v[i].b > v[w - 1].b)
				v[w - 1].b = v[i].b;
		} else {
			v[w++] = v[i];
		}
	}
	return w;
}

static struct ival *expected_cover(struct run *r, size_t *n)
{
	struct ival *v = malloc(r->n * sizeof(*v));
	size_t i;

	for (i = 0; i < r->n; i++) {
		v[i].a = r->ips[i];
		v[i].b = r->ips[i] + r->len[i];
	}
	*n = merge(v, r->n);
	return v;
}

/*
 * drcov, read by the rules of DynamoRIO's own reader, drcov2lcov (DynamoRIO
 * 05e3165, clients/drcov/postprocess/drcov2lcov.cpp: read_file_header()
 * lines 880-921, read_module_list() 776-852 through drcovlib's
 * drmodtrack_offline_read() in ext/drcovlib/modules.c lines 689-760,
 * read_drcov_file() 970-1008, read_bb_list() 855-878,
 * module_table_bb_add() 671-685, module_table_create() 736-740):
 * - "DRCOV VERSION: %u" must be 3, DRCOV_VERSION (2 only with a warning
 *   that segments after the first are lost); "DRCOV FLAVOR: %s" must equal
 *   "drcov-64" on Linux x86-64 (strcmp, else "Fatal file mismatch");
 * - "Module Table: version %u, count %u" with version <= 5, then a
 *   Columns line, skipped; per entry "%u, %u, 0x%x, 0x%x, 0x%x, " (id,
 *   containing_id, start, end, entry; id must be the entry's index), then
 *   for version 4 and up the offset ("%x, "), for 5 the preferred base
 *   ("0x%x, "), then the path after blanks; a segment's containing entry
 *   comes first (containing_index <= i);
 * - "BB Table: %u bbs", then that many 8-byte entries (u32 start, u16
 *   size, u16 module id); an entry of an unknown id (>= count) is dropped,
 *   one with start + size >= its segment's size refused; its address is
 *   its segment's start + start; module_table_create() asserts that a
 *   segment's size is page-aligned.
 * Here too: nothing outside those rules, no entry twice (the issue's
 * --drcov --blocks bug; a reader gains nothing from repeats), the program's own ELF with one entry per
 * PT_LOAD segment (page-aligned start/end, p_offset), and the blocks
 * covering exactly the executed bytes.
 */
static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

struct drc_mod {
	unsigned int id, cont;
	unsigned long long start, end, entry, off, pref;
	char path[PATH_MAX];
};

static void test_drcov(struct run *r, const char *path, bool raw)
{
	size_t len, nexp, n = 0, i, nmods = 0, nbb = 0, dups = 0, bad = 0;
	char *s = slurp(path, &len), *p = s, *nl;
	struct ival *exp = expected_cover(r, &nexp), *got = NULL;
	struct drc_mod *mods = NULL;
	unsigned int ver = 0, tver = 0, cnt = 0;
	char flavor[64] = "";
	bool hdr = true, ok = true, elf_ok = false;

#define NEXT_LINE() do { nl = p ? strchr(p, '\n') : NULL; p = nl ? nl + 1 : NULL; } while (0)
	if (!p || sscanf(p, "DRCOV VERSION: %u\n", &ver) != 1 || ver != 3)
		hdr = false;
	NEXT_LINE();
	if (!p || sscanf(p, "DRCOV FLAVOR: %63[^\n\r]\n", flavor) != 1 || strcmp(flavor, "drcov-64"))
		hdr = false;
	NEXT_LINE();
	if (!p || sscanf(p, "Module Table: version %u, count %u\n", &tver, &cnt) != 2 || tver != 5)
		hdr = false;
	NEXT_LINE();
	if (!p || strncmp(p, "Columns: id, containing_id, start, end, entry, offset, preferred_base, "
			  "path\n", 72))
		hdr = false;
	NEXT_LINE();
	mods = calloc(cnt + 1, sizeof(*mods));
	for (i = 0; hdr && p && i < cnt; i++) {
		struct drc_mod *m = &mods[i];
		int used = 0;

		if (sscanf(p, "%u, %u, 0x%llx, 0x%llx, 0x%llx, %llx, 0x%llx, %n", &m->id, &m->cont,
			   &m->start, &m->end, &m->entry, &m->off, &m->pref, &used) != 7 || !used ||
		    m->id != i || m->cont > i || m->end <= m->start ||
		    (m->start | m->end) & 0xfff ||	/* drcov2lcov asserts page-aligned sizes */
		    sscanf(p + used, " %4095[^\n\r]", m->path) != 1 ||
		    (m->cont != i && strcmp(mods[m->cont].path, m->path)))
			hdr = false;
		NEXT_LINE();
		nmods++;
	}
	if (!p || sscanf(p, "BB Table: %zu bbs\n", &nbb) != 1)
		hdr = false;
	NEXT_LINE();
#undef NEXT_LINE
	CHECK(hdr && p && (size_t)(s + len - p) == nbb * 8,
	      "%s: --drcov as drcov2lcov reads it: DRCOV VERSION 3, FLAVOR drcov-64, module table "
	      "version 5 with Linux columns (%zu entries), %zu 8-byte bb entries to the end",
	      r->name, nmods, nbb);
	/* the program's ELF: one entry per PT_LOAD, in address order */
	{
		int fd = open(r->elf, O_RDONLY);
		Elf *e;
		size_t np = 0, k, j = 0;

		elf_version(EV_CURRENT);
		e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
		for (i = 0; hdr && e && i < nmods; i++) {
			if (mods[i].cont != i || strcmp(mods[i].path, r->elf))
				continue;
			elf_ok = !elf_getphdrnum(e, &np);
			for (k = 0, j = i; elf_ok && k < np; k++) {
				GElf_Phdr ph;
				uint64_t vs, ve;

				if (!gelf_getphdr(e, (int)k, &ph) || ph.p_type != PT_LOAD)
					continue;
				vs = ph.p_vaddr & ~0xfffULL;
				ve = (ph.p_vaddr + ph.p_memsz + 0xfff) & ~0xfffULL;
				if (j >= nmods || mods[j].cont != i || mods[j].off != ph.p_offset ||
				    mods[j].end - mods[j].start != ve - vs ||
				    mods[j].start - mods[i].start != vs - (mods[i].pref & ~0xfffULL) ||
				    mods[j].pref != vs)
					elf_ok = false;
				j++;
			}
			if (j < nmods && mods[j].cont == i && j != i)
				elf_ok = false;	/* more entries than segments */
			break;
		}
		if (e)
			elf_end(e);
		if (fd >= 0)
			close(fd);
	}
	if (raw)	/* --raw images: no ELF, one page-aligned entry per image */
		CHECK(hdr && nmods == r->nimg, "%s: --raw images: drcov has an entry per image (%zu of "
		      "%zu)", r->name, nmods, r->nimg);
	else
		CHECK(elf_ok, "%s: drcov lists %s once, an entry per PT_LOAD segment (start/end "
		      "page-aligned, offset, preferred base)", r->name, r->elf);
	if (hdr && p && (size_t)(s + len - p) == nbb * 8) {
		got = malloc((nbb + 1) * sizeof(*got));
		for (i = 0; i < nbb; i++) {
			const uint8_t *e = (const uint8_t *)p + 8 * i;
			uint32_t start = (uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 |
					 (uint32_t)e[3] << 24;
			uint16_t size = (uint16_t)(e[4] | e[5] << 8), mod = (uint16_t)(e[6] | e[7] << 8);

			/* drcov2lcov: "table->size <= entry->start + entry->size" is refused */
			if (mod >= nmods || (uint64_t)start + size >= mods[mod].end - mods[mod].start ||
			    !size) {
				bad++;
				continue;
			}
			got[n].a = mods[mod].start + start;
			got[n++].b = mods[mod].start + start + size;
		}
		{
			/* an entry twice: the same 8 bytes */
			uint64_t *keys = malloc((nbb + 1) * sizeof(*keys));

			for (i = 0; i < nbb; i++)
				memcpy(&keys[i], p + 8 * i, 8);
			qsort(keys, nbb, sizeof(*keys), cmp_u64);
			for (i = 0; i + 1 < nbb; i++)
				dups += keys[i] == keys[i + 1];
			free(keys);
		}
		n = merge(got, n);
		if (n != nexp || bad)
			ok = false;
		for (i = 0; ok && i < n; i++)
			if (got[i].a != exp[i].a || got[i].b != exp[i].b)
				ok = false;
	} else {
		ok = false;
	}
	CHECK(ok && !dups, "%s: drcov blocks cover exactly the bytes of the executed instructions "
	      "(%zu ranges expected, %zu found; %zu outside their segment; %zu duplicate entries)",
	      r->name, nexp, n, bad, dups);
	free(mods);
	free(got);
	free(exp);
	free(s);
}

static int cmp_edge(const void *x, const void *y)
{
	const uint64_t *a = x, *b = y;

	for (int i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static void test_blocks(struct run *r, const char *path)
{
	uint64_t (*exp)[3] = calloc(r->n + 1, sizeof(*exp)), (*got)[3] = calloc(r->n + 1, sizeof(*got));
	size_t ne = 0, ng = 0, i, len, nb = 0, nexp_cov, bad_start = 0;
	struct ival *blocks = calloc(r->n + 1, sizeof(*blocks)), *cov = expected_cover(r, &nexp_cov);
	char *s = slurp(path, &len), *p, *save = NULL;
	bool ok = true;

	for (i = 0; i + 1 < r->n; i++)
		if (r->ips[i + 1] != r->ips[i] + r->len[i]) {
			exp[ne][0] = r->ips[i];
			exp[ne][1] = r->ips[i + 1];
			exp[ne++][2] = 1;
		}
	qsort(exp, ne, sizeof(*exp), cmp_edge);
	{	/* count duplicates */
		size_t w = 0;

		for (i = 0; i < ne; i++) {
			if (w && exp[w - 1][0] == exp[i][0] && exp[w - 1][1] == exp[i][1])
				exp[w - 1][2]++;
			else
				memcpy(exp[w++], exp[i], sizeof(exp[i]));
		}
		ne = w;
	}
	for (p = s ? strtok_r(s, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
		unsigned long long a, b, c;

		if (sscanf(p, "edge %llx %llx %llu", &a, &b, &c) == 3 && ng < r->n) {
			got[ng][0] = a;
			got[ng][1] = b;
			got[ng++][2] = c;
		} else if (sscanf(p, "block %llx %llx %llu", &a, &b, &c) == 3 && nb < r->n) {
			blocks[nb].a = a;
			blocks[nb++].b = b;
		}
	}
	qsort(got, ng, sizeof(*got), cmp_edge);
	ok = ng == ne;
	for (i = 0; ok && i < ne; i++)
		if (cmp_edge(exp[i], got[i]))
			ok = false;
	CHECK(ok, "%s: --blocks lists exactly the %zu taken edges of the ground truth, with counts "
	      "(got %zu)", r->name, ne, ng);
	/* every block starts at an executed instruction; together they cover the same bytes */
	for (i = 0; i < nb; i++) {
		size_t k;
		bool found = false;

		for (k = 0; k < nexp_cov && !found; k++)
			found = blocks[i].a >= cov[k].a && blocks[i].a < cov[k].b;
		if (!found)
			bad_start++;
	}
	nb = merge(blocks, nb);
	ok = nb == nexp_cov && !bad_start;
	for (i = 0; ok && i < nb; i++)
		if (blocks[i].a != cov[i].a || blocks[i].b != cov[i].b)
			ok = false;
	CHECK(ok, "%s: --blocks covers exactly the executed bytes (%zu ranges)", r->name, nexp_cov);
	free(exp);
	free(got);
	free(blocks);
	free(cov);
	free(s);
}

static uint64_t info_val(struct run *r, const char *key)
{
	char path[PATH_MAX + 32], k[64];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "%s/info.txt", r->dir);
	f = fopen(path, "r");
	while (f && fscanf(f, "%63s %llu%*[^\n]", k, &v) == 2)
		if (!strcmp(k, key)) {
			fclose(f);
			return v;
		}
	if (f)
		fclose(f);
	return UINT64_MAX;
}

static void test_packets(struct run *r, const char *path)
{
	size_t len;
	char *s = slurp(path, &len), *p, *save = NULL;
	uint64_t psb = 0, bits = 0;

	for (p = s ? strtok_r(s, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
		char name[32], payload[128] = "";

		if (sscanf(p, "%*x %31s %127s", name, payload) < 1)
			continue;
		if (!strcmp(name, "psb"))
			psb++;
		else if (!strncmp(name, "tnt", 3))
			bits += strlen(payload);
	}
	CHECK(psb == info_val(r, "psb") && bits == info_val(r, "tnt_bits"),
	      "%s: --packets shows ptgen's %" PRIu64 " PSBs and %" PRIu64 " TNT bits (got %" PRIu64
	      ", %" PRIu64 ")", r->name, info_val(r, "psb"), info_val(r, "tnt_bits"), psb, bits);
	free(s);
}

static char *F(const struct run *r, const char *what);

/*
 * --lines against binutils' addr2line (an independent DWARF reader): the
 * file:line of every distinct executed address in the program's own
 * functions (main and what it calls; libc has no DWARF here).
 */
static void test_lines(struct run *r)
{
	char cmd[8192], line[4096], *out = F(r, "lines"), *a2l = F(r, "a2l"), *addrs = F(r, "addrs");
	uint64_t *seen = calloc(r->n + 1, 8);
	size_t nseen = 0, i, k, bad = 0, compared = 0, len;
	char *dec, *p, *save = NULL;
	FILE *f;
	int st;

	/* addresses of the program's own code: in a function named in its source */
	f = fopen(addrs, "w");
	for (i = 0; f && i < r->n; i++) {
		const struct gsym *g = sym_of_cached(r, r->ips[i]);
		bool dup = false;

		if (!g || (strcmp(g->name, "main") && strcmp(g->name, "fib") && strcmp(g->name, "depth") &&
			   strcmp(g->name, "handler")))
			continue;
		for (k = 0; k < nseen && !dup; k++)
			dup = seen[k] == r->ips[i];
		if (dup || nseen >= 2000)
			continue;
		seen[nseen++] = r->ips[i];
		fprintf(f, "%#" PRIx64 "\n", r->ips[i]);
	}
	if (f)
		fclose(f);
	snprintf(cmd, sizeof(cmd), "addr2line -e %s <%s >%s", r->elf, addrs, a2l);
	st = sh("%s", cmd) || decode(out, F(r, "elines"), "decode %s --lines", r->dir);
	dec = slurp(out, &len);
	f = fopen(a2l, "r");
	for (k = 0; !st && f && dec && k < nseen && fgets(line, sizeof(line), f); k++) {
		char want[512], got[512] = "", *base, *sp;
		char key[32];

		line[strcspn(line, "\n")] = 0;
		if ((sp = strstr(line, " (discriminator")))
			*sp = 0;
		base = strrchr(line, '/');
		snprintf(want, sizeof(want), "%.500s", base ? base + 1 : line);
		if (strstr(want, "?"))
			continue;	/* addr2line knows no line either */
		snprintf(key, sizeof(key), "\n%016" PRIx64 " ", seen[k]);
		p = strstr(dec, key);
		if (p && sscanf(p + 1, "%*s %*s %511s", got) == 1 && strcmp(got, want)) {
			if (bad++ < 3)
				printf("# %#" PRIx64 ": addr2line says %s, decode --lines says %s\n", seen[k],
				       want, got);
		}
		compared += p != NULL;
	}
	if (f)
		fclose(f);
	(void)save;
	CHECK(!st && compared > 10 && !bad,
	      "%s: --lines gives addr2line's file:line for %zu executed addresses of the program "
	      "(%zu differ)", r->name, compared, bad);
	free(dec);
	free(seen);
}

/* ---- the tests per run ---------------------------------------------------------------- */

static char *F(const struct run *r, const char *what)
{
	static char bufs[32][1300];
	static int k;
	char *b = bufs[k++ & 31];

	snprintf(b, sizeof(bufs[0]), "%s/%s.%s", work, r->name, what);
	return b;
}

static bool insn_equal(struct run *r, const char *path, size_t *n, size_t *first)
{
	uint64_t *a = insn_addrs(path, n);
	size_t i;

	*first = SIZE_MAX;
	for (i = 0; i < *n && i < r->n; i++)
		if (a[i] != r->ips[i]) {
			*first = i;
			break;
		}
	free(a);
	return *n == r->n && *first == SIZE_MAX;
}

static void raw_args(struct run *r, char *buf, size_t len, int skip);

static void test_run(struct run *r, bool full)
{
	size_t n, first;
	int st;

	st = decode(F(r, "insn"), F(r, "err"), "-j decode %s --insn=%s -J 1", r->dir, F(r, "insn1"));
	CHECK(st == 0 && clean_stderr(F(r, "err")), "%s: decode -J 1 exits 0, sanitizers quiet", r->name);
	CHECK(insn_equal(r, F(r, "insn1"), &n, &first),
	      "%s: --insn addresses equal the ground truth (%zu of %zu, first difference %zd)",
	      r->name, n, r->n, first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first);
	CHECK(json_int(F(r, "insn"), "instructions") == (int64_t)r->n &&
	      json_int(F(r, "insn"), "errors") == 0,
	      "%s: -j summary: %zu instructions, 0 errors", r->name, r->n);
	/*
	 * The summary alone keeps no blocks, and its blocks run through
	 * calls and jumps: the overlap at each segment's end is trimmed by
	 * following them.
	 */
	for (int j = 1; j <= 3; j += 2) {
		st = decode(F(r, "cnt"), F(r, "errc"), "-j decode %s -J %d", r->dir, j);
		CHECK(st == 0 && clean_stderr(F(r, "errc")) &&
		      json_int(F(r, "cnt"), "instructions") == (int64_t)r->n &&
		      json_int(F(r, "cnt"), "errors") == 0,
		      "%s: the summary alone, -J %d: %zu instructions (%" PRId64 "), 0 errors",
		      r->name, j, r->n, json_int(F(r, "cnt"), "instructions"));
	}
	st = decode(F(r, "o2"), F(r, "err2"), "decode %s --insn-decoder --insn=%s -J 2", r->dir,
		    F(r, "insnid"));
	CHECK(st == 0 && insn_equal(r, F(r, "insnid"), &n, &first),
	      "%s: --insn-decoder: addresses equal the ground truth (%zu)", r->name, n);
	if (!full)
		return;
	/* the oracle must be able to fail: the same output against a ground truth with one IP changed */
	r->ips[r->n / 2] ^= 1;
	CHECK(!insn_equal(r, F(r, "insn1"), &n, &first) && first == r->n / 2,
	      "%s: the comparison rejects a ground truth with one IP changed (at %zd)", r->name,
	      first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first);
	r->ips[r->n / 2] ^= 1;
	/* every output, serially, in parallel, and unsplit */
	st = decode(F(r, "o"), F(r, "e1"),
		    "-j decode %s -J 1 --insn=%s --calls=%s --profile=%s --folded=%s --blocks=%s "
		    "--perfetto %s --drcov %s", r->dir, F(r, "s.insn"), F(r, "s.calls"),
		    F(r, "s.profile"), F(r, "s.folded"), F(r, "s.blocks"), F(r, "s.json"),
		    F(r, "s.drcov"));
	CHECK(st == 0 && clean_stderr(F(r, "e1")), "%s: all outputs at once, -J 1", r->name);
	CHECK(json_int(F(r, "o"), "instructions") == (int64_t)r->n,
	      "%s: summary agrees (%zu instructions)", r->name, r->n);
	st = decode(F(r, "o4"), F(r, "e4"),
		    "-j decode %s -J 4 --insn=%s --calls=%s --profile=%s --folded=%s --blocks=%s "
		    "--perfetto %s --drcov %s", r->dir, F(r, "p.insn"), F(r, "p.calls"),
		    F(r, "p.profile"), F(r, "p.folded"), F(r, "p.blocks"), F(r, "p.json"),
		    F(r, "p.drcov"));
	CHECK(st == 0 && same_files(F(r, "s.insn"), F(r, "p.insn")) &&
	      same_files(F(r, "s.calls"), F(r, "p.calls")) &&
	      same_files(F(r, "s.profile"), F(r, "p.profile")) &&
	      same_files(F(r, "s.folded"), F(r, "p.folded")) &&
	      same_files(F(r, "s.blocks"), F(r, "p.blocks")) &&
	      same_files(F(r, "s.json"), F(r, "p.json")) &&
	      same_files(F(r, "s.drcov"), F(r, "p.drcov")),
	      "%s: -J 4 gives byte-identical outputs to -J 1", r->name);
	st = decode(F(r, "o5"), F(r, "e5"),
		    "-j decode %s --no-split --insn=%s --calls=%s --profile=%s --folded=%s --blocks=%s",
		    r->dir, F(r, "n.insn"), F(r, "n.calls"), F(r, "n.profile"), F(r, "n.folded"),
		    F(r, "n.blocks"));
	CHECK(st == 0 && same_files(F(r, "s.insn"), F(r, "n.insn")) &&
	      same_files(F(r, "s.calls"), F(r, "n.calls")) &&
	      same_files(F(r, "s.profile"), F(r, "n.profile")) &&
	      same_files(F(r, "s.folded"), F(r, "n.folded")) &&
	      same_files(F(r, "s.blocks"), F(r, "n.blocks")),
	      "%s: one unsplit segment gives the same outputs as the split decode", r->name);
	st = decode(F(r, "o6"), F(r, "e6"), "decode %s --profile=%s --folded=%s", r->dir,
		    F(r, "f.profile"), F(r, "f.folded"));
	CHECK(st == 0 && same_files(F(r, "s.profile"), F(r, "f.profile")) &&
	      same_files(F(r, "s.folded"), F(r, "f.folded")),
	      "%s: --profile and --folded alone (block-at-a-time) equal the per-instruction walk",
	      r->name);
	/* --profile alone: counted by the workers, per segment */
	st = decode(F(r, "o7"), F(r, "e7"), "decode %s --profile=%s -J 1", r->dir, F(r, "p1.profile"));
	st |= decode(F(r, "o8"), F(r, "e8"), "decode %s --profile=%s -J 3", r->dir,
		     F(r, "p3.profile"));
	CHECK(st == 0 && clean_stderr(F(r, "e7")) && clean_stderr(F(r, "e8")) &&
	      same_files(F(r, "s.profile"), F(r, "p1.profile")) &&
	      same_files(F(r, "s.profile"), F(r, "p3.profile")),
	      "%s: --profile alone (counted in the workers), -J 1 and -J 3, equals the "
	      "per-instruction walk", r->name);
	test_calls(r, F(r, "s.calls"));
	{
		char label[96];

		snprintf(label, sizeof(label), "%s --folded", r->name);
		test_speedscope_folded(label, F(r, "s.folded"));
	}
	if (r->static_prog)
		test_lines(r);
	if (r->static_prog) {
		test_profile(r, F(r, "s.profile"));
		test_folded(r, F(r, "s.folded"));
	}
	test_perfetto(r, F(r, "s.json"));
	test_drcov(r, F(r, "s.drcov"), false);
	if (full) {
		char raws[8192];

		raw_args(r, raws, sizeof(raws), -1);
		st = decode(F(r, "rc"), F(r, "erc"), "decode --pt %s/trace.pt%s --drcov %s", r->dir, raws,
			    F(r, "r.drcov"));
		CHECK(st == 0 && clean_stderr(F(r, "erc")), "%s: --drcov from --raw images exits 0",
		      r->name);
		test_drcov(r, F(r, "r.drcov"), true);
	}
	test_blocks(r, F(r, "s.blocks"));
	st = decode(F(r, "pk"), F(r, "epk"), "decode %s --packets", r->dir);
	CHECK(st == 0, "%s: --packets exits 0", r->name);
	test_packets(r, F(r, "pk"));
}

/* ---- inputs other than a ptgen directory -------------------------------------------------- */

/* ptxed-style "--raw FILE:BASE ..." for @r's images. */
static void raw_args(struct run *r, char *buf, size_t len, int skip)
{
	struct image_line il;
	size_t o = 0;
	int k = 0;
	FILE *f;

	buf[0] = 0;
	f = images_open(r->dir);
	while (images_next(f, &il)) {
		if (k++ == skip)
			continue;
		o += (size_t)snprintf(buf + o, len - o, " --raw %s/%s:%#llx", r->dir, il.name,
				      il.start);
	}
	if (f)
		fclose(f);
}

/* @r's code images as decode-ref takes them: " START:END:FILE" each, into @buf. */
static void ref_images(struct run *r, char *buf, size_t len)
{
	struct image_line il;
	size_t at = 0;
	FILE *f;

	buf[0] = 0;
	f = images_open(r->dir);
	while (images_next(f, &il))
		at += (size_t)snprintf(buf + at, len - at, " %llx:%llx:%s/%s", il.start, il.end,
				       r->dir, il.name);
	if (f)
		fclose(f);
}

static void make_capture(struct run *r, const char *dir, const void *trace, size_t tlen)
{
	struct json_object *o = json_object_new_object(), *cpu = json_object_new_object();
	struct json_object *tr = json_object_new_array(), *t = json_object_new_object();
	char path[PATH_MAX + 32];

	(void)r;
	sh("rm -rf %s && mkdir -p %s", dir, dir);
	snprintf(path, sizeof(path), "%s/cpu0.pt", dir);
	spew(path, trace, tlen);
	json_object_object_add(o, "format", json_object_new_string("ipt-capture"));
	json_object_object_add(o, "format_version", json_object_new_int(1));
	json_object_object_add(o, "complete", json_object_new_boolean(1));
	json_object_object_add(o, "mode", json_object_new_string("cpu"));
	json_object_object_add(cpu, "vendor", json_object_new_string("GenuineIntel"));
	json_object_object_add(cpu, "family", json_object_new_int(6));
	json_object_object_add(cpu, "model", json_object_new_int(126));
	json_object_object_add(cpu, "stepping", json_object_new_int(5));
	json_object_object_add(cpu, "nom_freq", json_object_new_int(20));
	json_object_object_add(o, "cpu", cpu);
	json_object_object_add(t, "cpu", json_object_new_int(0));
	json_object_object_add(t, "file", json_object_new_string("cpu0.pt"));
	json_object_object_add(t, "size", json_object_new_int64((int64_t)tlen));
	json_object_array_add(tr, t);
	json_object_object_add(o, "traces", tr);
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	json_object_to_file(path, o);
	json_object_put(o);
}

/* The build-id of @path by binutils' readelf, or "" */
static void readelf_build_id(const char *path, char *id, size_t len)
{
	char cmd[PATH_MAX + 64], line[512];
	FILE *p;

	id[0] = 0;
	snprintf(cmd, sizeof(cmd), "readelf -n %s 2>/dev/null", path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p))
		if (strstr(line, "Build ID:") && sscanf(strstr(line, "Build ID:") + 9, "%127s", id) == 1)
			break;
	if (p)
		pclose(p);
	(void)len;
}

static void write_sideband(struct run *r, const char *cap, const char *bad_id_for)
{
	char path[PATH_MAX + 64], line[PATH_MAX + 128], id[128];
	uint64_t t = 1000;
	FILE *in, *out;

	snprintf(path, sizeof(path), "%s/sideband.jsonl", cap);
	out = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/maps.txt", r->dir);
	in = fopen(path, "r");
	if (!out || !in) {
		if (out)
			fclose(out);
		if (in)
			fclose(in);
		return;
	}
	fprintf(out, "{\"type\":\"header\",\"format\":\"ipt-sideband\",\"version\":1}\n");
	fprintf(out, "{\"type\":\"comm\",\"time\":null,\"cpu\":null,\"pid\":999,\"tid\":999,"
		"\"comm\":\"decoy\",\"exec\":false}\n");
	fprintf(out, "{\"type\":\"mmap\",\"time\":null,\"cpu\":null,\"pid\":999,\"tid\":999,"
		"\"start\":%" PRIu64 ",\"len\":65536,\"pgoff\":0,\"prot\":5,\"flags\":2,"
		"\"file\":\"/bin/true\",\"build_id\":null}\n", r->ips[0] & ~(uint64_t)0xfff);
	fprintf(out, "{\"type\":\"comm\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":4242,"
		"\"tid\":4242,\"comm\":\"calls\",\"exec\":true}\n", t++);
	while (fgets(line, sizeof(line), in)) {
		unsigned long long s, e, off;
		char perms[8], file[PATH_MAX], bid[160] = "null";

		if (line[0] == '#' ||
		    sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &s, &e, perms, &off, file) != 5 ||
		    perms[2] != 'x' || file[0] != '/')
			continue;
		if (bad_id_for && strstr(file, bad_id_for)) {
			snprintf(bid, sizeof(bid), "\"0123456789abcdef\"");
		} else if (!strcmp(file, r->elf)) {
			readelf_build_id(file, id, sizeof(id));
			if (id[0])
				snprintf(bid, sizeof(bid), "\"%s\"", id);
		}
		fprintf(out, "{\"type\":\"mmap\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":4242,"
			"\"tid\":4242,\"start\":%llu,\"len\":%llu,\"pgoff\":%llu,\"prot\":5,"
			"\"flags\":2,\"file\":\"%s\",\"build_id\":%s}\n", t++, s, e - s, off, file, bid);
	}
	fclose(in);
	fclose(out);
}

/*
 * A capture whose code comes from its sideband: the program's executable
 * mappings (from ptgen's maps.txt) as perf mmap records after an exec of
 * pid 4242 (the program's own with its real build-id), and a decoy process
 * 999 from the snapshot mapping other code at the same addresses.
 */
static void test_sideband(struct run *r)
{
	char cap[PATH_MAX], path[PATH_MAX + 64];
	size_t tlen, n = 0, first, nmaps = 0;
	char *trace;
	int st;

	snprintf(path, sizeof(path), "%s/trace.pt", r->dir);
	trace = slurp(path, &tlen);
	snprintf(cap, sizeof(cap), "%s/%s.sbcapture", work, r->name);
	make_capture(r, cap, trace, tlen);
	free(trace);
	/* meta.json: add "sideband" */
	{
		struct json_object *o, *sb = json_object_new_object();

		snprintf(path, sizeof(path), "%s/meta.json", cap);
		o = json_object_from_file(path);
		json_object_object_add(sb, "file", json_object_new_string("sideband.jsonl"));
		json_object_object_add(sb, "version", json_object_new_int(1));
		json_object_object_add(o, "sideband", sb);
		json_object_to_file(path, o);
		json_object_put(o);
	}
	write_sideband(r, cap, NULL);
	snprintf(path, sizeof(path), "%s/sideband.jsonl", cap);
	{
		size_t l;
		char *sbt = slurp(path, &l), *q = sbt;

		while (q && (q = strstr(q, "\"mmap\""))) {
			nmaps++;
			q++;
		}
		if (nmaps)
			nmaps--;	/* the decoy's */
		free(sbt);
	}
	st = decode(F(r, "sb"), F(r, "esb"), "-j decode %s --insn=%s --profile=%s", cap,
		    F(r, "sbi"), F(r, "sbp"));
	CHECK(st == 0 && clean_stderr(F(r, "esb")) && insn_equal(r, F(r, "sbi"), &n, &first) &&
	      file_contains(F(r, "sb"), "pid 4242 from the sideband"),
	      "%s: a capture with sideband.jsonl (%zu mmap records, a decoy process) decodes to the "
	      "ground truth with no --elf/--raw, code from the files the records name (%zu)", r->name,
	      nmaps, n);
	CHECK(file_contains(F(r, "sbp"), "libc.so.6") && file_contains(F(r, "sbp"), " main "),
	      "%s: sideband images have their files' symbols (libc.so.6, main)", r->name);
	st = decode(F(r, "sb2"), F(r, "esb2"), "-j decode %s --pid 999", cap);
	CHECK(st == 1 && clean_stderr(F(r, "esb2")) && json_int(F(r, "sb2"), "errors") >= 1,
	      "%s: --pid of a process whose code is not what ran: errors, exit 1, no crash", r->name);
	st = decode(F(r, "sb3"), F(r, "esb3"), "decode %s --pid 31337", cap);
	CHECK(st == 1 && clean_stderr(F(r, "esb3")) && file_contains(F(r, "esb3"), "pid 31337"),
	      "%s: --pid of an unknown process: no images, says so", r->name);
	write_sideband(r, cap, "libc.so");
	st = decode(F(r, "sb4"), F(r, "esb4"), "-j decode %s", cap);
	CHECK(st == 1 && clean_stderr(F(r, "esb4")) &&
	      file_contains(F(r, "sb4"), "1 with another build-id here") &&
	      json_int(F(r, "sb4"), "errors") >= 1,
	      "%s: a mapping whose file here has another build-id is not used, and the summary "
	      "says so (the program's own, with its real build-id, is)", r->name);
}

/*
 * A capture written by ipttool's own capture writer (capture.c:
 * capture_write_trace(), capture_write_meta()), as 'ipttool record' writes
 * it, for a simulated unit reporting CPU 6/126/5 with MTC on.
 */
static bool make_real_capture(const char *dir, const void *trace, size_t tlen)
{
	struct capture c;
	struct capture_trace tr;
	struct iptcap_seg seg = { 0, tlen };

	sh("rm -rf %s && mkdir -p %s", dir, dir);
	memset(&c, 0, sizeof(c));
	memset(&tr, 0, sizeof(tr));
	c.dir = dir;
	c.complete = true;
	c.caps.size = sizeof(c.caps);
	c.caps.abi_version = IPT_ABI_VERSION;
	c.caps.backend = IPT_BACKEND_SIM;
	strcpy(c.caps.vendor, "GenuineIntel");
	c.caps.family = 6;
	c.caps.model = 126;
	c.caps.stepping = 5;
	c.caps.nr_cpus = 1;
	c.caps.cpuid_15.eax = 2;
	c.caps.cpuid_15.ebx = 200;
	c.caps.nom_freq = 20;
	c.config.buffer_size = 1 << 20;
	c.config.trace_flags = IPT_TRACE_BRANCH | IPT_TRACE_USER | IPT_TRACE_MTC;
	c.config.mtc_freq = 3;
	c.traces = &tr;
	c.nr_traces = 1;
	tr.cpu = 0;
	tr.ts.buffer_size = tr.ts.bytes_valid = tlen;
	return !capture_write_trace(&c, &tr, trace, &seg, 1) && !capture_write_meta(&c);
}

/*
 * test_decode --peak-kb FILE PROG ARG..: run PROG (stderr to /dev/null) and
 * write its exit status and peak resident size in KiB to FILE.  A process's
 * ru_maxrss includes the memory it had before its exec (Linux's exec keeps
 * the larger), so PROG must be forked from a small process: this one, just
 * exec'd, not the test with its ground truths in memory.
 */
static int peak_kb_main(char **argv)
{
	struct rusage ru;
	FILE *f;
	pid_t pid = fork();
	int ws = 0;

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0)
			dup2(fd, 2);
		execv(argv[1], argv + 1);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &ws, 0) != pid || getrusage(RUSAGE_CHILDREN, &ru))
		return 1;
	f = fopen(argv[0], "w");
	if (!f)
		return 1;
	fprintf(f, "%d %ld\n", WIFEXITED(ws) ? WEXITSTATUS(ws) : 128, ru.ru_maxrss);
	return fclose(f) ? 1 : 0;
}

/*
 * --folded of a trace whose stacks grow with its length: @r's trace 64
 * times in a row (each copy starts with tracing off and ends with TIP.PGD;
 * the run's exit() never returns, so each copy's stacks nest under the one
 * before and a line's length grows with the copies: ~140 MB of folded
 * lines).  The lines must come out in strcmp order with every instruction
 * counted, and the decoder's peak memory may exceed the summary decode's
 * by less than half the output's size: making every line in memory (as
 * before commit "decode: --folded writes its lines from one walk of the
 * stack tree") costs more than the output itself.  Peak memory is what
 * the kernel reports for the process (wait4), not a time; measured on the
 * build without sanitizers (the other --folded tests run ipttool-san).
 */
static void test_folded_deep(struct run *r)
{
	char cmd[3 * PATH_MAX + 64], self[PATH_MAX], *line = NULL, *prev = NULL;
	size_t cap = 0, pcap = 0, lines = 0, sorted = 1;
	uint64_t bytes = 0, units = 0;
	long kb[2] = { -1, -1 };
	ssize_t n;
	int st[2] = { -1, -1 };

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	sh("rm -rf %s && cp -r %s %s && for i in $(seq 64); do cat %s/trace.pt; done >%s/trace.pt",
	   F(r, "deep"), r->dir, F(r, "deep"), r->dir, F(r, "deep"));
	for (int k = 0; k < 2; k++) {
		FILE *f;

		/* without sanitizers: ASan's quarantine and shadow are not the decoder's */
		snprintf(cmd, sizeof(cmd), "%s --peak-kb %s %s/userspace/ipttool decode %s%s", self,
			 F(r, "deep.kb"), build, F(r, "deep"), k ? "" : " --folded=/dev/stdout");
		f = popen(cmd, "r");
		if (!f)
			break;
		while ((n = getline(&line, &cap, f)) > 0) {
			char *sp = strrchr(line, ' ');

			if (k)
				continue;
			bytes += (uint64_t)n;
			lines++;
			units += sp ? strtoull(sp + 1, NULL, 10) : 0;
			if (sp)
				*sp = 0;
			if (prev && strcmp(prev, line) >= 0)
				sorted = 0;
			if ((size_t)n > pcap) {
				pcap = (size_t)n;
				prev = realloc(prev, pcap + 1);
			}
			if (prev)
				strcpy(prev, line);
		}
		pclose(f);
		f = fopen(F(r, "deep.kb"), "r");
		if (!f || fscanf(f, "%d %ld", &st[k], &kb[k]) != 2)
			st[k] = -1;
		if (f)
			fclose(f);
		unlink(F(r, "deep.kb"));
	}
	free(line);
	free(prev);
	CHECK(st[0] == 0 && st[1] == 0 && sorted && lines > 64 && units == 64 * r->n,
	      "%s x64 in a row: --folded gives %zu lines (%" PRIu64 " bytes) in strcmp order, "
	      "%" PRIu64 " instructions (%zu expected)", r->name, lines, bytes, units, 64 * r->n);
	CHECK(kb[0] > 0 && kb[1] > 0 && kb[0] - kb[1] < (long)(bytes / 2048),
	      "%s x64 in a row: --folded's peak memory exceeds the summary's by %ld KiB (%ld "
	      "against %ld), less than half its %" PRIu64 " KiB of output", r->name, kb[0] - kb[1],
	      kb[0], kb[1], bytes / 1024);
}

/*
 * --folded of raw images (no symbols) at @path: every frame is
 * "img-START-K.bin+0xOFF", one per instruction address (issue 17: no
 * "dso" lump), and the leaf counts per address are the ground truth's
 * executions of each address.
 */
static void test_folded_addrs(struct run *r, const char *path)
{
	size_t len, n = 0, cap = 1024, bad = 0, lumps = 0, i, k, diff = 0;
	char *txt = slurp(path, &len), *line, *sv = NULL;
	uint64_t *want = malloc(r->n * sizeof(*want)), (*got)[2] = malloc(cap * sizeof(*got));
	bool have;

	for (line = txt ? strtok_r(txt, "\n", &sv) : NULL; line; line = strtok_r(NULL, "\n", &sv)) {
		char *sp = strrchr(line, ' '), *fr, *sv2 = NULL;
		unsigned long long start, off, cnt;
		unsigned int idx;
		int used;

		if (!sp || sscanf(sp + 1, "%llu", &cnt) != 1) {
			bad++;
			continue;
		}
		*sp = 0;
		for (fr = strtok_r(line, ";", &sv2); fr; fr = strtok_r(NULL, ";", &sv2)) {
			used = 0;
			if (sscanf(fr, "img-%llx-%u.bin+%llx%n", &start, &idx, &off, &used) != 3 ||
			    fr[used]) {
				lumps++;
				continue;
			}
			if (sv2 && *sv2)
				continue;	/* not the leaf */
			if (n == cap)
				got = realloc(got, (cap *= 2) * sizeof(*got));
			got[n][0] = start + off;
			got[n++][1] = cnt;
		}
	}
	have = txt != NULL;
	free(txt);
	memcpy(want, r->ips, r->n * sizeof(*want));
	qsort(want, r->n, sizeof(*want), cmp_u64);
	qsort(got, n, sizeof(*got), cmp_u64);
	/* merge: per address, the folded leaf counts against the ground truth's */
	for (i = 0, k = 0; i < r->n || k < n;) {
		uint64_t a = i < r->n ? want[i] : UINT64_MAX, c1 = 0, c2 = 0;

		if (k < n && got[k][0] < a)
			a = got[k][0];
		while (i < r->n && want[i] == a) {
			c1++;
			i++;
		}
		while (k < n && got[k][0] == a)
			c2 += got[k++][1];
		diff += c1 != c2;
	}
	CHECK(have && n && !bad && !lumps && !diff,
	      "%s: --folded without symbols: a frame per instruction address (dso+0xOFF), the "
	      "leaf counts per address the ground truth's (%zu leaves, %zu bad lines, %zu other "
	      "frames, %zu addresses differ)", r->name, n, bad, lumps, diff);
	free(want);
	free(got);
}

/* The number of lines of @path. */
static size_t lines_of(const char *path)
{
	size_t len, n = 0;
	char *t = slurp(path, &len);

	for (size_t i = 0; t && i < len; i++)
		n += t[i] == '\n';
	free(t);
	return n;
}

/* The summary's "cpu" ("F/M/S", or "null") of the JSON summary @path. */
static void summary_cpu(const char *path, char *buf, size_t len)
{
	struct json_object *o = json_object_from_file(path), *v;

	snprintf(buf, len, "(no summary)");
	if (o && json_object_object_get_ex(o, "cpu", &v))
		snprintf(buf, len, "%s", v ? json_object_get_string(v) : "null");
	json_object_put(o);
}

/* This machine's CPU as /proc/cpuinfo gives it, "F/M/S"; "" if not Intel's. */
static void cpuinfo_cpu(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	int fam = -1, mod = -1, step = -1;
	bool intel = false;

	while (f && fgets(line, sizeof(line), f) && step < 0) {
		intel |= !strncmp(line, "vendor_id", 9) && strstr(line, "GenuineIntel");
		if (!strncmp(line, "cpu family", 10))
			sscanf(strchr(line, ':') + 1, "%d", &fam);
		else if (!strncmp(line, "model\t", 6))
			sscanf(strchr(line, ':') + 1, "%d", &mod);
		else if (!strncmp(line, "stepping", 8))
			sscanf(strchr(line, ':') + 1, "%d", &step);
	}
	if (f)
		fclose(f);
	buf[0] = 0;
	if (intel && fam >= 0 && mod >= 0 && step >= 0)
		snprintf(buf, len, "%d/%d/%d", fam, mod, step);
}

/*
 * ptxed's own syntax (issue 17): the ptxed-args file ptgen writes for a
 * run (--cpu F/M/S, with --tsc --nom-freq N --cpuid-0x15.eax N
 * --cpuid-0x15.ebx N --mtc-freq N, --pt FILE, --raw FILE:BASE) decodes
 * to the ground truth; ptxed's --raw FILE:FROM-TO:BASE and
 * FILE:FROM:BASE, --pt FILE:FROM[-TO], --cpu none and auto.
 */
static void test_ptxed(struct run *r)
{
	char path[PATH_MAX + 32], *args, raws[16384], cpu[64], host[64];
	size_t n = 0, first, len, o = 0;
	struct stat sb;
	FILE *f;
	int st;

	snprintf(path, sizeof(path), "%s/ptxed-args", r->dir);
	args = slurp(path, &len);
	if (!args) {
		CHECK(0, "%s: ptgen wrote no ptxed-args", r->name);
		return;
	}
	args[strcspn(args, "\n")] = 0;
	st = decode(F(r, "pxa"), F(r, "epxa"), "decode %s --insn", args);
	CHECK(st == 0 && clean_stderr(F(r, "epxa")) && insn_equal(r, F(r, "pxa"), &n, &first),
	      "%s: ptgen's ptxed-args (%.60s...) decode to the ground truth (exit %d, %zu "
	      "instructions)", r->name, args, st, n);
	snprintf(path, sizeof(path), "%s/timing", r->dir);
	f = fopen(path, "r");
	if (f) {
		/* ptxed has no crystal option: ours (.ecx) makes it the directory's time */
		unsigned long long ecx = 0;
		char line[128];

		while (fgets(line, sizeof(line), f))
			sscanf(line, "cpuid_0x15_ecx %llu", &ecx);
		fclose(f);
		st = decode(F(r, "pxt"), F(r, "epxt"), "decode %s --cpuid-0x15.ecx %llu --calls=%s",
			    args, ecx, F(r, "pxt.calls"));
		st |= decode(F(r, "pxd"), F(r, "epxd"), "decode %s --calls=%s", r->dir,
			     F(r, "pxd.calls"));
		/* the instruction number and time of each line (raw dumps have no symbols) */
		sh("awk '{ print $1, $2 }' %s >%s.t; awk '{ print $1, $2 }' %s >%s.t",
		   F(r, "pxt.calls"), F(r, "pxt.calls"), F(r, "pxd.calls"), F(r, "pxd.calls"));
		snprintf(path, sizeof(path), "%s.t", F(r, "pxd.calls"));
		CHECK(st == 0 && ecx && lines_of(path) > 100 &&
		      same_files(F(r, "pxt.calls.t"), path),
		      "%s: ptxed-args' --nom-freq/--cpuid-0x15.eax/.ebx/--mtc-freq (and .ecx %llu) "
		      "time --calls as the ptgen directory's timing file does", r->name, ecx);
	}
	free(args);

	/* --raw FILE:FROM-TO:BASE, and each image cut in two: FROM-TO, then FROM to the end */
	raws[0] = 0;
	for (size_t i = 0; i < r->nimg && o < sizeof(raws) - 2 * PATH_MAX; i++) {
		uint64_t sz = r->img[i].end - r->img[i].start, h = sz / 2;

		o += (size_t)snprintf(raws + o, sizeof(raws) - o,
				      " --raw %s/img-%" PRIx64 "-%zu.bin:0-%#" PRIx64 ":%#" PRIx64
				      " --raw %s/img-%" PRIx64 "-%zu.bin:%#" PRIx64 ":%#" PRIx64,
				      r->dir, r->img[i].start, i, h, r->img[i].start,
				      r->dir, r->img[i].start, i, h, r->img[i].start + h);
	}
	st = decode(F(r, "pxr"), F(r, "epxr"), "decode --cpu 6/126/5 --pt %s/trace.pt%s --insn",
		    r->dir, raws);
	CHECK(st == 0 && insn_equal(r, F(r, "pxr"), &n, &first),
	      "%s: --raw FILE:0-HALF:BASE and FILE:HALF:BASE+HALF (ptxed's ranges) decode to the "
	      "ground truth (exit %d, %zu instructions)", r->name, st, n);
	st = decode(F(r, "pxb"), F(r, "epxb"), "decode --pt %s/trace.pt --raw %s/img-%" PRIx64
		    "-0.bin:0x20-0x10:%#" PRIx64 " --insn", r->dir, r->dir, r->img[0].start,
		    r->img[0].start);
	CHECK(st == 2 && file_contains(F(r, "epxb"), "0x20-0x10 ends before it begins"),
	      "%s: --raw FILE:0x20-0x10:BASE is refused, exit 2 (%d)", r->name, st);

	/* --pt FILE:FROM-TO and FILE:FROM */
	raw_args(r, raws, sizeof(raws), -1);
	snprintf(path, sizeof(path), "%s/trace.pt", r->dir);
	if (stat(path, &sb))
		sb.st_size = 0;
	st = decode(F(r, "pxp"), F(r, "epxp"), "decode --pt %s/trace.pt:0-%lld%s --insn", r->dir,
		    (long long)sb.st_size, raws);
	st |= decode(F(r, "pxq"), F(r, "epxq"), "decode --pt %s/trace.pt:0%s --insn", r->dir, raws);
	CHECK(st == 0 && insn_equal(r, F(r, "pxp"), &n, &first) &&
	      insn_equal(r, F(r, "pxq"), &n, &first),
	      "%s: --pt FILE:0-SIZE and FILE:0 decode to the ground truth", r->name);
	st = decode(F(r, "pxh"), F(r, "epxh"), "-j decode --pt %s/trace.pt:0-%lld%s", r->dir,
		    (long long)sb.st_size / 2, raws);
	{
		struct json_object *j = json_object_from_file(F(r, "pxh")), *t = NULL, *v = NULL;
		int64_t bytes = -1;

		if (j && json_object_object_get_ex(j, "traces", &t) &&
		    json_object_object_get_ex(json_object_array_get_idx(t, 0), "bytes", &v))
			bytes = json_object_get_int64(v);
		json_object_put(j);
		CHECK(st != 2 && bytes == (int64_t)sb.st_size / 2,
		      "%s: --pt FILE:0-%lld decodes those %lld bytes only (%" PRId64 ")", r->name,
		      (long long)sb.st_size / 2, (long long)sb.st_size / 2, bytes);
	}

	/* --cpu: 0x numbers, none, auto */
	st = decode(F(r, "pxc"), F(r, "epxc"), "-j decode %s --cpu 0x6/0x7e/5", r->dir);
	summary_cpu(F(r, "pxc"), cpu, sizeof(cpu));
	CHECK(st == 0 && !strcmp(cpu, "6/126/5"), "%s: --cpu 0x6/0x7e/5 is 6/126/5 (%s)", r->name,
	      cpu);
	st = decode(F(r, "pxc"), F(r, "epxc"), "-j decode %s --cpu none", r->dir);
	summary_cpu(F(r, "pxc"), cpu, sizeof(cpu));
	CHECK(st == 0 && !strcmp(cpu, "null"), "%s: --cpu none: no CPU (%s)", r->name, cpu);
	st = decode(F(r, "pxc"), F(r, "epxc"), "-j decode %s --cpu auto", r->dir);
	summary_cpu(F(r, "pxc"), cpu, sizeof(cpu));
	CHECK(st == 0 && !strcmp(cpu, "6/126/5"),
	      "%s: --cpu auto on a directory: the CPU it records (%s)", r->name, cpu);
	cpuinfo_cpu(host, sizeof(host));
	st = decode(F(r, "pxc"), F(r, "epxc"), "-j decode --pt %s/trace.pt%s --cpu auto", r->dir,
		    raws);
	summary_cpu(F(r, "pxc"), cpu, sizeof(cpu));
	if (host[0])
		CHECK(st == 0 && !strcmp(cpu, host),
		      "%s: --cpu auto with --pt: this machine's CPU (%s, /proc/cpuinfo %s)", r->name,
		      cpu, host);
	else
		CHECK(st == 2 && file_contains(F(r, "pxc"), "not an Intel one"),
		      "%s: --cpu auto with --pt on a CPU not Intel's: exit 2 (%d)", r->name, st);
	st = decode(F(r, "pxc"), F(r, "epxc"), "decode %s --cpuid-0x15.eax 0x1x", r->dir);
	CHECK(st == 2 && file_contains(F(r, "epxc"), "--cpuid-0x15.eax 0x1x: want a 32-bit number"),
	      "%s: --cpuid-0x15.eax 0x1x is refused, exit 2 (%d)", r->name, st);
}

static void test_inputs(struct run *r)
{
	char raws[16384], cap[PATH_MAX + 32], path[PATH_MAX + 32];
	size_t n = 0, first, tlen;
	char *trace;
	int st;

	raw_args(r, raws, sizeof(raws), -1);
	st = decode(F(r, "x"), F(r, "ex"), "decode --pt %s/trace.pt --cpu 6/126/5%s --insn",
		    r->dir, raws);
	CHECK(st == 0 && insn_equal(r, F(r, "x"), &n, &first),
	      "%s: ptxed-style --pt/--raw/--cpu decodes to the ground truth (%zu)", r->name, n);
	/* raw images have no symbols: a --profile row per instruction address */
	st = decode(F(r, "xp1"), F(r, "exp1"), "decode --pt %s/trace.pt%s --profile=%s --folded=%s",
		    r->dir, raws, F(r, "xp1.p"), F(r, "xp1.f"));
	st |= decode(F(r, "xp2"), F(r, "exp2"), "decode --pt %s/trace.pt%s --profile=%s --folded=%s "
		     "--insn=/dev/null", r->dir, raws, F(r, "xp2.p"), F(r, "xp2.f"));
	st |= decode(F(r, "xp3"), F(r, "exp3"), "decode --pt %s/trace.pt%s --profile=%s -J 2",
		     r->dir, raws, F(r, "xp3.p"));
	CHECK(st == 0 && same_files(F(r, "xp1.p"), F(r, "xp2.p")) &&
	      same_files(F(r, "xp1.f"), F(r, "xp2.f")) && !file_contains(F(r, "xp1.p"), "[no symbol]") &&
	      same_files(F(r, "xp2.p"), F(r, "xp3.p")),
	      "%s: --raw images without symbols: block-at-a-time profile and folded, and --profile "
	      "alone, equal the walk", r->name);
	test_folded_addrs(r, F(r, "xp1.f"));
	if (r->static_prog) {
		st = decode(F(r, "xe"), F(r, "exe"), "decode --pt %s/trace.pt --elf %s --insn",
			    r->dir, r->elf);
		CHECK(st == 0 && insn_equal(r, F(r, "xe"), &n, &first),
		      "%s: --elf PROGRAM (static) decodes to the ground truth (%zu)", r->name, n);
	}
	snprintf(path, sizeof(path), "%s/trace.pt", r->dir);
	trace = slurp(path, &tlen);
	snprintf(cap, sizeof(cap), "%s/%s.capture", work, r->name);
	make_capture(r, cap, trace, tlen);
	st = decode(F(r, "c"), F(r, "ec"), "-j decode %s%s --insn=%s", cap, raws, F(r, "ci"));
	CHECK(st == 0 && insn_equal(r, F(r, "ci"), &n, &first),
	      "%s: a capture directory (cpu0.pt, meta.json) with --raw decodes to the ground truth",
	      r->name);
	CHECK(file_contains(F(r, "c"), "no sideband") && file_contains(F(r, "c"), "\"cpu\":\"6\\/126\\/5\""),
	      "%s: the capture's summary names its CPU from meta.json and says images came from "
	      "--elf/--raw", r->name);
	if (r->static_prog) {
		/*
		 * elf-images.txt (capture-format.rst): the capture carries its
		 * program, "elf/NAME BASE", and decodes with no argument.
		 */
		char ecap[PATH_MAX + 48];
		const char *slash = strrchr(r->elf, '/');

		snprintf(ecap, sizeof(ecap), "%s/%s.elfcap", work, r->name);
		make_capture(r, ecap, trace, tlen);
		sh("mkdir -p %s/elf && cp %s %s/elf/ && "
		   "readelf -lW %s | awk '$1 == \"LOAD\" { print \"elf/%s\", $3; exit }' "
		   ">%s/elf-images.txt", ecap, r->elf, ecap, r->elf, slash ? slash + 1 : r->elf, ecap);
		st = decode(F(r, "ei"), F(r, "eei"), "-j decode %s --insn=%s", ecap, F(r, "eii"));
		CHECK(st == 0 && insn_equal(r, F(r, "eii"), &n, &first),
		      "%s: a capture with its program in elf-images.txt decodes to the ground truth "
		      "with no argument (exit %d, %zu instructions)", r->name, st, n);
		sh("echo 'elf/nothing-here' >%s/elf-images.txt", ecap);
		st = decode(F(r, "ei"), F(r, "eei"), "decode %s", ecap);
		CHECK(st == 2 && file_contains(F(r, "eei"), "elf-images.txt: line 1: want \"PATH BASE\""),
		      "%s: a bad elf-images.txt line is refused with its number (exit %d)", r->name, st);
	}
	snprintf(cap, sizeof(cap), "%s/%s.real-capture", work, r->name);
	if (make_real_capture(cap, trace, tlen)) {
		st = decode(F(r, "rc"), F(r, "erc"), "-j decode %s%s --insn=%s", cap, raws, F(r, "rci"));
		CHECK(st == 0 && insn_equal(r, F(r, "rci"), &n, &first) &&
		      file_contains(F(r, "rc"), "\"cpu\":\"6\\/126\\/5\""),
		      "%s: a capture written by ipttool's capture writer (capture.c) decodes to the "
		      "ground truth, CPU from its meta.json", r->name);
	} else {
		CHECK(0, "%s: ipttool's capture writer failed in %s", r->name, cap);
	}
	free(trace);
}

/* ---- a streamed capture with a gap --------------------------------------------------------- */

/*
 * The ground truth cut at two PSBs into a streamed capture: the bytes
 * between them lost in a gap that meta.json records at the first cut.
 * The decode must equal libipt's serial decode (decode-ref) of the piece
 * before the gap, the gap item, then that of the piece after it, with
 * the split decode (-J 3) as with -J 1: no segment and no decoder crosses
 * the gap.  Without the gap record the same file decodes otherwise (the
 * oracle can fail).
 */
static void test_stream_gap(struct run *r)
{
	static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
	char raws[16384], imgs[16384], cap[PATH_MAX + 32], path[PATH_MAX + 64];
	char pa[PATH_MAX + 64], pb[PATH_MAX + 64], exp[PATH_MAX + 64];
	size_t tlen = 0, *offs = NULL, n = 0, p1, p2, o;
	struct json_object *m, *t, *gaps, *g;
	char keys[256];
	char *trace, *cut;
	int st, j;

	snprintf(path, sizeof(path), "%s/trace.pt", r->dir);
	trace = slurp(path, &tlen);
	for (o = 0; trace && o + sizeof(psb) <= tlen; o++)
		if (!memcmp(trace + o, psb, sizeof(psb))) {
			offs = realloc(offs, (n + 1) * sizeof(*offs));
			offs[n++] = o;
			o += sizeof(psb) - 1;
		}
	if (n < 6) {
		CHECK(0, "%s: stream gap: the trace has %zu PSBs, need 6", r->name, n);
		free(trace);
		free(offs);
		return;
	}
	p1 = offs[n / 3];
	p2 = offs[2 * n / 3];
	snprintf(pa, sizeof(pa), "%s/%s.piece-a.pt", work, r->name);
	snprintf(pb, sizeof(pb), "%s/%s.piece-b.pt", work, r->name);
	spew(pa, trace, p1);
	spew(pb, trace + p2, tlen - p2);
	cut = malloc(p1 + tlen - p2);
	memcpy(cut, trace, p1);
	memcpy(cut + p1, trace + p2, tlen - p2);
	snprintf(cap, sizeof(cap), "%s/%s.stream-capture", work, r->name);
	make_capture(r, cap, cut, p1 + tlen - p2);

	/* the expectation: serial libipt on each piece, the gap between */
	ref_images(r, imgs, sizeof(imgs));
	snprintf(exp, sizeof(exp), "%s/%s.stream.expected", work, r->name);
	st = sh("%s/userspace/decode-ref %s 6/126/5%s | grep -v '^# ' >%s && "
		"echo '[gap: %zu bytes lost, tsc 0x64..0xc8, at offset %#zx]' >>%s && "
		"%s/userspace/decode-ref %s 6/126/5%s | grep -v '^# ' >>%s",
		build, pa, imgs, exp, p2 - p1, p1, exp, build, pb, imgs, exp);
	CHECK(st == 0, "%s: stream gap: the reference decodes of the two pieces", r->name);

	/* without the gap record first: the oracle must see a difference */
	raw_args(r, raws, sizeof(raws), -1);
	st = decode(F(r, "sg0"), F(r, "esg0"), "decode %s%s --insn=%s -J 1", cap, raws,
		    F(r, "sg0.insn"));
	CHECK(sh("sed -E 's/^([0-9a-f]{16})  .*/\\1/' %s | cmp -s - %s", F(r, "sg0.insn"), exp) != 0,
	      "%s: stream gap: without its record in meta.json the decode differs from the "
	      "expectation", r->name);

	snprintf(path, sizeof(path), "%s/meta.json", cap);
	m = json_object_from_file(path);
	json_object_object_get_ex(m, "traces", &t);
	t = json_object_array_get_idx(t, 0);
	gaps = json_object_new_array();
	g = json_object_new_object();
	json_object_object_add(g, "offset", json_object_new_int64((int64_t)p1));
	json_object_object_add(g, "tsc_start", json_object_new_int64(100));
	json_object_object_add(g, "tsc_end", json_object_new_int64(200));
	json_object_object_add(g, "bytes_lost", json_object_new_int64((int64_t)(p2 - p1)));
	json_object_object_add(g, "cpu", json_object_new_int64(0));
	json_object_array_add(gaps, g);
	json_object_object_add(t, "gaps", gaps);
	json_object_object_add(t, "gaps_unlisted", json_object_new_int64(0));
	json_object_to_file(path, m);
	json_object_put(m);

	for (j = 1; j <= 3; j += 2) {
		char out[32], err[32], ins[32];

		snprintf(out, sizeof(out), "sg%d", j);
		snprintf(err, sizeof(err), "esg%d", j);
		snprintf(ins, sizeof(ins), "sg%d.insn", j);
		st = decode(F(r, out), F(r, err), "-j decode %s%s --insn=%s -J %d", cap, raws,
			    F(r, ins), j);
		CHECK(st == 3 && clean_stderr(F(r, err)) && file_contains(F(r, err), "1 stream gap"),
		      "%s: stream gap, -J %d: exit 3 (data is missing), says so (%d)", r->name, j, st);
		CHECK(sh("sed -E 's/^([0-9a-f]{16})  .*/\\1/' %s | cmp -s - %s", F(r, ins), exp) == 0,
		      "%s: stream gap, -J %d: the decode is libipt's serial decode of each piece, "
		      "with the gap item at its place", r->name, j);
		CHECK(json_int(F(r, out), "stream_gaps") == 1 && json_int(F(r, out), "errors") == 0 &&
		      file_contains(F(r, out), "\"reason\":\"stream_gap\"") &&
		      file_contains(F(r, out), "\"tsc_end\":\"0xc8\""),
		      "%s: stream gap, -J %d: the summary counts 1 stream gap, 0 errors, and lists "
		      "it with its TSCs", r->name, j);
		sgap_keys(F(r, out), keys, sizeof(keys));
		CHECK(!strcmp(keys, "bytes_lost,bytes_skipped,offset,reason,tsc,tsc_end"),
		      "%s: stream gap, -J %d: its summary entry has its TSCs and bytes lost, no "
		      "\"ip\" (%s)", r->name, j, keys);
	}

	/* two more counted, not itemised: the warning says how many */
	m = json_object_from_file(path);
	json_object_object_get_ex(m, "traces", &t);
	t = json_object_array_get_idx(t, 0);
	json_object_object_add(t, "gaps_unlisted", json_object_new_int64(2));
	json_object_to_file(path, m);
	json_object_put(m);
	st = decode(F(r, "sgu"), F(r, "esgu"), "decode %s%s -J 1", cap, raws);
	CHECK(st == 3 && file_contains(F(r, "esgu"), "3 stream gap(s), 2 not itemised (no place"),
	      "%s: stream gap: gaps counted but not itemised: exit 3, the warning says how many "
	      "(%d)", r->name, st);
	free(trace);
	free(cut);
	free(offs);
}

/*
 * Names are bytes (a file name, a symbol, a thread's comm), JSON is
 * UTF-8: the code images under names with a byte that is not UTF-8
 * (0xff) and with well-formed UTF-8 ("é", 0xc3 0xa9).  --jsonl and
 * --perfetto must stay valid JSON: the 0xff becomes U+FFFD, the "é"
 * stays as it is.
 */
/* @s (@n bytes) as one strict JSON value whose strings are valid UTF-8, or NULL. */
static struct json_object *json_utf8(const char *s, size_t n)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;

	if (!tok)
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, s, (int)n);
	if (o && (json_tokener_get_error(tok) != json_tokener_success ||
		  json_tokener_get_parse_end(tok) < n)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

static void test_json_names(struct run *r)
{
	static const char *const pfx[2] = { "n\xff" "x-", "n\xc3\xa9-" };
	static const char *const want[2] = { "n\xef\xbf\xbd" "x-", "n\xc3\xa9-" };
	char raws[16384], cap[PATH_MAX + 32], path[PATH_MAX + 64], line[PATH_MAX + 64];
	size_t tlen = 0;
	char *trace;
	int v;

	snprintf(path, sizeof(path), "%s/trace.pt", r->dir);
	trace = slurp(path, &tlen);
	snprintf(cap, sizeof(cap), "%s/%s.names-capture", work, r->name);
	if (!trace) {
		CHECK(0, "%s: json names: no trace.pt", r->name);
		return;
	}
	make_capture(r, cap, trace, tlen);
	free(trace);
	for (v = 0; v < 2; v++) {
		size_t o = 0, lines = 0, bad = 0, named = 0;
		struct json_object *pf;
		FILE *f;
		int st;

		raws[0] = 0;
		snprintf(path, sizeof(path), "%s/images.txt", r->dir);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f)) {
			unsigned long long a, e;
			char name[256];

			if (sscanf(line, "%llx %llx %255s", &a, &e, name) != 3)
				continue;
			sh("cp %s/%s '%s/%s%s'", r->dir, name, work, pfx[v], name);
			o += (size_t)snprintf(raws + o, sizeof(raws) - o, " --raw '%s/%s%s:%#llx'",
					      work, pfx[v], name, a);
		}
		if (f)
			fclose(f);
		st = decode(F(r, "jn"), F(r, "ejn"), "decode %s%s --insn=%s --jsonl --perfetto=%s -J 1",
			    cap, raws, F(r, "jn.jsonl"), F(r, "jn.pf"));
		f = fopen(F(r, "jn.jsonl"), "r");
		while (f && fgets(line, sizeof(line), f)) {
			struct json_object *l = json_utf8(line, strcspn(line, "\n")), *d;

			lines++;
			if (!l)
				bad++;
			else if (json_object_object_get_ex(l, "dso", &d) &&
				 json_object_is_type(d, json_type_string) &&
				 !strncmp(json_object_get_string(d), want[v], strlen(want[v])))
				named++;
			json_object_put(l);
		}
		if (f)
			fclose(f);
		trace = slurp(F(r, "jn.pf"), &tlen);
		pf = trace ? json_utf8(trace, strlen(trace)) : NULL;
		free(trace);
		CHECK(st == 0 && clean_stderr(F(r, "ejn")) && lines && !bad && named,
		      "%s: json names, a name with %s: every --jsonl line is valid JSON, its strings "
		      "valid UTF-8 (%zu of %zu bad), the name reads \"%s...\" (%zu lines)", r->name,
		      v ? "\"\\xc3\\xa9\" (UTF-8, kept)" : "0xff (becomes U+FFFD)", bad, lines,
		      v ? "n\\u00e9-" : "n\\ufffdx-", named);
		CHECK(pf != NULL, "%s: json names, a name with %s: the --perfetto file is valid "
		      "JSON, its strings valid UTF-8",
		      r->name, v ? "UTF-8" : "0xff");
		json_object_put(pf);
	}
}

/*
 * A streamed capture's gap records that cannot be right are refused with
 * one line naming the field (exit 2): two gaps at one offset, a tsc_end
 * before its tsc_start, an offset past the end of the file.  And
 * --jsonl or -F without --insn or --calls is a usage error (exit 2).
 */
static void test_meta_gaps(struct run *r)
{
	static const struct {
		const char *what, *field;
		int64_t off[2], t0[2], t1[2];
		int n;
	} bad[] = {
		{ "two gaps at one offset", "gaps[1].offset", { 64, 64 }, { 1, 5 }, { 2, 6 }, 2 },
		{ "a tsc_end before its tsc_start", "gaps[0].tsc_end", { 64 }, { 200 }, { 100 }, 1 },
		{ "an offset past the end of the file", "gaps[0].offset", { 1 << 30 }, { 1 }, { 2 }, 1 },
	};
	char cap[PATH_MAX + 32], path[PATH_MAX + 64];
	size_t tlen = 0, k;
	char *trace;
	int st, i;

	snprintf(path, sizeof(path), "%s/trace.pt", r->dir);
	trace = slurp(path, &tlen);
	snprintf(cap, sizeof(cap), "%s/%s.gaps-capture", work, r->name);
	if (!trace) {
		CHECK(0, "%s: meta gaps: no trace.pt", r->name);
		return;
	}
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct json_object *m, *t = NULL, *gaps = json_object_new_array();
		char *e;
		bool one_line;

		make_capture(r, cap, trace, tlen);
		snprintf(path, sizeof(path), "%s/meta.json", cap);
		m = json_object_from_file(path);
		json_object_object_get_ex(m, "traces", &t);
		t = json_object_array_get_idx(t, 0);
		for (i = 0; i < bad[k].n; i++) {
			struct json_object *g = json_object_new_object();

			json_object_object_add(g, "offset", json_object_new_int64(bad[k].off[i]));
			json_object_object_add(g, "tsc_start", json_object_new_int64(bad[k].t0[i]));
			json_object_object_add(g, "tsc_end", json_object_new_int64(bad[k].t1[i]));
			json_object_object_add(g, "bytes_lost", json_object_new_int64(10));
			json_object_object_add(g, "cpu", json_object_new_int64(0));
			json_object_array_add(gaps, g);
		}
		json_object_object_add(t, "gaps", gaps);
		json_object_to_file(path, m);
		json_object_put(m);
		st = decode(F(r, "mg"), F(r, "emg"), "decode %s --insn=%s", cap, F(r, "mg.insn"));
		e = slurp(F(r, "emg"), NULL);
		one_line = e && strchr(e, '\n') && !strchr(e, '\n')[1];
		CHECK(st == 2 && one_line && strstr(e, bad[k].field),
		      "%s: meta gaps: %s: refused, exit 2 (%d), one line naming \"%s\": %s", r->name,
		      bad[k].what, st, bad[k].field, e ? e : "");
		free(e);
	}
	free(trace);
	st = decode(F(r, "mj"), F(r, "emj"), "decode %s --jsonl", r->dir);
	CHECK(st == 2 && file_contains(F(r, "emj"), "--jsonl goes with --insn or --calls"),
	      "%s: --jsonl without --insn or --calls: a usage error, exit 2 (%d)", r->name, st);
	st = decode(F(r, "mf"), F(r, "emf"), "decode %s -F tid --profile", r->dir);
	CHECK(st == 2 && file_contains(F(r, "emf"), "-F/--fields goes with --insn or --calls"),
	      "%s: -F without --insn or --calls: a usage error, exit 2 (%d)", r->name, st);
}

/*
 * A recording killed before it ended leaves its first meta.json: "traces"
 * empty, incomplete, "the recording did not finish".  decode says so and
 * decodes the trace files it left, exit 3 (incomplete).
 */
static void test_unfinished(struct run *r)
{
	char raws[16384], cap[PATH_MAX + 32], path[PATH_MAX + 64];
	struct json_object *m;
	size_t tlen = 0;
	char *trace;
	int st;

	snprintf(path, sizeof(path), "%s/trace.pt", r->dir);
	trace = slurp(path, &tlen);
	snprintf(cap, sizeof(cap), "%s/%s.unfinished-capture", work, r->name);
	if (!trace) {
		CHECK(0, "%s: unfinished: no trace.pt", r->name);
		return;
	}
	make_capture(r, cap, trace, tlen);
	snprintf(path, sizeof(path), "%s/meta.json", cap);
	m = json_object_from_file(path);
	json_object_object_add(m, "traces", json_object_new_array());
	json_object_object_add(m, "complete", json_object_new_boolean(0));
	json_object_object_add(m, "incomplete_reason",
			       json_object_new_string("the recording did not finish"));
	json_object_to_file(path, m);
	json_object_put(m);
	raw_args(r, raws, sizeof(raws), -1);
	st = decode(F(r, "uf"), F(r, "euf"), "-j decode %s%s", cap, raws);
	CHECK(st == 3 && clean_stderr(F(r, "euf")) &&
	      file_contains(F(r, "euf"), "the recording did not finish; decoding what it left") &&
	      json_int(F(r, "uf"), "instructions") == (int64_t)r->n,
	      "%s: unfinished capture (no trace listed): says so, decodes cpu0.pt (%" PRId64
	      " of %zu instructions), exit 3 (%d)", r->name, json_int(F(r, "uf"), "instructions"),
	      r->n, st);

	/* meta.json written while recording lists cpu0.pt; cpu1.pt came later */
	make_capture(r, cap, trace, tlen);
	snprintf(path, sizeof(path), "%s/meta.json", cap);
	m = json_object_from_file(path);
	json_object_object_add(m, "complete", json_object_new_boolean(0));
	json_object_object_add(m, "incomplete_reason",
			       json_object_new_string("the recording did not finish"));
	json_object_to_file(path, m);
	json_object_put(m);
	snprintf(path, sizeof(path), "%s/cpu1.pt", cap);
	spew(path, trace, tlen);
	st = decode(F(r, "uf2"), F(r, "euf2"), "-j decode %s%s", cap, raws);
	CHECK(st == 3 && clean_stderr(F(r, "euf2")) &&
	      file_contains(F(r, "euf2"), "decoding what it left (2 trace files") &&
	      json_int(F(r, "uf2"), "instructions") == 2 * (int64_t)r->n,
	      "%s: unfinished capture listing cpu0.pt, cpu1.pt not listed: decodes both once "
	      "(%" PRId64 " of %zu instructions), exit 3 (%d)", r->name,
	      json_int(F(r, "uf2"), "instructions"), 2 * r->n, st);
	free(trace);
}

/* ---- corrupted input, under ASan/UBSan ----------------------------------------------------- */

/*
 * Does 'ipttool decode --insn' output @insn (symbols dropped) equal the
 * reference decode (tools/testing/decode/ref.c: serial libipt) of trace
 * @trace against @r's code?  @flavour: "" or "--insn-decoder".
 */
static bool ref_equal_imgs(const char *imgs, const char *trace, const char *insn,
			   const char *flavour)
{
	return sh("%s/userspace/decode-ref %s %s 6/126/5%s | grep -v '^# ' >%s.ref && "
		  "sed -E 's/^([0-9a-f]{16})  .*/\\1/' %s >%s.norm && cmp -s %s.ref %s.norm",
		  build, flavour, trace, imgs, insn, insn, insn, insn, insn) == 0;
}

static bool ref_equal(struct run *r, const char *trace, const char *insn, const char *flavour)
{
	char imgs[16384];

	ref_images(r, imgs, sizeof(imgs));
	return ref_equal_imgs(imgs, trace, insn, flavour);
}

/*
 * The instructions the reference (decode-ref, serial libipt; the
 * instruction decoder when @insn_decoder) counts in raw trace @pt over
 * the @len bytes of code @code loaded at 0x401000, or -1; @tmp: a path
 * for its output.
 */
static int64_t ref_insns(const char *pt, const char *code, size_t len, int insn_decoder,
			 const char *tmp)
{
	char line[256];
	int64_t n = -1;
	FILE *f;

	sh("%s/userspace/decode-ref %s %s - 401000:%zx:%s | tail -1 >%s", build,
	   insn_decoder ? "--insn-decoder" : "", pt, 0x401000 + len, code, tmp);
	f = fopen(tmp, "r");
	if (f && fgets(line, sizeof(line), f))
		sscanf(line, "# instructions %" SCNd64, &n);
	if (f)
		fclose(f);
	return n;
}

static void test_corrupt(struct run *r)
{
	char raws[16384], path[2 * PATH_MAX], cap[PATH_MAX];
	size_t tlen, n, first;
	char *trace;
	uint64_t *a;
	int st;
	int64_t got;

	snprintf(path, sizeof(path), "%s/trace.pt", r->dir);
	trace = slurp(path, &tlen);
	raw_args(r, raws, sizeof(raws), -1);

	/*
	 * truncated: the first half, cut inside the first PSB from there
	 * (8 of its 16 bytes), so that the cut is inside a packet whatever
	 * the trace: a cut at tlen / 2 alone lands on a packet boundary for
	 * some traces (the program's stack, and so its trace, moves with the
	 * environment), and a trace that ends there is a complete one.
	 */
	{
		static const unsigned char psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
						       0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
						       0x02, 0x82, 0x02, 0x82 };
		const char *m = memmem(trace + tlen / 2, tlen - tlen / 2, psb, sizeof(psb));

		snprintf(path, sizeof(path), "%s/trunc.pt", work);
		spew(path, trace, m ? (size_t)(m - trace) + 8 : tlen / 2);
	}
	st = decode(F(r, "t"), F(r, "et"), "decode --pt %s --cpu 6/126/5%s --insn", path, raws);
	a = insn_addrs(F(r, "t"), &n);
	first = 0;
	while (first < n && first < r->n && a[first] == r->ips[first])
		first++;
	/* cut inside a packet: an incomplete result (3) that says so */
	CHECK(((st == 3 && file_contains(F(r, "et"), "ends inside a packet")) || st == 1) &&
	      clean_stderr(F(r, "et")) && n > 0 && n < r->n && first == n,
	      "truncated trace: exit %d, a correct partial result (%zu of %zu instructions, all "
	      "equal to the ground truth's start)", st, n, r->n);
	free(a);

	/* garbage inside: 48 bytes of 0xff... after the second PSB */
	{
		char *g = malloc(tlen);
		size_t at = tlen / 3;

		memcpy(g, trace, tlen);
		for (size_t i = 0; i < 48 && at + i < tlen; i++)
			g[at + i] = (char)(0xd3 ^ (int)(i * 37));
		snprintf(path, sizeof(path), "%s/garbage.pt", work);
		spew(path, g, tlen);
		free(g);
		st = decode(F(r, "g"), F(r, "eg"), "-j decode --pt %s --cpu 6/126/5%s", path, raws);
		got = json_int(F(r, "g"), "instructions");
		CHECK(st == 1 && clean_stderr(F(r, "eg")) && json_int(F(r, "g"), "errors") >= 1 &&
		      got > (int64_t)r->n / 2 && got < (int64_t)r->n,
		      "garbage inside the trace: exit 1, errors counted with offsets, decoding resumes "
		      "at the next PSB (%" PRId64 " of %zu instructions)", got, r->n);
		st = decode(F(r, "g2"), F(r, "eg2"), "decode --pt %s --cpu 6/126/5%s --insn", path, raws);
		CHECK(clean_stderr(F(r, "eg2")) && file_contains(F(r, "eg2"), "offset 0x") &&
		      file_contains(F(r, "eg2"), "bytes skipped") && file_contains(F(r, "g2"), "[lost trace:"),
		      "garbage: the text summary and --insn say where trace was lost and how much was "
		      "skipped");
	}

	/* an overflow: an OVF packet just before the second PSB */
	{
		static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
						 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
		char *g = malloc(tlen + 2), *second = NULL;
		size_t at;

		second = memmem(trace + 1, tlen - 1, psb, sizeof(psb));
		at = second ? (size_t)(second - trace) : tlen;
		memcpy(g, trace, at);
		g[at] = 0x02;
		g[at + 1] = (char)0xf3;		/* OVF */
		memcpy(g + at + 2, trace + at, tlen - at);
		snprintf(path, sizeof(path), "%s/ovf.pt", work);
		spew(path, g, tlen + 2);
		free(g);
		st = decode(F(r, "o1"), F(r, "eo1"), "-j decode --pt %s --cpu 6/126/5%s --insn=%s/ovf.insn1",
			    path, raws, work);
		got = json_int(F(r, "o1"), "instructions");
		CHECK(second && st == 1 && clean_stderr(F(r, "eo1")) &&
		      file_contains(F(r, "o1"), "\"overflow\":{\"count\":1") && got > 0,
		      "an overflow (OVF packet): counted as an overflow (%" PRId64 " instructions)", got);
		{
			char a1[PATH_MAX + 32];

			/* what libipt makes of it serially, split or not */
			snprintf(a1, sizeof(a1), "%s/ovf.insn1", work);
			CHECK(ref_equal(r, path, a1, ""),
			      "an OVF just before a PSB: the split decode equals libipt's serial one "
			      "(tools/testing/decode/ref.c)");
		}
		st = decode(F(r, "o2"), F(r, "eo2"), "decode --pt %s --cpu 6/126/5%s --insn=/dev/null "
			    "--no-split", path, raws);
		CHECK(st == 1 && clean_stderr(F(r, "eo2")) && file_contains(F(r, "eo2"), "overflow"),
		      "the same unsplit: the overflow is reported, no crash");
	}

	/* a missing binary: the image with most instructions left out */
	{
		char less[16384];

		raw_args(r, less, sizeof(less), 1);
		st = decode(F(r, "m"), F(r, "em"), "decode --pt %s/trace.pt --cpu 6/126/5%s --calls "
			    "--no-split", r->dir, less);
		CHECK(st == 1 && clean_stderr(F(r, "em")) && file_contains(F(r, "em"), "no image") &&
		      file_contains(F(r, "em"), "--elf/--raw"),
		      "missing binary: exit 1, 'no image' with what to add");
		st = decode(F(r, "m2"), F(r, "em2"), "-j decode --pt %s/trace.pt --cpu 6/126/5%s",
			    r->dir, less);
		got = json_int(F(r, "m2"), "instructions");
		CHECK(got > 0 && got < (int64_t)r->n && clean_stderr(F(r, "em2")),
		      "missing binary: a partial result (%" PRId64 " instructions)", got);
	}

	/* a wrong CPU: errata of another part; the trace still decodes */
	st = decode(F(r, "w"), F(r, "ew"), "decode --pt %s/trace.pt --cpu 6/61%s --insn", r->dir, raws);
	CHECK(st == 0 && clean_stderr(F(r, "ew")) && insn_equal(r, F(r, "w"), &n, &first),
	      "wrong CPU (6/61, Broadwell errata): no crash, same result (errata do not apply here)");
	st = decode(F(r, "w2"), F(r, "ew2"), "decode --pt %s/trace.pt --cpu banana%s", r->dir, raws);
	CHECK(st == 2 && file_contains(F(r, "ew2"), "FAMILY/MODEL"),
	      "--cpu banana: usage error saying what --cpu takes");

	/* an empty capture */
	snprintf(cap, sizeof(cap), "%s/empty.capture", work);
	make_capture(r, cap, "", 0);
	st = decode(F(r, "ee"), F(r, "eee"), "decode %s%s --insn", cap, raws);
	CHECK(st == 1 && clean_stderr(F(r, "eee")) && file_contains(F(r, "eee"), "empty"),
	      "empty capture: exit 1, says the trace is empty");

	/* not PT at all */
	{
		char junk[4096];

		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (char)(i * 131 + 7);
		snprintf(path, sizeof(path), "%s/junk.pt", work);
		spew(path, junk, sizeof(junk));
		st = decode(F(r, "j"), F(r, "ej"), "decode --pt %s%s --insn", path, raws);
		CHECK(st == 1 && clean_stderr(F(r, "ej")) && file_contains(F(r, "ej"), "no PSB"),
		      "random bytes: exit 1, 'no PSB' message");
	}
	/* endless code: tracing enabled at a "jmp ." and no more trace */
	{
		static const uint8_t pkts[] = {
			PT_ENABLE_401000,
			/* trace left unread (else libipt stops: the end of the trace) */
			PT_PSB,
			0x02, 0x23,					/* PSBEND */
			0x04,						/* TNT (one bit) */
		};
		static const uint8_t jmp_self[] = { 0xeb, 0xfe };
		char code[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/loop.pt", work);
		spew(path, pkts, sizeof(pkts));
		snprintf(code, sizeof(code), "%s/loop.bin", work);
		spew(code, jmp_self, sizeof(jmp_self));
		st = decode(F(r, "l"), F(r, "el"), "-j decode --pt %s --raw %s:0x401000", path, code);
		got = json_int(F(r, "l"), "instructions");
		CHECK(st == 1 && clean_stderr(F(r, "el")) && file_contains(F(r, "l"), "endless_code") &&
		      got > 1000000 && got < 2000000,
		      "endless code (a 'jmp .' with no trace after it): stops after ~1e6 instructions "
		      "with an 'endless code' error instead of running forever (%" PRId64 ")", got);
		/*
		 * The same count in every mode and as the reference: the rule
		 * is checked after each block, and every mode has the
		 * reference's blocks (ending at jumps).  A 3-instruction loop
		 * crosses the limit inside a block (1000002 in blocks).
		 */
		static const uint8_t loop3[] = { 0x90, 0x90, 0xeb, 0xfc };	/* nop; nop; jmp .-2 */

		for (int k = 0; k < 2; k++) {
			int64_t want[2] = { -1, -1 }, cnt[2], cnt2, lines[2];

			spew(code, k ? (const char *)loop3 : (const char *)jmp_self,
			     k ? sizeof(loop3) : sizeof(jmp_self));
			for (int fl = 0; fl < 2; fl++) {
				want[fl] = ref_insns(path, code,
						     k ? sizeof(loop3) : sizeof(jmp_self), fl,
						     F(r, "l"));
				decode(F(r, "l"), F(r, "el"), "-j decode --pt %s --raw %s:0x401000 -J 1%s",
				       path, code, fl ? " --insn-decoder" : "");
				cnt[fl] = json_int(F(r, "l"), "instructions");
				decode(F(r, "l"), F(r, "el"), "decode --pt %s --raw %s:0x401000 -J 2%s --insn",
				       path, code, fl ? " --insn-decoder" : "");
				lines[fl] = sh("test $(grep -c '^[0-9a-f]\\{16\\}' %s) = %" PRId64,
					       F(r, "l"), want[fl]) == 0 ? want[fl] : -1;
			}
			decode(F(r, "l"), F(r, "el"), "-j decode --pt %s --raw %s:0x401000 -J 2", path,
			       code);
			cnt2 = json_int(F(r, "l"), "instructions");
			CHECK(want[0] == (k ? 1000002 : 1000001) && want[1] == 1000001 &&
			      cnt[0] == want[0] && cnt2 == want[0] && lines[0] == want[0] &&
			      cnt[1] == want[1] && lines[1] == want[1],
			      "endless code (%s): the summary (-J 1, -J 2) and --insn lines count what "
			      "the reference counts, blocks %" PRId64 " (%" PRId64 ", %" PRId64 ", %"
			      PRId64 "), instructions %" PRId64 " (%" PRId64 ", %" PRId64 ")",
			      k ? "a 3-instruction loop" : "jmp .", want[0], cnt[0], cnt2, lines[0],
			      want[1], cnt[1], lines[1]);
		}
	}
	/*
	 * Endless code reached in the first segment after the trace moved:
	 * a "jnz ." takes its TNT bits from two packets (the offset moves
	 * each time one is used up), falls into a "jmp .", and a third TNT
	 * stays unread before the next PSB.  The decoder's offset stays in
	 * the first segment, which every mode decodes with the count loop,
	 * so there the endless-code rule must count from the last move:
	 * the loop above stops in another segment, whose steps are the
	 * fine ones, and did not reach it.
	 */
	{
		static const uint8_t pkts[] = {
			PT_ENABLE_401000,
			0x0e,						/* TNT taken, taken */
			0x0c,						/* TNT taken, not taken */
			0x04,						/* TNT (left unread) */
			PT_PSB,
			0x02, 0x23,					/* PSBEND */
			0x04,						/* TNT */
		};
		static const uint8_t code2[] = { 0x75, 0xfe, 0xeb, 0xfe };	/* jnz .; jmp . */
		char code[PATH_MAX + 64];
		int64_t want[2] = { -1, -1 }, cnt[2][2], lines[2];
		bool same = true;

		snprintf(path, sizeof(path), "%s/loop2.pt", work);
		spew(path, pkts, sizeof(pkts));
		snprintf(code, sizeof(code), "%s/loop2.bin", work);
		spew(code, code2, sizeof(code2));
		for (int fl = 0; fl < 2; fl++) {
			want[fl] = ref_insns(path, code, sizeof(code2), fl, F(r, "l2"));
			for (int j = 0; j < 2; j++) {
				decode(F(r, "l2"), F(r, "el2"),
				       "-j decode --pt %s --raw %s:0x401000 -J %d%s", path, code, j + 1,
				       fl ? " --insn-decoder" : "");
				cnt[fl][j] = json_int(F(r, "l2"), "instructions");
				same = same && file_contains(F(r, "l2"), "\"reason\":\"endless_code\","
							     "\"offset\":31,\"ip\":\"0x401002\"");
			}
			decode(F(r, "l2"), F(r, "el2"), "decode --pt %s --raw %s:0x401000 -J 2%s --insn",
			       path, code, fl ? " --insn-decoder" : "");
			lines[fl] = sh("test $(grep -c '^[0-9a-f]\\{16\\}' %s) = %" PRId64, F(r, "l2"),
				       want[fl]) == 0 ? want[fl] : -1;
		}
		CHECK(same && want[0] > 1000001 && want[0] < 1000010 && want[1] == want[0] &&
		      cnt[0][0] == want[0] && cnt[0][1] == want[0] && cnt[1][0] == want[0] &&
		      cnt[1][1] == want[0] && lines[0] == want[0] && lines[1] == want[0],
		      "endless code after the trace moved (jnz . on two TNTs, then jmp .): the "
		      "summary (-J 1, -J 2) and --insn lines count what the reference counts, blocks "
		      "%" PRId64 " (%" PRId64 ", %" PRId64 ", %" PRId64 "), instructions %" PRId64
		      " (%" PRId64 ", %" PRId64 ", %" PRId64 "), the error at the jmp, offset 31",
		      want[0], cnt[0][0], cnt[0][1], lines[0], want[1], cnt[1][0], cnt[1][1],
		      lines[1]);
	}
	/* a bad meta.json, a missing directory, a missing --raw file */
	snprintf(path, sizeof(path), "%s/meta.json", cap);
	spew(path, "{\"format\": ", 11);
	st = decode(F(r, "b"), F(r, "eb"), "decode %s", cap);
	CHECK(st == 2 && file_contains(F(r, "eb"), "not valid JSON") && clean_stderr(F(r, "eb")),
	      "broken meta.json: exit 2, 'not valid JSON'");
	st = decode(F(r, "b2"), F(r, "eb2"), "decode %s/does-not-exist", work);
	CHECK(st == 2 && file_contains(F(r, "eb2"), "No such file"), "missing directory: exit 2");
	st = decode(F(r, "b3"), F(r, "eb3"), "decode --pt %s/trace.pt --raw /nonexistent:0x1000",
		    r->dir);
	CHECK(st == 2 && file_contains(F(r, "eb3"), "/nonexistent"), "missing --raw file: exit 2");
	/* every single-byte truncation point near a PSB, and bit flips: no crash */
	{
		int bad = 0, runs = 0;

		for (size_t cut = 1; cut < tlen && runs < 6; cut += tlen / 6, runs++) {
			char *g = malloc(tlen);

			memcpy(g, trace, tlen);
			for (size_t i = cut; i < tlen; i += 97)
				g[i] ^= (char)(1 << (i % 8));
			snprintf(path, sizeof(path), "%s/flip.pt", work);
			spew(path, g, tlen);
			free(g);
			st = decode(F(r, "f"), F(r, "ef"), "decode --pt %s --cpu 6/126/5%s --calls=%s/f.calls "
				    "--profile=%s/f.prof --folded=%s/f.fold --blocks=%s/f.blk --perfetto "
				    "%s/f.json --drcov %s/f.cov -J 2", path, raws, work, work, work, work,
				    work, work);
			if (st > 1 || !clean_stderr(F(r, "ef")))
				bad++;
			/* the summary alone: no blocks kept, blocks through calls */
			st = decode(F(r, "f"), F(r, "ef"), "decode --pt %s --cpu 6/126/5%s -J 2",
				    path, raws);
			if (st > 1 || !clean_stderr(F(r, "ef")))
				bad++;
		}
		CHECK(bad == 0, "bit flips every 97 bytes from 6 points, every output and the summary "
		      "alone: never a crash or sanitizer report (%d bad)", bad);
	}
	free(trace);
}

/*
 * Hand-built traces of 32-bit code: per-block exec modes (the instructions
 * of a block walked with Zydis in its mode, addresses masked to 32 bits),
 * the uncached path of a trace with two exec modes, and "[end of trace]"
 * when the trace ends with tracing on; each as the reference decodes it,
 * with both decoders, -J 1 and -J 2 (two segments), split and unsplit.
 */
static void test_modes(struct run *r)
{
	static const uint8_t psb[] = { PT_PSB };
	/*
	 * At 0x401000, in 32-bit mode ("40" is inc eax, in 64-bit mode a REX
	 * prefix: another walk):
	 *   0: inc eax; 1: mov ax,0x1234; 5: call 0xf; a: dec eax;
	 *   b: jnz 0; d: jmp 0x15; f: inc eax; 10: mov ax,0x5678; 14: ret;
	 *   15: nop; 16: dec eax; 17: jnz 0x16; 19: ret
	 */
	static const uint8_t c32[] = {
		0x40, 0x66, 0xb8, 0x34, 0x12, 0xe8, 0x05, 0x00, 0x00, 0x00, 0x48, 0x75, 0xf3,
		0xeb, 0x06, 0x40, 0x66, 0xb8, 0x78, 0x56, 0xc3, 0x90, 0x48, 0x75, 0xfd, 0xc3,
	};
	/*
	 * At 0xfffffff0: 16 nops, dec eax, jnz 0xfffffff0, ret.  libipt does
	 * not wrap at 4 GiB (the block's end is 0x100000001); walked in 32-bit
	 * mode the nops lead to 0, so its instructions are not shown.
	 */
	static const uint8_t wrap[] = {
		0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
		0x90, 0x90, 0x90, 0x90, 0x48, 0x75, 0xed, 0xc3,
	};
	static const uint8_t m32[] = { 0x99, 0x02 }, m64[] = { 0x99, 0x01 }, psbend[] = { 0x02, 0x23 };
	static const uint8_t pge_401000[] = { 0x71, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00 };
	static const uint8_t pge_wrap[] = { 0x71, 0xf0, 0xff, 0xff, 0xff, 0x00, 0x00 };
	static const uint8_t pgd[] = { 0x61, 0x00, 0x00, 0x50, 0x00, 0x00, 0x00 };	/* to 0x500000 */
	static const uint8_t tnt_tn[] = { 0x0c };	/* taken, not taken */
	static const uint8_t tnt_6[] = { 0xf6 };	/* T T T N T T: twice round, out, twice round */
	static const uint8_t tnt_n[] = { 0x04 }, tnt_tt[] = { 0x0e };
	struct piece {
		const uint8_t *p;
		size_t n;
	};
#define P(a) { a, sizeof(a) }
	/* the wrap, off; then the 32-bit code, trace ending at the next jnz with tracing on */
	static const struct piece t32[] = {
		P(psb), P(m32), P(psbend), P(m32), P(pge_wrap), P(tnt_tn), P(pgd),
		P(psb), P(m32), P(psbend), P(m32), P(pge_401000), P(tnt_6),
	};
	/* the 32-bit code, off; then the same bytes in 64-bit mode, ending with tracing on */
	static const struct piece tm[] = {
		P(psb), P(m32), P(psbend), P(m32), P(pge_401000), P(tnt_6), P(tnt_n), P(pgd),
		P(psb), P(m64), P(psbend), P(m64), P(pge_401000), P(tnt_tt),
	};
#undef P
	static const struct {
		const char *name;
		const struct piece *pc;
		size_t npc;
		int64_t insns;		/* the reference's, either decoder */
		const char *ref_has;	/* in the block decoder's reference output */
	} traces[] = {
		{ "modes32", t32, sizeof(t32) / sizeof(t32[0]), 59,
		  "[18 instructions from 0xfffffff0 not shown" },
		{ "modesmix", tm, sizeof(tm) / sizeof(tm[0]), 30, "[enabled at 0x401000]\n0000000000401000\n"
		  "0000000000401005\n000000000040100f\n0000000000401014\n000000000040100a\n"
		  "[end of trace]" },
	};
	char c32p[PATH_MAX], wrapp[PATH_MAX], imgs[3 * PATH_MAX], raws[3 * PATH_MAX];

	snprintf(c32p, sizeof(c32p), "%s/modes-c32.bin", work);
	snprintf(wrapp, sizeof(wrapp), "%s/modes-wrap.bin", work);
	spew(c32p, c32, sizeof(c32));
	spew(wrapp, wrap, sizeof(wrap));
	snprintf(imgs, sizeof(imgs), " 401000:%x:%s fffffff0:%llx:%s",
		 0x401000 + (unsigned int)sizeof(c32), c32p, 0xfffffff0ULL + sizeof(wrap), wrapp);
	snprintf(raws, sizeof(raws), "--cpu 6/126/5 --raw %s:0x401000 --raw %s:0xfffffff0", c32p,
		 wrapp);
	for (size_t t = 0; t < sizeof(traces) / sizeof(traces[0]); t++) {
		char path[PATH_MAX], out[PATH_MAX + 64];
		uint8_t buf[256];
		size_t len = 0;
		int64_t segs = -1;

		for (size_t k = 0; k < traces[t].npc; k++) {
			memcpy(buf + len, traces[t].pc[k].p, traces[t].pc[k].n);
			len += traces[t].pc[k].n;
		}
		snprintf(path, sizeof(path), "%s/%s.pt", work, traces[t].name);
		spew(path, buf, len);
		decode(F(r, "ms"), F(r, "ems"), "-j decode --pt %s %s -J 2", path, raws);
		{
			struct json_object *o = json_object_from_file(F(r, "ms")), *tr, *v;

			if (o && json_object_object_get_ex(o, "traces", &tr) &&
			    json_object_object_get_ex(json_object_array_get_idx(tr, 0), "segments", &v))
				segs = json_object_get_int64(v);
			json_object_put(o);
		}
		for (int fl = 0; fl < 2; fl++) {
			const char *flav = fl ? "--insn-decoder" : "";
			int bad = 0, eos = 0, runs = 0;
			int64_t want = -1;
			char *txt;
			size_t n;

			/* the reference itself: what this trace is for */
			sh("%s/userspace/decode-ref %s %s 6/126/5%s >%s.modes.ref", build, flav, path, imgs,
			   F(r, traces[t].name));
			snprintf(out, sizeof(out), "%s.modes.ref", F(r, traces[t].name));
			txt = slurp(out, &n);
			if (txt && strstr(txt, "# instructions "))
				sscanf(strstr(txt, "# instructions ") + 15, "%" SCNd64, &want);
			CHECK(want == traces[t].insns && txt && strstr(txt, "[end of trace]\n#") &&
			      (fl || strstr(txt, traces[t].ref_has)),
			      "%s%s: the reference decodes %" PRId64 " instructions (%" PRId64 ") and "
			      "ends with '[end of trace]'", traces[t].name, fl ? " (insn decoder)" : "",
			      traces[t].insns, want);
			free(txt);
			for (int J = 1; J <= 2; J++)
				for (int ns = 0; ns < 2; ns++) {
					int st;

					snprintf(out, sizeof(out), "%s.modes%d%d%d", F(r, traces[t].name), fl,
						 J, ns);
					st = decode(out, F(r, "ems"), "decode --pt %s %s --insn -J %d%s %s",
						    path, raws, J, ns ? " --no-split" : "", flav);
					runs++;
					if (st != 0 || !clean_stderr(F(r, "ems")) ||
					    !ref_equal_imgs(imgs, path, out, flav))
						bad++;
					eos += sh("test $(grep -c '^\\[end of trace\\]$' %s) = 1", out) == 0;
				}
			CHECK(bad == 0 && eos == runs && segs == 2,
			      "%s%s: --insn equals the reference with -J 1 and -J 2, split (%" PRId64
			      " segments) and unsplit, each with one '[end of trace]' (%d of %d differ, "
			      "%d with it)", traces[t].name, fl ? " (insn decoder)" : "", segs, bad, runs,
			      eos);
		}
	}
}

/* mmap records of @r's executable file mappings (from maps.txt) for process @pid */
static void append_mmaps(FILE *out, struct run *r, long pid, uint64_t *t)
{
	char path[PATH_MAX + 64], line[PATH_MAX + 128];
	FILE *in;

	snprintf(path, sizeof(path), "%s/maps.txt", r->dir);
	in = fopen(path, "r");
	while (in && fgets(line, sizeof(line), in)) {
		unsigned long long s, e, off;
		char perms[8], file[PATH_MAX];

		if (line[0] == '#' ||
		    sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &s, &e, perms, &off, file) != 5 ||
		    perms[2] != 'x' || file[0] != '/')
			continue;
		fprintf(out, "{\"type\":\"mmap\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":%ld,"
			"\"tid\":%ld,\"start\":%llu,\"len\":%llu,\"pgoff\":%llu,\"prot\":5,"
			"\"flags\":2,\"file\":\"%s\",\"build_id\":null}\n", (*t)++, pid, pid, s,
			e - s, off, file);
	}
	if (in)
		fclose(in);
}

/*
 * --folded of a capture of two threads: every stack starts with its
 * thread's root frame, COMM-TID (the sideband's comm), so the threads do
 * not merge; under each root, exactly the stacks of that thread's trace
 * decoded alone (its run's --folded).
 */
static void test_folded_threads(const char *path, struct run *const runs[2], const long tids[2])
{
	size_t len, k, i, nroot[2] = { 0, 0 }, other = 0;
	char *s = slurp(path, &len), *save = NULL, *line;
	char *want[2] = { NULL, NULL }, *got[2] = { NULL, NULL };
	size_t glen[2] = { 0, 0 };
	bool ok = s != NULL;

	for (k = 0; k < 2; k++) {
		char rroot[128];
		size_t wl, rl;

		want[k] = slurp(F(runs[k], "s.folded"), &wl);
		got[k] = calloc(1, len + 1);
		if (!want[k] || !got[k]) {
			ok = false;
			continue;
		}
		/* the thread decoded alone is under its ptgen root: drop that */
		run_root(runs[k], rroot, sizeof(rroot));
		rl = strlen(rroot);
		if (rl) {
			char *w = want[k], *rd = want[k];

			while (*rd) {
				size_t ll = strcspn(rd, "\n");

				if (strncmp(rd, rroot, rl))
					ok = false;
				else
					rd += rl, ll -= rl;
				memmove(w, rd, ll);
				w += ll;
				rd += ll;
				if (*rd == '\n')
					*w++ = *rd++;
			}
			*w = 0;
		}
	}
	for (line = s ? strtok_r(s, "\n", &save) : NULL; ok && line; line = strtok_r(NULL, "\n", &save)) {
		char root[64];

		for (k = 0; k < 2; k++) {
			snprintf(root, sizeof(root), "%s-%ld;", k ? "b" : "a", tids[k]);
			if (!strncmp(line, root, strlen(root)))
				break;
		}
		if (k == 2) {
			other++;
			continue;
		}
		nroot[k]++;
		/* the rest, in the order --folded sorts it (by stack: the root is common) */
		i = strlen(line + strlen(root));
		memcpy(got[k] + glen[k], line + strlen(root), i);
		glen[k] += i;
		got[k][glen[k]++] = '\n';
	}
	for (k = 0; ok && k < 2; k++)
		if (strcmp(got[k], want[k]))
			ok = false;
	CHECK(ok && !other && nroot[0] && nroot[1],
	      "per-thread capture: --folded puts each thread under its own root frame a-%ld (%zu "
	      "stacks) and b-%ld (%zu stacks), %zu stacks without one; under each, exactly that "
	      "thread's stacks decoded alone", tids[0], nroot[0], tids[1], nroot[1], other);
	for (k = 0; k < 2; k++) {
		free(want[k]);
		free(got[k]);
	}
	free(s);
}

/*
 * A per-thread capture ("mode": "thread") of two threads in two processes:
 * thread 100 ran @a (process 100), thread 200 (process 200, forked from 100,
 * then exec'd) ran @b.  Process 100 also maps other code where @b's code
 * is: only per-process images decode both traces right.
 */
static void test_per_thread(struct run *a, struct run *b)
{
	char cap[PATH_MAX], path[PATH_MAX + 64], *sec;
	struct json_object *o = json_object_new_object(), *cpu = json_object_new_object();
	struct json_object *tr = json_object_new_array(), *sb = json_object_new_object();
	struct json_object *prog = json_object_new_object();
	struct run *runs[2] = { a, b };
	long tids[2] = { 100, 200 };
	size_t len, n, first, i;
	uint64_t t = 10;
	bool ok[2] = { false, false };
	FILE *out;
	char *all;
	int st;

	snprintf(cap, sizeof(cap), "%s/threads.capture", work);
	sh("rm -rf %s && mkdir -p %s", cap, cap);
	for (i = 0; i < 2; i++) {
		struct json_object *e = json_object_new_object();
		char name[64], *trace;
		size_t tl;

		snprintf(path, sizeof(path), "%s/trace.pt", runs[i]->dir);
		trace = slurp(path, &tl);
		snprintf(name, sizeof(name), "thread-%ld.pt", tids[i]);
		snprintf(path, sizeof(path), "%s/%s", cap, name);
		spew(path, trace, tl);
		free(trace);
		json_object_object_add(e, "trace", json_object_new_int((int)i));
		json_object_object_add(e, "tid", json_object_new_int64(tids[i]));
		json_object_object_add(e, "file", json_object_new_string(name));
		json_object_array_add(tr, e);
	}
	json_object_object_add(o, "format", json_object_new_string("ipt-capture"));
	json_object_object_add(o, "format_version", json_object_new_int(1));
	json_object_object_add(o, "mode", json_object_new_string("thread"));
	json_object_object_add(cpu, "family", json_object_new_int(6));
	json_object_object_add(cpu, "model", json_object_new_int(126));
	json_object_object_add(cpu, "stepping", json_object_new_int(5));
	json_object_object_add(o, "cpu", cpu);
	json_object_object_add(prog, "pid", json_object_new_int(100));
	json_object_object_add(o, "program", prog);
	json_object_object_add(o, "traces", tr);
	json_object_object_add(sb, "file", json_object_new_string("sideband.jsonl"));
	json_object_object_add(o, "sideband", sb);
	snprintf(path, sizeof(path), "%s/meta.json", cap);
	json_object_to_file(path, o);
	json_object_put(o);

	snprintf(path, sizeof(path), "%s/sideband.jsonl", cap);
	out = fopen(path, "w");
	if (!out) {
		CHECK(0, "per-thread capture: cannot write %s", path);
		return;
	}
	fprintf(out, "{\"type\":\"header\",\"format\":\"ipt-sideband\",\"version\":1}\n");
	fprintf(out, "{\"type\":\"comm\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":100,\"tid\":100,"
		"\"comm\":\"a\",\"exec\":true}\n", t++);
	append_mmaps(out, a, 100, &t);
	/* the decoy: other code of process 100 where b's code is */
	fprintf(out, "{\"type\":\"mmap\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":100,\"tid\":100,"
		"\"start\":%" PRIu64 ",\"len\":65536,\"pgoff\":0,\"prot\":5,\"flags\":2,"
		"\"file\":\"/bin/true\",\"build_id\":null}\n", t++, b->ips[0] & ~(uint64_t)0xfff);
	fprintf(out, "{\"type\":\"fork\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":200,\"tid\":200,"
		"\"ppid\":100,\"ptid\":100}\n", t++);
	fprintf(out, "{\"type\":\"comm\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":200,\"tid\":200,"
		"\"comm\":\"b\",\"exec\":true}\n", t++);
	append_mmaps(out, b, 200, &t);
	fclose(out);

	st = decode(F(a, "pt"), F(a, "ept"), "-j decode %s --insn=%s --perfetto %s --folded=%s", cap,
		    F(a, "pti"), F(a, "ptj"), F(a, "ptf"));
	all = slurp(F(a, "pti"), &len);
	/* split the --insn output at its "[trace FILE]" lines */
	for (i = 0; all && i < 2; i++) {
		char hdr[128], *end;

		snprintf(hdr, sizeof(hdr), "thread-%ld.pt]\n", tids[i]);
		sec = strstr(all, hdr);
		if (!sec)
			continue;
		sec += strlen(hdr);
		end = strstr(sec, "[trace ");
		snprintf(path, sizeof(path), "%s/thread-%ld.insn", work, tids[i]);
		spew(path, sec, end ? (size_t)(end - sec) : strlen(sec));
		ok[i] = insn_equal(runs[i], path, &n, &first);
	}
	free(all);
	CHECK(st == 0 && clean_stderr(F(a, "ept")) && ok[0] && ok[1],
	      "per-thread capture: each thread's trace decodes to its own ground truth with its "
	      "process's images from the sideband (fork, exec, a decoy mapping in the other process)");
	CHECK(file_contains(F(a, "ptj"), "\"tid\":100") && file_contains(F(a, "ptj"), "\"tid\":200") &&
	      file_contains(F(a, "ptj"), "thread 200") && file_contains(F(a, "pt"), "\"pid\":200"),
	      "per-thread capture: one Perfetto track per thread (tid 100, 200), the summary gives "
	      "each trace's tid and pid");
	CHECK(file_contains(F(a, "ptj"), "\"name\":\"process_name\",\"pid\":100,\"tid\":100,"
			    "\"args\":{\"name\":\"a\"}") &&
	      file_contains(F(a, "ptj"), "\"name\":\"process_name\",\"pid\":200,\"tid\":200,"
			    "\"args\":{\"name\":\"b\"}") &&
	      file_contains(F(a, "ptj"), "\"name\":\"thread_name\",\"pid\":200,\"tid\":200,"
			    "\"args\":{\"name\":\"b (thread 200)\"}") &&
	      file_contains(F(a, "ptj"), "{\"ph\":\"B\",\"pid\":200,\"tid\":200,"),
	      "per-thread capture: Perfetto events carry each thread's real pid, with process_name "
	      "and thread_name from the sideband's comm records");
	test_folded_threads(F(a, "ptf"), runs, tids);
	{
		static const char *const names[] = { "a (pid 100), a (thread 100) (tid 100)",
						     "b (pid 200), b (thread 200) (tid 200)", NULL };

		test_speedscope("per-thread capture", F(a, "ptj"), 2, names);
	}
}

/*
 * A timed trace (ptgen --tsc --mtc 0): --calls carries the time of each
 * call and return, inside the window ptgen's clock model allows a decoder
 * there (time.bin), and the Perfetto timeline is in that time.
 */
static void test_timed(struct run *r)
{
	struct json_object *o, *tm = NULL, *v, *ev = NULL;
	uint64_t t0 = 0, hz = 0, ns0 = 0, (*win)[3] = NULL, prev_ns = 0;
	size_t len = 0, i, lines = 0, bad = 0, exact = 0, calls = 0, nb = 0;
	char *s, *p, *save = NULL;
	uint64_t *call_ns = NULL;
	double err = 0;
	bool mono = true, nest = true, same = true;
	int st, depth = 0;
	int64_t last_ts = -1;

	st = decode(F(r, "t"), F(r, "et"), "-j decode %s -J 2 --calls=%s --perfetto=%s", r->dir,
		    F(r, "t.calls"), F(r, "t.json"));
	CHECK(st == 0 && clean_stderr(F(r, "et")), "%s: decode with --calls and --perfetto exits 0",
	      r->name);
	o = json_object_from_file(F(r, "t"));
	if (o && json_object_object_get_ex(o, "time", &tm) && tm) {
		if (json_object_object_get_ex(tm, "first_tsc", &v) &&
		    json_object_is_type(v, json_type_string))
			t0 = strtoull(json_object_get_string(v), NULL, 16);
		if (json_object_object_get_ex(tm, "tsc_hz", &v))
			hz = (uint64_t)json_object_get_int64(v);
		if (json_object_object_get_ex(tm, "first_ns", &v))
			ns0 = (uint64_t)json_object_get_int64(v);
	}
	json_object_put(o);
	CHECK(t0 == 0x100000000ULL && hz == 1996800000ULL,
	      "%s: the summary has the first TSC (%#" PRIx64 ", the clock model's start) and the "
	      "TSC frequency from CPUID 0x15 (%" PRIu64 " Hz)", r->name, t0, hz);
	{
		char tb[PATH_MAX + 16];

		snprintf(tb, sizeof(tb), "%s/time.bin", r->dir);
		s = slurp(tb, &len);
	}
	if (s && len == r->n * 24) {
		win = malloc(len);
		memcpy(win, s, len);
	}
	free(s);
	CHECK(win != NULL, "%s: ptgen wrote time.bin, three u64 per instruction", r->name);
	if (!win || !hz)
		return;
	call_ns = calloc(r->n + 1, sizeof(*call_ns));
	s = slurp(F(r, "t.calls"), &len);
	for (p = s ? strtok_r(s, "\n", &save) : NULL; p; p = strtok_r(NULL, "\n", &save)) {
		unsigned long long idx, sec, frac;
		char k;
		uint64_t ns, tsc;
		int used = 0;

		if (sscanf(p, "%llu %llu.%9llu %n", &idx, &sec, &frac, &used) != 3 || !used ||
		    idx == 0 || idx > r->n) {
			bad++;
			continue;
		}
		k = p[used + strspn(p + used, " ")];
		lines++;
		ns = sec * 1000000000ULL + frac;
		if (ns < prev_ns)
			mono = false;
		prev_ns = ns;
		if (k == '>')
			call_ns[calls++] = ns;
		/* back to TSC ticks: ns counts from first_ns = t0 * 1e9 / hz, rounded down */
		tsc = (uint64_t)(((unsigned __int128)(ns + ns0) * hz + 999999999ULL) / 1000000000ULL);
		/*
		 * The time after the block that ended with the call or return
		 * (instruction idx - 1) must be in that instruction's window
		 * (+-2 ticks for the round trip through nanoseconds).
		 */
		if (tsc + 2 < win[idx - 1][1] || tsc > win[idx - 1][2] + 2)
			bad++;
		if (tsc + 2 >= win[idx - 1][0] && tsc <= win[idx - 1][0] + 2)
			exact++;
		err += (double)(tsc > win[idx - 1][0] ? tsc - win[idx - 1][0] : win[idx - 1][0] - tsc);
	}
	free(s);
	CHECK(lines > 1000 && bad == 0 && mono,
	      "%s: --calls times (%zu lines, %zu exact, mean error %.0f cycles): every one in the "
	      "window of its call or return (%zu outside), never going back", r->name, lines, exact,
	      lines ? err / (double)lines : 0.0, bad);
	o = json_object_from_file(F(r, "t.json"));
	if (o)
		json_object_object_get_ex(o, "traceEvents", &ev);
	for (i = 0; ev && i < json_object_array_length(ev); i++) {
		struct json_object *e = json_object_array_get_idx(ev, i), *ph, *ts;
		const char *phs;
		int64_t t;

		if (!json_object_object_get_ex(e, "ph", &ph) || !json_object_object_get_ex(e, "ts", &ts))
			continue;
		phs = json_object_get_string(ph);
		/* microseconds with three decimals: whole nanoseconds */
		t = (int64_t)(json_object_get_double(ts) * 1000.0 + 0.5);
		if (t < last_ts)
			mono = false;
		last_ts = t;
		if (phs[0] == 'B') {
			if (nb >= calls || (uint64_t)t != call_ns[nb])
				same = false;
			nb++;
			depth++;
		} else if (phs[0] == 'E' && --depth < 0) {
			nest = false;
		}
	}
	CHECK(ev && mono && nest && depth == 0 && same && nb == calls,
	      "%s: Perfetto timeline in time: %zu spans begin at their call's --calls time, "
	      "never going back, properly nested", r->name, nb);
	CHECK(o && perfetto_unit(o, "microseconds"),
	      "%s: Perfetto: otherData/metadata say ts is in microseconds", r->name);
	json_object_put(o);
	test_speedscope(r->name, F(r, "t.json"), 1, NULL);
	free(call_ns);
	free(win);

	/*
	 * --folded-time: the clock model runs one tick per instruction, so the
	 * user time is n ticks; the stacks are those --folded counts.
	 */
	{
		char *ti, *tt, *q, *sv = NULL, *want;
		size_t li = 0, lt = 0, nstack = 0, unknown = 0;
		double total = 0, expect = (double)r->n * 1e9 / (double)hz;

		st = decode(F(r, "fo"), F(r, "efo"), "decode %s -J 2 --folded=%s", r->dir,
			    F(r, "fo.txt"));
		st |= decode(F(r, "ft"), F(r, "eft"), "decode %s -J 2 --folded=%s --folded-time", r->dir,
			     F(r, "ft.txt"));
		ti = slurp(F(r, "fo.txt"), &li);
		tt = slurp(F(r, "ft.txt"), &lt);
		want = calloc(1, li + 2);
		if (want && ti) {
			want[0] = '\n';
			memcpy(want + 1, ti, li);
		}
		for (q = tt ? strtok_r(tt, "\n", &sv) : NULL; q; q = strtok_r(NULL, "\n", &sv)) {
			char *sp = strrchr(q, ' '), key[4096];

			if (!sp || strtoull(sp + 1, NULL, 10) == 0) {
				unknown++;
				continue;
			}
			total += (double)strtoull(sp + 1, NULL, 10);
			nstack++;
			snprintf(key, sizeof(key), "\n%.*s ", (int)(sp - q), q);
			if (!want || !strstr(want, key))
				unknown++;
		}
		CHECK(st == 0 && nstack > 10 && unknown == 0 && total > 0.98 * expect &&
		      total < 1.02 * expect,
		      "%s: --folded-time: %zu stacks, all of them --folded's, %.0f ns in all against "
		      "%.0f ns of user time in the clock model", r->name, nstack, total, expect);
		free(ti);
		free(tt);
		free(want);
	}

	/* ptxed-style timing options: --cpuid-0x15 with and without the crystal */
	{
		char raws[16384];
		const char *unit = "";

		raw_args(r, raws, sizeof(raws), -1);
		st = decode(F(r, "px"), F(r, "epx"), "-j decode --pt %s/trace.pt --cpu 6/126/5%s "
			    "--mtc-freq 0 --nom-freq 20 --cpuid-0x15 2/104/38400000 --calls=%s",
			    r->dir, raws, F(r, "px.calls"));
		o = json_object_from_file(F(r, "px"));
		if (o && json_object_object_get_ex(o, "time", &tm) && tm &&
		    json_object_object_get_ex(tm, "unit", &v))
			unit = json_object_get_string(v);
		CHECK(st == 0 && !strcmp(unit, "ns") && json_int(F(r, "px"), "instructions") == (int64_t)r->n,
		      "%s: --pt with --cpuid-0x15 EAX/EBX/ECX: times in ns (unit %s)", r->name, unit);
		json_object_put(o);
		st = decode(F(r, "py"), F(r, "epy"), "-j decode --pt %s/trace.pt --cpu 6/126/5%s "
			    "--cpuid-0x15 2/104 --calls=%s", r->dir, raws, F(r, "py.calls"));
		unit = "";
		o = json_object_from_file(F(r, "py"));
		if (o && json_object_object_get_ex(o, "time", &tm) && tm &&
		    json_object_object_get_ex(tm, "unit", &v))
			unit = json_object_get_string(v);
		/* every line: a whole number of ticks, never going back */
		{
			char *txt = slurp(F(r, "py.calls"), &len), *q, *sv2 = NULL;
			unsigned long long idx, ticks, prev = 0;
			size_t nl = 0, badl = 0;
			int used;

			for (q = txt ? strtok_r(txt, "\n", &sv2) : NULL; q; q = strtok_r(NULL, "\n", &sv2)) {
				used = 0;
				if (sscanf(q, "%llu %llu %n", &idx, &ticks, &used) != 2 || !used ||
				    q[used] == '.' || (q[used] != '>' && q[used] != '<' && q[used] != ' ') ||
				    ticks < prev)
					badl++;
				prev = ticks;
				nl++;
			}
			free(txt);
			CHECK(st == 0 && !strcmp(unit, "tsc") && nl == lines && badl == 0,
			      "%s: --cpuid-0x15 EAX/EBX without the crystal: --calls times in TSC ticks "
			      "(unit %s; %zu lines, %zu not whole ticks in order)", r->name, unit, nl, badl);
		}
		json_object_put(o);
		st = decode(F(r, "pz"), F(r, "epz"), "decode --pt %s/trace.pt%s --cpuid-0x15 2",
			    r->dir, raws);
		CHECK(st == 2 && file_contains(F(r, "epz"), "EAX/EBX[/ECX]"),
		      "--cpuid-0x15 with one number: exit 2, says what it takes");
	}

	/* the same trace as a capture with the kernel's TSC to perf-time conversion */
	{
		char raws[16384], cap[PATH_MAX + 32], path[PATH_MAX + 48], *trace;
		struct json_object *m, *tc = json_object_new_object(), *c15 = json_object_new_object();
		struct json_object *cpu = NULL, *cfg = json_object_new_object();
		int64_t first_ns = -1, conv = -1;
		const char *unit = "";
		size_t tlen = 0, l1 = 0, l2 = 0;
		uint64_t want;
		char *a, *b;

		snprintf(path, sizeof(path), "%s/trace.pt", r->dir);
		trace = slurp(path, &tlen);
		snprintf(cap, sizeof(cap), "%s/%s.cap", work, r->name);
		make_capture(r, cap, trace, tlen);
		free(trace);
		snprintf(path, sizeof(path), "%s/meta.json", cap);
		m = json_object_from_file(path);
		json_object_object_add(tc, "time_shift", json_object_new_int(10));
		json_object_object_add(tc, "time_mult", json_object_new_int(524));
		json_object_object_add(tc, "time_zero", json_object_new_int64(123456789));
		json_object_object_add(m, "time_conv", tc);
		json_object_object_add(c15, "eax", json_object_new_int(2));
		json_object_object_add(c15, "ebx", json_object_new_int(104));
		json_object_object_add(c15, "ecx", json_object_new_int(38400000));
		json_object_object_get_ex(m, "cpu", &cpu);
		json_object_object_add(cpu, "cpuid_15", c15);
		json_object_object_add(cfg, "mtc_freq", json_object_new_int(0));
		json_object_object_add(m, "config", cfg);
		json_object_to_file(path, m);
		json_object_put(m);
		raw_args(r, raws, sizeof(raws), -1);
		st = decode(F(r, "tc"), F(r, "etc"), "-j decode %s%s --calls=%s", cap, raws,
			    F(r, "tc.calls"));
		o = json_object_from_file(F(r, "tc"));
		if (o && json_object_object_get_ex(o, "time", &tm) && tm) {
			if (json_object_object_get_ex(tm, "first_ns", &v))
				first_ns = json_object_get_int64(v);
			if (json_object_object_get_ex(tm, "time_conv", &v))
				conv = json_object_get_boolean(v);
			if (json_object_object_get_ex(tm, "unit", &v))
				unit = json_object_get_string(v);
		}
		/* the kernel's formula (perf_event_mmap_page) at the first TSC */
		want = 123456789 + (t0 >> 10) * 524 + (((t0 & 1023) * 524) >> 10);
		/*
		 * Line by line: the same instruction, and the time of the
		 * ptgen-directory decode (CPUID 0x15 frequency) taken back to
		 * TSC ticks and through the formula.
		 */
		a = slurp(F(r, "t.calls"), &l1);
		b = slurp(F(r, "tc.calls"), &l2);
		l1 = l2 = 0;
		for (char *pa = a, *pb = b; pa && pb && *pa && *pb; l1++) {
			unsigned long long ia, ib, sa, fa, sb, fb;
			uint64_t tsc, pns;

			if (sscanf(pa, "%llu %llu.%9llu", &ia, &sa, &fa) != 3 ||
			    sscanf(pb, "%llu %llu.%9llu", &ib, &sb, &fb) != 3 || ia != ib) {
				l2++;
				break;
			}
			tsc = (uint64_t)(((unsigned __int128)(sa * 1000000000ULL + fa + ns0) * hz +
					  999999999ULL) / 1000000000ULL);
			pns = 123456789 + (tsc >> 10) * 524 + (((tsc & 1023) * 524) >> 10) - want;
			if (sb * 1000000000ULL + fb + 2 < pns || sb * 1000000000ULL + fb > pns + 2)
				l2++;
			pa = strchr(pa, '\n');
			pb = strchr(pb, '\n');
			pa = pa ? pa + 1 : NULL;
			pb = pb ? pb + 1 : NULL;
		}
		CHECK(st == 0 && conv == 1 && first_ns == (int64_t)want && !strcmp(unit, "ns") &&
		      l1 > 1000 && l2 == 0,
		      "%s: as a capture with time_conv: perf time (first_ns %" PRId64 ", the kernel's "
		      "formula gives %" PRIu64 "); %zu --calls lines at the same instructions, %zu "
		      "not at the formula's time", r->name, first_ns, want, l1, l2);
		json_object_put(o);
		free(a);
		free(b);
	}
}

/*
 * A stand-in for /proc/kcore: an ELF core file with one PT_LOAD segment per
 * image of @seg (its bytes at its virtual addresses), in that order.
 */
static void write_core(const char *path, const struct image *seg, size_t nseg)
{
	static const uint8_t zeros[4096];
	Elf64_Phdr ph[16] = { { 0 } };
	Elf64_Ehdr eh = { 0 };
	uint64_t off = 4096;
	size_t i;
	FILE *f;

	if (nseg > 16)
		nseg = 16;
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_CORE;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = (uint16_t)nseg;
	for (i = 0; i < nseg; i++) {
		ph[i].p_type = PT_LOAD;
		ph[i].p_offset = off;
		ph[i].p_vaddr = seg[i].start;
		ph[i].p_filesz = ph[i].p_memsz = seg[i].end - seg[i].start;
		off += ph[i].p_filesz;
	}
	f = fopen(path, "w");
	if (!f)
		return;
	fwrite(&eh, sizeof(eh), 1, f);
	fwrite(ph, sizeof(ph[0]), nseg, f);
	fwrite(zeros, 1, 4096 - sizeof(eh) - nseg * sizeof(ph[0]), f);
	for (i = 0; i < nseg; i++)
		fwrite(seg[i].bytes, 1, seg[i].end - seg[i].start, f);
	fclose(f);
}

/*
 * --kcore: a stand-in for /proc/kcore (an ELF core file whose PT_LOAD
 * segments are memory at virtual addresses; this machine's kernel has
 * none) holding @r's code at its address behind a decoy segment, and a
 * kallsyms file with _stext/_etext around it and the program's functions
 * as text symbols.  The trace decodes to the ground truth through them.
 */
static void test_kcore(struct run *r)
{
	char core[PATH_MAX + 32], ksyms[PATH_MAX + 32], zsyms[PATH_MAX + 32];
	const struct image *im = &r->img[0];
	static uint8_t decoy_bytes[4096];
	/* a decoy first: the direct map */
	struct image seg[2] = { { .start = 0xffff888000000000ULL,
				  .end = 0xffff888000000000ULL + 4096, .bytes = decoy_bytes },
				*im };
	size_t n = 0, first;
	FILE *f;
	int st;

	snprintf(core, sizeof(core), "%s/%s.kcore", work, r->name);
	snprintf(ksyms, sizeof(ksyms), "%s/%s.kallsyms", work, r->name);
	snprintf(zsyms, sizeof(zsyms), "%s/%s.kallsyms0", work, r->name);
	write_core(core, seg, 2);
	f = fopen(ksyms, "w");
	if (f) {
		fprintf(f, "%016" PRIx64 " T _stext\n", im->start);
		for (size_t i = 0; i < r->nsyms; i++)
			fprintf(f, "%016" PRIx64 " %c %s\n", r->syms[i].start,
				r->syms[i].rank ? 't' : 'T', r->syms[i].name);
		fprintf(f, "%016" PRIx64 " t decoy_module_fn\t[decoy]\n", im->start);
		fprintf(f, "%016" PRIx64 " T _etext\n", im->end);
		fclose(f);
	}
	st = decode(F(r, "kc"), F(r, "ekc"), "decode --pt %s/trace.pt --cpu 6/126/5 --kcore=%s "
		    "--kallsyms %s --insn -J 2", r->dir, core, ksyms);
	CHECK(st == 0 && clean_stderr(F(r, "ekc")) && insn_equal(r, F(r, "kc"), &n, &first) &&
	      file_contains(F(r, "kc"), " main+0 ") && !file_contains(F(r, "kc"), "decoy"),
	      "%s: --kcore/--kallsyms: the code from the core file's segment at %#" PRIx64
	      " decodes to the ground truth (%zu instructions), kallsyms names the functions",
	      r->name, im->start, n);
	f = fopen(zsyms, "w");
	if (f) {
		fprintf(f, "0000000000000000 T _stext\n0000000000000000 T _etext\n");
		fclose(f);
	}
	st = decode(F(r, "kz"), F(r, "ekz"), "decode --pt %s/trace.pt --kcore=%s --kallsyms %s",
		    r->dir, core, zsyms);
	CHECK(st == 2 && file_contains(F(r, "ekz"), "kptr_restrict"),
	      "--kcore with a kallsyms that hides addresses: exit 2, says to read it as root or "
	      "set kptr_restrict");
	st = decode(F(r, "kn"), F(r, "ekn"), "decode --pt %s/trace.pt --kcore=%s/none --kallsyms %s",
		    r->dir, work, ksyms);
	CHECK(st == 2 && file_contains(F(r, "ekn"), "vmlinux"),
	      "--kcore of a missing file: exit 2, says to give --elf vmlinux instead");
}

/*
 * --kcore with --modules: a dynamic program's images as the kernel text
 * (the first) and modules (the others), each in a segment of a stand-in
 * core file, and a /proc/modules-format file naming them (plus a module
 * still loading and one no segment holds, both left out).  With the
 * modules the trace decodes to the ground truth, their code named
 * "[modN]"; without them it cannot.
 */
static void test_kcore_modules(struct run *r)
{
	char core[PATH_MAX + 32], ksyms[PATH_MAX + 32], mods[PATH_MAX + 32];
	size_t i, n = 0, first, nimg = r->nimg < 16 ? r->nimg : 16;
	FILE *f;
	int st;

	snprintf(core, sizeof(core), "%s/%s.mkcore", work, r->name);
	snprintf(ksyms, sizeof(ksyms), "%s/%s.mkallsyms", work, r->name);
	snprintf(mods, sizeof(mods), "%s/%s.modules", work, r->name);
	write_core(core, r->img, nimg);
	f = fopen(ksyms, "w");
	if (f) {
		fprintf(f, "%016" PRIx64 " T _stext\n%016" PRIx64 " T _etext\n",
			r->img[0].start, r->img[0].end);
		fclose(f);
	}
	f = fopen(mods, "w");
	if (f) {
		for (i = 1; i < nimg; i++)
			fprintf(f, "mod%zu %" PRIu64 " 0 - Live 0x%016" PRIx64 "%s\n", i,
				r->img[i].end - r->img[i].start, r->img[i].start,
				i == 1 ? " (OE)" : "");
		fprintf(f, "loading 4096 0 - Loading 0x%016" PRIx64 "\n", r->img[0].start);
		fprintf(f, "elsewhere 4096 0 - Live 0xffffffffc0000000\n");
		fclose(f);
	}
	st = decode(F(r, "km"), F(r, "ekm"), "decode --pt %s/trace.pt --cpu 6/126/5 --kcore=%s "
		    "--kallsyms %s --modules %s --insn", r->dir, core, ksyms, mods);
	CHECK(st == 0 && clean_stderr(F(r, "ekm")) && insn_equal(r, F(r, "km"), &n, &first) &&
	      nimg > 1 && file_contains(F(r, "km"), "[mod1]") &&
	      !file_contains(F(r, "km"), "[loading]") && !file_contains(F(r, "km"), "[elsewhere]"),
	      "%s: --kcore --modules: the kernel text and %zu modules from the core file decode to "
	      "the ground truth (%zu instructions), module code named [modN]", r->name, nimg - 1, n);
	st = decode(F(r, "kx"), F(r, "ekx"), "decode --pt %s/trace.pt --cpu 6/126/5 --kcore=%s "
		    "--kallsyms %s --insn", r->dir, core, ksyms);
	CHECK(!insn_equal(r, F(r, "kx"), &n, &first),
	      "%s: --kcore without --modules: only the kernel text, the trace leaves it", r->name);
	st = decode(F(r, "kmx"), F(r, "ekmx"), "decode --pt %s/trace.pt --modules %s", r->dir, mods);
	CHECK(st == 2 && file_contains(F(r, "ekmx"), "--modules goes with --kcore"),
	      "--modules without --kcore: exit 2, says it goes with --kcore");
	st = decode(F(r, "kmn"), F(r, "ekmn"), "decode --pt %s/trace.pt --kcore=%s --kallsyms %s "
		    "--modules %s/none", r->dir, core, ksyms, work);
	CHECK(st == 2 && file_contains(F(r, "ekmn"), "No such file"),
	      "--modules of a missing file: exit 2 with the file's error");
	f = fopen(mods, "w");
	if (f) {
		fprintf(f, "mod1 4096 0 - Live 0x0000000000000000\n");
		fclose(f);
	}
	st = decode(F(r, "kmz"), F(r, "ekmz"), "decode --pt %s/trace.pt --kcore=%s --kallsyms %s "
		    "--modules %s", r->dir, core, ksyms, mods);
	CHECK(st == 2 && file_contains(F(r, "ekmz"), "kptr_restrict"),
	      "--modules that hides addresses: exit 2, says to read it as root or set "
	      "kptr_restrict");
}

/*
 * Per-CPU switching: one CPU's trace of two processes whose code is at the
 * same addresses (two static programs, ptgen --tsc), the second one's TSC
 * moved 2^32 ticks later, with a sideband saying who ran when (switch
 * records, perf time = TSC).  Decoded with each process's images at its
 * turn, it is exactly the first program's instructions, then the
 * second's; with one process's images for the whole trace it is not.
 */
/*
 * A capture in @cap of @a's trace then @b's, @b's TSC packets 2^32 ticks
 * later: returns the first TSC of @b's part (0 on failure).
 */
static uint64_t two_program_capture(struct run *a, struct run *b, const char *cap)
{
	char path[PATH_MAX + 64];
	struct pt_packet_decoder *pd;
	struct pt_config cfg;
	uint64_t tb = 0, off;
	size_t la = 0, lb = 0;
	char *ta_buf, *tb_buf, *buf;

	snprintf(path, sizeof(path), "%s/trace.pt", a->dir);
	ta_buf = slurp(path, &la);
	snprintf(path, sizeof(path), "%s/trace.pt", b->dir);
	tb_buf = slurp(path, &lb);
	if (!ta_buf || !tb_buf) {
		free(ta_buf);
		free(tb_buf);
		return 0;
	}
	/* every TSC packet of the second trace 2^32 ticks later */
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)tb_buf;
	cfg.end = (uint8_t *)tb_buf + lb;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (pd && pt_pkt_sync_forward(pd) >= 0) {
		struct pt_packet p;

		while (!pt_pkt_get_offset(pd, &off) && pt_pkt_next(pd, &p, sizeof(p)) >= 0) {
			if (p.type != ppt_tsc)
				continue;
			p.payload.tsc.tsc += 1ULL << 32;
			for (int k = 0; k < 7; k++)
				tb_buf[off + 1 + k] = (char)(p.payload.tsc.tsc >> (8 * k));
			if (!tb)
				tb = p.payload.tsc.tsc;
		}
	}
	pt_pkt_free_decoder(pd);
	buf = malloc(la + lb);
	memcpy(buf, ta_buf, la);
	memcpy(buf + la, tb_buf, lb);
	make_capture(a, cap, buf, la + lb);
	free(buf);
	free(ta_buf);
	free(tb_buf);
	return tb;
}

/* meta.json of @cap: TSC on, perf time = TSC, a sideband; per thread of tid @tid if > 0. */
static void timed_meta(const char *cap, long tid)
{
	char path[PATH_MAX + 64];
	struct json_object *m, *o, *t;

	snprintf(path, sizeof(path), "%s/meta.json", cap);
	m = json_object_from_file(path);
	o = json_object_new_object();
	json_object_object_add(o, "tsc", json_object_new_boolean(1));
	json_object_object_add(m, "config", o);
	o = json_object_new_object();
	json_object_object_add(o, "time_shift", json_object_new_int(0));
	json_object_object_add(o, "time_mult", json_object_new_int(1));
	json_object_object_add(o, "time_zero", json_object_new_int(0));
	json_object_object_add(m, "time_conv", o);
	o = json_object_new_object();
	json_object_object_add(o, "file", json_object_new_string("sideband.jsonl"));
	json_object_object_add(m, "sideband", o);
	if (tid > 0 && json_object_object_get_ex(m, "traces", &o)) {
		t = json_object_array_get_idx(o, 0);
		json_object_object_del(t, "cpu");
		json_object_object_add(t, "tid", json_object_new_int64(tid));
		json_object_object_add(m, "mode", json_object_new_string("thread"));
	}
	json_object_to_file(path, m);
	json_object_put(m);
}

/* The sideband line of an mmap of @r's code dump by process @pid at @time (0: snapshot). */
static void sb_mmap(FILE *f, struct run *r, long pid, uint64_t time)
{
	char t[32];

	snprintf(t, sizeof(t), "%" PRIu64, time);
	fprintf(f, "{\"type\":\"mmap\",\"time\":%s,\"cpu\":%s,\"pid\":%ld,\"tid\":%ld,"
		"\"start\":%" PRIu64 ",\"len\":%" PRIu64 ",\"pgoff\":0,\"prot\":5,\"flags\":2,"
		"\"file\":\"%s/img-401000-0.bin\",\"build_id\":null}\n", time ? t : "null",
		time ? "0" : "null", pid, pid, r->img[0].start, r->img[0].end - r->img[0].start,
		r->dir);
}

static void test_switching(struct run *a, struct run *b)
{
	char cap[PATH_MAX + 32], path[PATH_MAX + 64], line[PATH_MAX + 512];
	struct json_object *o, *v;
	struct run both = { .name = "switching" };
	uint64_t ta = 0x100000000ULL, tb;	/* ptgen's tsc_start */
	size_t n = 0, first = SIZE_MAX;
	FILE *f;
	int st;

	snprintf(cap, sizeof(cap), "%s/switching.capture", work);
	tb = two_program_capture(a, b, cap);
	if (!tb) {
		CHECK(0, "switching: the two timed traces are there");
		return;
	}
	snprintf(path, sizeof(path), "%s/sideband.jsonl", cap);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "{\"type\":\"header\",\"format\":\"ipt-sideband\",\"version\":1}\n");
		/* the processes' names, for --folded's root frames */
		fprintf(f, "{\"type\":\"comm\",\"time\":null,\"cpu\":null,\"pid\":100,\"tid\":100,"
			"\"comm\":\"sw-a\",\"exec\":false}\n");
		fprintf(f, "{\"type\":\"comm\",\"time\":null,\"cpu\":null,\"pid\":200,\"tid\":200,"
			"\"comm\":\"sw-b\",\"exec\":false}\n");
		sb_mmap(f, a, 100, 0);
		sb_mmap(f, b, 200, 0);
		/* who enters the CPU: an "in" record, then an "out" one naming the next */
		fprintf(f, "{\"type\":\"switch\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":100,"
			"\"tid\":100,\"out\":false,\"preempt\":false,\"next_prev_pid\":0,"
			"\"next_prev_tid\":0}\n", ta - 1000);
		fprintf(f, "{\"type\":\"switch\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":100,"
			"\"tid\":100,\"out\":true,\"preempt\":true,\"next_prev_pid\":200,"
			"\"next_prev_tid\":200}\n", tb - 1000);
		fclose(f);
	}
	timed_meta(cap, 0);

	both.n = a->n + b->n;
	both.ips = malloc(both.n * sizeof(*both.ips));
	memcpy(both.ips, a->ips, a->n * sizeof(*both.ips));
	memcpy(both.ips + a->n, b->ips, b->n * sizeof(*both.ips));
	st = decode(F(&both, "o"), F(&both, "e"), "-j decode %s --insn=%s -J 2", cap,
		    F(&both, "insn"));
	line[0] = 0;
	o = json_object_from_file(F(&both, "o"));
	if (o && json_object_object_get_ex(o, "note", &v) && v)
		snprintf(line, sizeof(line), "%s", json_object_get_string(v));
	json_object_put(o);
	CHECK(st == 0 && clean_stderr(F(&both, "e")) && insn_equal(&both, F(&both, "insn"), &n, &first) &&
	      strstr(line, "switched at 2 context switches") &&
	      file_contains(F(&both, "insn"), "[process 100]") &&
	      file_contains(F(&both, "insn"), "[process 200]"),
	      "per-CPU capture of two processes with code at the same addresses: each decoded with "
	      "its own images at its turn (from the switch records), exactly %s's then %s's "
	      "instructions (%zu of %zu, first difference %zd)", a->name, b->name, n, both.n,
	      first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first);
	st = decode(F(&both, "po"), F(&both, "epo"), "decode %s --profile=%s -J 2", cap,
		    F(&both, "p.profile"));
	st |= decode(F(&both, "pw"), F(&both, "epw"), "decode %s --profile=%s --insn=/dev/null",
		     cap, F(&both, "w.profile"));
	CHECK(st == 0 && same_files(F(&both, "p.profile"), F(&both, "w.profile")),
	      "... and its --profile counted in the workers, each process's code with its own "
	      "symbols, equals the per-instruction walk");
	/* --folded: each process's stacks under its own root, COMM-PID */
	st = decode(F(&both, "fo"), F(&both, "efo"), "decode %s --folded=%s -J 2", cap,
		    F(&both, "fold"));
	{
		size_t len;
		char *txt = slurp(F(&both, "fold"), &len), *save = NULL, *ln;
		uint64_t in_a = 0, in_b = 0, other = 0;

		for (ln = txt ? strtok_r(txt, "\n", &save) : NULL; ln; ln = strtok_r(NULL, "\n", &save)) {
			const char *sp = strrchr(ln, ' ');
			uint64_t c = sp ? strtoull(sp + 1, NULL, 10) : 0;

			if (!strncmp(ln, "sw-a-100;", 9))
				in_a += c;
			else if (!strncmp(ln, "sw-b-200;", 9))
				in_b += c;
			else
				other += c ? c : 1;
		}
		free(txt);
		CHECK(st == 0 && in_a == a->n && in_b == b->n && !other,
		      "... and --folded roots each process's stacks at COMM-PID: sw-a-100 has %" PRIu64
		      " instructions (%zu), sw-b-200 %" PRIu64 " (%zu), %" PRIu64 " elsewhere", in_a,
		      a->n, in_b, b->n, other);
	}
	/*
	 * --tid and -F tid on a per-CPU capture: the thread the switch
	 * records say runs. Thread 101 of process 100 runs @a's trace, then
	 * from time @mid on thread 103 of the same process (same code, so no
	 * new image), then thread 202 of process 200 runs @b's. Each
	 * thread's slice is a piece of the ground truth, in order, and the
	 * three pieces are all of it: 101's a prefix of @a's instructions,
	 * 103's the rest of them, 202's exactly @b's.
	 */
	snprintf(cap, sizeof(cap), "%s/switch-threads.capture", work);
	tb = two_program_capture(a, b, cap);
	snprintf(path, sizeof(path), "%s/sideband.jsonl", cap);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "{\"type\":\"header\",\"format\":\"ipt-sideband\",\"version\":1}\n");
		sb_mmap(f, a, 100, 0);
		sb_mmap(f, b, 200, 0);
		fprintf(f, "{\"type\":\"switch\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":100,"
			"\"tid\":101,\"out\":false,\"preempt\":false,\"next_prev_pid\":0,"
			"\"next_prev_tid\":0}\n", ta - 1000);
		fprintf(f, "{\"type\":\"switch\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":100,"
			"\"tid\":101,\"out\":true,\"preempt\":true,\"next_prev_pid\":100,"
			"\"next_prev_tid\":103}\n", ta + 2);
		fprintf(f, "{\"type\":\"switch\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":100,"
			"\"tid\":103,\"out\":true,\"preempt\":true,\"next_prev_pid\":200,"
			"\"next_prev_tid\":202}\n", tb - 1000);
		fclose(f);
	}
	timed_meta(cap, 0);
	{
		static const long tids[] = { 101, 103, 202 };
		size_t cnt[3] = { 0 }, k, nf = 0, bad = 0, lines = 0, len;
		bool exact[3] = { false, false, false };
		int sts[3];
		char *txt, *ln, *save = NULL;

		st = decode(F(&both, "ft"), F(&both, "eft"), "-j decode %s -J 2 -F tid --insn=%s", cap,
			    F(&both, "ftid"));
		txt = slurp(F(&both, "ftid"), &len);
		/* the tid column of each instruction line: 101s, then 103s, then 202s */
		for (ln = txt ? strtok_r(txt, "\n", &save) : NULL; ln; ln = strtok_r(NULL, "\n", &save)) {
			long t = strtol(ln, NULL, 10);
			const char *rest = ln + 8;

			if (strlen(ln) < 9 || *rest == '[')
				continue;
			lines++;
			for (k = 0; k < 3 && tids[k] != t; k++)
				;
			if (k == 3 || k < nf)
				bad++;
			else
				nf = k, cnt[k]++;
		}
		free(txt);
		CHECK(st == 0 && lines == both.n && !bad && cnt[0] && cnt[1] && cnt[2] == b->n,
		      "per-CPU capture, -F tid: each instruction line starts with the thread the switch "
		      "records say runs, 101 then 103 (same process) then 202: %zu, %zu, %zu of %zu "
		      "lines (%zu out of order); %zu of them %s's", cnt[0], cnt[1], cnt[2], lines, bad,
		      b->n, b->name);
		for (k = 0; k < 3; k++) {
			struct run piece = { .n = k < 2 ? cnt[k] : b->n };
			char tag[16];

			piece.ips = k == 0 ? a->ips : k == 1 ? a->ips + cnt[0] : b->ips;
			snprintf(tag, sizeof(tag), "tid%zu", k);
			sts[k] = decode(F(&both, tag), F(&both, "etid"), "-j decode %s -J 2 --tid %ld "
					"--insn=%s.insn", cap, tids[k], F(&both, tag));
			snprintf(path, sizeof(path), "%s.insn", F(&both, tag));
			exact[k] = sts[k] == 0 && insn_equal(&piece, path, &n, &first) &&
				   json_int(F(&both, tag), "slice_instructions") == (int64_t)piece.n;
		}
		CHECK(cnt[0] + cnt[1] == a->n && exact[0] && exact[1] && exact[2],
		      "per-CPU capture, --tid 101 / 103 / 202: %s's first %zu instructions, the other "
		      "%zu, and %s's %zu, exactly (exit %d %d %d)", a->name, cnt[0], cnt[1], b->name,
		      b->n, sts[0], sts[1], sts[2]);
	}

	st = decode(F(&both, "o1"), F(&both, "e1"), "-j decode %s --pid 100 --insn=%s", cap,
		    F(&both, "insn1"));
	CHECK(!insn_equal(&both, F(&both, "insn1"), &n, &first),
	      "... and with --pid 100 (one process's images for the whole trace) it is not "
	      "(first difference at %zd, in %s's part)", first == SIZE_MAX ? (ssize_t)-1 :
	      (ssize_t)first, b->name);

	/*
	 * Mappings in time order: one thread (a per-thread capture) whose
	 * process runs @a, execs, maps @b's code at the same addresses and
	 * runs it.  The end state alone has only @b's mapping.
	 */
	snprintf(cap, sizeof(cap), "%s/exec.capture", work);
	tb = two_program_capture(a, b, cap);
	snprintf(path, sizeof(path), "%s/sideband.jsonl", cap);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "{\"type\":\"header\",\"format\":\"ipt-sideband\",\"version\":1}\n");
		sb_mmap(f, a, 100, 0);
		fprintf(f, "{\"type\":\"comm\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":100,"
			"\"tid\":100,\"comm\":\"b\",\"exec\":true}\n", tb - 1500);
		sb_mmap(f, b, 100, tb - 1000);
		fclose(f);
	}
	timed_meta(cap, 100);
	st = decode(F(&both, "x"), F(&both, "ex"), "-j decode %s --insn=%s -J 2", cap,
		    F(&both, "xinsn"));
	CHECK(tb && st == 0 && clean_stderr(F(&both, "ex")) &&
	      insn_equal(&both, F(&both, "xinsn"), &n, &first),
	      "per-thread capture of a process that execs a program with code at the same "
	      "addresses: each part decoded with the mappings of its time, exactly %s's then %s's "
	      "instructions (%zu of %zu, first difference %zd)", a->name, b->name, n, both.n,
	      first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first);
	free(both.ips);
}

/*
 * Symbols of switching processes (issue 17's caches): the per-CPU capture
 * of test_switching(), but each process maps its own program's ELF (two
 * static programs: different functions at the same addresses), so that
 * the same address has one name before the switch and another after it.
 * A symbol cache that answered for an address without asking whose code
 * it is would give the second program the first one's names.
 */

/* The sideband line of @r's ELF's executable segment mapped by @pid (a snapshot record). */
static bool sb_mmap_elf(FILE *f, const struct run *r, long pid)
{
	int fd = open(r->elf, O_RDONLY);
	Elf *e;
	size_t np = 0, k;
	bool ok = false;

	elf_version(EV_CURRENT);
	e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	for (k = 0; e && !elf_getphdrnum(e, &np) && k < np && !ok; k++) {
		GElf_Phdr ph;
		uint64_t start;

		if (!gelf_getphdr(e, (int)k, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		start = ph.p_vaddr & ~0xfffULL;
		fprintf(f, "{\"type\":\"mmap\",\"time\":null,\"cpu\":null,\"pid\":%ld,\"tid\":%ld,"
			"\"start\":%" PRIu64 ",\"len\":%" PRIu64 ",\"pgoff\":%" PRIu64 ",\"prot\":5,"
			"\"flags\":2,\"file\":\"%s\",\"build_id\":null}\n", pid, pid, start,
			ph.p_vaddr + ph.p_filesz - start, (uint64_t)(ph.p_offset & ~0xfffULL), r->elf);
		ok = true;
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * A per-CPU capture in @cap of @trace (@len bytes, from ptgen run @r1)
 * with a sideband: process 100 maps @r1's ELF and enters the CPU first;
 * with @r2, process 200 maps @r2's ELF and enters at @tb - 1000.
 */
static bool elf_capture(const char *cap, struct run *r1, struct run *r2, const void *trace,
			size_t len, uint64_t tb)
{
	char path[PATH_MAX + 64];
	bool ok;
	FILE *f;

	make_capture(r1, cap, trace, len);
	snprintf(path, sizeof(path), "%s/sideband.jsonl", cap);
	f = fopen(path, "w");
	if (!f)
		return false;
	fprintf(f, "{\"type\":\"header\",\"format\":\"ipt-sideband\",\"version\":1}\n");
	ok = sb_mmap_elf(f, r1, 100) && (!r2 || sb_mmap_elf(f, r2, 200));
	fprintf(f, "{\"type\":\"switch\",\"time\":%llu,\"cpu\":0,\"pid\":100,\"tid\":100,"
		"\"out\":false,\"preempt\":false,\"next_prev_pid\":0,\"next_prev_tid\":0}\n",
		0x100000000ULL - 1000);
	if (r2)
		fprintf(f, "{\"type\":\"switch\",\"time\":%" PRIu64 ",\"cpu\":0,\"pid\":100,"
			"\"tid\":100,\"out\":true,\"preempt\":true,\"next_prev_pid\":200,"
			"\"next_prev_tid\":200}\n", tb - 1000);
	fclose(f);
	timed_meta(cap, 0);
	return ok;
}

/* The instruction lines ("ADDRESS  SYMBOL+OFF") of --insn output @path, one string each. */
static char **insn_lines(const char *path, size_t *n)
{
	size_t len, cap = 0;
	char *s = slurp(path, &len), *save = NULL, *l, **v = NULL;

	*n = 0;
	for (l = s ? strtok_r(s, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
		if (strlen(l) < 18 || strspn(l, "0123456789abcdef") != 16 || l[16] != ' ')
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 4096;
			v = realloc(v, cap * sizeof(*v));
		}
		v[(*n)++] = strdup(l);
	}
	free(s);
	return v;
}

static int cmp_line(const void *x, const void *y)
{
	return strncmp(*(char *const *)x, *(char *const *)y, 16);
}

static void free_lines(char **v, size_t n)
{
	while (n--)
		free(v[n]);
	free(v);
}

static void test_switching_syms(struct run *a, struct run *b, const char *name)
{
	char cap[PATH_MAX + 32], cap_a[PATH_MAX + 32], cap_b[PATH_MAX + 32], path[PATH_MAX + 64];
	struct run both = { 0 };
	char *ta = NULL, *tbuf = NULL, **la, **lb, **lab, **sorted;
	size_t na = 0, nb = 0, nab = 0, i, lena = 0, lenb = 0, first = SIZE_MAX, renamed = 0;
	const char *jobs[] = { "-J 1", "-J 2" };
	uint64_t tb;
	bool ok;
	int st;

	snprintf(both.name, sizeof(both.name), "%s", name);
	snprintf(cap, sizeof(cap), "%s/%s.capture", work, name);
	snprintf(cap_a, sizeof(cap_a), "%s/%s-a.capture", work, name);
	snprintf(cap_b, sizeof(cap_b), "%s/%s-b.capture", work, name);
	tb = two_program_capture(a, b, cap);
	snprintf(path, sizeof(path), "%s/cpu0.pt", cap);
	ta = slurp(path, &lena);
	snprintf(path, sizeof(path), "%s/trace.pt", b->dir);
	tbuf = slurp(path, &lenb);
	/* each program alone, as the reference: its own process, its own ELF */
	ok = tb && ta && tbuf && lena > lenb &&
	     elf_capture(cap_a, a, NULL, ta, lena - lenb, 0) &&
	     elf_capture(cap_b, b, NULL, tbuf, lenb, 0) &&
	     elf_capture(cap, a, b, ta, lena, tb);
	free(ta);
	free(tbuf);
	if (!ok) {
		CHECK(0, "%s: the captures with the programs' ELF files are there", name);
		return;
	}
	st = decode(F(&both, "oa"), F(&both, "ea"), "decode %s --insn=%s -J 1", cap_a,
		    F(&both, "insn-a"));
	st |= decode(F(&both, "ob"), F(&both, "eb"), "decode %s --insn=%s -J 1", cap_b,
		     F(&both, "insn-b"));
	la = insn_lines(F(&both, "insn-a"), &na);
	lb = insn_lines(F(&both, "insn-b"), &nb);
	/* non-vacuous: addresses of both programs whose names differ */
	sorted = malloc((na + 1) * sizeof(*sorted));
	memcpy(sorted, la, na * sizeof(*sorted));
	qsort(sorted, na, sizeof(*sorted), cmp_line);
	for (i = 0; i < nb; i++) {
		char **hit = bsearch(&lb[i], sorted, na, sizeof(*sorted), cmp_line);

		renamed += hit && strcmp(*hit, lb[i]);
	}
	free(sorted);
	CHECK(st == 0 && na == a->n && nb == b->n && renamed > 1000 &&
	      clean_stderr(F(&both, "ea")) && clean_stderr(F(&both, "eb")),
	      "%s: each program alone decodes with its ELF's symbols (%zu and %zu "
	      "instructions; %zu of the second's at an address of the first's with another name)",
	      name, na, nb, renamed);
	for (size_t j = 0; j < sizeof(jobs) / sizeof(jobs[0]); j++) {
		st = decode(F(&both, "o"), F(&both, "e"), "decode %s --insn=%s %s", cap,
			    F(&both, "insn"), jobs[j]);
		lab = insn_lines(F(&both, "insn"), &nab);
		first = SIZE_MAX;
		for (i = 0; i < nab && i < na + nb && first == SIZE_MAX; i++)
			if (strcmp(lab[i], i < na ? la[i] : lb[i - na]))
				first = i;
		CHECK(st == 0 && clean_stderr(F(&both, "e")) && nab == na + nb &&
		      first == SIZE_MAX,
		      "%s %s: --insn of two processes with different functions at the same "
		      "addresses names each instruction as its own program alone does, no name "
		      "cached from before the switch (%zu of %zu lines, first difference %zd%s%s)",
		      name, jobs[j], nab, na + nb, first == SIZE_MAX ? (ssize_t)-1 : (ssize_t)first,
		      first == SIZE_MAX ? "" : ": ", first == SIZE_MAX ? "" : lab[first]);
		free_lines(lab, nab);
	}
	free_lines(la, na);
	free_lines(lb, nb);
}

/* ---- exit codes and messages (Documentation/man/ipttool.8, "EXIT STATUS") ---------------- */

/* Set @key of @dir's meta.json (in object @obj: "" top, else "cpu", "config", "traces[0]") to the JSON @val. */
static void meta_set(const char *dir, const char *obj, const char *key, const char *val)
{
	char path[PATH_MAX];
	struct json_object *o, *in = NULL;

	snprintf(path, sizeof(path), "%s/meta.json", dir);
	o = json_object_from_file(path);
	if (!o)
		return;
	if (!*obj)
		in = o;
	else if (!strcmp(obj, "traces[0]"))
		in = json_object_array_get_idx(json_object_object_get(o, "traces"), 0);
	else if (!json_object_object_get_ex(o, obj, &in)) {
		in = json_object_new_object();
		json_object_object_add(o, obj, in);
	}
	json_object_object_add(in, key, json_tokener_parse(val));
	json_object_to_file(path, o);
	json_object_put(o);
}

/* The exit status of "ipttool ARGS" with stdout to OUT and stderr to ERR. */
static int tool_run(const char *out, const char *err, const char *args)
{
	return sh("%s %s >%s 2>%s", tool, args, out, err);
}

/* @path holds one JSON object with "error" containing @needle, and nothing else. */
static bool json_error(const char *path, const char *needle)
{
	struct json_object *o = json_object_from_file(path), *v;
	bool ok = o && json_object_object_get_ex(o, "error", &v) &&
		  json_object_is_type(v, json_type_string) &&
		  strstr(json_object_get_string(v), needle);

	json_object_put(o);
	return ok;
}

/*
 * @path holds exactly one JSON document, an object (bpftool's -j rule):
 * it (a new reference), or NULL for none, two, or anything after it.
 */
static struct json_object *one_json(const char *path)
{
	size_t len = 0;
	char *s = slurp(path, &len);
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = s && tok ? json_tokener_parse_ex(tok, s, (int)len) : NULL;
	size_t end = tok ? json_tokener_get_parse_end(tok) : 0;

	while (o && end < len && (s[end] == '\n' || s[end] == ' '))
		end++;
	if (o && (end != len || !json_object_is_type(o, json_type_object))) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	free(s);
	return o;
}

/* One JSON document on stdout (@out) that is the summary, its "error" holding @needle. */
static bool summary_with_error(const char *out, const char *needle)
{
	struct json_object *o = one_json(out), *e, *t;
	bool ok = o && json_object_object_get_ex(o, "error", &e) &&
		  json_object_is_type(e, json_type_string) && strstr(json_object_get_string(e), needle) &&
		  json_object_object_get_ex(o, "traces", &t);

	json_object_put(o);
	return ok;
}

static void test_exit(struct run *r)
{
	static const char *const outs[] = { "--insn", "--calls", "--profile", "--folded",
					    "--blocks", "--packets", "--perfetto", "--drcov" };
	char raws[8192], cap[PATH_MAX], args[16384], want[128], *out = F(r, "xo"),
	     *err = F(r, "xe");
	char trace[PATH_MAX + 16];
	size_t tlen = 0, k;
	uint8_t *tbuf;
	int st;

	raw_args(r, raws, sizeof(raws), -1);
	snprintf(trace, sizeof(trace), "%s/trace.pt", r->dir);
	tbuf = (uint8_t *)slurp(trace, &tlen);
	snprintf(cap, sizeof(cap), "%s/%s.xcap", work, r->name);

	/* every output, to a full disk: exit 1 and a line naming the file */
	for (k = 0; k < sizeof(outs) / sizeof(outs[0]); k++) {
		snprintf(args, sizeof(args), "decode %s %s=/dev/full", r->dir, outs[k]);
		st = tool_run(out, err, args);
		snprintf(want, sizeof(want), "%s=/dev/full: No space left on device", outs[k]);
		CHECK(st == 1 && file_contains(err, want) && clean_stderr(err),
		      "%s: %s=/dev/full exits 1 (%d) saying '%s'", r->name, outs[k], st, want);
	}
	snprintf(args, sizeof(args), "decode %s --insn >/dev/full", r->dir);
	st = sh("%s %s 2>%s", tool, args, err);
	CHECK(st == 1 && file_contains(err, "writing standard output: No space left on device"),
	      "%s: --insn to a full stdout exits 1 (%d) and says so", r->name, st);
	st = sh("%s -j decode %s >/dev/full 2>%s", tool, r->dir, err);
	CHECK(st == 1 && file_contains(err, "writing standard output: No space left on device"),
	      "%s: the -j summary to a full stdout exits 1 (%d) and says so", r->name, st);
	st = sh("%s --help >/dev/full 2>%s", tool, err);
	CHECK(st == 1 && file_contains(err, "writing standard output: No space left on device"),
	      "ipttool --help to a full stdout exits 1 (%d) and says so", st);
	st = sh("%s decode --help >/dev/full 2>%s", tool, err);
	CHECK(st == 1 && file_contains(err, "writing standard output: No space left on device"),
	      "ipttool decode --help to a full stdout exits 1 (%d) and says so", st);

	/* two outputs to one file: refused before anything is written */
	sh("rm -f %s", F(r, "same"));
	snprintf(args, sizeof(args), "decode %s --insn=%s --calls=%s/./%s.same", r->dir,
		 F(r, "same"), work, r->name);
	st = tool_run(out, err, args);
	CHECK(st == 2 && file_contains(err, "name the same file") && access(F(r, "same"), F_OK),
	      "%s: --insn=F --calls=F (another spelling) is refused with exit 2 (%d), nothing "
	      "written", r->name, st);
	snprintf(args, sizeof(args), "decode %s --profile=%s --packets=%s", r->dir,
		 F(r, "same"), F(r, "same"));
	st = tool_run(out, err, args);
	CHECK(st == 2 && file_contains(err, "--profile=") && file_contains(err, "--packets="),
	      "%s: --profile=F --packets=F is refused with exit 2 (%d), naming both", r->name, st);

	/* --mtc-freq: IA32_RTIT_CTL.MTCFreq is 4 bits */
	snprintf(args, sizeof(args), "decode %s --mtc-freq 99", r->dir);
	st = tool_run(out, err, args);
	CHECK(st == 2 && file_contains(err, "--mtc-freq 99: want the MTC frequency encoding 0..15"),
	      "%s: --mtc-freq 99 is refused (%d)", r->name, st);
	snprintf(args, sizeof(args), "decode %s --mtc-freq 15", r->dir);
	st = tool_run(out, err, args);
	CHECK(st == 0, "%s: --mtc-freq 15 is accepted (%d)", r->name, st);

	/* a complete capture: 0; then what its metadata says is lost: 3 and a warning */
	make_capture(r, cap, tbuf, tlen);
	snprintf(args, sizeof(args), "decode %s %s", cap, raws);
	st = tool_run(out, err, args);
	CHECK(st == 0 && !file_contains(err, "warning"), "%s: a complete capture decodes with exit "
	      "0 (%d), no warning", r->name, st);
	{
		static const struct { const char *obj, *key, *val, *says; } lost[] = {
			{ "", "complete", "false", "the capture is incomplete" },
			{ "traces[0]", "wrapped", "true", "the ring wrapped" },
			{ "traces[0]", "loss", "\"truncated\"", "the buffer filled" },
			{ "traces[0]", "write_error", "\"No space left on device\"", "saving it failed" },
			{ "traces[0]", "bytes_lost", "4096", "4096 bytes were overwritten" },
			{ "traces[0]", "suspended", "true", "the system suspended" },
			{ "traces[0]", "missed", "2", "2 thread(s) it created were not traced" },
			{ "traces[0]", "busy", "3", "3 time(s) another tracer" },
		};

		for (k = 0; k < sizeof(lost) / sizeof(lost[0]); k++) {
			make_capture(r, cap, tbuf, tlen);
			meta_set(cap, lost[k].obj, lost[k].key, lost[k].val);
			st = tool_run(out, err, args);
			CHECK(st == 3 && file_contains(err, "warning: ") &&
			      file_contains(err, lost[k].says),
			      "%s: meta.json %s%s%s: %s: exit 3 (%d) with a warning", r->name,
			      lost[k].obj, *lost[k].obj ? "." : "", lost[k].key, lost[k].val, st);
		}
	}
	/* cpu0.pt shorter than meta.json says: 3; and -j has the warning too */
	make_capture(r, cap, tbuf, tlen);
	sh("truncate -s %zu %s/cpu0.pt", tlen - 40, cap);
	st = tool_run(out, err, args);
	CHECK(st == 3 && file_contains(err, "meta.json says") && file_contains(err, "cut short"),
	      "%s: a truncated cpu0.pt: exit 3 (%d) and a warning", r->name, st);
	snprintf(args, sizeof(args), "-j decode %s %s", cap, raws);
	st = tool_run(out, err, args);
	{
		struct json_object *o = json_object_from_file(out), *w, *c;

		CHECK(st == 3 && o && json_object_object_get_ex(o, "warnings", &w) &&
		      json_object_array_length(w) >= 1 && json_object_object_get_ex(o, "complete", &c) &&
		      !json_object_get_boolean(c),
		      "%s: -j: the summary says \"complete\": false with the warnings (exit %d)",
		      r->name, st);
		json_object_put(o);
	}
	/* a raw trace cut inside its last packet of 2 bytes or more (libipt finds it) */
	{
		struct pt_config pc;
		struct pt_packet_decoder *pd;
		struct pt_packet pkt;
		uint64_t off = 0, cut = 0;

		pt_config_init(&pc);
		pc.begin = tbuf;
		pc.end = tbuf + tlen;
		pd = pt_pkt_alloc_decoder(&pc);
		if (pd && pt_pkt_sync_set(pd, 0) >= 0)
			while (pt_pkt_get_offset(pd, &off) >= 0 &&
			       pt_pkt_next(pd, &pkt, sizeof(pkt)) >= 0)
				if (pkt.size >= 2)
					cut = off + 1;
		pt_pkt_free_decoder(pd);
		spew(F(r, "cut.pt"), tbuf, cut);
		snprintf(args, sizeof(args), "decode --pt %s %s", F(r, "cut.pt"), raws);
		st = tool_run(out, err, args);
		snprintf(want, sizeof(want), "ends inside a packet at offset %#" PRIx64, cut - 1);
		CHECK(cut > tlen / 2 && st == 3 && file_contains(err, want),
		      "%s: a raw trace cut inside its last long packet (at %#" PRIx64 " of %zu bytes): "
		      "exit 3 (%d) and '%s'", r->name, cut, tlen, st, want);
	}

	/* invalid meta.json fields: refused, naming the field and what it wants */
	{
		static const struct { const char *obj, *key, *val, *says; } bad[] = {
			{ "", "mode", "\"banana\"", "\"mode\" is \"banana\": want \"cpu\" or \"thread\"" },
			{ "cpu", "family", "\"six\"", "\"cpu.family\" is \"six\": want an integer" },
			{ "cpu", "model", "300", "\"cpu.model\" is 300: want an integer 0..255" },
			{ "config", "mtc_freq", "99", "\"config.mtc_freq\" is 99: want an integer 0..15" },
			{ "config", "tsc", "\"yes\"", "\"config.tsc\" is \"yes\": want true or false" },
			{ "", "complete", "1", "\"complete\" is 1: want true or false" },
			{ "traces[0]", "file", "7", "\"traces[0].file\" is 7" },
			{ "traces[0]", "size", "-5", "\"traces[0].size\" is -5" },
		};

		snprintf(args, sizeof(args), "decode %s %s", cap, raws);
		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			make_capture(r, cap, tbuf, tlen);
			meta_set(cap, bad[k].obj, bad[k].key, bad[k].val);
			st = tool_run(out, err, args);
			CHECK(st == 2 && file_contains(err, bad[k].says),
			      "%s: meta.json %s%s%s = %s is refused (exit %d) saying '%s'", r->name,
			      bad[k].obj, *bad[k].obj ? "." : "", bad[k].key, bad[k].val, st,
			      bad[k].says);
		}
	}

	/* --help of every command: usage on stdout, exit 0 */
	{
		static const char *const cmds[] = { "caps", "record", "info", "start", "status",
						    "dump", "stop", "decode" };

		for (k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
			snprintf(args, sizeof(args), "%s --help", cmds[k]);
			st = tool_run(out, err, args);
			CHECK(st == 0 && file_contains(out, "Usage: ipttool"),
			      "ipttool %s --help: usage on stdout, exit 0 (%d)", cmds[k], st);
		}
	}

	/* -j: errors as {"error": ...} on stdout; addresses as hex strings */
	snprintf(args, sizeof(args), "-j decode %s --mtc-freq 99", r->dir);
	st = tool_run(out, err, args);
	CHECK(st == 2 && json_error(out, "--mtc-freq 99") && !file_contains(err, "ipttool:"),
	      "%s: -j: a usage error is {\"error\": ...} on stdout (exit %d)", r->name, st);
	snprintf(args, sizeof(args), "decode %s --bogus -j", r->dir);
	st = tool_run(out, err, args);
	CHECK(st == 2 && json_error(out, "option '--bogus' is unknown"),
	      "%s: decode --bogus -j: the unknown option is {\"error\": ...} on stdout (exit %d)",
	      r->name, st);
	st = tool_run(out, err, "-j --bogus");
	CHECK(st == 2 && json_error(out, "option '--bogus' is unknown"),
	      "ipttool -j --bogus: {\"error\": ...} on stdout (exit %d)", st);
	snprintf(args, sizeof(args), "decode -j %s/nonexistent", work);
	st = tool_run(out, err, args);
	CHECK(st == 2 && json_error(out, "No such file or directory"),
	      "decode -j: a missing directory is {\"error\": ...} on stdout (exit %d)", st);
	/* -j: exactly one JSON document on stdout, the error in the summary, exit as without */
	snprintf(args, sizeof(args), "-j decode %s --insn=/dev/full", r->dir);
	st = tool_run(out, err, args);
	CHECK(st == 1 && summary_with_error(out, "--insn=/dev/full: No space left on device"),
	      "%s: -j --insn=/dev/full: one JSON document on stdout, the summary with the error in "
	      "it, exit 1 (%d)", r->name, st);
	sh("rm -f %s && touch %s", F(r, "empty.pt"), F(r, "empty.pt"));
	snprintf(args, sizeof(args), "-j decode --pt %s", F(r, "empty.pt"));
	st = tool_run(out, err, args);
	CHECK(st == 1 && summary_with_error(out, "empty (no trace was recorded)"),
	      "%s: -j of traces that cannot be decoded: one JSON document, the summary with the "
	      "error, exit 1 (%d)", r->name, st);
	snprintf(args, sizeof(args), "-j decode %s", r->dir);
	st = tool_run(out, err, args);
	{
		struct json_object *o = one_json(out), *e = NULL;

		CHECK(st == 0 && o && json_object_object_get_ex(o, "instructions", &e) &&
		      !json_object_object_get_ex(o, "error", NULL),
		      "%s: -j without an error: one JSON document, no \"error\" key (%d)", r->name, st);
		json_object_put(o);
	}
	snprintf(args, sizeof(args), "-j decode --pt %s", trace);
	st = tool_run(out, err, args);
	{
		struct json_object *o = json_object_from_file(out), *t, *e, *ip = NULL;

		if (o && json_object_object_get_ex(o, "traces", &t) &&
		    json_object_object_get_ex(json_object_array_get_idx(t, 0), "errors", &e))
			json_object_object_get_ex(json_object_array_get_idx(e, 0), "ip", &ip);
		CHECK(st == 1 && ip && json_object_is_type(ip, json_type_string) &&
		      !strncmp(json_object_get_string(ip), "0x", 2),
		      "%s: -j without code: errors[].ip is a hex string (%s)", r->name,
		      ip ? json_object_to_json_string(ip) : "none");
		json_object_put(o);
	}
	free(tbuf);
}

/* A ptgen directory of a threaded program: every thread's trace, or exit 3. */
static void test_exit_threads(void)
{
	char dir[PATH_MAX], args[PATH_MAX + 64], out[PATH_MAX], err[PATH_MAX], line[PATH_MAX + 16];
	int64_t want = 0, got = -1, ntr = -1;
	struct json_object *o, *v;
	FILE *f;
	int st;

	snprintf(dir, sizeof(dir), "%s/threads", work);
	snprintf(out, sizeof(out), "%s/threads.out", work);
	snprintf(err, sizeof(err), "%s/threads.err", work);
	st = sh("%s/selftests/ptgen -o %s -- %s/groundtruth/threads >%s.log 2>&1", build, dir,
		build, dir);
	snprintf(line, sizeof(line), "%s/threads.txt", dir);
	f = fopen(line, "r");
	while (f && fgets(line, sizeof(line), f)) {
		long long n;

		if (sscanf(line, "%*u %*d %lld", &n) == 1)
			want += n;
	}
	if (f)
		fclose(f);
	CHECK(st == 0 && want > 0, "threads: ptgen traced the threaded program (%" PRId64
	      " instructions)", want);
	snprintf(args, sizeof(args), "-j decode %s", dir);
	st = tool_run(out, err, args);
	o = json_object_from_file(out);
	if (o && json_object_object_get_ex(o, "instructions", &v))
		got = json_object_get_int64(v);
	if (o && json_object_object_get_ex(o, "traces", &v))
		ntr = (int64_t)json_object_array_length(v);
	json_object_put(o);
	CHECK(st == 0 && ntr == 3 && got == want,
	      "threads: all %" PRId64 " traces are decoded: %" PRId64 " of %" PRId64
	      " instructions (exit %d)", ntr, got, want, st);
	/* a followed child's directory is not decoded with the parent: says so, exit 3 */
	sh("mkdir -p %s/proc-1", dir);
	snprintf(args, sizeof(args), "decode %s", dir);
	st = tool_run(out, err, args);
	CHECK(st == 3 && file_contains(err, "proc-1: a child process's traces are not decoded"),
	      "threads: a proc-N directory is named as not decoded, exit 3 (%d)", st);
}

/* ---- main ----------------------------------------------------------------------------------- */

static bool ptgen(struct run *r, const char *opts, const char *cmd)
{
	return sh("%s/selftests/ptgen %s -o %s -- %s >%s.log 2>&1", build, opts, r->dir, cmd,
		  r->dir) == 0;
}

int main(int argc, char **argv)
{
	static struct run runs[] = {
		{ .name = "recurse-psb256", .static_prog = true },
		{ .name = "calls" },
		{ .name = "signals", .static_prog = true },
		{ .name = "syscalls-jit", .static_prog = true },
		{ .name = "vdso", .static_prog = true },
		{ .name = "calls-timed" },
		{ .name = "sw-recurse", .static_prog = true },
		{ .name = "sw-loops", .static_prog = true },
	};
	const char *cmds[] = { "--psb-period 256|recurse", "|calls", "|signals", "|syscalls", "|vdso",
			       "--tsc --mtc 0|calls", "--tsc|recurse", "--tsc|loops" };
	size_t i, nr = sizeof(runs) / sizeof(runs[0]);
	pid_t pids[8];
	int status;
	/*
	 * IPT_DECODE_TEST=stream-gap: only the streamed-capture test, on the
	 * first run; =json-names, =meta-gaps, =unfinished: only that test
	 * (test_json_names(), ...), on the first run;
	 * =switching-syms: only test_switching_syms(), on sw-*; =folded-deep:
	 * only test_folded_deep(), on calls.
	 */
	const char *only = getenv("IPT_DECODE_TEST");
	bool only_sw = only && !strcmp(only, "switching-syms");

	if (argc > 3 && !strcmp(argv[1], "--peak-kb"))
		return peak_kb_main(argv + 2);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!tool_test_setup(argc, argv, "decode-tests", &status))
		return status;
	ZydisDecoderInit(&zd, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	{
		/*
		 * The decoder library never ends the process (issue 14 item 5):
		 * out of memory goes to the application's handler
		 * (dec_set_nomem); no object of the library calls exit.  The
		 * objects are the ones the Makefile builds for it (DECODE_SRC,
		 * as IPT_DECODE_OBJS), each of which must exist; an object
		 * left in obj/decode/ by an older layout is not the library's.
		 */
		int objs = sh("cd %s/userspace/obj && for o in %s; do test -s $o || exit 1; done",
			      build, IPT_DECODE_OBJS);
		int calls = sh("cd %s/userspace/obj && nm -u %s | grep -qwE 'exit|_exit|_Exit'",
			       build, IPT_DECODE_OBJS);

		CHECK(objs == 0 && calls != 0, "libiptdecode's objects call no exit() "
		      "(objects %s, exit %s)", objs ? "missing" : "found",
		      calls ? "not called" : "called");
	}
	if (only && (!strcmp(only, "stream-gap") || !strcmp(only, "json-names") ||
		     !strcmp(only, "meta-gaps") || !strcmp(only, "unfinished")))
		nr = 1;
	if (only && !strcmp(only, "folded-deep"))
		nr = 2;
	/* ptgen, two at a time (each tracer/tracee pair keeps a CPU busy) */
	for (i = 0; i < nr; i++) {
		char opts[128], prog[PATH_MAX + 64];
		const char *bar = strchr(cmds[i], '|');

		snprintf(runs[i].dir, sizeof(runs[i].dir), "%s/%.63s", work, runs[i].name);
		snprintf(opts, sizeof(opts), "%.*s", (int)(bar - cmds[i]), cmds[i]);
		snprintf(prog, sizeof(prog), "%s/groundtruth/%s", build, bar + 1);
		if (i >= 2 && pids[i - 2] > 0) {
			int wst;

			waitpid(pids[i - 2], &wst, 0);
		}
		pids[i] = -1;
		if (only_sw && strncmp(runs[i].name, "sw-", 3))
			continue;
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(ptgen(&runs[i], opts, prog) ? 0 : 1);
	}
	for (i = nr >= 2 ? nr - 2 : 0; i < nr; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
	for (i = 0; i < nr; i++) {
		bool ok;

		if (only_sw && strncmp(runs[i].name, "sw-", 3))
			continue;
		ok = load_run(&runs[i]);

		CHECK(ok, "%s: ptgen made a ground-truth trace (%zu instructions)", runs[i].name,
		      runs[i].n);
		if (!ok)
			continue;
		if (only_sw)
			continue;
		if (only && !strcmp(only, "folded-deep")) {
			if (i == 1)
				test_folded_deep(&runs[i]);
			continue;
		}
		if (only) {
			if (!strcmp(only, "json-names"))
				test_json_names(&runs[i]);
			else if (!strcmp(only, "meta-gaps"))
				test_meta_gaps(&runs[i]);
			else if (!strcmp(only, "unfinished"))
				test_unfinished(&runs[i]);
			else
				test_stream_gap(&runs[i]);
			return tap_done();
		}
		if (!strcmp(runs[i].name, "calls-timed"))
			test_timed(&runs[i]);
		else if (strncmp(runs[i].name, "sw-", 3))
			test_run(&runs[i], i < 3);
		if (strncmp(runs[i].name, "sw-", 3))
			test_ptxed(&runs[i]);
	}
	if (only && !strcmp(only, "folded-deep"))
		return tap_done();
	{
		struct run *sa = NULL, *sb = NULL;

		for (i = 0; i < nr; i++)
			if (runs[i].n && !strcmp(runs[i].name, "sw-recurse"))
				sa = &runs[i];
			else if (runs[i].n && !strcmp(runs[i].name, "sw-loops"))
				sb = &runs[i];
		if (sa && sb && !only_sw)
			test_switching(sa, sb);
		if (sa && sb)
			test_switching_syms(sa, sb, "switching-syms");
		if (sa) {
			/*
			 * The same code at the same addresses under other
			 * names: the first program's ELF with every symbol
			 * renamed b_NAME (a separate file: its own sections).
			 */
			static struct run twin;

			twin = *sa;
			snprintf(twin.elf, sizeof(twin.elf), "%s/sw-twin.elf", work);
			if (sh("objcopy --prefix-symbols=b_ %s %s", sa->elf, twin.elf) == 0)
				test_switching_syms(sa, &twin, "switching-twin");
			else
				CHECK(0, "switching-twin: objcopy --prefix-symbols makes the twin ELF");
		}
		if (only_sw)
			return tap_done();
	}
	if (runs[0].n) {
		int st = decode(F(&runs[0], "seg"), F(&runs[0], "eseg"), "-j decode %s", runs[0].dir);
		struct json_object *o = json_object_from_file(F(&runs[0], "seg")), *t, *v;
		int64_t segs = -1;

		if (o && json_object_object_get_ex(o, "traces", &t) &&
		    json_object_object_get_ex(json_object_array_get_idx(t, 0), "segments", &v))
			segs = json_object_get_int64(v);
		CHECK(st == 0 && segs >= 8, "%s: the trace is split into %" PRId64 " segments, so -J 4 "
		      "really decodes in parallel", runs[0].name, segs);
		CHECK(!file_contains(F(&runs[0], "eseg"), "decode: "),
		      "%s: no progress line when stderr is not a terminal", runs[0].name);
		st = decode(F(&runs[0], "pg"), F(&runs[0], "epg"), "decode %s --progress -J 2",
			    runs[0].dir);
		{
			char want[64], *txt, *q;
			size_t len = 0;
			int64_t lines = 0;

			snprintf(want, sizeof(want), "decode: 100%% (%" PRId64 " of %" PRId64 " segments, ",
				 segs, segs);
			txt = slurp(F(&runs[0], "epg"), &len);
			for (q = txt; q && (q = strstr(q, "decode: ")); q++)
				lines++;
			free(txt);
			/* up to 100 segments, every one moves the percentage */
			CHECK(st == 0 && lines == segs && file_contains(F(&runs[0], "epg"), want),
			      "%s: --progress: a line per segment (%" PRId64 " of %" PRId64 "), ending "
			      "at 100%%", runs[0].name, lines, segs);
		}
		json_object_put(o);
		test_inputs(&runs[0]);
		test_stream_gap(&runs[0]);
		test_json_names(&runs[0]);
		test_meta_gaps(&runs[0]);
		test_unfinished(&runs[0]);
		test_kcore(&runs[0]);
		test_kcore_modules(&runs[1]);
		/* --folded-time without TSC packets: says so, counts instructions */
		st = decode(F(&runs[0], "fu"), F(&runs[0], "efu"), "decode %s --folded=%s --folded-time",
			    runs[0].dir, F(&runs[0], "fu.folded"));
		CHECK(st == 0 && file_contains(F(&runs[0], "efu"), "no TSC packets") &&
		      same_files(F(&runs[0], "fu.folded"), F(&runs[0], "s.folded")),
		      "%s: --folded-time on an untimed trace: a warning, and --folded's instruction "
		      "counts", runs[0].name);
		/* on a terminal (script(1) gives one): the progress line, unless -q */
		sh("script -qec '%s decode %s' /dev/null >%s 2>&1", tool, runs[0].dir,
		   F(&runs[0], "tty"));
		sh("script -qec '%s decode -q %s' /dev/null >%s 2>&1", tool, runs[0].dir,
		   F(&runs[0], "ttyq"));
		CHECK(file_contains(F(&runs[0], "tty"), "decode: 100% (") &&
		      file_contains(F(&runs[0], "tty"), "\033[K") &&
		      file_contains(F(&runs[0], "ttyq"), "decoded ") &&
		      !file_contains(F(&runs[0], "ttyq"), "decode: "),
		      "%s: on a terminal the progress line is drawn in place; -q leaves it out",
		      runs[0].name);
	}
	if (runs[0].n && runs[1].n)
		test_per_thread(&runs[1], &runs[0]);
	if (runs[1].n) {
		test_inputs(&runs[1]);
		test_sideband(&runs[1]);
		test_corrupt(&runs[1]);
		test_exit(&runs[1]);
		test_folded_deep(&runs[1]);
	}
	test_exit_threads();
	test_modes(&runs[1]);
	return tap_done();
}

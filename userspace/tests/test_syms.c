// SPDX-License-Identifier: GPL-2.0
/*
 * Tests of ipttool decode's symbols (userspace/decode/syms.c), on programs
 * built here and traced with ptgen: names from separate debug files found
 * by .gnu_debuglink and in a build-id tree (both under a temporary
 * directory given with --debuginfo-path, so nothing depends on what debug
 * packages the machine has), assembly labels (STT_NOTYPE), PLT entries
 * named NAME@plt with lazy and immediate binding, per-address --profile
 * rows for code without symbols, and -J 2 giving -J 1's outputs.  Every
 * expectation has a counterpart that must not hold (the name absent
 * without the debug file, ...), so a lookup that finds nothing fails.
 * TAP on stdout.
 *
 *   test_syms [BUILD_DIR]     BUILD_DIR: the top build/ (default: ../ of
 *                             this program's directory)
 *
 * Needs 'make selftests' (ptgen) and 'make userspace'; cc, objcopy, strip.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "tool_test.h"

/* Lines of @path that contain @needle. */
static int count_lines(const char *path, const char *needle)
{
	char *s = slurp(path, NULL), *p, *nl;
	int n = 0;

	for (p = s; p && *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		if (memmem(p, (size_t)(nl - p), needle, strlen(needle)))
			n++;
		if (!*nl)
			break;
	}
	free(s);
	return n;
}

static bool same_files(const char *a, const char *b)
{
	return sh("cmp -s %s %s", a, b) == 0;
}

/* ipttool decode ARGS > W/OUT 2> W/OUT.err; its exit status. */
static int decode_work(const char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int decode_work(const char *out, const char *fmt, ...)
{
	char args[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	return sh("%s decode %s >%s/%s 2>%s/%s.err", tool, args, work, out, work, out);
}

static char *W(const char *name)
{
	static char buf[8][PATH_MAX];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", work, name);
	return buf[i];
}

static bool ptgen(const char *dir, const char *prog)
{
	return sh("rm -rf %s/%s && %s/selftests/ptgen -o %s/%s -- %s/%s >%s/%s.log 2>&1", work,
		  dir, build, work, dir, work, prog, work, dir) == 0;
}

static const char lib_c[] =
	"int foo(int x) { return x * 3 + 1; }\n"
	"int bar(int x) { return x ^ 5; }\n";

static const char plt_c[] =
	"int foo(int);\n"
	"int bar(int);\n"
	"__attribute__((noinline)) int work(int n)\n"
	"{\n"
	"	int i, s = 0;\n"
	"	for (i = 0; i < n; i++)\n"
	"		s += foo(i) + bar(i);\n"
	"	return s;\n"
	"}\n"
	"int main(void) { return work(3) & 1; }\n";

/*
 * A static function only the debug file names (the stripped program's
 * .dynsym has no local symbols), and enough work in it to be seen.
 */
static const char dbg_c[] =
	"#include <stdio.h>\n"
	"static __attribute__((noinline)) long secret_loop(long n)\n"
	"{\n"
	"	long s = 0;\n"
	"	for (long i = 0; i < n; i++)\n"
	"		s += i * (i ^ 3);\n"
	"	return s;\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	(void)argv;\n"
	"	return (int)(secret_loop(2000 + argc) & 1);\n"
	"}\n";

/*
 * A static program in assembly: _start and tail_label are labels
 * (STT_NOTYPE); the global label lbl sits at work's address (the function
 * wins, though lbl's shorter name would win between equals);
 * inner_label is inside the sized function work (work names it); .Lloop is
 * a local label kept in .symtab by as -L (never a name).
 */
static const char asm_s[] =
	"	.text\n"
	"	.globl _start\n"
	"_start:\n"
	"	call work\n"
	"	call tail_label\n"
	"	mov $60, %eax\n"
	"	xor %edi, %edi\n"
	"	syscall\n"
	"	.globl work\n"
	"	.type work, @function\n"
	"	.globl lbl\n"
	"lbl:\n"
	"work:\n"
	"	mov $50, %ecx\n"
	".Lloop:\n"
	"	dec %ecx\n"
	"inner_label:\n"
	"	jnz .Lloop\n"
	"	ret\n"
	"	.size work, .-work\n"
	"tail_label:\n"
	"	mov $40, %ecx\n"
	"1:	dec %ecx\n"
	"	jnz 1b\n"
	"	ret\n";

static bool write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	bool ok = f && fputs(text, f) >= 0;

	if (f && fclose(f))
		ok = false;
	return ok;
}

/* The build-id of ELF @path as hex, from readelf -n. */
static bool build_id(const char *path, char *id, size_t len)
{
	char cmd[PATH_MAX + 128];
	FILE *p;
	bool ok;

	snprintf(cmd, sizeof(cmd), "readelf -n %s | awk '/Build ID:/ { print $3 }'", path);
	p = popen(cmd, "r");
	if (!p)
		return false;
	ok = fgets(id, (int)len, p) != NULL;
	pclose(p);
	if (ok)
		id[strcspn(id, "\n")] = 0;
	return ok && strlen(id) > 2;
}

/*
 * PLT entries: a program calling foo and bar in a shared library, linked
 * with -z now, with lazy binding, and with IBT PLTs (.plt.sec); --calls, --insn, --folded and
 * --perfetto name the stubs foo@plt and bar@plt (before: _init+0x...,
 * _init having no size).
 */
static void test_plt(void)
{
	static const char *const binds[] = { "now", "lazy", "ibt" };
	static const char *const flags[] = {
		"-Wl,-z,now", "-Wl,-z,lazy",
		/* IBT: the jumps through the GOT are in .plt.sec, after endbr64 */
		"-fcf-protection=full -Wl,-z,ibtplt -Wl,-z,lazy",
	};
	size_t i;

	if (!write_file(W("lib.c"), lib_c) || !write_file(W("plt.c"), plt_c) ||
	    sh("cd %s && cc -O1 -shared -fPIC -o libsyt.so lib.c", work)) {
		CHECK(0, "plt: the shared library builds");
		return;
	}
	for (i = 0; i < 3; i++) {
		char prog[32], dir[32], out[64];
		int st;

		snprintf(prog, sizeof(prog), "plt-%s", binds[i]);
		snprintf(dir, sizeof(dir), "g-plt-%s", binds[i]);
		if (sh("cd %s && cc -O1 -fno-inline -o %s plt.c -L. -lsyt -Wl,-rpath,%s %s",
		       work, prog, work, flags[i]) || !ptgen(dir, prog)) {
			CHECK(0, "plt %s: the program builds and ptgen traces it", binds[i]);
			continue;
		}
		snprintf(out, sizeof(out), "%s.calls", dir);
		st = decode_work(out, "%s --calls", W(dir));
		CHECK(st == 0 && count_lines(W(out), "> foo@plt+0 ") == 3 &&
		      count_lines(W(out), "> bar@plt+0 ") == 3,
		      "plt -z %s: --calls shows the 3 calls each to foo@plt and bar@plt", binds[i]);
		snprintf(out, sizeof(out), "%s.insn", dir);
		st = decode_work(out, "%s --insn", W(dir));
		CHECK(st == 0 && file_contains(W(out), " foo@plt+0 ") &&
		      file_contains(W(out), " bar@plt+0 ") &&
		      (i != 1 || (file_contains(W(out), " foo@plt+0x6 ") &&
				  file_contains(W(out), " bar@plt+0xb "))),
		      "plt -z %s: --insn names the stubs' instructions NAME@plt+0xOFF%s", binds[i],
		      i == 1 ? " (lazy: the push and jmp to the resolver after the first call too)" : "");
		if (i == 2)
			CHECK(sh("readelf -SW %s | grep -q ' .plt.sec '", W(prog)) == 0,
			      "plt ibt: the program has a .plt.sec (the names above came from it)");
		snprintf(out, sizeof(out), "%s.folded", dir);
		st = decode_work(out, "%s --folded", W(dir));
		CHECK(st == 0 && file_contains(W(out), ";work;foo@plt ") &&
		      file_contains(W(out), ";work;bar@plt "),
		      "plt -z %s: --folded has work;foo@plt and work;bar@plt frames", binds[i]);
		snprintf(out, sizeof(out), "%s.json", dir);
		st = decode_work(out, "%s --perfetto=%s", W(dir), W(out));
		CHECK(st == 0 && file_contains(W(out), "\"name\":\"foo@plt\""),
		      "plt -z %s: --perfetto names a span foo@plt", binds[i]);
		snprintf(out, sizeof(out), "%s.calls.err", dir);
		CHECK(clean_stderr(W(out)), "plt -z %s: the sanitizers said nothing", binds[i]);
	}
}

/*
 * Separate debug files: a stripped program whose debug file is reached
 * by .gnu_debuglink (under DIR/<the program's directory>/) and one found
 * by build-id (DIR/.build-id/xx/rest.debug), DIR given by
 * --debuginfo-path.  Without the option neither names secret_loop.
 */
static void test_debug_files(void)
{
	char id[128];
	int st;

	if (!write_file(W("dbg.c"), dbg_c) ||
	    sh("cd %s && mkdir -p dl bid && cc -O1 -g -Wl,--build-id -o dl/prog dbg.c && "
	       "cp dl/prog bid/prog && "
	       "objcopy --only-keep-debug dl/prog dl/prog.debug && "
	       "objcopy --strip-all dl/prog && "
	       "objcopy --add-gnu-debuglink=dl/prog.debug dl/prog && "
	       "mkdir -p dl-tree%s/dl && mv dl/prog.debug dl-tree%s/dl/ && "
	       "objcopy --only-keep-debug bid/prog bid/prog.debug && objcopy --strip-all bid/prog",
	       work, work, work) || !build_id(W("bid/prog"), id, sizeof(id)) ||
	    sh("cd %s && mkdir -p bid-tree/.build-id/%.2s && mv bid/prog.debug "
	       "bid-tree/.build-id/%.2s/%s.debug", work, id, id, id + 2)) {
		CHECK(0, "debug files: the stripped programs and their debug trees build");
		return;
	}
	CHECK(sh("readelf -sW %s | grep -q secret_loop", W("dl/prog")) != 0 &&
	      sh("readelf -sW %s | grep -q secret_loop", W("bid/prog")) != 0,
	      "debug files: the stripped programs themselves do not name secret_loop");
	if (!ptgen("g-dl", "dl/prog") || !ptgen("g-bid", "bid/prog")) {
		CHECK(0, "debug files: ptgen traces both programs");
		return;
	}
	st = decode_work("dl0.profile", "%s --profile", W("g-dl"));
	CHECK(st == 0 && !file_contains(W("dl0.profile"), "secret_loop"),
	      "debuglink: without --debuginfo-path the debug file is not found (no secret_loop)");
	st = decode_work("dl.profile", "%s --profile --debuginfo-path %s", W("g-dl"), W("dl-tree"));
	CHECK(st == 0 && file_contains(W("dl.profile"), " secret_loop ") &&
	      file_contains(W("dl.profile"), " main "),
	      "debuglink: --debuginfo-path DIR finds DIR/<dir>/prog.debug: secret_loop and main");
	st = decode_work("dl.lines", "%s --insn --lines --debuginfo-path %s", W("g-dl"), W("dl-tree"));
	CHECK(st == 0 && file_contains(W("dl.lines"), "dbg.c:6"),
	      "debuglink: --lines reads the debug file's DWARF (dbg.c:6, secret_loop's loop)");
	st = decode_work("dl.drcov.out", "%s --drcov=%s --debuginfo-path %s", W("g-dl"), W("dl.drcov"),
		    W("dl-tree"));
	CHECK(st == 0 && file_contains(W("dl.drcov"), "/dl/prog\n") &&
	      !file_contains(W("dl.drcov"), ".debug"),
	      "debuglink: --drcov's module is the program, not its debug file");
	st = decode_work("bid0.profile", "%s --profile", W("g-bid"));
	CHECK(st == 0 && !file_contains(W("bid0.profile"), "secret_loop"),
	      "build-id: without --debuginfo-path no secret_loop");
	st = decode_work("bid.profile", "%s --profile --debuginfo-path %s", W("g-bid"), W("bid-tree"));
	CHECK(st == 0 && file_contains(W("bid.profile"), " secret_loop ") &&
	      file_contains(W("bid.profile"), " main "),
	      "build-id: --debuginfo-path DIR finds DIR/.build-id/%.2s/%s.debug", id, id + 2);
	st = decode_work("bid.calls", "%s --calls --debuginfo-path /nonexistent:%s", W("g-bid"),
		    W("bid-tree"));
	CHECK(st == 0 && file_contains(W("bid.calls"), "> secret_loop+0 "),
	      "build-id: the second directory of a path list is searched too (--calls)");
	CHECK(clean_stderr(W("bid.profile.err")) && clean_stderr(W("dl.lines.err")),
	      "debug files: the sanitizers said nothing");
}

/*
 * Do the --profile rows of @prof (before "# per DSO") give each address
 * the number of times --insn @insn lists it, and no other address?
 */
static bool rows_match_insn(const char *prof, const char *insn)
{
	struct { unsigned long long a, n; } t[256];
	size_t nt = 0, i, rows = 0;
	char *s = slurp(insn, NULL), *p, *save = NULL;
	bool ok = s != NULL;

	for (p = s ? strtok_r(s, "\n", &save) : NULL; ok && p; p = strtok_r(NULL, "\n", &save)) {
		unsigned long long a;

		if (sscanf(p, "%llx ", &a) != 1 || p[16] != ' ')
			continue;
		for (i = 0; i < nt && t[i].a != a; i++)
			;
		if (i == nt) {
			if (nt == 256) {
				ok = false;
				break;
			}
			t[nt].a = a;
			t[nt++].n = 0;
		}
		t[i].n++;
	}
	free(s);
	s = slurp(prof, NULL);
	save = NULL;
	for (p = s ? strtok_r(s, "\n", &save) : NULL; ok && p; p = strtok_r(NULL, "\n", &save)) {
		unsigned long long c, a;
		char dso[256], fn[256];

		if (!strncmp(p, "# per DSO", 9))
			break;
		if (sscanf(p, "%llu %*s %255s %255s %llx", &c, dso, fn, &a) != 4)
			continue;
		for (i = 0; i < nt && t[i].a != a; i++)
			;
		if (i == nt || t[i].n != c || strncmp(fn, "0x", 2))
			ok = false;
		rows++;
	}
	free(s);
	return ok && nt && rows == nt;
}

/*
 * Labels: _start and tail_label (STT_NOTYPE) name their code; work, not
 * lbl, names the function they share; neither inner_label nor
 * .Lloop ever names code.  Stripped of every symbol, the program's
 * profile has a row per instruction address.
 */
static void test_labels(void)
{
	int st;

	if (!write_file(W("asm.S"), asm_s) ||
	    sh("cd %s && cc -nostdlib -static -Wa,-L -o asm asm.S && "
	       "cp asm asm-stripped && strip --strip-all asm-stripped", work)) {
		CHECK(0, "labels: the assembly program builds");
		return;
	}
	CHECK(sh("readelf -sW %s | grep -q ' NOTYPE .* _start$'", W("asm")) == 0 &&
	      sh("readelf -sW %s | grep -q ' \\.Lloop$'", W("asm")) == 0 &&
	      sh("readelf -sW %s | grep -q ' NOTYPE  GLOBAL .* lbl$'", W("asm")) == 0,
	      "labels: _start, lbl (global) are STT_NOTYPE and .Lloop is in .symtab");
	if (!ptgen("g-asm", "asm") || !ptgen("g-asms", "asm-stripped")) {
		CHECK(0, "labels: ptgen traces the program");
		return;
	}
	st = decode_work("asm.profile", "%s --profile", W("g-asm"));
	CHECK(st == 0 && file_contains(W("asm.profile"), " _start ") &&
	      file_contains(W("asm.profile"), " work ") &&
	      file_contains(W("asm.profile"), " tail_label ") &&
	      !file_contains(W("asm.profile"), "[no symbol]"),
	      "labels: --profile rows _start, work, tail_label; no [no symbol]");
	st = decode_work("asm.calls", "%s --calls", W("g-asm"));
	CHECK(!file_contains(W("asm.profile"), " lbl ") && !file_contains(W("asm.calls"), "> lbl+") &&
	      !file_contains(W("asm.profile"), "inner_label") &&
	      !file_contains(W("asm.profile"), ".Lloop"),
	      "labels: a function beats a label at its address; no label inside a function; "
	      "no .L label");
	CHECK(st == 0 && file_contains(W("asm.calls"), "> work+0 ") &&
	      file_contains(W("asm.calls"), "> tail_label+0 ") &&
	      file_contains(W("asm.calls"), "< _start+0x"),
	      "labels: --calls: _start calls work and tail_label, which return into _start");

	/* 2 + 50 * 2 + 1 in work, 1 + 40 * 2 + 1 in tail_label, 2 + 3 in _start */
	st = decode_work("asms.profile", "%s --profile", W("g-asms"));
	CHECK(st == 0 && !file_contains(W("asms.profile"), "[no symbol]") &&
	      count_lines(W("asms.profile"), " asm-stripped ") >= 13 &&
	      file_contains(W("asms.profile"), " 0x401000 "),
	      "no symbols: --profile has a row per instruction address (asm-stripped 0x401000 "
	      "...), not one [no symbol] row");
	st = decode_work("asms.insn", "%s --insn", W("g-asms"));
	CHECK(st == 0 && rows_match_insn(W("asms.profile"), W("asms.insn")),
	      "no symbols: each per-address row counts what --insn shows at that address");
	st = decode_work("asms.profile2", "%s --profile -J 2", W("g-asms"));
	CHECK(st == 0 && same_files(W("asms.profile"), W("asms.profile2")),
	      "no symbols: -J 2 gives -J 1's per-address rows");
}

/*
 * -J 2 against -J 1: --profile, --calls, --folded and --insn of a
 * ptgen trace cut every 256 bytes (so that the workers each get segments),
 * with PLT names and debug-file names in play.
 */
static void test_parallel(void)
{
	static const char *const outs[] = { "profile", "calls", "folded", "insn" };
	size_t i;

	if (sh("rm -rf %s/g-par && %s/selftests/ptgen --psb-period 256 -o %s/g-par -- %s/plt-lazy "
	       ">%s/g-par.log 2>&1", work, build, work, work, work)) {
		CHECK(0, "parallel: ptgen --psb-period 256 traces the PLT program");
		return;
	}
	for (i = 0; i < 4; i++) {
		char a[64], b[64];
		int s1, s2;

		snprintf(a, sizeof(a), "par1.%s", outs[i]);
		snprintf(b, sizeof(b), "par2.%s", outs[i]);
		s1 = decode_work(a, "%s --%s -J 1", W("g-par"), outs[i]);
		s2 = decode_work(b, "%s --%s -J 2", W("g-par"), outs[i]);
		CHECK(s1 == 0 && s2 == 0 && same_files(W(a), W(b)) && file_contains(W(a), "foo@plt"),
		      "parallel: --%s with -J 2 equals -J 1 (and names foo@plt)", outs[i]);
	}
}

int main(int argc, char **argv)
{
	int status;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* libdwfl asks debuginfod servers only with DEBUGINFOD_URLS: none here */
	unsetenv("DEBUGINFOD_URLS");
	if (!tool_test_setup(argc, argv, "syms-tests", &status))
		return status;
	test_plt();
	test_debug_files();
	test_labels();
	test_parallel();
	return tap_done();
}

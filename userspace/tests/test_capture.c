// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for capture: record's option parsing (per-CPU and
 * per-thread), config validation against sample caps, ring unrolling, the
 * capture metadata of both modes (written, then parsed back with json-c)
 * and ENOSPC handling.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ipttool/ipttool.h"
#include "json_path.h"
#include "tap.h"

static struct ipt_caps sample_caps(void)
{
	struct ipt_caps c;

	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.abi_version = IPT_ABI_VERSION;
	c.backend = IPT_BACKEND_SIM;
	strcpy(c.vendor, "GenuineIntel");
	c.family = 6;
	c.model = 126;
	c.stepping = 5;
	c.features = IPT_FEAT_PSB_CYC | IPT_FEAT_MTC | IPT_FEAT_TOPA | IPT_FEAT_TOPA_MULTI;
	c.mtc_freq_mask = 0x249;	/* 0,3,6,9 */
	c.cyc_thresh_mask = 0x3fff;
	c.psb_freq_mask = 0x3f;
	c.nr_cpus = 2;
	c.max_topa_order = 22;
	c.max_trace_size = 64ull << 20;
	c.cpuid_15.eax = 2;
	c.cpuid_15.ebx = 200;
	c.nom_freq = 20;
	return c;
}

/* A streamed per-thread capture into @dir of up to @nt traces @tr. */
static void stream_thread_capture(struct capture *c, const char *dir, struct capture_trace *tr,
				  unsigned int nt)
{
	memset(c, 0, sizeof(*c));
	c->dir = dir;
	c->caps = sample_caps();
	c->per_thread = true;
	c->stream = true;
	c->config.max_threads = nt;
	c->traces = tr;
}

/*
 * @nt threads' traces of @c, each with the same @ng gaps (more than its
 * reserve holds itemised), and @c's reserve for them.
 */
static void gapped_traces(struct capture *c, struct capture_trace *tr, unsigned int nt,
			  struct ipt_gap *gaps, unsigned int ng)
{
	unsigned int i;

	for (i = 0; i < ng; i++)
		gaps[i] = (struct ipt_gap){ .offset = (uint64_t)i << 20, .tsc_start = 1000ull * i,
					    .tsc_end = 1000ull * i + 500, .bytes_lost = 4096 };
	for (i = 0; i < nt; i++) {
		tr[i].cpu = i;
		tr[i].ts.tid = 100 + i;
		snprintf(tr[i].file, sizeof(tr[i].file), "thread-%u.pt", 100 + i);
		tr[i].gaps = gaps;
		tr[i].nr_gaps = ng;
	}
	c->meta_reserve = capture_meta_reserve(c, nt);
}

static int parse(struct record_opts *o, char *msg, size_t len, ...)
{
	static char *argv[32];	/* o->prog_argv points into it */
	va_list ap;
	int argc = 0;

	argv[argc++] = "record";
	va_start(ap, len);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	return record_parse(argc, argv, o, msg, len);
}

#define P(...) parse(&o, msg, sizeof(msg), __VA_ARGS__, (char *)NULL)

static void test_parse(void)
{
	struct record_opts o;
	char msg[512];
	uint64_t v, m[2];

	CHECK(!parse_size("4096", &v) && v == 4096, "size 4096");
	CHECK(!parse_size("64K", &v) && v == 65536, "size 64K");
	CHECK(!parse_size("4M", &v) && v == 4ull << 20, "size 4M");
	CHECK(!parse_size("1g", &v) && v == 1ull << 30, "size 1g");
	CHECK(parse_size("4MB", &v) && parse_size("", &v) && parse_size("-1", &v) &&
	      parse_size("x", &v) && parse_size("99999999999999999999", &v) &&
	      parse_size("17179869184G", &v), "bad sizes are refused");
	CHECK(!parse_cpu_list("0-3,5", m, 2) && m[0] == 0x2f && !m[1], "cpu list 0-3,5");
	CHECK(!parse_cpu_list("64", m, 2) && !m[0] && m[1] == 1, "cpu list 64");
	CHECK(parse_cpu_list("3-1", m, 2) && parse_cpu_list("1,", m, 2) &&
	      parse_cpu_list("a", m, 2) && parse_cpu_list("128", m, 2) &&
	      parse_cpu_list("", m, 2), "bad cpu lists are refused");

	CHECK(P("-a") == 0 && o.cfg.all_cpus && o.cfg.user && o.cfg.kernel &&
	      !o.cfg.stop_on_full && !o.prog_argv && !strcmp(o.out_dir, "ipt.data"),
	      "-a: defaults");
	CHECK(P("-C", "0,1", "--stop-on-full", "--size", "64K", "--user", "--tsc", "--mtc", "3",
		"--cyc", "1", "--psb", "2", "--no-retcomp", "-o", "d", "--duration", "1.5") == 0 &&
	      !o.cfg.all_cpus && o.cfg.cpu_mask_words == 1 && o.cpu_mask[0] == 3 &&
	      o.cfg.stop_on_full && o.cfg.buffer_size == 65536 && o.cfg.user && !o.cfg.kernel &&
	      o.cfg.tsc && o.cfg.mtc_freq == 3 && o.cfg.cyc_thresh == 1 && o.cfg.psb_freq == 2 &&
	      o.cfg.no_retcomp && !strcmp(o.out_dir, "d") && o.duration == 1.5,
	      "every option is parsed");
	CHECK(P("-a", "--", "sleep", "1") == 0 && o.prog_argv && !strcmp(o.prog_argv[0], "sleep"),
	      "-a -- prog");
	/* per-thread: a command without -a/-C, or -p */
	CHECK(P("--", "true") == 0 && o.cfg.per_thread && o.prog_argv &&
	      !strcmp(o.prog_argv[0], "true") && o.cfg.max_threads == RECORD_THREAD_MAX &&
	      o.cfg.buffer_size == RECORD_THREAD_SIZE && o.cfg.user && !o.cfg.kernel &&
	      !o.no_inherit && !o.nr_tids && o.size_default,
	      "-- prog: per-thread, 64 threads of 1M, user only");
	CHECK(P("--size", "1M", "--", "true") == 0 && !o.size_default &&
	      P("-a", "--", "true") == 0 && !o.size_default,
	      "only a per-thread record without --size may have its size fitted");
	/* the default fitted to what an unprivileged user may lock */
	CHECK(record_fit_size(64ull << 20, 64, 1 << 20) == 1 << 20 &&
	      record_fit_size(UINT64_MAX, 64, 1 << 20) == 1 << 20 &&
	      record_fit_size((1032ull << 10) + (8ull << 20), 64, 1 << 20) == 128 << 10 &&
	      record_fit_size((1032ull << 10) + (64 << 10), 64, 1 << 20) == 16 << 10 &&
	      record_fit_size(64ull << 12, 64, 1 << 20) == 4096 &&
	      record_fit_size((64ull << 12) - 1, 64, 1 << 20) == 0 &&
	      record_fit_size(0, 0, 1 << 20) == 1 << 20,
	      "record_fit_size: the largest power of two that fits, a page at least");
	CHECK(P("--threads", "8", "--size", "64K", "--no-inherit", "--kernel", "--stop-on-full",
		"--tsc", "--", "sh", "-c", "x") == 0 && o.cfg.per_thread && o.cfg.max_threads == 8 &&
	      o.cfg.buffer_size == 65536 && o.no_inherit && o.cfg.kernel && !o.cfg.user &&
	      o.cfg.stop_on_full && o.cfg.tsc && !strcmp(o.prog_argv[2], "x"),
	      "per-thread options are parsed");
	CHECK(P("-p", "123,456", "--duration", "2") == 0 && o.cfg.per_thread && o.nr_tids == 2 &&
	      o.tids[0] == 123 && o.tids[1] == 456 && !o.prog_argv && o.duration == 2,
	      "-p 123,456: two threads");
	CHECK(P("--tid", "7") == 0 && o.nr_tids == 1 && o.tids[0] == 7, "--tid is -p");
	CHECK(P("-p", "123", "-p", "9") == 0 && o.nr_tids == 2 && o.tids[1] == 9, "-p repeated");
	CHECK(P("-p", "0") == 2 && P("-p", "x") == 2 && P("-p", "1,") == 2 && P("-p", "-3") == 2 &&
	      P("-p", "1,,2") == 2 && P("-p", "99999999999") == 2 && strstr(msg, "thread ids"),
	      "malformed -p lists are refused: %s", msg);
	CHECK(P("-p", "5,5") == 2 && strstr(msg, "twice"), "a thread given twice: %s", msg);
	CHECK(P("-p", "5", "--", "true") == 2 && strstr(msg, "exclude"), "-p with a command: %s", msg);
	CHECK(P("-a", "-p", "5") == 2 && P("-C", "0", "-p", "5") == 2 && strstr(msg, "-p"),
	      "-p with -a or -C: %s", msg);
	CHECK(P("-a", "--threads", "4") == 2 && strstr(msg, "--threads"),
	      "--threads with -a: %s", msg);
	CHECK(P("-a", "--no-inherit") == 2 && strstr(msg, "--no-inherit"),
	      "--no-inherit with -a: %s", msg);
	CHECK(P("--threads", "0", "--", "true") == 2 && P("--threads", "1025", "--", "true") == 2 &&
	      P("--threads", "x", "--", "true") == 2 && strstr(msg, "1..1024"),
	      "bad --threads: %s", msg);
	CHECK(P("-p", "1,2,3", "--threads", "2") == 2 && strstr(msg, "more than --threads"),
	      "more -p threads than --threads: %s", msg);
	{
		char *sargv[] = { "start", "-p", "1", NULL };
		struct ipttool t = { .device = "/nonexistent" };
		int rc;

		fflush(stderr);
		rc = cmd_start(&t, 3, sargv);
		CHECK(rc == 2, "the flight recorder refuses -p (it traces CPUs): %d", rc);
	}
	CHECK(P("-o", "x") == 2 && strstr(msg, "-a"), "no target: %s", msg);
	CHECK(P("-a", "-C", "0") == 2, "-a with -C");
	CHECK(P("-a", "--ring", "--stop-on-full") == 2, "--ring with --stop-on-full");
	CHECK(P("-a", "--size", "1000") == 2 && strstr(msg, "4096"), "--size 1000: %s", msg);
	CHECK(P("-a", "--mtc", "32") == 2, "--mtc 32");
	CHECK(P("-a", "--cyc", "x") == 2, "--cyc x");
	CHECK(P("-a", "--duration", "0") == 2 && P("-a", "--duration", "1s") == 2, "bad --duration");
	CHECK(P("-a", "--bogus") == 2 && strstr(msg, "--bogus"), "unknown option: %s", msg);
	CHECK(P("-a", "-C") == 2, "-C without argument");
	CHECK(P("--help") == 0 && o.help, "--help");

	/* address ranges, CR3, sideband and progress options */
	CHECK(P("-a", "--filter", "0x401000-0x401fff", "--stop-range", "4198400-4198500",
		"--cr3", "0x1a2b3000", "-q", "--no-sideband") == 0 &&
	      o.cfg.nr_ranges == 2 && o.cfg.ranges[0].kind == IPT_RANGE_FILTER &&
	      o.cfg.ranges[0].start == 0x401000 && o.cfg.ranges[0].end == 0x401fff &&
	      o.cfg.ranges[1].kind == IPT_RANGE_STOP && o.cfg.ranges[1].start == 4198400 &&
	      o.cfg.ranges[1].end == 4198500 && o.cfg.cr3_filter &&
	      o.cfg.cr3_match == 0x1a2b3000 && o.quiet && o.no_sideband,
	      "--filter, --stop-range, --cr3, -q, --no-sideband are parsed");
	CHECK(P("-a") == 0 && !o.cfg.nr_ranges && !o.cfg.cr3_filter && !o.quiet &&
	      !o.no_sideband, "no ranges, no CR3 filter by default");
	CHECK(P("-a", "--filter", "0x2000-0x1000") == 2 && strstr(msg, "--filter") &&
	      strstr(msg, "START <= END"), "--filter with START > END: %s", msg);
	CHECK(P("-a", "--filter", "0x1000") == 2 && P("-a", "--filter", "x-y") == 2 &&
	      P("-a", "--stop-range", "1-2-3") == 2 && P("-a", "--filter", "-1-2") == 2,
	      "malformed ranges are refused");
	CHECK(P("-a", "--filter", "1-2", "--filter", "3-4", "--stop-range", "5-6",
		"--filter", "7-8", "--filter", "9-10") == 2 && strstr(msg, "at most 4"),
	      "a fifth range is refused: %s", msg);
	CHECK(P("-a", "--cr3", "pid") == 2 && strstr(msg, "--cr3"), "--cr3 needs a value: %s", msg);
	{
		uint64_t a, b;

		CHECK(!parse_range("0x10-0x20", &a, &b) && a == 16 && b == 32 &&
		      !parse_range("0xffffffff81000000-0xffffffff81ffffff", &a, &b) &&
		      a == 0xffffffff81000000ull && b == 0xffffffff81ffffffull,
		      "parse_range: hex, also above 2^63");
	}
}

/* A minimal 64-bit ELF file of type @type with one symbol "func". */
static int write_elf(const char *path, uint16_t type)
{
	unsigned char img[64 + 8 + 48 + 3 * 64];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Sym sym[2];
	Elf64_Shdr sh[3];
	int fd;
	ssize_t n;

	memset(img, 0, sizeof(img));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = type;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_shoff = 64 + 8 + 48;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	memcpy(img + 64, "\0func\0", 6);			/* .strtab */
	memset(sym, 0, sizeof(sym));
	sym[1].st_name = 1;
	sym[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	sym[1].st_shndx = 1;
	sym[1].st_value = 0x401000;
	sym[1].st_size = 0x40;
	memcpy(img + 72, sym, sizeof(sym));			/* .symtab */
	memset(sh, 0, sizeof(sh));
	sh[1].sh_type = SHT_SYMTAB;
	sh[1].sh_offset = 72;
	sh[1].sh_size = sizeof(sym);
	sh[1].sh_entsize = sizeof(Elf64_Sym);
	sh[1].sh_link = 2;
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = 64;
	sh[2].sh_size = 6;
	memcpy(img + 120, sh, sizeof(sh));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	n = fd >= 0 ? write(fd, img, sizeof(img)) : -1;
	if (fd >= 0)
		close(fd);
	return n == (ssize_t)sizeof(img) ? 0 : -1;
}

/* --filter FILE:SYMBOL: a symbol of a non-PIE file gives its range. */
static void test_symbols(const char *dir)
{
	struct record_opts o;
	char msg[512], exe[256], dyn[256], arg[300], arg2[300];
	uint64_t start = 0, size = 0;
	bool pie = true;
	int rc;

	snprintf(exe, sizeof(exe), "%s/prog", dir);
	snprintf(dyn, sizeof(dyn), "%s/prog-pie", dir);
	rc = write_elf(exe, ET_EXEC) | write_elf(dyn, ET_DYN);
	CHECK(rc == 0, "test ELF files written");
	rc = iptcap_elf_symbol(exe, "func", &start, &size, &pie, msg, sizeof(msg));
	CHECK(rc == 0 && start == 0x401000 && size == 0x40 && !pie, "iptcap_elf_symbol finds func");
	rc = iptcap_elf_symbol(dyn, "func", &start, &size, &pie, msg, sizeof(msg));
	CHECK(rc == 0 && pie, "an ET_DYN file is reported as position-independent");
	rc = iptcap_elf_symbol(exe, "nothing", &start, &size, &pie, msg, sizeof(msg));
	CHECK(rc == -1 && strstr(msg, "no symbol 'nothing'"), "a missing symbol: %s", msg);
	snprintf(arg, sizeof(arg), "%s:func", exe);
	rc = P("-a", "--filter", arg, "--stop-range", "0x500000-0x5000ff");
	CHECK(rc == 0 && o.cfg.nr_ranges == 2 && o.cfg.ranges[0].kind == IPT_RANGE_FILTER &&
	      o.cfg.ranges[0].start == 0x401000 && o.cfg.ranges[0].end == 0x40103f,
	      "--filter FILE:SYMBOL gives the symbol's bytes");
	rc = P("-a", "--stop-range", arg);
	CHECK(rc == 0 && o.cfg.ranges[0].kind == IPT_RANGE_STOP && o.cfg.ranges[0].end == 0x40103f,
	      "--stop-range FILE:SYMBOL");
	snprintf(arg2, sizeof(arg2), "%s:func", dyn);
	rc = P("-a", "--filter", arg2);
	CHECK(rc == 2 && strstr(msg, "position-independent") && strstr(msg, "START-END"),
	      "a PIE symbol is refused: %s", msg);
	snprintf(arg2, sizeof(arg2), "%s:", exe);
	rc = P("-a", "--filter", arg2);
	CHECK(rc == 2 && strstr(msg, "FILE:SYMBOL"), "FILE: without a symbol: %s", msg);
}

/*
 * Both layers at once: libiptcap names the field of struct iptcap_config
 * (its message starts with the field's name and names no option), ipttool's
 * check_config() names its own option.  @msg receives ipttool's message;
 * a disagreement between the layers fails the check that called this.
 */
static enum iptcap_err check_cfg(const struct iptcap_config *cfg, const struct ipt_caps *caps,
				 struct ipt_config *ic, char *msg, size_t len)
{
	struct iptcap_config_error e;
	enum iptcap_err lib_err, check_err, tool_err;
	const char *field;
	char lib[256];

	msg[0] = '\0';
	lib_err = iptcap_config_to_ipt(cfg, caps, ic, lib, sizeof(lib));
	check_err = iptcap_config_check(cfg, caps, ic, &e);
	tool_err = check_config(cfg, caps, ic, msg, len);
	if (lib_err != check_err || lib_err != tool_err) {
		snprintf(msg, len, "libiptcap and ipttool disagree (%d, %d, %d)", lib_err,
			 check_err, tool_err);
		return (enum iptcap_err)-1;
	}
	field = iptcap_field_name(e.field);
	if (lib_err && (strstr(lib, "--") || strncmp(lib, field, strlen(field)))) {
		snprintf(msg, len, "libiptcap's message names an option, not field '%s': %.180s",
			 field, lib);
		return (enum iptcap_err)-1;
	}
	return tool_err;
}

/* --filter, --stop-range, --cr3 against the caps: refused up front, by name. */
static void test_config_ranges(void)
{
	struct ipt_caps caps = sample_caps();
	struct iptcap_config cfg;
	struct ipt_config ic;
	char msg[256];

	iptcap_config_init(&cfg);
	cfg.nr_ranges = 1;
	cfg.ranges[0].kind = IPT_RANGE_FILTER;
	cfg.ranges[0].start = 0x401000;
	cfg.ranges[0].end = 0x401fff;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_CAPABILITY &&
	      strstr(msg, "--filter") && strstr(msg, "'ip_filter'"),
	      "--filter without ip_filter: %s", msg);
	caps.features |= IPT_FEAT_IP_FILTER;
	caps.num_addr_ranges = 2;
	CHECK(!check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) &&
	      ic.ranges[0].kind == IPT_RANGE_FILTER && ic.ranges[0].start == 0x401000 &&
	      ic.ranges[0].end == 0x401fff && ic.ranges[1].kind == IPT_RANGE_OFF,
	      "--filter maps to ranges[0]");
	cfg.nr_ranges = 3;
	cfg.ranges[1].kind = IPT_RANGE_STOP;
	cfg.ranges[1].start = cfg.ranges[1].end = 0x402000;
	cfg.ranges[2].kind = IPT_RANGE_STOP;
	cfg.ranges[2].start = cfg.ranges[2].end = 0x403000;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_CAPABILITY &&
	      strstr(msg, "3 address ranges") && strstr(msg, "has 2") &&
	      strstr(msg, "num_addr_ranges"), "more ranges than the unit has: %s", msg);
	cfg.nr_ranges = 2;
	CHECK(!check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) &&
	      ic.ranges[1].kind == IPT_RANGE_STOP && ic.ranges[1].start == 0x402000,
	      "--stop-range maps to the next range");
	cfg.ranges[1].start = 0x0000800000000000ull;
	cfg.ranges[1].end = 0x0000800000001000ull;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID &&
	      strstr(msg, "--stop-range") && strstr(msg, "canonical"),
	      "a non-canonical range: %s", msg);
	CHECK(iptcap_config_to_ipt(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID &&
	      !strncmp(msg, "ranges[1] 0x800000000000-0x800000001000: ", 41),
	      "the library names the range by its index: %s", msg);
	cfg.ranges[1].start = 0xffffffff81000000ull;
	cfg.ranges[1].end = 0xffffffff81ffffffull;
	CHECK(!check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)), "a kernel range is canonical");
	/*
	 * By the CPU's linear address width: with LA57 (57 bits) an address
	 * above 47 bits is canonical; 0 (a module that predates the field)
	 * means 48.
	 */
	cfg.ranges[1].start = 0x00ff800000000000ull;
	cfg.ranges[1].end = 0x00ff800000001000ull;
	caps.virt_addr_bits = 0;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID &&
	      strstr(msg, "48-bit"), "an LA57 range on an older module: %s", msg);
	caps.virt_addr_bits = 48;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID &&
	      strstr(msg, "48-bit"), "an LA57 range on a 48-bit CPU: %s", msg);
	caps.virt_addr_bits = 57;
	CHECK(!check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) &&
	      ic.ranges[1].start == 0x00ff800000000000ull,
	      "an LA57 range on a 57-bit CPU: %s", msg);
	cfg.ranges[1].start = 0x0100000000000000ull;
	cfg.ranges[1].end = 0x0100000000001000ull;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID &&
	      strstr(msg, "57-bit"), "beyond 57 bits on a 57-bit CPU: %s", msg);
	caps.virt_addr_bits = 48;
	cfg.nr_ranges = 0;
	cfg.cr3_filter = true;
	cfg.cr3_match = 0x1a2b3000;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_CAPABILITY &&
	      strstr(msg, "--cr3") && strstr(msg, "'cr3_filter'"), "--cr3 without cr3_filter: %s",
	      msg);
	caps.features |= IPT_FEAT_CR3_FILTER;
	CHECK(!check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) &&
	      (ic.trace_flags & IPT_TRACE_CR3_FILTER) && ic.cr3_match == 0x1a2b3000,
	      "--cr3 maps to cr3_match and IPT_TRACE_CR3_FILTER");
	cfg.cr3_match = 0x1a2b3004;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID &&
	      strstr(msg, "bits 4:0"), "a CR3 value with low bits: %s", msg);
	/* Page-table isolation: one CR3 value is user or kernel, not both. */
	cfg.cr3_match = 0x1a2b2000;
	caps.platform = IPT_PLAT_PTI;
	cfg.user = true;
	cfg.kernel = false;
	CHECK(!check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) && ic.cr3_match == 0x1a2b2000,
	      "PTI, user only: the value goes to the driver as given: %s", msg);
	cfg.kernel = true;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID &&
	      strstr(msg, "--cr3") && strstr(msg, "not both"), "PTI, user and kernel: %s", msg);
	cfg.user = false;
	CHECK(!check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)), "PTI, kernel only: %s", msg);
	cfg.cr3_match = 0x1a2b3000;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID &&
	      strstr(msg, "never matches kernel"), "PTI, kernel only, a user CR3: %s", msg);
	caps.platform = 0;
}

static void test_config(void)
{
	struct ipt_caps caps = sample_caps(), none = sample_caps();
	struct iptcap_config cfg;
	struct ipt_config ic;
	uint64_t mask[2] = { 0, 0 };
	char msg[256];

	iptcap_config_init(&cfg);
	CHECK(!check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) && ic.mode == IPT_MODE_CPU &&
	      ic.flags == IPT_CONFIG_ALL_CPUS && ic.buffer_size == IPTCAP_DEFAULT_BUFFER_SIZE &&
	      ic.trace_flags == (IPT_TRACE_BRANCH | IPT_TRACE_USER | IPT_TRACE_KERNEL) &&
	      !ic.buffer_flags && ic.size == sizeof(ic), "defaults translate");
	caps.max_trace_size = 1 << 20;
	CHECK(!check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) && ic.buffer_size == 1 << 20,
	      "default size is capped to max_trace_size");
	cfg.buffer_size = 2 << 20;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID &&
	      strstr(msg, "larger"), "too large: %s", msg);
	caps = sample_caps();
	cfg.buffer_size = 4095;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID,
	      "size not a multiple of 4096");
	cfg.buffer_size = 0;
	cfg.stop_on_full = true;
	cfg.tsc = true;
	cfg.no_retcomp = true;
	cfg.mtc_freq = 3;
	cfg.cyc_thresh = 2;
	cfg.psb_freq = 1;
	CHECK(!check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) &&
	      ic.buffer_flags == IPT_BUFFER_STOP_ON_FULL &&
	      (ic.trace_flags & (IPT_TRACE_TSC | IPT_TRACE_MTC | IPT_TRACE_CYC |
				 IPT_TRACE_NO_RETCOMP)) ==
	      (IPT_TRACE_TSC | IPT_TRACE_MTC | IPT_TRACE_CYC | IPT_TRACE_NO_RETCOMP) &&
	      ic.mtc_freq == 3 && ic.cyc_thresh == 2 && ic.psb_freq == 1, "timing options");
	cfg.mtc_freq = 4;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_CAPABILITY &&
	      strstr(msg, "--mtc 4") && strstr(msg, "0,3,6,9"), "unsupported MTC period: %s", msg);
	{
		struct iptcap_config_error e;

		CHECK(iptcap_config_check(&cfg, &caps, &ic, &e) == IPTCAP_ERR_CAPABILITY &&
		      e.field == IPTCAP_FIELD_MTC_FREQ && e.index == -1 &&
		      !strcmp(e.value, "4") && !strcmp(e.reason, "this PT unit supports 0,3,6,9"),
		      "the library reports the field, the value and why: %s %s: %s",
		      iptcap_field_name(e.field), e.value, e.reason);
	}
	cfg.mtc_freq = 3;
	none.features = IPT_FEAT_TOPA;
	CHECK(check_cfg(&cfg, &none, &ic, msg, sizeof(msg)) == IPTCAP_ERR_CAPABILITY &&
	      strstr(msg, "'mtc'"), "MTC without the capability: %s", msg);
	cfg.mtc_freq = -1;
	CHECK(check_cfg(&cfg, &none, &ic, msg, sizeof(msg)) == IPTCAP_ERR_CAPABILITY &&
	      strstr(msg, "--cyc") && strstr(msg, "'psb_cyc'"), "CYC without psb_cyc: %s", msg);
	cfg.cyc_thresh = -1;
	CHECK(check_cfg(&cfg, &none, &ic, msg, sizeof(msg)) == IPTCAP_ERR_CAPABILITY &&
	      strstr(msg, "--psb"), "PSB period without psb_cyc: %s", msg);
	cfg.psb_freq = -1;
	CHECK(!check_cfg(&cfg, &none, &ic, msg, sizeof(msg)), "no timing needs no capability");
	cfg.user = cfg.kernel = false;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID,
	      "neither user nor kernel");
	cfg.user = true;
	cfg.all_cpus = false;
	cfg.cpu_mask = mask;
	cfg.cpu_mask_words = 1;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID,
	      "empty CPU mask");
	mask[0] = 2;
	CHECK(!check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) && !ic.flags &&
	      ic.cpu_mask_words == 1 && ic.cpu_mask_ptr == (uint64_t)(uintptr_t)mask,
	      "CPU mask passes through");
	mask[0] = 4;
	CHECK(check_cfg(&cfg, &caps, &ic, msg, sizeof(msg)) == IPTCAP_ERR_INVALID &&
	      strstr(msg, "CPU 2 does not exist"), "CPU beyond nr_cpus: %s", msg);
	test_config_ranges();
	none = sample_caps();
	none.backend = IPT_BACKEND_NONE;
	none.unavailable = IPT_UNAVAIL_NO_PT;
	CHECK(check_cfg(&cfg, &none, &ic, msg, sizeof(msg)) == IPTCAP_ERR_NO_PT, "no PT");
}

static void test_segments(void)
{
	struct ipt_trace_state ts;
	struct iptcap_seg s[2];

	memset(&ts, 0, sizeof(ts));
	ts.buffer_size = 8192;
	CHECK(iptcap_trace_segments(&ts, s) == 0, "empty trace: no segment");
	ts.head = ts.bytes_valid = ts.bytes_captured = 100;
	CHECK(iptcap_trace_segments(&ts, s) == 1 && s[0].off == 0 && s[0].len == 100,
	      "partial buffer: [0, head)");
	CHECK(iptcap_trace_loss(&ts) == IPTCAP_OK, "no loss");
	ts.status = IPT_TS_STOP_ON_FULL | IPT_TS_FULL;
	ts.head = 0;
	ts.bytes_valid = ts.bytes_captured = 8192;
	CHECK(iptcap_trace_segments(&ts, s) == 1 && s[0].off == 0 && s[0].len == 8192,
	      "stop-on-full: exactly the buffer");
	CHECK(iptcap_trace_loss(&ts) == IPTCAP_ERR_TRUNCATED, "stop-on-full: truncated");
	ts.status = IPT_TS_WRAPPED;
	ts.head = ts.oldest = 3000;
	ts.bytes_captured = 8192 * 3 + 3000;
	ts.bytes_lost = ts.bytes_captured - 8192;
	CHECK(iptcap_trace_segments(&ts, s) == 2 && s[0].off == 3000 && s[0].len == 5192 &&
	      s[1].off == 0 && s[1].len == 3000, "wrapped ring: [oldest, size) then [0, oldest)");
	CHECK(iptcap_trace_loss(&ts) == IPTCAP_ERR_OVERWRITTEN, "wrapped: overwritten");
	ts.head = ts.oldest = 0;
	CHECK(iptcap_trace_segments(&ts, s) == 1 && s[0].off == 0 && s[0].len == 8192,
	      "ring wrapped exactly at the end: one piece");
	ts.status |= IPT_TS_ERROR;
	CHECK(iptcap_trace_loss(&ts) == IPTCAP_ERR_HW_ERROR, "error takes precedence");
	ts.oldest = 9000;
	CHECK(iptcap_trace_segments(&ts, s) == -1, "oldest beyond the buffer");
	ts.oldest = 0;
	ts.bytes_valid = 9000;
	CHECK(iptcap_trace_segments(&ts, s) == -1, "valid beyond the buffer");
	ts.status = 0;
	ts.bytes_valid = 100;
	ts.oldest = 5;
	CHECK(iptcap_trace_segments(&ts, s) == -1, "unwrapped with oldest != 0");

	/* Unrolling real bytes gives them oldest first. */
	{
		unsigned char buf[16], out[16];
		size_t done = 0;
		int i, n;

		for (i = 0; i < 16; i++)
			buf[i] = (unsigned char)((i + 16 - 6) % 16);	/* oldest at 6 */
		memset(&ts, 0, sizeof(ts));
		ts.buffer_size = ts.bytes_valid = 16;
		ts.status = IPT_TS_WRAPPED;
		ts.head = ts.oldest = 6;
		n = iptcap_trace_segments(&ts, s);
		for (i = 0; i < n; i++) {
			memcpy(out + done, buf + s[i].off, s[i].len);
			done += s[i].len;
		}
		for (i = 0; i < 16 && out[i] == i; i++)
			;
		CHECK(done == 16 && i == 16, "unrolled bytes are in order");
	}
}

static void test_meta(const char *dir)
{
	struct capture c;
	struct capture_trace tr[2];
	struct json_object *o, *t;
	char msg[512], path[512];
	unsigned char data[64];
	struct iptcap_seg segs[2] = { { 32, 32 }, { 0, 32 } };
	struct stat st;
	size_t i;
	int rc;

	memset(&c, 0, sizeof(c));
	memset(tr, 0, sizeof(tr));
	for (i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)i;
	c.dir = dir;
	c.complete = true;
	c.caps = sample_caps();
	c.config.flags = IPT_CONFIG_ALL_CPUS;
	c.config.buffer_size = 64;
	c.config.trace_flags = IPT_TRACE_BRANCH | IPT_TRACE_USER | IPT_TRACE_MTC;
	c.config.mtc_freq = 3;
	c.have_time_conv = true;
	c.time_shift = 31;
	c.time_mult = 123456;
	c.time_zero = 0x123456789ull;
	c.traces = tr;
	c.nr_traces = 2;
	tr[0].cpu = 0;
	tr[0].ts.buffer_size = tr[0].ts.bytes_valid = 64;
	tr[0].ts.status = IPT_TS_WRAPPED;
	tr[0].ts.wrap_count = 3;
	tr[0].ts.bytes_lost = 150;
	tr[1].cpu = 1;
	tr[1].ts.status = IPT_TS_STOP_ON_FULL | IPT_TS_FULL | IPT_TS_SUSPENDED;

	rc = capture_write_trace(&c, &tr[0], data, segs, 2);
	CHECK(rc == 0 && tr[0].written == 64, "cpu0.pt written");
	snprintf(path, sizeof(path), "%s/cpu0.pt", dir);
	{
		unsigned char back[64];
		int fd = open(path, O_RDONLY);
		ssize_t got = fd >= 0 ? read(fd, back, 64) : -1;

		CHECK(got == 64 && back[0] == 32 && back[31] == 63 &&
		      back[32] == 0 && back[63] == 31, "cpu0.pt holds the pieces in order");
		if (fd >= 0)
			close(fd);
	}
	rc = capture_write_trace(&c, &tr[1], data, segs, 0);
	snprintf(path, sizeof(path), "%s/cpu1.pt", dir);
	CHECK(rc == 0 && tr[1].written == 0 && !stat(path, &st) && st.st_size == 0,
	      "empty trace writes an empty file");
	CHECK(c.complete, "still complete");
	rc = capture_write_meta(&c);
	CHECK(rc == 0, "meta.json written");
	o = capture_read_meta(dir, msg, sizeof(msg));
	CHECK(o != NULL, "meta.json parses back: %s", o ? "ok" : msg);
	if (!o)
		return;
	CHECK(!strcmp(json_object_get_string(jget(o, "format")), "ipt-capture") &&
	      json_object_get_int(jget(o, "format_version")) == CAPTURE_FORMAT_VERSION, "format, version");
	CHECK(json_object_get_boolean(jget(o, "complete")), "complete");
	CHECK(!strcmp(json_object_get_string(jget(o, "backend")), "sim"), "backend sim");
	CHECK(json_object_get_int(jget(o, "cpu.family")) == 6 &&
	      json_object_get_int(jget(o, "cpu.model")) == 126 &&
	      json_object_get_int(jget(o, "cpu.stepping")) == 5 &&
	      !strcmp(json_object_get_string(jget(o, "cpu.vendor")), "GenuineIntel"), "cpu f/m/s");
	CHECK(json_object_get_int(jget(o, "cpu.cpuid_15.ebx")) == 200 &&
	      json_object_get_int(jget(o, "cpu.nom_freq")) == 20, "cpuid 15, nominal ratio");
	CHECK(json_object_get_int(jget(o, "config.mtc_freq")) == 3 &&
	      jget(o, "config.cyc_thresh") == NULL &&
	      !strcmp(json_object_get_string(jget(o, "config.buffer")), "ring") &&
	      json_object_get_boolean(jget(o, "config.user")) &&
	      !json_object_get_boolean(jget(o, "config.kernel")), "config");
	CHECK(json_object_get_int(jget(o, "time_conv.time_shift")) == 31 &&
	      json_object_get_int64(jget(o, "time_conv.time_zero")) == 0x123456789ll,
	      "time conversion");
	CHECK(jget(o, "kernel.release") != NULL, "kernel release");
	t = json_object_array_get_idx(jget(o, "traces"), 0);
	CHECK(t && json_object_get_boolean(jget(t, "wrapped")) &&
	      json_object_get_int(jget(t, "wrap_count")) == 3 &&
	      json_object_get_int(jget(t, "bytes_lost")) == 150 &&
	      json_object_get_int(jget(t, "size")) == 64 &&
	      !strcmp(json_object_get_string(jget(t, "loss")), "overwritten") &&
	      !strcmp(json_object_get_string(jget(t, "file")), "cpu0.pt"), "trace 0 state");
	CHECK(t && json_object_object_get_ex(t, "suspended", NULL) &&
	      !json_object_get_boolean(jget(t, "suspended")), "trace 0 not suspended");
	t = json_object_array_get_idx(jget(o, "traces"), 1);
	CHECK(t && json_object_get_boolean(jget(t, "stopped_full")) &&
	      !strcmp(json_object_get_string(jget(t, "loss")), "truncated"), "trace 1 state");
	CHECK(t && json_object_get_boolean(jget(t, "suspended")), "trace 1 marked suspended");
	json_object_put(o);

	/* Without time conversion, the reason is recorded. */
	c.have_time_conv = false;
	snprintf(c.time_conv_skipped, sizeof(c.time_conv_skipped), "no perf");
	rc = capture_write_meta(&c);
	CHECK(rc == 0, "meta.json rewritten");
	o = capture_read_meta(dir, msg, sizeof(msg));
	CHECK(o && json_object_object_get_ex(o, "time_conv", &t) && !t &&
	      !strcmp(json_object_get_string(jget(o, "time_conv_skipped")), "no perf"),
	      "time_conv null with a reason");
	json_object_put(o);

	/* Begun with a reserve of meta_reserve bytes, which the final write removes. */
	c.meta_reserve = 8192;
	rc = capture_begin_meta(&c);
	snprintf(path, sizeof(path), "%s/" CAPTURE_META_RESERVE, dir);
	CHECK(rc == 0 && !stat(path, &st) && st.st_size == 8192,
	      "begun: " CAPTURE_META_RESERVE " of 8192 bytes");
	o = capture_read_meta(dir, msg, sizeof(msg));
	CHECK(o != NULL, "begun: meta.json parses");
	json_object_put(o);
	rc = capture_write_meta(&c);
	CHECK(rc == 0 && access(path, F_OK) && errno == ENOENT,
	      "the final meta.json: the reserve is removed");
	snprintf(path, sizeof(path), "%s/meta.json", dir);

	{
		int fd = open(path, O_WRONLY | O_TRUNC);
		ssize_t w = fd >= 0 ? write(fd, "{\"format\":\"x\"}", 14) : -1;

		CHECK(w == 14, "meta.json replaced");
		close(fd);
	}
	o = capture_read_meta(dir, msg, sizeof(msg));
	CHECK(!o && strstr(msg, "not an ipt capture"), "foreign JSON refused: %s", msg);
	{
		int fd = open(path, O_WRONLY | O_TRUNC);
		ssize_t w = fd >= 0 ? write(fd, "{\"format\":\"ipt-capture\",\"format_version\":99}", 44) : -1;

		CHECK(w == 44, "meta.json replaced");
		close(fd);
	}
	o = capture_read_meta(dir, msg, sizeof(msg));
	CHECK(!o && strstr(msg, "version 99"), "future version refused: %s", msg);
}

/*
 * The final rewrite of meta.json on a full disk (the temporary file is a
 * symlink to /dev/full: ENOSPC) goes into the reserve file the capture
 * began with (capture_meta_reserve() bytes), renamed over meta.json: a
 * streamed per-thread
 * capture of 40 traces, every field at its longest, 100 gaps each, and a
 * command of 20 arguments of 500 control characters each.  The
 * gaps do not fit: they are counted, not itemised, and the rewrite
 * succeeds with every trace in it.
 */
static void test_meta_full_disk(const char *dir)
{
	enum { NT = 40, NG = 100 };
	static struct capture_trace tr[NT];
	static struct ipt_gap gaps[NG];
	static char arg[20][501], *argv[21];
	struct json_object *o = NULL, *t, *a;
	struct capture c;
	char msg[512], tmp[512], path[512];
	struct stat st;
	size_t i, entries = 0, unlisted = 0, itemised = 0;
	int rc;

	stream_thread_capture(&c, dir, tr, NT);
	c.nr_traces = NT;
	snprintf(c.reason, sizeof(c.reason), "%0*d", (int)sizeof(c.reason) - 1, 0);
	/* the traced command: 20 arguments of 500 control characters (escaped as \u0001) */
	for (i = 0; i < 20; i++) {
		memset(arg[i], 1, sizeof(arg[i]) - 1);
		argv[i] = arg[i];
	}
	c.prog.argv = argv;
	for (i = 0; i < NG; i++)
		gaps[i] = (struct ipt_gap){ .offset = UINT64_MAX, .tsc_start = UINT64_MAX,
					    .tsc_end = UINT64_MAX, .bytes_lost = UINT64_MAX - 1,
					    .cpu = UINT32_MAX };
	for (i = 0; i < NT; i++) {
		memset(&tr[i], 0xff, sizeof(tr[i]));
		tr[i].cpu = (unsigned int)i;
		memset(tr[i].file, 'f', sizeof(tr[i].file) - 1);
		tr[i].file[sizeof(tr[i].file) - 1] = 0;
		tr[i].write_errno = ENAMETOOLONG;
		tr[i].read_failed = false;
		tr[i].gaps = gaps;
		tr[i].nr_gaps = NG;
		tr[i].gaps_unlisted = UINT64_MAX - NG - 1;
	}
	/* the capture's first meta.json, as record writes it, and its reserve */
	c.meta_reserve = capture_meta_reserve(&c, NT);
	c.nr_traces = 0;
	rc = capture_begin_meta(&c);
	snprintf(path, sizeof(path), "%s/" CAPTURE_META_RESERVE, dir);
	CHECK(rc == 0 && !stat(path, &st) && (size_t)st.st_size == c.meta_reserve,
	      "full disk: the reserve has %zu bytes", c.meta_reserve);
	/* the final one, the disk full */
	c.nr_traces = NT;
	snprintf(tmp, sizeof(tmp), "%s/meta.json.tmp", dir);
	rc = symlink("/dev/full", tmp);
	CHECK(rc == 0, "full disk: meta.json.tmp -> /dev/full");
	rc = capture_write_meta(&c);
	CHECK(rc == 0, "full disk: the final meta.json is written through the reserve (%s)",
	      strerror(rc));
	CHECK(lstat(tmp, &st) && errno == ENOENT, "full disk: no meta.json.tmp left");
	CHECK(lstat(path, &st) && errno == ENOENT, "full disk: the reserve became meta.json");
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	o = capture_read_meta(dir, msg, sizeof(msg));
	if (o && json_object_object_get_ex(o, "traces", &a))
		for (i = 0; i < json_object_array_length(a); i++) {
			t = json_object_array_get_idx(a, i);
			entries++;
			/* capture.c writes counts as int64: the bits are the count's */
			unlisted += (uint64_t)json_object_get_int64(jget(t, "gaps_unlisted")) ==
				    UINT64_MAX - 1;
			itemised += json_object_array_length(jget(t, "gaps"));
		}
	CHECK(o && entries == NT && unlisted == NT && itemised == 0,
	      "full disk: all %zu traces listed (%zu), each with its %d gaps counted as unlisted "
	      "(%zu), none itemised (%zu)", (size_t)NT, entries, NG, unlisted, itemised);
	json_object_put(o);
	unlink(tmp);
	unlink(path);
}

/* @buf (@size bytes) filled with @ch. */
static void fill(char *buf, size_t size, char ch)
{
	memset(buf, ch, size - 1);
	buf[size - 1] = '\0';
}

/*
 * The reserve holds the final meta.json, indented, whatever the
 * recording sets after it was sized: a capture begun with a long
 * '/'-heavy command (each '/' written "\/" by json-c) or none, and few traces
 * (little of the per-trace share to spare), then ended with every string
 * at its longest -- the reason quoting that argv[0], then full of control
 * bytes ("\u0001" each) or '"' --, every vDSO image and sideband CPU,
 * every number at its widest, each trace with 500 gaps, its booleans all
 * false or all true, its file name all '/'.  On a full disk (the
 * temporary file is /dev/full) the final meta.json must get there,
 * complete with every trace, still indented.
 */
static void test_meta_reserve_worst(const char *dir)
{
	enum { NT = 1, NG = 500 };
	static const char fills[] = { '/', 1, '"' };
	static struct capture_trace tr[NT];
	static struct ipt_gap gaps[NG];
	static struct iptcap_sb_cpu_stats cpus[2];
	static char arg0[256], arg1[300], *argv[] = { arg0, arg1, "-o", "/x/y/z", NULL };
	char tmp[512], path[512], msg[512];
	unsigned int f, b, a, ok = 0, runs = 0;
	size_t i, reserve = 0;

	fill(arg0, sizeof(arg0), '/');
	fill(arg1, sizeof(arg1), '/');
	snprintf(tmp, sizeof(tmp), "%s/meta.json.tmp", dir);
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	for (f = 0; f < sizeof(fills) * 2; f++) {
		for (b = 0; b < 2; b++) {
			struct capture c;
			struct json_object *o;
			const char *text;
			int rc;

			memset(&c, 0, sizeof(c));
			c.dir = dir;
			c.caps = sample_caps();	/* 2 CPUs */
			c.per_thread = false;
			c.stream = true;
			c.config.buffer_flags = IPT_BUFFER_STREAM;
			c.config.flags = IPT_CONFIG_ALL_CPUS;
			c.traces = tr;
			a = f / sizeof(fills);	/* with the command, or none (-a alone, -p) */
			c.prog.argv = a ? NULL : argv;
			c.complete = false;
			snprintf(c.reason, sizeof(c.reason), "%s", CAPTURE_UNFINISHED);
			/* begun as record begins it */
			c.meta_reserve = capture_meta_reserve(&c, NT);
			reserve = c.meta_reserve;
			unlink(tmp);
			unlink(path);
			if (capture_begin_meta(&c))
				continue;
			/* ended with everything at its longest */
			c.complete = true;
			if (f == 0)	/* as record says it, argv[0] quoted, cut at 255 bytes */
				capture_incomplete(&c, "the command %s could not be run: %s", arg0,
						   strerror(ENOENT));
			else
				fill(c.reason, sizeof(c.reason), fills[f % sizeof(fills)]);
			c.complete = false;
			fill(c.time_conv_skipped, sizeof(c.time_conv_skipped), fills[f % sizeof(fills)]);
			fill(c.stream_fallback, sizeof(c.stream_fallback), fills[f % sizeof(fills)]);
			fill(c.sb.perf_skipped, sizeof(c.sb.perf_skipped), fills[f % sizeof(fills)]);
			c.sb.write_errno = ENOTRECOVERABLE;
			c.sb.have_snap = true;
			c.sb.lines = UINT64_MAX / 3;
			c.sb.nr_vdso = CAPTURE_MAX_VDSO;
			for (i = 0; i < CAPTURE_MAX_VDSO; i++) {
				fill(c.sb.vdso[i].source, sizeof(c.sb.vdso[i].source), fills[f % sizeof(fills)]);
				c.sb.vdso[i].size = SIZE_MAX / 3;
			}
			memset(cpus, 0x80, sizeof(cpus));
			c.sb.cpus = b ? cpus : NULL;
			c.sb.nr_cpus = 2;
			c.start_ns = c.stop_ns = 1ull << 63;
			c.stream_bytes = 1ull << 63;
			c.stream_secs = -2.2250738585072014e-308;
			for (i = 0; i < NG; i++)
				gaps[i] = (struct ipt_gap){ .offset = 1ull << 63, .tsc_start = 1ull << 63,
							    .tsc_end = 1ull << 63,
							    .bytes_lost = 1ull << 63, .cpu = 1u << 31 };
			for (i = 0; i < NT; i++) {
				memset(&tr[i], 0x80, sizeof(tr[i]));
				tr[i].ts.status = b ? ~0u : 0;
				tr[i].cpu = (unsigned int)i;
				fill(tr[i].file, sizeof(tr[i].file), fills[f % sizeof(fills)]);
				tr[i].write_errno = ENOTRECOVERABLE;
				tr[i].gaps = gaps;
				tr[i].nr_gaps = NG;
				tr[i].read_failed = false;
			}
			c.nr_traces = NT;
			/* the final one, the disk full */
			if (symlink("/dev/full", tmp))
				continue;
			runs++;
			rc = capture_write_meta(&c);
			o = capture_read_meta(dir, msg, sizeof(msg));
			text = NULL;
			if (o) {
				FILE *fp = fopen(path, "r");
				char line[64];

				/* indented: its second line starts with two spaces */
				if (fp && fgets(line, sizeof(line), fp) && fgets(line, sizeof(line), fp))
					text = strncmp(line, "  \"", 3) ? NULL : "indented";
				if (fp)
					fclose(fp);
			}
			if (!rc && o && !json_object_get_boolean(jget(o, "complete")) &&
			    json_object_array_length(jget(o, "traces")) == NT && text)
				ok++;
			else
				printf("# worst case %u/%u/%u: rc %d, %s, %s\n", a, f, b, rc,
				       o ? "valid" : msg, text ? text : "not indented");
			json_object_put(o);
			unlink(tmp);
		}
	}
	CHECK(runs == 12 && ok == runs,
	      "the reserve holds the final meta.json indented, every string at its worst ('/', "
	      "control bytes, '\"'), argv[0] in the reason, with a command or none (%u of %u; "
	      "%zu bytes without one)", ok, runs, reserve);
	unlink(path);
}

/*
 * ---- fault injection: the system calls of meta.json's writes ----------
 * test_capture is linked with -Wl,--wrap for them (Makefile): armed,
 * each call is counted, and from the @at-th on the disk behaves as @mode
 * says.  Disarmed (FI_OFF), they are the real ones.
 */
enum fi_mode {
	FI_OFF,
	FI_COW,		/* full, copy-on-write: from @at, every write, fsync, rename,
			 * file creation fails ENOSPC (the first write half done) */
	FI_COW_RESERVE,	/* no new file can be created at all, the rest as FI_COW */
	FI_OVERWRITE,	/* full, overwrites in place: from @at, creating a file or
			 * writing past a file's end fails; the rest works */
	FI_CRASH,	/* the process dies at the @at-th call, before it runs */
	FI_CRASH_RESERVE, /* no new file can be created, then FI_CRASH */
	FI_DIRSYNC,	/* only a directory's fsync fails (ENOSPC), every one */
};

static struct {
	enum fi_mode mode;
	unsigned int calls, at;
	bool short_done;
	/* a rename seen, a directory fsync'd after it, the fault on one */
	bool renamed, dir_synced, dir_fault;
} fi;

int __real_open(const char *path, int flags, ...);
ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_fsync(int fd);
int __real_close(int fd);
int __real_rename(const char *from, const char *to);
int __real_unlink(const char *path);
int __wrap_open(const char *path, int flags, ...);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
int __wrap_fsync(int fd);
int __wrap_close(int fd);
int __wrap_rename(const char *from, const char *to);
int __wrap_unlink(const char *path);

/* Count this call; whether it is at or past the fault. */
static bool fi_past(void)
{
	if (fi.mode == FI_OFF || ++fi.calls < fi.at)
		return false;
	if (fi.mode == FI_CRASH || fi.mode == FI_CRASH_RESERVE)
		_exit(0);
	return true;
}

static int fi_fail(void)
{
	errno = ENOSPC;
	return -1;
}

int __wrap_open(const char *path, int flags, ...)
{
	unsigned int mode = 0;
	bool past = fi_past();
	va_list ap;

	if (flags & O_CREAT) {
		va_start(ap, flags);
		mode = va_arg(ap, unsigned int);
		va_end(ap);
		if (past || fi.mode == FI_COW_RESERVE || fi.mode == FI_CRASH_RESERVE)
			return fi_fail();
	}
	return __real_open(path, flags, mode);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
	struct stat st;
	off_t pos;

	if (!fi_past())
		return __real_write(fd, buf, n);
	if (fi.mode == FI_OVERWRITE && !fstat(fd, &st) &&
	    (pos = lseek(fd, 0, SEEK_CUR)) >= 0 && pos < st.st_size)
		/* the blocks it has: written, up to the end of the file */
		return __real_write(fd, buf, (size_t)(st.st_size - pos) < n ?
				    (size_t)(st.st_size - pos) : n);
	if (fi.mode != FI_OVERWRITE && !fi.short_done && n > 1) {
		fi.short_done = true;	/* the disk fills during this one */
		return __real_write(fd, buf, n / 2);
	}
	return fi_fail();
}

int __wrap_fsync(int fd)
{
	struct stat st;
	bool dir = !fstat(fd, &st) && S_ISDIR(st.st_mode);

	if (fi.mode == FI_DIRSYNC && dir) {
		fi.dir_fault = true;
		return fi_fail();
	}
	if (fi_past() && fi.mode != FI_OVERWRITE) {
		fi.dir_fault |= dir;
		return fi_fail();
	}
	fi.dir_synced |= dir && fi.renamed;
	return __real_fsync(fd);
}

int __wrap_close(int fd)
{
	fi_past();
	return __real_close(fd);
}

int __wrap_rename(const char *from, const char *to)
{
	if (fi_past() && fi.mode != FI_OVERWRITE)
		return fi_fail();
	fi.renamed = true;
	fi.dir_synced = false;
	return __real_rename(from, to);
}

int __wrap_unlink(const char *path)
{
	fi_past();
	return __real_unlink(path);
}

/* The whole of @path as a string (malloc'd), or NULL. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t size = 0;

	if (f) {
		FILE *m = open_memstream(&buf, &size);
		int ch;

		while (m && (ch = fgetc(f)) != EOF)
			fputc(ch, m);
		if (m)
			fclose(m);
		fclose(f);
	}
	return buf;
}

/*
 * The final meta.json, with a fault injected at each of the calls its
 * write makes in turn (every step of the temporary file's path, and,
 * when no file can be created, every step of the reserve's, the lean
 * retries included): meta.json must be, after each, valid and either the
 * one the capture began with, byte for byte, or the final one (complete,
 * every trace), the latter exactly when capture_write_meta() returns 0,
 * with no meta.json.tmp left.  On a disk that overwrites in place
 * (FI_OVERWRITE) it is always the final one; after a crash (the process
 * gone at that call) it is one or the other.
 */
static void test_meta_faults(const char *dir)
{
	enum { NT = 4, NG = 30 };
	static const enum fi_mode modes[] = { FI_COW, FI_COW_RESERVE, FI_OVERWRITE, FI_CRASH,
					       FI_CRASH_RESERVE };
	static const char *const names[] = { "", "copy-on-write", "copy-on-write, no new file",
					     "overwrites in place", "crash",
					     "no new file, crash" };
	static struct capture_trace tr[NT];
	static struct ipt_gap gaps[NG];
	static char *argv[] = { "/usr/bin//x/y/z", "-o", "/a/b/c/d/e/f", NULL };
	char meta[512], tmp[512], res[512], msg[512];
	struct capture c;
	unsigned int m, k, total, bad, first_bad, finals;

	stream_thread_capture(&c, dir, tr, NT);
	c.prog.argv = argv;
	gapped_traces(&c, tr, NT, gaps, NG);
	snprintf(meta, sizeof(meta), "%s/meta.json", dir);
	snprintf(tmp, sizeof(tmp), "%s/meta.json.tmp", dir);
	snprintf(res, sizeof(res), "%s/" CAPTURE_META_RESERVE, dir);
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		bad = finals = first_bad = 0;
		total = UINT_MAX;
		for (k = 0; k <= total; k++) {	/* k = 0: the calls without a fault */
			struct json_object *o;
			char *before, *after;
			bool valid, final;
			int rc = -1, wst;
			pid_t pid;

			unlink(meta);
			unlink(tmp);
			unlink(res);
			c.nr_traces = 0;
			c.complete = false;
			snprintf(c.reason, sizeof(c.reason), "%s", CAPTURE_UNFINISHED);
			if (capture_begin_meta(&c)) {
				bad++;
				break;
			}
			before = slurp(meta);
			c.nr_traces = NT;
			c.complete = true;
			fi.calls = 0;
			fi.short_done = false;
			fi.renamed = fi.dir_synced = fi.dir_fault = false;
			fi.at = k ? k : UINT_MAX;
			if (k && (modes[m] == FI_CRASH || modes[m] == FI_CRASH_RESERVE)) {
				fflush(stdout);
				pid = fork();
				if (pid == 0) {
					fi.mode = modes[m];
					_exit(capture_write_meta(&c) ? 2 : 1);
				}
				wst = 0;
				waitpid(pid, &wst, 0);
			} else {
				fi.mode = modes[m];
				rc = capture_write_meta(&c);
				fi.mode = FI_OFF;
			}
			if (!k)
				total = fi.calls;
			after = slurp(meta);
			o = capture_read_meta(dir, msg, sizeof(msg));
			valid = o != NULL;
			final = o && json_object_get_boolean(jget(o, "complete")) &&
				json_object_array_length(jget(o, "traces")) == NT;
			json_object_put(o);
			/*
			 * Final exactly when the write says so, unless the
			 * fault hit the directory's fsync after the rename
			 * (final, the error returned); a write that succeeds
			 * fsync'd the directory after its last rename and
			 * removed the reserve.
			 */
			if (!valid || !after || (!final && (!before || strcmp(before, after))) ||
			    (modes[m] != FI_CRASH && modes[m] != FI_CRASH_RESERVE &&
			     (((rc == 0) != final && !(final && fi.dir_fault)) ||
			      (rc == 0 && (!fi.dir_synced || !access(res, F_OK))) ||
			      !access(tmp, F_OK))) ||
			    (modes[m] == FI_OVERWRITE && !final)) {
				if (!bad++)
					first_bad = k;
			}
			finals += final;
			free(before);
			free(after);
		}
		CHECK(bad == 0 && total > 5 && total < UINT_MAX,
		      "meta.json, %s: a fault at each of the %u calls of the final write leaves "
		      "it valid, the first or the final one (%u final; %u wrong, the first at "
		      "call %u)", names[modes[m]], total, finals, bad, first_bad);
	}
	unlink(meta);
	unlink(tmp);
	unlink(res);
}

/*
 * The final meta.json renamed into place, then the directory's fsync
 * fails (ENOSPC): the error is returned and the final meta.json stays,
 * every gap itemised; the failure is not taken for a full disk, which
 * would rewrite it through the reserve with its gaps only counted.
 */
static void test_meta_dirsync(const char *dir)
{
	enum { NT = 4, NG = 30 };
	static struct capture_trace tr[NT];
	static struct ipt_gap gaps[NG];
	char res[512], tmp[512], msg[512];
	struct json_object *o;
	struct capture c;
	int rc;

	stream_thread_capture(&c, dir, tr, NT);
	gapped_traces(&c, tr, NT, gaps, NG);
	c.complete = false;
	snprintf(c.reason, sizeof(c.reason), "%s", CAPTURE_UNFINISHED);
	CHECK(capture_begin_meta(&c) == 0, "dir fsync: the capture begins");
	c.complete = true;
	c.reason[0] = 0;
	c.nr_traces = NT;
	fi.dir_fault = false;
	fi.at = UINT_MAX;
	fi.mode = FI_DIRSYNC;
	rc = capture_write_meta(&c);
	fi.mode = FI_OFF;
	o = capture_read_meta(dir, msg, sizeof(msg));
	snprintf(res, sizeof(res), "%s/" CAPTURE_META_RESERVE, dir);
	snprintf(tmp, sizeof(tmp), "%s/meta.json.tmp", dir);
	CHECK(fi.dir_fault && rc == ENOSPC && o && json_object_get_boolean(jget(o, "complete")) &&
	      json_object_array_length(jget(o, "traces")) == NT &&
	      json_object_array_length(jget(o, "traces.0.gaps")) == NG &&
	      json_object_get_int64(jget(o, "traces.0.gaps_unlisted")) == 0 &&
	      access(res, F_OK) && access(tmp, F_OK),
	      "dir fsync: fails after the rename: error returned (%s), the final meta.json "
	      "with every gap itemised stays, no reserve or temporary file left",
	      strerror(rc));
	json_object_put(o);
}

/*
 * A final meta.json that cannot be written for another reason than a full
 * disk (meta.json.tmp is a directory: EISDIR): the error is returned,
 * meta.json stays the one the capture began with, and the reserve goes,
 * as after a final write that succeeds: nothing would use it any more.
 */
static void test_meta_fail_drops_reserve(const char *dir)
{
	struct capture_trace tr[1];
	char res[512], tmp[512], msg[512];
	struct json_object *o;
	struct capture c;
	int rc;

	memset(tr, 0, sizeof(tr));
	stream_thread_capture(&c, dir, tr, 1);
	c.meta_reserve = capture_meta_reserve(&c, 1);
	c.complete = false;
	snprintf(c.reason, sizeof(c.reason), "%s", CAPTURE_UNFINISHED);
	snprintf(res, sizeof(res), "%s/" CAPTURE_META_RESERVE, dir);
	snprintf(tmp, sizeof(tmp), "%s/meta.json.tmp", dir);
	CHECK(capture_begin_meta(&c) == 0 && !access(res, F_OK),
	      "failed final write: the capture begins with its reserve");
	CHECK(mkdir(tmp, 0755) == 0, "failed final write: meta.json.tmp is a directory");
	c.complete = true;
	c.reason[0] = 0;
	rc = capture_write_meta(&c);
	o = capture_read_meta(dir, msg, sizeof(msg));
	CHECK(rc == EISDIR && o && !json_object_get_boolean(jget(o, "complete")) &&
	      access(res, F_OK),
	      "failed final write: EISDIR returned (%s), meta.json the first one, the reserve "
	      "removed", strerror(rc));
	json_object_put(o);
	rmdir(tmp);
}

/* A per-thread capture: file names, "mode":"thread", per-trace thread state. */
static void test_meta_thread(const char *dir)
{
	struct capture c;
	struct capture_trace tr[3];
	struct json_object *o, *t;
	static char *argv[] = { "sh", "-c", "sleep 0.1 & wait", NULL };
	char msg[512], path[600];
	unsigned char data[16] = { 1, 2, 3 };
	struct iptcap_seg seg = { 0, 16 };
	struct stat st;
	int rc, i;

	memset(&c, 0, sizeof(c));
	memset(tr, 0, sizeof(tr));
	c.dir = dir;
	c.complete = true;
	c.caps = sample_caps();
	c.per_thread = true;
	c.inherit = true;
	c.config.mode = IPT_MODE_THREAD;
	c.config.max_threads = 64;
	c.config.buffer_size = 1 << 20;
	c.config.trace_flags = IPT_TRACE_BRANCH | IPT_TRACE_USER;
	c.prog.argv = argv;
	c.prog.pid = 300;
	c.prog.exited = true;
	c.prog.status = 0;
	c.traces = tr;
	c.nr_traces = 3;
	for (i = 0; i < 3; i++) {
		tr[i].cpu = (unsigned int)i;
		tr[i].ts.buffer_size = 1 << 20;
		tr[i].ts.bytes_valid = 16;
		tr[i].ts.status = IPT_TS_THREAD | IPT_TS_INHERIT | IPT_TS_EXITED;
		tr[i].ts.parent = i ? 0 : IPT_TRACE_NONE;
	}
	tr[0].ts.tid = 300;
	tr[0].ts.missed = 2;
	tr[0].ts.switches = 17;
	tr[0].ts.busy = 1;
	tr[1].ts.tid = 301;
	tr[1].ts.status |= IPT_TS_INHERITED;
	tr[2].ts.tid = 300;	/* the tid came back: a second trace of "300" */
	tr[2].ts.status = IPT_TS_THREAD | IPT_TS_DETACHED;
	for (i = 0; i < 3; i++)
		capture_thread_file(tr, (size_t)i);
	CHECK(!strcmp(tr[0].file, "thread-300.pt") && !strcmp(tr[1].file, "thread-301.pt") &&
	      !strcmp(tr[2].file, "thread-300.2.pt"),
	      "per-thread file names: %s %s %s", tr[0].file, tr[1].file, tr[2].file);
	rc = 0;
	for (i = 0; i < 3; i++)
		rc |= capture_write_trace(&c, &tr[i], data, &seg, 1);
	snprintf(path, sizeof(path), "%s/thread-300.2.pt", dir);
	CHECK(rc == 0 && !stat(path, &st) && st.st_size == 16, "the files are written by name");
	rc = capture_write_meta(&c);
	o = rc ? NULL : capture_read_meta(dir, msg, sizeof(msg));
	CHECK(o != NULL, "per-thread meta.json written and read back");
	if (!o)
		return;
	CHECK(!strcmp(json_object_get_string(jget(o, "mode")), "thread") &&
	      json_object_get_int(jget(o, "format_version")) == 1 &&
	      json_object_get_int(jget(o, "config.max_threads")) == 64 &&
	      json_object_get_boolean(jget(o, "config.inherit")),
	      "mode thread, format_version stays 1, max_threads, inherit");
	CHECK(json_object_get_int(jget(o, "program.pid")) == 300 &&
	      json_object_get_int(jget(o, "program.exit_status")) == 0 &&
	      jget(o, "program.exit_status") != NULL && jget(o, "program.signal") == NULL &&
	      json_object_array_length(jget(o, "program.argv")) == 3 &&
	      !strcmp(json_object_get_string(json_object_array_get_idx(jget(o, "program.argv"), 2)),
		      "sleep 0.1 & wait"), "program: argv, pid, exit status");
	t = json_object_array_get_idx(jget(o, "traces"), 0);
	CHECK(t && json_object_get_int(jget(t, "tid")) == 300 &&
	      json_object_get_int(jget(t, "trace")) == 0 &&
	      json_object_object_get_ex(t, "parent", NULL) && !jget(t, "parent") &&
	      !json_object_object_get_ex(t, "cpu", NULL) &&
	      json_object_get_boolean(jget(t, "exited")) &&
	      !json_object_get_boolean(jget(t, "inherited")) &&
	      json_object_get_boolean(jget(t, "inherit")) &&
	      json_object_get_int(jget(t, "missed")) == 2 &&
	      json_object_get_int(jget(t, "switches")) == 17 &&
	      json_object_get_int(jget(t, "busy")) == 1 &&
	      !strcmp(json_object_get_string(jget(t, "file")), "thread-300.pt"),
	      "trace 0: tid, trace, parent null, no cpu key, flags and counters");
	t = json_object_array_get_idx(jget(o, "traces"), 1);
	CHECK(t && json_object_get_int(jget(t, "parent")) == 0 && jget(t, "parent") &&
	      json_object_get_boolean(jget(t, "inherited")), "trace 1: parent trace 0, inherited");
	t = json_object_array_get_idx(jget(o, "traces"), 2);
	CHECK(t && json_object_get_boolean(jget(t, "detached")) &&
	      !json_object_get_boolean(jget(t, "exited")) &&
	      !strcmp(json_object_get_string(jget(t, "file")), "thread-300.2.pt"),
	      "trace 2: detached, its own file");
	json_object_put(o);

	/* A directory holding a per-thread capture can be recorded into again. */
	CHECK(!capture_prepare_dir(dir, msg, sizeof(msg)) && stat(path, &st),
	      "an older per-thread capture is replaced: %s", msg);
}

/* iptcap_config_to_ipt() for per-thread sessions. */
static void test_config_thread(void)
{
	struct ipt_caps caps = sample_caps();
	struct iptcap_config cfg;
	struct ipt_config ic;
	char msg[256];
	enum iptcap_err err;
	uint64_t m = 1;

	iptcap_config_init(&cfg);
	cfg.per_thread = true;
	cfg.kernel = false;
	cfg.all_cpus = false;
	cfg.cpu_mask = &m;	/* ignored in per-thread mode */
	cfg.cpu_mask_words = 1;
	err = iptcap_config_to_ipt(&cfg, &caps, &ic, msg, sizeof(msg));
	CHECK(!err && ic.mode == IPT_MODE_THREAD && ic.max_threads == IPTCAP_DEFAULT_MAX_THREADS &&
	      !ic.flags && !ic.cpu_mask_ptr && !ic.cpu_mask_words &&
	      ic.buffer_size == IPTCAP_DEFAULT_BUFFER_SIZE &&
	      ic.trace_flags == (IPT_TRACE_USER | IPT_TRACE_BRANCH),
	      "per-thread: IPT_MODE_THREAD, default max_threads, no CPU mask");
	cfg.max_threads = 1024;
	err = iptcap_config_to_ipt(&cfg, &caps, &ic, msg, sizeof(msg));
	CHECK(!err && ic.max_threads == 1024, "1024 threads");
	cfg.max_threads = 1025;
	err = iptcap_config_to_ipt(&cfg, &caps, &ic, msg, sizeof(msg));
	CHECK(err == IPTCAP_ERR_INVALID && strstr(msg, "1024"), "1025 threads: %s", msg);
	cfg.max_threads = 2;
	cfg.mtc_freq = 4;
	err = iptcap_config_to_ipt(&cfg, &caps, &ic, msg, sizeof(msg));
	CHECK(err == IPTCAP_ERR_CAPABILITY && !strncmp(msg, "mtc_freq 4: ", 12),
	      "per-thread options are checked against the caps like per-CPU ones: %s", msg);
	iptcap_config_init(&cfg);
	err = iptcap_config_to_ipt(&cfg, &caps, &ic, msg, sizeof(msg));
	CHECK(!err && ic.mode == IPT_MODE_CPU && !ic.max_threads, "per-CPU: max_threads stays 0");
}

static void test_enospc(const char *dir)
{
	struct capture c;
	struct capture_trace tr;
	unsigned char data[8192];
	struct iptcap_seg seg = { 0, sizeof(data) };
	char path[512];
	size_t done;
	int fd, rc;

	fd = open("/dev/full", O_WRONLY);
	rc = fd >= 0 ? write_full(fd, "x", 1, &done) : -1;
	CHECK(rc == ENOSPC && done == 0, "write_full reports ENOSPC");
	if (fd >= 0)
		close(fd);
	CHECK(iptcap_err_from_errno(ENOSPC) == IPTCAP_ERR_NO_SPACE, "ENOSPC maps to NO_SPACE");

	/* A trace file that is /dev/full: the capture becomes incomplete. */
	memset(&c, 0, sizeof(c));
	memset(&tr, 0, sizeof(tr));
	memset(data, 0, sizeof(data));
	c.dir = dir;
	c.complete = true;
	tr.cpu = 7;
	snprintf(path, sizeof(path), "%s/cpu7.pt", dir);
	unlink(path);
	rc = symlink("/dev/full", path);
	CHECK(rc == 0, "cpu7.pt -> /dev/full");
	rc = capture_write_trace(&c, &tr, data, &seg, 1);
	CHECK(rc == ENOSPC && tr.write_errno == ENOSPC && tr.written == 0, "ENOSPC is reported");
	CHECK(!c.complete && strstr(c.reason, "cpu7.pt") && strstr(c.reason, "No space"),
	      "capture marked incomplete: %s", c.reason);
	capture_incomplete(&c, "second reason");
	CHECK(!strstr(c.reason, "second"), "the first reason is kept");
	unlink(path);
}

static void test_progress_copy(void)
{
	static unsigned char buf[64 * 4096];
	unsigned char out[16];
	struct ipt_trace_state ts;
	size_t done;
	int i;

	memset(buf, 0, sizeof(buf));
	CHECK(progress_estimate(buf, sizeof(buf)) == 0, "progress: an empty buffer is 0");
	memset(buf, 0x42, 10 * 4096 + 5);
	CHECK(progress_estimate(buf, sizeof(buf)) == 11 * 4096,
	      "progress: written to the page (11 pages)");
	buf[10 * 4096 + 4000] = 0;
	memset(buf + 10 * 4096, 0, 4096);
	buf[10 * 4096 + 4095] = 1;	/* a page whose only non-zero byte is its last */
	CHECK(progress_estimate(buf, sizeof(buf)) == 11 * 4096, "progress: any non-zero byte counts");
	memset(buf, 0x42, sizeof(buf));
	CHECK(progress_estimate(buf, sizeof(buf)) == sizeof(buf), "progress: a full buffer");

	for (i = 0; i < 16; i++)
		buf[i] = (unsigned char)((i + 16 - 6) % 16);
	memset(&ts, 0, sizeof(ts));
	ts.buffer_size = ts.bytes_valid = 16;
	ts.status = IPT_TS_WRAPPED;
	ts.head = ts.oldest = 6;
	CHECK(iptcap_copy_segments(buf, &ts, out, sizeof(out), &done) == IPTCAP_OK && done == 16 &&
	      out[0] == 0 && out[9] == 9 && out[10] == 10 && out[15] == 15,
	      "iptcap_copy_segments unrolls a ring");
	CHECK(iptcap_copy_segments(buf, &ts, out, 15, &done) == IPTCAP_ERR_INVALID && done == 0,
	      "iptcap_copy_segments: a short destination is refused");
	ts.oldest = 17;
	CHECK(iptcap_copy_segments(buf, &ts, out, sizeof(out), &done) == IPTCAP_ERR_ABI,
	      "iptcap_copy_segments: an inconsistent state is refused");
}

/* 'ipttool info' (@t's options) with its stdout into the file @path: its exit status. */
static int info_to(struct ipttool *t, char **argv, const char *path)
{
	int fd, saved, rc;

	fflush(stdout);
	saved = dup(1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, 1);
	rc = cmd_info(t, 2, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(fd);
	return rc;
}

/* A capture with ranges, CR3 and a snapshot-only sideband, read by 'info'. */
static void test_info_sideband(const char *dir)
{
	struct capture c;
	struct capture_trace tr;
	struct ipttool t = { 0 };
	struct json_object *o, *v;
	char msg[512], path[512], out[8192], *argv[] = { "info", (char *)dir, NULL };
	int fd, rc;
	ssize_t n;

	memset(&c, 0, sizeof(c));
	memset(&tr, 0, sizeof(tr));
	c.dir = dir;
	c.complete = true;
	c.caps = sample_caps();
	c.config.buffer_size = 4096;
	c.config.trace_flags = IPT_TRACE_BRANCH | IPT_TRACE_USER | IPT_TRACE_CR3_FILTER;
	c.config.cr3_match = 0x1a2b3000;
	c.config.ranges[0].kind = IPT_RANGE_FILTER;
	c.config.ranges[0].start = 0x401000;
	c.config.ranges[0].end = 0x401fff;
	c.config.ranges[1].kind = IPT_RANGE_STOP;
	c.config.ranges[1].start = 0xffffffff81000000ull;
	c.config.ranges[1].end = 0xffffffff81000fffull;
	c.traces = &tr;
	c.nr_traces = 1;
	snprintf(c.sb.perf_skipped, sizeof(c.sb.perf_skipped), "disabled with --no-sideband");
	rc = capture_sb_begin(&c, false, msg, sizeof(msg));	/* CHECK evaluates twice */
	CHECK(rc == 0, "snapshot sideband written");
	capture_sb_end(&c);
	capture_write_trace(&c, &tr, NULL, NULL, 0);
	rc = capture_write_meta(&c);
	CHECK(rc == 0, "meta.json with sideband written");
	o = capture_read_meta(dir, msg, sizeof(msg));
	v = NULL;
	CHECK(o && json_object_object_get_ex(jget(o, "config"), "ranges", &v) &&
	      json_object_array_length(v) == 2 &&
	      !strcmp(json_object_get_string(jget(json_object_array_get_idx(v, 0), "kind")), "filter") &&
	      json_object_get_uint64(jget(json_object_array_get_idx(v, 1), "start")) ==
	      0xffffffff81000000ull &&
	      json_object_get_uint64(jget(o, "config.cr3_match")) == 0x1a2b3000,
	      "meta.json: config.ranges and config.cr3_match");
	CHECK(o && jget(o, "sideband.snapshot.processes") &&
	      json_object_get_int(jget(o, "sideband.snapshot.processes")) > 0 &&
	      !json_object_get_boolean(jget(o, "sideband.perf")) &&
	      !strcmp(json_object_get_string(jget(o, "sideband.file")), "sideband.jsonl"),
	      "meta.json: sideband with a snapshot, no perf");
	json_object_put(o);

	snprintf(path, sizeof(path), "%s/info.out", dir);
	rc = info_to(&t, argv, path);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, out, sizeof(out) - 1) : -1;
	out[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	unlink(path);
	CHECK(rc == 0 && strstr(out, "status:      complete"), "info reads it");
	CHECK(strstr(out, "sideband:    sideband.jsonl: no perf records (disabled with --no-sideband)") != NULL,
	      "info shows the sideband and why it has no perf records");
	CHECK(strstr(out, "snapshot:") && strstr(out, "processes") && strstr(out, "vdso0.so"),
	      "info shows the snapshot counts and the vDSO");
	CHECK(strstr(out, "cr3 0x1a2b3000") && strstr(out, "filter 0x401000-0x401fff") &&
	      strstr(out, "stop 0xffffffff81000000-0xffffffff81000fff"), "info shows ranges and CR3");
	CHECK(!strstr(out, "MISSING") && !strstr(out, "MISMATCH"), "info: files match");
	snprintf(path, sizeof(path), "%s/vdso0.so", dir);
	unlink(path);
	t.json = true;
	rc = info_to(&t, argv, "/dev/null");
	CHECK(rc == 0, "info -j still reads a capture with a missing vDSO file");
	/* -j: 64-bit addresses as hex strings (jq rounds numbers above 2^53) */
	snprintf(path, sizeof(path), "%s/info.json", dir);
	rc = info_to(&t, argv, path);
	o = json_object_from_file(path);
	unlink(path);
	v = o ? jget(o, "config.ranges") : NULL;
	CHECK(rc == 0 && v && json_object_is_type(jget(json_object_array_get_idx(v, 1), "start"),
						  json_type_string) &&
	      !strcmp(json_object_get_string(jget(json_object_array_get_idx(v, 1), "start")),
		      "0xffffffff81000000") &&
	      !strcmp(json_object_get_string(jget(json_object_array_get_idx(v, 1), "end")),
		      "0xffffffff81000fff") &&
	      json_object_is_type(jget(o, "config.cr3_match"), json_type_string) &&
	      !strcmp(json_object_get_string(jget(o, "config.cr3_match")), "0x1a2b3000") &&
	      json_object_is_type(jget(o, "config.buffer_size"), json_type_int),
	      "info -j: config.ranges[].start/end and cr3_match are hex strings, counts numbers");
	json_object_put(o);
	t.json = false;

	/* The directory is recognised as a capture and can be reused. */
	rc = capture_prepare_dir(dir, msg, sizeof(msg));
	{
		char sbp[600];
		bool gone;

		snprintf(sbp, sizeof(sbp), "%s/sideband.jsonl", dir);
		gone = access(path, F_OK) && access(sbp, F_OK);
		CHECK(rc == 0 && gone, "a capture with sideband files is reused (emptied)");
	}
	capture_sb_free(&c);
}

/*
 * capture_prepare_dir(): a recording killed between its reserve and its
 * first meta.json left only those two files: the directory is reused;
 * trace files without a meta.json, or anything else, are not ipt's.
 */
static void test_prepare_dir(const char *dir)
{
	static const char *const files[][3] = {
		{ CAPTURE_META_RESERVE, NULL },
		{ CAPTURE_META_RESERVE, CAPTURE_META ".tmp", NULL },
		{ CAPTURE_META ".tmp", NULL },
		{ CAPTURE_META_RESERVE, "cpu0.pt", NULL },
		{ CAPTURE_META_RESERVE, "notes.txt", NULL },
	};
	static const bool reused[] = { true, true, true, false, false };
	char sub[512], path[600], msg[512];
	unsigned int i, k;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		bool left = false, all = true;
		int rc;

		snprintf(sub, sizeof(sub), "%s/prepare-%u", dir, i);
		mkdir(sub, 0755);
		for (k = 0; files[i][k]; k++) {
			FILE *f;

			snprintf(path, sizeof(path), "%s/%s", sub, files[i][k]);
			f = fopen(path, "w");
			if (f)
				fclose(f);
		}
		msg[0] = 0;
		rc = capture_prepare_dir(sub, msg, sizeof(msg));
		for (k = 0; files[i][k]; k++) {
			snprintf(path, sizeof(path), "%s/%s", sub, files[i][k]);
			if (access(path, F_OK))
				all = false;
			else
				left = true;
		}
		if (reused[i])
			CHECK(rc == 0 && !left, "prepare dir: %s%s%s left by a killed recording: "
			      "reused, emptied", files[i][0], files[i][1] ? " + " : "",
			      files[i][1] ? files[i][1] : "");
		else
			CHECK(rc == -1 && strstr(msg, "not an ipt capture") && all,
			      "prepare dir: %s + %s refused, untouched: %s", files[i][0],
			      files[i][1], msg);
		for (k = 0; files[i][k]; k++) {
			snprintf(path, sizeof(path), "%s/%s", sub, files[i][k]);
			unlink(path);
		}
		rmdir(sub);	/* @dir is itself a capture directory later */
	}
}

/* realloc() fails while set: the gap list's allocation failure. */
static bool fail_realloc;
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);

void *__wrap_realloc(void *p, size_t n)
{
	if (fail_realloc) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, n);
}

/*
 * A streamed capture's gaps: the first CAPTURE_GAPS_LISTED of all traces
 * together itemised in order, every later one (in any trace) and every
 * one there was no memory to list counted ("gaps_unlisted"): none is
 * dropped and none fails the recording; meta.json's totals add up.  A
 * trace without a slot is EINVAL.
 */
static void test_stream_gaps(void)
{
	struct capture_stream_slot slots[2] = { 0 };
	const struct iptcap_stream_trace t0 = { .trace = 0 }, t1 = { .trace = 1 },
					 t2 = { .trace = 2 };
	struct capture_trace tr[2] = { 0 };
	struct json_object *o;
	struct ipt_gap g = { .bytes_lost = 100 };
	struct capture c;
	uint64_t i, bad = 0;
	int rc;

	memset(&c, 0, sizeof(c));
	c.caps = sample_caps();
	c.stream = true;
	c.slots = slots;
	c.nr_slots = 2;
	/* no memory for trace 1's first: counted, not failed */
	fail_realloc = true;
	rc = capture_stream_gap(&t1, &g, &c);
	fail_realloc = false;
	CHECK(rc == 0 && slots[1].nr_gaps == 0 && slots[1].unlisted == 1,
	      "stream gaps: no memory: counted, not failed (rc %d, %zu listed, %" PRIu64 ")", rc,
	      slots[1].nr_gaps, slots[1].unlisted);
	/* then one listed in trace 1, the rest of the budget in trace 0 */
	rc = capture_stream_gap(&t1, &g, &c);
	CHECK(rc == 0 && slots[1].nr_gaps == 1 && slots[1].unlisted == 1,
	      "stream gaps: listed again when memory returns");
	for (i = 0; i < CAPTURE_GAPS_LISTED + 2; i++) {
		g.offset = i << 12;
		g.tsc_start = 10 * i + 1;
		g.tsc_end = 10 * i + 5;
		bad += capture_stream_gap(&t0, &g, &c) != 0;
	}
	CHECK(!bad && slots[0].nr_gaps == CAPTURE_GAPS_LISTED - 1 && slots[0].unlisted == 3 &&
	      c.gaps_listed == CAPTURE_GAPS_LISTED,
	      "stream gaps: %u itemised in all, the later ones counted (%zu, %" PRIu64 ", %"
	      PRIu64 " failed)", CAPTURE_GAPS_LISTED, slots[0].nr_gaps, slots[0].unlisted, bad);
	for (i = 0, bad = 0; i < slots[0].nr_gaps; i++)
		bad += slots[0].gaps[i].offset != i << 12 || slots[0].gaps[i].tsc_start != 10 * i + 1;
	CHECK(!bad, "stream gaps: the itemised ones are the first, in order");
	rc = capture_stream_gap(&t1, &g, &c);
	CHECK(rc == 0 && slots[1].nr_gaps == 1 && slots[1].unlisted == 2,
	      "stream gaps: the budget is the capture's: another trace's next is counted");
	CHECK(capture_stream_gap(&t2, &g, &c) == EINVAL && capture_stream_unlisted(&t2, 1, &c) ==
	      EINVAL, "stream gaps: a trace without a slot is EINVAL");
	/* meta.json of the two traces, as capture_snapshot_stream() lists them */
	for (i = 0; i < 2; i++) {
		tr[i].cpu = (unsigned int)i;
		snprintf(tr[i].file, sizeof(tr[i].file), "cpu%u.pt", (unsigned int)i);
		tr[i].gaps = slots[i].gaps;
		tr[i].nr_gaps = slots[i].nr_gaps;
		tr[i].gaps_unlisted = slots[i].unlisted;
	}
	c.traces = tr;
	c.nr_traces = 2;
	CHECK(capture_nr_gaps(&c) == CAPTURE_GAPS_LISTED + 5, "stream gaps: capture_nr_gaps");
	o = capture_meta_json(&c);
	CHECK(o && json_object_get_uint64(jget(o, "stream.gaps")) == CAPTURE_GAPS_LISTED + 5 &&
	      json_object_get_uint64(jget(o, "stream.gaps_itemised")) == CAPTURE_GAPS_LISTED &&
	      json_object_get_uint64(jget(o, "stream.gaps_unlisted")) == 5 &&
	      json_object_array_length(jget(o, "traces.0.gaps")) == CAPTURE_GAPS_LISTED - 1 &&
	      json_object_get_uint64(jget(o, "traces.0.gaps_unlisted")) == 3 &&
	      json_object_get_uint64(jget(o, "traces.1.gaps_unlisted")) == 2,
	      "stream gaps: meta.json counts every gap, itemised or not");
	json_object_put(o);
	free(slots[0].gaps);
	free(slots[1].gaps);
}

/*
 * The pace of a streamed recording's meta.json snapshots: not within a
 * second of the last, and not within CAPTURE_SNAPSHOT_SHARE times the
 * last one's cost; the first at once.
 */
static void test_snapshot_due(void)
{
	const uint64_t s = 1000000000ull;

	CHECK(capture_snapshot_due(5 * s, 0, 0), "snapshot pace: the first at once");
	CHECK(!capture_snapshot_due(10 * s + s - 1, 10 * s, 1000) &&
	      capture_snapshot_due(11 * s, 10 * s, 1000), "snapshot pace: at most once a second");
	CHECK(!capture_snapshot_due(10 * s + 3 * s, 10 * s, s / 5) &&
	      capture_snapshot_due(10 * s + 4 * s, 10 * s, s / 5),
	      "snapshot pace: a 200 ms snapshot waits %u times that", CAPTURE_SNAPSHOT_SHARE);
	CHECK(!capture_snapshot_due(UINT64_MAX - 1, 1, UINT64_MAX / 2),
	      "snapshot pace: a cost that overflows the product waits for good");
}

int main(void)
{
	char dir[] = "/tmp/ipt-test-capture.XXXXXX";
	char cmd[128];

	test_parse();
	test_config();
	test_config_thread();
	test_segments();
	test_progress_copy();
	test_stream_gaps();
	test_snapshot_due();
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return tap_done();
	}
	test_meta(dir);
	test_meta_thread(dir);
	test_prepare_dir(dir);
	test_enospc(dir);
	test_meta_full_disk(dir);
	test_meta_faults(dir);
	test_meta_dirsync(dir);
	test_meta_fail_drops_reserve(dir);
	test_meta_reserve_worst(dir);
	test_info_sideband(dir);
	test_symbols(dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		CHECK(0, "cleanup");
	return tap_done();
}

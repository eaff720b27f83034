// SPDX-License-Identifier: GPL-2.0
/*
 * ptgen: ground-truth Intel PT traces of real programs.
 *
 * Runs a program under ptrace single-step, records every user-mode
 * instruction it executes, classifies each with Zydis and encodes the
 * control flow as Intel PT packets with libipt's encoder, the way a PT
 * unit tracing user mode only (CTL.User = 1, CTL.OS = 0) would.
 *
 *   ptgen [--psb-period N] [--no-retcomp] [--aslr] -o DIR -- PROG [ARG]...
 *
 * DIR receives trace.pt, insns.bin (u64 LE IPs), images (img-BASE.bin and
 * images.txt), maps.txt, cpu, ptcheck-args, ptxed-args, feed.bin and
 * info.txt; Documentation/groundtruth.rst describes them.
 *
 * gnu11 is not needed: _GNU_SOURCE (for personality() and the ptrace
 * register layout) is enough with -std=c11.
 */
#include <Zydis/Zydis.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CPU_IDENT "6/126/5"
#define RETSTACK 64

enum cls { C_UNKNOWN, C_OTHER, C_COND, C_JMP, C_CALL, C_JMP_IND, C_CALL_IND,
	   C_RET, C_FAR };

struct cent {		/* decoded-instruction cache entry */
	uint64_t ip, target;
	uint8_t cls, len;
};

struct image {
	uint64_t start, end;
	uint8_t *bytes;
};

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static const char *outdir;
static char outabs[PATH_MAX];
static pid_t child;
static ZydisDecoder zdec;

static struct cent *cache;
static size_t cache_mask;
static size_t cache_used;

static struct image *images;
static size_t nimages;
static FILE *maps_out;
static unsigned int nsnapshots;

static struct pt_encoder *enc;
static uint8_t encbuf[64];
static struct buf trace, record, feed, insns;
static uint64_t last_ip, since_psb, psb_period = 4096;
static bool force_full = true, enabled, retcomp = true;
static uint64_t tnt_bits;
static unsigned int tnt_n;
static uint64_t rstack[RETSTACK];
static unsigned int rs_top, rs_n;
static uint64_t n_insn, n_psb, n_tip, n_tnt_bits, n_retcomp, n_syscall,
	n_async, n_records;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("ptgen: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (child > 0)
		kill(child, SIGKILL);
	exit(2);
}

static void buf_add(struct buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 65536;

		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			die("out of memory");
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* ---- images ---------------------------------------------------------- */

static struct image *find_image(uint64_t ip)
{
	static size_t last = SIZE_MAX;
	size_t i;

	if (last < nimages && ip >= images[last].start && ip < images[last].end)
		return &images[last];
	/* Newest first: a later dump of the same range wins. */
	for (i = nimages; i-- > 0;)
		if (ip >= images[i].start && ip < images[i].end) {
			last = i;
			return &images[i];
		}
	return NULL;
}

/* Re-read /proc/PID/maps, log it, and dump the mapping holding @ip. */
static struct image *load_image(uint64_t ip)
{
	char path[64], line[PATH_MAX + 128];
	struct image *img = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)child);
	f = fopen(path, "r");
	if (!f)
		die("%s: %s", path, strerror(errno));
	fprintf(maps_out, "# snapshot %u before instruction %" PRIu64 " (ip %#" PRIx64 ")\n",
		nsnapshots++, n_insn, ip);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		char perms[8];

		fputs(line, maps_out);
		if (img || sscanf(line, "%llx-%llx %7s", &s, &e, perms) != 3)
			continue;
		if (ip < s || ip >= e)
			continue;
		if (perms[2] != 'x')
			die("ip %#" PRIx64 " in a non-executable mapping: %s", ip, line);
		images = realloc(images, (nimages + 1) * sizeof(*images));
		if (!images)
			die("out of memory");
		img = &images[nimages++];
		img->start = s;
		img->end = e;
		img->bytes = malloc(e - s);
		if (!img->bytes)
			die("out of memory");
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)child);
		int fd = open(path, O_RDONLY);

		if (fd < 0 || pread(fd, img->bytes, e - s, (off_t)s) != (ssize_t)(e - s))
			die("cannot read %llx-%llx of the tracee: %s", s, e, strerror(errno));
		close(fd);
	}
	fclose(f);
	if (!img)
		die("ip %#" PRIx64 " is in no mapping", ip);
	return img;
}

/* ---- classification ---------------------------------------------------- */

static struct cent *cache_slot(uint64_t ip)
{
	size_t h = (size_t)((ip * 0x9E3779B97F4A7C15ull) >> 20) & cache_mask;

	while (cache[h].cls != C_UNKNOWN && cache[h].ip != ip)
		h = (h + 1) & cache_mask;
	return &cache[h];
}

static void cache_grow(void)
{
	struct cent *old = cache;
	size_t i, n = cache_mask + 1;

	cache_mask = n * 2 - 1;
	cache = calloc(n * 2, sizeof(*cache));
	if (!cache)
		die("out of memory");
	for (i = 0; i < n; i++)
		if (old[i].cls != C_UNKNOWN)
			*cache_slot(old[i].ip) = old[i];
	free(old);
}

static const struct cent *classify(uint64_t ip)
{
	struct cent *c = cache_slot(ip);
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction zi;
	struct image *img;
	ZyanU64 target;
	size_t size;

	if (c->cls != C_UNKNOWN)
		return c;
	img = find_image(ip);
	if (!img)
		img = load_image(ip);
	size = img->end - ip;
	if (size > 15)
		size = 15;
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&zdec, img->bytes + (ip - img->start),
						 size, &zi, ops)))
		die("Zydis cannot decode the instruction at %#" PRIx64, ip);
	c->ip = ip;
	c->len = zi.length;
	c->target = 0;
	switch (zi.meta.category) {
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSRET:
	case ZYDIS_CATEGORY_INTERRUPT:
		c->cls = C_FAR;
		break;
	case ZYDIS_CATEGORY_RET:
		c->cls = zi.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR ||
			 zi.mnemonic == ZYDIS_MNEMONIC_IRET ||
			 zi.mnemonic == ZYDIS_MNEMONIC_IRETD ||
			 zi.mnemonic == ZYDIS_MNEMONIC_IRETQ ? C_FAR : C_RET;
		break;
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_COND_BR: {
		bool call = zi.meta.category == ZYDIS_CATEGORY_CALL;

		if (zi.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR) {
			c->cls = C_FAR;
		} else if (ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
			   ops[0].imm.is_relative) {
			if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&zi, &ops[0], ip, &target)))
				die("no branch target at %#" PRIx64, ip);
			c->target = target;
			c->cls = zi.meta.category == ZYDIS_CATEGORY_COND_BR ? C_COND :
				 call ? C_CALL : C_JMP;
		} else if (zi.meta.category == ZYDIS_CATEGORY_COND_BR) {
			die("conditional branch without a target at %#" PRIx64, ip);
		} else {
			c->cls = call ? C_CALL_IND : C_JMP_IND;
		}
		break;
	}
	default:
		c->cls = C_OTHER;
	}
	if (++cache_used * 2 > cache_mask) {
		struct cent copy = *c;

		cache_grow();
		c = cache_slot(ip);
		*c = copy;
	}
	return c;
}

/* ---- packets ----------------------------------------------------------- */

static void emit(const struct pt_packet *pkt, bool to_feed)
{
	int n;

	pt_enc_sync_set(enc, 0);
	n = pt_enc_next(enc, pkt);
	if (n < 0)
		die("libipt encoder: %s", pt_errstr(pt_errcode(n)));
	buf_add(&trace, encbuf, (size_t)n);
	if (to_feed)
		buf_add(&record, encbuf, (size_t)n);
	since_psb += (uint64_t)n;
}

static void tnt_flush(void)
{
	struct pt_packet pkt = { 0 };

	if (!tnt_n)
		return;
	pkt.type = tnt_n <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	pkt.payload.tnt.bit_size = (uint8_t)tnt_n;
	pkt.payload.tnt.payload = tnt_bits;
	emit(&pkt, true);
	tnt_n = 0;
	tnt_bits = 0;
}

static void tnt(bool taken)
{
	tnt_bits = tnt_bits << 1 | taken;
	n_tnt_bits++;
	if (++tnt_n == 47)
		tnt_flush();
}

static bool sext48(uint64_t ip)
{
	return (uint64_t)((int64_t)(ip << 16) >> 16) == ip;
}

/* An IP packet; @ip is ignored for a suppressed one. */
static void ip_packet(enum pt_packet_type type, uint64_t ip, bool suppressed, bool to_feed)
{
	struct pt_packet pkt = { 0 };
	enum pt_ip_compression ipc;

	tnt_flush();
	if (suppressed) {
		ipc = pt_ipc_suppressed;
		ip = 0;
	} else if (force_full || !sext48(ip) != !sext48(last_ip)) {
		ipc = sext48(ip) ? pt_ipc_sext_48 : pt_ipc_full;
	} else if (!((ip ^ last_ip) >> 16)) {
		ipc = pt_ipc_update_16;
	} else if (!((ip ^ last_ip) >> 32)) {
		ipc = pt_ipc_update_32;
	} else if (!((ip ^ last_ip) >> 48)) {
		ipc = pt_ipc_update_48;
	} else {
		ipc = sext48(ip) ? pt_ipc_sext_48 : pt_ipc_full;
	}
	if (!suppressed) {
		last_ip = ip;
		force_full = false;
	}
	pkt.type = type;
	pkt.payload.ip.ipc = ipc;
	pkt.payload.ip.ip = ip;
	if (type == ppt_tip)
		n_tip++;
	emit(&pkt, to_feed);
}

static void mode_exec(bool to_feed)
{
	struct pt_packet pkt = { 0 };

	pkt.type = ppt_mode;
	pkt.payload.mode.leaf = pt_mol_exec;
	pkt.payload.mode.bits.exec.csl = 1;
	emit(&pkt, to_feed);
}

static void feed_record(uint64_t ip)
{
	uint8_t hdr[16] = { 0 };

	if (record.len > 65535)
		die("feed record of %zu bytes (lower --psb-period)", record.len);
	hdr[0] = (uint8_t)record.len;
	hdr[1] = (uint8_t)(record.len >> 8);
	/*
	 * Flag 1 (IPT_SIM_FEED_CTX_OFF): the record ends outside the trace
	 * (after TIP.PGD), so the unit must not add FUPs of its own.
	 */
	hdr[2] = enabled ? 0 : 1;
	for (int i = 0; i < 8; i++)
		hdr[8 + i] = (uint8_t)(ip >> (8 * i));
	buf_add(&feed, hdr, sizeof(hdr));
	buf_add(&feed, record.p, record.len);
	record.len = 0;
	n_records++;
}

/*
 * PSB+ at @ip (tracing enabled, at an instruction boundary).  It ends a
 * feed record: the next one must not lean on this one's last IP or
 * return stack, so both are reset here as the decoder resets them.
 */
static void psb(uint64_t ip)
{
	struct pt_packet pkt = { 0 };

	tnt_flush();
	feed_record(ip);
	pkt.type = ppt_psb;
	emit(&pkt, false);
	force_full = true;
	last_ip = 0;
	ip_packet(ppt_fup, ip, false, false);
	force_full = true;
	mode_exec(false);
	pkt.type = ppt_psbend;
	emit(&pkt, false);
	rs_n = 0;
	since_psb = 0;
	n_psb++;
}

static void disable(void)
{
	ip_packet(ppt_tip_pgd, 0, true, true);
	enabled = false;
	rs_n = 0;
}

static void rs_push(uint64_t ip)
{
	rs_top = (rs_top + 1) % RETSTACK;
	rstack[rs_top] = ip;
	if (rs_n < RETSTACK)
		rs_n++;
}

/* ---- tracing ----------------------------------------------------------- */

static void record_insn(uint64_t ip)
{
	buf_add(&insns, &ip, sizeof(ip));
	n_insn++;
}

/* Instruction at @cur executed and the next is at @next. */
static void step_done(uint64_t cur, uint64_t next)
{
	const struct cent *c = classify(cur);
	uint64_t ft = cur + c->len;

	if (c->cls == C_OTHER && next == cur)
		return;	/* one iteration of a REP string instruction */
	if (!enabled) {
		mode_exec(true);
		ip_packet(ppt_tip_pge, cur, false, true);
		enabled = true;
	} else if (since_psb >= psb_period) {
		psb(cur);
	}
	record_insn(cur);
	switch (c->cls) {
	case C_OTHER:
		if (next != ft)
			die("insn %" PRIu64 " at %#" PRIx64 " went to %#" PRIx64,
			    n_insn - 1, cur, next);
		break;
	case C_COND:
		if (next != ft && next != c->target)
			die("branch at %#" PRIx64 " went to %#" PRIx64, cur, next);
		tnt(next != ft);
		break;
	case C_JMP:
	case C_CALL:
		if (next != c->target)
			die("direct branch at %#" PRIx64 " went to %#" PRIx64, cur, next);
		/* libipt does not push a call to the next instruction (PIC). */
		if (c->cls == C_CALL && c->target != ft)
			rs_push(ft);
		break;
	case C_CALL_IND:
		rs_push(ft);
		ip_packet(ppt_tip, next, false, true);
		break;
	case C_JMP_IND:
		ip_packet(ppt_tip, next, false, true);
		break;
	case C_RET:
		if (retcomp && rs_n && rstack[rs_top] == next) {
			tnt(true);
			rs_top = (rs_top + RETSTACK - 1) % RETSTACK;
			rs_n--;
			n_retcomp++;
		} else {
			ip_packet(ppt_tip, next, false, true);
		}
		break;
	case C_FAR:
		/* User-only tracing: the unit stops at the kernel entry. */
		n_syscall++;
		disable();
		break;
	}
}

/* Execution left @cur, not yet executed, without a branch (a signal). */
static void async_event(uint64_t cur)
{
	n_async++;
	if (enabled) {
		ip_packet(ppt_fup, cur, false, true);
		disable();
	}
}

static uint64_t get_ip(void)
{
	errno = 0;
	long v = ptrace(PTRACE_PEEKUSER, child, offsetof(struct user_regs_struct, rip), 0);

	if (errno)
		die("PTRACE_PEEKUSER: %s", strerror(errno));
	return (uint64_t)v;
}

static void write_file(const char *name, const void *p, size_t n)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "w");
	if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f))
		die("%s: %s", path, strerror(errno));
}

static void write_outputs(uint64_t first_ip, double secs)
{
	char name[64], path[PATH_MAX];
	FILE *img, *pc, *px, *info;
	size_t i;

	write_file("trace.pt", trace.p, trace.len);
	write_file("insns.bin", insns.p, insns.len);
	write_file("feed.bin", feed.p, feed.len);
	write_file("cpu", CPU_IDENT "\n", strlen(CPU_IDENT) + 1);
	snprintf(path, sizeof(path), "%s/images.txt", outdir);
	img = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/ptcheck-args", outdir);
	pc = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/ptxed-args", outdir);
	px = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/info.txt", outdir);
	info = fopen(path, "w");
	if (!img || !pc || !px || !info)
		die("%s: %s", outdir, strerror(errno));
	fprintf(pc, "--cpu %s", CPU_IDENT);
	fprintf(px, "--cpu %s --pt %s/trace.pt", CPU_IDENT, outabs);
	for (i = 0; i < nimages; i++) {
		snprintf(name, sizeof(name), "img-%" PRIx64 "-%zu.bin", images[i].start, i);
		write_file(name, images[i].bytes, images[i].end - images[i].start);
		fprintf(img, "%#" PRIx64 " %#" PRIx64 " %s\n", images[i].start,
			images[i].end, name);
		fprintf(pc, " --raw %s/%s:%#" PRIx64, outabs, name, images[i].start);
		fprintf(px, " --raw %s/%s:%#" PRIx64, outabs, name, images[i].start);
	}
	fprintf(pc, "\n");
	fprintf(px, "\n");
	fprintf(info,
		"instructions %" PRIu64 "\nfirst_ip %#" PRIx64 "\ntrace_bytes %zu\n"
		"feed_bytes %zu\nfeed_records %" PRIu64 "\npsb %" PRIu64 "\n"
		"psb_period %" PRIu64 "\nretcomp %d\ntip %" PRIu64 "\ntnt_bits %" PRIu64 "\n"
		"compressed_returns %" PRIu64 "\nfar_transfers %" PRIu64 "\n"
		"async_events %" PRIu64 "\nimages %zu\nseconds %.3f\ninsn_per_second %.0f\n",
		n_insn, first_ip, trace.len, feed.len, n_records, n_psb, psb_period,
		retcomp, n_tip, n_tnt_bits, n_retcomp, n_syscall, n_async, nimages,
		secs, secs > 0 ? (double)n_insn / secs : 0.0);
	if (fclose(img) || fclose(pc) || fclose(px) || fclose(info))
		die("%s: %s", outdir, strerror(errno));
}

/* PSB+ and TIP.PGE as at enable; the feed gets only the start IP. */
static void start_trace(uint64_t ip)
{
	struct pt_packet pkt = { 0 };

	pkt.type = ppt_psb;
	emit(&pkt, false);
	mode_exec(false);
	pkt.type = ppt_psbend;
	emit(&pkt, false);
	mode_exec(false);
	ip_packet(ppt_tip_pge, ip, false, false);
	force_full = true;
	enabled = true;
	n_psb++;
	since_psb = 0;
	feed_record(ip);
}

/* The tracee exec'd: what ran before is gone; trace the new program. */
static void restart(void)
{
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < nimages; i++)
		free(images[i].bytes);
	nimages = 0;
	memset(cache, 0, (cache_mask + 1) * sizeof(*cache));
	cache_used = 0;
	trace.len = record.len = feed.len = insns.len = 0;
	last_ip = since_psb = 0;
	tnt_n = 0;
	tnt_bits = 0;
	rs_n = 0;
	n_insn = n_psb = n_tip = n_tnt_bits = n_retcomp = n_syscall = n_async = 0;
	n_records = 0;
	nsnapshots = 0;
	snprintf(path, sizeof(path), "%s/maps.txt", outdir);
	if (!freopen(path, "w", maps_out))
		die("%s: %s", path, strerror(errno));
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ptgen [--psb-period N] [--no-retcomp] [--aslr] -o DIR -- PROG [ARG]...\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "psb-period", required_argument, NULL, 'p' },
		{ "no-retcomp", no_argument, NULL, 'n' },
		{ "aslr", no_argument, NULL, 'a' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct pt_config cfg;
	struct timespec t0, t1;
	bool aslr = false, injected = false;
	uint64_t cur, first_ip;
	int c, status, sig = 0;
	char path[PATH_MAX];

	while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			psb_period = strtoull(optarg, NULL, 0);
			if (psb_period < 64 || psb_period > 32768)
				die("--psb-period wants 64..32768");
			break;
		case 'n':
			retcomp = false;
			break;
		case 'a':
			aslr = true;
			break;
		case 'o':
			outdir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!outdir || optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (mkdir(outdir, 0755) && errno != EEXIST)
		die("%s: %s", outdir, strerror(errno));
	if (!realpath(outdir, outabs))
		die("%s: %s", outdir, strerror(errno));
	snprintf(path, sizeof(path), "%s/maps.txt", outdir);
	maps_out = fopen(path, "w");
	if (!maps_out)
		die("%s: %s", path, strerror(errno));

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&zdec, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)))
		die("Zydis: cannot initialise the decoder");
	cache_mask = (1u << 16) - 1;
	cache = calloc(cache_mask + 1, sizeof(*cache));
	pt_config_init(&cfg);
	cfg.begin = encbuf;
	cfg.end = encbuf + sizeof(encbuf);
	enc = pt_alloc_encoder(&cfg);
	if (!cache || !enc)
		die("out of memory");

	child = fork();
	if (child < 0)
		die("fork: %s", strerror(errno));
	if (!child) {
		if (!aslr)
			personality(ADDR_NO_RANDOMIZE);
		if (ptrace(PTRACE_TRACEME, 0, 0, 0))
			_exit(126);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "ptgen: %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	if (waitpid(child, &status, 0) != child || !WIFSTOPPED(status) ||
	    WSTOPSIG(status) != SIGTRAP)
		die("%s did not start", argv[optind]);
	ptrace(PTRACE_SETOPTIONS, child, 0, PTRACE_O_EXITKILL | PTRACE_O_TRACEEXEC);
	clock_gettime(CLOCK_MONOTONIC, &t0);

	first_ip = cur = get_ip();
	start_trace(cur);

	for (;;) {
		if (ptrace(PTRACE_SINGLESTEP, child, 0, sig))
			die("PTRACE_SINGLESTEP: %s", strerror(errno));
		injected = sig != 0;
		sig = 0;
		if (waitpid(child, &status, 0) != child)
			die("waitpid: %s", strerror(errno));
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			const struct cent *ce = classify(cur);

			/* The last instruction entered the kernel and never came back. */
			if (ce->cls == C_FAR) {
				step_done(cur, 0);
			} else {
				async_event(cur);
			}
			child = 0;
			break;
		}
		if (!WIFSTOPPED(status))
			continue;
		if (status >> 8 == (SIGTRAP | PTRACE_EVENT_EXEC << 8)) {
			restart();
			first_ip = cur = get_ip();
			start_trace(cur);
			continue;
		}
		if (WSTOPSIG(status) != SIGTRAP) {
			sig = WSTOPSIG(status);	/* signal-delivery-stop: deliver it */
			continue;
		}
		uint64_t next = get_ip();

		if (injected) {
			siginfo_t si;

			if (ptrace(PTRACE_GETSIGINFO, child, 0, &si))
				die("PTRACE_GETSIGINFO: %s", strerror(errno));
			if (si.si_code == SIGTRAP) {
				/* Stopped at a signal handler's entry: nothing executed. */
				async_event(cur);
				cur = next;
				continue;
			}
		}
		step_done(cur, next);
		cur = next;
	}
	tnt_flush();
	feed_record(cur);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (fclose(maps_out))
		die("maps.txt: %s", strerror(errno));
	write_outputs(first_ip, (double)(t1.tv_sec - t0.tv_sec) +
				(double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	printf("%" PRIu64 " instructions, %zu trace bytes, %" PRIu64 " PSBs, %zu images\n",
	       n_insn, trace.len, n_psb, nimages);
	return 0;
}

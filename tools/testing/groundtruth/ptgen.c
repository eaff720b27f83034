// SPDX-License-Identifier: GPL-2.0
/*
 * ptgen: ground-truth Intel PT traces of real programs.
 *
 * Runs a program under ptrace single-step, records every user-mode
 * instruction each of its threads executes, classifies each with Zydis
 * and encodes the control flow as Intel PT packets with libipt's encoder,
 * the way a PT unit tracing user mode only (CTL.User = 1, CTL.OS = 0)
 * would, one trace per thread.  Timing packets (TSC, TMA, CBR, MTC, CYC)
 * come from a deterministic clock when asked.
 *
 *   ptgen [--psb-period N] [--no-retcomp] [--aslr] [--tsc] [--mtc N] [--cyc]
 *         [--cpi N] [--kernel-cycles N] [--follow-fork] [--pin CPU|none]
 *         -o DIR -- PROG [ARG]...
 *
 * DIR receives trace.pt, insns.bin (u64 LE IPs), feed.bin (thread 0;
 * thread K >= 1 has trace.K.pt, insns.K.bin, feed.K.bin), threads.txt,
 * images (img-BASE-N.bin and images.txt), maps.txt, cpu, timing and
 * time.bin (with --tsc), ptcheck-args, ptxed-args and info.txt; a
 * followed fork child gets the same in DIR/proc-N.
 * Documentation/groundtruth.rst describes them.
 *
 * gnu11 is not needed: _GNU_SOURCE (for personality(), sched_setaffinity()
 * and the ptrace register layout) is enough with -std=c11.
 */
#include <Zydis/Zydis.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <limits.h>
#include <sched.h>
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

#include "ipt_sim_feed.h"

#define CPU_IDENT "6/126/5"
#define RETSTACK 64

/*
 * The clock model (Documentation/groundtruth.rst, "Timing"): the
 * simulator's icl model, CPUID.15H = 2 / 104 / 38.4 MHz and a nominal
 * ratio of 20, with the core always at that ratio (CBR 20): one core
 * cycle is one TSC tick and the crystal clock (CTC) ticks every
 * 104 / 2 = 52 TSC ticks.
 */
#define CPUID15_EAX 2u
#define CPUID15_EBX 104u
#define CPUID15_ECX 38400000u
#define NOM_RATIO 20u
#define TSC_PER_CTC (CPUID15_EBX / CPUID15_EAX)
#define TSC_START 0x100000000ull
#define MTC_FREQ_BITMAP 0x249u	/* CPUID.(14H,1):EAX[31:16] of the model */

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

struct thread;

/* A traced process: one address space, its images and its threads. */
struct proc {
	pid_t pid;
	unsigned int index, parent;
	char dir[PATH_MAX], abs[PATH_MAX];
	struct image *images;
	size_t nimages, last_img;
	struct cent *cache;
	size_t cache_mask, cache_used;
	FILE *maps_out;
	unsigned int nsnapshots;
	char comm[16];		/* /proc/PID/comm when its code was first read */
	struct thread **threads;	/* by thread index */
	unsigned int nthreads;
};

/* A traced thread: its own trace, feed, ground truth and clock. */
struct thread {
	pid_t tid;
	struct proc *proc;
	unsigned int index;
	bool started, finished, dead;
	bool birth_known, initial_stop;	/* parent's event, own first stop */
	bool injected;
	int sig;
	uint64_t cur, first_ip;
	/* packet state */
	struct buf trace, record, feed, insns;
	uint64_t last_ip, since_psb;
	bool force_full, enabled;
	uint64_t tnt_bits;
	unsigned int tnt_n;
	uint64_t rstack[RETSTACK];
	unsigned int rs_top, rs_n;
	/* clock */
	uint64_t now, last_cyc, tval, next_mtc;
	bool in_psb;
	struct buf units;	/* u64 time a decoder holds after each unit */
	struct buf tinsn;	/* per instruction: u64 time, units before, after */
	/* counters */
	uint64_t n_insn, n_psb, n_tip, n_tnt_bits, n_retcomp, n_syscall,
		n_async, n_records, n_mtc, n_cyc;
};

/* options */
static uint64_t psb_period = 4096;
static bool retcomp = true, opt_tsc, opt_cyc, follow_fork;
static int opt_mtc = -1;
static uint64_t cpi = 1, kernel_cycles = 1000;

static const char *outdir;
static pid_t child;
static ZydisDecoder zdec;
static struct pt_encoder *enc;
static uint8_t encbuf[64];

static struct proc **procs;
static unsigned int nprocs;
static struct thread **threads;	/* every tracee ptgen knows, live or not */
static size_t nthreads_all;

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

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die("out of memory");
	return p;
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

static void buf_u64(struct buf *b, uint64_t v)
{
	buf_add(b, &v, sizeof(v));
}

/* ---- images ---------------------------------------------------------- */

static struct image *find_image(struct proc *p, uint64_t ip)
{
	size_t i;

	if (p->last_img < p->nimages && ip >= p->images[p->last_img].start &&
	    ip < p->images[p->last_img].end)
		return &p->images[p->last_img];
	/* Newest first: a later dump of the same range wins. */
	for (i = p->nimages; i-- > 0;)
		if (ip >= p->images[i].start && ip < p->images[i].end) {
			p->last_img = i;
			return &p->images[i];
		}
	return NULL;
}

/* Re-read the maps of @tid's process, log them, dump the mapping of @ip. */
static struct image *load_image(struct thread *t, uint64_t ip)
{
	struct proc *p = t->proc;
	char path[64], line[PATH_MAX + 128];
	struct image *img = NULL;
	FILE *f;

	if (!p->comm[0]) {
		/* the name the kernel gave the program it runs (info.txt "comm") */
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)t->tid);
		f = fopen(path, "r");
		if (f && fgets(p->comm, sizeof(p->comm), f))
			p->comm[strcspn(p->comm, "\n")] = 0;
		if (f)
			fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->tid);
	f = fopen(path, "r");
	if (!f)
		die("%s: %s", path, strerror(errno));
	fprintf(p->maps_out, "# snapshot %u before instruction %" PRIu64
		" of thread %u (ip %#" PRIx64 ")\n", p->nsnapshots++, t->n_insn, t->index, ip);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		char perms[8];

		fputs(line, p->maps_out);
		if (img || sscanf(line, "%llx-%llx %7s", &s, &e, perms) != 3)
			continue;
		if (ip < s || ip >= e)
			continue;
		if (perms[2] != 'x')
			die("ip %#" PRIx64 " in a non-executable mapping: %s", ip, line);
		p->images = realloc(p->images, (p->nimages + 1) * sizeof(*p->images));
		if (!p->images)
			die("out of memory");
		img = &p->images[p->nimages++];
		img->start = s;
		img->end = e;
		img->bytes = malloc(e - s);
		if (!img->bytes)
			die("out of memory");
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)t->tid);
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

static struct cent *cache_slot(struct proc *p, uint64_t ip)
{
	size_t h = (size_t)((ip * 0x9E3779B97F4A7C15ull) >> 20) & p->cache_mask;

	while (p->cache[h].cls != C_UNKNOWN && p->cache[h].ip != ip)
		h = (h + 1) & p->cache_mask;
	return &p->cache[h];
}

static void cache_grow(struct proc *p)
{
	struct cent *old = p->cache;
	size_t i, n = p->cache_mask + 1;

	p->cache_mask = n * 2 - 1;
	p->cache = xcalloc(n * 2, sizeof(*p->cache));
	for (i = 0; i < n; i++)
		if (old[i].cls != C_UNKNOWN)
			*cache_slot(p, old[i].ip) = old[i];
	free(old);
}

static const struct cent *classify(struct thread *t, uint64_t ip)
{
	struct proc *p = t->proc;
	struct cent *c = cache_slot(p, ip);
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction zi;
	struct image *img;
	ZyanU64 target;
	size_t size;

	if (c->cls != C_UNKNOWN)
		return c;
	img = find_image(p, ip);
	if (!img)
		img = load_image(t, ip);
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
	if (++p->cache_used * 2 > p->cache_mask) {
		struct cent copy = *c;

		cache_grow(p);
		c = cache_slot(p, ip);
		*c = copy;
	}
	return c;
}

/* ---- packets ----------------------------------------------------------- */

static bool is_timing(enum pt_packet_type type)
{
	return type == ppt_tsc || type == ppt_tma || type == ppt_mtc ||
	       type == ppt_cyc || type == ppt_cbr;
}

static void put(struct thread *t, const struct pt_packet *pkt, bool to_feed)
{
	int n;

	pt_enc_sync_set(enc, 0);
	n = pt_enc_next(enc, pkt);
	if (n < 0)
		die("libipt encoder: %s", pt_errstr(pt_errcode(n)));
	buf_add(&t->trace, encbuf, (size_t)n);
	if (to_feed)
		buf_add(&t->record, encbuf, (size_t)n);
	t->since_psb += (uint64_t)n;
}

/* CYC for the cycles since the last one, up to @when (never into the feed). */
static void cyc_to(struct thread *t, uint64_t when)
{
	struct pt_packet pkt = { 0 };

	if (!opt_cyc || when <= t->last_cyc)
		return;
	pkt.type = ppt_cyc;
	pkt.payload.cyc.value = when - t->last_cyc;
	put(t, &pkt, false);
	t->last_cyc = when;
	t->tval = when;
	t->n_cyc++;
}

/*
 * One packet.  With --cyc every packet outside PSB+ but timing packets
 * is preceded by a CYC when a cycle has passed since the last one.  With
 * --tsc each such packet (a PSB+ counts as one) is a "unit": the time a
 * decoder holds after it is logged for the time windows of time.bin.
 */
static void emit(struct thread *t, const struct pt_packet *pkt, bool to_feed)
{
	bool timing = is_timing(pkt->type);

	if (!timing && !t->in_psb)
		cyc_to(t, t->now);
	put(t, pkt, to_feed);
	if (opt_tsc && !timing && !t->in_psb)
		buf_u64(&t->units, t->tval);
}

static void tnt_flush(struct thread *t)
{
	struct pt_packet pkt = { 0 };

	if (!t->tnt_n)
		return;
	pkt.type = t->tnt_n <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	pkt.payload.tnt.bit_size = (uint8_t)t->tnt_n;
	pkt.payload.tnt.payload = t->tnt_bits;
	emit(t, &pkt, true);
	t->tnt_n = 0;
	t->tnt_bits = 0;
}

static void tnt(struct thread *t, bool taken)
{
	t->tnt_bits = t->tnt_bits << 1 | taken;
	t->n_tnt_bits++;
	if (++t->tnt_n == 47)
		tnt_flush(t);
}

static bool sext48(uint64_t ip)
{
	return (uint64_t)((int64_t)(ip << 16) >> 16) == ip;
}

/* An IP packet; @ip is ignored for a suppressed one. */
static void ip_packet(struct thread *t, enum pt_packet_type type, uint64_t ip,
		      bool suppressed, bool to_feed)
{
	struct pt_packet pkt = { 0 };
	enum pt_ip_compression ipc;

	tnt_flush(t);
	if (suppressed) {
		ipc = pt_ipc_suppressed;
		ip = 0;
	} else if (t->force_full || !sext48(ip) != !sext48(t->last_ip)) {
		ipc = sext48(ip) ? pt_ipc_sext_48 : pt_ipc_full;
	} else if (!((ip ^ t->last_ip) >> 16)) {
		ipc = pt_ipc_update_16;
	} else if (!((ip ^ t->last_ip) >> 32)) {
		ipc = pt_ipc_update_32;
	} else if (!((ip ^ t->last_ip) >> 48)) {
		ipc = pt_ipc_update_48;
	} else {
		ipc = sext48(ip) ? pt_ipc_sext_48 : pt_ipc_full;
	}
	if (!suppressed) {
		t->last_ip = ip;
		t->force_full = false;
	}
	pkt.type = type;
	pkt.payload.ip.ipc = ipc;
	pkt.payload.ip.ip = ip;
	if (type == ppt_tip)
		t->n_tip++;
	emit(t, &pkt, to_feed);
}

static void mode_exec(struct thread *t, bool to_feed)
{
	struct pt_packet pkt = { 0 };

	pkt.type = ppt_mode;
	pkt.payload.mode.leaf = pt_mol_exec;
	pkt.payload.mode.bits.exec.csl = 1;
	emit(t, &pkt, to_feed);
}

/* ---- the clock ---------------------------------------------------------- */

static uint64_t ctc_of(uint64_t tsc)
{
	return tsc / TSC_PER_CTC;
}

/* The first MTC edge (CTC bits above MTCFreq change) after @tsc. */
static uint64_t mtc_edge_after(uint64_t tsc)
{
	uint64_t ctc = ((ctc_of(tsc) >> opt_mtc) + 1) << opt_mtc;

	return ctc * TSC_PER_CTC;
}

/*
 * @cycles pass.  MTC is generated while TriggerEn is set whatever
 * PacketEn is (SDM: MTCEn && TriggerEn), so kernel time has MTCs too;
 * each is written at its edge, preceded by a CYC up to that edge.
 */
static void advance(struct thread *t, uint64_t cycles)
{
	uint64_t end = t->now + cycles;
	struct pt_packet pkt = { 0 };

	if (!opt_tsc)
		return;
	while (opt_mtc >= 0 && t->next_mtc <= end) {
		cyc_to(t, t->next_mtc);
		pkt.type = ppt_mtc;
		pkt.payload.mtc.ctc = (uint8_t)(ctc_of(t->next_mtc) >> opt_mtc);
		put(t, &pkt, false);
		t->tval = t->next_mtc;
		t->n_mtc++;
		t->next_mtc += (uint64_t)TSC_PER_CTC << opt_mtc;
	}
	t->now = end;
}

/* TSC, TMA and CBR of a PSB+ at the current time. */
static void psb_timing(struct thread *t)
{
	struct pt_packet pkt = { 0 };

	if (!opt_tsc)
		return;
	pkt.type = ppt_tsc;
	pkt.payload.tsc.tsc = t->now;
	put(t, &pkt, false);
	if (opt_mtc >= 0) {
		uint64_t ctc = ctc_of(t->now);

		memset(&pkt, 0, sizeof(pkt));
		pkt.type = ppt_tma;
		pkt.payload.tma.ctc = (uint16_t)ctc;
		pkt.payload.tma.fc = (uint16_t)(t->now - ctc * TSC_PER_CTC);
		put(t, &pkt, false);
	}
	memset(&pkt, 0, sizeof(pkt));
	pkt.type = ppt_cbr;
	pkt.payload.cbr.ratio = NOM_RATIO;
	put(t, &pkt, false);
	t->tval = t->now;
}

static void feed_record(struct thread *t, uint64_t ip)
{
	struct ipt_sim_feed_hdr hdr = { 0 };

	if (t->record.len > IPT_SIM_FEED_LEN_MAX)
		die("feed record of %zu bytes (lower --psb-period)", t->record.len);
	hdr.len = htole16((uint16_t)t->record.len);
	/*
	 * CTX_OFF: the record ends outside the trace (after TIP.PGD), so the
	 * unit must not add FUPs of its own.
	 */
	hdr.flags = htole16(t->enabled ? 0 : IPT_SIM_FEED_CTX_OFF);
	hdr.ip = htole64(ip);
	_Static_assert(sizeof(hdr) == IPT_SIM_FEED_HDR, "no padding in a feed header");
	buf_add(&t->feed, &hdr, sizeof(hdr));
	buf_add(&t->feed, t->record.p, t->record.len);
	t->record.len = 0;
	t->n_records++;
}

/* The end of a PSB+: one unit for the whole of it. */
static void psb_done(struct thread *t)
{
	t->in_psb = false;
	if (opt_tsc)
		buf_u64(&t->units, t->tval);
	t->since_psb = 0;
	t->n_psb++;
}

/*
 * PSB+ at @ip (tracing enabled, at an instruction boundary).  It ends a
 * feed record: the next one must not lean on this one's last IP or
 * return stack, so both are reset here as the decoder resets them.
 */
static void psb(struct thread *t, uint64_t ip)
{
	struct pt_packet pkt = { 0 };

	tnt_flush(t);
	feed_record(t, ip);
	cyc_to(t, t->now);
	t->in_psb = true;
	pkt.type = ppt_psb;
	emit(t, &pkt, false);
	psb_timing(t);
	t->force_full = true;
	t->last_ip = 0;
	ip_packet(t, ppt_fup, ip, false, false);
	t->force_full = true;
	mode_exec(t, false);
	pkt.type = ppt_psbend;
	emit(t, &pkt, false);
	psb_done(t);
	t->rs_n = 0;
}

static void disable(struct thread *t)
{
	ip_packet(t, ppt_tip_pgd, 0, true, true);
	t->enabled = false;
	t->rs_n = 0;
}

static void rs_push(struct thread *t, uint64_t ip)
{
	t->rs_top = (t->rs_top + 1) % RETSTACK;
	t->rstack[t->rs_top] = ip;
	if (t->rs_n < RETSTACK)
		t->rs_n++;
}

/* ---- tracing ----------------------------------------------------------- */

static void step_packets(struct thread *t, const struct cent *c, uint64_t cur,
			 uint64_t next);

/* Instruction at @cur executed and the next is at @next. */
static void step_done(struct thread *t, uint64_t cur, uint64_t next)
{
	const struct cent *c = classify(t, cur);
	uint64_t units = 0;

	if (c->cls == C_OTHER && next == cur)
		return;	/* one iteration of a REP string instruction */
	if (!t->enabled) {
		mode_exec(t, true);
		ip_packet(t, ppt_tip_pge, cur, false, true);
		t->enabled = true;
	} else if (t->since_psb >= psb_period) {
		psb(t, cur);
	}
	buf_u64(&t->insns, cur);
	t->n_insn++;
	if (opt_tsc)
		units = t->units.len / 8;
	advance(t, cpi);	/* the instruction retires at t->now */
	if (opt_tsc) {
		buf_u64(&t->tinsn, t->now);
		buf_u64(&t->tinsn, units);
	}
	step_packets(t, c, cur, next);
	if (opt_tsc)	/* with a TNT bit pending, the unit that will carry it */
		buf_u64(&t->tinsn, t->units.len / 8 + (t->tnt_n ? 1 : 0));
}

/* The packets of the instruction at @cur, which went to @next. */
static void step_packets(struct thread *t, const struct cent *c, uint64_t cur, uint64_t next)
{
	uint64_t ft = cur + c->len;

	switch (c->cls) {
	case C_OTHER:
		if (next != ft)
			die("insn %" PRIu64 " at %#" PRIx64 " went to %#" PRIx64,
			    t->n_insn - 1, cur, next);
		break;
	case C_COND:
		if (next != ft && next != c->target)
			die("branch at %#" PRIx64 " went to %#" PRIx64, cur, next);
		tnt(t, next != ft);
		break;
	case C_JMP:
	case C_CALL:
		if (next != c->target)
			die("direct branch at %#" PRIx64 " went to %#" PRIx64, cur, next);
		/* libipt does not push a call to the next instruction (PIC). */
		if (c->cls == C_CALL && c->target != ft)
			rs_push(t, ft);
		break;
	case C_CALL_IND:
		rs_push(t, ft);
		ip_packet(t, ppt_tip, next, false, true);
		break;
	case C_JMP_IND:
		ip_packet(t, ppt_tip, next, false, true);
		break;
	case C_RET:
		if (retcomp && t->rs_n && t->rstack[t->rs_top] == next) {
			tnt(t, true);
			t->rs_top = (t->rs_top + RETSTACK - 1) % RETSTACK;
			t->rs_n--;
			t->n_retcomp++;
		} else {
			ip_packet(t, ppt_tip, next, false, true);
		}
		break;
	case C_FAR:
		/* User-only tracing: the unit stops at the kernel entry. */
		t->n_syscall++;
		disable(t);
		advance(t, kernel_cycles);
		break;
	}
}

/* Execution left @cur, not yet executed, without a branch (a signal). */
static void async_event(struct thread *t, uint64_t cur)
{
	t->n_async++;
	if (t->enabled) {
		ip_packet(t, ppt_fup, cur, false, true);
		disable(t);
	}
	advance(t, kernel_cycles);
}

static uint64_t get_ip(pid_t tid)
{
	errno = 0;
	long v = ptrace(PTRACE_PEEKUSER, tid, offsetof(struct user_regs_struct, rip), 0);

	if (errno)
		die("PTRACE_PEEKUSER of %d: %s", (int)tid, strerror(errno));
	return (uint64_t)v;
}

/* PSB+ and TIP.PGE as at enable; the feed gets only the start IP. */
static void start_trace(struct thread *t, uint64_t ip)
{
	struct pt_packet pkt = { 0 };

	t->first_ip = t->cur = ip;
	t->started = true;
	t->force_full = true;
	t->last_cyc = t->tval = t->now;	/* the cycle counter starts here */
	if (opt_mtc >= 0)
		t->next_mtc = mtc_edge_after(t->now);
	t->in_psb = true;
	pkt.type = ppt_psb;
	emit(t, &pkt, false);
	psb_timing(t);
	mode_exec(t, false);
	pkt.type = ppt_psbend;
	emit(t, &pkt, false);
	psb_done(t);
	mode_exec(t, false);
	ip_packet(t, ppt_tip_pge, ip, false, false);
	t->force_full = true;
	t->enabled = true;
	feed_record(t, ip);
}

/* ---- processes and threads ----------------------------------------------- */

static struct thread *find_thread(pid_t tid)
{
	for (size_t i = nthreads_all; i-- > 0;)
		if (threads[i]->tid == tid && !threads[i]->dead)
			return threads[i];
	return NULL;
}

static struct thread *new_thread(pid_t tid)
{
	struct thread *t = xcalloc(1, sizeof(*t));

	t->tid = tid;
	threads = realloc(threads, (nthreads_all + 1) * sizeof(*threads));
	if (!threads)
		die("out of memory");
	threads[nthreads_all++] = t;
	return t;
}

static void proc_open_maps(struct proc *p)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/maps.txt", p->dir);
	if (p->maps_out) {
		if (!freopen(path, "w", p->maps_out))
			die("%s: %s", path, strerror(errno));
	} else if (!(p->maps_out = fopen(path, "w"))) {
		die("%s: %s", path, strerror(errno));
	}
}

static struct proc *new_proc(pid_t pid, unsigned int parent)
{
	struct proc *p = xcalloc(1, sizeof(*p));

	p->pid = pid;
	p->index = nprocs;
	p->parent = parent;
	if (p->index)
		snprintf(p->dir, sizeof(p->dir), "%s/proc-%u", outdir, p->index);
	else
		snprintf(p->dir, sizeof(p->dir), "%s", outdir);
	if (mkdir(p->dir, 0755) && errno != EEXIST)
		die("%s: %s", p->dir, strerror(errno));
	if (!realpath(p->dir, p->abs))
		die("%s: %s", p->dir, strerror(errno));
	p->last_img = SIZE_MAX;
	p->cache_mask = (1u << 16) - 1;
	p->cache = xcalloc(p->cache_mask + 1, sizeof(*p->cache));
	proc_open_maps(p);
	procs = realloc(procs, (nprocs + 1) * sizeof(*procs));
	if (!procs)
		die("out of memory");
	procs[nprocs++] = p;
	return p;
}

static void proc_add_thread(struct proc *p, struct thread *t)
{
	t->proc = p;
	t->index = p->nthreads;
	p->threads = realloc(p->threads, (p->nthreads + 1) * sizeof(*p->threads));
	if (!p->threads)
		die("out of memory");
	p->threads[p->nthreads++] = t;
}

static pid_t tgid_of(pid_t tid)
{
	char path[64], line[256];
	pid_t tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	if (!tgid)
		die("%s: no Tgid", path);
	return tgid;
}

static void resume(struct thread *t)
{
	int sig = t->sig;

	t->sig = 0;
	t->injected = sig != 0;
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, sig))
		die("PTRACE_SINGLESTEP of %d: %s", (int)t->tid, strerror(errno));
}

/* Both the creator's event and the new tracee's first stop have been seen. */
static void maybe_start(struct thread *t)
{
	if (!t->birth_known || !t->initial_stop || t->started)
		return;
	start_trace(t, get_ip(t->tid));
	resume(t);
}

/* @parent's clone / fork / vfork made @tid. */
static void born(struct thread *parent, pid_t tid)
{
	struct thread *t = find_thread(tid);
	pid_t tgid = tgid_of(tid);

	if (!t)
		t = new_thread(tid);
	if (tgid == parent->proc->pid)
		proc_add_thread(parent->proc, t);
	else
		proc_add_thread(new_proc(tgid, parent->proc->index), t);
	/* The creator's system call retires, then the kernel runs. */
	t->now = parent->now + cpi + kernel_cycles;
	t->birth_known = true;
	maybe_start(t);
}

/* The process of @t exec'd: what ran before is gone; trace the new program. */
static void restart(struct thread *t, pid_t former)
{
	struct proc *p = t->proc;
	struct thread fresh = { 0 };
	uint64_t now;
	size_t i;

	/* A non-leader exec'ing takes over the leader's thread ID. */
	if (former != t->tid) {
		struct thread *f = find_thread(former);

		if (f)
			t = f;
	}
	now = t->now + cpi + kernel_cycles;
	for (i = 0; i < p->nthreads; i++)
		if (p->threads[i] != t)
			p->threads[i]->dead = true;
	for (i = 0; i < p->nimages; i++)
		free(p->images[i].bytes);
	p->nimages = 0;
	p->last_img = SIZE_MAX;
	memset(p->cache, 0, (p->cache_mask + 1) * sizeof(*p->cache));
	p->cache_used = 0;
	p->nsnapshots = 0;
	proc_open_maps(p);
	p->nthreads = 0;

	free(t->trace.p);
	free(t->record.p);
	free(t->feed.p);
	free(t->insns.p);
	free(t->units.p);
	free(t->tinsn.p);
	fresh.tid = p->pid;
	fresh.birth_known = fresh.initial_stop = true;
	fresh.dead = false;
	*t = fresh;
	t->now = now;
	proc_add_thread(p, t);
	start_trace(t, get_ip(t->tid));
}

/*
 * @t ends.  With @have_ip (a PTRACE_EVENT_EXIT stop) @ip is where it
 * stands: if it moved, the instruction at cur was executed first.
 */
static void finish(struct thread *t, bool have_ip, uint64_t ip)
{
	if (t->finished || !t->started)
		return;
	t->finished = true;
	/* A signal being delivered moves the IP without executing anything. */
	if (have_ip && ip != t->cur && !t->injected) {
		step_done(t, t->cur, ip);
		if (t->enabled)
			async_event(t, ip);
	} else if (!have_ip && classify(t, t->cur)->cls == C_FAR) {
		/* The last instruction entered the kernel and never came back. */
		step_done(t, t->cur, 0);
	} else {
		async_event(t, t->cur);
	}
	tnt_flush(t);
	feed_record(t, t->cur);
}

/* ---- output ------------------------------------------------------------ */

static void write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f))
		die("%s: %s", path, strerror(errno));
}

static FILE *open_out(const struct proc *p, const char *name)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", p->dir, name);
	f = fopen(path, "w");
	if (!f)
		die("%s: %s", path, strerror(errno));
	return f;
}

static void close_out(FILE *f)
{
	if (fclose(f))
		die("writing %s: %s", outdir, strerror(errno));
}

/* trace.pt or trace.K.pt and so on. */
static void tname(char *name, size_t size, const char *stem, unsigned int k, const char *ext)
{
	if (k)
		snprintf(name, size, "%s.%u.%s", stem, k, ext);
	else
		snprintf(name, size, "%s.%s", stem, ext);
}

/*
 * time.bin: per instruction the time it retired and the window a decoder
 * that holds the time of the last packet it used must be in.  The low
 * end is the time after the last unit written before the instruction
 * (the decoder used it to get there).  The high end is the time after
 * the first unit written after the instruction's own packets, or after
 * the one following the TNT that will carry pending bits: a decoder has
 * used the units up to the one with the instruction's outcome (its TIP
 * or TNT bit, or an earlier branch's TNT bit still pending) and may look
 * one event further to see whether it binds here (libipt does).
 */
static void write_times(const struct proc *p, const struct thread *t)
{
	const uint64_t *ti = (const uint64_t *)(const void *)t->tinsn.p;
	const uint64_t *v = (const uint64_t *)(const void *)t->units.p;
	size_t nunits = t->units.len / 8, i;
	struct buf out = { 0 };
	char name[64];

	for (i = 0; i < t->n_insn; i++) {
		uint64_t c = ti[3 * i + 1], e = ti[3 * i + 2];

		if (!c)
			die("instruction %zu before any packet", i);
		buf_u64(&out, ti[3 * i]);
		buf_u64(&out, v[c - 1]);
		buf_u64(&out, e < nunits ? v[e] : t->tval);
	}
	tname(name, sizeof(name), "time", t->index, "bin");
	write_file(p->dir, name, out.p, out.len);
	free(out.p);
}

static void write_proc(const struct proc *p, double secs, uint64_t total)
{
	char name[64];
	const struct thread *t0 = p->nthreads ? p->threads[0] : NULL;
	uint64_t all = 0;
	FILE *img, *pc, *px, *info, *thr;
	unsigned int k;
	size_t i;

	if (!t0)
		return;
	write_file(p->dir, "cpu", CPU_IDENT "\n", strlen(CPU_IDENT) + 1);
	img = open_out(p, "images.txt");
	pc = open_out(p, "ptcheck-args");
	thr = open_out(p, "threads.txt");
	fprintf(pc, "--cpu %s", CPU_IDENT);
	for (i = 0; i < p->nimages; i++) {
		snprintf(name, sizeof(name), "img-%" PRIx64 "-%zu.bin", p->images[i].start, i);
		write_file(p->dir, name, p->images[i].bytes,
			   p->images[i].end - p->images[i].start);
		fprintf(img, "%#" PRIx64 " %#" PRIx64 " %s\n", p->images[i].start,
			p->images[i].end, name);
		fprintf(pc, " --raw %s/%s:%#" PRIx64, p->abs, name, p->images[i].start);
	}
	fprintf(pc, "\n");
	if (opt_tsc) {
		FILE *tm = open_out(p, "timing");

		fprintf(tm, "tsc 1\nmtc %d\nmtc_freq %d\ncyc %d\ncyc_thresh 0\n"
			"cpuid_0x15_eax %u\ncpuid_0x15_ebx %u\ncpuid_0x15_ecx %u\n"
			"nom_freq %u\ncbr %u\ncycles_per_insn %" PRIu64 "\n"
			"kernel_cycles %" PRIu64 "\ntsc_start %#llx\n",
			opt_mtc >= 0, opt_mtc >= 0 ? opt_mtc : 0, opt_cyc,
			CPUID15_EAX, CPUID15_EBX, CPUID15_ECX, NOM_RATIO, NOM_RATIO,
			cpi, kernel_cycles, TSC_START);
		close_out(tm);
	}
	fprintf(thr, "# index tid instructions trace_bytes feed_bytes psb first_ip\n");
	for (k = 0; k < p->nthreads; k++) {
		const struct thread *t = p->threads[k];

		tname(name, sizeof(name), "trace", k, "pt");
		write_file(p->dir, name, t->trace.p, t->trace.len);
		tname(name, sizeof(name), "insns", k, "bin");
		write_file(p->dir, name, t->insns.p, t->insns.len);
		tname(name, sizeof(name), "feed", k, "bin");
		write_file(p->dir, name, t->feed.p, t->feed.len);
		if (opt_tsc)
			write_times(p, t);
		fprintf(thr, "%u %d %" PRIu64 " %zu %zu %" PRIu64 " %#" PRIx64 "\n", k,
			(int)t->tid, t->n_insn, t->trace.len, t->feed.len, t->n_psb,
			t->first_ip);
		all += t->n_insn;
		if (k)
			snprintf(name, sizeof(name), "ptxed-args.%u", k);
		else
			snprintf(name, sizeof(name), "ptxed-args");
		px = open_out(p, name);
		fprintf(px, "--cpu %s", CPU_IDENT);
		if (opt_tsc)
			fprintf(px, " --nom-freq %u --cpuid-0x15.eax %u --cpuid-0x15.ebx %u"
				" --mtc-freq %d", NOM_RATIO, CPUID15_EAX, CPUID15_EBX,
				opt_mtc >= 0 ? opt_mtc : 0);
		tname(name, sizeof(name), "trace", k, "pt");
		fprintf(px, " --pt %s/%s", p->abs, name);
		for (i = 0; i < p->nimages; i++)
			fprintf(px, " --raw %s/img-%" PRIx64 "-%zu.bin:%#" PRIx64, p->abs,
				p->images[i].start, i, p->images[i].start);
		fprintf(px, "\n");
		close_out(px);
	}
	/*
	 * The keys of thread 0 as before threads were traced, then the rest;
	 * the speed is the whole run's (every thread of every process).
	 */
	info = open_out(p, "info.txt");
	fprintf(info,
		"instructions %" PRIu64 "\nfirst_ip %#" PRIx64 "\ntrace_bytes %zu\n"
		"feed_bytes %zu\nfeed_records %" PRIu64 "\npsb %" PRIu64 "\n"
		"psb_period %" PRIu64 "\nretcomp %d\ntip %" PRIu64 "\ntnt_bits %" PRIu64 "\n"
		"compressed_returns %" PRIu64 "\nfar_transfers %" PRIu64 "\n"
		"async_events %" PRIu64 "\nimages %zu\nthreads %u\n"
		"instructions_all_threads %" PRIu64 "\nprocess %u\nparent_process %u\n"
		"tsc %d\nmtc_packets %" PRIu64 "\ncyc_packets %" PRIu64 "\n"
		"seconds %.3f\ninsn_per_second %.0f\n",
		t0->n_insn, t0->first_ip, t0->trace.len, t0->feed.len, t0->n_records,
		t0->n_psb, psb_period, retcomp, t0->n_tip, t0->n_tnt_bits, t0->n_retcomp,
		t0->n_syscall, t0->n_async, p->nimages, p->nthreads, all, p->index,
		p->parent, opt_tsc, t0->n_mtc, t0->n_cyc, secs,
		secs > 0 ? (double)total / secs : 0.0);
	if (p->comm[0])
		fprintf(info, "comm %s\n", p->comm);
	close_out(info);
	close_out(img);
	close_out(pc);
	close_out(thr);
	if (fflush(p->maps_out))
		die("maps.txt: %s", strerror(errno));
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ptgen [--psb-period N] [--no-retcomp] [--aslr] [--tsc] [--mtc N] [--cyc]\n"
		   "             [--cpi N] [--kernel-cycles N] [--follow-fork] [--pin CPU|none]\n"
		   "             -o DIR -- PROG [ARG]...\n");
}

static uint64_t num_arg(const char *opt, const char *s, uint64_t lo, uint64_t hi)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v < lo || v > hi)
		die("%s wants %" PRIu64 "..%" PRIu64, opt, lo, hi);
	return v;
}

/* Tracer and tracee on one CPU: each step is then two local switches. */
static void pin(const char *arg)
{
	cpu_set_t set;
	int cpu;

	if (arg && !strcmp(arg, "none"))
		return;
	cpu = arg ? (int)num_arg("--pin", arg, 0, CPU_SETSIZE - 1) : sched_getcpu();
	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("--pin %d: %s", cpu, strerror(errno));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "psb-period", required_argument, NULL, 'p' },
		{ "no-retcomp", no_argument, NULL, 'n' },
		{ "aslr", no_argument, NULL, 'a' },
		{ "tsc", no_argument, NULL, 't' },
		{ "mtc", required_argument, NULL, 'm' },
		{ "cyc", no_argument, NULL, 'c' },
		{ "cpi", required_argument, NULL, 'i' },
		{ "kernel-cycles", required_argument, NULL, 'k' },
		{ "follow-fork", no_argument, NULL, 'f' },
		{ "pin", required_argument, NULL, 'P' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct pt_config cfg;
	struct timespec t0, t1;
	bool aslr = false;
	const char *pin_arg = NULL;
	int c, status;
	long options;
	struct proc *p0;
	struct thread *t;
	double secs;
	uint64_t total = 0;
	unsigned int i, nthr = 0;

	while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			psb_period = num_arg("--psb-period", optarg, 64, 32768);
			break;
		case 'n':
			retcomp = false;
			break;
		case 'a':
			aslr = true;
			break;
		case 't':
			opt_tsc = true;
			break;
		case 'm':
			opt_mtc = (int)num_arg("--mtc", optarg, 0, 15);
			if (!(MTC_FREQ_BITMAP >> opt_mtc & 1))
				die("--mtc %d: the model's MTC periods are 0, 3, 6 and 9", opt_mtc);
			opt_tsc = true;
			break;
		case 'c':
			opt_cyc = opt_tsc = true;
			break;
		case 'i':
			cpi = num_arg("--cpi", optarg, 1, 1000);
			break;
		case 'k':
			kernel_cycles = num_arg("--kernel-cycles", optarg, 0, 1000000000);
			break;
		case 'f':
			follow_fork = true;
			break;
		case 'P':
			pin_arg = optarg;
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
	pin(pin_arg);

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&zdec, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)))
		die("Zydis: cannot initialise the decoder");
	pt_config_init(&cfg);
	cfg.begin = encbuf;
	cfg.end = encbuf + sizeof(encbuf);
	enc = pt_alloc_encoder(&cfg);
	if (!enc)
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
	options = PTRACE_O_EXITKILL | PTRACE_O_TRACEEXEC | PTRACE_O_TRACECLONE |
		  PTRACE_O_TRACEEXIT;
	if (follow_fork)
		options |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;
	if (ptrace(PTRACE_SETOPTIONS, child, 0, options))
		die("PTRACE_SETOPTIONS: %s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t0);

	p0 = new_proc(child, 0);
	t = new_thread(child);
	proc_add_thread(p0, t);
	t->birth_known = t->initial_stop = true;
	t->now = TSC_START;
	start_trace(t, get_ip(child));
	resume(t);

	for (;;) {
		pid_t tid = waitpid(-1, &status, __WALL);
		int ev = status >> 16;

		if (tid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				break;
			die("waitpid: %s", strerror(errno));
		}
		t = find_thread(tid);
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (t) {
				finish(t, false, 0);
				t->dead = true;
			}
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		if (!t) {
			/* A new tracee's first stop, before its creator's event. */
			t = new_thread(tid);
			t->initial_stop = true;
			continue;
		}
		if (!t->started) {
			/* Its first stop (SIGSTOP): never delivered. */
			t->initial_stop = true;
			maybe_start(t);
			continue;
		}
		if (t->finished) {
			ptrace(PTRACE_CONT, tid, 0, 0);
			continue;
		}
		if (WSTOPSIG(status) == SIGTRAP && ev) {
			unsigned long msg = 0;

			if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg))
				die("PTRACE_GETEVENTMSG: %s", strerror(errno));
			switch (ev) {
			case PTRACE_EVENT_EXEC:
				restart(t, (pid_t)msg);
				t = find_thread(tid);
				break;
			case PTRACE_EVENT_CLONE:
			case PTRACE_EVENT_FORK:
			case PTRACE_EVENT_VFORK:
				born(t, (pid_t)msg);
				break;
			case PTRACE_EVENT_EXIT:
				finish(t, true, get_ip(tid));
				if (ptrace(PTRACE_CONT, tid, 0, 0))
					die("PTRACE_CONT: %s", strerror(errno));
				continue;
			}
			/* The step under way goes on. */
			resume(t);
			continue;
		}
		if (WSTOPSIG(status) != SIGTRAP) {
			t->sig = WSTOPSIG(status);	/* signal-delivery-stop: deliver it */
			resume(t);
			continue;
		}
		uint64_t next = get_ip(tid);

		if (t->injected) {
			siginfo_t si;

			if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si))
				die("PTRACE_GETSIGINFO: %s", strerror(errno));
			if (si.si_code == SIGTRAP) {
				/* Stopped at a signal handler's entry: nothing executed. */
				async_event(t, t->cur);
				t->cur = next;
				resume(t);
				continue;
			}
		}
		step_done(t, t->cur, next);
		t->cur = next;
		resume(t);
	}
	child = 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	for (i = 0; i < nprocs; i++) {
		for (unsigned int k = 0; k < procs[i]->nthreads; k++)
			total += procs[i]->threads[k]->n_insn;
		nthr += procs[i]->nthreads;
	}
	for (i = 0; i < nprocs; i++)
		write_proc(procs[i], secs, total);
	printf("%" PRIu64 " instructions in %u thread(s) of %u process(es), %.3f s, "
	       "%.0f instructions/s\n", total, nthr, nprocs, secs,
	       secs > 0 ? (double)total / secs : 0.0);
	return 0;
}

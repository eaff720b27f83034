// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: what the simulated unit traces and when: the built-in workload
 * or a feed's records, the enable and disable packets, PSB+ at the
 * PSBFreq period, MTC and CYC from the simulated clock, and the packets
 * of a context switch between programs.  The bytes go to the output
 * engine (ipt_sim_output.c).  Every function here works on the state it
 * is given and nothing else.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitfield.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/sizes.h>
#include <linux/string.h>
#include <kunit/visibility.h>

#include "ipt_sim.h"

/*
 * The built-in workload, 64-bit user code at IPT_SIM_CODE_BASE:
 *
 *   401000: 31 c9      xor  %ecx,%ecx
 *   401002: ff c1      inc  %ecx
 *   401004: 83 f9 03   cmp  $0x3,%ecx
 *   401007: 75 f9      jne  401002
 *   401009: eb f5      jmp  401000
 *
 * Each pass of the outer loop gives the conditional branch the outcomes
 * taken, taken, not taken; the unit writes two passes per TNT-8 packet.
 */
const u8 ipt_sim_code[] = {
	0x31, 0xc9, 0xff, 0xc1, 0x83, 0xf9, 0x03, 0x75, 0xf9, 0xeb, 0xf5,
};

const size_t ipt_sim_code_size = sizeof(ipt_sim_code);

/* TNT-8 of T T N T T N: stop bit 7, oldest outcome in bit 6. */
#define IPT_SIM_LOOP_TNT	0xec

/**
 * ipt_sim_ctc_at() - the core crystal clock at a TSC value
 * @c: the state
 * @tsc: the TSC value
 *
 * TSC = CTC * CPUID.15H:EBX / EAX; without leaf 15H, CTC = TSC / 16.
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 *
 * Return: the CTC value.
 */
static u64 ipt_sim_ctc_at(const struct ipt_sim_cpu *c, u64 tsc)
{
	const struct ipt_cpuid_regs *l15 = &c->model->leaf_15;

	if (!l15->ebx || !l15->eax)
		return tsc >> 4;
	return div_u64(tsc, l15->ebx) * l15->eax;
}

/* The core crystal clock now. */
static u64 ipt_sim_ctc(const struct ipt_sim_cpu *c)
{
	return ipt_sim_ctc_at(c, c->tsc);
}

/*
 * TMA for the TSC now: CTC[15:0] and FastCounter, the TSC ticks (the
 * core runs at the nominal ratio: its cycles are TSC ticks) since that
 * CTC value began (SDM vol. 3C, Intel PT chapter, "TSC/MTC Alignment (TMA)
 * Packet").  A decoder places the TSC at the CTC tick plus FastCounter; a
 * FastCounter of 0 would put the time of the MTCs after it up to a CTC
 * period late, after the next TSC.
 */
static size_t ipt_sim_tma(const struct ipt_sim_cpu *c, u8 *p)
{
	const struct ipt_cpuid_regs *l15 = &c->model->leaf_15;
	u32 fc;

	if (!l15->ebx || !l15->eax)
		fc = c->tsc & 15;
	else
		div_u64_rem(c->tsc, l15->ebx, &fc);
	return ipt_sim_pkt_tma(p, ipt_sim_ctc(c), fc);
}

/* PSB+: PSB, TSC, TMA, CBR, MODE.Exec, FUP (when PacketEn), PSBEND. */
static size_t ipt_sim_psb_plus(struct ipt_sim_cpu *c, u8 *p, bool fup)
{
	size_t n = ipt_sim_pkt_psb(p);

	if (c->ctl & RTIT_CTL_TSC_EN) {
		n += ipt_sim_pkt_tsc(p + n, c->tsc);
		if (c->ctl & RTIT_CTL_MTC_EN)
			n += ipt_sim_tma(c, p + n);
	}
	n += ipt_sim_pkt_cbr(p + n, c->model->nom_ratio);
	n += ipt_sim_pkt_mode_exec(p + n);
	if (fup)
		n += ipt_sim_pkt_ip(p + n, IPT_SIM_PKT_FUP, c->ip);
	n += ipt_sim_pkt_psbend(p + n);
	/* PacketByteCnt restarts with the PSB. */
	c->status &= ~RTIT_STATUS_BYTECNT;
	c->stats.psb++;
	return n;
}

/* FilterEn: no FilterEn range, or the current IP in one of them. */
static bool ipt_sim_filter_en(const struct ipt_sim_cpu *c)
{
	unsigned int i;
	bool any = false;

	for (i = 0; i < 4; i++) {
		u64 cfg = (c->ctl & IPT_RTIT_CTL_ADDR_CFG(i)) >> (32 + 4 * i);

		if (cfg != 1)
			continue;
		any = true;
		if (c->ip >= c->addr_a[i] && c->ip <= c->addr_b[i])
			return true;
	}
	return !any;
}

/*
 * The header of the record at @f->pos, which has IPT_SIM_FEED_HDR bytes;
 * records are not aligned, so it is copied out byte by byte.
 */
static void ipt_sim_feed_hdr(const struct ipt_sim_feed *f,
			     struct ipt_sim_feed_hdr *h)
{
	/* The layout is the format: bytes 0, 2, 4, 8 and no padding. */
	static_assert(sizeof(*h) == IPT_SIM_FEED_HDR);
	static_assert(offsetof(struct ipt_sim_feed_hdr, flags) == 2 &&
		      offsetof(struct ipt_sim_feed_hdr, reserved) == 4 &&
		      offsetof(struct ipt_sim_feed_hdr, ip) == 8);
	memcpy(h, f->buf + f->pos, sizeof(*h));
}

/*
 * Take the feed's leading IP-only records (len 0): the IP execution is at
 * when tracing starts, which the enable packets carry.  Without this the
 * first TIP.PGE would name the IP of whatever ran before the feed.
 */
static void ipt_sim_feed_take_ip(struct ipt_sim_cpu *c)
{
	struct ipt_sim_feed *f = &c->feed;
	struct ipt_sim_feed_hdr h;

	while (f->buf && f->len - f->pos >= IPT_SIM_FEED_HDR) {
		ipt_sim_feed_hdr(f, &h);
		if (h.len)
			break;
		c->ip = le64_to_cpu(h.ip);
		c->feed_ctx_off = le16_to_cpu(h.flags) & IPT_SIM_FEED_CTX_OFF;
		f->pos += IPT_SIM_FEED_HDR;
	}
}

/*
 * ContextEn, FilterEn and PacketEn for the program at its current IP, as
 * it runs user code (CPL 3, CR3 ipt_sim_user_cr3(); CR3_MATCH[63:5] is
 * compared with CR3[63:5], SDM vol. 3C, 33.2.8.6).
 */
static void ipt_sim_update_en(struct ipt_sim_cpu *c)
{
	bool ctx;

	c->status &= ~(RTIT_STATUS_FILTEREN | RTIT_STATUS_CONTEXTEN);
	ipt_sim_feed_take_ip(c);
	ctx = (c->ctl & RTIT_CTL_USR) &&
	      (!(c->ctl & RTIT_CTL_CR3EN) ||
	       (c->cr3_match >> 5) == (ipt_sim_user_cr3(c->model) >> 5));
	if (ctx)
		c->status |= RTIT_STATUS_CONTEXTEN;
	if (ipt_sim_filter_en(c))
		c->status |= RTIT_STATUS_FILTEREN;
	c->packet_en = ctx && (c->status & RTIT_STATUS_FILTEREN) &&
		       (c->ctl & RTIT_CTL_BRANCH_EN);
}

/**
 * ipt_sim_trace_enable() - TraceEn went from 0 to 1
 * @c: the state, with @c->ctl already holding the new value
 *
 * Sets TriggerEn (unless Error or Stopped is set; with Stopped the
 * program's would-be output is counted lost, ipt_sim_run()), ContextEn (the workload
 * runs at CPL 3 with CR3 ipt_sim_user_cr3()), FilterEn and PacketEn, and
 * writes the enable packets: a full PSB+ when PacketByteCnt is 0 or the
 * model has no configurable PSB, else TSC, TMA, CBR and MODE.Exec as
 * enabled; then TIP.PGE when PacketEn.
 * The IP is the feed's starting IP when a feed begins with one.  After a
 * context switch to another program (@c->pge_pending) the CPU is in the
 * kernel: PacketEn stays off and the TIP.PGE comes when the program runs
 * (ipt_sim_run()).
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 */
void ipt_sim_trace_enable(struct ipt_sim_cpu *c)
{
	u8 buf[IPT_SIM_PKT_MAX];
	size_t n = 0;

	c->status &= ~(RTIT_STATUS_FILTEREN | RTIT_STATUS_CONTEXTEN |
		       RTIT_STATUS_TRIGGEREN);
	c->packet_en = false;
	c->last_mtc_ctc = ipt_sim_ctc(c);
	c->last_cyc_tsc = c->tsc;
	c->ran_tsc = c->tsc;
	if (c->status & RTIT_STATUS_ERROR)
		return;
	/*
	 * Still Stopped at STOP (enabled again without clearing it: a
	 * driver that stops the unit to read its position, or a thread's
	 * trace saved at STOP loaded on another CPU): TriggerEn stays clear
	 * and nothing is written, but the program runs, and what it would
	 * trace is lost (stats.stopped), as for a unit that reached STOP
	 * while enabled.
	 */
	if (c->status & RTIT_STATUS_STOPPED) {
		ipt_sim_update_en(c);
		if (c->pge_pending)
			c->packet_en = false;
		return;
	}
	c->status |= RTIT_STATUS_TRIGGEREN;
	ipt_sim_update_en(c);
	/* Enabled in the kernel on the way to a new program: no PGE yet. */
	if (c->pge_pending)
		c->packet_en = false;

	/* Without configurable PSB, every enable writes a PSB+. */
	if (!FIELD_GET(RTIT_STATUS_BYTECNT, c->status) ||
	    !(c->model->leaf_14_0.ebx & BIT(1))) {
		n = ipt_sim_psb_plus(c, buf, false);
	} else {
		if (c->ctl & RTIT_CTL_TSC_EN) {
			n += ipt_sim_pkt_tsc(buf + n, c->tsc);
			if (c->ctl & RTIT_CTL_MTC_EN)
				n += ipt_sim_tma(c, buf + n);
		}
		n += ipt_sim_pkt_cbr(buf + n, c->model->nom_ratio);
		if (c->packet_en)
			n += ipt_sim_pkt_mode_exec(buf + n);
	}
	if (ipt_sim_ip_valid(c))
		n += ipt_sim_pkt_ip(buf + n, IPT_SIM_PKT_TIP_PGE, c->ip);
	ipt_sim_put(c, buf, n);
}

/**
 * ipt_sim_trace_disable() - TraceEn is about to go from 1 to 0
 * @c: the state, @c->ctl still holding the old value
 *
 * Writes FUP (current IP) and TIP.PGD when PacketEn, then clears
 * TriggerEn, ContextEn and FilterEn, and flushes the internal buffer
 * (struct ipt_sim_hold).
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 */
void ipt_sim_trace_disable(struct ipt_sim_cpu *c)
{
	u8 buf[IPT_SIM_PKT_MAX];
	size_t n;

	if (ipt_sim_ip_valid(c)) {
		n = ipt_sim_pkt_ip(buf, IPT_SIM_PKT_FUP, c->ip);
		n += ipt_sim_pkt_ip(buf + n, IPT_SIM_PKT_TIP_PGD, IPT_SIM_IP_NONE);
		ipt_sim_put(c, buf, n);
	}
	c->status &= ~(RTIT_STATUS_FILTEREN | RTIT_STATUS_CONTEXTEN |
		       RTIT_STATUS_TRIGGEREN);
	c->packet_en = false;
	/* "all buffered packets are flushed out of internal buffers" */
	ipt_sim_hold_flush(c);
}

/*
 * The next feed record: its payload, length and the IP after it; records
 * whether the program is then outside the traced context.
 */
static bool ipt_sim_feed_next(struct ipt_sim_cpu *c, const u8 **p, size_t *n,
			      u64 *ip)
{
	struct ipt_sim_feed *f = &c->feed;
	struct ipt_sim_feed_hdr h;
	size_t len;

	if (f->len - f->pos < IPT_SIM_FEED_HDR)
		return false;
	ipt_sim_feed_hdr(f, &h);
	len = le16_to_cpu(h.len);
	if (f->len - f->pos - IPT_SIM_FEED_HDR < len)
		return false;
	*ip = le64_to_cpu(h.ip);
	c->feed_ctx_off = le16_to_cpu(h.flags) & IPT_SIM_FEED_CTX_OFF;
	*p = f->buf + f->pos + IPT_SIM_FEED_HDR;
	*n = len;
	f->pos += IPT_SIM_FEED_HDR + len;
	return true;
}

static u64 ipt_sim_psb_period(const struct ipt_sim_cpu *c)
{
	return SZ_2K << FIELD_GET(RTIT_CTL_PSB_FREQ, c->ctl);
}

/*
 * Bytes the next unit of branch content has: a feed record's payload (0
 * when no whole record is there: the loop stops anyway), or the built-in
 * loop's TNT.
 */
static u64 ipt_sim_next_len(const struct ipt_sim_cpu *c)
{
	const struct ipt_sim_feed *f = &c->feed;
	struct ipt_sim_feed_hdr h;

	if (!f->buf)
		return 1;
	if (f->len - f->pos < IPT_SIM_FEED_HDR)
		return 0;
	ipt_sim_feed_hdr(f, &h);
	return le16_to_cpu(h.len);
}

/*
 * A paced program (@c->pace) blocks when its next @n bytes, with
 * IPT_SIM_PACE_RESERVE for a disable's packets, could fill a STOP region;
 * counted once a slice by the caller.
 */
static bool ipt_sim_pace_blocks(const struct ipt_sim_cpu *c, u64 n)
{
	u64 need = n + IPT_SIM_PACE_RESERVE;

	return c->pace && ipt_sim_room_before_stop(c, need + 1) <= need;
}

/*
 * The wake from a C-state that stopped the unit's clocks: TSC (TSCEn), TMA
 * (TSCEn and MTCEn) and CBR.  SDM vol. 3C, Intel PT chapter, "Timestamp
 * Counter (TSC) Packet": sent after any event that stops the processor
 * clocks or the timing packets (MTC, CYC), including wake from a C-state;
 * "TSC/MTC Alignment (TMA) Packet": sent with any TSC packet; "Core:Bus
 * Ratio (CBR) Packet": sent on C-state wake up.  The cycle counter did
 * not count while the core slept: CYC restarts from the wake.
 */
static void ipt_sim_wake(struct ipt_sim_cpu *c)
{
	u8 buf[IPT_SIM_PKT_MAX];
	size_t n = 0;

	if (c->ctl & RTIT_CTL_TSC_EN) {
		n += ipt_sim_pkt_tsc(buf + n, c->tsc);
		if (c->ctl & RTIT_CTL_MTC_EN)
			n += ipt_sim_tma(c, buf + n);
	}
	n += ipt_sim_pkt_cbr(buf + n, c->model->nom_ratio);
	ipt_sim_put(c, buf, n);
	c->last_cyc_tsc = c->tsc;
}

/*
 * The clock moved on to @c->tsc: an MTC for every change of
 * CTC[MTCFreq+7:MTCFreq] since the last one, each carrying the new value
 * (SDM vol. 3C, Intel PT chapter, "Mini Time Counter (MTC) Packet": sent
 * whenever those bits change), as a running core's unit writes them.
 * More than IPT_SIM_MTC_RUN_MAX periods is an idle gap instead: the core
 * was in a C-state and the unit wakes with ipt_sim_wake(), so the 8-bit
 * payload never wraps between two MTCs.
 */
static void ipt_sim_clock_to_now(struct ipt_sim_cpu *c)
{
	unsigned int f = FIELD_GET(RTIT_CTL_MTC_RANGE, c->ctl);
	u64 ctc = ipt_sim_ctc(c);
	u64 from = ipt_sim_ctc_at(c, c->ran_tsc) >> f;
	u8 buf[2];
	u64 v;

	if ((ctc >> f) - from > IPT_SIM_MTC_RUN_MAX) {
		ipt_sim_wake(c);
	} else if (c->ctl & RTIT_CTL_MTC_EN) {
		for (v = (c->last_mtc_ctc >> f) + 1; v <= ctc >> f; v++)
			ipt_sim_put(c, buf, ipt_sim_pkt_mtc(buf, v));
	}
	c->last_mtc_ctc = ctc;
	c->ran_tsc = c->tsc;
}

/*
 * The length of the packet at @p, of @avail bytes, for splitting a feed
 * record between packets (SDM vol. 3C, Intel PT chapter, "Packet
 * Definitions"); @avail when it is not known or not whole: the rest then
 * goes as one piece.
 */
static size_t ipt_sim_pkt_len(const u8 *p, size_t avail)
{
	/* IPBytes 101 and 111 are reserved: 0, not known. */
	static const u8 ip_len[8] = { 1, 3, 5, 7, 7, 0, 9, 0 };
	u8 type = p[0] & 0x1f;
	size_t n = 0;

	if (!avail)
		return 0;
	if (p[0] == 0x02) {
		if (avail < 2)
			return avail;
		if (p[1] == 0xa3 || p[1] == 0x43)	/* TNT-64, PIP */
			n = 8;
		else if (p[1] == 0x73 || p[1] == 0xc8)	/* TMA, VMCS */
			n = 7;
		else if (p[1] == 0x03)			/* CBR */
			n = 4;
		else if (p[1] == 0x23 || p[1] == 0xf3 || p[1] == 0x83)
			n = 2;			/* PSBEND, OVF, TraceStop */
	} else if (!(p[0] & 1)) {		/* PAD, TNT-8 */
		n = 1;
	} else if (type == 0x0d || type == 0x11 || type == 0x01 || type == 0x1d) {
		n = ip_len[p[0] >> 5];		/* TIP, TIP.PGE/PGD, FUP */
	} else if (p[0] == 0x99 || p[0] == 0x59) {	/* MODE, MTC */
		n = 2;
	} else if (p[0] == 0x19) {		/* TSC */
		n = 8;
	}
	return n && n <= avail ? n : avail;
}

/*
 * MTCs the unit writes as the program runs @len bytes' worth: one per MTC
 * period the clock crosses, with MTCEn.
 */
static u64 ipt_sim_periods_in(const struct ipt_sim_cpu *c, u64 len)
{
	unsigned int f = FIELD_GET(RTIT_CTL_MTC_RANGE, c->ctl);
	u64 t = c->tsc + len * IPT_SIM_TSC_PER_BYTE;

	if (!(c->ctl & RTIT_CTL_MTC_EN))
		return 0;
	return (ipt_sim_ctc_at(c, t) >> f) - (ipt_sim_ctc(c) >> f);
}

/*
 * Run one unit of branch content: a packet at a time, the clock advancing
 * IPT_SIM_TSC_PER_BYTE per byte before each, with the MTCs (or the wake)
 * of the periods it crossed before the packet, as the unit writes timing
 * packets between the packets of the code that runs; the CYC when enabled
 * after the first packet's time.  A feed record's packets stay in order
 * and whole: MTC changes neither the last IP nor the return stack.
 */
static void ipt_sim_run_unit(struct ipt_sim_cpu *c, const u8 *unit, size_t n)
{
	unsigned int t = FIELD_GET(RTIT_CTL_CYC_THRESH, c->ctl);
	size_t off = 0, len;
	u64 cycles;
	u8 cyc[16];

	do {
		len = ipt_sim_pkt_len(unit + off, n - off);
		c->tsc += (u64)len * IPT_SIM_TSC_PER_BYTE;
		ipt_sim_clock_to_now(c);
		cycles = c->tsc - c->last_cyc_tsc;
		if (!off && n && (c->ctl & RTIT_CTL_CYCLEACC) && cycles &&
		    cycles >= (t ? BIT_ULL(t - 1) : 1)) {
			ipt_sim_put(c, cyc, ipt_sim_pkt_cyc(cyc, cycles));
			c->last_cyc_tsc = c->tsc;
		}
		ipt_sim_put(c, unit + off, len);
		off += len;
	} while (off < n);
}

/*
 * Bulk mode: the built-in loop runs in large units, when the state has
 * scratch for them (@c->bulk), the CPU runs the loop (no feed) and CYC is
 * off (its packets would go before every TNT byte).
 */
static bool ipt_sim_bulk_on(const struct ipt_sim_cpu *c)
{
	return c->bulk && !c->feed.buf && !(c->ctl & RTIT_CTL_CYCLEACC);
}

/*
 * Bytes of the next bulk unit, at most @left: up to the next PSB+ (a whole
 * period when one is due first), leaving room in the scratch for the MTCs
 * of its last byte.
 */
static u64 ipt_sim_bulk_want(const struct ipt_sim_cpu *c, u64 left)
{
	u64 cnt = FIELD_GET(RTIT_STATUS_BYTECNT, c->status);
	u64 psb = ipt_sim_psb_period(c);

	return min3(left, cnt < psb ? psb - cnt : psb,
		    (u64)(IPT_SIM_BULK_CHUNK - IPT_SIM_TIME_MAX - 1));
}

/* The least TSC at which ipt_sim_ctc_at() reaches @ctc. */
static u64 ipt_sim_tsc_of_ctc(const struct ipt_sim_cpu *c, u64 ctc)
{
	const struct ipt_cpuid_regs *l15 = &c->model->leaf_15;

	if (!l15->ebx || !l15->eax)
		return ctc << 4;
	return div_u64(ctc + l15->eax - 1, l15->eax) * l15->ebx;
}

/*
 * The TSC ticks of one MTC period when every period has the same length
 * (leaf 15H's EAX divides the period's 2^MTCFreq CTC ticks, or no leaf
 * 15H) and it is longer than a TNT byte's time; else 0.
 */
static u64 ipt_sim_mtc_step(const struct ipt_sim_cpu *c)
{
	const struct ipt_cpuid_regs *l15 = &c->model->leaf_15;
	u64 ctcs = BIT_ULL(FIELD_GET(RTIT_CTL_MTC_RANGE, c->ctl)), step;

	if (l15->ebx && l15->eax && ctcs % l15->eax)
		return 0;
	step = ipt_sim_tsc_of_ctc(c, ctcs);
	return step > IPT_SIM_TSC_PER_BYTE ? step : 0;
}

/*
 * Put together in @c->bulk what the built-in loop writes for @want bytes
 * or a little more, exactly as a packet at a time would (ipt_sim_run_unit()
 * with ipt_sim_clock_to_now()): its TNT bytes, the clock advancing
 * IPT_SIM_TSC_PER_BYTE before each, and before the first byte of each new
 * MTC period its MTCs.  A run of TNT bytes inside one period is a memset;
 * only a period's end needs the clock, and where periods are all alike
 * (ipt_sim_mtc_step()) not even a division.  Returns the bytes put
 * together.
 */
static size_t ipt_sim_bulk_fill(struct ipt_sim_cpu *c, u64 want)
{
	unsigned int f = FIELD_GET(RTIT_CTL_MTC_RANGE, c->ctl);
	bool mtc = c->ctl & RTIT_CTL_MTC_EN;
	u64 step = ipt_sim_mtc_step(c);
	u64 v = c->last_mtc_ctc >> f;
	u64 next = ipt_sim_tsc_of_ctc(c, (v + 1) << f);
	u8 *p = c->bulk;
	size_t n = 0;
	u64 k, to;

	/* Without MTCEn the periods write nothing: one run of TNT. */
	if (!mtc) {
		memset(p, IPT_SIM_LOOP_TNT, want);
		n = want;
		c->tsc += want * IPT_SIM_TSC_PER_BYTE;
	}
	while (n < want) {
		/* TNT bytes whose time stays inside this MTC period. */
		k = next > c->tsc ?
		    (next - c->tsc - 1) / IPT_SIM_TSC_PER_BYTE : 0;
		k = min(k, want - n);
		memset(p + n, IPT_SIM_LOOP_TNT, k);
		n += k;
		c->tsc += k * IPT_SIM_TSC_PER_BYTE;
		if (n >= want)
			break;
		/* This byte's time crosses into a new period: MTCs first. */
		c->tsc += IPT_SIM_TSC_PER_BYTE;
		if (step) {
			to = v + 1;
			next += step;
		} else {
			to = ipt_sim_ctc(c) >> f;
			next = ipt_sim_tsc_of_ctc(c, (to + 1) << f);
		}
		while (v < to && n + 3 <= IPT_SIM_BULK_CHUNK)
			n += ipt_sim_pkt_mtc(p + n, ++v);
		v = to;
		p[n++] = IPT_SIM_LOOP_TNT;
	}
	c->last_mtc_ctc = ipt_sim_ctc(c);
	c->ran_tsc = c->tsc;
	return n;
}

/* Bytes produced (written, dropped or lost at STOP) since the count @start. */
static u64 ipt_sim_spent(const struct ipt_sim_cpu *c, u64 start)
{
	return c->stats.bytes + c->stats.dropped + c->stats.stopped - start;
}

/**
 * ipt_sim_run() - produce trace for one time slice
 * @c: the state; @c->tsc is the time now, at or after where the last
 *     slice left it
 * @budget: bytes to produce (written or dropped) at most, roughly
 *
 * While output is on, or Stopped at a STOP entry (the program runs on; what
 * it would trace is counted as lost, stats.stopped): first the time since
 * the unit last ran, as MTCs or, after an idle gap, as a wake's TSC, TMA
 * and CBR (ipt_sim_clock_to_now()); TIP.PGE if the program changed since
 * the last run (ipt_sim_switch_out()); then branch content (the feed's
 * records or the built-in loop).  The program runs at
 * IPT_SIM_TSC_PER_BYTE TSC ticks per byte of its branch content, a packet
 * at a time (ipt_sim_run_unit()): before each packet the clock advances,
 * the MTCs of the periods it crossed are written, before a unit's first
 * packet CYC with the cycles since the last CYC when enabled, then the
 * packet; PSB+ whenever PacketByteCnt reaches the PSBFreq period.  So a
 * slice's packets carry the times of a program running for part of the
 * slice, and the rest of the slice is idle.
 *
 * A paced program (@c->pace) blocks for the rest of the slice, as a
 * producer waits for its consumer, before anything it writes could fill
 * the region of a STOP entry: each group (the MTCs or a wake, a PSB+, an
 * OVF, a CYC and the unit of branch content, at most IPT_SIM_TIME_MAX +
 * 3 * IPT_SIM_PKT_MAX bytes, the unit and its MTCs)
 * must leave IPT_SIM_PACE_RESERVE bytes of room; stats.paced counts
 * such slices.  So output never stops at STOP, and nothing is lost.
 *
 * In bulk mode (@c->bulk, ipt_sim_bulk_on()) the built-in loop's unit is
 * as many TNT bytes as fit before the next PSB+, the budget's end and the
 * scratch's, with their MTCs, put together in @c->bulk and written as one
 * group (ipt_sim_bulk_fill()): the same bytes a packet at a time writes.
 * Paced, the unit shrinks to what leaves the reserve before STOP.
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 */
void ipt_sim_run(struct ipt_sim_cpu *c, u64 budget)
{
	u64 start = ipt_sim_spent(c, 0);
	u8 buf[IPT_SIM_PKT_MAX];
	size_t n;

	/* Stopped at STOP: the program runs on, its trace is lost. */
	if (!ipt_sim_output_on(c) && !ipt_sim_output_stopped(c))
		return;
	/* The time so far (MTCs or a wake) and TIP.PGE: one group. */
	if (ipt_sim_pace_blocks(c, IPT_SIM_TIME_MAX + IPT_SIM_PKT_MAX)) {
		c->stats.paced++;
		return;
	}
	ipt_sim_clock_to_now(c);
	if (c->pge_pending) {
		/* Back in user mode, in the program switched to. */
		c->pge_pending = false;
		ipt_sim_update_en(c);
		if (ipt_sim_ip_valid(c)) {
			n = ipt_sim_pkt_ip(buf, IPT_SIM_PKT_TIP_PGE, c->ip);
			ipt_sim_put(c, buf, n);
		}
	}
	while ((ipt_sim_output_on(c) || ipt_sim_output_stopped(c)) &&
	       ipt_sim_spent(c, start) < budget) {
		u64 left = budget - ipt_sim_spent(c, start);
		bool bulk = ipt_sim_bulk_on(c);
		const u8 *unit;
		u64 ip, len;

		len = bulk ? ipt_sim_bulk_want(c, left) : ipt_sim_next_len(c);
		if (bulk && c->pace) {
			/*
			 * In bulk the unit's MTCs are part of @len: it
			 * shrinks to what fits before STOP, as a packet at a
			 * time the program would run up to there.
			 */
			u64 fixed = IPT_SIM_TIME_MAX + 3 * IPT_SIM_PKT_MAX +
				    IPT_SIM_PACE_RESERVE;
			u64 room = ipt_sim_room_before_stop(c, fixed + len + 1);

			if (room <= fixed + 1) {
				c->stats.paced++;
				break;
			}
			len = min(len, room - fixed - 1);
		} else if (ipt_sim_pace_blocks(c, IPT_SIM_TIME_MAX +
					       3 * IPT_SIM_PKT_MAX + len +
					       2 * ipt_sim_periods_in(c, len))) {
			c->stats.paced++;
			break;
		}
		if (FIELD_GET(RTIT_STATUS_BYTECNT, c->status) >=
		    ipt_sim_psb_period(c)) {
			n = ipt_sim_psb_plus(c, buf, ipt_sim_ip_valid(c));
			ipt_sim_put(c, buf, n);
		}
		if (!c->packet_en)
			break;
		if (bulk) {
			u64 was = c->stats.bytes;

			/*
			 * After a PSB+: up to the next one, within what the
			 * budget has left (one TNT at least, as a packet at
			 * a time).  @len, which pacing allowed, bounds it.
			 */
			left = budget - min(budget - 1, ipt_sim_spent(c, start));
			n = ipt_sim_bulk_fill(c, min(len,
						     ipt_sim_bulk_want(c, left)));
			ipt_sim_put(c, c->bulk, n);
			c->stats.bulk += c->stats.bytes - was;
			c->ip = IPT_SIM_CODE_LOOP_END;
			continue;
		}
		if (c->feed.buf) {
			if (!ipt_sim_feed_next(c, &unit, &n, &ip))
				break;
		} else {
			buf[0] = IPT_SIM_LOOP_TNT;
			unit = buf;
			n = 1;
			ip = IPT_SIM_CODE_LOOP_END;
		}
		ipt_sim_run_unit(c, unit, n);
		c->ip = ip;
	}
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_run);

/**
 * ipt_sim_switch_out() - the running program leaves the CPU
 * @c: the state; the caller swaps the program (@c->feed, @c->ip,
 *     @c->feed_ctx_off) afterwards
 *
 * The program enters the kernel (an interrupt or a system call) on its
 * way out: with PacketEn, FUP at its IP and TIP.PGD, as user-only tracing
 * shows it.  PacketEn is then off until the next program runs.
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 */
void ipt_sim_switch_out(struct ipt_sim_cpu *c)
{
	u8 buf[IPT_SIM_PKT_MAX];
	size_t n;

	c->stats.switches++;
	if (ipt_sim_output_on(c) && ipt_sim_ip_valid(c)) {
		n = ipt_sim_pkt_ip(buf, IPT_SIM_PKT_FUP, c->ip);
		n += ipt_sim_pkt_ip(buf + n, IPT_SIM_PKT_TIP_PGD, IPT_SIM_IP_NONE);
		ipt_sim_put(c, buf, n);
	}
	c->packet_en = false;
	c->pge_pending = true;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_switch_out);

// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of what the unit traces and when (ipt_sim_trace.c): the
 * enable and disable packets, PSB+ at its period, OVF after dropped
 * bytes, MTC and CYC, feed records, and context switches between
 * programs.
 */
#include <kunit/test.h>
#include <linux/bitfield.h>
#include <linux/kernel.h>
#include <linux/sizes.h>
#include <linux/string.h>

#include "../ipt_sim_feed.h"
#include "ipt_sim_test.h"

/* A 32 KiB single range for packet tests; returns its kernel address. */
static u8 *pkt_start(struct kunit *test, struct ipt_sim_cpu *c, u64 ctl)
{
	u64 pa;
	u8 *out = sim_mem(test, 3, &pa);

	sim_start(test, c, pa, SZ_32K - 1, ctl);
	return out;
}

/* A zeroed feed of @cap bytes for unit @c, no record in it yet. */
static void feed_init(struct kunit *test, struct ipt_sim_cpu *c, size_t cap)
{
	c->feed.buf = kunit_kzalloc(test, cap, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c->feed.buf);
	c->feed.cap = cap;
	c->feed.len = 0;
}

/*
 * Append a record to @c's feed (struct ipt_sim_feed_hdr): @n bytes of
 * @payload, @flags, and @ip, where execution is after them.
 */
static void feed_rec(struct kunit *test, struct ipt_sim_cpu *c, u16 flags,
		     u64 ip, const u8 *payload, u16 n)
{
	struct ipt_sim_feed_hdr h = {
		.len = cpu_to_le16(n),
		.flags = cpu_to_le16(flags),
		.ip = cpu_to_le64(ip),
	};

	KUNIT_ASSERT_LE(test, c->feed.len + sizeof(h) + n, c->feed.cap);
	memcpy(c->feed.buf + c->feed.len, &h, sizeof(h));
	if (n)
		memcpy(c->feed.buf + c->feed.len + sizeof(h), payload, n);
	c->feed.len += sizeof(h) + n;
}

/* PacketByteCnt = 0: PSB+ (without FUP), then TIP.PGE. */
static void pkt_enable_psb(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	c->tsc = 0x123456789aULL;
	out = pkt_start(test, c, CTL_RANGE | RTIT_CTL_TSC_EN | RTIT_CTL_MTC_EN);
	/* CTC = TSC / 104 * 2 = 0x599f338c, FastCounter TSC % 104 = 0x2a */
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 46ULL);
	EXPECT_BYTES(test, out, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		     0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		     0x19, 0x9a, 0x78, 0x56, 0x34, 0x12, 0x00, 0x00,
		     0x02, 0x73, 0x8c, 0x33, 0x00, 0x2a, 0x00,
		     0x02, 0x03, 0x14, 0x00,
		     0x99, 0x01,
		     0x02, 0x23,
		     0x71, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00);
	KUNIT_EXPECT_EQ(test, c->stats.psb, 1ULL);
	KUNIT_EXPECT_TRUE(test, c->packet_en);
}

/* PacketByteCnt > 0: TSC, TMA, CBR, MODE.Exec, TIP.PGE; no PSB. */
static void pkt_enable_no_psb(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 ctl = CTL_RANGE | RTIT_CTL_TSC_EN | RTIT_CTL_MTC_EN;
	u8 *out;

	out = pkt_start(test, c, ctl);
	ipt_sim_run(c, 3);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, ctl & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 46ULL + 3 + 8);
	/* Disable: FUP at the loop's jmp, TIP.PGD without IP. */
	EXPECT_BYTES(test, out + 46, LOOP_TNT, LOOP_TNT, LOOP_TNT,
		     0x7d, 0x09, 0x10, 0x40, 0x00, 0x00, 0x00, 0x01);
	c->tsc = 208;	/* CTC 4 */
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, ctl);
	EXPECT_BYTES(test, out + 57, 0x19, 0xd0, 0, 0, 0, 0, 0, 0,
		     0x02, 0x73, 0x04, 0x00, 0x00, 0x00, 0x00,
		     0x02, 0x03, 0x14, 0x00, 0x99, 0x01,
		     0x71, 0x09, 0x10, 0x40, 0x00, 0x00, 0x00);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 57ULL + 28);
	KUNIT_EXPECT_EQ(test, c->stats.psb, 1ULL);
}

/* No PacketEn (User = 0 for user code): PSB+ only, no TIP.PGE. */
static void pkt_enable_no_packet_en(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	out = pkt_start(test, c, CTL_RANGE & ~RTIT_CTL_USR);
	KUNIT_EXPECT_FALSE(test, c->packet_en);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 24ULL);
	EXPECT_BYTES(test, out + 16, 0x02, 0x03, 0x14, 0x00, 0x99, 0x01,
		     0x02, 0x23);
	ipt_sim_run(c, 100);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 24ULL);
}

/* A PSB+ (with FUP) every 2K << PSBFreq bytes. */
static void pkt_psb_interval(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 ctl = CTL_RANGE | FIELD_PREP(RTIT_CTL_PSB_FREQ, 1);
	u8 *out;

	out = pkt_start(test, c, ctl);
	ipt_sim_run(c, SZ_8K + 100);
	KUNIT_EXPECT_EQ(test, out[SZ_4K - 1], LOOP_TNT);
	EXPECT_BYTES(test, out + SZ_4K, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		     0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		     0x02, 0x03, 0x14, 0x00, 0x99, 0x01,
		     0x7d, 0x09, 0x10, 0x40, 0x00, 0x00, 0x00, 0x02, 0x23,
		     LOOP_TNT);
	EXPECT_BYTES(test, out + SZ_8K, 0x02, 0x82);
	KUNIT_EXPECT_EQ(test, out[SZ_8K - 1], LOOP_TNT);
	KUNIT_EXPECT_EQ(test, c->stats.psb, 3ULL);
}

/* Dropped bytes: OVF then FUP with the current IP. */
static void pkt_ovf(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	out = pkt_start(test, c, CTL_RANGE);
	c->drop = 10;
	ipt_sim_run(c, 12);
	KUNIT_EXPECT_EQ(test, c->stats.dropped, 10ULL);
	KUNIT_EXPECT_EQ(test, c->stats.ovf, 1ULL);
	EXPECT_BYTES(test, out + 31, 0x02, 0xf3,
		     0x7d, 0x09, 0x10, 0x40, 0x00, 0x00, 0x00, LOOP_TNT);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 10);
}

/*
 * MTC and CYC as the program runs: the clock advances
 * IPT_SIM_TSC_PER_BYTE per TNT byte, an MTC comes whenever CTC[7:0]
 * changes (MTCFreq 0), carrying the new value, and a CYC before each TNT
 * with the cycles since the last one.
 */
static void pkt_mtc_cyc(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	out = pkt_start(test, c, CTL_RANGE | RTIT_CTL_MTC_EN | RTIT_CTL_CYCLEACC);
	c->tsc = 104;	/* CTC 2: two MTCs, CTC 1 and 2 */
	ipt_sim_run(c, 5);	/* the MTCs count against the budget */
	/* MTC 1, MTC 2, CYC of 104 + 32 cycles, the TNT. */
	EXPECT_BYTES(test, out + 31, 0x59, 0x01, 0x59, 0x02, 0x47, 0x08, LOOP_TNT);
	/* The next TNT: CYC of 32 (CTC still 2 at TSC 168: no MTC). */
	ipt_sim_run(c, 1);
	EXPECT_BYTES(test, out + 38, 0x07, 0x02, LOOP_TNT);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 10);
	KUNIT_EXPECT_EQ(test, c->tsc, 104ULL + 2 * IPT_SIM_TSC_PER_BYTE);
}

/* One packet at @p, @end bytes in all: its length; 0 if it is not whole. */
static size_t time_pkt_len(const u8 *p, size_t end)
{
	size_t n = 1;

	if (p[0] == 0x59)
		return end >= 2 ? 2 : 0;
	if ((p[0] & 3) != 3)	/* TNT-8 and the rest: one byte here */
		return 1;
	if (!(p[0] & 4))
		return 1;
	while (n < end && (p[n] & 1))
		n++;
	return n < end ? n + 1 : 0;
}

static u64 time_cyc_value(const u8 *p)
{
	u64 v = p[0] >> 3;
	unsigned int i = 1, sh = 5;

	if (p[0] & 4) {
		do {
			v |= (u64)(p[i] >> 1) << sh;
			sh += 7;
		} while (p[i++] & 1);
	}
	return v;
}

/*
 * A slice's packets spread over time: at MTCFreq 3 (an MTC period is 8
 * CTC, 416 TSC on "icl"), an MTC at each change of CTC[10:3] with the
 * next payload, after the TNT during which it changed; the CYCs add up to
 * the clock's advance.  Before, the whole slice had one time: no CYC
 * value but the first was non-zero and at most one MTC came a slice.
 */
static void pkt_time_in_slice(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 ctl = CTL_RANGE | RTIT_CTL_TSC_EN | RTIT_CTL_MTC_EN |
		  RTIT_CTL_CYCLEACC | FIELD_PREP(RTIT_CTL_MTC_RANGE, 3);
	u64 cyc_sum = 0, tnt = 0, mtc = 0, start;
	size_t i, len, end;
	u8 *out;

	out = pkt_start(test, c, ctl);
	start = c->stats.bytes;
	KUNIT_ASSERT_EQ(test, start, 46ULL);
	ipt_sim_run(c, 1500);	/* short of the PSB at 2 KiB */
	end = c->stats.bytes;
	for (i = start; i < end; i += len) {
		len = time_pkt_len(out + i, end - i);
		KUNIT_ASSERT_NE(test, len, (size_t)0);
		if (out[i] == 0x59) {
			/* MTC v: CTC reached 8 * v running this TNT. */
			mtc++;
			KUNIT_EXPECT_EQ(test, out[i + 1], (u8)mtc);
			KUNIT_EXPECT_EQ(test,
					(tnt + 1) * IPT_SIM_TSC_PER_BYTE / 104 * 2 / 8,
					mtc);
			KUNIT_EXPECT_LT(test,
					tnt * IPT_SIM_TSC_PER_BYTE / 104 * 2 / 8, mtc);
		} else if ((out[i] & 3) == 3) {
			KUNIT_EXPECT_EQ(test, time_cyc_value(out + i),
					(u64)IPT_SIM_TSC_PER_BYTE);
			cyc_sum += time_cyc_value(out + i);
		} else {
			KUNIT_EXPECT_EQ(test, out[i], LOOP_TNT);
			tnt++;
		}
	}
	KUNIT_EXPECT_EQ(test, c->tsc, tnt * IPT_SIM_TSC_PER_BYTE);
	KUNIT_EXPECT_EQ(test, cyc_sum, c->tsc);
	KUNIT_EXPECT_EQ(test, mtc, c->tsc / 104 * 2 / 8);
	KUNIT_EXPECT_GE(test, mtc, 10ULL);
}

/*
 * Between slices: a few MTC periods are written as MTCs; a gap of more
 * than IPT_SIM_MTC_RUN_MAX (a 1 ms timer tick is about 4,800 at MTCFreq
 * 3) is a C-state the unit wakes from with TSC, TMA and CBR, and no MTC
 * whose 8-bit payload would have wrapped.
 */
static void pkt_time_idle_wake(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 ctl = CTL_RANGE | RTIT_CTL_TSC_EN | RTIT_CTL_MTC_EN |
		  RTIT_CTL_CYCLEACC | FIELD_PREP(RTIT_CTL_MTC_RANGE, 3);
	u64 at;
	u8 *out;

	out = pkt_start(test, c, ctl);
	/* A short gap: 3 periods, 3 MTCs, then CYC and the TNT. */
	c->tsc = 3 * 416;
	ipt_sim_run(c, 7);	/* the MTCs count against the budget */
	EXPECT_BYTES(test, out + 46, 0x59, 0x01, 0x59, 0x02, 0x59, 0x03);
	KUNIT_EXPECT_EQ(test, time_cyc_value(out + 52), 3ULL * 416 + 32);
	at = c->stats.bytes;
	/*
	 * 1 ms at 2 GHz: the wake's TSC, TMA (CTC 0x9656, FastCounter 8: TSC
	 * 0x1e8980 is 8 past CTC 0x9656's start), CBR; CYC 32.
	 */
	c->tsc += 2000000;
	ipt_sim_run(c, 20);
	EXPECT_BYTES(test, out + at, 0x19, 0x80, 0x89, 0x1e, 0, 0, 0, 0,
		     0x02, 0x73, 0x56, 0x96, 0x00, 0x08, 0x00,
		     0x02, 0x03, 0x14, 0x00,
		     0x07, 0x02, LOOP_TNT);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, at + 22);
}

/*
 * A feed record runs a packet at a time: at MTCFreq 3 (416 TSC a period)
 * the MTC comes between the record's packets where the clock crossed the
 * period, 13 bytes in, and the TIP stays whole.  (Before, the record was
 * one unit and its packets all had one time.)
 */
static void pkt_time_feed(struct kunit *test)
{
	/* 4 TNT-8, TIP 0x400200, 4 TNT-8 */
	static const u8 tnt_tip_tnt[] = {
		0x06, 0x06, 0x06, 0x06, 0x6d, 0x00, 0x02, 0x40, 0x00, 0x00,
		0x00, 0x06, 0x06, 0x06, 0x06,
	};
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	feed_init(test, c, 2 * IPT_SIM_FEED_HDR + sizeof(tnt_tip_tnt));
	feed_rec(test, c, 0, 0x400100, NULL, 0);
	feed_rec(test, c, 0, 0x400200, tnt_tip_tnt, sizeof(tnt_tip_tnt));
	out = pkt_start(test, c, CTL_RANGE | RTIT_CTL_MTC_EN |
			FIELD_PREP(RTIT_CTL_MTC_RANGE, 3));
	ipt_sim_run(c, 100);
	KUNIT_EXPECT_EQ(test, c->feed.pos, c->feed.len);
	/* TSC 416 (CTC 8) is reached running the sixth TNT-8. */
	EXPECT_BYTES(test, out + 31, 0x06, 0x06, 0x06, 0x06,
		     0x6d, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00,
		     0x06, 0x59, 0x01, 0x06, 0x06, 0x06);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 17);
	KUNIT_EXPECT_EQ(test, c->tsc, 15ULL * IPT_SIM_TSC_PER_BYTE);
}

/*
 * Feed records are written verbatim, the IP follows them, and a leading
 * IP-only record sets the IP the enable packets carry.
 */
static void pkt_feed(struct kunit *test)
{
	/* TNT-8 (T), TIP 0x400200 (IPBytes 011) */
	static const u8 tnt_tip[] = {
		0x06, 0x6d, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00,
	};
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	size_t whole;
	u8 *out;

	feed_init(test, c, 2 * IPT_SIM_FEED_HDR + sizeof(tnt_tip) + 8);
	/* set the IP to 0x400100 */
	feed_rec(test, c, 0, 0x400100, NULL, 0);
	feed_rec(test, c, 0, 0x400200, tnt_tip, sizeof(tnt_tip));
	whole = c->feed.len;
	/* A partial header (zeros) at the end waits for more. */
	c->feed.len += 8;
	ipt_sim_run(c, 100);	/* TraceEn = 0: nothing consumed */
	KUNIT_EXPECT_EQ(test, c->feed.pos, (size_t)0);
	out = pkt_start(test, c, CTL_RANGE);
	/* The leading IP-only record gave the enable's TIP.PGE its IP. */
	KUNIT_EXPECT_EQ(test, c->feed.pos, (size_t)16);
	EXPECT_BYTES(test, out + 24, 0x71, 0x00, 0x01, 0x40, 0x00, 0x00, 0x00);
	ipt_sim_run(c, 100);
	KUNIT_EXPECT_EQ(test, c->feed.pos, whole);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 8);
	EXPECT_BYTES(test, out + 31, 0x06, 0x6d, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00);
	KUNIT_EXPECT_EQ(test, c->ip, 0x400200ULL);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	EXPECT_BYTES(test, out + 39, 0x7d, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00, 0x01);
}

/*
 * A record flagged CTX_OFF (the program left the traced context, e.g. a
 * system call) keeps the unit's own FUPs out: PSB+ without FUP, and no
 * FUP + TIP.PGD when TraceEn is cleared.
 */
static void pkt_feed_ctx_off(struct kunit *test)
{
	/* TIP.PGD without IP */
	static const u8 pgd[] = { 0x01 };
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	feed_init(test, c, 2 * IPT_SIM_FEED_HDR + sizeof(pgd));
	/* start at 0x400100 */
	feed_rec(test, c, 0, 0x400100, NULL, 0);
	/* CTX_OFF; at 0x400200 */
	feed_rec(test, c, IPT_SIM_FEED_CTX_OFF, 0x400200, pgd, sizeof(pgd));
	out = pkt_start(test, c, CTL_RANGE);
	ipt_sim_run(c, 100);
	KUNIT_EXPECT_EQ(test, c->feed.pos, c->feed.len);
	KUNIT_EXPECT_TRUE(test, c->feed_ctx_off);
	KUNIT_EXPECT_EQ(test, out[31], 0x01);
	/* Disable: nothing more is written. */
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 1);
	KUNIT_EXPECT_EQ(test, out[32], 0x00);
}

/*
 * A context switch to another program (ipt_sim_switch_out()): FUP and
 * TIP.PGD for the program leaving, then nothing until the next program
 * runs user code, which starts with TIP.PGE at its IP.  An enable in
 * between (the driver's switch-in) writes no TIP.PGE of its own.
 */
static void pkt_switch_programs(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u8 *out;

	out = pkt_start(test, c, CTL_RANGE);
	ipt_sim_run(c, 1);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, 31ULL + 1);
	ipt_sim_switch_out(c);
	KUNIT_EXPECT_EQ(test, c->stats.switches, 1ULL);
	KUNIT_EXPECT_FALSE(test, c->packet_en);
	KUNIT_EXPECT_TRUE(test, c->pge_pending);
	EXPECT_BYTES(test, out + 32, 0x7d, 0x09, 0x10, 0x40, 0x00, 0x00, 0x00, 0x01);
	/* The driver's switch-out and switch-in, in the kernel. */
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 1 + 8);
	c->ip = 0x400500;
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
	KUNIT_EXPECT_FALSE(test, c->packet_en);
	/* CBR only (PacketByteCnt > 0, no TSC), no MODE.Exec, no TIP.PGE. */
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 31ULL + 1 + 8 + 4);
	EXPECT_BYTES(test, out + 40, 0x02, 0x03, 0x14, 0x00);
	/* The new program runs: TIP.PGE at its IP, then its packets. */
	ipt_sim_run(c, 8);
	KUNIT_EXPECT_FALSE(test, c->pge_pending);
	KUNIT_EXPECT_TRUE(test, c->packet_en);
	EXPECT_BYTES(test, out + 44, 0x71, 0x00, 0x05, 0x40, 0x00, 0x00, 0x00, LOOP_TNT);
}

/* Without output on (TraceEn = 0) a switch writes nothing. */
static void pkt_switch_untraced(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");

	ipt_sim_switch_out(c);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 0ULL);
	KUNIT_EXPECT_TRUE(test, c->pge_pending);
}

/*
 * The CR3 filter against the CR3 user mode runs on: CR3_MATCH[63:5] =
 * CR3[63:5].  Under page-table isolation that is the user half of the
 * PGD (bit 12) and, with PCIDs, the user PCID (bit 11); the kernel PCID
 * (bits 2:0) is not compared.
 */
static void pkt_cr3_filter_pti(struct kunit *test)
{
	static const struct {
		bool pti, pcid;
		u64 user_cr3;
	} v[] = {
		{ false, false, IPT_SIM_CODE_CR3 },
		{ false, true, IPT_SIM_CODE_CR3 | IPT_SIM_CODE_KPCID },
		{ true, false, IPT_SIM_CODE_CR3 | BIT_ULL(12) },
		{ true, true, IPT_SIM_CODE_CR3 | BIT_ULL(12) | BIT_ULL(11) |
			      IPT_SIM_CODE_KPCID },
	};
	struct ipt_sim_model *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	struct ipt_sim_cpu *c;
	unsigned int i;
	u64 pa;

	KUNIT_ASSERT_NOT_NULL(test, m);
	sim_mem(test, 3, &pa);
	for (i = 0; i < ARRAY_SIZE(v); i++) {
		*m = *ipt_sim_model_by_name("skl");
		m->pti = v[i].pti;
		m->pcid = v[i].pcid;
		KUNIT_EXPECT_EQ(test, ipt_sim_user_cr3(m), v[i].user_cr3);
		KUNIT_EXPECT_EQ(test, ipt_sim_platform(m),
				(v[i].pti ? IPT_PLAT_PTI : 0) |
				(v[i].pcid ? IPT_PLAT_PCID : 0));

		/* The address space's kernel CR3 matches only without PTI. */
		c = sim_cpu(test, "skl");
		c->model = m;
		KUNIT_ASSERT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_CR3_MATCH,
						    IPT_SIM_CODE_CR3), 0);
		sim_start(test, c, pa, SZ_32K - 1, CTL_RANGE | RTIT_CTL_CR3EN);
		KUNIT_EXPECT_EQ_MSG(test, c->packet_en, !v[i].pti, "case %u", i);

		/* The user CR3 with its low bits masked always matches. */
		c = sim_cpu(test, "skl");
		c->model = m;
		KUNIT_ASSERT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_CR3_MATCH,
						    v[i].user_cr3 & ~0x1fULL), 0);
		sim_start(test, c, pa, SZ_32K - 1, CTL_RANGE | RTIT_CTL_CR3EN);
		KUNIT_EXPECT_TRUE_MSG(test, c->packet_en, "case %u", i);
	}
}

/*
 * Bulk mode (struct ipt_sim_cpu.bulk) writes exactly the bytes a packet at
 * a time writes: two units from the same start, one with bulk scratch, run
 * the same slices (budgets small and large, across PSB+ periods, with
 * short and idle gaps between them) into 32 KiB single ranges that wrap;
 * the output, the counters (bytes, PSBs, the checksum over every byte in
 * order) and the clock agree, and the bulk unit wrote most of its bytes in
 * bulk.  Models with leaf 15H (icl, skl) and without (bdw: no MTC), MTC
 * periods of 1 and 8 CTC ticks, PSB periods of 2 and 4 KiB.
 */
static void pkt_bulk_same_bytes(struct kunit *test)
{
	const struct {
		const char *model;
		u64 ctl;
	} v[] = {
		{ "icl", RTIT_CTL_TSC_EN | RTIT_CTL_MTC_EN |
			 FIELD_PREP(RTIT_CTL_MTC_RANGE, 3) },
		{ "icl", RTIT_CTL_TSC_EN | RTIT_CTL_MTC_EN |
			 FIELD_PREP(RTIT_CTL_PSB_FREQ, 1) },
		{ "skl", RTIT_CTL_TSC_EN | RTIT_CTL_MTC_EN |
			 FIELD_PREP(RTIT_CTL_MTC_RANGE, 3) },
		{ "bdw", RTIT_CTL_TSC_EN },
		{ "icl", 0 },
	};
	static const u64 budget[] = { 1, 700, 5000, 20000, 3, 16384, 2047 };
	static const u64 gap[] = { 0, 100, 1000000, 5000, 0, 50000000, 7 };
	const struct ipt_sim_model *m;
	struct ipt_sim_cpu *a, *b;
	unsigned int i, k;
	u8 *oa, *ob;
	u64 pa, pb;

	for (i = 0; i < ARRAY_SIZE(v); i++) {
		m = ipt_sim_model_by_name(v[i].model);
		KUNIT_ASSERT_NOT_NULL(test, m);
		a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
		b = kunit_kzalloc(test, sizeof(*b), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, a);
		KUNIT_ASSERT_NOT_NULL(test, b);
		ipt_sim_cpu_init(a, m);
		ipt_sim_cpu_init(b, m);
		b->bulk = kunit_kmalloc(test, IPT_SIM_BULK_CHUNK, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, b->bulk);
		oa = sim_mem(test, 3, &pa);
		ob = sim_mem(test, 3, &pb);
		a->tsc = 0x123456789ULL;
		b->tsc = a->tsc;
		sim_start(test, a, pa, SZ_32K - 1, CTL_RANGE | v[i].ctl);
		sim_start(test, b, pb, SZ_32K - 1, CTL_RANGE | v[i].ctl);
		for (k = 0; k < 2 * ARRAY_SIZE(budget); k++) {
			a->tsc += gap[k % ARRAY_SIZE(gap)];
			b->tsc = a->tsc;
			ipt_sim_run(a, budget[k % ARRAY_SIZE(budget)]);
			ipt_sim_run(b, budget[k % ARRAY_SIZE(budget)]);
			KUNIT_ASSERT_EQ_MSG(test, a->stats.bytes, b->stats.bytes,
					    "case %u, slice %u", i, k);
		}
		KUNIT_EXPECT_EQ_MSG(test, memcmp(oa, ob, SZ_32K), 0, "case %u", i);
		KUNIT_EXPECT_EQ_MSG(test, a->stats.csum, b->stats.csum, "case %u", i);
		KUNIT_EXPECT_EQ_MSG(test, a->stats.psb, b->stats.psb, "case %u", i);
		KUNIT_EXPECT_EQ_MSG(test, a->tsc, b->tsc, "case %u", i);
		KUNIT_EXPECT_EQ_MSG(test, a->output_mask, b->output_mask,
				    "case %u", i);
		KUNIT_EXPECT_GT_MSG(test, a->stats.psb, 10ULL, "case %u", i);
		KUNIT_EXPECT_EQ(test, a->stats.bulk, 0ULL);
		/* Most of it in bulk: all but the enable's and PSB+'s. */
		KUNIT_EXPECT_GT_MSG(test, b->stats.bulk,
				    b->stats.bytes / 10 * 9, "case %u", i);
	}
}

static struct kunit_case sim_trace_cases[] = {
	KUNIT_CASE(pkt_enable_psb),
	KUNIT_CASE(pkt_enable_no_psb),
	KUNIT_CASE(pkt_enable_no_packet_en),
	KUNIT_CASE(pkt_psb_interval),
	KUNIT_CASE(pkt_ovf),
	KUNIT_CASE(pkt_mtc_cyc),
	KUNIT_CASE(pkt_time_in_slice),
	KUNIT_CASE(pkt_time_idle_wake),
	KUNIT_CASE(pkt_time_feed),
	KUNIT_CASE(pkt_feed),
	KUNIT_CASE(pkt_feed_ctx_off),
	KUNIT_CASE(pkt_switch_programs),
	KUNIT_CASE(pkt_switch_untraced),
	KUNIT_CASE(pkt_cr3_filter_pti),
	KUNIT_CASE(pkt_bulk_same_bytes),
	{}
};

static struct kunit_suite sim_trace_suite = {
	.name = "ipt_sim_trace",
	.init = sim_test_init,
	.exit = sim_test_exit,
	.test_cases = sim_trace_cases,
};

kunit_test_suites(&sim_trace_suite);

// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the output engine (ipt_sim_output.c): ToPA regions,
 * END, STOP and INT, single-entry parts, single-range output, and every
 * operational error, byte-exact against a reference stream.
 */
#include <kunit/test.h>
#include <linux/bitfield.h>
#include <linux/bits.h>
#include <linux/kernel.h>
#include <linux/sizes.h>
#include <linux/string.h>

#include "ipt_sim_test.h"

/* ---- ToPA and single-range output ------------------------------------ */

/**
 * struct two_regions - a one-table ToPA ring of two output regions
 * @tpa: the table's address
 * @len: the bytes the unit wrote
 * @ref: the reference stream: what the regions must hold, in order
 * @r0: the first region, 4 KiB
 * @r1: the second
 */
struct two_regions {
	u64 tpa, len;
	u8 *ref, *r0, *r1;
};

/*
 * Unit @c, an "icl", started with CTL_TOPA on a ring of a 4 KiB region
 * and one of 4 KiB << @order1, and run for 6000 bytes of trace; *@tr says
 * where they went and what they must be.
 */
static void two_regions_6000(struct kunit *test, struct ipt_sim_cpu *c,
			     unsigned int order1, struct two_regions *tr)
{
	u64 pa0, pa1, *table;

	tr->len = sim_reference(test, "icl", CTL_TOPA, 6000, &tr->ref);
	table = (u64 *)sim_mem(test, 0, &tr->tpa);
	tr->r0 = sim_mem(test, 0, &pa0);
	tr->r1 = sim_mem(test, order1, &pa1);
	table[0] = topa_entry(pa0, 0, 0);
	table[1] = topa_entry(pa1, order1, 0);
	table[2] = topa_entry(tr->tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tr->tpa, 0x7f, CTL_TOPA);
	sim_produce(c, 6000);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, tr->len);
}

/* Region to region inside one table, byte-exact against the reference. */
static void topa_region_to_region(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	struct two_regions tr;

	two_regions_6000(test, c, 1, &tr);
	KUNIT_EXPECT_EQ(test, memcmp(tr.r0, tr.ref, SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(tr.r1, tr.ref + SZ_4K, tr.len - SZ_4K),
			0);
	KUNIT_EXPECT_EQ(test, c->output_base, tr.tpa);
	KUNIT_EXPECT_EQ(test, out_index(c), 1ULL);
	KUNIT_EXPECT_EQ(test, out_offset(c), tr.len - SZ_4K);
	KUNIT_EXPECT_EQ(test, c->status & RTIT_STATUS_ERROR, 0ULL);
}

/* END to a second table and back: a two-table ring. */
static void topa_end_next_table(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tapa, tbpa, pa0, pa1, len;
	u64 *ta, *tb;
	u8 *ref, *r0, *r1;

	len = sim_reference(test, "icl", CTL_TOPA, 10000, &ref);
	ta = (u64 *)sim_mem(test, 0, &tapa);
	tb = (u64 *)sim_mem(test, 0, &tbpa);
	r0 = sim_mem(test, 0, &pa0);
	r1 = sim_mem(test, 0, &pa1);
	ta[0] = topa_entry(pa0, 0, 0);
	ta[1] = topa_entry(tbpa, 0, IPT_TOPA_END);
	tb[0] = topa_entry(pa1, 0, 0);
	tb[1] = topa_entry(tapa, 0, IPT_TOPA_END);
	sim_start(test, c, tapa, 0x7f, CTL_TOPA);

	/* Exactly one region full: the END is followed at once. */
	sim_produce(c, SZ_4K);
	if (c->stats.bytes == SZ_4K) {
		KUNIT_EXPECT_EQ(test, c->output_base, tbpa);
		KUNIT_EXPECT_EQ(test, out_index(c), 0ULL);
	}
	sim_produce(c, 10000);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, len);
	KUNIT_EXPECT_EQ(test, c->output_base, tapa);
	KUNIT_EXPECT_EQ(test, out_index(c), 0ULL);
	KUNIT_EXPECT_EQ(test, out_offset(c), len - SZ_8K);
	KUNIT_EXPECT_EQ(test, memcmp(r0, ref + SZ_8K, len - SZ_8K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r0 + len - SZ_8K, ref + len - SZ_8K,
				     SZ_8K + SZ_4K - len), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r1, ref + SZ_4K, SZ_4K), 0);
}

/* One table whose END points at itself: a ring of two regions. */
static void topa_ring_wrap(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa0, pa1, len;
	u8 *ref, *r0, *r1;
	u64 *table;

	len = sim_reference(test, "icl", CTL_TOPA, 13000, &ref);
	table = (u64 *)sim_mem(test, 0, &tpa);
	r0 = sim_mem(test, 0, &pa0);
	r1 = sim_mem(test, 0, &pa1);
	table[0] = topa_entry(pa0, 0, 0);
	table[1] = topa_entry(pa1, 0, 0);
	table[2] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, 13000);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, len);
	KUNIT_EXPECT_EQ(test, c->output_base, tpa);
	KUNIT_EXPECT_EQ(test, out_index(c), 1ULL);
	KUNIT_EXPECT_EQ(test, out_offset(c), len - 3 * SZ_4K);
	KUNIT_EXPECT_EQ(test, memcmp(r0, ref + SZ_8K, SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r1, ref + 3 * SZ_4K, len - 3 * SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r1 + len - 3 * SZ_4K, ref + len - SZ_8K,
				     4 * SZ_4K - len), 0);
}

/* STOP: Stopped, TriggerEn clear, TraceEn still 1, offset = size. */
static void topa_stop(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa0, pa1, bytes;
	u8 *ref, *r0, *r1;
	u64 *table;

	sim_reference(test, "icl", CTL_TOPA, 5000, &ref);
	table = (u64 *)sim_mem(test, 0, &tpa);
	r0 = sim_mem(test, 0, &pa0);
	r1 = sim_mem(test, 0, &pa1);
	table[0] = topa_entry(pa0, 0, IPT_TOPA_STOP);
	table[1] = topa_entry(pa1, 0, 0);
	table[2] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, 5000);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, (u64)SZ_4K);
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_STOPPED);
	KUNIT_EXPECT_FALSE(test, c->status & RTIT_STATUS_TRIGGEREN);
	KUNIT_EXPECT_FALSE(test, c->status & RTIT_STATUS_ERROR);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->output_base, tpa);
	KUNIT_EXPECT_EQ(test, out_index(c), 0ULL);
	KUNIT_EXPECT_EQ(test, out_offset(c), (u64)SZ_4K);
	KUNIT_EXPECT_EQ(test, memcmp(r0, ref, SZ_4K), 0);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(r1, 0, SZ_4K));
	/* Disabling writes nothing more (no TIP.PGD after STOP). */
	bytes = c->stats.bytes;
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_TOPA & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, bytes);
	/* Re-enabling without clearing Stopped writes nothing either. */
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_TOPA);
	sim_produce(c, 6000);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, bytes);
	KUNIT_EXPECT_EQ(test, c->stats.op_errors, 0ULL);
}

/* INT: a PMI when the region fills, and output goes on. */
static void topa_int_pmi(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa0, pa1, v;
	u64 *table;

	table = (u64 *)sim_mem(test, 0, &tpa);
	sim_mem(test, 0, &pa0);
	sim_mem(test, 0, &pa1);
	table[0] = topa_entry(pa0, 0, 0);
	table[1] = topa_entry(pa1, 0, IPT_TOPA_INT);
	table[2] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, SZ_8K - 100);
	KUNIT_EXPECT_FALSE(test, c->pmi_pending);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 0ULL);
	sim_produce(c, SZ_8K + 100);
	KUNIT_EXPECT_TRUE(test, c->pmi_pending);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 1ULL);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_CORE_PERF_GLOBAL_STATUS, &v), 0);
	KUNIT_EXPECT_EQ(test, v, GLOBAL_STATUS_TRACE_TOPAPMI);
	KUNIT_EXPECT_GT(test, out_offset(c), 0ULL);
	KUNIT_EXPECT_EQ(test, out_index(c), 0ULL);
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_TRIGGEREN);
	/* The acknowledgment clears bit 55. */
	sim_expect_ok(test, c, MSR_CORE_PERF_GLOBAL_OVF_CTRL, GLOBAL_STATUS_TRACE_TOPAPMI);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_CORE_PERF_GLOBAL_STATUS, &v), 0);
	KUNIT_EXPECT_EQ(test, v, 0ULL);
}

/* Single-entry ToPA: early PMI, wrap through the self-pointing END. */
static void topa_single_entry(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "glm");
	u64 tpa, pa0, len;
	u8 *ref, *r0;
	u64 *table;

	len = sim_reference(test, "glm", CTL_TOPA, 5000, &ref);
	table = (u64 *)sim_mem(test, 0, &tpa);
	r0 = sim_mem(test, 0, &pa0);
	table[0] = topa_entry(pa0, 0, IPT_TOPA_INT);
	table[1] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, SZ_4K - IPT_SIM_SINGLE_PMI_EARLY - 1);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 0ULL);
	sim_produce(c, SZ_4K - IPT_SIM_SINGLE_PMI_EARLY + 40);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 1ULL);
	KUNIT_EXPECT_LT(test, c->stats.bytes, (u64)SZ_4K);
	sim_produce(c, 5000);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, len);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 1ULL);
	KUNIT_EXPECT_EQ(test, c->output_base, tpa);
	KUNIT_EXPECT_EQ(test, out_index(c), 0ULL);
	KUNIT_EXPECT_EQ(test, out_offset(c), len - SZ_4K);
	KUNIT_EXPECT_EQ(test, memcmp(r0, ref + SZ_4K, len - SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r0 + len - SZ_4K, ref + len - SZ_4K,
				     SZ_8K - len), 0);
	KUNIT_EXPECT_EQ(test, c->stats.op_errors, 0ULL);
}

static void topa_single_entry_stop(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "glm");
	u64 tpa, pa0;
	u64 *table;

	table = (u64 *)sim_mem(test, 0, &tpa);
	sim_mem(test, 0, &pa0);
	table[0] = topa_entry(pa0, 0, IPT_TOPA_INT | IPT_TOPA_STOP);
	table[1] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, 5000);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, (u64)SZ_4K);
	KUNIT_EXPECT_EQ(test, c->stats.pmis, 1ULL);
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_STOPPED);
	KUNIT_EXPECT_EQ(test, out_offset(c), (u64)SZ_4K);
}

/* Single-range output wraps at the end of the range. */
static void single_range_wrap(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "bdw-sro");
	u64 pa, len;
	u8 *ref, *r;

	len = sim_reference(test, "bdw-sro", CTL_RANGE, 5000, &ref);
	r = sim_mem(test, 0, &pa);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	sim_produce(c, 5000);
	KUNIT_ASSERT_EQ(test, c->stats.bytes, len);
	KUNIT_EXPECT_EQ(test, out_offset(c), len - SZ_4K);
	KUNIT_EXPECT_EQ(test, c->output_mask & 0xffffffff, (u64)SZ_4K - 1);
	KUNIT_EXPECT_EQ(test, memcmp(r, ref + SZ_4K, len - SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r + len - SZ_4K, ref + len - SZ_4K,
				     SZ_8K - len), 0);
}

/* PacketByteCnt counts the bytes since the last PSB. */
static void packet_byte_cnt(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa;

	sim_mem(test, 3, &pa);
	sim_start(test, c, pa, SZ_32K - 1, CTL_RANGE);
	KUNIT_EXPECT_EQ(test, FIELD_GET(RTIT_STATUS_BYTECNT, c->status), 31ULL);
	sim_produce(c, 1000);
	KUNIT_EXPECT_EQ(test, FIELD_GET(RTIT_STATUS_BYTECNT, c->status),
			c->stats.bytes);
}

/* An operational error: Error set, TriggerEn clear, nothing written. */
static void expect_op_error(struct kunit *test, struct ipt_sim_cpu *c)
{
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_ERROR);
	KUNIT_EXPECT_FALSE(test, c->status & RTIT_STATUS_TRIGGEREN);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->stats.op_errors, 1ULL);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 0ULL);
	sim_produce(c, 100);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, 0ULL);
}

/* A one-table ring with entry 0 = @e0; returns the table. */
static u64 *op_table(struct kunit *test, u64 *tpa, u64 *pa, unsigned int order)
{
	u64 *table = (u64 *)sim_mem(test, 0, tpa);

	sim_mem(test, order, pa);
	table[1] = topa_entry(*tpa, 0, IPT_TOPA_END);
	return table;
}

static void op_err_reserved_bit(struct kunit *test)
{
	static const unsigned int bits[] = { 1, 3, 5, 10, 11, 52, 60, 63 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bits); i++) {
		struct ipt_sim_cpu *c = sim_cpu(test, "icl");
		u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

		t[0] = topa_entry(pa, 0, BIT_ULL(bits[i]));
		sim_start(test, c, tpa, 0x7f, CTL_TOPA);
		expect_op_error(test, c);
	}
}

static void op_err_table_misaligned(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[16] = topa_entry(pa, 0, 0);
	t[17] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa + 0x80, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_region_misaligned(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 2);

	/* An 8 KiB region at a 4 KiB but not 8 KiB aligned address. */
	t[0] = topa_entry(pa + SZ_4K, 1, 0);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_beyond_maxphyaddr(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[0] = topa_entry(BIT_ULL(39), 0, 0);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_offset_too_big(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[0] = topa_entry(pa, 0, 0);
	sim_start(test, c, tpa, 0x7f | (u64)SZ_4K << 32, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_stop_on_end(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[0] = topa_entry(pa, 0, 0);
	t[1] |= IPT_TOPA_STOP;
	sim_start(test, c, tpa, 0x7f | 1 << 7, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_int_on_end(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[0] = topa_entry(pa, 0, 0);
	t[1] |= IPT_TOPA_INT;
	sim_start(test, c, tpa, 0x7f | 1 << 7, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_end_in_entry0(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa, *t = op_table(test, &tpa, &pa, 0);

	t[0] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_single_entry_shape(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "glm");
	u64 tpa, pa, pa2, *t = op_table(test, &tpa, &pa, 0);

	/* Two output entries on a single-entry part. */
	sim_mem(test, 0, &pa2);
	t[0] = topa_entry(pa, 0, 0);
	t[1] = topa_entry(pa2, 0, 0);
	t[2] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_single_entry_end_elsewhere(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "glm");
	u64 tpa, pa, t2pa, *t = op_table(test, &tpa, &pa, 0);

	sim_mem(test, 0, &t2pa);
	t[0] = topa_entry(pa, 0, 0);
	t[1] = topa_entry(t2pa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	expect_op_error(test, c);
}

static void op_err_forced(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa, bytes;

	sim_mem(test, 0, &pa);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	bytes = c->stats.bytes;
	ipt_sim_force_error(c);
	sim_produce(c, bytes + 100);
	KUNIT_EXPECT_EQ(test, c->stats.bytes, bytes);
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_ERROR);
	/* Sticky: only software clears it, with TraceEn = 0. */
	sim_expect_gp(test, c, MSR_IA32_RTIT_STATUS, 0);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_TRUE(test, c->status & RTIT_STATUS_ERROR);
	sim_expect_ok(test, c, MSR_IA32_RTIT_STATUS, 0);
	KUNIT_EXPECT_FALSE(test, c->status & RTIT_STATUS_ERROR);
}

/* ---- the internal buffer, fault injection, reset ---------------------- */

/*
 * Held bytes (struct ipt_sim_hold): OutputOffset counts them at once,
 * memory gets them only when TraceEn goes to 0 (SDM vol. 3C, 33.3.3
 * "Flushing Trace Output"); then every byte is where the reference says.
 */
static void hold_until_traceen_clear(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	struct two_regions tr;
	u64 in1;

	c->hold = kunit_kzalloc(test, sizeof(*c->hold), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c->hold);
	c->hold->limit = 3000;
	two_regions_6000(test, c, 0, &tr);
	in1 = tr.len - SZ_4K;
	KUNIT_ASSERT_LT(test, in1, 3000ULL);
	/* the position is past them; the last 3000 bytes are not in memory */
	KUNIT_EXPECT_EQ(test, out_index(c), 1ULL);
	KUNIT_EXPECT_EQ(test, out_offset(c), in1);
	KUNIT_EXPECT_EQ(test, c->hold->len, 3000u);
	KUNIT_EXPECT_EQ(test, memcmp(tr.r0, tr.ref, SZ_4K - (3000 - in1)), 0);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(tr.r0 + SZ_4K - (3000 - in1), 0,
					    3000 - in1));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(tr.r1, 0, in1));
	/* clearing TraceEn flushes them */
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_TOPA & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->hold->len, 0u);
	KUNIT_EXPECT_EQ(test, memcmp(tr.r0, tr.ref, SZ_4K), 0);
	KUNIT_EXPECT_EQ(test, memcmp(tr.r1, tr.ref + SZ_4K, in1), 0);
}

/* debugfs "gp_ctl": the next clear, or set, of TraceEn is #GP, once. */
static void gp_ctl_once(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 pa;

	sim_mem(test, 0, &pa);
	sim_start(test, c, pa, SZ_4K - 1, CTL_RANGE);
	c->gp_ctl = IPT_SIM_GP_CTL_CLEAR | IPT_SIM_GP_CTL_SET;
	/* (sim_expect_gp() wants no change at all: the fault is used up) */
	KUNIT_EXPECT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_CTL,
					    CTL_RANGE & ~RTIT_CTL_TRACEEN), -EIO);
	KUNIT_EXPECT_TRUE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->gp_ctl, IPT_SIM_GP_CTL_SET);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE & ~RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_CTL, CTL_RANGE),
			-EIO);
	KUNIT_EXPECT_FALSE(test, c->ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, c->gp_ctl, 0);
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_RANGE);
}

/*
 * A reset (debugfs "reset") keeps the lost-bytes count that
 * struct ipt_hw_ops.lost_bytes reports: it only ever grows.
 */
static void reset_keeps_lost(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 tpa, pa0, lost;
	u64 *table;

	table = (u64 *)sim_mem(test, 0, &tpa);
	sim_mem(test, 0, &pa0);
	table[0] = topa_entry(pa0, 0, IPT_TOPA_STOP);
	table[1] = topa_entry(tpa, 0, IPT_TOPA_END);
	sim_start(test, c, tpa, 0x7f, CTL_TOPA);
	sim_produce(c, SZ_4K);
	ipt_sim_run(c, 2000);
	KUNIT_ASSERT_LT(test, 0ULL, c->stats.stopped);
	/* (the disable's FUP and TIP.PGD are lost too) */
	sim_expect_ok(test, c, MSR_IA32_RTIT_CTL, CTL_TOPA & ~RTIT_CTL_TRACEEN);
	lost = c->stats.stopped;
	ipt_sim_cpu_init(c, c->model);
	KUNIT_EXPECT_EQ(test, c->lost_before + c->stats.stopped, lost);
}

static struct kunit_case sim_output_cases[] = {
	KUNIT_CASE(hold_until_traceen_clear),
	KUNIT_CASE(gp_ctl_once),
	KUNIT_CASE(reset_keeps_lost),
	KUNIT_CASE(topa_region_to_region),
	KUNIT_CASE(topa_end_next_table),
	KUNIT_CASE(topa_ring_wrap),
	KUNIT_CASE(topa_stop),
	KUNIT_CASE(topa_int_pmi),
	KUNIT_CASE(topa_single_entry),
	KUNIT_CASE(topa_single_entry_stop),
	KUNIT_CASE(single_range_wrap),
	KUNIT_CASE(packet_byte_cnt),
	KUNIT_CASE(op_err_reserved_bit),
	KUNIT_CASE(op_err_table_misaligned),
	KUNIT_CASE(op_err_region_misaligned),
	KUNIT_CASE(op_err_beyond_maxphyaddr),
	KUNIT_CASE(op_err_offset_too_big),
	KUNIT_CASE(op_err_stop_on_end),
	KUNIT_CASE(op_err_int_on_end),
	KUNIT_CASE(op_err_end_in_entry0),
	KUNIT_CASE(op_err_single_entry_shape),
	KUNIT_CASE(op_err_single_entry_end_elsewhere),
	KUNIT_CASE(op_err_forced),
	{}
};

static struct kunit_suite sim_output_suite = {
	.name = "ipt_sim_output",
	.init = sim_test_init,
	.exit = sim_test_exit,
	.test_cases = sim_output_cases,
};

kunit_test_suites(&sim_output_suite);

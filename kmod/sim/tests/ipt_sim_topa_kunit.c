// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of ipt.ko's ToPA buffers driven by the simulator's output
 * engine (ipt_sim_output.c): ipt_sim_topa: a buffer from
 * ipt_buffer_alloc() filled by the unit's output rules; the position
 * arithmetic and the wrap count (INT on the last region) match the bytes
 * the unit wrote, and STOP stops it full; a stream buffer (INT on every
 * region, STOP before the consumer's data) pauses the unit, which counts
 * what it could not write, and resumes it a region on with a PSB+; a
 * paced program (struct ipt_sim_cpu.pace) blocks short of STOP instead.
 */
#include <kunit/test.h>
#include <linux/highmem.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/numa.h>
#include <linux/sizes.h>

#include "../../ipt.h"
#include "../../ipt_session.h"
#include "ipt_sim_test.h"

struct topa_run {
	struct ipt_sim_cpu c;
	struct ipt_buffer *buf;
	u64 pmis;
};

/* Enable on a fresh icl unit with the buffer's first table. */
static void topa_start(struct kunit *test, struct topa_run *r)
{
	const struct ipt_sim_model *m = ipt_sim_model_by_name("icl");

	KUNIT_ASSERT_NOT_NULL(test, m);
	ipt_sim_cpu_init(&r->c, m);
	sim_start(test, &r->c, r->buf->table_phys[0], IPT_RTIT_MASK_LOW,
		  CTL_TOPA);
}

/*
 * Run in slices, counting PMIs as the handler would (one per slice max).
 * A slice writes about @slice bytes: four times the slices needed, plus
 * some, is plenty; a unit that stops writing fails the test instead of
 * hanging it.
 */
static void topa_produce(struct kunit *test, struct topa_run *r, u64 bytes,
			 u64 slice)
{
	u64 start = r->c.stats.bytes;
	u64 n = 0, cap = 4 * div64_u64(bytes + slice - 1, slice) + 16;

	while (r->c.stats.bytes - start < bytes &&
	       !(r->c.status & RTIT_STATUS_STOPPED)) {
		if (n++ == cap) {
			KUNIT_FAIL(test, "%llu of %llu bytes after %llu slices",
				   r->c.stats.bytes - start, bytes, cap);
			return;
		}
		ipt_sim_run(&r->c, slice);
		if (r->c.pmi_pending) {
			r->pmis++;
			r->c.pmi_pending = false;
		}
	}
}

static u64 topa_stop(struct kunit *test, struct topa_run *r)
{
	u64 base, mask, off;

	KUNIT_EXPECT_EQ(test, ipt_sim_wrmsr(&r->c, MSR_IA32_RTIT_CTL,
					    RTIT_CTL_TOPA), 0);
	if (r->c.pmi_pending) {
		r->pmis++;
		r->c.pmi_pending = false;
	}
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(&r->c, MSR_IA32_RTIT_OUTPUT_BASE,
					    &base), 0);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(&r->c, MSR_IA32_RTIT_OUTPUT_MASK,
					    &mask), 0);
	KUNIT_EXPECT_EQ(test, ipt_topa_offset(r->buf, base, mask, &off), 0);
	KUNIT_EXPECT_EQ(test, r->c.status & RTIT_STATUS_ERROR, 0ULL);
	return off;
}

static void topa_ring_counts_wraps(struct kunit *test)
{
	static const struct { u64 size; unsigned int shift; u64 bytes; } cases[] = {
		{ SZ_4K, 12, 3 * SZ_4K + 1000 },
		{ SZ_16K, 12, 3 * SZ_16K + 1000 },
		{ SZ_64K + SZ_4K, 27, 3 * (SZ_64K + SZ_4K) },
		/* Two tables: through both END links once. */
		{ 512 * SZ_4K, 12, 512 * SZ_4K + SZ_8K },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct topa_run *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
		u64 head, total;

		KUNIT_ASSERT_NOT_NULL(test, r);
		r->buf = ipt_buffer_alloc(cases[i].size, cases[i].shift, false,
					  false, NUMA_NO_NODE, NULL);
		KUNIT_ASSERT_FALSE(test, IS_ERR(r->buf));
		topa_start(test, r);
		/* Slices below the size: one wrap per PMI at most. */
		topa_produce(test, r, cases[i].bytes,
			     min_t(u64, cases[i].size / 2, SZ_4K));
		head = topa_stop(test, r);
		if (head == r->buf->size)
			head = 0;
		total = r->c.stats.bytes;
		KUNIT_EXPECT_EQ_MSG(test, r->pmis * r->buf->size + head, total,
				    "size %llu", cases[i].size);
		KUNIT_EXPECT_EQ(test, r->pmis, total / r->buf->size);
		ipt_buffer_free(r->buf);
	}
}

static void topa_stop_on_full(struct kunit *test)
{
	struct topa_run *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	u64 head;

	KUNIT_ASSERT_NOT_NULL(test, r);
	r->buf = ipt_buffer_alloc(SZ_64K, 12, true, true, NUMA_NO_NODE, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(r->buf));
	topa_start(test, r);
	topa_produce(test, r, 2 * r->buf->size, 4096);
	KUNIT_EXPECT_NE(test, r->c.status & RTIT_STATUS_STOPPED, 0ULL);
	head = topa_stop(test, r);
	KUNIT_EXPECT_EQ(test, head, r->buf->size);
	KUNIT_EXPECT_EQ(test, r->c.stats.bytes, r->buf->size);
	KUNIT_EXPECT_EQ(test, r->pmis, 1ULL);
	ipt_buffer_free(r->buf);
}

/* The unit's checksum (stats.csum) of buffer bytes [@from, @to). */
static u64 topa_csum(const struct ipt_buffer *buf, u64 from, u64 to,
		     u64 index)
{
	u64 sum = 0, off;

	for (off = from; off < to; off++, index++) {
		u64 o = off % buf->size;
		u8 *p = kmap_local_page(ipt_buffer_page(buf, o));

		sum += p[offset_in_page(o)] * IPT_SIM_CSUM_WEIGHT(index);
		kunmap_local(p);
	}
	return sum;
}

/*
 * A stream of 8 regions: the unit raises a PMI at each region end, stops
 * at STOP with the buffer full (SDM vol. 3C, 33.2.7.2: Stopped set,
 * TriggerEn clear, TraceEn still 1, offset = region size) and, while
 * Stopped, writes nothing and counts what the program would have traced;
 * with STOP moved two regions on, Stopped and PacketByteCnt cleared and
 * the output pointed at the next region, it writes exactly those two
 * regions, starting with PSB+ (enable with PacketByteCnt 0).
 */
static void topa_stream_stop_and_resume(struct kunit *test)
{
	struct topa_run *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	u64 head, rs, bytes, base, mask, sum;
	u8 *p;

	KUNIT_ASSERT_NOT_NULL(test, r);
	r->buf = ipt_buffer_alloc(SZ_64K, 12, false, false, NUMA_NO_NODE, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(r->buf));
	KUNIT_ASSERT_EQ(test, ipt_buffer_set_regions(r->buf, 8), 0);
	rs = r->buf->region_size;
	topa_start(test, r);
	topa_produce(test, r, 2 * r->buf->size, 1024);
	KUNIT_EXPECT_NE(test, r->c.status & RTIT_STATUS_STOPPED, 0ULL);
	KUNIT_EXPECT_EQ(test, r->c.stats.bytes, r->buf->size);
	KUNIT_EXPECT_EQ(test, r->pmis, 8ULL);
	sum = topa_csum(r->buf, 0, r->buf->size, 0);
	KUNIT_EXPECT_EQ(test, r->c.stats.csum, sum);
	/* Stopped: the program runs on, nothing is written, all counted. */
	bytes = r->c.stats.stopped;
	ipt_sim_run(&r->c, 5000);
	KUNIT_EXPECT_GE(test, r->c.stats.stopped - bytes, 5000ULL);
	KUNIT_EXPECT_EQ(test, r->c.stats.bytes, r->buf->size);
	KUNIT_EXPECT_FALSE(test, r->c.pmi_pending);
	head = topa_stop(test, r);
	KUNIT_EXPECT_EQ(test, head, r->buf->size);
	KUNIT_EXPECT_EQ(test, ipt_stream_position(r->buf->size, rs, 0, head,
						  true), r->buf->size);
	bytes = r->c.stats.stopped;
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(&r->c, MSR_IA32_RTIT_OUTPUT_MASK,
					    &mask), 0);
	KUNIT_EXPECT_EQ(test, mask >> 32, (u64)SZ_4K);

	/* Two regions released: STOP at the end of region 1, resume at 0. */
	ipt_topa_move_stop(r->buf, ipt_stream_stop_region(r->buf, 2 * rs));
	KUNIT_EXPECT_EQ(test, r->buf->stop_region, 1u);
	ipt_topa_pos(r->buf, r->buf->size, &base, &mask);
	sim_start(test, &r->c, base, mask, CTL_TOPA);
	topa_produce(test, r, 4 * rs, 1024);
	KUNIT_EXPECT_NE(test, r->c.status & RTIT_STATUS_STOPPED, 0ULL);
	KUNIT_EXPECT_EQ(test, r->c.stats.bytes, r->buf->size + 2 * rs);
	KUNIT_EXPECT_EQ(test, r->pmis, 10ULL);
	/*
	 * Lost only from STOP on: in the last slice, whose rest the program
	 * ran Stopped (the group in flight included), never before.
	 */
	KUNIT_EXPECT_GT(test, r->c.stats.stopped, bytes);
	KUNIT_EXPECT_LE(test, r->c.stats.stopped - bytes,
			1024ULL + IPT_SIM_PKT_MAX);
	KUNIT_EXPECT_LE(test, r->c.stats.bytes + r->c.stats.stopped -
			(r->buf->size + bytes), 4 * rs + IPT_SIM_PKT_MAX);
	KUNIT_EXPECT_EQ(test, r->c.stats.csum,
			sum + topa_csum(r->buf, 0, 2 * rs, r->buf->size));
	p = kmap_local_page(ipt_buffer_page(r->buf, 0));
	KUNIT_EXPECT_EQ(test, p[0], 0x02);
	KUNIT_EXPECT_EQ(test, p[1], 0x82);
	kunmap_local(p);
	head = topa_stop(test, r);
	KUNIT_EXPECT_EQ(test, ipt_stream_position(r->buf->size, rs, 2 * rs,
						  head, true),
			r->buf->size + 2 * rs);
	ipt_buffer_free(r->buf);
}

/* Run @slices slices of @slice bytes, counting PMIs. */
static void topa_slices(struct topa_run *r, unsigned int slices, u64 slice)
{
	while (slices--) {
		ipt_sim_run(&r->c, slice);
		if (r->c.pmi_pending) {
			r->pmis++;
			r->c.pmi_pending = false;
		}
	}
}

/*
 * A paced program on a stream of 8 regions: it writes up to STOP's
 * doorstep and blocks there, never Stopped, nothing lost (stats.stopped
 * 0, stats.paced counting the blocked slices), whatever the number of
 * slices; the last group it wrote left more than IPT_SIM_PACE_RESERVE
 * bytes of room, and the room left is at most a group's bound and the
 * reserve, else it would have run on.  A disable's packets
 * fit in what is left.  With STOP moved two regions on it writes up to
 * the new STOP's doorstep, again without stopping.  Unpaced, the same
 * unit runs into STOP at once.
 */
static void topa_stream_paced(struct kunit *test)
{
	struct topa_run *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	const u64 group = IPT_SIM_TIME_MAX + 3 * IPT_SIM_PKT_MAX + 1;
	u64 rs, head, base, mask, sum, paced;

	KUNIT_ASSERT_NOT_NULL(test, r);
	r->buf = ipt_buffer_alloc(SZ_64K, 12, false, false, NUMA_NO_NODE, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(r->buf));
	KUNIT_ASSERT_EQ(test, ipt_buffer_set_regions(r->buf, 8), 0);
	rs = r->buf->region_size;
	r->c.pace = true;
	topa_start(test, r);
	KUNIT_EXPECT_TRUE(test, r->c.pace);
	/* Three buffers' worth of slices: most of them block. */
	topa_slices(r, 3 * SZ_64K / 1024, 1024);
	KUNIT_EXPECT_EQ(test, r->c.status & RTIT_STATUS_STOPPED, 0ULL);
	KUNIT_EXPECT_EQ(test, r->c.stats.stopped, 0ULL);
	KUNIT_EXPECT_GT(test, r->c.stats.paced, 0ULL);
	KUNIT_EXPECT_GE(test, r->c.stats.bytes,
			r->buf->size - group - IPT_SIM_PACE_RESERVE);
	KUNIT_EXPECT_LT(test, r->c.stats.bytes,
			r->buf->size - IPT_SIM_PACE_RESERVE);
	KUNIT_EXPECT_EQ(test, ipt_sim_room_before_stop(&r->c, U64_MAX),
			r->buf->size - r->c.stats.bytes);
	KUNIT_EXPECT_EQ(test, r->pmis, 7ULL);
	/* Blocked: more slices write nothing and count. */
	paced = r->c.stats.paced;
	sum = r->c.stats.bytes;
	topa_slices(r, 10, 1024);
	KUNIT_EXPECT_EQ(test, r->c.stats.paced, paced + 10);
	KUNIT_EXPECT_EQ(test, r->c.stats.bytes, sum);
	head = topa_stop(test, r);
	KUNIT_EXPECT_EQ(test, r->c.status & RTIT_STATUS_STOPPED, 0ULL);
	KUNIT_EXPECT_EQ(test, r->c.stats.stopped, 0ULL);
	KUNIT_EXPECT_EQ(test, head, r->c.stats.bytes);
	sum = topa_csum(r->buf, 0, head, 0);
	KUNIT_EXPECT_EQ(test, r->c.stats.csum, sum);

	/* Two regions released: it goes on to the new STOP's doorstep. */
	ipt_topa_move_stop(r->buf, ipt_stream_stop_region(r->buf, 2 * rs));
	ipt_topa_pos(r->buf, head, &base, &mask);
	sim_start(test, &r->c, base, mask, CTL_TOPA);
	topa_slices(r, 3 * SZ_64K / 1024, 1024);
	KUNIT_EXPECT_EQ(test, r->c.status & RTIT_STATUS_STOPPED, 0ULL);
	KUNIT_EXPECT_EQ(test, r->c.stats.stopped, 0ULL);
	KUNIT_EXPECT_GE(test, r->c.stats.bytes,
			r->buf->size + 2 * rs - group - IPT_SIM_PACE_RESERVE);
	KUNIT_EXPECT_LT(test, r->c.stats.bytes,
			r->buf->size + 2 * rs - IPT_SIM_PACE_RESERVE);
	KUNIT_EXPECT_EQ(test, r->pmis, 9ULL);
	KUNIT_EXPECT_EQ(test, r->c.stats.csum,
			sum + topa_csum(r->buf, head,
					r->c.stats.bytes, head));

	/* Unpaced, the program runs on into STOP and its trace is lost. */
	r->c.pace = false;
	topa_slices(r, 4, 1024);
	KUNIT_EXPECT_NE(test, r->c.status & RTIT_STATUS_STOPPED, 0ULL);
	KUNIT_EXPECT_GT(test, r->c.stats.stopped, 0ULL);
	KUNIT_EXPECT_EQ(test, r->c.stats.bytes, r->buf->size + 2 * rs);
	topa_stop(test, r);
	ipt_buffer_free(r->buf);
}

static struct kunit_case topa_cases[] = {
	KUNIT_CASE(topa_ring_counts_wraps),
	KUNIT_CASE(topa_stop_on_full),
	KUNIT_CASE(topa_stream_stop_and_resume),
	KUNIT_CASE(topa_stream_paced),
	{}
};

static struct kunit_suite topa_suite = {
	.name = "ipt_sim_topa",
	.test_cases = topa_cases,
};

kunit_test_suites(&topa_suite);

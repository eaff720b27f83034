// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for ipt_pos.c: a trace's state (head, oldest byte, bytes
 * captured / valid / lost, wraps, WRAPPED, FULL) from OUTPUT_BASE,
 * OUTPUT_MASK_PTRS, STATUS, the wrap count and the single-entry sample,
 * for rings, stop-on-full buffers, single-entry ToPA and chains of
 * several tables.
 *
 * The buffers are fake: made-up physical addresses, nothing runs them.
 */
#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/sizes.h>

#include "../ipt.h"
#include "ipt_test.h"

/* The position of chunk @c's byte @off (@off up to the chunk's size). */
static struct ipt_trace_pos at(unsigned int c, u64 off, u64 wraps)
{
	return (struct ipt_trace_pos){
		.base = IPT_TEST_TABLE(c / IPT_TOPA_OUTPUTS),
		.mask = IPT_RTIT_MASK_LOW | (u64)(c % IPT_TOPA_OUTPUTS) << 7 |
			off << 32,
		.wraps = wraps,
	};
}

static struct ipt_trace_state fill(const struct ipt_buffer *buf, bool single,
				   const struct ipt_trace_pos *pos)
{
	struct ipt_trace_state ts = {};

	ipt_pos_fill(buf, single, pos, &ts);
	return ts;
}

/* A ring not yet wrapped: everything from 0 to the head is valid. */
static void pos_ring_first_lap(struct kunit *test)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 3, 0, false);
	struct ipt_trace_pos pos = at(1, 0x100, 0);
	struct ipt_trace_state ts = fill(buf, false, &pos);

	KUNIT_EXPECT_EQ(test, ts.buffer_size, (u64)SZ_4K + SZ_8K + SZ_16K);
	KUNIT_EXPECT_EQ(test, ts.nr_chunks, 3u);
	KUNIT_EXPECT_EQ(test, ts.nr_tables, 1u);
	KUNIT_EXPECT_EQ(test, ts.head, (u64)SZ_4K + 0x100);
	KUNIT_EXPECT_EQ(test, ts.oldest, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, (u64)SZ_4K + 0x100);
	KUNIT_EXPECT_EQ(test, ts.bytes_valid, (u64)SZ_4K + 0x100);
	KUNIT_EXPECT_EQ(test, ts.bytes_lost, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.status, 0ULL);

	/* Nothing written yet. */
	pos = at(0, 0, 0);
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.head, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_valid, 0ULL);
}

/* Wrapped rings: the whole buffer valid, the oldest byte at the head. */
static void pos_ring_wrapped(struct kunit *test)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 3, 0, false);
	u64 size = buf->size;
	struct ipt_trace_pos pos = at(2, 0x10, 1);
	struct ipt_trace_state ts = fill(buf, false, &pos);

	KUNIT_EXPECT_EQ(test, ts.head, (u64)SZ_4K + SZ_8K + 0x10);
	KUNIT_EXPECT_EQ(test, ts.oldest, ts.head);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 1ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, size + ts.head);
	KUNIT_EXPECT_EQ(test, ts.bytes_valid, size);
	KUNIT_EXPECT_EQ(test, ts.bytes_lost, ts.head);
	KUNIT_EXPECT_EQ(test, ts.status, IPT_TS_WRAPPED);

	/* Many laps: every earlier one is lost. */
	pos = at(0, 0x20, 1000);
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 1000ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, 1000 * size + 0x20);
	KUNIT_EXPECT_EQ(test, ts.bytes_lost, 999 * size + 0x20);
	KUNIT_EXPECT_EQ(test, ts.bytes_valid, size);
	KUNIT_EXPECT_EQ(test, ts.oldest, 0x20ULL);
}

/*
 * A ring filled exactly: the position at the very end is the start of
 * the next lap, whose PMI is counted already.
 */
static void pos_ring_exact_fill(struct kunit *test)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 3, 0, false);
	u64 size = buf->size;
	struct ipt_trace_pos pos = at(2, SZ_16K, 1);
	struct ipt_trace_state ts = fill(buf, false, &pos);

	KUNIT_EXPECT_EQ(test, ts.head, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.oldest, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 1ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, size);
	KUNIT_EXPECT_EQ(test, ts.bytes_valid, size);
	KUNIT_EXPECT_EQ(test, ts.bytes_lost, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.status, IPT_TS_WRAPPED);

	/* The same position as the table's END entry. */
	pos = at(3, 0, 1);
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.head, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, size);

	/* One byte short of the end: still the first lap. */
	pos = at(2, SZ_16K - 1, 0);
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.head, size - 1);
	KUNIT_EXPECT_EQ(test, ts.bytes_valid, size - 1);
	KUNIT_EXPECT_EQ(test, ts.status, 0ULL);
}

/* Stop-on-full: the head is the byte count; Stopped or a PMI: FULL. */
static void pos_stop_on_full(struct kunit *test)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 3, 0, true);
	u64 size = buf->size;
	struct ipt_trace_pos pos = at(1, 0x40, 0);
	struct ipt_trace_state ts = fill(buf, false, &pos);

	KUNIT_EXPECT_EQ(test, ts.head, (u64)SZ_4K + 0x40);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, ts.head);
	KUNIT_EXPECT_EQ(test, ts.bytes_valid, ts.head);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.status, IPT_TS_STOP_ON_FULL);

	/* Full, as STATUS.Stopped says: the head stays at the end. */
	pos = at(2, SZ_16K, 0);
	pos.status = RTIT_STATUS_STOPPED;
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.head, size);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, size);
	KUNIT_EXPECT_EQ(test, ts.bytes_valid, size);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_lost, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.status,
			(IPT_TS_STOP_ON_FULL | IPT_TS_FULL));

	/* Full, as the PMI says, Stopped not (yet) seen. */
	pos.status = 0;
	pos.wraps = 1;
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.status,
			(IPT_TS_STOP_ON_FULL | IPT_TS_FULL));
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 0ULL);

	/* Exactly full without either: not reported FULL. */
	pos.wraps = 0;
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.head, size);
	KUNIT_EXPECT_EQ(test, ts.status, IPT_TS_STOP_ON_FULL);
}

/* STATUS.Stopped means nothing to a ring; Error, running and late do. */
static void pos_status_bits(struct kunit *test)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 3, 0, false);
	struct ipt_trace_pos pos = at(0, 0x8, 0);
	struct ipt_trace_state ts;

	pos.status = RTIT_STATUS_STOPPED;
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.status, 0ULL);

	pos.status = RTIT_STATUS_ERROR;
	pos.running = true;
	pos.pmi_late = true;
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.status,
			(IPT_TS_ERROR | IPT_TS_RUNNING | IPT_TS_PMI_LATE));
	KUNIT_EXPECT_EQ(test, ts.head, 0x8ULL);

	/* Only or-ed in: what the caller set stays. */
	ts = (struct ipt_trace_state){ .status = IPT_TS_THREAD, .state = 3,
				       .mmap_offset = 0x5000, .parent = 7 };
	ipt_pos_fill(buf, false, &pos, &ts);
	KUNIT_EXPECT_EQ(test, ts.status,
			(IPT_TS_THREAD | IPT_TS_ERROR | IPT_TS_RUNNING |
			      IPT_TS_PMI_LATE));
	KUNIT_EXPECT_EQ(test, ts.state, 3U);
	KUNIT_EXPECT_EQ(test, ts.mmap_offset, 0x5000ULL);
	KUNIT_EXPECT_EQ(test, ts.parent, 7U);
}

/* A position outside the buffer (the unit was reset under us): 0. */
static void pos_not_ours(struct kunit *test)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 3, 0, false);
	struct ipt_trace_pos pos = at(1, 0x100, 2);
	struct ipt_trace_state ts;

	pos.base = IPT_TEST_TABLE(5);
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.head, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 2ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, 2 * buf->size);

	pos = at(0, SZ_4K + 1, 0);
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.head, 0ULL);
}

/*
 * Single-entry ToPA ring: the PMI comes shortly before the region is
 * full.  Handled before the wrap (sample near the end) and the unit not
 * past the sample since: that wrap has not happened yet.
 */
static void pos_single_entry(struct kunit *test)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 1, SZ_64K, false);
	struct ipt_trace_pos pos = at(0, SZ_64K - 0x100, 1);
	struct ipt_trace_state ts;

	KUNIT_ASSERT_EQ(test, buf->size, (u64)SZ_64K);
	/* Handled before the wrap, the unit still before it: not wrapped. */
	pos.sample = SZ_64K - 0x200;
	ts = fill(buf, true, &pos);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.head, (u64)SZ_64K - 0x100);
	KUNIT_EXPECT_EQ(test, ts.bytes_valid, (u64)SZ_64K - 0x100);
	KUNIT_EXPECT_EQ(test, ts.status, 0ULL);

	/* Head exactly at the sample: still not wrapped. */
	pos = at(0, SZ_64K - 0x200, 1);
	pos.sample = SZ_64K - 0x200;
	ts = fill(buf, true, &pos);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 0ULL);

	/* The unit wrapped since: the head is before the sample. */
	pos = at(0, 0x300, 1);
	pos.sample = SZ_64K - 0x200;
	ts = fill(buf, true, &pos);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 1ULL);
	KUNIT_EXPECT_EQ(test, ts.oldest, 0x300ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, (u64)SZ_64K + 0x300);
	KUNIT_EXPECT_EQ(test, ts.status, IPT_TS_WRAPPED);

	/* Handled after the wrap (sample early in the region): counted. */
	pos = at(0, 0x8000, 1);
	pos.sample = 0x40;
	ts = fill(buf, true, &pos);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 1ULL);

	/* Of two PMIs only the last one can be early. */
	pos = at(0, SZ_64K - 0x100, 2);
	pos.sample = SZ_64K - 0x200;
	ts = fill(buf, true, &pos);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 1ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, 2ULL * SZ_64K - 0x100);

	/* Multi-entry ToPA ignores the sample. */
	pos = at(0, SZ_64K - 0x100, 1);
	pos.sample = SZ_64K - 0x200;
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 1ULL);

	/* So does a single-entry stop-on-full buffer: its PMI means full. */
	buf = ipt_test_fake_buffer(test, 1, SZ_64K, true);
	ts = fill(buf, true, &pos);
	KUNIT_EXPECT_EQ(test, ts.status,
			(IPT_TS_STOP_ON_FULL | IPT_TS_FULL));
}

/* Chains of several tables: positions in later tables and at END entries. */
static void pos_multi_table(struct kunit *test)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 1200, 0, false);
	u64 size = buf->size;
	struct ipt_trace_pos pos = at(1100, 0x10, 0);
	struct ipt_trace_state ts = fill(buf, false, &pos);

	KUNIT_EXPECT_EQ(test, ts.nr_tables, 3u);
	KUNIT_EXPECT_EQ(test, ts.nr_chunks, 1200u);
	KUNIT_EXPECT_EQ(test, ts.head, buf->chunks[1100].offset + 0x10);
	KUNIT_EXPECT_EQ(test, ts.bytes_valid, ts.head);

	/* Table 0's END entry: the first byte of table 1's first chunk. */
	pos = (struct ipt_trace_pos){
		.base = IPT_TEST_TABLE(0),
		.mask = IPT_RTIT_MASK_LOW | (u64)IPT_TOPA_OUTPUTS << 7,
		.wraps = 3,
	};
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.head, buf->chunks[IPT_TOPA_OUTPUTS].offset);
	KUNIT_EXPECT_EQ(test, ts.wrap_count, 3ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, 3 * size + ts.head);

	/* The last table's END entry: the end of the buffer, a new lap. */
	pos = at(1200, 0, 1);
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.head, 0ULL);
	KUNIT_EXPECT_EQ(test, ts.bytes_captured, size);

	/* Stop-on-full across tables: full at the end. */
	buf = ipt_test_fake_buffer(test, 1200, 0, true);
	pos = at(1199, BIT_ULL(buf->chunks[1199].shift), 0);
	pos.status = RTIT_STATUS_STOPPED;
	ts = fill(buf, false, &pos);
	KUNIT_EXPECT_EQ(test, ts.head, size);
	KUNIT_EXPECT_EQ(test, ts.bytes_valid, size);
	KUNIT_EXPECT_EQ(test, ts.status,
			(IPT_TS_STOP_ON_FULL | IPT_TS_FULL));
}

static struct kunit_case pos_cases[] = {
	KUNIT_CASE(pos_ring_first_lap),
	KUNIT_CASE(pos_ring_wrapped),
	KUNIT_CASE(pos_ring_exact_fill),
	KUNIT_CASE(pos_stop_on_full),
	KUNIT_CASE(pos_status_bits),
	KUNIT_CASE(pos_not_ours),
	KUNIT_CASE(pos_single_entry),
	KUNIT_CASE(pos_multi_table),
	{}
};

static struct kunit_suite pos_suite = {
	.name = "ipt_pos",
	.test_cases = pos_cases,
};

kunit_test_suites(&pos_suite);

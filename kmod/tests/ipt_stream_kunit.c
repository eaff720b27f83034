// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the streaming arithmetic: the configuration's streaming
 * fields (ipt_stream_check()), regions on ToPA entries
 * (ipt_buffer_set_regions()), where INT and STOP go and how STOP moves
 * (ipt_topa_build(), ipt_topa_move_stop(), ipt_stream_stop_region()),
 * the output registers of an offset (ipt_topa_pos(), the inverse of
 * ipt_topa_offset()) and the stream position of an output offset
 * (ipt_stream_position()).  Fake buffers: nothing runs them.
 */
#include <kunit/test.h>
#include <linux/bitfield.h>
#include <linux/sizes.h>

#include "../ipt.h"
#include "../ipt_session.h"
#include "ipt_test.h"

static void stream_check_fields(struct kunit *test)
{
	struct ipt_config c = {
		.size = sizeof(c), .mode = IPT_MODE_CPU,
		.buffer_size = SZ_64K, .buffer_flags = IPT_BUFFER_STREAM,
	};
	unsigned int nr = 99;

	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), 0);
	KUNIT_EXPECT_EQ(test, nr, (unsigned int)IPT_STREAM_DEF_REGIONS);
	c.nr_regions = 16;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), 0);
	KUNIT_EXPECT_EQ(test, nr, 16u);
	c.nr_regions = 32;	/* 2 KiB regions */
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), -EINVAL);
	c.nr_regions = 6;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), -EINVAL);
	c.nr_regions = 1;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), -EINVAL);
	c.nr_regions = 128;
	c.buffer_size = SZ_1M;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), -EINVAL);
	c.nr_regions = 64;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), 0);
	c.buffer_flags |= IPT_BUFFER_STOP_ON_FULL;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), -EINVAL);
	/* 16 KiB regions: exact 16 KiB chunks fit, 32 KiB do not */
	c.buffer_flags = IPT_BUFFER_STREAM | IPT_BUFFER_EXACT_CHUNKS;
	c.chunk_order = 14;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), 0);
	c.chunk_order = 15;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), -EINVAL);
	/* regions of 12 KiB: 4 KiB chunks at most */
	c.buffer_size = 8 * 3 * SZ_4K;
	c.nr_regions = 8;
	c.chunk_order = 12;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), 0);
	c.chunk_order = 13;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), -EINVAL);
	/* nr_regions alone, and a stream per thread */
	c.buffer_flags = 0;
	c.chunk_order = 0;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), -EINVAL);
	c.nr_regions = 0;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), 0);
	KUNIT_EXPECT_EQ(test, nr, 0u);
	c.mode = IPT_MODE_THREAD;
	c.buffer_flags = IPT_BUFFER_STREAM;
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), -EOPNOTSUPP);
}

/* The entry of chunk @c of a fake buffer. */
static u64 entry(const struct ipt_buffer *buf, unsigned int c)
{
	return buf->tables[c / IPT_TOPA_OUTPUTS][c % IPT_TOPA_OUTPUTS];
}

/* INT on every region end and nowhere else; STOP on @stop's end only. */
static void check_markers(struct kunit *test, const struct ipt_buffer *buf,
			  unsigned int stop)
{
	unsigned int c, r = 0;

	for (c = 0; c < buf->nr_chunks; c++) {
		bool end = r < buf->nr_regions && buf->region_last[r] == c;

		KUNIT_EXPECT_EQ_MSG(test, !!(entry(buf, c) & IPT_TOPA_INT), end,
				    "chunk %u", c);
		KUNIT_EXPECT_EQ_MSG(test, !!(entry(buf, c) & IPT_TOPA_STOP),
				    end && r == stop, "chunk %u", c);
		if (end)
			r++;
	}
	KUNIT_EXPECT_EQ(test, r, buf->nr_regions);
	KUNIT_EXPECT_EQ(test, buf->stop_region, stop);
}

static void stream_regions(struct kunit *test)
{
	/* 1200 chunks of 4, 8, 16 KiB in turn: 28 KiB every three. */
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 1200, 0, false);
	struct ipt_buffer *one = ipt_test_fake_buffer(test, 1024, SZ_4K, false);
	unsigned int r;

	/* 400 * 28 KiB: 8 regions of 50 triples end on chunk boundaries */
	KUNIT_ASSERT_EQ(test, ipt_buffer_set_regions(buf, 8), 0);
	KUNIT_EXPECT_EQ(test, buf->region_size, buf->size / 8);
	for (r = 0; r < 8; r++)
		KUNIT_EXPECT_EQ(test, buf->region_last[r], 150 * r + 149);
	check_markers(test, buf, 7);
	/* 64 regions do not: a region would end inside a chunk */
	buf = ipt_test_fake_buffer(test, 1200, 0, false);
	KUNIT_EXPECT_EQ(test, ipt_buffer_set_regions(buf, 64), -EINVAL);
	KUNIT_EXPECT_EQ(test, buf->nr_regions, 0u);
	KUNIT_EXPECT_EQ(test, ipt_buffer_set_regions(buf, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, ipt_buffer_set_regions(buf, 65), -EINVAL);

	/* 4 KiB chunks over 3 tables, 64 regions of 16 pages */
	KUNIT_ASSERT_EQ(test, ipt_buffer_set_regions(one, 64), 0);
	check_markers(test, one, 63);
	ipt_topa_move_stop(one, 5);
	check_markers(test, one, 5);
	ipt_topa_move_stop(one, 63);
	check_markers(test, one, 63);
	/* The END links are untouched by the markers. */
	KUNIT_EXPECT_TRUE(test, one->tables[0][IPT_TOPA_OUTPUTS] & IPT_TOPA_END);
	KUNIT_EXPECT_FALSE(test, one->tables[0][IPT_TOPA_OUTPUTS] &
			   (IPT_TOPA_INT | IPT_TOPA_STOP));
}

static void stream_stop_region(struct kunit *test)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 1024, SZ_4K, false);
	u64 rs;

	KUNIT_ASSERT_EQ(test, ipt_buffer_set_regions(buf, 8), 0);
	rs = buf->region_size;
	/* nothing released: the unit may fill the whole buffer */
	KUNIT_EXPECT_EQ(test, ipt_stream_stop_region(buf, 0), 7u);
	KUNIT_EXPECT_EQ(test, ipt_stream_stop_region(buf, rs - 1), 7u);
	KUNIT_EXPECT_EQ(test, ipt_stream_stop_region(buf, rs), 0u);
	KUNIT_EXPECT_EQ(test, ipt_stream_stop_region(buf, 5 * rs + 7), 4u);
	/* a lap later, the same regions */
	KUNIT_EXPECT_EQ(test, ipt_stream_stop_region(buf, 8 * rs), 7u);
	KUNIT_EXPECT_EQ(test, ipt_stream_stop_region(buf, 17 * rs), 0u);
}

/* ipt_topa_pos() puts every offset back where ipt_topa_offset() reads it. */
static void stream_topa_pos(struct kunit *test)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 1200, 0, false);
	u64 offs[] = { 0, 1, SZ_4K, SZ_4K + 5, 511 * 3 * SZ_4K, buf->size - 1 };
	u64 base, mask, off;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		ipt_topa_pos(buf, offs[i], &base, &mask);
		KUNIT_EXPECT_EQ(test, mask & IPT_RTIT_MASK_LOW, IPT_RTIT_MASK_LOW);
		KUNIT_ASSERT_EQ(test, ipt_topa_offset(buf, base, mask, &off), 0);
		KUNIT_EXPECT_EQ(test, off, offs[i]);
	}
	/* the buffer's end is its start */
	ipt_topa_pos(buf, buf->size, &base, &mask);
	KUNIT_EXPECT_EQ(test, base, IPT_TEST_TABLE(0));
	KUNIT_EXPECT_EQ(test, mask, IPT_RTIT_MASK_LOW);
}

static void stream_position(struct kunit *test)
{
	const u64 size = SZ_64K, rs = SZ_8K;

	/* nothing written, nothing released */
	KUNIT_EXPECT_EQ(test, ipt_stream_position(size, rs, 0, 0, false), 0);
	/* full at STOP: a whole buffer, the offset at the buffer's end */
	KUNIT_EXPECT_EQ(test, ipt_stream_position(size, rs, 0, size, true), size);
	KUNIT_EXPECT_EQ(test, ipt_stream_position(size, rs, 0, 0, true), size);
	KUNIT_EXPECT_EQ(test, ipt_stream_position(size, rs, 0, 100, false), 100);
	/* released into region 3 of lap 2: the head is past it, wrapped */
	KUNIT_EXPECT_EQ(test, ipt_stream_position(size, rs, 2 * size + 3 * rs + 9,
						  rs, false),
			3 * size + rs);
	KUNIT_EXPECT_EQ(test, ipt_stream_position(size, rs, 2 * size + 3 * rs + 9,
						  3 * rs + 100, false),
			2 * size + 3 * rs + 100);
	/* paused: STOP at the end of region 2, a buffer past region 3's start */
	KUNIT_EXPECT_EQ(test, ipt_stream_position(size, rs, 2 * size + 3 * rs + 9,
						  3 * rs, true),
			3 * size + 3 * rs);
	/* everything released at a region end, the unit has not moved */
	KUNIT_EXPECT_EQ(test, ipt_stream_position(size, rs, 5 * rs, 5 * rs, false),
			5 * rs);
}

static struct kunit_case stream_cases[] = {
	KUNIT_CASE(stream_check_fields),
	KUNIT_CASE(stream_regions),
	KUNIT_CASE(stream_stop_region),
	KUNIT_CASE(stream_topa_pos),
	KUNIT_CASE(stream_position),
	{}
};

static struct kunit_suite stream_suite = {
	.name = "ipt_stream",
	.test_cases = stream_cases,
};

kunit_test_suites(&stream_suite);

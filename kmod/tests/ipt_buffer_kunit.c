// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for ipt_buffer.c: chunk sizes and fallbacks, the ToPA chain
 * of every shape, and the position arithmetic.
 *
 * The chain and position tests use fake buffers whose physical addresses
 * are made up (nothing runs them); the allocation tests use the page
 * allocator for real, through an allocator that fails on demand.
 */
#include <kunit/test.h>
#include <linux/bitfield.h>
#include <linux/gfp.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sizes.h>

#include "../ipt.h"
#include "ipt_test.h"

/* ---- chunk planning ---------------------------------------------------- */

static void buffer_chunk_shift(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, ipt_buffer_chunk_shift(SZ_4K, 27), 12u);
	KUNIT_EXPECT_EQ(test, ipt_buffer_chunk_shift(SZ_8K, 12), 12u);
	KUNIT_EXPECT_EQ(test, ipt_buffer_chunk_shift(3 * SZ_4K, 27), 13u);
	KUNIT_EXPECT_EQ(test, ipt_buffer_chunk_shift(SZ_1G, 22), 22u);
	KUNIT_EXPECT_EQ(test, ipt_buffer_chunk_shift(SZ_1G + SZ_4K, 30), 30u);
	KUNIT_EXPECT_EQ(test, ipt_buffer_chunk_shift(SZ_128M - SZ_4K, 27), 26u);
	KUNIT_EXPECT_GE(test, ipt_buffer_max_chunk_shift(), 12u);
	KUNIT_EXPECT_LE(test, ipt_buffer_max_chunk_shift(), 27u);
	KUNIT_EXPECT_EQ(test, ipt_buffer_default_chunk_shift(),
			PAGE_SHIFT + MAX_ORDER - 1);
	KUNIT_EXPECT_EQ(test, ipt_buffer_max_chunk_shift(),
			IS_ENABLED(CONFIG_CONTIG_ALLOC) ? 27u :
			ipt_buffer_default_chunk_shift());
}

/* ---- real allocation ------------------------------------------------------ */

static unsigned int fail_above;	/* page orders above this fail */
static unsigned int fail_at;	/* and so does allocation number fail_at */
static unsigned int allocs, failures;

static struct page *test_alloc(int node, unsigned int order)
{
	struct page *page;

	allocs++;
	if (order > fail_above || allocs == fail_at || order >= MAX_ORDER) {
		failures++;
		return NULL;
	}
	page = alloc_pages(GFP_KERNEL | __GFP_ZERO, order);
	if (page && order)
		split_page(page, order);
	return page;
}

static int buffer_test_init(struct kunit *test)
{
	fail_above = UINT_MAX;
	fail_at = 0;
	allocs = 0;
	failures = 0;
	return 0;
}

/* The invariants of every buffer: chunks tile it, tables describe it. */
static void check_buffer(struct kunit *test, const struct ipt_buffer *buf,
			 u64 size)
{
	unsigned int i, prev = 99;
	u64 off = 0;

	KUNIT_EXPECT_EQ(test, buf->size, size);
	for (i = 0; i < buf->nr_chunks; i++) {
		const struct ipt_chunk *ch = &buf->chunks[i];
		u8 *p = page_address(ch->page);

		KUNIT_EXPECT_EQ(test, ch->offset, off);
		KUNIT_EXPECT_GE(test, ch->shift, 12u);
		KUNIT_EXPECT_LE(test, ch->shift, ipt_buffer_max_chunk_shift());
		KUNIT_EXPECT_TRUE(test, IS_ALIGNED(ch->phys, BIT_ULL(ch->shift)));
		KUNIT_EXPECT_EQ(test, ch->phys, (u64)page_to_phys(ch->page));
		/* Zeroed, first and last byte. */
		KUNIT_EXPECT_EQ(test, p[0], 0);
		KUNIT_EXPECT_EQ(test, p[BIT(ch->shift) - 1], 0);
		KUNIT_EXPECT_PTR_EQ(test, ipt_buffer_page(buf, off), ch->page);
		KUNIT_EXPECT_PTR_EQ(test,
				    ipt_buffer_page(buf, off + BIT(ch->shift) - 1),
				    ch->page + (BIT(ch->shift) >> PAGE_SHIFT) - 1);
		/* Largest first. */
		KUNIT_EXPECT_LE(test, ch->shift, prev);
		prev = ch->shift;
		off += BIT_ULL(ch->shift);
	}
	KUNIT_EXPECT_EQ(test, off, size);
	KUNIT_EXPECT_EQ(test, buf->nr_tables,
			DIV_ROUND_UP(buf->nr_chunks, IPT_TOPA_OUTPUTS));
}

/* Every chunk of @buf is 1 << @shift bytes. */
static void expect_chunk_shifts(struct kunit *test, const struct ipt_buffer *buf,
				unsigned int shift)
{
	unsigned int i;

	for (i = 0; i < buf->nr_chunks; i++)
		KUNIT_EXPECT_EQ_MSG(test, buf->chunks[i].shift, shift, "chunk %u", i);
}

static void buffer_alloc_sizes(struct kunit *test)
{
	static const struct {
		u64 size;
		unsigned int shift;
		unsigned int chunks;
	} cases[] = {
		{ SZ_4K, 27, 1 },
		{ SZ_8K, 12, 2 },
		{ 3 * SZ_4K, 27, 2 },
		{ SZ_64K + SZ_4K, 27, 2 },
		{ SZ_64K + SZ_4K, 13, 9 },
		{ SZ_1M, 16, 16 },
		{ 7 * SZ_4K, 27, 3 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ipt_buffer *buf;

		buf = ipt_buffer_alloc(cases[i].size, cases[i].shift, false,
				       false, NUMA_NO_NODE, test_alloc);
		KUNIT_ASSERT_FALSE(test, IS_ERR(buf));
		check_buffer(test, buf, cases[i].size);
		KUNIT_EXPECT_EQ_MSG(test, buf->nr_chunks, cases[i].chunks,
				    "case %u", i);
		ipt_buffer_free(buf);
	}
}

static void buffer_alloc_exact(struct kunit *test)
{
	struct ipt_buffer *buf;

	buf = ipt_buffer_alloc(SZ_64K, 14, true, true, NUMA_NO_NODE,
			       test_alloc);
	KUNIT_ASSERT_FALSE(test, IS_ERR(buf));
	check_buffer(test, buf, SZ_64K);
	KUNIT_EXPECT_EQ(test, buf->nr_chunks, 4u);
	expect_chunk_shifts(test, buf, 14);
	KUNIT_EXPECT_TRUE(test, buf->stop_on_full);
	ipt_buffer_free(buf);
}

/* High orders failing: smaller chunks instead, never a failure. */
static void buffer_alloc_fallback(struct kunit *test)
{
	struct ipt_buffer *buf;
	unsigned int i;

	fail_above = 1;	/* 8 KiB chunks at most */
	buf = ipt_buffer_alloc(SZ_64K + SZ_4K, 27, false, false, NUMA_NO_NODE,
			       test_alloc);
	KUNIT_ASSERT_FALSE(test, IS_ERR(buf));
	check_buffer(test, buf, SZ_64K + SZ_4K);
	for (i = 0; i < buf->nr_chunks; i++)
		KUNIT_EXPECT_LE(test, buf->chunks[i].shift, 13u);
	KUNIT_EXPECT_EQ(test, buf->nr_chunks, 9u);
	KUNIT_EXPECT_GT(test, failures, 0u);
	ipt_buffer_free(buf);
}

/* Range-allocator orders failing: 4 MiB chunks, or -ENOMEM when exact. */
static void buffer_alloc_fallback_large(struct kunit *test)
{
	struct ipt_buffer *buf;

	fail_above = MAX_ORDER - 1;
	buf = ipt_buffer_alloc(SZ_32M, 25, false, true, NUMA_NO_NODE,
			       test_alloc);
	KUNIT_ASSERT_FALSE(test, IS_ERR(buf));
	check_buffer(test, buf, SZ_32M);
	KUNIT_EXPECT_EQ(test, buf->nr_chunks, 8u);
	expect_chunk_shifts(test, buf, 22);
	ipt_buffer_free(buf);
	buf = ipt_buffer_alloc(SZ_32M, 25, true, true, NUMA_NO_NODE,
			       test_alloc);
	KUNIT_EXPECT_EQ(test, PTR_ERR(buf), -ENOMEM);
}

/*
 * The real range allocator (CONFIG_CONTIG_ALLOC): a 16 MiB chunk, aligned
 * and zeroed all through, then one of 8 MiB next to 4 MiB ones.
 */
static void buffer_alloc_contig(struct kunit *test)
{
	struct ipt_buffer *buf;

	if (ipt_buffer_max_chunk_shift() < 24)
		kunit_skip(test, "no CONFIG_CONTIG_ALLOC: no chunks above 4 MiB");
	buf = ipt_buffer_alloc(SZ_16M, 24, true, false, NUMA_NO_NODE, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(buf));
	check_buffer(test, buf, SZ_16M);
	KUNIT_ASSERT_EQ(test, buf->nr_chunks, 1u);
	expect_chunk_shifts(test, buf, 24);
	KUNIT_EXPECT_PTR_EQ(test, memchr_inv(page_address(buf->chunks[0].page),
					     0, SZ_16M), NULL);
	ipt_buffer_free(buf);
	buf = ipt_buffer_alloc(SZ_8M + SZ_4M, 23, false, true, NUMA_NO_NODE,
			       NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(buf));
	check_buffer(test, buf, SZ_8M + SZ_4M);
	KUNIT_EXPECT_EQ(test, buf->chunks[0].shift, 23u);
	ipt_buffer_free(buf);
}

/* Exact chunks do not fall back; total failure leaves nothing behind. */
static void buffer_alloc_failures(struct kunit *test)
{
	struct ipt_buffer *buf;

	fail_above = 1;
	buf = ipt_buffer_alloc(SZ_64K, 14, true, false, NUMA_NO_NODE,
			       test_alloc);
	KUNIT_EXPECT_EQ(test, PTR_ERR(buf), -ENOMEM);
	KUNIT_EXPECT_EQ(test, allocs, 1u);
	/* The third of 16 order-0 chunks fails: everything is undone. */
	fail_above = UINT_MAX;
	allocs = 0;
	fail_at = 3;
	buf = ipt_buffer_alloc(SZ_64K, 12, true, false, NUMA_NO_NODE,
			       test_alloc);
	KUNIT_EXPECT_EQ(test, PTR_ERR(buf), -ENOMEM);
	KUNIT_EXPECT_EQ(test, allocs, 3u);
	/* Order 0 failing is the end even with fallback. */
	allocs = 0;
	fail_at = 1;
	buf = ipt_buffer_alloc(SZ_4K, 27, false, false, NUMA_NO_NODE,
			       test_alloc);
	KUNIT_EXPECT_EQ(test, PTR_ERR(buf), -ENOMEM);
}

static void buffer_alloc_invalid(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, PTR_ERR(ipt_buffer_alloc(0, 27, false, false,
						       NUMA_NO_NODE, test_alloc)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ipt_buffer_alloc(SZ_4K + 1, 27, false,
						       false, NUMA_NO_NODE,
						       test_alloc)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ipt_buffer_alloc(SZ_4K, 11, false, false,
						       NUMA_NO_NODE, test_alloc)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ipt_buffer_alloc(SZ_4K, 28, false, false,
						       NUMA_NO_NODE, test_alloc)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ipt_buffer_alloc(SZ_8K, 14, true, false,
						       NUMA_NO_NODE, test_alloc)),
			-EINVAL);
	/* Bigger chunks than the page allocator has, exactly: -ENOMEM. */
	if (ipt_buffer_max_chunk_shift() < 27)
		KUNIT_EXPECT_EQ(test, PTR_ERR(ipt_buffer_alloc(SZ_128M, 27, true,
							       false, NUMA_NO_NODE,
							       test_alloc)),
				-ENOMEM);
	KUNIT_EXPECT_EQ(test, allocs, 0u);
}

/* ---- fake buffers: chains and positions ------------------------------------ */

/**
 * ipt_test_fake_buffer() - a buffer with made-up addresses and its ToPA chain
 * @test: the test; everything is freed with it
 * @n: chunks
 * @single: 0 for chunks of 4 KiB << (i % 3), else every chunk is @single
 *          bytes (a power of two)
 * @stop: stop-on-full
 *
 * Chunk i is at 4 GiB + i * 16 KiB, table t at IPT_TEST_TABLE(t); nothing
 * runs these buffers, ipt_topa_build() and the position arithmetic read
 * them.  Shared by the buffer and position suites (kmod/tests/ipt_test.h).
 *
 * Context: process context (KUnit test).
 * Return: the buffer (the test stops if an allocation fails).
 */
struct ipt_buffer *ipt_test_fake_buffer(struct kunit *test, unsigned int n,
					u64 single, bool stop)
{
	struct ipt_buffer *buf = kunit_kzalloc(test, sizeof(*buf), GFP_KERNEL);
	unsigned int i, t;
	u64 off = 0;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	buf->chunks = kunit_kcalloc(test, n, sizeof(*buf->chunks), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf->chunks);
	for (i = 0; i < n; i++) {
		buf->chunks[i].shift = single ? ilog2(single) : 12 + i % 3;
		buf->chunks[i].phys = 0x100000000ULL + (u64)i * SZ_16K;
		buf->chunks[i].offset = off;
		off += BIT_ULL(buf->chunks[i].shift);
	}
	buf->nr_chunks = n;
	buf->size = off;
	buf->stop_on_full = stop;
	buf->nr_tables = DIV_ROUND_UP(n, IPT_TOPA_OUTPUTS);
	buf->tables = kunit_kcalloc(test, buf->nr_tables, sizeof(*buf->tables),
				    GFP_KERNEL);
	buf->table_phys = kunit_kcalloc(test, buf->nr_tables,
					sizeof(*buf->table_phys), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf->tables);
	KUNIT_ASSERT_NOT_NULL(test, buf->table_phys);
	for (t = 0; t < buf->nr_tables; t++) {
		buf->tables[t] = kunit_kzalloc(test, IPT_TOPA_TABLE_SIZE,
					       GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, buf->tables[t]);
		buf->table_phys[t] = IPT_TEST_TABLE(t);
	}
	ipt_topa_build(buf);
	return buf;
}

static void check_chain(struct kunit *test, unsigned int n, bool stop)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, n, 0, stop);
	unsigned int t, i, c = 0, ints = 0, stops = 0;

	KUNIT_EXPECT_EQ(test, buf->nr_tables, DIV_ROUND_UP(n, 511));
	for (t = 0; t < buf->nr_tables; t++) {
		const u64 *tab = buf->tables[t];
		unsigned int outs = min(n - t * 511, 511u);

		for (i = 0; i < outs; i++, c++) {
			u64 e = tab[i];

			KUNIT_EXPECT_EQ(test, e & IPT_TOPA_END, 0ULL);
			KUNIT_EXPECT_EQ(test, e & IPT_TOPA_BASE,
					buf->chunks[c].phys);
			KUNIT_EXPECT_EQ(test, FIELD_GET(IPT_TOPA_SIZE, e),
					(u64)buf->chunks[c].shift - 12);
			ints += !!(e & IPT_TOPA_INT);
			stops += !!(e & IPT_TOPA_STOP);
			/* Nothing else set. */
			KUNIT_EXPECT_EQ(test, e & ~(IPT_TOPA_BASE | IPT_TOPA_SIZE |
						    IPT_TOPA_INT | IPT_TOPA_STOP), 0ULL);
		}
		/* END to the next table; the last one's to the first. */
		KUNIT_EXPECT_EQ(test, tab[outs], IPT_TOPA_END |
				IPT_TEST_TABLE((t + 1) % buf->nr_tables));
		for (i = outs + 1; i < 512; i++)
			KUNIT_EXPECT_EQ(test, tab[i], 0ULL);
	}
	KUNIT_EXPECT_EQ(test, c, n);
	KUNIT_EXPECT_EQ(test, ints, 1u);
	KUNIT_EXPECT_EQ(test, stops, stop ? 1u : 0u);
	t = buf->nr_tables - 1;
	KUNIT_EXPECT_NE(test, buf->tables[t][(n - 1) % 511] & IPT_TOPA_INT, 0ULL);
}

static void topa_chain_shapes(struct kunit *test)
{
	static const unsigned int ns[] = { 1, 2, 510, 511, 512, 1021, 1022,
					   1023, 1200 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ns); i++) {
		check_chain(test, ns[i], false);
		check_chain(test, ns[i], true);
	}
}

static u64 pos_mask(u32 index, u64 off)
{
	return IPT_RTIT_MASK_LOW | (u64)index << 7 | off << 32;
}

static void topa_offsets(struct kunit *test)
{
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 1200, 0, false);
	unsigned int c;
	u64 off;

	/* Every chunk's start, middle and end. */
	for (c = 0; c < buf->nr_chunks; c++) {
		unsigned int t = c / 511, i = c % 511;
		u64 size = BIT_ULL(buf->chunks[c].shift);

		KUNIT_ASSERT_EQ(test, ipt_topa_offset(buf, IPT_TEST_TABLE(t),
						      pos_mask(i, 0), &off), 0);
		KUNIT_EXPECT_EQ(test, off, buf->chunks[c].offset);
		KUNIT_ASSERT_EQ(test, ipt_topa_offset(buf, IPT_TEST_TABLE(t),
						      pos_mask(i, size / 2), &off), 0);
		KUNIT_EXPECT_EQ(test, off, buf->chunks[c].offset + size / 2);
		KUNIT_ASSERT_EQ(test, ipt_topa_offset(buf, IPT_TEST_TABLE(t),
						      pos_mask(i, size), &off), 0);
		KUNIT_EXPECT_EQ(test, off, buf->chunks[c].offset + size);
	}
	/* At an END entry: the next table's start, or the buffer's end. */
	KUNIT_ASSERT_EQ(test, ipt_topa_offset(buf, IPT_TEST_TABLE(0),
					      pos_mask(511, 0), &off), 0);
	KUNIT_EXPECT_EQ(test, off, buf->chunks[511].offset);
	KUNIT_ASSERT_EQ(test, ipt_topa_offset(buf, IPT_TEST_TABLE(2),
					      pos_mask(1200 - 1022, 0), &off), 0);
	KUNIT_EXPECT_EQ(test, off, buf->size);
	/* Not a position of this buffer. */
	KUNIT_EXPECT_EQ(test, ipt_topa_offset(buf, IPT_TEST_TABLE(3),
					      pos_mask(0, 0), &off), -EINVAL);
	KUNIT_EXPECT_EQ(test, ipt_topa_offset(buf, IPT_TEST_TABLE(0) + 0x80,
					      pos_mask(0, 0), &off), -EINVAL);
	KUNIT_EXPECT_EQ(test, ipt_topa_offset(buf, IPT_TEST_TABLE(2),
					      pos_mask(1200 - 1021, 0), &off),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, ipt_topa_offset(buf, IPT_TEST_TABLE(0),
					      pos_mask(0, SZ_4K + 1), &off),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, ipt_topa_offset(buf, IPT_TEST_TABLE(0),
					      pos_mask(511, 1), &off), -EINVAL);
}

static struct kunit_case buffer_cases[] = {
	KUNIT_CASE(buffer_chunk_shift),
	KUNIT_CASE(buffer_alloc_sizes),
	KUNIT_CASE(buffer_alloc_exact),
	KUNIT_CASE(buffer_alloc_fallback),
	KUNIT_CASE(buffer_alloc_fallback_large),
	KUNIT_CASE(buffer_alloc_contig),
	KUNIT_CASE(buffer_alloc_failures),
	KUNIT_CASE(buffer_alloc_invalid),
	KUNIT_CASE(topa_chain_shapes),
	KUNIT_CASE(topa_offsets),
	{}
};

static struct kunit_suite buffer_suite = {
	.name = "ipt_buffer",
	.init = buffer_test_init,
	.test_cases = buffer_cases,
};

kunit_test_suites(&buffer_suite);

// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: trace buffers - chunk allocation, ToPA tables and the arithmetic
 * that turns the unit's output position into a byte offset.
 *
 * A buffer is a list of physically contiguous, naturally aligned chunks
 * (4 KiB << n), in buffer order, described by a chain of ToPA tables of
 * one page each.  Nothing here touches the PT unit: the functions work on
 * the struct ipt_buffer they are given, so KUnit drives them directly.
 * See Documentation/design.rst.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitfield.h>
#include <linux/gfp.h>
#include <linux/io.h>
#include <linux/highmem.h>
#include <linux/hugetlb.h>
#include <linux/log2.h>
#include <linux/memory_hotplug.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/nodemask.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "ipt.h"

/* Largest block of the page allocator: order MAX_ORDER - 1 (4 MiB). */
#define IPT_BUDDY_MAX_SHIFT	min(PAGE_SHIFT + MAX_ORDER - 1, IPT_TOPA_MAX_SHIFT)

/*
 * Larger chunks, up to the largest ToPA region (128 MiB), come from the
 * kernel's contiguous range allocator where it has one.
 */
#ifdef CONFIG_CONTIG_ALLOC
#define IPT_CHUNK_MAX_SHIFT	IPT_TOPA_MAX_SHIFT
#else
#define IPT_CHUNK_MAX_SHIFT	IPT_BUDDY_MAX_SHIFT
#endif

/**
 * ipt_buffer_max_chunk_shift() - log2 of the largest chunk that can exist
 *
 * Return: 27 (128 MiB) with CONFIG_CONTIG_ALLOC, else the page allocator's
 * largest block (22 on x86-64).
 */
unsigned int ipt_buffer_max_chunk_shift(void)
{
	return IPT_CHUNK_MAX_SHIFT;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_buffer_max_chunk_shift);

/**
 * ipt_buffer_default_chunk_shift() - log2 of the chunk size asked for first
 *                                    when the caller names none
 *
 * Larger chunks mean migrating pages out of the way (alloc_contig_range()),
 * which can take long: only a caller who asks for them gets them.
 *
 * Return: the page allocator's largest block (22 on x86-64).
 */
unsigned int ipt_buffer_default_chunk_shift(void)
{
	return IPT_BUDDY_MAX_SHIFT;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_buffer_default_chunk_shift);

/**
 * ipt_buffer_chunk_shift() - the chunk to try next
 * @remaining: bytes still to allocate, a non-zero multiple of 4 KiB
 * @max_shift: log2 of the largest chunk wanted (12..27)
 *
 * Return: the largest shift s <= @max_shift with 1 << s <= @remaining.
 */
unsigned int ipt_buffer_chunk_shift(u64 remaining, unsigned int max_shift)
{
	return min_t(unsigned int, max_shift, ilog2(remaining));
}
EXPORT_SYMBOL_IF_KUNIT(ipt_buffer_chunk_shift);

#ifdef CONFIG_CONTIG_ALLOC
/* Ranges alloc_contig_range() may try per chunk before the caller falls back. */
#define IPT_CONTIG_TRIES	8

/*
 * Where the last range allocation of any buffer ended: the next search
 * starts there, so that a buffer's chunks, and the buffers of one session,
 * are found in one pass over memory rather than each from the start of the
 * zone over the ranges taken before it.  Only a hint: racing allocations
 * may read it stale, which costs a longer scan, nothing else.
 */
static unsigned long ipt_contig_hint;

/*
 * Whether [@pfn, @pfn + @nr) is online memory of @zone that the range
 * allocator may try to empty: no reserved or hugetlb pages (the checks of
 * alloc_contig_pages(), which modules cannot call).
 */
static bool ipt_contig_range_ok(struct zone *zone, unsigned long pfn,
				unsigned long nr)
{
	unsigned long i;

	for (i = pfn; i < pfn + nr; i++) {
		struct page *page = pfn_to_online_page(i);

		if (!page || page_zone(page) != zone || PageReserved(page) ||
		    PageHuge(page))
			return false;
	}
	return true;
}

/*
 * Whether [@pfn, @pfn + @nr) overlaps a chunk @buf already holds: such a
 * range cannot be had, and trying it would spend one of the chunk's tries.
 */
static bool ipt_contig_owned(const struct ipt_buffer *buf, unsigned long pfn,
			     unsigned long nr)
{
	unsigned int i;

	for (i = 0; i < buf->nr_chunks; i++) {
		unsigned long start = PHYS_PFN(buf->chunks[i].phys);
		unsigned long end = start + BIT(buf->chunks[i].shift - PAGE_SHIFT);

		if (pfn < end && start < pfn + nr)
			return true;
	}
	return false;
}

/*
 * Try the naturally aligned range at @pfn: 0 with it allocated and zeroed,
 * -EAGAIN to go on with the next one, -ENOMEM to stop (tries spent or a
 * fatal signal).
 */
static int ipt_contig_try(struct zone *zone, const struct ipt_buffer *buf,
			  unsigned long pfn, unsigned long nr,
			  unsigned int *tries)
{
	unsigned long i;

	if (fatal_signal_pending(current) || *tries >= IPT_CONTIG_TRIES)
		return -ENOMEM;
	if (ipt_contig_owned(buf, pfn, nr) ||
	    !ipt_contig_range_ok(zone, pfn, nr))
		return -EAGAIN;
	++*tries;
	if (alloc_contig_range(pfn, pfn + nr, MIGRATE_MOVABLE,
			       GFP_KERNEL | __GFP_NOWARN)) {
		cond_resched();
		return -EAGAIN;
	}
	/* Each page has its own reference, as after split_page(). */
	for (i = 0; i < nr; i++) {
		clear_highpage(pfn_to_page(pfn + i));
		if (!(i % 1024))
			cond_resched();
	}
	return 0;
}

/*
 * A naturally aligned range of 1 << @order pages of @zone from
 * alloc_contig_range(), zeroed, or NULL after *@tries attempts in all.  The
 * scan starts at ipt_contig_hint when that lies in @zone and wraps around
 * once, skipping the ranges @buf already holds.
 */
static struct page *ipt_contig_zone(struct zone *zone, unsigned int order,
				    const struct ipt_buffer *buf,
				    unsigned int *tries)
{
	unsigned long nr = 1UL << order, first, start, pfn, hint;
	int ret;

	first = ALIGN(zone->zone_start_pfn, nr);
	if (!zone_spans_pfn(zone, first + nr - 1))
		return NULL;
	hint = ALIGN(READ_ONCE(ipt_contig_hint), nr);
	start = zone_spans_pfn(zone, hint) && zone_spans_pfn(zone, hint + nr - 1) ?
		hint : first;
	pfn = start;
	do {
		ret = ipt_contig_try(zone, buf, pfn, nr, tries);
		if (!ret) {
			WRITE_ONCE(ipt_contig_hint, pfn + nr);
			return pfn_to_page(pfn);
		}
		if (ret != -EAGAIN)
			return NULL;
		pfn += nr;
		if (!zone_spans_pfn(zone, pfn + nr - 1))
			pfn = first;
	} while (pfn != start);
	return NULL;
}

/*
 * Chunks above the page allocator's largest block: the zones up to
 * ZONE_NORMAL (the buffer is pinned, so not ZONE_MOVABLE) of @node first,
 * then of the other nodes.
 */
static struct page *ipt_buffer_alloc_contig(int node, unsigned int order,
					    const struct ipt_buffer *buf)
{
	unsigned int tries = 0, pass;
	struct page *page;
	int nid, z;

	for (pass = 0; pass < 2; pass++) {
		bool home = pass == 0;	/* @node on pass 0, the others on 1 */

		for_each_online_node(nid) {
			bool at_home = nid == node;

			if (node != NUMA_NO_NODE && at_home != home)
				continue;
			for (z = ZONE_NORMAL; z >= 0; z--) {
				struct zone *zone = &NODE_DATA(nid)->node_zones[z];

				if (!populated_zone(zone))
					continue;
				page = ipt_contig_zone(zone, order, buf, &tries);
				if (page)
					return page;
			}
		}
		if (node == NUMA_NO_NODE)
			break;
	}
	return NULL;
}
#endif

/*
 * The default chunk allocator: zeroed pages on @node, each with its own
 * reference (split to order 0); above the page allocator's largest block
 * from the range allocator, never over a range @buf already holds.
 */
static struct page *ipt_buffer_alloc_pages(int node, unsigned int order,
					   const struct ipt_buffer *buf)
{
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN;
	struct page *page;

#ifdef CONFIG_CONTIG_ALLOC
	if (order + PAGE_SHIFT > IPT_BUDDY_MAX_SHIFT)
		return ipt_buffer_alloc_contig(node, order, buf);
#endif
	/*
	 * Fail fast at high orders: the caller falls back to smaller ones.
	 * Order 0 may reclaim but fails rather than invoke the OOM killer,
	 * globally or in the caller's memory cgroup (IPT_GFP_ACCOUNT).
	 */
	gfp |= order ? __GFP_NORETRY : __GFP_RETRY_MAYFAIL;
	page = alloc_pages_node(node, gfp, order);
	if (page && order)
		split_page(page, order);
	return page;
}

static void ipt_buffer_free_pages(struct page *page, unsigned int order)
{
	unsigned int i;

	for (i = 0; i < (1U << order); i++)
		__free_page(page + i);
}

/* Grow the chunk array to hold at least @want entries. */
static int ipt_buffer_grow(struct ipt_buffer *buf, unsigned int *cap,
			   unsigned int want)
{
	struct ipt_chunk *n;
	unsigned int ncap;

	if (want <= *cap)
		return 0;
	ncap = max(want, *cap * 2);
	n = kvrealloc(buf->chunks, *cap * sizeof(*n), ncap * sizeof(*n),
		      IPT_GFP_ACCOUNT | __GFP_ZERO);
	if (!n)
		return -ENOMEM;
	buf->chunks = n;
	*cap = ncap;
	return 0;
}

static void ipt_buffer_free_chunks(struct ipt_buffer *buf)
{
	unsigned int i;

	for (i = 0; i < buf->nr_chunks; i++)
		if (buf->chunks[i].page)
			ipt_buffer_free_pages(buf->chunks[i].page,
					      buf->chunks[i].shift - PAGE_SHIFT);
	kvfree(buf->chunks);
	buf->chunks = NULL;
	buf->nr_chunks = 0;
}

static void ipt_buffer_free_tables(struct ipt_buffer *buf)
{
	unsigned int i;

	for (i = 0; buf->table_pages && i < buf->nr_tables; i++)
		if (buf->table_pages[i])
			__free_page(buf->table_pages[i]);
	kfree(buf->table_pages);
	kfree(buf->table_phys);
	kfree(buf->tables);
	buf->table_pages = NULL;
	buf->table_phys = NULL;
	buf->tables = NULL;
	buf->nr_tables = 0;
}

/* The ToPA entry of chunk @c. */
static u64 *ipt_topa_entry(const struct ipt_buffer *buf, unsigned int c)
{
	return &buf->tables[c / IPT_TOPA_OUTPUTS][c % IPT_TOPA_OUTPUTS];
}

/**
 * ipt_topa_build() - write the ToPA chain of a buffer
 * @buf: the buffer; its chunks (@phys, @shift) and tables (@tables,
 *       @table_phys, @nr_tables) are set
 *
 * Table t holds chunks t * IPT_TOPA_OUTPUTS .. up to IPT_TOPA_OUTPUTS of
 * them, followed by an END entry to table t + 1, the last one's END to
 * table 0.  The last chunk's entry has INT (its PMI counts a ring's wrap,
 * or says a stop-on-full buffer is full), and STOP for stop-on-full.  A
 * stream buffer (@buf->nr_regions set) has INT on the last entry of every
 * region instead, and STOP on that of @buf->stop_region.
 */
void ipt_topa_build(struct ipt_buffer *buf)
{
	unsigned int c, t;

	for (t = 0; t < buf->nr_tables; t++) {
		unsigned int first = t * IPT_TOPA_OUTPUTS;
		unsigned int n = min(buf->nr_chunks - first, IPT_TOPA_OUTPUTS);
		u64 *table = buf->tables[t];

		memset(table, 0, IPT_TOPA_TABLE_SIZE);
		for (c = 0; c < n; c++) {
			const struct ipt_chunk *ch = &buf->chunks[first + c];

			table[c] = (ch->phys & IPT_TOPA_BASE) |
				   FIELD_PREP(IPT_TOPA_SIZE,
					      ch->shift - IPT_TOPA_MIN_SHIFT);
		}
		table[n] = IPT_TOPA_END |
			   (buf->table_phys[(t + 1) % buf->nr_tables] &
			    IPT_TOPA_BASE);
		if (t == buf->nr_tables - 1 && !buf->nr_regions) {
			table[n - 1] |= IPT_TOPA_INT;
			if (buf->stop_on_full)
				table[n - 1] |= IPT_TOPA_STOP;
		}
	}
	for (c = 0; c < buf->nr_regions; c++) {
		u64 *e = ipt_topa_entry(buf, buf->region_last[c]);

		*e |= IPT_TOPA_INT;
		if (c == buf->stop_region)
			*e |= IPT_TOPA_STOP;
	}
}
EXPORT_SYMBOL_IF_KUNIT(ipt_topa_build);

/**
 * ipt_topa_offset() - the buffer offset of an output position
 * @buf: the buffer
 * @base: IA32_RTIT_OUTPUT_BASE, read with TraceEn = 0
 * @mask: IA32_RTIT_OUTPUT_MASK_PTRS, read with TraceEn = 0
 * @off: receives the offset of the next byte, 0 .. @buf->size
 *
 * An index at a table's END entry means the start of the next table (the
 * end of the buffer for the last one); an OutputOffset equal to the region
 * size (a STOP region, full) means the region's end.
 *
 * Return: 0, or -EINVAL when the position is not inside this buffer.
 */
int ipt_topa_offset(const struct ipt_buffer *buf, u64 base, u64 mask,
		    u64 *off)
{
	u64 table = base & ~(u64)(IPT_TOPA_TABLE_SIZE - 1);
	u32 index = FIELD_GET(IPT_RTIT_MASK_INDEX, mask);
	u64 in_region = mask >> 32;
	unsigned int t, first, n;
	const struct ipt_chunk *ch;

	for (t = 0; t < buf->nr_tables; t++)
		if (buf->table_phys[t] == table)
			break;
	if (t == buf->nr_tables || (base & (IPT_TOPA_TABLE_SIZE - 1)))
		return -EINVAL;
	first = t * IPT_TOPA_OUTPUTS;
	n = min(buf->nr_chunks - first, IPT_TOPA_OUTPUTS);
	if (index > n)
		return -EINVAL;
	if (index == n) {
		if (in_region)
			return -EINVAL;
		*off = first + n < buf->nr_chunks ?
		       buf->chunks[first + n].offset : buf->size;
		return 0;
	}
	ch = &buf->chunks[first + index];
	if (in_region > BIT_ULL(ch->shift))
		return -EINVAL;
	*off = ch->offset + in_region;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_topa_offset);

/**
 * ipt_buffer_set_regions() - make @buf a stream buffer of @nr regions
 * @buf: the buffer, not yet used by any unit
 * @nr: regions, 2..IPT_STREAM_MAX_REGIONS
 *
 * Each region must end on a chunk boundary, so that its last ToPA entry
 * can carry INT and STOP: the unit raises the PMI, or stops, exactly at
 * the region's end (SDM vol. 3C, 33.2.7.2, "Table of Physical Addresses":
 * INT and STOP act when the output region of the entry is filled).  The
 * chunks of a buffer whose largest chunk divides the region size always
 * do (ipt_session.c caps the chunk order so).  STOP goes on the last
 * region: the unit may fill the whole buffer before anything is released.
 *
 * Context: process context, the buffer private to the caller.
 * Return: 0, or -EINVAL when the regions do not fit the chunks.
 */
int ipt_buffer_set_regions(struct ipt_buffer *buf, unsigned int nr)
{
	unsigned int c, r = 0;
	u64 rsize;

	if (nr < IPT_STREAM_MIN_REGIONS || nr > IPT_STREAM_MAX_REGIONS ||
	    buf->size % nr)
		return -EINVAL;
	rsize = buf->size / nr;
	for (c = 0; c < buf->nr_chunks; c++) {
		u64 end = buf->chunks[c].offset + BIT_ULL(buf->chunks[c].shift);

		if (end > (u64)(r + 1) * rsize)
			return -EINVAL;
		if (end == (u64)(r + 1) * rsize)
			buf->region_last[r++] = c;
	}
	if (r != nr)
		return -EINVAL;
	buf->nr_regions = nr;
	buf->region_size = rsize;
	buf->stop_region = nr - 1;
	ipt_topa_build(buf);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_buffer_set_regions);

/**
 * ipt_topa_move_stop() - put a stream buffer's STOP on another region
 * @buf: the stream buffer
 * @region: the region whose last entry gets STOP (INT stays on every one)
 *
 * Context: the unit that writes into @buf is off (TraceEn = 0), as Linux
 * 6.1 moves perf's markers only with the unit stopped
 * (pt_buffer_reset_markers() is called from intel_pt_interrupt() after
 * pt_config_stop(), arch/x86/events/intel/pt.c:1085-1150, 1514-1530);
 * device lock held.
 */
void ipt_topa_move_stop(struct ipt_buffer *buf, unsigned int region)
{
	*ipt_topa_entry(buf, buf->region_last[buf->stop_region]) &=
		~IPT_TOPA_STOP;
	*ipt_topa_entry(buf, buf->region_last[region]) |= IPT_TOPA_STOP;
	buf->stop_region = region;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_topa_move_stop);

/**
 * ipt_topa_pos() - the output registers that put the next byte at @off
 * @buf: the buffer
 * @off: a byte offset; taken modulo the buffer size
 * @base: receives IA32_RTIT_OUTPUT_BASE (the table holding the chunk)
 * @mask: receives IA32_RTIT_OUTPUT_MASK_PTRS (entry index and offset)
 *
 * The inverse of ipt_topa_offset() for offsets inside the buffer.
 *
 * Context: any; a pure function of @buf.
 */
void ipt_topa_pos(const struct ipt_buffer *buf, u64 off, u64 *base,
		  u64 *mask)
{
	unsigned int lo = 0, hi = buf->nr_chunks;

	off %= buf->size;
	while (hi - lo > 1) {
		unsigned int mid = (lo + hi) / 2;

		if (buf->chunks[mid].offset <= off)
			lo = mid;
		else
			hi = mid;
	}
	*base = buf->table_phys[lo / IPT_TOPA_OUTPUTS];
	*mask = IPT_RTIT_MASK_LOW |
		FIELD_PREP(IPT_RTIT_MASK_INDEX, lo % IPT_TOPA_OUTPUTS) |
		(off - buf->chunks[lo].offset) << 32;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_topa_pos);

/**
 * ipt_buffer_alloc() - allocate a zeroed trace buffer and its ToPA chain
 * @size: bytes, a non-zero multiple of 4 KiB
 * @max_shift: log2 of the largest chunk wanted, 12..27
 * @exact: every chunk must be 1 << @max_shift bytes (no fallback)
 * @stop_on_full: STOP on the last region instead of a ring
 * @node: NUMA node to allocate on (NUMA_NO_NODE: any)
 * @alloc: the page allocator (KUnit passes one that fails on purpose), or
 *         NULL for the real one; it returns order-0 pages, @order of them
 *         physically contiguous and aligned to their size, each with its
 *         own reference, or NULL
 *
 * Chunks are as large as @max_shift and the remaining size allow; when a
 * chunk cannot be allocated, smaller ones are tried (unless @exact).
 * Chunks above ipt_buffer_max_chunk_shift() are never asked for (with
 * @exact: -ENOMEM); the real allocator takes those above the page
 * allocator's largest block from alloc_contig_range().
 *
 * Context: process context; may sleep.
 * Return: the buffer, or ERR_PTR(-EINVAL) for a bad @size / @max_shift,
 * ERR_PTR(-ENOMEM) with nothing left allocated.
 */
struct ipt_buffer *ipt_buffer_alloc(u64 size, unsigned int max_shift,
				    bool exact, bool stop_on_full, int node,
				    ipt_page_alloc_fn alloc)
{
	unsigned int cap = 0, shift, t;
	struct ipt_buffer *buf;
	u64 done = 0;
	int ret = -ENOMEM;

	if (!size || !IS_ALIGNED(size, SZ_4K) ||
	    max_shift < IPT_TOPA_MIN_SHIFT || max_shift > IPT_TOPA_MAX_SHIFT ||
	    (exact && !IS_ALIGNED(size, BIT_ULL(max_shift))))
		return ERR_PTR(-EINVAL);
	if (max_shift > IPT_CHUNK_MAX_SHIFT) {
		if (exact)
			return ERR_PTR(-ENOMEM);
		max_shift = IPT_CHUNK_MAX_SHIFT;
	}
	buf = kzalloc(sizeof(*buf), IPT_GFP_ACCOUNT);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	refcount_set(&buf->ref, 1);
	buf->size = size;
	buf->stop_on_full = stop_on_full;

	shift = max_shift;
	while (done < size) {
		struct page *page;
		unsigned int s = ipt_buffer_chunk_shift(size - done, shift);

		if (ipt_buffer_grow(buf, &cap, buf->nr_chunks + 1))
			goto err;
		page = alloc ? alloc(node, s - PAGE_SHIFT) :
		       ipt_buffer_alloc_pages(node, s - PAGE_SHIFT, buf);
		if (!page) {
			if (exact || s == PAGE_SHIFT)
				goto err;
			shift = s - 1;
			continue;
		}
		buf->chunks[buf->nr_chunks].page = page;
		buf->chunks[buf->nr_chunks].phys = page_to_phys(page);
		buf->chunks[buf->nr_chunks].shift = s;
		buf->chunks[buf->nr_chunks].offset = done;
		buf->nr_chunks++;
		done += BIT_ULL(s);
		cond_resched();
	}

	buf->nr_tables = DIV_ROUND_UP(buf->nr_chunks, IPT_TOPA_OUTPUTS);
	buf->tables = kcalloc(buf->nr_tables, sizeof(*buf->tables),
			      IPT_GFP_ACCOUNT);
	buf->table_phys = kcalloc(buf->nr_tables, sizeof(*buf->table_phys),
				  IPT_GFP_ACCOUNT);
	buf->table_pages = kcalloc(buf->nr_tables, sizeof(*buf->table_pages),
				   IPT_GFP_ACCOUNT);
	if (!buf->tables || !buf->table_phys || !buf->table_pages)
		goto err;
	for (t = 0; t < buf->nr_tables; t++) {
		struct page *page = alloc_pages_node(node, IPT_GFP_ACCOUNT |
						     __GFP_ZERO, 0);

		if (!page)
			goto err;
		buf->table_pages[t] = page;
		buf->tables[t] = page_address(page);
		buf->table_phys[t] = page_to_phys(page);
	}
	ipt_topa_build(buf);
	return buf;

err:
	ipt_buffer_free(buf);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_buffer_alloc);

/**
 * ipt_buffer_free() - free a buffer and give back its charge
 * @buf: the buffer, or NULL
 *
 * Callers other than ipt_buffer_alloc()'s unwinding and KUnit drop their
 * reference with ipt_buffer_put() instead.
 *
 * Context: process context; no CPU may still write to @buf.
 */
void ipt_buffer_free(struct ipt_buffer *buf)
{
	if (!buf)
		return;
	ipt_buffer_free_tables(buf);
	ipt_buffer_free_chunks(buf);
	ipt_account_uncharge(&buf->charge);
	kfree(buf);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_buffer_free);

/**
 * ipt_buffer_get() - take a reference to a buffer
 * @buf: the buffer, which the caller holds a reference to
 *
 * Return: @buf.
 */
struct ipt_buffer *ipt_buffer_get(struct ipt_buffer *buf)
{
	refcount_inc(&buf->ref);
	return buf;
}

/**
 * ipt_buffer_put() - drop a reference; the last one frees the buffer
 * @buf: the buffer, or NULL
 *
 * The session's reference goes at IPT_IOC_RELEASE or close, a mapping's
 * when the mapping goes (ipt_mmap.c): the pages and their charge live as
 * long as either.
 *
 * Context: process context (the device lock, or mmap_lock of a mapping's
 * mm, may be held); no CPU may still write to @buf.
 */
void ipt_buffer_put(struct ipt_buffer *buf)
{
	if (buf && refcount_dec_and_test(&buf->ref))
		ipt_buffer_free(buf);
}

/**
 * ipt_buffer_page() - the page at a byte offset of the buffer
 * @buf: the buffer
 * @off: offset, below @buf->size
 *
 * Return: the page holding byte @off.
 */
struct page *ipt_buffer_page(const struct ipt_buffer *buf, u64 off)
{
	unsigned int lo = 0, hi = buf->nr_chunks;

	/* Chunks are in offset order: binary search. */
	while (hi - lo > 1) {
		unsigned int mid = (lo + hi) / 2;

		if (buf->chunks[mid].offset <= off)
			lo = mid;
		else
			hi = mid;
	}
	return buf->chunks[lo].page +
	       ((off - buf->chunks[lo].offset) >> PAGE_SHIFT);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_buffer_page);

// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the streaming arithmetic: the configuration's streaming
 * fields (ipt_stream_check()), regions on ToPA entries
 * (ipt_buffer_set_regions()), where INT and STOP go and how STOP moves
 * (ipt_topa_build(), ipt_topa_move_stop(), ipt_stream_stop_region()),
 * the output registers of an offset (ipt_topa_pos(), the inverse of
 * ipt_topa_offset()) and the stream position of an output offset
 * (ipt_stream_position()); and the state functions the PMI handler and
 * the cross-CPU calls run (ipt_stream_pmi(), ipt_stream_started_here(),
 * ipt_stream_stopped_here(), ipt_stream_captured()) on a fake backend;
 * and for a thread's trace, what its switches do (ipt_stream_thread_in(),
 * ipt_stream_thread_out()) and the thread mode's stream_move through
 * IPT_IOC_STREAM_RELEASE.
 * Fake buffers: nothing runs them.
 */
#include <kunit/test.h>
#include <linux/bitfield.h>
#include <linux/cpumask.h>
#include <linux/irq_work.h>
#include <linux/sizes.h>
#include <linux/wait.h>

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
	KUNIT_EXPECT_EQ(test, ipt_stream_check(&c, &nr), 0);
	KUNIT_EXPECT_EQ(test, nr, (unsigned int)IPT_STREAM_DEF_REGIONS);
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

/*
 * A stream trace on a fake buffer of 8 regions of 4 KiB, and a fake
 * backend whose output registers and STATUS the case sets: the state
 * functions of ipt_stream.c driven directly, in the order the cross-CPU
 * calls and the PMI handler run them.
 */
static u64 fake_base, fake_mask, fake_status;
/* Non-zero: OUTPUT_BASE reads as this from its second read on. */
static u64 fake_next_base;
static unsigned int fake_base_reads;
/*
 * IA32_RTIT_CTL; the writes of it (fake_ctl_writes), the output position
 * reads made while TraceEn was set (fake_unflushed_reads: bytes before
 * the position may not be in memory yet, SDM vol. 3C, 33.3.3), and the
 * next write of it that faults (fake_ctl_fault, a count down, 0: none).
 */
static u64 fake_ctl;
static unsigned int fake_ctl_writes, fake_unflushed_reads, fake_ctl_fault;
/* The backend's lost-bytes count. */
static u64 fake_lost;
/* fake_thread_out(): the unload could not save the position. */
static bool fake_out_lost;
/* A read of OUTPUT_BASE faults (a position that cannot be read). */
static bool fake_base_fault;

static int fake_wr(u32 msr, u64 val)
{
	if (msr != MSR_IA32_RTIT_CTL)
		return -EIO;
	fake_ctl_writes++;
	if (fake_ctl_fault && !--fake_ctl_fault)
		return -EIO;
	fake_ctl = val;
	return 0;
}

static u64 fake_lost_bytes(void)
{
	return fake_lost;
}

static int fake_rd(u32 msr, u64 *val)
{
	if ((msr == MSR_IA32_RTIT_OUTPUT_BASE ||
	     msr == MSR_IA32_RTIT_OUTPUT_MASK) && (fake_ctl & RTIT_CTL_TRACEEN))
		fake_unflushed_reads++;
	switch (msr) {
	case MSR_IA32_RTIT_CTL:
		*val = fake_ctl;
		return 0;
	case MSR_IA32_RTIT_OUTPUT_BASE:
		if (fake_base_fault)
			return -EIO;
		*val = fake_next_base && fake_base_reads++ ? fake_next_base :
		       fake_base;
		return 0;
	case MSR_IA32_RTIT_OUTPUT_MASK:
		*val = fake_mask;
		return 0;
	case MSR_IA32_RTIT_STATUS:
		*val = fake_status;
		return 0;
	}
	return -EIO;
}

/* The backend's clock. */
static u64 fake_now;

static u64 fake_tsc(void)
{
	return fake_now;
}

static const struct ipt_hw_ops fake_ops = {
	.name = "kunit-stream",
	.read_msr = fake_rd,
	.write_msr = fake_wr,
	.tsc = fake_tsc,
};

/* The same, with a lost-bytes count (the simulator's). */
static const struct ipt_hw_ops fake_lost_ops = {
	.name = "kunit-stream-lost",
	.read_msr = fake_rd,
	.write_msr = fake_wr,
	.tsc = fake_tsc,
	.lost_bytes = fake_lost_bytes,
};

/* A start's writes too: the output registers and STATUS (per-CPU mode). */
static int fake_wr_start(u32 msr, u64 val)
{
	switch (msr) {
	case MSR_IA32_RTIT_OUTPUT_BASE:
		fake_base = val;
		return 0;
	case MSR_IA32_RTIT_OUTPUT_MASK:
		fake_mask = val;
		return 0;
	case MSR_IA32_RTIT_STATUS:
		fake_status = val;
		return 0;
	}
	return fake_wr(msr, val);
}

static const struct ipt_hw_ops fake_start_ops = {
	.name = "kunit-stream-start",
	.read_msr = fake_rd,
	.write_msr = fake_wr_start,
	.tsc = fake_tsc,
};

static void fake_wake(struct irq_work *w)
{
}

static struct ipt_test_session *fake_stream(struct kunit *test)
{
	struct ipt_test_session *f = ipt_test_session(test, &fake_ops);

	f->t.buf = ipt_test_fake_buffer(test, 8, SZ_4K, false);
	KUNIT_ASSERT_EQ(test, ipt_buffer_set_regions(f->t.buf, 8), 0);
	f->s.stream = true;
	f->s.hwcfg.status_keep = IPT_STATUS_KEEP;
	f->t.stream.gaps = kunit_kcalloc(test, IPT_STREAM_GAPS,
					 sizeof(*f->t.stream.gaps), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->t.stream.gaps);
	init_irq_work(&f->t.stream.work, fake_wake);
	init_waitqueue_head(&f->s.wq);
	fake_status = 0;
	fake_next_base = 0;
	fake_ctl = 0;
	fake_ctl_writes = 0;
	fake_unflushed_reads = 0;
	fake_ctl_fault = 0;
	fake_lost = 0;
	fake_out_lost = false;
	fake_base_fault = false;
	fake_base = 0;
	fake_mask = 0;
	fake_now = 1000;
	return f;
}

/* The unit at buffer offset @off (Stopped at STOP: @stopped). */
static void fake_at(struct ipt_test_session *f, u64 off, bool stopped)
{
	ipt_topa_pos(f->t.buf, off, &fake_base, &fake_mask);
	fake_status = stopped ? RTIT_STATUS_STOPPED : 0;
}

/* The fake unit's output registers and STATUS saved in the trace. */
static void fake_save(struct ipt_test_session *f)
{
	f->t.base = fake_base;
	f->t.mask = fake_mask;
	f->t.status = fake_status;
}

/*
 * Stop the trace where the fake unit is, as ipt_trace_stop_on_cpu() does,
 * interrupts off.
 */
static void fake_stop(struct ipt_test_session *f)
{
	fake_save(f);
	local_irq_disable();
	ipt_stream_stopped_here(&f->t);
	local_irq_enable();
}

/* Start the trace as ipt_trace_start_on_cpu() does, interrupts off. */
static void fake_start(struct ipt_test_session *f)
{
	local_irq_disable();
	ipt_stream_started_here(&f->t);
	local_irq_enable();
	f->t.running = true;
}

static u64 fake_captured(struct ipt_test_session *f)
{
	u64 c;

	irq_work_sync(&f->t.stream.work);
	mutex_lock(&f->idev.lock);
	c = ipt_stream_captured(&f->t);
	mutex_unlock(&f->idev.lock);
	return c;
}

/*
 * One PMI for several regions (bit 55 is a flag): the ready position is
 * where the unit is, rounded down to a region end, never a count; at STOP
 * exactly a buffer past the floor; announcements before a stop are gone.
 */
static void stream_pmi_position(struct kunit *test)
{
	struct ipt_test_session *f = fake_stream(test);
	const u64 rs = SZ_4K, size = 8 * SZ_4K;

	fake_start(f);
	KUNIT_EXPECT_EQ(test, fake_captured(f), 0);
	/* four regions and a bit, one PMI */
	fake_at(f, 4 * rs + 100, false);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_EQ(test, fake_captured(f), 4 * rs);
	/* released up to 3 regions; the unit at STOP, one PMI for the rest */
	f->t.stream.released = 3 * rs + 5;
	fake_at(f, 3 * rs, true);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_EQ(test, fake_captured(f), 3 * rs + size);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	/* a lap on, wrapped: released at 2 regions of lap 1, unit at 1 of 2 */
	f->t.stream.paused = false;
	f->t.stream.released = size + 2 * rs;
	fake_at(f, rs + 7, false);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_EQ(test, fake_captured(f), 2 * size + rs);
	/* the output registers not in the buffer: the last one stands */
	fake_base = 0x1000;
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_EQ(test, fake_captured(f), 2 * size + rs);
	/* a stop settles the head and forgets the announcement */
	fake_at(f, 4 * rs, false);
	ipt_stream_pmi(&f->t, &fake_ops);
	fake_at(f, 4 * rs + 3, false);
	fake_stop(f);
	KUNIT_EXPECT_EQ(test, f->t.stream.head, size + 4 * rs + 3);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->t.stream.announced), IPT_STREAM_NONE);
	fake_start(f);
	KUNIT_EXPECT_EQ(test, fake_captured(f), size + 4 * rs + 3);
	irq_work_sync(&f->t.stream.work);
}

/*
 * A release that resumes a paused unit: the stop clears paused, but the
 * unit's Stopped bit stays set until the restart writes STATUS, and a PMI
 * handled in between marks the trace paused again.  The restart, which
 * writes STATUS without Stopped, must leave it running, not paused.
 */
static void stream_resume_after_late_pmi(struct kunit *test)
{
	struct ipt_test_session *f = fake_stream(test);
	const u64 rs = SZ_4K, size = 8 * SZ_4K;

	fake_start(f);
	/* paused at STOP */
	fake_at(f, 0, true);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, fake_captured(f), size);
	/* the release's cross-CPU call: stop, settle, rearm ... */
	fake_stop(f);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, f->t.stream.head, size);
	KUNIT_EXPECT_EQ(test, f->t.stream.nr_gaps, 1ULL);
	f->t.stream.released = rs;
	ipt_stream_rearm(&f->t);
	KUNIT_EXPECT_FALSE(test, f->t.status & RTIT_STATUS_STOPPED);
	/* ... an NMI while the unit's STATUS still says Stopped ... */
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	/* ... and the restart, STATUS written without Stopped */
	fake_start(f);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
	/* a start still Stopped (nothing released) starts paused */
	f->t.running = false;
	f->t.status = RTIT_STATUS_STOPPED;
	fake_start(f);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->t.stream.paused_tsc), 1000ULL);
	irq_work_sync(&f->t.stream.work);
}

/*
 * The unit at the end of entry @index of table 0 (OutputOffset 4 KiB, an
 * entry's size), not Stopped.
 */
static void fake_at_entry_end(unsigned int index)
{
	fake_base = IPT_TEST_TABLE(0);
	fake_mask = IPT_RTIT_MASK_LOW |
		    FIELD_PREP(IPT_RTIT_MASK_INDEX, index) | (u64)SZ_4K << 32;
	fake_status = 0;
}

/*
 * A PMI that read STATUS before Stopped was visible: the position alone,
 * OutputOffset at the end of the STOP entry, says the unit is at STOP;
 * the pause is timed from that PMI.
 */
static void stream_pause_from_position(struct kunit *test)
{
	struct ipt_test_session *f = fake_stream(test);
	const u64 size = 8 * SZ_4K;

	fake_start(f);
	/* at the end of an entry without STOP (region 3): not a pause */
	fake_at_entry_end(3);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, fake_captured(f), 4ULL * SZ_4K);
	/* 8 regions of one 4 KiB chunk; STOP on the last: index 7, full */
	fake_at_entry_end(7);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->t.stream.paused_tsc), 1000ULL);
	KUNIT_EXPECT_EQ(test, fake_captured(f), size);
	/* the same region end, the unit gone on to the next entry: running */
	f->t.stream.paused = false;
	f->t.stream.released = SZ_4K;
	fake_at(f, 0, false);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, fake_captured(f), size);
	irq_work_sync(&f->t.stream.work);
}

/*
 * OUTPUT_BASE and OUTPUT_MASK_PTRS are two reads: the unit may go through
 * a table's END between them, and the old base with the new index points
 * a table back.  A PMI that sees the base change announces nothing new.
 */
static void stream_pmi_torn_read(struct kunit *test)
{
	struct ipt_test_session *f = fake_stream(test);
	/* 1200 chunks of 4, 8, 16 KiB over three tables, 8 regions */
	struct ipt_buffer *buf = ipt_test_fake_buffer(test, 1200, 0, false);
	u64 rs, pos, base1, mask1;

	KUNIT_ASSERT_EQ(test, ipt_buffer_set_regions(buf, 8), 0);
	f->t.buf = buf;
	rs = buf->region_size;
	fake_start(f);
	fake_at(f, 3 * rs + 10, false);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_EQ(test, fake_captured(f), 3 * rs);
	f->t.stream.released = 3 * rs;
	/* the unit crosses into the next table between the two reads */
	pos = buf->chunks[IPT_TOPA_OUTPUTS].offset;
	ipt_topa_pos(buf, pos - 1, &base1, &mask1);
	ipt_topa_pos(buf, pos + 10, &fake_base, &fake_mask);
	fake_next_base = fake_base;
	fake_base = base1;
	fake_base_reads = 0;
	KUNIT_ASSERT_NE(test, fake_next_base, base1);
	ipt_stream_pmi(&f->t, &fake_ops);
	/*
	 * Not the old table at the new index (offset 10, which against the
	 * release position would read as a whole buffer on): still the
	 * last good announcement.
	 */
	KUNIT_EXPECT_EQ(test, fake_captured(f), 3 * rs);
	fake_next_base = 0;
	irq_work_sync(&f->t.stream.work);
}

/*
 * The PMI reads the output position with the unit stopped: bytes the unit
 * buffers internally reach memory only when TraceEn is cleared (SDM vol.
 * 3C, 33.3.3), so a position read while it runs may announce bytes that
 * are not there yet.  The unit runs again afterwards, with the same CTL.
 * A unit found off is left off; a stop that faults announces nothing.
 */
static void stream_pmi_flushes(struct kunit *test)
{
	struct ipt_test_session *f = fake_stream(test);
	const u64 rs = SZ_4K, ctl = RTIT_CTL_TRACEEN | RTIT_CTL_TOPA |
		       RTIT_CTL_BRANCH_EN;

	fake_start(f);
	fake_ctl = ctl;
	fake_at(f, 2 * rs + 100, false);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_EQ(test, fake_unflushed_reads, 0u);
	KUNIT_EXPECT_EQ(test, fake_ctl_writes, 2u);
	KUNIT_EXPECT_EQ(test, fake_ctl, ctl);
	KUNIT_EXPECT_EQ(test, fake_captured(f), 2 * rs);
	/* found off: read as it is, nothing written */
	fake_ctl = ctl & ~RTIT_CTL_TRACEEN;
	fake_ctl_writes = 0;
	fake_at(f, 3 * rs + 100, false);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_EQ(test, fake_ctl_writes, 0u);
	KUNIT_EXPECT_EQ(test, fake_captured(f), 3 * rs);
	/* the stop faults: the unit runs on, nothing new announced */
	fake_ctl = ctl;
	fake_ctl_writes = 0;
	fake_ctl_fault = 1;
	fake_at(f, 5 * rs + 100, false);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_EQ(test, fake_ctl_writes, 1u);
	KUNIT_EXPECT_EQ(test, fake_ctl, ctl);
	KUNIT_EXPECT_EQ(test, fake_captured(f), 3 * rs);
	irq_work_sync(&f->t.stream.work);
}

/*
 * A gap's size is the backend's lost-bytes count since the start; a
 * count that went back (a simulated unit reset meanwhile) is no size:
 * IPT_GAP_BYTES_UNKNOWN, not a wrapped difference, and the trace's
 * gap_bytes stays exact.
 */
static void stream_gap_lost_went_back(struct kunit *test)
{
	struct ipt_test_session *f = fake_stream(test);

	f->s.hw = &fake_lost_ops;
	fake_lost = 1000;
	fake_start(f);
	KUNIT_EXPECT_EQ(test, f->t.stream.lost_base, 1000ULL);
	/* Stopped at STOP, 300 bytes lost: a gap of 300 */
	fake_lost = 1300;
	fake_at(f, 0, true);
	fake_stop(f);
	KUNIT_ASSERT_EQ(test, f->t.stream.nr_gaps, 1ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].bytes_lost, 300ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gap_bytes, 300ULL);
	/* restarted at 1300; the count reset to 0 and 20 lost since */
	f->t.stream.released = SZ_4K;
	ipt_stream_rearm(&f->t);
	f->t.running = false;
	fake_start(f);
	fake_lost = 20;
	fake_at(f, SZ_4K, true);
	fake_stop(f);
	KUNIT_ASSERT_EQ(test, f->t.stream.nr_gaps, 2ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[1].bytes_lost,
			IPT_GAP_BYTES_UNKNOWN);
	KUNIT_EXPECT_EQ(test, f->t.stream.gap_bytes, 300ULL);
}

/*
 * A stop whose output registers are not in the buffer (written under
 * ipt): the head may not fall behind what the consumer was told of and
 * released, or bytes_valid would wrap and every later release be EINVAL.
 * It stays at the furthest of the last head, the last announcement and
 * the release; the trace is cut and the registers rebuilt there.  A stop
 * whose registers cannot be read at all (ipt_stream_stopped_lost()) does
 * the same, and closes an open pause as a gap.
 */
static void stream_stop_position_lost(struct kunit *test)
{
	struct ipt_test_session *f = fake_stream(test);
	const u64 rs = SZ_4K, size = 8 * SZ_4K;
	u64 base, mask;

	fake_start(f);
	fake_at(f, rs + 100, false);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_ASSERT_EQ(test, fake_captured(f), rs);
	/* the consumer took 100 bytes of region 0 */
	f->t.stream.released = 100;
	fake_base = 0x1000;
	fake_stop(f);
	f->t.running = false;
	KUNIT_EXPECT_EQ(test, f->t.stream.head, rs);
	KUNIT_EXPECT_EQ(test, fake_captured(f), rs);
	KUNIT_EXPECT_TRUE(test, f->t.cut);
	ipt_topa_pos(f->t.buf, rs, &base, &mask);
	KUNIT_EXPECT_EQ(test, f->t.base, base);
	KUNIT_EXPECT_EQ(test, f->t.mask, mask);
	KUNIT_EXPECT_EQ(test, f->t.status, 0ULL);

	/* paused at STOP, then registers that cannot be read */
	f = fake_stream(test);
	fake_start(f);
	fake_at(f, 0, true);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_ASSERT_TRUE(test, READ_ONCE(f->t.stream.paused));
	f->t.stream.released = 50;
	local_irq_disable();
	ipt_stream_stopped_lost(&f->t);
	local_irq_enable();
	f->t.running = false;
	KUNIT_EXPECT_EQ(test, f->t.stream.head, size);
	KUNIT_EXPECT_EQ(test, fake_captured(f), size);
	KUNIT_EXPECT_TRUE(test, f->t.cut);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, f->t.stream.nr_gaps, 1ULL);
	/* still at STOP: Stopped kept, the next release resumes it */
	KUNIT_EXPECT_EQ(test, f->t.status, RTIT_STATUS_STOPPED);
	irq_work_sync(&f->t.stream.work);
}

/* The per-CPU mode's release of @f's trace up to @released. */
static long fake_cpu_move(struct ipt_test_session *f, u64 released)
{
	long ret;

	ipt_cpus_read_lock();
	mutex_lock(&f->idev.lock);
	ret = f->s.mops->stream_move(&f->t, released);
	mutex_unlock(&f->idev.lock);
	ipt_cpus_read_unlock();
	irq_work_sync(&f->t.stream.work);
	return ret;
}

/*
 * A per-CPU release (the mode's stream_move) whose stop succeeds but
 * whose position cannot be read: the unit is off, so the release holds
 * as when the position is read: STOP moves to the new release position
 * and the unit restarts at the head kept (ipt_stream_head_lost()), the
 * trace cut; paused at STOP, the pause is a closed gap and the unit
 * restarts one region on.  A restart that fails leaves it off, the
 * release still held and the trace cut (ipt_cpu_stream_move()).
 */
static void stream_cpu_move_position_lost(struct kunit *test)
{
	struct ipt_test_session *f;
	const u64 rs = SZ_4K, size = 8 * SZ_4K;
	u64 base, mask;

	for (int paused = 0; paused < 2; paused++) {
		const u64 head = paused ? size : 2 * rs;

		f = fake_stream(test);
		f->s.hw = &fake_start_ops;
		f->s.mode = IPT_MODE_CPU;
		f->s.mops = &ipt_cpu_mode_ops;
		f->t.cpu = cpumask_first(cpu_online_mask);
		fake_start(f);
		fake_ctl = RTIT_CTL_TRACEEN;
		fake_at(f, paused ? 0 : 2 * rs + 100, paused);
		ipt_stream_pmi(&f->t, &fake_ops);
		KUNIT_ASSERT_EQ(test, fake_captured(f), head);
		KUNIT_ASSERT_EQ(test, READ_ONCE(f->t.stream.paused), (bool)paused);
		fake_base_fault = true;
		KUNIT_EXPECT_EQ(test, fake_cpu_move(f, rs), 0L);
		KUNIT_EXPECT_EQ(test, f->t.err, 0);
		KUNIT_EXPECT_EQ(test, f->t.stream.released, rs);
		KUNIT_EXPECT_TRUE(test, f->t.cut);
		KUNIT_EXPECT_EQ(test, f->t.stream.head, head);
		KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
		KUNIT_EXPECT_EQ(test, f->t.stream.nr_gaps, (u64)paused);
		check_markers(test, f->t.buf, ipt_stream_stop_region(f->t.buf, rs));
		/* restarted where the head was kept, Stopped cleared */
		KUNIT_EXPECT_TRUE(test, f->t.running);
		KUNIT_EXPECT_TRUE(test, fake_ctl & RTIT_CTL_TRACEEN);
		KUNIT_EXPECT_FALSE(test, fake_status & RTIT_STATUS_STOPPED);
		ipt_topa_pos(f->t.buf, head, &base, &mask);
		KUNIT_EXPECT_EQ(test, fake_base, base);
		KUNIT_EXPECT_EQ(test, fake_mask, mask);
	}

	/*
	 * Position read (where the restart put it), the restart's CTL write
	 * (the second) faults: off, the release held, cut by the failed
	 * restart alone.
	 */
	f->t.cut = false;
	fake_base_fault = false;
	fake_ctl_fault = 2;
	KUNIT_EXPECT_EQ(test, fake_cpu_move(f, 2 * rs), 0L);
	KUNIT_EXPECT_EQ(test, f->t.err, 0);
	KUNIT_EXPECT_EQ(test, f->t.stream.released, 2 * rs);
	KUNIT_EXPECT_TRUE(test, f->t.cut);
	check_markers(test, f->t.buf, ipt_stream_stop_region(f->t.buf, 2 * rs));
	KUNIT_EXPECT_FALSE(test, f->t.running);
	KUNIT_EXPECT_FALSE(test, fake_ctl & RTIT_CTL_TRACEEN);
}

/*
 * A per-CPU stream session stopped while its unit is paused at STOP, the
 * stop's CTL write faulting (ipt_trace_stop(), the session's stop or the
 * CPU going offline): the trace is off and cut, and its open pause is a
 * closed gap at the head, not dropped (a pause is counted only while the
 * trace runs: it would vanish from IPT_IOC_GET_GAPS's total, and a
 * consumer that had counted it would find no entry).
 */
static void stream_cpu_stop_fault_closes_pause(struct kunit *test)
{
	struct ipt_test_session *f = fake_stream(test);
	struct ipt_gaps g = { .size = sizeof(g), .entry_size = sizeof(struct ipt_gap),
			      .entries_ptr = 1, .nr_entries = 4 };
	struct ipt_ioctl_call c = { .s = &f->s, .arg = &g };
	const struct ipt_gap *e;

	f->s.hw = &fake_start_ops;
	f->s.mode = IPT_MODE_CPU;
	f->s.mops = &ipt_cpu_mode_ops;
	f->s.traces = &f->t;
	f->s.nr_traces = 1;
	f->t.cpu = cpumask_first(cpu_online_mask);
	fake_start(f);
	fake_ctl = RTIT_CTL_TRACEEN;
	fake_at(f, 0, true);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_ASSERT_EQ(test, fake_captured(f), (u64)8 * SZ_4K);
	KUNIT_ASSERT_TRUE(test, READ_ONCE(f->t.stream.paused));
	fake_now = 2500;
	fake_ctl_fault = 1;
	ipt_cpus_read_lock();
	mutex_lock(&f->idev.lock);
	f->s.mops->stop(&f->s);
	f->s.state = IPT_STATE_STOPPED;
	KUNIT_EXPECT_EQ(test, ipt_ioctl_get_gaps(&c), 0L);
	mutex_unlock(&f->idev.lock);
	ipt_cpus_read_unlock();
	irq_work_sync(&f->t.stream.work);
	KUNIT_EXPECT_FALSE(test, f->t.running);
	KUNIT_EXPECT_TRUE(test, f->t.cut);
	KUNIT_EXPECT_TRUE(test, fake_ctl & RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_ASSERT_EQ(test, f->t.stream.nr_gaps, 1ULL);
	KUNIT_EXPECT_EQ(test, g.total, 1ULL);
	KUNIT_ASSERT_EQ(test, g.nr_entries, 1U);
	e = c.data;
	KUNIT_EXPECT_EQ(test, e[0].offset, (u64)8 * SZ_4K);
	KUNIT_EXPECT_EQ(test, e[0].tsc_start, 1000ULL);
	KUNIT_EXPECT_EQ(test, e[0].tsc_end, 2500ULL);
	kfree(c.data);
}

/* ---- per-thread traces ---------------------------------------------- */

/* A thread's stream trace on the fake buffer, switched out. */
static struct ipt_test_session *fake_thread(struct kunit *test)
{
	struct ipt_test_session *f = fake_stream(test);

	f->s.hw = &fake_lost_ops;
	f->s.mode = IPT_MODE_THREAD;
	f->s.mops = &ipt_thread_mode_ops;
	f->s.state = IPT_STATE_TRACING;
	f->s.traces = &f->t;
	f->s.nr_traces = 1;
	f->s.nr_used = 1;
	seqcount_init(&f->t.th.seq);
	raw_spin_lock_init(&f->t.th.lock);
	ipt_topa_pos(f->t.buf, 0, &f->t.base, &f->t.mask);
	return f;
}

/* Switch in, as ipt_thread_load() does before TraceEn. */
static void fake_thread_in(struct ipt_test_session *f)
{
	local_irq_disable();
	raw_spin_lock(&f->t.th.lock);
	ipt_stream_thread_in(&f->t);
	f->t.running = true;
	raw_spin_unlock(&f->t.th.lock);
	local_irq_enable();
}

/* Switch out where the fake unit is, as ipt_thread_unload() does. */
static void fake_thread_out(struct ipt_test_session *f)
{
	local_irq_disable();
	raw_spin_lock(&f->t.th.lock);
	write_seqcount_begin(&f->t.th.seq);
	fake_save(f);
	ipt_stream_thread_out(&f->t, fake_out_lost);
	f->t.running = false;
	write_seqcount_end(&f->t.th.seq);
	raw_spin_unlock(&f->t.th.lock);
	local_irq_enable();
	irq_work_sync(&f->t.stream.work);
}

/*
 * A thread that paused at STOP (@lost bytes lost, at TSC @tsc), was
 * switched out and exited; the clock then at 9000.
 */
static void fake_thread_exit_paused(struct ipt_test_session *f, u64 lost, u64 tsc)
{
	fake_thread_in(f);
	fake_at(f, 0, true);
	fake_lost = lost;
	fake_now = tsc;
	fake_thread_out(f);
	f->t.th.flags = IPT_TS_EXITED;
	fake_now = 9000;
}

/* IPT_IOC_STREAM_RELEASE of @c's trace up to @released, as the ioctl takes it. */
static long fake_release(struct ipt_ioctl_call *c, u64 released)
{
	struct ipt_stream_release *r = c->arg;
	long ret;

	r->released = released;
	ipt_cpus_read_lock();
	mutex_lock(&c->s->idev->lock);
	ret = ipt_ioctl_stream_release(c);
	mutex_unlock(&c->s->idev->lock);
	ipt_cpus_read_unlock();
	return ret;
}

/*
 * A pause survives the switch: paused at STOP on one CPU, switched out
 * (Stopped saved), switched in on another, it is the same pause (its
 * start TSC kept), and the bytes lost are those of both CPUs while it ran
 * there.  Switched out, it is reported paused with the head exact.
 */
static void stream_thread_pause_survives_switch(struct kunit *test)
{
	struct ipt_test_session *f = fake_thread(test);
	const u64 size = 8 * SZ_4K;
	struct ipt_trace_state ts = {};

	fake_lost = 100;
	fake_thread_in(f);
	fake_at(f, 0, true);
	fake_now = 1500;
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	fake_lost = 150;
	fake_now = 1800;
	fake_thread_out(f);
	KUNIT_EXPECT_TRUE(test, f->t.status & RTIT_STATUS_STOPPED);
	KUNIT_EXPECT_EQ(test, f->t.stream.head, size);
	KUNIT_EXPECT_EQ(test, f->t.stream.lost, 50ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.out_tsc, 1800ULL);
	KUNIT_EXPECT_EQ(test, fake_captured(f), size);
	mutex_lock(&f->idev.lock);
	ipt_stream_fill(&f->t, &ts);
	mutex_unlock(&f->idev.lock);
	KUNIT_EXPECT_TRUE(test, ts.status & IPT_TS_PAUSED);
	KUNIT_EXPECT_EQ(test, ts.paused_tsc, 1500ULL);
	KUNIT_EXPECT_EQ(test, ts.nr_gaps, 1ULL);
	/* in on another CPU, its own lost count: the same pause */
	fake_lost = 7;
	fake_now = 2000;
	fake_thread_in(f);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->t.stream.paused_tsc), 1500ULL);
	fake_lost = 37;
	fake_thread_out(f);
	KUNIT_EXPECT_EQ(test, f->t.stream.lost, 80ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.nr_gaps, 0ULL);
}

/*
 * Not paused at a switch-out, but Stopped in what was saved (the PMI not
 * handled yet): the unload opens the pause.  A start after a stop that
 * closed the pause opens a new one at the load.
 */
static void stream_thread_pause_at_unload(struct kunit *test)
{
	struct ipt_test_session *f = fake_thread(test);

	fake_thread_in(f);
	fake_at(f, 0, true);
	fake_now = 1200;
	fake_thread_out(f);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->t.stream.paused_tsc), 1200ULL);
	/* the session stops: the pause is a gap ending at the unload */
	fake_now = 5000;
	mutex_lock(&f->idev.lock);
	raw_spin_lock_irq(&f->t.th.lock);
	ipt_stream_thread_close(&f->t);
	raw_spin_unlock_irq(&f->t.th.lock);
	mutex_unlock(&f->idev.lock);
	KUNIT_EXPECT_EQ(test, f->t.stream.nr_gaps, 1ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].tsc_start, 1200ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].tsc_end, 1200ULL);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
	/* started again, still Stopped: paused from the load */
	fake_now = 6000;
	fake_thread_in(f);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->t.stream.paused_tsc), 6000ULL);
}

/*
 * The mode's stream_move (struct ipt_mode_ops), through
 * IPT_IOC_STREAM_RELEASE: a release of a paused thread that is switched
 * out rearms it in place - STOP ahead of the release, Stopped cleared in
 * the saved STATUS, the output registers at the head - and the pause is
 * a gap with the bytes lost and the release's TSC.  A release inside a
 * region moves nothing.
 */
static void stream_thread_release_op(struct kunit *test)
{
	struct ipt_test_session *f = fake_thread(test);
	struct ipt_stream_release r = { .size = sizeof(r) };
	struct ipt_ioctl_call c = { .s = &f->s, .arg = &r };
	const u64 rs = SZ_4K, size = 8 * SZ_4K;
	u64 base, mask;
	long ret;

	fake_thread_in(f);
	fake_at(f, 0, true);
	ipt_stream_pmi(&f->t, &fake_ops);
	fake_lost = 64;
	fake_thread_out(f);
	KUNIT_EXPECT_EQ(test, f->t.buf->stop_region, 7u);
	fake_now = 3000;
	ipt_cpus_read_lock();
	mutex_lock(&f->idev.lock);
	r.released = rs / 2;
	ret = ipt_ioctl_stream_release(&c);
	KUNIT_EXPECT_EQ(test, ret, 0L);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	r.released = rs;
	ret = ipt_ioctl_stream_release(&c);
	mutex_unlock(&f->idev.lock);
	ipt_cpus_read_unlock();
	KUNIT_EXPECT_EQ(test, ret, 0L);
	KUNIT_EXPECT_EQ(test, f->t.stream.released, rs);
	KUNIT_EXPECT_EQ(test, f->t.buf->stop_region, 0u);
	KUNIT_EXPECT_FALSE(test, f->t.status & RTIT_STATUS_STOPPED);
	ipt_topa_pos(f->t.buf, size, &base, &mask);
	KUNIT_EXPECT_EQ(test, f->t.base, base);
	KUNIT_EXPECT_EQ(test, f->t.mask, mask);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_ASSERT_EQ(test, f->t.stream.nr_gaps, 1ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].offset, size);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].tsc_start, 1000ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].tsc_end, 3000ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].bytes_lost, 64ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gap_bytes, 64ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.lost, 0ULL);
	/* the next load takes the resumed state: not paused */
	fake_thread_in(f);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
}

/*
 * A thread that exited while paused: its pause ends where it was last
 * unloaded, whether a lookup closes it or a release resumes it.  Through
 * IPT_IOC_STREAM_RELEASE the lookup (ipt_thread_trace()) closes it before
 * the release; the mode's stream_move, called alone after the exit, ends
 * it itself (ipt_stream_thread_resume() with @final).
 */
static void stream_thread_exit_paused(struct kunit *test)
{
	struct ipt_test_session *f = fake_thread(test);
	struct ipt_stream_release r = { .size = sizeof(r), .released = SZ_4K };
	struct ipt_ioctl_call c = { .s = &f->s, .arg = &r };

	fake_thread_exit_paused(f, 10, 1700);
	KUNIT_EXPECT_EQ(test, fake_release(&c, SZ_4K), 0L);
	KUNIT_ASSERT_EQ(test, f->t.stream.nr_gaps, 1ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].tsc_start, 1700ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].tsc_end, 1700ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].bytes_lost, 10ULL);
	KUNIT_EXPECT_FALSE(test, f->t.status & RTIT_STATUS_STOPPED);

	/* the release's own path: no lookup closed the pause first */
	f = fake_thread(test);
	fake_thread_exit_paused(f, 20, 2500);
	ipt_cpus_read_lock();
	mutex_lock(&f->idev.lock);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, f->s.mops->stream_move(&f->t, SZ_4K), 0);
	mutex_unlock(&f->idev.lock);
	ipt_cpus_read_unlock();
	KUNIT_ASSERT_EQ(test, f->t.stream.nr_gaps, 1ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].tsc_start, 2500ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].tsc_end, 2500ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].bytes_lost, 20ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.released, (u64)SZ_4K);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
}

/*
 * A switch-out whose saved output registers are not in the buffer: as a
 * per-CPU stop (stream_stop_position_lost), the head stays at what the
 * consumer was told of and released, the trace is cut, and what the next
 * load writes back is rebuilt at the head.
 */
static void stream_thread_out_position_lost(struct kunit *test)
{
	struct ipt_test_session *f = fake_thread(test);
	const u64 rs = SZ_4K;
	u64 base, mask;

	fake_thread_in(f);
	fake_at(f, 2 * rs + 100, false);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_ASSERT_EQ(test, fake_captured(f), 2 * rs);
	f->t.stream.released = rs + 7;
	fake_base = 0x1000;
	fake_thread_out(f);
	KUNIT_EXPECT_EQ(test, f->t.stream.head, 2 * rs);
	KUNIT_EXPECT_EQ(test, fake_captured(f), 2 * rs);
	KUNIT_EXPECT_TRUE(test, f->t.cut);
	ipt_topa_pos(f->t.buf, 2 * rs, &base, &mask);
	KUNIT_EXPECT_EQ(test, f->t.base, base);
	KUNIT_EXPECT_EQ(test, f->t.mask, mask);
	KUNIT_EXPECT_EQ(test, f->t.status, 0ULL);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
}

/*
 * A switch-out whose stop faulted with TraceEn still set (or whose reads
 * of the output registers faulted) has only the registers written at load
 * (here: the load at 100, behind a PMI's announced 2 regions and a
 * release past 1): the head is not taken from them (it would fall behind
 * what was released, and bytes_valid wrap), but settled as for a lost
 * position, and the trace cut.
 */
static void stream_thread_out_stop_faulted(struct kunit *test)
{
	struct ipt_test_session *f = fake_thread(test);
	const u64 rs = SZ_4K;

	fake_at(f, 100, false);
	fake_thread_in(f);
	fake_at(f, 2 * rs + 100, false);
	ipt_stream_pmi(&f->t, &fake_ops);
	KUNIT_ASSERT_EQ(test, fake_captured(f), 2 * rs);
	f->t.stream.released = rs + 7;
	/* what the unload has: the registers of the load */
	fake_at(f, 100, false);
	fake_out_lost = true;
	fake_thread_out(f);
	KUNIT_EXPECT_EQ(test, f->t.stream.head, 2 * rs);
	KUNIT_EXPECT_GE(test, f->t.stream.head, f->t.stream.released);
	KUNIT_EXPECT_EQ(test, fake_captured(f), 2 * rs);
	KUNIT_EXPECT_TRUE(test, f->t.cut);
}

/*
 * A release that fails its argument checks on the trace of a thread that
 * exited while paused changes nothing: the pause stays open (the lookup
 * no longer closes it), no gap is recorded; the next call that succeeds
 * closes it as of the last unload, as before.
 */
static void stream_thread_exit_paused_bad_release(struct kunit *test)
{
	struct ipt_test_session *f = fake_thread(test);
	struct ipt_stream_release r = { .size = sizeof(r) };
	struct ipt_ioctl_call c = { .s = &f->s, .arg = &r };
	const u64 size = 8 * SZ_4K;
	long ret;

	fake_thread_exit_paused(f, 30, 1900);
	/* beyond what is ready */
	ret = fake_release(&c, size + 1);
	KUNIT_EXPECT_EQ(test, ret, (long)-EINVAL);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, f->t.stream.nr_gaps, 0ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.lost, 30ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.released, 0ULL);
	/* a release inside the region: the pause closed at the unload */
	ret = fake_release(&c, 100);
	KUNIT_EXPECT_EQ(test, ret, 0L);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_ASSERT_EQ(test, f->t.stream.nr_gaps, 1ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].tsc_start, 1900ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].tsc_end, 1900ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.gaps[0].bytes_lost, 30ULL);
	KUNIT_EXPECT_EQ(test, f->t.stream.released, 100ULL);
}

/*
 * A release of a thread that is on another CPU each time it is looked
 * for: the thread reads as loaded (running, on a CPU) where it is not, as
 * when it leaves that CPU between the look and the cross-CPU call every
 * time.  The release gives up with -EAGAIN after a bounded number of
 * tries instead of looping, and changes nothing: still paused, no gap,
 * STOP and the release position where they were.  Found off, the same
 * release holds.
 */
static void stream_thread_release_migrating(struct kunit *test)
{
	struct ipt_test_session *f = fake_thread(test);
	struct ipt_stream_release r = { .size = sizeof(r), .released = SZ_4K };
	struct ipt_ioctl_call c = { .s = &f->s, .arg = &r };
	long ret;

	fake_thread_in(f);
	fake_at(f, 0, true);
	ipt_stream_pmi(&f->t, &fake_ops);
	fake_thread_out(f);
	KUNIT_ASSERT_TRUE(test, READ_ONCE(f->t.stream.paused));
	/* seen running on a CPU that does not hold it, at every look */
	f->t.cpu = cpumask_first(cpu_online_mask);
	f->t.running = true;
	ret = fake_release(&c, SZ_4K);
	KUNIT_EXPECT_EQ(test, ret, (long)-EAGAIN);
	KUNIT_EXPECT_EQ(test, f->t.stream.released, 0ULL);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, f->t.stream.nr_gaps, 0ULL);
	KUNIT_EXPECT_EQ(test, f->t.buf->stop_region, 7u);
	KUNIT_EXPECT_TRUE(test, f->t.status & RTIT_STATUS_STOPPED);
	/* switched out after all: the release holds */
	f->t.running = false;
	ret = fake_release(&c, SZ_4K);
	KUNIT_EXPECT_EQ(test, ret, 0L);
	KUNIT_EXPECT_EQ(test, f->t.stream.released, (u64)SZ_4K);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(f->t.stream.paused));
	KUNIT_EXPECT_EQ(test, f->t.buf->stop_region, 0u);
}

/*
 * IPT_IOC_GET_GAPS while a pause begins: the PMI handler marks a trace
 * paused without the device lock (ipt_stream_pmi()), so the open pause
 * can become one more gap between the call's count of what it needs
 * room for and its copy.  The fake mode's settle runs that PMI (the unit
 * Stopped at STOP), in the window.  The entries stay within the room
 * counted first (before the fix, one entry was written past a
 * one-entry allocation: KASAN slab-out-of-bounds in ipt_ioctl_get_gaps,
 * debug VM, 2026-11-24; with no gap before, through a NULL pointer),
 * and total has the pause; asked again, the pause is the next entry.
 */
static struct ipt_test_session *gaps_f;

static struct ipt_trace *gaps_lookup(struct ipt_session *s, u32 idx)
{
	return idx ? NULL : &gaps_f->t;
}

static void gaps_settle_pauses(struct ipt_trace *t)
{
	fake_at(gaps_f, 0, true);
	ipt_stream_pmi(t, &fake_ops);
}

static const struct ipt_mode_ops gaps_pause_ops = {
	.trace = gaps_lookup,
	.settle = gaps_settle_pauses,
};

static long gaps_call(struct ipt_test_session *f, struct ipt_gaps *g,
		      struct ipt_ioctl_call *c)
{
	long ret;

	WRITE_ONCE(f->t.stream.paused, false);
	*c = (struct ipt_ioctl_call){ .s = &f->s, .arg = g };
	g->total = 0;
	g->oldest = 0;
	mutex_lock(&f->idev.lock);
	ret = ipt_ioctl_get_gaps(c);
	mutex_unlock(&f->idev.lock);
	irq_work_sync(&f->t.stream.work);
	return ret;
}

static void stream_get_gaps_pause_begins(struct kunit *test)
{
	struct ipt_test_session *f = fake_stream(test);
	struct ipt_gaps g = { .size = sizeof(g), .entry_size = sizeof(struct ipt_gap),
			      .entries_ptr = 1, .nr_entries = 8 };
	struct ipt_ioctl_call c;
	const struct ipt_gap *e;

	gaps_f = f;
	f->s.mops = &gaps_pause_ops;
	f->s.mode = IPT_MODE_CPU;
	f->s.state = IPT_STATE_TRACING;
	f->t.running = true;
	/* no gap yet: nothing to copy, the pause only counted */
	KUNIT_ASSERT_EQ(test, gaps_call(f, &g, &c), 0L);
	KUNIT_EXPECT_EQ(test, g.total, 1ULL);
	KUNIT_EXPECT_EQ(test, g.nr_entries, 0U);
	KUNIT_EXPECT_EQ(test, c.data_len, 0U);
	kfree(c.data);
	/* one closed gap, room for 8: that one; the pause in total */
	f->t.stream.nr_gaps = 1;
	f->t.stream.gaps[0] = (struct ipt_gap){ .offset = SZ_4K, .tsc_start = 10,
						.tsc_end = 20, .bytes_lost = 7 };
	g.nr_entries = 8;
	KUNIT_ASSERT_EQ(test, gaps_call(f, &g, &c), 0L);
	KUNIT_EXPECT_EQ(test, g.total, 2ULL);
	KUNIT_EXPECT_EQ(test, g.nr_entries, 1U);
	KUNIT_ASSERT_EQ(test, c.data_len, 1U);
	e = c.data;
	KUNIT_EXPECT_EQ(test, e[0].offset, (u64)SZ_4K);
	KUNIT_EXPECT_EQ(test, e[0].tsc_end, 20ULL);
	kfree(c.data);
	/* asked again from there, the unit paused already: the open pause */
	g.first = 1;
	g.nr_entries = 8;
	c = (struct ipt_ioctl_call){ .s = &f->s, .arg = &g };
	g.total = 0;
	mutex_lock(&f->idev.lock);
	KUNIT_ASSERT_EQ(test, ipt_ioctl_get_gaps(&c), 0L);
	mutex_unlock(&f->idev.lock);
	irq_work_sync(&f->t.stream.work);
	KUNIT_EXPECT_EQ(test, g.total, 2ULL);
	KUNIT_EXPECT_EQ(test, g.nr_entries, 1U);
	KUNIT_ASSERT_EQ(test, c.data_len, 1U);
	e = c.data;
	KUNIT_EXPECT_EQ(test, e[0].offset, (u64)8 * SZ_4K);
	KUNIT_EXPECT_EQ(test, e[0].tsc_start, fake_now);
	KUNIT_EXPECT_EQ(test, e[0].tsc_end, 0ULL);
	KUNIT_EXPECT_EQ(test, e[0].bytes_lost, IPT_GAP_BYTES_UNKNOWN);
	kfree(c.data);
	gaps_f = NULL;
}

static struct kunit_case stream_cases[] = {
	KUNIT_CASE(stream_check_fields),
	KUNIT_CASE(stream_regions),
	KUNIT_CASE(stream_stop_region),
	KUNIT_CASE(stream_topa_pos),
	KUNIT_CASE(stream_position),
	KUNIT_CASE(stream_pmi_position),
	KUNIT_CASE(stream_resume_after_late_pmi),
	KUNIT_CASE(stream_pause_from_position),
	KUNIT_CASE(stream_pmi_torn_read),
	KUNIT_CASE(stream_pmi_flushes),
	KUNIT_CASE(stream_gap_lost_went_back),
	KUNIT_CASE(stream_stop_position_lost),
	KUNIT_CASE(stream_cpu_move_position_lost),
	KUNIT_CASE(stream_thread_pause_survives_switch),
	KUNIT_CASE(stream_thread_pause_at_unload),
	KUNIT_CASE(stream_thread_release_op),
	KUNIT_CASE(stream_thread_exit_paused),
	KUNIT_CASE(stream_thread_release_migrating),
	KUNIT_CASE(stream_thread_exit_paused_bad_release),
	KUNIT_CASE(stream_thread_out_position_lost),
	KUNIT_CASE(stream_thread_out_stop_faulted),
	KUNIT_CASE(stream_get_gaps_pause_begins),
	KUNIT_CASE(stream_cpu_stop_fault_closes_pause),
	{}
};

static struct kunit_suite stream_suite = {
	.name = "ipt_stream",
	.test_cases = stream_cases,
};

kunit_test_suites(&stream_suite);

// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: streaming (IPT_BUFFER_STREAM) - a buffer split into regions that
 * the consumer hands back, a STOP marker kept ahead of what it has not
 * handed back, and a record of every pause of the unit (a gap).
 *
 * Positions are stream positions: bytes since configure.  The consumer's
 * tail is @released; the unit's head is known exactly whenever the unit
 * is off (a stop, a release that moves STOP) and, while it runs, to the
 * last region end the PMI handler saw it past.  The handler reads where
 * the unit is rather than counting PMIs: ToPA PMIs are one status bit,
 * and regions that end before the handler clears it raise one PMI
 * between them (SDM vol. 3C, 33.2.7.2: the PMI is raised "before or just
 * after" the region is filled; IA32_PERF_GLOBAL_STATUS bit 55 is a flag,
 * not a count).  INT is on the last ToPA entry of
 * every region; STOP (with INT) on the last entry of the region before
 * the one holding the oldest unreleased byte, so the unit can fill
 * everything up to the consumer's data and never over it.  Reaching STOP
 * sets IA32_RTIT_STATUS.Stopped (SDM vol. 3C, 33.2.7.2: "when the output
 * region with STOP set is filled, ... sets PacketByteCnt ... Stopped, and
 * clears TriggerEn"): the PMI handler marks the trace paused and times
 * it; the release that makes room moves STOP on the trace's CPU with the
 * unit off, clears Stopped (a STATUS write needs TraceEn = 0, 33.2.8.4)
 * and restarts it one region on (the unit begins again with PSB+), and
 * records the gap.  Linux 6.1's perf moves its markers the same way, in
 * its PMI with the unit stopped (pt_buffer_reset_markers(),
 * arch/x86/events/intel/pt.c:1085-1150, called from intel_pt_interrupt()
 * 1490-1530), but when it has no room it leaves the event stopped until
 * the next sched-in and never says how long: ipt times every pause.
 *
 * NMI rules: the PMI handler only accesses MSRs (it stops the unit to
 * read where it is and re-enables it, ipt_stream_pmi()), writes @paused,
 * @paused_tsc and @announced with WRITE_ONCE and queues the trace's irq_work, which
 * wakes the pollers in hard-interrupt context.  No lock, no sleep there.
 *
 * See Documentation/design.rst ("Streaming") and abi.rst.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/irq_work.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <asm/msr.h>
#include <kunit/visibility.h>

#include "ipt_session.h"

/**
 * ipt_stream_check() - the streaming fields of a configuration, alone
 * @cfg: the configuration, as copied from userspace
 * @nr: receives the number of regions (0: not a stream)
 *
 * nr_regions without IPT_BUFFER_STREAM, IPT_BUFFER_STREAM with
 * IPT_BUFFER_STOP_ON_FULL, a region count that is not a power of two in
 * IPT_STREAM_MIN_REGIONS..IPT_STREAM_MAX_REGIONS, a buffer that does not
 * split into regions of whole 4 KiB pages, and exact chunks larger than
 * the largest power of two dividing the region size (a region must end
 * on a ToPA entry) are EINVAL.  Both modes stream: a thread's trace
 * carries its markers in its own ToPA tables, which follow it from CPU to
 * CPU (see "per-thread traces" below).
 *
 * Context: any; a pure function of @cfg.
 * Return: 0 or -EINVAL.
 */
int ipt_stream_check(const struct ipt_config *cfg, unsigned int *nr)
{
	unsigned int n = cfg->nr_regions ?: IPT_STREAM_DEF_REGIONS;
	u64 rsize;

	*nr = 0;
	if (!(cfg->buffer_flags & IPT_BUFFER_STREAM))
		return cfg->nr_regions ? -EINVAL : 0;
	if (cfg->buffer_flags & IPT_BUFFER_STOP_ON_FULL)
		return -EINVAL;
	if (!is_power_of_2(n) || n < IPT_STREAM_MIN_REGIONS ||
	    n > IPT_STREAM_MAX_REGIONS)
		return -EINVAL;
	if (!cfg->buffer_size || cfg->buffer_size % ((u64)n * SZ_4K))
		return -EINVAL;
	rsize = cfg->buffer_size / n;
	if ((cfg->buffer_flags & IPT_BUFFER_EXACT_CHUNKS) && cfg->chunk_order &&
	    BIT_ULL(cfg->chunk_order) > (rsize & -rsize))
		return -EINVAL;
	*nr = n;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_check);

/**
 * ipt_stream_position() - the stream position of the unit's output offset
 * @size: the buffer's size
 * @region_size: its region size
 * @released: the consumer's release position
 * @off: the buffer offset of the next byte (0..@size)
 * @full: the unit is Stopped at STOP
 *
 * STOP keeps the head within one buffer of the start of the region holding
 * @released, and the head is never behind @released: the head is the one
 * position in (floor, floor + @size] - or floor itself when nothing was
 * written since - at @off modulo @size.  The two ends meet at the same
 * offset: @full (the unit stopped at STOP) says which it is.
 *
 * Context: any; a pure function.
 * Return: the stream position.
 */
u64 ipt_stream_position(u64 size, u64 region_size, u64 released, u64 off,
			bool full)
{
	u64 floor = released - released % region_size;
	u64 p = floor + (off % size + size - floor % size) % size;

	if (p == floor && full)
		p += size;
	return p;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_position);

/**
 * ipt_stream_stop_region() - the region whose end gets STOP
 * @buf: the stream buffer
 * @released: the consumer's release position
 *
 * The one before the region holding @released (its oldest unreleased
 * byte, or where the next byte goes when everything was released).
 *
 * Context: any; a pure function.
 * Return: the region index.
 */
unsigned int ipt_stream_stop_region(const struct ipt_buffer *buf,
				    u64 released)
{
	u64 r = released / buf->region_size;

	return (r + buf->nr_regions - 1) % buf->nr_regions;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_stop_region);

/**
 * ipt_stream_alloc() - the gap records of a stream trace
 * @t: the trace, not yet installed
 *
 * Context: process context, the configuring caller (charged).
 * Return: 0 or -ENOMEM.
 */
int ipt_stream_alloc(struct ipt_trace *t)
{
	t->stream.gaps = kcalloc(IPT_STREAM_GAPS, sizeof(*t->stream.gaps),
				 IPT_GFP_ACCOUNT);
	return t->stream.gaps ? 0 : -ENOMEM;
}

/**
 * ipt_stream_free() - free what ipt_stream_alloc() allocated
 * @t: the trace; its irq_work idle (ipt_stream_sync())
 *
 * Context: process context.
 */
void ipt_stream_free(struct ipt_trace *t)
{
	kfree(t->stream.gaps);
	t->stream.gaps = NULL;
}

static void ipt_stream_wake(struct irq_work *work)
{
	struct ipt_trace *t = container_of(work, struct ipt_trace,
					   stream.work);

	wake_up_all(&t->s->wq);
}

/**
 * ipt_stream_install() - ready a stream trace for its session
 * @t: the trace, @t->s set
 *
 * Context: device lock held; before the PMI handler can see @t.
 */
void ipt_stream_install(struct ipt_trace *t)
{
	lockdep_assert_held(&t->s->idev->lock);
	init_irq_work(&t->stream.work, ipt_stream_wake);
}

/**
 * ipt_stream_sync() - wait for the irq_work of a session's traces
 * @s: a stream session whose PMI handler is released
 *
 * Context: process context, may sleep; device lock held.
 */
void ipt_stream_sync(struct ipt_session *s)
{
	unsigned int i;

	lockdep_assert_held(&s->idev->lock);
	for (i = 0; s->stream && i < s->nr_traces; i++)
		irq_work_sync(&s->traces[i].stream.work);
}

/* The unit's clock, as its TSC packets carry it.  Any context. */
static u64 ipt_stream_tsc(const struct ipt_hw_ops *hw)
{
	return hw->tsc ? hw->tsc() : rdtsc_ordered();
}

/*
 * Is a pause of @st open?  Acquire, pairing with the release that marks
 * it after its @paused_tsc is written (the PMI, a thread's load or
 * unload, a start), so that @paused_tsc read after a true answer is that
 * pause's on any CPU.  x86 keeps stores in order and loads in order
 * (SDM vol. 3A 9.2.2, "Memory Ordering in P6 and More Recent Processor
 * Families"), where both compile to plain moves; the pairing says what
 * READ_ONCE and WRITE_ONCE alone leave to the architecture
 * (Documentation/memory-barriers.txt, "ACQUIRE operations").  Any context.
 */
static bool ipt_stream_pause_begun(const struct ipt_stream *st)
{
	/* pairs with the release that opens a pause */
	return smp_load_acquire(&st->paused);
}

/*
 * Where the unit is: the buffer offset of the last region end it passed
 * (0 .. size - 1), plus the buffer size when it is Stopped at STOP (its
 * offset then is STOP's, the floor's); IPT_STREAM_NONE when the output
 * registers do not point into @t's buffer, or OUTPUT_BASE changed while
 * they were read (the unit went through a table's END in between: the
 * pair would point a table back).  ipt_stream_pmi() reads it with the
 * unit stopped, when every byte before it is in memory.
 * Stopped is @stopped (STATUS), or the position itself: a unit that
 * fills a region's last entry moves on to the next entry at offset 0
 * unless that entry has STOP, where OutputOffset stays at the entry's
 * size (SDM vol. 3C, 33.2.7.2; ipt_stream_rearm(); Linux 6.1's perf
 * reads a STOP hit the same way, arch/x86/events/intel/pt.c:915-929) -
 * so a STATUS read before Stopped became visible still sees the pause.
 * Context: the PMI handler (NMI natively), on @t's CPU: MSR reads only.
 */
static u64 ipt_stream_where(const struct ipt_trace *t,
			    const struct ipt_hw_ops *hw, bool *stopped)
{
	const struct ipt_buffer *buf = t->buf;
	u64 stop_end = (u64)(READ_ONCE(buf->stop_region) + 1) *
		       buf->region_size;
	u64 base, mask, again, off;

	if (hw->read_msr(MSR_IA32_RTIT_OUTPUT_BASE, &base) ||
	    hw->read_msr(MSR_IA32_RTIT_OUTPUT_MASK, &mask) ||
	    hw->read_msr(MSR_IA32_RTIT_OUTPUT_BASE, &again) ||
	    again != base || ipt_topa_offset(buf, base, mask, &off))
		return IPT_STREAM_NONE;
	if ((mask >> 32) && off == stop_end)
		*stopped = true;
	off %= buf->size;
	off -= off % buf->region_size;
	return *stopped ? off + buf->size : off;
}

/**
 * ipt_stream_pmi() - a PMI of a stream trace: a region ended
 * @t: the trace this CPU counts PMIs for
 * @hw: the backend
 *
 * Announces where the unit is (@t->stream.announced), one or more
 * regions on; a position it cannot read leaves the last announcement
 * (which is behind the unit, never ahead), so that the ready position
 * never goes back below what the consumer may have released.  A unit
 * that reached STOP (STATUS.Stopped, or its output position at STOP's
 * end) is paused from now, until a release makes room.  The pollers are
 * woken either way.
 *
 * The unit is stopped around the read, as Linux 6.1's perf does in its
 * PMI (intel_pt_interrupt() calls pt_config_stop() before
 * pt_read_offset(), arch/x86/events/intel/pt.c:1495-1501): "packets are
 * first buffered internally and then written out asynchronously", and
 * only clearing TraceEn flushes them to memory (SDM vol. 3C, 33.3.3
 * "Flushing Trace Output"; TraceEn in the IA32_RTIT_CTL table of
 * 33.2.8.2: "when this bit transitions from 1 to 0, all buffered packets
 * are flushed out of internal buffers").  OutputOffset read while the
 * unit runs may count bytes that are not in memory yet; after the stop
 * every byte up to it is.  The unit is re-enabled at once with the same
 * CTL (PacketByteCnt is kept, so no PSB+, only timing packets: SDM table
 * "packet generation on TraceEn transitions"); a Stopped unit stays
 * Stopped.  A unit found off (a cross-CPU call stopped it, this NMI
 * interrupting it; VMXON cleared it) is left off: its position is final.
 * A stop that faults announces nothing new.  A restart that faults
 * leaves the unit off: the next stop finds TraceEn clear and cuts the
 * trace (ipt_trace_stop_on_cpu()); a thread's unload on the MSR path,
 * which writes CTL without reading it first, learns it from
 * @t->stream.restart_failed (ipt_stream_thread_out()).  A barrier orders the flushed bytes
 * before the announcement, as pt_config_stop() does (pt.c:555-563).  A
 * trace not running here is left alone: the handler already returned
 * for a unit that is not ipt's (ipt_own_here()), and a trace ipt is not
 * tracing into now has its position settled by its stop.  Cost: one RDMSR
 * and two WRMSRs of IA32_RTIT_CTL per PMI, one PMI per region at most.
 *
 * Context: the PMI handler (NMI natively), on @t's CPU.
 */
void ipt_stream_pmi(struct ipt_trace *t, const struct ipt_hw_ops *hw)
{
	struct ipt_stream *st = &t->stream;
	bool stopped = false, on, flushed;
	u64 ctl, status, where;
	int ret;

	/*
	 * Not tracing into @t here (not started yet, stopped, or the unit
	 * another owner's): nothing of @t's to announce, and the unit's
	 * registers are not @t's to touch.  Its stop settles its position.
	 */
	if (!READ_ONCE(t->running))
		return;
	ret = hw->read_msr(MSR_IA32_RTIT_CTL, &ctl);
	on = !ret && (ctl & RTIT_CTL_TRACEEN);
	/* A CTL that cannot be read says nothing of a flush. */
	flushed = !ret && (!on || !hw->write_msr(MSR_IA32_RTIT_CTL,
						  ctl & ~RTIT_CTL_TRACEEN));
	if (flushed)
		wmb();	/* flushed bytes before @announced, as pt.c:555-563 */
	if (!hw->read_msr(MSR_IA32_RTIT_STATUS, &status))
		stopped = status & RTIT_STATUS_STOPPED;
	where = ipt_stream_where(t, hw, &stopped);
	if (on && flushed && hw->write_msr(MSR_IA32_RTIT_CTL, ctl))
		WRITE_ONCE(st->restart_failed, true);
	if (where != IPT_STREAM_NONE && flushed)
		WRITE_ONCE(st->announced, where);
	/* The position before the pause: ipt_stream_fill() reads them back. */
	smp_wmb();
	if (stopped && !READ_ONCE(st->paused)) {
		WRITE_ONCE(st->paused_tsc, ipt_stream_tsc(hw));
		/* after @paused_tsc: ipt_stream_pause_begun() acquires */
		smp_store_release(&st->paused, true);
	}
	irq_work_queue(&st->work);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_pmi);

/**
 * ipt_stream_started_here() - the unit is about to trace into @t
 * @t: a stream trace, its registers written but TraceEn not yet set
 *
 * Takes the backend's lost-bytes count, from which the next gap's size
 * is counted; a trace still Stopped (it stopped paused, nothing was
 * released since) starts paused, any other starts running.  Paused is
 * set from the STATUS value just written, either way: between the stop
 * (ipt_stream_stopped_here() clears it) and that write the unit's
 * Stopped bit was still set, and a PMI handled then may have marked the
 * trace paused.
 *
 * Context: cross-CPU call on @t's CPU, interrupts off; the caller holds
 * the device lock and waits.
 */
void ipt_stream_started_here(struct ipt_trace *t)
{
	const struct ipt_hw_ops *hw = t->s->hw;
	/* As ipt_trace_start_on_cpu() wrote it. */
	bool stopped = t->status & t->s->hwcfg.status_keep &
		       RTIT_STATUS_STOPPED;

	lockdep_assert_irqs_disabled();
	/* Announced from here on: never behind @head. */
	WRITE_ONCE(t->stream.announced, IPT_STREAM_NONE);
	WRITE_ONCE(t->stream.restart_failed, false);
	t->stream.lost_base = hw->lost_bytes ? hw->lost_bytes() : 0;
	if (stopped)
		WRITE_ONCE(t->stream.paused_tsc, ipt_stream_tsc(hw));
	/* after @paused_tsc: ipt_stream_pause_begun() acquires */
	smp_store_release(&t->stream.paused, stopped);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_started_here);

/*
 * The bytes the backend's count says the unit could not write since
 * @base, or IPT_GAP_BYTES_UNKNOWN: no count, or one that went back (the
 * backend was reset), which says nothing.  Context: on the unit's CPU,
 * interrupts off.
 */
static u64 ipt_stream_lost_since(const struct ipt_hw_ops *hw, u64 base)
{
	u64 lost;

	if (!hw->lost_bytes)
		return IPT_GAP_BYTES_UNKNOWN;
	lost = hw->lost_bytes();
	return lost >= base ? lost - base : IPT_GAP_BYTES_UNKNOWN;
}

/*
 * Append a closed gap: at stream position @offset, from @start to @end,
 * @lost bytes (IPT_GAP_BYTES_UNKNOWN: not counted by the backend).
 * Context: the device lock held by the caller (or by the one a cross-CPU
 * call runs for); the unit writing into @t off.
 */
static void ipt_stream_gap_add(struct ipt_trace *t, u64 offset, u64 start,
			       u64 end, u64 lost)
{
	struct ipt_stream *st = &t->stream;
	struct ipt_gap *g = &st->gaps[st->nr_gaps % IPT_STREAM_GAPS];

	memset(g, 0, sizeof(*g));
	g->offset = offset;
	g->tsc_start = start;
	g->tsc_end = end;
	g->cpu = t->cpu;
	g->bytes_lost = lost;
	if (lost != IPT_GAP_BYTES_UNKNOWN)
		st->gap_bytes += lost;
	st->nr_gaps++;
}

/*
 * Record the pause that ends now, at stream position @offset.
 * Context: cross-CPU call on @t's CPU with the unit off, interrupts off
 * (ipt_stream_stopped_here()); the caller holds the device lock and waits.
 */
static void ipt_stream_gap(struct ipt_trace *t, u64 offset)
{
	const struct ipt_hw_ops *hw = t->s->hw;
	struct ipt_stream *st = &t->stream;
	u64 now = ipt_stream_tsc(hw);

	lockdep_assert_irqs_disabled();
	/* A PMI not handled yet: the pause began before now, timed now. */
	ipt_stream_gap_add(t, offset,
			   ipt_stream_pause_begun(st) ? READ_ONCE(st->paused_tsc) : now,
			   now, ipt_stream_lost_since(hw, st->lost_base));
}

/*
 * Where a stream trace whose unit's position cannot be read stands: the
 * unit is off, but its output registers are not in @t's buffer (someone
 * wrote them under ipt) or could not be read.  Nothing past what was
 * known is known to be in the buffer, and nothing before it may be taken
 * back: the head is the furthest of the last settled head, the last
 * position a PMI announced (flushed, ipt_stream_pmi()) and the release
 * position (the consumer had all before it).  So the ready position
 * never goes back, @released stays within it.  The trace is cut
 * (IPT_TS_CUT): the bytes the unit wrote after that are lost.  The saved
 * registers are rebuilt at the head, so that a restart or load writes
 * into @t's buffer and nowhere else, Stopped (and waiting for a release)
 * if the head is a whole buffer past the start of the region holding
 * @released, with PacketByteCnt 0 for a PSB+.  Context: the unit off
 * (or one whose final stop faulted, taken as off from then on: the trace
 * no longer runs, so no PMI reopens a pause, ipt_trace_stop_final_on_cpu()),
 * interrupts off; the caller holds the device lock (or waits for the
 * cross-CPU call that runs this), or for a thread &@t->th.lock.
 * Return: the new head.
 */
static u64 ipt_stream_head_lost(struct ipt_trace *t)
{
	const struct ipt_buffer *buf = t->buf;
	struct ipt_stream *st = &t->stream;
	u64 released = READ_ONCE(st->released), a = READ_ONCE(st->announced);
	u64 head = max(st->head, released);
	u64 floor = released - released % buf->region_size;

	if (a != IPT_STREAM_NONE)
		head = max(head, ipt_stream_position(buf->size, buf->region_size,
						     released, a % buf->size,
						     a >= buf->size));
	ipt_topa_pos(buf, head, &t->base, &t->mask);
	t->status = head - floor == buf->size ? RTIT_STATUS_STOPPED : 0;
	t->cut = true;
	return head;
}

/**
 * ipt_stream_stopped_lost() - the unit stopped tracing into @t, and where
 * it stopped cannot be read (an MSR read faulted)
 * @t: a stream trace
 *
 * As ipt_stream_stopped_here() with a position not in the buffer: the
 * head stays at what was known (ipt_stream_head_lost()), the trace is
 * cut, and a pause that was open is a closed gap.
 *
 * Context: cross-CPU call on @t's CPU, interrupts off; the caller holds
 * the device lock and waits.
 */
void ipt_stream_stopped_lost(struct ipt_trace *t)
{
	struct ipt_stream *st = &t->stream;

	lockdep_assert_irqs_disabled();
	st->head = ipt_stream_head_lost(t);
	WRITE_ONCE(st->announced, IPT_STREAM_NONE);
	if (READ_ONCE(st->paused))
		ipt_stream_gap(t, st->head);
	WRITE_ONCE(st->paused, false);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_stopped_lost);

/**
 * ipt_stream_stopped_here() - the unit stopped tracing into @t
 * @t: a stream trace; @t->base, @t->mask and @t->status just read with
 *     TraceEn = 0
 *
 * Settles the head; a unit Stopped at STOP ends a pause here: the gap is
 * recorded, with the bytes the backend counts as lost since the start or
 * resume (the count no longer moves with TraceEn = 0).  Output registers
 * not in the buffer (written under ipt) say nothing of where the unit
 * is: ipt_stream_stopped_lost().
 *
 * Context: cross-CPU call on @t's CPU, interrupts off; the caller holds
 * the device lock and waits.
 */
void ipt_stream_stopped_here(struct ipt_trace *t)
{
	struct ipt_stream *st = &t->stream;
	bool full = t->status & RTIT_STATUS_STOPPED;
	u64 off;

	lockdep_assert_irqs_disabled();
	if (ipt_topa_offset(t->buf, t->base, t->mask, &off)) {
		ipt_stream_stopped_lost(t);
		return;
	}
	st->head = ipt_stream_position(t->buf->size, t->buf->region_size,
				       st->released, off, full);
	/* A PMI announced a position behind @head, or none: forget it. */
	WRITE_ONCE(st->announced, IPT_STREAM_NONE);
	if (full)
		ipt_stream_gap(t, st->head);
	WRITE_ONCE(st->paused, false);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_stopped_here);

/**
 * ipt_stream_rearm() - move STOP to where @t->stream.released says
 * @t: a stream trace whose unit is off
 *
 * A trace Stopped at STOP goes on at its head, the start of the next
 * region (an OutputOffset equal to the region size is an operational
 * error when not Stopped), with Stopped cleared for the next start and
 * PacketByteCnt zeroed, so that the unit begins again with a full PSB+
 * (SDM vol. 3C, table "packet generation on TraceEn transitions": an
 * enable with PacketByteCnt = 0 writes PSB+), where a decoder resyncs
 * after the gap.
 *
 * Context: the unit writing into @t is off; device lock held (in a
 * cross-CPU call the caller holds it and waits).
 */
void ipt_stream_rearm(struct ipt_trace *t)
{
	struct ipt_buffer *buf = t->buf;

	ipt_topa_move_stop(buf, ipt_stream_stop_region(buf,
						       t->stream.released));
	if (t->status & RTIT_STATUS_STOPPED) {
		t->status &= ~(RTIT_STATUS_STOPPED | RTIT_STATUS_BYTECNT);
		ipt_topa_pos(buf, t->stream.head, &t->base, &t->mask);
	}
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_rearm);

/**
 * ipt_stream_captured() - the stream position up to which data is ready
 * @t: a stream trace
 *
 * Exact while the unit is off; while it runs, the last region end the
 * PMI handler saw it past, or the head the last start began at.  The
 * handler announces a buffer offset; its stream position is unique: it
 * is at or after @head and @released (announcements before the unit last
 * started are forgotten, and a release never passes this position), and
 * the unit cannot pass STOP, one buffer after the start of the region
 * holding @released (ipt_stream_position()).  Paused at STOP, that is
 * exactly where it is.
 *
 * Context: device lock held.
 * Return: the position.
 */
u64 ipt_stream_captured(const struct ipt_trace *t)
{
	const struct ipt_buffer *buf = t->buf;
	const struct ipt_stream *st = &t->stream;
	u64 a = READ_ONCE(st->announced), head = st->head;
	bool running = t->running;
	unsigned int seq;

	lockdep_assert_held(&t->s->idev->lock);
	/*
	 * A thread's loads and unloads move @head and @running without the
	 * device lock: one snapshot.  An announcement read before it is from
	 * this load or a later one: a position the unit passed, at or after
	 * this @head.
	 */
	while (t->s->mode == IPT_MODE_THREAD) {
		seq = read_seqcount_begin(&t->th.seq);
		running = t->running;
		head = st->head;
		if (!read_seqcount_retry(&t->th.seq, seq))
			break;
	}
	if (!running || a == IPT_STREAM_NONE)
		return head;
	return max(head,
		   ipt_stream_position(buf->size, buf->region_size,
				       st->released, a % buf->size,
				       a >= buf->size));
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_captured);

/*
 * The open pause of a running trace, or of a thread's trace, whose pause
 * lasts across its switches (ipt_stream_thread_out()).  Device lock held.
 */
static bool ipt_stream_paused(const struct ipt_trace *t)
{
	return (READ_ONCE(t->running) || t->s->mode == IPT_MODE_THREAD) &&
	       ipt_stream_pause_begun(&t->stream);
}

/**
 * ipt_stream_fill() - the streaming part of IPT_IOC_GET_TRACE
 * @t: a stream trace
 * @ts: its state, the position filled by ipt_pos_fill()
 *
 * The ring's view of the position is replaced by the stream's: head and
 * bytes_captured the ready position, oldest and bytes_valid the
 * unreleased data, wrap_count the buffer laps; never WRAPPED or FULL.
 *
 * Context: device lock held.
 */
void ipt_stream_fill(const struct ipt_trace *t, struct ipt_trace_state *ts)
{
	const struct ipt_stream *st = &t->stream;
	bool paused = ipt_stream_paused(t);
	u64 size = t->buf->size, cap;

	/*
	 * The pause before the position: a PMI announces where the unit is
	 * before it marks the pause (ipt_stream_pmi()), so a pause read here
	 * comes with the position at STOP, never with an older one.
	 */
	smp_rmb();
	cap = ipt_stream_captured(t);
	ts->status &= ~(IPT_TS_WRAPPED | IPT_TS_FULL);
	ts->status |= IPT_TS_STREAM;
	ts->bytes_captured = cap;
	ts->head = cap % size;
	ts->wrap_count = cap / size;
	ts->oldest = st->released % size;
	ts->bytes_valid = cap - st->released;
	ts->bytes_lost = 0;
	ts->released = st->released;
	ts->region_size = t->buf->region_size;
	ts->nr_gaps = st->nr_gaps;
	ts->gap_bytes = st->gap_bytes;
	if (paused) {
		ts->status |= IPT_TS_PAUSED;
		ts->paused_tsc = READ_ONCE(st->paused_tsc);
		ts->nr_gaps++;
	}
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_fill);

/* ---- per-thread traces ------------------------------------------------ */

/*
 * A thread's trace is loaded on whichever CPU the thread runs on, and its
 * STOP and INT markers are in its own ToPA tables: they go with it.  What
 * the unit says at a switch-out is saved with the thread, as Linux 6.1's
 * perf keeps a per-task event's AUX position across sched out and in:
 * pt_event_del() stops the unit and reads its offset (pt_event_stop()
 * with PERF_EF_UPDATE), pt_event_add() reprograms the buffer and resets
 * the markers at the next sched-in (pt_event_start()),
 * arch/x86/events/intel/pt.c:1571-1639 and 1686-1710.  Unlike perf, whose
 * start leaves an event with no room stopped (PERF_HES_STOPPED,
 * pt.c:1577-1578, 1597-1598) until a later sched-in finds some, and never
 * says for how long, a pause at STOP here
 * is kept in the saved IA32_RTIT_STATUS (Stopped is among the STATUS bits
 * a load writes back, SDM vol. 3C, 33.2.7.2: Stopped "is set by the
 * processor" and "cleared by software"), stays timed across switches and
 * CPUs, and ends only when a release makes room or the thread ends.  Its
 * lost bytes are the backend's count over each stretch the thread ran
 * Stopped, on whichever CPU (@lost).
 */

/**
 * ipt_stream_thread_in() - a thread's stream trace is being loaded here
 * @t: the trace; its saved registers about to be written, TraceEn not set
 *
 * From here the PMI handler of this CPU announces for @t; the backend's
 * lost-bytes count of this CPU is taken; a trace saved Stopped with no
 * pause open (its session was stopped and started again) opens one now.
 *
 * Context: interrupts off, on the CPU, &@t->th.lock held.
 */
void ipt_stream_thread_in(struct ipt_trace *t)
{
	const struct ipt_hw_ops *hw = t->s->hw;
	struct ipt_stream *st = &t->stream;

	lockdep_assert_irqs_disabled();
	lockdep_assert_held(&t->th.lock);
	WRITE_ONCE(st->announced, IPT_STREAM_NONE);
	WRITE_ONCE(st->restart_failed, false);
	st->lost_base = hw->lost_bytes ? hw->lost_bytes() : 0;
	if ((t->status & t->s->hwcfg.status_keep & RTIT_STATUS_STOPPED) &&
	    !READ_ONCE(st->paused)) {
		WRITE_ONCE(st->paused_tsc, ipt_stream_tsc(hw));
		/* after @paused_tsc: ipt_stream_pause_begun() acquires */
		smp_store_release(&st->paused, true);
	}
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_thread_in);

/**
 * ipt_stream_thread_out() - a thread's stream trace was unloaded here
 * @t: the trace; @t->base, @t->mask and @t->status just saved with
 *     TraceEn = 0, the PMI of this CPU settled
 * @lost: the position could not be saved (the stop faulted with TraceEn
 *     still set, or a read of the output registers faulted): the head is
 *     settled as for saved registers not in the buffer
 *
 * Settles the head, as at a per-CPU stop; a unit Stopped at STOP stays
 * paused (opened here if no PMI said so yet), and what this CPU lost for
 * it is added to @lost.  Saved output registers not in the buffer
 * (written under ipt) leave the head at what was known, the saved
 * registers rebuilt there and the trace cut (ipt_stream_head_lost()).  A
 * unit the PMI handler could not re-enable (@restart_failed) was off
 * since: the trace is cut (IPT_TS_CUT), as a per-CPU stop that finds
 * TraceEn clear cuts it.  Wakes the pollers when
 * a region ended or the unit is paused: the thread may not run again for
 * a long time.
 *
 * Context: interrupts off, on the CPU, &@t->th.lock held, inside
 * @t->th.seq.
 * Return: true if the saved registers were rebuilt (the position lost).
 */
bool ipt_stream_thread_out(struct ipt_trace *t, bool lost)
{
	const struct ipt_hw_ops *hw = t->s->hw;
	const struct ipt_buffer *buf = t->buf;
	struct ipt_stream *st = &t->stream;
	bool full = t->status & RTIT_STATUS_STOPPED, known;
	u64 off, old = st->head, now = ipt_stream_tsc(hw), lost_bytes;

	lockdep_assert_irqs_disabled();
	lockdep_assert_held(&t->th.lock);
	known = !lost && !ipt_topa_offset(buf, t->base, t->mask, &off);
	if (known) {
		st->head = ipt_stream_position(buf->size, buf->region_size,
					       READ_ONCE(st->released), off,
					       full);
	} else {
		st->head = ipt_stream_head_lost(t);
		full = t->status & RTIT_STATUS_STOPPED;
	}
	WRITE_ONCE(st->announced, IPT_STREAM_NONE);
	if (READ_ONCE(st->restart_failed)) {
		WRITE_ONCE(st->restart_failed, false);
		t->cut = true;
	}
	lost_bytes = ipt_stream_lost_since(hw, st->lost_base);
	if (lost_bytes != IPT_GAP_BYTES_UNKNOWN)
		st->lost += lost_bytes;
	if (full && !READ_ONCE(st->paused)) {
		WRITE_ONCE(st->paused_tsc, now);
		/* after @paused_tsc: ipt_stream_pause_begun() acquires */
		smp_store_release(&st->paused, true);
	}
	st->out_tsc = now;
	if (full || st->head / buf->region_size != old / buf->region_size)
		irq_work_queue(&st->work);
	return !known;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_thread_out);

/**
 * ipt_stream_thread_end() - a thread's stream trace will not be loaded
 * again: its thread exited (the scheduler hook saw it dead) or exec'd an
 * image its session may not follow it into (detached by the exec hook)
 * @t: the trace, unloaded (ipt_stream_thread_out() ran for it)
 *
 * Data that did not fill a region is ready now, as a stopped trace's is
 * (ipt_stream_ready(): no region end will follow), but the unload woke
 * nobody for it: wake the pollers, through the trace's irq_work (the
 * switch hook runs with the runqueue lock held, where a wake-up may not
 * be done directly).  IPT_IOC_DETACH wakes them itself
 * (ipt_ioctl_detach()).
 *
 * Context: interrupts off (the sched_switch hook, or the exec hook with
 * interrupts saved); the trace was found in the RCU hash; its session
 * lives until its teardown, which waits for the irq_work
 * (ipt_stream_sync()) after a grace period.
 */
void ipt_stream_thread_end(struct ipt_trace *t)
{
	lockdep_assert_irqs_disabled();
	irq_work_queue(&t->stream.work);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_thread_end);

/**
 * ipt_stream_thread_resume() - a release of a thread's trace that is not
 * loaded: move STOP, resume a pause
 * @t: the trace
 * @released: the new release position, past a region boundary
 * @final: the thread will not be loaded again (it exited or was
 *         detached): a pause ends where it was last unloaded, not now
 *
 * STOP goes ahead of @released (ipt_stream_rearm()); a saved Stopped is
 * cleared, with the output registers at the head, so that the next load
 * resumes there with a PSB+.  The pause is then a closed gap: from its
 * start to now (or the last unload), with the bytes lost on every CPU
 * it ran Stopped on.  The caller rebuilds what a load restores from.
 *
 * Context: &@t->th.lock held, @t not loaded; the device lock held by the
 * caller, or in a cross-CPU call by the one it runs for, who waits (so
 * not asserted: lockdep knows the locks of the task that runs here).
 */
void ipt_stream_thread_resume(struct ipt_trace *t, u64 released, bool final)
{
	const struct ipt_hw_ops *hw = t->s->hw;
	struct ipt_stream *st = &t->stream;

	lockdep_assert_held(&t->th.lock);
	WRITE_ONCE(st->released, released);
	ipt_stream_rearm(t);
	if (!ipt_stream_pause_begun(st))
		return;
	ipt_stream_gap_add(t, st->head, READ_ONCE(st->paused_tsc),
			   final ? st->out_tsc : ipt_stream_tsc(hw),
			   hw->lost_bytes ? st->lost : IPT_GAP_BYTES_UNKNOWN);
	st->lost = 0;
	WRITE_ONCE(st->paused, false);
}

/**
 * ipt_stream_thread_close() - the open pause of a thread's trace that is
 * not loaded, and will not be before the next start, becomes a gap
 * @t: the trace: its session stopped, or its thread exited or detached
 *
 * The gap ends where the thread was last unloaded; STOP and a saved
 * Stopped stay: a session started again opens a new pause at the first
 * load (ipt_stream_thread_in()), as a per-CPU trace's start does.
 *
 * Context: the device lock and &@t->th.lock held, @t not loaded.
 */
void ipt_stream_thread_close(struct ipt_trace *t)
{
	struct ipt_stream *st = &t->stream;

	lockdep_assert_held(&t->s->idev->lock);
	lockdep_assert_held(&t->th.lock);
	if (!ipt_stream_pause_begun(st))
		return;
	ipt_stream_gap_add(t, st->head, READ_ONCE(st->paused_tsc), st->out_tsc,
			   t->s->hw->lost_bytes ? st->lost :
						  IPT_GAP_BYTES_UNKNOWN);
	st->lost = 0;
	WRITE_ONCE(st->paused, false);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_stream_thread_close);

/* ---- IPT_IOC_STREAM_RELEASE ------------------------------------------- */

/**
 * ipt_ioctl_stream_release_pre() - the argument's own checks
 * @c: the call
 *
 * Context: process context, no lock held.
 * Return: 0 or -EINVAL (flags, reserved fields).
 */
int ipt_ioctl_stream_release_pre(struct ipt_ioctl_call *c)
{
	const struct ipt_stream_release *r = c->arg;

	if (r->flags || r->reserved0 ||
	    memchr_inv(r->reserved, 0, sizeof(r->reserved)))
		return -EINVAL;
	return 0;
}

/* The trace an index names in a stream session, or an errno. */
static struct ipt_trace *ipt_stream_trace(struct ipt_session *s, u32 idx)
{
	struct ipt_trace *t;

	lockdep_assert_held(&s->idev->lock);
	if (s->state == IPT_STATE_IDLE || !s->stream)
		return ERR_PTR(-EINVAL);
	t = s->mops->trace(s, idx);
	return t ?: ERR_PTR(-ENOENT);
}

/**
 * ipt_ioctl_stream_release() - IPT_IOC_STREAM_RELEASE: hand data back
 * @c: the call
 *
 * The release position moves forward, up to the ready position.  When
 * it crosses a region boundary, STOP moves, by the mode's stream_move:
 * on the CPU the trace is loaded on with the unit off while it traces,
 * else in place; a paused unit resumes and its gap is recorded.  A unit
 * that cannot be restarted leaves the trace cut (IPT_TS_CUT), not an
 * error: the release holds.  The session's pollers are woken.
 *
 * Context: process context; cpus read lock and device lock held.
 * Return: 0; -EINVAL (IDLE, not a stream session, the position behind
 * the current one or beyond the ready one), -ENOENT (no such trace),
 * -EIO (the unit could not be stopped) or -EAGAIN (a thread's trace: the
 * thread was on another CPU each time it was looked for), with nothing
 * changed.
 */
long ipt_ioctl_stream_release(struct ipt_ioctl_call *c)
{
	const struct ipt_stream_release *r = c->arg;
	struct ipt_session *s = c->s;
	struct ipt_trace *t;
	u64 rsize, old;
	int ret = 0;

	ipt_lockdep_assert_cpus_held();
	lockdep_assert_held(&s->idev->lock);
	t = ipt_stream_trace(s, r->trace);
	if (IS_ERR(t))
		return PTR_ERR(t);
	old = t->stream.released;
	/* Closing a finished thread's pause moves neither position. */
	if (r->released < old || r->released > ipt_stream_captured(t))
		return -EINVAL;
	if (s->mops->settle)
		s->mops->settle(t);
	rsize = t->buf->region_size;
	/* The region floor stays: a loaded thread's switch may read it. */
	if (r->released / rsize == old / rsize)
		WRITE_ONCE(t->stream.released, r->released);
	else
		ret = s->mops->stream_move(t, r->released);
	/* Other pollers of the session see the new state (a cut trace). */
	if (!ret)
		wake_up_all(&s->wq);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_ioctl_stream_release);

/* ---- IPT_IOC_GET_GAPS ------------------------------------------------- */

/**
 * ipt_ioctl_get_gaps_pre() - the argument's own checks
 * @c: the call
 *
 * Context: process context, no lock held.
 * Return: 0, -EINVAL (flags, reserved or output fields set, entry_size
 * below IPT_GAP_SIZE_VER0, nr_entries without entries_ptr) or -E2BIG
 * (entry_size above a page).
 */
int ipt_ioctl_get_gaps_pre(struct ipt_ioctl_call *c)
{
	const struct ipt_gaps *g = c->arg;

	if (g->flags || g->reserved0 || g->total || g->oldest ||
	    memchr_inv(g->reserved, 0, sizeof(g->reserved)) ||
	    g->entry_size < IPT_GAP_SIZE_VER0 ||
	    (!g->entries_ptr && g->nr_entries))
		return -EINVAL;
	/* As IPT_IOC_LIST_SESSIONS: an entry above a page is E2BIG. */
	return g->entry_size > PAGE_SIZE ? -E2BIG : 0;
}

/*
 * How many gap entries from @first on, @room at most, @t has; the gaps so
 * far (the open pause included) and the index of the oldest one kept in
 * *@total and *@oldest if asked.  Device lock held.
 */
static u32 ipt_stream_gaps_wanted(const struct ipt_trace *t, u64 first,
				  u32 room, u64 *total, u64 *oldest)
{
	const struct ipt_stream *st = &t->stream;
	u64 all = st->nr_gaps + ipt_stream_paused(t);
	u64 old = st->nr_gaps > IPT_STREAM_GAPS ?
		  st->nr_gaps - IPT_STREAM_GAPS : 0;

	lockdep_assert_held(&t->s->idev->lock);
	if (total)
		*total = all;
	if (oldest)
		*oldest = old;
	first = max(first, old);
	return first < all ? min_t(u64, all - first, room) : 0;
}

/**
 * ipt_ioctl_get_gaps() - IPT_IOC_GET_GAPS: a stream trace's gaps
 * @c: the call; on success @c->data holds the entries for
 *     ipt_ioctl_get_gaps_post() to copy out
 *
 * Entries from max(@first, @oldest) on, as many as fit; a pause still
 * open is the last gap, with tsc_end 0 and bytes_lost
 * IPT_GAP_BYTES_UNKNOWN until the unit resumes.
 *
 * Context: process context; device lock held.
 * Return: 0; -EINVAL (IDLE, not a stream session), -ENOENT (no such
 * trace), -ENOMEM.
 */
long ipt_ioctl_get_gaps(struct ipt_ioctl_call *c)
{
	struct ipt_gaps *g = c->arg;
	struct ipt_session *s = c->s;
	const struct ipt_stream *st;
	struct ipt_gap *e;
	u64 total, oldest, first, i;
	struct ipt_trace *t;
	u32 room, n;

	lockdep_assert_held(&s->idev->lock);
	t = ipt_stream_trace(s, g->trace);
	if (IS_ERR(t))
		return PTR_ERR(t);
	st = &t->stream;
	/*
	 * Room for the entries first, then the trace brought up to date: an
	 * error changes nothing.  Closing a pause keeps @total and may only
	 * raise @oldest, but a pause may begin meanwhile: the PMI handler
	 * (ipt_stream_pmi()) and a thread's unload at a context switch
	 * (ipt_stream_thread_out()) mark the trace paused without the
	 * device lock, adding the open pause as one more entry.  So
	 * no more entries than there is room for: the caller asks again
	 * from where these end (@total says there are more).
	 */
	room = ipt_stream_gaps_wanted(t, g->first, g->nr_entries, NULL, NULL);
	e = room ? kcalloc(room, sizeof(*e), GFP_KERNEL) : NULL;
	if (room && !e)
		return -ENOMEM;
	if (s->mops->settle)
		s->mops->settle(t);
	n = ipt_stream_gaps_wanted(t, g->first, room, &total, &oldest);
	first = max(g->first, oldest);
	g->total = total;
	g->oldest = oldest;
	g->nr_entries = n;
	if (!n) {
		kfree(e);
		return 0;
	}
	for (i = 0; i < n; i++) {
		u64 idx = first + i;

		if (idx < st->nr_gaps) {
			e[i] = st->gaps[idx % IPT_STREAM_GAPS];
			continue;
		}
		/* The open pause: the unit stopped at STOP, a buffer on. */
		e[i].offset = st->released - st->released % t->buf->region_size +
			      t->buf->size;
		e[i].tsc_start = READ_ONCE(st->paused_tsc);
		e[i].bytes_lost = IPT_GAP_BYTES_UNKNOWN;
		e[i].cpu = READ_ONCE(t->cpu);
	}
	c->data = e;
	c->data_len = n;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_ioctl_get_gaps);

/**
 * ipt_ioctl_get_gaps_post() - copy the entries out, free them
 * @c: the call
 * @ret: the command's result so far
 *
 * Each entry is entry_size bytes in userspace: the kernel's struct, then
 * zeros.
 *
 * Context: process context, no lock held.
 * Return: @ret, or -EFAULT.
 */
long ipt_ioctl_get_gaps_post(struct ipt_ioctl_call *c, long ret)
{
	const struct ipt_gaps *g = c->arg;
	const struct ipt_gap *e = c->data;
	u8 __user *p = u64_to_user_ptr(g->entries_ptr);
	u32 i;

	for (i = 0; !ret && i < c->data_len; i++, p += g->entry_size) {
		if (copy_to_user(p, &e[i], sizeof(*e)) ||
		    clear_user(p + sizeof(*e), g->entry_size - sizeof(*e)))
			ret = -EFAULT;
	}
	kfree(c->data);
	return ret;
}

/* ---- poll ------------------------------------------------------------- */

/*
 * Whether no region end will follow @t's data: the session stopped; a
 * CPU's unit stopped for good (offline, or a restart that failed: cut);
 * a thread exited or was detached.  A live thread switched out is not
 * over: it writes on, to a region end, when it runs again (and a thread
 * whose reload failed is loaded again at its next switch-in).
 */
static bool ipt_stream_over(const struct ipt_trace *t)
{
	if (t->s->state != IPT_STATE_TRACING)
		return true;
	if (t->s->mode == IPT_MODE_THREAD)
		return READ_ONCE(t->th.flags) &
		       (IPT_TS_EXITED | IPT_TS_DETACHED);
	return !READ_ONCE(t->running);
}

/**
 * ipt_stream_ready() - whether a stream trace has something for its consumer
 * @t: a trace of a stream session that is not IDLE
 *
 * A region ready, a pause, or data not released that no region end will
 * follow (ipt_stream_over()).  A thread's partial region is not ready
 * while the thread lives, switched out or not: poll() would otherwise
 * return at once whenever any traced thread sleeps, and a consumer that
 * releases whole regions would spin.  Every event that makes it ready
 * wakes the pollers: a region end or pause (the PMI), a thread's exit
 * (ipt_stream_thread_end()) or detach, a stop.
 *
 * Context: device lock held.
 * Return: true when it is ready.
 */
bool ipt_stream_ready(const struct ipt_trace *t)
{
	u64 ready = ipt_stream_captured(t) - t->stream.released;

	lockdep_assert_held(&t->s->idev->lock);
	return ready >= t->buf->region_size || ipt_stream_paused(t) ||
	       (ready && ipt_stream_over(t));
}

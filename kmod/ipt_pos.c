// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: a trace's position arithmetic - what IPT_IOC_GET_TRACE reports
 * (head, oldest byte, bytes captured, valid and lost, wraps, WRAPPED and
 * FULL) from what the unit and the PMI handler left: OUTPUT_BASE,
 * OUTPUT_MASK_PTRS, STATUS, the wrap count and the single-entry sample.
 *
 * A pure function of its arguments: no session, no hardware, no lock.
 * Its KUnit suite is tests/ipt_pos_kunit.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/types.h>
#include <kunit/visibility.h>

#include "ipt.h"

/**
 * ipt_pos_fill() - a trace's state from a snapshot of its position
 * @buf: the trace's buffer
 * @single: the unit's ToPA tables hold one output entry (the buffer is
 *          one region; Documentation/design.rst, "Single-entry ToPA")
 * @pos: the snapshot
 * @ts: receives buffer_size, nr_chunks, nr_tables, head, oldest,
 *      wrap_count and the bytes_ fields; RUNNING, ERROR, PMI_LATE,
 *      STOP_ON_FULL, FULL and WRAPPED are or-ed into its status; nothing
 *      else is written
 *
 * Ring: each PMI is one wrap (INT is on the last region only), and the
 * position read at stop is where the next byte goes; a position at the
 * very end of the buffer is the start of the next lap, whose PMI is
 * already counted.  Stop-on-full: the position is the number of bytes,
 * STATUS.Stopped or a PMI says it is full.  A position that is not in
 * @buf (the unit was reset under us) counts as offset 0.
 *
 * Context: any; a pure function.
 */
void ipt_pos_fill(const struct ipt_buffer *buf, bool single,
		  const struct ipt_trace_pos *pos, struct ipt_trace_state *ts)
{
	u64 head = 0, wraps = pos->wraps;

	if (ipt_topa_offset(buf, pos->base, pos->mask, &head))
		head = 0;	/* not ours: the unit was reset under us */
	ts->buffer_size = buf->size;
	ts->nr_chunks = buf->nr_chunks;
	ts->nr_tables = buf->nr_tables;
	if (pos->running)
		ts->status |= IPT_TS_RUNNING;
	if (pos->status & RTIT_STATUS_ERROR)
		ts->status |= IPT_TS_ERROR;
	if (pos->pmi_late)
		ts->status |= IPT_TS_PMI_LATE;
	/*
	 * A single-entry ring's PMI comes before its wrap: if it was handled
	 * before the wrap (the sample near the end) and the unit has not
	 * passed that point since, that wrap has not happened yet.
	 */
	if (single && !buf->stop_on_full && wraps &&
	    pos->sample >= buf->size / 2 && head >= pos->sample)
		wraps--;
	if (buf->stop_on_full) {
		ts->status |= IPT_TS_STOP_ON_FULL;
		if ((pos->status & RTIT_STATUS_STOPPED) || wraps)
			ts->status |= IPT_TS_FULL;
		ts->head = head;
		ts->bytes_captured = head;
		ts->bytes_valid = head;
		return;
	}
	if (head == buf->size)
		head = 0;
	ts->head = head;
	ts->wrap_count = wraps;
	ts->bytes_captured = wraps * buf->size + head;
	if (wraps) {
		ts->status |= IPT_TS_WRAPPED;
		ts->bytes_valid = buf->size;
		ts->oldest = head;
		ts->bytes_lost = ts->bytes_captured - buf->size;
	} else {
		ts->bytes_valid = head;
	}
}
EXPORT_SYMBOL_IF_KUNIT(ipt_pos_fill);

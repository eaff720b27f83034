// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: the output engine of the simulated unit, which puts the bytes
 * of its packets into physical memory through ToPA tables or a single
 * range, as the SDM says: regions, END entries, STOP and INT, wrapping,
 * PacketByteCnt, operational errors, dropped bytes and OVF.  Every
 * function here works on the state it is given and nothing else.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitfield.h>
#include <linux/highmem.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/sizes.h>
#include <linux/string.h>
#include <asm/unaligned.h>
#include <kunit/visibility.h>

#include "ipt_sim.h"

/* ---- physical memory -------------------------------------------------- */

static bool ipt_sim_pa_ok(const struct ipt_sim_cpu *c, u64 pa, u64 len)
{
	return len && !((pa + len - 1) >> c->model->maxphyaddr);
}

/*
 * Copy to or from physical memory, page by page.  Memory that has no
 * struct page (not RAM) fails: the sim then raises an operational error
 * where silicon would write into the void.
 */
static int ipt_sim_pa_copy(u64 pa, void *buf, size_t len, bool write)
{
	while (len) {
		unsigned long pfn = PHYS_PFN(pa);
		size_t off = offset_in_page(pa);
		size_t n = min_t(size_t, len, PAGE_SIZE - off);
		void *kaddr;

		if (!pfn_valid(pfn))
			return -EFAULT;
		kaddr = kmap_local_page(pfn_to_page(pfn));
		if (write)
			memcpy(kaddr + off, buf, n);
		else
			memcpy(buf, kaddr + off, n);
		kunmap_local(kaddr);
		pa += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/* Whether every page of [@pa, @pa + @len) is RAM: ipt_sim_pa_copy() works. */
static bool ipt_sim_pa_ram(u64 pa, u64 len)
{
	u64 pfn;

	for (pfn = PHYS_PFN(pa); len && pfn <= PHYS_PFN(pa + len - 1); pfn++)
		if (!pfn_valid(pfn))
			return false;
	return true;
}

/* ---- the unit's internal buffer (struct ipt_sim_hold) ----------------- */

/* Write the oldest @n held bytes to memory. */
static void ipt_sim_hold_out(struct ipt_sim_hold *h, u32 n)
{
	u32 done = 0, i = 0, w;

	while (done < n && i < h->nr_segs) {
		w = min(n - done, h->seg[i].len);
		/* Checked when held: RAM, so this cannot fail. */
		ipt_sim_pa_copy(h->seg[i].pa, h->data + done, w, true);
		done += w;
		h->seg[i].pa += w;
		h->seg[i].len -= w;
		if (!h->seg[i].len)
			i++;
	}
	h->nr_segs -= i;
	memmove(h->seg, h->seg + i, h->nr_segs * sizeof(h->seg[0]));
	h->len -= done;
	memmove(h->data, h->data + done, h->len);
}

/**
 * ipt_sim_hold_flush() - write every held byte to memory (TraceEn 1 to 0)
 * @c: the state
 *
 * Context: the owner of @c serialises every call on it.
 */
void ipt_sim_hold_flush(struct ipt_sim_cpu *c)
{
	if (c->hold)
		ipt_sim_hold_out(c->hold, c->hold->len);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_hold_flush);

/**
 * ipt_sim_hold_drop() - forget the held bytes (the unit lost power)
 * @c: the state
 *
 * Context: the owner of @c serialises every call on it.
 */
void ipt_sim_hold_drop(struct ipt_sim_cpu *c)
{
	if (c->hold) {
		c->hold->len = 0;
		c->hold->nr_segs = 0;
	}
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_hold_drop);

/*
 * Write @w bytes of output at @pa, through the internal buffer: the
 * newest hold->limit bytes stay in the unit.  -EFAULT for memory that is
 * not RAM (nothing written then).
 */
static int ipt_sim_mem_write(struct ipt_sim_cpu *c, u64 pa, const u8 *p,
			     u64 w)
{
	struct ipt_sim_hold *h = c->hold;
	u32 keep, i;

	if (!h || !h->limit)
		return ipt_sim_pa_copy(pa, (void *)p, w, true);
	if (!ipt_sim_pa_ram(pa, w))
		return -EFAULT;
	keep = min_t(u64, w, h->limit);
	if (w > keep) {
		ipt_sim_hold_out(h, h->len);
		ipt_sim_pa_copy(pa, (void *)p, w - keep, true);
		pa += w - keep;
		p += w - keep;
	}
	if (h->len + keep > h->limit)
		ipt_sim_hold_out(h, h->len + keep - h->limit);
	i = h->nr_segs;
	if (i && h->seg[i - 1].pa + h->seg[i - 1].len == pa) {
		h->seg[i - 1].len += keep;
	} else {
		if (i == IPT_SIM_HOLD_SEGS) {
			ipt_sim_hold_out(h, h->seg[0].len);
			i = h->nr_segs;
		}
		h->seg[i].pa = pa;
		h->seg[i].len = keep;
		h->nr_segs = i + 1;
	}
	memcpy(h->data + h->len, p, keep);
	h->len += keep;
	return 0;
}

/* ---- the output engine ------------------------------------------------ */

/**
 * ipt_sim_output_on() - whether the unit writes output now
 * @c: the state
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 *
 * Return: TraceEn and TriggerEn are both set.
 */
bool ipt_sim_output_on(const struct ipt_sim_cpu *c)
{
	return (c->ctl & RTIT_CTL_TRACEEN) &&
	       (c->status & RTIT_STATUS_TRIGGEREN);
}

/**
 * ipt_sim_output_stopped() - whether output is held at a STOP entry
 * @c: the state
 *
 * TraceEn is set and STATUS.Stopped: the program runs on, and what it
 * would have traced is lost (counted in @c->stats.stopped).
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 *
 * Return: the unit is Stopped with TraceEn = 1 and no error.
 */
bool ipt_sim_output_stopped(const struct ipt_sim_cpu *c)
{
	return (c->ctl & RTIT_CTL_TRACEEN) &&
	       (c->status & RTIT_STATUS_STOPPED) &&
	       !(c->status & RTIT_STATUS_ERROR);
}

static void ipt_sim_op_error(struct ipt_sim_cpu *c)
{
	c->status |= RTIT_STATUS_ERROR;
	c->status &= ~RTIT_STATUS_TRIGGEREN;
	c->stats.op_errors++;
}

/**
 * ipt_sim_force_error() - raise an operational error (fault injection)
 * @c: the state
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 */
void ipt_sim_force_error(struct ipt_sim_cpu *c)
{
	ipt_sim_op_error(c);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_force_error);

static void ipt_sim_raise_pmi(struct ipt_sim_cpu *c)
{
	c->global_status |= GLOBAL_STATUS_TRACE_TOPAPMI;
	c->pmi_pending = true;
	c->stats.pmis++;
}

static u32 ipt_sim_out_index(const struct ipt_sim_cpu *c)
{
	return (c->output_mask & 0xffffff80) >> 7;
}

static u64 ipt_sim_out_offset(const struct ipt_sim_cpu *c)
{
	return c->output_mask >> 32;
}

static void ipt_sim_set_pos(struct ipt_sim_cpu *c, u32 index, u64 offset)
{
	c->output_mask = 0x7f | (u64)(index & 0x1ffffff) << 7 | offset << 32;
}

static bool ipt_sim_multi_entry(const struct ipt_sim_cpu *c)
{
	return c->model->leaf_14_0.ecx & BIT(1);
}

#define IPT_SIM_TOPA_RSVD	(~(IPT_TOPA_END | IPT_TOPA_INT |	\
				   IPT_TOPA_STOP | IPT_TOPA_SIZE |	\
				   IPT_TOPA_BASE))

static int ipt_sim_read_entry(const struct ipt_sim_cpu *c, u64 table, u32 index,
			      u64 *e)
{
	u64 pa = table + (u64)index * 8;
	__le64 raw;

	if (!ipt_sim_pa_ok(c, pa, 8) ||
	    ipt_sim_pa_copy(pa, &raw, sizeof(raw), false))
		return -EFAULT;
	*e = le64_to_cpu(raw);
	return 0;
}

/*
 * Validate entry @e (index @index of @table); returns 0 or -EINVAL for an
 * operational error.  Single-entry parts also check the table's shape.
 */
static int ipt_sim_check_entry(const struct ipt_sim_cpu *c, u64 table, u32 index,
			       u64 e)
{
	u64 base = e & IPT_TOPA_BASE, end;

	if (e & IPT_SIM_TOPA_RSVD)
		return -EINVAL;
	if (e & IPT_TOPA_END) {
		if ((e & (IPT_TOPA_STOP | IPT_TOPA_INT)) || !index ||
		    !ipt_sim_pa_ok(c, base, 8))
			return -EINVAL;
		return 0;
	}
	if (base & ((SZ_4K << FIELD_GET(IPT_TOPA_SIZE, e)) - 1) ||
	    !ipt_sim_pa_ok(c, base, SZ_4K << FIELD_GET(IPT_TOPA_SIZE, e)))
		return -EINVAL;
	if (ipt_sim_multi_entry(c))
		return 0;
	/* One output entry, then an END pointing back at the table. */
	if (index != 0 || ipt_sim_read_entry(c, table, 1, &end) ||
	    end != (IPT_TOPA_END | table))
		return -EINVAL;
	return 0;
}

/**
 * struct ipt_sim_region - where the next trace byte goes
 * @pa: its physical address
 * @room: bytes left in the region from @pa
 * @entry: the ToPA entry of the region (0 in single-range mode)
 */
struct ipt_sim_region {
	u64 pa;
	u64 room;
	u64 entry;
};

/*
 * Find the current output region, following an END entry.  On an
 * operational error sets STATUS.Error and returns -EINVAL.
 */
static int ipt_sim_locate(struct ipt_sim_cpu *c, struct ipt_sim_region *r)
{
	u64 off = ipt_sim_out_offset(c), table, e, size;
	unsigned int hops;
	u32 index;

	if (!(c->ctl & RTIT_CTL_TOPA)) {
		u64 mask = (c->output_mask & 0xffffffff) | 0x7f;

		/* The mask must be 2^n - 1, the offset inside it. */
		if ((mask & (mask + 1)) || off > mask ||
		    !ipt_sim_pa_ok(c, c->output_base, mask + 1))
			goto error;
		r->pa = c->output_base + off;
		r->room = mask + 1 - off;
		r->entry = 0;
		return 0;
	}
	/* Entry 0 of a table cannot be END: at most one hop. */
	for (hops = 0; hops < 2; hops++) {
		table = c->output_base;
		index = ipt_sim_out_index(c);
		if (table & 0xf80 || ipt_sim_read_entry(c, table, index, &e) ||
		    ipt_sim_check_entry(c, table, index, e))
			goto error;
		if (e & IPT_TOPA_END) {
			c->output_base = e & IPT_TOPA_BASE;
			ipt_sim_set_pos(c, 0, 0);
			off = 0;
			continue;
		}
		size = SZ_4K << FIELD_GET(IPT_TOPA_SIZE, e);
		if (off >= size)
			goto error;
		r->pa = (e & IPT_TOPA_BASE) + off;
		r->room = size - off;
		r->entry = e;
		return 0;
	}
error:
	ipt_sim_op_error(c);
	return -EINVAL;
}

/* The region of @r's entry is full: STOP, INT, move on. */
static void ipt_sim_region_full(struct ipt_sim_cpu *c,
				const struct ipt_sim_region *r)
{
	u32 index = ipt_sim_out_index(c);
	u64 next;

	if (!(c->ctl & RTIT_CTL_TOPA)) {
		ipt_sim_set_pos(c, index, 0);	/* single range: wrap */
		return;
	}
	if ((r->entry & IPT_TOPA_INT) && ipt_sim_multi_entry(c))
		ipt_sim_raise_pmi(c);
	if (r->entry & IPT_TOPA_STOP) {
		/* Offset stays at the region size; TraceEn stays 1. */
		c->status |= RTIT_STATUS_STOPPED;
		c->status &= ~RTIT_STATUS_TRIGGEREN;
		return;
	}
	if (!ipt_sim_multi_entry(c)) {
		ipt_sim_set_pos(c, 0, 0);	/* through the END to itself */
		return;
	}
	ipt_sim_set_pos(c, index + 1, 0);
	/* Follow a valid END at once, as the processor reloads the base. */
	if (!ipt_sim_read_entry(c, c->output_base, index + 1, &next) &&
	    (next & IPT_TOPA_END) &&
	    !ipt_sim_check_entry(c, c->output_base, index + 1, next)) {
		c->output_base = next & IPT_TOPA_BASE;
		ipt_sim_set_pos(c, 0, 0);
	}
}

#define IPT_SIM_LANES_LO	0x00ff00ff00ff00ffULL
#define IPT_SIM_LANES_ONE	0x0001000100010001ULL
/* Lane 3 of x * this is x0 * 0 + x1 * 1 + x2 * 2 + x3 * 3. */
#define IPT_SIM_LANES_IDX	0x0000000100020003ULL

/*
 * Count @n bytes written: PacketByteCnt, stats.bytes and stats.csum.  The
 * sum of p[i] * IPT_SIM_CSUM_WEIGHT(b + i) is K * ((2b + 1) * S0 + 2 * S1)
 * (mod 2^64), S0 the sum of p[i] and S1 that of i * p[i]; eight bytes at
 * a time, as bulk output writes many: a word's S0 and S1 come from its
 * bytes added pairwise in 16-bit lanes, each lane sum and product below
 * 2^16 (at most 6 * 510), so no lane carries into the next.
 */
static void ipt_sim_count_bytes(struct ipt_sim_cpu *c, const u8 *p, u64 n)
{
	u64 cnt = FIELD_GET(RTIT_STATUS_BYTECNT, c->status) + n;
	u64 i, s0 = 0, s1 = 0, w, x, h, sum;

	for (i = 0; i + 8 <= n; i += 8) {
		w = get_unaligned_le64(p + i);
		h = (w >> 8) & IPT_SIM_LANES_LO;
		x = (w & IPT_SIM_LANES_LO) + h;
		sum = (x * IPT_SIM_LANES_ONE) >> 48;
		s0 += sum;
		/* byte j of the word weighs j: 2 * lane index, + 1 if odd */
		s1 += i * sum + 2 * ((x * IPT_SIM_LANES_IDX) >> 48) +
		      ((h * IPT_SIM_LANES_ONE) >> 48);
	}
	for (; i < n; i++) {
		s0 += p[i];
		s1 += i * p[i];
	}
	c->stats.csum += (IPT_SIM_CSUM_WEIGHT(c->stats.bytes) * s0) +
			 2 * IPT_SIM_CSUM_WEIGHT(0) * s1;

	c->status &= ~RTIT_STATUS_BYTECNT;
	c->status |= FIELD_PREP(RTIT_STATUS_BYTECNT, cnt & 0x1ffff);
	c->stats.bytes += n;
}

/* Entries ipt_sim_room_before_stop() reads at most: ample for its limits. */
#define IPT_SIM_PACE_WALK	1024

/**
 * ipt_sim_room_before_stop() - bytes the output takes before STOP
 * @c: the state
 * @limit: look no further than this many bytes
 *
 * Walks the ToPA from the current output position as the output engine
 * would, following END entries, to the end of the first region whose
 * entry has STOP: writing that many bytes would fill it and stop the
 * unit.  Reads the tables, changes nothing; what would be an operational
 * error ends the walk (the engine raises it when it gets there).
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 *
 * Return: the room before STOP, or @limit when output is off, not ToPA,
 * or has no STOP within @limit bytes.
 */
u64 ipt_sim_room_before_stop(const struct ipt_sim_cpu *c, u64 limit)
{
	u64 table = c->output_base, off = ipt_sim_out_offset(c), room = 0;
	u32 index = ipt_sim_out_index(c);
	unsigned int steps;
	u64 e, size;

	if (!ipt_sim_output_on(c) || !(c->ctl & RTIT_CTL_TOPA))
		return limit;
	for (steps = 0; room < limit && steps < IPT_SIM_PACE_WALK; steps++) {
		if (table & 0xf80 || ipt_sim_read_entry(c, table, index, &e) ||
		    ipt_sim_check_entry(c, table, index, e))
			break;
		if (e & IPT_TOPA_END) {
			table = e & IPT_TOPA_BASE;
			index = 0;
			off = 0;
			continue;
		}
		size = SZ_4K << FIELD_GET(IPT_TOPA_SIZE, e);
		if (off >= size)
			break;
		room += size - off;
		if (e & IPT_TOPA_STOP)
			return min(room, limit);
		off = 0;
		index++;
	}
	return limit;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_room_before_stop);

/* Write @n bytes to the output; what cannot be written is lost. */
static void ipt_sim_out(struct ipt_sim_cpu *c, const u8 *p, size_t n)
{
	struct ipt_sim_region r;

	while (n && ipt_sim_output_on(c)) {
		u64 w;

		if (ipt_sim_locate(c, &r))
			return;
		w = min_t(u64, n, r.room);
		if (ipt_sim_mem_write(c, r.pa, p, w)) {
			ipt_sim_op_error(c);
			return;
		}
		ipt_sim_set_pos(c, ipt_sim_out_index(c),
				ipt_sim_out_offset(c) + w);
		ipt_sim_count_bytes(c, p, w);
		/* Single-entry parts: the PMI comes a little early. */
		if ((r.entry & IPT_TOPA_INT) && !ipt_sim_multi_entry(c) &&
		    r.room > IPT_SIM_SINGLE_PMI_EARLY &&
		    r.room - w <= IPT_SIM_SINGLE_PMI_EARLY)
			ipt_sim_raise_pmi(c);
		p += w;
		n -= w;
		if (w == r.room)
			ipt_sim_region_full(c, &r);
	}
	/* STOP reached in the middle: the rest is lost, and counted. */
	if (ipt_sim_output_stopped(c))
		c->stats.stopped += n;
}

/**
 * ipt_sim_put() - write one group of packets to the output
 * @c: the state
 * @p: the packets
 * @n: their length
 *
 * Nothing is written while output is off.  The group is dropped whole
 * while fault injection asks for dropped bytes (@c->drop); the first group
 * written after a drop is preceded by OVF (and FUP with the current IP
 * when ipt_sim_ip_valid()).  What the output cannot take is lost, with an
 * operational error or STOP as the output rules say.
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 */
void ipt_sim_put(struct ipt_sim_cpu *c, const u8 *p, size_t n)
{
	u8 ovf[IPT_SIM_PKT_MAX];
	size_t len;

	if (ipt_sim_output_stopped(c))
		c->stats.stopped += n;
	if (!ipt_sim_output_on(c) || !n)
		return;
	if (c->drop) {
		c->drop -= min_t(u64, c->drop, n);
		c->stats.dropped += n;
		c->ovf_pending = true;
		return;
	}
	if (c->ovf_pending) {
		c->ovf_pending = false;
		len = ipt_sim_pkt_ovf(ovf);
		if (ipt_sim_ip_valid(c))
			len += ipt_sim_pkt_ip(ovf + len, IPT_SIM_PKT_FUP, c->ip);
		c->stats.ovf++;
		ipt_sim_out(c, ovf, len);
	}
	ipt_sim_out(c, p, n);
}

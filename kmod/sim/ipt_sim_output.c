// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: the packets the simulated unit writes and the output engine
 * that puts them into physical memory through ToPA or a single range.
 * Every function here works on the state it is given and nothing else.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitfield.h>
#include <linux/highmem.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/string.h>
#include <linux/sizes.h>
#include <asm/unaligned.h>
#include <kunit/visibility.h>

#include "ipt_sim.h"

/*
 * The built-in workload, 64-bit user code at IPT_SIM_CODE_BASE:
 *
 *   401000: 31 c9      xor  %ecx,%ecx
 *   401002: ff c1      inc  %ecx
 *   401004: 83 f9 03   cmp  $0x3,%ecx
 *   401007: 75 f9      jne  401002
 *   401009: eb f5      jmp  401000
 *
 * Each pass of the outer loop gives the conditional branch the outcomes
 * taken, taken, not taken; the unit writes two passes per TNT-8 packet.
 */
const u8 ipt_sim_code[] = {
	0x31, 0xc9, 0xff, 0xc1, 0x83, 0xf9, 0x03, 0x75, 0xf9, 0xeb, 0xf5,
};
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_code);
const size_t ipt_sim_code_size = sizeof(ipt_sim_code);
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_code_size);

/* TNT-8 of T T N T T N: stop bit 7, oldest outcome in bit 6. */
#define IPT_SIM_LOOP_TNT	0xec

/* ---- packets ---------------------------------------------------------- */

/**
 * ipt_sim_pkt_psb() - PSB: 02 82 repeated 8 times
 * @p: at least 16 bytes
 *
 * Return: the packet's length.  The other ipt_sim_pkt_*() are alike.
 */
size_t ipt_sim_pkt_psb(u8 *p)
{
	unsigned int i;

	for (i = 0; i < 16; i += 2) {
		p[i] = 0x02;
		p[i + 1] = 0x82;
	}
	return 16;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_psb);

size_t ipt_sim_pkt_psbend(u8 *p)
{
	p[0] = 0x02;
	p[1] = 0x23;
	return 2;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_psbend);

size_t ipt_sim_pkt_tsc(u8 *p, u64 tsc)
{
	unsigned int i;

	p[0] = 0x19;
	for (i = 0; i < 7; i++)
		p[1 + i] = tsc >> (8 * i);
	return 8;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_tsc);

size_t ipt_sim_pkt_tma(u8 *p, u16 ctc, u16 fc)
{
	p[0] = 0x02;
	p[1] = 0x73;
	put_unaligned_le16(ctc, p + 2);
	p[4] = 0;
	put_unaligned_le16(fc & 0x1ff, p + 5);
	return 7;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_tma);

size_t ipt_sim_pkt_cbr(u8 *p, u8 ratio)
{
	p[0] = 0x02;
	p[1] = 0x03;
	p[2] = ratio;
	p[3] = 0;
	return 4;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_cbr);

/* MODE.Exec for 64-bit code: CS.L = 1. */
size_t ipt_sim_pkt_mode_exec(u8 *p)
{
	p[0] = 0x99;
	p[1] = 0x01;
	return 2;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_mode_exec);

/*
 * TIP, TIP.PGE, TIP.PGD, FUP (@type: IPT_SIM_PKT_*).  The unit never
 * compresses: IPBytes 011 (IP[47:0], sign-extended) so that the packet
 * does not depend on the last IP; IPT_SIM_IP_NONE gives IPBytes 000.
 */
size_t ipt_sim_pkt_ip(u8 *p, u8 type, u64 ip)
{
	unsigned int i;

	if (ip == IPT_SIM_IP_NONE) {
		p[0] = type;
		return 1;
	}
	p[0] = (3 << 5) | type;
	for (i = 0; i < 6; i++)
		p[1 + i] = ip >> (8 * i);
	return 7;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_ip);

size_t ipt_sim_pkt_mtc(u8 *p, u8 ctc)
{
	p[0] = 0x59;
	p[1] = ctc;
	return 2;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_mtc);

/* CYC: 5 bits in byte 0, 7 more per extra byte, bit "more" chaining. */
size_t ipt_sim_pkt_cyc(u8 *p, u64 cycles)
{
	size_t n = 1;

	p[0] = 0x03 | (cycles & 0x1f) << 3;
	cycles >>= 5;
	if (cycles)
		p[0] |= 0x04;
	while (cycles && n < 15) {
		p[n] = (cycles & 0x7f) << 1;
		cycles >>= 7;
		if (cycles)
			p[n] |= 0x01;
		n++;
	}
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_cyc);

size_t ipt_sim_pkt_ovf(u8 *p)
{
	p[0] = 0x02;
	p[1] = 0xf3;
	return 2;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_ovf);

/**
 * ipt_sim_ctc() - the core crystal clock at the state's TSC
 * @c: the state
 *
 * TSC = CTC * CPUID.15H:EBX / EAX; without leaf 15H, CTC = TSC / 16.
 *
 * Return: the CTC value.
 */
u64 ipt_sim_ctc(const struct ipt_sim_cpu *c)
{
	const struct ipt_cpuid_regs *l15 = &c->model->leaf_15;

	if (!l15->ebx || !l15->eax)
		return c->tsc >> 4;
	return div_u64(c->tsc, l15->ebx) * l15->eax;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_ctc);

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

/* ---- the output engine ------------------------------------------------ */

static bool ipt_sim_output_on(const struct ipt_sim_cpu *c)
{
	return (c->ctl & RTIT_CTL_TRACEEN) &&
	       (c->status & RTIT_STATUS_TRIGGEREN);
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

static int ipt_sim_read_entry(struct ipt_sim_cpu *c, u64 table, u32 index,
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
static int ipt_sim_check_entry(struct ipt_sim_cpu *c, u64 table, u32 index,
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

static void ipt_sim_count_bytes(struct ipt_sim_cpu *c, u64 n)
{
	u64 cnt = FIELD_GET(RTIT_STATUS_BYTECNT, c->status) + n;

	c->status &= ~RTIT_STATUS_BYTECNT;
	c->status |= FIELD_PREP(RTIT_STATUS_BYTECNT, cnt & 0x1ffff);
	c->stats.bytes += n;
}

/* Write @n bytes to the output; what cannot be written is lost. */
static void ipt_sim_out(struct ipt_sim_cpu *c, const u8 *p, size_t n)
{
	struct ipt_sim_region r;

	while (n && ipt_sim_output_on(c)) {
		u64 w;

		if (ipt_sim_locate(c, &r))
			return;
		w = min_t(u64, n, r.room);
		if (ipt_sim_pa_copy(r.pa, (void *)p, w, true)) {
			ipt_sim_op_error(c);
			return;
		}
		ipt_sim_set_pos(c, ipt_sim_out_index(c),
				ipt_sim_out_offset(c) + w);
		ipt_sim_count_bytes(c, w);
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
}

/* Whether packets that carry the current IP may be written now. */
static bool ipt_sim_ip_valid(const struct ipt_sim_cpu *c)
{
	return c->packet_en && !c->feed_ctx_off;
}

/*
 * Write one group of packets, which is dropped whole while fault
 * injection asks for dropped bytes; the first group written after a drop
 * is preceded by OVF (and FUP with the current IP when PacketEn).
 */
static void ipt_sim_put(struct ipt_sim_cpu *c, const u8 *p, size_t n)
{
	u8 ovf[IPT_SIM_PKT_MAX];
	size_t len;

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

/* PSB+: PSB, TSC, TMA, CBR, MODE.Exec, FUP (when PacketEn), PSBEND. */
static size_t ipt_sim_psb_plus(struct ipt_sim_cpu *c, u8 *p, bool fup)
{
	size_t n = ipt_sim_pkt_psb(p);

	if (c->ctl & RTIT_CTL_TSC_EN) {
		n += ipt_sim_pkt_tsc(p + n, c->tsc);
		if (c->ctl & RTIT_CTL_MTC_EN)
			n += ipt_sim_pkt_tma(p + n, ipt_sim_ctc(c), 0);
	}
	n += ipt_sim_pkt_cbr(p + n, c->model->nom_ratio);
	n += ipt_sim_pkt_mode_exec(p + n);
	if (fup)
		n += ipt_sim_pkt_ip(p + n, IPT_SIM_PKT_FUP, c->ip);
	n += ipt_sim_pkt_psbend(p + n);
	/* PacketByteCnt restarts with the PSB. */
	c->status &= ~RTIT_STATUS_BYTECNT;
	c->stats.psb++;
	return n;
}

/* FilterEn: no FilterEn range, or the current IP in one of them. */
static bool ipt_sim_filter_en(const struct ipt_sim_cpu *c)
{
	unsigned int i;
	bool any = false;

	for (i = 0; i < 4; i++) {
		u64 cfg = (c->ctl & IPT_RTIT_CTL_ADDR_CFG(i)) >> (32 + 4 * i);

		if (cfg != 1)
			continue;
		any = true;
		if (c->ip >= c->addr_a[i] && c->ip <= c->addr_b[i])
			return true;
	}
	return !any;
}

/*
 * The header of the record at @f->pos, which has IPT_SIM_FEED_HDR bytes;
 * records are not aligned, so it is copied out byte by byte.
 */
static void ipt_sim_feed_hdr(const struct ipt_sim_feed *f,
			     struct ipt_sim_feed_hdr *h)
{
	/* The layout is the format: bytes 0, 2, 4, 8 and no padding. */
	static_assert(sizeof(*h) == IPT_SIM_FEED_HDR);
	static_assert(offsetof(struct ipt_sim_feed_hdr, flags) == 2 &&
		      offsetof(struct ipt_sim_feed_hdr, reserved) == 4 &&
		      offsetof(struct ipt_sim_feed_hdr, ip) == 8);
	memcpy(h, f->buf + f->pos, sizeof(*h));
}

/*
 * Take the feed's leading IP-only records (len 0): the IP execution is at
 * when tracing starts, which the enable packets carry.  Without this the
 * first TIP.PGE would name the IP of whatever ran before the feed.
 */
static void ipt_sim_feed_take_ip(struct ipt_sim_cpu *c)
{
	struct ipt_sim_feed *f = &c->feed;
	struct ipt_sim_feed_hdr h;

	while (f->buf && f->len - f->pos >= IPT_SIM_FEED_HDR) {
		ipt_sim_feed_hdr(f, &h);
		if (h.len)
			break;
		c->ip = le64_to_cpu(h.ip);
		c->feed_ctx_off = le16_to_cpu(h.flags) & IPT_SIM_FEED_CTX_OFF;
		f->pos += IPT_SIM_FEED_HDR;
	}
}

/*
 * ContextEn, FilterEn and PacketEn for the program at its current IP, as
 * it runs user code (CPL 3, CR3 IPT_SIM_CODE_CR3).
 */
static void ipt_sim_update_en(struct ipt_sim_cpu *c)
{
	bool ctx;

	c->status &= ~(RTIT_STATUS_FILTEREN | RTIT_STATUS_CONTEXTEN);
	ipt_sim_feed_take_ip(c);
	ctx = (c->ctl & RTIT_CTL_USR) &&
	      (!(c->ctl & RTIT_CTL_CR3EN) ||
	       (c->cr3_match >> 5) == (IPT_SIM_CODE_CR3 >> 5));
	if (ctx)
		c->status |= RTIT_STATUS_CONTEXTEN;
	if (ipt_sim_filter_en(c))
		c->status |= RTIT_STATUS_FILTEREN;
	c->packet_en = ctx && (c->status & RTIT_STATUS_FILTEREN) &&
		       (c->ctl & RTIT_CTL_BRANCH_EN);
}

/**
 * ipt_sim_trace_enable() - TraceEn went from 0 to 1
 * @c: the state, with @c->ctl already holding the new value
 *
 * Sets TriggerEn (unless Error or Stopped is set), ContextEn (the workload
 * runs at CPL 3 with CR3 IPT_SIM_CODE_CR3), FilterEn and PacketEn, and
 * writes the enable packets: a full PSB+ when PacketByteCnt is 0, else
 * TSC, TMA, CBR and MODE.Exec as enabled; then TIP.PGE when PacketEn.
 * The IP is the feed's starting IP when a feed begins with one.  After a
 * context switch to another program (@c->pge_pending) the CPU is in the
 * kernel: PacketEn stays off and the TIP.PGE comes when the program runs
 * (ipt_sim_run()).
 */
void ipt_sim_trace_enable(struct ipt_sim_cpu *c)
{
	u8 buf[IPT_SIM_PKT_MAX];
	size_t n = 0;

	c->status &= ~(RTIT_STATUS_FILTEREN | RTIT_STATUS_CONTEXTEN |
		       RTIT_STATUS_TRIGGEREN);
	c->packet_en = false;
	c->last_mtc_ctc = ipt_sim_ctc(c);
	c->last_cyc_tsc = c->tsc;
	if (c->status & (RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED))
		return;
	c->status |= RTIT_STATUS_TRIGGEREN;
	ipt_sim_update_en(c);
	/* Enabled in the kernel on the way to a new program: no PGE yet. */
	if (c->pge_pending)
		c->packet_en = false;

	if (!FIELD_GET(RTIT_STATUS_BYTECNT, c->status)) {
		n = ipt_sim_psb_plus(c, buf, false);
	} else {
		if (c->ctl & RTIT_CTL_TSC_EN) {
			n += ipt_sim_pkt_tsc(buf + n, c->tsc);
			if (c->ctl & RTIT_CTL_MTC_EN)
				n += ipt_sim_pkt_tma(buf + n, ipt_sim_ctc(c), 0);
		}
		n += ipt_sim_pkt_cbr(buf + n, c->model->nom_ratio);
		if (c->packet_en)
			n += ipt_sim_pkt_mode_exec(buf + n);
	}
	if (ipt_sim_ip_valid(c))
		n += ipt_sim_pkt_ip(buf + n, IPT_SIM_PKT_TIP_PGE, c->ip);
	ipt_sim_put(c, buf, n);
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_trace_enable);

/**
 * ipt_sim_trace_disable() - TraceEn is about to go from 1 to 0
 * @c: the state, @c->ctl still holding the old value
 *
 * Writes FUP (current IP) and TIP.PGD when PacketEn, then clears
 * TriggerEn, ContextEn and FilterEn.
 */
void ipt_sim_trace_disable(struct ipt_sim_cpu *c)
{
	u8 buf[IPT_SIM_PKT_MAX];
	size_t n;

	if (ipt_sim_ip_valid(c)) {
		n = ipt_sim_pkt_ip(buf, IPT_SIM_PKT_FUP, c->ip);
		n += ipt_sim_pkt_ip(buf + n, IPT_SIM_PKT_TIP_PGD, IPT_SIM_IP_NONE);
		ipt_sim_put(c, buf, n);
	}
	c->status &= ~(RTIT_STATUS_FILTEREN | RTIT_STATUS_CONTEXTEN |
		       RTIT_STATUS_TRIGGEREN);
	c->packet_en = false;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_trace_disable);

/*
 * The next feed record: its payload, length and the IP after it; records
 * whether the program is then outside the traced context.
 */
static bool ipt_sim_feed_next(struct ipt_sim_cpu *c, const u8 **p, size_t *n,
			      u64 *ip)
{
	struct ipt_sim_feed *f = &c->feed;
	struct ipt_sim_feed_hdr h;
	size_t len;

	if (f->len - f->pos < IPT_SIM_FEED_HDR)
		return false;
	ipt_sim_feed_hdr(f, &h);
	len = le16_to_cpu(h.len);
	if (f->len - f->pos - IPT_SIM_FEED_HDR < len)
		return false;
	*ip = le64_to_cpu(h.ip);
	c->feed_ctx_off = le16_to_cpu(h.flags) & IPT_SIM_FEED_CTX_OFF;
	*p = f->buf + f->pos + IPT_SIM_FEED_HDR;
	*n = len;
	f->pos += IPT_SIM_FEED_HDR + len;
	return true;
}

static u64 ipt_sim_psb_period(const struct ipt_sim_cpu *c)
{
	return SZ_2K << FIELD_GET(RTIT_CTL_PSB_FREQ, c->ctl);
}

/**
 * ipt_sim_run() - produce trace for one time slice
 * @c: the state; @c->tsc is the time now
 * @budget: bytes to produce (written or dropped) at most, roughly
 *
 * While output is on: first TIP.PGE if the program changed since the last
 * run (ipt_sim_switch_out()), an MTC if a period of 2^MTCFreq CTC cycles passed,
 * then branch content (the feed's records or the built-in loop), each
 * unit preceded by CYC when enabled, with PSB+ whenever PacketByteCnt
 * reaches the PSBFreq period.
 */
void ipt_sim_run(struct ipt_sim_cpu *c, u64 budget)
{
	u64 start = c->stats.bytes + c->stats.dropped;
	u8 buf[IPT_SIM_PKT_MAX];
	size_t n;

	if (!ipt_sim_output_on(c))
		return;
	if (c->pge_pending) {
		/* Back in user mode, in the program switched to. */
		c->pge_pending = false;
		ipt_sim_update_en(c);
		if (ipt_sim_ip_valid(c)) {
			n = ipt_sim_pkt_ip(buf, IPT_SIM_PKT_TIP_PGE, c->ip);
			ipt_sim_put(c, buf, n);
		}
	}
	if (c->ctl & RTIT_CTL_MTC_EN) {
		unsigned int f = FIELD_GET(RTIT_CTL_MTC_RANGE, c->ctl);
		u64 ctc = ipt_sim_ctc(c);

		if (ctc >> f != c->last_mtc_ctc >> f) {
			n = ipt_sim_pkt_mtc(buf, ctc >> f);
			ipt_sim_put(c, buf, n);
		}
		c->last_mtc_ctc = ctc;
	}
	while (ipt_sim_output_on(c) &&
	       c->stats.bytes + c->stats.dropped - start < budget) {
		const u8 *unit;
		u64 ip;

		if (FIELD_GET(RTIT_STATUS_BYTECNT, c->status) >=
		    ipt_sim_psb_period(c)) {
			n = ipt_sim_psb_plus(c, buf, ipt_sim_ip_valid(c));
			ipt_sim_put(c, buf, n);
		}
		if (!c->packet_en)
			break;
		if (c->feed.buf) {
			if (!ipt_sim_feed_next(c, &unit, &n, &ip))
				break;
		} else {
			buf[0] = IPT_SIM_LOOP_TNT;
			unit = buf;
			n = 1;
			ip = IPT_SIM_CODE_LOOP_END;
		}
		if ((c->ctl & RTIT_CTL_CYCLEACC) && n) {
			unsigned int t = FIELD_GET(RTIT_CTL_CYC_THRESH, c->ctl);
			u64 cycles = c->tsc - c->last_cyc_tsc;
			u8 cyc[16];

			if (cycles && cycles >= (t ? BIT_ULL(t - 1) : 1)) {
				ipt_sim_put(c, cyc, ipt_sim_pkt_cyc(cyc, cycles));
				c->last_cyc_tsc = c->tsc;
			}
		}
		ipt_sim_put(c, unit, n);
		c->ip = ip;
	}
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_run);

/**
 * ipt_sim_switch_out() - the running program leaves the CPU
 * @c: the state; the caller swaps the program (@c->feed, @c->ip,
 *     @c->feed_ctx_off) afterwards
 *
 * The program enters the kernel (an interrupt or a system call) on its
 * way out: with PacketEn, FUP at its IP and TIP.PGD, as user-only tracing
 * shows it.  PacketEn is then off until the next program runs.
 */
void ipt_sim_switch_out(struct ipt_sim_cpu *c)
{
	u8 buf[IPT_SIM_PKT_MAX];
	size_t n;

	c->stats.switches++;
	if (ipt_sim_output_on(c) && ipt_sim_ip_valid(c)) {
		n = ipt_sim_pkt_ip(buf, IPT_SIM_PKT_FUP, c->ip);
		n += ipt_sim_pkt_ip(buf + n, IPT_SIM_PKT_TIP_PGD, IPT_SIM_IP_NONE);
		ipt_sim_put(c, buf, n);
	}
	c->packet_en = false;
	c->pge_pending = true;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_switch_out);

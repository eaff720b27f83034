// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: the encoders of the packets the simulated unit writes.  Each
 * writes one packet at @p and returns its length; none looks at a unit's
 * state, so they need no locking and KUnit checks them byte by byte.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <asm/unaligned.h>
#include <kunit/visibility.h>

#include "ipt_sim.h"

/**
 * ipt_sim_pkt_psb() - PSB: 02 82 repeated 8 times
 * @p: at least 16 bytes
 *
 * Context: any; the encoders touch nothing but @p.
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

/**
 * ipt_sim_pkt_psbend() - PSBEND: 02 23
 * @p: at least 2 bytes
 *
 * Return: the packet's length.
 */
size_t ipt_sim_pkt_psbend(u8 *p)
{
	p[0] = 0x02;
	p[1] = 0x23;
	return 2;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_psbend);

/**
 * ipt_sim_pkt_tsc() - TSC: 19, then the low 7 bytes of @tsc
 * @p: at least 8 bytes
 * @tsc: the time stamp counter
 *
 * Return: the packet's length.
 */
size_t ipt_sim_pkt_tsc(u8 *p, u64 tsc)
{
	unsigned int i;

	p[0] = 0x19;
	for (i = 0; i < 7; i++)
		p[1 + i] = tsc >> (8 * i);
	return 8;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_tsc);

/**
 * ipt_sim_pkt_tma() - TMA: 02 73, CTC[15:0], 0, FastCounter[8:0]
 * @p: at least 7 bytes
 * @ctc: the core crystal clock value
 * @fc: the fast counter
 *
 * Return: the packet's length.
 */
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

/**
 * ipt_sim_pkt_cbr() - CBR: 02 03, the core:bus ratio, 0
 * @p: at least 4 bytes
 * @ratio: the ratio
 *
 * Return: the packet's length.
 */
size_t ipt_sim_pkt_cbr(u8 *p, u8 ratio)
{
	p[0] = 0x02;
	p[1] = 0x03;
	p[2] = ratio;
	p[3] = 0;
	return 4;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_cbr);

/**
 * ipt_sim_pkt_mode_exec() - MODE.Exec for 64-bit code: CS.L = 1
 * @p: at least 2 bytes
 *
 * Return: the packet's length.
 */
size_t ipt_sim_pkt_mode_exec(u8 *p)
{
	p[0] = 0x99;
	p[1] = 0x01;
	return 2;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_mode_exec);

/**
 * ipt_sim_pkt_ip() - TIP, TIP.PGE, TIP.PGD or FUP
 * @p: at least 7 bytes
 * @type: IPT_SIM_PKT_TIP, IPT_SIM_PKT_TIP_PGE, IPT_SIM_PKT_TIP_PGD or
 *        IPT_SIM_PKT_FUP
 * @ip: the IP, or IPT_SIM_IP_NONE
 *
 * The unit never compresses: IPBytes 011 (IP[47:0], sign-extended) so
 * that the packet does not depend on the last IP; IPT_SIM_IP_NONE gives
 * IPBytes 000.
 *
 * Return: the packet's length.
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

/**
 * ipt_sim_pkt_mtc() - MTC: 59, then the payload
 * @p: at least 2 bytes
 * @ctc: CTC[MTCFreq+7:MTCFreq]
 *
 * Return: the packet's length.
 */
size_t ipt_sim_pkt_mtc(u8 *p, u8 ctc)
{
	p[0] = 0x59;
	p[1] = ctc;
	return 2;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_mtc);

/**
 * ipt_sim_pkt_cyc() - CYC: 5 bits in byte 0, 7 more per extra byte
 * @p: at least 10 bytes (enough for any u64)
 * @cycles: the cycle count
 *
 * Bit "more" (bit 2 of byte 0, bit 0 of the others) chains the bytes.
 *
 * Return: the packet's length.
 */
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

/**
 * ipt_sim_pkt_ovf() - OVF: 02 f3
 * @p: at least 2 bytes
 *
 * Return: the packet's length.
 */
size_t ipt_sim_pkt_ovf(u8 *p)
{
	p[0] = 0x02;
	p[1] = 0xf3;
	return 2;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_pkt_ovf);

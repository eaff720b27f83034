// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: the packet dump (--packets), ptdump-like.
 */
#include <inttypes.h>
#include <stdio.h>

#include "decode.h"
#include "internal.h"

static const char *pkt_name(enum pt_packet_type t)
{
	switch (t) {
	case ppt_pad: return "pad";
	case ppt_psb: return "psb";
	case ppt_psbend: return "psbend";
	case ppt_fup: return "fup";
	case ppt_tip: return "tip";
	case ppt_tip_pge: return "tip.pge";
	case ppt_tip_pgd: return "tip.pgd";
	case ppt_tnt_8: return "tnt.8";
	case ppt_tnt_64: return "tnt.64";
	case ppt_mode: return "mode";
	case ppt_pip: return "pip";
	case ppt_vmcs: return "vmcs";
	case ppt_cbr: return "cbr";
	case ppt_tsc: return "tsc";
	case ppt_tma: return "tma";
	case ppt_mtc: return "mtc";
	case ppt_cyc: return "cyc";
	case ppt_stop: return "stop";
	case ppt_ovf: return "ovf";
	case ppt_mnt: return "mnt";
	case ppt_exstop: return "exstop";
	case ppt_mwait: return "mwait";
	case ppt_pwre: return "pwre";
	case ppt_pwrx: return "pwrx";
	case ppt_ptw: return "ptw";
	default: return "unknown";
	}
}

long dec_dump_packets(const struct dec_ctx *c, const uint8_t *buf, size_t len, FILE *f)
{
	struct pt_config cfg = c->cfg;
	struct pt_packet_decoder *pd;
	long n = 0;
	int st;

	if (!len)
		return 0;
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return -1;
	st = pt_pkt_sync_forward(pd);
	for (;;) {
		struct pt_packet p;
		uint64_t off = 0;

		if (st < 0) {
			if (st == -pte_eos)
				break;
			pt_pkt_get_offset(pd, &off);
			fprintf(f, "%016" PRIx64 "  [error: %s; skipping to the next PSB]\n", off,
				pt_errstr(pt_errcode(st)));
			st = pt_pkt_sync_forward(pd);
			continue;
		}
		pt_pkt_get_offset(pd, &off);
		st = pt_pkt_next(pd, &p, sizeof(p));
		if (st < 0)
			continue;
		n++;
		fprintf(f, "%016" PRIx64 "  %-8s", off, pkt_name(p.type));
		switch (p.type) {
		case ppt_fup:
		case ppt_tip:
		case ppt_tip_pge:
		case ppt_tip_pgd:
			if (p.payload.ip.ipc == pt_ipc_suppressed)
				fprintf(f, " (suppressed)");
			else
				fprintf(f, " %d: %#" PRIx64, (int)p.payload.ip.ipc, p.payload.ip.ip);
			break;
		case ppt_tnt_8:
		case ppt_tnt_64: {
			int b;

			fputc(' ', f);
			for (b = p.payload.tnt.bit_size - 1; b >= 0; b--)
				fputc(p.payload.tnt.payload >> b & 1 ? '!' : '.', f);
			break;
		}
		case ppt_mode:
			if (p.payload.mode.leaf == pt_mol_exec)
				fprintf(f, " exec cs.l=%u cs.d=%u", p.payload.mode.bits.exec.csl,
					p.payload.mode.bits.exec.csd);
			else
				fprintf(f, " tsx intx=%u abrt=%u", p.payload.mode.bits.tsx.intx,
					p.payload.mode.bits.tsx.abrt);
			break;
		case ppt_tsc:
			fprintf(f, " %#" PRIx64, p.payload.tsc.tsc);
			break;
		case ppt_cbr:
			fprintf(f, " %u", p.payload.cbr.ratio);
			break;
		case ppt_mtc:
			fprintf(f, " %#x", p.payload.mtc.ctc);
			break;
		case ppt_cyc:
			fprintf(f, " %#" PRIx64, p.payload.cyc.value);
			break;
		case ppt_pip:
			fprintf(f, " cr3=%#" PRIx64, p.payload.pip.cr3);
			break;
		case ppt_tma:
			fprintf(f, " ctc=%#x fc=%#x", p.payload.tma.ctc, p.payload.tma.fc);
			break;
		default:
			break;
		}
		fputc('\n', f);
	}
	pt_pkt_free_decoder(pd);
	return n;
}

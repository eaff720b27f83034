// SPDX-License-Identifier: GPL-2.0
/*
 * ptverify: decode a trace with libipt's instruction decoder against the
 * images ptgen dumped and require the decoded IPs to equal ptgen's
 * ground truth (DIR/insns.bin, or DIR/insns.K.bin for thread K) exactly.
 *
 *   ptverify [--thread K] [--blocks] [--trace FILE | --feed N] DIR
 *
 * FILE defaults to DIR/trace.pt (DIR/trace.K.pt); give another one to
 * check a capture of the feed made through the simulated unit.  --feed N
 * checks the feed itself: it replays DIR/feed.bin as the simulated unit
 * would, with a PSB+ between every N-th pair of records, and decodes
 * that; the feed must hold no timing packet.  When DIR has a "timing"
 * file (ptgen --tsc) and the trace is ptgen's own, the decoder's time
 * must also be monotonic, never lost, and inside each instruction's
 * window from time.bin.  --blocks also runs libipt's block decoder: each
 * block must start and end at the recorded IPs with the right count in
 * between, its time (after its last instruction) in the window from its
 * first instruction's low end to its last one's high end.  Exit status:
 * 0 equal, 1 mismatch or decode error (the first one is reported), 2
 * usage or I/O.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipt_sim_feed.h"

static uint8_t *out;
static size_t outlen;

static void put(struct pt_encoder *enc, uint8_t *scratch, enum pt_packet_type type,
		enum pt_ip_compression ipc, uint64_t ip)
{
	struct pt_packet pkt;
	int n;

	memset(&pkt, 0, sizeof(pkt));
	pkt.type = type;
	if (type == ppt_mode) {
		pkt.payload.mode.leaf = pt_mol_exec;
		pkt.payload.mode.bits.exec.csl = 1;
	} else {
		pkt.payload.ip.ipc = ipc;
		pkt.payload.ip.ip = ip;
	}
	pt_enc_sync_set(enc, 0);
	n = pt_enc_next(enc, &pkt);
	if (n < 0) {
		fprintf(stderr, "ptverify: encoder: %s\n", pt_errstr(pt_errcode(n)));
		exit(2);
	}
	memcpy(out + outlen, scratch, (size_t)n);
	outlen += (size_t)n;
}

/*
 * Replay a feed the way Documentation/simulator.rst says the simulated
 * unit does: PSB+ and TIP.PGE of the first record's IP at enable, the
 * payloads verbatim, and a PSB+ between records (its FUP the IP of the
 * record before),
 * here after every @every-th record, so that payloads are tested both
 * with and without a PSB+ between them.
 */
static uint8_t *replay_feed(const uint8_t *feed, size_t len, unsigned int every, size_t *tlen)
{
	static uint8_t scratch[64];
	struct pt_encoder *enc;
	struct pt_config cfg;
	size_t pos = 0;
	unsigned int rec = 0;
	uint64_t prev = 0;

	out = malloc(len * 2 + 4096);
	pt_config_init(&cfg);
	cfg.begin = scratch;
	cfg.end = scratch + sizeof(scratch);
	enc = pt_alloc_encoder(&cfg);
	if (!out || !enc)
		exit(2);
	while (pos + IPT_SIM_FEED_HDR <= len) {
		struct ipt_sim_feed_hdr hdr;
		size_t plen;
		uint64_t ip;

		memcpy(&hdr, feed + pos, sizeof(hdr));	/* records are unaligned */
		plen = le16toh(hdr.len);
		ip = le64toh(hdr.ip);
		if (pos + IPT_SIM_FEED_HDR + plen > len)
			break;
		if (rec == 0 || rec % every == 0) {
			put(enc, scratch, ppt_psb, 0, 0);
			if (rec)
				put(enc, scratch, ppt_fup, pt_ipc_sext_48, prev);
			put(enc, scratch, ppt_mode, 0, 0);
			put(enc, scratch, ppt_psbend, 0, 0);
		}
		if (rec == 0) {
			put(enc, scratch, ppt_mode, 0, 0);
			put(enc, scratch, ppt_tip_pge, pt_ipc_sext_48, ip);
		}
		memcpy(out + outlen, feed + pos + IPT_SIM_FEED_HDR, plen);
		outlen += plen;
		pos += IPT_SIM_FEED_HDR + plen;
		prev = ip;
		rec++;
	}
	pt_free_encoder(enc);
	*tlen = outlen;
	return out;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto fail;
	p = malloc(n ? (size_t)n : 1);
	if (!p || fread(p, 1, (size_t)n, f) != (size_t)n)
		goto fail;
	fclose(f);
	*len = (size_t)n;
	return p;
fail:
	fprintf(stderr, "ptverify: %s: %s\n", path, strerror(errno));
	exit(2);
}

/* The number of timing packets (TSC, TMA, MTC, CYC, CBR) in @buf. */
static int count_timing(const uint8_t *buf, size_t len, uint64_t *n)
{
	struct pt_packet_decoder *dec;
	struct pt_config cfg;
	struct pt_packet pkt;
	int status;

	*n = 0;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec)
		return -pte_nomem;
	status = pt_pkt_sync_forward(dec);
	while (status >= 0) {
		status = pt_pkt_next(dec, &pkt, sizeof(pkt));
		if (status < 0)
			break;
		if (pkt.type == ppt_tsc || pkt.type == ppt_tma || pkt.type == ppt_mtc ||
		    pkt.type == ppt_cyc || pkt.type == ppt_cbr)
			(*n)++;
	}
	pt_pkt_free_decoder(dec);
	return status == -pte_eos ? 0 : status;
}

/* DIR/timing (ptgen --tsc): the decoder configuration it implies. */
static bool read_timing(const char *dir, struct pt_config *cfg)
{
	char path[PATH_MAX], key[64];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "%s/timing", dir);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fscanf(f, "%63s %lli", key, &v) == 2) {
		if (!strcmp(key, "mtc_freq"))
			cfg->mtc_freq = (uint8_t)v;
		else if (!strcmp(key, "nom_freq"))
			cfg->nom_freq = (uint8_t)v;
		else if (!strcmp(key, "cpuid_0x15_eax"))
			cfg->cpuid_0x15_eax = (uint32_t)v;
		else if (!strcmp(key, "cpuid_0x15_ebx"))
			cfg->cpuid_0x15_ebx = (uint32_t)v;
	}
	fclose(f);
	return true;
}

/* The time check of one decoded instruction; false after reporting. */
struct timecheck {
	const uint64_t *win;	/* time.bin: model time, low, high per insn */
	uint64_t last, max_err, sum_err, exact, checked;
};

/*
 * The decoder's time after instructions @first..@n (one instruction, or a
 * block): found, nothing lost, not going back, inside the window from
 * @first's low end to @n's high end.
 */
static bool check_time(struct timecheck *tc, int status, uint64_t tsc, uint32_t lost_mtc,
		       uint32_t lost_cyc, size_t first, size_t n)
{
	const uint64_t *w = tc->win + 3 * n, lo = tc->win[3 * first + 1];
	uint64_t err;

	if (status < 0 || lost_mtc || lost_cyc) {
		printf("TIME at instruction %zu: %s, %u lost MTC, %u lost CYC\n", n,
		       status < 0 ? pt_errstr(pt_errcode(status)) : "ok", lost_mtc, lost_cyc);
		return false;
	}
	if (tsc < tc->last) {
		printf("TIME at instruction %zu: %#" PRIx64 " goes back from %#" PRIx64 "\n",
		       n, tsc, tc->last);
		return false;
	}
	if (tsc < lo || tsc > w[2]) {
		printf("TIME at instruction %zu: decoded %#" PRIx64 ", outside the window "
		       "%#" PRIx64 "..%#" PRIx64 " (retired at %#" PRIx64 ")\n",
		       n, tsc, lo, w[2], w[0]);
		return false;
	}
	tc->last = tsc;
	err = tsc > w[0] ? tsc - w[0] : w[0] - tsc;
	if (err > tc->max_err)
		tc->max_err = err;
	tc->sum_err += err;
	tc->exact += !err;
	tc->checked++;
	return true;
}

static void load_images(const char *dir, struct pt_image *image)
{
	unsigned long long start, end;
	char path[PATH_MAX], name[256];
	int status;
	FILE *f;

	snprintf(path, sizeof(path), "%s/images.txt", dir);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "ptverify: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	while (fscanf(f, "%llx %llx %255s", &start, &end, name) == 3) {
		char ipath[PATH_MAX + 256];

		snprintf(ipath, sizeof(ipath), "%s/%s", dir, name);
		status = pt_image_add_file(image, ipath, 0, end - start, NULL, start);
		if (status < 0) {
			fprintf(stderr, "ptverify: %s: %s\n", ipath, pt_errstr(pt_errcode(status)));
			exit(2);
		}
	}
	fclose(f);
}

/*
 * The block decoder: every block must start and end at the ground
 * truth's IPs with the right number of instructions in between, and
 * (@tc) its time must fit.  Returns 0 or 1 (reported).
 */
static int verify_blocks(const struct pt_config *cfg, const char *dir, const uint64_t *exp,
			 size_t nexp, struct timecheck *tc)
{
	struct pt_block_decoder *dec = pt_blk_alloc_decoder(cfg);
	size_t n = 0, nblocks = 0;
	int status;

	if (!dec)
		exit(2);
	load_images(dir, pt_blk_get_image(dec));
	for (;;) {
		status = pt_blk_sync_forward(dec);
		if (status < 0)
			break;
		for (;;) {
			struct pt_block b;

			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_blk_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
			}
			if (status < 0)
				break;
			status = pt_blk_next(dec, &b, sizeof(b));
			if (b.ninsn) {
				size_t last = n + b.ninsn - 1;

				if (last >= nexp || b.ip != exp[n] || b.end_ip != exp[last]) {
					printf("BLOCK MISMATCH at instruction %zu: decoded %#" PRIx64
					       "..%#" PRIx64 " (%u instructions), expected %#" PRIx64
					       "..%#" PRIx64 "\n", n, b.ip, b.end_ip, b.ninsn,
					       n < nexp ? exp[n] : 0, last < nexp ? exp[last] : 0);
					return 1;
				}
				if (tc) {
					uint32_t lm = 0, lc = 0;
					uint64_t tsc = 0;
					int ts = pt_blk_time(dec, &tsc, &lm, &lc);

					if (!check_time(tc, ts, tsc, lm, lc, n, last))
						return 1;
				}
				n += b.ninsn;
				nblocks++;
			}
			if (status < 0)
				break;
		}
		if (status != -pte_eos) {
			uint64_t off = 0;

			pt_blk_get_offset(dec, &off);
			printf("BLOCK DECODE ERROR after %zu instructions at trace offset %#" PRIx64
			       ": %s\n", n, off, pt_errstr(pt_errcode(status)));
			return 1;
		}
	}
	pt_blk_free_decoder(dec);
	if (n != nexp) {
		printf("BLOCKS SHORT: decoded %zu of %zu instructions\n", n, nexp);
		return 1;
	}
	printf("blocks: %zu blocks, %zu instructions equal the ground truth%s\n", nblocks, n,
	       tc ? ", time in every window" : "");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "trace", required_argument, NULL, 't' },
		{ "feed", required_argument, NULL, 'f' },
		{ "thread", required_argument, NULL, 'k' },
		{ "blocks", no_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 }
	};
	char path[PATH_MAX], sfx[16] = "";
	const char *tracefile = NULL, *dir;
	uint8_t *tbuf, *ibuf, *wbuf = NULL;
	size_t tlen, ilen, nexp, wlen, n = 0;
	const uint64_t *exp;
	unsigned int fam, mod, step;
	struct pt_insn_decoder *dec;
	struct pt_config cfg;
	struct timecheck tc = { 0 };
	bool timed, blocks = false;
	FILE *f;
	unsigned int every = 0;
	int c, status, thread = 0;

	while ((c = getopt_long(argc, argv, "t:f:k:b", opts, NULL)) != -1) {
		if (c == 'b') {
			blocks = true;
		} else if (c == 't') {
			tracefile = optarg;
		} else if (c == 'f' && atoi(optarg) > 0) {
			every = (unsigned int)atoi(optarg);
		} else if (c == 'k' && atoi(optarg) >= 0) {
			thread = atoi(optarg);
		} else {
			fprintf(stderr, "usage: ptverify [--thread K] [--blocks] [--trace FILE | --feed N] DIR\n");
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: ptverify [--thread K] [--blocks] [--trace FILE | --feed N] DIR\n");
		return 2;
	}
	dir = argv[optind];
	if (thread)
		snprintf(sfx, sizeof(sfx), ".%d", thread);
	pt_config_init(&cfg);
	/* Time is checked on ptgen's own trace only: the unit makes its own. */
	timed = read_timing(dir, &cfg) && !tracefile && !every;
	if (!tracefile) {
		snprintf(path, sizeof(path), "%s/trace%s.pt", dir, sfx);
		tracefile = strdup(path);
	}
	if (every) {
		uint8_t *fbuf;
		size_t flen;
		uint64_t ntiming;

		snprintf(path, sizeof(path), "%s/feed%s.bin", dir, sfx);
		fbuf = slurp(path, &flen);
		tbuf = replay_feed(fbuf, flen, every, &tlen);
		free(fbuf);
		status = count_timing(tbuf, tlen, &ntiming);
		if (status < 0 || ntiming) {
			printf("FEED: %" PRIu64 " timing packets in the payloads%s%s\n", ntiming,
			       status < 0 ? ", packet error: " : "",
			       status < 0 ? pt_errstr(pt_errcode(status)) : "");
			return 1;
		}
	} else {
		tbuf = slurp(tracefile, &tlen);
	}
	snprintf(path, sizeof(path), "%s/insns%s.bin", dir, sfx);
	ibuf = slurp(path, &ilen);
	exp = (const uint64_t *)(const void *)ibuf;
	nexp = ilen / 8;
	if (timed) {
		snprintf(path, sizeof(path), "%s/time%s.bin", dir, sfx);
		wbuf = slurp(path, &wlen);
		if (wlen != nexp * 24) {
			printf("TIME: %s has %zu bytes for %zu instructions\n", path, wlen, nexp);
			return 1;
		}
		tc.win = (const uint64_t *)(const void *)wbuf;
	}

	cfg.begin = tbuf;
	cfg.end = tbuf + tlen;
	snprintf(path, sizeof(path), "%s/cpu", dir);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%u/%u/%u", &fam, &mod, &step) != 3) {
		fprintf(stderr, "ptverify: %s: no F/M/S\n", path);
		return 2;
	}
	fclose(f);
	cfg.cpu.vendor = pcv_intel;
	cfg.cpu.family = (uint16_t)fam;
	cfg.cpu.model = (uint8_t)mod;
	cfg.cpu.stepping = (uint8_t)step;
	if (pt_cpu_errata(&cfg.errata, &cfg.cpu) < 0)
		return 2;
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec)
		return 2;
	load_images(dir, pt_insn_get_image(dec));

	for (;;) {
		status = pt_insn_sync_forward(dec);
		if (status < 0)
			break;
		for (;;) {
			struct pt_insn insn;

			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
			}
			if (status < 0)
				break;
			status = pt_insn_next(dec, &insn, sizeof(insn));
			if (status >= 0 || insn.iclass != ptic_error) {
				if (n >= nexp || insn.ip != exp[n]) {
					uint64_t off = 0;

					pt_insn_get_offset(dec, &off);
					printf("MISMATCH at instruction %zu (trace offset %#" PRIx64 "): "
					       "decoded %#" PRIx64 ", expected %s%#" PRIx64 "\n",
					       n, off, insn.ip, n >= nexp ? "end of list " : "",
					       n < nexp ? exp[n] : 0);
					return 1;
				}
				if (timed) {
					uint32_t lm = 0, lc = 0;
					uint64_t tsc = 0;
					int ts = pt_insn_time(dec, &tsc, &lm, &lc);

					if (!check_time(&tc, ts, tsc, lm, lc, n, n))
						return 1;
				}
				n++;
			}
			if (status < 0)
				break;
		}
		if (status != -pte_eos) {
			uint64_t off = 0;

			pt_insn_get_offset(dec, &off);
			printf("DECODE ERROR after %zu instructions at trace offset %#" PRIx64
			       ": %s (next expected %#" PRIx64 ")\n", n, off,
			       pt_errstr(pt_errcode(status)), n < nexp ? exp[n] : 0);
			return 1;
		}
	}
	if (n != nexp) {
		printf("SHORT: decoded %zu of %zu instructions\n", n, nexp);
		return 1;
	}
	pt_insn_free_decoder(dec);
	if (blocks) {
		struct timecheck btc = { .win = tc.win };

		if (verify_blocks(&cfg, dir, exp, nexp, timed ? &btc : NULL))
			return 1;
	}
	if (timed)
		printf("time: monotonic, in every window; %" PRIu64 " of %zu instructions at "
		       "their exact time, error max %" PRIu64 " mean %.1f cycles\n",
		       tc.exact, n, tc.max_err, n ? (double)tc.sum_err / (double)n : 0.0);
	printf("OK: %zu instructions equal the ground truth%s%s\n", n,
	       timed ? ", with their time" : "", blocks ? " (instruction and block decoders)" : "");
	free(tbuf);
	free(ibuf);
	free(wbuf);
	return 0;
}

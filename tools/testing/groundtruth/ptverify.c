// SPDX-License-Identifier: GPL-2.0
/*
 * ptverify: decode a trace with libipt's instruction decoder against the
 * images ptgen dumped and require the decoded IPs to equal ptgen's
 * ground truth (DIR/insns.bin) exactly.
 *
 *   ptverify [--trace FILE | --feed N] DIR
 *
 * FILE defaults to DIR/trace.pt; give another one to check a capture of
 * DIR/feed.bin made through the simulated unit.  --feed N checks the feed
 * itself: it replays DIR/feed.bin as the simulated unit would, with a
 * PSB+ between every N-th pair of records, and decodes that.  Exit status: 0 equal,
 * 1 mismatch or decode error (the first one is reported), 2 usage or I/O.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	while (pos + 16 <= len) {
		size_t plen = feed[pos] | (size_t)feed[pos + 1] << 8;
		uint64_t ip = 0;

		for (int i = 7; i >= 0; i--)
			ip = ip << 8 | feed[pos + 8 + i];
		if (pos + 16 + plen > len)
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
		memcpy(out + outlen, feed + pos + 16, plen);
		outlen += plen;
		pos += 16 + plen;
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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "trace", required_argument, NULL, 't' },
		{ "feed", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 }
	};
	char path[PATH_MAX], name[256];
	const char *tracefile = NULL, *dir;
	uint8_t *tbuf, *ibuf;
	size_t tlen, ilen, nexp, n = 0;
	const uint64_t *exp;
	unsigned int fam, mod, step;
	unsigned long long start, end;
	struct pt_insn_decoder *dec;
	struct pt_config cfg;
	struct pt_image *image;
	FILE *f;
	unsigned int every = 0;
	int c, status;

	while ((c = getopt_long(argc, argv, "t:f:", opts, NULL)) != -1) {
		if (c == 't') {
			tracefile = optarg;
		} else if (c == 'f' && atoi(optarg) > 0) {
			every = (unsigned int)atoi(optarg);
		} else {
			fprintf(stderr, "usage: ptverify [--trace FILE | --feed N] DIR\n");
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: ptverify [--trace FILE | --feed N] DIR\n");
		return 2;
	}
	dir = argv[optind];
	if (!tracefile) {
		snprintf(path, sizeof(path), "%s/trace.pt", dir);
		tracefile = strdup(path);
	}
	if (every) {
		uint8_t *fbuf;
		size_t flen;

		snprintf(path, sizeof(path), "%s/feed.bin", dir);
		fbuf = slurp(path, &flen);
		tbuf = replay_feed(fbuf, flen, every, &tlen);
		free(fbuf);
	} else {
		tbuf = slurp(tracefile, &tlen);
	}
	snprintf(path, sizeof(path), "%s/insns.bin", dir);
	ibuf = slurp(path, &ilen);
	exp = (const uint64_t *)(const void *)ibuf;
	nexp = ilen / 8;

	pt_config_init(&cfg);
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
	image = pt_insn_get_image(dec);
	snprintf(path, sizeof(path), "%s/images.txt", dir);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "ptverify: %s: %s\n", path, strerror(errno));
		return 2;
	}
	while (fscanf(f, "%llx %llx %255s", &start, &end, name) == 3) {
		char ipath[PATH_MAX + 256];

		snprintf(ipath, sizeof(ipath), "%s/%s", dir, name);
		status = pt_image_add_file(image, ipath, 0, end - start, NULL, start);
		if (status < 0) {
			fprintf(stderr, "ptverify: %s: %s\n", ipath, pt_errstr(pt_errcode(status)));
			return 2;
		}
	}
	fclose(f);

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
	printf("OK: %zu instructions equal the ground truth\n", n);
	pt_insn_free_decoder(dec);
	free(tbuf);
	free(ibuf);
	return 0;
}

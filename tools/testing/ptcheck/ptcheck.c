// SPDX-License-Identifier: GPL-2.0
/*
 * ptcheck: decode a raw Intel PT trace with libipt and report every error.
 *
 * A test tool: it proves that bytes captured through ipt (from the
 * simulated unit or from silicon) are a valid PT stream, by letting
 * Intel's own decoder library judge them.  Two passes:
 *   1. packets: every packet from the first PSB on (pt_packet_decoder);
 *   2. instructions, when code images are given (--raw FILE:BASE): the
 *      instruction-flow decoder, which fails on any packet that does not
 *      fit the code (wrong TNT count, IP outside the image, ...).
 * After an error both passes resynchronise at the next PSB, so every error
 * is reported with its trace offset.  A stream that ends inside a packet
 * (stop-on-full) is not an error.
 *
 *   ptcheck [-j] [--raw FILE:BASE]... [--cpu F/M[/S]] [--min-insn N]
 *           [--min-psb N] [--min-ovf N] TRACE
 * Exit status: 0 clean (and the minimums met), 1 decode errors or a
 * minimum not met, 2 usage or I/O error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <intel-pt.h>
#include <json-c/json.h>

#define MAX_REPORTED 20

struct result {
	uint64_t bytes, packets, psbs, ovfs, pkt_errors;
	uint64_t insns, events, insn_errors, first_ip, last_ip;
	unsigned int nreported;
	char reported[MAX_REPORTED][128];
};

static void report(struct result *r, const char *pass, uint64_t off, int err)
{
	if (r->nreported < MAX_REPORTED)
		snprintf(r->reported[r->nreported++], sizeof(r->reported[0]),
			 "%s: offset %#" PRIx64 ": %s", pass, off, pt_errstr(pt_errcode(err)));
}

static void check_packets(const struct pt_config *cfg, struct result *r)
{
	struct pt_packet_decoder *dec = pt_pkt_alloc_decoder(cfg);
	struct pt_packet pkt;
	uint64_t off = 0;
	int status;

	if (!dec) {
		r->pkt_errors++;
		return;
	}
	for (;;) {
		status = pt_pkt_sync_forward(dec);
		if (status < 0)
			break;	/* no further PSB */
		for (;;) {
			pt_pkt_get_offset(dec, &off);
			status = pt_pkt_next(dec, &pkt, sizeof(pkt));
			if (status < 0)
				break;
			r->packets++;
			if (pkt.type == ppt_psb)
				r->psbs++;
			else if (pkt.type == ppt_ovf)
				r->ovfs++;
		}
		if (status == -pte_eos)
			break;
		r->pkt_errors++;
		report(r, "packet", off, status);
	}
	pt_pkt_free_decoder(dec);
}

static int add_raw(struct pt_image *image, const char *arg)
{
	char *copy = strdup(arg), *colon;
	uint64_t base;
	int err;

	if (!copy)
		return -1;
	colon = strrchr(copy, ':');
	if (!colon) {
		free(copy);
		return -1;
	}
	*colon = '\0';
	errno = 0;
	base = strtoull(colon + 1, NULL, 0);
	err = errno ? -1 : pt_image_add_file(image, copy, 0, UINT64_MAX, NULL, base);
	if (err < 0)
		fprintf(stderr, "ptcheck: cannot add '%s' at %#" PRIx64 ": %s\n", copy, base,
			err == -1 ? strerror(errno) : pt_errstr(pt_errcode(err)));
	free(copy);
	return err < 0 ? -1 : 0;
}

static int check_insns(const struct pt_config *cfg, char **raws, int nraw,
		       struct result *r)
{
	struct pt_insn_decoder *dec = pt_insn_alloc_decoder(cfg);
	struct pt_insn insn;
	struct pt_event ev;
	uint64_t off = 0, sync = 0, last_sync = 0;
	bool synced = false;
	int status, i;

	if (!dec)
		return -1;
	for (i = 0; i < nraw; i++)
		if (add_raw(pt_insn_get_image(dec), raws[i])) {
			pt_insn_free_decoder(dec);
			return -1;
		}
	for (;;) {
		status = pt_insn_sync_forward(dec);
		if (status == -pte_eos)
			break;
		pt_insn_get_sync_offset(dec, &sync);
		/* A failed sync leaves us at the same PSB: never loop on it. */
		if (synced && sync <= last_sync)
			break;
		synced = true;
		last_sync = sync;
		if (status < 0) {
			/* The PSB+ at @sync or what follows it is broken. */
			r->insn_errors++;
			report(r, "insn", sync, status);
			continue;
		}
		for (;;) {
			while (status & pts_event_pending) {
				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				r->events++;
			}
			if (status < 0 || (status & pts_eos))
				break;
			pt_insn_get_offset(dec, &off);
			status = pt_insn_next(dec, &insn, sizeof(insn));
			if (status < 0)
				break;
			if (!r->insns)
				r->first_ip = insn.ip;
			r->last_ip = insn.ip;
			r->insns++;
		}
		if (status >= 0 || status == -pte_eos)
			continue;	/* resync: the next PSB, or the end */
		r->insn_errors++;
		report(r, "insn", off, status);
	}
	pt_insn_free_decoder(dec);
	return 0;
}

static int parse_cpu(const char *s, struct pt_cpu *cpu)
{
	unsigned int f, m, st = 0;
	int n = sscanf(s, "%u/%u/%u", &f, &m, &st);

	if (n < 2 || f > 0xffff || m > 0xff || st > 0xff)
		return -1;
	memset(cpu, 0, sizeof(*cpu));
	cpu->vendor = pcv_intel;
	cpu->family = f;
	cpu->model = m;
	cpu->stepping = st;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ptcheck [-j] [--raw FILE:BASE]... [--cpu F/M[/S]] [--min-insn N]\n"
		   "               [--min-psb N] [--min-ovf N] TRACE\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "raw", required_argument, NULL, 'r' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "min-insn", required_argument, NULL, 'i' },
		{ "min-psb", required_argument, NULL, 'p' },
		{ "min-ovf", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t min_insn = 0, min_psb = 0, min_ovf = 0;
	struct result r = { 0 };
	struct pt_config cfg;
	char **raws = calloc(argc, sizeof(char *));
	int nraw = 0, c, ok;
	bool json = false;
	uint8_t *buf;
	long size;
	FILE *f;

	if (!raws)
		return 2;
	pt_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "j", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'r':
			raws[nraw++] = optarg;
			break;
		case 'c':
			if (parse_cpu(optarg, &cfg.cpu)) {
				fprintf(stderr, "ptcheck: --cpu wants FAMILY/MODEL[/STEPPING]\n");
				return 2;
			}
			if (pt_cpu_errata(&cfg.errata, &cfg.cpu) < 0)
				return 2;
			break;
		case 'i':
			min_insn = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			min_psb = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			min_ovf = strtoull(optarg, NULL, 0);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}

	f = fopen(argv[optind], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "ptcheck: %s: %s\n", argv[optind], strerror(errno));
		return 2;
	}
	buf = malloc(size ? size : 1);
	if (!buf || fread(buf, 1, size, f) != (size_t)size) {
		fprintf(stderr, "ptcheck: reading %s failed\n", argv[optind]);
		return 2;
	}
	fclose(f);
	r.bytes = size;
	cfg.begin = buf;
	cfg.end = buf + size;

	check_packets(&cfg, &r);
	if (nraw && check_insns(&cfg, raws, nraw, &r))
		return 2;

	ok = !r.pkt_errors && !r.insn_errors && r.psbs >= min_psb && r.insns >= min_insn &&
	     r.ovfs >= min_ovf;
	if (json) {
		struct json_object *o = json_object_new_object(), *errs = json_object_new_array();
		unsigned int i;

		json_object_object_add(o, "ok", json_object_new_boolean(ok));
		json_object_object_add(o, "bytes", json_object_new_int64(r.bytes));
		json_object_object_add(o, "packets", json_object_new_int64(r.packets));
		json_object_object_add(o, "psbs", json_object_new_int64(r.psbs));
		json_object_object_add(o, "ovfs", json_object_new_int64(r.ovfs));
		json_object_object_add(o, "packet_errors", json_object_new_int64(r.pkt_errors));
		json_object_object_add(o, "insns", json_object_new_int64(r.insns));
		json_object_object_add(o, "events", json_object_new_int64(r.events));
		json_object_object_add(o, "insn_errors", json_object_new_int64(r.insn_errors));
		for (i = 0; i < r.nreported; i++)
			json_object_array_add(errs, json_object_new_string(r.reported[i]));
		json_object_object_add(o, "errors", errs);
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	} else {
		unsigned int i;

		printf("%" PRIu64 " bytes, %" PRIu64 " packets, %" PRIu64 " PSB, %" PRIu64
		       " OVF, %" PRIu64 " packet errors\n",
		       r.bytes, r.packets, r.psbs, r.ovfs, r.pkt_errors);
		if (nraw)
			printf("%" PRIu64 " instructions (%#" PRIx64 " .. %#" PRIx64 "), %" PRIu64
			       " events, %" PRIu64 " decode errors\n", r.insns, r.first_ip,
			       r.last_ip, r.events, r.insn_errors);
		for (i = 0; i < r.nreported; i++)
			printf("error: %s\n", r.reported[i]);
		if (r.psbs < min_psb)
			printf("error: %" PRIu64 " PSB, wanted at least %" PRIu64 "\n", r.psbs, min_psb);
		if (r.ovfs < min_ovf)
			printf("error: %" PRIu64 " OVF, wanted at least %" PRIu64 "\n", r.ovfs, min_ovf);
		if (r.insns < min_insn)
			printf("error: %" PRIu64 " instructions, wanted at least %" PRIu64 "\n",
			       r.insns, min_insn);
	}
	free(buf);
	free(raws);
	return ok ? 0 : 1;
}

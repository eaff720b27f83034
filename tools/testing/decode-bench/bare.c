// SPDX-License-Identifier: GPL-2.0
/*
 * The baseline for decode-bench: a bare libipt block-decoder loop with an
 * image section cache over the same trace and images as ipttool decode,
 * counting instructions and nothing else.
 *
 *   bare TRACE CPU START:END:FILE...     prints "INSNS SECONDS"
 */
#include <inttypes.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct pt_image_section_cache *isc = pt_iscache_alloc("bare");
	struct pt_block_decoder *dec;
	struct pt_config cfg;
	struct pt_image *image;
	unsigned int f, m, s;
	uint64_t insns = 0;
	uint8_t *buf;
	long len;
	double t0, t1;
	FILE *fp;
	int i, st;

	if (argc < 4 || sscanf(argv[2], "%u/%u/%u", &f, &m, &s) != 3) {
		fprintf(stderr, "usage: bare TRACE F/M/S START:END:FILE...\n");
		return 2;
	}
	fp = fopen(argv[1], "rb");
	if (!fp || fseek(fp, 0, SEEK_END) || (len = ftell(fp)) <= 0 || fseek(fp, 0, SEEK_SET))
		return 2;
	buf = malloc((size_t)len);
	if (!buf || fread(buf, 1, (size_t)len, fp) != (size_t)len)
		return 2;
	fclose(fp);
	t0 = now();
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + len;
	cfg.cpu.vendor = pcv_intel;
	cfg.cpu.family = (uint16_t)f;
	cfg.cpu.model = (uint8_t)m;
	cfg.cpu.stepping = (uint8_t)s;
	pt_cpu_errata(&cfg.errata, &cfg.cpu);
	dec = pt_blk_alloc_decoder(&cfg);
	image = pt_blk_get_image(dec);
	for (i = 3; i < argc; i++) {
		unsigned long long a, b;
		char file[4096];
		int isid;

		if (sscanf(argv[i], "%llx:%llx:%4095s", &a, &b, file) != 3)
			return 2;
		isid = pt_iscache_add_file(isc, file, 0, b - a, a);
		if (isid < 0 || pt_image_add_cached(image, isc, isid, NULL) < 0)
			return 2;
	}
	for (;;) {
		st = pt_blk_sync_forward(dec);
		if (st < 0)
			break;
		for (;;) {
			struct pt_block blk;

			while (st & pts_event_pending) {
				struct pt_event ev;

				st = pt_blk_event(dec, &ev, sizeof(ev));
				if (st < 0)
					break;
			}
			if (st < 0)
				break;
			st = pt_blk_next(dec, &blk, sizeof(blk));
			insns += blk.ninsn;
			if (st < 0)
				break;
		}
		if (st == -pte_eos)
			break;
	}
	t1 = now();
	printf("%" PRIu64 " %.6f\n", insns, t1 - t0);
	pt_blk_free_decoder(dec);
	pt_iscache_free(isc);
	free(buf);
	return 0;
}

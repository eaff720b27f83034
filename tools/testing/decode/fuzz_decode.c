// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the decoder (userspace/decode/): the input is a PT
 * trace, decoded against the code of a ptgen directory (FUZZ_PTGEN_DIR, or
 * none) with every output rendered to /dev/null, serially and on two
 * threads.  Built and run by tools/testing/decode/fuzz (not part of make
 * check).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../userspace/decode/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct dec_input base;
static int inited;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dec_options opt = { .jobs = size & 1 ? 2 : 1 };
	struct dec_outputs outs = { 0 };
	struct dec_input in;
	struct dec_ctx c;
	char msg[512];
	FILE *null;
	int i;

	if (!inited) {
		const char *dir = getenv("FUZZ_PTGEN_DIR");

		dec_input_init(&base);
		if (dir && dec_input_load_dir(&base, dir, msg, sizeof(msg)))
			fprintf(stderr, "fuzz_decode: %s\n", msg);
		inited = 1;
	}
	/* a fresh input sharing the images; the trace is @data */
	in = base;
	in.traces = NULL;
	in.nr_traces = 0;
	dec_input_add_trace(&in, "fuzz-input", 0);
	in.traces[0].data = data;
	in.traces[0].size = size;
	null = fopen("/dev/null", "w");
	/* every output, or (one input in four) the summary alone: count_only */
	for (i = 0; i < OUT_NR; i++)
		outs.f[i] = (size & 12) == 4 ? NULL : null;
	outs.disasm = size & 2;
	if (!dec_open(&c, &in, &opt, msg, sizeof(msg))) {
		dec_run(&c, &outs, msg, sizeof(msg));
		json_object_put(dec_summary_json(&c));
		dec_summary_text(&c, null);
		dec_dump_packets(&c, data, size, null);
		dec_close(&c);
	}
	fclose(null);
	free(in.traces[0].file);
	free(in.traces);
	return 0;
}

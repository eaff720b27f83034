// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool: capture and inspect Intel Processor Trace through ipt.ko.
 *
 * Grammar: ipttool [GLOBAL OPTIONS] COMMAND [ARGS], as bpftool does it.
 */
#include <getopt.h>
#include <string.h>

#include "ipttool.h"

#ifndef IPT_VERSION
#define IPT_VERSION "unknown"
#endif

static const struct {
	const char *name;
	int (*fn)(struct ipttool *t, int argc, char **argv);
	const char *help;
} commands[] = {
	{ "caps", cmd_caps, "show what the PT unit can do" },
	{ "record", cmd_record, "record a command per thread, or CPUs, into a capture directory" },
	{ "info", cmd_info, "show what a capture directory holds" },
	{ "start", cmd_start, "start a per-CPU flight recorder (ring buffers)" },
	{ "status", cmd_status, "show the running flight recorder" },
	{ "dump", cmd_dump, "save the flight recorder's buffers: dump -o DIR" },
	{ "stop", cmd_stop, "end the flight recorder (stop -o DIR saves first)" },
	{ "decode", cmd_decode, "decode a capture or raw PT with libipt (decode --help)" },
	{ "selftest", cmd_selftest, "check that ipt works on this CPU (first thing to run)" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: ipttool [OPTIONS] COMMAND [ARGS]\n\n"
		   "Options:\n"
		   "  -j, --json        print data as JSON\n"
		   "  -p, --pretty      print indented JSON (implies --json)\n"
		   "  -d, --device PATH device node (default %s)\n"
		   "  -V, --version     print the version\n"
		   "  -h, --help        print this help\n\n"
		   "Commands:\n", IPT_DEVICE_PATH);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-16s  %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nSee ipttool(8) and 'ipttool COMMAND --help'.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "device", required_argument, NULL, 'd' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct ipttool t = { .device = IPT_DEVICE_PATH };
	size_t i;
	int c;

	opterr = 0;	/* ipt_err() says it, as JSON with -j */
	while ((c = getopt_long(argc, argv, "+jpd:Vh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			t.json = true;
			ipt_set_json_errors(true);
			break;
		case 'p':
			t.json = true;
			t.pretty = true;
			ipt_set_json_errors(true);
			break;
		case 'd':
			t.device = optarg;
			break;
		case 'V':
			printf("ipttool %s (ABI %d)\n", IPT_VERSION, IPT_ABI_VERSION);
			return ipt_close_out(stdout, "writing standard output");
		case 'h':
			usage(stdout);
			return ipt_close_out(stdout, "writing standard output");
		default:
			ipt_err("option '%s' is unknown or needs an argument", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		ipt_err("no command given");
		usage(stderr);
		return 2;
	}
	ipt_set_json_errors(t.json);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[optind], commands[i].name)) {
			int ret = commands[i].fn(&t, argc - optind, argv + optind);

			/* what went to stdout (JSON, info, caps) must have arrived */
			if (ipt_close_out(stdout, "writing standard output") && (!ret || ret == 3))
				ret = 1;
			return ret;
		}
	if (!strcmp(argv[optind], "help")) {
		usage(stdout);
		return ipt_close_out(stdout, "writing standard output");
	}
	ipt_err("unknown command '%s'", argv[optind]);
	usage(stderr);
	return 2;
}

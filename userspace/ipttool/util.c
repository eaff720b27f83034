// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool: messages and output helpers shared by the commands.
 */
#include <stdarg.h>

#include "ipttool.h"

void ipt_err(const char *fmt, ...)
{
	va_list ap;

	fputs("ipttool: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void ipt_err_open(const struct ipttool *t, enum iptcap_err err)
{
	ipt_err("cannot open %s: %s", t->device, iptcap_strerror(err));
	switch (err) {
	case IPTCAP_ERR_NO_DEVICE:
		fprintf(stderr, "  Load the driver first: 'insmod ipt.ko' (or 'modprobe ipt').\n");
		break;
	case IPTCAP_ERR_PERMISSION:
		fprintf(stderr, "  Run as root, or give the program CAP_PERFMON.\n");
		break;
	default:
		break;
	}
}

int ipt_print_json(const struct ipttool *t, struct json_object *obj)
{
	int flags = t->pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED :
				JSON_C_TO_STRING_PLAIN;
	int ret = 0;

	if (!obj) {
		ipt_err("out of memory building JSON");
		return 1;
	}
	if (puts(json_object_to_json_string_ext(obj, flags)) == EOF)
		ret = 1;
	json_object_put(obj);
	return ret;
}

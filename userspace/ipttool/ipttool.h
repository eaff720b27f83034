/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipttool: shared declarations of the command-line tool.
 */
#ifndef IPTTOOL_H
#define IPTTOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

#include "iptcap.h"

/**
 * struct ipttool - options that apply to every command
 * @json: print data as JSON instead of text
 * @pretty: indent JSON output
 * @device: the device node to open
 */
struct ipttool {
	bool json;
	bool pretty;
	const char *device;
};

/* A command: returns the process exit status. */
int cmd_caps(struct ipttool *t, int argc, char **argv);

/* Print "ipttool: <message>" to stderr (printf-style, newline added). */
void ipt_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Report a failed open of the device with what to do about it. */
void ipt_err_open(const struct ipttool *t, enum iptcap_err err);
/* Print @obj to stdout as JSON, following --pretty; drops the reference. */
int ipt_print_json(const struct ipttool *t, struct json_object *obj);

/* caps.c, exposed for the unit tests */
struct json_object *caps_to_json(const struct ipt_caps *caps);
void caps_print_text(FILE *f, const struct ipt_caps *caps);
/* Write @mask as a list of set bit numbers with ranges: "0-12" or "0,3,6". */
void mask_to_list(uint32_t mask, char *buf, size_t len);

#endif /* IPTTOOL_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool caps: what the PT unit (or the simulated one) can do.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "ipttool.h"

void mask_to_list(uint32_t mask, char *buf, size_t len)
{
	size_t used = 0;
	int bit = 0;

	if (len)
		buf[0] = '\0';
	if (!mask) {
		snprintf(buf, len, "none");
		return;
	}
	while (bit < 32) {
		int start, end;

		if (!(mask & (1u << bit))) {
			bit++;
			continue;
		}
		start = bit;
		while (bit < 32 && (mask & (1u << bit)))
			bit++;
		end = bit - 1;
		if (used < len) {
			int n;

			if (end == start)
				n = snprintf(buf + used, len - used, "%s%d",
					     used ? "," : "", start);
			else if (end == start + 1)
				n = snprintf(buf + used, len - used, "%s%d,%d",
					     used ? "," : "", start, end);
			else
				n = snprintf(buf + used, len - used, "%s%d-%d",
					     used ? "," : "", start, end);
			if (n > 0)
				used += (size_t)n;
		}
	}
}

static struct json_object *cpuid_to_json(const struct ipt_cpuid_regs *r)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "eax", json_object_new_int64(r->eax));
	json_object_object_add(o, "ebx", json_object_new_int64(r->ebx));
	json_object_object_add(o, "ecx", json_object_new_int64(r->ecx));
	json_object_object_add(o, "edx", json_object_new_int64(r->edx));
	return o;
}

static struct json_object *mask_to_json(uint32_t mask)
{
	struct json_object *a = json_object_new_array();
	int bit;

	for (bit = 0; bit < 32; bit++)
		if (mask & (1u << bit))
			json_object_array_add(a, json_object_new_int(bit));
	return a;
}

static void platform_name(unsigned int bit, char *buf, size_t len);

/* caps.platform as a list of names. */
static struct json_object *platform_to_json(uint64_t platform)
{
	struct json_object *a = json_object_new_array();
	unsigned int bit;
	char name[16];

	for (bit = 0; bit < 64; bit++) {
		if (!(platform & (1ull << bit)))
			continue;
		platform_name(bit, name, sizeof(name));
		json_object_array_add(a, json_object_new_string(name));
	}
	return a;
}

struct json_object *caps_to_json(const struct ipt_caps *c)
{
	struct json_object *o = json_object_new_object();
	struct json_object *feat = json_object_new_array();
	const char *backend = iptcap_backend_name(c->backend);
	const char *why = iptcap_unavail_str(c->unavailable);
	int bit;

	json_object_object_add(o, "abi_version", json_object_new_int64(c->abi_version));
	json_object_object_add(o, "backend",
			       json_object_new_string(backend ? backend : "unknown"));
	json_object_object_add(o, "available",
			       json_object_new_boolean(c->unavailable == IPT_UNAVAIL_NONE));
	json_object_object_add(o, "unavailable_reason",
			       c->unavailable == IPT_UNAVAIL_NONE ? NULL :
			       json_object_new_string(why ? why : "unknown reason"));
	json_object_object_add(o, "vendor", json_object_new_string(c->vendor));
	json_object_object_add(o, "family", json_object_new_int64(c->family));
	json_object_object_add(o, "model", json_object_new_int64(c->model));
	json_object_object_add(o, "stepping", json_object_new_int64(c->stepping));
	for (bit = 0; bit < 64; bit++) {
		const char *name;

		if (!(c->features & (1ull << bit)))
			continue;
		name = iptcap_feature_name(1ull << bit);
		if (name) {
			json_object_array_add(feat, json_object_new_string(name));
		} else {
			char unknown[24];

			snprintf(unknown, sizeof(unknown), "bit%d", bit);
			json_object_array_add(feat, json_object_new_string(unknown));
		}
	}
	json_object_object_add(o, "features", feat);
	json_object_object_add(o, "num_addr_ranges", json_object_new_int64(c->num_addr_ranges));
	json_object_object_add(o, "mtc_freq", mask_to_json(c->mtc_freq_mask));
	json_object_object_add(o, "cyc_thresh", mask_to_json(c->cyc_thresh_mask));
	json_object_object_add(o, "psb_freq", mask_to_json(c->psb_freq_mask));
	json_object_object_add(o, "nom_freq", json_object_new_int64(c->nom_freq));
	json_object_object_add(o, "xsave_pt_size", json_object_new_int64(c->xsave_pt_size));
	json_object_object_add(o, "nr_cpus", json_object_new_int64(c->nr_cpus));
	json_object_object_add(o, "max_topa_order", json_object_new_int64(c->max_topa_order));
	json_object_object_add(o, "max_trace_size",
			       json_object_new_int64((int64_t)c->max_trace_size));
	json_object_object_add(o, "max_chunk_order", json_object_new_int64(c->max_chunk_order));
	json_object_object_add(o, "platform", platform_to_json(c->platform));
	json_object_object_add(o, "cpuid_14_0", cpuid_to_json(&c->cpuid_14_0));
	json_object_object_add(o, "cpuid_14_1", cpuid_to_json(&c->cpuid_14_1));
	json_object_object_add(o, "cpuid_15", cpuid_to_json(&c->cpuid_15));
	return o;
}

/* caps.platform bits by name (Documentation/abi.rst), unknown ones as bitN. */
static const char *const platform_names[] = {
	"pti", "pcid", "vmx-no-pt", "hybrid",
};

static void platform_name(unsigned int bit, char *buf, size_t len)
{
	if (bit < sizeof(platform_names) / sizeof(platform_names[0]))
		snprintf(buf, len, "%s", platform_names[bit]);
	else
		snprintf(buf, len, "bit%u", bit);
}

static void print_size(FILE *f, const char *label, uint64_t bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned int u = 0;

	while (u + 1 < sizeof(unit) / sizeof(unit[0]) && bytes >= 1024 && !(bytes % 1024)) {
		bytes /= 1024;
		u++;
	}
	fprintf(f, "%-16s%" PRIu64 " %s\n", label, bytes, unit[u]);
}

void caps_print_text(FILE *f, const struct ipt_caps *c)
{
	const char *backend = iptcap_backend_name(c->backend);
	const char *why = iptcap_unavail_str(c->unavailable);
	const char *sep;
	char list[160];
	int bit;

	fprintf(f, "%-16s%s family %u model %#x stepping %u\n", "cpu:",
		c->vendor[0] ? c->vendor : "(unknown)", c->family, c->model,
		c->stepping);
	fprintf(f, "%-16s%u\n", "cpus:", c->nr_cpus);
	fprintf(f, "%-16s%s\n", "backend:", backend ? backend : "unknown");
	if (c->unavailable != IPT_UNAVAIL_NONE) {
		fprintf(f, "%-16sunavailable: %s\n", "intel pt:",
			why ? why : "unknown reason");
		return;
	}
	fprintf(f, "%-16savailable\n", "intel pt:");
	fprintf(f, "%-16s", "features:");
	sep = "";
	for (bit = 0; bit < 64; bit++) {
		const char *name;

		if (!(c->features & (1ull << bit)))
			continue;
		name = iptcap_feature_name(1ull << bit);
		if (name)
			fprintf(f, "%s%s", sep, name);
		else
			fprintf(f, "%sbit%d", sep, bit);
		sep = " ";
	}
	fputc('\n', f);
	fprintf(f, "%-16s%u\n", "address ranges:", c->num_addr_ranges);
	mask_to_list(c->mtc_freq_mask, list, sizeof(list));
	fprintf(f, "%-16s%s\n", "mtc freq:", list);
	mask_to_list(c->cyc_thresh_mask, list, sizeof(list));
	fprintf(f, "%-16s%s\n", "cyc threshold:", list);
	mask_to_list(c->psb_freq_mask, list, sizeof(list));
	fprintf(f, "%-16s%s\n", "psb freq:", list);
	if (c->nom_freq)
		fprintf(f, "%-16s%u (%u MHz)\n", "nominal ratio:", c->nom_freq,
			c->nom_freq * 100);
	else
		fprintf(f, "%-16sunknown\n", "nominal ratio:");
	if (c->cpuid_15.ebx && c->cpuid_15.eax)
		fprintf(f, "%-16stsc/crystal = %u/%u, crystal %u Hz\n", "cpuid 0x15:",
			c->cpuid_15.ebx, c->cpuid_15.eax, c->cpuid_15.ecx);
	else
		fprintf(f, "%-16snot enumerated\n", "cpuid 0x15:");
	if (c->features & IPT_FEAT_XSAVES_PT)
		fprintf(f, "%-16s%u bytes\n", "xsaves pt:", c->xsave_pt_size);
	else
		fprintf(f, "%-16sno (MSR save/restore)\n", "xsaves pt:");
	if (c->max_topa_order)
		print_size(f, "max region:", 1ull << c->max_topa_order);
	if (c->max_trace_size)
		print_size(f, "max trace:", c->max_trace_size);
	if (c->max_chunk_order)
		print_size(f, "max chunk:", 1ull << c->max_chunk_order);
	if (c->platform) {
		const char *psep = "";
		unsigned int pb;
		char name[16];

		fprintf(f, "%-16s", "platform:");
		for (pb = 0; pb < 64; pb++) {
			if (!(c->platform & (1ull << pb)))
				continue;
			platform_name(pb, name, sizeof(name));
			fprintf(f, "%s%s", psep, name);
			psep = " ";
		}
		fprintf(f, "\n");
	}
}

/* Sessions 'ipttool caps' lists (a per-CPU one, or per-thread ones). */
#define HOLDERS_MAX	64

static void caps_usage(FILE *f)
{
	fprintf(f, "Usage: ipttool [-j] caps\n"
		   "Show what the Intel PT unit (or the simulated unit) can do.\n");
}

int cmd_caps(struct ipttool *t, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct ipt_session_info held[HOLDERS_MAX];
	unsigned int total = 0;
	struct ipt_caps caps;
	struct iptcap *ipt;
	enum iptcap_err err;
	int c, nr;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			caps_usage(stdout);
			return 0;
		default:
			ipt_err("caps: unknown option '%s'", argv[optind - 1]);
			caps_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		ipt_err("caps: unexpected argument '%s'", argv[optind]);
		caps_usage(stderr);
		return 2;
	}

	err = iptcap_open(t->device, &ipt);
	if (err) {
		ipt_err_open(t, err);
		return 1;
	}
	err = iptcap_get_caps(ipt, &caps);
	if (err) {
		ipt_err("reading capabilities from %s: %s (%s)", t->device,
			iptcap_strerror(err), strerror(iptcap_last_errno(ipt)));
		iptcap_close(ipt);
		return 1;
	}
	iptcap_close(ipt);
	/* Who holds the unit: the sessions this caller may see. */
	nr = holders_get(t->device, held, HOLDERS_MAX, &total);
	if (nr < 0 && nr != -ENOTTY && nr != -EINVAL) {
		ipt_err("listing the sessions on %s: %s", t->device, strerror(-nr));
		return 1;
	}

	if (t->json) {
		struct json_object *o = caps_to_json(&caps);

		if (nr >= 0)
			json_object_object_add(o, "sessions", holders_to_json(held, nr));
		return ipt_print_json(t, o);
	}
	caps_print_text(stdout, &caps);
	if (nr >= 0) {
		char line[160];
		int i;

		fprintf(stdout, "%-16s%u%s\n", "sessions:", total,
			total ? "" : " (the unit is free)");
		for (i = 0; i < nr; i++) {
			holder_format(&held[i], line, sizeof(line));
			fprintf(stdout, "  %s\n", line);
		}
		if (total > (unsigned int)nr)
			fprintf(stdout, "  ... and %u more\n", total - nr);
	}
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for libiptcap's error and name tables and for the
 * rendering of capabilities by ipttool (text and JSON).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../ipttool/ipttool.h"
#include "tap.h"

_Static_assert(sizeof(struct ipt_caps) == IPT_CAPS_SIZE_VER2,
	       "struct ipt_caps changed size: add fields at the end and a new _SIZE_VER");

static void test_strerror(void)
{
	int i, j;

	for (i = 0; i < IPTCAP_ERR__COUNT; i++) {
		const char *s = iptcap_strerror(i);

		CHECK(s && *s && strcmp(s, "unknown error"), "strerror(%d) = \"%s\"", i, s ? s : "(null)");
		for (j = 0; j < i; j++)
			if (!strcmp(s, iptcap_strerror(j)))
				break;
		CHECK(j == i, "strerror(%d) differs from every other error", i);
	}
	CHECK(!strcmp(iptcap_strerror(IPTCAP_ERR__COUNT), "unknown error"),
	      "strerror past the end is 'unknown error'");
	CHECK(!strcmp(iptcap_strerror(-1), "unknown error"), "strerror(-1)");
}

static void test_errno_map(void)
{
	static const struct { int err; enum iptcap_err want; } map[] = {
		{ 0, IPTCAP_OK }, { EINVAL, IPTCAP_ERR_INVALID },
		{ E2BIG, IPTCAP_ERR_INVALID }, { ENOENT, IPTCAP_ERR_NO_DEVICE },
		{ ENXIO, IPTCAP_ERR_NO_DEVICE }, { ENODEV, IPTCAP_ERR_NO_PT },
		{ EBUSY, IPTCAP_ERR_BUSY }, { EPERM, IPTCAP_ERR_PERMISSION },
		{ EACCES, IPTCAP_ERR_PERMISSION }, { ENOMEM, IPTCAP_ERR_NOMEM },
		{ ENOTTY, IPTCAP_ERR_UNSUPPORTED }, { EIO, IPTCAP_ERR_IO },
		{ EFAULT, IPTCAP_ERR_IO },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		CHECK(iptcap_err_from_errno(map[i].err) == map[i].want,
		      "errno %d (%s) maps to %d", map[i].err, strerror(map[i].err),
		      map[i].want);
}

static void test_names(void)
{
	const char *seen[64] = { 0 };
	int bit, other, named = 0;

	for (bit = 0; bit < 64; bit++) {
		seen[bit] = iptcap_feature_name(1ull << bit);
		if (!seen[bit])
			continue;
		named++;
		for (other = 0; other < bit; other++)
			if (seen[other] && !strcmp(seen[other], seen[bit]))
				break;
		CHECK(other == bit, "feature name '%s' (bit %d) is unique", seen[bit], bit);
	}
	CHECK(named == 16, "all 16 IPT_FEAT_* bits are named (got %d)", named);
	CHECK(iptcap_feature_name(IPT_FEAT_XSAVES_PT) &&
	      !strcmp(iptcap_feature_name(IPT_FEAT_XSAVES_PT), "xsaves_pt"),
	      "IPT_FEAT_XSAVES_PT is 'xsaves_pt'");
	CHECK(!iptcap_feature_name(3), "a two-bit value has no name");
	CHECK(!strcmp(iptcap_backend_name(IPT_BACKEND_NONE), "none") &&
	      !strcmp(iptcap_backend_name(IPT_BACKEND_NATIVE), "native") &&
	      !strcmp(iptcap_backend_name(IPT_BACKEND_SIM), "sim"), "backend names");
	CHECK(!iptcap_backend_name(3), "unknown backend has no name");
	for (bit = IPT_UNAVAIL_NONE; bit <= IPT_UNAVAIL_NO_OUTPUT; bit++)
		CHECK(iptcap_unavail_str(bit) != NULL, "unavailable reason %d has text", bit);
	CHECK(!iptcap_unavail_str(IPT_UNAVAIL_NO_OUTPUT + 1), "unknown reason is NULL");
}

static void test_mask_to_list(void)
{
	static const struct { uint32_t mask; const char *want; } cases[] = {
		{ 0, "none" }, { 1, "0" }, { 0x249, "0,3,6,9" },
		{ 0x1fff, "0-12" }, { 0x3f, "0-5" }, { 0x6, "1,2" },
		{ 0x80000000u, "31" }, { 0xffffffffu, "0-31" },
		{ 0x8000000bu, "0,1,3,31" },
	};
	char buf[64], tiny[4];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mask_to_list(cases[i].mask, buf, sizeof(buf));
		CHECK(!strcmp(buf, cases[i].want), "mask %#x -> \"%s\" (want \"%s\")",
		      cases[i].mask, buf, cases[i].want);
	}
	mask_to_list(0x5555, tiny, sizeof(tiny));
	CHECK(strlen(tiny) < sizeof(tiny), "a short buffer stays terminated (\"%s\")", tiny);
}

static struct ipt_caps sample_caps(void)
{
	struct ipt_caps c = { .size = sizeof(c), .abi_version = IPT_ABI_VERSION };

	strcpy(c.vendor, "GenuineIntel");
	c.backend = IPT_BACKEND_SIM;
	c.family = 6;
	c.model = 0x4e;
	c.stepping = 3;
	c.features = IPT_FEAT_TOPA | IPT_FEAT_TOPA_MULTI | IPT_FEAT_MTC |
		     IPT_FEAT_XSAVES_PT | (1ull << 40);
	c.num_addr_ranges = 2;
	c.mtc_freq_mask = 0x249;
	c.cyc_thresh_mask = 0x1fff;
	c.psb_freq_mask = 0x3f;
	c.nom_freq = 36;
	c.xsave_pt_size = 128;
	c.nr_cpus = 4;
	c.max_topa_order = 27;
	c.max_trace_size = 1ull << 33;
	c.max_chunk_order = 23;
	c.platform = IPT_PLAT_PTI | IPT_PLAT_HYBRID | (1ull << 9);
	c.cpuid_15.eax = 2;
	c.cpuid_15.ebx = 250;
	c.cpuid_15.ecx = 24000000;
	return c;
}

static void test_json(void)
{
	struct ipt_caps c = sample_caps();
	struct json_object *o = caps_to_json(&c), *parsed, *v;
	const char *text = json_object_to_json_string(o);

	parsed = json_tokener_parse(text);
	CHECK(parsed != NULL, "caps JSON parses back");
	if (!parsed) {
		json_object_put(o);
		return;
	}
	CHECK(json_object_object_get_ex(parsed, "backend", &v) &&
	      !strcmp(json_object_get_string(v), "sim"), "backend is \"sim\"");
	CHECK(json_object_object_get_ex(parsed, "available", &v) &&
	      json_object_get_boolean(v), "available is true");
	CHECK(json_object_object_get_ex(parsed, "model", &v) &&
	      json_object_get_int(v) == 0x4e, "model is 78");
	CHECK(json_object_object_get_ex(parsed, "max_trace_size", &v) &&
	      json_object_get_int64(v) == (int64_t)1 << 33, "64-bit sizes survive");
	CHECK(json_object_object_get_ex(parsed, "max_chunk_order", &v) &&
	      json_object_get_int(v) == 23, "max_chunk_order is reported");
	CHECK(json_object_object_get_ex(parsed, "platform", &v) &&
	      json_object_array_length(v) == 3 &&
	      !strcmp(json_object_get_string(json_object_array_get_idx(v, 0)), "pti") &&
	      !strcmp(json_object_get_string(json_object_array_get_idx(v, 1)), "hybrid") &&
	      !strcmp(json_object_get_string(json_object_array_get_idx(v, 2)), "bit9"),
	      "platform names its bits and keeps unknown ones as bitN");
	CHECK(json_object_object_get_ex(parsed, "features", &v) &&
	      json_object_array_length(v) == 5 &&
	      !strcmp(json_object_get_string(json_object_array_get_idx(v, 4)), "bit40"),
	      "features list names known bits and keeps unknown ones as bitN");
	CHECK(json_object_object_get_ex(parsed, "mtc_freq", &v) &&
	      json_object_array_length(v) == 4 &&
	      json_object_get_int(json_object_array_get_idx(v, 3)) == 9,
	      "mtc_freq lists the allowed encodings");
	CHECK(json_object_object_get_ex(parsed, "cpuid_15", &v) &&
	      json_object_object_get_ex(v, "ecx", &v) &&
	      json_object_get_int64(v) == 24000000, "raw cpuid 0x15 is kept");
	json_object_put(parsed);
	json_object_put(o);

	c = sample_caps();
	c.unavailable = IPT_UNAVAIL_NOT_INTEL;
	c.backend = IPT_BACKEND_NONE;
	o = caps_to_json(&c);
	CHECK(json_object_object_get_ex(o, "unavailable_reason", &v) &&
	      strstr(json_object_get_string(v), "not an Intel"),
	      "unavailable caps carry the reason");
	json_object_put(o);
}

static char *render_text(const struct ipt_caps *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	caps_print_text(f, c);
	fclose(f);
	return buf;
}

static void test_text(void)
{
	struct ipt_caps c = sample_caps();
	char *out = render_text(&c);

	CHECK(strstr(out, "GenuineIntel family 6 model 0x4e stepping 3") != NULL,
	      "text names the CPU");
	CHECK(strstr(out, "intel pt:       available") != NULL, "text says available");
	CHECK(strstr(out, "mtc freq:       0,3,6,9") != NULL, "text lists MTC encodings");
	CHECK(strstr(out, "features:       mtc topa topa_multi_entry xsaves_pt bit40\n") != NULL,
	      "text lists features in bit order, unknown bits as bitN");
	CHECK(strstr(out, "tsc/crystal = 250/2, crystal 24000000 Hz") != NULL,
	      "text decodes CPUID 0x15");
	CHECK(strstr(out, "max region:     128 MiB") != NULL, "text prints sizes in units");
	CHECK(strstr(out, "max trace:      8 GiB") != NULL, "text prints 64-bit sizes");
	CHECK(strstr(out, "max chunk:      8 MiB") != NULL, "text prints the largest chunk");
	CHECK(strstr(out, "nominal ratio:  36 (3600 MHz)") != NULL, "text prints the ratio");
	free(out);

	c.unavailable = IPT_UNAVAIL_NO_PT;
	c.backend = IPT_BACKEND_NONE;
	out = render_text(&c);
	CHECK(strstr(out, "unavailable: the CPU does not enumerate Intel PT") != NULL,
	      "text explains why PT is unavailable");
	CHECK(strstr(out, "features:") == NULL, "no PT details without PT");
	free(out);
}

static void test_open_errors(void)
{
	struct iptcap *ipt = (struct iptcap *)1;
	struct ipt_caps caps;
	enum iptcap_err err;

	err = iptcap_open("/nonexistent/ipt", &ipt);
	CHECK(err == IPTCAP_ERR_NO_DEVICE && ipt == NULL,
	      "opening a missing device gives NO_DEVICE and a NULL handle");

	err = iptcap_open("/dev/null", &ipt);
	CHECK(err == IPTCAP_OK && ipt, "opening /dev/null succeeds");
	if (ipt) {
		err = iptcap_get_caps(ipt, &caps);
		CHECK(err == IPTCAP_ERR_UNSUPPORTED && iptcap_last_errno(ipt) == ENOTTY,
		      "GET_CAPS on a non-ipt device is UNSUPPORTED (ENOTTY)");
		iptcap_close(ipt);
	}
	iptcap_close(NULL);
	CHECK(iptcap_last_errno(NULL) == 0, "NULL handle is tolerated");
}

int main(void)
{
	test_strerror();
	test_errno_map();
	test_names();
	test_mask_to_list();
	test_json();
	test_text();
	test_open_errors();
	return tap_done();
}

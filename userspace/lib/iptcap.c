// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libiptcap: device access and capability queries.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "iptcap.h"

struct iptcap_map {
	unsigned int cpu;
	void *addr;
	size_t len;
};

struct iptcap {
	int fd;
	int last_errno;
	bool configured;
	bool per_thread;
	unsigned int max_threads;
	struct iptcap_map *maps;
	size_t nr_maps;
};

static const char *const iptcap_err_str[IPTCAP_ERR__COUNT] = {
	[IPTCAP_OK] = "success",
	[IPTCAP_ERR_INVALID] = "invalid parameter",
	[IPTCAP_ERR_NO_DEVICE] = "ipt device not found (is ipt.ko loaded?)",
	[IPTCAP_ERR_NO_PT] = "no Intel PT unit available",
	[IPTCAP_ERR_BUSY] = "Intel PT is busy (used by another ipt session, perf's intel_pt or another tracer)",
	[IPTCAP_ERR_PERMISSION] = "permission denied (needs CAP_PERFMON or root)",
	[IPTCAP_ERR_NOMEM] = "out of memory",
	[IPTCAP_ERR_UNSUPPORTED] = "request not supported by this ipt.ko",
	[IPTCAP_ERR_ABI] = "ipt.ko speaks an incompatible ABI version",
	[IPTCAP_ERR_IO] = "system error",
	[IPTCAP_ERR_CAPABILITY] = "the PT unit lacks a capability the configuration needs",
	[IPTCAP_ERR_STATE] = "not possible in the session's current state",
	[IPTCAP_ERR_NO_SUCH_CPU] = "the CPU is not part of the session",
	[IPTCAP_ERR_OVERWRITTEN] = "trace data overwritten: the ring wrapped",
	[IPTCAP_ERR_TRUNCATED] = "trace truncated: the stop-on-full buffer filled up",
	[IPTCAP_ERR_HW_ERROR] = "the PT unit reported an operational error",
	[IPTCAP_ERR_NO_SPACE] = "no space left on the output device",
	[IPTCAP_ERR_NO_SUCH_THREAD] = "no such thread (or it is exiting)",
	[IPTCAP_ERR_NO_FREE_TRACE] = "every trace of the per-thread session is in use",
	[IPTCAP_ERR_ALREADY_TRACED] = "the thread is already traced in this session",
	[IPTCAP_ERR_NO_SUCH_TRACE] = "no thread has that trace",
	[IPTCAP_ERR_NO_THREAD_MODE] = "this ipt.ko has no per-thread mode (load a newer module)",
};

const char *iptcap_strerror(enum iptcap_err err)
{
	if ((unsigned int)err >= IPTCAP_ERR__COUNT)
		return "unknown error";
	return iptcap_err_str[err];
}

enum iptcap_err iptcap_err_from_errno(int err)
{
	switch (err) {
	case 0:
		return IPTCAP_OK;
	case EINVAL:
	case E2BIG:
	case ERANGE:
		return IPTCAP_ERR_INVALID;
	case ENOENT:
	case ENXIO:
		return IPTCAP_ERR_NO_DEVICE;
	case ENODEV:
		return IPTCAP_ERR_NO_PT;
	case EBUSY:
		return IPTCAP_ERR_BUSY;
	case EPERM:
	case EACCES:
		return IPTCAP_ERR_PERMISSION;
	case ENOMEM:
		return IPTCAP_ERR_NOMEM;
	case ENOTTY:
	case EOPNOTSUPP:
		return IPTCAP_ERR_UNSUPPORTED;
	case ENOSPC:
	case EDQUOT:
		return IPTCAP_ERR_NO_SPACE;
	case ESRCH:
		return IPTCAP_ERR_NO_SUCH_THREAD;
	case EEXIST:
		return IPTCAP_ERR_ALREADY_TRACED;
	default:
		return IPTCAP_ERR_IO;
	}
}

static enum iptcap_err iptcap_fail(struct iptcap *ipt, int err)
{
	ipt->last_errno = err;
	return iptcap_err_from_errno(err);
}

enum iptcap_err iptcap_open(const char *path, struct iptcap **out)
{
	struct iptcap *ipt;
	int err;

	*out = NULL;
	ipt = calloc(1, sizeof(*ipt));
	if (!ipt)
		return IPTCAP_ERR_NOMEM;
	ipt->fd = open(path ? path : IPT_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (ipt->fd < 0) {
		err = errno;
		free(ipt);
		return iptcap_err_from_errno(err);
	}
	*out = ipt;
	return IPTCAP_OK;
}

static void iptcap_unmap_all(struct iptcap *ipt)
{
	size_t i;

	for (i = 0; i < ipt->nr_maps; i++)
		munmap(ipt->maps[i].addr, ipt->maps[i].len);
	free(ipt->maps);
	ipt->maps = NULL;
	ipt->nr_maps = 0;
}

void iptcap_close(struct iptcap *ipt)
{
	if (!ipt)
		return;
	iptcap_unmap_all(ipt);
	close(ipt->fd);
	free(ipt);
}

int iptcap_last_errno(const struct iptcap *ipt)
{
	return ipt ? ipt->last_errno : 0;
}

enum iptcap_err iptcap_get_caps(struct iptcap *ipt, struct ipt_caps *caps)
{
	memset(caps, 0, sizeof(*caps));
	caps->size = sizeof(*caps);
	if (ioctl(ipt->fd, IPT_IOC_GET_CAPS, caps))
		return iptcap_fail(ipt, errno);
	if (caps->abi_version != IPT_ABI_VERSION || caps->size < IPT_CAPS_SIZE_VER0) {
		ipt->last_errno = EPROTO;
		return IPTCAP_ERR_ABI;
	}
	ipt->last_errno = 0;
	return IPTCAP_OK;
}

const char *iptcap_backend_name(uint32_t backend)
{
	switch (backend) {
	case IPT_BACKEND_NONE:
		return "none";
	case IPT_BACKEND_NATIVE:
		return "native";
	case IPT_BACKEND_SIM:
		return "sim";
	}
	return NULL;
}

const char *iptcap_unavail_str(uint32_t why)
{
	switch (why) {
	case IPT_UNAVAIL_NONE:
		return "available";
	case IPT_UNAVAIL_NOT_INTEL:
		return "the CPU is not an Intel CPU";
	case IPT_UNAVAIL_NO_PT:
		return "the CPU does not enumerate Intel PT (CPUID.07H:EBX[25])";
	case IPT_UNAVAIL_NO_LEAF_14:
		return "the CPU does not enumerate CPUID leaf 14H";
	case IPT_UNAVAIL_NO_OUTPUT:
		return "the CPU has neither ToPA nor single-range output";
	}
	return NULL;
}

static const struct {
	uint64_t bit;
	const char *name;
} iptcap_features[] = {
	{ IPT_FEAT_CR3_FILTER, "cr3_filter" },
	{ IPT_FEAT_PSB_CYC, "psb_cyc" },
	{ IPT_FEAT_IP_FILTER, "ip_filter" },
	{ IPT_FEAT_MTC, "mtc" },
	{ IPT_FEAT_PTWRITE, "ptwrite" },
	{ IPT_FEAT_POWER_EVENTS, "power_events" },
	{ IPT_FEAT_PSB_PMI_KEEP, "psb_pmi_preserve" },
	{ IPT_FEAT_EVENT_TRACE, "event_trace" },
	{ IPT_FEAT_TNT_DISABLE, "tnt_disable" },
	{ IPT_FEAT_TOPA, "topa" },
	{ IPT_FEAT_TOPA_MULTI, "topa_multi_entry" },
	{ IPT_FEAT_SINGLE_RANGE, "single_range" },
	{ IPT_FEAT_TRANSPORT, "trace_transport" },
	{ IPT_FEAT_LIP, "lip" },
	{ IPT_FEAT_XSAVES_PT, "xsaves_pt" },
	{ IPT_FEAT_STREAM, "stream" },
};

const char *iptcap_feature_name(uint64_t bit)
{
	size_t i;

	for (i = 0; i < sizeof(iptcap_features) / sizeof(iptcap_features[0]); i++)
		if (iptcap_features[i].bit == bit)
			return iptcap_features[i].name;
	return NULL;
}

/* ---- per-CPU sessions --------------------------------------------------- */

void iptcap_config_init(struct iptcap_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->all_cpus = true;
	cfg->user = true;
	cfg->kernel = true;
	cfg->mtc_freq = -1;
	cfg->cyc_thresh = -1;
	cfg->psb_freq = -1;
}

static const char *const field_names[] = {
	[IPTCAP_FIELD_NONE] = "",
	[IPTCAP_FIELD_CPUS] = "cpu_mask",
	[IPTCAP_FIELD_MAX_THREADS] = "max_threads",
	[IPTCAP_FIELD_BUFFER_SIZE] = "buffer_size",
	[IPTCAP_FIELD_PRIVILEGE] = "user/kernel",
	[IPTCAP_FIELD_MTC_FREQ] = "mtc_freq",
	[IPTCAP_FIELD_CYC_THRESH] = "cyc_thresh",
	[IPTCAP_FIELD_PSB_FREQ] = "psb_freq",
	[IPTCAP_FIELD_RANGES] = "ranges",
	[IPTCAP_FIELD_CR3_MATCH] = "cr3_match",
	[IPTCAP_FIELD_STREAM] = "stream",
};

const char *iptcap_field_name(enum iptcap_field field)
{
	if ((unsigned int)field >= sizeof(field_names) / sizeof(field_names[0]))
		return "?";
	return field_names[field];
}

/* Record what is wrong: @field (and range @index, or -1), its value, why. */
__attribute__((format(printf, 5, 6)))
static enum iptcap_err fail(struct iptcap_config_error *e, enum iptcap_err err,
			    enum iptcap_field field, int index, const char *reason, ...)
{
	va_list ap;

	e->field = field;
	e->index = index;
	va_start(ap, reason);
	vsnprintf(e->reason, sizeof(e->reason), reason, ap);
	va_end(ap);
	return err;
}

/* The offending value, as text. */
__attribute__((format(printf, 2, 3)))
static void set_value(struct iptcap_config_error *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->value, sizeof(e->value), fmt, ap);
	va_end(ap);
}

/* Check one encoding against its caps mask. */
static enum iptcap_err check_encoding(struct iptcap_config_error *e, enum iptcap_field field,
				      int val, uint32_t mask)
{
	snprintf(e->value, sizeof(e->value), "%d", val);
	if (val < 0 || val > 31)
		return fail(e, IPTCAP_ERR_INVALID, field, -1, "the encoding must be 0..31");
	if (!(mask & (1u << val))) {
		char list[128];
		size_t used = 0;
		int b;

		list[0] = '\0';
		for (b = 0; b < 32 && used < sizeof(list); b++)
			if (mask & (1u << b)) {
				int n = snprintf(list + used, sizeof(list) - used, "%s%d",
						 used ? "," : "", b);
				if (n > 0)
					used += (size_t)n;
			}
		return fail(e, IPTCAP_ERR_CAPABILITY, field, -1, "this PT unit supports %s",
			    mask ? list : "none");
	}
	return IPTCAP_OK;
}

static enum iptcap_err need_feature(struct iptcap_config_error *e, const struct ipt_caps *caps,
				    uint64_t feat, enum iptcap_field field, int index)
{
	if (caps->features & feat)
		return IPTCAP_OK;
	e->value[0] = '\0';
	return fail(e, IPTCAP_ERR_CAPABILITY, field, index,
		    "needs the PT capability '%s', which this PT unit lacks",
		    iptcap_feature_name(feat));
}

/*
 * The CPU's linear address width (ipt_caps.virt_addr_bits: 48, or 57 with
 * 5-level paging); a module that predates the field reports 0 and checks
 * 48 bits.
 */
static unsigned int virt_bits(const struct ipt_caps *caps)
{
	unsigned int bits = caps->virt_addr_bits;

	return bits >= 48 && bits <= 64 ? bits : 48;
}

/* Canonical to @bits: bits 63:@bits-1 all equal. */
static bool canonical(uint64_t a, unsigned int bits)
{
	uint64_t top = a >> (bits - 1);

	return bits == 64 || top == 0 || top == (UINT64_MAX >> (bits - 1));
}

static enum iptcap_err check_ranges(const struct iptcap_config *cfg, const struct ipt_caps *caps,
				    struct ipt_config *out, struct iptcap_config_error *e)
{
	enum iptcap_err err;
	unsigned int i;

	if (!cfg->nr_ranges)
		return IPTCAP_OK;
	if (cfg->nr_ranges > IPT_MAX_ADDR_RANGES)
		return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_RANGES, -1,
			    "%u address ranges given; at most %d exist", cfg->nr_ranges,
			    IPT_MAX_ADDR_RANGES);
	for (i = 0; i < cfg->nr_ranges; i++) {
		const struct ipt_addr_range *r = &cfg->ranges[i];

		if (r->kind != IPT_RANGE_FILTER && r->kind != IPT_RANGE_STOP)
			return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_RANGES, (int)i,
				    "kind %u is neither IPT_RANGE_FILTER nor IPT_RANGE_STOP",
				    r->kind);
		if (!canonical(r->start, virt_bits(caps)) ||
		    !canonical(r->end, virt_bits(caps)) || r->start > r->end) {
			set_value(e, "0x%llx-0x%llx", (unsigned long long)r->start,
				  (unsigned long long)r->end);
			return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_RANGES, (int)i,
				    "give canonical addresses (%u-bit on this CPU) with "
				    "START <= END", virt_bits(caps));
		}
	}
	err = need_feature(e, caps, IPT_FEAT_IP_FILTER, IPTCAP_FIELD_RANGES, 0);
	if (err)
		return err;
	if (cfg->nr_ranges > caps->num_addr_ranges)
		return fail(e, IPTCAP_ERR_CAPABILITY, IPTCAP_FIELD_RANGES, -1,
			    "%u address ranges given, this PT unit has %u (its 'num_addr_ranges')",
			    cfg->nr_ranges, caps->num_addr_ranges);
	for (i = 0; i < cfg->nr_ranges; i++) {
		out->ranges[i] = cfg->ranges[i];
		out->ranges[i].reserved = 0;
	}
	return IPTCAP_OK;
}

static enum iptcap_err check_cpus(const struct iptcap_config *cfg, const struct ipt_caps *caps,
				  struct ipt_config *out, struct iptcap_config_error *e)
{
	bool any = false;
	unsigned int w;

	if (cfg->all_cpus) {
		out->flags |= IPT_CONFIG_ALL_CPUS;
		return IPTCAP_OK;
	}
	if (!cfg->cpu_mask || !cfg->cpu_mask_words || cfg->cpu_mask_words > IPT_MAX_CPU_MASK_WORDS)
		return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_CPUS, -1, "no CPU given");
	for (w = 0; w < cfg->cpu_mask_words; w++) {
		uint64_t m = cfg->cpu_mask[w];
		int b;

		for (b = 0; b < 64; b++) {
			unsigned int cpu = w * 64 + (unsigned int)b;

			if (!(m & (1ull << b)))
				continue;
			any = true;
			if (cpu >= caps->nr_cpus)
				return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_CPUS, -1,
					    "CPU %u does not exist (this system has %u)", cpu,
					    caps->nr_cpus);
		}
	}
	if (!any)
		return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_CPUS, -1, "no CPU given");
	out->cpu_mask_words = cfg->cpu_mask_words;
	out->cpu_mask_ptr = (uint64_t)(uintptr_t)cfg->cpu_mask;
	return IPTCAP_OK;
}

/*
 * One timing option: -1 is off; else it needs @feat and an encoding in
 * @mask, and lands in *@dst.
 */
static enum iptcap_err check_timing_one(struct iptcap_config_error *e,
					const struct ipt_caps *caps, int val,
					uint64_t feat, enum iptcap_field field,
					uint32_t mask, uint32_t *dst)
{
	enum iptcap_err err;

	if (val < 0)
		return IPTCAP_OK;
	err = need_feature(e, caps, feat, field, -1);
	if (!err)
		err = check_encoding(e, field, val, mask);
	if (!err)
		*dst = (uint32_t)val;
	return err;
}

static enum iptcap_err check_timing(const struct iptcap_config *cfg, const struct ipt_caps *caps,
				    struct ipt_config *out, struct iptcap_config_error *e)
{
	enum iptcap_err err;

	err = check_timing_one(e, caps, cfg->mtc_freq, IPT_FEAT_MTC, IPTCAP_FIELD_MTC_FREQ,
			       caps->mtc_freq_mask, &out->mtc_freq);
	if (!err)
		err = check_timing_one(e, caps, cfg->cyc_thresh, IPT_FEAT_PSB_CYC,
				       IPTCAP_FIELD_CYC_THRESH, caps->cyc_thresh_mask,
				       &out->cyc_thresh);
	if (!err)
		err = check_timing_one(e, caps, cfg->psb_freq, IPT_FEAT_PSB_CYC,
				       IPTCAP_FIELD_PSB_FREQ, caps->psb_freq_mask,
				       &out->psb_freq);
	if (err)
		return err;
	if (cfg->mtc_freq >= 0)
		out->trace_flags |= IPT_TRACE_MTC;
	if (cfg->cyc_thresh >= 0)
		out->trace_flags |= IPT_TRACE_CYC;
	return IPTCAP_OK;
}

enum iptcap_err iptcap_config_check(const struct iptcap_config *cfg,
				    const struct ipt_caps *caps,
				    struct ipt_config *out,
				    struct iptcap_config_error *e)
{
	struct iptcap_config_error scratch;
	enum iptcap_err err;
	uint64_t size;

	if (!e)
		e = &scratch;
	memset(e, 0, sizeof(*e));
	e->index = -1;
	memset(out, 0, sizeof(*out));
	if (caps->backend == IPT_BACKEND_NONE || caps->unavailable != IPT_UNAVAIL_NONE ||
	    !caps->max_trace_size)
		return fail(e, IPTCAP_ERR_NO_PT, IPTCAP_FIELD_NONE, -1, "no usable Intel PT unit");
	out->size = sizeof(*out);
	out->mode = IPT_MODE_CPU;
	if (cfg->per_thread) {
		unsigned int max = cfg->max_threads ? cfg->max_threads : IPTCAP_DEFAULT_MAX_THREADS;

		if (max > IPT_MAX_THREADS) {
			set_value(e, "%u", max);
			return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_MAX_THREADS, -1,
				    "a per-thread session holds at most %d threads",
				    IPT_MAX_THREADS);
		}
		out->mode = IPT_MODE_THREAD;
		out->max_threads = max;
	} else {
		err = check_cpus(cfg, caps, out, e);
		if (err)
			return err;
	}

	size = cfg->buffer_size;
	if (!size)
		size = IPTCAP_DEFAULT_BUFFER_SIZE < caps->max_trace_size ?
		       IPTCAP_DEFAULT_BUFFER_SIZE : caps->max_trace_size;
	set_value(e, "%llu", (unsigned long long)size);
	if (size % 4096)
		return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_BUFFER_SIZE, -1,
			    "not a multiple of 4096");
	if (size > caps->max_trace_size)
		return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_BUFFER_SIZE, -1,
			    "larger than this PT unit allows (%llu)",
			    (unsigned long long)caps->max_trace_size);
	if (cfg->per_thread && size > UINT64_MAX / out->max_threads)
		return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_BUFFER_SIZE, -1,
			    "%u buffers of this size overflow", out->max_threads);
	e->value[0] = '\0';
	out->buffer_size = size;
	if (cfg->stop_on_full)
		out->buffer_flags |= IPT_BUFFER_STOP_ON_FULL;
	if (cfg->stream) {
		unsigned int n = cfg->nr_regions ? cfg->nr_regions : IPT_STREAM_DEF_REGIONS;

		if (!(caps->features & IPT_FEAT_STREAM))
			return fail(e, IPTCAP_ERR_CAPABILITY, IPTCAP_FIELD_STREAM, -1,
				    "this ipt.ko does not offer streaming (IPT_FEAT_STREAM)");
		if (cfg->stop_on_full)
			return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_STREAM, -1,
				    "a stream never fills: it excludes stop_on_full");
		set_value(e, "%u", n);
		if (n < IPT_STREAM_MIN_REGIONS || n > IPT_STREAM_MAX_REGIONS || (n & (n - 1)))
			return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_STREAM, -1,
				    "regions must be a power of two from %d to %d",
				    IPT_STREAM_MIN_REGIONS, IPT_STREAM_MAX_REGIONS);
		if (size / n < 2 * 4096)
			return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_STREAM, -1,
				    "a region needs at least two pages: %llu bytes in %u regions",
				    (unsigned long long)size, n);
		e->value[0] = '\0';
		out->buffer_flags |= IPT_BUFFER_STREAM;
		out->nr_regions = cfg->nr_regions;
	}

	if (!cfg->user && !cfg->kernel)
		return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_PRIVILEGE, -1,
			    "neither user nor kernel code would be traced");
	out->trace_flags = IPT_TRACE_BRANCH;
	if (cfg->user)
		out->trace_flags |= IPT_TRACE_USER;
	if (cfg->kernel)
		out->trace_flags |= IPT_TRACE_KERNEL;
	if (cfg->tsc)
		out->trace_flags |= IPT_TRACE_TSC;
	if (cfg->no_retcomp)
		out->trace_flags |= IPT_TRACE_NO_RETCOMP;
	err = check_timing(cfg, caps, out, e);
	if (!err)
		err = check_ranges(cfg, caps, out, e);
	if (err)
		return err;
	if (cfg->cr3_filter) {
		err = need_feature(e, caps, IPT_FEAT_CR3_FILTER, IPTCAP_FIELD_CR3_MATCH, -1);
		if (err)
			return err;
		if (cfg->cr3_match & 0x1f) {
			set_value(e, "0x%llx", (unsigned long long)cfg->cr3_match);
			return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_CR3_MATCH, -1,
				    "a CR3 value has bits 4:0 clear (page-table base)");
		}
		/*
		 * Under page-table isolation user mode runs on CR3 | bit 12 (|
		 * bit 11 with PCIDs); the driver programs that for user-only
		 * traces, and no one value matches both halves.
		 */
		if ((caps->platform & IPT_PLAT_PTI) && cfg->user && cfg->kernel) {
			set_value(e, "0x%llx", (unsigned long long)cfg->cr3_match);
			return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_CR3_MATCH, -1,
				    "with page-table isolation a CR3 filter matches user or kernel "
				    "code, not both: trace one of them");
		}
		if ((caps->platform & IPT_PLAT_PTI) && !cfg->user && (cfg->cr3_match & 0x1000)) {
			set_value(e, "0x%llx", (unsigned long long)cfg->cr3_match);
			return fail(e, IPTCAP_ERR_INVALID, IPTCAP_FIELD_CR3_MATCH, -1,
				    "a user-mode CR3 (bit 12 set under page-table isolation) "
				    "never matches kernel code");
		}
		out->trace_flags |= IPT_TRACE_CR3_FILTER;
		out->cr3_match = cfg->cr3_match;
	}
	memset(e, 0, sizeof(*e));
	e->index = -1;
	return IPTCAP_OK;
}

void iptcap_config_error_format(const struct iptcap_config_error *e, const char *name,
				char *msg, size_t msg_len)
{
	char idx[16] = "";

	if (!msg || !msg_len)
		return;
	if (!name)
		name = iptcap_field_name(e->field);
	if (e->index >= 0 && e->field == IPTCAP_FIELD_RANGES && name == field_names[e->field])
		snprintf(idx, sizeof(idx), "[%d]", e->index);
	if (!*name)
		snprintf(msg, msg_len, "%s", e->reason);
	else
		snprintf(msg, msg_len, "%s%s%s%s: %s", name, idx, *e->value ? " " : "", e->value,
			 e->reason);
}

enum iptcap_err iptcap_config_to_ipt(const struct iptcap_config *cfg,
				     const struct ipt_caps *caps,
				     struct ipt_config *out,
				     char *msg, size_t msg_len)
{
	struct iptcap_config_error e;
	enum iptcap_err err;

	err = iptcap_config_check(cfg, caps, out, &e);
	if (msg && msg_len)
		msg[0] = '\0';
	if (err)
		iptcap_config_error_format(&e, NULL, msg, msg_len);
	return err;
}

static enum iptcap_err iptcap_cmd(struct iptcap *ipt, unsigned long req)
{
	struct ipt_cmd cmd = { .size = sizeof(cmd) };

	if (ioctl(ipt->fd, req, &cmd))
		return iptcap_fail(ipt, errno);
	ipt->last_errno = 0;
	return IPTCAP_OK;
}

enum iptcap_err iptcap_configure(struct iptcap *ipt, const struct iptcap_config *cfg,
				 char *msg, size_t msg_len)
{
	struct ipt_config ic;
	struct ipt_caps caps;
	enum iptcap_err err;

	if (ipt->configured) {
		if (msg && msg_len)
			snprintf(msg, msg_len, "a session is already configured on this handle");
		return IPTCAP_ERR_STATE;
	}
	err = iptcap_get_caps(ipt, &caps);
	if (err) {
		if (msg && msg_len)
			snprintf(msg, msg_len, "%s", iptcap_strerror(err));
		return err;
	}
	err = iptcap_config_to_ipt(cfg, &caps, &ic, msg, msg_len);
	if (err)
		return err;
	if (ioctl(ipt->fd, IPT_IOC_CONFIGURE, &ic)) {
		int e = errno;

		err = iptcap_fail(ipt, e);
		/*
		 * A module without per-thread mode refuses it with EINVAL (its
		 * max_threads is a reserved field); the probe tells that from
		 * an EINVAL of a module that has the mode.
		 */
		if (cfg->per_thread && e == EINVAL && !iptcap_has_thread_mode(ipt)) {
			ipt->last_errno = e;
			if (msg && msg_len)
				snprintf(msg, msg_len, "the loaded ipt.ko refuses per-thread mode "
					 "(IPT_MODE_THREAD: %s): it predates it; load a newer "
					 "module", strerror(e));
			return IPTCAP_ERR_NO_THREAD_MODE;
		}
		if (cfg->per_thread && e == ENOMEM && msg && msg_len) {
			snprintf(msg, msg_len, "%s (%u buffers of %llu bytes: try fewer threads "
				 "or a smaller size)", iptcap_strerror(err), ic.max_threads,
				 (unsigned long long)ic.buffer_size);
			return err;
		}
		/*
		 * Per-thread, user-only tracing needs no privilege: EPERM is
		 * the locked-memory limit (Documentation/abi.rst, "Locked
		 * memory").
		 */
		if (cfg->per_thread && !cfg->kernel && e == EPERM && msg && msg_len) {
			snprintf(msg, msg_len, "over the locked-memory limit: %u buffers of %llu bytes "
				 "(beyond ipt.mlock_kb KiB per CPU they count against RLIMIT_MEMLOCK, "
				 "see ulimit -l; chunks above 4 MiB need CAP_IPC_LOCK)",
				 ic.max_threads, (unsigned long long)ic.buffer_size);
			return err;
		}
		if (msg && msg_len)
			snprintf(msg, msg_len, "%s (%s)", iptcap_strerror(err), strerror(e));
		return err;
	}
	ipt->per_thread = cfg->per_thread;
	ipt->max_threads = ic.max_threads;
	ipt->configured = true;
	ipt->last_errno = 0;
	return IPTCAP_OK;
}

enum iptcap_err iptcap_start(struct iptcap *ipt)
{
	return iptcap_cmd(ipt, IPT_IOC_START);
}

enum iptcap_err iptcap_stop(struct iptcap *ipt)
{
	return iptcap_cmd(ipt, IPT_IOC_STOP);
}

enum iptcap_err iptcap_release(struct iptcap *ipt)
{
	enum iptcap_err err;

	iptcap_unmap_all(ipt);
	err = iptcap_cmd(ipt, IPT_IOC_RELEASE);
	if (!err) {
		ipt->configured = false;
		ipt->per_thread = false;
		ipt->max_threads = 0;
	}
	return err;
}

enum iptcap_err iptcap_trace_state(struct iptcap *ipt, unsigned int cpu,
				   struct ipt_trace_state *ts)
{
	memset(ts, 0, sizeof(*ts));
	ts->size = sizeof(*ts);
	ts->cpu = cpu;
	if (ioctl(ipt->fd, IPT_IOC_GET_TRACE, ts)) {
		ipt->last_errno = errno;
		if (errno == ENOENT)
			return ipt->per_thread ? IPTCAP_ERR_NO_SUCH_TRACE : IPTCAP_ERR_NO_SUCH_CPU;
		return iptcap_err_from_errno(errno);
	}
	ipt->last_errno = 0;
	return IPTCAP_OK;
}

bool iptcap_is_per_thread(const struct iptcap *ipt)
{
	return ipt->configured && ipt->per_thread;
}

bool iptcap_has_thread_mode(struct iptcap *ipt)
{
	struct ipt_attach a;
	int e;

	memset(&a, 0, sizeof(a));	/* size 0: malformed on purpose */
	if (!ioctl(ipt->fd, IPT_IOC_ATTACH, &a))
		return true;	/* cannot happen; the command exists */
	e = errno;
	return e != ENOTTY;
}

enum iptcap_err iptcap_attach(struct iptcap *ipt, uint32_t tid, unsigned int flags,
			      unsigned int *trace)
{
	struct ipt_attach a;

	if (ipt->configured && !ipt->per_thread) {
		ipt->last_errno = EINVAL;
		return IPTCAP_ERR_STATE;
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.flags = flags;
	a.tid = tid;
	if (ioctl(ipt->fd, IPT_IOC_ATTACH, &a)) {
		ipt->last_errno = errno;
		switch (errno) {
		case ENOSPC:
			return IPTCAP_ERR_NO_FREE_TRACE;
		case ENOTTY:
			return IPTCAP_ERR_NO_THREAD_MODE;
		case EINVAL:
			return ipt->configured ? IPTCAP_ERR_INVALID : IPTCAP_ERR_STATE;
		default:
			return iptcap_err_from_errno(errno);
		}
	}
	if (trace)
		*trace = a.trace;
	ipt->last_errno = 0;
	return IPTCAP_OK;
}

enum iptcap_err iptcap_detach(struct iptcap *ipt, unsigned int trace)
{
	struct ipt_detach d;

	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.trace = trace;
	if (ioctl(ipt->fd, IPT_IOC_DETACH, &d)) {
		ipt->last_errno = errno;
		if (errno == ENOENT)
			return IPTCAP_ERR_NO_SUCH_TRACE;
		if (errno == EINVAL && !ipt->per_thread)
			return IPTCAP_ERR_STATE;
		return iptcap_err_from_errno(errno);
	}
	ipt->last_errno = 0;
	return IPTCAP_OK;
}

enum iptcap_err iptcap_nr_traces(struct iptcap *ipt, unsigned int *n)
{
	struct ipt_trace_state ts;
	unsigned int lo = 0, hi;
	enum iptcap_err err;

	*n = 0;
	if (!ipt->configured || !ipt->per_thread) {
		ipt->last_errno = EINVAL;
		return IPTCAP_ERR_STATE;
	}
	/* Traces are handed out in order: [0, n) exist; binary search for n. */
	hi = ipt->max_threads;
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		err = iptcap_trace_state(ipt, mid, &ts);
		if (!err) {
			lo = mid + 1;
		} else if (err == IPTCAP_ERR_NO_SUCH_TRACE) {
			hi = mid;
		} else {
			return err;
		}
	}
	*n = lo;
	ipt->last_errno = 0;
	return IPTCAP_OK;
}

enum iptcap_err iptcap_trace_loss(const struct ipt_trace_state *ts)
{
	if (ts->status & IPT_TS_ERROR)
		return IPTCAP_ERR_HW_ERROR;
	if ((ts->status & IPT_TS_WRAPPED) || ts->bytes_lost)
		return IPTCAP_ERR_OVERWRITTEN;
	if (ts->status & IPT_TS_FULL)
		return IPTCAP_ERR_TRUNCATED;
	return IPTCAP_OK;
}

int iptcap_trace_segments(const struct ipt_trace_state *ts, struct iptcap_seg seg[2])
{
	uint64_t size = ts->buffer_size, valid = ts->bytes_valid;

	if (valid > size || ts->oldest > size || ts->head > size)
		return -1;
	if (!valid)
		return 0;
	if (ts->status & IPT_TS_WRAPPED) {
		/* A wrapped ring is full: [oldest, size) then [0, oldest). */
		if (valid != size)
			return -1;
		seg[0].off = ts->oldest;
		seg[0].len = size - ts->oldest;
		if (!ts->oldest)
			return 1;
		seg[1].off = 0;
		seg[1].len = ts->oldest;
		return 2;
	}
	/* Not wrapped: the oldest byte is at 0 and the trace ends at head. */
	if (ts->oldest != 0)
		return -1;
	seg[0].off = 0;
	seg[0].len = valid;
	return 1;
}

enum iptcap_err iptcap_map(struct iptcap *ipt, unsigned int cpu,
			   const void **buf, size_t *len)
{
	struct ipt_trace_state ts;
	struct iptcap_map *maps;
	enum iptcap_err err;
	void *p;
	size_t i;

	for (i = 0; i < ipt->nr_maps; i++)
		if (ipt->maps[i].cpu == cpu) {
			*buf = ipt->maps[i].addr;
			*len = ipt->maps[i].len;
			return IPTCAP_OK;
		}
	err = iptcap_trace_state(ipt, cpu, &ts);
	if (err)
		return err;
	maps = realloc(ipt->maps, (ipt->nr_maps + 1) * sizeof(*maps));
	if (!maps)
		return IPTCAP_ERR_NOMEM;
	ipt->maps = maps;
	p = mmap(NULL, ts.buffer_size, PROT_READ, MAP_SHARED, ipt->fd, (off_t)ts.mmap_offset);
	if (p == MAP_FAILED)
		return iptcap_fail(ipt, errno);
	maps[ipt->nr_maps].cpu = cpu;
	maps[ipt->nr_maps].addr = p;
	maps[ipt->nr_maps].len = ts.buffer_size;
	ipt->nr_maps++;
	*buf = p;
	*len = ts.buffer_size;
	return IPTCAP_OK;
}

enum iptcap_err iptcap_copy_segments(const void *buf, const struct ipt_trace_state *ts,
				     void *dst, size_t len, size_t *copied)
{
	struct iptcap_seg seg[2];
	size_t done = 0;
	int n, i;

	*copied = 0;
	n = iptcap_trace_segments(ts, seg);
	if (n < 0)
		return IPTCAP_ERR_ABI;
	if (ts->bytes_valid > len)
		return IPTCAP_ERR_INVALID;
	for (i = 0; i < n; i++) {
		memcpy((char *)dst + done, (const char *)buf + seg[i].off, seg[i].len);
		done += seg[i].len;
	}
	*copied = done;
	return IPTCAP_OK;
}

enum iptcap_err iptcap_copy_trace(struct iptcap *ipt, unsigned int cpu,
				  void *dst, size_t len, size_t *copied)
{
	struct ipt_trace_state ts;
	struct iptcap_seg seg[2];
	enum iptcap_err err;
	const void *buf;
	size_t blen;
	int n;

	*copied = 0;
	err = iptcap_trace_state(ipt, cpu, &ts);
	if (err)
		return err;
	n = iptcap_trace_segments(&ts, seg);
	if (n < 0)
		return IPTCAP_ERR_ABI;
	if (ts.bytes_valid > len)
		return IPTCAP_ERR_INVALID;
	if (!n)
		return IPTCAP_OK;
	err = iptcap_map(ipt, cpu, &buf, &blen);
	if (err)
		return err;
	return iptcap_copy_segments(buf, &ts, dst, len, copied);
}

int iptcap_fd(const struct iptcap *ipt)
{
	return ipt->fd;
}

enum iptcap_err iptcap_stream_release(struct iptcap *ipt, unsigned int trace, uint64_t released)
{
	struct ipt_stream_release r;
	int rc, tries = 0;

	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.trace = trace;
	r.released = released;
	/*
	 * EAGAIN: a thread's trace that kept migrating while the kernel tried
	 * to reach the CPU it runs on; nothing changed, so the call may simply
	 * be repeated (abi.rst).  A bounded number of times: each try needs
	 * the thread to move again.
	 */
	while ((rc = ioctl(ipt->fd, IPT_IOC_STREAM_RELEASE, &r)) && errno == EAGAIN &&
	       ++tries < IPTCAP_RELEASE_TRIES)
		sched_yield();
	if (rc) {
		ipt->last_errno = errno;
		if (errno == ENOENT)
			return ipt->per_thread ? IPTCAP_ERR_NO_SUCH_TRACE : IPTCAP_ERR_NO_SUCH_CPU;
		return iptcap_err_from_errno(errno);
	}
	ipt->last_errno = 0;
	return IPTCAP_OK;
}

enum iptcap_err iptcap_get_gaps(struct iptcap *ipt, unsigned int trace, uint64_t first,
				struct ipt_gap *gaps, unsigned int nr, unsigned int *got,
				uint64_t *total, uint64_t *oldest)
{
	struct ipt_gaps g;

	*got = 0;
	memset(&g, 0, sizeof(g));
	g.size = sizeof(g);
	g.trace = trace;
	g.entry_size = sizeof(*gaps);
	g.nr_entries = gaps ? nr : 0;
	g.first = first;
	g.entries_ptr = (uintptr_t)(gaps && nr ? gaps : NULL);
	if (ioctl(ipt->fd, IPT_IOC_GET_GAPS, &g)) {
		ipt->last_errno = errno;
		if (errno == ENOENT)
			return ipt->per_thread ? IPTCAP_ERR_NO_SUCH_TRACE : IPTCAP_ERR_NO_SUCH_CPU;
		return iptcap_err_from_errno(errno);
	}
	if (g.nr_entries > nr || g.oldest > g.total) {
		ipt->last_errno = EPROTO;
		return IPTCAP_ERR_ABI;
	}
	*got = g.nr_entries;
	*total = g.total;
	*oldest = g.oldest;
	ipt->last_errno = 0;
	return IPTCAP_OK;
}

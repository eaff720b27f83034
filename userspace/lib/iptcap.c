// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libiptcap: device access and capability queries.
 */
#include <errno.h>
#include <fcntl.h>
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
	[IPTCAP_ERR_BUSY] = "Intel PT is busy (used by another session or tracer)",
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

#define MSG(...) do { if (msg && msg_len) snprintf(msg, msg_len, __VA_ARGS__); } while (0)

/* Check one encoding against its caps mask; names the option on failure. */
static enum iptcap_err check_encoding(const char *opt, int val, uint32_t mask,
				      char *msg, size_t msg_len)
{
	if (val < 0 || val > 31) {
		MSG("%s %d: the encoding must be 0..31", opt, val);
		return IPTCAP_ERR_INVALID;
	}
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
		MSG("%s %d: this PT unit supports %s", opt, val, mask ? list : "none");
		return IPTCAP_ERR_CAPABILITY;
	}
	return IPTCAP_OK;
}

static enum iptcap_err need_feature(const struct ipt_caps *caps, uint64_t feat,
				    const char *opt, char *msg, size_t msg_len)
{
	if (caps->features & feat)
		return IPTCAP_OK;
	MSG("%s needs the PT capability '%s', which this PT unit lacks", opt,
	    iptcap_feature_name(feat));
	return IPTCAP_ERR_CAPABILITY;
}

static const char *range_opt(uint32_t kind)
{
	return kind == IPT_RANGE_STOP ? "--stop-range" : "--filter";
}

/* A canonical 48-bit linear address: bits 63:47 all equal. */
static bool canonical(uint64_t a)
{
	uint64_t top = a >> 47;

	return top == 0 || top == 0x1ffff;
}

static enum iptcap_err check_ranges(const struct iptcap_config *cfg, const struct ipt_caps *caps,
				    struct ipt_config *out, char *msg, size_t msg_len)
{
	enum iptcap_err err;
	unsigned int i;

	if (!cfg->nr_ranges)
		return IPTCAP_OK;
	if (cfg->nr_ranges > IPT_MAX_ADDR_RANGES) {
		MSG("%u address ranges given; at most %d exist", cfg->nr_ranges,
		    IPT_MAX_ADDR_RANGES);
		return IPTCAP_ERR_INVALID;
	}
	for (i = 0; i < cfg->nr_ranges; i++) {
		const struct ipt_addr_range *r = &cfg->ranges[i];

		if (r->kind != IPT_RANGE_FILTER && r->kind != IPT_RANGE_STOP) {
			MSG("address range %u has no valid kind", i);
			return IPTCAP_ERR_INVALID;
		}
		if (!canonical(r->start) || !canonical(r->end) || r->start > r->end) {
			MSG("%s 0x%llx-0x%llx: give canonical addresses with START <= END",
			    range_opt(r->kind), (unsigned long long)r->start,
			    (unsigned long long)r->end);
			return IPTCAP_ERR_INVALID;
		}
	}
	err = need_feature(caps, IPT_FEAT_IP_FILTER, range_opt(cfg->ranges[0].kind), msg, msg_len);
	if (err)
		return err;
	if (cfg->nr_ranges > caps->num_addr_ranges) {
		MSG("%s: %u address ranges given (--filter and --stop-range together), "
		    "this PT unit has %u (its 'num_addr_ranges')",
		    range_opt(cfg->ranges[cfg->nr_ranges - 1].kind), cfg->nr_ranges,
		    caps->num_addr_ranges);
		return IPTCAP_ERR_CAPABILITY;
	}
	for (i = 0; i < cfg->nr_ranges; i++) {
		out->ranges[i] = cfg->ranges[i];
		out->ranges[i].reserved = 0;
	}
	return IPTCAP_OK;
}

enum iptcap_err iptcap_config_to_ipt(const struct iptcap_config *cfg,
				     const struct ipt_caps *caps,
				     struct ipt_config *out,
				     char *msg, size_t msg_len)
{
	enum iptcap_err err;
	uint64_t size;
	unsigned int w;

	memset(out, 0, sizeof(*out));
	if (msg && msg_len)
		msg[0] = '\0';
	if (caps->backend == IPT_BACKEND_NONE || caps->unavailable != IPT_UNAVAIL_NONE ||
	    !caps->max_trace_size) {
		MSG("no usable Intel PT unit");
		return IPTCAP_ERR_NO_PT;
	}
	out->size = sizeof(*out);
	out->mode = IPT_MODE_CPU;
	if (cfg->per_thread) {
		unsigned int max = cfg->max_threads ? cfg->max_threads : IPTCAP_DEFAULT_MAX_THREADS;

		if (max > IPT_MAX_THREADS) {
			MSG("%u threads: a per-thread session holds at most %d", max,
			    IPT_MAX_THREADS);
			return IPTCAP_ERR_INVALID;
		}
		out->mode = IPT_MODE_THREAD;
		out->max_threads = max;
	} else if (cfg->all_cpus) {
		out->flags |= IPT_CONFIG_ALL_CPUS;
	} else {
		bool any = false;

		if (!cfg->cpu_mask || !cfg->cpu_mask_words ||
		    cfg->cpu_mask_words > IPT_MAX_CPU_MASK_WORDS) {
			MSG("no CPU given");
			return IPTCAP_ERR_INVALID;
		}
		for (w = 0; w < cfg->cpu_mask_words; w++) {
			uint64_t m = cfg->cpu_mask[w];
			int b;

			for (b = 0; b < 64; b++) {
				if (!(m & (1ull << b)))
					continue;
				any = true;
				if ((uint64_t)w * 64 + (unsigned int)b >= caps->nr_cpus) {
					MSG("CPU %u does not exist (this system has %u)",
					    w * 64 + (unsigned int)b, caps->nr_cpus);
					return IPTCAP_ERR_INVALID;
				}
			}
		}
		if (!any) {
			MSG("no CPU given");
			return IPTCAP_ERR_INVALID;
		}
		out->cpu_mask_words = cfg->cpu_mask_words;
		out->cpu_mask_ptr = (uint64_t)(uintptr_t)cfg->cpu_mask;
	}

	size = cfg->buffer_size;
	if (!size)
		size = IPTCAP_DEFAULT_BUFFER_SIZE < caps->max_trace_size ?
		       IPTCAP_DEFAULT_BUFFER_SIZE : caps->max_trace_size;
	if (size % 4096) {
		MSG("buffer size %llu is not a multiple of 4096", (unsigned long long)size);
		return IPTCAP_ERR_INVALID;
	}
	if (size > caps->max_trace_size) {
		MSG("buffer size %llu is larger than this PT unit allows (%llu)",
		    (unsigned long long)size, (unsigned long long)caps->max_trace_size);
		return IPTCAP_ERR_INVALID;
	}
	if (cfg->per_thread && size > UINT64_MAX / out->max_threads) {
		MSG("%u buffers of %llu bytes overflow", out->max_threads,
		    (unsigned long long)size);
		return IPTCAP_ERR_INVALID;
	}
	out->buffer_size = size;
	if (cfg->stop_on_full)
		out->buffer_flags |= IPT_BUFFER_STOP_ON_FULL;

	if (!cfg->user && !cfg->kernel) {
		MSG("neither user nor kernel code would be traced");
		return IPTCAP_ERR_INVALID;
	}
	out->trace_flags = IPT_TRACE_BRANCH;
	if (cfg->user)
		out->trace_flags |= IPT_TRACE_USER;
	if (cfg->kernel)
		out->trace_flags |= IPT_TRACE_KERNEL;
	if (cfg->tsc)
		out->trace_flags |= IPT_TRACE_TSC;
	if (cfg->no_retcomp)
		out->trace_flags |= IPT_TRACE_NO_RETCOMP;
	if (cfg->mtc_freq >= 0) {
		err = need_feature(caps, IPT_FEAT_MTC, "--mtc", msg, msg_len);
		if (!err)
			err = check_encoding("--mtc", cfg->mtc_freq, caps->mtc_freq_mask,
					     msg, msg_len);
		if (err)
			return err;
		out->trace_flags |= IPT_TRACE_MTC;
		out->mtc_freq = (uint32_t)cfg->mtc_freq;
	}
	if (cfg->cyc_thresh >= 0) {
		err = need_feature(caps, IPT_FEAT_PSB_CYC, "--cyc", msg, msg_len);
		if (!err)
			err = check_encoding("--cyc", cfg->cyc_thresh, caps->cyc_thresh_mask,
					     msg, msg_len);
		if (err)
			return err;
		out->trace_flags |= IPT_TRACE_CYC;
		out->cyc_thresh = (uint32_t)cfg->cyc_thresh;
	}
	if (cfg->psb_freq >= 0) {
		err = need_feature(caps, IPT_FEAT_PSB_CYC, "--psb", msg, msg_len);
		if (!err)
			err = check_encoding("--psb", cfg->psb_freq, caps->psb_freq_mask,
					     msg, msg_len);
		if (err)
			return err;
		out->psb_freq = (uint32_t)cfg->psb_freq;
	}
	err = check_ranges(cfg, caps, out, msg, msg_len);
	if (err)
		return err;
	if (cfg->cr3_filter) {
		err = need_feature(caps, IPT_FEAT_CR3_FILTER, "--cr3", msg, msg_len);
		if (err)
			return err;
		if (cfg->cr3_match & 0x1f) {
			MSG("--cr3 0x%llx: a CR3 value has bits 4:0 clear (page-table base)",
			    (unsigned long long)cfg->cr3_match);
			return IPTCAP_ERR_INVALID;
		}
		out->trace_flags |= IPT_TRACE_CR3_FILTER;
		out->cr3_match = cfg->cr3_match;
	}
	return IPTCAP_OK;
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

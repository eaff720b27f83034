// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libiptcap: device access and capability queries.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "iptcap.h"

struct iptcap {
	int fd;
	int last_errno;
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

void iptcap_close(struct iptcap *ipt)
{
	if (!ipt)
		return;
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

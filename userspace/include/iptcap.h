/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libiptcap: capture Intel Processor Trace through ipt.ko (/dev/ipt).
 *
 * Every function returns an enum iptcap_err; none prints or exits.  The
 * errno behind the last failure on a handle is kept for diagnostics
 * (iptcap_last_errno()).  Documentation/libiptcap.rst is the reference.
 */
#ifndef IPTCAP_H
#define IPTCAP_H

#include <stdint.h>
#include <linux/ipt.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * enum iptcap_err - outcome of a library call
 */
enum iptcap_err {
	IPTCAP_OK = 0,
	IPTCAP_ERR_INVALID,	/* a parameter is invalid (EINVAL, E2BIG) */
	IPTCAP_ERR_NO_DEVICE,	/* /dev/ipt is missing: ipt.ko not loaded */
	IPTCAP_ERR_NO_PT,	/* no PT unit (ENODEV) */
	IPTCAP_ERR_BUSY,	/* PT is in use (EBUSY) */
	IPTCAP_ERR_PERMISSION,	/* needs CAP_PERFMON or root (EPERM, EACCES) */
	IPTCAP_ERR_NOMEM,	/* out of memory (ENOMEM) */
	IPTCAP_ERR_UNSUPPORTED,	/* the kernel does not know the request (ENOTTY) */
	IPTCAP_ERR_ABI,		/* the module speaks an incompatible ABI */
	IPTCAP_ERR_IO,		/* any other system error; see iptcap_last_errno() */
	IPTCAP_ERR__COUNT	/* number of values; not an error */
};

struct iptcap;

/* A short, static, human description of @err. */
const char *iptcap_strerror(enum iptcap_err err);
/* The enum iptcap_err a failing system call's errno maps to. */
enum iptcap_err iptcap_err_from_errno(int err);

/*
 * Open the device (@path NULL means IPT_DEVICE_PATH).  On success *@out
 * is a handle to release with iptcap_close(); on failure *@out is NULL.
 */
enum iptcap_err iptcap_open(const char *path, struct iptcap **out);
void iptcap_close(struct iptcap *ipt);
/* The errno of the last failed call on @ipt (0 if none). */
int iptcap_last_errno(const struct iptcap *ipt);

/* Read the PT unit's capabilities (IPT_IOC_GET_CAPS). */
enum iptcap_err iptcap_get_caps(struct iptcap *ipt, struct ipt_caps *caps);

/* Names for the values in struct ipt_caps; NULL for unknown values. */
const char *iptcap_backend_name(uint32_t backend);
const char *iptcap_unavail_str(uint32_t why);
/* @bit is one IPT_FEAT_* bit; the name is a stable lower_case token. */
const char *iptcap_feature_name(uint64_t bit);

#ifdef __cplusplus
}
#endif

#endif /* IPTCAP_H */

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

#include <stdbool.h>
#include <stddef.h>
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
	IPTCAP_ERR_CAPABILITY,	/* the PT unit lacks a capability the config needs */
	IPTCAP_ERR_STATE,	/* the call does not fit the session's state */
	IPTCAP_ERR_NO_SUCH_CPU,	/* the CPU is not one of the session's (ENOENT) */
	IPTCAP_ERR_OVERWRITTEN,	/* a ring wrapped: its oldest bytes were overwritten */
	IPTCAP_ERR_TRUNCATED,	/* a stop-on-full buffer filled: later bytes were lost */
	IPTCAP_ERR_HW_ERROR,	/* the unit reported an operational error (STATUS.Error) */
	IPTCAP_ERR_NO_SPACE,	/* no space left on the output device (ENOSPC, EDQUOT) */
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

/* ---- per-CPU sessions --------------------------------------------------- */

#define IPTCAP_DEFAULT_BUFFER_SIZE	(4ull << 20)

/**
 * struct iptcap_config - a per-CPU session, as named options
 * @all_cpus: trace every present CPU (@cpu_mask is ignored)
 * @cpu_mask: bitmap of CPUs (bit n of word n / 64 is CPU n) when !@all_cpus
 * @cpu_mask_words: words at @cpu_mask (1..IPT_MAX_CPU_MASK_WORDS)
 * @buffer_size: bytes per CPU, a multiple of 4096; 0: the default (4 MiB,
 *        or ipt_caps.max_trace_size when smaller)
 * @stop_on_full: stop when the buffer is full; else a ring (flight recorder)
 * @user: trace CPL > 0
 * @kernel: trace CPL 0 (privileged)
 * @tsc: TSC packets
 * @mtc_freq: MTC packets with CTL.MTCFreq = @mtc_freq; -1: no MTC
 * @cyc_thresh: CYC packets with CTL.CycThresh = @cyc_thresh; -1: no CYC
 * @psb_freq: CTL.PSBFreq; -1: the default (0)
 * @no_retcomp: disable return compression
 *
 * Initialise with iptcap_config_init(); every field has a name, none is a
 * raw register value except the encodings the SDM defines (MTCFreq,
 * CycThresh, PSBFreq), which are checked against the caps' masks.
 */
struct iptcap_config {
	bool all_cpus;
	const uint64_t *cpu_mask;
	unsigned int cpu_mask_words;
	uint64_t buffer_size;
	bool stop_on_full;
	bool user;
	bool kernel;
	bool tsc;
	int mtc_freq;
	int cyc_thresh;
	int psb_freq;
	bool no_retcomp;
};

/* Defaults: all CPUs, user and kernel, ring, default size, no timing. */
void iptcap_config_init(struct iptcap_config *cfg);

/*
 * Check @cfg against @caps and translate it into @out.  On failure, @msg
 * (if not NULL) receives one sentence saying what is wrong; a missing
 * capability is named by its iptcap_feature_name() ("mtc", "psb_cyc", ...)
 * and gives IPTCAP_ERR_CAPABILITY.  @out->cpu_mask_ptr points into @cfg's
 * @cpu_mask, which must outlive @out's use.  Pure: no system call.
 */
enum iptcap_err iptcap_config_to_ipt(const struct iptcap_config *cfg,
				     const struct ipt_caps *caps,
				     struct ipt_config *out,
				     char *msg, size_t msg_len);

/*
 * Configure a per-CPU session on @ipt: read the caps, check @cfg (see
 * iptcap_config_to_ipt(), @msg as there) and allocate the buffers.
 * The session belongs to @ipt: iptcap_close() ends it.
 */
enum iptcap_err iptcap_configure(struct iptcap *ipt, const struct iptcap_config *cfg,
				 char *msg, size_t msg_len);
enum iptcap_err iptcap_start(struct iptcap *ipt);
enum iptcap_err iptcap_stop(struct iptcap *ipt);
/* Free the buffers (unmapping what iptcap_map() mapped); back to idle. */
enum iptcap_err iptcap_release(struct iptcap *ipt);

/* The state of @cpu's trace; IPTCAP_ERR_NO_SUCH_CPU if not in the session. */
enum iptcap_err iptcap_trace_state(struct iptcap *ipt, unsigned int cpu,
				   struct ipt_trace_state *ts);
/*
 * What a trace state says about lost data: IPTCAP_OK (complete),
 * IPTCAP_ERR_HW_ERROR, IPTCAP_ERR_OVERWRITTEN (ring wrapped) or
 * IPTCAP_ERR_TRUNCATED (stop-on-full filled), in that order of precedence.
 */
enum iptcap_err iptcap_trace_loss(const struct ipt_trace_state *ts);

/*
 * Map @cpu's buffer read-only (zero copy).  The mapping stays valid until
 * iptcap_release() or iptcap_close(); mapping twice returns the same one.
 */
enum iptcap_err iptcap_map(struct iptcap *ipt, unsigned int cpu,
			   const void **buf, size_t *len);

/**
 * struct iptcap_seg - a piece of a buffer, in trace order
 * @off: buffer offset
 * @len: bytes
 */
struct iptcap_seg {
	uint64_t off;
	uint64_t len;
};

/*
 * The trace in @ts as at most two buffer pieces in order, oldest byte
 * first: a wrapped ring is [oldest, size) then [0, oldest); anything else
 * is [0, bytes_valid) (a full stop-on-full buffer: exactly its size).
 * Returns the number of pieces (0 for an empty trace) or -1 when @ts is
 * inconsistent (offsets beyond the buffer).  Pure.
 */
int iptcap_trace_segments(const struct ipt_trace_state *ts, struct iptcap_seg seg[2]);

/*
 * Copy the trace of @cpu in order into @dst (at most @len bytes); *@copied
 * receives the bytes copied.  IPTCAP_ERR_INVALID if @len is smaller than
 * the trace (nothing is copied then; iptcap_trace_state() gives the size).
 */
enum iptcap_err iptcap_copy_trace(struct iptcap *ipt, unsigned int cpu,
				  void *dst, size_t len, size_t *copied);

#ifdef __cplusplus
}
#endif

#endif /* IPTCAP_H */

/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ipt: Intel Processor Trace driver, userspace ABI.
 *
 * This header is the only interface between ipt.ko and userspace; the full
 * reference is Documentation/abi.rst.
 *
 * Conventions shared by every command:
 *  - Every argument is a struct whose first member is __u32 size: the size
 *    of the struct as the caller knows it.  The kernel accepts any size from
 *    the command's first published size (IPT_*_SIZE_VER0) up to one page:
 *    a caller built against an older header passes a smaller struct and
 *    gets the fields it knows; a caller built against a newer header passes
 *    a larger one, whose unknown tail must be zero on input (-E2BIG
 *    otherwise) and is zeroed on output.  On output the kernel stores in
 *    size the number of bytes it knows about.
 *  - The size encoded in the ioctl number is not used; the command is
 *    identified by its type, number and direction only.  Unknown commands
 *    fail with -ENOTTY.
 *  - Every flags word and reserved member must be zero on input (-EINVAL).
 *  - Sizes, offsets and addresses are 64-bit.
 */
#ifndef _UAPI_LINUX_IPT_H
#define _UAPI_LINUX_IPT_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define IPT_DEVICE_PATH		"/dev/ipt"
#define IPT_IOC_MAGIC		0xB8

/* Bumped on incompatible changes only; compatible growth uses sizes. */
#define IPT_ABI_VERSION		1

/**
 * enum ipt_backend - what executes the PT instructions
 * @IPT_BACKEND_NONE: no Intel PT unit: only IPT_IOC_GET_CAPS works
 * @IPT_BACKEND_NATIVE: the CPU's own Intel PT unit
 * @IPT_BACKEND_SIM: the simulated PT unit (module ipt_sim)
 */
enum ipt_backend {
	IPT_BACKEND_NONE = 0,
	IPT_BACKEND_NATIVE = 1,
	IPT_BACKEND_SIM = 2,
};

/**
 * enum ipt_unavail - why there is no usable PT unit (ipt_caps.unavailable)
 * @IPT_UNAVAIL_NONE: PT is available
 * @IPT_UNAVAIL_NOT_INTEL: the CPU vendor is not Intel
 * @IPT_UNAVAIL_NO_PT: CPUID.(EAX=07H,ECX=0):EBX[25] is 0
 * @IPT_UNAVAIL_NO_LEAF_14: CPUID leaf 14H is not enumerated
 * @IPT_UNAVAIL_NO_OUTPUT: neither ToPA nor single-range output is enumerated
 */
enum ipt_unavail {
	IPT_UNAVAIL_NONE = 0,
	IPT_UNAVAIL_NOT_INTEL = 1,
	IPT_UNAVAIL_NO_PT = 2,
	IPT_UNAVAIL_NO_LEAF_14 = 3,
	IPT_UNAVAIL_NO_OUTPUT = 4,
};

/* ipt_caps.features: one bit per enumerated feature. */
#define IPT_FEAT_CR3_FILTER	_BITULL(0)	/* CPUID.14H.0:EBX[0] */
#define IPT_FEAT_PSB_CYC	_BITULL(1)	/* EBX[1]: PSBFreq, CYC, CycThresh */
#define IPT_FEAT_IP_FILTER	_BITULL(2)	/* EBX[2]: ADDRn filter and TraceStop */
#define IPT_FEAT_MTC		_BITULL(3)	/* EBX[3] */
#define IPT_FEAT_PTWRITE	_BITULL(4)	/* EBX[4] */
#define IPT_FEAT_POWER_EVENTS	_BITULL(5)	/* EBX[5] */
#define IPT_FEAT_PSB_PMI_KEEP	_BITULL(6)	/* EBX[6]: PSB and PMI preservation */
#define IPT_FEAT_EVENT_TRACE	_BITULL(7)	/* EBX[7] */
#define IPT_FEAT_TNT_DISABLE	_BITULL(8)	/* EBX[8] */
#define IPT_FEAT_TOPA		_BITULL(16)	/* ECX[0]: ToPA output */
#define IPT_FEAT_TOPA_MULTI	_BITULL(17)	/* ECX[1]: many entries per table */
#define IPT_FEAT_SINGLE_RANGE	_BITULL(18)	/* ECX[2]: single-range output */
#define IPT_FEAT_TRANSPORT	_BITULL(19)	/* ECX[3]: trace transport output */
#define IPT_FEAT_LIP		_BITULL(20)	/* ECX[31]: IPs include CS base */
#define IPT_FEAT_XSAVES_PT	_BITULL(32)	/* XSAVES handles the PT component */

/**
 * struct ipt_cpuid_regs - one CPUID result, as the CPU returned it
 * @eax: EAX
 * @ebx: EBX
 * @ecx: ECX
 * @edx: EDX
 */
struct ipt_cpuid_regs {
	__u32 eax;
	__u32 ebx;
	__u32 ecx;
	__u32 edx;
};

/**
 * struct ipt_caps - what the PT unit can do (IPT_IOC_GET_CAPS)
 * @size: in: the caller's sizeof(struct ipt_caps); out: the kernel's
 * @flags: in: must be 0
 * @abi_version: IPT_ABI_VERSION of the running module
 * @backend: enum ipt_backend
 * @unavailable: enum ipt_unavail; IPT_UNAVAIL_NONE when @backend can trace
 * @vendor: CPUID.0 vendor string, NUL-terminated
 * @family: display family (base + extended), from CPUID.1:EAX
 * @model: display model (base + extended << 4 for family 6 and 15)
 * @stepping: stepping
 * @features: IPT_FEAT_* bits, decoded from @cpuid_14_0 and CPUID leaf 0DH
 * @num_addr_ranges: address ranges usable as filter or TraceStop (0..4)
 * @mtc_freq_mask: supported CTL.MTCFreq encodings (bit n: MTCFreq = n)
 * @cyc_thresh_mask: supported CTL.CycThresh encodings
 * @psb_freq_mask: supported CTL.PSBFreq encodings
 * @nom_freq: maximum non-turbo ratio, MSR_PLATFORM_INFO[15:8] (0: unknown)
 * @xsave_pt_size: size of the XSAVES PT component, CPUID.(0DH,8):EAX
 *                 (0 when XSAVES cannot save PT state)
 * @nr_cpus: number of possible CPUs (CPU ids are below this)
 * @max_topa_order: largest ToPA region, as log2(bytes) (12..27)
 * @max_trace_size: largest buffer one trace may have, in bytes
 * @cpuid_14_0: raw CPUID.(EAX=14H,ECX=0) (zero when not enumerated)
 * @cpuid_14_1: raw CPUID.(EAX=14H,ECX=1)
 * @cpuid_15: raw CPUID.15H: TSC / crystal ratio, as decoders need it
 *
 * When @unavailable is not IPT_UNAVAIL_NONE, only the CPU identity fields
 * are filled and every PT field is zero.
 */
struct ipt_caps {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 backend;
	__u32 unavailable;
	char vendor[16];
	__u32 family;
	__u32 model;
	__u32 stepping;
	__u64 features;
	__u32 num_addr_ranges;
	__u32 mtc_freq_mask;
	__u32 cyc_thresh_mask;
	__u32 psb_freq_mask;
	__u32 nom_freq;
	__u32 xsave_pt_size;
	__u32 nr_cpus;
	__u32 max_topa_order;
	__u64 max_trace_size;
	struct ipt_cpuid_regs cpuid_14_0;
	struct ipt_cpuid_regs cpuid_14_1;
	struct ipt_cpuid_regs cpuid_15;
};

#define IPT_CAPS_SIZE_VER0	144	/* sizeof first published ipt_caps */

#define IPT_IOC_GET_CAPS	_IOWR(IPT_IOC_MAGIC, 0x00, struct ipt_caps)

#endif /* _UAPI_LINUX_IPT_H */

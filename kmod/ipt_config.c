// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: validating a session's configuration - all of it: the fields, the
 * caller's privilege and CPU mask (ipt_config_parse(), before the device
 * lock), the trace fields against the unit's capabilities, turned into
 * MSR values, and the buffer limits (ipt_config_validate(), under it);
 * and the limits the capabilities report (ipt_config_limits()).
 *
 * Userspace names what it wants (struct ipt_config); it never passes a raw
 * IA32_RTIT_CTL.  Every field is checked here, against struct ipt_caps,
 * so that the values programmed later cannot #GP for a reason the caller
 * could have been told about.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitfield.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "ipt.h"

#define IPT_TRACE_ALL	(IPT_TRACE_USER | IPT_TRACE_KERNEL |		\
			 IPT_TRACE_BRANCH | IPT_TRACE_TSC | IPT_TRACE_MTC |	\
			 IPT_TRACE_CYC | IPT_TRACE_NO_RETCOMP |		\
			 IPT_TRACE_PTWRITE | IPT_TRACE_PTWRITE_FUP |	\
			 IPT_TRACE_POWER_EVENTS | IPT_TRACE_CR3_FILTER)

/*
 * Canonical to the CPU's linear address width (ipt_caps.virt_addr_bits,
 * 48 or 57), as pt.c's filter check (pt.c:1384-1401): ADDRn writes of
 * addresses that are not are #GP (SDM vol. 3C, 33.2.8.5).  A width
 * ipt_caps_probe() cannot have set counts as 48.
 */
static bool ipt_canonical(u64 la, u32 bits)
{
	unsigned int shift = bits >= 48 && bits <= 64 ? 64 - bits : 16;

	return ((s64)(la << shift) >> shift) == (s64)la;
}

/*
 * The CR3_MATCH for @cfg's cr3_match, the CR3 of an address space as the
 * kernel runs on it.  Under page-table isolation user mode runs on another
 * CR3 (ipt_caps_cr3_user_bits()): a user-only trace gets that one, a
 * kernel-only trace the value as given (which then must not be a user
 * CR3), and a trace of both is refused, since one CR3_MATCH value matches
 * only one of the two.
 */
static int ipt_check_cr3(const struct ipt_config *cfg,
			 const struct ipt_caps *caps, u64 *cr3_match)
{
	u64 user = ipt_caps_cr3_user_bits(caps);
	u64 tf = cfg->trace_flags;

	*cr3_match = cfg->cr3_match;
	if (!user)
		return 0;
	if ((tf & IPT_TRACE_USER) && (tf & IPT_TRACE_KERNEL))
		return -EINVAL;
	if (tf & IPT_TRACE_USER)
		*cr3_match |= user;
	else if (cfg->cr3_match & user)
		return -EINVAL;
	return 0;
}

/* An encoding @val (0..15) of a CTL field, supported per @mask. */
static int ipt_check_encoding(u32 val, u32 mask)
{
	if (val > 15)
		return -EINVAL;
	return mask & BIT(val) ? 0 : -EOPNOTSUPP;
}

static int ipt_check_ranges(const struct ipt_config *cfg,
			    const struct ipt_caps *caps,
			    struct ipt_hwcfg *hw)
{
	unsigned int i;

	for (i = 0; i < IPT_MAX_ADDR_RANGES; i++) {
		const struct ipt_addr_range *r = &cfg->ranges[i];

		if (r->reserved || r->kind > IPT_RANGE_STOP)
			return -EINVAL;
		if (r->kind == IPT_RANGE_OFF) {
			if (r->start || r->end)
				return -EINVAL;
			continue;
		}
		if (r->start > r->end ||
		    !ipt_canonical(r->start, caps->virt_addr_bits) ||
		    !ipt_canonical(r->end, caps->virt_addr_bits))
			return -EINVAL;
		if (i >= caps->num_addr_ranges)
			return -EOPNOTSUPP;
		hw->ctl |= (u64)r->kind << IPT_RTIT_CTL_ADDR_CFG_SHIFT(i);
		hw->addr_a[i] = r->start;
		hw->addr_b[i] = r->end;
	}
	return 0;
}

/**
 * ipt_config_check() - validate the trace part of a configuration
 * @cfg: the configuration, as copied from userspace
 * @caps: what the unit can do
 * @privileged: the caller may trace the kernel (perfmon_capable())
 * @hwcfg: receives the MSR values; untouched on failure
 *
 * Checks @cfg's trace fields (mode, trace_flags, MTC / CYC / PSB
 * encodings, CR3 filter, address ranges; not the CPU mask or buffer
 * fields) and that the unit has ToPA output, the output scheme sessions
 * use (with one output entry per table where the unit allows no more).
 *
 * On parts with erratum BDM106 (ipt_caps_branch_required()) enabling
 * without BranchEn is #GP, so a configuration without IPT_TRACE_BRANCH is
 * refused here rather than failing at start, as pt_event_valid() refuses
 * the perf event (pt.c:391-407).  Where the unit has no configurable PSB
 * the STATUS written at each start leaves PacketByteCnt out (@hwcfg's
 * status_keep): a non-zero value there is #GP.  Under page-table isolation
 * (IPT_PLAT_PTI) a user-only CR3 filter programs the user-mode CR3.
 *
 * Return: 0; -EINVAL for a malformed field (unknown flag, reserved bit,
 * encoding above 15, value without its enabling flag, bad range, a range
 * not canonical to the CPU's linear address width, no IPT_TRACE_BRANCH
 * on a part with BDM106, a CR3 filter under page-table isolation for user
 * and kernel mode together or, kernel-only, with a user-mode CR3);
 * -EOPNOTSUPP for what the unit cannot do (missing feature, encoding
 * absent from its bitmap, range beyond its count, no ToPA output);
 * -EPERM for kernel tracing without @privileged.
 */
int ipt_config_check(const struct ipt_config *cfg, const struct ipt_caps *caps,
		     bool privileged, struct ipt_hwcfg *hwcfg)
{
	u64 tf = cfg->trace_flags, feat = caps->features;
	struct ipt_hwcfg hw;
	int ret;

	memset(&hw, 0, sizeof(hw));
	if (tf & ~IPT_TRACE_ALL)
		return -EINVAL;
	if (cfg->mode != IPT_MODE_CPU && cfg->mode != IPT_MODE_THREAD)
		return -EINVAL;
	if (!(tf & (IPT_TRACE_USER | IPT_TRACE_KERNEL)))
		return -EINVAL;
	if ((tf & IPT_TRACE_KERNEL) && !privileged)
		return -EPERM;
	if (!(feat & IPT_FEAT_TOPA))
		return -EOPNOTSUPP;
	if (!(tf & IPT_TRACE_BRANCH) && ipt_caps_branch_required(caps))
		return -EINVAL;

	hw.ctl = RTIT_CTL_TOPA;
	hw.status_keep = IPT_STATUS_KEEP;
	hw.vmx_check = caps->platform & IPT_PLAT_VMX_NO_PT;
	if (!(feat & IPT_FEAT_PSB_CYC))
		hw.status_keep &= ~RTIT_STATUS_BYTECNT;
	if (tf & IPT_TRACE_USER)
		hw.ctl |= RTIT_CTL_USR;
	if (tf & IPT_TRACE_KERNEL)
		hw.ctl |= RTIT_CTL_OS;
	if (tf & IPT_TRACE_BRANCH)
		hw.ctl |= RTIT_CTL_BRANCH_EN;
	if (tf & IPT_TRACE_TSC)
		hw.ctl |= RTIT_CTL_TSC_EN;
	if (tf & IPT_TRACE_NO_RETCOMP)
		hw.ctl |= RTIT_CTL_DISRETC;

	/* MTC and its frequency. */
	if (!(tf & IPT_TRACE_MTC) && cfg->mtc_freq)
		return -EINVAL;
	if (tf & IPT_TRACE_MTC) {
		if (!(feat & IPT_FEAT_MTC))
			return -EOPNOTSUPP;
		ret = ipt_check_encoding(cfg->mtc_freq, caps->mtc_freq_mask);
		if (ret)
			return ret;
		hw.ctl |= RTIT_CTL_MTC_EN |
			  FIELD_PREP(RTIT_CTL_MTC_RANGE, cfg->mtc_freq);
	}

	/* CYC and its threshold. */
	if (!(tf & IPT_TRACE_CYC) && cfg->cyc_thresh)
		return -EINVAL;
	if (tf & IPT_TRACE_CYC) {
		if (!(feat & IPT_FEAT_PSB_CYC))
			return -EOPNOTSUPP;
		ret = ipt_check_encoding(cfg->cyc_thresh, caps->cyc_thresh_mask);
		if (ret)
			return ret;
		hw.ctl |= RTIT_CTL_CYCLEACC |
			  FIELD_PREP(RTIT_CTL_CYC_THRESH, cfg->cyc_thresh);
	}

	/* PSB frequency: 0 is the only value without configurable PSB. */
	if (cfg->psb_freq > 15)
		return -EINVAL;
	if (feat & IPT_FEAT_PSB_CYC) {
		ret = ipt_check_encoding(cfg->psb_freq, caps->psb_freq_mask);
		if (ret)
			return ret;
		hw.ctl |= FIELD_PREP(RTIT_CTL_PSB_FREQ, cfg->psb_freq);
	} else if (cfg->psb_freq) {
		return -EOPNOTSUPP;
	}

	if ((tf & IPT_TRACE_PTWRITE_FUP) && !(tf & IPT_TRACE_PTWRITE))
		return -EINVAL;
	if (tf & IPT_TRACE_PTWRITE) {
		if (!(feat & IPT_FEAT_PTWRITE))
			return -EOPNOTSUPP;
		hw.ctl |= RTIT_CTL_PTW_EN;
		if (tf & IPT_TRACE_PTWRITE_FUP)
			hw.ctl |= RTIT_CTL_FUP_ON_PTW;
	}
	if (tf & IPT_TRACE_POWER_EVENTS) {
		if (!(feat & IPT_FEAT_POWER_EVENTS))
			return -EOPNOTSUPP;
		hw.ctl |= RTIT_CTL_PWR_EVT_EN;
	}

	/* CR3 filter: CR3_MATCH bits 4:0 are reserved. */
	if (!(tf & IPT_TRACE_CR3_FILTER) && cfg->cr3_match)
		return -EINVAL;
	if (tf & IPT_TRACE_CR3_FILTER) {
		if (cfg->cr3_match & IPT_CR3_MATCH_RSVD)
			return -EINVAL;
		if (!(feat & IPT_FEAT_CR3_FILTER))
			return -EOPNOTSUPP;
		ret = ipt_check_cr3(cfg, caps, &hw.cr3_match);
		if (ret)
			return ret;
		hw.ctl |= RTIT_CTL_CR3EN;
	}

	ret = ipt_check_ranges(cfg, caps, &hw);
	if (ret)
		return ret;
	*hwcfg = hw;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_config_check);

#define IPT_BUFFER_FLAGS_ALL	(IPT_BUFFER_STOP_ON_FULL | IPT_BUFFER_EXACT_CHUNKS | \
				 IPT_BUFFER_STREAM)

/* The CPUs of @cfg into @mask; only argument checks, no state. */
static int ipt_config_cpus(const struct ipt_config *cfg, struct cpumask *mask)
{
	unsigned int words = cfg->cpu_mask_words, cpu;
	u64 *bits;
	int ret = 0;

	cpumask_clear(mask);
	if (cfg->flags & IPT_CONFIG_ALL_CPUS) {
		if (words || cfg->cpu_mask_ptr)
			return -EINVAL;
		cpumask_copy(mask, cpu_present_mask);
		return 0;
	}
	if (!words || words > IPT_MAX_CPU_MASK_WORDS || !cfg->cpu_mask_ptr)
		return -EINVAL;
	bits = memdup_user(u64_to_user_ptr(cfg->cpu_mask_ptr),
			   words * sizeof(u64));
	if (IS_ERR(bits))
		return PTR_ERR(bits);
	for (cpu = 0; cpu < words * 64; cpu++) {
		if (!(bits[cpu / 64] & BIT_ULL(cpu % 64)))
			continue;
		if (cpu >= nr_cpu_ids || !cpu_present(cpu)) {
			ret = -EINVAL;
			break;
		}
		cpumask_set_cpu(cpu, mask);
	}
	kfree(bits);
	if (!ret && cpumask_empty(mask))
		ret = -EINVAL;
	return ret;
}

static int ipt_config_args(const struct ipt_config *cfg)
{
	unsigned int i;

	if (cfg->flags & ~IPT_CONFIG_ALL_CPUS)
		return -EINVAL;
	if (cfg->mode == IPT_MODE_CPU && cfg->max_threads)
		return -EINVAL;
	/* Threads run anywhere: no CPUs to choose. */
	if (cfg->mode == IPT_MODE_THREAD &&
	    (!cfg->max_threads || cfg->max_threads > IPT_MAX_THREADS ||
	     cfg->flags || cfg->cpu_mask_words || cfg->cpu_mask_ptr))
		return -EINVAL;
	if (cfg->buffer_flags & ~IPT_BUFFER_FLAGS_ALL)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(cfg->reserved); i++)
		if (cfg->reserved[i])
			return -EINVAL;
	if (cfg->chunk_order && (cfg->chunk_order < IPT_TOPA_MIN_SHIFT ||
				 cfg->chunk_order > IPT_TOPA_MAX_SHIFT))
		return -EINVAL;
	if (!cfg->buffer_size || !IS_ALIGNED(cfg->buffer_size, SZ_4K))
		return -EINVAL;
	if (cfg->chunk_order && (cfg->buffer_flags & IPT_BUFFER_EXACT_CHUNKS) &&
	    !IS_ALIGNED(cfg->buffer_size, BIT_ULL(cfg->chunk_order)))
		return -EINVAL;
	return 0;
}

/**
 * ipt_config_parse() - check what a configuration asks for, without the unit
 * @cfg: the configuration, as copied from userspace
 * @privileged: the caller has CAP_PERFMON or CAP_SYS_ADMIN
 *
 * The first half of validating a configuration: the fields on their own
 * (mode, flags, reserved fields, CPU mask or max_threads, buffer size and
 * chunk order), the caller's privilege (per-CPU mode shows every process
 * on a CPU) and the CPU mask, read from userspace.  ipt_config_validate()
 * does the rest, against the unit.
 *
 * Context: process context, may fault: no lock that mmap nests in held.
 * Return: the request, to free with ipt_config_req_free(); ERR_PTR of
 * -EINVAL (a malformed field, an absent CPU), -EPERM (per-CPU mode
 * unprivileged), -ENOMEM or -EFAULT.  Nothing changed on error.
 */
struct ipt_config_req *ipt_config_parse(const struct ipt_config *cfg,
					bool privileged)
{
	struct ipt_config_req *req;
	unsigned int nr_regions;
	bool thread;
	int ret;

	if (cfg->mode != IPT_MODE_CPU && cfg->mode != IPT_MODE_THREAD)
		return ERR_PTR(-EINVAL);
	thread = cfg->mode == IPT_MODE_THREAD;
	ret = ipt_config_args(cfg);
	if (!ret)
		ret = ipt_stream_check(cfg, &nr_regions);
	if (ret)
		return ERR_PTR(ret);
	/* A CPU's trace shows every process that runs on it. */
	if (!thread && !privileged)
		return ERR_PTR(-EPERM);
	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req || !zalloc_cpumask_var(&req->cpus, GFP_KERNEL)) {
		kfree(req);
		return ERR_PTR(-ENOMEM);
	}
	if (!thread) {
		ret = ipt_config_cpus(cfg, req->cpus);
		if (ret) {
			ipt_config_req_free(req);
			return ERR_PTR(ret);
		}
	}
	req->nr_traces = thread ? cfg->max_threads : cpumask_weight(req->cpus);
	req->nr_regions = nr_regions;
	req->privileged = privileged;
	return req;
}

/**
 * ipt_config_req_free() - free what ipt_config_parse() returned
 * @req: the request, or NULL
 *
 * Context: any process context.
 */
void ipt_config_req_free(struct ipt_config_req *req)
{
	if (req)
		free_cpumask_var(req->cpus);
	kfree(req);
}

/**
 * ipt_config_validate() - check a parsed configuration against the unit
 * @cfg: the configuration, as accepted by ipt_config_parse()
 * @req: what ipt_config_parse() made of it
 * @caps: what the unit can do
 * @hwcfg: receives the MSR values; untouched on failure
 *
 * The second half: the trace fields against @caps (ipt_config_check()),
 * the buffer size against the limit ipt_config_limits() set, the
 * single-entry ToPA rule (one region per buffer: 4 KiB << n, as the chunk
 * order says) and the memory of the session's buffers together (at most
 * half of RAM).
 *
 * Context: the caller holds the lock @caps is under (the device lock).
 * Return: 0; as ipt_config_check(); -EFBIG (a buffer above the limit);
 * -EINVAL (a buffer a single-entry unit cannot have); -ENOMEM (more than
 * half of RAM).  Nothing changed on error.
 */
int ipt_config_validate(const struct ipt_config *cfg,
			const struct ipt_config_req *req,
			const struct ipt_caps *caps, struct ipt_hwcfg *hwcfg)
{
	struct ipt_hwcfg hw;
	u64 ram;
	int ret;

	ret = ipt_config_check(cfg, caps, req->privileged, &hw);
	if (ret)
		return ret;
	if ((cfg->buffer_flags & IPT_BUFFER_STREAM) &&
	    !(caps->features & IPT_FEAT_STREAM))
		return -EOPNOTSUPP;
	if (cfg->buffer_size > caps->max_trace_size)
		return -EFBIG;
	if (!(caps->features & IPT_FEAT_TOPA_MULTI) &&
	    (!is_power_of_2(cfg->buffer_size) ||
	     (cfg->chunk_order &&
	      BIT_ULL(cfg->chunk_order) != cfg->buffer_size)))
		return -EINVAL;
	ram = (u64)totalram_pages() << PAGE_SHIFT;
	if (cfg->buffer_size > ram / 2 / req->nr_traces)
		return -ENOMEM;
	*hwcfg = hw;
	return 0;
}

/*
 * The largest buffer one trace may have: a quarter of RAM, in whole 4 KiB
 * pages, so that no single number from userspace can ask for more.  A
 * session's buffers together are bounded separately (half of RAM, see
 * ipt_config_validate()).
 */
static u64 ipt_config_max_trace_size(void)
{
	return ALIGN_DOWN(((u64)totalram_pages() << PAGE_SHIFT) / 4, SZ_4K);
}

/**
 * ipt_config_limits() - the buffer limits a unit with ToPA output reports
 * @caps: the unit's capabilities, just probed; receives max_trace_size and
 *        max_chunk_order
 *
 * Where a table holds one output entry (no IPT_FEAT_TOPA_MULTI), a trace
 * is one contiguous region: at most the largest chunk.
 *
 * Context: the caller holds the lock @caps is under (the device lock).
 */
void ipt_config_limits(struct ipt_caps *caps)
{
	caps->max_trace_size = ipt_config_max_trace_size();
	caps->max_chunk_order = ipt_buffer_max_chunk_shift();
	/* Streaming needs a STOP and an INT per region: several entries. */
	if (caps->features & IPT_FEAT_TOPA_MULTI)
		caps->features |= IPT_FEAT_STREAM;
	else
		caps->features &= ~IPT_FEAT_STREAM;
	if (!(caps->features & IPT_FEAT_TOPA_MULTI))
		caps->max_trace_size = min(caps->max_trace_size,
					   BIT_ULL(ipt_buffer_max_chunk_shift()));
}

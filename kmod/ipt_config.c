// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: validating a session's trace configuration against the unit's
 * capabilities and turning it into MSR values.
 *
 * Userspace names what it wants (struct ipt_config); it never passes a raw
 * IA32_RTIT_CTL.  Every field is checked here, against struct ipt_caps,
 * so that the values programmed later cannot #GP for a reason the caller
 * could have been told about.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitfield.h>
#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/sizes.h>
#include <linux/string.h>
#include <kunit/visibility.h>

#include "ipt.h"

#define IPT_TRACE_ALL	(IPT_TRACE_USER | IPT_TRACE_KERNEL |		\
			 IPT_TRACE_BRANCH | IPT_TRACE_TSC | IPT_TRACE_MTC |	\
			 IPT_TRACE_CYC | IPT_TRACE_NO_RETCOMP |		\
			 IPT_TRACE_PTWRITE | IPT_TRACE_PTWRITE_FUP |	\
			 IPT_TRACE_POWER_EVENTS | IPT_TRACE_CR3_FILTER)

/* Linear addresses are checked as 48-bit canonical (4-level paging). */
static bool ipt_canonical(u64 la)
{
	return ((s64)(la << 16) >> 16) == (s64)la;
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
		if (r->start > r->end || !ipt_canonical(r->start) ||
		    !ipt_canonical(r->end))
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
 * Return: 0; -EINVAL for a malformed field (unknown flag, reserved bit,
 * encoding above 15, value without its enabling flag, bad range);
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

	hw.ctl = RTIT_CTL_TOPA;
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
		if (cfg->cr3_match & GENMASK_ULL(4, 0))
			return -EINVAL;
		if (!(feat & IPT_FEAT_CR3_FILTER))
			return -EOPNOTSUPP;
		hw.ctl |= RTIT_CTL_CR3EN;
		hw.cr3_match = cfg->cr3_match;
	}

	ret = ipt_check_ranges(cfg, caps, &hw);
	if (ret)
		return ret;
	*hwcfg = hw;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_config_check);

/**
 * ipt_config_max_trace_size() - the largest buffer one trace may have
 *
 * A quarter of RAM, in whole 4 KiB pages: no single number from userspace
 * can ask for more.  A session's buffers together are bounded separately
 * (half of RAM, see ipt_session.c).
 *
 * Return: bytes.
 */
u64 ipt_config_max_trace_size(void)
{
	return ALIGN_DOWN(((u64)totalram_pages() << PAGE_SHIFT) / 4, SZ_4K);
}

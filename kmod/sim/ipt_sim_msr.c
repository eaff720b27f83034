// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: the registers of the simulated PT unit: their reset state,
 * RDMSR, the WRMSR rules (every #GP of the SDM), XSAVES and XRSTORS of the
 * PT state component.  Every function here works on the state it is given
 * and nothing else.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitfield.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <kunit/visibility.h>

#include "ipt_sim.h"

/**
 * ipt_sim_cpu_init() - put a simulated unit in its reset state
 * @c: the state
 * @m: the model it presents
 *
 * Every MSR is 0 (OUTPUT_MASK_PTRS reads 0x7f), the workload is at its
 * first instruction; the program's @c->feed and @c->pace, the internal
 * buffer @c->hold (emptied: a reset needs TraceEn = 0, which flushed it),
 * the bulk scratch @c->bulk and the lost-bytes count (@c->lost_before) are kept.
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 */
void ipt_sim_cpu_init(struct ipt_sim_cpu *c, const struct ipt_sim_model *m)
{
	struct ipt_sim_feed feed = c->feed;
	struct ipt_sim_hold *hold = c->hold;
	u8 *bulk = c->bulk;
	u64 lost = c->lost_before + c->stats.stopped;
	bool pace = c->pace;

	ipt_sim_hold_drop(c);
	memset(c, 0, sizeof(*c));
	c->feed = feed;
	c->pace = pace;
	c->hold = hold;
	c->bulk = bulk;
	c->lost_before = lost;
	c->model = m;
	c->output_mask = 0x7f;
	c->ip = IPT_SIM_CODE_BASE;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_cpu_init);

#define IPT_SIM_CTL_DEFINED						\
	(RTIT_CTL_TRACEEN | RTIT_CTL_CYCLEACC | RTIT_CTL_OS |	\
	 RTIT_CTL_USR | RTIT_CTL_PWR_EVT_EN | RTIT_CTL_FUP_ON_PTW |\
	 RTIT_CTL_FABRIC_EN | RTIT_CTL_CR3EN | RTIT_CTL_TOPA |\
	 RTIT_CTL_MTC_EN | RTIT_CTL_TSC_EN | RTIT_CTL_DISRETC |	\
	 RTIT_CTL_PTW_EN | RTIT_CTL_BRANCH_EN | RTIT_CTL_MTC_RANGE |\
	 RTIT_CTL_CYC_THRESH | RTIT_CTL_PSB_FREQ |			\
	 RTIT_CTL_EVENT_EN | GENMASK_ULL(47, 32) | RTIT_CTL_NOTNT |\
	 IPT_RTIT_CTL_INJECTPSBPMI)

/* For each CPUID.(14H,0):EBX bit, the CTL bits that need it. */
static const u64 ipt_sim_ctl_need_ebx[] = {
	[0] = RTIT_CTL_CR3EN,
	[1] = RTIT_CTL_CYCLEACC | RTIT_CTL_CYC_THRESH | RTIT_CTL_PSB_FREQ,
	[3] = RTIT_CTL_MTC_EN | RTIT_CTL_MTC_RANGE,
	[4] = RTIT_CTL_PTW_EN | RTIT_CTL_FUP_ON_PTW,
	[5] = RTIT_CTL_PWR_EVT_EN,
	[6] = IPT_RTIT_CTL_INJECTPSBPMI,
	[7] = RTIT_CTL_EVENT_EN,
	[8] = RTIT_CTL_NOTNT,
};

/* Whether @v may be written to IA32_RTIT_CTL, apart from TraceEn rules. */
static bool ipt_sim_ctl_valid(const struct ipt_sim_model *m, u64 v)
{
	u32 ebx = m->leaf_14_0.ebx, ecx = m->leaf_14_0.ecx;
	unsigned int i;

	if (v & ~IPT_SIM_CTL_DEFINED)
		return false;
	for (i = 0; i < ARRAY_SIZE(ipt_sim_ctl_need_ebx); i++)
		if (!(ebx & BIT(i)) && (v & ipt_sim_ctl_need_ebx[i]))
			return false;
	if (!(ecx & BIT(0)) && (v & RTIT_CTL_TOPA))
		return false;
	if (!(ecx & BIT(3)) && (v & RTIT_CTL_FABRIC_EN))
		return false;
	if ((ebx & BIT(3)) &&
	    !(m->leaf_14_1.eax >> 16 & BIT(FIELD_GET(RTIT_CTL_MTC_RANGE, v))))
		return false;
	if ((ebx & BIT(1)) &&
	    (!(m->leaf_14_1.ebx & BIT(FIELD_GET(RTIT_CTL_CYC_THRESH, v))) ||
	     !(m->leaf_14_1.ebx >> 16 & BIT(FIELD_GET(RTIT_CTL_PSB_FREQ, v)))))
		return false;
	for (i = 0; i < 4; i++) {
		u64 cfg = (v & IPT_RTIT_CTL_ADDR_CFG(i)) >> (32 + 4 * i);

		if (cfg > 2 || (cfg && i >= ipt_sim_nr_ranges(m)))
			return false;
	}
	if ((v & RTIT_CTL_TRACEEN) && !(v & RTIT_CTL_TOPA) &&
	    !(ecx & BIT(2)))
		return false;
	if (m->bdm106 && (v & RTIT_CTL_TRACEEN) &&
	    !(v & RTIT_CTL_BRANCH_EN))
		return false;
	return true;
}

/*
 * Canonical to the model's linear address width (CPUID.80000008H:EAX[15:8]):
 * the WRMSR check of an MSR holding a linear address uses the width the
 * processor supports, 57 bits on LA57 parts whatever CR4.LA57 says.
 */
static bool ipt_sim_canonical(const struct ipt_sim_model *m, u64 la)
{
	unsigned int shift = 64 - m->virt_bits;

	return (u64)((s64)(la << shift) >> shift) == la;
}

/* The index of ADDRn_A/B for @msr, or -1. */
static int ipt_sim_addr_index(u32 msr, bool *is_b)
{
	if (msr < IPT_MSR_RTIT_ADDR_A(0) || msr > IPT_MSR_RTIT_ADDR_B(3))
		return -1;
	*is_b = (msr - IPT_MSR_RTIT_ADDR_A(0)) & 1;
	return (msr - IPT_MSR_RTIT_ADDR_A(0)) / 2;
}

#define IPT_SIM_ST_HW	(RTIT_STATUS_FILTEREN | RTIT_STATUS_CONTEXTEN |	\
			 RTIT_STATUS_TRIGGEREN)
#define IPT_SIM_ST_DEFINED (IPT_SIM_ST_HW | RTIT_STATUS_ERROR |		\
			    RTIT_STATUS_STOPPED | IPT_RTIT_STATUS_PENDPSB |	\
			    IPT_RTIT_STATUS_PENDTOPAPMI | RTIT_STATUS_BYTECNT)

#define IPT_SIM_OVF_CTRL_DEFINED (GENMASK_ULL(7, 0) | GENMASK_ULL(34, 32) | \
				  GLOBAL_STATUS_TRACE_TOPAPMI |		   \
				  GENMASK_ULL(63, 58))

/*
 * ipt_sim_wrmsr_check() - would WRMSR(@msr, @val) #GP?  No side effects.
 * The rules of pt-hardware.md's "Write rules (#GP)" section, one by one.
 */
static int ipt_sim_wrmsr_check(const struct ipt_sim_cpu *c, u32 msr, u64 val)
{
	const struct ipt_sim_model *m = c->model;
	bool tracing = c->ctl & RTIT_CTL_TRACEEN;
	bool is_b;
	int n;

	switch (msr) {
	case MSR_IA32_RTIT_CTL:
		/*
		 * Without PT in VMX operation (IA32_VMX_MISC[14] = 0) any
		 * write of CTL in VMX operation is #GP (SDM vol. 3C, "Tracing
		 * post-VMXON"; pt.c writes none while pt->vmx_on,
		 * pt.c:416-427, 540-562).
		 */
		if (c->vmx_on && !m->vmx_pt)
			return -EIO;
		if (tracing && (val & RTIT_CTL_TRACEEN) && val != c->ctl)
			return -EIO;
		return ipt_sim_ctl_valid(m, val) ? 0 : -EIO;
	case MSR_IA32_RTIT_STATUS:
		if (tracing || (val & ~IPT_SIM_ST_DEFINED))
			return -EIO;
		if (!(m->leaf_14_0.ebx & BIT(6)) &&
		    (val & (IPT_RTIT_STATUS_PENDPSB | IPT_RTIT_STATUS_PENDTOPAPMI)))
			return -EIO;
		/*
		 * Without configurable PSB (CPUID.(14H,0):EBX[1] = 0) a
		 * non-zero PacketByteCnt is #GP (SDM vol. 3C, table 33-10).
		 */
		if (!(m->leaf_14_0.ebx & BIT(1)) && (val & RTIT_STATUS_BYTECNT))
			return -EIO;
		return 0;
	case MSR_IA32_RTIT_OUTPUT_BASE:
		if (tracing || (val & 0x7f) || (val >> m->maxphyaddr))
			return -EIO;
		return 0;
	case MSR_IA32_RTIT_OUTPUT_MASK:
		return tracing ? -EIO : 0;
	case MSR_IA32_RTIT_CR3_MATCH:
		if (!(m->leaf_14_0.ebx & BIT(0)) || tracing || (val & 0x1f))
			return -EIO;
		return 0;
	case MSR_CORE_PERF_GLOBAL_OVF_CTRL:
		return val & ~IPT_SIM_OVF_CTRL_DEFINED ? -EIO : 0;
	case MSR_IA32_XSS:
		if ((val & ~XFEATURE_MASK_PT) || ((val & XFEATURE_MASK_PT) && !m->xsaves_pt))
			return -EIO;
		return 0;
	}
	n = ipt_sim_addr_index(msr, &is_b);
	if (n >= 0) {
		if (n >= ipt_sim_nr_ranges(m) || tracing ||
		    !ipt_sim_canonical(m, val))
			return -EIO;
		return 0;
	}
	/* PLATFORM_INFO, GLOBAL_STATUS: read-only; the rest: absent. */
	return -EIO;
}

/* Carry out a write that ipt_sim_wrmsr_check() accepted. */
static void ipt_sim_wrmsr_apply(struct ipt_sim_cpu *c, u32 msr, u64 val)
{
	bool was_on = c->ctl & RTIT_CTL_TRACEEN;
	bool is_b;
	int n;

	switch (msr) {
	case MSR_IA32_RTIT_CTL:
		if (was_on && (val & RTIT_CTL_TRACEEN))
			return;		/* the identical value */
		if (was_on && c->stuck && !c->foreign) {
			c->stats.stops_ignored++;
			c->stuck_pending = true;
			return;
		}
		if (was_on && c->foreign) {
			c->stats.clobbered++;
			c->foreign = false;
		} else if (was_on) {
			ipt_sim_trace_disable(c);
		}
		c->ctl = val;
		if (val & RTIT_CTL_TRACEEN)
			ipt_sim_trace_enable(c);
		return;
	case MSR_IA32_RTIT_STATUS:
		/* FilterEn, ContextEn, TriggerEn belong to the processor. */
		c->status = (c->status & IPT_SIM_ST_HW) | (val & ~IPT_SIM_ST_HW);
		return;
	case MSR_IA32_RTIT_OUTPUT_BASE:
		c->output_base = val;
		return;
	case MSR_IA32_RTIT_OUTPUT_MASK:
		c->output_mask = val | 0x7f;
		return;
	case MSR_IA32_RTIT_CR3_MATCH:
		c->cr3_match = val;
		return;
	case MSR_CORE_PERF_GLOBAL_OVF_CTRL:
		ipt_sim_global_ack(c, val);
		return;
	case MSR_IA32_XSS:
		c->xss = val;
		return;
	}
	n = ipt_sim_addr_index(msr, &is_b);
	if (is_b)
		c->addr_b[n] = val;
	else
		c->addr_a[n] = val;
}

/**
 * ipt_sim_global_ack() - IA32_PERF_GLOBAL_OVF_CTRL semantics
 * @c: the state
 * @val: the value written
 *
 * Write-1-to-clear: each bit of IA32_PERF_GLOBAL_STATUS written as 1 is
 * cleared, every other bit stays (SDM vol. 4, MSR 390H; on architectural
 * perfmon v4 the same MSR is IA32_PERF_GLOBAL_STATUS_RESET: "bit 55: set
 * 1 to clear Trace_ToPA_PMI").
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 */
void ipt_sim_global_ack(struct ipt_sim_cpu *c, u64 val)
{
	c->global_status &= ~val;
}

/**
 * ipt_sim_wrmsr() - WRMSR on the simulated CPU
 * @c: the state
 * @msr: MSR address
 * @val: the value
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 *
 * Return: 0, or -EIO for #GP, in which case nothing changed but the
 * counters.
 */
int ipt_sim_wrmsr(struct ipt_sim_cpu *c, u32 msr, u64 val)
{
	bool on = c->ctl & RTIT_CTL_TRACEEN;
	/* Only a write that changes TraceEn is a fault injection's. */
	u8 gp = msr != MSR_IA32_RTIT_CTL ? 0 :
		(val & RTIT_CTL_TRACEEN) ? (on ? 0 : IPT_SIM_GP_CTL_SET) :
		(on ? IPT_SIM_GP_CTL_CLEAR : 0);

	c->stats.wrmsr++;
	if ((c->gp_ctl & gp) || ipt_sim_wrmsr_check(c, msr, val)) {
		c->gp_ctl &= ~gp;
		c->stats.gp++;
		return -EIO;
	}
	ipt_sim_wrmsr_apply(c, msr, val);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_wrmsr);

/* RDMSR without the bookkeeping; -EIO when the MSR is absent. */
static int ipt_sim_msr_value(const struct ipt_sim_cpu *c, u32 msr, u64 *val)
{
	const struct ipt_sim_model *m = c->model;
	bool is_b;
	int n;

	switch (msr) {
	case MSR_IA32_RTIT_CTL:
		*val = c->ctl;
		return 0;
	case MSR_IA32_RTIT_STATUS:
		*val = c->status;
		return 0;
	case MSR_IA32_RTIT_OUTPUT_BASE:
		*val = c->output_base;
		return 0;
	case MSR_IA32_RTIT_OUTPUT_MASK:
		*val = c->output_mask | 0x7f;
		return 0;
	case MSR_IA32_RTIT_CR3_MATCH:
		if (!(m->leaf_14_0.ebx & BIT(0)))
			return -EIO;
		*val = c->cr3_match;
		return 0;
	case MSR_CORE_PERF_GLOBAL_STATUS:
		*val = c->global_status;
		return 0;
	case MSR_CORE_PERF_GLOBAL_OVF_CTRL:
		*val = 0;
		return 0;
	case MSR_IA32_XSS:
		*val = c->xss;
		return 0;
	case MSR_PLATFORM_INFO:
		*val = (u64)m->nom_ratio << 8;
		return 0;
	case MSR_IA32_VMX_MISC:
		*val = m->vmx_pt ? MSR_IA32_VMX_MISC_INTEL_PT : 0;
		return 0;
	}
	n = ipt_sim_addr_index(msr, &is_b);
	if (n < 0 || n >= ipt_sim_nr_ranges(m))
		return -EIO;
	*val = is_b ? c->addr_b[n] : c->addr_a[n];
	return 0;
}

/**
 * ipt_sim_rdmsr() - RDMSR on the simulated CPU
 * @c: the state
 * @msr: MSR address
 * @val: the value read
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 *
 * Return: 0, or -EIO for #GP (MSR absent on this model).
 */
int ipt_sim_rdmsr(struct ipt_sim_cpu *c, u32 msr, u64 *val)
{
	c->stats.rdmsr++;
	if (ipt_sim_msr_value(c, msr, val)) {
		c->stats.gp++;
		return -EIO;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_rdmsr);

static const u32 ipt_sim_xsave_msrs[IPT_XSAVE_NR_FIELDS] = {
	[IPT_XSAVE_CTL] = MSR_IA32_RTIT_CTL,
	[IPT_XSAVE_OUTPUT_BASE] = MSR_IA32_RTIT_OUTPUT_BASE,
	[IPT_XSAVE_OUTPUT_MASK] = MSR_IA32_RTIT_OUTPUT_MASK,
	[IPT_XSAVE_STATUS] = MSR_IA32_RTIT_STATUS,
	[IPT_XSAVE_CR3_MATCH] = MSR_IA32_RTIT_CR3_MATCH,
	[IPT_XSAVE_ADDR0_A] = IPT_MSR_RTIT_ADDR_A(0),
	[IPT_XSAVE_ADDR0_B] = IPT_MSR_RTIT_ADDR_B(0),
	[IPT_XSAVE_ADDR1_A] = IPT_MSR_RTIT_ADDR_A(1),
	[IPT_XSAVE_ADDR1_B] = IPT_MSR_RTIT_ADDR_B(1),
};

/*
 * RFBM for an instruction with EDX:EAX = bit 8: (XCR0 | IA32_XSS) & bit 8
 * (SDM vol. 1, 13.11 for XSAVES and 13.12 for XRSTORS).  The simulated XCR0 never has bit 8 (it
 * is a supervisor component), so it is IA32_XSS bit 8 alone; a model whose
 * XSAVES lacks PT cannot set it (WRMSR of IA32_XSS #GPs).
 */
static u64 ipt_sim_rfbm(const struct ipt_sim_cpu *c)
{
	return c->xss & XFEATURE_MASK_PT;
}

/* Fields that a model without the MSR behind them must hold as zero. */
static bool ipt_sim_xsave_field_absent(const struct ipt_sim_model *m,
				       unsigned int i)
{
	if (i == IPT_XSAVE_CR3_MATCH)
		return !(m->leaf_14_0.ebx & BIT(0));
	if (i >= IPT_XSAVE_ADDR0_A)
		return (i - IPT_XSAVE_ADDR0_A) / 2 >= ipt_sim_nr_ranges(m);
	return false;
}

/**
 * ipt_sim_xsaves() - XSAVES with EDX:EAX = bit 8
 * @c: the state
 * @area: IPT_XSAVE_AREA_BYTES(model's xsave_pt_size) bytes, 64-byte aligned
 *
 * As the SDM has it (vol. 1, 13.11 and 13.5.6): RFBM is IA32_XSS bit 8.
 * With it, stores CTL, clears TraceEn (with the packets a WRMSR clearing
 * it would write), then stores the other eight fields, so the saved
 * positions are those after the disable; the component's bytes after the
 * nine fields, up to the size CPUID.(0DH,8):EAX reports, are written as
 * zero (a real CPU writes its whole component, zeros in the reserved
 * portion, SDM vol. 1 13.5.6: an area sized for less is overrun, which
 * KASAN sees).  Without it (IA32_XSS rewritten by KVM or
 * a resume) nothing of PT is saved and TraceEn stays as it was.  Either
 * way the header's XSTATE_BV becomes RFBM and XCOMP_BV becomes bit 63 |
 * RFBM; the legacy area and the rest of the header are left alone.
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 *
 * Return: 0, or -EIO (#GP) if @area is misaligned.
 */
int ipt_sim_xsaves(struct ipt_sim_cpu *c, void *area)
{
	u64 *hdr = area + IPT_XSAVE_HDR_OFFSET;
	u64 *f = area + IPT_XSAVE_PT_OFFSET;
	u64 rfbm = ipt_sim_rfbm(c);
	unsigned int i;

	c->stats.xsaves++;
	if (!IS_ALIGNED((unsigned long)area, IPT_XSAVE_ALIGN)) {
		c->stats.gp++;
		return -EIO;
	}
	hdr[0] = rfbm;
	hdr[1] = XCOMP_BV_COMPACTED_FORMAT | rfbm;
	if (!rfbm) {
		c->stats.xsaves_empty++;
		return 0;
	}
	f[IPT_XSAVE_CTL] = c->ctl;
	if ((c->ctl & RTIT_CTL_TRACEEN) && c->stuck) {
		c->stats.stops_ignored++;
		c->stuck_pending = true;
	} else if (c->ctl & RTIT_CTL_TRACEEN) {
		ipt_sim_trace_disable(c);
		c->ctl &= ~RTIT_CTL_TRACEEN;
	}
	for (i = IPT_XSAVE_OUTPUT_BASE; i < IPT_XSAVE_NR_FIELDS; i++) {
		if (ipt_sim_xsave_field_absent(c->model, i)) {
			f[i] = 0;
			continue;
		}
		ipt_sim_msr_value(c, ipt_sim_xsave_msrs[i], &f[i]);
	}
	if (c->model->xsave_pt_size > IPT_XSAVE_PT_MIN_SIZE)
		memset(&f[IPT_XSAVE_NR_FIELDS], 0,
		       c->model->xsave_pt_size - IPT_XSAVE_PT_MIN_SIZE);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_xsaves);

/**
 * ipt_sim_xrstors() - XRSTORS with EDX:EAX = bit 8
 * @c: the state
 * @area: as written by ipt_sim_xsaves()
 *
 * Checks the header (SDM vol. 1, 13.12): XCOMP_BV must have bit 63 and no
 * bit but 8, and bit 8 only when IA32_XSS has it (RFBM); XSTATE_BV a
 * subset of XCOMP_BV; header bytes 16..63 zero.  Without IA32_XSS bit 8
 * a header that passes restores nothing.  With it: that TraceEn is 0, and
 * that every field would be accepted by WRMSR; only then writes them, CTL
 * last.  XSTATE_BV bit 8 clear restores the initial state (all zero).
 *
 * Context: the owner of @c serialises every call on it (struct
 * ipt_sim_cpu); no lock of its own.
 *
 * Return: 0, or -EIO (#GP) with nothing changed.
 */
int ipt_sim_xrstors(struct ipt_sim_cpu *c, const void *area)
{
	const u64 *hdr = area + IPT_XSAVE_HDR_OFFSET;
	const u64 *f = area + IPT_XSAVE_PT_OFFSET;
	u64 v[IPT_XSAVE_NR_FIELDS] = { };
	u64 rfbm = ipt_sim_rfbm(c);
	unsigned int i;

	c->stats.xrstors++;
	if (!IS_ALIGNED((unsigned long)area, IPT_XSAVE_ALIGN))
		goto gp;
	if (!(hdr[1] & XCOMP_BV_COMPACTED_FORMAT) ||
	    (hdr[1] & ~(XCOMP_BV_COMPACTED_FORMAT | rfbm)) ||
	    (hdr[0] & ~hdr[1]))
		goto gp;
	for (i = 2; i < 8; i++)
		if (hdr[i])
			goto gp;
	if (!rfbm)
		return 0;
	/* Restoring CTL is a write of it: #GP in VMX operation, as above. */
	if ((c->ctl & RTIT_CTL_TRACEEN) || (c->vmx_on && !c->model->vmx_pt))
		goto gp;
	if (hdr[0] & XFEATURE_MASK_PT)
		memcpy(v, f, sizeof(v));

	for (i = 0; i < IPT_XSAVE_NR_FIELDS; i++) {
		if (ipt_sim_xsave_field_absent(c->model, i)) {
			if (v[i])
				goto gp;
			continue;
		}
		if (ipt_sim_wrmsr_check(c, ipt_sim_xsave_msrs[i], v[i]))
			goto gp;
	}
	for (i = IPT_XSAVE_OUTPUT_BASE; i < IPT_XSAVE_NR_FIELDS; i++)
		if (!ipt_sim_xsave_field_absent(c->model, i))
			ipt_sim_wrmsr_apply(c, ipt_sim_xsave_msrs[i], v[i]);
	ipt_sim_wrmsr_apply(c, MSR_IA32_RTIT_CTL, v[IPT_XSAVE_CTL]);
	return 0;
gp:
	c->stats.gp++;
	return -EIO;
}
EXPORT_SYMBOL_IF_KUNIT(ipt_sim_xrstors);

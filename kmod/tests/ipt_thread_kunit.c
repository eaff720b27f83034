// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for ipt_thread.c: the exact instruction sequences that save
 * and restore a thread's PT state at a context switch, on the MSR and the
 * XSAVES paths, the XSAVES area a thread starts from, and which filter
 * MSRs a switch-in writes.
 *
 * A recording backend stands in for the PT unit: each test checks the
 * list of RDMSR / WRMSR / XSAVES / XRSTORS it received, in order.
 */
#include <kunit/test.h>
#include <linux/cpumask.h>
#include <linux/irqflags.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/string.h>

#include "../ipt_session.h"

enum rec_op { REC_RD, REC_WR, REC_XSAVES, REC_XRSTORS };

struct rec {
	enum rec_op op;
	u32 msr;
	u64 val;
};

#define REC_MAX 32

static struct rec recs[REC_MAX];
static unsigned int nr_recs;
static u32 fail_msr;		/* a write to this MSR faults (0: none) */
static bool fail_xrstors;
static bool xsaves_empty;	/* XSAVES saves nothing: IA32_XSS lost bit 8 */
static bool xsaves_ctl_off;	/* XSAVES finds TraceEn clear (unit off) */
static bool ctl_reads_on;	/* IA32_RTIT_CTL reads TraceEn set */
static u64 regs_base, regs_mask, regs_status, regs_gs, regs_xss;

static void rec(enum rec_op op, u32 msr, u64 val)
{
	if (nr_recs < REC_MAX)
		recs[nr_recs++] = (struct rec){ op, msr, val };
}

static int fake_rd(u32 msr, u64 *val)
{
	rec(REC_RD, msr, 0);
	switch (msr) {
	case MSR_IA32_RTIT_OUTPUT_BASE:
		*val = regs_base;
		return 0;
	case MSR_IA32_RTIT_OUTPUT_MASK:
		*val = regs_mask;
		return 0;
	case MSR_IA32_RTIT_STATUS:
		*val = regs_status;
		return 0;
	case MSR_CORE_PERF_GLOBAL_STATUS:
		*val = regs_gs;
		return 0;
	case MSR_IA32_RTIT_CTL:
		*val = ctl_reads_on ? RTIT_CTL_TRACEEN : 0;
		return 0;
	case MSR_IA32_XSS:
		*val = regs_xss;
		return 0;
	}
	return -EIO;
}

static int fake_wr(u32 msr, u64 val)
{
	rec(REC_WR, msr, val);
	if (msr == fail_msr)
		return -EIO;
	if (msr == MSR_CORE_PERF_GLOBAL_OVF_CTRL)
		regs_gs &= ~val;
	if (msr == MSR_IA32_XSS)
		regs_xss = val;
	return 0;
}

static int fake_xsaves(void *area)
{
	u64 *hdr = area + IPT_XSAVE_HDR_OFFSET;
	u64 *f = area + IPT_XSAVE_PT_OFFSET;
	u64 rfbm = xsaves_empty ? 0 : XFEATURE_MASK_PT;

	rec(REC_XSAVES, 0, 0);
	/* SDM vol. 1, 13.11: XSTATE_BV and XCOMP_BV say what was saved. */
	hdr[0] = rfbm;
	hdr[1] = BIT_ULL(63) | rfbm;
	if (!rfbm)
		return 0;
	f[IPT_XSAVE_OUTPUT_BASE] = regs_base;
	f[IPT_XSAVE_OUTPUT_MASK] = regs_mask;
	f[IPT_XSAVE_STATUS] = regs_status;
	if (xsaves_ctl_off)
		f[IPT_XSAVE_CTL] &= ~RTIT_CTL_TRACEEN;
	return 0;
}

static int fake_xrstors(const void *area)
{
	rec(REC_XRSTORS, 0, 0);
	return fail_xrstors ? -EIO : 0;
}

/* The LVT re-arm that settling a pending PMI does. */
static unsigned int lvt_unmasks;

static void fake_pmi_unmask(void)
{
	lvt_unmasks++;
}

static const struct ipt_hw_ops fake_ops = {
	.name = "kunit",
	.read_msr = fake_rd,
	.write_msr = fake_wr,
	.xsaves = fake_xsaves,
	.xrstors = fake_xrstors,
	.pmi_unmask = fake_pmi_unmask,
};

#define CTL	(RTIT_CTL_TOPA | RTIT_CTL_USR | RTIT_CTL_BRANCH_EN)
/* CPUID.(0DH,8):EAX the fixture's areas are sized for. */
#define TEST_PT_SIZE	128

struct fixture {
	struct ipt_device idev;
	struct ipt_session s;
	struct ipt_trace t;
	u8 area[IPT_XSAVE_AREA_BYTES(TEST_PT_SIZE) + IPT_XSAVE_ALIGN];
};

static int thread_test_init(struct kunit *test)
{
	struct fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->s.idev = &f->idev;
	/* Every CPU's unit runs the configuration (no hybrid part here). */
	cpumask_setall(&f->s.fits);
	f->s.hw = &fake_ops;
	f->s.hwcfg.ctl = CTL;
	f->s.hwcfg.status_keep = IPT_STATUS_KEEP;
	f->s.nr_ranges = 2;
	f->s.has_cr3 = true;
	f->s.xsave_size = IPT_XSAVE_AREA_BYTES(TEST_PT_SIZE);
	f->t.s = &f->s;
	f->t.base = 0x1234000;
	f->t.mask = IPT_RTIT_MASK_LOW | (3ULL << 7) | (0x80ULL << 32);
	/* Error and Stopped are kept; FilterEn and the rest are not. */
	f->t.status = RTIT_STATUS_STOPPED | 0x7 | (0x40ULL << 32);
	f->t.th.xsave = PTR_ALIGN((void *)f->area, IPT_XSAVE_ALIGN);
	seqcount_init(&f->t.th.seq);
	raw_spin_lock_init(&f->t.th.lock);
	atomic64_set(&f->t.pmis, 0);
	nr_recs = 0;
	fail_msr = 0;
	fail_xrstors = false;
	xsaves_empty = false;
	xsaves_ctl_off = false;
	ctl_reads_on = false;
	regs_xss = 0;
	regs_base = 0x5678000;
	regs_mask = IPT_RTIT_MASK_LOW | (5ULL << 7) | (0x10ULL << 32);
	regs_status = 0x20ULL << 32;
	regs_gs = 0;
	lvt_unmasks = 0;
	test->priv = f;
	return 0;
}

static void expect_rec(struct kunit *test, unsigned int i, enum rec_op op,
		       u32 msr, u64 val)
{
	KUNIT_EXPECT_EQ_MSG(test, recs[i].op, op, "op %u", i);
	KUNIT_EXPECT_EQ_MSG(test, recs[i].msr, msr, "op %u", i);
	KUNIT_EXPECT_EQ_MSG(test, recs[i].val, val, "op %u", i);
}

#define EXPECT_REC(i, o, m, v) expect_rec(test, i, o, m, v)

/*
 * A trace loaded by load() stays on this CPU until unload(): preemption is
 * off in between, as it is for a thread's trace between two context
 * switches.  Otherwise the scheduler hook, switching this test's thread
 * out, unloads whatever is loaded - the fixture's trace - and its MSR
 * accesses land in the records (seen: 9 records where the load made 4).
 * So between the two only EXPECTs, no ASSERTs (an ASSERT ends the test).
 */
/*
 * On the XSAVES path the CPU is armed as a session's configure does
 * (IA32_XSS bit 8 set and read back) and disarmed after the unload, in
 * the same preemption-off span; the records of both are dropped.
 */
static void arm(struct ipt_trace *t)
{
	unsigned int n = nr_recs;

	if (t->s->xsaves)
		ipt_xss_set_on_cpu(t->s);
	nr_recs = n;
}

static void disarm(struct ipt_trace *t)
{
	unsigned int n = nr_recs;

	if (t->s->xsaves)
		ipt_xss_restore_on_cpu(t->s);
	nr_recs = n;
}

/*
 * Keep this CPU (preemption off, and interrupts, saved in *@flags) and arm
 * it for @t, as before a switch-in.
 */
static void pin_arm(struct ipt_trace *t, unsigned long *flags)
{
	preempt_disable();
	local_irq_save(*flags);
	arm(t);
}

/* After pin_arm(): unload @t if @loaded, disarm, and let the CPU go. */
static void unpin(struct ipt_trace *t, bool loaded, unsigned long flags)
{
	if (loaded)
		ipt_thread_unload(t);
	disarm(t);
	local_irq_restore(flags);
	preempt_enable();
}

/* The fixture's session and trace on the XSAVES path. */
static void use_xsaves(struct fixture *f)
{
	f->s.xsaves = true;
	ipt_thread_switch_msrs(&f->s);
	ipt_thread_area_init(&f->s, &f->t);
}

static bool load(struct ipt_trace *t)
{
	unsigned long flags;
	bool ret;

	pin_arm(t, &flags);
	ret = ipt_thread_load(t);
	if (!ret)
		disarm(t);
	local_irq_restore(flags);
	if (!ret)
		preempt_enable();
	return ret;
}

static void unload(struct ipt_trace *t)
{
	unsigned long flags;

	local_irq_save(flags);
	ipt_thread_unload(t);
	disarm(t);
	local_irq_restore(flags);
	preempt_enable();
}

/* MSR path, switch-in: the SDM order, CTL with TraceEn last. */
static void msr_load_order(struct kunit *test)
{
	struct fixture *f = test->priv;

	ipt_thread_switch_msrs(&f->s);
	KUNIT_ASSERT_TRUE(test, load(&f->t));
	KUNIT_EXPECT_EQ(test, nr_recs, 4u);
	EXPECT_REC(0, REC_WR, MSR_IA32_RTIT_OUTPUT_BASE, 0x1234000);
	EXPECT_REC(1, REC_WR, MSR_IA32_RTIT_OUTPUT_MASK, f->t.mask);
	EXPECT_REC(2, REC_WR, MSR_IA32_RTIT_STATUS,
		   RTIT_STATUS_STOPPED | (0x40ULL << 32));
	EXPECT_REC(3, REC_WR, MSR_IA32_RTIT_CTL, CTL | RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_TRUE(test, f->t.running);
	KUNIT_EXPECT_EQ(test, f->t.th.switches, 1ULL);
	KUNIT_EXPECT_LT(test, f->t.cpu, nr_cpu_ids);
	unload(&f->t);
}

/* MSR path, switch-out: TraceEn off, then the position, then the PMI. */
static void msr_unload_order(struct kunit *test)
{
	struct fixture *f = test->priv;

	ipt_thread_switch_msrs(&f->s);
	KUNIT_ASSERT_TRUE(test, load(&f->t));
	nr_recs = 0;
	unload(&f->t);
	KUNIT_ASSERT_EQ(test, nr_recs, 5u);
	EXPECT_REC(0, REC_WR, MSR_IA32_RTIT_CTL, CTL);
	EXPECT_REC(1, REC_RD, MSR_IA32_RTIT_OUTPUT_BASE, 0);
	EXPECT_REC(2, REC_RD, MSR_IA32_RTIT_OUTPUT_MASK, 0);
	EXPECT_REC(3, REC_RD, MSR_IA32_RTIT_STATUS, 0);
	EXPECT_REC(4, REC_RD, MSR_CORE_PERF_GLOBAL_STATUS, 0);
	KUNIT_EXPECT_EQ(test, f->t.base, regs_base);
	KUNIT_EXPECT_EQ(test, f->t.mask, regs_mask);
	KUNIT_EXPECT_EQ(test, f->t.status, regs_status);
	KUNIT_EXPECT_FALSE(test, f->t.running);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 0LL);

	/* The next switch-in restores exactly what was saved. */
	nr_recs = 0;
	KUNIT_ASSERT_TRUE(test, load(&f->t));
	EXPECT_REC(0, REC_WR, MSR_IA32_RTIT_OUTPUT_BASE, regs_base);
	EXPECT_REC(1, REC_WR, MSR_IA32_RTIT_OUTPUT_MASK, regs_mask);
	EXPECT_REC(2, REC_WR, MSR_IA32_RTIT_STATUS, regs_status);
	unload(&f->t);
	KUNIT_EXPECT_EQ(test, f->t.th.switches, 2ULL);
}

/*
 * MSR path, a switch-out whose stop faults (the WRMSR clearing TraceEn is
 * #GP and TraceEn reads back set): the switch cannot fail, the thread is
 * unloaded, but the unit may still write into its buffer, so this CPU
 * stays marked on: a release then frees no buffer while the CPU is
 * offline, and a panic on this CPU clears TraceEn; where it writes is
 * not known, so the trace is cut.  A stop that works marks it off.
 */
static void msr_unload_stop_fault_stays_on(struct kunit *test)
{
	struct fixture *f = test->priv;
	unsigned long flags;
	bool on_after, on_ok, cut_after;

	ipt_thread_switch_msrs(&f->s);
	pin_arm(&f->t, &flags);
	KUNIT_EXPECT_TRUE(test, ipt_thread_load(&f->t));
	KUNIT_EXPECT_TRUE(test, ipt_life_on_here());
	fail_msr = MSR_IA32_RTIT_CTL;
	ctl_reads_on = true;
	ipt_thread_unload(&f->t);
	on_after = ipt_life_on_here();
	/* its position not read: the trace is cut */
	cut_after = f->t.cut;
	/* the unit cleared after all: the next switch-out marks it off */
	fail_msr = 0;
	ctl_reads_on = false;
	KUNIT_EXPECT_TRUE(test, ipt_thread_load(&f->t));
	ipt_thread_unload(&f->t);
	on_ok = ipt_life_on_here();
	disarm(&f->t);
	local_irq_restore(flags);
	preempt_enable();
	KUNIT_EXPECT_TRUE(test, on_after);
	KUNIT_EXPECT_TRUE(test, cut_after);
	KUNIT_EXPECT_FALSE(test, f->t.running);
	KUNIT_EXPECT_FALSE(test, on_ok);
}

/*
 * A ToPA PMI still pending at switch-out is this thread's: counted, acked,
 * and the LVT re-armed (it may be pending because the LVT was masked).
 */
static void unload_settles_pending_pmi(struct kunit *test)
{
	struct fixture *f = test->priv;

	KUNIT_ASSERT_TRUE(test, load(&f->t));
	regs_gs = GLOBAL_STATUS_TRACE_TOPAPMI;
	nr_recs = 0;
	unload(&f->t);
	KUNIT_ASSERT_EQ(test, nr_recs, 6u);
	EXPECT_REC(4, REC_RD, MSR_CORE_PERF_GLOBAL_STATUS, 0);
	EXPECT_REC(5, REC_WR, MSR_CORE_PERF_GLOBAL_OVF_CTRL,
		   GLOBAL_STATUS_TRACE_TOPAPMI);
	KUNIT_EXPECT_EQ(test, regs_gs, 0ULL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 1LL);
	KUNIT_EXPECT_EQ(test, f->t.pmis_at_stop, 1ULL);
	KUNIT_EXPECT_EQ(test, lvt_unmasks, 1u);

	/* Settled: the next switch-out finds nothing more. */
	KUNIT_ASSERT_TRUE(test, load(&f->t));
	unload(&f->t);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 1LL);
	KUNIT_EXPECT_EQ(test, lvt_unmasks, 1u);

	/* A bit of perf's pending too: the LVT is left for perf to re-arm. */
	KUNIT_ASSERT_TRUE(test, load(&f->t));
	regs_gs = GLOBAL_STATUS_TRACE_TOPAPMI | BIT_ULL(0);
	unload(&f->t);
	KUNIT_EXPECT_EQ(test, regs_gs, BIT_ULL(0));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 2LL);
	KUNIT_EXPECT_EQ(test, lvt_unmasks, 1u);
}

/* A unit someone else enabled: the first write faults, nothing else runs. */
static void msr_load_busy(struct kunit *test)
{
	struct fixture *f = test->priv;

	fail_msr = MSR_IA32_RTIT_OUTPUT_BASE;
	KUNIT_EXPECT_FALSE(test, load(&f->t));
	KUNIT_EXPECT_EQ(test, nr_recs, 1u);
	KUNIT_EXPECT_EQ(test, f->t.th.busy, 1ULL);
	KUNIT_EXPECT_EQ(test, f->t.th.switches, 0ULL);
	KUNIT_EXPECT_FALSE(test, f->t.running);
	/* Nothing is loaded: a second load is allowed and works. */
	fail_msr = 0;
	KUNIT_EXPECT_TRUE(test, load(&f->t));
	unload(&f->t);
}

/* Filters: CR3_MATCH and the ADDRn pairs in use, between STATUS and CTL. */
static void msr_load_filters(struct kunit *test)
{
	struct fixture *f = test->priv;

	f->s.nr_ranges = 4;
	f->s.hwcfg.ctl |= RTIT_CTL_CR3EN |
			  (1ULL << IPT_RTIT_CTL_ADDR_CFG_SHIFT(0)) |
			  (2ULL << IPT_RTIT_CTL_ADDR_CFG_SHIFT(3));
	f->s.hwcfg.cr3_match = 0xabc000;
	f->s.hwcfg.addr_a[0] = 0x400000;
	f->s.hwcfg.addr_b[0] = 0x401000;
	f->s.hwcfg.addr_a[3] = 0x500000;
	f->s.hwcfg.addr_b[3] = 0x500fff;
	ipt_thread_switch_msrs(&f->s);
	KUNIT_ASSERT_EQ(test, f->s.nr_switch_msrs, 5u);
	KUNIT_ASSERT_EQ(test, f->s.xsaves_switch_from, 3u);
	KUNIT_ASSERT_TRUE(test, load(&f->t));
	KUNIT_EXPECT_EQ(test, nr_recs, 9u);
	EXPECT_REC(2, REC_WR, MSR_IA32_RTIT_STATUS,
		   RTIT_STATUS_STOPPED | (0x40ULL << 32));
	EXPECT_REC(3, REC_WR, MSR_IA32_RTIT_CR3_MATCH, 0xabc000);
	EXPECT_REC(4, REC_WR, IPT_MSR_RTIT_ADDR_A(0), 0x400000);
	EXPECT_REC(5, REC_WR, IPT_MSR_RTIT_ADDR_B(0), 0x401000);
	EXPECT_REC(6, REC_WR, IPT_MSR_RTIT_ADDR_A(3), 0x500000);
	EXPECT_REC(7, REC_WR, IPT_MSR_RTIT_ADDR_B(3), 0x500fff);
	EXPECT_REC(8, REC_WR, MSR_IA32_RTIT_CTL,
		   f->s.hwcfg.ctl | RTIT_CTL_TRACEEN);
	unload(&f->t);

	/* XSAVES path: the component holds CR3 and ranges 0, 1. */
	f->s.xsaves = true;
	ipt_thread_switch_msrs(&f->s);
	KUNIT_ASSERT_EQ(test, f->s.nr_switch_msrs, 5u);
	KUNIT_ASSERT_EQ(test, f->s.xsaves_switch_from, 3u);
	KUNIT_EXPECT_EQ(test, f->s.switch_msrs[3].msr, IPT_MSR_RTIT_ADDR_A(3));
	KUNIT_EXPECT_EQ(test, f->s.switch_msrs[4].msr, IPT_MSR_RTIT_ADDR_B(3));
	ipt_thread_area_init(&f->s, &f->t);
	nr_recs = 0;
	KUNIT_ASSERT_TRUE(test, load(&f->t));
	KUNIT_EXPECT_EQ(test, nr_recs, 3u);
	EXPECT_REC(0, REC_WR, IPT_MSR_RTIT_ADDR_A(3), 0x500000);
	EXPECT_REC(1, REC_WR, IPT_MSR_RTIT_ADDR_B(3), 0x500fff);
	EXPECT_REC(2, REC_XRSTORS, 0, 0);
	unload(&f->t);
}

/* XSAVES path: one XRSTORS in; one XSAVES and the PMI check out. */
static void xsaves_load_unload(struct kunit *test)
{
	struct fixture *f = test->priv;

	use_xsaves(f);
	KUNIT_ASSERT_TRUE(test, load(&f->t));
	KUNIT_EXPECT_EQ(test, nr_recs, 1u);
	EXPECT_REC(0, REC_XRSTORS, 0, 0);
	nr_recs = 0;
	unload(&f->t);
	KUNIT_ASSERT_EQ(test, nr_recs, 2u);
	EXPECT_REC(0, REC_XSAVES, 0, 0);
	EXPECT_REC(1, REC_RD, MSR_CORE_PERF_GLOBAL_STATUS, 0);
	/* The position comes from the saved component. */
	KUNIT_EXPECT_EQ(test, f->t.base, regs_base);
	KUNIT_EXPECT_EQ(test, f->t.mask, regs_mask);
	KUNIT_EXPECT_EQ(test, f->t.status, regs_status);

	fail_xrstors = true;
	nr_recs = 0;
	KUNIT_EXPECT_FALSE(test, load(&f->t));
	KUNIT_EXPECT_EQ(test, f->t.th.busy, 1ULL);
	KUNIT_EXPECT_FALSE(test, f->t.running);
}

/*
 * XSAVES path, IA32_XSS lost bit 8 under the thread: XSAVES saves nothing
 * and says so in XCOMP_BV.  The unload clears TraceEn and reads the
 * position with MSRs, rebuilds the area from it, and this CPU stays on the
 * MSR path; nothing but the header was needed to find out.
 */
static void xsaves_unload_fallback(struct kunit *test)
{
	struct fixture *f = test->priv;
	u64 *hdr = f->t.th.xsave + IPT_XSAVE_HDR_OFFSET;
	u64 *v = f->t.th.xsave + IPT_XSAVE_PT_OFFSET;
	unsigned long flags;
	unsigned int n1, n2;
	bool loaded;

	use_xsaves(f);
	pin_arm(&f->t, &flags);
	loaded = ipt_thread_load(&f->t);
	xsaves_empty = true;
	nr_recs = 0;
	if (loaded)
		ipt_thread_unload(&f->t);
	n1 = nr_recs;
	/* The next switch-in on this CPU: the MSR sequence. */
	xsaves_empty = false;
	loaded = loaded && ipt_thread_load(&f->t);
	n2 = nr_recs;
	unpin(&f->t, loaded, flags);

	KUNIT_ASSERT_TRUE(test, loaded);
	KUNIT_ASSERT_EQ(test, n1, 6u);
	EXPECT_REC(0, REC_XSAVES, 0, 0);
	EXPECT_REC(1, REC_WR, MSR_IA32_RTIT_CTL, CTL);
	EXPECT_REC(2, REC_RD, MSR_IA32_RTIT_OUTPUT_BASE, 0);
	EXPECT_REC(3, REC_RD, MSR_IA32_RTIT_OUTPUT_MASK, 0);
	EXPECT_REC(4, REC_RD, MSR_IA32_RTIT_STATUS, 0);
	EXPECT_REC(5, REC_RD, MSR_CORE_PERF_GLOBAL_STATUS, 0);
	KUNIT_ASSERT_EQ(test, n2, n1 + 4);
	EXPECT_REC(6, REC_WR, MSR_IA32_RTIT_OUTPUT_BASE, regs_base);
	EXPECT_REC(9, REC_WR, MSR_IA32_RTIT_CTL, CTL | RTIT_CTL_TRACEEN);
	/* The area holds the position read, for an XRSTORS elsewhere. */
	KUNIT_EXPECT_EQ(test, hdr[1], BIT_ULL(63) | BIT_ULL(8));
	KUNIT_EXPECT_EQ(test, v[IPT_XSAVE_OUTPUT_BASE], regs_base);
	KUNIT_EXPECT_EQ(test, v[IPT_XSAVE_OUTPUT_MASK], regs_mask);
	KUNIT_EXPECT_EQ(test, f->t.base, regs_base);
}

/*
 * XSAVES path, the unit found off at the unload (a VMXON, or a PMI whose
 * restart faulted, cleared TraceEn): the trace is cut, and the area is
 * rebuilt from the saved position with TraceEn set, so that the next
 * XRSTORS traces again, as the MSR path's next load does; the saved CTL
 * would restore the unit off at every switch-in from then on.
 */
static void xsaves_unload_found_off(struct kunit *test)
{
	struct fixture *f = test->priv;
	u64 *v = f->t.th.xsave + IPT_XSAVE_PT_OFFSET;

	use_xsaves(f);
	KUNIT_ASSERT_TRUE(test, load(&f->t));
	xsaves_ctl_off = true;
	nr_recs = 0;
	unload(&f->t);
	EXPECT_REC(0, REC_XSAVES, 0, 0);
	KUNIT_EXPECT_TRUE(test, f->t.cut);
	KUNIT_EXPECT_FALSE(test, f->t.running);
	KUNIT_EXPECT_EQ(test, f->t.base, regs_base);
	KUNIT_EXPECT_EQ(test, v[IPT_XSAVE_CTL], CTL | RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, v[IPT_XSAVE_OUTPUT_BASE], regs_base);
	KUNIT_EXPECT_EQ(test, v[IPT_XSAVE_OUTPUT_MASK], regs_mask);
}

/*
 * XSAVES path, IA32_XSS lost bit 8 while the thread was out: XRSTORS of
 * its area faults; IA32_XSS, read only then, says why, and the load is
 * done with MSRs instead of counting as busy.
 */
static void xsaves_load_fallback(struct kunit *test)
{
	struct fixture *f = test->priv;
	unsigned long flags;
	unsigned int n;
	bool loaded;

	use_xsaves(f);
	pin_arm(&f->t, &flags);
	regs_xss &= ~XFEATURE_MASK_PT;
	fail_xrstors = true;
	nr_recs = 0;
	loaded = ipt_thread_load(&f->t);
	n = nr_recs;
	unpin(&f->t, loaded, flags);

	KUNIT_ASSERT_TRUE(test, loaded);
	KUNIT_ASSERT_EQ(test, n, 6u);
	EXPECT_REC(0, REC_XRSTORS, 0, 0);
	EXPECT_REC(1, REC_RD, MSR_IA32_XSS, 0);
	EXPECT_REC(2, REC_WR, MSR_IA32_RTIT_OUTPUT_BASE, 0x1234000);
	EXPECT_REC(5, REC_WR, MSR_IA32_RTIT_CTL, CTL | RTIT_CTL_TRACEEN);
	/* The unload used the MSR path too: no XSAVES. */
	EXPECT_REC(6, REC_WR, MSR_IA32_RTIT_CTL, CTL);
	KUNIT_EXPECT_EQ(test, f->t.th.busy, 0ULL);
}

/* The area a thread starts from: what XSAVES would have stored. */
static void xsave_area_layout(struct kunit *test)
{
	struct fixture *f = test->priv;
	u8 *a = f->t.th.xsave;
	u64 *hdr = (u64 *)(a + IPT_XSAVE_HDR_OFFSET);
	u64 *v = (u64 *)(a + IPT_XSAVE_PT_OFFSET);

	KUNIT_ASSERT_TRUE(test, IS_ALIGNED((unsigned long)a, 64));
	f->s.hwcfg.cr3_match = 0xabc000;
	f->s.hwcfg.addr_a[0] = 1;
	f->s.hwcfg.addr_b[0] = 2;
	f->s.hwcfg.addr_a[1] = 3;
	f->s.hwcfg.addr_b[1] = 4;
	ipt_thread_area_init(&f->s, &f->t);
	KUNIT_EXPECT_EQ(test, IPT_XSAVE_HDR_OFFSET, 512);
	KUNIT_EXPECT_EQ(test, IPT_XSAVE_PT_OFFSET, 576);
	KUNIT_EXPECT_EQ(test, hdr[0], BIT_ULL(8));		/* XSTATE_BV */
	KUNIT_EXPECT_EQ(test, hdr[1], BIT_ULL(63) | BIT_ULL(8));	/* XCOMP_BV */
	KUNIT_EXPECT_EQ(test, v[0], CTL | RTIT_CTL_TRACEEN);
	KUNIT_EXPECT_EQ(test, v[1], 0x1234000ULL);
	KUNIT_EXPECT_EQ(test, v[2], f->t.mask);
	KUNIT_EXPECT_EQ(test, v[3], RTIT_STATUS_STOPPED | (0x40ULL << 32));
	KUNIT_EXPECT_EQ(test, v[4], 0xabc000ULL);
	KUNIT_EXPECT_EQ(test, v[5], 1ULL);
	KUNIT_EXPECT_EQ(test, v[6], 2ULL);
	KUNIT_EXPECT_EQ(test, v[7], 3ULL);
	KUNIT_EXPECT_EQ(test, v[8], 4ULL);
	/* The legacy area and the rest of the header stay zero. */
	KUNIT_EXPECT_NULL(test, memchr_inv(a, 0, IPT_XSAVE_HDR_OFFSET));
	KUNIT_EXPECT_NULL(test, memchr_inv(&hdr[2], 0, 48));
	KUNIT_EXPECT_NULL(test, memchr_inv(&v[9], 0, TEST_PT_SIZE - 72));

	/* Without CR3 filtering or ranges the fields are zero. */
	memset(a, 0, IPT_XSAVE_AREA_BYTES(TEST_PT_SIZE));
	f->s.has_cr3 = false;
	f->s.nr_ranges = 0;
	ipt_thread_area_init(&f->s, &f->t);
	KUNIT_EXPECT_NULL(test, memchr_inv(&v[4], 0, 5 * 8));
}

/*
 * The path a session takes: XSAVES only when XSAVES enumerates PT and the
 * component CPUID.(0DH,8) reports holds the nine fields ipt reads (72
 * bytes); a smaller one, or none, is the MSR path.
 */
static void xsaves_path_choice(struct kunit *test)
{
	struct ipt_caps caps = {
		.features = IPT_FEAT_XSAVES_PT,
		.xsave_pt_size = 128,
	};

	KUNIT_EXPECT_TRUE(test, ipt_thread_use_xsaves(&caps));
	caps.xsave_pt_size = IPT_XSAVE_PT_MIN_SIZE;
	KUNIT_EXPECT_TRUE(test, ipt_thread_use_xsaves(&caps));
	caps.xsave_pt_size = IPT_XSAVE_PT_MIN_SIZE - 8;
	KUNIT_EXPECT_FALSE(test, ipt_thread_use_xsaves(&caps));
	caps.xsave_pt_size = 0;
	KUNIT_EXPECT_FALSE(test, ipt_thread_use_xsaves(&caps));
	caps.xsave_pt_size = 128;
	caps.features = 0;
	KUNIT_EXPECT_FALSE(test, ipt_thread_use_xsaves(&caps));
}

static struct kunit_case thread_cases[] = {
	KUNIT_CASE(msr_load_order),
	KUNIT_CASE(msr_unload_order),
	KUNIT_CASE(msr_unload_stop_fault_stays_on),
	KUNIT_CASE(unload_settles_pending_pmi),
	KUNIT_CASE(msr_load_busy),
	KUNIT_CASE(msr_load_filters),
	KUNIT_CASE(xsaves_load_unload),
	KUNIT_CASE(xsaves_unload_fallback),
	KUNIT_CASE(xsaves_unload_found_off),
	KUNIT_CASE(xsaves_load_fallback),
	KUNIT_CASE(xsave_area_layout),
	KUNIT_CASE(xsaves_path_choice),
	{}
};

static struct kunit_suite thread_suite = {
	.name = "ipt_thread",
	.init = thread_test_init,
	.test_cases = thread_cases,
};

kunit_test_suites(&thread_suite);

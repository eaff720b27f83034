// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of per-thread switching against the live simulated unit
 * (built into ipt_sim_kunit.ko, which has both modules' symbols):
 * ipt_thread_sim drives ipt_thread_load() / ipt_thread_unload() through
 * the simulator's registered operations on this CPU, and rewrites
 * IA32_XSS underneath a loaded thread as KVM's VM exit or a resume does.
 */
#include <kunit/test.h>
#include <linux/cpumask.h>
#include <linux/io.h>
#include <linux/irqflags.h>
#include <linux/preempt.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "../ipt_session.h"
#include "../sim/ipt_sim.h"

#define TS_CTL	(RTIT_CTL_TOPA | RTIT_CTL_USR | RTIT_CTL_BRANCH_EN)

struct ts_fixture {
	struct ipt_device idev;
	struct ipt_session s;
	struct ipt_buffer buf;
	struct ipt_trace t[2];
	u64 *table[2];
	u8 *area_mem[2];
};

/* A one-region ToPA ring (4 KiB, END back to the table) for trace @i. */
static void ts_trace(struct kunit *test, struct ts_fixture *f, unsigned int i)
{
	struct ipt_trace *t = &f->t[i];
	size_t area = IPT_XSAVE_AREA_BYTES(4096) + IPT_XSAVE_ALIGN;
	u64 *table = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	u8 *out = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, table);
	KUNIT_ASSERT_NOT_NULL(test, out);
	KUNIT_ASSERT_TRUE(test, PAGE_ALIGNED(table) && PAGE_ALIGNED(out));
	table[0] = virt_to_phys(out);
	table[1] = virt_to_phys(table) | IPT_TOPA_END;
	f->table[i] = table;
	/* Generous: the area size is not what this test is about. */
	f->area_mem[i] = kunit_kzalloc(test, 2 * area, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->area_mem[i]);
	t->s = &f->s;
	t->buf = &f->buf;
	t->base = virt_to_phys(table);
	t->mask = IPT_RTIT_MASK_LOW;
	t->th.xsave = PTR_ALIGN((void *)f->area_mem[i], IPT_XSAVE_ALIGN);
	seqcount_init(&t->th.seq);
	raw_spin_lock_init(&t->th.lock);
	atomic64_set(&t->pmis, 0);
	ipt_thread_area_init(&f->s, t);
}

static int ts_init(struct kunit *test)
{
	const struct ipt_hw_ops *ops = ipt_sim_live_ops();
	struct ipt_cpuid_regs r;
	struct ts_fixture *f;

	ops->cpuid(IPT_CPUID_XSAVE, 1, &r);
	if (!(r.ecx & BIT(IPT_CPUID_XSAVE_PT_COMPONENT)))
		kunit_skip(test, "model without XSAVES-PT");
	ops->cpuid(IPT_CPUID_PT, 0, &r);
	if (!(r.ecx & BIT(0)))
		kunit_skip(test, "model without ToPA");
	f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f);
	f->s.idev = &f->idev;
	/* Every CPU's unit runs the configuration (no hybrid part here). */
	cpumask_setall(&f->s.fits);
	f->s.hw = ops;
	f->s.hwcfg.ctl = TS_CTL;
	f->s.hwcfg.status_keep = IPT_STATUS_KEEP;
	f->s.xsaves = true;
	ipt_thread_switch_msrs(&f->s);
	ts_trace(test, f, 0);
	ts_trace(test, f, 1);
	test->priv = f;
	return 0;
}

static u64 ts_rdmsr(const struct ipt_hw_ops *ops, u32 msr)
{
	u64 v = ~0ULL;

	ops->read_msr(msr, &v);
	return v;
}

/*
 * Thread 0 is loaded (XSAVES path) when IA32_XSS loses bit 8 on its CPU;
 * it is switched out and thread 1 switched in.  The unit must be off
 * after the switch-out, thread 0's position must be the one the unit
 * stopped at, and thread 1 must not be traced into thread 0's buffer.
 * One sequence with interrupts off, as in the scheduler hook; only
 * EXPECTs inside it (an ASSERT would leave interrupts off).
 */
static void thread_xss_lost_under_loaded_thread(struct kunit *test)
{
	struct ts_fixture *f = test->priv;
	const struct ipt_hw_ops *ops = f->s.hw;
	u64 ctl_after_unload, base_after_load, base0, mask0, ctl;
	unsigned long flags;
	bool loaded0, loaded1;

	preempt_disable();
	local_irq_save(flags);
	ipt_xss_set_on_cpu(&f->s);
	loaded0 = ipt_thread_load(&f->t[0]);
	/* What kvm_load_host_xsave_state() / fpu__resume_cpu() do. */
	ops->write_msr(MSR_IA32_XSS,
		       ts_rdmsr(ops, MSR_IA32_XSS) & ~XFEATURE_MASK_PT);
	if (loaded0)
		ipt_thread_unload(&f->t[0]);
	ctl_after_unload = ts_rdmsr(ops, MSR_IA32_RTIT_CTL);
	base0 = ts_rdmsr(ops, MSR_IA32_RTIT_OUTPUT_BASE);
	mask0 = ts_rdmsr(ops, MSR_IA32_RTIT_OUTPUT_MASK);
	loaded1 = ipt_thread_load(&f->t[1]);
	base_after_load = ts_rdmsr(ops, MSR_IA32_RTIT_OUTPUT_BASE);
	if (loaded1)
		ipt_thread_unload(&f->t[1]);
	/* Whatever happened, leave the unit off and IA32_XSS as found. */
	ctl = ts_rdmsr(ops, MSR_IA32_RTIT_CTL);
	if (ctl & RTIT_CTL_TRACEEN)
		ops->write_msr(MSR_IA32_RTIT_CTL, ctl & ~RTIT_CTL_TRACEEN);
	ipt_xss_restore_on_cpu(&f->s);
	local_irq_restore(flags);
	preempt_enable();

	KUNIT_EXPECT_TRUE(test, loaded0);
	KUNIT_EXPECT_EQ_MSG(test, ctl_after_unload & RTIT_CTL_TRACEEN, 0ULL,
			    "TraceEn left on after unload: ctl %#llx",
			    ctl_after_unload);
	/* Thread 0's saved position is where its unit stopped. */
	KUNIT_EXPECT_EQ(test, f->t[0].base, base0);
	KUNIT_EXPECT_EQ(test, f->t[0].mask, mask0);
	KUNIT_EXPECT_FALSE(test, f->t[0].running);
	/* Thread 1 is traced into its own buffer. */
	KUNIT_EXPECT_TRUE(test, loaded1);
	KUNIT_EXPECT_EQ_MSG(test, base_after_load, f->t[1].base,
			    "OUTPUT_BASE %#llx after loading thread 1; thread 0's table is %#llx",
			    base_after_load, f->t[0].base);
	KUNIT_EXPECT_EQ(test, f->t[1].th.busy, 0ULL);
}

static struct kunit_case ts_cases[] = {
	KUNIT_CASE(thread_xss_lost_under_loaded_thread),
	{}
};

static struct kunit_suite ts_suite = {
	.name = "ipt_thread_sim",
	.init = ts_init,
	.test_cases = ts_cases,
};

kunit_test_suites(&ts_suite);

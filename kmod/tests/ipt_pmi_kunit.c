// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for ipt_pmi.c: the ToPA PMI protocol.  A fake backend hands
 * the test the handler ipt_pmi_request() installs, so that an "NMI" is a
 * call of it on this CPU and a "PMI" is bit 55 of a fake
 * IA32_PERF_GLOBAL_STATUS (write-1-to-clear through OVF_CTRL) plus that
 * call; reading the status can deliver one in the middle of the settling
 * at unload, as an NMI could.  The fake records the registration flags,
 * every acknowledgment and every LVT re-arm.
 */
#include <kunit/test.h>
#include <linux/irq_work.h>
#include <linux/irqflags.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/smp.h>

#include "../ipt_session.h"
#include "ipt_test.h"

static ipt_pmi_fn pmi_fn;	/* the installed handler, or NULL */
static unsigned int pmi_releases;
static u64 fake_gs;		/* IA32_PERF_GLOBAL_STATUS */
static u64 fake_mask;		/* IA32_RTIT_OUTPUT_MASK_PTRS */
static bool pmi_on_gs_read;	/* a PMI arrives as GLOBAL_STATUS is read */
static bool reraise_on_ack;	/* bit 55 is raised again right after an ack */
static bool raise_on_ctl_read;	/* bit 55 is raised as IA32_RTIT_CTL is read */
static unsigned int ctl_reads;
static unsigned int ovf_acks;
static u64 ovf_last;		/* the last value written to OVF_CTRL */
static unsigned int gs_reads;
static unsigned int pmi_flags;	/* as passed to pmi_request */
static unsigned int unmasks;	/* LVT re-arms */

static int fake_rd(u32 msr, u64 *val)
{
	switch (msr) {
	case MSR_CORE_PERF_GLOBAL_STATUS:
		gs_reads++;
		if (pmi_on_gs_read && pmi_fn) {
			pmi_on_gs_read = false;
			pmi_fn();
		}
		*val = fake_gs;
		return 0;
	case MSR_IA32_RTIT_OUTPUT_MASK:
		*val = fake_mask;
		return 0;
	case MSR_IA32_RTIT_CTL:
		/* A stream's PMI: its stop and restart end another region. */
		ctl_reads++;
		if (raise_on_ctl_read) {
			raise_on_ctl_read = false;
			fake_gs |= GLOBAL_STATUS_TRACE_TOPAPMI;
		}
		return -EIO;
	}
	return -EIO;
}

static int fake_wr(u32 msr, u64 val)
{
	if (msr == MSR_CORE_PERF_GLOBAL_OVF_CTRL) {
		fake_gs &= ~val;
		ovf_acks++;
		ovf_last = val;
		if (reraise_on_ack) {
			reraise_on_ack = false;
			fake_gs |= GLOBAL_STATUS_TRACE_TOPAPMI;
		}
	}
	return 0;
}

static int fake_pmi_request(ipt_pmi_fn fn, unsigned int flags)
{
	if (pmi_fn)
		return -EBUSY;
	pmi_fn = fn;
	pmi_flags = flags;
	return 0;
}

static void fake_pmi_unmask(void)
{
	unmasks++;
}

static void fake_pmi_release(void)
{
	pmi_fn = NULL;
	pmi_releases++;
}

static const struct ipt_hw_ops fake_ops = {
	.name = "kunit",
	.read_msr = fake_rd,
	.write_msr = fake_wr,
	.pmi_request = fake_pmi_request,
	.pmi_release = fake_pmi_release,
	.pmi_unmask = fake_pmi_unmask,
};

static int pmi_test_init(struct kunit *test)
{
	struct ipt_test_session *f = ipt_test_session(test, &fake_ops);

	f->s.nr_traces = 1;
	f->s.traces = &f->t;
	f->t.buf = kunit_kzalloc(test, sizeof(*f->t.buf), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->t.buf);
	f->t.buf->size = SZ_64K;
	atomic64_set(&f->t.pmis, 0);
	pmi_fn = NULL;
	pmi_releases = 0;
	fake_gs = 0;
	fake_mask = 0;
	pmi_on_gs_read = false;
	reraise_on_ack = false;
	raise_on_ctl_read = false;
	ctl_reads = 0;
	ovf_acks = 0;
	ovf_last = 0;
	gs_reads = 0;
	pmi_flags = 0;
	unmasks = 0;
	test->priv = f;
	return 0;
}

/* The calls made under the device lock, each taking it. */
static int request(struct ipt_test_session *f)
{
	int ret;

	mutex_lock(&f->idev.lock);
	ret = ipt_pmi_request(&f->s);
	mutex_unlock(&f->idev.lock);
	return ret;
}

static void release(struct ipt_test_session *f)
{
	mutex_lock(&f->idev.lock);
	ipt_pmi_release(&f->s);
	mutex_unlock(&f->idev.lock);
}

static void arm(struct ipt_test_session *f, unsigned int cpu)
{
	mutex_lock(&f->idev.lock);
	ipt_pmi_arm(&f->t, cpu);
	mutex_unlock(&f->idev.lock);
}

static void pmi_test_exit(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;

	if (pmi_fn)
		release(f);
}

/* An NMI on this CPU, as the backend would deliver it. */
static bool nmi(void)
{
	unsigned long flags;
	bool ret;

	local_irq_save(flags);
	ret = pmi_fn();
	local_irq_restore(flags);
	return ret;
}

/* A ToPA PMI on this CPU: bit 55 raised, then its NMI. */
static void pmi(void)
{
	fake_gs |= GLOBAL_STATUS_TRACE_TOPAPMI;
	nmi();
}

/*
 * Arm this CPU for @t and deliver @n PMIs, staying on this CPU; then
 * disarm.  Returns with preemption as it was.
 */
static void arm_here_and_pmi(struct ipt_trace *t, unsigned int n)
{
	unsigned long flags;

	preempt_disable();
	local_irq_save(flags);
	ipt_pmi_arm_here(t);
	while (n--) {
		fake_gs |= GLOBAL_STATUS_TRACE_TOPAPMI;
		pmi_fn();
	}
	ipt_pmi_disarm_here();
	local_irq_restore(flags);
	preempt_enable();
}

/*
 * Request installs the handler first in the NMI chain, ahead of perf's
 * (which acks all of GLOBAL_STATUS); release removes it and disarms.
 */
static void pmi_request_release(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;

	KUNIT_ASSERT_EQ(test, request(f), 0);
	KUNIT_ASSERT_NOT_NULL(test, pmi_fn);
	KUNIT_EXPECT_EQ(test, pmi_flags, (unsigned int)IPT_PMI_FIRST);
	/* Not armed: the handler counts nothing. */
	pmi();
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 0LL);
	release(f);
	KUNIT_EXPECT_NULL(test, pmi_fn);
	KUNIT_EXPECT_EQ(test, pmi_releases, 1u);
}

/* Armed for a CPU's trace, the handler of that CPU counts for it. */
static void pmi_arm_counts(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;
	ipt_pmi_fn fn;

	KUNIT_ASSERT_EQ(test, request(f), 0);
	arm_here_and_pmi(&f->t, 3);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 3LL);
	/* Each acked (bit 55 alone) and the LVT re-armed each time. */
	KUNIT_EXPECT_EQ(test, ovf_acks, 3u);
	KUNIT_EXPECT_EQ(test, unmasks, 3u);
	KUNIT_EXPECT_EQ(test, fake_gs, 0ULL);
	/* Multi-entry ToPA: no sample taken. */
	KUNIT_EXPECT_EQ(test, f->t.sample, 0ULL);

	/*
	 * Armed for its CPU, as configure arms a per-CPU trace; then
	 * released: disarmed, nothing counts any more.
	 */
	migrate_disable();
	f->t.cpu = smp_processor_id();
	arm(f, f->t.cpu);
	pmi();
	fn = pmi_fn;
	release(f);
	pmi_fn = fn;
	/* Disarmed: not ipt's any more, bit 55 left alone for perf. */
	KUNIT_EXPECT_FALSE(test, nmi());
	fake_gs |= GLOBAL_STATUS_TRACE_TOPAPMI;
	KUNIT_EXPECT_FALSE(test, nmi());
	pmi_fn = NULL;
	migrate_enable();
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 4LL);
	KUNIT_EXPECT_EQ(test, fake_gs, GLOBAL_STATUS_TRACE_TOPAPMI);
}

/* A single-entry ring: the handler samples where the unit is. */
static void pmi_single_entry_sample(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;

	f->s.single = true;
	fake_mask = (u64)(SZ_64K - 0x40) << 32;
	KUNIT_ASSERT_EQ(test, request(f), 0);
	arm_here_and_pmi(&f->t, 1);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 1LL);
	KUNIT_EXPECT_EQ(test, f->t.sample, (u64)SZ_64K - 0x40);

	/* Stop-on-full: a PMI means full, no sample. */
	f->t.buf->stop_on_full = true;
	f->t.sample = 0;
	arm_here_and_pmi(&f->t, 1);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 2LL);
	KUNIT_EXPECT_EQ(test, f->t.sample, 0ULL);
}

static bool settle(struct ipt_trace *t, u64 mask, unsigned int *rd,
		   unsigned int *wr)
{
	unsigned long flags;
	bool ret;

	preempt_disable();
	local_irq_save(flags);
	ipt_pmi_arm_here(t);
	ret = ipt_pmi_settle_here(t, mask, rd, wr);
	local_irq_restore(flags);
	preempt_enable();
	return ret;
}

/* Settling at unload: nothing pending, nothing counted. */
static void pmi_settle_none(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;
	unsigned int rd = 0, wr = 0;

	KUNIT_ASSERT_EQ(test, request(f), 0);
	KUNIT_EXPECT_FALSE(test, settle(&f->t, 0x100ULL << 32, &rd, &wr));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 0LL);
	KUNIT_EXPECT_EQ(test, rd, 1u);
	KUNIT_EXPECT_EQ(test, wr, 0u);
	KUNIT_EXPECT_EQ(test, ovf_acks, 0u);
	/* Disarmed: a late PMI counts for nobody. */
	pmi();
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 0LL);
}

/* A PMI pending at unload: counted for the trace, acked, sampled. */
static void pmi_settle_pending(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;
	unsigned int rd = 0, wr = 0;

	KUNIT_ASSERT_EQ(test, request(f), 0);
	fake_gs = GLOBAL_STATUS_TRACE_TOPAPMI;
	KUNIT_EXPECT_TRUE(test, settle(&f->t, 0x100ULL << 32, &rd, &wr));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 1LL);
	KUNIT_EXPECT_EQ(test, f->t.sample, 0x100ULL);
	KUNIT_EXPECT_EQ(test, fake_gs, 0ULL);
	KUNIT_EXPECT_EQ(test, ovf_acks, 1u);
	KUNIT_EXPECT_EQ(test, rd, 1u);
	KUNIT_EXPECT_EQ(test, wr, 1u);
	/* It may be pending because the LVT was masked: re-armed. */
	KUNIT_EXPECT_EQ(test, unmasks, 1u);
}

/*
 * A PMI delivered while the unload settles (after the pointer moved to
 * the orphan counter): counted once for the trace, not for the next.
 */
static void pmi_settle_arriving(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;
	unsigned int rd = 0, wr = 0;

	KUNIT_ASSERT_EQ(test, request(f), 0);
	fake_gs = GLOBAL_STATUS_TRACE_TOPAPMI;
	pmi_on_gs_read = true;
	KUNIT_EXPECT_TRUE(test, settle(&f->t, 0x80ULL << 32, &rd, &wr));
	KUNIT_EXPECT_FALSE(test, pmi_on_gs_read);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 1LL);
	KUNIT_EXPECT_EQ(test, f->t.sample, 0x80ULL);
	/* Acked by the handler that took it, not again. */
	KUNIT_EXPECT_EQ(test, ovf_acks, 1u);

	/* The next settle of the same CPU finds nothing left over. */
	KUNIT_EXPECT_FALSE(test, settle(&f->t, 0, &rd, &wr));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 1LL);
}

/* Run the handler as an NMI with this CPU armed for @t. */
static bool armed_nmi(struct ipt_trace *t)
{
	unsigned long flags;
	bool ret;

	preempt_disable();
	local_irq_save(flags);
	ipt_pmi_arm_here(t);
	ret = pmi_fn();
	ipt_pmi_disarm_here();
	local_irq_restore(flags);
	preempt_enable();
	return ret;
}

/*
 * The NMI is shared with perf: ipt claims it only for bit 55, acks bit
 * 55 alone (write-1-to-clear) and leaves perf's bits; with those pending
 * it leaves the LVT masked for perf, which unmasks after resetting them.
 */
static void pmi_shared_with_perf(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;

	KUNIT_ASSERT_EQ(test, request(f), 0);
	/* perf's counter overflow alone: not ipt's, nothing written. */
	fake_gs = BIT_ULL(0);
	KUNIT_EXPECT_FALSE(test, armed_nmi(&f->t));
	KUNIT_EXPECT_EQ(test, ovf_acks, 0u);
	KUNIT_EXPECT_EQ(test, unmasks, 0u);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 0LL);

	/* Both: bit 55 taken and acked alone; the LVT left to perf. */
	fake_gs = BIT_ULL(0) | BIT_ULL(32) | GLOBAL_STATUS_TRACE_TOPAPMI;
	KUNIT_EXPECT_TRUE(test, armed_nmi(&f->t));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 1LL);
	KUNIT_EXPECT_EQ(test, ovf_acks, 1u);
	KUNIT_EXPECT_EQ(test, ovf_last, GLOBAL_STATUS_TRACE_TOPAPMI);
	KUNIT_EXPECT_EQ(test, fake_gs, BIT_ULL(0) | BIT_ULL(32));
	KUNIT_EXPECT_EQ(test, unmasks, 0u);

	/* Bit 55 alone: taken and the LVT re-armed by ipt. */
	fake_gs = GLOBAL_STATUS_TRACE_TOPAPMI;
	KUNIT_EXPECT_TRUE(test, armed_nmi(&f->t));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 2LL);
	KUNIT_EXPECT_EQ(test, fake_gs, 0ULL);
	KUNIT_EXPECT_EQ(test, unmasks, 1u);
}

/* Not counting for a trace on this CPU: no MSR is touched at all. */
static void pmi_unarmed_touches_nothing(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;

	KUNIT_ASSERT_EQ(test, request(f), 0);
	fake_gs = GLOBAL_STATUS_TRACE_TOPAPMI;
	KUNIT_EXPECT_FALSE(test, nmi());
	KUNIT_EXPECT_EQ(test, gs_reads, 0u);
	KUNIT_EXPECT_EQ(test, ovf_acks, 0u);
	KUNIT_EXPECT_EQ(test, unmasks, 0u);
	KUNIT_EXPECT_EQ(test, fake_gs, GLOBAL_STATUS_TRACE_TOPAPMI);
}

/* A second ToPA PMI raised just after the ack is taken in the same NMI. */
static void pmi_raised_again(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;

	KUNIT_ASSERT_EQ(test, request(f), 0);
	fake_gs = GLOBAL_STATUS_TRACE_TOPAPMI;
	reraise_on_ack = true;
	KUNIT_EXPECT_TRUE(test, armed_nmi(&f->t));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 2LL);
	KUNIT_EXPECT_EQ(test, ovf_acks, 2u);
	KUNIT_EXPECT_EQ(test, fake_gs, 0ULL);
	KUNIT_EXPECT_EQ(test, unmasks, 1u);
}

static void pmi_stream_work(struct irq_work *work)
{
}

/*
 * A stream trace's PMI writes packets (its stop and restart), which may
 * end the next region while the LVT is still masked: the handler reads
 * the status after the stream's handling, takes that PMI too, and leaves
 * bit 55 clear (Linux reads the status again after intel_pt_interrupt(),
 * arch/x86/events/intel/core.c:3100-3107).  A trace that is not running
 * on this CPU has no register read for it.
 */
static void pmi_stream_raised_while_handled(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;

	f->s.stream = true;
	init_irq_work(&f->t.stream.work, pmi_stream_work);
	KUNIT_ASSERT_EQ(test, request(f), 0);
	migrate_disable();
	f->t.cpu = smp_processor_id();
	arm(f, f->t.cpu);
	/* Not running here: counted, acked, the unit's registers untouched. */
	pmi();
	KUNIT_EXPECT_EQ(test, ctl_reads, 0u);
	KUNIT_EXPECT_EQ(test, fake_gs, 0ULL);
	/* Running: the PMI raised during its handling is taken as well. */
	WRITE_ONCE(f->t.running, true);
	raise_on_ctl_read = true;
	pmi();
	KUNIT_EXPECT_EQ(test, ctl_reads, 2u);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->t.pmis), 3LL);
	KUNIT_EXPECT_EQ(test, ovf_acks, 3u);
	KUNIT_EXPECT_EQ(test, fake_gs, 0ULL);
	KUNIT_EXPECT_EQ(test, unmasks, 2u);
	release(f);
	migrate_enable();
	irq_work_sync(&f->t.stream.work);
}

/*
 * One handler serves every session: the first request installs it, the
 * last release removes it; in between it counts for a thread of the
 * session that is left.
 */
static void pmi_handler_shared(struct kunit *test)
{
	struct ipt_test_session *f = test->priv;
	struct ipt_session s2 = {
		.idev = &f->idev, .hw = &fake_ops, .mode = IPT_MODE_THREAD,
	};
	struct ipt_buffer buf2 = { .size = SZ_64K };
	struct ipt_trace t2 = { .s = &s2, .buf = &buf2 };

	f->s.mode = IPT_MODE_THREAD;
	KUNIT_ASSERT_EQ(test, request(f), 0);
	mutex_lock(&f->idev.lock);
	KUNIT_ASSERT_EQ(test, ipt_pmi_request(&s2), 0);
	mutex_unlock(&f->idev.lock);
	release(f);
	KUNIT_EXPECT_EQ(test, pmi_releases, 0u);
	KUNIT_ASSERT_NOT_NULL(test, pmi_fn);
	arm_here_and_pmi(&t2, 2);
	KUNIT_EXPECT_EQ(test, atomic64_read(&t2.pmis), 2LL);
	mutex_lock(&f->idev.lock);
	ipt_pmi_release(&s2);
	mutex_unlock(&f->idev.lock);
	KUNIT_EXPECT_EQ(test, pmi_releases, 1u);
	KUNIT_EXPECT_NULL(test, pmi_fn);
}

static struct kunit_case pmi_cases[] = {
	KUNIT_CASE(pmi_request_release),
	KUNIT_CASE(pmi_arm_counts),
	KUNIT_CASE(pmi_single_entry_sample),
	KUNIT_CASE(pmi_settle_none),
	KUNIT_CASE(pmi_settle_pending),
	KUNIT_CASE(pmi_settle_arriving),
	KUNIT_CASE(pmi_stream_raised_while_handled),
	KUNIT_CASE(pmi_shared_with_perf),
	KUNIT_CASE(pmi_unarmed_touches_nothing),
	KUNIT_CASE(pmi_raised_again),
	KUNIT_CASE(pmi_handler_shared),
	{}
};

static struct kunit_suite pmi_suite = {
	.name = "ipt_pmi",
	.init = pmi_test_init,
	.exit = pmi_test_exit,
	.test_cases = pmi_cases,
};

kunit_test_suites(&pmi_suite);

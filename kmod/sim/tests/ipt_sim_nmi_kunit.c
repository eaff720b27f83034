// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of ipt_sim_nmi.c: the platform around the PMI.  Through the
 * registered operations, on a live unit: the NMI chain runs its handlers
 * in the order their registration flags give, a perf-like handler ahead
 * of ipt's acknowledges bit 55 before ipt sees it, the LVT is masked by
 * each delivery and a PMI raised while it is masked is lost; and
 * IA32_PERF_GLOBAL_OVF_CTRL is write-1-to-clear.
 */
#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/smp.h>

#include "ipt_sim_test.h"

/* About 1 KiB a 1 ms period: the 8 KiB ring raises a PMI every ~8 ms. */
#define NMI_RATE	SZ_1M
/* Bound of every wait on the unit (a state): 20000 polls, >= 20 s. */
#define NMI_WAIT_POLLS	20000

/* What the test handler does and saw. */
static bool nmi_rearm;		/* acknowledge bit 55 and unmask LVTPC */
static atomic_t nmi_calls;	/* NMIs it ran for */
static atomic_t nmi_saw55;	/* of them, with bit 55 set */

/* Context: PMI delivery (hard interrupt), on the unit's CPU. */
static bool nmi_handler(void)
{
	const struct ipt_hw_ops *ops = ipt_sim_live_ops();
	u64 gs = 0;

	atomic_inc(&nmi_calls);
	if (ops->read_msr(MSR_CORE_PERF_GLOBAL_STATUS, &gs) ||
	    !(gs & GLOBAL_STATUS_TRACE_TOPAPMI))
		return false;
	atomic_inc(&nmi_saw55);
	ops->write_msr(MSR_CORE_PERF_GLOBAL_OVF_CTRL,
		       GLOBAL_STATUS_TRACE_TOPAPMI);
	if (nmi_rearm)
		ops->pmi_unmask();
	return true;
}

static int nmi_wrmsr(const struct ipt_hw_ops *ops, u32 msr, u64 val)
{
	int ret;

	preempt_disable();
	ret = ops->write_msr(msr, val);
	preempt_enable();
	return ret;
}

/* This CPU's unit (the caller has migration disabled). */
static void nmi_state(struct ipt_sim_cpu *st)
{
	ipt_sim_live_state(raw_smp_processor_id(), st);
}

/* A two-region ring, INT on the second, traced on this CPU. */
static void nmi_trace(struct kunit *test, const struct ipt_hw_ops *ops)
{
	u64 tpa, pa0, pa1, *table;

	table = (u64 *)sim_mem(test, 0, &tpa);
	sim_mem(test, 0, &pa0);
	sim_mem(test, 0, &pa1);
	table[0] = topa_entry(pa0, 0, 0);
	table[1] = topa_entry(pa1, 0, IPT_TOPA_INT);
	table[2] = topa_entry(tpa, 0, IPT_TOPA_END);
	KUNIT_EXPECT_EQ(test, nmi_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_BASE, tpa), 0);
	KUNIT_EXPECT_EQ(test, nmi_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_MASK, 0x7f), 0);
	KUNIT_EXPECT_EQ(test, nmi_wrmsr(ops, MSR_IA32_RTIT_STATUS, 0), 0);
	KUNIT_EXPECT_EQ(test, nmi_wrmsr(ops, MSR_IA32_RTIT_CTL, CTL_TOPA), 0);
}

static void nmi_untrace(struct kunit *test, const struct ipt_hw_ops *ops)
{
	KUNIT_EXPECT_EQ(test, nmi_wrmsr(ops, MSR_IA32_RTIT_CTL, 0), 0);
	KUNIT_EXPECT_EQ(test, nmi_wrmsr(ops, MSR_IA32_RTIT_STATUS, 0), 0);
	KUNIT_EXPECT_EQ(test, nmi_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_BASE, 0), 0);
	KUNIT_EXPECT_EQ(test, nmi_wrmsr(ops, MSR_IA32_RTIT_OUTPUT_MASK, 0), 0);
}

/* Wait (bounded) until @cond holds for this CPU's unit state @st. */
#define NMI_WAIT_FOR(st, cond) ({					\
	unsigned int __i;						\
	for (__i = 0; __i < NMI_WAIT_POLLS; __i++) {			\
		nmi_state(st);						\
		if (cond)						\
			break;						\
		usleep_range(1000, 2000);				\
	}								\
	__i < NMI_WAIT_POLLS;						\
})

static int nmi_test_init(struct kunit *test)
{
	atomic_set(&nmi_calls, 0);
	atomic_set(&nmi_saw55, 0);
	nmi_rearm = true;
	return sim_test_init(test);
}

static void nmi_test_exit(struct kunit *test)
{
	const struct ipt_hw_ops *ops = ipt_sim_live_ops();
	unsigned int cpu;

	ops->pmi_release();
	ipt_sim_perf_nmi_set(false);
	/* Leave no unit with a pending bit or a masked LVT behind. */
	for_each_online_cpu(cpu) {
		struct ipt_sim_cpu st;

		ipt_sim_live_state(cpu, &st);
		if (st.global_status || st.lvt_masked)
			kunit_info(test, "cpu%u: status %#llx lvt_masked %d\n",
				   cpu, st.global_status, st.lvt_masked);
	}
	sim_test_exit(test);
}

/*
 * perf's handler registered first, ipt's without IPT_PMI_FIRST: behind
 * it, ipt runs for every NMI but never sees bit 55, which perf acked.
 * With IPT_PMI_FIRST ipt is ahead and perf never sees it.
 */
static void nmi_chain_order(struct kunit *test)
{
	const struct ipt_hw_ops *ops = ipt_sim_live_ops();
	struct ipt_sim_cpu st;
	u64 rate, perf_topa;
	bool done;

	ipt_sim_perf_nmi_set(true);
	KUNIT_ASSERT_EQ(test, ops->pmi_request(nmi_handler, 0), 0);
	rate = ipt_sim_live_rate(NMI_RATE);
	migrate_disable();
	nmi_state(&st);
	perf_topa = st.stats.perf_topa;
	nmi_trace(test, ops);
	done = NMI_WAIT_FOR(&st, st.stats.perf_topa >= perf_topa + 2);
	KUNIT_EXPECT_TRUE(test, done);
	nmi_untrace(test, ops);
	migrate_enable();
	ops->pmi_release();
	KUNIT_EXPECT_GE(test, atomic_read(&nmi_calls), 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&nmi_saw55), 0);

	/* Now at the head: ipt takes every ToPA PMI, perf none. */
	atomic_set(&nmi_calls, 0);
	KUNIT_ASSERT_EQ(test, ops->pmi_request(nmi_handler, IPT_PMI_FIRST), 0);
	migrate_disable();
	nmi_state(&st);
	perf_topa = st.stats.perf_topa;
	nmi_trace(test, ops);
	done = NMI_WAIT_FOR(&st, atomic_read(&nmi_saw55) >= 2);
	KUNIT_EXPECT_TRUE(test, done);
	nmi_untrace(test, ops);
	nmi_state(&st);
	migrate_enable();
	ipt_sim_live_rate(rate);
	KUNIT_EXPECT_EQ(test, st.stats.perf_topa, perf_topa);
	KUNIT_EXPECT_EQ(test, atomic_read(&nmi_calls), atomic_read(&nmi_saw55));
}

/*
 * Delivery masks LVTPC: a handler that acknowledges bit 55 but does not
 * unmask gets one NMI; the next PMIs are lost (pmis_masked) and bit 55
 * stays set.  Unmasking brings delivery back.
 */
static void nmi_lvt_masked(struct kunit *test)
{
	const struct ipt_hw_ops *ops = ipt_sim_live_ops();
	struct ipt_sim_cpu st;
	u64 rate, pmis, masked;
	bool done;

	nmi_rearm = false;
	KUNIT_ASSERT_EQ(test, ops->pmi_request(nmi_handler, IPT_PMI_FIRST), 0);
	rate = ipt_sim_live_rate(NMI_RATE);
	migrate_disable();
	nmi_state(&st);
	KUNIT_EXPECT_FALSE(test, st.lvt_masked);
	pmis = st.stats.pmis;
	masked = st.stats.pmis_masked;
	nmi_trace(test, ops);
	done = NMI_WAIT_FOR(&st, st.stats.pmis >= pmis + 3 &&
			    st.stats.pmis_masked >= masked + 2);
	KUNIT_EXPECT_TRUE(test, done);
	KUNIT_EXPECT_EQ(test, atomic_read(&nmi_saw55), 1);
	KUNIT_EXPECT_TRUE(test, st.lvt_masked);
	KUNIT_EXPECT_TRUE(test, st.global_status & GLOBAL_STATUS_TRACE_TOPAPMI);

	/* Re-armed (and the stuck bit acked): the next PMI is delivered. */
	nmi_rearm = true;
	preempt_disable();
	ops->write_msr(MSR_CORE_PERF_GLOBAL_OVF_CTRL,
		       GLOBAL_STATUS_TRACE_TOPAPMI);
	ops->pmi_unmask();
	preempt_enable();
	done = NMI_WAIT_FOR(&st, atomic_read(&nmi_saw55) >= 3);
	KUNIT_EXPECT_TRUE(test, done);
	nmi_untrace(test, ops);
	nmi_state(&st);
	migrate_enable();
	ipt_sim_live_rate(rate);
	KUNIT_EXPECT_FALSE(test, st.lvt_masked);
	KUNIT_EXPECT_EQ(test, st.stats.lvt_early, 0ULL);
}

/* IA32_PERF_GLOBAL_OVF_CTRL clears the bits written as 1, only those. */
static void nmi_global_status_w1c(struct kunit *test)
{
	struct ipt_sim_cpu *c = sim_cpu(test, "icl");
	u64 v;

	c->global_status = GLOBAL_STATUS_TRACE_TOPAPMI | IPT_SIM_GLOBAL_PMC0;
	sim_expect_ok(test, c, MSR_CORE_PERF_GLOBAL_OVF_CTRL, 0);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_CORE_PERF_GLOBAL_STATUS, &v), 0);
	KUNIT_EXPECT_EQ(test, v, GLOBAL_STATUS_TRACE_TOPAPMI | IPT_SIM_GLOBAL_PMC0);
	sim_expect_ok(test, c, MSR_CORE_PERF_GLOBAL_OVF_CTRL,
		      GLOBAL_STATUS_TRACE_TOPAPMI);
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_CORE_PERF_GLOBAL_STATUS, &v), 0);
	KUNIT_EXPECT_EQ(test, v, IPT_SIM_GLOBAL_PMC0);
	sim_expect_ok(test, c, MSR_CORE_PERF_GLOBAL_OVF_CTRL, BIT_ULL(0));
	KUNIT_EXPECT_EQ(test, ipt_sim_rdmsr(c, MSR_CORE_PERF_GLOBAL_STATUS, &v), 0);
	KUNIT_EXPECT_EQ(test, v, 0ULL);
}

static struct kunit_case sim_nmi_cases[] = {
	KUNIT_CASE(nmi_chain_order),
	KUNIT_CASE(nmi_lvt_masked),
	KUNIT_CASE(nmi_global_status_w1c),
	{}
};

static struct kunit_suite sim_nmi_suite = {
	.name = "ipt_sim_nmi",
	.init = nmi_test_init,
	.exit = nmi_test_exit,
	.test_cases = sim_nmi_cases,
};

kunit_test_suites(&sim_nmi_suite);

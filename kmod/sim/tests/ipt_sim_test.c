// SPDX-License-Identifier: GPL-2.0
/*
 * The fixture and helpers the KUnit suites of the simulated PT unit share
 * (ipt_sim_test.h), and the module's description.  Each suite mirrors one
 * file of kmod/sim: ipt_sim_models, ipt_sim_gp and ipt_sim_xsaves
 * (ipt_sim_models.c, ipt_sim_msr.c), ipt_sim_output and ipt_sim_topa
 * (ipt_sim_output.c), ipt_sim_trace (ipt_sim_trace.c), ipt_sim_packets
 * (ipt_sim_packets.c) and ipt_sim_live (ipt_sim_pcpu.c).
 */
#include <kunit/test.h>
#include <linux/gfp.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/string.h>

#include "ipt_sim_test.h"

/**
 * sim_test_init() - give a test its fixture (struct sim_test)
 * @test: the test
 *
 * Context: process context, a KUnit suite's init.
 *
 * Return: 0, or -ENOMEM.
 */
int sim_test_init(struct kunit *test)
{
	test->priv = kunit_kzalloc(test, sizeof(struct sim_test), GFP_KERNEL);
	return test->priv ? 0 : -ENOMEM;
}

/**
 * sim_test_exit() - free the pages of a test's fixture
 * @test: the test
 *
 * Context: process context, a KUnit suite's exit.
 */
void sim_test_exit(struct kunit *test)
{
	struct sim_test *t = test->priv;
	unsigned int i;

	for (i = 0; i < t->n; i++)
		__free_pages(t->pages[i], t->orders[i]);
}

/**
 * sim_cpu() - the fixture's unit in its reset state
 * @test: the test; fails unless @name is a model
 * @name: the model it presents
 *
 * Context: process context, a test with the sim_test fixture.
 *
 * Return: the unit.
 */
struct ipt_sim_cpu *sim_cpu(struct kunit *test, const char *name)
{
	struct sim_test *t = test->priv;
	const struct ipt_sim_model *m = ipt_sim_model_by_name(name);

	KUNIT_ASSERT_NOT_NULL(test, m);
	ipt_sim_cpu_init(&t->c, m);
	return &t->c;
}

/**
 * sim_mem() - zeroed, naturally aligned physical memory for a test
 * @test: the test
 * @order: 2^@order pages
 * @pa: its physical address
 *
 * Freed by sim_test_exit().
 *
 * Context: process context, a test with the sim_test fixture.
 *
 * Return: its kernel address.
 */
u8 *sim_mem(struct kunit *test, unsigned int order, u64 *pa)
{
	struct sim_test *t = test->priv;
	struct page *page;

	KUNIT_ASSERT_LT(test, t->n, SIM_TEST_MAX_PAGES);
	page = alloc_pages(GFP_KERNEL | __GFP_ZERO, order);
	KUNIT_ASSERT_NOT_NULL(test, page);
	t->pages[t->n] = page;
	t->orders[t->n++] = order;
	*pa = page_to_phys(page);
	return page_address(page);
}

/**
 * sim_start() - program the output and enable, as a driver would
 * @test: the test; fails on any #GP
 * @c: the unit
 * @base: IA32_RTIT_OUTPUT_BASE
 * @mask: IA32_RTIT_OUTPUT_MASK_PTRS
 * @ctl: IA32_RTIT_CTL, written last
 *
 * Context: process context, a KUnit test.
 */
void sim_start(struct kunit *test, struct ipt_sim_cpu *c, u64 base,
	       u64 mask, u64 ctl)
{
	KUNIT_ASSERT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_OUTPUT_BASE, base), 0);
	KUNIT_ASSERT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_OUTPUT_MASK, mask), 0);
	KUNIT_ASSERT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_STATUS, 0), 0);
	KUNIT_ASSERT_EQ(test, ipt_sim_wrmsr(c, MSR_IA32_RTIT_CTL, ctl), 0);
}

/**
 * sim_produce() - run until at least @bytes were written
 * @c: the unit
 * @bytes: total bytes written (stats.bytes) to reach, unless output ends
 *
 * Context: any; the caller owns @c.
 */
void sim_produce(struct ipt_sim_cpu *c, u64 bytes)
{
	if (c->stats.bytes < bytes)
		ipt_sim_run(c, bytes - c->stats.bytes);
}

/**
 * sim_reference() - the reference stream of a trace
 * @test: the test
 * @name: the model
 * @ctl: IA32_RTIT_CTL; its ToPA bit is cleared
 * @bytes: bytes to produce at least (at most 32 KiB - 64)
 * @ref: the stream's kernel address
 *
 * What the unit writes with @ctl into one 32 KiB single range; ToPA
 * output of the same trace must hold exactly these bytes.
 *
 * Context: process context, a test with the sim_test fixture.
 *
 * Return: the stream's length.
 */
u64 sim_reference(struct kunit *test, const char *name, u64 ctl,
		  u64 bytes, u8 **ref)
{
	struct ipt_sim_cpu *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	const struct ipt_sim_model *m = ipt_sim_model_by_name(name);
	u64 pa;

	KUNIT_ASSERT_NOT_NULL(test, c);
	KUNIT_ASSERT_NOT_NULL(test, m);
	KUNIT_ASSERT_LE(test, bytes, (u64)SZ_32K - 64);
	ipt_sim_cpu_init(c, m);
	*ref = sim_mem(test, 3, &pa);
	sim_start(test, c, pa, SZ_32K - 1, ctl & ~RTIT_CTL_TOPA);
	sim_produce(c, bytes);
	return c->stats.bytes;
}

/**
 * sim_expect_gp() - a WRMSR must fault, change nothing, and be counted
 * @test: the test
 * @c: the unit
 * @msr: the MSR
 * @val: the value
 *
 * Context: process context, a KUnit test.
 */
void sim_expect_gp(struct kunit *test, struct ipt_sim_cpu *c, u32 msr,
		   u64 val)
{
	struct ipt_sim_cpu before = *c;

	KUNIT_EXPECT_EQ_MSG(test, ipt_sim_wrmsr(c, msr, val), -EIO,
			    "msr %#x val %#llx", msr, val);
	KUNIT_EXPECT_EQ(test, c->stats.gp, before.stats.gp + 1);
	KUNIT_EXPECT_EQ(test, c->stats.wrmsr, before.stats.wrmsr + 1);
	before.stats = c->stats;
	KUNIT_EXPECT_EQ_MSG(test, memcmp(&before, c, sizeof(before)), 0,
			    "state changed by msr %#x val %#llx", msr, val);
}

/**
 * sim_expect_ok() - a WRMSR must succeed
 * @test: the test
 * @c: the unit
 * @msr: the MSR
 * @val: the value
 *
 * Context: process context, a KUnit test.
 */
void sim_expect_ok(struct kunit *test, struct ipt_sim_cpu *c, u32 msr,
		   u64 val)
{
	KUNIT_EXPECT_EQ_MSG(test, ipt_sim_wrmsr(c, msr, val), 0,
			    "msr %#x val %#llx", msr, val);
}

MODULE_DESCRIPTION("KUnit tests for the simulated PT unit");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
